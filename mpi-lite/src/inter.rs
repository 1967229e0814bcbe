//! Intercommunicators (MPI-3.1 §6.6): two disjoint groups, point-to-point ranks naming
//! the remote group, and their construction (`MPI_Intercomm_create`, `_merge`, and
//! `MPI_Comm_dup`/`split`/`create` of an intercommunicator).
//!
//! An intercommunicator is a [`CommData`] whose `group` is the local group and whose
//! [`Inter`] holds the remote group and a *local communicator*: an intracommunicator of
//! the local group with contexts of its own, on which the intercommunicator's collectives
//! ([`crate::intercoll`]) and agreements run inside one group. Both groups use the
//! intercommunicator's context `ctx` (point-to-point) and `ctx + 1` (collective traffic
//! between the groups); a message's source is the sender's rank in its own group, which is
//! its rank in the receiver's remote group, so matching is that of intracommunicators.
//!
//! Context ids are agreed as for intracommunicators ([`crate::ctxid`]: ids free at every
//! member, ANDed), over the two groups: each group ANDs its members' offers, the two
//! leaders swap theirs (`MPI_Intercomm_create`: over the peer communicator with the
//! caller's tag; later calls: over the intercommunicator's collective context), and each
//! leader broadcasts the other's in its group. An intercommunicator takes two consecutive
//! context slots (`ctx`, `ctx + 1` between the groups, `ctx + 2`, `ctx + 3` its local
//! communicator).

use std::sync::Arc;

use skifch::Port;

use crate::comm::{CommData, Mpi, UNDEFINED};
use crate::ctxid::{Lease, Parties};
use crate::engine::{Envelope, Mode, ReqId};
use crate::error::{Error, Result};
use crate::group::Group;
use crate::mem::UserBuf;
use crate::nbc::Plan;

/// `MPI_ROOT`: the root of an intercommunicator collective names itself so.
pub const ROOT: i32 = -3;

/// Tag of the leaders' swap on an intercommunicator's collective context.
const T_LEADERS: i32 = -16;
/// Tag of the leaders' swap in the barrier.
const T_BARRIER: i32 = -17;

/// What makes a communicator an intercommunicator.
#[derive(Debug)]
pub struct Inter {
    /// The remote group (point-to-point ranks and collective roots name its members).
    pub remote: Group,
    /// An intracommunicator of the local group with contexts of its own, for the
    /// collectives' work inside the group.
    pub local: Arc<CommData>,
}

impl CommData {
    /// The group point-to-point ranks name: the remote group of an intercommunicator
    /// (MPI-3.1 §6.6.1), else the communicator's own.
    #[inline]
    pub fn peers(&self) -> &Group {
        match &self.inter {
            Some(x) => &x.remote,
            None => &self.group,
        }
    }

    /// `Err(MPI_ERR_COMM)` for an intercommunicator: `what` needs an intracommunicator.
    pub fn intra(&self, what: &str) -> Result<()> {
        match self.inter {
            Some(_) => Err(Error::Comm(format!(
                "{what}: needs an intracommunicator, this is an intercommunicator"
            ))),
            None => Ok(()),
        }
    }

    /// The remote group's size (`None`: an intracommunicator).
    pub fn remote_size(&self) -> Option<usize> {
        self.inter.as_ref().map(|x| x.remote.size())
    }

    /// Whether this process is the root of a rooted collective given `root`: its rank in
    /// an intracommunicator, `MPI_ROOT` in an intercommunicator.
    pub fn is_root(&self, root: i32) -> bool {
        match self.inter {
            Some(_) => root == ROOT,
            None => root >= 0 && self.rank == root as usize,
        }
    }

    /// Whether this process takes no part in a rooted intercommunicator collective: it
    /// is in the root's group but not the root (`root == MPI_PROC_NULL`).
    pub fn is_idle(&self, root: i32) -> bool {
        self.inter.is_some() && root == crate::engine::PROC_NULL
    }
}

