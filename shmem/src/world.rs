//! A PE's view of the job: the symmetric segments, the two access paths, and the
//! operations every part of the library is built from (put, get, atomics, quiet, local
//! waits, barrier). See the crate docs for the model.
#![allow(unsafe_code)] // this PE's own symmetric memory through raw pointers and atomics

use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use memmap2::{MmapOptions, MmapRaw};
use skifch::rma::{self, Amo, Rma, Window};
use skifch::{Driver, Job, Port};

use crate::heap::Heap;
use crate::msg::{Net, Segs, PORT};
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
    /// Through the driver's RMA capability (every PE's segments mapped here).
    Direct,
    /// As requests served by the target PE ([`crate::msg`]).
    Messages,
}

/// How to build a [`World`].
pub struct Options {
    /// The driver's RMA provider, if it has one and it should be used.
    pub rma: Option<Box<dyn Rma>>,
    /// Symmetric heap bytes per PE.
    pub heap_size: usize,
    /// Also make this process's global variables symmetric (C programs; needs `rma` for
    /// the direct path, and one executable for all PEs).
    pub globals: Option<(usize, usize)>,
    /// Start a progress thread (message path).
    pub progress_thread: bool,
}

/// Bytes at the start of the heap that the library keeps for itself: one barrier arrival
/// counter per PE, then a scratch word for collectives.
fn internal_bytes(n: u32) -> usize {
    (n as usize * 8 + 64).next_multiple_of(4096)
}
const SCRATCH: fn(u32) -> usize = |n| n as usize * 8;

