//! Communicators (MPI-3.1 chapter 6) and the library object [`Mpi`] that owns the
//! engine. Both the Rust API ([`crate::api`]) and the C ABI call the methods here, so
//! argument checks and semantics are written once.
//!
//! A communicator is a group plus a context id, agreed on by its members among the ids
//! free at all of them ([`crate::ctxid`]) and given back when it is freed. Ids are even;
//! `id + 1` is the communicator's collective context, so collective traffic never matches
//! user receives (§6.1.2).

use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use skifch::{Driver, Job, Port};

use crate::ctxid::{Lease, Parties, Pool};
use crate::engine::{
    Engine, Envelope, Mode, ReqId, Status, ANY_SOURCE, ANY_TAG, PROC_NULL, TAG_UB,
};
use crate::error::{Error, Result};
use crate::group::{Compare, Group};
use crate::mem::UserBuf;

/// The channel port of mpi-lite (the port table: [`skifch::ports`]).
pub const MPI_PORT: u32 = skifch::ports::MPI;

/// `MPI_UNDEFINED`.
pub const UNDEFINED: i32 = -32766;

/// A virtual topology attached to a communicator (§7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Topology {
    /// `MPI_Cart_create`: row-major process grid.
    Cart {
        /// Extent of each dimension.
        dims: Vec<i32>,
        /// Periodicity of each dimension.
        periods: Vec<bool>,
    },
    /// `MPI_Graph_create`: node k's neighbours are `edges[index[k-1]..index[k]]`.
    Graph {
        /// Cumulative degrees (MPI-3.1 §7.5.3).
        index: Vec<i32>,
        /// Neighbour lists, concatenated.
        edges: Vec<i32>,
    },
    /// `MPI_Dist_graph_create_adjacent`.
    DistGraph {
        /// Ranks this one receives from, with weights.
        sources: Vec<(i32, i32)>,
        /// Ranks this one sends to, with weights.
        dests: Vec<(i32, i32)>,
        /// Whether weights were given.
        weighted: bool,
    },
}

/// What a communicator is: context, group, this process's rank in it, topology.
#[derive(Debug)]
pub struct CommData {
    /// Point-to-point context id (even); collectives use `ctx + 1`. Atomic for
    /// `MPI_Comm_idup`, whose communicator exists before its members agree on it.
    ctx: AtomicU16,
    /// The context slots this communicator holds (none: the predefined ones); shared by
    /// the communicators made on the same contexts (topologies, an intercommunicator's
    /// local one) and given back when the last goes ([`crate::ctxid`]).
    lease: OnceLock<Arc<Lease>>,
    /// The members.
    pub group: Group,
    /// This process's rank.
    pub rank: usize,
    /// Virtual topology, if any.
    pub topo: Option<Topology>,
    /// Collective calls made on this communicator (their tags, see `skifch::coll::Transport`).
    pub coll_seq: std::sync::atomic::AtomicU32,
    /// An intercommunicator's remote group and local communicator (`None`: an
    /// intracommunicator; see [`crate::inter`]).
    pub inter: Option<Arc<crate::inter::Inter>>,
}

/// The context of an `MPI_Comm_idup` communicator until its members agree.
const PENDING: u16 = u16::MAX;

impl CommData {
    /// A communicator description.
    pub fn new(ctx: u16, group: Group, rank: usize, topo: Option<Topology>) -> Self {
        CommData {
            ctx: AtomicU16::new(ctx),
            lease: OnceLock::new(),
            group,
            rank,
            topo,
            coll_seq: Default::default(),
            inter: None,
        }
    }

    /// On the contexts of `lease` (its first).
    pub(crate) fn leased(
        lease: &Arc<Lease>,
        group: Group,
        rank: usize,
        topo: Option<Topology>,
    ) -> Self {
        let d = CommData::new(lease.ctx(), group, rank, topo);
        let _ = d.lease.set(lease.clone());
        d
    }

    /// The same, `slots` context slots further (an intercommunicator's local
    /// communicator, on the second slot of its lease).
    pub(crate) fn shifted(self, slots: u16) -> Self {
        let ctx = self.ctx() + 2 * slots;
        self.ctx.store(ctx, Ordering::Relaxed);
        self
    }

