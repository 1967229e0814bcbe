//! Transfers built on the engine's primitives: strided put/get (packed into one request
//! on the message path when they fit one) and point-to-point messages
//! (`armci_msg_snd`/`rcv`).
#![allow(unsafe_code)] // user buffers from C, as raw pointers

use skifch::Port;

use crate::engine::{Path, Target};
use crate::msg;
use crate::pipe::{Batch, Op};
use crate::{Armci, Error, Result};

/// Where the block at source offset `so` of `d` lies in its dense packing `packed`
/// (the blocks are visited in the same order, so this recomputes the block's index).
fn packed_offset(packed: &crate::Strided, so: usize, d: &crate::Strided) -> usize {
    // Decompose `so` over the source strides, highest level first (the strides are
    // nested: each spans the level below, so the quotients are the indices).
    let mut rest = so;
    let mut po = 0;
    for l in (0..d.src.len()).rev() {
        let i = rest / d.src[l];
        rest -= i * d.src[l];
        po += i * packed.src[l];
    }
    po
}

impl<P: Port> Armci<P> {
    /// A strided put of `d` from local `src` to `t` (located for the destination extent):
    /// on the direct path a copy per block into the extent mapped once; on the message
    /// path one packed request when it fits one, else the blocks gathered into requests
    /// (module `pipe`).
    ///
    /// # Safety
    /// `src` is readable over `d`'s source extent.
    pub unsafe fn put_strided(&self, src: *const u8, d: &crate::Strided, t: Target) -> Result<()> {
        if t.path() == Path::Direct {
            // One lookup for the whole extent, then a copy per block.
            let base = self.mapped(t, d.dst_extent())?;
            // SAFETY: the caller's source over its extent; the destination extent is
            // mapped at `base`.
            unsafe { d.copy(src, base) };
            return Ok(());
        }
        let desc = d.encode_dst();
        if desc.len() + d.bytes() <= self.chunk {
            let mut payload = desc;
            let at = payload.len();
            payload.resize(at + d.bytes(), 0);
            let packed = d.packed_source();
            d.for_each(|so, _, n| {
                let po = packed_offset(&packed, so, d);
                // SAFETY: the caller's source over its extent; `po + n` is within the
                // dense packing of `d.bytes()` bytes.
                unsafe {
                    skifch::mem::copy_move(src.add(so), payload.as_mut_ptr().add(at + po), n)
                };
                Ok::<(), Error>(())
            })?;
            let levels = d.count.len() as u32 - 1;
            self.ep().call(
                t.proc,
                msg::H_PUTS,
                levels,
                &[t.addr as u64],
                &payload,
                &mut [],
            )?;
            return Ok(());
        }
        let mut b = Batch::new(self.ep(), t.proc);
        // SAFETY: the caller's contract; each block of the destination is in `t`'s range.
        d.for_each(|so, doff, n| unsafe {
            b.piece(
                Op::Put,
                src.add(so).cast_mut(),
                t.addr + doff,
                n,
                self.chunk,
            )
        })?;
        b.finish()
    }

    /// A strided get of `d` from `t` (located for the source extent) to local `dst`, as
    /// [`Armci::put_strided`] the other way.
    ///
    /// # Safety
    /// `dst` is writable over `d`'s destination extent and not referenced meanwhile.
    pub unsafe fn get_strided(&self, t: Target, d: &crate::Strided, dst: *mut u8) -> Result<()> {
        if t.path() == Path::Direct {
            self.alive()?;
            let base = self.mapped(t, d.src_extent())?;
            // SAFETY: the source extent is mapped at `base`; the caller's destination
            // over its extent.
            unsafe { d.copy(base, dst) };
            return Ok(());
        }
        if d.bytes() <= self.chunk {
            // The remote side is the source: describe it as the request's destination.
            let remote = d.swapped();
            let desc = remote.encode_dst();
            let mut packed = vec![0u8; d.bytes()];
            let levels = d.count.len() as u32 - 1;
            let r = self.ep().call(
                t.proc,
                msg::H_GETS,
                levels,
                &[t.addr as u64],
                &desc,
                &mut packed,
            )?;
            if r.len as usize != packed.len() {
                return Err(Error::Protocol(format!(
                    "a strided get of {} bytes was answered with {}",
                    packed.len(),
                    r.len
                )));
            }
            let dense = d.packed_source();
            return d.for_each(|so, doff, n| {
                let po = packed_offset(&dense, so, d);
                // SAFETY: the caller's destination over its extent; `po + n <= packed.len()`.
                unsafe { skifch::mem::copy_move(packed.as_ptr().add(po), dst.add(doff), n) };
                Ok(())
            });
        }
        let mut b = Batch::new(self.ep(), t.proc);
        // SAFETY: the caller's contract; each block of the source is in `t`'s range; the
        // batch ends before this returns.
        d.for_each(|so, doff, n| unsafe {
            b.piece(Op::Get, dst.add(doff), t.addr + so, n, self.chunk)
        })?;
        b.finish()
    }

    /// Sends `data` to `to` with `tag` (`armci_msg_snd`); returns once it is on its way.
    pub fn send_msg(&self, to: u32, tag: u32, data: &[u8]) -> Result<()> {
        Ok(self.ep().send(to, msg::H_MSG, tag, &[], data)?)
    }

    /// Waits for the first message tagged `tag` from `from` (any rank if `None`), copies
    /// it into `buf`, and returns its length and sender; a message longer than `buf` is
    /// an error (and is consumed).
    pub fn recv_msg(&self, tag: u32, from: Option<u32>, buf: &mut [u8]) -> Result<(usize, u32)> {
        let matches = move |l: &msg::Letter| l.tag == tag && from.is_none_or(|f| l.src == f);
        let mut ep = self.ep();
        ep.progress_until_peer(|ep| ep.ctx().inbox.iter().any(matches), None, from)?;
        let ctx = ep.ctx_mut();
        let i = ctx.inbox.iter().position(matches).unwrap_or(0);
        let Some(l) = ctx.inbox.remove(i) else {
            return Err(Error::Protocol("a received message vanished".into()));
        };
        if l.data.len() > buf.len() {
            return Err(Error::BadArgument(format!(
                "a {}-byte message from process {} does not fit the {}-byte buffer",
                l.data.len(),
                l.src,
                buf.len()
            )));
        }
        buf[..l.data.len()].copy_from_slice(&l.data);
        Ok((l.data.len(), l.src))
    }
}
