//! Collectives (MPI-3.1 chapter 5): argument translation to `mpi_lite::coll` (which runs
//! the shared algorithms of `skifch::coll`). `MPI_IN_PLACE` is honoured where MPI allows
//! it; user-defined operations (`MPI_Op_create`) are not supported yet.

use std::ffi::{c_int, c_void};

use mpi_lite::comm::CommData;
use mpi_lite::datatype::Basic;
use mpi_lite::mem::UserBuf;
use mpi_lite::op::ReduceOp;
use mpi_lite::{Error, Result};

use super::ops::op_of;
use super::{arr, contiguous_bytes, count, mpi_fn, user_buf, IN_PLACE};
use crate::state::{call, h, CState};

fn in_place(p: *const c_void) -> bool {
    p as usize == IN_PLACE
}

/// A send buffer, `None` for `MPI_IN_PLACE`.
///
/// # Safety
/// MPI buffer contract for the duration of the call.
unsafe fn send_buf(
    st: &CState,
    p: *const c_void,
    n: c_int,
    dt: c_int,
    call: &str,
) -> Result<Option<UserBuf>> {
    if in_place(p) {
        return Ok(None);
    }
    // SAFETY: forwarded.
    unsafe { user_buf(st, p, n, dt, call).map(Some) }
}

/// Element counts of a v-variant (one per member) and the number of elements the buffer
/// spans (max of displacement + count).
///
/// # Safety
/// `counts` and `displs` hold `n` ints each.
unsafe fn layout(
    counts: *const c_int,
    displs: *const c_int,
    n: usize,
    call: &str,
) -> Result<(Vec<usize>, Vec<usize>, usize)> {
    // SAFETY: forwarded.
    let (c, d) = unsafe {
        (
            arr(counts, n as c_int, "counts")?,
            arr(displs, n as c_int, "displs")?,
        )
    };
    let c: Vec<usize> = c.iter().map(|&x| count(x, call)).collect::<Result<_>>()?;
    let d: Vec<usize> = d
        .iter()
        .map(|&x| {
            usize::try_from(x).map_err(|_| Error::Arg(format!("{call}: negative displacement {x}")))
        })
        .collect::<Result<_>>()?;
    let span = c.iter().zip(&d).map(|(a, b)| a + b).max().unwrap_or(0);
    Ok((c, d, span))
}

/// A rooted call's part for this process: `None` in the root's group of an
/// intercommunicator but not the root (no part at all), else whether it is the root and
/// whether it has data of its own (at an intercommunicator's root it has none).
fn roles(c: &CommData, root: c_int) -> Option<(bool, bool)> {
    if c.is_idle(root) {
        return None;
    }
    let is_root = c.is_root(root);
    Some((is_root, !(is_root && c.inter.is_some())))
}

fn regular(n: usize, k: usize) -> (Vec<usize>, Vec<usize>) {
    (vec![k; n], (0..n).map(|i| i * k).collect())
}

mpi_fn!(MPI_Barrier, PMPI_Barrier, (comm: c_int) -> c_int {
    call("MPI_Barrier", comm, |st| {
        st.with_comm(comm, |c| st.mpi.barrier(c))
    })
});

mpi_fn!(MPI_Bcast, PMPI_Bcast, (buffer: *mut c_void, n: c_int, datatype: c_int, root: c_int, comm: c_int) -> c_int {
    call("MPI_Bcast", comm, |st| {
        let c = st.comm(comm)?;
        if c.is_idle(root) {
            return Ok(()); // in the root's group of an intercommunicator, not the root
        }
        // SAFETY: the buffer is valid for the call (MPI contract).
        let mut b = unsafe { user_buf(st, buffer, n, datatype, "MPI_Bcast")? };
        st.mpi.bcast(&c, &mut b, root)
    })
});

mpi_fn!(MPI_Reduce, PMPI_Reduce, (sendbuf: *const c_void, recvbuf: *mut c_void, n: c_int, datatype: c_int,
        op: c_int, root: c_int, comm: c_int) -> c_int {
    call("MPI_Reduce", comm, |st| {
        let c = st.comm(comm)?;
        let op = op_of(op, datatype)?;
        let Some((is_root, sends)) = roles(&c, root) else { return Ok(()) };
        // SAFETY: the buffers are valid for the call (MPI contract; recvbuf at the root,
        // sendbuf except at an intercommunicator's root).
        let (s, mut r) = unsafe {
            (if sends { send_buf(st, sendbuf, n, datatype, "MPI_Reduce")? } else { None },
             if is_root { Some(user_buf(st, recvbuf, n, datatype, "MPI_Reduce")?) } else { None })
        };
        st.mpi.reduce(&c, s.as_ref(), r.as_mut(), op, root)
    })
});