/// An intercommunicator of contexts `ctx..ctx + 4` (see the module's docs).
fn inter_comm(ctx: &Arc<Lease>, group: Group, rank: usize, remote: Group) -> Arc<CommData> {
    let local = Arc::new(CommData::leased(ctx, group.clone(), rank, None).shifted(1));
    let mut d = CommData::leased(ctx, group, rank, None);
    d.inter = Some(Arc::new(Inter { remote, local }));
    Arc::new(d)
}

fn u32_at(b: &[u8], i: usize) -> Result<u32> {
    b.get(i * 4..i * 4 + 4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .ok_or_else(|| Error::Intern("intercommunicator agreement: short message".into()))
}

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect()
}

fn bytes_of(w: impl IntoIterator<Item = u32>) -> Vec<u8> {
    w.into_iter().flat_map(u32::to_le_bytes).collect()
}

impl<P: Port> Mpi<P> {
    /// Broadcasts bytes of a length only `root` knows over the intracommunicator `c`.
    fn bcast_bytes(&self, c: &CommData, root: usize, data: Option<Vec<u8>>) -> Result<Vec<u8>> {
        let n = data.as_ref().map_or(0, Vec::len) as u64;
        let mut len = UserBuf::owned(n.to_le_bytes().to_vec());
        self.bcast(c, &mut len, root as i32)?;
        let l = len.into_owned().unwrap_or_default();
        let n = u64::from_le_bytes(l[..8].try_into().unwrap_or_default()) as usize;
        let mut b = UserBuf::owned(match data {
            Some(d) => d,
            None => crate::mem::zeroed(n)?,
        });
        self.bcast(c, &mut b, root as i32)?;
        Ok(b.into_owned().unwrap_or_default())
    }

    /// Sends `data` as `out` to world rank `dst` and receives the same kind of message
    /// (a length word, then the bytes) of envelope `from`: the leaders' swap.
    fn swap_var(&self, out: Envelope, dst: u32, from: Envelope, data: &[u8]) -> Result<Vec<u8>> {
        let e = self.engine();
        let hdr = (data.len() as u32).to_le_bytes().to_vec();
        let s1 = e.isend(out, dst, UserBuf::owned(hdr), Mode::Standard, 0)?;
        let s2 = e.isend(out, dst, UserBuf::owned(data.to_vec()), Mode::Standard, 0)?;
        let n = u32_at(&e.coll_recv(from, 4)?, 0)? as usize;
        let got = e.coll_recv(from, n)?;
        e.wait(s1)?;
        e.wait(s2)?;
        Ok(got)
    }

    /// The leaders' swap of an intercommunicator (local rank 0 with remote rank 0, on its
    /// collective context).
    fn leaders_swap(&self, c: &CommData, x: &Inter, tag: i32, data: &[u8]) -> Result<Vec<u8>> {
        let out = c.coll_env(c.rank as i32, tag);
        self.swap_var(out, x.remote.ranks()[0], c.coll_env(0, tag), data)
    }

    /// Gives the other group `mine` and returns theirs: `local` is this group's
    /// intracommunicator, `leader` its leader, who calls `swap` to give the other leader
    /// `mine` and get theirs, then broadcasts it in the group.
    ///
    /// # Collective Operation
    /// Every member of both groups; if the leader's swap fails, every member of its group
    /// fails with its error's text.
    fn two_way(
        &self,
        local: &CommData,
        leader: usize,
        mine: &[u8],
        swap: impl FnOnce(&[u8]) -> Result<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        // The leader's word: 1 then the other group's bytes, or 0 and its error (so the
        // group fails with it instead of waiting for a broadcast).
        let mut failed = None;
        let msg = (local.rank == leader).then(|| match swap(mine) {
            Ok(t) => [&[1u8][..], &t].concat(),
            Err(e) => {
                let o = [&[0u8][..], e.to_string().as_bytes()].concat();
                failed = Some(e);
                o
            }
        });
        let got = self.bcast_bytes(local, leader, msg)?;
        if let Some(e) = failed {
            return Err(e);
        }
        match got.split_first() {
            Some((1, t)) => Ok(t.to_vec()),
            _ => {
                let why = String::from_utf8_lossy(got.get(1..).unwrap_or_default());
                Err(Error::Comm(format!("the group's leader failed: {why}")))
            }
        }
    }

