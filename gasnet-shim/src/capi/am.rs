//! AM injection (`gex_AM_Request*`/`Reply*` and the GASNet-1 names reach these through
//! the headers' macros), tokens, size queries, negotiated payload and polling.
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in the headers and GASNet's specification

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void};

use skifch::wait::Backoff;

use super::{dest, fatal, g, job_rank, ok, world_fast, OK};
use crate::am::{Category, EntryRec, Token, MAX_ARGS, MAX_LONG};
use crate::np::{PreparedAm, PreparedReply};
use crate::Error;

/// `GEX_FLAG_IMMEDIATE`.
const FLAG_IMMEDIATE: u32 = 1;

fn name(call: *const c_char) -> super::CallName {
    super::CallName(call, "gex_AM")
}

fn category<C: std::fmt::Display + ?Sized>(call: &C, cat: c_int) -> Category {
    match cat {
        0 => Category::Short,
        1 => Category::Medium,
        2 => Category::Long,
        _ => fatal(call, &Error::BadArgument(format!("AM category {cat}"))),
    }
}

#[inline(always)]
fn args<'a, C: std::fmt::Display + ?Sized>(call: &C, nargs: c_int, a: *const i32) -> &'a [u32] {
    if !(0..=MAX_ARGS as c_int).contains(&nargs) {
        fatal(
            call,
            &Error::BadArgument(format!("{nargs} arguments (at most {MAX_ARGS})")),
        );
    }
    if nargs == 0 || a.is_null() {
        return &[];
    }
    // SAFETY: the headers pass an array of `nargs` arguments.
    unsafe { std::slice::from_raw_parts(a.cast::<u32>(), nargs as usize) }
}

/// Local completion: every injection here has copied the payload (or handed it to the
/// channel) when it returns, so a requested event is already complete.
fn lc_done(lc_opt: *mut *mut c_void) {
    if lc_opt as usize > 3 {
        // SAFETY: not one of GEX_EVENT_NOW/DEFER/GROUP: the caller's event variable.
        unsafe { *lc_opt = std::ptr::null_mut() };
    }
}

/// Every AM request: `cat` 0 Short, 1 Medium, 2 Long. Returns 0 when injected, 1 when
/// not (`GEX_FLAG_IMMEDIATE` and the channel would block).
#[no_mangle]
pub unsafe extern "C" fn gasnetc_am_request(
    tm: *mut c_void,
    rank: u32,
    handler: u8,
    cat: c_int,
    buf: *const c_void,
    nbytes: usize,
    dest: *mut c_void,
    lc_opt: *mut *mut c_void,
    flags: u32,
    nargs: c_int,
    a: *const i32,
    call: *const c_char,
) -> c_int {
    // The headers send the common AM through `gasnetc_am_request_fast`: this is the rest.
    let at = Inj {
        handler,
        cat,
        buf,
        nbytes,
        dest,
        lc_opt,
        flags,
        nargs,
        a,
    };
    // SAFETY: the caller's contract, forwarded.
    unsafe { request_any(&name(call), tm, rank, &at) }
}

/// An AM's arguments past its destination, as the general entries take them.
#[derive(Clone, Copy)]
struct Inj {
    handler: u8,
    cat: c_int,
    buf: *const c_void,
    nbytes: usize,
    dest: *mut c_void,
    lc_opt: *mut *mut c_void,
    flags: u32,
    nargs: c_int,
    a: *const i32,
}

impl Inj {
    /// The payload's length, or a fatal error naming `call` for a NULL payload.
    fn checked_len<C: std::fmt::Display + ?Sized>(&self, call: &C) -> usize {
        if self.nbytes > 0 && self.buf.is_null() {
            fatal(call, &Error::BadArgument("a NULL payload".into()));
        }
        self.nbytes
    }

    /// A fast entry's AM (its key: see [`KEY_LEGACY`]).
    fn of_key(key: u32, buf: *const c_void, nbytes: usize, a: *const i32) -> Inj {
        Inj {
            handler: key as u8,
            cat: key_cat(key),
            buf,
            nbytes,
            dest: std::ptr::null_mut(),
            lc_opt: std::ptr::null_mut(),
            flags: 0,
            nargs: key_nargs(key),
            a,
        }
    }
}

/// A fast entry key's category (see [`KEY_LEGACY`]).
#[inline(always)]
fn key_cat(key: u32) -> c_int {
    ((key >> 8) & 3) as c_int
}

