//! Collectives on intercommunicators (MPI-3.1 §5.2.2): data moves from one group to the
//! other. Rooted calls name the root with `MPI_ROOT` in its own group (the rest of that
//! group passes `MPI_PROC_NULL` and takes no part) and with its rank in the other group.
//!
//! Data between the groups travels as direct messages on the intercommunicator's
//! collective context (packed bytes, each process to the remote processes it owes data),
//! one tag per kind of call: blocking collectives on one communicator run in the same
//! order everywhere and messages between two processes do not overtake, so a message
//! always meets the receive of the same call. Reductions reduce inside a group on its
//! local communicator first (rank order, so non-commutative operations are honoured),
//! then the leaders (local rank 0) pass the result on and it is spread in the other group.
//!
//! # Collective Operation
//! Every member of both groups calls the same collectives in the same order. A call
//! returns when this process's part is done: a sender once its data is out (buffered or
//! received), a receiver once its buffer holds the result; `MPI_Barrier` once every member
//! of both groups has entered.

use skifch::coll::{self, Reducer};
use skifch::Port;

use crate::coll::{byte_layout, bytes, dense_in, reduce_elem, with_bytes, with_dense};
use crate::comm::{CommData, Mpi};
use crate::engine::{Mode, PROC_NULL};
use crate::error::{Error, Result};
use crate::inter::{Inter, ROOT};
use crate::mem::UserBuf;
use crate::op::{reducer, ReduceOp};

const T_BCAST: i32 = -30;
const T_REDUCE: i32 = -31;
const T_GATHER: i32 = -32;
const T_SCATTER: i32 = -33;
const T_ALLGATHER: i32 = -34;
const T_ALLTOALL: i32 = -35;
const T_ALLREDUCE: i32 = -36;
const T_REDSCAT: i32 = -37;

/// This process's part in a rooted collective.
pub(crate) enum Role {
    /// The root (`MPI_ROOT`).
    Root,
    /// In the root's group, not the root (`MPI_PROC_NULL`): no part.
    Idle,
    /// In the other group; the root is remote rank `.0`.
    Leaf(usize),
}

pub(crate) fn role(x: &Inter, root: i32) -> Result<Role> {
    match root {
        ROOT => Ok(Role::Root),
        PROC_NULL => Ok(Role::Idle),
        r if (0..x.remote.size() as i32).contains(&r) => Ok(Role::Leaf(r as usize)),
        r => Err(Error::Root(format!(
            "root {r} is neither MPI_ROOT, MPI_PROC_NULL nor a rank of the remote group of {}",
            x.remote.size()
        ))),
    }
}

pub(crate) fn no_in_place() -> Error {
    Error::Buffer("MPI_IN_PLACE is not allowed on an intercommunicator".into())
}

/// One count per remote process.
pub(crate) fn check_len(x: &Inter, n: usize, what: &str) -> Result<()> {
    if n == x.remote.size() {
        Ok(())
    } else {
        Err(Error::Count(format!(
            "{what}: {n} counts for a remote group of {}",
            x.remote.size()
        )))
    }
}

/// Block `j` (`lens[j]` bytes at `at[j]`) of `b` for remote process `j`, each of them.
fn cut(b: &[u8], lens: &[usize], at: &[usize]) -> Result<Vec<(usize, Vec<u8>)>> {
    (0..lens.len())
        .map(|j| {
            let blk = b
                .get(at[j]..at[j] + lens[j])
                .ok_or_else(|| Error::Count("a block lies outside the send buffer".into()))?;
            Ok((j, blk.to_vec()))
        })
        .collect()
}

/// Copies `blocks[j]` to `b[at[j]..]` (bounds checked).
fn place(b: &mut [u8], at: &[usize], blocks: &[Vec<u8>]) -> Result<()> {
    for (j, blk) in blocks.iter().enumerate() {
        b.get_mut(at[j]..at[j] + blk.len())
            .ok_or_else(|| Error::Count("a block lies outside the receive buffer".into()))?
            .copy_from_slice(blk);
    }
    Ok(())
}

impl<P: Port> Mpi<P> {
    /// Sends each `(remote rank, bytes)` of `out` and receives each `(remote rank, length)`
    /// of `inc` on `c`'s collective context with `tag`; the received blocks in `inc`'s order.
    fn inter_swap(
        &self,
        c: &CommData,
        x: &Inter,
        tag: i32,
        out: Vec<(usize, Vec<u8>)>,
        inc: &[(usize, usize)],
    ) -> Result<Vec<Vec<u8>>> {
        let e = self.engine();
        let env = c.coll_env(c.rank as i32, tag);
        let mut sends = Vec::with_capacity(out.len());
        // All sends first (they complete through the receives' progress), so two
        // processes sending to each other never wait on each other.
        for (r, b) in out {
            sends.push(e.isend(
                env,
                x.remote.ranks()[r],
                UserBuf::owned(b),
                Mode::Standard,
                0,
            )?);
        }
        let got = inc
            .iter()
            .map(|&(r, len)| e.coll_recv(c.coll_env(r as i32, tag), len))
            .collect::<Result<Vec<_>>>()?;
        for s in sends {
            e.wait(s)?;
        }
        Ok(got)
    }

