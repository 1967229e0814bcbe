//! Teams (OpenSHMEM 1.5 §9.4): a PE's table of the teams it belongs to, by handle (the
//! C ABI's `shmem_team_t`), and the collective split. The team type itself and the
//! collectives over it are in [`crate::coll`].

use std::sync::Mutex;

use skifch::Port;

use crate::{Error, Team, World};

/// `SHMEM_TEAM_INVALID`.
pub const TEAM_INVALID: usize = 0;
/// `SHMEM_TEAM_WORLD`.
pub const TEAM_WORLD: usize = 1;
/// `SHMEM_TEAM_SHARED` (every PE of a job shares memory with the others: the world).
pub const TEAM_SHARED: usize = 2;

/// The teams this PE created and has not destroyed, by handle, each with its
/// `num_contexts` option (`shmem_team_config_t`, §9.4.1; the predefined teams' is 0):
/// [`TEAM_WORLD`] and [`TEAM_SHARED`] are predefined; handles from 3 on are created
/// teams. Handles are never reused (a stale handle stays invalid) and a destroyed team
/// leaves a 40-byte slot, so creating and destroying teams never runs out of anything:
/// a team's collectives are keyed by its members and a per-members call count
/// ([`World::group_id`](crate::World)), not by a slot of a fixed pool.
pub struct Teams {
    n: u32,
    made: Mutex<Vec<Option<(Team, i32)>>>,
}

impl Teams {
    /// The table of a job of `n` PEs (only the predefined teams).
    pub fn new(n: u32) -> Teams {
        Teams {
            n,
            made: Mutex::new(Vec::new()),
        }
    }

    fn made(&self) -> std::sync::MutexGuard<'_, Vec<Option<(Team, i32)>>> {
        self.made.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The team of handle `h`; `None` for [`TEAM_INVALID`], a destroyed or unknown handle.
    pub fn get(&self, h: usize) -> Option<Team> {
        match h {
            TEAM_WORLD | TEAM_SHARED => Some(Team::world(self.n)),
            TEAM_INVALID => None,
            h => self.made().get(h - 3).cloned().flatten().map(|(t, _)| t),
        }
    }

    /// The `num_contexts` option of live team `h`.
    pub fn num_contexts(&self, h: usize) -> Option<i32> {
        match h {
            TEAM_WORLD | TEAM_SHARED => Some(0),
            TEAM_INVALID => None,
            h => self.made().get(h - 3).cloned().flatten().map(|(_, c)| c),
        }
    }

    /// Enters `t` with option `num_contexts`; returns its handle.
    pub fn add(&self, t: Team, num_contexts: i32) -> usize {
        let mut m = self.made();
        m.push(Some((t, num_contexts)));
        m.len() + 2
    }

    /// Destroys handle `h` (`shmem_team_destroy`); [`TEAM_INVALID`] is ignored, the
    /// predefined teams and unknown handles are errors.
    pub fn destroy(&self, h: usize) -> Result<(), Error> {
        match h {
            TEAM_INVALID => Ok(()),
            TEAM_WORLD | TEAM_SHARED => Err(Error::BadArgument(
                "the predefined teams cannot be destroyed".into(),
            )),
            h => match self.made().get_mut(h - 3) {
                Some(slot @ Some(_)) => {
                    *slot = None;
                    Ok(())
                }
                _ => Err(invalid()),
            },
        }
    }
}

/// The error of a handle that names no live team.
pub fn invalid() -> Error {
    Error::BadArgument("invalid or destroyed shmem_team_t".into())
}

impl Team {
    /// Member `pe` of this team as a member of `to` (`shmem_team_translate_pe`); `None` if
    /// `pe` is not a member index here or that PE is not in `to`.
    pub fn translate(&self, pe: usize, to: &Team) -> Option<usize> {
        self.members.get(pe).and_then(|&g| to.index_of(g))
    }
}

impl<P: Port> World<P> {
    /// This PE's index in `t` (`shmem_team_my_pe`), if a member.
    pub fn team_my_pe(&self, t: &Team) -> Option<usize> {
        t.index_of(self.my_pe())
    }

    /// `shmem_team_split_strided`: collective over `parent` (a barrier first); the members
    /// `start + k·stride` (`k < size`, indices in `parent`) form the new team, returned to
    /// its members (`None` to the other PEs of `parent`). A triplet that leaves `parent`
    /// is [`Error::BadArgument`] or [`Error::BadPe`] on every PE.
    pub fn team_split_strided(
        &self,
        parent: &Team,
        start: i32,
        stride: i32,
        size: i32,
    ) -> Result<Option<Team>, Error> {
        self.barrier(&parent.members)?;
        let sub = Team::strided(
            parent.size() as u32,
            start.into(),
            stride.into(),
            size.into(),
        )?;
        let t = Team {
            members: sub
                .members
                .iter()
                .map(|&i| parent.members[i as usize])
                .collect(),
        };
        Ok(self.team_my_pe(&t).is_some().then_some(t))
    }

    /// `shmem_team_split_2d`: collective over `parent` (a barrier first). The parent's
    /// members are laid out in rows of `xrange` (more than the team's size is the size):
    /// member `i` is at `(i mod xrange, i div xrange)`. Returns this PE's row (its x-axis
    /// team, numbered by x) and column (its y-axis team, numbered by y). A `xrange` below
    /// 1 is [`Error::BadArgument`] on every PE.
    pub fn team_split_2d(&self, parent: &Team, xrange: i32) -> Result<(Team, Team), Error> {
        self.barrier(&parent.members)?;
        if xrange < 1 {
            return Err(Error::BadArgument(format!(
                "xrange {xrange} of shmem_team_split_2d must be positive"
            )));
        }
        let me = self.me_in(parent)?;
        let x = (xrange as usize).min(parent.size());
        let row = parent.members.chunks(x).nth(me / x).unwrap_or_default();
        let col = parent.members.iter().skip(me % x).step_by(x);
        Ok((
            Team {
                members: row.to_vec(),
            },
            Team {
                members: col.copied().collect(),
            },
        ))
    }

    /// `shmem_team_sync`: a barrier over `t`'s members.
    pub fn team_sync(&self, t: &Team) -> Result<(), Error> {
        self.barrier(&t.members)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_and_translation() {
        let ts = Teams::new(4);
        assert_eq!(ts.get(TEAM_WORLD).unwrap().size(), 4);
        assert!(ts.get(TEAM_INVALID).is_none() && ts.get(7).is_none());
        let h = ts.add(
            Team {
                members: vec![1, 3],
            },
            2,
        );
        assert_eq!(h, 3);
        assert_eq!(ts.num_contexts(h), Some(2));
        assert_eq!(ts.num_contexts(TEAM_WORLD), Some(0));
        let t = ts.get(h).unwrap();
        assert_eq!(t.translate(1, &Team::world(4)), Some(3));
        assert_eq!(Team::world(4).translate(2, &t), None);
        assert!(ts.destroy(TEAM_WORLD).is_err());
        ts.destroy(h).unwrap();
        assert!(ts.get(h).is_none() && ts.destroy(h).is_err());
        ts.destroy(TEAM_INVALID).unwrap();
    }
}
