//! The message-based path: put, get and atomics as active messages of
//! [`skifch::proto`] on this library's endpoint (port 2), executed by the target PE in its
//! own address space. Used when the driver offers no remote memory access, when a PE
//! cannot open the others' memory, or with `SKIFSHMEM_RMA=off`.
//!
//! ## Handlers (ids 1–5)
//! | id | message | the target |
//! | --- | --- | --- |
//! | [`H_PUT`] | one-way; `arg` segment, `args` \[offset\]; payload = data | copies it in; a long put lands straight in the segment ([`Landing::raw`]) |
//! | [`H_GET`] | request; `arg` segment, `args` \[offset, length\] | replies with the bytes (landing in the caller's buffer) |
//! | [`H_AMO`] | one-way or request; `arg` = op · width · segment, `args` \[offset, a, b\] | applies the atomic; a request gets the old value |
//! | [`H_FLUSH`] | request | replies (after every earlier message of this source) |
//! | [`H_PUTV`] | one-way; payload = records: a `u64` header (length bits 0–14, segment bit 15, offset bits 16–63) and the data | applies each put in order |
//!
//! Puts of up to 1 KiB are **aggregated** per target into one `H_PUTV` message of up
//! to 32 KiB (an 8-byte put is a 16-byte record; a put that starts where the previous
//! record of that target ends extends it, so a run of puts to consecutive addresses is
//! one record), sent when it is full, before any other message to that PE (so per-PE order
//! holds), and before this PE waits for anything (`quiet`, barriers, collectives, gets,
//! fetching atomics, `wait_until`/`test`, lock loops) so a peer waiting for one of them is
//! never stranded by a waiter here. A PE that puts and then computes without calling
//! the library holds its last small puts until its next call (remote completion is only
//! promised by `quiet` anyway).
//!
//! Every offset and length is checked against this PE's segment (a bad one is a handler
//! error, reported by this PE's next library call; nothing is written).
//!
//! ## Completion
//! Puts and non-fetching atomics are one-way. Messages of one source to one target are
//! handled in send order, so [`crate::World::quiet`] sends one `H_FLUSH` request to every
//! PE written since the last quiet and waits for the replies: each reply proves that all
//! earlier puts to that PE are applied. `fence` needs nothing.
//!
//! ## Progress
//! The target serves these messages inside its own library calls (every wait polls) or,
//! with `SKIFSHMEM_PROGRESS_THREAD=1`, on a [`skifch::proto::ProgressThread`].
#![allow(unsafe_code)] // applying requests to this PE's memory through raw pointers

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

use skifch::proto::{Am, Endpoint, Io, Landing, Phase};
use skifch::rma::{amo_at, Amo};
use skifch::{Error as ChError, Port};

use skifch::mem::{copy_mem, copy_put};
use skifch::wait::Backoff;

/// Handler id of a put.
pub const H_PUT: u8 = 1;
/// Handler id of a get.
pub const H_GET: u8 = 2;
/// Handler id of an atomic.
pub const H_AMO: u8 = 3;
/// Handler id of a flush (the completion of `quiet`).
pub const H_FLUSH: u8 = 4;
/// Handler id of aggregated small puts.
pub const H_PUTV: u8 = 5;

/// Bytes of a [`H_PUTV`] record header: one little-endian `u64` holding the length
/// (bits 0–14), the segment (bit 15) and the offset (bits 16–63).
pub(crate) const PUTV_REC: usize = 8;
/// Largest offset a [`H_PUTV`] record can name (larger ones go as [`H_PUT`]).
pub(crate) const PUTV_MAX_OFF: usize = (1 << 48) - 1;
/// Largest [`H_PUTV`] payload (a record's length field has 15 bits).
pub(crate) const PUTV_MAX: usize = 32 << 10;

/// A record header without its length, from `seg_off` = offset · 2 + segment (below
/// 2^49 when records can name the offset): where the record's data starts.
#[inline(always)]
fn putv_key(seg_off: usize) -> u64 {
    (seg_off as u64) << 15
}

