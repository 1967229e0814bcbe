//! The discrete-event network: adapters (NICs), routers, links, credits.
//!
//! Time is kept in whole picoseconds (`u64`) so that runs are exactly reproducible; the API
//! speaks nanoseconds (`f64`). Events sit in a binary heap ordered by (time, sequence number):
//! equal times are handled in the order they were scheduled, so a run depends only on its
//! inputs. Blocked packets schedule nothing — a port that cannot send waits for a credit or
//! for itself to become free — so an empty event queue with packets still inside means that
//! nothing can ever move again: a deadlock, reported with the cycle of full buffers.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;

use super::config::Config;
use super::topology::{hop_vc, next_port, Dims, NodeId, Port};
use crate::{Error, Result};

/// A message handed to a node's adapter. The network splits it into packets of at most
/// [`Config::max_payload`] bytes and reports it delivered when its last packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// Caller's identifier, returned in [`Delivered`].
    pub id: u64,
    /// Source node.
    pub src: NodeId,
    /// Destination node.
    pub dst: NodeId,
    /// Payload bytes (0 is allowed: one header-only packet).
    pub bytes: u32,
    /// Caller's tag (e.g. the destination channel), returned unchanged.
    pub tag: u32,
}

/// A message whose last packet left the destination adapter into host memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Delivered {
    /// The message's [`Message::id`].
    pub id: u64,
    /// Source node.
    pub src: NodeId,
    /// Destination node.
    pub dst: NodeId,
    /// Payload bytes.
    pub bytes: u32,
    /// The message's [`Message::tag`].
    pub tag: u32,
    /// When the source adapter injected the first packet, ns of simulated time.
    pub inject_ns: f64,
    /// When the last packet reached the destination's host memory, ns.
    pub deliver_ns: f64,
    /// Links crossed (the torus distance under dimension-order routing).
    pub hops: u32,
}

/// A packet discarded because its next link was down (see [`Network::set_link`]). Its
/// message is never delivered.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dropped {
    /// The message's [`Message::id`].
    pub id: u64,
    /// Source node.
    pub src: NodeId,
    /// Destination node.
    pub dst: NodeId,
    /// The router that held the packet and the failed port it needed.
    pub node: NodeId,
    /// The failed port (see `node`).
    pub port: Port,
    /// When the packet was dropped, ns.
    pub at_ns: f64,
}

/// Use of one directed link since the network was created.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkStats {
    /// The link leaves `node` through `port`.
    pub node: NodeId,
    /// The port the link leaves by.
    pub port: Port,
    /// Time spent transmitting, ns (utilisation = `busy_ns` / elapsed time).
    pub busy_ns: f64,
    /// Packets sent over the link.
    pub packets: u64,
    /// Wire bytes (payload + overhead).
    pub bytes: u64,
}

/// A cycle of full input buffers, each one's head packet waiting for a credit of the next:
/// `(node, port, vc)` names the buffer at the far end of the link leaving `node` by `port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlock {
    /// The buffers of the cycle, in wait order.
    pub cycle: Vec<(NodeId, Port, u8)>,
    /// Packets inside the network plus messages still waiting in adapters.
    pub stuck: usize,
}

impl fmt::Display for Deadlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "deadlock: {} packets/messages cannot move; cycle of full buffers:",
            self.stuck
        )?;
        for (n, p, vc) in &self.cycle {
            write!(f, " node{n}.{p}.vc{vc} ->")?;
        }
        match self.cycle.first() {
            Some((n, p, vc)) => write!(f, " node{n}.{p}.vc{vc}"),
            None => write!(f, " (no cycle found: adapters blocked)"),
        }
    }
}

const NONE_DIM: u8 = 255;
const PS_PER_NS: f64 = 1000.0;

fn to_ps(ns: f64) -> u64 {
    (ns * PS_PER_NS).round() as u64
}

fn to_ns(ps: u64) -> f64 {
    ps as f64 / PS_PER_NS
}

fn ser_ps(bytes: u32, bw: f64) -> u64 {
    (bytes as f64 * PS_PER_NS / bw).ceil() as u64
}

/// A message inside an adapter or the network.
#[derive(Clone, Copy, Debug)]
struct Msg {
    id: u64,
    tag: u32,
    bytes: u32,
    src: NodeId,
    dst: NodeId,
    inject_ps: u64,
    /// Packets created by the adapter so far.
    sent: u32,
    /// Packets not yet delivered or dropped.
    left: u32,
    hops: u8,
    failed: bool,
}

