//! BAR0 of one adapter: the registers as atomic words with the datasheet's access rules.
//!
//! The host side is [`Bar::host_read`] / [`Bar::host_write`]; the device side (the
//! device engine stepping the adapter and the routers, fault injection) uses the `pub(crate)` methods.
//! Everything that must not interleave with `CTRL.RESET` (ENABLE's latch and check, the
//! device's index, error and interrupt updates) runs under one small lock ([`Ctl`]) and
//! is tagged with the reset epoch it belongs to, so a device step that started before a
//! reset cannot write stale state after it.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use super::{lock, IrqSink, Wake};
use crate::regs::{self, ctrl, err, irq, rxq, status, Access, Coord, Dims, Link, Reset};
use crate::{Error, Result};

/// Number of 64-bit counters (`CNT_TX_MSGS` .. `CNT_RX_DROPPED`).
const COUNTERS: usize = 11;

/// A 64-bit event counter (`CNT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counter {
    TxMsgs = 0,
    TxPkts,
    TxBytes,
    RxMsgs,
    RxPkts,
    RxBytes,
    FwdPkts,
    CreditStalls,
    RxStalls,
    PktCorrupt,
    RxDropped,
}

/// One RX queue's latched configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RxqCfg {
    pub base: u64,
    pub size: u32,
    pub rxc_base: u64,
    pub rxc_size: u32,
}

/// The ring configuration latched at ENABLE (0 → 1) and checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RingCfg {
    pub tx_base: u64,
    pub tx_size: u32,
    pub tx_wb: u64,
    /// Per queue `0..CAPS.RX_QUEUES`; `None` = off (`RX_SIZE` 0). Queue 0 is always on.
    pub rxq: Vec<Option<RxqCfg>>,
    /// `CTRL.HW_DEMUX_EN` (and `CAPS.HW_DEMUX`).
    pub demux: bool,
}

/// What the device engine reads at the start of a step.
#[derive(Clone, Debug)]
pub(crate) struct Snapshot {
    pub epoch: u64,
    /// Enabled, not halted, and configured: the engines may run.
    pub cfg: Option<Arc<RingCfg>>,
    pub reset_pending: bool,
}

/// State changed by the host (reset, enable) and by fault injection, under one lock.
#[derive(Default)]
struct Ctl {
    /// Incremented by every `CTRL.RESET`.
    epoch: u64,
    /// The device engine has not acknowledged the last reset yet (STATUS.READY clear).
    reset_pending: bool,
    /// The device engine steps an adapter for this BAR (else a reset completes at once).
    attached: bool,
    cfg: Option<Arc<RingCfg>>,
    /// Links whose cable is down (fault injection), bit = link index.
    link_down: u8,
    stuck_doorbell: bool,
    bad_completion: bool,
    corrupt_packet: bool,
}

/// BAR0 of one adapter: `BAR0_SIZE / 4` atomic words, reset values per `regs::REGISTERS`.
///
/// # Examples
/// ```
/// use fpga::model::Bar;
/// use fpga::regs::{self, Coord, Dims};
/// let bar = Bar::new(Coord { x: 1, y: 0, z: 0 }, Dims::new(2, 2, 2).unwrap(), 0x0001_0402, 256);
/// assert_eq!(bar.host_read(regs::IRQ_MASK).unwrap(), regs::irq::ALL);
/// bar.host_write(regs::IRQ_MASK, 0).unwrap();
/// bar.host_write(regs::ID, 0).unwrap(); // RO: ignored
/// assert_eq!(bar.host_read(regs::ID).unwrap(), regs::ID_VALUE);
/// assert!(bar.host_read(0x1001).is_err()); // unaligned
/// ```
pub struct Bar {
    words: Box<[AtomicU32]>,
    counters: [AtomicU64; COUNTERS],
    latches: [AtomicU32; COUNTERS],
    ctl: Mutex<Ctl>,
    /// Wakes the device engine (doorbells, CTRL, RX_FREE, RXC_TAIL, faults): the
    /// machine's event counter, shared by all its BARs.
    pub(crate) wake: Arc<Wake>,
    sink: Mutex<Option<Arc<dyn IrqSink>>>,
    /// An unmasked interrupt cause was set under the lock: raise after unlocking.
    irq_due: AtomicBool,
    coord: Coord,
    dims: Dims,
    caps: u32,
    max_pkt: u32,
    /// Links that exist (dimension extent ≥ 2).
    link_exists: u8,
}

