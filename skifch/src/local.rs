//! The in-process loopback job: N ranks as threads of one process over a small, safe
//! driver — for this crate's doctests and tests, and for code that wants a job without a
//! launcher. It is the contract in its plainest form, not a fast transport: the lanes of
//! the shm driver run in-process too, on heap memory (`skifch_drivers::inproc`), and the
//! benchmarks measure those.
//!
//! Every (sending port, receiving port) pair has a queue of `lane_bytes` bytes, accounted
//! as the lanes account a ring: a message takes an 8-byte header and its payload padded
//! to 8 bytes, and its memory is given back up to the oldest message still held
//! ([`Reclaim`]), so back-pressure, partial sends and held messages behave as on the shm
//! driver. Each receiving port has one mutex over its queues, and a condition variable
//! for its sleepers. A rank whose thread panics is lost to its peers (driver obligation 6).

use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crate::driver::{
    iov_total, partial_prefix, Driver, Port, RawMessage, RawSeg, Reclaim, SendMode, Token, Waiter,
};
use crate::error::Unreachable;
use crate::{Error, Job, NetAddr, Result};

/// Bytes of a message's header in a queue's accounting (as in a lane).
const HDR: usize = 8;

/// Parameters of an in-process loopback job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Ranks in the job.
    pub nranks: u32,
    /// Ports per rank.
    pub nports: u32,
    /// Bytes each (sending port, receiving port) pair may have in flight, headers included
    /// (a multiple of 8, at least 64): the back-pressure of a lane of this size.
    pub lane_bytes: usize,
}

impl Params {
    /// Default ports per rank.
    pub const DEFAULT_PORTS: u32 = 4;
    /// Most ranks and ports per rank of a loopback job (below the address format's
    /// limits, so that the all-ones address is never one of the job's).
    pub const MAX: u32 = 1 << 15;
}

/// The driver of one rank of a loopback job.
pub struct LocalDriver {
    net: Arc<Net>,
    rank: u32,
    /// The thread this rank lives and dies with (set by [`run`]).
    thread: OnceLock<ThreadId>,
}

/// A rank's handle in a loopback job.
pub type LocalJob = Job<LocalDriver>;

/// Channel states.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Never,
    Open,
    Closed,
    Lost,
}

/// One pair's queue: positions are byte counts, as in a lane.
struct Pair {
    head: u64,
    done: Reclaim,
}

/// A receiving port's queues.
struct Inbox {
    state: State,
    /// Bumped by every delivery and by a lost rank: the sleepers' ticket.
    seq: u32,
    /// Messages in arrival order: (sending channel, start position, payload).
    queue: VecDeque<(usize, u64, Vec<u8>)>,
    /// Per sending channel.
    pairs: Vec<Pair>,
}

struct Chan {
    inbox: Mutex<Inbox>,
    wake: Condvar,
}

/// The job-wide state.
struct Net {
    p: Params,
    chans: Vec<Chan>,
    /// First lost rank + 1 (0: none).
    first_lost: AtomicU32,
}

impl Net {
    fn lock(&self, c: usize) -> MutexGuard<'_, Inbox> {
        // A rank thread that panicked holding the lock left consistent state (every
        // update is completed before anything can panic); its loss is reported separately.
        self.chans[c]
            .inbox
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn lost(&self) -> Option<u32> {
        self.first_lost.load(Ordering::Acquire).checked_sub(1)
    }

    /// Sets the state of every channel of `rank` (a lost channel stays lost).
    fn set_channels(&self, rank: u32, to: State) {
        let np = self.p.nports as usize;
        for c in rank as usize * np..(rank as usize + 1) * np {
            let mut ib = self.lock(c);
            if ib.state != State::Lost {
                ib.state = to;
            }
        }
    }

