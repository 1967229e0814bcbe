//! Data movement (contiguous, strided, vector; blocking and `Nb` forms), handles, values,
//! read-modify-write and mutexes. Every call checks all of its remote ranges (rank in
//! range, inside one allocation; stride arrays consistent with the counts) before it
//! moves a byte, so bad input fails with nothing written.
//!
//! Every operation completes before its call returns (crate docs), so a non-blocking
//! call's handle is complete at once: `ARMCI_Wait`/`Test` only check it.
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in armci.h

use std::ffi::{c_double, c_float, c_int, c_long, c_void};

use super::{a, ok, A};
use crate::acc::{self, AccType};
use crate::engine::{Path, Rmw, Target};
use crate::pipe::{Batch, Op};
use crate::strided::Strided;
use crate::{fatal, Error};
use skifch::rma::{amo_at, Amo};

fn locate(call: &str, w: &A, proc: c_int, addr: *const c_void, len: usize) -> Target {
    let p = ok(call, w.proc(proc.into()));
    ok(call, w.locate(p, addr as usize, len))
}

pub(super) fn len_of(call: &str, n: c_int) -> usize {
    usize::try_from(n)
        .unwrap_or_else(|_| fatal(call, &Error::BadArgument(format!("negative length {n}"))))
}

unsafe fn put(call: &str, src: *const c_void, dst: *mut c_void, n: c_int, proc: c_int) -> c_int {
    let w = a(call);
    // (a negative `n` is huge here: never direct, reported below)
    if let Some(d) = w.direct(proc.into(), dst as usize, n as usize) {
        // SAFETY: the caller's source of `n` bytes; `d..d+n` is mapped (the hint).
        unsafe { skifch::mem::copy_move(src.cast(), d, n as usize) };
        return 0;
    }
    let n = len_of(call, n);
    let t = locate(call, w, proc, dst, n);
    // SAFETY: the caller's source buffer of `n` bytes; `t` located for `n` bytes.
    ok(call, unsafe { w.put_to(src.cast(), t, n) });
    0
}

unsafe fn get(call: &str, src: *const c_void, dst: *mut c_void, n: c_int, proc: c_int) -> c_int {
    let w = a(call);
    // (the general path asks whether a rank was lost, every call or when the tick says)
    if let Some(s) = w
        .direct(proc.into(), src as usize, n as usize)
        .filter(|_| w.tick())
    {
        // SAFETY: `s..s+n` is mapped (the hint); the caller's destination of `n` bytes.
        unsafe { skifch::mem::copy_move(s, dst.cast(), n as usize) };
        return 0;
    }
    let n = len_of(call, n);
    let t = locate(call, w, proc, src, n);
    // SAFETY: the caller's destination buffer of `n` bytes; `t` located for `n` bytes.
    ok(call, unsafe { w.get_from(t, dst.cast(), n) });
    0
}

/// The type and scale of an accumulate.
unsafe fn acc_args(call: &str, ty: c_int, scale: *const c_void) -> (AccType, acc::Scale) {
    let t = ok(call, AccType::from_code(ty.into()));
    if scale.is_null() {
        fatal(call, &Error::BadArgument("scale is NULL".into()));
    }
    // SAFETY: the caller's scale of the accumulate type.
    (t, unsafe { acc::read_scale(t, scale.cast()) })
}

unsafe fn accumulate(
    call: &str,
    ty: c_int,
    scale: *const c_void,
    src: *const c_void,
    dst: *mut c_void,
    n: c_int,
    proc: c_int,
) -> c_int {
    let w = a(call);
    // SAFETY: forwards the caller's contract.
    let (t, s) = unsafe { acc_args(call, ty, scale) };
    let n = len_of(call, n);
    let target = locate(call, w, proc, dst, n);
    ok(call, acc::check(t, dst as usize, n));
    // SAFETY: the caller's source of `n` bytes; the target located for `n` bytes.
    ok(call, unsafe { w.acc_to(t, s, src.cast(), target, n) });
    0
}

/// The stride descriptor of a strided call, checked.
pub(super) unsafe fn strided(
    call: &str,
    src: *const c_int,
    dst: *const c_int,
    count: *const c_int,
    levels: c_int,
) -> Strided {
    let l = usize::try_from(levels).unwrap_or_else(|_| {
        fatal(
            call,
            &Error::BadStrides(format!("stride_levels = {levels} is negative")),
        )
    });
    if count.is_null() || (l > 0 && (src.is_null() || dst.is_null())) {
        fatal(
            call,
            &Error::BadStrides("a NULL stride or count array".into()),
        );
    }
    let read = |p: *const c_int, n: usize| -> &[c_int] {
        if n == 0 {
            return &[];
        }
        // SAFETY: the caller's arrays: `levels` strides, `levels + 1` counts (not NULL:
        // checked above).
        unsafe { std::slice::from_raw_parts(p, n) }
    };
    ok(
        call,
        Strided::new(read(src, l), read(dst, l), read(count, l + 1)),
    )
}

