//! Deferred `MPI_Irecv` (issue 17: the windowed message rate, osu_mbw_mr's pattern).
//!
//! A window's receiver spends about half its time posting: each `MPI_Irecv` went through
//! the engine's matching tables and request life cycle, and each message later through the
//! proto dispatch, the matching and the reaping. Here a byte receive taken below
//! `MPI_THREAD_MULTIPLE` is only written down — its envelope, its buffer and a request slot
//! reserved in advance ([`mpi_lite::engine::Deferred`]) — and the handle returned is that
//! slot's, so a program sees an ordinary request.
//!
//! * **Every other call posts the run first**, in order, exactly as `MPI_Irecv` would have
//!   ([`crate::state`]'s entry runs [`Defer::flush`]); so the engine's posted receives always
//!   predate the deferred ones, and anything that looks at or completes a request (waits,
//!   tests, cancel, probes, other receives, collectives, `MPI_Finalize`) sees it posted.
//! * **`MPI_Waitall` on exactly the run** (the window: same handles, same order) drains it
//!   instead, when the engine has nothing pending: each arriving eager message is copied
//!   from the channel into the first deferred receive that accepts it
//!   ([`mpi_lite::engine::Engine::drain_deferred`]), the statuses are written, the slots go
//!   back to the pool. A message that needs the general path (synchronous, rendezvous, too
//!   long) ends the drain: the run is posted (matched receives complete) and the wait goes
//!   on as usual.
//! * Sends (`MPI_Isend`'s eager path included) post it too: they may serve incoming
//!   messages while a lane is full, which is harmless (a message for a deferred receive then
//!   waits in the unexpected queue, where posting finds it) but not worth a special case.
//!
//! Under `MPI_THREAD_MULTIPLE` nothing is deferred (another thread's call could not see the
//! run).

use std::cell::UnsafeCell;

use mpi_lite::comm::CommData;
use mpi_lite::engine::{Deferred, ReqId, Status, PROC_NULL};
use mpi_lite::mem::UserBuf;
use mpi_lite::{Error, Mpi, Result};
use skifch::mem::copy_slice;
use skifch_drivers::DefaultPort;

/// Request slots reserved at a time.
const RESERVE: usize = 64;

/// Runs posted by another call in a row after which receives are posted at once again
/// (a program whose receives meet sends or tests before their wait: deferring them only
/// adds the posting's second step), and how often such a program is tried again.
const MISSES: u32 = 2;
const RETRY_EVERY: u32 = 1024;

/// Whether `MPI_Irecv` defers (`SKIFMPI_DEFER`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Defers, stops while runs keep being posted by other calls, tries again later.
    #[default]
    Auto,
    /// Defers every byte receive (tests: every path through a run, whatever came before).
    Always,
    /// Posts every receive at once (to measure what deferring saves).
    Off,
}

impl Mode {
    /// From `SKIFMPI_DEFER`: `auto` (or unset), `always` or `off`.
    pub fn from_env() -> Result<Mode> {
        match std::env::var("SKIFMPI_DEFER") {
            Err(_) => Ok(Mode::Auto),
            Ok(v) => match v.trim() {
                "auto" | "" => Ok(Mode::Auto),
                "always" => Ok(Mode::Always),
                "off" => Ok(Mode::Off),
                other => Err(Error::Arg(format!(
                    "SKIFMPI_DEFER={other:?}: expected auto, always or off"
                ))),
            },
        }
    }
}

/// The deferred receives of this process (their buffers apart: `bufs[i]` is `run[i]`'s)
/// and the pool of reserved slots.
#[derive(Default)]
struct Run {
    pool: Vec<ReqId>,
    run: Vec<Deferred>,
    bufs: Vec<*mut u8>,
    /// Runs posted (not drained) in a row.
    misses: u32,
    /// Receives still to post at once before deferring is tried again (0: defer).
    skip: u32,
    mode: Mode,
}

