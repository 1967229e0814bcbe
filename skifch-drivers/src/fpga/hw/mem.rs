//! A heap-memory backend of the seam, for unit tests of the seam and as the base of device
//! models: [`MemBar`] (a BAR of atomics) and [`MemDma`] (page-aligned heap allocations with
//! IOVAs from an [`IovaAllocator`], plus the device side of DMA: [`MemDma::device_read`] /
//! [`MemDma::device_write`] translate an IOVA the way an IOMMU would).
#![allow(unsafe_code)] // heap allocation of DMA memory and its device-side copies

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use skifch::{Error, Result};

use super::{check_access, copy_from_shared, copy_to_shared, DmaMemory, DmaRaw, Mmio};
use crate::fpga::iova::{IovaAllocator, IovaMap};

/// A register window of `len` bytes backed by atomics (acquire loads, release stores), so
/// a model thread and the driver can both use it.
#[derive(Debug)]
pub struct MemBar {
    regs: Box<[AtomicU32]>,
}

impl MemBar {
    /// A zeroed window of `len` bytes (`len` a multiple of 4).
    pub fn new(len: usize) -> Result<Self> {
        if !len.is_multiple_of(4) {
            return Err(Error::InvalidArgument(
                format!(
                    "a register window of {len} bytes is not a whole number of 32-bit registers"
                )
                .into(),
            ));
        }
        Ok(MemBar {
            regs: (0..len / 4).map(|_| AtomicU32::new(0)).collect(),
        })
    }
}

impl Mmio for MemBar {
    fn len(&self) -> usize {
        self.regs.len() * 4
    }
    fn read32(&self, off: usize) -> Result<u32> {
        check_access("register window", self.len(), off, 4)?;
        Ok(self.regs[off / 4].load(Ordering::Acquire))
    }
    fn write32(&self, off: usize, v: u32) -> Result<()> {
        check_access("register window", self.len(), off, 4)?;
        self.regs[off / 4].store(v, Ordering::Release);
        Ok(())
    }
}

const PAGE: u64 = 4096;

#[derive(Debug)]
struct Table {
    iova: IovaAllocator,
    maps: IovaMap<NonNull<u8>>,
}

// SAFETY: the table only stores pointers to heap blocks it owns; they are reached under
// the mutex or through `DmaBuffer`, always with atomic accesses.
unsafe impl Send for Table {}

/// Heap memory "mapped" at IOVAs from `[1 MiB, 4 GiB)`: a [`DmaMemory`] without an IOMMU.
/// Clones share the same mappings.
#[derive(Debug, Clone)]
pub struct MemDma {
    table: Arc<Mutex<Table>>,
}

impl Default for MemDma {
    fn default() -> Self {
        Self::new()
    }
}