/// A fast entry key's argument count.
#[inline(always)]
fn key_nargs(key: u32) -> c_int {
    ((key >> 16) & 31) as c_int
}

/// The AM fast entry's key (`GASNETC_AMKEY` in `gasnetex.h`): handler index (bits 0-7),
/// category (8-9), argument count (16-20), a GASNet-1 name (bit 24).
const KEY_LEGACY: u32 = 1 << 24;

/// The name of the call behind a fast entry's key, for error messages only.
struct KeyName(u32, bool);

impl std::fmt::Display for KeyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (key, reply) = (self.0, self.1);
        let kind = if reply { "Reply" } else { "Request" };
        let cat = ["Short", "Medium", "Long", "?"][((key >> 8) & 3) as usize];
        let n = (key >> 16) & 31;
        if key & KEY_LEGACY != 0 {
            write!(f, "gasnet_AM{kind}{cat}{n}")
        } else {
            write!(f, "gex_AM_{kind}{cat}{n}")
        }
    }
}

/// A fast request's fatal error, named from its key.
#[cold]
#[inline(never)]
fn fast_fatal(key: u32, e: Error) -> ! {
    fatal(&KeyName(key, false), &e)
}

/// `gasnetc_am_request` of a Short or Medium with at most 6 arguments and without
/// `GEX_FLAG_IMMEDIATE` (the headers handle `lc_opt`): six register arguments, no call
/// name (made from `key` if an error needs it) — the common request's C entry.
#[no_mangle]
pub unsafe extern "C" fn gasnetc_am_request_fast(
    tm: *mut c_void,
    rank: u32,
    key: u32,
    buf: *const c_void,
    nbytes: usize,
    a: *const i32,
) -> c_int {
    // The call's name is made only where an error needs it (out of line): one kept for
    // them cost two stores a request.
    let (cat, nargs) = (key_cat(key), key_nargs(key));
    if let Some(gn) = world_fast(tm, rank) {
        if let Some(cat) = inline_cat(cat, nargs, 0) {
            let data = if cat == Category::Short || nbytes == 0 {
                &[][..]
            } else if buf.is_null() {
                fast_fatal(key, Error::BadArgument("a NULL payload".into()))
            } else {
                // SAFETY: the client's payload of `nbytes` bytes (the AM calls' contract).
                unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), nbytes) }
            };
            // Without arguments (the message-rate case) none are read or packed.
            let r = if nargs == 0 {
                gn.request_inline(rank, key as u8, cat, &[], data)
            } else {
                let args = args(&KeyName(key, false), nargs, a);
                gn.request_inline(rank, key as u8, cat, args, data)
            };
            if let Err(e) = r {
                fast_fatal(key, e);
            }
            return 0;
        }
    }
    let at = Inj::of_key(key, buf, nbytes, a);
    // SAFETY: the caller's contract (the headers' arguments), forwarded.
    unsafe { request_any(&KeyName(key, false), tm, rank, &at) }
}

/// Every AM request the inline paths do not take (other teams, Long, more than 6
/// arguments, `GEX_FLAG_IMMEDIATE`).
///
/// # Safety
/// As `gasnetc_am_request`'s arguments.
#[inline(never)]
unsafe fn request_any<C: std::fmt::Display + ?Sized>(
    call: &C,
    tm: *mut c_void,
    rank: u32,
    at: &Inj,
) -> c_int {
    let gn = g(&call);
    let cat = category(&call, at.cat);
    let (r, route) = dest(&call, tm, rank);
    let (buf, len) = (at.buf as usize, at.checked_len(call));
    let args = args(&call, at.nargs, at.a);
    let immediate = at.flags & FLAG_IMMEDIATE != 0;
    let dest = at.dest as usize;
    let sent = ok(
        &call,
        gn.request(route, r, at.handler, cat, args, buf, len, dest, immediate),
    );
    lc_done(at.lc_opt);
    c_int::from(!sent)
}

/// The category of an AM sent with its arguments in the header (Short or Medium, at
/// most 6 arguments, no `GEX_FLAG_IMMEDIATE`: `request_inline` / `reply_inline`), else
/// `None` (the general path).
#[inline(always)]
fn inline_cat(cat: c_int, nargs: c_int, flags: u32) -> Option<Category> {
    if !(0..=6).contains(&nargs) || flags & FLAG_IMMEDIATE != 0 {
        return None;
    }
    match cat {
        0 => Some(Category::Short),
        1 => Some(Category::Medium),
        _ => None,
    }
}

