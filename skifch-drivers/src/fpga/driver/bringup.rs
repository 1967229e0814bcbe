//! Bring-up: [`FpgaDriver::with_job_control`] as a sequence of named steps, in the order
//! of the datasheet's handshake (`fpga/README.md`, "Driver/device handshake"; the
//! [driver docs](super), "Bring-up"): configuration checked, adapter identified, reset,
//! geometry read, TX and RX rings configured, `ENABLE`, links awaited.

use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fpga::desc::{self, Limits, RxCompletion, TxDesc};
use fpga::regs::{self, Caps, Coord, Dims};
use skifch::driver::Reclaim;
use skifch::wait::Backoff;
use skifch::{Error, Result};

use super::super::hw::{DmaMemory, Hw};
use super::rx::RxQueue;
use super::tx::TxRing;
use super::waiter::IrqState;
use super::{
    bad_config, bootstrap, describe_err, expected_links, FpgaConfig, FpgaDriver, JobControl,
    NoJobControl, NO_LOSS,
};

/// Polls `done` until it says yes, for at most `timeout` (then [`Error::Bootstrap`] naming
/// `what`). A register poll: a short spin, a few yields, then 200 µs naps.
pub(super) fn wait_for(
    what: &str,
    timeout: Duration,
    mut done: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let t0 = Instant::now();
    let mut backoff = Backoff::with(Backoff::SPINS, 64, Duration::from_micros(200));
    loop {
        if done()? {
            return Ok(());
        }
        if t0.elapsed() > timeout {
            return Err(bootstrap(format!(
                "timed out after {timeout:?} waiting for {what}"
            )));
        }
        backoff.snooze();
    }
}

fn read<H: Hw>(hw: &H, off: u32) -> Result<u32> {
    hw.read32(off as usize)
}

fn write<H: Hw>(hw: &H, off: u32, v: u32) -> Result<()> {
    hw.write32(off as usize, v)
}

/// Writes a 64-bit address into a `LO`/`HI` register pair.
fn write_addr<H: Hw>(hw: &H, lo: u32, hi: u32, addr: u64) -> Result<()> {
    write(hw, lo, addr as u32)?;
    write(hw, hi, (addr >> 32) as u32)
}

/// What the registers say about the adapter and the torus, and what the driver makes of
/// it with its configuration (ports, credit windows, limits).
struct Geometry {
    caps: Caps,
    max_pkt: u32,
    dims: Dims,
    coord: Coord,
    rank: u32,
    size: u32,
    /// Ports per node according to CAPS.
    hw_ports: u32,
    /// Software credit flow control is on (the queue after the last data port is the
    /// credit queue).
    credit: bool,
    /// Ports that can be opened (= data RX queues configured).
    ports: u32,
    win_bytes: u64,
    win_msgs: u32,
    max_msg: usize,
    limits: Limits,
}

/// Step 1: the configuration's ring sizes; returns the staging ring's size.
fn check_config(cfg: &FpgaConfig) -> Result<u64> {
    regs::check_ring_entries("tx_entries", cfg.tx_entries).map_err(bad_config)?;
    regs::check_ring_entries("rxc_entries", cfg.rxc_entries).map_err(bad_config)?;
    regs::check_rx_bytes(cfg.rx_bytes).map_err(bad_config)?;
    let staging = if cfg.staging_bytes == 0 {
        2 * cfg.rx_bytes as u64
    } else {
        cfg.staging_bytes as u64
    };
    if !staging.is_power_of_two() || staging < 2 * cfg.rx_bytes as u64 {
        return Err(Error::InvalidArgument(
            format!("fpga driver configuration: staging_bytes {staging} must be a power of two of at least 2 × rx_bytes").into(),
        ));
    }
    if cfg.max_ports == 0 {
        return Err(Error::InvalidArgument(
            "fpga driver configuration: max_ports must be at least 1".into(),
        ));
    }
    Ok(staging)
}

