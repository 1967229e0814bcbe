//! The C ABI (`include/shmem.h`, library `libskifshmem`): translation only. Each call
//! turns C arguments into the Rust API's types ([`World`], [`crate::team`],
//! [`crate::ctx`], [`crate::wait`], [`crate::lock`], [`crate::signal`]), calls it, and
//! turns an error into the OpenSHMEM convention: `skifshmem: <call>: <error>` on stderr,
//! exit status 1 (see the crate docs). Calls before `shmem_init` or after
//! `shmem_finalize` fail the same way. A call racing `shmem_finalize` on another thread is
//! undefined, as in the standard.
//!
//! One file per chapter of OpenSHMEM 1.5: this one the library setup and query routines
//! (§9.1–9.2) and the state every call reads; [`heap`] §9.3; [`team`] teams and contexts
//! (§9.4–9.5); [`rma`] RMA, atomics and signals (§9.6–9.7); [`coll`] collectives
//! (§9.9–9.10); [`sync`] ordering, point-to-point synchronization and locks (§9.8,
//! §9.11–9.12).
//!
//! Untyped and setup calls are exported functions; the typed families (`shmem_int_put`,
//! `shmem_long_atomic_fetch_add`, `shmem_double_sum_reduce`, …) are `static inline`
//! wrappers in the generated header that call the `skifshmem_*` entry points with the
//! element size, type code and their own name (`__func__`, used in error messages).
//! `shmem/gen/gen_header.py` writes the header.
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in shmem.h and the OpenSHMEM standard

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use skifch_drivers::{DefaultJob, DefaultPort};

use crate::coll::Team;
use crate::ctx::Contexts;
use crate::team::Teams;
use crate::world::{parse_size, Options, SymAddr, World, DEFAULT_HEAP};
use crate::{fatal, Error};

/// The profiling interface (OpenSHMEM 1.5 §10.1, as MPI's `PMPI_`): every exported call
/// `X` is defined as `pX` (`pshmem_put8`, `pshmalloc`, `p_my_pe`, `pskifshmem_put`, …)
/// and `X` calls it, so a tool linked before `libskifshmem.so` may define `X` and reach
/// the library through `pX`. Here `X => pX(args) -> ret;` defines `X`. The hot entry
/// points (`shmem_putmem`/`getmem` and their `_nbi`, `skifshmem_put`/`get` behind the
/// typed calls, `shmem_putN`/`getN`) have their whole body inlined under both names
/// instead: no extra call on the put fast path. `include/pshmem.h` declares the `p` names
/// (and the typed `pshmem_TYPE_*` inline wrappers over `pskifshmem_*`).
macro_rules! profiled {
    ($($name:ident => $p:ident($($a:ident : $t:ty),*) $(-> $r:ty)?;)*) => {$(
        #[no_mangle]
        #[allow(unused_unsafe)] // some profiling names are safe functions
        pub unsafe extern "C" fn $name($($a: $t),*) $(-> $r)? {
            // SAFETY: the contract of the profiling name, which does the work.
            unsafe { $p($($a),*) }
        }
    )*};
}
pub(crate) use profiled;

mod coll;
mod heap;
mod rma;
mod sync;
mod team;

type W = World<DefaultPort>;

