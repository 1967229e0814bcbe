//! The one error type of the `fpga` crate.

/// Everything the adapter contract and the models report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bytes that do not parse as the named format (too short, a bad magic or field).
    #[error("bad {what}: {detail}")]
    BadFormat {
        /// The format (e.g. `descriptor`, `packet header`).
        what: &'static str,
        /// What is wrong with the bytes.
        detail: String,
    },
    /// A configuration out of range (torus dimensions, packet size, ring sizes, ...).
    #[error("bad configuration: {0}")]
    BadConfig(String),
    /// The network cannot make progress: packets wait on each other in a cycle of channels
    /// (only possible with one virtual channel, or a bug); `cycle` names the channels.
    #[error("{cycle}")]
    Deadlock {
        /// The channels of the cycle, as text.
        cycle: String,
    },
    /// A route needs a link that is down (the message was not injected).
    #[error("link down: {0}")]
    LinkDown(String),
    /// An I/O failure of a tool (writing a CSV or a plot).
    #[error("{what}: {source}")]
    Io {
        /// What the tool was doing (e.g. `writing results.csv`).
        what: String,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
}

/// `Result` with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
