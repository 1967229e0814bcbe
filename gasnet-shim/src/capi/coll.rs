//! `gex_TM_Split`/`Destroy` and the collectives of `gasnet_coll.h`: broadcast and
//! reductions to one and to all (predefined types and operators, or a user function).
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in the headers and GASNet's specification

use std::ffi::{c_int, c_void};

use skifch::coll::Reducer;

use super::{fatal, g, new_team, ok, team};
use crate::coll::{Dt, RedOp, User};
use crate::nbcoll::{Deliver, NbColl};
use crate::Error;

type Ev = *mut c_void;
/// `gex_Coll_ReduceFn_t`.
type ReduceFn = Option<unsafe extern "C" fn(*const c_void, *mut c_void, usize, *const c_void)>;

/// `GEX_FLAG_TM_SCRATCH_SIZE_RECOMMENDED` and `_MIN`: the call is a query.
const SCRATCH_QUERY: u32 = (1 << 11) | (1 << 12);

#[no_mangle]
pub unsafe extern "C" fn gex_TM_Split(
    new_tm_p: *mut Ev,
    parent: Ev,
    color: c_int,
    key: c_int,
    _scratch_addr: *mut c_void,
    _scratch_size: usize,
    flags: u32,
) -> usize {
    let call = "gex_TM_Split";
    if flags & SCRATCH_QUERY != 0 {
        return 0; // no scratch space needed
    }
    if new_tm_p.is_null() {
        fatal(call, &Error::BadArgument("new_tm_p is NULL".into()));
    }
    let t = team(call, parent);
    let new = ok(call, g(call).split(t, color, key));
    let h = new.map_or(std::ptr::null_mut(), new_team);
    // SAFETY: checked non-NULL; the caller's handle variable.
    unsafe { *new_tm_p = h };
    0
}

/// Collective over the team; the handle stays registered (a later use is still found as
/// a team, not as freed memory) but its members must not use it again.
#[no_mangle]
pub extern "C" fn gex_TM_Destroy(tm: Ev, _scratch_p: *mut c_void, _flags: u32) -> c_int {
    let call = "gex_TM_Destroy";
    let t = team(call, tm);
    ok(call, g(call).team_barrier(t));
    1
}

#[no_mangle]
pub unsafe extern "C" fn gex_Coll_BroadcastNB(
    tm: Ev,
    root: u32,
    dst: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    _flags: u32,
) -> Ev {
    let call = "gex_Coll_BroadcastNB";
    let t = team(call, tm);
    if nbytes == 0 {
        return std::ptr::null_mut();
    }
    if root >= t.size() {
        fatal(
            call,
            &Error::BadRank {
                rank: i64::from(root),
                n: t.size(),
            },
        );
    }
    if dst.is_null() || (t.me == root && src.is_null()) {
        fatal(call, &Error::BadArgument("a NULL buffer".into()));
    }
    let data = (t.me == root).then(|| {
        // SAFETY: the root's source of `nbytes` bytes, copied into the schedule now.
        unsafe { std::slice::from_raw_parts(src.cast::<u8>(), nbytes) }
    });
    // SAFETY: the caller's destination of `nbytes` bytes, the library's until the event
    // completes.
    let deliver = unsafe { into_dst(dst, nbytes) };
    let gn = g(call);
    let c = NbColl::bcast(ok(call, gn.nbc_begin(t)), root, data, nbytes, deliver);
    start(call, c)
}

/// Starts a schedule; its event (NULL when it finished at once).
pub(crate) fn start(call: &str, c: NbColl) -> Ev {
    let gn = g(call);
    let slot = ok(call, gn.nbc_start(c));
    gn.coll_event(slot) as Ev
}

/// The caller's destination, written when the collective finishes.
struct Dst(*mut u8, usize);
// SAFETY: the client's buffer, handed to the library until the event completes; written
// once, by whichever thread advances the collective to its end.
unsafe impl Send for Dst {}

/// # Safety
/// `dst` holds `len` bytes and stays valid until the collective's event completes.
unsafe fn into_dst(dst: *mut c_void, len: usize) -> Deliver {
    let d = Dst(dst.cast(), len);
    Box::new(move |r: &[u8]| {
        let d = &d;
        // SAFETY: the caller's contract: `d.1` bytes at `d.0`, not overlapping the
        // library's scratch.
        unsafe { std::ptr::copy_nonoverlapping(r.as_ptr(), d.0, r.len().min(d.1)) }
    })
}

/// The client's reduction function (`GEX_OP_USER`/`_NC`) and its data.
struct CFn {
    f: unsafe extern "C" fn(*const c_void, *mut c_void, usize, *const c_void),
    cdata: *const c_void,
}
// SAFETY: GASNet calls a collective's reduction function on whichever thread advances the
// collective; the client's function and data are for that.
unsafe impl Send for CFn {}