    /// A communicator whose context comes later ([`CommData::settle`]): `MPI_Comm_idup`'s.
    pub(crate) fn pending(group: Group, rank: usize, topo: Option<Topology>) -> Self {
        CommData::new(PENDING, group, rank, topo)
    }

    /// Gives a pending communicator its contexts (once its agreement is complete; the
    /// request's completion orders this before the program's use).
    pub(crate) fn settle(&self, lease: Lease) {
        let l = Arc::new(lease);
        self.ctx.store(l.ctx(), Ordering::Release);
        if let Some(x) = &self.inter {
            // An intercommunicator's local communicator: the second slot.
            x.local.ctx.store(l.ctx() + 2, Ordering::Release);
            let _ = x.local.lease.set(l.clone());
        }
        let _ = self.lease.set(l);
    }

    /// The same communicator with topology `topo` (sharing its contexts).
    pub(crate) fn with_topo(&self, topo: Option<Topology>) -> Self {
        let d = CommData::new(self.ctx(), self.group.clone(), self.rank, topo);
        if let Some(l) = self.lease.get() {
            let _ = d.lease.set(l.clone());
        }
        d
    }

    /// The context slots this communicator holds (`None`: a predefined one).
    pub(crate) fn lease(&self) -> Option<&Arc<Lease>> {
        self.lease.get()
    }

    /// The point-to-point context id.
    #[inline(always)] // every message's envelope
    pub fn ctx(&self) -> u16 {
        self.ctx.load(Ordering::Relaxed)
    }

    /// Number of members.
    pub fn size(&self) -> usize {
        self.group.size()
    }
    /// The envelope of a message from member `src` with `tag` on the collective context.
    pub fn coll_env(&self, src: i32, tag: i32) -> Envelope {
        Envelope {
            ctx: self.coll_ctx(),
            src,
            tag,
        }
    }

    /// The collective context id.
    pub fn coll_ctx(&self) -> u16 {
        self.ctx() + 1
    }
    /// World rank of member `r` (checked by callers).
    pub fn world_of(&self, r: usize) -> u32 {
        self.group.ranks()[r]
    }
}

/// The library: one engine on the job's MPI channel, the predefined communicators and
/// process-wide state. One per process (for C: created by `MPI_Init`).
///
/// `Sync`: made by [`Mpi::new`], one thread at a time may call it (a call entered while
/// another thread is inside one fails at once, `MPI_THREAD_SERIALIZED`); made by
/// [`Mpi::new_multiple`], threads call it concurrently (`MPI_THREAD_MULTIPLE`, see
/// `engine::threads`).
pub struct Mpi<P: Port> {
    eng: Engine<P>,
    /// The context ids this process has free ([`crate::ctxid`]).
    pub(crate) ctxs: Arc<Pool>,
    world: Arc<CommData>,
    selfc: Arc<CommData>,
    start: Instant,
    bsend_cap: AtomicUsize,
    /// Whether this rank's one-sided operations left plain stores no full barrier has
    /// followed yet (shared by its windows; `win` module `direct`, "the flush's barrier").
    pub(crate) rma_stores: Arc<std::sync::atomic::AtomicU8>,
}

/// Bytes of attached buffer each `MPI_Bsend` needs beyond its data (`MPI_BSEND_OVERHEAD`).
pub const BSEND_OVERHEAD: usize = 96;

impl<P: Port> Mpi<P> {
    /// Joins MPI on `job`: opens the MPI channel (port 1). One thread at a time may call
    /// the library (`MPI_THREAD_SERIALIZED`).
    pub fn new<D: Driver<Port = P>>(job: &Job<D>) -> Result<Self> {
        Self::open(job, false)
    }

    /// As [`Mpi::new`], for threads calling concurrently (`MPI_THREAD_MULTIPLE`).
    pub fn new_multiple<D: Driver<Port = P>>(job: &Job<D>) -> Result<Self> {
        Self::open(job, true)
    }

    fn open<D: Driver<Port = P>>(job: &Job<D>, multiple: bool) -> Result<Self> {
        let (me, n) = (job.rank(), job.size());
        let eng = Engine::open(job, MPI_PORT, multiple)?;
        Ok(Mpi {
            eng,
            ctxs: Pool::new(),
            world: Arc::new(CommData::new(0, Group::world(n), me as usize, None)),
            selfc: Arc::new(CommData::new(2, Group::from_ranks(vec![me]), 0, None)),
            start: Instant::now(),
            bsend_cap: AtomicUsize::new(0),
            rma_stores: Arc::new(crate::win::stores_init(multiple)),
        })
    }

