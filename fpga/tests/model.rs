//! The behavioural device model driven by a minimal test-side driver that uses only
//! `regs`/`desc` and a heap "host memory" per node (IOVA = offset): rings, doorbells,
//! completions, recycling, back-pressure, errors, every fault, shutdown.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fpga::desc::{self, net_addr, rx_status, Limits, RxCompletion, RxExpect, TxDesc};
use fpga::model::{Bar, Fault, HostMemory, IrqSink, Machine, ModelConfig};
use fpga::regs::{self, ctrl, err, irq, status, Dims, Link};

const MEM: usize = 1 << 20;
const TX_WB: u64 = 0x0800;
const TX_RING: u64 = 0x1000;
const RXC_RING: u64 = 0x2000;
const RX_RING: u64 = 0x4000;
const PAYLOAD: u64 = 0x2_0000;
const SLOT_BYTES: u64 = 0x2000;
const TX_ENTRIES: u32 = 16;
const RXC_ENTRIES: u32 = 16;

struct HeapMem(Mutex<Vec<u8>>);

impl HeapMem {
    fn range(iova: u64, n: usize) -> fpga::Result<std::ops::Range<usize>> {
        let s = usize::try_from(iova).unwrap_or(usize::MAX);
        match s.checked_add(n) {
            Some(e) if e <= MEM => Ok(s..e),
            _ => Err(fpga::Error::BadConfig(format!(
                "IOVA {iova:#x}+{n} unmapped"
            ))),
        }
    }
    fn read(&self, iova: u64, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        self.dma_read(iova, &mut v).unwrap();
        v
    }
}

impl HostMemory for HeapMem {
    fn dma_read(&self, iova: u64, dst: &mut [u8]) -> fpga::Result<()> {
        let r = Self::range(iova, dst.len())?;
        dst.copy_from_slice(&self.0.lock().unwrap()[r]);
        Ok(())
    }
    fn dma_write(&self, iova: u64, src: &[u8]) -> fpga::Result<()> {
        let r = Self::range(iova, src.len())?;
        self.0.lock().unwrap()[r].copy_from_slice(src);
        Ok(())
    }
}

#[derive(Default)]
struct Irqs(AtomicU64);

impl IrqSink for Irqs {
    fn raise(&self, _vector: u32) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A received message.
#[derive(Debug)]
struct Rx {
    src: u32,
    port: u16,
    status: u16,
    data: Vec<u8>,
}

/// The test-side driver of one node.
struct Node {
    bar: Arc<Bar>,
    mem: Arc<HeapMem>,
    irq: Arc<Irqs>,
    rx_size: u32,
    tail: u32,
    rxc_tail: u32,
    next_off: u64,
    released: u64,
    limits: Limits,
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

impl Node {
    fn attach(m: &Machine, id: u16, rx_size: u32) -> Node {
        let mem = Arc::new(HeapMem(Mutex::new(vec![0; MEM])));
        let irq = Arc::new(Irqs::default());
        let bar = m.attach(id, mem.clone(), irq.clone()).unwrap();
        let limits = Limits::new(m.dims(), 16, 2, desc::MAX_MSG).unwrap();
        let mut n = Node {
            bar,
            mem,
            irq,
            rx_size,
            tail: 0,
            rxc_tail: 0,
            next_off: 0,
            released: 0,
            limits,
        };
        n.init();
        n
    }

    fn r(&self, off: u32) -> u32 {
        self.bar.host_read(off).unwrap()
    }
    fn w(&self, off: u32, v: u32) {
        self.bar.host_write(off, v).unwrap()
    }
    fn counter(&self, off: u32) -> u64 {
        let lo = self.r(off) as u64;
        lo | (self.r(off + 4) as u64) << 32
    }

    /// Datasheet "Driver/device handshake", step 1.
    fn init(&mut self) {
        self.w(regs::CTRL, ctrl::RESET);
        wait_until("READY", || self.r(regs::STATUS) == status::READY);
        assert_eq!(self.r(regs::ID), regs::ID_VALUE);
        self.mem.0.lock().unwrap().fill(0);
        self.w(regs::TX_BASE_LO, TX_RING as u32);
        self.w(regs::TX_SIZE, TX_ENTRIES);
        self.w(regs::TX_WB_LO, TX_WB as u32);
        self.w(regs::RX_BASE_LO, RX_RING as u32);
        self.w(regs::RX_SIZE, self.rx_size);
        self.w(regs::RXC_BASE_LO, RXC_RING as u32);
        self.w(regs::RXC_SIZE, RXC_ENTRIES);
        self.w(regs::IRQ_MASK, 0);
        self.w(regs::CTRL, ctrl::ENABLE);
        assert_eq!(self.r(regs::ERR_STATUS), 0);
        (self.tail, self.rxc_tail, self.next_off, self.released) = (0, 0, 0, 0);
    }

