//! GASNet active messages on [`skifch::proto`]: the wire format, the handler table, the
//! token a handler gets, and the two proto handlers that receive them (crate docs).
//!
//! ```text
//! proto handler H_AM, small argument (u32):
//!   bits 0-7   GASNet handler index          bits 8-12  GASNet argument count (0..=16)
//!   bits 13-14 category (0 Short, 1 Medium, 2 Long)          bit 15 reply
//!   bit 16     the arguments are a prefix of the payload (else in the header's u64 words)
//!   bits 17-21 the target endpoint's index   bits 22-26 the sender endpoint's (0: the
//!              primordial one; `crate::eps`, GASNet-EX's `gex_TM_Pair`)
//! proto u64 arguments: Short/Medium: up to 6 GASNet arguments, two per word (low first);
//!   Long: [destination address, length], the GASNet arguments always in the prefix.
//! payload: [arguments as little-endian u32, padded to 8 bytes] ++ data
//!   (Long: the data inline, or empty when it was written before: by RMA or H_LDATA)
//! proto handler H_LDATA: u64 argument = destination address, payload = bytes to land there,
//!   small argument = the target endpoint's index (whose segment)
//! ```
#![allow(unsafe_code)] // Long payloads land in this rank's segment through raw pointers

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use skifch::proto::{Am, Endpoint, Io, Prepared};
use skifch::rma::MappedWindow;
use skifch::Port;

use crate::{Error, Result};

/// proto handler id of GASNet AMs.
pub(crate) const H_AM: u8 = 1;
/// proto handler id of a chunk of a Long payload (message path).
pub(crate) const H_LDATA: u8 = 2;

/// Most GASNet arguments of one AM (`gex_AM_MaxArgs()`).
pub const MAX_ARGS: usize = 16;
/// Largest Long payload this library accepts in one AM (`gex_AM_MaxRequestLong`).
pub const MAX_LONG: usize = 1 << 20;

const F_REPLY: u32 = 1 << 15;
pub(crate) const F_PREFIX: u32 = 1 << 16;

/// The three kinds of GASNet active message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    /// Arguments only.
    Short,
    /// Arguments and a payload handed to the handler in place.
    Medium,
    /// Arguments and a payload written into the target's segment.
    Long,
}

impl Category {
    fn code(self) -> u32 {
        match self {
            Category::Short => 0,
            Category::Medium => 1,
            Category::Long => 2,
        }
    }
    fn from_code(c: u32) -> Option<Category> {
        match c {
            0 => Some(Category::Short),
            1 => Some(Category::Medium),
            2 => Some(Category::Long),
            _ => None,
        }
    }
    /// The GASNet-EX name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Category::Short => "Short",
            Category::Medium => "Medium",
            Category::Long => "Long",
        }
    }
}

/// What a Rust handler receives besides its arguments.
#[derive(Clone, Copy, Debug)]
pub enum Data<'a> {
    /// A Short AM.
    None,
    /// A Medium payload, in the channel's receive memory (valid during the handler).
    Medium(&'a [u8]),
    /// A Long payload, in this rank's segment (peers may write there: read it through the
    /// address, never as a Rust reference).
    Long {
        /// Its address in this rank's segment.
        addr: usize,
        /// Its length.
        len: usize,
    },
}

/// A handler of the Rust API.
pub type RustHandler = fn(&mut Token<'_>, &[u32], Data<'_>);

/// How the C ABI calls a C handler: `(fnptr, token, category, buf, len, args)`.
pub(crate) type CInvoke = fn(usize, &mut Token<'_>, Category, usize, usize, &[u32]);

/// A registered handler: a C function (called through the C ABI's invoker) or a Rust one.
#[derive(Clone, Copy, Debug)]
pub enum HandlerFn {
    /// A C function (called through the C ABI's invoker).
    C(usize),
    /// A Rust function.
    Rust(RustHandler),
}

/// The registration record, laid out as the header's `gex_AM_Entry_t` (what
/// `gex_Token_Info` hands back as `gex_entry`; pointers kept as integers so the table is
/// `Send`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EntryRec {
    /// `gex_index`.
    pub index: u8,
    /// `gex_fnptr`.
    pub fnptr: usize,
    /// `gex_flags`.
    pub flags: u32,
    /// `gex_nargs`.
    pub nargs: u32,
    /// `gex_cdata`.
    pub cdata: usize,
    /// `gex_name`.
    pub name: usize,
}

