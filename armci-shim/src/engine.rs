//! One rank's ARMCI state: the endpoint on port 3, the collective allocations, and the
//! contiguous operations every other call is built from (put, get, accumulate, atomics),
//! each on the direct or the message path (crate docs).
#![allow(unsafe_code)] // user buffers from C and peers' memory mapped here, as raw pointers

use std::collections::BTreeMap;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use memmap2::{MmapOptions, MmapRaw};
use skifch::coll::ProtoGroup;
use skifch::proto::{Endpoint, ProgressThread};
use skifch::rma::{self, amo_at, Amo, MappedWindow, Rma};
use skifch::{Driver, Job, Port, Waiter};

use crate::acc::{self, AccType, Scale};
use crate::hint::{Hints, Hit};
use crate::msg::{self, Ctx};
use crate::pipe::Batch;
use crate::{Error, Result};

/// The port of this library's endpoint (the port table: [`skifch::ports`]).
pub const PORT: u32 = skifch::ports::ARMCI;

/// How remote accesses are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// Through the driver's RMA capability: every allocation mapped by every rank.
    Direct,
    /// As requests served by the target ([`crate::msg`]).
    Messages,
}

/// How to build an [`Armci`].
pub struct Options {
    /// The driver's RMA provider ([`skifch::Job::rma`]) if it should be used; a provider
    /// without load/store access is not (the message path serves then).
    pub rma: Option<Arc<dyn Rma>>,
    /// Start a progress thread on the message path, so that a rank computing outside the
    /// library still serves the others' requests (its memory, the mutexes it hosts).
    pub progress_thread: bool,
}

/// A read-modify-write operation (`enum ARMCI_Rmw_e`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rmw {
    /// `ARMCI_FETCH_AND_ADD`: `int`.
    FetchAdd,
    /// `ARMCI_FETCH_AND_ADD_LONG`: `long`.
    FetchAddLong,
    /// `ARMCI_SWAP`: `int`.
    Swap,
    /// `ARMCI_SWAP_LONG`: `long`.
    SwapLong,
}

impl Rmw {
    /// The operand's width and the atomic that does it.
    pub fn amo(self, value: i64) -> (usize, Amo) {
        match self {
            Rmw::FetchAdd => (4, Amo::Add(value as i32 as u32 as u64)),
            Rmw::FetchAddLong => (8, Amo::Add(value as u64)),
            Rmw::Swap => (4, Amo::Swap(value as i32 as u32 as u64)),
            Rmw::SwapLong => (8, Amo::Swap(value as u64)),
        }
    }

    /// The old value an atomic of this operation returned, sign-extended.
    pub fn widen(self, old: u64) -> i64 {
        match self {
            Rmw::FetchAdd | Rmw::Swap => i64::from(old as u32 as i32),
            Rmw::FetchAddLong | Rmw::SwapLong => old as i64,
        }
    }
}

/// How an allocation's blocks are reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Every rank's mapped (the direct path).
    Mapped,
    /// The node's ranks' mapped, the others' by transfers and messages (`transfers.rs`).
    Transfers,
    /// By messages.
    Messages,
}

/// One collective allocation.
pub(crate) struct Alloc {
    /// Every rank's block: its address in that rank's address space and its length (0:
    /// that rank asked for no memory and its base is NULL).
    pub(crate) bases: Vec<(usize, usize)>,
    /// Every rank's block mapped here (direct path), or mapped and reached by transfers
    /// (the message path's transfers: `transfers.rs`); empty on the message path.
    pub(crate) win: MappedWindow,
    /// The message path's transfers: the node's ranks mapped in `win`, the others'
    /// puts and gets by its transfers.
    xfer: bool,
    /// Accessed through `win`; false: by messages (the message path, and group
    /// allocations, which `rma::expose` cannot make: it is collective over the job).
    direct: bool,
    /// This rank's block on the message path.
    _mem: Option<MmapRaw>,
}

