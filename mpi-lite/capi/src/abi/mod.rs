//! The `extern "C"` functions of `mpi.h`, grouped as in the header.
#![allow(unsafe_code)] // `#[no_mangle]` entry points taking raw pointers from C
#![allow(
    non_snake_case,
    non_camel_case_types,
    non_upper_case_globals,
    clippy::missing_safety_doc
)]
// The C signatures are the MPI standard's.
#![allow(clippy::too_many_arguments)]

use std::ffi::{c_char, c_int, c_void};

use mpi_lite::datatype::{Basic, Datatype};
use mpi_lite::mem::UserBuf;
use mpi_lite::{Error, Result, Status};

use crate::state::{h, CState};

mod attr;
mod coll;
mod comms;
mod commx;
mod complete;
mod dynamic;
mod env;
mod errh;
mod greq;
mod inter;
pub(crate) mod misc;
mod mpi1;
mod mprobe;
mod nbc;
mod neighbor;
mod ops;
mod p2p;
mod persist;
mod rma;
mod rma_ops;
mod rma_sync;
mod topo;
mod typeinfo;
mod types;

pub use attr::*;
pub use coll::*;
pub use comms::*;
pub use commx::*;
pub use complete::*;
pub use dynamic::*;
pub use env::*;
pub use errh::*;
pub use greq::*;
pub use misc::*;
pub use mpi1::*;
pub use mprobe::*;
pub use nbc::*;
pub use neighbor::*;
pub use ops::*;
pub use p2p::*;
pub use persist::*;
pub use rma::*;
pub use topo::*;
pub use typeinfo::*;
pub use types::*;

/// Defines `PMPI_<name>` with the body and `MPI_<name>` forwarding to it. The contract of
/// each is the MPI standard's for the call (pointers valid as documented in `mpi.h`).
macro_rules! mpi_fn {
    ($mpi:ident, $pmpi:ident, ($($a:ident : $t:ty),* $(,)?) -> $ret:ty $body:block) => {
        #[no_mangle]
        pub unsafe extern "C" fn $pmpi($($a: $t),*) -> $ret $body
        #[no_mangle]
        pub unsafe extern "C" fn $mpi($($a: $t),*) -> $ret {
            // SAFETY: the same contract as the PMPI function.
            unsafe { $pmpi($($a),*) }
        }
    };
}
pub(crate) use mpi_fn;

/// `MPI_Status` of `mpi.h`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MPI_Status {
    pub MPI_SOURCE: c_int,
    pub MPI_TAG: c_int,
    pub MPI_ERROR: c_int,
    pub cancelled: c_int,
    pub count: i64,
}

/// `MPI_STATUS(ES)_IGNORE`.
pub(crate) const STATUS_IGNORE: usize = 1;
/// `MPI_IN_PLACE`.
pub(crate) const IN_PLACE: usize = usize::MAX;

pub(crate) fn to_c_status(s: &Status) -> MPI_Status {
    MPI_Status {
        MPI_SOURCE: s.source,
        MPI_TAG: s.tag,
        MPI_ERROR: s.error,
        cancelled: s.cancelled as c_int,
        count: s.bytes as i64,
    }
}

pub(crate) fn from_c_status(s: &MPI_Status) -> Status {
    Status {
        source: s.MPI_SOURCE,
        tag: s.MPI_TAG,
        error: s.MPI_ERROR,
        bytes: s.count.max(0) as usize,
        cancelled: s.cancelled != 0,
    }
}

