//! `gex_RMA_*` (Blocking/NB/NBI and the Val forms), events, NBI and access regions, the
//! non-blocking barrier; the GASNet-1 `gasnet_put`/`get` family reaches these through
//! macros in `gasnet.h`.
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in the headers and GASNet's specification

use std::ffi::{c_int, c_void};

use super::{fatal, g, ok, team, world_fast, ERR_NOT_READY, OK};
use crate::event::Kind;
use crate::rma::Pending;
use crate::Error;

type Ev = *mut c_void;

fn lc_done(lc_opt: *mut Ev) {
    if lc_opt as usize > 3 {
        // SAFETY: not NOW/DEFER/GROUP: the caller's event variable.
        unsafe { *lc_opt = std::ptr::null_mut() };
    }
}

fn check_buf(call: &str, p: *const c_void, n: usize) {
    if n > 0 && p.is_null() {
        fatal(call, &Error::BadArgument("a NULL local buffer".into()));
    }
}

/// The direct path's whole put or get for the primordial team ([`crate::Gasnet::rma_direct`]);
/// false: take the general path.
///
/// # Safety
/// `local` is readable (put) or writable (get) for `n` bytes.
#[inline(always)]
unsafe fn direct(put: bool, tm: Ev, r: u32, remote: Ev, local: *mut c_void, n: usize) -> bool {
    if local.is_null() {
        return false; // the general path reports it
    }
    match world_fast(tm, r) {
        // SAFETY: the caller's contract.
        Some(gn) => unsafe { gn.rma_direct(put, r, remote as usize, local.cast(), n) },
        None => false,
    }
}

unsafe fn put(call: &str, tm: Ev, r: u32, dest: Ev, src: *const c_void, n: usize) -> Pending {
    check_buf(call, src, n);
    let (r, route) = super::dest(call, tm, r);
    // SAFETY: the caller's source buffer of `n` bytes.
    ok(call, unsafe {
        g(call).put_on(route.remote, r, dest as usize, src.cast(), n)
    })
}

unsafe fn get(call: &str, tm: Ev, dest: Ev, r: u32, src: Ev, n: usize) -> Pending {
    check_buf(call, dest, n);
    let (r, route) = super::dest(call, tm, r);
    // SAFETY: the caller's destination buffer of `n` bytes, untouched until completion
    // (GASNet's rule for NB/NBI gets).
    ok(call, unsafe {
        g(call).get_on(route.remote, dest.cast(), r, src as usize, n)
    })
}

#[no_mangle]
pub unsafe extern "C" fn gex_RMA_PutBlocking(
    tm: Ev,
    r: u32,
    dest: Ev,
    src: *const c_void,
    n: usize,
    _f: u32,
) -> c_int {
    // SAFETY: the caller's source buffer of `n` bytes.
    if unsafe { direct(true, tm, r, dest, src.cast_mut(), n) } {
        return OK;
    }
    let call = "gex_RMA_PutBlocking";
    // SAFETY: forwards the caller's buffer.
    let p = unsafe { put(call, tm, r, dest, src, n) };
    ok(call, g(call).complete(p));
    OK
}
#[no_mangle]
pub unsafe extern "C" fn gex_RMA_PutNB(
    tm: Ev,
    r: u32,
    dest: Ev,
    src: *const c_void,
    n: usize,
    lc: *mut Ev,
    _f: u32,
) -> Ev {
    // SAFETY: as in `gex_RMA_PutBlocking`.
    if unsafe { direct(true, tm, r, dest, src.cast_mut(), n) } {
        lc_done(lc);
        return std::ptr::null_mut(); // GEX_EVENT_INVALID: complete
    }
    let call = "gex_RMA_PutNB";
    // SAFETY: forwards the caller's buffer.
    let p = unsafe { put(call, tm, r, dest, src, n) };
    lc_done(lc);
    g(call).event_for(p) as Ev
}
#[no_mangle]
pub unsafe extern "C" fn gex_RMA_PutNBI(
    tm: Ev,
    r: u32,
    dest: Ev,
    src: *const c_void,
    n: usize,
    lc: *mut Ev,
    _f: u32,
) -> c_int {
    // SAFETY: as in `gex_RMA_PutBlocking`.
    if unsafe { direct(true, tm, r, dest, src.cast_mut(), n) } {
        lc_done(lc);
        return OK;
    }
    let call = "gex_RMA_PutNBI";
    // SAFETY: forwards the caller's buffer.
    let p = unsafe { put(call, tm, r, dest, src, n) };
    lc_done(lc);
    ok(call, g(call).nbi_add(p, true));
    OK
}
#[no_mangle]
pub unsafe extern "C" fn gex_RMA_GetBlocking(
    tm: Ev,
    dest: Ev,
    r: u32,
    src: Ev,
    n: usize,
    _f: u32,
) -> c_int {
    // SAFETY: the caller's destination buffer of `n` bytes.
    if unsafe { direct(false, tm, r, src, dest, n) } {
        return OK;
    }
    let call = "gex_RMA_GetBlocking";
    // SAFETY: forwards the caller's buffer.
    let p = unsafe { get(call, tm, dest, r, src, n) };
    ok(call, g(call).complete(p));
    OK
}
#[no_mangle]
pub unsafe extern "C" fn gex_RMA_GetNB(tm: Ev, dest: Ev, r: u32, src: Ev, n: usize, _f: u32) -> Ev {
    // SAFETY: as in `gex_RMA_GetBlocking`.
    if unsafe { direct(false, tm, r, src, dest, n) } {
        return std::ptr::null_mut();
    }
    let call = "gex_RMA_GetNB";
    // SAFETY: forwards the caller's buffer.
    let p = unsafe { get(call, tm, dest, r, src, n) };
    g(call).event_for(p) as Ev
}
#[no_mangle]
pub unsafe extern "C" fn gex_RMA_GetNBI(
    tm: Ev,
    dest: Ev,
    r: u32,
    src: Ev,
    n: usize,
    _f: u32,
) -> c_int {
    // SAFETY: as in `gex_RMA_GetBlocking`.
    if unsafe { direct(false, tm, r, src, dest, n) } {
        return OK;
    }
    let call = "gex_RMA_GetNBI";
    // SAFETY: forwards the caller's buffer.
    let p = unsafe { get(call, tm, dest, r, src, n) };
    ok(call, g(call).nbi_add(p, false));
    OK
}

