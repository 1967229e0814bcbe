//! A PE's view of the job: the symmetric segments, the two access paths, and the
//! operations every part of the library is built from (put, get, atomics, quiet, local
//! waits, barrier). See the crate docs for the model.
#![allow(unsafe_code)] // this PE's own symmetric memory through raw pointers and atomics

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use memmap2::{MmapOptions, MmapRaw};
use skifch::coll::ProtoGroup;
use skifch::mem::copy_mem;
use skifch::proto::{Endpoint, Landing, ProgressThread};
use skifch::rma::{self, Amo, MappedWindow, Rma, Window};
use skifch::{Driver, Job, Port, Waiter};

use crate::heap::Heap;
use crate::msg::{self, Segs};
use crate::Error;

/// The symmetric heap's segment number.
pub const SEG_HEAP: u8 = 0;
/// The global-variable segment's number (C programs: `.data`/`.bss`).
pub const SEG_DATA: u8 = 1;

/// A symmetric address: segment and byte offset, the same on every PE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SymAddr {
    /// [`SEG_HEAP`] or [`SEG_DATA`].
    pub seg: u8,
    /// Byte offset in the segment.
    pub off: usize,
}

impl SymAddr {
    /// `self` moved by `bytes`.
    pub fn offset(self, bytes: usize) -> SymAddr {
        SymAddr {
            seg: self.seg,
            off: self.off + bytes,
        }
    }
}

/// How remote accesses are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// Through the driver's RMA capability ([`skifch::Job::rma`]: every PE's segments
    /// mapped here).
    Direct,
    /// As requests served by the target PE ([`crate::msg`]).
    Messages,
    /// Through the driver's RMA capability, some PEs' segments mapped here (the node's)
    /// and the others reached by the driver's transfers ([`skifch::rma::RmaCaps::transfers`]:
    /// a hierarchical job's fabric, `FI_RMA`): puts and gets go to the window, atomics on
    /// the PEs not mapped as requests served by the target, whose CPU applies them
    /// atomically with its node peers' (a fabric's atomics would not be).
    Transfers,
}

/// How to build a [`World`].
pub struct Options {
    /// The driver's RMA provider ([`skifch::Job::rma`]), if it has one and it should be
    /// used: with load/store access to every peer the direct path, with transfers to
    /// some ([`skifch::rma::RmaCaps::transfers`]) the transfers path, else the message
    /// path serves.
    pub rma: Option<Arc<dyn Rma>>,
    /// Symmetric heap bytes per PE.
    pub heap_size: usize,
    /// Also make this process's global variables symmetric: the address and length of
    /// its `.data`/`.bss` (C programs: `skifch_drivers::shm_rma::data_segment`; needs
    /// `rma` for the direct path, and one executable for all PEs). Nothing outside this
    /// range is symmetric, though the direct path shares the pages around it.
    pub globals: Option<(usize, usize)>,
    /// Start a progress thread (message path).
    pub progress_thread: bool,
}

/// Bytes at the start of the heap that the library keeps for itself (none are used
/// today; the page keeps offset 0 from being a valid object).
fn internal_bytes() -> usize {
    4096
}

/// The port of this library's endpoint (the port table: [`skifch::ports`]).
pub const PORT: u32 = skifch::ports::SHMEM;

/// One PE's library state (shared by the threads of the PE).
pub struct World<P: Port> {
    me: u32,
    n: u32,
    path: Path,
    segs: Segs,
    /// Every PE's heap and data segments as mapped here (direct path; empty windows on
    /// the message path): every direct put, get and atomic goes through them.
    win: [MappedWindow; 2],
    /// The active-message endpoint (message path, collectives, peer-loss checks), shared
    /// with the progress thread.
    ep: Arc<Mutex<Endpoint<P, msg::Ctx>>>,
    /// The channel's waiter, for its job-wide lost-rank check ([`Waiter::lost_peer`]: on
    /// the shm driver one load of the job segment's lost-rank count), which the direct
    /// path's fetching calls, atomics, `quiet`, `fence` and barriers consult, so that a
    /// dead PE's still-mapped memory is never taken for a live one.
    lost: P::Waiter,
    /// PEs written by one-way messages since the last quiet (message path).
    dirty: Vec<AtomicBool>,
    /// Small puts waiting to go to each PE as one message (message path, see
    /// [`World::flush`]).
    agg: msg::Aggregator,
    /// Collective calls made per team, to name each call's group (see [`World::group_id`]).
    calls: Mutex<HashMap<Vec<u32>, u32>>,
    heap: Mutex<Heap>,
    _heap_mem: Option<MmapRaw>,
    progress: Mutex<Option<ProgressThread>>,
}

