//! The engine shared by threads: the [`Core`] (endpoint + matching state) behind a lock,
//! and, under `MPI_THREAD_MULTIPLE`, waits that never hold it while idle.
//!
//! ## Two modes, chosen when the engine opens
//! * **One thread at a time** (`MPI_THREAD_SINGLE`/`FUNNELED`/`SERIALIZED`): every call takes
//!   the lock with a try-lock and runs the core's own code, whose waits (proto's fixed spin,
//!   then sleep, and the direct receive from the channel) keep the lock. A call entered while
//!   another thread is inside one fails at once (the lock cannot be waited for: a blocked
//!   receive may hold it for ever). This is the path the instruction counts are measured on.
//! * **`MPI_THREAD_MULTIPLE`**: calls take the lock (blocking) for short critical sections
//!   only: posting, matching, one poll. Blocking calls post a request and wait here
//!   ([`Engine::wait_mt`]). One waiting thread at a time holds the *poll token* and polls
//!   for everybody (handlers complete whichever requests their messages match, so thread
//!   B's progress completes thread A's receive); the others spin on the completion counter
//!   (bumped by every poll that did something) and look at their request, under the lock,
//!   only when it moved — so the lock is not contended by idle waiters. After the wait
//!   policy's fixed spin (20 µs by default) the poller sleeps on the channel's waiter (woken
//!   by an arriving message), the others on a condition variable (woken by the counter, or
//!   when the poller leaves so that one of them takes the token over): SEED-NOTES, fixed
//!   spin keeps latency flat as waiting threads grow. No lock is held while a thread sleeps.
//!   The direct receive (a wait inside the channel) is not used in this mode.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use skifch::driver::Waiter;
use skifch::{Driver, Job, Port, WaitPolicy};
use skifch_drivers::sys;

use super::lock::{FlagGuard, FlagLock};
use super::mprobe::MsgId;
use super::sched::Sched;
use super::state::ReqKind;
use super::{Core, Deferred, Envelope, Mode, ReqId, State, Status, SENT};
use crate::error::{Error, Result};
use crate::mem::UserBuf;

/// Longest sleep on the channel's waiter before looking again: completions made by another
/// thread without a message (a cancel, `MPI_Grequest_complete`) do not wake that sleeper.
const CHANNEL_SLICE: Duration = Duration::from_millis(2);
/// Longest sleep on the condition variable (a lost wake-up costs at most this).
const CONDVAR_SLICE: Duration = Duration::from_millis(10);
/// Idle rounds spent spinning before the clock is read (most waits end sooner).
const QUICK_SPINS: u32 = 64;

/// mpi-lite's engine: its [`Core`] behind a lock, used by any thread.
pub struct Engine<P: Port> {
    core: FlagLock<Core<P>>,
    /// The eager limit (also in the core; kept here to be read without the lock).
    eager: usize,
    /// World rank and size.
    world: (u32, u32),
    /// `MPI_THREAD_MULTIPLE`: waits release the lock (see the module docs).
    multiple: bool,
    waits: Waits<P::Waiter>,
}

/// Where waiting threads of `MPI_THREAD_MULTIPLE` spin and sleep.
struct Waits<W> {
    /// Bumped by every poll that did something and every completion made outside a poll:
    /// spinning threads look at their request again when it changes.
    epoch: AtomicU64,
    /// The poll token: held by the one waiting thread that polls for the others (and sleeps
    /// on the channel's waiter when idle).
    polling: AtomicBool,
    /// Threads asleep on `cv`.
    sleepers: AtomicUsize,
    m: Mutex<()>,
    cv: Condvar,
    waiter: W,
    /// Spin before sleeping (`None`: never sleep, the `spin` wait policy).
    spin: Option<Duration>,
    /// The asymmetric barrier is registered (`skifch_drivers::sys`): the light side is a
    /// compiler fence.
    asym: bool,
}

impl<W: Waiter> Waits<W> {
    /// Something completed: wake the threads asleep on the condition variable.
    fn bump(&self) {
        // A change, not a count: two bumps that race may leave one increment, and the
        // epoch still differs from what a waiter saw (no read-modify-write: a locked one
        // per completion cost ≈ 4 ns). Ordered with the sleeper's increment and re-check
        // in `sleep_cv` by the asymmetric barrier (light here, heavy there): either it
        // sees the new epoch, or this sees it counted.
        let e = self.epoch.load(Ordering::Relaxed);
        self.epoch.store(e.wrapping_add(1), Ordering::Relaxed);
        sys::light_barrier(self.asym);
        if self.sleepers.load(Ordering::Relaxed) > 0 {
            let _g = self.m.lock().unwrap_or_else(|p| p.into_inner());
            self.cv.notify_all();
        }
    }

