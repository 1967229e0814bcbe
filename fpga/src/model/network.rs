//! The torus between the adapters: one router per node, all stepped by the device engine
//! (`engine.rs`) through [`Network::pass`].
//!
//! Every router has, per input link and virtual channel, a bounded FIFO of
//! `ModelConfig::credits` packets, plus an injection buffer (filled by its adapter's TX
//! engine) and an ejection buffer (drained by its RX engine) of the same depth. A router
//! moves the head packet of an input only when the downstream buffer has room — that free
//! room is the credit — so a full buffer stops its upstream router, and a receiver that
//! stops draining its ejection buffer back-pressures the network up to the senders' TX
//! rings; nothing is ever dropped for lack of space. Routes are dimension-order
//! ([`topology::next_port`]) with the dateline virtual channels ([`topology::hop_vc`]):
//! channel dependencies are acyclic, so the network cannot deadlock; packets of one
//! (source, destination) pair take one path through FIFOs, so they stay in order.

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::bar::{Bar, Counter};
use super::{lock, ModelConfig, Wake};
use crate::desc::PacketHeader;
use crate::regs::{err, Dims, Link};
use crate::torus::topology::{self, Port};

/// Virtual channels per link (dateline scheme).
pub(crate) const VCS: u8 = 2;

/// A packet in flight: its header (as on the wire) and payload.
#[derive(Debug)]
pub(crate) struct Packet {
    pub hdr: PacketHeader,
    pub payload: Vec<u8>,
    /// Source and destination node ids (the router reads them from the header after its
    /// check; kept here for the routing decision of a header that passed it).
    vc: u8,
    /// Earliest time it may leave the buffer it is in (pacing), `None` = now.
    ready: Option<Instant>,
    /// Already counted as a credit stall at its current router.
    stalled: bool,
}

impl Packet {
    pub(crate) fn new(hdr: PacketHeader, payload: Vec<u8>) -> Packet {
        Packet {
            hdr,
            payload,
            vc: 0,
            ready: None,
            stalled: false,
        }
    }
}

#[derive(Default)]
struct Router {
    /// `inq[link][vc]`: packets that arrived over `link` (this node's link index).
    inq: [[VecDeque<Packet>; VCS as usize]; 6],
    inject: VecDeque<Packet>,
    eject: VecDeque<Packet>,
    /// Round-robin start among the 13 inputs.
    rr: usize,
    /// Per output link: busy transmitting until (pacing).
    busy: [Option<Instant>; 6],
}

struct NetState {
    routers: Vec<Router>,
    /// Per node: links whose cable is down.
    down: Vec<u8>,
    /// Per node: its host is gone ([`Network::set_host_gone`]); arriving packets are dropped.
    gone: Vec<bool>,
}

pub(crate) struct Network {
    dims: Dims,
    cfg: ModelConfig,
    state: Mutex<NetState>,
    /// The machine's event counter (shared with the BARs and the engine).
    wake: Arc<Wake>,
    bars: Vec<Arc<Bar>>,
    pub(crate) stop: AtomicBool,
}

/// Inputs of a router in service order: 0 = injection, 1 + 2·link + vc = links.
const INPUTS: usize = 1 + 6 * VCS as usize;

impl Network {
    pub(crate) fn new(
        dims: Dims,
        cfg: ModelConfig,
        bars: Vec<Arc<Bar>>,
        wake: Arc<Wake>,
    ) -> Network {
        let n = dims.nodes() as usize;
        Network {
            dims,
            cfg,
            state: Mutex::new(NetState {
                routers: (0..n).map(|_| Router::default()).collect(),
                down: vec![0; n],
                gone: vec![false; n],
            }),
            wake,
            bars,
            stop: AtomicBool::new(false),
        }
    }

    /// Puts a packet into `node`'s injection buffer, or hands it back when it is full.
    pub(crate) fn try_inject(&self, node: u16, p: Packet) -> Result<(), Packet> {
        {
            let mut s = lock(&self.state);
            let Some(r) = s.routers.get_mut(node as usize) else {
                return Err(p);
            };
            if r.inject.len() >= self.cfg.credits {
                return Err(p);
            }
            r.inject.push_back(p);
        }
        Ok(())
    }

    /// Takes the oldest packet of `node`'s ejection buffer.
    pub(crate) fn pop_eject(&self, node: u16) -> Option<Packet> {
        lock(&self.state)
            .routers
            .get_mut(node as usize)?
            .eject
            .pop_front()
    }

    /// Whether the dimension-order route `src → dst` uses only links that are up.
    pub(crate) fn route_up(&self, src: u16, dst: u16) -> bool {
        let s = lock(&self.state);
        topology::route(&self.dims, VCS, src, dst).iter().all(|h| {
            s.down
                .get(h.node as usize)
                .is_some_and(|d| d & (1 << h.port.index()) == 0)
        })
    }

    /// Records a cable fault on `node`'s `link` (and the neighbour's opposite link).
    pub(crate) fn set_link(&self, node: u16, nb: u16, link: Link, up: bool) {
        let mut s = lock(&self.state);
        for (n, l) in [(node, link), (nb, link.opposite())] {
            if let Some(d) = s.down.get_mut(n as usize) {
                if up {
                    *d &= !(1 << l.index());
                } else {
                    *d |= 1 << l.index();
                }
            }
        }
    }

