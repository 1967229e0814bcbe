//! Non-blocking collectives (`gex_Coll_BroadcastNB`, `ReduceToOneNB`, `ReduceToAllNB`, and
//! `gex_Coll_BarrierNB` on a split team): each call builds a short schedule — sends,
//! receives and folds over a scratch buffer — that runs as far as it can at once and is
//! then advanced by every poll of this rank (`gasnet_AMPoll`, `GASNET_BLOCKUNTIL`, an
//! event's test or wait, the split-phase barrier's wait). The returned event completes when
//! this rank's part is done: its result is in the destination and what it forwards to
//! others is sent.
//!
//! # Collective Operation
//! Every member of the team calls the team's collectives in the same order; each takes
//! the team's next sequence number, so several may run at once. A member that has not yet
//! entered a collective keeps what arrives for it until it does. The source is copied at
//! the call; the destination belongs to the library until the event completes.
//!
//! Algorithms (⌈log₂ n⌉ rounds): a binomial broadcast from the root; reductions in rank
//! order (so `GEX_OP_USER_NC` is right): `ReduceToAll` by recursive doubling when the
//! team's size is a power of two, else — and `ReduceToOne` — a binomial reduction toward
//! team rank 0, then to the root or broadcast back; the barrier by dissemination.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use skifch::coll::{ProtoGroup, Reducer};
use skifch::proto::Endpoint;
use skifch::Port;

use crate::am::Ctx;
use crate::coll::Team;
use crate::engine::Gasnet;
use crate::{Error, Result};

/// A range of a schedule's scratch: (offset, length).
type Range = (usize, usize);

/// Tags of one collective's messages: the collective layer's tags from 2³¹ up are the
/// schedules' (below are its blocking algorithms'): 23 bits of the team's sequence
/// number, then the step's kind.
const TAG_NB: u32 = 1 << 31;
const TAG_BCAST: u32 = 0;
const TAG_UP: u32 = 0x10; // + round: a child's partial reduction
const TAG_ROOT: u32 = 0x40; // the reduction's result, team rank 0 -> the root
const TAG_BAR: u32 = 0x50; // + round: dissemination

/// One step of a schedule (members are team ranks).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Step {
    /// Send a range of the scratch.
    Send { to: u32, tag: u32, from: Range },
    /// Wait for the message of `tag` from a member, into a range (its length must be the
    /// message's).
    Recv { from: u32, tag: u32, into: Range },
    /// `acc = acc ∘ src`, or `acc = src ∘ acc` when `src_first` (src came from lower
    /// ranks); acc lies below src in the scratch.
    Fold {
        src: Range,
        acc: Range,
        src_first: bool,
    },
}

/// What a finished schedule hands to the caller: the result's bytes.
pub type Deliver = Box<dyn FnOnce(&[u8]) + Send>;

/// One collective in progress (this rank's side).
pub(crate) struct NbColl {
    group: ProtoGroup,
    /// The team's sequence number, in the tags.
    seq: u32,
    steps: Vec<Step>,
    pc: usize,
    buf: Vec<u8>,
    red: Option<Box<dyn Reducer + Send>>,
    out: Range,
    deliver: Option<Deliver>,
}

/// Finished schedules' step lists and scratch kept for reuse (a small collective then
/// allocates neither), and the largest scratch kept.
const SPARE: usize = 4;
const SPARE_SCRATCH: usize = 64 << 10;

/// A schedule's step list and scratch.
pub(crate) type Parts = (Vec<Step>, Vec<u8>);

/// The running schedules, spare parts, and the groups of the teams used last (a
/// collective on one of them builds no member list).
#[derive(Default)]
struct Slots {
    run: Vec<Option<NbColl>>,
    spare: Vec<Parts>,
    groups: Vec<ProtoGroup>,
}

impl Slots {
    fn recycle(&mut self, c: NbColl) {
        if self.spare.len() < SPARE && c.buf.capacity() <= SPARE_SCRATCH {
            self.spare.push((c.steps, c.buf));
        }
        if self.groups.len() < SPARE && self.groups.iter().all(|g| g.gid() != c.group.gid()) {
            self.groups.push(c.group);
        }
    }
}

