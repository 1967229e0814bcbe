//! Remote memory access as an **optional** driver capability (ARCHITECTURE "Higher
//! libraries"). A driver that can reach a peer's memory without the peer's CPU (the shm
//! driver by mapping it, the in-process job on the heap, later the FPGA adapter by DMA)
//! offers an [`Rma`] provider through [`crate::Driver::rma`]; libraries use it when it is
//! there and fall back to active messages over a channel when it is not.
//!
//! ## Discovery: one call, for every library
//! A library (skifshmem today; MPI windows, ARMCI, GASNet next) asks the job and reads the
//! provider's [`RmaCaps`], never the driver's name:
//! ```
//! use skifch::rma::{self, Window};
//! # fn lib<D: skifch::Driver>(job: &skifch::Job<D>,
//! #     exchange: &mut rma::Exchange<'_>) -> skifch::Result<()> {
//! match job.rma() {
//!     // peers' memory is mapped here: puts are copies, atomics CPU atomics
//!     Some(r) if r.caps().load_store => {
//!         let win = rma::expose(r.as_ref(), r.alloc(1 << 20)?, exchange)?;
//!         win.put(0, 64, b"hello")?;
//!         win.quiet();
//!     }
//!     // no RMA (or not load/store): the library's active-message path
//!     _ => {}
//! }
//! # Ok(()) }
//! ```
//! A library's hot path keeps the [`MappedWindow`] (not `dyn Window`) and calls its inlined
//! accessors ([`MappedWindow::reach`], [`MappedWindow::put_raw`], [`MappedWindow::get_raw`]):
//! a bounds check and a copy, no dynamic call, no lock. Drivers: return the provider from
//! `Driver::rma` (the default is `None`); a wrapping driver forwards the call.
//!
//! ## Model
//! 1. Each rank obtains a [`Segment`] of its own memory: fresh memory from [`Rma::alloc`]
//!    (zeroed, backed lazily page by page, so a large heap costs nothing until touched), or
//!    existing pages shared in place with [`Rma::share_in_place`] (used for a program's
//!    global variables).
//! 2. **Collectively** (every rank, same order) the ranks [`expose`] one segment each; the
//!    exchange of the segments' descriptors is an all-gather supplied by the caller (the
//!    library runs it over its own channel, so the provider needs no port of its own).
//!    The result is a [`Window`]: rank `r`'s segment, addressed by byte offset.
//! 3. [`Window::put`], [`Window::get`] and [`Window::amo`] reach any rank's segment. Every
//!    offset and length is checked against the target's segment length (an error, never an
//!    access outside it); atomics must be naturally aligned.
//!
//! ## Completion and ordering
//! * `put` returns when the source buffer may be reused (local completion). The data is
//!   visible to the target and to other ranks no later than the next [`Window::quiet`] by
//!   the initiator (remote completion). For a mapped window both happen at return; `quiet`
//!   is a sequentially consistent fence, so every store issued before it is ordered before
//!   any store or atomic issued after it (the flag-after-data pattern).
//! * `get` returns when the data is in the destination buffer.
//! * `amo` is atomic with respect to every other `amo` on the same location from any rank
//!   (hardware atomics on the shared mapping), and returns the previous value.
//! * Plain local loads and stores by the target on its own segment race with remote puts
//!   as in any one-sided model; a target waits on a location with atomic loads.
//!
//! Memory a peer can write is reached here only through raw pointers and atomics, never a
//! Rust reference (the spec's rule for shared memory).
#![allow(unsafe_code)] // raw access to memory shared with other processes or threads

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::mem::{copy_mem, copy_small};
use crate::{Error, Result};

/// An atomic memory operation on a 4- or 8-byte integer; [`Window::amo`] returns the value
/// the location held before the operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Amo {
    /// Read the value.
    Fetch,
    /// Store the operand.
    Set(u64),
    /// Store the operand (returns the old value).
    Swap(u64),
    /// Store `new` if the location holds `expected`.
    CompareSwap {
        /// The value compared with.
        expected: u64,
        /// The value stored on equality.
        new: u64,
    },
    /// Wrapping add.
    Add(u64),
    /// Bitwise and.
    And(u64),
    /// Bitwise or.
    Or(u64),
    /// Bitwise xor.
    Xor(u64),
}

