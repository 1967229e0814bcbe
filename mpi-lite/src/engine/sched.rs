//! Schedules: how a nonblocking collective (MPI-3.1 §5.12) runs inside the engine.
//!
//! A [`Sched`] is a list of rounds over a scratch buffer of packed bytes: each round posts
//! its receives and sends (ordinary engine requests on the communicator's collective
//! context) and, once all of them are complete, applies its local steps (reductions and
//! copies between ranges of the scratch); then the next round starts. After the last one
//! the results are written to the program's buffers and the collective's request
//! completes. The algorithms that build schedules are in `crate::nbc`.
//!
//! Progress: every waiting loop of the engine ([`Core::wait_until`], so `MPI_Wait`, a
//! blocking receive, another collective…) and every test ([`Core::progress`]) advances
//! the running schedules, and the wait's predicate wakes when a round's requests are all
//! complete — so a nonblocking collective progresses whatever call the program waits in,
//! and a waiting rank still serves its part of the others' schedules.

use std::sync::Arc;

use skifch::coll::Reducer;
use skifch::Port;

use super::state::{Req, ReqKind, Stash, Unex};
use super::{Core, Envelope, Mode, ReqId, State, Status, SENT};
use crate::ctxid::Lease;
use crate::error::{Error, Result};
use crate::mem::UserBuf;
use crate::op::Red;

/// Finished schedules kept for reuse (their step list, scratch and request list): a small
/// nonblocking collective then allocates nothing (the allocations and frees were ≈ 600 of
/// an `MPI_Ibarrier` + `MPI_Wait`'s ≈ 3100 instructions, callgrind).
const SPARE: usize = 4;
/// The largest scratch kept with a spare schedule (bytes).
const SPARE_SCRATCH: usize = 64 << 10;

/// A range of the scratch buffer: (offset, length) in bytes.
pub type Range = (usize, usize);

/// A local step after a round's transfers.
#[derive(Clone, Copy, Debug)]
pub enum Local {
    /// `dst = src ∘ dst` (`src_first`: `src` comes from lower ranks) or `dst = dst ∘ src`.
    Reduce {
        /// The operand that came in.
        src: Range,
        /// The accumulator.
        dst: Range,
        /// Order of the operands (matters for non-commutative operations).
        src_first: bool,
    },
    /// `dst = src` (same lengths).
    Copy {
        /// From.
        src: Range,
        /// To.
        dst: Range,
    },
    /// Step `0` of the schedule's [`Hook`].
    Call(u8),
}

/// Local steps of a schedule's own ([`Local::Call`]), e.g. a context agreement's
/// decisions; may send the schedule back to an earlier round.
pub trait Hook: Send {
    /// Runs step `which` over the scratch: `Some(i)` — go on from step `i` (the first of
    /// a round) instead of the next one.
    fn call(&mut self, which: u8, buf: &mut [u8]) -> Result<Option<usize>>;
}

/// One step of a schedule. A round is its transfers, then its local steps, then `Next`.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// Send a range of the scratch: (envelope, destination world rank, data).
    Send(Envelope, u32, Range),
    /// Receive into a range (its length must be the message's).
    Recv(Envelope, Range),
    /// A local step, once the round's transfers are complete.
    Op(Local),
    /// End of a round.
    Next,
}

/// A nonblocking collective's plan (see the module docs).
pub struct Sched {
    /// Scratch: inputs packed in at the start, results read out at the end.
    pub buf: Vec<u8>,
    /// The rounds, flat (one allocation for the whole schedule).
    steps: Vec<Step>,
    /// Next step to run.
    at: usize,
    /// The reduction of `Local::Reduce` steps.
    pub red: Option<Red>,
    /// At the end: each program buffer gets `buf[offset..]` (its packed length).
    pub out: Vec<(UserBuf, usize)>,
    /// The [`Local::Call`] steps' code.
    pub hook: Option<Box<dyn Hook>>,
    /// The communicator's context slots, held while the schedule runs (MPI-3.1 §6.4.3:
    /// it completes normally after `MPI_Comm_free`, and no new communicator takes them
    /// meanwhile).
    pub lease: Option<Arc<Lease>>,
}

