//! Message-path transfers of many pieces to one process, pipelined: a strided patch
//! larger than one request, a vector transfer, or a contiguous transfer larger than one
//! chunk. Up to [`WINDOW`] requests are in flight at once instead of one round trip each
//! (Global Arrays' matrix multiply fetches patches of hundreds of columns; one blocking
//! round trip per column made it minutes slower than the direct path). Small pieces
//! ([`Batch::piece`]) are gathered, as many as fit, into one request
//! ([`msg::H_PUTV`]…): over a device whose round trip is ~0.2 ms (fpga-model) a patch of
//! thousands of short rows is then a few requests, not thousands. Requests are issued in
//! order, each is answered by its target in order, and a gathered request's pieces are
//! applied in list order, so a put's pieces land as they did one by one; the batch
//! returns when every request is answered.
#![allow(unsafe_code)] // caller memory as the landing of a get's reply

use std::collections::VecDeque;
use std::sync::MutexGuard;

use skifch::proto::{Endpoint, Landing, ReqId};
use skifch::Port;

use crate::acc::{AccType, Scale};
use crate::msg::{self, Ctx};
use crate::{Error, Result};

/// What a transfer does with each piece.
#[derive(Clone, Copy)]
pub(crate) enum Op {
    /// Local → remote.
    Put,
    /// Remote → local.
    Get,
    /// remote += scale · local, element by element.
    Acc(AccType, Scale),
}

/// Requests of one batch in flight at once.
pub const WINDOW: usize = 16;

impl Op {
    /// Whether pieces of `self` and `o` may share a gathered request.
    fn same(self, o: Op) -> bool {
        match (self, o) {
            (Op::Put, Op::Put) | (Op::Get, Op::Get) => true,
            (Op::Acc(t, s), Op::Acc(u, r)) => t == u && s == r,
            _ => false,
        }
    }
}

/// Small pieces waiting to go as one gathered request.
struct Gather {
    op: Op,
    /// Pieces listed.
    n: u64,
    /// The list ([`msg::push_piece`]), then (put, accumulate) the pieces' data.
    list: Vec<u8>,
    data: Vec<u8>,
    /// Get: where each piece's data lands (address, length), in list order.
    dsts: Vec<(usize, usize)>,
}

/// A request in flight: its id, the reply length a get expects (0: an acknowledgement)
/// and, for a gathered get, where the reply's pieces land.
struct Flight {
    id: ReqId,
    want: usize,
    scatter: Vec<(usize, usize)>,
}

/// One transfer's requests to `proc` (see the module docs). Dropping a batch that did not
/// [`Batch::finish`] cancels what is still in flight, so no reply lands afterwards.
pub struct Batch<'a, P: Port> {
    ep: MutexGuard<'a, Endpoint<P, Ctx>>,
    proc: u32,
    inflight: VecDeque<Flight>,
    /// Pieces gathered and not yet sent.
    gather: Option<Gather>,
}

impl<'a, P: Port> Batch<'a, P> {
    /// A batch on `ep` (held for the batch's life) to process `proc`.
    pub fn new(ep: MutexGuard<'a, Endpoint<P, Ctx>>, proc: u32) -> Self {
        Batch {
            ep,
            proc,
            inflight: VecDeque::new(),
            gather: None,
        }
    }

    /// Sends one request of the batch (waiting first for the oldest when the window is
    /// full); `want`: the reply's length a get expects (0: an acknowledgement).
    fn issue(
        &mut self,
        h: u8,
        arg: u32,
        args: &[u64],
        data: &[u8],
        landing: Landing,
        want: usize,
    ) -> Result<()> {
        if self.inflight.len() >= WINDOW {
            self.wait_oldest()?;
        }
        let id = self.ep.request(self.proc, h, arg, args, data, landing)?;
        self.inflight.push_back(Flight {
            id,
            want,
            scatter: Vec::new(),
        });
        Ok(())
    }

