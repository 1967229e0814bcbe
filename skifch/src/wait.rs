//! Waiting policies (SEED-NOTES: "fixed spin"; spec extension "Waiting without burning a
//! core"), written once for every driver on top of [`crate::driver::Waiter`].

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
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

/// Polls a spinning wait makes without `pause` before anything else (no clock read
/// either): a peer's answer within a round trip is seen as soon as its cache line
/// arrives. `pause` takes ~110-130 cycles here (≈ 45 ns, AMD EPYC under KVM), so a
/// `pause` per empty poll added half of that on average to every hand-over; 512 polls of
/// a few loads are a few microseconds, after which the wait pauses, yields and sleeps as
/// its policy says. A waiter with a spin floor ([`Waiter::spin_floor`], a fabric, whose
/// polls are system calls) counts them in its timed spin.
pub const HOT_POLLS: u32 = 512;

/// Waits until `ready()` says yes, following `policy`; `deadline` bounds the wait.
/// `ready` returns errors (e.g. peer lost) which end the wait.
pub fn wait_until<W: Waiter>(
    policy: WaitPolicy,
    waiter: &W,
    deadline: Option<Instant>,
    ready: impl FnMut() -> Result<bool>,
) -> Result<()> {
    wait_until_by(policy, waiter, || deadline, ready)
}

