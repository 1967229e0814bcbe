//! The job segment: the memory it lives in ([`Region`]: a shared mapping for the shm
//! driver, the heap for the in-process job) and [`Fabric`], a segment with a validated
//! layout — the header, the job-control block ([`crate::jobctl`]) and the lanes
//! ([`super::lane`]). Opening a port (`Fabric::open`) builds its private view of its
//! lanes; everything after that is the port's ([`super::port`]).
#![allow(unsafe_code)] // the segment's words, reached from the region's base pointer

use std::ptr::NonNull;
use std::sync::Arc;

use skifch::driver::Reclaim;
use skifch::{Error, NetAddr, Result};

use super::lane::{Rx, Shared, Tx};
use super::layout::*;
use crate::jobctl::{chan_state, JobCtl, C_OWNER, C_SEQ, C_SLEEPERS, C_STATE};
use crate::sync::{self, AtomicU32, AtomicU64, Ordering};
use crate::sys;

/// Memory holding a segment: a shared mapping (shm driver) or the heap (in-process job).
///
/// # Safety
/// `as_ptr()` must point to `len()` bytes, aligned to 4096, valid and fixed for the life of
/// the value, that Rust code only ever reaches through this module (atomics and raw copies).
#[allow(clippy::len_without_is_empty)] // a region is never empty (a segment has a header)
pub unsafe trait Region: Send + Sync + 'static {
    /// The first byte.
    fn as_ptr(&self) -> *mut u8;
    /// Bytes from `as_ptr()`.
    fn len(&self) -> usize;
    /// The RMA provider of rank `rank` of `size` whose job lives in this region
    /// ([`skifch::Driver::rma`] of [`super::RingDriver`]); `None` by default.
    fn rma(&self, _rank: u32, _size: u32) -> Option<Arc<dyn skifch::rma::Rma>> {
        None
    }
}

/// Zeroed heap memory for the in-process job (and Miri).
pub struct HeapRegion {
    ptr: NonNull<u8>,
    layout: std::alloc::Layout,
}

impl HeapRegion {
    /// Allocates `len` zeroed bytes.
    pub fn new(len: usize) -> Result<Self> {
        let layout = std::alloc::Layout::from_size_align(len.max(4096), 4096).map_err(|_| {
            Error::InvalidArgument(format!("cannot allocate a {len}-byte segment").into())
        })?;
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(p).ok_or_else(|| {
            Error::os(
                "allocating the in-process segment",
                std::io::ErrorKind::OutOfMemory.into(),
            )
        })?;
        crate::sync::reset();
        Ok(HeapRegion { ptr, layout })
    }
}

impl Drop for HeapRegion {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; every user holds an Arc to the fabric
        // that owns this region, so nothing can reach the memory any more.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

// SAFETY: the region is plain memory; all shared access goes through atomics and the lane
// protocol of this module.
unsafe impl Send for HeapRegion {}
// SAFETY: as above.
unsafe impl Sync for HeapRegion {}
// SAFETY: `alloc_zeroed` gives `layout.size()` bytes aligned to 4096, freed only on drop.
unsafe impl Region for HeapRegion {
    fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    fn len(&self) -> usize {
        self.layout.size()
    }
    /// Ranks are threads of this process: heap segments ([`skifch::rma::LocalRma`]).
    fn rma(&self, rank: u32, size: u32) -> Option<Arc<dyn skifch::rma::Rma>> {
        Some(Arc::new(skifch::rma::LocalRma::new(rank, size)))
    }
}

/// A segment with a validated layout: the job-wide shared state.
pub struct Fabric<R: Region> {
    region: R,
    base: *mut u8,
    pub(super) lay: Layout,
    ctl: JobCtl,
}

// SAFETY: `base` points into `region`, which is Send + Sync; every access through `base` is
// an atomic or follows the lane protocol, which gives each byte range one writer at a time.
unsafe impl<R: Region> Send for Fabric<R> {}
// SAFETY: as above.
unsafe impl<R: Region> Sync for Fabric<R> {}

impl<R: Region> Fabric<R> {
    /// Formats a fresh, zeroed region for a job with `params`.
    pub fn create(region: R, params: Params) -> Result<Self> {
        let lay = Layout::new(params)?;
        if region.len() < lay.total {
            return Err(Error::InvalidArgument(
                format!(
                    "region of {} bytes is smaller than the {}-byte layout",
                    region.len(),
                    lay.total
                )
                .into(),
            ));
        }
        let base = region_base(&region)?;
        let f = Fabric {
            base: base.as_ptr(),
            region,
            lay,
            // SAFETY: `lay.total` bytes of the region (checked above) stay mapped while the
            // fabric owns it; the block is accessed atomically (module docs: Trust).
            ctl: unsafe { JobCtl::new(base, &lay) },
        };
        f.u32_at(H_VERSION).store(VERSION, Ordering::Relaxed);
        f.u32_at(H_NRANKS).store(params.nranks, Ordering::Relaxed);
        f.u32_at(H_NPORTS).store(params.nports, Ordering::Relaxed);
        f.u32_at(H_LANE_LOG2)
            .store(params.lane_bytes.trailing_zeros(), Ordering::Relaxed);
        f.u64_at(H_TOTAL).store(lay.total as u64, Ordering::Relaxed);
        f.u64_at(H_MAGIC).store(MAGIC, Ordering::Release);
        #[cfg(loom)]
        for lane in 0..lay.lanes {
            sync::prepare(f.lane_data(lane), params.lane_bytes);
        }
        sys::register_process();
        Ok(f)
    }

