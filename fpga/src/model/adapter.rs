//! One adapter's engines, stepped by the device engine (`engine.rs`): TX (descriptors → packets), RX (packets →
//! RX data ring + completions), both against the host memory the driver registered.
//!
//! Every step starts from a [`Snapshot`] of the control state; register updates go
//! through [`Bar::dev`] with the step's reset epoch, so nothing from before a
//! `CTRL.RESET` lands after it. What the driver wrote (descriptors, doorbells) is copied
//! once and checked before use; a failed check is an `ERR_STATUS` bit, never a panic.

use std::collections::VecDeque;
use std::sync::Arc;

use super::bar::{Bar, Counter, RingCfg, RxqCfg, Snapshot};
use super::network::{Network, Packet, VCS};
use super::{HostMemory, ModelConfig};
use crate::desc::{
    self, addr_node, addr_port, rx_status, tx_flags, Limits, PacketFields, PacketHeader,
    RxCompletion, TxDesc,
};
use crate::regs::{self, err, irq, rxq};

/// Most descriptors or packets one engine handles per step before the other gets a turn.
const BUDGET: usize = 64;

/// A message the TX engine is cutting into packets.
struct TxMsg {
    dst: u16,
    dst_port: u16,
    src_port: u16,
    data: Vec<u8>,
    /// Offset of the next packet to build.
    next: u32,
    done: bool,
    /// A packet the injection buffer refused, to offer again.
    held: Option<Packet>,
}

/// A message being reassembled (one per source node: sources never interleave).
struct Ctx {
    src_port: u16,
    dst_port: u16,
    data: Vec<u8>,
    next_off: u32,
    next_seq: u8,
    status: u16,
}

/// A message ready for an RX queue.
struct RxMsg {
    src: u16,
    src_port: u16,
    dst_port: u16,
    data: Vec<u8>,
    status: u16,
}

impl Ctx {
    fn finish(self, src: u16, extra: u16) -> RxMsg {
        RxMsg {
            src,
            src_port: self.src_port,
            dst_port: self.dst_port,
            data: self.data,
            status: self.status | extra,
        }
    }
}

/// The device's trusted view of one RX queue.
#[derive(Clone, Copy, Default)]
struct RxqState {
    /// Free-running write position (bytes).
    wpos: u64,
    /// Last accepted RX_FREE.
    free: u32,
    /// Completions written (= RXC_HEAD).
    chead: u32,
    /// Last accepted RXC_TAIL.
    ctail: u32,
}

/// Everything a RESET throws away.
struct State {
    epoch: u64,
    tx_head: u32,
    last_tail: u32,
    tx: Option<TxMsg>,
    tx_stalled: bool,
    /// Packet sequence per destination node.
    tx_seq: Vec<u8>,
    ctx: Vec<Option<Ctx>>,
    pending: VecDeque<RxMsg>,
    rxq: Vec<RxqState>,
    rx_stalled: bool,
}

impl State {
    fn new(epoch: u64, nodes: usize) -> State {
        State {
            epoch,
            tx_head: 0,
            last_tail: 0,
            tx: None,
            tx_stalled: false,
            tx_seq: vec![0; nodes],
            ctx: (0..nodes).map(|_| None).collect(),
            pending: VecDeque::new(),
            rxq: Vec::new(),
            rx_stalled: false,
        }
    }
}

/// A step was cut short: the adapter halted or was reset under it.
struct Stop;

pub(crate) struct Adapter {
    node: u16,
    bar: Arc<Bar>,
    mem: Arc<dyn HostMemory>,
    net: Arc<Network>,
    cfg: ModelConfig,
    limits: Limits,
    nodes: usize,
    st: State,
}

impl Adapter {
    pub(crate) fn new(
        node: u16,
        bar: Arc<Bar>,
        mem: Arc<dyn HostMemory>,
        net: Arc<Network>,
        cfg: ModelConfig,
    ) -> crate::Result<Adapter> {
        let dims = bar.dims();
        let ports = 1u32 << cfg.log2_ports;
        let limits = Limits::new(dims, ports, VCS, desc::MAX_MSG)?;
        let nodes = dims.nodes() as usize;
        Ok(Adapter {
            node,
            bar,
            mem,
            net,
            cfg,
            limits,
            nodes,
            st: State::new(0, nodes),
        })
    }

    /// The engine has stopped stepping this adapter: resets complete at once again.
    pub(crate) fn detach(&self) {
        self.bar.detach();
    }