/// Parses `SHMEM_SYMMETRIC_SIZE`-style sizes: a number with an optional K/M/G/T suffix.
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()?.to_ascii_uppercase() {
        'K' => (&s[..s.len() - 1], 1usize << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        'T' => (&s[..s.len() - 1], 1 << 40),
        _ => (s, 1),
    };
    num.trim().parse::<usize>().ok()?.checked_mul(mult)
}

/// Default symmetric heap per PE: 512 MiB of lazily backed memory (rate benchmarks
/// allocate ~200 MB per PE).
pub const DEFAULT_HEAP: usize = 512 << 20;

/// The page size that [`Rma::share_in_place`] works in.
const PAGE: usize = 4096;

/// Aggregated puts to one PE go as one message of at most this many bytes (lanes
/// allowing): 8 KiB gave 44 M puts/s of 8 bytes, 32 KiB 50 M/s (fewer wake-ups of the
/// target; one noisy run each).
const AGG_BYTES: usize = 32 << 10;

/// All-gather of one descriptor per PE over the world group (init only).
fn allgather_small<P: Port>(
    ep: &mut Endpoint<P, msg::Ctx>,
    mine: &[u8],
) -> skifch::Result<Vec<Vec<u8>>> {
    let g = ProtoGroup::world(ep);
    skifch::coll::allgather_bytes(&g.on(ep), mine)
}

