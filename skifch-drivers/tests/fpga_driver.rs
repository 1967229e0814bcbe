//! The FPGA adapter driver against a scripted device: the test plays the adapter by hand
//! over the heap backend (`hw::mem`): it presets the identification registers, reads the
//! descriptors the driver wrote, writes payloads, completions and tags into host memory,
//! and checks the indices the driver publishes (`TX_TAIL`, `RX_FREE`, `RXC_TAIL`).
#![allow(unsafe_code)] // one raw `Port::complete` in the status-bit test

use std::io::IoSlice;
use std::sync::Arc;
use std::time::Duration;

use fpga::desc::{self, net_addr, rx_status, RxCompletion, TxDesc};
use fpga::regs::{self, Caps, Coord, Dims};
use skifch::driver::{Driver, Port, SendMode, Waiter};
use skifch::{Error, Job, NetAddr, Unreachable};
use skifch_drivers::fpga::driver::{FpgaConfig, FpgaDriver, JobControl};
use skifch_drivers::fpga::hw::mem::{MemBar, MemDma};
use skifch_drivers::fpga::hw::{Hw, Interrupts, IrqEvent, Mmio};

/// The scripted adapter: registers in a `MemBar`, host memory in a `MemDma` (device side
/// through `device_read` / `device_write`), one interrupt vector.
#[derive(Clone)]
struct ScriptHw {
    bar: Arc<MemBar>,
    dma: MemDma,
    irq: Arc<IrqEvent>,
}

impl Mmio for ScriptHw {
    fn len(&self) -> usize {
        self.bar.len()
    }
    fn read32(&self, off: usize) -> skifch::Result<u32> {
        self.bar.read32(off)
    }
    fn write32(&self, off: usize, v: u32) -> skifch::Result<()> {
        self.bar.write32(off, v)
    }
}
impl Interrupts for ScriptHw {
    fn irq_vectors(&self) -> u32 {
        1
    }
    fn wait_irq(&self, _vector: u32, timeout: Duration) -> skifch::Result<u64> {
        self.irq.wait(timeout)
    }
}
impl Hw for ScriptHw {
    type Dma = MemDma;
    fn dma(&self) -> MemDma {
        self.dma.clone()
    }
}

const RX_BYTES: u32 = 4096;
const RXC: u32 = 8;
const TXN: u32 = 8;

fn cfg() -> FpgaConfig {
    FpgaConfig {
        tx_entries: TXN,
        rx_bytes: RX_BYTES,
        rxc_entries: RXC,
        staging_bytes: 0,
        max_ports: 2,
        ready_timeout: Duration::from_millis(200),
        link_timeout: Duration::from_millis(200),
        irq_slice: Duration::from_millis(20),
        credits: false, // the scripted device does not play credit returns
        drain_timeout: Duration::ZERO,
    }
}

/// A 2×2×1 torus, this node at (1, 0, 0) = rank 1.
fn device(demux: bool) -> ScriptHw {
    let bar = Arc::new(MemBar::new(regs::BAR0_SIZE as usize).unwrap());
    let caps = Caps {
        hw_demux: demux,
        msix: false,
        log2_ports: 2,
        rx_queues: if demux { 4 } else { 1 },
    };
    let w = |off: u32, v: u32| bar.write32(off as usize, v).unwrap();
    w(regs::ID, regs::ID_VALUE);
    w(regs::VERSION, regs::VERSION_VALUE);
    w(regs::CAPS, caps.pack().unwrap());
    w(regs::MAX_PKT, 256);
    w(regs::NODE_COORD, Coord { x: 1, y: 0, z: 0 }.pack());
    w(regs::TORUS_DIMS, Dims::new(2, 2, 1).unwrap().pack());
    w(regs::STATUS, regs::status::READY);
    w(regs::LINK_STATE, 0x3F);
    ScriptHw {
        bar,
        dma: MemDma::new(),
        irq: Arc::new(IrqEvent::new().unwrap()),
    }
}

/// What the test does in the device's place.
struct Dev {
    hw: ScriptHw,
}

