//! The C ABI (`include/armci.h`, `message.h`, library `libarmci`): translation only. Each
//! call turns C arguments into the engine's ([`Armci`]) and an error into ARMCI's
//! convention: `armci: <call>: <error>` on stderr, exit status 1 (crate docs). Calls
//! before `ARMCI_Init` or after `ARMCI_Finalize` fail the same way.
//!
//! This file: setup, memory, ordering and the `armci_msg_*` calls that are built;
//! [`rma`]: data movement, handles, values, read-modify-write and mutexes; [`group`]:
//! groups; [`message`]: the other `armci_msg_*` calls; [`domain`]: topology; [`scope`]:
//! the scopes of the collectives (`SCOPE_ALL`, `SCOPE_NODE`, `SCOPE_MASTERS`); [`mpi`]:
//! the groups' MPI communicators (`armci_group_comm`).
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in armci.h and ARMCI's documentation

use std::ffi::{c_char, c_double, c_int, c_long, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};

use skifch_drivers::{DefaultJob, DefaultPort};

use crate::engine::{Armci, Options};
use crate::{fatal, Error};

/// The profiling interface: every exported call `X` is defined as `PARMCI_X` (lower-case
/// calls as `parmci_x`) and `X` calls it, so a tool linked before `libarmci` may define
/// `X` and reach the library through the `P` name. `X => pX(args) -> ret;` defines `X`.
macro_rules! profiled {
    ($($name:ident => $p:ident($($a:ident : $t:ty),*) $(-> $r:ty)?;)*) => {$(
        #[no_mangle]
        #[allow(unused_unsafe, clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name($($a: $t),*) $(-> $r)? {
            // SAFETY: the contract of the profiling name, which does the work.
            unsafe { $p($($a),*) }
        }
    )*};
}

mod armcix;
mod domain;
mod group;
mod local;
mod message;
mod mpi;
mod rma;
mod scope;

type A = Armci<DefaultPort>;

struct State {
    armci: Arc<A>,
    _job: DefaultJob,
}

static STATE: AtomicPtr<State> = AtomicPtr::new(std::ptr::null_mut());
/// `STATE`'s engine (the `Arc`'s target), set and cleared with it: every call reaches the
/// engine with one load instead of two dependent ones (an 8-byte `ARMCI_Rmw` is a chain
/// of dependent loads ending in the atomic; each link is ~4 cycles of its ~25).
static ENGINE: AtomicPtr<A> = AtomicPtr::new(std::ptr::null_mut());
static INIT_LOCK: Mutex<()> = Mutex::new(());

/// The engine, or a fatal error naming `call`.
#[inline]
fn a(call: &str) -> &'static A {
    let p = ENGINE.load(Ordering::Acquire);
    if p.is_null() {
        fatal(call, &"called before ARMCI_Init (or after ARMCI_Finalize)");
    }
    // SAFETY: the engine of the State that init leaked, kept alive by that State's Arc
    // until finalize clears this pointer (after which no call may be made).
    unsafe { &*p }
}

fn ok<T>(call: &str, r: Result<T, Error>) -> T {
    r.unwrap_or_else(|e| fatal(call, &e))
}

/// Initializes the library once (later calls return at once); `comm` is the MPI
/// communicator the world group's is duplicated from, if an MPI runs ([`mpi`]).
fn do_init(call: &str, comm: mpi::Comm) -> c_int {
    let _g = INIT_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if !STATE.load(Ordering::Acquire).is_null() {
        return 0;
    }
    let job = ok(call, skifch_drivers::init().map_err(Error::from));
    // The driver says whether it offers load/store RMA; ARMCI_SHIM_RMA=off forces messages.
    let off = std::env::var("ARMCI_SHIM_RMA").is_ok_and(|v| v == "off" || v == "0");
    let rma = if off { None } else { job.rma() };
    let progress_thread =
        std::env::var("ARMCI_SHIM_PROGRESS_THREAD").is_ok_and(|v| v == "1" || v == "on");
    let armci = ok(
        call,
        Armci::new(
            &job,
            Options {
                rma,
                progress_thread,
            },
        ),
    );
    let world = armci.world_group().id();
    let engine = Arc::as_ptr(&armci).cast_mut();
    let st = Box::new(State { armci, _job: job });
    ENGINE.store(engine, Ordering::Release);
    STATE.store(Box::into_raw(st), Ordering::Release);
    mpi::init(world, comm);
    // SAFETY: registers a plain extern "C" function.
    unsafe { libc::atexit(at_exit) };
    0
}

