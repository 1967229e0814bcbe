//! Collectives (OpenSHMEM 1.5 §9.9–9.10) over a team or a legacy active set; the
//! algorithms are [`crate::coll`]'s.
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in shmem.h and the OpenSHMEM standard

use std::ffi::{c_char, c_int, c_long, c_void};

use super::{fatal, name, ok, sym, team, w, Error};
use crate::coll::{Num, ReduceOp, Team};

#[no_mangle]
pub extern "C" fn pshmem_barrier_all() {
    let call = "shmem_barrier_all";
    ok(call, w(call).barrier_all());
}
#[no_mangle]
pub extern "C" fn pshmem_sync_all() {
    let call = "shmem_sync_all";
    ok(call, w(call).barrier_all());
}

fn active(call: &str, start: c_int, log: c_int, size: c_int) -> Team {
    let n = w(call).n_pes();
    ok(call, Team::active_set(n, start, log, size))
}

#[no_mangle]
pub extern "C" fn pshmem_barrier(start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
    let call = "shmem_barrier";
    let t = active(call, start, log, size);
    ok(call, w(call).barrier(&t.members));
}
#[no_mangle]
pub extern "C" fn pshmem_sync(start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
    let call = "shmem_sync";
    let t = active(call, start, log, size);
    ok(call, w(call).barrier(&t.members));
}

/// Team (`t` ≠ 0) or active-set (`t` = 0, `start/log/size`) of a collective; `None`
/// (the call returns −1) for a team this PE is not in (`SHMEM_TEAM_INVALID`), a fatal
/// error for an active set this PE is not in.
fn coll_team(call: &str, t: usize, start: c_int, log: c_int, size: c_int) -> Option<Team> {
    let tm = if t != 0 {
        team(call, t)
    } else {
        active(call, start, log, size)
    };
    if tm.index_of(w(call).my_pe()).is_none() {
        if t != 0 {
            return None;
        }
        fatal(
            call,
            &Error::BadArgument("this PE is not in the active set".into()),
        );
    }
    Some(tm)
}

/// Collective kinds of `skifshmem_coll`: 0 broadcast, 1 collect, 2 fcollect, 3 alltoall,
/// 4 alltoalls. `t` = 0 selects the legacy active set (then broadcast leaves the root's
/// `dest` alone, as the legacy calls do). Sizes are in bytes except for `alltoalls`
/// (strides and `nelems` in elements of `elem` bytes). Returns 0, or −1 for
/// `SHMEM_TEAM_INVALID`.
#[no_mangle]
pub unsafe extern "C" fn pskifshmem_coll(
    call: *const c_char,
    kind: c_int,
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    bytes: usize,
    root: c_int,
    dst: isize,
    sst: isize,
    elem: usize,
    start: c_int,
    log: c_int,
    size: c_int,
) -> c_int {
    // SAFETY: see `name`.
    let call = unsafe { name(call) };
    let Some(tm) = coll_team(call, t, start, log, size) else {
        return -1;
    };
    let w = w(call);
    let n = tm.size();
    let r = match kind {
        0 => {
            if root < 0 || root as usize >= n {
                fatal(
                    call,
                    &Error::BadArgument(format!("root {root} of a {n}-PE team")),
                );
            }
            w.broadcast(
                &tm,
                sym(call, dest, bytes),
                sym(call, src, bytes),
                bytes,
                root as usize,
                t != 0,
            )
        }
        // the total is known only inside: checked as it is written
        1 => w.collect(&tm, sym(call, dest, 0), sym(call, src, bytes), bytes),
        2 => w.collect(
            &tm,
            sym(call, dest, bytes * n),
            sym(call, src, bytes),
            bytes,
        ),
        3 => w.alltoall(
            &tm,
            sym(call, dest, bytes * n),
            sym(call, src, bytes * n),
            bytes,
        ),
        4 => {
            if dst < 1 || sst < 1 {
                fatal(
                    call,
                    &Error::BadArgument(format!("strides {dst} and {sst} must be ≥ 1")),
                );
            }
            let (d, s) = (dst as usize, sst as usize);
            let span = |st: usize| match n * bytes {
                0 => 0,
                k => ((k - 1) * st + 1) * elem,
            };
            w.alltoalls(
                &tm,
                sym(call, dest, span(d)),
                sym(call, src, span(s)),
                d,
                s,
                bytes,
                elem,
            )
        }
        k => fatal(call, &Error::BadArgument(format!("collective kind {k}"))),
    };
    ok(call, r);
    0
}

fn num(call: &str, code: c_int) -> Num {
    match code {
        1 | 2 | 4 | 8 => Num::I(code as usize),
        11 | 12 | 14 | 18 => Num::U(code as usize - 10),
        20 => Num::F32,
        21 => Num::F64,
        30 => Num::C32,
        31 => Num::C64,
        _ => fatal(
            call,
            &Error::BadArgument(format!("reduction type code {code}")),
        ),
    }
}

