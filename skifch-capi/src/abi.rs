//! The `extern "C"` functions of `include/skifch.h` (spec: "The core: three calls", "The
//! rest of the C ABI"). Each one checks its pointers, maps [`Error`] to `-1`/`NULL` plus
//! `errno` ([`Error::errno`]) and never lets a panic unwind into C (it becomes `EIO`).
#![allow(unsafe_code)] // `#[no_mangle]` entry points that take raw pointers from C
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};
use std::io::IoSlice;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use libc::{iovec, ssize_t};
use skifch::driver::IOV_MAX;
use skifch::{Error, NetAddr, Result, CONT_SIZE};

use crate::handle::SkifCh;
use crate::job;

/// `netaddr_t`: rank in the high 16 bits, port in the low 16 bits.
pub type netaddr_t = u32;

/// `SKIFCH_ADDR_INVALID`: what `SkifCh_Addr`/`SkifCh_MyAddr` return for bad arguments.
/// Rank 65535 is beyond any job, so a send to it fails with `EHOSTUNREACH`.
pub const SKIFCH_ADDR_INVALID: netaddr_t = u32::MAX;

fn set_errno(e: c_int) {
    // SAFETY: `__errno_location` returns this thread's errno slot, always valid to write.
    unsafe { *libc::__errno_location() = e };
}

/// Runs `f`; on error sets `errno` and returns `fail`. A panic (a bug) is caught here so it
/// never unwinds into C; the panic hook has already printed it.
#[inline(always)]
fn ffi<T>(fail: T, f: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            set_errno(e.errno());
            fail
        }
        Err(_) => {
            set_errno(libc::EIO);
            fail
        }
    }
}

fn inval(why: impl Into<String>) -> Error {
    Error::InvalidArgument(why.into().into())
}

