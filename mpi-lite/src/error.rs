//! The one error type of mpi-lite and its MPI error classes (MPI-3.1 §8.4 "Error
//! Classes, Error Codes, and Error Handlers"). Class numbers are MPICH's, so programs
//! that print them see familiar values.

/// Error class numbers (MPI-3.1 Table 8.2), as in `mpi.h`.
#[allow(missing_docs)]
pub mod class {
    pub const SUCCESS: i32 = 0;
    pub const BUFFER: i32 = 1;
    pub const COUNT: i32 = 2;
    pub const TYPE: i32 = 3;
    pub const TAG: i32 = 4;
    pub const COMM: i32 = 5;
    pub const RANK: i32 = 6;
    pub const ROOT: i32 = 7;
    pub const GROUP: i32 = 8;
    pub const OP: i32 = 9;
    pub const TOPOLOGY: i32 = 10;
    pub const DIMS: i32 = 11;
    pub const ARG: i32 = 12;
    pub const UNKNOWN: i32 = 13;
    pub const TRUNCATE: i32 = 14;
    pub const OTHER: i32 = 15;
    pub const INTERN: i32 = 16;
    pub const IN_STATUS: i32 = 17;
    pub const PENDING: i32 = 18;
    pub const REQUEST: i32 = 19;
    pub const WIN: i32 = 45;
    pub const UNSUPPORTED_OPERATION: i32 = 52;
    pub const LASTCODE: i32 = 0x3fff_ffff;
}

/// The description `MPI_Error_string` gives for an error class.
pub fn class_string(c: i32) -> Option<&'static str> {
    Some(match c {
        class::SUCCESS => "MPI_SUCCESS: no error",
        class::BUFFER => "MPI_ERR_BUFFER: invalid buffer pointer or attached buffer too small",
        class::COUNT => "MPI_ERR_COUNT: invalid count argument",
        class::TYPE => "MPI_ERR_TYPE: invalid datatype",
        class::TAG => "MPI_ERR_TAG: invalid tag",
        class::COMM => "MPI_ERR_COMM: invalid communicator",
        class::RANK => "MPI_ERR_RANK: invalid rank",
        class::ROOT => "MPI_ERR_ROOT: invalid root",
        class::GROUP => "MPI_ERR_GROUP: invalid group",
        class::OP => "MPI_ERR_OP: invalid reduction operation",
        class::TOPOLOGY => "MPI_ERR_TOPOLOGY: invalid topology",
        class::DIMS => "MPI_ERR_DIMS: invalid dimension argument",
        class::ARG => "MPI_ERR_ARG: invalid argument",
        class::UNKNOWN => "MPI_ERR_UNKNOWN: unknown error",
        class::TRUNCATE => "MPI_ERR_TRUNCATE: message truncated on receive",
        class::OTHER => "MPI_ERR_OTHER: other error",
        class::INTERN => "MPI_ERR_INTERN: internal error",
        class::IN_STATUS => "MPI_ERR_IN_STATUS: error code is in status",
        class::PENDING => "MPI_ERR_PENDING: pending request",
        class::REQUEST => "MPI_ERR_REQUEST: invalid request",
        class::WIN => "MPI_ERR_WIN: invalid window",
        class::UNSUPPORTED_OPERATION => {
            "MPI_ERR_UNSUPPORTED_OPERATION: operation not supported by mpi-lite"
        }
        _ => return None,
    })
}