fn dt(call: &str, d: u32) -> Option<Dt> {
    if d == 64 {
        return None; // GEX_DT_USER
    }
    Some(
        Dt::from_gex(d)
            .unwrap_or_else(|| fatal(call, &Error::BadArgument(format!("data type {d:#x}")))),
    )
}

/// `GEX_OP_USER`, `GEX_OP_USER_NC`.
const OP_USER: u32 = 1 << 25;
const OP_USER_NC: u32 = 1 << 26;

fn red_op(call: &str, op: u32) -> RedOp {
    use crate::ratomic::AdOp;
    match crate::ratomic::AdOp::from_bit(op) {
        Some(AdOp::And) => RedOp::And,
        Some(AdOp::Or) => RedOp::Or,
        Some(AdOp::Xor) => RedOp::Xor,
        Some(AdOp::Add) => RedOp::Add,
        Some(AdOp::Mult) => RedOp::Mult,
        Some(AdOp::Min) => RedOp::Min,
        Some(AdOp::Max) => RedOp::Max,
        _ => fatal(
            call,
            &Error::BadArgument(format!("reduction operator {op:#x}")),
        ),
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn reduce(
    call: &str,
    tm: Ev,
    root: Option<u32>,
    dst: *mut c_void,
    src: *const c_void,
    dtype: u32,
    dt_sz: usize,
    dt_cnt: usize,
    op: u32,
    user_op: ReduceFn,
    cdata: *const c_void,
) -> Ev {
    let t = team(call, tm);
    let d = dt(call, dtype);
    let size = match d {
        Some(d) => d.size(),
        None => dt_sz,
    };
    if size == 0 || d.is_some_and(|d| d.size() != dt_sz) {
        fatal(
            call,
            &Error::BadArgument(format!("dt_sz {dt_sz} for data type {dtype:#x}")),
        );
    }
    let n = size * dt_cnt;
    if n == 0 {
        return std::ptr::null_mut();
    }
    if let Some(r) = root.filter(|&r| r >= t.size()) {
        fatal(
            call,
            &Error::BadRank {
                rank: i64::from(r),
                n: t.size(),
            },
        );
    }
    let here = root.is_none_or(|r| r == t.me);
    if src.is_null() || (here && dst.is_null()) {
        fatal(call, &Error::BadArgument("a NULL buffer".into()));
    }
    // SAFETY: the caller's source of dt_sz * dt_cnt bytes, copied now.
    let send = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), n) };
    let red: Box<dyn Reducer + Send> = if op == OP_USER || op == OP_USER_NC {
        let Some(f) = user_op else {
            fatal(
                call,
                &Error::BadArgument("GEX_OP_USER without a function".into()),
            );
        };
        let c = CFn { f, cdata };
        Box::new(User {
            size,
            commutative: op == OP_USER,
            f: move |a: &[u8], inout: &mut [u8], count: usize| {
                let c = &c;
                // SAFETY: the client's reduction function over `count` elements of its
                // type; `a` and `inout` hold that many.
                unsafe { (c.f)(a.as_ptr().cast(), inout.as_mut_ptr().cast(), count, c.cdata) }
            },
        })
    } else {
        match d {
            Some(d) => Box::new(ok(call, crate::coll::kernel(d, red_op(call, op)))),
            None => fatal(
                call,
                &Error::BadArgument("GEX_DT_USER needs GEX_OP_USER".into()),
            ),
        }
    };
    let deliver: Deliver = if here {
        // SAFETY: the caller's destination (at the root, or everywhere for ToAll), the
        // library's until the event completes.
        unsafe { into_dst(dst, n) }
    } else {
        Box::new(|_| {})
    };
    let b = ok(call, g(call).nbc_begin(t));
    start(call, NbColl::reduce(b, root, send, red, deliver))
}

#[no_mangle]
pub unsafe extern "C" fn gex_Coll_ReduceToOneNB(
    tm: Ev,
    root: u32,
    dst: *mut c_void,
    src: *const c_void,
    dtype: u32,
    dt_sz: usize,
    dt_cnt: usize,
    op: u32,
    user_op: ReduceFn,
    cdata: *const c_void,
    _flags: u32,
) -> Ev {
    // SAFETY: forwards the caller's buffers.
    unsafe {
        reduce(
            "gex_Coll_ReduceToOneNB",
            tm,
            Some(root),
            dst,
            src,
            dtype,
            dt_sz,
            dt_cnt,
            op,
            user_op,
            cdata,
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn gex_Coll_ReduceToAllNB(
    tm: Ev,
    dst: *mut c_void,
    src: *const c_void,
    dtype: u32,
    dt_sz: usize,
    dt_cnt: usize,
    op: u32,
    user_op: ReduceFn,
    cdata: *const c_void,
    _flags: u32,
) -> Ev {
    // SAFETY: forwards the caller's buffers.
    unsafe {
        reduce(
            "gex_Coll_ReduceToAllNB",
            tm,
            None,
            dst,
            src,
            dtype,
            dt_sz,
            dt_cnt,
            op,
            user_op,
            cdata,
        )
    }
}
