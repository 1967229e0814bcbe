//! Error codes and error handlers of the C ABI (MPI-3.1 §8.3-8.5).
//!
//! * **Codes**: a predefined class is its own code. Codes above `MPI_ERR_LASTCODE`
//!   are made at run time: by `MPI_Add_error_class` /
//!   `MPI_Add_error_code`, and one per unsupported call (class
//!   `MPI_ERR_UNSUPPORTED_OPERATION`), so that `MPI_Error_string` of the code a call
//!   returned names that call.
//! * **Handlers**: `MPI_ERRORS_ARE_FATAL` (1), `MPI_ERRORS_RETURN` (2) and the user's
//!   (`MPI_Comm/Win/File_create_errhandler`, from 3). A user handler is called with the
//!   state lock released: it may call MPI (MPI-3.1 §8.3).
//!
//! The tables are their own locks (not the state's): error strings are asked for before
//! `MPI_Init` and after `MPI_Finalize`, and by handlers.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard};

use mpi_lite::error::{class, class_string};
use mpi_lite::{Error, Result};

/// `MPI_Comm_errhandler_function` (and the Win/File ones: same shape, other handle).
pub type ErrFn = unsafe extern "C" fn(*mut c_int, *mut c_int, ...);

/// What kind of object a user handler was made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Comm,
    Win,
    File,
}

struct Dynamic {
    /// code → (class, string).
    codes: HashMap<i32, (i32, String)>,
    next: i32,
    unsupported: HashMap<String, i32>,
    /// Handler handle − 3 → (kind, function, freed by the user).
    handlers: Vec<(Kind, ErrFn, bool)>,
}

static DYN: Mutex<Option<Dynamic>> = Mutex::new(None);

fn dynamic() -> MutexGuard<'static, Option<Dynamic>> {
    DYN.lock().unwrap_or_else(|p| p.into_inner())
}

fn with<T>(f: impl FnOnce(&mut Dynamic) -> T) -> T {
    let mut g = dynamic();
    let d = g.get_or_insert_with(|| Dynamic {
        codes: HashMap::new(),
        // Above MPI_ERR_LASTCODE, as MPICH's: MPI-3.1 §8.5 keeps that constant for the
        // predefined codes, and programs (mpi4py's tests) check user classes exceed it.
        next: class::LASTCODE + 1,
        unsupported: HashMap::new(),
        handlers: Vec::new(),
    });
    f(d)
}

/// The class of a code (`MPI_Error_class`); `None`: not a code.
pub fn class_of(code: i32) -> Option<i32> {
    if (0..=class::LAST_PREDEFINED).contains(&code) && class_string(code).is_some() {
        return Some(code);
    }
    with(|d| d.codes.get(&code).map(|c| c.0))
}

/// The string of a code (`MPI_Error_string`).
pub fn string_of(code: i32) -> Option<String> {
    if let Some(s) = class_string(code) {
        return Some(s);
    }
    with(|d| d.codes.get(&code).map(|c| c.1.clone()))
}

/// `MPI_Add_error_class` (`Some(class)`: `MPI_Add_error_code` of that class).
pub fn add(of: Option<i32>) -> Result<i32> {
    if let Some(c) = of {
        if class_of(c) != Some(c) {
            return Err(Error::Arg(format!(
                "MPI_Add_error_code: {c} is not an error class"
            )));
        }
    }
    with(|d| {
        let code = d.next;
        if code == i32::MAX {
            return Err(Error::Intern("out of error codes".into()));
        }
        d.next += 1;
        d.codes.insert(code, (of.unwrap_or(code), String::new()));
        Ok(code)
    })
}

/// `MPI_Add_error_string`: only codes made by `add` take a string.
pub fn set_string(code: i32, s: String) -> Result<()> {
    with(|d| match d.codes.get_mut(&code) {
        Some(e) => {
            e.1 = s;
            Ok(())
        }
        None => Err(Error::Arg(format!(
            "MPI_Add_error_string: {code} is not a code made by MPI_Add_error_class/code"
        ))),
    })
}

/// The largest code in use (`MPI_LASTUSEDCODE`).
pub fn last_used() -> i32 {
    with(|d| d.next - 1)
}

/// The code a call returns for `e`: its class, or for an unsupported call a code of
/// class `MPI_ERR_UNSUPPORTED_OPERATION` whose string names the call.
pub fn code_of(e: &Error) -> i32 {
    match e {
        Error::Unsupported(what) => with(|d| {
            if let Some(&c) = d.unsupported.get(what) {
                return c;
            }
            let c = d.next;
            d.next += 1;
            d.codes
                .insert(c, (class::UNSUPPORTED_OPERATION, e.to_string()));
            d.unsupported.insert(what.clone(), c);
            c
        }),
        _ => e.class(),
    }
}