    /// One request per `step` bytes of `src..src+len`, the piece at `at + offset`.
    ///
    /// # Safety
    /// `src..src+len` is readable (it is copied into the requests before this returns).
    unsafe fn each_chunk(
        &mut self,
        at: usize,
        src: *const u8,
        len: usize,
        step: usize,
        mut send: impl FnMut(&mut Self, u64, &[u8]) -> Result<()>,
    ) -> Result<()> {
        self.flush()?;
        // SAFETY: the caller's contract.
        let data = unsafe { std::slice::from_raw_parts(src, len) };
        let step = step.max(1);
        for (i, c) in data.chunks(step).enumerate() {
            send(self, (at + i * step) as u64, c)?;
        }
        Ok(())
    }

    /// Puts `len` bytes from `src` at `at` in `proc`'s memory, one request per `chunk`
    /// bytes.
    ///
    /// # Safety
    /// `src..src+len` is readable (it is copied into the requests before this returns).
    pub unsafe fn put_span(
        &mut self,
        at: usize,
        src: *const u8,
        len: usize,
        chunk: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe {
            self.each_chunk(at, src, len, chunk, |b, at, c| {
                b.issue(msg::H_PUT, 0, &[at], c, Landing::discard(), 0)
            })
        }
    }

    /// Accumulates `len` bytes from `src` at `at`, one request per `chunk` bytes rounded
    /// down to whole elements.
    ///
    /// # Safety
    /// As [`Batch::put_span`].
    pub unsafe fn acc_span(
        &mut self,
        ty: AccType,
        scale: Scale,
        at: usize,
        src: *const u8,
        len: usize,
        chunk: usize,
    ) -> Result<()> {
        let step = (chunk / ty.size()).max(1) * ty.size();
        // SAFETY: the caller's contract.
        unsafe {
            self.each_chunk(at, src, len, step, |b, at, c| {
                b.issue(
                    msg::H_ACC,
                    ty as u32,
                    &[at, scale[0], scale[1]],
                    c,
                    Landing::discard(),
                    0,
                )
            })
        }
    }

    /// Gets `len` bytes at `at` in `proc`'s memory into `dst`, one request per `chunk`
    /// bytes.
    ///
    /// # Safety
    /// `dst..dst+len` is writable and not otherwise accessed until the batch is finished
    /// or dropped.
    pub unsafe fn get_span(
        &mut self,
        at: usize,
        dst: *mut u8,
        len: usize,
        chunk: usize,
    ) -> Result<()> {
        self.flush()?;
        let chunk = chunk.max(1);
        let mut off = 0;
        while off < len {
            let n = chunk.min(len - off);
            // SAFETY: a part of the caller's range, which the batch waits for or cancels
            // before it ends.
            let landing = unsafe { Landing::raw(dst.add(off), n) };
            self.issue(
                msg::H_GET,
                0,
                &[(at + off) as u64, n as u64],
                &[],
                landing,
                n,
            )?;
            off += n;
        }
        Ok(())
    }

