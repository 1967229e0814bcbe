//! Memory ordering (OpenSHMEM 1.5 §9.8), point-to-point synchronization (§9.11) and
//! distributed locks (§9.12): translation to [`crate::wait`] and [`crate::lock`].
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in shmem.h and the OpenSHMEM standard

use std::ffi::{c_char, c_int, c_long, c_void};

use super::{check_ctx, fatal, name, ok, sym, w, Error, SymAddr};
use crate::wait::{Cmp, Cond, Mode, Var};

#[no_mangle]
pub extern "C" fn pshmem_fence() {
    ok("shmem_fence", w("shmem_fence").fence());
}
#[no_mangle]
pub extern "C" fn pshmem_quiet() {
    ok("shmem_quiet", w("shmem_quiet").quiet());
}
/// On `SHMEM_CTX_INVALID` nothing happens (§9.8.1).
#[no_mangle]
pub extern "C" fn pshmem_ctx_fence(ctx: usize) {
    if ctx != crate::ctx::CTX_INVALID {
        check_ctx("shmem_ctx_fence", ctx);
        pshmem_fence();
    }
}
/// On `SHMEM_CTX_INVALID` nothing happens (§9.8.2).
#[no_mangle]
pub extern "C" fn pshmem_ctx_quiet(ctx: usize) {
    if ctx != crate::ctx::CTX_INVALID {
        check_ctx("shmem_ctx_quiet", ctx);
        pshmem_quiet();
    }
}

/// The comparison of shmem.h's code, or a fatal error.
fn cmp(call: &str, c: c_int) -> Cmp {
    Cmp::from_code(c)
        .unwrap_or_else(|| fatal(call, &Error::BadArgument(format!("comparison code {c}"))))
}

/// The waited variable at `ivar`, or a fatal error.
fn var(call: &str, ivar: *const c_void, width: usize, signed: c_int) -> Var {
    ok(call, Var::new(ivar as usize, width, signed != 0))
}

/// `wait_until` on one variable: returns when `*ivar cmp value`.
#[no_mangle]
pub unsafe extern "C" fn pskifshmem_wait(
    call: *const c_char,
    ivar: *const c_void,
    width: usize,
    signed: c_int,
    c: c_int,
    value: u64,
) -> u64 {
    // SAFETY: see `name`.
    let call = unsafe { name(call) };
    let (v, c) = (var(call, ivar, width, signed), cmp(call, c));
    ok(call, w(call).wait_until(v, c, value))
}

/// `test` on one variable: 1 if `*ivar cmp value` now.
#[no_mangle]
pub unsafe extern "C" fn pskifshmem_test(
    call: *const c_char,
    ivar: *const c_void,
    width: usize,
    signed: c_int,
    c: c_int,
    value: u64,
) -> c_int {
    // SAFETY: see `name`.
    let call = unsafe { name(call) };
    let (v, c) = (var(call, ivar, width, signed), cmp(call, c));
    c_int::from(ok(call, w(call).test(v, c, value)))
}

/// The `_all/_any/_some` (and `_vector`) waits and tests over `nelems` variables.
/// `mode`: 0 all, 1 any, 2 some. `values` NULL: compare with `value`; else with
/// `values[i]` (elements of `width` bytes). `wait` 0: test once. Returns: all → 1 if
/// satisfied; any → the index satisfied (`SIZE_MAX` if none); some → how many indices
/// were written to `indices`.
#[no_mangle]
pub unsafe extern "C" fn pskifshmem_wait_set(
    call: *const c_char,
    ivars: *const c_void,
    nelems: usize,
    width: usize,
    signed: c_int,
    status: *const c_int,
    c: c_int,
    values: *const c_void,
    value: u64,
    mode: c_int,
    indices: *mut usize,
    wait: c_int,
) -> usize {
    // SAFETY: see `name`.
    let call = unsafe { name(call) };
    let c = cmp(call, c);
    // no variable to read with `nelems` 0 (NULL is allowed then)
    let base = (nelems > 0).then(|| var(call, ivars, width, signed));
    let want = |i: usize| -> u64 {
        if values.is_null() {
            return value;
        }
        let mut b = [0u8; 8];
        // SAFETY: `values` holds `nelems` elements of `width` (≤ 8) bytes.
        unsafe {
            let p = values.cast::<u8>().add(i * width);
            std::ptr::copy_nonoverlapping(p, b.as_mut_ptr(), width);
        }
        u64::from_le_bytes(b)
    };
    let set: Vec<Cond> = base.map_or_else(Vec::new, |base| {
        (0..nelems)
            // SAFETY: `status` is NULL or holds `nelems` ints (OpenSHMEM 1.5 §9.11).
            .filter(|&i| status.is_null() || unsafe { *status.add(i) } == 0)
            .map(|i| Cond {
                key: i,
                var: base.at(i),
                value: want(i),
            })
            .collect()
    });
    let mode = match mode {
        0 => Mode::All,
        1 => Mode::Any,
        _ => Mode::Some,
    };
    let hit = ok(call, w(call).wait_set(&set, c, mode, wait != 0));
    match (mode, hit) {
        (Mode::All, h) => usize::from(h.is_some()),
        (Mode::Any, h) => h.and_then(|k| k.first().copied()).unwrap_or(usize::MAX),
        (Mode::Some, None) => 0,
        (Mode::Some, Some(k)) => {
            for (j, &i) in k.iter().enumerate() {
                // SAFETY: `indices` holds `nelems` size_t (the standard's contract).
                unsafe { *indices.add(j) = i };
            }
            k.len()
        }
    }
}

// ---- locks (§9.12) ----

fn lock_word(call: &str, lock: *mut c_long) -> SymAddr {
    sym(call, lock.cast(), 8)
}

#[no_mangle]
pub extern "C" fn pshmem_set_lock(lock: *mut c_long) {
    let call = "shmem_set_lock";
    ok(call, w(call).set_lock(lock_word(call, lock)));
}

#[no_mangle]
pub extern "C" fn pshmem_clear_lock(lock: *mut c_long) {
    let call = "shmem_clear_lock";
    ok(call, w(call).clear_lock(lock_word(call, lock)));
}

/// 0 if the lock was acquired, 1 if another PE holds it.
#[no_mangle]
pub extern "C" fn pshmem_test_lock(lock: *mut c_long) -> c_int {
    let call = "shmem_test_lock";
    c_int::from(!ok(call, w(call).try_lock(lock_word(call, lock))))
}

crate::capi::profiled! {
    shmem_fence => pshmem_fence();
    shmem_quiet => pshmem_quiet();
    shmem_ctx_fence => pshmem_ctx_fence(ctx: usize);
    shmem_ctx_quiet => pshmem_ctx_quiet(ctx: usize);
    skifshmem_wait => pskifshmem_wait(call: *const c_char, ivar: *const c_void, width: usize, signed: c_int, c: c_int, value: u64) -> u64;
    skifshmem_test => pskifshmem_test(call: *const c_char, ivar: *const c_void, width: usize, signed: c_int, c: c_int, value: u64) -> c_int;
    skifshmem_wait_set => pskifshmem_wait_set(call: *const c_char, ivars: *const c_void, nelems: usize, width: usize, signed: c_int, status: *const c_int, c: c_int, values: *const c_void, value: u64, mode: c_int, indices: *mut usize, wait: c_int) -> usize;
    shmem_set_lock => pshmem_set_lock(lock: *mut c_long);
    shmem_clear_lock => pshmem_clear_lock(lock: *mut c_long);
    shmem_test_lock => pshmem_test_lock(lock: *mut c_long) -> c_int;
}
