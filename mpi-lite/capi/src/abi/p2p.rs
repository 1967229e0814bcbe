//! Point-to-point (MPI-3.1 chapter 3): sends in the four modes, receives, requests and
//! their completion calls, probes, status queries.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use mpi_lite::engine::{Mode, Outcome, Reaper, ReqId, Status, ANY_SOURCE, ANY_TAG, SENT};
use mpi_lite::error::class;
use mpi_lite::mem::UserBuf;
use mpi_lite::{Error, Result};
use skifch_drivers::DefaultPort;

use super::greq::{self, Slot};
use super::persist::{self, view};
use super::{
    arr_mut, contiguous_bytes, from_c_status, get, mpi_fn, put, put_status, user_buf, MPI_Status,
    STATUS_IGNORE,
};
use crate::state::{call, call_deferring, call_hot, h, shared_level, CState};

const UNDEFINED: c_int = -32766;

pub(crate) fn req_handle(id: ReqId) -> c_int {
    id as c_int + 1
}

fn req_id(r: c_int) -> Result<ReqId> {
    if r <= 0 {
        return Err(Error::Request(format!(
            "request handle {r} is not an active request"
        )));
    }
    Ok((r - 1) as ReqId)
}

fn empty_status() -> Status {
    Status {
        source: ANY_SOURCE,
        tag: ANY_TAG,
        ..Status::default()
    }
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

/// Completes request handle `*r` (already known complete or to wait for): status out,
/// handle to MPI_REQUEST_NULL.
fn finish(st: &CState, r: &mut c_int, wait: bool) -> Result<Option<Status>> {
    if *r == h::REQUEST_NULL {
        return Ok(Some(empty_status()));
    }
    let id = req_id(*r)?;
    if id == SENT {
        // Complete since it started: no engine call (half of a send/receive window).
        *r = h::REQUEST_NULL;
        return Ok(Some(Status::default()));
    }
    let res = if wait {
        st.mpi.wait(id).map(Some)
    } else {
        st.mpi.test(id)
    };
    match res {
        Ok(Some(s)) => {
            *r = h::REQUEST_NULL;
            greq::released(id);
            Ok(Some(s))
        }
        Ok(None) => Ok(None),
        Err(e) => {
            // A failed request is released (unless the wait itself failed: peer lost).
            if !st.mpi.engine().is_request(id) {
                *r = h::REQUEST_NULL;
                greq::released(id);
            }
            Err(e)
        }
    }
}

mpi_fn!(MPI_Wait, PMPI_Wait, (request: *mut c_int, status: *mut MPI_Status) -> c_int {
    let rc = call_deferring("MPI_Wait", h::COMM_WORLD, |st| {
        // SAFETY: the caller's MPI_Request (checked non-null by arr_mut).
        let r = unsafe { arr_mut(request, 1, "request")? };
        if st.defer.pending() {
            // The one deferred receive (`MPI_Irecv` ... `MPI_Wait`): drained from the
            // channel; anything else is posted first (`defer`).
            let mut got = None;
            if st.defer.waitall(&st.mpi, 1, |_, id| r[0] == req_handle(id), |_, s| got = Some(s))? {
                r[0] = h::REQUEST_NULL;
                // SAFETY: NULL, MPI_STATUS_IGNORE or the caller's status.
                unsafe { put_status(status, &got.unwrap_or_default()) };
                return Ok(());
            }
        }
        let s = view(r, |r| finish(st, &mut r[0], true))?.unwrap_or_else(empty_status);
        // SAFETY: NULL, MPI_STATUS_IGNORE or the caller's status.
        unsafe { put_status(status, &s) };
        Ok(())
    });
    greq::after(rc, "MPI_Wait", false, |_| Slot::Status(status))
});

mpi_fn!(MPI_Test, PMPI_Test, (request: *mut c_int, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    let rc = call_hot("MPI_Test", h::COMM_WORLD, |st| {
        // SAFETY: the caller's MPI_Request and flag.
        let r = unsafe { arr_mut(request, 1, "request")? };
        match view(r, |r| finish(st, &mut r[0], false))? {
            Some(s) => {
                // SAFETY: as above; the status as in MPI_Wait.
                unsafe {
                    put(flag, 1, "flag")?;
                    put_status(status, &s);
                }
            }
            // SAFETY: the caller's flag.
            None => unsafe { put(flag, 0, "flag")? },
        }
        Ok(())
    });
    greq::after(rc, "MPI_Test", false, |_| Slot::Status(status))
});

/// Statuses array (or `None` for MPI_STATUSES_IGNORE).
///
/// # Safety
/// `p` is NULL, `MPI_STATUSES_IGNORE`, or `n` writable statuses.
unsafe fn statuses<'a>(p: *mut MPI_Status, n: usize) -> Option<&'a mut [MPI_Status]> {
    if p.is_null() || p as usize == STATUS_IGNORE {
        None
    } else {
        // SAFETY: caller's contract.
        Some(unsafe { std::slice::from_raw_parts_mut(p, n) })
    }
}

/// The status of generalized request `id` at its index in `reqs` (`greq::in_array`).
fn slot_at(reqs: &[(usize, ReqId)], id: ReqId, sts: *mut MPI_Status) -> Slot {
    match reqs.iter().find(|&&(_, r)| r == id) {
        Some(&(i, _)) if !sts.is_null() && sts as usize != STATUS_IGNORE => {
            // SAFETY: not ignored: the caller's array of a status per request.
            Slot::Status(unsafe { sts.add(i) })
        }
        _ => Slot::Status(std::ptr::null_mut()),
    }
}

/// As [`slot_at`] for `MPI_Waitsome`/`Testsome`, whose statuses follow `indices`.
fn some_slot(
    reqs: &[(usize, ReqId)],
    id: ReqId,
    outcount: *const c_int,
    indices: *const c_int,
    sts: *mut MPI_Status,
) -> Slot {
    let Some(&(i, _)) = reqs.iter().find(|&&(_, r)| r == id) else {
        return Slot::Status(std::ptr::null_mut());
    };
    if outcount.is_null() || indices.is_null() {
        return Slot::Status(std::ptr::null_mut());
    }
    // SAFETY: the call wrote `*outcount` indices (it released a request, so it got that far).
    let idx = unsafe { std::slice::from_raw_parts(indices, (*outcount).max(0) as usize) };
    match idx.iter().position(|&k| k as usize == i) {
        Some(k) => slot_at(&[(k, id)], id, sts),
        None => Slot::Status(std::ptr::null_mut()),
    }
}

/// Waits for (or tests) every request; per-request errors go to the statuses.
fn complete_all(
    st: &CState,
    reqs: &mut [c_int],
    mut sts: Option<&mut [MPI_Status]>,
    wait: bool,
) -> Result<bool> {
    // A window of eager sends (every request `SENT` or null) completed as it started: no
    // engine call, no lock (≈ 30 instructions per request otherwise).
    let sent = req_handle(SENT);
    if reqs.iter().all(|&r| r == sent || r == h::REQUEST_NULL) {
        for (i, r) in reqs.iter_mut().enumerate() {
            let s = if *r == sent {
                Status::default()
            } else {
                empty_status()
            };
            *r = h::REQUEST_NULL;
            Outcomes::default().record(i, Ok(s), sts.as_deref_mut());
        }
        return Ok(true);
    }
    let e = st.mpi.engine();
    if wait {
        // One wait for the set (handles that name no engine request, NULL and the
        // invalid ones, map to ids that are settled at once; their reap below reports).
        let id = |i: usize| (reqs[i] as ReqId).wrapping_sub(1);
        e.wait_all(reqs.len(), id)?;
    } else {
        e.progress()?;
        let all = reqs.iter().all(|&r| {
            r == h::REQUEST_NULL || req_id(r).is_ok_and(|id| e.is_done(id) || !e.is_request(id))
        });
        if !all {
            return Ok(false);
        }
    }
    let mut out = Outcomes::default();
    // Every request is settled now: reaped under one lock of the engine.
    let rest = e.test_each(|test| {
        if sts.is_none() {
            // Statuses ignored (the common case): released without copying one out.
            for (i, r) in reqs.iter_mut().enumerate() {
                match reap::<()>(r, test) {
                    Some(Ok(())) => {}
                    Some(Err(e)) => out.record_err(i, e, None),
                    None => return Some(i),
                }
            }
            return None;
        }
        for (i, r) in reqs.iter_mut().enumerate() {
            let res = match reap(r, test) {
                Some(res) => res,
                None => return Some(i), // not complete (another thread's doing): wait below
            };
            out.record(i, res, sts.as_deref_mut());
        }
        None
    })?;
    if let Some(k) = rest {
        for (i, r) in reqs.iter_mut().enumerate().skip(k) {
            let res = finish(st, r, true).map(|s| s.unwrap_or_else(empty_status));
            if let Err(Error::Transport(_)) = res {
                return res.map(|_| true); // the job is broken: no point going on
            }
            out.record(i, res, sts.as_deref_mut());
        }
    }
    match (out.first_err, sts.is_some()) {
        (None, _) if !out.failed => Ok(true),
        (_, true) => Err(Error::InStatus),
        (e, false) => Err(e.unwrap_or(Error::InStatus)),
    }
}

/// The outcome of request handle `*r` if it is complete, as [`finish`] without waiting,
/// through `test` (the engine locked once for a whole set); `None` while pending.
#[inline]
fn reap<T: Outcome>(r: &mut c_int, test: &mut Reaper<'_, DefaultPort>) -> Option<Result<T>> {
    if *r == h::REQUEST_NULL {
        return Some(Ok(T::of(&empty_status())));
    }
    let id = match req_id(*r) {
        Ok(id) => id,
        Err(e) => return Some(Err(e)),
    };
    // An error is the request's own (it is released) or "no such request".
    let res = test.take(id)?;
    *r = h::REQUEST_NULL;
    if id != SENT {
        super::greq::released(id);
    }
    Some(res)
}

/// The per-request outcomes of a multiple-completion call, into the statuses.
#[derive(Default)]
struct Outcomes {
    failed: bool,
    first_err: Option<Error>,
}

impl Outcomes {
    #[inline(always)]
    fn record(&mut self, i: usize, res: Result<Status>, sts: Option<&mut [MPI_Status]>) {
        match res {
            // The common case, kept apart: no error to carry, the status written in place.
            Ok(s) => {
                if let Some(sts) = sts {
                    let mut c = super::to_c_status(&s);
                    c.MPI_ERROR = class::SUCCESS;
                    sts[i] = c;
                }
            }
            Err(e) => self.record_err(i, e, sts),
        }
    }

    #[cold]
    #[inline(never)]
    fn record_err(&mut self, i: usize, e: Error, sts: Option<&mut [MPI_Status]>) {
        self.failed = true;
        if let Some(sts) = sts {
            let mut s = empty_status();
            s.error = e.class();
            sts[i] = super::to_c_status(&s);
        }
        if self.first_err.is_none() {
            self.first_err = Some(e);
        }
    }
}

mpi_fn!(MPI_Waitall, PMPI_Waitall, (count: c_int, array_of_requests: *mut c_int,
        array_of_statuses: *mut MPI_Status) -> c_int {
    let g = greq::in_array(array_of_requests, count);
    let rc = call_deferring("MPI_Waitall", h::COMM_WORLD, |st| {
        let n = super::count(count, "MPI_Waitall")?;
        // SAFETY: `count` requests and statuses of the caller.
        let (reqs, mut sts) = unsafe { (arr_mut(array_of_requests, n, "array_of_requests")?, statuses(array_of_statuses, n)) };
        if st.defer.pending() {
            // A window of deferred receives: drained straight from the channel.
            let is = |i: usize, id: ReqId| reqs[i] == req_handle(id);
            let put = |i: usize, s: Status| Outcomes::default().record(i, Ok(s), sts.as_deref_mut());
            if st.defer.waitall(&st.mpi, n, is, put)? {
                reqs.fill(h::REQUEST_NULL);
                return Ok(());
            }
        }
        view(reqs, |reqs| complete_all(st, reqs, sts, true)).map(|_| ())
    });
    greq::after(rc, "MPI_Waitall", true, |id| slot_at(&g, id, array_of_statuses))
});

mpi_fn!(MPI_Testall, PMPI_Testall, (count: c_int, array_of_requests: *mut c_int, flag: *mut c_int,
        array_of_statuses: *mut MPI_Status) -> c_int {
    let g = greq::in_array(array_of_requests, count);
    let rc = call_hot("MPI_Testall", h::COMM_WORLD, |st| {
        let n = super::count(count, "MPI_Testall")?;
        // SAFETY: `count` requests and statuses of the caller.
        let (reqs, sts) = unsafe { (arr_mut(array_of_requests, n, "array_of_requests")?, statuses(array_of_statuses, n)) };
        if flag.is_null() {
            return Err(Error::Arg("MPI_Testall: flag is NULL".into()));
        }
        let done = view(reqs, |reqs| complete_all(st, reqs, sts, false));
        // SAFETY: checked non-null.
        unsafe { flag.write(matches!(done, Ok(true) | Err(_)) as c_int) };
        done.map(|_| ())
    });
    greq::after(rc, "MPI_Testall", true, |id| slot_at(&g, id, array_of_statuses))
});

/// Indices of the live requests that are complete.
fn done_indices(st: &CState, reqs: &[c_int]) -> Vec<usize> {
    let e = st.mpi.engine();
    reqs.iter()
        .enumerate()
        .filter(|(_, &r)| {
            r != h::REQUEST_NULL && req_id(r).is_ok_and(|id| e.is_done(id) || !e.is_request(id))
        })
        .map(|(i, _)| i)
        .collect()
}

fn any_some(
    st: &CState,
    reqs: &mut [c_int],
    wait: bool,
    all: bool,
) -> Result<Vec<(usize, Result<Status>)>> {
    for &r in reqs.iter() {
        if r != h::REQUEST_NULL {
            req_id(r)?;
        }
    }
    if reqs.iter().all(|&r| r == h::REQUEST_NULL) {
        return Ok(Vec::new());
    }
    if wait {
        let ids: Vec<ReqId> = reqs
            .iter()
            .filter(|&&r| r != h::REQUEST_NULL)
            .map(|&r| (r - 1) as ReqId)
            .collect();
        st.mpi
            .engine()
            .wait_until(|e| ids.iter().any(|&id| e.is_done(id) || !e.is_request(id)))?;
    } else {
        st.mpi.engine().progress()?;
    }
    let mut idx = done_indices(st, reqs);
    if !all {
        idx.truncate(1);
    }
    Ok(idx
        .into_iter()
        .map(|i| {
            (
                i,
                finish(st, &mut reqs[i], true).map(|s| s.unwrap_or_else(empty_status)),
            )
        })
        .collect())
}

mpi_fn!(MPI_Waitany, PMPI_Waitany, (count: c_int, array_of_requests: *mut c_int, index: *mut c_int,
        status: *mut MPI_Status) -> c_int {
    let rc = call("MPI_Waitany", h::COMM_WORLD, |st| {
        let n = super::count(count, "MPI_Waitany")?;
        // SAFETY: `count` requests of the caller.
        let reqs = unsafe { arr_mut(array_of_requests, n, "array_of_requests")? };
        let got = view(reqs, |reqs| any_some(st, reqs, true, false))?;
        let (i, s) = match got.into_iter().next() {
            Some((i, s)) => (i as c_int, s?),
            None => (UNDEFINED, empty_status()),
        };
        // SAFETY: the caller's index and status.
        unsafe {
            put(index, i, "index")?;
            put_status(status, &s);
        }
        Ok(())
    });
    greq::after(rc, "MPI_Waitany", false, |_| Slot::Status(status))
});

mpi_fn!(MPI_Testany, PMPI_Testany, (count: c_int, array_of_requests: *mut c_int, index: *mut c_int,
        flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    let rc = call("MPI_Testany", h::COMM_WORLD, |st| {
        let n = super::count(count, "MPI_Testany")?;
        // SAFETY: `count` requests of the caller.
        let reqs = unsafe { arr_mut(array_of_requests, n, "array_of_requests")? };
        let (none_active, got) = view(reqs, |reqs| {
            (reqs.iter().all(|&r| r == h::REQUEST_NULL), any_some(st, reqs, false, false))
        });
        let got = got?;
        let (i, f, s) = match got.into_iter().next() {
            Some((i, s)) => (i as c_int, 1, s?),
            None => (UNDEFINED, none_active as c_int, empty_status()),
        };
        // SAFETY: the caller's index, flag and status.
        unsafe {
            put(index, i, "index")?;
            put(flag, f, "flag")?;
            if f == 1 {
                put_status(status, &s);
            }
        }
        Ok(())
    });
    greq::after(rc, "MPI_Testany", false, |_| Slot::Status(status))
});

fn some(
    st: &CState,
    reqs: &mut [c_int],
    wait: bool,
    outcount: *mut c_int,
    indices: *mut c_int,
    sts: *mut MPI_Status,
) -> Result<()> {
    let n = reqs.len();
    let got = any_some(st, reqs, wait, true)?;
    if reqs.iter().all(|&r| r == h::REQUEST_NULL) && got.is_empty() {
        // SAFETY: the caller's int.
        return unsafe { put(outcount, UNDEFINED, "outcount") };
    }
    // SAFETY: up to `n` indices and statuses of the caller.
    let (idx, mut sts) = unsafe { (arr_mut(indices, n, "array_of_indices")?, statuses(sts, n)) };
    let mut failed = false;
    for (k, (i, r)) in got.iter().enumerate() {
        idx[k] = *i as c_int;
        let s = match r {
            Ok(s) => *s,
            Err(e) => {
                failed = true;
                Status {
                    error: e.class(),
                    ..empty_status()
                }
            }
        };
        if let Some(sts) = sts.as_deref_mut() {
            sts[k] = super::to_c_status(&s);
        }
    }
    // SAFETY: the caller's int.
    unsafe { put(outcount, got.len() as c_int, "outcount")? };
    if failed {
        return Err(Error::InStatus);
    }
    Ok(())
}

mpi_fn!(MPI_Waitsome, PMPI_Waitsome, (incount: c_int, array_of_requests: *mut c_int, outcount: *mut c_int,
        array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    let g = greq::in_array(array_of_requests, incount);
    let rc = call("MPI_Waitsome", h::COMM_WORLD, |st| {
        let n = super::count(incount, "MPI_Waitsome")?;
        // SAFETY: `incount` requests of the caller.
        let reqs = unsafe { arr_mut(array_of_requests, n, "array_of_requests")? };
        view(reqs, |reqs| some(st, reqs, true, outcount, array_of_indices, array_of_statuses))
    });
    greq::after(rc, "MPI_Waitsome", true, |id| some_slot(&g, id, outcount, array_of_indices, array_of_statuses))
});

mpi_fn!(MPI_Testsome, PMPI_Testsome, (incount: c_int, array_of_requests: *mut c_int, outcount: *mut c_int,
        array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    let g = greq::in_array(array_of_requests, incount);
    let rc = call("MPI_Testsome", h::COMM_WORLD, |st| {
        let n = super::count(incount, "MPI_Testsome")?;
        // SAFETY: `incount` requests of the caller.
        let reqs = unsafe { arr_mut(array_of_requests, n, "array_of_requests")? };
        view(reqs, |reqs| some(st, reqs, false, outcount, array_of_indices, array_of_statuses))
    });
    greq::after(rc, "MPI_Testsome", true, |id| some_slot(&g, id, outcount, array_of_indices, array_of_statuses))
});

mpi_fn!(MPI_Request_free, PMPI_Request_free, (request: *mut c_int) -> c_int {
    let rc = call("MPI_Request_free", h::COMM_WORLD, |st| {
        // SAFETY: the caller's MPI_Request.
        let r = unsafe { arr_mut(request, 1, "request")? };
        if let Some(res) = persist::free(st, r[0]) {
            res?;
            r[0] = h::REQUEST_NULL;
            return Ok(());
        }
        let id = req_id(r[0])?;
        st.mpi.engine().request_free(id)?;
        if !st.mpi.engine().is_request(id) {
            greq::released(id);
        }
        r[0] = h::REQUEST_NULL;
        Ok(())
    });
    greq::after(rc, "MPI_Request_free", false, |_| Slot::Freed)
});

mpi_fn!(MPI_Request_get_status, PMPI_Request_get_status, (request: c_int, flag: *mut c_int,
        status: *mut MPI_Status) -> c_int {
    let mut done = false;
    let rc = call("MPI_Request_get_status", h::COMM_WORLD, |st| {
        let mut one = [request];
        let s = view(&mut one, |r| request_status(st, r[0]))?;
        done = s.is_some();
        // SAFETY: the caller's flag and status.
        unsafe {
            put(flag, s.is_some() as c_int, "flag")?;
            if let Some(s) = s {
                put_status(status, &s);
            }
        }
        Ok(())
    });
    // A completed generalized request's status is its query function's (§12.2).
    if rc == class::SUCCESS && done {
        return greq::query(request, status);
    }
    rc
});

/// `MPI_Request_get_status` of an engine request handle.
fn request_status(st: &CState, request: c_int) -> Result<Option<Status>> {
    if request == h::REQUEST_NULL {
        return Ok(Some(empty_status()));
    }
    st.mpi.engine().peek(req_id(request)?)
}

mpi_fn!(MPI_Cancel, PMPI_Cancel, (request: *mut c_int) -> c_int {
    if !request.is_null() {
        // SAFETY: non-null: the caller's MPI_Request.
        if let Some(rc) = greq::cancel(unsafe { request.read() }) {
            return rc; // a generalized request: its cancel function
        }
    }
    call("MPI_Cancel", h::COMM_WORLD, |st| {
        // SAFETY: the caller's MPI_Request.
        let mut r = [unsafe { get(request, "request")? }];
        if r[0] == h::REQUEST_NULL {
            // MPI-3.1 §3.8.4: the argument must be a request, MPI_REQUEST_NULL is not one.
            return Err(Error::Request("MPI_Cancel of MPI_REQUEST_NULL".into()));
        }
        view(&mut r, |r| match r[0] {
            h::REQUEST_NULL => Ok(()), // an inactive persistent request: nothing runs
            x => st.mpi.engine().cancel(req_id(x)?),
        })
    })
});

mpi_fn!(MPI_Test_cancelled, PMPI_Test_cancelled, (status: *const MPI_Status, flag: *mut c_int) -> c_int {
    call("MPI_Test_cancelled", h::COMM_WORLD, |_| {
        // SAFETY: the caller's status and flag.
        unsafe {
            let s = get(status, "status")?;
            put(flag, s.cancelled, "flag")
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
