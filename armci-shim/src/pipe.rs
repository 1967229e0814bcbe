//! Message-path transfers of many pieces to one process, pipelined: a strided patch
//! larger than one request, or a contiguous transfer larger than one chunk, goes as one
//! request per piece; up to [`WINDOW`] of them are in flight at once instead of one round
//! trip each (Global Arrays' matrix multiply fetches patches of hundreds of columns; one
//! blocking round trip per column made it minutes slower than the direct path). Pieces are
//! issued in order and each is answered by its target in order, so a put's pieces land as
//! they did one by one; the batch returns when every piece is answered.
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

/// One transfer's requests to `proc` (see the module docs). Dropping a batch that did not
/// [`Batch::finish`] cancels what is still in flight, so no reply lands afterwards.
pub struct Batch<'a, P: Port> {
    ep: MutexGuard<'a, Endpoint<P, Ctx>>,
    proc: u32,
    /// In flight: the request and the reply length expected (gets).
    inflight: VecDeque<(ReqId, usize)>,
}

impl<'a, P: Port> Batch<'a, P> {
    /// A batch on `ep` (held for the batch's life) to process `proc`.
    pub fn new(ep: MutexGuard<'a, Endpoint<P, Ctx>>, proc: u32) -> Self {
        Batch {
            ep,
            proc,
            inflight: VecDeque::new(),
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
        self.inflight.push_back((id, want));
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

    /// `op` on one piece: `len` bytes at local `local` and remote `at`.
    ///
    /// # Safety
    /// `local..local+len` is readable (put, accumulate) or as [`Batch::get_span`] (get).
    pub unsafe fn piece(
        &mut self,
        op: Op,
        local: *mut u8,
        at: usize,
        len: usize,
        chunk: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract, per operation.
        unsafe {
            match op {
                Op::Put => self.put_span(at, local, len, chunk),
                Op::Get => self.get_span(at, local, len, chunk),
                Op::Acc(ty, sc) => self.acc_span(ty, sc, at, local, len, chunk),
            }
        }
    }

    fn wait_oldest(&mut self) -> Result<()> {
        let Some(&(id, want)) = self.inflight.front() else {
            return Ok(());
        };
        let r = self.ep.wait(id)?;
        self.inflight.pop_front();
        if want != 0 && r.len as usize != want {
            return Err(Error::Protocol(format!(
                "a get of {want} bytes was answered with {}",
                r.len
            )));
        }
        Ok(())
    }

    /// Waits for every request of the batch.
    pub fn finish(mut self) -> Result<()> {
        while !self.inflight.is_empty() {
            self.wait_oldest()?;
        }
        Ok(())
    }
}

impl<P: Port> Drop for Batch<'_, P> {
    fn drop(&mut self) {
        for (id, _) in self.inflight.drain(..) {
            self.ep.cancel(id);
        }
    }
}
