//! The `armci_msg_*` reductions and helpers of message.h (the ARMCI-MPI flavour):
//! `armci_msg_gop_scope` and its typed forms over [`skifch::coll`]'s all-reduce, with
//! ARMCI's operator strings (`+`, `*`, `max`, `min`, `absmax`, `absmin`, `or`, `&&`,
//! `||`); `armci_exchange_address`; `armci_msg_bintree`; point-to-point
//! `armci_msg_snd`/`rcv`/`rcvany` (one-way messages queued by the receiver's handler).
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in message.h

use std::ffi::{c_char, c_int, c_long, c_longlong, c_void};

use skifch::coll::{DType, Kernel, Op};

use super::scope::{self, Part};
use super::{a, ok};
use crate::{fatal, Error};

/// `enum armci_type_e` of message.h.
fn dtype(call: &str, ty: c_int) -> DType {
    match ty {
        0 => DType::I32,
        1 | 2 => DType::I64,
        3 => DType::F32,
        4 => DType::F64,
        _ => fatal(
            call,
            &Error::BadArgument(format!(
                "type {ty} is not one of ARMCI_INT/LONG/LONG_LONG/FLOAT/DOUBLE"
            )),
        ),
    }
}

/// The first bytes of the operator string at `p` (up to its NUL, at most 8). ARMCI
/// matches operators by prefix, as `strncmp(op, "max", 3)` does: Fortran callers pass
/// strings that are not terminated where the operator ends (Global Arrays' disk arrays
/// pass "+" followed by a file name), so only the bytes a match needs are read.
///
/// # Safety
/// `p` is readable up to its first NUL or its 8th byte, whichever comes first.
unsafe fn op_head(p: *const c_char) -> Vec<u8> {
    let mut v = Vec::with_capacity(8);
    for i in 0..8 {
        // SAFETY: within the caller's string (stops at its NUL).
        let c = unsafe { *p.add(i) } as u8;
        if c == 0 {
            break;
        }
        v.push(c);
    }
    v
}

/// The operation of ARMCI's operator string (by prefix: [`op_head`]), and whether inputs
/// are replaced by their absolute values first (`absmax`, `absmin`).
fn op(call: &str, s: &[u8]) -> (Op, bool) {
    const OPS: [(&[u8], Op, bool); 11] = [
        (b"absmax", Op::Max, true),
        (b"absmin", Op::Min, true),
        (b"mult", Op::Prod, false),
        (b"sum", Op::Sum, false),
        (b"max", Op::Max, false),
        (b"min", Op::Min, false),
        (b"or", Op::Bor, false),
        (b"||", Op::Lor, false),
        (b"&&", Op::Land, false),
        (b"+", Op::Sum, false),
        (b"*", Op::Prod, false),
    ];
    match OPS.iter().find(|(p, _, _)| s.starts_with(p)) {
        Some(&(_, o, absolute)) => (o, absolute),
        None => fatal(
            call,
            &Error::BadArgument(format!(
                "operator {:?} is not one of + * max min absmax absmin or || &&",
                String::from_utf8_lossy(s)
            )),
        ),
    }
}

/// Replaces every element of `b` by its absolute value.
fn abs(t: DType, b: &mut [u8]) {
    for e in b.chunks_exact_mut(t.size()) {
        match t {
            DType::I32 => {
                let v = i32::from_ne_bytes(e.try_into().unwrap_or([0; 4]));
                e.copy_from_slice(&v.wrapping_abs().to_ne_bytes());
            }
            DType::I64 => {
                let v = i64::from_ne_bytes(e.try_into().unwrap_or([0; 8]));
                e.copy_from_slice(&v.wrapping_abs().to_ne_bytes());
            }
            DType::F32 => {
                let v = f32::from_ne_bytes(e.try_into().unwrap_or([0; 4]));
                e.copy_from_slice(&v.abs().to_ne_bytes());
            }
            _ => {
                let v = f64::from_ne_bytes(e.try_into().unwrap_or([0; 8]));
                e.copy_from_slice(&v.abs().to_ne_bytes());
            }
        }
    }
}

