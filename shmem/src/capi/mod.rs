//! The C ABI (`include/shmem.h`, library `libskifshmem`). Untyped and setup calls are
//! exported functions here; the typed families (`shmem_int_put`, `shmem_long_atomic_fetch_add`,
//! `shmem_double_sum_reduce`, …) are `static inline` wrappers in the generated header that
//! call the `skifshmem_*` entry points below with the element size, type code and their own
//! name (`__func__`, used in error messages). `shmem/gen/gen_header.py` writes the header.
//!
//! Errors follow the OpenSHMEM convention: `skifshmem: <call>: <error>` on stderr, exit
//! status 1 (see the crate docs). Calls before `shmem_init` or after `shmem_finalize` fail
//! the same way. A call racing `shmem_finalize` on another thread is undefined, as in the
//! standard.
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in shmem.h and the OpenSHMEM standard

use std::ffi::{c_char, c_int, c_long, c_void, CStr};
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use skifch::rma::Amo;
use skifch_drivers::{DefaultJob, DefaultPort};

use crate::coll::{Num, ReduceOp, Team};
use crate::world::{parse_size, Options, SymAddr, World, DEFAULT_HEAP};
use crate::{fatal, Error};

type W = World<DefaultPort>;

struct State {
    world: Arc<W>,
    _job: DefaultJob,
    /// Teams by handle − 1 (handle 1 is the world); `None` once destroyed.
    teams: Mutex<Vec<Option<Team>>>,
    /// Live contexts (handle 1 is the default context).
    ctxs: Mutex<Vec<bool>>,
    thread_level: c_int,
}

static STATE: AtomicPtr<State> = AtomicPtr::new(std::ptr::null_mut());
static INIT_LOCK: Mutex<()> = Mutex::new(());
static INITS: AtomicU32 = AtomicU32::new(0);

/// The library state, or a fatal error naming `call`.
fn st(call: &str) -> &'static State {
    let p = STATE.load(Ordering::Acquire);
    if p.is_null() {
        fatal(call, &"called before shmem_init (or after shmem_finalize)");
    }
    // SAFETY: set by init from a leaked Box and only freed by finalize, after which no call
    // may be made (OpenSHMEM 1.5 §9.1.3).
    unsafe { &*p }
}

fn w(call: &str) -> &'static W {
    &st(call).world
}

fn ok<T>(call: &str, r: Result<T, Error>) -> T {
    r.unwrap_or_else(|e| fatal(call, &e))
}

/// The name passed by the header's wrappers.
unsafe fn name<'a>(call: *const c_char) -> &'a str {
    if call.is_null() {
        return "shmem";
    }
    // SAFETY: the header passes `__func__`, a NUL-terminated static string.
    unsafe { CStr::from_ptr(call) }.to_str().unwrap_or("shmem")
}

fn pe_u32(call: &str, pe: c_int) -> u32 {
    let n = w(call).n_pes();
    if pe < 0 || pe as u32 >= n {
        fatal(call, &Error::BadPe { pe: pe.into(), n });
    }
    pe as u32
}

/// The symmetric address of `len` bytes at local address `p`, or a fatal error.
fn sym(call: &str, p: *const c_void, len: usize) -> SymAddr {
    let w = w(call);
    w.sym(p as usize, len.max(1)).unwrap_or_else(|| {
        fatal(
            call,
            &Error::NotSymmetric(format!(
                "{len} bytes at {p:p} are not inside the symmetric heap or the program's global data"
            )),
        )
    })
}

fn do_init(call: &str, requested: c_int) -> c_int {
    let _g = INIT_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if !STATE.load(Ordering::Acquire).is_null() {
        INITS.fetch_add(1, Ordering::Relaxed);
        return 0;
    }
    let job = ok(call, skifch_drivers::init().map_err(Error::from));
    let heap_size = match std::env::var("SHMEM_SYMMETRIC_SIZE")
        .or_else(|_| std::env::var("SMA_SYMMETRIC_SIZE"))
    {
        Ok(s) => parse_size(&s).unwrap_or_else(|| {
            fatal(
                call,
                &format!("SHMEM_SYMMETRIC_SIZE={s:?} is not a size (e.g. 512M, 2G)"),
            )
        }),
        Err(_) => DEFAULT_HEAP,
    };
    // The driver says whether it offers remote memory access (skifch::rma); a driver
    // without it (the FPGA adapter today) gets the message path. SKIFSHMEM_RMA=off forces it.
    let rma_off = std::env::var("SKIFSHMEM_RMA").is_ok_and(|v| v == "off" || v == "0");
    let rma = if rma_off { None } else { job.rma() };
    let globals = skifch_drivers::shm_rma::data_segment();
    let progress_thread =
        std::env::var("SKIFSHMEM_PROGRESS_THREAD").is_ok_and(|v| v == "1" || v == "on");
    let world = ok(
        call,
        World::new(
            &job,
            Options {
                rma,
                heap_size,
                globals,
                progress_thread,
            },
        ),
    );
    let state = Box::new(State {
        world,
        _job: job,
        teams: Mutex::new(vec![None]),
        ctxs: Mutex::new(vec![true]),
        thread_level: requested.clamp(0, 3),
    });
    STATE.store(Box::into_raw(state), Ordering::Release);
    INITS.store(1, Ordering::Relaxed);
    // SAFETY: registers a plain extern "C" function.
    unsafe { libc::atexit(at_exit) };
    0
}