/// A remote range found in an allocation.
///
/// On the direct path it carries where the range is mapped here, found once by
/// [`Armci::locate`]: every operation then reaches the memory without taking the
/// allocation table's lock a second time. A target lives for one call; the mapping stays
/// until `ARMCI_Free`, which is collective and starts with a barrier, so no operation of
/// this rank is under way when it unmaps.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// Reached through the window (direct path) rather than by messages.
    direct: bool,
    pub(crate) proc: u32,
    pub(crate) addr: usize,
    /// Direct path: the address of `addr` mapped here (0 on the message path).
    ptr: usize,
    /// Direct path: mapped bytes from `ptr` to the end of the rank's block.
    room: usize,
    /// Message path: the allocation whose window reaches `proc` by transfers
    /// (`transfers.rs`); 0: none.
    pub(crate) alloc: u64,
}

impl Target {
    /// How this target is reached.
    pub fn path(self) -> Path {
        if self.direct {
            Path::Direct
        } else {
            Path::Messages
        }
    }

    /// The address in the target's address space.
    pub fn addr(self) -> usize {
        self.addr
    }

    /// `addr` in a rank's block at `base` of `len` bytes, mapped here at `ptr` (0: not
    /// mapped, the message path); `addr` lies in the block.
    #[inline]
    fn in_block(
        direct: bool,
        proc: u32,
        addr: usize,
        base: usize,
        len: usize,
        ptr: usize,
    ) -> Target {
        let off = addr - base;
        Target {
            direct,
            proc,
            addr,
            ptr: if ptr == 0 { 0 } else { ptr + off },
            room: if ptr == 0 { 0 } else { len - off },
            alloc: 0,
        }
    }

    /// The target `bytes` further on (within the range it was located for).
    pub fn at(self, bytes: usize) -> Target {
        Target {
            addr: self.addr + bytes,
            ptr: if self.ptr == 0 { 0 } else { self.ptr + bytes },
            room: self.room.saturating_sub(bytes),
            ..self
        }
    }
}

/// One rank's library state (shared by the threads of the rank).
pub struct Armci<P: Port> {
    me: u32,
    n: u32,
    path: Path,
    rma: Option<Arc<dyn Rma>>,
    /// The message path's transfers provider (`transfers.rs`).
    xfer: Option<Arc<dyn Rma>>,
    /// The endpoint, shared with the progress thread.
    ep: Arc<Mutex<Endpoint<P, Ctx>>>,
    progress: Mutex<Option<ProgressThread>>,
    /// The channel's waiter, for the job-wide lost-rank check ([`Armci::alive`]).
    lost: P::Waiter,
    /// Allocations by sequence number (the same on every rank: allocation is collective).
    /// Every change clears `hints`.
    pub(crate) allocs: RwLock<BTreeMap<u64, Alloc>>,
    /// The block located last in each rank's memory ([`crate::hint`]).
    hints: Hints,
    /// Calls of the fast paths, for the lost-rank check ([`Armci::tick`]);
    /// a cache line of its own, the only word those calls write.
    ticks: Ticks,
    /// Allocations made: (world, group).
    next_id: Mutex<(u64, u64)>,
    /// Largest payload of one request on the message path.
    pub(crate) chunk: usize,
    pub(crate) mutexes: Mutex<Option<crate::mutex::Mutexes>>,
    /// Groups created so far in each parent group, by the parent's id (names the next
    /// group).
    pub(crate) groups: Mutex<std::collections::HashMap<u32, u32>>,
}

/// The fast paths leave the lost-rank check to the general path once in this many calls
/// ([`Armci::tick`]).
pub const CHECK_EVERY: u32 = 64;

/// A counter on a cache line of its own.
#[repr(align(64))]
#[derive(Default)]
struct Ticks(AtomicU32);

/// Largest payload of one message-path request (as skifshmem's aggregated puts: fewer
/// round trips than smaller requests, and several still fit in a receive ring).
const CHUNK: usize = 32 << 10;

/// All-gather of one descriptor per rank over the world group (set-up exchanges).
fn allgather<P: Port>(ep: &mut Endpoint<P, Ctx>, mine: &[u8]) -> skifch::Result<Vec<Vec<u8>>> {
    let g = ProtoGroup::world(ep);
    skifch::coll::allgather_bytes(&g.on(ep), mine)
}

