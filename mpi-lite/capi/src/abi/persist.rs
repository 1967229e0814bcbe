//! Persistent point-to-point requests (MPI-3.1 §3.9): `MPI_Send_init`, `Bsend_init`,
//! `Ssend_init`, `Rsend_init`, `Recv_init`, `Start`, `Startall`.
//!
//! A persistent request is an argument list with a handle of its own (`-2 - index`:
//! negative, apart from the engine's request handles, which are positive); `MPI_Start` makes the
//! operation an ordinary engine request, remembered as the persistent one's *active*
//! request. The completion calls see persistent handles through [`view`]: an active one as
//! its engine request, an inactive one as `MPI_REQUEST_NULL` (as §3.9 asks: an inactive
//! persistent request behaves as a null one); when the engine request completes, the
//! persistent request becomes inactive again and its handle stays the program's, to be
//! started again or freed.

use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

use mpi_lite::comm::CommData;
use mpi_lite::datatype::Datatype;
use mpi_lite::engine::{Mode, ReqId};
use mpi_lite::{Error, Result};

use super::p2p::{req_handle, send_in};
use super::{arr_mut, get, mpi_fn, put, typed_buf};
use crate::state::{call, h, CState};

#[derive(Clone, Copy)]
enum Op {
    /// A send in this mode (`None`: buffered).
    Send(Option<Mode>),
    Recv,
}

struct Persistent {
    op: Op,
    /// The program's buffer (an address: it is only lent to the engine at each start).
    buf: usize,
    count: c_int,
    /// The type and the communicator themselves, not their handles: the program may free
    /// either while the request lives (MPI-3.1 §4.1.9, §6.4.3: freed when no longer used).
    datatype: Datatype,
    /// Destination or source.
    peer: c_int,
    tag: c_int,
    comm: Arc<CommData>,
    /// The engine request of the running operation (a C handle), if started.
    active: Option<c_int>,
    /// `MPI_Request_free` while active: the slot goes when the operation completes.
    freed: bool,
}

/// The persistent requests (only touched inside MPI calls, so under the state lock; a
/// lock of its own keeps it a plain safe static).
static TABLE: Mutex<Vec<Option<Persistent>>> = Mutex::new(Vec::new());

fn table() -> std::sync::MutexGuard<'static, Vec<Option<Persistent>>> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

#[inline]
fn is_persistent(r: c_int) -> bool {
    r <= -2
}

fn index(r: c_int) -> usize {
    (-2 - r as i64) as usize
}

/// Runs completion code `f` on the engine view of `reqs` (see the module docs), then
/// brings completions back: a completed persistent request becomes inactive, its handle
/// unchanged. Other handles pass through untouched (one scan).
pub(crate) fn view<R>(reqs: &mut [c_int], f: impl FnOnce(&mut [c_int]) -> R) -> R {
    if !reqs.iter().any(|&r| is_persistent(r)) {
        return f(reqs);
    }
    let mut v: Vec<c_int> = {
        let t = table();
        reqs.iter()
            .map(|&r| {
                if !is_persistent(r) {
                    return r;
                }
                match t.get(index(r)).and_then(|p| p.as_ref()) {
                    Some(p) => p.active.unwrap_or(h::REQUEST_NULL),
                    None => -1, // a freed persistent request: the engine's "not a request"
                }
            })
            .collect()
    };
    let out = f(&mut v);
    let mut t = table();
    for (u, &w) in reqs.iter_mut().zip(&v) {
        if !is_persistent(*u) {
            *u = w;
            continue;
        }
        let i = index(*u);
        if let Some(p) = t.get_mut(i).and_then(|p| p.as_mut()) {
            if w == h::REQUEST_NULL && p.active.is_some() {
                p.active = None;
                if p.freed {
                    t[i] = None;
                }
            }
        }
    }
    out
}

fn init(
    op: Op,
    buf: *const c_void,
    count: c_int,
    datatype: c_int,
    peer: c_int,
    tag: c_int,
    comm: c_int,
    request: *mut c_int,
    st: &CState,
    name: &str,
) -> Result<()> {
    if request.is_null() {
        return Err(Error::Arg(format!("{name}: request is NULL")));
    }
    // The arguments are checked now (§3.9: errors may be raised at init).
    let c = st.comm(comm)?;
    let datatype = st.dtype(datatype)?;
    super::count(count, name)?;
    type M = mpi_lite::Mpi<skifch_drivers::DefaultPort>;
    match op {
        Op::Recv => M::want(&c, peer, tag).map(|_| ())?,
        Op::Send(_) => M::route(&c, peer, tag).map(|_| ())?,
    }
    let p = Persistent {
        op,
        buf: buf as usize,
        count,
        datatype,
        peer,
        tag,
        comm: c,
        active: None,
        freed: false,
    };
    let mut t = table();
    let i = match t.iter().position(|p| p.is_none()) {
        Some(i) => {
            t[i] = Some(p);
            i
        }
        None => {
            t.push(Some(p));
            t.len() - 1
        }
    };
    if i >= i32::MAX as usize - 2 {
        t[i] = None;
        return Err(Error::Request(format!(
            "{name}: too many persistent requests"
        )));
    }
    // SAFETY: the caller's request (checked non-null).
    unsafe { put(request, -2 - i as c_int, "request") }
}

