//! The job-control block: the job's state that every driver shares with the launcher —
//! each rank's state (starting, running, finalized, lost) and process, the lost-rank count
//! that every blocked call checks, and per channel (rank · ports + port) its state and the
//! futex word its sleepers wait on.
//!
//! It lives at the start of the job segment that `skifrun` creates for every driver (its
//! offsets are part of the segment layout, [`crate::shm::layout`]): the shm lanes follow
//! it in the same segment; the FPGA driver ([`crate::fpga::remote`]) joins the segment for
//! this block alone. The launcher marks a rank that died lost here
//! ([`JobCtl::mark_lost`]), which wakes every sleeper of the job so that blocked calls
//! return [`skifch::Error::PeerLost`] (driver obligation 6).
//!
//! Every word may be written by another process: states are compared against the known
//! values only, and a first-lost rank out of range is clamped, never used as an index.
#![allow(unsafe_code)] // atomics over the shared segment

use std::ptr::NonNull;

use crate::shm::layout::Layout;
use crate::sync::{u32_at, AtomicU32, Ordering};
use crate::sys;

/// Bytes of one rank record.
pub const RANK_REC: usize = 64;
/// Bytes of one channel record: line 0 state/owner (read by senders), line 1 the wake
/// word and the sleeper count (written by sleepers).
pub const CHAN_REC: usize = 128;

/// Number of ranks lost (segment header, own line: read on every empty poll).
pub const H_LOST: usize = 64;
/// First lost rank + 1 (0: none).
pub const H_FIRST_LOST: usize = 68;
/// A rank's request that the whole job end with a status (`shmem_global_exit`): the
/// status (0..=255) + 1, 0 while none; the first request wins.
pub const H_EXIT: usize = 72;

/// More joins than any process makes (a count above it was corrupted: finalize).
const RANK_JOINS_MAX: u32 = 1 << 16;

// Rank record fields.
pub(crate) const R_STATE: usize = 0;
pub(crate) const R_PID: usize = 4;
/// Drivers of the rank's process joined and not yet left (the libraries of one program —
/// MPI, SHMEM, ARMCI — each join; the last to leave finalizes the rank).
pub(crate) const R_JOINS: usize = 8;

// Channel record fields.
pub(crate) const C_STATE: usize = 0;
pub(crate) const C_OWNER: usize = 4;
pub(crate) const C_SEQ: usize = 64;
pub(crate) const C_SLEEPERS: usize = 68;

const _: () = assert!(R_PID + 4 <= R_JOINS && R_JOINS + 4 <= RANK_REC);
// Senders read line 0 of a channel record; the futex word and sleepers are line 1.
const _: () = assert!(C_OWNER + 4 <= C_SEQ && C_SEQ / 64 == 1 && C_SLEEPERS + 4 <= CHAN_REC);

/// Rank states in the rank record.
pub mod rank_state {
    /// Not joined yet (the launcher started it).
    pub const STARTING: u32 = 0;
    /// Joined the job.
    pub const RUNNING: u32 = 1;
    /// Left cleanly.
    pub const FINALIZED: u32 = 2;
    /// Died or left without finalizing; terminal.
    pub const LOST: u32 = 3;
}

/// Channel (port) states in the channel record.
pub mod chan_state {
    /// Never opened: messages sent to it wait in its lanes.
    pub const NEVER: u32 = 0;
    /// Open.
    pub const OPEN: u32 = 1;
    /// Closed by its owner: senders get `Unreachable`.
    pub const CLOSED: u32 = 2;
    /// The owning rank was lost (set by [`super::JobCtl::mark_lost`]); terminal.
    pub const LOST: u32 = 3;
}

/// The job-control block of a mapped job segment (handed out by
/// [`crate::shm::Fabric::ctl`], which keeps the memory alive).
pub struct JobCtl {
    base: NonNull<u8>,
    nranks: u32,
    nports: u32,
    rank_off: usize,
    chan_off: usize,
}

// SAFETY: `base` points into a region that is Send + Sync and outlives the `JobCtl` (its
// owner, the fabric, holds both); every access through it is atomic.
unsafe impl Send for JobCtl {}
// SAFETY: as above.
unsafe impl Sync for JobCtl {}

impl JobCtl {
    /// The block of the segment at `base` laid out as `lay`.
    ///
    /// # Safety
    /// `base` points to at least `lay.total` bytes, aligned to 4096, that stay mapped while
    /// the value lives and that everyone accesses atomically where this block lies.
    pub(crate) unsafe fn new(base: NonNull<u8>, lay: &Layout) -> Self {
        JobCtl {
            base,
            nranks: lay.params.nranks,
            nports: lay.params.nports,
            rank_off: lay.rank_off,
            chan_off: lay.chan_off,
        }
    }

    #[inline(always)]
    fn word(&self, off: usize) -> &AtomicU32 {
        // SAFETY: `off` comes from the trusted layout (in bounds, 4-aligned); the block's
        // words are accessed atomically by every process (the `new` contract).
        unsafe { u32_at(self.base.as_ptr().add(off)) }
    }

