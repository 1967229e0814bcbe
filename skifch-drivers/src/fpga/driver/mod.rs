//! The SKIF adapter driver: SkifCh's [`Driver`] / [`Port`] / [`Waiter`] over the adapter's
//! rings, written once against the hardware seam [`Hw`] (backends: `vfio` for a real card,
//! `model` for the behavioural device of the `fpga` crate, or a test playing the device).
//!
//! Reference: the datasheet `fpga/README.md` ("Driver/device handshake") and the driver
//! obligations 1–7 of [`skifch::driver`].
//!
//! # Bring-up ([`FpgaDriver::new`])
//! `ID` and the major of `VERSION` are checked, then `CTRL.RESET` and a bounded wait for
//! `STATUS.READY`; `CAPS`, `MAX_PKT`, `NODE_COORD` and `TORUS_DIMS` are read and validated
//! (rank = the linear node id, size = X·Y·Z). Then, in DMA memory: the TX descriptor ring, a
//! TX payload *staging* ring, the `TX_WB` write-back word, and one RX queue (data ring +
//! completion ring) per port — with `CAPS.HW_DEMUX` one queue per port (port `p` → queue
//! `p`), else only queue 0 and only port 0 can be opened. Ring bases and sizes are latched
//! at `ENABLE`, so every queue is configured before it, whether its port is open or not:
//! messages to a port that is not open yet wait in its queue (back-pressure when full), as
//! with the shm driver. Finally `CTRL.ENABLE` (+ `HW_DEMUX_EN`), `STATUS.READY`,
//! `ERR_STATUS == 0` and the links the torus has are checked.
//!
//! # Send (obligations 1, 2)
//! One descriptor per message. Payloads up to [`desc::INLINE_MAX`] bytes go inline in the
//! descriptor; larger ones are copied once from the caller's iovec into the staging ring
//! (so the caller's buffers are free on return), 8-byte aligned and contiguous (a payload
//! never wraps the staging ring: the tail of a lap is skipped). A descriptor slot and its
//! staging bytes are reclaimed when `TX_HEAD` (the write-back word, or the register when
//! the ring looks full) passes the descriptor. No slot or no staging room: `WouldBlock`,
//! nothing consumed; [`SendMode::Prefix`] sends a prefix when a worthwhile part fits.
//! Messages are limited to the receiver's RX data ring (every node runs the same
//! configuration) and to [`desc::MAX_MSG`]. The descriptor is written into the ring with
//! atomic stores, then the `TX_TAIL` doorbell (an MMIO write is ordered after earlier
//! stores to DMA memory, see [`super::hw::Mmio`]).
//!
//! # Receive (obligations 5, 7)
//! The driver polls the tag word of the completion slot at its `RXC_TAIL`. A tag that is
//! neither this completion's nor the previous lap's (or zero in the first lap) is a forged
//! or misplaced entry. A fresh entry is copied once into a private shadow and validated
//! against the driver's own state ([`RxCompletion::validate`] with [`RxExpect`]: payload
//! exactly where the previous one ended, inside the space released to the device, length
//! and source in range) and its destination port must be the queue's. Any violation is
//! [`Error::Corrupt`] and breaks the port: every later call fails with the same error (as
//! the shm `RingPort` does) and nothing further is read from the queue. The message's
//! segments point into the RX data ring (two when it wraps the ring end) through
//! [`DmaBuffer::cpu_slice`]: the device does not write that range until `RX_FREE` passes it,
//! which happens only after the message's [`Port::complete`].
//!
//! A completion with a status bit (TOO_LARGE, TRUNCATED, CORRUPT: a message damaged or cut
//! by the network) is consumed, its span released, and reported as an error for that one
//! message ([`Error::MessageTooLarge`] / [`Error::Corrupt`]) without breaking the port.
//!
//! # RecvComp
//! Any order. Space is reclaimed up to the oldest message still held (out-of-order
//! completions wait in a small list). `RX_FREE` and `RXC_TAIL` are written *lazily*: when a
//! quarter of the ring has accumulated, on every empty poll (so a device waiting for room
//! is never starved by an idle receiver), and when the port closes.
//!
//! # Credits (software flow control)
//! The adapter has one TX ring per node, consumed in order, and its network and ejection
//! are credit-flow-controlled per link, not per port: a message to a full queue stops
//! everything behind it (a full port 0 at one rank would stall that rank's senders'
//! traffic to every other port and rank — the conformance suite's barrier after its
//! back-pressure fill deadlocks). So, with `CAPS.HW_DEMUX` and a spare RX queue
//! ([`FpgaConfig::credits`]), each sender may have at most `rx_bytes / size` bytes (in
//! 64-byte spans) and `rxc_entries / size` messages outstanding at each (node, port); a
//! send beyond that is `WouldBlock` before it reaches the TX ring, so everything in the
//! ring has room at its destination and always drains. The receiver returns credit
//! once the space is released *and* published (`RX_FREE`, `RXC_TAIL`), as an inline
//! 8-byte message (`port: u16, messages: u16, bytes: u32`) to the sender's credit queue
//! (the RX queue after the last data port): when a quarter of a window has accumulated,
//! and all of it whenever the receiving port polls empty. Senders take credit messages
//! on every send and empty poll. The price: the largest message is `rx_bytes / size`.
//!
//! The credit queue also carries *port-state notices* (a message with no credit): a port
//! closed by its owner (not by a panic: a dying rank is lost, not closing) tells every
//! live node, and senders then refuse sends to it with `Unreachable` (`Closed`) as on
//! shm; reopening it tells them again. The owner's own ports learn at once; other nodes
//! when the notice arrives (what was sent before waits in the closed port's queue).
//!
//! # Errors and peer loss (obligation 6)
//! `ERR_STATUS` and `STATUS` are read on slow paths only (every 64th empty poll or refused
//! send, after every sleep): a fatal bit (`TX_DESC_BAD`, `DMA_FAULT`, `RING_CONFIG`,
//! `DOORBELL_BAD`) or `HALTED` is [`Error::Corrupt`] for every port of the adapter;
//! `LINK_DOWN` / `NO_ROUTE` make the neighbour across the down link a lost peer
//! ([`Error::PeerLost`] for empty receives and sends to it); the job launcher's view
//! comes through [`JobControl`]. Sends to a rank or port outside the job are
//! [`Error::Unreachable`]. Nothing panics on device misbehaviour; every wait is bounded.
//! A `TX_TAIL` doorbell the device lost is rung again whenever the ring looks full.
//!
//! # Shutdown
//! Dropping the driver (after its last port) waits, at most [`FpgaConfig::drain_timeout`],
//! until the device has injected every packet of every descriptor written (`TX_HEAD` and
//! `CNT_TX_PKTS`), so a message whose `send` succeeded is not lost by the reset that
//! follows; then `CTRL.RESET`, and only then is DMA memory unmapped.
//!
//! # Files
//! `bringup.rs` (bring-up, one named step per register group), `tx.rs` (descriptor and
//! staging rings), `rx.rs` (RX queues: completions, lazy publishing), `credits.rs` (credit
//! flow control and port-state notices on the credit queue), `port.rs` (the [`Port`]: send,
//! receive, RecvComp), `waiter.rs` (interrupt sleeps); `mod.rs` holds the driver's state,
//! its health checks and shutdown.
//!
//! [`Port`]: skifch::driver::Port
//! [`Waiter`]: skifch::driver::Waiter
//! [`Port::complete`]: skifch::driver::Port::complete
//! [`SendMode::Prefix`]: skifch::driver::SendMode::Prefix
//! [`desc::INLINE_MAX`]: fpga::desc::INLINE_MAX
//! [`desc::MAX_MSG`]: fpga::desc::MAX_MSG
//! [`RxCompletion::validate`]: fpga::desc::RxCompletion::validate
//! [`RxExpect`]: fpga::desc::RxExpect
//! [`DmaBuffer::cpu_slice`]: super::hw::DmaBuffer::cpu_slice

