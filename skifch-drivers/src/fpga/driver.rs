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
#![allow(unsafe_code)] // `unsafe impl Port` and `DmaBuffer::cpu_slice` for received payloads

use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use fpga::desc::{self, Limits, RxCompletion, RxExpect, TxDesc};
use fpga::regs::{self, Caps, Coord, Dim, Dims, Link};
use skifch::driver::{
    iov_total, partial_prefix, Driver, Port, RawMessage, RawSeg, Reclaim, SendMode, Token, Waiter,
};
use skifch::{Error, NetAddr, Result, Unreachable};

use super::hw::{DmaBuffer, DmaMemory, Hw};

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
    /// Longest single interrupt wait of a [`Waiter`] (sleeps are re-armed by the caller).
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
// TX: descriptor ring + staging ring (shared by every port of the adapter)
// ---------------------------------------------------------------------------------------

struct TxRing<D: DmaMemory> {
    ring: DmaBuffer<D>,
    stage: DmaBuffer<D>,
    wb: DmaBuffer<D>,
    entries: u64,
    /// Descriptors written (free-running; `TX_TAIL` is its low 32 bits).
    tail: u64,
    /// Descriptors the device has consumed (validated copy of `TX_HEAD`).
    head: u64,
    stage_bytes: u64,
    /// Staging bytes handed out / reclaimed (free-running).
    stage_head: u64,
    stage_tail: u64,
    /// Per descriptor slot: `stage_head` after that descriptor (what its consumption frees).
    stage_end: Box<[u64]>,
    /// Credits in use per destination `node * ports + port`: bytes (spans) and messages.
    used: Vec<(u64, u32)>,
    /// Per destination: its owner closed the port (a port-state notice said so).
    closed: Vec<bool>,
    /// Packets the device will have injected once it has sent every descriptor written.
    pkts: u64,
    max_pkt: u64,
}

/// The TX side's indices, for tests and diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxSnapshot {
    /// Descriptors written (free-running).
    pub tail: u64,
    /// Descriptors known consumed by the device.
    pub head: u64,
    /// Staging bytes handed out (free-running).
    pub stage_head: u64,
    /// Staging bytes reclaimed (free-running).
    pub stage_tail: u64,
}

impl<D: DmaMemory> TxRing<D> {
    /// Start (free-running) of `n` contiguous staging bytes, if they fit now.
    fn stage_fit(&self, n: u64) -> Option<u64> {
        let free = self.stage_bytes - (self.stage_head - self.stage_tail);
        let pos = self.stage_head & (self.stage_bytes - 1);
        let to_end = self.stage_bytes - pos;
        if n <= to_end {
            (n <= free).then_some(self.stage_head)
        } else {
            (to_end + n <= free).then_some(self.stage_head + to_end)
        }
    }

    /// The largest `n` that [`TxRing::stage_fit`] accepts now.
    fn stage_room(&self) -> u64 {
        let free = self.stage_bytes - (self.stage_head - self.stage_tail);
        let to_end = self.stage_bytes - (self.stage_head & (self.stage_bytes - 1));
        free.min(to_end).max(free.saturating_sub(to_end))
    }

    /// Advances `head` from the write-back word (or the `TX_HEAD` register when `deep`),
    /// validated: the device cannot have consumed descriptors that were never written.
    fn reclaim<H: Hw>(&mut self, hw: &H, deep: bool) -> Result<()> {
        let mut v = self.wb.load64(0, Ordering::Acquire)? as u32;
        if deep && v == self.head as u32 {
            v = hw.read32(regs::TX_HEAD as usize)?;
        }
        let ahead = v.wrapping_sub(self.head as u32) as u64;
        let behind = (self.head as u32).wrapping_sub(v) as u64;
        if behind <= self.entries && ahead > self.tail - self.head {
            // A write-back older than a register read already taken (the device writes
            // the register first, then the write-back word): nothing new.
            return Ok(());
        }
        if ahead > self.tail - self.head {
            return Err(Error::Corrupt(
                format!(
                    "fpga adapter: TX_HEAD {v} is beyond the descriptors written (head {}, tail {})",
                    self.head, self.tail
                )
                .into(),
            ));
        }
        if ahead > 0 {
            self.head += ahead;
            let end = self.stage_end[((self.head - 1) & (self.entries - 1)) as usize];
            self.stage_tail = self.stage_tail.max(end);
        }
        Ok(())
    }

    /// The ring is full: rings the doorbell again with the same tail (harmless for a
    /// device that saw it; recovers from a doorbell write the device lost) and reports
    /// back-pressure.
    #[cold]
    fn kick<H: Hw>(&self, hw: &H) -> Error {
        let _ = hw.write32(regs::TX_TAIL as usize, self.tail as u32);
        Error::WouldBlock
    }

