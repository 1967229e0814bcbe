//! Nonblocking collectives on intercommunicators (MPI-3.1 §5.12 with §5.2.2's
//! semantics): the schedules of [`crate::nbc`] with transfers on two contexts — between
//! the groups on the intercommunicator's collective context (remote ranks), and inside a
//! group on its local communicator's — all with the intercommunicator's next tag.
//!
//! Algorithms (groups are small here; few rounds matter):
//!
//! | call | rounds |
//! | --- | --- |
//! | `ibarrier` | members → leader; leaders swap; leader → members |
//! | `ibcast` | root → remote leader; leader → its members |
//! | `igatherv`, `iscatterv`, `iallgatherv`, `ialltoallw` | one round, every remote pair direct |
//! | `ireduce` | the other group folds at its leader in rank order; leader → root |
//! | `iallreduce`, `ireduce_scatter` | each group folds at its leader; leaders swap; leader → members (their blocks) |
//!
//! # Collective Operation
//! Every member of both groups calls the same collectives in the same order; processes in
//! the root's group other than the root (`MPI_PROC_NULL`) take the call's tag and get a
//! complete request. A request completes when this process's part is done.

use skifch::Port;

use crate::comm::{CommData, Mpi};
use crate::engine::{Envelope, Range, ReqId};
use crate::error::{Error, Result};
use crate::inter::Inter;
use crate::intercoll::{check_len, no_in_place, role, Role};
use crate::mem::UserBuf;
use crate::nbc::{check_blocks, fold_ops, laid_out_lens, mismatch, offsets, Plan};
use crate::op::ReduceOp;

type Tx = (Envelope, u32, Range);
type Rx = (Envelope, Range);

impl Plan<'_> {
    /// A send to remote rank `j`.
    fn xtx(&self, x: &Inter, j: usize, r: Range) -> Tx {
        (
            self.c.coll_env(self.c.rank as i32, self.tag),
            x.remote.ranks()[j],
            r,
        )
    }
    /// A receive from remote rank `j`.
    fn xrx(&self, j: usize, r: Range) -> Rx {
        (self.c.coll_env(j as i32, self.tag), r)
    }
    /// A send to local rank `j` (on the local communicator).
    fn ltx(&self, x: &Inter, j: usize, r: Range) -> Tx {
        (
            x.local.coll_env(self.c.rank as i32, self.tag),
            x.local.world_of(j),
            r,
        )
    }
    /// A receive from local rank `j`.
    fn lrx(&self, x: &Inter, j: usize, r: Range) -> Rx {
        (x.local.coll_env(j as i32, self.tag), r)
    }

    /// Folds every local member's `input` at the leader in rank order. The scratch is
    /// `n·len + extra` bytes at the leader (the result at the returned offset), `len +
    /// extra` elsewhere (the input at 0, sent to the leader).
    fn local_fold(&mut self, x: &Inter, input: &[u8], extra: usize) -> usize {
        let (r, n, len) = (self.c.rank, x.local.size(), input.len());
        if r == 0 {
            self.s.set_scratch(n * len + extra);
            self.s.buf[..len].copy_from_slice(input);
            let recvs = (1..n).map(|j| self.lrx(x, j, (j * len, len))).collect();
            self.round(vec![], recvs, fold_ops(n, len));
            (n - 1) * len
        } else {
            self.s.set_scratch(len + extra);
            self.s.buf[..len].copy_from_slice(input);
            let s = self.ltx(x, 0, (0, len));
            self.round(vec![s], vec![], vec![]);
            0
        }
    }

    /// The leader sends `blocks[j]` of the scratch to local member `j` (j ≥ 1); the
    /// others receive theirs into the scratch at `at`.
    fn local_spread(&mut self, x: &Inter, blocks: &[Range], at: usize) {
        if self.c.rank == 0 {
            let sends = (1..blocks.len())
                .map(|j| self.ltx(x, j, blocks[j]))
                .collect();
            self.round(sends, vec![], vec![]);
        } else {
            let v = self.lrx(x, 0, (at, blocks[self.c.rank].1));
            self.round(vec![], vec![v], vec![]);
        }
    }
}

