//! The last remote range each thread located, so that the next operation on the same
//! allocation of the same rank finds its mapping without taking the allocation table's
//! lock: an uncontended read lock is two atomic read-modify-writes, as much as the whole
//! 8-byte copy it guards.
//!
//! A hint is good while the process-wide table generation has not moved: every change of
//! any [`crate::Armci`]'s allocation table (allocation, free, finalize) advances it under
//! the table's write lock, and a hint is taken under the read lock with the generation
//! read there, so a hint never outlives the allocation it describes. Hints name the
//! library instance they came from (ranks may be threads of one process, each with its
//! own instance).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Process-wide generation of the allocation tables (starts above the empty hint's 0).
static GEN: AtomicU64 = AtomicU64::new(1);
/// Instance numbers.
static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

/// One rank's block of one allocation, as located.
#[derive(Clone, Copy, Debug)]
pub struct Hit {
    /// The generation it was read under.
    gen: u64,
    /// The instance ([`owner_id`]).
    owner: u64,
    /// The rank and its block: its address there and its length.
    pub proc: u32,
    pub base: usize,
    pub len: usize,
    /// Direct path: where the block is mapped here (0 on the message path).
    pub ptr: usize,
    pub direct: bool,
}

thread_local! {
    static LAST: Cell<Hit> = const {
        Cell::new(Hit { gen: 0, owner: 0, proc: 0, base: 0, len: 0, ptr: 0, direct: false })
    };
}

/// A new instance's number.
pub fn owner_id() -> u64 {
    NEXT_OWNER.fetch_add(1, Ordering::Relaxed)
}

/// Called with the table's write lock held, on every change of it.
pub fn table_changed() {
    GEN.fetch_add(1, Ordering::AcqRel);
}

/// The generation now; read with the table's read lock held for [`remember`].
pub fn generation() -> u64 {
    GEN.load(Ordering::Acquire)
}

/// This thread's hint if it is current and covers `len` bytes at `addr` of `proc` in
/// `owner`'s table.
#[inline]
pub fn lookup(owner: u64, proc: u32, addr: usize, len: usize) -> Option<Hit> {
    let h = LAST.with(Cell::get);
    let off = addr.wrapping_sub(h.base);
    (h.owner == owner
        && h.proc == proc
        && off < h.len
        && len <= h.len - off
        && h.gen == GEN.load(Ordering::Acquire))
    .then_some(h)
}

/// Remembers a block located under generation `gen` (read under the read lock).
#[allow(clippy::too_many_arguments)]
pub fn remember(
    gen: u64,
    owner: u64,
    proc: u32,
    base: usize,
    len: usize,
    ptr: usize,
    direct: bool,
) {
    LAST.with(|c| {
        c.set(Hit {
            gen,
            owner,
            proc,
            base,
            len,
            ptr,
            direct,
        })
    });
}
