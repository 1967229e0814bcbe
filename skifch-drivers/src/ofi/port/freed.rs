//! A port's receive buffers and credit going back (see [`super`]): buffers reposted or held
//! back until the next empty poll, the completion's paths out of line, credit messages.
#![allow(unsafe_code)]

use super::super::batch::{Home, StGuard};
use super::super::live::broken;
use super::super::sys;
use super::super::wire::{Hdr, Kind, HDR};
use super::{PortState, DEFER};
use crate::ofi::ffi::FI_EAGAIN;

impl PortState {
    /// Counts one message of receive buffer `slot` (pair `sid`) completed: whether it was
    /// the buffer's last. `false` too for a token that is not this port's (`refs` has one
    /// entry per receive buffer; the contract excludes such tokens).
    #[inline(always)]
    pub(super) fn last_ref(&mut self, slot: usize, sid: usize) -> bool {
        let Some(r) = self.refs.get_mut(slot) else {
            return false;
        };
        if *r == 0 || sid >= self.pairs.len() {
            return false;
        }
        *r -= 1;
        *r == 0
    }

    pub(super) fn post(&mut self, i: usize) {
        if self.ep.post(i) != 0 {
            self.repost.push(i);
        }
    }

    /// Buffer `i`, whose messages are all completed, back to the provider: at the next
    /// empty poll while fewer than [`DEFER`] wait, else now.
    pub(super) fn release(&mut self, i: usize) {
        if self.ndeferred < DEFER {
            self.deferred[self.ndeferred] = i as u32;
            self.ndeferred += 1;
        } else {
            self.post(i);
        }
    }

    /// Whether no credit message is owed.
    pub(in crate::ofi) fn dirty_is_empty(&self) -> bool {
        self.dirty.is_empty()
    }

    /// Posts the buffers [`PortState::release`] held back.
    pub(super) fn post_deferred(&mut self) {
        while self.ndeferred > 0 {
            self.ndeferred -= 1;
            self.post(self.deferred[self.ndeferred] as usize);
        }
    }

    /// A header of `kind` to pair `sid` telling the peer our freed count (a `Data` header
    /// numbers the pair's next batch; a `Credit` header carries 0), and that count.
    pub(in crate::ofi) fn hdr(&self, sid: usize, kind: Kind) -> ([u8; HDR], u64) {
        let p = &self.pairs[sid];
        let freed = p.freed.freed();
        let h = Hdr {
            kind,
            port: self.me.port() as u16,
            rank: self.me.rank(),
            seq: if kind == Kind::Data { p.sent as u32 } else { 0 },
            credit: freed as u32,
        };
        (h.emit(), freed)
    }

    /// Sends the credit messages that are due (`Credit` headers by `fi_inject`; those
    /// the provider refuses now stay due): with `all`, every pair owed credit; otherwise
    /// only those whose sender has, as far as this port knows, more than half its credit
    /// (or all of it) in use. The others wait for the port's next empty poll, a waiter's
    /// sleep or the heartbeat thread's tick, and are dropped when a batch to the pair
    /// carried the count meanwhile: in a ping-pong the reply carries it, and no credit
    /// message is sent at all (with 2 credits one was sent before every reply).
    pub(in crate::ofi) fn flush_credits(&mut self, all: bool) {
        let half = self.half;
        let mut k = 0;
        while k < self.dirty.len() {
            let sid = self.dirty[k] as usize;
            let p = &self.pairs[sid];
            let used = p.next_in - p.told;
            if p.freed.freed() != p.told && !all && used <= half && used < self.credits {
                k += 1;
                continue;
            }
            if p.freed.freed() != p.told {
                let (h, freed) = self.hdr(sid, Kind::Credit);
                // SAFETY: live endpoint; a 16-byte header is within every inject size.
                let r = unsafe { sys::inject(self.ep.ep.0, h.as_ptr(), HDR, p.to) };
                if r == -(FI_EAGAIN as isize) {
                    k += 1;
                    continue;
                }
                if r != 0 && broken(r) {
                    self.live.mark_lost(sid as u32 / self.ports);
                }
                self.credit_msgs += 1;
                self.pairs[sid].told = freed;
            }
            self.pairs[sid].dirty = false;
            self.dirty.swap_remove(k);
        }
        self.flags
            .set_credit(self.me.port(), !self.dirty.is_empty());
    }
}

/// [`OfiPort::complete`] when the lock was held by another thread (a flush): waits for it.
#[cold]
#[inline(never)]
pub(super) fn complete_waiting(home: &Home, slot: usize, sid: usize, seq: u64) {
    let mut g = home.lock();
    if g.last_ref(slot, sid) {
        completed_slow(g, slot, sid, seq);
    }
}

/// The last message of receive buffer `slot` (batch `seq` of pair `sid`, checked)
/// completed: the buffer back (deferred or posted), the pair's credit returned if due.
#[cold]
#[inline(never)]
pub(super) fn completed_slow(mut g: StGuard<'_>, slot: usize, sid: usize, seq: u64) {
    let st = &mut *g;
    st.release(slot);
    let half = st.half;
    let p = &mut st.pairs[sid];
    if p.freed.complete(seq, seq + 1) && p.freed.freed() - p.told >= half && !p.dirty {
        credit_due(g, sid);
    }
}

/// Pair `sid`'s freed count moved by half the credits since the peer was last told: a
/// credit message is owed (sent now if the peer may be short of credit).
#[cold]
#[inline(never)]
pub(super) fn credit_due(mut g: StGuard<'_>, sid: usize) {
    let st = &mut *g;
    st.pairs[sid].dirty = true;
    st.dirty.push(sid as u32);
    st.flush_credits(false);
}
