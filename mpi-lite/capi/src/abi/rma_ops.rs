//! One-sided communication (MPI-3.1 §11.3): the operations on a window (`rma` holds the
//! windows, `rma_sync` the synchronisation calls). Only translates: handles, counts and
//! buffers to `mpi_lite::win`.

use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;

use mpi_lite::datatype::Basic;
use mpi_lite::error::class;
use mpi_lite::win::{AccOp, RmwOp, Target, Win};
use mpi_lite::{Error, Result};

use super::p2p::req_handle;
use super::rma::{wcall, with_bound_entry, with_entry, WinEntry};
use super::{arr, arr_mut, basic_type, contiguous_bytes, count, dense_len, mpi_fn, put, user_buf};
use crate::state::{CState, PHASE};

/// The direct path (`Win::direct_*`, `mpi_lite::win` module `direct`): `f` on window `w`
/// and nothing else — no state lock (`f` touches only the window's own atomics and
/// mapped memory, so calls of other threads cannot disturb it), no handle table lock (the
/// thread's cached window, [`with_entry`]), no buffer or type objects, no `Result` per
/// layer. `false`: not done (MPI not running, not a window, or `f` declined): the call
/// takes its general path, which checks everything and reports the error.
#[inline(always)]
pub(super) fn direct(w: c_int, f: impl FnOnce(&Win) -> bool) -> bool {
    direct_with(w, |x| f(x).then_some(())).is_some()
}

/// As [`direct`] for a short cut with a result (`None`: take the general path).
#[inline(always)]
fn direct_with<R>(w: c_int, f: impl FnOnce(&Win) -> Option<R>) -> Option<R> {
    if PHASE.load(Ordering::Relaxed) != 1 {
        return None;
    }
    with_entry(w, |e| f(&e.win)).flatten()
}

/// The first short cut of the hot calls, which makes no call so that their entry keeps
/// its arguments in registers (no frame): [`direct_with`] on the cached window of the
/// thread the library is bound to only (`MPI_THREAD_SINGLE`/`FUNNELED`). `None`: the
/// call's out-of-line rest (`*_rest`), which takes [`direct_with`]'s way, then the general
/// path.
#[inline(always)]
pub(super) fn quick<R>(w: c_int, f: impl FnOnce(&Win) -> Option<R>) -> Option<R> {
    if PHASE.load(Ordering::Relaxed) != 1 {
        return None;
    }
    with_bound_entry(
        w,
        #[inline(always)]
        |e| f(&e.win),
    )
    .flatten()
}

/// The bytes of a put's or get's origin for [`quick`]: one dense run of 4 to 16 bytes
/// (copied without a call, `skifch::mem::copy_move`) as long as the target's, at a
/// non-null address.
#[inline(always)]
fn small_run(a: *const c_void, oc: c_int, ot: c_int, tc: c_int, tt: c_int) -> Option<usize> {
    let n = dense_len(oc, ot)?;
    (n.wrapping_sub(4) <= 12 && !a.is_null() && same_len(n, (oc, ot), (tc, tt))).then_some(n)
}

/// A call's general path, out of line: the direct path's entry points keep a small frame.
#[inline(never)]
pub(super) fn general(
    name: &'static str,
    win: c_int,
    f: impl FnOnce(&CState, &WinEntry) -> Result<()>,
) -> c_int {
    wcall(name, win, f)
}

/// The predefined type of handle `dt` (for the direct path's accumulates).
#[inline(always)]
fn basic(dt: c_int) -> Option<Basic> {
    Basic::ALL.get((dt as usize).wrapping_sub(1)).copied()
}

/// Whether the target's `(count, type)` describes the `n` bytes of the origin's: at once
/// when both are the same (the common case), else by the target type's dense length.
#[inline(always)]
fn same_len(n: usize, origin: (c_int, c_int), target: (c_int, c_int)) -> bool {
    origin == target || dense_len(target.0, target.1) == Some(n)
}