/// Writes a status unless `p` is NULL or `MPI_STATUS_IGNORE`: the status of a call that
/// returns one, whose `MPI_ERROR` field is left as the program set it (MPI-3.1 §3.2.5:
/// only the calls that return several statuses set it).
///
/// # Safety
/// `p` is NULL, `MPI_STATUS_IGNORE`, or points to a writable `MPI_Status`.
pub(crate) unsafe fn put_status(p: *mut MPI_Status, s: &Status) {
    if !p.is_null() && p as usize != STATUS_IGNORE {
        let c = to_c_status(s);
        // SAFETY: caller's contract: `p` is the caller's status, valid for writes; each
        // field but `MPI_ERROR` is written on its own (the status may be uninitialized,
        // so nothing of it is read).
        unsafe {
            std::ptr::addr_of_mut!((*p).MPI_SOURCE).write(c.MPI_SOURCE);
            std::ptr::addr_of_mut!((*p).MPI_TAG).write(c.MPI_TAG);
            std::ptr::addr_of_mut!((*p).cancelled).write(c.cancelled);
            std::ptr::addr_of_mut!((*p).count).write(c.count);
        }
    }
}

/// Writes `v` to an output argument.
///
/// # Safety
/// `p` is NULL (an error) or valid for writing a `T`.
pub(crate) unsafe fn put<T>(p: *mut T, v: T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Error::Arg(format!("{what} is NULL")));
    }
    // SAFETY: non-null, writable per the caller's contract.
    unsafe { p.write(v) };
    Ok(())
}

/// Reads an input argument.
///
/// # Safety
/// `p` is NULL (an error) or valid for reading a `T`.
pub(crate) unsafe fn get<T: Copy>(p: *const T, what: &str) -> Result<T> {
    if p.is_null() {
        return Err(Error::Arg(format!("{what} is NULL")));
    }
    // SAFETY: non-null, readable per the caller's contract.
    Ok(unsafe { p.read() })
}

/// A C array as a slice (`n == 0`: empty, whatever the pointer).
///
/// # Safety
/// If `n > 0`, `p` is NULL (an error) or points to `n` readable `T`s that outlive `'a`.
pub(crate) unsafe fn arr<'a, T>(p: *const T, n: c_int, what: &str) -> Result<&'a [T]> {
    let n =
        usize::try_from(n).map_err(|_| Error::Count(format!("{what}: count {n} is negative")))?;
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Error::Arg(format!("{what} is NULL")));
    }
    // SAFETY: non-null, `n` readable elements per the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// A writable C array as a slice.
///
/// # Safety
/// If `n > 0`, `p` is NULL (an error) or points to `n` writable `T`s, not otherwise
/// referenced during `'a`.
pub(crate) unsafe fn arr_mut<'a, T>(p: *mut T, n: usize, what: &str) -> Result<&'a mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Error::Arg(format!("{what} is NULL")));
    }
    // SAFETY: non-null, `n` writable elements per the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

pub(crate) fn count(n: c_int, call: &str) -> Result<usize> {
    usize::try_from(n).map_err(|_| Error::Count(format!("{call}: count {n} is negative")))
}

/// The predefined type of handle `dt`, borrowed from the process-wide table (no table
/// lock, no reference count to bump per call); their handles are 1..FIRST_USER_TYPE.
#[inline]
pub(crate) fn basic_type(dt: c_int) -> Option<&'static Datatype> {
    (dt as usize)
        .checked_sub(1)
        .filter(|_| dt > 0 && (dt as usize) < h::FIRST_USER_TYPE)
        .and_then(Datatype::basic_at)
}

/// The user buffer (`buf`, `count`, `datatype`) of a communication call.
///
/// # Safety
/// The MPI contract: the buffer holds `count` elements of the type and stays valid (and
/// untouched by the program, for receives) until the operation completes.
pub(crate) unsafe fn user_buf(
    st: &CState,
    buf: *const c_void,
    n: c_int,
    dt: c_int,
    call: &str,
) -> Result<UserBuf> {
    let n = count(n, call)?;
    if let Some(d) = basic_type(dt) {
        if buf.is_null() && n > 0 && d.size() > 0 {
            return Err(null_buf(call, n, d));
        }
        // SAFETY: forwarded contract.
        return Ok(unsafe { UserBuf::new_static(buf.cast(), n, d) });
    }
    let d: Datatype = st.dtype(dt)?;
    // SAFETY: forwarded contract.
    unsafe { typed_buf(buf, n, d, call) }
}

