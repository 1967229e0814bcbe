//! Non-blocking collectives (`gex_Coll_BroadcastNB`, `ReduceToOneNB`, `ReduceToAllNB`, and
//! `gex_Coll_BarrierNB` on a split team): each call builds a short schedule — sends,
//! receives and folds over a scratch buffer — that runs as far as it can at once and is
//! then advanced by every poll of this rank (`gasnet_AMPoll`, `GASNET_BLOCKUNTIL`, an
//! event's test or wait, any blocking call's wait). The returned event completes when
//! this rank's part is done: its result is in the destination and what it forwards to
//! others is sent.
//!
//! # Collective Operation
//! Every member of the team calls the team's collectives in the same order; each takes
//! the team's next sequence number, so several may run at once. A member that has not yet
//! entered a collective keeps what arrives for it until it does. The source is copied at
//! the call; the destination belongs to the library until the event completes.
//!
//! Algorithms (binomial trees, ⌈log₂ n⌉ rounds): broadcast from the root; reductions
//! toward team rank 0 in rank order (so `GEX_OP_USER_NC` is right), then to the root
//! (`ReduceToOne`) or broadcast back (`ReduceToAll`); the barrier by dissemination.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use skifch::coll::{ProtoGroup, Reducer};
use skifch::Port;

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
enum Step {
    /// Send a range of the scratch.
    Send { to: u32, tag: u32, from: Range },
    /// Wait for the message of `tag` from a member, into a range (its length must be the
    /// message's).
    Recv { from: u32, tag: u32, into: Range },
    /// `acc = acc ∘ src` (acc holds the lower ranks' part, and lies below src).
    Fold { src: Range, acc: Range },
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

/// The running schedules of a rank, advanced by its polls.
#[derive(Default)]
pub struct Running {
    slots: Mutex<Vec<Option<NbColl>>>,
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
            steps.push(Step::Fold { src: tmp, acc });
        }
        k += 1;
    }
}

impl NbColl {
    fn new(group: ProtoGroup, seq: u32, steps: Vec<Step>, buf: Vec<u8>, out: Range) -> Self {
        NbColl {
            group,
            seq,
            steps,
            pc: 0,
            buf,
            red: None,
            out,
            deliver: None,
        }
    }

    /// Broadcast of `nbytes` from team rank `root`: `src` is the root's data (ignored
    /// elsewhere); `deliver` gets the bytes at every member.
    pub(crate) fn bcast(
        (group, seq): (ProtoGroup, u32),
        me: u32,
        n: u32,
        root: u32,
        src: &[u8],
        deliver: Deliver,
    ) -> Self {
        let nbytes = src.len();
        let mut steps = Vec::new();
        bcast_steps(&mut steps, me, n, root, (0, nbytes));
        let mut c = NbColl::new(group, seq, steps, src.to_vec(), (0, nbytes));
        c.deliver = Some(deliver);
        c
    }

