//! Active messages over one channel (ARCHITECTURE "Higher libraries"): the protocol layer
//! shared by mpi-lite, shmem, gasnet-shim and armci-shim, written once.
//!
//! An [`Endpoint`] owns one channel (one port of this rank). Libraries register *handlers*
//! (ids `0..`[`FIRST_RESERVED`]) and send *active messages* to the same port of other ranks:
//! a compact header (handler id, flags, a request id, a `u32` argument and up to three
//! `u64` arguments; 8 bytes in the common case, see [`header`]) followed by the payload
//! **inline in the same channel message** (SEED-NOTES, Madeleine: no separate size message).
//! Payloads larger than one channel message go as a *long* transfer: the first message
//! carries the header, the total length and the first chunk; the handler, run on that first
//! message, chooses where the data lands ([`Am::place`], a [`Landing`]); the following
//! chunks are copied straight from the channel's receive memory into it (GASNet "long": no
//! intermediate copy at the receiver); then the handler runs once more ([`Phase::LongDone`]).
//!
//! # Usage
//! ```
//! use skifch::{local, proto::{Am, Endpoint, Landing, Phase}};
//! const ECHO: u8 = 1;
//! let out = local::run(3, |job| {
//!     let ep = Endpoint::open(&job, 1)?;
//!     // Handler: reply with the payload reversed. Runs inside `poll`/`wait`/blocked sends of
//!     // this rank; the payload borrows the channel's receive memory.
//!     ep.register(ECHO, |ep: &Endpoint<_>, am: &Am<'_>| {
//!         let to = am.reply_to().expect("a request");
//!         let mut v = match am.phase() {
//!             Phase::Whole => am.payload().to_vec(),
//!             // A long message: choose where it lands, then wait for `LongDone`.
//!             Phase::LongStart { total } => return Ok(am.place(Landing::vec(total as usize))),
//!             Phase::LongDone { .. } => am.take_landing().and_then(Landing::into_vec).unwrap(),
//!         };
//!         v.reverse();
//!         ep.reply(to, am.arg() + 1, &[], &v)
//!     })?;
//!     ep.barrier()?; // every rank has registered its handlers
//!     let peer = (job.rank() + 1) % job.size();
//!     let mut buf = [0u8; 3];
//!     let r = ep.call(peer, ECHO, 41, &[], b"abc", &mut buf)?; // request + wait for the reply
//!     assert_eq!((r.arg, r.len, &buf), (42, 3, b"cba"));
//!     // Non-blocking: `request` returns an id; poll/compute; `wait` or `test` it.
//!     let id = ep.request(peer, ECHO, 0, &[], &[7u8; 100_000], Landing::vec(100_000))?;
//!     let r = ep.wait(id)?;
//!     assert_eq!((r.len, r.data.unwrap()[99_999]), (100_000, 7));
//!     ep.barrier()?; // keep serving requests until every rank is done
//!     Ok(())
//! }).unwrap();
//! ```
//!
//! # Progress and what a handler may do
//! Handlers run only inside calls on this endpoint: [`Endpoint::poll`], the waits
//! ([`Endpoint::wait`], [`Endpoint::progress_until`]), and **blocking sends** — when a send
//! finds the receiver's lane full it keeps receiving and dispatching its own incoming
//! messages, so two ranks that send to each other never deadlock on the non-buffering
//! channel. Therefore a handler:
//! * may send: [`Endpoint::reply`], [`Endpoint::send`], [`Endpoint::request`] called from a
//!   handler never block — a message that does not fit now is copied into a per-destination
//!   queue and sent, in order, by later progress (every later send to that rank goes behind
//!   it, so per-pair order holds);
//! * must not wait: [`Endpoint::wait`], [`Endpoint::call`], [`Endpoint::progress_until`] and
//!   [`Endpoint::barrier`] called from a handler fail with `InvalidArgument`;
//! * reports failure by returning `Err`: the error is kept and returned by the next
//!   [`Endpoint::poll`] (or [`Endpoint::take_error`]) of the application; the send or wait
//!   that happened to run the handler is not disturbed. A request to an unregistered handler gets an error reply, so
//!   its sender's `wait` fails instead of hanging.
//!
//! Outside handlers, [`Endpoint::send_nb`] queues the same way instead of waiting (for
//! non-blocking sends); [`Endpoint::flush`] waits until the queue is empty.
//!
//! [`Endpoint::progress_take`] is a wait whose caller sees each arriving whole message
//! before its handler and may consume it ([`Take::Mine`]): a blocking receive copies the
//! next matching message straight out of the channel instead of having a handler queue
//! it and then finding it in the queue.
//!
//! Waiting follows the channel's [`crate::WaitPolicy`] (fixed spin, then sleep on the
//! driver's waiter) and ends with `PeerLost` when a rank of the job is lost; waits with
//! queued outgoing messages poll with short sleeps, since the peer draining its lane does
//! not wake this rank. For a target that must serve requests while its application
//! computes, [`ProgressThread`] (PIOMan) runs the same polling on another thread over an
//! `Arc<Mutex<Endpoint>>`.
//!
//! # Ordering
//! Messages from one endpoint to another are dispatched in send order (channel per-pair
//! order, and the queue discipline above). Chunks of different long transfers may
//! interleave; each transfer is reassembled by its transfer id.

pub mod header;
mod landing;
mod progress;
pub mod suite;

pub use header::{FIRST_RESERVED, MAX_HDR};
pub use landing::Landing;
pub use progress::ProgressThread;

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::io::IoSlice;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::driver::{Driver, Waiter};
use crate::{Channel, Error, Job, Message, NetAddr, Port, Result, WaitPolicy};
use header::{Head, F_ERROR, F_LONG, F_REQUEST, H_CHUNK, H_REPLY, MAX_LONG};

/// A message handler: called with the endpoint (to reply or send) and the message.
pub type Handler<P> = Arc<dyn Fn(&Endpoint<P>, &Am<'_>) -> Result<()> + Send + Sync>;

/// Which part of a message a handler is called for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The whole message: the payload is all of it.
    Whole,
    /// First message of a long transfer of `total` bytes: the payload is its first chunk.
    /// Call [`Am::place`] to choose where the data lands (else it is dropped and the
    /// endpoint reports an error).
    LongStart { total: u64 },
    /// All `total` bytes of a long transfer have landed; [`Am::take_landing`] gives the
    /// landing back (the payload is empty). Reply now if the sender asked for one.
    LongDone { total: u64 },
}