impl std::fmt::Debug for Bar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bar")
            .field("coord", &self.coord)
            .field("dims", &self.dims)
            .field("caps", &format_args!("{:#x}", self.caps))
            .finish_non_exhaustive()
    }
}

fn word_index(off: u32) -> Result<usize> {
    if off & 3 != 0 || off >= regs::BAR0_SIZE {
        return Err(Error::BadConfig(format!(
            "BAR0 access at {off:#x}: must be 4-byte aligned and below {:#x}",
            regs::BAR0_SIZE
        )));
    }
    Ok((off / 4) as usize)
}

fn counter_of(off: u32) -> Option<(usize, bool)> {
    if (regs::CNT_TX_MSGS..regs::CNT_RX_DROPPED + 8).contains(&off) {
        let rel = off - regs::CNT_TX_MSGS;
        Some(((rel / 8) as usize, rel % 8 == 4))
    } else {
        None
    }
}

impl Bar {
    /// A BAR at reset for node `node` of a `dims` torus with `CAPS = caps` and
    /// `MAX_PKT = max_pkt` (not checked here: [`super::Machine::new`] checks its
    /// configuration). No engine steps it: a RESET completes at once.
    pub fn new(node: Coord, dims: Dims, caps: u32, max_pkt: u32) -> Arc<Bar> {
        Bar::with_wake(node, dims, caps, max_pkt, Arc::default())
    }

    /// [`Bar::new`] notifying `wake` (the machine's) of host events.
    pub(crate) fn with_wake(
        node: Coord,
        dims: Dims,
        caps: u32,
        max_pkt: u32,
        wake: Arc<Wake>,
    ) -> Arc<Bar> {
        let mut link_exists = 0u8;
        for l in Link::ALL {
            if dims.get(l.dim()) >= 2 {
                link_exists |= 1 << l.index();
            }
        }
        let bar = Bar {
            words: (0..regs::BAR0_SIZE / 4)
                .map(|_| AtomicU32::new(0))
                .collect(),
            counters: Default::default(),
            latches: Default::default(),
            ctl: Mutex::new(Ctl::default()),
            wake,
            sink: Mutex::new(None),
            irq_due: AtomicBool::new(false),
            coord: node,
            dims,
            caps,
            max_pkt,
            link_exists,
        };
        bar.reset_words();
        Arc::new(bar)
    }

    /// `CAPS.RX_QUEUES`.
    pub fn rx_queues(&self) -> u32 {
        (self.caps & regs::caps::RX_QUEUES_MASK) >> regs::caps::RX_QUEUES_SHIFT
    }

    /// This node's coordinates.
    pub fn coord(&self) -> Coord {
        self.coord
    }

    /// The torus dimensions.
    pub fn dims(&self) -> Dims {
        self.dims
    }

    fn w(&self, off: u32) -> &AtomicU32 {
        &self.words[(off / 4) as usize]
    }

    /// Raw device-side read of a register word (no side effects).
    pub(crate) fn get(&self, off: u32) -> u32 {
        self.w(off).load(SeqCst)
    }

    fn reset_words(&self) {
        for (i, w) in self.words.iter().enumerate() {
            let off = i as u32 * 4;
            let v = match regs::find(off) {
                Some(r) if self.is_register(off) => match (r.name, r.reset) {
                    (_, Reset::Value(v)) => v,
                    ("CAPS", Reset::Param) => self.caps,
                    ("MAX_PKT", Reset::Param) => self.max_pkt,
                    ("NODE_COORD", Reset::Param) => self.coord.pack(),
                    ("TORUS_DIMS", Reset::Param) => self.dims.pack(),
                    (_, Reset::Param) => 0,
                },
                _ => 0,
            };
            w.store(v, SeqCst);
        }
        for (c, l) in self.counters.iter().zip(&self.latches) {
            c.store(0, SeqCst);
            l.store(0, SeqCst);
        }
    }

