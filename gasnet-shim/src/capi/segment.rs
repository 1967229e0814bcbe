//! Client-created segments: `gex_Segment_Create`, `gex_EP_BindSegment`,
//! `gex_EP_PublishBoundSegment` (the alternative to `gex_Segment_Attach`, and the way
//! endpoints made by `gex_EP_Create` get their segments), `gex_EP_QuerySegment`.
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in the headers and GASNet's specification

use std::ffi::{c_int, c_void};
use std::sync::Mutex;

use super::ep::ep_index;
use super::{fatal, g, handle, ok, team, OK, SEGMENT};
use crate::engine::NewSegment;
use crate::eps::MAX_EPS;
use crate::Error;

/// A created segment: its place here, and the segment until it is published.
struct Created {
    base: usize,
    len: usize,
    new: Option<NewSegment>,
}

/// Created segments by handle (leaked boxes) and the one bound to each endpoint.
struct Table {
    created: Vec<usize>,
    bound: [Option<usize>; MAX_EPS as usize],
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    created: Vec::new(),
    bound: [None; MAX_EPS as usize],
});

fn table() -> std::sync::MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// (base, length) of a segment made by `gex_Segment_Create`, if `seg` is one.
pub(super) fn created(seg: *mut c_void) -> Option<(usize, usize)> {
    if !table().created.contains(&(seg as usize)) {
        return None;
    }
    // SAFETY: registered handles are leaked `Box<Mutex<Created>>`s, never freed.
    let c = unsafe { &*(seg as *const Mutex<Created>) };
    let c = c.lock().unwrap_or_else(|p| p.into_inner());
    Some((c.base, c.len))
}

#[no_mangle]
pub unsafe extern "C" fn gex_Segment_Create(
    seg_p: *mut *mut c_void,
    _client: *mut c_void,
    address: *mut c_void,
    length: usize,
    _kind: u32,
    _flags: u32,
) -> c_int {
    let call = "gex_Segment_Create";
    if seg_p.is_null() {
        fatal(call, &Error::BadArgument("segment_p is NULL".into()));
    }
    let gn = g(call);
    let new = if address.is_null() {
        ok(call, gn.create_segment(length))
    } else {
        // SAFETY: GASNet's contract for client memory given to gex_Segment_Create: it
        // stays valid and is the client's to share (page alignment is checked).
        ok(call, unsafe {
            gn.create_segment_at(address as usize, length)
        })
    };
    let c = Created {
        base: new.base,
        len: new.len,
        new: Some(new),
    };
    let h = Box::into_raw(Box::new(Mutex::new(c))) as usize;
    table().created.push(h);
    // SAFETY: checked non-NULL; the caller's handle variable.
    unsafe { *seg_p = h as *mut c_void };
    OK
}

#[no_mangle]
pub extern "C" fn gex_EP_BindSegment(ep: *mut c_void, seg: *mut c_void, _flags: u32) {
    let call = "gex_EP_BindSegment";
    let i = ep_index(call, ep) as usize;
    if created(seg).is_none() {
        fatal(
            call,
            &Error::BadArgument("not a segment made by gex_Segment_Create".into()),
        );
    }
    let mut t = table();
    if t.bound[i].is_some() || (i == 0 && g(call).segs().is_some()) {
        fatal(
            call,
            &Error::BadArgument("the endpoint already has a bound segment".into()),
        );
    }
    t.bound[i] = Some(seg as usize);
}

/// The segment bound to `ep` (`GEX_SEGMENT_INVALID` for none): a created one, or the
/// primordial endpoint's attached segment.
#[no_mangle]
pub extern "C" fn gex_EP_QuerySegment(ep: *mut c_void) -> *mut c_void {
    let call = "gex_EP_QuerySegment";
    let i = ep_index(call, ep) as usize;
    if let Some(h) = table().bound[i] {
        return h as *mut c_void;
    }
    if i == 0 && g(call).segs().is_some() {
        return handle(&SEGMENT);
    }
    std::ptr::null_mut()
}

/// Collective over `tm` (the primordial team): every rank publishes the bound segments of
/// the endpoints `eps` (the same endpoint indices, in the same order, on every rank); from
/// then on each is its endpoint's segment of RMA and Long AMs, as an attached one.
#[no_mangle]
pub unsafe extern "C" fn gex_EP_PublishBoundSegment(
    tm: *mut c_void,
    eps: *mut *mut c_void,
    num_eps: usize,
    _flags: u32,
) -> c_int {
    let call = "gex_EP_PublishBoundSegment";
    let t = team(call, tm);
    if t.gid != u32::MAX {
        fatal(
            call,
            &Error::BadArgument("needs the primordial team".into()),
        );
    }
    if num_eps > 0 && eps.is_null() {
        fatal(call, &Error::BadArgument("eps is NULL".into()));
    }
    let gn = g(call);
    for k in 0..num_eps {
        // SAFETY: checked non-NULL; the caller's array of `num_eps` endpoints.
        let i = ep_index(call, unsafe { *eps.add(k) });
        let Some(h) = table().bound[i as usize] else {
            fatal(
                call,
                &Error::BadArgument(format!(
                    "endpoint {i} has no bound segment (gex_EP_BindSegment)"
                )),
            )
        };
        // SAFETY: a registered handle (BindSegment checked it).
        let c = unsafe { &*(h as *const Mutex<Created>) };
        let new = c.lock().unwrap_or_else(|p| p.into_inner()).new.take();
        let Some(new) = new else {
            fatal(
                call,
                &Error::BadArgument(format!(
                    "the segment bound to endpoint {i} is already published"
                )),
            )
        };
        ok(call, gn.publish_on(i, new));
    }
    ok(call, gn.start_progress());
    OK
}