    /// Sleeps on the condition variable until the epoch moves past `seen` or the poller
    /// leaves (so that this thread may take its place), at most one slice.
    fn sleep_cv(&self, seen: u64) {
        let g = self.m.lock().unwrap_or_else(|p| p.into_inner());
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        sys::heavy_barrier(); // pairs with the light barriers of `bump` and `leave`
        if self.epoch.load(Ordering::SeqCst) == seen && self.polling.load(Ordering::SeqCst) {
            let _ = self.cv.wait_timeout(g, CONDVAR_SLICE);
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Gives the poll token back and wakes the sleepers, one of which takes it over.
    fn leave(&self) {
        // Not a SeqCst store (an `xchg`): the asymmetric barrier orders it with the
        // sleeper's count, as in `bump`.
        self.polling.store(false, Ordering::Release);
        sys::light_barrier(self.asym);
        if self.sleepers.load(Ordering::Relaxed) > 0 {
            let _g = self.m.lock().unwrap_or_else(|p| p.into_inner());
            self.cv.notify_all();
        }
    }
}

/// The engine locked for [`Engine::test_each`]: tests requests one by one (a plain call per
/// request, not one through a `dyn` closure).
pub struct Reaper<'a, P: Port>(FlagGuard<'a, Core<P>>);

/// What reaping a request gives: its status, or nothing for a caller that ignores it
/// (`MPI_STATUSES_IGNORE`: no status copied out).
pub trait Outcome: Sized {
    /// The outcome of a request that completed with status `s`.
    fn of(s: &Status) -> Self;
}

impl Outcome for Status {
    #[inline(always)]
    fn of(s: &Status) -> Self {
        *s
    }
}

impl Outcome for () {
    #[inline(always)]
    fn of(_: &Status) {}
}

impl<P: Port> Reaper<'_, P> {
    /// As [`Engine::test`], inline: a multiple-completion call reaps each request of its
    /// set through here (`Core::test` called per request cost ≈ 20 instructions more).
    /// `None` while pending; else the request is released: its outcome, or its own error.
    #[inline(always)]
    pub fn take<T: Outcome>(&mut self, id: ReqId) -> Option<Result<T>> {
        if id == SENT {
            return Some(Ok(T::of(&Status::default())));
        }
        let s = self.0.st_mut();
        match s.reqs.get(id as usize) {
            Some(Some(r)) if r.done => Some(s.release_with(id)),
            Some(Some(_)) => None,
            _ => Some(Err(no_request(id))),
        }
    }
}

#[cold]
fn no_request(id: ReqId) -> Error {
    Error::Request(format!("request {id} does not exist"))
}

/// The poll token of one wait, given back when the wait ends (also by an error).
struct Token<'a, W: Waiter> {
    waits: &'a Waits<W>,
    held: bool,
}

impl<W: Waiter> Token<'_, W> {
    /// Holds the token, taking it if free; `true` if held.
    fn take(&mut self) -> bool {
        if !self.held {
            self.held = !self.waits.polling.swap(true, Ordering::SeqCst);
        }
        self.held
    }
}

impl<W: Waiter> Drop for Token<'_, W> {
    fn drop(&mut self) {
        if self.held {
            self.waits.leave();
        }
    }
}

/// The error of a call entered while another thread is inside one, in the modes that
/// allow one thread at a time.
#[cold]
fn concurrent() -> Error {
    Error::Other(
        "called while another thread is inside an MPI call: the library was initialized for \
         one thread at a time (MPI_THREAD_SERIALIZED at most; MPI_THREAD_MULTIPLE lets \
         threads call concurrently), and a blocking call cannot be completed by another \
         thread's call in that mode: failing instead of deadlocking"
            .into(),
    )
}

/// A call from a thread other than the one the engine is bound to.
#[cold]
pub fn wrong_thread() -> Error {
    Error::Other(
        "called from a thread other than the one that called MPI_Init: the library was \
         initialized for MPI_THREAD_SINGLE or MPI_THREAD_FUNNELED, where only that thread makes \
         MPI calls (MPI-3.1 §12.4.3; MPI_Init_thread with MPI_THREAD_SERIALIZED or \
         MPI_THREAD_MULTIPLE lets other threads call)"
            .into(),
    )
}

