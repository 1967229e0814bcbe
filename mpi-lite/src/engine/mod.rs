//! The point-to-point engine (MPI-3.1 chapter 3): matching and the eager and rendezvous
//! protocols, as active messages of [`skifch::proto`] on mpi-lite's channel.
//!
//! Files: this one (the engine's calls, the [`Envelope`], status and modes), `state`
//! (matching tables and requests: the endpoint's context), `protocol` (handler ids, the
//! envelope in a proto header, the handler), `direct` (the direct receive and the C
//! ABI's byte paths), `request` (completion, waits, cancel, probe).
//!
//! ## Matching (§3.5 "Semantics of point-to-point communication")
//! An incoming envelope (context, source, tag) is matched against the posted receives;
//! a receive being posted is matched against the unexpected messages. Exact receives sit
//! in a hash map keyed by the envelope (O(1) for the common case), wildcard ones
//! (`MPI_ANY_SOURCE`/`MPI_ANY_TAG`) in a list; every entry carries a sequence number and
//! the earliest candidate wins, which keeps MPI's non-overtaking order. Unexpected messages
//! are indexed the same way plus a sequence-ordered map for wildcard scans. The channel
//! is FIFO per pair of ranks, so envelopes arrive in send order.
//!
//! ## The direct blocking receive (the common case of a message-rate loop)
//! While no receive is posted, no unexpected message is queued and no rendezvous send is
//! cleared (`State::pending`, three counters), nothing can claim an incoming message
//! before a blocking receive being called now: [`Engine::recv`] then waits in
//! [`Endpoint::progress_take`], which offers it each arriving message first. The first
//! matching eager message is copied from the channel into the receive buffer (no queue
//! entry, request or table update); other messages go
//! to their handlers; a matching synchronous or rendezvous message, or a CTS, ends the
//! wait and the general path (`irecv` + `wait`) finds it queued.
//!
//! ## Protocols (active messages of [`skifch::proto`]; handler ids are mpi-lite's own)
//! * eager (≤ the eager limit, `SKIFMPI_EAGER` bytes): one active message whose proto
//!   header carries the envelope (8 bytes in the common case: context, source and tag
//!   packed in the header's argument) with the payload inline (no separate size message);
//!   sent straight from the user's buffer when its type map is contiguous; copied out of
//!   the ring into the receive buffer (or an unexpected-queue copy);
//! * rendezvous: RTS (envelope, length, send request) → matched: CTS (receive request) →
//!   the data as one proto *long* message whose chunks land straight in the user's receive
//!   buffer (a proto [`Landing`](skifch::proto::Landing) over it; noncontiguous types land
//!   in a temporary and are unpacked); the send completes when its data is out;
//! * `MPI_Ssend` below the eager limit: eager with an ACK on match.
//! * [`Engine::sendrecv`] (`MPI_Sendrecv`, barriers, the collectives' exchanges): an
//!   eager send goes first without a request, then the (direct) receive.
//!
//! ## Progress and deadlock freedom
//! Handlers run inside proto calls; they only match, copy and answer (proto queues an
//! answer that does not fit). Proto's sends drain incoming messages while they wait for
//! room, so two ranks sending to each other never deadlock. The matching state is the
//! endpoint's context ([`skifch::proto`] "Design"): handlers get it as `&mut State`, the
//! engine reads it between proto calls (no lock, no atomic mirror: one thread runs the
//! endpoint). Rendezvous data is pushed by the waiting loops, never by a handler. A lost peer ends
//! every wait with `PeerLost` (never a hang).
#![allow(clippy::too_many_arguments)]

mod defer;
mod direct;
pub mod lock;
mod mprobe;
mod protocol;
mod request;
mod sched;
mod state;
mod threads;

use std::collections::VecDeque;

use skifch::mem::copy_slice;
use skifch::proto::Endpoint;
use skifch::{Driver, Job, Port};

