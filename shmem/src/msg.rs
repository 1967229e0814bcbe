//! The message-based path: put, get and atomics as requests over this library's channel
//! (port 2), served by the target PE inside its own library calls (every call that waits
//! polls; [`crate::World`] can also run a progress thread, `SKIFSHMEM_PROGRESS_THREAD=1`).
//! Used when the driver offers no remote memory access or `SKIFSHMEM_RMA=off`.
//!
//! ## Wire format
//! A 40-byte header `[kind, seg, width, op, 0,0,0,0][off u64][a u64][b u64][token u64]`
//! (little-endian), then the payload (put data, get reply data, exchange bytes). Large
//! puts and get replies are split into chunks of at most `max_message − 40` bytes, each
//! placed straight at its offset in the destination.
//!
//! ## Completion
//! Every put chunk and non-fetching atomic is acknowledged; the target sends one
//! cumulative `ACK` per source at the end of each progress sweep, so `quiet` (all acks in)
//! costs one message per target and not one per put. Messages of one source to one target
//! arrive in order (one single-producer lane per pair), so `fence` needs nothing.
//!
//! ## Never deadlocking on a non-buffering channel
//! A request that finds the target's lane full runs the progress sweep while it retries,
//! so two PEs sending to each other keep draining each other. Replies and acks are never
//! waited for inside a sweep: one that does not fit is queued locally (in order) and
//! retried at the start of the next sweep.
#![allow(unsafe_code)] // applying requests to this PE's memory through raw pointers

use std::collections::{HashMap, VecDeque};
use std::io::IoSlice;

use skifch::rma::{amo_at, Amo};
use skifch::{Channel, Error as ChError, NetAddr, Port};

use crate::Error;

pub(crate) const HDR: usize = 40;
pub(crate) const PORT: u32 = 2;

const PUT: u8 = 1;
const GET: u8 = 2;
const GETR: u8 = 3;
const AMO: u8 = 4;
const AMOR: u8 = 5;
const ACK: u8 = 6;
const EXCH: u8 = 7;

#[derive(Clone, Copy, Default)]
struct Hdr {
    kind: u8,
    seg: u8,
    width: u8,
    op: u8,
    off: u64,
    a: u64,
    b: u64,
    tok: u64,
}

impl Hdr {
    fn bytes(&self) -> [u8; HDR] {
        let mut h = [0u8; HDR];
        h[..4].copy_from_slice(&[self.kind, self.seg, self.width, self.op]);
        h[8..16].copy_from_slice(&self.off.to_le_bytes());
        h[16..24].copy_from_slice(&self.a.to_le_bytes());
        h[24..32].copy_from_slice(&self.b.to_le_bytes());
        h[32..40].copy_from_slice(&self.tok.to_le_bytes());
        h
    }
    fn parse(m: &[u8]) -> Option<Hdr> {
        let w = |i: usize| -> u64 {
            let mut b = [0u8; 8];
            b.copy_from_slice(&m[i..i + 8]);
            u64::from_le_bytes(b)
        };
        (m.len() >= HDR).then(|| Hdr {
            kind: m[0],
            seg: m[1],
            width: m[2],
            op: m[3],
            off: w(8),
            a: w(16),
            b: w(24),
            tok: w(32),
        })
    }
}

fn op_code(op: Amo) -> (u8, u64, u64) {
    match op {
        Amo::Fetch => (0, 0, 0),
        Amo::Set(v) => (1, v, 0),
        Amo::Swap(v) => (2, v, 0),
        Amo::CompareSwap { expected, new } => (3, expected, new),
        Amo::Add(v) => (4, v, 0),
        Amo::And(v) => (5, v, 0),
        Amo::Or(v) => (6, v, 0),
        Amo::Xor(v) => (7, v, 0),
    }
}

fn op_decode(c: u8, a: u64, b: u64) -> Option<Amo> {
    Some(match c {
        0 => Amo::Fetch,
        1 => Amo::Set(a),
        2 => Amo::Swap(a),
        3 => Amo::CompareSwap {
            expected: a,
            new: b,
        },
        4 => Amo::Add(a),
        5 => Amo::And(a),
        6 => Amo::Or(a),
        7 => Amo::Xor(a),
        _ => return None,
    })
}

enum Reply {
    Get { dst: usize, len: usize, got: usize },
    Amo(Option<u64>),
}

