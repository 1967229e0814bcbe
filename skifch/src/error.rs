//! The one error type of the core (spec: "The rest of the C ABI", errno list).

use crate::NetAddr;

/// Everything a channel operation can report. Each variant maps to exactly one `errno`
/// of the C ABI ([`Error::errno`]); nothing here is ever confused with "0 bytes sent".
#[derive(Debug, thiserror::Error, Clone)]
#[non_exhaustive]
pub enum Error {
    /// Nothing can be sent or received right now; retry later (C: `EAGAIN`).
    /// A failed send consumed nothing: the caller still owns every byte.
    #[error("would block: no room at the receiver / no message waiting")]
    WouldBlock,
    /// The address names a rank or port that does not exist in this job, or a port
    /// that its owner has closed (C: `EHOSTUNREACH`).
    #[error("no such destination {addr}: {why}")]
    Unreachable { addr: NetAddr, why: &'static str },
    /// A whole-message send can never fit the receiver's ring (C: `EMSGSIZE`).
    #[error(
        "message of {len} bytes can never fit the receiver (largest possible message: {max} bytes)"
    )]
    MessageTooLarge { len: usize, max: usize },
    /// A rank of the job died or left without finalizing (C: `EPIPE`).
    #[error("peer lost: rank {rank} of the job died or exited without finalizing")]
    PeerLost { rank: u32 },
    /// Shared state failed validation: wrong magic/version/size, an index or length out
    /// of range (C: `EPROTO`). The channel refuses to touch the memory any further.
    #[error("corrupt shared state: {0}")]
    Corrupt(String),
    /// A bad argument: an iovec longer than `IOV_MAX`, a port already open, … (C: `EINVAL`).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A blocking wait ran out of time (C: `ETIMEDOUT`).
    #[error("timed out")]
    TimedOut,
    /// The operating system refused something (mapping the segment, a futex, …).
    #[error("{what}: {source}")]
    Os {
        what: &'static str,
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },
    /// The job could not be joined (bad or missing launcher environment, …) (C: `EINVAL`).
    #[error("cannot join the job: {0}")]
    Bootstrap(String),
}

impl Error {
    /// The `errno` value that the C ABI reports for this error (spec, "The rest of the C ABI").
    pub fn errno(&self) -> i32 {
        match self {
            Error::WouldBlock => libc::EAGAIN,
            Error::Unreachable { .. } => libc::EHOSTUNREACH,
            Error::MessageTooLarge { .. } => libc::EMSGSIZE,
            Error::PeerLost { .. } => libc::EPIPE,
            Error::Corrupt(_) => libc::EPROTO,
            Error::InvalidArgument(_) | Error::Bootstrap(_) => libc::EINVAL,
            Error::TimedOut => libc::ETIMEDOUT,
            Error::Os { source, .. } => source.raw_os_error().unwrap_or(libc::EIO),
        }
    }

    /// Wraps the last OS error (`errno`) with what was being attempted.
    pub fn last_os(what: &'static str) -> Self {
        Error::Os {
            what,
            source: std::sync::Arc::new(std::io::Error::last_os_error()),
        }
    }

    /// Wraps an `io::Error` with what was being attempted.
    pub fn os(what: &'static str, e: std::io::Error) -> Self {
        Error::Os {
            what,
            source: std::sync::Arc::new(e),
        }
    }

    /// `true` for [`Error::WouldBlock`], the only error that means "retry later".
    pub fn is_would_block(&self) -> bool {
        matches!(self, Error::WouldBlock)
    }
}

/// `Result` with the core's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
