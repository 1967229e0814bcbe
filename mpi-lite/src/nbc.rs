//! Nonblocking collectives (MPI-3.1 §5.12): each call builds a schedule
//! ([`crate::engine::Sched`]: rounds of transfers and local steps over a scratch of packed
//! bytes) and starts it in the engine, which runs it as whatever call the program waits in
//! progresses; the returned request completes when this member's part is done.
//!
//! # Collective Operation
//! Every member of the communicator calls the same collectives in the same order (MPI
//! §5.12: also relative to the blocking ones); each call takes the next tag of the
//! communicator's collective context (the counter the blocking algorithms use), so
//! several may run at once. Buffers belong to the library until the request completes.
//!
//! Algorithms (the member counts of this machine are small; what matters is few rounds):
//!
//! | call | rounds |
//! | --- | --- |
//! | `ibarrier` | dissemination, ⌈log₂ n⌉ |
//! | `ibcast` | binomial tree: receive from the parent, then send to the children |
//! | `igatherv`, `iscatterv`, `iallgatherv`, `ialltoallw` | one round, every pair direct |
//! | `iallreduce` | recursive doubling for n a power of two (operands in rank order), else reduce to 0 + send back |
//! | `ireduce`, `ireduce_scatter` | the root receives every contribution and folds them in rank order (then scatters) |
//! | `iscan`, `iexscan` | a chain: receive the prefix from r − 1, combine, pass it on |
//!
//! Reductions keep rank order, so non-commutative user operations are correct.

use std::sync::atomic::Ordering;

use skifch::Port;

use crate::coll::root_of;
use crate::comm::{CommData, Mpi};
use crate::engine::{Envelope, Local, Range, ReqId, Sched, Step};
use crate::error::{Error, Result};
use crate::mem::UserBuf;
use crate::op::{reducer, ReduceOp};

/// Tags of the nonblocking collectives: `NBC_TAG_BASE - k`, k < `NBC_TAGS` (below the
/// blocking algorithms' and the communicator calls' negative tags). More than `NBC_TAGS`
/// collectives running at once on one communicator would share tags.
const NBC_TAG_BASE: i32 = -0x2000_0000;
const NBC_TAGS: u32 = 1024;

/// The schedule of one call on communicator `c` with its tag.
pub(crate) struct Plan<'a> {
    pub(crate) c: &'a CommData,
    pub(crate) tag: i32,
    pub(crate) s: Box<Sched>,
}

