//! `gasnet_ratomic.h`: atomic domains (`gex_AD_Create`/`Destroy`) and `gex_AD_OpNB`/
//! `OpNBI`/`OpBlocking` for I32, U32, I64, U64, FLT, DBL.
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in the headers and GASNet's specification

use std::ffi::{c_int, c_void};
use std::sync::Mutex;

use super::{fatal, g, ok, team};
use crate::coll::{Dt, Team};
use crate::ratomic::{check, AdOp};
use crate::Error;

type Ev = *mut c_void;

/// An atomic domain: its team, type and the operations it was created for.
struct Ad {
    tm: &'static Team,
    tm_handle: usize,
    dt: Dt,
    ops: u32,
    flags: u32,
}

/// Live domains by handle (leaked boxes; a destroyed one is removed, so using it is an
/// error, not a read of freed memory).
static ADS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

fn ad(call: &str, h: Ev) -> &'static Ad {
    let known = ADS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .contains(&(h as usize));
    if !known {
        fatal(
            call,
            &Error::BadArgument(format!("{h:p} is not a live atomic domain")),
        );
    }
    // SAFETY: registered handles are leaked `Box<Ad>`s, never freed.
    unsafe { &*(h as *const Ad) }
}

fn dt_of(call: &str, d: u32) -> Dt {
    Dt::from_gex(d).unwrap_or_else(|| {
        fatal(
            call,
            &Error::BadArgument(format!("data type {d:#x} for atomics")),
        )
    })
}

/// Collective over `tm`: every member creates the domain (a barrier).
#[no_mangle]
pub unsafe extern "C" fn gex_AD_Create(
    ad_p: *mut Ev,
    tm: Ev,
    dt: u32,
    ops: u32,
    flags: u32,
) -> c_int {
    let call = "gex_AD_Create";
    if ad_p.is_null() {
        fatal(call, &Error::BadArgument("ad_p is NULL".into()));
    }
    let t = team(call, tm);
    let d = dt_of(call, dt);
    for b in 0..32 {
        if ops & (1 << b) != 0 {
            match AdOp::from_bit(1 << b) {
                Some(op) => ok(call, check(d, op)),
                None => fatal(call, &Error::BadArgument(format!("operation bit {b}"))),
            }
        }
    }
    ok(call, g(call).team_barrier(t));
    let h = Box::into_raw(Box::new(Ad {
        tm: t,
        tm_handle: tm as usize,
        dt: d,
        ops,
        flags,
    })) as usize;
    ADS.lock().unwrap_or_else(|p| p.into_inner()).push(h);
    // SAFETY: checked non-NULL; the caller's handle variable.
    unsafe { *ad_p = h as Ev };
    0
}

/// Collective: a barrier, then the handle is no longer valid.
#[no_mangle]
pub extern "C" fn gex_AD_Destroy(h: Ev) {
    let call = "gex_AD_Destroy";
    let a = ad(call, h);
    ok(call, g(call).team_barrier(a.tm));
    ADS.lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|&x| x != h as usize);
}

#[no_mangle]
pub extern "C" fn gex_AD_QueryTM(h: Ev) -> Ev {
    ad("gex_AD_QueryTM", h).tm_handle as Ev
}
#[no_mangle]
pub extern "C" fn gex_AD_QueryDT(h: Ev) -> u32 {
    ad("gex_AD_QueryDT", h).dt.gex()
}
#[no_mangle]
pub extern "C" fn gex_AD_QueryOps(h: Ev) -> u32 {
    ad("gex_AD_QueryOps", h).ops
}
#[no_mangle]
pub extern "C" fn gex_AD_QueryFlags(h: Ev) -> u32 {
    ad("gex_AD_QueryFlags", h).flags
}

/// One operation: checks the domain's type and operations, then runs it.
#[allow(clippy::too_many_arguments)]
unsafe fn op(
    call: &str,
    h: Ev,
    want: Dt,
    result: *mut u8,
    rank: u32,
    addr: Ev,
    opcode: u32,
    a: u64,
    b: u64,
) -> crate::rma::Pending {
    let d = ad(call, h);
    if d.dt != want {
        fatal(
            call,
            &Error::BadArgument(format!("the domain is for {:?}, not {want:?}", d.dt)),
        );
    }
    let Some(o) = AdOp::from_bit(opcode) else {
        fatal(call, &Error::BadArgument(format!("operation {opcode:#x}")))
    };
    if d.ops & opcode == 0 {
        fatal(
            call,
            &Error::BadArgument(format!("{o:?} was not in the domain's operations")),
        );
    }
    if o.fetches() && result.is_null() {
        fatal(
            call,
            &Error::BadArgument(format!("{o:?} fetches but result_p is NULL")),
        );
    }
    let r = ok(call, d.tm.job_rank(rank));
    let res = if o.fetches() {
        result
    } else {
        std::ptr::null_mut()
    };
    // SAFETY: the caller's result location of the element's size, until completion.
    ok(call, unsafe {
        g(call).amo(want, o, r, addr as usize, a, b, res)
    })
}

macro_rules! ad_ops {
    ($($t:ty, $dt:expr, $bits:expr, $nb:ident, $nbi:ident, $bl:ident;)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $nb(h: Ev, result: *mut $t, rank: u32, addr: Ev, opcode: u32, a: $t, b: $t, _f: u32) -> Ev {
            // SAFETY: forwards the caller's result location.
            let p = unsafe { op(stringify!($nb), h, $dt, result.cast(), rank, addr, opcode, $bits(a), $bits(b)) };
            g(stringify!($nb)).event_for(p) as Ev
        }
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $nbi(h: Ev, result: *mut $t, rank: u32, addr: Ev, opcode: u32, a: $t, b: $t, _f: u32) -> c_int {
            // SAFETY: as above.
            let p = unsafe { op(stringify!($nbi), h, $dt, result.cast(), rank, addr, opcode, $bits(a), $bits(b)) };
            ok(stringify!($nbi), g(stringify!($nbi)).nbi_add(p, true));
            0
        }
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $bl(h: Ev, result: *mut $t, rank: u32, addr: Ev, opcode: u32, a: $t, b: $t, _f: u32) {
            // SAFETY: as above.
            let p = unsafe { op(stringify!($bl), h, $dt, result.cast(), rank, addr, opcode, $bits(a), $bits(b)) };
            ok(stringify!($bl), g(stringify!($bl)).complete(p));
        }
    )*};
}

ad_ops! {
    i32, Dt::I32, |v: i32| u64::from(v as u32), gex_AD_OpNB_I32, gex_AD_OpNBI_I32, gex_AD_OpBlocking_I32;
    u32, Dt::U32, u64::from, gex_AD_OpNB_U32, gex_AD_OpNBI_U32, gex_AD_OpBlocking_U32;
    i64, Dt::I64, |v: i64| v as u64, gex_AD_OpNB_I64, gex_AD_OpNBI_I64, gex_AD_OpBlocking_I64;
    u64, Dt::U64, |v: u64| v, gex_AD_OpNB_U64, gex_AD_OpNBI_U64, gex_AD_OpBlocking_U64;
    f32, Dt::Flt, |v: f32| u64::from(v.to_bits()), gex_AD_OpNB_FLT, gex_AD_OpNBI_FLT, gex_AD_OpBlocking_FLT;
    f64, Dt::Dbl, f64::to_bits, gex_AD_OpNB_DBL, gex_AD_OpNBI_DBL, gex_AD_OpBlocking_DBL;
}
