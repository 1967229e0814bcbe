//! The one error type of mpi-lite and its MPI error classes (MPI-3.1 §8.4 "Error
//! Classes, Error Codes, and Error Handlers"). Class numbers are MPICH's, so programs
//! that print them see familiar values.

/// Error class numbers (MPI-3.1 §8.4 Table 8.2 and §14.3.9 for `MPI_T_ERR_*`), as in
/// `mpi.h`: MPICH's numbers.
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
    pub const ACCESS: i32 = 20;
    pub const AMODE: i32 = 21;
    pub const BAD_FILE: i32 = 22;
    pub const CONVERSION: i32 = 23;
    pub const DUP_DATAREP: i32 = 24;
    pub const FILE_EXISTS: i32 = 25;
    pub const FILE_IN_USE: i32 = 26;
    pub const FILE: i32 = 27;
    pub const INFO: i32 = 28;
    pub const INFO_KEY: i32 = 29;
    pub const INFO_VALUE: i32 = 30;
    pub const INFO_NOKEY: i32 = 31;
    pub const IO: i32 = 32;
    pub const NAME: i32 = 33;
    pub const NO_MEM: i32 = 34;
    pub const NOT_SAME: i32 = 35;
    pub const NO_SPACE: i32 = 36;
    pub const NO_SUCH_FILE: i32 = 37;
    pub const PORT: i32 = 38;
    pub const QUOTA: i32 = 39;
    pub const READ_ONLY: i32 = 40;
    pub const SERVICE: i32 = 41;
    pub const SPAWN: i32 = 42;
    pub const UNSUPPORTED_DATAREP: i32 = 43;
    pub const UNSUPPORTED_OPERATION: i32 = 44;
    pub const WIN: i32 = 45;
    pub const BASE: i32 = 46;
    pub const LOCKTYPE: i32 = 47;
    pub const KEYVAL: i32 = 48;
    pub const RMA_CONFLICT: i32 = 49;
    pub const RMA_SYNC: i32 = 50;
    pub const SIZE: i32 = 51;
    pub const DISP: i32 = 52;
    pub const ASSERT: i32 = 53;
    pub const RMA_RANGE: i32 = 55;
    pub const RMA_ATTACH: i32 = 56;
    pub const RMA_SHARED: i32 = 57;
    pub const RMA_FLAVOR: i32 = 58;
    pub const T_ERR_MEMORY: i32 = 59;
    pub const T_ERR_NOT_INITIALIZED: i32 = 60;
    pub const T_ERR_CANNOT_INIT: i32 = 61;
    pub const T_ERR_INVALID_INDEX: i32 = 62;
    pub const T_ERR_INVALID_ITEM: i32 = 63;
    pub const T_ERR_INVALID_HANDLE: i32 = 64;
    pub const T_ERR_OUT_OF_HANDLES: i32 = 65;
    pub const T_ERR_OUT_OF_SESSIONS: i32 = 66;
    pub const T_ERR_INVALID_SESSION: i32 = 67;
    pub const T_ERR_CVAR_SET_NOT_NOW: i32 = 68;
    pub const T_ERR_CVAR_SET_NEVER: i32 = 69;
    pub const T_ERR_PVAR_NO_STARTSTOP: i32 = 70;
    pub const T_ERR_PVAR_NO_WRITE: i32 = 71;
    pub const T_ERR_PVAR_NO_ATOMIC: i32 = 72;
    pub const T_ERR_INVALID_NAME: i32 = 73;
    pub const T_ERR_INVALID: i32 = 74;
    /// The largest predefined class (`MPI_ERR_LASTCODE` bounds every code).
    pub const LAST_PREDEFINED: i32 = 74;
    pub const LASTCODE: i32 = 0x3fff_ffff;
}

