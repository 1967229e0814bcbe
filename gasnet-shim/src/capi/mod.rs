//! The C ABI (`include/gasnetex.h`, `gasnet.h`, library `libgasnet`): translation only.
//! Each call turns C arguments into the engine's ([`Gasnet`]) and an error into GASNet's
//! convention for erroneous use: `gasnet: <call>: <error>` on stderr, exit status 1.
//! Many GASNet calls are macros in `gasnetex.h` over the few `gasnetc_*` entry points
//! here (the AM injection calls with their argument count, the legacy GASNet-1 names).
//!
//! This file: setup, handles, teams, the attached segment, queries, exit, the legacy
//! barrier; [`am`]: AM injection, replies, tokens, negotiated payload, polling; [`rma`]:
//! put/get, events, NBI; [`coll`]: teams' split and collectives; [`ratomic`]: atomic
//! domains; [`vis`]: non-contiguous put/get; [`segment`]: client-created segments;
//! [`invoke`]: calling C handlers.
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in the headers and GASNet's specification

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};

use skifch_drivers::{DefaultJob, DefaultPort};

use crate::am::{EntryRec, HandlerFn};
use crate::coll::Team;
use crate::engine::{Gasnet, Options};
use crate::eplock::SingleThread;
use crate::Error;

mod am;
mod coll;
mod ep;
mod invoke;
mod ratomic;
mod rma;
mod segment;
mod vis;

type G = Gasnet<DefaultPort>;

struct State {
    g: Arc<G>,
    job: DefaultJob,
    world: Team,
}

static STATE: AtomicPtr<State> = AtomicPtr::new(std::ptr::null_mut());
static INIT_LOCK: Mutex<()> = Mutex::new(());
/// The client was built `GASNET_SEQ` (`gasnetc_thread_model`, called by the headers'
/// `gex_Client_Init` / `gasnet_init` macros before the call).
static SEQ_CLIENT: AtomicBool = AtomicBool::new(false);

/// The opaque handles of the primordial client, team and segment: addresses of these
/// (never dereferenced by C; endpoints: [`ep`]).
static CLIENT: u8 = 0;
static TM: u8 = 0;
static SEGMENT: u8 = 0;

fn handle(p: &'static u8) -> *mut c_void {
    (p as *const u8).cast_mut().cast()
}

/// `GASNET_OK`.
const OK: c_int = 0;
/// `GASNET_ERR_NOT_READY`.
const ERR_NOT_READY: c_int = 10004;
/// `GASNET_ERR_BARRIER_MISMATCH`.
const ERR_BARRIER_MISMATCH: c_int = 10005;

/// Prints `gasnet: <call>: <error>` and exits with status 1; after another rank's
/// `gasnet_exit(code)`, exits with `code` quietly instead (finding that rank gone is the
/// job ending, not an error of this rank).
#[cold]
#[inline(never)]
pub(crate) fn fatal<C: std::fmt::Display + ?Sized>(call: &C, e: &dyn std::fmt::Display) -> ! {
    skifch_drivers::flush_stdio();
    if let Some(code) = exit_requested() {
        if env_on("GASNET_SHIM_VERBOSE") {
            skifch::diag::line(&format!(
                "gasnet: {call}: {e}: ending with status {code}, another rank's gasnet_exit"
            ));
        }
        leave(code);
    }
    skifch::diag::line(&format!("gasnet: {call}: {e}"));
    // The launcher stops the other ranks.
    skifch_drivers::end_process(None, 1)
}

/// Ends the process with `code` at once, this rank's part in the job ended first
/// ([`skifch_drivers::end_process`]).
fn leave(code: i32) -> ! {
    let p = STATE.load(Ordering::Acquire);
    // SAFETY: set by init from a leaked Box, never freed.
    let driver = (!p.is_null()).then(|| unsafe { &*p }.job.driver());
    skifch_drivers::end_process(driver.map(|d| &**d), code)
}

fn exit_requested() -> Option<i32> {
    let p = STATE.load(Ordering::Acquire);
    if p.is_null() {
        return None;
    }
    // SAFETY: set by init from a leaked Box, never freed (GASNet has no finalize).
    unsafe { &*p }.job.driver().exit_request()
}

