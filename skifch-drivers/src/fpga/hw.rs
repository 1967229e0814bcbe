//! The hardware seam of the FPGA adapter driver: register access ([`Mmio`]), memory the
//! device reaches by DMA ([`DmaMemory`], [`DmaBuffer`]) and interrupts ([`Interrupts`],
//! [`IrqEvent`]). The driver is generic over [`Hw`], which bundles the three; backends are
//! [`super::vfio`] (a real card), [`mem`] (heap memory, for tests of the seam) and the
//! behavioural model of the `fpga` crate.
//!
//! Two tiers, as in virtio-drivers: this module is the small `unsafe` raw tier
//! ([`MmioRegion::new`], [`DmaMemory::dma_unmap`], [`DmaBuffer::cpu_slice`]) with written
//! contracts; everything the driver calls on the hot path is safe and bounds-checked.
//!
//! ## Rules this module enforces
//! * Device memory is never a Rust reference. Registers are reached with volatile 32-bit
//!   accesses; DMA memory with atomic loads and stores (the device, or a model thread, may
//!   write it at any time).
//! * One bounds check, [`check_access`], guards every register and DMA access: an offset
//!   past the end or not aligned to the access width is [`Error::InvalidArgument`], never
//!   an out-of-bounds access.
//! * An IOVA the device reports is translated back with [`IovaRange::offset_of`]: outside
//!   the mapping is [`Error::Corrupt`].
#![allow(unsafe_code)] // the raw tier: volatile MMIO, atomic access to DMA memory, eventfd

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use skifch::{Error, Result};

pub mod mem;

#[cold]
#[inline(never)]
fn access_error(what: &str, len: usize, off: usize, width: usize) -> Error {
    if !off.is_multiple_of(width) {
        Error::InvalidArgument(
            format!("{what}: offset {off:#x} is not {width}-byte aligned").into(),
        )
    } else {
        Error::InvalidArgument(
            format!("{what}: {width}-byte access at {off:#x} is outside its {len:#x} bytes").into(),
        )
    }
}

/// The one bounds check of this module: a `width`-byte access at byte offset `off` of an
/// area of `len` bytes must be `width`-aligned and end inside the area.
///
/// ```
/// use skifch_drivers::fpga::hw::check_access;
/// assert!(check_access("BAR0", 4096, 4092, 4).is_ok());
/// assert!(check_access("BAR0", 4096, 4096, 4).is_err()); // past the end
/// assert!(check_access("BAR0", 4096, 2, 4).is_err()); // unaligned
/// ```
#[inline]
pub fn check_access(what: &str, len: usize, off: usize, width: usize) -> Result<()> {
    match off.checked_add(width) {
        Some(end) if end <= len && off.is_multiple_of(width) => Ok(()),
        _ => Err(access_error(what, len, off, width)),
    }
}

/// Checks a byte range `off..off + n` of an area of `len` bytes (no alignment).
#[inline]
fn check_range(what: &str, len: usize, off: usize, n: usize) -> Result<()> {
    match off.checked_add(n) {
        Some(end) if end <= len => Ok(()),
        _ => Err(Error::InvalidArgument(
            format!("{what}: {n} bytes at {off:#x} run past its {len:#x} bytes").into(),
        )),
    }
}

// ---------------------------------------------------------------------------------------
// Registers
// ---------------------------------------------------------------------------------------

/// Register access to the adapter's BAR (or a model of it).
///
/// Offsets are byte offsets from the start of the BAR. Every access is bounds-checked and
/// must be naturally aligned; a bad offset is [`Error::InvalidArgument`].
///
/// Ordering (Linux `readl`/`writel` semantics): a write is ordered after the CPU's earlier
/// stores to DMA memory (so a doorbell written after filling a descriptor publishes it),
/// and a read is ordered before the CPU's later loads from DMA memory.
///
/// ```
/// use skifch_drivers::fpga::hw::{mem::MemBar, Mmio};
/// let bar = MemBar::new(4096)?;
/// bar.write64(0x10, 0x1122_3344_5566_7788)?;
/// assert_eq!(bar.read32(0x10)?, 0x5566_7788); // low half first
/// assert!(bar.read32(4096).is_err());
/// # Ok::<(), skifch::Error>(())
/// ```
pub trait Mmio {
    /// Length of the register window in bytes.
    fn len(&self) -> usize;
    /// `true` for a window of zero bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Reads the 32-bit register at `off`.
    fn read32(&self, off: usize) -> Result<u32>;
    /// Writes the 32-bit register at `off`.
    fn write32(&self, off: usize, v: u32) -> Result<()>;
    /// Reads a 64-bit register as two 32-bit reads, low half first (`off` 8-aligned).
    fn read64(&self, off: usize) -> Result<u64> {
        check_access("register window", self.len(), off, 8)?;
        let lo = self.read32(off)?;
        let hi = self.read32(off + 4)?;
        Ok(u64::from(lo) | u64::from(hi) << 32)
    }
    /// Writes a 64-bit register as two 32-bit writes, low half first, so a device that
    /// latches the value on the high-half write sees it whole (`off` 8-aligned).
    fn write64(&self, off: usize, v: u64) -> Result<()> {
        check_access("register window", self.len(), off, 8)?;
        self.write32(off, v as u32)?;
        self.write32(off + 4, (v >> 32) as u32)
    }
}