impl<P: Port + 'static> World<P> {
    /// Joins PE `job.rank()` of `job.size()` (collective over all ranks: every rank calls
    /// it, and it returns after a barrier). Opens port 2 as a [`skifch::proto`] endpoint.
    pub fn new<D: Driver<Port = P>>(job: &Job<D>, opts: Options) -> Result<Arc<Self>, Error> {
        let (me, n) = (job.rank(), job.size());
        let mut ep = Endpoint::open_with(job, PORT, None)?;
        msg::install(&mut ep)?;
        // Every PE has its handlers before anyone sends to them.
        ep.barrier()?;
        let heap_len = opts
            .heap_size
            .max(internal_bytes() + 4096)
            .next_multiple_of(4096);
        let mut exchange = |b: &[u8]| allgather_small(&mut ep, b);
        // Every PE must agree on the sizes (the allocator's offsets are the addresses).
        let mut sizes = (heap_len as u64).to_le_bytes().to_vec();
        sizes.extend_from_slice(&(opts.globals.map_or(0, |g| g.1) as u64).to_le_bytes());
        let all = exchange(&sizes)?;
        if let Some((pe, _)) = all.iter().enumerate().find(|(_, s)| **s != sizes) {
            return Err(Error::BadArgument(format!(
                "PE {pe} has a different symmetric heap size or program image than PE {me} (SHMEM_SYMMETRIC_SIZE must be the same on every PE, and every PE must run the same executable)"
            )));
        }
        let mut win = [MappedWindow::empty(me), MappedWindow::empty(me)];
        let mut ok = false;
        if let Some(r) = &opts.rma {
            let attempt = (|| -> Result<[MappedWindow; 2], Error> {
                let caps = r.caps();
                if !(caps.load_store || caps.transfers)
                    || (opts.globals.is_some() && !caps.share_in_place)
                {
                    return Err(Error::BadArgument(format!(
                        "the {} RMA provider offers {caps:?}; needed: load/store access{}",
                        r.name(),
                        if opts.globals.is_some() {
                            " and shared globals"
                        } else {
                            ""
                        }
                    )));
                }
                let hw = rma::expose(r.as_ref(), r.alloc(heap_len)?, &mut exchange)?;
                let dw = match opts.globals {
                    Some((addr, len)) => {
                        // The enclosing pages are shared; only `.data`/`.bss` is exposed.
                        let first = addr & !(PAGE - 1);
                        let pages = (addr + len).next_multiple_of(PAGE) - first;
                        // SAFETY: `globals` is the writable data of this program
                        // (shm_rma::data_segment), whose pages are mapped for the
                        // process's life; init runs before the library starts any thread.
                        let seg = unsafe { r.share_in_place(first as *mut u8, pages)? };
                        rma::expose(r.as_ref(), seg, &mut exchange)?.narrow(addr - first, len)
                    }
                    None => MappedWindow::empty(me),
                };
                Ok([hw, dw])
            })();
            let why = attempt.as_ref().err().map(ToString::to_string);
            // Every PE uses the same path: direct only if all PEs opened all segments.
            let votes = exchange(&[u8::from(why.is_none())])?;
            ok = votes.iter().all(|v| v == &[1u8]);
            match attempt {
                Ok(w) if ok => win = w,
                _ => {}
            }
            if !ok && std::env::var_os("SKIFSHMEM_VERBOSE").is_some() {
                crate::say(&format!(
                    "skifshmem: PE {me}: remote memory access unavailable ({}); using messages",
                    why.as_deref().unwrap_or("another PE could not open it")
                ));
            }
        }
        let mut heap_mem = None;
        let heap_base = if ok {
            win[0].reach(me, 0, 0).map_or(0, |p| p as usize)
        } else {
            // private, lazily backed memory served to peers by messages
            let m = MmapOptions::new()
                .len(heap_len)
                .map_anon()
                .map_err(|e| Error::Comm(skifch::Error::os("mapping the symmetric heap", e)))?;
            let m = MmapRaw::from(m);
            let b = m.as_mut_ptr() as usize;
            heap_mem = Some(m);
            b
        };
        let segs: Segs = [(heap_base, heap_len), opts.globals.unwrap_or((0, 0))];
        *ep.ctx_mut() = Some(segs);
        // No PE sends a request before every PE has its segments.
        ep.barrier()?;
        // Only the message path aggregates puts (no PE's put is a message otherwise).
        let agg_max = if ok {
            0
        } else {
            AGG_BYTES.min(ep.max_inline().saturating_sub(64))
        };
        let agg = msg::Aggregator::new(n, agg_max, segs.iter().map(|s| s.1).max().unwrap_or(0));
        let lost = ep.waiter();
        let ep = Arc::new(Mutex::new(ep));
        let path = match &opts.rma {
            Some(r) if ok && !r.caps().load_store => Path::Transfers,
            _ if ok => Path::Direct,
            _ => Path::Messages,
        };
        if path == Path::Transfers && std::env::var_os("SKIFSHMEM_VERBOSE").is_some() {
            crate::say(&format!(
                "skifshmem: PE {me}: remote memory access by transfers to the PEs not mapped here ({} provider); atomics on them by messages",
                opts.rma.as_ref().map_or("?", |r| r.name())
            ));
        }
        let progress = if opts.progress_thread && path != Path::Direct {
            Some(ProgressThread::start_default(ep.clone())?)
        } else {
            None
        };
        Ok(Arc::new(World {
            me,
            n,
            path,
            segs,
            win,
            ep,
            lost,
            dirty: (0..n).map(|_| AtomicBool::new(false)).collect(),
            agg,
            calls: Mutex::new(HashMap::new()),
            heap: Mutex::new(Heap::new(internal_bytes(), heap_len)),
            _heap_mem: heap_mem,
            progress: Mutex::new(progress),
        }))
    }
}

impl<P: Port> World<P> {
    /// This PE's number.
    pub fn my_pe(&self) -> u32 {
        self.me
    }
    /// PEs in the job.
    pub fn n_pes(&self) -> u32 {
        self.n
    }
    /// The access path in use.
    pub fn path(&self) -> Path {
        self.path
    }

