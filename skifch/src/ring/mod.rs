//! The lane transport: the shared-memory rings behind the shm driver and the in-process job
//! (one piece of code for both; only where the memory comes from differs, see [`Region`]).
//!
//! # Design (kept after measurement)
//! Measured against one multi-producer ring per receiving channel (senders reserve space
//! with a CAS on a shared index, then mark their record ready) with
//! `cargo run --release -p skifch-benches --bin ringcmp` (medians of 3 runs, msg/s, lanes
//! through the whole `Channel` API vs a bare ring):
//!
//! | size | senders | lanes | multi-producer ring | lanes / mpsc |
//! | ---: | ---: | ---: | ---: | ---: |
//! | 8 B | 1 | 34.2 M | 53.6 M | 0.81 |
//! | 64 B | 1 | 38.2 M | 39.1 M | 0.96 |
//! | 2 KiB | 1 | 6.3 M | 6.5 M | 0.91 |
//! | 8 B | 3 | 40.7 M | 42.7 M | 0.95 |
//! | 64 B | 3 | 29.9 M | 27.4 M | 1.08 |
//! | 2 KiB | 3 | 3.6 M | 2.0 M | 1.82 |
//!
//! Lanes were kept: equal within noise for one sender from 64 B up, clearly better with
//! several senders (no reservation index shared by all senders), no atomic read-modify-write
//! on the send path, and a sender that dies mid-message blocks only its own lane (in the
//! multi-producer ring it blocks the receiver for good). Details: `benches/README.md`.
//! One **single-producer lane per (sending channel, receiving channel) pair**. A lane is a
//! byte ring of `lane_bytes` (a power of two). Positions are monotonic byte counts (`u64`,
//! never wrap in practice), always multiples of 8. A message is a record: an 8-byte header
//! (payload length, a present bit and a tag of the record's position) followed by
//! the payload padded to 8 bytes. Records are packed, not slotted: an 8-byte message takes
//! 16 bytes, four to a cache line, so short messages cost fewer lines than in a slotted
//! ring. A record with a payload above 2 KiB is padded at its end (up to 56 bytes; layout
//! version 4, [`layout::record_size`]; both sides derive it from the length and the
//! position) so that the next header is the last word of a line: in a stream of large
//! messages every payload starts a cache line. A payload that runs past the ring end
//! continues at its start and is handed out as two segments, never copied.
//!
//! * **The header is the flag** (layout version 2; 3 made its check word a position tag).
//!   The consumer polls the word where the
//!   next header goes: zero means "nothing yet". The producer writes the payload, then a
//!   zero into the word after the record (the next record's flag; it always keeps these
//!   [`TERM`] bytes free), then the header with a release store. A consumer that sees a
//!   header (acquire) therefore also sees the zero after it, never a stale word of an
//!   earlier lap. There is no shared head index on the message path: a message costs the
//!   lines it occupies and nothing else, and the receiver notices it with one cache-line
//!   transfer (the shared `head` is written only when a sending port closes, so that a
//!   port reopened later continues there).
//! * **Send** (no atomic read-modify-write, no fence): the destination of the previous
//!   send is recognised with one compare (a new one is range-checked once, off the hot
//!   path); one word of the receiving channel says open, closed, never opened or lost
//!   ([`Fabric::mark_lost`] marks a lost rank's channels); check room against a *cached*
//!   tail, re-read the tail (acquire) only when the cache says full; write the record
//!   straight into the receiver's lane; then, if the receiving channel has a sleeper, bump
//!   its futex word and wake it.
//! * **Recv**: stay on the lane that delivered last (up to [`BURST`] messages, for
//!   fairness), else scan the lanes named in the channel's summary bitmap. Idle lanes'
//!   header words stay shared in the receiver's cache, so scanning them costs L1 hits.
//! * **RecvComp** in any order: per lane, memory is reclaimed up to the oldest message
//!   still held; the tail is published lazily (every `lane_bytes/16` bytes, or when the
//!   lane is found empty), so the producer's line is not pulled away on every message.
//! * **Wake-up** without a per-message fence: a receiver that goes to sleep announces
//!   itself, then issues the heavy side of an asymmetric barrier (`membarrier`), so the
//!   sender's light side is a compiler fence ([`sys`]). The futex sleep is also bounded
//!   (250 ms) so that a lost peer or a missed wake-up can never hang a waiter.
//!
//! # Trust
//! Everything in the segment can be written by another process. Indices and record
//! headers are read with atomics/volatile loads and validated ([`Error::Corrupt`] on any
//! violation: the port then refuses further use); addresses are computed only from the
//! trusted [`Layout`] copy made at attach time. Payload bytes are handed out as `&[u8]`
//! only for ranges that the lane protocol gives to the receiver (`tail..head`), which a
//! conforming sender does not write until the receiver publishes its tail past them.
#![allow(unsafe_code)]

pub mod layout;
pub mod sys;

use std::io::IoSlice;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use layout::*;
pub use layout::{chan_state, rank_state, Layout, Params, MAX_PORTS, MAX_RANKS};

use crate::driver::{
    iov_total, partial_prefix, Driver, Port, RawMessage, RawSeg, Reclaim, SendMode, Token, Waiter,
};
use crate::error::Unreachable;
use crate::mem::copy_small;
use crate::{Error, NetAddr, Result};

