//! The lanes: the shared-memory rings behind the shm driver and the in-process job (one
//! piece of code for both; only where the memory comes from differs, see
//! [`super::Region`]). This file holds a lane's two ends (`Tx`, `Rx`); the port that
//! owns them is [`super::port`], the segment they live in [`super::fabric`].
//!
//! # Design (kept after measurement)
//! Measured against one multi-producer ring per receiving channel (senders reserve space
//! with a CAS on a shared index, then mark their record ready) with
//! `cargo run --release -p skifch-benches --bin ringcmp` (medians of 3 runs, msg/s, lanes
//! through the whole `Channel` API vs a bare ring):
//!
//! | size | senders | lanes | multi-producer ring | lanes / mpsc |
//! | ---: | ---: | ---: | ---: | ---: |
//! | 8 B | 1 | 34.2 M | 53.6 M | 0.81 |
//! | 64 B | 1 | 38.2 M | 39.1 M | 0.96 |
//! | 2 KiB | 1 | 6.3 M | 6.5 M | 0.91 |
//! | 8 B | 3 | 40.7 M | 42.7 M | 0.95 |
//! | 64 B | 3 | 29.9 M | 27.4 M | 1.08 |
//! | 2 KiB | 3 | 3.6 M | 2.0 M | 1.82 |
//!
//! Lanes were kept: equal within noise for one sender from 64 B up, clearly better with
//! several senders (no reservation index shared by all senders), no atomic read-modify-write
//! on the send path, and a sender that dies mid-message blocks only its own lane (in the
//! multi-producer ring it blocks the receiver for good). Details: `benches/README.md`.
//! One **single-producer lane per (sending channel, receiving channel) pair**. A lane is a
//! byte ring of `lane_bytes` (a power of two). Positions are monotonic byte counts (`u64`,
//! never wrap in practice), always multiples of 8. A message is a record: an 8-byte header
//! (payload length, a present bit and a tag of the record's position) followed by
//! the payload padded to 8 bytes. Records are packed, not slotted: an 8-byte message takes
//! 16 bytes, four to a cache line, so short messages cost fewer lines than in a slotted
//! ring. A record with a payload above 2 KiB is padded at its end (up to 56 bytes; layout
//! version 4, [`super::layout::record_size`]; both sides derive it from the length and the
//! position) so that the next header is the last word of a line: in a stream of large
//! messages every payload starts a cache line. A payload that runs past the ring end
//! continues at its start and is handed out as two segments, never copied.
//!
//! * **The header is the flag** (layout version 2; 3 made its check word a position tag).
//!   The consumer polls the word where the
//!   next header goes: zero means "nothing yet". **Free space is zero**: a lane starts
//!   zeroed, and the consumer zeroes what it gives back before it publishes the tail past
//!   it (`Rx::publish`; a reservation published shorter than written zeroes the rest,
//!   `RingPort::publish`), so the word after a record (the producer always keeps these
//!   [`super::layout::TERM`] bytes free) reads zero until the next header is stored,
//!   never a stale word of an earlier lap. The producer writes the payload, then the
//!   header with a release store, and nothing else: it used to zero the next header word
//!   itself, a second store into the line the consumer is polling on every message, which
//!   cost raw channels 2× in message rate at 64 B, 3-4× from 256 B to 4 KiB, and 8-12 % of
//!   the 8-byte ping-pong (`docs/results-2026-11-30-lane-call/`). The consumer zeroes
//!   each byte once, in the lines it has just read, off the producer's path. There is no
//!   shared head index on the message path: a message costs the lines it occupies and
//!   nothing else, and the receiver notices it with one cache-line transfer (the shared
//!   `head` is written only when a sending port closes, so that a port reopened later
//!   continues there).
//! * **Send** (no atomic read-modify-write, no fence): the destination of the previous
//!   send is recognised with one compare (a new one is range-checked once, off the hot
//!   path); one word of the receiving channel says open, closed, never opened or lost
//!   ([`crate::jobctl::JobCtl::mark_lost`] marks a lost rank's channels); check room against a *cached*
//!   tail, re-read the tail (acquire) only when the cache says full; write the record
//!   straight into the receiver's lane; then, if the receiving channel has a sleeper, bump
//!   its futex word and wake it.
//! * **Reserve / publish** ([`skifch::Port::reserve`]): the room of a record at the lane's
//!   head is handed to the sender to write in place (only if its payload does not wrap the
//!   lane end); publishing writes the header as a send does (`Tx::publish_record`), with
//!   the length actually written. Meanwhile the port refuses its other sends to that lane.
//! * **Recv**: stay on the lane that delivered last (up to [`super::port::BURST`] messages, for
//!   fairness), else scan the lanes named in the channel's summary bitmap. Idle lanes'
//!   header words stay shared in the receiver's cache, so scanning them costs L1 hits.
//! * **RecvComp** in any order: per lane, memory is reclaimed up to the oldest message
//!   still held; the tail is published lazily (every `lane_bytes/16` bytes, or when the
//!   lane is found empty), so the producer's line is not pulled away on every message.
//! * **Wake-up** without a per-message fence: a receiver that goes to sleep announces
//!   itself, then issues the heavy side of an asymmetric barrier (`membarrier`), so the
//!   sender's light side is a compiler fence ([`crate::sys`]). The futex sleep is also bounded
//!   (250 ms) so that a lost peer or a missed wake-up can never hang a waiter.
//!
//! # Trust
//! Everything in the segment can be written by another process. Indices and record
//! headers are read with atomics/volatile loads and validated ([`skifch::Error::Corrupt`] on any
//! violation: the port then refuses further use); addresses are computed only from the
//! trusted [`super::Layout`] copy made at attach time. Payload bytes are handed out as `&[u8]`
//! only for ranges that the lane protocol gives to the receiver (`tail..head`), which a
//! conforming sender does not write until the receiver publishes its tail past them.
#![allow(unsafe_code)] // the lane's bytes and words in shared memory

