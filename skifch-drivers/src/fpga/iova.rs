//! Device addresses: the IOVA allocator (which device addresses the driver gives its DMA
//! buffers) and [`IovaMap`], the translation of live mappings back to host memory (what
//! an IOMMU's tables hold; the heap backend and the fake VFIO layer use it to play the
//! device's side of DMA).
//!
//! A first-fit free list over one window `[base, limit)`, in units of `align` bytes (a
//! page, or more): every allocation is rounded up to a multiple of `align` and starts
//! `align`-aligned. Freed ranges are merged with their neighbours, so the list stays as
//! short as the number of holes. Allocation is rare (rings and buffers are set up once),
//! so a `BTreeMap` scan is plenty; nothing here is on the message path.
//!
//! The default window of the vfio backend, `[1 MiB, 0xFEE0_0000)`, keeps IOVA 0 unmapped
//! (a zeroed descriptor never hits a buffer), stays below 4 GiB (devices with 32-bit DMA
//! engines work), and ends below the x86 MSI window `0xFEE0_0000..0xFEF0_0000`, which
//! the IOMMU reserves.

use std::collections::BTreeMap;

use skifch::{Error, Result};

/// A first-fit allocator of device address ranges.
///
/// ```
/// use skifch_drivers::fpga::iova::IovaAllocator;
/// let mut a = IovaAllocator::new(0x1000, 0x10000, 0x1000)?;
/// let x = a.alloc(1)?; // rounded up to one page
/// let y = a.alloc(0x2000)?;
/// assert_eq!((x, y), (0x1000, 0x2000));
/// a.free(x, 1)?;
/// assert_eq!(a.alloc(0x1000)?, 0x1000); // the hole is reused
/// assert!(a.free(0x8000, 0x1000).is_err()); // never allocated
/// # Ok::<(), skifch::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct IovaAllocator {
    /// Free ranges: start -> length; disjoint and never adjacent (merged on free).
    free: BTreeMap<u64, u64>,
    base: u64,
    limit: u64,
    align: u64,
}

impl IovaAllocator {
    /// An allocator over `[base, limit)`; `align` is a power of two and `base`/`limit`
    /// multiples of it.
    pub fn new(base: u64, limit: u64, align: u64) -> Result<Self> {
        if !align.is_power_of_two()
            || !base.is_multiple_of(align)
            || !limit.is_multiple_of(align)
            || base >= limit
        {
            return Err(Error::InvalidArgument(
                format!(
                    "IOVA window {base:#x}..{limit:#x} with alignment {align:#x} is not usable"
                )
                .into(),
            ));
        }
        Ok(IovaAllocator {
            free: BTreeMap::from([(base, limit - base)]),
            base,
            limit,
            align,
        })
    }

    /// [`IovaAllocator::new`] for a window known to be valid (constants of this crate).
    pub(crate) fn from_valid(base: u64, limit: u64, align: u64) -> Self {
        debug_assert!(
            align.is_power_of_two() && base.is_multiple_of(align) && limit.is_multiple_of(align)
        );
        debug_assert!(base < limit);
        IovaAllocator {
            free: BTreeMap::from([(base, limit - base)]),
            base,
            limit,
            align,
        }
    }

    /// `len` rounded up to the allocation unit (0 counts as 1 byte).
    pub fn round(&self, len: u64) -> Option<u64> {
        len.max(1)
            .checked_add(self.align - 1)
            .map(|l| l & !(self.align - 1))
    }

    /// Allocates `len` bytes (rounded up); returns the first device address.
    pub fn alloc(&mut self, len: u64) -> Result<u64> {
        let len = self.round(len).ok_or_else(|| exhausted(len))?;
        let (&start, &flen) = self
            .free
            .iter()
            .find(|(_, &l)| l >= len)
            .ok_or_else(|| exhausted(len))?;
        self.free.remove(&start);
        if flen > len {
            self.free.insert(start + len, flen - len);
        }
        Ok(start)
    }

    /// Gives back `len` bytes at `iova` (as allocated). Freeing a range that is not wholly
    /// allocated (a double free, a range outside the window) is [`Error::InvalidArgument`]
    /// and changes nothing.
    pub fn free(&mut self, iova: u64, len: u64) -> Result<()> {
        let len = self.round(len).ok_or_else(|| bad_free(iova, len))?;
        let end = iova.checked_add(len).ok_or_else(|| bad_free(iova, len))?;
        if !iova.is_multiple_of(self.align) || iova < self.base || end > self.limit {
            return Err(bad_free(iova, len));
        }
        let prev = self.free.range(..=iova).next_back().map(|(&s, &l)| (s, l));
        let next = self.free.range(iova..).next().map(|(&s, &l)| (s, l));
        if prev.is_some_and(|(s, l)| s + l > iova) || next.is_some_and(|(s, _)| s < end) {
            return Err(bad_free(iova, len));
        }
        let (mut start, mut total) = (iova, len);
        if let Some((s, l)) = prev.filter(|&(s, l)| s + l == iova) {
            self.free.remove(&s);
            start = s;
            total += l;
        }
        if let Some((s, l)) = next.filter(|&(s, _)| s == end) {
            self.free.remove(&s);
            total += l;
        }
        self.free.insert(start, total);
        Ok(())
    }