/// The direct path's fast way for the commonest strided call, a 2-D patch (one stride
/// level) in memory the hint covers: the rows are copied at once, no descriptor
/// built. Anything else (more levels, counts or strides the general path must check and
/// name, memory not in the hint, a lost peer) returns false: the caller takes the general
/// path, which checks everything again.
///
/// # Safety
/// The caller's ARMCI arguments (`put`: `ARMCI_PutS`'s, else `ARMCI_GetS`'s).
#[allow(clippy::too_many_arguments)]
unsafe fn rows_direct(
    w: &A,
    put: bool,
    src: *mut c_void,
    ss: *const c_int,
    dst: *mut c_void,
    ds: *const c_int,
    count: *const c_int,
    levels: c_int,
    proc: c_int,
) -> bool {
    if levels != 1 || count.is_null() || ss.is_null() || ds.is_null() {
        return false;
    }
    // SAFETY: one stride level: one stride per side and two counts (the caller's arrays).
    let (len, rows, s_st, d_st) = unsafe { (*count, *count.add(1), *ss, *ds) };
    if len <= 0 || rows <= 0 || s_st < len || d_st < len {
        return false;
    }
    let (len, rows, s_st, d_st) = (len as usize, rows as usize, s_st as usize, d_st as usize);
    // (each below 2^31: the extent cannot overflow)
    let (remote, r_st) = if put { (dst, d_st) } else { (src, s_st) };
    let Some(base) = w.direct(proc.into(), remote as usize, r_st * (rows - 1) + len) else {
        return false;
    };
    if !put && !w.tick() {
        return false;
    }
    let (from, to) = if put {
        (src.cast::<u8>().cast_const(), base)
    } else {
        (base.cast_const(), dst.cast::<u8>())
    };
    for i in 0..rows {
        // SAFETY: row i of each side lies in its extent: the remote one mapped (the
        // hint covers it), the local one the caller's.
        unsafe { skifch::mem::copy_move(from.add(i * s_st), to.add(i * d_st), len) };
    }
    true
}

/// A strided put, get or accumulate of `d` to or from `proc`.
unsafe fn strided_op(
    call: &str,
    op: Op,
    src: *mut c_void,
    d: &Strided,
    dst: *mut c_void,
    proc: c_int,
) -> c_int {
    let w = a(call);
    let p = ok(call, w.proc(proc.into()));
    if d.bytes() == 0 {
        return 0;
    }
    let (remote, extent) = match op {
        Op::Get => (src, d.src_extent()),
        _ => (dst, d.dst_extent()),
    };
    let (s, dd) = (src.cast::<u8>(), dst.cast::<u8>());
    // The direct path's fast way, as for the contiguous calls (the hint).
    match (op, w.direct(proc.into(), remote as usize, extent)) {
        (Op::Put, Some(base)) => {
            // SAFETY: the caller's strided source; the destination extent is mapped.
            unsafe { d.copy(s, base) };
            return 0;
        }
        (Op::Get, Some(base)) => {
            ok(call, w.alive());
            // SAFETY: the source extent is mapped; the caller's strided destination.
            unsafe { d.copy(base, dd) };
            return 0;
        }
        _ => {}
    }
    let t = ok(call, w.locate(p, remote as usize, extent));
    if let Op::Acc(ty, _) = op {
        ok(call, acc::check(ty, dst as usize, d.count[0]));
        ok(
            call,
            d.for_each(|_, doff, n| acc::check(ty, dst as usize + doff, n)),
        );
    }
    match op {
        Op::Put => {
            // SAFETY: the local side is the caller's strided buffer; `t` was located for
            // the remote extent.
            ok(call, unsafe { w.put_strided(s, d, t) });
            return 0;
        }
        Op::Get => {
            // SAFETY: as above.
            ok(call, unsafe { w.get_strided(t, d, dd) });
            return 0;
        }
        Op::Acc(..) => {}
    }
    if t.path() == Path::Messages {
        // The pieces pipelined (crate::pipe), not one round trip each.
        let mut b = Batch::new(w.ep(), t.proc);
        // SAFETY: the local side is the caller's strided buffer (its extent); the remote
        // side lies in `t`'s allocation (located for the whole extent above).
        let r =
            d.for_each(|so, doff, n| unsafe { b.piece(op, s.add(so), t.addr + doff, n, w.chunk) });
        ok(call, r.and_then(|()| b.finish()));
        return 0;
    }
    let r = d.for_each(|so, doff, n| {
        // SAFETY: as above.
        unsafe {
            match op {
                Op::Put => w.put_to(s.add(so), t.at(doff), n),
                Op::Get => w.get_from(t.at(so), dd.add(doff), n),
                Op::Acc(ty, sc) => w.acc_to(ty, sc, s.add(so), t.at(doff), n),
            }
        }
    });
    ok(call, r);
    0
}