mpi_fn!(MPI_Allreduce, PMPI_Allreduce, (sendbuf: *const c_void, recvbuf: *mut c_void, n: c_int, datatype: c_int,
        op: c_int, comm: c_int) -> c_int {
    call("MPI_Allreduce", comm, |st| {
        let c = &st.comm(comm)?;
        let op = op_of(op, datatype)?;
        // Predefined dense types (the common case): the bytes themselves, no `UserBuf`.
        if let Some((r, len)) = contiguous_bytes(recvbuf, n, datatype) {
            let s = if in_place(sendbuf) {
                Some(None)
            } else {
                contiguous_bytes(sendbuf, n, datatype).map(|(p, _)| Some(p))
            };
            // Overlapping buffers take the general path, which reports them.
            let apart = |p: *mut u8| (p as usize) + len <= r as usize || (r as usize) + len <= p as usize;
            if let Some(s) = s.filter(|s| s.is_none_or(apart)) {
                let b = Basic::ALL[datatype as usize - 1];
                // SAFETY: MPI's contract for a blocking collective: `len` bytes (`n`
                // elements of `datatype`, one dense run) at `r` are writable and at the send
                // address readable for the call; the two do not overlap (checked above).
                let (rs, ss) = unsafe {
                    (
                        std::slice::from_raw_parts_mut(r, len),
                        s.map(|p| std::slice::from_raw_parts(p.cast_const(), len)),
                    )
                };
                if let ReduceOp::Predefined(o) = op {
                    return st.mpi.allreduce_bytes(c, ss, rs, b, o);
                }
            }
        }
        // SAFETY: the buffers are valid for the call.
        let (s, mut r) = unsafe {
            (send_buf(st, sendbuf, n, datatype, "MPI_Allreduce")?, user_buf(st, recvbuf, n, datatype, "MPI_Allreduce")?)
        };
        st.mpi.allreduce(c, s.as_ref(), &mut r, op)
    })
});

macro_rules! scan_fn {
    ($mpi:ident, $pmpi:ident, $name:literal, $excl:expr) => {
        mpi_fn!($mpi, $pmpi, (sendbuf: *const c_void, recvbuf: *mut c_void, n: c_int, datatype: c_int,
                op: c_int, comm: c_int) -> c_int {
            call($name, comm, |st| {
                let c = st.comm(comm)?;
                let op = op_of(op, datatype)?;
                // SAFETY: the buffers are valid for the call.
                let (s, mut r) = unsafe {
                    (send_buf(st, sendbuf, n, datatype, $name)?, user_buf(st, recvbuf, n, datatype, $name)?)
                };
                st.mpi.scan(&c, s.as_ref(), &mut r, op, $excl)
            })
        });
    };
}
scan_fn!(MPI_Scan, PMPI_Scan, "MPI_Scan", false);
scan_fn!(MPI_Exscan, PMPI_Exscan, "MPI_Exscan", true);

mpi_fn!(MPI_Reduce_local, PMPI_Reduce_local, (inbuf: *const c_void, inoutbuf: *mut c_void, n: c_int,
        datatype: c_int, op: c_int) -> c_int {
    call("MPI_Reduce_local", h::COMM_WORLD, |st| {
        let op = op_of(op, datatype)?;
        // SAFETY: the buffers are valid for the call.
        let (i, mut io) = unsafe {
            (user_buf(st, inbuf, n, datatype, "MPI_Reduce_local")?, user_buf(st, inoutbuf, n, datatype, "MPI_Reduce_local")?)
        };
        mpi_lite::coll::reduce_local(&i, &mut io, &op)
    })
});

mpi_fn!(MPI_Reduce_scatter, PMPI_Reduce_scatter, (sendbuf: *const c_void, recvbuf: *mut c_void,
        recvcounts: *const c_int, datatype: c_int, op: c_int, comm: c_int) -> c_int {
    call("MPI_Reduce_scatter", comm, |st| {
        let c = st.comm(comm)?;
        let op = op_of(op, datatype)?;
        // SAFETY: one count per member.
        let counts: Vec<usize> = unsafe { arr(recvcounts, c.size() as c_int, "recvcounts")? }
            .iter().map(|&x| count(x, "MPI_Reduce_scatter")).collect::<Result<_>>()?;
        let total: usize = counts.iter().sum();
        let mine = counts[c.rank];
        // SAFETY: the buffers are valid for the call (the whole input in recvbuf with MPI_IN_PLACE).
        let (s, mut r) = unsafe {
            (send_buf(st, sendbuf, total as c_int, datatype, "MPI_Reduce_scatter")?,
             user_buf(st, recvbuf, if in_place(sendbuf) { total } else { mine } as c_int, datatype, "MPI_Reduce_scatter")?)
        };
        st.mpi.reduce_scatter(&c, s.as_ref(), &mut r, &counts, op)
    })
});