use std::io::IoSlice;
use std::ptr::NonNull;

use skifch::driver::{RawMessage, RawSeg, Reclaim, Token};
use skifch::mem::{copy_mem, copy_small};
use skifch::{NetAddr, Result};

use super::layout::{decode_rec, encode_rec, REC_HDR, TERM};
use crate::sync::{self, AtomicU32, AtomicU64, Ordering};
use crate::sys;

/// A pointer to an atomic in the segment, kept by a port so the hot paths do no layout
/// arithmetic. Valid while the port lives: it holds an `Arc` to the fabric's driver.
#[derive(Clone, Copy)]
pub(super) struct Shared<T>(NonNull<T>);

impl<T> Shared<T> {
    pub(super) fn new(r: &T) -> Self {
        Shared(NonNull::from(r))
    }
    #[inline(always)]
    pub(super) fn get(&self) -> &T {
        // SAFETY: created from a reference into the fabric's region, which outlives every
        // port (each port holds an Arc to its driver, which holds the fabric).
        unsafe { self.0.as_ref() }
    }
}

/// Producer state of one lane (trusted, process-private).
pub(super) struct Tx {
    /// The lane's bytes and shared tail; the receiving channel's state, sleeper count and
    /// futex word.
    pub(super) data: NonNull<u8>,
    pub(super) tail: Shared<AtomicU64>,
    pub(super) state: Shared<AtomicU32>,
    pub(super) sleepers: Shared<AtomicU32>,
    pub(super) seq: Shared<AtomicU32>,
    pub(super) head: u64,
    /// Last value stored to the shared head (only on close).
    pub(super) published: u64,
    /// The last tail read (cached) `+ cap - TERM`: a record may end at or below this (the
    /// terminator word after it stays free).
    pub(super) limit: u64,
    /// This port has set its bit in the receiver's summary bitmap.
    pub(super) announced: bool,
    /// That bit: the summary word and the mask.
    pub(super) summary: Shared<AtomicU64>,
    pub(super) summary_bit: u64,
}

impl Tx {
    /// Once per (port, destination): makes the lane visible to the receiver's scan before
    /// its first record is published.
    #[cold]
    fn announce(&mut self) {
        self.summary
            .get()
            .fetch_or(self.summary_bit, Ordering::AcqRel);
        self.announced = true;
    }