/// The origin of a put or accumulate as one run of bytes when origin and target are
/// contiguous predefined data of the same length (the direct path's case).
///
/// # Safety
/// MPI's buffer contract: `oc` elements of `ot` at `oa` stay readable for the call.
#[inline(always)]
unsafe fn run<'a>(
    oa: *const c_void,
    oc: c_int,
    ot: c_int,
    tc: c_int,
    tt: c_int,
) -> Option<&'a [u8]> {
    let (p, n) = contiguous_bytes(oa, oc, ot)?;
    // SAFETY: the caller's contract, for the one run `contiguous_bytes` found.
    same_len(n, (oc, ot), (tc, tt))
        .then(|| unsafe { std::slice::from_raw_parts(p.cast_const(), n) })
}

/// As [`run`] for a buffer the call writes (a get's origin, a result buffer).
///
/// # Safety
/// MPI's buffer contract: the elements are writable and the program's own for the call.
#[inline(always)]
unsafe fn run_mut<'a>(
    a: *mut c_void,
    c: c_int,
    t: c_int,
    tc: c_int,
    tt: c_int,
) -> Option<&'a mut [u8]> {
    let (p, n) = contiguous_bytes(a, c, t)?;
    // SAFETY: the caller's contract, for the one run `contiguous_bytes` found.
    same_len(n, (c, t), (tc, tt)).then(|| unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// The accumulate family's direct path: origin (`None` for `MPI_NO_OP`), compare and
/// result runs already checked to be `tt`'s bytes.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn direct_update(
    win: c_int,
    tr: c_int,
    td: isize,
    tt: c_int,
    op: AccOp,
    src: Option<&[u8]>,
    cmp: Option<&[u8]>,
    old: Option<&mut [u8]>,
) -> bool {
    let Some(b) = basic(tt) else { return false };
    direct(win, |w| w.direct_update(tr, td, b, op, src, cmp, old))
}

/// The direct path's single-element atomics (`MPI_Fetch_and_op`, `MPI_Compare_and_swap`,
/// one-element `MPI_Accumulate` and `MPI_Get_accumulate`): element `k` (type and
/// operation, [`RmwOp`]) at `rank`/`disp` of `win` updated from the origin's element at
/// `oa` (not read for `MPI_NO_OP`), compared with the one at `ca` (compare-and-swap), the
/// old value going to `ra`. `false`: not done (a null address, or the window's short cut
/// declined): the general path.
///
/// # Safety
/// MPI's buffer contract: one element of the type at each non-null address (§11.3.4).
#[inline(always)]
unsafe fn direct_one<const QUICK: bool>(
    win: c_int,
    rank: c_int,
    disp: isize,
    k: RmwOp,
    oa: *const c_void,
    ca: Option<*const c_void>,
    ra: Option<*mut c_void>,
) -> bool {
    let w = k.width();
    if (k.reads_origin() && oa.is_null())
        || ca.is_some_and(<*const c_void>::is_null)
        || ra.is_some_and(<*mut c_void>::is_null)
    {
        return false;
    }
    // SAFETY: (both) one element of `w` bytes at each address (the caller's contract),
    // non-null; unaligned accesses are explicit.
    let load = |p: *const c_void| unsafe {
        if w == 8 {
            p.cast::<u64>().read_unaligned()
        } else {
            u64::from(p.cast::<u32>().read_unaligned())
        }
    };
    let x = if k.reads_origin() { load(oa) } else { 0 };
    let c = ca.map_or(0, load);
    let r = if QUICK {
        quick(
            win,
            #[inline(always)]
            |w| w.direct_rmw(rank, disp, k, x, c),
        )
    } else {
        direct_with(win, |w| w.direct_rmw(rank, disp, k, x, c))
    };
    let Some(old) = r else {
        return false;
    };
    if let Some(r) = ra {
        // SAFETY: as above, written.
        unsafe {
            if w == 8 {
                r.cast::<u64>().write_unaligned(old);
            } else {
                r.cast::<u32>().write_unaligned(old as u32);
            }
        }
    }
    true
}

