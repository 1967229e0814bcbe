//! One rank's GASNet state: the endpoint on port 4, the handler table, the segments, and
//! the calls every other one is built from (AM injection, polling, waiting, barriers).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use skifch::coll::ProtoGroup;
use skifch::proto::{Endpoint, ProgressThread};
use skifch::rma::{self, MappedWindow, Rma};
use skifch::wait::Backoff;
use skifch::{Driver, Job, Port, Waiter};

use crate::am::{self, Category, Ctx, EntryRec, HandlerFn, Limits, Msg, Segs};
use crate::eplock::{Entered, EpGuard, EpLock, SingleThread};
use crate::eps::Route;
use crate::{Error, Result};

/// The port of this library's endpoint (the port table: [`skifch::ports`]).
pub const PORT: u32 = skifch::ports::GASNET;

/// How remote memory is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// Through the driver's RMA capability: every segment mapped by every rank.
    Direct,
    /// As active messages served by the target.
    Messages,
}

/// How to build a [`Gasnet`].
pub struct Options {
    /// The driver's RMA provider ([`skifch::Job::rma`]) if it should be used (only a
    /// load/store provider is).
    pub rma: Option<Arc<dyn Rma>>,
    /// Start a progress thread, so handlers run while the application computes.
    pub progress_thread: bool,
}

/// State of the extended API kept in the endpoint's context (reached by handlers).
#[derive(Default)]
pub struct ExtState {
    /// Barrier messages received: (episode, round) -> (id, flags).
    pub(crate) bar: HashMap<(u32, u8), (u32, u32)>,
}

/// Barrier flags (the values of `GASNET_BARRIERFLAG_*`).
pub mod barrier_flags {
    /// The barrier carries no id.
    pub const ANONYMOUS: u32 = 1;
    /// Force a mismatch.
    pub const MISMATCH: u32 = 2;
}

/// proto handler id of barrier messages.
const H_BAR: u8 = 3;

/// A split-phase barrier in progress (this rank's side).
struct Bar {
    seq: u32,
    round: u8,
    sent: bool,
    id: u32,
    flags: u32,
    /// The notify's own id/flags (the wait compares them).
    mine: (u32, u32),
}

/// This rank's memory of a segment not yet published.
enum Local {
    /// Exposable memory of the driver's RMA provider (direct path).
    Rma(skifch::rma::Segment),
    /// Private memory served by messages.
    Mem(memmap2::MmapRaw),
    /// The client's own memory, served by messages.
    Client(usize, usize),
}

/// A segment made by `gex_Segment_Create`, published by `gex_EP_PublishBoundSegment`.
pub struct NewSegment {
    local: Local,
    /// Its address and length here.
    pub base: usize,
    /// Its length.
    pub len: usize,
}

impl NewSegment {
    fn new(local: Local) -> NewSegment {
        let (base, len) = match &local {
            Local::Rma(s) => (s.as_ptr() as usize, s.len()),
            Local::Mem(m) => (m.as_mut_ptr() as usize, m.len()),
            Local::Client(a, l) => (*a, *l),
        };
        NewSegment { local, base, len }
    }
}

/// One rank's library state (shared by the threads of the rank).
pub struct Gasnet<P: Port> {
    me: u32,
    n: u32,
    path: Path,
    /// The provider segments are exposed with: a load/store one (the direct path), or on
    /// the message path one reaching some ranks by transfers (`rma.rs`).
    rma: Option<Arc<dyn Rma>>,
    ep: EpLock<Endpoint<P, Ctx>>,
    progress: Mutex<Option<ProgressThread>>,
    lost: P::Waiter,
    /// Every rank's segment, set once by `attach` (read without a lock on every call).
    pub(crate) segs: std::sync::OnceLock<Arc<Segs>>,
    /// The same for the other endpoints ([`crate::eps`]), by index (0 unused).
    pub(crate) ep_segs: Vec<std::sync::OnceLock<Arc<Segs>>>,
    /// Endpoints made here, the primordial one included.
    pub(crate) n_eps: AtomicU32,
    limits: Limits,
    bar: Mutex<Option<Bar>>,
    bar_seq: AtomicU32,
    want_progress: bool,
    pub(crate) events: Mutex<crate::event::Events>,
    /// The endpoint context's `running` (read without the lock).
    running: Arc<std::sync::atomic::AtomicUsize>,
    /// Non-blocking collectives in progress (`crate::nbcoll`).
    pub(crate) nbc: crate::nbcoll::Running,
}

