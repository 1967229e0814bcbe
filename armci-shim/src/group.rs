//! ARMCI groups: a list of job ranks with its own collectives ([`skifch::coll`] over a
//! [`ProtoGroup`] named by a group id every member agrees on) and its own collective
//! allocations. A group allocation is served by messages on every path: the direct
//! path's [`skifch::rma::expose`] is collective over the whole job, which a group call is
//! not (to be lifted when `skifch::rma` can expose among a subset).

use skifch::coll::{Kernel, ProtoGroup};
use skifch::rma::MappedWindow;
use skifch::Port;

use crate::{Armci, Error, Result};

/// A group of job ranks (member `i` is `members[i]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    members: Vec<u32>,
    gid: u32,
}

/// Group ids start here (clear of the world group's).
const FIRST_GID: u32 = 0x4000_0000;

impl Group {
    /// The members, as job ranks.
    pub fn members(&self) -> &[u32] {
        &self.members
    }
    /// The group's id, the same in every member (and for every copy of the group).
    pub fn id(&self) -> u32 {
        self.gid
    }
    /// The position of job rank `r` in the group.
    pub fn rank_of(&self, r: u32) -> Option<usize> {
        self.members.iter().position(|&m| m == r)
    }
}

impl<P: Port> Armci<P> {
    /// The group of every rank.
    pub fn world_group(&self) -> Group {
        Group {
            members: (0..self.nproc()).collect(),
            gid: FIRST_GID,
        }
    }

