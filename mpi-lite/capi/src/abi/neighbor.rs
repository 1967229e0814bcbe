//! Neighbourhood collectives (MPI-3.1 §7.6), blocking and nonblocking, on Cartesian and
//! distributed-graph communicators: one schedule (`Mpi::ineighbor`) for all ten; the
//! blocking ones wait for it. Blocks follow the topology's neighbour order
//! (`mpi_lite::nbc::neighbours`).

use std::ffi::{c_int, c_void};

use mpi_lite::engine::ReqId;
use mpi_lite::mem::UserBuf;
use mpi_lite::nbc::neighbours;
use mpi_lite::Result;

use super::nbc::{blocks, byte_displs, out, regular};
use super::{arr, mpi_fn, user_buf};
use crate::state::{call, CState};

type Aint = isize;

/// (in-degree, out-degree) of `comm`'s topology.
fn degrees(st: &CState, comm: c_int) -> Result<(usize, usize)> {
    let (s, d) = neighbours(&*st.comm(comm)?)?;
    Ok((s.len(), d.len()))
}

/// Runs the exchange; `wait`: the blocking form.
fn run(
    st: &CState,
    comm: c_int,
    send: Vec<UserBuf>,
    recv: Vec<UserBuf>,
    wait: bool,
) -> Result<Option<ReqId>> {
    let c = st.comm(comm)?;
    let id = st.mpi.ineighbor(&c, send, recv)?;
    if wait {
        st.mpi.wait(id)?;
        return Ok(None);
    }
    Ok(Some(id))
}

/// # Safety
/// MPI's buffer contract (valid until completion); `request` NULL for the blocking form.
unsafe fn finish(
    st: &CState,
    comm: c_int,
    send: Vec<UserBuf>,
    recv: Vec<UserBuf>,
    request: *mut c_int,
) -> Result<()> {
    match run(st, comm, send, recv, request.is_null())? {
        // SAFETY: the caller's request.
        Some(id) => unsafe { out(request, id) },
        None => Ok(()),
    }
}

/// `MPI_(I)neighbor_allgather(v)`: the same send buffer to every destination.
///
/// # Safety
/// As [`finish`]; `rc`/`rd` hold the in-degree's ints.
unsafe fn allgather(
    st: &CState,
    name: &str,
    sendbuf: *const c_void,
    sc: c_int,
    stype: c_int,
    recvbuf: *mut c_void,
    rc: &[c_int],
    rd: &[c_int],
    rt: c_int,
    comm: c_int,
    request: *mut c_int,
) -> Result<()> {
    let (_, outdeg) = degrees(st, comm)?;
    // SAFETY: forwarded (one buffer lent once per destination: only read).
    let send = unsafe {
        (0..outdeg)
            .map(|_| user_buf(st, sendbuf, sc, stype, name))
            .collect::<Result<Vec<_>>>()?
    };
    let d = byte_displs(st, rd, rt)?;
    // SAFETY: forwarded.
    let recv = unsafe { blocks(st, recvbuf, rc, &d, &vec![rt; rc.len()], name)? };
    // SAFETY: forwarded.
    unsafe { finish(st, comm, send, recv, request) }
}

/// `MPI_(I)neighbor_alltoall(v,w)` in the w form's terms.
///
/// # Safety
/// As [`finish`].
unsafe fn alltoall(
    st: &CState,
    name: &str,
    sendbuf: *const c_void,
    s: (&[c_int], &[Aint], &[c_int]),
    recvbuf: *mut c_void,
    r: (&[c_int], &[Aint], &[c_int]),
    comm: c_int,
    request: *mut c_int,
) -> Result<()> {
    // SAFETY: forwarded.
    let (send, recv) = unsafe {
        (
            blocks(st, sendbuf, s.0, s.1, s.2, name)?,
            blocks(st, recvbuf, r.0, r.1, r.2, name)?,
        )
    };
    // SAFETY: forwarded.
    unsafe { finish(st, comm, send, recv, request) }
}

macro_rules! both {
    ($b:ident, $pb:ident, $bn:literal, $i:ident, $pi:ident, $in_:literal, $comm:ident, ($($a:ident : $t:ty),*), $body:expr) => {
        mpi_fn!($b, $pb, ($($a: $t),*) -> c_int {
            call($bn, $comm, |st| $body(st, $bn, std::ptr::null_mut()))
        });
        mpi_fn!($i, $pi, ($($a: $t,)* request: *mut c_int) -> c_int {
            call($in_, $comm, |st| {
                if request.is_null() {
                    return Err(mpi_lite::Error::Arg(concat!($in_, ": request is NULL").into()));
                }
                $body(st, $in_, request)
            })
        });
    };
}