    fn tx_head(&self) -> u32 {
        let wb = self.mem.read(TX_WB, 8);
        let v = u64::from_le_bytes(wb.try_into().unwrap()) as u32;
        // The write-back trails or equals TX_HEAD read after it (the device may move on).
        assert!(self.r(regs::TX_HEAD).wrapping_sub(v) < 1 << 31);
        v
    }

    /// Step 2: queue one message; `false` when the TX ring is full.
    fn try_send(&mut self, dst: u16, port: u16, src_port: u16, data: &[u8], flags: u16) -> bool {
        if self.tail.wrapping_sub(self.tx_head()) >= TX_ENTRIES {
            return false;
        }
        let slot = (self.tail & (TX_ENTRIES - 1)) as u64;
        let to = net_addr(dst, port);
        let d = if data.len() <= desc::INLINE_MAX {
            TxDesc::new_inline(data, to, src_port, flags, self.tail as u64).unwrap()
        } else {
            let buf = PAYLOAD + slot * SLOT_BYTES;
            self.mem.dma_write(buf, data).unwrap();
            TxDesc::new(
                buf,
                data.len() as u32,
                to,
                src_port,
                flags,
                self.tail as u64,
            )
            .unwrap()
        };
        let mut raw = [0u8; 32];
        d.emit(&mut raw).unwrap();
        self.mem.dma_write(TX_RING + slot * 32, &raw).unwrap();
        self.tail = self.tail.wrapping_add(1);
        self.w(regs::TX_TAIL, self.tail);
        true
    }

    /// Steps 3 and 4: take the next completion (validated shadow copy) and its payload,
    /// then release it (if `release`).
    fn try_recv_opt(&mut self, release: bool) -> Option<Result<Rx, fpga::Error>> {
        let slot = (self.rxc_tail & (RXC_ENTRIES - 1)) as u64;
        let raw = self.mem.read(RXC_RING + slot * 32, 32);
        let c = match RxCompletion::read_from(&raw) {
            Ok(c) if c.is_fresh(self.rxc_tail as u64) => c,
            _ => return None,
        };
        let at = RxExpect {
            index: self.rxc_tail as u64,
            offset: self.next_off,
            released: self.released,
            ring_bytes: self.rx_size as u64,
        };
        if let Err(e) = c.validate(&at, &self.limits) {
            return Some(Err(e));
        }
        let mut data = Vec::new();
        if c.status.get() & rx_status::TOO_LARGE == 0 {
            for (s, n) in desc::ring_split(c.offset.get(), c.len.get() as u64, self.rx_size as u64)
            {
                data.extend(self.mem.read(RX_RING + s, n as usize));
            }
        }
        self.rxc_tail = self.rxc_tail.wrapping_add(1);
        self.w(regs::RXC_TAIL, self.rxc_tail);
        self.next_off += c.span();
        if release {
            self.release_all();
        }
        Some(Ok(Rx {
            src: c.src.get(),
            port: c.dst_port.get(),
            status: c.status.get(),
            data,
        }))
    }

    fn try_recv(&mut self) -> Option<Rx> {
        self.try_recv_opt(true).map(|r| r.unwrap())
    }

    fn release_all(&mut self) {
        self.released = self.next_off;
        self.w(regs::RX_FREE, self.released as u32);
    }