/// One PE's library state (shared by the threads of the PE).
pub struct World<P: Port> {
    me: u32,
    n: u32,
    path: Path,
    segs: Segs,
    win: [Option<Box<dyn Window>>; 2],
    net: Mutex<Net<P>>,
    heap: Mutex<Heap>,
    /// Barrier arrivals seen from each PE (monotonic; see [`World::barrier`]).
    seen: Mutex<Vec<u64>>,
    _heap_mem: Option<MmapRaw>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    progress: Mutex<Option<std::thread::JoinHandle<()>>>,
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

impl<P: Port + 'static> World<P> {
    /// Joins PE `job.rank()` of `job.size()` (collective over all ranks: every rank calls
    /// it, and it returns after a barrier). Opens port 2.
    pub fn new<D: Driver<Port = P>>(job: &Job<D>, opts: Options) -> Result<Arc<Self>, Error> {
        let (me, n) = (job.rank(), job.size());
        let ch = job.open(PORT)?;
        let mut net = Net::new(ch, me, n, job.max_message());
        let heap_len = opts
            .heap_size
            .max(internal_bytes(n) + 4096)
            .next_multiple_of(4096);
        let no_segs: Segs = [(0, 0); 2];
        let mut seq = 0u64;
        let mut exchange = |net: &mut Net<P>, bytes: &[u8]| -> Result<Vec<Vec<u8>>, Error> {
            seq += 1;
            net.exch_send(&no_segs, n, seq, bytes)?;
            let mut all = vec![None; n as usize];
            all[me as usize] = Some(bytes.to_vec());
            while all.iter().any(Option::is_none) {
                net.progress(&no_segs)?;
                for pe in 0..n {
                    if all[pe as usize].is_none() {
                        all[pe as usize] = net.exch_take(pe, seq);
                    }
                }
                if all.iter().any(Option::is_none) {
                    std::thread::yield_now();
                }
            }
            Ok(all.into_iter().flatten().collect())
        };
        // Every PE must agree on the sizes (the allocator's offsets are the addresses).
        let mut sizes = (heap_len as u64).to_le_bytes().to_vec();
        sizes.extend_from_slice(&(opts.globals.map_or(0, |g| g.1) as u64).to_le_bytes());
        let all = exchange(&mut net, &sizes)?;
        if let Some((pe, _)) = all.iter().enumerate().find(|(_, s)| **s != sizes) {
            return Err(Error::BadArgument(format!(
                "PE {pe} has a different symmetric heap size or program image than PE {me} (SHMEM_SYMMETRIC_SIZE must be the same on every PE, and every PE must run the same executable)"
            )));
        }
        let mut win: [Option<Box<dyn Window>>; 2] = [None, None];
        let mut heap_mem: Option<MmapRaw> = None;
        let heap_base;
        let mut ok = false;
        let mut why = String::new();
        if let Some(r) = &opts.rma {
            let attempt = (|| -> Result<[Box<dyn Window>; 2], Error> {
                let seg = r.alloc(heap_len)?;
                let hw = {
                    let mut ex = |b: &[u8]| {
                        exchange(&mut net, b)
                            .map_err(|e| skifch::Error::InvalidArgument(e.to_string().into()))
                    };
                    rma::expose(r.as_ref(), seg, &mut ex)?
                };
                let dw: Box<dyn Window> = match opts.globals {
                    Some((addr, len)) => {
                        // SAFETY: `globals` is the page-aligned writable data of this
                        // program (shm_rma::data_segment), mapped for the process's life;
                        // init runs before the library starts any thread.
                        let seg = unsafe { r.share_in_place(addr as *mut u8, len)? };
                        let mut ex = |b: &[u8]| {
                            exchange(&mut net, b)
                                .map_err(|e| skifch::Error::InvalidArgument(e.to_string().into()))
                        };
                        Box::new(rma::expose(r.as_ref(), seg, &mut ex)?)
                    }
                    None => Box::new(EmptyWindow),
                };
                Ok([Box::new(hw), dw])
            })();
            let mine = match &attempt {
                Ok(_) => vec![1u8],
                Err(e) => {
                    why = e.to_string();
                    vec![0u8]
                }
            };
            // Every PE uses the same path: direct only if all PEs opened all segments.
            let votes = exchange(&mut net, &mine)?;
            ok = votes.iter().all(|v| v == &[1u8]);
            if let Ok([h, d]) = attempt {
                if ok {
                    win = [Some(h), Some(d)];
                } else {
                    // another PE failed: everyone closes the windows and uses messages
                    drop((h, d));
                }
            }
            if !ok && std::env::var_os("SKIFSHMEM_VERBOSE").is_some() {
                eprintln!(
                    "skifshmem: PE {me}: remote memory access unavailable ({why}); using messages"
                );
            }
        }
        if ok {
            heap_base = win[0]
                .as_ref()
                .and_then(|w| w.direct(me))
                .map_or(0, |p| p as usize);
        } else {
            // private, lazily backed memory served to peers by messages
            let m = MmapOptions::new()
                .len(heap_len)
                .map_anon()
                .map_err(|e| Error::Comm(skifch::Error::os("mapping the symmetric heap", e)))?;
            let m = MmapRaw::from(m);
            heap_base = m.as_mut_ptr() as usize;
            heap_mem = Some(m);
        }
        let segs: Segs = [(heap_base, heap_len), opts.globals.unwrap_or((0, 0))];
        net.ready = true;
        let w = Arc::new(World {
            me,
            n,
            path: if ok { Path::Direct } else { Path::Messages },
            segs,
            win,
            net: Mutex::new(net),
            heap: Mutex::new(Heap::new(internal_bytes(n), heap_len)),
            seen: Mutex::new(vec![0; n as usize]),
            _heap_mem: heap_mem,
            stop: Arc::default(),
            progress: Mutex::new(None),
        });
        if opts.progress_thread && w.path == Path::Messages {
            w.start_progress_thread()?;
        }
        w.barrier_all()?;
        Ok(w)
    }
}

/// The data window of a program without shared globals: every access is refused.
struct EmptyWindow;
impl Window for EmptyWindow {
    fn len(&self, _: u32) -> usize {
        0
    }
    fn put(&self, _: u32, _: usize, _: &[u8]) -> skifch::Result<()> {
        Err(skifch::Error::InvalidArgument(
            "global variables are not symmetric in this job".into(),
        ))
    }
    fn get(&self, _: u32, _: usize, _: &mut [u8]) -> skifch::Result<()> {
        Err(skifch::Error::InvalidArgument(
            "global variables are not symmetric in this job".into(),
        ))
    }
    fn amo(&self, _: u32, _: usize, _: usize, _: Amo) -> skifch::Result<u64> {
        Err(skifch::Error::InvalidArgument(
            "global variables are not symmetric in this job".into(),
        ))
    }
    fn quiet(&self) {}
    fn direct(&self, _: u32) -> Option<*mut u8> {
        None
    }
}

