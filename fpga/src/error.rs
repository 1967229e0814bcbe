//! The one error type of the `fpga` crate.

/// Everything the adapter contract and the models report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bytes that do not parse as the named format (too short, a bad magic or field).
    #[error("bad {what}: {detail}")]
    BadFormat { what: &'static str, detail: String },
    /// A configuration out of range (torus dimensions, packet size, ring sizes, ...).
    #[error("bad configuration: {0}")]
    BadConfig(String),
    /// An I/O failure of a tool (writing a CSV or a plot).
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

/// `Result` with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
