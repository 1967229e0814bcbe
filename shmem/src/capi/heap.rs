//! Memory management (OpenSHMEM 1.5 §9.3): the symmetric heap's allocation calls.
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in shmem.h and the OpenSHMEM standard

use std::ffi::{c_long, c_void};

use super::{fatal, ok, sym, w, Error};

fn alloc(call: &str, size: usize, align: usize) -> *mut c_void {
    let w = w(call);
    match w.malloc(size, align) {
        Ok(a) => w.local(a) as *mut c_void,
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
pub extern "C" fn shmem_malloc(size: usize) -> *mut c_void {
    alloc("shmem_malloc", size, 16)
}
#[no_mangle]
pub extern "C" fn shmem_malloc_with_hints(size: usize, _hints: c_long) -> *mut c_void {
    alloc("shmem_malloc_with_hints", size, 16)
}
#[no_mangle]
pub extern "C" fn shmalloc(size: usize) -> *mut c_void {
    alloc("shmalloc", size, 16)
}
#[no_mangle]
pub extern "C" fn shmem_align(align: usize, size: usize) -> *mut c_void {
    alloc("shmem_align", size, align)
}
#[no_mangle]
pub extern "C" fn shmemalign(align: usize, size: usize) -> *mut c_void {
    alloc("shmemalign", size, align)
}

#[no_mangle]
pub extern "C" fn shmem_calloc(count: usize, size: usize) -> *mut c_void {
    let call = "shmem_calloc";
    let Some(bytes) = count.checked_mul(size) else {
        crate::say(&format!(
            "skifshmem: {call}: {count} × {size} bytes overflows"
        ));
        return std::ptr::null_mut();
    };
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
        ok(call, w.barrier_all());
        return;
    }
    let a = sym(call, p, 1);
    ok(call, w.free(a));
}

#[no_mangle]
pub extern "C" fn shmem_free(p: *mut c_void) {
    free("shmem_free", p)
}
#[no_mangle]
pub extern "C" fn shfree(p: *mut c_void) {
    free("shfree", p)
}

fn realloc(call: &str, p: *mut c_void, size: usize) -> *mut c_void {
    if p.is_null() {
        return alloc(call, size, 16);
    }
    let w = w(call);
    let old = sym(call, p, 1);
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
pub extern "C" fn shmem_realloc(p: *mut c_void, size: usize) -> *mut c_void {
    realloc("shmem_realloc", p, size)
}
#[no_mangle]
pub extern "C" fn shrealloc(p: *mut c_void, size: usize) -> *mut c_void {
    realloc("shrealloc", p, size)
}