mpi_fn!(MPI_Reduce_scatter_block, PMPI_Reduce_scatter_block, (sendbuf: *const c_void, recvbuf: *mut c_void,
        recvcount: c_int, datatype: c_int, op: c_int, comm: c_int) -> c_int {
    call("MPI_Reduce_scatter_block", comm, |st| {
        let c = st.comm(comm)?;
        let op = op_of(op, datatype)?;
        let k = count(recvcount, "MPI_Reduce_scatter_block")?;
        let counts = vec![k; c.size()];
        let total = k * c.size();
        // SAFETY: the buffers are valid for the call.
        let (s, mut r) = unsafe {
            (send_buf(st, sendbuf, total as c_int, datatype, "MPI_Reduce_scatter_block")?,
             user_buf(st, recvbuf, if in_place(sendbuf) { total } else { k } as c_int, datatype, "MPI_Reduce_scatter_block")?)
        };
        st.mpi.reduce_scatter(&c, s.as_ref(), &mut r, &counts, op)
    })
});

mpi_fn!(MPI_Gather, PMPI_Gather, (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
        recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int) -> c_int {
    call("MPI_Gather", comm, |st| {
        let c = st.comm(comm)?;
        let Some((is_root, sends)) = roles(&c, root) else { return Ok(()) };
        let n = c.peers().size();
        let k = if is_root { count(recvcount, "MPI_Gather")? } else { 0 };
        let (cs, ds) = regular(n, k);
        // SAFETY: the buffers are valid for the call (recvbuf at the root).
        let (s, mut r) = unsafe {
            (if sends { send_buf(st, sendbuf, sendcount, sendtype, "MPI_Gather")? } else { None },
             if is_root { Some(user_buf(st, recvbuf, (k * n) as c_int, recvtype, "MPI_Gather")?) } else { None })
        };
        st.mpi.gatherv(&c, s.as_ref(), r.as_mut(), &cs, &ds, root)
    })
});

mpi_fn!(MPI_Gatherv, PMPI_Gatherv, (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
        recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, root: c_int, comm: c_int) -> c_int {
    call("MPI_Gatherv", comm, |st| {
        let c = st.comm(comm)?;
        let Some((is_root, sends)) = roles(&c, root) else { return Ok(()) };
        // SAFETY: the arrays hold one int per (remote) member at the root; the buffers are valid.
        let (s, r, cs, ds) = unsafe {
            let s = if sends { send_buf(st, sendbuf, sendcount, sendtype, "MPI_Gatherv")? } else { None };
            if is_root {
                let (cs, ds, span) = layout(recvcounts, displs, c.peers().size(), "MPI_Gatherv")?;
                (s, Some(user_buf(st, recvbuf, span as c_int, recvtype, "MPI_Gatherv")?), cs, ds)
            } else {
                (s, None, Vec::new(), Vec::new())
            }
        };
        let mut r = r;
        st.mpi.gatherv(&c, s.as_ref(), r.as_mut(), &cs, &ds, root)
    })
});

mpi_fn!(MPI_Scatter, PMPI_Scatter, (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
        recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int) -> c_int {
    call("MPI_Scatter", comm, |st| {
        let c = st.comm(comm)?;
        let Some((is_root, receives)) = roles(&c, root) else { return Ok(()) };
        let n = c.peers().size();
        let k = if is_root { count(sendcount, "MPI_Scatter")? } else { 0 };
        let (cs, ds) = regular(n, k);
        // SAFETY: the buffers are valid for the call (sendbuf at the root).
        let (s, mut r) = unsafe {
            (if is_root { Some(user_buf(st, sendbuf, (k * n) as c_int, sendtype, "MPI_Scatter")?) } else { None },
             if receives { send_buf(st, recvbuf, recvcount, recvtype, "MPI_Scatter")? } else { None })
        };
        st.mpi.scatterv(&c, s.as_ref(), &cs, &ds, r.as_mut(), root)
    })
});

