//! ARMCI mutexes (`ARMCI_Create_mutexes`, `ARMCI_Lock`, `ARMCI_Unlock`): each rank hosts
//! its own number of mutexes in an internal collective allocation, one ticket lock of two
//! `u32` (next ticket, now serving) per mutex. Lock takes a ticket with a remote
//! fetch-and-add and waits (with [`skifch::wait::Backoff`], serving peers' requests on the
//! message path) until it is served; unlock advances "now serving". Fair (FIFO), and a
//! waiting rank only reads the holder's memory: on the direct path the holder computing
//! does not stall anyone beyond its release.

use skifch::rma::Amo;
use skifch::wait::Backoff;
use skifch::Port;

use crate::group::Group;
use crate::{Armci, Error, Result};

/// A set of mutexes: those of `ARMCI_Create_mutexes`, or a handle's
/// (`ARMCIX_Create_mutexes_hdl`, over a group).
#[derive(Debug)]
pub struct Mutexes {
    /// Every job rank's lock words (its base, its number of mutexes; 0 outside the group).
    bases: Vec<usize>,
    counts: Vec<usize>,
    /// The group of a handle's mutexes (`None`: the world's, `ARMCI_Create_mutexes`).
    group: Option<Group>,
}

impl<P: Port> Armci<P> {
    /// Creates `count` mutexes on this rank (ranks may differ), replacing none: a second
    /// creation without [`Armci::destroy_mutexes`] is an error.
    ///
    /// # Collective Operation
    /// Every rank calls it.
    pub fn create_mutexes(&self, count: usize) -> Result<()> {
        if self
            .mutexes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
        {
            return Err(Error::BadArgument(
                "mutexes already exist (ARMCI_Destroy_mutexes first)".into(),
            ));
        }
        let blocks = self.malloc_blocks(count * 8)?;
        *self.mutexes.lock().unwrap_or_else(|p| p.into_inner()) = Some(Mutexes::of(blocks, None));
        Ok(())
    }

    /// Frees the mutexes.
    ///
    /// # Collective Operation
    /// Every rank calls it, when no rank holds a mutex.
    pub fn destroy_mutexes(&self) -> Result<()> {
        let m = self
            .mutexes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let Some(m) = m else {
            return Err(Error::BadArgument(
                "no mutexes exist (ARMCI_Create_mutexes first)".into(),
            ));
        };
        self.free(m.bases[self.me() as usize])
    }

    /// A set of `count` mutexes on this rank (members may differ) among the members of
    /// `g`, beside any others (ARMCI-MPI's `ARMCIX_Create_mutexes_hdl`).
    ///
    /// # Collective Operation
    /// Every member of `g` calls it.
    pub fn create_mutexes_in(&self, g: &Group, count: usize) -> Result<Mutexes> {
        let blocks = self.malloc_group(g, count * 8)?;
        Ok(Mutexes::of(blocks, Some(g.clone())))
    }

    /// Frees a set made by [`Armci::create_mutexes_in`].
    ///
    /// # Collective Operation
    /// Every member of its group calls it, when no member holds one of its mutexes.
    pub fn destroy_mutexes_in(&self, m: Mutexes) -> Result<()> {
        let base = m.bases[self.me() as usize];
        match &m.group {
            Some(g) => self.free_group(g, base),
            None => self.free(base),
        }
    }

    /// The world mutexes' lock word of mutex `m` of rank `proc`.
    fn mutex_at(&self, m: i64, proc: i64) -> Result<(u32, usize)> {
        let g = self.mutexes.lock().unwrap_or_else(|p| p.into_inner());
        let Some(x) = g.as_ref() else {
            return Err(Error::BadArgument(
                "no mutexes exist (ARMCI_Create_mutexes first)".into(),
            ));
        };
        self.word_of(x, m, proc)
    }

    /// The lock word of mutex `m` of job rank `proc` in `x`.
    fn word_of(&self, x: &Mutexes, m: i64, proc: i64) -> Result<(u32, usize)> {
        let proc = self.proc(proc)?;
        if let Some(g) = &x.group {
            if g.rank_of(proc).is_none() {
                return Err(Error::BadArgument(format!(
                    "process {proc} is not a member of the mutexes' group"
                )));
            }
        }
        let n = x.counts[proc as usize];
        if m < 0 || m as usize >= n {
            return Err(Error::BadArgument(format!(
                "mutex {m} does not exist on process {proc} (it has {n})"
            )));
        }
        Ok((proc, x.bases[proc as usize] + 8 * m as usize))
    }

    /// Acquires mutex `m` of rank `proc` (waits until it is this rank's turn).
    pub fn lock(&self, m: i64, proc: i64) -> Result<()> {
        let (proc, at) = self.mutex_at(m, proc)?;
        self.lock_word(proc, at)
    }

    /// Releases mutex `m` of rank `proc` (held by this rank).
    pub fn unlock(&self, m: i64, proc: i64) -> Result<()> {
        let (proc, at) = self.mutex_at(m, proc)?;
        self.unlock_word(proc, at)
    }

    /// [`Armci::lock`] on a set of [`Armci::create_mutexes_in`] (`proc`: a job rank).
    pub fn lock_in(&self, x: &Mutexes, m: i64, proc: i64) -> Result<()> {
        let (proc, at) = self.word_of(x, m, proc)?;
        self.lock_word(proc, at)
    }

    /// [`Armci::unlock`] on a set of [`Armci::create_mutexes_in`].
    pub fn unlock_in(&self, x: &Mutexes, m: i64, proc: i64) -> Result<()> {
        let (proc, at) = self.word_of(x, m, proc)?;
        self.unlock_word(proc, at)
    }

    /// Takes mutex `m` of `proc` in `x` if it is free and nobody waits for it (no wait);
    /// whether it was taken.
    pub fn try_lock_in(&self, x: &Mutexes, m: i64, proc: i64) -> Result<bool> {
        let (proc, at) = self.word_of(x, m, proc)?;
        let word = self.locate(proc, at, 8)?;
        // One 64-bit word: next ticket (low half), now serving (high half). Free when
        // equal; taking it is drawing the next ticket, by compare-and-swap, so a waiter's
        // ticket drawn meanwhile makes this fail instead of jumping the queue.
        let cur = self.amo(word, 8, Amo::Fetch)?;
        let (next, serving) = (cur as u32, (cur >> 32) as u32);
        if next != serving {
            return Ok(false);
        }
        let new = (cur & !0xFFFF_FFFF) | u64::from(next.wrapping_add(1));
        let old = self.amo(word, 8, Amo::CompareSwap { expected: cur, new })?;
        Ok(old == cur)
    }

    fn lock_word(&self, proc: u32, at: usize) -> Result<()> {
        let next = self.locate(proc, at, 4)?;
        let serving = self.locate(proc, at + 4, 4)?;
        let ticket = self.amo(next, 4, Amo::Add(1))?;
        let mut b = Backoff::new();
        while self.amo(serving, 4, Amo::Fetch)? != ticket {
            self.poll()?;
            b.snooze();
        }
        Ok(())
    }

    fn unlock_word(&self, proc: u32, at: usize) -> Result<()> {
        self.fence()?;
        let serving = self.locate(proc, at + 4, 4)?;
        self.amo(serving, 4, Amo::Add(1))?;
        Ok(())
    }
}

impl Mutexes {
    fn of(blocks: Vec<(usize, usize)>, group: Option<Group>) -> Mutexes {
        Mutexes {
            bases: blocks.iter().map(|b| b.0).collect(),
            counts: blocks.iter().map(|b| b.1 / 8).collect(),
            group,
        }
    }
}
