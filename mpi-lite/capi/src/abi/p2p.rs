//! Point-to-point (MPI-3.1 chapter 3): sends in the four modes, receives, the buffer of
//! buffered sends, probes, status queries; the requests' completion calls are in
//! `complete`.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use mpi_lite::comm::UNDEFINED;
use mpi_lite::engine::{Mode, ReqId, SENT};
use mpi_lite::mem::UserBuf;
use mpi_lite::{Error, Result};

use super::{
    contiguous_bytes, from_c_status, mpi_fn, put, put_status, user_buf, MPI_Status, STATUS_IGNORE,
};
use crate::state::{call, call_deferring, call_hot, h, shared_level, CState};

pub(crate) fn req_handle(id: ReqId) -> c_int {
    id as c_int + 1
}

/// The engine request of handle `r` (the inverse of [`req_handle`]).
pub(super) fn req_id(r: c_int) -> Result<ReqId> {
    if r <= 0 {
        return Err(Error::Request(format!(
            "request handle {r} is not an active request"
        )));
    }
    Ok((r - 1) as ReqId)
}

/// # Safety
/// MPI buffer contract (see `user_buf`).
pub(crate) unsafe fn start_send(
    st: &CState,
    buf: *const c_void,
    n: c_int,
    dt: c_int,
    dst: c_int,
    tag: c_int,
    comm: c_int,
    mode: Option<Mode>,
    call: &str,
) -> Result<ReqId> {
    let c = st.comm(comm)?;
    // SAFETY: forwarded MPI buffer contract.
    let b = unsafe { user_buf(st, buf, n, dt, call)? };
    send_in(st, &c, b, dst, tag, mode)
}

/// A nonblocking send of `b` in `mode` (`None`: buffered).
pub(crate) fn send_in(
    st: &CState,
    c: &mpi_lite::comm::CommData,
    b: UserBuf,
    dst: c_int,
    tag: c_int,
    mode: Option<Mode>,
) -> Result<ReqId> {
    match mode {
        Some(m) => st.mpi.isend(c, b, dst, tag, m),
        None => st.mpi.ibsend(c, &b, dst, tag),
    }
}

macro_rules! blocking_send {
    ($mpi:ident, $pmpi:ident, $mode:expr, $name:literal) => {
        mpi_fn!($mpi, $pmpi, (buf: *const c_void, count: c_int, datatype: c_int, dest: c_int,
                tag: c_int, comm: c_int) -> c_int {
            call($name, comm, |st| {
                // SAFETY: blocking: the buffer is valid for the whole call.
                let id = unsafe { start_send(st, buf, count, datatype, dest, tag, comm, $mode, $name)? };
                st.mpi.wait(id).map(|_| ())
            })
        });
    };
}
mpi_fn!(MPI_Send, PMPI_Send, (buf: *const c_void, count: c_int, datatype: c_int, dest: c_int,
        tag: c_int, comm: c_int) -> c_int {
    call_hot("MPI_Send", comm, |st| {
        if let Some((p, n)) = contiguous_bytes(buf, count, datatype) {
            // SAFETY: MPI's contract for a blocking send: `count` elements of `datatype`
            // (here one run of `n` bytes at `p`) are readable for the whole call.
            let data = unsafe { std::slice::from_raw_parts(p, n) };
            if st.with_comm(comm, |c| st.mpi.try_send_bytes(c, data, dest, tag))? {
                return Ok(());
            }
        }
        let c = st.comm(comm)?;
        // SAFETY: blocking: the buffer is valid for the whole call.
        let b = unsafe { user_buf(st, buf, count, datatype, "MPI_Send")? };
        st.mpi.send(&c, b, dest, tag)
    })
});
blocking_send!(MPI_Ssend, PMPI_Ssend, Some(Mode::Sync), "MPI_Ssend");
// Ready mode: the receive is posted by contract, standard mode is a correct implementation.
blocking_send!(MPI_Rsend, PMPI_Rsend, Some(Mode::Standard), "MPI_Rsend");
blocking_send!(MPI_Bsend, PMPI_Bsend, None, "MPI_Bsend");