/// All-gather of one descriptor per rank over the world group (set-up exchanges).
fn allgather<P: Port>(ep: &mut Endpoint<P, Ctx>, mine: &[u8]) -> skifch::Result<Vec<Vec<u8>>> {
    let g = ProtoGroup::world(ep);
    skifch::coll::allgather_bytes(&g.on(ep), mine)
}

fn on_bar<P: Port>(
    ctx: &mut Ctx,
    _io: &mut skifch::proto::Io<'_, P>,
    am: &skifch::proto::Am<'_>,
) -> skifch::Result<()> {
    let a = am.args();
    let (seq, round) = (a.first().copied().unwrap_or(0) as u32, am.arg() as u8);
    let v = a.get(1).copied().unwrap_or(0);
    ctx.ext
        .bar
        .insert((seq, round), (v as u32, (v >> 32) as u32));
    Ok(())
}

impl<P: Port + Send + 'static> Gasnet<P> {
    /// Joins rank `job.rank()` of `job.size()` (collective: every rank calls it; returns
    /// after a barrier). Opens port 4 as a [`skifch::proto`] endpoint.
    pub fn new<D: Driver<Port = P>>(job: &Job<D>, opts: Options) -> Result<Arc<Self>> {
        Self::build(job, opts, None)
    }

    /// [`Gasnet::new`] for a client built `GASNET_SEQ` (the C ABI), on its promise that
    /// one thread calls: without a progress thread the endpoint then takes no lock
    /// ([`crate::eplock`]).
    pub(crate) fn new_seq<D: Driver<Port = P>>(
        job: &Job<D>,
        opts: Options,
        one: SingleThread,
    ) -> Result<Arc<Self>> {
        let seq = (!opts.progress_thread).then_some(one);
        Self::build(job, opts, seq)
    }

    /// `seq`: the lock-free form, on that promise.
    fn build<D: Driver<Port = P>>(
        job: &Job<D>,
        opts: Options,
        seq: Option<SingleThread>,
    ) -> Result<Arc<Self>> {
        let (me, n) = (job.rank(), job.size());
        let ctx = Ctx {
            table: (0..256).map(|_| None).collect(),
            rank: me,
            seq: seq.is_some(),
            ..Ctx::default()
        };
        let running = ctx.running.clone();
        let mut ep = Endpoint::open_with(job, PORT, ctx)?;
        am::install(&mut ep)?;
        ep.register(H_BAR, on_bar::<P>)?;
        crate::rma::install(&mut ep)?;
        crate::ratomic::install(&mut ep)?;
        ep.barrier()?;
        // Direct only if every rank maps every segment; the message path's transfers
        // (`rma.rs`: segments exposed, the node's ranks mapped, the others' puts and gets
        // by the driver's transfers) only if every rank takes them.
        let choice = std::env::var("GASNET_SHIM_RMA").ok();
        let chosen = rma::JobPath::choose(opts.rma, choice.as_deref(), &mut |b: &[u8]| {
            allgather(&mut ep, b)
        })?;
        let (direct, rma) = match chosen {
            rma::JobPath::Direct(r) => (true, Some(r)),
            rma::JobPath::Transfers(r) => (false, Some(r)),
            rma::JobPath::Messages => (false, None),
        };
        let limits = Limits {
            max_msg: ep.max_inline() + 8,
        };
        ep.ctx_mut().limits = Some(limits);
        let lost = ep.waiter();
        if std::env::var_os("GASNET_SHIM_VERBOSE").is_some() {
            skifch::diag::line(&format!(
                "gasnet: rank {me}: {} path, largest Medium {}",
                match (direct, &rma) {
                    (true, _) => "direct",
                    (false, Some(_)) => "message (with transfers)",
                    (false, None) => "message",
                },
                limits.max_medium(0)
            ));
        }
        Ok(Arc::new(Gasnet {
            me,
            n,
            path: if direct { Path::Direct } else { Path::Messages },
            rma,
            ep: match seq {
                Some(one) => EpLock::seq(ep, one),
                None => EpLock::shared(ep),
            },
            progress: Mutex::new(None),
            lost,
            segs: std::sync::OnceLock::new(),
            ep_segs: (0..crate::eps::MAX_EPS)
                .map(|_| std::sync::OnceLock::new())
                .collect(),
            n_eps: AtomicU32::new(1),
            limits,
            bar: Mutex::new(None),
            bar_seq: AtomicU32::new(0),
            want_progress: opts.progress_thread,
            events: Mutex::new(Default::default()),
            running,
            nbc: Default::default(),
        }))
    }

    /// Starts the progress thread if the options asked for one (after the segment and the
    /// handlers exist, so it never serves an AM before the client is ready).
    pub fn start_progress(&self) -> Result<()> {
        let mut p = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        if self.want_progress && p.is_none() {
            if let Some(m) = self.ep.mutex() {
                *p = Some(ProgressThread::start_default(m.clone())?);
            }
        }
        Ok(())
    }
}

