//! Negotiated payload without a copy (`gex_AM_PrepareRequestMedium` + `Commit`): the
//! client writes a Medium request's payload straight into the target's receive memory
//! ([`skifch::proto::Endpoint::prepare`], the driver's reservation), and the commit
//! publishes it with its header — where the driver offers that (the shm driver; not over
//! fpga-model, nor when the room would wrap the receiver's ring). Elsewhere the C ABI
//! falls back to a buffer of its own and one copy at commit. A request handler's prepared
//! Medium reply ([`PreparedReply`], `gex_AM_PrepareReplyMedium`) is the same through the
//! handler's send half ([`skifch::proto::Io::prepare`], which never waits).
//!
//! The wire format is [`crate::am`]'s: arguments in the header's words (up to 6), else as
//! a prefix of the payload, which the commit writes in front of the client's bytes.
//! Between Prepare and Commit the preparing thread holds the endpoint (other threads'
//! GASNet calls wait for the commit; other calls of that thread are erroneous, as in
//! GASNet-EX).
#![allow(unsafe_code)] // the prepared room is the target's memory, reached by raw pointer

use skifch::proto::{Endpoint, Prepared};
use skifch::Port;

use crate::am::{Category, Ctx, Segs, Token, MAX_ARGS};
use crate::engine::Gasnet;
use crate::eplock::EpGuard;
use crate::{Error, Result};

/// A Medium request being written in place in its target's memory.
pub struct PreparedAm<P: Port + 'static> {
    ep: EpGuard<'static, Endpoint<P, Ctx>>,
    prep: Prepared,
    nargs: usize,
    /// Bytes of the argument prefix in front of the client's payload (0 up to 6 arguments).
    prefix: usize,
}

impl<P: Port + 'static> PreparedAm<P> {
    /// Where the client writes its payload: [`PreparedAm::size`] bytes.
    pub fn addr(&self) -> *mut u8 {
        // SAFETY: the prefix lies inside the prepared room (`prepare` asked for it).
        unsafe { self.prep.payload().add(self.prefix) }
    }
    /// The most payload bytes.
    pub fn size(&self) -> usize {
        self.prep.max() - self.prefix
    }
}

/// The argument prefix of an AM with `nargs` arguments (none when they fit the header).
fn prefix_len(nargs: usize) -> usize {
    if nargs <= 6 {
        0
    } else {
        (4 * nargs + 7) & !7
    }
}

impl<P: Port + Send + 'static> Gasnet<P> {
    /// A Long request's payload prepared in place: on the direct path, the address of
    /// `len` bytes at `dest` in rank `dst`'s segment as mapped here (the client writes the
    /// payload there; the commit then sends the arguments only). `None` elsewhere (the
    /// message path, a destination outside the segment: the caller copies).
    pub fn prepare_long(&self, dst: u32, dest: usize, len: usize) -> Option<*mut u8> {
        long_in_place(self.segs()?, dst, dest, len)
    }

    /// Room for a Medium request of up to `max` payload bytes with `nargs` arguments to
    /// rank `dst`, in `dst`'s receive memory; `Ok(None)` where the driver cannot (the caller
    /// copies). `immediate`: `WouldBlock` instead of waiting for room.
    pub fn prepare_medium(
        &'static self,
        dst: u32,
        nargs: usize,
        max: usize,
        immediate: bool,
    ) -> Result<Option<PreparedAm<P>>> {
        if nargs > MAX_ARGS {
            return Err(Error::BadArgument(format!(
                "{nargs} arguments (at most {MAX_ARGS})"
            )));
        }
        let lim = self.limits().max_medium(nargs);
        if max > lim {
            return Err(Error::TooLarge { len: max, max: lim });
        }
        let mut ep = self.ep()?;
        let prefix = prefix_len(nargs);
        let words = if nargs <= 6 { nargs.div_ceil(2) } else { 0 };
        let r = ep.prepare(dst, crate::am::H_AM, words, prefix + max, immediate);
        match r {
            Ok(Some(prep)) => Ok(Some(PreparedAm {
                ep,
                prep,
                nargs,
                prefix,
            })),
            Ok(None) => Ok(None),
            Err(e) => {
                drop(ep);
                if !e.is_would_block() {
                    self.alive()?;
                }
                Err(e.into())
            }
        }
    }

    /// Sends a prepared Medium request to handler `index` with its first `len` payload
    /// bytes and `args` (as many as at prepare).
    pub fn commit_medium(
        &self,
        mut p: PreparedAm<P>,
        index: u8,
        args: &[u32],
        len: usize,
    ) -> Result<()> {
        check_commit(p.nargs, p.size(), args, len)?;
        if p.ep.ctx().table[index as usize].is_none() {
            return Err(Error::Unregistered {
                index,
                rank: self.me(),
            });
        }
        let (meta, w) = header(&p.prep, p.prefix, index, args, false);
        let PreparedAm {
            ref mut ep, prep, ..
        } = p;
        ep.commit(prep, meta, &w, p.prefix + len);
        Ok(())
    }
}

