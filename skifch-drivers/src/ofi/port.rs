//! One port of the ofi driver: an `FI_EP_RDM` endpoint, its CQ and its buffers.
//!
//! # Credits (what makes a send non-buffering and every queue bounded)
//! Each receiving port grants every sending port (`rank × port` pairs, itself included)
//! `C` messages (`SKIFCH_OFI_CREDITS`, default 16) and keeps `senders × (C + 2)`
//! receive buffers of one slot each posted: `C` for the pair's messages and 2 for credit
//! returns, of which at most two are ever in flight per pair (one is sent only when at
//! least `C/2` messages were freed since the last, and the sender can have at most `C`
//! outstanding). So every message finds a posted buffer: the provider never buffers an
//! unexpected message, and no queue on either side grows past its fixed size.
//!
//! A sender counts its messages to each pair and the receiver's cumulative "freed" count,
//! which comes back in the header of every message from that port (piggybacked) or in a
//! `Credit` message. With `C` messages outstanding, `send` returns `WouldBlock`. The
//! receiver frees in the spec's any-order sense (SKIFCH-SPEC "Where this project goes
//! beyond the paper"): buffers are reposted as soon as a message is completed, but credit
//! is returned only up to the oldest message of that sender still held
//! ([`skifch::driver::Reclaim`] over the pair's sequence numbers).
//!
//! # Order and validation
//! Endpoints are opened with `FI_ORDER_SAS` (send-after-send order), so a pair's messages
//! complete in order; every `Data` header carries the pair's sequence number and a gap is
//! [`Error::Corrupt`], as are out-of-range ranks or ports, impossible credit and lengths.
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::io::IoSlice;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex};

use skifch::driver::{
    iov_total, partial_prefix, Port, RawMessage, RawSeg, Reclaim, SendMode, Token,
};
use skifch::{Error, NetAddr, Result, Unreachable};

use super::fabric::Ep;
use super::ffi::{fi_addr_t, fi_cq_data_entry, FI_EAGAIN, FI_EAVAIL, FI_ECANCELED};
use super::live::{broken, Live, OfiWaiter};
use super::sys;
use super::wire::{Hdr, Kind, HDR};

/// Send buffers per port (messages between a send and its completion).
pub const TX_SLOTS: usize = 64;

/// One (sender port, receiver port) pair as one side sees it.
struct Pair {
    /// The peer port's address in the AV.
    to: fi_addr_t,
    /// Messages sent to the peer.
    sent: u64,
    /// Of those, freed by the peer (its credit to us is `C - (sent - acked)`).
    acked: u64,
    /// Sequence number of the peer's next message to us.
    next_in: u64,
    /// The peer's messages to us that our user completed.
    freed: Reclaim,
    /// The freed count last told to the peer.
    told: u64,
    /// Waiting in `dirty` for a credit message.
    dirty: bool,
}

struct Ready {
    slot: u32,
    sid: u32,
    len: usize,
    seq: u64,
}

/// A port's state; it returns to the driver when the port is closed, so credits and
/// sequence numbers stay consistent across close and reopen.
pub struct PortState {
    pub(super) ep: Arc<Ep>,
    me: NetAddr,
    size: u32,
    ports: u32,
    credits: u64,
    max: usize,
    pairs: Vec<Pair>,
    ready: VecDeque<Ready>,
    repost: Vec<usize>,
    tx_free: Vec<usize>,
    tx_dst: Vec<u32>,
    dirty: Vec<u32>,
    broken: Option<String>,
    live: Arc<Live>,
}

const NONE: fi_cq_data_entry = fi_cq_data_entry {
    op_context: std::ptr::null_mut(),
    flags: 0,
    len: 0,
    buf: std::ptr::null_mut(),
    data: 0,
};

impl PortState {
    /// The state of port `me` over `ep`, whose receive buffers are all posted already;
    /// `to[sid]` is the address of peer port `sid = rank * ports + port`.
    pub fn new(
        ep: Arc<Ep>,
        me: NetAddr,
        size: u32,
        ports: u32,
        credits: u32,
        to: &[fi_addr_t],
        live: Arc<Live>,
    ) -> Self {
        let rx = ep.rx;
        let slots = ep.rx..ep.rx + TX_SLOTS;
        PortState {
            max: ep.slot - HDR,
            ep,
            me,
            size,
            ports,
            credits: credits as u64,
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
            ready: VecDeque::with_capacity(rx),
            repost: Vec::with_capacity(rx),
            tx_free: slots.rev().collect(),
            tx_dst: vec![0; TX_SLOTS],
            dirty: Vec::with_capacity(to.len()),
            broken: None,
            live,
        }
    }

    fn corrupt(&mut self, what: String) -> Error {
        let what = format!("ofi port {}: {what}", self.me);
        self.broken = Some(what.clone());
        Error::Corrupt(what.into())
    }