/// The back-off of this library's wait loops (an event's, `wait_until`'s): its first 32
/// empty polls go without `pause`, so an answer due within a round trip is seen as its
/// line arrives — at this library's poll weight a `pause` only delays the detection
/// (`docs/results-2026-11-30-work-window`) — then 32 with `pause`, then it yields early
/// (at once with more ranks than CPUs, `skifch::wait::oversubscribed`), then naps.
pub(crate) const fn wait_backoff() -> Backoff {
    Backoff::new().hot(Backoff::SPINS / 2)
}

impl<P: Port> Gasnet<P> {
    /// This rank.
    pub fn me(&self) -> u32 {
        self.me
    }
    /// Ranks in the job.
    pub fn size(&self) -> u32 {
        self.n
    }
    /// The remote-memory path in use.
    pub fn path(&self) -> Path {
        self.path
    }
    /// Payload limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The endpoint, locked; [`Error::InHandler`] from inside a handler (the handler's
    /// thread already holds it).
    pub(crate) fn ep(&self) -> Result<EpGuard<'_, Endpoint<P, Ctx>>> {
        self.ep_or_handler()?.ok_or(Error::InHandler)
    }

    /// The endpoint, locked, or `None` inside a handler. The lock is tried first: a free
    /// lock means this thread runs no handler (a handler's thread holds it); a busy one is
    /// this thread's own when the handler running is this thread's (`Ctx::running`).
    #[inline]
    pub(crate) fn ep_or_handler(&self) -> Result<Option<EpGuard<'_, Endpoint<P, Ctx>>>> {
        match self.ep.try_enter() {
            Entered::Held(g) => Ok(Some(g)),
            Entered::Nested => Ok(None),
            Entered::Busy if self.running.load(Ordering::Relaxed) == am::this_thread() => Ok(None),
            Entered::Busy => Ok(self.ep.lock()),
        }
    }

    /// `Err(PeerLost)` once the job has lost a rank.
    pub fn alive(&self) -> Result<()> {
        match self.lost.lost_peer() {
            None => Ok(()),
            Some(rank) => Err(Error::Comm(skifch::Error::PeerLost { rank })),
        }
    }

    /// The first rank the job lost, if any.
    pub(crate) fn lost_peer(&self) -> Option<u32> {
        self.lost.lost_peer()
    }

    /// `rank` checked against the job.
    pub fn rank(&self, rank: i64) -> Result<u32> {
        if rank < 0 || rank >= i64::from(self.n) {
            return Err(Error::BadRank { rank, n: self.n });
        }
        Ok(rank as u32)
    }

    /// Sets how C handlers are called (the C ABI's invoker).
    pub(crate) fn set_c_invoker(&self, f: am::CInvoke) -> Result<()> {
        self.ep()?.ctx_mut().invoke_c = Some(f);
        Ok(())
    }

    /// Registers handlers: `(index, function, record)`; index 0 takes a free index
    /// (searching down from 255, as GASNet assigns "don't care" entries). Returns the
    /// indices used. An index registered twice is an error.
    pub fn register(&self, entries: &[(HandlerFn, EntryRec)]) -> Result<Vec<u8>> {
        self.register_on(0, entries)
    }

    /// Whether handler `index` is registered on this rank.
    pub fn registered(&self, index: u8) -> Result<bool> {
        Ok(self.ep()?.ctx().table[index as usize].is_some())
    }

    /// Every rank's segment, once attached.
    pub fn segs(&self) -> Option<&Arc<Segs>> {
        self.segs.get()
    }

    /// Attaches this rank's segment of `len` bytes (collective; ranks may ask for
    /// different lengths); returns its base. The memory is zeroed.
    ///
    /// # Collective Operation
    /// Every rank calls it once; it returns after a barrier, so peers may use the segment.
    pub fn attach(&self, len: usize) -> Result<usize> {
        if self.segs().is_some() {
            return Err(Error::BadArgument("a segment is already attached".into()));
        }
        let s = self.create_segment(len)?;
        self.publish(s)
    }

    /// Makes this rank's segment of fresh zeroed memory (`len` bytes) without publishing
    /// it (`gex_Segment_Create` with no address).
    pub fn create_segment(&self, len: usize) -> Result<NewSegment> {
        let len = len.max(1).next_multiple_of(4096);
        let local = match &self.rma {
            Some(r) => Local::Rma(r.alloc(len)?),
            None => {
                let m = memmap2::MmapOptions::new()
                    .len(len)
                    .map_anon()
                    .map_err(|e| skifch::Error::os("mapping the GASNet segment", e))?;
                Local::Mem(memmap2::MmapRaw::from(m))
            }
        };
        Ok(NewSegment::new(local))
    }

    /// Makes this rank's segment of the client's memory `addr..addr+len` without
    /// publishing it (`gex_Segment_Create` with an address). On the direct path the pages
    /// are moved onto shared memory in place, which the driver must offer.
    ///
    /// # Safety
    /// `addr..addr+len` is page-aligned, mapped read-write for the rest of the process,
    /// and not accessed by other threads during the call.
    #[allow(unsafe_code)] // the client's memory, on the client's contract
    pub unsafe fn create_segment_at(&self, addr: usize, len: usize) -> Result<NewSegment> {
        let local = match &self.rma {
            Some(r) => {
                if !addr.is_multiple_of(4096)
                    || !len.is_multiple_of(4096)
                    || !r.caps().share_in_place
                {
                    return Err(Error::BadArgument(format!(
                        "client memory at {addr:#x} ({len} bytes) cannot be shared on this path (it must be page-aligned and the driver must share memory in place)"
                    )));
                }
                // SAFETY: the caller's contract (above), the provider's requirements.
                Local::Rma(unsafe { r.share_in_place(addr as *mut u8, len) }?)
            }
            None => Local::Client(addr, len),
        };
        Ok(NewSegment::new(local))
    }

    /// Publishes a segment made by [`Gasnet::create_segment`] (collective, as
    /// [`Gasnet::attach`]); returns its base.
    pub fn publish(&self, s: NewSegment) -> Result<usize> {
        self.publish_segment(0, s)
    }

    /// [`Gasnet::publish`] for endpoint `idx` ([`crate::eps`]).
    pub(crate) fn publish_segment(&self, idx: u32, s: NewSegment) -> Result<usize> {
        let mut ep = self.ep()?;
        let (base, len) = (s.base, s.len);
        let (win, mem) = match (s.local, &self.rma) {
            (Local::Rma(seg), Some(r)) => {
                let win = rma::expose(r.as_ref(), seg, &mut |b: &[u8]| allgather(&mut ep, b))?;
                (Some(win), None)
            }
            (Local::Mem(m), _) => (None::<MappedWindow>, Some(m)),
            _ => (None, None),
        };
        let mut mine = (base as u64).to_le_bytes().to_vec();
        mine.extend_from_slice(&(len as u64).to_le_bytes());
        mine.extend_from_slice(&u64::from(idx).to_le_bytes());
        let all = allgather(&mut ep, &mine)?;
        if let Some(r) = all
            .iter()
            .position(|b| skifch::coll::le_word(b, 2) != u64::from(idx))
        {
            return Err(Error::BadArgument(format!(
                "rank {r} published the segment of another endpoint than this rank's {idx}"
            )));
        }
        let segs = Arc::new(Segs {
            bases: all
                .iter()
                .map(|b| {
                    (
                        skifch::coll::le_word(b, 0) as usize,
                        skifch::coll::le_word(b, 1) as usize,
                    )
                })
                .collect(),
            win,
            _mem: mem,
        });
        let slot = if idx == 0 {
            &self.segs
        } else {
            &self.ep_segs[idx as usize]
        };
        if slot.set(segs.clone()).is_err() {
            return Err(Error::BadArgument(format!(
                "endpoint {idx} already has a published segment"
            )));
        }
        match idx {
            0 => ep.ctx_mut().segs = Some(segs),
            i => ep.ctx_mut().ep_segs[i as usize] = Some(segs),
        }
        ep.barrier()?;
        Ok(base)
    }

    /// Sends one AM request (or, from outside a handler, never a reply); `Ok(false)`: not
    /// injected (`immediate`, channel full). Blocks with progress otherwise.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn request(
        &self,
        route: Route,
        dst: u32,
        index: u8,
        cat: Category,
        args: &[u32],
        src: usize,
        len: usize,
        dest: usize,
        immediate: bool,
    ) -> Result<bool> {
        // Another endpoint's table may differ from this rank's: its rank reports an index
        // it lacks.
        let mut ep = if route.remote == 0 {
            self.ep_to(index)?
        } else {
            let mut ep = self.ep()?;
            self.check_failed(&mut ep)?;
            ep
        };
        let segs = self.segs_of(route.remote);
        let m = Msg {
            dst,
            index,
            cat,
            reply: false,
            args,
            src,
            len,
            dest,
            immediate,
            route: route.bits(),
        };
        let r = am::emit(&mut *ep, segs.map(|s| &**s), self.limits, &m);
        if r.is_err() {
            self.alive()?;
        }
        r
    }

    /// [`Gasnet::request`] of a Short or Medium with at most 6 arguments, without
    /// `GEX_FLAG_IMMEDIATE`: the common request, sent with the arguments in the header
    /// (the wire format of [`crate::am`]) and no [`Msg`] built.
    #[inline(always)]
    pub(crate) fn request_inline(
        &self,
        dst: u32,
        index: u8,
        cat: Category,
        args: &[u32],
        data: &[u8],
    ) -> Result<()> {
        let mut ep = self.ep_to(index)?;
        am::medium_fits(cat, args.len(), data.len(), self.limits)?;
        let meta = am::meta(index, args.len(), cat, false);
        let n = args.len().div_ceil(2);
        // The arguments are packed only where they go (a packed array stored for a
        // message without arguments was three stores of a Medium's request).
        let r = if data.is_empty() {
            ep.send_header(dst, am::H_AM, meta, &am::pack_args(args)[..n])
        } else if n == 0 {
            // A Medium without arguments (the common message-rate case): the 8-byte header.
            ep.send_short(dst, am::H_AM, meta, data)
        } else {
            ep.send(dst, am::H_AM, meta, &am::pack_args(args)[..n], data)
        };
        if let Err(e) = r {
            self.alive()?;
            return Err(e.into());
        }
        Ok(())
    }

    /// The endpoint, locked, for a request to handler `index`: a handler's earlier fatal
    /// error first, then an unregistered index (handler tables are the same on every rank,
    /// SPMD: an index unknown here is a client error, reported before anything is sent).
    #[inline(always)]
    fn ep_to(&self, index: u8) -> Result<EpGuard<'_, Endpoint<P, Ctx>>> {
        let mut ep = self.ep()?;
        self.check_failed(&mut ep)?;
        if ep.ctx().table[index as usize].is_none() {
            return Err(Error::Unregistered {
                index,
                rank: self.me,
            });
        }
        Ok(ep)
    }

    /// A test of the (large) `Option<Error>` inline, its move out of line: `take` moved
    /// the whole enum on every call.
    #[inline(always)]
    fn check_failed(&self, ep: &mut Endpoint<P, Ctx>) -> Result<()> {
        if ep.ctx().failed.is_some() {
            return Self::take_failed(ep);
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn take_failed(ep: &mut Endpoint<P, Ctx>) -> Result<()> {
        match ep.ctx_mut().failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Runs handlers of arrived AMs once, without waiting (`gasnet_AMPoll`); returns how
    /// many messages were dispatched. A no-op inside a handler.
    pub fn poll(&self) -> Result<usize> {
        // Tested first, so that the usual poll stays the call it was (a test after it
        // made its frame save registers: an empty poll +21 instructions).
        if self.nbc_active() {
            return self.poll_advancing(false).map(|(n, _)| n);
        }
        self.poll_with(|ep| ep.poll_ready())
    }

    /// [`Gasnet::poll`] (`one`: [`Gasnet::wait_step`]'s poll of one message) while
    /// non-blocking collectives run: then it advances them too. The messages dispatched
    /// and the schedules' steps that ran.
    #[cold]
    #[inline(never)]
    fn poll_advancing(&self, one: bool) -> Result<(usize, usize)> {
        let n = if one {
            self.poll_with(|ep| ep.poll_ready_one())?
        } else {
            self.poll_with(|ep| ep.poll_ready())?
        };
        Ok((n, self.nbc_progress()?))
    }

    /// [`Gasnet::poll`] through `f`, the endpoint's poll to use.
    #[inline(always)]
    pub(crate) fn poll_with(
        &self,
        f: impl FnOnce(&mut Endpoint<P, Ctx>) -> skifch::Result<usize>,
    ) -> Result<usize> {
        let Some(mut ep) = self.ep_or_handler()? else {
            return Ok(0);
        };
        let r = f(&mut ep);
        self.polled(&mut ep, r)
    }

    /// The result `r` of a poll of `ep`: a handler's failure first, then the poll's error
    /// (a lost rank said as such).
    #[inline(always)]
    pub(crate) fn polled(
        &self,
        ep: &mut Endpoint<P, Ctx>,
        r: skifch::Result<usize>,
    ) -> Result<usize> {
        self.check_failed(ep)?;
        match r {
            Ok(n) => Ok(n),
            Err(e) => {
                self.alive()?;
                Err(e.into())
            }
        }
    }

    /// One step of a wait loop (`GASNET_BLOCKUNTIL`): polls; when idle, backs off on
    /// `idle` and checks every 64 idle steps that no rank is lost.
    pub fn wait_step(&self, idle: &mut Backoff) -> Result<()> {
        // One message per step: the caller's condition is tested between steps, so the
        // answer of a round trip ends the wait without a second, empty receive.
        // A step of a collective is progress too: the wait does not back off then.
        let n = if self.nbc_active() {
            let (n, moved) = self.poll_advancing(true)?;
            n + moved
        } else {
            self.poll_with(|ep| ep.poll_ready_one())?
        };
        self.idle_step(n, idle)
    }

    /// The end of a wait loop's step that dispatched `n` messages: when none, backs off on
    /// `idle` and checks every 64 idle steps that no rank is lost.
    #[inline(always)]
    pub(crate) fn idle_step(&self, n: usize, idle: &mut Backoff) -> Result<()> {
        if n > 0 {
            idle.reset();
            return Ok(());
        }
        if (idle.polls() + 1).is_multiple_of(64) {
            self.alive()?;
        }
        idle.snooze();
        Ok(())
    }

    /// Waits with progress until `done` (checked between polls) is true.
    pub fn wait_until(&self, mut done: impl FnMut() -> bool) -> Result<()> {
        let mut idle = wait_backoff();
        while !done() {
            self.wait_step(&mut idle)?;
        }
        Ok(())
    }

    /// Makes progress until `done` sees the context say so (or a handler failed).
    fn progress_ctx(&self, mut done: impl FnMut(&Ctx) -> bool) -> Result<()> {
        if self.nbc_active() {
            // Non-blocking collectives run: this wait's polls must advance them too (a
            // member whose children wait for its forwarding may be waiting here). A step
            // that dispatched a message or ran a step of theirs resets the back-off.
            let mut idle = wait_backoff();
            loop {
                {
                    let mut ep = self.ep()?;
                    self.check_failed(&mut ep)?;
                    if done(ep.ctx()) {
                        return Ok(());
                    }
                }
                self.wait_step(&mut idle)?;
            }
        }
        let mut ep = self.ep()?;
        let r = ep.progress_until(
            |ep| ep.ctx().failed.is_some() || done(ep.ctx()),
            None::<Duration>,
        );
        self.check_failed(&mut ep)?;
        Ok(r?)
    }

    /// First phase of a split barrier with `id` and `flags` (`gasnet_barrier_notify`).
    pub fn barrier_notify(&self, id: u32, flags: u32) -> Result<()> {
        let mut b = self.bar.lock().unwrap_or_else(|p| p.into_inner());
        if b.is_some() {
            return Err(Error::BadArgument(
                "a barrier notify without the wait of the previous one".into(),
            ));
        }
        let seq = self.bar_seq.fetch_add(1, Ordering::Relaxed);
        let flags = flags & (barrier_flags::ANONYMOUS | barrier_flags::MISMATCH);
        *b = Some(Bar {
            seq,
            round: 0,
            sent: false,
            id,
            flags,
            mine: (id, flags),
        });
        drop(b);
        self.barrier_advance(false).map(|_| ())
    }

    /// Advances the barrier's dissemination rounds (`block`: until done); `Some(ok)` once
    /// complete: `ok` false on a mismatch.
    fn barrier_advance(&self, block: bool) -> Result<Option<bool>> {
        let mut g = self.bar.lock().unwrap_or_else(|p| p.into_inner());
        let Some(b) = g.as_mut() else {
            return Err(Error::BadArgument(
                "a barrier wait or try without a notify".into(),
            ));
        };
        let rounds = (32 - (self.n.max(1) - 1).leading_zeros()) as u8;
        while b.round < rounds {
            let k = 1u32 << b.round;
            if !b.sent {
                let to = (self.me + k) % self.n;
                let v = u64::from(b.id) | u64::from(b.flags) << 32;
                let mut ep = self.ep()?;
                ep.send(to, H_BAR, u32::from(b.round), &[u64::from(b.seq), v], &[])
                    .or_else(|e| self.alive().and(Err(e.into())))?;
                b.sent = true;
            }
            let key = (b.seq, b.round);
            if block {
                self.progress_ctx(|c| c.ext.bar.contains_key(&key))?;
            } else {
                self.poll()?;
            }
            let got = self.ep()?.ctx_mut().ext.bar.remove(&key);
            let Some((id, fl)) = got else {
                return Ok(None);
            };
            // Combine: a mismatch anywhere, or two named entries with different ids.
            if fl & barrier_flags::MISMATCH != 0 {
                b.flags |= barrier_flags::MISMATCH;
            } else if fl & barrier_flags::ANONYMOUS == 0 {
                if b.flags & barrier_flags::ANONYMOUS != 0 {
                    b.id = id;
                    b.flags &= !barrier_flags::ANONYMOUS;
                } else if b.id != id {
                    b.flags |= barrier_flags::MISMATCH;
                }
            }
            b.round += 1;
            b.sent = false;
        }
        Ok(Some(b.flags & barrier_flags::MISMATCH == 0))
    }

    /// Second phase (`gasnet_barrier_wait`, `block`) or its test (`gasnet_barrier_try`):
    /// `None` not yet; `Some(false)` a mismatch (some rank's named id differed, a rank
    /// passed the MISMATCH flag, or this wait's named id differs from its notify's).
    pub fn barrier_finish(&self, id: u32, flags: u32, block: bool) -> Result<Option<bool>> {
        let Some(ok) = self.barrier_advance(block)? else {
            return Ok(None);
        };
        let mut g = self.bar.lock().unwrap_or_else(|p| p.into_inner());
        let mine = g.take().map(|b| b.mine).unwrap_or((id, flags));
        let named = |f: u32| f & barrier_flags::ANONYMOUS == 0;
        let differs = named(flags) && named(mine.1) && id != mine.0;
        Ok(Some(ok && !differs && flags & barrier_flags::MISMATCH == 0))
    }

    /// An anonymous barrier of every rank.
    ///
    /// # Collective Operation
    /// Every rank calls it.
    pub fn barrier(&self) -> Result<()> {
        self.barrier_notify(0, barrier_flags::ANONYMOUS)?;
        self.barrier_finish(0, barrier_flags::ANONYMOUS, true)?;
        Ok(())
    }

    /// Leaves the job: stops the progress thread (no barrier: GASNet's exit is not
    /// collective).
    pub fn shutdown(&self) -> Result<()> {
        let t = self
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(t) = t {
            t.stop()?;
        }
        Ok(())
    }
}