mod bringup;
mod credits;
mod port;
mod rx;
mod tx;
mod waiter;

pub use port::FpgaPort;
pub use rx::RxSnapshot;
pub use tx::TxSnapshot;
pub use waiter::FpgaWaiter;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use fpga::desc::Limits;
use fpga::regs::{self, Caps, Coord, Dim, Dims, Link};
use skifch::driver::Driver;
use skifch::{Error, NetAddr, Result, Unreachable};

use super::hw::Hw;
use bringup::wait_for;
use rx::RxQueue;
use tx::TxRing;
use waiter::IrqState;

/// The launcher's view of the job: which rank, if any, died. The adapter alone cannot tell
/// a dead process from a quiet one; a launcher integration implements this (e.g. from a
/// shared job-state word). The default says "nobody lost".
pub trait JobControl: Send + Sync + 'static {
    /// The first rank known lost, if any.
    fn lost(&self) -> Option<u32> {
        None
    }
    /// Whether `rank` left the job cleanly (finalized): sends to it are then
    /// `Unreachable` (`Closed`), as on the shm driver, instead of going into a network
    /// nobody drains. The default knows of no such rank.
    fn finalized(&self, rank: u32) -> bool {
        let _ = rank;
        false
    }
    /// Records a rank's request that the whole job end with `status`
    /// ([`crate::jobctl::JobCtl::request_exit`]); returns the status the job will end
    /// with. The default has no launcher to tell: `status`.
    fn request_exit(&self, status: i32) -> i32 {
        status
    }
    /// The status a rank asked the job to end with, if any. The default: none.
    fn exit_request(&self) -> Option<i32> {
        None
    }
}

