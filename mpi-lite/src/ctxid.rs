//! Context ids (MPI-3.1 §6.1.2): which ones this process has free, and how the members of
//! a new communicator agree on ids free at all of them.
//!
//! Ids are even, `ctx + 1` being the communicator's collective context; slot `s` is ids
//! `2s` and `2s + 1`. Each process keeps a bit per slot (`1`: free). An agreement
//! ([`Agreement`]) runs attempts of two all-reduce rounds among the members, without any
//! lock held across them (so nonblocking `MPI_Comm_idup`s and threads creating
//! communicators at once never wait on each other):
//! 1. **offer**: each member contributes a snapshot of one chunk of its free bits; the
//!    bitwise AND names the slots free everywhere. Every member picks the same candidate
//!    from it (a hash of the agreement's key and the attempt spreads concurrent agreements
//!    over different candidates) and claims it, if it is still free here;
//! 2. **claim**: the AND of the members' claimed flags. All claimed: the slot is the
//!    communicator's ([`Lease`], released when the last communicator using it goes).
//!    Else each member gives its claim back and the agreement tries again.
//!
//! A chunk with no slot free at every member moves the agreement to the next chunk; past
//! the last one the process is out of ids ([`Error::Intern`]). Freed communicators give
//! their slots back, so a program may create and free communicators without bound.

use std::sync::{Arc, Mutex};

use skifch::coll::Op;
use skifch::Port;

use crate::comm::{CommData, Mpi};
use crate::datatype::{Basic, Datatype};
use crate::engine::{Envelope, Hook, Local, Range, ReqId, Step};
use crate::error::{Error, Result};
use crate::nbc::Plan;
use crate::op::{reducer, ReduceOp};

/// Slots: every even `u16` context id.
const SLOTS: usize = 1 << 15;
/// 64-bit words of free bits an attempt offers (2048 slots, the size of MPICH's mask).
pub(crate) const CHUNK_WORDS: usize = 32;
const CHUNKS: usize = SLOTS / 64 / CHUNK_WORDS;

/// This process's free context slots.
#[derive(Debug)]
pub struct Pool {
    free: Mutex<Vec<u64>>,
}

impl Pool {
    /// All slots free but `0` and `1` (`MPI_COMM_WORLD`'s ids 0–1, `MPI_COMM_SELF`'s 2–3).
    pub fn new() -> Arc<Self> {
        let mut free = vec![!0u64; SLOTS / 64];
        free[0] &= !0b11;
        Arc::new(Pool {
            free: Mutex::new(free),
        })
    }

    fn words(&self) -> std::sync::MutexGuard<'_, Vec<u64>> {
        self.free.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `n` slots from `first` are all free: if so they are taken.
    fn claim(&self, first: usize, n: usize) -> bool {
        let mut w = self.words();
        let bit = |s: usize| (s / 64, 1u64 << (s % 64));
        if !(first..first + n).all(|s| {
            let (i, b) = bit(s);
            w[i] & b != 0
        }) {
            return false;
        }
        for s in first..first + n {
            let (i, b) = bit(s);
            w[i] &= !b;
        }
        true
    }

    fn release(&self, first: usize, n: usize) {
        let mut w = self.words();
        for s in first..first + n {
            w[s / 64] |= 1u64 << (s % 64);
        }
    }