    /// A defined register: in the table, and not in an RX queue block past `RX_QUEUES`.
    fn is_register(&self, off: u32) -> bool {
        if off >= regs::RXQ_BASE && (off - regs::RXQ_BASE) / regs::RXQ_STRIDE >= self.rx_queues() {
            return false;
        }
        regs::find(off).is_some()
    }

    /// Driver-side MMIO read. Reserved offsets read 0; reading a counter's LO word latches
    /// its HI word. `Err` only for an unaligned or out-of-range offset.
    pub fn host_read(&self, off: u32) -> Result<u32> {
        word_index(off)?;
        if let Some((i, hi)) = counter_of(off) {
            if hi {
                return Ok(self.latches[i].load(SeqCst));
            }
            let v = self.counters[i].load(SeqCst);
            self.latches[i].store((v >> 32) as u32, SeqCst);
            return Ok(v as u32);
        }
        if !self.is_register(off) {
            return Ok(0);
        }
        Ok(self.get(off))
    }

    /// Driver-side MMIO write: RO and reserved offsets ignore it, RW1C clears the bits
    /// written as 1, `CTRL.RESET` resets the adapter (self-clearing; `STATUS.READY` returns
    /// when the device has finished its step), `CTRL.ENABLE` 0 → 1 latches and checks the
    /// ring configuration; doorbells (`TX_TAIL`, `RX_FREE`, `RXC_TAIL`) wake the device.
    /// `Err` only for an unaligned or out-of-range offset.
    pub fn host_write(&self, off: u32, v: u32) -> Result<()> {
        word_index(off)?;
        if !self.is_register(off) {
            return Ok(());
        }
        let Some(info) = regs::find(off) else {
            return Ok(());
        };
        match info.access {
            Access::Ro => return Ok(()),
            Access::Rw1c => {
                self.w(off).fetch_and(!v, SeqCst);
                return Ok(());
            }
            Access::Rw => {}
        }
        match off {
            regs::CTRL => self.write_ctrl(v),
            regs::TX_TAIL => {
                if !lock(&self.ctl).stuck_doorbell {
                    self.w(off).store(v, SeqCst);
                }
            }
            regs::IRQ_MASK => {
                self.w(off).store(v & irq::ALL, SeqCst);
                // A cause pending under the old mask fires when unmasked (level semantics).
                if self.get(regs::IRQ_STATUS) & !v & irq::ALL != 0 {
                    self.irq_due.store(true, SeqCst);
                }
            }
            _ => self.w(off).store(v, SeqCst),
        }
        self.flush_irq();
        self.wake.notify();
        Ok(())
    }

    fn write_ctrl(&self, v: u32) {
        let mut c = lock(&self.ctl);
        if v & ctrl::RESET != 0 {
            self.reset_words();
            c.epoch += 1;
            c.cfg = None;
            c.bad_completion = false;
            c.corrupt_packet = false;
            if c.attached {
                // READY returns when the engine has dropped its state.
                self.w(regs::STATUS).store(0, SeqCst);
                c.reset_pending = true;
            }
            return;
        }
        let demux = if self.caps & regs::caps::HW_DEMUX != 0 {
            ctrl::HW_DEMUX_EN
        } else {
            0
        };
        let new = v & (ctrl::ENABLE | demux);
        let old = self.w(regs::CTRL).swap(new, SeqCst);
        if old & ctrl::ENABLE != 0 && new & ctrl::ENABLE == 0 {
            c.cfg = None;
        }
        if old & ctrl::ENABLE == 0 && new & ctrl::ENABLE != 0 {
            match self.latch(new & ctrl::HW_DEMUX_EN != 0) {
                Ok(cfg) => {
                    c.cfg = Some(Arc::new(cfg));
                    self.set_links_locked(&c);
                }
                Err(_) => {
                    c.cfg = None;
                    self.set_err_locked(err::RING_CONFIG, None);
                }
            }
        }
    }