/// One slot of the handler table.
pub(crate) struct Entry {
    pub(crate) f: HandlerFn,
    /// Boxed: its address is handed out by `gex_Token_Info` and must not move.
    pub(crate) rec: Box<EntryRec>,
}

/// Every rank's segment and, on the direct path, their mapping here.
pub struct Segs {
    /// (base in the owner's address space, length) per rank.
    pub bases: Vec<(usize, usize)>,
    /// Every segment mapped here (direct path).
    pub win: Option<MappedWindow>,
    /// This rank's segment on the message path.
    pub(crate) _mem: Option<memmap2::MmapRaw>,
}

impl Segs {
    /// The offset of `len` bytes at `addr` in `rank`'s segment, or the error naming them.
    pub fn offset(&self, rank: u32, addr: usize, len: usize) -> Result<usize> {
        let Some(&(base, size)) = self.bases.get(rank as usize) else {
            return Err(Error::BadRank {
                rank: i64::from(rank),
                n: self.bases.len() as u32,
            });
        };
        let off = addr.wrapping_sub(base);
        if off <= size && len <= size - off {
            Ok(off)
        } else {
            Err(Error::OutsideSegment {
                rank,
                addr,
                len,
                base,
                size,
            })
        }
    }
}

/// Payload limits of this job (from the channel's largest message).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest channel message.
    pub max_msg: usize,
}

impl Limits {
    /// Largest Medium payload with `nargs` arguments (`gex_AM_MaxRequestMedium`).
    pub fn max_medium(&self, nargs: usize) -> usize {
        let args = if nargs <= 6 { 0 } else { pad8(4 * nargs) };
        (self.max_msg - 8 - 8 * nargs.min(6).div_ceil(2) - args) & !7
    }
    /// Smallest of [`Limits::max_medium`] over every argument count (`gex_AM_LUB*Medium`).
    pub fn lub_medium(&self) -> usize {
        self.max_medium(MAX_ARGS).min(self.max_medium(6))
    }
}

fn pad8(n: usize) -> usize {
    (n + 7) & !7
}

/// The endpoint's context: what handlers reach without a lock.
#[derive(Default)]
pub struct Ctx {
    /// The handler tables of the endpoints, 256 slots each: endpoint `e`'s index `i` at
    /// `e << 8 | i` (one lookup for every endpoint, `crate::eps::slot`).
    pub(crate) table: Vec<Option<Entry>>,
    /// The primordial endpoint's segment.
    pub(crate) segs: Option<Arc<Segs>>,
    /// The other endpoints' bound segments, by endpoint index (0 unused).
    pub(crate) ep_segs: Vec<Option<Arc<Segs>>>,
    pub(crate) limits: Option<Limits>,
    /// The first fatal error found by a handler (an AM for an unregistered index, a Long
    /// outside the segment): every wait of the application stops on it.
    pub(crate) failed: Option<Error>,
    pub(crate) invoke_c: Option<CInvoke>,
    pub(crate) rank: u32,
    /// The thread running a handler now ([`this_thread`]), 0 for none: a call of that
    /// thread finding the endpoint locked is a call from inside the handler.
    pub(crate) running: Arc<AtomicUsize>,
    /// The endpoint has no lock (`crate::eplock`'s SEQ form, whose busy flag tells a
    /// handler's calls): `running` is not kept.
    pub(crate) seq: bool,
    /// Per-feature state of the extended API.
    pub(crate) ext: crate::engine::ExtState,
}

impl Ctx {
    /// The segment of endpoint `ep` here.
    #[inline(always)]
    pub(crate) fn segs_of(&self, ep: u32) -> Option<&Segs> {
        if ep == 0 {
            self.segs.as_deref()
        } else {
            self.ep_segs.get(ep as usize)?.as_deref()
        }
    }
}

