//! The hardware boundary (spec: "The core: three calls", "Ordering and reliability").
//!
//! Adding interconnect hardware means implementing [`Driver`] + [`Port`] (+ a [`Waiter`])
//! and passing [`crate::conformance`]. The traits are small on purpose; the waiting policy,
//! the message guard, blocking helpers and the C ABI are written once above them.
//!
//! # Obligations of every driver (the contract the conformance suite checks)
//! 1. **One message per send.** [`Port::send`] forms one message from a prefix of the
//!    concatenated iovec and returns its length; a prefix shorter than the total is allowed
//!    (partial send) unless [`SendMode::Whole`] is asked for.
//! 2. **No buffering.** If nothing can be sent now, `send` returns [`Error::WouldBlock`] at
//!    once and has consumed nothing. On success the caller's buffers are free again.
//! 3. **Per-pair order.** Messages from one sending port to one receiving port arrive in
//!    send order. Nothing is promised across senders.
//! 4. **No loss, no duplication, no corruption**; back-pressure instead of drops.
//! 5. **Zero-copy receive.** [`Port::recv`] hands out pointers into the driver's receive
//!    memory; that memory stays valid and unchanged until [`Port::complete`] is called
//!    with the message's token. Completions may come in any order.
//! 6. **Failure is reported, never a hang.** When a rank of the job is lost, `recv` on an
//!    empty port and `send` to that rank return [`Error::PeerLost`] and every [`Waiter`]
//!    wakes within one second.
//! 7. **Untrusted memory.** Every value read from memory that another process or a device
//!    can write is validated before use; violations give [`Error::Corrupt`].
//!
//! Optional: [`Port::reserve`] / [`Port::publish`] (negotiated payload: the sender writes a
//! message in place in the receiver's memory); the default says "not here" and callers copy.

#![allow(unsafe_code)] // declares the unsafe `Port` contract (no unsafe blocks here)

use std::io::IoSlice;
use std::sync::Arc;
use std::time::Duration;

use crate::{Error, NetAddr, Result};

/// Maximum number of segments in one received message (`SKIFCH_CONT_SIZE` of the C ABI).
/// Receive memory is a ring (shm lanes, the FPGA adapter's RX ring): a message is one
/// segment, or two when it wraps the ring end. Kept at 2 because a received message is
/// copied on every `recv`: at 2 the whole [`RawMessage`] is one cache line.
pub const CONT_SIZE: usize = 2;

/// One segment of a received message, as a raw pointer into the driver's receive memory.
#[derive(Clone, Copy, Debug)]
pub struct RawSeg {
    /// First byte of the segment in the driver's receive memory.
    pub ptr: *const u8,
    /// Bytes in the segment.
    pub len: usize,
}

impl RawSeg {
    /// No bytes (a dangling, never dereferenced pointer).
    pub const EMPTY: RawSeg = RawSeg {
        ptr: std::ptr::NonNull::<u8>::dangling().as_ptr(),
        len: 0,
    };
}

/// Identifies a received message to [`Port::complete`]; its meaning is the driver's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    /// First word (e.g. a lane index or ring slot).
    pub a: u64,
    /// Second word (e.g. the position to release up to).
    pub b: u64,
}

/// A received message as a driver hands it out: segments in driver memory, sender, token.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct RawMessage {
    /// The segments; `segs[..count]` are valid.
    pub segs: [RawSeg; CONT_SIZE],
    /// Total bytes of the message (the sum of the valid segments' lengths).
    pub len: usize,
    /// Valid segments (0 for an empty message, at most [`CONT_SIZE`]).
    pub count: u32,
    /// The sender's channel.
    pub src: NetAddr,
    /// What [`Port::complete`] needs to give the memory back.
    pub token: Token,
}

impl RawMessage {
    /// A message with no segments (a placeholder to receive into).
    pub const EMPTY: RawMessage = RawMessage {
        segs: [RawSeg::EMPTY; CONT_SIZE],
        len: 0,
        count: 0,
        src: NetAddr::new(0, 0),
        token: Token { a: 0, b: 0 },
    };
}

