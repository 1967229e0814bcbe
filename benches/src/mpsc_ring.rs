//! Ring design (A), measured against the lane design of [`skifch_drivers::shm::lane`] by `ringcmp`:
//! **one multi-producer ring per receiving channel**.
//!
//! The record format is the lanes' (8-byte header, payload padded to 8 and, above 2 KiB,
//! to the next line, see [`skifch_drivers::shm::layout::record_size`]; a payload may wrap the ring
//! end and is then handed out as two segments); what differs is how producers share the
//! ring:
//!
//! * **Send**: reserve `record_size(at, len)` bytes by a compare-and-swap on the shared
//!   reservation index `reserve` (a CAS, not a `fetch_add`, so that a full ring fails with
//!   "full" and consumes nothing — the non-buffering send of SkifCh); check room against a
//!   *cached* copy of the consumer's `tail`, re-read (acquire) only when it says full; copy
//!   the payload; then mark the record ready with a release store of its header.
//! * **Recv**: records are taken in reservation order: read the header at the consumer's
//!   position (acquire); zero means "not ready yet" (nothing written, or its producer is
//!   still copying — a later record that is ready must wait). A ready header is never zero:
//!   its low half holds the inverted length.
//! * **Completion** (in order; a [`Record`] borrows the receiver): the consumed range is
//!   **zeroed** and then the tail is published (release), lazily, every `cap/16` bytes or when
//!   the ring is found empty, as the lanes do. The zeroing is the price of ready marks in
//!   a byte ring: a future header may land anywhere in old payload, so stale bytes must not
//!   look ready. (Lanes need no zeroing: their `head` index says what is valid.)
//!
//! What this design costs compared to lanes: one contended atomic RMW per send on a line
//! every producer writes, plus the zeroing; what it saves: the receiver polls one place
//! instead of scanning one lane per sender, and memory is `cap` per receiver instead of
//! `cap` per (sender, receiver) pair. A producer that dies between its reservation and its
//! ready mark blocks the ring for good — a property lanes do not have.
//!
//! ```
//! use skifch_benches::mpsc_ring::ring;
//! let (tx, mut rx) = ring(1 << 12).unwrap();
//! let mut t2 = tx.clone();
//! std::thread::spawn(move || while t2.try_send(b"hello").is_err() {}).join().unwrap();
//! let rec = rx.try_recv().unwrap().expect("a ready record");
//! assert_eq!(rec.to_vec(), b"hello");
//! drop(tx);
//! ```
#![allow(unsafe_code)] // the shared buffer: raw copies in, borrowed slices out

use std::alloc;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use skifch_drivers::shm::layout::{
    decode_rec, encode_rec, max_message, record_size, MAX_LANE, MIN_LANE, REC_HDR, TERM,
};

use crate::{BenchError, Result};

/// XORed into a ready header: its low half (the length) becomes `!len`, never 0 for
/// lengths that fit a ring, so a ready header is never the zero of a free slot.
const READY: u64 = 0xFFFF_FFFF;

/// Keeps a hot index on its own cache lines (128: adjacent-line prefetch pairs lines).
#[repr(align(128))]
struct CachePadded<T>(T);

struct Shared {
    /// Next byte to reserve (absolute byte count, multiple of 8); producers advance it by CAS.
    reserve: CachePadded<AtomicU64>,
    /// Everything below is consumed and zeroed: producers may fill up to `tail + cap`.
    tail: CachePadded<AtomicU64>,
    buf: NonNull<u8>,
    cap: u64,
    /// The largest message: the lanes' rule without their terminator word (this ring has
    /// none), kept rather than computed on every send.
    max: usize,
    layout: alloc::Layout,
}

// SAFETY: `buf` is a heap allocation owned by `Shared`; all shared access to it follows the
// protocol above (a byte range has one writer at a time, handed over with release/acquire).
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: allocated in `ring` with `self.layout`; the last Arc is going away.
        unsafe { alloc::dealloc(self.buf.as_ptr(), self.layout) }
    }
}

impl Shared {
    /// The header word of the record at absolute offset `pos` (a multiple of 8).
    #[inline(always)]
    fn header(&self, pos: u64) -> &AtomicU64 {
        debug_assert!(pos & 7 == 0);
        let off = (pos & (self.cap - 1)) as usize;
        // SAFETY: `off + 8 <= cap` (off is 8-aligned and cap a multiple of 8), the buffer is
        // 4096-aligned, so the word is in bounds and aligned; header words are accessed
        // atomically whenever another thread may access them concurrently.
        unsafe { &*(self.buf.as_ptr().add(off) as *const AtomicU64) }
    }

