//! Helpers of the ring integration tests (`corrupt.rs`, `ring_props.rs`): a region whose
//! memory the test keeps (to re-attach it, truncated or not), and bounds-checked raw writes
//! into a segment, playing a faulty or hostile process that shares it.
#![allow(dead_code)] // each test crate uses a subset
#![allow(unsafe_code)] // writes into shared memory, as another process would

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use skifch_drivers::shm::{HeapRegion, Layout, Region};

// Segment header fields (byte offsets). They mirror `ring/layout.rs`; the tests that poke
// them check the error message that names the field, so a drift fails loudly.
pub const H_MAGIC: usize = 0;
pub const H_VERSION: usize = 8;
pub const H_NRANKS: usize = 12;
pub const H_NPORTS: usize = 16;
pub const H_LANE_LOG2: usize = 20;
pub const H_TOTAL: usize = 24;
/// Count of lost ranks, and first lost rank + 1.
pub const H_LOST: usize = 64;
pub const H_FIRST_LOST: usize = 68;
/// Bytes of the header that `Fabric::attach` reads.
pub const H_USED: usize = 32;
/// Bytes of the whole header block.
pub const H_BYTES: usize = 256;
// Lane control block: head and tail on separate lines.
const LANE_CTL: usize = 128;
const L_TAIL: usize = 64;

/// Heap memory shared between several [`Region`] values: `Fabric::create` on one view,
/// then `Fabric::attach` on another (possibly shorter) view of the same bytes.
#[derive(Clone)]
pub struct SharedRegion {
    mem: Arc<HeapRegion>,
    len: usize,
}

impl SharedRegion {
    /// `len` zeroed bytes.
    pub fn new(len: usize) -> Self {
        let mem = Arc::new(HeapRegion::new(len).expect("allocating a test region"));
        SharedRegion { mem, len }
    }
    /// The same memory, claiming only its first `len` bytes (a truncated mapping).
    pub fn truncated(&self, len: usize) -> Self {
        assert!(len <= self.len);
        SharedRegion {
            mem: self.mem.clone(),
            len,
        }
    }
}

// SAFETY: `mem` holds at least `len` bytes aligned to 4096 (`HeapRegion`), kept alive and in
// place by the `Arc`. The memory is shared with other views, and the tests write it through
// `poke_*` below: atomics, or plain writes from the only thread, as another process would.
unsafe impl Region for SharedRegion {
    fn as_ptr(&self) -> *mut u8 {
        self.mem.as_ptr()
    }
    fn len(&self) -> usize {
        self.len
    }
}

fn at<R: Region>(r: &R, off: usize, size: usize) -> *mut u8 {
    assert!(
        off.is_multiple_of(size) && off.checked_add(size).is_some_and(|e| e <= r.len()),
        "test poke at {off} (+{size}) outside the {}-byte region",
        r.len()
    );
    // SAFETY: in bounds (checked above).
    unsafe { r.as_ptr().add(off) }
}

/// Atomically writes `v` at byte `off` of `r` (8-aligned, in bounds: checked).
pub fn poke_u64<R: Region>(r: &R, off: usize, v: u64) {
    // SAFETY: aligned and in bounds (`at`); the transport accesses these words atomically
    // or with volatile reads from the same thread.
    unsafe { &*(at(r, off, 8) as *const AtomicU64) }.store(v, Ordering::SeqCst)
}

/// Atomically reads the u64 at byte `off` of `r`.
pub fn peek_u64<R: Region>(r: &R, off: usize) -> u64 {
    // SAFETY: as in `poke_u64`.
    unsafe { &*(at(r, off, 8) as *const AtomicU64) }.load(Ordering::SeqCst)
}

/// Atomically writes `v` at byte `off` of `r` (4-aligned, in bounds: checked).
pub fn poke_u32<R: Region>(r: &R, off: usize, v: u32) {
    // SAFETY: as in `poke_u64`.
    unsafe { &*(at(r, off, 4) as *const AtomicU32) }.store(v, Ordering::SeqCst)
}

/// Writes byte `off` of `r`. Only from the thread that uses the fabric, never concurrently.
pub fn poke_u8<R: Region>(r: &R, off: usize, v: u8) {
    // SAFETY: in bounds (`at`); no other thread touches the region during the call.
    unsafe { at(r, off, 1).write_volatile(v) }
}

/// Reads byte `off` of `r`.
pub fn peek_u8<R: Region>(r: &R, off: usize) -> u8 {
    // SAFETY: as in `poke_u8`.
    unsafe { at(r, off, 1).read_volatile() }
}

/// Channel number of (rank, port) (the lane index arithmetic of the transport).
pub fn chan(lay: &Layout, rank: u32, port: u32) -> usize {
    (rank * lay.params.nports + port) as usize
}

/// Byte offset of the shared `head` of the lane from channel `src` to channel `dst`.
pub fn head_off(lay: &Layout, dst: usize, src: usize) -> usize {
    lay.lctl_off + lay.lane(dst, src) * LANE_CTL
}

/// Byte offset of the shared `tail` of that lane.
pub fn tail_off(lay: &Layout, dst: usize, src: usize) -> usize {
    head_off(lay, dst, src) + L_TAIL
}

/// Byte offset of the lane's ring position `pos` (absolute byte count).
pub fn data_off(lay: &Layout, dst: usize, src: usize, pos: u64) -> usize {
    let cap = lay.params.lane_bytes;
    lay.data_off + lay.lane(dst, src) * cap + (pos as usize & (cap - 1))
}

/// Byte offset of summary word `w` of receiving channel `dst`.
pub fn summary_off(lay: &Layout, dst: usize, w: usize) -> usize {
    lay.sum_off + dst * lay.sum_stride + w * 8
}
