//! The hierarchical job (issue 21; seed 001, Madeleine's lesson: several networks, the
//! protocol chosen per destination): ranks of this node are reached through the node's
//! shm lanes, the others through a fabric driver, behind one [`Driver`].
//!
//! [`HierDriver`] joins a *local* job (the node's ranks, numbered `0..` in global-rank
//! order: [`crate::shm::node::node_job`]) and a *remote* job over every rank of the job
//! (numbered as the job: the fabric driver). Addresses above are global: a send to a rank
//! of this node goes to the local port with the rank translated, any other to the remote
//! port; a node message's source is named by its job rank from the start (the node port
//! is told its lanes' job ranks at open, [`NodePort::name_sources`]). `SKIFCH_ROUTE=fabric`
//! sends every message, also within the node, through the remote driver (for testing the
//! fabric on one machine); the default `auto` chooses per destination.
//!
//! Receiving polls the local port, and the remote port when the node has nothing (a
//! waiting receiver whose last message came from the node: on one empty poll in
//! [`REMOTE_IDLE`] to [`REMOTE_IDLE_MAX`], the interval doubling while the fabric has
//! nothing); one receive in [`REMOTE_EVERY`] to [`REMOTE_EVERY_MAX`] (and the one after a
//! remote message) polls the remote port first, so a node whose lanes are never empty
//! cannot starve the fabric's messages (nor hold back the credits their completion
//! returns). Both intervals drop back at a remote message: a fabric poll costs a provider
//! call (about 2000 instructions over `net`, a system call included), which node-local
//! traffic then pays once per 256 messages, and a waiting node-local receiver once per
//! 1024 empty polls. A fabric message is thus seen within [`REMOTE_EVERY_MAX`] receives,
//! or [`REMOTE_IDLE_MAX`] empty polls (`tests/node_hier.rs`
//! `fabric_messages_are_seen_within_bounded_polls`). A fabric's provider may progress only
//! inside its calls (libfabric's tcp provider does): polling it only on some turns left
//! a request of mpi-lite's one-sided test unsent for good (found with `rma.c` on 2 × 2
//! ranks). Tokens of remote messages carry bit 63 of `Token::a` (drivers' tokens keep
//! it clear). A blocked receiver sleeps on both wake-up mechanisms in turn, each for at
//! most [`SLICE`], then polls again: a message waits at most about one slice to be seen
//! by a sleeping receiver (spinning receivers, the default policy's first phase, see it
//! at once). A rank alone on its node sleeps on the fabric only, in slices of
//! [`ALONE_SLICE`], without arming the node's side (its `membarrier`).
//!
//! Remote memory access ([`Driver::rma`]): [`crate::hier_rma`], node peers mapped, the
//! others reached by the fabric's transfers, when both drivers offer it.
//!
//! Sending: each port keeps a route per job rank (the node's rank, or the fabric), made at
//! open, and the node's port is held to the job's message limit then ([`NodePort`]), so
//! a send to a node peer is one look-up and two compares before the node's own send.
//!
//! Cost (callgrind, 8 B `mpi_loop rate` between the two ranks of one node in a 3-rank job
//! on two network namespaces under hydra, `scripts/ofi-callgrind.sh LOCAL=1`;
//! `docs/results-2026-11-29-hier-local`): `MPI_Send` 406 instructions against 315 over
//! the shm driver alone (the send behind `AnyPort`'s vtable arm: inline it was 362, and
//! cost one-node jobs' sends), `MPI_Recv` 604 against 526 (the receive and completion behind
//! `AnyPort`'s vtable arm: any arm of the hierarchy's own there cost every one-node job
//! 9-18 instructions per receive). Wall clock (`scripts/hier-local.sh`): raw channels
//! at par, mpi-lite's 8 B latency 0.31 against 0.29 us (0.38 before the idle polls'
//! back-off), its rate at par.
#![allow(unsafe_code)] // `unsafe impl Port` and the forwarding of `unsafe fn complete`

