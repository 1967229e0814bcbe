//! The far half of a [`RingPort`]: the ports of every destination the node's lanes do not
//! reach, held by the shm port itself and reached from its cold paths only (issue 21, the
//! hierarchical job: [`crate::hier`] implements [`Far`] over a fabric driver's port).
//!
//! A hierarchy's node-local traffic then runs the one-node job's code, inline where the
//! shm port is inline (`AnyPort`'s shm arm): each of the hierarchy's duties has a place
//! the node's traffic does not pass —
//! - a far destination misses the port's last-destination cache: `resolve` routes it, and
//!   a send to it finds no lane (`FAR_LANE`);
//! - a far message's token names no lane: `complete`'s out-of-range branch;
//! - a node message's source is its lane's, named by its job rank at open
//!   ([`crate::hier::NodePort::name_sources`]);
//! - the far half's turn is a receive's look beyond the current lane (an empty lane, a
//!   new lane, a burst's end, each a look; a burst's end weighs [`BURST`] looks), every
//!   [`Far::look`]-chosen number of looks;
//! - the waiter sleeps on both sides ([`FarWaiter`]).
//!
//! Without a far half (a one-node job) these branches cost a receive's look beyond the
//! current lane one compare, and nothing on the paths of the send, the current lane's
//! receive and `complete` (their code around the call to the far half moved one spill
//! into GASNet's AM request: 184 -> 186 instructions; mpi-lite's `MPI_Send` 310 and
//! `MPI_Recv` 513.6 as before, `docs/results-2026-11-30-far-half`). The far half's state
//! is two plain fields of the port and its message comes back by value: a slot behind a
//! pointer, or the message kept in the port, cost the one-node `MPI_Recv` 15-18
//! instructions (the optimizer kept field addresses in stack slots for every receive).
#![allow(unsafe_code)] // `Far::complete` carries `Port::complete`'s contract

use std::io::IoSlice;
use std::sync::Arc;
use std::time::Duration;

use skifch::driver::{RawMessage, SendMode, Token};
use skifch::{NetAddr, Result};

use super::fabric::Region;
use super::port::{RingPort, BURST};

/// The lane index a far destination resolves to: no lane has it, so a send there leaves the
/// shm port's inline path at its lane look-up.
pub(super) const FAR_LANE: usize = usize::MAX;
/// [`Far::look`]: a message was taken.
pub const TOOK: u32 = 0;
/// [`Far::look`]: the receive failed.
pub const FAILED: u32 = u32::MAX;

/// `RingPort::burst` after a far message: no node message came since (a node message
/// resets it, a scan's to `BURST - 1`, a burst's end leaves 0).
pub(super) const AFTER_FAR: u32 = u32::MAX;

/// The far half of a shm port (see the module docs). Its messages' tokens carry a bit of
/// `Token::a` in 32..64 (a lane index no port has); addresses and ranks are the job's.
pub trait Far: Send {
    /// Where job address `dst` goes: `Some(node rank)` through the node's lanes, `None`
    /// through this half; an address outside the job is an error naming it.
    fn route(&self, dst: NetAddr) -> Result<Option<u32>>;
    /// The job rank of node rank `r`.
    fn job_rank(&self, r: u32) -> u32;
    /// [`skifch::driver::Port::send`] to a destination routed here.
    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize>;
    /// A receive's look beyond the node's current lane, the far half's turn: `node_came`,
    /// a node message came since the last turn. Receives from this half into `into`:
    /// [`TOOK`] (a message there), [`FAILED`] (the receive failed: [`Far::recv`] says
    /// why), else nothing there and the looks until its next turn (at least 1). A word,
    /// not a `Result`: the fabric's receive path returns in a register.
    fn look(&mut self, node_came: bool, into: &mut RawMessage) -> u32;
    /// Receives from this half into `into` now (a node peer is lost: this half may still
    /// hold messages, delivered before the loss is reported).
    fn recv(&mut self, into: &mut RawMessage) -> Result<()>;
    /// [`skifch::driver::Port::ready`] of this half, when its policy looks there (the
    /// node's lanes had nothing).
    fn ready(&mut self) -> Result<bool>;
    /// [`skifch::driver::Port::complete`] for a token of this half's.
    ///
    /// # Safety
    /// As `Port::complete`: `token` came from this half's receive, completed once.
    unsafe fn complete(&mut self, token: Token);
    /// The waiter of this half, combined with the node's in [`super::RingWaiter`].
    fn waiter(&self) -> Arc<dyn FarWaiter>;
}

/// The sleeping side of a [`Far`] half: sleeps on it and on the node's lanes in turn.
pub trait FarWaiter: Send + Sync {
    /// The rank is alone on its node: the node's side is never armed (its `membarrier`),
    /// only its own threads' self-sends use the lanes.
    fn alone(&self) -> bool;
    /// Sleeps at most `timeout` on both sides: `node(t)` sleeps at most `t` on the node's
    /// side (armed by the caller unless [`FarWaiter::alone`]). Returns after at most a
    /// slice of each side, as a spurious wake-up, so that the caller polls both again.
    fn sleep(&self, node: &dyn Fn(Duration), timeout: Duration);
    /// The first rank known lost: the node's (`node`, a node rank) named by its job
    /// rank, else this half's.
    fn lost_peer(&self, node: Option<u32>) -> Option<u32>;
    /// [`skifch::driver::Waiter::spin_floor`] of this half.
    fn spin_floor(&self) -> Duration;
}