impl<P: Port + 'static> Armci<P>
where
    P: Send,
{
    /// Joins rank `job.rank()` of `job.size()` (collective: every rank calls it; returns
    /// after a barrier). Opens port 3 as a [`skifch::proto`] endpoint.
    pub fn new<D: Driver<Port = P>>(job: &Job<D>, opts: Options) -> Result<Arc<Self>> {
        let (me, n) = (job.rank(), job.size());
        let mut ep = Endpoint::open_with(job, PORT, Ctx::default())?;
        msg::install(&mut ep)?;
        ep.barrier()?;
        // Every rank takes the same path: direct only if every rank has load/store RMA,
        // the message path's transfers (`transfers.rs`) only if every rank takes them.
        let choice = std::env::var("ARMCI_SHIM_RMA").ok();
        let chosen = rma::JobPath::choose(opts.rma, choice.as_deref(), &mut |b: &[u8]| {
            allgather(&mut ep, b)
        })?;
        let (direct, rma, xfer) = match chosen {
            rma::JobPath::Direct(r) => (true, Some(r), None),
            rma::JobPath::Transfers(r) => (false, None, Some(r)),
            rma::JobPath::Messages => (false, None, None),
        };
        let chunk = ep.max_inline().saturating_sub(64).clamp(64, CHUNK);
        let lost = ep.waiter();
        if std::env::var_os("ARMCI_SHIM_VERBOSE").is_some() {
            crate::say(&format!(
                "armci: rank {me}: {} path, {chunk}-byte requests (largest inline payload {})",
                match (direct, &xfer) {
                    (true, _) => "direct",
                    (false, Some(_)) => "message (with transfers)",
                    (false, None) => "message",
                },
                ep.max_inline()
            ));
        }
        let ep = Arc::new(Mutex::new(ep));
        let progress = if opts.progress_thread && !direct {
            Some(ProgressThread::start_default(ep.clone())?)
        } else {
            None
        };
        Ok(Arc::new(Armci {
            me,
            n,
            path: if direct { Path::Direct } else { Path::Messages },
            rma,
            xfer,
            ep,
            progress: Mutex::new(progress),
            lost,
            allocs: RwLock::new(BTreeMap::new()),
            hints: Hints::new(n),
            ticks: Ticks::default(),
            next_id: Mutex::new((0, 0)),
            chunk,
            mutexes: Mutex::new(None),
            groups: Mutex::new(std::collections::HashMap::new()),
        }))
    }
}

impl<P: Port> Armci<P> {
    /// This rank.
    pub fn me(&self) -> u32 {
        self.me
    }
    /// Ranks in the job.
    pub fn nproc(&self) -> u32 {
        self.n
    }
    /// The access path in use.
    pub fn path(&self) -> Path {
        self.path
    }

    /// The endpoint, locked.
    pub(crate) fn ep(&self) -> MutexGuard<'_, Endpoint<P, Ctx>> {
        self.ep.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `Err(PeerLost)` once the job has lost a rank: direct-path accesses are loads and
    /// stores on memory that stays mapped after its owner died, so they check this.
    #[inline]
    pub fn alive(&self) -> Result<()> {
        match self.lost.lost_peer() {
            None => Ok(()),
            Some(rank) => Err(Error::Comm(skifch::Error::PeerLost { rank })),
        }
    }

    /// `proc` as a rank, or [`Error::BadProc`].
    pub fn proc(&self, proc: i64) -> Result<u32> {
        if proc < 0 || proc >= i64::from(self.n) {
            return Err(Error::BadProc { proc, n: self.n });
        }
        Ok(proc as u32)
    }

    /// Collective allocation of `len` bytes on this rank (ranks may ask for different
    /// lengths, 0 included); returns every rank's base in its own address space (0 for a
    /// rank that asked for 0 bytes). The memory is zeroed.
    ///
    /// # Collective Operation
    /// Every rank calls it, in the same order as every other collective call; it returns
    /// after a barrier, so peers may access the new memory at once.
    pub fn malloc(&self, len: usize) -> Result<Vec<usize>> {
        Ok(self.malloc_blocks(len)?.iter().map(|b| b.0).collect())
    }

