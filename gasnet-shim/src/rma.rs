//! One-sided put/get on the two paths, and the events that complete them.
//!
//! * **Direct** (driver RMA: every segment mapped here): a put or get is a bounds check
//!   and a copy; it is complete (local and remote) when the call returns, so its event is
//!   `GEX_EVENT_INVALID` at once.
//! * **Messages with transfers** (a job of several hosts whose driver reaches the other
//!   hosts' memory by the fabric's RMA, `RmaCaps::transfers`; `GASNET_SHIM_RMA=transfers`,
//!   by default only over a NIC that applies transfers itself, `RmaCaps::remote_progress`):
//!   segments are exposed as on the direct path; the node's ranks are mapped (the direct
//!   path's copies and atomics), a put or get to another host's rank is one transfer,
//!   complete (remotely, for a put) when the call returns; AMs, Long payloads and atomics
//!   to those ranks stay messages (their handlers apply atomics with the same CPU atomics
//!   as the node's ranks: `crate::ratomic`).
//! * **Messages**: a put is a request to the target's `H_PUT` handler carrying the data (a
//!   payload larger than one message is a proto long transfer, whose chunks the handler
//!   places straight into its segment); a get is a request to `H_GET`, whose reply lands
//!   in the initiator's buffer. The request's id is the event; waiting for its reply is
//!   remote completion. Local completion is at return (the data was copied into the
//!   channel or its queue).
//!
//! An event (`Event`) names a slot of the event table: the outstanding requests of one
//! NB operation or access region, or a non-blocking barrier.
#![allow(unsafe_code)] // user buffers from C and the segment, as raw pointers

use skifch::proto::{Am, Endpoint, Io, Landing, Phase, ReqId};
use skifch::rma::Window as _;
use skifch::Port;

use crate::am::Ctx;
use crate::engine::Gasnet;
use crate::{Error, Result};

/// proto handler id of a put (message path).
pub(crate) const H_PUT: u8 = 4;
/// proto handler id of a get (message path).
pub(crate) const H_GET: u8 = 5;

/// What an operation left to wait for: nothing (complete), or requests.
#[derive(Debug, Default)]
pub struct Pending(pub(crate) Vec<ReqId>);

impl Pending {
    /// Nothing outstanding.
    pub fn is_done(&self) -> bool {
        self.0.is_empty()
    }
}

/// Installs the message path's handlers.
pub(crate) fn install<P: Port>(ep: &mut Endpoint<P, Ctx>) -> Result<()> {
    ep.register(H_PUT, on_put::<P>)?;
    ep.register(H_GET, on_get::<P>)?;
    Ok(())
}

/// The range `addr..addr+len` of the segment of this rank's endpoint `ep` (the
/// request's small argument), checked.
fn mine(ctx: &Ctx, ep: u32, addr: usize, len: usize) -> Result<()> {
    let segs = ctx.segs_of(ep).ok_or(Error::NotAttached)?;
    segs.offset(ctx.rank, addr, len).map(|_| ())
}