impl Amo {
    /// The operation's code and operands `(code, a, b)`: the one numbering of the atomic
    /// operations, used wherever an `Amo` crosses a boundary (a C ABI, a wire format).
    pub fn encode(self) -> (u8, u64, u64) {
        match self {
            Amo::Fetch => (0, 0, 0),
            Amo::Set(v) => (1, v, 0),
            Amo::Swap(v) => (2, v, 0),
            Amo::CompareSwap { expected, new } => (3, expected, new),
            Amo::Add(v) => (4, v, 0),
            Amo::And(v) => (5, v, 0),
            Amo::Or(v) => (6, v, 0),
            Amo::Xor(v) => (7, v, 0),
        }
    }

    /// The operation of [`Amo::encode`]'s `(code, a, b)`; `None` for an unknown code.
    pub fn decode(code: u8, a: u64, b: u64) -> Option<Amo> {
        Some(match code {
            0 => Amo::Fetch,
            1 => Amo::Set(a),
            2 => Amo::Swap(a),
            3 => Amo::CompareSwap {
                expected: a,
                new: b,
            },
            4 => Amo::Add(a),
            5 => Amo::And(a),
            6 => Amo::Or(a),
            7 => Amo::Xor(a),
            _ => return None,
        })
    }
}

/// All-gather of small byte strings among all ranks: called with this rank's bytes,
/// returns every rank's bytes in rank order (supplied by the library, see [`expose`]).
pub type Exchange<'a> = dyn FnMut(&[u8]) -> Result<Vec<Vec<u8>>> + 'a;

/// One rank's memory that peers may reach once exposed (see the module docs).
pub struct Segment {
    ptr: *mut u8,
    len: usize,
    token: Vec<u8>,
    _keep: Box<dyn Any + Send + Sync>,
}

// SAFETY: the segment only carries the address of memory kept alive by `_keep`; every
// access through it is a raw-pointer or atomic access with the races documented above.
unsafe impl Send for Segment {}
// SAFETY: as for Send; a shared `&Segment` gives out only the address.
unsafe impl Sync for Segment {}

impl Segment {
    /// A segment at `ptr..ptr+len` that peers open with `token`; `keep` owns the memory
    /// (or the mapping) and is dropped with the segment.
    ///
    /// # Safety
    /// `ptr..ptr+len` must stay valid for reads and writes while `keep` lives.
    pub unsafe fn new(
        ptr: *mut u8,
        len: usize,
        token: Vec<u8>,
        keep: Box<dyn Any + Send + Sync>,
    ) -> Self {
        Segment {
            ptr,
            len,
            token,
            _keep: keep,
        }
    }
    /// Local base address.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
}

/// A peer's segment as this rank reaches it: its address in this process (mapped windows).
pub struct PeerMapping {
    ptr: *mut u8,
    len: usize,
    _keep: Box<dyn Any + Send + Sync>,
}

impl PeerMapping {
    /// A peer's memory mapped at `ptr..ptr+len` in this process, kept mapped by `keep`.
    ///
    /// # Safety
    /// `ptr..ptr+len` must stay valid for reads and writes while `keep` lives.
    pub unsafe fn new(ptr: *mut u8, len: usize, keep: Box<dyn Any + Send + Sync>) -> Self {
        PeerMapping {
            ptr,
            len,
            _keep: keep,
        }
    }
}

/// What an [`Rma`] provider offers: the facts a library chooses its path by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmaCaps {
    /// Every peer's segment is mapped in this process: [`expose`] gives a [`MappedWindow`]
    /// whose accesses are loads, stores and CPU atomics (and `shmem_ptr` works). Only such
    /// providers exist today; a DMA-only provider will say `false`.
    pub load_store: bool,
    /// [`Rma::share_in_place`] works (a program's global variables can be exposed).
    pub share_in_place: bool,
}