impl Sched {
    /// An empty schedule over a zeroed scratch of `len` bytes (boxed: a schedule is moved
    /// between the plan, the engine's list of running ones and the spares).
    pub fn new(len: usize) -> Box<Self> {
        Box::new(Sched {
            buf: vec![0; len],
            steps: Vec::with_capacity(8),
            at: 0,
            red: None,
            out: Vec::new(),
            hook: None,
            lease: None,
        })
    }

    /// Sets the scratch to `len` zeroed bytes (reusing its storage).
    pub fn set_scratch(&mut self, len: usize) {
        self.buf.clear();
        self.buf.resize(len, 0);
    }

    /// Empties a finished schedule for reuse, keeping its storage; `false` when its scratch
    /// is too large to keep.
    fn clear(&mut self) -> bool {
        self.steps.clear();
        self.at = 0;
        self.red = None;
        self.out.clear();
        self.hook = None;
        self.lease = None;
        self.buf.clear();
        self.buf.capacity() <= SPARE_SCRATCH
    }

    /// Appends a step (rounds end with [`Step::Next`]; transfers before local steps).
    pub fn push(&mut self, s: Step) {
        self.steps.push(s);
    }

    /// The index the next pushed step gets (for a [`Hook`]'s jumps).
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether no step is pushed yet.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Applies local step `op`: `Some(i)` — a hook sends the schedule on from step `i`.
    fn apply(&mut self, op: Local) -> Result<Option<usize>> {
        let sl = |r: Range| r.0..r.0 + r.1;
        match op {
            Local::Call(which) => {
                let h = self
                    .hook
                    .as_mut()
                    .ok_or_else(|| Error::Intern("schedule calls without a hook".into()))?;
                return h.call(which, &mut self.buf);
            }
            Local::Copy { src, dst } => self.buf.copy_within(sl(src), dst.0),
            Local::Reduce {
                src,
                dst,
                src_first,
            } => {
                let red = self
                    .red
                    .as_ref()
                    .ok_or_else(|| Error::Intern("schedule reduces without an operation".into()))?;
                let disjoint = src.0 + src.1 <= dst.0 || dst.0 + dst.1 <= src.0;
                if disjoint && (src_first || red.commutes()) {
                    // Disjoint ranges (every schedule's), operands in an order that does
                    // not matter or is the kernel's (`dst = src ∘ dst`): no copy.
                    let (a, b) = if src.0 < dst.0 {
                        let (lo, hi) = self.buf.split_at_mut(dst.0);
                        (&lo[sl(src)], &mut hi[..dst.1])
                    } else {
                        let (lo, hi) = self.buf.split_at_mut(src.0);
                        (&hi[..src.1], &mut lo[sl(dst)])
                    };
                    red.apply(a, b);
                } else {
                    let a = self.buf[sl(src)].to_vec();
                    let mut b = self.buf[sl(dst)].to_vec();
                    if src_first {
                        red.apply(&a, &mut b);
                    } else {
                        let mut t = a;
                        red.apply(&b, &mut t);
                        b = t;
                    }
                    self.buf[sl(dst)].copy_from_slice(&b);
                }
            }
        }
        Ok(None)
    }
}

fn size_mismatch(got: usize, want: usize) -> Error {
    Error::Arg(format!(
        "collective arguments do not match: {got} bytes came where {want} were expected"
    ))
}

/// A schedule being run: its request and the current round's requests.
pub(super) struct Running {
    req: ReqId,
    sched: Box<Sched>,
    /// The current round's requests (receives with their range of the scratch).
    pending: Vec<(ReqId, Option<Range>)>,
}

impl Running {
    fn round_done(&self, s: &State) -> bool {
        self.pending.iter().all(|r| s.is_done(r.0))
    }
}