impl<'a> Plan<'a> {
    pub(crate) fn new(c: &'a CommData, s: Box<Sched>) -> Self {
        // The communicator's collective counter (every member makes the same calls in the
        // same order), folded into 1024 negative tags of their own: a tag tells apart the
        // collectives running at once, and a bounded set keeps the matching tables' keys
        // (and their queues' allocations) reused instead of one new key per call.
        let seq = c.coll_seq.fetch_add(1, Ordering::Relaxed);
        let tag = NBC_TAG_BASE - (seq & (NBC_TAGS - 1)) as i32;
        let mut s = s;
        s.lease = c.lease().cloned();
        Plan { c, tag, s }
    }
    fn rank(&self) -> usize {
        self.c.rank
    }
    fn size(&self) -> usize {
        self.c.size()
    }
    fn tx(&self, to: usize, r: Range) -> (Envelope, u32, Range) {
        self.tx_tagged(to, r, self.tag)
    }
    fn rx(&self, from: usize, r: Range) -> (Envelope, Range) {
        self.rx_tagged(from, r, self.tag)
    }
    fn tx_tagged(&self, to: usize, r: Range, tag: i32) -> (Envelope, u32, Range) {
        (
            self.c.coll_env(self.c.rank as i32, tag),
            self.c.world_of(to),
            r,
        )
    }
    fn rx_tagged(&self, from: usize, r: Range, tag: i32) -> (Envelope, Range) {
        (self.c.coll_env(from as i32, tag), r)
    }
    /// A round with these transfers and local steps.
    pub(crate) fn round(
        &mut self,
        sends: Vec<(Envelope, u32, Range)>,
        recvs: Vec<(Envelope, Range)>,
        ops: Vec<Local>,
    ) {
        // Receives first: posted before this member's sends go.
        for (e, r) in recvs {
            self.s.push(Step::Recv(e, r));
        }
        for (e, d, r) in sends {
            self.s.push(Step::Send(e, d, r));
        }
        for o in ops {
            self.s.push(Step::Op(o));
        }
        self.s.push(Step::Next);
    }
    /// A round of one exchange with `peer` (no allocation beyond the schedule's).
    fn exchange_round(
        &mut self,
        to: usize,
        out: Range,
        from: usize,
        inc: Range,
        op: Option<Local>,
    ) {
        let (s, v) = (self.tx(to, out), self.rx(from, inc));
        self.s.push(Step::Recv(v.0, v.1));
        self.s.push(Step::Send(s.0, s.1, s.2));
        if let Some(o) = op {
            self.s.push(Step::Op(o));
        }
        self.s.push(Step::Next);
    }
    /// Packs `b` into the scratch at `off`.
    pub(crate) fn load(&mut self, off: usize, b: &UserBuf) -> Result<()> {
        let n = b.packed_len();
        b.read_packed(0, &mut self.s.buf[off..off + n]);
        Ok(())
    }
    /// Sets the schedule's reduction for elements of `b`'s type; returns the bytes of
    /// `b` the schedule reduces: its C layout ([`UserBuf::laid_out`]), which is what the
    /// caller must then load and write back.
    /// A non-dense buffer of a derived type of one unpadded predefined type is reduced as
    /// its packed bytes, as the blocking calls do ([`crate::coll::dense_in`]).
    pub(crate) fn reduce_with(&mut self, b: &UserBuf, op: &ReduceOp) -> Result<usize> {
        let red = reducer(b.datatype(), op)?;
        if b.packed_len() > 0 && b.dense().is_none() {
            crate::coll::packable(b, &red)?;
        }
        self.s.red = Some(red);
        Ok(laid_out_len(b))
    }
}

/// Bytes of `b` in its C layout ([`UserBuf::laid_out`]).
pub(crate) fn laid_out_len(b: &UserBuf) -> usize {
    match b.datatype().predefined() {
        Some(_) => b.count() * b.datatype().extent() as usize,
        None => b.packed_len(),
    }
}

/// Packed block lengths of `dt` elements (`lens`) in the C layout of reductions.
pub(crate) fn laid_out_lens(dt: &crate::datatype::Datatype, lens: &[usize]) -> Vec<usize> {
    match (dt.predefined(), dt.size()) {
        (Some(_), size) if size > 0 => {
            let ext = dt.extent() as usize;
            lens.iter().map(|l| l / size * ext).collect()
        }
        _ => lens.to_vec(),
    }
}

/// Offsets of consecutive blocks of these lengths, and the total.
pub(crate) fn offsets(lens: &[usize]) -> (Vec<usize>, usize) {
    let mut off = Vec::with_capacity(lens.len());
    let mut t = 0;
    for &l in lens {
        off.push(t);
        t += l;
    }
    (off, t)
}

/// The fold of `n` slots of `len` bytes at 0, len, … in rank order into the last slot.
pub(crate) fn fold_ops(n: usize, len: usize) -> Vec<Local> {
    (0..n.saturating_sub(1))
        .rev()
        .map(|r| Local::Reduce {
            src: (r * len, len),
            dst: ((n - 1) * len, len),
            src_first: true,
        })
        .collect()
}