    /// `Err(PeerLost)` if the job has lost a PE: the check of every call that must not
    /// succeed once a peer is gone (issue 16 defect 3) — fetching calls, atomics,
    /// `quiet`, `fence`, barriers. On the message path those calls wait for the peer and
    /// would notice anyway; on the direct path they are plain loads, stores and CPU
    /// atomics on memory that stays mapped after its owner died, so nothing else would.
    /// One load of the driver's lost-rank word (job-wide, as the channels' `PeerLost`);
    /// `shmem_putmem` does not pay it (a put completes at the next `quiet`, which checks).
    #[inline]
    pub fn alive(&self) -> Result<(), Error> {
        match self.lost.lost_peer() {
            None => Ok(()),
            Some(rank) => Err(Error::Comm(skifch::Error::PeerLost { rank })),
        }
    }

    /// The endpoint, locked (the progress thread takes the same lock to poll).
    pub(crate) fn ep(&self) -> MutexGuard<'_, Endpoint<P, msg::Ctx>> {
        self.ep.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh group id for the next collective call on `members`: the same on every
    /// member (each makes the same sequence of calls on a team), so each call's messages
    /// are keyed apart from other calls' ([`skifch::coll::ProtoGroup::new`]).
    pub(crate) fn group_id(&self, members: &[u32]) -> u32 {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let c = calls.entry(members.to_vec()).or_insert(0);
        *c = c.wrapping_add(1);
        let h = members
            .iter()
            .fold(0x811C_9DC5u32, |h, &m| (h ^ m).wrapping_mul(0x0100_0193));
        (h.wrapping_add(c.wrapping_mul(0x9E37_79B9))) & 0x7FFF_FFFF
    }

    /// This PE's local address range of segment `seg`.
    pub fn segment(&self, seg: u8) -> (usize, usize) {
        self.segs.get(seg as usize).copied().unwrap_or((0, 0))
    }

    /// The symmetric address of local address `addr` spanning `len` bytes, if it lies in a
    /// symmetric segment.
    pub fn sym(&self, addr: usize, len: usize) -> Option<SymAddr> {
        let end = addr.checked_add(len)?;
        self.segs.iter().enumerate().find_map(|(i, &(b, l))| {
            (l > 0 && addr >= b && end <= b + l).then(|| SymAddr {
                seg: i as u8,
                off: addr - b,
            })
        })
    }

    /// The segment and offset of local range `[addr, addr + len)`, if symmetric.
    #[inline(always)]
    pub fn seg_of(&self, addr: usize, len: usize) -> Option<(u8, usize)> {
        for (i, &(b, l)) in self.segs.iter().enumerate() {
            let off = addr.wrapping_sub(b);
            if off < l && len <= l - off {
                return Some((i as u8, off));
            }
        }
        None
    }

    /// Segment `seg`'s window (`seg` of a range [`World::seg_of`] found, or
    /// [`SEG_HEAP`]/[`SEG_DATA`]): every PE's copy as mapped here on the direct path,
    /// reached by [`MappedWindow::reach`] (a bounds check) and copied by
    /// [`MappedWindow::put_raw`]/[`MappedWindow::get_raw`]; empty on the message path.
    #[inline(always)]
    pub fn window(&self, seg: u8) -> &MappedWindow {
        &self.win[usize::from(seg & 1)]
    }

    /// The message path's small put in the common case, for the C ABI: `len` bytes from
    /// `src` to `pe` at `seg_off` (offset · 2 + segment of a range [`World::seg_of`]
    /// found), added to `pe`'s aggregation buffer if it is free and has room, without
    /// waiting or sending. False: nothing was done (use [`World::put`]); so for a put to
    /// this PE itself, whose buffer is never allocated ([`World::put`] copies those).
    ///
    /// # Safety
    /// `src..src + len` is readable; the range is in a segment.
    #[inline(always)]
    pub unsafe fn put_small_try(
        &self,
        pe: u32,
        seg_off: usize,
        src: *const u8,
        len: usize,
    ) -> bool {
        // SAFETY: forwards the caller's contract; `pe` is checked in range first.
        pe < self.n && self.agg.takes(len) && unsafe { self.agg.try_put(pe, seg_off, src, len) }
    }