macro_rules! nonblocking_send {
    ($mpi:ident, $pmpi:ident, $mode:expr, $name:literal) => {
        mpi_fn!($mpi, $pmpi, (buf: *const c_void, count: c_int, datatype: c_int, dest: c_int,
                tag: c_int, comm: c_int, request: *mut c_int) -> c_int {
            call_hot($name, comm, |st| {
                if request.is_null() {
                    return Err(Error::Arg(concat!($name, ": request is NULL").into()));
                }
                // A standard-mode eager send of contiguous bytes completes as it starts: the
                // blocking send's path, and the request is `SENT` (no table entry).
                if $mode == Some(Mode::Standard) {
                    if let Some((p, n)) = contiguous_bytes(buf, count, datatype) {
                        // SAFETY: MPI contract: the buffer is readable until the request
                        // completes; here it completes before the call returns.
                        let data = unsafe { std::slice::from_raw_parts(p, n) };
                        if st.with_comm(comm, |c| st.mpi.try_send_bytes(c, data, dest, tag))? {
                            // SAFETY: checked non-null, the caller's MPI_Request.
                            return unsafe { put(request, req_handle(SENT), "request") };
                        }
                    }
                }
                // SAFETY: MPI contract: the buffer stays valid until the request completes.
                let id = unsafe { start_send(st, buf, count, datatype, dest, tag, comm, $mode, $name)? };
                // SAFETY: checked non-null, the caller's MPI_Request.
                unsafe { put(request, req_handle(id), "request") }
            })
        });
    };
}
nonblocking_send!(MPI_Isend, PMPI_Isend, Some(Mode::Standard), "MPI_Isend");
nonblocking_send!(MPI_Issend, PMPI_Issend, Some(Mode::Sync), "MPI_Issend");
nonblocking_send!(MPI_Irsend, PMPI_Irsend, Some(Mode::Standard), "MPI_Irsend");
nonblocking_send!(MPI_Ibsend, PMPI_Ibsend, None, "MPI_Ibsend");

mpi_fn!(MPI_Recv, PMPI_Recv, (buf: *mut c_void, count: c_int, datatype: c_int, source: c_int,
        tag: c_int, comm: c_int, status: *mut MPI_Status) -> c_int {
    call_hot("MPI_Recv", comm, |st| {
        if let Some((p, n)) = contiguous_bytes(buf, count, datatype) {
            // SAFETY: MPI's contract for a blocking receive: the `n` bytes at `p` (one run
            // of `count` elements of `datatype`) are writable and not touched by the program
            // for the whole call; the slice ends before the general path below.
            let bytes = unsafe { std::slice::from_raw_parts_mut(p, n) };
            let direct = st.with_comm(comm, |c| st.mpi.try_recv_bytes(c, bytes, source, tag))?;
            if let Some(s) = direct {
                // SAFETY: NULL, MPI_STATUS_IGNORE or the caller's status.
                unsafe { put_status(status, &s) };
                return Ok(());
            }
        }
        let c = st.comm(comm)?;
        // SAFETY: blocking: the buffer is valid and ours for the whole call.
        let b = unsafe { user_buf(st, buf, count, datatype, "MPI_Recv")? };
        let s = st.mpi.recv(&c, b, source, tag)?;
        // SAFETY: NULL, MPI_STATUS_IGNORE or the caller's status.
        unsafe { put_status(status, &s) };
        Ok(())
    })
});