/// The engine, or a fatal error naming `call`.
fn g<C: std::fmt::Display + ?Sized>(call: &C) -> &'static G {
    let p = STATE.load(Ordering::Acquire);
    if p.is_null() {
        fatal(call, &"called before gex_Client_Init (or gasnet_init)");
    }
    // SAFETY: set once from a leaked Box, never freed.
    unsafe { &(*p).g }
}

/// The engine when `tm` is the primordial team (whose ranks are job ranks) and `rank` one
/// of its ranks: the hot paths' entry check, nothing built. `None` sends the caller to the
/// general path, which reports what is wrong (not initialized, a bad team or rank).
#[inline(always)]
fn world_fast(tm: *mut c_void, rank: u32) -> Option<&'static G> {
    let p = STATE.load(Ordering::Acquire);
    if p.is_null() || tm != handle(&TM) {
        return None;
    }
    // SAFETY: set once from a leaked Box, never freed.
    let gn = unsafe { &(*p).g };
    (rank < gn.size()).then_some(gn)
}

fn ok<T, C: std::fmt::Display + ?Sized>(call: &C, r: Result<T, Error>) -> T {
    r.unwrap_or_else(|e| fatal(call, &e))
}

fn env_on(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1" || v == "on" || v == "yes")
}

fn do_init(call: &str) {
    let _g = INIT_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if !STATE.load(Ordering::Acquire).is_null() {
        return;
    }
    let job = ok(call, skifch_drivers::init().map_err(Error::from));
    let off = std::env::var("GASNET_SHIM_RMA").is_ok_and(|v| v == "off" || v == "0");
    let rma = if off { None } else { job.rma() };
    let progress_thread = env_on("GASNET_SHIM_PROGRESS_THREAD");
    let opts = Options {
        rma,
        progress_thread,
    };
    let gn = if SEQ_CLIENT.load(Ordering::Acquire) {
        // SAFETY: the client declared GASNET_SEQ (`gasnetc_thread_model`, whose contract
        // is that one thread at a time calls GASNet).
        G::new_seq(&job, opts, unsafe { SingleThread::promise() })
    } else {
        G::new(&job, opts)
    }
    .unwrap_or_else(|e| match job.driver().exit_request() {
        // A rank that finished first called gasnet_exit: end with its code.
        Some(code) => skifch_drivers::end_process(Some(job.driver()), code),
        None => fatal(call, &e),
    });
    ok(call, gn.set_c_invoker(invoke::invoke));
    let world = Team::world(gn.me(), gn.size());
    let st = Box::new(State { g: gn, job, world });
    STATE.store(Box::into_raw(st), Ordering::Release);
}

/// The client's thread model, from the headers before `gex_Client_Init` / `gasnet_init`:
/// `seq` non-zero for a client built `GASNET_SEQ`, whose calls then take no lock
/// (`crate::eplock`). Effective for the first initialisation only.
///
/// # Safety
/// With `seq` non-zero the caller promises what GASNET_SEQ means (GASNet-EX spec 0.13):
/// one thread at a time makes GASNet calls in this process.
#[no_mangle]
pub unsafe extern "C" fn gasnetc_thread_model(seq: c_int) {
    SEQ_CLIENT.store(seq != 0, Ordering::Release);
}

#[no_mangle]
pub unsafe extern "C" fn gex_Client_Init(
    client_p: *mut *mut c_void,
    ep_p: *mut *mut c_void,
    tm_p: *mut *mut c_void,
    _client_name: *const c_char,
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    _flags: u32,
) -> c_int {
    let call = "gex_Client_Init";
    if client_p.is_null() || ep_p.is_null() || tm_p.is_null() {
        fatal(call, &Error::BadArgument("a NULL output pointer".into()));
    }
    do_init(call);
    // SAFETY: checked non-NULL; the caller passes writable handle variables.
    unsafe {
        *client_p = handle(&CLIENT);
        *ep_p = ep::ep_handle(0);
        *tm_p = handle(&TM);
    }
    OK
}

#[no_mangle]
pub extern "C" fn gasnet_init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    do_init("gasnet_init");
    OK
}

/// The primordial team (the legacy calls' implicit team).
#[no_mangle]
pub extern "C" fn gasnetc_world_tm() -> *mut c_void {
    handle(&TM)
}