/// A Medium's payload as a slice (empty for a Short), or a fatal error for a NULL one.
#[inline(always)]
fn payload<'a, C: std::fmt::Display + ?Sized>(
    call: &C,
    cat: Category,
    buf: *const c_void,
    nbytes: usize,
) -> &'a [u8] {
    if cat == Category::Short || nbytes == 0 {
        return &[];
    }
    if buf.is_null() {
        fatal(call, &Error::BadArgument("a NULL payload".into()));
    }
    // SAFETY: the client's payload of `nbytes` bytes (the AM calls' contract).
    unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), nbytes) }
}

/// The token of the running handler, or a fatal error.
fn token<'a, C: std::fmt::Display + ?Sized>(call: &C, t: *mut c_void) -> &'a mut Token<'a> {
    if t.is_null() {
        fatal(call, &Error::BadArgument("a NULL token".into()));
    }
    // SAFETY: a token is only handed to a running handler, which owns it for its run
    // (using it afterwards is erroneous in GASNet: the token names the handler's stack).
    unsafe { &mut *t.cast::<Token<'a>>() }
}

/// Every AM reply (from a request handler, through its token).
#[no_mangle]
pub unsafe extern "C" fn gasnetc_am_reply(
    tok: *mut c_void,
    handler: u8,
    cat: c_int,
    buf: *const c_void,
    nbytes: usize,
    dest: *mut c_void,
    lc_opt: *mut *mut c_void,
    flags: u32,
    nargs: c_int,
    a: *const i32,
    call: *const c_char,
) -> c_int {
    // The headers send the common reply through `gasnetc_am_reply_fast`: this is the rest.
    let call = name(call);
    let at = Inj {
        handler,
        cat,
        buf,
        nbytes,
        dest,
        lc_opt,
        flags,
        nargs,
        a,
    };
    // SAFETY: the caller's contract, forwarded.
    unsafe { reply_any(&call, token(&call, tok), &at) }
}

/// `gasnetc_am_reply` of a Short or Medium with at most 6 arguments and without
/// `GEX_FLAG_IMMEDIATE`: the common reply's C entry (as [`gasnetc_am_request_fast`]).
#[no_mangle]
pub unsafe extern "C" fn gasnetc_am_reply_fast(
    tok: *mut c_void,
    key: u32,
    buf: *const c_void,
    nbytes: usize,
    a: *const i32,
) -> c_int {
    let call = KeyName(key, true);
    let t = token(&call, tok);
    let (cat, nargs) = (key_cat(key), key_nargs(key));
    if let Some(cat) = inline_cat(cat, nargs, 0) {
        let data = payload(&call, cat, buf, nbytes);
        ok(
            &call,
            t.reply_inline(key as u8, cat, args(&call, nargs, a), data),
        );
        return 0;
    }
    let at = Inj::of_key(key, buf, nbytes, a);
    // SAFETY: the caller's contract (the headers' arguments), forwarded.
    unsafe { reply_any(&call, t, &at) }
}

/// Every AM reply the inline path does not take.
///
/// # Safety
/// As `gasnetc_am_reply`'s arguments.
#[inline(never)]
unsafe fn reply_any<C: std::fmt::Display + ?Sized>(call: &C, t: &mut Token<'_>, at: &Inj) -> c_int {
    let cat = category(&call, at.cat);
    let len = at.checked_len(call);
    let data = if len == 0 {
        &[][..]
    } else {
        // SAFETY: the client's payload of `len` bytes (not NULL: `checked_len`).
        unsafe { std::slice::from_raw_parts(at.buf.cast::<u8>(), len) }
    };
    let args = args(&call, at.nargs, at.a);
    let immediate = at.flags & FLAG_IMMEDIATE != 0;
    let sent = ok(
        &call,
        t.reply(at.handler, cat, args, data, at.dest as usize, immediate),
    );
    lc_done(at.lc_opt);
    c_int::from(!sent)
}

/// `gex_Token_Info_t`.
#[repr(C)]
pub struct TokenInfo {
    srcrank: u32,
    ep: *mut c_void,
    entry: *const EntryRec,
    is_req: c_int,
    is_long: c_int,
}

/// `GEX_TI_ALL`: every field is provided.
const TI_ALL: u32 = 31;