extern "C" fn at_exit() {
    // A program that returns from main without shmem_finalize still leaves the job cleanly.
    if !STATE.load(Ordering::Acquire).is_null() && !crate::FAILING.load(Ordering::SeqCst) {
        shmem_finalize();
    }
}

#[no_mangle]
pub extern "C" fn shmem_init() {
    do_init("shmem_init", 3);
}

#[no_mangle]
pub unsafe extern "C" fn shmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int {
    let r = do_init("shmem_init_thread", requested);
    if !provided.is_null() {
        // SAFETY: the caller passes a valid int pointer (or NULL).
        unsafe { *provided = 3 };
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn shmem_query_thread(provided: *mut c_int) {
    let s = st("shmem_query_thread");
    if !provided.is_null() {
        // SAFETY: the caller passes a valid int pointer.
        unsafe { *provided = s.thread_level.max(3) };
    }
}

#[no_mangle]
pub extern "C" fn start_pes(_npes: c_int) {
    do_init("start_pes", 3);
}

#[no_mangle]
pub extern "C" fn shmem_finalize() {
    let _g = INIT_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let p = STATE.load(Ordering::Acquire);
    if p.is_null() {
        return;
    }
    // SAFETY: non-null means init stored a leaked Box; it is dropped only here.
    let s = unsafe { &*p };
    ok("shmem_finalize", s.world.finalize());
    STATE.store(std::ptr::null_mut(), Ordering::Release);
    // SAFETY: the pointer came from Box::into_raw and is no longer reachable from STATE.
    drop(unsafe { Box::from_raw(p) });
}

#[no_mangle]
pub extern "C" fn shmem_global_exit(status: c_int) {
    let _ = std::io::Write::flush(&mut std::io::stdout());
    // The launcher stops the other PEs when this one exits non-zero; with status 0 it
    // would see a PE that did not finalize and stop them too.
    // SAFETY: _exit ends the process at once (no atexit: the job must not be finalized).
    unsafe { libc::_exit(if status == 0 { 1 } else { status }) }
}

#[no_mangle]
pub extern "C" fn shmem_my_pe() -> c_int {
    w("shmem_my_pe").my_pe() as c_int
}
#[no_mangle]
pub extern "C" fn shmem_n_pes() -> c_int {
    w("shmem_n_pes").n_pes() as c_int
}
#[no_mangle]
pub extern "C" fn _my_pe() -> c_int {
    w("_my_pe").my_pe() as c_int
}
#[no_mangle]
pub extern "C" fn _num_pes() -> c_int {
    w("_num_pes").n_pes() as c_int
}

#[no_mangle]
pub extern "C" fn shmem_pe_accessible(pe: c_int) -> c_int {
    let w = w("shmem_pe_accessible");
    c_int::from(pe >= 0 && (pe as u32) < w.n_pes())
}

#[no_mangle]
pub extern "C" fn shmem_addr_accessible(addr: *const c_void, pe: c_int) -> c_int {
    let w = w("shmem_addr_accessible");
    c_int::from(pe >= 0 && (pe as u32) < w.n_pes() && w.sym(addr as usize, 1).is_some())
}

#[no_mangle]
pub extern "C" fn shmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void {
    let w = w("shmem_ptr");
    if pe < 0 || pe as u32 >= w.n_pes() {
        return std::ptr::null_mut();
    }
    match w.sym(dest as usize, 1) {
        Some(a) => w
            .ptr(pe as u32, a)
            .map_or(std::ptr::null_mut(), |p| p as *mut c_void),
        None => std::ptr::null_mut(),
    }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
    // SAFETY: the caller passes valid int pointers (NULL is skipped).
    unsafe {
        if !major.is_null() {
            *major = 1;
        }
        if !minor.is_null() {
            *minor = 5;
        }
    }
}

/// `SHMEM_VENDOR_STRING` of shmem.h.
const VENDOR: &CStr = c"SkifCh OpenSHMEM (skifshmem)";

#[no_mangle]
pub unsafe extern "C" fn shmem_info_get_name(name: *mut c_char) {
    if name.is_null() {
        return;
    }
    let b = VENDOR.to_bytes_with_nul();
    // SAFETY: the standard requires a buffer of SHMEM_MAX_NAME_LEN (256) bytes.
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr().cast(), name, b.len()) };
}

// ---- symmetric heap (OpenSHMEM 1.5 §9.3) ----

fn alloc(call: &str, size: usize, align: usize) -> *mut c_void {
    let w = w(call);
    match w.malloc(size, align) {
        Ok(a) => w.local(a) as *mut c_void,
        Err(e @ Error::HeapExhausted { .. }) => {
            crate::say(&format!("skifshmem: {call}: {e}"));
            // The other PEs also failed (same allocator, same calls); keep them in step.
            ok(call, w.barrier_all());
            std::ptr::null_mut()
        }
        Err(e) => fatal(call, &e),
    }
}

#[no_mangle]
pub extern "C" fn shmem_malloc(size: usize) -> *mut c_void {
    alloc("shmem_malloc", size, 16)
}
#[no_mangle]
pub extern "C" fn shmem_malloc_with_hints(size: usize, _hints: c_long) -> *mut c_void {
    alloc("shmem_malloc_with_hints", size, 16)
}
#[no_mangle]
pub extern "C" fn shmalloc(size: usize) -> *mut c_void {
    alloc("shmalloc", size, 16)
}
#[no_mangle]
pub extern "C" fn shmem_align(align: usize, size: usize) -> *mut c_void {
    alloc("shmem_align", size, align)
}
#[no_mangle]
pub extern "C" fn shmemalign(align: usize, size: usize) -> *mut c_void {
    alloc("shmemalign", size, align)
}