    /// Sends an aggregated payload to `pe`.
    #[inline(never)]
    fn send_putv(&self, pe: u32, payload: &[u8]) -> Result<(), Error> {
        self.mark_dirty(pe);
        Ok(self.ep().send(pe, msg::H_PUTV, 0, &[], payload)?)
    }

    /// The local address of `a`.
    pub fn local(&self, a: SymAddr) -> usize {
        self.segment(a.seg).0 + a.off
    }

    fn check(&self, pe: u32, a: SymAddr, len: usize) -> Result<(), Error> {
        if pe >= self.n {
            return Err(Error::BadPe {
                pe: pe as i64,
                n: self.n,
            });
        }
        let (_, l) = self.segment(a.seg);
        match a.off.checked_add(len) {
            Some(e) if e <= l && a.seg <= SEG_DATA => Ok(()),
            _ => Err(Error::NotSymmetric(format!(
                "{len} bytes at offset {:#x} of segment {} (of {l} bytes)",
                a.off, a.seg
            ))),
        }
    }

    /// Address of `a` on `pe` mapped in this process (direct path), as `shmem_ptr`.
    pub fn ptr(&self, pe: u32, a: SymAddr) -> Option<usize> {
        if pe == self.me {
            return Some(self.local(a));
        }
        let w = self.win.get(a.seg as usize)?;
        w.reach(pe, a.off, 1).map(|p| p as usize)
    }

    /// Copies `src` to `dst` on `pe`. Returns when `src` may be reused; the data is
    /// visible at `pe` after the next [`World::quiet`] (or a barrier).
    pub fn put(&self, pe: u32, dst: SymAddr, src: &[u8]) -> Result<(), Error> {
        self.check(pe, dst, src.len())?;
        if src.is_empty() {
            return Ok(());
        }
        // SAFETY: `src` is a live slice.
        if unsafe {
            self.window(dst.seg)
                .put_raw(pe, dst.off, src.as_ptr(), src.len())
        } {
            return Ok(());
        }
        if pe == self.me {
            // SAFETY: checked in range of this PE's live segment.
            unsafe { copy_mem(src.as_ptr(), self.local(dst) as *mut u8, src.len()) };
            return Ok(());
        }
        if let Some(r) = self.window(dst.seg).remote(pe) {
            // `check` bounded the range by the segment, which every PE has alike.
            return Ok(r.put(dst.off, src)?);
        }
        if self.agg.takes(src.len()) {
            let (p, n, so) = (src.as_ptr(), src.len(), dst.off << 1 | dst.seg as usize);
            // SAFETY: `src` is a live slice; `check` bounded the range and `pe`.
            if unsafe { self.put_small_try(pe, so, p, n) } {
                return Ok(());
            }
            let mut g = self.agg.lock();
            // SAFETY: as above.
            return unsafe { g.put(pe, so, p, n, |pe, b| self.send_putv(pe, b)) };
        }
        self.mark_dirty(pe);
        self.flush(pe)?;
        Ok(self
            .ep()
            .send(pe, msg::H_PUT, u32::from(dst.seg), &[dst.off as u64], src)?)
    }

    /// Sends the small puts waiting for `pe` (before any other message to it, so that
    /// messages to one PE stay in issue order).
    fn flush(&self, pe: u32) -> Result<(), Error> {
        if self.path != Path::Messages {
            return Ok(());
        }
        self.agg.lock().flush(pe, |pe, b| self.send_putv(pe, b))
    }

    /// [`World::flush`] for every PE: before this PE waits for anything (a peer may be
    /// waiting for one of these puts).
    fn flush_all(&self) -> Result<(), Error> {
        if self.path != Path::Messages {
            return Ok(());
        }
        let mut g = self.agg.lock();
        for pe in 0..self.n {
            g.flush(pe, |pe, b| self.send_putv(pe, b))?;
        }
        Ok(())
    }