/// This thread's identity (`pthread_self`: a load from the thread pointer, where a
/// thread-local variable of the shared library costs a `__tls_get_addr` call).
pub(crate) fn this_thread() -> usize {
    // SAFETY: `pthread_self` has no preconditions.
    unsafe { libc::pthread_self() as usize }
}

/// Sends of the application (blocking, with progress) and of handlers (queued).
pub(crate) trait Out {
    /// Room for one message written in place in `dst`'s memory (`proto`'s negotiated
    /// payload), without waiting: `None` when the driver cannot or there is no room now.
    fn prepare(
        &mut self,
        dst: u32,
        h: u8,
        nargs: usize,
        max: usize,
    ) -> skifch::Result<Option<Prepared>>;
    /// Sends a message of [`Out::prepare`] with its first `len` payload bytes.
    fn commit(&mut self, p: Prepared, arg: u32, args: &[u64; 3], len: usize);
    fn send(&mut self, dst: u32, h: u8, arg: u32, args: &[u64], data: &[u8]) -> skifch::Result<()>;
    /// [`Out::send`] of a message without payload (an AM Short): proto's header-only send.
    fn send_header(&mut self, dst: u32, h: u8, arg: u32, args: &[u64]) -> skifch::Result<()>;
    fn try_send(
        &mut self,
        dst: u32,
        h: u8,
        arg: u32,
        args: &[u64],
        data: &[u8],
    ) -> skifch::Result<bool>;
}

impl<P: Port, C> Out for Endpoint<P, C> {
    fn prepare(
        &mut self,
        dst: u32,
        h: u8,
        nargs: usize,
        max: usize,
    ) -> skifch::Result<Option<Prepared>> {
        match Endpoint::prepare(self, dst, h, nargs, max, true) {
            Err(e) if e.is_would_block() => Ok(None),
            r => r,
        }
    }
    fn commit(&mut self, p: Prepared, arg: u32, args: &[u64; 3], len: usize) {
        Endpoint::commit(self, p, arg, args, len)
    }
    fn send(&mut self, dst: u32, h: u8, arg: u32, args: &[u64], data: &[u8]) -> skifch::Result<()> {
        Endpoint::send(self, dst, h, arg, args, data)
    }
    fn send_header(&mut self, dst: u32, h: u8, arg: u32, args: &[u64]) -> skifch::Result<()> {
        Endpoint::send_header(self, dst, h, arg, args)
    }
    fn try_send(
        &mut self,
        dst: u32,
        h: u8,
        arg: u32,
        args: &[u64],
        data: &[u8],
    ) -> skifch::Result<bool> {
        Endpoint::try_send(self, dst, h, arg, args, data)
    }
}

impl<P: Port> Out for Io<'_, P> {
    fn prepare(
        &mut self,
        dst: u32,
        h: u8,
        nargs: usize,
        max: usize,
    ) -> skifch::Result<Option<Prepared>> {
        Io::prepare(self, dst, h, nargs, max)
    }
    fn commit(&mut self, p: Prepared, arg: u32, args: &[u64; 3], len: usize) {
        Io::commit(self, p, arg, args, len)
    }
    fn send(&mut self, dst: u32, h: u8, arg: u32, args: &[u64], data: &[u8]) -> skifch::Result<()> {
        Io::send(self, dst, h, arg, args, data)
    }
    fn send_header(&mut self, dst: u32, h: u8, arg: u32, args: &[u64]) -> skifch::Result<()> {
        Io::send_header(self, dst, h, arg, args)
    }
    fn try_send(
        &mut self,
        dst: u32,
        h: u8,
        arg: u32,
        args: &[u64],
        data: &[u8],
    ) -> skifch::Result<bool> {
        Io::try_send(self, dst, h, arg, args, data)
    }
}

/// One AM to send.
pub(crate) struct Msg<'a> {
    pub(crate) dst: u32,
    pub(crate) index: u8,
    pub(crate) cat: Category,
    pub(crate) reply: bool,
    pub(crate) args: &'a [u32],
    /// Medium/Long payload (address and length; the caller vouches it is readable).
    pub(crate) src: usize,
    pub(crate) len: usize,
    /// Long: the destination address in `dst`'s segment.
    pub(crate) dest: usize,
    pub(crate) immediate: bool,
    /// The endpoints' bits of the small argument ([`crate::eps::Route::bits`]).
    pub(crate) route: u32,
}