    /// Attaches to a region formatted by [`Fabric::create`] (maybe in another process),
    /// validating its header: magic, version, parameters, size.
    pub fn attach(region: R) -> Result<Self> {
        if region.len() < HDR_BYTES || !(region.as_ptr() as usize).is_multiple_of(4096) {
            return Err(Error::Corrupt(
                format!(
                    "segment of {} bytes is too small for a header",
                    region.len()
                )
                .into(),
            ));
        }
        let base = region_base(&region)?;
        let lay = Layout::new(Params {
            nranks: 1,
            nports: 1,
            lane_bytes: MIN_LANE,
        })?;
        let probe = Fabric {
            base: base.as_ptr(),
            region,
            lay,
            // SAFETY: the header (checked above) is in the region; the probe reads only it.
            ctl: unsafe { JobCtl::new(base, &lay) },
        };
        let magic = probe.u64_at(H_MAGIC).load(Ordering::Acquire);
        if magic != MAGIC {
            return Err(Error::Corrupt(
                format!("bad segment magic {magic:#018x} (expected {MAGIC:#018x})").into(),
            ));
        }
        let version = probe.u32_at(H_VERSION).load(Ordering::Relaxed);
        if version != VERSION {
            return Err(Error::Corrupt(
                format!("segment layout version {version}, this library speaks {VERSION}").into(),
            ));
        }
        let log2 = probe.u32_at(H_LANE_LOG2).load(Ordering::Relaxed);
        if log2 >= 64 {
            return Err(Error::Corrupt(
                format!("lane size 2^{log2} out of range").into(),
            ));
        }
        let params = Params {
            nranks: probe.u32_at(H_NRANKS).load(Ordering::Relaxed),
            nports: probe.u32_at(H_NPORTS).load(Ordering::Relaxed),
            lane_bytes: 1usize << log2,
        };
        let lay = Layout::new(params)
            .map_err(|e| Error::Corrupt(format!("segment header parameters: {e}").into()))?;
        let total = probe.u64_at(H_TOTAL).load(Ordering::Relaxed);
        if total != lay.total as u64 || lay.total > probe.region.len() {
            return Err(Error::Corrupt(
                format!(
                    "segment header says {total} bytes, its parameters need {}, the mapping has {}",
                    lay.total,
                    probe.region.len()
                )
                .into(),
            ));
        }
        sys::register_process();
        Ok(Fabric {
            lay,
            // SAFETY: `lay.total <= region.len()` (checked above), as in `create`.
            ctl: unsafe { JobCtl::new(base, &lay) },
            ..probe
        })
    }

    /// The trusted layout.
    pub fn layout(&self) -> &Layout {
        &self.lay
    }

    /// The region (e.g. to keep a mapping's descriptor).
    pub fn region(&self) -> &R {
        &self.region
    }

    #[inline(always)]
    fn u32_at(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off.is_multiple_of(4) && off + 4 <= self.region.len());
        // SAFETY: `off` comes from the trusted layout (in bounds, aligned: checked above in
        // debug builds and by construction of `Layout`); an AtomicU32 may alias memory that
        // other processes access atomically.
        unsafe { sync::u32_at(self.base.add(off)) }
    }