/// Messages taken in a row from one lane before the scan moves on (fairness across senders).
pub const BURST: u32 = 64;
/// Longest single futex sleep; bounds the reaction to anything a wake-up could miss.
pub const MAX_SLEEP: Duration = Duration::from_millis(250);

/// Memory holding a segment: a shared mapping (shm driver) or the heap (in-process job).
///
/// # Safety
/// `as_ptr()` must point to `len()` bytes, aligned to 4096, valid and fixed for the life of
/// the value, that Rust code only ever reaches through this module (atomics and raw copies).
pub unsafe trait Region: Send + Sync + 'static {
    fn as_ptr(&self) -> *mut u8;
    fn len(&self) -> usize;
    /// The RMA provider of rank `rank` of `size` whose job lives in this region
    /// ([`Driver::rma`] of [`RingDriver`]); `None` by default.
    fn rma(&self, _rank: u32, _size: u32) -> Option<Arc<dyn crate::rma::Rma>> {
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
    /// Ranks are threads of this process: heap segments ([`crate::rma::LocalRma`]).
    fn rma(&self, rank: u32, size: u32) -> Option<Arc<dyn crate::rma::Rma>> {
        Some(Arc::new(crate::rma::LocalRma::new(rank, size)))
    }
}

/// A segment with a validated layout: the job-wide shared state.
pub struct Fabric<R: Region> {
    region: R,
    base: *mut u8,
    lay: Layout,
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
        let f = Fabric {
            base: region.as_ptr(),
            region,
            lay,
        };
        f.u32_at(H_VERSION).store(VERSION, Ordering::Relaxed);
        f.u32_at(H_NRANKS).store(params.nranks, Ordering::Relaxed);
        f.u32_at(H_NPORTS).store(params.nports, Ordering::Relaxed);
        f.u32_at(H_LANE_LOG2)
            .store(params.lane_bytes.trailing_zeros(), Ordering::Relaxed);
        f.u64_at(H_TOTAL).store(lay.total as u64, Ordering::Relaxed);
        f.u64_at(H_MAGIC).store(MAGIC, Ordering::Release);
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
        let probe = Fabric {
            base: region.as_ptr(),
            region,
            lay: Layout::new(Params {
                nranks: 1,
                nports: 1,
                lane_bytes: MIN_LANE,
            })?,
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
        Ok(Fabric { lay, ..probe })
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
        unsafe { &*(self.base.add(off) as *const AtomicU32) }
    }

