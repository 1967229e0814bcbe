//! The fault injector: a driver that wraps another and makes it misbehave in the ways the
//! contract allows ([`skifch::driver`] obligations 1, 2 and 6), so that the conformance
//! suite and the libraries show they tolerate them: forced partial sends, forced
//! would-block, a slow consumer, messages held in flight, and the loss of a rank at a
//! chosen message.
//!
//! Every fault is deterministic for a given [`FaultConfig`]: triggers fire every k-th call
//! or with a rate drawn from a per-port generator seeded by `seed`, rank and port.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use skifch::local;
//! use skifch_drivers::wrap::{FaultConfig, FaultDriver, Trigger};
//! let cfg = FaultConfig {
//!     partial: Trigger::Every(3),
//!     would_block: Trigger::Rate(0.2),
//!     recv_delay: Duration::from_micros(20),
//!     ..FaultConfig::none()
//! };
//! local::run(2, move |job| {
//!     let job = FaultDriver::wrap(&job, cfg.clone());
//!     skifch::conformance::run_all(&job, &skifch::conformance::Config::small())
//! })
//! .unwrap();
//! ```
#![allow(unsafe_code)] // `unsafe impl Port`, the forwarding of `unsafe fn complete`, kill(2)

use std::io::IoSlice;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use skifch::driver::{Driver, Port, RawMessage, SendMode, Token};
use skifch::{Error, Job, NetAddr, Result};

/// When a fault fires, counted per port and per kind of fault.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Trigger {
    /// Never (the default).
    #[default]
    Never,
    /// On every k-th call (1: every call; 0 is `Never`).
    Every(u64),
    /// On each call with this probability (0.0..=1.0), from the port's seeded generator.
    Rate(f64),
}

impl Trigger {
    /// `never` / `0`, `always` / `every:K`, or a rate `0.25`.
    pub fn parse(s: &str) -> Result<Self> {
        let bad = || {
            bad_spec(format!(
                "{s:?} is not a trigger (never, always, every:K, or a rate 0..=1)"
            ))
        };
        Ok(match s {
            "never" | "0" => Trigger::Never,
            "always" | "1" => Trigger::Every(1),
            _ => match s.strip_prefix("every:") {
                Some(k) => Trigger::Every(k.parse().map_err(|_| bad())?),
                None => match s.parse::<f64>() {
                    Ok(r) if (0.0..=1.0).contains(&r) => Trigger::Rate(r),
                    _ => return Err(bad()),
                },
            },
        })
    }

    fn is_never(&self) -> bool {
        matches!(self, Trigger::Never | Trigger::Every(0)) || *self == Trigger::Rate(0.0)
    }
}

/// How a rank that is to be lost ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Death {
    /// SIGKILL to its own process: no destructor runs, the launcher reports the rank lost
    /// (a real crash; for ranks that are processes, e.g. under `skifrun`).
    Kill,
    /// A panic in the calling thread: the in-process job marks a rank whose thread
    /// panics as lost (`skifch::local::run`).
    Panic,
}

/// The loss of rank `rank` once `after` messages have passed through it (sent or
/// received, all ports): its next send or receive ends it as `how` says, and the other
/// ranks see [`Error::PeerLost`] within the time the inner driver promises (obligation 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loss {
    /// The rank that is lost.
    pub rank: u32,
    /// Messages it sends and receives before it is lost.
    pub after: u64,
    /// How it ends.
    pub how: Death,
}