impl<R: Region> RingPort<R> {
    /// A send that found no lane: to the far half (`FAR_LANE`).
    #[cold]
    #[inline(never)]
    pub(super) fn send_far(
        &mut self,
        dst: NetAddr,
        iov: &[IoSlice<'_>],
        mode: SendMode,
    ) -> Result<usize> {
        match self.far.as_mut() {
            Some(far) => far.send(dst, iov, mode),
            None => Err(self.bad_address(dst)), // not reached: a lane for every address
        }
    }

    /// `resolve` of a port with a far half: the lane of a node destination, or [`FAR_LANE`].
    #[cold]
    pub(super) fn resolve_far(&self, dst: NetAddr) -> Result<Option<usize>> {
        let Some(far) = self.far.as_ref() else {
            return Ok(None);
        };
        Ok(Some(match far.route(dst)? {
            Some(r) => (r * self.nports + dst.port()) as usize,
            None => FAR_LANE,
        }))
    }

    /// The far half's turn (see [`Far::look`]), out of line: the message taken there, or
    /// the error; `None`: nothing there (the node's lanes are looked at). A message taken
    /// leaves the current lane (the next receive looks beyond it). Returned by value, not
    /// written through a pointer from the caller: into a local of the caller's, the
    /// one-node `MPI_Recv` took 16 instructions more, into a slot of the port's, 18
    /// (`docs/results-2026-11-30-far-half`).
    #[inline(never)]
    pub(super) fn far_turn(&mut self) -> Option<Result<RawMessage>> {
        let node_came = self.burst != AFTER_FAR;
        let far = self.far.as_mut()?;
        let mut m = RawMessage::EMPTY;
        let got = far.look(node_came, &mut m);
        if got == TOOK {
            self.far_due = 1;
            self.far_taken();
            return Some(Ok(m));
        }
        if got != FAILED {
            self.far_due = got;
            return None;
        }
        self.far_due = 1;
        self.far_failed()
    }

    /// A failed turn: the far half's receive again, for its error (or a message after all).
    #[cold]
    fn far_failed(&mut self) -> Option<Result<RawMessage>> {
        let far = self.far.as_mut()?;
        let mut m = RawMessage::EMPTY;
        match far.recv(&mut m) {
            Ok(()) => {
                self.far_taken();
                Some(Ok(m))
            }
            Err(skifch::Error::WouldBlock) => None,
            Err(e) => Some(Err(e)),
        }
    }

    /// A far message was taken: the next receive looks beyond the current lane, at the far
    /// half first while no node message comes (its policy).
    fn far_taken(&mut self) {
        if self.cur < self.rx.len() {
            self.last_scan = self.cur;
        }
        self.cur = usize::MAX;
        self.burst = AFTER_FAR;
    }

    /// A burst's end weighs [`BURST`] looks (a busy lane brings the far half's turn
    /// closer as fast as that many receives would).
    #[inline(always)]
    pub(super) fn far_burst_ended(&mut self) {
        if self.far.is_some() {
            self.far_due = self.far_due.saturating_sub(BURST - 1).max(1);
        }
    }

    /// An empty poll while a node peer is lost: the far half's messages first (by value,
    /// as for `far_turn`).
    #[cold]
    #[inline(never)]
    pub(super) fn far_before_loss(&mut self) -> Option<RawMessage> {
        let far = self.far.as_mut()?;
        let mut m = RawMessage::EMPTY;
        far.recv(&mut m).ok()?;
        self.far_taken();
        Some(m)
    }

    /// [`skifch::driver::Port::ready`]'s look at the far half, when the lanes had nothing.
    /// A far message found ready makes the next receive's look the far half's turn (else
    /// a waiter could be told "ready" a thousand times before a receive takes it).
    #[cold]
    pub(super) fn far_ready(&mut self) -> Result<bool> {
        let Some(far) = self.far.as_mut() else {
            return Ok(false);
        };
        let ready = far.ready()?;
        if ready {
            self.far_due = 1;
        }
        Ok(ready)
    }

    /// A token that names no lane: the far half's.
    ///
    /// # Safety
    /// As `Port::complete`.
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn complete_far(&mut self, t: Token) {
        if let Some(far) = self.far.as_mut() {
            // SAFETY: a token naming no lane came from the far half (the caller's contract).
            unsafe { far.complete(t) }
        }
    }

    /// A node rank (of a lost peer) named as the job names it.
    pub(super) fn job_rank(&self, r: u32) -> u32 {
        self.far.as_ref().map_or(r, |f| f.job_rank(r))
    }
}