/// This PE's local segments as the target of requests: (base address, length).
pub(crate) type Segs = [(usize, usize); 2];

/// The channel and the message path's state (one lock in [`crate::World`]).
pub(crate) struct Net<P: Port> {
    pub(crate) ch: Channel<P>,
    me: u32,
    unacked: Vec<u64>,
    to_ack: Vec<u64>,
    backlog: VecDeque<(u32, Vec<u8>)>,
    replies: HashMap<u64, Reply>,
    next_tok: u64,
    exch: Vec<(u32, u64, Vec<u8>)>,
    /// Requests that arrived before the segments were set up (during init).
    early: VecDeque<(u32, Vec<u8>)>,
    pub(crate) ready: bool,
    pub(crate) max_msg: usize,
}

impl<P: Port> Net<P> {
    pub(crate) fn new(ch: Channel<P>, me: u32, n: u32, max_msg: usize) -> Self {
        Net {
            ch,
            me,
            unacked: vec![0; n as usize],
            to_ack: vec![0; n as usize],
            backlog: VecDeque::new(),
            replies: HashMap::new(),
            next_tok: 1,
            exch: Vec::new(),
            early: VecDeque::new(),
            ready: false,
            max_msg,
        }
    }

    fn addr(pe: u32) -> NetAddr {
        NetAddr::new(pe as u16, PORT as u16)
    }