use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use skifch::driver::{Driver, Port, RawMessage, SendMode, Token, Waiter};
use skifch::{Error, NetAddr, Result};

use crate::boot::Bootstrap;

/// One receive in this many polls the remote port first, after a remote message.
pub const REMOTE_EVERY: u32 = 8;
/// ... growing to one in this many while those polls find nothing.
pub const REMOTE_EVERY_MAX: u32 = 256;
/// A waiting receiver whose last message came from the node polls the fabric on one
/// empty poll in this many ([`HierPort`]'s `ready` and `recv_into`) ...
pub const REMOTE_IDLE: u32 = 16;
/// ... growing to one in this many while those polls find nothing.
pub const REMOTE_IDLE_MAX: u32 = 1024;
/// Longest sleep on one side's wake-up before looking at the other's.
pub const SLICE: Duration = Duration::from_micros(200);
/// The fabric's slice for a rank alone on its node: what delays another thread's
/// self-send to a sleeping receiver of that rank.
pub const ALONE_SLICE: Duration = Duration::from_millis(1);
const REMOTE_BIT: u64 = 1 << 63;
/// The route entry of a rank reached through the fabric ([`HierPort`]'s `route`).
const ROUTE_REMOTE: u32 = u32::MAX;

/// How messages are routed (`SKIFCH_ROUTE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// The node's lanes for the node's ranks, the fabric for the others.
    Auto,
    /// The fabric for every destination.
    Fabric,
}

impl Route {
    /// `SKIFCH_ROUTE`: unset or `auto`, or `fabric`; anything else is an error naming it.
    pub fn from_env() -> Result<Route> {
        match std::env::var("SKIFCH_ROUTE").as_deref() {
            Err(_) | Ok("auto") => Ok(Route::Auto),
            Ok("fabric") => Ok(Route::Fabric),
            Ok(v) => Err(Error::Bootstrap(
                format!("SKIFCH_ROUTE={v:?}: expected auto or fabric").into(),
            )),
        }
    }
}

/// The node side of a hierarchy: a port whose largest message the hierarchy lowers to the
/// job's (the smaller of its two drivers'), so that the port's own size check, made on
/// every send anyway, is the job's, and a send through the node's lanes checks nothing more.
pub trait NodePort: Port {
    /// Holds this port's sends to at most `max` bytes: a whole message above it gets
    /// `MessageTooLarge` naming `max`, a prefix send at most `max` bytes sent. Never raises
    /// the port's own limit.
    fn hold_to(&mut self, max: usize);
    /// Names each message's source as the job does: `job(r)` is node rank `r`'s job rank.
    /// Set once at open, so that a node message needs no translation when received.
    fn name_sources(&mut self, job: &dyn Fn(u32) -> u32);
}

/// A rank's attachment to a job of several nodes (see the module docs).
pub struct HierDriver<L: Driver, R: Driver> {
    local: Arc<L>,
    remote: Arc<R>,
    rank: u32,
    size: u32,
    /// Global rank → the local job's rank, for ranks routed through the node.
    to_local: Vec<Option<u16>>,
    /// Local job's rank → global rank.
    to_global: Vec<u32>,
    /// The job's largest message: the smaller of the two drivers'. The node's ports are
    /// held to it at open ([`NodePort::hold_to`]); sends through the fabric, when its
    /// limit is the larger, by [`clip`].
    max: usize,
    /// Ports per rank: the smaller of the two drivers' counts.
    ports: u32,
    clip_remote: bool,
}

