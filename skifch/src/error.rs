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
    Unreachable {
        /// The address sent to.
        addr: NetAddr,
        /// Which part of it is wrong.
        why: Unreachable,
    },
    /// A whole-message send can never fit the receiver's ring (C: `EMSGSIZE`).
    #[error(
        "message of {len} bytes can never fit the receiver (largest possible message: {max} bytes)"
    )]
    MessageTooLarge {
        /// The message's length.
        len: u64,
        /// The largest message the receiver can take.
        max: u32,
    },
    /// A rank of the job died or left without finalizing (C: `EPIPE`).
    #[error("peer lost: rank {rank} of the job died or exited without finalizing")]
    PeerLost {
        /// The lost rank.
        rank: u32,
    },
    /// Shared state failed validation: wrong magic/version/size, an index or length out
    /// of range (C: `EPROTO`). The channel refuses to touch the memory any further.
    #[error("corrupt shared state: {0}")]
    Corrupt(Msg),
    /// A bad argument: an iovec longer than `IOV_MAX`, a port already open, … (C: `EINVAL`).
    #[error("invalid argument: {0}")]
    InvalidArgument(Msg),
    /// A blocking wait ran out of time (C: `ETIMEDOUT`).
    #[error("timed out")]
    TimedOut,
    /// The operating system refused something (mapping the segment, a futex, …).
    #[error(transparent)]
    Os(Box<OsError>),
    /// The job could not be joined (bad or missing launcher environment, …) (C: `EINVAL`).
    #[error("cannot join the job: {0}")]
    Bootstrap(Msg),
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
            Error::Os(e) => e.source.raw_os_error().unwrap_or(libc::EIO),
        }
    }

    /// Wraps the last OS error (`errno`) with what was being attempted.
    pub fn last_os(what: &'static str) -> Self {
        Self::os(what, std::io::Error::last_os_error())
    }

    /// Wraps an `io::Error` with what was being attempted.
    pub fn os(what: &'static str, e: std::io::Error) -> Self {
        Error::Os(Box::new(OsError {
            what,
            source: std::sync::Arc::new(e),
        }))
    }

    /// `true` for [`Error::WouldBlock`], the only error that means "retry later".
    pub fn is_would_block(&self) -> bool {
        matches!(self, Error::WouldBlock)
    }
}

/// `Result` with the core's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

// Small enough that a `Result<(), Error>` travels in registers: the "would block" path of
// every poll must not move a large enum through memory.
static_assertions::const_assert!(std::mem::size_of::<Error>() <= 16);

/// Why a destination is unreachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreachable {
    /// The rank is not part of this job.
    NoSuchRank,
    /// The port number is past the last port of a rank.
    NoSuchPort,
    /// The port's owner closed it (or the rank finalized).
    Closed,
}

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unreachable::NoSuchRank => "rank out of range for this job",
            Unreachable::NoSuchPort => "port out of range (ports per rank: SKIFCH_PORTS)",
            Unreachable::Closed => "the port was closed by its owner",
        })
    }
}

/// An error message (a thin pointer, to keep [`Error`] small).
#[derive(Clone, PartialEq, Eq)]
#[allow(clippy::box_collection)] // the point: 8 bytes instead of 24
pub struct Msg(Box<String>);

impl std::ops::Deref for Msg {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}
impl std::fmt::Display for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::fmt::Debug for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self.0, f)
    }
}
impl From<String> for Msg {
    fn from(s: String) -> Self {
        Msg(Box::new(s))
    }
}
impl From<&str> for Msg {
    fn from(s: &str) -> Self {
        Msg(Box::new(s.to_owned()))
    }
}

/// An operating-system failure and what was being attempted.
#[derive(Debug, Clone)]
pub struct OsError {
    /// What was being attempted.
    pub what: &'static str,
    /// The OS error.
    pub source: std::sync::Arc<std::io::Error>,
}

impl std::fmt::Display for OsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.source)
    }
}
impl std::error::Error for OsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}