/// A register window in memory mapped from a device (the raw tier under a BAR mapping):
/// bounds-checked volatile 32-bit accesses, nothing else.
#[derive(Debug)]
pub struct MmioRegion {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the region is only a pointer and a length; every access is a volatile 32-bit
// load or store (atomic on the bus), so sharing it between threads creates no Rust data
// race on Rust-owned memory. The mapping's validity is the creator's contract (`new`).
unsafe impl Send for MmioRegion {}
// SAFETY: as for `Send`: `&MmioRegion` only offers volatile accesses.
unsafe impl Sync for MmioRegion {}

impl MmioRegion {
    /// Wraps `len` bytes of device memory at `base`.
    ///
    /// # Safety
    /// `base..base + len` must be valid for volatile 32-bit reads and writes (a mapping of
    /// device memory, or memory nobody else reaches except by volatile/atomic accesses)
    /// for as long as the returned value lives, and `base` must be 4-byte aligned.
    pub unsafe fn new(base: NonNull<u8>, len: usize) -> Result<Self> {
        if !(base.as_ptr() as usize).is_multiple_of(4) {
            return Err(Error::InvalidArgument(
                "a register window must start 4-byte aligned".into(),
            ));
        }
        Ok(MmioRegion { base, len })
    }
}

impl Mmio for MmioRegion {
    #[inline]
    fn len(&self) -> usize {
        self.len
    }
    #[inline]
    fn read32(&self, off: usize) -> Result<u32> {
        check_access("BAR", self.len, off, 4)?;
        // SAFETY: `off..off + 4` is inside the window and 4-aligned (checked above; the
        // base is 4-aligned), and the window is valid for volatile reads (`new`).
        let v = unsafe { self.base.as_ptr().add(off).cast::<u32>().read_volatile() };
        fence(Ordering::Acquire); // later DMA-memory loads stay after this read
        Ok(v)
    }
    #[inline]
    fn write32(&self, off: usize, v: u32) -> Result<()> {
        check_access("BAR", self.len, off, 4)?;
        fence(Ordering::Release); // earlier DMA-memory stores are visible before this write
                                  // SAFETY: as in `read32`: in bounds, aligned, valid for volatile writes.
        unsafe { self.base.as_ptr().add(off).cast::<u32>().write_volatile(v) };
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// DMA memory
// ---------------------------------------------------------------------------------------

/// A range of device (IO virtual) addresses.
///
/// ```
/// use skifch_drivers::fpga::hw::IovaRange;
/// let r = IovaRange { start: 0x10_0000, len: 0x1000 };
/// assert_eq!(r.offset_of(0x10_0ff0, 16)?, 0xff0);
/// assert!(r.offset_of(0x10_0ff0, 17).is_err()); // runs past the end
/// assert!(r.offset_of(0x0f_ffff, 1).is_err()); // before the start
/// # Ok::<(), skifch::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IovaRange {
    /// First device address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
}

impl IovaRange {
    /// `true` if `iova..iova + len` lies inside this range.
    pub fn contains(&self, iova: u64, len: u64) -> bool {
        iova >= self.start
            && iova
                .checked_add(len)
                .is_some_and(|end| end <= self.start + self.len)
    }