/// Whether `iov` holds more than `max` bytes (a saturating sum: the driver that sends it
/// checks the iovec itself).
#[inline]
fn over(iov: &[IoSlice<'_>], max: usize) -> bool {
    iov.iter().fold(0usize, |t, s| t.saturating_add(s.len())) > max
}

/// `iov` held to `max` bytes: `MessageTooLarge` for a whole message above it, the first
/// `max` bytes of a prefix send (a copy of the iovec, only for such a large message).
fn clip<'a>(
    iov: &'a [IoSlice<'a>],
    max: usize,
    mode: SendMode,
) -> Result<Option<Vec<IoSlice<'a>>>> {
    let total = skifch::driver::iov_total(iov)?;
    if total <= max {
        return Ok(None);
    }
    if mode == SendMode::Whole {
        return Err(Error::MessageTooLarge {
            len: total as u64,
            max: max.min(u32::MAX as usize) as u32,
        });
    }
    let (mut v, mut left) = (Vec::new(), max);
    for s in iov {
        if left == 0 {
            break;
        }
        let n = s.len().min(left);
        v.push(IoSlice::new(&s[..n]));
        left -= n;
    }
    Ok(Some(v))
}

impl<L: Driver, R: Driver> HierDriver<L, R> {
    /// Combines `local` (the node's ranks, as [`crate::shm::node::node_ranks`] numbers
    /// them) and `remote` (every rank) for the job `boot` describes.
    pub fn new(local: Arc<L>, remote: Arc<R>, boot: &dyn Bootstrap, route: Route) -> Result<Self> {
        let (rank, size) = (boot.rank(), boot.size());
        let (nodes, _) = crate::shm::node::node_ranks(boot);
        if local.size() as usize != nodes.len() || remote.size() != size || remote.rank() != rank {
            return Err(Error::Bootstrap(
                format!(
                    "hierarchical job: the node's job has {} ranks (expected {}), the fabric's {} (expected {size}, rank {} vs {rank})",
                    local.size(),
                    nodes.len(),
                    remote.size(),
                    remote.rank()
                )
                .into(),
            ));
        }
        let mut to_local = vec![None; size as usize];
        if route == Route::Auto {
            for (i, &g) in nodes.iter().enumerate() {
                to_local[g as usize] = Some(i as u16);
            }
        }
        let (lmax, rmax) = (local.max_message(), remote.max_message());
        let max = lmax.min(rmax);
        let ports = local.max_ports().min(remote.max_ports());
        Ok(HierDriver {
            local,
            remote,
            rank,
            size,
            to_local,
            to_global: nodes,
            max,
            ports,
            clip_remote: rmax > max,
        })
    }

    /// The node's driver.
    pub fn local(&self) -> &Arc<L> {
        &self.local
    }

    /// The job-wide driver.
    pub fn remote(&self) -> &Arc<R> {
        &self.remote
    }

    /// The job ranks of this rank's node (the launcher's node map), ascending; whatever
    /// the route (`SKIFCH_ROUTE=fabric` still has nodes).
    pub fn node_ranks(&self) -> &[u32] {
        &self.to_global
    }

    /// Each job rank's route for [`HierPort`]'s send: its node rank, or [`ROUTE_REMOTE`].
    fn routes(&self) -> Box<[u32]> {
        self.to_local
            .iter()
            .map(|l| l.map_or(ROUTE_REMOTE, u32::from))
            .collect()
    }

    fn global(&self, a: NetAddr) -> NetAddr {
        let r = self
            .to_global
            .get(a.rank() as usize)
            .copied()
            .unwrap_or(u32::MAX);
        NetAddr::new(r as u16, a.port() as u16)
    }

    /// A local driver's error, with ranks and addresses named as the job names them.
    fn local_err(&self, e: Error, dst: Option<NetAddr>) -> Error {
        match e {
            Error::PeerLost { rank } => Error::PeerLost {
                rank: self.to_global.get(rank as usize).copied().unwrap_or(rank),
            },
            Error::Unreachable { addr, why } => Error::Unreachable {
                addr: dst.unwrap_or_else(|| self.global(addr)),
                why,
            },
            e => e,
        }
    }
}