    /// Free slots now (for tests and diagnostics).
    pub fn free_count(&self) -> usize {
        self.words().iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// Slots a communicator holds (its contexts), given back to the pool when dropped.
#[derive(Debug)]
pub struct Lease {
    pool: Arc<Pool>,
    first: usize,
    n: usize,
}

impl Lease {
    /// The first context id (`2 × first slot`).
    pub fn ctx(&self) -> u16 {
        (self.first * 2) as u16
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.pool.release(self.first, self.n);
    }
}

/// One agreement on `n` consecutive slots (see the module docs), as a member runs it:
/// [`Agreement::offer`], the AND over the members, [`Agreement::pick`], the AND of the
/// flags, [`Agreement::settle`]; again from the offer until a lease comes out.
#[derive(Debug)]
pub struct Agreement {
    pool: Arc<Pool>,
    n: usize,
    /// The same at every member (the parent's context and the call's tag).
    key: u64,
    chunk: usize,
    attempt: u64,
    /// Slot this member claimed in the current attempt.
    claimed: Option<usize>,
}

impl Agreement {
    /// An agreement on `n` slots (1 for an intracommunicator, 2 for an intercommunicator
    /// and its local communicator) identified by `key` (equal at every member, different
    /// for agreements that may run at once).
    pub fn new(pool: &Arc<Pool>, n: usize, key: u64) -> Self {
        Agreement {
            pool: pool.clone(),
            n,
            key,
            chunk: 0,
            attempt: 0,
            claimed: None,
        }
    }

    /// This member's free bits of the current chunk (a snapshot; nothing is reserved).
    pub fn offer(&self) -> [u64; CHUNK_WORDS] {
        let w = self.pool.words();
        let mut out = [0u64; CHUNK_WORDS];
        out.copy_from_slice(&w[self.chunk * CHUNK_WORDS..(self.chunk + 1) * CHUNK_WORDS]);
        out
    }

    /// From the AND of every member's offer: `Some(claimed)` — a candidate was found and
    /// this member could (or could not) claim it; `None` — no candidate in this chunk, the
    /// agreement moves to the next one (offer again). Errs when no chunk is left.
    pub fn pick(&mut self, and: &[u64; CHUNK_WORDS]) -> Result<Option<bool>> {
        let bit = |s: usize| and[s / 64] >> (s % 64) & 1 != 0;
        let span = CHUNK_WORDS * 64;
        // Runs of n free slots (the first 64: low ids are preferred).
        let mut cands = Vec::new();
        let mut s = 0;
        while s + self.n <= span && cands.len() < 64 {
            if and[s / 64] == 0 && s % 64 == 0 {
                s += 64;
                continue;
            }
            if (s..s + self.n).all(bit) {
                cands.push(s);
            }
            s += 1;
        }
        if cands.is_empty() {
            self.chunk += 1;
            if self.chunk == CHUNKS {
                return Err(Error::Intern(format!(
                    "out of communicator context ids: no {} free at every member ({} \
                     communicators exist in this process; free some with MPI_Comm_free)",
                    if self.n == 1 { "id is" } else { "ids are" },
                    SLOTS - self.pool.free_count()
                )));
            }
            return Ok(None);
        }
        let pick = cands[(mix(self.key, self.attempt) % cands.len() as u64) as usize];
        let first = self.chunk * span + pick;
        let got = self.pool.claim(first, self.n);
        if got {
            self.claimed = Some(first);
        }
        Ok(Some(got))
    }

    /// From the AND of the members' claimed flags: the lease when all claimed; else the
    /// claim is given back and the agreement goes on (offer again).
    pub fn settle(&mut self, all: bool) -> Option<Lease> {
        let first = self.claimed.take();
        match first {
            Some(first) if all => Some(Lease {
                pool: self.pool.clone(),
                first,
                n: self.n,
            }),
            _ => {
                if let Some(f) = first {
                    self.pool.release(f, self.n);
                }
                self.attempt += 1;
                None
            }
        }
    }
}

impl Drop for Agreement {
    /// An agreement abandoned (a failed peer) gives its claim back.
    fn drop(&mut self) {
        if let Some(f) = self.claimed.take() {
            self.pool.release(f, self.n);
        }
    }
}

/// splitmix64 of the key and the attempt: concurrent agreements (different keys) take
/// different candidates, and a clash is not repeated in the next attempt.
fn mix(key: u64, attempt: u64) -> u64 {
    let mut z = key
        .wrapping_add(attempt.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What gets a new communicator's lease once its members agree.
pub type Deliver = Box<dyn FnOnce(Lease) + Send>;

// An agreement schedule's scratch: the AND of the offers and a receive area, the AND of
// the claimed flags and a receive area.
const MASK: Range = (0, CHUNK_WORDS * 8);
const MASK_IN: Range = (CHUNK_WORDS * 8, CHUNK_WORDS * 8);
const FLAG: Range = (2 * CHUNK_WORDS * 8, 8);
const FLAG_IN: Range = (2 * CHUNK_WORDS * 8 + 8, 8);
const SCRATCH: usize = 2 * CHUNK_WORDS * 8 + 16;
// Its hook's steps.
const OFFER: u8 = 0;
const PICK: u8 = 1;
const SETTLE: u8 = 2;

/// An agreement run by a schedule (nonblocking: `MPI_Comm_idup`; blocking calls wait on it).
struct Run {
    a: Agreement,
    deliver: Option<Deliver>,
}

impl Hook for Run {
    fn call(&mut self, which: u8, buf: &mut [u8]) -> Result<Option<usize>> {
        match which {
            OFFER => {
                let o = self.a.offer();
                for (d, w) in buf[MASK.0..MASK.0 + MASK.1].chunks_exact_mut(8).zip(o) {
                    d.copy_from_slice(&w.to_le_bytes());
                }
                Ok(None)
            }
            PICK => {
                let mut and = [0u64; CHUNK_WORDS];
                for (w, b) in and
                    .iter_mut()
                    .zip(buf[MASK.0..MASK.0 + MASK.1].chunks_exact(8))
                {
                    *w = u64::from_le_bytes(b.try_into().unwrap_or_default());
                }
                match self.a.pick(&and)? {
                    None => Ok(Some(0)),
                    Some(got) => {
                        let f = if got { !0u64 } else { 0 };
                        buf[FLAG.0..FLAG.0 + 8].copy_from_slice(&f.to_le_bytes());
                        Ok(None)
                    }
                }
            }
            _ => {
                let all = buf[FLAG.0..FLAG.0 + 8].iter().all(|&b| b == 0xff);
                match self.a.settle(all) {
                    Some(l) => {
                        if let Some(d) = self.deliver.take() {
                            d(l);
                        }
                        Ok(None)
                    }
                    None => Ok(Some(0)),
                }
            }
        }
    }
}

/// The key of an agreement on communicator context `ctx` with tag `tag`.
fn key(ctx: u16, tag: i32) -> u64 {
    (u64::from(ctx) << 32) | u64::from(tag as u32)
}

/// Who agrees: `members` (ranks in `local`, this process's among them) and, for an
/// intercommunicator's contexts, the other group through the leaders.
pub(crate) struct Parties<'a> {
    /// The communicator of this group's exchanges (on its collective context).
    pub local: &'a CommData,
    /// This group's members, as ranks in `local`.
    pub members: Vec<usize>,
    /// Two groups: at this group's leader, its link to the other leader (the envelope
    /// it sends with and the world rank it sends to, the envelope it receives); `None`
    /// at the other members. `two` is then set at every member of both groups.
    pub bridge: Option<(Envelope, u32, Envelope)>,
    /// Whether the other group takes part.
    pub two: bool,
}

impl<'a> Parties<'a> {
    /// Every member of the intracommunicator `c`.
    pub(crate) fn all(c: &'a CommData) -> Self {
        Parties {
            local: c,
            members: (0..c.size()).collect(),
            bridge: None,
            two: false,
        }
    }
}

impl<P: Port> Mpi<P> {
    /// Starts the agreement of `who` on `n` consecutive context slots, as the rounds of
    /// schedule `p` (its tag; its communicator names the agreement with the tag: `key`
    /// overrides that, equal in both groups); `deliver` gets the slots when all agree
    /// (before the returned request completes).
    ///
    /// # Collective Operation
    /// Every party; nonblocking (the schedule runs in the engine).
    pub(crate) fn start_agreement(
        &self,
        mut p: Plan<'_>,
        who: Parties<'_>,
        n: usize,
        key_of: Option<u64>,
        deliver: Deliver,
    ) -> Result<ReqId> {
        let (c, members) = (who.local, &who.members);
        let me = members
            .iter()
            .position(|&r| r == c.rank)
            .ok_or_else(|| Error::Intern("context agreement without this process".into()))?;
        p.s.set_scratch(SCRATCH);
        p.s.red = Some(reducer(
            Datatype::basic_ref(Basic::Uint64),
            &ReduceOp::Predefined(Op::Band),
        )?);
        let run = Run {
            a: Agreement::new(&self.ctxs, n, key_of.unwrap_or(key(p.c.ctx(), p.tag))),
            deliver: Some(deliver),
        };
        p.s.hook = Some(Box::new(run));
        let tag = p.tag;
        let s = &mut p.s;
        // Dissemination: after the rounds, `acc` is the AND over this group (the
        // operation is idempotent, so overlapping contributions do no harm). Two groups:
        // then the leaders AND theirs, and a second pass in each group spreads the
        // leader's (a subset of every member's).
        let and_rounds = |s: &mut crate::engine::Sched, acc: Range, inc: Range| {
            let m = members.len();
            let mut d = 1;
            while d < m {
                let (to, from) = (members[(me + d) % m], members[(me + m - d) % m]);
                s.push(Step::Recv(c.coll_env(from as i32, tag), inc));
                s.push(Step::Send(
                    c.coll_env(c.rank as i32, tag),
                    c.world_of(to),
                    acc,
                ));
                s.push(Step::Op(Local::Reduce {
                    src: inc,
                    dst: acc,
                    src_first: true,
                }));
                s.push(Step::Next);
                d *= 2;
            }
        };
        let all_rounds = |s: &mut crate::engine::Sched, acc: Range, inc: Range| {
            and_rounds(s, acc, inc);
            if !who.two {
                return;
            }
            if let Some((out, dst, from)) = who.bridge {
                s.push(Step::Recv(from, inc));
                s.push(Step::Send(out, dst, acc));
                s.push(Step::Op(Local::Reduce {
                    src: inc,
                    dst: acc,
                    src_first: true,
                }));
                s.push(Step::Next);
            }
            and_rounds(s, acc, inc);
        };
        s.push(Step::Op(Local::Call(OFFER)));
        s.push(Step::Next);
        all_rounds(s, MASK, MASK_IN);
        s.push(Step::Op(Local::Call(PICK)));
        s.push(Step::Next);
        all_rounds(s, FLAG, FLAG_IN);
        s.push(Step::Op(Local::Call(SETTLE)));
        s.push(Step::Next);
        self.start(p)
    }

    /// [`Mpi::start_agreement`] run to its end: the slots.
    pub(crate) fn agree_with(
        &self,
        p: Plan<'_>,
        who: Parties<'_>,
        n: usize,
        key_of: Option<u64>,
    ) -> Result<Arc<Lease>> {
        let cell = Arc::new(Mutex::new(None));
        let put = cell.clone();
        let deliver: Deliver = Box::new(move |l| {
            *put.lock().unwrap_or_else(|p| p.into_inner()) = Some(l);
        });
        let req = self.start_agreement(p, who, n, key_of, deliver)?;
        self.engine().wait(req)?;
        let l = cell.lock().unwrap_or_else(|p| p.into_inner()).take();
        l.map(Arc::new)
            .ok_or_else(|| Error::Intern("context agreement ended without a context".into()))
    }

    /// A fresh context for a new intracommunicator among all of `c` (collective).
    pub(crate) fn agree(&self, c: &CommData) -> Result<Arc<Lease>> {
        self.agree_with(self.plan(c, 0), Parties::all(c), 1, None)
    }

    /// A fresh context among `members` of `c` only, with an exchange tag of their own
    /// (`MPI_Comm_create_group`: not a collective of all of `c`, whose counter stays).
    pub(crate) fn agree_among(
        &self,
        c: &CommData,
        members: Vec<usize>,
        tag: i32,
    ) -> Result<Arc<Lease>> {
        let p = Plan {
            c,
            tag,
            s: self.engine().new_sched(0),
        };
        let who = Parties {
            local: c,
            members,
            bridge: None,
            two: false,
        };
        self.agree_with(p, who, 1, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs an agreement among `pools` to its end (every member in lock step).
    fn agree(pools: &[Arc<Pool>], n: usize, key: u64) -> Result<Vec<Lease>> {
        let mut a: Vec<Agreement> = pools.iter().map(|p| Agreement::new(p, n, key)).collect();
        loop {
            let mut and = [!0u64; CHUNK_WORDS];
            for m in &a {
                for (x, o) in and.iter_mut().zip(m.offer()) {
                    *x &= o;
                }
            }
            let mut flags = Vec::new();
            for m in &mut a {
                flags.push(m.pick(&and)?);
            }
            if flags[0].is_none() {
                continue;
            }
            let all = flags.iter().all(|f| *f == Some(true));
            let leases: Vec<_> = a.iter_mut().filter_map(|m| m.settle(all)).collect();
            if all {
                return Ok(leases);
            }
        }
    }

    #[test]
    fn ids_are_common_free_and_reused() {
        let p: Vec<_> = (0..3).map(|_| Pool::new()).collect();
        let l1 = agree(&p, 1, 7).unwrap();
        let ctx = l1[0].ctx();
        assert!(ctx >= 4 && ctx.is_multiple_of(2));
        assert!(l1.iter().all(|l| l.ctx() == ctx));
        // Taken at member 0 only: the next agreement avoids it.
        let only0 = agree(&p[..1], 1, 8).unwrap();
        let l2 = agree(&p, 1, 9).unwrap();
        assert!(l2[0].ctx() != ctx && l2[0].ctx() != only0[0].ctx());
        let before = p[1].free_count();
        drop(l1);
        assert_eq!(p[1].free_count(), before + 1);
    }

    #[test]
    fn thousands_of_create_free_cycles_never_run_out() {
        let p: Vec<_> = (0..2).map(|_| Pool::new()).collect();
        for k in 0..40_000u64 {
            let l = agree(&p, 1, k).unwrap();
            drop(l);
        }
        assert_eq!(p[0].free_count(), SLOTS - 2);
    }

    #[test]
    fn exhaustion_is_an_error_naming_the_cause() {
        let p = vec![Pool::new()];
        let mut keep = Vec::new();
        let e = loop {
            match agree(&p, 1, keep.len() as u64) {
                Ok(mut l) => keep.push(l.pop().unwrap()),
                Err(e) => break e,
            }
        };
        assert_eq!(keep.len(), SLOTS - 2);
        assert!(e.to_string().contains("MPI_Comm_free"), "{e}");
    }

    #[test]
    fn two_slots_are_consecutive_and_a_lost_claim_retries() {
        let p: Vec<_> = (0..2).map(|_| Pool::new()).collect();
        let l = agree(&p, 2, 3).unwrap();
        assert_eq!(p[0].free_count(), SLOTS - 4);
        // A member whose candidate went meanwhile makes everyone try again.
        let mut a: Vec<_> = p.iter().map(|q| Agreement::new(q, 1, 5)).collect();
        let mut and = a[0].offer();
        for (x, o) in and.iter_mut().zip(a[1].offer()) {
            *x &= o;
        }
        let got0 = a[0].pick(&and).unwrap();
        assert_eq!(got0, Some(true));
        let s = a[0].claimed.unwrap();
        // Member 1's copy of that slot is taken by another agreement first.
        assert!(p[1].claim(s, 1));
        assert_eq!(a[1].pick(&and).unwrap(), Some(false));
        assert!(a[0].settle(false).is_none() && a[1].settle(false).is_none());
        assert!(p[0].claim(s, 1), "member 0 gave its claim back");
        drop(l);
    }
}