use crate::error::{Error, Result};
use crate::mem::UserBuf;
pub use defer::Deferred;
pub use mprobe::MsgId;
use protocol::{
    env_word, on_message, send_eager, send_reply, H_ACK, H_CANCEL, H_CANCELLED, H_CTS, H_DATA,
    H_EAGER, H_EAGER_S, H_RTS, H_SYNC,
};
pub use sched::{Hook, Local, Range, Sched, Step};
pub use state::State;
use state::{FxMap, Req, ReqKind};
pub use threads::{wrong_thread, Engine, Outcome, Reaper};

/// `MPI_ANY_SOURCE`.
pub const ANY_SOURCE: i32 = -2;
/// `MPI_PROC_NULL`.
pub const PROC_NULL: i32 = -1;
/// `MPI_ANY_TAG`.
pub const ANY_TAG: i32 = -1;
/// `MPI_TAG_UB`: the largest tag.
pub const TAG_UB: i32 = i32::MAX;

/// Default eager limit in bytes (override with `SKIFMPI_EAGER`); capped by what one
/// channel message can carry. Chosen by measurement (MsgRate, 2 pinned ranks, shm, a loaded
/// machine, README "Speed"): above ~4 KiB rendezvous gave the higher message rate (at
/// 16 KiB about 150-480 k msg/s against 32 k with eager: eager messages that arrive before
/// their receive are copied twice and fill the lane), eager the lower latency.
pub const DEFAULT_EAGER: usize = 4 << 10;

/// MPI's envelope of a message (MPI-3.1 §3.2.3; the destination is the receiver): the
/// communicator's context, the sender's rank in it and the tag. Resolved once per call
/// from the communicator and the caller's arguments (`Mpi::route` / `Mpi::want`, which
/// also check them; `CommData::coll_env` for collective traffic), then passed
/// whole; a receive's may hold `ANY_SOURCE`, `ANY_TAG` or `PROC_NULL`. Also the key of
/// the matching tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// Context id (a communicator's point-to-point or collective context).
    pub ctx: u16,
    /// Sender's rank in the communicator (`ANY_SOURCE`/`PROC_NULL` in a receive's).
    pub src: i32,
    /// Tag (`ANY_TAG` in a receive's).
    pub tag: i32,
}

impl std::hash::Hash for Envelope {
    /// One word: one round of the matching tables' hasher per lookup instead of one per
    /// field (two lookups per message of a window: the posting and the match).
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let (c, s, t) = (
            self.ctx as u64,
            self.src as u32 as u64,
            self.tag as u32 as u64,
        );
        h.write_u64(c << 48 ^ s << 32 ^ t);
    }
}

impl Envelope {
    /// Whether a receive of this envelope takes a message of envelope `m`.
    #[inline]
    fn accepts(&self, m: Envelope) -> bool {
        self.ctx == m.ctx
            && (self.src == ANY_SOURCE || self.src == m.src)
            && (self.tag == ANY_TAG || self.tag == m.tag)
    }
    /// Whether it names one sender and one tag (an exact-match table key).
    #[inline]
    fn is_exact(&self) -> bool {
        self.src != ANY_SOURCE && self.tag != ANY_TAG
    }
}

/// What a completed receive (or probe) reports: `MPI_Status`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// Sender's rank in the communicator (`MPI_SOURCE`).
    pub source: i32,
    /// Tag (`MPI_TAG`).
    pub tag: i32,
    /// Error class of this request (`MPI_ERROR`; set by the multiple-completion calls).
    pub error: i32,
    /// Bytes received (`MPI_Get_count` divides by the type size).
    pub bytes: usize,
    /// `MPI_Test_cancelled`.
    pub cancelled: bool,
}

impl Status {
    /// The status of a receive from `MPI_PROC_NULL` (§3.11).
    pub fn proc_null() -> Self {
        Status {
            source: PROC_NULL,
            tag: ANY_TAG,
            ..Status::default()
        }
    }
}

/// How a send completes (§3.4 "Communication Modes").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Standard and ready mode: eager below the limit, rendezvous above.
    Standard,
    /// Synchronous: completes only once the receive is matched.
    Sync,
}