    /// `MPI_Bcast` on an intercommunicator: the root sends to the remote leader, which
    /// broadcasts in its group.
    pub(crate) fn inter_bcast(
        &self,
        c: &CommData,
        x: &Inter,
        buf: &mut UserBuf,
        root: i32,
    ) -> Result<()> {
        match role(x, root)? {
            Role::Root => self
                .inter_swap(c, x, T_BCAST, vec![(0, bytes(buf)?.into_owned())], &[])
                .map(drop),
            Role::Idle => Ok(()),
            Role::Leaf(r) => {
                if c.rank == 0 {
                    let got = self.inter_swap(c, x, T_BCAST, vec![], &[(r, buf.packed_len())])?;
                    buf.write_packed(0, &got[0]);
                }
                self.bcast(&x.local, buf, 0)
            }
        }
    }

    /// `MPI_Reduce` on an intercommunicator: the other group reduces to its leader, which
    /// sends the result to the root.
    pub(crate) fn inter_reduce(
        &self,
        c: &CommData,
        x: &Inter,
        send: Option<&UserBuf>,
        recv: Option<&mut UserBuf>,
        op: ReduceOp,
        root: i32,
    ) -> Result<()> {
        match role(x, root)? {
            Role::Root => {
                let r = recv.ok_or_else(|| {
                    Error::Buffer("MPI_Reduce: no receive buffer at the root".into())
                })?;
                let k = reducer(r.datatype(), &op)?;
                with_dense(r, &k, |out| {
                    let got = self.inter_swap(c, x, T_REDUCE, vec![], &[(0, out.len())])?;
                    out.copy_from_slice(&got[0]);
                    Ok(())
                })
            }
            Role::Idle => Ok(()),
            Role::Leaf(r) => {
                let s = send.ok_or_else(no_in_place)?;
                if c.rank != 0 {
                    return self.reduce(&x.local, Some(s), None, op, 0);
                }
                let k = reducer(s.datatype(), &op)?;
                let mut tmp = UserBuf::owned(crate::mem::zeroed(dense_in(s, &k)?.len())?);
                self.reduce(&x.local, Some(s), Some(&mut tmp), op, 0)?;
                let t = tmp.into_owned().unwrap_or_default();
                self.inter_swap(c, x, T_REDUCE, vec![(r, t)], &[]).map(drop)
            }
        }
    }

    /// `MPI_Allreduce` on an intercommunicator (dense bytes, `send` the input): each group
    /// reduces to its leader, the leaders swap, each leader broadcasts the other group's
    /// result in its group.
    pub(crate) fn inter_allreduce<R: Reducer>(
        &self,
        c: &CommData,
        x: &Inter,
        send: &[u8],
        recv: &mut [u8],
        k: &R,
    ) -> Result<()> {
        let leader = c.rank == 0;
        let mut mine = if leader {
            crate::mem::zeroed(recv.len())?
        } else {
            Vec::new()
        };
        self.run(&x.local, |t| coll::reduce(t, 0, send, &mut mine, k))?;
        if leader {
            let got = self.inter_swap(c, x, T_ALLREDUCE, vec![(0, mine)], &[(0, recv.len())])?;
            recv.copy_from_slice(&got[0]);
        }
        self.run(&x.local, |t| coll::bcast(t, 0, recv))
    }

    /// `MPI_Reduce_scatter` on an intercommunicator: each group reduces its whole input to
    /// its leader, the leaders swap, each leader scatters the other group's result in its
    /// group by `counts` (elements; the sums agree in both groups).
    pub(crate) fn inter_reduce_scatter(
        &self,
        c: &CommData,
        x: &Inter,
        send: Option<&UserBuf>,
        recv: &mut UserBuf,
        counts: &[usize],
        op: ReduceOp,
    ) -> Result<()> {
        let s = send.ok_or_else(no_in_place)?;
        let k = reducer(s.datatype(), &op)?;
        let es = reduce_elem(s.datatype());
        let bc: Vec<usize> = counts.iter().map(|n| n * es).collect();
        let bd: Vec<usize> = bc
            .iter()
            .scan(0, |a, &n| Some(std::mem::replace(a, *a + n)))
            .collect();
        let total: usize = bc.iter().sum();
        let input = dense_in(s, &k)?;
        let mine = bc.get(c.rank).copied().unwrap_or(0);
        with_dense(recv, &k, |out| {
            if input.len() < total || out.len() < mine {
                return Err(Error::Count(
                    "MPI_Reduce_scatter: a buffer is smaller than the counts say".into(),
                ));
            }
            let leader = c.rank == 0;
            let mut red = if leader {
                crate::mem::zeroed(total)?
            } else {
                Vec::new()
            };
            self.run(&x.local, |t| {
                coll::reduce(t, 0, &input[..total], &mut red, &k)
            })?;
            let theirs = if leader {
                self.inter_swap(c, x, T_REDSCAT, vec![(0, red)], &[(0, total)])?
                    .remove(0)
            } else {
                Vec::new()
            };
            self.run(&x.local, |t| {
                coll::scatterv(t, 0, &theirs, &bc, &bd, &mut out[..mine])
            })
        })
    }

