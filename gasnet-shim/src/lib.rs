//! # gasnet-shim — GASNet-EX on SkifCh (issue 20)
//!
//! The GASNet-EX interface (specification 0.13, the 2020+ releases) over SkifCh channels:
//! the engine [`Gasnet`] and a C ABI that is *source*-compatible with programs written to
//! the public `gex_` / `gasnet_` / `gasnett_` names (`include/gasnetex.h`, `gasnet.h`,
//! `gasnet_tools.h`, …; library `libgasnet`; conduit name `skifch`, whose `.mak` and
//! pkg-config fragments `scripts/fragments.sh` writes). Port 4 of every rank
//! ([`skifch::ports::GASNET`]) is this library's channel (the drivers' default is 5 ports,
//! one per library). What is built and what is not: `README.md`.
//!
//! ## Active messages ([`am`])
//! A GASNet AM is one [`skifch::proto`] message to this library's handler `H_AM`: the
//! GASNet handler index, the argument count, the category (Short/Medium/Long) and
//! request/reply travel in the proto header's small argument; up to six 32-bit GASNet
//! arguments ride in the header's three `u64` words, more go as a prefix of the payload.
//! A Medium payload is handed to the handler **in place**, in the channel's receive memory
//! (copied only in the rare case that the message wrapped around the receive ring). A
//! Long payload is written into the target's segment: on the direct path (driver RMA) by
//! the sender, straight into the peer's mapped segment, and the message carries only the
//! arguments; on the message path inline with the message, or in chunks copied from the
//! channel's receive memory into the segment before the handler's message. The channel's
//! non-buffering send is `GEX_FLAG_IMMEDIATE`: a request that would wait is "not injected".
//!
//! ## Errors
//! The engine returns [`Error`]. The C ABI follows GASNet's convention for erroneous use
//! (a fatal error): it prints `gasnet: <call>: <error>` on stderr and exits with status 1
//! (the launcher then stops the job); a rank that finds a peer lost does the same, unless
//! that peer ended the job with `gasnet_exit(code)`, in which case it exits with `code`.
#![deny(unsafe_code)]

pub mod am;
mod capi;
pub mod coll;
pub mod engine;
mod eplock;
pub mod eps;
pub mod event;
mod nbcoll;
pub mod np;
pub mod ratomic;
pub mod rma;
pub mod rust_api;
pub mod vis;

/// The channel crate this library is built on (callers name `Job` and the loopback job
/// through it, so the versions always match).
pub use skifch;

pub use am::{Category, Data, Token};
pub use engine::{Gasnet, Options, Path};

/// Errors of the GASNet library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The channel layer failed (a lost rank is `Comm(PeerLost)`).
    #[error(transparent)]
    Comm(#[from] skifch::Error),
    /// A rank outside the job.
    #[error("rank {rank} is out of range (the job has {n} ranks)")]
    BadRank {
        /// The rank asked for.
        rank: i64,
        /// Ranks in the job.
        n: u32,
    },
    /// A remote range that is not inside the target rank's segment.
    #[error(
        "{len} bytes at {addr:#x} are outside rank {rank}'s segment ({base:#x}, {size} bytes)"
    )]
    OutsideSegment {
        /// The target rank.
        rank: u32,
        /// The address in the target's address space.
        addr: usize,
        /// Bytes accessed.
        len: usize,
        /// The segment's base.
        base: usize,
        /// The segment's length.
        size: usize,
    },
    /// An AM to a handler index with no handler registered.
    #[error("handler index {index} is not registered on rank {rank}")]
    Unregistered {
        /// The handler index.
        index: u8,
        /// The rank without it.
        rank: u32,
    },
    /// An AM to a handler index with no handler registered on an endpoint made by
    /// `gex_EP_Create`, or to an endpoint the rank does not have.
    #[error("handler index {index} is not registered on endpoint {ep} of rank {rank}")]
    UnregisteredOn {
        /// The handler index.
        index: u8,
        /// The endpoint's index.
        ep: u32,
        /// The rank without it.
        rank: u32,
    },
    /// A payload above the largest the call allows.
    #[error("a {len}-byte payload is larger than the maximum of {max} bytes")]
    TooLarge {
        /// The payload's length.
        len: usize,
        /// The largest allowed.
        max: usize,
    },
    /// A call GASNet does not allow inside an AM handler.
    #[error("not allowed inside an AM handler (a handler may only reply, once)")]
    InHandler,
    /// A call that needs the segment before `gex_Segment_Attach`.
    #[error("no segment is attached yet (gex_Segment_Attach)")]
    NotAttached,
    /// Any other invalid argument.
    #[error("invalid argument: {0}")]
    BadArgument(String),
    /// A malformed message from a peer.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// A call this library does not implement (yet).
    #[error("{0} is not implemented by this GASNet (gasnet-shim; see its README)")]
    NotImplemented(&'static str),
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