    /// Sends one request, running progress sweeps while the target's lane is full.
    fn send_req(&mut self, segs: &Segs, pe: u32, hdr: &Hdr, payload: &[u8]) -> Result<(), Error> {
        let h = hdr.bytes();
        loop {
            match self
                .ch
                .send_whole(Self::addr(pe), &[IoSlice::new(&h), IoSlice::new(payload)])
            {
                Ok(()) => return Ok(()),
                Err(ChError::WouldBlock) => {
                    self.progress(segs)?;
                    std::thread::yield_now();
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Queues or sends a reply without ever waiting.
    fn reply(&mut self, pe: u32, msg: Vec<u8>) -> Result<(), Error> {
        if self.backlog.is_empty() {
            match self.ch.send_whole(Self::addr(pe), &[IoSlice::new(&msg)]) {
                Ok(()) => return Ok(()),
                Err(ChError::WouldBlock) => {}
                Err(ChError::Unreachable { .. }) => return Ok(()), // requester finalized
                Err(e) => return Err(e.into()),
            }
        }
        self.backlog.push_back((pe, msg));
        Ok(())
    }

    /// One progress sweep: retries queued replies, serves every waiting message, sends
    /// the cumulative acks. Fails when a PE is lost.
    pub(crate) fn progress(&mut self, segs: &Segs) -> Result<(), Error> {
        while let Some((pe, msg)) = self.backlog.pop_front() {
            match self.ch.send_whole(Self::addr(pe), &[IoSlice::new(&msg)]) {
                Ok(()) | Err(ChError::Unreachable { .. }) => {}
                Err(ChError::WouldBlock) => {
                    self.backlog.push_front((pe, msg));
                    break;
                }
                Err(e) => return Err(e.into()),
            }
        }
        if self.ready {
            while let Some((src, m)) = self.early.pop_front() {
                self.handle(segs, src, &m)?;
            }
        }
        for _ in 0..64 {
            let (src, m) = match self.ch.try_recv() {
                Ok(m) => {
                    let src = m.src().rank();
                    // Chunks of a get reply are copied straight from the lane.
                    if let Some(seg) = m.as_contiguous() {
                        if !self.ready && !matches!(seg.first(), Some(&EXCH)) {
                            self.early.push_back((src, seg.to_vec()));
                            continue;
                        }
                        let seg = seg.to_vec();
                        drop(m);
                        (src, seg)
                    } else {
                        let v = m.to_vec();
                        drop(m);
                        if !self.ready && !matches!(v.first(), Some(&EXCH)) {
                            self.early.push_back((src, v));
                            continue;
                        }
                        (src, v)
                    }
                }
                Err(ChError::WouldBlock) => break,
                Err(e) => return Err(e.into()),
            };
            self.handle(segs, src, &m)?;
        }
        for pe in 0..self.to_ack.len() {
            let n = std::mem::take(&mut self.to_ack[pe]);
            if n > 0 {
                let h = Hdr {
                    kind: ACK,
                    a: n,
                    ..Hdr::default()
                };
                self.reply(pe as u32, h.bytes().to_vec())?;
            }
        }
        Ok(())
    }

    fn local(segs: &Segs, seg: u8, off: u64, len: usize) -> Option<usize> {
        let &(base, size) = segs.get(seg as usize)?;
        let off = usize::try_from(off).ok()?;
        (off.checked_add(len)? <= size).then_some(base + off)
    }

    fn handle(&mut self, segs: &Segs, src: u32, m: &[u8]) -> Result<(), Error> {
        let Some(h) = Hdr::parse(m) else {
            return Err(Error::Protocol(format!(
                "a {}-byte message from PE {src}",
                m.len()
            )));
        };
        let body = &m[HDR..];
        match h.kind {
            PUT => {
                let Some(p) = Self::local(segs, h.seg, h.off, body.len()) else {
                    return Err(Error::Protocol(format!(
                        "PE {src} put {} bytes at offset {:#x} outside segment {}",
                        body.len(),
                        h.off,
                        h.seg
                    )));
                };
                // SAFETY: `local` checked the range lies in this PE's segment, which lives
                // as long as the world; the program accesses it only as one-sided memory.
                unsafe { std::ptr::copy_nonoverlapping(body.as_ptr(), p as *mut u8, body.len()) };
                self.to_ack[src as usize] += 1;
            }
            GET => {
                let len = h.a as usize;
                let Some(p) = Self::local(segs, h.seg, h.off, len) else {
                    return Err(Error::Protocol(format!(
                        "PE {src} got {len} bytes at offset {:#x} outside segment {}",
                        h.off, h.seg
                    )));
                };
                let chunk = (self.max_msg - HDR).max(1);
                let mut done = 0;
                loop {
                    let n = chunk.min(len - done);
                    let r = Hdr {
                        kind: GETR,
                        off: done as u64,
                        tok: h.tok,
                        ..Hdr::default()
                    };
                    let mut msg = Vec::with_capacity(HDR + n);
                    msg.extend_from_slice(&r.bytes());
                    // SAFETY: p+done..p+done+n lies in the checked range.
                    msg.extend_from_slice(unsafe {
                        std::slice::from_raw_parts((p + done) as *const u8, n)
                    });
                    self.reply(src, msg)?;
                    done += n;
                    if done >= len {
                        break;
                    }
                }
            }
            GETR => {
                if let Some(Reply::Get { dst, len, got }) = self.replies.get_mut(&h.tok) {
                    let off = h.off as usize;
                    if off.checked_add(body.len()).map_or(true, |e| e > *len) {
                        return Err(Error::Protocol(format!(
                            "a get reply from PE {src} overruns its buffer"
                        )));
                    }
                    // SAFETY: the requester registered dst..dst+len and waits for the reply;
                    // the range was checked.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            body.as_ptr(),
                            (*dst + off) as *mut u8,
                            body.len(),
                        )
                    };
                    *got += body.len();
                }
            }
            AMO => {
                let w = h.width as usize;
                let op = op_decode(h.op, h.a, h.b);
                let p =
                    Self::local(segs, h.seg, h.off, w).filter(|p| (w == 4 || w == 8) && p % w == 0);
                let (Some(p), Some(op)) = (p, op) else {
                    return Err(Error::Protocol(format!(
                        "PE {src} sent a bad atomic ({w} bytes at offset {:#x} of segment {})",
                        h.off, h.seg
                    )));
                };
                // SAFETY: checked in range and aligned; the location is only accessed
                // atomically or by raw copies.
                let old = unsafe { amo_at(p as *mut u8, w, op) };
                if h.tok == 0 {
                    self.to_ack[src as usize] += 1;
                } else {
                    let r = Hdr {
                        kind: AMOR,
                        a: old,
                        tok: h.tok,
                        ..Hdr::default()
                    };
                    self.reply(src, r.bytes().to_vec())?;
                }
            }
            AMOR => {
                if let Some(Reply::Amo(v)) = self.replies.get_mut(&h.tok) {
                    *v = Some(h.a);
                }
            }
            ACK => {
                let u = &mut self.unacked[src as usize];
                *u = u.saturating_sub(h.a);
            }
            EXCH => self.exch.push((src, h.a, body.to_vec())),
            k => {
                return Err(Error::Protocol(format!(
                    "unknown message kind {k} from PE {src}"
                )))
            }
        }
        Ok(())
    }

    /// Puts `src` at `off` of segment `seg` of `pe` (chunked); locally complete at return.
    pub(crate) fn put(
        &mut self,
        segs: &Segs,
        pe: u32,
        seg: u8,
        off: usize,
        src: &[u8],
    ) -> Result<(), Error> {
        let chunk = (self.max_msg - HDR).max(1);
        let mut done = 0;
        loop {
            let n = chunk.min(src.len() - done);
            let h = Hdr {
                kind: PUT,
                seg,
                off: (off + done) as u64,
                ..Hdr::default()
            };
            self.send_req(segs, pe, &h, &src[done..done + n])?;
            self.unacked[pe as usize] += 1;
            done += n;
            if done >= src.len() {
                return Ok(());
            }
        }
    }

    /// Starts a get of `len` bytes into `dst`; returns its token for [`Net::get_done`].
    pub(crate) fn get_start(
        &mut self,
        segs: &Segs,
        pe: u32,
        seg: u8,
        off: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<u64, Error> {
        let tok = self.next_tok;
        self.next_tok += 1;
        self.replies.insert(
            tok,
            Reply::Get {
                dst: dst as usize,
                len,
                got: 0,
            },
        );
        let h = Hdr {
            kind: GET,
            seg,
            off: off as u64,
            a: len as u64,
            tok,
            ..Hdr::default()
        };
        self.send_req(segs, pe, &h, &[])?;
        Ok(tok)
    }

    /// `true` (and forgets the token) once the get's data has all arrived.
    pub(crate) fn get_done(&mut self, tok: u64) -> bool {
        let done =
            matches!(self.replies.get(&tok), Some(Reply::Get { len, got, .. }) if got >= len);
        if done {
            self.replies.remove(&tok);
        }
        done
    }

    /// Sends an atomic; a fetching one returns a token for [`Net::amo_done`].
    #[allow(clippy::too_many_arguments)] // mirrors the OpenSHMEM call
    pub(crate) fn amo_start(
        &mut self,
        segs: &Segs,
        pe: u32,
        seg: u8,
        off: usize,
        width: usize,
        op: Amo,
        fetch: bool,
    ) -> Result<u64, Error> {
        let (code, a, b) = op_code(op);
        let tok = if fetch {
            let t = self.next_tok;
            self.next_tok += 1;
            self.replies.insert(t, Reply::Amo(None));
            t
        } else {
            0
        };
        let h = Hdr {
            kind: AMO,
            seg,
            width: width as u8,
            op: code,
            off: off as u64,
            a,
            b,
            tok,
        };
        self.send_req(segs, pe, &h, &[])?;
        if !fetch {
            self.unacked[pe as usize] += 1;
        }
        Ok(tok)
    }

    /// The fetched value once the atomic's reply arrived.
    pub(crate) fn amo_done(&mut self, tok: u64) -> Option<u64> {
        let v = match self.replies.get(&tok) {
            Some(Reply::Amo(v)) => *v,
            _ => None,
        };
        if v.is_some() {
            self.replies.remove(&tok);
        }
        v
    }

    /// Whether every put and non-fetching atomic issued so far is acknowledged.
    pub(crate) fn all_acked(&self) -> bool {
        self.unacked.iter().all(|&u| u == 0)
    }

    /// Sends exchange message `seq` (init-time all-gather) to every other PE.
    pub(crate) fn exch_send(
        &mut self,
        segs: &Segs,
        n: u32,
        seq: u64,
        bytes: &[u8],
    ) -> Result<(), Error> {
        let me = self.me;
        for pe in (0..n).filter(|&p| p != me) {
            let h = Hdr {
                kind: EXCH,
                a: seq,
                ..Hdr::default()
            };
            self.send_req(segs, pe, &h, bytes)?;
        }
        Ok(())
    }

    /// Takes PE `pe`'s exchange message `seq` if it has arrived.
    pub(crate) fn exch_take(&mut self, pe: u32, seq: u64) -> Option<Vec<u8>> {
        let i = self.exch.iter().position(|e| e.0 == pe && e.1 == seq)?;
        Some(self.exch.swap_remove(i).2)
    }
}