    #[inline(always)]
    fn u64_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off.is_multiple_of(8) && off + 8 <= self.region.len());
        // SAFETY: as in `u32_at`.
        unsafe { &*(self.base.add(off) as *const AtomicU64) }
    }

    #[inline(always)]
    fn rank_u32(&self, rank: u32, field: usize) -> &AtomicU32 {
        debug_assert!(rank < self.lay.params.nranks);
        self.u32_at(self.lay.rank_off + rank as usize * RANK_REC + field)
    }

    #[inline(always)]
    fn chan_u32(&self, chan: usize, field: usize) -> &AtomicU32 {
        debug_assert!(chan < self.lay.chans);
        self.u32_at(self.lay.chan_off + chan * CHAN_REC + field)
    }

    /// Word `w` of the summary bitmap of receiving channel `chan`.
    #[inline(always)]
    fn summary(&self, chan: usize, w: usize) -> &AtomicU64 {
        debug_assert!(chan < self.lay.chans && w < self.lay.sum_words);
        self.u64_at(self.lay.sum_off + chan * self.lay.sum_stride + w * 8)
    }

    #[inline(always)]
    fn head(&self, lane: usize) -> &AtomicU64 {
        debug_assert!(lane < self.lay.lanes);
        self.u64_at(self.lay.lctl_off + lane * LANE_CTL + L_HEAD)
    }

    #[inline(always)]
    fn tail(&self, lane: usize) -> &AtomicU64 {
        debug_assert!(lane < self.lay.lanes);
        self.u64_at(self.lay.lctl_off + lane * LANE_CTL + L_TAIL)
    }

    #[inline(always)]
    fn lane_data(&self, lane: usize) -> *mut u8 {
        debug_assert!(lane < self.lay.lanes);
        // SAFETY: `data_off + lanes * lane_bytes <= total <= region.len()` (Layout + attach checks).
        unsafe {
            self.base
                .add(self.lay.data_off + lane * self.lay.params.lane_bytes)
        }
    }

    fn lane_ptr(&self, lane: usize) -> NonNull<u8> {
        NonNull::new(self.lane_data(lane)).expect("a region is never at address 0")
    }

    /// State of `rank` (see [`rank_state`]).
    pub fn rank_state(&self, rank: u32) -> u32 {
        self.rank_u32(rank, R_STATE).load(Ordering::Acquire)
    }

    /// Records that `rank` is running as process `pid`.
    pub fn set_running(&self, rank: u32, pid: u32) {
        self.rank_u32(rank, R_PID).store(pid, Ordering::Relaxed);
        let _ = self.rank_u32(rank, R_STATE).compare_exchange(
            rank_state::STARTING,
            rank_state::RUNNING,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }

    /// Records a clean exit of `rank`: its ports close; senders to it get `Unreachable`.
    pub fn set_finalized(&self, rank: u32) {
        self.set_channels(rank, chan_state::CLOSED);
        let st = self.rank_u32(rank, R_STATE);
        let _ = st.compare_exchange(
            rank_state::RUNNING,
            rank_state::FINALIZED,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
        let _ = st.compare_exchange(
            rank_state::STARTING,
            rank_state::FINALIZED,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }

    /// Marks `rank` lost (it died or left without finalizing) and wakes every sleeper of the
    /// job, so that blocked calls return [`Error::PeerLost`]. Returns `false` if it was
    /// already finalized or lost.
    pub fn mark_lost(&self, rank: u32) -> bool {
        if rank >= self.lay.params.nranks {
            return false;
        }
        let st = self.rank_u32(rank, R_STATE);
        let mut cur = st.load(Ordering::Acquire);
        loop {
            if cur == rank_state::FINALIZED || cur == rank_state::LOST {
                return false;
            }
            match st.compare_exchange(cur, rank_state::LOST, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(v) => cur = v,
            }
        }
        // Senders test only the destination channel's state word on their fast path.
        self.set_channels(rank, chan_state::LOST);
        let _ = self.u32_at(H_FIRST_LOST).compare_exchange(
            0,
            rank + 1,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
        self.u32_at(H_LOST).fetch_add(1, Ordering::AcqRel);
        self.wake_everyone();
        true
    }

    /// Sets the state of every channel of `rank`.
    fn set_channels(&self, rank: u32, state: u32) {
        let np = self.lay.params.nports as usize;
        for p in 0..np {
            self.chan_u32(rank as usize * np + p, C_STATE)
                .store(state, Ordering::Release);
        }
    }

    /// Wakes every sleeping receiver of the job.
    pub fn wake_everyone(&self) {
        for c in 0..self.lay.chans {
            let seq = self.chan_u32(c, C_SEQ);
            seq.fetch_add(1, Ordering::AcqRel);
            sys::futex_wake_all(seq);
        }
    }

    /// The first rank that was lost, if any.
    #[inline]
    pub fn lost(&self) -> Option<u32> {
        if self.u32_at(H_LOST).load(Ordering::Relaxed) == 0 {
            return None;
        }
        let first = self.u32_at(H_FIRST_LOST).load(Ordering::Acquire);
        Some(first.saturating_sub(1).min(self.lay.params.nranks - 1))
    }

    /// Opens `port` of `rank`.
    #[allow(clippy::type_complexity)]
    fn open(&self, rank: u32, port: u32) -> Result<(usize, Box<[Tx]>, Box<[Rx]>)> {
        let p = self.lay.params;
        if rank >= p.nranks || port >= p.nports {
            return Err(Error::InvalidArgument(format!(
                "port {port} of rank {rank}: this job has {} ranks and {} ports per rank (SKIFCH_PORTS)",
                p.nranks, p.nports
            ).into()));
        }
        let me = (rank * p.nports + port) as usize;
        let st = self.chan_u32(me, C_STATE);
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
        self.chan_u32(me, C_OWNER)
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
                state: Shared::new(self.chan_u32(c, C_STATE)),
                sleepers: Shared::new(self.chan_u32(c, C_SLEEPERS)),
                seq: Shared::new(self.chan_u32(c, C_SEQ)),
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

/// The driver of one rank over a [`Fabric`]: the in-process job and the shm driver are both this.
pub struct RingDriver<R: Region> {
    fab: Arc<Fabric<R>>,
    rank: u32,
    name: &'static str,
    /// The thread this rank lives and dies with (thread-per-rank jobs), see
    /// [`RingDriver::bind_thread`].
    thread: std::sync::OnceLock<std::thread::ThreadId>,
}

impl<R: Region> RingDriver<R> {
    /// Joins `fab` as `rank` (recorded as running in this process).
    pub fn new(fab: Arc<Fabric<R>>, rank: u32, name: &'static str) -> Result<Self> {
        if rank >= fab.lay.params.nranks {
            return Err(Error::Bootstrap(
                format!(
                    "rank {rank} out of range for a {}-rank job",
                    fab.lay.params.nranks
                )
                .into(),
            ));
        }
        fab.set_running(rank, std::process::id());
        Ok(RingDriver {
            fab,
            rank,
            name,
            thread: std::sync::OnceLock::new(),
        })
    }

    /// Declares that this rank lives and dies with the calling thread (the in-process
    /// job's rank threads). A port dropped while that thread panics then marks the rank
    /// lost before the port closes, so that peers see [`Error::PeerLost`], never a
    /// transient "closed". Without it a panicking rank is marked lost only when its driver
    /// drops, after its ports closed: in a multi-threaded process one thread's panic does
    /// not end the rank. Returns `false` if another thread was already bound.
    pub fn bind_thread(&self) -> bool {
        let me = std::thread::current().id();
        *self.thread.get_or_init(|| me) == me
    }

    /// The bound rank thread is unwinding (see [`RingDriver::bind_thread`]).
    fn rank_thread_panicking(&self) -> bool {
        std::thread::panicking() && self.thread.get() == Some(&std::thread::current().id())
    }

    /// The shared fabric.
    pub fn fabric(&self) -> &Arc<Fabric<R>> {
        &self.fab
    }
}

impl<R: Region> Drop for RingDriver<R> {
    fn drop(&mut self) {
        // Every port holds an Arc to this driver, so all of them are closed by now.
        if !std::thread::panicking() {
            self.fab.set_finalized(self.rank);
        } else {
            self.fab.mark_lost(self.rank);
        }
    }
}

impl<R: Region> Driver for RingDriver<R> {
    type Port = RingPort<R>;
    fn name(&self) -> &'static str {
        self.name
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.fab.lay.params.nranks
    }
    fn max_ports(&self) -> u32 {
        self.fab.lay.params.nports
    }
    fn open_port(self: &Arc<Self>, port: u32) -> Result<RingPort<R>> {
        let (me, tx, rx) = self.fab.open(self.rank, port)?;
        let lay = self.fab.lay;
        Ok(RingPort {
            drv: self.clone(),
            me,
            addr: NetAddr::new(self.rank as u16, port as u16),
            nports: lay.params.nports,
            nranks: lay.params.nranks,
            cap: lay.params.lane_bytes as u64,
            max_msg: lay.max_message(),
            tx,
            rx,
            summary: Shared::new(self.fab.summary(me, 0)),
            sum_words: lay.sum_words,
            lost: Shared::new(self.fab.u32_at(H_LOST)),
            cur: usize::MAX,
            burst: 0,
            last_scan: 0,
            broken: None,
            last_dst: u64::MAX,
            last_d: 0,
            asym: sys::asymmetric(),
        })
    }
    fn max_message(&self) -> usize {
        self.fab.lay.max_message()
    }
    fn rma(self: &Arc<Self>) -> Option<Arc<dyn crate::rma::Rma>> {
        self.fab.region.rma(self.rank, self.size())
    }
}

/// A pointer to an atomic in the segment, kept by a port so the hot paths do no layout
/// arithmetic. Valid while the port lives: it holds an `Arc` to the fabric's driver.
#[derive(Clone, Copy)]
struct Shared<T>(NonNull<T>);

impl<T> Shared<T> {
    fn new(r: &T) -> Self {
        Shared(NonNull::from(r))
    }
    #[inline(always)]
    fn get(&self) -> &T {
        // SAFETY: created from a reference into the fabric's region, which outlives every
        // port (each port holds an Arc to its driver, which holds the fabric).
        unsafe { self.0.as_ref() }
    }
}

/// Producer state of one lane (trusted, process-private).
struct Tx {
    /// The lane's bytes and shared tail; the receiving channel's state, sleeper count and
    /// futex word.
    data: NonNull<u8>,
    tail: Shared<AtomicU64>,
    state: Shared<AtomicU32>,
    sleepers: Shared<AtomicU32>,
    seq: Shared<AtomicU32>,
    head: u64,
    /// Last value stored to the shared head (only on close).
    published: u64,
    /// The last tail read (cached) `+ cap - TERM`: a record may end at or below this (the
    /// terminator word after it stays free).
    limit: u64,
    /// This port has set its bit in the receiver's summary bitmap.
    announced: bool,
    /// That bit: the summary word and the mask.
    summary: Shared<AtomicU64>,
    summary_bit: u64,
}

impl Tx {
    /// Once per (port, destination): makes the lane visible to the receiver's scan before
    /// its first record is published.
    #[cold]
    fn announce(&mut self) {
        self.summary
            .get()
            .fetch_or(self.summary_bit, Ordering::AcqRel);
        self.announced = true;
    }

    /// Writes a record of the first `n` bytes of `iov` at `head`, ending at `end` (`head +`
    /// [`record_size`]`(head, n)`, room checked by the caller against the validated tail)
    /// and publishes it; then wakes a sleeping receiver. The one place a record is written.
    #[inline(always)]
    fn put(&mut self, cap: u64, asym: bool, iov: &[IoSlice<'_>], n: usize, end: u64) {
        if !self.announced {
            self.announce();
        }
        let data = self.data.as_ptr();
        let head = self.head;
        let off = head + REC_HDR as u64;
        // SAFETY: `head..end+TERM` is free space of this lane (the caller's check against
        // the validated tail), owned by this producer until its header is stored; a payload
        // that does not reach the lane end is one copy (the common short message).
        unsafe {
            let at = (off & (cap - 1)) as usize;
            match iov {
                [one] if at + n <= cap as usize => copy_small(one.as_ptr(), data.add(at), n),
                _ => copy_in(data, cap, off, iov, n),
            }
        }
        // Payload, then the next record's flag (zero: "not yet"), then this record's flag:
        // a consumer that sees this header (acquire) also sees the zero after the record,
        // never a stale word of an earlier lap.
        header_word(self.data, cap, end).store(0, Ordering::Relaxed);
        header_word(self.data, cap, head).store(encode_rec(n as u32, head), Ordering::Release);
        self.head = end;
        sys::light_barrier(asym);
        if self.sleepers.get().load(Ordering::Relaxed) != 0 {
            self.wake();
        }
    }

    #[cold]
    fn wake(&self) {
        self.seq.get().fetch_add(1, Ordering::Release);
        sys::futex_wake_all(self.seq.get());
    }
}

/// Consumer state of one lane (trusted, process-private).
#[repr(align(64))] // a shift, not a multiply, finds a lane's record (hot on every receive)
struct Rx {
    data: NonNull<u8>,
    tail: Shared<AtomicU64>,
    /// End of the last message handed out.
    consumed: u64,
    /// Completions in any order; everything below `done.freed()` is given back.
    done: Reclaim,
    /// Last value stored to the shared tail.
    published: u64,
    /// `published + cap / 16`: completing up to here publishes the tail (lazy publication).
    publish_at: u64,
    src: NetAddr,
}

/// The header word of position `pos` (8-aligned, any lap) in the lane at `data` of `cap`
/// bytes: the one place both sides of the lane protocol reach a record header.
#[inline(always)]
fn header_word<'a>(data: NonNull<u8>, cap: u64, pos: u64) -> &'a AtomicU64 {
    debug_assert!(pos.is_multiple_of(8) && cap.is_power_of_two());
    // SAFETY: `data` is a live lane of `cap` bytes (a `Tx`/`Rx` pointer, kept alive like
    // every `Shared`); lanes start on a page and `pos & (cap - 1)` is 8-aligned below `cap`;
    // header words are accessed atomically by every process.
    unsafe { &*(data.as_ptr().add((pos & (cap - 1)) as usize) as *const AtomicU64) }
}

impl Rx {
    /// Delivers the record whose non-zero header `word` was just read at this lane's
    /// consumer position into `out`: validates it, advances the lane. `i` is the lane's
    /// index (for the token), `cap` its size. Written once for the fast path and the scan.
    #[inline(always)]
    fn deliver(&mut self, i: usize, cap: u64, word: u64, out: &mut RawMessage) -> Result<()> {
        let pos = self.consumed;
        // A conforming producer's records end at or below `freed + cap - TERM` (space still
        // held by guards is below `pos`; the terminator word stays free): the bound that
        // keeps held messages intact.
        let (len, rec) = decode_rec(word, pos, cap - TERM as u64 - (pos - self.done.freed()))?;
        let data = self.data.as_ptr();
        let start = ((pos + REC_HDR as u64) & (cap - 1)) as usize;
        if start + len <= cap as usize {
            // SAFETY: `start + len <= cap`: inside the lane.
            out.segs[0] = RawSeg {
                ptr: unsafe { data.add(start) },
                len,
            };
            out.count = 1;
        } else {
            // Rare: the hint keeps the compiler from computing both segments of every message.
            std::hint::cold_path();
            let first = cap as usize - start;
            // SAFETY: `start < cap`: the first segment is `start..cap`, the rest starts the lane.
            out.segs[0] = RawSeg {
                ptr: unsafe { data.add(start) },
                len: first,
            };
            out.segs[1] = RawSeg {
                ptr: data,
                len: len - first,
            };
            out.count = 2;
        }
        self.consumed = pos + rec;
        out.len = len;
        out.src = self.src;
        // Token: a = lane << 32 | record length, b = record start.
        out.token = Token {
            a: (i as u64) << 32 | rec,
            b: pos,
        };
        Ok(())
    }

    /// Stores the shared tail; the next lazy publication is due `cap / 16` bytes later.
    #[inline]
    fn publish(&mut self, cap: u64) {
        let freed = self.done.freed();
        self.tail.get().store(freed, Ordering::Release);
        self.published = freed;
        self.publish_at = freed + cap / 16;
    }
}

/// One open channel on a [`Fabric`].
pub struct RingPort<R: Region> {
    drv: Arc<RingDriver<R>>,
    me: usize,
    addr: NetAddr,
    nports: u32,
    nranks: u32,
    cap: u64,
    /// [`max_message`]`(cap)`, kept: a load, not a computation, on every send.
    max_msg: usize,
    tx: Box<[Tx]>,
    rx: Box<[Rx]>,
    /// This channel's summary bitmap (`sum_words` words) and the job's lost-rank count.
    summary: Shared<AtomicU64>,
    sum_words: usize,
    lost: Shared<AtomicU32>,
    /// Lane served last (sticky fast path); `usize::MAX` after a full burst and once the
    /// port is broken, so that the fast path needs no other test.
    cur: usize,
    /// Messages `cur` may still deliver before the scan moves on ([`BURST`] per turn).
    burst: u32,
    /// Where the last scan stopped (round-robin start).
    last_scan: usize,
    broken: Option<Error>,
    /// The destination of the last send (`u64::MAX`, which no address is: none, or the
    /// port is broken) and its channel index: a stream to one peer resolves its address
    /// with one compare.
    last_dst: u64,
    last_d: usize,
    /// The asymmetric barrier is on: senders need no fence ([`sys::light_barrier`]).
    asym: bool,
}

// SAFETY: the raw pointers point into the fabric, which is Send + Sync and kept alive by
// `drv`; a port is used by one thread at a time (`&mut self` everywhere).
unsafe impl<R: Region> Send for RingPort<R> {}

impl<R: Region> RingPort<R> {
    /// The receive path after the fast path found nothing on `cur`: a broken port, the end
    /// of a burst, an empty lane. Scans the other lanes; the lane found becomes `cur`.
    #[inline(always)]
    fn recv_other(&mut self, out: &mut RawMessage) -> Result<()> {
        if self.broken.is_some() {
            return Err(self.broken());
        }
        // No other lane has ever carried a message (one sender, the common case of a
        // polling loop): the empty poll ends here, without the out-of-line scan — a
        // spinning receiver then takes few issue slots from a sender on a sibling
        // hyperthread.
        if self.sum_words == 1 && self.summary_bits(0) == 0 {
            return Err(self.nothing());
        }
        let Some(i) = self.scan()? else {
            return Err(self.nothing());
        };
        let (cap, rx) = (self.cap, &mut self.rx[i]);
        let word = header_word(rx.data, cap, rx.consumed).load(Ordering::Acquire);
        if word == 0 {
            return Err(self.nothing()); // `scan` saw it ready: not reachable with a sane producer
        }
        if let Err(e) = rx.deliver(i, cap, word, out) {
            return Err(self.corrupt(e));
        }
        self.cur = i;
        self.burst = BURST - 1;
        Ok(())
    }

    /// The current lane delivered its [`BURST`]: the next receive scans from the lane after it.
    #[cold]
    fn end_burst(&mut self) {
        self.last_scan = self.cur;
        self.cur = usize::MAX;
    }

    /// Finds a lane with a message among those that have ever carried one (the summary
    /// bitmap), in round-robin order after the last lane found by a scan; `take` then
    /// delivers it. `None`: nothing (the caller reports `WouldBlock` or a lost peer).
    /// Kept short: it runs on every empty poll, and a message is noticed only at the next
    /// poll. It never sees the caller's message: were `out` passed to this out-of-line
    /// function, the message could no longer live in registers and every receive would pay
    /// a store-forwarding stall when the guard is built (8 → 21 ns).
    #[inline(never)]
    fn scan(&mut self) -> Result<Option<usize>> {
        let words = self.sum_words;
        let start = self.last_scan + 1;
        let w0 = if start / 64 < words { start / 64 } else { 0 };
        // In the first word, lanes from `start` on come first, the rest after every other
        // word; each word is loaded once.
        let bits0 = self.summary_bits(w0);
        let first = !0u64 << (start % 64);
        if let Some(i) = self.find(w0, bits0 & first)? {
            return Ok(Some(i));
        }
        for k in 1..words {
            let w = if w0 + k >= words {
                w0 + k - words
            } else {
                w0 + k
            };
            let bits = self.summary_bits(w);
            if let Some(i) = self.find(w, bits)? {
                return Ok(Some(i));
            }
        }
        self.find(w0, bits0 & !first)
    }

    /// Word `w` of this channel's summary bitmap.
    #[inline(always)]
    fn summary_word(&self, w: usize) -> &AtomicU64 {
        debug_assert!(w < self.sum_words);
        // SAFETY: `w < sum_words` (callers loop below it): one of the words of this
        // channel's summary, kept alive like every `Shared`.
        unsafe { &*self.summary.0.as_ptr().add(w) }
    }

    /// Word `w` of this channel's summary, without the lane `take` has just tried.
    #[inline(always)]
    fn summary_bits(&self, w: usize) -> u64 {
        let bits = self.summary_word(w).load(Ordering::Acquire);
        if w == self.cur / 64 {
            bits & !(1u64 << (self.cur % 64))
        } else {
            bits
        }
    }

    /// The first lane with a message among `bits` of summary word `w`.
    #[inline(always)]
    fn find(&mut self, w: usize, mut bits: u64) -> Result<Option<usize>> {
        while bits != 0 {
            let i = w * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if i >= self.rx.len() {
                let e = Error::Corrupt(format!("summary bit {i} names no channel").into());
                return Err(self.corrupt(e));
            }
            if self.lane_ready(i) {
                self.last_scan = i;
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// Whether lane `i` (`i < rx.len()`) holds a message not yet taken; an empty lane
    /// publishes its tail on the way (the lazy publication's "found empty" case). Header
    /// validation is left to `take`, which delivers.
    #[inline(always)]
    fn lane_ready(&mut self, i: usize) -> bool {
        let cap = self.cap;
        let rx = &mut self.rx[i];
        if header_word(rx.data, cap, rx.consumed).load(Ordering::Acquire) != 0 {
            return true;
        }
        if rx.published != rx.done.freed() {
            rx.publish(cap);
        }
        false
    }

    /// What an empty poll reports: a lost peer, else "would block".
    #[inline(always)]
    fn nothing(&self) -> Error {
        if self.lost.get().load(Ordering::Relaxed) == 0 {
            Error::WouldBlock
        } else {
            self.lost_peer()
        }
    }

    #[cold]
    fn lost_peer(&self) -> Error {
        match self.drv.fab.lost() {
            Some(rank) => Error::PeerLost { rank },
            None => Error::WouldBlock,
        }
    }

    #[cold]
    fn corrupt(&mut self, e: Error) -> Error {
        self.broken = Some(e.clone());
        self.cur = usize::MAX;
        self.last_dst = u64::MAX;
        e
    }

    /// The channel index of `dst` for a send, off the hot path (a new destination): a
    /// broken port or an address outside the job is refused.
    #[cold]
    #[inline(never)]
    fn resolve(&mut self, dst: NetAddr) -> Result<usize> {
        if self.broken.is_some() {
            return Err(self.broken());
        }
        let (r, pt) = (dst.rank(), dst.port());
        if r >= self.nranks || pt >= self.nports {
            return Err(self.bad_address(dst));
        }
        let d = (r * self.nports + pt) as usize;
        self.last_dst = u32::from(dst) as u64;
        self.last_d = d;
        Ok(d)
    }

    #[cold]
    fn broken(&self) -> Error {
        self.broken.clone().unwrap_or(Error::WouldBlock)
    }

    /// An address outside the job, off the hot path.
    #[cold]
    fn bad_address(&self, dst: NetAddr) -> Error {
        Error::Unreachable {
            addr: dst,
            why: if dst.rank() >= self.nranks {
                Unreachable::NoSuchRank
            } else {
                Unreachable::NoSuchPort
            },
        }
    }

    /// What a send to a channel in state `st` (not open) gets: an error, or `None` for a
    /// port never opened yet (its messages wait in the lane).
    #[cold]
    fn refused(dst: NetAddr, st: u32) -> Option<Error> {
        match st {
            chan_state::NEVER => None,
            chan_state::LOST => Some(Error::PeerLost { rank: dst.rank() }),
            _ => Some(Error::Unreachable {
                addr: dst,
                why: Unreachable::Closed,
            }),
        }
    }

    /// The lane to `d` has no room for `want` bytes by the cached tail: re-reads the tail,
    /// and returns how much of the message fits now (`want`, or a worthwhile prefix for
    /// [`SendMode::Prefix`]); `WouldBlock` when nothing does.
    #[cold]
    #[inline(never)]
    fn send_when_full(
        &mut self,
        d: usize,
        dst: NetAddr,
        iov: &[IoSlice<'_>],
        want: usize,
        mode: SendMode,
    ) -> Result<usize> {
        self.reload_tail(d, dst)?;
        let (cap, asym) = (self.cap, self.asym);
        let tx = &mut self.tx[d];
        let whole = tx.head + record_size(tx.head, want);
        let (n, end) = if whole <= tx.limit {
            (want, whole)
        } else {
            let room = fit(tx.head, tx.limit);
            let n = partial_prefix(mode, room, want, cap as usize).ok_or(Error::WouldBlock)?;
            (n, tx.head + record_size(tx.head, n))
        };
        tx.put(cap, asym, iov, n, end);
        Ok(n)
    }

    /// The tail of the lane to `d`, re-read because the cached copy says "full";
    /// validated against what this producer knows.
    #[cold]
    fn reload_tail(&mut self, d: usize, dst: NetAddr) -> Result<u64> {
        let room = self.cap - TERM as u64;
        let tx = &mut self.tx[d];
        let t = tx.tail.get().load(Ordering::Acquire);
        let cached = tx.limit - room;
        if t < cached || t > tx.head || t & 7 != 0 {
            let e = Error::Corrupt(
                format!("lane to {dst}: tail {t} outside {cached}..={}", tx.head).into(),
            );
            return Err(self.corrupt(e));
        }
        tx.limit = t + room;
        Ok(t)
    }
}

/// Copies `n` bytes of `iov` into the ring at absolute offset `off`, wrapping at the end.
///
/// # Safety
/// `data` points to a lane of `cap` bytes (power of two) whose range `off..off+n` (mod cap)
/// belongs to the producer; the iovec holds at least `n` bytes.
#[inline(always)]
unsafe fn copy_in(data: *mut u8, cap: u64, mut off: u64, iov: &[IoSlice<'_>], mut n: usize) {
    for s in iov {
        if n == 0 {
            break;
        }
        let take = s.len().min(n);
        let pos = (off & (cap - 1)) as usize;
        let first = take.min(cap as usize - pos);
        // SAFETY: `pos + first <= cap` and `take - first < cap`; the ranges are the
        // producer's (caller's contract) and cannot overlap the caller's iovec, which is
        // ordinary memory outside the lane.
        unsafe {
            copy_small(s.as_ptr(), data.add(pos), first);
            if take > first {
                crate::mem::copy_mem(s.as_ptr().add(first), data, take - first);
            }
        }
        off += take as u64;
        n -= take;
    }
}

// SAFETY: segments returned by `recv` lie in `freed..consumed` of a lane, which the
// producer does not write until this port publishes a tail past them; that happens only in `complete`
// (or on drop, after every message was completed, which `Channel` guarantees).
unsafe impl<R: Region> Port for RingPort<R> {
    type Waiter = RingWaiter<R>;

    fn addr(&self) -> NetAddr {
        self.addr
    }

    #[inline(always)]
    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        let d = if u32::from(dst) as u64 == self.last_dst {
            self.last_d
        } else {
            self.resolve(dst)?
        };
        let asym = self.asym;
        let Some(tx) = self.tx.get_mut(d) else {
            return Err(Error::Unreachable {
                addr: dst,
                why: Unreachable::NoSuchPort,
            }); // not reached: `d < nranks * nports`
        };
        // One word says closed, lost (see `Fabric::mark_lost`) or never opened.
        let st = tx.state.get().load(Ordering::Relaxed);
        if st != chan_state::OPEN {
            if let Some(e) = Self::refused(dst, st) {
                return Err(e);
            }
        }
        let total = match iov {
            [one] => one.len(),
            _ => iov_total(iov)?,
        };
        let cap = self.cap;
        let maxmsg = self.max_msg;
        let want = match mode {
            SendMode::Whole if total > maxmsg => {
                return Err(Error::MessageTooLarge {
                    len: total as u64,
                    max: maxmsg as u32,
                })
            }
            SendMode::Whole => total,
            SendMode::Prefix => total.min(maxmsg),
        };
        let end = tx.head + record_size(tx.head, want);
        if end > tx.limit {
            return self.send_when_full(d, dst, iov, want, mode);
        }
        tx.put(cap, asym, iov, want, end);
        Ok(want)
    }

    #[inline(always)]
    fn recv_into(&mut self, out: &mut RawMessage) -> Result<()> {
        // Fast path: the lane that delivered last, while its burst lasts (`cur` is out of
        // range after a burst and once the port is broken).
        let (i, cap) = (self.cur, self.cap);
        if let Some(rx) = self.rx.get_mut(i) {
            let word = header_word(rx.data, cap, rx.consumed).load(Ordering::Acquire);
            if word != 0 {
                if let Err(e) = rx.deliver(i, cap, word, out) {
                    return Err(self.corrupt(e));
                }
                self.burst -= 1;
                if self.burst == 0 {
                    self.end_burst();
                }
                return Ok(());
            }
            // Found empty: the lazy tail publication's second occasion.
            if rx.published != rx.done.freed() {
                rx.publish(cap);
            }
        }
        self.recv_other(out)
    }

    fn ready(&mut self) -> Result<bool> {
        if self.broken.is_some() {
            return Err(self.broken());
        }
        for w in 0..self.sum_words {
            let bits = self.summary_word(w).load(Ordering::Acquire);
            if self.find(w, bits)?.is_some() {
                return Ok(true);
            }
        }
        match self.nothing() {
            Error::WouldBlock => Ok(false),
            e => Err(e),
        }
    }

    #[inline(always)]
    unsafe fn complete(&mut self, t: Token) {
        // Token: a = lane << 32 | record length, b = record start.
        let i = (t.a >> 32) as usize;
        let (end, cap) = (t.b + (t.a & 0xffff_ffff), self.cap);
        let Some(rx) = self.rx.get_mut(i) else {
            return; // not a token of this port (the caller's contract rules it out)
        };
        if rx.done.complete(t.b, end) && rx.done.freed() >= rx.publish_at {
            rx.publish(cap);
        }
    }

    fn waiter(&self) -> RingWaiter<R> {
        RingWaiter {
            drv: self.drv.clone(),
            chan: self.me,
        }
    }
}

impl<R: Region> Drop for RingPort<R> {
    fn drop(&mut self) {
        let cap = self.cap;
        for rx in self.rx.iter_mut() {
            if rx.published != rx.done.freed() {
                rx.publish(cap);
            }
        }
        if self.drv.rank_thread_panicking() {
            self.drv.fab.mark_lost(self.drv.rank);
        }
        // Where a port reopened later continues sending.
        let fab = &*self.drv.fab;
        for (d, tx) in self.tx.iter_mut().enumerate() {
            if tx.published != tx.head {
                fab.head(fab.lay.lane(d, self.me))
                    .store(tx.head, Ordering::Release);
                tx.published = tx.head;
            }
        }
        // A lost rank's channels stay lost (terminal).
        let _ = fab.chan_u32(self.me, C_STATE).compare_exchange(
            chan_state::OPEN,
            chan_state::CLOSED,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }
}

/// Sleeps on a channel's futex word (see the module docs for the wake-up protocol).
pub struct RingWaiter<R: Region> {
    drv: Arc<RingDriver<R>>,
    chan: usize,
}

impl<R: Region> Clone for RingWaiter<R> {
    fn clone(&self) -> Self {
        RingWaiter {
            drv: self.drv.clone(),
            chan: self.chan,
        }
    }
}

impl<R: Region> Waiter for RingWaiter<R> {
    fn arm(&self) -> u32 {
        let fab = &*self.drv.fab;
        let t = fab.chan_u32(self.chan, C_SEQ).load(Ordering::Acquire);
        fab.chan_u32(self.chan, C_SLEEPERS)
            .fetch_add(1, Ordering::SeqCst);
        sys::heavy_barrier();
        t
    }
    fn sleep(&self, ticket: u32, timeout: Duration) {
        sys::futex_wait(
            self.drv.fab.chan_u32(self.chan, C_SEQ),
            ticket,
            timeout.min(MAX_SLEEP),
        );
    }
    fn disarm(&self) {
        self.drv
            .fab
            .chan_u32(self.chan, C_SLEEPERS)
            .fetch_sub(1, Ordering::Relaxed);
    }
    fn lost_peer(&self) -> Option<u32> {
        self.drv.fab.lost()
    }
}
