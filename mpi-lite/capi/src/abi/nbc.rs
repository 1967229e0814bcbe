//! Nonblocking collectives (MPI-3.1 §5.12) and `MPI_Alltoallw`: argument translation to
//! `mpi_lite::nbc`, whose schedules the engine runs; each returns an ordinary request.
//! The v/w variants lend one buffer per member block (address + displacement).

use std::ffi::{c_int, c_void};

use mpi_lite::comm::CommData;
use mpi_lite::mem::UserBuf;
use mpi_lite::{Error, Result};

use super::ops::op_of;
use super::p2p::req_handle;
use super::{arr, count, mpi_fn, put, user_buf, IN_PLACE};
use crate::state::{call, CState};

type Aint = isize;

fn in_place(p: *const c_void) -> bool {
    p as usize == IN_PLACE
}

/// Whether this process's own data of a rooted call is read: not at an
/// intercommunicator's root nor in the rest of its group (`MPI_PROC_NULL`), which have
/// none (their send buffer for a gather, receive buffer for a scatter, may be anything).
fn own_data(c: &CommData, root: c_int) -> bool {
    c.inter.is_none() || !(c.is_root(root) || c.is_idle(root))
}

/// Writes the request handle.
///
/// # Safety
/// `request` is NULL (an error) or the caller's `MPI_Request`.
pub(crate) unsafe fn out(request: *mut c_int, id: mpi_lite::engine::ReqId) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { put(request, req_handle(id), "request") }
}

/// A buffer, `None` for `MPI_IN_PLACE`.
///
/// # Safety
/// MPI's contract for a nonblocking collective: valid until the request completes.
unsafe fn opt_buf(
    st: &CState,
    p: *const c_void,
    n: c_int,
    dt: c_int,
    name: &str,
) -> Result<Option<UserBuf>> {
    if in_place(p) {
        return Ok(None);
    }
    // SAFETY: forwarded.
    unsafe { user_buf(st, p, n, dt, name).map(Some) }
}

/// `n` blocks of (`counts[j]` elements of `types[j]`) at `base + displs[j]` bytes.
///
/// # Safety
/// As [`opt_buf`] for every block.
pub(crate) unsafe fn blocks(
    st: &CState,
    base: *const c_void,
    counts: &[c_int],
    displs: &[Aint],
    types: &[c_int],
    name: &str,
) -> Result<Vec<UserBuf>> {
    (0..counts.len())
        .map(|j| {
            let p = (base as *const u8)
                .wrapping_offset(displs[j])
                .cast::<c_void>();
            // SAFETY: forwarded (block j of the caller's buffer).
            unsafe { user_buf(st, p, counts[j], types[j], name) }
        })
        .collect()
}

/// Byte displacements of element displacements `d` of type `dt` (its extent).
pub(crate) fn byte_displs(st: &CState, d: &[c_int], dt: c_int) -> Result<Vec<Aint>> {
    let ext = st.dtype_any(dt)?.extent();
    Ok(d.iter().map(|&x| x as Aint * ext).collect())
}

/// Regular layout: `n` blocks of `k` elements, block j at element j·k.
pub(crate) fn regular(n: usize, k: c_int) -> (Vec<c_int>, Vec<c_int>) {
    (vec![k; n], (0..n as c_int).map(|j| j * k).collect())
}

mpi_fn!(MPI_Ibarrier, PMPI_Ibarrier, (comm: c_int, request: *mut c_int) -> c_int {
    call("MPI_Ibarrier", comm, |st| {
        let c = st.comm(comm)?;
        let id = st.mpi.ibarrier(&c)?;
        // SAFETY: the caller's request.
        unsafe { out(request, id) }
    })
});

mpi_fn!(MPI_Ibcast, PMPI_Ibcast, (buffer: *mut c_void, n: c_int, datatype: c_int, root: c_int, comm: c_int,
        request: *mut c_int) -> c_int {
    call("MPI_Ibcast", comm, |st| {
        let c = st.comm(comm)?;
        // SAFETY: valid until the request completes (MPI contract).
        let b = unsafe { user_buf(st, buffer, n, datatype, "MPI_Ibcast")? };
        let id = st.mpi.ibcast(&c, b, root)?;
        // SAFETY: the caller's request.
        unsafe { out(request, id) }
    })
});

/// The gather family's receive blocks at the root (`None`: not the root).
///
/// # Safety
/// As [`blocks`]; `rc`/`rd` hold the communicator's size ints when given.
unsafe fn gather_blocks(
    st: &CState,
    recvbuf: *const c_void,
    rc: &[c_int],
    rd: &[c_int],
    rt: c_int,
    name: &str,
) -> Result<Vec<UserBuf>> {
    let d = byte_displs(st, rd, rt)?;
    // SAFETY: forwarded.
    unsafe { blocks(st, recvbuf, rc, &d, &vec![rt; rc.len()], name) }
}

