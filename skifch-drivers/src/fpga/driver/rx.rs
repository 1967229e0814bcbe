//! RX queues, one per port (and the credit queue): completions polled, validated and
//! consumed; space released in any order and published lazily (see the [driver
//! docs](super), "Receive" and "RecvComp").

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use fpga::desc::{self, Limits, RxCompletion, RxExpect};
use skifch::driver::Reclaim;
use skifch::{Error, Result};

use super::super::hw::{DmaBuffer, DmaMemory, Hw};

pub(super) struct RxQueue<D: DmaMemory> {
    pub(super) port: u32,
    pub(super) data: DmaBuffer<D>,
    pub(super) comp: DmaBuffer<D>,
    pub(super) bytes: u64,
    pub(super) entries: u64,
    /// Index of the next completion (the driver's RXC_TAIL, unwrapped).
    pub(super) tail: u64,
    /// Where the next completion's payload must start (previous offset + span).
    pub(super) next_off: u64,
    /// RX bytes reclaimed: completions in any order, up to the oldest message still held.
    pub(super) done: Reclaim,
    /// Values last written to RX_FREE / RXC_TAIL (unwrapped).
    pub(super) pub_free: u64,
    pub(super) pub_tail: u64,
    pub(super) reg_free: usize,
    pub(super) reg_tail: usize,
    /// Credits: consumed messages not yet released, in ring order `(end, span, node)`.
    pub(super) pending: VecDeque<(u64, u64, usize)>,
    /// Credits: per source node, bytes and messages released and not yet returned.
    pub(super) owed: Vec<(u64, u32)>,
    pub(super) owed_msgs: u32,
    /// The port was open and closed: opening it again tells the senders.
    pub(super) was_closed: bool,
}

/// One RX queue's indices, for tests and diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxSnapshot {
    /// Next completion index expected.
    pub rxc_tail: u64,
    /// Where the next payload must start.
    pub next_offset: u64,
    /// RX bytes reclaimed by RecvComp so far.
    pub released: u64,
    /// Last value written to RX_FREE (unwrapped).
    pub published_free: u64,
    /// Last value written to RXC_TAIL (unwrapped).
    pub published_tail: u64,
    /// Messages completed out of order, waiting for an older one.
    pub out_of_order: usize,
}

impl<D: DmaMemory> RxQueue<D> {
    pub(super) fn snapshot(&self) -> RxSnapshot {
        RxSnapshot {
            rxc_tail: self.tail,
            next_offset: self.next_off,
            released: self.done.freed(),
            published_free: self.pub_free,
            published_tail: self.pub_tail,
            out_of_order: self.done.waiting(),
        }
    }

    /// Looks at the completion slot at the tail: `None` while the device has not written
    /// it; a fresh entry is copied into a shadow and validated (not consumed). A tag that
    /// is neither this completion's nor the previous lap's, or an entry that fails
    /// validation, is [`Error::Corrupt`].
    pub(super) fn poll(&self, limits: &Limits) -> Result<Option<RxCompletion>> {
        let slot = ((self.tail & (self.entries - 1)) as usize) * RxCompletion::SIZE;
        let tag = self
            .comp
            .load32(slot + RxCompletion::TAG_OFFSET, Ordering::Acquire)?;
        if tag != RxCompletion::tag_for(self.tail) {
            let stale = if self.tail < self.entries {
                0
            } else {
                RxCompletion::tag_for(self.tail - self.entries)
            };
            if tag == stale {
                return Ok(None);
            }
            return Err(Error::Corrupt(
                format!(
                    "fpga RX queue {}: completion slot {} holds tag {tag:#x}, neither completion {}'s nor the previous lap's",
                    self.port,
                    self.tail & (self.entries - 1),
                    self.tail
                )
                .into(),
            ));
        }
        let mut b = [0u8; RxCompletion::SIZE];
        self.comp.read(slot, &mut b)?;
        let at = RxExpect {
            index: self.tail,
            offset: self.next_off,
            released: self.pub_free,
            ring_bytes: self.bytes,
        };
        let port = self.port;
        match RxCompletion::read_from(&b).and_then(|c| c.validate(&at, limits).map(|()| c)) {
            Ok(c) if c.dst_port.get() as u32 == port => Ok(Some(c)),
            Ok(c) => Err(Error::Corrupt(
                format!(
                    "fpga RX queue {port}: completion {} is for port {}",
                    at.index,
                    c.dst_port.get()
                )
                .into(),
            )),
            Err(e) => Err(Error::Corrupt(format!("fpga RX queue {port}: {e}").into())),
        }
    }

    /// Consumes the completion `poll` returned (its space stays held until released).
    pub(super) fn consume(&mut self, c: &RxCompletion, credit: bool) {
        self.tail += 1;
        self.next_off = c.offset.get() + c.span();
        if credit {
            let node = desc::addr_node(c.src.get()) as usize;
            self.pending.push_back((self.next_off, c.span(), node));
        }
    }

    pub(super) fn publish<H: Hw>(&mut self, hw: &H) {
        // A register write to a fixed, in-range offset cannot fail; were it to, the value
        // stays dirty and is written again at the next chance.
        if self.pub_free != self.done.freed()
            && hw.write32(self.reg_free, self.done.freed() as u32).is_ok()
        {
            self.pub_free = self.done.freed();
        }
        if self.pub_tail != self.tail && hw.write32(self.reg_tail, self.tail as u32).is_ok() {
            self.pub_tail = self.tail;
        }
        // Space the device now knows to be free is owed back to its senders (credits).
        while let Some(&(end, span, node)) = self.pending.front() {
            if end > self.pub_free {
                break;
            }
            self.pending.pop_front();
            if let Some(o) = self.owed.get_mut(node) {
                o.0 += span;
                o.1 += 1;
                self.owed_msgs += 1;
            }
        }
    }

    /// Releases `start..start + span` (RecvComp, or a failed message), in ring order.
    pub(super) fn release<H: Hw>(&mut self, hw: &H, start: u64, span: u64) -> bool {
        if span == 0 {
            return false; // nothing to give back (empty message, TOO_LARGE)
        }
        if !self.done.complete(start, start + span) {
            return false;
        }
        if self.done.freed() - self.pub_free >= self.bytes / 4 {
            self.publish(hw);
            return true;
        }
        false
    }
}