#[no_mangle]
pub extern "C" fn shmem_calloc(count: usize, size: usize) -> *mut c_void {
    let call = "shmem_calloc";
    let Some(bytes) = count.checked_mul(size) else {
        crate::say(&format!(
            "skifshmem: {call}: {count} × {size} bytes overflows"
        ));
        return std::ptr::null_mut();
    };
    let p = alloc(call, bytes, 16);
    if !p.is_null() {
        let w = w(call);
        ok(call, w.write_local(sym(call, p, bytes), &vec![0u8; bytes]));
        ok(call, w.barrier_all());
    }
    p
}

fn free(call: &str, p: *mut c_void) {
    let w = w(call);
    if p.is_null() {
        ok(call, w.barrier_all());
        return;
    }
    let a = sym(call, p, 1);
    ok(call, w.free(a));
}

#[no_mangle]
pub extern "C" fn shmem_free(p: *mut c_void) {
    free("shmem_free", p)
}
#[no_mangle]
pub extern "C" fn shfree(p: *mut c_void) {
    free("shfree", p)
}

fn realloc(call: &str, p: *mut c_void, size: usize) -> *mut c_void {
    if p.is_null() {
        return alloc(call, size, 16);
    }
    let w = w(call);
    let old = sym(call, p, 1);
    let Some(old_len) = w.block_size(old) else {
        fatal(
            call,
            &Error::BadArgument(format!("{p:p} is not a block of the symmetric heap")),
        );
    };
    let q = alloc(call, size, 16);
    if q.is_null() {
        return q;
    }
    let mut b = vec![0u8; old_len.min(size)];
    ok(call, w.read_local(old, &mut b));
    ok(call, w.write_local(sym(call, q, b.len()), &b));
    ok(call, w.free(old));
    q
}

#[no_mangle]
pub extern "C" fn shmem_realloc(p: *mut c_void, size: usize) -> *mut c_void {
    realloc("shmem_realloc", p, size)
}
#[no_mangle]
pub extern "C" fn shrealloc(p: *mut c_void, size: usize) -> *mut c_void {
    realloc("shrealloc", p, size)
}

// ---- RMA (§9.5); ctx arguments (§9.4) only select a live context ----

fn check_ctx(call: &str, ctx: usize) {
    let s = st(call);
    let live = ctx >= 1
        && s.ctxs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(ctx - 1)
            == Some(&true);
    if !live {
        fatal(call, &"invalid or destroyed shmem_ctx_t");
    }
}

/// `skifshmem_put(call, ctx, dest, src, bytes, pe)`: every blocking and `_nbi` put.
#[no_mangle]
pub unsafe extern "C" fn skifshmem_put(
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
/// the symmetric range `[src, src + len)` is mapped here and was copied to `dest`.
/// False: take the checked path.
///
/// # Safety
/// `dest..dest + len` is writable.
#[inline(always)]
unsafe fn get_direct(ctx: usize, pe: c_int, dest: *mut c_void, src: *const c_void, len: usize) -> bool {
    let st = STATE.load(Ordering::Acquire);
    if st.is_null() || ctx != 1 || pe < 0 {
        return false;
    }
    // SAFETY: as in `st`.
    let w = unsafe { &(*st).world };
    match w.seg_of(src as usize, len) {
        // SAFETY: the caller's contract.
        Some((seg, off)) => unsafe { w.window(seg).get_raw(pe as u32, off, dest.cast(), len) },
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
    if ctx != 1 {
        check_ctx(call, ctx);
    }
    let pe = pe_u32(call, pe);
    (w(call), pe, sym(call, p, len))
}

/// Every blocking and `_nbi` get (the `_nbi` forms complete at return too).
#[no_mangle]
pub unsafe extern "C" fn skifshmem_get(
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
pub unsafe extern "C" fn skifshmem_iput(
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
pub unsafe extern "C" fn skifshmem_iget(
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
    if ctx != 1 {
        check_ctx(call, ctx);
    }
    let pe = pe_u32(call, pe);
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

macro_rules! sized {
    ($($put:ident $get:ident $iput:ident $iget:ident $pnbi:ident $gnbi:ident $bytes:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $put(dest: *mut c_void, src: *const c_void, n: usize, pe: c_int) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_put(concat!(stringify!($put), "\0").as_ptr().cast(), 1, dest, src, n * $bytes, pe) }
        }
        #[no_mangle]
        pub unsafe extern "C" fn $pnbi(dest: *mut c_void, src: *const c_void, n: usize, pe: c_int) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_put(concat!(stringify!($pnbi), "\0").as_ptr().cast(), 1, dest, src, n * $bytes, pe) }
        }
        #[no_mangle]
        pub unsafe extern "C" fn $get(dest: *mut c_void, src: *const c_void, n: usize, pe: c_int) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_get(concat!(stringify!($get), "\0").as_ptr().cast(), 1, dest, src, n * $bytes, pe) }
        }
        #[no_mangle]
        pub unsafe extern "C" fn $gnbi(dest: *mut c_void, src: *const c_void, n: usize, pe: c_int) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_get(concat!(stringify!($gnbi), "\0").as_ptr().cast(), 1, dest, src, n * $bytes, pe) }
        }
        #[no_mangle]
        pub unsafe extern "C" fn $iput(dest: *mut c_void, src: *const c_void, dst: isize, sst: isize, n: usize, pe: c_int) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_iput(concat!(stringify!($iput), "\0").as_ptr().cast(), 1, dest, src, dst, sst, n, $bytes, pe) }
        }
        #[no_mangle]
        pub unsafe extern "C" fn $iget(dest: *mut c_void, src: *const c_void, dst: isize, sst: isize, n: usize, pe: c_int) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_iget(concat!(stringify!($iget), "\0").as_ptr().cast(), 1, dest, src, dst, sst, n, $bytes, pe) }
        }
    )*};
}
sized! {
    shmem_put8 shmem_get8 shmem_iput8 shmem_iget8 shmem_put8_nbi shmem_get8_nbi 1;
    shmem_put16 shmem_get16 shmem_iput16 shmem_iget16 shmem_put16_nbi shmem_get16_nbi 2;
    shmem_put32 shmem_get32 shmem_iput32 shmem_iget32 shmem_put32_nbi shmem_get32_nbi 4;
    shmem_put64 shmem_get64 shmem_iput64 shmem_iget64 shmem_put64_nbi shmem_get64_nbi 8;
    shmem_put128 shmem_get128 shmem_iput128 shmem_iget128 shmem_put128_nbi shmem_get128_nbi 16;
}

