//! Remote memory access, atomics and signals (OpenSHMEM 1.5 §9.6–9.7): every put, get
//! and atomic, typed and untyped, blocking and `_nbi` (which complete at return too).
//! The default context's put and get take the direct path's inlined accessors
//! ([`World::window`], [`skifch::rma::MappedWindow::put_raw`]) first; everything else
//! goes to the [`World`] calls. Context arguments (§9.5) only select a live context.
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in shmem.h and the OpenSHMEM standard

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::Ordering;

use skifch::rma::Amo;

use super::{ctx_pe, fatal, name, ok, sym, w, Error, SymAddr, STATE, W};
use crate::signal::SignalOp;
#[cfg(doc)]
use crate::World;

/// Two exported names (the entry point and its profiling name) with the same inlined
/// body `$body(args)`: the typed calls' fast path, so no extra call per put or get.
macro_rules! both_names {
    ($($f:ident $pf:ident => $body:ident;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $f(call: *const c_char, ctx: usize, dest: *mut c_void, src: *const c_void, bytes: usize, pe: c_int) {
            // SAFETY: forwards the caller's contract.
            unsafe { $body(call, ctx, dest, src, bytes, pe) }
        }
        #[no_mangle]
        pub unsafe extern "C" fn $pf(call: *const c_char, ctx: usize, dest: *mut c_void, src: *const c_void, bytes: usize, pe: c_int) {
            // SAFETY: forwards the caller's contract.
            unsafe { $body(call, ctx, dest, src, bytes, pe) }
        }
    )*};
}
both_names! {
    skifshmem_put pskifshmem_put => put_entry;
    skifshmem_get pskifshmem_get => get_entry;
}

/// `skifshmem_put(call, ctx, dest, src, bytes, pe)`: every blocking and `_nbi` put.
#[inline(always)]
unsafe fn put_entry(
    call: *const c_char,
    ctx: usize,
    dest: *mut c_void,
    src: *const c_void,
    bytes: usize,
    pe: c_int,
) {
    if ctx != 1 {
        // SAFETY: forwards the caller's contract.
        return unsafe { rma_checked(call, ctx, dest, src, bytes, pe, true) };
    }
    // SAFETY: forwards the caller's contract.
    unsafe { put_default(call, dest, src, bytes, pe) }
}

/// A put in the default context, inlined into [`skifshmem_put`] and the exported
/// `shmem_putmem` family (no second call per put): the direct path's copy, else
/// [`put_messages`], else (an address that is not symmetric, a bad PE) [`rma_checked`].
#[inline(always)]
unsafe fn put_default(call: *const c_char, d: *mut c_void, s: *const c_void, n: usize, pe: c_int) {
    let st = STATE.load(Ordering::Acquire);
    if !st.is_null() && pe >= 0 {
        // SAFETY: as in `st`.
        let w = unsafe { &(*st).world };
        if let Some((seg, off)) = w.seg_of(d as usize, n) {
            // SAFETY: the caller passes `n` readable bytes at `s` (OpenSHMEM put contract).
            if unsafe { w.window(seg).put_raw(pe as u32, off, s.cast(), n) } {
                return;
            }
            // SAFETY: forwards the caller's contract.
            return unsafe { put_messages(call, w, pe as u32, off << 1 | seg as usize, s, n) };
        }
    }
    // SAFETY: forwards the caller's contract.
    unsafe { rma_checked(call, 1, d, s, n, pe, true) }
}

/// [`skifshmem_put`] of a symmetric range (`seg_off` = offset · 2 + segment) in the
/// default context off the direct path: a small put is added to the aggregation buffer
/// ([`World::put_small_try`]); anything else goes to [`rma_checked`]. Out of line, so
/// that the direct path stays small; a leaf on the common path.
#[inline(never)]
unsafe fn put_messages(
    call: *const c_char,
    w: &W,
    pe: u32,
    seg_off: usize,
    src: *const c_void,
    bytes: usize,
) {
    // SAFETY: the caller passes `bytes` readable bytes at `src` and a checked range.
    if !unsafe { w.put_small_try(pe, seg_off, src.cast(), bytes) } {
        let a = SymAddr {
            seg: (seg_off & 1) as u8,
            off: seg_off >> 1,
        };
        let dest = w.local(a) as *mut c_void;
        // SAFETY: forwards the caller's contract.
        unsafe { rma_checked(call, 1, dest, src, bytes, pe as c_int, true) }
    }
}