fn rop(call: &str, code: c_int) -> ReduceOp {
    match code {
        0 => ReduceOp::And,
        1 => ReduceOp::Or,
        2 => ReduceOp::Xor,
        3 => ReduceOp::Min,
        4 => ReduceOp::Max,
        5 => ReduceOp::Sum,
        6 => ReduceOp::Prod,
        _ => fatal(
            call,
            &Error::BadArgument(format!("reduction operator {code}")),
        ),
    }
}

/// Reductions: team form (`t` ≠ 0) or legacy `_to_all` (`t` = 0 and the active set).
/// `ty`: shmem.h's `SKIF_T_*` codes; `op`: `SKIF_OP_*`. Returns 0, or −1 for an invalid team.
#[no_mangle]
pub unsafe extern "C" fn pskifshmem_reduce(
    call: *const c_char,
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    nreduce: usize,
    ty: c_int,
    op: c_int,
    start: c_int,
    log: c_int,
    size: c_int,
) -> c_int {
    // SAFETY: see `name`.
    let call = unsafe { name(call) };
    let r = ok(call, crate::coll::reducer(num(call, ty), rop(call, op)));
    reduce_on(call, t, dest, src, nreduce, &*r, (start, log, size))
}

/// The reductions' common part: `nreduce` elements of `r` over team `t` or the active
/// set `(start, log, size)`; 0, or −1 for a team this PE is not in.
fn reduce_on(
    call: &str,
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    nreduce: usize,
    r: &dyn skifch::coll::Reducer,
    (start, log, size): (c_int, c_int, c_int),
) -> c_int {
    let Some(tm) = coll_team(call, t, start, log, size) else {
        return -1;
    };
    let bytes = nreduce * r.elem_size();
    let (d, s) = (sym(call, dest, bytes), sym(call, src, bytes));
    ok(call, w(call).reduce_with(&tm, d, s, nreduce, r));
    0
}

/// A reduction operator compiled by the C compiler: `inout[i] = a[i] op inout[i]` for
/// `n` elements (shmem.h's `long double` operators: Rust has no `long double`).
type CombineFn = unsafe extern "C" fn(a: *const c_void, inout: *mut c_void, n: usize);

/// A [`CombineFn`] as a [`skifch::coll`] reduction kernel.
struct CReducer {
    elem: usize,
    f: CombineFn,
}

impl skifch::coll::Reducer for CReducer {
    fn elem_size(&self) -> usize {
        self.elem
    }
    fn apply(&self, a: &[u8], inout: &mut [u8]) {
        let n = a.len().min(inout.len()) / self.elem;
        // SAFETY: both buffers hold `n` elements of `elem` bytes; the header's operators
        // read and write them with memcpy (no alignment needed).
        unsafe { (self.f)(a.as_ptr().cast(), inout.as_mut_ptr().cast(), n) }
    }
}

/// Reductions whose operator comes from the header (`long double`): as
/// [`skifshmem_reduce`], with `elem`-byte elements combined by `combine`.
#[no_mangle]
pub unsafe extern "C" fn pskifshmem_reduce_fn(
    call: *const c_char,
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    nreduce: usize,
    elem: usize,
    combine: Option<CombineFn>,
    start: c_int,
    log: c_int,
    size: c_int,
) -> c_int {
    // SAFETY: see `name`.
    let call = unsafe { name(call) };
    let (Some(f), 1..) = (combine, elem) else {
        fatal(
            call,
            &Error::BadArgument("no reduction operator or a zero element size".into()),
        );
    };
    let r = CReducer { elem, f };
    reduce_on(call, t, dest, src, nreduce, &r, (start, log, size))
}

#[no_mangle]
pub unsafe extern "C" fn pshmem_broadcastmem(
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    n: usize,
    root: c_int,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe {
        skifshmem_coll(
            c"shmem_broadcastmem".as_ptr(),
            0,
            t,
            dest,
            src,
            n,
            root,
            0,
            0,
            1,
            0,
            0,
            0,
        )
    }
}
#[no_mangle]
pub unsafe extern "C" fn pshmem_collectmem(
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    n: usize,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe {
        skifshmem_coll(
            c"shmem_collectmem".as_ptr(),
            1,
            t,
            dest,
            src,
            n,
            0,
            0,
            0,
            1,
            0,
            0,
            0,
        )
    }
}
#[no_mangle]
pub unsafe extern "C" fn pshmem_fcollectmem(
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    n: usize,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe {
        skifshmem_coll(
            c"shmem_fcollectmem".as_ptr(),
            2,
            t,
            dest,
            src,
            n,
            0,
            0,
            0,
            1,
            0,
            0,
            0,
        )
    }
}
#[no_mangle]
pub unsafe extern "C" fn pshmem_alltoallmem(
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    n: usize,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe {
        skifshmem_coll(
            c"shmem_alltoallmem".as_ptr(),
            3,
            t,
            dest,
            src,
            n,
            0,
            0,
            0,
            1,
            0,
            0,
            0,
        )
    }
}
#[no_mangle]
pub unsafe extern "C" fn pshmem_alltoallsmem(
    t: usize,
    dest: *mut c_void,
    src: *const c_void,
    dst: isize,
    sst: isize,
    n: usize,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe {
        skifshmem_coll(
            c"shmem_alltoallsmem".as_ptr(),
            4,
            t,
            dest,
            src,
            n,
            0,
            dst,
            sst,
            1,
            0,
            0,
            0,
        )
    }
}

