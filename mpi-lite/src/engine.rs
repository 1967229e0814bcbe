//! The point-to-point engine (MPI-3.1 chapter 3): matching and the eager and rendezvous
//! protocols, as active messages of [`skifch::proto`] on mpi-lite's channel.
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
//!   buffer (a proto [`Landing`] over it; noncontiguous types land in a temporary and are
//!   unpacked); the send completes when its data is out;
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

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use skifch::mem::copy_slice;
use skifch::proto::{Am, Endpoint, Io, Landing, Phase, Take};
use skifch::{Driver, Job, Port};

use crate::error::{class, Error, Result};
use crate::mem::UserBuf;

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

/// Multiply-xorshift hasher for envelope keys: SipHash costs more than a whole eager
/// message here, and keys come from our own peers.
#[derive(Default)]
pub(crate) struct FxHasher(u64);
impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64)
    }
    fn write_u16(&mut self, v: u16) {
        self.write_u64(v as u64)
    }
    fn write_i32(&mut self, v: i32) {
        self.write_u64(v as u32 as u64)
    }
}
type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// (context, source rank in the communicator, tag).
type Key = (u16, i32, i32);

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

/// A request id (index into the engine's request table).
pub type ReqId = u32;

#[derive(Debug)]
enum ReqKind {
    /// A send: `buf` kept (rendezvous) until all of it is out.
    Send {
        /// Rendezvous: the data until it is out.
        buf: Option<UserBuf>,
        /// World rank of the destination.
        dst: u32,
        /// Bytes of the attached Bsend buffer to give back on completion.
        bsend: usize,
    },
    /// A receive, posted or matched.
    Recv {
        ctx: u16,
        src: i32,
        tag: i32,
        buf: UserBuf,
        /// Rendezvous: total bytes announced and bytes arrived.
        total: usize,
        got: usize,
    },
    /// Completed at creation (PROC_NULL, buffered sends already copied, …).
    Nothing,
}

#[derive(Debug)]
struct Req {
    kind: ReqKind,
    done: bool,
    /// `MPI_Request_free` was called: drop the slot when done.
    freed: bool,
    status: Status,
    err: Option<Error>,
    /// Order of posting (matching picks the earliest).
    seq: u64,
}

impl Req {
    /// A receive matched a `len`-byte message from `src` with `tag` into `cap` bytes: its
    /// status, and `MPI_ERR_TRUNCATE` when the message is longer.
    fn matched(&mut self, src: i32, tag: i32, len: usize, cap: usize) {
        self.status = Status {
            source: src,
            tag,
            error: 0,
            bytes: len.min(cap),
            cancelled: false,
        };
        if len > cap {
            self.err = Some(Error::Truncate { len, cap });
            self.status.error = class::TRUNCATE;
        }
    }
}

/// The payload of an unexpected eager message: inline when small, so the common small
/// message costs no allocation.
#[derive(Debug)]
enum Stash {
    Inline([u8; 128], u8),
    Heap(Vec<u8>),
}

impl Stash {
    fn new([a, b]: [&[u8]; 2]) -> Stash {
        let n = a.len() + b.len();
        if n <= 128 {
            let mut v = [0u8; 128];
            v[..a.len()].copy_from_slice(a);
            v[a.len()..n].copy_from_slice(b);
            Stash::Inline(v, n as u8)
        } else {
            let mut v = Vec::with_capacity(n);
            v.extend_from_slice(a);
            v.extend_from_slice(b);
            Stash::Heap(v)
        }
    }
    fn as_slice(&self) -> &[u8] {
        match self {
            Stash::Inline(v, n) => &v[..*n as usize],
            Stash::Heap(v) => v,
        }
    }
    fn len(&self) -> usize {
        self.as_slice().len()
    }
}

/// A message that arrived before its receive was posted.
#[derive(Debug)]
enum Unex {
    Eager {
        src: i32,
        tag: i32,
        ctx: u16,
        data: Stash,
        /// Sync sends: (world rank, request) to ACK when matched.
        ack: Option<(u32, u32)>,
    },
    Rts {
        src: i32,
        tag: i32,
        ctx: u16,
        world: u32,
        sreq: u32,
        len: usize,
    },
}

impl Unex {
    fn envelope(&self) -> (u16, i32, i32, usize) {
        match self {
            Unex::Eager {
                ctx,
                src,
                tag,
                data,
                ..
            } => (*ctx, *src, *tag, data.len()),
            Unex::Rts {
                ctx, src, tag, len, ..
            } => (*ctx, *src, *tag, *len),
        }
    }
}

/// A reply decided while matching and sent after (through proto's non-blocking send half).
#[derive(Debug, Clone, Copy)]
enum Reply {
    Cts { dst: u32, sreq: u32, rreq: u32 },
    Ack { dst: u32, sreq: u32 },
}