fn args_bytes(args: &[u32]) -> Vec<u8> {
    let mut v = Vec::with_capacity(pad8(4 * args.len()));
    for a in args {
        v.extend_from_slice(&a.to_le_bytes());
    }
    v.resize(pad8(v.len()), 0);
    v
}

/// The proto small argument of an AM (the wire format above), without `F_PREFIX`.
pub(crate) fn meta(index: u8, nargs: usize, cat: Category, reply: bool) -> u32 {
    u32::from(index) | (nargs as u32) << 8 | cat.code() << 13 | if reply { F_REPLY } else { 0 }
}

/// A Medium's length checked against the largest for its argument count (the inline
/// paths: [`Token::reply_inline`], `Gasnet::request_inline`).
#[inline(always)]
pub(crate) fn medium_fits(cat: Category, nargs: usize, len: usize, lim: Limits) -> Result<()> {
    // Within the limit of 6 header arguments, every count up to 6 fits: no per-count
    // arithmetic on the common message.
    if cat != Category::Medium || (nargs <= 6 && len <= lim.max_medium(6)) {
        return Ok(());
    }
    if len > lim.max_medium(nargs) {
        return Err(Error::TooLarge {
            len,
            max: lim.max_medium(nargs),
        });
    }
    Ok(())
}

/// Up to 6 GASNet arguments in the header's `u64` words, two per word (low first).
pub(crate) fn pack_args(args: &[u32]) -> [u64; 3] {
    let mut w = [0u64; 3];
    for (i, a) in args.iter().take(6).enumerate() {
        w[i / 2] |= u64::from(*a) << (32 * (i % 2));
    }
    w
}

/// Sends one AM; `Ok(false)`: not injected (`immediate` and the channel would block).
/// Checks the payload limits and a Long's destination (against `segs`) first.
pub(crate) fn emit(
    out: &mut dyn Out,
    segs: Option<&Segs>,
    lim: Limits,
    m: &Msg<'_>,
) -> Result<bool> {
    if m.args.len() > MAX_ARGS {
        return Err(Error::BadArgument(format!(
            "{} arguments (at most {MAX_ARGS})",
            m.args.len()
        )));
    }
    let data: &[u8] = if m.len == 0 {
        &[]
    } else {
        // SAFETY: the caller vouches that `src..src+len` is readable (the C ABI's
        // contract for the client's buffer; the Rust API passes a slice).
        unsafe { std::slice::from_raw_parts(m.src as *const u8, m.len) }
    };
    let mut meta = meta(m.index, m.args.len(), m.cat, m.reply) | m.route;
    let send = |out: &mut dyn Out, h: u8, meta: u32, pargs: &[u64], d: &[u8]| -> Result<bool> {
        if m.immediate {
            Ok(out.try_send(m.dst, h, meta, pargs, d)?)
        } else {
            out.send(m.dst, h, meta, pargs, d)?;
            Ok(true)
        }
    };
    match m.cat {
        Category::Short | Category::Medium => {
            if m.cat == Category::Medium && m.len > lim.max_medium(m.args.len()) {
                return Err(Error::TooLarge {
                    len: m.len,
                    max: lim.max_medium(m.args.len()),
                });
            }
            if m.args.len() <= 6 {
                let w = pack_args(m.args);
                send(out, H_AM, meta, &w[..m.args.len().div_ceil(2)], data)
            } else {
                meta |= F_PREFIX;
                let mut b = args_bytes(m.args);
                b.extend_from_slice(data);
                send(out, H_AM, meta, &[], &b)
            }
        }
        Category::Long => {
            if m.len > MAX_LONG {
                return Err(Error::TooLarge {
                    len: m.len,
                    max: MAX_LONG,
                });
            }
            let segs = segs.ok_or(Error::NotAttached)?;
            let off = segs.offset(m.dst, m.dest, m.len)?;
            meta |= F_PREFIX;
            let pargs = [m.dest as u64, m.len as u64];
            let mut b = args_bytes(m.args);
            if m.len == 0 {
                return send(out, H_AM, meta, &pargs, &b);
            }
            if let Some(w) = &segs.win {
                // Direct path: the payload goes straight into the peer's mapped segment;
                // the message that follows it (a release by the channel) carries the
                // arguments only. A negotiated payload prepared there (`crate::np`) is in
                // place already.
                if let Some(at) = w.reach(m.dst, off, data.len()) {
                    if !std::ptr::eq(at, data.as_ptr()) {
                        // SAFETY: `data` is readable (above); `reach` bounded the target
                        // range by a live mapping; the two may overlap (a prepared
                        // payload committed to another address): a move.
                        unsafe { skifch::mem::copy_move(data.as_ptr(), at, data.len()) };
                    }
                    return send(out, H_AM, meta, &pargs, &b);
                }
            }
            if 8 + 16 + b.len() + data.len() <= lim.max_msg {
                b.extend_from_slice(data);
                return send(out, H_AM, meta, &pargs, &b);
            }
            // Message path, more than one message: chunks land in the segment first; the
            // AM follows them on the same pair (in order), so the handler sees it all.
            let chunk = (lim.max_msg / 2 - 16) & !7;
            let mut first = true;
            for (i, c) in data.chunks(chunk).enumerate() {
                let at = [(m.dest + i * chunk) as u64];
                let ep = crate::eps::target_ep(m.route);
                if first && m.immediate {
                    if !out.try_send(m.dst, H_LDATA, ep, &at, c)? {
                        return Ok(false);
                    }
                } else {
                    out.send(m.dst, H_LDATA, ep, &at, c)?;
                }
                first = false;
            }
            out.send(m.dst, H_AM, meta, &pargs, &b)?;
            Ok(true)
        }
    }
}

