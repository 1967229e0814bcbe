//! Generalized requests (MPI-3.1 §12.2): `MPI_Grequest_start`, `MPI_Grequest_complete`.
//!
//! A generalized request is an engine request that only `MPI_Grequest_complete` completes
//! (`Engine::user_request`), so every wait/test call treats it as any other. The program's
//! `query_fn` (which fills the status, typically with `MPI_Status_set_elements` /
//! `_cancelled`) is called by `MPI_Grequest_complete`, outside the library's lock (it may
//! call MPI), before the request is marked complete: the status a wait returns is then
//! final. `free_fn` runs when the request is released (by the wait, test or free that ends
//! it, under the lock: it must not call MPI). `MPI_Cancel` calls `cancel_fn(extra_state, complete)` (also
//! outside the lock). The table entry lives until the request is released (completed and
//! waited for, or freed): [`released`], a counter check when no generalized request exists.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use mpi_lite::engine::ReqId;
use mpi_lite::error::class;
use mpi_lite::Error;

use super::p2p::req_handle;
use super::{from_c_status, mpi_fn, put, MPI_Status};
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

/// Generalized requests by engine request id (own lock: `MPI_Grequest_complete` calls
/// the program's functions without the state lock).
static TABLE: Mutex<Option<HashMap<ReqId, GReq>>> = Mutex::new(None);

/// Live generalized requests (table entries): the completion calls skip the table at 0.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Forgets request `id` once the engine has released it (called by every completion).
#[inline]
pub(crate) fn released(id: ReqId) {
    if LIVE.load(Ordering::Relaxed) == 0 {
        return;
    }
    if let Some(g) = with(|t| t.remove(&id)) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
        // MPI-3.1 §12.2: free_fn when the request is freed (after its wait), so that
        // extra_state lives for a cancel after completion; its return code has no caller
        // to go to here.
        if let Some(f) = g.free {
            // SAFETY: the program's free function with its extra_state, called once.
            let _ = unsafe { f(g.extra as *mut c_void) };
        }
    }
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
    // Marked completed (a second completion is an error); the entry stays for MPI_Cancel.
    let g = (request > 0).then(|| with(|t| t.get_mut(&id).filter(|g| !g.completed).map(|g| {
        g.completed = true;
        (g.query, g.extra)
    }))).flatten();
    let Some((query, extra)) = g else {
        return crate::state::raise_now(h::COMM_WORLD, name,
            &Error::Request(format!("{name}: {request} is not a pending generalized request")));
    };
    // The program's functions, without the library's lock (they may call MPI).
    let mut cs = MPI_Status { MPI_SOURCE: -1, MPI_TAG: -1, ..Default::default() };
    // SAFETY: the program's query function with its extra_state and a status to fill.
    let q = query.map_or(0, |f| unsafe { f(extra as *mut c_void, &mut cs) });
    let bad = (q != class::SUCCESS).then_some(q);
    let err = bad.map(|code| Error::Code { code, msg: format!("{name}: the query function returned {code}") });
    call(name, h::COMM_WORLD, |st| {
        let s = from_c_status(&cs);
        if st.mpi.engine().complete_user(id, s, err)? {
            released(id); // freed before: nobody waits for it
        }
        Ok(())
    })
});