/// Step 2: a BAR0 large enough for the register map, `ID`, and the major of `VERSION`.
fn identify<H: Hw>(hw: &H) -> Result<()> {
    if hw.len() < regs::BAR0_SIZE as usize {
        return Err(bootstrap(format!(
            "BAR0 of {} bytes, the register map needs {}",
            hw.len(),
            regs::BAR0_SIZE
        )));
    }
    let id = read(hw, regs::ID)?;
    if id != regs::ID_VALUE {
        return Err(bootstrap(format!(
            "ID reads {id:#010x}, expected {:#010x} (\"SKIF\"): not a SKIF adapter",
            regs::ID_VALUE
        )));
    }
    let version = read(hw, regs::VERSION)?;
    if version >> 16 != regs::VERSION_VALUE >> 16 {
        return Err(bootstrap(format!(
            "register map version {}.{}, this driver speaks {}.x",
            version >> 16,
            version & 0xFFFF,
            regs::VERSION_VALUE >> 16
        )));
    }
    Ok(())
}

/// Step 3: `CTRL.RESET` and a bounded wait for `STATUS.READY`.
fn reset<H: Hw>(hw: &H, cfg: &FpgaConfig) -> Result<()> {
    write(hw, regs::CTRL, 0)?;
    write(hw, regs::CTRL, regs::ctrl::RESET)?;
    wait_for("STATUS.READY after reset", cfg.ready_timeout, || {
        Ok(read(hw, regs::STATUS)? & regs::status::READY != 0)
    })
}

/// Step 4: `CAPS`, `MAX_PKT`, `TORUS_DIMS`, `NODE_COORD` read and validated; the ports,
/// credit windows and message limits derived from them.
fn read_geometry<H: Hw>(hw: &H, cfg: &FpgaConfig) -> Result<Geometry> {
    let caps = Caps::unpack(read(hw, regs::CAPS)?).map_err(|e| bootstrap(e.to_string()))?;
    let max_pkt = read(hw, regs::MAX_PKT)?;
    regs::check_max_pkt(max_pkt).map_err(|e| bootstrap(e.to_string()))?;
    let dims = Dims::unpack(read(hw, regs::TORUS_DIMS)?).map_err(|e| bootstrap(e.to_string()))?;
    let coord = Coord::unpack(read(hw, regs::NODE_COORD)?).map_err(|e| bootstrap(e.to_string()))?;
    let rank = dims.node_id(coord).map_err(|e| bootstrap(e.to_string()))? as u32;
    let size = dims.nodes();
    let hw_ports = caps.ports().min(1 << 16);
    // With credits, the queue after the last data port carries credit returns.
    let credit = cfg.credits && caps.hw_demux && hw_ports >= 2 && caps.rx_queues >= 2;
    let ports = if caps.hw_demux {
        let room = if credit { 1 } else { 0 };
        (hw_ports - room)
            .min(caps.rx_queues as u32 - room)
            .min(cfg.max_ports)
    } else {
        1
    };
    let (win_bytes, win_msgs) = if credit {
        ((cfg.rx_bytes / size) as u64 & !63, cfg.rxc_entries / size)
    } else {
        (cfg.rx_bytes as u64, cfg.rxc_entries)
    };
    if win_bytes < 64 || win_msgs == 0 {
        return Err(Error::InvalidArgument(
            format!(
                "fpga driver configuration: rx_bytes {} / rxc_entries {} leave no credit for each of {size} nodes",
                cfg.rx_bytes, cfg.rxc_entries
            )
            .into(),
        ));
    }
    let max_msg = (win_bytes as usize).min(desc::MAX_MSG as usize);
    let limits = Limits::new(dims, ports + credit as u32, desc::VCS_MAX, max_msg as u32)
        .map_err(|e| bootstrap(e.to_string()))?;
    Ok(Geometry {
        caps,
        max_pkt,
        dims,
        coord,
        rank,
        size,
        hw_ports,
        credit,
        ports,
        win_bytes,
        win_msgs,
        max_msg,
        limits,
    })
}

