//! Waiting with progress: the one wait loop under every library wait (requests, matching,
//! collectives, the barrier), and the back-off of a send blocked on a full lane.

use std::time::{Duration, Instant};

use super::am::{Am, Take};
use super::io::Out;
use super::{Endpoint, H_NOP};
use crate::coll::ProtoGroup;
use crate::driver::Waiter;
use crate::wait::{Backoff, HOT_POLLS};
use crate::{Error, Port, Result, WaitPolicy};

/// How often an idle wait on one peer checks that its endpoint is still open.
const PROBE_EVERY: Duration = Duration::from_millis(500);

/// The hot phase of a wait over a transport with a spin floor (see `wait_loop`).
const HOT_POLLS_FLOOR: u32 = 64;

/// Group id of [`Endpoint::barrier`] (apart from the world group's `u32::MAX`).
const BARRIER_GID: u32 = u32::MAX - 1;

impl<P: Port, C> Endpoint<P, C> {
    /// Makes progress (sends queued messages, dispatches incoming ones) until `done` is
    /// true; fixed spin then sleep per the wait policy; `TimedOut` after `timeout`;
    /// `PeerLost` when a rank is lost. Handler errors do not end a wait (they are kept for
    /// [`Endpoint::poll`] / [`Endpoint::take_error`]): an unrelated bad message must not
    /// break a barrier half-way. `done` sees the endpoint between polls (its context
    /// through [`Endpoint::ctx`]).
    /// The building block of every library wait (requests, matching, collectives).
    pub fn progress_until(
        &mut self,
        done: impl FnMut(&mut Self) -> bool,
        timeout: Option<Duration>,
    ) -> Result<()> {
        self.progress_until_peer(done, timeout, None)
    }