/// Teams made by `gex_TM_Split`, by handle (leaked boxes: a handle stays valid for the
/// life of the process, so a stale one is found here instead of read as freed memory).
static TEAMS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// The team behind a `gex_TM_t`, or a fatal error naming `call`.
pub(crate) fn team<C: std::fmt::Display + ?Sized>(call: &C, tm: *mut c_void) -> &'static Team {
    if tm == handle(&TM) {
        let p = STATE.load(Ordering::Acquire);
        if p.is_null() {
            fatal(call, &"called before gex_Client_Init (or gasnet_init)");
        }
        // SAFETY: set once from a leaked Box, never freed.
        return unsafe { &(*p).world };
    }
    if ep::pair_of(tm).is_some() {
        fatal(
            call,
            &Error::BadArgument(
                "a gex_TM_Pair team carries AMs and RMA only (not collectives, atomic domains, VIS or negotiated payload)".into(),
            ),
        );
    }
    let known = TEAMS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .contains(&(tm as usize));
    if !known {
        fatal(
            call,
            &Error::BadArgument(format!("{tm:p} is not a team of this client")),
        );
    }
    // SAFETY: registered handles are leaked `Box<Team>`s, never freed.
    unsafe { &*(tm as *const Team) }
}

/// A new team's handle.
pub(crate) fn new_team(t: Team) -> *mut c_void {
    let p = Box::into_raw(Box::new(t)) as usize;
    TEAMS.lock().unwrap_or_else(|e| e.into_inner()).push(p);
    p as *mut c_void
}

/// Job rank and route of `rank` of team `tm` (any team, a `gex_TM_Pair` one too), or a
/// fatal error naming `call`: the destination of an AM or RMA.
pub(crate) fn dest<C: std::fmt::Display + ?Sized>(
    call: &C,
    tm: *mut c_void,
    rank: u32,
) -> (u32, crate::eps::Route) {
    match ep::pair_of(tm) {
        Some(route) => (ok(call, g(call).rank(i64::from(rank))), route),
        None => (job_rank(call, tm, rank), crate::eps::Route::PRIMORDIAL),
    }
}

/// Job rank of `rank` of team `tm`, or a fatal error naming `call`.
pub(crate) fn job_rank<C: std::fmt::Display + ?Sized>(call: &C, tm: *mut c_void, rank: u32) -> u32 {
    ok(call, team(call, tm).job_rank(rank))
}

fn check_tm<C: std::fmt::Display + ?Sized>(call: &C, tm: *mut c_void) {
    if tm != handle(&TM) {
        fatal(
            call,
            &Error::BadArgument("needs the primordial team".into()),
        );
    }
}

/// The segment length as `usize`, or a fatal error.
fn seg_len(call: &str, len: usize) -> usize {
    if len > (1usize << 40) {
        fatal(
            call,
            &Error::BadArgument(format!("a segment of {len} bytes")),
        );
    }
    len
}

#[no_mangle]
pub unsafe extern "C" fn gex_Segment_Attach(
    seg_p: *mut *mut c_void,
    tm: *mut c_void,
    length: usize,
) -> c_int {
    let call = "gex_Segment_Attach";
    check_tm(call, tm);
    let gn = g(call);
    ok(call, gn.attach(seg_len(call, length)));
    ok(call, gn.start_progress());
    if !seg_p.is_null() {
        // SAFETY: non-NULL; the caller's handle variable.
        unsafe { *seg_p = handle(&SEGMENT) };
    }
    OK
}

/// This rank's segment (base, length), or a fatal error naming `call`.
fn my_seg(call: &str) -> (usize, usize) {
    let gn = g(call);
    match gn.segs() {
        Some(s) => s.bases[gn.me() as usize],
        None => fatal(call, &Error::NotAttached),
    }
}

#[no_mangle]
pub extern "C" fn gex_Segment_QueryAddr(seg: *mut c_void) -> *mut c_void {
    match segment::created(seg) {
        Some((base, _)) => base as *mut c_void,
        None => my_seg("gex_Segment_QueryAddr").0 as *mut c_void,
    }
}
#[no_mangle]
pub extern "C" fn gex_Segment_QuerySize(seg: *mut c_void) -> usize {
    match segment::created(seg) {
        Some((_, len)) => len,
        None => my_seg("gex_Segment_QuerySize").1,
    }
}