/// [`wait_until`] whose deadline is computed (`deadline()`, a clock read) only once the
/// hot polls ([`HOT_POLLS`]) found nothing: a wait for a relative time ends a round trip
/// without reading the clock.
pub fn wait_until_by<W: Waiter>(
    policy: WaitPolicy,
    waiter: &W,
    deadline: impl FnOnce() -> Option<Instant>,
    mut ready: impl FnMut() -> Result<bool>,
) -> Result<()> {
    if ready()? {
        return Ok(());
    }
    let floor = waiter.spin_floor();
    let spin_for = match policy {
        WaitPolicy::Spin => None,
        WaitPolicy::Fixed(d) => Some(d.max(floor)),
        WaitPolicy::Block => Some(Duration::ZERO),
    };
    // A waiter with a spin floor (a fabric, whose polls are system calls of ~0.4 us) times
    // its hot phase as part of the fixed spin (a clock read every 64 polls): its 512 polls
    // (0.2-0.5 ms over `net`) no longer come on top of the spin before a blocked rank
    // sleeps. Node peers in a hierarchy keep the hot phase's polls without `pause`.
    let t0 = (!floor.is_zero()).then(Instant::now);
    let mut spun = false;
    // More ranks than CPUs: no hot polls, and every empty poll yields the CPU (below).
    let crowded = oversubscribed();
    if policy != WaitPolicy::Block && !crowded {
        let chunk = if t0.is_some() { 64 } else { HOT_POLLS };
        for _ in 0..HOT_POLLS / chunk {
            for _ in 0..chunk {
                if ready()? {
                    return Ok(());
                }
            }
            if let (Some(t0), Some(d)) = (t0, spin_for) {
                if t0.elapsed() >= d {
                    spun = true;
                    break;
                }
            }
        }
    }
    let deadline = deadline();
    let start = t0.unwrap_or_else(Instant::now);
    let mut k: u32 = 0;
    if spin_for != Some(Duration::ZERO) && !spun {
        loop {
            if ready()? {
                return Ok(());
            }
            k = k.wrapping_add(1);
            // A crowded wait's polls are each a yield (a system call): the clock more often.
            if k.is_multiple_of(if crowded { 8 } else { 64 }) {
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
            if crowded {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
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

/// Spin, then yield, then sleep: the one back-off of the stack's polling loops (a caller
/// that polls something other than a [`Waiter`], e.g. a queue drained by a peer, a
/// device register, or a lock word, calls [`Backoff::snooze`] after each empty poll).
/// Under [`WaitPolicy::Spin`] (`SKIFCH_WAIT=spin`, read once per process) it never
/// sleeps: past its yields it keeps yielding.
///
/// ```
/// use skifch::wait::Backoff;
/// use std::time::Duration;
/// let mut b = Backoff::new();                         // 64 spins, 1024 yields, then 50 µs naps
/// let mut polls = 0;
/// while polls < 3 { polls += 1; b.snooze(); }          // still spinning: no syscall yet
/// assert!(!b.is_sleeping());
/// let mut slow = Backoff::with(0, 0, Duration::from_micros(10)); // sleep at once
/// slow.snooze();
/// assert!(slow.is_sleeping());
/// ```
#[derive(Clone, Debug)]
pub struct Backoff {
    n: u32,
    hot: u32,
    spins: u32,
    yields: u32,
    nap: Duration,
}

impl Backoff {
    /// Default spins before yielding: about a microsecond of `pause`.
    pub const SPINS: u32 = 64;
    /// Default yields before sleeping.
    pub const YIELDS: u32 = 1024;
    /// Default sleep once yielding did not help.
    pub const NAP: Duration = Duration::from_micros(50);

    /// The default back-off ([`Self::SPINS`], [`Self::YIELDS`], [`Self::NAP`]).
    pub const fn new() -> Backoff {
        Backoff::with(Self::SPINS, Self::YIELDS, Self::NAP)
    }

    /// `spins` busy polls, then `yields` polls each after a `yield`, then polls each after
    /// sleeping `nap`.
    pub const fn with(spins: u32, yields: u32, nap: Duration) -> Backoff {
        Backoff {
            n: 0,
            hot: 0,
            spins,
            yields,
            nap,
        }
    }

    /// The first `hot` polls of this back-off (counted within its spins) go without
    /// `pause` (see [`HOT_POLLS`]): for a wait on a peer's answer that usually comes
    /// within a round trip (GASNet's `GASNET_BLOCKUNTIL`).
    pub const fn hot(mut self, hot: u32) -> Backoff {
        self.hot = hot;
        self
    }

    /// Waits a little before the next poll, longer the more polls came back empty.
    /// With more ranks than CPUs ([`oversubscribed`]) it yields from the first empty poll.
    #[inline]
    pub fn snooze(&mut self) {
        let crowded = oversubscribed();
        if self.n < self.hot && !crowded {
            // Poll again at once: the answer is seen as soon as its line arrives.
        } else if self.n < self.spins && !crowded {
            std::hint::spin_loop();
        } else if self.n < self.spins.saturating_add(self.yields) {
            std::thread::yield_now();
        } else {
            self.sleep_phase();
        }
        self.n = self.n.saturating_add(1);
    }

    /// The sleeping phase: a nap, or under [`WaitPolicy::Spin`] a yield.
    #[cold]
    fn sleep_phase(&self) {
        if spin_policy() {
            std::thread::yield_now();
        } else {
            std::thread::sleep(self.nap);
        }
    }

    /// Back to spinning (after a poll that found work).
    #[inline]
    pub fn reset(&mut self) {
        self.n = 0;
    }

    /// Empty polls so far.
    pub fn polls(&self) -> u32 {
        self.n
    }

    /// Resumes at `n` empty polls: for a back-off whose count the caller keeps between
    /// calls (a C macro's local variable) instead of keeping the `Backoff`.
    pub fn set_polls(&mut self, n: u32) {
        self.n = n;
    }

    /// Whether spinning and yielding are over: the next [`Self::snooze`] sleeps (unless
    /// the process waits under [`WaitPolicy::Spin`]).
    pub fn is_sleeping(&self) -> bool {
        self.n >= self.spins.saturating_add(self.yields)
    }
}

/// Whether this machine runs more of the job's ranks than this process has CPUs. Then
/// waits yield the CPU after each empty poll instead of spinning: a spinning rank holds
/// the CPU that the rank it waits for needs (Open MPI yields when oversubscribed too,
/// `mpi_yield_when_idle`). `SKIFCH_OVERSUBSCRIBED` (`1` or `0`, read once; any other value
/// is reported and ignored) decides if set; else what the driver said at the job's start
/// ([`note_machine_ranks`]); else no.
#[inline]
pub fn oversubscribed() -> bool {
    // Inline, a load or two: every blocking wait of every library asks (callgrind, an
    // `MPI_Send` + `MPI_Recv` to self: +5 instructions so, +12 as a call to a `OnceLock`).
    match SAID.load(Ordering::Relaxed) {
        SAID_UNSET => CROWDED.load(Ordering::Relaxed),
        SAID_NO => false,
        SAID_YES => true,
        _ => read_said(),
    }
}

/// What `SKIFCH_OVERSUBSCRIBED` says, once read ([`oversubscribed`]).
static SAID: AtomicU8 = AtomicU8::new(SAID_UNREAD);
const SAID_UNREAD: u8 = 0;
const SAID_UNSET: u8 = 1;
const SAID_NO: u8 = 2;
const SAID_YES: u8 = 3;

#[cold]
#[inline(never)]
fn read_said() -> bool {
    let said = match std::env::var("SKIFCH_OVERSUBSCRIBED") {
        Err(_) => SAID_UNSET,
        Ok(v) => parse_said(&v).unwrap_or_else(|| {
            // Said once per process, as for a malformed `SKIFCH_WAIT`.
            eprintln!(
                "skifch: SKIFCH_OVERSUBSCRIBED={v:?}: expected 1 or 0 (yes/no, true/false); \
                 deciding from the machine's ranks and CPUs"
            );
            SAID_UNSET
        }),
    };
    // Threads that race here read the same variable: the same answer.
    SAID.store(said, Ordering::Relaxed);
    oversubscribed()
}

/// `SKIFCH_OVERSUBSCRIBED`'s value, `None` if it is neither yes nor no.
fn parse_said(v: &str) -> Option<u8> {
    match v.trim() {
        "1" | "yes" | "true" => Some(SAID_YES),
        "0" | "no" | "false" => Some(SAID_NO),
        _ => None,
    }
}

/// The driver's word for [`oversubscribed`]: whether the machine runs more ranks than CPUs.
static CROWDED: AtomicBool = AtomicBool::new(false);

/// Tells the waits how many of the job's ranks run on this machine (the driver's
/// placement, at the job's start, before any library binds the process to a CPU): more
/// than the CPUs this process may use makes the node crowded ([`oversubscribed`]).
pub fn note_machine_ranks(count: u32) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    CROWDED.store(crowded(count, cpus), Ordering::Relaxed);
}

/// [`note_machine_ranks`]'s rule.
fn crowded(ranks: u32, cpus: usize) -> bool {
    ranks as usize > cpus
}

/// Whether this process waits under [`WaitPolicy::Spin`] (`SKIFCH_WAIT`, read once).
fn spin_policy() -> bool {
    static SPIN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SPIN.get_or_init(|| WaitPolicy::from_env() == WaitPolicy::Spin)
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    #[test]
    fn the_override_is_yes_no_or_unknown() {
        assert_eq!(parse_said(" 1"), Some(SAID_YES));
        assert_eq!(parse_said("true"), Some(SAID_YES));
        assert_eq!(parse_said("0"), Some(SAID_NO));
        assert_eq!(parse_said("no"), Some(SAID_NO));
        assert_eq!(parse_said("on"), None);
        assert_eq!(parse_said(""), None);
    }

    #[test]
    fn a_machine_is_crowded_by_more_ranks_than_cpus() {
        assert!(crowded(3, 2));
        assert!(crowded(4, 2));
        assert!(!crowded(2, 2));
        assert!(!crowded(1, 1));
        assert!(!crowded(64, 128));
    }

    /// A fabric's waiter as the wait sees it: a spin floor, and arms counted.
    #[derive(Clone)]
    struct Fabric {
        arms: Arc<AtomicU32>,
    }

    impl Waiter for Fabric {
        fn arm(&self) -> u32 {
            self.arms.fetch_add(1, Ordering::Relaxed)
        }
        fn sleep(&self, _ticket: u32, timeout: Duration) {
            std::thread::sleep(timeout.min(Duration::from_millis(1)));
        }
        fn disarm(&self) {}
        fn lost_peer(&self) -> Option<u32> {
            None
        }
        fn spin_floor(&self) -> Duration {
            Duration::from_millis(1)
        }
    }

    /// Over a fabric the fixed spin is timed from the first poll: the hot phase's 512
    /// polls (0.2-0.5 ms of system calls over `net`) do not come on top of the floor.
    #[test]
    fn a_wait_with_a_spin_floor_times_its_hot_phase() {
        let w = Fabric {
            arms: Arc::default(),
        };
        let mut polls = 0u32;
        wait_until(WaitPolicy::Fixed(Duration::ZERO), &w, None, || {
            if w.arms.load(Ordering::Relaxed) > 0 {
                return Ok(true);
            }
            polls += 1;
            // A poll of at least 100 us: the floor is over at the first clock read.
            std::thread::sleep(Duration::from_micros(100));
            Ok(false)
        })
        .unwrap();
        // The first poll, then 64 before the clock is read (1 + 512 + 64 with an untimed
        // hot phase).
        assert_eq!(polls, 65);
    }
}