/// Atomic operation codes of `skifshmem_amo` (the `op` argument the inline wrappers of
/// shmem.h pass): [`Amo::decode`]'s numbering.
fn amo_op(code: c_int, a: u64, b: u64) -> Option<Amo> {
    Amo::decode(u8::try_from(code).ok()?, a, b)
}

/// Every atomic: `op` on the `width`-byte object at `dest` on `pe`; returns the old
/// value's bits (0 when `fetch` is 0: not waited for).
#[no_mangle]
pub unsafe extern "C" fn skifshmem_amo(
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

/// Signal operations: `SHMEM_SIGNAL_SET` 0, `SHMEM_SIGNAL_ADD` 1.
fn signal(call: &str, ctx: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int) {
    if ctx != 1 {
        check_ctx(call, ctx);
    }
    let pe = pe_u32(call, pe);
    let a = sym(call, sig_addr.cast(), 8);
    let op = match sig_op {
        0 => Amo::Set(signal),
        1 => Amo::Add(signal),
        o => fatal(call, &Error::BadArgument(format!("signal operation {o}"))),
    };
    let w = w(call);
    w.fence();
    ok(call, w.amo(pe, a, 8, op, false));
}

/// `put_signal` (and `_nbi`): the data, then the signal, delivered after the data.
#[no_mangle]
pub unsafe extern "C" fn skifshmem_put_signal(
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
pub unsafe extern "C" fn shmem_putmem_signal(
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
pub unsafe extern "C" fn shmem_putmem_signal_nbi(
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
pub unsafe extern "C" fn shmem_signal_fetch(sig_addr: *const u64) -> u64 {
    let call = "shmem_signal_fetch";
    sym(call, sig_addr.cast(), 8);
    w(call).load_local(sig_addr as usize, 8)
}

// ---- ordering and point-to-point synchronization (§9.8, §9.11) ----

#[no_mangle]
pub extern "C" fn shmem_fence() {
    w("shmem_fence").fence();
}
#[no_mangle]
pub extern "C" fn shmem_quiet() {
    ok("shmem_quiet", w("shmem_quiet").quiet());
}
#[no_mangle]
pub extern "C" fn shmem_ctx_fence(ctx: usize) {
    check_ctx("shmem_ctx_fence", ctx);
    shmem_fence();
}
#[no_mangle]
pub extern "C" fn shmem_ctx_quiet(ctx: usize) {
    check_ctx("shmem_ctx_quiet", ctx);
    shmem_quiet();
}

/// Comparison codes of shmem.h ([`crate::Cmp::from_code`]).
fn cmp(call: &str, c: c_int, v: u64, val: u64, width: usize, signed: bool) -> bool {
    match crate::Cmp::from_code(c) {
        Some(c) => c.holds(v, val, width, signed),
        None => fatal(call, &Error::BadArgument(format!("comparison code {c}"))),
    }
}

fn local_var(call: &str, ivar: *const c_void, width: usize) -> usize {
    if ivar.is_null() || !(ivar as usize).is_multiple_of(width) {
        fatal(
            call,
            &Error::BadArgument(format!("{ivar:p} is not an aligned {width}-byte variable")),
        );
    }
    ivar as usize
}

/// `wait_until` on one variable: returns when `*ivar cmp value`.
#[no_mangle]
pub unsafe extern "C" fn skifshmem_wait(
    call: *const c_char,
    ivar: *const c_void,
    width: usize,
    signed: c_int,
    c: c_int,
    value: u64,
) -> u64 {
    // SAFETY: see `name`.
    let call = unsafe { name(call) };
    let p = local_var(call, ivar, width);
    cmp(call, c, 0, 0, width, false); // validates the code before waiting
    ok(
        call,
        w(call).wait_local(p, width, |v| cmp(call, c, v, value, width, signed != 0)),
    )
}

/// `test` on one variable: 1 if `*ivar cmp value` now.
#[no_mangle]
pub unsafe extern "C" fn skifshmem_test(
    call: *const c_char,
    ivar: *const c_void,
    width: usize,
    signed: c_int,
    c: c_int,
    value: u64,
) -> c_int {
    // SAFETY: see `name`.
    let call = unsafe { name(call) };
    let p = local_var(call, ivar, width);
    let w = w(call);
    ok(call, w.poll());
    c_int::from(cmp(
        call,
        c,
        w.load_local(p, width),
        value,
        width,
        signed != 0,
    ))
}

/// The `_all/_any/_some` (and `_vector`) waits and tests over `nelems` variables.
/// `mode`: 0 all, 1 any, 2 some. `values` NULL: compare with `value`; else with
/// `values[i]` (elements of `width` bytes). `wait` 0: test once. Returns: all → 1 if
/// satisfied; any → the index satisfied (`SIZE_MAX` if none); some → how many indices
/// were written to `indices`.
#[no_mangle]
pub unsafe extern "C" fn skifshmem_wait_set(
    call: *const c_char,
    ivars: *const c_void,
    nelems: usize,
    width: usize,
    signed: c_int,
    status: *const c_int,
    c: c_int,
    values: *const c_void,
    value: u64,
    mode: c_int,
    indices: *mut usize,
    wait: c_int,
) -> usize {
    // SAFETY: see `name`.
    let call = unsafe { name(call) };
    let w = w(call);
    cmp(call, c, 0, 0, width, false);
    let active: Vec<usize> = (0..nelems)
        // SAFETY: `status` is NULL or holds `nelems` ints (OpenSHMEM 1.5 §9.11).
        .filter(|&i| status.is_null() || unsafe { *status.add(i) } == 0)
        .collect();
    let want = |i: usize| -> u64 {
        if values.is_null() {
            value
        } else {
            // SAFETY: `values` holds `nelems` elements of `width` bytes.
            unsafe {
                let p = (values as usize + i * width) as *const u8;
                let mut b = [0u8; 8];
                std::ptr::copy_nonoverlapping(p, b.as_mut_ptr(), width);
                u64::from_le_bytes(b)
            }
        }
    };
    let base = local_var(call, ivars, width);
    let sat = |i: usize| {
        cmp(
            call,
            c,
            w.load_local(base + i * width, width),
            want(i),
            width,
            signed != 0,
        )
    };
    let mut spins = 0u32;
    loop {
        match mode {
            0 => {
                if active.iter().all(|&i| sat(i)) {
                    return 1;
                }
            }
            1 => {
                if let Some(&i) = active.iter().find(|&&i| sat(i)) {
                    return i;
                }
                if active.is_empty() {
                    return usize::MAX;
                }
            }
            _ => {
                let hits: Vec<usize> = active.iter().copied().filter(|&i| sat(i)).collect();
                if !hits.is_empty() || active.is_empty() {
                    for (k, &i) in hits.iter().enumerate() {
                        // SAFETY: `indices` holds `nelems` size_t (the standard's contract).
                        unsafe { *indices.add(k) = i };
                    }
                    return hits.len();
                }
            }
        }
        if wait == 0 {
            return match mode {
                0 => 0,
                1 => usize::MAX,
                _ => 0,
            };
        }
        ok(call, w.poll());
        spins += 1;
        if spins > 100 {
            std::thread::yield_now();
        }
    }
}

// ---- teams and contexts (§9.4, §9.5) ----

fn team(call: &str, h: usize) -> Team {
    let s = st(call);
    match h {
        1 | 2 => Team::world(s.world.n_pes()),
        h => s
            .teams
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(h.wrapping_sub(3))
            .cloned()
            .flatten()
            .unwrap_or_else(|| fatal(call, &"invalid or destroyed shmem_team_t")),
    }
}

#[no_mangle]
pub extern "C" fn shmem_team_my_pe(t: usize) -> c_int {
    if t == 0 {
        return -1;
    }
    let me = w("shmem_team_my_pe").my_pe();
    team("shmem_team_my_pe", t)
        .index_of(me)
        .map_or(-1, |i| i as c_int)
}

#[no_mangle]
pub extern "C" fn shmem_team_n_pes(t: usize) -> c_int {
    if t == 0 {
        return -1;
    }
    team("shmem_team_n_pes", t).size() as c_int
}

#[no_mangle]
pub extern "C" fn shmem_team_translate_pe(src: usize, pe: c_int, dst: usize) -> c_int {
    let call = "shmem_team_translate_pe";
    if src == 0 || dst == 0 || pe < 0 {
        return -1;
    }
    let (a, b) = (team(call, src), team(call, dst));
    a.members
        .get(pe as usize)
        .and_then(|&g| b.index_of(g))
        .map_or(-1, |i| i as c_int)
}

/// `shmem_team_split_strided(parent, start, stride, size, config, config_mask, new_team)`:
/// collective over the parent; members of the new team get a handle, others
/// `SHMEM_TEAM_INVALID`. Returns 0, or non-zero for a bad triplet.
#[no_mangle]
pub unsafe extern "C" fn shmem_team_split_strided(
    parent: usize,
    start: c_int,
    stride: c_int,
    size: c_int,
    _config: *const c_void,
    _mask: c_long,
    new_team: *mut usize,
) -> c_int {
    let call = "shmem_team_split_strided";
    let s = st(call);
    let p = team(call, parent);
    let w = &s.world;
    ok(call, w.barrier(&p.members));
    let sub = Team::strided(p.size() as u32, start.into(), stride.into(), size.into());
    let Ok(sub) = sub else {
        if !new_team.is_null() {
            // SAFETY: the caller passes a valid shmem_team_t pointer.
            unsafe { *new_team = 0 };
        }
        return -1;
    };
    let members: Vec<u32> = sub.members.iter().map(|&i| p.members[i as usize]).collect();
    let t = Team { members };
    let h = if t.index_of(w.my_pe()).is_some() {
        let mut teams = s.teams.lock().unwrap_or_else(|p| p.into_inner());
        teams.push(Some(t));
        teams.len() + 2
    } else {
        0
    };
    if !new_team.is_null() {
        // SAFETY: as above.
        unsafe { *new_team = h };
    }
    0
}

#[no_mangle]
pub extern "C" fn shmem_team_destroy(t: usize) {
    let call = "shmem_team_destroy";
    if t <= 2 {
        if t != 0 {
            fatal(call, &"the predefined teams cannot be destroyed");
        }
        return;
    }
    team(call, t);
    if let Some(slot) = st(call)
        .teams
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_mut(t - 3)
    {
        *slot = None;
    }
}

#[no_mangle]
pub extern "C" fn shmem_team_sync(t: usize) -> c_int {
    let call = "shmem_team_sync";
    if t == 0 {
        return -1;
    }
    let tm = team(call, t);
    ok(call, w(call).barrier(&tm.members));
    0
}

#[no_mangle]
pub unsafe extern "C" fn shmem_team_get_config(
    t: usize,
    _mask: c_long,
    config: *mut c_int,
) -> c_int {
    if t == 0 {
        return -1;
    }
    team("shmem_team_get_config", t);
    if !config.is_null() {
        // SAFETY: shmem_team_config_t starts with `int num_contexts`.
        unsafe { *config = 0 };
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn shmem_team_split_2d(
    _parent: usize,
    _xrange: c_int,
    _xc: *const c_void,
    _xm: c_long,
    _xt: *mut usize,
    _yc: *const c_void,
    _ym: c_long,
    _yt: *mut usize,
) -> c_int {
    fatal(
        "shmem_team_split_2d",
        &Error::NotImplemented("shmem_team_split_2d"),
    )
}

fn ctx_create(call: &str) -> usize {
    let s = st(call);
    let mut c = s.ctxs.lock().unwrap_or_else(|p| p.into_inner());
    c.push(true);
    c.len()
}

/// Contexts share the PE's single ordering domain: operations on any context complete
/// at the next quiet of any context (a valid implementation of §9.4's rules).
#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_create(_options: c_long, ctx: *mut usize) -> c_int {
    let h = ctx_create("shmem_ctx_create");
    if !ctx.is_null() {
        // SAFETY: the caller passes a valid shmem_ctx_t pointer.
        unsafe { *ctx = h };
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn shmem_team_create_ctx(
    t: usize,
    _options: c_long,
    ctx: *mut usize,
) -> c_int {
    if t == 0 {
        return -1;
    }
    team("shmem_team_create_ctx", t);
    // SAFETY: forwards the caller's pointer.
    unsafe { shmem_ctx_create(0, ctx) }
}

#[no_mangle]
pub extern "C" fn shmem_ctx_destroy(ctx: usize) {
    let call = "shmem_ctx_destroy";
    if ctx == 1 {
        fatal(call, &"SHMEM_CTX_DEFAULT cannot be destroyed");
    }
    check_ctx(call, ctx);
    shmem_quiet();
    if let Some(c) = st(call)
        .ctxs
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_mut(ctx - 1)
    {
        *c = false;
    }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_get_team(ctx: usize, t: *mut usize) -> c_int {
    check_ctx("shmem_ctx_get_team", ctx);
    if !t.is_null() {
        // SAFETY: the caller passes a valid shmem_team_t pointer.
        unsafe { *t = 1 };
    }
    0
}

// ---- collectives (§9.9, §9.10) ----

#[no_mangle]
pub extern "C" fn shmem_barrier_all() {
    let call = "shmem_barrier_all";
    ok(call, w(call).barrier_all());
}
#[no_mangle]
pub extern "C" fn shmem_sync_all() {
    let call = "shmem_sync_all";
    ok(call, w(call).barrier_all());
}

fn active(call: &str, start: c_int, log: c_int, size: c_int) -> Team {
    let n = w(call).n_pes();
    ok(call, Team::active_set(n, start, log, size))
}

#[no_mangle]
pub extern "C" fn shmem_barrier(start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
    let call = "shmem_barrier";
    let t = active(call, start, log, size);
    ok(call, w(call).barrier(&t.members));
}
#[no_mangle]
pub extern "C" fn shmem_sync(start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
    let call = "shmem_sync";
    let t = active(call, start, log, size);
    ok(call, w(call).barrier(&t.members));
}

/// Team (`t` ≠ 0) or active-set (`t` = 0, `start/log/size`) of a collective.
fn coll_team(call: &str, t: usize, start: c_int, log: c_int, size: c_int) -> Option<Team> {
    let tm = if t != 0 {
        team(call, t)
    } else {
        active(call, start, log, size)
    };
    tm.index_of(w(call).my_pe()).map(|_| tm)
}

/// Collective kinds of `skifshmem_coll`: 0 broadcast, 1 collect, 2 fcollect, 3 alltoall,
/// 4 alltoalls. `t` = 0 selects the legacy active set (then broadcast leaves the root's
/// `dest` alone, as the legacy calls do). Sizes are in bytes except for `alltoalls`
/// (strides and `nelems` in elements of `elem` bytes). Returns 0, or −1 for
/// `SHMEM_TEAM_INVALID`.
#[no_mangle]
pub unsafe extern "C" fn skifshmem_coll(
    call: *const c_char,
    kind: c_int,
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    bytes: usize,
    root: c_int,
    dst: isize,
    sst: isize,
    elem: usize,
    start: c_int,
    log: c_int,
    size: c_int,
) -> c_int {
    // SAFETY: see `name`.
    let call = unsafe { name(call) };
    let Some(tm) = coll_team(call, t, start, log, size) else {
        if t != 0 {
            return -1;
        }
        fatal(
            call,
            &Error::BadArgument("this PE is not in the active set".into()),
        );
    };
    let w = w(call);
    let n = tm.size();
    let r = match kind {
        0 => {
            if root < 0 || root as usize >= n {
                fatal(
                    call,
                    &Error::BadArgument(format!("root {root} of a {n}-PE team")),
                );
            }
            w.broadcast(
                &tm,
                sym(call, dest, bytes),
                sym(call, src, bytes),
                bytes,
                root as usize,
                t != 0,
            )
        }
        1 => w.collect(&tm, sym(call, dest, 1), sym(call, src, bytes), bytes),
        2 => w.collect(
            &tm,
            sym(call, dest, bytes * n),
            sym(call, src, bytes),
            bytes,
        ),
        3 => w.alltoall(
            &tm,
            sym(call, dest, bytes * n),
            sym(call, src, bytes * n),
            bytes,
        ),
        4 => {
            if dst < 1 || sst < 1 {
                fatal(
                    call,
                    &Error::BadArgument(format!("strides {dst} and {sst} must be ≥ 1")),
                );
            }
            let (d, s) = (dst as usize, sst as usize);
            let span = |st: usize| ((n * bytes).saturating_sub(1) * st + 1) * elem;
            w.alltoalls(
                &tm,
                sym(call, dest, span(d)),
                sym(call, src, span(s)),
                d,
                s,
                bytes,
                elem,
            )
        }
        k => fatal(call, &Error::BadArgument(format!("collective kind {k}"))),
    };
    ok(call, r);
    0
}

fn num(call: &str, code: c_int) -> Num {
    match code {
        1 | 2 | 4 | 8 => Num::I(code as usize),
        11 | 12 | 14 | 18 => Num::U(code as usize - 10),
        20 => Num::F32,
        21 => Num::F64,
        30 => Num::C32,
        31 => Num::C64,
        _ => fatal(
            call,
            &Error::NotImplemented("this reduction type (long double)"),
        ),
    }
}

fn rop(call: &str, code: c_int) -> ReduceOp {
    match code {
        0 => ReduceOp::And,
        1 => ReduceOp::Or,
        2 => ReduceOp::Xor,
        3 => ReduceOp::Min,
        4 => ReduceOp::Max,
        5 => ReduceOp::Sum,
        6 => ReduceOp::Prod,
        _ => fatal(
            call,
            &Error::BadArgument(format!("reduction operator {code}")),
        ),
    }
}

/// Reductions: team form (`t` ≠ 0) or legacy `_to_all` (`t` = 0 and the active set).
/// `ty`: shmem.h's `SKIF_T_*` codes; `op`: `SKIF_OP_*`. Returns 0, or −1 for an invalid team.
#[no_mangle]
pub unsafe extern "C" fn skifshmem_reduce(
    call: *const c_char,
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    nreduce: usize,
    ty: c_int,
    op: c_int,
    start: c_int,
    log: c_int,
    size: c_int,
) -> c_int {
    // SAFETY: see `name`.
    let call = unsafe { name(call) };
    let ty = num(call, ty);
    let op = rop(call, op);
    let Some(tm) = coll_team(call, t, start, log, size) else {
        if t != 0 {
            return -1;
        }
        fatal(
            call,
            &Error::BadArgument("this PE is not in the active set".into()),
        );
    };
    let bytes = nreduce * ty.size();
    let w = w(call);
    ok(
        call,
        w.reduce(
            &tm,
            sym(call, dest, bytes),
            sym(call, src, bytes),
            nreduce,
            ty,
            op,
        ),
    );
    0
}

#[no_mangle]
pub unsafe extern "C" fn shmem_broadcastmem(
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    n: usize,
    root: c_int,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe {
        skifshmem_coll(
            c"shmem_broadcastmem".as_ptr(),
            0,
            t,
            dest,
            src,
            n,
            root,
            0,
            0,
            1,
            0,
            0,
            0,
        )
    }
}
#[no_mangle]
pub unsafe extern "C" fn shmem_collectmem(
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    n: usize,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe {
        skifshmem_coll(
            c"shmem_collectmem".as_ptr(),
            1,
            t,
            dest,
            src,
            n,
            0,
            0,
            0,
            1,
            0,
            0,
            0,
        )
    }
}
#[no_mangle]
pub unsafe extern "C" fn shmem_fcollectmem(
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    n: usize,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe {
        skifshmem_coll(
            c"shmem_fcollectmem".as_ptr(),
            2,
            t,
            dest,
            src,
            n,
            0,
            0,
            0,
            1,
            0,
            0,
            0,
        )
    }
}
#[no_mangle]
pub unsafe extern "C" fn shmem_alltoallmem(
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    n: usize,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe {
        skifshmem_coll(
            c"shmem_alltoallmem".as_ptr(),
            3,
            t,
            dest,
            src,
            n,
            0,
            0,
            0,
            1,
            0,
            0,
            0,
        )
    }
}
#[no_mangle]
pub unsafe extern "C" fn shmem_alltoallsmem(
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    dst: isize,
    sst: isize,
    n: usize,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe {
        skifshmem_coll(
            c"shmem_alltoallsmem".as_ptr(),
            4,
            t,
            dest,
            src,
            n,
            0,
            dst,
            sst,
            1,
            0,
            0,
            0,
        )
    }
}

macro_rules! legacy {
    ($($bc:ident $col:ident $fcol:ident $a2a:ident $a2as:ident $b:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $bc(dest: *mut c_void, src: *const c_void, n: usize, root: c_int, start: c_int, log: c_int, size: c_int, _p: *mut c_long) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_coll(concat!(stringify!($bc), "\0").as_ptr().cast(), 0, 0, dest, src, n * $b, root, 0, 0, $b, start, log, size) };
        }
        #[no_mangle]
        pub unsafe extern "C" fn $col(dest: *mut c_void, src: *const c_void, n: usize, start: c_int, log: c_int, size: c_int, _p: *mut c_long) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_coll(concat!(stringify!($col), "\0").as_ptr().cast(), 1, 0, dest, src, n * $b, 0, 0, 0, $b, start, log, size) };
        }
        #[no_mangle]
        pub unsafe extern "C" fn $fcol(dest: *mut c_void, src: *const c_void, n: usize, start: c_int, log: c_int, size: c_int, _p: *mut c_long) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_coll(concat!(stringify!($fcol), "\0").as_ptr().cast(), 2, 0, dest, src, n * $b, 0, 0, 0, $b, start, log, size) };
        }
        #[no_mangle]
        pub unsafe extern "C" fn $a2a(dest: *mut c_void, src: *const c_void, n: usize, start: c_int, log: c_int, size: c_int, _p: *mut c_long) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_coll(concat!(stringify!($a2a), "\0").as_ptr().cast(), 3, 0, dest, src, n * $b, 0, 0, 0, $b, start, log, size) };
        }
        #[no_mangle]
        pub unsafe extern "C" fn $a2as(dest: *mut c_void, src: *const c_void, dst: isize, sst: isize, n: usize, start: c_int, log: c_int, size: c_int, _p: *mut c_long) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_coll(concat!(stringify!($a2as), "\0").as_ptr().cast(), 4, 0, dest, src, n, 0, dst, sst, $b, start, log, size) };
        }
    )*};
}
legacy! {
    shmem_broadcast32 shmem_collect32 shmem_fcollect32 shmem_alltoall32 shmem_alltoalls32 4;
    shmem_broadcast64 shmem_collect64 shmem_fcollect64 shmem_alltoall64 shmem_alltoalls64 8;
}