/// A [`JobControl`] that never reports a loss (peer loss is then seen only through the
/// adapter's link state).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoJobControl;
impl JobControl for NoJobControl {}

/// Ring sizes and time limits of the driver. Every node of a job must use the same
/// configuration: a sender limits messages by its own `rx_bytes`, assumed to be the
/// receiver's.
#[derive(Clone, Debug)]
pub struct FpgaConfig {
    /// TX descriptor ring entries (power of two, 8..=65536).
    pub tx_entries: u32,
    /// RX data ring bytes per port (power of two, 4 KiB..=1 GiB): the largest message.
    pub rx_bytes: u32,
    /// RX completion ring entries per port (power of two, 8..=65536).
    pub rxc_entries: u32,
    /// TX staging ring bytes (power of two, at least `2 × rx_bytes`; 0 = exactly that).
    pub staging_bytes: u32,
    /// Most ports (RX queues) to configure.
    pub max_ports: u32,
    /// Longest wait for `STATUS.READY` after a reset.
    pub ready_timeout: Duration,
    /// Longest wait for the torus links after `ENABLE`.
    pub link_timeout: Duration,
    /// Longest single interrupt wait of a [`Waiter`](skifch::driver::Waiter) (sleeps are re-armed by the caller).
    pub irq_slice: Duration,
    /// Software credit flow control (needs `CAPS.HW_DEMUX` and a spare RX queue): see the
    /// module docs, "Credits". Off, a full receiver blocks its senders' whole TX ring.
    pub credits: bool,
    /// Longest wait, when the driver is dropped, for the device to send what is queued.
    pub drain_timeout: Duration,
}

impl Default for FpgaConfig {
    fn default() -> Self {
        FpgaConfig {
            tx_entries: 256,
            rx_bytes: 64 << 10,
            rxc_entries: 1024,
            staging_bytes: 0,
            max_ports: 4,
            ready_timeout: Duration::from_secs(1),
            link_timeout: Duration::from_secs(2),
            irq_slice: Duration::from_millis(20),
            credits: true,
            drain_timeout: Duration::from_secs(2),
        }
    }
}

const NO_LOSS: u32 = u32::MAX;
/// Health checks (MMIO reads of STATUS/ERR_STATUS) run once per this many empty polls.
const HEALTH_EVERY: u32 = 64;
/// Successful sends between two health checks.
const SENDS_PER_HEALTH_CHECK: u32 = 256;

fn bootstrap(what: String) -> Error {
    Error::Bootstrap(format!("fpga adapter: {what}").into())
}

fn bad_config(e: fpga::Error) -> Error {
    Error::InvalidArgument(format!("fpga driver configuration: {e}").into())
}

/// Names the bits of an `ERR_STATUS` value.
pub fn describe_err(bits: u32) -> String {
    const NAMES: [&str; 8] = [
        "TX_DESC_BAD",
        "DMA_FAULT",
        "RX_OVERFLOW",
        "LINK_DOWN",
        "PKT_CORRUPT",
        "RING_CONFIG",
        "DOORBELL_BAD",
        "NO_ROUTE",
    ];
    let v: Vec<&str> = (0..8)
        .filter(|i| bits & (1 << i) != 0)
        .map(|i| NAMES[i])
        .collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join("|")
    }
}