pub(super) unsafe fn gop(
    call: &str,
    scope: c_int,
    x: *mut c_void,
    n: c_int,
    opstr: *const c_char,
    ty: c_int,
    group: Option<&crate::group::Group>,
) {
    let w = a(call);
    let part = match group {
        Some(g) => scope::part(call, scope, g.members()),
        None => scope::part(call, scope, &scope::world(call)),
    };
    let t = dtype(call, ty);
    if opstr.is_null() {
        fatal(call, &Error::BadArgument("the operator is NULL".into()));
    }
    // SAFETY: the caller's operator string (non-null, checked above).
    let (o, absolute) = op(call, &unsafe { op_head(opstr) });
    let k = ok(call, Kernel::new(t, o).map_err(Error::from));
    let n = usize::try_from(n)
        .unwrap_or_else(|_| fatal(call, &Error::BadArgument(format!("negative count {n}"))));
    if n == 0 {
        return;
    }
    // SAFETY: the caller's array of `n` elements of the type, not referenced elsewhere.
    let b = unsafe { std::slice::from_raw_parts_mut(x.cast::<u8>(), n * t.size()) };
    if part == Part::Outside {
        return;
    }
    if absolute {
        abs(t, b);
    }
    if part == Part::Alone {
        return; // the reduction of one contribution
    }
    match group {
        Some(g) => ok(call, w.group_allreduce(g, b, &k)),
        None => ok(call, w.allreduce(b, &k)),
    }
}

#[no_mangle]
pub unsafe extern "C" fn parmci_msg_gop_scope(
    scope: c_int,
    x: *mut c_void,
    n: c_int,
    op: *mut c_char,
    ty: c_int,
) {
    // SAFETY: forwards the caller's contract.
    unsafe { gop("armci_msg_gop_scope", scope, x, n, op, ty, None) }
}
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_reduce(x: *mut c_void, n: c_int, op: *mut c_char, ty: c_int) {
    // SAFETY: forwards the caller's contract.
    unsafe { gop("armci_msg_reduce", 0, x, n, op, ty, None) }
}
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_igop(x: *mut c_int, n: c_int, op: *mut c_char) {
    // SAFETY: forwards the caller's contract.
    unsafe { gop("armci_msg_igop", 0, x.cast(), n, op, 0, None) }
}
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_lgop(x: *mut c_long, n: c_int, op: *mut c_char) {
    // SAFETY: forwards the caller's contract.
    unsafe { gop("armci_msg_lgop", 0, x.cast(), n, op, 1, None) }
}
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_llgop(x: *mut c_longlong, n: c_int, op: *mut c_char) {
    // SAFETY: forwards the caller's contract.
    unsafe { gop("armci_msg_llgop", 0, x.cast(), n, op, 2, None) }
}
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_fgop(x: *mut f32, n: c_int, op: *mut c_char) {
    // SAFETY: forwards the caller's contract.
    unsafe { gop("armci_msg_fgop", 0, x.cast(), n, op, 3, None) }
}
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_dgop(x: *mut f64, n: c_int, op: *mut c_char) {
    // SAFETY: forwards the caller's contract.
    unsafe { gop("armci_msg_dgop", 0, x.cast(), n, op, 4, None) }
}

/// `armci_msg_reduce_scope`: the reduction over `scope` (every process gets the result;
/// ARMCI promises it only to the root).
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_reduce_scope(
    scope: c_int,
    x: *mut c_void,
    n: c_int,
    op: *mut c_char,
    ty: c_int,
) {
    // SAFETY: forwards the caller's contract.
    unsafe { gop("armci_msg_reduce_scope", scope, x, n, op, ty, None) }
}

/// The cluster (`clus`) reductions of classic ARMCI: over the caller's node, the
/// `SCOPE_NODE` form of the typed reductions.
macro_rules! clus_gops {
    ($($name:ident, $t:ty, $ty:literal, $call:literal;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(x: *mut $t, n: c_int, op: *mut c_char) {
            // SAFETY: forwards the caller's contract.
            unsafe { gop($call, 1, x.cast(), n, op, $ty, None) }
        }
    )*};
}
clus_gops! {
    parmci_msg_clus_igop, c_int, 0, "armci_msg_clus_igop";
    parmci_msg_clus_lgop, c_long, 1, "armci_msg_clus_lgop";
    parmci_msg_clus_llgop, c_longlong, 2, "armci_msg_clus_llgop";
    parmci_msg_clus_fgop, f32, 3, "armci_msg_clus_fgop";
    parmci_msg_clus_dgop, f64, 4, "armci_msg_clus_dgop";
}