impl Run {
    /// The run was posted by another call, not drained.
    fn missed(&mut self) {
        self.misses = self.misses.saturating_add(1);
        if self.misses >= MISSES && self.mode == Mode::Auto {
            self.skip = RETRY_EVERY;
        }
    }
}

/// [`Run`] in the state, reached without a lock (see [`Defer::with`]).
#[derive(Default)]
pub struct Defer(UnsafeCell<Run>);

// SAFETY: the run is reached only below MPI_THREAD_MULTIPLE, by the one thread that holds
// the state for its call (`state::call_hot`, `MPI_Finalize`'s lock); under it nothing is ever
// deferred, so the run stays empty and is only read (`pending`), never written.
unsafe impl Sync for Defer {}

// SAFETY: the buffers are the program's, lent by `MPI_Irecv` until the request completes
// (MPI's contract, whichever thread completes it); the state that holds the run moves
// between threads only whole, under its lock.
unsafe impl Send for Defer {}

impl Defer {
    /// Runs `f` on the run. `f` must not reach the run again (it does not call back into
    /// this module).
    #[inline(always)]
    fn with<T>(&self, f: impl FnOnce(&mut Run) -> T) -> T {
        // SAFETY: see the `Sync` impl: one thread at a time reaches the run, and `f` does
        // not re-enter, so this is the only reference to it meanwhile.
        f(unsafe { &mut *self.0.get() })
    }

    /// Sets the mode (`MPI_Init`).
    pub fn set_mode(&self, mode: Mode) {
        self.with(|r| {
            r.mode = mode;
            r.skip = if mode == Mode::Off { u32::MAX } else { 0 };
        });
    }

    /// Whether receives are deferred (one load: on every call's entry).
    #[inline(always)]
    pub fn pending(&self) -> bool {
        // SAFETY: as `with`; a read of the length.
        !unsafe { &*self.0.get() }.run.is_empty()
    }

    /// Posts every deferred receive, in order.
    #[inline(never)]
    pub fn flush(&self, mpi: &Mpi<DefaultPort>) -> Result<()> {
        let (run, bufs) = self.with(|r| {
            r.missed();
            (std::mem::take(&mut r.run), std::mem::take(&mut r.bufs))
        });
        self.post(mpi, run, bufs)
    }

    /// Whether the next `MPI_Irecv` is deferred: yes unless the last [`MISSES`] runs were
    /// all posted by other calls; then after [`RETRY_EVERY`] receives posted at once it is
    /// tried again (a program that changed its ways). A run is open only while `skip` is 0.
    #[inline(always)]
    pub fn wanted(&self) -> bool {
        self.with(|r| {
            if r.skip == 0 {
                return true;
            }
            if r.mode == Mode::Auto {
                r.skip -= 1;
            }
            false
        })
    }

    /// `MPI_Irecv` of the `len` bytes at `buf` from `src` with `tag` on `c`, below
    /// `MPI_THREAD_MULTIPLE`: deferred, its reserved slot returned.
    ///
    /// # Safety
    /// MPI's contract for a nonblocking receive: the bytes are the library's until the
    /// request completes.
    #[inline(always)]
    pub unsafe fn irecv(
        &self,
        mpi: &Mpi<DefaultPort>,
        c: &CommData,
        buf: *mut u8,
        len: usize,
        src: i32,
        tag: i32,
    ) -> Result<ReqId> {
        let env = Mpi::<DefaultPort>::want(c, src, tag)?;
        if env.src == PROC_NULL {
            // SAFETY: the caller's contract.
            return mpi.irecv(c, unsafe { UserBuf::bytes(buf, len) }, src, tag);
        }
        let id = match self.with(|r| r.pool.pop()) {
            Some(id) => id,
            None => self.refill(mpi)?,
        };
        let d = Deferred {
            id,
            env,
            cap: len,
            got: None,
        };
        self.with(|r| {
            r.run.push(d);
            r.bufs.push(buf);
        });
        Ok(id)
    }

