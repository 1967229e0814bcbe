//! # armci-shim — ARMCI on SkifCh (issue 19)
//!
//! A native ARMCI (the one-sided layer of Global Arrays) over SkifCh channels: the engine
//! [`Armci`] and a C ABI (`include/armci.h`, `message.h`, library `libarmci`, compiler
//! wrapper `bin/skif-armcicc`; see `armci-shim/README.md`). Port 3 of every rank
//! ([`skifch::ports::ARMCI`]) is this library's channel.
//!
//! ## Model (ARMCI, as in the ARMCI-MPI flavour of `armci.h`)
//! Remote memory is what [`Armci::malloc`] returned: a collective allocation in which every
//! rank names every rank's block by that rank's own base address. A remote access names a
//! rank and an address in that rank's address space; the library finds the allocation
//! holding the whole access ([`Armci::locate`]) before touching anything, so an address
//! outside every allocation is an error and nothing is written.
//!
//! ## Two access paths ([`Path`]), as skifshmem
//! * **Direct**: the driver's remote-memory capability ([`skifch::rma`]): each allocation
//!   is an exposed segment mapped by every rank, so put/get are copies, accumulate is a
//!   compare-and-swap loop per element and read-modify-write a CPU atomic.
//! * **Messages**: each operation is a [`skifch::proto`] request executed by the target in
//!   its own address space inside its library calls ([`msg`] documents the handlers), and
//!   complete when its reply arrives. Chosen when the driver has no load/store RMA or with
//!   `ARMCI_SHIM_RMA=off`. A rank's own block is reached directly on this path too.
//!
//! Both paths complete every operation before the call returns (ARMCI permits it: a
//! non-blocking call's handle is then already complete), so [`Armci::fence`] is a memory
//! fence on the direct path and free on the message path.
//!
//! ## Where things are
//! [`global`] (the Rust API: typed collective allocations, shapes), [`engine`] (the
//! rank's state, allocation, contiguous put/get/acc/rmw, barrier, collectives), `hint`
//! (the last block located in each rank's memory, found again without a lock), [`xfer`]
//! (strided put/get, point-to-point messages), `pipe` (the message path's pipelined and
//! gathered requests), [`group`] (groups and group
//! allocation), [`strided`] (stride descriptors: checks and iteration), [`acc`]
//! (accumulate kernels), [`mutex`] (ARMCI mutexes), [`msg`] (the message path's
//! handlers). The C ABI (`src/capi/`) only translates C arguments to these and errors to
//! ARMCI's convention.
//!
//! ## Errors
//! The engine returns [`Error`]. The C ABI follows ARMCI's convention (a failed call
//! aborts, as `ARMCI_Error`): it prints `armci: <call>: <error>` on stderr and exits with
//! status 1 (the launcher then stops the job).
#![deny(unsafe_code)]

pub mod acc;
mod capi;
pub mod engine;
pub mod global;
pub mod group;
mod hint;
pub mod msg;
pub mod mutex;
mod pipe;
pub mod strided;
mod transfers;
pub mod xfer;

/// The channel crate this library is built on: callers name its types (`Job`, the
/// loopback job of `skifch::local`) through this path, so they always match the version
/// the library was built with.
pub use skifch;

pub use acc::AccType;
pub use engine::{Armci, Options, Path, Rmw};
pub use global::{AccElem, Elem, Global, Shape};
pub use group::Group;
pub use strided::Strided;

/// Errors of the ARMCI library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The channel layer failed (a lost rank is `Comm(PeerLost)`).
    #[error(transparent)]
    Comm(#[from] skifch::Error),
    /// A rank outside `0..n`.
    #[error("process {proc} is out of range (the job has {n} processes)")]
    BadProc {
        /// The rank asked for.
        proc: i64,
        /// Ranks in the job.
        n: u32,
    },
    /// A remote range that is not inside one ARMCI allocation of its rank.
    #[error("{len} bytes at {addr:#x} on process {proc} are not inside an ARMCI allocation of that process")]
    NotAllocated {
        /// The target rank.
        proc: u32,
        /// The address in the target's address space.
        addr: usize,
        /// Bytes accessed.
        len: usize,
    },
    /// A stride descriptor that does not fit its counts.
    #[error("inconsistent stride description: {0}")]
    BadStrides(String),
    /// Any other invalid argument.
    #[error("invalid argument: {0}")]
    BadArgument(String),
    /// A malformed message from a peer on the message path.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// A call this library does not implement.
    #[error("{0} is not implemented by this ARMCI (armci-shim; see its README)")]
    NotImplemented(&'static str),
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

pub(crate) use skifch::diag::line as say;

/// Set once a fatal error is being reported: the exit handler must not finalize then.
pub(crate) static FAILING: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Prints `armci: <call>: <error>` and exits with status 1 (the C ABI's way to fail).
pub(crate) fn fatal(call: &str, e: &dyn std::fmt::Display) -> ! {
    FAILING.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = std::io::Write::flush(&mut std::io::stdout());
    say(&format!("armci: {call}: {e}"));
    std::process::exit(1)
}