    /// Marks `rank` lost and wakes every sleeper of the job.
    fn mark_lost(&self, rank: u32) {
        self.set_channels(rank, State::Lost);
        let _ = self
            .first_lost
            .compare_exchange(0, rank + 1, Ordering::AcqRel, Ordering::Relaxed);
        for (c, ch) in self.chans.iter().enumerate() {
            self.lock(c).seq += 1;
            ch.wake.notify_all();
        }
    }
}

/// Creates a loopback job of `params.nranks` ranks; element `r` is rank `r`'s handle.
pub fn job(params: Params) -> Result<Vec<LocalJob>> {
    let Params {
        nranks,
        nports,
        lane_bytes,
    } = params;
    if nranks == 0 || nranks > Params::MAX || nports == 0 || nports > Params::MAX {
        return Err(Error::InvalidArgument(
            format!("{nranks} ranks of {nports} ports: 1..={} each", Params::MAX).into(),
        ));
    }
    if lane_bytes < 64 || !lane_bytes.is_multiple_of(8) || lane_bytes > u32::MAX as usize {
        return Err(Error::InvalidArgument(
            format!("lane size {lane_bytes}: a multiple of 8 in 64..2^32").into(),
        ));
    }
    let n = nranks as usize * nports as usize;
    let chans = (0..n)
        .map(|_| Chan {
            inbox: Mutex::new(Inbox {
                state: State::Never,
                seq: 0,
                queue: VecDeque::new(),
                pairs: (0..n)
                    .map(|_| Pair {
                        head: 0,
                        done: Reclaim::new(0),
                    })
                    .collect(),
            }),
            wake: Condvar::new(),
        })
        .collect();
    let net = Arc::new(Net {
        p: params,
        chans,
        first_lost: AtomicU32::new(0),
    });
    Ok((0..nranks)
        .map(|rank| {
            Job::new(Arc::new(LocalDriver {
                net: net.clone(),
                rank,
                thread: OnceLock::new(),
            }))
        })
        .collect())
}

/// Runs `f` as an `n`-rank loopback job, one thread per rank, with default parameters
/// (4 ports, 64 KiB per pair); returns each rank's result in rank order. A rank that
/// panics is reported to the others as lost, and its panic becomes an error.
pub fn run<T: Send + 'static>(
    n: u32,
    f: impl Fn(LocalJob) -> Result<T> + Send + Sync + 'static,
) -> Result<Vec<T>> {
    let p = Params {
        nranks: n,
        nports: Params::DEFAULT_PORTS,
        lane_bytes: 64 << 10,
    };
    run_with(p, f)
}

/// As [`run`], with explicit parameters.
pub fn run_with<T: Send + 'static>(
    params: Params,
    f: impl Fn(LocalJob) -> Result<T> + Send + Sync + 'static,
) -> Result<Vec<T>> {
    run_ranks(job(params)?, |j| j.driver().bind_thread(), f)
}