/// The single-element short cut's operation for one element of `dt` (`None`: not one).
#[inline(always)]
fn rmw_op(dt: c_int, op: AccOp, cas: bool) -> Option<RmwOp> {
    RmwOp::of(basic(dt)?, op, cas)
}

/// As [`rmw_op`] with the operation's handle (the quick paths; `cas`: compare-and-swap,
/// `op` unused).
#[inline(always)]
fn rmw_op_h(dt: c_int, op: c_int, cas: bool) -> Option<RmwOp> {
    // Predefined type handles are `Basic::ALL`'s positions + 1 (see `basic`).
    RmwOp::of_index((dt as u32).wrapping_sub(1) as usize, op, cas)
}

fn target<'a>(
    st: &CState,
    rank: c_int,
    disp: isize,
    n: c_int,
    dt: c_int,
    call: &str,
    keep: &'a mut Option<mpi_lite::datatype::Datatype>,
) -> Result<Target<'a>> {
    let count = count(n, call)?;
    let d = match basic_type(dt) {
        Some(d) => d,
        None => keep.insert(st.dtype(dt)?),
    };
    Ok(Target {
        rank,
        disp,
        count,
        dt: d,
    })
}

/// The arguments of an operation's origin buffer and target (`MPI_Put` … order).
struct Args {
    oa: *const c_void,
    oc: c_int,
    ot: c_int,
    tr: c_int,
    td: isize,
    tc: c_int,
    tt: c_int,
}

/// `MPI_Put` / `MPI_Rput`.
///
/// # Safety
/// MPI's buffer contract for the origin buffer.
unsafe fn put_op(st: &CState, e: &WinEntry, a: &Args, name: &str) -> Result<()> {
    // SAFETY: forwarded.
    let o = unsafe { user_buf(st, a.oa, a.oc, a.ot, name)? };
    let mut k = None;
    e.win.put(
        &st.mpi,
        &o,
        target(st, a.tr, a.td, a.tc, a.tt, name, &mut k)?,
    )
}

/// `MPI_Get` / `MPI_Rget`.
///
/// # Safety
/// As [`put_op`]; the origin buffer is written.
unsafe fn get_op(st: &CState, e: &WinEntry, a: &Args, name: &str) -> Result<()> {
    // SAFETY: forwarded.
    let mut o = unsafe { user_buf(st, a.oa, a.oc, a.ot, name)? };
    let mut k = None;
    e.win.get(
        &st.mpi,
        &mut o,
        target(st, a.tr, a.td, a.tc, a.tt, name, &mut k)?,
    )
}

/// `MPI_Accumulate` / `MPI_Raccumulate`.
///
/// # Safety
/// As [`put_op`].
unsafe fn acc_op(st: &CState, e: &WinEntry, a: &Args, op: c_int, name: &str) -> Result<()> {
    let op = AccOp::from_handle(op, name)?;
    // SAFETY: forwarded.
    let o = unsafe { user_buf(st, a.oa, a.oc, a.ot, name)? };
    let mut k = None;
    e.win.accumulate(
        &st.mpi,
        &o,
        target(st, a.tr, a.td, a.tc, a.tt, name, &mut k)?,
        op,
    )
}

/// `MPI_Get_accumulate` / `MPI_Rget_accumulate` (`res`: result address, count, type).
///
/// # Safety
/// As [`put_op`], and for the result buffer (written).
unsafe fn gacc_op(
    st: &CState,
    e: &WinEntry,
    a: &Args,
    res: (*mut c_void, c_int, c_int),
    op: c_int,
    name: &str,
) -> Result<()> {
    let op = AccOp::from_handle(op, name)?;
    let o = if op == AccOp::NoOp {
        None
    } else {
        // SAFETY: forwarded.
        Some(unsafe { user_buf(st, a.oa, a.oc, a.ot, name)? })
    };
    // SAFETY: forwarded (written).
    let mut r = unsafe { user_buf(st, res.0, res.1, res.2, name)? };
    let mut k = None;
    e.win.get_accumulate(
        &st.mpi,
        o.as_ref(),
        &mut r,
        target(st, a.tr, a.td, a.tc, a.tt, name, &mut k)?,
        op,
        name,
    )
}