/// One target PE's waiting small puts: an [`H_PUTV`] payload being built.
struct PeBuf {
    /// `cap` bytes once the first put to this PE is made (empty before).
    data: Box<[u8]>,
    len: usize,
    /// Where the last record's header is, and the key of the byte just after its data:
    /// a put starting there extends that record instead of adding one.
    last: usize,
    next: u64,
}

impl PeBuf {
    /// Adds a put of `n` bytes at `src` whose record header is `key | n`: extends the
    /// last record if the put starts where it ends, else starts a record. False if it
    /// does not fit (nothing done).
    ///
    /// # Safety
    /// `src..src + n` is readable.
    #[inline(always)]
    unsafe fn append(&mut self, key: u64, src: *const u8, n: usize) -> bool {
        // `data` is empty (and `next` is NO_NEXT) until the first put to this PE.
        let p = self.data.as_mut_ptr();
        if self.next == key && self.len + n <= self.data.len() {
            // A run of puts to consecutive addresses: one record.
            // SAFETY: `last + 8 <= len` and `len + n <= data.len()`.
            unsafe {
                let h = p.add(self.last).cast::<u64>();
                h.write_unaligned((u64::from_le(h.read_unaligned()) + n as u64).to_le());
                copy_put(src, p.add(self.len), n);
            }
            self.len += n;
        } else if self.len + PUTV_REC + n <= self.data.len() {
            // SAFETY: `len + 8 + n <= data.len()`.
            unsafe {
                let r = p.add(self.len);
                r.cast::<u64>().write_unaligned((key | n as u64).to_le());
                copy_put(src, r.add(PUTV_REC), n);
            }
            self.last = self.len;
            self.len += PUTV_REC + n;
        } else {
            return false;
        }
        self.next = key + ((n as u64) << 16);
        true
    }

    /// Sends the waiting payload, or allocates the buffer at the first put.
    #[cold]
    #[inline(never)]
    fn make_room<E>(
        &mut self,
        pe: u32,
        cap: usize,
        send: impl FnOnce(u32, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.data.is_empty() {
            self.data = vec![0u8; cap].into_boxed_slice();
            return Ok(());
        }
        let r = send(pe, &self.data[..self.len]);
        self.len = 0;
        self.next = NO_NEXT;
        r
    }
}

/// Small puts waiting per target PE, built into [`H_PUTV`] payloads of at most `cap`
/// bytes (see the module docs for when they are sent). One lock for all targets: a
/// test-and-set flag released by a plain store (cheaper than a `Mutex`'s two atomic
/// read-modify-writes on every put); it is held while a full payload is sent, never
/// while waiting for anything else.
pub(crate) struct Aggregator {
    busy: AtomicBool,
    bufs: UnsafeCell<Box<[PeBuf]>>,
    cap: usize,
    /// [`AGG_PUT`], or 0 when aggregation is off.
    max_len: usize,
}

// SAFETY: `bufs` is reached only while holding the `busy` flag (`Aggregator::lock`'s
// guard, `Aggregator::try_put`), so by one thread at a time (acquire on taking the flag,
// release on clearing it).
unsafe impl Sync for Aggregator {}

/// Exclusive access to the aggregation buffers ([`Aggregator::lock`]).
pub(crate) struct AggGuard<'a>(&'a Aggregator);

impl Drop for AggGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Release);
    }
}

/// Marker of "no record to extend": no key equals it (keys have length bits 0).
const NO_NEXT: u64 = u64::MAX;

impl Aggregator {
    /// Buffers for `n` PEs of `cap` bytes each (allocated at a PE's first small put;
    /// `cap` is capped at [`PUTV_MAX`]), for segments of at most `seg_len` bytes. Puts are
    /// aggregated only if the buffer holds the largest small put and records can name
    /// every offset.
    pub(crate) fn new(n: u32, cap: usize, seg_len: usize) -> Self {
        let cap = cap.min(PUTV_MAX);
        let bufs = (0..n)
            .map(|_| PeBuf {
                data: Box::default(),
                len: 0,
                last: 0,
                next: NO_NEXT,
            })
            .collect();
        let on = cap >= PUTV_REC + AGG_PUT && seg_len <= PUTV_MAX_OFF;
        Aggregator {
            busy: AtomicBool::new(false),
            bufs: UnsafeCell::new(bufs),
            cap,
            max_len: if on { AGG_PUT } else { 0 },
        }
    }

