//! The MPI-1 calls that MPI-3.0 removed (MPI-3.1 §17.2, "Removed Interfaces"), kept as
//! MPICH keeps them: programs and libraries written against MPI-1 — and test harnesses
//! that still use them — build unmodified. Each is its MPI-2 replacement under the old
//! name and argument list. (The `MPI_LB`/`MPI_UB` marker types are not provided.)

use std::ffi::{c_int, c_void};

use super::mpi_fn;
use crate::errors::ErrFn;

mpi_fn!(MPI_Address, PMPI_Address, (location: *const c_void, address: *mut isize) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { super::PMPI_Get_address(location, address) }
});

mpi_fn!(MPI_Type_extent, PMPI_Type_extent, (datatype: c_int, extent: *mut isize) -> c_int {
    let mut lb = 0isize;
    // SAFETY: forwarded contract (`lb` is ours).
    unsafe { super::PMPI_Type_get_extent(datatype, &mut lb, extent) }
});

mpi_fn!(MPI_Type_lb, PMPI_Type_lb, (datatype: c_int, displacement: *mut isize) -> c_int {
    let mut extent = 0isize;
    // SAFETY: forwarded contract (`extent` is ours).
    unsafe { super::PMPI_Type_get_extent(datatype, displacement, &mut extent) }
});

mpi_fn!(MPI_Type_ub, PMPI_Type_ub, (datatype: c_int, displacement: *mut isize) -> c_int {
    let mut extent = 0isize;
    // SAFETY: forwarded contract (`extent` is ours); the lower bound lands in the caller's
    // MPI_Aint, checked non-NULL by the call.
    let rc = unsafe { super::PMPI_Type_get_extent(datatype, displacement, &mut extent) };
    if rc == 0 {
        // SAFETY: written by the successful call just above, so valid.
        unsafe { *displacement += extent };
    }
    rc
});

mpi_fn!(MPI_Type_hvector, PMPI_Type_hvector, (count: c_int, blocklength: c_int, stride: isize,
        oldtype: c_int, newtype: *mut c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { super::PMPI_Type_create_hvector(count, blocklength, stride, oldtype, newtype) }
});

mpi_fn!(MPI_Type_hindexed, PMPI_Type_hindexed, (count: c_int, blocklengths: *const c_int,
        displacements: *const isize, oldtype: c_int, newtype: *mut c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { super::PMPI_Type_create_hindexed(count, blocklengths, displacements, oldtype, newtype) }
});

mpi_fn!(MPI_Type_struct, PMPI_Type_struct, (count: c_int, blocklengths: *const c_int,
        displacements: *const isize, types: *const c_int, newtype: *mut c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { super::PMPI_Type_create_struct(count, blocklengths, displacements, types, newtype) }
});

mpi_fn!(MPI_Errhandler_create, PMPI_Errhandler_create, (f: Option<ErrFn>, errhandler: *mut c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { super::PMPI_Comm_create_errhandler(f, errhandler) }
});

mpi_fn!(MPI_Errhandler_set, PMPI_Errhandler_set, (comm: c_int, errhandler: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { super::PMPI_Comm_set_errhandler(comm, errhandler) }
});

mpi_fn!(MPI_Errhandler_get, PMPI_Errhandler_get, (comm: c_int, errhandler: *mut c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { super::PMPI_Comm_get_errhandler(comm, errhandler) }
});