/// Runs `f` on the C iovec as `IoSlice`s, without copying it when possible.
///
/// # Safety
/// If `count > 0`, `iov` points to `count` readable `iovec`s, each describing a buffer
/// readable for `iov_len` bytes (or with `iov_len == 0`), for the duration of the call.
unsafe fn with_iov<T>(
    iov: *const iovec,
    count: c_int,
    f: impl FnOnce(&[IoSlice<'_>]) -> Result<T>,
) -> Result<T> {
    let n = usize::try_from(count).map_err(|_| inval(format!("iov_count {count} is negative")))?;
    if n == 0 {
        return f(&[]);
    }
    if n > IOV_MAX {
        return Err(inval(format!(
            "iov_count {n}: at most {IOV_MAX} parts are accepted"
        )));
    }
    if iov.is_null() || !iov.is_aligned() {
        return Err(inval(format!(
            "iov is NULL or misaligned but iov_count is {n}"
        )));
    }
    // SAFETY: non-null, aligned, `n` readable iovecs (caller's contract).
    let parts = unsafe { std::slice::from_raw_parts(iov, n) };
    let mut null_base = false;
    for p in parts {
        if p.iov_len > isize::MAX as usize {
            return Err(inval(format!("iovec part of {} bytes", p.iov_len)));
        }
        if p.iov_base.is_null() {
            if p.iov_len != 0 {
                return Err(inval(format!(
                    "iovec part with a NULL base and length {}",
                    p.iov_len
                )));
            }
            null_base = true;
        }
    }
    if !null_base {
        // SAFETY: std guarantees `IoSlice` is ABI-compatible with `iovec` on Unix; every
        // base is non-null and readable for its length (caller's contract, lengths checked
        // above), so each element is a valid `IoSlice` for the duration of `f`.
        let slices = unsafe { std::slice::from_raw_parts(iov as *const IoSlice<'_>, n) };
        return f(slices);
    }
    // Rare: a NULL base of length 0 is legal in C but not in a Rust slice.
    let slices: Vec<IoSlice<'_>> = parts
        .iter()
        .map(|p| {
            if p.iov_base.is_null() {
                IoSlice::new(&[])
            } else {
                // SAFETY: non-null, readable for `iov_len <= isize::MAX` bytes (caller's contract).
                IoSlice::new(unsafe {
                    std::slice::from_raw_parts(p.iov_base as *const u8, p.iov_len)
                })
            }
        })
        .collect();
    f(&slices)
}

/// `SkifCh_Send`: one message from a prefix of `iov`; bytes sent, or -1/errno.
///
/// # Safety
/// `ch` is NULL or a handle from `SkifCh_Open` (a closed one too: handles are never freed),
/// used by no other thread during the call; `iov` as in `with_iov`.
#[no_mangle]
pub unsafe extern "C" fn SkifCh_Send(
    ch: *mut SkifCh,
    dst: netaddr_t,
    iov: *const iovec,
    iov_count: c_int,
) -> ssize_t {
    ffi(-1, || {
        // SAFETY: NULL or a handle of ours (caller's contract).
        let ch = unsafe { ch.as_ref() }.ok_or_else(|| inval("channel is NULL"))?;
        // SAFETY: forwarded contract on `iov`.
        let n = unsafe { with_iov(iov, iov_count, |s| ch.send(NetAddr::from(dst), s)) }?;
        // A message is at most a lane (< 2^28 bytes), so it fits `ssize_t`.
        Ok(n as ssize_t)
    })
}

/// Shared body of Recv and RecvFrom.
///
/// # Safety
/// `ch` as in `SkifCh_Send`; `cont` is NULL or has room for `CONT_SIZE` iovecs;
/// `cont_count` and `src` are NULL or writable.
unsafe fn recv(
    ch: *mut SkifCh,
    cont: *mut iovec,
    cont_count: *mut c_int,
    src: *mut netaddr_t,
) -> Result<ssize_t> {
    // SAFETY: NULL or a handle of ours used only by this thread (caller's contract).
    let ch = unsafe { ch.as_mut() }.ok_or_else(|| inval("channel is NULL"))?;
    if cont.is_null() || cont_count.is_null() {
        return Err(inval("cont or cont_count is NULL"));
    }
    if !cont.is_aligned() || !cont_count.is_aligned() || !src.is_aligned() {
        return Err(inval("cont, cont_count or src is misaligned"));
    }
    let m = ch.recv()?;
    // Only non-empty segments are handed out, so an empty message has cont_count 0.
    let mut k = 0usize;
    for s in m.segs[..m.count as usize].iter().filter(|s| s.len > 0) {
        debug_assert!(k < CONT_SIZE);
        // SAFETY: `cont` has room for CONT_SIZE entries (caller's contract) and a driver
        // returns at most CONT_SIZE segments (`RawMessage::segs` has that many).
        unsafe {
            cont.add(k).write(iovec {
                iov_base: s.ptr as *mut c_void,
                iov_len: s.len,
            })
        };
        k += 1;
    }
    // SAFETY: non-null, aligned, writable (caller's contract).
    unsafe { cont_count.write(k as c_int) };
    if !src.is_null() {
        // SAFETY: non-null, aligned, writable (caller's contract).
        unsafe { src.write(m.src.raw()) };
    }
    Ok(m.len as ssize_t)
}

/// `SkifCh_Recv`: the next message in place, its length, or -1/errno.
///
/// # Safety
/// As `recv` (with `src` NULL).
#[no_mangle]
pub unsafe extern "C" fn SkifCh_Recv(
    ch: *mut SkifCh,
    cont: *mut iovec,
    cont_count: *mut c_int,
) -> ssize_t {
    // SAFETY: forwarded contract.
    ffi(-1, || unsafe {
        recv(ch, cont, cont_count, std::ptr::null_mut())
    })
}

/// `SkifCh_RecvFrom`: as `SkifCh_Recv`, also storing the sender's address in `*src`
/// (if `src` is not NULL).
///
/// # Safety
/// As `recv`.
#[no_mangle]
pub unsafe extern "C" fn SkifCh_RecvFrom(
    ch: *mut SkifCh,
    cont: *mut iovec,
    cont_count: *mut c_int,
    src: *mut netaddr_t,
) -> ssize_t {
    // SAFETY: forwarded contract.
    ffi(-1, || unsafe { recv(ch, cont, cont_count, src) })
}

/// `SkifCh_RecvComp`: completes the oldest received message; 0 or -1/errno.
///
/// # Safety
/// `ch` as in `SkifCh_Send`; the caller no longer reads that message's segments.
#[no_mangle]
pub unsafe extern "C" fn SkifCh_RecvComp(ch: *mut SkifCh) -> c_int {
    ffi(-1, || {
        // SAFETY: NULL or a handle of ours used only by this thread (caller's contract).
        let ch = unsafe { ch.as_mut() }.ok_or_else(|| inval("channel is NULL"))?;
        // SAFETY: forwarded contract.
        unsafe { ch.complete_oldest() }?;
        Ok(0)
    })
}

/// `SkifCh_Init`: joins the job (reference-counted); 0 or -1/errno. `argc`/`argv` are
/// neither read nor changed and may be NULL.
#[no_mangle]
pub extern "C" fn SkifCh_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    ffi(-1, || {
        job::init().map(|()| 0).inspect_err(|e| {
            // errno alone cannot say what to fix in the launcher environment (skifch.h
            // promises the reason on stderr), EINVAL included.
            say_init_failure(e);
        })
    })
}

/// The reason of a failed `SkifCh_Init`, in one `write` so that ranks' lines do not mix.
fn say_init_failure(e: &Error) {
    use std::io::Write;
    let line = format!("skifch: SkifCh_Init: {e}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// `SkifCh_Finalize`: the call matching the first Init leaves the job; 0 or -1/errno.
#[no_mangle]
pub extern "C" fn SkifCh_Finalize() -> c_int {
    ffi(-1, || job::finalize().map(|()| 0))
}

/// `SkifCh_Rank`: this process's rank, or -1/`EINVAL` outside Init..Finalize.
#[no_mangle]
pub extern "C" fn SkifCh_Rank() -> c_int {
    ffi(-1, job::rank)
}

/// `SkifCh_Size`: ranks in the job, or -1/`EINVAL` outside Init..Finalize.
#[no_mangle]
pub extern "C" fn SkifCh_Size() -> c_int {
    ffi(-1, job::size)
}

/// `SkifCh_Open`: this rank's channel on `port`, or NULL/errno.
#[no_mangle]
pub extern "C" fn SkifCh_Open(port: c_int) -> *mut SkifCh {
    ffi(std::ptr::null_mut(), || job::open(port))
}

/// `SkifCh_Close`: completes held messages and closes the channel; 0 or -1/errno.
///
/// # Safety
/// `ch` is NULL or a handle from `SkifCh_Open` (closing a closed one gives `EBADF`), not in
/// use by another thread; no segment received on it is used after this call.
#[no_mangle]
pub unsafe extern "C" fn SkifCh_Close(ch: *mut SkifCh) -> c_int {
    ffi(-1, || {
        // SAFETY: NULL or a handle from `SkifCh_Open` (open or closed: handles are never
        // freed) not in use by another thread (caller's contract).
        let ch = unsafe { ch.as_mut() }.ok_or_else(|| inval("channel is NULL"))?;
        // SAFETY: forwarded contract: no segment of this channel is read any more.
        unsafe { ch.close() }?;
        Ok(0)
    })
}

/// `SkifCh_Addr`: the address of `port` on `rank`; `SKIFCH_ADDR_INVALID` with `errno`
/// `EINVAL` if either is outside `0..=65535`.
#[no_mangle]
pub extern "C" fn SkifCh_Addr(rank: c_int, port: c_int) -> netaddr_t {
    ffi(SKIFCH_ADDR_INVALID, || {
        match (u16::try_from(rank), u16::try_from(port)) {
            (Ok(r), Ok(p)) => Ok(NetAddr::new(r, p).raw()),
            _ => Err(inval(format!(
                "rank {rank} / port {port} outside 0..=65535"
            ))),
        }
    })
}

/// `SkifCh_MyAddr`: the channel's own address; `SKIFCH_ADDR_INVALID`/`EINVAL` for NULL.
///
/// # Safety
/// `ch` is NULL or a handle from `SkifCh_Open`.
#[no_mangle]
pub unsafe extern "C" fn SkifCh_MyAddr(ch: *const SkifCh) -> netaddr_t {
    ffi(SKIFCH_ADDR_INVALID, || {
        // SAFETY: NULL or a handle of ours (caller's contract).
        let ch = unsafe { ch.as_ref() }.ok_or_else(|| inval("channel is NULL"))?;
        Ok(ch.addr()?.raw())
    })
}

/// `SkifCh_Wait`: 0 once a message is ready, or -1 with `ETIMEDOUT`, `EPIPE`, `EINVAL`.
///
/// # Safety
/// `ch` as in `SkifCh_Send`.
#[no_mangle]
pub unsafe extern "C" fn SkifCh_Wait(ch: *mut SkifCh, timeout_ms: c_int) -> c_int {
    ffi(-1, || {
        // SAFETY: NULL or a handle of ours used only by this thread (caller's contract).
        let ch = unsafe { ch.as_ref() }.ok_or_else(|| inval("channel is NULL"))?;
        let timeout = match timeout_ms {
            -1 => None,
            t => Some(Duration::from_millis(u64::try_from(t).map_err(|_| {
                inval(format!("timeout {t} ms: use -1 (forever) or >= 0"))
            })?)),
        };
        ch.wait(timeout)?;
        Ok(0)
    })
}