impl<L: Driver, R: Driver> Driver for HierDriver<L, R>
where
    L::Port: NodePort,
{
    type Port = HierPort<L, R>;
    fn name(&self) -> &'static str {
        "hier"
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn max_ports(&self) -> u32 {
        self.ports
    }
    fn open_port(self: &Arc<Self>, port: u32) -> Result<HierPort<L, R>> {
        let mut local = self.local.open_port(port)?;
        local.hold_to(self.max);
        local.name_sources(&|r| {
            self.to_global
                .get(r as usize)
                .copied()
                .unwrap_or(u32::from(u16::MAX))
        });
        let remote = self.remote.open_port(port)?;
        Ok(HierPort {
            drv: self.clone(),
            local,
            remote,
            turn: 0,
            every: REMOTE_EVERY,
            // A rank alone on its node hears its peers only through the fabric.
            remote_last: self.to_global.len() <= 1,
            remote_first: Arc::new(AtomicBool::new(self.to_global.len() <= 1)),
            idle: 0,
            idle_every: REMOTE_IDLE,
            addr: NetAddr::new(self.rank as u16, port as u16),
            route: self.routes(),
            ports: self.ports,
            clip_remote: self.clip_remote,
        })
    }
    fn max_message(&self) -> usize {
        self.max
    }
    fn rma(self: &Arc<Self>) -> Option<Arc<dyn skifch::rma::Rma>> {
        let (local, remote) = (self.local.rma()?, self.remote.rma()?);
        if !remote.caps().transfers {
            return None;
        }
        Some(Arc::new(crate::hier_rma::HierRma {
            local,
            remote,
            to_local: self.to_local.clone(),
            rank: self.rank,
            size: self.size,
        }))
    }
}

/// An open channel of a [`HierDriver`]: the port of the same number on both drivers.
pub struct HierPort<L: Driver, R: Driver> {
    drv: Arc<HierDriver<L, R>>,
    local: L::Port,
    remote: R::Port,
    /// Receives left before one that polls remote first.
    turn: u32,
    /// The current interval between such receives ([`REMOTE_EVERY`]..=[`REMOTE_EVERY_MAX`]).
    every: u32,
    /// The last message came from the fabric: the waiters sleep on its side first. Kept
    /// here and mirrored into `remote_first` only when it changes.
    remote_last: bool,
    remote_first: Arc<AtomicBool>,
    /// Empty polls of the node's side since the fabric's last such poll.
    idle: u32,
    /// The current interval of those polls ([`REMOTE_IDLE`]..=[`REMOTE_IDLE_MAX`]).
    idle_every: u32,
    addr: NetAddr,
    /// Each job rank's route, decided at open (`HierDriver::routes`).
    route: Box<[u32]>,
    /// The job's ports per rank ([`Driver::max_ports`]), here for the send's check.
    ports: u32,
    /// `HierDriver::clip_remote`, here to skip the driver's `Arc` on each fabric send.
    clip_remote: bool,
}

impl<L: Driver, R: Driver> HierPort<L, R> {
    /// `dst` as the node's port names it, when it is a node peer on a port the job offers
    /// (one look-up and two compares); `None`: [`HierPort::send_remote`]'s.
    #[inline(always)]
    pub(crate) fn node_route(&self, dst: NetAddr) -> Option<NetAddr> {
        let route = self
            .route
            .get(dst.rank() as usize)
            .copied()
            .unwrap_or(ROUTE_REMOTE);
        if route != ROUTE_REMOTE && dst.port() < self.ports {
            Some(NetAddr::new(route as u16, dst.port() as u16))
        } else {
            None
        }
    }

    /// An error of the node port's send to `dst` (a job address), as the job names it.
    #[inline(always)]
    pub(crate) fn node_send_err(&self, e: Error, dst: NetAddr) -> Error {
        match e {
            Error::WouldBlock => e,
            e => self.drv.local_err(e, Some(dst)),
        }
    }