    /// Translates a device address the device reported (a completion's buffer address, …)
    /// into a byte offset of this range. Outside the range is [`Error::Corrupt`]: the
    /// device named memory it was never given.
    pub fn offset_of(&self, iova: u64, len: u64) -> Result<usize> {
        if self.contains(iova, len) {
            Ok((iova - self.start) as usize)
        } else {
            Err(Error::Corrupt(
                format!(
                    "the device reported IOVA {iova:#x}+{len:#x}, outside the DMA mapping {:#x}..{:#x}",
                    self.start,
                    self.start + self.len
                )
                .into(),
            ))
        }
    }
}

/// Finds which of `ranges` holds `iova..iova + len`: `(index, byte offset)`. An IOVA
/// outside every mapping is [`Error::Corrupt`].
pub fn locate_iova(ranges: &[IovaRange], iova: u64, len: u64) -> Result<(usize, usize)> {
    for (i, r) in ranges.iter().enumerate() {
        if r.contains(iova, len) {
            return Ok((i, (iova - r.start) as usize));
        }
    }
    Err(Error::Corrupt(
        format!("the device reported IOVA {iova:#x}+{len:#x}, outside every DMA mapping").into(),
    ))
}

/// One DMA mapping as a backend hands it out: host memory and the device's address for it.
#[derive(Debug)]
pub struct DmaRaw {
    /// Host address of the first byte (at least 8-byte aligned).
    pub ptr: NonNull<u8>,
    /// Length in bytes (a backend may round the requested length up, e.g. to pages).
    pub len: usize,
    /// Device address of the first byte.
    pub iova: u64,
}

/// A source of host memory the device can reach by DMA.
///
/// # Safety
/// An implementation guarantees that memory returned by [`DmaMemory::dma_map`] is zeroed,
/// 8-byte aligned, valid for reads and writes of `len` bytes at `ptr`, reachable by the
/// device at `iova..iova + len`, not reachable from Rust except through the returned
/// pointer, and stays valid until a [`DmaMemory::dma_unmap`] of it returns `Ok`. If
/// unmapping fails the implementation leaks the memory rather than free it under a device
/// that may still write it.
pub unsafe trait DmaMemory: Clone + Send + Sync {
    /// Allocates and maps at least `len` bytes.
    fn dma_map(&self, len: usize) -> Result<DmaRaw>;

    /// Revokes the device's access, then frees the memory.
    ///
    /// # Safety
    /// `raw` came from `dma_map` of this memory (or a clone of it), has not been unmapped,
    /// and no reference or pointer derived from it is used afterwards.
    unsafe fn dma_unmap(&self, raw: &DmaRaw) -> Result<()>;

    /// Allocates a [`DmaBuffer`] of at least `len` bytes (zeroed).
    fn alloc(&self, len: usize) -> Result<DmaBuffer<Self>> {
        DmaBuffer::new(self, len)
    }
}

/// Host memory mapped for the device: descriptor rings, receive rings, bounce buffers.
///
/// The CPU reaches it only by copies and atomic accesses (the device may write it at any
/// moment), with [`check_access`] on every offset. Dropping the buffer unmaps it from the
/// device and then frees it; [`DmaBuffer::free`] does the same and reports failures.
///
/// ```
/// use skifch_drivers::fpga::hw::{mem::MemDma, DmaMemory};
/// use std::sync::atomic::Ordering;
/// let dma = MemDma::new();
/// let buf = dma.alloc(100)?;
/// buf.write(8, b"hello")?;
/// buf.store32(0, 5, Ordering::Release)?;
/// let mut out = [0u8; 5];
/// dma.device_read(buf.iova() + 8, &mut out)?; // what the device would read
/// assert_eq!(&out, b"hello");
/// assert!(buf.write(buf.len() - 2, b"abc").is_err());
/// # Ok::<(), skifch::Error>(())
/// ```
pub struct DmaBuffer<D: DmaMemory> {
    raw: DmaRaw,
    mem: D,
    freed: bool,
}

// SAFETY: the buffer owns its mapping (`DmaMemory` contract) and `&DmaBuffer` reaches it
// only through atomic accesses, so it can move to and be shared with other threads.
unsafe impl<D: DmaMemory> Send for DmaBuffer<D> {}
// SAFETY: as for `Send`.
unsafe impl<D: DmaMemory> Sync for DmaBuffer<D> {}

impl<D: DmaMemory> std::fmt::Debug for DmaBuffer<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DmaBuffer")
            .field("iova", &format_args!("{:#x}", self.raw.iova))
            .field("len", &self.raw.len)
            .finish()
    }
}

impl<D: DmaMemory> DmaBuffer<D> {
    /// Allocates and maps at least `len` bytes from `mem`.
    pub fn new(mem: &D, len: usize) -> Result<Self> {
        let raw = mem.dma_map(len)?;
        Ok(DmaBuffer {
            raw,
            mem: mem.clone(),
            freed: false,
        })
    }