    /// Bytes still free.
    pub fn available(&self) -> u64 {
        self.free.values().sum()
    }

    /// The window `[base, limit)`.
    pub fn window(&self) -> (u64, u64) {
        (self.base, self.limit)
    }
}

/// Live DMA mappings, device address → host memory: the lookup an IOMMU makes for every
/// device access. Mappings never overlap. `H` is how the owner names host memory (a
/// pointer that keeps its provenance, or an address).
///
/// ```
/// use skifch_drivers::fpga::iova::IovaMap;
/// let mut m = IovaMap::default();
/// m.insert(0x1000, 0x7000_0000usize, 0x1000)?;
/// assert_eq!(m.translate(0x1ff0, 16), Some((0x7000_0000, 0xff0))); // (host, offset)
/// assert_eq!(m.translate(0x1ff0, 17), None); // runs past the mapping
/// assert!(m.insert(0x1800, 0x9000_0000, 0x1000).is_err()); // overlaps
/// assert_eq!(m.remove(0x1000), Some((0x7000_0000, 0x1000)));
/// assert_eq!(m.translate(0x1000, 1), None);
/// # Ok::<(), skifch::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct IovaMap<H: Copy> {
    /// iova -> (host memory, length)
    maps: BTreeMap<u64, (H, u64)>,
}

impl<H: Copy> Default for IovaMap<H> {
    fn default() -> Self {
        IovaMap {
            maps: BTreeMap::new(),
        }
    }
}

impl<H: Copy> IovaMap<H> {
    /// Records `len` bytes of host memory `host` as device addresses `iova..iova + len`.
    /// An empty range, or one that overlaps a live mapping or wraps, is
    /// [`Error::InvalidArgument`].
    pub fn insert(&mut self, iova: u64, host: H, len: u64) -> Result<()> {
        let overlap = || {
            Error::InvalidArgument(
                format!("DMA mapping {iova:#x}+{len:#x} overlaps a live mapping").into(),
            )
        };
        let end = iova.checked_add(len).ok_or_else(overlap)?;
        if len == 0
            || self
                .maps
                .range(..end)
                .next_back()
                .is_some_and(|(&s, &(_, l))| s + l > iova)
        {
            return Err(overlap());
        }
        self.maps.insert(iova, (host, len));
        Ok(())
    }

    /// The mapping that starts at `iova`: `(host memory, length)`.
    pub fn get(&self, iova: u64) -> Option<(H, u64)> {
        self.maps.get(&iova).copied()
    }

    /// Forgets the mapping that starts at `iova`; returns it.
    pub fn remove(&mut self, iova: u64) -> Option<(H, u64)> {
        self.maps.remove(&iova)
    }

    /// Where `iova..iova + n` lies, if one mapping holds all of it: that mapping's host
    /// memory and the byte offset in it.
    pub fn translate(&self, iova: u64, n: usize) -> Option<(H, usize)> {
        let (&start, &(host, len)) = self.maps.range(..=iova).next_back()?;
        let end = (iova - start).checked_add(n as u64)?;
        (end <= len).then_some((host, (iova - start) as usize))
    }

    /// The live mappings as `(iova, length)`, in address order.
    pub fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.maps.iter().map(|(&i, &(_, l))| (i, l))
    }
}

#[cold]
fn exhausted(len: u64) -> Error {
    Error::os(
        "allocating device addresses for DMA (the IOVA window is full: free DMA buffers first)",
        std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            format!("no free IOVA range of {len:#x} bytes"),
        ),
    )
}

#[cold]
fn bad_free(iova: u64, len: u64) -> Error {
    Error::InvalidArgument(
        format!("freeing IOVA {iova:#x}+{len:#x}, which is not allocated").into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_merges_and_rejects_double_free() {
        let mut a = IovaAllocator::new(0x1000, 0x9000, 0x1000).unwrap();
        let r: Vec<u64> = (0..8).map(|_| a.alloc(0x1000).unwrap()).collect();
        assert!(a.alloc(1).is_err());
        for &x in &[r[1], r[3], r[2]] {
            a.free(x, 0x1000).unwrap();
        }
        assert_eq!(a.free.len(), 1, "three adjacent frees merge");
        assert!(a.free(r[2], 0x1000).is_err(), "double free");
        assert_eq!(a.alloc(0x3000).unwrap(), r[1]);
        for &x in r.iter().filter(|&&x| x < r[1] || x > r[3]) {
            a.free(x, 1).unwrap();
        }
        a.free(r[1], 0x3000).unwrap();
        assert_eq!(a.available(), 0x8000);
        assert_eq!(a.free.len(), 1);
    }
}