// ---------------------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------------------

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The adapter driver of one node (one rank): see the [module docs](self).
pub struct FpgaDriver<H: Hw + Send + Sync + 'static> {
    hw: H,
    cfg: FpgaConfig,
    caps: Caps,
    coord: Coord,
    dims: Dims,
    max_pkt: u32,
    rank: u32,
    size: u32,
    /// Ports that can be opened (= RX queues configured).
    ports: u32,
    /// Ports per node according to CAPS.
    hw_ports: u32,
    limits: Limits,
    max_msg: usize,
    /// Credit window of one sender at one receiving port: bytes (spans) and messages.
    win_bytes: u64,
    win_msgs: u32,
    tx: Mutex<TxRing<H::Dma>>,
    queues: Vec<Mutex<Option<RxQueue<H::Dma>>>>,
    /// The credit-return queue (`None`: no software flow control).
    ctl: Option<Mutex<RxQueue<H::Dma>>>,
    fatal: AtomicBool,
    fatal_err: Mutex<Option<Error>>,
    lost: AtomicU32,
    job: Arc<dyn JobControl>,
    irq: IrqState,
}

impl<H: Hw + Send + Sync + 'static> std::fmt::Debug for FpgaDriver<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FpgaDriver")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("coord", &self.coord)
            .field("dims", &self.dims)
            .field("caps", &self.caps)
            .field("ports", &self.ports)
            .finish()
    }
}

impl<H: Hw + Send + Sync + 'static> FpgaDriver<H> {
    /// The backend.
    pub fn hw(&self) -> &H {
        &self.hw
    }
    /// This node's torus coordinates.
    pub fn coord(&self) -> Coord {
        self.coord
    }
    /// The torus dimensions.
    pub fn dims(&self) -> Dims {
        self.dims
    }
    /// The adapter's capabilities.
    pub fn caps(&self) -> Caps {
        self.caps
    }
    /// The adapter's largest packet payload.
    pub fn max_pkt(&self) -> u32 {
        self.max_pkt
    }
    /// The configuration in use.
    pub fn config(&self) -> &FpgaConfig {
        &self.cfg
    }
    /// The TX side's indices.
    pub fn tx_snapshot(&self) -> TxSnapshot {
        let t = lock(&self.tx);
        TxSnapshot {
            tail: t.tail,
            head: t.head,
            stage_head: t.stage_head,
            stage_tail: t.stage_tail,
        }
    }
    /// Re-reads the TX head (write-back word, then the register) and reclaims what the
    /// device consumed; returns the new indices.
    pub fn reclaim_tx(&self) -> Result<TxSnapshot> {
        self.check_fatal()?;
        let r = lock(&self.tx).reclaim(&self.hw, true);
        if let Err(e) = r {
            return Err(self.set_fatal(e));
        }
        Ok(self.tx_snapshot())
    }

    #[inline]
    fn check_fatal(&self) -> Result<()> {
        if self.fatal.load(Ordering::Relaxed) {
            return Err(self.fatal_error());
        }
        Ok(())
    }

    #[cold]
    fn fatal_error(&self) -> Error {
        lock(&self.fatal_err)
            .clone()
            .unwrap_or_else(|| Error::Corrupt("fpga adapter: halted".into()))
    }

    #[cold]
    fn set_fatal(&self, e: Error) -> Error {
        let mut g = lock(&self.fatal_err);
        let e = g.get_or_insert(e).clone();
        self.fatal.store(true, Ordering::Release);
        e
    }

    /// The job control this driver was brought up with ([`JobControl`]).
    pub fn job_control(&self) -> &Arc<dyn JobControl> {
        &self.job
    }

    /// The first rank known lost: by the job launcher, or across a link that went down.
    pub fn lost_peer(&self) -> Option<u32> {
        match self.lost.load(Ordering::Relaxed) {
            NO_LOSS => {
                let r = self.job.lost()?;
                let _ =
                    self.lost
                        .compare_exchange(NO_LOSS, r, Ordering::Relaxed, Ordering::Relaxed);
                Some(r)
            }
            r => Some(r),
        }
    }

    /// Reads `STATUS` / `ERR_STATUS` and turns what they say into the driver's state:
    /// fatal errors halt every port ([`Error::Corrupt`]); a link down loses the neighbour
    /// behind it; non-fatal per-message causes are cleared (their completions report them).
    #[cold]
    pub fn check_health(&self) -> Result<()> {
        self.check_fatal()?;
        let _ = self.lost_peer();
        let st = self.hw.read32(regs::STATUS as usize)?;
        let e = self.hw.read32(regs::ERR_STATUS as usize)?;
        if st & regs::status::HALTED != 0 || e & regs::err::FATAL != 0 {
            let mut what = format!(
                "fpga adapter halted (STATUS {st:#x}, ERR_STATUS {e:#x}: {})",
                describe_err(e)
            );
            if e & (regs::err::TX_DESC_BAD | regs::err::DMA_FAULT) != 0 {
                let i = self.hw.read32(regs::ERR_TX_INDEX as usize)?;
                what.push_str(&format!(", first bad TX descriptor index {i}"));
            }
            return Err(self.set_fatal(Error::Corrupt(what.into())));
        }
        if e != 0 {
            if e & (regs::err::LINK_DOWN | regs::err::NO_ROUTE) != 0 {
                let up = self.hw.read32(regs::LINK_STATE as usize)?;
                let down = expected_links(self.dims) & !up;
                if let Some(link) = (0..6u8).find(|i| down & (1 << i) != 0) {
                    let peer = Link::from_index(link)
                        .and_then(|l| self.dims.neighbour(self.coord, l))
                        .and_then(|c| self.dims.node_id(c));
                    if let Ok(p) = peer {
                        let _ = self.lost.compare_exchange(
                            NO_LOSS,
                            p as u32,
                            Ordering::Relaxed,
                            Ordering::Relaxed,
                        );
                    }
                }
            }
            self.hw.write32(regs::ERR_STATUS as usize, e)?; // RW1C
        }
        Ok(())
    }

    fn unreachable(&self, dst: NetAddr) -> Option<Error> {
        let why = if dst.rank() >= self.size {
            Unreachable::NoSuchRank
        } else if dst.port() >= self.ports {
            Unreachable::NoSuchPort
        } else {
            return None;
        };
        Some(Error::Unreachable { addr: dst, why })
    }
}