    /// Length in bytes (at least what was asked for).
    pub fn len(&self) -> usize {
        self.raw.len
    }
    /// `true` for an empty buffer (never, for a backend that rounds to pages).
    pub fn is_empty(&self) -> bool {
        self.raw.len == 0
    }
    /// Device address of byte 0.
    pub fn iova(&self) -> u64 {
        self.raw.iova
    }
    /// The device addresses of the whole buffer.
    pub fn range(&self) -> IovaRange {
        IovaRange {
            start: self.raw.iova,
            len: self.raw.len as u64,
        }
    }
    /// Device address of byte `off` (`off == len()` allowed: the end address).
    pub fn iova_at(&self, off: usize) -> Result<u64> {
        check_range("DMA buffer", self.raw.len, off, 0)?;
        Ok(self.raw.iova + off as u64)
    }
    /// Byte offset of a device address the device reported ([`IovaRange::offset_of`]).
    pub fn offset_of(&self, iova: u64, len: u64) -> Result<usize> {
        self.range().offset_of(iova, len)
    }

    /// Copies `dst.len()` bytes at `off` out of the buffer (atomic loads; a concurrent
    /// device write may be seen partially — the driver protocol decides when it is stable).
    pub fn read(&self, off: usize, dst: &mut [u8]) -> Result<()> {
        check_range("DMA buffer", self.raw.len, off, dst.len())?;
        // SAFETY: the range is inside the mapping (checked), which is valid until unmap.
        unsafe { copy_from_shared(self.raw.ptr.as_ptr().add(off), dst) };
        Ok(())
    }
    /// Copies `src` into the buffer at `off` (atomic stores).
    pub fn write(&self, off: usize, src: &[u8]) -> Result<()> {
        check_range("DMA buffer", self.raw.len, off, src.len())?;
        // SAFETY: as in `read`.
        unsafe { copy_to_shared(self.raw.ptr.as_ptr().add(off), src) };
        Ok(())
    }
    /// Sets `n` bytes at `off` to zero.
    pub fn zero(&self, off: usize, n: usize) -> Result<()> {
        check_range("DMA buffer", self.raw.len, off, n)?;
        for i in 0..n {
            // SAFETY: `off + i` is inside the mapping (checked above).
            unsafe { AtomicU8::from_ptr(self.raw.ptr.as_ptr().add(off + i)) }
                .store(0, Ordering::Relaxed);
        }
        Ok(())
    }

    fn atomic32(&self, off: usize) -> Result<&AtomicU32> {
        check_access("DMA buffer", self.raw.len, off, 4)?;
        // SAFETY: in bounds and 4-aligned (checked; the base is 8-aligned); the memory is
        // only ever accessed atomically by Rust and lives as long as `self`.
        Ok(unsafe { AtomicU32::from_ptr(self.raw.ptr.as_ptr().add(off).cast()) })
    }
    fn atomic64(&self, off: usize) -> Result<&AtomicU64> {
        check_access("DMA buffer", self.raw.len, off, 8)?;
        // SAFETY: as in `atomic32`, 8-aligned.
        Ok(unsafe { AtomicU64::from_ptr(self.raw.ptr.as_ptr().add(off).cast()) })
    }
    /// Atomic 32-bit load at `off` (4-aligned). Use `Acquire` on the word through which
    /// the device publishes data (a completion's valid flag).
    pub fn load32(&self, off: usize, order: Ordering) -> Result<u32> {
        Ok(self.atomic32(off)?.load(order))
    }
    /// Atomic 32-bit store at `off` (4-aligned).
    pub fn store32(&self, off: usize, v: u32, order: Ordering) -> Result<()> {
        self.atomic32(off)?.store(v, order);
        Ok(())
    }
    /// Atomic 64-bit load at `off` (8-aligned).
    pub fn load64(&self, off: usize, order: Ordering) -> Result<u64> {
        Ok(self.atomic64(off)?.load(order))
    }
    /// Atomic 64-bit store at `off` (8-aligned).
    pub fn store64(&self, off: usize, v: u64, order: Ordering) -> Result<()> {
        self.atomic64(off)?.store(v, order);
        Ok(())
    }