#[no_mangle]
pub unsafe extern "C" fn PARMCI_Put(
    src: *mut c_void,
    dst: *mut c_void,
    n: c_int,
    proc: c_int,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe { put("ARMCI_Put", src, dst, n, proc) }
}
#[no_mangle]
pub unsafe extern "C" fn PARMCI_Get(
    src: *mut c_void,
    dst: *mut c_void,
    n: c_int,
    proc: c_int,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe { get("ARMCI_Get", src, dst, n, proc) }
}
#[no_mangle]
pub unsafe extern "C" fn PARMCI_Acc(
    ty: c_int,
    scale: *mut c_void,
    src: *mut c_void,
    dst: *mut c_void,
    n: c_int,
    proc: c_int,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe { accumulate("ARMCI_Acc", ty, scale, src, dst, n, proc) }
}

#[no_mangle]
pub unsafe extern "C" fn PARMCI_PutS(
    src: *mut c_void,
    ss: *mut c_int,
    dst: *mut c_void,
    ds: *mut c_int,
    count: *mut c_int,
    levels: c_int,
    proc: c_int,
) -> c_int {
    let call = "ARMCI_PutS";
    // SAFETY: forwards the caller's contract.
    if unsafe { rows_direct(a(call), true, src, ss, dst, ds, count, levels, proc) } {
        return 0;
    }
    // SAFETY: forwards the caller's contract.
    unsafe {
        strided_op(
            call,
            Op::Put,
            src,
            &strided(call, ss, ds, count, levels),
            dst,
            proc,
        )
    }
}
#[no_mangle]
pub unsafe extern "C" fn PARMCI_GetS(
    src: *mut c_void,
    ss: *mut c_int,
    dst: *mut c_void,
    ds: *mut c_int,
    count: *mut c_int,
    levels: c_int,
    proc: c_int,
) -> c_int {
    let call = "ARMCI_GetS";
    // SAFETY: forwards the caller's contract.
    if unsafe { rows_direct(a(call), false, src, ss, dst, ds, count, levels, proc) } {
        return 0;
    }
    // SAFETY: forwards the caller's contract.
    unsafe {
        strided_op(
            call,
            Op::Get,
            src,
            &strided(call, ss, ds, count, levels),
            dst,
            proc,
        )
    }
}
#[no_mangle]
pub unsafe extern "C" fn PARMCI_AccS(
    ty: c_int,
    scale: *mut c_void,
    src: *mut c_void,
    ss: *mut c_int,
    dst: *mut c_void,
    ds: *mut c_int,
    count: *mut c_int,
    levels: c_int,
    proc: c_int,
) -> c_int {
    let call = "ARMCI_AccS";
    // SAFETY: forwards the caller's contract.
    unsafe {
        let (t, s) = acc_args(call, ty, scale);
        strided_op(
            call,
            Op::Acc(t, s),
            src,
            &strided(call, ss, ds, count, levels),
            dst,
            proc,
        )
    }
}

/// Puts, then sets the remote `int` flag to `value` once the data is there.
#[no_mangle]
pub unsafe extern "C" fn PARMCI_Put_flag(
    src: *mut c_void,
    dst: *mut c_void,
    n: c_int,
    flag: *mut c_int,
    value: c_int,
    proc: c_int,
) -> c_int {
    let call = "ARMCI_Put_flag";
    let w = a(call);
    let ft = locate(call, w, proc, flag.cast(), 4);
    // SAFETY: forwards the caller's contract.
    unsafe { put(call, src, dst, n, proc) };
    ok(call, w.fence());
    // SAFETY: a local int; `ft` located for 4 bytes.
    ok(call, unsafe { w.put_to((&raw const value).cast(), ft, 4) });
    0
}
#[no_mangle]
pub unsafe extern "C" fn PARMCI_PutS_flag(
    src: *mut c_void,
    ss: *mut c_int,
    dst: *mut c_void,
    ds: *mut c_int,
    count: *mut c_int,
    levels: c_int,
    flag: *mut c_int,
    value: c_int,
    proc: c_int,
) -> c_int {
    let call = "ARMCI_PutS_flag";
    let w = a(call);
    let ft = locate(call, w, proc, flag.cast(), 4);
    // SAFETY: forwards the caller's contract.
    unsafe {
        strided_op(
            call,
            Op::Put,
            src,
            &strided(call, ss, ds, count, levels),
            dst,
            proc,
        )
    };
    ok(call, w.fence());
    // SAFETY: a local int; `ft` located for 4 bytes.
    ok(call, unsafe { w.put_to((&raw const value).cast(), ft, 4) });
    0
}