// Handler ids on mpi-lite's endpoint.
/// Eager, envelope packed in `arg`: context (8 bits) | source (8) | tag (16).
const H_EAGER_S: u8 = 1;
/// Eager: `arg` = tag, `args[0]` = envelope ([`env`]).
const H_EAGER: u8 = 2;
/// Synchronous eager: `arg` = tag, `args` = [envelope, send request].
const H_SYNC: u8 = 3;
/// Request to send: `arg` = tag, `args` = [envelope, send request, length].
const H_RTS: u8 = 4;
/// Clear to send: `arg` = send request, `args[0]` = receive request.
const H_CTS: u8 = 5;
/// Rendezvous data for receive request `arg` (a proto long message).
const H_DATA: u8 = 6;
/// A synchronous send was matched: `arg` = send request.
const H_ACK: u8 = 7;

/// Context and source rank in one argument word.
fn env(ctx: u16, src: i32) -> u64 {
    ctx as u64 | (src as u32 as u64) << 16
}

fn unenv(v: u64) -> (u16, i32) {
    (v as u16, (v >> 16) as u32 as i32)
}

/// Matching state and protocol bookkeeping: the context of mpi-lite's endpoint, so the
/// handlers get it as `&mut` (no lock: handlers run inside this rank's own proto calls).
pub struct State {
    me: u32,
    size: u32,
    eager: usize,
    reqs: Vec<Option<Req>>,
    free: Vec<u32>,
    posted_exact: FxMap<Key, VecDeque<ReqId>>,
    posted_wild: Vec<ReqId>,
    /// Receives in `posted_exact` and `posted_wild` (none: a blocking receive may take the
    /// next matching message straight from the channel).
    posted_n: usize,
    /// Unexpected messages per envelope, each with its arrival number.
    unex: FxMap<Key, VecDeque<(u64, Unex)>>,
    /// Unexpected messages in all queues.
    unex_n: usize,
    seq: u64,
    /// Rendezvous sends whose CTS came: (send request, receive request).
    cleared: VecDeque<(u32, u32)>,
    /// Bytes of the Bsend buffer in use.
    bsend_used: usize,
}

/// The engine: mpi-lite's proto endpoint plus the matching state.
///
/// After a transport failure (a lost peer, a closed port, a corrupt message) the engine is
/// *broken*: every later call returns that error and nothing is sent, received or written
/// any more. This is what makes borrowed buffers sound: a request either completes (and
/// releases its buffer) or the engine never touches memory again.
pub struct Engine<P: Port> {
    ep: Endpoint<P, State>,
    broken: Option<Error>,
    /// The eager limit (fixed at creation; also in `State` for the handlers).
    eager: usize,
}

fn matches(want_src: i32, want_tag: i32, src: i32, tag: i32) -> bool {
    (want_src == ANY_SOURCE || want_src == src) && (want_tag == ANY_TAG || want_tag == tag)
}

/// Sends a CTS or ACK; never waits (queued behind a full lane).
fn send_reply<P: Port>(io: &mut Io<'_, P>, r: Reply) -> skifch::Result<()> {
    match r {
        Reply::Cts { dst, sreq, rreq } => io.send(dst, H_CTS, sreq, &[rreq as u64], &[]),
        Reply::Ack { dst, sreq } => io.send(dst, H_ACK, sreq, &[], &[]),
    }
}

/// Sends an eager message: the envelope packed in the 8-byte header when it fits.
fn send_eager<P: Port>(
    ep: &mut Endpoint<P, State>,
    dst: u32,
    ctx: u16,
    src: i32,
    tag: i32,
    data: &[u8],
) -> skifch::Result<()> {
    if ctx < 256 && (0..256).contains(&src) && (0..65536).contains(&tag) {
        let a = ctx as u32 | (src as u32) << 8 | (tag as u32) << 16;
        ep.send_short(dst, H_EAGER_S, a, data)
    } else {
        ep.send(dst, H_EAGER, tag as u32, &[env(ctx, src)], data)
    }
}

/// The envelope (context, source, tag) of an eager message without an ACK (`H_EAGER_S`,
/// `H_EAGER`), else `None`.
#[inline(always)]
fn eager_envelope(am: &Am<'_>) -> Option<(u16, i32, i32)> {
    match am.handler() {
        H_EAGER_S => {
            let a = am.arg();
            Some((
                (a & 0xff) as u16,
                ((a >> 8) & 0xff) as i32,
                (a >> 16) as i32,
            ))
        }
        H_EAGER => {
            let (c, s) = unenv(am.args().first().copied().unwrap_or(0));
            Some((c, s, am.arg() as i32))
        }
        _ => None,
    }
}