    /// Copies `dst.len()` bytes from `src` on `pe` into `dst`; complete at return.
    pub fn get(&self, pe: u32, src: SymAddr, dst: &mut [u8]) -> Result<(), Error> {
        self.check(pe, src, dst.len())?;
        self.alive()?;
        if dst.is_empty() {
            return Ok(());
        }
        // SAFETY: `dst` is a live, exclusively borrowed slice.
        if unsafe {
            self.window(src.seg)
                .get_raw(pe, src.off, dst.as_mut_ptr(), dst.len())
        } {
            return Ok(());
        }
        if let Some(r) = self.window(src.seg).remote(pe) {
            // `check` bounded the range by the segment, which every PE has alike.
            return Ok(r.get(src.off, dst)?);
        }
        if pe == self.me {
            // A program may spin on its own memory (`shmem_g` to itself): serve first.
            self.poll()?;
            // SAFETY: checked in range of this PE's live segment.
            unsafe { copy_mem(self.local(src) as *const u8, dst.as_mut_ptr(), dst.len()) };
            return Ok(());
        }
        self.flush_all()?;
        let mut ep = self.ep();
        let args = [src.off as u64, dst.len() as u64];
        // SAFETY: `dst` is borrowed for this whole call, which waits for the reply or
        // cancels the request (dropping the landing) before returning.
        let l = unsafe { Landing::raw(dst.as_mut_ptr(), dst.len()) };
        let id = ep.request(pe, msg::H_GET, u32::from(src.seg), &args, &[], l)?;
        match ep.wait(id) {
            Ok(r) if r.len == dst.len() as u64 && !r.truncated => Ok(()),
            Ok(r) => Err(Error::Protocol(format!(
                "PE {pe} answered a {}-byte get with {} bytes",
                dst.len(),
                r.len
            ))),
            Err(e) => {
                ep.cancel(id);
                Err(e.into())
            }
        }
    }

    /// Atomic `op` on the `width`-byte integer at `a` on `pe`; returns the old value
    /// (`fetch == false`: the value is not waited for and 0 is returned).
    pub fn amo(
        &self,
        pe: u32,
        a: SymAddr,
        width: usize,
        op: Amo,
        fetch: bool,
    ) -> Result<u64, Error> {
        self.check(pe, a, width)?;
        self.alive()?;
        if (width != 4 && width != 8) || !a.off.is_multiple_of(width) {
            return Err(Error::BadArgument(format!(
                "an atomic needs a naturally aligned 4- or 8-byte object (got {width} bytes at offset {:#x})",
                a.off
            )));
        }
        let w = self.window(a.seg);
        if w.reach(pe, a.off, width).is_some() {
            return Ok(w.amo(pe, a.off, width, op)?);
        }
        if pe == self.me {
            // A program may spin on its own atomics (a lock whose home is this PE, a
            // fetch loop): serve the requests that change them first.
            self.poll()?;
            // SAFETY: checked in range and aligned; shared locations are accessed only
            // atomically or by raw copies.
            return Ok(unsafe { rma::amo_at(self.local(a) as *mut u8, width, op) });
        }
        let (arg, x, y) = msg::amo_arg(op, width, a.seg);
        let args = [a.off as u64, x, y];
        if fetch {
            self.flush_all()?;
        } else {
            self.flush(pe)?;
        }
        let mut ep = self.ep();
        if !fetch {
            self.mark_dirty(pe);
            ep.send(pe, msg::H_AMO, arg, &args, &[])?;
            return Ok(0);
        }
        let r = ep.call(pe, msg::H_AMO, arg, &args, &[], &mut [])?;
        Ok(r.args[0])
    }