/// What the fault injector does. [`FaultConfig::none`] changes nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultConfig {
    /// Seed of the per-port generators behind [`Trigger::Rate`].
    pub seed: u64,
    /// A send in [`SendMode::Prefix`] of two bytes or more is cut to a random shorter
    /// non-empty prefix (spec "Send": any prefix may be sent).
    pub partial: Trigger,
    /// A send returns [`Error::WouldBlock`] without sending (obligation 2: nothing consumed).
    pub would_block: Trigger,
    /// A receive returns [`Error::WouldBlock`] though a message may be waiting (as if it
    /// became visible a moment later). Never twice in a row, and `ready` stays truthful,
    /// so a blocked receiver never sleeps through a message.
    pub recv_would_block: Trigger,
    /// Which receives and completions are slow (counted separately; default: every one
    /// when a delay is set).
    pub slow: Trigger,
    /// A slow consumer: sleep this long before handing out a received message.
    pub recv_delay: Duration,
    /// A slow consumer: sleep this long before completing a message (RecvComp).
    pub complete_delay: Duration,
    /// Messages in flight: each received message is withheld this long after the inner
    /// port delivered it (receives meanwhile find nothing, `ready` says no), and the ones
    /// behind it wait behind it. What a network's latency allows, e.g. a peer's last data
    /// arriving after the goodbye it sent on another connection (a fabric's control
    /// endpoint) was seen.
    pub recv_hold: Duration,
    /// A rank lost at a chosen message.
    pub lose: Option<Loss>,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig::none()
    }
}

/// The environment variable [`FaultConfig::from_env`] reads.
pub const FAULT_ENV: &str = "SKIFCH_FAULT";

impl FaultConfig {
    /// No faults.
    pub fn none() -> Self {
        FaultConfig {
            seed: 1,
            partial: Trigger::Never,
            would_block: Trigger::Never,
            recv_would_block: Trigger::Never,
            slow: Trigger::Every(1),
            recv_delay: Duration::ZERO,
            complete_delay: Duration::ZERO,
            recv_hold: Duration::ZERO,
            lose: None,
        }
    }

    /// `true` if this configuration injects nothing.
    pub fn is_none(&self) -> bool {
        self.partial.is_never()
            && self.would_block.is_never()
            && self.recv_would_block.is_never()
            && (self.slow.is_never()
                || (self.recv_delay.is_zero() && self.complete_delay.is_zero()))
            && self.recv_hold.is_zero()
            && self.lose.is_none()
    }

    /// Parses the `SKIFCH_FAULT` syntax: comma-separated `key=value` items,
    ///
    /// | key | value | field |
    /// | --- | --- | --- |
    /// | `seed` | integer | [`FaultConfig::seed`] |
    /// | `partial` | trigger | [`FaultConfig::partial`] |
    /// | `wouldblock` | trigger | [`FaultConfig::would_block`] |
    /// | `recv_wouldblock` | trigger | [`FaultConfig::recv_would_block`] |
    /// | `slow` | trigger | [`FaultConfig::slow`] |
    /// | `recv_delay`, `complete_delay` | microseconds | the slow consumer's delays |
    /// | `recv_hold` | microseconds | [`FaultConfig::recv_hold`] |
    /// | `lose` | `RANK@N` | rank `RANK` is lost after `N` messages ([`Loss`]) |
    /// | `death` | `kill` (default) or `panic` | how the lost rank ends ([`Death`]) |
    ///
    /// A trigger is `never`, `always`, `every:K` or a rate such as `0.2`
    /// ([`Trigger::parse`]). Example: `partial=0.3,wouldblock=every:7,recv_delay=50,lose=1@500`.
    pub fn parse(spec: &str) -> Result<Self> {
        let mut c = FaultConfig::none();
        let mut death = Death::Kill;
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| bad_spec(format!("{item:?} is not key=value")))?;
            let num = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| bad_spec(format!("{k}={v:?}: not a non-negative integer")))
            };
            match k {
                "seed" => c.seed = num(v)?,
                "partial" => c.partial = Trigger::parse(v)?,
                "wouldblock" => c.would_block = Trigger::parse(v)?,
                "recv_wouldblock" => c.recv_would_block = Trigger::parse(v)?,
                "slow" => c.slow = Trigger::parse(v)?,
                "recv_delay" => c.recv_delay = Duration::from_micros(num(v)?),
                "complete_delay" => c.complete_delay = Duration::from_micros(num(v)?),
                "recv_hold" => c.recv_hold = Duration::from_micros(num(v)?),
                "lose" => {
                    let (r, n) = v
                        .split_once('@')
                        .ok_or_else(|| bad_spec(format!("lose={v:?}: expected RANK@N")))?;
                    let rank = u32::try_from(num(r)?)
                        .map_err(|_| bad_spec(format!("lose={v:?}: rank too large")))?;
                    c.lose = Some(Loss {
                        rank,
                        after: num(n)?,
                        how: Death::Kill,
                    });
                }
                "death" => {
                    death = match v {
                        "kill" => Death::Kill,
                        "panic" => Death::Panic,
                        _ => return Err(bad_spec(format!("death={v:?}: expected kill or panic"))),
                    }
                }
                _ => return Err(bad_spec(format!("unknown key {k:?}"))),
            }
        }
        if let Some(l) = &mut c.lose {
            l.how = death;
        }
        Ok(c)
    }

    /// The configuration in `SKIFCH_FAULT` ([`FaultConfig::parse`]); `None` when it is
    /// unset or empty.
    pub fn from_env() -> Result<Option<Self>> {
        match std::env::var(FAULT_ENV) {
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(v)) => Err(bad_spec(format!("{v:?} is not UTF-8"))),
            Ok(s) if s.trim().is_empty() => Ok(None),
            Ok(s) => FaultConfig::parse(&s).map(Some),
        }
    }
}