/// The capability: a driver's way of making one rank's memory reachable by the others
/// (obtained from [`crate::Job::rma`]).
pub trait Rma: Send + Sync {
    /// The provider's name (`shm`, `local`, …), for messages only: choose by [`Rma::caps`].
    fn name(&self) -> &'static str;
    /// This rank.
    fn rank(&self) -> u32;
    /// Ranks in the job.
    fn size(&self) -> u32;
    /// What this provider offers.
    fn caps(&self) -> RmaCaps;
    /// Fresh zeroed memory of `len` bytes that can be exposed (lazily backed).
    fn alloc(&self, len: usize) -> Result<Segment>;
    /// Makes the existing pages `addr..addr+len` exposable, keeping their contents (the shm
    /// provider moves them onto shared memory with the same address). Providers that cannot
    /// return [`Error::InvalidArgument`] (see [`RmaCaps::share_in_place`]).
    ///
    /// # Safety
    /// `addr` and `len` must be page-aligned and the pages mapped read-write for the rest
    /// of the process's life; no other thread may access them during the call.
    unsafe fn share_in_place(&self, addr: *mut u8, len: usize) -> Result<Segment>;
    /// Opens rank `rank`'s segment from the token it published.
    fn open_peer(&self, rank: u32, token: &[u8]) -> Result<PeerMapping>;
}

/// Collective: every rank exposes `seg` (the calls of all ranks pair up in order); returns
/// the window of all ranks' segments. `exchange` is an all-gather among all ranks.
///
/// # Collective Operation
/// Every rank calls it with its segment; it returns once this rank has opened every
/// peer's segment (not necessarily once the peers have opened this one: a library
/// synchronizes before its first remote access).
pub fn expose(rma: &dyn Rma, seg: Segment, exchange: &mut Exchange<'_>) -> Result<MappedWindow> {
    if !rma.caps().load_store {
        return Err(Error::InvalidArgument(
            format!("the {} RMA provider does not map peers' memory", rma.name()).into(),
        ));
    }
    let mut token = (seg.len as u64).to_le_bytes().to_vec();
    token.extend_from_slice(&seg.token);
    let all = exchange(&token)?;
    if all.len() != rma.size() as usize {
        return Err(Error::InvalidArgument(
            format!(
                "the exchange returned {} entries for {} ranks",
                all.len(),
                rma.size()
            )
            .into(),
        ));
    }
    let mut bases = Vec::with_capacity(all.len());
    let mut maps = Vec::with_capacity(all.len());
    for (r, t) in all.iter().enumerate() {
        if r == rma.rank() as usize {
            bases.push((seg.ptr, seg.len));
            continue;
        }
        if t.len() < 8 {
            return Err(Error::Corrupt(
                format!("rank {r}'s segment descriptor is truncated").into(),
            ));
        }
        let mut l = [0u8; 8];
        l.copy_from_slice(&t[..8]);
        let len = u64::from_le_bytes(l);
        let m = rma.open_peer(r as u32, &t[8..])?;
        if m.len as u64 != len {
            return Err(Error::Corrupt(
                format!(
                    "rank {r}'s segment maps {} bytes, it announced {len}",
                    m.len
                )
                .into(),
            ));
        }
        bases.push((m.ptr, m.len));
        maps.push(m);
    }
    Ok(MappedWindow {
        bases,
        rank: rma.rank(),
        _own: Some(seg),
        _peers: maps,
    })
}

/// Access to every rank's exposed segment, by rank and byte offset (see the module docs
/// for completion and ordering).
pub trait Window: Send + Sync {
    /// Length of rank `rank`'s segment (0 for a rank out of range).
    fn len(&self, rank: u32) -> usize;
    /// Copies `src` to `rank`'s segment at `off`.
    fn put(&self, rank: u32, off: usize, src: &[u8]) -> Result<()>;
    /// Copies `dst.len()` bytes from `rank`'s segment at `off` into `dst`.
    fn get(&self, rank: u32, off: usize, dst: &mut [u8]) -> Result<()>;
    /// Atomic `op` on the `width`-byte (4 or 8) integer at `off` in `rank`'s segment;
    /// returns the previous value (zero-extended).
    fn amo(&self, rank: u32, off: usize, width: usize, op: Amo) -> Result<u64>;
    /// Remote completion of every put and atomic issued before (module docs).
    fn quiet(&self);
    /// The address of `rank`'s segment in this process, if it is mapped here (load/store
    /// access, `shmem_ptr`); `None` for DMA-only windows.
    fn direct(&self, rank: u32) -> Option<*mut u8>;
}