    /// Copies `src` into the ring at absolute offset `pos`, wrapping at the end.
    ///
    /// # Safety
    /// `pos..pos + src.len()` belongs to the caller (reserved and free).
    #[inline(always)]
    unsafe fn copy_in(&self, pos: u64, src: &[u8]) {
        let off = (pos & (self.cap - 1)) as usize;
        let first = src.len().min(self.cap as usize - off);
        // SAFETY: `off + first <= cap`, `src.len() - first < cap`; the range is the caller's
        // (contract) and cannot overlap `src`, which lies outside the ring.
        unsafe {
            ptr::copy_nonoverlapping(src.as_ptr(), self.buf.as_ptr().add(off), first);
            ptr::copy_nonoverlapping(
                src.as_ptr().add(first),
                self.buf.as_ptr(),
                src.len() - first,
            );
        }
    }

    /// Zeroes `from..to` (absolute offsets, at most `cap` bytes apart), wrapping at the end.
    ///
    /// # Safety
    /// The range belongs to the consumer: consumed, and not yet published as free.
    unsafe fn zero(&self, from: u64, to: u64) {
        let n = (to - from) as usize;
        debug_assert!(n as u64 <= self.cap);
        let off = (from & (self.cap - 1)) as usize;
        let first = n.min(self.cap as usize - off);
        // SAFETY: in bounds as in `copy_in`; exclusive by the caller's contract.
        unsafe {
            ptr::write_bytes(self.buf.as_ptr().add(off), 0, first);
            ptr::write_bytes(self.buf.as_ptr(), 0, n - first);
        }
    }
}

/// Creates a ring of `cap` bytes (a power of two in the lanes' range): one [`Sender`]
/// (clone it for more producers) and the [`Receiver`].
pub fn ring(cap: usize) -> Result<(Sender, Receiver)> {
    if !cap.is_power_of_two() || !(MIN_LANE..=MAX_LANE).contains(&cap) {
        return Err(BenchError::Setup(format!(
            "ring of {cap} bytes: must be a power of two in {MIN_LANE}..={MAX_LANE}"
        )));
    }
    let layout = alloc::Layout::from_size_align(cap, 4096)
        .map_err(|_| BenchError::Setup(format!("cannot allocate a {cap}-byte ring")))?;
    // SAFETY: the layout has a non-zero size. Zeroed: a zero header means "not ready".
    let buf = NonNull::new(unsafe { alloc::alloc_zeroed(layout) }).ok_or_else(|| {
        BenchError::io(
            "allocating the ring",
            std::io::ErrorKind::OutOfMemory.into(),
        )
    })?;
    let sh = Arc::new(Shared {
        reserve: CachePadded(AtomicU64::new(0)),
        tail: CachePadded(AtomicU64::new(0)),
        buf,
        cap: cap as u64,
        max: max_message(cap as u64 + TERM as u64),
        layout,
    });
    Ok((
        Sender {
            sh: sh.clone(),
            cached_tail: 0,
        },
        Receiver {
            sh,
            consumed: 0,
            published: 0,
        },
    ))
}

/// Why a send did not happen; nothing was consumed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrySendError {
    /// No room now: retry later.
    Full,
    /// The message can never fit this ring.
    TooLarge { len: usize, max: usize },
}

/// A producer handle (one per sending thread; clones share the ring).
pub struct Sender {
    sh: Arc<Shared>,
    /// Last tail this producer read (acquire); never above the real one.
    cached_tail: u64,
}

impl Clone for Sender {
    fn clone(&self) -> Self {
        Sender {
            sh: self.sh.clone(),
            cached_tail: self.cached_tail,
        }
    }
}

impl Sender {
    /// Sends `msg` as one record, or fails without consuming anything.
    #[inline]
    pub fn try_send(&mut self, msg: &[u8]) -> Result<(), TrySendError> {
        let sh = &*self.sh;
        let max = sh.max;
        if msg.len() > max {
            return Err(TrySendError::TooLarge {
                len: msg.len(),
                max,
            });
        }
        let mut r = sh.reserve.0.load(Ordering::Relaxed);
        let mut need;
        loop {
            need = record_size(r, msg.len());
            // (No subtraction: a stale `r` may lie below a fresher tail.)
            if r + need > self.cached_tail + sh.cap {
                self.cached_tail = sh.tail.0.load(Ordering::Acquire);
                if r + need > self.cached_tail + sh.cap {
                    return Err(TrySendError::Full);
                }
            }
            // Relaxed is enough: the CAS only makes the range exclusive among producers;
            // that it is free comes from the acquire load of `tail`.
            match sh.reserve.0.compare_exchange_weak(
                r,
                r + need,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(v) => r = v,
            }
        }
        // SAFETY: `r..r+need` is this producer's alone (the successful CAS) and free:
        // `r + need <= cached_tail + cap`, and the consumer zeroed and left everything below
        // `cached_tail` before its release store, which this thread read with acquire.
        unsafe { sh.copy_in(r + REC_HDR as u64, msg) };
        sh.header(r)
            .store(encode_rec(msg.len() as u32, r) ^ READY, Ordering::Release);
        Ok(())
    }
}