    /// Reads the CQ: messages into `ready`, send buffers back, credits in and out.
    fn progress(&mut self) -> Result<()> {
        if let Some(b) = &self.broken {
            return Err(Error::Corrupt(b.clone().into()));
        }
        while let Some(&i) = self.repost.last() {
            if self.ep.post(i) != 0 {
                break;
            }
            self.repost.pop();
        }
        let mut ents = [NONE; 16];
        loop {
            let k = self.ep.read(&mut ents);
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
                self.on_completion(e)?;
            }
            if (k as usize) < ents.len() {
                break;
            }
        }
        self.flush_credits();
        Ok(())
    }

    fn on_completion(&mut self, e: &fi_cq_data_entry) -> Result<()> {
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
            return Err(self.corrupt(format!(
                "a message from {}:{}, outside the job",
                h.rank, h.port
            )));
        }
        let sid = h.rank * self.ports + h.port as u32;
        let p = &mut self.pairs[sid as usize];
        let adv = h.credit.wrapping_sub(p.acked as u32) as u64;
        if adv > p.sent - p.acked {
            return Err(self.corrupt(format!(
                "credit for messages never sent to {}:{}",
                h.rank, h.port
            )));
        }
        p.acked += adv;
        match h.kind {
            Kind::Data if h.seq == p.next_in as u32 && self.ready.len() < self.ep.rx => {
                let seq = p.next_in;
                p.next_in += 1;
                self.ready.push_back(Ready {
                    slot: i as u32,
                    sid,
                    len: e.len - HDR,
                    seq,
                });
            }
            Kind::Credit if e.len == HDR => self.post(i),
            _ => {
                let exp = p.next_in;
                return Err(self.corrupt(format!(
                    "from {}:{}: {:?} message, seq {} (expected {exp}), {} bytes",
                    h.rank, h.port, h.kind, h.seq, e.len
                )));
            }
        }
        Ok(())
    }

    fn on_error(&mut self) -> Result<()> {
        let Some((e, text)) = self.ep.read_error() else {
            return Ok(());
        };
        match self.ep.slot_of(e.op_context) {
            Some(i) if i >= self.ep.rx => {
                self.tx_free.push(i);
                if broken(-(e.err as isize)) {
                    self.live.mark_lost(self.tx_dst[i - self.ep.rx]);
                }
                Ok(())
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

    fn post(&mut self, i: usize) {
        if self.ep.post(i) != 0 {
            self.repost.push(i);
        }
    }

    /// Sends the credit messages that are due (`Credit` headers by `fi_inject`; those
    /// the provider refuses now stay due).
    fn flush_credits(&mut self) {
        let mut k = 0;
        while k < self.dirty.len() {
            let sid = self.dirty[k];
            let p = &self.pairs[sid as usize];
            let freed = p.freed.freed();
            let h = Hdr {
                kind: Kind::Credit,
                port: self.me.port() as u16,
                rank: self.me.rank(),
                seq: 0,
                credit: freed as u32,
            }
            .emit();
            // SAFETY: live endpoint; a 16-byte header is within every inject size.
            let r = unsafe { sys::inject(self.ep.ep.0, h.as_ptr(), HDR, p.to) };
            if r == -(FI_EAGAIN as isize) {
                k += 1;
                continue;
            }
            if r != 0 && broken(r) {
                self.live.mark_lost(sid / self.ports);
            }
            let p = &mut self.pairs[sid as usize];
            p.told = freed;
            p.dirty = false;
            self.dirty.swap_remove(k);
        }
    }
}

/// An open port of the ofi driver.
pub struct OfiPort {
    st: ManuallyDrop<Box<PortState>>,
    home: Arc<Mutex<Option<Box<PortState>>>>,
}

impl OfiPort {
    /// Takes the state out of `home` (where it returns on drop).
    pub fn new(st: Box<PortState>, home: Arc<Mutex<Option<Box<PortState>>>>) -> Self {
        OfiPort {
            st: ManuallyDrop::new(st),
            home,
        }
    }
}

impl Drop for OfiPort {
    fn drop(&mut self) {
        // SAFETY: `st` is taken exactly once, here, and not used afterwards.
        let st = unsafe { ManuallyDrop::take(&mut self.st) };
        *self.home.lock().unwrap_or_else(|p| p.into_inner()) = Some(st);
    }
}

// SAFETY: `recv` hands out pointers into receive buffer `slot`, which is reposted (and so
// written again) only by `complete` with that message's token; buffers live as long as
// the endpoint, which outlives the port state.
unsafe impl Port for OfiPort {
    type Waiter = OfiWaiter;

    fn addr(&self) -> NetAddr {
        self.st.me
    }

    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        let total = iov_total(iov)?;
        let st = &mut **self.st;
        if let Some(b) = &st.broken {
            return Err(Error::Corrupt(b.clone().into()));
        }
        let (r, pt) = (dst.rank(), dst.port());
        let why = if r >= st.size {
            Some(Unreachable::NoSuchRank)
        } else if pt >= st.ports {
            Some(Unreachable::NoSuchPort)
        } else if st.live.is_finalized(r) {
            Some(Unreachable::Closed)
        } else {
            None
        };
        if let Some(why) = why {
            return Err(Error::Unreachable { addr: dst, why });
        }
        if st.live.is_lost(r) {
            return Err(Error::PeerLost { rank: r });
        }
        if mode == SendMode::Whole && total > st.max {
            return Err(Error::MessageTooLarge {
                len: total as u64,
                max: st.max as u32,
            });
        }
        // A whole slot is always free at the receiver while credit lasts: a message that
        // does not fit one is cut to a slot (partial send) or refused (`Whole`).
        let len = if total <= st.max {
            total
        } else {
            partial_prefix(mode, st.max, total, st.max).ok_or(Error::WouldBlock)?
        };
        let sid = (r * st.ports + pt) as usize;
        if st.pairs[sid].sent - st.pairs[sid].acked >= st.credits || st.tx_free.is_empty() {
            st.progress()?;
            if st.pairs[sid].sent - st.pairs[sid].acked >= st.credits {
                return Err(Error::WouldBlock);
            }
        }
        let Some(slot) = st.tx_free.pop() else {
            return Err(Error::WouldBlock);
        };
        let p = &st.pairs[sid];
        let told = p.freed.freed();
        let h = Hdr {
            kind: Kind::Data,
            port: st.me.port() as u16,
            rank: st.me.rank(),
            seq: p.sent as u32,
            credit: told as u32,
        }
        .emit();
        let buf = st.ep.buf(slot);
        // SAFETY: send buffer `slot` is free (taken from `tx_free`) and holds `slot` bytes
        // >= HDR + len; the iovec parts are the caller's readable slices.
        unsafe {
            std::ptr::copy_nonoverlapping(h.as_ptr(), buf, HDR);
            let mut at = HDR;
            for s in iov {
                let n = s.len().min(HDR + len - at);
                std::ptr::copy_nonoverlapping(s.as_ptr(), buf.add(at), n);
                at += n;
                if at == HDR + len {
                    break;
                }
            }
        }
        let n = HDR + len;
        let inject = n <= st.ep.net.inject_size;
        // SAFETY: live endpoint; the buffer stays untouched until its completion (a send)
        // or is copied before the call returns (an inject).
        let ret = unsafe {
            if inject {
                sys::inject(st.ep.ep.0, buf, n, p.to)
            } else {
                sys::send(st.ep.ep.0, buf, n, st.ep.desc(), p.to, st.ep.ctx(slot))
            }
        };
        if ret != 0 || inject {
            st.tx_free.push(slot);
        }
        if ret == 0 {
            st.tx_dst[slot - st.ep.rx] = r;
            let p = &mut st.pairs[sid];
            p.sent += 1;
            p.told = told;
            return Ok(len);
        }
        if ret == -(FI_EAGAIN as isize) {
            st.progress()?;
            return Err(Error::WouldBlock);
        }
        if broken(ret) {
            st.live.mark_lost(r);
            return Err(Error::PeerLost { rank: r });
        }
        Err(Error::os(
            "fi_send",
            std::io::Error::other(sys::strerror(ret)),
        ))
    }

    fn recv_into(&mut self, out: &mut RawMessage) -> Result<()> {
        let st = &mut **self.st;
        if st.ready.is_empty() {
            st.progress()?;
        }
        let Some(m) = st.ready.pop_front() else {
            return Err(match st.live.lost() {
                Some(rank) => Error::PeerLost { rank },
                None => Error::WouldBlock,
            });
        };
        // SAFETY: HDR + len <= slot (checked on completion): in bounds of the buffer.
        let ptr = unsafe { st.ep.buf(m.slot as usize).add(HDR) };
        out.segs[0] = RawSeg { ptr, len: m.len };
        out.len = m.len;
        out.count = (m.len > 0) as u32;
        out.src = NetAddr::new((m.sid / st.ports) as u16, (m.sid % st.ports) as u16);
        out.token = Token {
            a: (m.slot as u64) | ((m.sid as u64) << 32),
            b: m.seq,
        };
        Ok(())
    }

    fn ready(&mut self) -> Result<bool> {
        let st = &mut **self.st;
        if st.ready.is_empty() {
            st.progress()?;
        }
        if !st.ready.is_empty() {
            return Ok(true);
        }
        match st.live.lost() {
            Some(rank) => Err(Error::PeerLost { rank }),
            None => Ok(false),
        }
    }

    unsafe fn complete(&mut self, token: Token) {
        let st = &mut **self.st;
        let (slot, sid) = ((token.a & 0xffff_ffff) as usize, (token.a >> 32) as usize);
        if slot >= st.ep.rx || sid >= st.pairs.len() {
            return; // not a token of this port (the contract excludes it)
        }
        st.post(slot);
        let half = st.credits.div_ceil(2);
        let p = &mut st.pairs[sid];
        if p.freed.complete(token.b, token.b + 1) && p.freed.freed() - p.told >= half && !p.dirty {
            p.dirty = true;
            st.dirty.push(sid as u32);
            st.flush_credits();
        }
    }

    fn waiter(&self) -> OfiWaiter {
        OfiWaiter {
            ep: self.st.ep.clone(),
            live: self.st.live.clone(),
        }
    }
}