    /// Latches and checks the ring configuration (datasheet "Ring configuration").
    fn latch(&self, demux: bool) -> Result<RingCfg> {
        let pair = |lo: u32| self.get(lo) as u64 | (self.get(lo + 4) as u64) << 32;
        let tx_base = pair(regs::TX_BASE_LO);
        let tx_size = self.get(regs::TX_SIZE);
        let tx_wb = pair(regs::TX_WB_LO);
        regs::check_ring_base("TX_BASE", tx_base)?;
        regs::check_ring_entries("TX_SIZE", tx_size)?;
        if tx_wb & 7 != 0 {
            return Err(Error::BadConfig(format!(
                "TX_WB = {tx_wb:#x}: 8-byte aligned"
            )));
        }
        let mut queues = Vec::new();
        for q in 0..self.rx_queues() {
            let r = |rel| regs::rxq_reg(q, rel).unwrap_or(regs::RX_BASE_LO);
            let size = self.get(r(rxq::RX_SIZE));
            if size == 0 {
                if q == 0 {
                    return Err(Error::BadConfig("RX queue 0 must be on".into()));
                }
                queues.push(None);
                continue;
            }
            let cfg = RxqCfg {
                base: pair(r(rxq::RX_BASE_LO)),
                size,
                rxc_base: pair(r(rxq::RXC_BASE_LO)),
                rxc_size: self.get(r(rxq::RXC_SIZE)),
            };
            regs::check_rx_bytes(cfg.size)?;
            regs::check_ring_base("RX_BASE", cfg.base)?;
            regs::check_ring_base("RXC_BASE", cfg.rxc_base)?;
            regs::check_ring_entries("RXC_SIZE", cfg.rxc_size)?;
            queues.push(Some(cfg));
        }
        Ok(RingCfg {
            tx_base,
            tx_size,
            tx_wb,
            rxq: queues,
            demux,
        })
    }

    fn set_links_locked(&self, c: &Ctl) {
        let enabled = self.get(regs::CTRL) & ctrl::ENABLE != 0;
        let v = if enabled {
            (self.link_exists & !c.link_down) as u32
        } else {
            0
        };
        if self.w(regs::LINK_STATE).swap(v, SeqCst) != v {
            self.set_irq_locked(irq::LINK_CHANGE);
        }
    }

    fn set_irq_locked(&self, bits: u32) {
        self.w(regs::IRQ_STATUS).fetch_or(bits, SeqCst);
        if bits & !self.get(regs::IRQ_MASK) != 0 {
            self.irq_due.store(true, SeqCst);
        }
    }

    fn set_err_locked(&self, bits: u32, tx_index: Option<u32>) {
        let old = self.w(regs::ERR_STATUS).fetch_or(bits, SeqCst);
        if let Some(i) = tx_index {
            if old & (err::TX_DESC_BAD | err::DMA_FAULT) == 0 {
                self.w(regs::ERR_TX_INDEX).store(i, SeqCst);
            }
        }
        if bits & err::FATAL != 0 {
            self.w(regs::STATUS).fetch_or(status::HALTED, SeqCst);
        }
        self.set_irq_locked(irq::ERROR);
    }

    fn flush_irq(&self) {
        if self.irq_due.swap(false, SeqCst) {
            let sink = lock(&self.sink).clone();
            if let Some(s) = sink {
                s.raise(0);
            }
        }
    }

    // ---- device side -------------------------------------------------------------------

    pub(crate) fn attach(&self, sink: Arc<dyn IrqSink>) -> Result<()> {
        let mut c = lock(&self.ctl);
        if c.attached {
            return Err(Error::BadConfig("model: node already attached".into()));
        }
        c.attached = true;
        *lock(&self.sink) = Some(sink);
        Ok(())
    }