fn bad_spec(what: String) -> Error {
    Error::Bootstrap(format!("{FAULT_ENV}: {what}").into())
}

/// How many faults a [`FaultDriver`] injected so far (all its ports), so that a test can
/// show its faults happened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Sends cut to a shorter prefix.
    pub partial: u64,
    /// Sends refused with a forced would-block.
    pub would_block: u64,
    /// Receives refused with a forced would-block.
    pub recv_would_block: u64,
    /// Receives and completions delayed.
    pub delayed: u64,
    /// Messages held in flight ([`FaultConfig::recv_hold`]).
    pub held: u64,
}

#[derive(Default)]
struct Counters {
    /// Messages sent and received by this rank, all ports (for [`Loss`]).
    passed: AtomicU64,
    partial: AtomicU64,
    would_block: AtomicU64,
    recv_would_block: AtomicU64,
    delayed: AtomicU64,
    held: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// A driver whose ports inject the faults of a [`FaultConfig`] into `D`'s traffic. Every
/// other call (job shape, names, waiters, capabilities) is `D`'s.
pub struct FaultDriver<D: Driver> {
    inner: Arc<D>,
    cfg: Arc<FaultConfig>,
    counts: Arc<Counters>,
}

impl<D: Driver> FaultDriver<D> {
    /// Wraps `inner`.
    pub fn new(inner: Arc<D>, cfg: FaultConfig) -> Self {
        FaultDriver {
            inner,
            cfg: Arc::new(cfg),
            counts: Arc::default(),
        }
    }

    /// The same rank's job over a fault injector around `job`'s driver (waiting policy
    /// from `SKIFCH_WAIT`, as for any new job handle).
    pub fn wrap(job: &Job<D>, cfg: FaultConfig) -> Job<FaultDriver<D>> {
        Job::new(Arc::new(FaultDriver::new(job.driver().clone(), cfg)))
    }

    /// The wrapped driver.
    pub fn inner(&self) -> &Arc<D> {
        &self.inner
    }

    /// The faults to inject.
    pub fn config(&self) -> &FaultConfig {
        &self.cfg
    }

