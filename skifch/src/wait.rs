//! Waiting policies (SEED-NOTES: "fixed spin"; spec extension "Waiting without burning a
//! core"), written once for every driver on top of [`crate::driver::Waiter`].

use std::time::{Duration, Instant};

use crate::driver::Waiter;
use crate::{Error, Result};

/// How a blocking call waits for a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitPolicy {
    /// Poll until a message arrives (lowest latency; burns a core; yields now and then so a
    /// peer sharing the CPU still runs).
    Spin,
    /// Poll for the given time, then sleep until a message arrives or a peer is lost.
    Fixed(Duration),
    /// Sleep at once (one poll first).
    Block,
}

impl WaitPolicy {
    /// The default fixed-spin period.
    pub const DEFAULT_SPIN: Duration = Duration::from_micros(20);

    /// Parses `spin`, `block`, `fixed` or `fixed:<micros>`.
    ///
    /// ```
    /// use skifch::WaitPolicy;
    /// use std::time::Duration;
    /// assert_eq!(WaitPolicy::parse("fixed:5").unwrap(), WaitPolicy::Fixed(Duration::from_micros(5)));
    /// assert_eq!(WaitPolicy::parse("block").unwrap(), WaitPolicy::Block);
    /// assert!(WaitPolicy::parse("nap").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<WaitPolicy> {
        let bad = || {
            Error::InvalidArgument(
                format!("wait policy {s:?}: expected spin, block, fixed or fixed:<microseconds>")
                    .into(),
            )
        };
        match s.trim() {
            "spin" => Ok(WaitPolicy::Spin),
            "block" => Ok(WaitPolicy::Block),
            "fixed" => Ok(WaitPolicy::Fixed(Self::DEFAULT_SPIN)),
            other => {
                let us = other.strip_prefix("fixed:").ok_or_else(bad)?;
                let us: u64 = us.trim_end_matches("us").parse().map_err(|_| bad())?;
                Ok(WaitPolicy::Fixed(Duration::from_micros(us)))
            }
        }
    }

    /// From `SKIFCH_WAIT` (set by `skifrun --wait`), default fixed spin of 20 µs.
    /// An unparsable value is reported on stderr once and the default is used.
    pub fn from_env() -> WaitPolicy {
        match std::env::var("SKIFCH_WAIT") {
            Ok(v) => WaitPolicy::parse(&v).unwrap_or_else(|e| {
                static WARN: std::sync::Once = std::sync::Once::new();
                WARN.call_once(|| eprintln!("skifch: SKIFCH_WAIT: {e}; using fixed spin"));
                WaitPolicy::Fixed(Self::DEFAULT_SPIN)
            }),
            Err(_) => WaitPolicy::Fixed(Self::DEFAULT_SPIN),
        }
    }
}

impl Default for WaitPolicy {
    fn default() -> Self {
        WaitPolicy::Fixed(Self::DEFAULT_SPIN)
    }
}

/// Idle polls before a spinning waiter yields its CPU once.
const SPINS_BEFORE_YIELD: u32 = 1 << 14;

/// Waits until `ready()` says yes, following `policy`; `deadline` bounds the wait.
/// `ready` returns errors (e.g. peer lost) which end the wait.
pub fn wait_until<W: Waiter>(
    policy: WaitPolicy,
    waiter: &W,
    deadline: Option<Instant>,
    mut ready: impl FnMut() -> Result<bool>,
) -> Result<()> {
    if ready()? {
        return Ok(());
    }
    let start = Instant::now();
    let spin_for = match policy {
        WaitPolicy::Spin => None,
        WaitPolicy::Fixed(d) => Some(d),
        WaitPolicy::Block => Some(Duration::ZERO),
    };
    let mut k: u32 = 0;
    if spin_for != Some(Duration::ZERO) {
        loop {
            if ready()? {
                return Ok(());
            }
            k = k.wrapping_add(1);
            if k.is_multiple_of(64) {
                let now = Instant::now();
                if deadline.is_some_and(|d| now >= d) {
                    return Err(Error::TimedOut);
                }
                if let Some(d) = spin_for {
                    if now - start >= d {
                        break;
                    }
                }
                if k.is_multiple_of(SPINS_BEFORE_YIELD) {
                    if let Some(rank) = waiter.lost_peer() {
                        return Err(Error::PeerLost { rank });
                    }
                    std::thread::yield_now();
                }
            }
            std::hint::spin_loop();
        }
    }
    loop {
        let ticket = waiter.arm();
        let r = ready();
        if !matches!(r, Ok(false)) {
            waiter.disarm();
            return r.map(|_| ());
        }
        let timeout = match deadline {
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    waiter.disarm();
                    return Err(Error::TimedOut);
                }
                d - now
            }
            None => Duration::MAX,
        };
        waiter.sleep(ticket, timeout);
        waiter.disarm();
        // Look before arming again: arming costs a heavy barrier (an IPI to the peers'
        // CPUs), which would otherwise sit between the wake-up and the message.
        if ready()? {
            return Ok(());
        }
    }
}