/// The first `n` (1..=8) bytes of `v` as stored in memory (little endian: its low bytes).
fn val_bytes(call: &str, v: usize, n: usize) -> [u8; 8] {
    if n == 0 || n > 8 {
        fatal(
            call,
            &Error::BadArgument(format!("nbytes {n} (the Val forms take 1-8)")),
        );
    }
    (v as u64).to_ne_bytes()
}

#[no_mangle]
pub unsafe extern "C" fn gex_RMA_PutBlockingVal(
    tm: Ev,
    r: u32,
    dest: Ev,
    v: usize,
    n: usize,
    f: u32,
) -> c_int {
    let b = val_bytes("gex_RMA_PutBlockingVal", v, n);
    // SAFETY: `b` holds 8 >= n bytes.
    unsafe { gex_RMA_PutBlocking(tm, r, dest, b.as_ptr().cast(), n, f) }
}
#[no_mangle]
pub unsafe extern "C" fn gex_RMA_PutNBVal(
    tm: Ev,
    r: u32,
    dest: Ev,
    v: usize,
    n: usize,
    f: u32,
) -> Ev {
    let b = val_bytes("gex_RMA_PutNBVal", v, n);
    // SAFETY: `b` holds 8 >= n bytes; a put copies its source before returning.
    unsafe { gex_RMA_PutNB(tm, r, dest, b.as_ptr().cast(), n, std::ptr::null_mut(), f) }
}
#[no_mangle]
pub unsafe extern "C" fn gex_RMA_PutNBIVal(
    tm: Ev,
    r: u32,
    dest: Ev,
    v: usize,
    n: usize,
    f: u32,
) -> c_int {
    let b = val_bytes("gex_RMA_PutNBIVal", v, n);
    // SAFETY: as above.
    unsafe { gex_RMA_PutNBI(tm, r, dest, b.as_ptr().cast(), n, std::ptr::null_mut(), f) }
}
#[no_mangle]
pub unsafe extern "C" fn gex_RMA_GetBlockingVal(
    tm: Ev,
    r: u32,
    src: Ev,
    n: usize,
    f: u32,
) -> usize {
    let mut b = val_bytes("gex_RMA_GetBlockingVal", 0, n);
    // SAFETY: `b` holds 8 >= n bytes.
    unsafe { gex_RMA_GetBlocking(tm, b.as_mut_ptr().cast(), r, src, n, f) };
    u64::from_ne_bytes(b) as usize
}