/// The user buffer of `n` elements of type `d` (a persistent request's, kept by the
/// request itself: the program may have freed its handle).
///
/// # Safety
/// As [`user_buf`].
pub(crate) unsafe fn typed_buf(
    buf: *const c_void,
    n: usize,
    d: Datatype,
    call: &str,
) -> Result<UserBuf> {
    // A count near INT_MAX of a large type: MPI_ERR_COUNT, before any byte is touched.
    d.span(n)?;
    // NULL is MPI_BOTTOM, legal with derived types of absolute addresses only.
    if buf.is_null() && n > 0 && d.size() > 0 && d.predefined().is_some() {
        return Err(null_buf(call, n, &d));
    }
    // SAFETY: forwarded contract.
    Ok(unsafe { UserBuf::new(buf.cast(), n, d) })
}

/// [`Basic::dense_size`] of each predefined type by handle − 1 (0: not one dense run): one
/// load on the per-call path instead of a match over 42 types.
const DENSE: [u8; Basic::ALL.len()] = {
    let mut t = [0u8; Basic::ALL.len()];
    let mut i = 0;
    while i < t.len() {
        t[i] = match Basic::ALL[i].dense_size() {
            Some(n) => n as u8,
            None => 0,
        };
        i += 1;
    }
    t
};

/// The bytes of `n` elements of predefined type `dt` when they are one dense run; `None`
/// for derived and padded types and a negative count.
#[inline(always)]
pub(crate) fn dense_len(n: c_int, dt: c_int) -> Option<usize> {
    // Handle h of a predefined type is DENSE[h - 1]; 0 and negative handles wrap past it.
    let size = *DENSE.get((dt as usize).wrapping_sub(1))? as usize;
    if size == 0 || n < 0 {
        return None;
    }
    size.checked_mul(n as usize)
}

/// The bytes of `n` elements of predefined type `dt` at `buf` when they are one run (the
/// common case of every point-to-point call): (address, length). `None` for derived
/// types, padded pair types, a negative count or a NULL buffer with data (the general
/// path handles and reports those).
#[inline(always)]
pub(crate) fn contiguous_bytes(
    buf: *const c_void,
    n: c_int,
    dt: c_int,
) -> Option<(*mut u8, usize)> {
    let len = dense_len(n, dt)?;
    if len == 0 {
        return Some((std::ptr::NonNull::<u8>::dangling().as_ptr(), 0));
    }
    if buf.is_null() {
        return None;
    }
    Some((buf.cast::<u8>().cast_mut(), len))
}

#[cold]
fn null_buf(call: &str, n: usize, d: &Datatype) -> Error {
    Error::Buffer(format!(
        "{call}: buffer is NULL for {n} elements of {}",
        d.name()
    ))
}

/// Copies `s` into a C string buffer of `max` bytes (NUL included), length to `len`.
///
/// # Safety
/// `dst` has room for `max` bytes; `len` is writable.
pub(crate) unsafe fn put_str(dst: *mut c_char, len: *mut c_int, s: &str, max: usize) -> Result<()> {
    if dst.is_null() {
        return Err(Error::Arg("output string is NULL".into()));
    }
    let b = s.as_bytes();
    let n = b.len().min(max - 1);
    // SAFETY: `dst` has `max` bytes (caller), `n + 1 <= max`.
    unsafe {
        std::ptr::copy_nonoverlapping(b.as_ptr(), dst.cast::<u8>(), n);
        dst.add(n).write(0);
    }
    if !len.is_null() {
        // SAFETY: non-null, writable (caller).
        unsafe { len.write(n as c_int) };
    }
    Ok(())
}

/// Reads a C string argument.
///
/// # Safety
/// `p` is NULL (an error) or a NUL-terminated string.
pub(crate) unsafe fn get_str(p: *const c_char, what: &str) -> Result<String> {
    if p.is_null() {
        return Err(Error::Arg(format!("{what} is NULL")));
    }
    // SAFETY: NUL-terminated per the caller's contract.
    Ok(unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned())
}