    /// Whether puts of `len` bytes are aggregated (`0 < len <= AGG_PUT`, when on).
    #[inline(always)]
    pub(crate) fn takes(&self, len: usize) -> bool {
        len.wrapping_sub(1) < self.max_len
    }

    /// A small put in the common case, without waiting or sending: if the lock is free
    /// and the put fits in `pe`'s buffer, adds it and returns true; else does nothing
    /// and returns false (the caller then takes [`Aggregator::lock`] and
    /// [`AggGuard::put`]). Kept free of calls and error values so that it compiles to a
    /// leaf.
    ///
    /// # Safety
    /// As [`AggGuard::put`].
    #[inline(always)]
    pub(crate) unsafe fn try_put(&self, pe: u32, seg_off: usize, src: *const u8, n: usize) -> bool {
        if self.busy.swap(true, Ordering::Acquire) {
            return false;
        }
        // SAFETY: the flag is held (taken above); `pe` is in range (the caller's
        // contract).
        let b = unsafe { (&mut *self.bufs.get()).get_unchecked_mut(pe as usize) };
        // SAFETY: forwards the caller's contract.
        let done = unsafe { b.append(putv_key(seg_off), src, n) };
        self.busy.store(false, Ordering::Release);
        done
    }

    #[inline(always)]
    pub(crate) fn lock(&self) -> AggGuard<'_> {
        if self.busy.swap(true, Ordering::Acquire) {
            self.contended();
        }
        AggGuard(self)
    }

    #[cold]
    fn contended(&self) {
        // Held only while one payload is sent: spin, then yield (never sleep long).
        let mut b = Backoff::with(100, u32::MAX, std::time::Duration::ZERO);
        loop {
            while self.busy.load(Ordering::Relaxed) {
                b.snooze();
            }
            if !self.busy.swap(true, Ordering::Acquire) {
                return;
            }
        }
    }
}