    fn send<H: Hw>(
        &mut self,
        hw: &H,
        dst: u32,
        src_port: u16,
        iov: &[IoSlice<'_>],
        want: usize,
        mode: SendMode,
    ) -> Result<usize> {
        if self.tail - self.head >= self.entries {
            self.reclaim(hw, true)?;
            if self.tail - self.head >= self.entries {
                return Err(self.kick(hw));
            }
        }
        let index = self.tail;
        let slot = (index & (self.entries - 1)) as usize;
        let (d, n) = if want <= desc::INLINE_MAX {
            let mut b = [0u8; desc::INLINE_MAX];
            gather(iov, &mut b[..want]);
            let d = TxDesc::new_inline(&b[..want], dst, src_port, 0, index);
            (d, want)
        } else {
            let rounded = |n: usize| (n as u64).next_multiple_of(8);
            let mut start = self.stage_fit(rounded(want));
            if start.is_none() {
                self.reclaim(hw, true)?;
                start = self.stage_fit(rounded(want));
            }
            let (start, n) = match start {
                Some(s) => (s, want),
                None => {
                    let room = (self.stage_room() & !7) as usize;
                    let Some(room) = partial_prefix(mode, room, want, self.stage_bytes as usize)
                    else {
                        return Err(self.kick(hw));
                    };
                    match self.stage_fit(room as u64) {
                        Some(s) => (s, room),
                        None => return Err(self.kick(hw)),
                    }
                }
            };
            let off = (start & (self.stage_bytes - 1)) as usize;
            scatter(&self.stage, off, iov, n)?;
            self.stage_head = start + rounded(n);
            let d = TxDesc::new(
                self.stage.iova() + off as u64,
                n as u32,
                dst,
                src_port,
                0,
                index,
            );
            (d, n)
        };
        let d = d.map_err(|e| Error::InvalidArgument(format!("TX descriptor: {e}").into()))?;
        let mut bytes = [0u8; TxDesc::SIZE];
        d.emit(&mut bytes)
            .map_err(|e| Error::InvalidArgument(format!("TX descriptor: {e}").into()))?;
        self.ring.write(slot * TxDesc::SIZE, &bytes)?;
        self.stage_end[slot] = self.stage_head;
        self.tail += 1;
        self.pkts += (n as u64).div_ceil(self.max_pkt).max(1);
        // The doorbell: ordered after the descriptor and payload stores (`Mmio::write32`).
        hw.write32(regs::TX_TAIL as usize, self.tail as u32)?;
        Ok(n)
    }
}

/// Copies the first `out.len()` bytes of `iov` into `out`.
fn gather(iov: &[IoSlice<'_>], out: &mut [u8]) {
    let mut at = 0;
    for s in iov {
        if at == out.len() {
            break;
        }
        let k = s.len().min(out.len() - at);
        out[at..at + k].copy_from_slice(&s[..k]);
        at += k;
    }
}

/// Copies the first `n` bytes of `iov` into `buf` at `off` (atomic stores).
fn scatter<D: DmaMemory>(
    buf: &DmaBuffer<D>,
    off: usize,
    iov: &[IoSlice<'_>],
    n: usize,
) -> Result<()> {
    let mut at = 0;
    for s in iov {
        if at == n {
            break;
        }
        let k = s.len().min(n - at);
        buf.write(off + at, &s[..k])?;
        at += k;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// RX queues (one per port)
// ---------------------------------------------------------------------------------------

struct RxQueue<D: DmaMemory> {
    port: u32,
    data: DmaBuffer<D>,
    comp: DmaBuffer<D>,
    bytes: u64,
    entries: u64,
    /// Index of the next completion (the driver's RXC_TAIL, unwrapped).
    tail: u64,
    /// Where the next completion's payload must start (previous offset + span).
    next_off: u64,
    /// RX bytes reclaimed: completions in any order, up to the oldest message still held.
    done: Reclaim,
    /// Values last written to RX_FREE / RXC_TAIL (unwrapped).
    pub_free: u64,
    pub_tail: u64,
    reg_free: usize,
    reg_tail: usize,
    /// Credits: consumed messages not yet released, in ring order `(end, span, node)`.
    pending: std::collections::VecDeque<(u64, u64, usize)>,
    /// Credits: per source node, bytes and messages released and not yet returned.
    owed: Vec<(u64, u32)>,
    owed_msgs: u32,
    /// The port was open and closed: opening it again tells the senders.
    was_closed: bool,
}

/// One RX queue's indices, for tests and diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxSnapshot {
    /// Next completion index expected.
    pub rxc_tail: u64,
    /// Where the next payload must start.
    pub next_offset: u64,
    /// RX bytes reclaimed by RecvComp so far.
    pub released: u64,
    /// Last value written to RX_FREE (unwrapped).
    pub published_free: u64,
    /// Last value written to RXC_TAIL (unwrapped).
    pub published_tail: u64,
    /// Messages completed out of order, waiting for an older one.
    pub out_of_order: usize,
}

impl<D: DmaMemory> RxQueue<D> {
    fn snapshot(&self) -> RxSnapshot {
        RxSnapshot {
            rxc_tail: self.tail,
            next_offset: self.next_off,
            released: self.done.freed(),
            published_free: self.pub_free,
            published_tail: self.pub_tail,
            out_of_order: self.done.waiting(),
        }
    }

    /// Looks at the completion slot at the tail: `None` while the device has not written
    /// it; a fresh entry is copied into a shadow and validated (not consumed). A tag that
    /// is neither this completion's nor the previous lap's, or an entry that fails
    /// validation, is [`Error::Corrupt`].
    fn poll(&self, limits: &Limits) -> Result<Option<RxCompletion>> {
        let slot = ((self.tail & (self.entries - 1)) as usize) * RxCompletion::SIZE;
        let tag = self
            .comp
            .load32(slot + RxCompletion::TAG_OFFSET, Ordering::Acquire)?;
        if tag != RxCompletion::tag_for(self.tail) {
            let stale = if self.tail < self.entries {
                0
            } else {
                RxCompletion::tag_for(self.tail - self.entries)
            };
            if tag == stale {
                return Ok(None);
            }
            return Err(Error::Corrupt(
                format!(
                    "fpga RX queue {}: completion slot {} holds tag {tag:#x}, neither completion {}'s nor the previous lap's",
                    self.port,
                    self.tail & (self.entries - 1),
                    self.tail
                )
                .into(),
            ));
        }
        let mut b = [0u8; RxCompletion::SIZE];
        self.comp.read(slot, &mut b)?;
        let at = RxExpect {
            index: self.tail,
            offset: self.next_off,
            released: self.pub_free,
            ring_bytes: self.bytes,
        };
        let port = self.port;
        match RxCompletion::read_from(&b).and_then(|c| c.validate(&at, limits).map(|()| c)) {
            Ok(c) if c.dst_port.get() as u32 == port => Ok(Some(c)),
            Ok(c) => Err(Error::Corrupt(
                format!(
                    "fpga RX queue {port}: completion {} is for port {}",
                    at.index,
                    c.dst_port.get()
                )
                .into(),
            )),
            Err(e) => Err(Error::Corrupt(format!("fpga RX queue {port}: {e}").into())),
        }
    }

    /// Consumes the completion `poll` returned (its space stays held until released).
    fn consume(&mut self, c: &RxCompletion, credit: bool) {
        self.tail += 1;
        self.next_off = c.offset.get() + c.span();
        if credit {
            let node = desc::addr_node(c.src.get()) as usize;
            self.pending.push_back((self.next_off, c.span(), node));
        }
    }

    fn publish<H: Hw>(&mut self, hw: &H) {
        // A register write to a fixed, in-range offset cannot fail; were it to, the value
        // stays dirty and is written again at the next chance.
        if self.pub_free != self.done.freed()
            && hw.write32(self.reg_free, self.done.freed() as u32).is_ok()
        {
            self.pub_free = self.done.freed();
        }
        if self.pub_tail != self.tail && hw.write32(self.reg_tail, self.tail as u32).is_ok() {
            self.pub_tail = self.tail;
        }
        // Space the device now knows to be free is owed back to its senders (credits).
        while let Some(&(end, span, node)) = self.pending.front() {
            if end > self.pub_free {
                break;
            }
            self.pending.pop_front();
            if let Some(o) = self.owed.get_mut(node) {
                o.0 += span;
                o.1 += 1;
                self.owed_msgs += 1;
            }
        }
    }

    /// Releases `start..start + span` (RecvComp, or a failed message), in ring order.
    fn release<H: Hw>(&mut self, hw: &H, start: u64, span: u64) -> bool {
        if span == 0 {
            return false; // nothing to give back (empty message, TOO_LARGE)
        }
        if !self.done.complete(start, start + span) {
            return false;
        }
        if self.done.freed() - self.pub_free >= self.bytes / 4 {
            self.publish(hw);
            return true;
        }
        false
    }
}

// ---------------------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------------------

struct IrqState {
    sleepers: Mutex<u32>,
    seq: AtomicU32,
    leader: Mutex<()>,
    cv_lock: Mutex<()>,
    cv: Condvar,
}

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

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> Result<bool>) -> Result<()> {
    let t0 = Instant::now();
    loop {
        if done()? {
            return Ok(());
        }
        if t0.elapsed() > timeout {
            return Err(bootstrap(format!(
                "timed out after {timeout:?} waiting for {what}"
            )));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

impl<H: Hw + Send + Sync + 'static> FpgaDriver<H> {
    /// Brings the adapter up with no job-control hook ([`NoJobControl`]).
    pub fn new(hw: H, cfg: FpgaConfig) -> Result<Arc<Self>> {
        Self::with_job_control(hw, cfg, Arc::new(NoJobControl))
    }

    /// Brings the adapter up (see the module docs, "Bring-up"); `job` reports lost ranks.
    pub fn with_job_control(hw: H, cfg: FpgaConfig, job: Arc<dyn JobControl>) -> Result<Arc<Self>> {
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
        if hw.len() < regs::BAR0_SIZE as usize {
            return Err(bootstrap(format!(
                "BAR0 of {} bytes, the register map needs {}",
                hw.len(),
                regs::BAR0_SIZE
            )));
        }
        let r = |off: u32| hw.read32(off as usize);
        let w = |off: u32, v: u32| hw.write32(off as usize, v);
        let id = r(regs::ID)?;
        if id != regs::ID_VALUE {
            return Err(bootstrap(format!(
                "ID reads {id:#010x}, expected {:#010x} (\"SKIF\"): not a SKIF adapter",
                regs::ID_VALUE
            )));
        }
        let version = r(regs::VERSION)?;
        if version >> 16 != regs::VERSION_VALUE >> 16 {
            return Err(bootstrap(format!(
                "register map version {}.{}, this driver speaks {}.x",
                version >> 16,
                version & 0xFFFF,
                regs::VERSION_VALUE >> 16
            )));
        }
        w(regs::CTRL, 0)?;
        w(regs::CTRL, regs::ctrl::RESET)?;
        wait_for("STATUS.READY after reset", cfg.ready_timeout, || {
            Ok(r(regs::STATUS)? & regs::status::READY != 0)
        })?;
        let caps = Caps::unpack(r(regs::CAPS)?).map_err(|e| bootstrap(e.to_string()))?;
        let max_pkt = r(regs::MAX_PKT)?;
        regs::check_max_pkt(max_pkt).map_err(|e| bootstrap(e.to_string()))?;
        let dims = Dims::unpack(r(regs::TORUS_DIMS)?).map_err(|e| bootstrap(e.to_string()))?;
        let coord = Coord::unpack(r(regs::NODE_COORD)?).map_err(|e| bootstrap(e.to_string()))?;
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

        // DMA memory: TX ring, staging ring, write-back word, RX queues.
        let dma = hw.dma();
        let ring = dma.alloc(cfg.tx_entries as usize * TxDesc::SIZE)?;
        let stage = dma.alloc(staging as usize)?;
        let wb = dma.alloc(8)?;
        for (what, b) in [("TX_BASE", &ring), ("TX staging", &stage)] {
            regs::check_ring_base(what, b.iova()).map_err(|e| bootstrap(e.to_string()))?;
        }
        w(regs::TX_BASE_LO, ring.iova() as u32)?;
        w(regs::TX_BASE_HI, (ring.iova() >> 32) as u32)?;
        w(regs::TX_SIZE, cfg.tx_entries)?;
        w(regs::TX_WB_LO, wb.iova() as u32)?;
        w(regs::TX_WB_HI, (wb.iova() >> 32) as u32)?;
        let tx = TxRing {
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
            used: vec![(0, 0); (size * ports) as usize],
            closed: vec![false; (size * ports) as usize],
            pkts: 0,
            max_pkt: max_pkt as u64,
        };
        let queue = |q: u32, bytes: u32, entries: u32| -> Result<RxQueue<H::Dma>> {
            let reg = |rel: u32| {
                regs::rxq_reg(q, rel)
                    .ok_or_else(|| bootstrap(format!("RX queue {q} has no registers")))
            };
            let data = dma.alloc(bytes as usize)?;
            let comp = dma.alloc(entries as usize * RxCompletion::SIZE)?;
            for (what, b) in [("RX_BASE", &data), ("RXC_BASE", &comp)] {
                regs::check_ring_base(what, b.iova()).map_err(|e| bootstrap(e.to_string()))?;
            }
            w(reg(regs::rxq::RX_BASE_LO)?, data.iova() as u32)?;
            w(reg(regs::rxq::RX_BASE_HI)?, (data.iova() >> 32) as u32)?;
            w(reg(regs::rxq::RX_SIZE)?, bytes)?;
            w(reg(regs::rxq::RX_FREE)?, 0)?;
            w(reg(regs::rxq::RXC_BASE_LO)?, comp.iova() as u32)?;
            w(reg(regs::rxq::RXC_BASE_HI)?, (comp.iova() >> 32) as u32)?;
            w(reg(regs::rxq::RXC_SIZE)?, entries)?;
            w(reg(regs::rxq::RXC_TAIL)?, 0)?;
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
                reg_free: reg(regs::rxq::RX_FREE)? as usize,
                reg_tail: reg(regs::rxq::RXC_TAIL)? as usize,
                pending: Default::default(),
                owed: vec![(0, 0); size as usize],
                owed_msgs: 0,
                was_closed: false,
            })
        };
        let queues = (0..ports)
            .map(|q| Ok(Mutex::new(Some(queue(q, cfg.rx_bytes, cfg.rxc_entries)?))))
            .collect::<Result<Vec<_>>>()?;
        // The credit queue: room for every credit message that can be outstanding (at
        // most one per data message in flight: `ports × rxc_entries`).
        let ctl = if credit {
            let entries = (ports * cfg.rxc_entries)
                .next_power_of_two()
                .clamp(regs::RING_ENTRIES_MIN, regs::RING_ENTRIES_MAX);
            let bytes = (entries * regs::RX_ALIGN)
                .next_power_of_two()
                .clamp(regs::RX_BYTES_MIN, regs::RX_BYTES_MAX);
            Some(Mutex::new(queue(ports, bytes, entries)?))
        } else {
            None
        };
        w(regs::IRQ_MASK, regs::irq::ALL)?;
        w(regs::IRQ_COALESCE_NS, 0)?;
        let demux = if caps.hw_demux {
            regs::ctrl::HW_DEMUX_EN
        } else {
            0
        };
        w(regs::CTRL, regs::ctrl::ENABLE | demux)?;
        let st = r(regs::STATUS)?;
        let e = r(regs::ERR_STATUS)?;
        if st & regs::status::READY == 0 || st & regs::status::HALTED != 0 || e != 0 {
            return Err(bootstrap(format!(
                "not running after ENABLE: STATUS {st:#x}, ERR_STATUS {e:#x} ({})",
                describe_err(e)
            )));
        }
        let want_links = expected_links(dims);
        wait_for(
            &format!("the torus links (LINK_STATE mask {want_links:#x})"),
            cfg.link_timeout,
            || Ok(r(regs::LINK_STATE)? & want_links == want_links),
        )?;
        Ok(Arc::new(FpgaDriver {
            hw,
            cfg,
            caps,
            coord,
            dims,
            max_pkt,
            rank,
            size,
            ports,
            hw_ports,
            limits,
            max_msg,
            win_bytes,
            win_msgs,
            tx: Mutex::new(tx),
            queues,
            ctl,
            fatal: AtomicBool::new(false),
            fatal_err: Mutex::new(None),
            lost: AtomicU32::new(NO_LOSS),
            job,
            irq: IrqState {
                sleepers: Mutex::new(0),
                seq: AtomicU32::new(0),
                leader: Mutex::new(()),
                cv_lock: Mutex::new(()),
                cv: Condvar::new(),
            },
        }))
    }

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

    /// A send within the sender's credit at `dst` (see the module docs, "Credits"): at most
    /// `win_bytes` of spans and `win_msgs` messages not yet returned by the receiver.
    fn send_credited(
        &self,
        dst: NetAddr,
        dst_raw: u32,
        src_port: u16,
        iov: &[IoSlice<'_>],
        mut want: usize,
        mode: SendMode,
    ) -> Result<usize> {
        let span = |n: usize| (n as u64).next_multiple_of(regs::RX_ALIGN as u64);
        let mut tx = lock(&self.tx);
        let d = (dst.rank() * self.ports + dst.port()) as usize;
        if self.ctl.is_some() {
            if tx.closed.get(d) == Some(&true) {
                return Err(Error::Unreachable {
                    addr: dst,
                    why: Unreachable::Closed,
                });
            }
            let (ub, um) = tx.used.get(d).copied().unwrap_or((u64::MAX, u32::MAX));
            let avail = self.win_bytes.saturating_sub(ub);
            if um >= self.win_msgs {
                return Err(Error::WouldBlock);
            }
            if span(want) > avail {
                let least = span(want)
                    .min(self.win_bytes / 8)
                    .max(regs::RX_ALIGN as u64);
                if mode == SendMode::Whole || avail < least {
                    return Err(Error::WouldBlock);
                }
                want = avail as usize; // a multiple of RX_ALIGN below `want`
            }
        }
        let n = tx.send(&self.hw, dst_raw, src_port, iov, want, mode)?;
        if self.ctl.is_some() {
            if let Some(u) = tx.used.get_mut(d) {
                u.0 += span(n);
                u.1 += 1;
            }
        }
        Ok(n)
    }

    /// Returns the credits `rx` owes its senders: all of them when `idle`, else those
    /// past a quarter of a window. A credit message that does not fit the TX ring now
    /// stays owed (sent at the next chance).
    fn return_credits(&self, rx: &mut RxQueue<H::Dma>, idle: bool) {
        if rx.owed_msgs == 0 || self.ctl.is_none() {
            return;
        }
        for node in 0..rx.owed.len() {
            let (b, m) = rx.owed[node];
            if m == 0 || !(idle || b >= self.win_bytes / 4 || m >= (self.win_msgs / 4).max(1)) {
                continue;
            }
            let (b, m) = (b.min(u32::MAX as u64), m.min(u16::MAX as u32));
            if self
                .send_ctl(node as u32, rx.port, m as u16, b as u32)
                .is_ok()
            {
                rx.owed[node].0 -= b;
                rx.owed[node].1 -= m;
                rx.owed_msgs -= m;
            }
        }
    }

    /// Sends a credit-queue message `(port: u16, messages: u16, bytes: u32)` to `node`
    /// (outside the credit windows: the credit queue is drained by every send and poll).
    fn send_ctl(&self, node: u32, port: u32, msgs: u16, bytes: u32) -> Result<usize> {
        let ctl_port = self.ports as u16;
        let mut msg = [0u8; 8];
        msg[0..2].copy_from_slice(&(port as u16).to_le_bytes());
        msg[2..4].copy_from_slice(&msgs.to_le_bytes());
        msg[4..8].copy_from_slice(&bytes.to_le_bytes());
        lock(&self.tx).send(
            &self.hw,
            desc::net_addr(node as u16, ctl_port),
            ctl_port,
            &[IoSlice::new(&msg)],
            msg.len(),
            SendMode::Whole,
        )
    }

    /// Tells every live node that `port` here was closed (`open == false`) or opened
    /// again: a credit-queue message with no credit (`messages == 0`, `bytes` = 0 closed,
    /// 1 open). Senders then refuse sends to a closed port with `Unreachable` (`Closed`), as
    /// on shm; what was sent before the notice arrived waits in the port's queue. Best
    /// effort and bounded: a full TX ring is retried for a moment, then that node is skipped.
    fn notify_port_state(&self, port: u32, open: bool) {
        if self.ctl.is_none() || self.fatal.load(Ordering::Relaxed) {
            return;
        }
        let lost = self.lost_peer();
        let deadline = Instant::now() + Duration::from_millis(200);
        for node in (0..self.size).filter(|&n| Some(n) != lost && !self.job.finalized(n)) {
            if node == self.rank {
                // This node's own ports learn it at once (no notice through the network).
                let d = (node * self.ports + port) as usize;
                if let Some(c) = lock(&self.tx).closed.get_mut(d) {
                    *c = !open;
                }
                continue;
            }
            loop {
                match self.send_ctl(node, port, 0, u32::from(open)) {
                    Err(Error::WouldBlock) if Instant::now() < deadline => {
                        let _ = self.drain_credits();
                        std::thread::yield_now();
                    }
                    _ => break,
                }
            }
        }
    }

    /// Takes the credit messages that arrived and gives their credit back to the senders
    /// (any thread; one at a time). A bad credit message is a device fault.
    fn drain_credits(&self) -> Result<()> {
        let Some(ctl) = &self.ctl else {
            return Ok(());
        };
        let Ok(mut q) = ctl.try_lock() else {
            return Ok(()); // another thread is at it
        };
        let mut took = false;
        loop {
            let c = match q.poll(&self.limits) {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => return Err(self.set_fatal(e)),
            };
            let (off, len, src) = (c.offset.get(), c.len.get(), c.src.get());
            q.consume(&c, false);
            took = true;
            let mut b = [0u8; 8];
            let pos = (off & (q.bytes - 1)) as usize;
            let ok = c.status.get() == 0 && len == 8 && q.data.read(pos, &mut b).is_ok();
            q.release(&self.hw, off, c.span());
            let port = u16::from_le_bytes([b[0], b[1]]) as u32;
            let msgs = u16::from_le_bytes([b[2], b[3]]) as u32;
            let bytes = u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as u64;
            let node = desc::addr_node(src);
            let d = (node * self.ports + port) as usize;
            let mut tx = lock(&self.tx);
            if ok && msgs == 0 && port < self.ports && bytes <= 1 && d < tx.closed.len() {
                // A port-state notice: the owner closed (0) or reopened (1) the port.
                tx.closed[d] = bytes == 0;
                continue;
            }
            match tx.used.get_mut(d) {
                Some(u) if ok && port < self.ports && u.0 >= bytes && u.1 >= msgs => {
                    u.0 -= bytes;
                    u.1 -= msgs;
                }
                _ => {
                    return Err(self.set_fatal(Error::Corrupt(
                        format!("fpga credit queue: a bad credit message from node {node} (port {port}, {msgs} messages, {bytes} bytes)").into(),
                    )))
                }
            }
        }
        if took {
            q.publish(&self.hw);
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

// ---------------------------------------------------------------------------------------
// The port
// ---------------------------------------------------------------------------------------

/// One open channel on the adapter: its own RX queue, the adapter's shared TX ring.
pub struct FpgaPort<H: Hw + Send + Sync + 'static> {
    drv: Arc<FpgaDriver<H>>,
    addr: NetAddr,
    rx: Option<RxQueue<H::Dma>>,
    broken: Option<Error>,
    polls: u32,
    refusals: u32,
    sends: u32,
}

impl<H: Hw + Send + Sync + 'static> std::fmt::Debug for FpgaPort<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FpgaPort")
            .field("addr", &self.addr)
            .field("rx", &self.rx_snapshot())
            .field("broken", &self.broken)
            .finish()
    }
}

enum Poll {
    Empty,
    Fresh(RxCompletion),
}

impl<H: Hw + Send + Sync + 'static> FpgaPort<H> {
    /// The RX queue's indices (`None` never happens for an open port).
    pub fn rx_snapshot(&self) -> Option<RxSnapshot> {
        self.rx.as_ref().map(|q| q.snapshot())
    }

    /// The driver this port belongs to.
    pub fn driver(&self) -> &Arc<FpgaDriver<H>> {
        &self.drv
    }

    /// The error that broke this port, if any.
    pub fn broken(&self) -> Option<&Error> {
        self.broken.as_ref()
    }

    #[cold]
    fn corrupt(&mut self, e: Error) -> Error {
        self.broken = Some(e.clone());
        e
    }

    #[inline]
    fn usable(&self) -> Result<()> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        self.drv.check_fatal()
    }

    /// Looks at the completion slot at the queue's tail; a fresh entry is copied into a
    /// shadow and validated (not consumed).
    fn poll(&mut self) -> Result<Poll> {
        let Some(rx) = self.rx.as_ref() else {
            return Ok(Poll::Empty);
        };
        match rx.poll(&self.drv.limits) {
            Ok(Some(c)) => Ok(Poll::Fresh(c)),
            Ok(None) => Ok(Poll::Empty),
            Err(e) => Err(self.corrupt(e)),
        }
    }

    /// An empty poll: publish lazily-kept indices, look at the device now and then, report
    /// a lost peer or "would block".
    #[cold]
    fn nothing(&mut self) -> Error {
        let drv = &*self.drv;
        if let Some(rx) = self.rx.as_mut() {
            rx.publish(&drv.hw);
            // Idle: everything released goes back to its senders now.
            drv.return_credits(rx, true);
        }
        if let Err(e) = drv.drain_credits() {
            return e;
        }
        self.polls = self.polls.wrapping_add(1);
        if self.polls.is_multiple_of(HEALTH_EVERY) {
            if let Err(e) = drv.check_health() {
                return e;
            }
        }
        match drv.lost_peer() {
            Some(rank) => Error::PeerLost { rank },
            None => Error::WouldBlock,
        }
    }

    #[cold]
    fn refused(&mut self) -> Error {
        self.refusals = self.refusals.wrapping_add(1);
        if self.refusals.is_multiple_of(HEALTH_EVERY) {
            if let Err(e) = self.drv.check_health() {
                return e;
            }
        }
        Error::WouldBlock
    }

    /// A completion with a status bit: consumed, its span released, reported.
    #[cold]
    fn failed_message(&mut self, c: &RxCompletion) -> Error {
        let drv = &*self.drv;
        let st = c.status.get();
        let (len, src) = (c.len.get(), NetAddr::from(c.src.get()));
        if let Some(rx) = self.rx.as_mut() {
            if rx.release(&drv.hw, c.offset.get(), c.span()) {
                drv.return_credits(rx, false);
            }
        }
        if st & desc::rx_status::TOO_LARGE != 0 {
            Error::MessageTooLarge {
                len: len as u64,
                max: drv.max_msg as u32,
            }
        } else if st & desc::rx_status::TRUNCATED != 0 {
            Error::Corrupt(
                format!("fpga: a {len}-byte message from {src} was truncated in the network (its sender stopped or a route failed); dropped").into(),
            )
        } else {
            Error::Corrupt(
                format!("fpga: a {len}-byte message from {src} was damaged in the network (bad packet); dropped").into(),
            )
        }
    }
}

// SAFETY: segments lie in a validated completion's span, inside the space released to the
// device, which writes it only after RX_FREE passes it: in `complete` with its token (or in
// `Drop`, when nothing is held). The data ring lives as long as this port's queue.
unsafe impl<H: Hw + Send + Sync + 'static> Port for FpgaPort<H> {
    type Waiter = FpgaWaiter<H>;

    fn addr(&self) -> NetAddr {
        self.addr
    }

    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        self.usable()?;
        let drv = &*self.drv;
        if let Some(e) = drv.unreachable(dst) {
            return Err(e);
        }
        if drv.lost_peer() == Some(dst.rank()) {
            return Err(Error::PeerLost { rank: dst.rank() });
        }
        if drv.job.finalized(dst.rank()) {
            return Err(Error::Unreachable {
                addr: dst,
                why: Unreachable::Closed,
            });
        }
        let total = iov_total(iov)?;
        let want = match mode {
            SendMode::Whole if total > drv.max_msg => {
                return Err(Error::MessageTooLarge {
                    len: total as u64,
                    max: drv.max_msg as u32,
                })
            }
            SendMode::Whole => total,
            SendMode::Prefix => total.min(drv.max_msg),
        };
        let dst_raw = desc::net_addr(dst.rank() as u16, dst.port() as u16);
        if drv.ctl.is_some() {
            drv.drain_credits()?;
        }
        let r = drv.send_credited(dst, dst_raw, self.addr.port() as u16, iov, want, mode);
        match r {
            Ok(n) => {
                self.sends = self.sends.wrapping_add(1);
                if self.sends.is_multiple_of(SENDS_PER_HEALTH_CHECK) {
                    // A link may have failed under a stream that never blocks (the
                    // device drops unroutable messages at the source, NO_ROUTE).
                    let _ = drv.check_health();
                }
                Ok(n)
            }
            Err(Error::WouldBlock) => Err(self.refused()),
            Err(Error::Corrupt(m)) => Err(drv.set_fatal(Error::Corrupt(m))),
            Err(e) => Err(e),
        }
    }

