//! The driver and port over the lanes: [`RingDriver`] (one rank's attachment to a
//! [`Fabric`]; the shm driver and the in-process job are both this), [`RingPort`] (an open
//! channel: the send path, the receive path with its scan, RecvComp) and [`RingWaiter`]
//! (the sleeping side of the wake-up protocol). The protocol itself is in [`super::lane`].
#![allow(unsafe_code)] // the `Port` contract and the summary words of the segment

use std::io::IoSlice;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;

use skifch::driver::{
    iov_total, partial_prefix, Driver, Port, RawMessage, Reserved, SendMode, Token, Waiter,
};
use skifch::error::Unreachable;
use skifch::{Error, NetAddr, Result};

use super::fabric::{Fabric, Region};
use super::far::{Far, FarWaiter, FAR_LANE};
use super::lane::{header_word, zero, Rx, Shared, Tx};
use super::layout::{fit, record_size, REC_HDR, TERM};
use crate::jobctl::{chan_state, C_SEQ, C_SLEEPERS, C_STATE};
use crate::sync::{self, AtomicU32, AtomicU64, Ordering};
use crate::sys;

/// Messages taken in a row from one lane before the scan moves on (fairness across senders).
pub const BURST: u32 = 64;
/// Longest single futex sleep; bounds the reaction to anything a wake-up could miss.
pub const MAX_SLEEP: Duration = Duration::from_millis(250);

/// The driver of one rank over a [`Fabric`]: the in-process job and the shm driver are both this.
pub struct RingDriver<R: Region> {
    fab: Arc<Fabric<R>>,
    rank: u32,
    name: &'static str,
    /// The thread this rank lives and dies with (thread-per-rank jobs), see
    /// [`RingDriver::bind_thread`].
    thread: std::sync::OnceLock<std::thread::ThreadId>,
}

impl<R: Region> RingDriver<R> {
    /// Joins `fab` as `rank` (recorded as running in this process).
    pub fn new(fab: Arc<Fabric<R>>, rank: u32, name: &'static str) -> Result<Self> {
        if rank >= fab.lay.params.nranks {
            return Err(Error::Bootstrap(
                format!(
                    "rank {rank} out of range for a {}-rank job",
                    fab.lay.params.nranks
                )
                .into(),
            ));
        }
        fab.ctl().set_running(rank, std::process::id());
        Ok(RingDriver {
            fab,
            rank,
            name,
            thread: std::sync::OnceLock::new(),
        })
    }

    /// Declares that this rank lives and dies with the calling thread (the in-process
    /// job's rank threads). A port dropped while that thread panics then marks the rank
    /// lost before the port closes, so that peers see [`Error::PeerLost`], never a
    /// transient "closed". Without it a panicking rank is marked lost only when its driver
    /// drops, after its ports closed: in a multi-threaded process one thread's panic does
    /// not end the rank. Returns `false` if another thread was already bound.
    pub fn bind_thread(&self) -> bool {
        let me = std::thread::current().id();
        *self.thread.get_or_init(|| me) == me
    }

    /// The bound rank thread is unwinding (see [`RingDriver::bind_thread`]).
    fn rank_thread_panicking(&self) -> bool {
        std::thread::panicking() && self.thread.get() == Some(&std::thread::current().id())
    }

    /// The shared fabric.
    pub fn fabric(&self) -> &Arc<Fabric<R>> {
        &self.fab
    }
}

impl<R: Region> Drop for RingDriver<R> {
    fn drop(&mut self) {
        // Every port holds an Arc to this driver, so all of them are closed by now.
        if !std::thread::panicking() {
            self.fab.ctl().set_finalized(self.rank);
        } else {
            self.fab.ctl().mark_lost(self.rank);
        }
    }
}

