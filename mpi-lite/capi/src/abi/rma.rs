//! One-sided communication (MPI-3.1 chapter 11), windows: creation, freeing, attributes,
//! names, info, groups and error handlers. The operations and synchronisation calls are in
//! `rma_ops`. Windows live in their own handle table ([`WINS`], handle = index + 1) and
//! their errors go to the window's handler (`MPI_ERRORS_ARE_FATAL` until set, §8.3.2).
//! Calls not built yet return `MPI_ERR_UNSUPPORTED_OPERATION` naming the call (see
//! `mpi-lite/README.md`).

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use mpi_lite::error::class;
use mpi_lite::win::{Flavor, Win};
use mpi_lite::{Error, Result};

use super::misc::{add_info, info};
use super::{get_str, mpi_fn, put, put_str};
use crate::attrs;
use crate::cache::{self, Bound, Generation, Last};
use crate::errors::{self, Kind, Raised};
use crate::state::{call, call_steps, h, with_state, CState};

/// A window handle's entry. The attribute values live here (`MPI_Win_get_attr` hands out
/// pointers to them).
pub(crate) struct WinEntry {
    pub win: Win,
    errh: AtomicI32,
    name: Mutex<String>,
    info: Mutex<Vec<(String, String)>>,
    size: isize,
    disp_unit: c_int,
    flavor: c_int,
    model: c_int,
}

/// Read by lookups; written by creating and freeing a window.
static WINS: RwLock<Vec<Option<Arc<WinEntry>>>> = RwLock::new(Vec::new());

type Table = Vec<Option<Arc<WinEntry>>>;

fn wins() -> RwLockReadGuard<'static, Table> {
    WINS.read().unwrap_or_else(|p| p.into_inner())
}

fn wins_mut() -> RwLockWriteGuard<'static, Table> {
    WINS.write().unwrap_or_else(|p| p.into_inner())
}

/// The window of handle `w` (`MPI_ERR_WIN` if none).
pub(crate) fn entry(w: c_int, call: &str) -> Result<Arc<WinEntry>> {
    usize::try_from(w)
        .ok()
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| wins().get(i).cloned().flatten())
        .ok_or_else(|| Error::Win(format!("{call}: {w} is not a window")))
}

/// Bumped (under the table's write lock) whenever a handle is added or removed: a
/// thread's cached entry ([`with_entry`]) is current while it has not moved.
static GEN: Generation = Generation::new();

thread_local! {
    /// This thread's last window (`cache`).
    static LAST: Last<WinEntry> = const { cache::empty() };
}
/// The last window of the thread the library is bound to (`cache`).
static BOUND: Bound<WinEntry> = Bound::new();

/// `f` on the window of handle `w` for the direct path's operations, without a lock or an
/// atomic read-modify-write: the thread's last window is kept ([`crate::cache`]). `f` must
/// not call into the library. `None`: `w` is not a window.
#[inline(always)]
pub(crate) fn with_entry<T>(w: c_int, f: impl FnOnce(&WinEntry) -> T) -> Option<T> {
    let lookup = || wins().get((w as usize).wrapping_sub(1)).cloned().flatten();
    cache::with(&LAST, &BOUND, &GEN, w, lookup, f)
}

/// As [`with_entry`] for the short cuts that make no call: the window of the thread the
/// library is bound to, if `w` is its cached one ([`cache::with_bound`]); `None`: take
/// [`with_entry`].
#[inline(always)]
pub(crate) fn with_bound_entry<T>(w: c_int, f: impl FnOnce(&WinEntry) -> T) -> Option<T> {
    cache::with_bound(&BOUND, &GEN, w, f)
}

/// Whether `w` is a window (for the attribute calls).
pub(crate) fn exists(w: c_int) -> bool {
    entry(w, "").is_ok()
}

fn add(e: WinEntry) -> c_int {
    let mut t = wins_mut();
    GEN.bump();
    let e = Some(Arc::new(e));
    match t.iter().position(Option::is_none) {
        Some(i) => {
            t[i] = e;
            i as c_int + 1
        }
        None => {
            t.push(e);
            t.len() as c_int
        }
    }
}

/// Runs call `name` on window `w`; errors go to the window's handler (to
/// `MPI_COMM_WORLD`'s when `w` is not a window).
pub(crate) fn wcall(
    name: &'static str,
    w: c_int,
    f: impl FnOnce(&CState, &WinEntry) -> Result<()>,
) -> c_int {
    let e = match entry(w, name) {
        Ok(e) => e,
        Err(err) => return call(name, h::COMM_WORLD, |_| Err(err)),
    };
    let r = with_state(name, |st| f(st, &e));
    match r {
        Ok(()) => class::SUCCESS,
        Err(err) => raise(&e, w, name, &err),
    }
}

