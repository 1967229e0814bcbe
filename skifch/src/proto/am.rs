//! What a handler sees: an active message ([`Am`]), its payload borrowed from the channel,
//! and which part of a long transfer it is called for.

use std::cell::Cell;

use super::header::{Head, F_REQUEST};
use super::Landing;

/// Which part of a message a handler is called for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The whole message: the payload is all of it.
    Whole,
    /// First message of a long transfer of `total` bytes: the payload is its first chunk.
    /// Call [`Am::place`] to choose where the data lands (else it is dropped and the
    /// endpoint reports an error).
    LongStart {
        /// Bytes of the whole transfer.
        total: u64,
    },
    /// All `total` bytes of a long transfer have landed; [`Am::take_landing`] gives the
    /// landing back (the payload is empty). Reply now if the sender asked for one.
    LongDone {
        /// Bytes of the whole transfer.
        total: u64,
    },
}

/// What the filter of [`super::Endpoint::progress_take`] does with an incoming message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Take {
    /// The filter consumed it (its handler is not called); the wait ends.
    Mine,
    /// The filter consumed it (its handler is not called); keep waiting (a filter that
    /// takes a run of messages, ending the wait with `Mine` on the last).
    MineMore,
    /// Dispatch it to its handler as usual; keep waiting.
    Pass,
    /// Dispatch it to its handler, then end the wait (the caller looks at what changed).
    PassStop,
}

/// Where to send a reply: the requester's rank and request id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyTo {
    /// The requester's rank.
    pub rank: u32,
    /// The requester's request slot.
    pub req: u16,
}

/// An active message as its handler sees it.
pub struct Am<'a> {
    pub(super) src: u32,
    pub(super) head: &'a Head,
    // By reference: copying it into the `Am` costs a store-forwarding stall per message.
    pub(super) payload: &'a Payload<'a>,
    pub(super) phase: Phase,
    /// LongStart: the landing chosen by the handler; LongDone: the filled landing.
    pub(super) landing: Cell<Option<Landing>>,
}

impl<'a> Am<'a> {
    /// Sender's rank.
    pub fn src(&self) -> u32 {
        self.src
    }
    /// Handler id.
    pub fn handler(&self) -> u8 {
        self.head.handler
    }
    /// The small argument.
    pub fn arg(&self) -> u32 {
        self.head.arg
    }
    /// The extra arguments (0 to 3).
    #[inline]
    pub fn args(&self) -> &[u64] {
        &self.head.args[..self.head.nargs()]
    }
    /// The payload (borrowed from the channel's receive memory).
    pub fn payload(&self) -> &Payload<'a> {
        self.payload
    }
    /// See [`Phase`].
    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// Where to reply, if the sender waits for a reply ([`super::Io::request`]).
    pub fn reply_to(&self) -> Option<ReplyTo> {
        (self.head.flags & F_REQUEST != 0).then_some(ReplyTo {
            rank: self.src,
            req: self.head.id,
        })
    }
    /// In [`Phase::LongStart`]: the transfer's bytes land in `l` (from offset 0; bytes past
    /// its length are dropped and reported as truncation).
    pub fn place(&self, l: Landing) {
        if matches!(self.phase, Phase::LongStart { .. }) {
            self.landing.set(Some(l));
        }
    }
    /// In [`Phase::LongDone`]: the landing given to [`Am::place`], now filled.
    pub fn take_landing(&self) -> Option<Landing> {
        match self.phase {
            Phase::LongDone { .. } => self.landing.take(),
            _ => None,
        }
    }
}

/// Received bytes, borrowed from the channel (one or two segments).
#[derive(Clone, Copy, Debug)]
pub struct Payload<'a> {
    pub(super) a: &'a [u8],
    pub(super) b: &'a [u8],
}

impl<'a> Payload<'a> {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.a.len() + self.b.len()
    }
    /// No bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The segments in order (the second is empty unless the message wrapped the ring).
    pub fn segments(&self) -> [&'a [u8]; 2] {
        [self.a, self.b]
    }
    /// The payload as one slice, when it is in one segment.
    pub fn as_contiguous(&self) -> Option<&'a [u8]> {
        if self.b.is_empty() {
            Some(self.a)
        } else if self.a.is_empty() {
            Some(self.b)
        } else {
            None
        }
    }
    /// Copies up to `buf.len()` bytes; returns how many.
    pub fn copy_to(&self, buf: &mut [u8]) -> usize {
        let k = self.a.len().min(buf.len());
        buf[..k].copy_from_slice(&self.a[..k]);
        let j = self.b.len().min(buf.len() - k);
        buf[k..k + j].copy_from_slice(&self.b[..j]);
        k + j
    }
    /// Copied into a `Vec`.
    pub fn to_vec(&self) -> Vec<u8> {
        [self.a, self.b].concat()
    }
}