impl<P: Port> Mpi<P> {
    /// A process with no part takes the call's tag (so the members' tags stay in step)
    /// and gets a complete request.
    fn no_part(&self, c: &CommData) -> Result<ReqId> {
        let _ = self.plan(c, 0);
        self.engine().done_request()
    }

    /// `MPI_Ibarrier` on an intercommunicator: completes once every member of both groups
    /// has entered.
    pub(crate) fn inter_ibarrier(&self, c: &CommData, x: &Inter) -> Result<ReqId> {
        let mut p = self.plan(c, 0);
        let n = x.local.size();
        let none = vec![(0, 0); n];
        if c.rank == 0 {
            let recvs = (1..n).map(|j| p.lrx(x, j, (0, 0))).collect();
            p.round(vec![], recvs, vec![]);
            let (s, v) = (p.xtx(x, 0, (0, 0)), p.xrx(0, (0, 0)));
            p.round(vec![s], vec![v], vec![]);
        } else {
            let s = p.ltx(x, 0, (0, 0));
            p.round(vec![s], vec![], vec![]);
        }
        p.local_spread(x, &none, 0);
        self.start(p)
    }

    /// `MPI_Ibcast` on an intercommunicator.
    pub(crate) fn inter_ibcast(
        &self,
        c: &CommData,
        x: &Inter,
        buf: UserBuf,
        root: i32,
    ) -> Result<ReqId> {
        let len = buf.packed_len();
        match role(x, root)? {
            Role::Idle => self.no_part(c),
            Role::Root => {
                let mut p = self.plan(c, len);
                p.load(0, &buf)?;
                let s = p.xtx(x, 0, (0, len));
                p.round(vec![s], vec![], vec![]);
                self.start(p)
            }
            Role::Leaf(r) => {
                let mut p = self.plan(c, len);
                if c.rank == 0 {
                    let v = p.xrx(r, (0, len));
                    p.round(vec![], vec![v], vec![]);
                }
                p.local_spread(x, &vec![(0, len); x.local.size()], 0);
                p.s.out.push((buf, 0));
                self.start(p)
            }
        }
    }

    /// `MPI_Ireduce` on an intercommunicator.
    pub(crate) fn inter_ireduce(
        &self,
        c: &CommData,
        x: &Inter,
        send: Option<UserBuf>,
        recv: Option<UserBuf>,
        op: &ReduceOp,
        root: i32,
    ) -> Result<ReqId> {
        match role(x, root)? {
            Role::Idle => self.no_part(c),
            Role::Root => {
                let recv =
                    recv.ok_or_else(|| Error::Buffer("the root needs a receive buffer".into()))?;
                let recv = recv.laid_out();
                let len = recv.packed_len();
                let mut p = self.plan(c, len);
                let v = p.xrx(0, (0, len));
                p.round(vec![], vec![v], vec![]);
                p.s.out.push((recv, 0));
                self.start(p)
            }
            Role::Leaf(r) => {
                let send = send.ok_or_else(no_in_place)?;
                let mut p = self.plan(c, 0);
                let len = p.reduce_with(&send, op)?;
                let at = p.local_fold(x, &send.laid_out().to_packed()?, 0);
                if c.rank == 0 {
                    let s = p.xtx(x, r, (at, len));
                    p.round(vec![s], vec![], vec![]);
                }
                self.start(p)
            }
        }
    }