/// A packet between its adapters.
#[derive(Clone, Copy, Debug)]
struct Pkt {
    msg: u32,
    src: NodeId,
    dst: NodeId,
    /// Router holding the packet.
    cur: NodeId,
    wire: u32,
    /// When the packet's tail is in `cur`'s buffer (cut-through: the head goes on earlier).
    tail_ps: u64,
    /// Input buffer holding it (see [`Network::inject_input`]).
    input: u32,
    /// Output port it asks for and the VC it will use there.
    port: u32,
    vc: u8,
    dim: u8,
    hops: u8,
}

#[derive(Clone, Debug, Default)]
struct OutPort {
    busy_until: u64,
    /// Inputs whose head packet asks for this port, oldest first (FIFO arbitration).
    waiters: VecDeque<u32>,
    /// Free slots in the downstream buffer of each VC.
    credits: [u32; 2],
    /// A `PortFree` event is scheduled.
    wake: bool,
    down: bool,
    busy_ps: u64,
    packets: u64,
    bytes: u64,
}

#[derive(Clone, Debug, Default)]
struct Nic {
    queue: VecDeque<u32>,
    /// A `NicStep` is scheduled (the DMA engine is occupied).
    busy: bool,
    /// Free flits in the router's injection buffer.
    credits: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    Inject(u32),
    NicStep(NodeId),
    NicCredit(NodeId, u32),
    Arrive(u32),
    PortFree(u32),
    Credit(u32, u8, u32),
    Deliver(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    t: u64,
    seq: u64,
    ev: Ev,
}

impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        // Min-heap on (time, sequence).
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// The torus network: inject messages, advance time, collect deliveries.
///
/// Output ports are numbered `6·node + port` for links and `6·N + node` for the ejection
/// port into the host; input buffers `2·link + vc` for links and `12·N + node` for the
/// adapter's injection buffer.
///
/// # Examples
/// ```
/// use fpga::torus::{Config, Dims, Message, Network};
/// let cfg = Config { dims: Dims::new(4, 4, 4).unwrap(), ..Config::default() };
/// let mut net = Network::new(cfg.clone()).unwrap();
/// net.inject(0.0, Message { id: 7, src: 0, dst: 42, bytes: 8, tag: 0 }).unwrap();
/// let got = net.run().unwrap();
/// assert_eq!(got.len(), 1);
/// assert_eq!(got[0].hops, net.dims().distance(0, 42));
/// assert!((got[0].deliver_ns - cfg.zero_load_ns(got[0].hops, 8)).abs() < 0.01);
/// ```
pub struct Network {
    cfg: Config,
    n: usize,
    link_ps: u64,
    router_ps: u64,
    nic_msg_ps: u64,
    now: u64,
    seq: u64,
    heap: BinaryHeap<Entry>,
    ports: Vec<OutPort>,
    inputs: Vec<VecDeque<u32>>,
    nics: Vec<Nic>,
    msgs: Vec<Msg>,
    free_msgs: Vec<u32>,
    pkts: Vec<Pkt>,
    free_pkts: Vec<u32>,
    /// Ports that may be able to send (processed after each event).
    work: Vec<u32>,
    in_flight: usize,
    queued_msgs: usize,
    dropped: Vec<Dropped>,
    deadlock: Option<Deadlock>,
}

impl Network {
    /// A network at time 0 with empty buffers and all links up.
    pub fn new(cfg: Config) -> Result<Network> {
        cfg.validate()?;
        let n = cfg.dims.nodes() as usize;
        let vcs = cfg.vcs as usize;
        let mut ports = vec![OutPort::default(); 7 * n];
        for p in &mut ports[..6 * n] {
            for c in &mut p.credits[..vcs] {
                *c = cfg.buf_flits;
            }
        }
        let nics = (0..n)
            .map(|_| Nic {
                credits: cfg.buf_flits,
                ..Nic::default()
            })
            .collect();
        Ok(Network {
            link_ps: to_ps(cfg.link_ns),
            router_ps: to_ps(cfg.router_ns),
            nic_msg_ps: to_ps(cfg.nic_msg_ns),
            n,
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            ports,
            inputs: vec![VecDeque::new(); 13 * n],
            nics,
            msgs: Vec::new(),
            free_msgs: Vec::new(),
            pkts: Vec::new(),
            free_pkts: Vec::new(),
            work: Vec::new(),
            in_flight: 0,
            queued_msgs: 0,
            dropped: Vec::new(),
            deadlock: None,
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The torus size.
    pub fn dims(&self) -> &Dims {
        &self.cfg.dims
    }

    /// Current simulated time, ns.
    pub fn now_ns(&self) -> f64 {
        to_ns(self.now)
    }

    /// Time of the next pending event, if any (a driver can sleep until then).
    pub fn next_event_ns(&self) -> Option<f64> {
        self.heap.peek().map(|e| to_ns(e.t))
    }

    /// Packets inside the network plus messages not yet fully handed to it by adapters.
    pub fn in_flight(&self) -> usize {
        self.in_flight + self.queued_msgs
    }

    /// Hands `msg` to its source adapter at `time_ns` (not before [`now_ns`](Self::now_ns)).
    ///
    /// Errors: a node out of range, a time in the past, or a route that needs a link that is
    /// down (the message is then not injected).
    pub fn inject(&mut self, time_ns: f64, msg: Message) -> Result<()> {
        let n = self.n;
        if msg.src as usize >= n || msg.dst as usize >= n {
            return Err(Error::BadConfig(format!(
                "message {}: node {} or {} outside a {}-node torus",
                msg.id, msg.src, msg.dst, n
            )));
        }
        let t = to_ps(time_ns);
        if !time_ns.is_finite() || time_ns < 0.0 || t < self.now {
            return Err(Error::BadConfig(format!(
                "message {}: injection time {time_ns} ns is before now ({} ns)",
                msg.id,
                self.now_ns()
            )));
        }
        if let Some((node, port)) = self.route_down(msg.src, msg.dst) {
            return Err(Error::LinkDown(format!(
                "message {}: route {} -> {} needs link node{node}.{port}, which is down",
                msg.id, msg.src, msg.dst
            )));
        }
        let m = Msg {
            id: msg.id,
            tag: msg.tag,
            bytes: msg.bytes,
            src: msg.src,
            dst: msg.dst,
            inject_ps: t,
            sent: 0,
            left: self.cfg.packets(msg.bytes),
            hops: 0,
            failed: false,
        };
        let idx = match self.free_msgs.pop() {
            Some(i) => {
                self.msgs[i as usize] = m;
                i
            }
            None => {
                self.msgs.push(m);
                (self.msgs.len() - 1) as u32
            }
        };
        self.queued_msgs += 1;
        if t == self.now {
            self.nic_enqueue(idx);
        } else {
            self.schedule(t, Ev::Inject(idx));
        }
        Ok(())
    }

    /// Takes a link down (`up == false`) or back up. Packets that reach a down link are
    /// dropped (see [`take_dropped`](Self::take_dropped)); packets already on the wire arrive.
    pub fn set_link(&mut self, node: NodeId, port: Port, up: bool) -> Result<()> {
        let link = self.link_id(node, port)?;
        self.ports[link as usize].down = !up;
        if !up {
            self.work.push(link);
            self.drain_work();
        }
        Ok(())
    }

    /// Whether the link leaving `node` by `port` is up.
    pub fn link_up(&self, node: NodeId, port: Port) -> Result<bool> {
        Ok(!self.ports[self.link_id(node, port)? as usize].down)
    }

    /// Packets dropped at down links since the last call.
    pub fn take_dropped(&mut self) -> Vec<Dropped> {
        std::mem::take(&mut self.dropped)
    }

    /// The deadlock found by the last run, if any.
    pub fn deadlock(&self) -> Option<&Deadlock> {
        self.deadlock.as_ref()
    }

    /// Per-link statistics of every existing link (dimensions of size 1 have none).
    pub fn link_stats(&self) -> Vec<LinkStats> {
        let dims = self.cfg.dims;
        (0..self.n as NodeId)
            .flat_map(|node| Port::ALL.into_iter().map(move |port| (node, port)))
            .filter(|&(_, port)| dims.extents()[port.axis()] > 1)
            .map(|(node, port)| {
                let p = &self.ports[node as usize * 6 + port.index() as usize];
                LinkStats {
                    node,
                    port,
                    busy_ns: to_ns(p.busy_ps),
                    packets: p.packets,
                    bytes: p.bytes,
                }
            })
            .collect()
    }

    /// Runs every event up to and including `time_ns`, then sets the clock to `time_ns`.
    /// Each delivered message is passed to `on_delivery` in delivery order.
    ///
    /// Errors: a deadlock (only possible with `vcs == 1`); the network then stays stuck.
    pub fn run_until_with(
        &mut self,
        time_ns: f64,
        mut on_delivery: impl FnMut(&Delivered),
    ) -> Result<()> {
        let limit = if time_ns.is_finite() {
            to_ps(time_ns.max(0.0))
        } else {
            u64::MAX
        };
        while let Some(e) = self.heap.peek() {
            if e.t > limit {
                break;
            }
            let e = self.heap.pop().expect("peeked");
            self.now = e.t;
            self.handle(e.ev, &mut on_delivery);
            self.drain_work();
        }
        if self.heap.is_empty() && self.in_flight() > 0 {
            let d = self.find_deadlock();
            let cycle = d.to_string();
            self.deadlock = Some(d);
            return Err(Error::Deadlock { cycle });
        }
        if limit != u64::MAX {
            self.now = self.now.max(limit);
        }
        Ok(())
    }

    /// [`run_until_with`](Self::run_until_with), collecting the deliveries.
    pub fn run_until(&mut self, time_ns: f64) -> Result<Vec<Delivered>> {
        let mut out = Vec::new();
        self.run_until_with(time_ns, |d| out.push(*d))?;
        Ok(out)
    }

    /// Runs until nothing is left to do (every message delivered or dropped).
    pub fn run(&mut self) -> Result<Vec<Delivered>> {
        self.run_until(f64::INFINITY)
    }

    fn link_id(&self, node: NodeId, port: Port) -> Result<u32> {
        if node as usize >= self.n || self.cfg.dims.extents()[port.axis()] < 2 {
            return Err(Error::BadConfig(format!(
                "no link node{node}.{port} in a {} torus",
                self.cfg.dims
            )));
        }
        Ok(node as u32 * 6 + port.index() as u32)
    }

    fn route_down(&self, src: NodeId, dst: NodeId) -> Option<(NodeId, Port)> {
        let dims = &self.cfg.dims;
        let mut cur = src;
        while let Some(port) = next_port(dims, src, cur, dst) {
            if self.ports[cur as usize * 6 + port.index() as usize].down {
                return Some((cur, port));
            }
            cur = dims.next_node(cur, port);
        }
        None
    }

    fn inject_input(&self, node: NodeId) -> u32 {
        (12 * self.n) as u32 + node as u32
    }

    fn schedule(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry {
            t,
            seq: self.seq,
            ev,
        });
    }

    fn handle(&mut self, ev: Ev, on_delivery: &mut impl FnMut(&Delivered)) {
        match ev {
            Ev::Inject(m) => self.nic_enqueue(m),
            Ev::NicStep(node) => {
                self.nics[node as usize].busy = false;
                self.nic_step(node);
            }
            Ev::NicCredit(node, flits) => {
                self.nics[node as usize].credits += flits;
                self.nic_step(node);
            }
            Ev::Arrive(p) => self.arrive(p),
            Ev::PortFree(port) => {
                self.ports[port as usize].wake = false;
                self.work.push(port);
            }
            Ev::Credit(port, vc, flits) => {
                self.ports[port as usize].credits[vc as usize] += flits;
                self.work.push(port);
            }
            Ev::Deliver(p) => {
                let pk = self.pkts[p as usize];
                self.free_pkt(p);
                let m = &mut self.msgs[pk.msg as usize];
                m.hops = m.hops.max(pk.hops);
                if let Some(d) = self.packet_done(pk.msg) {
                    on_delivery(&d);
                }
            }
        }
    }

    fn nic_enqueue(&mut self, m: u32) {
        let node = self.msgs[m as usize].src;
        self.nics[node as usize].queue.push_back(m);
        self.nic_step(node);
    }

    /// The adapter's DMA engine takes the next packet of its oldest message, if it is idle
    /// and the router has room.
    fn nic_step(&mut self, node: NodeId) {
        let nic = &mut self.nics[node as usize];
        if nic.busy {
            return;
        }
        let Some(&mi) = nic.queue.front() else { return };
        let m = &mut self.msgs[mi as usize];
        let first = m.sent == 0;
        let max = self.cfg.max_payload;
        let payload = m.bytes.saturating_sub(m.sent.saturating_mul(max)).min(max);
        let wire = payload + self.cfg.overhead;
        let flits = self.cfg.flits(wire);
        if nic.credits < flits {
            return;
        }
        m.sent += 1;
        if m.sent == self.cfg.packets(m.bytes) {
            nic.queue.pop_front();
            self.queued_msgs -= 1;
        }
        nic.credits -= flits;
        nic.busy = true;
        let input = (12 * self.n) as u32 + node as u32;
        let head = self.now + if first { self.nic_msg_ps } else { 0 };
        let tail = head + ser_ps(wire, self.cfg.inject_bw);
        let pk = Pkt {
            msg: mi,
            src: m.src,
            dst: m.dst,
            cur: node,
            wire,
            tail_ps: tail,
            input,
            port: 0,
            vc: 0,
            dim: NONE_DIM,
            hops: 0,
        };
        let p = self.alloc_pkt(pk);
        self.in_flight += 1;
        self.schedule(head, Ev::Arrive(p));
        self.schedule(tail, Ev::NicStep(node));
    }

    /// The packet's head is through the router pipeline at `cur`: route it and queue it.
    fn arrive(&mut self, p: u32) {
        let dims = self.cfg.dims;
        let pk = &mut self.pkts[p as usize];
        match next_port(&dims, pk.src, pk.cur, pk.dst) {
            None => {
                pk.port = (6 * self.n) as u32 + pk.cur as u32;
                pk.vc = 0;
            }
            Some(port) => {
                let prev = (pk.dim != NONE_DIM).then_some((pk.dim as usize, pk.vc));
                pk.vc = hop_vc(&dims, self.cfg.vcs, prev, pk.cur, port);
                pk.port = pk.cur as u32 * 6 + port.index() as u32;
            }
        }
        let input = pk.input;
        let q = &mut self.inputs[input as usize];
        q.push_back(p);
        if q.len() == 1 {
            self.request(input);
        }
    }

    /// The head packet of `input` asks for its output port.
    fn request(&mut self, input: u32) {
        let p = self.inputs[input as usize][0];
        let port = self.pkts[p as usize].port;
        self.ports[port as usize].waiters.push_back(input);
        self.work.push(port);
    }

    fn drain_work(&mut self) {
        while let Some(port) = self.work.pop() {
            self.try_port(port);
        }
    }

    /// Sends the oldest waiting packet that has a credit, if the port is free.
    fn try_port(&mut self, port: u32) {
        let eject = port as usize >= 6 * self.n;
        if self.ports[port as usize].down {
            return self.drop_waiters(port);
        }
        let op = &mut self.ports[port as usize];
        if op.waiters.is_empty() {
            return;
        }
        if op.busy_until > self.now {
            if !op.wake {
                op.wake = true;
                let t = op.busy_until;
                self.schedule(t, Ev::PortFree(port));
            }
            return;
        }
        let (inputs, pkts, cfg) = (&self.inputs, &self.pkts, &self.cfg);
        let pick = op.waiters.iter().position(|&i| {
            let pk = &pkts[inputs[i as usize][0] as usize];
            eject || op.credits[pk.vc as usize] >= cfg.flits(pk.wire)
        });
        if let Some(k) = pick {
            let input = op.waiters.remove(k).expect("position is in range");
            self.send(input, port, eject);
        }
    }

    fn send(&mut self, input: u32, port: u32, eject: bool) {
        let p = self.inputs[input as usize]
            .pop_front()
            .expect("a waiter has a head packet");
        let now = self.now;
        let bw = if eject {
            self.cfg.eject_bw
        } else {
            self.cfg.link_bw
        };
        let (link_ps, router_ps) = (self.link_ps, self.router_ps);
        let pk = &mut self.pkts[p as usize];
        let finish = (now + ser_ps(pk.wire, bw)).max(pk.tail_ps);
        let op = &mut self.ports[port as usize];
        op.busy_until = finish;
        op.busy_ps += finish - now;
        op.packets += 1;
        op.bytes += pk.wire as u64;
        let more = !op.waiters.is_empty();
        if eject {
            self.schedule(finish, Ev::Deliver(p));
        } else {
            op.credits[pk.vc as usize] -= self.cfg.flits(pk.wire);
            let dir = Port::ALL[(port % 6) as usize];
            pk.hops += 1;
            pk.dim = dir.axis() as u8;
            pk.input = 2 * port + pk.vc as u32;
            pk.cur = self.cfg.dims.next_node(pk.cur, dir);
            pk.tail_ps = finish + link_ps + router_ps;
            self.schedule(now + link_ps + router_ps, Ev::Arrive(p));
        }
        if more {
            self.work.push(port);
        }
        let flits = self.cfg.flits(self.pkts[p as usize].wire);
        self.release_input(input, finish, flits);
    }

    /// The buffer slot of `input` frees when the tail has left (`at`): return the credit
    /// upstream and let the next head packet ask for its port.
    fn release_input(&mut self, input: u32, at: u64, flits: u32) {
        let inj = self.inject_input(0);
        if input >= inj {
            self.schedule(at, Ev::NicCredit((input - inj) as NodeId, flits));
        } else {
            let t = at + self.link_ps;
            self.schedule(t, Ev::Credit(input / 2, (input % 2) as u8, flits));
        }
        if !self.inputs[input as usize].is_empty() {
            self.request(input);
        }
    }

    fn drop_waiters(&mut self, port: u32) {
        while let Some(input) = self.ports[port as usize].waiters.pop_front() {
            let p = self.inputs[input as usize]
                .pop_front()
                .expect("a waiter has a head packet");
            let pk = self.pkts[p as usize];
            self.free_pkt(p);
            let m = &mut self.msgs[pk.msg as usize];
            m.failed = true;
            self.dropped.push(Dropped {
                id: m.id,
                src: m.src,
                dst: m.dst,
                node: pk.cur,
                port: Port::ALL[(port % 6) as usize],
                at_ns: to_ns(self.now),
            });
            self.packet_done(pk.msg);
            self.release_input(input, self.now, self.cfg.flits(pk.wire));
        }
    }

    /// A packet of message `mi` left the network; the message's record when it was the last.
    fn packet_done(&mut self, mi: u32) -> Option<Delivered> {
        let m = &mut self.msgs[mi as usize];
        m.left -= 1;
        if m.left > 0 {
            return None;
        }
        self.free_msgs.push(mi);
        (!m.failed).then(|| Delivered {
            id: m.id,
            src: m.src,
            dst: m.dst,
            bytes: m.bytes,
            tag: m.tag,
            inject_ns: to_ns(m.inject_ps),
            deliver_ns: to_ns(self.now),
            hops: m.hops as u32,
        })
    }

    fn alloc_pkt(&mut self, pk: Pkt) -> u32 {
        match self.free_pkts.pop() {
            Some(i) => {
                self.pkts[i as usize] = pk;
                i
            }
            None => {
                self.pkts.push(pk);
                (self.pkts.len() - 1) as u32
            }
        }
    }

    fn free_pkt(&mut self, p: u32) {
        self.free_pkts.push(p);
        self.in_flight -= 1;
    }

    /// Follows "head of this full buffer waits for that buffer" from every non-empty link
    /// buffer until a buffer repeats.
    fn find_deadlock(&self) -> Deadlock {
        let nbuf = 12 * self.n;
        let next = |b: usize| -> Option<usize> {
            let p = *self.inputs[b].front()?;
            let port = self.pkts[p as usize].port as usize;
            (port < 6 * self.n).then(|| 2 * port + self.pkts[p as usize].vc as usize)
        };
        let mut seen = vec![usize::MAX; nbuf];
        let mut cycle = Vec::new();
        for start in 0..nbuf {
            if seen[start] != usize::MAX {
                continue;
            }
            let mut b = start;
            while seen[b] == usize::MAX {
                seen[b] = start;
                match next(b) {
                    Some(nb) => b = nb,
                    None => break,
                }
            }
            if seen[b] == start && next(b).is_some() {
                let first = b;
                loop {
                    let link = b / 2;
                    cycle.push(((link / 6) as NodeId, Port::ALL[link % 6], (b % 2) as u8));
                    b = next(b).expect("on a cycle");
                    if b == first {
                        break;
                    }
                }
                break;
            }
        }
        Deadlock {
            cycle,
            stuck: self.in_flight(),
        }
    }
}