fn raise(e: &WinEntry, w: c_int, name: &str, err: &Error) -> c_int {
    Raised::decide(e.errh.load(Ordering::Relaxed), Kind::Win, w, name, err).now()
}

fn make(
    st: &CState,
    comm: c_int,
    flavor: Flavor,
    base: usize,
    size: isize,
    unit: c_int,
    inf: c_int,
    call: &str,
) -> Result<(Win, Vec<(String, String)>)> {
    let c = st.comm(comm)?;
    let size = usize::try_from(size).map_err(|_| Error::Code {
        code: class::SIZE,
        msg: format!("MPI_ERR_SIZE: {call}: size {size} is negative"),
    })?;
    let unit = usize::try_from(unit)
        .ok()
        .filter(|&u| u > 0)
        .ok_or_else(|| Error::Arg(format!("{call}: disp_unit {unit} (must be positive)")))?;
    if flavor == Flavor::Create && base == 0 && size > 0 {
        return Err(Error::Arg(format!("{call}: base is NULL for {size} bytes")));
    }
    let hints = if inf == 0 {
        Vec::new()
    } else {
        info(&mut st.t(), inf)?.clone()
    };
    let w = Win::create(&st.mpi, &c, st.job.rma(), flavor, base, size, unit, call)?;
    Ok((w, hints))
}

fn register(w: Win, hints: Vec<(String, String)>) -> c_int {
    add(WinEntry {
        size: w.size() as isize,
        disp_unit: w.disp_unit() as c_int,
        flavor: w.flavor() as c_int,
        model: w.model(),
        win: w,
        errh: AtomicI32::new(h::ERRORS_ARE_FATAL),
        name: Mutex::new(String::new()),
        info: Mutex::new(hints),
    })
}

mpi_fn!(MPI_Win_create, PMPI_Win_create, (base: *mut c_void, size: isize, disp_unit: c_int, info: c_int, comm: c_int, win: *mut c_int) -> c_int {
    let name = "MPI_Win_create";
    call(name, comm, |st| {
        let (w, hints) = make(st, comm, Flavor::Create, base as usize, size, disp_unit, info, name)?;
        // SAFETY: the caller's handle.
        unsafe { put(win, register(w, hints), "win") }
    })
});

mpi_fn!(MPI_Win_allocate, PMPI_Win_allocate, (size: isize, disp_unit: c_int, info: c_int, comm: c_int, baseptr: *mut c_void, win: *mut c_int) -> c_int {
    let name = "MPI_Win_allocate";
    call(name, comm, |st| {
        if baseptr.is_null() || win.is_null() {
            return Err(Error::Arg(format!("{name}: baseptr or win is NULL")));
        }
        let (w, hints) = make(st, comm, Flavor::Allocate, 0, size, disp_unit, info, name)?;
        let b = w.base();
        // SAFETY: `baseptr` is the address of the caller's pointer (§11.2.2), checked non-null.
        unsafe {
            put(baseptr.cast::<*mut c_void>(), b as *mut c_void, "baseptr")?;
            put(win, register(w, hints), "win")
        }
    })
});

mpi_fn!(MPI_Win_free, PMPI_Win_free, (win: *mut c_int) -> c_int {
    let name = "MPI_Win_free";
    if win.is_null() {
        return call(name, h::COMM_WORLD, |_| Err(Error::Arg(format!("{name}: win is NULL"))));
    }
    // SAFETY: the caller's handle, checked non-null.
    let w = unsafe { *win };
    let e = match entry(w, name) {
        Ok(e) => e,
        Err(err) => return call(name, h::COMM_WORLD, |_| Err(err)),
    };
    if let Err(err) = with_state(name, |st| e.win.free(&st.mpi)) {
        return raise(&e, w, name, &err);
    }
    // Delete callbacks run with no lock held (they may call MPI).
    if let Err(err) = attrs::delete_all(name, attrs::Kind::Win, w) {
        return raise(&e, w, name, &err);
    }
    if let Some(slot) = wins_mut().get_mut(w as usize - 1) {
        GEN.bump();
        *slot = None;
    }
    // Its memory is released now, not at this thread's next one-sided call.
    cache::forget(&LAST, &BOUND);
    // SAFETY: as above.
    unsafe { *win = 0 };
    class::SUCCESS
});

mpi_fn!(MPI_Win_get_group, PMPI_Win_get_group, (win: c_int, group: *mut c_int) -> c_int {
    wcall("MPI_Win_get_group", win, |st, e| {
        let g = st.add_group(e.win.comm().group.clone());
        // SAFETY: the caller's handle.
        unsafe { put(group, g, "group") }
    })
});