/// `armci_msg_clus_brdcst`: the buffer of the node's first process (its master) to every
/// process of the caller's node.
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_clus_brdcst(buf: *mut c_void, len: c_int) {
    let call = "armci_msg_clus_brdcst";
    let world = scope::world(call);
    if scope::part(call, 1, &world) != Part::All {
        return; // alone on its node: its buffer is the master's
    }
    let me = a(call).me();
    let root = scope::members(call, 1, &world)
        .first()
        .copied()
        .unwrap_or(me);
    // SAFETY: forwards the caller's contract.
    unsafe { super::bcast(call, buf, len, root as c_int) }
}

/// `armci_msg_sel_scope`: among the processes that `contribute`, the one whose first
/// element of `x` (of `type`) is the least (`op` "min") or greatest ("max") — the lowest
/// rank on ties — gives its whole `n`-byte buffer `x` to every process.
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_sel_scope(
    scope: c_int,
    x: *mut c_void,
    n: c_int,
    op: *mut c_char,
    ty: c_int,
    contribute: c_int,
) {
    // SAFETY: forwards the caller's contract.
    unsafe { sel("armci_msg_sel_scope", scope, x, n, op, ty, contribute) }
}
/// `armci_msg_sel`: [`parmci_msg_sel_scope`] over `SCOPE_ALL`.
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_sel(
    x: *mut c_void,
    n: c_int,
    op: *mut c_char,
    ty: c_int,
    contribute: c_int,
) {
    // SAFETY: forwards the caller's contract.
    unsafe { sel("armci_msg_sel", 0, x, n, op, ty, contribute) }
}

unsafe fn sel(
    call: &str,
    scope: c_int,
    x: *mut c_void,
    n: c_int,
    op: *mut c_char,
    ty: c_int,
    contribute: c_int,
) {
    let w = a(call);
    let part = scope::part(call, scope, &scope::world(call));
    let t = dtype(call, ty);
    if op.is_null() {
        fatal(call, &Error::BadArgument("the operator is NULL".into()));
    }
    // SAFETY: the caller's operator string (non-null, checked above).
    let max = match unsafe { op_head(op) } {
        o if o.starts_with(b"max") => true,
        o if o.starts_with(b"min") => false,
        o => fatal(
            call,
            &Error::BadArgument(format!(
                "operator {:?} is not min or max",
                String::from_utf8_lossy(&o)
            )),
        ),
    };
    let n = len_of(call, n);
    if n < t.size() {
        fatal(
            call,
            &Error::BadArgument(format!("a {n}-byte buffer holds no {t:?} key")),
        );
    }
    if part != Part::All {
        return; // alone (its own buffer is the selection) or outside the scope
    }
    // SAFETY: the caller's buffer of `n` bytes, not referenced elsewhere.
    let b = unsafe { std::slice::from_raw_parts_mut(x.cast::<u8>(), n) };
    let mut mine = vec![u8::from(contribute != 0)];
    mine.extend_from_slice(b);
    let all = ok(call, w.allgather_equal(&mine));
    let cmp = |x: &[u8], y: &[u8]| -> std::cmp::Ordering {
        let (x, y) = (&x[1..1 + t.size()], &y[1..1 + t.size()]);
        let w4 = |k: &[u8]| -> [u8; 4] { k.try_into().unwrap_or([0; 4]) };
        let w8 = |k: &[u8]| -> [u8; 8] { k.try_into().unwrap_or([0; 8]) };
        match t {
            DType::I32 => i32::from_ne_bytes(w4(x)).cmp(&i32::from_ne_bytes(w4(y))),
            DType::F32 => f32::from_ne_bytes(w4(x)).total_cmp(&f32::from_ne_bytes(w4(y))),
            DType::F64 => f64::from_ne_bytes(w8(x)).total_cmp(&f64::from_ne_bytes(w8(y))),
            _ => i64::from_ne_bytes(w8(x)).cmp(&i64::from_ne_bytes(w8(y))),
        }
    };
    let mut best: Option<&[u8]> = None;
    for s in all.chunks_exact(n + 1).filter(|s| s[0] == 1) {
        let better = best.is_none_or(|b| {
            let o = cmp(s, b);
            if max {
                o.is_gt()
            } else {
                o.is_lt()
            }
        });
        if better {
            best = Some(s);
        }
    }
    if let Some(s) = best {
        b.copy_from_slice(&s[1..]);
    }
}