mpi_fn!(MPI_Put, PMPI_Put, (oa: *const c_void, oc: c_int, ot: c_int, tr: c_int, td: isize, tc: c_int, tt: c_int, win: c_int) -> c_int {
    if let Some(n) = small_run(oa, oc, ot, tc, tt) {
        // SAFETY: `n` bytes at `oa` (MPI buffer contract), non-null.
        let src = unsafe { std::slice::from_raw_parts(oa.cast::<u8>(), n) };
        if quick(win, #[inline(always)] |w| w.direct_put(tr, td, src).then_some(())).is_some() {
            return class::SUCCESS;
        }
    }
    // SAFETY: the caller's buffer (MPI buffer contract).
    unsafe { put_rest(&Args { oa, oc, ot, tr, td, tc, tt }, win) }
});

/// `MPI_Put` past [`quick`]: the direct path of any size and thread level, then the
/// general path.
///
/// # Safety
/// MPI's buffer contract for the origin buffer.
#[inline(never)]
unsafe fn put_rest(a: &Args, win: c_int) -> c_int {
    // SAFETY: the caller's buffer (MPI buffer contract).
    if let Some(src) = unsafe { run(a.oa, a.oc, a.ot, a.tc, a.tt) } {
        if direct(win, |w| w.direct_put(a.tr, a.td, src)) {
            return class::SUCCESS;
        }
    }
    // SAFETY: the caller's buffers (MPI buffer contract).
    general("MPI_Put", win, |st, e| unsafe {
        put_op(st, e, a, "MPI_Put")
    })
}

mpi_fn!(MPI_Get, PMPI_Get, (oa: *mut c_void, oc: c_int, ot: c_int, tr: c_int, td: isize, tc: c_int, tt: c_int, win: c_int) -> c_int {
    if let Some(n) = small_run(oa, oc, ot, tc, tt) {
        // SAFETY: `n` bytes at `oa` (MPI buffer contract), non-null, written by the call.
        let dst = unsafe { std::slice::from_raw_parts_mut(oa.cast::<u8>(), n) };
        if quick(win, #[inline(always)] |w| w.direct_get(tr, td, dst).then_some(())).is_some() {
            return class::SUCCESS;
        }
    }
    let oa = oa.cast_const();
    // SAFETY: the caller's buffer (MPI buffer contract), written by the call.
    unsafe { get_rest(&Args { oa, oc, ot, tr, td, tc, tt }, win) }
});

/// `MPI_Get` past [`quick`]: the direct path of any size and thread level, then the
/// general path.
///
/// # Safety
/// MPI's buffer contract for the origin buffer (written).
#[inline(never)]
unsafe fn get_rest(a: &Args, win: c_int) -> c_int {
    // SAFETY: the caller's buffer (MPI buffer contract), written by the call only.
    if let Some(dst) = unsafe { run_mut(a.oa.cast_mut(), a.oc, a.ot, a.tc, a.tt) } {
        if direct(win, |w| w.direct_get(a.tr, a.td, dst)) {
            return class::SUCCESS;
        }
    }
    // SAFETY: the caller's buffers (MPI buffer contract).
    general("MPI_Get", win, |st, e| unsafe {
        get_op(st, e, a, "MPI_Get")
    })
}

mpi_fn!(MPI_Accumulate, PMPI_Accumulate, (oa: *const c_void, oc: c_int, ot: c_int, tr: c_int, td: isize, tc: c_int, tt: c_int, op: c_int, win: c_int) -> c_int {
    if let (1, 1, true, Some(k)) = (oc, tc, ot == tt, rmw_op_h(tt, op, false)) {
        // SAFETY: one element of `tt` at `oa` (MPI buffer contract).
        if k.reads_origin() && unsafe { direct_one::<true>(win, tr, td, k, oa, None, None) } {
            return class::SUCCESS;
        }
    }
    // SAFETY: forwarded (the caller's contract).
    unsafe { accumulate_rest(oa, oc, ot, tr, td, tc, tt, op, win) }
});

