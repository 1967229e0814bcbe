//! Generalized requests (MPI-3.1 §12.2): `MPI_Grequest_start`, `MPI_Grequest_complete`.
//!
//! A generalized request is an engine request that only `MPI_Grequest_complete` completes
//! (`Engine::user_request`), so every wait/test call treats it as any other. The program's
//! functions run as §12.2 says, and always outside the library's lock (they may call MPI,
//! e.g. `MPI_Status_set_elements`): `query_fn` (which fills the status) in the wait or test
//! that completes the request — into the caller's status, its error code returned by that
//! call (`MPI_ERR_IN_STATUS` and the status' `MPI_ERROR` for the multiple-completion
//! calls) — and in `MPI_Request_get_status` of a completed one; `free_fn` after it (or in
//! `MPI_Request_free`/`MPI_Grequest_complete`, whichever comes last, for a freed request),
//! its error code returned the same way. The completion calls release the request under the
//! lock ([`released`] moves its entry to this thread's list) and call [`after`] once they
//! have left it. `MPI_Cancel` calls `cancel_fn(extra_state, complete)`. The table entry
//! lives until the request is released (completed and waited for, or freed): a cancel after
//! completion still reaches `extra_state`. Calls skip all of this with one counter load
//! while no generalized request exists.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use mpi_lite::engine::{ReqId, Status};
use mpi_lite::error::class;
use mpi_lite::Error;

use super::p2p::req_handle;
use super::{mpi_fn, put, MPI_Status, STATUS_IGNORE};
use crate::state::{call, h};

type QueryFn = unsafe extern "C" fn(*mut c_void, *mut MPI_Status) -> c_int;
type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

struct GReq {
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    /// `MPI_Grequest_complete` was called.
    completed: bool,
    /// `extra_state`, an address of the program's.
    extra: usize,
}

/// Generalized requests by engine request id (own lock: the program's functions run
/// without the state lock).
static TABLE: Mutex<Option<HashMap<ReqId, GReq>>> = Mutex::new(None);

/// Live generalized requests (table entries) plus released ones whose functions have not
/// run yet: the completion calls skip this module at 0.
static LIVE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Requests released by this thread's current call, for [`after`].
    static DONE: RefCell<Vec<(ReqId, GReq)>> = const { RefCell::new(Vec::new()) };
}

/// Moves request `id` to this thread's released list once the engine has released it
/// (called by every completion, under the lock); [`after`] runs its functions.
#[inline(always)] // every completion of a C request: while no generalized request lives, one load
pub(crate) fn released(id: ReqId) {
    if LIVE.load(Ordering::Relaxed) != 0 {
        released_greq(id);
    }
}

#[cold]
#[inline(never)]
fn released_greq(id: ReqId) {
    if let Some(g) = with(|t| t.remove(&id)) {
        DONE.with(|d| d.borrow_mut().push((id, g)));
    }
}

/// The engine ids of the request handles in `reqs` that are generalized requests
/// (`(index, id)`), taken before a multiple-completion call so that [`after`] finds each
/// one's status; empty (no allocation) while none exists.
pub(crate) fn in_array(reqs: *const c_int, n: c_int) -> Vec<(usize, ReqId)> {
    if LIVE.load(Ordering::Relaxed) == 0 || reqs.is_null() || n <= 0 {
        return Vec::new();
    }
    // SAFETY: the caller's `n` request handles (checked non-null; the call itself checks
    // them again).
    let r = unsafe { std::slice::from_raw_parts(reqs, n as usize) };
    with(|t| {
        r.iter()
            .enumerate()
            .filter(|&(_, &h)| h > 0 && t.contains_key(&((h - 1) as ReqId)))
            .map(|(i, &h)| (i, (h - 1) as ReqId))
            .collect()
    })
}

/// Where a released request's functions report: `Status(p)` — completed by a wait or test
/// whose status for it is `p` (NULL or `MPI_STATUS_IGNORE`: none) — or `Freed` (released by
/// `MPI_Request_free`/`MPI_Grequest_complete`: only `free_fn` runs).
pub(crate) enum Slot {
    Status(*mut MPI_Status),
    Freed,
}

/// Runs the functions of the requests this thread's call `name` released (it returned
/// `rc`, the lock is released): for each, `query_fn` into its status (`slot`), then
/// `free_fn`. The first error code of a function becomes the call's, raised on
/// `MPI_COMM_WORLD`'s handler unless the call already failed; `multi`: a
/// multiple-completion call, where it goes to the status' `MPI_ERROR` and the call
/// returns `MPI_ERR_IN_STATUS` (when the statuses are not ignored).
pub(crate) fn after(
    rc: c_int,
    name: &'static str,
    multi: bool,
    slot: impl Fn(ReqId) -> Slot,
) -> c_int {
    if LIVE.load(Ordering::Relaxed) == 0 {
        return rc;
    }
    let done = DONE.with(|d| std::mem::take(&mut *d.borrow_mut()));
    let mut err: Option<Error> = None;
    for (id, g) in done {
        LIVE.fetch_sub(1, Ordering::Relaxed);
        let extra = g.extra as *mut c_void;
        let mut code = class::SUCCESS;
        let mut own = MPI_Status::default();
        // The status query_fn fills, and whether it is the caller's (not ignored).
        let (status, callers) = match slot(id) {
            Slot::Status(p) if p.is_null() || p as usize == STATUS_IGNORE => {
                (Some(&mut own as *mut MPI_Status), false)
            }
            Slot::Status(p) => (Some(p), true),
            Slot::Freed => (None, false),
        };
        if let (Some(p), Some(f)) = (status, g.query) {
            // SAFETY: the program's query function with its extra_state and a status (the
            // caller's, already holding the completion's, or ours).
            code = unsafe { f(extra, p) };
        }
        if let Some(f) = g.free {
            // SAFETY: the program's free function with its extra_state, called once.
            let c = unsafe { f(extra) };
            if code == class::SUCCESS {
                code = c;
            }
        }
        if code == class::SUCCESS || err.is_some() {
            continue;
        }
        let e = Error::Code {
            code,
            msg: format!("{name}: a generalized request's query or free function returned {code}"),
        };
        err = Some(match status {
            Some(p) if multi && callers => {
                // SAFETY: the caller's status of this request (not ignored).
                unsafe { (*p).MPI_ERROR = code };
                Error::InStatus
            }
            _ => e,
        });
    }
    match err {
        Some(e) if rc == class::SUCCESS => crate::state::raise_now(h::COMM_WORLD, name, &e),
        _ => rc,
    }
}