#[no_mangle]
pub unsafe extern "C" fn gex_EP_QueryBoundSegmentNB(
    tm: *mut c_void,
    rank: u32,
    owneraddr_p: *mut *mut c_void,
    localaddr_p: *mut *mut c_void,
    size_p: *mut usize,
    _flags: u32,
) -> *mut c_void {
    let call = "gex_EP_QueryBoundSegmentNB";
    let gn = g(call);
    let (r, route) = dest(call, tm, rank);
    let Some(s) = gn.segs_of(route.remote) else {
        fatal(call, &Error::NotAttached)
    };
    let (base, len) = s.bases[r as usize];
    let local = match &s.win {
        Some(w) => w.reach(r, 0, 0).map_or(std::ptr::null_mut(), |p| p.cast()),
        None if r == gn.me() => base as *mut c_void,
        None => std::ptr::null_mut(),
    };
    // SAFETY: each output pointer may be NULL (not wanted) or writable.
    unsafe {
        if !owneraddr_p.is_null() {
            *owneraddr_p = base as *mut c_void;
        }
        if !localaddr_p.is_null() {
            *localaddr_p = local;
        }
        if !size_p.is_null() {
            *size_p = len;
        }
    }
    std::ptr::null_mut() // GEX_EVENT_INVALID: complete
}

/// The legacy `gasnet_seginfo_t`.
#[repr(C)]
pub struct SegInfo {
    addr: *mut c_void,
    size: usize,
}

#[no_mangle]
pub unsafe extern "C" fn gasnet_getSegmentInfo(table: *mut SegInfo, numentries: c_int) -> c_int {
    let call = "gasnet_getSegmentInfo";
    let gn = g(call);
    let Some(s) = gn.segs() else {
        fatal(call, &Error::NotAttached)
    };
    if table.is_null() {
        fatal(call, &Error::BadArgument("seginfo_table is NULL".into()));
    }
    for (i, (b, l)) in s.bases.iter().enumerate().take(numentries.max(0) as usize) {
        // SAFETY: the caller's table has `numentries` entries.
        unsafe {
            *table.add(i) = SegInfo {
                addr: *b as *mut c_void,
                size: *l,
            }
        };
    }
    OK
}

/// Largest segment a rank may attach (the memory is backed lazily, page by page).
const MAX_SEGMENT: usize = 1 << 30;

#[no_mangle]
pub extern "C" fn gasnet_getMaxLocalSegmentSize() -> usize {
    MAX_SEGMENT
}
#[no_mangle]
pub extern "C" fn gasnet_getMaxGlobalSegmentSize() -> usize {
    MAX_SEGMENT
}

/// Reads one C registration record (`gex_AM_Entry_t`, laid out as [`EntryRec`]).
fn register_c(call: &str, ep: u32, recs: &mut [EntryRec]) -> c_int {
    let gn = g(call);
    if let Some(r) = recs.iter().find(|r| r.fnptr == 0) {
        fatal(
            call,
            &Error::BadArgument(format!("the entry for index {} has no function", r.index)),
        );
    }
    let entries: Vec<_> = recs.iter().map(|r| (HandlerFn::C(r.fnptr), *r)).collect();
    let idx = ok(call, gn.register_on(ep, &entries));
    for (r, i) in recs.iter_mut().zip(idx) {
        r.index = i; // GASNet writes the assigned index back for "don't care" entries
    }
    OK
}

#[no_mangle]
pub unsafe extern "C" fn gex_EP_RegisterHandlers(
    ep: *mut c_void,
    table: *mut EntryRec,
    numentries: usize,
) -> c_int {
    let call = "gex_EP_RegisterHandlers";
    if table.is_null() && numentries > 0 {
        fatal(call, &Error::BadArgument("the table is NULL".into()));
    }
    let recs = if numentries == 0 {
        &mut [][..]
    } else {
        // SAFETY: the caller's table of `numentries` entries, laid out as EntryRec.
        unsafe { std::slice::from_raw_parts_mut(table, numentries) }
    };
    register_c(call, ep::ep_index(call, ep), recs)
}