/// Whether a send may form a message from a prefix of the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendMode {
    /// The spec's Send: any non-empty prefix (or the empty message) may be sent.
    Prefix,
    /// All or nothing: `WouldBlock` while it does not fit now, `MessageTooLarge` if it never will.
    Whole,
}

/// Room for one message in the receiver's memory, reserved by [`Port::reserve`]: the
/// sender writes the message straight to `ptr` (no copy at send), then
/// [`Port::publish`]es it. Its meaning beyond `ptr` and `max` is the driver's.
#[derive(Debug)]
pub struct Reserved {
    /// Where the message's first byte goes: `max` contiguous bytes, writable by the sender
    /// only (raw pointer: memory the receiver reads once published).
    pub ptr: *mut u8,
    /// The most bytes the message may have.
    pub max: usize,
    /// The driver's own words (e.g. which lane).
    pub tag: [u64; 2],
}

/// A job's attachment to the network: one per process (or per thread-rank in an in-process job).
pub trait Driver: Send + Sync + 'static {
    /// An open channel of this driver.
    type Port: Port;
    /// Short name used in logs and in the MsgRate `impl` column (`shm`, `local`, …).
    fn name(&self) -> &'static str;
    /// This process's rank.
    fn rank(&self) -> u32;
    /// Number of ranks in the job.
    fn size(&self) -> u32;
    /// Ports per rank that this driver supports (ports are `0..max_ports()`).
    fn max_ports(&self) -> u32;
    /// Opens this rank's channel on `port`. A port is open at most once at a time.
    fn open_port(self: &Arc<Self>, port: u32) -> Result<Self::Port>;
    /// The largest message a port of this job can ever receive.
    fn max_message(&self) -> usize;
    /// The driver's remote memory access provider ([`crate::rma`]), if it can reach a
    /// peer's memory without the peer's CPU: the one discovery call of every library that
    /// puts, gets or runs atomics (skifshmem; MPI windows, ARMCI, GASNet next). What the
    /// provider offers is in [`crate::rma::Rma::caps`]; libraries never look at
    /// [`Driver::name`]. `None` (the default): no RMA, libraries use active messages.
    /// A driver that wraps another (tracer, fault injector) forwards this call.
    fn rma(self: &Arc<Self>) -> Option<Arc<dyn crate::rma::Rma>> {
        None
    }
}