/// Runs `f` on each of `jobs` (ranks of one job), each on its own thread named after its
/// rank, after `bind` on that thread (a driver's hook to tie the rank to it); returns the
/// results in rank order, or the first error, a rank's panic becoming
/// [`Error::Bootstrap`]. The thread-per-rank runner of every in-process job.
pub fn run_ranks<D: Driver, T: Send + 'static>(
    jobs: Vec<Job<D>>,
    bind: impl Fn(&Job<D>) -> bool + Send + Sync + 'static,
    f: impl Fn(Job<D>) -> Result<T> + Send + Sync + 'static,
) -> Result<Vec<T>> {
    let (f, bind) = (Arc::new(f), Arc::new(bind));
    let handles: Vec<_> = jobs
        .into_iter()
        .map(|j| {
            let (f, bind) = (f.clone(), bind.clone());
            std::thread::Builder::new()
                .name(format!("rank{}", j.rank()))
                .spawn(move || {
                    bind(&j);
                    f(j)
                })
                .map_err(|e| Error::os("spawning a rank thread", e))
        })
        .collect::<Result<_>>()?;
    let mut out = Vec::with_capacity(handles.len());
    let mut first_err = None;
    for (r, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok(Ok(v)) => out.push(v),
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(p) => {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into());
                first_err
                    .get_or_insert(Error::Bootstrap(format!("rank {r} panicked: {msg}").into()));
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

impl LocalDriver {
    /// Declares that this rank lives and dies with the calling thread: a port dropped while
    /// that thread panics marks the rank lost before the port closes, so that peers see
    /// [`Error::PeerLost`], never a transient "closed". Returns `false` if another thread
    /// was already bound.
    pub fn bind_thread(&self) -> bool {
        let me = std::thread::current().id();
        *self.thread.get_or_init(|| me) == me
    }

    fn rank_thread_panicking(&self) -> bool {
        std::thread::panicking() && self.thread.get() == Some(&std::thread::current().id())
    }
}

impl Drop for LocalDriver {
    fn drop(&mut self) {
        // Every port holds an Arc to this driver, so all of them are closed by now.
        if std::thread::panicking() {
            self.net.mark_lost(self.rank);
        } else {
            self.net.set_channels(self.rank, State::Closed);
        }
    }
}

impl Driver for LocalDriver {
    type Port = LocalPort;
    fn name(&self) -> &'static str {
        "local"
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.net.p.nranks
    }
    fn max_ports(&self) -> u32 {
        self.net.p.nports
    }
    fn open_port(self: &Arc<Self>, port: u32) -> Result<LocalPort> {
        let np = self.net.p.nports;
        if port >= np {
            return Err(Error::InvalidArgument(
                format!("port {port}: this job has {np} ports per rank").into(),
            ));
        }
        let me = (self.rank * np + port) as usize;
        {
            let mut ib = self.net.lock(me);
            match ib.state {
                State::Never | State::Closed => ib.state = State::Open,
                _ => {
                    return Err(Error::InvalidArgument(
                        format!("port {port} of rank {} is already open", self.rank).into(),
                    ))
                }
            }
        }
        Ok(LocalPort {
            drv: self.clone(),
            me,
            addr: NetAddr::new(self.rank as u16, port as u16),
            held: Vec::new(),
            free: Vec::new(),
        })
    }
    fn max_message(&self) -> usize {
        self.net.p.lane_bytes - 2 * HDR
    }
    /// Ranks are threads of this process: heap segments ([`crate::rma::LocalRma`]).
    fn rma(self: &Arc<Self>) -> Option<Arc<dyn crate::rma::Rma>> {
        Some(Arc::new(crate::rma::LocalRma::new(self.rank, self.size())))
    }
}

/// A message handed out and not yet completed: its sending channel and its span.
struct Held {
    src: usize,
    start: u64,
    end: u64,
    /// Where the segment points; never touched until completion. A `Vec`, not a `Box`:
    /// moving a `Box` asserts unique access and would invalidate the segment's pointer
    /// (Stacked Borrows; Miri reports it), moving a `Vec` does not.
    _data: Vec<u8>,
}

/// One open channel of a loopback job.
pub struct LocalPort {
    drv: Arc<LocalDriver>,
    me: usize,
    addr: NetAddr,
    /// Held messages by slot (the token), and the free slots.
    held: Vec<Option<Held>>,
    free: Vec<usize>,
}

impl LocalPort {
    fn net(&self) -> &Net {
        &self.drv.net
    }

    fn nothing(&self) -> Error {
        match self.net().lost() {
            Some(rank) => Error::PeerLost { rank },
            None => Error::WouldBlock,
        }
    }
}

/// Bytes a message of `len` takes in a pair's accounting.
fn record(len: usize) -> u64 {
    (HDR + len.next_multiple_of(8)) as u64
}

// SAFETY: a segment points into a message's boxed payload, moved into `held` (a box's
// contents do not move) and dropped only by `complete` with its token; nothing writes it.
#[allow(unsafe_code)]
unsafe impl Port for LocalPort {
    type Waiter = LocalWaiter;

    fn addr(&self) -> NetAddr {
        self.addr
    }

    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        let p = self.net().p;
        let (r, pt) = (dst.rank(), dst.port());
        if r >= p.nranks || pt >= p.nports {
            let why = if r >= p.nranks {
                Unreachable::NoSuchRank
            } else {
                Unreachable::NoSuchPort
            };
            return Err(Error::Unreachable { addr: dst, why });
        }
        let total = iov_total(iov)?;
        let max = self.drv.max_message();
        if mode == SendMode::Whole && total > max {
            return Err(Error::MessageTooLarge {
                len: total as u64,
                max: max as u32,
            });
        }
        let d = (r * p.nports + pt) as usize;
        let mut ib = self.net().lock(d);
        match ib.state {
            State::Lost => return Err(Error::PeerLost { rank: r }),
            State::Closed => {
                return Err(Error::Unreachable {
                    addr: dst,
                    why: Unreachable::Closed,
                })
            }
            State::Never | State::Open => {}
        }
        let pair = &ib.pairs[self.me];
        let free = p.lane_bytes as u64 - HDR as u64 - (pair.head - pair.done.freed());
        let want = total.min(max);
        let n = if record(want) <= free {
            want
        } else {
            let room = (free as usize).saturating_sub(HDR);
            partial_prefix(mode, room, want, max).ok_or(Error::WouldBlock)?
        };
        let mut data = Vec::with_capacity(n);
        for s in iov {
            let take = s.len().min(n - data.len());
            data.extend_from_slice(&s[..take]);
        }
        let pair = &mut ib.pairs[self.me];
        let start = pair.head;
        pair.head += record(n);
        ib.queue.push_back((self.me, start, data));
        ib.seq = ib.seq.wrapping_add(1);
        drop(ib);
        self.net().chans[d].wake.notify_all();
        Ok(n)
    }

    fn recv_into(&mut self, out: &mut RawMessage) -> Result<()> {
        let Some((src, start, data)) = self.net().lock(self.me).queue.pop_front() else {
            return Err(self.nothing());
        };
        let np = self.net().p.nports as usize;
        let slot = self.free.pop().unwrap_or(self.held.len());
        *out = RawMessage {
            len: data.len(),
            count: 1,
            src: NetAddr::new((src / np) as u16, (src % np) as u16),
            token: Token {
                a: slot as u64,
                b: 0,
            },
            ..RawMessage::EMPTY
        };
        out.segs[0] = RawSeg {
            ptr: data.as_ptr(),
            len: data.len(),
        };
        let held = Held {
            src,
            start,
            end: start + record(data.len()),
            _data: data,
        };
        if slot == self.held.len() {
            self.held.push(Some(held));
        } else {
            self.held[slot] = Some(held);
        }
        Ok(())
    }

    fn ready(&mut self) -> Result<bool> {
        if !self.net().lock(self.me).queue.is_empty() {
            return Ok(true);
        }
        match self.nothing() {
            Error::WouldBlock => Ok(false),
            e => Err(e),
        }
    }

    unsafe fn complete(&mut self, t: Token) {
        let slot = t.a as usize;
        let Some(h) = self.held.get_mut(slot).and_then(Option::take) else {
            return; // not a token of this port (the caller's contract rules it out)
        };
        self.free.push(slot);
        self.net().lock(self.me).pairs[h.src]
            .done
            .complete(h.start, h.end);
    }

    fn waiter(&self) -> LocalWaiter {
        LocalWaiter {
            drv: self.drv.clone(),
            me: self.me,
        }
    }
}