#[no_mangle]
pub unsafe extern "C" fn gex_Token_Info(tok: *mut c_void, info: *mut TokenInfo, mask: u32) -> u32 {
    let call = "gex_Token_Info";
    let t = token(call, tok);
    if info.is_null() {
        fatal(call, &Error::BadArgument("info is NULL".into()));
    }
    // SAFETY: the caller's info struct.
    unsafe {
        *info = TokenInfo {
            srcrank: t.src(),
            ep: super::ep::ep_handle(t.ep()),
            entry: t.entry(),
            is_req: c_int::from(t.is_request()),
            is_long: c_int::from(t.is_long()),
        }
    };
    mask & TI_ALL
}

#[no_mangle]
pub unsafe extern "C" fn gasnet_AMGetMsgSource(tok: *mut c_void, src: *mut u32) -> c_int {
    let t = token("gasnet_AMGetMsgSource", tok);
    if !src.is_null() {
        // SAFETY: the caller's variable.
        unsafe { *src = t.src() };
    }
    OK
}

#[no_mangle]
pub extern "C" fn gex_AM_MaxArgs() -> u32 {
    MAX_ARGS as u32
}

fn max_medium<C: std::fmt::Display + ?Sized>(call: &C, nargs: u32) -> usize {
    g(call).limits().max_medium((nargs as usize).min(MAX_ARGS))
}

#[no_mangle]
pub extern "C" fn gex_AM_MaxRequestMedium(
    _tm: *mut c_void,
    _rank: u32,
    _lc: *mut *mut c_void,
    _flags: u32,
    nargs: u32,
) -> usize {
    max_medium("gex_AM_MaxRequestMedium", nargs)
}
#[no_mangle]
pub extern "C" fn gex_AM_MaxReplyMedium(
    _tm: *mut c_void,
    _rank: u32,
    _lc: *mut *mut c_void,
    _flags: u32,
    nargs: u32,
) -> usize {
    max_medium("gex_AM_MaxReplyMedium", nargs)
}
#[no_mangle]
pub extern "C" fn gex_Token_MaxReplyMedium(
    _t: *mut c_void,
    _lc: *mut *mut c_void,
    _flags: u32,
    nargs: u32,
) -> usize {
    max_medium("gex_Token_MaxReplyMedium", nargs)
}
#[no_mangle]
pub extern "C" fn gex_AM_MaxRequestLong(
    _tm: *mut c_void,
    _rank: u32,
    _lc: *mut *mut c_void,
    _flags: u32,
    _nargs: u32,
) -> usize {
    MAX_LONG
}
#[no_mangle]
pub extern "C" fn gex_AM_MaxReplyLong(
    _tm: *mut c_void,
    _rank: u32,
    _lc: *mut *mut c_void,
    _flags: u32,
    _nargs: u32,
) -> usize {
    MAX_LONG
}
#[no_mangle]
pub extern "C" fn gex_Token_MaxReplyLong(
    _t: *mut c_void,
    _lc: *mut *mut c_void,
    _flags: u32,
    _nargs: u32,
) -> usize {
    MAX_LONG
}
#[no_mangle]
pub extern "C" fn gasnetc_am_lub_medium() -> usize {
    g("gex_AM_LUBRequestMedium").limits().lub_medium()
}
#[no_mangle]
pub extern "C" fn gasnetc_am_lub_long() -> usize {
    MAX_LONG
}

#[no_mangle]
pub extern "C" fn gasnet_AMPoll() -> c_int {
    let call = "gasnet_AMPoll";
    ok(call, g(call).poll());
    OK
}

/// The back-off of `GASNET_BLOCKUNTIL`: its first polls go without `pause` (an AM round
/// trip's answer is seen as its line arrives, `skifch::wait::HOT_POLLS`), then it spins
/// about 20 µs (as the channel's fixed wait policy) before it yields: a yield on a busy
/// machine gives the CPU away for a time slice, far longer than an AM round trip.
const fn blockuntil_backoff() -> Backoff {
    Backoff::with(2048, 1024, std::time::Duration::from_micros(50)).hot(skifch::wait::HOT_POLLS)
}

thread_local! {
    static IDLE: RefCell<Backoff> = const { RefCell::new(blockuntil_backoff()) };
}

/// One step of `GASNET_BLOCKUNTIL` (the header's macro keeps `*polls`, its count of empty
/// polls, on the caller's stack: no thread-local state, no reset call): polls; when
/// nothing arrived, backs off (and checks that no rank is lost).
#[no_mangle]
pub unsafe extern "C" fn gasnetc_wait_poll(polls: *mut u32) {
    let call = "GASNET_BLOCKUNTIL";
    let mut b = blockuntil_backoff();
    if !polls.is_null() {
        // SAFETY: the macro's counter variable.
        b.set_polls(unsafe { *polls });
    }
    ok(call, g(call).wait_step(&mut b));
    if !polls.is_null() {
        // SAFETY: as above.
        unsafe { *polls = b.polls() };
    }
}

