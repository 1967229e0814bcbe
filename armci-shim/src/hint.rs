//! The last block located in each rank's memory, so that the next operation on the same
//! allocation of that rank finds its mapping without taking the allocation table's lock:
//! an uncontended read lock is two atomic read-modify-writes, as much as the whole 8-byte
//! copy it guards.
//!
//! One slot per rank in the [`crate::Armci`] instance, shared by the rank's threads and
//! read without a lock or a thread-local (in `libarmci.so` a thread-local is a call to
//! `__tls_get_addr`, ~15 instructions: a tenth of an `ARMCI_Rmw`). Each slot is a seqlock:
//! a reader takes the words between two equal even sequence numbers, a writer makes the
//! number odd while it writes. Slots are written on a table lookup ([`Hints::remember`],
//! under the table's read lock: concurrent writers of one slot skip rather than wait) and
//! cleared on every change of the table ([`Hints::clear`], under its write lock, so no
//! lookup is in flight); a block is unmapped only after that, so a hint read before a
//! free names a block the program may no longer use (ARMCI_Free is collective), never
//! memory reused for something else.

use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};

/// One rank's block of one allocation, as located.
#[derive(Clone, Copy, Debug)]
pub struct Hit {
    /// The block: its address in the rank's address space and its length.
    pub base: usize,
    pub len: usize,
    /// Direct path: where the block is mapped here; 0: reached by messages.
    pub ptr: usize,
}

impl Hit {
    /// Reached through its mapping (the direct path).
    #[inline]
    pub fn direct(&self) -> bool {
        self.ptr != 0
    }
}

/// One rank's slot (a cache line of its own: threads working on different ranks do not
/// disturb each other's reads).
#[repr(align(64))]
#[derive(Default)]
struct Slot {
    /// Even: the words are stable; odd: being written.
    seq: AtomicU64,
    base: AtomicUsize,
    len: AtomicUsize,
    ptr: AtomicUsize,
}

impl Slot {
    /// Writes `h` if no other writer holds the slot (`wait`: until none does).
    fn write(&self, h: Hit, wait: bool) {
        let seq = loop {
            let s = self.seq.load(Ordering::Relaxed);
            if s & 1 == 0
                && self
                    .seq
                    .compare_exchange(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                break s;
            }
            if !wait {
                return;
            }
            std::hint::spin_loop();
        };
        // The odd number is visible before any word changes (crossbeam's SeqLock).
        fence(Ordering::Release);
        self.base.store(h.base, Ordering::Relaxed);
        self.len.store(h.len, Ordering::Relaxed);
        self.ptr.store(h.ptr, Ordering::Relaxed);
        self.seq.store(seq + 2, Ordering::Release);
    }
}

/// Every rank's slot.
pub struct Hints {
    slots: Box<[Slot]>,
}

impl Hints {
    /// Empty slots for `n` ranks.
    pub fn new(n: u32) -> Hints {
        Hints {
            slots: (0..n).map(|_| Slot::default()).collect(),
        }
    }

    /// The block of `proc` remembered last, if it covers `len` bytes at `addr`.
    #[inline]
    pub fn lookup(&self, proc: u32, addr: usize, len: usize) -> Option<Hit> {
        let s = self.slots.get(proc as usize)?;
        let seq = s.seq.load(Ordering::Acquire);
        let h = Hit {
            base: s.base.load(Ordering::Relaxed),
            len: s.len.load(Ordering::Relaxed),
            ptr: s.ptr.load(Ordering::Relaxed),
        };
        // The words are read before the second look at the number.
        fence(Ordering::Acquire);
        if seq & 1 != 0 || s.seq.load(Ordering::Relaxed) != seq {
            return None;
        }
        let off = addr.wrapping_sub(h.base);
        (off < h.len && len <= h.len - off).then_some(h)
    }

    /// Remembers `proc`'s block `h`, found under the table's read lock.
    pub fn remember(&self, proc: u32, h: Hit) {
        if let Some(s) = self.slots.get(proc as usize) {
            s.write(h, false);
        }
    }

    /// Forgets every block; called with the table's write lock held, on every change.
    pub fn clear(&self) {
        let none = Hit {
            base: 0,
            len: 0,
            ptr: 0,
        };
        for s in self.slots.iter() {
            s.write(none, true);
        }
    }
}