impl Drop for LocalPort {
    fn drop(&mut self) {
        if self.drv.rank_thread_panicking() {
            self.net().mark_lost(self.drv.rank);
        }
        let mut ib = self.net().lock(self.me);
        if ib.state == State::Open {
            ib.state = State::Closed;
        }
    }
}

/// Sleeps on a loopback port's condition variable.
#[derive(Clone)]
pub struct LocalWaiter {
    drv: Arc<LocalDriver>,
    me: usize,
}

impl Waiter for LocalWaiter {
    fn arm(&self) -> u32 {
        self.drv.net.lock(self.me).seq
    }
    fn sleep(&self, ticket: u32, timeout: Duration) {
        // Bounded like the lanes' futex sleep (callers loop; spurious wake-ups are allowed).
        let end = Instant::now() + timeout.min(Duration::from_millis(250));
        let mut ib = self.drv.net.lock(self.me);
        while ib.seq == ticket {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            ib = match self.drv.net.chans[self.me].wake.wait_timeout(ib, left) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
    }
    fn disarm(&self) {}
    fn lost_peer(&self) -> Option<u32> {
        self.drv.net.lost()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance;

    #[test]
    fn loopback_passes_the_conformance_suite() {
        // Miri: fewer ranks, messages and bytes (its "no progress" deadlines are real time).
        let (n, cfg) = if cfg!(miri) {
            let c = conformance::Config {
                messages: 20,
                max_payload: 64,
                pair_memory: 0,
            };
            (2, c)
        } else {
            (4, conformance::Config::small())
        };
        let p = Params {
            nranks: n,
            nports: 2,
            lane_bytes: if cfg!(miri) { 1 << 10 } else { 4 << 10 },
        };
        run_with(p, move |job| conformance::run_all(&job, &cfg)).unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "timing: a deadline is meaningless at Miri's speed")]
    fn a_panicking_rank_is_reported_lost() {
        let p = Params {
            nranks: 3,
            nports: 2,
            lane_bytes: 4 << 10,
        };
        let r = run_with(p, |job| {
            let mut s = conformance::Suite::new(&job, conformance::Config::small())?;
            // The victim's panic marks it lost at once; the bound is for a survivor
            // thread that a loaded 2-CPU machine does not schedule for a while (1 s
            // failed once beside other tests' jobs).
            conformance::peer_failure(&mut s, Duration::from_secs(5), || {
                panic!("rank dies on purpose")
            })
        });
        match r {
            Err(Error::Bootstrap(m)) => assert!(m.contains("rank 2 panicked"), "{m}"),
            other => panic!("expected only the victim's panic, got {other:?}"),
        }
    }

    #[test]
    fn a_panicking_receive_closure_still_completes_its_message() {
        let p = Params {
            nranks: 1,
            nports: 1,
            lane_bytes: 64,
        };
        let out = run_with(p, |job| {
            let ch = job.open(0)?;
            let msg = [7u8; 32];
            for _ in 0..3 {
                // The lane holds one such message: the next send finds room only if the
                // panicking closure's message was completed.
                ch.send(ch.addr(), &[IoSlice::new(&msg)])?;
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    ch.try_recv_with(|m| -> () { panic!("closure fails on {} bytes", m.len()) })
                }));
                assert!(r.is_err());
            }
            Ok(())
        });
        out.unwrap();
    }

    #[test]
    fn zero_length_messages_and_bad_parameters() {
        let out = run(2, |job| {
            let ch = job.open(0)?;
            ch.send_all(job.addr(1 - job.rank(), 0), &[])?;
            let m = ch.recv_timeout(Duration::from_secs(10))?;
            Ok(m.len())
        })
        .unwrap();
        assert_eq!(out, [0, 0]);
        for bad in [(0, 1, 4096), (1, 0, 4096), (1, 1, 32), (1, 1, 1001)] {
            let p = Params {
                nranks: bad.0,
                nports: bad.1,
                lane_bytes: bad.2,
            };
            assert!(matches!(job(p), Err(Error::InvalidArgument(_))), "{bad:?}");
        }
    }
}