#[no_mangle]
pub extern "C" fn gex_Event_Test(ev: Ev) -> c_int {
    let call = "gex_Event_Test";
    if ok(call, g(call).event_test(ev as usize)) {
        OK
    } else {
        ERR_NOT_READY
    }
}
#[no_mangle]
pub extern "C" fn gex_Event_Wait(ev: Ev) {
    let call = "gex_Event_Wait";
    ok(call, g(call).event_wait(ev as usize));
}

fn events<'a>(call: &str, evs: *mut Ev, n: usize) -> &'a mut [Ev] {
    if n == 0 {
        return &mut [];
    }
    if evs.is_null() {
        fatal(call, &Error::BadArgument("the event array is NULL".into()));
    }
    // SAFETY: the caller's array of `n` events.
    unsafe { std::slice::from_raw_parts_mut(evs, n) }
}

/// Tests every event of the array; completed ones become `GEX_EVENT_INVALID`. Returns
/// (all complete, some completed by this call).
fn test_array(call: &str, evs: &mut [Ev]) -> (bool, bool) {
    let gn = g(call);
    let (mut all, mut some) = (true, false);
    for e in evs.iter_mut() {
        if e.is_null() {
            continue;
        }
        if ok(call, gn.event_test(*e as usize)) {
            *e = std::ptr::null_mut();
            some = true;
        } else {
            all = false;
        }
    }
    (all, some)
}

#[no_mangle]
pub unsafe extern "C" fn gex_Event_TestAll(evs: *mut Ev, n: usize, _f: u32) -> c_int {
    let call = "gex_Event_TestAll";
    if test_array(call, events(call, evs, n)).0 {
        OK
    } else {
        ERR_NOT_READY
    }
}
#[no_mangle]
pub unsafe extern "C" fn gex_Event_TestSome(evs: *mut Ev, n: usize, _f: u32) -> c_int {
    let call = "gex_Event_TestSome";
    let (all, some) = test_array(call, events(call, evs, n));
    if some || all {
        OK
    } else {
        ERR_NOT_READY
    }
}
#[no_mangle]
pub unsafe extern "C" fn gex_Event_WaitAll(evs: *mut Ev, n: usize, _f: u32) {
    let call = "gex_Event_WaitAll";
    let gn = g(call);
    for e in events(call, evs, n) {
        ok(call, gn.event_wait(*e as usize));
        *e = std::ptr::null_mut();
    }
}
#[no_mangle]
pub unsafe extern "C" fn gex_Event_WaitSome(evs: *mut Ev, n: usize, _f: u32) {
    let call = "gex_Event_WaitSome";
    let a = events(call, evs, n);
    let mut idle = crate::engine::wait_backoff();
    loop {
        let (all, some) = test_array(call, a);
        if all || some {
            return;
        }
        ok(call, g(call).wait_step(&mut idle));
    }
}
/// Local completion is at return for every operation here: the leaf is always complete.
#[no_mangle]
pub extern "C" fn gex_Event_QueryLeaf(_root: Ev, _category: u32) -> Ev {
    std::ptr::null_mut()
}

#[no_mangle]
pub extern "C" fn gex_NBI_Test(mask: u32, _f: u32) -> c_int {
    let call = "gex_NBI_Test";
    if ok(call, g(call).nbi_sync(mask, false)) {
        OK
    } else {
        ERR_NOT_READY
    }
}
#[no_mangle]
pub extern "C" fn gex_NBI_Wait(mask: u32, _f: u32) {
    let call = "gex_NBI_Wait";
    ok(call, g(call).nbi_sync(mask, true));
}
#[no_mangle]
pub extern "C" fn gex_NBI_BeginAccessRegion(_f: u32) {
    let call = "gex_NBI_BeginAccessRegion";
    ok(call, g(call).region_begin());
}
#[no_mangle]
pub extern "C" fn gex_NBI_EndAccessRegion(_f: u32) -> Ev {
    let call = "gex_NBI_EndAccessRegion";
    ok(call, g(call).region_end()) as Ev
}

/// An anonymous barrier whose completion is an event.
#[no_mangle]
pub extern "C" fn gex_Coll_BarrierNB(tm: Ev, _f: u32) -> Ev {
    let call = "gex_Coll_BarrierNB";
    let t = team(call, tm);
    let gn = g(call);
    if t.gid != u32::MAX {
        // A split team: a schedule of its own (`crate::nbcoll`).
        let c = crate::nbcoll::NbColl::barrier(ok(call, gn.nbc_begin(t)));
        return super::coll::start(call, c);
    }
    ok(
        call,
        gn.barrier_notify(0, crate::engine::barrier_flags::ANONYMOUS),
    );
    gn.new_event(Kind::Barrier) as Ev
}