// ---- locks (§9.12): a test-and-set word in PE 0's copy of the lock ----

fn lock_word(call: &str, lock: *mut c_long) -> SymAddr {
    sym(call, lock.cast(), 8)
}

#[no_mangle]
pub extern "C" fn shmem_set_lock(lock: *mut c_long) {
    let call = "shmem_set_lock";
    let w = w(call);
    let a = lock_word(call, lock);
    let me = u64::from(w.my_pe()) + 1;
    let mut spins = 0u32;
    loop {
        let old = ok(
            call,
            w.amo(
                0,
                a,
                8,
                Amo::CompareSwap {
                    expected: 0,
                    new: me,
                },
                true,
            ),
        );
        if old == 0 {
            return;
        }
        if old == me {
            fatal(call, &"this PE already holds the lock");
        }
        ok(call, w.poll());
        spins += 1;
        if spins > 64 {
            std::thread::yield_now();
        }
    }
}

#[no_mangle]
pub extern "C" fn shmem_clear_lock(lock: *mut c_long) {
    let call = "shmem_clear_lock";
    let w = w(call);
    let a = lock_word(call, lock);
    ok(call, w.quiet());
    let me = u64::from(w.my_pe()) + 1;
    let old = ok(
        call,
        w.amo(
            0,
            a,
            8,
            Amo::CompareSwap {
                expected: me,
                new: 0,
            },
            true,
        ),
    );
    if old != me {
        fatal(call, &"clearing a lock this PE does not hold");
    }
}

