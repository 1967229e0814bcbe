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
//! **A hierarchy's port is the node's shm port** ([`crate::shm::RingPort`]) holding the
//! fabric's port as its far half ([`crate::shm::far`], [`NodePort::hold_far`]): node-local
//! traffic runs the one-node job's code, and the hierarchy's duties sit where that
//! traffic does not pass — a fabric destination misses the port's last-destination cache
//! and finds no lane (its route then decided from a table made at open); a fabric token
//! names no lane (`complete`'s out-of-range branch, the token tagged with bit 63 of
//! `Token::a`, which drivers keep clear); the fabric's turn is a receive's look beyond the
//! node port's current lane. Every such look is the fabric's turn after a fabric message
//! (its reply is not held behind node polls) and for a rank alone on its node; after a
//! node message one look in [`FABRIC_LOOK`], the interval doubling to [`FABRIC_LOOK_MAX`]
//! while the fabric has nothing. A look is an empty poll, a change of lane, or a burst's
//! end (weighing `BURST` looks), so a node whose lanes are never empty cannot starve the
//! fabric's messages (nor hold back the credits their completion returns): a fabric
//! message is seen within `FABRIC_LOOK_MAX + BURST` receives, or `FABRIC_LOOK_MAX` empty
//! polls (`tests/node_hier.rs` `fabric_messages_are_seen_within_bounded_polls`). A
//! fabric's provider may progress only inside its calls (libfabric's tcp provider does):
//! polling it only on some turns left a request of mpi-lite's one-sided test unsent for
//! good (found with `rma.c` on 2 × 2 ranks); the turns above bound the wait.
//!
//! A blocked receiver sleeps on both wake-up mechanisms in turn ([`crate::shm::far::FarWaiter`]),
//! each for at most [`SLICE`], then polls again: a message waits at most about one slice to
//! be seen by a sleeping receiver (spinning receivers, the default policy's first phase,
//! see it at once). A rank alone on its node sleeps on the fabric only, in slices of
//! [`ALONE_SLICE`], without arming the node's side (its `membarrier`).
//!
//! Remote memory access ([`Driver::rma`]): [`crate::hier_rma`], node peers mapped, the
//! others reached by the fabric's transfers, when both drivers offer it.
//!
//! The node's port is held to the job's message limit at open ([`NodePort::hold_to`]), so
//! that a send to a node peer checks nothing more than a one-node job's.
//!
//! Cost (callgrind, `scripts/ofi-callgrind.sh LOCAL=1`: 8 B `mpi_loop rate` between the two
//! ranks of one node in a 3-rank job on two network namespaces under hydra;
//! `docs/results-2026-11-30-far-half`): node-local `MPI_Send` 310 instructions as in a
//! one-node job, `MPI_Recv` 528 against 514 with its waiting polls (the path is the
//! one-node job's but for the fabric's spin floor, read through the far waiter); near-gated
//! wall clock 0.91-0.99 of the one-node latency, 0.92-0.97 of its rate. Before, with a port
//! of its own behind `AnyPort`'s vtable arm: 385 and 582 instructions, 0.84-0.89 and
//! 0.79-0.81 (`docs/results-2026-11-30-hier-word`). The fabric's latency path pays ~100
//! instructions for the far half's vtable (2176 against 2077).
#![allow(unsafe_code)] // the forwarding of `unsafe fn complete` to the fabric's port

use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use skifch::driver::{Driver, Port, RawMessage, SendMode, Token, Waiter};
use skifch::{Error, NetAddr, Result};

use crate::boot::Bootstrap;
use crate::shm::far::{Far, FarWaiter, FAILED, TOOK};

