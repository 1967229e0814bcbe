//! One-sided communication (MPI-3.1 §11.3-11.5): the operations and the synchronisation
//! calls on a window (`rma` holds the windows). Only translates: handles, counts and
//! buffers to `mpi_lite::win`.

use std::ffi::{c_int, c_void};

use mpi_lite::win::{AccOp, LockType, Target};
use mpi_lite::{Error, Result};

use super::rma::wcall;
use super::{arr, arr_mut, count, mpi_fn, user_buf};
use crate::state::{call, h, CState};

fn target<'a>(
    st: &CState,
    rank: c_int,
    disp: isize,
    n: c_int,
    dt: c_int,
    call: &str,
    keep: &'a mut Option<mpi_lite::datatype::Datatype>,
) -> Result<Target<'a>> {
    let count = count(n, call)?;
    let d = keep.insert(st.dtype(dt)?);
    Ok(Target {
        rank,
        disp,
        count,
        dt: d,
    })
}

mpi_fn!(MPI_Put, PMPI_Put, (oa: *const c_void, oc: c_int, ot: c_int, tr: c_int, td: isize, tc: c_int, tt: c_int, win: c_int) -> c_int {
    let name = "MPI_Put";
    wcall(name, win, |st, e| {
        // SAFETY: the caller's origin buffer (MPI buffer contract).
        let o = unsafe { user_buf(st, oa, oc, ot, name)? };
        let mut k = None;
        e.win.put(&st.mpi, &o, target(st, tr, td, tc, tt, name, &mut k)?)
    })
});

mpi_fn!(MPI_Get, PMPI_Get, (oa: *mut c_void, oc: c_int, ot: c_int, tr: c_int, td: isize, tc: c_int, tt: c_int, win: c_int) -> c_int {
    let name = "MPI_Get";
    wcall(name, win, |st, e| {
        // SAFETY: the caller's origin buffer, written (MPI buffer contract).
        let mut o = unsafe { user_buf(st, oa, oc, ot, name)? };
        let mut k = None;
        e.win.get(&st.mpi, &mut o, target(st, tr, td, tc, tt, name, &mut k)?)
    })
});

mpi_fn!(MPI_Accumulate, PMPI_Accumulate, (oa: *const c_void, oc: c_int, ot: c_int, tr: c_int, td: isize, tc: c_int, tt: c_int, op: c_int, win: c_int) -> c_int {
    let name = "MPI_Accumulate";
    wcall(name, win, |st, e| {
        let op = AccOp::from_handle(op, name)?;
        // SAFETY: the caller's origin buffer.
        let o = unsafe { user_buf(st, oa, oc, ot, name)? };
        let mut k = None;
        e.win.accumulate(&st.mpi, &o, target(st, tr, td, tc, tt, name, &mut k)?, op)
    })
});

mpi_fn!(MPI_Get_accumulate, PMPI_Get_accumulate, (oa: *const c_void, oc: c_int, ot: c_int, ra: *mut c_void, rc: c_int, rt: c_int, tr: c_int, td: isize, tc: c_int, tt: c_int, op: c_int, win: c_int) -> c_int {
    let name = "MPI_Get_accumulate";
    wcall(name, win, |st, e| {
        let op = AccOp::from_handle(op, name)?;
        let o = if op == AccOp::NoOp {
            None
        } else {
            // SAFETY: the caller's origin buffer.
            Some(unsafe { user_buf(st, oa, oc, ot, name)? })
        };
        // SAFETY: the caller's result buffer, written.
        let mut r = unsafe { user_buf(st, ra, rc, rt, name)? };
        let mut k = None;
        e.win.get_accumulate(&st.mpi, o.as_ref(), &mut r, target(st, tr, td, tc, tt, name, &mut k)?, op, name)
    })
});

mpi_fn!(MPI_Fetch_and_op, PMPI_Fetch_and_op, (oa: *const c_void, ra: *mut c_void, dt: c_int, tr: c_int, td: isize, op: c_int, win: c_int) -> c_int {
    let name = "MPI_Fetch_and_op";
    wcall(name, win, |st, e| {
        let op = AccOp::from_handle(op, name)?;
        let o = if op == AccOp::NoOp {
            None
        } else {
            // SAFETY: one element at the caller's origin address.
            Some(unsafe { user_buf(st, oa, 1, dt, name)? })
        };
        // SAFETY: one element at the caller's result address, written.
        let mut r = unsafe { user_buf(st, ra, 1, dt, name)? };
        let mut k = None;
        e.win.get_accumulate(&st.mpi, o.as_ref(), &mut r, target(st, tr, td, 1, dt, name, &mut k)?, op, name)
    })
});

mpi_fn!(MPI_Compare_and_swap, PMPI_Compare_and_swap, (oa: *const c_void, ca: *const c_void, ra: *mut c_void, dt: c_int, tr: c_int, td: isize, win: c_int) -> c_int {
    let name = "MPI_Compare_and_swap";
    wcall(name, win, |st, e| {
        let d = st.dtype(dt)?;
        let n = c_int::try_from(d.size()).map_err(|_| Error::Type(format!("{name}: type too large")))?;
        // SAFETY: one element of `d` at each address (MPI-3.1 §11.3.6).
        let (o, c, r) = unsafe {
            (
                arr(oa.cast::<u8>(), n, "origin_addr")?,
                arr(ca.cast::<u8>(), n, "compare_addr")?,
                arr_mut(ra.cast::<u8>(), n as usize, "result_addr")?,
            )
        };
        e.win.compare_and_swap(&st.mpi, o, c, r, &d, tr, td)
    })
});