impl<P: Port> Engine<P> {
    /// An engine on `port` of `job`; `multiple`: threads may call it concurrently
    /// (`MPI_THREAD_MULTIPLE`).
    pub fn open<D: Driver<Port = P>>(job: &Job<D>, port: u32, multiple: bool) -> Result<Self> {
        let core = Core::open(job, port)?;
        let spin = match WaitPolicy::from_env() {
            // At least the transport's round trip (a fabric's: `Waiter::spin_floor`).
            WaitPolicy::Fixed(d) => Some(d.max(core.ep.waiter().spin_floor())),
            WaitPolicy::Spin => None,
            WaitPolicy::Block => Some(Duration::ZERO),
        };
        Ok(Engine {
            eager: core.eager,
            world: core.world(),
            multiple,
            waits: Waits {
                epoch: AtomicU64::new(0),
                polling: AtomicBool::new(false),
                sleepers: AtomicUsize::new(0),
                m: Mutex::new(()),
                cv: Condvar::new(),
                waiter: core.ep.waiter(),
                spin,
                asym: multiple && {
                    sys::register_process();
                    sys::asymmetric()
                },
            },
            core: FlagLock::new(core),
        })
    }

    /// Whether threads may call concurrently (`MPI_THREAD_MULTIPLE`).
    pub fn is_multiple(&self) -> bool {
        self.multiple
    }