/// [`skifshmem_put`] (`put`) and [`skifshmem_get`] off the direct path, kept out of line
/// so that the direct path stays a leaf without a large frame: the checks that name the
/// call, then the world's put or get on whatever path reaches `pe`.
#[inline(never)]
unsafe fn rma_checked(
    call: *const c_char,
    ctx: usize,
    dest: *mut c_void,
    src: *const c_void,
    bytes: usize,
    pe: c_int,
    put: bool,
) {
    let remote = if put { dest.cast_const() } else { src };
    let (w, pe, a) = match fast(ctx, pe, remote, bytes) {
        Some(f) => f,
        // SAFETY: see `name` (only on this checking path: the name costs a strlen).
        None => slow(unsafe { name(call) }, ctx, pe, remote, bytes),
    };
    if bytes == 0 {
        return;
    }
    let r = if put {
        // SAFETY: the caller passes `bytes` readable bytes at `src` (OpenSHMEM put contract).
        w.put(pe, a, unsafe {
            std::slice::from_raw_parts(src.cast::<u8>(), bytes)
        })
    } else {
        // SAFETY: the caller passes `bytes` writable bytes at `dest`, not aliased by Rust.
        w.get(pe, a, unsafe {
            std::slice::from_raw_parts_mut(dest.cast::<u8>(), bytes)
        })
    };
    if let Err(e) = r {
        // SAFETY: see `name`.
        fatal(unsafe { name(call) }, &e);
    }
}

/// The direct path's get in one step (default context only): true if `pe`'s copy of
/// the symmetric range `[src, src + len)` is mapped here and was copied to `dest`, and
/// no PE is lost ([`World::alive`]). False: take the checked path.
///
/// # Safety
/// `dest..dest + len` is writable.
#[inline(always)]
unsafe fn get_direct(
    ctx: usize,
    pe: c_int,
    dest: *mut c_void,
    src: *const c_void,
    len: usize,
) -> bool {
    let st = STATE.load(Ordering::Acquire);
    if st.is_null() || ctx != 1 || pe < 0 {
        return false;
    }
    // SAFETY: as in `st`.
    let w = unsafe { &(*st).world };
    match w.seg_of(src as usize, len) {
        // A get from a lost PE's still-mapped memory must fail: the checked path reports it.
        Some((seg, off)) => {
            // SAFETY: the caller's contract.
            let copied = unsafe { w.window(seg).get_raw(pe as u32, off, dest.cast(), len) };
            copied && w.alive().is_ok()
        }
        None => false,
    }
}

/// The checks of every RMA call without building the call's name: the state, the
/// default context, the PE and the symmetric address. `None` sends the caller to
/// [`slow`], which repeats them and reports what failed.
#[inline]
fn fast(ctx: usize, pe: c_int, p: *const c_void, len: usize) -> Option<(&'static W, u32, SymAddr)> {
    let st = STATE.load(Ordering::Acquire);
    if st.is_null() || ctx != 1 {
        return None;
    }
    // SAFETY: as in `st`.
    let w = unsafe { &(*st).world };
    if pe < 0 || pe as u32 >= w.n_pes() {
        return None;
    }
    Some((w, pe as u32, w.sym(p as usize, len.max(1))?))
}

/// As [`fast`], failing with a message naming `call` (a live non-default context passes).
fn slow(
    call: &str,
    ctx: usize,
    pe: c_int,
    p: *const c_void,
    len: usize,
) -> (&'static W, u32, SymAddr) {
    let pe = ctx_pe(call, ctx, pe);
    (w(call), pe, sym(call, p, len))
}

/// `skifshmem_get`: every blocking and `_nbi` get (the `_nbi` forms complete at return
/// too).
#[inline(always)]
unsafe fn get_entry(
    call: *const c_char,
    ctx: usize,
    dest: *mut c_void,
    src: *const c_void,
    bytes: usize,
    pe: c_int,
) {
    // SAFETY: the caller passes `bytes` writable bytes at `dest`.
    if unsafe { get_direct(ctx, pe, dest, src, bytes) } {
        return;
    }
    // SAFETY: forwards the caller's contract.
    unsafe { rma_checked(call, ctx, dest, src, bytes, pe, false) }
}