    /// As [`Armci::malloc`], returning every rank's (base, length).
    pub(crate) fn malloc_blocks(&self, len: usize) -> Result<Vec<(usize, usize)>> {
        let mut ep = self.ep();
        let (win, mem, base) = match self.rma.as_ref().or(self.xfer.as_ref()) {
            Some(r) => {
                let seg = r.alloc(len.max(1))?;
                let win = rma::expose(r.as_ref(), seg, &mut |b: &[u8]| allgather(&mut ep, b))?;
                let base = win.reach(self.me, 0, 0).map_or(0, |p| p as usize);
                (win, None, base)
            }
            None => {
                let (m, b) = Self::private_block(len)?;
                (MappedWindow::empty(self.me), Some(m), b)
            }
        };
        let base = if len == 0 { 0 } else { base };
        let mut mine = (base as u64).to_le_bytes().to_vec();
        mine.extend_from_slice(&(len as u64).to_le_bytes());
        let all = allgather(&mut ep, &mine)?;
        let bases: Vec<(usize, usize)> = all
            .iter()
            .map(|b| {
                (
                    skifch::coll::le_word(b, 0) as usize,
                    skifch::coll::le_word(b, 1) as usize,
                )
            })
            .collect();
        if len > 0 && self.path == Path::Messages {
            ep.ctx_mut().allocs.push((base, len));
        }
        let reach = match self.path {
            Path::Direct => Reach::Mapped,
            Path::Messages if self.xfer.is_some() => Reach::Transfers,
            Path::Messages => Reach::Messages,
        };
        self.insert_alloc(bases.clone(), win, mem, reach, false);
        ep.barrier()?;
        Ok(bases)
    }

    /// Records a new allocation (every rank's block; this rank's mapping or memory).
    pub(crate) fn insert_alloc(
        &self,
        bases: Vec<(usize, usize)>,
        win: MappedWindow,
        mem: Option<MmapRaw>,
        reach: Reach,
        group: bool,
    ) {
        // World allocations are numbered alike on every rank (ARMCI_Free compares the
        // numbers); group allocations, made by some ranks only, count apart.
        let id = {
            let mut n = self.next_id.lock().unwrap_or_else(|p| p.into_inner());
            let c = if group { &mut n.1 } else { &mut n.0 };
            *c += 1;
            *c | if group { 1 << 63 } else { 0 }
        };
        let mut a = self.allocs.write().unwrap_or_else(|p| p.into_inner());
        self.hints.clear();
        a.insert(
            id,
            Alloc {
                bases,
                direct: reach == Reach::Mapped,
                xfer: reach == Reach::Transfers,
                win,
                _mem: mem,
            },
        );
    }

    /// Private, zeroed memory of `len` bytes (at least one page) served to peers by
    /// messages; its address.
    pub(crate) fn private_block(len: usize) -> Result<(MmapRaw, usize)> {
        let m = MmapOptions::new()
            .len(len.max(1))
            .map_anon()
            .map_err(|e| skifch::Error::os("mapping an ARMCI allocation", e))?;
        let m = MmapRaw::from(m);
        let b = m.as_mut_ptr() as usize;
        Ok((m, b))
    }

    /// Collective free of the allocation whose base on this rank is `base` (0 names the
    /// most recent live allocation in which this rank has no memory). Every rank must
    /// free the same allocation, checked.
    ///
    /// # Collective Operation
    /// Every rank calls it; it starts with a barrier (every access to the block is over).
    pub fn free(&self, base: usize) -> Result<()> {
        let id = self.find_alloc(base);
        let mut ep = self.ep();
        ep.barrier()?;
        let all = allgather(&mut ep, &id.unwrap_or(0).to_le_bytes())?;
        let Some(id) = id else {
            return Err(Error::BadArgument(format!(
                "{base:#x} is not the base of an ARMCI allocation of this process"
            )));
        };
        if let Some(r) = all.iter().position(|b| skifch::coll::le_word(b, 0) != id) {
            return Err(Error::BadArgument(format!(
                "process {r} freed a different allocation than process {} (ARMCI_Free is collective: every process frees the same one)",
                self.me
            )));
        }
        self.remove_alloc(&mut ep, id);
        Ok(())
    }

