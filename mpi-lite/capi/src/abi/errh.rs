//! Error classes, codes and handlers (MPI-3.1 §8.3-8.5): the C side of `crate::errors`.

use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicI32, Ordering};

use mpi_lite::error::class;
use mpi_lite::Error;

use super::{get, get_str, mpi_fn, put, put_str};
use crate::errors::{self, ErrFn, Kind, Raised};
use crate::state::{self, call, h, lock, PHASE, WORLD_ERRH};

mpi_fn!(MPI_Error_class, PMPI_Error_class, (errorcode: c_int, errorclass: *mut c_int) -> c_int {
    state::call_pure("MPI_Error_class", || {
        let c = errors::class_of(errorcode).ok_or_else(|| {
            Error::Arg(format!("MPI_Error_class: {errorcode} is not an error code"))
        })?;
        // SAFETY: the caller's int.
        unsafe { put(errorclass, c, "errorclass") }
    })
});

mpi_fn!(MPI_Error_string, PMPI_Error_string, (errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) -> c_int {
    state::call_pure("MPI_Error_string", || {
        let s = errors::string_of(errorcode).ok_or_else(|| {
            Error::Arg(format!("MPI_Error_string: {errorcode} is not an error code"))
        })?;
        // SAFETY: MPI_MAX_ERROR_STRING bytes at `string`.
        unsafe { put_str(string, resultlen, &s, 512) }
    })
});

mpi_fn!(MPI_Add_error_class, PMPI_Add_error_class, (errorclass: *mut c_int) -> c_int {
    call("MPI_Add_error_class", h::COMM_WORLD, |_| {
        let c = errors::add(None)?;
        // SAFETY: the caller's int.
        unsafe { put(errorclass, c, "errorclass") }
    })
});

mpi_fn!(MPI_Add_error_code, PMPI_Add_error_code, (errorclass: c_int, errorcode: *mut c_int) -> c_int {
    call("MPI_Add_error_code", h::COMM_WORLD, |_| {
        let c = errors::add(Some(errorclass))?;
        // SAFETY: the caller's int.
        unsafe { put(errorcode, c, "errorcode") }
    })
});

mpi_fn!(MPI_Add_error_string, PMPI_Add_error_string, (errorcode: c_int, string: *const c_char) -> c_int {
    call("MPI_Add_error_string", h::COMM_WORLD, |_| {
        // SAFETY: a NUL-terminated string (MPI contract).
        let s = unsafe { get_str(string, "string")? };
        if s.len() >= 512 {
            return Err(Error::Arg(format!("MPI_Add_error_string: {} bytes ≥ MPI_MAX_ERROR_STRING", s.len())));
        }
        errors::set_string(errorcode, s)
    })
});

mpi_fn!(MPI_Comm_set_errhandler, PMPI_Comm_set_errhandler, (comm: c_int, errhandler: c_int) -> c_int {
    if let Err(e) = errors::check_handler(errhandler, Kind::Comm) {
        let g = lock().ok();
        let r = state::raise_later(g.as_deref().and_then(Option::as_ref), comm, "MPI_Comm_set_errhandler", &e);
        drop(g);
        return r.now();
    }
    // Allowed on MPI_COMM_WORLD before Init and after Finalize too, so that errors of
    // calls made then can be returned (as MPI-4 allows).
    if comm == h::COMM_WORLD && PHASE.load(Ordering::Acquire) != 1 {
        WORLD_ERRH.store(errhandler, Ordering::Relaxed);
        return class::SUCCESS;
    }
    call("MPI_Comm_set_errhandler", comm, |st| {
        let mut t = st.t();
        t.comm_entry(comm)?;
        if let Some(Some(e)) = t.comms.get_mut(comm as usize) {
            e.errh = errhandler;
        }
        drop(t);
        if comm == h::COMM_WORLD {
            // Mirrored for errors raised when the state cannot be read (a concurrent call).
            WORLD_ERRH.store(errhandler, Ordering::Relaxed);
        }
        Ok(())
    })
});

mpi_fn!(MPI_Comm_get_errhandler, PMPI_Comm_get_errhandler, (comm: c_int, errhandler: *mut c_int) -> c_int {
    call("MPI_Comm_get_errhandler", comm, |st| {
        let e = st.t().comm_entry(comm)?.errh;
        // SAFETY: the caller's int.
        unsafe { put(errhandler, e, "errhandler") }
    })
});

mpi_fn!(MPI_Errhandler_free, PMPI_Errhandler_free, (errhandler: *mut c_int) -> c_int {
    state::call_pure("MPI_Errhandler_free", || {
        // SAFETY: the caller's handle.
        let e = unsafe { get(errhandler, "errhandler")? };
        errors::free_handler(e)?;
        // SAFETY: the caller's handle.
        unsafe { put(errhandler, 0, "errhandler") }
    })
});