    /// Remote completion of every put and atomic this PE issued (OpenSHMEM `shmem_quiet`).
    pub fn quiet(&self) -> Result<(), Error> {
        self.alive()?;
        for w in &self.win {
            w.quiet()?;
        }
        match self.path {
            Path::Direct => Ok(()),
            // Puts by transfers are complete (the windows' quiet); atomics sent as requests
            // are not yet.
            Path::Transfers | Path::Messages => {
                self.flush_all()?;
                let to: Vec<u32> = (0..self.n)
                    .filter(|&p| self.dirty[p as usize].swap(false, Ordering::AcqRel))
                    .collect();
                if to.is_empty() {
                    return Ok(());
                }
                // A reply to a flush follows every earlier message to that PE.
                let mut ep = self.ep();
                let ids = to
                    .iter()
                    .map(|&pe| ep.request(pe, msg::H_FLUSH, 0, &[], &[], Landing::discard()))
                    .collect::<skifch::Result<Vec<_>>>()?;
                for id in ids {
                    ep.wait(id)?;
                }
                Ok(())
            }
        }
    }

    /// Ordering of puts to each PE (`shmem_fence`): on the direct and message paths the
    /// delivery to one PE is already in order, so this is a compiler/CPU store fence, and
    /// the lost-PE check ([`World::alive`]); on the transfers path a [`World::quiet`].
    pub fn fence(&self) -> Result<(), Error> {
        if self.path == Path::Transfers {
            // An atomic sent as a request may still be on its way when a later put
            // reaches the same PE by a transfer: complete the requests first.
            return self.quiet();
        }
        std::sync::atomic::fence(Ordering::SeqCst);
        self.alive()
    }

    fn mark_dirty(&self, pe: u32) {
        let d = &self.dirty[pe as usize];
        if !d.load(Ordering::Relaxed) {
            d.store(true, Ordering::Release);
        }
    }

    /// One progress sweep: serves waiting requests, reports a handler error (a peer's
    /// bad request) or a lost PE. On the message path a PE's memory changes only in
    /// such sweeps, so every call a program may spin on makes one (waits and tests,
    /// locks, and gets, `g`, atomics and `signal_fetch` on this PE's own memory).
    pub fn poll(&self) -> Result<(), Error> {
        self.flush_all()?;
        self.poll_endpoint()?;
        Ok(())
    }

    /// Serves waiting requests unless another thread holds the endpoint: that thread (a
    /// collective, a quiet, the progress thread) serves them while it waits, and a thread
    /// that only waits for a value must never queue behind it (OpenSHMEM 1.5 §9.2: a
    /// blocked thread does not prevent the other threads' calls). Requests served.
    fn poll_endpoint(&self) -> Result<usize, Error> {
        if self.path == Path::Transfers {
            // Peers' transfers to this PE's memory need this PE's provider calls too.
            self.win[0].progress();
        }
        let mut ep = match self.ep.try_lock() {
            Ok(ep) => ep,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return Ok(0),
        };
        Ok(ep.poll()?)
    }

    /// Waits until `cond(value at local address addr)` holds, reading it atomically with
    /// `width` bytes (1, 2, 4, 8); serves requests and checks for lost PEs meanwhile.
    pub fn wait_local(
        &self,
        addr: usize,
        width: usize,
        mut cond: impl FnMut(u64) -> bool,
    ) -> Result<u64, Error> {
        let mut b = crate::wait::backoff();
        loop {
            let v = self.load_local(addr, width);
            if cond(v) {
                return Ok(v);
            }
            if self.path != Path::Direct || b.polls() % 256 == 255 {
                self.flush_all()?;
                // Keep spinning (no yield) while requests are flowing in.
                if self.poll_endpoint()? > 0 {
                    b.reset();
                    continue;
                }
            }
            b.snooze();
        }
    }