mpi_fn!(MPI_Scatterv, PMPI_Scatterv, (sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int,
        sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int) -> c_int {
    call("MPI_Scatterv", comm, |st| {
        let c = st.comm(comm)?;
        let Some((is_root, receives)) = roles(&c, root) else { return Ok(()) };
        // SAFETY: the arrays hold one int per (remote) member at the root; the buffers are valid.
        let (s, mut r, cs, ds) = unsafe {
            let r = if receives { send_buf(st, recvbuf, recvcount, recvtype, "MPI_Scatterv")? } else { None };
            if is_root {
                let (cs, ds, span) = layout(sendcounts, displs, c.peers().size(), "MPI_Scatterv")?;
                (Some(user_buf(st, sendbuf, span as c_int, sendtype, "MPI_Scatterv")?), r, cs, ds)
            } else {
                (None, r, Vec::new(), Vec::new())
            }
        };
        st.mpi.scatterv(&c, s.as_ref(), &cs, &ds, r.as_mut(), root)
    })
});

mpi_fn!(MPI_Allgather, PMPI_Allgather, (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
        recvcount: c_int, recvtype: c_int, comm: c_int) -> c_int {
    call("MPI_Allgather", comm, |st| {
        let c = st.comm(comm)?;
        let k = count(recvcount, "MPI_Allgather")?;
        let n = c.peers().size();
        let (cs, ds) = regular(n, k);
        // SAFETY: the buffers are valid for the call.
        let (s, mut r) = unsafe {
            (send_buf(st, sendbuf, sendcount, sendtype, "MPI_Allgather")?,
             user_buf(st, recvbuf, (k * n) as c_int, recvtype, "MPI_Allgather")?)
        };
        st.mpi.allgatherv(&c, s.as_ref(), &mut r, &cs, &ds)
    })
});

mpi_fn!(MPI_Allgatherv, PMPI_Allgatherv, (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
        recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, comm: c_int) -> c_int {
    call("MPI_Allgatherv", comm, |st| {
        let c = st.comm(comm)?;
        // SAFETY: one int per member in each array; the buffers are valid for the call.
        let (s, mut r, cs, ds) = unsafe {
            let (cs, ds, span) = layout(recvcounts, displs, c.peers().size(), "MPI_Allgatherv")?;
            (send_buf(st, sendbuf, sendcount, sendtype, "MPI_Allgatherv")?,
             user_buf(st, recvbuf, span as c_int, recvtype, "MPI_Allgatherv")?, cs, ds)
        };
        st.mpi.allgatherv(&c, s.as_ref(), &mut r, &cs, &ds)
    })
});

mpi_fn!(MPI_Alltoall, PMPI_Alltoall, (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
        recvcount: c_int, recvtype: c_int, comm: c_int) -> c_int {
    call("MPI_Alltoall", comm, |st| {
        let c = st.comm(comm)?;
        let n = c.peers().size();
        let rk = count(recvcount, "MPI_Alltoall")?;
        let sk = if in_place(sendbuf) { rk } else { count(sendcount, "MPI_Alltoall")? };
        let (sc, sd) = regular(n, sk);
        let (rc, rd) = regular(n, rk);
        // SAFETY: the buffers are valid for the call.
        let (s, mut r) = unsafe {
            (send_buf(st, sendbuf, (sk * n) as c_int, sendtype, "MPI_Alltoall")?,
             user_buf(st, recvbuf, (rk * n) as c_int, recvtype, "MPI_Alltoall")?)
        };
        st.mpi.alltoallv(&c, s.as_ref(), &sc, &sd, &mut r, &rc, &rd)
    })
});

mpi_fn!(MPI_Alltoallv, PMPI_Alltoallv, (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int,
        sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: c_int,
        comm: c_int) -> c_int {
    call("MPI_Alltoallv", comm, |st| {
        let c = st.comm(comm)?;
        let n = c.peers().size();
        // SAFETY: one int per member in each array; the buffers are valid for the call.
        let (s, mut r, sc, sd, rc, rd) = unsafe {
            let (rc, rd, rspan) = layout(recvcounts, rdispls, n, "MPI_Alltoallv")?;
            let (sc, sd, s) = if in_place(sendbuf) {
                (Vec::new(), Vec::new(), None)
            } else {
                let (sc, sd, sspan) = layout(sendcounts, sdispls, n, "MPI_Alltoallv")?;
                (sc, sd, send_buf(st, sendbuf, sspan as c_int, sendtype, "MPI_Alltoallv")?)
            };
            (s, user_buf(st, recvbuf, rspan as c_int, recvtype, "MPI_Alltoallv")?, sc, sd, rc, rd)
        };
        st.mpi.alltoallv(&c, s.as_ref(), &sc, &sd, &mut r, &rc, &rd)
    })
});