// ---- vectors ----

/// The segments of `iov[0..len]` as (local, remote) address pairs with their length,
/// every remote range located first.
unsafe fn segments(
    call: &str,
    iov: *const ArmciGiov,
    len: c_int,
    remote_is_dst: bool,
    proc: c_int,
) -> Vec<(*mut u8, Target, usize)> {
    let w = a(call);
    let n = len_of(call, len);
    if n > 0 && iov.is_null() {
        fatal(call, &Error::BadArgument("iov is NULL".into()));
    }
    let mut out = Vec::new();
    for i in 0..n {
        // SAFETY: the caller's array of `len` descriptors.
        let g = unsafe { &*iov.add(i) };
        let bytes = len_of(call, g.bytes);
        let segs = len_of(call, g.ptr_array_len);
        for k in 0..segs {
            // SAFETY: each descriptor's two arrays hold `ptr_array_len` pointers.
            let (s, d) = unsafe { (*g.src.add(k), *g.dst.add(k)) };
            let (local, remote) = if remote_is_dst { (s, d) } else { (d, s) };
            out.push((
                local.cast::<u8>(),
                locate(call, w, proc, remote, bytes),
                bytes,
            ));
        }
    }
    out
}

/// `armci_giov_t`.
#[repr(C)]
pub struct ArmciGiov {
    src: *mut *mut c_void,
    dst: *mut *mut c_void,
    bytes: c_int,
    ptr_array_len: c_int,
}

unsafe fn vector(call: &str, op: Op, iov: *const ArmciGiov, len: c_int, proc: c_int) -> c_int {
    let w = a(call);
    // SAFETY: forwards the caller's contract.
    let segs = unsafe { segments(call, iov, len, !matches!(op, Op::Get), proc) };
    if let Op::Acc(ty, _) = op {
        for &(_, t, n) in &segs {
            ok(call, acc::check(ty, t.addr(), n));
        }
    }
    // Message-path segments pipelined (crate::pipe), not one round trip each.
    let mut batch: Option<Batch<'_, _>> = None;
    for (l, t, n) in segs {
        // SAFETY: the local segment is the caller's; `t` located for `n` bytes.
        let r = unsafe {
            match (op, t.path()) {
                (_, Path::Messages) => {
                    let b = batch.get_or_insert_with(|| Batch::new(w.ep(), t.proc));
                    b.piece(op, l, t.addr, n, w.chunk)
                }
                (Op::Put, _) => w.put_to(l, t, n),
                (Op::Get, _) => w.get_from(t, l, n),
                (Op::Acc(ty, s), _) => w.acc_to(ty, s, l, t, n),
            }
        };
        ok(call, r);
    }
    if let Some(b) = batch {
        ok(call, b.finish());
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn PARMCI_PutV(iov: *mut ArmciGiov, len: c_int, proc: c_int) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe { vector("ARMCI_PutV", Op::Put, iov, len, proc) }
}
#[no_mangle]
pub unsafe extern "C" fn PARMCI_GetV(iov: *mut ArmciGiov, len: c_int, proc: c_int) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe { vector("ARMCI_GetV", Op::Get, iov, len, proc) }
}
#[no_mangle]
pub unsafe extern "C" fn PARMCI_AccV(
    ty: c_int,
    scale: *mut c_void,
    iov: *mut ArmciGiov,
    len: c_int,
    proc: c_int,
) -> c_int {
    let call = "ARMCI_AccV";
    // SAFETY: forwards the caller's contract.
    unsafe {
        let (t, s) = acc_args(call, ty, scale);
        vector(call, Op::Acc(t, s), iov, len, proc)
    }
}

// ---- handles ----

/// `armci_hdl_t`.
#[repr(C)]
pub struct ArmciHdl {
    target: c_int,
    aggregate: c_int,
}