/// A window whose segments are all mapped in this process (shm driver, in-process job):
/// the one implementation of direct put, get and atomics. Libraries keep the concrete type
/// on their hot paths and call the inlined accessors ([`MappedWindow::reach`],
/// [`MappedWindow::put_raw`], [`MappedWindow::get_raw`]); [`Window`] wraps them with errors.
pub struct MappedWindow {
    bases: Vec<(*mut u8, usize)>,
    rank: u32,
    _own: Option<Segment>,
    _peers: Vec<PeerMapping>,
}

// SAFETY: the window holds addresses of mappings it keeps alive; all accesses are raw or
// atomic (module docs), so sharing it between threads adds no reference aliasing.
unsafe impl Send for MappedWindow {}
// SAFETY: as for Send.
unsafe impl Sync for MappedWindow {}

impl MappedWindow {
    /// A window without segments (every access is out of reach): a library's stand-in for
    /// a segment it did not expose, so its fast path needs no `Option`.
    pub fn empty(rank: u32) -> Self {
        MappedWindow {
            bases: Vec::new(),
            rank,
            _own: None,
            _peers: Vec::new(),
        }
    }

    /// This rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The fast accessor: where `off..off+len` of `rank`'s segment is mapped in this
    /// process; `None` if `rank` is out of range or the range leaves the segment. A bounds
    /// check and an addition (no call, no error value).
    #[inline(always)]
    pub fn reach(&self, rank: u32, off: usize, len: usize) -> Option<*mut u8> {
        let &(base, size) = self.bases.get(rank as usize)?;
        (off <= size && len <= size - off).then(|| base.wrapping_add(off))
    }

    /// Copies `len` bytes from `src` to `rank`'s segment at `off`, if [`MappedWindow::reach`]
    /// reaches it (true); false: nothing was copied.
    ///
    /// # Safety
    /// `src..src+len` is readable.
    #[inline(always)]
    pub unsafe fn put_raw(&self, rank: u32, off: usize, src: *const u8, len: usize) -> bool {
        match self.reach(rank, off, len) {
            Some(dst) => {
                // SAFETY: `reach` bounded `dst..dst+len` by a live mapping; the caller
                // vouches for the source.
                unsafe { copy(src, dst, len) };
                true
            }
            None => false,
        }
    }

    /// Copies `len` bytes from `rank`'s segment at `off` to `dst`, if reached (true).
    ///
    /// # Safety
    /// `dst..dst+len` is writable and not referenced by Rust code meanwhile.
    #[inline(always)]
    pub unsafe fn get_raw(&self, rank: u32, off: usize, dst: *mut u8, len: usize) -> bool {
        match self.reach(rank, off, len) {
            Some(src) => {
                // SAFETY: as in `put_raw`, with the roles swapped.
                unsafe { copy(src, dst, len) };
                true
            }
            None => false,
        }
    }

    /// The address of `off..off+len` in `rank`'s segment, or the error saying why not.
    fn at(&self, rank: u32, off: usize, len: usize) -> Result<*mut u8> {
        if let Some(p) = self.reach(rank, off, len) {
            return Ok(p);
        }
        let Some(&(_, size)) = self.bases.get(rank as usize) else {
            return Err(Error::InvalidArgument(
                format!(
                    "rank {rank} is out of range (the window has {} ranks)",
                    self.bases.len()
                )
                .into(),
            ));
        };
        Err(Error::InvalidArgument(
            format!(
                "remote access of {len} bytes at offset {off} is outside rank {rank}'s {size}-byte segment"
            )
            .into(),
        ))
    }
}

/// The copy of a direct put or get: no call for 4 to 16 bytes ([`copy_small`] loads both
/// words before storing, so overlap is fine), else [`copy_mem`] (`memmove`: a rank may put
/// to itself from an overlapping buffer).
///
/// # Safety
/// As [`std::ptr::copy`].
#[inline(always)]
unsafe fn copy(src: *const u8, dst: *mut u8, n: usize) {
    if n.wrapping_sub(4) <= 12 {
        // SAFETY: 4..=16 bytes, the caller's ranges; overlap-safe as said above.
        unsafe { copy_small(src, dst, n) }
    } else {
        // SAFETY: forwards the caller's contract.
        unsafe { copy_mem(src, dst, n) }
    }
}