fn igather_common(
    st: &CState,
    name: &'static str,
    sendbuf: *const c_void,
    sc: c_int,
    st_: c_int,
    recvbuf: *mut c_void,
    counts: Option<(&[c_int], &[c_int])>,
    rcount: c_int,
    rt: c_int,
    root: c_int,
    comm: c_int,
    request: *mut c_int,
) -> Result<()> {
    let c = st.comm(comm)?;
    let n = c.peers().size();
    let is_root = c.is_root(root);
    let s = if own_data(&c, root) {
        // SAFETY: the buffers stay valid until the request completes (MPI contract).
        unsafe { opt_buf(st, sendbuf, sc, st_, name)? }
    } else {
        None
    };
    let r = if is_root {
        let (rc, rd) = match counts {
            Some((a, b)) => (a.to_vec(), b.to_vec()),
            None => regular(n, rcount),
        };
        // SAFETY: as above.
        unsafe { gather_blocks(st, recvbuf, &rc, &rd, rt, name)? }
    } else {
        Vec::new()
    };
    let id = st.mpi.igatherv(&c, s, r, root)?;
    // SAFETY: the caller's request.
    unsafe { out(request, id) }
}

mpi_fn!(MPI_Igather, PMPI_Igather, (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
        recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int, request: *mut c_int) -> c_int {
    call("MPI_Igather", comm, |st| igather_common(st, "MPI_Igather", sendbuf, sendcount, sendtype, recvbuf,
        None, recvcount, recvtype, root, comm, request))
});

mpi_fn!(MPI_Igatherv, PMPI_Igatherv, (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
        recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, root: c_int, comm: c_int,
        request: *mut c_int) -> c_int {
    call("MPI_Igatherv", comm, |st| {
        let c = st.comm(comm)?;
        let n = c.peers().size() as c_int;
        let at_root = c.is_root(root);
        // SAFETY: the root's arrays hold `n` ints (MPI contract; ignored elsewhere).
        let (rc, rd) = unsafe { if at_root { (arr(recvcounts, n, "recvcounts")?, arr(displs, n, "displs")?) } else { (&[][..], &[][..]) } };
        igather_common(st, "MPI_Igatherv", sendbuf, sendcount, sendtype, recvbuf, Some((rc, rd)), 0, recvtype, root, comm, request)
    })
});

fn iscatter_common(
    st: &CState,
    name: &'static str,
    sendbuf: *const c_void,
    counts: Option<(&[c_int], &[c_int])>,
    scount: c_int,
    stype: c_int,
    recvbuf: *mut c_void,
    rc: c_int,
    rt: c_int,
    root: c_int,
    comm: c_int,
    request: *mut c_int,
) -> Result<()> {
    let c = st.comm(comm)?;
    let n = c.peers().size();
    let is_root = c.is_root(root);
    let s = if is_root {
        let (sc, sd) = match counts {
            Some((a, b)) => (a.to_vec(), b.to_vec()),
            None => regular(n, scount),
        };
        // SAFETY: the buffers stay valid until the request completes (MPI contract).
        unsafe { gather_blocks(st, sendbuf, &sc, &sd, stype, name)? }
    } else {
        Vec::new()
    };
    let r = if own_data(&c, root) {
        // SAFETY: the buffers stay valid until the request completes (MPI contract).
        unsafe { opt_buf(st, recvbuf, rc, rt, name)? }
    } else {
        None
    };
    let id = st.mpi.iscatterv(&c, s, r, root)?;
    // SAFETY: the caller's request.
    unsafe { out(request, id) }
}

mpi_fn!(MPI_Iscatter, PMPI_Iscatter, (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
        recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int, request: *mut c_int) -> c_int {
    call("MPI_Iscatter", comm, |st| iscatter_common(st, "MPI_Iscatter", sendbuf, None, sendcount, sendtype,
        recvbuf, recvcount, recvtype, root, comm, request))
});

