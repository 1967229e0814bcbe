//! The point-to-point engine (MPI-3.1 chapter 3): matching, the eager and rendezvous
//! protocols and the progress loop, over one SkifCh channel.
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
//! ## Protocols (see [`crate::wire`])
//! * eager (≤ the eager limit, `SKIFMPI_EAGER` bytes): header + payload in one channel
//!   message, sent straight from the user's buffer when its type map is contiguous;
//!   copied out of the ring into the receive buffer (or an unexpected-queue copy);
//! * rendezvous: RTS → (matched) CTS → DATA chunks copied from the ring straight into the
//!   user's receive buffer; the send completes when its last chunk is out;
//! * `MPI_Ssend` below the eager limit: eager with an ACK on match.
//!
//! ## Progress and deadlock freedom
//! Channels do not buffer: a send may meet a full lane. Nothing here blocks inside a
//! handler: replies (CTS, ACK) and sends that would block are queued per destination (the
//! queue keeps per-destination order), and every wait loop alternates between pushing
//! these queues and draining incoming messages, so two ranks sending to each other always
//! make progress. A lost peer ends every wait with `PeerLost` (never a hang).
#![allow(clippy::too_many_arguments)]

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::io::IoSlice;
use std::time::Duration;

use skifch::{Channel, Message, NetAddr, Port};

use crate::error::{class, Error, Result};
use crate::mem::UserBuf;
use crate::wire::{Header, Kind, HDR, RTS_LEN};

/// `MPI_ANY_SOURCE`.
pub const ANY_SOURCE: i32 = -2;
/// `MPI_PROC_NULL`.
pub const PROC_NULL: i32 = -1;
/// `MPI_ANY_TAG`.
pub const ANY_TAG: i32 = -1;
/// `MPI_TAG_UB`: the largest tag.
pub const TAG_UB: i32 = i32::MAX;

/// Default eager limit in bytes (override with `SKIFMPI_EAGER`); capped by what one
/// channel message can carry.
pub const DEFAULT_EAGER: usize = 16 << 10;

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

/// A request id (index into the engine's request table).
pub type ReqId = u32;