impl Window for MappedWindow {
    fn len(&self, rank: u32) -> usize {
        self.bases.get(rank as usize).map_or(0, |b| b.1)
    }

    fn put(&self, rank: u32, off: usize, src: &[u8]) -> Result<()> {
        let dst = self.at(rank, off, src.len())?;
        // SAFETY: `at` checked that dst..dst+len lies in a live mapping; `src` is a local
        // buffer that may overlap the destination only if the caller puts to itself
        // (`copy` is a memmove).
        unsafe { copy(src.as_ptr(), dst, src.len()) };
        Ok(())
    }

    fn get(&self, rank: u32, off: usize, dst: &mut [u8]) -> Result<()> {
        let src = self.at(rank, off, dst.len())?;
        // SAFETY: as in `put`, with the roles swapped.
        unsafe { copy(src, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    fn amo(&self, rank: u32, off: usize, width: usize, op: Amo) -> Result<u64> {
        if width != 4 && width != 8 {
            return Err(Error::InvalidArgument(
                format!("atomics are on 4- or 8-byte integers, not {width}").into(),
            ));
        }
        let p = self.at(rank, off, width)?;
        if !(p as usize).is_multiple_of(width) {
            return Err(Error::InvalidArgument(
                format!("atomic at offset {off} of rank {rank} is not {width}-byte aligned").into(),
            ));
        }
        // SAFETY: `p` is checked in bounds and aligned, in a mapping that lives as long
        // as `self`, and only ever accessed atomically or by raw copies.
        Ok(unsafe { amo_at(p, width, op) })
    }

    fn quiet(&self) {
        fence(Ordering::SeqCst);
    }

    fn direct(&self, rank: u32) -> Option<*mut u8> {
        self.bases.get(rank as usize).map(|b| b.0)
    }
}

/// Atomic `op` on the `width`-byte (4 or 8; other widths act as 8) integer at `p`, with
/// sequential consistency; returns the previous value zero-extended. Used by
/// [`MappedWindow`] and by libraries that serve remote atomics on their own memory.
///
/// # Safety
/// `p` must be valid for `width` bytes, aligned to `width`, and accessed by other threads
/// or processes only atomically or by raw copies.
pub unsafe fn amo_at(p: *mut u8, width: usize, op: Amo) -> u64 {
    const O: Ordering = Ordering::SeqCst;
    if width == 8 {
        // SAFETY: the caller's contract (see the function docs).
        let a = unsafe { AtomicU64::from_ptr(p.cast()) };
        match op {
            Amo::Fetch => a.load(O),
            Amo::Set(v) => {
                a.store(v, O);
                0
            }
            Amo::Swap(v) => a.swap(v, O),
            Amo::CompareSwap { expected, new } => match a.compare_exchange(expected, new, O, O) {
                Ok(v) | Err(v) => v,
            },
            Amo::Add(v) => a.fetch_add(v, O),
            Amo::And(v) => a.fetch_and(v, O),
            Amo::Or(v) => a.fetch_or(v, O),
            Amo::Xor(v) => a.fetch_xor(v, O),
        }
    } else {
        // SAFETY: as above, for a 4-byte location.
        let a = unsafe { AtomicU32::from_ptr(p.cast()) };
        let v32 = |v: u64| v as u32;
        u64::from(match op {
            Amo::Fetch => a.load(O),
            Amo::Set(v) => {
                a.store(v32(v), O);
                0
            }
            Amo::Swap(v) => a.swap(v32(v), O),
            Amo::CompareSwap { expected, new } => {
                match a.compare_exchange(v32(expected), v32(new), O, O) {
                    Ok(v) | Err(v) => v,
                }
            }
            Amo::Add(v) => a.fetch_add(v32(v), O),
            Amo::And(v) => a.fetch_and(v32(v), O),
            Amo::Or(v) => a.fetch_or(v32(v), O),
            Amo::Xor(v) => a.fetch_xor(v32(v), O),
        })
    }
}

/// Zeroed heap memory owned by a [`LocalRma`] segment.
struct HeapMem {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}
// SAFETY: plain owned memory; accesses go through raw pointers (module docs).
unsafe impl Send for HeapMem {}
// SAFETY: as for Send.
unsafe impl Sync for HeapMem {}
impl Drop for HeapMem {
    fn drop(&mut self) {
        // SAFETY: allocated in `LocalRma::alloc` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// Segments of the in-process job ([`crate::local`]) by token, so that a peer's window
/// keeps the memory alive after its owner thread ended.
fn local_registry() -> &'static Mutex<HashMap<u64, Arc<HeapMem>>> {
    static REG: OnceLock<Mutex<HashMap<u64, Arc<HeapMem>>>> = OnceLock::new();
    REG.get_or_init(Default::default)
}

/// The RMA provider of the in-process job (ranks are threads of one address space):
/// segments are heap memory and a peer's window holds a reference to it.
/// [`Rma::share_in_place`] is unsupported (globals are not per-rank between threads).
pub struct LocalRma {
    rank: u32,
    size: u32,
}

impl LocalRma {
    /// The provider of rank `rank` of `size` in a job whose ranks are threads of this
    /// process (any in-process driver returns it from [`crate::Driver::rma`]).
    pub fn new(rank: u32, size: u32) -> Self {
        LocalRma { rank, size }
    }
}

struct Unregister(u64);
impl Drop for Unregister {
    fn drop(&mut self) {
        if let Ok(mut m) = local_registry().lock() {
            m.remove(&self.0);
        }
    }
}

impl Rma for LocalRma {
    fn name(&self) -> &'static str {
        "local"
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn caps(&self) -> RmaCaps {
        RmaCaps {
            load_store: true,
            share_in_place: false,
        }
    }
    fn alloc(&self, len: usize) -> Result<Segment> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let layout = std::alloc::Layout::from_size_align(len.max(1), 4096)
            .map_err(|_| Error::InvalidArgument(format!("segment of {len} bytes").into()))?;
        // SAFETY: non-zero size; a null result is handled.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::InvalidArgument(
                format!("cannot allocate a {len}-byte segment").into(),
            ));
        }
        let mem = Arc::new(HeapMem { ptr, layout });
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        local_registry()
            .lock()
            .map_err(|_| Error::Corrupt("the local segment registry is poisoned".into()))?
            .insert(id, mem.clone());
        // SAFETY: `mem` owns ptr..ptr+len and is kept by the segment.
        Ok(unsafe {
            Segment::new(
                ptr,
                len,
                id.to_le_bytes().to_vec(),
                Box::new((mem, Unregister(id))),
            )
        })
    }
    unsafe fn share_in_place(&self, _addr: *mut u8, _len: usize) -> Result<Segment> {
        Err(Error::InvalidArgument(
            "the in-process job cannot share global variables per rank (ranks are threads)".into(),
        ))
    }
    fn open_peer(&self, rank: u32, token: &[u8]) -> Result<PeerMapping> {
        let id = <[u8; 8]>::try_from(token)
            .map(u64::from_le_bytes)
            .map_err(|_| {
                Error::Corrupt(
                    format!("rank {rank}'s segment token has {} bytes", token.len()).into(),
                )
            })?;
        let mem = local_registry()
            .lock()
            .map_err(|_| Error::Corrupt("the local segment registry is poisoned".into()))?
            .get(&id)
            .cloned()
            .ok_or_else(|| Error::Corrupt(format!("rank {rank}'s segment {id} is gone").into()))?;
        let (ptr, len) = (mem.ptr, mem.layout.size());
        // SAFETY: `mem` keeps the allocation alive as long as the mapping.
        Ok(unsafe { PeerMapping::new(ptr, len, Box::new(mem)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local;

    #[test]
    fn amo_codes_round_trip() {
        let ops = [
            Amo::Fetch,
            Amo::Set(1),
            Amo::Swap(2),
            Amo::CompareSwap {
                expected: 3,
                new: 4,
            },
            Amo::Add(5),
            Amo::And(6),
            Amo::Or(7),
            Amo::Xor(8),
        ];
        for op in ops {
            let (c, a, b) = op.encode();
            assert_eq!(Amo::decode(c, a, b), Some(op));
        }
        assert_eq!(Amo::decode(8, 0, 0), None);
    }

    #[test]
    fn local_window_put_get_amo_bounds() {
        let out = local::run(3, |job| {
            let rma = job.rma().expect("the in-process job offers RMA");
            assert!(rma.caps().load_store);
            let rma = rma.as_ref();
            let ch = job.open(2)?;
            let me = job.rank();
            let n = job.size();
            // all-gather of the tokens over the channel (every rank sends to every rank)
            let mut ex = |b: &[u8]| -> Result<Vec<Vec<u8>>> {
                for r in 0..n {
                    ch.send_all(job.addr(r, 2), &[std::io::IoSlice::new(b)])?;
                }
                let mut all = vec![Vec::new(); n as usize];
                for _ in 0..n {
                    let m = ch.recv()?;
                    all[m.src().rank() as usize] = m.to_vec();
                }
                Ok(all)
            };
            let w = expose(rma, rma.alloc(4096)?, &mut ex)?;
            let mut b = crate::coll::Barrier::new(me, n);
            let bch = job.open(1)?;
            b.wait(&bch)?;
            w.put(
                (me + 1) % n,
                8 * me as usize,
                &u64::from(me + 10).to_le_bytes(),
            )?;
            w.amo(0, 1024, 8, Amo::Add(1))?;
            w.quiet();
            b.wait(&bch)?;
            let mut got = [0u8; 8];
            let from = (me + n - 1) % n;
            w.get(me, 8 * from as usize, &mut got)?;
            assert_eq!(u64::from_le_bytes(got), u64::from(from + 10));
            assert_eq!(w.amo(0, 1024, 8, Amo::Fetch)?, u64::from(n));
            assert!(w.put(1, 4090, &[0; 8]).is_err());
            assert!(w.get(n, 0, &mut got).is_err());
            assert!(w.amo(1, 4, 8, Amo::Fetch).is_err());
            b.wait(&bch)?;
            Ok(())
        });
        out.unwrap();
    }

    #[test]
    fn fast_accessors_check_bounds_and_copy_overlapping() {
        let rma = LocalRma::new(0, 1);
        let mut one = |b: &[u8]| -> Result<Vec<Vec<u8>>> { Ok(vec![b.to_vec()]) };
        let w = expose(&rma, rma.alloc(64).unwrap(), &mut one).unwrap();
        assert!(w.reach(0, 64, 0).is_some() && w.reach(0, 60, 4).is_some());
        assert!(w.reach(0, 61, 4).is_none() && w.reach(0, 65, 0).is_none());
        assert!(w.reach(0, usize::MAX, 2).is_none() && w.reach(1, 0, 1).is_none());
        let src: Vec<u8> = (1..=20).collect();
        for n in [1, 3, 4, 8, 13, 16, 20] {
            // SAFETY: `src` holds 20 readable bytes.
            assert!(unsafe { w.put_raw(0, 7, src.as_ptr(), n) });
            let mut got = [0u8; 20];
            // SAFETY: `got` holds 20 writable bytes.
            assert!(unsafe { w.get_raw(0, 7, got.as_mut_ptr(), n) });
            assert_eq!(got[..n], src[..n]);
        }
        // SAFETY: as above; refused, so nothing is read.
        assert!(!unsafe { w.put_raw(0, 60, src.as_ptr(), 8) });
        // a put to oneself from an overlapping range is a memmove
        let p = w.reach(0, 0, 32).unwrap();
        for n in [8, 12, 16, 20] {
            w.put(0, 0, &src[..n]).unwrap();
            // SAFETY: `p..p+32` is this rank's live segment; no reference aliases it.
            unsafe { w.put_raw(0, 2, p, n) };
            let mut got = [0u8; 24];
            w.get(0, 2, &mut got[..n]).unwrap();
            assert_eq!(got[..n], src[..n], "{n} bytes");
        }
        let e = MappedWindow::empty(0);
        assert!(e.reach(0, 0, 0).is_none() && e.put(0, 0, &[1]).is_err());
        assert_eq!(Window::len(&e, 0), 0);
    }
}