/// The handler of every mpi-lite message (runs inside proto calls of this rank, with the
/// matching state as the endpoint's context).
fn on_message<P: Port>(s: &mut State, io: &mut Io<'_, P>, am: &Am<'_>) -> skifch::Result<()> {
    let world = am.src();
    let args = am.args();
    let arg = |i: usize| args.get(i).copied().unwrap_or(0);
    let reply = match am.handler() {
        H_EAGER_S | H_EAGER | H_SYNC => {
            let (ctx, src, tag) = eager_envelope(am).unwrap_or_else(|| {
                let (c, s) = unenv(arg(0));
                (c, s, am.arg() as i32)
            });
            let ack = (am.handler() == H_SYNC).then_some((world, arg(1) as u32));
            let p = am.payload();
            match s.match_posted(ctx, src, tag) {
                Some(id) => {
                    let [a, b] = p.segments();
                    s.fill_eager(id, src, tag, p.len(), |buf| {
                        buf.write_packed(0, a);
                        buf.write_packed(a.len(), b);
                    });
                    ack.map(|(dst, sreq)| Reply::Ack { dst, sreq })
                }
                None => {
                    s.push_unexpected(Unex::Eager {
                        src,
                        tag,
                        ctx,
                        data: Stash::new(p.segments()),
                        ack,
                    });
                    None
                }
            }
        }
        H_RTS => {
            let ((ctx, src), tag) = (unenv(arg(0)), am.arg() as i32);
            let (sreq, len) = (arg(1) as u32, arg(2) as usize);
            match s.match_posted(ctx, src, tag) {
                Some(id) => s.start_rndv(id, src, tag, world, sreq, len),
                None => {
                    s.push_unexpected(Unex::Rts {
                        src,
                        tag,
                        ctx,
                        world,
                        sreq,
                        len,
                    });
                    None
                }
            }
        }
        H_CTS => {
            s.cleared.push_back((am.arg(), arg(0) as u32));
            None
        }
        H_DATA => {
            let id = am.arg();
            let Some(Req {
                kind: ReqKind::Recv { buf, got, .. },
                ..
            }) = s.get_mut(id)
            else {
                return Err(skifch::Error::InvalidArgument(
                    format!("mpi-lite: data for unknown receive {id}").into(),
                ));
            };
            match am.phase() {
                Phase::Whole => {
                    let [a, b] = am.payload().segments();
                    buf.write_packed(0, a);
                    buf.write_packed(a.len(), b);
                    *got = a.len() + b.len();
                    s.complete(id);
                }
                Phase::LongStart { total } => {
                    // Straight into the user's memory when it is one run, else a temporary.
                    let l = buf
                        .landing()
                        .unwrap_or_else(|| Landing::vec(total as usize));
                    am.place(l);
                }
                Phase::LongDone { total } => {
                    if let Some(v) = am.take_landing().and_then(Landing::into_vec) {
                        buf.write_packed(0, &v);
                    }
                    *got = total as usize;
                    s.complete(id);
                }
            }
            None
        }
        H_ACK => {
            s.complete(am.arg());
            None
        }
        h => {
            return Err(skifch::Error::InvalidArgument(
                format!("mpi-lite: unknown message kind {h} from rank {world}").into(),
            ))
        }
    };
    // From a handler proto never blocks: a reply that does not fit is queued.
    match reply {
        Some(r) => send_reply(io, r),
        None => Ok(()),
    }
}