/// The legacy `gasnet_handlerentry_t`.
#[repr(C)]
pub struct LegacyEntry {
    index: u8,
    fnptr: usize,
}

#[no_mangle]
pub unsafe extern "C" fn gasnet_attach(
    table: *mut LegacyEntry,
    numentries: c_int,
    segsize: usize,
    _minheapoffset: usize,
) -> c_int {
    let call = "gasnet_attach";
    let gn = g(call);
    let n = numentries.max(0) as usize;
    if n > 0 {
        if table.is_null() {
            fatal(call, &Error::BadArgument("the table is NULL".into()));
        }
        // SAFETY: the caller's table of `numentries` entries.
        let t = unsafe { std::slice::from_raw_parts_mut(table, n) };
        let mut recs: Vec<EntryRec> = t
            .iter()
            .map(|e| EntryRec {
                index: e.index,
                fnptr: e.fnptr,
                flags: 0,
                nargs: 255,
                cdata: 0,
                name: 0,
            })
            .collect();
        register_c(call, 0, &mut recs);
        for (e, r) in t.iter_mut().zip(&recs) {
            e.index = r.index;
        }
    }
    ok(call, gn.attach(seg_len(call, segsize)));
    ok(call, gn.start_progress());
    OK
}

#[no_mangle]
pub extern "C" fn gex_System_QueryJobRank() -> u32 {
    g("gex_System_QueryJobRank").me()
}
#[no_mangle]
pub extern "C" fn gex_System_QueryJobSize() -> u32 {
    g("gex_System_QueryJobSize").size()
}
#[no_mangle]
pub extern "C" fn gasnet_mynode() -> u32 {
    g("gasnet_mynode").me()
}
#[no_mangle]
pub extern "C" fn gasnet_nodes() -> u32 {
    g("gasnet_nodes").size()
}
#[no_mangle]
pub extern "C" fn gex_TM_QueryRank(tm: *mut c_void) -> u32 {
    let call = "gex_TM_QueryRank";
    match ep::pair_of(tm) {
        Some(_) => g(call).me(),
        None => team(call, tm).me,
    }
}
#[no_mangle]
pub extern "C" fn gex_TM_QuerySize(tm: *mut c_void) -> u32 {
    let call = "gex_TM_QuerySize";
    match ep::pair_of(tm) {
        Some(_) => g(call).size(),
        None => team(call, tm).size(),
    }
}
/// The team's local endpoint (a split team's is the primordial one).
#[no_mangle]
pub extern "C" fn gex_TM_QueryEP(tm: *mut c_void) -> *mut c_void {
    let call = "gex_TM_QueryEP";
    match ep::pair_of(tm) {
        Some(r) => ep::ep_handle(r.local),
        None => {
            team(call, tm);
            ep::ep_handle(0)
        }
    }
}
#[no_mangle]
pub extern "C" fn gex_TM_QueryClient(_tm: *mut c_void) -> *mut c_void {
    handle(&CLIENT)
}
#[no_mangle]
pub extern "C" fn gex_EP_QueryClient(_ep: *mut c_void) -> *mut c_void {
    handle(&CLIENT)
}
#[no_mangle]
pub extern "C" fn gex_Segment_QueryClient(_seg: *mut c_void) -> *mut c_void {
    handle(&CLIENT)
}
#[no_mangle]
pub extern "C" fn gex_Client_QueryName(_c: *mut c_void) -> *const c_char {
    c"gasnet-shim client".as_ptr()
}
/// Team member `rank` as a job rank (the primordial team: the same number).
#[no_mangle]
pub extern "C" fn gex_TM_TranslateRankToJobrank(tm: *mut c_void, rank: u32) -> u32 {
    dest("gex_TM_TranslateRankToJobrank", tm, rank).0
}
/// Job rank `jobrank` in the team, or `GEX_RANK_INVALID`.
#[no_mangle]
pub extern "C" fn gex_TM_TranslateJobrankToRank(tm: *mut c_void, jobrank: u32) -> u32 {
    let call = "gex_TM_TranslateJobrankToRank";
    if ep::pair_of(tm).is_some() {
        return if jobrank < g(call).size() {
            jobrank
        } else {
            u32::MAX
        };
    }
    let t = team(call, tm);
    t.members
        .iter()
        .position(|&m| m == jobrank)
        .map_or(u32::MAX, |i| i as u32)
}

