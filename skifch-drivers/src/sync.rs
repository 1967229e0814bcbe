//! The atomics of the job segment (lanes and job-control block) behind one shim, the
//! crossbeam habit: std's atomics normally, loom's under `--cfg loom`, so that the loom
//! model (`tests/loom_lane.rs`) runs the lane code itself instead of a transcription.
//!
//! Segment words are reached from raw pointers ([`u32_at`], [`u64_at`]): a cast normally.
//! loom's atomics cannot live in raw memory, so under loom each word the code reaches
//! atomically gets a loom atomic of its own in a per-thread table keyed by its address
//! (loom runs a model's threads on the test's thread), created zero — the region is zeroed
//! — on first use or by `prepare` and forgotten when the next region is allocated (`reset`). Payload is
//! still copied into the real memory; `payload_written` mirrors each word a copy wrote
//! into its atomic (relaxed), so a header poll can see a stale payload word of an earlier
//! lap exactly as real memory would let it, and `payload_seen` checks that every word
//! the consumer is handed was written before (happens-before) it is read.
#![allow(unsafe_code)] // words of shared memory from raw pointers

#[cfg(not(loom))]
pub use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

#[cfg(loom)]
pub use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// The atomic `u32` at `p`.
///
/// # Safety
/// `p` is 4-aligned and points into memory that stays valid for `'a` and that every
/// process and thread accesses atomically only.
#[cfg(not(loom))]
#[inline(always)]
pub unsafe fn u32_at<'a>(p: *mut u8) -> &'a AtomicU32 {
    // SAFETY: the caller's contract; an AtomicU32 has the size and alignment of a u32.
    unsafe { &*(p as *const AtomicU32) }
}

/// The atomic `u64` at `p`.
///
/// # Safety
/// As for [`u32_at`], 8-aligned.
#[cfg(not(loom))]
#[inline(always)]
pub unsafe fn u64_at<'a>(p: *mut u8) -> &'a AtomicU64 {
    // SAFETY: the caller's contract; an AtomicU64 has the size and alignment of a u64.
    unsafe { &*(p as *const AtomicU64) }
}

/// A fresh region: forgets the words of the previous one (nothing to do outside loom).
#[cfg(not(loom))]
#[inline(always)]
pub fn reset() {}

#[cfg(loom)]
mod model {
    use std::cell::RefCell;
    use std::collections::HashMap;

    use super::{AtomicU32, AtomicU64, Ordering};

    /// The loom atomics of this model run's words, by address. Leaked: a loom object
    /// lives as long as its execution, and the table is cleared before the next one.
    #[derive(Default)]
    pub(super) struct Words {
        /// Regions allocated so far on this thread (see [`super::generation`]).
        pub(super) gen: usize,
        pub(super) w32: HashMap<usize, &'static AtomicU32>,
        pub(super) w64: HashMap<usize, &'static AtomicU64>,
    }

    thread_local! {
        pub(super) static WORDS: RefCell<Words> = RefCell::default();
    }

    pub(super) fn u32_at(p: *mut u8) -> &'static AtomicU32 {
        WORDS.with(|w| {
            *w.borrow_mut()
                .w32
                .entry(p as usize)
                .or_insert_with(|| Box::leak(Box::new(AtomicU32::new(0))))
        })
    }

    pub(super) fn u64_at(p: *mut u8) -> &'static AtomicU64 {
        WORDS.with(|w| {
            *w.borrow_mut()
                .w64
                .entry(p as usize)
                .or_insert_with(|| Box::leak(Box::new(AtomicU64::new(0))))
        })
    }

    pub(super) fn payload_seen(p: *const u8, len: usize) {
        if len == 0 {
            return;
        }
        let (start, end) = (p as usize & !7, (p as usize + len + 7) & !7);
        for a in (start..end).step_by(8) {
            // SAFETY: as in `payload_written`: a word of the lane holding the message.
            let v = unsafe { std::ptr::read(a as *const u64) };
            let seen = u64_at(a as *mut u8).load(Ordering::Relaxed);
            assert_eq!(
                seen, v,
                "payload word at {a:#x} handed out before its write is visible to the \
                 consumer (a missing release/acquire pair)"
            );
        }
    }

    pub(super) fn payload_written(p: *const u8, len: usize) {
        if len == 0 {
            return;
        }
        let (start, end) = (p as usize & !7, (p as usize + len + 7) & !7);
        for a in (start..end).step_by(8) {
            // SAFETY: `a` is an 8-aligned word overlapping a range the caller just wrote
            // (lanes are 8-aligned and a multiple of 8 long: the word is inside the lane).
            let v = unsafe { std::ptr::read(a as *const u64) };
            u64_at(a as *mut u8).store(v, Ordering::Relaxed);
        }
    }
}

/// The atomic `u32` at `p` (loom: its model atomic).
///
/// # Safety
/// As outside loom.
#[cfg(loom)]
pub unsafe fn u32_at<'a>(p: *mut u8) -> &'a AtomicU32 {
    model::u32_at(p)
}

/// The atomic `u64` at `p` (loom: its model atomic).
///
/// # Safety
/// As outside loom.
#[cfg(loom)]
pub unsafe fn u64_at<'a>(p: *mut u8) -> &'a AtomicU64 {
    model::u64_at(p)
}

/// A copy wrote `len` bytes at `p`: mirrors the words it touched into their atomics.
#[cfg(loom)]
pub fn payload_written(p: *const u8, len: usize) {
    model::payload_written(p, len)
}

/// The consumer is handed `len` bytes at `p`: each word's last write must be visible to
/// it (happen before) — a relaxed load of the mirrored word may return any write not
/// ordered before it, so a missing release/acquire shows as a mismatch with the memory.
#[cfg(loom)]
pub fn payload_seen(p: *const u8, len: usize) {
    model::payload_seen(p, len)
}

/// Creates the model atomics of the words in `len` bytes at `p` now: loom counts an
/// atomic's creation as a plain write, so a word first reached inside a model thread would
/// race with the other threads' loads. The segment's control words are all reached while
/// the job is set up (before its threads start); lanes' data words are prepared here.
#[cfg(loom)]
pub fn prepare(p: *mut u8, len: usize) {
    for off in (0..len).step_by(8) {
        // SAFETY: a word inside the caller's region (only its address is used here).
        model::u64_at(unsafe { p.add(off) });
    }
}

/// A fresh region: forgets the words of the previous one.
#[cfg(loom)]
pub fn reset() {
    model::WORDS.with(|w| {
        let mut w = w.borrow_mut();
        let gen = w.gen + 1;
        *w = model::Words {
            gen,
            ..Default::default()
        };
    });
}

/// How many regions were allocated on this thread: tables keyed by address built on top
/// of this one (the model futex's queues) start afresh when it changes.
#[cfg(loom)]
pub fn generation() -> usize {
    model::WORDS.with(|w| w.borrow().gen)
}