/// What the filter of [`Endpoint::progress_take`] does with an incoming message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Take {
    /// The filter consumed it (its handler is not called); the wait ends.
    Mine,
    /// Dispatch it to its handler as usual; keep waiting.
    Pass,
    /// Dispatch it to its handler, then end the wait (the caller looks at what changed).
    PassStop,
}

/// Where to send a reply: the requester's rank and request id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyTo {
    pub rank: u32,
    pub req: u16,
}

/// An active message as its handler sees it.
pub struct Am<'a> {
    src: u32,
    head: &'a Head,
    // By reference: copying it into the `Am` costs a store-forwarding stall per message.
    payload: &'a Payload<'a>,
    phase: Phase,
    /// LongStart: the landing chosen by the handler; LongDone: the filled landing.
    landing: Cell<Option<Landing>>,
}

impl<'a> Am<'a> {
    /// Sender's rank.
    pub fn src(&self) -> u32 {
        self.src
    }
    /// Handler id.
    pub fn handler(&self) -> u8 {
        self.head.handler
    }
    /// The small argument.
    pub fn arg(&self) -> u32 {
        self.head.arg
    }
    /// The extra arguments (0 to 3).
    pub fn args(&self) -> &[u64] {
        &self.head.args[..self.head.nargs()]
    }
    /// The payload (borrowed from the channel's receive memory).
    pub fn payload(&self) -> &Payload<'a> {
        self.payload
    }
    /// See [`Phase`].
    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// Where to reply, if the sender waits for a reply ([`Endpoint::request`]).
    pub fn reply_to(&self) -> Option<ReplyTo> {
        (self.head.flags & F_REQUEST != 0).then_some(ReplyTo {
            rank: self.src,
            req: self.head.id,
        })
    }
    /// In [`Phase::LongStart`]: the transfer's bytes land in `l` (from offset 0; bytes past
    /// its length are dropped and reported as truncation).
    pub fn place(&self, l: Landing) {
        if matches!(self.phase, Phase::LongStart { .. }) {
            self.landing.set(Some(l));
        }
    }
    /// In [`Phase::LongDone`]: the landing given to [`Am::place`], now filled.
    pub fn take_landing(&self) -> Option<Landing> {
        match self.phase {
            Phase::LongDone { .. } => self.landing.take(),
            _ => None,
        }
    }
}

/// Received bytes, borrowed from the channel (one or two segments).
#[derive(Clone, Copy, Debug)]
pub struct Payload<'a> {
    a: &'a [u8],
    b: &'a [u8],
}

impl<'a> Payload<'a> {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.a.len() + self.b.len()
    }
    /// No bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The segments in order (the second is empty unless the message wrapped the ring).
    pub fn segments(&self) -> [&'a [u8]; 2] {
        [self.a, self.b]
    }
    /// The payload as one slice, when it is in one segment.
    pub fn as_contiguous(&self) -> Option<&'a [u8]> {
        if self.b.is_empty() {
            Some(self.a)
        } else if self.a.is_empty() {
            Some(self.b)
        } else {
            None
        }
    }
    /// Copies up to `buf.len()` bytes; returns how many.
    pub fn copy_to(&self, buf: &mut [u8]) -> usize {
        let k = self.a.len().min(buf.len());
        buf[..k].copy_from_slice(&self.a[..k]);
        let j = self.b.len().min(buf.len() - k);
        buf[k..k + j].copy_from_slice(&self.b[..j]);
        k + j
    }
    /// Copied into a `Vec`.
    pub fn to_vec(&self) -> Vec<u8> {
        [self.a, self.b].concat()
    }
}

/// Identifies an outstanding request of this endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReqId {
    idx: u16,
    gen: u32,
}

/// The reply to a request.
#[derive(Debug)]
pub struct Reply {
    /// The replier's small argument.
    pub arg: u32,
    /// The replier's extra arguments (`nargs` of them are meaningful).
    pub args: [u64; 3],
    pub nargs: usize,
    /// Bytes the replier sent (the landing received `min(len, landing size)`).
    pub len: u64,
    /// Whether the reply was longer than the landing.
    pub truncated: bool,
    /// The data, when the request's landing was [`Landing::vec`].
    pub data: Option<Vec<u8>>,
}

enum ReqState {
    Free,
    Waiting,
    /// Given up by the requester: the slot is freed when the reply comes.
    Cancelled,
    Done(Reply),
    Failed(Error),
}

struct ReqSlot {
    gen: u32,
    dst: u32,
    state: ReqState,
    landing: Option<Landing>,
}

enum Target {
    /// A handler's long message: call it again when done.
    Am { head: Head, landing: Landing },
    /// The data of a reply to request `idx`.
    Reply { idx: u16, head: Head },
    /// Nobody wants it.
    Discard,
}

struct InXfer {
    total: u64,
    got: u64,
    target: Target,
}

/// Stop a blocked send's busy polling after this many idle rounds and start yielding.
const SPIN_ROUNDS: u32 = 256;
/// Handler errors kept for the application at most.
const MAX_DEFERRED: usize = 64;
/// Messages dispatched per [`Endpoint::poll`] at most (so a flood cannot starve the caller).
const POLL_BUDGET: usize = 64;

/// One rank's active-message endpoint on one port; see the [module docs](self).
///
/// `Send` but not `Sync`: one thread uses it at a time; share it as
/// `Arc<Mutex<Endpoint<P>>>` (e.g. with a [`ProgressThread`]).
pub struct Endpoint<P: Port> {
    ch: Channel<P>,
    waiter: P::Waiter,
    rank: u32,
    size: u32,
    port: u16,
    max_msg: usize,
    chunk: usize,
    handlers: RefCell<Vec<Option<Handler<P>>>>,
    out: RefCell<Vec<VecDeque<Vec<u8>>>>,
    queued: Cell<usize>,
    reqs: RefCell<Vec<ReqSlot>>,
    free: RefCell<Vec<u16>>,
    xfer: Cell<u16>,
    inx: RefCell<HashMap<(u32, u16), InXfer>>,
    depth: Cell<u32>,
    deferred: RefCell<VecDeque<Error>>,
    bar_epoch: Cell<u32>,
    bar_seen: RefCell<HashMap<u32, u32>>,
}