/// One open channel: the three calls of the spec, in raw form.
///
/// # Safety
/// Implementors promise obligation 5 of the [module docs](self): every segment returned by
/// `recv` points to `len` readable bytes that nothing writes until `complete` is called with
/// that message's token, and `complete` with a token that `recv` returned (each once) is
/// always sound. The safe [`crate::Channel`] relies on this to hand out `&[u8]`.
pub unsafe trait Port: Send {
    /// The wake-up side of this port, usable from any thread without `&mut self`.
    type Waiter: Waiter;
    /// This channel's own address.
    fn addr(&self) -> NetAddr;
    /// Spec "Send": forms one message from (a prefix of) `iov`, returns its length.
    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize>;
    /// Sends the message `word` (8 bytes, little-endian) followed by `data` now, whole, if
    /// that is quick: `true` when sent; `false` when nothing was done and the caller
    /// sends it with [`Port::send`] instead (which waits, or says why it cannot). The
    /// message most library sends are, a protocol header word and a short payload,
    /// without an iovec or a `Result` to pass through memory: on a path that stores
    /// nothing it does not have to, a sender racing its receiver through the same cache
    /// lines keeps its pace (docs/results-2026-11-30-sender-stores). Drivers that write
    /// the receiver's memory directly implement it; the default is `false`.
    #[inline(always)]
    fn try_send_word(&mut self, dst: NetAddr, word: u64, data: &[u8]) -> bool {
        let _ = (dst, word, data);
        false
    }
    /// Spec "Recv": the next message, in place; `WouldBlock` when none is waiting;
    /// `PeerLost` when none is waiting and a rank of the job is lost.
    fn recv(&mut self) -> Result<RawMessage> {
        let mut m = RawMessage::EMPTY;
        self.recv_into(&mut m).map(|()| m)
    }
    /// As [`Port::recv`], writing the message into `out` (on success only). This is the
    /// method drivers implement: writing each field once into its final place avoids
    /// moving the message through temporaries, whose partial-store/whole-load pattern
    /// costs a store-forwarding stall per message on x86.
    fn recv_into(&mut self, out: &mut RawMessage) -> Result<()>;
    /// `Ok(true)` when `recv` would deliver a message now (nothing is consumed);
    /// `Err(PeerLost)` when none is waiting and a rank is lost; else `Ok(false)`.
    fn ready(&mut self) -> Result<bool>;
    /// Spec "RecvComp" for one message (any order).
    ///
    /// # Safety
    /// `token` comes from a `recv` on this port and is completed once; no reference into the
    /// message's segments outlives this call.
    unsafe fn complete(&mut self, token: Token);
    /// A handle for blocking until a message may be ready.
    fn waiter(&self) -> Self::Waiter;
    /// Negotiated payload, an optional capability (the driver writes nothing at send time:
    /// GASNet-EX's `gex_AM_Prepare*`/`Commit*`): reserves room for one whole message of up
    /// to `max` bytes to `dst`, contiguous in the receiver's memory. The caller writes the
    /// message through [`Reserved::ptr`] and sends it with [`Port::publish`] — every
    /// reservation is published, and until then this port's other sends to `dst` return
    /// `WouldBlock` (per-pair order). `Ok(None)`: not possible here (the default: drivers
    /// whose receive memory the sender cannot write; the shm driver when the room would
    /// wrap the ring end) — the caller builds the message elsewhere and sends it (a copy).
    /// `WouldBlock`: no room now. Other errors as [`Port::send`] with [`SendMode::Whole`].
    fn reserve(&mut self, dst: NetAddr, max: usize) -> Result<Option<Reserved>> {
        let _ = (dst, max);
        Ok(None)
    }
    /// Sends the first `len` bytes (at most [`Reserved::max`]) of a reservation as one
    /// message: the receiver sees what the caller wrote there.
    ///
    /// # Safety
    /// `r` comes from [`Port::reserve`] on this port and is published once; `len <= r.max`;
    /// no write through `r.ptr` happens after this call.
    unsafe fn publish(&mut self, r: Reserved, len: usize) {
        let _ = (r, len);
    }
}

/// Blocking support: the "fixed spin" policy of SEED-NOTES needs a way to sleep until a
/// sender publishes or a peer is lost. Protocol (race-free by construction):
/// `let t = w.arm();` then poll once more; if still empty `w.sleep(t, timeout)`; then
/// `w.disarm()`. A message published after `arm` always ends the sleep early.
pub trait Waiter: Send + Sync + Clone + 'static {
    /// Announces a sleeper; returns a ticket for [`Waiter::sleep`].
    fn arm(&self) -> u32;
    /// Sleeps until woken after `ticket` was taken, or `timeout` passes (spurious wake-ups allowed).
    fn sleep(&self, ticket: u32, timeout: Duration);
    /// Withdraws the announcement made by `arm`.
    fn disarm(&self);
    /// The first rank known lost, if any.
    fn lost_peer(&self) -> Option<u32>;
    /// The shortest spin worth making before sleeping here: about a round trip of the
    /// transport behind it (a network's tens of microseconds), below which a wait under
    /// [`crate::WaitPolicy::Fixed`] would sleep on nearly every message and pay a wake-up
    /// each time. The fixed-spin policy spins at least this long. Default: none.
    fn spin_floor(&self) -> Duration {
        Duration::ZERO
    }
}