    /// Makes the group of `members` (job ranks, distinct, in range) within `parent`.
    ///
    /// # Collective Operation
    /// Every member of `parent` calls it, in the same order (members of the new group and
    /// others alike, as ARMCI's `ARMCI_Group_create` over the default group and
    /// `_create_child` over its parent): the calls' order within the parent names the new
    /// group. As with `MPI_Comm_create`, processes may pass different lists as long as every
    /// member of a list passes that same list, so one call can make disjoint groups
    /// (Global Arrays makes each process's "same local id on every node" group so).
    pub fn group_create(&self, parent: &Group, members: &[u32]) -> Result<Group> {
        let mut sorted = members.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != members.len() || sorted.iter().any(|m| parent.rank_of(*m).is_none()) {
            return Err(Error::BadArgument(format!(
                "group members {members:?} are not distinct members of the parent group {:?}",
                parent.members
            )));
        }
        // Every member of this list must pass the same list (hashes, all-gathered).
        let h = members.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &m| {
            (h ^ u64::from(m)).wrapping_mul(0x0100_0000_01b3)
        });
        let mut all = vec![0u8; 8 * parent.members.len()];
        let pg = self.proto_group(parent)?;
        skifch::coll::allgather(&pg.on(&mut self.ep()), &h.to_le_bytes(), &mut all)?;
        for &m in members {
            let i = parent.rank_of(m).unwrap_or(0);
            if all[8 * i..8 * i + 8] != h.to_le_bytes() {
                return Err(Error::BadArgument(format!(
                    "process {m} is in the list {members:?} but created a group with another list (every member of a group passes the same list)"
                )));
            }
        }
        let n = {
            let mut g = self.groups.lock().unwrap_or_else(|p| p.into_inner());
            let c = g.entry(parent.gid).or_insert(0);
            *c += 1;
            *c
        };
        // The list's hash tells apart the disjoint groups one call makes.
        let gid = FIRST_GID
            | (parent
                .gid
                .wrapping_mul(0x9E37_79B9)
                .wrapping_add(n.wrapping_mul(0x85EB_CA6B))
                .wrapping_add((h ^ (h >> 32)) as u32)
                & 0x3FFF_FFFF);
        Ok(Group {
            members: members.to_vec(),
            gid: if gid == FIRST_GID { FIRST_GID + 1 } else { gid },
        })
    }

    fn proto_group(&self, g: &Group) -> Result<ProtoGroup> {
        let ep = self.ep();
        Ok(ProtoGroup::new(&ep, g.gid, g.members.clone())?)
    }

    /// Barrier of the group's members (after a fence).
    ///
    /// # Collective Operation
    /// Every member calls it.
    pub fn group_barrier(&self, g: &Group) -> Result<()> {
        self.fence()?;
        let pg = self.proto_group(g)?;
        skifch::coll::barrier(&pg.on(&mut self.ep()))?;
        Ok(())
    }

    /// All-reduce of `buf` over the group's members.
    ///
    /// # Collective Operation
    /// Every member calls it with the same kernel and length.
    pub fn group_allreduce(&self, g: &Group, buf: &mut [u8], k: &Kernel) -> Result<()> {
        let send = buf.to_vec();
        let pg = self.proto_group(g)?;
        skifch::coll::allreduce(&pg.on(&mut self.ep()), &send, buf, k)?;
        Ok(())
    }

    /// Every member's `mine` (all of one length), in group order.
    ///
    /// # Collective Operation
    /// Every member calls it with the same length.
    pub fn group_allgather(&self, g: &Group, mine: &[u8]) -> Result<Vec<u8>> {
        let mut all = vec![0u8; mine.len() * g.members.len()];
        let pg = self.proto_group(g)?;
        skifch::coll::allgather(&pg.on(&mut self.ep()), mine, &mut all)?;
        Ok(all)
    }

    /// Broadcast of `buf` from the group's member `root` (a group rank).
    ///
    /// # Collective Operation
    /// Every member calls it with the same root and length.
    pub fn group_bcast(&self, g: &Group, root: usize, buf: &mut [u8]) -> Result<()> {
        if root >= g.members.len() {
            return Err(Error::BadProc {
                proc: root as i64,
                n: g.members.len() as u32,
            });
        }
        let pg = self.proto_group(g)?;
        skifch::coll::bcast(&pg.on(&mut self.ep()), root, buf)?;
        Ok(())
    }

    /// Collective allocation among the group's members: every member's (base, length),
    /// indexed by job rank (non-members: (0, 0)). Served by messages (module docs).
    ///
    /// # Collective Operation
    /// Every member calls it; it returns after a group barrier.
    pub fn malloc_group(&self, g: &Group, len: usize) -> Result<Vec<(usize, usize)>> {
        if g.rank_of(self.me()).is_none() {
            return Err(Error::BadArgument(
                "this process is not a member of the group".into(),
            ));
        }
        let (mem, base) = Self::private_block(len)?;
        let base = if len == 0 { 0 } else { base };
        let mut mine = [0u8; 16];
        mine[..8].copy_from_slice(&(base as u64).to_le_bytes());
        mine[8..].copy_from_slice(&(len as u64).to_le_bytes());
        if len > 0 {
            // served from now on (a peer may send as soon as it has every base)
            self.ep().ctx_mut().allocs.push((base, len));
        }
        let all = self.group_allgather(g, &mine)?;
        let mut bases = vec![(0usize, 0usize); self.nproc() as usize];
        for (i, c) in all.chunks_exact(16).enumerate() {
            let w =
                |k: usize| u64::from_le_bytes(c[k..k + 8].try_into().unwrap_or([0; 8])) as usize;
            bases[g.members[i] as usize] = (w(0), w(8));
        }
        self.insert_alloc(
            bases.clone(),
            MappedWindow::empty(self.me()),
            Some(mem),
            crate::engine::Reach::Messages,
            true,
        );
        self.group_barrier(g)?;
        Ok(bases)
    }

    /// Frees the group allocation whose base here is `base`.
    ///
    /// # Collective Operation
    /// Every member calls it; it starts with a group barrier.
    pub fn free_group(&self, g: &Group, base: usize) -> Result<()> {
        self.group_barrier(g)?;
        let Some(id) = self.find_alloc(base) else {
            return Err(Error::BadArgument(format!(
                "{base:#x} is not the base of an ARMCI allocation of this process"
            )));
        };
        self.remove_alloc(&mut self.ep(), id);
        Ok(())
    }
}