mpi_fn!(MPI_Iscatterv, PMPI_Iscatterv, (sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int,
        sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int,
        request: *mut c_int) -> c_int {
    call("MPI_Iscatterv", comm, |st| {
        let c = st.comm(comm)?;
        let n = c.peers().size() as c_int;
        let at_root = c.is_root(root);
        // SAFETY: the root's arrays hold `n` ints (MPI contract; ignored elsewhere).
        let (sc, sd) = unsafe { if at_root { (arr(sendcounts, n, "sendcounts")?, arr(displs, n, "displs")?) } else { (&[][..], &[][..]) } };
        iscatter_common(st, "MPI_Iscatterv", sendbuf, Some((sc, sd)), 0, sendtype, recvbuf, recvcount, recvtype, root, comm, request)
    })
});

fn iallgather_common(
    st: &CState,
    name: &'static str,
    sendbuf: *const c_void,
    sc: c_int,
    stype: c_int,
    recvbuf: *mut c_void,
    rc: &[c_int],
    rd: &[c_int],
    rt: c_int,
    comm: c_int,
    request: *mut c_int,
) -> Result<()> {
    let c = st.comm(comm)?;
    // SAFETY: the buffers stay valid until the request completes (MPI contract).
    let (s, r) = unsafe {
        (
            opt_buf(st, sendbuf, sc, stype, name)?,
            gather_blocks(st, recvbuf, rc, rd, rt, name)?,
        )
    };
    let id = st.mpi.iallgatherv(&c, s, r)?;
    // SAFETY: the caller's request.
    unsafe { out(request, id) }
}

mpi_fn!(MPI_Iallgather, PMPI_Iallgather, (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int,
        recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, comm: c_int, request: *mut c_int) -> c_int {
    call("MPI_Iallgather", comm, |st| {
        let (rc, rd) = regular(st.comm(comm)?.peers().size(), recvcount);
        iallgather_common(st, "MPI_Iallgather", sendbuf, sendcount, sendtype, recvbuf, &rc, &rd, recvtype, comm, request)
    })
});

mpi_fn!(MPI_Iallgatherv, PMPI_Iallgatherv, (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int,
        recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, comm: c_int,
        request: *mut c_int) -> c_int {
    call("MPI_Iallgatherv", comm, |st| {
        let n = st.comm(comm)?.peers().size() as c_int;
        // SAFETY: `n` ints each (MPI contract).
        let (rc, rd) = unsafe { (arr(recvcounts, n, "recvcounts")?, arr(displs, n, "displs")?) };
        iallgather_common(st, "MPI_Iallgatherv", sendbuf, sendcount, sendtype, recvbuf, rc, rd, recvtype, comm, request)
    })
});

/// The all-to-all family: byte displacements and one type per block (w form).
fn alltoall_common(
    st: &CState,
    name: &'static str,
    sendbuf: *const c_void,
    s: (&[c_int], &[Aint], &[c_int]),
    recvbuf: *mut c_void,
    r: (&[c_int], &[Aint], &[c_int]),
    comm: c_int,
) -> Result<mpi_lite::engine::ReqId> {
    let c = st.comm(comm)?;
    // SAFETY: the buffers stay valid until the request completes (MPI contract).
    let (sb, rb) = unsafe {
        (
            if in_place(sendbuf) {
                None
            } else {
                Some(blocks(st, sendbuf, s.0, s.1, s.2, name)?)
            },
            blocks(st, recvbuf, r.0, r.1, r.2, name)?,
        )
    };
    st.mpi.ialltoallw(&c, sb, rb)
}

/// Counts/displacements/types of the regular and v forms in the w form's terms.
fn vform(
    st: &CState,
    counts: &[c_int],
    displs: &[c_int],
    dt: c_int,
) -> Result<(Vec<c_int>, Vec<Aint>, Vec<c_int>)> {
    Ok((
        counts.to_vec(),
        byte_displs(st, displs, dt)?,
        vec![dt; counts.len()],
    ))
}

mpi_fn!(MPI_Ialltoall, PMPI_Ialltoall, (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int,
        recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, comm: c_int, request: *mut c_int) -> c_int {
    call("MPI_Ialltoall", comm, |st| {
        let n = st.comm(comm)?.peers().size();
        let ((sc, sd), (rc, rd)) = (regular(n, sendcount), regular(n, recvcount));
        let s = if in_place(sendbuf) { (vec![], vec![], vec![]) } else { vform(st, &sc, &sd, sendtype)? };
        let r = vform(st, &rc, &rd, recvtype)?;
        let id = alltoall_common(st, "MPI_Ialltoall", sendbuf, (&s.0, &s.1, &s.2), recvbuf, (&r.0, &r.1, &r.2), comm)?;
        // SAFETY: the caller's request.
        unsafe { out(request, id) }
    })
});