    /// As [`Endpoint::progress_until`] for a wait on rank `peer` (its reply, its next
    /// message): while idle, every half second, checks that `peer`'s endpoint is still
    /// open (a no-op message), so a peer that finalized without answering ends the wait
    /// with `Unreachable` instead of never — once two checks in a row find it closed, so
    /// that what it sent before its goodbye is taken first. (A peer that died is
    /// `PeerLost` at once.)
    pub fn progress_until_peer(
        &mut self,
        done: impl FnMut(&mut Self) -> bool,
        timeout: Option<Duration>,
        peer: Option<u32>,
    ) -> Result<()> {
        self.wait_loop(done, &mut |_: &Am<'_>| Take::Pass, timeout, peer)
    }

    /// Makes progress as [`Endpoint::progress_until`] while offering every incoming whole
    /// (not long) message for a registered user handler to `take` first, in arrival order,
    /// until `take` answers [`Take::Mine`] (it consumed the message: its handler is not
    /// called) or [`Take::PassStop`] (dispatched, then the wait ends). Messages answered
    /// [`Take::Pass`] go to their handlers as usual. For a blocking receive that copies the
    /// next matching message straight out of the channel instead of queuing it. Chunks,
    /// replies and skifch's own messages never reach `take`.
    pub fn progress_take(
        &mut self,
        mut take: impl FnMut(&Am<'_>) -> Take,
        timeout: Option<Duration>,
    ) -> Result<()> {
        self.wait_loop(|_| false, &mut take, timeout, None)
    }

    /// Makes progress until every queued outgoing message has been handed to the channel
    /// (not a delivery guarantee: use a request/reply for that).
    pub fn flush(&mut self) -> Result<()> {
        self.progress_until(|ep| ep.io.queued == 0, None)
    }

    /// The empty receives a wait makes before it asks the channel to wait: this hot phase
    /// polls with the receive itself, so a message that arrives is taken in one look at
    /// the lane (the channel's wait asks `ready`, then the loop receives: two looks on a
    /// round trip's critical path).
    /// Over a transport whose poll is a system call (a spin floor: a fabric) a short
    /// hot phase: the channel's wait spins timed from its first poll, and 512 receives
    /// first were ~0.12 ms of system calls on top of it in every wait; 64 still take a
    /// node peer's reply inside a hierarchy (a few microseconds) and a fabric reply of
    /// a ping-pong in one look (`ready` takes a fabric's completions into the port, so
    /// the receive after it makes no second call anyway).
    fn hot_polls(&self) -> u32 {
        match self.ch.wait_policy() {
            WaitPolicy::Block => 0,
            // More ranks than CPUs: the rank this one waits for may need its CPU, so the
            // channel's wait (which yields then) comes at once. 512 receives first were
            // ~40 us a round of GASNet's barrier with 3 ranks on 2 CPUs.
            _ if crate::wait::oversubscribed() => 0,
            _ if !self.waiter.spin_floor().is_zero() => HOT_POLLS_FLOOR,
            _ => HOT_POLLS,
        }
    }

    fn wait_loop(
        &mut self,
        mut done: impl FnMut(&mut Self) -> bool,
        take: &mut impl FnMut(&Am<'_>) -> Take,
        timeout: Option<Duration>,
        peer: Option<u32>,
    ) -> Result<()> {
        let mut stop = false;
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut idle = Backoff::new();
        // Read the clock only once idle: a wait served by the first poll costs no syscall.
        let mut probed: Option<Instant> = None;
        let mut closed_once = false;
        // Empty receives left before the channel's wait (`hot_polls`), counted from the
        // first: a wait whose message is there already pays nothing for choosing them.
        let mut hot: Option<u32> = None;
        loop {
            if done(self) {
                return Ok(());
            }
            self.io.flush_all(&self.ch);
            let n = self.service_with(take, &mut stop, super::recv::POLL_BUDGET)?;
            if stop || done(self) {
                return Ok(());
            }
            if n == 0 && self.io.queued == 0 {
                let left = hot.get_or_insert_with(|| self.hot_polls());
                if *left > 0 {
                    // Bounded, so the deadline is read at most `HOT_POLLS` polls late.
                    *left -= 1;
                    continue;
                }
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(Error::TimedOut);
            }
            if n > 0 {
                idle.reset();
                hot = None;
                continue;
            }
            if let Some(p) = peer {
                let since = *probed.get_or_insert_with(Instant::now);
                if since.elapsed() >= PROBE_EVERY {
                    probed = Some(Instant::now());
                    match self.io().emit_fields(p, H_NOP, 0, 0, 0, &[], &[]) {
                        Ok(()) => closed_once = false,
                        // A goodbye can overtake the peer's last messages (the fabric
                        // driver hears it on its control endpoint, another connection):
                        // closed is final when the next probe, a period of polling
                        // later, finds it so too. Seen: a barrier's last message from a
                        // rank that then finalized, under load (shmem tests/cluster.rs).
                        Err(Error::Unreachable {
                            why: crate::Unreachable::Closed,
                            ..
                        }) if !closed_once => closed_once = true,
                        Err(e) => return Err(e),
                    }
                }
            }
            if self.io.queued > 0 {
                // Blocked on a peer's full lane: its draining does not wake us.
                self.backoff(0, &mut idle)?;
                continue;
            }
            let slice = Duration::from_millis(50);
            let slice = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()).min(slice),
                None => slice,
            };
            match self.ch.wait(Some(slice)) {
                Ok(()) | Err(Error::TimedOut) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// One round of a poll loop that found `did` messages: resets or snoozes `idle`,
    /// and every 64 empty rounds checks for a lost rank.
    pub(super) fn backoff(&self, did: usize, idle: &mut Backoff) -> Result<()> {
        if did > 0 {
            idle.reset();
            return Ok(());
        }
        if (idle.polls() + 1).is_multiple_of(64) {
            if let Some(rank) = self.waiter.lost_peer() {
                return Err(Error::PeerLost { rank });
            }
        }
        idle.snooze();
        Ok(())
    }

    /// A barrier of all ranks of the job on this endpoint, serving requests while it
    /// waits: [`crate::coll::barrier`] (dissemination, ⌈log₂ n⌉ rounds) over the job's
    /// ranks. Every rank calls it the same number of times; it returns once every rank has
    /// entered this episode.
    pub fn barrier(&mut self) -> Result<()> {
        let members = (0..self.io.size).collect();
        let g = ProtoGroup::new(self, BARRIER_GID, members)?;
        crate::coll::barrier(&g.on(self))
    }
}
