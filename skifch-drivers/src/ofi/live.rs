//! Peer liveness and waiting (driver obligation 6).
//!
//! Every rank runs one background thread on its own control endpoint: it sends a
//! heartbeat to every peer each [`Live::interval`] and declares a peer lost when nothing
//! was heard from it for the timeout (`SKIFCH_OFI_TIMEOUT_MS`, default 5000: a hung host or
//! a link down), or at once when the provider reports the connection to it broken (a
//! process that died: its sockets or queue pairs close). A rank that finalizes says so
//! (`BYE`), so its silence afterwards is not a loss. A loss wakes every waiter through an
//! eventfd that the waiters poll beside their CQ's wait descriptor.
#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use skifch::driver::Waiter;
use skifch::{Error, Result};

use super::fabric::{wait_readable, Ep};
use super::ffi::{fi_addr_t, fi_cq_data_entry, FI_EAGAIN, FI_RECV};
use super::wire::{Hdr, Kind, HDR};

const ALIVE: u8 = 0;
const FINALIZED: u8 = 1;
const LOST: u8 = 2;
/// Told `EXIT`: counted lost by sends at once, by waiters only after [`EXIT_GRACE`].
const EXITING: u8 = 3;

/// Waiters still wait for a peer this long after its `EXIT`: the loss timeout divided by
/// this. Its last messages left before the `EXIT` did, but may be read after it: a rank
/// still in the job's last barrier when a faster one exited must finish that barrier, not
/// end with the exit (it then missed its own output, in 3 of 30 GASNet jobs under hydra).
/// A peer that waits for the exited rank for nothing ends after the grace.
const EXIT_GRACE: u32 = 2;

/// What a rank knows about its peers' liveness.
pub struct Live {
    state: Vec<AtomicU8>,
    first_lost: AtomicU32,
    /// Written once on the first loss; waiters poll it.
    event: OwnedFd,
    heard: Vec<AtomicBool>,
    /// The launcher's report of a rank that died, where it has one (`skifrun`'s job
    /// state): read on every check, so a death it saw is reported without waiting for
    /// the heartbeat thread.
    oracle: Option<Oracle>,
    /// A peer's request to end the job (`EXIT`): `1 << 32 | status`, 0 for none.
    exit: AtomicU64,
}

/// A launcher's view of the first rank lost.
pub type Oracle = Box<dyn Fn() -> Option<u32> + Send + Sync>;