impl State {
    /// The payload of the earliest unexpected message matching `env` if it is a plain
    /// eager one (no rendezvous, no acknowledgement owed), taken out of the queue.
    fn take_eager(&mut self, env: Envelope) -> Option<Stash> {
        let key = self.find_unexpected(env)?;
        let q = self.unex.get_mut(&key)?;
        if !matches!(q.front(), Some((_, Unex::Eager { ack: None, .. }))) {
            return None;
        }
        let (_, u) = q.pop_front()?;
        self.unex_n -= 1;
        match u {
            Unex::Eager { data, .. } => Some(data),
            Unex::Rts { .. } => None,
        }
    }

    /// Whether some running schedule can take a step (its round is complete).
    pub(super) fn coll_ready(&self) -> bool {
        self.colls.iter().any(|r| r.round_done(self))
    }
}

/// A schedule and request list of a finished collective, for reuse ([`SPARE`]).
pub(super) struct Spare {
    sched: Box<Sched>,
    pending: Vec<(ReqId, Option<Range>)>,
}

impl State {
    /// An empty schedule over `len` zeroed bytes, reusing a finished one's storage.
    pub(super) fn new_sched(&mut self, len: usize) -> Box<Sched> {
        match self.spare.pop() {
            Some(mut sp) => {
                sp.sched.set_scratch(len);
                self.spare_pending.push(sp.pending);
                sp.sched
            }
            None => Sched::new(len),
        }
    }

    /// Keeps finished schedule `run`'s storage for a later one (see [`SPARE`]).
    fn recycle(&mut self, mut run: Running) {
        run.pending.clear();
        if self.spare.len() < SPARE && run.sched.clear() {
            self.spare.push(Spare {
                sched: run.sched,
                pending: run.pending,
            });
        }
    }
}

impl<P: Port> Core<P> {
    /// Starts schedule `sched`: its request (complete when the schedule is done).
    pub fn start_sched(&mut self, sched: Box<Sched>) -> Result<ReqId> {
        self.check()?;
        let s = self.st_mut();
        let seq = s.next_seq();
        let req = s.alloc(Req {
            kind: ReqKind::Nothing,
            done: false,
            freed: false,
            status: Status::default(),
            err: None,
            seq,
        });
        let pending = s.spare_pending.pop().unwrap_or_default();
        let mut run = Running {
            req,
            sched,
            pending,
        };
        if self.step(&mut run)? {
            self.st_mut().recycle(run);
        } else {
            self.st_mut().colls.push(run);
        }
        Ok(req)
    }

    /// Advances every running schedule as far as it can go now; `true` if one moved.
    pub(super) fn advance_colls(&mut self) -> Result<bool> {
        if !self.st().coll_ready() {
            return Ok(false);
        }
        let mut runs = std::mem::take(&mut self.st_mut().colls);
        let mut moved = false;
        let mut i = 0;
        let mut res = Ok(());
        while i < runs.len() {
            if !runs[i].round_done(self.st()) {
                i += 1;
                continue;
            }
            moved = true;
            match self.step(&mut runs[i]) {
                Ok(true) => {
                    let done = runs.swap_remove(i);
                    self.st_mut().recycle(done);
                }
                Ok(false) => i += 1,
                Err(e) => {
                    res = Err(e);
                    break;
                }
            }
        }
        // Schedules started meanwhile (none today) stay after the older ones.
        let s = self.st_mut();
        runs.append(&mut s.colls);
        s.colls = runs;
        res.map(|_| moved)
    }