/// `MPI_*_create_errhandler`.
///
/// # Safety
/// `f` is NULL or a handler function of the MPI signature; `out` the caller's handle.
unsafe fn create(name: &str, kind: Kind, f: Option<ErrFn>, out: *mut c_int) -> c_int {
    state::call_pure(name, || {
        let f = f.ok_or_else(|| Error::Arg(format!("{name}: the function is NULL")))?;
        let hd = errors::create_handler(kind, f);
        // SAFETY: the caller's handle.
        unsafe { put(out, hd, "errhandler") }
    })
}

mpi_fn!(MPI_Comm_create_errhandler, PMPI_Comm_create_errhandler, (f: Option<ErrFn>, errhandler: *mut c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { create("MPI_Comm_create_errhandler", Kind::Comm, f, errhandler) }
});

mpi_fn!(MPI_Win_create_errhandler, PMPI_Win_create_errhandler, (f: Option<ErrFn>, errhandler: *mut c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { create("MPI_Win_create_errhandler", Kind::Win, f, errhandler) }
});

mpi_fn!(MPI_File_create_errhandler, PMPI_File_create_errhandler, (f: Option<ErrFn>, errhandler: *mut c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { create("MPI_File_create_errhandler", Kind::File, f, errhandler) }
});

/// The raised error for a user code (`MPI_*_call_errhandler`).
fn user_error(name: &str, code: c_int) -> Error {
    let text = errors::string_of(code).unwrap_or_else(|| format!("error code {code}"));
    Error::Code {
        code,
        msg: format!("{name}: {text}"),
    }
}

mpi_fn!(MPI_Comm_call_errhandler, PMPI_Comm_call_errhandler, (comm: c_int, errorcode: c_int) -> c_int {
    let name = "MPI_Comm_call_errhandler";
    let g = lock().ok();
    let st = g.as_deref().and_then(Option::as_ref);
    let r = match st.map(|st| st.t().comm_entry(comm).map(|c| c.errh)) {
        Some(Ok(errh)) => Raised::decide(errh, Kind::Comm, comm, name, &user_error(name, errorcode)),
        Some(Err(e)) => state::raise_later(st, comm, name, &e),
        None if comm == h::COMM_WORLD => {
            let errh = WORLD_ERRH.load(Ordering::Relaxed);
            Raised::decide(errh, Kind::Comm, comm, name, &user_error(name, errorcode))
        }
        None => state::raise_later(None, comm, name, &Error::Other(format!("{name} before MPI_Init"))),
    };
    drop(g);
    match r {
        // The handler was called (or returns): the call succeeded (MPI-3.1 §8.5.1).
        Raised::Return(_) => class::SUCCESS,
        r @ Raised::User(..) => {
            r.now();
            class::SUCCESS
        }
        fatal => fatal.now(),
    }
});

/// The error handler of `MPI_FILE_NULL` (files cannot be opened: MPI-IO is not built),
/// which MPI-3.1 §13.7 makes `MPI_ERRORS_RETURN` by default.
static FILE_NULL_ERRH: AtomicI32 = AtomicI32::new(h::ERRORS_RETURN);

fn no_file(name: &str, file: c_int) -> Error {
    Error::File(format!("{name}: file {file} does not exist (MPI-IO is not implemented; only MPI_FILE_NULL has an error handler)"))
}

mpi_fn!(MPI_File_set_errhandler, PMPI_File_set_errhandler, (file: c_int, errhandler: c_int) -> c_int {
    state::call_pure("MPI_File_set_errhandler", || {
        if file != 0 {
            return Err(no_file("MPI_File_set_errhandler", file));
        }
        errors::check_handler(errhandler, Kind::File)?;
        FILE_NULL_ERRH.store(errhandler, Ordering::Relaxed);
        Ok(())
    })
});

mpi_fn!(MPI_File_get_errhandler, PMPI_File_get_errhandler, (file: c_int, errhandler: *mut c_int) -> c_int {
    state::call_pure("MPI_File_get_errhandler", || {
        if file != 0 {
            return Err(no_file("MPI_File_get_errhandler", file));
        }
        // SAFETY: the caller's handle.
        unsafe { put(errhandler, FILE_NULL_ERRH.load(Ordering::Relaxed), "errhandler") }
    })
});

mpi_fn!(MPI_File_call_errhandler, PMPI_File_call_errhandler, (file: c_int, errorcode: c_int) -> c_int {
    let name = "MPI_File_call_errhandler";
    if file != 0 {
        return state::raise_now(h::COMM_WORLD, name, &no_file(name, file));
    }
    let errh = FILE_NULL_ERRH.load(Ordering::Relaxed);
    match Raised::decide(errh, Kind::File, file, name, &user_error(name, errorcode)) {
        Raised::Return(_) => class::SUCCESS,
        r @ Raised::User(..) => {
            r.now();
            class::SUCCESS
        }
        fatal => fatal.now(),
    }
});

// MPI_Win_set/get/call_errhandler are in `rma` (with the windows).
