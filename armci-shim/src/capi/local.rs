//! `armci_read_strided` / `armci_write_strided`: copies between a strided region of local
//! memory and a contiguous buffer (the stride arrays checked as for `ARMCI_PutS`).
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in armci.h

use std::ffi::{c_int, c_void};

use super::ok;
use super::rma::strided;
use crate::Error;

/// Copies between a strided local region and a contiguous buffer (`to_buf`: gather).
unsafe fn local_strided(
    call: &str,
    ptr: *mut c_void,
    levels: c_int,
    stride: *const c_int,
    count: *const c_int,
    buf: *mut u8,
    to_buf: bool,
) {
    // The contiguous side: strides of a dense layout.
    let l = usize::try_from(levels).unwrap_or(0);
    let mut dense = Vec::with_capacity(l);
    let mut span = if count.is_null() {
        0
    } else {
        // SAFETY: the caller's count array of `levels + 1` entries.
        unsafe { *count }
    };
    for i in 0..l {
        dense.push(span);
        // SAFETY: as above.
        span = span.saturating_mul(unsafe { *count.add(i + 1) });
    }
    // SAFETY: forwards the caller's contract.
    let d = unsafe { strided(call, stride, dense.as_ptr(), count, levels) };
    let p = ptr.cast::<u8>();
    let r = d.for_each(|so, bo, n| {
        // SAFETY: both sides are the caller's buffers of the described extents.
        unsafe {
            if to_buf {
                skifch::mem::copy_move(p.add(so), buf.add(bo), n);
            } else {
                skifch::mem::copy_move(buf.add(bo), p.add(so), n);
            }
        }
        Ok::<(), Error>(())
    });
    ok(call, r);
}

/// Gathers the strided region at `ptr` into `buf`.
#[no_mangle]
pub unsafe extern "C" fn parmci_read_strided(
    ptr: *mut c_void,
    levels: c_int,
    stride: *mut c_int,
    count: *mut c_int,
    buf: *mut libc::c_char,
) {
    // SAFETY: forwards the caller's contract.
    unsafe {
        local_strided(
            "armci_read_strided",
            ptr,
            levels,
            stride,
            count,
            buf.cast(),
            true,
        )
    }
}
/// Scatters `buf` into the strided region at `ptr`.
#[no_mangle]
pub unsafe extern "C" fn parmci_write_strided(
    ptr: *mut c_void,
    levels: c_int,
    stride: *mut c_int,
    count: *mut c_int,
    buf: *mut libc::c_char,
) {
    // SAFETY: forwards the caller's contract.
    unsafe {
        local_strided(
            "armci_write_strided",
            ptr,
            levels,
            stride,
            count,
            buf.cast(),
            false,
        )
    }
}

profiled! {
    armci_read_strided => parmci_read_strided(ptr: *mut c_void, levels: c_int, stride: *mut c_int, count: *mut c_int, buf: *mut libc::c_char);
    armci_write_strided => parmci_write_strided(ptr: *mut c_void, levels: c_int, stride: *mut c_int, count: *mut c_int, buf: *mut libc::c_char);
}
