//! One port of the ofi driver: an `FI_EP_RDM` endpoint, its CQ and its buffers.
//!
//! # Batches (message rate)
//! A fabric message costs a system call or more on each side over `tcp;ofi_rxm`, so small
//! SkifCh messages to one peer port travel together: a send appends its message as a
//! record to the pair's open batch, one send buffer ([`super::batch`]), and returns — the
//! caller's buffers are free again, as the contract wants. A lone message — its pair has
//! no batch open and the receiver has freed every batch sent to it, as in a ping-pong —
//! leaves at once (Nagle's rule, the credit return standing for the acknowledgement): the
//! batcher never delays a message when nothing is in flight. Otherwise the batch leaves as
//! one fabric message when the next message does not fit, when a send would block, when the port is
//! polled twice with no send in between (the sender waits for something), when any port
//! of the rank polls empty twice, before a [`OfiWaiter`] sleeps, when the port closes, and
//! otherwise after one or two ticks of the heartbeat thread (1 ms) — a message is never
//! held waiting for the sender's next call. The receiver walks the records in place: each
//! is one message that `recv` hands out from the posted buffer, which is reposted when its
//! last message is completed — or, for up to [`DEFER`] buffers, at the port's next poll
//! that finds nothing (the receiver is waiting then: the provider call, ~230 instructions,
//! leaves the latency path of a ping-pong; the endpoint has [`DEFER`] buffers more than
//! the credits need, so the credit bound below holds with them withheld).
//!
//! # Credits (what makes a send non-buffering and every queue bounded)
//! Each receiving port grants every sending port (`rank × port` pairs, itself included)
//! `C` batches (`SKIFCH_OFI_CREDITS`, default 16) and keeps `senders × (C + 2)` receive
//! buffers of one slot each posted: `C` for the pair's batches and 2 for credit returns, of
//! which at most two are ever in flight per pair (one is sent only when at least `C/2`
//! batches were freed since the last, and the sender can have at most `C` outstanding).
//! So every fabric message finds a posted buffer: the provider never buffers an unexpected
//! message, and no queue on either side grows past its fixed size (a pair has at most
//! `C × slot` bytes in flight, its open batch included).
//!
//! A sender counts its batches to each pair and the receiver's cumulative "freed" count,
//! which comes back in the header of every batch from that port (piggybacked) or in a
//! `Credit` message. A credit message due at a completion leaves at once only when the
//! sender may be short of credit (more than half its batches unfreed as far as the
//! receiver knows); otherwise at the port's next empty poll, before a waiter sleeps, or at
//! the heartbeat thread's next tick, unless a batch to the sender carried the count first
//! (a ping-pong's replies: no credit message at all). A batch is opened only with a credit
//! left; without one, `send` returns `WouldBlock`. The receiver frees in the spec's any-order sense (SKIFCH-SPEC
//! "Where this project goes beyond the paper"): a buffer is reposted as soon as all its
//! messages are completed, but credit is returned only up to the oldest batch of that
//! sender still held ([`skifch::driver::Reclaim`] over the pair's batch numbers).
//!
//! # Order and validation
//! Endpoints are opened with `FI_ORDER_SAS` (send-after-send order), so a pair's batches
//! complete in order; every `Data` header carries the pair's batch number and a gap is
//! [`Error::Corrupt`], as are out-of-range ranks or ports, impossible credit, records
//! that overrun their message, and a batch without records.
#![allow(unsafe_code)]

use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::sync::Arc;

use skifch::driver::{
    iov_total, partial_prefix, Port, RawMessage, RawSeg, Reclaim, SendMode, Token,
};
use skifch::{Error, NetAddr, Result, Unreachable};

use super::batch::{Flags, Home, Open, Ports, StGuard};
use super::fabric::Ep;
use super::ffi::{fi_addr_t, fi_cq_data_entry, FI_EAVAIL, FI_ECANCELED};
use super::live::{broken, Live, OfiWaiter};
use super::ring::Ring;
use super::sys;
use super::wire::{rec_len, Hdr, Kind, HDR, REC};

mod freed;
use freed::{complete_waiting, completed_slow, credit_due};

/// Send buffers per port (open batches and batches between a send and its completion).
pub const TX_SLOTS: usize = 64;