    /// `MPI_Iallreduce` on an intercommunicator: each group gets the other's reduction
    /// (`send == None`: the input is in `recv`).
    pub(crate) fn inter_iallreduce(
        &self,
        c: &CommData,
        x: &Inter,
        send: Option<UserBuf>,
        recv: UserBuf,
        op: &ReduceOp,
    ) -> Result<ReqId> {
        let mut p = self.plan(c, 0);
        let len = p.reduce_with(send.as_ref().unwrap_or(&recv), op)?;
        let (send, recv) = (send.map(UserBuf::laid_out), recv.laid_out());
        if recv.packed_len() != len {
            return Err(mismatch());
        }
        let n = x.local.size();
        let input = send.as_ref().unwrap_or(&recv).to_packed()?;
        self.fold_swap_spread(&mut p, x, &input, &vec![(0, len); n])?;
        p.s.out.push((recv, if c.rank == 0 { n * len } else { 0 }));
        self.start(p)
    }

    /// `MPI_Ireduce_scatter(_block)` on an intercommunicator: `lens[j]` packed bytes of
    /// the other group's reduction go to local member j.
    pub(crate) fn inter_ireduce_scatter(
        &self,
        c: &CommData,
        x: &Inter,
        input: UserBuf,
        out: UserBuf,
        lens: &[usize],
        op: &ReduceOp,
    ) -> Result<ReqId> {
        let n = x.local.size();
        if lens.len() != n || out.packed_len() != lens[c.rank] {
            return Err(mismatch());
        }
        let lens = &laid_out_lens(input.datatype(), lens);
        let (off, total) = offsets(lens);
        let mut p = self.plan(c, 0);
        if p.reduce_with(&input, op)? != total {
            return Err(mismatch());
        }
        let (input, out) = (input.laid_out(), out.laid_out());
        let blocks: Vec<Range> = off.iter().copied().zip(lens.iter().copied()).collect();
        self.fold_swap_spread(&mut p, x, &input.to_packed()?, &blocks)?;
        p.s.out
            .push((out, if c.rank == 0 { n * total + off[0] } else { 0 }));
        self.start(p)
    }

    /// Folds `input` at the leader, swaps the result with the other leader (which lands at
    /// `n·len` of the leader's scratch) and sends `blocks[j]` of it to local member j (at
    /// 0 of the others' scratch).
    fn fold_swap_spread(
        &self,
        p: &mut Plan<'_>,
        x: &Inter,
        input: &[u8],
        blocks: &[Range],
    ) -> Result<()> {
        let (n, len) = (x.local.size(), input.len());
        let mine = blocks.get(p.c.rank).map_or(0, |b| b.1);
        let at = p.local_fold(x, input, if p.c.rank == 0 { len } else { mine });
        if p.c.rank == 0 {
            let (s, v) = (p.xtx(x, 0, (at, len)), p.xrx(0, (n * len, len)));
            p.round(vec![s], vec![v], vec![]);
            let shifted: Vec<Range> = blocks.iter().map(|&(o, l)| (n * len + o, l)).collect();
            p.local_spread(x, &shifted, 0);
        } else {
            p.local_spread(x, blocks, 0);
        }
        Ok(())
    }

    /// `MPI_Igather(v)` on an intercommunicator: `recv` holds one block per remote process
    /// at the root.
    pub(crate) fn inter_igatherv(
        &self,
        c: &CommData,
        x: &Inter,
        send: Option<UserBuf>,
        recv: Vec<UserBuf>,
        root: i32,
    ) -> Result<ReqId> {
        match role(x, root)? {
            Role::Idle => self.no_part(c),
            Role::Root => {
                check_len(x, recv.len(), "MPI_Igather")?;
                let lens: Vec<usize> = recv.iter().map(UserBuf::packed_len).collect();
                let (off, total) = offsets(&lens);
                let mut p = self.plan(c, total);
                let recvs = (0..lens.len())
                    .map(|j| p.xrx(j, (off[j], lens[j])))
                    .collect();
                p.round(vec![], recvs, vec![]);
                p.s.out = recv.into_iter().zip(off).collect();
                self.start(p)
            }
            Role::Leaf(r) => {
                let send = send.ok_or_else(no_in_place)?;
                let mut p = self.plan(c, send.packed_len());
                p.load(0, &send)?;
                let s = p.xtx(x, r, (0, send.packed_len()));
                p.round(vec![s], vec![], vec![]);
                self.start(p)
            }
        }
    }