    /// Atomic load of this PE's `width`-byte value at `addr` (in a symmetric segment or
    /// private memory that a peer may write through this library).
    pub fn load_local(&self, addr: usize, width: usize) -> u64 {
        // SAFETY: callers pass the address of a live object of `width` bytes (C ABI:
        // the program's variable); accesses by other PEs are atomic or raw copies.
        unsafe {
            match width {
                1 => u64::from(AtomicU8::from_ptr(addr as *mut u8).load(Ordering::SeqCst)),
                2 => u64::from(AtomicU16::from_ptr(addr as *mut u16).load(Ordering::SeqCst)),
                4 => u64::from(AtomicU32::from_ptr(addr as *mut u32).load(Ordering::SeqCst)),
                _ => AtomicU64::from_ptr(addr as *mut u64).load(Ordering::SeqCst),
            }
        }
    }

    /// Copies local bytes into this PE's symmetric memory at `a` (raw, checked).
    pub fn write_local(&self, a: SymAddr, src: &[u8]) -> Result<(), Error> {
        self.put(self.me, a, src)
    }

    /// Copies this PE's symmetric bytes at `a` out (raw, checked).
    pub fn read_local(&self, a: SymAddr, dst: &mut [u8]) -> Result<(), Error> {
        self.get(self.me, a, dst)
    }

    /// Barrier among `members` (this PE must be one of them; every member calls it with
    /// the same list, in the same order relative to other collectives it shares with the
    /// members). Completes this PE's puts first (`quiet`), so data put before the barrier
    /// is visible to every member after it; then [`skifch::coll::barrier`] over the
    /// members' active-message group.
    pub fn barrier(&self, members: &[u32]) -> Result<(), Error> {
        self.quiet()?;
        let gid = self.group_id(members);
        let mut ep = self.ep();
        let g = ProtoGroup::new(&ep, gid, members.to_vec())?;
        skifch::coll::barrier(&g.on(&mut ep))?;
        // A member that sent its part and died is gone all the same.
        self.alive()
    }

    /// [`World::barrier`] over all PEs.
    pub fn barrier_all(&self) -> Result<(), Error> {
        let all: Vec<u32> = (0..self.n).collect();
        self.barrier(&all)
    }

    /// Collective allocation of `size` bytes aligned to `align` on every PE (same
    /// arguments on every PE: checked, since different sizes would put later objects at
    /// different offsets — issue 16 defect 5); completes this PE's puts and synchronizes
    /// as a barrier (OpenSHMEM 1.5 §9.3.1).
    pub fn malloc(&self, size: usize, align: usize) -> Result<SymAddr, Error> {
        self.quiet()?;
        let world = crate::coll::Team::world(self.n);
        let seen = self.min_max(&world, &[size as u64, align as u64])?;
        if let [(lo, hi), (alo, ahi)] = seen[..] {
            if lo != hi || alo != ahi {
                return Err(Error::BadArgument(format!(
                    "the PEs asked for different allocations: {lo} to {hi} bytes aligned to {alo} to {ahi} (this PE: {size} bytes aligned to {align}); a symmetric allocation needs the same size and alignment on every PE"
                )));
            }
        }
        let off = self
            .heap
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .alloc(size, align)?;
        let a = SymAddr { seg: SEG_HEAP, off };
        // Offsets are aligned; addresses are only as far as each PE's mapping of the heap
        // is (a page, at least). Beyond that every PE must find its address aligned.
        if align > 4096 && !self.all(&world, self.local(a).is_multiple_of(align))? {
            self.heap
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .free(off)?;
            return Err(Error::Misaligned { align });
        }
        Ok(a)
    }

    /// Collective free (barrier first, so no PE still accesses the block).
    pub fn free(&self, a: SymAddr) -> Result<(), Error> {
        self.barrier_all()?;
        if a.seg != SEG_HEAP {
            return Err(Error::BadArgument(
                "freeing memory that is not on the symmetric heap".into(),
            ));
        }
        self.heap
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .free(a.off)
    }

    /// Size of the heap block at `a`.
    pub fn block_size(&self, a: SymAddr) -> Option<usize> {
        self.heap
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .size_of(a.off)
    }

    /// Ends this PE's part in the job: a barrier, then the progress thread stops.
    pub fn finalize(&self) -> Result<(), Error> {
        self.barrier_all()?;
        if let Some(t) = self
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            t.stop()?;
        }
        Ok(())
    }
}