#[derive(Debug)]
enum ReqKind {
    /// A send: `buf` kept (rendezvous) until all of it is out.
    Send {
        /// The first message's header (EAGER/SYNC with the payload, or RTS).
        hdr: Header,
        /// The data until it is all out.
        buf: Option<UserBuf>,
        sent: usize,
        rreq: u32,
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

/// A message that arrived before its receive was posted.
#[derive(Debug)]
enum Unex {
    Eager {
        src: i32,
        tag: i32,
        ctx: u16,
        data: Vec<u8>,
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

/// Queued outgoing work for one destination.
#[derive(Debug)]
enum Out {
    /// A control message (CTS, ACK) made by a handler.
    Msg(Vec<u8>),
    /// The first message of send `sreq` (its data stays in user memory meanwhile).
    Req { sreq: u32 },
    /// The rest of rendezvous send `sreq`.
    Data { sreq: u32 },
}

/// Matching state and protocol machinery (everything but the channel, so message
/// handlers can borrow the channel and this at once).
struct State {
    me: u32,
    size: u32,
    port: u16,
    eager: usize,
    chunk: usize,
    reqs: Vec<Option<Req>>,
    free: Vec<u32>,
    posted_exact: FxMap<Key, VecDeque<ReqId>>,
    posted_wild: Vec<ReqId>,
    unex_by_key: FxMap<Key, VecDeque<u64>>,
    unex: BTreeMap<u64, Unex>,
    seq: u64,
    outq: Vec<VecDeque<Out>>,
    nout: usize,
    /// Bytes of the Bsend buffer in use.
    pub bsend_used: usize,
}

/// The engine: one channel plus the matching and protocol state.
///
/// After a transport failure (a lost peer, a closed port, a corrupt message) the engine is
/// *broken*: every later call returns that error and nothing is sent, received or written
/// any more. This is what makes borrowed buffers sound: a request either completes (and
/// releases its buffer) or the engine never touches memory again.
pub struct Engine<P: Port> {
    ch: Channel<P>,
    st: State,
    broken: Option<Error>,
}

fn matches(want_src: i32, want_tag: i32, src: i32, tag: i32) -> bool {
    (want_src == ANY_SOURCE || want_src == src) && (want_tag == ANY_TAG || want_tag == tag)
}

impl<P: Port> Engine<P> {
    /// An engine over `ch`, this rank being `me` of `size` (world).
    pub fn new(ch: Channel<P>, me: u32, size: u32, max_message: usize) -> Result<Self> {
        let room = max_message.saturating_sub(RTS_LEN + 64);
        if room < 256 {
            return Err(Error::Other(format!(
                "channel messages of {max_message} bytes are too small for mpi-lite"
            )));
        }
        let eager = match std::env::var("SKIFMPI_EAGER") {
            Ok(v) => v
                .trim()
                .parse::<usize>()
                .map_err(|_| Error::Arg(format!("SKIFMPI_EAGER={v:?} is not a byte count")))?,
            Err(_) => DEFAULT_EAGER,
        };
        let port = ch.addr().port() as u16;
        Ok(Engine {
            ch,
            st: State {
                me,
                size,
                port,
                eager: eager.min(room),
                // Chunks of a quarter lane keep several in flight.
                chunk: (max_message / 4).clamp(256, room),
                reqs: Vec::new(),
                free: Vec::new(),
                posted_exact: FxMap::default(),
                posted_wild: Vec::new(),
                unex_by_key: FxMap::default(),
                unex: BTreeMap::new(),
                seq: 0,
                outq: (0..size).map(|_| VecDeque::new()).collect(),
                nout: 0,
                bsend_used: 0,
            },
            broken: None,
        })
    }

    /// World rank and size.
    pub fn world(&self) -> (u32, u32) {
        (self.st.me, self.st.size)
    }

    /// The eager limit in bytes.
    pub fn eager_limit(&self) -> usize {
        self.st.eager
    }

    /// Bytes of the attached Bsend buffer in use.
    pub fn bsend_used(&self) -> usize {
        self.st.bsend_used
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
        let kind = match (len <= self.st.eager, mode) {
            (false, _) => Kind::Rts,
            (true, Mode::Sync) => Kind::Sync,
            (true, Mode::Standard) => Kind::Eager,
        };
        // Payloads go straight from user memory; a noncontiguous one is packed once.
        let buf = match buf.as_contiguous() {
            Some(_) => buf,
            None => UserBuf::owned(buf.to_packed()),
        };
        let seq = self.st.next_seq();
        let id = self.st.alloc(Req {
            kind: ReqKind::Nothing,
            done: false,
            freed: false,
            status: Status::default(),
            err: None,
            seq,
        });
        let mut hdr = Header::new(kind, ctx, tag, src as u32, id);
        hdr.len = len as u64;
        if let Some(r) = self.st.get_mut(id) {
            r.kind = ReqKind::Send {
                hdr,
                buf: Some(buf),
                sent: 0,
                rreq: 0,
                bsend,
            };
        }
        self.st.bsend_used += bsend;
        let r = self.st.start_send(&self.ch, dst, id);
        r.map_err(|e| self.fail(e))?;
        Ok(id)
    }

    /// Posts a receive into `buf` from rank `src` (or `ANY_SOURCE`) of context `ctx` with
    /// `tag` (or `ANY_TAG`). `src == PROC_NULL` completes at once.
    pub fn irecv(&mut self, ctx: u16, src: i32, tag: i32, buf: UserBuf) -> Result<ReqId> {
        self.check()?;
        let seq = self.st.next_seq();
        let id = self.st.alloc(Req {
            kind: ReqKind::Nothing,
            done: false,
            freed: false,
            status: Status::default(),
            err: None,
            seq,
        });
        if src == PROC_NULL {
            let r = self.st.get_mut(id).expect("fresh");
            r.status = Status::proc_null();
            r.done = true;
            return Ok(id);
        }
        let found = self.st.take_unexpected(ctx, src, tag);
        if let Some(r) = self.st.get_mut(id) {
            r.kind = ReqKind::Recv {
                ctx,
                src,
                tag,
                buf,
                total: 0,
                got: 0,
            };
        }
        match found {
            Some(u) => self.st.deliver_unexpected(id, u),
            None => {
                if src == ANY_SOURCE || tag == ANY_TAG {
                    self.st.posted_wild.push(id);
                } else {
                    self.st
                        .posted_exact
                        .entry((ctx, src, tag))
                        .or_default()
                        .push_back(id);
                }
            }
        }
        Ok(id)
    }

    /// A completed request that needs no communication (PROC_NULL sends, …).
    pub fn done_request(&mut self) -> ReqId {
        let seq = self.st.next_seq();
        self.st.alloc(Req {
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
        self.st.get(id).is_some()
    }

    /// `MPI_Test` on one request: `None` while pending; when complete, releases the
    /// request and returns its status, or its error.
    pub fn test(&mut self, id: ReqId) -> Result<Option<Status>> {
        match self.st.get(id) {
            None => Err(Error::Request(format!("request {id} does not exist"))),
            Some(r) if !r.done => Ok(None),
            Some(_) => {
                let r = self.st.release(id);
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
        match self.st.get(id) {
            None => Err(Error::Request(format!("request {id} does not exist"))),
            Some(r) if !r.done => Ok(None),
            Some(r) => match &r.err {
                Some(e) => Err(e.clone()),
                None => Ok(Some(r.status)),
            },
        }
    }

    /// `true` if the request is complete (without releasing it).
    pub fn is_done(&self, id: ReqId) -> bool {
        self.st.get(id).is_some_and(|r| r.done)
    }

    /// `MPI_Wait`: progresses until `id` completes, then as [`Engine::test`].
    pub fn wait(&mut self, id: ReqId) -> Result<Status> {
        self.wait_until(|e| e.is_done(id) || !e.is_request(id))?;
        self.test(id)?
            .ok_or_else(|| Error::Intern("request not complete after wait".into()))
    }

    /// Progresses until `done(self)`; `PeerLost` and other channel errors end it.
    pub fn wait_until(&mut self, mut done: impl FnMut(&Self) -> bool) -> Result<()> {
        let mut idle = 0u32;
        loop {
            if done(self) {
                return Ok(());
            }
            if self.progress()? {
                idle = 0;
                continue;
            }
            idle += 1;
            if idle < 64 {
                std::hint::spin_loop();
            } else if self.st.nout > 0 {
                // Waiting for room at a receiver: let it run.
                if idle < 4096 {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(Duration::from_micros(20));
                }
            } else {
                // Waiting for a message: the channel's policy (spin, then sleep), bounded
                // so the loop rechecks `done` and lost peers.
                match self.ch.wait(Some(Duration::from_millis(50))) {
                    Ok(()) | Err(skifch::Error::TimedOut) => {}
                    Err(e) => return Err(self.fail(e.into())),
                }
            }
        }
    }

    /// `MPI_Request_free`: the request is released when it completes.
    pub fn request_free(&mut self, id: ReqId) -> Result<()> {
        match self.st.get_mut(id) {
            None => Err(Error::Request(format!("request {id} does not exist"))),
            Some(r) if r.done => {
                self.st.release(id);
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
        let Some(r) = self.st.get(id) else {
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
                let i = self.st.posted_wild.iter().position(|&x| x == id);
                i.map(|i| self.st.posted_wild.remove(i)).is_some()
            } else {
                self.st.remove_posted_exact((ctx, src, tag), id)
            };
            if removed {
                let r = self.st.get_mut(id).expect("live");
                r.status.cancelled = true;
                self.st.complete(id);
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
        if let Some(s) = self.st.peek_unexpected(ctx, src, tag) {
            return Ok(Some(s));
        }
        self.progress()?;
        Ok(self.st.peek_unexpected(ctx, src, tag))
    }

    /// `MPI_Probe`: waits for a matching message and returns its envelope.
    pub fn probe(&mut self, ctx: u16, src: i32, tag: i32) -> Result<Status> {
        if src == PROC_NULL {
            return Ok(Status::proc_null());
        }
        let mut found = None;
        self.wait_until(|e| {
            found = e.st.peek_unexpected(ctx, src, tag);
            found.is_some()
        })?;
        found.ok_or_else(|| Error::Intern("probe ended without a message".into()))
    }

    /// One round: pushes queued sends, then handles the messages waiting (a bounded
    /// number). `true` if anything happened.
    pub fn progress(&mut self) -> Result<bool> {
        self.check()?;
        let r = self.progress_inner();
        r.map_err(|e| self.fail(e))
    }

    fn progress_inner(&mut self) -> Result<bool> {
        let mut did = false;
        if self.st.nout > 0 {
            did |= self.st.flush(&self.ch)?;
        }
        for _ in 0..32 {
            match self.ch.try_recv() {
                Ok(m) => {
                    self.st.handle(&self.ch, m)?;
                    did = true;
                }
                Err(skifch::Error::WouldBlock) => break,
                Err(e) => return Err(e.into()),
            }
        }
        if did && self.st.nout > 0 {
            // Replies the handlers queued (CTS, ACK) go at once.
            self.st.flush(&self.ch)?;
        }
        Ok(did)
    }

    /// The error that broke the engine, if any.
    fn check(&self) -> Result<()> {
        match &self.broken {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Marks the engine broken by `e` (see [`Engine`]); returns `e`.
    fn fail(&mut self, e: Error) -> Error {
        self.broken.get_or_insert(e.clone());
        e
    }

    /// Pushes every queued send out (progressing meanwhile), for Finalize.
    pub fn flush_all(&mut self) -> Result<()> {
        self.wait_until(|e| e.st.nout == 0)
    }

    /// Blocking send of `data` on a collective context (mpi-lite's own collectives).
    pub fn coll_send(&mut self, ctx: u16, src: i32, dst: u32, tag: i32, data: &[u8]) -> Result<()> {
        let b = UserBuf::owned(data.to_vec());
        let id = self.isend(ctx, src, dst, tag, b, Mode::Standard, 0)?;
        self.wait(id).map(|_| ())
    }

    /// Blocking receive of exactly `len` bytes on a collective context.
    pub fn coll_recv(&mut self, ctx: u16, src: i32, tag: i32, len: usize) -> Result<Vec<u8>> {
        let mut out = vec![0u8; len];
        let b = UserBuf::owned(std::mem::take(&mut out));
        let id = self.irecv(ctx, src, tag, b)?;
        self.wait_until(|e| e.is_done(id))?;
        let r = self.st.release(id);
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

    /// Sends the first message of send `sreq` to `dst` now, or queues it behind what is
    /// queued for `dst` (per-destination order).
    fn start_send<P: Port>(&mut self, ch: &Channel<P>, dst: u32, sreq: u32) -> Result<()> {
        if self.outq[dst as usize].is_empty() {
            let addr = NetAddr::new(dst as u16, self.port);
            if self.send_req(ch, addr, sreq)? {
                return Ok(());
            }
        }
        self.queue(dst, Out::Req { sreq });
        Ok(())
    }

    /// Sends the first message of send `sreq`: `false` if the receiver's lane is full.
    /// A standard eager send completes here; the others wait for ACK or CTS.
    fn send_req<P: Port>(&mut self, ch: &Channel<P>, addr: NetAddr, sreq: u32) -> Result<bool> {
        let Some(Req {
            kind: ReqKind::Send { hdr, buf, .. },
            ..
        }) = self.get(sreq)
        else {
            return Err(Error::Intern(format!("send {sreq} vanished")));
        };
        let h = hdr.emit();
        let r = match hdr.kind {
            Kind::Rts => ch.send_whole(addr, &[IoSlice::new(&h)]),
            _ => {
                let data = buf.as_ref().and_then(|b| b.as_contiguous()).unwrap_or(&[]);
                ch.send_whole(addr, &[IoSlice::new(&h[..HDR]), IoSlice::new(data)])
            }
        };
        match r {
            Ok(()) => {}
            Err(skifch::Error::WouldBlock) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
        match hdr.kind {
            Kind::Eager => self.complete(sreq),
            Kind::Sync => {
                // The data is out; only the ACK is awaited.
                if let Some(Req {
                    kind: ReqKind::Send { buf, .. },
                    ..
                }) = self.get_mut(sreq)
                {
                    *buf = None;
                }
            }
            _ => {}
        }
        Ok(true)
    }

    fn queue(&mut self, dst: u32, o: Out) {
        self.outq[dst as usize].push_back(o);
        self.nout += 1;
    }

    /// Sends queued work until every queue is empty or blocked. `true` if anything went.
    fn flush<P: Port>(&mut self, ch: &Channel<P>) -> Result<bool> {
        let mut did = false;
        for dst in 0..self.size {
            let addr = NetAddr::new(dst as u16, self.port);
            while let Some(front) = self.outq[dst as usize].front() {
                match front {
                    Out::Msg(v) => match ch.send_whole(addr, &[IoSlice::new(v)]) {
                        Ok(()) => {}
                        Err(skifch::Error::WouldBlock) => break,
                        Err(e) => return Err(e.into()),
                    },
                    &Out::Req { sreq } => {
                        if !self.send_req(ch, addr, sreq)? {
                            break;
                        }
                    }
                    &Out::Data { sreq } => {
                        if !self.push_data(ch, addr, sreq)? {
                            break;
                        }
                    }
                }
                self.outq[dst as usize].pop_front();
                self.nout -= 1;
                did = true;
            }
        }
        Ok(did)
    }

    /// Sends chunks of rendezvous send `sreq` until it is all out (`true`) or the
    /// receiver's lane is full (`false`).
    fn push_data<P: Port>(&mut self, ch: &Channel<P>, addr: NetAddr, sreq: u32) -> Result<bool> {
        let chunk = self.chunk;
        let Some(Req {
            kind:
                ReqKind::Send {
                    buf: Some(buf),
                    sent,
                    rreq,
                    ..
                },
            ..
        }) = self.get_mut(sreq)
        else {
            return Err(Error::Intern(format!("rendezvous send {sreq} vanished")));
        };
        let h = Header::new(Kind::Data, 0, 0, *rreq, 0).emit();
        let data = buf
            .as_contiguous()
            .ok_or_else(|| Error::Intern("rendezvous buffer not contiguous".into()))?;
        while *sent < data.len() {
            let n = chunk.min(data.len() - *sent);
            match ch.send_whole(
                addr,
                &[
                    IoSlice::new(&h[..HDR]),
                    IoSlice::new(&data[*sent..*sent + n]),
                ],
            ) {
                Ok(()) => *sent += n,
                Err(skifch::Error::WouldBlock) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        }
        self.complete(sreq);
        Ok(true)
    }

    /// Handles one incoming message (never blocks: replies are queued).
    fn handle<P: Port>(&mut self, ch: &Channel<P>, m: Message<'_, P>) -> Result<()> {
        let world = m.src().rank();
        let mut hb = [0u8; RTS_LEN];
        let mut n = 0;
        for s in m.segments() {
            let k = s.len().min(RTS_LEN - n);
            hb[n..n + k].copy_from_slice(&s[..k]);
            n += k;
            if n == RTS_LEN {
                break;
            }
        }
        let Some(h) = Header::parse(&hb[..n]) else {
            return Err(Error::Intern(format!(
                "a {}-byte message from {} on the MPI port is not an mpi-lite message",
                m.len(),
                m.src()
            )));
        };
        if world >= self.size {
            return Err(Error::Intern(format!("message from unknown rank {world}")));
        }
        let payload_len = m.len() - HDR.min(m.len());
        match h.kind {
            Kind::Eager | Kind::Sync => {
                let src = h.a as i32;
                let ack = (h.kind == Kind::Sync).then_some((world, h.b));
                match self.match_posted(h.ctx, src, h.tag) {
                    Some(id) => {
                        self.fill_eager(id, src, h.tag, payload_len, |buf| copy_payload(&m, buf));
                        if let Some((w, s)) = ack {
                            self.ack(w, s);
                        }
                    }
                    None => {
                        let mut data = Vec::with_capacity(payload_len);
                        for_payload(&m, |s| data.extend_from_slice(s));
                        self.push_unexpected(Unex::Eager {
                            src,
                            tag: h.tag,
                            ctx: h.ctx,
                            data,
                            ack,
                        });
                    }
                }
            }
            Kind::Rts => {
                let (src, len) = (h.a as i32, h.len as usize);
                match self.match_posted(h.ctx, src, h.tag) {
                    Some(id) => self.start_rndv(id, src, h.tag, world, h.b, len),
                    None => self.push_unexpected(Unex::Rts {
                        src,
                        tag: h.tag,
                        ctx: h.ctx,
                        world,
                        sreq: h.b,
                        len,
                    }),
                }
            }
            Kind::Cts => {
                if let Some(Req {
                    kind: ReqKind::Send { rreq, .. },
                    ..
                }) = self.get_mut(h.a)
                {
                    *rreq = h.b;
                    self.queue(world, Out::Data { sreq: h.a });
                    // Start at once: the chunks may well fit now.
                    self.flush(ch)?;
                } else {
                    return Err(Error::Intern(format!("CTS for unknown send {}", h.a)));
                }
            }
            Kind::Data => {
                let id = h.a;
                let done = match self.get_mut(id) {
                    Some(Req {
                        kind:
                            ReqKind::Recv {
                                buf, total, got, ..
                            },
                        ..
                    }) => {
                        let mut off = *got;
                        for_payload(&m, |s| {
                            buf.write_packed(off, s);
                            off += s.len();
                        });
                        *got = off;
                        *got >= *total
                    }
                    _ => return Err(Error::Intern(format!("DATA for unknown receive {id}"))),
                };
                if done {
                    self.complete(id);
                }
            }
            Kind::Ack => self.complete(h.a),
        }
        Ok(())
    }

    fn ack(&mut self, world: u32, sreq: u32) {
        let h = Header::new(Kind::Ack, 0, 0, sreq, 0).emit();
        self.queue(world, Out::Msg(h[..HDR].to_vec()));
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
            r.status = Status {
                source: src,
                tag,
                error: 0,
                bytes: len.min(cap),
                cancelled: false,
            };
            if len > cap {
                r.err = Some(Error::Truncate { len, cap });
                r.status.error = class::TRUNCATE;
            }
        }
        self.complete(id);
    }

    /// Receive `id` matched an RTS: answer CTS; DATA completes it.
    fn start_rndv(&mut self, id: ReqId, src: i32, tag: i32, world: u32, sreq: u32, len: usize) {
        let Some(r) = self.get_mut(id) else { return };
        if let ReqKind::Recv { buf, total, .. } = &mut r.kind {
            *total = len;
            let cap = buf.packed_len();
            r.status = Status {
                source: src,
                tag,
                error: 0,
                bytes: len.min(cap),
                cancelled: false,
            };
            if len > cap {
                // The data still comes (the sender cannot be stopped); the excess is dropped.
                r.err = Some(Error::Truncate { len, cap });
                r.status.error = class::TRUNCATE;
            }
        }
        let h = Header::new(Kind::Cts, 0, 0, sreq, id).emit();
        self.queue(world, Out::Msg(h[..HDR].to_vec()));
    }

    fn deliver_unexpected(&mut self, id: ReqId, u: Unex) {
        match u {
            Unex::Eager {
                src,
                tag,
                data,
                ack,
                ..
            } => {
                let len = data.len();
                self.fill_eager(id, src, tag, len, |b| b.write_packed(0, &data));
                if let Some((w, s)) = ack {
                    self.ack(w, s);
                }
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
        self.unex_by_key
            .entry((ctx, src, tag))
            .or_default()
            .push_back(seq);
        self.unex.insert(seq, u);
    }

    /// Sequence number of the earliest unexpected message matching.
    fn find_unexpected(&self, ctx: u16, src: i32, tag: i32) -> Option<u64> {
        if self.unex.is_empty() {
            return None;
        }
        if src != ANY_SOURCE && tag != ANY_TAG {
            return self
                .unex_by_key
                .get(&(ctx, src, tag))
                .and_then(|q| q.front().copied());
        }
        self.unex.iter().find_map(|(&seq, u)| {
            let (c, s, t, _) = u.envelope();
            (c == ctx && matches(src, tag, s, t)).then_some(seq)
        })
    }

    fn take_unexpected(&mut self, ctx: u16, src: i32, tag: i32) -> Option<Unex> {
        let seq = self.find_unexpected(ctx, src, tag)?;
        let u = self.unex.remove(&seq)?;
        let (c, s, t, _) = u.envelope();
        if let Some(q) = self.unex_by_key.get_mut(&(c, s, t)) {
            // The earliest of its key: anything earlier with this key would have matched.
            q.pop_front();
        }
        Some(u)
    }

    fn peek_unexpected(&self, ctx: u16, src: i32, tag: i32) -> Option<Status> {
        let seq = self.find_unexpected(ctx, src, tag)?;
        let (_, s, t, len) = self.unex.get(&seq)?.envelope();
        Some(Status {
            source: s,
            tag: t,
            error: 0,
            bytes: len,
            cancelled: false,
        })
    }
}

/// Calls `f` on each piece of the message after the header.
fn for_payload<P: Port>(m: &Message<'_, P>, mut f: impl FnMut(&[u8])) {
    let mut skip = HDR;
    for s in m.segments() {
        let k = skip.min(s.len());
        skip -= k;
        if k < s.len() {
            f(&s[k..]);
        }
    }
}

fn copy_payload<P: Port>(m: &Message<'_, P>, buf: &mut UserBuf) {
    let mut off = 0;
    for_payload(m, |s| {
        buf.write_packed(off, s);
        off += s.len();
    });
}