    /// A send through the fabric, or to a port the job does not offer. Inline in `send`:
    /// the fabric's send is called from the dispatch's frame, which the node's inline send
    /// makes anyway (a function of its own here cost the fabric's send 13 instructions
    /// against 7 inline; the node's send is unchanged, `docs/results-2026-11-29-ofi-latency4`).
    #[inline(always)]
    pub(crate) fn send_remote(
        &mut self,
        dst: NetAddr,
        iov: &[IoSlice<'_>],
        mode: SendMode,
    ) -> Result<usize> {
        if dst.port() >= self.ports {
            // One driver may have more ports than the job offers.
            let why = skifch::error::Unreachable::NoSuchPort;
            return Err(Error::Unreachable { addr: dst, why });
        }
        if !self.clip_remote {
            return self.remote.send(dst, iov, mode);
        }
        self.send_clipped(dst, iov, mode)
    }

    /// [`HierPort::send_remote`] where the fabric's limit is above the job's.
    #[inline(never)]
    fn send_clipped(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        let held = if over(iov, self.drv.max) {
            clip(iov, self.drv.max, mode)?
        } else {
            None
        };
        self.remote.send(dst, held.as_deref().unwrap_or(iov), mode)
    }

    fn recv_remote(&mut self, out: &mut RawMessage) -> Result<()> {
        self.remote.recv_into(out)?;
        self.remote_took(out);
        Ok(())
    }

    /// A fabric message taken into `out`: its token tagged, the fabric looked at first
    /// again.
    #[inline(always)]
    fn remote_took(&mut self, out: &mut RawMessage) {
        debug_assert_eq!(
            out.token.a & REMOTE_BIT,
            0,
            "the fabric driver's token uses bit 63"
        );
        out.token.a |= REMOTE_BIT;
        // The next receive looks at the fabric first again: a stream from a remote peer
        // is not slowed down to one message per REMOTE_EVERY local polls.
        self.turn = 0;
        self.every = REMOTE_EVERY;
        self.idle_every = REMOTE_IDLE;
        if !self.remote_last {
            self.remote_last = true;
            self.remote_first.store(true, Ordering::Relaxed);
        }
    }

    /// # Safety
    /// As [`Port::complete`], for a token of the remote port (its tag taken off).
    #[inline(never)]
    unsafe fn complete_remote(&mut self, t: Token) {
        // SAFETY: the caller's contract.
        unsafe { self.remote.complete(t) }
    }

    /// The fabric had nothing at a receive's look (see `recv_into`): the interval to the
    /// next turn doubles if this was that turn (`due`; else it was a look while the last
    /// message came from the fabric).
    #[inline]
    fn remote_missed(&mut self, due: bool) {
        if due {
            self.every = (self.every * 2).min(REMOTE_EVERY_MAX);
            self.turn = self.every - 1;
        } else {
            self.turn -= 1;
        }
    }

    /// The node's receive (after the fabric's turn, `looked`, or before it).
    #[inline(always)]
    fn recv_node(&mut self, out: &mut RawMessage, looked: bool) -> Result<()> {
        match self.local.recv_into(out) {
            Ok(()) => {
                self.node_recv_done();
                Ok(())
            }
            // The fabric was looked at already: nothing on either side (a waiting fabric
            // receiver's empty poll) needs no `node_recv_failed` frame (~25 instructions
            // an empty poll). `looked` is a constant at each inlined call.
            Err(Error::WouldBlock) if looked => Err(Error::WouldBlock),
            Err(e) => self.node_recv_failed(e, out, looked),
        }
    }

    /// A receive that looks at the fabric first (see `recv_into`): its turn is `due`, or
    /// the last message came from the fabric. Out of line: the node's receive stays
    /// inline in `recv_into`, and a frame of this size costs the fabric's path less than
    /// the node's receive out of line would cost the node's (callgrind, this pass: +20
    /// instructions per node receive). The ofi port's receive is inlined here
    /// (`docs/results-2026-11-29-ofi-latency4`): the fabric's receive is this one frame.
    #[inline(never)]
    fn recv_fabric_first(&mut self, out: &mut RawMessage, due: bool) -> Result<()> {
        match self.remote.recv_into(out) {
            Ok(()) => {
                self.remote_took(out);
                return Ok(());
            }
            Err(Error::WouldBlock) => self.remote_missed(due),
            Err(e) => return Err(e),
        }
        self.recv_node(out, true)
    }

    /// Whether a poll that found the node empty looks at the fabric: each one after a
    /// fabric message (a remote reply is not held behind node polls); after a node
    /// message one in [`REMOTE_IDLE`], the interval doubling up to [`REMOTE_IDLE_MAX`]
    /// while the fabric has nothing (it drops back at a fabric message, `recv_remote`).
    /// A fabric poll costs ~20 node polls and often a system call: a node-local
    /// ping-pong's receiver that met one per wait took ~0.3 us longer per message
    /// (`docs/results-2026-11-29-hier-local`).
    fn idle_looks_remote(&mut self) -> bool {
        if self.remote_last {
            return true;
        }
        self.idle += 1;
        if self.idle < self.idle_every {
            return false;
        }
        self.idle = 0;
        self.idle_every = (self.idle_every * 2).min(REMOTE_IDLE_MAX);
        true
    }

    /// A node receive that failed: nothing on the node (the fabric, unless this receive
    /// looked there already or the node's traffic holds it back: `idle_looks_remote`), or
    /// a node error, reported once the fabric has nothing either.
    #[inline(never)]
    fn node_recv_failed(&mut self, e: Error, out: &mut RawMessage, looked: bool) -> Result<()> {
        match e {
            Error::WouldBlock if looked || !self.idle_looks_remote() => Err(Error::WouldBlock),
            Error::WouldBlock => self.recv_remote(out),
            // A lost node peer: the fabric may still hold messages.
            e => match self.recv_remote(out) {
                Err(Error::WouldBlock) => Err(self.drv.local_err(e, None)),
                r => r,
            },
        }
    }

    /// A node message came (its source is the job's name already: `NodePort::name_sources`
    /// at open); the waiters sleep on the node's side first again.
    #[inline(always)]
    fn node_recv_done(&mut self) {
        if self.remote_last {
            self.node_again();
        }
    }

    #[cold]
    fn node_again(&mut self) {
        self.remote_last = false;
        self.remote_first
            .store(self.drv.to_global.len() <= 1, Ordering::Relaxed);
    }
}

/// Whether `token` is one of the node port's (else the fabric's: `recv_remote` tags them).
#[inline(always)]
fn is_node_token(token: Token) -> bool {
    token.a & REMOTE_BIT == 0
}

// SAFETY: every message comes from `local` or `remote`, whose own contracts keep its
// segments valid until `complete`; the tag bit routes each token back to its driver.
unsafe impl<L: Driver, R: Driver> Port for HierPort<L, R> {
    type Waiter = HierWaiter<<L::Port as Port>::Waiter, <R::Port as Port>::Waiter>;