/// Strided put (`iput`): element `k` of `src` (stride `sst`) to element `k` of `dest`
/// (stride `dst`) on `pe`, elements of `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn pskifshmem_iput(
    call: *const c_char,
    ctx: usize,
    dest: *mut c_void,
    src: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    size: usize,
    pe: c_int,
) {
    // SAFETY: forwards the caller's contract.
    unsafe { strided(call, ctx, dest, src, dst, sst, nelems, size, pe, true) }
}

/// Strided get (`iget`), as [`skifshmem_iput`] the other way.
#[no_mangle]
pub unsafe extern "C" fn pskifshmem_iget(
    call: *const c_char,
    ctx: usize,
    dest: *mut c_void,
    src: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    size: usize,
    pe: c_int,
) {
    // SAFETY: forwards the caller's contract.
    unsafe { strided(call, ctx, dest, src, dst, sst, nelems, size, pe, false) }
}

/// `iput` (`put`) and `iget`: element `k` is `size` bytes at `dest + k·dst·size` and
/// `src + k·sst·size`; the remote side (`dest` for a put, `src` for a get) must be
/// symmetric.
#[allow(clippy::too_many_arguments)]
unsafe fn strided(
    call: *const c_char,
    ctx: usize,
    dest: *mut c_void,
    src: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    size: usize,
    pe: c_int,
    put: bool,
) {
    // SAFETY: see `name`.
    let call = unsafe { name(call) };
    let pe = ctx_pe(call, ctx, pe);
    let w = w(call);
    for k in 0..nelems as isize {
        let d = (dest as isize + k * dst * size as isize) as *mut u8;
        let s = (src as isize + k * sst * size as isize) as *const u8;
        let r = if put {
            let a = sym(call, d.cast(), size);
            // SAFETY: the caller's strided source holds `nelems` elements of `size` bytes.
            w.put(pe, a, unsafe { std::slice::from_raw_parts(s, size) })
        } else {
            let a = sym(call, s.cast(), size);
            // SAFETY: the caller's strided destination holds `nelems` elements.
            w.get(pe, a, unsafe { std::slice::from_raw_parts_mut(d, size) })
        };
        ok(call, r);
    }
}

/// The sized calls under both names (`shmem_put8` and `pshmem_put8`, …): each is one
/// inlined call of the library's entry point with the element size.
macro_rules! sized {
    ($($bytes:literal: $(($f:ident $pf:ident $k:ident $($strided:ident)?))*;)*) => {$($(
        sized!(@one $f $bytes $k $($strided)?);
        sized!(@one $pf $bytes $k $($strided)?);
    )*)*};
    (@one $f:ident $bytes:literal $k:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $f(dest: *mut c_void, src: *const c_void, n: usize, pe: c_int) {
            // SAFETY: forwards the caller's contract.
            unsafe { $k(concat!(stringify!($f), "\0").as_ptr().cast(), 1, dest, src, n * $bytes, pe) }
        }
    };
    (@one $f:ident $bytes:literal $k:ident strided) => {
        #[no_mangle]
        pub unsafe extern "C" fn $f(dest: *mut c_void, src: *const c_void, dst: isize, sst: isize, n: usize, pe: c_int) {
            // SAFETY: forwards the caller's contract.
            unsafe { $k(concat!(stringify!($f), "\0").as_ptr().cast(), 1, dest, src, dst, sst, n, $bytes, pe) }
        }
    };
}
sized! {
    1: (shmem_put8 pshmem_put8 put_entry) (shmem_put8_nbi pshmem_put8_nbi put_entry)
       (shmem_get8 pshmem_get8 get_entry) (shmem_get8_nbi pshmem_get8_nbi get_entry)
       (shmem_iput8 pshmem_iput8 pskifshmem_iput strided) (shmem_iget8 pshmem_iget8 pskifshmem_iget strided);
    2: (shmem_put16 pshmem_put16 put_entry) (shmem_put16_nbi pshmem_put16_nbi put_entry)
       (shmem_get16 pshmem_get16 get_entry) (shmem_get16_nbi pshmem_get16_nbi get_entry)
       (shmem_iput16 pshmem_iput16 pskifshmem_iput strided) (shmem_iget16 pshmem_iget16 pskifshmem_iget strided);
    4: (shmem_put32 pshmem_put32 put_entry) (shmem_put32_nbi pshmem_put32_nbi put_entry)
       (shmem_get32 pshmem_get32 get_entry) (shmem_get32_nbi pshmem_get32_nbi get_entry)
       (shmem_iput32 pshmem_iput32 pskifshmem_iput strided) (shmem_iget32 pshmem_iget32 pskifshmem_iget strided);
    8: (shmem_put64 pshmem_put64 put_entry) (shmem_put64_nbi pshmem_put64_nbi put_entry)
       (shmem_get64 pshmem_get64 get_entry) (shmem_get64_nbi pshmem_get64_nbi get_entry)
       (shmem_iput64 pshmem_iput64 pskifshmem_iput strided) (shmem_iget64 pshmem_iget64 pskifshmem_iget strided);
    16: (shmem_put128 pshmem_put128 put_entry) (shmem_put128_nbi pshmem_put128_nbi put_entry)
       (shmem_get128 pshmem_get128 get_entry) (shmem_get128_nbi pshmem_get128_nbi get_entry)
       (shmem_iput128 pshmem_iput128 pskifshmem_iput strided) (shmem_iget128 pshmem_iget128 pskifshmem_iget strided);
}