    /// Writes a record of the first `n` bytes of `iov` at `head`, ending at `end` (`head +`
    /// [`record_size`]`(head, n)`, room checked by the caller against the validated tail)
    /// and publishes it; then wakes a sleeping receiver. The one place a record is written
    /// (and [`Tx::put_word`], the same from a header word and a payload).
    #[inline(always)]
    pub(super) fn put(&mut self, cap: u64, asym: bool, iov: &[IoSlice<'_>], n: usize, end: u64) {
        let data = self.data.as_ptr();
        let head = self.head;
        let off = head + REC_HDR as u64;
        // SAFETY: `head..end+TERM` is free space of this lane (the caller's check against
        // the validated tail), owned by this producer until its header is stored; a payload
        // that does not reach the lane end is one copy (the common short message).
        unsafe {
            let at = (off & (cap - 1)) as usize;
            match iov {
                [one] if at + n <= cap as usize => copy_small(one.as_ptr(), data.add(at), n),
                // A header and a payload, whole, before the lane end: two copies, no loop
                // (an 8-byte GASNet Medium or MPI eager send: 206 -> ~150 instructions).
                [a, b] if at + n <= cap as usize && n == a.len() + b.len() => {
                    copy_small(a.as_ptr(), data.add(at), a.len());
                    copy_small(b.as_ptr(), data.add(at + a.len()), b.len());
                }
                _ => copy_in(data, cap, off, iov, n),
            }
            #[cfg(loom)]
            {
                let first = n.min(cap as usize - at);
                sync::payload_written(data.add(at), first);
                sync::payload_written(data, n - first);
            }
        }
        self.publish_record(asym, cap, n, end);
    }

    /// [`Tx::put`] of the message `word` then `data` (`8 + data.len()` bytes, room checked
    /// by the caller up to `end`), when the record does not wrap the lane end: `false`
    /// (nothing written) when it would.
    #[inline(always)]
    pub(super) fn put_word(
        &mut self,
        cap: u64,
        asym: bool,
        word: u64,
        data: &[u8],
        end: u64,
    ) -> bool {
        let at = ((self.head + REC_HDR as u64) & (cap - 1)) as usize;
        let n = 8 + data.len();
        if at + n > cap as usize {
            return false;
        }
        // SAFETY: as in `put`: `head..end+TERM` is free space of this lane owned by this
        // producer until its header is stored, and `at..at+n` lies within the lane.
        unsafe {
            let p = self.data.as_ptr().add(at);
            p.cast::<u64>().write_unaligned(word.to_le());
            copy_small(data.as_ptr(), p.add(8), data.len());
            #[cfg(loom)]
            sync::payload_written(p, n);
        }
        self.publish_record(asym, cap, n, end);
        true
    }

    /// Publishes the record of `n` payload bytes at `head` (already written), ending at
    /// `end`; then wakes a sleeping receiver. For [`Tx::put`] and for a reservation
    /// ([`skifch::Port::publish`]), whose payload the sender wrote in place.
    #[inline(always)]
    pub(super) fn publish_record(&mut self, asym: bool, cap: u64, n: usize, end: u64) {
        if !self.announced {
            self.announce();
        }
        let head = self.head;
        // Payload, then this record's flag. The word after the record (the next flag) is
        // free space, which the consumer zeroed before giving it back (`Rx::publish`).
        header_word(self.data, cap, head).store(encode_rec(n as u32, head), Ordering::Release);
        self.head = end;
        sys::light_barrier(asym);
        if self.sleepers.get().load(Ordering::Relaxed) != 0 {
            self.wake();
        }
    }

    #[cold]
    fn wake(&self) {
        self.seq.get().fetch_add(1, Ordering::Release);
        sys::futex_wake_all(self.seq.get());
    }
}

/// Consumer state of one lane (trusted, process-private).
#[repr(align(64))] // a shift, not a multiply, finds a lane's record (hot on every receive)
pub(super) struct Rx {
    pub(super) data: NonNull<u8>,
    pub(super) tail: Shared<AtomicU64>,
    /// End of the last message handed out.
    pub(super) consumed: u64,
    /// Completions in any order; everything below `done.freed()` is given back.
    pub(super) done: Reclaim,
    /// Last value stored to the shared tail.
    pub(super) published: u64,
    /// `published + cap / 16`: completing up to here publishes the tail (lazy publication).
    pub(super) publish_at: u64,
    pub(super) src: NetAddr,
}

/// The header word of position `pos` (8-aligned, any lap) in the lane at `data` of `cap`
/// bytes: the one place both sides of the lane protocol reach a record header.
#[inline(always)]
pub(super) fn header_word<'a>(data: NonNull<u8>, cap: u64, pos: u64) -> &'a AtomicU64 {
    debug_assert!(pos.is_multiple_of(8) && cap.is_power_of_two());
    // SAFETY: `data` is a live lane of `cap` bytes (a `Tx`/`Rx` pointer, kept alive like
    // every `Shared`); lanes start on a page and `pos & (cap - 1)` is 8-aligned below `cap`;
    // header words are accessed atomically by every process.
    unsafe { sync::u64_at(data.as_ptr().add((pos & (cap - 1)) as usize)) }
}

impl Rx {
    /// Delivers the record whose non-zero header `word` was just read at this lane's
    /// consumer position into `out`: validates it, advances the lane. `i` is the lane's
    /// index (for the token), `cap` its size. Written once for the fast path and the scan.
    #[inline(always)]
    pub(super) fn deliver(
        &mut self,
        i: usize,
        cap: u64,
        word: u64,
        out: &mut RawMessage,
    ) -> Result<()> {
        let pos = self.consumed;
        // A conforming producer's records end at or below `freed + cap - TERM` (space still
        // held by guards is below `pos`; the terminator word stays free): the bound that
        // keeps held messages intact.
        let (len, rec) = decode_rec(word, pos, cap - TERM as u64 - (pos - self.done.freed()))?;
        let data = self.data.as_ptr();
        let start = ((pos + REC_HDR as u64) & (cap - 1)) as usize;
        if start + len <= cap as usize {
            out.segs[0] = RawSeg {
                // SAFETY: `start + len <= cap`: inside the lane.
                ptr: unsafe { data.add(start) },
                len,
            };
            out.count = 1;
        } else {
            // Rare: the hint keeps the compiler from computing both segments of every message.
            std::hint::cold_path();
            let first = cap as usize - start;
            out.segs[0] = RawSeg {
                // SAFETY: `start < cap`: the first segment is `start..cap`, the rest
                // starts the lane.
                ptr: unsafe { data.add(start) },
                len: first,
            };
            out.segs[1] = RawSeg {
                ptr: data,
                len: len - first,
            };
            out.count = 2;
        }
        #[cfg(loom)]
        for s in &out.segs[..out.count as usize] {
            sync::payload_seen(s.ptr, s.len);
        }
        self.consumed = pos + rec;
        out.len = len;
        out.src = self.src;
        // Token: a = lane << 32 | record length, b = record start.
        out.token = Token {
            a: (i as u64) << 32 | rec,
            b: pos,
        };
        Ok(())
    }