extern "C" fn at_exit() {
    // A program that returns from main without ARMCI_Finalize still leaves cleanly.
    if !STATE.load(Ordering::Acquire).is_null() && !crate::FAILING.load(Ordering::SeqCst) {
        pparmci_finalize();
    }
}

fn pparmci_finalize() -> c_int {
    let _g = INIT_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let p = STATE.load(Ordering::Acquire);
    if p.is_null() {
        return 0;
    }
    // SAFETY: non-null: init stored a leaked Box, dropped only here.
    let s = unsafe { &*p };
    mpi::finalize();
    ok("ARMCI_Finalize", s.armci.finalize());
    STATE.store(std::ptr::null_mut(), Ordering::Release);
    ENGINE.store(std::ptr::null_mut(), Ordering::Release);
    // SAFETY: from Box::into_raw, no longer reachable from STATE (nor its engine from
    // ENGINE).
    drop(unsafe { Box::from_raw(p) });
    0
}

#[no_mangle]
pub extern "C" fn PARMCI_Init() -> c_int {
    do_init("ARMCI_Init", mpi::COMM_WORLD)
}
#[no_mangle]
pub extern "C" fn PARMCI_Init_args(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    do_init("ARMCI_Init_args", mpi::COMM_WORLD)
}
/// The checks of `ARMCI_Init_thread`: `requested` is an MPI thread level
/// (`MPI_THREAD_SINGLE` 0 … `MPI_THREAD_MULTIPLE` 3, as ARMCI-MPI takes it); the library
/// itself serves any of them (its calls may come from several threads; a collective from
/// one thread at a time), and when an MPI runs, its level must be at least the one asked
/// for (ARMCI-MPI's rule: ARMCI's calls may reach MPI's from those threads).
fn thread_level(call: &str, requested: c_int) {
    if !(0..=3).contains(&requested) {
        fatal(
            call,
            &Error::BadArgument(format!(
                "thread level {requested} is not MPI_THREAD_SINGLE/FUNNELED/SERIALIZED/MULTIPLE"
            )),
        );
    }
    if let Some(provided) = mpi::thread_level().filter(|&p| p < requested) {
        fatal(
            call,
            &Error::BadArgument(format!(
                "the MPI runs at thread level {provided}, below the requested {requested}"
            )),
        );
    }
}
#[no_mangle]
pub extern "C" fn PARMCI_Init_thread(requested: c_int) -> c_int {
    let call = "ARMCI_Init_thread";
    thread_level(call, requested);
    do_init(call, mpi::COMM_WORLD)
}
/// `ARMCI_Init_thread` over the processes of `comm`, which must be those of
/// `MPI_COMM_WORLD` in the same order (the job's ranks are ARMCI's): the world group's
/// communicator is a duplicate of `comm`. A smaller communicator is refused (unsupported).
#[no_mangle]
pub extern "C" fn PARMCI_Init_thread_comm(requested: c_int, comm: mpi::Comm) -> c_int {
    let call = "ARMCI_Init_thread_comm";
    match mpi::is_world(comm) {
        None => fatal(call, &"needs a running MPI (mpi-lite) for its communicator"),
        Some(false) => fatal(
            call,
            &Error::NotImplemented(
                "a communicator other than MPI_COMM_WORLD's processes in its order",
            ),
        ),
        Some(true) => {}
    }
    thread_level(call, requested);
    do_init(call, comm)
}
#[no_mangle]
pub extern "C" fn PARMCI_Initialized() -> c_int {
    c_int::from(!STATE.load(Ordering::Acquire).is_null())
}
#[no_mangle]
pub extern "C" fn PARMCI_Finalize() -> c_int {
    pparmci_finalize()
}
/// Releases what the library holds when the program ends abnormally: nothing to do
/// beyond what the exit does (the launcher removes the job's shared memory).
#[no_mangle]
pub extern "C" fn PARMCI_Cleanup() {}

/// Prints `ARMCI_Error: <msg> <code>` and ends the job: exit status `code`, or 1 if
/// `code` is 0 (the launcher stops the other ranks).
#[no_mangle]
pub unsafe extern "C" fn PARMCI_Error(msg: *const c_char, code: c_int) {
    let m = if msg.is_null() {
        String::new()
    } else {
        // SAFETY: a NUL-terminated string from the caller.
        unsafe { CStr::from_ptr(msg) }
            .to_string_lossy()
            .into_owned()
    };
    crate::FAILING.store(true, Ordering::SeqCst);
    let _ = std::io::Write::flush(&mut std::io::stdout());
    crate::say(&format!("ARMCI_Error: {m} {code}"));
    // SAFETY: ends the process at once (the job must not be finalized).
    unsafe { libc::_exit(if code == 0 { 1 } else { code }) }
}