#[no_mangle]
pub unsafe extern "C" fn PARMCI_INIT_HANDLE(h: *mut ArmciHdl) {
    // SAFETY: the caller's handle or NULL.
    if let Some(h) = unsafe { h.as_mut() } {
        h.target = -1;
        h.aggregate = 0;
    }
}
#[no_mangle]
pub unsafe extern "C" fn PARMCI_SET_AGGREGATE_HANDLE(h: *mut ArmciHdl) {
    // SAFETY: the caller's handle or NULL.
    if let Some(h) = unsafe { h.as_mut() } {
        h.aggregate = 1;
    }
}
#[no_mangle]
pub unsafe extern "C" fn PARMCI_UNSET_AGGREGATE_HANDLE(h: *mut ArmciHdl) {
    // SAFETY: the caller's handle or NULL.
    if let Some(h) = unsafe { h.as_mut() } {
        h.aggregate = 0;
    }
}

/// Records the operation's target in the handle (NULL: an implicit handle).
unsafe fn issued(h: *mut ArmciHdl, proc: c_int) -> c_int {
    // SAFETY: the caller's handle or NULL.
    if let Some(h) = unsafe { h.as_mut() } {
        h.target = proc;
    }
    0
}

/// Completes the handle's operation: already complete (module docs).
#[no_mangle]
pub unsafe extern "C" fn PARMCI_Wait(h: *mut ArmciHdl) -> c_int {
    let call = "ARMCI_Wait";
    a(call);
    // SAFETY: the caller's handle or NULL.
    if let Some(h) = unsafe { h.as_mut() } {
        h.target = -1;
    }
    0
}
/// 0: the handle's operation is complete (always, module docs).
#[no_mangle]
pub unsafe extern "C" fn PARMCI_Test(_h: *mut ArmciHdl) -> c_int {
    a("ARMCI_Test");
    0
}
#[no_mangle]
pub extern "C" fn PARMCI_WaitProc(proc: c_int) -> c_int {
    let call = "ARMCI_WaitProc";
    ok(call, a(call).proc(proc.into()));
    0
}
#[no_mangle]
pub extern "C" fn PARMCI_WaitAll() -> c_int {
    a("ARMCI_WaitAll");
    0
}

macro_rules! nb {
    ($($p:ident => $blocking:ident($($a:ident : $t:ty),*) proc $proc:ident;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $p($($a: $t,)* h: *mut ArmciHdl) -> c_int {
            // SAFETY: forwards the caller's contract.
            unsafe {
                $blocking($($a),*);
                issued(h, $proc)
            }
        }
    )*};
}
nb! {
    PARMCI_NbPut => PARMCI_Put(src: *mut c_void, dst: *mut c_void, n: c_int, proc: c_int) proc proc;
    PARMCI_NbGet => PARMCI_Get(src: *mut c_void, dst: *mut c_void, n: c_int, proc: c_int) proc proc;
    PARMCI_NbAcc => PARMCI_Acc(ty: c_int, scale: *mut c_void, src: *mut c_void, dst: *mut c_void, n: c_int, proc: c_int) proc proc;
    PARMCI_NbPutS => PARMCI_PutS(src: *mut c_void, ss: *mut c_int, dst: *mut c_void, ds: *mut c_int, count: *mut c_int, levels: c_int, proc: c_int) proc proc;
    PARMCI_NbGetS => PARMCI_GetS(src: *mut c_void, ss: *mut c_int, dst: *mut c_void, ds: *mut c_int, count: *mut c_int, levels: c_int, proc: c_int) proc proc;
    PARMCI_NbAccS => PARMCI_AccS(ty: c_int, scale: *mut c_void, src: *mut c_void, ss: *mut c_int, dst: *mut c_void, ds: *mut c_int, count: *mut c_int, levels: c_int, proc: c_int) proc proc;
    PARMCI_NbPutV => PARMCI_PutV(iov: *mut ArmciGiov, len: c_int, proc: c_int) proc proc;
    PARMCI_NbGetV => PARMCI_GetV(iov: *mut ArmciGiov, len: c_int, proc: c_int) proc proc;
    PARMCI_NbAccV => PARMCI_AccV(ty: c_int, scale: *mut c_void, iov: *mut ArmciGiov, len: c_int, proc: c_int) proc proc;
    PARMCI_NbPutValueInt => PARMCI_PutValueInt(v: c_int, dst: *mut c_void, proc: c_int) proc proc;
    PARMCI_NbPutValueLong => PARMCI_PutValueLong(v: c_long, dst: *mut c_void, proc: c_int) proc proc;
    PARMCI_NbPutValueFloat => PARMCI_PutValueFloat(v: c_float, dst: *mut c_void, proc: c_int) proc proc;
    PARMCI_NbPutValueDouble => PARMCI_PutValueDouble(v: c_double, dst: *mut c_void, proc: c_int) proc proc;
}