    /// The engine (for the C ABI's request calls).
    pub fn engine(&self) -> &Engine<P> {
        &self.eng
    }

    /// `MPI_COMM_WORLD`.
    pub fn world_data(&self) -> &Arc<CommData> {
        &self.world
    }
    /// `MPI_COMM_SELF`.
    pub fn self_data(&self) -> &Arc<CommData> {
        &self.selfc
    }

    /// `MPI_Wtime`: seconds since `MPI_Init` (a monotonic clock).
    pub fn wtime(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// The eager limit in bytes.
    pub fn eager_limit(&self) -> usize {
        self.eng.eager_limit()
    }

    fn check_peer(c: &CommData, r: i32, any: bool) -> Result<()> {
        let n = c.peers().size();
        if r == PROC_NULL || (any && r == ANY_SOURCE) || (0..n as i32).contains(&r) {
            Ok(())
        } else {
            Err(Error::Rank(format!(
                "rank {r} is not in a {}group of {n} processes",
                if c.inter.is_some() {
                    "remote "
                } else {
                    "communicator's "
                }
            )))
        }
    }

    fn check_tag(tag: i32, any: bool) -> Result<()> {
        if (0..=TAG_UB).contains(&tag) || (any && tag == ANY_TAG) {
            Ok(())
        } else {
            Err(Error::Tag(format!("tag {tag} is outside 0..={TAG_UB}")))
        }
    }

    /// A send's envelope and destination world rank, checked and resolved once from the
    /// communicator and the caller's arguments (MPI-3.1 §3.2.3); `None` for
    /// `MPI_PROC_NULL`. Errors name no call: the C ABI's error path adds its name.
    #[inline(always)] // on every send's and receive's path
    pub fn route(c: &CommData, dst: i32, tag: i32) -> Result<Option<(Envelope, u32)>> {
        Self::check_peer(c, dst, false)?;
        Self::check_tag(tag, false)?;
        if dst == PROC_NULL {
            return Ok(None);
        }
        let env = Envelope {
            ctx: c.ctx(),
            src: c.rank as i32,
            tag,
        };
        Ok(Some((env, c.peers().ranks()[dst as usize])))
    }

    /// A receive's envelope (source may be `ANY_SOURCE` or `MPI_PROC_NULL`, tag
    /// `ANY_TAG`), checked once.
    #[inline(always)] // on every send's and receive's path
    pub fn want(c: &CommData, src: i32, tag: i32) -> Result<Envelope> {
        Self::check_peer(c, src, true)?;
        Self::check_tag(tag, true)?;
        Ok(Envelope {
            ctx: c.ctx(),
            src,
            tag,
        })
    }

    /// Starts a send (`MPI_Isend`, `MPI_Issend`).
    pub fn isend(
        &self,
        c: &CommData,
        buf: UserBuf,
        dst: i32,
        tag: i32,
        mode: Mode,
    ) -> Result<ReqId> {
        let to = Self::route(c, dst, tag)?;
        let e = &self.eng;
        match to {
            None => e.done_request(),
            Some((env, w)) => e.isend(env, w, buf, mode, 0),
        }
    }

    /// `MPI_Send` (and `MPI_Rsend`): blocking standard send.
    pub fn send(&self, c: &CommData, buf: UserBuf, dst: i32, tag: i32) -> Result<()> {
        match Self::route(c, dst, tag)? {
            None => Ok(()),
            Some((env, w)) => self.eng.send(env, w, buf),
        }
    }

    /// `MPI_Send` of contiguous bytes (the C ABI's predefined types): `false` when the
    /// message is above the eager limit (nothing sent: use [`Mpi::send`]).
    #[inline(always)] // on MPI_Send's and MPI_Isend's paths
    pub fn try_send_bytes(&self, c: &CommData, data: &[u8], dst: i32, tag: i32) -> Result<bool> {
        match Self::route(c, dst, tag)? {
            None => Ok(true),
            Some((env, w)) => self.eng.try_send_eager(env, w, data),
        }
    }

    /// `MPI_Recv` into contiguous bytes when it can take the next message straight from
    /// the channel ([`Engine::try_recv_bytes`]); `None`: nothing received, use
    /// [`Mpi::recv`].
    #[inline]
    pub fn try_recv_bytes(
        &self,
        c: &CommData,
        buf: &mut [u8],
        src: i32,
        tag: i32,
    ) -> Result<Option<Status>> {
        let env = Self::want(c, src, tag)?;
        if src == PROC_NULL {
            return Ok(Some(Status::proc_null()));
        }
        self.eng.try_recv_bytes(env, buf)
    }

    /// `MPI_Recv`: blocking receive.
    pub fn recv(&self, c: &CommData, buf: UserBuf, src: i32, tag: i32) -> Result<Status> {
        let env = Self::want(c, src, tag)?;
        if src == PROC_NULL {
            return Ok(Status::proc_null());
        }
        self.eng.recv(env, buf)
    }

    /// `MPI_Ibsend`: copies the data now (checked against the attached buffer), so
    /// the request completes at once.
    pub fn ibsend(&self, c: &CommData, buf: &UserBuf, dst: i32, tag: i32) -> Result<ReqId> {
        let to = Self::route(c, dst, tag)?;
        let e = &self.eng;
        let Some((env, w)) = to else {
            return e.done_request();
        };
        let need = buf.packed_len() + BSEND_OVERHEAD;
        let (used, cap) = (e.bsend_used(), self.bsend_cap.load(Ordering::Relaxed));
        if used + need > cap {
            return Err(Error::Buffer(format!(
                "MPI_Bsend of {} bytes needs {need} bytes of attached buffer; {} of {cap} are free \
                 (MPI_Buffer_attach a larger one)",
                buf.packed_len(),
                cap - used
            )));
        }
        let copy = UserBuf::owned(buf.to_packed()?);
        // The copy goes on its own (its space is given back when it is out; a detach waits
        // for that): the program's request is complete at once — a buffered send completes
        // locally, whatever the receiver does (§3.4). Waiting for the copy instead made a
        // rendezvous-sized MPI_Bsend wait for its receive.
        let id = e.isend(env, w, copy, Mode::Standard, need)?;
        e.request_free(id)?;
        e.done_request()
    }

    /// `MPI_Buffer_attach` (size only: Bsend copies into memory of its own, accounted
    /// against the attached size).
    pub fn buffer_attach(&self, size: usize) -> Result<()> {
        if self.bsend_cap.load(Ordering::Relaxed) > 0 {
            return Err(Error::Buffer(
                "MPI_Buffer_attach: a buffer is already attached".into(),
            ));
        }
        self.bsend_cap.store(size, Ordering::Relaxed);
        Ok(())
    }

    /// `MPI_Buffer_detach`: waits until the buffered sends are out; returns the size.
    pub fn buffer_detach(&self) -> Result<usize> {
        self.eng.wait_until(|e| e.bsend_used() == 0)?;
        Ok(self.bsend_cap.swap(0, Ordering::Relaxed))
    }

    /// Posts a receive (`MPI_Irecv`).
    #[inline(always)]
    pub fn irecv(&self, c: &CommData, buf: UserBuf, src: i32, tag: i32) -> Result<ReqId> {
        let env = Self::want(c, src, tag)?;
        self.eng.irecv(env, buf)
    }

    /// `MPI_Sendrecv`: posts the receive, sends, waits for both.
    #[allow(clippy::too_many_arguments)]
    pub fn sendrecv(
        &self,
        c: &CommData,
        send: UserBuf,
        dst: i32,
        stag: i32,
        recv: UserBuf,
        src: i32,
        rtag: i32,
    ) -> Result<Status> {
        let (to, from) = (Self::route(c, dst, stag)?, Self::want(c, src, rtag)?);
        if let (Some((env, w)), false) = (to, src == PROC_NULL) {
            return self.eng.sendrecv(env, w, send, from, recv);
        }
        let r = self.irecv(c, recv, src, rtag)?;
        let s = self.isend(c, send, dst, stag, Mode::Standard);
        crate::engine::finish_pair(&mut &self.eng, r, s)
    }

    /// `MPI_Wait`.
    pub fn wait(&self, id: ReqId) -> Result<Status> {
        self.eng.wait(id)
    }

    /// `MPI_Test`.
    pub fn test(&self, id: ReqId) -> Result<Option<Status>> {
        self.eng.test_progress(id)
    }

    /// `MPI_Probe`.
    pub fn probe(&self, c: &CommData, src: i32, tag: i32) -> Result<Status> {
        let env = Self::want(c, src, tag)?;
        self.eng.probe(env)
    }

    /// `MPI_Iprobe`.
    pub fn iprobe(&self, c: &CommData, src: i32, tag: i32) -> Result<Option<Status>> {
        let env = Self::want(c, src, tag)?;
        self.eng.iprobe(env)
    }

    // ---- communicator management (collective over the parent) ----

    /// Exchanges `mine` (same length everywhere) among the members of `c` on its
    /// collective context; element `r` of the result is rank `r`'s. Used to agree on
    /// split colors.
    pub(crate) fn exchange(&self, c: &CommData, tag: i32, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let e = &self.eng;
        let mut sends = Vec::new();
        for r in (0..c.size()).filter(|&r| r != c.rank) {
            let b = UserBuf::owned(mine.to_vec());
            let env = c.coll_env(c.rank as i32, tag);
            sends.push(e.isend(env, c.world_of(r), b, Mode::Standard, 0)?);
        }
        let mut out = Vec::with_capacity(c.size());
        for r in 0..c.size() {
            if r == c.rank {
                out.push(mine.to_vec());
            } else {
                out.push(e.coll_recv(c.coll_env(r as i32, tag), mine.len())?);
            }
        }
        for s in sends {
            e.wait(s)?;
        }
        Ok(out)
    }

    /// `MPI_Comm_dup`.
    ///
    /// # Collective Operation
    /// Every member of `c` calls it; it returns once all have (context agreement).
    pub fn dup(&self, c: &CommData) -> Result<Arc<CommData>> {
        if let Some(x) = &c.inter {
            return self.inter_dup(c, x);
        }
        let l = self.agree(c)?;
        Ok(Arc::new(CommData::leased(
            &l,
            c.group.clone(),
            c.rank,
            c.topo.clone(),
        )))
    }

    /// `MPI_Comm_idup` (MPI-3.1 §6.4.2): [`Mpi::dup`] whose context agreement runs in
    /// the engine; the communicator must not be used before the request completes.
    ///
    /// # Collective Operation
    /// Every member of `c` calls it, in the order of its other collectives on `c`;
    /// nonblocking.
    pub fn idup(&self, c: &CommData) -> Result<(Arc<CommData>, ReqId)> {
        if let Some(x) = &c.inter {
            return self.inter_idup(c, x);
        }
        let d = Arc::new(CommData::pending(c.group.clone(), c.rank, c.topo.clone()));
        let fill = d.clone();
        let deliver = Box::new(move |l| fill.settle(l));
        let req = self.start_agreement(self.plan(c, 0), Parties::all(c), 1, None, deliver)?;
        Ok((d, req))
    }

    /// `MPI_Comm_split`: members with the same `color` form a communicator, ordered by
    /// `key` then by rank in `c`; `color == UNDEFINED` gets `None`.
    ///
    /// # Collective Operation
    /// Every member of `c` calls it.
    pub fn split(&self, c: &CommData, color: i32, key: i32) -> Result<Option<Arc<CommData>>> {
        if color < 0 && color != UNDEFINED {
            return Err(Error::Arg(format!(
                "MPI_Comm_split: color {color} is negative (and not MPI_UNDEFINED)"
            )));
        }
        if let Some(x) = &c.inter {
            return self.inter_split(c, x, color, key);
        }
        let mut mine = color.to_le_bytes().to_vec();
        mine.extend_from_slice(&key.to_le_bytes());
        let all = self.exchange(c, -11, &mine)?;
        let l = self.agree(c)?;
        if color == UNDEFINED {
            return Ok(None);
        }
        let mut members: Vec<(i32, usize)> = all
            .iter()
            .enumerate()
            .filter_map(|(r, b)| {
                let col = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                let k = i32::from_le_bytes([b[4], b[5], b[6], b[7]]);
                (col == color).then_some((k, r))
            })
            .collect();
        members.sort();
        let ranks: Vec<u32> = members.iter().map(|&(_, r)| c.world_of(r)).collect();
        let rank = members
            .iter()
            .position(|&(_, r)| r == c.rank)
            .ok_or_else(|| Error::Intern("split lost this process".into()))?;
        Ok(Some(Arc::new(CommData::leased(
            &l,
            Group::from_ranks(ranks),
            rank,
            None,
        ))))
    }

    /// `MPI_Comm_create`: the members of `g` (a subgroup of `c`'s) get a communicator,
    /// the others `None`.
    ///
    /// # Collective Operation
    /// Every member of `c` calls it with the same group.
    pub fn create(&self, c: &CommData, g: &Group) -> Result<Option<Arc<CommData>>> {
        if let Some(x) = &c.inter {
            return self.inter_create_sub(c, x, g);
        }
        if g.ranks().iter().any(|w| !c.group.ranks().contains(w)) {
            return Err(Error::Group(
                "MPI_Comm_create: the group is not a subset of the communicator's".into(),
            ));
        }
        let l = self.agree(c)?;
        let me = c.world_of(c.rank);
        Ok(g.rank_of(me)
            .map(|rank| Arc::new(CommData::leased(&l, g.clone(), rank, None))))
    }

    /// `MPI_Comm_create_group` (MPI-3.1 §6.4.2): like [`Mpi::create`], but collective
    /// over the members of `g` only; `tag` tells apart concurrent calls on overlapping
    /// groups. Non-members get `None`.
    ///
    /// # Collective Operation
    /// Every member of `g` calls it with the same group and tag.
    pub fn create_group(&self, c: &CommData, g: &Group, tag: i32) -> Result<Option<Arc<CommData>>> {
        c.intra("MPI_Comm_create_group")?;
        if g.ranks().iter().any(|w| !c.group.ranks().contains(w)) {
            return Err(Error::Group(
                "MPI_Comm_create_group: the group is not a subset of the communicator's".into(),
            ));
        }
        let me = c.world_of(c.rank);
        let Some(rank) = g.rank_of(me) else {
            return Ok(None);
        };
        // The agreement runs among the members only, on `c`'s collective context with a
        // tag of its own (below those of every other call) and their ranks in `c`.
        let members: Vec<usize> = g
            .ranks()
            .iter()
            .filter_map(|&w| c.group.rank_of(w))
            .collect();
        let l = self.agree_among(c, members, -1_000_000 - (tag & 0x00ff_ffff))?;
        Ok(Some(Arc::new(CommData::leased(&l, g.clone(), rank, None))))
    }

    /// `MPI_Comm_compare`.
    pub fn compare(a: &CommData, b: &CommData) -> Compare {
        if a.ctx() == b.ctx() && a.group == b.group && a.peers() == b.peers() {
            return Compare::Ident;
        }
        if a.inter.is_some() != b.inter.is_some() {
            return Compare::Unequal;
        }
        // Intercommunicators: the weaker of the two groups' results (§6.4.1).
        match a.group.compare(&b.group).max(a.peers().compare(b.peers())) {
            Compare::Ident => Compare::Congruent,
            other => other,
        }
    }

    /// A barrier over `c` (dissemination, ⌈log₂ n⌉ rounds) on its collective context.
    ///
    /// # Collective Operation
    /// Every member calls it; it returns once all have entered.
    pub fn barrier(&self, c: &CommData) -> Result<()> {
        if let Some(x) = &c.inter {
            return self.inter_barrier(c, x);
        }
        let n = c.size();
        let mut d = 1;
        let mut round = 0;
        while d < n {
            // (r ± d) mod n without a division (d < n).
            let to = if c.rank + d >= n {
                c.rank + d - n
            } else {
                c.rank + d
            };
            let from = if c.rank >= d {
                c.rank - d
            } else {
                c.rank + n - d
            };
            // Negative tags: never those of the collective algorithms (`next_tag`).
            let tag = -20 - round;
            let (out, inc) = (c.coll_env(c.rank as i32, tag), c.coll_env(from as i32, tag));
            let e = &self.eng;
            // An empty message always goes eagerly; the receive directly when it can.
            e.try_send_eager(out, c.world_of(to), &[])?;
            if e.try_recv_bytes(inc, &mut [])?.is_none() {
                e.recv(inc, UserBuf::owned(Vec::new()))?;
            }
            d *= 2;
            round += 1;
        }
        Ok(())
    }

    /// Leaves MPI: pushes queued sends out, then a world barrier so no peer still sends
    /// here when the channel closes.
    pub fn finalize(self) -> Result<()> {
        self.eng.flush_all()?;
        self.barrier(&self.world.clone())?;
        self.eng.flush_all()
    }
}