impl Live {
    /// All `size` ranks alive.
    pub fn new(size: u32, oracle: Option<Oracle>) -> Result<Live> {
        // SAFETY: eventfd returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(Error::os("eventfd", std::io::Error::last_os_error()));
        }
        Ok(Live {
            state: (0..size).map(|_| AtomicU8::new(ALIVE)).collect(),
            first_lost: AtomicU32::new(u32::MAX),
            // SAFETY: `fd` is a fresh descriptor that nothing else owns.
            event: unsafe { OwnedFd::from_raw_fd(fd) },
            heard: (0..size).map(|_| AtomicBool::new(false)).collect(),
            oracle,
            exit: AtomicU64::new(0),
        })
    }

    /// Records a peer's request to end the job with `status` (the first one wins).
    pub fn record_exit(&self, status: i32) {
        let v = 1u64 << 32 | status as u32 as u64;
        let _ = self
            .exit
            .compare_exchange(0, v, Ordering::AcqRel, Ordering::Acquire);
    }

    /// The status a peer asked the job to end with (its `EXIT`), if any.
    pub fn exit_request(&self) -> Option<i32> {
        let v = self.exit.load(Ordering::Acquire);
        (v != 0).then_some(v as u32 as i32)
    }

    /// The first rank lost, if any.
    pub fn lost(&self) -> Option<u32> {
        let r = self.first_lost.load(Ordering::Acquire);
        if r != u32::MAX {
            return Some(r);
        }
        let r = self.oracle.as_ref().and_then(|f| f())?;
        if (r as usize) < self.state.len() {
            self.mark_lost(r);
        }
        self.lost_now()
    }

    fn lost_now(&self) -> Option<u32> {
        let r = self.first_lost.load(Ordering::Acquire);
        (r != u32::MAX).then_some(r)
    }

    /// Whether `rank` is lost (or exited: nothing can be sent to it any more).
    pub fn is_lost(&self, rank: u32) -> bool {
        if self.oracle.is_some() {
            let _ = self.lost();
        }
        matches!(
            self.state[rank as usize].load(Ordering::Acquire),
            LOST | EXITING
        )
    }

    /// Whether `rank` is alive as far as this rank knows, by one load: false also when
    /// a launcher's oracle must be asked ([`Live::is_lost`]).
    #[inline]
    pub fn is_alive(&self, rank: u32) -> bool {
        self.oracle.is_none() && self.state[rank as usize].load(Ordering::Acquire) == ALIVE
    }

    /// Whether `rank` has finalized.
    pub fn is_finalized(&self, rank: u32) -> bool {
        self.state[rank as usize].load(Ordering::Acquire) == FINALIZED
    }

    /// Records the loss of `rank` (once; a finalized rank is not lost, an exiting one is
    /// when its grace ends) and wakes waiters.
    pub fn mark_lost(&self, rank: u32) {
        self.lose(rank, ALIVE);
    }

    /// `rank` said `EXIT`: lost to sends now; to waiters at [`Live::exit_grace_over`].
    fn mark_exiting(&self, rank: u32) {
        let _ = self.state[rank as usize].compare_exchange(
            ALIVE,
            EXITING,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    /// Whether `rank` said `EXIT` and its grace is not over.
    pub fn is_exiting(&self, rank: u32) -> bool {
        self.state[rank as usize].load(Ordering::Acquire) == EXITING
    }

    /// The grace of exiting `rank` is over: lost to waiters too.
    fn exit_grace_over(&self, rank: u32) {
        self.lose(rank, EXITING);
    }

    fn lose(&self, rank: u32, from: u8) {
        let s = &self.state[rank as usize];
        if s.compare_exchange(from, LOST, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let _ = self.first_lost.compare_exchange(
                u32::MAX,
                rank,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            let one = 1u64.to_ne_bytes();
            // SAFETY: writing 8 bytes to our eventfd; failure (counter full) still leaves
            // it readable, which is all the waiters need.
            unsafe { libc::write(self.event.as_raw_fd(), one.as_ptr().cast(), 8) };
        }
    }

    fn mark_finalized(&self, rank: u32) {
        let _ = self.state[rank as usize].compare_exchange(
            ALIVE,
            FINALIZED,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    /// Whether a heartbeat of every peer but `me` arrived.
    pub fn heard_all(&self, me: u32) -> bool {
        self.heard
            .iter()
            .enumerate()
            .all(|(r, h)| r as u32 == me || h.load(Ordering::Acquire))
    }

    /// Ranks not heard from yet.
    pub fn silent(&self, me: u32) -> Vec<u32> {
        (0..self.heard.len() as u32)
            .filter(|&r| r != me && !self.heard[r as usize].load(Ordering::Acquire))
            .collect()
    }

    /// Time between heartbeats for a loss timeout of `timeout`.
    pub fn interval(timeout: Duration) -> Duration {
        (timeout / 10).clamp(Duration::from_millis(10), Duration::from_millis(200))
    }
}

/// The heartbeat thread's state.
pub struct Heartbeat {
    pub(super) ep: Ep,
    pub(super) me: u32,
    pub(super) peers: Vec<fi_addr_t>,
    pub(super) live: Arc<Live>,
    pub(super) stop: Arc<AtomicBool>,
    /// Set with `stop` when the rank dies without finalizing (no `BYE`).
    pub(super) abort: Arc<AtomicBool>,
    /// Set with `stop` by a rank ending the job by `exit`: `1 << 32 | status`; its peers
    /// are told `EXIT` instead of `BYE`.
    pub(super) leave: Arc<AtomicU64>,
    pub(super) timeout: Duration,
    /// The rank's ports, whose batches left open too long the thread flushes.
    pub(super) ports: Arc<super::batch::Ports>,
}

impl Heartbeat {
    /// Runs until `stop`; then says `BYE` to every peer still alive.
    pub fn run(self) {
        for i in 0..self.ep.rx {
            // Posting fails only if the queue is smaller than asked; then fewer buffers.
            let _ = self.ep.post(i);
        }
        let n = self.peers.len() as u32;
        let start = Instant::now();
        let mut last: Vec<Instant> = vec![start; n as usize];
        let every = Live::interval(self.timeout);
        let mut next_beat = start;
        let mut ents = [fi_cq_data_entry {
            op_context: std::ptr::null_mut(),
            flags: 0,
            len: 0,
            buf: std::ptr::null_mut(),
            data: 0,
        }; 16];
        while !self.stop.load(Ordering::Acquire) {
            let now = Instant::now();
            if now >= next_beat {
                next_beat = now + every;
                for r in (0..n).filter(|&r| r != self.me && !self.done(r)) {
                    self.say(r, Kind::Beat, 0);
                }
            }
            self.drain(&mut ents, &mut last);
            let _ = self.live.lost(); // polls the launcher's view
                                      // The first connection can take a while: silence counts from the first
                                      // heartbeat heard, or from the start plus the timeout.
            let grace = self.timeout / EXIT_GRACE;
            for r in (0..n).filter(|&r| self.live.is_exiting(r)) {
                if now.duration_since(last[r as usize]) > grace {
                    self.live.exit_grace_over(r);
                }
            }
            for r in (0..n).filter(|&r| r != self.me && !self.done(r)) {
                let heard = self.live.heard[r as usize].load(Ordering::Acquire);
                let limit = if heard {
                    self.timeout
                } else {
                    self.timeout * 3
                };
                if now.duration_since(last[r as usize]) > limit {
                    self.live.mark_lost(r);
                }
            }
            // A quarter interval: beats go out on time; finalizing waits at most this. A
            // millisecond while a batch is open: batches leave within two ticks.
            let nap = if self.ports.tick() {
                Duration::from_millis(1)
            } else {
                (every / 4).clamp(Duration::from_millis(2), Duration::from_millis(10))
            };
            std::thread::sleep(nap);
        }
        if self.abort.load(Ordering::Acquire) {
            return;
        }
        // Finalize: send what is batched and wait until it left (at most half the silence
        // that makes peers count this rank lost), tell the peers, and keep the endpoint
        // progressing a moment so the messages leave before it closes.
        self.ports.settle(self.timeout / 2);
        let leave = self.leave.load(Ordering::Acquire);
        let kind = if leave == 0 { Kind::Bye } else { Kind::Exit };
        for r in (0..n).filter(|&r| r != self.me && !self.done(r)) {
            self.say(r, kind, leave as u32);
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(50) {
            self.drain(&mut ents, &mut last);
            std::thread::sleep(Duration::from_millis(2));
        }
        // A job ending by exit: stay until every peer has ended too (`EXIT`, `BYE` or lost),
        // at most the loss timeout. A rank that left first was seen gone (by the node's
        // lanes, or its sockets) by a peer still in the job's last barrier, which then ended
        // with the exit before finishing it (1 GASNet job in about 250 under hydra). A peer
        // that goes on computing ends after its grace, and says `EXIT` then.
        let t0 = Instant::now();
        while leave != 0
            && t0.elapsed() < self.timeout
            && (0..n).any(|r| r != self.me && !self.done(r))
        {
            self.drain(&mut ents, &mut last);
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn done(&self, r: u32) -> bool {
        self.live.is_lost(r) || self.live.is_finalized(r)
    }

    /// Sends control message `kind` to rank `r` (`seq`: an `EXIT`'s status).
    fn say(&self, r: u32, kind: Kind, seq: u32) {
        let h = Hdr {
            kind,
            port: 0,
            rank: self.me,
            seq,
            credit: 0,
        }
        .emit();
        // SAFETY: the control endpoint is live; 16 bytes is below every inject size.
        let ret =
            unsafe { super::sys::inject(self.ep.ep.0, h.as_ptr(), HDR, self.peers[r as usize]) };
        if ret < 0 && ret != -(FI_EAGAIN as isize) && broken(ret) {
            self.live.mark_lost(r);
        }
    }

    fn drain(&self, ents: &mut [fi_cq_data_entry], last: &mut [Instant]) {
        loop {
            let k = self.ep.read(ents);
            if k < 0 {
                // An error entry: a receive or send that failed (a peer closed mid-message);
                // silence detection catches the peer, the buffer goes back.
                match self.ep.read_error() {
                    Some((e, _)) => {
                        if let Some(i) = self.ep.slot_of(e.op_context).filter(|&i| i < self.ep.rx) {
                            let _ = self.ep.post(i);
                        }
                    }
                    None => return,
                }
                continue;
            }
            for e in &ents[..k as usize] {
                let Some(i) = self.ep.slot_of(e.op_context) else {
                    continue;
                };
                if e.flags & FI_RECV as u64 == 0 || i >= self.ep.rx {
                    continue;
                }
                if e.len >= HDR {
                    let mut b = [0u8; HDR];
                    // SAFETY: the buffer's completion was just read: the provider is done
                    // writing it, and it holds at least HDR bytes.
                    unsafe { std::ptr::copy_nonoverlapping(self.ep.buf(i), b.as_mut_ptr(), HDR) };
                    if let Ok(h) = Hdr::parse(&b) {
                        let r = h.rank as usize;
                        if r < last.len() {
                            match h.kind {
                                Kind::Beat => {
                                    last[r] = Instant::now();
                                    self.live.heard[r].store(true, Ordering::Release);
                                }
                                Kind::Bye => self.live.mark_finalized(h.rank),
                                Kind::Exit => {
                                    self.live.record_exit(h.seq as i32);
                                    self.live.mark_exiting(h.rank);
                                    last[r] = Instant::now();
                                }
                                _ => {}
                            }
                        }
                    }
                }
                let _ = self.ep.post(i);
            }
            if (k as usize) < ents.len() {
                return;
            }
        }
    }
}

/// Whether a libfabric error code means the connection to the peer is gone.
pub fn broken(ret: isize) -> bool {
    use super::ffi::*;
    [
        FI_ECONNREFUSED,
        FI_ECONNRESET,
        FI_ECONNABORTED,
        FI_ENOTCONN,
        FI_ESHUTDOWN,
        FI_EHOSTUNREACH,
        FI_ENETUNREACH,
        FI_ETIMEDOUT,
        FI_EIO,
    ]
    .iter()
    .any(|&c| ret == -(c as isize))
}

/// The fixed-spin policy's least spin on a fabric port ([`Waiter::spin_floor`]).
pub const SPIN_FLOOR: Duration = Duration::from_micros(200);

/// The longest sleep on `net`'s progress set ([`OfiWaiter::sleep`]).
const NET_SLEEP_CAP: Duration = Duration::from_millis(1);

/// Sleeps on a port's CQ wait descriptor and the loss event.
#[derive(Clone)]
pub struct OfiWaiter {
    pub(super) ep: Arc<Ep>,
    pub(super) live: Arc<Live>,
    /// The rank's ports: their open batches leave before the thread sleeps.
    pub(super) ports: Arc<super::batch::Ports>,
}

impl Waiter for OfiWaiter {
    fn arm(&self) -> u32 {
        0
    }

    fn sleep(&self, _ticket: u32, timeout: Duration) {
        if self.live.lost().is_some() {
            return;
        }
        self.ports.flush_everything();
        // Woken by the CQ descriptor only after fi_trywait said nothing is pending (the
        // provider's rule for blocking on it); capped so that a provider whose descriptor
        // misses an event costs a short delay, never a hang. Over `net` the progress set
        // wakes it (`Ep::sleep_fd`): a completion another thread's progress writes into
        // this CQ does not, so its cap is short.
        let cap = timeout.min(if self.ep.progress_set().is_none() {
            Duration::from_millis(100)
        } else {
            NET_SLEEP_CAP
        });
        if self.ep.sleep_fd < 0 {
            std::thread::sleep(cap.min(Duration::from_millis(1)));
            return;
        }
        // Over `net` the CQ has no descriptor to try (`Net::progress_fd`): the wait's last
        // receive found nothing, and a message arriving since makes the progress set
        // readable.
        if self.ep.fd >= 0 && self.ep.trywait() != 0 {
            return;
        }
        // (the hierarchy sleeps here in slices of 200 us)
        wait_readable([self.ep.sleep_fd, self.live.event.as_raw_fd()], cap);
    }

    fn disarm(&self) {}

    fn lost_peer(&self) -> Option<u32> {
        self.live.lost()
    }

    /// A network round trip is tens of microseconds (8 B ping-pong between two network
    /// namespaces: 12 us quiet, several times that on a loaded machine): the default
    /// fixed spin of 20 us slept, and paid a wake-up, on nearly every reply.
    fn spin_floor(&self) -> Duration {
        SPIN_FLOOR
    }
}

/// A clear error when peers cannot be reached at start-up (a misconfigured fabric).
pub fn unreachable_error(
    net: &super::fabric::Net,
    me: u32,
    silent: &[u32],
    names: &[Vec<u8>],
    waited: Duration,
) -> Error {
    let who: Vec<String> = silent
        .iter()
        .map(|&r| format!("rank {r} at {}", net.straddr(&names[r as usize])))
        .collect();
    Error::Bootstrap(
        format!(
            "ofi: rank {me} reached no endpoint of {} within {waited:?} over provider {} on domain (interface) {}: check that the interface connects the nodes (SKIFCH_OFI_DOMAIN, FI_TCP_IFACE) and that no firewall blocks it",
            who.join(", "),
            net.provider,
            net.domain_name
        )
        .into(),
    )
}