// ---- values ----

macro_rules! values {
    ($($put:ident, $get:ident, $t:ty, $pname:literal, $gname:literal;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $put(v: $t, dst: *mut c_void, proc: c_int) -> c_int {
            // SAFETY: a local value of its size.
            unsafe { put($pname, (&raw const v).cast(), dst, size_of::<$t>() as c_int, proc) }
        }
        #[no_mangle]
        pub unsafe extern "C" fn $get(src: *mut c_void, proc: c_int) -> $t {
            let mut v: $t = Default::default();
            // SAFETY: a local value of its size.
            unsafe { get($gname, src, (&raw mut v).cast(), size_of::<$t>() as c_int, proc) };
            v
        }
    )*};
}
values! {
    PARMCI_PutValueInt, PARMCI_GetValueInt, c_int, "ARMCI_PutValueInt", "ARMCI_GetValueInt";
    PARMCI_PutValueLong, PARMCI_GetValueLong, c_long, "ARMCI_PutValueLong", "ARMCI_GetValueLong";
    PARMCI_PutValueFloat, PARMCI_GetValueFloat, c_float, "ARMCI_PutValueFloat", "ARMCI_GetValueFloat";
    PARMCI_PutValueDouble, PARMCI_GetValueDouble, c_double, "ARMCI_PutValueDouble", "ARMCI_GetValueDouble";
}

// ---- read-modify-write and mutexes ----

/// `ARMCI_Rmw`: fetch-and-add `value` to, or swap `*ploc` with, the `int`/`long` at `prem`
/// of `proc`; the old remote value lands in `*ploc`. On memory the hint covers (the
/// direct path) it is one CPU atomic on the mapped word; anything else takes
/// [`rmw_general`], which checks everything and names what is wrong.
#[no_mangle]
pub unsafe extern "C" fn PARMCI_Rmw(
    op: c_int,
    ploc: *mut c_void,
    prem: *mut c_void,
    value: c_int,
    proc: c_int,
) -> c_int {
    let call = "ARMCI_Rmw";
    let w = a(call);
    let width = match op {
        0 | 2 => 4,
        1 | 3 => size_of::<c_long>(),
        // SAFETY: forwards the caller's arguments.
        _ => return unsafe { rmw_general(w, op, ploc, prem, value, proc) },
    };
    let fast = w
        .direct(proc.into(), prem as usize, width)
        .filter(|_| !ploc.is_null() && (prem as usize).is_multiple_of(width));
    // (the general path asks whether a rank was lost, every call or when the tick says)
    let Some(p) = fast.filter(|_| w.tick()) else {
        // SAFETY: forwards the caller's arguments.
        return unsafe { rmw_general(w, op, ploc, prem, value, proc) };
    };
    // SAFETY: `p` is mapped (the hint) and aligned to its width (the mapping keeps the
    // owner's alignment, both page-aligned); peers reach it only atomically. `ploc` is
    // the caller's local int or long (not NULL).
    unsafe {
        let (int, long) = (ploc.cast::<c_int>(), ploc.cast::<c_long>());
        let add = |v: u64| amo_at(p, width, Amo::Add(v));
        let swap = |v: u64| amo_at(p, width, Amo::Swap(v));
        match op {
            0 => *int = add(value as u32 as u64) as c_int,
            1 => *long = add(i64::from(value) as u64) as c_long,
            2 => *int = swap(*int as u32 as u64) as c_int,
            _ => *long = swap(*long as u64) as c_long,
        }
    }
    0
}

/// `ARMCI_Rmw` the general way: every argument checked, the target located in the table,
/// the atomic done by [`crate::Armci::rmw`] on either path.
#[cold]
#[inline(never)]
unsafe fn rmw_general(
    w: &A,
    op: c_int,
    ploc: *mut c_void,
    prem: *mut c_void,
    value: c_int,
    proc: c_int,
) -> c_int {
    let call = "ARMCI_Rmw";
    let op = match op {
        0 => Rmw::FetchAdd,
        1 => Rmw::FetchAddLong,
        2 => Rmw::Swap,
        3 => Rmw::SwapLong,
        _ => fatal(
            call,
            &Error::BadArgument(format!(
                "operation {op} is not one of ARMCI_FETCH_AND_ADD(_LONG), ARMCI_SWAP(_LONG)"
            )),
        ),
    };
    if ploc.is_null() {
        fatal(call, &Error::BadArgument("ploc is NULL".into()));
    }
    let long = matches!(op, Rmw::FetchAddLong | Rmw::SwapLong);
    let width = if long { size_of::<c_long>() } else { 4 };
    let operand: i64 = match op {
        Rmw::FetchAdd | Rmw::FetchAddLong => i64::from(value),
        // SAFETY: the caller's local int.
        Rmw::Swap => i64::from(unsafe { *ploc.cast::<c_int>() }),
        // SAFETY: the caller's local long.
        Rmw::SwapLong => unsafe { *ploc.cast::<c_long>() },
    };
    let old = ok(call, w.rmw(op, locate(call, w, proc, prem, width), operand));
    // SAFETY: the caller's local int or long.
    unsafe {
        if long {
            *ploc.cast::<c_long>() = old as c_long;
        } else {
            *ploc.cast::<c_int>() = old as c_int;
        }
    }
    0
}