#[no_mangle]
pub extern "C" fn shmem_test_lock(lock: *mut c_long) -> c_int {
    let call = "shmem_test_lock";
    let w = w(call);
    let a = lock_word(call, lock);
    let me = u64::from(w.my_pe()) + 1;
    let old = ok(
        call,
        w.amo(
            0,
            a,
            8,
            Amo::CompareSwap {
                expected: 0,
                new: me,
            },
            true,
        ),
    );
    c_int::from(old != 0)
}

// ---- deprecated cache management (no-ops in the standard since 1.3) ----

#[no_mangle]
pub extern "C" fn shmem_clear_cache_inv() {}
#[no_mangle]
pub extern "C" fn shmem_set_cache_inv() {}
#[no_mangle]
pub extern "C" fn shmem_udcflush() {}
#[no_mangle]
pub extern "C" fn shmem_clear_cache_line_inv(_p: *mut c_void) {}
#[no_mangle]
pub extern "C" fn shmem_set_cache_line_inv(_p: *mut c_void) {}
#[no_mangle]
pub extern "C" fn shmem_udcflush_line(_p: *mut c_void) {}

/// Extension (`shmemx.h`): which access path the job uses: 1 direct, 0 messages.
#[no_mangle]
pub extern "C" fn shmemx_direct_access() -> c_int {
    c_int::from(w("shmemx_direct_access").path() == crate::Path::Direct)
}

macro_rules! mem {
    ($($f:ident $k:ident($($ctx:literal)?);)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $f(dest: *mut c_void, src: *const c_void, n: usize, pe: c_int) {
            let call = concat!(stringify!($f), "\0").as_ptr().cast();
            // SAFETY: forwards the caller's contract.
            unsafe { $k(call, $($ctx,)? dest, src, n, pe) }
        }
    )*};
}
mem! {
    shmem_putmem put_default();
    shmem_putmem_nbi put_default();
    shmem_getmem skifshmem_get(1);
    shmem_getmem_nbi skifshmem_get(1);
}