mpi_fn!(MPI_Win_set_name, PMPI_Win_set_name, (win: c_int, win_name: *const c_char) -> c_int {
    wcall("MPI_Win_set_name", win, |_, e| {
        // SAFETY: a NUL-terminated string.
        let n = unsafe { get_str(win_name, "win_name")? };
        *e.name.lock().unwrap_or_else(|p| p.into_inner()) = n;
        Ok(())
    })
});

mpi_fn!(MPI_Win_get_name, PMPI_Win_get_name, (win: c_int, win_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    wcall("MPI_Win_get_name", win, |_, e| {
        let n = e.name.lock().unwrap_or_else(|p| p.into_inner()).clone();
        // SAFETY: MPI_MAX_OBJECT_NAME bytes.
        unsafe { put_str(win_name, resultlen, &n, 128) }
    })
});

mpi_fn!(MPI_Win_set_info, PMPI_Win_set_info, (win: c_int, inf: c_int) -> c_int {
    wcall("MPI_Win_set_info", win, |st, e| {
        let new = if inf == 0 { Vec::new() } else { info(&mut st.t(), inf)?.clone() };
        // The keys given change, the others keep their values (§11.2.7).
        let mut v = e.info.lock().unwrap_or_else(|p| p.into_inner());
        for (k, val) in new {
            super::misc::info_put(&mut v, k, val);
        }
        Ok(())
    })
});

mpi_fn!(MPI_Win_get_info, PMPI_Win_get_info, (win: c_int, info_used: *mut c_int) -> c_int {
    wcall("MPI_Win_get_info", win, |st, e| {
        let mut v = e.info.lock().unwrap_or_else(|p| p.into_inner()).clone();
        // The window hints of §11.2.1 in effect: the program's, else their defaults.
        for (k, d) in [
            ("no_locks", "false"),
            ("accumulate_ordering", "rar,raw,war,waw"),
            ("accumulate_ops", "same_op_no_op"),
            ("same_size", "false"),
            ("same_disp_unit", "false"),
        ] {
            if !v.iter().any(|(x, _)| x == k) {
                v.push((k.into(), d.into()));
            }
        }
        // The path this window's operations take (mpi-lite's own key, for tests and tools).
        let path = if e.win.is_message_path() { "messages" } else { "direct" };
        v.push(("mpi_lite_rma_path".into(), path.into()));
        // Puts and gets by the driver's transfers on the message path.
        let xfer = if e.win.uses_transfers() { "true" } else { "false" };
        v.push(("mpi_lite_rma_transfers".into(), xfer.into()));
        // Messages this process sent for the window (a debug counter: aggregation tests).
        v.push(("mpi_lite_rma_messages".into(), e.win.messages_sent().to_string()));
        let i = add_info(st, v);
        // SAFETY: the caller's handle.
        unsafe { put(info_used, i, "info_used") }
    })
});

mpi_fn!(MPI_Win_set_errhandler, PMPI_Win_set_errhandler, (win: c_int, errhandler: c_int) -> c_int {
    wcall("MPI_Win_set_errhandler", win, |_, e| {
        errors::check_handler(errhandler, Kind::Win)?;
        e.errh.store(errhandler, Ordering::Relaxed);
        Ok(())
    })
});

mpi_fn!(MPI_Win_get_errhandler, PMPI_Win_get_errhandler, (win: c_int, errhandler: *mut c_int) -> c_int {
    wcall("MPI_Win_get_errhandler", win, |_, e| {
        // SAFETY: the caller's handle.
        unsafe { put(errhandler, e.errh.load(Ordering::Relaxed), "errhandler") }
    })
});

mpi_fn!(MPI_Win_call_errhandler, PMPI_Win_call_errhandler, (win: c_int, errorcode: c_int) -> c_int {
    let name = "MPI_Win_call_errhandler";
    let e = match entry(win, name) {
        Ok(e) => e,
        Err(err) => return call(name, h::COMM_WORLD, |_| Err(err)),
    };
    let err = Error::Code { code: errorcode, msg: format!("{name}: error code {errorcode}") };
    match Raised::decide(e.errh.load(Ordering::Relaxed), Kind::Win, win, name, &err) {
        Raised::Return(_) => class::SUCCESS,
        r @ Raised::User(..) => {
            r.now();
            class::SUCCESS
        }
        fatal => fatal.now(),
    }
});