/// One step of `GASNET_BLOCKUNTIL` as programs built against the first headers call it
/// (a thread-local back-off): polls; when nothing arrived, backs off (and checks that no
/// rank is lost). `reset` after the condition came true.
#[no_mangle]
pub extern "C" fn gasnetc_wait_step(reset: c_int) {
    let call = "GASNET_BLOCKUNTIL";
    IDLE.with(|b| {
        let mut b = b.borrow_mut();
        if reset != 0 {
            b.reset();
        } else {
            ok(call, g(call).wait_step(&mut b));
        }
    });
}

/// A prepared AM (`gex_AM_SrcDesc_t`): between `gex_AM_Prepare*` and `gex_AM_Commit*` of
/// one thread.
struct Prep {
    reply: Option<usize>,
    tm: usize,
    rank: u32,
    cat: Category,
    own: Vec<u8>,
    addr: usize,
    size: usize,
    dest: usize,
    nargs: u32,
    lc_opt: usize,
    /// A Medium request written in place in the target's memory (`crate::np`), holding
    /// the endpoint until the commit; `None`: the payload is in `own` or the client's.
    zc: Option<PreparedAm<skifch_drivers::DefaultPort>>,
    /// A Medium reply written in place in the requester's memory.
    zr: Option<PreparedReply>,
}

thread_local! {
    static PREP: RefCell<Option<Prep>> = const { RefCell::new(None) };
    static SD: u8 = const { 0 };
}

fn sd_handle() -> *mut c_void {
    SD.with(|s| (s as *const u8).cast_mut().cast())
}

/// `gex_AM_PrepareRequest{Medium,Long}` (`tok` NULL) and `gex_AM_PrepareReply*`: a
/// buffer of between `least` and `most` bytes the client fills, then commits. The
/// client's own buffer when it gives one; for a Medium request or reply without one, room
/// in the receiver's memory where the driver offers it (`crate::np`: no copy; a request
/// with `GEX_FLAG_IMMEDIATE` gets NULL when there is no room now, a reply without room
/// takes the copy); for a Long request or reply with its destination, on the direct path,
/// that destination in the receiver's mapped segment (no copy when committed to the same
/// address); else one of the library's (a copy at commit).
#[no_mangle]
pub unsafe extern "C" fn gasnetc_am_prepare(
    tm: *mut c_void,
    rank: u32,
    tok: *mut c_void,
    client_buf: *const c_void,
    least: usize,
    most: usize,
    dest: *mut c_void,
    lc_opt: *mut *mut c_void,
    flags: u32,
    nargs: u32,
    cat: c_int,
    call: *const c_char,
) -> *mut c_void {
    let call = name(call);
    let cat = category(&call, cat);
    g(&call); // initialized
    if !tok.is_null() {
        let t = token(&call, tok);
        if !t.is_request() {
            fatal(
                &call,
                &Error::BadArgument("a reply handler cannot reply".into()),
            );
        }
    } else {
        job_rank(&call, tm, rank);
    }
    let max = match cat {
        Category::Medium => max_medium(&call, nargs),
        _ => MAX_LONG,
    };
    if least > max || least > most {
        fatal(
            &call,
            &Error::BadArgument(format!(
                "least_payload {least} (most_payload {most}, the maximum is {max})"
            )),
        );
    }
    let size = most.min(max);
    let mut zc = None;
    let mut zr = None;
    if !tok.is_null() && client_buf.is_null() && cat == Category::Medium {
        zr = ok(
            &call,
            token(&call, tok).prepare_reply_medium(nargs as usize, size),
        );
    }
    if tok.is_null() && client_buf.is_null() && cat == Category::Medium {
        let dst = job_rank(&call, tm, rank);
        let immediate = flags & FLAG_IMMEDIATE != 0;
        match g(&call).prepare_medium(dst, nargs as usize, size, immediate) {
            Ok(p) => zc = p,
            Err(Error::Comm(e)) if e.is_would_block() => return std::ptr::null_mut(),
            Err(e) => fatal(&call, &e),
        }
    }
    // A Long request to a destination given now, on the direct path: the payload is
    // written straight into the target's segment (the commit sends the arguments only).
    let in_seg = match (
        client_buf.is_null() && cat == Category::Long && !dest.is_null(),
        tok.is_null(),
    ) {
        (false, _) => None,
        (true, true) => g(&call).prepare_long(job_rank(&call, tm, rank), dest as usize, size),
        (true, false) => token(&call, tok).prepare_reply_long(dest as usize, size),
    };
    let mut own = Vec::new();
    let addr = if let Some(z) = &zc {
        z.addr() as usize
    } else if let Some(z) = &zr {
        z.addr() as usize
    } else if let Some(at) = in_seg {
        at as usize
    } else if client_buf.is_null() {
        own = vec![0u8; size];
        own.as_mut_ptr() as usize
    } else {
        client_buf as usize
    };
    PREP.with(|p| {
        let mut p = p.borrow_mut();
        if p.is_some() {
            fatal(
                &call,
                &Error::BadArgument("a Prepare before the previous Commit".into()),
            );
        }
        *p = Some(Prep {
            reply: (!tok.is_null()).then_some(tok as usize),
            tm: tm as usize,
            rank,
            cat,
            own,
            addr,
            size,
            dest: dest as usize,
            nargs,
            lc_opt: lc_opt as usize,
            zc,
            zr,
        });
    });
    sd_handle()
}