/// Where a directly received message lands (see [`Engine::recv`]): a user buffer of any
/// type map, or plain bytes (the C ABI's contiguous buffers).
pub trait Sink {
    /// Writes the message (its segments, in order) from packed offset 0; bytes past the
    /// capacity are dropped.
    fn put(&mut self, segs: [&[u8]; 2]);
    /// Capacity in packed bytes.
    fn cap(&self) -> usize;
}

impl Sink for UserBuf {
    #[inline]
    fn put(&mut self, segs: [&[u8]; 2]) {
        self.write_segments(segs)
    }
    fn cap(&self) -> usize {
        self.packed_len()
    }
}

impl Sink for [u8] {
    #[inline]
    fn put(&mut self, [a, b]: [&[u8]; 2]) {
        let k = a.len().min(self.len());
        copy_slice(self, &a[..k]);
        let j = b.len().min(self.len() - k);
        copy_slice(&mut self[k..], &b[..j]);
    }
    fn cap(&self) -> usize {
        self.len()
    }
}

/// A request id (index into the engine's request table, or [`SENT`]).
pub type ReqId = u32;

/// The id of every send that completed when it started (a standard-mode eager send: its
/// data is out): no table entry, nothing to release, as MPICH's preallocated completed
/// request. Waits and tests on it return at once with an empty status.
pub const SENT: ReqId = (i32::MAX - 1) as ReqId;

/// Waiting for requests, by the [`Core`] itself or through the [`Engine`] (whose waits
/// depend on the thread level).
pub(crate) trait Waiting {
    fn wait_req(&mut self, id: ReqId) -> Result<Status>;
    fn cancel_req(&mut self, id: ReqId) -> Result<()>;
}

impl<P: Port> Waiting for Core<P> {
    fn wait_req(&mut self, id: ReqId) -> Result<Status> {
        self.wait(id)
    }
    fn cancel_req(&mut self, id: ReqId) -> Result<()> {
        self.cancel(id)
    }
}

impl<P: Port> Waiting for &Engine<P> {
    fn wait_req(&mut self, id: ReqId) -> Result<Status> {
        self.wait(id)
    }
    fn cancel_req(&mut self, id: ReqId) -> Result<()> {
        self.cancel(id)
    }
}

/// The end of an exchange made of requests: waits for posted receive `r` and send `s`
/// (the receive's status); if the send failed to start, cancels the receive first — no
/// receive into the caller's buffer is left behind.
pub(crate) fn finish_pair(w: &mut impl Waiting, r: ReqId, s: Result<ReqId>) -> Result<Status> {
    match s {
        Ok(s) => {
            let st = w.wait_req(r);
            w.wait_req(s)?;
            st
        }
        Err(e) => {
            let _ = w.cancel_req(r);
            let _ = w.wait_req(r);
            Err(e)
        }
    }
}

/// The engine's core: mpi-lite's proto endpoint plus the matching state, used by one
/// thread at a time (the [`Engine`] around it holds it behind a lock).
///
/// After a transport failure (a lost peer, a closed port, a corrupt message) the engine is
/// *broken*: every later call returns that error and nothing is sent, received or written
/// any more. This is what makes borrowed buffers sound: a request either completes (and
/// releases its buffer) or the engine never touches memory again.
pub(crate) struct Core<P: Port> {
    ep: Endpoint<P, State>,
    broken: Option<Error>,
    /// The eager limit (fixed at creation; also in `State` for the handlers).
    eager: usize,
}