    /// The live allocation whose base on this rank is `base` (0: the most recent one in
    /// which this rank has no memory).
    pub(crate) fn find_alloc(&self, base: usize) -> Option<u64> {
        let a = self.allocs.read().unwrap_or_else(|p| p.into_inner());
        let me = self.me as usize;
        a.iter()
            .rev()
            .find(|(_, x)| x.bases[me].0 == base && (base != 0 || x.bases[me].1 == 0))
            .map(|(&id, _)| id)
    }

    /// Forgets allocation `id` (its memory is unmapped; the handlers stop serving it).
    pub(crate) fn remove_alloc(&self, ep: &mut Endpoint<P, Ctx>, id: u64) {
        let gone = {
            let mut a = self.allocs.write().unwrap_or_else(|p| p.into_inner());
            self.hints.clear();
            a.remove(&id)
        };
        // (unmapped here, after every hint to it went stale)
        if let Some(g) = gone {
            let mine = g.bases[self.me as usize];
            ep.ctx_mut().allocs.retain(|&b| b != mine);
        }
    }

    /// Where `len` bytes at `addr` of rank `proc` are: in which allocation, at which
    /// offset; [`Error::NotAllocated`] if not wholly inside one. The block of `proc`
    /// located last is looked at first, without the table's lock (module `hint`).
    #[inline]
    pub fn locate(&self, proc: u32, addr: usize, len: usize) -> Result<Target> {
        match self.hints.lookup(proc, addr, len) {
            Some(h) => Ok(Target::in_block(
                h.direct(),
                proc,
                addr,
                h.base,
                h.len,
                h.ptr,
            )),
            None => self.locate_in_table(proc, addr, len),
        }
    }

    fn locate_in_table(&self, proc: u32, addr: usize, len: usize) -> Result<Target> {
        let a = self.allocs.read().unwrap_or_else(|p| p.into_inner());
        for (&id, x) in a.iter().rev() {
            let (b, l) = x.bases[proc as usize];
            let off = addr.wrapping_sub(b);
            if l > 0 && off < l && len <= l - off {
                // This rank's own block is in this address space on either path: reached
                // directly, never by a message to itself (which over a device would cross
                // the device twice).
                let (direct, ptr) = match x.direct {
                    _ if proc == self.me => (true, b),
                    true => (true, x.win.reach(proc, 0, l).map_or(0, |p| p as usize)),
                    // The message path's transfers: the node's ranks are mapped.
                    false if x.xfer => match x.win.reach(proc, 0, l) {
                        Some(p) => (true, p as usize),
                        None => {
                            // (not remembered: a hint carries no allocation)
                            let mut t = Target::in_block(false, proc, addr, b, l, 0);
                            t.alloc = id;
                            return Ok(t);
                        }
                    },
                    false => (false, 0),
                };
                // (a direct block that could not be reached is not remembered: in a hint,
                // direct means mapped)
                if ptr != 0 || !direct {
                    let h = Hit {
                        base: b,
                        len: l,
                        ptr,
                    };
                    self.hints.remember(proc, h);
                }
                return Ok(Target::in_block(direct, proc, addr, b, l, ptr));
            }
        }
        Err(Error::NotAllocated { proc, addr, len })
    }

    /// The address here of `len` bytes of `t` (direct path): a bounds check against the
    /// mapping [`Armci::locate`] found.
    #[inline]
    pub(crate) fn mapped(&self, t: Target, len: usize) -> Result<*mut u8> {
        if t.ptr != 0 && len <= t.room {
            Ok(t.ptr as *mut u8)
        } else {
            Err(Error::NotAllocated {
                proc: t.proc,
                addr: t.addr,
                len,
            })
        }
    }