mpi_fn!(MPI_Irecv, PMPI_Irecv, (buf: *mut c_void, count: c_int, datatype: c_int, source: c_int,
        tag: c_int, comm: c_int, request: *mut c_int) -> c_int {
    call_deferring("MPI_Irecv", comm, |st| {
        if request.is_null() {
            return Err(Error::Arg("MPI_Irecv: request is NULL".into()));
        }
        if let Some((p, n)) = contiguous_bytes(buf, count, datatype) {
            // Plain bytes: no type map consulted per message, no datatype to drop.
            // Written down, posted by the next other call (`defer`), or posted now.
            let defer = !shared_level() && st.defer.wanted();
            if !defer && st.defer.pending() {
                st.defer.flush(&st.mpi)?;
            }
            // One call site of `with_comm`'s closure (two cost a call frame).
            let id = st.with_comm(comm, |c| {
                if defer {
                    // SAFETY: MPI contract: the `n` bytes at `p` (one run of `count`
                    // elements of `datatype`) are the library's until the request completes.
                    unsafe { st.defer.irecv(&st.mpi, c, p, n, source, tag) }
                } else {
                    // SAFETY: as above.
                    st.mpi.irecv(c, unsafe { UserBuf::bytes(p, n) }, source, tag)
                }
            })?;
            // SAFETY: checked non-null.
            return unsafe { put(request, req_handle(id), "request") };
        }
        if st.defer.pending() {
            st.defer.flush(&st.mpi)?;
        }
        let c = st.comm(comm)?;
        // SAFETY: MPI contract: the buffer is the library's until the request completes.
        let b = unsafe { user_buf(st, buf, count, datatype, "MPI_Irecv")? };
        let id = st.mpi.irecv(&c, b, source, tag)?;
        // SAFETY: checked non-null.
        unsafe { put(request, req_handle(id), "request") }
    })
});

mpi_fn!(MPI_Sendrecv, PMPI_Sendrecv, (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int,
        dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int,
        source: c_int, recvtag: c_int, comm: c_int, status: *mut MPI_Status) -> c_int {
    call("MPI_Sendrecv", comm, |st| {
        let c = st.comm(comm)?;
        // SAFETY: blocking: both buffers are valid for the whole call.
        let (sb, rb) = unsafe {
            (user_buf(st, sendbuf, sendcount, sendtype, "MPI_Sendrecv")?,
             user_buf(st, recvbuf, recvcount, recvtype, "MPI_Sendrecv")?)
        };
        let rs = st.mpi.sendrecv(&c, sb, dest, sendtag, rb, source, recvtag)?;
        // SAFETY: NULL, MPI_STATUS_IGNORE or the caller's status.
        unsafe { put_status(status, &rs) };
        Ok(())
    })
});

mpi_fn!(MPI_Sendrecv_replace, PMPI_Sendrecv_replace, (buf: *mut c_void, count: c_int, datatype: c_int,
        dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: c_int,
        status: *mut MPI_Status) -> c_int {
    call("MPI_Sendrecv_replace", comm, |st| {
        let c = st.comm(comm)?;
        // SAFETY: blocking: the buffer is valid for the whole call.
        let rb = unsafe { user_buf(st, buf, count, datatype, "MPI_Sendrecv_replace")? };
        // The outgoing data is copied first: the receive overwrites the buffer.
        let sb = UserBuf::owned(rb.to_packed()?);
        let rs = st.mpi.sendrecv(&c, sb, dest, sendtag, rb, source, recvtag)?;
        // SAFETY: NULL, MPI_STATUS_IGNORE or the caller's status.
        unsafe { put_status(status, &rs) };
        Ok(())
    })
});

/// The address given to `MPI_Buffer_attach`, handed back by `MPI_Buffer_detach`.
static BSEND_ADDR: AtomicUsize = AtomicUsize::new(0);

mpi_fn!(MPI_Buffer_attach, PMPI_Buffer_attach, (buffer: *mut c_void, size: c_int) -> c_int {
    call("MPI_Buffer_attach", h::COMM_WORLD, |st| {
        let n = usize::try_from(size).map_err(|_| Error::Buffer(format!("MPI_Buffer_attach: size {size}")))?;
        if buffer.is_null() && n > 0 {
            return Err(Error::Buffer("MPI_Buffer_attach: buffer is NULL".into()));
        }
        st.mpi.buffer_attach(n)?;
        BSEND_ADDR.store(buffer as usize, Ordering::Relaxed);
        Ok(())
    })
});