/// `LINK_STATE` bits of the links a torus of `dims` has (none along an extent of 1).
fn expected_links(dims: Dims) -> u32 {
    let ext = [Dim::X, Dim::Y, Dim::Z].map(|d| dims.get(d));
    (0..3)
        .filter(|&d| ext[d] > 1)
        .fold(0, |m, d| m | 0b11 << (2 * d))
}

impl<H: Hw + Send + Sync + 'static> FpgaDriver<H> {
    /// Whether the device has injected every packet of every descriptor written (a reset
    /// before that would lose messages whose `send` already succeeded).
    fn tx_drained(&self) -> Result<bool> {
        let mut tx = lock(&self.tx);
        tx.reclaim(&self.hw, true)?;
        if tx.head != tx.tail {
            return Ok(false);
        }
        let lo = self.hw.read32(regs::CNT_TX_PKTS as usize)?; // latches HI
        let hi = self.hw.read32(regs::CNT_TX_PKTS as usize + 4)?;
        Ok((hi as u64) << 32 | lo as u64 >= tx.pkts)
    }
}

impl<H: Hw + Send + Sync + 'static> Drop for FpgaDriver<H> {
    fn drop(&mut self) {
        // Let the device send what was queued (bounded: a receiver that never drains
        // back-pressures forever), then stop it before the rings are unmapped.
        if !self.fatal.load(Ordering::Relaxed) {
            let _ = wait_for("the TX ring to drain", self.cfg.drain_timeout, || {
                self.tx_drained().or(Ok(true))
            });
        }
        let _ = self.hw.write32(regs::CTRL as usize, 0);
        let _ = self.hw.write32(regs::CTRL as usize, regs::ctrl::RESET);
        let _ = wait_for("STATUS.READY", Duration::from_millis(200), || {
            Ok(self.hw.read32(regs::STATUS as usize)? & regs::status::READY != 0)
        });
    }
}

impl<H: Hw + Send + Sync + 'static> Driver for FpgaDriver<H> {
    type Port = FpgaPort<H>;

    fn name(&self) -> &'static str {
        "fpga"
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
    fn open_port(self: &Arc<Self>, port: u32) -> Result<FpgaPort<H>> {
        if port >= self.ports {
            let why = if !self.caps.hw_demux && port < self.hw_ports {
                format!(
                    "port {port}: this adapter lacks CAPS.HW_DEMUX (per-port RX queues), so only port 0 can be opened"
                )
            } else {
                format!("port {port} out of range: ports are 0..{}", self.ports)
            };
            return Err(Error::InvalidArgument(why.into()));
        }
        let mut rx = lock(&self.queues[port as usize])
            .take()
            .ok_or_else(|| Error::InvalidArgument(format!("port {port} is already open").into()))?;
        if std::mem::take(&mut rx.was_closed) {
            self.notify_port_state(port, true);
        }
        Ok(FpgaPort {
            drv: self.clone(),
            addr: NetAddr::new(self.rank as u16, port as u16),
            rx: Some(rx),
            broken: None,
            polls: 0,
            refusals: 0,
            sends: 0,
        })
    }
    fn max_message(&self) -> usize {
        self.max_msg
    }
}