fn on_put<P: Port>(ctx: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> skifch::Result<()> {
    let Some(to) = am.reply_to() else {
        return Ok(());
    };
    let addr = am.args().first().copied().unwrap_or(0) as usize;
    match am.phase() {
        Phase::Whole => {
            let p = am.payload();
            if let Err(e) = mine(ctx, am.arg(), addr, p.len()) {
                return io.reply_error(to, &e.to_string());
            }
            let mut at = addr;
            for s in p.segments() {
                // SAFETY: inside this rank's segment (checked), reached only by raw copies;
                // the source is the channel's receive memory.
                unsafe { skifch::mem::copy_mem(s.as_ptr(), at as *mut u8, s.len()) };
                at += s.len();
            }
            io.reply(to, 0, &[], &[])
        }
        Phase::LongStart { total } => {
            if let Err(e) = mine(ctx, am.arg(), addr, total as usize) {
                // Nothing placed: the transfer is dropped; the reply says why.
                return io.reply_error(to, &e.to_string());
            }
            // SAFETY: `addr..addr+total` is inside this rank's live segment (checked),
            // which nothing reaches as a Rust reference; the segment outlives the job's
            // traffic (it is never unmapped before exit).
            am.place(unsafe { Landing::raw(addr as *mut u8, total as usize) });
            Ok(())
        }
        Phase::LongDone { .. } => io.reply(to, 0, &[], &[]),
    }
}

fn on_get<P: Port>(ctx: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> skifch::Result<()> {
    let Some(to) = am.reply_to() else {
        return Ok(());
    };
    let a = am.args();
    let (addr, len) = (
        a.first().copied().unwrap_or(0) as usize,
        a.get(1).copied().unwrap_or(0) as usize,
    );
    if let Err(e) = mine(ctx, am.arg(), addr, len) {
        return io.reply_error(to, &e.to_string());
    }
    // SAFETY: inside this rank's segment (checked). On the message path the segment is
    // private memory of this process (no other process maps it); the slice lives only
    // for the copy into the channel or its queue.
    let data = unsafe { std::slice::from_raw_parts(addr as *const u8, len) };
    io.reply(to, 0, &[], data)
}

impl<P: Port> Gasnet<P> {
    /// The direct path's whole put (`put`) or get of `len` bytes between local `local` and
    /// `remote` in `rank`'s segment: a bounds check and a copy, nothing built. False when it
    /// does not apply (the message path, no segment, a range outside the target's segment;
    /// for a get a lost rank, checked after the copy, as the bytes of a lost rank's
    /// still-mapped memory must not be returned as data): the caller then takes
    /// [`Gasnet::put`] / [`Gasnet::get`], which repeat the checks and report what failed.
    /// A put into a lost rank's mapped memory harms nothing; the next get, AM, wait or
    /// barrier reports the loss (as skifshmem's direct put).
    ///
    /// # Safety
    /// As [`Gasnet::put`] (`local` readable) or [`Gasnet::get`] (`local` writable), for
    /// `len` bytes.
    #[inline(always)]
    pub unsafe fn rma_direct(
        &self,
        put: bool,
        rank: u32,
        remote: usize,
        local: *mut u8,
        len: usize,
    ) -> bool {
        let Some(segs) = self.segs.get() else {
            return false;
        };
        let (Some(w), Some(&(base, size))) = (&segs.win, segs.bases.get(rank as usize)) else {
            return false;
        };
        let off = remote.wrapping_sub(base);
        if off > size || len > size - off {
            return false;
        }
        // SAFETY: the caller's contract for `local`; `put_raw`/`get_raw` bound the remote
        // range by a live mapping.
        let copied = unsafe {
            if put {
                w.put_raw(rank, off, local, len)
            } else {
                w.get_raw(rank, off, local, len)
            }
        };
        copied && (put || self.lost_peer().is_none())
    }

    /// Puts `len` bytes from local `src` to `dest` in `rank`'s segment; returns what is
    /// left to wait for (nothing on the direct path).
    ///
    /// # Safety
    /// `src` is readable for `len` bytes.
    pub unsafe fn put(
        &self,
        rank: u32,
        dest: usize,
        src: *const u8,
        len: usize,
    ) -> Result<Pending> {
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.put_on(0, rank, dest, src, len) }
    }

    /// [`Gasnet::put`] into the segment of endpoint `ep` of `rank` ([`crate::eps`]).
    ///
    /// # Safety
    /// As [`Gasnet::put`].
    pub unsafe fn put_on(
        &self,
        to_ep: u32,
        rank: u32,
        dest: usize,
        src: *const u8,
        len: usize,
    ) -> Result<Pending> {
        if len == 0 {
            return Ok(Pending::default());
        }
        let segs = self.segs_of(to_ep).ok_or(Error::NotAttached)?;
        let off = segs.offset(rank, dest, len)?;
        if let Some(w) = &segs.win {
            self.alive()?;
            // SAFETY: the caller vouches for `src`; `put_raw` bounds the destination.
            if unsafe { w.put_raw(rank, off, src, len) } {
                return Ok(Pending::default());
            }
            if w.remote(rank).is_some() {
                // SAFETY: the caller vouches for `src`.
                let data = unsafe { std::slice::from_raw_parts(src, len) };
                w.put(rank, off, data)?;
                w.quiet()?;
                return Ok(Pending::default());
            }
        }
        if rank == self.me() {
            // SAFETY: `dest..dest+len` is inside this rank's own segment (checked).
            unsafe { skifch::mem::copy_move(src, dest as *mut u8, len) };
            return Ok(Pending::default());
        }
        // SAFETY: the caller vouches for `src`.
        let data = unsafe { std::slice::from_raw_parts(src, len) };
        let mut ep = self.ep()?;
        let id = ep
            .request(rank, H_PUT, to_ep, &[dest as u64], data, Landing::discard())
            .or_else(|e| self.alive().and(Err(e.into())))?;
        Ok(Pending(vec![id]))
    }

    /// Gets `len` bytes from `src` in `rank`'s segment into local `dst`.
    ///
    /// # Safety
    /// `dst` is writable for `len` bytes and not otherwise accessed until the returned
    /// [`Pending`] is complete.
    pub unsafe fn get(&self, dst: *mut u8, rank: u32, src: usize, len: usize) -> Result<Pending> {
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.get_on(0, dst, rank, src, len) }
    }

    /// [`Gasnet::get`] from the segment of endpoint `ep` of `rank` ([`crate::eps`]).
    ///
    /// # Safety
    /// As [`Gasnet::get`].
    pub unsafe fn get_on(
        &self,
        to_ep: u32,
        dst: *mut u8,
        rank: u32,
        src: usize,
        len: usize,
    ) -> Result<Pending> {
        if len == 0 {
            return Ok(Pending::default());
        }
        let segs = self.segs_of(to_ep).ok_or(Error::NotAttached)?;
        let off = segs.offset(rank, src, len)?;
        if let Some(w) = &segs.win {
            self.alive()?;
            // SAFETY: the caller vouches for `dst`; `get_raw` bounds the source.
            if unsafe { w.get_raw(rank, off, dst, len) } {
                return Ok(Pending::default());
            }
            if w.remote(rank).is_some() {
                // SAFETY: the caller vouches for `dst` (writable, not otherwise accessed).
                let out = unsafe { std::slice::from_raw_parts_mut(dst, len) };
                w.get(rank, off, out)?;
                return Ok(Pending::default());
            }
        }
        if rank == self.me() {
            // SAFETY: `src..src+len` is inside this rank's own segment (checked).
            unsafe { skifch::mem::copy_move(src as *const u8, dst, len) };
            return Ok(Pending::default());
        }
        let mut ep = self.ep()?;
        // SAFETY: the caller's contract: `dst` stays valid and untouched until completion.
        let l = unsafe { Landing::raw(dst, len) };
        let id = ep
            .request(rank, H_GET, to_ep, &[src as u64, len as u64], &[], l)
            .or_else(|e| self.alive().and(Err(e.into())))?;
        Ok(Pending(vec![id]))
    }

    /// Waits for everything in `p`. On failure the rest is cancelled (nothing lands in
    /// a caller's buffer afterwards).
    pub fn complete(&self, p: Pending) -> Result<()> {
        if p.is_done() {
            return Ok(());
        }
        let mut ep = self.ep()?;
        let mut ids = p.0.into_iter();
        while let Some(id) = ids.next() {
            if let Err(e) = ep.wait(id) {
                ep.cancel(id);
                for rest in ids {
                    ep.cancel(rest);
                }
                self.alive()?;
                return Err(e.into());
            }
        }
        Ok(())
    }

    /// Tests `p` once (with one round of progress); drops what completed. True when all
    /// is complete.
    pub fn test(&self, p: &mut Pending) -> Result<bool> {
        if p.is_done() {
            return Ok(true);
        }
        let mut ep = self.ep()?;
        let mut err = None;
        p.0.retain(|id| match ep.test(*id) {
            Ok(Some(_)) => false,
            Ok(None) => true,
            Err(e) => {
                err.get_or_insert(e);
                false
            }
        });
        if let Some(e) = err {
            self.alive()?;
            return Err(e.into());
        }
        if p.is_done() {
            return Ok(true);
        }
        drop(ep);
        if let Some(rank) = self.lost_peer() {
            return Err(Error::Comm(skifch::Error::PeerLost { rank }));
        }
        Ok(false)
    }
}