    /// A plain slice over `off..off + n`, for ranges the driver protocol makes CPU-owned.
    ///
    /// # Safety
    /// For as long as the slice lives the device must not write `off..off + n` (e.g. a
    /// received message between its completion and its RecvComp, when the driver has not
    /// given that part of the ring back), and no `DmaBuffer` method may write it.
    pub unsafe fn cpu_slice(&self, off: usize, n: usize) -> Result<&[u8]> {
        check_range("DMA buffer", self.raw.len, off, n)?;
        // SAFETY: in bounds (checked); nobody writes it while the slice lives (caller).
        Ok(unsafe { std::slice::from_raw_parts(self.raw.ptr.as_ptr().add(off), n) })
    }

    /// A mutable slice over `off..off + n`, for ranges the driver protocol makes CPU-owned.
    ///
    /// # Safety
    /// For as long as the slice lives neither the device nor any other code (another
    /// `cpu_slice*`, a `DmaBuffer` method) may read or write `off..off + n`.
    #[allow(clippy::mut_from_ref)] // exclusivity is the caller's contract, as documented
    pub unsafe fn cpu_slice_mut(&self, off: usize, n: usize) -> Result<&mut [u8]> {
        check_range("DMA buffer", self.raw.len, off, n)?;
        // SAFETY: in bounds (checked); exclusive for the slice's lifetime (caller).
        Ok(unsafe { std::slice::from_raw_parts_mut(self.raw.ptr.as_ptr().add(off), n) })
    }

    /// Unmaps and frees the buffer, reporting a failure (the memory is then leaked, not
    /// freed, since the device may still write it).
    pub fn free(mut self) -> Result<()> {
        self.freed = true;
        // SAFETY: `raw` came from `mem.dma_map`, is unmapped exactly once (`freed` stops
        // `Drop`), and `self` — the only way to reach it — is consumed.
        unsafe { self.mem.dma_unmap(&self.raw) }
    }
}

impl<D: DmaMemory> Drop for DmaBuffer<D> {
    fn drop(&mut self) {
        if !self.freed {
            // SAFETY: as in `free`; nothing reaches the memory after `drop`. A failure
            // cannot be reported from `drop` (use `free` for that); the backend leaks the
            // memory in that case, which is safe.
            let _ = unsafe { self.mem.dma_unmap(&self.raw) };
        }
    }
}

/// Copies out of memory that another agent may write concurrently: relaxed atomic loads,
/// 8 bytes at a time where aligned.
///
/// # Safety
/// `src..src + dst.len()` must be valid for reads and accessed by others only atomically
/// (or by a device).
pub(crate) unsafe fn copy_from_shared(src: *const u8, dst: &mut [u8]) {
    let n = dst.len();
    let mut i = 0;
    while i < n && !(src as usize + i).is_multiple_of(8) {
        // SAFETY: `i < n`: inside the caller's valid range.
        dst[i] = unsafe { AtomicU8::from_ptr(src.add(i).cast_mut()) }.load(Ordering::Relaxed);
        i += 1;
    }
    while i + 8 <= n {
        // SAFETY: inside the range and 8-aligned (the loop above aligned `src + i`).
        let w =
            unsafe { AtomicU64::from_ptr(src.add(i).cast_mut().cast()) }.load(Ordering::Relaxed);
        dst[i..i + 8].copy_from_slice(&w.to_ne_bytes());
        i += 8;
    }
    while i < n {
        // SAFETY: `i < n`: inside the caller's valid range.
        dst[i] = unsafe { AtomicU8::from_ptr(src.add(i).cast_mut()) }.load(Ordering::Relaxed);
        i += 1;
    }
}

/// Copies into memory that another agent may read or write concurrently (atomic stores).
///
/// # Safety
/// `dst..dst + src.len()` must be valid for writes and accessed by others only atomically
/// (or by a device).
pub(crate) unsafe fn copy_to_shared(dst: *mut u8, src: &[u8]) {
    let n = src.len();
    let mut i = 0;
    while i < n && !(dst as usize + i).is_multiple_of(8) {
        // SAFETY: `i < n`: inside the caller's valid range.
        unsafe { AtomicU8::from_ptr(dst.add(i)) }.store(src[i], Ordering::Relaxed);
        i += 1;
    }
    while i + 8 <= n {
        let mut b = [0u8; 8];
        b.copy_from_slice(&src[i..i + 8]);
        let w = u64::from_ne_bytes(b);
        // SAFETY: inside the range and 8-aligned (the loop above aligned `dst + i`).
        unsafe { AtomicU64::from_ptr(dst.add(i).cast()) }.store(w, Ordering::Relaxed);
        i += 8;
    }
    while i < n {
        // SAFETY: `i < n`: inside the caller's valid range.
        unsafe { AtomicU8::from_ptr(dst.add(i)) }.store(src[i], Ordering::Relaxed);
        i += 1;
    }
}

