//! Completion of point-to-point requests (MPI-3.1 §3.7.3-§3.8): wait, test and their
//! all/any/some forms, freeing, status queries and cancellation of a request.

use std::ffi::c_int;

use mpi_lite::comm::UNDEFINED;
use mpi_lite::engine::{Outcome, Reaper, ReqId, Status, ANY_SOURCE, ANY_TAG, SENT};
use mpi_lite::error::class;
use mpi_lite::{Error, Result};
use skifch_drivers::DefaultPort;

use super::greq::{self, Slot};
use super::p2p::{req_handle, req_id};
use super::persist::{self, view};
use super::{arr_mut, get, mpi_fn, put, put_status, MPI_Status, STATUS_IGNORE};
use crate::state::{call, call_deferring, call_hot, h, CState};

fn empty_status() -> Status {
    Status {
        source: ANY_SOURCE,
        tag: ANY_TAG,
        ..Status::default()
    }
}

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