    #[inline(always)]
    fn u64_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off.is_multiple_of(8) && off + 8 <= self.region.len());
        // SAFETY: as in `u32_at`.
        unsafe { sync::u64_at(self.base.add(off)) }
    }

    /// Word `w` of the summary bitmap of receiving channel `chan`.
    #[inline(always)]
    pub(super) fn summary(&self, chan: usize, w: usize) -> &AtomicU64 {
        debug_assert!(chan < self.lay.chans && w < self.lay.sum_words);
        self.u64_at(self.lay.sum_off + chan * self.lay.sum_stride + w * 8)
    }

    /// The first word of the summary bitmap of receiving channel `chan`, as an address in
    /// the segment (a port reaches its words from it, see `RingPort::summary_word`).
    pub(super) fn summary_base(&self, chan: usize) -> NonNull<u8> {
        debug_assert!(chan < self.lay.chans);
        let off = self.lay.sum_off + chan * self.lay.sum_stride;
        // SAFETY: the offset is inside the segment (trusted layout); `base` is not null.
        unsafe { NonNull::new_unchecked(self.base.add(off)) }
    }

    #[inline(always)]
    pub(super) fn head(&self, lane: usize) -> &AtomicU64 {
        debug_assert!(lane < self.lay.lanes);
        self.u64_at(self.lay.lctl_off + lane * LANE_CTL + L_HEAD)
    }

    #[inline(always)]
    pub(super) fn tail(&self, lane: usize) -> &AtomicU64 {
        debug_assert!(lane < self.lay.lanes);
        self.u64_at(self.lay.lctl_off + lane * LANE_CTL + L_TAIL)
    }

    #[inline(always)]
    pub(super) fn lane_data(&self, lane: usize) -> *mut u8 {
        debug_assert!(lane < self.lay.lanes);
        // SAFETY: `data_off + lanes * lane_bytes <= total <= region.len()` (Layout + attach checks).
        unsafe {
            self.base
                .add(self.lay.data_off + lane * self.lay.params.lane_bytes)
        }
    }

    pub(super) fn lane_ptr(&self, lane: usize) -> NonNull<u8> {
        NonNull::new(self.lane_data(lane)).expect("a region is never at address 0")
    }

    /// The job-control block at the start of the segment (rank states, lost ranks,
    /// channel states and wake words).
    #[inline(always)]
    pub fn ctl(&self) -> &JobCtl {
        &self.ctl
    }

    /// Opens `port` of `rank`.
    #[allow(clippy::type_complexity)]
    pub(super) fn open(&self, rank: u32, port: u32) -> Result<(usize, Box<[Tx]>, Box<[Rx]>)> {
        let p = self.lay.params;
        if rank >= p.nranks || port >= p.nports {
            return Err(Error::InvalidArgument(format!(
                "port {port} of rank {rank}: this job has {} ranks and {} ports per rank (SKIFCH_PORTS)",
                p.nranks, p.nports
            ).into()));
        }
        let me = (rank * p.nports + port) as usize;
        let st = self.ctl.chan(me, C_STATE);
        let opened = st
            .compare_exchange(
                chan_state::NEVER,
                chan_state::OPEN,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .or_else(|_| {
                st.compare_exchange(
                    chan_state::CLOSED,
                    chan_state::OPEN,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
            });
        if opened.is_err() {
            return Err(Error::InvalidArgument(
                format!("port {port} of rank {rank} is already open").into(),
            ));
        }
        self.ctl
            .chan(me, C_OWNER)
            .store(std::process::id(), Ordering::Relaxed);
        let cap = p.lane_bytes as u64;
        let mut tx = Vec::with_capacity(self.lay.chans);
        let mut rx = Vec::with_capacity(self.lay.chans);
        let check = |lane: usize| -> Result<(u64, u64)> {
            let (h, t) = (
                self.head(lane).load(Ordering::Acquire),
                self.tail(lane).load(Ordering::Acquire),
            );
            if t > h || h - t > cap || (h | t) & 7 != 0 {
                return Err(Error::Corrupt(
                    format!("lane {lane}: head {h} / tail {t} inconsistent").into(),
                ));
            }
            Ok((h, t))
        };
        let opened_fail = |e: Error| {
            st.store(chan_state::CLOSED, Ordering::Release);
            e
        };
        for c in 0..self.lay.chans {
            // Sending side: the head left by this port's previous opening (if any).
            let out = self.lay.lane(c, me);
            let (h, t) = check(out).map_err(opened_fail)?;
            tx.push(Tx {
                data: self.lane_ptr(out),
                tail: Shared::new(self.tail(out)),
                state: Shared::new(self.ctl.chan(c, C_STATE)),
                sleepers: Shared::new(self.ctl.chan(c, C_SLEEPERS)),
                seq: Shared::new(self.ctl.chan(c, C_SEQ)),
                head: h,
                published: h,
                limit: t + cap - TERM as u64,
                announced: false,
                summary: Shared::new(self.summary(c, me / 64)),
                summary_bit: 1 << (me % 64),
            });
            // Receiving side: the producer may be sending (its head is private), so only
            // the tail is checked.
            let inc = self.lay.lane(me, c);
            let t = self.tail(inc).load(Ordering::Acquire);
            if t & 7 != 0 {
                return Err(opened_fail(Error::Corrupt(
                    format!("lane {inc}: tail {t} not aligned").into(),
                )));
            }
            let src = NetAddr::new(
                (c / p.nports as usize) as u16,
                (c % p.nports as usize) as u16,
            );
            rx.push(Rx {
                data: self.lane_ptr(inc),
                tail: Shared::new(self.tail(inc)),
                consumed: t,
                done: Reclaim::new(t),
                published: t,
                publish_at: t + cap / 16,
                src,
            });
        }
        Ok((me, tx.into_boxed_slice(), rx.into_boxed_slice()))
    }
}

/// The region's base address, refused if null (a mapping never is).
fn region_base<R: Region>(region: &R) -> Result<NonNull<u8>> {
    NonNull::new(region.as_ptr()).ok_or_else(|| Error::Corrupt("segment at address 0".into()))
}