mpi_fn!(MPI_Ialltoallv, PMPI_Ialltoallv, (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int,
        sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: c_int,
        comm: c_int, request: *mut c_int) -> c_int {
    call("MPI_Ialltoallv", comm, |st| {
        let n = st.comm(comm)?.peers().size() as c_int;
        let s = if in_place(sendbuf) { (vec![], vec![], vec![]) } else {
            // SAFETY: `n` ints each (MPI contract; ignored for MPI_IN_PLACE).
            let (a, b) = unsafe { (arr(sendcounts, n, "sendcounts")?, arr(sdispls, n, "sdispls")?) };
            vform(st, a, b, sendtype)?
        };
        // SAFETY: as above.
        let (a, b) = unsafe { (arr(recvcounts, n, "recvcounts")?, arr(rdispls, n, "rdispls")?) };
        let r = vform(st, a, b, recvtype)?;
        let id = alltoall_common(st, "MPI_Ialltoallv", sendbuf, (&s.0, &s.1, &s.2), recvbuf, (&r.0, &r.1, &r.2), comm)?;
        // SAFETY: the caller's request.
        unsafe { out(request, id) }
    })
});

/// The w form's arrays (`n` each).
///
/// # Safety
/// Each pointer holds `n` values.
unsafe fn wform(
    counts: *const c_int,
    displs: *const c_int,
    types: *const c_int,
    n: c_int,
) -> Result<(Vec<c_int>, Vec<Aint>, Vec<c_int>)> {
    // SAFETY: forwarded.
    let (c, d, t) = unsafe {
        (
            arr(counts, n, "counts")?,
            arr(displs, n, "displs")?,
            arr(types, n, "types")?,
        )
    };
    Ok((
        c.to_vec(),
        d.iter().map(|&x| x as Aint).collect(),
        t.to_vec(),
    ))
}

mpi_fn!(MPI_Ialltoallw, PMPI_Ialltoallw, (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int,
        sendtypes: *const c_int, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int,
        recvtypes: *const c_int, comm: c_int, request: *mut c_int) -> c_int {
    call("MPI_Ialltoallw", comm, |st| {
        let n = st.comm(comm)?.peers().size() as c_int;
        // SAFETY: `n` values each (MPI contract; the send arrays are ignored for MPI_IN_PLACE).
        let s = if in_place(sendbuf) { (vec![], vec![], vec![]) } else { unsafe { wform(sendcounts, sdispls, sendtypes, n)? } };
        // SAFETY: as above.
        let r = unsafe { wform(recvcounts, rdispls, recvtypes, n)? };
        let id = alltoall_common(st, "MPI_Ialltoallw", sendbuf, (&s.0, &s.1, &s.2), recvbuf, (&r.0, &r.1, &r.2), comm)?;
        // SAFETY: the caller's request.
        unsafe { out(request, id) }
    })
});

mpi_fn!(MPI_Alltoallw, PMPI_Alltoallw, (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int,
        sendtypes: *const c_int, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int,
        recvtypes: *const c_int, comm: c_int) -> c_int {
    call("MPI_Alltoallw", comm, |st| {
        let n = st.comm(comm)?.peers().size() as c_int;
        // SAFETY: `n` values each (MPI contract; the send arrays are ignored for MPI_IN_PLACE).
        let s = if in_place(sendbuf) { (vec![], vec![], vec![]) } else { unsafe { wform(sendcounts, sdispls, sendtypes, n)? } };
        // SAFETY: as above.
        let r = unsafe { wform(recvcounts, rdispls, recvtypes, n)? };
        // The nonblocking schedule, waited for: one all-to-all mechanism.
        let id = alltoall_common(st, "MPI_Alltoallw", sendbuf, (&s.0, &s.1, &s.2), recvbuf, (&r.0, &r.1, &r.2), comm)?;
        st.mpi.wait(id).map(|_| ())
    })
});

mpi_fn!(MPI_Ireduce, PMPI_Ireduce, (sendbuf: *const c_void, recvbuf: *mut c_void, n: c_int, datatype: c_int,
        op: c_int, root: c_int, comm: c_int, request: *mut c_int) -> c_int {
    call("MPI_Ireduce", comm, |st| {
        let c = st.comm(comm)?;
        let op = op_of(op, datatype)?;
        // SAFETY: valid until the request completes (MPI contract; recvbuf at the root).
        let (s, r) = unsafe {
            (if own_data(&c, root) { opt_buf(st, sendbuf, n, datatype, "MPI_Ireduce")? } else { None },
             if c.is_root(root) { Some(user_buf(st, recvbuf, n, datatype, "MPI_Ireduce")?) } else { None })
        };
        let id = st.mpi.ireduce(&c, s, r, &op, root)?;
        // SAFETY: the caller's request.
        unsafe { out(request, id) }
    })
});