    /// Node `node`'s host is gone: packets that arrive for it from now on, and those
    /// waiting in its ejection buffer, are dropped (counted in its `CNT_RX_DROPPED`).
    pub(crate) fn set_host_gone(&self, node: u16) {
        let dropped = {
            let mut s = lock(&self.state);
            let Some(g) = s.gone.get_mut(node as usize) else {
                return;
            };
            *g = true;
            let r = &mut s.routers[node as usize];
            let n = r.eject.len();
            r.eject.clear();
            n
        };
        if let Some(b) = self.bars.get(node as usize) {
            b.count(Counter::RxDropped, dropped as u64);
        }
        self.wake.notify();
    }

    /// One sweep over every router; each input moves at most one packet.
    pub(crate) fn pass(&self) -> (bool, Option<Instant>) {
        let now = Instant::now();
        let mut moved = false;
        let mut next: Option<Instant> = None;
        let mut corrupt = Vec::new();
        let cap = self.cfg.credits;
        {
            let mut s = lock(&self.state);
            let st = &mut *s;
            let (routers, gone) = (&mut st.routers, &st.gone);
            let nodes = routers.len();
            for n in 0..nodes {
                let start = routers[n].rr;
                routers[n].rr = (start + 1) % INPUTS;
                for k in 0..INPUTS {
                    let input = (start + k) % INPUTS;
                    let (from_link, queue_vc) = if input == 0 {
                        (None, 0)
                    } else {
                        (Some((input - 1) / 2), ((input - 1) % 2) as u8)
                    };
                    let q = match from_link {
                        None => &mut routers[n].inject,
                        Some(l) => &mut routers[n].inq[l][queue_vc as usize],
                    };
                    let Some(p) = q.front_mut() else { continue };
                    if let Some(at) = p.ready {
                        if at > now {
                            next = Some(next.map_or(at, |x| x.min(at)));
                            continue;
                        }
                    }
                    // The router checks every header it forwards.
                    if p.hdr.check_format().is_err() {
                        q.pop_front();
                        corrupt.push(n);
                        moved = true;
                        continue;
                    }
                    let f = p.hdr.fields();
                    let here = n as u16;
                    if f.dst_node as usize >= nodes || f.src_node as usize >= nodes {
                        q.pop_front();
                        corrupt.push(n);
                        moved = true;
                        continue;
                    }
                    let Some(port) = topology::next_port(&self.dims, f.src_node, here, f.dst_node)
                    else {
                        // Arrived: eject (or drop, when the host is gone).
                        if gone[n] {
                            if take(&mut routers[n], from_link, queue_vc).is_some() {
                                self.bars[n].count(Counter::RxDropped, 1);
                                moved = true;
                            }
                            continue;
                        }
                        if routers[n].eject.len() < cap {
                            let Some(mut p) = take(&mut routers[n], from_link, queue_vc) else {
                                continue;
                            };
                            p.stalled = false;
                            routers[n].eject.push_back(p);
                            moved = true;
                        }
                        continue;
                    };
                    let prev = from_link.map(|l| (l / 2, queue_vc));
                    let vc = topology::hop_vc(&self.dims, VCS, prev, here, port);
                    let m = self.dims.next_node(here, port) as usize;
                    let arrive = port.opposite().index() as usize;
                    if let Some(b) = routers[n].busy[port.index() as usize] {
                        if b > now {
                            next = Some(next.map_or(b, |x| x.min(b)));
                            continue;
                        }
                    }
                    if routers[m].inq[arrive][vc as usize].len() >= cap {
                        let q = match from_link {
                            None => &mut routers[n].inject,
                            Some(l) => &mut routers[n].inq[l][queue_vc as usize],
                        };
                        if let Some(p) = q.front_mut() {
                            if !p.stalled {
                                p.stalled = true;
                                self.bars[n].count(Counter::CreditStalls, 1);
                            }
                        }
                        continue;
                    }
                    let Some(mut p) = take(&mut routers[n], from_link, queue_vc) else {
                        continue;
                    };
                    if from_link.is_some() {
                        self.bars[n].count(Counter::FwdPkts, 1);
                    }
                    p.stalled = false;
                    p.vc = vc;
                    p.ready = self.pace(&mut routers[n], port, p.payload.len(), now);
                    routers[m].inq[arrive][vc as usize].push_back(p);
                    moved = true;
                }
            }
        }
        for n in corrupt {
            self.bars[n].count(Counter::PktCorrupt, 1);
            self.bars[n].raise_err(err::PKT_CORRUPT);
        }
        (moved, next)
    }

    /// With pacing on: occupies the output link for the packet's serialisation time and
    /// returns when the packet is usable at the far end.
    fn pace(&self, r: &mut Router, port: Port, payload: usize, now: Instant) -> Option<Instant> {
        let lat = self.cfg.link_latency;
        let bw = self.cfg.link_bandwidth;
        if lat.is_zero() && bw == 0.0 {
            return None;
        }
        let ser = if bw > 0.0 {
            Duration::from_secs_f64((payload + PacketHeader::SIZE) as f64 / bw)
        } else {
            Duration::ZERO
        };
        let done = now + ser;
        r.busy[port.index() as usize] = Some(done);
        Some(done + lat)
    }
}

fn take(r: &mut Router, from_link: Option<usize>, vc: u8) -> Option<Packet> {
    match from_link {
        None => r.inject.pop_front(),
        Some(l) => r.inq[l][vc as usize].pop_front(),
    }
}
