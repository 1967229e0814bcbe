//! Deferred receives: the engine's side of the C ABI's deferred `MPI_Irecv` (skifmpi's
//! `defer` module has the whole design). A receive taken while nothing else can claim a
//! message is not posted at once: it waits, in posting order, in a reserved request slot;
//! a later call either posts it exactly as [`Core::irecv`] would have
//! ([`Core::post_reserved`]), or a wait for the whole run matches the arriving messages
//! against it straight from the channel ([`Core::drain_deferred`]): no matching tables, no
//! request life cycle per message.
//!
//! Why order is kept (MPI-3.1 §3.5): the receives posted in the engine always predate the
//! deferred ones (every other call posts the run first), and the run is drained only while
//! the engine has nothing pending, so the first deferred receive that accepts a message is
//! the one MPI's order gives it; a message no deferred receive takes goes to the unexpected
//! queue, where posting the rest finds it.

use skifch::proto::{Am, Take};
use skifch::Port;

use super::protocol::{eager_envelope, unenv, H_CTS, H_RTS, H_SYNC};
use super::state::{Req, ReqKind};
use super::{Core, Envelope, ReqId, Status};
use crate::error::{Error, Result};
use crate::mem::UserBuf;

/// A deferred receive: its reserved request slot, envelope and capacity, and what it got
/// once a drain matched it (source, tag, length). Its buffer is the caller's to keep: a
/// deferred receive is written down on every `MPI_Irecv`, so it stays small (no
/// [`UserBuf`] moved per message).
#[derive(Clone, Copy, Debug)]
pub struct Deferred {
    /// The reserved request slot (the handle the program holds).
    pub id: ReqId,
    /// What it receives (`ANY_SOURCE`/`ANY_TAG` allowed).
    pub env: Envelope,
    /// Its buffer's capacity in bytes.
    pub cap: usize,
    /// Matched by a drain: source, tag and length (never above the capacity).
    pub got: Option<(i32, i32, usize)>,
}

impl Deferred {
    /// The status a drain's match gives (`None`: not matched).
    pub fn status(&self) -> Option<Status> {
        self.got.map(|(source, tag, bytes)| Status {
            source,
            tag,
            error: 0,
            bytes,
            cancelled: false,
        })
    }
}

impl<P: Port> Core<P> {
    /// Reserves `n` request slots for deferred receives, appended to `out`: placeholders
    /// that own nothing and complete never until [`Core::post_reserved`] fills them.
    pub fn reserve(&mut self, n: usize, out: &mut Vec<ReqId>) {
        for _ in 0..n {
            out.push(self.nothing_request(false, Status::default()));
        }
    }

    /// Gives reserved slots back (the C ABI's `MPI_Finalize`).
    pub fn unreserve(&mut self, ids: &[ReqId]) {
        let s = self.st_mut();
        for &id in ids {
            if matches!(s.get(id), Some(r) if matches!(r.kind, ReqKind::Nothing) && !r.done) {
                s.release(id);
            }
        }
    }

    /// Turns deferred receive `d` (its buffer `buf`) into an ordinary request in its
    /// reserved slot: complete with its status when a drain matched it, else posted as
    /// [`Core::irecv`] posts (an unexpected message that matches is taken first).
    /// A matched one completes whatever the engine's state; on a failed engine (a peer
    /// lost) an unmatched one completes with that error, so its wait reports it.
    pub fn post_reserved(&mut self, d: Deferred, buf: UserBuf) -> Result<()> {
        let broken = self.check().err();
        let Deferred { id, env, got, .. } = d;
        let s = self.st_mut();
        let req = Req::recv(env, buf, s.next_seq());
        let Some(slot @ Some(_)) = s.reqs.get_mut(id as usize) else {
            return Err(Error::Request(format!("request {id} was not reserved")));
        };
        *slot = Some(req);
        if let Some((src, tag, len)) = got {
            s.fill_eager(id, Envelope { src, tag, ..env }, len, |_| {});
            return Ok(());
        }
        if let Some(e) = broken {
            if let Some(r) = s.get_mut(id) {
                r.status.error = e.class();
                r.err = Some(Box::new(e));
                r.done = true;
            }
            return Ok(());
        }
        self.post_in(env, id)
    }

    /// Waits until every receive of `run` (deferred, in posting order, none matched yet)
    /// has taken its message straight from the channel (`put(i, payload)` copies it into
    /// the `i`th one's buffer): `true`. `false` when the run cannot be drained so (the
    /// engine has something pending, or a message needs the general path: a synchronous
    /// or rendezvous one, or one longer than its receive); the caller then posts the run
    /// (matched ones complete) and waits as usual. Also `false`, at once, while a
    /// nonblocking collective is in flight (the general wait moves it).
    pub fn drain_deferred(
        &mut self,
        run: &mut [Deferred],
        mut put: impl FnMut(usize, [&[u8]; 2]),
    ) -> Result<bool> {
        self.check()?;
        // Nothing posted, queued or cleared, and no nonblocking collective to move on
        // (the general wait advances those; a drain only serves incoming messages).
        let s = self.st();
        if s.pending() != 0 || !s.colls.is_empty() || run.is_empty() {
            return Ok(false);
        }
        let mut next = 0; // the first unmatched receive
        let mut left = run.len();
        let r = self.ep.progress_take(
            |am| offer_run(run, &mut next, &mut left, &mut put, am),
            None,
        );
        r.map_err(|e| self.fail(e))?;
        if let Some(e) = self.ep.take_error() {
            return Err(self.fail(e));
        }
        Ok(left == 0)
    }
}

/// The drain's filter: an eager message goes into the first unmatched receive of the run
/// that accepts it (`MineMore`, `Mine` for the last); one none accepts goes to its handler
/// (the unexpected queue); a synchronous or rendezvous message that one accepts, or an
/// eager one longer than it, ends the drain after its handler ran (the general path takes
/// it from the unexpected queue), as does a CTS (its data must go out).
#[inline(always)]
fn offer_run(
    run: &mut [Deferred],
    next: &mut usize,
    left: &mut usize,
    put: &mut impl FnMut(usize, [&[u8]; 2]),
    am: &Am<'_>,
) -> Take {
    if let Some(m) = eager_envelope(am) {
        let Some(i) = (*next..run.len()).find(|&i| run[i].got.is_none() && run[i].env.accepts(m))
        else {
            return Take::Pass;
        };
        let d = &mut run[i];
        let p = am.payload();
        if p.len() > d.cap {
            return Take::PassStop;
        }
        put(i, p.segments());
        d.got = Some((m.src, m.tag, p.len()));
        *left -= 1;
        if *left == 0 {
            return Take::Mine;
        }
        if i == *next {
            // In order (the common case): the next unmatched one follows, or a run of
            // receives matched out of order before it.
            *next += 1;
            while run[*next].got.is_some() {
                *next += 1;
            }
        }
        return Take::MineMore;
    }
    match am.handler() {
        H_SYNC | H_RTS => {
            let m = unenv(am.args().first().copied().unwrap_or(0), am.arg());
            if run[*next..]
                .iter()
                .any(|d| d.got.is_none() && d.env.accepts(m))
            {
                Take::PassStop
            } else {
                Take::Pass
            }
        }
        H_CTS => Take::PassStop,
        _ => Take::Pass,
    }
}