/// `MPI_WIN_BASE`, `SIZE`, `DISP_UNIT`, `CREATE_FLAVOR`, `MODEL` (`mpi.h`, MPICH's values).
const KEY_BASE: c_int = 0x6600_0001;
const KEY_SIZE: c_int = 0x6600_0003;
const KEY_DISP_UNIT: c_int = 0x6600_0005;
const KEY_FLAVOR: c_int = 0x6600_0007;
const KEY_MODEL: c_int = 0x6600_0009;

mpi_fn!(MPI_Win_get_attr, PMPI_Win_get_attr, (win: c_int, keyval: c_int, attribute_val: *mut c_void,
        flag: *mut c_int) -> c_int {
    let name = "MPI_Win_get_attr";
    if !(KEY_BASE..=KEY_MODEL).contains(&keyval) {
        return call_steps(name, h::COMM_WORLD, || super::attr::get_attr(name, attrs::Kind::Win, win, keyval, attribute_val, flag));
    }
    wcall(name, win, |_, e| {
        let v: *mut c_void = match keyval {
            KEY_BASE => e.win.base() as *mut c_void,
            KEY_SIZE => (&e.size as *const isize).cast_mut().cast(),
            KEY_DISP_UNIT => (&e.disp_unit as *const c_int).cast_mut().cast(),
            KEY_FLAVOR => (&e.flavor as *const c_int).cast_mut().cast(),
            KEY_MODEL => (&e.model as *const c_int).cast_mut().cast(),
            k => return Err(Error::Keyval(format!("{name}: keyval {k:#x} is not a window key"))),
        };
        // SAFETY: `attribute_val` is the address of the caller's `void *`; `flag` its int.
        unsafe {
            put(attribute_val.cast::<*mut c_void>(), v, "attribute_val")?;
            put(flag, 1, "flag")
        }
    })
});

mpi_fn!(MPI_Win_create_dynamic, PMPI_Win_create_dynamic, (info: c_int, comm: c_int, win: *mut c_int) -> c_int {
    let name = "MPI_Win_create_dynamic";
    call(name, comm, |st| {
        let (w, hints) = make(st, comm, Flavor::Dynamic, 0, 0, 1, info, name)?;
        // SAFETY: the caller's handle.
        unsafe { put(win, register(w, hints), "win") }
    })
});

mpi_fn!(MPI_Win_attach, PMPI_Win_attach, (win: c_int, base: *mut c_void, size: isize) -> c_int {
    wcall("MPI_Win_attach", win, |st, e| {
        let len = usize::try_from(size).map_err(|_| Error::Arg(format!("MPI_Win_attach: size {size} is negative")))?;
        e.win.attach(&st.mpi, base as usize, len)
    })
});

mpi_fn!(MPI_Win_detach, PMPI_Win_detach, (win: c_int, base: *const c_void) -> c_int {
    wcall("MPI_Win_detach", win, |st, e| e.win.detach(&st.mpi, base as usize))
});

mpi_fn!(MPI_Win_allocate_shared, PMPI_Win_allocate_shared, (size: isize, disp_unit: c_int, info: c_int, comm: c_int, baseptr: *mut c_void, win: *mut c_int) -> c_int {
    let name = "MPI_Win_allocate_shared";
    call(name, comm, |st| {
        if baseptr.is_null() || win.is_null() {
            return Err(Error::Arg(format!("{name}: baseptr or win is NULL")));
        }
        let (w, hints) = make(st, comm, Flavor::Shared, 0, size, disp_unit, info, name)?;
        let b = w.base();
        // SAFETY: `baseptr` is the address of the caller's pointer, checked non-null.
        unsafe {
            put(baseptr.cast::<*mut c_void>(), b as *mut c_void, "baseptr")?;
            put(win, register(w, hints), "win")
        }
    })
});

mpi_fn!(MPI_Win_shared_query, PMPI_Win_shared_query, (win: c_int, rank: c_int, size: *mut isize, disp_unit: *mut c_int, baseptr: *mut c_void) -> c_int {
    wcall("MPI_Win_shared_query", win, |_, e| {
        let (len, unit, addr) = e.win.shared_query(rank)?;
        if baseptr.is_null() {
            return Err(Error::Arg("MPI_Win_shared_query: baseptr is NULL".into()));
        }
        // SAFETY: the caller's outputs (`baseptr` the address of its pointer).
        unsafe {
            put(size, len as isize, "size")?;
            put(disp_unit, unit as c_int, "disp_unit")?;
            // A segment of zero bytes has no address to give (NULL, as MPICH gives).
            let addr = if len == 0 { std::ptr::null_mut() } else { addr as *mut c_void };
            put(baseptr.cast::<*mut c_void>(), addr, "baseptr")
        }
    })
});