macro_rules! legacy {
    ($($bc:ident $col:ident $fcol:ident $a2a:ident $a2as:ident $b:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $bc(dest: *mut c_void, src: *const c_void, n: usize, root: c_int, start: c_int, log: c_int, size: c_int, _p: *mut c_long) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_coll(concat!(stringify!($bc), "\0").as_ptr().cast(), 0, 0, dest, src, n * $b, root, 0, 0, $b, start, log, size) };
        }
        #[no_mangle]
        pub unsafe extern "C" fn $col(dest: *mut c_void, src: *const c_void, n: usize, start: c_int, log: c_int, size: c_int, _p: *mut c_long) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_coll(concat!(stringify!($col), "\0").as_ptr().cast(), 1, 0, dest, src, n * $b, 0, 0, 0, $b, start, log, size) };
        }
        #[no_mangle]
        pub unsafe extern "C" fn $fcol(dest: *mut c_void, src: *const c_void, n: usize, start: c_int, log: c_int, size: c_int, _p: *mut c_long) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_coll(concat!(stringify!($fcol), "\0").as_ptr().cast(), 2, 0, dest, src, n * $b, 0, 0, 0, $b, start, log, size) };
        }
        #[no_mangle]
        pub unsafe extern "C" fn $a2a(dest: *mut c_void, src: *const c_void, n: usize, start: c_int, log: c_int, size: c_int, _p: *mut c_long) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_coll(concat!(stringify!($a2a), "\0").as_ptr().cast(), 3, 0, dest, src, n * $b, 0, 0, 0, $b, start, log, size) };
        }
        #[no_mangle]
        pub unsafe extern "C" fn $a2as(dest: *mut c_void, src: *const c_void, dst: isize, sst: isize, n: usize, start: c_int, log: c_int, size: c_int, _p: *mut c_long) {
            // SAFETY: forwards the caller's contract.
            unsafe { skifshmem_coll(concat!(stringify!($a2as), "\0").as_ptr().cast(), 4, 0, dest, src, n, 0, dst, sst, $b, start, log, size) };
        }
    )*};
}
// each under its profiling name too (one forwarding call either way)
legacy! {
    shmem_broadcast32 shmem_collect32 shmem_fcollect32 shmem_alltoall32 shmem_alltoalls32 4;
    shmem_broadcast64 shmem_collect64 shmem_fcollect64 shmem_alltoall64 shmem_alltoalls64 8;
    pshmem_broadcast32 pshmem_collect32 pshmem_fcollect32 pshmem_alltoall32 pshmem_alltoalls32 4;
    pshmem_broadcast64 pshmem_collect64 pshmem_fcollect64 pshmem_alltoall64 pshmem_alltoalls64 8;
}

crate::capi::profiled! {
    shmem_barrier_all => pshmem_barrier_all();
    shmem_sync_all => pshmem_sync_all();
    shmem_barrier => pshmem_barrier(start: c_int, log: c_int, size: c_int, _psync: *mut c_long);
    shmem_sync => pshmem_sync(start: c_int, log: c_int, size: c_int, _psync: *mut c_long);
    skifshmem_coll => pskifshmem_coll(call: *const c_char, kind: c_int, t: usize, dest: *mut c_void, src: *const c_void, bytes: usize, root: c_int, dst: isize, sst: isize, elem: usize, start: c_int, log: c_int, size: c_int) -> c_int;
    skifshmem_reduce => pskifshmem_reduce(call: *const c_char, t: usize, dest: *mut c_void, src: *const c_void, nreduce: usize, ty: c_int, op: c_int, start: c_int, log: c_int, size: c_int) -> c_int;
    skifshmem_reduce_fn => pskifshmem_reduce_fn(call: *const c_char, t: usize, dest: *mut c_void, src: *const c_void, nreduce: usize, elem: usize, combine: Option<CombineFn>, start: c_int, log: c_int, size: c_int) -> c_int;
    shmem_broadcastmem => pshmem_broadcastmem(t: usize, dest: *mut c_void, src: *const c_void, n: usize, root: c_int) -> c_int;
    shmem_collectmem => pshmem_collectmem(t: usize, dest: *mut c_void, src: *const c_void, n: usize) -> c_int;
    shmem_fcollectmem => pshmem_fcollectmem(t: usize, dest: *mut c_void, src: *const c_void, n: usize) -> c_int;
    shmem_alltoallmem => pshmem_alltoallmem(t: usize, dest: *mut c_void, src: *const c_void, n: usize) -> c_int;
    shmem_alltoallsmem => pshmem_alltoallsmem(t: usize, dest: *mut c_void, src: *const c_void, dst: isize, sst: isize, n: usize) -> c_int;
}