    fn recv_into(&mut self, out: &mut RawMessage) -> Result<()> {
        self.usable()?;
        let c = match self.poll()? {
            Poll::Empty => return Err(self.nothing()),
            Poll::Fresh(c) => c,
        };
        let drv = &*self.drv;
        let Some(rx) = self.rx.as_mut() else {
            return Err(Error::WouldBlock);
        };
        let (off, len, span) = (c.offset.get(), c.len.get() as u64, c.span());
        rx.consume(&c, drv.ctl.is_some());
        if rx.tail - rx.pub_tail >= rx.entries / 4 {
            rx.publish(&drv.hw);
            drv.return_credits(rx, false);
        }
        if c.status.get() != 0 {
            return Err(self.failed_message(&c));
        }
        let parts = desc::ring_split(off, len, rx.bytes);
        let mut count = 0;
        for (i, &(start, n)) in parts.iter().enumerate() {
            if i > 0 && n == 0 {
                break;
            }
            // SAFETY: `start..start + n` lies in the data ring (`ring_split` of a validated
            // completion) inside the message's span, which the device does not write until
            // RX_FREE passes it — only after `complete` with this message's token.
            let s = unsafe { rx.data.cpu_slice(start as usize, n as usize) };
            match s {
                Ok(s) => {
                    out.segs[i] = RawSeg {
                        ptr: s.as_ptr(),
                        len: s.len(),
                    }
                }
                Err(e) => {
                    let e = Error::Corrupt(format!("fpga RX queue: {e}").into());
                    return Err(self.corrupt(e));
                }
            }
            count += 1;
        }
        out.count = count;
        out.len = len as usize;
        out.src = NetAddr::from(c.src.get());
        out.token = Token { a: off, b: span };
        Ok(())
    }

