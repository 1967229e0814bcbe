//! Matched probe and receive (MPI-3.1 §3.8.2): `MPI_Mprobe`, `Improbe`, `Mrecv`,
//! `Imrecv`. A message handle is the engine's message id + 1 (`MPI_MESSAGE_NULL` is 0);
//! a probe of `MPI_PROC_NULL` gives `MPI_MESSAGE_NO_PROC`, whose receive completes at
//! once with the `MPI_PROC_NULL` status (§3.11).

use std::ffi::{c_int, c_void};

use mpi_lite::engine::{MsgId, Status};
use mpi_lite::{Error, Mpi, Result, PROC_NULL};
use skifch_drivers::DefaultPort;

use super::p2p::req_handle;
use super::{get, mpi_fn, put, put_status, user_buf, MPI_Status};
use crate::state::{call, h, CState};

/// `MPI_MESSAGE_NULL`.
const MESSAGE_NULL: c_int = 0;
/// `MPI_MESSAGE_NO_PROC`.
const MESSAGE_NO_PROC: c_int = 0x6c00_0000;

/// Probes `source`/`tag` on `comm` (`wait`: `MPI_Mprobe`): (status, message handle).
fn probe(
    st: &CState,
    source: c_int,
    tag: c_int,
    comm: c_int,
    wait: bool,
) -> Result<Option<(Status, c_int)>> {
    let c = st.comm(comm)?;
    let env = Mpi::<DefaultPort>::want(&c, source, tag)?;
    if source == PROC_NULL {
        return Ok(Some((Status::proc_null(), MESSAGE_NO_PROC)));
    }
    let e = st.mpi.engine();
    let got = if wait {
        Some(e.mprobe(env)?)
    } else {
        e.improbe(env)?
    };
    Ok(got.map(|(s, id)| (s, id as c_int + 1)))
}

mpi_fn!(MPI_Mprobe, PMPI_Mprobe, (source: c_int, tag: c_int, comm: c_int, message: *mut c_int,
        status: *mut MPI_Status) -> c_int {
    call("MPI_Mprobe", comm, |st| {
        if message.is_null() {
            return Err(Error::Arg("MPI_Mprobe: message is NULL".into()));
        }
        let (s, m) = probe(st, source, tag, comm, true)?
            .ok_or_else(|| Error::Intern("MPI_Mprobe: no message".into()))?;
        // SAFETY: the caller's handle (checked non-null) and status.
        unsafe {
            put_status(status, &s);
            put(message, m, "message")
        }
    })
});

mpi_fn!(MPI_Improbe, PMPI_Improbe, (source: c_int, tag: c_int, comm: c_int, flag: *mut c_int,
        message: *mut c_int, status: *mut MPI_Status) -> c_int {
    call("MPI_Improbe", comm, |st| {
        if message.is_null() || flag.is_null() {
            return Err(Error::Arg("MPI_Improbe: flag or message is NULL".into()));
        }
        let got = probe(st, source, tag, comm, false)?;
        // SAFETY: the caller's flag, handle (checked non-null) and status.
        unsafe {
            put(flag, got.is_some() as c_int, "flag")?;
            if let Some((s, m)) = got {
                put_status(status, &s);
                put(message, m, "message")?;
            }
        }
        Ok(())
    })
});

/// The message id of handle `m` (not NULL, not NO_PROC).
fn msg_id(m: c_int) -> Result<MsgId> {
    if m <= 0 {
        return Err(Error::Request(format!(
            "message handle {m} is MPI_MESSAGE_NULL or not valid"
        )));
    }
    Ok((m - 1) as MsgId)
}

mpi_fn!(MPI_Mrecv, PMPI_Mrecv, (buf: *mut c_void, count: c_int, datatype: c_int, message: *mut c_int,
        status: *mut MPI_Status) -> c_int {
    call("MPI_Mrecv", h::COMM_WORLD, |st| {
        // SAFETY: the caller's handle.
        let m = unsafe { get(message, "message")? };
        // SAFETY: blocking: the buffer is valid and ours for the whole call.
        let b = unsafe { user_buf(st, buf, count, datatype, "MPI_Mrecv")? };
        let s = if m == MESSAGE_NO_PROC {
            Status::proc_null()
        } else {
            let id = st.mpi.engine().imrecv(msg_id(m)?, b)?;
            st.mpi.wait(id)?
        };
        // SAFETY: the caller's status and handle.
        unsafe {
            put_status(status, &s);
            put(message, MESSAGE_NULL, "message")
        }
    })
});

mpi_fn!(MPI_Imrecv, PMPI_Imrecv, (buf: *mut c_void, count: c_int, datatype: c_int, message: *mut c_int,
        request: *mut c_int) -> c_int {
    call("MPI_Imrecv", h::COMM_WORLD, |st| {
        if request.is_null() {
            return Err(Error::Arg("MPI_Imrecv: request is NULL".into()));
        }
        // SAFETY: the caller's handle.
        let m = unsafe { get(message, "message")? };
        // SAFETY: MPI contract: the buffer is the library's until the request completes.
        let b = unsafe { user_buf(st, buf, count, datatype, "MPI_Imrecv")? };
        let id = if m == MESSAGE_NO_PROC {
            st.mpi.engine().done_request()?
        } else {
            st.mpi.engine().imrecv(msg_id(m)?, b)?
        };
        // SAFETY: the caller's request (checked non-null) and handle.
        unsafe {
            put(request, req_handle(id), "request")?;
            put(message, MESSAGE_NULL, "message")
        }
    })
});

mpi_fn!(MPI_Message_c2f, PMPI_Message_c2f, (message: c_int) -> c_int {
    message
});

mpi_fn!(MPI_Message_f2c, PMPI_Message_f2c, (message: c_int) -> c_int {
    message
});