/// Step 5: the TX descriptor ring, the staging ring and the `TX_WB` word, in DMA memory,
/// and their registers.
fn setup_tx<H: Hw>(
    hw: &H,
    dma: &H::Dma,
    cfg: &FpgaConfig,
    geo: &Geometry,
    staging: u64,
) -> Result<TxRing<H::Dma>> {
    let ring = dma.alloc(cfg.tx_entries as usize * TxDesc::SIZE)?;
    let stage = dma.alloc(staging as usize)?;
    let wb = dma.alloc(8)?;
    for (what, b) in [("TX_BASE", &ring), ("TX staging", &stage)] {
        regs::check_ring_base(what, b.iova()).map_err(|e| bootstrap(e.to_string()))?;
    }
    write_addr(hw, regs::TX_BASE_LO, regs::TX_BASE_HI, ring.iova())?;
    write(hw, regs::TX_SIZE, cfg.tx_entries)?;
    write_addr(hw, regs::TX_WB_LO, regs::TX_WB_HI, wb.iova())?;
    let dests = (geo.size * geo.ports) as usize;
    Ok(TxRing {
        ring,
        stage,
        wb,
        entries: cfg.tx_entries as u64,
        tail: 0,
        head: 0,
        stage_bytes: staging,
        stage_head: 0,
        stage_tail: 0,
        stage_end: vec![0; cfg.tx_entries as usize].into_boxed_slice(),
        used: vec![(0, 0); dests],
        closed: vec![false; dests],
        pkts: 0,
        max_pkt: geo.max_pkt as u64,
    })
}

/// Step 6 (per queue): RX queue `q`'s data and completion rings, in DMA memory, and its
/// registers.
fn setup_rx_queue<H: Hw>(
    hw: &H,
    dma: &H::Dma,
    q: u32,
    bytes: u32,
    entries: u32,
    nodes: u32,
) -> Result<RxQueue<H::Dma>> {
    let reg = |rel: u32| {
        regs::rxq_reg(q, rel).ok_or_else(|| bootstrap(format!("RX queue {q} has no registers")))
    };
    let data = dma.alloc(bytes as usize)?;
    let comp = dma.alloc(entries as usize * RxCompletion::SIZE)?;
    for (what, b) in [("RX_BASE", &data), ("RXC_BASE", &comp)] {
        regs::check_ring_base(what, b.iova()).map_err(|e| bootstrap(e.to_string()))?;
    }
    use regs::rxq;
    write_addr(
        hw,
        reg(rxq::RX_BASE_LO)?,
        reg(rxq::RX_BASE_HI)?,
        data.iova(),
    )?;
    write(hw, reg(rxq::RX_SIZE)?, bytes)?;
    write(hw, reg(rxq::RX_FREE)?, 0)?;
    write_addr(
        hw,
        reg(rxq::RXC_BASE_LO)?,
        reg(rxq::RXC_BASE_HI)?,
        comp.iova(),
    )?;
    write(hw, reg(rxq::RXC_SIZE)?, entries)?;
    write(hw, reg(rxq::RXC_TAIL)?, 0)?;
    Ok(RxQueue {
        port: q,
        data,
        comp,
        bytes: bytes as u64,
        entries: entries as u64,
        tail: 0,
        next_off: 0,
        done: Reclaim::new(0),
        pub_free: 0,
        pub_tail: 0,
        reg_free: reg(rxq::RX_FREE)? as usize,
        reg_tail: reg(rxq::RXC_TAIL)? as usize,
        pending: Default::default(),
        owed: vec![(0, 0); nodes as usize],
        owed_msgs: 0,
        was_closed: false,
    })
}

/// The RX queues of a driver: one per data port, and the credit queue if credits are on.
type Queues<D> = (Vec<Mutex<Option<RxQueue<D>>>>, Option<Mutex<RxQueue<D>>>);

