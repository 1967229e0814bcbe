//! Process creation and management (MPI-3.1 chapter 10). `skifrun` starts a fixed set of
//! ranks, so no process can be added: every call that would start or join processes
//! fails at once with `MPI_ERR_SPAWN` naming itself (never a hang); `MPI_Comm_get_parent`
//! answers `MPI_COMM_NULL` (no process here was spawned), which is correct, and
//! `MPI_Comm_disconnect` frees the communicator as `MPI_Comm_free` does (§10.5.4: with no
//! pending operation that is all it has to do; our point-to-point requests own nothing of
//! a communicator).

use std::ffi::{c_char, c_int};

use mpi_lite::Error;

use super::{mpi_fn, put};
use crate::state::{call_pure, h};

fn refuse(name: &str) -> Result<(), Error> {
    Err(Error::Spawn(format!(
        "{name}: dynamic processes are not supported (skifrun starts a fixed set of ranks)"
    )))
}

macro_rules! refused {
    ($mpi:ident, $pmpi:ident, $name:literal, ($($a:ident : $t:ty),*)) => {
        mpi_fn!($mpi, $pmpi, ($($a: $t),*) -> c_int {
            $(let _ = $a;)*
            call_pure($name, || refuse($name))
        });
    };
}

refused!(MPI_Comm_spawn, PMPI_Comm_spawn, "MPI_Comm_spawn", (command: *const c_char,
    argv: *mut *mut c_char, maxprocs: c_int, info: c_int, root: c_int, comm: c_int,
    intercomm: *mut c_int, array_of_errcodes: *mut c_int));
refused!(MPI_Comm_spawn_multiple, PMPI_Comm_spawn_multiple, "MPI_Comm_spawn_multiple", (count: c_int,
    array_of_commands: *mut *mut c_char, array_of_argv: *mut *mut *mut c_char,
    array_of_maxprocs: *const c_int, array_of_info: *const c_int, root: c_int, comm: c_int,
    intercomm: *mut c_int, array_of_errcodes: *mut c_int));
refused!(MPI_Open_port, PMPI_Open_port, "MPI_Open_port", (info: c_int, port_name: *mut c_char));
refused!(MPI_Close_port, PMPI_Close_port, "MPI_Close_port", (port_name: *const c_char));
refused!(MPI_Comm_accept, PMPI_Comm_accept, "MPI_Comm_accept", (port_name: *const c_char, info: c_int,
    root: c_int, comm: c_int, newcomm: *mut c_int));
refused!(MPI_Comm_connect, PMPI_Comm_connect, "MPI_Comm_connect", (port_name: *const c_char, info: c_int,
    root: c_int, comm: c_int, newcomm: *mut c_int));
refused!(MPI_Publish_name, PMPI_Publish_name, "MPI_Publish_name", (service_name: *const c_char,
    info: c_int, port_name: *const c_char));
refused!(MPI_Unpublish_name, PMPI_Unpublish_name, "MPI_Unpublish_name", (service_name: *const c_char,
    info: c_int, port_name: *const c_char));
refused!(MPI_Lookup_name, PMPI_Lookup_name, "MPI_Lookup_name", (service_name: *const c_char,
    info: c_int, port_name: *mut c_char));
refused!(MPI_Comm_join, PMPI_Comm_join, "MPI_Comm_join", (fd: c_int, intercomm: *mut c_int));

mpi_fn!(MPI_Comm_get_parent, PMPI_Comm_get_parent, (parent: *mut c_int) -> c_int {
    // SAFETY: the caller's handle.
    call_pure("MPI_Comm_get_parent", || unsafe { put(parent, h::COMM_NULL, "parent") })
});

mpi_fn!(MPI_Comm_disconnect, PMPI_Comm_disconnect, (comm: *mut c_int) -> c_int {
    // SAFETY: the same contract as MPI_Comm_free's.
    unsafe { super::PMPI_Comm_free(comm) }
});