impl<R: Region> Driver for RingDriver<R> {
    type Port = RingPort<R>;
    fn name(&self) -> &'static str {
        self.name
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.fab.lay.params.nranks
    }
    fn max_ports(&self) -> u32 {
        self.fab.lay.params.nports
    }
    fn open_port(self: &Arc<Self>, port: u32) -> Result<RingPort<R>> {
        let (me, tx, rx) = self.fab.open(self.rank, port)?;
        let lay = self.fab.lay;
        Ok(RingPort {
            drv: self.clone(),
            me,
            addr: NetAddr::new(self.rank as u16, port as u16),
            nports: lay.params.nports,
            nranks: lay.params.nranks,
            cap: lay.params.lane_bytes as u64,
            max_msg: lay.max_message(),
            tx,
            rx,
            summary: self.fab.summary_base(me),
            sum_words: lay.sum_words,
            lost: Shared::new(self.fab.ctl().lost_count()),
            cur: usize::MAX,
            burst: 0,
            last_scan: 0,
            broken: None,
            last_dst: u64::MAX,
            last_d: 0,
            asym: sys::asymmetric(),
            reserved: None,
            far: None,
            far_due: 1,
        })
    }
    fn max_message(&self) -> usize {
        self.fab.lay.max_message()
    }
    fn rma(self: &Arc<Self>) -> Option<Arc<dyn skifch::rma::Rma>> {
        self.fab.region().rma(self.rank, self.size())
    }
}

#[cfg(not(loom))]
impl<R: Region> crate::hier::NodePort for RingPort<R> {
    fn hold_to(&mut self, max: usize) {
        self.max_msg = self.max_msg.min(max);
    }
    fn name_sources(&mut self, job: &dyn Fn(u32) -> u32) {
        for rx in self.rx.iter_mut() {
            rx.src = NetAddr::new(job(rx.src.rank()) as u16, rx.src.port() as u16);
        }
    }
    fn hold_far(&mut self, addr: NetAddr, far: Box<dyn Far>) {
        self.addr = addr;
        self.far = Some(far);
        self.far_due = 1;
        self.last_dst = u64::MAX;
    }
}

/// One open channel on a [`Fabric`].
pub struct RingPort<R: Region> {
    drv: Arc<RingDriver<R>>,
    me: usize,
    pub(super) addr: NetAddr,
    pub(super) nports: u32,
    nranks: u32,
    cap: u64,
    /// [`max_message`]`(cap)`, kept: a load, not a computation, on every send.
    max_msg: usize,
    tx: Box<[Tx]>,
    pub(super) rx: Box<[Rx]>,
    /// This channel's summary bitmap (`sum_words` words, kept alive like every `Shared`)
    /// and the job's lost-rank count.
    summary: NonNull<u8>,
    sum_words: usize,
    lost: Shared<AtomicU32>,
    /// Lane served last (sticky fast path); `usize::MAX` after a full burst and once the
    /// port is broken, so that the fast path needs no other test.
    pub(super) cur: usize,
    /// Messages `cur` may still deliver before the scan moves on ([`BURST`] per turn);
    /// [`AFTER_FAR`](super::far::AFTER_FAR) after a far message.
    pub(super) burst: u32,
    /// Where the last scan stopped (round-robin start).
    pub(super) last_scan: usize,
    broken: Option<Error>,
    /// The destination of the last send (`u64::MAX`, which no address is: none, or the
    /// port is broken) and its channel index: a stream to one peer resolves its address
    /// with one compare.
    pub(super) last_dst: u64,
    last_d: usize,
    /// The asymmetric barrier is on: senders need no fence ([`sys::light_barrier`]).
    asym: bool,
    /// The lane of an unpublished reservation ([`Port::reserve`]) and its producer limit,
    /// set aside meanwhile: the lane's limit is its head, so every other send to it takes
    /// the cold path ([`RingPort::send_when_full`]), which refuses it.
    reserved: Option<(usize, u64)>,
    /// The hierarchy's far half ([`super::far`]), reached from the cold paths only.
    pub(super) far: Option<Box<dyn Far>>,
    /// Looks beyond the current lane until the far half's next turn (with a far half).
    pub(super) far_due: u32,
}

// SAFETY: the raw pointers point into the fabric, which is Send + Sync and kept alive by
// `drv`; a port is used by one thread at a time (`&mut self` everywhere).
unsafe impl<R: Region> Send for RingPort<R> {}