struct State {
    world: Arc<W>,
    /// The job (its control block carries `shmem_global_exit`'s status).
    _job: DefaultJob,
    /// Teams by handle (`shmem_team_t`).
    teams: Teams,
    /// Contexts by handle (`shmem_ctx_t`).
    ctxs: Contexts,
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

/// The symmetric address of `len` bytes at local address `p`, or a fatal error. Zero
/// bytes at any address (NULL too: test suites pass it with a zero count) are the empty
/// range at the heap's end, where every access of one byte or more fails.
fn sym(call: &str, p: *const c_void, len: usize) -> SymAddr {
    let w = w(call);
    w.sym(p as usize, len.max(1)).unwrap_or_else(|| {
        if len == 0 {
            return SymAddr {
                seg: crate::SEG_HEAP,
                off: w.segment(crate::SEG_HEAP).1,
            };
        }
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
    // A provider that reaches some PEs only by transfers (a job on several hosts) is used
    // when SKIFSHMEM_RMA=transfers asks, or by default where the target's hardware applies
    // them (RmaCaps::remote_progress): over the sockets providers the message path is
    // orders of magnitude faster (README, "Transfers path").
    let mode = std::env::var("SKIFSHMEM_RMA").unwrap_or_default();
    let rma_off = mode == "off" || mode == "0";
    let rma = if rma_off { None } else { job.rma() };
    let rma = rma.filter(|r| {
        let c = r.caps();
        c.load_store || c.transfers_chosen(Some(mode.as_str()).filter(|m| !m.is_empty()))
    });
    let globals = skifch_drivers::shm_rma::data_segment();
    let progress_thread =
        std::env::var("SKIFSHMEM_PROGRESS_THREAD").is_ok_and(|v| v == "1" || v == "on");
    let world = World::new(
        &job,
        Options {
            rma,
            heap_size,
            globals,
            progress_thread,
        },
    )
    .unwrap_or_else(|e| match job.driver().exit_request() {
        // A PE that finished init first called shmem_global_exit: end with its status.
        Some(status) => {
            job.driver().leave(status);
            std::process::exit(status)
        }
        None => fatal(call, &e),
    });
    let thread_level = requested.clamp(0, max_thread_level(&world));
    let state = Box::new(State {
        teams: Teams::new(world.n_pes()),
        world,
        _job: job,
        ctxs: Contexts::default(),
        thread_level,
    });
    STATE.store(Box::into_raw(state), Ordering::Release);
    INITS.store(1, Ordering::Relaxed);
    // SAFETY: registers a plain extern "C" function.
    unsafe { libc::atexit(at_exit) };
    0
}

/// `SHMEM_THREAD_*` values (shmem.h).
const THREAD_SERIALIZED: c_int = 2;
const THREAD_MULTIPLE: c_int = 3;

/// The highest thread level this PE serves honestly (OpenSHMEM 1.5 §9.2). Concurrent
/// calls are safe on both paths, but §9.2 also promises that a thread blocked in a call
/// does not hold up the other threads' calls. On the direct path only collectives and
/// allocation take the endpoint (a waiting thread's poll skips it when busy), so
/// `SHMEM_THREAD_MULTIPLE`. On the message path a collective holds the endpoint until it
/// completes and every put, get and atomic needs it to send: another thread's call waits,
/// and if the collective needs that call's data, neither ends. So at most
/// `SHMEM_THREAD_SERIALIZED` there.
fn max_thread_level(w: &W) -> c_int {
    match w.path() {
        crate::Path::Direct => THREAD_MULTIPLE,
        crate::Path::Messages | crate::Path::Transfers => THREAD_SERIALIZED,
    }
}

extern "C" fn at_exit() {
    // A program that returns from main without shmem_finalize still leaves the job cleanly.
    if !STATE.load(Ordering::Acquire).is_null() && !crate::FAILING.load(Ordering::SeqCst) {
        pshmem_finalize();
    }
}

/// `shmem_init` (and `start_pes`) provide the highest level this PE serves: the library
/// costs the same at every level.
#[no_mangle]
pub extern "C" fn pshmem_init() {
    do_init("shmem_init", THREAD_MULTIPLE);
}

/// Provides the level requested if this PE serves it, else the highest it serves
/// ([`max_thread_level`]); a second initialization reports the level of the first.
#[no_mangle]
pub unsafe extern "C" fn pshmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int {
    let call = "shmem_init_thread";
    let r = do_init(call, requested);
    if !provided.is_null() {
        // SAFETY: the caller passes a valid int pointer (or NULL).
        unsafe { *provided = st(call).thread_level };
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn pshmem_query_thread(provided: *mut c_int) {
    let s = st("shmem_query_thread");
    if !provided.is_null() {
        // SAFETY: the caller passes a valid int pointer.
        unsafe { *provided = s.thread_level };
    }
}

#[no_mangle]
pub extern "C" fn pstart_pes(_npes: c_int) {
    do_init("start_pes", THREAD_MULTIPLE);
}

#[no_mangle]
pub extern "C" fn pshmem_finalize() {
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
pub extern "C" fn pshmem_global_exit(status: c_int) {
    let _ = std::io::Write::flush(&mut std::io::stdout());
    // OpenSHMEM 1.5 §9.1.6: every PE ends with `status`. The request goes into the job's
    // control block: the launcher reports it as the job's status (for 0 too), and the
    // other PEs end with it once they notice this one gone ([`exit_requested`]).
    let p = STATE.load(Ordering::Acquire);
    let status = if p.is_null() {
        status & 0xff
    } else {
        // SAFETY: as in `st`.
        let d = unsafe { &*p }._job.driver();
        let status = d.request_exit(status);
        // PEs on other hosts learn it from here, and the launcher sees a clean end.
        d.leave(status);
        status
    };
    // SAFETY: _exit ends the process at once (no atexit: the job must not be finalized).
    unsafe { libc::_exit(status) }
}

/// Ends this PE's part in the job before it exits with `status` after another PE's
/// `shmem_global_exit` ([`skifch_drivers::AnyDriver::leave`]).
pub(crate) fn leave(status: i32) {
    let p = STATE.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: as in `st`.
        unsafe { &*p }._job.driver().leave(status);
    }
}

/// The status another PE asked the job to end with (`shmem_global_exit`), if any: a PE
/// that then finds a peer lost ends with it, quietly ([`crate::fatal`]).
pub(crate) fn exit_requested() -> Option<i32> {
    let p = STATE.load(Ordering::Acquire);
    if p.is_null() {
        return None;
    }
    // SAFETY: as in `st`.
    unsafe { &*p }._job.driver().exit_request()
}

#[no_mangle]
pub extern "C" fn pshmem_my_pe() -> c_int {
    w("shmem_my_pe").my_pe() as c_int
}
#[no_mangle]
pub extern "C" fn pshmem_n_pes() -> c_int {
    w("shmem_n_pes").n_pes() as c_int
}
#[no_mangle]
pub extern "C" fn p_my_pe() -> c_int {
    w("_my_pe").my_pe() as c_int
}
#[no_mangle]
pub extern "C" fn p_num_pes() -> c_int {
    w("_num_pes").n_pes() as c_int
}

#[no_mangle]
pub extern "C" fn pshmem_pe_accessible(pe: c_int) -> c_int {
    let w = w("shmem_pe_accessible");
    c_int::from(pe >= 0 && (pe as u32) < w.n_pes())
}

#[no_mangle]
pub extern "C" fn pshmem_addr_accessible(addr: *const c_void, pe: c_int) -> c_int {
    let w = w("shmem_addr_accessible");
    c_int::from(pe >= 0 && (pe as u32) < w.n_pes() && w.sym(addr as usize, 1).is_some())
}

#[no_mangle]
pub extern "C" fn pshmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void {
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
pub unsafe extern "C" fn pshmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
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
pub unsafe extern "C" fn pshmem_info_get_name(name: *mut c_char) {
    if name.is_null() {
        return;
    }
    let b = VENDOR.to_bytes_with_nul();
    // SAFETY: the standard requires a buffer of SHMEM_MAX_NAME_LEN (256) bytes.
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr().cast(), name, b.len()) };
}

/// Fails unless `ctx` is a live context (`shmem_ctx_t`).
fn check_ctx(call: &str, ctx: usize) {
    ok(call, st(call).ctxs.check(ctx));
}

/// The job's PE number of `pe` in context `ctx`: a live context's team numbers its PEs
/// (§9.5.2), the world's for the default context and `shmem_ctx_create`'s; else a fatal
/// error.
fn ctx_pe(call: &str, ctx: usize, pe: c_int) -> u32 {
    if ctx == crate::ctx::CTX_DEFAULT {
        return pe_u32(call, pe);
    }
    match ok(call, st(call).ctxs.team(ctx)).members {
        None => pe_u32(call, pe),
        Some(t) => usize::try_from(pe)
            .ok()
            .and_then(|i| t.members.get(i).copied())
            .unwrap_or_else(|| {
                fatal(
                    call,
                    &Error::BadPe {
                        pe: pe.into(),
                        n: t.members.len() as u32,
                    },
                )
            }),
    }
}

/// The team of handle `h`, or a fatal error.
fn team(call: &str, h: usize) -> Team {
    st(call)
        .teams
        .get(h)
        .unwrap_or_else(|| fatal(call, &crate::team::invalid()))
}

// ---- deprecated cache management (no-ops in the standard since 1.3) ----

#[no_mangle]
pub extern "C" fn pshmem_clear_cache_inv() {}
#[no_mangle]
pub extern "C" fn pshmem_set_cache_inv() {}
#[no_mangle]
pub extern "C" fn pshmem_udcflush() {}
#[no_mangle]
pub extern "C" fn pshmem_clear_cache_line_inv(_p: *mut c_void) {}
#[no_mangle]
pub extern "C" fn pshmem_set_cache_line_inv(_p: *mut c_void) {}
#[no_mangle]
pub extern "C" fn pshmem_udcflush_line(_p: *mut c_void) {}

crate::capi::profiled! {
    shmem_init => pshmem_init();
    shmem_init_thread => pshmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int;
    shmem_query_thread => pshmem_query_thread(provided: *mut c_int);
    start_pes => pstart_pes(_npes: c_int);
    shmem_finalize => pshmem_finalize();
    shmem_global_exit => pshmem_global_exit(status: c_int);
    shmem_my_pe => pshmem_my_pe() -> c_int;
    shmem_n_pes => pshmem_n_pes() -> c_int;
    _my_pe => p_my_pe() -> c_int;
    _num_pes => p_num_pes() -> c_int;
    shmem_pe_accessible => pshmem_pe_accessible(pe: c_int) -> c_int;
    shmem_addr_accessible => pshmem_addr_accessible(addr: *const c_void, pe: c_int) -> c_int;
    shmem_ptr => pshmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void;
    shmem_info_get_version => pshmem_info_get_version(major: *mut c_int, minor: *mut c_int);
    shmem_info_get_name => pshmem_info_get_name(name: *mut c_char);
    shmem_clear_cache_inv => pshmem_clear_cache_inv();
    shmem_set_cache_inv => pshmem_set_cache_inv();
    shmem_udcflush => pshmem_udcflush();
    shmem_clear_cache_line_inv => pshmem_clear_cache_line_inv(_p: *mut c_void);
    shmem_set_cache_line_inv => pshmem_set_cache_line_inv(_p: *mut c_void);
    shmem_udcflush_line => pshmem_udcflush_line(_p: *mut c_void);
}
