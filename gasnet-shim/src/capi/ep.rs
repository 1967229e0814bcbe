//! Endpoints beyond the primordial one (`crate::eps`): `gex_EP_Create`,
//! `gex_EP_QueryIndex`, `gex_TM_Pair` and the handles of endpoints and endpoint pairs.
//! GASNet-EX specification 0.13 and the 2020+ releases' multi-EP support: a `gex_TM_Pair`
//! team names job ranks (its rank `r` is job rank `r`) and carries AMs and RMA from its
//! local endpoint to the endpoint of the given index of the target; it is not a team for
//! collectives, atomic domains, VIS or negotiated payload (refused, naming the call).
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in the headers and GASNet's specification

use std::ffi::{c_int, c_void};

use super::{fatal, g, handle, ok, CLIENT, OK};
use crate::eps::{Route, MAX_EPS};
use crate::Error;

const N: usize = MAX_EPS as usize;

/// The endpoints' handles: addresses of these bytes (never dereferenced by C).
static EPS: [u8; N] = [0; N];
/// The handles of `gex_TM_Pair(local, remote)`: `PAIRS[local * N + remote]`.
static PAIRS: [u8; N * N] = [0; N * N];

/// `GEX_EP_CAPABILITY_ALL`: RMA, AM, VIS, COLL, ATOMIC.
const CAPS_ALL: u32 = 31;
/// `GASNET_ERR_RESOURCE`.
const ERR_RESOURCE: c_int = 10002;
/// `GASNET_ERR_BAD_ARG`.
const ERR_BAD_ARG: c_int = 10003;

/// The handle of endpoint `i`.
pub(super) fn ep_handle(i: u32) -> *mut c_void {
    handle(&EPS[i as usize % N])
}

/// The index of the endpoint behind `ep`, or a fatal error naming `call`.
pub(super) fn ep_index(call: &str, ep: *mut c_void) -> u32 {
    let off = (ep as usize).wrapping_sub(EPS.as_ptr() as usize);
    if off >= N || off as u32 >= g(call).ep_count() {
        fatal(
            call,
            &Error::BadArgument(format!("{ep:p} is not an endpoint of this client")),
        );
    }
    off as u32
}

/// The route of a `gex_TM_Pair` team, `None` for any other handle.
#[inline]
pub(super) fn pair_of(tm: *mut c_void) -> Option<Route> {
    let off = (tm as usize).wrapping_sub(PAIRS.as_ptr() as usize);
    (off < N * N).then_some(Route {
        local: (off / N) as u32,
        remote: (off % N) as u32,
    })
}

#[no_mangle]
pub unsafe extern "C" fn gex_EP_Create(
    ep_p: *mut *mut c_void,
    client: *mut c_void,
    caps: u32,
    _flags: u32,
) -> c_int {
    let call = "gex_EP_Create";
    if ep_p.is_null() {
        fatal(call, &Error::BadArgument("ep_p is NULL".into()));
    }
    if client != handle(&CLIENT) {
        fatal(
            call,
            &Error::BadArgument(format!("{client:p} is not this client")),
        );
    }
    if caps & !CAPS_ALL != 0 || caps == 0 {
        return ERR_BAD_ARG;
    }
    let gn = g(call);
    if gn.ep_count() >= MAX_EPS {
        return ERR_RESOURCE; // GASNET_MAXEPS reached
    }
    let i = ok(call, gn.create_ep());
    // SAFETY: checked non-NULL; the caller's handle variable.
    unsafe { *ep_p = ep_handle(i) };
    OK
}

#[no_mangle]
pub extern "C" fn gex_EP_QueryIndex(ep: *mut c_void) -> u32 {
    ep_index("gex_EP_QueryIndex", ep)
}

/// The team of job ranks from endpoint `local_ep` here to endpoint `remote_index` of each
/// rank. The remote index is not checked here (an endpoint is made locally; the target
/// rank reports an AM or RMA to an endpoint it lacks).
#[no_mangle]
pub extern "C" fn gex_TM_Pair(local_ep: *mut c_void, remote_index: u32) -> *mut c_void {
    let call = "gex_TM_Pair";
    let l = ep_index(call, local_ep);
    if remote_index >= MAX_EPS {
        fatal(
            call,
            &Error::BadArgument(format!(
                "endpoint index {remote_index} (at most {} endpoints)",
                MAX_EPS
            )),
        );
    }
    handle(&PAIRS[l as usize * N + remote_index as usize])
}
