//! Intercommunicators (MPI-3.1 §6.6): `MPI_Intercomm_create`, `Intercomm_merge`,
//! `Comm_remote_size`, `Comm_remote_group` (`mpi_lite::inter` builds them; dup, split,
//! create, compare and the collectives take intercommunicators through their usual calls).

use std::ffi::c_int;
use std::sync::Arc;

use mpi_lite::comm::CommData;
use mpi_lite::{Error, Result};

use super::{mpi_fn, put};
use crate::state::{call, CState};

/// Adds `c` with the error handler of `parent` (a new communicator inherits it, §8.3.1).
fn add_child(st: &CState, parent: c_int, c: Arc<CommData>) -> Result<c_int> {
    st.add_child(parent, c)
}

mpi_fn!(MPI_Intercomm_create, PMPI_Intercomm_create, (local_comm: c_int, local_leader: c_int, peer_comm: c_int,
        remote_leader: c_int, tag: c_int, newintercomm: *mut c_int) -> c_int {
    call("MPI_Intercomm_create", local_comm, |st| {
        if newintercomm.is_null() {
            return Err(Error::Arg("MPI_Intercomm_create: newintercomm is NULL".into()));
        }
        let local = st.comm(local_comm)?;
        // The peer communicator matters at the local leader only (others may pass
        // MPI_COMM_NULL); a bad one there fails the whole group through the agreement.
        let peer = st.comm(peer_comm).ok();
        let d = st.mpi.intercomm_create(&local, local_leader, peer.as_deref(), remote_leader, tag)?;
        let hd = add_child(st, local_comm, d)?;
        // SAFETY: the caller's handle (checked non-null).
        unsafe { put(newintercomm, hd, "newintercomm") }
    })
});

mpi_fn!(MPI_Intercomm_merge, PMPI_Intercomm_merge, (intercomm: c_int, high: c_int, newintracomm: *mut c_int) -> c_int {
    call("MPI_Intercomm_merge", intercomm, |st| {
        if newintracomm.is_null() {
            return Err(Error::Arg("MPI_Intercomm_merge: newintracomm is NULL".into()));
        }
        let c = st.comm(intercomm)?;
        let d = st.mpi.intercomm_merge(&c, high != 0)?;
        let hd = add_child(st, intercomm, d)?;
        // SAFETY: the caller's handle (checked non-null).
        unsafe { put(newintracomm, hd, "newintracomm") }
    })
});

/// The intercommunicator part of `comm`, or `MPI_ERR_COMM` naming the call (§6.6.1).
fn inter_of(st: &CState, comm: c_int, name: &str) -> Result<Arc<mpi_lite::inter::Inter>> {
    st.comm(comm)?.inter.clone().ok_or_else(|| {
        Error::Comm(format!(
            "{name}: the communicator is not an intercommunicator"
        ))
    })
}

mpi_fn!(MPI_Comm_remote_size, PMPI_Comm_remote_size, (comm: c_int, size: *mut c_int) -> c_int {
    call("MPI_Comm_remote_size", comm, |st| {
        let n = inter_of(st, comm, "MPI_Comm_remote_size")?.remote.size() as c_int;
        // SAFETY: the caller's int.
        unsafe { put(size, n, "size") }
    })
});

mpi_fn!(MPI_Comm_remote_group, PMPI_Comm_remote_group, (comm: c_int, group: *mut c_int) -> c_int {
    call("MPI_Comm_remote_group", comm, |st| {
        let g = inter_of(st, comm, "MPI_Comm_remote_group")?.remote.clone();
        let hd = st.add_group(g);
        // SAFETY: the caller's handle.
        unsafe { put(group, hd, "group") }
    })
});