impl<P: Port> Mpi<P> {
    /// The plan of a collective on `c` over `scratch` zeroed bytes (a spare schedule's
    /// storage when there is one).
    pub(crate) fn plan<'a>(&self, c: &'a CommData, scratch: usize) -> Plan<'a> {
        Plan::new(c, self.engine().new_sched(scratch))
    }

    pub(crate) fn start(&self, p: Plan<'_>) -> Result<ReqId> {
        self.engine().start_sched(p.s)
    }

    /// `MPI_Ibarrier`.
    pub fn ibarrier(&self, c: &CommData) -> Result<ReqId> {
        if let Some(x) = &c.inter {
            return self.inter_ibarrier(c, x);
        }
        let mut p = self.plan(c, 0);
        let (r, n) = (p.rank(), p.size());
        let mut d = 1;
        while d < n {
            p.exchange_round((r + d) % n, (0, 0), (r + n - d) % n, (0, 0), None);
            d *= 2;
        }
        self.start(p)
    }

    /// `MPI_Ibcast`.
    pub fn ibcast(&self, c: &CommData, buf: UserBuf, root: i32) -> Result<ReqId> {
        if let Some(x) = &c.inter {
            return self.inter_ibcast(c, x, buf, root);
        }
        let root = root_of(c, root)?;
        let len = buf.packed_len();
        let mut p = self.plan(c, len);
        let (r, n) = (p.rank(), p.size());
        let vr = (r + n - root) % n;
        let real = |v: usize| (v + root) % n;
        if r == root {
            p.load(0, &buf)?;
        }
        let mut mask = 1;
        while mask < n {
            if vr & mask != 0 {
                let v = p.rx(real(vr - mask), (0, len));
                p.round(vec![], vec![v], vec![]);
                break;
            }
            mask <<= 1;
        }
        let mut sends = Vec::new();
        mask >>= 1;
        while mask > 0 {
            if vr + mask < n {
                sends.push(p.tx(real(vr + mask), (0, len)));
            }
            mask >>= 1;
        }
        p.round(sends, vec![], vec![]);
        if r != root {
            p.s.out.push((buf, 0));
        }
        self.start(p)
    }

    /// `MPI_Igather(v)`: `recv` holds the root's n blocks (empty elsewhere); `send ==
    /// None` is `MPI_IN_PLACE` at the root (its block is already in `recv`).
    pub fn igatherv(
        &self,
        c: &CommData,
        send: Option<UserBuf>,
        recv: Vec<UserBuf>,
        root: i32,
    ) -> Result<ReqId> {
        if let Some(x) = &c.inter {
            return self.inter_igatherv(c, x, send, recv, root);
        }
        let root = root_of(c, root)?;
        let (r, n) = (c.rank, c.size());
        if r != root {
            let send =
                send.ok_or_else(|| Error::Buffer("MPI_IN_PLACE is for the root only".into()))?;
            let mut p = self.plan(c, send.packed_len());
            p.load(0, &send)?;
            let s = p.tx(root, (0, send.packed_len()));
            p.round(vec![s], vec![], vec![]);
            return self.start(p);
        }
        check_blocks(&recv, n)?;
        let lens: Vec<usize> = recv.iter().map(|b| b.packed_len()).collect();
        let (off, total) = offsets(&lens);
        let mut p = self.plan(c, total);
        match &send {
            Some(s) if s.packed_len() == lens[r] => p.load(off[r], s)?,
            Some(_) => return Err(mismatch()),
            None => p.load(off[r], &recv[r])?,
        }
        let recvs = (0..n)
            .filter(|&j| j != r)
            .map(|j| p.rx(j, (off[j], lens[j])))
            .collect();
        p.round(vec![], recvs, vec![]);
        p.s.out = recv.into_iter().zip(off).collect();
        self.start(p)
    }

    /// `MPI_Iscatter(v)`: `send` holds the root's n blocks (empty elsewhere); `recv ==
    /// None` is `MPI_IN_PLACE` at the root.
    pub fn iscatterv(
        &self,
        c: &CommData,
        send: Vec<UserBuf>,
        recv: Option<UserBuf>,
        root: i32,
    ) -> Result<ReqId> {
        if let Some(x) = &c.inter {
            return self.inter_iscatterv(c, x, send, recv, root);
        }
        let root = root_of(c, root)?;
        let (r, n) = (c.rank, c.size());
        if r != root {
            let recv =
                recv.ok_or_else(|| Error::Buffer("MPI_IN_PLACE is for the root only".into()))?;
            let mut p = self.plan(c, recv.packed_len());
            let v = p.rx(root, (0, recv.packed_len()));
            p.round(vec![], vec![v], vec![]);
            p.s.out.push((recv, 0));
            return self.start(p);
        }
        check_blocks(&send, n)?;
        let lens: Vec<usize> = send.iter().map(|b| b.packed_len()).collect();
        let (off, total) = offsets(&lens);
        let mut p = self.plan(c, total);
        for (j, b) in send.iter().enumerate() {
            p.load(off[j], b)?;
        }
        let sends = (0..n)
            .filter(|&j| j != r)
            .map(|j| p.tx(j, (off[j], lens[j])))
            .collect();
        p.round(sends, vec![], vec![]);
        if let Some(b) = recv {
            if b.packed_len() != lens[r] {
                return Err(mismatch());
            }
            p.s.out.push((b, off[r]));
        }
        self.start(p)
    }

    /// `MPI_Iallgather(v)`: `recv` holds the n blocks; `send == None` is `MPI_IN_PLACE`.
    pub fn iallgatherv(
        &self,
        c: &CommData,
        send: Option<UserBuf>,
        recv: Vec<UserBuf>,
    ) -> Result<ReqId> {
        if let Some(x) = &c.inter {
            return self.inter_iallgatherv(c, x, send, recv);
        }
        let (r, n) = (c.rank, c.size());
        check_blocks(&recv, n)?;
        let lens: Vec<usize> = recv.iter().map(|b| b.packed_len()).collect();
        let (off, total) = offsets(&lens);
        let mut p = self.plan(c, total);
        match &send {
            Some(s) if s.packed_len() == lens[r] => p.load(off[r], s)?,
            Some(_) => return Err(mismatch()),
            None => p.load(off[r], &recv[r])?,
        }
        let others: Vec<usize> = (0..n).filter(|&j| j != r).collect();
        let sends = others.iter().map(|&j| p.tx(j, (off[r], lens[r]))).collect();
        let recvs = others.iter().map(|&j| p.rx(j, (off[j], lens[j]))).collect();
        p.round(sends, recvs, vec![]);
        p.s.out = recv.into_iter().zip(off).collect();
        self.start(p)
    }

    /// `MPI_Ialltoall(v,w)`: block j of `send` goes to member j, block j of `recv` comes
    /// from it; `send == None` is `MPI_IN_PLACE` (the blocks to send are `recv`'s).
    pub fn ialltoallw(
        &self,
        c: &CommData,
        send: Option<Vec<UserBuf>>,
        recv: Vec<UserBuf>,
    ) -> Result<ReqId> {
        if let Some(x) = &c.inter {
            return self.inter_ialltoallw(c, x, send, recv);
        }
        let (r, n) = (c.rank, c.size());
        check_blocks(&recv, n)?;
        let rlens: Vec<usize> = recv.iter().map(|b| b.packed_len()).collect();
        let slens: Vec<usize> = match &send {
            Some(s) => {
                check_blocks(s, n)?;
                s.iter().map(|b| b.packed_len()).collect()
            }
            None => rlens.clone(),
        };
        if slens[r] != rlens[r] {
            return Err(mismatch());
        }
        let (soff, stotal) = offsets(&slens);
        let (roff, rtotal) = offsets(&rlens);
        let mut p = self.plan(c, stotal + rtotal);
        for j in 0..n {
            match &send {
                Some(s) => p.load(soff[j], &s[j])?,
                None => p.load(soff[j], &recv[j])?,
            }
        }
        let others: Vec<usize> = (0..n).filter(|&j| j != r).collect();
        let sends = others
            .iter()
            .map(|&j| p.tx(j, (soff[j], slens[j])))
            .collect();
        let recvs = others
            .iter()
            .map(|&j| p.rx(j, (stotal + roff[j], rlens[j])))
            .collect();
        let own = Local::Copy {
            src: (soff[r], slens[r]),
            dst: (stotal + roff[r], rlens[r]),
        };
        p.round(sends, recvs, vec![own]);
        p.s.out = recv
            .into_iter()
            .zip(roff.into_iter().map(|o| stotal + o))
            .collect();
        self.start(p)
    }

    /// `MPI_Ireduce`: `send == None` is `MPI_IN_PLACE` (root); `recv` matters at the root.
    pub fn ireduce(
        &self,
        c: &CommData,
        send: Option<UserBuf>,
        recv: Option<UserBuf>,
        op: &ReduceOp,
        root: i32,
    ) -> Result<ReqId> {
        if let Some(x) = &c.inter {
            return self.inter_ireduce(c, x, send, recv, op, root);
        }
        let root = root_of(c, root)?;
        let (r, n) = (c.rank, c.size());
        if r != root {
            let send =
                send.ok_or_else(|| Error::Buffer("MPI_IN_PLACE is for the root only".into()))?;
            let mut p = self.plan(c, laid_out_len(&send));
            p.reduce_with(&send, op)?;
            let send = send.laid_out();
            p.load(0, &send)?;
            let s = p.tx(root, (0, send.packed_len()));
            p.round(vec![s], vec![], vec![]);
            return self.start(p);
        }
        let recv = recv.ok_or_else(|| Error::Buffer("the root needs a receive buffer".into()))?;
        let mut p = self.plan(c, 0);
        let len = p.reduce_with(send.as_ref().unwrap_or(&recv), op)?;
        let (send, recv) = (send.map(UserBuf::laid_out), recv.laid_out());
        if recv.packed_len() != len {
            return Err(mismatch());
        }
        p.s.set_scratch(n * len);
        p.load(r * len, send.as_ref().unwrap_or(&recv))?;
        let recvs = (0..n)
            .filter(|&j| j != r)
            .map(|j| p.rx(j, (j * len, len)))
            .collect();
        p.round(vec![], recvs, fold_ops(n, len));
        p.s.out.push((recv, (n - 1) * len));
        self.start(p)
    }

    /// `MPI_Iallreduce`: `send == None` is `MPI_IN_PLACE`.
    pub fn iallreduce(
        &self,
        c: &CommData,
        send: Option<UserBuf>,
        recv: UserBuf,
        op: &ReduceOp,
    ) -> Result<ReqId> {
        if let Some(x) = &c.inter {
            return self.inter_iallreduce(c, x, send, recv, op);
        }
        let (r, n) = (c.rank, c.size());
        let mut p = self.plan(c, 0);
        let len = p.reduce_with(send.as_ref().unwrap_or(&recv), op)?;
        let (send, recv) = (send.map(UserBuf::laid_out), recv.laid_out());
        if recv.packed_len() != len {
            return Err(mismatch());
        }
        if n.is_power_of_two() {
            // Recursive doubling: after round k the accumulator holds the ordered
            // reduction of a block of 2^(k+1) consecutive ranks.
            p.s.set_scratch(2 * len);
            p.load(0, send.as_ref().unwrap_or(&recv))?;
            let mut d = 1;
            while d < n {
                let partner = r ^ d;
                let op = Local::Reduce {
                    src: (len, len),
                    dst: (0, len),
                    src_first: partner < r,
                };
                p.exchange_round(partner, (0, len), partner, (len, len), Some(op));
                d *= 2;
            }
            p.s.out.push((recv, 0));
        } else {
            let input = send.as_ref().unwrap_or(&recv).to_packed()?;
            reduce_then_spread(&mut p, &input, recv, &vec![(0, len); n]);
        }
        self.start(p)
    }

    /// `MPI_Ireduce_scatter(_block)`: `input` is the whole vector (the send buffer, or the
    /// receive buffer for `MPI_IN_PLACE`), `lens[j]` the packed bytes member j gets, `out`
    /// this member's block.
    pub fn ireduce_scatter(
        &self,
        c: &CommData,
        input: UserBuf,
        out: UserBuf,
        lens: &[usize],
        op: &ReduceOp,
    ) -> Result<ReqId> {
        if let Some(x) = &c.inter {
            return self.inter_ireduce_scatter(c, x, input, out, lens, op);
        }
        let (r, n) = (c.rank, c.size());
        if lens.len() != n || out.packed_len() != lens[r] {
            return Err(mismatch());
        }
        let lens = &laid_out_lens(input.datatype(), lens);
        let (off, total) = offsets(lens);
        let mut p = self.plan(c, 0);
        let len = p.reduce_with(&input, op)?;
        let (input, out) = (input.laid_out(), out.laid_out());
        if len != total {
            return Err(mismatch());
        }
        let blocks: Vec<Range> = off.into_iter().zip(lens.iter().copied()).collect();
        let input = input.to_packed()?;
        reduce_then_spread(&mut p, &input, out, &blocks);
        self.start(p)
    }

    /// `MPI_Iscan` / `MPI_Iexscan` (`exclusive`; rank 0's result is then left alone);
    /// `send == None` is `MPI_IN_PLACE`.
    pub fn iscan(
        &self,
        c: &CommData,
        send: Option<UserBuf>,
        recv: UserBuf,
        op: &ReduceOp,
        exclusive: bool,
    ) -> Result<ReqId> {
        c.intra(if exclusive {
            "MPI_Iexscan"
        } else {
            "MPI_Iscan"
        })?;
        let (r, n) = (c.rank, c.size());
        let mut p = self.plan(c, 0);
        let len = p.reduce_with(send.as_ref().unwrap_or(&recv), op)?;
        let (send, recv) = (send.map(UserBuf::laid_out), recv.laid_out());
        if recv.packed_len() != len {
            return Err(mismatch());
        }
        // Slots: this member's value (becomes the running prefix), the prefix that came,
        // the exclusive result.
        p.s.set_scratch(3 * len);
        p.load(0, send.as_ref().unwrap_or(&recv))?;
        if r > 0 {
            let v = p.rx(r - 1, (len, len));
            let mut ops = vec![];
            if exclusive {
                ops.push(Local::Copy {
                    src: (len, len),
                    dst: (2 * len, len),
                });
            }
            ops.push(Local::Reduce {
                src: (len, len),
                dst: (0, len),
                src_first: true,
            });
            p.round(vec![], vec![v], ops);
        }
        if r + 1 < n {
            let s = p.tx(r + 1, (0, len));
            p.round(vec![s], vec![], vec![]);
        }
        match (exclusive, r) {
            (false, _) => p.s.out.push((recv, 0)),
            (true, 0) => {}
            (true, _) => p.s.out.push((recv, 2 * len)),
        }
        self.start(p)
    }
}

