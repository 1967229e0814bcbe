//! Synchronisation (MPI-3.1 §11.5): fence and the passive-target calls on the direct path.
//! Operations there are complete when they return, so completion calls only order memory
//! (a sequentially consistent fence) and check the epoch; a fence is a barrier.

use std::sync::atomic::{fence, AtomicU64, Ordering};

use skifch::wait::Backoff;
use skifch::Port;

use super::{sync_err, Win};
use crate::comm::Mpi;
use crate::error::Result;

/// `MPI_LOCK_EXCLUSIVE` / `MPI_LOCK_SHARED`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockType {
    /// One origin at a time.
    Exclusive,
    /// Any number of shared holders.
    Shared,
}

/// `MPI_MODE_NOCHECK`: no other process holds or asks for a conflicting lock.
pub const MODE_NOCHECK: i32 = 1024;
/// `MPI_MODE_NOSTORE`: the local window was not updated by local stores since the last
/// synchronisation (one copy of the memory here: nothing to save).
pub const MODE_NOSTORE: i32 = 2048;
/// `MPI_MODE_NOPUT`: the local window will not be updated by puts or accumulates until
/// the next synchronisation (nothing to save either).
pub const MODE_NOPUT: i32 = 4096;
/// `MPI_MODE_NOPRECEDE`: the fence completes no operations of this process (given by all
/// or none): the message path sends no end-of-epoch notices.
pub const MODE_NOPRECEDE: i32 = 8192;
/// `MPI_MODE_NOSUCCEED`: no epoch follows the fence.
pub const MODE_NOSUCCEED: i32 = 16384;

/// Checks that `assert` has no bit outside `allowed` (MPI-3.1 §11.5.5: `MPI_ERR_ASSERT`).
pub(super) fn check_assert(assert: i32, allowed: i32, call: &str) -> Result<()> {
    if assert & !allowed == 0 {
        return Ok(());
    }
    Err(crate::error::Error::Code {
        code: crate::error::class::ASSERT,
        msg: format!(
            "MPI_ERR_ASSERT: {call}: assert {assert:#x} has bits that are not among this call's assertions ({allowed:#x})"
        ),
    })
}

const WRITER: u64 = 1 << 63;
const WAITING: u64 = 1 << 32;
const READERS: u64 = WAITING - 1;
const WAITERS: u64 = WRITER - WAITING;

/// One idle round of a wait on a word in mapped memory: progresses `mpi` every 64 rounds
/// while spinning and every round once the back-off naps (what arrives for this rank —
/// a collective it forwards, a request the holder waits for — waits one nap at most, not
/// 64), spins again when that progress did something, and fails once a rank of the job
/// is lost (its holder may be the one that died: never a hang; the back-off sleeps at
/// most 50 µs, so the loss is seen within milliseconds).
pub(super) fn idle<P: Port>(mpi: &Mpi<P>, b: &mut Backoff, polls: &mut u32) -> Result<()> {
    *polls = polls.wrapping_add(1);
    if polls.is_multiple_of(64) || b.is_sleeping() {
        if mpi.engine().progress()? {
            b.reset();
        }
        if let Some(rank) = mpi.engine().lost_peer() {
            return Err(skifch::Error::PeerLost { rank }.into());
        }
    }
    b.snooze();
    Ok(())
}