/// After a node message, the fabric's turn comes every this many looks beyond the node
/// port's current lane (an empty poll, a new lane, a burst's end weighing `BURST` looks:
/// [`crate::shm::far`]) ...
pub const FABRIC_LOOK: u32 = 16;
/// ... the interval doubling up to this many while the fabric has nothing. A fabric poll
/// costs a provider call (~2000 instructions over `net`, often a system call): a busy node
/// lane then pays it once per 1024 messages, a waiting node-local receiver once per 1024
/// empty polls. A fabric message is thus seen within `FABRIC_LOOK_MAX + BURST` receives
/// from a busy node, or `FABRIC_LOOK_MAX` empty polls.
pub const FABRIC_LOOK_MAX: u32 = 1024;
/// Longest sleep on one side's wake-up before looking at the other's.
pub const SLICE: Duration = Duration::from_micros(200);
/// The fabric's slice for a rank alone on its node: what delays another thread's
/// self-send to a sleeping receiver of that rank.
pub const ALONE_SLICE: Duration = Duration::from_millis(1);
/// The bit of `Token::a` that marks the fabric's tokens (drivers' tokens keep it clear;
/// the node port reads it as a lane index it does not have).
const FAR_BIT: u64 = 1 << 63;
/// The route entry of a rank reached through the fabric (`FabricHalf::route`).
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
    /// Gives the port its far half (every destination off the node), reached from its cold
    /// paths only; its address becomes `addr`, the job's.
    fn hold_far(&mut self, addr: NetAddr, far: Box<dyn Far>);
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

/// Node rank `r`'s job rank by the node map `to_global` (`r` itself outside it: not a
/// node rank, which the node's driver never names).
fn job_rank(to_global: &[u32], r: u32) -> u32 {
    to_global.get(r as usize).copied().unwrap_or(r)
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

    /// Each job rank's route for the far half's `route`: its node rank, or [`ROUTE_REMOTE`].
    fn routes(&self) -> Box<[u32]> {
        self.to_local
            .iter()
            .map(|l| l.map_or(ROUTE_REMOTE, u32::from))
            .collect()
    }
}