/// Handler id used by [`Endpoint::barrier`].
const H_BARRIER: u8 = 0xFD;
/// Handler id of the no-op that checks a peer's endpoint is still open.
const H_NOP: u8 = 0xFC;
/// How often an idle wait on one peer checks that its endpoint is still open.
const PROBE_EVERY: Duration = Duration::from_millis(500);

impl<P: Port> Endpoint<P> {
    /// Opens this rank's `port` of `job` as an endpoint. The waiting policy comes from
    /// `SKIFCH_WAIT` (as for channels; a policy set on the `Job` does not carry over: use
    /// [`Endpoint::set_wait_policy`]).
    pub fn open<D: Driver<Port = P>>(job: &Job<D>, port: u32) -> Result<Self> {
        let p = job.driver().open_port(port)?;
        Self::new(p, job.size(), job.max_message(), WaitPolicy::from_env())
    }

    /// Wraps an open port of a job of `size` ranks whose largest message is `max_message`.
    pub fn new(port: P, size: u32, max_message: usize, policy: WaitPolicy) -> Result<Self> {
        // Room for the largest header and a useful chunk.
        if max_message < 4 * MAX_HDR {
            return Err(Error::InvalidArgument(
                format!("proto: messages of {max_message} bytes are too small for active messages")
                    .into(),
            ));
        }
        let waiter = port.waiter();
        let addr = port.addr();
        let ep = Endpoint {
            ch: Channel::new(port, policy),
            waiter,
            rank: addr.rank(),
            size,
            port: addr.port() as u16,
            max_msg: max_message,
            // Up to 4 chunks in flight per lane, 8-byte multiples.
            chunk: ((max_message / 4).max(2 * MAX_HDR)) & !7,
            handlers: RefCell::new(vec![None; 256]),
            out: RefCell::new((0..size).map(|_| VecDeque::new()).collect()),
            queued: Cell::new(0),
            reqs: RefCell::new(Vec::new()),
            free: RefCell::new(Vec::new()),
            xfer: Cell::new(0),
            inx: RefCell::new(HashMap::new()),
            depth: Cell::new(0),
            deferred: RefCell::new(VecDeque::new()),
            bar_epoch: Cell::new(0),
            bar_seen: RefCell::new(HashMap::new()),
        };
        let seen = |ep: &Endpoint<P>, am: &Am<'_>| {
            *ep.bar_seen.borrow_mut().entry(am.arg()).or_insert(0) += 1;
            Ok(())
        };
        ep.handlers.borrow_mut()[H_BARRIER as usize] = Some(Arc::new(seen));
        let nop = |_: &Endpoint<P>, _: &Am<'_>| Ok(());
        ep.handlers.borrow_mut()[H_NOP as usize] = Some(Arc::new(nop));
        Ok(ep)
    }

    /// This rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }
    /// Ranks in the job.
    pub fn size(&self) -> u32 {
        self.size
    }
    /// The port this endpoint uses on every rank.
    pub fn port(&self) -> u32 {
        self.port as u32
    }
    /// Largest payload sent inline with no extra arguments (larger ones go long).
    pub fn max_inline(&self) -> usize {
        self.max_msg - 8
    }
    /// The underlying channel's waiter (to sleep until a message may be ready).
    pub fn waiter(&self) -> P::Waiter {
        self.waiter.clone()
    }
    /// Changes the waiting policy of blocking calls.
    pub fn set_wait_policy(&self, p: WaitPolicy) {
        self.ch.set_wait_policy(p)
    }
    /// Whether we are inside a handler (where blocking calls are refused).
    pub fn in_handler(&self) -> bool {
        self.depth.get() > 0
    }
    /// Outgoing messages queued behind a full lane.
    pub fn queued(&self) -> usize {
        self.queued.get()
    }

    /// Registers `f` for handler id `id` (below [`FIRST_RESERVED`]). Every rank registers
    /// its handlers before peers may send to them (e.g. before a barrier).
    pub fn register(
        &self,
        id: u8,
        f: impl Fn(&Endpoint<P>, &Am<'_>) -> Result<()> + Send + Sync + 'static,
    ) -> Result<()> {
        if id >= FIRST_RESERVED {
            return Err(Error::InvalidArgument(
                format!("proto: handler id {id} is reserved (user ids are 0..{FIRST_RESERVED})")
                    .into(),
            ));
        }
        self.register_any(id, Arc::new(f))
    }

    /// Registers a handler of skifch's own layers (ids from [`FIRST_RESERVED`]).
    pub(crate) fn register_any(&self, id: u8, f: Handler<P>) -> Result<()> {
        let mut h = self
            .handlers
            .try_borrow_mut()
            .map_err(|_| in_handler_err("register"))?;
        if h[id as usize].is_some() || id >= H_CHUNK {
            return Err(Error::InvalidArgument(
                format!("proto: handler id {id} is already registered").into(),
            ));
        }
        h[id as usize] = Some(f);
        Ok(())
    }

    /// Removes handler `id` (messages for it then get the unregistered-handler error).
    pub fn unregister(&self, id: u8) -> Result<()> {
        if id < FIRST_RESERVED {
            let mut h = self
                .handlers
                .try_borrow_mut()
                .map_err(|_| in_handler_err("unregister"))?;
            h[id as usize] = None;
        }
        Ok(())
    }

    // ----- sending ---------------------------------------------------------------------

    /// Sends an active message to handler `h` of rank `dst` (one-way). Blocks (with
    /// progress) until the message is handed to the channel — or, from a handler, queues
    /// what does not fit. Any length: payloads beyond one message go as a long transfer.
    #[inline]
    pub fn send(&self, dst: u32, h: u8, arg: u32, args: &[u64], data: &[u8]) -> Result<()> {
        self.check_user(h, args)?;
        self.emit_fields(dst, h, 0, 0, arg, args, data)
    }

    /// [`Endpoint::send`] without extra arguments (the 8-byte header): the shortest path,
    /// for a library's per-message sends (an MPI eager message).
    #[inline]
    pub fn send_short(&self, dst: u32, h: u8, arg: u32, data: &[u8]) -> Result<()> {
        if h < FIRST_RESERVED && dst < self.size && 8 + data.len() <= self.max_msg {
            let w = header::word(h, 0, 0, arg).to_le_bytes();
            return self.push(dst, &w, data);
        }
        self.send(dst, h, arg, &[], data)
    }

    /// As [`Endpoint::send`], but never waits, even outside a handler: what does not fit the
    /// receiver's lane now is copied into the queue (as from a handler) and sent by later
    /// progress. `data` may be reused at once. For non-blocking sends (MPI `isend` eager,
    /// SHMEM `put_nbi`); [`Endpoint::flush`] waits until the queue is empty.
    pub fn send_nb(&self, dst: u32, h: u8, arg: u32, args: &[u64], data: &[u8]) -> Result<()> {
        self.check_user(h, args)?;
        self.in_handler_scope(|| self.emit_fields(dst, h, 0, 0, arg, args, data))
    }

    /// Makes progress until every queued outgoing message has been handed to the channel
    /// (not a delivery guarantee: use a request/reply for that).
    pub fn flush(&self) -> Result<()> {
        self.progress_until(|ep| ep.queued.get() == 0, None)
    }

    /// As [`Endpoint::send`] for the handlers of skifch's own layers.
    pub(crate) fn send_reserved(
        &self,
        dst: u32,
        h: u8,
        arg: u32,
        args: &[u64],
        data: &[u8],
    ) -> Result<()> {
        self.emit_fields(dst, h, 0, 0, arg, args, data)
    }

    /// Stops every incoming long transfer that lands at `ptr` from writing there (its
    /// remaining chunks are dropped; its handler still gets `LongDone`, with an empty
    /// landing). For a layer whose wait on caller memory failed.
    pub(crate) fn forget_landing(&self, ptr: *const u8) {
        for x in self.inx.borrow_mut().values_mut() {
            if let Target::Am { landing, .. } = &mut x.target {
                if landing.ptr() == ptr {
                    *landing = Landing::discard();
                }
            }
        }
    }

    /// Sends a request to handler `h` of `dst`; its reply's data lands in `reply`.
    /// Returns at once after sending; finish with [`Endpoint::wait`] / [`Endpoint::test`]
    /// (each request gets exactly one reply).
    pub fn request(
        &self,
        dst: u32,
        h: u8,
        arg: u32,
        args: &[u64],
        data: &[u8],
        reply: Landing,
    ) -> Result<ReqId> {
        self.check_user(h, args)?;
        self.check_dst(dst)?;
        let id = self.alloc_req(dst, reply)?;
        let r = self.emit_fields(dst, h, F_REQUEST, id.idx, arg, args, data);
        if let Err(e) = r {
            self.free_req(id.idx);
            return Err(e);
        }
        Ok(id)
    }

    /// Replies to a request (from its handler, or later from anywhere). Never blocks in a
    /// handler (see the module docs).
    pub fn reply(&self, to: ReplyTo, arg: u32, args: &[u64], data: &[u8]) -> Result<()> {
        if args.len() > 3 {
            return Err(too_many_args());
        }
        self.emit_fields(to.rank, H_REPLY, 0, to.req, arg, args, data)
    }

    /// Replies with a failure: the requester's wait returns `InvalidArgument(why)`.
    pub fn reply_error(&self, to: ReplyTo, why: &str) -> Result<()> {
        self.emit(
            to.rank,
            &Head::new(H_REPLY, F_ERROR, to.req, 0, &[]),
            why.as_bytes(),
        )
    }

    /// Request + wait: the reply's data lands in `out`.
    pub fn call(
        &self,
        dst: u32,
        h: u8,
        arg: u32,
        args: &[u64],
        data: &[u8],
        out: &mut [u8],
    ) -> Result<Reply> {
        self.no_handler("call")?;
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

    fn check_user(&self, h: u8, args: &[u64]) -> Result<()> {
        if h >= FIRST_RESERVED {
            return Err(Error::InvalidArgument(
                format!("proto: handler id {h} is reserved").into(),
            ));
        }
        if args.len() > 3 {
            return Err(too_many_args());
        }
        Ok(())
    }

    fn check_dst(&self, dst: u32) -> Result<()> {
        if dst >= self.size {
            return Err(Error::Unreachable {
                addr: NetAddr::new(dst.min(u16::MAX as u32) as u16, self.port),
                why: crate::Unreachable::NoSuchRank,
            });
        }
        Ok(())
    }

    /// Sends one active message: inline with the header built in place (the fast path),
    /// else through [`Endpoint::emit`].
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn emit_fields(
        &self,
        dst: u32,
        h: u8,
        flags: u8,
        id: u16,
        arg: u32,
        args: &[u64],
        data: &[u8],
    ) -> Result<()> {
        let n = 8 + 8 * args.len();
        if args.len() <= 3 && dst < self.size && n + data.len() <= self.max_msg {
            let mut hb = [0u8; 32];
            let w = header::word(h, flags | args.len() as u8, id, arg);
            hb[..8].copy_from_slice(&w.to_le_bytes());
            for (i, a) in args.iter().enumerate() {
                hb[8 + 8 * i..16 + 8 * i].copy_from_slice(&a.to_le_bytes());
            }
            return self.push(dst, &hb[..n], data);
        }
        if args.len() > 3 {
            return Err(too_many_args());
        }
        self.emit(dst, &Head::new(h, flags, id, arg, args), data)
    }

    /// Sends one active message (inline or long) through the per-destination queue.
    fn emit(&self, dst: u32, head: &Head, data: &[u8]) -> Result<()> {
        self.check_dst(dst)?;
        let mut hb = [0u8; MAX_HDR];
        let n = head.encode(&mut hb);
        if n + data.len() <= self.max_msg {
            return self.push(dst, &hb[..n], data);
        }
        if data.len() as u64 > MAX_LONG {
            return Err(Error::InvalidArgument(
                format!(
                    "proto: {} bytes exceed the 2^48-byte transfer limit",
                    data.len()
                )
                .into(),
            ));
        }
        let xid = self.xfer.get();
        self.xfer.set(xid.wrapping_add(1));
        let mut h = *head;
        h.flags |= F_LONG;
        h.long = Some((data.len() as u64, xid));
        let n = h.encode(&mut hb);
        let first = (self.chunk - n).min(data.len());
        self.push(dst, &hb[..n], &data[..first])?;
        let mut cb = [0u8; MAX_HDR];
        let cn = Head::new(H_CHUNK, 0, xid, 0, &[]).encode(&mut cb);
        let mut off = first;
        while off < data.len() {
            let k = (self.chunk - cn).min(data.len() - off);
            self.push(dst, &cb[..cn], &data[off..off + k])?;
            off += k;
        }
        Ok(())
    }

    /// One whole channel message `hdr ++ data` to `dst`, behind anything queued for it.
    #[inline]
    fn push(&self, dst: u32, hdr: &[u8], data: &[u8]) -> Result<()> {
        if self.queued.get() == 0 {
            // Fast path: nothing queued anywhere, so nothing to keep order behind.
            let addr = NetAddr::new(dst as u16, self.port);
            match self
                .ch
                .send_whole(addr, &[IoSlice::new(hdr), IoSlice::new(data)])
            {
                Err(Error::WouldBlock) => {}
                r => return r,
            }
        }
        self.push_slow(dst, hdr, data)
    }

    #[cold]
    fn push_slow(&self, dst: u32, hdr: &[u8], data: &[u8]) -> Result<()> {
        let addr = NetAddr::new(dst as u16, self.port);
        let iov = [IoSlice::new(hdr), IoSlice::new(data)];
        if self.in_handler() {
            if self.out.borrow()[dst as usize].is_empty() {
                match self.ch.send_whole(addr, &iov) {
                    Err(Error::WouldBlock) => {}
                    r => return r,
                }
            }
            self.out.borrow_mut()[dst as usize].push_back([hdr, data].concat());
            self.queued.set(self.queued.get() + 1);
            return Ok(());
        }
        let mut idle = 0u32;
        loop {
            if !self.out.borrow()[dst as usize].is_empty() {
                self.flush_dst(dst)?;
            }
            if self.out.borrow()[dst as usize].is_empty() {
                match self.ch.send_whole(addr, &iov) {
                    Err(Error::WouldBlock) => {}
                    r => return r,
                }
            }
            // The lane is full: serve our own incoming traffic meanwhile (the receiver may be
            // blocked sending to us), then back off.
            let did = self.service()?;
            self.flush_all()?;
            self.backoff(did, &mut idle)?;
        }
    }

    /// Sends what is queued for `dst` until its lane is full.
    fn flush_dst(&self, dst: u32) -> Result<()> {
        let addr = NetAddr::new(dst as u16, self.port);
        let mut out = self.out.borrow_mut();
        let q = &mut out[dst as usize];
        while let Some(m) = q.front() {
            match self.ch.send_whole(addr, &[IoSlice::new(m)]) {
                Ok(()) => {
                    q.pop_front();
                    self.queued.set(self.queued.get() - 1);
                }
                Err(Error::WouldBlock) => break,
                Err(e) => {
                    // The destination is gone: what was queued for it cannot be delivered.
                    self.queued.set(self.queued.get() - q.len());
                    q.clear();
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    #[inline]
    fn flush_all(&self) -> Result<()> {
        if self.queued.get() == 0 {
            return Ok(());
        }
        self.flush_queued()
    }

    #[cold]
    fn flush_queued(&self) -> Result<()> {
        for d in 0..self.size {
            if !self.out.borrow()[d as usize].is_empty() {
                // A destination that is gone loses its queue; that is reported like a
                // handler error, not as the failure of whatever call is making progress.
                if let Err(e) = self.flush_dst(d) {
                    self.defer(e);
                }
            }
        }
        Ok(())
    }

    fn backoff(&self, did: usize, idle: &mut u32) -> Result<()> {
        if did > 0 {
            *idle = 0;
            return Ok(());
        }
        *idle += 1;
        if (*idle).is_multiple_of(64) {
            if let Some(rank) = self.waiter.lost_peer() {
                return Err(Error::PeerLost { rank });
            }
        }
        if *idle < SPIN_ROUNDS {
            std::hint::spin_loop();
        } else if *idle < 4 * SPIN_ROUNDS {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
        Ok(())
    }

    // ----- receiving -------------------------------------------------------------------

    /// Sends queued messages and dispatches up to 64 incoming ones; returns how many were
    /// dispatched. Handler and protocol errors are kept in order and returned one per call
    /// (by this or a wait), the oldest first.
    pub fn poll(&self) -> Result<usize> {
        self.take_deferred()?;
        self.flush_all()?;
        let n = self.service()?;
        if n > 0 {
            self.take_deferred()?;
        }
        Ok(n)
    }

    /// The oldest handler or protocol error not yet reported, if any.
    pub fn take_error(&self) -> Option<Error> {
        self.deferred.borrow_mut().pop_front()
    }

    #[inline]
    fn take_deferred(&self) -> Result<()> {
        if self.deferred.borrow().is_empty() {
            return Ok(());
        }
        match self.deferred.borrow_mut().pop_front() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Dispatches incoming messages (up to the budget); handler and protocol errors are
    /// deferred, channel errors returned.
    #[inline]
    pub(crate) fn service(&self) -> Result<usize> {
        self.service_with(&mut |_: &Am<'_>| Take::Pass, &Cell::new(false))
    }

    /// [`Endpoint::service`] with a filter offered every whole message first (see
    /// [`Endpoint::progress_take`]); stops after a message the filter ends the wait on,
    /// setting `stop`.
    #[inline]
    fn service_with(
        &self,
        take: &mut impl FnMut(&Am<'_>) -> Take,
        stop: &Cell<bool>,
    ) -> Result<usize> {
        let mut n = 0;
        while n < POLL_BUDGET && !stop.get() {
            // The closure form: the message guard is never moved (see `try_recv_with`).
            // The closure returns nothing: a 16-byte `Result` coming back out of it is
            // written in parts and read whole, a store-forwarding stall per message.
            let r = self.ch.try_recv_with(|m| {
                if let Err(e) = self.dispatch(m, take, stop) {
                    self.defer(e);
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

    #[cold]
    fn defer(&self, e: Error) {
        let mut d = self.deferred.borrow_mut();
        // Kept in order; a flood of failures keeps the first ones.
        if d.len() < MAX_DEFERRED {
            d.push_back(e);
        }
    }

    #[inline]
    fn dispatch(
        &self,
        m: &Message<'_, P>,
        take: &mut impl FnMut(&Am<'_>) -> Take,
        stop: &Cell<bool>,
    ) -> Result<()> {
        let src = m.src().rank();
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
            h if head.long.is_none() => {
                // The fast path: a whole message for a registered handler.
                let am = Am {
                    src,
                    head: &head,
                    payload: &payload,
                    phase: Phase::Whole,
                    landing: Cell::new(None),
                };
                // skifch's own handlers (ids from FIRST_RESERVED) are never offered.
                let t = if h < FIRST_RESERVED {
                    take(&am)
                } else {
                    Take::Pass
                };
                match t {
                    Take::Mine => {
                        stop.set(true);
                        return Ok(());
                    }
                    Take::PassStop => stop.set(true),
                    Take::Pass => {}
                }
                let hs = self.handlers.borrow();
                if let Some(f) = hs[h as usize].as_ref() {
                    return self.invoke(f, &am);
                }
                drop(hs);
                self.on_am(src, &head, payload)
            }
            _ => self.on_am(src, &head, payload),
        }
    }

    fn invoke(&self, h: &Handler<P>, am: &Am<'_>) -> Result<()> {
        self.depth.set(self.depth.get() + 1);
        let r = h(self, am);
        self.depth.set(self.depth.get() - 1);
        r
    }

    #[inline(never)]
    fn on_am(&self, src: u32, head: &Head, payload: Payload<'_>) -> Result<()> {
        // Held during the call: a handler cannot (un)register (refused with an error).
        let hs = self.handlers.borrow();
        let Some(h) = hs[head.handler as usize].as_ref() else {
            if let Some((total, xid)) = head.long {
                self.start_xfer(src, xid, total, payload.len() as u64, Target::Discard)?;
            }
            let why = format!(
                "rank {} has no handler {} on port {}",
                self.rank, head.handler, self.port
            );
            if head.flags & F_REQUEST != 0 {
                self.in_handler_scope(|| {
                    self.reply_error(
                        ReplyTo {
                            rank: src,
                            req: head.id,
                        },
                        &why,
                    )
                })?;
            }
            return Err(Error::InvalidArgument(
                format!("proto: a message from rank {src} for an unregistered handler: {why}")
                    .into(),
            ));
        };
        let Some((total, xid)) = head.long else {
            let am = Am {
                src,
                head,
                payload: &payload,
                phase: Phase::Whole,
                landing: Cell::new(None),
            };
            return self.invoke(h, &am);
        };
        let am = Am {
            src,
            head,
            payload: &payload,
            phase: Phase::LongStart { total },
            landing: Cell::new(None),
        };
        let r = self.invoke(h, &am);
        drop(hs);
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

    fn in_handler_scope<T>(&self, f: impl FnOnce() -> T) -> T {
        self.depth.set(self.depth.get() + 1);
        let r = f();
        self.depth.set(self.depth.get() - 1);
        r
    }

    fn start_xfer(&self, src: u32, xid: u16, total: u64, got: u64, target: Target) -> Result<()> {
        let x = InXfer { total, got, target };
        if got >= total {
            return self.finish_xfer(src, x);
        }
        if self.inx.borrow_mut().insert((src, xid), x).is_some() {
            return Err(Error::Corrupt(
                format!("proto: rank {src} reused transfer id {xid} while it was in progress")
                    .into(),
            ));
        }
        Ok(())
    }

    #[inline(never)]
    fn on_chunk(&self, src: u32, xid: u16, payload: Payload<'_>) -> Result<()> {
        let mut inx = self.inx.borrow_mut();
        let Some(x) = inx.get_mut(&(src, xid)) else {
            return Err(Error::Corrupt(
                format!("proto: a chunk of unknown transfer {xid} from rank {src}").into(),
            ));
        };
        let off = x.got as usize;
        match &mut x.target {
            Target::Am { landing, .. } => landing.write_segs(off, payload.segments()),
            Target::Reply { idx, .. } => {
                let mut reqs = self.reqs.borrow_mut();
                if let Some(l) = reqs[*idx as usize].landing.as_mut() {
                    l.write_segs(off, payload.segments());
                }
            }
            Target::Discard => {}
        }
        x.got += payload.len() as u64;
        if x.got >= x.total {
            let x = inx.remove(&(src, xid)).expect("present");
            drop(inx);
            return self.finish_xfer(src, x);
        }
        Ok(())
    }

    fn finish_xfer(&self, src: u32, x: InXfer) -> Result<()> {
        if x.got != x.total {
            return Err(Error::Corrupt(
                format!(
                    "proto: rank {src} sent {} bytes of a {}-byte transfer",
                    x.got, x.total
                )
                .into(),
            ));
        }
        match x.target {
            Target::Am { head, landing } => {
                let hs = self.handlers.borrow();
                let Some(h) = hs[head.handler as usize].as_ref() else {
                    return Ok(());
                };
                let am = Am {
                    src,
                    head: &head,
                    payload: &Payload { a: &[], b: &[] },
                    phase: Phase::LongDone { total: x.total },
                    landing: Cell::new(Some(landing)),
                };
                self.invoke(h, &am)
            }
            Target::Reply { idx, head } => {
                self.complete_req(src, idx, &head, x.total, None);
                Ok(())
            }
            Target::Discard => Ok(()),
        }
    }

    #[inline(never)]
    fn on_reply(&self, src: u32, head: &Head, payload: Payload<'_>) -> Result<()> {
        let idx = head.id;
        {
            let mut reqs = self.reqs.borrow_mut();
            let ok = reqs.get(idx as usize).is_some_and(|s| {
                s.dst == src && matches!(s.state, ReqState::Waiting | ReqState::Cancelled)
            });
            if !ok {
                drop(reqs);
                if let Some((total, xid)) = head.long {
                    self.start_xfer(src, xid, total, payload.len() as u64, Target::Discard)?;
                }
                return Err(Error::Corrupt(
                    format!("proto: a reply from rank {src} to no request of it ({idx})").into(),
                ));
            }
            if head.flags & F_ERROR == 0 {
                if let Some(l) = reqs[idx as usize].landing.as_mut() {
                    l.write_segs(0, payload.segments());
                }
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
                self.complete_req(src, idx, head, payload.len() as u64, why);
                Ok(())
            }
        }
    }

    fn complete_req(&self, src: u32, idx: u16, head: &Head, len: u64, err: Option<String>) {
        let mut reqs = self.reqs.borrow_mut();
        let s = &mut reqs[idx as usize];
        if matches!(s.state, ReqState::Cancelled) {
            drop(reqs);
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

    // ----- requests --------------------------------------------------------------------

    fn alloc_req(&self, dst: u32, landing: Landing) -> Result<ReqId> {
        let mut reqs = self.reqs.borrow_mut();
        let idx = match self.free.borrow_mut().pop() {
            Some(i) => i,
            None => {
                if reqs.len() > u16::MAX as usize {
                    return Err(Error::InvalidArgument(
                        "proto: 65536 requests outstanding; wait for some first".into(),
                    ));
                }
                reqs.push(ReqSlot {
                    gen: 0,
                    dst: 0,
                    state: ReqState::Free,
                    landing: None,
                });
                (reqs.len() - 1) as u16
            }
        };
        let s = &mut reqs[idx as usize];
        s.gen = s.gen.wrapping_add(1);
        s.dst = dst;
        s.state = ReqState::Waiting;
        s.landing = Some(landing);
        Ok(ReqId { idx, gen: s.gen })
    }

    fn free_req(&self, idx: u16) {
        let mut reqs = self.reqs.borrow_mut();
        let s = &mut reqs[idx as usize];
        s.state = ReqState::Free;
        s.landing = None;
        self.free.borrow_mut().push(idx);
    }

    fn slot_ok(&self, id: ReqId) -> Result<()> {
        let reqs = self.reqs.borrow();
        match reqs.get(id.idx as usize) {
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

    fn take_done(&self, id: ReqId) -> Option<Result<Reply>> {
        let mut reqs = self.reqs.borrow_mut();
        let s = &mut reqs[id.idx as usize];
        let st = std::mem::replace(&mut s.state, ReqState::Free);
        let r = match st {
            ReqState::Done(r) => Ok(r),
            ReqState::Failed(e) => Err(e),
            other => {
                s.state = other;
                return None;
            }
        };
        drop(reqs);
        self.free_req(id.idx);
        Some(r)
    }

    /// Whether request `id` has its reply (returns it, once), after one round of progress.
    pub fn test(&self, id: ReqId) -> Result<Option<Reply>> {
        self.slot_ok(id)?;
        if let Some(r) = self.take_done(id) {
            return r.map(Some);
        }
        // Progress as in a wait: an unrelated handler error is left for `poll`.
        self.flush_all()?;
        self.service()?;
        self.take_done(id).transpose()
    }

    /// Waits (with progress) for the reply to request `id`.
    pub fn wait(&self, id: ReqId) -> Result<Reply> {
        self.wait_timeout(id, None)
    }

    /// As [`Endpoint::wait`], failing with `TimedOut` after `timeout` (the request stays
    /// outstanding: wait again or [`Endpoint::cancel`] it).
    pub fn wait_timeout(&self, id: ReqId, timeout: Option<Duration>) -> Result<Reply> {
        self.slot_ok(id)?;
        let done =
            |ep: &Self| !matches!(ep.reqs.borrow()[id.idx as usize].state, ReqState::Waiting);
        let dst = self.reqs.borrow()[id.idx as usize].dst;
        self.progress_until_peer(done, timeout, Some(dst))?;
        self.take_done(id)
            .unwrap_or_else(|| Err(Error::InvalidArgument("proto: request vanished".into())))
    }

    /// Gives up on request `id`: its landing is dropped now (so caller memory behind a raw
    /// landing is free again); a reply that still comes is discarded.
    pub fn cancel(&self, id: ReqId) {
        let mut reqs = self.reqs.borrow_mut();
        let Some(s) = reqs.get_mut(id.idx as usize) else {
            return;
        };
        if s.gen != id.gen {
            return;
        }
        match s.state {
            ReqState::Waiting => {
                s.landing = None;
                // A reply may still be in flight: keep the slot until it comes (a reply
                // that is already partly placed keeps landing nowhere).
                let mut inx = self.inx.borrow_mut();
                for x in inx.values_mut() {
                    if matches!(x.target, Target::Reply { idx, .. } if idx == id.idx) {
                        x.target = Target::Discard;
                    }
                }
                s.state = ReqState::Cancelled;
            }
            ReqState::Done(_) | ReqState::Failed(_) => {
                drop(reqs);
                self.free_req(id.idx);
            }
            ReqState::Free | ReqState::Cancelled => {}
        }
    }

    // ----- waiting ---------------------------------------------------------------------

    fn no_handler(&self, what: &str) -> Result<()> {
        if self.in_handler() {
            return Err(in_handler_err(what));
        }
        Ok(())
    }

    /// Makes progress (sends queued messages, dispatches incoming ones) until `done` is
    /// true; fixed spin then sleep per the wait policy; `TimedOut` after `timeout`;
    /// `PeerLost` when a rank is lost. Handler errors do not end a wait (they are kept for
    /// [`Endpoint::poll`] / [`Endpoint::take_error`]): an unrelated bad message must not
    /// break a barrier half-way.
    /// The building block of every library wait (requests, matching, collectives).
    pub fn progress_until(
        &self,
        done: impl FnMut(&Self) -> bool,
        timeout: Option<Duration>,
    ) -> Result<()> {
        self.progress_until_peer(done, timeout, None)
    }

    /// As [`Endpoint::progress_until`] for a wait on rank `peer` (its reply, its next
    /// message): while idle, every half second, checks that `peer`'s endpoint is still
    /// open (a no-op message), so a peer that finalized without answering ends the wait
    /// with `Unreachable` instead of never. (A peer that died is `PeerLost` at once.)
    pub fn progress_until_peer(
        &self,
        done: impl FnMut(&Self) -> bool,
        timeout: Option<Duration>,
        peer: Option<u32>,
    ) -> Result<()> {
        self.wait_loop(done, &mut |_: &Am<'_>| Take::Pass, timeout, peer)
    }

    /// Makes progress as [`Endpoint::progress_until`] while offering every incoming whole
    /// (not long) message for a registered user handler to `take` first, in arrival order,
    /// until `take` answers [`Take::Mine`] (it consumed the message: its handler is not
    /// called) or [`Take::PassStop`] (dispatched, then the wait ends). Messages answered
    /// [`Take::Pass`] go to their handlers as usual. For a blocking receive that copies the
    /// next matching message straight out of the channel instead of queuing it; `take`
    /// must not call the endpoint. Chunks, replies and skifch's own messages never reach
    /// `take`.
    pub fn progress_take(
        &self,
        mut take: impl FnMut(&Am<'_>) -> Take,
        timeout: Option<Duration>,
    ) -> Result<()> {
        self.wait_loop(|_| false, &mut take, timeout, None)
    }

    fn wait_loop(
        &self,
        mut done: impl FnMut(&Self) -> bool,
        take: &mut impl FnMut(&Am<'_>) -> Take,
        timeout: Option<Duration>,
        peer: Option<u32>,
    ) -> Result<()> {
        self.no_handler("waiting")?;
        let stop = Cell::new(false);
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut idle = 0u32;
        // Read the clock only once idle: a wait served by the first poll costs no syscall.
        let mut probed: Option<Instant> = None;
        loop {
            if done(self) {
                return Ok(());
            }
            self.flush_all()?;
            let n = self.service_with(take, &stop)?;
            if stop.get() || done(self) {
                return Ok(());
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(Error::TimedOut);
            }
            if n > 0 {
                idle = 0;
                continue;
            }
            if let Some(p) = peer {
                let since = *probed.get_or_insert_with(Instant::now);
                if since.elapsed() >= PROBE_EVERY {
                    probed = Some(Instant::now());
                    self.in_handler_scope(|| self.emit_fields(p, H_NOP, 0, 0, 0, &[], &[]))?;
                }
            }
            if self.queued.get() > 0 {
                // Blocked on a peer's full lane: its draining does not wake us.
                self.backoff(0, &mut idle)?;
                continue;
            }
            let slice = Duration::from_millis(50);
            let slice = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()).min(slice),
                None => slice,
            };
            match self.ch.wait(Some(slice)) {
                Ok(()) | Err(Error::TimedOut) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// A barrier of all ranks of the job on this endpoint (dissemination, ⌈log₂ n⌉ rounds),
    /// serving requests while it waits. Every rank calls it the same number of times;
    /// it returns once every rank has entered this episode.
    pub fn barrier(&self) -> Result<()> {
        self.no_handler("barrier")?;
        let e = self.bar_epoch.get().wrapping_add(1);
        self.bar_epoch.set(e);
        let n = self.size;
        let mut dist = 1u32;
        let mut round = 0u32;
        while dist < n {
            let key = e.wrapping_mul(64).wrapping_add(round);
            self.emit(
                (self.rank + dist) % n,
                &Head::new(H_BARRIER, 0, 0, key, &[]),
                &[],
            )?;
            let from = (self.rank + n - dist) % n;
            let seen = |ep: &Self| ep.bar_seen.borrow().contains_key(&key);
            self.progress_until_peer(seen, None, Some(from))?;
            let mut seen = self.bar_seen.borrow_mut();
            let c = seen.get_mut(&key).expect("present");
            *c -= 1;
            if *c == 0 {
                seen.remove(&key);
            }
            dist *= 2;
            round += 1;
        }
        Ok(())
    }
}

impl<P: Port> Drop for Endpoint<P> {
    /// Messages still queued (behind full lanes) are given up to one second of progress to
    /// leave, so that a rank that sends and then finalizes does not drop them silently.
    fn drop(&mut self) {
        if self.queued.get() > 0 && !self.in_handler() {
            let _ = self.progress_until(|ep| ep.queued.get() == 0, Some(Duration::from_secs(1)));
        }
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

fn in_handler_err(what: &str) -> Error {
    Error::InvalidArgument(format!("proto: {what} is not allowed inside a message handler").into())
}

fn too_many_args() -> Error {
    Error::InvalidArgument("proto: at most 3 extra u64 arguments".into())
}

// Small enough for Miri (the lib tests run under it): the unsafe landing paths — a reply
// and a long message written through raw pointers into caller memory, chunk by chunk, and
// a posted collective receive.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::{self, DType, Kernel, Op, ProtoColl};
    use crate::local::Params;

    #[test]
    fn long_replies_and_posted_receives_land_in_caller_memory() {
        let p = Params {
            nranks: 2,
            nports: 1,
            lane_bytes: 1 << 10,
        };
        crate::local::run_with(p, |job| {
            let ep = Endpoint::open(&job, 0)?;
            let coll = ProtoColl::install(&ep)?;
            ep.register(1, |ep: &Endpoint<_>, am: &Am<'_>| {
                let to = am.reply_to().expect("request");
                let data: Vec<u8> = (0..am.arg()).map(|i| i as u8).collect();
                ep.reply(to, 0, &[], &data)
            })?;
            ep.barrier()?;
            let peer = 1 - ep.rank();
            let mut buf = vec![0u8; 3000];
            let r = ep.call(peer, 1, 2500, &[], &[], &mut buf)?;
            assert_eq!((r.len, r.truncated), (2500, false));
            assert!(buf[..2500].iter().enumerate().all(|(i, &b)| b == i as u8));
            assert!(buf[2500..].iter().all(|&b| b == 0));
            let w = coll.world(&ep);
            let mut big = vec![ep.rank() as u8 + 1; 2000];
            coll::bcast(&w, 1, &mut big)?;
            assert!(big.iter().all(|&b| b == 2));
            let k = Kernel::new(DType::U16, Op::Sum)?;
            let mine = vec![1u8; 1200];
            let mut sum = vec![0u8; 1200];
            coll::allreduce(&w, &mine, &mut sum, &k)?;
            assert!(sum
                .chunks(2)
                .all(|c| u16::from_ne_bytes([c[0], c[1]]) == 514));
            ep.barrier()
        })
        .unwrap();
    }
}