impl MemDma {
    /// An empty DMA space.
    pub fn new() -> Self {
        MemDma {
            table: Arc::new(Mutex::new(Table {
                iova: IovaAllocator::from_valid(0x10_0000, 0x1_0000_0000, PAGE),
                maps: Default::default(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current mappings as `(iova, len)`.
    pub fn mappings(&self) -> Vec<(u64, usize)> {
        self.lock()
            .maps
            .ranges()
            .map(|(i, l)| (i, l as usize))
            .collect()
    }

    fn with_range(&self, iova: u64, n: usize, f: impl FnOnce(*mut u8)) -> Result<()> {
        let t = self.lock();
        match t.maps.translate(iova, n) {
            // SAFETY: `off + n` is within one mapping (translate), so the pointer stays
            // inside the block, which cannot be freed while we hold the table lock.
            Some((p, off)) => f(unsafe { p.as_ptr().add(off) }),
            None => {
                return Err(Error::Corrupt(
                    format!(
                        "device DMA to IOVA {iova:#x}+{n:#x}, which is not mapped (an IOMMU fault)"
                    )
                    .into(),
                ))
            }
        }
        Ok(())
    }

    /// The device reads host memory at `iova` (as the adapter's DMA engine would).
    pub fn device_read(&self, iova: u64, dst: &mut [u8]) -> Result<()> {
        // SAFETY: `p..p + dst.len()` is inside a live mapping (`with_range`), reached by
        // the CPU side only atomically.
        self.with_range(iova, dst.len(), |p| unsafe { copy_from_shared(p, dst) })
    }

    /// The device writes host memory at `iova`.
    pub fn device_write(&self, iova: u64, src: &[u8]) -> Result<()> {
        // SAFETY: as in `device_read`.
        self.with_range(iova, src.len(), |p| unsafe { copy_to_shared(p, src) })
    }
}

// SAFETY: blocks come from `alloc_zeroed` with 4 KiB alignment and stay allocated until
// `dma_unmap` removes them from the table (so device-side copies, which hold the table
// lock, never see a freed block).
unsafe impl DmaMemory for MemDma {
    fn dma_map(&self, len: usize) -> Result<DmaRaw> {
        let mut t = self.lock();
        let size = t.iova.round(len as u64).ok_or_else(too_big)?;
        let layout =
            Layout::from_size_align(size as usize, PAGE as usize).map_err(|_| too_big())?;
        let iova = t.iova.alloc(size)?;
        // SAFETY: the layout has a non-zero size (rounded up to at least one page).
        let Some(ptr) = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }) else {
            t.iova.free(iova, size)?;
            return Err(Error::os(
                "allocating heap memory for DMA",
                std::io::Error::from(std::io::ErrorKind::OutOfMemory),
            ));
        };
        if let Err(e) = t.maps.insert(iova, ptr, size) {
            // Cannot happen (the allocator hands out disjoint ranges); give it all back.
            // SAFETY: just allocated with `layout`, never handed out.
            unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
            t.iova.free(iova, size)?;
            return Err(e);
        }
        Ok(DmaRaw {
            ptr,
            len: size as usize,
            iova,
        })
    }

    unsafe fn dma_unmap(&self, raw: &DmaRaw) -> Result<()> {
        let mut t = self.lock();
        let Some((host, len)) = t.maps.remove(raw.iova) else {
            return Err(Error::InvalidArgument(
                format!("unmapping IOVA {:#x}, which is not mapped", raw.iova).into(),
            ));
        };
        t.iova.free(raw.iova, len)?;
        // SAFETY: allocated in `dma_map` with this size and alignment at `host`, removed
        // from the table (no device copy can reach it) and unused by the caller (contract).
        unsafe {
            std::alloc::dealloc(
                host.as_ptr(),
                Layout::from_size_align_unchecked(len as usize, PAGE as usize),
            )
        };
        Ok(())
    }
}

#[cold]
fn too_big() -> Error {
    Error::InvalidArgument("DMA buffer size overflows".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fpga::hw::{DmaMemory, IrqEvent};
    use std::time::Duration;

    #[test]
    fn bar_bounds_and_alignment() {
        let bar = MemBar::new(64).unwrap();
        bar.write32(60, 7).unwrap();
        assert_eq!(bar.read32(60).unwrap(), 7);
        for off in [61, 64, usize::MAX - 1] {
            assert!(matches!(bar.read32(off), Err(Error::InvalidArgument(_))));
            assert!(matches!(
                bar.write32(off, 1),
                Err(Error::InvalidArgument(_))
            ));
        }
        assert!(bar.read64(60).is_err());
        assert!(MemBar::new(6).is_err());
    }

    #[test]
    fn dma_device_and_cpu_views_agree() {
        let dma = MemDma::new();
        let a = dma.alloc(10).unwrap();
        let b = dma.alloc(5000).unwrap();
        assert_eq!((a.len(), b.len()), (4096, 8192));
        assert_eq!(dma.mappings().len(), 2);
        // Unaligned copies across the 8-byte fast path.
        let data: Vec<u8> = (0..100u8).collect();
        dma.device_write(b.iova() + 3, &data).unwrap();
        let mut out = vec![0u8; 100];
        b.read(3, &mut out).unwrap();
        assert_eq!(out, data);
        assert!(dma.device_write(b.iova() + 8190, &[1, 2, 3]).is_err());
        assert!(matches!(
            dma.device_read(a.iova() - 1, &mut [0]),
            Err(Error::Corrupt(_))
        ));
        assert_eq!(b.offset_of(b.iova() + 4, 4).unwrap(), 4);
        assert!(b.offset_of(a.iova(), 4).is_err());
        let ranges = [a.range(), b.range()];
        assert_eq!(
            crate::fpga::hw::locate_iova(&ranges, b.iova() + 16, 8).unwrap(),
            (1, 16)
        );
        b.free().unwrap();
        drop(a);
        assert!(dma.mappings().is_empty());
    }

    #[test]
    fn irq_event_times_out_and_counts() {
        let ev = IrqEvent::new().unwrap();
        let t = std::time::Instant::now();
        assert!(matches!(
            ev.wait(Duration::from_millis(20)),
            Err(Error::TimedOut)
        ));
        assert!(t.elapsed() >= Duration::from_millis(20));
        let other = ev.try_clone().unwrap();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            other.signal().unwrap();
        });
        assert_eq!(ev.wait(Duration::from_secs(5)).unwrap(), 1);
        h.join().unwrap();
        assert_eq!(ev.try_take().unwrap(), 0);
    }
}