/// `size` as bytes, or a fatal error naming `call`.
fn bytes(call: &str, size: c_long) -> usize {
    usize::try_from(size)
        .unwrap_or_else(|_| fatal(call, &Error::BadArgument(format!("negative size {size}"))))
}

#[no_mangle]
pub unsafe extern "C" fn PARMCI_Malloc(base_ptrs: *mut *mut c_void, size: c_long) -> c_int {
    let call = "ARMCI_Malloc";
    let w = a(call);
    if base_ptrs.is_null() {
        fatal(call, &Error::BadArgument("base_ptrs is NULL".into()));
    }
    if let Some(g) = group::default_group().filter(|g| *g != w.world_group()) {
        // SAFETY: forwards the caller's contract (an array of one pointer per member).
        return unsafe { group::malloc_group(call, base_ptrs, size, &g) };
    }
    let bases = ok(call, w.malloc(bytes(call, size)));
    for (i, b) in bases.iter().enumerate() {
        // SAFETY: the caller passes an array of one pointer per process.
        unsafe { *base_ptrs.add(i) = *b as *mut c_void };
    }
    0
}

#[no_mangle]
pub extern "C" fn PARMCI_Free(ptr: *mut c_void) -> c_int {
    let call = "ARMCI_Free";
    let w = a(call);
    match group::default_group().filter(|g| *g != w.world_group()) {
        Some(g) => ok(call, w.free_group(&g, ptr as usize)),
        None => ok(call, w.free(ptr as usize)),
    }
    0
}

#[no_mangle]
pub extern "C" fn PARMCI_Malloc_local(size: c_long) -> *mut c_void {
    let n = bytes("ARMCI_Malloc_local", size);
    // SAFETY: plain allocation; freed by ARMCI_Free_local.
    unsafe { libc::malloc(n.max(1)) }
}

#[no_mangle]
pub unsafe extern "C" fn PARMCI_Free_local(ptr: *mut c_void) -> c_int {
    // SAFETY: `ptr` came from ARMCI_Malloc_local (malloc) or is NULL.
    unsafe { libc::free(ptr) };
    0
}

#[no_mangle]
pub extern "C" fn PARMCI_Barrier() {
    let call = "ARMCI_Barrier";
    ok(call, a(call).barrier());
}
#[no_mangle]
pub extern "C" fn PARMCI_Fence(proc: c_int) {
    let call = "ARMCI_Fence";
    let w = a(call);
    ok(call, w.proc(proc.into()));
    ok(call, w.fence());
}
#[no_mangle]
pub extern "C" fn PARMCI_AllFence() {
    let call = "ARMCI_AllFence";
    ok(call, a(call).fence());
}
/// Direct local access to this process's own allocations needs no epoch here (they are
/// ordinary memory on both paths, and every remote operation is complete at return).
#[no_mangle]
pub extern "C" fn PARMCI_Access_begin(_ptr: *mut c_void) {
    a("ARMCI_Access_begin");
}
#[no_mangle]
pub extern "C" fn PARMCI_Access_end(_ptr: *mut c_void) {
    a("ARMCI_Access_end");
}
#[no_mangle]
pub unsafe extern "C" fn PARMCI_Copy(src: *mut c_void, dst: *mut c_void, size: c_int) {
    let n = bytes("ARMCI_Copy", size.into());
    // SAFETY: the caller's buffers of `size` bytes.
    unsafe { skifch::mem::copy_move(src.cast(), dst.cast(), n) };
}
/// 1 on the direct path (every allocation is shared memory mapped by every process).
#[no_mangle]
pub extern "C" fn PARMCI_Uses_shm() -> c_int {
    c_int::from(a("ARMCI_Uses_shm").path() == crate::Path::Direct)
}
/// A hint for ARMCI implementations that size a shared-memory pool: allocations here are
/// made one by one, so there is no limit to set.
#[no_mangle]
pub extern "C" fn PARMCI_Set_shm_limit(_limit: libc::c_ulong) {}

// ---- armci_msg_* (message.h) ----

#[no_mangle]
pub extern "C" fn parmci_msg_me() -> c_int {
    a("armci_msg_me").me() as c_int
}
#[no_mangle]
pub extern "C" fn parmci_msg_nproc() -> c_int {
    a("armci_msg_nproc").nproc() as c_int
}
#[no_mangle]
pub extern "C" fn parmci_msg_barrier() {
    let call = "armci_msg_barrier";
    ok(call, a(call).barrier());
}
/// Ends the job with status `code` (1 if 0), as `MPI_Abort` would.
#[no_mangle]
pub extern "C" fn parmci_msg_abort(code: c_int) {
    // SAFETY: a static message.
    unsafe { PARMCI_Error(c"armci_msg_abort".as_ptr(), code) }
}
/// Seconds since an arbitrary fixed point (monotonic).
#[no_mangle]
pub extern "C" fn parmci_timer() -> c_double {
    static T0: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    T0.get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
}
/// ARMCI-MPI's `armci_msg_init` initializes MPI; here the job is initialized by
/// `ARMCI_Init`, which this calls.
#[no_mangle]
pub extern "C" fn parmci_msg_init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) {
    do_init("armci_msg_init", mpi::COMM_WORLD);
}
/// Nothing to do: `ARMCI_Finalize` ends the library.
#[no_mangle]
pub extern "C" fn parmci_msg_finalize() {}