/// Member 0 receives every member's `input` (packed, `len` bytes), folds them in rank
/// order, then sends `blocks[j]` of the result to member j; `out` gets this member's block.
fn reduce_then_spread(p: &mut Plan<'_>, input: &[u8], out: UserBuf, blocks: &[Range]) {
    let (r, n, len) = (p.rank(), p.size(), input.len());
    if r == 0 {
        p.s.set_scratch(n * len);
        p.s.buf[..len].copy_from_slice(input);
        let recvs = (1..n).map(|j| p.rx(j, (j * len, len))).collect();
        p.round(vec![], recvs, fold_ops(n, len));
        let last = (n - 1) * len;
        let sends = (1..n)
            .map(|j| p.tx(j, (last + blocks[j].0, blocks[j].1)))
            .collect();
        p.round(sends, vec![], vec![]);
        p.s.out.push((out, last + blocks[0].0));
    } else {
        p.s.set_scratch(len.max(blocks[r].1));
        p.s.buf[..len].copy_from_slice(input);
        let s = p.tx(0, (0, len));
        p.round(vec![s], vec![], vec![]);
        let v = p.rx(0, (0, blocks[r].1));
        p.round(vec![], vec![v], vec![]);
        p.s.out.push((out, 0));
    }
}

pub(crate) fn check_blocks(b: &[UserBuf], n: usize) -> Result<()> {
    if b.len() != n {
        return Err(Error::Intern(format!("{} blocks for {n} members", b.len())));
    }
    Ok(())
}