    /// Gives back the space of the messages completed since the last call: zeroes it
    /// (free space reads "nothing yet", see the module docs), then stores the shared tail
    /// (release: the producer that reads it also sees the zeros). The next lazy
    /// publication is due `cap / 16` bytes later.
    #[inline]
    pub(super) fn publish(&mut self, cap: u64) {
        let freed = self.done.freed();
        // SAFETY: `published..freed` (at most a lap) of this live lane is consumed and
        // completed, not yet given back: the producer does not write it until the store below.
        unsafe { zero(self.data, cap, self.published, freed) };
        self.tail.get().store(freed, Ordering::Release);
        self.published = freed;
        self.publish_at = freed + cap / 16;
    }
}

/// Zeroes positions `from..to` of the lane at `data` of `cap` bytes, wrapping at the end:
/// the consumer's given-back space before it publishes the tail past it ([`Rx::publish`]),
/// the producer's free space past a reservation published shorter than written.
///
/// # Safety
/// `data` is a live lane of `cap` bytes (a power of two); `from <= to <= from + cap`; the
/// positions belong to the caller under the lane protocol, so no process writes them
/// meanwhile.
#[inline]
pub(super) unsafe fn zero(data: NonNull<u8>, cap: u64, from: u64, to: u64) {
    debug_assert!(from <= to && to - from <= cap);
    let at = (from & (cap - 1)) as usize;
    let n = (to - from) as usize;
    let first = n.min(cap as usize - at);
    // SAFETY: `at + first <= cap` and `n - first <= cap - first`: both ranges lie in the
    // lane, and are the caller's (the contract above).
    unsafe {
        std::ptr::write_bytes(data.as_ptr().add(at), 0, first);
        #[cfg(loom)]
        sync::payload_written(data.as_ptr().add(at), first);
        if n > first {
            // Rare: the range wraps the lane end (no second `memset` call on every
            // publication, which is on the receive path when a lane is found empty).
            std::hint::cold_path();
            std::ptr::write_bytes(data.as_ptr(), 0, n - first);
            #[cfg(loom)]
            sync::payload_written(data.as_ptr(), n - first);
        }
    }
}

/// Copies `n` bytes of `iov` into the ring at absolute offset `off`, wrapping at the end.
///
/// # Safety
/// `data` points to a lane of `cap` bytes (power of two) whose range `off..off+n` (mod cap)
/// belongs to the producer; the iovec holds at least `n` bytes.
#[inline(always)]
unsafe fn copy_in(data: *mut u8, cap: u64, mut off: u64, iov: &[IoSlice<'_>], mut n: usize) {
    for s in iov {
        if n == 0 {
            break;
        }
        let take = s.len().min(n);
        let pos = (off & (cap - 1)) as usize;
        let first = take.min(cap as usize - pos);
        // SAFETY: `pos + first <= cap` and `take - first < cap`; the ranges are the
        // producer's (caller's contract) and cannot overlap the caller's iovec, which is
        // ordinary memory outside the lane.
        unsafe {
            copy_small(s.as_ptr(), data.add(pos), first);
            if take > first {
                copy_mem(s.as_ptr().add(first), data, take - first);
            }
        }
        off += take as u64;
        n -= take;
    }
}