/// What a handler gets as its token: who sent the AM, which entry runs, and the way to
/// reply (`gex_Token_t` in C points to one of these on the dispatching stack).
pub struct Token<'a> {
    pub(crate) src: u32,
    pub(crate) is_req: bool,
    pub(crate) cat: Category,
    pub(crate) rec: *const EntryRec,
    pub(crate) replied: bool,
    pub(crate) out: &'a mut dyn Out,
    /// The segment of the requester's endpoint (a Long reply's destination).
    pub(crate) segs: Option<&'a Segs>,
    pub(crate) lim: Limits,
    /// The endpoints' bits of a reply: to the requester's endpoint, from the one that
    /// runs the handler ([`crate::eps::Route::reply_bits`]).
    pub(crate) route: u32,
}

impl Token<'_> {
    /// The sender's rank.
    pub fn src(&self) -> u32 {
        self.src
    }
    /// Whether the AM is a request (else a reply).
    pub fn is_request(&self) -> bool {
        self.is_req
    }
    /// Whether the AM is a Long.
    pub fn is_long(&self) -> bool {
        self.cat == Category::Long
    }
    /// The registration record of the running handler.
    pub fn entry(&self) -> *const EntryRec {
        self.rec
    }
    /// The index of the endpoint that received the AM (0: the primordial one).
    pub fn ep(&self) -> u32 {
        crate::eps::source_ep(self.route)
    }

    /// [`Token::reply`] of a Short or Medium with at most 6 arguments, without
    /// `immediate`: the common reply, sent with the arguments in the header, no `Msg`.
    #[inline(always)]
    pub fn reply_inline(
        &mut self,
        index: u8,
        cat: Category,
        args: &[u32],
        data: &[u8],
    ) -> Result<()> {
        self.may_reply()?;
        medium_fits(cat, args.len(), data.len(), self.lim)?;
        let meta = meta(index, args.len(), cat, true) | self.route;
        let (w, n) = (pack_args(args), args.len().div_ceil(2));
        if data.is_empty() {
            self.out.send_header(self.src, H_AM, meta, &w[..n])?;
        } else {
            self.out.send(self.src, H_AM, meta, &w[..n], data)?;
        }
        self.replied = true;
        Ok(())
    }

    pub(crate) fn may_reply(&self) -> Result<()> {
        if !self.is_req {
            return Err(Error::BadArgument("a reply handler cannot reply".into()));
        }
        if self.replied {
            return Err(Error::BadArgument(
                "a request handler replies at most once".into(),
            ));
        }
        Ok(())
    }

    /// Replies to the requester (at most once, from a request handler). `data` is a
    /// Medium payload or, for a Long, what lands at `dest` in the requester's segment.
    /// Never waits: what the channel cannot take now is queued, unless `immediate`
    /// (`Ok(false)`: not injected).
    pub fn reply(
        &mut self,
        index: u8,
        cat: Category,
        args: &[u32],
        data: &[u8],
        dest: usize,
        immediate: bool,
    ) -> Result<bool> {
        self.may_reply()?;
        let m = Msg {
            dst: self.src,
            index,
            cat,
            reply: true,
            args,
            src: data.as_ptr() as usize,
            len: data.len(),
            dest,
            immediate,
            route: self.route,
        };
        let ok = emit(&mut *self.out, self.segs, self.lim, &m)?;
        self.replied = ok;
        Ok(ok)
    }
}