impl<R: Region> RingPort<R> {
    /// The receive path after the fast path found nothing on `cur`: a broken port, the end
    /// of a burst, an empty lane. Scans the other lanes; the lane found becomes `cur`.
    #[inline(always)]
    fn recv_other(&mut self, out: &mut RawMessage) -> Result<()> {
        if self.broken.is_some() {
            return Err(self.broken());
        }
        // The far half's turn (a hierarchy's: `super::far`); its message comes back by
        // value, so that `out` never escapes into an opaque call (see `scan`).
        if self.far.is_some() {
            self.far_due -= 1;
            if self.far_due == 0 {
                if let Some(r) = self.far_turn() {
                    *out = r?;
                    return Ok(());
                }
            }
        }
        // No other lane has ever carried a message (one sender, the common case of a
        // polling loop): the empty poll ends here, without the out-of-line scan — a
        // spinning receiver then takes few issue slots from a sender on a sibling
        // hyperthread.
        if self.sum_words == 1 && self.summary_bits(0) == 0 {
            return self.empty(out);
        }
        let Some(i) = self.scan()? else {
            return self.empty(out);
        };
        let (cap, rx) = (self.cap, &mut self.rx[i]);
        let word = header_word(rx.data, cap, rx.consumed).load(Ordering::Acquire);
        if word == 0 {
            return Err(self.nothing()); // `scan` saw it ready: not reachable with a sane producer
        }
        if let Err(e) = rx.deliver(i, cap, word, out) {
            return Err(self.corrupt(e));
        }
        self.cur = i;
        self.burst = BURST - 1;
        Ok(())
    }

    /// The current lane delivered its [`BURST`]: the next receive scans from the lane after it.
    #[cold]
    fn end_burst(&mut self) {
        self.last_scan = self.cur;
        self.cur = usize::MAX;
        self.far_burst_ended();
    }

    /// An empty poll: "would block", or a lost peer once the far half (if any) has no
    /// message left either.
    #[inline(always)]
    fn empty(&mut self, out: &mut RawMessage) -> Result<()> {
        if !self.any_lost() {
            return Err(Error::WouldBlock);
        }
        if let Some(m) = self.far_before_loss() {
            *out = m;
            return Ok(());
        }
        Err(self.lost_peer())
    }

    /// Finds a lane with a message among those that have ever carried one (the summary
    /// bitmap), in round-robin order after the last lane found by a scan; `take` then
    /// delivers it. `None`: nothing (the caller reports `WouldBlock` or a lost peer).
    /// Kept short: it runs on every empty poll, and a message is noticed only at the next
    /// poll. It never sees the caller's message: were `out` passed to this out-of-line
    /// function, the message could no longer live in registers and every receive would pay
    /// a store-forwarding stall when the guard is built (8 → 21 ns).
    #[inline(never)]
    fn scan(&mut self) -> Result<Option<usize>> {
        let words = self.sum_words;
        let start = self.last_scan + 1;
        let w0 = if start / 64 < words { start / 64 } else { 0 };
        // In the first word, lanes from `start` on come first, the rest after every other
        // word; each word is loaded once.
        let bits0 = self.summary_bits(w0);
        let first = !0u64 << (start % 64);
        if let Some(i) = self.find(w0, bits0 & first)? {
            return Ok(Some(i));
        }
        for k in 1..words {
            let w = if w0 + k >= words {
                w0 + k - words
            } else {
                w0 + k
            };
            let bits = self.summary_bits(w);
            if let Some(i) = self.find(w, bits)? {
                return Ok(Some(i));
            }
        }
        self.find(w0, bits0 & !first)
    }

    /// Word `w` of this channel's summary bitmap.
    #[inline(always)]
    fn summary_word(&self, w: usize) -> &AtomicU64 {
        debug_assert!(w < self.sum_words);
        // SAFETY: `w < sum_words` (callers loop below it): one of the words of this
        // channel's summary, kept alive like every `Shared`.
        unsafe { sync::u64_at(self.summary.as_ptr().add(w * 8)) }
    }

    /// Word `w` of this channel's summary, without the lane `take` has just tried.
    #[inline(always)]
    fn summary_bits(&self, w: usize) -> u64 {
        let bits = self.summary_word(w).load(Ordering::Acquire);
        if w == self.cur / 64 {
            bits & !(1u64 << (self.cur % 64))
        } else {
            bits
        }
    }