    /// Agrees on `n` fresh contexts (`2n` ids) over two groups (see [`Mpi::two_way`] for
    /// `local` and `leader`) and swaps `payload` with the other group: `link` gives the
    /// leader its link to the other leader (the envelope it sends with, the world rank it
    /// sends to, the envelope it receives), used for the payload and then by the
    /// agreement, the schedule `p`'s rounds. `key` names the agreement from the other
    /// group's payload (equal in both groups; `None`: by `p`). Returns the contexts and
    /// the other group's payload.
    ///
    /// # Collective Operation
    /// Every member of both groups.
    #[allow(clippy::too_many_arguments)] // the parts of a two-group agreement
    fn agree_two(
        &self,
        p: Plan<'_>,
        local: &CommData,
        leader: usize,
        n: usize,
        payload: &[u8],
        key: impl FnOnce(&[u8]) -> Option<u64>,
        link: impl FnOnce() -> Result<(Envelope, u32, Envelope)>,
    ) -> Result<(Arc<Lease>, Vec<u8>)> {
        let mut bridge = None;
        let theirs = self.two_way(local, leader, payload, |m| {
            let (out, dst, from) = link()?;
            bridge = Some((out, dst, from));
            self.swap_var(out, dst, from, m)
        })?;
        let who = Parties {
            local,
            members: (0..local.size()).collect(),
            bridge,
            two: true,
        };
        let ctx = self.agree_with(p, who, n, key(&theirs))?;
        Ok((ctx, theirs))
    }