impl<P: Port> Core<P> {
    /// An engine on `port` of `job` (mpi-lite's port): an endpoint whose context is the
    /// matching state, with the handlers registered.
    pub fn open<D: Driver<Port = P>>(job: &Job<D>, port: u32) -> Result<Self> {
        let eager = match std::env::var("SKIFMPI_EAGER") {
            Ok(v) => v
                .trim()
                .parse::<usize>()
                .map_err(|_| Error::Arg(format!("SKIFMPI_EAGER={v:?} is not a byte count")))?,
            Err(_) => DEFAULT_EAGER,
        };
        let state = State {
            me: job.rank(),
            size: job.size(),
            eager,
            reqs: Vec::new(),
            free: Vec::new(),
            posted_exact: Default::default(),
            posted_wild: Vec::new(),
            posted_n: 0,
            unex: FxMap::default(),
            unex_n: 0,
            seq: 0,
            cleared: VecDeque::new(),
            bsend_used: 0,
            held: Vec::new(),
            colls: Vec::new(),
            spare: Vec::new(),
            spare_pending: Vec::new(),
            completed: 0,
            rma: Default::default(),
        };
        let mut ep = Endpoint::open_with(job, port, state)?;
        // Eager messages fit one channel message with the longest header (4 words).
        let eager = eager.min(ep.max_inline().saturating_sub(32));
        ep.ctx_mut().eager = eager;
        for h in [
            H_EAGER_S,
            H_EAGER,
            H_SYNC,
            H_RTS,
            H_CTS,
            H_DATA,
            H_ACK,
            H_CANCEL,
            H_CANCELLED,
        ] {
            ep.register(h, on_message::<P>)?;
        }
        crate::win::register(&mut ep)?;
        Ok(Core {
            ep,
            broken: None,
            eager,
        })
    }

    /// The matching state.
    #[inline]
    fn st(&self) -> &State {
        self.ep.ctx()
    }

    /// The matching state, to change.
    #[inline]
    pub(super) fn st_mut(&mut self) -> &mut State {
        self.ep.ctx_mut()
    }

    /// World rank and size.
    pub fn world(&self) -> (u32, u32) {
        let s = self.st();
        (s.me, s.size)
    }

    /// Blocking standard send without a request when the message goes eagerly (the
    /// common small message: one proto send). Else as `isend` + `wait`.
    pub fn send(&mut self, env: Envelope, dst: u32, buf: UserBuf) -> Result<()> {
        self.check()?;
        if buf.packed_len() <= self.eager {
            if let Some(data) = buf.as_contiguous() {
                let r = send_eager(&mut self.ep, env, dst, data);
                return r.map_err(|e| self.fail(e));
            }
        }
        let id = self.isend(env, dst, buf, Mode::Standard, 0)?;
        self.wait(id).map(|_| ())
    }

    /// A blocking exchange (`MPI_Sendrecv` on world ranks; the collectives' step): a send
    /// that goes eagerly goes first, without a request (proto's blocking send serves
    /// incoming messages while a lane is full, so two ranks exchanging never deadlock),
    /// then the receive takes the fast path of [`Engine::recv`]. Larger sends post the
    /// receive, start the send and wait for both.
    pub fn sendrecv(
        &mut self,
        to: Envelope,
        dst: u32,
        sbuf: UserBuf,
        from: Envelope,
        rbuf: UserBuf,
    ) -> Result<Status> {
        if sbuf.packed_len() <= self.eager && sbuf.as_contiguous().is_some() {
            self.send(to, dst, sbuf)?;
            return self.recv(from, rbuf);
        }
        let r = self.irecv(from, rbuf)?;
        let s = self.isend(to, dst, sbuf, Mode::Standard, 0);
        finish_pair(self, r, s)
    }