    #[inline(always)]
    fn rank_word(&self, rank: u32, field: usize) -> &AtomicU32 {
        debug_assert!(rank < self.nranks);
        self.word(self.rank_off + rank as usize * RANK_REC + field)
    }

    /// Word `field` (`C_*`) of channel `chan`'s record.
    #[inline(always)]
    pub(crate) fn chan(&self, chan: usize, field: usize) -> &AtomicU32 {
        debug_assert!(chan < (self.nranks * self.nports) as usize);
        self.word(self.chan_off + chan * CHAN_REC + field)
    }

    /// The count of lost ranks (zero while none is).
    #[inline(always)]
    pub(crate) fn lost_count(&self) -> &AtomicU32 {
        self.word(H_LOST)
    }

    /// Ranks in the job.
    pub fn nranks(&self) -> u32 {
        self.nranks
    }

    /// State of `rank` (see [`rank_state`]).
    pub fn rank_state(&self, rank: u32) -> u32 {
        self.rank_word(rank, R_STATE).load(Ordering::Acquire)
    }

    /// Records that `rank` is running as process `pid`: one more driver of that process
    /// joined (see [`JobCtl::set_finalized`]).
    pub fn set_running(&self, rank: u32, pid: u32) {
        self.rank_word(rank, R_JOINS).fetch_add(1, Ordering::AcqRel);
        self.rank_word(rank, R_PID).store(pid, Ordering::Relaxed);
        let _ = self.rank_word(rank, R_STATE).compare_exchange(
            rank_state::STARTING,
            rank_state::RUNNING,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }

    /// One driver of `rank` leaves; when it is the last of its process's (another
    /// library of the program may still use the rank), that is the rank's clean exit: its
    /// ports close; senders to it get `Unreachable`.
    pub fn set_finalized(&self, rank: u32) {
        let left = self
            .rank_word(rank, R_JOINS)
            .fetch_sub(1, Ordering::AcqRel)
            .wrapping_sub(1);
        // A count another process corrupted (it wrapped, or is past any real count)
        // finalizes: never a rank that stays joined for ever.
        if left > 0 && left < RANK_JOINS_MAX {
            return;
        }
        self.set_channels(rank, chan_state::CLOSED);
        let st = self.rank_word(rank, R_STATE);
        let _ = st.compare_exchange(
            rank_state::RUNNING,
            rank_state::FINALIZED,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
        let _ = st.compare_exchange(
            rank_state::STARTING,
            rank_state::FINALIZED,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }

    /// Marks `rank` lost (it died or left without finalizing) and wakes every sleeper of the
    /// job, so that blocked calls return [`skifch::Error::PeerLost`]. Returns `false` if it
    /// was already finalized or lost.
    pub fn mark_lost(&self, rank: u32) -> bool {
        if rank >= self.nranks {
            return false;
        }
        let st = self.rank_word(rank, R_STATE);
        let mut cur = st.load(Ordering::Acquire);
        loop {
            if cur == rank_state::FINALIZED || cur == rank_state::LOST {
                return false;
            }
            match st.compare_exchange(cur, rank_state::LOST, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(v) => cur = v,
            }
        }
        // Senders test only the destination channel's state word on their fast path.
        self.set_channels(rank, chan_state::LOST);
        let _ = self.word(H_FIRST_LOST).compare_exchange(
            0,
            rank + 1,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
        self.word(H_LOST).fetch_add(1, Ordering::AcqRel);
        self.wake_everyone();
        true
    }

    /// Sets the state of every channel of `rank`.
    fn set_channels(&self, rank: u32, state: u32) {
        let np = self.nports as usize;
        for p in 0..np {
            self.chan(rank as usize * np + p, C_STATE)
                .store(state, Ordering::Release);
        }
    }

    /// Wakes every sleeping receiver of the job.
    pub fn wake_everyone(&self) {
        for c in 0..(self.nranks * self.nports) as usize {
            let seq = self.chan(c, C_SEQ);
            seq.fetch_add(1, Ordering::AcqRel);
            sys::futex_wake_all(seq);
        }
    }

    /// Records a rank's request that the whole job end with exit status `status` (its
    /// low 8 bits, as a process's; OpenSHMEM `shmem_global_exit`). The first request
    /// wins; returns the status the job will end with.
    pub fn request_exit(&self, status: i32) -> i32 {
        let want = (status & 0xff) as u32 + 1;
        match self
            .word(H_EXIT)
            .compare_exchange(0, want, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => (want - 1) as i32,
            Err(v) => (v.saturating_sub(1) & 0xff) as i32,
        }
    }

    /// The status a rank asked the job to end with ([`JobCtl::request_exit`]), if any.
    pub fn exit_request(&self) -> Option<i32> {
        match self.word(H_EXIT).load(Ordering::Acquire) {
            0 => None,
            v => Some((v.saturating_sub(1) & 0xff) as i32),
        }
    }

    /// The first rank that was lost, if any.
    #[inline]
    pub fn lost(&self) -> Option<u32> {
        if self.word(H_LOST).load(Ordering::Relaxed) == 0 {
            return None;
        }
        let first = self.word(H_FIRST_LOST).load(Ordering::Acquire);
        Some(first.saturating_sub(1).min(self.nranks - 1))
    }
}
