//! Shared code of the benchmark tools of the SkifCh crates.
//!
//! * `msgrate` (binary) — the paper's MsgRate test and friends over a real job (shm driver,
//!   two processes started through the launcher), CSV + table + SVG; see [`msgrate`].
//! * `ringcmp` (binary) — the two ring designs measured with one harness: [`mpsc_ring`]
//!   (one multi-producer ring per receiver) against [`skifch_drivers::shm::lane`] (one single-producer
//!   lane per sender/receiver pair).
//! * `msgrate --with mpi-lite,shmem --peers-run` — the combined run: raw channels, the
//!   libraries on them and the peers in one CSV, table and plot; see [`layers`].
//! * `benches/channel.rs` — criterion micro-benchmarks of single operations.
//!
//! The measuring rules are those of `../shared/peers` (`shm_ring.c`), so that numbers can be
//! put side by side: a calibration pass (iterations double until a pass takes ≥ 50 ms), then
//! `reps` passes adding up to `target_s`, median reported ([`measure`]); the receiver reads
//! every byte in place and checks a 64-bit sum ([`check`]).
//!
//! Unsafe code lives only in [`affinity`] (libc CPU sets) and [`mpsc_ring`] (the ring's
//! shared buffer).
#![deny(unsafe_code)]
#![allow(missing_docs)] // a tool crate (the MsgRate tool and benchmarks), not a library others build on

pub mod affinity;
pub mod check;
pub mod compare;
pub mod layers;
pub mod measure;
pub mod mpsc_ring;
pub mod msgrate;
pub mod plot;
pub mod results;

use std::time::{Duration, Instant};

/// Errors of the benchmark tools; each maps to the exit status used by the peers' programs.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A channel call failed.
    #[error(transparent)]
    Skifch(#[from] skifch::Error),
    /// Received data differs from what was sent.
    #[error("data check failed: {0}")]
    Check(String),
    /// Bad options or an environment the tool cannot run in.
    #[error("{0}")]
    Setup(String),
    /// A file or system call failed.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The other side stopped making progress (it hangs, it is not known dead).
    #[error("no progress for {0:?}: the peer stopped answering")]
    Stalled(Duration),
}

impl BenchError {
    /// Process exit status, as in `shm_ring.c`: 1 usage/setup, 3 data check, 4 peer died.
    pub fn exit_code(&self) -> i32 {
        match self {
            BenchError::Check(_) => 3,
            BenchError::Skifch(skifch::Error::PeerLost { .. }) | BenchError::Stalled(_) => 4,
            _ => 1,
        }
    }

    /// Wraps an I/O error with what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        BenchError::Io {
            what: what.into(),
            source,
        }
    }
}

/// `Result` of the benchmark tools.
pub type Result<T, E = BenchError> = std::result::Result<T, E>;

/// Busy-wait helper for the measuring loops: spins, yields every `patience` idle rounds (so
/// that a thread sharing the CPU still runs), and gives up after [`Spinner::STALL`] without
/// progress. Create one when a wait starts; progress means dropping it.
pub struct Spinner {
    spins: u32,
    patience: u32,
    since: Option<Instant>,
}

impl Spinner {
    /// How long a wait may last before the peer is declared stuck (the peers' watchdog is
    /// 600 s per run; one wait is far shorter than a run).
    pub const STALL: Duration = Duration::from_secs(120);
    /// Idle rounds before a yield when every spinning thread has its own CPU (`shm_ring.c`).
    pub const PATIENT: u32 = 1 << 14;
    /// ... when spinning threads outnumber the CPUs: a thread that waits gives its time
    /// slice to the one it waits for instead of burning it.
    pub const SHARING: u32 = 64;

    pub fn new(patience: u32) -> Self {
        Spinner {
            spins: 0,
            patience: patience.max(1),
            since: None,
        }
    }

    /// The patience for `threads` spinning threads on the CPUs this thread may use.
    pub fn patience_for(threads: usize) -> u32 {
        match affinity::allowed_cpus() {
            Ok(c) if c.len() < threads => Self::SHARING,
            _ => Self::PATIENT,
        }
    }

    /// One idle round of a wait.
    #[inline]
    pub fn idle(&mut self) -> Result<()> {
        std::hint::spin_loop();
        self.spins += 1;
        if self.spins >= self.patience {
            self.spins = 0;
            let t0 = *self.since.get_or_insert_with(Instant::now);
            if t0.elapsed() > Self::STALL {
                return Err(BenchError::Stalled(Self::STALL));
            }
            std::thread::yield_now();
        }
        Ok(())
    }
}

/// Parses a comma-separated list of message sizes (bytes, each ≥ 1).
///
/// ```
/// assert_eq!(skifch_benches::parse_sizes("8, 64,2048").unwrap(), vec![8, 64, 2048]);
/// assert!(skifch_benches::parse_sizes("0").is_err());
/// assert!(skifch_benches::parse_sizes("8,x").is_err());
/// ```
pub fn parse_sizes(s: &str) -> Result<Vec<usize>> {
    parse_list(s, "message size")
}

/// Parses a comma-separated list of integers ≥ 1; `what` names an element in errors.
pub fn parse_list(s: &str, what: &str) -> Result<Vec<usize>> {
    s.split(',')
        .map(|t| match t.trim().parse::<usize>() {
            Ok(v) if v >= 1 => Ok(v),
            _ => Err(BenchError::Setup(format!(
                "bad {what} {t:?} in {s:?}: expected integers >= 1, comma-separated"
            ))),
        })
        .collect()
}