    fn addr(&self) -> NetAddr {
        self.addr
    }

    #[inline(always)]
    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        // The node's port checks the size against the job's limit ([`NodePort`]).
        match self.node_route(dst) {
            Some(to) => {
                // A protocol word and a payload (`proto`'s short send; `AnyPort` offers
                // its word path to the shm arm only, as a second arm there cost one-node
                // jobs): the node port's word path, the same bytes without the general
                // send's work (node-local `MPI_Send` 404 -> 385 instructions).
                if let [w, d] = iov {
                    if let Ok(w) = <[u8; 8]>::try_from(&**w) {
                        if self.local.try_send_word(to, u64::from_le_bytes(w), d) {
                            return Ok(8 + d.len());
                        }
                    }
                }
                match self.local.send(to, iov, mode) {
                    Ok(n) => Ok(n),
                    Err(e) => Err(self.node_send_err(e, dst)),
                }
            }
            None => self.send_remote(dst, iov, mode),
        }
    }

    /// The node's receive inline, the fabric's and the failures out of line.
    #[inline(always)]
    fn recv_into(&mut self, out: &mut RawMessage) -> Result<()> {
        // Every REMOTE_EVERY-th receive looks at the fabric first, whatever the node's
        // lanes hold: a busy node cannot starve the fabric's messages (nor its credits).
        // So does every receive while the last message came from the fabric: its empty
        // polls look at both sides anyway (`idle_looks_remote`), and the fabric's reply
        // is then taken without a node poll and a failed node receive first (callgrind:
        // ~45 instructions of the 8 B latency path over the fabric).
        let due = self.turn == 0;
        if due || self.remote_last {
            return self.recv_fabric_first(out, due);
        }
        self.turn -= 1;
        self.recv_node(out, false)
    }

