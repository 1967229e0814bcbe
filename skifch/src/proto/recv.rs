//! The receive half: dispatching incoming messages to handlers, built-in layers (replies,
//! chunks, collectives) and the filter of [`Endpoint::progress_take`].
//!
//! Dispatch borrows the endpoint's parts disjointly ([`Parts`]): the channel (shared: its
//! receive and send sides are separate), the send/request state, the collective state,
//! the handler table and the library's context, so a handler gets `&mut C` and an
//! [`Io`] without any runtime borrow check.

use super::am::{Am, Payload, Phase, ReplyTo, Take};
use super::header::{Head, F_ERROR, F_REQUEST, H_CHUNK, H_REPLY, MAX_HDR};
use super::io::{IoState, Out};
use super::request::ReqState;
use super::xfer::Target;
use super::{Endpoint, Handler, Io, FIRST_RESERVED, H_NOP};
use crate::coll::{CollState, H_COLL};
use crate::{Channel, Error, Message, Port, Result};

/// Messages dispatched per [`Endpoint::poll`] at most (so a flood cannot starve the caller).
pub(super) const POLL_BUDGET: usize = 64;

/// The endpoint's parts that dispatch uses, borrowed apart.
pub(super) struct Parts<'e, P: Port, C> {
    pub(super) ch: &'e Channel<P>,
    pub(super) io: &'e mut IoState,
    pub(super) coll: &'e mut CollState,
    pub(super) handlers: &'e [Option<Handler<P, C>>; 256],
    pub(super) ctx: &'e mut C,
}

impl<P: Port, C> Endpoint<P, C> {
    /// Sends queued messages and dispatches up to 64 incoming ones; returns how many were
    /// dispatched. Handler and protocol errors are kept in order and returned one per call
    /// (by this or a wait), the oldest first.
    pub fn poll(&mut self) -> Result<usize> {
        self.poll_up_to(POLL_BUDGET)
    }