pub(crate) fn mismatch() -> Error {
    Error::Arg("collective arguments do not match: send and receive sizes differ".into())
}

/// Neighbour ranks in order (`None`: `MPI_PROC_NULL`).
pub type Neighbours = Vec<Option<usize>>;

/// A communicator's neighbours for the neighbourhood collectives (MPI-3.1 §7.6): (sources,
/// destinations) in the standard's order — for a Cartesian grid, per dimension the
/// neighbour at −1 then at +1 (`None`: beyond a non-periodic edge, `MPI_PROC_NULL`,
/// whose block is neither sent nor received); for a distributed graph, its lists.
pub fn neighbours(c: &CommData) -> Result<(Neighbours, Neighbours)> {
    use crate::comm::Topology;
    let some = |r: i32| usize::try_from(r).ok();
    match &c.topo {
        Some(Topology::Cart { dims, periods }) => {
            let mut v = Vec::with_capacity(2 * dims.len());
            for d in 0..dims.len() {
                let (lo, hi) = crate::topo::cart_shift(dims, periods, c.rank as i32, d, 1);
                v.push(some(lo));
                v.push(some(hi));
            }
            Ok((v.clone(), v))
        }
        Some(Topology::Graph { index, edges }) => {
            let r = c.rank;
            let lo = if r == 0 { 0 } else { index[r - 1] as usize };
            let v: Neighbours = edges[lo..index[r] as usize]
                .iter()
                .map(|&e| some(e))
                .collect();
            Ok((v.clone(), v))
        }
        Some(Topology::DistGraph { sources, dests, .. }) => Ok((
            sources.iter().map(|s| some(s.0)).collect(),
            dests.iter().map(|d| some(d.0)).collect(),
        )),
        None => Err(Error::Topology(
            "neighbourhood collectives need a Cartesian or graph topology".into(),
        )),
    }
}