pub(super) unsafe fn bcast(call: &str, buf: *mut c_void, len: c_int, root: c_int) {
    let w = a(call);
    let root = ok(call, w.proc(root.into()));
    let n = bytes(call, len.into());
    if n == 0 {
        return;
    }
    // SAFETY: the caller's buffer of `len` bytes, not referenced elsewhere during the call.
    let b = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), n) };
    ok(call, w.bcast(root, b));
}
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_bcast(buf: *mut c_void, len: c_int, root: c_int) {
    // SAFETY: forwards the caller's contract.
    unsafe { bcast("armci_msg_bcast", buf, len, root) }
}
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_brdcst(buf: *mut c_void, len: c_int, root: c_int) {
    // SAFETY: forwards the caller's contract.
    unsafe { bcast("armci_msg_brdcst", buf, len, root) }
}
/// `root`'s buffer to every process of `scope` ([`scope`]; alone or outside: nothing).
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_bcast_scope(
    scope: c_int,
    buf: *mut c_void,
    len: c_int,
    root: c_int,
) {
    let call = "armci_msg_bcast_scope";
    if scope::part(call, scope, &scope::world(call)) != scope::Part::All {
        return;
    }
    // SAFETY: forwards the caller's contract.
    unsafe { bcast(call, buf, len, root) }
}

profiled! {
    ARMCI_Init => PARMCI_Init() -> c_int;
    ARMCI_Init_args => PARMCI_Init_args(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int;
    ARMCI_Init_thread => PARMCI_Init_thread(requested: c_int) -> c_int;
    ARMCI_Init_thread_comm => PARMCI_Init_thread_comm(requested: c_int, comm: mpi::Comm) -> c_int;
    ARMCI_Initialized => PARMCI_Initialized() -> c_int;
    ARMCI_Finalize => PARMCI_Finalize() -> c_int;
    ARMCI_Cleanup => PARMCI_Cleanup();
    ARMCI_Error => PARMCI_Error(msg: *const c_char, code: c_int);
    ARMCI_Malloc => PARMCI_Malloc(base_ptrs: *mut *mut c_void, size: c_long) -> c_int;
    ARMCI_Free => PARMCI_Free(ptr: *mut c_void) -> c_int;
    ARMCI_Malloc_local => PARMCI_Malloc_local(size: c_long) -> *mut c_void;
    ARMCI_Free_local => PARMCI_Free_local(ptr: *mut c_void) -> c_int;
    ARMCI_Barrier => PARMCI_Barrier();
    ARMCI_Fence => PARMCI_Fence(proc: c_int);
    ARMCI_AllFence => PARMCI_AllFence();
    ARMCI_Access_begin => PARMCI_Access_begin(ptr: *mut c_void);
    ARMCI_Access_end => PARMCI_Access_end(ptr: *mut c_void);
    ARMCI_Copy => PARMCI_Copy(src: *mut c_void, dst: *mut c_void, size: c_int);
    ARMCI_Uses_shm => PARMCI_Uses_shm() -> c_int;
    ARMCI_Set_shm_limit => PARMCI_Set_shm_limit(limit: libc::c_ulong);
    armci_msg_me => parmci_msg_me() -> c_int;
    armci_msg_nproc => parmci_msg_nproc() -> c_int;
    armci_msg_barrier => parmci_msg_barrier();
    armci_msg_abort => parmci_msg_abort(code: c_int);
    armci_timer => parmci_timer() -> c_double;
    armci_msg_init => parmci_msg_init(argc: *mut c_int, argv: *mut *mut *mut c_char);
    armci_msg_finalize => parmci_msg_finalize();
    armci_msg_bcast => parmci_msg_bcast(buf: *mut c_void, len: c_int, root: c_int);
    armci_msg_brdcst => parmci_msg_brdcst(buf: *mut c_void, len: c_int, root: c_int);
    armci_msg_bcast_scope => parmci_msg_bcast_scope(scope: c_int, buf: *mut c_void, len: c_int, root: c_int);
}