#[no_mangle]
pub extern "C" fn PARMCI_Create_mutexes(count: c_int) -> c_int {
    let call = "ARMCI_Create_mutexes";
    ok(call, a(call).create_mutexes(len_of(call, count)));
    0
}
#[no_mangle]
pub extern "C" fn PARMCI_Destroy_mutexes() -> c_int {
    let call = "ARMCI_Destroy_mutexes";
    ok(call, a(call).destroy_mutexes());
    0
}
#[no_mangle]
pub extern "C" fn PARMCI_Lock(m: c_int, proc: c_int) {
    let call = "ARMCI_Lock";
    ok(call, a(call).lock(m.into(), proc.into()));
}
#[no_mangle]
pub extern "C" fn PARMCI_Unlock(m: c_int, proc: c_int) {
    let call = "ARMCI_Unlock";
    ok(call, a(call).unlock(m.into(), proc.into()));
}

profiled! {
    ARMCI_Put => PARMCI_Put(src: *mut c_void, dst: *mut c_void, n: c_int, proc: c_int) -> c_int;
    ARMCI_Get => PARMCI_Get(src: *mut c_void, dst: *mut c_void, n: c_int, proc: c_int) -> c_int;
    ARMCI_Acc => PARMCI_Acc(ty: c_int, scale: *mut c_void, src: *mut c_void, dst: *mut c_void, n: c_int, proc: c_int) -> c_int;
    ARMCI_PutS => PARMCI_PutS(src: *mut c_void, ss: *mut c_int, dst: *mut c_void, ds: *mut c_int, count: *mut c_int, levels: c_int, proc: c_int) -> c_int;
    ARMCI_GetS => PARMCI_GetS(src: *mut c_void, ss: *mut c_int, dst: *mut c_void, ds: *mut c_int, count: *mut c_int, levels: c_int, proc: c_int) -> c_int;
    ARMCI_AccS => PARMCI_AccS(ty: c_int, scale: *mut c_void, src: *mut c_void, ss: *mut c_int, dst: *mut c_void, ds: *mut c_int, count: *mut c_int, levels: c_int, proc: c_int) -> c_int;
    ARMCI_Put_flag => PARMCI_Put_flag(src: *mut c_void, dst: *mut c_void, n: c_int, flag: *mut c_int, value: c_int, proc: c_int) -> c_int;
    ARMCI_PutS_flag => PARMCI_PutS_flag(src: *mut c_void, ss: *mut c_int, dst: *mut c_void, ds: *mut c_int, count: *mut c_int, levels: c_int, flag: *mut c_int, value: c_int, proc: c_int) -> c_int;
    ARMCI_PutV => PARMCI_PutV(iov: *mut ArmciGiov, len: c_int, proc: c_int) -> c_int;
    ARMCI_GetV => PARMCI_GetV(iov: *mut ArmciGiov, len: c_int, proc: c_int) -> c_int;
    ARMCI_AccV => PARMCI_AccV(ty: c_int, scale: *mut c_void, iov: *mut ArmciGiov, len: c_int, proc: c_int) -> c_int;
    ARMCI_INIT_HANDLE => PARMCI_INIT_HANDLE(h: *mut ArmciHdl);
    ARMCI_SET_AGGREGATE_HANDLE => PARMCI_SET_AGGREGATE_HANDLE(h: *mut ArmciHdl);
    ARMCI_UNSET_AGGREGATE_HANDLE => PARMCI_UNSET_AGGREGATE_HANDLE(h: *mut ArmciHdl);
    ARMCI_Wait => PARMCI_Wait(h: *mut ArmciHdl) -> c_int;
    ARMCI_Test => PARMCI_Test(h: *mut ArmciHdl) -> c_int;
    ARMCI_WaitProc => PARMCI_WaitProc(proc: c_int) -> c_int;
    ARMCI_WaitAll => PARMCI_WaitAll() -> c_int;
    ARMCI_NbPut => PARMCI_NbPut(src: *mut c_void, dst: *mut c_void, n: c_int, proc: c_int, h: *mut ArmciHdl) -> c_int;
    ARMCI_NbGet => PARMCI_NbGet(src: *mut c_void, dst: *mut c_void, n: c_int, proc: c_int, h: *mut ArmciHdl) -> c_int;
    ARMCI_NbAcc => PARMCI_NbAcc(ty: c_int, scale: *mut c_void, src: *mut c_void, dst: *mut c_void, n: c_int, proc: c_int, h: *mut ArmciHdl) -> c_int;
    ARMCI_NbPutS => PARMCI_NbPutS(src: *mut c_void, ss: *mut c_int, dst: *mut c_void, ds: *mut c_int, count: *mut c_int, levels: c_int, proc: c_int, h: *mut ArmciHdl) -> c_int;
    ARMCI_NbGetS => PARMCI_NbGetS(src: *mut c_void, ss: *mut c_int, dst: *mut c_void, ds: *mut c_int, count: *mut c_int, levels: c_int, proc: c_int, h: *mut ArmciHdl) -> c_int;
    ARMCI_NbAccS => PARMCI_NbAccS(ty: c_int, scale: *mut c_void, src: *mut c_void, ss: *mut c_int, dst: *mut c_void, ds: *mut c_int, count: *mut c_int, levels: c_int, proc: c_int, h: *mut ArmciHdl) -> c_int;
    ARMCI_NbPutV => PARMCI_NbPutV(iov: *mut ArmciGiov, len: c_int, proc: c_int, h: *mut ArmciHdl) -> c_int;
    ARMCI_NbGetV => PARMCI_NbGetV(iov: *mut ArmciGiov, len: c_int, proc: c_int, h: *mut ArmciHdl) -> c_int;
    ARMCI_NbAccV => PARMCI_NbAccV(ty: c_int, scale: *mut c_void, iov: *mut ArmciGiov, len: c_int, proc: c_int, h: *mut ArmciHdl) -> c_int;
    ARMCI_PutValueInt => PARMCI_PutValueInt(v: c_int, dst: *mut c_void, proc: c_int) -> c_int;
    ARMCI_PutValueLong => PARMCI_PutValueLong(v: c_long, dst: *mut c_void, proc: c_int) -> c_int;
    ARMCI_PutValueFloat => PARMCI_PutValueFloat(v: c_float, dst: *mut c_void, proc: c_int) -> c_int;
    ARMCI_PutValueDouble => PARMCI_PutValueDouble(v: c_double, dst: *mut c_void, proc: c_int) -> c_int;
    ARMCI_NbPutValueInt => PARMCI_NbPutValueInt(v: c_int, dst: *mut c_void, proc: c_int, h: *mut ArmciHdl) -> c_int;
    ARMCI_NbPutValueLong => PARMCI_NbPutValueLong(v: c_long, dst: *mut c_void, proc: c_int, h: *mut ArmciHdl) -> c_int;
    ARMCI_NbPutValueFloat => PARMCI_NbPutValueFloat(v: c_float, dst: *mut c_void, proc: c_int, h: *mut ArmciHdl) -> c_int;
    ARMCI_NbPutValueDouble => PARMCI_NbPutValueDouble(v: c_double, dst: *mut c_void, proc: c_int, h: *mut ArmciHdl) -> c_int;
    ARMCI_GetValueInt => PARMCI_GetValueInt(src: *mut c_void, proc: c_int) -> c_int;
    ARMCI_GetValueLong => PARMCI_GetValueLong(src: *mut c_void, proc: c_int) -> c_long;
    ARMCI_GetValueFloat => PARMCI_GetValueFloat(src: *mut c_void, proc: c_int) -> c_float;
    ARMCI_GetValueDouble => PARMCI_GetValueDouble(src: *mut c_void, proc: c_int) -> c_double;
    ARMCI_Rmw => PARMCI_Rmw(op: c_int, ploc: *mut c_void, prem: *mut c_void, value: c_int, proc: c_int) -> c_int;
    ARMCI_Create_mutexes => PARMCI_Create_mutexes(count: c_int) -> c_int;
    ARMCI_Destroy_mutexes => PARMCI_Destroy_mutexes() -> c_int;
    ARMCI_Lock => PARMCI_Lock(m: c_int, proc: c_int);
    ARMCI_Unlock => PARMCI_Unlock(m: c_int, proc: c_int);
}