/// Installs the proto handlers on the endpoint.
pub(crate) fn install<P: Port>(ep: &mut Endpoint<P, Ctx>) -> Result<()> {
    ep.register(H_AM, on_am::<P>)?;
    ep.register(H_LDATA, on_ldata::<P>)?;
    Ok(())
}

fn fail(ctx: &mut Ctx, e: Error) -> skifch::Result<()> {
    let text = e.to_string();
    ctx.failed.get_or_insert(e);
    Err(skifch::Error::InvalidArgument(text.into()))
}

/// Copies `parts` to `dest` in the segment of this rank's endpoint `ep`, after checking
/// the range.
fn land(ctx: &Ctx, ep: u32, dest: usize, parts: [&[u8]; 2]) -> Result<()> {
    let len = parts[0].len() + parts[1].len();
    let segs = ctx.segs_of(ep).ok_or(Error::NotAttached)?;
    segs.offset(ctx.rank, dest, len)?;
    let mut at = dest;
    for p in parts {
        // SAFETY: `dest..dest+len` is inside this rank's live segment (checked); it is
        // reached only through raw copies and atomics, never a Rust reference; the
        // source is the channel's receive memory, never inside the segment.
        unsafe { skifch::mem::copy_mem(p.as_ptr(), at as *mut u8, p.len()) };
        at += p.len();
    }
    Ok(())
}

fn on_ldata<P: Port>(ctx: &mut Ctx, _io: &mut Io<'_, P>, am: &Am<'_>) -> skifch::Result<()> {
    let dest = am.args().first().copied().unwrap_or(0) as usize;
    match land(ctx, am.arg(), dest, am.payload().segments()) {
        Ok(()) => Ok(()),
        Err(e) => fail(ctx, e),
    }
}

/// A Short with its arguments in the header words (every Short of at most 6 arguments):
/// no payload to look at (bits 13-14 and 16 of the small argument clear).
const SHORT_MASK: u32 = 3 << 13 | F_PREFIX;