    /// Runs `run` from a complete round as far as it goes: `true` when finished (its
    /// request completed, with the error of a failed transfer if any).
    fn step(&mut self, run: &mut Running) -> Result<bool> {
        loop {
            if !run.round_done(self.st()) {
                return Ok(false);
            }
            if let Err(e) = self.collect(run) {
                self.end(run, Some(e));
                return Ok(true);
            }
            // The finished round's local steps, then its end (or a hook's jump).
            let mut jump = None;
            while let Some(&Step::Op(op)) = run.sched.steps.get(run.sched.at) {
                run.sched.at += 1;
                match run.sched.apply(op) {
                    Ok(None) => {}
                    Ok(Some(to)) => {
                        jump = Some(to);
                        break;
                    }
                    Err(e) => {
                        self.end(run, Some(e));
                        return Ok(true);
                    }
                }
            }
            if let Some(to) = jump {
                run.sched.at = to;
            } else if let Some(Step::Next) = run.sched.steps.get(run.sched.at) {
                run.sched.at += 1;
            }
            if run.sched.at >= run.sched.steps.len() {
                self.end(run, None);
                return Ok(true);
            }
            // The next round's transfers.
            while let Some(&st) = run.sched.steps.get(run.sched.at) {
                match st {
                    Step::Recv(env, r) => {
                        // Arrived already (eager): straight into the scratch, no request.
                        if let Some(d) = self.st_mut().take_eager(env) {
                            if d.len() != r.1 {
                                self.abandon(run);
                                self.end(run, Some(size_mismatch(d.len(), r.1)));
                                return Ok(true);
                            }
                            run.sched.buf[r.0..r.0 + r.1].copy_from_slice(d.as_slice());
                        } else {
                            // Straight into the scratch (no buffer of its own to allocate,
                            // copy and free). The scratch is a heap block that never
                            // grows, so it stays put while `run` moves, and it outlives
                            // the receive: a schedule ends only with its round's requests
                            // released (`collect`) or unposted (`abandon`).
                            let at = run.sched.buf[r.0..r.0 + r.1].as_mut_ptr();
                            #[allow(unsafe_code)] // a receive lent a range of the scratch
                            // SAFETY: the `r.1` bytes at `at` are the scratch's, written only
                            // through this receive until `collect` or `abandon` (above).
                            let b = unsafe { UserBuf::bytes(at, r.1) };
                            let id = self.irecv(env, b)?;
                            run.pending.push((id, Some(r)));
                        }
                    }
                    Step::Send(env, dst, r) => {
                        let data = &run.sched.buf[r.0..r.0 + r.1];
                        // Small: one eager message, no request (as the blocking collectives).
                        if !self.try_send_eager(env, dst, data)? {
                            let b = UserBuf::owned(data.to_vec());
                            let id = self.isend(env, dst, b, Mode::Standard, 0)?;
                            if id != SENT {
                                run.pending.push((id, None));
                            }
                        }
                    }
                    Step::Op(_) | Step::Next => break,
                }
                run.sched.at += 1;
            }
        }
    }

    /// Releases the complete round's requests (their data is in the scratch already).
    fn collect(&mut self, run: &mut Running) -> Result<()> {
        let mut first = None;
        let s = self.st_mut();
        for (id, range) in run.pending.drain(..) {
            let got = s.finish(id);
            let r = match (got, range) {
                (Err(e), _) => Err(e),
                (Ok(st), Some((_, len))) if st.bytes != len => Err(size_mismatch(st.bytes, len)),
                (Ok(_), _) => Ok(()),
            };
            if let Err(e) = r {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Gives up the round's pending requests of a schedule that ends early (a size
    /// mismatch): its receives into the scratch are unposted; one already matched (its
    /// rendezvous data under way, an erroneous program) keeps the scratch, which is then
    /// leaked rather than freed under it.
    fn abandon(&mut self, run: &mut Running) {
        let mut live = false;
        for (id, range) in run.pending.drain(..) {
            if range.is_some() {
                let _ = self.cancel(id);
            }
            let s = self.st_mut();
            if s.is_done(id) {
                let _ = s.finish(id);
            } else {
                live |= range.is_some();
                let _ = self.request_free(id);
            }
        }
        if live {
            std::mem::forget(std::mem::take(&mut run.sched.buf));
        }
    }

    /// Finishes `run`: results out (on success), its request complete.
    fn end(&mut self, run: &mut Running, err: Option<Error>) {
        if err.is_none() {
            for (ub, off) in &mut run.sched.out {
                let n = ub.packed_len();
                ub.write_packed(0, &run.sched.buf[*off..*off + n]);
            }
        }
        let s = self.st_mut();
        if let Some(r) = s.get_mut(run.req) {
            r.err = err.map(Box::new);
            r.status = Status::proc_null();
        }
        s.complete(run.req);
    }
}