    /// Reduction of every member's `send` with `red`: to team rank `root`, or to every
    /// member (`root` None). `deliver` gets the result where there is one (at the root, or
    /// everywhere).
    pub(crate) fn reduce(
        (group, seq): (ProtoGroup, u32),
        me: u32,
        n: u32,
        root: Option<u32>,
        send: &[u8],
        red: Box<dyn Reducer + Send>,
        deliver: Deliver,
    ) -> Self {
        let len = send.len();
        let mut buf = vec![0u8; 2 * len];
        buf[..len].copy_from_slice(send);
        let (acc, tmp) = ((0, len), (len, len));
        let mut steps = Vec::new();
        reduce_steps(&mut steps, me, n, acc, tmp);
        match root {
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
        let mut c = NbColl::new(group, seq, steps, buf, acc);
        c.red = Some(red);
        if root.is_none_or(|r| r == me) {
            c.deliver = Some(deliver);
        }
        c
    }

    /// A barrier of the team (dissemination).
    pub(crate) fn barrier((group, seq): (ProtoGroup, u32), me: u32, n: u32) -> Self {
        let mut steps = Vec::new();
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
        NbColl::new(group, seq, steps, Vec::new(), (0, 0))
    }

    fn done(&self) -> bool {
        self.pc == self.steps.len() && self.deliver.is_none()
    }

    fn tag(&self, step: u32) -> u32 {
        TAG_NB | (self.seq & 0x7f_ffff) << 8 | step
    }

    /// Runs the steps that can run now; true once finished.
    fn advance<P: Port>(&mut self, g: &Gasnet<P>) -> Result<bool> {
        while let Some(&s) = self.steps.get(self.pc) {
            match s {
                Step::Send { to, tag, from } => {
                    let tag = self.tag(tag);
                    let data = &self.buf[from.0..from.0 + from.1];
                    let mut ep = g.ep()?;
                    self.group
                        .send_to(&mut ep, to as usize, tag, data)
                        .or_else(|e| g.alive().and(Err(e.into())))?;
                }
                Step::Recv { from, tag, into } => {
                    let Some(v) = g.nbc_take(&self.group, from, self.tag(tag))? else {
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
                Step::Fold { src, acc } => {
                    let red = self.red.as_ref().ok_or_else(|| {
                        Error::Protocol("a reduction step without an operator".into())
                    })?;
                    let (lo, hi) = self.buf.split_at_mut(src.0);
                    let inout = &mut hi[..src.1];
                    red.apply(&lo[acc.0..acc.0 + acc.1], inout);
                    lo[acc.0..acc.0 + acc.1].copy_from_slice(inout);
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

impl<P: Port> Gasnet<P> {
    /// The message of `tag` from member `from`, if it has arrived (polls once first when
    /// it has not).
    fn nbc_take(&self, group: &ProtoGroup, from: u32, tag: u32) -> Result<Option<Vec<u8>>> {
        let got = group.try_take(&mut *self.ep()?, from as usize, tag)?;
        if got.is_some() {
            return Ok(got);
        }
        self.poll()?;
        Ok(group.try_take(&mut *self.ep()?, from as usize, tag)?)
    }

    fn running(&self) -> std::sync::MutexGuard<'_, Vec<Option<NbColl>>> {
        self.nbc.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts `c`: runs what it can now; `None` when it finished at once, else its slot.
    pub(crate) fn nbc_start(&self, mut c: NbColl) -> Result<Option<usize>> {
        if c.advance(self)? {
            return Ok(None);
        }
        let mut s = self.running();
        let i = match s.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                s.push(None);
                s.len() - 1
            }
        };
        s[i] = Some(c);
        self.nbc.active.fetch_add(1, Ordering::Relaxed);
        Ok(Some(i))
    }

    /// Advances slot `i`; true (and the slot is freed) once it has finished.
    pub(crate) fn nbc_test(&self, i: usize) -> Result<bool> {
        let mut s = self.running();
        let Some(c) = s.get_mut(i).and_then(Option::as_mut) else {
            return Err(Error::BadArgument(format!("no collective in slot {i}")));
        };
        let was_done = c.done();
        if !was_done && !c.advance(self)? {
            return Ok(false);
        }
        s[i] = None;
        if !was_done {
            self.nbc.active.fetch_sub(1, Ordering::Relaxed);
        }
        Ok(true)
    }

    /// Advances every running schedule (from a poll outside any handler): a member that
    /// only polls still forwards what the others wait for.
    #[cold]
    #[inline(never)]
    pub(crate) fn nbc_progress(&self) -> Result<()> {
        if self.in_handler()? {
            return Ok(());
        }
        let Ok(mut s) = self.nbc.slots.try_lock() else {
            return Ok(()); // another thread advances them, or this one already is
        };
        for c in s.iter_mut().flatten() {
            if !c.done() && c.advance(self)? {
                self.nbc.active.fetch_sub(1, Ordering::Relaxed);
            }
        }
        Ok(())
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

    /// Every member's steps, simulated: each send must meet exactly one receive of the
    /// same (sender, receiver, tag), and a receive only runs after its message was sent.
    fn run(all: &[Vec<Step>]) -> Vec<Vec<(u32, u32)>> {
        let n = all.len();
        let mut pc = vec![0usize; n];
        let mut sent: Vec<(u32, u32, u32)> = Vec::new(); // (from, to, tag)
        let mut got = vec![Vec::new(); n];
        loop {
            let mut moved = false;
            for r in 0..n {
                while let Some(&s) = all[r].get(pc[r]) {
                    match s {
                        Step::Send { to, tag, .. } => sent.push((r as u32, to, tag)),
                        Step::Recv { from, tag, .. } => {
                            let Some(i) = sent.iter().position(|&m| m == (from, r as u32, tag))
                            else {
                                break;
                            };
                            sent.remove(i);
                            got[r].push((from, tag));
                        }
                        Step::Fold { .. } => {}
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
        got
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
                let got = run(&all);
                for (me, g) in got.iter().enumerate() {
                    assert_eq!(g.len(), usize::from(me as u32 != root), "n {n} root {root}");
                }
            }
        }
    }

    #[test]
    fn reductions_fold_every_part_in_rank_order() {
        for n in 1..=9u32 {
            let all: Vec<_> = (0..n)
                .map(|me| {
                    let mut s = Vec::new();
                    reduce_steps(&mut s, me, n, (0, 1), (1, 1));
                    s
                })
                .collect();
            run(&all);
            // Each member's accumulator covers [me, me + span): children come in order of
            // their rank, each right after the span so far.
            for me in 0..n {
                let mut span = 1;
                for s in &all[me as usize] {
                    if let Step::Recv { from, .. } = *s {
                        assert_eq!(from, me + span, "n {n} member {me}");
                        span *= 2;
                    }
                }
                if me == 0 {
                    assert!(span >= n, "n {n}: rank 0 has {span}");
                }
            }
        }
    }
}
