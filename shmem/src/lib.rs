//! # shmem — OpenSHMEM on SkifCh (issue 6)
//!
//! An OpenSHMEM 1.5 library over SkifCh channels: a Rust API ([`World`], [`SymVec`]) and a
//! C ABI (`include/shmem.h`, library `libskifshmem`, compiler wrapper `bin/skif-oshcc`;
//! see `shmem/README.md`). Port 2 of every rank is this library's channel.
//!
//! ## Model (OpenSHMEM 1.5 §3)
//! Every PE has a **symmetric heap** of the same size (`SHMEM_SYMMETRIC_SIZE`, default
//! 512 MiB of lazily backed memory) and, for C programs, its global and static variables
//! are symmetric too. A symmetric object is named by a [`SymAddr`] (segment, offset), the
//! same on every PE; heap allocation is collective and deterministic so offsets agree.
//!
//! ## Access paths ([`Path`])
//! * **Direct**: the driver's optional remote-memory capability ([`skifch::rma`]); on the
//!   shm driver every PE maps every PE's heap and global data, so put/get are one `memcpy`
//!   and atomics are CPU atomics (`skifch_drivers::shm_rma`).
//! * **Messages**: put/get/atomics as [`skifch::proto`] active messages, executed by the
//!   target in its own address space inside its library calls, or by the optional progress
//!   thread (`SKIFSHMEM_PROGRESS_THREAD=1`; [`msg`] documents the handlers). Chosen when
//!   the driver has no RMA, when any PE cannot open the others' memory, or when
//!   `SKIFSHMEM_RMA=off`.
//! * **Transfers** (a job on several hosts, when the C library's `SKIFSHMEM_RMA=transfers`
//!   asks: over sockets providers the message path is far faster): the node's PEs mapped
//!   as on the direct path,
//!   the others' memory reached by the driver's transfers (libfabric's `FI_RMA`,
//!   [`skifch::rma::RmaCaps::transfers`]) for put and get, and by messages for atomics
//!   (applied by the target's CPU, atomic with its node peers' CPU atomics); `fence` is a
//!   `quiet` there.
//!
//! Barriers and collectives use [`skifch::coll`] over the same endpoint on both paths
//! ([`coll`]).
//!
//! Both paths give the same guarantees: `put` returns when the source may be reused and is
//! visible at the target after [`World::quiet`] or a barrier; `get` and fetching atomics
//! complete at return; atomics are atomic with respect to each other on the same object;
//! puts to one PE are delivered in order (`fence` is free).
//!
//! ## Where things are
//! [`world`] (the PE, its segments, put/get/atomics, quiet, barrier), [`wait`] (§9.11),
//! [`lock`] (§9.12), [`signal`] (§9.7), [`team`] and [`ctx`] (§9.4–9.5), [`coll`]
//! (§9.9–9.10), [`msg`] (the message path's handlers). The C ABI (`src/capi/`) only
//! translates C arguments to these and errors to the OpenSHMEM convention.
//!
//! ## Errors
//! The Rust API returns [`Error`]. The C ABI follows the OpenSHMEM convention: a bad
//! argument (address outside the symmetric segments, PE out of range, a lost PE) prints
//! `skifshmem: <call>: <error>` on stderr and exits with status 1 (the launcher then
//! stops the job); allocation failure returns NULL with a message.
#![deny(unsafe_code)]

mod capi;
pub mod coll;
pub mod ctx;
pub mod heap;
pub mod lock;
pub mod msg;
pub mod selftest;
pub mod signal;
pub mod team;
mod typed;
pub mod wait;
pub mod world;

pub use coll::{ReduceOp, Team};
pub use signal::SignalOp;
pub use typed::{Elem, SymVec};
pub use wait::{Cmp, Cond, Mode, Var};
pub use world::{Options, Path, SymAddr, World, SEG_DATA, SEG_HEAP};

/// Errors of the shmem library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The channel layer failed (a lost PE is `Comm(PeerLost)`).
    #[error(transparent)]
    Comm(#[from] skifch::Error),
    /// A PE number outside `0..n`.
    #[error("PE {pe} is out of range (the job has {n} PEs)")]
    BadPe {
        /// The PE asked for.
        pe: i64,
        /// PEs in the job.
        n: u32,
    },
    /// An address that is not in a symmetric segment, or an access that runs past one.
    #[error("address is not symmetric or the access runs outside its segment: {0}")]
    NotSymmetric(String),
    /// The symmetric heap has no free block large enough.
    #[error("symmetric heap exhausted: {size} bytes requested, {free} bytes free in total (raise SHMEM_SYMMETRIC_SIZE)")]
    HeapExhausted {
        /// Bytes requested (rounded).
        size: usize,
        /// Free bytes, possibly fragmented.
        free: usize,
    },
    /// An alignment the heap's mappings cannot give on every PE: heap offsets are
    /// aligned, addresses only as far as each PE's mapping of the heap is.
    #[error("alignment {align} is larger than the symmetric heap's mapping guarantees on every PE (page-aligned)")]
    Misaligned {
        /// The alignment asked for.
        align: usize,
    },
    /// Any other invalid argument.
    #[error("invalid argument: {0}")]
    BadArgument(String),
    /// A malformed message from a peer on the message path.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// A call this library does not implement.
    #[error("{0} is not implemented by this OpenSHMEM library")]
    NotImplemented(&'static str),
}

pub(crate) use skifch::diag::line as say;

/// Set once a fatal error is being reported: the exit handlers must not finalize then.
pub(crate) static FAILING: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Prints `skifshmem: <call>: <error>` and exits with status 1 (the C ABI's way to fail);
/// after another PE's `shmem_global_exit(status)`, exits with `status` quietly instead.
pub(crate) fn fatal(call: &str, e: &dyn std::fmt::Display) -> ! {
    FAILING.store(true, std::sync::atomic::Ordering::SeqCst);
    if let Some(status) = capi::exit_requested() {
        // Another PE called shmem_global_exit: this PE's failure (most likely finding
        // that PE gone) is the job ending, with that PE's status (§9.1.6).
        let _ = std::io::Write::flush(&mut std::io::stdout());
        capi::leave(status);
        std::process::exit(status)
    }
    say(&format!("skifshmem: {call}: {e}"));
    std::process::exit(1)
}
