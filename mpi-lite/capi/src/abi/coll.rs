//! Collectives (MPI-3.1 chapter 5). `MPI_Barrier` works; the others wait for the shared
//! algorithms of `skifch::coll` and until then fail with `MPI_ERR_UNSUPPORTED_OPERATION`
//! (abort naming the call under `MPI_ERRORS_ARE_FATAL`).

use std::ffi::{c_int, c_void};

use mpi_lite::Error;

use super::mpi_fn;
use crate::state::{call, h};

mpi_fn!(MPI_Barrier, PMPI_Barrier, (comm: c_int) -> c_int {
    call("MPI_Barrier", comm, |st| {
        let c = st.comm(comm)?;
        st.mpi.barrier(&c)
    })
});

mpi_fn!(MPI_Bcast, PMPI_Bcast, (_buffer: *mut c_void, _count: c_int, _datatype: c_int, _root: c_int, comm: c_int) -> c_int {
    call("MPI_Bcast", comm, |_| Err(Error::Unsupported("MPI_Bcast (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Reduce, PMPI_Reduce, (_sendbuf: *const c_void, _recvbuf: *mut c_void, _count: c_int, _datatype: c_int, _op: c_int, _root: c_int, comm: c_int) -> c_int {
    call("MPI_Reduce", comm, |_| Err(Error::Unsupported("MPI_Reduce (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Allreduce, PMPI_Allreduce, (_sendbuf: *const c_void, _recvbuf: *mut c_void, _count: c_int, _datatype: c_int, _op: c_int, comm: c_int) -> c_int {
    call("MPI_Allreduce", comm, |_| Err(Error::Unsupported("MPI_Allreduce (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Gather, PMPI_Gather, (_sendbuf: *const c_void, _sendcount: c_int, _sendtype: c_int, _recvbuf: *mut c_void, _recvcount: c_int, _recvtype: c_int, _root: c_int, comm: c_int) -> c_int {
    call("MPI_Gather", comm, |_| Err(Error::Unsupported("MPI_Gather (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Gatherv, PMPI_Gatherv, (_sendbuf: *const c_void, _sendcount: c_int, _sendtype: c_int, _recvbuf: *mut c_void, _recvcounts: *const c_int, _displs: *const c_int, _recvtype: c_int, _root: c_int, comm: c_int) -> c_int {
    call("MPI_Gatherv", comm, |_| Err(Error::Unsupported("MPI_Gatherv (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Scatter, PMPI_Scatter, (_sendbuf: *const c_void, _sendcount: c_int, _sendtype: c_int, _recvbuf: *mut c_void, _recvcount: c_int, _recvtype: c_int, _root: c_int, comm: c_int) -> c_int {
    call("MPI_Scatter", comm, |_| Err(Error::Unsupported("MPI_Scatter (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Scatterv, PMPI_Scatterv, (_sendbuf: *const c_void, _sendcounts: *const c_int, _displs: *const c_int, _sendtype: c_int, _recvbuf: *mut c_void, _recvcount: c_int, _recvtype: c_int, _root: c_int, comm: c_int) -> c_int {
    call("MPI_Scatterv", comm, |_| Err(Error::Unsupported("MPI_Scatterv (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Allgather, PMPI_Allgather, (_sendbuf: *const c_void, _sendcount: c_int, _sendtype: c_int, _recvbuf: *mut c_void, _recvcount: c_int, _recvtype: c_int, comm: c_int) -> c_int {
    call("MPI_Allgather", comm, |_| Err(Error::Unsupported("MPI_Allgather (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Allgatherv, PMPI_Allgatherv, (_sendbuf: *const c_void, _sendcount: c_int, _sendtype: c_int, _recvbuf: *mut c_void, _recvcounts: *const c_int, _displs: *const c_int, _recvtype: c_int, comm: c_int) -> c_int {
    call("MPI_Allgatherv", comm, |_| Err(Error::Unsupported("MPI_Allgatherv (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Alltoall, PMPI_Alltoall, (_sendbuf: *const c_void, _sendcount: c_int, _sendtype: c_int, _recvbuf: *mut c_void, _recvcount: c_int, _recvtype: c_int, comm: c_int) -> c_int {
    call("MPI_Alltoall", comm, |_| Err(Error::Unsupported("MPI_Alltoall (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Alltoallv, PMPI_Alltoallv, (_sendbuf: *const c_void, _sendcounts: *const c_int, _sdispls: *const c_int, _sendtype: c_int, _recvbuf: *mut c_void, _recvcounts: *const c_int, _rdispls: *const c_int, _recvtype: c_int, comm: c_int) -> c_int {
    call("MPI_Alltoallv", comm, |_| Err(Error::Unsupported("MPI_Alltoallv (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Reduce_scatter, PMPI_Reduce_scatter, (_sendbuf: *const c_void, _recvbuf: *mut c_void, _recvcounts: *const c_int, _datatype: c_int, _op: c_int, comm: c_int) -> c_int {
    call("MPI_Reduce_scatter", comm, |_| Err(Error::Unsupported("MPI_Reduce_scatter (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Reduce_scatter_block, PMPI_Reduce_scatter_block, (_sendbuf: *const c_void, _recvbuf: *mut c_void, _recvcount: c_int, _datatype: c_int, _op: c_int, comm: c_int) -> c_int {
    call("MPI_Reduce_scatter_block", comm, |_| Err(Error::Unsupported("MPI_Reduce_scatter_block (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Scan, PMPI_Scan, (_sendbuf: *const c_void, _recvbuf: *mut c_void, _count: c_int, _datatype: c_int, _op: c_int, comm: c_int) -> c_int {
    call("MPI_Scan", comm, |_| Err(Error::Unsupported("MPI_Scan (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Exscan, PMPI_Exscan, (_sendbuf: *const c_void, _recvbuf: *mut c_void, _count: c_int, _datatype: c_int, _op: c_int, comm: c_int) -> c_int {
    call("MPI_Exscan", comm, |_| Err(Error::Unsupported("MPI_Exscan (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Reduce_local, PMPI_Reduce_local, (_inbuf: *const c_void, _inoutbuf: *mut c_void, _count: c_int, _datatype: c_int, _op: c_int) -> c_int {
    call("MPI_Reduce_local", h::COMM_WORLD, |_| Err(Error::Unsupported("MPI_Reduce_local (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Op_create, PMPI_Op_create, (_user_fn: *mut c_void, _commute: c_int, _op: *mut c_int) -> c_int {
    call("MPI_Op_create", h::COMM_WORLD, |_| Err(Error::Unsupported("MPI_Op_create (collectives arrive with skifch::coll)".into())))
});

mpi_fn!(MPI_Op_free, PMPI_Op_free, (_op: *mut c_int) -> c_int {
    call("MPI_Op_free", h::COMM_WORLD, |_| Err(Error::Unsupported("MPI_Op_free (collectives arrive with skifch::coll)".into())))
});