/// Total length of an iovec, refusing more than [`IOV_MAX`] parts (`EINVAL`).
pub fn iov_total(iov: &[IoSlice<'_>]) -> Result<usize> {
    if iov.len() > IOV_MAX {
        return Err(Error::InvalidArgument(
            format!(
                "iovec has {} parts; at most {IOV_MAX} are accepted",
                iov.len()
            )
            .into(),
        ));
    }
    let mut total = 0usize;
    for s in iov {
        total = total
            .checked_add(s.len())
            .ok_or_else(|| Error::InvalidArgument("iovec total overflows".into()))?;
    }
    Ok(total)
}

/// The partial-send rule of every driver (spec "Send": a prefix may be sent): with `room`
/// bytes free for payload in a buffer of `capacity` bytes, a send of `want` bytes that does
/// not fit sends a prefix of `room` bytes only when that is worthwhile — at least an eighth
/// of the buffer, or all that is left of a shorter message — so that a nearly full buffer
/// does not cut messages into tiny fragments. `None`: send nothing now (`WouldBlock`).
#[inline]
pub fn partial_prefix(mode: SendMode, room: usize, want: usize, capacity: usize) -> Option<usize> {
    (mode == SendMode::Prefix && room >= want.min(capacity / 8).max(1)).then_some(room.min(want))
}

/// Longest iovec accepted by a send (as `IOV_MAX` for `writev`).
pub const IOV_MAX: usize = 1024;

/// The any-order RecvComp of a driver whose receive memory is a ring (the spec's extension:
/// completions in any order, memory given back up to the oldest message still held).
/// Positions are monotonic byte counts; a message is the span `start..end`. Written once
/// for every such driver (the shm lanes, the FPGA adapter's RX rings).
#[derive(Debug, Default)]
pub struct Reclaim {
    freed: u64,
    /// `freed` while nothing waits in `ooo`, else `u64::MAX` (no message starts there): the
    /// in-order case is then one compare.
    next: u64,
    /// Completed above `freed`, waiting for an older message: `(start, end)`.
    ooo: Vec<(u64, u64)>,
}

impl Reclaim {
    /// Nothing held; everything below `at` is free.
    pub fn new(at: u64) -> Self {
        Reclaim {
            freed: at,
            next: at,
            ooo: Vec::new(),
        }
    }

    /// Everything below this position is completed.
    #[inline(always)]
    pub fn freed(&self) -> u64 {
        self.freed
    }

    /// Whether a message starting at `start` is the next in order: [`Reclaim::complete`]
    /// of it then moves [`Reclaim::freed`] without its out-of-order path (a caller's fast
    /// path can leave that path, a call, out).
    #[inline(always)]
    pub fn in_order(&self, start: u64) -> bool {
        start == self.next
    }

    /// Messages completed out of order, waiting for an older one.
    pub fn waiting(&self) -> usize {
        self.ooo.len()
    }

    /// Completes the message `start..end`; returns whether [`Reclaim::freed`] moved.
    /// The in-order case is a compare and two stores, small enough to inline into a guard's
    /// drop.
    #[inline(always)]
    pub fn complete(&mut self, start: u64, end: u64) -> bool {
        if start == self.next {
            self.freed = end;
            self.next = end;
            true
        } else {
            self.complete_out_of_order(start, end)
        }
    }

    #[cold]
    #[inline(never)]
    fn complete_out_of_order(&mut self, start: u64, end: u64) -> bool {
        if start != self.freed {
            self.ooo.push((start, end));
            self.next = u64::MAX;
            return false;
        }
        self.freed = end;
        while let Some(k) = self.ooo.iter().position(|&(s, _)| s == self.freed) {
            self.freed = self.ooo.swap_remove(k).1;
        }
        self.next = if self.ooo.is_empty() {
            self.freed
        } else {
            u64::MAX
        };
        true
    }
}

#[cfg(test)]
mod tests {
    use super::Reclaim;

    #[test]
    fn reclaims_up_to_the_oldest_held_message() {
        let mut r = Reclaim::new(8);
        assert!(r.complete(8, 16));
        // 16..24 held; 24..40 and 40..48 completed first.
        assert!(!r.complete(40, 48));
        assert!(!r.complete(24, 40));
        assert_eq!((r.freed(), r.waiting()), (16, 2));
        assert!(r.complete(16, 24));
        assert_eq!((r.freed(), r.waiting()), (48, 0));
    }
}