impl<P: Port + 'static> World<P> {
    fn start_progress_thread(self: &Arc<Self>) -> Result<(), Error> {
        let weak = Arc::downgrade(self);
        let stop = self.stop.clone();
        let h = std::thread::Builder::new()
            .name("skifshmem-progress".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Some(w) = weak.upgrade() else { return };
                    if let Ok(mut g) = w.net.try_lock() {
                        if let Err(e) = g.progress(&w.segs) {
                            drop(g);
                            crate::fatal("progress thread", &e);
                        }
                    }
                    drop(w);
                    std::thread::sleep(Duration::from_micros(20));
                }
            })
            .map_err(|e| Error::Comm(skifch::Error::os("starting the progress thread", e)))?;
        *self.progress.lock().unwrap_or_else(|p| p.into_inner()) = Some(h);
        Ok(())
    }
}

impl<P: Port> Drop for World<P> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.progress.get_mut().ok().and_then(Option::take) {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
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

    fn net(&self) -> MutexGuard<'_, Net<P>> {
        self.net.lock().unwrap_or_else(|p| p.into_inner())
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
            Some(e) if e <= l => Ok(()),
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
        let w = self.win.get(a.seg as usize)?.as_ref()?;
        (pe < self.n && a.off < w.len(pe)).then(|| w.direct(pe).map(|b| b as usize + a.off))?
    }

    /// Copies `src` to `dst` on `pe`. Returns when `src` may be reused; the data is
    /// visible at `pe` after the next [`World::quiet`] (or a barrier).
    pub fn put(&self, pe: u32, dst: SymAddr, src: &[u8]) -> Result<(), Error> {
        self.check(pe, dst, src.len())?;
        if src.is_empty() {
            return Ok(());
        }
        if let Some(w) = &self.win[dst.seg as usize] {
            return Ok(w.put(pe, dst.off, src)?);
        }
        if pe == self.me {
            // SAFETY: checked in range of this PE's live segment.
            unsafe { std::ptr::copy(src.as_ptr(), self.local(dst) as *mut u8, src.len()) };
            return Ok(());
        }
        self.net().put(&self.segs, pe, dst.seg, dst.off, src)
    }

    /// Copies `dst.len()` bytes from `src` on `pe` into `dst`; complete at return.
    pub fn get(&self, pe: u32, src: SymAddr, dst: &mut [u8]) -> Result<(), Error> {
        self.check(pe, src, dst.len())?;
        if dst.is_empty() {
            return Ok(());
        }
        if let Some(w) = &self.win[src.seg as usize] {
            return Ok(w.get(pe, src.off, dst)?);
        }
        if pe == self.me {
            // SAFETY: checked in range of this PE's live segment.
            unsafe { std::ptr::copy(self.local(src) as *const u8, dst.as_mut_ptr(), dst.len()) };
            return Ok(());
        }
        let tok = self.net().get_start(
            &self.segs,
            pe,
            src.seg,
            src.off,
            dst.as_mut_ptr(),
            dst.len(),
        )?;
        self.wait_net(|net| net.get_done(tok))
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
        if (width != 4 && width != 8) || a.off % width != 0 {
            return Err(Error::BadArgument(format!(
                "an atomic needs a naturally aligned 4- or 8-byte object (got {width} bytes at offset {:#x})",
                a.off
            )));
        }
        if let Some(w) = &self.win[a.seg as usize] {
            return Ok(w.amo(pe, a.off, width, op)?);
        }
        if pe == self.me {
            // SAFETY: checked in range and aligned; shared locations are accessed only
            // atomically or by raw copies.
            return Ok(unsafe { rma::amo_at(self.local(a) as *mut u8, width, op) });
        }
        let tok = self
            .net()
            .amo_start(&self.segs, pe, a.seg, a.off, width, op, fetch)?;
        if !fetch {
            return Ok(0);
        }
        let mut v = 0;
        self.wait_net(|net| net.amo_done(tok).map(|x| v = x).is_some())?;
        Ok(v)
    }

    /// Waits (serving requests) until `done` holds.
    fn wait_net(&self, mut done: impl FnMut(&mut Net<P>) -> bool) -> Result<(), Error> {
        let mut spins = 0u32;
        loop {
            {
                let mut net = self.net();
                if done(&mut net) {
                    return Ok(());
                }
                net.progress(&self.segs)?;
                if done(&mut net) {
                    return Ok(());
                }
            }
            backoff(&mut spins);
        }
    }

    /// Remote completion of every put and atomic this PE issued (OpenSHMEM `shmem_quiet`).
    pub fn quiet(&self) -> Result<(), Error> {
        match self.path {
            Path::Direct => {
                for w in self.win.iter().flatten() {
                    w.quiet();
                }
                Ok(())
            }
            Path::Messages => self.wait_net(|net| net.all_acked()),
        }
    }

    /// Ordering of puts to each PE (`shmem_fence`): on both paths the delivery to one PE
    /// is already in order, so this is a compiler/CPU store fence only.
    pub fn fence(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
    }

    /// One progress sweep (message path) and a check that no PE was lost.
    pub fn poll(&self) -> Result<(), Error> {
        let mut net = self.net();
        net.progress(&self.segs)
    }

    /// Waits until `cond(value at local address addr)` holds, reading it atomically with
    /// `width` bytes (1, 2, 4, 8); serves requests and checks for lost PEs meanwhile.
    pub fn wait_local(
        &self,
        addr: usize,
        width: usize,
        mut cond: impl FnMut(u64) -> bool,
    ) -> Result<u64, Error> {
        let mut spins = 0u32;
        loop {
            let v = self.load_local(addr, width);
            if cond(v) {
                return Ok(v);
            }
            if self.path == Path::Messages || spins % 256 == 255 {
                self.poll()?;
            }
            backoff(&mut spins);
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
    /// is visible to every member after it.
    ///
    /// Dissemination over pairwise arrival counters: in round k this PE adds 1 to its
    /// counter at member `i+2^k` and waits for the counter of member `i−2^k` to pass what
    /// it has seen. Counters only grow, so barriers of different teams and active sets
    /// need no reset and no per-team state.
    pub fn barrier(&self, members: &[u32]) -> Result<(), Error> {
        self.quiet()?;
        let m = members.len();
        let Some(i) = members.iter().position(|&p| p == self.me) else {
            return Err(Error::BadArgument(format!(
                "PE {} is not in the barrier's set {members:?}",
                self.me
            )));
        };
        let mut dist = 1;
        while dist < m {
            let to = members[(i + dist) % m];
            let from = members[(i + m - dist) % m];
            self.amo(
                to,
                SymAddr {
                    seg: SEG_HEAP,
                    off: self.me as usize * 8,
                },
                8,
                Amo::Add(1),
                false,
            )?;
            let want = {
                let mut s = self.seen.lock().unwrap_or_else(|p| p.into_inner());
                s[from as usize] += 1;
                s[from as usize]
            };
            let addr = self.segs[0].0 + from as usize * 8;
            self.wait_local(addr, 8, |v| v >= want)?;
            dist *= 2;
        }
        self.quiet()
    }

    /// [`World::barrier`] over all PEs.
    pub fn barrier_all(&self) -> Result<(), Error> {
        let all: Vec<u32> = (0..self.n).collect();
        self.barrier(&all)
    }

    /// Collective allocation of `size` bytes aligned to `align` on every PE (same
    /// arguments on every PE); ends with a barrier.
    pub fn malloc(&self, size: usize, align: usize) -> Result<SymAddr, Error> {
        let off = self
            .heap
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .alloc(size, align)?;
        self.barrier_all()?;
        Ok(SymAddr { seg: SEG_HEAP, off })
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

    /// The scratch word of this library at every PE (collective bookkeeping).
    pub(crate) fn scratch(&self) -> SymAddr {
        SymAddr {
            seg: SEG_HEAP,
            off: SCRATCH(self.n),
        }
    }

    /// Ends this PE's part in the job: a barrier, then the progress thread stops.
    pub fn finalize(&self) -> Result<(), Error> {
        self.barrier_all()?;
        self.stop.store(true, Ordering::Relaxed);
        Ok(())
    }
}

/// Spin, then yield (2 vCPUs are often shared by more processes than that).
fn backoff(spins: &mut u32) {
    *spins = spins.wrapping_add(1);
    if *spins < 200 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}