/// Completed receive buffers a port may hold back until its next empty poll (receive
/// buffers an endpoint has beyond `senders × (credits + 2)`).
pub const DEFER: usize = 4;

/// Completions read per `fi_cq_read`.
const CQ_BATCH: usize = 16;

/// One (sender port, receiver port) pair as one side sees it.
pub(super) struct Pair {
    /// The peer port's address in the AV.
    pub(super) to: fi_addr_t,
    /// Batches sent to the peer (the open one not counted).
    pub(super) sent: u64,
    /// Of those, freed by the peer (its credit to us is `C - (sent - acked)`).
    pub(super) acked: u64,
    /// Number of the peer's next batch to us.
    next_in: u64,
    /// The peer's batches to us whose messages our user all completed.
    pub(super) freed: Reclaim,
    /// The freed count last told to the peer.
    pub(super) told: u64,
    /// Waiting in `dirty` for a credit message.
    dirty: bool,
}

/// A received message: `len` bytes at `off` in receive buffer `slot`, of batch `seq` from
/// peer port `src` (kept rather than the pair number, which would be divided per message;
/// 24 bytes: a batch of small messages fills the queue with thousands).
#[derive(Clone, Copy, Default)]
struct Ready {
    src: NetAddr,
    slot: u32,
    off: u32,
    len: u32,
    seq: u64,
}

/// Why a received header is refused ([`PortState::bad_hdr`]).
#[derive(Clone, Copy)]
enum Bad {
    /// A sender outside the job.
    Outside,
    /// Credit for batches never sent.
    Credit,
    /// Not the pair's next batch, or not a kind a port receives.
    Order { exp: u64, len: usize },
}

/// A port's state; it stays with the driver when the port is closed, so credits and
/// sequence numbers stay consistent across close and reopen.
pub struct PortState {
    pub(super) ep: Arc<Ep>,
    pub(super) me: NetAddr,
    size: u32,
    pub(super) ports: u32,
    pub(super) credits: u64,
    /// `credits.div_ceil(2)`.
    half: u64,
    /// The largest lone message sent from the stack, header included
    /// ([`super::batch::LONE`] or the provider's inject size if smaller).
    pub(super) lone: usize,
    max: usize,
    pub(super) pairs: Vec<Pair>,
    ready: Ring<Ready>,
    /// Per receive buffer: its messages not completed yet.
    refs: Vec<u32>,
    repost: Vec<usize>,
    /// Completed receive buffers not posted again yet: the first `ndeferred` (an array,
    /// not a `Vec`: `complete`'s fast path has no growth call).
    deferred: [u32; DEFER],
    ndeferred: usize,
    pub(super) tx_free: Vec<usize>,
    pub(super) tx_dst: Vec<u32>,
    dirty: Vec<u32>,
    /// Credit-only messages sent (`Credit` headers; [`OfiPort::credit_messages`]).
    credit_msgs: u64,
    broken: Option<String>,
    pub(super) live: Arc<Live>,
    /// Open batches (at most one per pair).
    pub(super) open: Vec<Open>,
    /// Messages appended so far, and that count at the last poll ([`PortState::idle_flush`]).
    pub(super) sends: u64,
    pub(super) seen: u64,
    pub(super) flags: Arc<Flags>,
    /// Batching on (`SKIFCH_OFI_BATCH`); off, every append is flushed at once.
    pub(super) batch: bool,
}

/// An empty completion entry (a read's destination).
pub(super) const NONE: fi_cq_data_entry = fi_cq_data_entry {
    op_context: std::ptr::null_mut(),
    flags: 0,
    len: 0,
    buf: std::ptr::null_mut(),
    data: 0,
};