    fn ready(&mut self) -> Result<bool> {
        self.usable()?;
        match self.poll()? {
            Poll::Fresh(_) => Ok(true),
            Poll::Empty => match self.nothing() {
                Error::WouldBlock => Ok(false),
                e => Err(e),
            },
        }
    }

    unsafe fn complete(&mut self, token: Token) {
        let drv = &*self.drv;
        if let Some(rx) = self.rx.as_mut() {
            if rx.release(&drv.hw, token.a, token.b) {
                drv.return_credits(rx, false);
            }
        }
    }

    fn waiter(&self) -> FpgaWaiter<H> {
        FpgaWaiter {
            drv: self.drv.clone(),
        }
    }
}

impl<H: Hw + Send + Sync + 'static> Drop for FpgaPort<H> {
    fn drop(&mut self) {
        if let Some(mut rx) = self.rx.take() {
            rx.publish(&self.drv.hw);
            self.drv.return_credits(&mut rx, true);
            // A rank dying by a panic is lost, not closing its ports (as on shm).
            if !std::thread::panicking() {
                self.drv.notify_port_state(rx.port, false);
                rx.was_closed = true;
            }
            // The queue keeps its state: a port opened again continues where this one stopped.
            let q = rx.port as usize;
            *lock(&self.drv.queues[q]) = Some(rx);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Waiting
// ---------------------------------------------------------------------------------------

/// Sleeps on the adapter's interrupt (RX_READY, ERROR, LINK_CHANGE unmasked while anyone
/// sleeps). One sleeper at a time waits on the interrupt itself and wakes the others;
/// every sleep is bounded by [`FpgaConfig::irq_slice`], after which the device's health is
/// checked. Without interrupt vectors, sleeps are short naps.
pub struct FpgaWaiter<H: Hw + Send + Sync + 'static> {
    drv: Arc<FpgaDriver<H>>,
}

impl<H: Hw + Send + Sync + 'static> Clone for FpgaWaiter<H> {
    fn clone(&self) -> Self {
        FpgaWaiter {
            drv: self.drv.clone(),
        }
    }
}