/// `MPI_Request_get_status` found handle `request` complete: a completed generalized
/// request's `query_fn` fills `status` (ours when ignored); its error code is returned.
pub(crate) fn query(request: c_int, status: *mut MPI_Status) -> c_int {
    if LIVE.load(Ordering::Relaxed) == 0 || request <= 0 {
        return class::SUCCESS;
    }
    let id = (request - 1) as ReqId;
    let Some((Some(f), extra)) = with(|t| {
        t.get(&id)
            .filter(|g| g.completed)
            .map(|g| (g.query, g.extra))
    }) else {
        return class::SUCCESS;
    };
    let mut own = MPI_Status::default();
    let p = if status.is_null() || status as usize == STATUS_IGNORE {
        &mut own
    } else {
        status
    };
    // SAFETY: the program's query function with its extra_state and a status.
    let code = unsafe { f(extra as *mut c_void, p) };
    if code == class::SUCCESS {
        return code;
    }
    let e = Error::Code {
        code,
        msg: format!("MPI_Request_get_status: the query function returned {code}"),
    };
    crate::state::raise_now(h::COMM_WORLD, "MPI_Request_get_status", &e)
}

/// `MPI_Cancel` of handle `request` if it is a generalized request: its `cancel_fn`, called
/// without the library's lock; `None` for any other request.
pub(crate) fn cancel(request: c_int) -> Option<c_int> {
    if LIVE.load(Ordering::Relaxed) == 0 || request <= 0 {
        return None;
    }
    let id = (request - 1) as ReqId;
    let (f, extra, done) = with(|t| t.get(&id).map(|g| (g.cancel, g.extra, g.completed)))?;
    // SAFETY: the program's cancel function with its extra_state and the completion flag.
    let rc = f.map_or(0, |f| unsafe { f(extra as *mut c_void, done as c_int) });
    Some(if rc == class::SUCCESS {
        rc
    } else {
        let e = Error::Code {
            code: rc,
            msg: format!("MPI_Cancel: the cancel function returned {rc}"),
        };
        crate::state::raise_now(h::COMM_WORLD, "MPI_Cancel", &e)
    })
}

fn with<T>(f: impl FnOnce(&mut HashMap<ReqId, GReq>) -> T) -> T {
    let mut g = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

mpi_fn!(MPI_Grequest_start, PMPI_Grequest_start, (query_fn: Option<QueryFn>, free_fn: Option<FreeFn>,
        cancel_fn: Option<CancelFn>, extra_state: *mut c_void, request: *mut c_int) -> c_int {
    call("MPI_Grequest_start", h::COMM_WORLD, |st| {
        if request.is_null() {
            return Err(Error::Arg("MPI_Grequest_start: request is NULL".into()));
        }
        let id = st.mpi.engine().user_request()?;
        let old = with(|t| {
            t.insert(
                id,
                GReq {
                    query: query_fn,
                    free: free_fn,
                    cancel: cancel_fn,
                    completed: false,
                    extra: extra_state as usize,
                },
            )
        });
        if old.is_none() {
            LIVE.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: checked non-null, the caller's handle.
        unsafe { put(request, req_handle(id), "request") }
    })
});

mpi_fn!(MPI_Grequest_complete, PMPI_Grequest_complete, (request: c_int) -> c_int {
    let name = "MPI_Grequest_complete";
    let id = (request as i64 - 1) as ReqId;
    // Marked completed (a second completion is an error); the entry stays for MPI_Cancel
    // and for the query function, which the completing wait or test calls.
    let known = request > 0 && with(|t| t.get_mut(&id).filter(|g| !g.completed).map(|g| g.completed = true).is_some());
    if !known {
        return crate::state::raise_now(h::COMM_WORLD, name,
            &Error::Request(format!("{name}: {request} is not a pending generalized request")));
    }
    let rc = call(name, h::COMM_WORLD, |st| {
        let s = Status { source: -1, tag: -1, ..Status::default() };
        if st.mpi.engine().complete_user(id, s, None)? {
            released(id); // freed before: nobody waits for it, its free function runs now
        }
        Ok(())
    });
    after(rc, name, false, |_| Slot::Freed)
});