impl PortState {
    /// The state of port `me` over `ep`, whose receive buffers are all posted already;
    /// `to[sid]` is the address of peer port `sid = rank * ports + port`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ep: Arc<Ep>,
        me: NetAddr,
        size: u32,
        ports: u32,
        credits: u32,
        to: &[fi_addr_t],
        live: Arc<Live>,
        flags: Arc<Flags>,
        batch: bool,
    ) -> Self {
        let rx = ep.rx;
        let lone = super::batch::LONE.min(ep.net.inject_size);
        let slots = ep.rx..ep.rx + TX_SLOTS;
        PortState {
            max: ep.slot - HDR - REC,
            ep,
            me,
            size,
            ports,
            credits: credits as u64,
            half: (credits as u64).div_ceil(2),
            lone,
            pairs: to
                .iter()
                .map(|&to| Pair {
                    to,
                    sent: 0,
                    acked: 0,
                    next_in: 0,
                    freed: Reclaim::new(0),
                    told: 0,
                    dirty: false,
                })
                .collect(),
            ready: Ring::with_capacity(rx),
            refs: vec![0; rx],
            repost: Vec::with_capacity(rx),
            deferred: [0; DEFER],
            ndeferred: 0,
            tx_free: slots.rev().collect(),
            tx_dst: vec![0; TX_SLOTS],
            dirty: Vec::with_capacity(to.len()),
            credit_msgs: 0,
            broken: None,
            live,
            open: Vec::new(),
            sends: 0,
            seen: 0,
            flags,
            batch,
        }
    }

    fn corrupt(&mut self, what: String) -> Error {
        let what = format!("ofi port {}: {what}", self.me);
        self.broken = Some(what.clone());
        Error::Corrupt(what.into())
    }

    /// Reads the CQ: messages into `ready`, send buffers back, credits in and out.
    pub(super) fn progress(&mut self) -> Result<()> {
        self.progress_in::<false>(&mut None)
    }

    /// [`PortState::progress`]'s body, inlined into the receive and the wait's poll (a
    /// frame less per poll). With `TAKE`, called with the ready queue empty, the first
    /// message found goes into `took` instead of the queue, the others behind it (the
    /// receive hands it out at once: the queue's push and pop left the latency path).
    #[inline(always)]
    fn progress_in<const TAKE: bool>(&mut self, took: &mut Option<Ready>) -> Result<()> {
        if let Some(b) = &self.broken {
            return Err(Error::Corrupt(b.clone().into()));
        }
        while let Some(&i) = self.repost.last() {
            if self.ep.post(i) != 0 {
                break;
            }
            self.repost.pop();
        }
        let mut ents = [const { MaybeUninit::<fi_cq_data_entry>::uninit() }; CQ_BATCH];
        loop {
            let k = self.ep.read_uninit(&mut ents);
            if k == -(FI_EAVAIL as isize) {
                self.on_error()?;
                continue;
            }
            if k < 0 {
                return Err(Error::os(
                    "fi_cq_read",
                    std::io::Error::other(sys::strerror(k)),
                ));
            }
            for e in &ents[..k as usize] {
                // SAFETY: the provider wrote the first `k` entries.
                self.on_completion::<TAKE>(unsafe { e.assume_init_ref() }, took)?;
            }
            if (k as usize) < ents.len() {
                break;
            }
        }
        if !self.dirty.is_empty() {
            self.flush_credits(false);
        }
        Ok(())
    }

    #[inline(always)]
    fn on_completion<const TAKE: bool>(
        &mut self,
        e: &fi_cq_data_entry,
        took: &mut Option<Ready>,
    ) -> Result<()> {
        let Some(i) = self.ep.slot_of(e.op_context) else {
            return Err(self.corrupt("a completion with a context that is not ours".into()));
        };
        if i >= self.ep.rx {
            self.tx_free.push(i);
            return Ok(());
        }
        if e.len < HDR || e.len > self.ep.slot {
            return Err(self.corrupt(format!(
                "a {}-byte message in a {}-byte buffer",
                e.len, self.ep.slot
            )));
        }
        let mut b = [0u8; HDR];
        // SAFETY: the receive into buffer `i` completed: the provider is done with it and
        // wrote at least HDR bytes; copied out before any use.
        unsafe { std::ptr::copy_nonoverlapping(self.ep.buf(i), b.as_mut_ptr(), HDR) };
        let h = match Hdr::parse(&b) {
            Ok(h) => h,
            Err(e) => return Err(self.corrupt(e.to_string())),
        };
        if h.rank >= self.size || h.port as u32 >= self.ports {
            return Err(self.bad_hdr(h, Bad::Outside));
        }
        let sid = h.rank * self.ports + h.port as u32;
        let p = &mut self.pairs[sid as usize];
        let adv = h.credit.wrapping_sub(p.acked as u32) as u64;
        if adv > p.sent - p.acked {
            return Err(self.bad_hdr(h, Bad::Credit));
        }
        p.acked += adv;
        match h.kind {
            Kind::Data if h.seq == p.next_in as u32 => {
                let seq = p.next_in;
                p.next_in += 1;
                let src = NetAddr::new(h.rank as u16, h.port);
                self.records::<TAKE>(i, src, sid, seq, e.len, took)
            }
            Kind::Credit if e.len == HDR => {
                self.post(i);
                Ok(())
            }
            _ => {
                let exp = p.next_in;
                Err(self.bad_hdr(h, Bad::Order { exp, len: e.len }))
            }
        }
    }

    /// The error of a header that [`PortState::on_completion`] refuses (out of line: its
    /// text's arguments would otherwise be kept in memory on the receive's path).
    #[cold]
    #[inline(never)]
    fn bad_hdr(&mut self, h: Hdr, why: Bad) -> Error {
        let what = match why {
            Bad::Outside => format!("a message from {}:{}, outside the job", h.rank, h.port),
            Bad::Credit => format!("credit for batches never sent to {}:{}", h.rank, h.port),
            Bad::Order { exp, len } => format!(
                "from {}:{}: {:?} message, batch {} (expected {exp}), {len} bytes",
                h.rank, h.port, h.kind, h.seq
            ),
        };
        self.corrupt(what)
    }

    /// Walks the records of batch `seq` in receive buffer `i` (`len` bytes) into `ready`
    /// (with `TAKE`, the first of a poll into `took`: [`PortState::progress_in`]).
    #[inline(always)]
    fn records<const TAKE: bool>(
        &mut self,
        i: usize,
        src: NetAddr,
        sid: u32,
        seq: u64,
        len: usize,
        took: &mut Option<Ready>,
    ) -> Result<()> {
        let (mut at, mut count) = (HDR, 0u32);
        while at < len {
            let mut w = [0u8; 4];
            if len - at < REC {
                return Err(self.corrupt(format!("a record header cut at byte {at} of {len}")));
            }
            // SAFETY: `at + REC <= len <= slot`: inside buffer `i`, which the provider is
            // done writing; copied out before use.
            unsafe { std::ptr::copy_nonoverlapping(self.ep.buf(i).add(at), w.as_mut_ptr(), 4) };
            let n = u32::from_le_bytes(w) as usize;
            if n > len - at - REC {
                return Err(self.corrupt(format!(
                    "a {n}-byte record at byte {at} of a {len}-byte batch"
                )));
            }
            let m = Ready {
                src,
                slot: i as u32,
                off: (at + REC) as u32,
                len: n as u32,
                seq,
            };
            if TAKE && took.is_none() {
                *took = Some(m);
            } else {
                self.ready.push_back(m);
            }
            count += 1;
            at += rec_len(n);
        }
        if count == 0 {
            return Err(self.corrupt(format!("an empty batch from sender {sid}")));
        }
        self.refs[i] = count;
        Ok(())
    }

    fn on_error(&mut self) -> Result<()> {
        let Some((e, text)) = self.ep.read_error() else {
            return Ok(());
        };
        match self.ep.slot_of(e.op_context) {
            Some(i) if i >= self.ep.rx => {
                self.tx_free.push(i);
                let r = self.tx_dst[i - self.ep.rx];
                if broken(-(e.err as isize)) {
                    self.live.mark_lost(r);
                    return Ok(());
                }
                // A batch the provider could not deliver to a live peer: its messages are
                // gone, which the contract forbids to pass in silence.
                Err(self.corrupt(format!(
                    "a batch to rank {r} failed: {} ({text})",
                    sys::strerror(e.err as isize)
                )))
            }
            Some(i) if e.err as u32 == FI_ECANCELED => {
                self.post(i);
                Ok(())
            }
            Some(i) if !broken(-(e.err as isize)) => {
                let i = i as u32;
                Err(self.corrupt(format!(
                    "receive into buffer {i} failed: {} ({text})",
                    sys::strerror(e.err as isize)
                )))
            }
            // A receive cut by a peer's lost connection: the buffer goes back.
            Some(i) => {
                self.post(i);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// [`OfiPort::send`]'s checks for a peer not known alive, in their order: finalized
    /// (`Closed`), the size, lost (a peer that said `EXIT`: the message is taken and
    /// dropped, as the node's lanes take it until the rank is seen gone; waits for it fail
    /// after the grace, `live`). `None`: send.
    #[cold]
    #[inline(never)]
    fn not_alive(&self, dst: NetAddr, total: usize, mode: SendMode) -> Option<Result<usize>> {
        let r = dst.rank();
        if self.live.is_finalized(r) {
            let why = Unreachable::Closed;
            return Some(Err(Error::Unreachable { addr: dst, why }));
        }
        if mode == SendMode::Whole && total > self.max {
            return Some(Err(Error::MessageTooLarge {
                len: total as u64,
                max: self.max as u32,
            }));
        }
        if self.live.is_lost(r) {
            if self.live.is_exiting(r) {
                return Some(Ok(total));
            }
            return Some(Err(Error::PeerLost { rank: r }));
        }
        None
    }

    /// A poll: completions in, then batches out if the port is idle. With `TAKE`, also
    /// the next message, taken from the queue or, when the queue was empty, handed
    /// straight from the completion that carried it ([`PortState::progress_in`]).
    #[inline(always)]
    fn poll<const TAKE: bool>(&mut self) -> Result<Option<Ready>> {
        let mut took = None;
        if self.ready.is_empty() {
            if let Err(e) = self.progress_in::<TAKE>(&mut took) {
                // A message taken before the failure stays first in line, as it would
                // have in the queue.
                if let Some(m) = took {
                    self.ready.push_front(m);
                }
                return Err(e);
            }
            if took.is_none() && self.ready.is_empty() {
                if self.ndeferred > 0 {
                    self.post_deferred();
                }
                if !self.dirty.is_empty() {
                    self.flush_credits(true);
                }
            }
        } else if TAKE {
            took = self.ready.pop_front();
        }
        if !self.open.is_empty() {
            self.idle_flush();
        }
        Ok(took)
    }
}

/// An open port of the ofi driver: its state stays in the rank's [`Ports`], locked for
/// each call (the heartbeat thread and other ports' polls flush batches the owner left).
pub struct OfiPort {
    ports: Arc<Ports>,
    /// Port `idx`'s home in `ports`, locked directly by each call.
    home: Arc<Home>,
    idx: usize,
    me: NetAddr,
}

impl OfiPort {
    /// Port `idx` of `ports`, which the caller marked taken.
    pub(super) fn new(ports: Arc<Ports>, idx: usize, me: NetAddr) -> Self {
        OfiPort {
            home: ports.home(idx),
            ports,
            idx,
            me,
        }
    }

    #[inline]
    fn st(&self) -> StGuard<'_> {
        self.home.lock()
    }

    /// Receive buffers not with the provider now: holding messages not completed, held
    /// back until the next empty poll ([`DEFER`]), or refused by the provider's queue.
    /// Once every message is completed and a receive found nothing, 0.
    pub fn unposted(&self) -> usize {
        let st = self.st();
        st.refs.iter().filter(|&&r| r > 0).count() + st.ndeferred + st.repost.len()
    }

    /// Credit-only messages this port has sent (credit that no batch to the pair carried
    /// back in time).
    pub fn credit_messages(&self) -> u64 {
        self.st().credit_msgs
    }
}

impl Drop for OfiPort {
    fn drop(&mut self) {
        self.st().flush_all();
        self.ports.release(self.idx);
    }
}

// SAFETY: `recv` hands out pointers into receive buffer `slot`, which is reposted (and so
// written again) only when `complete` was called with the token of every message in it;
// buffers live as long as the endpoint, which outlives the port state.
unsafe impl Port for OfiPort {
    type Waiter = OfiWaiter;

    fn addr(&self) -> NetAddr {
        self.me
    }

    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        // One or two parts (a payload, an envelope and a payload) cannot overflow: each is
        // at most `isize::MAX` bytes.
        let total = match iov {
            [] => 0,
            [a] => a.len(),
            [a, b] => a.len() + b.len(),
            _ => iov_total(iov)?,
        };
        let mut g = self.st();
        let st = &mut *g;
        if let Some(b) = &st.broken {
            return Err(Error::Corrupt(b.clone().into()));
        }
        let (r, pt) = (dst.rank(), dst.port());
        let why = if r >= st.size {
            Some(Unreachable::NoSuchRank)
        } else if pt >= st.ports {
            Some(Unreachable::NoSuchPort)
        } else {
            None
        };
        if let Some(why) = why {
            return Err(Error::Unreachable { addr: dst, why });
        }
        // A live peer (one load; without a launcher's oracle) skips the other checks'
        // order, which is the same for it: not finalized, not lost.
        if !st.live.is_alive(r) {
            if let Some(e) = st.not_alive(dst, total, mode) {
                return e;
            }
        } else if mode == SendMode::Whole && total > st.max {
            return Err(Error::MessageTooLarge {
                len: total as u64,
                max: st.max as u32,
            });
        }
        // A whole batch is always free at the receiver while credit lasts: a message that
        // does not fit one is cut to a batch (partial send) or refused (`Whole`).
        let len = if total <= st.max {
            total
        } else {
            partial_prefix(mode, st.max, total, st.max).ok_or(Error::WouldBlock)?
        };
        let sid = (r * st.ports + pt) as usize;
        st.append(sid, iov, len)
    }

    /// Inline (into the hierarchy's fabric receive): with the CQ read inline too, a
    /// receive over the fabric is one frame of ours around `fi_cq_read`.
    #[inline(always)]
    fn recv_into(&mut self, out: &mut RawMessage) -> Result<()> {
        let mut g = self.st();
        let st = &mut *g;
        let Some(m) = st.poll::<true>()? else {
            let lost = st.live.lost();
            drop(g);
            self.ports.flush_others(self.idx);
            return Err(match lost {
                Some(rank) => Error::PeerLost { rank },
                None => Error::WouldBlock,
            });
        };
        // SAFETY: off + len <= slot (checked when the batch arrived): in the buffer.
        let ptr = unsafe { st.ep.buf(m.slot as usize).add(m.off as usize) };
        out.segs[0] = RawSeg {
            ptr,
            len: m.len as usize,
        };
        out.len = m.len as usize;
        out.count = (m.len > 0) as u32;
        out.src = m.src;
        let sid = m.src.rank() * st.ports + m.src.port();
        out.token = Token {
            a: (m.slot as u64) | ((sid as u64) << 32),
            b: m.seq,
        };
        Ok(())
    }

    fn ready(&mut self) -> Result<bool> {
        let mut g = self.st();
        let st = &mut *g;
        st.poll::<false>()?;
        if !st.ready.is_empty() {
            return Ok(true);
        }
        let lost = st.live.lost();
        drop(g);
        self.ports.flush_others(self.idx);
        match lost {
            Some(rank) => Err(Error::PeerLost { rank }),
            None => Ok(false),
        }
    }

    /// A straight path without calls (so without saved registers: ~15 instructions of
    /// frame less) for the usual case — the buffer's last message, a deferred place free,
    /// the pair's batches freed in order and no credit message due; the rest out of line.
    #[inline]
    unsafe fn complete(&mut self, token: Token) {
        let (slot, sid) = ((token.a & 0xffff_ffff) as usize, (token.a >> 32) as usize);
        // Only the owner waits for the lock (others hold it for a flush): out of line.
        let Some(mut g) = self.home.try_lock() else {
            return complete_waiting(&self.home, slot, sid, token.b);
        };
        let st = &mut *g;
        if !st.last_ref(slot, sid) {
            return;
        }
        let seq = token.b;
        let PortState {
            pairs,
            deferred,
            ndeferred,
            half,
            ..
        } = st;
        let p = &mut pairs[sid];
        let n = *ndeferred;
        if n >= DEFER || !p.freed.in_order(seq) {
            return completed_slow(g, slot, sid, seq);
        }
        // (in order: no store between the check and the completion, so the compiler
        // drops the out-of-order path and its call)
        p.freed.complete(seq, seq + 1);
        let due = p.freed.freed() - p.told >= *half && !p.dirty;
        deferred[n] = slot as u32;
        *ndeferred = n + 1;
        if due {
            credit_due(g, sid);
        }
    }

    fn waiter(&self) -> OfiWaiter {
        let st = self.st();
        OfiWaiter {
            ep: st.ep.clone(),
            live: st.live.clone(),
            ports: self.ports.clone(),
        }
    }
}