/// Registers a user handler; its handle.
pub fn create_handler(kind: Kind, f: ErrFn) -> i32 {
    with(|d| {
        d.handlers.push((kind, f, false));
        (d.handlers.len() + 2) as i32
    })
}

/// A user handler by handle, if it is one of `kind` (freed ones stay callable: objects
/// they are attached to keep them, MPI-3.1 §8.3.4).
pub fn handler(h: i32, kind: Kind) -> Option<ErrFn> {
    let i = usize::try_from(h).ok()?.checked_sub(3)?;
    with(|d| d.handlers.get(i).filter(|x| x.0 == kind).map(|x| x.1))
}

/// Checks a handler handle for `MPI_*_set_errhandler`.
pub fn check_handler(h: i32, kind: Kind) -> Result<()> {
    let i = usize::try_from(h).ok().and_then(|h| h.checked_sub(3));
    match i {
        None if h == 1 || h == 2 => Ok(()),
        Some(i) if with(|d| d.handlers.get(i).is_some_and(|x| x.0 == kind && !x.2)) => Ok(()),
        _ => Err(Error::Arg(format!(
            "error handler {h} is not valid for a {kind:?}"
        ))),
    }
}

/// `MPI_Errhandler_free`: `MPI_ERRHANDLER_NULL` and unknown handles are errors.
pub fn free_handler(h: i32) -> Result<()> {
    if h == 1 || h == 2 {
        return Ok(());
    }
    let i = usize::try_from(h).ok().and_then(|h| h.checked_sub(3));
    with(|d| match i.and_then(|i| d.handlers.get_mut(i)) {
        Some(x) if !x.2 => {
            x.2 = true;
            Ok(())
        }
        _ => Err(Error::Arg(format!(
            "MPI_Errhandler_free: {h} is not an error handler (MPI_ERRHANDLER_NULL or freed)"
        ))),
    })
}

/// This process's rank in `MPI_COMM_WORLD`, for messages: set by `MPI_Init`, else the
/// launcher's `SKIFCH_RANK`, kept after `MPI_Finalize` and after a peer is lost.
static RANK: AtomicI64 = AtomicI64::new(-1);

/// Records the world rank (`MPI_Init`).
pub fn set_rank(r: u32) {
    RANK.store(r as i64, Ordering::Relaxed);
}

fn rank() -> String {
    match RANK.load(Ordering::Relaxed) {
        r if r >= 0 => r.to_string(),
        _ => std::env::var("SKIFCH_RANK").unwrap_or_else(|_| "?".into()),
    }
}

/// Writes one line to stderr in a single `write(2)` (lines of ranks dying together do not
/// interleave: a pipe write of ≤ PIPE_BUF bytes is atomic), prefixed with the rank.
pub fn say(msg: &str) {
    skifch::diag::line(&format!("mpi-lite: rank {}: {msg}", rank()));
}

/// How an error is raised, decided under the state lock and carried out after it is
/// released ([`Raised::now`]).
#[must_use]
pub enum Raised {
    /// Return this code (`MPI_ERRORS_RETURN`).
    Return(c_int),
    /// Abort the job with this message and exit status (`MPI_ERRORS_ARE_FATAL`).
    Fatal(String, c_int),
    /// Call the user's handler with (handle, code), then return the code.
    User(ErrFn, c_int, c_int),
}

impl Raised {
    /// Decides for error `e` of call `name` with handler `errh` on object `handle`.
    pub fn decide(errh: i32, kind: Kind, handle: c_int, name: &str, e: &Error) -> Raised {
        let code = code_of(e);
        match errh {
            2 => Raised::Return(code),
            h => match handler(h, kind) {
                Some(f) => Raised::User(f, handle, code),
                None => Raised::Fatal(
                    format!("{name}: {e} (MPI_ERRORS_ARE_FATAL: aborting the job)"),
                    e.class().clamp(1, 255),
                ),
            },
        }
    }

    /// Carries it out (call with no lock held).
    pub fn now(self) -> c_int {
        match self {
            Raised::Return(c) => c,
            Raised::Fatal(msg, status) => crate::ending::fatal(&msg, status),
            Raised::User(f, mut handle, mut code) => {
                let ret = code;
                // SAFETY: `f` is the function the program registered as an error handler of
                // this kind; MPI calls it with pointers to the handle and the code.
                unsafe { f(&mut handle, &mut code) };
                ret
            }
        }
    }
}