mpi_fn!(MPI_Win_fence, PMPI_Win_fence, (assert: c_int, win: c_int) -> c_int {
    wcall("MPI_Win_fence", win, |st, e| e.win.fence(&st.mpi, assert))
});

fn lock_type(t: c_int) -> Result<LockType> {
    match t {
        234 => Ok(LockType::Exclusive),
        235 => Ok(LockType::Shared),
        _ => Err(Error::Arg(format!(
            "MPI_Win_lock: lock_type {t} is neither MPI_LOCK_EXCLUSIVE nor MPI_LOCK_SHARED"
        ))),
    }
}

mpi_fn!(MPI_Win_lock, PMPI_Win_lock, (lock: c_int, rank: c_int, assert: c_int, win: c_int) -> c_int {
    wcall("MPI_Win_lock", win, |st, e| e.win.lock(&st.mpi, lock_type(lock)?, rank, assert))
});

mpi_fn!(MPI_Win_unlock, PMPI_Win_unlock, (rank: c_int, win: c_int) -> c_int {
    wcall("MPI_Win_unlock", win, |st, e| e.win.unlock(&st.mpi, rank))
});

mpi_fn!(MPI_Win_lock_all, PMPI_Win_lock_all, (assert: c_int, win: c_int) -> c_int {
    wcall("MPI_Win_lock_all", win, |st, e| e.win.lock_all(&st.mpi, assert))
});

mpi_fn!(MPI_Win_unlock_all, PMPI_Win_unlock_all, (win: c_int) -> c_int {
    wcall("MPI_Win_unlock_all", win, |st, e| e.win.unlock_all(&st.mpi))
});

mpi_fn!(MPI_Win_flush, PMPI_Win_flush, (rank: c_int, win: c_int) -> c_int {
    wcall("MPI_Win_flush", win, |st, e| e.win.flush(&st.mpi, Some(rank), "MPI_Win_flush"))
});

mpi_fn!(MPI_Win_flush_all, PMPI_Win_flush_all, (win: c_int) -> c_int {
    wcall("MPI_Win_flush_all", win, |st, e| e.win.flush(&st.mpi, None, "MPI_Win_flush_all"))
});

mpi_fn!(MPI_Win_flush_local, PMPI_Win_flush_local, (rank: c_int, win: c_int) -> c_int {
    wcall("MPI_Win_flush_local", win, |st, e| e.win.flush(&st.mpi, Some(rank), "MPI_Win_flush_local"))
});

mpi_fn!(MPI_Win_flush_local_all, PMPI_Win_flush_local_all, (win: c_int) -> c_int {
    wcall("MPI_Win_flush_local_all", win, |st, e| e.win.flush(&st.mpi, None, "MPI_Win_flush_local_all"))
});

mpi_fn!(MPI_Win_sync, PMPI_Win_sync, (win: c_int) -> c_int {
    wcall("MPI_Win_sync", win, |_, e| e.win.sync())
});

fn unsupported(name: &str) -> Error {
    Error::Unsupported(format!(
        "{name} (MPI one-sided communication: not built yet)"
    ))
}

/// A call not built yet: `MPI_ERR_UNSUPPORTED_OPERATION` naming it, on the window's
/// handler when `win` is one.
fn not_yet(name: &'static str, win: c_int) -> c_int {
    if super::rma::exists(win) {
        wcall(name, win, |_, _| Err(unsupported(name)))
    } else {
        call(name, h::COMM_WORLD, |_| Err(unsupported(name)))
    }
}

mpi_fn!(MPI_Win_post, PMPI_Win_post, (_group: c_int, _assert: c_int, win: c_int) -> c_int {
    not_yet("MPI_Win_post", win)
});

mpi_fn!(MPI_Win_start, PMPI_Win_start, (_group: c_int, _assert: c_int, win: c_int) -> c_int {
    not_yet("MPI_Win_start", win)
});

mpi_fn!(MPI_Win_complete, PMPI_Win_complete, (win: c_int) -> c_int {
    not_yet("MPI_Win_complete", win)
});

mpi_fn!(MPI_Win_wait, PMPI_Win_wait, (win: c_int) -> c_int {
    not_yet("MPI_Win_wait", win)
});

mpi_fn!(MPI_Win_test, PMPI_Win_test, (win: c_int, _flag: *mut c_int) -> c_int {
    not_yet("MPI_Win_test", win)
});

mpi_fn!(MPI_Rput, PMPI_Rput, (_oa: *const c_void, _oc: c_int, _ot: c_int, _tr: c_int, _td: isize, _tc: c_int, _tt: c_int, win: c_int, _req: *mut c_int) -> c_int {
    not_yet("MPI_Rput", win)
});

mpi_fn!(MPI_Rget, PMPI_Rget, (_oa: *mut c_void, _oc: c_int, _ot: c_int, _tr: c_int, _td: isize, _tc: c_int, _tt: c_int, win: c_int, _req: *mut c_int) -> c_int {
    not_yet("MPI_Rget", win)
});

mpi_fn!(MPI_Raccumulate, PMPI_Raccumulate, (_oa: *const c_void, _oc: c_int, _ot: c_int, _tr: c_int, _td: isize, _tc: c_int, _tt: c_int, _op: c_int, win: c_int, _req: *mut c_int) -> c_int {
    not_yet("MPI_Raccumulate", win)
});

mpi_fn!(MPI_Rget_accumulate, PMPI_Rget_accumulate, (_oa: *const c_void, _oc: c_int, _ot: c_int, _ra: *mut c_void, _rc: c_int, _rt: c_int, _tr: c_int, _td: isize, _tc: c_int, _tt: c_int, _op: c_int, win: c_int, _req: *mut c_int) -> c_int {
    not_yet("MPI_Rget_accumulate", win)
});