/// Step 6: every port's RX queue (configured before `ENABLE` latches the bases, open or
/// not), then the credit queue, sized for every credit message that can be outstanding
/// (at most one per data message in flight: `ports × rxc_entries`).
fn setup_rx<H: Hw>(
    hw: &H,
    dma: &H::Dma,
    cfg: &FpgaConfig,
    geo: &Geometry,
) -> Result<Queues<H::Dma>> {
    let queues = (0..geo.ports)
        .map(|q| {
            let rx = setup_rx_queue(hw, dma, q, cfg.rx_bytes, cfg.rxc_entries, geo.size)?;
            Ok(Mutex::new(Some(rx)))
        })
        .collect::<Result<Vec<_>>>()?;
    if !geo.credit {
        return Ok((queues, None));
    }
    let entries = (geo.ports * cfg.rxc_entries)
        .next_power_of_two()
        .clamp(regs::RING_ENTRIES_MIN, regs::RING_ENTRIES_MAX);
    let bytes = (entries * regs::RX_ALIGN)
        .next_power_of_two()
        .clamp(regs::RX_BYTES_MIN, regs::RX_BYTES_MAX);
    let ctl = setup_rx_queue(hw, dma, geo.ports, bytes, entries, geo.size)?;
    Ok((queues, Some(Mutex::new(ctl))))
}

/// Step 7: interrupts masked, `CTRL.ENABLE` (+ `HW_DEMUX_EN`), then `STATUS.READY`, not
/// `HALTED`, and `ERR_STATUS == 0`.
fn enable<H: Hw>(hw: &H, caps: Caps) -> Result<()> {
    write(hw, regs::IRQ_MASK, regs::irq::ALL)?;
    write(hw, regs::IRQ_COALESCE_NS, 0)?;
    let demux = if caps.hw_demux {
        regs::ctrl::HW_DEMUX_EN
    } else {
        0
    };
    write(hw, regs::CTRL, regs::ctrl::ENABLE | demux)?;
    let st = read(hw, regs::STATUS)?;
    let e = read(hw, regs::ERR_STATUS)?;
    if st & regs::status::READY == 0 || st & regs::status::HALTED != 0 || e != 0 {
        return Err(bootstrap(format!(
            "not running after ENABLE: STATUS {st:#x}, ERR_STATUS {e:#x} ({})",
            describe_err(e)
        )));
    }
    Ok(())
}

/// Step 8: a bounded wait for every link the torus has (`LINK_STATE`).
fn wait_links<H: Hw>(hw: &H, dims: Dims, timeout: Duration) -> Result<()> {
    let want = expected_links(dims);
    wait_for(
        &format!("the torus links (LINK_STATE mask {want:#x})"),
        timeout,
        || Ok(read(hw, regs::LINK_STATE)? & want == want),
    )
}

impl<H: Hw + Send + Sync + 'static> FpgaDriver<H> {
    /// Brings the adapter up with no job-control hook ([`NoJobControl`]).
    pub fn new(hw: H, cfg: FpgaConfig) -> Result<Arc<Self>> {
        Self::with_job_control(hw, cfg, Arc::new(NoJobControl))
    }

    /// Brings the adapter up (see the module docs, "Bring-up"); `job` reports lost ranks.
    pub fn with_job_control(hw: H, cfg: FpgaConfig, job: Arc<dyn JobControl>) -> Result<Arc<Self>> {
        let staging = check_config(&cfg)?;
        identify(&hw)?;
        reset(&hw, &cfg)?;
        let geo = read_geometry(&hw, &cfg)?;
        let dma = hw.dma();
        let tx = setup_tx(&hw, &dma, &cfg, &geo, staging)?;
        let (queues, ctl) = setup_rx(&hw, &dma, &cfg, &geo)?;
        enable(&hw, geo.caps)?;
        wait_links(&hw, geo.dims, cfg.link_timeout)?;
        Ok(Arc::new(FpgaDriver {
            hw,
            cfg,
            caps: geo.caps,
            coord: geo.coord,
            dims: geo.dims,
            max_pkt: geo.max_pkt,
            rank: geo.rank,
            size: geo.size,
            ports: geo.ports,
            hw_ports: geo.hw_ports,
            limits: geo.limits,
            max_msg: geo.max_msg,
            win_bytes: geo.win_bytes,
            win_msgs: geo.win_msgs,
            tx: Mutex::new(tx),
            queues,
            ctl,
            fatal: AtomicBool::new(false),
            fatal_err: Mutex::new(None),
            lost: AtomicU32::new(NO_LOSS),
            job,
            irq: IrqState::new(),
        }))
    }
}