/// (class, `mpi.h` name, description) of every predefined class.
pub const CLASSES: &[(i32, &str, &str)] = &[
    (class::SUCCESS, "MPI_SUCCESS", "no error"),
    (
        class::BUFFER,
        "MPI_ERR_BUFFER",
        "invalid buffer pointer or attached buffer too small",
    ),
    (class::COUNT, "MPI_ERR_COUNT", "invalid count argument"),
    (class::TYPE, "MPI_ERR_TYPE", "invalid datatype"),
    (class::TAG, "MPI_ERR_TAG", "invalid tag"),
    (class::COMM, "MPI_ERR_COMM", "invalid communicator"),
    (class::RANK, "MPI_ERR_RANK", "invalid rank"),
    (class::ROOT, "MPI_ERR_ROOT", "invalid root"),
    (class::GROUP, "MPI_ERR_GROUP", "invalid group"),
    (class::OP, "MPI_ERR_OP", "invalid reduction operation"),
    (class::TOPOLOGY, "MPI_ERR_TOPOLOGY", "invalid topology"),
    (class::DIMS, "MPI_ERR_DIMS", "invalid dimension argument"),
    (class::ARG, "MPI_ERR_ARG", "invalid argument"),
    (class::UNKNOWN, "MPI_ERR_UNKNOWN", "unknown error"),
    (
        class::TRUNCATE,
        "MPI_ERR_TRUNCATE",
        "message truncated on receive",
    ),
    (class::OTHER, "MPI_ERR_OTHER", "other error"),
    (class::INTERN, "MPI_ERR_INTERN", "internal error"),
    (
        class::IN_STATUS,
        "MPI_ERR_IN_STATUS",
        "error code is in status",
    ),
    (class::PENDING, "MPI_ERR_PENDING", "pending request"),
    (class::REQUEST, "MPI_ERR_REQUEST", "invalid request"),
    (class::ACCESS, "MPI_ERR_ACCESS", "permission denied"),
    (class::AMODE, "MPI_ERR_AMODE", "invalid file access mode"),
    (class::BAD_FILE, "MPI_ERR_BAD_FILE", "invalid file name"),
    (
        class::CONVERSION,
        "MPI_ERR_CONVERSION",
        "error in a data conversion function",
    ),
    (
        class::DUP_DATAREP,
        "MPI_ERR_DUP_DATAREP",
        "data representation already defined",
    ),
    (class::FILE_EXISTS, "MPI_ERR_FILE_EXISTS", "file exists"),
    (
        class::FILE_IN_USE,
        "MPI_ERR_FILE_IN_USE",
        "file in use by another process",
    ),
    (class::FILE, "MPI_ERR_FILE", "invalid file handle"),
    (class::INFO, "MPI_ERR_INFO", "invalid info object"),
    (
        class::INFO_KEY,
        "MPI_ERR_INFO_KEY",
        "info key too long or empty",
    ),
    (
        class::INFO_VALUE,
        "MPI_ERR_INFO_VALUE",
        "info value too long",
    ),
    (
        class::INFO_NOKEY,
        "MPI_ERR_INFO_NOKEY",
        "key not defined in the info object",
    ),
    (class::IO, "MPI_ERR_IO", "I/O error"),
    (class::NAME, "MPI_ERR_NAME", "service name not published"),
    (class::NO_MEM, "MPI_ERR_NO_MEM", "out of memory"),
    (
        class::NOT_SAME,
        "MPI_ERR_NOT_SAME",
        "arguments differ between the processes of a collective call",
    ),
    (class::NO_SPACE, "MPI_ERR_NO_SPACE", "not enough space"),
    (
        class::NO_SUCH_FILE,
        "MPI_ERR_NO_SUCH_FILE",
        "file does not exist",
    ),
    (class::PORT, "MPI_ERR_PORT", "invalid port name"),
    (class::QUOTA, "MPI_ERR_QUOTA", "quota exceeded"),
    (
        class::READ_ONLY,
        "MPI_ERR_READ_ONLY",
        "read-only file or file system",
    ),
    (
        class::SERVICE,
        "MPI_ERR_SERVICE",
        "service name not published or not unpublishable",
    ),
    (class::SPAWN, "MPI_ERR_SPAWN", "could not spawn processes"),
    (
        class::UNSUPPORTED_DATAREP,
        "MPI_ERR_UNSUPPORTED_DATAREP",
        "unsupported data representation",
    ),
    (
        class::UNSUPPORTED_OPERATION,
        "MPI_ERR_UNSUPPORTED_OPERATION",
        "operation not supported by mpi-lite",
    ),
    (class::WIN, "MPI_ERR_WIN", "invalid window"),
    (class::BASE, "MPI_ERR_BASE", "invalid base address"),
    (class::LOCKTYPE, "MPI_ERR_LOCKTYPE", "invalid lock type"),
    (class::KEYVAL, "MPI_ERR_KEYVAL", "invalid attribute key"),
    (
        class::RMA_CONFLICT,
        "MPI_ERR_RMA_CONFLICT",
        "conflicting accesses to a window",
    ),
    (
        class::RMA_SYNC,
        "MPI_ERR_RMA_SYNC",
        "wrong synchronization of RMA calls",
    ),
    (class::SIZE, "MPI_ERR_SIZE", "invalid size argument"),
    (class::DISP, "MPI_ERR_DISP", "invalid displacement argument"),
    (class::ASSERT, "MPI_ERR_ASSERT", "invalid assert argument"),
    (
        class::RMA_RANGE,
        "MPI_ERR_RMA_RANGE",
        "target memory outside the window",
    ),
    (
        class::RMA_ATTACH,
        "MPI_ERR_RMA_ATTACH",
        "memory cannot be attached",
    ),
    (
        class::RMA_SHARED,
        "MPI_ERR_RMA_SHARED",
        "memory cannot be shared",
    ),
    (
        class::RMA_FLAVOR,
        "MPI_ERR_RMA_FLAVOR",
        "wrong window flavor",
    ),
    (
        class::T_ERR_MEMORY,
        "MPI_T_ERR_MEMORY",
        "out of memory (MPI_T)",
    ),
    (
        class::T_ERR_NOT_INITIALIZED,
        "MPI_T_ERR_NOT_INITIALIZED",
        "the tool interface is not initialized",
    ),
    (
        class::T_ERR_CANNOT_INIT,
        "MPI_T_ERR_CANNOT_INIT",
        "the tool interface cannot be initialized",
    ),
    (
        class::T_ERR_INVALID_INDEX,
        "MPI_T_ERR_INVALID_INDEX",
        "invalid index (MPI_T)",
    ),
    (
        class::T_ERR_INVALID_ITEM,
        "MPI_T_ERR_INVALID_ITEM",
        "invalid item (MPI_T)",
    ),
    (
        class::T_ERR_INVALID_HANDLE,
        "MPI_T_ERR_INVALID_HANDLE",
        "invalid handle (MPI_T)",
    ),
    (
        class::T_ERR_OUT_OF_HANDLES,
        "MPI_T_ERR_OUT_OF_HANDLES",
        "no more handles (MPI_T)",
    ),
    (
        class::T_ERR_OUT_OF_SESSIONS,
        "MPI_T_ERR_OUT_OF_SESSIONS",
        "no more sessions (MPI_T)",
    ),
    (
        class::T_ERR_INVALID_SESSION,
        "MPI_T_ERR_INVALID_SESSION",
        "invalid session (MPI_T)",
    ),
    (
        class::T_ERR_CVAR_SET_NOT_NOW,
        "MPI_T_ERR_CVAR_SET_NOT_NOW",
        "control variable cannot be set now",
    ),
    (
        class::T_ERR_CVAR_SET_NEVER,
        "MPI_T_ERR_CVAR_SET_NEVER",
        "control variable cannot be set",
    ),
    (
        class::T_ERR_PVAR_NO_STARTSTOP,
        "MPI_T_ERR_PVAR_NO_STARTSTOP",
        "performance variable cannot be started or stopped",
    ),
    (
        class::T_ERR_PVAR_NO_WRITE,
        "MPI_T_ERR_PVAR_NO_WRITE",
        "performance variable cannot be written or reset",
    ),
    (
        class::T_ERR_PVAR_NO_ATOMIC,
        "MPI_T_ERR_PVAR_NO_ATOMIC",
        "performance variable cannot be read and written atomically",
    ),
    (
        class::T_ERR_INVALID_NAME,
        "MPI_T_ERR_INVALID_NAME",
        "invalid name (MPI_T)",
    ),
    (
        class::T_ERR_INVALID,
        "MPI_T_ERR_INVALID",
        "invalid use of the tool interface",
    ),
];

