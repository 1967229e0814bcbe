//! Process groups (MPI-3.1 §6.3): ordered sets of world ranks.

use std::sync::Arc;

use crate::error::{Error, Result};

/// `MPI_Group_compare` / `MPI_Comm_compare` results (values as in `mpi.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(i32)]
pub enum Compare {
    /// Same members in the same order (for communicators: the same communicator).
    Ident = 0,
    /// Communicators only: same group in the same order, different context.
    Congruent = 1,
    /// Same members, different order.
    Similar = 2,
    /// Different members.
    Unequal = 3,
}

/// A group: member `i` is world rank `ranks()[i]`. Cheap to clone.
///
/// ```
/// use mpi_lite::group::Group;
/// let world = Group::world(4);
/// let odd = world.incl(&[1, 3]).unwrap();
/// assert_eq!(odd.rank_of(3), Some(1));
/// assert_eq!(world.translate(&[0, 1], &odd), vec![None, Some(0)]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group(Arc<Vec<u32>>);

impl Group {
    /// The group of world ranks `0..n`.
    pub fn world(n: u32) -> Self {
        Group(Arc::new((0..n).collect()))
    }
    /// A group of the given world ranks (must be distinct).
    pub fn from_ranks(ranks: Vec<u32>) -> Self {
        Group(Arc::new(ranks))
    }
    /// `MPI_GROUP_EMPTY`.
    pub fn empty() -> Self {
        Group(Arc::new(Vec::new()))
    }
    /// Members as world ranks.
    pub fn ranks(&self) -> &[u32] {
        &self.0
    }
    /// `MPI_Group_size`.
    pub fn size(&self) -> usize {
        self.0.len()
    }
    /// The rank in this group of world rank `w` (`MPI_Group_rank` with this process).
    pub fn rank_of(&self, w: u32) -> Option<usize> {
        self.0.iter().position(|&r| r == w)
    }

    fn check(&self, ranks: &[i32], call: &str) -> Result<()> {
        let mut seen = vec![false; self.size()];
        for &r in ranks {
            let i = usize::try_from(r)
                .ok()
                .filter(|&i| i < self.size())
                .ok_or_else(|| {
                    Error::Rank(format!(
                        "{call}: rank {r} is not in a group of {}",
                        self.size()
                    ))
                })?;
            if std::mem::replace(&mut seen[i], true) {
                return Err(Error::Rank(format!("{call}: rank {r} given twice")));
            }
        }
        Ok(())
    }

    /// `MPI_Group_incl`.
    pub fn incl(&self, ranks: &[i32]) -> Result<Group> {
        self.check(ranks, "MPI_Group_incl")?;
        Ok(Group(Arc::new(
            ranks.iter().map(|&r| self.0[r as usize]).collect(),
        )))
    }

    /// `MPI_Group_excl`.
    pub fn excl(&self, ranks: &[i32]) -> Result<Group> {
        self.check(ranks, "MPI_Group_excl")?;
        Ok(Group(Arc::new(
            (0..self.size())
                .filter(|i| !ranks.contains(&(*i as i32)))
                .map(|i| self.0[i])
                .collect(),
        )))
    }

    /// `MPI_Group_union`: this group's members, then the other's not in it.
    pub fn union(&self, other: &Group) -> Group {
        let mut v = self.0.to_vec();
        v.extend(other.0.iter().filter(|r| !self.0.contains(r)));
        Group(Arc::new(v))
    }

    /// `MPI_Group_intersection`: members of both, in this group's order.
    pub fn intersection(&self, other: &Group) -> Group {
        Group(Arc::new(
            self.0
                .iter()
                .copied()
                .filter(|r| other.0.contains(r))
                .collect(),
        ))
    }

    /// `MPI_Group_difference`: members of this group not in the other.
    pub fn difference(&self, other: &Group) -> Group {
        Group(Arc::new(
            self.0
                .iter()
                .copied()
                .filter(|r| !other.0.contains(r))
                .collect(),
        ))
    }

    /// `MPI_Group_translate_ranks`: each rank of this group in `other` (`None` =
    /// `MPI_UNDEFINED`).
    pub fn translate(&self, ranks: &[usize], other: &Group) -> Vec<Option<usize>> {
        ranks
            .iter()
            .map(|&r| self.0.get(r).and_then(|&w| other.rank_of(w)))
            .collect()
    }

    /// `MPI_Group_compare`.
    pub fn compare(&self, other: &Group) -> Compare {
        if self.0 == other.0 {
            Compare::Ident
        } else if self.size() == other.size() && self.0.iter().all(|r| other.0.contains(r)) {
            Compare::Similar
        } else {
            Compare::Unequal
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incl_excl_compare() {
        let w = Group::world(5);
        let a = w.excl(&[0, 2]).unwrap();
        assert_eq!(a.ranks(), &[1, 3, 4]);
        let b = w.incl(&[4, 3, 1]).unwrap();
        assert_eq!(a.compare(&b), Compare::Similar);
        assert_eq!(a.compare(&a.clone()), Compare::Ident);
        assert_eq!(a.compare(&w), Compare::Unequal);
        assert!(matches!(w.incl(&[5]), Err(Error::Rank(_))));
        assert!(matches!(w.incl(&[1, 1]), Err(Error::Rank(_))));
        assert_eq!(a.union(&b).ranks(), &[1, 3, 4]);
        assert_eq!(w.difference(&a).ranks(), &[0, 2]);
        assert_eq!(w.intersection(&b).ranks(), &[1, 3, 4]);
    }
}