    /// Copies `len` bytes from local `src` to `t`.
    ///
    /// # Safety
    /// `src` is readable for `len` bytes; `t` was located for at least `len` bytes.
    pub unsafe fn put_to(&self, src: *const u8, t: Target, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        match t.path() {
            Path::Direct => {
                let d = self.mapped(t, len)?;
                // SAFETY: `d..d+len` is in a live mapping (reach); the caller vouches for src.
                unsafe { skifch::mem::copy_move(src, d, len) };
                Ok(())
            }
            // SAFETY: the caller's contract; located in a transfers allocation.
            Path::Messages if t.alloc != 0 => unsafe { self.xfer_put(src, t, len) },
            Path::Messages => {
                let mut b = Batch::new(self.ep(), t.proc);
                // SAFETY: the caller's contract.
                unsafe { b.put_span(t.addr, src, len, self.chunk)? };
                b.finish()
            }
        }
    }

    /// Copies `len` bytes from `t` to local `dst`.
    ///
    /// # Safety
    /// `dst` is writable for `len` bytes and not referenced meanwhile; `t` was located
    /// for at least `len` bytes.
    pub unsafe fn get_from(&self, t: Target, dst: *mut u8, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        match t.path() {
            Path::Direct => {
                self.alive()?;
                let s = self.mapped(t, len)?;
                // SAFETY: as in `put_to`, roles swapped.
                unsafe { skifch::mem::copy_move(s, dst, len) };
                Ok(())
            }
            // SAFETY: the caller's contract; located in a transfers allocation.
            Path::Messages if t.alloc != 0 => unsafe { self.xfer_get(t, dst, len) },
            Path::Messages => {
                let mut b = Batch::new(self.ep(), t.proc);
                // SAFETY: the caller's contract; the batch ends before this returns.
                unsafe { b.get_span(t.addr, dst, len, self.chunk)? };
                b.finish()
            }
        }
    }

    /// `t[i] += scale · src[i]` for `len` bytes of type `ty`, each element atomically.
    ///
    /// # Safety
    /// `src` is readable for `len` bytes; `t` was located for at least `len` bytes.
    pub unsafe fn acc_to(
        &self,
        ty: AccType,
        scale: Scale,
        src: *const u8,
        t: Target,
        len: usize,
    ) -> Result<()> {
        acc::check(ty, t.addr, len)?;
        if len == 0 {
            return Ok(());
        }
        match t.path() {
            Path::Direct => {
                self.alive()?;
                let d = self.mapped(t, len)?;
                // SAFETY: checked in bounds and aligned; peers reach it only atomically
                // or by copies; the caller vouches for src.
                unsafe { acc::apply(ty, scale, src, d, len) };
                Ok(())
            }
            Path::Messages => {
                let mut b = Batch::new(self.ep(), t.proc);
                // SAFETY: the caller's contract.
                unsafe { b.acc_span(ty, scale, t.addr, src, len, self.chunk)? };
                b.finish()
            }
        }
    }

    /// Atomic `op` on the `width`-byte (4 or 8) integer at `t`; returns the old value.
    pub fn amo(&self, t: Target, width: usize, op: Amo) -> Result<u64> {
        if !t.addr.is_multiple_of(width) {
            return Err(Error::BadArgument(format!(
                "an atomic on {width} bytes at {:#x}, not {width}-byte aligned",
                t.addr
            )));
        }
        match t.path() {
            Path::Direct => {
                self.alive()?;
                let p = self.mapped(t, width)?;
                // SAFETY: in a live mapping, aligned to its width (checked above: the
                // mapping's offsets keep the owner's alignment, both page-aligned).
                Ok(unsafe { amo_at(p, width, op) })
            }
            Path::Messages => {
                let (code, a, _) = op.encode();
                let mut out = [0u8; 8];
                self.ep().call(
                    t.proc,
                    msg::H_AMO,
                    width as u32,
                    &[t.addr as u64, u64::from(code), a],
                    &[],
                    &mut out,
                )?;
                Ok(u64::from_le_bytes(out))
            }
        }
    }

    /// ARMCI's read-modify-write on the `int`/`long` at `t`: fetch-and-add `value`, or
    /// swap in `value`; returns the old value.
    pub fn rmw(&self, op: Rmw, t: Target, value: i64) -> Result<i64> {
        let (width, amo) = op.amo(value);
        Ok(op.widen(self.amo(t, width, amo)?))
    }