    /// [`Endpoint::poll`] dispatching at most `budget` messages.
    #[inline]
    fn poll_up_to(&mut self, budget: usize) -> Result<usize> {
        self.take_deferred()?;
        self.io.flush_all(&self.ch);
        let n = self.service_with(&mut |_: &Am<'_>| Take::Pass, &mut false, budget)?;
        if n > 0 {
            self.take_deferred()?;
        }
        Ok(n)
    }

    /// [`Endpoint::poll`] that asks the driver first whether anything arrived
    /// ([`Channel::ready`]): with nothing queued, nothing to report and nothing ready, the
    /// poll ends there (GASNet's `gasnet_AMPoll`: an empty poll 196 -> ~100 instructions),
    /// at a few instructions more for a poll that finds messages. (Going straight to the
    /// receive instead, as [`Endpoint::poll_ready_one`] does, costs ~60 instructions more
    /// per empty poll and gained ~1 ns of an AM round trip: not taken.)
    #[inline]
    pub fn poll_ready(&mut self) -> Result<usize> {
        if self.io.queued == 0 && self.io.deferred.is_empty() && !self.ch.ready()? {
            return Ok(0);
        }
        self.poll()
    }

    /// [`Endpoint::poll`] that dispatches at most one message: one step of a wait loop
    /// whose caller tests its condition between steps (GASNet's `GASNET_BLOCKUNTIL`). A
    /// round trip's answer then ends the wait at once, without a second receive that finds
    /// nothing. With nothing queued or to report it goes straight to the receive, without
    /// asking [`Channel::ready`] first: the answer is taken in one look at the lane, not
    /// two (an AM Short round trip 5 % shorter in time).
    #[inline]
    pub fn poll_ready_one(&mut self) -> Result<usize> {
        if self.io.queued == 0 && self.io.deferred.is_empty() {
            let n = self.service_with(&mut |_: &Am<'_>| Take::Pass, &mut false, 1)?;
            if n > 0 {
                self.take_deferred()?;
            }
            return Ok(n);
        }
        self.poll_up_to(1)
    }

    /// The oldest handler or protocol error not yet reported, if any.
    pub fn take_error(&mut self) -> Option<Error> {
        self.io.deferred.pop_front()
    }

    #[inline]
    fn take_deferred(&mut self) -> Result<()> {
        match self.io.deferred.pop_front() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Dispatches incoming messages (up to the budget); handler and protocol errors are
    /// deferred, channel errors returned.
    #[inline]
    pub(crate) fn service(&mut self) -> Result<usize> {
        self.service_with(&mut |_: &Am<'_>| Take::Pass, &mut false, POLL_BUDGET)
    }

    /// [`Endpoint::service`] with a filter offered every whole message first (see
    /// [`Endpoint::progress_take`]); stops after a message the filter ends the wait on,
    /// setting `stop`, or after `budget` messages.
    #[inline]
    pub(super) fn service_with(
        &mut self,
        take: &mut impl FnMut(&Am<'_>) -> Take,
        stop: &mut bool,
        budget: usize,
    ) -> Result<usize> {
        let Endpoint {
            ch,
            io,
            coll,
            handlers,
            ctx,
            ..
        } = self;
        let ch: &Channel<P> = ch;
        let mut p = Parts {
            ch,
            io,
            coll,
            handlers,
            ctx,
        };
        let mut n = 0;
        while n < budget && !*stop {
            // The closure form: the message guard is never moved (see `try_recv_with`).
            // The closure returns nothing: a 16-byte `Result` coming back out of it is
            // written in parts and read whole, a store-forwarding stall per message.
            let r = ch.try_recv_with(|m| {
                if let Err(e) = p.dispatch(m, take, stop) {
                    p.io.defer(e);
                }
            });
            match r {
                Ok(()) => {}
                Err(e) if e.is_would_block() => {
                    // Owns nothing: skip the out-of-line drop glue of `Error` on every poll.
                    std::mem::forget(e);
                    break;
                }
                Err(e) => return Err(e),
            }
            n += 1;
        }
        Ok(n)
    }
}

/// Decodes a header split by the ring's end (rare: only a message that wraps there).
#[cold]
fn split_head(s0: &[u8], s1: &[u8], want: usize, src: u32) -> Result<Head> {
    let mut tmp = [0u8; MAX_HDR];
    tmp[..s0.len()].copy_from_slice(s0);
    tmp[s0.len()..want].copy_from_slice(&s1[..want - s0.len()]);
    Head::decode(&tmp[..want], src)
}

impl<P: Port, C> Parts<'_, P, C> {
    #[inline]
    fn dispatch(
        &mut self,
        m: &Message<'_, P>,
        take: &mut impl FnMut(&Am<'_>) -> Take,
        stop: &mut bool,
    ) -> Result<()> {
        let src = m.src().rank();
        if let Some(b) = m.as_contiguous() {
            let mut head = Head::default();
            if let Some(hl) = head.decode_plain_into(b) {
                // A plain user message in one piece (every AM of a library's hot path:
                // GASNet's AMs, MPI's eager sends): no segment split, no general decode.
                let payload = Payload {
                    a: &b[hl..],
                    b: &[],
                };
                return self.whole(src, &head, &payload, take, stop);
            }
        }
        let mut it = m.segments();
        let s0 = it.next().unwrap_or(&[]);
        let s1 = it.next().unwrap_or(&[]);
        let want = m.len().min(MAX_HDR);
        let head = if s0.len() >= want {
            Head::decode(s0, src)?
        } else {
            split_head(s0, s1, want, src)?
        };
        let hl = head.len();
        let payload = if s0.len() >= hl {
            Payload {
                a: &s0[hl..],
                b: s1,
            }
        } else {
            Payload {
                a: &s1[hl - s0.len()..],
                b: &[],
            }
        };
        match head.handler {
            H_CHUNK => self.on_chunk(src, head.id, payload),
            H_REPLY => self.on_reply(src, &head, payload),
            _ if head.long.is_none() => self.whole(src, &head, &payload, take, stop),
            _ => self.on_am(src, &head, payload),
        }
    }

    /// A whole message (not a chunk, a reply or a long transfer): offered to `take`,
    /// then to its registered handler (or the built-in layers and the
    /// unregistered-handler error, [`Parts::on_am`]).
    #[inline(always)]
    fn whole(
        &mut self,
        src: u32,
        head: &Head,
        payload: &Payload<'_>,
        take: &mut impl FnMut(&Am<'_>) -> Take,
        stop: &mut bool,
    ) -> Result<()> {
        let h = head.handler;
        let am = Am {
            src,
            head,
            payload,
            phase: Phase::Whole,
            landing: Default::default(),
        };
        // skifch's own handlers (ids from FIRST_RESERVED) are never offered.
        let t = if h < FIRST_RESERVED {
            take(&am)
        } else {
            Take::Pass
        };
        match t {
            Take::Mine => {
                *stop = true;
                return Ok(());
            }
            Take::MineMore => return Ok(()),
            Take::PassStop => *stop = true,
            Take::Pass => {}
        }
        if let Some(f) = self.handlers[h as usize] {
            let mut io = Io {
                ch: self.ch,
                st: &mut *self.io,
            };
            return f(&mut *self.ctx, &mut io, &am);
        }
        self.on_am(
            src,
            head,
            Payload {
                a: payload.a,
                b: payload.b,
            },
        )
    }

    fn registered(&self, h: u8) -> bool {
        h == H_COLL || h == H_NOP || self.handlers[h as usize].is_some()
    }

    /// Calls handler `h` (a registered one, or a built-in layer's).
    pub(super) fn invoke(&mut self, h: u8, am: &Am<'_>) -> Result<()> {
        match h {
            H_COLL => self.coll.on_message(am),
            H_NOP => Ok(()),
            _ => match self.handlers[h as usize] {
                Some(f) => {
                    let mut io = Io {
                        ch: self.ch,
                        st: &mut *self.io,
                    };
                    f(&mut *self.ctx, &mut io, am)
                }
                None => Ok(()),
            },
        }
    }

    #[inline(never)]
    fn on_am(&mut self, src: u32, head: &Head, payload: Payload<'_>) -> Result<()> {
        if !self.registered(head.handler) {
            if let Some((total, xid)) = head.long {
                self.start_xfer(src, xid, total, payload.len() as u64, Target::Discard)?;
            }
            let why = format!(
                "rank {} has no handler {} on port {}",
                self.io.rank, head.handler, self.io.port
            );
            if head.flags & F_REQUEST != 0 {
                let mut io = Io {
                    ch: self.ch,
                    st: &mut *self.io,
                };
                let to = ReplyTo {
                    rank: src,
                    req: head.id,
                };
                io.emit_reply_error(to, &why)?;
            }
            return Err(Error::InvalidArgument(
                format!("proto: a message from rank {src} for an unregistered handler: {why}")
                    .into(),
            ));
        }
        let Some((total, xid)) = head.long else {
            let am = Am {
                src,
                head,
                payload: &payload,
                phase: Phase::Whole,
                landing: Default::default(),
            };
            return self.invoke(head.handler, &am);
        };
        let am = Am {
            src,
            head,
            payload: &payload,
            phase: Phase::LongStart { total },
            landing: Default::default(),
        };
        let r = self.invoke(head.handler, &am);
        let target = match am.landing.take() {
            Some(mut landing) => {
                landing.write_segs(0, payload.segments());
                Target::Am {
                    head: *head,
                    landing,
                }
            }
            None => Target::Discard,
        };
        let placed = !matches!(target, Target::Discard);
        self.start_xfer(src, xid, total, payload.len() as u64, target)?;
        r?;
        if !placed {
            return Err(Error::InvalidArgument(
                format!(
                    "proto: handler {} did not place a {total}-byte long message from rank {src}; dropped",
                    head.handler
                )
                .into(),
            ));
        }
        Ok(())
    }

    #[inline(never)]
    fn on_reply(&mut self, src: u32, head: &Head, payload: Payload<'_>) -> Result<()> {
        let idx = head.id;
        let ok = self.io.reqs.get(idx as usize).is_some_and(|s| {
            s.dst == src && matches!(s.state, ReqState::Waiting | ReqState::Cancelled)
        });
        if !ok {
            if let Some((total, xid)) = head.long {
                self.start_xfer(src, xid, total, payload.len() as u64, Target::Discard)?;
            }
            return Err(Error::Corrupt(
                format!("proto: a reply from rank {src} to no request of it ({idx})").into(),
            ));
        }
        if head.flags & F_ERROR == 0 {
            if let Some(l) = self.io.reqs[idx as usize].landing.as_mut() {
                l.write_segs(0, payload.segments());
            }
        }
        match head.long {
            Some((total, xid)) => self.start_xfer(
                src,
                xid,
                total,
                payload.len() as u64,
                Target::Reply { idx, head: *head },
            ),
            None => {
                let why = (head.flags & F_ERROR != 0)
                    .then(|| String::from_utf8_lossy(&payload.to_vec()).into_owned());
                self.io
                    .complete_req(src, idx, head, payload.len() as u64, why);
                Ok(())
            }
        }
    }
}