/// The consumer handle.
pub struct Receiver {
    sh: Arc<Shared>,
    /// Start of the next record.
    consumed: u64,
    /// Last value stored to `tail`.
    published: u64,
}

impl Receiver {
    /// The next record if it is ready, in reservation order. [`BenchError::Skifch`] with
    /// `Corrupt` if a header fails its check (a bug: this ring is in-process).
    #[inline]
    pub fn try_recv(&mut self) -> Result<Option<Record<'_>>> {
        let sh = &*self.sh;
        let pos = self.consumed;
        let word = sh.header(pos).load(Ordering::Acquire);
        if word == 0 {
            if self.published != self.consumed {
                self.publish();
            }
            return Ok(None);
        }
        let (len, size) = decode_rec(word ^ READY, pos, self.published + sh.cap - pos)?;
        let start = ((pos + REC_HDR as u64) & (sh.cap - 1)) as usize;
        let first = len.min(sh.cap as usize - start);
        // The payload `pos+8 .. pos+8+len` was written by its producer before the release
        // store of the header read above with acquire; nobody writes it again until the
        // tail passes it, which needs this record dropped first (it borrows `self`).
        // SAFETY: as above; `decode_rec` checked that the record lies within `cap` bytes of
        // the tail.
        let segs = unsafe {
            [
                std::slice::from_raw_parts(sh.buf.as_ptr().add(start), first),
                std::slice::from_raw_parts(sh.buf.as_ptr(), len - first),
            ]
        };
        Ok(Some(Record {
            end: pos + size,
            segs,
            rx: self,
        }))
    }

    fn publish(&mut self) {
        // SAFETY: `published..consumed` is consumed (its records dropped) and not yet free.
        unsafe { self.sh.zero(self.published, self.consumed) };
        self.sh.tail.0.store(self.consumed, Ordering::Release);
        self.published = self.consumed;
    }
}

/// A received record, read in place; dropping it completes it.
pub struct Record<'a> {
    segs: [&'a [u8]; 2],
    end: u64,
    rx: &'a mut Receiver,
}

impl Record<'_> {
    /// Payload length.
    pub fn len(&self) -> usize {
        self.segs[0].len() + self.segs[1].len()
    }
    /// `true` for an empty message.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The payload: one segment, or two when it wraps the ring end (the second may be empty).
    pub fn segments(&self) -> [&[u8]; 2] {
        self.segs
    }
    /// The payload copied out.
    pub fn to_vec(&self) -> Vec<u8> {
        [self.segs[0], self.segs[1]].concat()
    }
}

