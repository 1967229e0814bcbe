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

use crate::{Armci, Error, Result};

/// The mutexes of the current `ARMCI_Create_mutexes`.
#[derive(Debug)]
pub struct Mutexes {
    /// Every rank's lock words (its base, its byte length: 8 per mutex).
    bases: Vec<usize>,
    counts: Vec<usize>,
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
        let bases = blocks.iter().map(|b| b.0).collect();
        let counts = blocks.iter().map(|b| b.1 / 8).collect();
        *self.mutexes.lock().unwrap_or_else(|p| p.into_inner()) = Some(Mutexes { bases, counts });
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

    /// The address of mutex `m` of rank `proc`.
    fn mutex_at(&self, m: i64, proc: i64) -> Result<(u32, usize)> {
        let proc = self.proc(proc)?;
        let g = self.mutexes.lock().unwrap_or_else(|p| p.into_inner());
        let Some(x) = g.as_ref() else {
            return Err(Error::BadArgument(
                "no mutexes exist (ARMCI_Create_mutexes first)".into(),
            ));
        };
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

    /// Releases mutex `m` of rank `proc` (held by this rank).
    pub fn unlock(&self, m: i64, proc: i64) -> Result<()> {
        let (proc, at) = self.mutex_at(m, proc)?;
        self.fence()?;
        let serving = self.locate(proc, at + 4, 4)?;
        self.amo(serving, 4, Amo::Add(1))?;
        Ok(())
    }
}