impl<P: Port> Engine<P> {
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
            posted_exact: FxMap::default(),
            posted_wild: Vec::new(),
            posted_n: 0,
            unex: FxMap::default(),
            unex_n: 0,
            seq: 0,
            cleared: VecDeque::new(),
            bsend_used: 0,
        };
        let mut ep = Endpoint::open_with(job, port, state)?;
        // Eager messages fit one channel message with the longest header (4 words).
        let eager = eager.min(ep.max_inline().saturating_sub(32));
        ep.ctx_mut().eager = eager;
        for h in [H_EAGER_S, H_EAGER, H_SYNC, H_RTS, H_CTS, H_DATA, H_ACK] {
            ep.register(h, on_message::<P>)?;
        }
        Ok(Engine {
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
    fn st_mut(&mut self) -> &mut State {
        self.ep.ctx_mut()
    }

    /// World rank and size.
    pub fn world(&self) -> (u32, u32) {
        let s = self.st();
        (s.me, s.size)
    }

    /// The eager limit in bytes.
    pub fn eager_limit(&self) -> usize {
        self.eager
    }

    /// Blocking standard send without a request when the message goes eagerly (the
    /// common small message: one proto send). Else as `isend` + `wait`.
    pub fn send(&mut self, ctx: u16, src: i32, dst: u32, tag: i32, buf: UserBuf) -> Result<()> {
        self.check()?;
        if buf.packed_len() <= self.eager {
            if let Some(data) = buf.as_contiguous() {
                let r = send_eager(&mut self.ep, dst, ctx, src, tag, data);
                return r.map_err(|e| self.fail(e));
            }
        }
        let id = self.isend(ctx, src, dst, tag, buf, Mode::Standard, 0)?;
        self.wait(id).map(|_| ())
    }

    /// Blocking receive: an eager message already waiting in the unexpected queue is
    /// copied out without a request; else, when no other receive is posted
    /// (so none can have a prior claim, §3.5), the next matching eager message is copied
    /// straight from the channel into `buf` (`recv_direct`). Otherwise (and for
    /// synchronous or rendezvous messages) as `irecv` + `wait`.
    pub fn recv(&mut self, ctx: u16, src: i32, tag: i32, mut buf: UserBuf) -> Result<Status> {
        self.check()?;
        if src != PROC_NULL && self.st().pending() == 0 {
            // Nothing posted, queued or cleared.
            if let Some(r) = self.recv_direct(ctx, src, tag, &mut buf)? {
                return r;
            }
        } else if src != PROC_NULL {
            let s = self.st_mut();
            let found = s.find_unexpected(ctx, src, tag);
            if let Some(key) = found {
                let q = s.unex.get_mut(&key).expect("found");
                if let Some((
                    _,
                    Unex::Eager {
                        src,
                        tag,
                        data,
                        ack: None,
                        ..
                    },
                )) = q.front()
                {
                    let (src, tag, len) = (*src, *tag, data.len());
                    buf.write_packed(0, data.as_slice());
                    q.pop_front();
                    s.unex_n -= 1;
                    let cap = buf.packed_len();
                    if len > cap {
                        return Err(Error::Truncate { len, cap });
                    }
                    return Ok(Status {
                        source: src,
                        tag,
                        error: 0,
                        bytes: len,
                        cancelled: false,
                    });
                }
            }
            // A matching synchronous or rendezvous message waits in the queue: that one is
            // ours, taken by the general path.
            let direct = found.is_none() && s.posted_n == 0 && s.cleared.is_empty();
            if direct {
                if let Some(r) = self.recv_direct(ctx, src, tag, &mut buf)? {
                    return r;
                }
            }
        }
        let id = self.irecv(ctx, src, tag, buf)?;
        self.wait(id)
    }

    /// The C ABI's blocking send of contiguous bytes: sent at once when it goes eagerly
    /// (`true`); `false` (nothing done) for a message above the eager limit.
    #[inline]
    pub fn try_send_eager(
        &mut self,
        ctx: u16,
        src: i32,
        dst: u32,
        tag: i32,
        data: &[u8],
    ) -> Result<bool> {
        self.check()?;
        if data.len() > self.eager {
            return Ok(false);
        }
        let r = send_eager(&mut self.ep, dst, ctx, src, tag, data);
        r.map_err(|e| self.fail(e))?;
        Ok(true)
    }

    /// The C ABI's blocking receive into contiguous bytes when it can go direct (nothing
    /// posted, queued or cleared, and the next matching message is eager; see
    /// [`Engine::recv`]): its status or `MPI_ERR_TRUNCATE`. `None`: nothing was received,
    /// use [`Engine::recv`].
    #[inline]
    pub fn try_recv_bytes(
        &mut self,
        ctx: u16,
        src: i32,
        tag: i32,
        buf: &mut [u8],
    ) -> Result<Option<Status>> {
        self.check()?;
        if self.st().pending() != 0 {
            return Ok(None);
        }
        match self.recv_direct(ctx, src, tag, buf)? {
            Some(r) => r.map(Some),
            None => Ok(None),
        }
    }

    /// Waits for the next incoming message that concerns a receive of (`ctx`, `src`,
    /// `tag`), dispatching the others as usual. A matching eager message is copied from
    /// the channel into `buf` (no queue, no request, no lock): `Some` with its status, or
    /// `MPI_ERR_TRUNCATE`. `None` when something else must be handled first — a matching
    /// synchronous or rendezvous message (now in the unexpected queue), or a CTS whose
    /// data must go out — and the caller continues with the general path.
    ///
    /// Called only while no receive is posted and no unexpected message matches: the
    /// channel is FIFO per pair and handlers run only inside this wait, so the first
    /// matching message to arrive is the one MPI's order gives this receive.
    fn recv_direct<S: Sink + ?Sized>(
        &mut self,
        ctx: u16,
        src: i32,
        tag: i32,
        buf: &mut S,
    ) -> Result<Option<Result<Status>>> {
        let mut got = None;
        let r = self.ep.progress_take(
            |am| {
                if let Some((c, s, t)) = eager_envelope(am) {
                    if c != ctx || !matches(src, tag, s, t) {
                        return Take::Pass;
                    }
                    let p = am.payload();
                    buf.put(p.segments());
                    got = Some((s, t, p.len()));
                    return Take::Mine;
                }
                match am.handler() {
                    H_SYNC | H_RTS => {
                        let (c, s) = unenv(am.args().first().copied().unwrap_or(0));
                        if c == ctx && matches(src, tag, s, am.arg() as i32) {
                            Take::PassStop
                        } else {
                            Take::Pass
                        }
                    }
                    H_CTS => Take::PassStop,
                    _ => Take::Pass,
                }
            },
            None,
        );
        r.map_err(|e| self.fail(e))?;
        if let Some(e) = self.ep.take_error() {
            return Err(self.fail(e));
        }
        Ok(got.map(|(source, tag, len)| {
            let cap = buf.cap();
            if len > cap {
                return Err(Error::Truncate { len, cap });
            }
            Ok(Status {
                source,
                tag,
                error: 0,
                bytes: len,
                cancelled: false,
            })
        }))
    }

    /// A blocking exchange (`MPI_Sendrecv` on world ranks; the collectives' step): a send
    /// that goes eagerly goes first, without a request (proto's blocking send serves
    /// incoming messages while a lane is full, so two ranks exchanging never deadlock),
    /// then the receive takes the fast path of [`Engine::recv`]. Larger sends post the
    /// receive, start the send and wait for both.
    pub fn sendrecv(
        &mut self,
        ctx: u16,
        me: i32,
        dst: u32,
        stag: i32,
        sbuf: UserBuf,
        src: i32,
        rtag: i32,
        rbuf: UserBuf,
    ) -> Result<Status> {
        if sbuf.packed_len() <= self.eager && sbuf.as_contiguous().is_some() {
            self.send(ctx, me, dst, stag, sbuf)?;
            return self.recv(ctx, src, rtag, rbuf);
        }
        let r = self.irecv(ctx, src, rtag, rbuf)?;
        let s = match self.isend(ctx, me, dst, stag, sbuf, Mode::Standard, 0) {
            Ok(s) => s,
            Err(e) => {
                // Do not leave a receive into the caller's buffer behind.
                let _ = self.cancel(r);
                let _ = self.wait(r);
                return Err(e);
            }
        };
        let st = self.wait(r);
        self.wait(s)?;
        st
    }

    /// Bytes of the attached Bsend buffer in use.
    pub fn bsend_used(&self) -> usize {
        self.st().bsend_used
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
        ctx: u16,
        src: i32,
        dst: u32,
        tag: i32,
        buf: UserBuf,
        mode: Mode,
        bsend: usize,
    ) -> Result<ReqId> {
        self.check()?;
        let len = buf.packed_len();
        // Payloads go straight from user memory; a noncontiguous one is packed once.
        let buf = match buf.as_contiguous() {
            Some(_) => buf,
            None => UserBuf::owned(buf.to_packed()),
        };
        let eager = len <= self.eager;
        if eager && mode == Mode::Standard {
            // Complete once out: send first, then record a finished request (one lock).
            let data = buf.as_contiguous().unwrap_or(&[]);
            let r = send_eager(&mut self.ep, dst, ctx, src, tag, data);
            r.map_err(|e| self.fail(e))?;
            let s = self.st_mut();
            let id = s.new_send(dst, bsend);
            s.complete(id);
            return Ok(id);
        }
        let id = self.st_mut().new_send(dst, bsend);
        let r = if eager {
            let data = buf.as_contiguous().unwrap_or(&[]);
            self.ep
                .send(dst, H_SYNC, tag as u32, &[env(ctx, src), id as u64], data)
        } else {
            // The data waits in the request for the CTS (handled by the wait loops).
            if let Some(Req {
                kind: ReqKind::Send { buf: b, .. },
                ..
            }) = self.st_mut().get_mut(id)
            {
                *b = Some(buf);
            }
            self.ep.send(
                dst,
                H_RTS,
                tag as u32,
                &[env(ctx, src), id as u64, len as u64],
                &[],
            )
        };
        r.map_err(|e| self.fail(e))?;
        Ok(id)
    }

    /// Posts a receive into `buf` from rank `src` (or `ANY_SOURCE`) of context `ctx` with
    /// `tag` (or `ANY_TAG`). `src == PROC_NULL` completes at once.
    pub fn irecv(&mut self, ctx: u16, src: i32, tag: i32, buf: UserBuf) -> Result<ReqId> {
        self.check()?;
        let (id, reply) = {
            let s = self.st_mut();
            let seq = s.next_seq();
            let id = s.alloc(Req {
                kind: ReqKind::Nothing,
                done: false,
                freed: false,
                status: Status::default(),
                err: None,
                seq,
            });
            if src == PROC_NULL {
                let r = s.get_mut(id).expect("fresh");
                r.status = Status::proc_null();
                r.done = true;
                return Ok(id);
            }
            let found = s.take_unexpected(ctx, src, tag);
            if let Some(r) = s.get_mut(id) {
                r.kind = ReqKind::Recv {
                    ctx,
                    src,
                    tag,
                    buf,
                    total: 0,
                    got: 0,
                };
            }
            let reply = match found {
                Some(u) => s.deliver_unexpected(id, u),
                None => {
                    s.posted_n += 1;
                    if src == ANY_SOURCE || tag == ANY_TAG {
                        s.posted_wild.push(id);
                    } else {
                        s.posted_exact
                            .entry((ctx, src, tag))
                            .or_default()
                            .push_back(id);
                    }
                    None
                }
            };
            (id, reply)
        };
        if let Some(r) = reply {
            send_reply(&mut self.ep.io(), r).map_err(|e| self.fail(e))?;
        }
        Ok(id)
    }

    /// A completed request that needs no communication (PROC_NULL sends, …).
    pub fn done_request(&mut self) -> ReqId {
        let s = self.st_mut();
        let seq = s.next_seq();
        s.alloc(Req {
            kind: ReqKind::Nothing,
            done: true,
            freed: false,
            status: Status::proc_null(),
            err: None,
            seq,
        })
    }

    /// `true` if `id` names a live request.
    pub fn is_request(&self, id: ReqId) -> bool {
        self.st().is_request(id)
    }

    /// `true` if the request is complete (without releasing it).
    pub fn is_done(&self, id: ReqId) -> bool {
        self.st().is_done(id)
    }

    /// `MPI_Test` on one request: `None` while pending; when complete, releases the
    /// request and returns its status, or its error.
    pub fn test(&mut self, id: ReqId) -> Result<Option<Status>> {
        let s = self.st_mut();
        match s.get(id) {
            None => Err(Error::Request(format!("request {id} does not exist"))),
            Some(r) if !r.done => Ok(None),
            Some(_) => {
                let r = s.release(id);
                match r.err {
                    Some(e) => Err(e),
                    None => Ok(Some(r.status)),
                }
            }
        }
    }

    /// `MPI_Request_get_status`: one round of progress, then the status of a complete
    /// request (or its error) without releasing it; `None` while pending.
    pub fn peek(&mut self, id: ReqId) -> Result<Option<Status>> {
        if !self.is_done(id) {
            self.progress()?;
        }
        let s = self.st();
        match s.get(id) {
            None => Err(Error::Request(format!("request {id} does not exist"))),
            Some(r) if !r.done => Ok(None),
            Some(r) => match &r.err {
                Some(e) => Err(e.clone()),
                None => Ok(Some(r.status)),
            },
        }
    }

    /// `MPI_Wait`: progresses until `id` completes, then as [`Engine::test`].
    pub fn wait(&mut self, id: ReqId) -> Result<Status> {
        // Already complete (eager sends, unexpected receives): one lock, no progress.
        if let Some(r) = self.test_done(id) {
            return r;
        }
        self.wait_until(|s| s.is_done(id) || !s.is_request(id))?;
        self.test(id)?
            .ok_or_else(|| Error::Intern("request not complete after wait".into()))
    }

    /// The outcome of `id` if it is complete (releasing it), else `None`.
    fn test_done(&mut self, id: ReqId) -> Option<Result<Status>> {
        let s = self.st_mut();
        if !s.is_done(id) {
            return None;
        }
        let r = s.release(id);
        Some(match r.err {
            Some(e) => Err(e),
            None => Ok(r.status),
        })
    }

    /// Progresses until `done(state)`; `PeerLost` and other transport errors end it (and
    /// break the engine).
    pub fn wait_until(&mut self, mut done: impl FnMut(&State) -> bool) -> Result<()> {
        self.check()?;
        loop {
            if done(self.st()) {
                return Ok(());
            }
            if self.push_cleared()? {
                continue;
            }
            // Proto's wait: service messages (fixed spin, then sleep on the channel) until
            // ours is done or a rendezvous send may go.
            let r = self.ep.progress_until(
                |ep| {
                    let s = ep.ctx();
                    done(s) || !s.cleared.is_empty()
                },
                None,
            );
            r.map_err(|e| self.fail(e))?;
            if let Some(e) = self.ep.take_error() {
                return Err(self.fail(e));
            }
        }
    }

    /// Sends the data of one rendezvous send whose CTS came (a proto long message that
    /// lands in the receiver's buffer); `false` if none is waiting.
    fn push_cleared(&mut self) -> Result<bool> {
        if self.st().cleared.is_empty() {
            return Ok(false);
        }
        let next = {
            let s = self.st_mut();
            match s.cleared.pop_front() {
                None => None,
                Some((sreq, rreq)) => match s.get_mut(sreq) {
                    Some(Req {
                        kind: ReqKind::Send { buf, dst, .. },
                        ..
                    }) => Some((sreq, rreq, *dst, buf.take())),
                    _ => return Err(Error::Intern(format!("CTS for unknown send {sreq}"))),
                },
            }
        };
        let Some((sreq, rreq, dst, buf)) = next else {
            return Ok(false);
        };
        let data = buf.as_ref().and_then(|b| b.as_contiguous()).unwrap_or(&[]);
        let r = self.ep.send(dst, H_DATA, rreq, &[], data);
        r.map_err(|e| self.fail(e))?;
        drop(buf);
        self.st_mut().complete(sreq);
        Ok(true)
    }

    /// `MPI_Request_free`: the request is released when it completes.
    pub fn request_free(&mut self, id: ReqId) -> Result<()> {
        let s = self.st_mut();
        match s.get_mut(id) {
            None => Err(Error::Request(format!("request {id} does not exist"))),
            Some(r) if r.done => {
                s.release(id);
                Ok(())
            }
            Some(r) => {
                r.freed = true;
                Ok(())
            }
        }
    }

    /// `MPI_Cancel`: a receive not yet matched completes as cancelled; anything else
    /// (sends, matched receives) completes normally (the standard allows that).
    pub fn cancel(&mut self, id: ReqId) -> Result<()> {
        let s = self.st_mut();
        let Some(r) = s.get(id) else {
            return Err(Error::Request(format!("request {id} does not exist")));
        };
        if let ReqKind::Recv {
            ctx,
            src,
            tag,
            total: 0,
            ..
        } = r.kind
        {
            if r.done {
                return Ok(());
            }
            let removed = if src == ANY_SOURCE || tag == ANY_TAG {
                let i = s.posted_wild.iter().position(|&x| x == id);
                i.map(|i| s.posted_wild.remove(i)).is_some()
            } else {
                s.remove_posted_exact((ctx, src, tag), id)
            };
            if removed {
                s.posted_n -= 1;
                let r = s.get_mut(id).expect("live");
                r.status.cancelled = true;
                s.complete(id);
            }
        }
        Ok(())
    }

    /// `MPI_Iprobe`: the envelope of the first unexpected message matching, after one
    /// round of progress.
    pub fn iprobe(&mut self, ctx: u16, src: i32, tag: i32) -> Result<Option<Status>> {
        if src == PROC_NULL {
            return Ok(Some(Status::proc_null()));
        }
        if let Some(s) = self.st_mut().peek_unexpected(ctx, src, tag) {
            return Ok(Some(s));
        }
        self.progress()?;
        Ok(self.st_mut().peek_unexpected(ctx, src, tag))
    }

    /// `MPI_Probe`: waits for a matching message and returns its envelope.
    pub fn probe(&mut self, ctx: u16, src: i32, tag: i32) -> Result<Status> {
        if src == PROC_NULL {
            return Ok(Status::proc_null());
        }
        let mut found = None;
        self.wait_until(|s| {
            found = s.peek_unexpected(ctx, src, tag);
            found.is_some()
        })?;
        found.ok_or_else(|| Error::Intern("probe ended without a message".into()))
    }

    /// One round: pushes queued sends and rendezvous data, handles the messages waiting.
    /// `true` if anything happened.
    pub fn progress(&mut self) -> Result<bool> {
        self.check()?;
        let pushed = self.push_cleared()?;
        let r = self.ep.poll();
        let n = r.map_err(|e| self.fail(e))?;
        Ok(pushed || n > 0)
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
    pub fn coll_recv(&mut self, ctx: u16, src: i32, tag: i32, len: usize) -> Result<Vec<u8>> {
        let b = UserBuf::owned(vec![0u8; len]);
        let id = self.irecv(ctx, src, tag, b)?;
        self.wait_until(|s| s.is_done(id))?;
        let r = self.st_mut().release(id);
        if let Some(e) = r.err {
            return Err(e);
        }
        match r.kind {
            ReqKind::Recv { buf, .. } => Ok(buf.into_owned().unwrap_or_default()),
            _ => Err(Error::Intern("collective receive lost its buffer".into())),
        }
    }
}

impl State {
    /// Posted receives + unexpected messages + cleared rendezvous sends: 0 lets a blocking
    /// receive take the next matching message straight from the channel.
    #[inline]
    fn pending(&self) -> usize {
        self.posted_n + self.unex_n + self.cleared.len()
    }

    /// A new send request to world rank `dst` holding `bsend` bytes of the Bsend buffer.
    fn new_send(&mut self, dst: u32, bsend: usize) -> ReqId {
        let seq = self.next_seq();
        self.bsend_used += bsend;
        self.alloc(Req {
            kind: ReqKind::Send {
                buf: None,
                dst,
                bsend,
            },
            done: false,
            freed: false,
            status: Status::default(),
            err: None,
            seq,
        })
    }

    /// `true` if request `id` is complete (not yet released).
    pub fn is_done(&self, id: ReqId) -> bool {
        self.get(id).is_some_and(|r| r.done)
    }

    /// `true` if `id` names a live request.
    pub fn is_request(&self, id: ReqId) -> bool {
        self.get(id).is_some()
    }

    /// Bytes of the attached Bsend buffer in use.
    pub fn bsend_used(&self) -> usize {
        self.bsend_used
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn alloc(&mut self, r: Req) -> ReqId {
        match self.free.pop() {
            Some(i) => {
                self.reqs[i as usize] = Some(r);
                i
            }
            None => {
                self.reqs.push(Some(r));
                (self.reqs.len() - 1) as u32
            }
        }
    }

    fn get(&self, id: ReqId) -> Option<&Req> {
        self.reqs.get(id as usize).and_then(|r| r.as_ref())
    }

    fn get_mut(&mut self, id: ReqId) -> Option<&mut Req> {
        self.reqs.get_mut(id as usize).and_then(|r| r.as_mut())
    }

    fn release(&mut self, id: ReqId) -> Req {
        let r = self.reqs[id as usize].take().expect("live request");
        self.free.push(id);
        r
    }

    /// Marks `id` complete; drops it if the user already freed it.
    fn complete(&mut self, id: ReqId) {
        let Some(r) = self.get_mut(id) else { return };
        r.done = true;
        let bs = match &mut r.kind {
            ReqKind::Send { bsend, buf, .. } => {
                *buf = None;
                std::mem::take(bsend)
            }
            _ => 0,
        };
        let freed = r.freed;
        self.bsend_used -= bs;
        if freed {
            self.release(id);
        }
    }

    /// Fills receive `id` with an eager payload of `len` bytes via `fill`, completes it.
    fn fill_eager(
        &mut self,
        id: ReqId,
        src: i32,
        tag: i32,
        len: usize,
        fill: impl FnOnce(&mut UserBuf),
    ) {
        let Some(r) = self.get_mut(id) else { return };
        if let ReqKind::Recv { buf, .. } = &mut r.kind {
            fill(buf);
            let cap = buf.packed_len();
            r.matched(src, tag, len, cap);
        }
        self.complete(id);
    }

    /// Receive `id` matched an RTS: the CTS to send; DATA completes it.
    fn start_rndv(
        &mut self,
        id: ReqId,
        src: i32,
        tag: i32,
        world: u32,
        sreq: u32,
        len: usize,
    ) -> Option<Reply> {
        let r = self.get_mut(id)?;
        if let ReqKind::Recv { buf, total, .. } = &mut r.kind {
            *total = len;
            // On truncation the data still comes (the sender cannot be stopped); the
            // excess is dropped.
            let cap = buf.packed_len();
            r.matched(src, tag, len, cap);
        }
        Some(Reply::Cts {
            dst: world,
            sreq,
            rreq: id,
        })
    }

    /// Delivers an unexpected message to receive `id`; the reply to send, if any.
    fn deliver_unexpected(&mut self, id: ReqId, u: Unex) -> Option<Reply> {
        match u {
            Unex::Eager {
                src,
                tag,
                data,
                ack,
                ..
            } => {
                let len = data.len();
                self.fill_eager(id, src, tag, len, |b| b.write_packed(0, data.as_slice()));
                ack.map(|(dst, sreq)| Reply::Ack { dst, sreq })
            }
            Unex::Rts {
                src,
                tag,
                world,
                sreq,
                len,
                ..
            } => self.start_rndv(id, src, tag, world, sreq, len),
        }
    }

    fn remove_posted_exact(&mut self, key: Key, id: ReqId) -> bool {
        let Some(q) = self.posted_exact.get_mut(&key) else {
            return false;
        };
        let Some(i) = q.iter().position(|&x| x == id) else {
            return false;
        };
        q.remove(i);
        true
    }

    /// The earliest posted receive matching an incoming envelope, removed from the queues.
    fn match_posted(&mut self, ctx: u16, src: i32, tag: i32) -> Option<ReqId> {
        let key = (ctx, src, tag);
        let exact = self.posted_exact.get(&key).and_then(|q| q.front().copied());
        let wild = self.posted_wild.iter().position(|&id| {
            matches!(self.get(id), Some(Req { kind: ReqKind::Recv { ctx: c, src: s, tag: t, .. }, .. })
                if *c == ctx && matches(*s, *t, src, tag))
        });
        if exact.is_some() || wild.is_some() {
            self.posted_n -= 1;
        }
        let seq = |id: ReqId| self.get(id).map_or(u64::MAX, |r| r.seq);
        match (exact, wild) {
            (Some(e), Some(w)) if seq(self.posted_wild[w]) < seq(e) => {
                Some(self.posted_wild.remove(w))
            }
            (Some(e), _) => {
                // Empty queues stay in the map: no allocation per message for a reused key.
                self.posted_exact.get_mut(&key).and_then(|q| q.pop_front());
                Some(e)
            }
            (None, Some(w)) => Some(self.posted_wild.remove(w)),
            (None, None) => None,
        }
    }

    fn push_unexpected(&mut self, u: Unex) {
        let (ctx, src, tag, _) = u.envelope();
        let seq = self.next_seq();
        self.unex_n += 1;
        self.unex
            .entry((ctx, src, tag))
            .or_default()
            .push_back((seq, u));
    }

    /// The key of the earliest unexpected message matching (the front of its queue).
    fn find_unexpected(&self, ctx: u16, src: i32, tag: i32) -> Option<Key> {
        if self.unex_n == 0 {
            return None;
        }
        if src != ANY_SOURCE && tag != ANY_TAG {
            let key = (ctx, src, tag);
            return self.unex.get(&key).filter(|q| !q.is_empty()).map(|_| key);
        }
        // Wildcards: the earliest front among the matching keys.
        self.unex
            .iter()
            .filter(|(&(c, s, t), q)| c == ctx && matches(src, tag, s, t) && !q.is_empty())
            .min_by_key(|(_, q)| q.front().map_or(u64::MAX, |f| f.0))
            .map(|(&k, _)| k)
    }

    fn take_unexpected(&mut self, ctx: u16, src: i32, tag: i32) -> Option<Unex> {
        let key = self.find_unexpected(ctx, src, tag)?;
        // Empty queues stay in the map: no allocation per message for a reused key.
        let (_, u) = self.unex.get_mut(&key)?.pop_front()?;
        self.unex_n -= 1;
        Some(u)
    }

    fn peek_unexpected(&self, ctx: u16, src: i32, tag: i32) -> Option<Status> {
        let key = self.find_unexpected(ctx, src, tag)?;
        let (_, s, t, len) = self.unex.get(&key)?.front()?.1.envelope();
        Some(Status {
            source: s,
            tag: t,
            error: 0,
            bytes: len,
            cancelled: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sink_copies_every_small_size_and_split() {
        let src: Vec<u8> = (1..=40).collect();
        for n in 0..=40usize {
            for cut in 0..=n {
                for cap in [n, n.saturating_sub(3), n + 5] {
                    let mut out = vec![0u8; cap];
                    out[..].put([&src[..cut], &src[cut..n]]);
                    let k = n.min(cap);
                    assert_eq!(&out[..k], &src[..k], "n {n} cut {cut} cap {cap}");
                    assert!(
                        out[k..].iter().all(|&x| x == 0),
                        "n {n} cut {cut} cap {cap}"
                    );
                }
            }
        }
    }
}