impl<P: Port> Mpi<P> {
    /// A neighbourhood exchange (`MPI_(I)neighbor_allgather(v)` / `alltoall(v,w)`): block
    /// i of `send` goes to destination i (the same block to all for the allgathers: pass
    /// it once per destination), block i of `recv` comes from source i.
    ///
    /// # Collective Operation
    /// Every member of `c` calls it; one round, every pair direct.
    pub fn ineighbor(&self, c: &CommData, send: Vec<UserBuf>, recv: Vec<UserBuf>) -> Result<ReqId> {
        let (srcs, dsts) = neighbours(c)?;
        if send.len() != dsts.len() || recv.len() != srcs.len() {
            return Err(Error::Intern(
                "neighbourhood blocks do not match the topology".into(),
            ));
        }
        let slens: Vec<usize> = send.iter().map(|b| b.packed_len()).collect();
        let rlens: Vec<usize> = recv.iter().map(|b| b.packed_len()).collect();
        let (soff, stotal) = offsets(&slens);
        let (roff, rtotal) = offsets(&rlens);
        let mut p = self.plan(c, stotal + rtotal);
        for (j, b) in send.iter().enumerate() {
            p.load(soff[j], b)?;
        }
        // Cartesian: the block sent in one direction of a dimension lands in the slot of
        // the opposite one. In a periodic dimension of 1 or 2 processes both directions
        // are one process, so each direction has a tag of its own (block j's, received
        // as j ^ 1); other topologies pair blocks with a neighbour in list order.
        let cart = matches!(c.topo, Some(crate::comm::Topology::Cart { .. }));
        let tag = |j: usize| match cart {
            true => p.tag - NBC_TAGS as i32 * (1 + j as i32),
            false => p.tag,
        };
        let sends = dsts
            .iter()
            .enumerate()
            .filter_map(|(j, d)| d.map(|d| p.tx_tagged(d, (soff[j], slens[j]), tag(j))))
            .collect();
        let recvs = srcs
            .iter()
            .enumerate()
            .filter_map(|(j, s)| {
                s.map(|s| p.rx_tagged(s, (stotal + roff[j], rlens[j]), tag(j ^ 1)))
            })
            .collect();
        p.round(sends, recvs, vec![]);
        // Blocks from MPI_PROC_NULL neighbours are left as they are.
        p.s.out = recv
            .into_iter()
            .zip(roff)
            .zip(&srcs)
            .filter(|(_, s)| s.is_some())
            .map(|((b, o), _)| (b, stotal + o))
            .collect();
        self.start(p)
    }
}
