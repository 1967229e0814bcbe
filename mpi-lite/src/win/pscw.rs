//! Generalized active-target synchronisation (MPI-3.1 §11.5.2): `MPI_Win_post`,
//! `start`, `complete`, `wait`, `test`, on both paths. A post sends each origin of the
//! group a notice; a start waits for (and consumes) one notice from each target of its
//! group; a complete sends each target a done notice after this origin's operations to
//! it (on the direct path they are complete; on the message path the notice follows them
//! on the FIFO channel, so they are applied first); a wait consumes one done notice from
//! each origin of the posted group. Notices are one-way active messages counted per
//! window and sender by the target's handlers (`served.rs`).

use std::sync::atomic::{fence, Ordering};

use skifch::Port;

use super::served::{H_DONE, H_POST};
use super::sync::{check_assert, MODE_NOCHECK, MODE_NOPUT, MODE_NOSTORE};
use super::{sync_err, Win};
use crate::comm::Mpi;
use crate::error::{Error, Result};

impl Win {
    /// The members (window ranks) of a group given by world ranks.
    fn members_of(&self, group: &[u32], call: &str) -> Result<Vec<usize>> {
        group
            .iter()
            .map(|&w| {
                self.comm
                    .group
                    .ranks()
                    .iter()
                    .position(|&x| x == w)
                    .ok_or_else(|| {
                        Error::Group(format!(
                            "{call}: process {w} of the group is not in the window's group"
                        ))
                    })
            })
            .collect()
    }

    fn notify<P: Port>(&self, mpi: &Mpi<P>, members: &[usize], h: u8) -> Result<()> {
        let id = self.id;
        for &m in members {
            let dst = self.comm.world_of(m);
            self.ep(mpi, |ep| ep.send(dst, h, id, &[], &[]))?;
        }
        Ok(())
    }

    /// Waits for and consumes one notice (`done`: of completion, else of post) from each
    /// member of `from`.
    fn consume<P: Port>(&self, mpi: &Mpi<P>, from: &[usize], done: bool) -> Result<()> {
        let id = self.id;
        for &m in from {
            let src = self.comm.world_of(m);
            mpi.engine()
                .wait_until(|s| s.rma.notices(id, src, done) > 0)?;
            mpi.engine().with_ep(|ep| {
                ep.ctx_mut().rma.consume(id, src, done);
                Ok(())
            })?;
        }
        Ok(())
    }

    /// `MPI_Win_post`: opens an exposure epoch for the origins in `group` (world ranks).
    ///
    /// # One-sided Operation
    /// The target calls it; it does not wait for the origins (their `MPI_Win_start`
    /// waits for its notice).
    ///
    /// `MPI_MODE_NOCHECK` (the matching starts also give it: the program synchronised
    /// otherwise): no notices are sent. `NOSTORE` and `NOPUT` are accepted.
    pub fn post<P: Port>(&self, mpi: &Mpi<P>, group: &[u32], assert: i32) -> Result<()> {
        let call = "MPI_Win_post";
        check_assert(assert, MODE_NOCHECK | MODE_NOSTORE | MODE_NOPUT, call)?;
        let g = self.members_of(group, call)?;
        {
            let mut e = self.epoch();
            if e.posted.is_some() {
                return Err(sync_err(format!(
                    "{call}: an exposure epoch is already open"
                )));
            }
            e.posted = Some(g.clone());
        }
        fence(Ordering::SeqCst);
        if assert & MODE_NOCHECK != 0 {
            return Ok(());
        }
        self.notify(mpi, &g, H_POST)
    }

    /// `MPI_Win_start`: opens an access epoch to the targets in `group` (world ranks).
    ///
    /// # One-sided Operation
    /// The origin calls it; it returns once every target of the group has posted.
    ///
    /// `MPI_MODE_NOCHECK` (every matching post gave it and has completed): waits for no
    /// notice.
    pub fn start<P: Port>(&self, mpi: &Mpi<P>, group: &[u32], assert: i32) -> Result<()> {
        let call = "MPI_Win_start";
        check_assert(assert, MODE_NOCHECK, call)?;
        let g = self.members_of(group, call)?;
        {
            let e = self.epoch();
            if e.started.is_some() || e.lock_all || e.locks.iter().any(Option::is_some) {
                return Err(sync_err(format!("{call}: an access epoch is already open")));
            }
        }
        if assert & MODE_NOCHECK == 0 {
            self.consume(mpi, &g, false)?;
        }
        let mut e = self.epoch();
        e.fence = false;
        e.started = Some(g);
        Ok(())
    }

    /// `MPI_Win_complete`: ends the access epoch of `MPI_Win_start`.
    ///
    /// # One-sided Operation
    /// The origin calls it; its operations are complete at the targets once each target's
    /// `MPI_Win_wait` returns (on the direct path already when this returns).
    pub fn complete<P: Port>(&self, mpi: &Mpi<P>) -> Result<()> {
        let Some(g) = self.epoch().started.take() else {
            return Err(sync_err("MPI_Win_complete without MPI_Win_start".into()));
        };
        self.xfer_quiet()?;
        fence(Ordering::SeqCst);
        self.notify(mpi, &g, H_DONE)
    }

    /// `MPI_Win_wait`: ends the exposure epoch of `MPI_Win_post`.
    ///
    /// # One-sided Operation
    /// The target calls it; it returns once every origin of the group has called
    /// `MPI_Win_complete` and their operations are applied.
    pub fn wait<P: Port>(&self, mpi: &Mpi<P>) -> Result<()> {
        let Some(g) = self.epoch().posted.clone() else {
            return Err(sync_err("MPI_Win_wait without MPI_Win_post".into()));
        };
        self.consume(mpi, &g, true)?;
        self.epoch().posted = None;
        fence(Ordering::SeqCst);
        Ok(())
    }

    /// `MPI_Win_test`: [`Win::wait`] if every origin has completed (`true`), else `false`
    /// at once (the epoch stays open).
    ///
    /// # One-sided Operation
    /// The target calls it; it never blocks.
    pub fn test<P: Port>(&self, mpi: &Mpi<P>) -> Result<bool> {
        let Some(g) = self.epoch().posted.clone() else {
            return Err(sync_err("MPI_Win_test without MPI_Win_post".into()));
        };
        mpi.engine().progress()?;
        let id = self.id;
        let srcs: Vec<u32> = g.iter().map(|&m| self.comm.world_of(m)).collect();
        let all = mpi.engine().with_ep(|ep| {
            let s = &mut ep.ctx_mut().rma;
            let ready = srcs.iter().all(|&w| s.notices(id, w, true) > 0);
            if ready {
                for &w in &srcs {
                    s.consume(id, w, true);
                }
            }
            Ok(ready)
        })?;
        if all {
            self.epoch().posted = None;
            fence(Ordering::SeqCst);
        }
        Ok(all)
    }
}