    fn ready(&mut self) -> Result<bool> {
        if self
            .local
            .ready()
            .map_err(|e| self.drv.local_err(e, None))?
        {
            return Ok(true);
        }
        if !self.idle_looks_remote() {
            return Ok(false);
        }
        self.remote.ready()
    }

    #[inline(always)]
    unsafe fn complete(&mut self, token: Token) {
        if is_node_token(token) {
            // SAFETY: an untagged token came from the local port, completed once.
            unsafe { self.local.complete(token) }
        } else {
            let t = Token {
                a: token.a & !REMOTE_BIT,
                b: token.b,
            };
            // SAFETY: a token `recv_remote` tagged: the remote port's, completed once.
            unsafe { self.complete_remote(t) }
        }
    }

    fn waiter(&self) -> Self::Waiter {
        HierWaiter {
            local: self.local.waiter(),
            remote: self.remote.waiter(),
            to_global: self.drv.to_global.clone().into(),
            remote_first: self.remote_first.clone(),
        }
    }
}

/// Sleeps on both drivers' wake-ups in turn (see the module docs).
#[derive(Clone)]
pub struct HierWaiter<A: Waiter, B: Waiter> {
    local: A,
    remote: B,
    to_global: Arc<[u32]>,
    /// Sleep on the fabric's side first (the port's last message came from there, or the
    /// rank is alone on its node).
    remote_first: Arc<AtomicBool>,
}

impl<A: Waiter, B: Waiter> HierWaiter<A, B> {
    /// The rank is alone on its node (its node map has one rank): only its own threads'
    /// self-sends use the node's lanes, so it never sleeps on them (a poll after each
    /// fabric slice sees those).
    fn alone(&self) -> bool {
        self.to_global.len() <= 1
    }
}

impl<A: Waiter, B: Waiter> Waiter for HierWaiter<A, B> {
    /// Arms the node's side; not for a rank alone on its node, which never sleeps on it:
    /// arming is a heavy barrier (`membarrier`, an IPI to every CPU running one of the
    /// job's processes) that only orders a sender's look at the sleeper count against
    /// this rank's last poll before a futex sleep. Without it, another thread's self-send
    /// through the lanes is seen by the poll after the fabric slice, as before.
    fn arm(&self) -> u32 {
        if self.alone() {
            return 0;
        }
        self.local.arm()
    }
    /// At most two slices: the local side's (armed by the caller), then the remote
    /// side's (armed here). It then returns, as a spurious wake-up, so that the caller
    /// polls both ports again: a message the remote side took before it was armed is
    /// thus seen within one slice, never left until the caller's timeout.
    fn sleep(&self, ticket: u32, timeout: Duration) {
        let t0 = Instant::now();
        if self.remote_first.load(Ordering::Relaxed) {
            // The side a message is expected from first: a fabric reply is not held a
            // whole local slice (a ping-pong between nodes under the default fixed-spin
            // policy sleeps on every message).
            // Alone on its node, only its own threads' self-sends come through the lanes:
            // a longer slice (fewer wake-ups of a blocked rank, each ~10 us of CPU).
            let slice = if self.alone() { ALONE_SLICE } else { SLICE };
            let t = self.remote.arm();
            self.remote.sleep(t, timeout.min(slice));
            self.remote.disarm();
            let spent = t0.elapsed();
            if self.alone() || spent < SLICE / 2 || spent >= timeout {
                return;
            }
            self.local.sleep(ticket, (timeout - spent).min(SLICE));
            return;
        }
        self.local.sleep(ticket, timeout.min(SLICE));
        let spent = t0.elapsed();
        if spent < SLICE / 2 || spent >= timeout {
            return; // woken by the local side (or out of time)
        }
        let t = self.remote.arm();
        self.remote.sleep(t, (timeout - spent).min(SLICE));
        self.remote.disarm();
    }
    fn disarm(&self) {
        if !self.alone() {
            self.local.disarm()
        }
    }
    fn spin_floor(&self) -> Duration {
        self.local.spin_floor().max(self.remote.spin_floor())
    }
    fn lost_peer(&self) -> Option<u32> {
        self.local
            .lost_peer()
            .map(|r| self.to_global.get(r as usize).copied().unwrap_or(r))
            .or_else(|| self.remote.lost_peer())
    }
}