both!(MPI_Neighbor_allgather, PMPI_Neighbor_allgather, "MPI_Neighbor_allgather",
MPI_Ineighbor_allgather, PMPI_Ineighbor_allgather, "MPI_Ineighbor_allgather", comm,
(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int,
 recvtype: c_int, comm: c_int),
|st: &CState, name: &str, request: *mut c_int| -> Result<()> {
    let (indeg, _) = degrees(st, comm)?;
    let (rc, rd) = regular(indeg, recvcount);
    // SAFETY: MPI's buffer contract.
    unsafe { allgather(st, name, sendbuf, sendcount, sendtype, recvbuf, &rc, &rd, recvtype, comm, request) }
});

both!(MPI_Neighbor_allgatherv, PMPI_Neighbor_allgatherv, "MPI_Neighbor_allgatherv",
MPI_Ineighbor_allgatherv, PMPI_Ineighbor_allgatherv, "MPI_Ineighbor_allgatherv", comm,
(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int,
 displs: *const c_int, recvtype: c_int, comm: c_int),
|st: &CState, name: &str, request: *mut c_int| -> Result<()> {
    let (indeg, _) = degrees(st, comm)?;
    // SAFETY: in-degree ints each (MPI contract), then MPI's buffer contract.
    unsafe {
        let (rc, rd) = (arr(recvcounts, indeg as c_int, "recvcounts")?, arr(displs, indeg as c_int, "displs")?);
        allgather(st, name, sendbuf, sendcount, sendtype, recvbuf, rc, rd, recvtype, comm, request)
    }
});

both!(MPI_Neighbor_alltoall, PMPI_Neighbor_alltoall, "MPI_Neighbor_alltoall",
MPI_Ineighbor_alltoall, PMPI_Ineighbor_alltoall, "MPI_Ineighbor_alltoall", comm,
(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int,
 recvtype: c_int, comm: c_int),
|st: &CState, name: &str, request: *mut c_int| -> Result<()> {
    let (indeg, outdeg) = degrees(st, comm)?;
    let ((sc, sd), (rc, rd)) = (regular(outdeg, sendcount), regular(indeg, recvcount));
    let (sd, rd) = (byte_displs(st, &sd, sendtype)?, byte_displs(st, &rd, recvtype)?);
    let (stv, rtv) = (vec![sendtype; outdeg], vec![recvtype; indeg]);
    // SAFETY: MPI's buffer contract.
    unsafe { alltoall(st, name, sendbuf, (&sc, &sd, &stv), recvbuf, (&rc, &rd, &rtv), comm, request) }
});

both!(MPI_Neighbor_alltoallv, PMPI_Neighbor_alltoallv, "MPI_Neighbor_alltoallv",
MPI_Ineighbor_alltoallv, PMPI_Ineighbor_alltoallv, "MPI_Ineighbor_alltoallv", comm,
(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: c_int,
 recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: c_int, comm: c_int),
|st: &CState, name: &str, request: *mut c_int| -> Result<()> {
    let (indeg, outdeg) = degrees(st, comm)?;
    // SAFETY: degree-many ints each (MPI contract).
    let (sc, sd, rc, rd) = unsafe {
        (arr(sendcounts, outdeg as c_int, "sendcounts")?, arr(sdispls, outdeg as c_int, "sdispls")?,
         arr(recvcounts, indeg as c_int, "recvcounts")?, arr(rdispls, indeg as c_int, "rdispls")?)
    };
    let (sd, rd) = (byte_displs(st, sd, sendtype)?, byte_displs(st, rd, recvtype)?);
    let (stv, rtv) = (vec![sendtype; outdeg], vec![recvtype; indeg]);
    // SAFETY: MPI's buffer contract.
    unsafe { alltoall(st, name, sendbuf, (sc, &sd, &stv), recvbuf, (rc, &rd, &rtv), comm, request) }
});

both!(MPI_Neighbor_alltoallw, PMPI_Neighbor_alltoallw, "MPI_Neighbor_alltoallw",
MPI_Ineighbor_alltoallw, PMPI_Ineighbor_alltoallw, "MPI_Ineighbor_alltoallw", comm,
(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const Aint, sendtypes: *const c_int,
 recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const Aint, recvtypes: *const c_int, comm: c_int),
|st: &CState, name: &str, request: *mut c_int| -> Result<()> {
    let (indeg, outdeg) = degrees(st, comm)?;
    let (o, i) = (outdeg as c_int, indeg as c_int);
    // SAFETY: degree-many values each (MPI contract), then MPI's buffer contract.
    unsafe {
        let s = (arr(sendcounts, o, "sendcounts")?, arr(sdispls, o, "sdispls")?, arr(sendtypes, o, "sendtypes")?);
        let r = (arr(recvcounts, i, "recvcounts")?, arr(rdispls, i, "rdispls")?, arr(recvtypes, i, "recvtypes")?);
        alltoall(st, name, sendbuf, s, recvbuf, r, comm, request)
    }
});