    /// The parties of an agreement over intercommunicator `c`'s two groups, its leaders
    /// linked on its collective context with `tag`.
    fn inter_parties<'a>(c: &CommData, x: &'a Inter, tag: i32) -> Parties<'a> {
        let link = (c.coll_env(0, tag), x.remote.ranks()[0], c.coll_env(0, tag));
        Parties {
            local: &x.local,
            members: (0..x.local.size()).collect(),
            bridge: (c.rank == 0).then_some(link),
            two: true,
        }
    }

    /// [`Mpi::agree_two`] over an existing intercommunicator (the payload swapped with
    /// [`T_LEADERS`], the agreement with the call's collective tag on `c`).
    fn agree_inter(
        &self,
        c: &CommData,
        x: &Inter,
        n: usize,
        payload: &[u8],
    ) -> Result<(Arc<Lease>, Vec<u8>)> {
        let theirs = self.two_way(&x.local, 0, payload, |m| {
            self.leaders_swap(c, x, T_LEADERS, m)
        })?;
        let p = self.plan(c, 0);
        let who = Self::inter_parties(c, x, p.tag);
        Ok((self.agree_with(p, who, n, None)?, theirs))
    }

    /// `MPI_Comm_idup` of an intercommunicator: [`Mpi::inter_dup`] with the agreement
    /// running in the engine (the communicator gets its contexts when it completes).
    pub(crate) fn inter_idup(&self, c: &CommData, x: &Inter) -> Result<(Arc<CommData>, ReqId)> {
        let local = Arc::new(CommData::pending(c.group.clone(), c.rank, None));
        let mut d = CommData::pending(c.group.clone(), c.rank, None);
        d.inter = Some(Arc::new(Inter {
            remote: x.remote.clone(),
            local,
        }));
        let d = Arc::new(d);
        let fill = d.clone();
        let p = self.plan(c, 0);
        let who = Self::inter_parties(c, x, p.tag);
        let req = self.start_agreement(p, who, 2, None, Box::new(move |l| fill.settle(l)))?;
        Ok((d, req))
    }

    /// `MPI_Intercomm_create` (MPI-3.1 §6.6.2): an intercommunicator between the group of
    /// `local` and the group whose leader is `remote_leader` in `peer`. `peer` matters at
    /// the local leader only (others may pass `None`); the leaders exchange with `tag` on
    /// it.
    ///
    /// # Collective Operation
    /// Every member of both groups calls it (the two groups with their own `local`,
    /// leaders and a matching tag); it returns once this group's leader has heard from
    /// the other's. The groups must be disjoint (`MPI_ERR_GROUP` otherwise).
    pub fn intercomm_create(
        &self,
        local: &CommData,
        local_leader: i32,
        peer: Option<&CommData>,
        remote_leader: i32,
        tag: i32,
    ) -> Result<Arc<CommData>> {
        local.intra("MPI_Intercomm_create (local_comm)")?;
        let leader = usize::try_from(local_leader)
            .ok()
            .filter(|&l| l < local.size())
            .ok_or_else(|| {
                Error::Rank(format!(
                    "local_leader {local_leader} is not in a communicator of {}",
                    local.size()
                ))
            })?;
        let payload = bytes_of(local.group.ranks().iter().copied());
        // Named by the two groups' first world ranks (the same on both sides).
        let first = local.group.ranks()[0];
        let pair = move |t: &[u8]| {
            let other = u32_at(t, 0).unwrap_or(u32::MAX);
            Some((u64::from(first.min(other)) << 32) | u64::from(first.max(other)))
        };
        let p = self.plan(local, 0);
        let (ctx, theirs) = self.agree_two(p, local, leader, 2, &payload, pair, || {
            let peer = peer.ok_or_else(|| {
                Error::Comm("peer_comm is MPI_COMM_NULL at the local leader".into())
            })?;
            let (out, dst) = Mpi::<P>::route(peer, remote_leader, tag)?
                .ok_or_else(|| Error::Rank("remote_leader is MPI_PROC_NULL".into()))?;
            let from = Mpi::<P>::want(peer, remote_leader, tag)?;
            if dst == local.world_of(local.rank) {
                return Err(Error::Rank(
                    "remote_leader is the local leader itself (the groups must be disjoint)".into(),
                ));
            }
            Ok((out, dst, from))
        })?;
        let remote = Group::from_ranks(words(&theirs));
        if remote
            .ranks()
            .iter()
            .any(|w| local.group.rank_of(*w).is_some())
        {
            return Err(Error::Group(
                "MPI_Intercomm_create: the local and remote groups overlap".into(),
            ));
        }
        Ok(inter_comm(&ctx, local.group.clone(), local.rank, remote))
    }

    /// `MPI_Intercomm_merge` (MPI-3.1 §6.6.2): an intracommunicator of both groups, the
    /// group that passed `high == false` first (when both pass the same value, the group
    /// whose leader has the lower world rank).
    ///
    /// # Collective Operation
    /// Every member of both groups calls it (the same `high` within a group).
    pub fn intercomm_merge(&self, c: &CommData, high: bool) -> Result<Arc<CommData>> {
        let x = c
            .inter
            .as_ref()
            .ok_or_else(|| Error::Comm("MPI_Intercomm_merge: not an intercommunicator".into()))?;
        let (ctx, theirs) = self.agree_inter(c, x, 1, &[high as u8])?;
        let remote_high = theirs.first().is_some_and(|&h| h != 0);
        let local_first = if high != remote_high {
            !high
        } else {
            c.group.ranks()[0] < x.remote.ranks()[0]
        };
        let (l, r) = (c.group.ranks(), x.remote.ranks());
        let (ranks, rank) = if local_first {
            ([l, r].concat(), c.rank)
        } else {
            ([r, l].concat(), r.len() + c.rank)
        };
        Ok(Arc::new(CommData::leased(
            &ctx,
            Group::from_ranks(ranks),
            rank,
            None,
        )))
    }

    /// `MPI_Comm_dup` of an intercommunicator: same groups, new contexts.
    pub(crate) fn inter_dup(&self, c: &CommData, x: &Inter) -> Result<Arc<CommData>> {
        let p = self.plan(c, 0);
        let who = Self::inter_parties(c, x, p.tag);
        let ctx = self.agree_with(p, who, 2, None)?;
        Ok(inter_comm(&ctx, c.group.clone(), c.rank, x.remote.clone()))
    }

    /// `MPI_Comm_split` of an intercommunicator (MPI-3.1 §6.4.2): the members of each
    /// color in this group with those of the same color in the other; a color with no
    /// members on one side (and `MPI_UNDEFINED`) gives `None`.
    pub(crate) fn inter_split(
        &self,
        c: &CommData,
        x: &Inter,
        color: i32,
        key: i32,
    ) -> Result<Option<Arc<CommData>>> {
        if color < 0 && color != UNDEFINED {
            return Err(Error::Arg(format!(
                "MPI_Comm_split: color {color} is negative (and not MPI_UNDEFINED)"
            )));
        }
        let mine = bytes_of([color as u32, key as u32]);
        let all = self.exchange(&x.local, -11, &mine)?.concat();
        let (ctx, theirs) = self.agree_inter(c, x, 2, &all)?;
        if color == UNDEFINED {
            return Ok(None);
        }
        // Members of `color` in a group (its (color, key) words in rank order), by key then rank.
        let pick = |w: &[u32]| {
            let mut m: Vec<(i32, usize)> = w
                .chunks_exact(2)
                .enumerate()
                .filter(|(_, ck)| ck[0] as i32 == color)
                .map(|(r, ck)| (ck[1] as i32, r))
                .collect();
            m.sort();
            m.into_iter().map(|(_, r)| r).collect::<Vec<usize>>()
        };
        let (lm, rm) = (pick(&words(&all)), pick(&words(&theirs)));
        if rm.is_empty() {
            return Ok(None);
        }
        let rank = lm
            .iter()
            .position(|&r| r == c.rank)
            .ok_or_else(|| Error::Intern("split lost this process".into()))?;
        let local = Group::from_ranks(lm.iter().map(|&r| c.world_of(r)).collect());
        let remote = Group::from_ranks(rm.iter().map(|&r| x.remote.ranks()[r]).collect());
        Ok(Some(inter_comm(&ctx, local, rank, remote)))
    }

    /// `MPI_Comm_create` of an intercommunicator (MPI-3.1 §6.4.2): `g` (a subgroup of the
    /// local group, the same in the whole group) with the other group's choice; members
    /// outside `g`, or all when the other side chose no one, get `None`.
    pub(crate) fn inter_create_sub(
        &self,
        c: &CommData,
        x: &Inter,
        g: &Group,
    ) -> Result<Option<Arc<CommData>>> {
        if g.ranks().iter().any(|w| c.group.rank_of(*w).is_none()) {
            return Err(Error::Group(
                "MPI_Comm_create: the group is not a subset of the local group".into(),
            ));
        }
        let (ctx, theirs) = self.agree_inter(c, x, 2, &bytes_of(g.ranks().iter().copied()))?;
        let remote = Group::from_ranks(words(&theirs));
        let me = c.world_of(c.rank);
        Ok(match g.rank_of(me) {
            Some(rank) if remote.size() > 0 => Some(inter_comm(&ctx, g.clone(), rank, remote)),
            _ => None,
        })
    }

    /// `MPI_Barrier` of an intercommunicator: returns once every member of both groups
    /// has entered (a barrier in each group, the leaders' swap, a barrier again).
    pub(crate) fn inter_barrier(&self, c: &CommData, x: &Inter) -> Result<()> {
        self.barrier(&x.local)?;
        if c.rank == 0 {
            self.leaders_swap(c, x, T_BARRIER, &[])?;
        }
        self.barrier(&x.local)
    }
}