/// `MPI_Accumulate` past [`quick`]: the direct path of any size and thread level, then the
/// general path.
///
/// # Safety
/// MPI's buffer contract for the call's buffers.
#[inline(never)]
unsafe extern "C" fn accumulate_rest(
    oa: *const c_void,
    oc: c_int,
    ot: c_int,
    tr: c_int,
    td: isize,
    tc: c_int,
    tt: c_int,
    op: c_int,
    win: c_int,
) -> c_int {
    let name = "MPI_Accumulate";
    if let (true, Ok(o)) = (ot == tt, AccOp::from_handle(op, name)) {
        if let (1, 1, Some(k)) = (oc, tc, rmw_op(tt, o, false)) {
            // SAFETY: one element of `tt` at `oa` (MPI buffer contract).
            if k.reads_origin() && unsafe { direct_one::<false>(win, tr, td, k, oa, None, None) } {
                return class::SUCCESS;
            }
        }
        // SAFETY: the caller's buffer (MPI buffer contract).
        if let Some(src) = unsafe { run(oa, oc, ot, tc, tt) } {
            if direct_update(win, tr, td, tt, o, Some(src), None, None) {
                return class::SUCCESS;
            }
        }
    }
    let a = Args {
        oa,
        oc,
        ot,
        tr,
        td,
        tc,
        tt,
    };
    // SAFETY: the caller's buffers (MPI buffer contract).
    general("MPI_Accumulate", win, |st, e| unsafe {
        acc_op(st, e, &a, op, "MPI_Accumulate")
    })
}

mpi_fn!(MPI_Get_accumulate, PMPI_Get_accumulate, (oa: *const c_void, oc: c_int, ot: c_int, ra: *mut c_void, rc: c_int, rt: c_int, tr: c_int, td: isize, tc: c_int, tt: c_int, op: c_int, win: c_int) -> c_int {
    let name = "MPI_Get_accumulate";
    if let (true, Ok(o)) = (rt == tt, AccOp::from_handle(op, name)) {
        if let (1, 1, Some(k)) = (rc, tc, rmw_op(tt, o, false)) {
            if (!k.reads_origin() || (oc == 1 && ot == tt))
                // SAFETY: one element of `tt` at `oa` (unless MPI_NO_OP) and `ra`.
                && unsafe { direct_one::<false>(win, tr, td, k, oa, None, Some(ra)) }
            {
                return class::SUCCESS;
            }
        }
        // SAFETY: the caller's buffers (MPI buffer contract); the origin is not read for
        // MPI_NO_OP (§11.3.4).
        let src = unsafe { run(oa, oc, ot, tc, tt) }.filter(|_| ot == tt);
        if src.is_some() || o == AccOp::NoOp {
            // SAFETY: as above, the result buffer (written).
            if let Some(old) = unsafe { run_mut(ra, rc, rt, tc, tt) } {
                let src = src.filter(|_| o != AccOp::NoOp);
                if direct_update(win, tr, td, tt, o, src, None, Some(old)) {
                    return class::SUCCESS;
                }
            }
        }
    }
    let a = Args { oa, oc, ot, tr, td, tc, tt };
    // SAFETY: the caller's buffers (MPI buffer contract).
    general(name, win, |st, e| unsafe { gacc_op(st, e, &a, (ra, rc, rt), op, name) })
});

mpi_fn!(MPI_Fetch_and_op, PMPI_Fetch_and_op, (oa: *const c_void, ra: *mut c_void, dt: c_int, tr: c_int, td: isize, op: c_int, win: c_int) -> c_int {
    if let Some(k) = rmw_op_h(dt, op, false) {
        // SAFETY: one element of `dt` at each address (MPI-3.1 §11.3.4).
        if unsafe { direct_one::<true>(win, tr, td, k, oa, None, Some(ra)) } {
            return class::SUCCESS;
        }
    }
    // SAFETY: forwarded (the caller's contract).
    unsafe { fetch_and_op_rest(oa, ra, dt, tr, td, op, win) }
});