/// `len` as bytes, or a fatal error.
fn len_of(call: &str, len: c_int) -> usize {
    usize::try_from(len)
        .unwrap_or_else(|_| fatal(call, &Error::BadArgument(format!("negative length {len}"))))
}

/// `tag` as the wire's tag, or a fatal error.
fn tag_of(call: &str, tag: c_int) -> u32 {
    u32::try_from(tag)
        .unwrap_or_else(|_| fatal(call, &Error::BadArgument(format!("negative tag {tag}"))))
}

/// Sends `len` bytes to `to` with `tag`.
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_snd(tag: c_int, buf: *mut c_void, len: c_int, to: c_int) {
    let call = "armci_msg_snd";
    let w = a(call);
    let to = ok(call, w.proc(to.into()));
    let n = len_of(call, len);
    let data: &[u8] = if n == 0 {
        &[]
    } else {
        // SAFETY: the caller's buffer of `len` bytes.
        unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), n) }
    };
    ok(call, w.send_msg(to, tag_of(call, tag), data));
}

unsafe fn rcv(
    call: &str,
    tag: c_int,
    buf: *mut c_void,
    buflen: c_int,
    msglen: *mut c_int,
    from: Option<c_int>,
) -> c_int {
    let w = a(call);
    let from = from.map(|f| ok(call, w.proc(f.into())));
    let n = len_of(call, buflen);
    let mut empty = [0u8; 0];
    let b: &mut [u8] = if n == 0 {
        &mut empty
    } else {
        // SAFETY: the caller's buffer of `buflen` bytes, not referenced elsewhere.
        unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), n) }
    };
    let (len, src) = ok(call, w.recv_msg(tag_of(call, tag), from, b));
    if !msglen.is_null() {
        // SAFETY: the caller's int.
        unsafe { *msglen = len as c_int };
    }
    src as c_int
}

/// Receives the next message tagged `tag` from `from`.
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_rcv(
    tag: c_int,
    buf: *mut c_void,
    buflen: c_int,
    msglen: *mut c_int,
    from: c_int,
) {
    // SAFETY: forwards the caller's contract.
    unsafe { rcv("armci_msg_rcv", tag, buf, buflen, msglen, Some(from)) };
}

/// Receives the next message tagged `tag` from any process; returns the sender.
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_rcvany(
    tag: c_int,
    buf: *mut c_void,
    buflen: c_int,
    msglen: *mut c_int,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe { rcv("armci_msg_rcvany", tag, buf, buflen, msglen, None) }
}