    /// The core, for one call: a try-lock when one thread at a time may call (failing
    /// with [`concurrent`]), else the lock (held for short sections only).
    #[inline(always)]
    fn lock(&self) -> Result<FlagGuard<'_, Core<P>>> {
        match self.core.try_lock() {
            Some(g) => Ok(g),
            None => self.contended(),
        }
    }

    /// The lock was taken: wait for it under `MPI_THREAD_MULTIPLE`, else [`concurrent`].
    #[cold]
    #[inline(never)]
    fn contended(&self) -> Result<FlagGuard<'_, Core<P>>> {
        if self.multiple {
            if let Some(g) = self.core.lock() {
                return Ok(g);
            }
        }
        if self.core.bound_elsewhere() {
            return Err(wrong_thread());
        }
        Err(concurrent())
    }

    /// Binds the engine to the calling thread (the C ABI below `MPI_THREAD_SERIALIZED`):
    /// its calls take the core without an atomic read-modify-write, and calls from any
    /// other thread fail ([`FlagLock::bind_to_current_thread`]). Not under
    /// `MPI_THREAD_MULTIPLE`.
    pub fn bind_to_current_thread(&self) -> Result<()> {
        if self.multiple {
            return Err(Error::Intern(
                "bind_to_current_thread under MPI_THREAD_MULTIPLE".into(),
            ));
        }
        let mut g = self.lock()?;
        FlagLock::bind_to_current_thread(&mut g);
        Ok(())
    }

    /// A question about the state that cannot fail: `busy` when another thread holds the
    /// core in the one-thread-at-a-time modes (a misuse; the answer errs on the safe side).
    fn ask<T>(&self, busy: T, f: impl FnOnce(&State) -> T) -> T {
        match self.lock() {
            Ok(g) => f(g.st()),
            Err(_) => busy,
        }
    }

    /// World rank and size.
    pub fn world(&self) -> (u32, u32) {
        self.world
    }

    /// The eager limit in bytes.
    pub fn eager_limit(&self) -> usize {
        self.eager
    }

    /// Bytes of the attached Bsend buffer in use.
    pub fn bsend_used(&self) -> usize {
        self.ask(usize::MAX, |s| s.bsend_used)
    }

    /// `true` if `id` names a live request.
    pub fn is_request(&self, id: ReqId) -> bool {
        self.ask(true, |s| s.is_request(id))
    }

    /// `true` if the request is complete (without releasing it).
    pub fn is_done(&self, id: ReqId) -> bool {
        self.ask(false, |s| s.is_done(id))
    }

    /// Blocking standard send (see [`Core::send`]).
    #[inline]
    pub fn send(&self, env: Envelope, dst: u32, buf: UserBuf) -> Result<()> {
        if !self.multiple {
            return self.lock()?.send(env, dst, buf);
        }
        self.send_mt(env, dst, buf)
    }

    #[inline(never)]
    fn send_mt(&self, env: Envelope, dst: u32, buf: UserBuf) -> Result<()> {
        if buf.packed_len() <= self.eager && buf.as_contiguous().is_some() {
            // An eager send does not wait for a peer (a full lane is drained with progress).
            return self.serving(|c| c.send(env, dst, buf));
        }
        let id = self.isend(env, dst, buf, Mode::Standard, 0)?;
        self.wait(id).map(|_| ())
    }

    /// Runs a send on the core under `MPI_THREAD_MULTIPLE`: proto's send serves incoming
    /// messages while a lane is full, which may complete other threads' requests — the
    /// waiting threads are told when it did.
    #[inline]
    fn serving<T>(&self, f: impl FnOnce(&mut Core<P>) -> Result<T>) -> Result<T> {
        let mut c = self.lock()?;
        let before = c.st().completed;
        let r = f(&mut c);
        let moved = c.st().completed != before;
        drop(c);
        if moved {
            self.waits.bump();
        }
        r
    }

    /// Blocking exchange (see [`Core::sendrecv`]).
    pub fn sendrecv(
        &self,
        to: Envelope,
        dst: u32,
        sbuf: UserBuf,
        from: Envelope,
        rbuf: UserBuf,
    ) -> Result<Status> {
        if !self.multiple {
            return self.lock()?.sendrecv(to, dst, sbuf, from, rbuf);
        }
        let r = self.irecv(from, rbuf)?;
        let s = self.isend(to, dst, sbuf, Mode::Standard, 0);
        super::finish_pair(&mut &*self, r, s)
    }

    /// Starts a send (see [`Core::isend`]).
    #[inline]
    pub fn isend(
        &self,
        env: Envelope,
        dst: u32,
        buf: UserBuf,
        mode: Mode,
        bsend: usize,
    ) -> Result<ReqId> {
        if !self.multiple {
            return self.lock()?.isend(env, dst, buf, mode, bsend);
        }
        self.isend_mt(env, dst, buf, mode, bsend)
    }

    #[inline(never)]
    fn isend_mt(
        &self,
        env: Envelope,
        dst: u32,
        buf: UserBuf,
        mode: Mode,
        bsend: usize,
    ) -> Result<ReqId> {
        self.serving(|c| c.isend(env, dst, buf, mode, bsend))
    }

    /// Posts a receive (see [`Core::irecv`]).
    #[inline(always)]
    pub fn irecv(&self, env: Envelope, buf: UserBuf) -> Result<ReqId> {
        self.lock()?.irecv(env, buf)
    }

    /// Blocking receive (see [`Core::recv`]; under `MPI_THREAD_MULTIPLE` a posted request
    /// and [`Engine::wait`]).
    pub fn recv(&self, env: Envelope, buf: UserBuf) -> Result<Status> {
        if !self.multiple {
            return self.lock()?.recv(env, buf);
        }
        self.recv_mt(env, buf)
    }

    #[inline(never)]
    fn recv_mt(&self, env: Envelope, buf: UserBuf) -> Result<Status> {
        let id = self.irecv(env, buf)?;
        self.wait(id)
    }

    /// The C ABI's eager send of contiguous bytes (see [`Core::try_send_eager`]).
    #[inline(always)]
    pub fn try_send_eager(&self, env: Envelope, dst: u32, data: &[u8]) -> Result<bool> {
        if !self.multiple {
            return self.lock()?.try_send_eager(env, dst, data);
        }
        self.try_send_eager_mt(env, dst, data)
    }

    #[inline(never)]
    fn try_send_eager_mt(&self, env: Envelope, dst: u32, data: &[u8]) -> Result<bool> {
        self.serving(|c| c.try_send_eager(env, dst, data))
    }

    /// Reserves `n` request slots for deferred receives (see [`Core::reserve`]).
    pub fn reserve(&self, n: usize, out: &mut Vec<ReqId>) -> Result<()> {
        self.lock()?.reserve(n, out);
        Ok(())
    }

    /// Gives reserved slots back (see [`Core::unreserve`]).
    pub fn unreserve(&self, ids: &[ReqId]) -> Result<()> {
        self.lock()?.unreserve(ids);
        Ok(())
    }

    /// Posts deferred receives, in order (see [`Core::post_reserved`]). Below
    /// `MPI_THREAD_MULTIPLE` only: the C ABI defers nothing under it.
    pub fn post_reserved(&self, run: impl IntoIterator<Item = (Deferred, UserBuf)>) -> Result<()> {
        let mut c = self.lock()?;
        for (d, buf) in run {
            c.post_reserved(d, buf)?;
        }
        Ok(())
    }

    /// Drains a run of deferred receives straight from the channel (see
    /// [`Core::drain_deferred`]); never under `MPI_THREAD_MULTIPLE` (it waits inside the
    /// channel with the lock held).
    pub fn drain_deferred(
        &self,
        run: &mut [Deferred],
        put: impl FnMut(usize, [&[u8]; 2]),
    ) -> Result<bool> {
        if self.multiple {
            return Ok(false);
        }
        self.lock()?.drain_deferred(run, put)
    }

    /// The direct receive into contiguous bytes (see [`Core::try_recv_bytes`]); never
    /// under `MPI_THREAD_MULTIPLE` (it waits inside the channel with the lock held).
    #[inline(always)]
    pub fn try_recv_bytes(&self, env: Envelope, buf: &mut [u8]) -> Result<Option<Status>> {
        if self.multiple {
            return Ok(None);
        }
        self.lock()?.try_recv_bytes(env, buf)
    }

    /// One round of progress; `true` if anything happened.
    pub fn progress(&self) -> Result<bool> {
        let did = self.lock()?.progress()?;
        if did && self.multiple {
            self.waits.bump();
        }
        Ok(did)
    }

    /// One round of progress if no other thread is inside the library (`None`: one is,
    /// and progresses for itself): an asynchronous progress thread's poll, which must not
    /// compete with the program's own calls for the lock.
    pub fn try_progress(&self) -> Result<Option<bool>> {
        let Some(mut c) = self.core.try_lock() else {
            return Ok(None);
        };
        c.check()?;
        let did = c.progress()?;
        drop(c);
        if did && self.multiple {
            self.waits.bump();
        }
        Ok(Some(did))
    }

    /// Pushes everything queued out, for Finalize (called by one thread, the others done).
    pub fn flush_all(&self) -> Result<()> {
        self.lock()?.flush_all()
    }

    /// Blocking receive of exactly `len` bytes on a collective context.
    pub fn coll_recv(&self, env: Envelope, len: usize) -> Result<Vec<u8>> {
        if !self.multiple {
            return self.lock()?.coll_recv(env, len);
        }
        let b = UserBuf::owned(crate::mem::zeroed(len)?);
        let id = self.irecv(env, b)?;
        self.wait_mt(|c| {
            let s = c.st_mut();
            if !s.is_done(id) {
                return None;
            }
            let r = s.release(id);
            Some(match (r.err, r.kind) {
                (Some(e), _) => Err(*e),
                (None, ReqKind::Recv { buf, .. }) => Ok(buf.into_owned().unwrap_or_default()),
                _ => Err(Error::Intern("collective receive lost its buffer".into())),
            })
        })
    }

    /// `MPI_Improbe` (see [`Core::improbe`]).
    pub fn improbe(&self, env: Envelope) -> Result<Option<(Status, MsgId)>> {
        self.lock()?.improbe(env)
    }

    /// `MPI_Mprobe`: waits for a matching message and holds it.
    pub fn mprobe(&self, env: Envelope) -> Result<(Status, MsgId)> {
        if !self.multiple {
            return self.lock()?.mprobe(env);
        }
        self.wait_mt(|c| c.hold(env).map(Ok))
    }

    /// `MPI_Imrecv` (see [`Core::imrecv`]).
    pub fn imrecv(&self, msg: MsgId, buf: UserBuf) -> Result<ReqId> {
        self.lock()?.imrecv(msg, buf)
    }

    /// A completed request that needs no communication.
    pub fn done_request(&self) -> Result<ReqId> {
        Ok(self.lock()?.done_request())
    }

    /// A generalized request (see [`Core::user_request`]).
    pub fn user_request(&self) -> Result<ReqId> {
        Ok(self.lock()?.user_request())
    }

    /// Completes a generalized request (see [`Core::complete_user`]).
    pub fn complete_user(&self, id: ReqId, status: Status, err: Option<Error>) -> Result<bool> {
        let r = self.lock()?.complete_user(id, status, err);
        self.completed();
        r
    }

    /// `MPI_Test` without progress (see [`Core::test`]).
    pub fn test(&self, id: ReqId) -> Result<Option<Status>> {
        self.lock()?.test(id)
    }

    /// `MPI_Test` with one round of progress when the request is not complete yet.
    pub fn test_progress(&self, id: ReqId) -> Result<Option<Status>> {
        let mut c = self.lock()?;
        if !c.is_done(id) && c.progress()? && self.multiple {
            self.waits.bump();
        }
        c.test(id)
    }

    /// `MPI_Request_get_status` (see [`Core::peek`]).
    pub fn peek(&self, id: ReqId) -> Result<Option<Status>> {
        self.lock()?.peek(id)
    }

    /// `MPI_Wait`: progresses until `id` completes, then releases it.
    #[inline]
    pub fn wait(&self, id: ReqId) -> Result<Status> {
        if !self.multiple {
            return self.lock()?.wait(id);
        }
        self.wait_one_mt(id)
    }

    #[inline(never)]
    fn wait_one_mt(&self, id: ReqId) -> Result<Status> {
        if id == SENT {
            return Ok(Status::default());
        }
        self.wait_mt(|c| match c.test_done(id) {
            Some(r) => Some(r),
            None if !c.is_request(id) => {
                Some(Err(Error::Request(format!("request {id} does not exist"))))
            }
            None => None,
        })
    }

    /// `MPI_Waitall`'s wait: progresses until the `n` requests `id(0..n)` are all settled
    /// (complete, or no request: their reap reports that), releasing none. One wait for the
    /// whole set instead of one per request: the channel is drained in batches and each
    /// request is looked at once (a cursor that only moves forward, since a complete
    /// request stays complete until released).
    pub fn wait_all(&self, n: usize, id: impl Fn(usize) -> ReqId) -> Result<()> {
        let mut i = 0;
        self.wait_until(|s| {
            while i < n && s.is_settled(id(i)) {
                i += 1;
            }
            i == n
        })
    }

    /// Runs `f` with the core locked once and a function that tests one request as
    /// [`Engine::test`] does (no progress; a complete request is released): for the
    /// multiple-completion calls, which reap a whole set after one wait. `f` must not call
    /// the engine (its lock is held).
    pub fn test_each<T>(&self, f: impl FnOnce(&mut Reaper<'_, P>) -> T) -> Result<T> {
        let c = self.lock()?;
        Ok(f(&mut Reaper(c)))
    }

    /// Progresses until `done(state)`.
    #[inline]
    pub fn wait_until(&self, mut done: impl FnMut(&State) -> bool) -> Result<()> {
        if !self.multiple {
            return self.lock()?.wait_until(done);
        }
        self.wait_mt(|c| done(c.st()).then_some(Ok(())))
    }

    /// `MPI_Request_free` (see [`Core::request_free`]).
    pub fn request_free(&self, id: ReqId) -> Result<()> {
        self.lock()?.request_free(id)
    }

    /// `MPI_Cancel` (see [`Core::cancel`]); may complete a request another thread waits for.
    pub fn cancel(&self, id: ReqId) -> Result<()> {
        let r = self.lock()?.cancel(id);
        self.completed();
        r
    }

    /// `MPI_Iprobe` (see [`Core::iprobe`]).
    pub fn iprobe(&self, env: Envelope) -> Result<Option<Status>> {
        self.lock()?.iprobe(env)
    }

    /// `MPI_Probe`: waits for a matching message and returns its envelope.
    pub fn probe(&self, env: Envelope) -> Result<Status> {
        if !self.multiple || env.src == super::PROC_NULL {
            return self.lock()?.probe(env);
        }
        self.wait_mt(|c| c.st().peek_unexpected(env).map(Ok))
    }

    /// The first rank of the job known lost, if any (for waits outside the channel: a
    /// one-sided lock word in mapped memory).
    pub(crate) fn lost_peer(&self) -> Option<u32> {
        self.waits.waiter.lost_peer()
    }

    /// Runs `f` on the engine's endpoint, whose context is the state (one-sided
    /// communication's message path, `crate::win`). The engine's lock is held throughout:
    /// under `MPI_THREAD_MULTIPLE` other threads wait meanwhile.
    pub(crate) fn with_ep<T>(
        &self,
        f: impl FnOnce(&mut skifch::proto::Endpoint<P, State>) -> Result<T>,
    ) -> Result<T> {
        let mut c = self.lock()?;
        c.check()?;
        f(&mut c.ep)
    }

    /// An empty schedule over `len` zeroed bytes for [`Engine::start_sched`], reusing a
    /// finished one's storage when the core is free (else a new one).
    pub fn new_sched(&self, len: usize) -> Box<Sched> {
        match self.lock() {
            Ok(mut c) => c.st_mut().new_sched(len),
            Err(_) => Sched::new(len),
        }
    }

    /// Starts a schedule (see [`Core::start_sched`]).
    pub fn start_sched(&self, sched: Box<Sched>) -> Result<ReqId> {
        self.lock()?.start_sched(sched)
    }

    /// A completion made outside a poll: waiting threads look again.
    fn completed(&self) {
        if self.multiple {
            self.waits.bump();
        }
    }

    /// The wait of `MPI_THREAD_MULTIPLE` (module docs): until `f`, called with the core
    /// locked, gives the outcome. The holder of the poll token polls; the others look at
    /// their request when the completion counter moved; after the fixed spin, the poller
    /// sleeps on the channel and the others on the condition variable; never sleeps holding
    /// the lock. A lost peer ends it (breaking the engine for every thread).
    #[inline(never)]
    fn wait_mt<T>(&self, mut f: impl FnMut(&mut Core<P>) -> Option<Result<T>>) -> Result<T> {
        let w = &self.waits;
        let mut token = Token {
            waits: w,
            held: false,
        };
        let mut idle = 0u32;
        let mut since: Option<Instant> = None;
        // The counter when the request was last looked at (none yet).
        let mut looked: Option<u64> = None;
        loop {
            let seen = w.epoch.load(Ordering::SeqCst);
            let poller = token.take();
            let mut queued = 0;
            if poller || looked != Some(seen) {
                if let Some(mut c) = self.try_core() {
                    c.check()?;
                    if let Some(r) = f(&mut c) {
                        return r;
                    }
                    looked = Some(seen);
                    if poller {
                        if c.progress()? {
                            w.bump();
                            if let Some(r) = f(&mut c) {
                                return r;
                            }
                            idle = 0;
                            since = None;
                            continue;
                        }
                        queued = c.ep.queued();
                    }
                }
            }
            // Nothing to do: spin (the poller for the wait policy's time, the others on the
            // counter), then sleep.
            idle += 1;
            if idle < QUICK_SPINS {
                std::hint::spin_loop();
                continue;
            }
            let Some(spin) = w.spin else {
                std::thread::yield_now(); // the `spin` policy: never sleep
                continue;
            };
            let t0 = *since.get_or_insert_with(Instant::now);
            if t0.elapsed() < spin {
                std::thread::yield_now();
                continue;
            }
            if let Some(rank) = w.waiter.lost_peer() {
                let e = Error::from(skifch::Error::PeerLost { rank });
                return Err(self.lock()?.fail(e));
            }
            if poller {
                self.sleep_channel(seen, queued);
            } else {
                w.sleep_cv(seen);
                // Look again after every sleep, whatever the counter says: a completion
                // nobody announced costs one slice, never a hang.
                looked = None;
            }
        }
    }

    /// The core if no other thread holds it.
    fn try_core(&self) -> Option<FlagGuard<'_, Core<P>>> {
        self.core.try_lock()
    }

    /// An asynchronous progress thread's wait when idle (`win::serve_until`, under
    /// `MPI_THREAD_MULTIPLE` only): asleep on the channel's waiter until a message arrives
    /// (at most [`CHANNEL_SLICE`]), after one more poll once armed.
    pub fn idle_wait(&self) {
        if self.multiple {
            self.sleep_channel(self.waits.epoch.load(Ordering::SeqCst), 0);
        }
    }

    /// The poller's sleep on the channel's waiter: it polls once more after arming, so no
    /// message published meanwhile is missed.
    fn sleep_channel(&self, seen: u64, queued: usize) {
        let w = &self.waits;
        let ticket = w.waiter.arm();
        let (quiet, did) = match self.try_core() {
            Some(mut c) => match c.progress() {
                Ok(did) => (!did, did),
                Err(_) => (false, false), // broken: the caller's next look says so
            },
            None => (false, false), // another thread holds it: look again
        };
        if did {
            w.bump();
        }
        if quiet && w.epoch.load(Ordering::SeqCst) == seen {
            // A peer draining a full lane does not wake us: look again soon then.
            let slice = if queued > 0 {
                Duration::from_micros(100)
            } else {
                CHANNEL_SLICE
            };
            w.waiter.sleep(ticket, slice);
        }
        w.waiter.disarm();
    }
}