fn on_am<P: Port>(ctx: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> skifch::Result<()> {
    let meta = am.arg();
    if meta & SHORT_MASK == 0 {
        // The Short fast path: the arguments from the header words, no payload, no
        // 16-slot argument array.
        let nargs = ((meta >> 8) & 31) as usize;
        if nargs > 6 {
            return fail(ctx, Error::Protocol(format!("{nargs} AM header arguments")));
        }
        let mut args = [0u32; 6];
        let w = am.args();
        for (i, a) in args[..nargs].iter_mut().enumerate() {
            *a = (w.get(i / 2).copied().unwrap_or(0) >> (32 * (i % 2))) as u32;
        }
        return run(
            ctx,
            io,
            am.src(),
            meta,
            Category::Short,
            &[],
            (0, 0),
            &args[..nargs],
        );
    }
    let nargs = ((meta >> 8) & 31) as usize;
    let Some(cat) = Category::from_code((meta >> 13) & 3) else {
        return fail(
            ctx,
            Error::Protocol(format!("AM category {}", (meta >> 13) & 3)),
        );
    };
    if nargs > MAX_ARGS {
        return fail(ctx, Error::Protocol(format!("{nargs} AM arguments")));
    }
    let pl = am.payload();
    let owned;
    let bytes: &[u8] = match pl.as_contiguous() {
        Some(b) => b,
        None => {
            // The message wrapped around the receive ring: the one case of a copy.
            owned = pl.to_vec();
            &owned
        }
    };
    let mut args = [0u32; MAX_ARGS];
    let data = if meta & F_PREFIX != 0 {
        let p = pad8(4 * nargs);
        if bytes.len() < p {
            return fail(ctx, Error::Protocol("AM shorter than its arguments".into()));
        }
        for (i, a) in args[..nargs].iter_mut().enumerate() {
            let mut w = [0u8; 4];
            w.copy_from_slice(&bytes[4 * i..4 * i + 4]);
            *a = u32::from_le_bytes(w);
        }
        &bytes[p..]
    } else {
        let w = am.args();
        for (i, a) in args[..nargs].iter_mut().enumerate() {
            *a = (w.get(i / 2).copied().unwrap_or(0) >> (32 * (i % 2))) as u32;
        }
        bytes
    };
    let (buf, len) = match cat {
        Category::Short => (0, 0),
        Category::Medium => (data.as_ptr() as usize, data.len()),
        Category::Long => {
            let w = am.args();
            let dest = w.first().copied().unwrap_or(0) as usize;
            let len = w.get(1).copied().unwrap_or(0) as usize;
            if !data.is_empty() {
                if data.len() != len {
                    return fail(ctx, Error::Protocol("Long payload length".into()));
                }
                if let Err(e) = land(ctx, crate::eps::target_ep(meta), dest, [data, &[]]) {
                    return fail(ctx, e);
                }
            }
            (dest, len)
        }
    };
    run(
        ctx,
        io,
        am.src(),
        meta,
        cat,
        data,
        (buf, len),
        &args[..nargs],
    )
}

/// Calls the handler of the AM with small argument `meta` from `src`: a Medium's
/// payload in `data`, `buf`/`len` what a C handler gets (Medium or Long), `args` its
/// arguments.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn run<P: Port>(
    ctx: &mut Ctx,
    io: &mut Io<'_, P>,
    src: u32,
    meta: u32,
    cat: Category,
    data: &[u8],
    (buf, len): (usize, usize),
    args: &[u32],
) -> skifch::Result<()> {
    let index = meta as u8;
    // The primordial endpoint's AM (no endpoint bits) takes no endpoint arithmetic.
    let (slot, route, segs) = if meta >> 17 == 0 {
        (index as usize, 0, ctx.segs.as_deref())
    } else {
        let route = crate::eps::swap(meta);
        let segs = ctx.segs_of(crate::eps::target_ep(route));
        (crate::eps::slot(meta), route, segs)
    };
    let Some(entry) = ctx.table.get(slot).and_then(|e| e.as_ref()) else {
        let (rank, ep) = (ctx.rank, crate::eps::target_ep(meta));
        return fail(
            ctx,
            match ep {
                0 => Error::Unregistered { index, rank },
                ep => Error::UnregisteredOn { index, ep, rank },
            },
        );
    };
    let lim = ctx.limits.unwrap_or(Limits { max_msg: 4096 });
    let mut tok = Token {
        src,
        is_req: meta & F_REPLY == 0,
        cat,
        rec: &*entry.rec,
        replied: false,
        out: io,
        segs,
        lim,
        route,
    };
    let track = !ctx.seq;
    if track {
        ctx.running.store(this_thread(), Ordering::Relaxed);
    }
    match entry.f {
        HandlerFn::Rust(f) => {
            let d = match cat {
                Category::Short => Data::None,
                Category::Medium => Data::Medium(data),
                Category::Long => Data::Long { addr: buf, len },
            };
            f(&mut tok, args, d)
        }
        HandlerFn::C(fp) => {
            if let Some(inv) = ctx.invoke_c {
                inv(fp, &mut tok, cat, buf, len, args);
            }
        }
    }
    if track {
        ctx.running.store(0, Ordering::Relaxed);
    }
    Ok(())
}