/// Ends the whole job with `code` (GASNet: every rank exits with it). The request goes to
/// the job's control block; the launcher reports it, and the other ranks end with it
/// once they find this one gone ([`fatal`]).
#[no_mangle]
pub extern "C" fn gasnet_exit(code: c_int) {
    skifch_drivers::flush_stdio();
    let p = STATE.load(Ordering::Acquire);
    let code = if p.is_null() {
        code & 0xff
    } else {
        // SAFETY: as in `g`.
        let s = unsafe { &*p };
        let _ = s.g.shutdown();
        s.job.driver().request_exit(code)
    };
    // Not finalized rank by rank: the job ends with the first request.
    leave(code)
}

#[no_mangle]
pub extern "C" fn gasnet_barrier_notify(id: c_int, flags: c_int) {
    let call = "gasnet_barrier_notify";
    ok(call, g(call).barrier_notify(id as u32, flags as u32));
}

fn barrier_result(r: Option<bool>) -> c_int {
    match r {
        None => ERR_NOT_READY,
        Some(true) => OK,
        Some(false) => ERR_BARRIER_MISMATCH,
    }
}

#[no_mangle]
pub extern "C" fn gasnet_barrier_wait(id: c_int, flags: c_int) -> c_int {
    let call = "gasnet_barrier_wait";
    barrier_result(ok(
        call,
        g(call).barrier_finish(id as u32, flags as u32, true),
    ))
}
#[no_mangle]
pub extern "C" fn gasnet_barrier_try(id: c_int, flags: c_int) -> c_int {
    let call = "gasnet_barrier_try";
    barrier_result(ok(
        call,
        g(call).barrier_finish(id as u32, flags as u32, false),
    ))
}
/// `gasnet_barrier(id, flags)`: notify and wait.
#[no_mangle]
pub extern "C" fn gasnet_barrier(id: c_int, flags: c_int) -> c_int {
    let call = "gasnet_barrier";
    let gn = g(call);
    ok(call, gn.barrier_notify(id as u32, flags as u32));
    barrier_result(ok(call, gn.barrier_finish(id as u32, flags as u32, true)))
}

#[no_mangle]
pub extern "C" fn gasnet_ErrorName(code: c_int) -> *const c_char {
    match code {
        0 => c"GASNET_OK",
        10001 => c"GASNET_ERR_NOT_INIT",
        10002 => c"GASNET_ERR_RESOURCE",
        10003 => c"GASNET_ERR_BAD_ARG",
        10004 => c"GASNET_ERR_NOT_READY",
        10005 => c"GASNET_ERR_BARRIER_MISMATCH",
        _ => c"unknown GASNet error",
    }
    .as_ptr()
}
#[no_mangle]
pub extern "C" fn gasnet_ErrorDesc(code: c_int) -> *const c_char {
    match code {
        0 => c"no error",
        10001 => c"GASNet message layer not initialized",
        10002 => c"problem with requested resource",
        10003 => c"bad argument to GASNet call",
        10004 => c"non-blocking operation not complete",
        10005 => c"barrier id's mismatched",
        _ => c"no description available",
    }
    .as_ptr()
}

/// The call name a header passed (a string literal), for messages.
/// A call name the headers passed, turned into text only when a message needs it (the
/// AM injection path must not allocate per call).
pub(crate) struct CallName(pub(crate) *const c_char, pub(crate) &'static str);

impl std::fmt::Display for CallName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&call_name(self.0, self.1))
    }
}

pub(crate) fn call_name(call: *const c_char, default: &str) -> String {
    if call.is_null() {
        return default.into();
    }
    // SAFETY: the headers pass NUL-terminated string literals.
    unsafe { CStr::from_ptr(call) }
        .to_string_lossy()
        .into_owned()
}

/// Fails with `gasnet: <call>: <what>` (the headers' way to report erroneous use found
/// in a macro, e.g. an argument count above 16).
#[no_mangle]
pub unsafe extern "C" fn gasnetc_fatal(call: *const c_char, what: *const c_char) {
    let s = |p: *const c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: NUL-terminated strings from the headers.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    fatal(&s(call), &s(what))
}