    /// One step of both engines; `true` if anything happened.
    pub(crate) fn step(&mut self) -> bool {
        let snap: Snapshot = self.bar.snapshot();
        if snap.epoch != self.st.epoch || snap.reset_pending {
            self.st = State::new(snap.epoch, self.nodes);
            self.bar.ack_reset(snap.epoch);
            return true;
        }
        let Some(cfg) = snap.cfg else { return false };
        if self.st.rxq.len() != cfg.rxq.len() {
            self.st.rxq.resize(cfg.rxq.len(), RxqState::default());
        }
        let tx = self.tx_step(&cfg);
        let rx = self.rx_step(&cfg);
        matches!(tx, Ok(true) | Err(Stop)) || matches!(rx, Ok(true) | Err(Stop))
    }

    /// Sets error bits (and halts if fatal); always ends the step.
    fn fail(&self, bits: u32, tx_index: Option<u32>) -> Stop {
        self.bar.dev(self.st.epoch, |r| r.err(bits, tx_index));
        Stop
    }

    fn regs<R>(&self, f: impl FnOnce(&super::bar::DevRegs<'_>) -> R) -> Result<R, Stop> {
        self.bar.dev(self.st.epoch, f).ok_or(Stop)
    }

    // ---- TX ----------------------------------------------------------------------------

    fn tx_step(&mut self, cfg: &RingCfg) -> Result<bool, Stop> {
        let mut progress = false;
        for _ in 0..BUDGET {
            if self.st.tx.is_some() {
                if !self.inject()? {
                    return Ok(progress);
                }
                progress = true;
                continue;
            }
            if !self.take_descriptor(cfg)? {
                return Ok(progress);
            }
            progress = true;
        }
        Ok(progress)
    }

    /// Offers the current message's packets to the router; `true` when all went.
    fn inject(&mut self) -> Result<bool, Stop> {
        while let Some(p) = self.next_packet()? {
            let len = p.payload.len() as u64;
            match self.net.try_inject(self.node, p) {
                Ok(()) => {
                    self.st.tx_stalled = false;
                    self.bar.count(Counter::TxPkts, 1);
                    self.bar.count(Counter::TxBytes, len);
                }
                Err(p) => {
                    if let Some(m) = self.st.tx.as_mut() {
                        m.held = Some(p);
                    }
                    if !self.st.tx_stalled {
                        self.st.tx_stalled = true;
                        self.bar.count(Counter::CreditStalls, 1);
                    }
                    return Ok(false);
                }
            }
        }
        self.st.tx = None;
        Ok(true)
    }

    fn next_packet(&mut self) -> Result<Option<Packet>, Stop> {
        let max_pkt = self.cfg.max_pkt;
        let Some(m) = self.st.tx.as_mut() else {
            return Ok(None);
        };
        if let Some(p) = m.held.take() {
            return Ok(Some(p));
        }
        if m.done {
            return Ok(None);
        }
        let msg_len = m.data.len() as u32;
        let off = m.next;
        let n = (msg_len - off).min(max_pkt);
        let seq = &mut self.st.tx_seq[m.dst as usize];
        let f = PacketFields {
            dst_node: m.dst,
            src_node: self.node,
            dst_port: m.dst_port,
            src_port: m.src_port,
            msg_len,
            offset: off,
            vc: 0,
            first: off == 0,
            last: off + n == msg_len,
            seq: *seq,
        };
        *seq = (*seq + 1) & 15;
        m.next = off + n;
        m.done = f.last;
        let payload = m.data[off as usize..(off + n) as usize].to_vec();
        let Ok(mut hdr) = PacketHeader::new(&f) else {
            // Unreachable for a validated descriptor; drop the message rather than panic.
            self.st.tx = None;
            return Ok(None);
        };
        if off > 0 && self.bar.take_corrupt_packet() {
            hdr.dst_port = (hdr.dst_port.get() ^ 0x0100).into(); // not resealed
        }
        Ok(Some(Packet::new(hdr, payload)))
    }

    /// Reads, checks and consumes the descriptor at TX_HEAD; `false` if there is none.
    fn take_descriptor(&mut self, cfg: &RingCfg) -> Result<bool, Stop> {
        let head = self.st.tx_head;
        let tail = self.bar.get(regs::TX_TAIL);
        let (occ, before) = (
            tail.wrapping_sub(head),
            self.st.last_tail.wrapping_sub(head),
        );
        if occ > cfg.tx_size || occ < before {
            return Err(self.fail(err::DOORBELL_BAD, None));
        }
        self.st.last_tail = tail;
        if occ == 0 {
            return Ok(false);
        }
        let slot = (head & (cfg.tx_size - 1)) as u64;
        let mut raw = [0u8; TxDesc::SIZE];
        let at = cfg.tx_base.wrapping_add(slot * TxDesc::SIZE as u64);
        if self.mem.dma_read(at, &mut raw).is_err() {
            return Err(self.fail(err::DMA_FAULT, Some(head)));
        }
        let d = match TxDesc::read_from(&raw) {
            Ok(d) if d.validate(head as u64, &self.limits).is_ok() => d,
            _ => return Err(self.fail(err::TX_DESC_BAD, Some(head))),
        };
        let len = d.len.get() as usize;
        let data = match d.inline_payload() {
            Some(b) => b.to_vec(),
            None => {
                let mut v = vec![0u8; len];
                if len > 0 && self.mem.dma_read(d.iova.get(), &mut v).is_err() {
                    return Err(self.fail(err::DMA_FAULT, Some(head)));
                }
                v
            }
        };
        // The payload is in the adapter: the slot and the buffer are the driver's again.
        let head = head.wrapping_add(1);
        self.st.tx_head = head;
        let done_irq = d.flags.get() & tx_flags::IRQ_ON_DONE != 0;
        self.regs(|r| {
            r.set(regs::TX_HEAD, head);
            if done_irq {
                r.irq(irq::TX_DONE);
            }
        })?;
        // The write-back after the register: a host that reads both sees it trail.
        if cfg.tx_wb != 0
            && self
                .mem
                .dma_write(cfg.tx_wb, &(head as u64).to_le_bytes())
                .is_err()
        {
            return Err(self.fail(err::DMA_FAULT, Some(head.wrapping_sub(1))));
        }
        self.bar.count(Counter::TxMsgs, 1);
        let dst = addr_node(d.dst.get()) as u16;
        if !self.net.route_up(self.node, dst) {
            // Dropped at the source: nothing of it enters the network.
            self.regs(|r| r.err(err::NO_ROUTE, None))?;
            return Ok(true);
        }
        self.st.tx = Some(TxMsg {
            dst,
            dst_port: addr_port(d.dst.get()) as u16,
            src_port: d.src_port.get(),
            data,
            next: 0,
            done: false,
            held: None,
        });
        Ok(true)
    }

    // ---- RX ----------------------------------------------------------------------------

    fn rx_step(&mut self, cfg: &RingCfg) -> Result<bool, Stop> {
        let mut progress = false;
        for _ in 0..BUDGET {
            while let Some(m) = self.st.pending.pop_front() {
                let placed = self.place(cfg, &m);
                if !matches!(placed, Ok(true)) {
                    self.st.pending.push_front(m);
                }
                if !placed? {
                    if !self.st.rx_stalled {
                        self.st.rx_stalled = true;
                        self.bar.count(Counter::RxStalls, 1);
                    }
                    // Withhold credits: the ejection buffer is not drained meanwhile.
                    return Ok(progress);
                }
                self.st.rx_stalled = false;
                progress = true;
            }
            let Some(p) = self.net.pop_eject(self.node) else {
                return Ok(progress);
            };
            progress = true;
            self.receive(p)?;
        }
        Ok(progress)
    }

    fn bad_packet(&self) -> Result<(), Stop> {
        self.bar.count(Counter::PktCorrupt, 1);
        self.regs(|r| r.err(err::PKT_CORRUPT, None))
    }

    /// Reassembly of one ejected packet.
    fn receive(&mut self, p: Packet) -> Result<(), Stop> {
        self.bar.count(Counter::RxPkts, 1);
        let h = p.hdr;
        let n = p.payload.len() as u32;
        if h.validate(&self.limits).is_err()
            || h.check_payload(n, self.cfg.max_pkt).is_err()
            || h.fields().dst_node != self.node
        {
            return self.bad_packet();
        }
        let f = h.fields();
        let src = f.src_node;
        let slot = &mut self.st.ctx[src as usize];
        if f.first {
            if let Some(old) = slot.take() {
                // The sender stopped inside that message.
                self.st
                    .pending
                    .push_back(old.finish(src, rx_status::TRUNCATED));
            }
            let slot = &mut self.st.ctx[src as usize];
            *slot = Some(Ctx {
                src_port: f.src_port,
                dst_port: f.dst_port,
                data: vec![0; f.msg_len as usize],
                next_off: 0,
                next_seq: f.seq,
                status: 0,
            });
        }
        let slot = &mut self.st.ctx[src as usize];
        let Some(c) = slot.as_mut() else {
            // A packet of no open message (its FIRST was lost).
            return self.bad_packet();
        };
        if c.data.len() != f.msg_len as usize
            || c.dst_port != f.dst_port
            || c.src_port != f.src_port
        {
            c.status |= rx_status::CORRUPT;
            return self.bad_packet();
        }
        if f.offset != c.next_off || f.seq != c.next_seq {
            c.status |= rx_status::CORRUPT; // a packet was lost in between
        }
        let (o, e) = (f.offset as usize, (f.offset + n) as usize);
        if let Some(dst) = c.data.get_mut(o..e) {
            dst.copy_from_slice(&p.payload);
        }
        c.next_off = f.offset + n;
        c.next_seq = (f.seq + 1) & 15;
        if f.last {
            if let Some(c) = slot.take() {
                self.st.pending.push_back(c.finish(src, 0));
            }
        }
        Ok(())
    }

    /// Writes a complete message into its RX queue; `false` while there is no room.
    fn place(&mut self, cfg: &RingCfg, m: &RxMsg) -> Result<bool, Stop> {
        let port = m.dst_port as usize;
        let q = if cfg.demux && cfg.rxq.get(port).is_some_and(|c| c.is_some()) {
            port
        } else {
            0
        };
        let (Some(Some(qc)), Some(qs)) = (cfg.rxq.get(q), self.st.rxq.get(q)) else {
            return Err(self.fail(err::RING_CONFIG, None));
        };
        let (qc, mut qs): (RxqCfg, RxqState) = (*qc, *qs);
        let reg = |rel| regs::rxq_reg(q as u32, rel).unwrap_or(regs::RX_FREE);
        let free = self.bar.get(reg(rxq::RX_FREE));
        let ctail = self.bar.get(reg(rxq::RXC_TAIL));
        let w32 = qs.wpos as u32;
        // RX_FREE within [last accepted, written]; RXC_TAIL within [last accepted, RXC_HEAD].
        if w32.wrapping_sub(free) > w32.wrapping_sub(qs.free)
            || qs.chead.wrapping_sub(ctail) > qs.chead.wrapping_sub(qs.ctail)
        {
            return Err(self.fail(err::DOORBELL_BAD, None));
        }
        qs.free = free;
        qs.ctail = ctail;
        let len = m.data.len() as u32;
        let too_large = len > qc.size;
        let span = if too_large {
            0
        } else {
            len.next_multiple_of(regs::RX_ALIGN)
        };
        let room = qc.size - w32.wrapping_sub(free);
        let placed = qs.chead.wrapping_sub(ctail) < qc.rxc_size && span <= room;
        if placed {
            if !too_large {
                let mut done = 0usize;
                for (start, n) in desc::ring_split(qs.wpos, len as u64, qc.size as u64) {
                    if n == 0 {
                        continue;
                    }
                    let src = &m.data[done..done + n as usize];
                    if self.mem.dma_write(qc.base + start, src).is_err() {
                        return Err(self.fail(err::DMA_FAULT, None));
                    }
                    done += n as usize;
                }
            }
            let mut status = m.status;
            if too_large {
                status = rx_status::TOO_LARGE;
            }
            let mut clen = len;
            if self.bar.take_bad_completion() {
                clen = (len as u64 + qc.size as u64).min(desc::MAX_MSG as u64) as u32;
            }
            let src = desc::net_addr(m.src, m.src_port);
            let Ok(c) = RxCompletion::new(qs.chead as u64, qs.wpos, clen, src, m.dst_port, status)
            else {
                return Err(self.fail(err::DMA_FAULT, None));
            };
            let bytes = zerocopy::IntoBytes::as_bytes(&c);
            let at =
                qc.rxc_base + (qs.chead & (qc.rxc_size - 1)) as u64 * RxCompletion::SIZE as u64;
            let tag = RxCompletion::TAG_OFFSET;
            // The tag last: the driver polls it.
            if self.mem.dma_write(at, &bytes[..tag]).is_err()
                || self.mem.dma_write(at + tag as u64, &bytes[tag..]).is_err()
            {
                return Err(self.fail(err::DMA_FAULT, None));
            }
            qs.chead = qs.chead.wrapping_add(1);
            qs.wpos += span as u64;
            let chead = qs.chead;
            self.regs(|r| {
                r.set(reg(rxq::RXC_HEAD), chead);
                r.irq(irq::RX_READY);
                if too_large {
                    r.err(err::RX_OVERFLOW, None);
                }
            })?;
            self.bar.count(Counter::RxMsgs, 1);
            if too_large {
                self.bar.count(Counter::RxDropped, 1);
            } else {
                self.bar.count(Counter::RxBytes, len as u64);
            }
        }
        self.st.rxq[q] = qs;
        Ok(placed)
    }
}