/// Atomic operation codes of `skifshmem_amo` (the `op` argument the inline wrappers of
/// shmem.h pass): [`Amo::decode`]'s numbering.
fn amo_op(code: c_int, a: u64, b: u64) -> Option<Amo> {
    Amo::decode(u8::try_from(code).ok()?, a, b)
}

/// Every atomic: `op` on the `width`-byte object at `dest` on `pe`; returns the old
/// value's bits (0 when `fetch` is 0: not waited for).
#[no_mangle]
pub unsafe extern "C" fn pskifshmem_amo(
    call: *const c_char,
    ctx: usize,
    dest: *mut c_void,
    width: usize,
    op: c_int,
    a: u64,
    b: u64,
    fetch: c_int,
    pe: c_int,
) -> u64 {
    let (w, pe, addr) = match fast(ctx, pe, dest, width) {
        Some(f) => f,
        // SAFETY: see `name`.
        None => slow(unsafe { name(call) }, ctx, pe, dest, width),
    };
    let r = match amo_op(op, a, b) {
        Some(op) => w.amo(pe, addr, width, op, fetch != 0 || matches!(op, Amo::Fetch)),
        None => Err(Error::BadArgument(format!("atomic operation code {op}"))),
    };
    // SAFETY: see `name`.
    r.unwrap_or_else(|e| fatal(unsafe { name(call) }, &e))
}

/// Signal operations ([`SignalOp::from_code`]): after the data, the signal word.
fn signal(call: &str, ctx: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int) {
    let pe = ctx_pe(call, ctx, pe);
    let a = sym(call, sig_addr.cast(), 8);
    let op = SignalOp::from_code(sig_op).unwrap_or_else(|| {
        fatal(
            call,
            &Error::BadArgument(format!("signal operation {sig_op}")),
        )
    });
    ok(call, w(call).signal(pe, a, signal, op));
}

/// `put_signal` (and `_nbi`): the data, then the signal, delivered after the data.
#[no_mangle]
pub unsafe extern "C" fn pskifshmem_put_signal(
    call: *const c_char,
    ctx: usize,
    dest: *mut c_void,
    src: *const c_void,
    bytes: usize,
    sig_addr: *mut u64,
    sigval: u64,
    sig_op: c_int,
    pe: c_int,
) {
    // SAFETY: forwards the caller's contract.
    unsafe { skifshmem_put(call, ctx, dest, src, bytes, pe) };
    // SAFETY: see `name`.
    signal(unsafe { name(call) }, ctx, sig_addr, sigval, sig_op, pe);
}