    /// The first lane with a message among `bits` of summary word `w`.
    #[inline(always)]
    fn find(&mut self, w: usize, mut bits: u64) -> Result<Option<usize>> {
        while bits != 0 {
            let i = w * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if i >= self.rx.len() {
                let e = Error::Corrupt(format!("summary bit {i} names no channel").into());
                return Err(self.corrupt(e));
            }
            if self.lane_ready(i) {
                self.last_scan = i;
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// Whether lane `i` (`i < rx.len()`) holds a message not yet taken; an empty lane
    /// publishes its tail on the way (the lazy publication's "found empty" case). Header
    /// validation is left to `take`, which delivers.
    #[inline(always)]
    fn lane_ready(&mut self, i: usize) -> bool {
        let cap = self.cap;
        let rx = &mut self.rx[i];
        if header_word(rx.data, cap, rx.consumed).load(Ordering::Acquire) != 0 {
            return true;
        }
        if rx.published != rx.done.freed() {
            rx.publish(cap);
        }
        false
    }

    /// What an empty poll reports: a lost peer, else "would block".
    #[inline(always)]
    fn nothing(&self) -> Error {
        if !self.any_lost() {
            Error::WouldBlock
        } else {
            self.lost_peer()
        }
    }

    /// The lost-rank count says someone was lost.
    #[inline(always)]
    fn any_lost(&self) -> bool {
        self.lost.get().load(Ordering::Relaxed) != 0
    }

    #[cold]
    fn lost_peer(&self) -> Error {
        match self.drv.fab.ctl().lost() {
            Some(rank) => Error::PeerLost {
                rank: self.job_rank(rank),
            },
            None => Error::WouldBlock,
        }
    }

    #[cold]
    fn corrupt(&mut self, e: Error) -> Error {
        self.broken = Some(e.clone());
        self.cur = usize::MAX;
        self.last_dst = u64::MAX;
        e
    }

    /// The channel index of `dst` for a send, off the hot path (a new destination): a
    /// broken port or an address outside the job is refused.
    #[cold]
    #[inline(never)]
    fn resolve(&mut self, dst: NetAddr) -> Result<usize> {
        if self.broken.is_some() {
            return Err(self.broken());
        }
        let d = match self.resolve_far(dst)? {
            Some(d) => d,
            None => {
                let (r, pt) = (dst.rank(), dst.port());
                if r >= self.nranks || pt >= self.nports {
                    return Err(self.bad_address(dst));
                }
                (r * self.nports + pt) as usize
            }
        };
        self.last_dst = u32::from(dst) as u64;
        self.last_d = d;
        Ok(d)
    }

    #[cold]
    fn broken(&self) -> Error {
        self.broken.clone().unwrap_or(Error::WouldBlock)
    }

    /// An address outside the job, off the hot path.
    #[cold]
    pub(super) fn bad_address(&self, dst: NetAddr) -> Error {
        Error::Unreachable {
            addr: dst,
            why: if dst.rank() >= self.nranks {
                Unreachable::NoSuchRank
            } else {
                Unreachable::NoSuchPort
            },
        }
    }

    /// What a send to a channel in state `st` (not open) gets: an error, or `None` for a
    /// port never opened yet (its messages wait in the lane).
    #[cold]
    fn refused(dst: NetAddr, st: u32) -> Option<Error> {
        match st {
            chan_state::NEVER => None,
            chan_state::LOST => Some(Error::PeerLost { rank: dst.rank() }),
            _ => Some(Error::Unreachable {
                addr: dst,
                why: Unreachable::Closed,
            }),
        }
    }

    /// The lane to `d` has no room for `want` bytes by the cached tail: re-reads the tail,
    /// and returns how much of the message fits now (`want`, or a worthwhile prefix for
    /// [`SendMode::Prefix`]); `WouldBlock` when nothing does.
    #[cold]
    #[inline(never)]
    fn send_when_full(
        &mut self,
        d: usize,
        dst: NetAddr,
        iov: &[IoSlice<'_>],
        want: usize,
        mode: SendMode,
    ) -> Result<usize> {
        if self.reserved.is_some_and(|(r, _)| r == d) {
            return Err(Error::WouldBlock); // behind the unpublished reservation
        }
        self.reload_tail(d, dst)?;
        let (cap, asym) = (self.cap, self.asym);
        let tx = &mut self.tx[d];
        let whole = tx.head + record_size(tx.head, want);
        let (n, end) = if whole <= tx.limit {
            (want, whole)
        } else {
            let room = fit(tx.head, tx.limit);
            let n = partial_prefix(mode, room, want, cap as usize).ok_or(Error::WouldBlock)?;
            (n, tx.head + record_size(tx.head, n))
        };
        tx.put(cap, asym, iov, n, end);
        Ok(n)
    }

    /// The tail of the lane to `d`, re-read because the cached copy says "full";
    /// validated against what this producer knows.
    #[cold]
    fn reload_tail(&mut self, d: usize, dst: NetAddr) -> Result<u64> {
        let room = self.cap - TERM as u64;
        let tx = &mut self.tx[d];
        let t = tx.tail.get().load(Ordering::Acquire);
        let cached = tx.limit - room;
        if t < cached || t > tx.head || t & 7 != 0 {
            let e = Error::Corrupt(
                format!("lane to {dst}: tail {t} outside {cached}..={}", tx.head).into(),
            );
            return Err(self.corrupt(e));
        }
        tx.limit = t + room;
        Ok(t)
    }
}

impl<R: Region> RingPort<R> {
    /// [`Port::reserve`]: the record's payload room at the lane's head, if the whole of it
    /// lies before the lane end (a payload that wraps could not be written in place).
    fn reserve_lane(&mut self, dst: NetAddr, max: usize) -> Result<Option<Reserved>> {
        let d = self.resolve(dst)?;
        if d == FAR_LANE {
            return Ok(None); // the far half writes no lane: the caller sends a copy
        }
        if self.reserved.is_some() {
            return Err(Error::InvalidArgument(
                "reserve: this port already holds an unpublished reservation".into(),
            ));
        }
        if max > self.max_msg {
            return Err(Error::MessageTooLarge {
                len: max as u64,
                max: self.max_msg as u32,
            });
        }
        let tx = &self.tx[d];
        let st = tx.state.get().load(Ordering::Relaxed);
        if st != chan_state::OPEN {
            if let Some(e) = Self::refused(dst, st) {
                return Err(e);
            }
        }
        let cap = self.cap;
        let at = ((tx.head + REC_HDR as u64) & (cap - 1)) as usize;
        if at + max > cap as usize {
            return Ok(None);
        }
        let end = tx.head + record_size(tx.head, max);
        if end > tx.limit && end > self.reload_tail(d, dst)? + cap - TERM as u64 {
            return Err(Error::WouldBlock);
        }
        let tx = &mut self.tx[d];
        self.reserved = Some((d, tx.limit));
        tx.limit = tx.head;
        Ok(Some(Reserved {
            // SAFETY: `at + max <= cap`: inside the lane.
            ptr: unsafe { tx.data.as_ptr().add(at) },
            max,
            tag: [d as u64, 0],
        }))
    }
}

// SAFETY: segments returned by `recv` lie in `freed..consumed` of a lane, which the
// producer does not write until this port publishes a tail past them; that happens only in `complete`
// (or on drop, after every message was completed, which `Channel` guarantees).
unsafe impl<R: Region> Port for RingPort<R> {
    type Waiter = RingWaiter<R>;

    fn addr(&self) -> NetAddr {
        self.addr
    }

    #[inline(always)]
    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        let d = if u32::from(dst) as u64 == self.last_dst {
            self.last_d
        } else {
            self.resolve(dst)?
        };
        let asym = self.asym;
        let Some(tx) = self.tx.get_mut(d) else {
            return self.send_far(dst, iov, mode); // `FAR_LANE`
        };
        // One word says closed, lost (see `JobCtl::mark_lost`) or never opened.
        let st = tx.state.get().load(Ordering::Relaxed);
        if st != chan_state::OPEN {
            if let Some(e) = Self::refused(dst, st) {
                return Err(e);
            }
        }
        let total = match iov {
            [one] => one.len(),
            // A header and a payload (every library's message with data): two slices of
            // memory cannot add up past `usize::MAX`.
            [a, b] => a.len() + b.len(),
            _ => iov_total(iov)?,
        };
        let cap = self.cap;
        let maxmsg = self.max_msg;
        let want = match mode {
            SendMode::Whole if total > maxmsg => {
                return Err(Error::MessageTooLarge {
                    len: total as u64,
                    max: maxmsg as u32,
                })
            }
            SendMode::Whole => total,
            SendMode::Prefix => total.min(maxmsg),
        };
        let end = tx.head + record_size(tx.head, want);
        if end > tx.limit {
            return self.send_when_full(d, dst, iov, want, mode);
        }
        tx.put(cap, asym, iov, want, end);
        Ok(want)
    }

    /// The last destination's lane, open, with room by the cached tail, a record that does
    /// not wrap the lane end: the word and the payload written in place. Anything else
    /// (a new destination, a closed or lost channel, a full lane, a message too large)
    /// goes through `send`.
    #[inline(always)]
    fn try_send_word(&mut self, dst: NetAddr, word: u64, data: &[u8]) -> bool {
        if u32::from(dst) as u64 != self.last_dst {
            return false;
        }
        let (cap, asym, n) = (self.cap, self.asym, 8 + data.len());
        let Some(tx) = self.tx.get_mut(self.last_d) else {
            return false;
        };
        if tx.state.get().load(Ordering::Relaxed) != chan_state::OPEN || n > self.max_msg {
            return false;
        }
        let end = tx.head + record_size(tx.head, n);
        end <= tx.limit && tx.put_word(cap, asym, word, data, end)
    }

    fn reserve(&mut self, dst: NetAddr, max: usize) -> Result<Option<Reserved>> {
        self.reserve_lane(dst, max)
    }

    unsafe fn publish(&mut self, r: Reserved, len: usize) {
        let d = r.tag[0] as usize;
        let Some((held, limit)) = self.reserved.take_if(|(h, _)| *h == d) else {
            return; // not this port's reservation (the caller's contract excludes it)
        };
        let (cap, asym) = (self.cap, self.asym);
        let tx = &mut self.tx[held];
        tx.limit = limit;
        let n = len.min(r.max);
        let end = tx.head + record_size(tx.head, n);
        // The caller may have written up to `r.max` bytes: what lies past this record is
        // free space again, which must read zero (see the lane module docs).
        let written = (tx.head + (REC_HDR + r.max) as u64).next_multiple_of(8);
        if written > end {
            // SAFETY: `end..written` lies in the reserved room (`reserve_lane` checked it
            // against the tail; it does not wrap), this producer's until published.
            unsafe { zero(tx.data, cap, end, written) };
        }
        tx.publish_record(asym, cap, n, end);
    }

    #[inline(always)]
    fn recv_into(&mut self, out: &mut RawMessage) -> Result<()> {
        // Fast path: the lane that delivered last, while its burst lasts (`cur` is out of
        // range after a burst and once the port is broken).
        let (i, cap) = (self.cur, self.cap);
        if let Some(rx) = self.rx.get_mut(i) {
            let word = header_word(rx.data, cap, rx.consumed).load(Ordering::Acquire);
            if word != 0 {
                if let Err(e) = rx.deliver(i, cap, word, out) {
                    return Err(self.corrupt(e));
                }
                self.burst -= 1;
                if self.burst == 0 {
                    self.end_burst();
                }
                return Ok(());
            }
            // Found empty: the lazy tail publication's second occasion.
            if rx.published != rx.done.freed() {
                rx.publish(cap);
            }
        }
        self.recv_other(out)
    }

    fn ready(&mut self) -> Result<bool> {
        if self.broken.is_some() {
            return Err(self.broken());
        }
        for w in 0..self.sum_words {
            let bits = self.summary_word(w).load(Ordering::Acquire);
            if self.find(w, bits)?.is_some() {
                return Ok(true);
            }
        }
        if self.far.is_some() && self.far_ready()? {
            return Ok(true);
        }
        // Without building (and dropping, out of line) an `Error` on every empty look.
        if !self.any_lost() {
            return Ok(false);
        }
        match self.lost_peer() {
            Error::WouldBlock => Ok(false),
            e => Err(e),
        }
    }

    #[inline(always)]
    unsafe fn complete(&mut self, t: Token) {
        // Token: a = lane << 32 | record length, b = record start.
        let i = (t.a >> 32) as usize;
        let (end, cap) = (t.b + (t.a & 0xffff_ffff), self.cap);
        let Some(rx) = self.rx.get_mut(i) else {
            // SAFETY: the caller's contract: a token of this port naming no lane is the
            // far half's.
            return unsafe { self.complete_far(t) };
        };
        if rx.done.complete(t.b, end) && rx.done.freed() >= rx.publish_at {
            rx.publish(cap);
        }
    }

    fn waiter(&self) -> RingWaiter<R> {
        RingWaiter {
            drv: self.drv.clone(),
            chan: self.me,
            far: self.far.as_ref().map(|f| f.waiter()),
        }
    }
}

impl<R: Region> Drop for RingPort<R> {
    fn drop(&mut self) {
        let cap = self.cap;
        for rx in self.rx.iter_mut() {
            if rx.published != rx.done.freed() {
                rx.publish(cap);
            }
        }
        if self.drv.rank_thread_panicking() {
            self.drv.fab.ctl().mark_lost(self.drv.rank);
        }
        // Where a port reopened later continues sending.
        let fab = &*self.drv.fab;
        for (d, tx) in self.tx.iter_mut().enumerate() {
            if tx.published != tx.head {
                fab.head(fab.lay.lane(d, self.me))
                    .store(tx.head, Ordering::Release);
                tx.published = tx.head;
            }
        }
        // A lost rank's channels stay lost (terminal).
        let _ = fab.ctl().chan(self.me, C_STATE).compare_exchange(
            chan_state::OPEN,
            chan_state::CLOSED,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }
}

/// Sleeps on a channel's futex word (see the module docs for the wake-up protocol), and,
/// for a port with a far half, on that half's wake-up in turn ([`FarWaiter`]).
pub struct RingWaiter<R: Region> {
    drv: Arc<RingDriver<R>>,
    chan: usize,
    far: Option<Arc<dyn FarWaiter>>,
}

impl<R: Region> Clone for RingWaiter<R> {
    fn clone(&self) -> Self {
        RingWaiter {
            drv: self.drv.clone(),
            chan: self.chan,
            far: self.far.clone(),
        }
    }
}

impl<R: Region> RingWaiter<R> {
    /// The node's side is never armed nor slept on (a rank alone on its node).
    fn alone(&self) -> bool {
        self.far.as_ref().is_some_and(|f| f.alone())
    }

    fn sleep_node(&self, ticket: u32, timeout: Duration) {
        sys::futex_wait(
            self.drv.fab.ctl().chan(self.chan, C_SEQ),
            ticket,
            timeout.min(MAX_SLEEP),
        );
    }
}

impl<R: Region> Waiter for RingWaiter<R> {
    fn arm(&self) -> u32 {
        if self.alone() {
            return 0;
        }
        let fab = &*self.drv.fab;
        let t = fab.ctl().chan(self.chan, C_SEQ).load(Ordering::Acquire);
        fab.ctl()
            .chan(self.chan, C_SLEEPERS)
            .fetch_add(1, Ordering::SeqCst);
        sys::heavy_barrier();
        t
    }
    fn sleep(&self, ticket: u32, timeout: Duration) {
        match &self.far {
            None => self.sleep_node(ticket, timeout),
            Some(far) => far.sleep(&|t| self.sleep_node(ticket, t), timeout),
        }
    }
    fn disarm(&self) {
        if self.alone() {
            return;
        }
        self.drv
            .fab
            .ctl()
            .chan(self.chan, C_SLEEPERS)
            .fetch_sub(1, Ordering::Relaxed);
    }
    fn spin_floor(&self) -> Duration {
        self.far.as_ref().map_or(Duration::ZERO, |f| f.spin_floor())
    }
    fn lost_peer(&self) -> Option<u32> {
        let node = self.drv.fab.ctl().lost();
        match &self.far {
            None => node,
            Some(far) => far.lost_peer(node),
        }
    }
}
