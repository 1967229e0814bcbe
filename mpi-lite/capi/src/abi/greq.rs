//! Generalized requests (MPI-3.1 §12.2): `MPI_Grequest_start`, `MPI_Grequest_complete`.
//!
//! A generalized request is an engine request that only `MPI_Grequest_complete` completes
//! (`Engine::user_request`), so every wait/test call treats it as any other. The program's
//! `query_fn` (which fills the status, typically with `MPI_Status_set_elements` /
//! `_cancelled`) and `free_fn` are called by `MPI_Grequest_complete`, outside the library's
//! lock (they may call MPI), before the request is marked complete: the status a wait
//! returns is then final. `MPI_Cancel` of a generalized request has no effect (its
//! `cancel_fn` is not called: a gap, see the README).

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
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
    /// `extra_state`, an address of the program's.
    extra: usize,
}

/// Generalized requests by engine request id (own lock: `MPI_Grequest_complete` calls
/// the program's functions without the state lock).
static TABLE: Mutex<Option<HashMap<ReqId, GReq>>> = Mutex::new(None);

fn with<T>(f: impl FnOnce(&mut HashMap<ReqId, GReq>) -> T) -> T {
    let mut g = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

mpi_fn!(MPI_Grequest_start, PMPI_Grequest_start, (query_fn: Option<QueryFn>, free_fn: Option<FreeFn>,
        _cancel_fn: Option<CancelFn>, extra_state: *mut c_void, request: *mut c_int) -> c_int {
    call("MPI_Grequest_start", h::COMM_WORLD, |st| {
        if request.is_null() {
            return Err(Error::Arg("MPI_Grequest_start: request is NULL".into()));
        }
        let id = st.mpi.engine().user_request();
        with(|t| t.insert(id, GReq { query: query_fn, free: free_fn, extra: extra_state as usize }));
        // SAFETY: checked non-null, the caller's handle.
        unsafe { put(request, req_handle(id), "request") }
    })
});

mpi_fn!(MPI_Grequest_complete, PMPI_Grequest_complete, (request: c_int) -> c_int {
    let name = "MPI_Grequest_complete";
    let id = (request as i64 - 1) as ReqId;
    let Some(g) = (request > 0).then(|| with(|t| t.remove(&id))).flatten() else {
        return crate::state::raise_now(h::COMM_WORLD, name,
            &Error::Request(format!("{name}: {request} is not a pending generalized request")));
    };
    // The program's functions, without the library's lock (they may call MPI).
    let mut cs = MPI_Status { MPI_SOURCE: -1, MPI_TAG: -1, ..Default::default() };
    // SAFETY: the program's query function with its extra_state and a status to fill.
    let q = g.query.map_or(0, |f| unsafe { f(g.extra as *mut c_void, &mut cs) });
    // SAFETY: the program's free function with its extra_state, called once.
    let fr = g.free.map_or(0, |f| unsafe { f(g.extra as *mut c_void) });
    let bad = [q, fr].into_iter().find(|&c| c != class::SUCCESS);
    let err = bad.map(|code| Error::Code { code, msg: format!("{name}: the query or free function returned {code}") });
    call(name, h::COMM_WORLD, |st| {
        let s = from_c_status(&cs);
        st.mpi.engine().complete_user(id, s, err)
    })
});