impl AggGuard<'_> {
    #[inline(always)]
    fn bufs(&mut self) -> &mut [PeBuf] {
        // SAFETY: this guard holds the flag: no other thread reaches `bufs` until it drops.
        unsafe { &mut *self.0.bufs.get() }
    }

    /// Adds a put of `n` bytes at `src` to `pe` at `seg_off` (offset · 2 + segment, the
    /// range in a segment given to [`Aggregator::new`]); sends the payload first through
    /// `send` if the put does not fit. A put to this PE itself finds no room and is
    /// refused by [`Aggregator::try_put`]: the callers copy those locally first.
    ///
    /// # Safety
    /// `src..src + n` is readable, `pe` is below the `n` given to [`Aggregator::new`] and
    /// [`Aggregator::takes`]`(n)` holds.
    #[inline(always)]
    pub(crate) unsafe fn put<E>(
        &mut self,
        pe: u32,
        seg_off: usize,
        src: *const u8,
        n: usize,
        send: impl FnOnce(u32, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let cap = self.0.cap;
        let key = putv_key(seg_off);
        // SAFETY: `pe` is in range (the caller's contract).
        let b = unsafe { self.bufs().get_unchecked_mut(pe as usize) };
        // SAFETY: forwards the caller's contract.
        if unsafe { b.append(key, src, n) } {
            return Ok(());
        }
        b.make_room(pe, cap, send)?;
        // SAFETY: forwards the caller's contract; the buffer is empty now and `takes`
        // gives `8 + n <= cap`.
        let done = unsafe { b.append(key, src, n) };
        debug_assert!(done);
        Ok(())
    }

    /// Sends the payload waiting for `pe`, if any, through `send`.
    pub(crate) fn flush<E>(
        &mut self,
        pe: u32,
        send: impl FnOnce(u32, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let b = &mut self.bufs()[pe as usize];
        if b.len == 0 {
            return Ok(());
        }
        b.make_room(pe, 0, send)
    }
}

/// Puts of at most this many bytes are aggregated (512 B and 1 KiB puts: ~2x the rate
/// of one message each, in paired runs; 2 KiB: no gain).
pub(crate) const AGG_PUT: usize = 1024;

/// Applies the records of an [`H_PUTV`] payload in order (each checked; a bad one
/// stops the rest).
fn apply_putv(segs: &Ctx, src: u32, p: &[u8]) -> Result<(), ChError> {
    let Some(s) = segs else {
        return Err(bad(src, "puts before this PE's segments exist".into()));
    };
    let mut i = 0;
    while i < p.len() {
        let Some(hb) = p.get(i..i + PUTV_REC) else {
            return Err(bad(src, "a truncated put record".into()));
        };
        let mut h = [0u8; 8];
        h.copy_from_slice(hb);
        let h = u64::from_le_bytes(h);
        let (len, seg, off) = ((h & 0x7FFF) as usize, (h >> 15 & 1) as usize, h >> 16);
        let at = i + PUTV_REC;
        let Some(data) = p.get(at..at + len) else {
            return Err(bad(src, "a put record longer than its message".into()));
        };
        let (base, size) = s[seg];
        if off + len as u64 > size as u64 {
            return Err(outside(src, len, off, seg));
        }
        let dst = (base + off as usize) as *mut u8;
        // SAFETY: checked above: dst..dst+len lies in this PE's live segment; `data` is
        // the message's (not overlapping it).
        unsafe {
            if len <= AGG_PUT {
                copy_put(data.as_ptr(), dst, len)
            } else {
                copy_mem(data.as_ptr(), dst, len)
            }
        }
        i = at + len;
    }
    Ok(())
}

/// This PE's local segments as the target of requests: (base address, length).
pub(crate) type Segs = [(usize, usize); 2];

/// The context of shmem's endpoint: this PE's segments once they exist (before any PE can
/// send a request, see `World::new`). The handlers get it as `&mut`.
pub(crate) type Ctx = Option<Segs>;

fn bad(src: u32, what: String) -> ChError {
    ChError::InvalidArgument(format!("shmem: PE {src} sent {what}").into())
}

/// The error of an access outside a segment (out of line: keeps the apply loop free of
/// the formatting's register spills).
#[cold]
#[inline(never)]
fn outside(
    src: u32,
    len: impl std::fmt::Display,
    off: u64,
    seg: impl std::fmt::Display,
) -> ChError {
    bad(
        src,
        format!("an access of {len} bytes at offset {off:#x} outside its segment {seg}"),
    )
}

/// Checked local address of `len` bytes at `off` of segment `seg`.
fn local(segs: &Ctx, src: u32, seg: u32, off: u64, len: u64) -> Result<usize, ChError> {
    let r = segs.as_ref().and_then(|s| {
        let &(base, size) = s.get(seg as usize)?;
        let end = off.checked_add(len)?;
        (end <= size as u64).then_some(base + off as usize)
    });
    r.ok_or_else(|| outside(src, len, off, seg))
}

/// Atomic operation codes of [`H_AMO`]'s `arg` (bits 0–7; width in bits 8–15, segment in
/// bits 16–23).
pub(crate) fn amo_arg(op: Amo, width: usize, seg: u8) -> (u32, u64, u64) {
    let (c, a, b) = op.encode();
    (
        u32::from(c) | (width as u32) << 8 | u32::from(seg) << 16,
        a,
        b,
    )
}

fn amo_decode(arg: u32, a: u64, b: u64) -> Option<(Amo, usize, u32)> {
    let op = Amo::decode((arg & 0xFF) as u8, a, b)?;
    Some((op, (arg >> 8 & 0xFF) as usize, arg >> 16 & 0xFF))
}

/// Registers the handlers on `ep` (its context, the segments, is filled in later by the
/// world).
pub(crate) fn install<P: Port>(ep: &mut Endpoint<P, Ctx>) -> skifch::Result<()> {
    ep.register(H_PUT, on_put)?;
    ep.register(H_GET, on_get)?;
    ep.register(H_AMO, on_amo)?;
    ep.register(H_PUTV, on_putv)?;
    ep.register(H_FLUSH, on_flush)?;
    Ok(())
}

fn on_put<P: Port>(s: &mut Ctx, _: &mut Io<'_, P>, am: &Am<'_>) -> Result<(), ChError> {
    let off = am.args().first().copied().unwrap_or(u64::MAX);
    match am.phase() {
        Phase::Whole => {
            let p = am.payload();
            let dst = local(s, am.src(), am.arg(), off, p.len() as u64)?;
            let mut at = dst;
            for seg in p.segments() {
                // SAFETY: `local` checked dst..dst+len lies in this PE's live segment;
                // the program reaches that memory only as one-sided memory.
                unsafe { copy_mem(seg.as_ptr(), at as *mut u8, seg.len()) };
                at += seg.len();
            }
            Ok(())
        }
        Phase::LongStart { total } => {
            let dst = local(s, am.src(), am.arg(), off, total)?;
            // SAFETY: the checked range of the segment receives this transfer alone
            // (the program must not access a put's destination until it completes).
            am.place(unsafe { Landing::raw(dst as *mut u8, total as usize) });
            Ok(())
        }
        Phase::LongDone { .. } => Ok(()),
    }
}

fn on_get<P: Port>(s: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> Result<(), ChError> {
    let to = am
        .reply_to()
        .ok_or_else(|| bad(am.src(), "a get without a reply address".into()))?;
    let (off, len) = match am.args() {
        [o, l, ..] => (*o, *l),
        _ => return Err(bad(am.src(), "a get without offset and length".into())),
    };
    let src = match local(s, am.src(), am.arg(), off, len) {
        Ok(p) => p,
        Err(e) => {
            io.reply_error(to, &e.to_string())?;
            return Err(e);
        }
    };
    let mut v = vec![0u8; len as usize];
    // SAFETY: checked range of this PE's live segment, copied out by raw pointer (no
    // reference to memory the program may be writing).
    unsafe { copy_mem(src as *const u8, v.as_mut_ptr(), v.len()) };
    io.reply(to, 0, &[], &v)
}

fn on_amo<P: Port>(s: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> Result<(), ChError> {
    let (off, a, b) = match am.args() {
        [o, a, b] => (*o, *a, *b),
        _ => return Err(bad(am.src(), "an atomic without its arguments".into())),
    };
    let checked = amo_decode(am.arg(), a, b)
        .filter(|&(_, w, _)| w == 4 || w == 8)
        .ok_or_else(|| bad(am.src(), format!("a bad atomic code {:#x}", am.arg())))
        .and_then(|(op, w, seg)| {
            let p = local(s, am.src(), seg, off, w as u64)?;
            if p % w != 0 {
                return Err(bad(
                    am.src(),
                    format!("a misaligned {w}-byte atomic at offset {off:#x}"),
                ));
            }
            Ok((op, w, p))
        });
    let (op, w, p) = match (checked, am.reply_to()) {
        (Ok(c), _) => c,
        (Err(e), Some(to)) => {
            io.reply_error(to, &e.to_string())?;
            return Err(e);
        }
        (Err(e), None) => return Err(e),
    };
    // SAFETY: checked in range and aligned; the location is only accessed atomically
    // or by raw copies.
    let old = unsafe { amo_at(p as *mut u8, w, op) };
    match am.reply_to() {
        Some(to) => io.reply(to, 0, &[old], &[]),
        None => Ok(()),
    }
}

fn on_putv<P: Port>(s: &mut Ctx, _: &mut Io<'_, P>, am: &Am<'_>) -> Result<(), ChError> {
    match am.phase() {
        Phase::Whole => match am.payload().as_contiguous() {
            Some(p) => apply_putv(s, am.src(), p),
            None => apply_putv(s, am.src(), &am.payload().to_vec()),
        },
        Phase::LongStart { total } => {
            am.place(Landing::vec(total as usize));
            Ok(())
        }
        Phase::LongDone { .. } => match am.take_landing().and_then(Landing::into_vec) {
            Some(v) => apply_putv(s, am.src(), &v),
            None => Err(bad(am.src(), "aggregated puts without their data".into())),
        },
    }
}

fn on_flush<P: Port>(_: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> Result<(), ChError> {
    match am.reply_to() {
        Some(to) => io.reply(to, 0, &[], &[]),
        None => Ok(()),
    }
}