/// The running schedules of a rank, advanced by its polls.
#[derive(Default)]
pub struct Running {
    slots: Mutex<Slots>,
    /// Schedules not finished (lets a poll skip the lock when there are none).
    active: AtomicUsize,
}

/// Binomial broadcast from `root` of `r` (a range of the scratch), for team rank `me` of `n`.
fn bcast_steps(steps: &mut Vec<Step>, me: u32, n: u32, root: u32, r: Range) {
    let vr = (me + n - root) % n;
    let real = |v: u32| (v + root) % n;
    let mut mask = 1u32;
    while mask < n {
        if vr & mask != 0 {
            steps.push(Step::Recv {
                from: real(vr - mask),
                tag: TAG_BCAST,
                into: r,
            });
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if vr + mask < n {
            steps.push(Step::Send {
                to: real(vr + mask),
                tag: TAG_BCAST,
                from: r,
            });
        }
        mask >>= 1;
    }
}

/// Binomial reduction toward team rank 0 in rank order: `acc` holds this rank's data and,
/// at rank 0 after the steps, the whole result; `tmp` receives the children's parts.
fn reduce_steps(steps: &mut Vec<Step>, me: u32, n: u32, acc: Range, tmp: Range) {
    let mut k = 0;
    while (1u32 << k) < n {
        let mask = 1u32 << k;
        if me & mask != 0 {
            steps.push(Step::Send {
                to: me - mask,
                tag: TAG_UP + k,
                from: acc,
            });
            return;
        }
        if me + mask < n {
            steps.push(Step::Recv {
                from: me + mask,
                tag: TAG_UP + k,
                into: tmp,
            });
            steps.push(Step::Fold {
                src: tmp,
                acc,
                src_first: false,
            });
        }
        k += 1;
    }
}

/// Recursive doubling for a power-of-two `n`: in round k, exchange with `me ^ 2^k` and
/// fold in rank order (the lower block first); every member ends with the whole result
/// in `acc`, in ⌈log₂ n⌉ rounds instead of a reduction's and a broadcast's.
fn allreduce_steps(steps: &mut Vec<Step>, me: u32, n: u32, acc: Range, tmp: Range) {
    let mut k = 0;
    while (1u32 << k) < n {
        let peer = me ^ (1 << k);
        steps.push(Step::Send {
            to: peer,
            tag: TAG_UP + k,
            from: acc,
        });
        steps.push(Step::Recv {
            from: peer,
            tag: TAG_UP + k,
            into: tmp,
        });
        steps.push(Step::Fold {
            src: tmp,
            acc,
            src_first: peer < me,
        });
        k += 1;
    }
}

/// What a new schedule starts from ([`Gasnet::nbc_begin`]): its team's group and
/// sequence number, this member's rank and the team's size, an empty step list and
/// scratch.
pub(crate) struct Begin {
    group: ProtoGroup,
    seq: u32,
    me: u32,
    n: u32,
    steps: Vec<Step>,
    buf: Vec<u8>,
}

impl NbColl {
    fn new(b: Begin, steps: Vec<Step>, buf: Vec<u8>, out: Range) -> Self {
        NbColl {
            group: b.group,
            seq: b.seq,
            steps,
            pc: 0,
            buf,
            red: None,
            out,
            deliver: None,
        }
    }

    /// Broadcast of `nbytes` from team rank `root`: `src` is the root's data (`None`
    /// elsewhere); `deliver` gets the bytes at every member.
    pub(crate) fn bcast(
        mut b: Begin,
        root: u32,
        src: Option<&[u8]>,
        nbytes: usize,
        deliver: Deliver,
    ) -> Self {
        let (mut steps, mut buf) = (std::mem::take(&mut b.steps), std::mem::take(&mut b.buf));
        match src {
            Some(s) => buf.extend_from_slice(&s[..nbytes]),
            None => buf.resize(nbytes, 0),
        }
        bcast_steps(&mut steps, b.me, b.n, root, (0, nbytes));
        let mut c = NbColl::new(b, steps, buf, (0, nbytes));
        c.deliver = Some(deliver);
        c
    }

    /// Reduction of every member's `send` with `red`: to team rank `root`, or to every
    /// member (`root` None). `deliver` gets the result where there is one (at the root, or
    /// everywhere).
    pub(crate) fn reduce(
        mut b: Begin,
        root: Option<u32>,
        send: &[u8],
        red: Box<dyn Reducer + Send>,
        deliver: Deliver,
    ) -> Self {
        let (mut steps, mut buf) = (std::mem::take(&mut b.steps), std::mem::take(&mut b.buf));
        let (me, n) = (b.me, b.n);
        let len = send.len();
        buf.extend_from_slice(send);
        buf.resize(2 * len, 0);
        let (acc, tmp) = ((0, len), (len, len));
        if root.is_none() && n.is_power_of_two() {
            allreduce_steps(&mut steps, me, n, acc, tmp);
        } else {
            reduce_steps(&mut steps, me, n, acc, tmp);
        }
        match root {
            None if n.is_power_of_two() => {}
            Some(0) => {}
            Some(r) if me == 0 => steps.push(Step::Send {
                to: r,
                tag: TAG_ROOT,
                from: acc,
            }),
            Some(r) if me == r => steps.push(Step::Recv {
                from: 0,
                tag: TAG_ROOT,
                into: acc,
            }),
            Some(_) => {}
            None => bcast_steps(&mut steps, me, n, 0, acc),
        }
        let mut c = NbColl::new(b, steps, buf, acc);
        c.red = Some(red);
        if root.is_none_or(|r| r == me) {
            c.deliver = Some(deliver);
        }
        c
    }

    /// A barrier of the team (dissemination).
    pub(crate) fn barrier(mut b: Begin) -> Self {
        let (mut steps, buf) = (std::mem::take(&mut b.steps), std::mem::take(&mut b.buf));
        let (me, n) = (b.me, b.n);
        let mut k = 0;
        while (1u32 << k) < n {
            steps.push(Step::Send {
                to: (me + (1 << k)) % n,
                tag: TAG_BAR + k,
                from: (0, 0),
            });
            steps.push(Step::Recv {
                from: (me + n - (1 << k) % n) % n,
                tag: TAG_BAR + k,
                into: (0, 0),
            });
            k += 1;
        }
        NbColl::new(b, steps, buf, (0, 0))
    }

    fn done(&self) -> bool {
        self.pc == self.steps.len() && self.deliver.is_none()
    }

    fn tag(&self, step: u32) -> u32 {
        TAG_NB | (self.seq & 0x7f_ffff) << 8 | step
    }

    /// Runs the steps that can run now, on the endpoint the caller holds (it polled
    /// before: a receive takes what has arrived); true once finished.
    fn advance<P: Port>(&mut self, g: &Gasnet<P>, ep: &mut Endpoint<P, Ctx>) -> Result<bool> {
        while let Some(&s) = self.steps.get(self.pc) {
            match s {
                Step::Send { to, tag, from } => {
                    let tag = self.tag(tag);
                    let data = &self.buf[from.0..from.0 + from.1];
                    self.group
                        .send_to(ep, to as usize, tag, data)
                        .or_else(|e| g.alive().and(Err(e.into())))?;
                }
                Step::Recv { from, tag, into } => {
                    let tag = self.tag(tag);
                    let Some(v) = self.group.try_take(ep, from as usize, tag)? else {
                        return Ok(false);
                    };
                    if v.len() != into.1 {
                        return Err(Error::Protocol(format!(
                            "a collective's message of {} bytes where {} were expected \
                             (the members' sizes or order of collectives differ)",
                            v.len(),
                            into.1
                        )));
                    }
                    self.buf[into.0..into.0 + into.1].copy_from_slice(&v);
                }
                Step::Fold {
                    src,
                    acc,
                    src_first,
                } => {
                    let red = self.red.as_ref().ok_or_else(|| {
                        Error::Protocol("a reduction step without an operator".into())
                    })?;
                    let (lo, hi) = self.buf.split_at_mut(src.0);
                    let (acc, src) = (&mut lo[acc.0..acc.0 + acc.1], &mut hi[..src.1]);
                    if src_first {
                        red.apply(src, acc);
                    } else {
                        red.apply(acc, src);
                        acc.copy_from_slice(src);
                    }
                }
            }
            self.pc += 1;
        }
        if let Some(d) = self.deliver.take() {
            d(&self.buf[self.out.0..self.out.0 + self.out.1]);
        }
        Ok(true)
    }
}

/// Locks: a thread that advances schedules holds the endpoint, then takes the slots
/// (never the other way round).
impl<P: Port> Gasnet<P> {
    fn running(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.nbc.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What a schedule on team `t` starts from: the team's group (kept from a finished
    /// schedule, else built), its next sequence number, and a finished schedule's step
    /// list and scratch if kept.
    pub(crate) fn nbc_begin(&self, t: &Team) -> Result<Begin> {
        let (kept, (mut steps, mut buf)) = {
            let mut s = self.running();
            let i = s.groups.iter().position(|g| g.gid() == t.gid);
            (
                i.map(|i| s.groups.swap_remove(i)),
                s.spare.pop().unwrap_or_default(),
            )
        };
        steps.clear();
        buf.clear();
        let group = match kept {
            Some(g) => g,
            None => self.group(t, &*self.ep()?)?,
        };
        Ok(Begin {
            group,
            seq: t.next_nb(),
            me: t.me,
            n: t.size(),
            steps,
            buf,
        })
    }

    /// Starts `c`: runs what it can now; `None` when it finished at once, else its slot.
    pub(crate) fn nbc_start(&self, mut c: NbColl) -> Result<Option<usize>> {
        let mut ep = self.ep()?;
        let fin = c.advance(self, &mut ep)?;
        let mut s = self.running();
        if fin {
            s.recycle(c);
            return Ok(None);
        }
        let i = match s.run.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                s.run.push(None);
                s.run.len() - 1
            }
        };
        s.run[i] = Some(c);
        self.nbc.active.fetch_add(1, Ordering::Relaxed);
        Ok(Some(i))
    }

    /// Polls once and advances every running schedule; true (and slot `i` is freed) once
    /// `i` has finished. All of them, not `i` alone: a member waiting for one collective
    /// still forwards the others'.
    pub(crate) fn nbc_test(&self, i: usize) -> Result<bool> {
        self.nbc_step(i).map(|(done, _)| done)
    }

    /// [`Gasnet::nbc_test`], and how much it did — the messages its poll dispatched and
    /// the schedules' steps that ran: a wait backs off only when nothing (a waiting member
    /// serving others' requests is busy, not idle).
    pub(crate) fn nbc_step(&self, i: usize) -> Result<(bool, usize)> {
        let (did, in_handler, mut s) = match self.ep_or_handler()? {
            Some(mut ep) => {
                // The first message taken in one look at the lane (no `ready` first): a
                // request served inside the wait is answered as soon as it arrives; then
                // what else has arrived (a schedule's messages come in bursts).
                let r = match ep.poll_ready_one() {
                    Ok(1) => ep.poll().map(|n| n + 1),
                    r => r,
                };
                let polled = self.polled(&mut ep, r)?;
                let mut s = self.running();
                let moved = self.advance_all(&mut ep, &mut s.run)?;
                (polled + moved, false, s)
            }
            // Inside a handler the endpoint is the handler's: done, or it cannot advance.
            None => (0, true, self.running()),
        };
        match s.run.get(i) {
            Some(Some(c)) if c.done() => {
                if let Some(c) = s.run[i].take() {
                    s.recycle(c);
                }
                Ok((true, did))
            }
            Some(Some(_)) if in_handler => Err(Error::InHandler),
            Some(Some(_)) => Ok((false, did)),
            _ => Err(Error::BadArgument(format!("no collective in slot {i}"))),
        }
    }

    /// Advances every running schedule; how many steps ran.
    fn advance_all(&self, ep: &mut Endpoint<P, Ctx>, s: &mut [Option<NbColl>]) -> Result<usize> {
        let mut moved = 0;
        for c in s.iter_mut().flatten() {
            let pc = c.pc;
            if !c.done() && c.advance(self, ep)? {
                self.nbc.active.fetch_sub(1, Ordering::Relaxed);
            }
            moved += c.pc - pc;
        }
        Ok(moved)
    }

    /// Advances every running schedule (after a poll outside any handler): a member that
    /// only polls still forwards what the others wait for. How many steps ran.
    #[cold]
    #[inline(never)]
    pub(crate) fn nbc_progress(&self) -> Result<usize> {
        let Some(mut ep) = self.ep_or_handler()? else {
            return Ok(0);
        };
        let Ok(mut s) = self.nbc.slots.try_lock() else {
            return Ok(0); // another thread advances them
        };
        self.advance_all(&mut ep, &mut s.run)
    }

    /// Whether a schedule is running (a poll's test, without a lock).
    #[inline(always)]
    pub(crate) fn nbc_active(&self) -> bool {
        self.nbc.active.load(Ordering::Relaxed) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each member's data, and the (sender, tag) of each message it received.
    type Outcome = (Vec<Vec<u32>>, Vec<Vec<(u32, u32)>>);

    /// Every member's steps, simulated with lists of ranks for data and concatenation
    /// for the (associative, non-commutative) operator: each send must meet exactly one
    /// receive of the same (sender, receiver, tag), and a receive only runs after its
    /// message was sent. Member r starts with `[r]` at offset 0; returns each member's
    /// data at offset 0 and the messages it received.
    fn run(all: &[Vec<Step>]) -> Outcome {
        let n = all.len();
        let mut pc = vec![0usize; n];
        let mut sent: Vec<(u32, u32, u32, Vec<u32>)> = Vec::new();
        let mut got = vec![Vec::new(); n];
        let mut mem: Vec<std::collections::HashMap<usize, Vec<u32>>> = (0..n)
            .map(|r| [(0, vec![r as u32])].into_iter().collect())
            .collect();
        loop {
            let mut moved = false;
            for r in 0..n {
                while let Some(&s) = all[r].get(pc[r]) {
                    match s {
                        Step::Send { to, tag, from } => {
                            let d = mem[r].get(&from.0).cloned().unwrap_or_default();
                            sent.push((r as u32, to, tag, d));
                        }
                        Step::Recv { from, tag, into } => {
                            let Some(i) = sent
                                .iter()
                                .position(|m| (m.0, m.1, m.2) == (from, r as u32, tag))
                            else {
                                break;
                            };
                            let m = sent.remove(i);
                            mem[r].insert(into.0, m.3);
                            got[r].push((from, tag));
                        }
                        Step::Fold {
                            src,
                            acc,
                            src_first,
                        } => {
                            let s = mem[r].get(&src.0).cloned().unwrap_or_default();
                            let a = mem[r].get(&acc.0).cloned().unwrap_or_default();
                            let v = if src_first { [s, a] } else { [a, s] }.concat();
                            mem[r].insert(acc.0, v);
                        }
                    }
                    pc[r] += 1;
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        for r in 0..n {
            assert_eq!(pc[r], all[r].len(), "member {r} of {n} stuck");
        }
        assert!(sent.is_empty(), "unreceived: {sent:?}");
        let data = mem
            .iter()
            .map(|m| m.get(&0).cloned().unwrap_or_default())
            .collect();
        (data, got)
    }

    #[test]
    fn broadcasts_reach_every_member_once_from_any_root() {
        for n in 1..=9u32 {
            for root in 0..n {
                let all: Vec<_> = (0..n)
                    .map(|me| {
                        let mut s = Vec::new();
                        bcast_steps(&mut s, me, n, root, (0, 4));
                        s
                    })
                    .collect();
                let (_, got) = run(&all);
                for (me, g) in got.iter().enumerate() {
                    assert_eq!(g.len(), usize::from(me as u32 != root), "n {n} root {root}");
                }
            }
        }
    }

    #[test]
    fn reductions_fold_every_part_in_rank_order() {
        let order = |n: u32| (0..n).collect::<Vec<u32>>();
        for n in 1..=9u32 {
            let steps = |f: fn(&mut Vec<Step>, u32, u32, Range, Range)| -> Vec<Vec<Step>> {
                (0..n)
                    .map(|me| {
                        let mut s = Vec::new();
                        f(&mut s, me, n, (0, 1), (1, 1));
                        s
                    })
                    .collect()
            };
            let (data, _) = run(&steps(reduce_steps));
            assert_eq!(data[0], order(n), "reduction to 0 of {n}");
            if n.is_power_of_two() {
                let (data, _) = run(&steps(allreduce_steps));
                for (me, d) in data.iter().enumerate() {
                    assert_eq!(*d, order(n), "recursive doubling of {n}, member {me}");
                }
            }
        }
    }
}
