//! Requests: a slot per outstanding request (generation-checked ids), its landing, and
//! its reply; and the application's calls that wait for one.

use std::time::Duration;

use super::header::Head;
use super::io::{IoState, Out};
use super::xfer::Target;
use super::{Endpoint, Landing};
use crate::{Error, Port, Result};

/// Identifies an outstanding request of this endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReqId {
    pub(super) idx: u16,
    gen: u32,
}

/// The reply to a request.
#[derive(Debug)]
pub struct Reply {
    /// The replier's small argument.
    pub arg: u32,
    /// The replier's extra arguments (`nargs` of them are meaningful).
    pub args: [u64; 3],
    /// How many of `args` the replier sent.
    pub nargs: usize,
    /// Bytes the replier sent (the landing received `min(len, landing size)`).
    pub len: u64,
    /// Whether the reply was longer than the landing.
    pub truncated: bool,
    /// The data, when the request's landing was [`Landing::vec`].
    pub data: Option<Vec<u8>>,
}

pub(super) enum ReqState {
    Free,
    Waiting,
    /// Given up by the requester: the slot is freed when the reply comes.
    Cancelled,
    Done(Reply),
    Failed(Error),
}

pub(super) struct ReqSlot {
    gen: u32,
    pub(super) dst: u32,
    pub(super) state: ReqState,
    pub(super) landing: Option<Landing>,
}

impl IoState {
    pub(super) fn alloc_req(&mut self, dst: u32, landing: Landing) -> Result<ReqId> {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                if self.reqs.len() > u16::MAX as usize {
                    return Err(Error::InvalidArgument(
                        "proto: 65536 requests outstanding; wait for some first".into(),
                    ));
                }
                self.reqs.push(ReqSlot {
                    gen: 0,
                    dst: 0,
                    state: ReqState::Free,
                    landing: None,
                });
                (self.reqs.len() - 1) as u16
            }
        };
        let s = &mut self.reqs[idx as usize];
        s.gen = s.gen.wrapping_add(1);
        s.dst = dst;
        s.state = ReqState::Waiting;
        s.landing = Some(landing);
        Ok(ReqId { idx, gen: s.gen })
    }

    pub(super) fn free_req(&mut self, idx: u16) {
        let s = &mut self.reqs[idx as usize];
        s.state = ReqState::Free;
        s.landing = None;
        self.free.push(idx);
    }

    fn slot_ok(&self, id: ReqId) -> Result<()> {
        match self.reqs.get(id.idx as usize) {
            Some(s)
                if s.gen == id.gen && !matches!(s.state, ReqState::Free | ReqState::Cancelled) =>
            {
                Ok(())
            }
            _ => Err(Error::InvalidArgument(
                "proto: unknown or already completed request id".into(),
            )),
        }
    }

    fn take_done(&mut self, id: ReqId) -> Option<Result<Reply>> {
        let s = &mut self.reqs[id.idx as usize];
        let st = std::mem::replace(&mut s.state, ReqState::Free);
        let r = match st {
            ReqState::Done(r) => Ok(r),
            ReqState::Failed(e) => Err(e),
            other => {
                s.state = other;
                return None;
            }
        };
        self.free_req(id.idx);
        Some(r)
    }

    /// The reply to request `idx` from `src` is complete (`err`: it failed there).
    pub(super) fn complete_req(
        &mut self,
        src: u32,
        idx: u16,
        head: &Head,
        len: u64,
        err: Option<String>,
    ) {
        let s = &mut self.reqs[idx as usize];
        if matches!(s.state, ReqState::Cancelled) {
            self.free_req(idx);
            return;
        }
        let landing = s.landing.take();
        s.state = match err {
            Some(why) => ReqState::Failed(Error::InvalidArgument(
                format!("proto: request to rank {src} failed there: {why}").into(),
            )),
            None => {
                let truncated = landing.as_ref().is_some_and(|l| l.truncated());
                ReqState::Done(Reply {
                    arg: head.arg,
                    args: head.args,
                    nargs: head.nargs(),
                    len,
                    truncated,
                    data: landing.and_then(Landing::into_vec),
                })
            }
        };
    }

    fn cancel(&mut self, id: ReqId) {
        let Some(s) = self.reqs.get_mut(id.idx as usize) else {
            return;
        };
        if s.gen != id.gen {
            return;
        }
        match s.state {
            ReqState::Waiting => {
                s.landing = None;
                s.state = ReqState::Cancelled;
                // A reply may still be in flight: keep the slot until it comes (a reply
                // that is already partly placed keeps landing nowhere).
                for x in self.inx.values_mut() {
                    if matches!(x.target, Target::Reply { idx, .. } if idx == id.idx) {
                        x.target = Target::Discard;
                    }
                }
            }
            ReqState::Done(_) | ReqState::Failed(_) => self.free_req(id.idx),
            ReqState::Free | ReqState::Cancelled => {}
        }
    }
}

impl<P: Port, C> Endpoint<P, C> {
    /// Sends a request to handler `h` of `dst`; its reply's data lands in `reply`.
    /// Returns at once after sending; finish with [`Endpoint::wait`] / [`Endpoint::test`]
    /// (each request gets exactly one reply).
    pub fn request(
        &mut self,
        dst: u32,
        h: u8,
        arg: u32,
        args: &[u64],
        data: &[u8],
        reply: Landing,
    ) -> Result<ReqId> {
        self.emit_request(dst, h, arg, args, data, reply)
    }

    /// Request + wait: the reply's data lands in `out`.
    pub fn call(
        &mut self,
        dst: u32,
        h: u8,
        arg: u32,
        args: &[u64],
        data: &[u8],
        out: &mut [u8],
    ) -> Result<Reply> {
        // `out` is borrowed for this whole call; the request is waited for or cancelled
        // (which drops the landing) before returning.
        let l = Landing::scoped(out);
        let id = self.request(dst, h, arg, args, data, l)?;
        match self.wait(id) {
            Ok(r) => Ok(r),
            Err(e) => {
                self.cancel(id);
                Err(e)
            }
        }
    }

    /// Whether request `id` has its reply (returns it, once), after one round of progress.
    pub fn test(&mut self, id: ReqId) -> Result<Option<Reply>> {
        self.io.slot_ok(id)?;
        if let Some(r) = self.io.take_done(id) {
            return r.map(Some);
        }
        // Progress as in a wait: an unrelated handler error is left for `poll`.
        self.io.flush_all(&self.ch);
        self.service()?;
        self.io.take_done(id).transpose()
    }

    /// Waits (with progress) for the reply to request `id`.
    pub fn wait(&mut self, id: ReqId) -> Result<Reply> {
        self.wait_timeout(id, None)
    }

    /// As [`Endpoint::wait`], failing with `TimedOut` after `timeout` (the request stays
    /// outstanding: wait again or [`Endpoint::cancel`] it).
    pub fn wait_timeout(&mut self, id: ReqId, timeout: Option<Duration>) -> Result<Reply> {
        self.io.slot_ok(id)?;
        let i = id.idx as usize;
        let done = |ep: &mut Self| !matches!(ep.io.reqs[i].state, ReqState::Waiting);
        let dst = self.io.reqs[i].dst;
        self.progress_until_peer(done, timeout, Some(dst))?;
        self.io
            .take_done(id)
            .unwrap_or_else(|| Err(Error::InvalidArgument("proto: request vanished".into())))
    }

    /// Gives up on request `id`: its landing is dropped now (so caller memory behind a raw
    /// landing is free again); a reply that still comes is discarded.
    pub fn cancel(&mut self, id: ReqId) {
        self.io.cancel(id)
    }
}