    /// `MPI_Gatherv` on an intercommunicator: every process of the other group sends its
    /// block to the root (`counts`/`displs`: one per remote process, at the root).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn inter_gatherv(
        &self,
        c: &CommData,
        x: &Inter,
        send: Option<&UserBuf>,
        recv: Option<&mut UserBuf>,
        counts: &[usize],
        displs: &[usize],
        root: i32,
    ) -> Result<()> {
        match role(x, root)? {
            Role::Root => {
                let r = recv.ok_or_else(|| {
                    Error::Buffer("MPI_Gather: no receive buffer at the root".into())
                })?;
                check_len(x, counts.len(), "MPI_Gather")?;
                let (bc, bd) = byte_layout(r.datatype(), counts, displs);
                let inc: Vec<(usize, usize)> = bc.iter().copied().enumerate().collect();
                let got = self.inter_swap(c, x, T_GATHER, vec![], &inc)?;
                with_bytes(r, true, |b| place(b, &bd, &got))
            }
            Role::Idle => Ok(()),
            Role::Leaf(r) => {
                let s = bytes(send.ok_or_else(no_in_place)?)?.into_owned();
                self.inter_swap(c, x, T_GATHER, vec![(r, s)], &[]).map(drop)
            }
        }
    }

    /// `MPI_Scatterv` on an intercommunicator: the root sends block `j` to remote process
    /// `j` (`counts`/`displs`: one per remote process, at the root).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn inter_scatterv(
        &self,
        c: &CommData,
        x: &Inter,
        send: Option<&UserBuf>,
        counts: &[usize],
        displs: &[usize],
        recv: Option<&mut UserBuf>,
        root: i32,
    ) -> Result<()> {
        match role(x, root)? {
            Role::Root => {
                let s = send.ok_or_else(|| {
                    Error::Buffer("MPI_Scatter: no send buffer at the root".into())
                })?;
                check_len(x, counts.len(), "MPI_Scatter")?;
                let (bc, bd) = byte_layout(s.datatype(), counts, displs);
                let out = cut(&bytes(s)?, &bc, &bd)?;
                self.inter_swap(c, x, T_SCATTER, out, &[]).map(drop)
            }
            Role::Idle => Ok(()),
            Role::Leaf(r) => {
                let rb = recv.ok_or_else(no_in_place)?;
                let got = self.inter_swap(c, x, T_SCATTER, vec![], &[(r, rb.packed_len())])?;
                rb.write_packed(0, &got[0]);
                Ok(())
            }
        }
    }

    /// `MPI_Allgatherv` on an intercommunicator: every process gets the blocks of every
    /// process of the other group (`counts`/`displs`: one per remote process).
    pub(crate) fn inter_allgatherv(
        &self,
        c: &CommData,
        x: &Inter,
        send: Option<&UserBuf>,
        recv: &mut UserBuf,
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let s = bytes(send.ok_or_else(no_in_place)?)?.into_owned();
        check_len(x, counts.len(), "MPI_Allgather")?;
        let (bc, bd) = byte_layout(recv.datatype(), counts, displs);
        let out = (0..bc.len()).map(|j| (j, s.clone())).collect();
        let inc: Vec<(usize, usize)> = bc.iter().copied().enumerate().collect();
        let got = self.inter_swap(c, x, T_ALLGATHER, out, &inc)?;
        with_bytes(recv, true, |b| place(b, &bd, &got))
    }

    /// `MPI_Alltoallv` on an intercommunicator: block `j` of the send buffer goes to remote
    /// process `j`, block `j` of the receive buffer comes from it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn inter_alltoallv(
        &self,
        c: &CommData,
        x: &Inter,
        send: Option<&UserBuf>,
        scounts: &[usize],
        sdispls: &[usize],
        recv: &mut UserBuf,
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<()> {
        let s = send.ok_or_else(no_in_place)?;
        check_len(x, scounts.len(), "MPI_Alltoall")?;
        check_len(x, rcounts.len(), "MPI_Alltoall")?;
        let (sc, sd) = byte_layout(s.datatype(), scounts, sdispls);
        let (rc, rd) = byte_layout(recv.datatype(), rcounts, rdispls);
        let out = cut(&bytes(s)?, &sc, &sd)?;
        let inc: Vec<(usize, usize)> = rc.iter().copied().enumerate().collect();
        let got = self.inter_swap(c, x, T_ALLTOALL, out, &inc)?;
        with_bytes(recv, true, |b| place(b, &rd, &got))
    }
}
