//! Negotiated payload for active messages: the sender writes an AM's payload straight into
//! the receiver's memory ([`crate::Port::reserve`]), then commits it with its header — no
//! copy at the sender (GASNet-EX `gex_AM_Prepare*`/`Commit*`). Only where the driver can
//! ([`Endpoint::prepare`] says `None` elsewhere: the caller fills a buffer of its own and
//! sends it as usual).
#![allow(unsafe_code)] // the reserved room is receiver memory reached by raw pointer

use std::time::Duration;

use crate::driver::Reserved;
use crate::wait::Backoff;
use crate::{Error, NetAddr, Port, Result};

use super::header;
use super::io::{check_user, too_many_args};
use super::{Endpoint, Io};

/// An active message being written in the receiver's memory ([`Endpoint::prepare`]);
/// [`Endpoint::commit`] sends it. Until then the endpoint's other sends to the same rank
/// wait behind it (per-pair order), so commit it soon.
pub struct Prepared {
    res: Reserved,
    dst: u32,
    h: u8,
    nargs: usize,
}

impl Prepared {
    /// Where the payload's first byte goes: [`Prepared::max`] writable bytes in the
    /// receiver's memory (a raw pointer: memory another process reads once committed).
    pub fn payload(&self) -> *mut u8 {
        // SAFETY: the header's `8 + 8 * nargs` bytes are inside the reservation (its
        // `max` counts them, see `prepare`).
        unsafe { self.res.ptr.add(header_len(self.nargs)) }
    }
    /// The most payload bytes the message may carry.
    pub fn max(&self) -> usize {
        self.res.max - header_len(self.nargs)
    }
}

fn header_len(nargs: usize) -> usize {
    8 + 8 * nargs
}

impl<P: Port, C> Endpoint<P, C> {
    /// Prepares an active message to handler `h` of rank `dst` with `nargs` (at most 3)
    /// `u64` arguments and up to `max` payload bytes, written in place in `dst`'s receive
    /// memory. Waits for room (serving incoming messages meanwhile, as a blocked send does)
    /// unless `immediate` (then `WouldBlock` when there is none now). `None`: the driver
    /// cannot reserve here (no such capability, or the room would wrap its ring) — send a
    /// copy instead. Not for handlers (their sends are queued, [`super::Io`]).
    pub fn prepare(
        &mut self,
        dst: u32,
        h: u8,
        nargs: usize,
        max: usize,
        immediate: bool,
    ) -> Result<Option<Prepared>> {
        let want = want(&self.io, dst, h, nargs, max)?;
        let addr = NetAddr::new(dst as u16, self.io.port);
        let mut idle = Backoff::with(256, 768, Duration::from_micros(50));
        loop {
            // Messages queued to `dst` go first.
            if !self.io.out[dst as usize].is_empty() {
                self.io.flush_dst(&self.ch, dst)?;
            }
            if self.io.out[dst as usize].is_empty() {
                match self.ch.reserve(addr, want) {
                    Ok(r) => return Ok(r.map(|res| Prepared { res, dst, h, nargs })),
                    Err(Error::WouldBlock) => {}
                    Err(e) => return Err(e),
                }
            }
            if immediate {
                return Err(Error::WouldBlock);
            }
            let did = self.service()?;
            self.io.flush_all(&self.ch);
            self.backoff(did, &mut idle)?;
        }
    }

    /// Sends a prepared message with its first `len` payload bytes (at most
    /// [`Prepared::max`]), argument `arg` and the `nargs` first of `args`: the header goes
    /// in front of the payload already in place, then the message is published.
    pub fn commit(&mut self, p: Prepared, arg: u32, args: &[u64; 3], len: usize) {
        debug_assert!(p.dst < self.io.size);
        commit_on(&self.ch, p, arg, args, len);
    }
}

impl<P: Port> Io<'_, P> {
    /// [`Endpoint::prepare`] for a handler (a prepared reply), which never waits: `None`
    /// also when the lane has no room now or messages to `dst` are queued (the caller
    /// then sends a copy, which queues).
    pub fn prepare(
        &mut self,
        dst: u32,
        h: u8,
        nargs: usize,
        max: usize,
    ) -> Result<Option<Prepared>> {
        let want = want(self.st, dst, h, nargs, max)?;
        if !self.st.out[dst as usize].is_empty() {
            return Ok(None);
        }
        match self
            .ch
            .reserve(NetAddr::new(dst as u16, self.st.port), want)
        {
            Ok(r) => Ok(r.map(|res| Prepared { res, dst, h, nargs })),
            Err(Error::WouldBlock) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// [`Endpoint::commit`] of a message prepared by [`Io::prepare`].
    pub fn commit(&mut self, p: Prepared, arg: u32, args: &[u64; 3], len: usize) {
        debug_assert!(p.dst < self.st.size);
        commit_on(self.ch, p, arg, args, len);
    }
}

/// The checks of a prepare; the message's whole length.
fn want(io: &super::io::IoState, dst: u32, h: u8, nargs: usize, max: usize) -> Result<usize> {
    if nargs > 3 {
        return Err(too_many_args());
    }
    check_user(h, &[])?;
    io.check_dst(dst)?;
    header_len(nargs)
        .checked_add(max)
        .filter(|&n| n <= io.max_msg)
        .ok_or(Error::MessageTooLarge {
            len: (header_len(nargs) + max) as u64,
            max: io.max_msg as u32,
        })
}

/// Writes the header in front of a prepared payload and publishes the message.
fn commit_on<P: Port>(ch: &crate::Channel<P>, p: Prepared, arg: u32, args: &[u64; 3], len: usize) {
    let len = len.min(p.max());
    let n = header_len(p.nargs);
    let mut hb = [0u8; 32];
    hb[..8].copy_from_slice(&header::word(p.h, p.nargs as u8, 0, arg).to_le_bytes());
    for (i, a) in args[..p.nargs].iter().enumerate() {
        hb[8 + 8 * i..16 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    // SAFETY: the header's `n` bytes lie at the start of the reservation (its `max`
    // counts them); the reservation is this channel's, published once, and `n + len`
    // is within its `max`.
    unsafe {
        std::ptr::copy_nonoverlapping(hb.as_ptr(), p.res.ptr, n);
        ch.publish(p.res, n + len);
    }
}