mpi_fn!(MPI_Iallreduce, PMPI_Iallreduce, (sendbuf: *const c_void, recvbuf: *mut c_void, n: c_int, datatype: c_int,
        op: c_int, comm: c_int, request: *mut c_int) -> c_int {
    call("MPI_Iallreduce", comm, |st| {
        let c = st.comm(comm)?;
        let op = op_of(op, datatype)?;
        // SAFETY: valid until the request completes (MPI contract).
        let (s, r) = unsafe { (opt_buf(st, sendbuf, n, datatype, "MPI_Iallreduce")?, user_buf(st, recvbuf, n, datatype, "MPI_Iallreduce")?) };
        let id = st.mpi.iallreduce(&c, s, r, &op)?;
        // SAFETY: the caller's request.
        unsafe { out(request, id) }
    })
});

fn ireduce_scatter_common(
    st: &CState,
    name: &'static str,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: &[c_int],
    dt: c_int,
    op: c_int,
    comm: c_int,
    request: *mut c_int,
) -> Result<()> {
    let c = st.comm(comm)?;
    let opv = op_of(op, dt)?;
    let size = st.dtype(dt)?.size();
    let lens: Vec<usize> = counts
        .iter()
        .map(|&k| count(k, name).map(|k| k * size))
        .collect::<Result<_>>()?;
    let total: c_int = counts.iter().sum();
    let mine = counts[c.rank];
    // SAFETY: valid until the request completes (MPI contract): the whole vector in the
    // send buffer (or, for MPI_IN_PLACE, in the receive buffer), this member's block out.
    let (input, output) = unsafe {
        let input = if in_place(sendbuf) {
            recvbuf.cast_const()
        } else {
            sendbuf
        };
        (
            user_buf(st, input, total, dt, name)?,
            user_buf(st, recvbuf, mine, dt, name)?,
        )
    };
    let id = st.mpi.ireduce_scatter(&c, input, output, &lens, &opv)?;
    // SAFETY: the caller's request.
    unsafe { out(request, id) }
}

mpi_fn!(MPI_Ireduce_scatter, PMPI_Ireduce_scatter, (sendbuf: *const c_void, recvbuf: *mut c_void,
        recvcounts: *const c_int, datatype: c_int, op: c_int, comm: c_int, request: *mut c_int) -> c_int {
    call("MPI_Ireduce_scatter", comm, |st| {
        let n = st.comm(comm)?.size() as c_int;
        // SAFETY: `n` ints (MPI contract).
        let counts = unsafe { arr(recvcounts, n, "recvcounts")? }.to_vec();
        ireduce_scatter_common(st, "MPI_Ireduce_scatter", sendbuf, recvbuf, &counts, datatype, op, comm, request)
    })
});

mpi_fn!(MPI_Ireduce_scatter_block, PMPI_Ireduce_scatter_block, (sendbuf: *const c_void, recvbuf: *mut c_void,
        recvcount: c_int, datatype: c_int, op: c_int, comm: c_int, request: *mut c_int) -> c_int {
    call("MPI_Ireduce_scatter_block", comm, |st| {
        let n = st.comm(comm)?.size();
        if recvcount < 0 {
            return Err(Error::Count(format!("MPI_Ireduce_scatter_block: count {recvcount} is negative")));
        }
        ireduce_scatter_common(st, "MPI_Ireduce_scatter_block", sendbuf, recvbuf, &vec![recvcount; n], datatype, op, comm, request)
    })
});

macro_rules! iscan_fn {
    ($mpi:ident, $pmpi:ident, $name:literal, $excl:expr) => {
        mpi_fn!($mpi, $pmpi, (sendbuf: *const c_void, recvbuf: *mut c_void, n: c_int, datatype: c_int,
                op: c_int, comm: c_int, request: *mut c_int) -> c_int {
            call($name, comm, |st| {
                let c = st.comm(comm)?;
                let op = op_of(op, datatype)?;
                // SAFETY: valid until the request completes (MPI contract).
                let (s, r) = unsafe { (opt_buf(st, sendbuf, n, datatype, $name)?, user_buf(st, recvbuf, n, datatype, $name)?) };
                let id = st.mpi.iscan(&c, s, r, &op, $excl)?;
                // SAFETY: the caller's request.
                unsafe { out(request, id) }
            })
        });
    };
}
iscan_fn!(MPI_Iscan, PMPI_Iscan, "MPI_Iscan", false);
iscan_fn!(MPI_Iexscan, PMPI_Iexscan, "MPI_Iexscan", true);