// ---------------------------------------------------------------------------------------
// Interrupts
// ---------------------------------------------------------------------------------------

/// Interrupts of the device, one eventfd-like event per vector.
pub trait Interrupts {
    /// Number of usable vectors (0: the driver must poll).
    fn irq_vectors(&self) -> u32;
    /// Waits until vector `vector` fires or `timeout` passes ([`Error::TimedOut`]).
    /// Returns how many interrupts arrived since the last wait (at least 1).
    fn wait_irq(&self, vector: u32, timeout: Duration) -> Result<u64>;
    /// Re-enables a level-triggered interrupt after the driver cleared its cause in the
    /// device (INTx under VFIO is masked when it fires). A no-op for MSI/MSI-X.
    fn rearm_irq(&self, vector: u32) -> Result<()> {
        let _ = vector;
        Ok(())
    }
}

/// An eventfd: the kernel (VFIO), a device model or a test signals it; the driver waits on
/// it with a timeout. Non-blocking and close-on-exec.
///
/// ```
/// use skifch_drivers::fpga::hw::IrqEvent;
/// use std::time::Duration;
/// let ev = IrqEvent::new()?;
/// assert!(ev.wait(Duration::from_millis(1)).is_err()); // nothing yet: timed out
/// ev.signal()?;
/// ev.signal()?;
/// assert_eq!(ev.wait(Duration::from_secs(1))?, 2);
/// # Ok::<(), skifch::Error>(())
/// ```
#[derive(Debug)]
pub struct IrqEvent {
    fd: OwnedFd,
}

impl IrqEvent {
    /// Creates an unsignalled event.
    pub fn new() -> Result<Self> {
        // SAFETY: eventfd takes no pointers.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(Error::last_os("creating an interrupt eventfd"));
        }
        // SAFETY: `fd` was just returned by eventfd and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(IrqEvent { fd })
    }

    /// A second handle on the same event (e.g. for a thread playing the device).
    pub fn try_clone(&self) -> Result<Self> {
        Ok(IrqEvent {
            fd: self
                .fd
                .try_clone()
                .map_err(|e| Error::os("duplicating an interrupt eventfd", e))?,
        })
    }

    /// Signals the event once (what the kernel does when the interrupt fires).
    pub fn signal(&self) -> Result<()> {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live local array to our own descriptor.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), one.as_ptr().cast(), 8) };
        if n != 8 {
            return Err(Error::last_os("signalling an interrupt eventfd"));
        }
        Ok(())
    }

    /// Takes the pending count without waiting (0: nothing pending).
    pub fn try_take(&self) -> Result<u64> {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a live local array from our own descriptor.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        if n == 8 {
            return Ok(u64::from_ne_bytes(buf));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::WouldBlock {
            Ok(0)
        } else {
            Err(Error::os("reading an interrupt eventfd", e))
        }
    }

    /// Waits for the event at most `timeout`; returns the count taken (≥ 1) or
    /// [`Error::TimedOut`]. Signals interrupting the wait do not shorten or lengthen it.
    pub fn wait(&self, timeout: Duration) -> Result<u64> {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            let got = self.try_take()?;
            if got > 0 {
                return Ok(got);
            }
            let left = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()),
                None => Duration::from_secs(3600),
            };
            if left.is_zero() {
                return Err(Error::TimedOut);
            }
            let ts = libc::timespec {
                tv_sec: left.as_secs().min(i32::MAX as u64) as libc::time_t,
                tv_nsec: left.subsec_nanos() as libc::c_long,
            };
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd and a valid timespec, both live locals; no sigmask.
            let r = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
            if r < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(Error::os("waiting for an interrupt (ppoll)", e));
                }
            }
        }
    }
}

impl AsFd for IrqEvent {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

// ---------------------------------------------------------------------------------------
// The bundle the driver is generic over
// ---------------------------------------------------------------------------------------

/// Everything the adapter driver needs from a backend: registers, interrupts and a source
/// of DMA memory. The driver is written once as `Driver<H: Hw>`.
pub trait Hw: Mmio + Interrupts {
    /// The backend's DMA memory (a cheap, clonable handle).
    type Dma: DmaMemory;
    /// A handle for allocating DMA buffers; buffers may outlive `self`.
    fn dma(&self) -> Self::Dma;
}