impl Dev {
    fn reg(&self, off: u32) -> u32 {
        self.hw.bar.read32(off as usize).unwrap()
    }
    fn set(&self, off: u32, v: u32) {
        self.hw.bar.write32(off as usize, v).unwrap()
    }
    fn qreg(&self, q: u32, rel: u32) -> u32 {
        self.reg(regs::rxq_reg(q, rel).unwrap())
    }
    fn base(&self, lo: u32) -> u64 {
        self.reg(lo) as u64 | (self.reg(lo + 4) as u64) << 32
    }
    /// TX descriptor `index` as the device reads it.
    fn desc(&self, index: u64) -> TxDesc {
        let mut b = [0u8; 32];
        let at = self.base(regs::TX_BASE_LO) + (index % TXN as u64) * 32;
        self.hw.dma.device_read(at, &mut b).unwrap();
        TxDesc::read_from(&b).unwrap()
    }
    fn payload(&self, d: &TxDesc) -> Vec<u8> {
        if let Some(p) = d.inline_payload() {
            return p.to_vec();
        }
        let mut v = vec![0u8; d.len.get() as usize];
        self.hw.dma.device_read(d.iova.get(), &mut v).unwrap();
        v
    }
    /// The device consumed descriptors up to `head`: register and write-back word.
    fn consume(&self, head: u32) {
        self.set(regs::TX_HEAD, head);
        let wb = self.base(regs::TX_WB_LO);
        self.hw
            .dma
            .device_write(wb, &(head as u64).to_le_bytes())
            .unwrap();
    }
    /// Writes a payload at free-running offset `off` of queue `q`'s data ring (wrapping).
    fn write_payload(&self, q: u32, off: u64, data: &[u8]) {
        let base = self.base(regs::rxq_reg(q, regs::rxq::RX_BASE_LO).unwrap());
        let [(s0, n0), (s1, _)] = desc::ring_split(off, data.len() as u64, RX_BYTES as u64);
        let n0 = n0 as usize;
        if n0 > 0 {
            self.hw.dma.device_write(base + s0, &data[..n0]).unwrap();
        }
        if data.len() > n0 {
            self.hw.dma.device_write(base + s1, &data[n0..]).unwrap();
        }
    }
    /// Writes raw completion bytes into slot `index` of queue `q`.
    fn write_completion(&self, q: u32, index: u64, c: &RxCompletion) {
        let base = self.base(regs::rxq_reg(q, regs::rxq::RXC_BASE_LO).unwrap());
        let mut b = [0u8; 32];
        c.emit(&mut b).unwrap();
        self.hw
            .dma
            .device_write(base + (index % RXC as u64) * 32, &b)
            .unwrap();
    }
    /// A message delivered the conforming way: payload, then the completion.
    fn deliver(&self, q: u32, index: u64, off: u64, data: &[u8], src: NetAddr) {
        self.write_payload(q, off, data);
        let c = RxCompletion::new(index, off, data.len() as u32, src.raw(), q as u16, 0).unwrap();
        self.write_completion(q, index, &c);
    }
}

fn setup(demux: bool) -> (Dev, Arc<FpgaDriver<ScriptHw>>) {
    let hw = device(demux);
    let drv = FpgaDriver::new(hw.clone(), cfg()).unwrap();
    (Dev { hw }, drv)
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed))
        .collect()
}

#[test]
fn bring_up_reads_identity_and_programs_the_rings() {
    let (dev, drv) = setup(true);
    assert_eq!((drv.rank(), drv.size(), drv.max_ports()), (1, 4, 2));
    assert_eq!(drv.max_message(), RX_BYTES as usize);
    assert_eq!(
        dev.reg(regs::CTRL),
        regs::ctrl::ENABLE | regs::ctrl::HW_DEMUX_EN
    );
    assert_eq!(dev.reg(regs::TX_SIZE), TXN);
    assert_ne!(dev.base(regs::TX_WB_LO), 0);
    for q in 0..2 {
        assert_eq!(dev.qreg(q, regs::rxq::RX_SIZE), RX_BYTES);
        assert_eq!(dev.qreg(q, regs::rxq::RXC_SIZE), RXC);
        assert_eq!(
            dev.base(regs::rxq_reg(q, regs::rxq::RX_BASE_LO).unwrap()) % 4096,
            0
        );
    }
    assert_eq!(dev.qreg(2, regs::rxq::RX_SIZE), 0, "only max_ports queues");
    assert_eq!(dev.reg(regs::IRQ_MASK), regs::irq::ALL, "polling: masked");
}