/// The hierarchy of this machine's drivers: the node's shm lanes and the libfabric
/// driver between nodes.
pub type ShmOfi = HierDriver<crate::shm::ShmDriver, crate::ofi::OfiDriver>;

/// Joins the job `boot` describes as a hierarchy (collective over the whole job): the
/// node's shm job ([`crate::shm::node::node_job`]) and the job-wide libfabric job
/// ([`crate::ofi::init_with`], settings from its environment variables), routed as
/// `SKIFCH_ROUTE` says. The bootstrap is kept alive with the fabric driver.
pub fn join(boot: Arc<dyn Bootstrap>) -> Result<skifch::Job<ShmOfi>> {
    let route = Route::from_env()?;
    let local = crate::shm::node::node_job(&*boot)?;
    let cfg = crate::ofi::Config::from_env()?;
    let keep = crate::ofi::Keep {
        boot: Some(boot.clone()),
        ..Default::default()
    };
    let remote = crate::ofi::init_with(&*boot, &cfg, keep)?;
    let drv = HierDriver::new(
        local.driver().clone(),
        remote.driver().clone(),
        &*boot,
        route,
    )?;
    Ok(skifch::Job::new(Arc::new(drv)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A waiter that records its arms and the timeouts it was asked to sleep.
    #[derive(Clone, Default)]
    struct Log {
        arms: Arc<Mutex<u32>>,
        sleeps: Arc<Mutex<Vec<Duration>>>,
    }

    impl Waiter for Log {
        fn arm(&self) -> u32 {
            *self.arms.lock().unwrap() += 1;
            0
        }
        fn sleep(&self, _ticket: u32, timeout: Duration) {
            self.sleeps.lock().unwrap().push(timeout);
        }
        fn disarm(&self) {}
        fn lost_peer(&self) -> Option<u32> {
            None
        }
    }

    fn waiter(alone: bool) -> (HierWaiter<Log, Log>, Log, Log) {
        let (local, remote) = (Log::default(), Log::default());
        let w = HierWaiter {
            local: local.clone(),
            remote: remote.clone(),
            // Alone: the node map is this rank; else a node peer (rank 1) too.
            to_global: Arc::from(if alone { vec![0u32] } else { vec![0u32, 1] }),
            remote_first: Arc::new(AtomicBool::new(true)),
        };
        (w, local, remote)
    }

    /// A rank alone on its node never sleeps on the node's lanes: it does not arm them
    /// (a `membarrier` each time), and sleeps on the fabric in longer slices.
    #[test]
    fn a_rank_alone_on_its_node_sleeps_on_the_fabric_only() {
        let (w, local, remote) = waiter(true);
        let t = w.arm();
        w.sleep(t, Duration::from_secs(1));
        w.disarm();
        assert_eq!(*local.arms.lock().unwrap(), 0);
        assert!(local.sleeps.lock().unwrap().is_empty());
        assert_eq!(*remote.sleeps.lock().unwrap(), [ALONE_SLICE]);
        // With node peers the node's side is armed (their sends wake it).
        let (w, local, _) = waiter(false);
        w.arm();
        w.disarm();
        assert_eq!(*local.arms.lock().unwrap(), 1);
    }
}