/// `MPI_Fetch_and_op` past [`quick`]: the direct path of any size and thread level, then the
/// general path.
///
/// # Safety
/// MPI's buffer contract for the call's buffers.
#[inline(never)]
unsafe extern "C" fn fetch_and_op_rest(
    oa: *const c_void,
    ra: *mut c_void,
    dt: c_int,
    tr: c_int,
    td: isize,
    op: c_int,
    win: c_int,
) -> c_int {
    let name = "MPI_Fetch_and_op";
    if let Ok(o) = AccOp::from_handle(op, name) {
        if let Some(k) = rmw_op(dt, o, false) {
            // SAFETY: one element of `dt` at each address (MPI-3.1 §11.3.4).
            if unsafe { direct_one::<false>(win, tr, td, k, oa, None, Some(ra)) } {
                return class::SUCCESS;
            }
        }
        // SAFETY: one element of `dt` at each address (MPI-3.1 §11.3.4); the origin is
        // not read for MPI_NO_OP.
        let (src, old) = unsafe { (run(oa, 1, dt, 1, dt), run_mut(ra, 1, dt, 1, dt)) };
        if src.is_some() || o == AccOp::NoOp {
            let src = src.filter(|_| o != AccOp::NoOp);
            if old.is_some() && direct_update(win, tr, td, dt, o, src, None, old) {
                return class::SUCCESS;
            }
        }
    }
    general(name, win, |st, e| {
        let op = AccOp::from_handle(op, name)?;
        let o = if op == AccOp::NoOp {
            None
        } else {
            // SAFETY: one element at the caller's origin address.
            Some(unsafe { user_buf(st, oa, 1, dt, name)? })
        };
        // SAFETY: one element at the caller's result address, written.
        let mut r = unsafe { user_buf(st, ra, 1, dt, name)? };
        let mut k = None;
        e.win.get_accumulate(
            &st.mpi,
            o.as_ref(),
            &mut r,
            target(st, tr, td, 1, dt, name, &mut k)?,
            op,
            name,
        )
    })
}

mpi_fn!(MPI_Compare_and_swap, PMPI_Compare_and_swap, (oa: *const c_void, ca: *const c_void, ra: *mut c_void, dt: c_int, tr: c_int, td: isize, win: c_int) -> c_int {
    if let Some(k) = rmw_op_h(dt, 0, true) {
        // SAFETY: one element of `dt` at each address (MPI-3.1 §11.3.6).
        if unsafe { direct_one::<true>(win, tr, td, k, oa, Some(ca), Some(ra)) } {
            return class::SUCCESS;
        }
    }
    // SAFETY: forwarded (the caller's contract).
    unsafe { compare_and_swap_rest(oa, ca, ra, dt, tr, td, win) }
});

/// `MPI_Compare_and_swap` past [`quick`]: the direct path of any size and thread level, then the
/// general path.
///
/// # Safety
/// MPI's buffer contract for the call's buffers.
#[inline(never)]
unsafe extern "C" fn compare_and_swap_rest(
    oa: *const c_void,
    ca: *const c_void,
    ra: *mut c_void,
    dt: c_int,
    tr: c_int,
    td: isize,
    win: c_int,
) -> c_int {
    let name = "MPI_Compare_and_swap";
    if let Some(k) = rmw_op(dt, AccOp::Replace, true) {
        // SAFETY: one element of `dt` at each address (MPI-3.1 §11.3.6).
        if unsafe { direct_one::<false>(win, tr, td, k, oa, Some(ca), Some(ra)) } {
            return class::SUCCESS;
        }
    }
    // SAFETY: one element of `dt` at each address (MPI-3.1 §11.3.6).
    if let (Some(src), Some(cmp), Some(old)) = unsafe {
        (
            run(oa, 1, dt, 1, dt),
            run(ca, 1, dt, 1, dt),
            run_mut(ra, 1, dt, 1, dt),
        )
    } {
        if direct_update(
            win,
            tr,
            td,
            dt,
            AccOp::Replace,
            Some(src),
            Some(cmp),
            Some(old),
        ) {
            return class::SUCCESS;
        }
    }
    general(name, win, |st, e| {
        let d = st.dtype(dt)?;
        let n = c_int::try_from(d.size())
            .map_err(|_| Error::Type(format!("{name}: type too large")))?;
        // SAFETY: one element of `d` at each address (MPI-3.1 §11.3.6).
        let (o, c, r) = unsafe {
            (
                arr(oa.cast::<u8>(), n, "origin_addr")?,
                arr(ca.cast::<u8>(), n, "compare_addr")?,
                arr_mut(ra.cast::<u8>(), n as usize, "result_addr")?,
            )
        };
        e.win.compare_and_swap(&st.mpi, o, c, r, &d, tr, td)
    })
}