#[test]
fn bring_up_refuses_a_foreign_or_broken_device() {
    let hw = device(true);
    hw.bar.write32(regs::ID as usize, 0x1234_5678).unwrap();
    let e = FpgaDriver::new(hw, cfg()).unwrap_err();
    assert!(e.to_string().contains("not a SKIF adapter"), "{e}");

    let hw = device(true);
    hw.bar
        .write32(regs::NODE_COORD as usize, Coord { x: 3, y: 0, z: 0 }.pack())
        .unwrap();
    assert!(matches!(
        FpgaDriver::new(hw, cfg()),
        Err(Error::Bootstrap(_))
    ));

    let hw = device(true);
    hw.bar.write32(regs::STATUS as usize, 0).unwrap(); // never READY
    let e = FpgaDriver::new(hw, cfg()).unwrap_err();
    assert!(e.to_string().contains("STATUS.READY"), "{e}");

    let hw = device(true);
    hw.bar.write32(regs::LINK_STATE as usize, 0x03).unwrap(); // the Y links (Y = 2) never train
    let e = FpgaDriver::new(hw, cfg()).unwrap_err();
    assert!(e.to_string().contains("links"), "{e}");

    let bad = FpgaConfig {
        rx_bytes: 5000,
        ..cfg()
    };
    assert!(matches!(
        FpgaDriver::new(device(true), bad),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn without_hw_demux_only_port_0_opens() {
    let (_dev, drv) = setup(false);
    assert_eq!(drv.max_ports(), 1);
    let p0 = drv.open_port(0).unwrap();
    let e = drv.open_port(1).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("HW_DEMUX")),
        "{e}"
    );
    assert!(matches!(drv.open_port(0), Err(Error::InvalidArgument(_))));
    drop(p0);
    drv.open_port(0).unwrap(); // reopened after close
}

#[test]
fn send_writes_sealed_descriptors_and_rings_the_doorbell() {
    let (dev, drv) = setup(true);
    let mut p = drv.open_port(1).unwrap();
    let to = NetAddr::new(2, 0);
    // Inline (<= 8 bytes), empty, and staged in two iovec parts.
    assert_eq!(
        p.send(to, &[IoSlice::new(b"hi!")], SendMode::Prefix)
            .unwrap(),
        3
    );
    assert_eq!(p.send(to, &[], SendMode::Whole).unwrap(), 0);
    let big = pattern(300, 7);
    let mut scratch = big.clone();
    let n = p
        .send(
            NetAddr::new(3, 1),
            &[IoSlice::new(&big[..100]), IoSlice::new(&big[100..])],
            SendMode::Whole,
        )
        .unwrap();
    assert_eq!(n, 300);
    scratch.fill(0); // the caller's buffers are free on return
    assert_eq!(dev.reg(regs::TX_TAIL), 3);

    let d0 = dev.desc(0);
    assert_eq!(d0.flags.get(), desc::tx_flags::INLINE);
    assert_eq!(
        (d0.len.get(), d0.dst.get(), d0.src_port.get(), d0.seq.get()),
        (3, net_addr(2, 0), 1, 0)
    );
    assert_eq!(dev.payload(&d0), b"hi!");
    let d1 = dev.desc(1);
    assert_eq!((d1.len.get(), d1.seq.get()), (0, 1));
    let d2 = dev.desc(2);
    assert_eq!(d2.flags.get(), 0);
    assert_eq!(
        (d2.len.get(), d2.dst.get(), d2.seq.get()),
        (300, net_addr(3, 1), 2)
    );
    assert_eq!(d2.iova.get() % 8, 0);
    assert_eq!(dev.payload(&d2), big);
    let lim = desc::Limits::new(Dims::new(2, 2, 1).unwrap(), 2, 4, RX_BYTES).unwrap();
    for i in 0..3 {
        dev.desc(i).validate(i, &lim).unwrap();
    }
}

#[test]
fn send_limits_and_bad_addresses() {
    let (dev, drv) = setup(true);
    let mut p = drv.open_port(0).unwrap();
    let huge = vec![1u8; RX_BYTES as usize + 1];
    assert!(matches!(
        p.send(NetAddr::new(0, 0), &[IoSlice::new(&huge)], SendMode::Whole),
        Err(Error::MessageTooLarge { max, .. }) if max == RX_BYTES
    ));
    // Prefix: one message of at most the receiver's ring.
    assert_eq!(
        p.send(NetAddr::new(0, 0), &[IoSlice::new(&huge)], SendMode::Prefix)
            .unwrap(),
        RX_BYTES as usize
    );
    assert!(matches!(
        p.send(NetAddr::new(4, 0), &[IoSlice::new(b"x")], SendMode::Prefix),
        Err(Error::Unreachable {
            why: Unreachable::NoSuchRank,
            ..
        })
    ));
    assert!(matches!(
        p.send(NetAddr::new(0, 2), &[IoSlice::new(b"x")], SendMode::Prefix),
        Err(Error::Unreachable {
            why: Unreachable::NoSuchPort,
            ..
        })
    ));
    let many = vec![IoSlice::new(b"x"); skifch::driver::IOV_MAX + 1];
    assert!(matches!(
        p.send(NetAddr::new(0, 0), &many, SendMode::Prefix),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(dev.reg(regs::TX_TAIL), 1, "failed sends ring no doorbell");
}

#[test]
fn a_full_tx_ring_or_staging_ring_would_block_and_consumes_nothing() {
    let (dev, drv) = setup(true);
    let mut p = drv.open_port(0).unwrap();
    let to = NetAddr::new(0, 1);
    for i in 0..TXN {
        p.send(to, &[IoSlice::new(&[i as u8; 4])], SendMode::Whole)
            .unwrap();
    }
    assert!(matches!(
        p.send(to, &[IoSlice::new(b"more")], SendMode::Prefix),
        Err(Error::WouldBlock)
    ));
    assert_eq!(dev.reg(regs::TX_TAIL), TXN);
    dev.consume(3);
    for i in 0..3 {
        p.send(to, &[IoSlice::new(&[0xA0 + i; 2])], SendMode::Whole)
            .unwrap();
    }
    assert!(matches!(
        p.send(to, &[IoSlice::new(b"x")], SendMode::Whole),
        Err(Error::WouldBlock)
    ));
    assert_eq!(dev.reg(regs::TX_TAIL), TXN + 3);
    assert_eq!(dev.payload(&dev.desc(TXN as u64)), [0xA0, 0xA0]);
    dev.consume(TXN + 3);

    // Staging: 2 × 4096 bytes. Two 4000-byte messages fill it; the third waits.
    let big = pattern(4000, 1);
    for _ in 0..2 {
        p.send(to, &[IoSlice::new(&big)], SendMode::Whole).unwrap();
    }
    let snap = drv.tx_snapshot();
    assert!(matches!(
        p.send(to, &[IoSlice::new(&big)], SendMode::Whole),
        Err(Error::WouldBlock)
    ));
    assert!(matches!(
        p.send(to, &[IoSlice::new(&big)], SendMode::Prefix),
        Err(Error::WouldBlock)
    ));
    assert_eq!(drv.tx_snapshot(), snap, "a refused send consumed nothing");
    // The device reads the first one: its staging space comes back.
    dev.consume(TXN + 4);
    p.send(to, &[IoSlice::new(&big)], SendMode::Whole).unwrap();
    let d = dev.desc((TXN + 5) as u64);
    assert_eq!(dev.payload(&d), big);
    // A write-back behind a register value already read is stale, not a fault.
    let h = drv.reclaim_tx().unwrap().head as u32;
    dev.hw
        .dma
        .device_write(dev.base(regs::TX_WB_LO), &(h as u64 - 1).to_le_bytes())
        .unwrap();
    assert_eq!(drv.reclaim_tx().unwrap().head, h as u64);
    // A write-back beyond what was written is a device fault.
    dev.consume(TXN + 50);
    dev.set(regs::TX_HEAD, TXN + 50);
    assert!(matches!(drv.reclaim_tx(), Err(Error::Corrupt(_))));
    assert!(matches!(
        p.send(to, &[IoSlice::new(b"x")], SendMode::Prefix),
        Err(Error::Corrupt(_))
    ));
}

#[test]
fn receive_one_and_two_segments_complete_in_any_order() {
    let (dev, drv) = setup(true);
    let job = Job::new(drv.clone());
    let ch = job.open(0).unwrap();
    let src = NetAddr::new(3, 1);
    let (a, b) = (pattern(100, 1), pattern(3000, 2));
    dev.deliver(0, 0, 0, &a, src); // span 128
    dev.deliver(0, 1, 128, &b, src); // span 3008 -> next at 3136
    let ma = ch.try_recv().unwrap();
    let mb = ch.try_recv().unwrap();
    assert!(matches!(ch.try_recv(), Err(Error::WouldBlock)));
    assert_eq!(
        (ma.src(), ma.segments().count(), ma.to_vec()),
        (src, 1, a.clone())
    );
    assert_eq!(mb.to_vec(), b);
    // The empty poll published RXC_TAIL; nothing completed yet.
    assert_eq!(dev.qreg(0, regs::rxq::RXC_TAIL), 2);
    assert_eq!(dev.qreg(0, regs::rxq::RX_FREE), 0);
    drop(mb); // out of order: held back by `ma`
    assert!(matches!(ch.try_recv(), Err(Error::WouldBlock)));
    assert_eq!(dev.qreg(0, regs::rxq::RX_FREE), 0);
    drop(ma);
    assert!(matches!(ch.try_recv(), Err(Error::WouldBlock)));
    assert_eq!(dev.qreg(0, regs::rxq::RX_FREE), 3136);

    // A message that wraps the ring end comes out as two segments.
    let c = pattern(1500, 3);
    dev.deliver(0, 2, 3136, &c, NetAddr::new(0, 0));
    let mc = ch.try_recv().unwrap();
    let segs: Vec<usize> = mc.segments().map(|s| s.len()).collect();
    assert_eq!(segs, [960, 540]);
    assert_eq!(mc.to_vec(), c);
    // Zero-length messages take no space.
    dev.deliver(0, 3, 4672, &[], NetAddr::new(2, 0));
    let mz = ch.try_recv().unwrap();
    assert!(mz.is_empty());
    drop(mz);
    drop(mc);
    assert!(matches!(ch.try_recv(), Err(Error::WouldBlock)));
    assert_eq!(dev.qreg(0, regs::rxq::RX_FREE), 4672);
    assert_eq!(dev.qreg(0, regs::rxq::RXC_TAIL), 4);

    // Many laps of the completion ring, in order.
    let mut off = 4672u64;
    for i in 4..40u64 {
        let m = pattern((i * 37 % 700) as usize, i as u8);
        dev.deliver(0, i, off, &m, NetAddr::new(1, 1));
        let got = ch.try_recv().unwrap();
        assert_eq!(got.to_vec(), m);
        off += (m.len() as u64).next_multiple_of(64);
    }
    assert!(matches!(ch.try_recv(), Err(Error::WouldBlock)));
    assert_eq!(dev.qreg(0, regs::rxq::RX_FREE), off as u32);
    assert_eq!(dev.qreg(0, regs::rxq::RXC_TAIL), 40);
}

#[test]
fn a_message_the_network_damaged_is_reported_and_skipped() {
    let (dev, drv) = setup(true);
    let mut p = drv.open_port(0).unwrap();
    let c = RxCompletion::new(0, 0, 200, NetAddr::new(2, 0).raw(), 0, rx_status::CORRUPT).unwrap();
    dev.write_completion(0, 0, &c);
    dev.deliver(0, 1, 256, b"fine", NetAddr::new(2, 0));
    assert!(matches!(p.recv(), Err(Error::Corrupt(m)) if m.contains("damaged")));
    let m = p.recv().unwrap();
    assert_eq!(m.len, 4);
    // SAFETY: the token comes from this port's recv, completed once; no borrow of it exists.
    unsafe { p.complete(m.token) };
    assert!(matches!(p.recv(), Err(Error::WouldBlock)));
    assert_eq!(dev.qreg(0, regs::rxq::RX_FREE), 320);
    assert!(p.broken().is_none());
}

/// Each forged completion breaks the port with `Corrupt`; the queue's indices stay where
/// they were (nothing consumed, nothing released), and later calls keep failing.
#[test]
fn forged_or_stale_completions_break_the_port() {
    let src = NetAddr::new(2, 1).raw();
    let keep = |_: &mut RxCompletion| {};
    // (what, completion index, offset, len, source, destination port, edit after sealing)
    type Edit = fn(&mut RxCompletion);
    let cases: [(&str, u64, u64, u32, u32, u16, Edit); 8] = [
        ("garbage tag", 0, 0, 10, src, 0, |c| {
            c.tag = 0x1234_5678.into()
        }),
        ("tag of a later lap", RXC as u64, 0, 10, src, 0, keep),
        ("bad check word", 0, 0, 10, src, 0, |c| c.len = 11.into()),
        ("length beyond the ring", 0, 0, RX_BYTES + 1, src, 0, keep),
        ("payload not where expected", 0, 64, 10, src, 0, keep),
        (
            "source node out of range",
            0,
            0,
            10,
            NetAddr::new(9, 0).raw(),
            0,
            keep,
        ),
        (
            "source port out of range",
            0,
            0,
            10,
            NetAddr::new(1, 3).raw(),
            0,
            keep,
        ),
        ("wrong destination port", 0, 0, 10, src, 1, keep),
    ];
    for (what, index, off, len, from, port, edit) in cases {
        let forge = |d: &Dev| {
            let mut c = RxCompletion::new(index, off, len, from, port, 0).unwrap();
            edit(&mut c);
            d.write_completion(0, 0, &c)
        };
        let (dev, drv) = setup(true);
        let mut p = drv.open_port(0).unwrap();
        let before = p.rx_snapshot().unwrap();
        forge(&dev);
        match p.ready() {
            Err(Error::Corrupt(_)) => {}
            other => panic!("{what}: ready gave {other:?}"),
        }
        match p.recv() {
            Err(Error::Corrupt(_)) => {}
            other => panic!("{what}: recv gave {other:?}"),
        }
        // Broken: a valid completion now changes nothing, sends are refused too.
        dev.deliver(0, 0, 0, b"valid", NetAddr::new(2, 1));
        assert!(matches!(p.recv(), Err(Error::Corrupt(_))), "{what}");
        assert!(matches!(
            p.send(NetAddr::new(0, 0), &[IoSlice::new(b"x")], SendMode::Prefix),
            Err(Error::Corrupt(_))
        ));
        assert_eq!(p.rx_snapshot().unwrap(), before, "{what}: rings untouched");
        assert_eq!(dev.qreg(0, regs::rxq::RXC_TAIL), 0);
        assert_eq!(dev.qreg(0, regs::rxq::RX_FREE), 0);
        // Other ports of the adapter are unaffected.
        let mut p1 = drv.open_port(1).unwrap();
        assert!(matches!(p1.recv(), Err(Error::WouldBlock)), "{what}");
    }
}

#[test]
fn a_halted_adapter_fails_every_port() {
    let (dev, drv) = setup(true);
    let mut p0 = drv.open_port(0).unwrap();
    let mut p1 = drv.open_port(1).unwrap();
    dev.set(regs::ERR_STATUS, regs::err::TX_DESC_BAD);
    dev.set(regs::ERR_TX_INDEX, 5);
    dev.set(regs::STATUS, regs::status::READY | regs::status::HALTED);
    let mut seen = None;
    for _ in 0..200 {
        match p0.recv() {
            Err(Error::WouldBlock) => continue,
            Err(e) => {
                seen = Some(e);
                break;
            }
            Ok(_) => panic!("no message was written"),
        }
    }
    let e = seen.expect("polling must notice the halt");
    assert!(
        matches!(&e, Error::Corrupt(m) if m.contains("TX_DESC_BAD") && m.contains("index 5")),
        "{e}"
    );
    assert!(matches!(p1.recv(), Err(Error::Corrupt(_))));
    assert!(matches!(
        p1.send(NetAddr::new(0, 0), &[IoSlice::new(b"x")], SendMode::Prefix),
        Err(Error::Corrupt(_))
    ));
}

#[test]
fn a_link_down_loses_the_neighbour() {
    let (dev, drv) = setup(true);
    let mut p = drv.open_port(0).unwrap();
    // Node (1,0,0): +X and -X both lead to (0,0,0) = rank 0; take +Y down: (1,1,0) = rank 3.
    dev.set(regs::LINK_STATE, 0x3F & !(1 << 2));
    dev.set(regs::ERR_STATUS, regs::err::LINK_DOWN);
    drv.check_health().unwrap();
    assert_eq!(
        dev.reg(regs::ERR_STATUS),
        regs::err::LINK_DOWN,
        "RW1C written"
    );
    assert!(matches!(p.recv(), Err(Error::PeerLost { rank: 3 })));
    assert!(matches!(p.ready(), Err(Error::PeerLost { rank: 3 })));
    assert!(matches!(
        p.send(NetAddr::new(3, 0), &[IoSlice::new(b"x")], SendMode::Prefix),
        Err(Error::PeerLost { rank: 3 })
    ));
    assert_eq!(p.waiter().lost_peer(), Some(3));
    // Other destinations still work.
    p.send(NetAddr::new(2, 0), &[IoSlice::new(b"x")], SendMode::Prefix)
        .unwrap();
}

#[test]
fn job_control_reports_a_lost_rank() {
    struct Lost;
    impl JobControl for Lost {
        fn lost(&self) -> Option<u32> {
            Some(2)
        }
    }
    let drv = FpgaDriver::with_job_control(device(true), cfg(), Arc::new(Lost)).unwrap();
    let mut p = drv.open_port(0).unwrap();
    assert!(matches!(p.recv(), Err(Error::PeerLost { rank: 2 })));
    assert!(matches!(
        p.send(NetAddr::new(2, 0), &[IoSlice::new(b"x")], SendMode::Prefix),
        Err(Error::PeerLost { rank: 2 })
    ));
}

#[test]
fn a_blocked_receiver_wakes_on_the_interrupt_and_never_hangs() {
    let (dev, drv) = setup(true);
    let job = Job::new(drv.clone());
    let ch = job.open(0).unwrap();
    ch.set_wait_policy(skifch::WaitPolicy::Block);
    // Nothing comes: a bounded wait times out.
    let t0 = std::time::Instant::now();
    assert!(matches!(
        ch.recv_timeout(Duration::from_millis(50)),
        Err(Error::TimedOut)
    ));
    assert!(t0.elapsed() < Duration::from_secs(2));
    let hw = dev.hw.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        let d = Dev { hw };
        // The driver unmasked RX_READY while it sleeps.
        assert_eq!(d.reg(regs::IRQ_MASK) & regs::irq::RX_READY, 0);
        d.deliver(0, 0, 0, b"wake up", NetAddr::new(0, 0));
        d.hw.irq.signal().unwrap();
    });
    let m = ch.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(m.to_vec(), b"wake up");
    t.join().unwrap();
    assert_eq!(dev.reg(regs::IRQ_MASK), regs::irq::ALL, "masked again");
}

/// End to end over the behavioural model (`fpga::model`): device threads, torus network,
/// the conformance suite with threads as ranks, and injected faults.
mod over_the_model {
    use super::*;
    use fpga::model::{Fault, Machine, ModelConfig};
    use fpga::regs::Link;
    use skifch::conformance;
    use skifch_drivers::fpga::model::{self, ModelHw};

    fn model_cfg() -> ModelConfig {
        ModelConfig {
            hw_demux: true,
            ..ModelConfig::default()
        }
    }

    fn drv_cfg() -> FpgaConfig {
        FpgaConfig {
            tx_entries: 64,
            rx_bytes: 16 << 10,
            rxc_entries: 256,
            max_ports: 2,
            ..FpgaConfig::default()
        }
    }

    fn suite_cfg() -> conformance::Config {
        conformance::Config {
            messages: 300,
            max_payload: 1000,
            pair_memory: 0,
        }
    }

    fn passes_the_suite(x: u8, y: u8, z: u8) {
        let dims = Dims::new(x, y, z).unwrap();
        model::run(dims, model_cfg(), drv_cfg(), |job| {
            conformance::run_all(&job, &suite_cfg())
        })
        .unwrap();
    }

    #[test]
    fn two_nodes_pass_the_conformance_suite() {
        passes_the_suite(2, 1, 1);
    }

    #[test]
    fn four_nodes_pass_the_conformance_suite() {
        passes_the_suite(2, 2, 1);
    }

    #[test]
    fn a_dead_rank_is_reported_to_the_others() {
        let dims = Dims::new(3, 1, 1).unwrap();
        let r = model::run(dims, model_cfg(), drv_cfg(), |job| {
            let mut s = conformance::Suite::new(&job, conformance::Config::small())?;
            // 5 s: room for a survivor thread not scheduled on a loaded machine.
            conformance::peer_failure(&mut s, Duration::from_secs(5), || {
                panic!("rank dies on purpose")
            })
        });
        match r {
            Err(Error::Bootstrap(m)) => assert!(m.contains("rank 2 panicked"), "{m}"),
            other => panic!("expected only the victim to fail, got {other:?}"),
        }
    }

    /// Two drivers of a 2-node machine in this thread, for fault injection.
    fn pair(m: &Machine) -> (Arc<model::ModelDriver>, Arc<model::ModelDriver>) {
        let a = std::thread::scope(|s| {
            let h = s.spawn(|| FpgaDriver::new(ModelHw::attach(m, 1).unwrap(), drv_cfg()));
            let a = FpgaDriver::new(ModelHw::attach(m, 0).unwrap(), drv_cfg()).unwrap();
            (a, h.join().unwrap().unwrap())
        });
        a
    }

    fn recv_within<P: Port>(p: &mut P, t: Duration) -> skifch::Result<skifch::driver::RawMessage> {
        let t0 = std::time::Instant::now();
        loop {
            match p.recv() {
                Err(Error::WouldBlock) if t0.elapsed() < t => std::thread::yield_now(),
                Err(Error::WouldBlock) => return Err(Error::TimedOut),
                r => return r,
            }
        }
    }

    #[test]
    fn a_completion_with_a_bad_length_breaks_only_that_port() {
        let m = Machine::new(Dims::new(2, 1, 1).unwrap(), model_cfg()).unwrap();
        let (a, b) = pair(&m);
        let mut tx = a.open_port(0).unwrap();
        let mut rx = b.open_port(0).unwrap();
        let mut rx1 = b.open_port(1).unwrap();
        let to = NetAddr::new(1, 0);
        tx.send(to, &[IoSlice::new(b"first")], SendMode::Whole)
            .unwrap();
        let first = recv_within(&mut rx, Duration::from_secs(5)).unwrap();
        // SAFETY: token from this port's recv, completed once, no borrow of its segments.
        unsafe { rx.complete(first.token) };
        assert!(matches!(rx.recv(), Err(Error::WouldBlock))); // publishes RX_FREE/RXC_TAIL
        let before = rx.rx_snapshot().unwrap();
        m.inject(1, Fault::BadCompletionLength).unwrap();
        tx.send(to, &[IoSlice::new(b"second")], SendMode::Whole)
            .unwrap();
        match recv_within(&mut rx, Duration::from_secs(5)) {
            Err(Error::Corrupt(msg)) => assert!(msg.contains("RX completion"), "{msg}"),
            other => panic!("expected Corrupt, got {other:?}"),
        }
        assert!(matches!(rx.recv(), Err(Error::Corrupt(_))), "stays broken");
        assert_eq!(
            rx.rx_snapshot().unwrap(),
            before,
            "nothing consumed or released"
        );
        // The adapter and its other queue keep working.
        tx.send(
            NetAddr::new(1, 1),
            &[IoSlice::new(b"other port")],
            SendMode::Whole,
        )
        .unwrap();
        let ok = recv_within(&mut rx1, Duration::from_secs(5)).unwrap();
        assert_eq!(ok.len, 10);
        // SAFETY: as above.
        unsafe { rx1.complete(ok.token) };
        drop((tx, rx, rx1, a, b));
        m.shutdown();
    }

    #[test]
    fn a_stuck_doorbell_gives_would_block_not_a_hang() {
        let m = Machine::new(Dims::new(2, 1, 1).unwrap(), model_cfg()).unwrap();
        let (a, b) = pair(&m);
        let mut tx = a.open_port(0).unwrap();
        let mut rx = b.open_port(0).unwrap();
        m.inject(0, Fault::StuckDoorbell(true)).unwrap();
        let to = NetAddr::new(1, 0);
        let mut sent = 0u32;
        let t0 = std::time::Instant::now();
        loop {
            match tx.send(to, &[IoSlice::new(&sent.to_le_bytes())], SendMode::Whole) {
                Ok(_) => sent += 1,
                Err(Error::WouldBlock) => break,
                Err(e) => panic!("{e}"),
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "no back-pressure");
        }
        assert_eq!(
            sent,
            drv_cfg().tx_entries,
            "the TX ring fills, then would block"
        );
        assert!(matches!(rx.recv(), Err(Error::WouldBlock)));
        let snap = a.tx_snapshot();
        assert_eq!((snap.tail, snap.head), (sent as u64, 0));
        // The doorbell works again: the next doorbell publishes everything written.
        m.inject(0, Fault::StuckDoorbell(false)).unwrap();
        let mut got = 0u32;
        let mut extra_sent = false;
        let t0 = std::time::Instant::now();
        while got <= sent && t0.elapsed() < Duration::from_secs(10) {
            // One more message: refused (and the doorbell rung again) while the ring is
            // full, taken once the device has drained it.
            if !extra_sent {
                extra_sent = tx
                    .send(to, &[IoSlice::new(&sent.to_le_bytes())], SendMode::Whole)
                    .is_ok();
            }
            match rx.recv() {
                Ok(msg) => {
                    // SAFETY: token from this port's recv, completed once.
                    unsafe { rx.complete(msg.token) };
                    got += 1;
                }
                Err(Error::WouldBlock) => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(got, sent + 1, "every message arrives once");
        drop((tx, rx, a, b));
        m.shutdown();
    }

    #[test]
    fn a_link_down_is_reported_as_a_lost_peer() {
        let m = Machine::new(Dims::new(2, 1, 1).unwrap(), model_cfg()).unwrap();
        let (a, b) = pair(&m);
        let mut pa = a.open_port(0).unwrap();
        let job = Job::new(b.clone());
        let ch = job.open(0).unwrap();
        m.inject(0, Fault::LinkDown(Link::PlusX)).unwrap();
        m.inject(0, Fault::LinkDown(Link::MinusX)).unwrap();
        // A blocked receiver wakes with the error (ERROR/LINK_CHANGE interrupt or its
        // bounded sleep), never hangs.
        let t0 = std::time::Instant::now();
        match ch.recv_timeout(Duration::from_secs(5)) {
            Err(Error::PeerLost { rank: 0 }) => {}
            other => panic!("expected PeerLost(0), got {other:?}"),
        }
        assert!(t0.elapsed() < Duration::from_secs(2));
        let t0 = std::time::Instant::now();
        loop {
            match pa.send(NetAddr::new(1, 0), &[IoSlice::new(b"x")], SendMode::Whole) {
                Err(Error::PeerLost { rank: 1 }) => break,
                Ok(_) | Err(Error::WouldBlock) => std::thread::sleep(Duration::from_millis(1)),
                Err(e) => panic!("{e}"),
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "send never failed");
        }
        drop((pa, ch, job, a, b));
        m.shutdown();
    }
}

/// The vfio backend (a real card) fits the same driver: `FpgaDriver<VfioDevice<_>>`.
#[test]
fn the_vfio_backend_fits_the_driver() {
    fn driver_over<H: Hw + Send + Sync + 'static>() -> &'static str {
        std::any::type_name::<FpgaDriver<H>>()
    }
    use skifch_drivers::fpga::{vfio::VfioDevice, vfio_fake::FakeVfio, vfio_sys::LinuxVfio};
    assert!(driver_over::<VfioDevice<LinuxVfio>>().contains("FpgaDriver"));
    assert!(driver_over::<VfioDevice<FakeVfio>>().contains("FpgaDriver"));
}
