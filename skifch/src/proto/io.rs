//! The send half of an endpoint: per-destination queues, the encoding of active messages
//! (inline or long), and [`Io`], the handle a handler gets to send with. Its sends never
//! wait: a message that does not fit the receiver's lane now is copied into that
//! destination's queue and sent, in order, by later progress.

use std::collections::{HashMap, VecDeque};
use std::io::IoSlice;

use super::header::{self, Head, F_ERROR, F_LONG, F_REQUEST, H_CHUNK, H_REPLY, MAX_HDR, MAX_LONG};
use super::request::{ReqId, ReqSlot};
use super::xfer::InXfer;
use super::{Landing, ReplyTo, FIRST_RESERVED};
use crate::{Channel, Error, NetAddr, Port, Result};

/// Handler errors kept for the application at most.
const MAX_DEFERRED: usize = 64;

/// Everything of an endpoint that sending, requests and long transfers change (all but
/// the channel, the handlers and the contexts).
pub(super) struct IoState {
    pub(super) rank: u32,
    pub(super) size: u32,
    pub(super) port: u16,
    pub(super) max_msg: usize,
    /// Bytes per message of a long transfer.
    pub(super) chunk: usize,
    /// Messages waiting per destination (behind a full lane).
    pub(super) out: Vec<VecDeque<Vec<u8>>>,
    /// Messages in all of `out`.
    pub(super) queued: usize,
    pub(super) reqs: Vec<ReqSlot>,
    pub(super) free: Vec<u16>,
    /// Id of the next outgoing long transfer.
    pub(super) xfer: u16,
    /// Incoming long transfers by (source, transfer id).
    pub(super) inx: HashMap<(u32, u16), InXfer>,
    /// Handler and protocol errors for the application's next poll.
    pub(super) deferred: VecDeque<Error>,
}

impl IoState {
    /// Nothing waits in the queue for `dst`: a message to it may go to the channel now
    /// without overtaking one (per-destination order). The total is tested first, the
    /// common case of no queue at all.
    #[inline(always)]
    pub(super) fn nothing_queued_for(&self, dst: u32) -> bool {
        self.queued == 0 || self.out[dst as usize].is_empty()
    }

    /// A user message of handler `h` with `arg` and no extra arguments — its header word
    /// and `data` — to `dst` through the driver's word path ([`Channel::try_send_word`]):
    /// `false` (nothing sent) where the driver does not take it now. The caller keeps
    /// per-destination order (nothing queued for `dst`).
    #[inline(always)]
    pub(super) fn try_word<P: Port>(
        &self,
        ch: &Channel<P>,
        dst: u32,
        h: u8,
        arg: u32,
        data: &[u8],
    ) -> bool {
        ch.try_send_word(
            NetAddr::new(dst as u16, self.port),
            header::word(h, 0, 0, arg),
            data,
        )
    }

    pub(super) fn new(rank: u32, size: u32, port: u16, max_msg: usize) -> IoState {
        IoState {
            rank,
            size,
            port,
            max_msg,
            // Up to 4 chunks in flight per lane, 8-byte multiples. (Over the ofi driver on
            // `net` a chunk of a whole receive buffer, 131048 bytes instead of 32760 of which
            // three share a buffer, made mpi-lite's 1 MiB bandwidth between two namespaces
            // lower in 6 of 6 alternating pairs: docs/results-2026-11-29-ofi-speed.)
            chunk: ((max_msg / 4).max(2 * MAX_HDR)) & !7,
            out: (0..size).map(|_| VecDeque::new()).collect(),
            queued: 0,
            reqs: Vec::new(),
            free: Vec::new(),
            xfer: 0,
            inx: HashMap::new(),
            deferred: VecDeque::new(),
        }
    }

    #[cold]
    pub(super) fn defer(&mut self, e: Error) {
        // Kept in order; a flood of failures keeps the first ones.
        if self.deferred.len() < MAX_DEFERRED {
            self.deferred.push_back(e);
        }
    }

    pub(super) fn check_dst(&self, dst: u32) -> Result<()> {
        if dst >= self.size {
            return Err(Error::Unreachable {
                addr: NetAddr::new(dst.min(u16::MAX as u32) as u16, self.port),
                why: crate::Unreachable::NoSuchRank,
            });
        }
        Ok(())
    }