/// A request-based operation (MPI-3.1 §11.3.5): checked to be in a passive-target epoch,
/// done as its blocking form (complete at return on both paths), then a complete request.
fn with_request(
    st: &CState,
    e: &WinEntry,
    rank: c_int,
    req: *mut c_int,
    call: &str,
    op: impl FnOnce() -> Result<()>,
) -> Result<()> {
    if req.is_null() {
        return Err(Error::Arg(format!("{call}: request is NULL")));
    }
    e.win.check_passive(rank, call)?;
    op()?;
    let id = st.mpi.engine().done_request()?;
    // SAFETY: the caller's handle, checked non-null.
    unsafe { put(req, req_handle(id), "request") }
}

mpi_fn!(MPI_Rput, PMPI_Rput, (oa: *const c_void, oc: c_int, ot: c_int, tr: c_int, td: isize, tc: c_int, tt: c_int, win: c_int, req: *mut c_int) -> c_int {
    let (a, name) = (Args { oa, oc, ot, tr, td, tc, tt }, "MPI_Rput");
    wcall(name, win, |st, e| {
        // SAFETY: the caller's buffers (MPI buffer contract).
        with_request(st, e, tr, req, name, || unsafe { put_op(st, e, &a, name) })
    })
});

mpi_fn!(MPI_Rget, PMPI_Rget, (oa: *mut c_void, oc: c_int, ot: c_int, tr: c_int, td: isize, tc: c_int, tt: c_int, win: c_int, req: *mut c_int) -> c_int {
    let (a, name) = (Args { oa, oc, ot, tr, td, tc, tt }, "MPI_Rget");
    wcall(name, win, |st, e| {
        // SAFETY: the caller's buffers (MPI buffer contract).
        with_request(st, e, tr, req, name, || unsafe { get_op(st, e, &a, name) })
    })
});

mpi_fn!(MPI_Raccumulate, PMPI_Raccumulate, (oa: *const c_void, oc: c_int, ot: c_int, tr: c_int, td: isize, tc: c_int, tt: c_int, op: c_int, win: c_int, req: *mut c_int) -> c_int {
    let (a, name) = (Args { oa, oc, ot, tr, td, tc, tt }, "MPI_Raccumulate");
    wcall(name, win, |st, e| {
        // SAFETY: the caller's buffers (MPI buffer contract).
        with_request(st, e, tr, req, name, || unsafe { acc_op(st, e, &a, op, name) })
    })
});

mpi_fn!(MPI_Rget_accumulate, PMPI_Rget_accumulate, (oa: *const c_void, oc: c_int, ot: c_int, ra: *mut c_void, rc: c_int, rt: c_int, tr: c_int, td: isize, tc: c_int, tt: c_int, op: c_int, win: c_int, req: *mut c_int) -> c_int {
    let (a, name) = (Args { oa, oc, ot, tr, td, tc, tt }, "MPI_Rget_accumulate");
    wcall(name, win, |st, e| {
        // SAFETY: the caller's buffers (MPI buffer contract).
        with_request(st, e, tr, req, name, || unsafe { gacc_op(st, e, &a, (ra, rc, rt), op, name) })
    })
});