fn with_prep<T>(call: &str, f: impl FnOnce(&Prep) -> T) -> T {
    PREP.with(|p| match p.borrow().as_ref() {
        Some(x) => f(x),
        None => fatal(
            call,
            &Error::BadArgument("no prepared AM on this thread".into()),
        ),
    })
}

#[no_mangle]
pub extern "C" fn gex_AM_SrcDescAddr(_sd: *mut c_void) -> *mut c_void {
    with_prep("gex_AM_SrcDescAddr", |p| p.addr as *mut c_void)
}
#[no_mangle]
pub extern "C" fn gex_AM_SrcDescSize(_sd: *mut c_void) -> usize {
    with_prep("gex_AM_SrcDescSize", |p| p.size)
}

/// `gex_AM_Commit{Request,Reply}{Medium,Long}M`: sends the prepared AM with `nbytes` of
/// its buffer (Long: to `dest`, or the address given at Prepare when NULL).
#[no_mangle]
pub unsafe extern "C" fn gasnetc_am_commit(
    _sd: *mut c_void,
    handler: u8,
    nbytes: usize,
    dest: *mut c_void,
    nargs: c_int,
    a: *const i32,
    call: *const c_char,
) {
    let call = name(call);
    let Some(p) = PREP.with(|p| p.borrow_mut().take()) else {
        fatal(
            &call,
            &Error::BadArgument("no prepared AM on this thread".into()),
        )
    };
    if nbytes > p.size {
        fatal(
            &call,
            &Error::TooLarge {
                len: nbytes,
                max: p.size,
            },
        );
    }
    if nargs as u32 != p.nargs {
        fatal(
            &call,
            &Error::BadArgument(format!("{nargs} arguments, {} at Prepare", p.nargs)),
        );
    }
    if let (Some(z), Some(t)) = (p.zr, p.reply) {
        ok(
            &call,
            token(&call, t as *mut c_void).commit_reply_medium(
                z,
                handler,
                args(&call, nargs, a),
                nbytes,
            ),
        );
        lc_done(p.lc_opt as *mut *mut c_void);
        return;
    }
    if let Some(z) = p.zc {
        ok(
            &call,
            g(&call).commit_medium(z, handler, args(&call, nargs, a), nbytes),
        );
        lc_done(p.lc_opt as *mut *mut c_void);
        return;
    }
    let dest = if dest.is_null() {
        p.dest
    } else {
        dest as usize
    };
    let cat = match p.cat {
        Category::Medium => 1,
        _ => 2,
    };
    let buf = p.addr as *const c_void;
    let lc = p.lc_opt as *mut *mut c_void;
    // SAFETY: forwards the prepared buffer (ours, alive in `p`, or the client's).
    unsafe {
        match p.reply {
            Some(t) => gasnetc_am_reply(
                t as *mut c_void,
                handler,
                cat,
                buf,
                nbytes,
                dest as *mut c_void,
                lc,
                0,
                nargs,
                a,
                call.0,
            ),
            None => gasnetc_am_request(
                p.tm as *mut c_void,
                p.rank,
                handler,
                cat,
                buf,
                nbytes,
                dest as *mut c_void,
                lc,
                0,
                nargs,
                a,
                call.0,
            ),
        }
    };
    drop(p.own);
}