/// A commit's arguments against its prepare's: as many arguments, at most the room.
fn check_commit(nargs: usize, size: usize, args: &[u32], len: usize) -> Result<()> {
    if args.len() != nargs {
        return Err(Error::BadArgument(format!(
            "{} arguments, {nargs} at Prepare",
            args.len()
        )));
    }
    if len > size {
        return Err(Error::TooLarge { len, max: size });
    }
    Ok(())
}

/// The address of `len` bytes at `dest` in rank `dst`'s segment as mapped here (the direct
/// path), where a prepared Long's payload is written in place.
fn long_in_place(segs: &Segs, dst: u32, dest: usize, len: usize) -> Option<*mut u8> {
    let off = segs.offset(dst, dest, len).ok()?;
    segs.win.as_ref()?.reach(dst, off, len)
}

/// A prepared Medium's proto argument and header words, the GASNet arguments written into
/// the prefix (beyond 6) or packed into the words (the wire format of [`crate::am`]).
fn header(prep: &Prepared, prefix: usize, index: u8, args: &[u32], reply: bool) -> (u32, [u64; 3]) {
    let meta = crate::am::meta(index, args.len(), Category::Medium, reply);
    if prefix == 0 {
        return (meta, crate::am::pack_args(args));
    }
    let at = prep.payload();
    for (i, a) in args.iter().enumerate() {
        // SAFETY: the prefix (`4 * nargs` bytes, padded) starts the prepared room.
        unsafe { std::ptr::copy_nonoverlapping(a.to_le_bytes().as_ptr(), at.add(4 * i), 4) };
    }
    (meta | crate::am::F_PREFIX, [0; 3])
}

/// A Medium reply being written in place in the requester's memory (from a handler).
pub struct PreparedReply {
    prep: Prepared,
    nargs: usize,
    prefix: usize,
}

impl PreparedReply {
    /// Where the client writes its payload: [`PreparedReply::size`] bytes.
    pub fn addr(&self) -> *mut u8 {
        // SAFETY: the prefix lies inside the prepared room (`prepare` asked for it).
        unsafe { self.prep.payload().add(self.prefix) }
    }
    /// The most payload bytes.
    pub fn size(&self) -> usize {
        self.prep.max() - self.prefix
    }
}

impl Token<'_> {
    /// Room for this request's Medium reply of up to `max` payload bytes with `nargs`
    /// arguments, in the requester's receive memory (`gex_AM_PrepareReplyMedium`);
    /// `Ok(None)` where the driver cannot, or there is no room now (a handler never
    /// waits): the caller copies.
    pub fn prepare_reply_medium(
        &mut self,
        nargs: usize,
        max: usize,
    ) -> Result<Option<PreparedReply>> {
        self.may_reply()?;
        let lim = self.lim.max_medium(nargs.min(MAX_ARGS));
        if nargs > MAX_ARGS || max > lim {
            return Err(Error::TooLarge { len: max, max: lim });
        }
        let prefix = prefix_len(nargs);
        let words = if nargs <= 6 { nargs.div_ceil(2) } else { 0 };
        let prep = self
            .out
            .prepare(self.src, crate::am::H_AM, words, prefix + max)?;
        Ok(prep.map(|prep| PreparedReply {
            prep,
            nargs,
            prefix,
        }))
    }

    /// Sends a prepared Medium reply to handler `index` with its first `len` bytes.
    pub fn commit_reply_medium(
        &mut self,
        p: PreparedReply,
        index: u8,
        args: &[u32],
        len: usize,
    ) -> Result<()> {
        check_commit(p.nargs, p.size(), args, len)?;
        let (meta, w) = header(&p.prep, p.prefix, index, args, true);
        self.out
            .commit(p.prep, meta | self.route, &w, p.prefix + len);
        self.replied = true;
        Ok(())
    }

    /// A Long reply's payload prepared in place (`gex_AM_PrepareReplyLong` with a
    /// destination): on the direct path, `dest` in the requester's segment as mapped here.
    pub fn prepare_reply_long(&self, dest: usize, len: usize) -> Option<*mut u8> {
        long_in_place(self.segs?, self.src, dest, len)
    }
}