/// Everything an MPI call can report. Each variant is one MPI error class
/// ([`Error::class`]); the message says which call and which argument.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `MPI_ERR_BUFFER`.
    #[error("MPI_ERR_BUFFER: {0}")]
    Buffer(String),
    /// `MPI_ERR_COUNT`.
    #[error("MPI_ERR_COUNT: {0}")]
    Count(String),
    /// `MPI_ERR_TYPE`.
    #[error("MPI_ERR_TYPE: {0}")]
    Type(String),
    /// `MPI_ERR_TAG`.
    #[error("MPI_ERR_TAG: {0}")]
    Tag(String),
    /// `MPI_ERR_COMM`.
    #[error("MPI_ERR_COMM: {0}")]
    Comm(String),
    /// `MPI_ERR_RANK`.
    #[error("MPI_ERR_RANK: {0}")]
    Rank(String),
    /// `MPI_ERR_ROOT`.
    #[error("MPI_ERR_ROOT: {0}")]
    Root(String),
    /// `MPI_ERR_GROUP`.
    #[error("MPI_ERR_GROUP: {0}")]
    Group(String),
    /// `MPI_ERR_OP`.
    #[error("MPI_ERR_OP: {0}")]
    Op(String),
    /// `MPI_ERR_TOPOLOGY`.
    #[error("MPI_ERR_TOPOLOGY: {0}")]
    Topology(String),
    /// `MPI_ERR_DIMS`.
    #[error("MPI_ERR_DIMS: {0}")]
    Dims(String),
    /// `MPI_ERR_ARG`.
    #[error("MPI_ERR_ARG: {0}")]
    Arg(String),
    /// `MPI_ERR_REQUEST`.
    #[error("MPI_ERR_REQUEST: {0}")]
    Request(String),
    /// `MPI_ERR_TRUNCATE`: the message is longer than the receive buffer. The buffer
    /// holds the first bytes that fit.
    #[error(
        "MPI_ERR_TRUNCATE: a message of {len} bytes does not fit a receive buffer of {cap} bytes"
    )]
    Truncate {
        /// Bytes sent.
        len: usize,
        /// Bytes the receive buffer holds.
        cap: usize,
    },
    /// `MPI_ERR_IN_STATUS`: a multiple-completion call where some request failed; the
    /// per-request class is in each status's `MPI_ERROR`.
    #[error("MPI_ERR_IN_STATUS: at least one request failed; see the statuses")]
    InStatus,
    /// `MPI_ERR_UNSUPPORTED_OPERATION`: the call exists but mpi-lite does not implement it.
    #[error("MPI_ERR_UNSUPPORTED_OPERATION: {0} is not supported by mpi-lite")]
    Unsupported(String),
    /// `MPI_ERR_OTHER`: a call before `MPI_Init` or after `MPI_Finalize`, …
    #[error("MPI_ERR_OTHER: {0}")]
    Other(String),
    /// `MPI_ERR_INTERN`: an internal limit (out of context ids, …).
    #[error("MPI_ERR_INTERN: {0}")]
    Intern(String),
    /// `MPI_ERR_OTHER` from the channel layer: a peer died (`PeerLost`), a port closed, …
    #[error("MPI_ERR_OTHER: transport: {0}")]
    Transport(#[from] skifch::Error),
}

impl Error {
    /// The MPI error class (`MPI_ERR_*`).
    pub fn class(&self) -> i32 {
        use class as c;
        match self {
            Error::Buffer(_) => c::BUFFER,
            Error::Count(_) => c::COUNT,
            Error::Type(_) => c::TYPE,
            Error::Tag(_) => c::TAG,
            Error::Comm(_) => c::COMM,
            Error::Rank(_) => c::RANK,
            Error::Root(_) => c::ROOT,
            Error::Group(_) => c::GROUP,
            Error::Op(_) => c::OP,
            Error::Topology(_) => c::TOPOLOGY,
            Error::Dims(_) => c::DIMS,
            Error::Arg(_) => c::ARG,
            Error::Request(_) => c::REQUEST,
            Error::Truncate { .. } => c::TRUNCATE,
            Error::InStatus => c::IN_STATUS,
            Error::Unsupported(_) => c::UNSUPPORTED_OPERATION,
            Error::Other(_) | Error::Transport(_) => c::OTHER,
            Error::Intern(_) => c::INTERN,
        }
    }
}

/// `Result` with mpi-lite's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