    /// `op` on one piece: `len` bytes at local `local` and remote `at`. A piece that fits
    /// a request joins the gathered one (sent when the next does not fit, or at
    /// [`Batch::finish`]); a larger one goes as requests of its own, after the gathered.
    ///
    /// # Safety
    /// `local..local+len` is readable (put, accumulate: copied before this returns) or
    /// as [`Batch::get_span`] (get).
    pub unsafe fn piece(
        &mut self,
        op: Op,
        local: *mut u8,
        at: usize,
        len: usize,
        chunk: usize,
    ) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let fits =
            |g: &Gather| g.op.same(op) && g.list.len() + g.data.len() + msg::PIECE + len <= chunk;
        if self.gather.as_ref().is_some_and(|g| !fits(g)) {
            self.flush()?;
        }
        if msg::PIECE + len > chunk {
            // SAFETY: the caller's contract, per operation.
            return unsafe {
                match op {
                    Op::Put => self.put_span(at, local, len, chunk),
                    Op::Get => self.get_span(at, local, len, chunk),
                    Op::Acc(ty, sc) => self.acc_span(ty, sc, at, local, len, chunk),
                }
            };
        }
        let g = self.gather.get_or_insert_with(|| Gather {
            op,
            n: 0,
            list: Vec::new(),
            data: Vec::new(),
            dsts: Vec::new(),
        });
        g.n += 1;
        msg::push_piece(&mut g.list, at, len);
        match op {
            Op::Get => g.dsts.push((local as usize, len)),
            // SAFETY: the caller's readable source of `len` bytes.
            _ => g
                .data
                .extend_from_slice(unsafe { std::slice::from_raw_parts(local, len) }),
        }
        Ok(())
    }

    /// Sends the gathered pieces, if any: a single one as the plain request.
    fn flush(&mut self) -> Result<()> {
        let Some(mut g) = self.gather.take() else {
            return Ok(());
        };
        if g.n == 1 {
            let at = u64::from_le_bytes(g.list[..8].try_into().unwrap_or_default());
            return match g.op {
                Op::Put => self.issue(msg::H_PUT, 0, &[at], &g.data, Landing::discard(), 0),
                Op::Acc(ty, sc) => self.issue(
                    msg::H_ACC,
                    ty as u32,
                    &[at, sc[0], sc[1]],
                    &g.data,
                    Landing::discard(),
                    0,
                ),
                Op::Get => {
                    let (dst, n) = g.dsts[0];
                    // SAFETY: the piece's destination, the caller's (`Batch::piece`).
                    let landing = unsafe { Landing::raw(dst as *mut u8, n) };
                    self.issue(msg::H_GET, 0, &[at, n as u64], &[], landing, n)
                }
            };
        }
        g.list.extend_from_slice(&g.data);
        match g.op {
            Op::Put => self.issue(msg::H_PUTV, 0, &[g.n], &g.list, Landing::discard(), 0),
            Op::Acc(ty, sc) => self.issue(
                msg::H_ACCV,
                ty as u32,
                &[sc[0], sc[1], g.n],
                &g.list,
                Landing::discard(),
                0,
            ),
            Op::Get => {
                let want = g.dsts.iter().map(|d| d.1).sum();
                let landing = Landing::vec(want);
                self.issue(msg::H_GETV, 0, &[g.n], &g.list, landing, want)?;
                // (the request just issued: its reply goes to the pieces' destinations)
                if let Some(f) = self.inflight.back_mut() {
                    f.scatter = g.dsts;
                }
                Ok(())
            }
        }
    }

    fn wait_oldest(&mut self) -> Result<()> {
        let Some(f) = self.inflight.front() else {
            return Ok(());
        };
        let r = self.ep.wait(f.id)?;
        let Some(f) = self.inflight.pop_front() else {
            return Ok(());
        };
        if f.want != 0 && r.len as usize != f.want {
            return Err(Error::Protocol(format!(
                "a get of {} bytes was answered with {}",
                f.want, r.len
            )));
        }
        if !f.scatter.is_empty() {
            let data = r.data.unwrap_or_default();
            let mut at = 0;
            for (dst, n) in f.scatter {
                let Some(piece) = data.get(at..at + n) else {
                    return Err(Error::Protocol("a gathered get's reply is short".into()));
                };
                // SAFETY: the piece's destination, writable until the batch ends
                // (`Batch::piece`'s contract); `piece` is `n` bytes of the reply.
                unsafe { skifch::mem::copy_move(piece.as_ptr(), dst as *mut u8, n) };
                at += n;
            }
        }
        Ok(())
    }

    /// Waits for every request of the batch (sending the gathered pieces first).
    pub fn finish(mut self) -> Result<()> {
        self.flush()?;
        while !self.inflight.is_empty() {
            self.wait_oldest()?;
        }
        Ok(())
    }
}

impl<P: Port> Drop for Batch<'_, P> {
    fn drop(&mut self) {
        for f in self.inflight.drain(..) {
            self.ep.cancel(f.id);
        }
    }
}
