//! One-sided communication (MPI-3.1 chapter 11): every call exists (programs and build
//! systems link them) and fails with `MPI_ERR_UNSUPPORTED_OPERATION` — or, under
//! `MPI_ERRORS_ARE_FATAL`, aborts with a message naming the call. Never pretends to work:
//! windows are not created, so no later call can appear to succeed either. (One-sided MPI
//! over `skifch::rma` is a later issue.)

use std::ffi::{c_int, c_void};

use mpi_lite::Error;

use super::mpi_fn;
use crate::state::{call, h};

fn unsupported(name: &str) -> Error {
    Error::Unsupported(format!("{name} (MPI one-sided communication)"))
}

mpi_fn!(MPI_Win_create, PMPI_Win_create, (_base: *mut c_void, _size: isize, _disp_unit: c_int, _info: c_int, comm: c_int, _win: *mut c_int) -> c_int {
    call("MPI_Win_create", comm, |_| Err(unsupported("MPI_Win_create")))
});

mpi_fn!(MPI_Win_allocate, PMPI_Win_allocate, (_size: isize, _disp_unit: c_int, _info: c_int, comm: c_int, _baseptr: *mut c_void, _win: *mut c_int) -> c_int {
    call("MPI_Win_allocate", comm, |_| Err(unsupported("MPI_Win_allocate")))
});

mpi_fn!(MPI_Win_create_dynamic, PMPI_Win_create_dynamic, (_info: c_int, comm: c_int, _win: *mut c_int) -> c_int {
    call("MPI_Win_create_dynamic", comm, |_| Err(unsupported("MPI_Win_create_dynamic")))
});

mpi_fn!(MPI_Win_attach, PMPI_Win_attach, (_win: c_int, _base: *mut c_void, _size: isize) -> c_int {
    call("MPI_Win_attach", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_attach")))
});

mpi_fn!(MPI_Win_detach, PMPI_Win_detach, (_win: c_int, _base: *const c_void) -> c_int {
    call("MPI_Win_detach", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_detach")))
});

mpi_fn!(MPI_Win_free, PMPI_Win_free, (_win: *mut c_int) -> c_int {
    call("MPI_Win_free", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_free")))
});

mpi_fn!(MPI_Put, PMPI_Put, (_oa: *const c_void, _oc: c_int, _ot: c_int, _tr: c_int, _td: isize, _tc: c_int, _tt: c_int, _win: c_int) -> c_int {
    call("MPI_Put", h::COMM_WORLD, |_| Err(unsupported("MPI_Put")))
});

mpi_fn!(MPI_Get, PMPI_Get, (_oa: *mut c_void, _oc: c_int, _ot: c_int, _tr: c_int, _td: isize, _tc: c_int, _tt: c_int, _win: c_int) -> c_int {
    call("MPI_Get", h::COMM_WORLD, |_| Err(unsupported("MPI_Get")))
});

mpi_fn!(MPI_Accumulate, PMPI_Accumulate, (_oa: *const c_void, _oc: c_int, _ot: c_int, _tr: c_int, _td: isize, _tc: c_int, _tt: c_int, _op: c_int, _win: c_int) -> c_int {
    call("MPI_Accumulate", h::COMM_WORLD, |_| Err(unsupported("MPI_Accumulate")))
});

mpi_fn!(MPI_Get_accumulate, PMPI_Get_accumulate, (_oa: *const c_void, _oc: c_int, _ot: c_int, _ra: *mut c_void, _rc: c_int, _rt: c_int, _tr: c_int, _td: isize, _tc: c_int, _tt: c_int, _op: c_int, _win: c_int) -> c_int {
    call("MPI_Get_accumulate", h::COMM_WORLD, |_| Err(unsupported("MPI_Get_accumulate")))
});

mpi_fn!(MPI_Fetch_and_op, PMPI_Fetch_and_op, (_oa: *const c_void, _ra: *mut c_void, _dt: c_int, _tr: c_int, _td: isize, _op: c_int, _win: c_int) -> c_int {
    call("MPI_Fetch_and_op", h::COMM_WORLD, |_| Err(unsupported("MPI_Fetch_and_op")))
});

mpi_fn!(MPI_Compare_and_swap, PMPI_Compare_and_swap, (_oa: *const c_void, _ca: *const c_void, _ra: *mut c_void, _dt: c_int, _tr: c_int, _td: isize, _win: c_int) -> c_int {
    call("MPI_Compare_and_swap", h::COMM_WORLD, |_| Err(unsupported("MPI_Compare_and_swap")))
});

mpi_fn!(MPI_Win_fence, PMPI_Win_fence, (_assert: c_int, _win: c_int) -> c_int {
    call("MPI_Win_fence", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_fence")))
});

mpi_fn!(MPI_Win_lock, PMPI_Win_lock, (_lock_type: c_int, _rank: c_int, _assert: c_int, _win: c_int) -> c_int {
    call("MPI_Win_lock", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_lock")))
});

mpi_fn!(MPI_Win_unlock, PMPI_Win_unlock, (_rank: c_int, _win: c_int) -> c_int {
    call("MPI_Win_unlock", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_unlock")))
});

mpi_fn!(MPI_Win_lock_all, PMPI_Win_lock_all, (_assert: c_int, _win: c_int) -> c_int {
    call("MPI_Win_lock_all", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_lock_all")))
});

mpi_fn!(MPI_Win_unlock_all, PMPI_Win_unlock_all, (_win: c_int) -> c_int {
    call("MPI_Win_unlock_all", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_unlock_all")))
});

mpi_fn!(MPI_Win_flush, PMPI_Win_flush, (_rank: c_int, _win: c_int) -> c_int {
    call("MPI_Win_flush", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_flush")))
});

mpi_fn!(MPI_Win_flush_all, PMPI_Win_flush_all, (_win: c_int) -> c_int {
    call("MPI_Win_flush_all", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_flush_all")))
});

mpi_fn!(MPI_Win_flush_local, PMPI_Win_flush_local, (_rank: c_int, _win: c_int) -> c_int {
    call("MPI_Win_flush_local", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_flush_local")))
});

mpi_fn!(MPI_Win_flush_local_all, PMPI_Win_flush_local_all, (_win: c_int) -> c_int {
    call("MPI_Win_flush_local_all", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_flush_local_all")))
});

mpi_fn!(MPI_Win_post, PMPI_Win_post, (_group: c_int, _assert: c_int, _win: c_int) -> c_int {
    call("MPI_Win_post", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_post")))
});

mpi_fn!(MPI_Win_start, PMPI_Win_start, (_group: c_int, _assert: c_int, _win: c_int) -> c_int {
    call("MPI_Win_start", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_start")))
});

mpi_fn!(MPI_Win_complete, PMPI_Win_complete, (_win: c_int) -> c_int {
    call("MPI_Win_complete", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_complete")))
});

mpi_fn!(MPI_Win_wait, PMPI_Win_wait, (_win: c_int) -> c_int {
    call("MPI_Win_wait", h::COMM_WORLD, |_| Err(unsupported("MPI_Win_wait")))
});
