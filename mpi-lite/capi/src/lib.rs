//! # libskifmpi — mpi-lite's C ABI
//!
//! Builds `libskifmpi.so` and `libskifmpi.a` for `mpi-lite/include/mpi.h` (MPI 3.1 names,
//! integer handles as in MPICH). Programs are compiled with `mpi-lite/bin/skif-mpicc`
//! (or `skif-mpicxx`) and run with `skifrun -n N ./prog`.
//!
//! ## Layers
//! * `state` — the process-wide [`mpi_lite::Mpi`] created by `MPI_Init`, the handle
//!   tables and error-handler dispatch (MPI-3.1 §8.3); the thread level's locking (one
//!   lock per call below `MPI_THREAD_MULTIPLE`, the state shared by the calls under it).
//! * `errors` — error codes (predefined, user-added, one per unsupported call) and
//!   error handlers (predefined and the user's, called with the state lock released).
//! * `ending` — how a rank ends the job: `MPI_Abort`'s exit request to the driver, and
//!   fatal errors that end quietly with the requested code after another rank's abort.
//! * `active` — which threads are inside a call under `MPI_THREAD_MULTIPLE` (a flag
//!   per thread, for `MPI_Finalize`).
//! * `cache` — a thread's last handle of a table (communicators, windows), used without a
//!   lock while the table's generation has not moved.
//! * `progress` — the optional asynchronous progress thread (`SKIFMPI_ASYNC_PROGRESS`).
//! * `abi` — the `extern "C"` functions, each exported as `PMPI_X` and as `MPI_X`
//!   calling it (MPI-3.1 §14.2 profiling interface): pointer checks, handle lookup,
//!   statuses; no panic unwinds into C.
//!
//! All MPI semantics live in the `mpi-lite` crate; this crate only translates.
#![deny(unsafe_code)]
#![allow(missing_docs)] // the extern "C" functions are the MPI standard's, documented by mpi.h and MPI-3.1

mod abi;
mod active;
#[allow(unsafe_code)] // calls the program's attribute callbacks (C function pointers)
mod attrs;
mod cache;
#[allow(unsafe_code)] // deferred receives: no lock below THREAD_MULTIPLE, buffers by pointer
mod defer;
#[allow(unsafe_code)] // flushes the C stdio streams and _exits (MPI_Abort)
mod ending;
#[allow(unsafe_code)] // calls the user's error handlers (C function pointers)
mod errors;
#[allow(unsafe_code)] // the progress thread reaches the engine through a pointer (state::Served)
mod progress;
#[allow(unsafe_code)] // under MPI_THREAD_MULTIPLE calls reach the state through a pointer
mod state;

pub use abi::*;
