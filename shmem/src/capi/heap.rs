//! Memory management (OpenSHMEM 1.5 §9.3): the symmetric heap's allocation calls.
//!
//! The standard's corner cases: a zero size allocates nothing and returns NULL
//! (`shmem_malloc`, `shmem_align` "perform no action"; `shmem_calloc` with `count` or
//! `size` 0 returns NULL after its barrier); `shmem_free(NULL)` does nothing;
//! `shmem_realloc(NULL, n)` is `shmem_malloc(n)` and `shmem_realloc(p, 0)` frees `p`. An
//! alignment that is not a power of two is undefined behaviour in the standard; here it
//! returns NULL with a message (every PE passes the same value, so all return NULL).
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in shmem.h and the OpenSHMEM standard

use std::ffi::{c_long, c_void};

use super::{fatal, ok, sym, w, Error};

fn alloc(call: &str, size: usize, align: usize) -> *mut c_void {
    let w = w(call);
    if !align.is_power_of_two() {
        crate::say(&format!(
            "skifshmem: {call}: alignment {align} is not a power of two"
        ));
        return std::ptr::null_mut();
    }
    if size == 0 {
        return std::ptr::null_mut();
    }
    match w.malloc(size, align) {
        Ok(a) => w.local(a) as *mut c_void,
        Err(e @ Error::Misaligned { .. }) => {
            crate::say(&format!("skifshmem: {call}: {e}"));
            std::ptr::null_mut()
        }
        Err(e @ Error::HeapExhausted { .. }) => {
            crate::say(&format!("skifshmem: {call}: {e}"));
            // The other PEs also failed (same allocator, same calls); keep them in step.
            ok(call, w.barrier_all());
            std::ptr::null_mut()
        }
        Err(e) => fatal(call, &e),
    }
}

#[no_mangle]
pub extern "C" fn pshmem_malloc(size: usize) -> *mut c_void {
    alloc("shmem_malloc", size, 16)
}
#[no_mangle]
pub extern "C" fn pshmem_malloc_with_hints(size: usize, _hints: c_long) -> *mut c_void {
    alloc("shmem_malloc_with_hints", size, 16)
}
#[no_mangle]
pub extern "C" fn pshmalloc(size: usize) -> *mut c_void {
    alloc("shmalloc", size, 16)
}
#[no_mangle]
pub extern "C" fn pshmem_align(align: usize, size: usize) -> *mut c_void {
    alloc("shmem_align", size, align)
}
#[no_mangle]
pub extern "C" fn pshmemalign(align: usize, size: usize) -> *mut c_void {
    alloc("shmemalign", size, align)
}

#[no_mangle]
pub extern "C" fn pshmem_calloc(count: usize, size: usize) -> *mut c_void {
    let call = "shmem_calloc";
    let Some(bytes) = count.checked_mul(size) else {
        crate::say(&format!(
            "skifshmem: {call}: {count} × {size} bytes overflows"
        ));
        return std::ptr::null_mut();
    };
    if bytes == 0 {
        // NULL, but still the barrier on exit (§9.3.3 has no "performs no action" here).
        ok(call, w(call).barrier_all());
        return std::ptr::null_mut();
    }
    let p = alloc(call, bytes, 16);
    if !p.is_null() {
        let w = w(call);
        ok(call, w.write_local(sym(call, p, bytes), &vec![0u8; bytes]));
        ok(call, w.barrier_all());
    }
    p
}

fn free(call: &str, p: *mut c_void) {
    let w = w(call);
    if p.is_null() {
        return; // "no action is performed" (§9.3.2), not even the barrier
    }
    let a = sym(call, p, 1);
    ok(call, w.free(a));
}

#[no_mangle]
pub extern "C" fn pshmem_free(p: *mut c_void) {
    free("shmem_free", p)
}
#[no_mangle]
pub extern "C" fn pshfree(p: *mut c_void) {
    free("shfree", p)
}

fn realloc(call: &str, p: *mut c_void, size: usize) -> *mut c_void {
    if p.is_null() {
        return alloc(call, size, 16);
    }
    let w = w(call);
    let old = sym(call, p, 1);
    if size == 0 {
        ok(call, w.free(old));
        return std::ptr::null_mut();
    }
    let Some(old_len) = w.block_size(old) else {
        fatal(
            call,
            &Error::BadArgument(format!("{p:p} is not a block of the symmetric heap")),
        );
    };
    let q = alloc(call, size, 16);
    if q.is_null() {
        return q;
    }
    let mut b = vec![0u8; old_len.min(size)];
    ok(call, w.read_local(old, &mut b));
    ok(call, w.write_local(sym(call, q, b.len()), &b));
    ok(call, w.free(old));
    q
}

#[no_mangle]
pub extern "C" fn pshmem_realloc(p: *mut c_void, size: usize) -> *mut c_void {
    realloc("shmem_realloc", p, size)
}
#[no_mangle]
pub extern "C" fn pshrealloc(p: *mut c_void, size: usize) -> *mut c_void {
    realloc("shrealloc", p, size)
}

crate::capi::profiled! {
    shmem_malloc => pshmem_malloc(size: usize) -> *mut c_void;
    shmem_malloc_with_hints => pshmem_malloc_with_hints(size: usize, _hints: c_long) -> *mut c_void;
    shmalloc => pshmalloc(size: usize) -> *mut c_void;
    shmem_align => pshmem_align(align: usize, size: usize) -> *mut c_void;
    shmemalign => pshmemalign(align: usize, size: usize) -> *mut c_void;
    shmem_calloc => pshmem_calloc(count: usize, size: usize) -> *mut c_void;
    shmem_free => pshmem_free(p: *mut c_void);
    shfree => pshfree(p: *mut c_void);
    shmem_realloc => pshmem_realloc(p: *mut c_void, size: usize) -> *mut c_void;
    shrealloc => pshrealloc(p: *mut c_void, size: usize) -> *mut c_void;
}