const WAKE_CAUSES: u32 = regs::irq::RX_READY | regs::irq::ERROR | regs::irq::LINK_CHANGE;

impl<H: Hw + Send + Sync + 'static> Waiter for FpgaWaiter<H> {
    fn arm(&self) -> u32 {
        let drv = &*self.drv;
        let ticket = drv.irq.seq.load(Ordering::Acquire);
        if drv.hw.irq_vectors() > 0 {
            let mut s = lock(&drv.irq.sleepers);
            *s += 1;
            if *s == 1 {
                let _ = drv
                    .hw
                    .write32(regs::IRQ_MASK as usize, regs::irq::ALL & !WAKE_CAUSES);
            }
            // Clear the causes: a completion written from now on raises a new interrupt;
            // one written before is seen by the caller's poll after `arm`.
            let _ = drv.hw.write32(regs::IRQ_STATUS as usize, WAKE_CAUSES);
        }
        ticket
    }

    fn sleep(&self, ticket: u32, timeout: Duration) {
        let drv = &*self.drv;
        let t = timeout.min(drv.cfg.irq_slice);
        if drv.hw.irq_vectors() == 0 {
            std::thread::sleep(t.min(Duration::from_micros(200)));
        } else if drv.irq.seq.load(Ordering::Acquire) == ticket {
            if let Ok(_leader) = drv.irq.leader.try_lock() {
                if drv.hw.wait_irq(0, t).is_ok() {
                    let _ = drv.hw.rearm_irq(0);
                }
                drv.irq.seq.fetch_add(1, Ordering::AcqRel);
                let _g = lock(&drv.irq.cv_lock);
                drv.irq.cv.notify_all();
            } else {
                let g = lock(&drv.irq.cv_lock);
                if drv.irq.seq.load(Ordering::Acquire) == ticket {
                    let _ = drv.irq.cv.wait_timeout(g, t);
                }
            }
        }
        let _ = drv.check_health();
    }

    fn disarm(&self) {
        let drv = &*self.drv;
        if drv.hw.irq_vectors() > 0 {
            let mut s = lock(&drv.irq.sleepers);
            *s = s.saturating_sub(1);
            if *s == 0 {
                let _ = drv.hw.write32(regs::IRQ_MASK as usize, regs::irq::ALL);
            }
        }
    }

    fn lost_peer(&self) -> Option<u32> {
        self.drv.lost_peer()
    }
}