    /// The engine stopped stepping the adapter: resets complete at once again.
    pub(crate) fn detach(&self) {
        let mut c = lock(&self.ctl);
        c.attached = false;
        if c.reset_pending {
            c.reset_pending = false;
            self.w(regs::STATUS).store(status::READY, SeqCst);
        }
    }

    /// What a device step starts from.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let c = lock(&self.ctl);
        let run = self.get(regs::STATUS) & status::HALTED == 0
            && self.get(regs::CTRL) & ctrl::ENABLE != 0;
        Snapshot {
            epoch: c.epoch,
            cfg: if run { c.cfg.clone() } else { None },
            reset_pending: c.reset_pending,
        }
    }

    /// The engine has dropped its state for reset `epoch`: READY.
    pub(crate) fn ack_reset(&self, epoch: u64) {
        let mut c = lock(&self.ctl);
        if c.epoch == epoch && c.reset_pending {
            c.reset_pending = false;
            self.w(regs::STATUS).store(status::READY, SeqCst);
        }
    }

    /// Runs `f` with the register file if no reset happened since `epoch` (and the device
    /// is still running); raises a due interrupt afterwards. `None` if stale.
    pub(crate) fn dev<R>(&self, epoch: u64, f: impl FnOnce(&DevRegs<'_>) -> R) -> Option<R> {
        let r = {
            let c = lock(&self.ctl);
            if c.epoch != epoch {
                return None;
            }
            let r = f(&DevRegs { bar: self });
            drop(c);
            r
        };
        self.flush_irq();
        Some(r)
    }

    pub(crate) fn count(&self, c: Counter, n: u64) {
        self.counters[c as usize].fetch_add(n, SeqCst);
    }

    /// Fault injection: link `l` goes down (`up == false`) or comes back.
    pub(crate) fn set_link_fault(&self, l: Link, up: bool) {
        {
            let mut c = lock(&self.ctl);
            let was_up = self.get(regs::LINK_STATE) & (1 << l.index()) != 0;
            if up {
                c.link_down &= !(1 << l.index());
            } else {
                c.link_down |= 1 << l.index();
            }
            self.set_links_locked(&c);
            if !up && was_up {
                self.set_err_locked(err::LINK_DOWN, None);
            }
        }
        self.flush_irq();
        self.wake.notify();
    }

    pub(crate) fn set_stuck_doorbell(&self, on: bool) {
        lock(&self.ctl).stuck_doorbell = on;
    }

    pub(crate) fn arm_bad_completion(&self) {
        lock(&self.ctl).bad_completion = true;
    }

    pub(crate) fn arm_corrupt_packet(&self) {
        lock(&self.ctl).corrupt_packet = true;
    }

    /// Takes an armed one-shot fault (`BadCompletionLength`).
    pub(crate) fn take_bad_completion(&self) -> bool {
        std::mem::take(&mut lock(&self.ctl).bad_completion)
    }

    /// Takes an armed one-shot fault (`CorruptPacket`).
    pub(crate) fn take_corrupt_packet(&self) -> bool {
        std::mem::take(&mut lock(&self.ctl).corrupt_packet)
    }

    /// Raises error bits now, whatever the epoch (network-side events: a router dropping a
    /// corrupt packet).
    pub(crate) fn raise_err(&self, bits: u32) {
        {
            let _c = lock(&self.ctl);
            self.set_err_locked(bits, None);
        }
        self.flush_irq();
    }
}

/// The register file while the device holds the control lock for a current epoch.
pub(crate) struct DevRegs<'a> {
    bar: &'a Bar,
}

impl DevRegs<'_> {
    pub(crate) fn set(&self, off: u32, v: u32) {
        self.bar.w(off).store(v, SeqCst);
    }
    pub(crate) fn irq(&self, bits: u32) {
        self.bar.set_irq_locked(bits);
    }
    /// Sets `ERR_STATUS` bits (+ `ERR_TX_INDEX` for descriptor faults, HALTED if fatal)
    /// and raises ERROR.
    pub(crate) fn err(&self, bits: u32, tx_index: Option<u32>) {
        self.bar.set_err_locked(bits, tx_index);
    }
}