    fn recv(&mut self) -> Rx {
        let mut got = None;
        wait_until("a completion", || {
            got = self.try_recv();
            got.is_some()
        });
        got.unwrap()
    }
}

/// The payload of message `k` from `src` to `dst`: its length and bytes are a function of
/// the three, so the receiver checks both and the per-pair order.
fn payload(src: u16, dst: u16, k: u32, len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..len)
        .map(|i| (i as u32 * 31 + k * 7 + src as u32 * 13 + dst as u32) as u8)
        .collect();
    if len >= 4 {
        v[..4].copy_from_slice(&k.to_le_bytes());
    }
    v
}

/// Every node sends `per_pair` messages (sizes cycling through `sizes`) to every node,
/// driving all nodes from this thread; checks each arrives once, intact, in order.
fn all_pairs(m: &Machine, nodes: &mut [Node], per_pair: u32, sizes: &[usize]) {
    let n = nodes.len() as u16;
    let mut sent: HashMap<(u16, u16), u32> = HashMap::new();
    let mut recvd: HashMap<(u16, u16), u32> = HashMap::new();
    let total = n as u32 * n as u32 * per_pair;
    let mut got = 0;
    let end = Instant::now() + Duration::from_secs(60);
    while got < total {
        assert!(Instant::now() < end, "stalled: {got} of {total} received");
        for s in 0..n {
            for d in 0..n {
                let k = *sent.get(&(s, d)).unwrap_or(&0);
                if k == per_pair {
                    continue;
                }
                let len = sizes[(k as usize + s as usize + d as usize) % sizes.len()];
                let data = payload(s, d, k, len);
                if nodes[s as usize].try_send(d, (s + d) % 16, s % 16, &data, 0) {
                    sent.insert((s, d), k + 1);
                }
            }
            for _ in 0..4 {
                let dst = s;
                let Some(rx) = nodes[dst as usize].try_recv() else {
                    break;
                };
                assert_eq!(rx.status, 0, "{rx:?}");
                let src = desc::addr_node(rx.src) as u16;
                assert_eq!(desc::addr_port(rx.src) as u16, src % 16);
                assert_eq!(rx.port, (src + dst) % 16);
                let k = recvd.entry((src, dst)).or_insert(0);
                let len = sizes[(*k as usize + src as usize + dst as usize) % sizes.len()];
                assert_eq!(rx.data, payload(src, dst, *k, len), "{src}->{dst} #{k}");
                *k += 1;
                got += 1;
            }
        }
    }
    for (i, node) in nodes.iter().enumerate() {
        assert_eq!(node.r(regs::ERR_STATUS), 0, "node {i}");
        assert_eq!(
            node.counter(regs::CNT_RX_MSGS),
            (n as u32 * per_pair) as u64
        );
        assert_eq!(
            node.counter(regs::CNT_TX_MSGS),
            (n as u32 * per_pair) as u64
        );
        assert_eq!(node.counter(regs::CNT_PKT_CORRUPT), 0);
    }
    let _ = m;
}

fn machine(x: u8, y: u8, z: u8, cfg: ModelConfig) -> Machine {
    Machine::new(Dims::new(x, y, z).unwrap(), cfg).unwrap()
}

/// A 2×1×1 machine with both nodes initialised.
fn pair() -> (Machine, Node, Node) {
    let m = machine(2, 1, 1, small());
    let a = Node::attach(&m, 0, 4096);
    let b = Node::attach(&m, 1, 4096);
    (m, a, b)
}

fn small() -> ModelConfig {
    ModelConfig {
        max_pkt: 256,
        credits: 2,
        ..ModelConfig::default()
    }
}

#[test]
fn every_pair_of_a_2x2x2_torus_in_order_with_ring_wrap() {
    let m = machine(2, 2, 2, small());
    let mut nodes: Vec<Node> = (0..8).map(|i| Node::attach(&m, i, 4096)).collect();
    // Inline (0, 5, 8), one packet, several packets, 3 KiB of a 4 KiB ring (wraps).
    all_pairs(&m, &mut nodes, 6, &[0, 5, 8, 100, 700, 3000]);
    let laps = nodes[0].next_off / 4096;
    assert!(laps >= 3, "only {laps} laps of the RX ring");
    let fwd: u64 = nodes.iter().map(|n| n.counter(regs::CNT_FWD_PKTS)).sum();
    assert!(fwd > 0, "3-hop routes forward through other routers");
    assert!(m.shutdown());
}

#[test]
fn a_4x1x1_ring_uses_the_wrap_around_links() {
    let m = machine(
        4,
        1,
        1,
        ModelConfig {
            max_pkt: 64,
            ..small()
        },
    );
    let mut nodes: Vec<Node> = (0..4).map(|i| Node::attach(&m, i, 4096)).collect();
    all_pairs(&m, &mut nodes, 8, &[1, 64, 65, 1000, 9]);
    // 0 → 3 is one hop over the −X wrap-around link; 1 → 3 (a tie) goes − from odd 1.
    let fwd: Vec<u64> = nodes
        .iter()
        .map(|n| n.counter(regs::CNT_FWD_PKTS))
        .collect();
    assert!(fwd.iter().all(|&f| f > 0), "{fwd:?}");
    assert_eq!(nodes[2].r(regs::LINK_STATE), 0b11);
    assert!(m.shutdown());
}

#[test]
fn a_receiver_that_does_not_recycle_back_pressures_the_sender() {
    let (m, mut a, mut b) = pair();
    let mut k = 0u32;
    let mut last_progress = Instant::now();
    // Send until the TX ring stays full for a while: nothing moves any more.
    while last_progress.elapsed() < Duration::from_millis(100) {
        if a.try_send(1, 2, 3, &payload(0, 1, k, 600), 0) {
            k += 1;
            last_progress = Instant::now();
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(k < 1000, "the sender never stalls");
    }
    assert_eq!(a.tail.wrapping_sub(a.tx_head()), TX_ENTRIES);
    let written = b.r(regs::RXC_HEAD);
    assert!(
        written < k && written as u64 * 640 <= 4096,
        "{written} completions of {k}"
    );
    assert!(b.counter(regs::CNT_RX_STALLS) > 0);
    assert!(a.counter(regs::CNT_CREDIT_STALLS) + b.counter(regs::CNT_CREDIT_STALLS) > 0);
    // Take the completions without releasing space: still nothing new.
    let mut held = Vec::new();
    while let Some(r) = b.try_recv_opt(false) {
        held.push(r.unwrap());
    }
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(b.r(regs::RXC_HEAD), written);
    b.release_all();
    // Now everything arrives, in order, nothing lost.
    let mut got = held.len() as u32;
    for (i, r) in held.iter().enumerate() {
        assert_eq!(r.data, payload(0, 1, i as u32, 600));
    }
    while got < k {
        let r = b.recv();
        assert_eq!(r.data, payload(0, 1, got, 600));
        got += 1;
    }
    assert_eq!(b.counter(regs::CNT_RX_MSGS), k as u64);
    assert_eq!(a.r(regs::ERR_STATUS) | b.r(regs::ERR_STATUS), 0);
    assert!(m.shutdown());
}

#[test]
fn a_bad_descriptor_sets_error_bits_raises_error_and_halts_until_reset() {
    let (m, mut a, mut b) = pair();
    assert!(a.try_send(1, 0, 0, b"ok", 0));
    assert_eq!(b.recv().data, b"ok");
    // Descriptor 1 with the seq of another lap, then one that is garbage.
    let d = TxDesc::new_inline(b"x", net_addr(1, 0), 0, 0, 1 + 16).unwrap();
    let mut raw = [0u8; 32];
    d.emit(&mut raw).unwrap();
    a.mem.dma_write(TX_RING + 32, &raw).unwrap();
    let irqs = a.irq.0.load(SeqCst);
    a.w(regs::TX_TAIL, 2);
    wait_until("TX_DESC_BAD", || {
        a.r(regs::ERR_STATUS) & err::TX_DESC_BAD != 0
    });
    assert_eq!(a.r(regs::ERR_TX_INDEX), 1);
    assert_ne!(a.r(regs::STATUS) & status::HALTED, 0);
    assert_ne!(a.r(regs::IRQ_STATUS) & irq::ERROR, 0);
    assert!(a.irq.0.load(SeqCst) > irqs);
    assert_eq!(a.r(regs::TX_HEAD), 1);
    // Halted: a good descriptor after it is not taken.
    a.tail = 1;
    assert!(a.try_send(1, 0, 0, b"later", 0));
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(a.r(regs::TX_HEAD), 1);
    // RW1C clears the bits, not the halt; a reset does.
    a.w(regs::ERR_STATUS, err::ALL);
    a.w(regs::IRQ_STATUS, irq::ALL);
    assert_eq!(a.r(regs::ERR_STATUS) | a.r(regs::IRQ_STATUS), 0);
    assert_ne!(a.r(regs::STATUS) & status::HALTED, 0);
    a.init();
    assert!(a.try_send(1, 0, 0, b"again", 0));
    assert_eq!(b.recv().data, b"again");
    // Garbage in the ring (bad check word) is refused the same way.
    a.mem.dma_write(TX_RING + 32, &[0xA5; 32]).unwrap();
    a.w(regs::TX_TAIL, 2);
    wait_until("TX_DESC_BAD", || {
        a.r(regs::ERR_STATUS) & err::TX_DESC_BAD != 0
    });
    assert_eq!(a.r(regs::ERR_TX_INDEX), 1);
    assert!(m.shutdown());
}

#[test]
fn registers_follow_the_datasheet() {
    let m = machine(2, 2, 1, small());
    let mem = Arc::new(HeapMem(Mutex::new(vec![0; MEM])));
    let bar = m.attach(3, mem.clone(), Arc::new(Irqs::default())).unwrap();
    for r in regs::REGISTERS {
        let v = bar.host_read(r.offset).unwrap();
        match r.reset {
            regs::Reset::Value(x) => assert_eq!(v, x, "{}", r.name),
            regs::Reset::Param => {}
        }
    }
    assert_eq!(bar.host_read(regs::NODE_COORD).unwrap(), 0x0000_0101);
    assert_eq!(bar.host_read(regs::TORUS_DIMS).unwrap(), 0x0001_0202);
    assert_eq!(bar.host_read(regs::MAX_PKT).unwrap(), 256);
    assert_eq!(bar.host_read(0x0FC).unwrap(), 0); // reserved
    assert_eq!(bar.host_read(0x240).unwrap(), 0); // queue 1: not present
    bar.host_write(0x240, 7).unwrap();
    assert_eq!(bar.host_read(0x240).unwrap(), 0);
    assert!(bar.host_read(regs::BAR0_SIZE).is_err());
    assert!(bar.host_write(2, 0).is_err());
    bar.host_write(regs::TX_HEAD, 5).unwrap(); // RO
    assert_eq!(bar.host_read(regs::TX_HEAD).unwrap(), 0);
    // A bad ring configuration is refused at ENABLE: RING_CONFIG, HALTED.
    bar.host_write(regs::TX_SIZE, 12).unwrap();
    bar.host_write(regs::RX_SIZE, 4096).unwrap();
    bar.host_write(regs::RXC_SIZE, 8).unwrap();
    bar.host_write(regs::CTRL, ctrl::ENABLE).unwrap();
    assert_eq!(bar.host_read(regs::ERR_STATUS).unwrap(), err::RING_CONFIG);
    assert_eq!(
        bar.host_read(regs::STATUS).unwrap(),
        status::READY | status::HALTED
    );
    assert_eq!(bar.host_read(regs::LINK_STATE).unwrap(), 0);
    bar.host_write(regs::CTRL, ctrl::RESET).unwrap();
    wait_until("READY", || {
        bar.host_read(regs::STATUS).unwrap() == status::READY
    });
    assert_eq!(bar.host_read(regs::CTRL).unwrap(), 0);
    assert_eq!(bar.host_read(regs::TX_SIZE).unwrap(), 0);
    assert_eq!(bar.host_read(regs::ERR_STATUS).unwrap(), 0);
    // A good one: links of a 2×2×1 torus train (±X, ±Y), none in Z.
    bar.host_write(regs::TX_SIZE, 16).unwrap();
    bar.host_write(regs::RX_SIZE, 4096).unwrap();
    bar.host_write(regs::RXC_SIZE, 8).unwrap();
    bar.host_write(regs::RX_BASE_LO, 0x4000).unwrap();
    bar.host_write(regs::RXC_BASE_LO, 0x2000).unwrap();
    bar.host_write(regs::CTRL, ctrl::ENABLE).unwrap();
    assert_eq!(bar.host_read(regs::ERR_STATUS).unwrap(), 0);
    assert_eq!(bar.host_read(regs::LINK_STATE).unwrap(), 0b1111);
    assert_ne!(
        bar.host_read(regs::IRQ_STATUS).unwrap() & irq::LINK_CHANGE,
        0
    );
    // A doorbell past TX_HEAD + TX_SIZE is fatal.
    bar.host_write(regs::TX_TAIL, 17).unwrap();
    wait_until("DOORBELL_BAD", || {
        bar.host_read(regs::ERR_STATUS).unwrap() & err::DOORBELL_BAD != 0
    });
    assert_ne!(bar.host_read(regs::STATUS).unwrap() & status::HALTED, 0);
    assert!(m.shutdown());
}

#[test]
fn counters_latch_their_high_word_on_a_low_read() {
    let (m, mut a, mut b) = pair();
    for k in 0..3 {
        assert!(a.try_send(1, 0, 0, &payload(0, 1, k, 300), 0));
        b.recv();
    }
    assert_eq!(a.counter(regs::CNT_TX_MSGS), 3);
    assert_eq!(a.counter(regs::CNT_TX_PKTS), 6);
    assert_eq!(a.counter(regs::CNT_TX_BYTES), 900);
    assert_eq!(b.counter(regs::CNT_RX_PKTS), 6);
    assert_eq!(b.counter(regs::CNT_RX_BYTES), 900);
    assert_eq!(b.r(regs::CNT_RX_MSGS + 4), 0);
    assert!(m.shutdown());
}

#[test]
fn tx_done_interrupt_only_when_asked_and_unmasked() {
    let (m, mut a, mut b) = pair();
    a.w(regs::IRQ_MASK, irq::ALL);
    a.w(regs::IRQ_STATUS, irq::ALL);
    assert!(a.try_send(1, 0, 0, b"quiet", 0));
    b.recv();
    assert_eq!(a.r(regs::IRQ_STATUS) & irq::TX_DONE, 0);
    let before = a.irq.0.load(SeqCst);
    assert!(a.try_send(1, 0, 0, b"loud", desc::tx_flags::IRQ_ON_DONE));
    b.recv();
    wait_until("TX_DONE", || a.r(regs::IRQ_STATUS) & irq::TX_DONE != 0);
    assert_eq!(a.irq.0.load(SeqCst), before, "masked");
    a.w(regs::IRQ_MASK, !irq::TX_DONE & irq::ALL); // unmasking a pending cause fires
    assert_eq!(a.irq.0.load(SeqCst), before + 1);
    assert!(m.shutdown());
}

#[test]
fn hw_demux_puts_each_port_in_its_own_queue() {
    let cfg = ModelConfig {
        hw_demux: true,
        rx_queues: 2,
        ..small()
    };
    let m = machine(2, 1, 1, cfg);
    let mut a = Node::attach(&m, 0, 4096);
    let b = Node::attach(&m, 1, 4096);
    // Queue 1 of node 1: RX ring at 0x8000, completions at 0x3000.
    let q1 = |rel| regs::rxq_reg(1, rel).unwrap();
    b.w(regs::CTRL, 0);
    b.w(q1(regs::rxq::RX_BASE_LO), 0x8000);
    b.w(q1(regs::rxq::RX_SIZE), 4096);
    b.w(q1(regs::rxq::RXC_BASE_LO), 0x3000);
    b.w(q1(regs::rxq::RXC_SIZE), 8);
    b.w(regs::CTRL, ctrl::ENABLE | ctrl::HW_DEMUX_EN);
    assert_eq!(b.r(regs::ERR_STATUS), 0);
    assert!(a.try_send(1, 1, 0, b"port one", 0));
    assert!(a.try_send(1, 0, 0, b"port zero", 0));
    assert!(a.try_send(1, 5, 0, b"port five", 0)); // no queue 5: queue 0
    wait_until("three completions", || {
        b.r(regs::RXC_HEAD) == 2 && b.r(q1(regs::rxq::RXC_HEAD)) == 1
    });
    let c = RxCompletion::read_from(&b.mem.read(0x3000, 32)).unwrap();
    assert!(c.is_fresh(0));
    assert_eq!((c.dst_port.get(), c.len.get()), (1, 8));
    assert_eq!(b.mem.read(0x8000, 8), b"port one");
    assert!(m.shutdown());
}

// ---- faults --------------------------------------------------------------------------

#[test]
fn fault_bad_completion_length_is_caught_by_validate_and_reset_recovers() {
    let (m, mut a, mut b) = pair();
    assert!(a.try_send(1, 0, 0, b"good", 0));
    assert_eq!(b.recv().data, b"good");
    m.inject(1, Fault::BadCompletionLength).unwrap();
    assert!(a.try_send(1, 0, 0, &payload(0, 1, 1, 100), 0));
    let mut r = None;
    wait_until("the bad completion", || {
        r = b.try_recv_opt(true);
        r.is_some()
    });
    let e = r.unwrap().unwrap_err();
    assert!(e.to_string().contains("beyond"), "{e}");
    // The device stayed consistent: one completion, its true span (128) taken.
    assert_eq!(b.r(regs::RXC_HEAD), 2);
    let c = RxCompletion::read_from(&b.mem.read(RXC_RING + 32, 32)).unwrap();
    assert_eq!((c.len.get(), c.offset.get()), (100 + 4096, 64));
    // Only the next completion was bad; the driver resets and goes on.
    b.init();
    assert!(a.try_send(1, 0, 0, &payload(0, 1, 2, 100), 0));
    assert_eq!(b.recv().data, payload(0, 1, 2, 100));
    assert!(a.try_send(1, 0, 0, &payload(0, 1, 3, 100), 0));
    assert_eq!(b.recv().data, payload(0, 1, 3, 100));
    assert!(m.shutdown());
}

#[test]
fn fault_link_down_reports_and_drops_at_the_source_link_up_restores() {
    let m = machine(4, 1, 1, small());
    let mut n: Vec<Node> = (0..4).map(|i| Node::attach(&m, i, 4096)).collect();
    for x in &n {
        x.w(regs::IRQ_STATUS, irq::ALL);
    }
    let irqs = n[1].irq.0.load(SeqCst);
    m.inject(0, Fault::LinkDown(Link::PlusX)).unwrap();
    assert_eq!(n[0].r(regs::LINK_STATE), 0b10);
    assert_eq!(n[1].r(regs::LINK_STATE), 0b01);
    for i in [0, 1] {
        assert_eq!(n[i].r(regs::ERR_STATUS), err::LINK_DOWN);
        assert_eq!(n[i].r(regs::IRQ_STATUS), irq::ERROR | irq::LINK_CHANGE);
    }
    assert!(n[1].irq.0.load(SeqCst) > irqs);
    assert_eq!(n[2].r(regs::LINK_STATE), 0b11);
    // 0 → 1 needs 0's +X: dropped at the source, descriptor consumed.
    assert!(n[0].try_send(1, 0, 0, b"lost", 0));
    wait_until("NO_ROUTE", || n[0].r(regs::ERR_STATUS) & err::NO_ROUTE != 0);
    assert_eq!(n[0].tx_head(), 1);
    // 0 → 3 goes −X and 2 → 1 goes 2's −X: unaffected.
    assert!(n[0].try_send(3, 0, 0, b"west", 0));
    assert_eq!(n[3].recv().data, b"west");
    assert!(n[2].try_send(1, 0, 0, b"from 2", 0));
    assert_eq!(n[1].recv().data, b"from 2");
    // 1 → 0 goes 1's −X: the other direction of the same cable, down too.
    assert!(n[1].try_send(0, 0, 0, b"back", 0));
    wait_until("NO_ROUTE at 1", || {
        n[1].r(regs::ERR_STATUS) & err::NO_ROUTE != 0
    });
    std::thread::sleep(Duration::from_millis(20));
    assert!(
        n[1].try_recv().is_none(),
        "nothing of the dropped messages arrived"
    );
    assert!(n[0].try_recv().is_none());
    assert_eq!(n[1].counter(regs::CNT_RX_MSGS), 1);
    m.inject(0, Fault::LinkUp(Link::PlusX)).unwrap();
    assert_eq!(n[0].r(regs::LINK_STATE), 0b11);
    assert_eq!(n[1].r(regs::LINK_STATE), 0b11);
    assert_ne!(n[1].r(regs::IRQ_STATUS) & irq::LINK_CHANGE, 0);
    n[0].w(regs::ERR_STATUS, err::ALL);
    assert!(n[0].try_send(1, 0, 0, b"found", 0));
    assert_eq!(n[1].recv().data, b"found");
    assert_eq!(n[0].r(regs::ERR_STATUS), 0);
    assert!(
        m.inject(0, Fault::LinkDown(Link::PlusY)).is_err(),
        "no Y links in 4x1x1"
    );
    assert!(m.shutdown());
}

#[test]
fn fault_stuck_doorbell_loses_writes_until_released() {
    let (m, mut a, mut b) = pair();
    m.inject(0, Fault::StuckDoorbell(true)).unwrap();
    assert!(a.try_send(1, 0, 0, b"stuck", 0));
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(a.r(regs::TX_TAIL), 0);
    assert_eq!(a.r(regs::TX_HEAD), 0);
    assert!(b.try_recv().is_none());
    m.inject(0, Fault::StuckDoorbell(false)).unwrap();
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(a.r(regs::TX_HEAD), 0, "a lost write stays lost");
    a.w(regs::TX_TAIL, a.tail); // the driver rings again
    assert_eq!(b.recv().data, b"stuck");
    assert_eq!(a.r(regs::ERR_STATUS), 0);
    assert!(m.shutdown());
}

#[test]
fn fault_corrupt_packet_is_dropped_counted_and_its_message_completes_corrupt() {
    let (m, mut a, mut b) = pair();
    m.inject(0, Fault::CorruptPacket).unwrap();
    let big = payload(0, 1, 0, 700);
    assert!(a.try_send(1, 0, 0, &big, 0));
    let r = b.recv();
    assert_eq!(r.status, rx_status::CORRUPT);
    assert_eq!(r.data.len(), 700);
    assert_eq!(a.counter(regs::CNT_PKT_CORRUPT), 1);
    assert_eq!(a.r(regs::ERR_STATUS), err::PKT_CORRUPT);
    assert_eq!(a.r(regs::STATUS) & status::HALTED, 0, "not fatal");
    assert!(a.try_send(1, 0, 0, &big, 0));
    let r = b.recv();
    assert_eq!((r.status, r.data), (0, big));
    assert!(m.shutdown());
}

#[test]
fn a_message_larger_than_the_ring_completes_too_large() {
    let (m, mut a, mut b) = pair();
    assert!(a.try_send(1, 0, 0, &payload(0, 1, 0, 5000), 0));
    assert!(a.try_send(1, 0, 0, b"after", 0));
    let r = b.recv();
    assert_eq!((r.status, r.data.len()), (rx_status::TOO_LARGE, 0));
    assert_eq!(b.recv().data, b"after");
    assert_eq!(b.r(regs::ERR_STATUS), err::RX_OVERFLOW);
    assert_eq!(b.counter(regs::CNT_RX_DROPPED), 1);
    assert!(m.shutdown());
}

#[test]
fn shutdown_with_traffic_in_flight_ends_promptly() {
    let m = machine(2, 2, 2, small());
    let mut nodes: Vec<Node> = (0..8).map(|i| Node::attach(&m, i, 4096)).collect();
    for k in 0..TX_ENTRIES {
        for (s, node) in nodes.iter_mut().enumerate() {
            let d = (s as u16 + 1 + k as u16) % 8;
            node.try_send(d, 0, 0, &payload(s as u16, d, k, 2000), 0);
        }
    }
    let t = Instant::now();
    assert!(m.shutdown(), "every thread ended");
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert!(m.shutdown(), "idempotent");
    assert!(m
        .attach(0, nodes[0].mem.clone(), nodes[0].irq.clone())
        .is_err());
    // The BARs stay readable, and a reset completes without an adapter thread.
    nodes[0].w(regs::CTRL, ctrl::RESET);
    assert_eq!(nodes[0].r(regs::STATUS), status::READY);
    drop(m);
}

#[test]
fn traffic_for_a_gone_host_is_dropped_so_the_sender_drains() {
    let (m, mut a, b) = pair();
    let mut k = 0u32;
    let mut last_progress = Instant::now();
    // b never recycles: a's TX ring fills and stays full (back-pressure, nothing dropped).
    while last_progress.elapsed() < Duration::from_millis(100) {
        if a.try_send(1, 0, 0, &payload(0, 1, k, 600), 0) {
            k += 1;
            last_progress = Instant::now();
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(k < 1000, "the sender never stalls");
    }
    assert_eq!(a.tail.wrapping_sub(a.tx_head()), TX_ENTRIES);
    assert_eq!(b.counter(regs::CNT_RX_DROPPED), 0);
    // b's host is gone (its process died): the network drops what arrives for it, and
    // a's ring drains.
    m.host_gone(1).unwrap();
    wait_until("a's TX ring to drain", || a.tx_head() == a.tail);
    assert!(b.counter(regs::CNT_RX_DROPPED) > 0);
    assert!(a.try_send(1, 0, 0, &payload(0, 1, k, 600), 0));
    assert!(m.host_gone(7).is_err()); // no such node
    assert!(m.shutdown());
}