    /// Sends what is queued for `dst` until its lane is full.
    pub(super) fn flush_dst<P: Port>(&mut self, ch: &Channel<P>, dst: u32) -> Result<()> {
        let addr = NetAddr::new(dst as u16, self.port);
        let q = &mut self.out[dst as usize];
        while let Some(m) = q.front() {
            match ch.send_whole(addr, &[IoSlice::new(m)]) {
                Ok(()) => {
                    q.pop_front();
                    self.queued -= 1;
                }
                Err(Error::WouldBlock) => break,
                Err(e) => {
                    // The destination is gone: what was queued for it cannot be delivered.
                    self.queued -= q.len();
                    q.clear();
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    #[inline]
    pub(super) fn flush_all<P: Port>(&mut self, ch: &Channel<P>) {
        if self.queued > 0 {
            self.flush_queued(ch);
        }
    }

    #[cold]
    fn flush_queued<P: Port>(&mut self, ch: &Channel<P>) {
        for d in 0..self.size {
            if !self.out[d as usize].is_empty() {
                // A destination that is gone loses its queue; that is reported like a
                // handler error, not as the failure of whatever call is making progress.
                if let Err(e) = self.flush_dst(ch, d) {
                    self.defer(e);
                }
            }
        }
    }

    /// One whole message (the concatenation of `iov`) to `dst` behind its queue, or into
    /// the queue. Inline, with the queuing out of line: a handler's reply is this send
    /// (an AM Short reply: 158 -> 125 instructions above the driver, callgrind). Always:
    /// with plain `inline` libgasnet's reply called it (`gasnetc_am_reply` 277 -> 226).
    #[inline(always)]
    pub(super) fn push_or_queue<P: Port>(
        &mut self,
        ch: &Channel<P>,
        dst: u32,
        iov: &[IoSlice<'_>],
    ) -> Result<()> {
        if self.nothing_queued_for(dst) {
            let addr = NetAddr::new(dst as u16, self.port);
            match ch.send_whole(addr, iov) {
                Err(Error::WouldBlock) => {}
                r => return r,
            }
        }
        self.queue(dst, iov)
    }

    #[cold]
    #[inline(never)]
    fn queue(&mut self, dst: u32, iov: &[IoSlice<'_>]) -> Result<()> {
        let msg: Vec<u8> = iov.iter().flat_map(|s| s.iter().copied()).collect();
        self.out[dst as usize].push_back(msg);
        self.queued += 1;
        Ok(())
    }
}

/// How an endpoint half hands one whole channel message to the channel: [`Io`] queues
/// what does not fit; the endpoint itself (outside handlers) waits with progress. The
/// encoding of active messages is written once over it.
pub(super) trait Out {
    fn st(&self) -> &IoState;
    fn st_mut(&mut self) -> &mut IoState;
    /// One whole channel message `hdr ++ data` to `dst`, behind anything queued for it.
    fn push(&mut self, dst: u32, hdr: &[u8], data: &[u8]) -> Result<()>;
    /// As [`Out::push`] for a message without payload (`msg` alone): sent as one buffer,
    /// which the driver copies without walking an iovec (an AM Short's shm send: 179 -> 110
    /// instructions, callgrind). Separate so that sends with a payload (MPI eager) pay no
    /// test for it.
    fn push_alone(&mut self, dst: u32, msg: &[u8]) -> Result<()>;

    /// Sends one active message: inline with the header built in place (the fast path),
    /// else through [`Out::emit`].
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn emit_fields(
        &mut self,
        dst: u32,
        h: u8,
        flags: u8,
        id: u16,
        arg: u32,
        args: &[u64],
        data: &[u8],
    ) -> Result<()> {
        let n = 8 + 8 * args.len();
        let st = self.st();
        if args.len() <= 3 && dst < st.size && n + data.len() <= st.max_msg {
            let (hb, n) = header_in_place(h, flags, id, arg, args);
            if data.is_empty() {
                return self.push_alone(dst, &hb[..n]);
            }
            return self.push(dst, &hb[..n], data);
        }
        if args.len() > 3 {
            return Err(too_many_args());
        }
        self.emit(dst, &Head::new(h, flags, id, arg, args), data)
    }

    /// Sends one active message (inline or long).
    fn emit(&mut self, dst: u32, head: &Head, data: &[u8]) -> Result<()> {
        self.st().check_dst(dst)?;
        let mut hb = [0u8; MAX_HDR];
        let n = head.encode(&mut hb);
        if n + data.len() <= self.st().max_msg {
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
        let st = self.st_mut();
        let xid = st.xfer;
        st.xfer = xid.wrapping_add(1);
        let chunk = st.chunk;
        let mut h = *head;
        h.flags |= F_LONG;
        h.long = Some((data.len() as u64, xid));
        let n = h.encode(&mut hb);
        let first = (chunk - n).min(data.len());
        self.push(dst, &hb[..n], &data[..first])?;
        let mut cb = [0u8; MAX_HDR];
        let cn = Head::new(H_CHUNK, 0, xid, 0, &[]).encode(&mut cb);
        let mut off = first;
        while off < data.len() {
            let k = (chunk - cn).min(data.len() - off);
            self.push(dst, &cb[..cn], &data[off..off + k])?;
            off += k;
        }
        Ok(())
    }

    /// A request: allocates its slot, sends, frees the slot again if sending failed.
    #[allow(clippy::too_many_arguments)]
    fn emit_request(
        &mut self,
        dst: u32,
        h: u8,
        arg: u32,
        args: &[u64],
        data: &[u8],
        reply: Landing,
    ) -> Result<ReqId> {
        check_user(h, args)?;
        self.st().check_dst(dst)?;
        let id = self.st_mut().alloc_req(dst, reply)?;
        let r = self.emit_fields(dst, h, F_REQUEST, id.idx, arg, args, data);
        if let Err(e) = r {
            self.st_mut().free_req(id.idx);
            return Err(e);
        }
        Ok(id)
    }

    fn emit_reply(&mut self, to: ReplyTo, arg: u32, args: &[u64], data: &[u8]) -> Result<()> {
        if args.len() > 3 {
            return Err(too_many_args());
        }
        self.emit_fields(to.rank, H_REPLY, 0, to.req, arg, args, data)
    }

    fn emit_reply_error(&mut self, to: ReplyTo, why: &str) -> Result<()> {
        self.emit(
            to.rank,
            &Head::new(H_REPLY, F_ERROR, to.req, 0, &[]),
            why.as_bytes(),
        )
    }
}

/// The wire header of a message with `args` (at most 3: the caller checked) built in
/// place: `(bytes, length)`. Every inline send builds its header here; for a header-only
/// send ([`super::Endpoint::send_header`], [`Io::send_header`]) it is the whole message.
#[inline(always)]
pub(super) fn header_in_place(
    h: u8,
    flags: u8,
    id: u16,
    arg: u32,
    args: &[u64],
) -> ([u8; 32], usize) {
    let mut hb = [0u8; 32];
    hb[..8].copy_from_slice(&header::word(h, flags | args.len() as u8, id, arg).to_le_bytes());
    for (d, a) in hb[8..].chunks_exact_mut(8).zip(args) {
        d.copy_from_slice(&a.to_le_bytes());
    }
    (hb, 8 + 8 * args.len().min(3))
}

/// Sends the channel message `hdr ++ data` whole: one iovec part when there is no payload
/// (see [`Out::push_alone`]).
#[inline(always)]
pub(super) fn send_msg<P: Port>(
    ch: &Channel<P>,
    addr: NetAddr,
    hdr: &[u8],
    data: &[u8],
) -> Result<()> {
    let iov = [IoSlice::new(hdr), IoSlice::new(data)];
    ch.send_whole(addr, if data.is_empty() { &iov[..1] } else { &iov })
}

/// A user send's handler id and argument count (inline: with a constant id, as every
/// library passes, the id test folds away).
#[inline(always)]
pub(super) fn check_user(h: u8, args: &[u64]) -> Result<()> {
    if h >= FIRST_RESERVED {
        return Err(reserved(h));
    }
    if args.len() > 3 {
        return Err(too_many_args());
    }
    Ok(())
}

#[cold]
fn reserved(h: u8) -> Error {
    Error::InvalidArgument(format!("proto: handler id {h} is reserved").into())
}

#[cold]
pub(super) fn too_many_args() -> Error {
    Error::InvalidArgument("proto: at most 3 extra u64 arguments".into())
}

/// What a handler sends with (and what [`super::Endpoint::io`] lends the application for
/// non-blocking sends). Every send returns at once: a message that does not fit the
/// receiver's lane now is copied into a per-destination queue and sent, in order, by later
/// progress (every later send to that rank goes behind it, so per-pair order holds). It
/// has no way to wait: a handler cannot block its endpoint's progress.
pub struct Io<'e, P: Port> {
    pub(super) ch: &'e Channel<P>,
    pub(super) st: &'e mut IoState,
}

impl<P: Port> Out for Io<'_, P> {
    fn st(&self) -> &IoState {
        self.st
    }
    fn st_mut(&mut self) -> &mut IoState {
        self.st
    }
    #[inline]
    fn push(&mut self, dst: u32, hdr: &[u8], data: &[u8]) -> Result<()> {
        let iov = [IoSlice::new(hdr), IoSlice::new(data)];
        self.st.push_or_queue(self.ch, dst, &iov)
    }
    #[inline]
    fn push_alone(&mut self, dst: u32, msg: &[u8]) -> Result<()> {
        self.st.push_or_queue(self.ch, dst, &[IoSlice::new(msg)])
    }
}

impl<P: Port> Io<'_, P> {
    /// This rank.
    pub fn rank(&self) -> u32 {
        self.st.rank
    }
    /// Ranks in the job.
    pub fn size(&self) -> u32 {
        self.st.size
    }
    /// Outgoing messages queued behind a full lane.
    pub fn queued(&self) -> usize {
        self.st.queued
    }

    /// Sends an active message to handler `h` of rank `dst` (one-way), queuing what does
    /// not fit now. Any length: payloads beyond one message go as a long transfer.
    pub fn send(&mut self, dst: u32, h: u8, arg: u32, args: &[u64], data: &[u8]) -> Result<()> {
        check_user(h, args)?;
        self.emit_fields(dst, h, 0, 0, arg, args, data)
    }

    /// [`Io::send`] of a message that is its header alone (no payload, at most 3
    /// arguments): without arguments the header word through the driver's word path where
    /// it takes it, else built in place and handed to the channel as one buffer, inline in
    /// the caller — a handler's AM Short reply (GASNet) without the general encoder.
    #[inline(always)]
    pub fn send_header(&mut self, dst: u32, h: u8, arg: u32, args: &[u64]) -> Result<()> {
        if h < FIRST_RESERVED && args.len() <= 3 && dst < self.st.size {
            // As `Endpoint::send_header`: the word alone into the lane when nothing is
            // queued for `dst` (GASNet's AM Short reply without arguments).
            if args.is_empty()
                && self.st.nothing_queued_for(dst)
                && self.st.try_word(self.ch, dst, h, arg, &[])
            {
                return Ok(());
            }
            let (hb, n) = header_in_place(h, 0, 0, arg, args);
            let msg = [IoSlice::new(&hb[..n])];
            return self.st.push_or_queue(self.ch, dst, &msg);
        }
        self.send(dst, h, arg, args, &[])
    }

    /// Sends an active message only if the receiver's lane takes it now (see
    /// [`super::Endpoint::try_send`]): `Ok(false)` when it would have to wait or queue.
    pub fn try_send(
        &mut self,
        dst: u32,
        h: u8,
        arg: u32,
        args: &[u64],
        data: &[u8],
    ) -> Result<bool> {
        check_user(h, args)?;
        self.st.check_dst(dst)?;
        let n = 8 + 8 * args.len();
        if n + data.len() > self.st.max_msg || !self.st.nothing_queued_for(dst) {
            return Ok(false);
        }
        let (hb, n) = header_in_place(h, 0, 0, arg, args);
        let addr = NetAddr::new(dst as u16, self.st.port);
        match send_msg(self.ch, addr, &hb[..n], data) {
            Ok(()) => Ok(true),
            Err(Error::WouldBlock) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Sends a request to handler `h` of `dst` whose reply lands in `reply`; the
    /// application waits for it with [`super::Endpoint::wait`] / `test`.
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

    /// Replies to a request (from its handler, or later).
    pub fn reply(&mut self, to: ReplyTo, arg: u32, args: &[u64], data: &[u8]) -> Result<()> {
        self.emit_reply(to, arg, args, data)
    }

    /// Replies with a failure: the requester's wait returns `InvalidArgument(why)`.
    pub fn reply_error(&mut self, to: ReplyTo, why: &str) -> Result<()> {
        self.emit_reply_error(to, why)
    }
}