/// Takes the reader/writer lock `w` (module docs of [`super`]), progressing `mpi` while
/// it waits.
fn acquire<P: Port>(mpi: &Mpi<P>, w: &AtomicU64, t: LockType) -> Result<()> {
    let mut b = Backoff::new();
    let mut polls = 0u32;
    let mut wait = |b: &mut Backoff| idle(mpi, b, &mut polls);
    match t {
        LockType::Shared => loop {
            let v = w.load(Ordering::Relaxed);
            if v & (WRITER | WAITERS) == 0
                && w.compare_exchange_weak(v, v + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return Ok(());
            }
            wait(&mut b)?;
        },
        LockType::Exclusive => {
            w.fetch_add(WAITING, Ordering::Relaxed);
            loop {
                let v = w.load(Ordering::Relaxed);
                if v & (WRITER | READERS) == 0
                    && w.compare_exchange_weak(
                        v,
                        (v - WAITING) | WRITER,
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    return Ok(());
                }
                if let Err(e) = wait(&mut b) {
                    w.fetch_sub(WAITING, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
    }
}

/// One attempt at the reader/writer lock `w` without waiting or queueing (the direct
/// path's `MPI_Win_lock`, [`super::direct`]): taken when no writer holds it and, for a
/// shared lock, none waits — the conditions [`acquire`] takes it under.
pub(super) fn try_acquire(w: &AtomicU64, t: LockType) -> bool {
    let v = w.load(Ordering::Relaxed);
    let (busy, new) = match t {
        LockType::Shared => (WRITER | WAITERS, v + 1),
        LockType::Exclusive => (WRITER | READERS, v | WRITER),
    };
    v & busy == 0
        && w.compare_exchange(v, new, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
}

pub(super) fn release(w: &AtomicU64, t: LockType) {
    match t {
        LockType::Shared => w.fetch_sub(1, Ordering::Release),
        LockType::Exclusive => w.fetch_and(!WRITER, Ordering::Release),
    };
}

impl Win {
    /// `MPI_Win_fence`: ends the fence epoch (every operation of every member complete)
    /// and, unless `assert` has `MPI_MODE_NOSUCCEED`, starts the next.
    ///
    /// # One-sided Operation
    /// Every member calls it (collective); it returns once all have entered it.
    ///
    /// Assertions (§11.5.5): `MPI_MODE_NOPRECEDE` saves the message path's end-of-epoch
    /// notices; with `MPI_MODE_NOSUCCEED` as well no epoch ends or begins, so nothing is
    /// synchronised; `NOSTORE` and `NOPUT` are accepted (one copy of the memory).
    pub fn fence<P: Port>(&self, mpi: &Mpi<P>, assert: i32) -> Result<()> {
        let all = MODE_NOSTORE | MODE_NOPUT | MODE_NOPRECEDE | MODE_NOSUCCEED;
        check_assert(assert, all, "MPI_Win_fence")?;
        let noprecede = assert & MODE_NOPRECEDE != 0;
        {
            let e = self.epoch();
            if e.lock_all || e.locks.iter().any(Option::is_some) {
                return Err(sync_err(
                    "MPI_Win_fence inside a passive-target epoch".into(),
                ));
            }
        }
        if noprecede && assert & MODE_NOSUCCEED != 0 {
            self.epoch().fence = false;
            return Ok(());
        }
        fence(Ordering::SeqCst);
        if self.msg && !noprecede {
            let k = self.fences.fetch_add(1, Ordering::Relaxed) + 1;
            self.msg_fence(mpi, k)?;
        }
        mpi.barrier(&self.comm)?;
        fence(Ordering::SeqCst);
        self.epoch().fence = assert & MODE_NOSUCCEED == 0;
        Ok(())
    }

    /// `MPI_Win_lock`: starts a passive-target access epoch to `rank`, holding its lock
    /// (`MPI_MODE_NOCHECK` in `assert`: the program vouches for no conflict, no lock taken).
    ///
    /// # One-sided Operation
    /// Only the origin calls it; the target takes no part. Returns once the lock is held.
    pub fn lock<P: Port>(&self, mpi: &Mpi<P>, t: LockType, rank: i32, assert: i32) -> Result<()> {
        let call = "MPI_Win_lock";
        check_assert(assert, MODE_NOCHECK, call)?;
        if rank == crate::engine::PROC_NULL {
            return Ok(());
        }
        self.member(rank, call)?;
        let r = rank as usize;
        {
            let mut e = self.epoch();
            if e.lock_all || e.locks[r].is_some() {
                return Err(sync_err(format!(
                    "{call}: rank {rank} is already locked by this process"
                )));
            }
            if e.fence {
                // A passive epoch ends the (empty) fence epoch (§11.5: they may not mix).
                e.fence = false;
            }
            e.locks[r] = Some(t);
        }
        if assert & MODE_NOCHECK == 0 {
            let got = if self.msg {
                self.msg_lock(mpi, r as u32, t)
            } else {
                acquire(mpi, self.ctls[r].lock(), t)
            };
            if let Err(err) = got {
                self.epoch().locks[r] = None;
                return Err(err);
            }
        }
        if assert & MODE_NOCHECK != 0 {
            // Remember that nothing is to be released.
            self.nocheck_mark(r, true);
        }
        Ok(())
    }

    /// `MPI_Win_unlock`: completes every operation to `rank` and releases its lock.
    ///
    /// # One-sided Operation
    /// Only the origin calls it; complete at the target when it returns.
    pub fn unlock<P: Port>(&self, mpi: &Mpi<P>, rank: i32) -> Result<()> {
        let call = "MPI_Win_unlock";
        if rank == crate::engine::PROC_NULL {
            return Ok(());
        }
        self.member(rank, call)?;
        let r = rank as usize;
        let t = self.epoch().locks[r].take();
        let Some(t) = t else {
            return Err(sync_err(format!(
                "{call}: rank {rank} is not locked by this process"
            )));
        };
        fence(Ordering::SeqCst);
        let nocheck = self.nocheck_mark(r, false);
        match (self.msg, nocheck) {
            (true, true) => self.msg_flush(mpi, r as u32)?,
            (true, false) => self.msg_unlock(mpi, r as u32, t)?,
            (false, true) => {}
            (false, false) => release(self.ctls[r].lock(), t),
        }
        Ok(())
    }

    /// `MPI_Win_lock_all`: a shared lock on every member.
    ///
    /// # One-sided Operation
    /// Only the origin calls it; returns once every lock is held.
    pub fn lock_all<P: Port>(&self, mpi: &Mpi<P>, assert: i32) -> Result<()> {
        check_assert(assert, MODE_NOCHECK, "MPI_Win_lock_all")?;
        {
            let mut e = self.epoch();
            if e.lock_all || e.locks.iter().any(Option::is_some) {
                return Err(sync_err(
                    "MPI_Win_lock_all inside a passive-target epoch".into(),
                ));
            }
            e.fence = false;
            e.lock_all = true;
        }
        if assert & MODE_NOCHECK != 0 {
            self.nocheck_mark(usize::MAX, true);
            return Ok(());
        }
        if self.msg {
            // Each member's lock as `MPI_Win_lock`'s: deferred and sent with the first
            // operation that waits (or with the release), this process's own at once.
            for r in 0..self.members.len() {
                if let Err(err) = self.msg_lock(mpi, r as u32, LockType::Shared) {
                    for q in 0..r {
                        let _ = self.msg_unlock(mpi, q as u32, LockType::Shared);
                    }
                    self.epoch().lock_all = false;
                    return Err(err);
                }
            }
            return Ok(());
        }
        for (i, c) in self.ctls.iter().enumerate() {
            if let Err(err) = acquire(mpi, c.lock(), LockType::Shared) {
                for c in &self.ctls[..i] {
                    release(c.lock(), LockType::Shared);
                }
                self.epoch().lock_all = false;
                return Err(err);
            }
        }
        Ok(())
    }

    /// `MPI_Win_unlock_all`.
    ///
    /// # One-sided Operation
    /// Only the origin calls it; every operation is complete when it returns.
    pub fn unlock_all<P: Port>(&self, mpi: &Mpi<P>) -> Result<()> {
        if !self.epoch().lock_all {
            return Err(sync_err(
                "MPI_Win_unlock_all without MPI_Win_lock_all".into(),
            ));
        }
        // The epoch ends after the releases: a deferred lock sent with them is still the
        // lock_all epoch's (`LOCK_ALL` on the message path).
        let done = self.release_all(mpi);
        self.epoch().lock_all = false;
        done
    }

    /// The releases of [`Win::unlock_all`].
    fn release_all<P: Port>(&self, mpi: &Mpi<P>) -> Result<()> {
        fence(Ordering::SeqCst);
        let nocheck = self.nocheck_mark(usize::MAX, false);
        if self.msg {
            let mut first = Ok(());
            for r in 0..self.members.len() as u32 {
                let done = if nocheck {
                    self.msg_flush(mpi, r)
                } else {
                    self.msg_unlock(mpi, r, LockType::Shared)
                };
                if first.is_ok() {
                    first = done;
                }
            }
            return first;
        }
        if !nocheck {
            for c in &self.ctls {
                release(c.lock(), LockType::Shared);
            }
        }
        Ok(())
    }

    /// `MPI_Win_flush` / `flush_local` (`rank`) and their `_all` forms (`None`): every
    /// operation issued so far is complete at the target (and locally).
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside a passive-target epoch.
    pub fn flush<P: Port>(&self, mpi: &Mpi<P>, rank: Option<i32>, call: &str) -> Result<()> {
        let e = self.epoch();
        match rank {
            Some(r) if r == crate::engine::PROC_NULL => {}
            Some(r) => {
                self.member(r, call)?;
                if !e.lock_all && e.locks[r as usize].is_none() {
                    return Err(sync_err(format!(
                        "{call}: rank {r} is not locked by this process"
                    )));
                }
            }
            None => {
                if !e.lock_all && e.locks.iter().all(Option::is_none) {
                    return Err(sync_err(format!("{call} outside a passive-target epoch")));
                }
            }
        }
        drop(e);
        fence(Ordering::SeqCst);
        // Local completion is immediate on both paths (the data left the origin's buffer).
        if self.msg && !call.contains("local") {
            match rank {
                Some(r) if r == crate::engine::PROC_NULL => {}
                Some(r) => self.msg_flush(mpi, r as u32)?,
                None => {
                    for r in 0..self.members.len() as u32 {
                        self.msg_flush(mpi, r)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// `MPI_Win_sync`: orders this process's memory accesses (the public and private
    /// copies are one on this path).
    pub fn sync(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        Ok(())
    }
}