    /// The faults injected so far.
    pub fn stats(&self) -> FaultStats {
        let c = &self.counts;
        FaultStats {
            partial: c.partial.load(Ordering::Relaxed),
            would_block: c.would_block.load(Ordering::Relaxed),
            recv_would_block: c.recv_would_block.load(Ordering::Relaxed),
            delayed: c.delayed.load(Ordering::Relaxed),
            held: c.held.load(Ordering::Relaxed),
        }
    }
}

impl<D: Driver> Driver for FaultDriver<D> {
    type Port = FaultPort<D::Port>;
    forward_driver!();
    fn open_port(self: &Arc<Self>, port: u32) -> Result<Self::Port> {
        let inner = self.inner.open_port(port)?;
        let rank = self.inner.rank();
        let seed = self.cfg.seed
            ^ (u64::from(rank) << 32 | u64::from(port)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Ok(FaultPort {
            inner,
            lose_after: self
                .cfg
                .lose
                .filter(|l| l.rank == rank)
                .map(|l| (l.after, l.how)),
            cfg: self.cfg.clone(),
            counts: self.counts.clone(),
            rng: seed,
            size: self.inner.size(),
            ports: self.inner.max_ports(),
            max_message: self.inner.max_message(),
            sends: 0,
            completes: 0,
            recvs: 0,
            delivered: 0,
            recv_blocked: false,
            held: None,
        })
    }
}

/// A port of [`FaultDriver`].
pub struct FaultPort<P: Port> {
    inner: P,
    cfg: Arc<FaultConfig>,
    counts: Arc<Counters>,
    /// `(after, how)` when this rank is the one to be lost.
    lose_after: Option<(u64, Death)>,
    rng: u64,
    /// The job's shape, to force would-block only on sends the inner driver would accept.
    size: u32,
    ports: u32,
    max_message: usize,
    sends: u64,
    completes: u64,
    recvs: u64,
    delivered: u64,
    /// The previous receive was a forced would-block (the next one is not).
    recv_blocked: bool,
    /// A message held in flight and when the inner port delivered it.
    held: Option<Held>,
}

/// A message [`FaultConfig::recv_hold`] withholds, and when the inner port delivered it.
struct Held(RawMessage, Instant);

// SAFETY: the segments point into the inner port's memory, which stays valid until the
// token is completed and moves with the port (obligation 5); the fault port owns both and
// reads nothing through them.
unsafe impl Send for Held {}

impl<P: Port> FaultPort<P> {
    /// The wrapped port.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// SplitMix64: a deterministic stream per port.
    fn next(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn fires(&mut self, t: Trigger, call: u64) -> bool {
        match t {
            Trigger::Never | Trigger::Every(0) => false,
            Trigger::Every(k) => call.is_multiple_of(k),
            Trigger::Rate(r) => (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) < r,
        }
    }

    /// Whether the inner driver would accept this send (given room): an invalid send must
    /// still fail as it would (the conformance suite's bad input), so only a send that
    /// could go out is turned into a would-block.
    fn acceptable(&self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> bool {
        dst.rank() < self.size
            && dst.port() < self.ports
            && skifch::driver::iov_total(iov)
                .is_ok_and(|t| mode == SendMode::Prefix || t <= self.max_message)
    }

    /// Ends this rank if it is the one to be lost and its messages are used up.
    fn check_loss(&self) {
        if let Some((after, how)) = self.lose_after {
            if self.counts.passed.load(Ordering::Relaxed) >= after {
                die(how, after);
            }
        }
    }

    /// A receive under [`FaultConfig::recv_hold`]: the held message once its time is up;
    /// else the inner port's next message is taken and held, and nothing is delivered.
    fn recv_held(&mut self, out: &mut RawMessage) -> Result<()> {
        let m = match self.held.take() {
            Some(Held(m, since)) if since.elapsed() >= self.cfg.recv_hold => m,
            Some(h) => {
                self.held = Some(h);
                return Err(Error::WouldBlock);
            }
            None => {
                self.inner.recv_into(out)?;
                bump(&self.counts.held);
                self.held = Some(Held(*out, Instant::now()));
                return Err(Error::WouldBlock);
            }
        };
        *out = m;
        self.passed_one();
        self.delivered += 1;
        Ok(())
    }

    fn passed_one(&self) {
        if self.lose_after.is_some() {
            bump(&self.counts.passed);
        }
    }
}

/// Ends the calling rank as `how` says (the fault injector's peer loss).
fn die(how: Death, after: u64) -> ! {
    match how {
        Death::Panic => panic!("{FAULT_ENV}: rank lost after {after} messages (injected)"),
        Death::Kill => {
            // SAFETY: kill(2) on this process with a valid signal number touches no memory
            // of ours; SIGKILL cannot be caught, so nothing runs after it.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            // Not reached; abort is the fallback if the signal was somehow refused.
            std::process::abort()
        }
    }
}

// SAFETY: `recv_into` and `complete` hand out and take back exactly the inner port's
// messages and tokens (delays and forced would-blocks only withhold or postpone them), so
// the inner port's own promise (obligation 5) covers every segment and token.
unsafe impl<P: Port> Port for FaultPort<P> {
    type Waiter = P::Waiter;
    fn addr(&self) -> NetAddr {
        self.inner.addr()
    }

    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        self.check_loss();
        self.sends += 1;
        let call = self.sends;
        if self.fires(self.cfg.would_block, call) && self.acceptable(dst, iov, mode) {
            bump(&self.counts.would_block);
            return Err(Error::WouldBlock);
        }
        let r = if mode == SendMode::Prefix && self.fires(self.cfg.partial, call) {
            let total = skifch::driver::iov_total(iov)?;
            if total < 2 {
                self.inner.send(dst, iov, mode)
            } else {
                let cut = 1 + (self.next() % (total as u64 - 1)) as usize;
                bump(&self.counts.partial);
                let mut prefix = Vec::with_capacity(iov.len());
                let mut left = cut;
                for s in iov {
                    if left == 0 {
                        break;
                    }
                    let k = s.len().min(left);
                    prefix.push(IoSlice::new(&s[..k]));
                    left -= k;
                }
                self.inner.send(dst, &prefix, mode)
            }
        } else {
            self.inner.send(dst, iov, mode)
        };
        if r.is_ok() {
            self.passed_one();
        }
        r
    }

    fn recv_into(&mut self, out: &mut RawMessage) -> Result<()> {
        self.check_loss();
        self.recvs += 1;
        let call = self.recvs;
        if !self.recv_blocked && self.fires(self.cfg.recv_would_block, call) {
            self.recv_blocked = true;
            bump(&self.counts.recv_would_block);
            return Err(Error::WouldBlock);
        }
        self.recv_blocked = false;
        if !self.cfg.recv_hold.is_zero() {
            return self.recv_held(out);
        }
        self.inner.recv_into(out)?;
        self.passed_one();
        self.delivered += 1;
        if !self.cfg.recv_delay.is_zero() && self.fires(self.cfg.slow, self.delivered) {
            bump(&self.counts.delayed);
            std::thread::sleep(self.cfg.recv_delay);
        }
        Ok(())
    }

    fn ready(&mut self) -> Result<bool> {
        match &self.held {
            Some(Held(_, since)) => Ok(since.elapsed() >= self.cfg.recv_hold),
            None => self.inner.ready(),
        }
    }

    unsafe fn complete(&mut self, token: Token) {
        self.completes += 1;
        if !self.cfg.complete_delay.is_zero() && self.fires(self.cfg.slow, self.completes) {
            bump(&self.counts.delayed);
            std::thread::sleep(self.cfg.complete_delay);
        }
        // SAFETY: the caller's contract (a token of this port's `recv`, once) is the inner
        // port's: this port's tokens are the inner port's.
        unsafe { self.inner.complete(token) }
    }

    fn waiter(&self) -> P::Waiter {
        self.inner.waiter()
    }
}