mpi_fn!(MPI_Buffer_detach, PMPI_Buffer_detach, (buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    call("MPI_Buffer_detach", h::COMM_WORLD, |st| {
        let n = st.mpi.buffer_detach()?;
        let addr = BSEND_ADDR.swap(0, Ordering::Relaxed);
        // SAFETY: `buffer_addr` is the address of the caller's `void *` (MPI-3.1 §3.6.1).
        unsafe {
            put(buffer_addr.cast::<*mut c_void>(), addr as *mut c_void, "buffer_addr")?;
            put(size, n as c_int, "size")
        }
    })
});

mpi_fn!(MPI_Probe, PMPI_Probe, (source: c_int, tag: c_int, comm: c_int, status: *mut MPI_Status) -> c_int {
    call("MPI_Probe", comm, |st| {
        let c = st.comm(comm)?;
        let s = st.mpi.probe(&c, source, tag)?;
        // SAFETY: NULL, MPI_STATUS_IGNORE or the caller's status.
        unsafe { put_status(status, &s) };
        Ok(())
    })
});

mpi_fn!(MPI_Iprobe, PMPI_Iprobe, (source: c_int, tag: c_int, comm: c_int, flag: *mut c_int,
        status: *mut MPI_Status) -> c_int {
    call("MPI_Iprobe", comm, |st| {
        let c = st.comm(comm)?;
        let s = st.mpi.iprobe(&c, source, tag)?;
        // SAFETY: the caller's flag and status.
        unsafe {
            put(flag, s.is_some() as c_int, "flag")?;
            if let Some(s) = s {
                put_status(status, &s);
            }
        }
        Ok(())
    })
});

/// Whole elements of `dt` (`MPI_Get_count`) or predefined elements (`MPI_Get_elements`,
/// MPI-3.1 §4.1.11) in the bytes a status records; `None` when they are not a whole
/// number (`MPI_UNDEFINED`).
pub(crate) fn count_of(
    st: &CState,
    status: *const MPI_Status,
    dt: c_int,
    elements: bool,
) -> Result<Option<usize>> {
    if status.is_null() || status as usize == STATUS_IGNORE {
        return Err(Error::Arg("status is NULL or MPI_STATUS_IGNORE".into()));
    }
    // SAFETY: non-null: the caller's status.
    let s = from_c_status(unsafe { &*status });
    let d = st.dtype_any(dt)?;
    if elements {
        return Ok(d.elements_in(s.bytes));
    }
    Ok(match d.size() {
        0 => Some(0),
        unit => s.bytes.is_multiple_of(unit).then_some(s.bytes / unit),
    })
}

/// `count_of` as the `int` of `MPI_Get_count` / `MPI_Get_elements`.
fn int_count(n: Option<usize>) -> Result<c_int> {
    match n {
        None => Ok(UNDEFINED),
        Some(n) => i32::try_from(n).map_err(|_| Error::Count("count does not fit an int".into())),
    }
}

mpi_fn!(MPI_Get_count, PMPI_Get_count, (status: *const MPI_Status, datatype: c_int, count: *mut c_int) -> c_int {
    call("MPI_Get_count", h::COMM_WORLD, |st| {
        let n = int_count(count_of(st, status, datatype, false)?)?;
        // SAFETY: the caller's int.
        unsafe { put(count, n, "count") }
    })
});

mpi_fn!(MPI_Get_elements, PMPI_Get_elements, (status: *const MPI_Status, datatype: c_int, count: *mut c_int) -> c_int {
    call("MPI_Get_elements", h::COMM_WORLD, |st| {
        let n = int_count(count_of(st, status, datatype, true)?)?;
        // SAFETY: the caller's int.
        unsafe { put(count, n, "count") }
    })
});