    /// Counts a call of a fast path that reads a peer's memory (get, `Rmw`): false on
    /// every [`CHECK_EVERY`]th call (of any thread), when the caller takes the general
    /// path, which asks the driver whether a rank was lost ([`Armci::alive`]). Asking is
    /// ~20 instructions, as much as the rest of an 8-byte get, and a lost rank is known
    /// to the others only within about a second anyway; a program spinning on a lost
    /// rank's memory still gets the error after a few calls.
    #[inline]
    pub fn tick(&self) -> bool {
        // (a load and a store, not a read-modify-write: a tick lost to a race between
        // threads only delays the check by one call)
        let t = self.ticks.0.load(Ordering::Relaxed).wrapping_add(1);
        self.ticks.0.store(t, Ordering::Relaxed);
        !t.is_multiple_of(CHECK_EVERY)
    }

    /// The fast path of the contiguous calls: where `len` bytes at `addr` of `proc` are
    /// mapped here, if the hint covers them on the direct path. `None`: take the
    /// general path ([`Armci::locate`] and the operation), which checks everything and
    /// names what is wrong.
    #[inline]
    pub fn direct(&self, proc: i64, addr: usize, len: usize) -> Option<*mut u8> {
        // (a rank out of range has no slot)
        let proc = u32::try_from(proc).ok()?;
        if len == 0 {
            return None;
        }
        let h = self.hints.lookup(proc, addr, len)?;
        h.direct().then(|| (h.ptr + (addr - h.base)) as *mut u8)
    }

    /// Orders and completes this rank's operations to `proc` (all operations complete at
    /// return already: a memory fence on the direct path).
    pub fn fence(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        self.alive()
    }

    /// Barrier of all ranks, after a fence.
    ///
    /// # Collective Operation
    /// Every rank calls it.
    pub fn barrier(&self) -> Result<()> {
        self.fence()?;
        self.ep().barrier()?;
        fence(Ordering::SeqCst);
        Ok(())
    }

    /// Serves requests from peers once (message path), without waiting.
    pub fn poll(&self) -> Result<()> {
        self.ep().poll()?;
        Ok(())
    }

    /// Broadcast of `buf` from `root` to every rank.
    ///
    /// # Collective Operation
    /// Every rank calls it with the same `root` and length.
    pub fn bcast(&self, root: u32, buf: &mut [u8]) -> Result<()> {
        let mut ep = self.ep();
        let g = ProtoGroup::world(&ep);
        skifch::coll::bcast(&g.on(&mut ep), root as usize, buf)?;
        Ok(())
    }

    /// Reduces `buf` element-wise with `k` over all ranks; every rank gets the result.
    ///
    /// # Collective Operation
    /// Every rank calls it with the same kernel and length.
    pub fn allreduce(&self, buf: &mut [u8], k: &skifch::coll::Kernel) -> Result<()> {
        let send = buf.to_vec();
        let mut ep = self.ep();
        let g = ProtoGroup::world(&ep);
        skifch::coll::allreduce(&g.on(&mut ep), &send, buf, k)?;
        Ok(())
    }

    /// Every rank's `mine` (the same length on every rank), concatenated in rank order.
    ///
    /// # Collective Operation
    /// Every rank calls it with the same length.
    pub fn allgather_equal(&self, mine: &[u8]) -> Result<Vec<u8>> {
        let mut all = vec![0u8; mine.len() * self.n as usize];
        let mut ep = self.ep();
        let g = ProtoGroup::world(&ep);
        skifch::coll::allgather(&g.on(&mut ep), mine, &mut all)?;
        Ok(all)
    }

    /// Every rank's `mine` (at most 120 bytes), in rank order.
    ///
    /// # Collective Operation
    /// Every rank calls it.
    pub fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(allgather(&mut self.ep(), mine)?)
    }

    /// Leaves the job (collective: a barrier, then the progress thread stops and the
    /// allocations are unmapped).
    pub fn finalize(&self) -> Result<()> {
        self.barrier()?;
        let t = self
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(t) = t {
            t.stop()?;
        }
        let mut a = self.allocs.write().unwrap_or_else(|p| p.into_inner());
        self.hints.clear();
        a.clear();
        Ok(())
    }
}