/// The description `MPI_Error_string` gives for a predefined error class.
pub fn class_string(c: i32) -> Option<String> {
    CLASSES
        .iter()
        .find(|x| x.0 == c)
        .map(|&(_, name, text)| format!("{name}: {text}"))
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
    /// `MPI_ERR_NO_MEM`: an allocation failed (a huge count, `MPI_Alloc_mem`).
    #[error("MPI_ERR_NO_MEM: {0}")]
    NoMem(String),
    /// `MPI_ERR_KEYVAL`: an attribute key that does not exist or is of the wrong kind.
    #[error("MPI_ERR_KEYVAL: {0}")]
    Keyval(String),
    /// `MPI_ERR_INFO_NOKEY`: `MPI_Info_delete` of a key the info object lacks.
    #[error("MPI_ERR_INFO_NOKEY: {0}")]
    InfoNoKey(String),
    /// `MPI_ERR_INFO_KEY` / `MPI_ERR_INFO_VALUE`: a key or value too long or empty.
    #[error("MPI_ERR_INFO_KEY: {0}")]
    InfoKey(String),
    /// `MPI_ERR_INFO`: an invalid info handle.
    #[error("MPI_ERR_INFO: {0}")]
    Info(String),
    /// `MPI_ERR_SPAWN`: dynamic processes (the launcher starts a fixed set).
    #[error("MPI_ERR_SPAWN: {0}")]
    Spawn(String),
    /// `MPI_ERR_WIN`: an invalid window handle.
    #[error("MPI_ERR_WIN: {0}")]
    Win(String),
    /// `MPI_ERR_FILE`: an invalid file handle.
    #[error("MPI_ERR_FILE: {0}")]
    File(String),
    /// Any other class (user classes of `MPI_Add_error_class`, `MPI_Comm_call_errhandler`).
    #[error("{msg}")]
    Code {
        /// The error code.
        code: i32,
        /// What happened.
        msg: String,
    },
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
    /// The MPI error class (`MPI_ERR_*`); for [`Error::Code`] the code (the C ABI maps
    /// user codes to their classes).
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
            Error::NoMem(_) => c::NO_MEM,
            Error::Keyval(_) => c::KEYVAL,
            Error::InfoNoKey(_) => c::INFO_NOKEY,
            Error::InfoKey(_) => c::INFO_KEY,
            Error::Info(_) => c::INFO,
            Error::Spawn(_) => c::SPAWN,
            Error::Win(_) => c::WIN,
            Error::File(_) => c::FILE,
            Error::Code { code, .. } => *code,
        }
    }
}

/// `Result` with mpi-lite's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