#[no_mangle]
pub unsafe extern "C" fn pshmem_putmem_signal(
    dest: *mut c_void,
    src: *const c_void,
    bytes: usize,
    sig_addr: *mut u64,
    sigval: u64,
    sig_op: c_int,
    pe: c_int,
) {
    // SAFETY: forwards the caller's contract.
    unsafe {
        skifshmem_put_signal(
            c"shmem_putmem_signal".as_ptr(),
            1,
            dest,
            src,
            bytes,
            sig_addr,
            sigval,
            sig_op,
            pe,
        )
    }
}
#[no_mangle]
pub unsafe extern "C" fn pshmem_putmem_signal_nbi(
    dest: *mut c_void,
    src: *const c_void,
    bytes: usize,
    sig_addr: *mut u64,
    sigval: u64,
    sig_op: c_int,
    pe: c_int,
) {
    // SAFETY: forwards the caller's contract.
    unsafe {
        skifshmem_put_signal(
            c"shmem_putmem_signal_nbi".as_ptr(),
            1,
            dest,
            src,
            bytes,
            sig_addr,
            sigval,
            sig_op,
            pe,
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn pshmem_signal_fetch(sig_addr: *const u64) -> u64 {
    let call = "shmem_signal_fetch";
    sym(call, sig_addr.cast(), 8);
    let w = w(call);
    // Programs spin on it: on the message path the signal arrives only in a poll.
    if w.path() != crate::Path::Direct {
        ok(call, w.poll());
    }
    w.load_local(sig_addr as usize, 8)
}

/// Extension (`shmemx.h`): which access path the job uses: 1 direct, 2 transfers to the
/// PEs not mapped, 0 messages.
#[no_mangle]
pub extern "C" fn pshmemx_direct_access() -> c_int {
    match w("shmemx_direct_access").path() {
        crate::Path::Direct => 1,
        crate::Path::Transfers => 2,
        crate::Path::Messages => 0,
    }
}

/// The untyped put and get under both names (the profiling name too): the default
/// context's fast path inlined into each.
macro_rules! mem {
    ($($f:ident $pf:ident $k:ident($($ctx:literal)?);)*) => {$(
        mem!(@one $f $k($($ctx)?));
        mem!(@one $pf $k($($ctx)?));
    )*};
    (@one $f:ident $k:ident($($ctx:literal)?)) => {
        #[no_mangle]
        pub unsafe extern "C" fn $f(dest: *mut c_void, src: *const c_void, n: usize, pe: c_int) {
            let call = concat!(stringify!($f), "\0").as_ptr().cast();
            // SAFETY: forwards the caller's contract.
            unsafe { $k(call, $($ctx,)? dest, src, n, pe) }
        }
    };
}
mem! {
    shmem_putmem pshmem_putmem put_default();
    shmem_putmem_nbi pshmem_putmem_nbi put_default();
    shmem_getmem pshmem_getmem get_entry(1);
    shmem_getmem_nbi pshmem_getmem_nbi get_entry(1);
}

crate::capi::profiled! {
    skifshmem_iput => pskifshmem_iput(call: *const c_char, ctx: usize, dest: *mut c_void, src: *const c_void, dst: isize, sst: isize, nelems: usize, size: usize, pe: c_int);
    skifshmem_iget => pskifshmem_iget(call: *const c_char, ctx: usize, dest: *mut c_void, src: *const c_void, dst: isize, sst: isize, nelems: usize, size: usize, pe: c_int);
    skifshmem_amo => pskifshmem_amo(call: *const c_char, ctx: usize, dest: *mut c_void, width: usize, op: c_int, a: u64, b: u64, fetch: c_int, pe: c_int) -> u64;
    skifshmem_put_signal => pskifshmem_put_signal(call: *const c_char, ctx: usize, dest: *mut c_void, src: *const c_void, bytes: usize, sig_addr: *mut u64, sigval: u64, sig_op: c_int, pe: c_int);
    shmem_putmem_signal => pshmem_putmem_signal(dest: *mut c_void, src: *const c_void, bytes: usize, sig_addr: *mut u64, sigval: u64, sig_op: c_int, pe: c_int);
    shmem_putmem_signal_nbi => pshmem_putmem_signal_nbi(dest: *mut c_void, src: *const c_void, bytes: usize, sig_addr: *mut u64, sigval: u64, sig_op: c_int, pe: c_int);
    shmem_signal_fetch => pshmem_signal_fetch(sig_addr: *const u64) -> u64;
    shmemx_direct_access => pshmemx_direct_access() -> c_int;
}