/// `MPI_Start` of persistent handle `r`.
fn start(st: &CState, r: c_int) -> Result<()> {
    let (op, buf, count, dt, peer, tag, comm) = {
        let t = table();
        let p = (is_persistent(r))
            .then(|| t.get(index(r)).and_then(|p| p.as_ref()))
            .flatten()
            .ok_or_else(|| {
                Error::Request(format!(
                    "MPI_Start: request {r} is not a persistent request"
                ))
            })?;
        if p.active.is_some() {
            return Err(Error::Request(
                "MPI_Start: the request is already active".into(),
            ));
        }
        (
            p.op,
            p.buf,
            p.count,
            p.datatype.clone(),
            p.peer,
            p.tag,
            p.comm.clone(),
        )
    };
    // SAFETY: MPI's contract for a persistent request: the buffer given at init stays
    // valid (and, for a receive, the library's) until each started operation completes.
    let b = unsafe { typed_buf(buf as *const c_void, count as usize, dt, "MPI_Start")? };
    let id: ReqId = match op {
        Op::Send(mode) => send_in(st, &comm, b, peer, tag, mode)?,
        Op::Recv => st.mpi.irecv(&comm, b, peer, tag)?,
    };
    if let Some(Some(p)) = table().get_mut(index(r)) {
        p.active = Some(req_handle(id));
    }
    Ok(())
}

/// `MPI_Request_free` of a persistent handle: now if inactive, else when its operation
/// completes (the engine request is freed the same way).
pub(crate) fn free(st: &CState, r: c_int) -> Option<Result<()>> {
    if !is_persistent(r) {
        return None;
    }
    let mut t = table();
    let Some(p) = t.get_mut(index(r)).and_then(|p| p.as_mut()) else {
        return Some(Err(Error::Request(format!(
            "request {r} is not a persistent request"
        ))));
    };
    Some(match p.active {
        None => {
            t[index(r)] = None;
            Ok(())
        }
        Some(a) => {
            p.freed = true;
            let a = a - 1;
            drop(t);
            st.mpi.engine().request_free(a as ReqId)
        }
    })
}

macro_rules! init_call {
    ($mpi:ident, $pmpi:ident, $name:literal, $op:expr) => {
        mpi_fn!($mpi, $pmpi, (buf: *const c_void, count: c_int, datatype: c_int, peer: c_int,
                tag: c_int, comm: c_int, request: *mut c_int) -> c_int {
            call($name, comm, |st| init($op, buf, count, datatype, peer, tag, comm, request, st, $name))
        });
    };
}
init_call!(
    MPI_Send_init,
    PMPI_Send_init,
    "MPI_Send_init",
    Op::Send(Some(Mode::Standard))
);
init_call!(
    MPI_Ssend_init,
    PMPI_Ssend_init,
    "MPI_Ssend_init",
    Op::Send(Some(Mode::Sync))
);
// Ready mode: the receive is posted by contract, standard mode is a correct implementation.
init_call!(
    MPI_Rsend_init,
    PMPI_Rsend_init,
    "MPI_Rsend_init",
    Op::Send(Some(Mode::Standard))
);
init_call!(
    MPI_Bsend_init,
    PMPI_Bsend_init,
    "MPI_Bsend_init",
    Op::Send(None)
);
init_call!(MPI_Recv_init, PMPI_Recv_init, "MPI_Recv_init", Op::Recv);

mpi_fn!(MPI_Start, PMPI_Start, (request: *mut c_int) -> c_int {
    call("MPI_Start", h::COMM_WORLD, |st| {
        // SAFETY: the caller's MPI_Request.
        let r = unsafe { get(request, "request")? };
        start(st, r)
    })
});

mpi_fn!(MPI_Startall, PMPI_Startall, (count: c_int, array_of_requests: *mut c_int) -> c_int {
    call("MPI_Startall", h::COMM_WORLD, |st| {
        let n = super::count(count, "MPI_Startall")?;
        // SAFETY: `count` requests of the caller.
        let reqs = unsafe { arr_mut(array_of_requests, n, "array_of_requests")? };
        reqs.iter().try_for_each(|&r| start(st, r))
    })
});