/// Fills `ptr_ar[r]` of every rank `r` with that rank's own `ptr_ar[r]` (`n` = ranks).
#[no_mangle]
pub unsafe extern "C" fn parmci_exchange_address(ptr_ar: *mut *mut c_void, n: c_int) {
    let call = "armci_exchange_address";
    let w = a(call);
    if ptr_ar.is_null() || n != w.nproc() as c_int {
        fatal(
            call,
            &Error::BadArgument(format!(
                "an array of {n} pointers for {} processes",
                w.nproc()
            )),
        );
    }
    // SAFETY: the caller's array of one pointer per process.
    let mine = unsafe { *ptr_ar.add(w.me() as usize) } as usize;
    let all = ok(call, w.allgather(&(mine as u64).to_le_bytes()));
    for (r, b) in all.iter().enumerate() {
        let v = b
            .get(..8)
            .and_then(|s| s.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        // SAFETY: as above.
        unsafe { *ptr_ar.add(r) = v as usize as *mut c_void };
    }
}

/// This rank's place in the binary tree over the processes of `scope` (ascending job
/// ranks), rooted at the lowest; job ranks, -1 for none. Outside the scope (a non-master
/// asking for `SCOPE_MASTERS`) the root is the scope's and the rest -1.
#[no_mangle]
pub unsafe extern "C" fn parmci_msg_bintree(
    scope: c_int,
    root: *mut c_int,
    up: *mut c_int,
    left: *mut c_int,
    right: *mut c_int,
) {
    let call = "armci_msg_bintree";
    let w = a(call);
    let tree = scope::members(call, scope, &scope::world(call));
    let at = |i: usize| tree.get(i).map_or(-1, |&r| r as c_int);
    let (u, l, r) = match tree.iter().position(|&m| m == w.me()) {
        Some(0) => (-1, at(1), at(2)),
        Some(i) => (at((i - 1) / 2), at(2 * i + 1), at(2 * i + 2)),
        None => (-1, -1, -1),
    };
    // SAFETY: the caller's four int pointers (NULL skipped).
    unsafe {
        for (p, v) in [(root, at(0)), (up, u), (left, l), (right, r)] {
            if !p.is_null() {
                *p = v;
            }
        }
    }
}

profiled! {
    armci_msg_sel => parmci_msg_sel(x: *mut c_void, n: c_int, op: *mut c_char, ty: c_int, contribute: c_int);
    armci_msg_reduce_scope => parmci_msg_reduce_scope(scope: c_int, x: *mut c_void, n: c_int, op: *mut c_char, ty: c_int);
    armci_msg_clus_brdcst => parmci_msg_clus_brdcst(buf: *mut c_void, len: c_int);
    armci_msg_clus_igop => parmci_msg_clus_igop(x: *mut c_int, n: c_int, op: *mut c_char);
    armci_msg_clus_lgop => parmci_msg_clus_lgop(x: *mut c_long, n: c_int, op: *mut c_char);
    armci_msg_clus_llgop => parmci_msg_clus_llgop(x: *mut c_longlong, n: c_int, op: *mut c_char);
    armci_msg_clus_fgop => parmci_msg_clus_fgop(x: *mut f32, n: c_int, op: *mut c_char);
    armci_msg_clus_dgop => parmci_msg_clus_dgop(x: *mut f64, n: c_int, op: *mut c_char);
    armci_msg_sel_scope => parmci_msg_sel_scope(scope: c_int, x: *mut c_void, n: c_int, op: *mut c_char, ty: c_int, contribute: c_int);
    armci_msg_snd => parmci_msg_snd(tag: c_int, buf: *mut c_void, len: c_int, to: c_int);
    armci_msg_rcv => parmci_msg_rcv(tag: c_int, buf: *mut c_void, buflen: c_int, msglen: *mut c_int, from: c_int);
    armci_msg_rcvany => parmci_msg_rcvany(tag: c_int, buf: *mut c_void, buflen: c_int, msglen: *mut c_int) -> c_int;
    armci_msg_gop_scope => parmci_msg_gop_scope(scope: c_int, x: *mut c_void, n: c_int, op: *mut c_char, ty: c_int);
    armci_msg_reduce => parmci_msg_reduce(x: *mut c_void, n: c_int, op: *mut c_char, ty: c_int);
    armci_msg_igop => parmci_msg_igop(x: *mut c_int, n: c_int, op: *mut c_char);
    armci_msg_lgop => parmci_msg_lgop(x: *mut c_long, n: c_int, op: *mut c_char);
    armci_msg_llgop => parmci_msg_llgop(x: *mut c_longlong, n: c_int, op: *mut c_char);
    armci_msg_fgop => parmci_msg_fgop(x: *mut f32, n: c_int, op: *mut c_char);
    armci_msg_dgop => parmci_msg_dgop(x: *mut f64, n: c_int, op: *mut c_char);
    armci_exchange_address => parmci_exchange_address(ptr_ar: *mut *mut c_void, n: c_int);
    armci_msg_bintree => parmci_msg_bintree(scope: c_int, root: *mut c_int, up: *mut c_int, left: *mut c_int, right: *mut c_int);
}