    #[cold]
    #[inline(never)]
    fn refill(&self, mpi: &Mpi<DefaultPort>) -> Result<ReqId> {
        let mut ids = Vec::with_capacity(RESERVE);
        mpi.engine().reserve(RESERVE, &mut ids)?;
        ids.reverse(); // handed out lowest first
        let id = ids.pop().expect("reserved");
        self.with(|r| r.pool.append(&mut ids));
        Ok(id)
    }

    /// `MPI_Waitall` of `n` requests (`is(i, id)`: whether the `i`th is deferred receive
    /// `id`) when they are exactly the run: drained straight from the channel, `done(i,
    /// status)` called for each in order, the slots back in the pool: `true`. `false` when
    /// they are not, or the drain cannot go on; the run has then been posted and the caller
    /// waits as usual.
    pub fn waitall(
        &self,
        mpi: &Mpi<DefaultPort>,
        n: usize,
        is: impl Fn(usize, ReqId) -> bool,
        mut done: impl FnMut(usize, Status),
    ) -> Result<bool> {
        let (mut run, mut bufs) =
            self.with(|r| (std::mem::take(&mut r.run), std::mem::take(&mut r.bufs)));
        let same = run.len() == n && run.iter().enumerate().all(|(i, d)| is(i, d.id));
        let drained = if same {
            let put = |i: usize, [a, b]: [&[u8]; 2]| {
                // SAFETY: `bufs[i]` is deferred receive `i`'s buffer, `run[i].cap` bytes the
                // library's until its request completes (`irecv`'s contract); the drain
                // puts at most that many (longer messages take the general path).
                let dst = unsafe { std::slice::from_raw_parts_mut(bufs[i], a.len() + b.len()) };
                copy_slice(dst, a);
                copy_slice(&mut dst[a.len()..], b);
            };
            mpi.engine().drain_deferred(&mut run, put)
        } else {
            Ok(false)
        };
        match drained {
            Ok(true) => {
                for (i, d) in run.iter().enumerate() {
                    done(i, d.status().unwrap_or_default());
                }
                self.with(|r| {
                    r.misses = 0;
                    r.skip = 0;
                    r.pool.extend(run.iter().map(|d| d.id));
                    run.clear();
                    bufs.clear();
                    // Their capacity kept for the next window.
                    r.run = run;
                    r.bufs = bufs;
                });
                Ok(true)
            }
            Ok(false) => {
                self.with(Run::missed);
                self.post(mpi, run, bufs)?;
                Ok(false)
            }
            Err(e) => {
                // Posted all the same, so the requests report the failure themselves.
                let _ = self.post(mpi, run, bufs);
                Err(e)
            }
        }
    }

    /// Posts `run` with its buffers (taken out of the cell), then gives the emptied
    /// vectors back.
    fn post(
        &self,
        mpi: &Mpi<DefaultPort>,
        mut run: Vec<Deferred>,
        mut bufs: Vec<*mut u8>,
    ) -> Result<()> {
        let each = run.drain(..).zip(bufs.drain(..)).map(|(d, p)| {
            // SAFETY: `p` is `d`'s buffer of `d.cap` bytes (`irecv`'s contract).
            (d, unsafe { UserBuf::bytes(p, d.cap) })
        });
        let r = mpi.engine().post_reserved(each);
        self.with(|c| {
            if c.run.is_empty() {
                c.run = run;
                c.bufs = bufs;
            }
        });
        r
    }

    /// `MPI_Finalize`: posts what is deferred (a receive left pending is the program's
    /// error, reported as without deferral) and gives the pool back.
    pub fn finish(&self, mpi: &Mpi<DefaultPort>) -> Result<()> {
        self.flush(mpi)?;
        let pool = self.with(|r| std::mem::take(&mut r.pool));
        mpi.engine().unreserve(&pool)
    }
}