impl Drop for Record<'_> {
    fn drop(&mut self) {
        let rx = &mut *self.rx;
        rx.consumed = self.end;
        if rx.consumed - rx.published >= rx.sh.cap / 16 {
            rx.publish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::pattern;

    #[test]
    fn wraps_fills_and_refuses() {
        let (mut tx, mut rx) = ring(1 << 10).unwrap();
        assert_eq!(
            tx.try_send(&[0; 1024]),
            Err(TrySendError::TooLarge {
                len: 1024,
                max: 1016
            })
        );
        let p = pattern(1016);
        // Odd sizes walk the records across the ring end many times.
        let mut sent = std::collections::VecDeque::new();
        let mut wrapped = false;
        for i in 0..2000usize {
            let len = (i * 37) % 300;
            loop {
                match tx.try_send(&p[i % 7..i % 7 + len]) {
                    Ok(()) => break,
                    Err(TrySendError::Full) => {
                        assert!(!sent.is_empty(), "full while empty");
                        let want: (usize, usize) = sent.pop_front().unwrap();
                        let r = rx.try_recv().unwrap().expect("sent record is ready");
                        wrapped |= !r.segments()[1].is_empty();
                        assert_eq!(r.to_vec(), &p[want.0..want.0 + want.1]);
                    }
                    Err(e) => panic!("{e:?}"),
                }
            }
            sent.push_back((i % 7, len));
        }
        while let Some(want) = sent.pop_front() {
            let r = rx.try_recv().unwrap().unwrap();
            assert_eq!(r.to_vec(), &p[want.0..want.0 + want.1]);
        }
        assert!(rx.try_recv().unwrap().is_none());
        assert!(wrapped, "no record wrapped the ring end");
        // Everything was published back: a maximal record fits again.
        tx.try_send(&p).unwrap();
        assert_eq!(rx.try_recv().unwrap().unwrap().len(), 1016);
    }

    /// Records above 2 KiB are padded to the next line (the lanes' `record_size`): sizes
    /// on both sides of that, through a ring they fill and wrap, and the largest message.
    #[test]
    fn padded_records_wrap_and_fill() {
        let (mut tx, mut rx) = ring(16 << 10).unwrap();
        let max = (16 << 10) - 8 - 56;
        assert_eq!(
            tx.try_send(&vec![0; max + 1]),
            Err(TrySendError::TooLarge { len: max + 1, max })
        );
        let p = pattern(max);
        let mut sent = std::collections::VecDeque::new();
        for i in 0..500usize {
            let len = (i * 373) % 6000;
            while let Err(e) = tx.try_send(&p[i % 7..i % 7 + len]) {
                assert_eq!(e, TrySendError::Full);
                let want: (usize, usize) = sent.pop_front().expect("full while empty");
                let r = rx.try_recv().unwrap().expect("sent record is ready");
                assert_eq!(r.to_vec(), &p[want.0..want.0 + want.1]);
            }
            sent.push_back((i % 7, len));
        }
        while let Some(want) = sent.pop_front() {
            let r = rx.try_recv().unwrap().unwrap();
            assert_eq!(r.to_vec(), &p[want.0..want.0 + want.1]);
        }
        assert!(rx.try_recv().unwrap().is_none());
        tx.try_send(&p).unwrap();
        assert_eq!(rx.try_recv().unwrap().unwrap().len(), max);
    }

    #[test]
    fn stale_payload_never_looks_ready() {
        // Payloads of all-ones bytes, then positions where a header lands inside old payload.
        let (mut tx, mut rx) = ring(1 << 10).unwrap();
        let ones = [0xFFu8; 512];
        for len in [500usize, 8, 24, 504, 3, 100, 512, 7, 256] {
            let m = &ones[..len];
            tx.try_send(m).unwrap();
            let r = rx.try_recv().unwrap().unwrap();
            assert_eq!(r.len(), m.len());
            drop(r);
            assert!(rx.try_recv().unwrap().is_none(), "after len {len}");
        }
    }

    #[test]
    fn many_producers_keep_per_producer_order_and_data() {
        const PRODUCERS: u64 = 3;
        const PER: u64 = if cfg!(miri) { 200 } else { 20_000 };
        let (tx, mut rx) = ring(1 << 12).unwrap();
        let handles: Vec<_> = (0..PRODUCERS)
            .map(|id| {
                let mut tx = tx.clone();
                std::thread::spawn(move || {
                    for seq in 0..PER {
                        let len = 16 + (seq % 50) as usize;
                        let mut m = vec![(id * 31 + seq) as u8; len];
                        m[..8].copy_from_slice(&(id << 48 | seq).to_le_bytes());
                        while tx.try_send(&m) == Err(TrySendError::Full) {
                            std::thread::yield_now(); // 4 threads may share 2 CPUs
                        }
                    }
                })
            })
            .collect();
        drop(tx);
        let mut next = [0u64; PRODUCERS as usize];
        let mut got = 0;
        while got < PRODUCERS * PER {
            let Some(r) = rx.try_recv().unwrap() else {
                std::thread::yield_now();
                continue;
            };
            let m = r.to_vec();
            let w = u64::from_le_bytes(m[..8].try_into().unwrap());
            let (id, seq) = ((w >> 48) as usize, w & 0xFFFF_FFFF_FFFF);
            assert_eq!(seq, next[id], "producer {id} out of order");
            assert_eq!(m.len(), 16 + (seq % 50) as usize);
            assert!(m[8..].iter().all(|&b| b == (id as u64 * 31 + seq) as u8));
            next[id] += 1;
            got += 1;
        }
        for h in handles {
            h.join().unwrap();
        }
        assert!(rx.try_recv().unwrap().is_none());
    }
}