    /// The error that broke the engine, if any.
    fn check(&self) -> Result<()> {
        match &self.broken {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Marks the engine broken by `e` (see [`Engine`]); returns `e`.
    fn fail(&mut self, e: impl Into<Error>) -> Error {
        let e = e.into();
        self.broken.get_or_insert(e.clone());
        e
    }

    /// Starts a send of `buf` to world rank `dst` as rank `src` of context `ctx`.
    /// `bsend` > 0: a buffered send holding that many bytes of the attached buffer.
    pub fn isend(
        &mut self,
        env: Envelope,
        dst: u32,
        buf: UserBuf,
        mode: Mode,
        bsend: usize,
    ) -> Result<ReqId> {
        self.check()?;
        let len = buf.packed_len();
        // Payloads go straight from user memory; a noncontiguous one is packed once.
        let buf = match buf.as_contiguous() {
            Some(_) => buf,
            None => UserBuf::owned(buf.to_packed()?),
        };
        let eager = len <= self.eager;
        if eager && mode == Mode::Standard {
            // Complete once out (a Bsend's share of the buffer is free again at once).
            let data = buf.as_contiguous().unwrap_or(&[]);
            let r = send_eager(&mut self.ep, env, dst, data);
            r.map_err(|e| self.fail(e))?;
            return Ok(SENT);
        }
        let id = self.st_mut().new_send(dst, bsend);
        let r = if eager {
            let data = buf.as_contiguous().unwrap_or(&[]);
            let args = [env_word(env), id as u64];
            self.ep.send(dst, H_SYNC, env.tag as u32, &args, data)
        } else {
            // The data waits in the request for the CTS (handled by the wait loops).
            if let Some(Req {
                kind: ReqKind::Send { buf: b, .. },
                ..
            }) = self.st_mut().get_mut(id)
            {
                *b = Some(buf);
            }
            let args = [env_word(env), id as u64, len as u64];
            self.ep.send(dst, H_RTS, env.tag as u32, &args, &[])
        };
        r.map_err(|e| self.fail(e))?;
        Ok(id)
    }

    /// Posts a receive of `env` into `buf` (its source may be `ANY_SOURCE`, its tag
    /// `ANY_TAG`). A source of `PROC_NULL` completes at once.
    pub fn irecv(&mut self, env: Envelope, buf: UserBuf) -> Result<ReqId> {
        self.check()?;
        if env.src == PROC_NULL {
            return Ok(self.done_request());
        }
        let id = self.st_mut().new_recv(env, buf);
        self.post_in(env, id)?;
        Ok(id)
    }

    /// Posts receive `id` of `env` (its request built, pending): an unexpected message that
    /// matches is delivered to it at once, else it waits in the posted queues.
    #[inline(always)]
    fn post_in(&mut self, env: Envelope, id: ReqId) -> Result<()> {
        let reply = {
            let s = self.st_mut();
            // Checked here: the call returns a 160-byte `Option<Unex>` even when empty.
            let found = if s.unex_n == 0 {
                None
            } else {
                s.take_unexpected(env)
            };
            match found {
                Some(u) => s.deliver_unexpected(id, u),
                None => {
                    s.posted_n += 1;
                    if env.is_exact() {
                        s.posted_exact.push(env, id);
                    } else {
                        s.posted_wild.push(id);
                    }
                    None
                }
            }
        };
        if let Some(r) = reply {
            send_reply(&mut self.ep.io(), r).map_err(|e| self.fail(e))?;
        }
        Ok(())
    }

    /// One round: pushes queued sends and rendezvous data, handles the messages waiting.
    /// `true` if anything happened.
    pub fn progress(&mut self) -> Result<bool> {
        self.check()?;
        let pushed = self.push_cleared()?;
        let r = self.ep.poll();
        let n = r.map_err(|e| self.fail(e))?;
        let stepped = !self.st().colls.is_empty() && self.advance_colls()?;
        Ok(pushed || n > 0 || stepped)
    }

    /// Pushes everything queued out (progressing meanwhile), for Finalize.
    pub fn flush_all(&mut self) -> Result<()> {
        self.check()?;
        loop {
            if self.push_cleared()? {
                continue;
            }
            let r = self
                .ep
                .progress_until(|ep| ep.queued() == 0 || !ep.ctx().cleared.is_empty(), None);
            r.map_err(|e| self.fail(e))?;
            if self.st().cleared.is_empty() {
                return Ok(());
            }
        }
    }

    /// Blocking receive of exactly `len` bytes on a collective context.
    pub fn coll_recv(&mut self, env: Envelope, len: usize) -> Result<Vec<u8>> {
        let b = UserBuf::owned(crate::mem::zeroed(len)?);
        let id = self.irecv(env, b)?;
        self.wait_until(|s| s.is_done(id))?;
        let r = self.st_mut().release(id);
        if let Some(e) = r.err {
            return Err(*e);
        }
        match r.kind {
            ReqKind::Recv { buf, .. } => Ok(buf.into_owned().unwrap_or_default()),
            _ => Err(Error::Intern("collective receive lost its buffer".into())),
        }
    }
}