    /// `MPI_Iscatter(v)` on an intercommunicator: `send` holds one block per remote
    /// process at the root.
    pub(crate) fn inter_iscatterv(
        &self,
        c: &CommData,
        x: &Inter,
        send: Vec<UserBuf>,
        recv: Option<UserBuf>,
        root: i32,
    ) -> Result<ReqId> {
        match role(x, root)? {
            Role::Idle => self.no_part(c),
            Role::Root => {
                check_len(x, send.len(), "MPI_Iscatter")?;
                let lens: Vec<usize> = send.iter().map(UserBuf::packed_len).collect();
                let (off, total) = offsets(&lens);
                let mut p = self.plan(c, total);
                for (j, b) in send.iter().enumerate() {
                    p.load(off[j], b)?;
                }
                let sends = (0..lens.len())
                    .map(|j| p.xtx(x, j, (off[j], lens[j])))
                    .collect();
                p.round(sends, vec![], vec![]);
                self.start(p)
            }
            Role::Leaf(r) => {
                let recv = recv.ok_or_else(no_in_place)?;
                let mut p = self.plan(c, recv.packed_len());
                let v = p.xrx(r, (0, recv.packed_len()));
                p.round(vec![], vec![v], vec![]);
                p.s.out.push((recv, 0));
                self.start(p)
            }
        }
    }

    /// `MPI_Iallgather(v)` on an intercommunicator: `recv` holds one block per remote
    /// process.
    pub(crate) fn inter_iallgatherv(
        &self,
        c: &CommData,
        x: &Inter,
        send: Option<UserBuf>,
        recv: Vec<UserBuf>,
    ) -> Result<ReqId> {
        let send = send.ok_or_else(no_in_place)?;
        check_len(x, recv.len(), "MPI_Iallgather")?;
        let lens: Vec<usize> = recv.iter().map(UserBuf::packed_len).collect();
        let (off, total) = offsets(&lens);
        let sl = send.packed_len();
        let mut p = self.plan(c, sl + total);
        p.load(0, &send)?;
        let sends = (0..lens.len()).map(|j| p.xtx(x, j, (0, sl))).collect();
        let recvs = (0..lens.len())
            .map(|j| p.xrx(j, (sl + off[j], lens[j])))
            .collect();
        p.round(sends, recvs, vec![]);
        p.s.out = recv
            .into_iter()
            .zip(off.into_iter().map(|o| sl + o))
            .collect();
        self.start(p)
    }

    /// `MPI_Ialltoall(v,w)` on an intercommunicator: block j of `send` goes to remote
    /// process j, block j of `recv` comes from it.
    pub(crate) fn inter_ialltoallw(
        &self,
        c: &CommData,
        x: &Inter,
        send: Option<Vec<UserBuf>>,
        recv: Vec<UserBuf>,
    ) -> Result<ReqId> {
        let send = send.ok_or_else(no_in_place)?;
        let n = x.remote.size();
        check_blocks(&send, n)?;
        check_blocks(&recv, n)?;
        let slens: Vec<usize> = send.iter().map(UserBuf::packed_len).collect();
        let rlens: Vec<usize> = recv.iter().map(UserBuf::packed_len).collect();
        let (soff, stotal) = offsets(&slens);
        let (roff, rtotal) = offsets(&rlens);
        let mut p = self.plan(c, stotal + rtotal);
        for (j, b) in send.iter().enumerate() {
            p.load(soff[j], b)?;
        }
        let sends = (0..n).map(|j| p.xtx(x, j, (soff[j], slens[j]))).collect();
        let recvs = (0..n)
            .map(|j| p.xrx(j, (stotal + roff[j], rlens[j])))
            .collect();
        p.round(sends, recvs, vec![]);
        p.s.out = recv
            .into_iter()
            .zip(roff.into_iter().map(|o| stotal + o))
            .collect();
        self.start(p)
    }
}
