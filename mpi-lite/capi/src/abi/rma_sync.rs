//! One-sided communication (MPI-3.1 §11.5): the synchronisation calls on a window — fence,
//! passive-target locks and flushes, `MPI_Win_sync`, post/start/complete/wait. Only
//! translates; the flushes take the direct path's short cuts first (`rma_ops`).

use std::ffi::c_int;

use mpi_lite::error::class;
use mpi_lite::win::LockType;
use mpi_lite::{Error, Result};

use super::rma::wcall;
use super::rma_ops::{direct, general, quick};
use super::{mpi_fn, put};
use crate::state::CState;

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
    if let (0, Ok(t)) = (assert, lock_type(lock)) {
        if direct(win, |w| w.direct_lock(t, rank)) {
            return class::SUCCESS;
        }
    }
    general("MPI_Win_lock", win, |st, e| e.win.lock(&st.mpi, lock_type(lock)?, rank, assert))
});

mpi_fn!(MPI_Win_unlock, PMPI_Win_unlock, (rank: c_int, win: c_int) -> c_int {
    if direct(win, |w| w.direct_unlock(rank)) {
        return class::SUCCESS;
    }
    general("MPI_Win_unlock", win, |st, e| e.win.unlock(&st.mpi, rank))
});

mpi_fn!(MPI_Win_lock_all, PMPI_Win_lock_all, (assert: c_int, win: c_int) -> c_int {
    wcall("MPI_Win_lock_all", win, |st, e| e.win.lock_all(&st.mpi, assert))
});

mpi_fn!(MPI_Win_unlock_all, PMPI_Win_unlock_all, (win: c_int) -> c_int {
    wcall("MPI_Win_unlock_all", win, |st, e| e.win.unlock_all(&st.mpi))
});

/// A flush past [`quick`] (`rank`: `None` for the `_all` forms; `local`: the `_local`
/// forms): the direct path's short cut at any thread level, then the general path.
#[inline(never)]
fn flush(name: &'static str, rank: Option<c_int>, local: bool, win: c_int) -> c_int {
    if direct(win, |w| w.direct_flush(rank, local)) {
        return class::SUCCESS;
    }
    general(name, win, |st, e| e.win.flush(&st.mpi, rank, name))
}

mpi_fn!(MPI_Win_flush, PMPI_Win_flush, (rank: c_int, win: c_int) -> c_int {
    if quick(win, #[inline(always)] |w| w.direct_flush(Some(rank), false).then_some(())).is_some() {
        return class::SUCCESS;
    }
    flush_rest(rank, win)
});

/// `MPI_Win_flush` past [`quick`], a tail call (the quick path keeps no frame).
#[inline(never)]
extern "C" fn flush_rest(rank: c_int, win: c_int) -> c_int {
    flush("MPI_Win_flush", Some(rank), false, win)
}

mpi_fn!(MPI_Win_flush_all, PMPI_Win_flush_all, (win: c_int) -> c_int {
    flush("MPI_Win_flush_all", None, false, win)
});

mpi_fn!(MPI_Win_flush_local, PMPI_Win_flush_local, (rank: c_int, win: c_int) -> c_int {
    if quick(win, #[inline(always)] |w| w.direct_flush(Some(rank), true).then_some(())).is_some() {
        return class::SUCCESS;
    }
    flush_local_rest(rank, win)
});

/// `MPI_Win_flush_local` past [`quick`], as [`flush_rest`].
#[inline(never)]
extern "C" fn flush_local_rest(rank: c_int, win: c_int) -> c_int {
    flush("MPI_Win_flush_local", Some(rank), true, win)
}

mpi_fn!(MPI_Win_flush_local_all, PMPI_Win_flush_local_all, (win: c_int) -> c_int {
    flush("MPI_Win_flush_local_all", None, true, win)
});

mpi_fn!(MPI_Win_sync, PMPI_Win_sync, (win: c_int) -> c_int {
    wcall("MPI_Win_sync", win, |_, e| e.win.sync())
});

fn group_ranks(st: &CState, g: c_int) -> Result<Vec<u32>> {
    Ok(st.group(g)?.ranks().to_vec())
}

mpi_fn!(MPI_Win_post, PMPI_Win_post, (group: c_int, assert: c_int, win: c_int) -> c_int {
    wcall("MPI_Win_post", win, |st, e| e.win.post(&st.mpi, &group_ranks(st, group)?, assert))
});

mpi_fn!(MPI_Win_start, PMPI_Win_start, (group: c_int, assert: c_int, win: c_int) -> c_int {
    wcall("MPI_Win_start", win, |st, e| e.win.start(&st.mpi, &group_ranks(st, group)?, assert))
});

mpi_fn!(MPI_Win_complete, PMPI_Win_complete, (win: c_int) -> c_int {
    wcall("MPI_Win_complete", win, |st, e| e.win.complete(&st.mpi))
});

mpi_fn!(MPI_Win_wait, PMPI_Win_wait, (win: c_int) -> c_int {
    wcall("MPI_Win_wait", win, |st, e| e.win.wait(&st.mpi))
});

mpi_fn!(MPI_Win_test, PMPI_Win_test, (win: c_int, flag: *mut c_int) -> c_int {
    wcall("MPI_Win_test", win, |st, e| {
        let done = e.win.test(&st.mpi)?;
        // SAFETY: the caller's int.
        unsafe { put(flag, c_int::from(done), "flag") }
    })
});