impl<L: Driver, R: Driver> Driver for HierDriver<L, R>
where
    L::Port: NodePort,
    R::Port: 'static,
{
    type Port = L::Port;
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
    /// The node's port of that number, holding the fabric's ([`Far`]).
    fn open_port(self: &Arc<Self>, port: u32) -> Result<L::Port> {
        let mut local = self.local.open_port(port)?;
        local.hold_to(self.max);
        local.name_sources(&|r| job_rank(&self.to_global, r));
        let remote = self.remote.open_port(port)?;
        // A rank alone on its node hears its peers only through the fabric.
        let alone = self.to_global.len() <= 1;
        let far = FabricHalf {
            port: remote,
            route: self.routes(),
            to_global: self.to_global.clone().into(),
            ports: self.ports,
            max: self.max,
            clip: self.clip_remote,
            every: FABRIC_LOOK,
            ready_due: FABRIC_LOOK,
            remote_last: alone,
            remote_first: Arc::new(AtomicBool::new(alone)),
            slept: Arc::new(AtomicBool::new(false)),
            alone,
        };
        local.hold_far(NetAddr::new(self.rank as u16, port as u16), Box::new(far));
        Ok(local)
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

/// The fabric's half of a hierarchy's port, held by the node's port ([`Far`]): the
/// fabric driver's port of the same number, the routes, and the policy of its turns.
struct FabricHalf<P: Port> {
    port: P,
    /// Each job rank's route, decided at open (`HierDriver::routes`).
    route: Box<[u32]>,
    /// Node rank → job rank.
    to_global: Arc<[u32]>,
    /// The job's ports per rank ([`Driver::max_ports`]).
    ports: u32,
    /// The job's largest message, and whether the fabric's is larger (its sends clipped).
    max: usize,
    clip: bool,
    /// Looks between this half's turns while it has nothing ([`FABRIC_LOOK`]..=
    /// [`FABRIC_LOOK_MAX`], doubling at each empty turn).
    every: u32,
    /// `ready`'s calls until it looks here next.
    ready_due: u32,
    /// The last message came from the fabric: every look is its turn, and the waiters
    /// sleep on its side first. Mirrored into `remote_first` only when it changes.
    remote_last: bool,
    remote_first: Arc<AtomicBool>,
    /// The waiter slept since `ready` last looked: it looks at the fabric now (a sleeping
    /// receiver's every poll is worth one).
    slept: Arc<AtomicBool>,
    /// The rank is alone on its node: every look is the fabric's turn.
    alone: bool,
}

impl<P: Port> FabricHalf<P> {
    fn set_remote_last(&mut self, on: bool) {
        if self.remote_last != on {
            self.remote_last = on;
            self.remote_first.store(on || self.alone, Ordering::Relaxed);
        }
    }

    fn take(&mut self, into: &mut RawMessage) -> Result<()> {
        self.port.recv_into(into)?;
        debug_assert_eq!(
            into.token.a & FAR_BIT,
            0,
            "the fabric driver's token uses bit 63"
        );
        into.token.a |= FAR_BIT;
        Ok(())
    }
}

impl<P: Port> Far for FabricHalf<P>
where
    P::Waiter: 'static,
{
    fn route(&self, dst: NetAddr) -> Result<Option<u32>> {
        let Some(&route) = self.route.get(dst.rank() as usize) else {
            let why = skifch::error::Unreachable::NoSuchRank;
            return Err(Error::Unreachable { addr: dst, why });
        };
        if dst.port() >= self.ports {
            // One driver may have more ports than the job offers.
            let why = skifch::error::Unreachable::NoSuchPort;
            return Err(Error::Unreachable { addr: dst, why });
        }
        Ok((route != ROUTE_REMOTE).then_some(route))
    }

    fn job_rank(&self, r: u32) -> u32 {
        job_rank(&self.to_global, r)
    }

    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        if !self.clip || !over(iov, self.max) {
            return self.port.send(dst, iov, mode);
        }
        let held = clip(iov, self.max, mode)?;
        self.port.send(dst, held.as_deref().unwrap_or(iov), mode)
    }

    /// Every look while the last message came from the fabric (or the rank is alone on
    /// its node); else one in `every` looks, doubling from [`FABRIC_LOOK`] to
    /// [`FABRIC_LOOK_MAX`] while the fabric has nothing, back at a fabric message.
    fn look(&mut self, node_came: bool, into: &mut RawMessage) -> u32 {
        if node_came {
            self.set_remote_last(false);
        }
        match self.take(into) {
            Ok(()) => {
                self.every = FABRIC_LOOK;
                self.set_remote_last(true);
                TOOK
            }
            Err(Error::WouldBlock) if self.remote_last || self.alone => 1,
            Err(Error::WouldBlock) => {
                let due = self.every;
                self.every = (self.every * 2).min(FABRIC_LOOK_MAX);
                due
            }
            Err(_) => FAILED,
        }
    }

    fn recv(&mut self, into: &mut RawMessage) -> Result<()> {
        self.take(into)?;
        self.set_remote_last(true);
        Ok(())
    }

    fn ready(&mut self) -> Result<bool> {
        if self.slept.load(Ordering::Relaxed) {
            self.slept.store(false, Ordering::Relaxed);
        } else if !(self.remote_last || self.alone) {
            self.ready_due = self.ready_due.saturating_sub(1);
            if self.ready_due > 0 {
                return Ok(false);
            }
            self.ready_due = self.every;
        }
        self.port.ready()
    }

    unsafe fn complete(&mut self, token: Token) {
        let t = Token {
            a: token.a & !FAR_BIT,
            b: token.b,
        };
        // SAFETY: a token `take` tagged: the fabric port's, completed once (the caller's
        // contract).
        unsafe { self.port.complete(t) }
    }

    fn waiter(&self) -> Arc<dyn FarWaiter> {
        Arc::new(FabricWaiter {
            remote: self.port.waiter(),
            to_global: self.to_global.clone(),
            remote_first: self.remote_first.clone(),
            slept: self.slept.clone(),
            alone: self.alone,
        })
    }
}

/// The fabric's side of a hierarchy's waiter ([`FarWaiter`]): sleeps on both drivers'
/// wake-ups in turn (see the module docs).
struct FabricWaiter<W: Waiter> {
    remote: W,
    to_global: Arc<[u32]>,
    /// Sleep on the fabric's side first (the port's last message came from there, or the
    /// rank is alone on its node).
    remote_first: Arc<AtomicBool>,
    /// Set after each sleep: the port's next `ready` looks at the fabric.
    slept: Arc<AtomicBool>,
    alone: bool,
}

impl<W: Waiter> FarWaiter for FabricWaiter<W> {
    fn alone(&self) -> bool {
        self.alone
    }
    /// At most two slices: the node's side's (armed by the caller), then the fabric's
    /// (armed here), in the order of `remote_first`. A message the fabric took before it
    /// was armed is thus seen within one slice, never left until the caller's timeout.
    /// The port's next `ready` looks at the fabric (its message may be what woke this).
    fn sleep(&self, node: &dyn Fn(Duration), timeout: Duration) {
        self.sleep_both(node, timeout);
        self.slept.store(true, Ordering::Relaxed);
    }
    fn lost_peer(&self, node: Option<u32>) -> Option<u32> {
        node.map(|r| job_rank(&self.to_global, r))
            .or_else(|| self.remote.lost_peer())
    }
    fn spin_floor(&self) -> Duration {
        self.remote.spin_floor()
    }
}

impl<W: Waiter> FabricWaiter<W> {
    fn sleep_both(&self, node: &dyn Fn(Duration), timeout: Duration) {
        let t0 = Instant::now();
        if self.remote_first.load(Ordering::Relaxed) {
            // The side a message is expected from first: a fabric reply is not held a
            // whole node slice (a ping-pong between nodes under the default fixed-spin
            // policy sleeps on every message). Alone on its node, only its own threads'
            // self-sends come through the lanes: a longer slice (fewer wake-ups of a
            // blocked rank, each ~10 us of CPU).
            let slice = if self.alone { ALONE_SLICE } else { SLICE };
            let t = self.remote.arm();
            self.remote.sleep(t, timeout.min(slice));
            self.remote.disarm();
            let spent = t0.elapsed();
            if self.alone || spent < SLICE / 2 || spent >= timeout {
                return;
            }
            node((timeout - spent).min(SLICE));
            return;
        }
        node(timeout.min(SLICE));
        let spent = t0.elapsed();
        if spent < SLICE / 2 || spent >= timeout {
            return; // woken by the node's side (or out of time)
        }
        let t = self.remote.arm();
        self.remote.sleep(t, (timeout - spent).min(SLICE));
        self.remote.disarm();
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

    fn waiter(alone: bool, remote_first: bool) -> (FabricWaiter<Log>, Log) {
        let remote = Log::default();
        let w = FabricWaiter {
            remote: remote.clone(),
            // Alone: the node map is this rank; else a node peer (rank 1) too.
            to_global: Arc::from(if alone { vec![0u32] } else { vec![0u32, 1] }),
            remote_first: Arc::new(AtomicBool::new(remote_first)),
            slept: Arc::new(AtomicBool::new(false)),
            alone,
        };
        (w, remote)
    }

    /// A rank alone on its node never sleeps on the node's lanes, and sleeps on the
    /// fabric in longer slices; with node peers each side sleeps a slice at most, the
    /// side the last message came from first.
    #[test]
    fn a_rank_alone_on_its_node_sleeps_on_the_fabric_only() {
        let node = Mutex::new(Vec::new());
        let on_node = |t: Duration| node.lock().unwrap().push(t);
        let (w, remote) = waiter(true, true);
        w.sleep(&on_node, Duration::from_secs(1));
        assert!(node.lock().unwrap().is_empty());
        assert_eq!(*remote.sleeps.lock().unwrap(), [ALONE_SLICE]);
        assert_eq!(*remote.arms.lock().unwrap(), 1);
        // A node peer, the last message from the node: the node's side first, one slice
        // (the test's node sleep returns at once: woken, the fabric is not slept on).
        let (w, remote) = waiter(false, false);
        w.sleep(&on_node, Duration::from_secs(1));
        assert_eq!(*node.lock().unwrap(), [SLICE]);
        assert!(remote.sleeps.lock().unwrap().is_empty());
        // The last message from the fabric: its side first, one slice.
        let (w, remote) = waiter(false, true);
        w.sleep(&on_node, Duration::from_secs(1));
        assert_eq!(*remote.sleeps.lock().unwrap(), [SLICE]);
        assert_eq!(w.lost_peer(Some(1)), Some(1));
        assert_eq!(w.lost_peer(None), None);
    }
}
