//! The adapter's BAR0 register map: the single source of truth for the driver
//! (`skifch-drivers`) and the behavioural device model. The datasheet table in
//! `fpga/README.md` is checked against [`REGISTERS`] by `tests/formats.rs`.
//!
//! Conventions (datasheet "Registers"):
//! * every register is 32 bits, little-endian, 4-byte aligned, accessed by 32-bit reads and
//!   writes only; reserved offsets read 0 and ignore writes;
//! * a 64-bit host address is a LO/HI pair, latched when `CTRL.ENABLE` goes 0 → 1; ring
//!   configuration (bases, sizes) is ignored while the adapter is enabled;
//! * ring indices are free-running modulo 2^32: occupancy is `tail.wrapping_sub(head)`, the
//!   slot is `index & (size - 1)`, which is why every ring size is a power of two;
//! * RW1C registers clear the bits written as 1;
//! * 64-bit counters are LO/HI pairs: reading LO latches HI, so LO then HI is one snapshot.
//!
//! Also here: the pure helpers to pack and check what those registers hold (node
//! coordinates, torus dimensions, link indices, capabilities, ring sizes).

use crate::{Error, Result};

/// Bytes of BAR0: every register below lies in `0..BAR0_SIZE`.
pub const BAR0_SIZE: u32 = 0x1000;

/// `ID` value: `"SKIF"` read as a big-endian word, so a hex dump of the register says SKIF.
pub const ID_VALUE: u32 = 0x534B_4946;
/// `VERSION` value of this map: major 1, minor 0 (`major << 16 | minor`). A driver accepts
/// any minor of its major: minors only add registers or bits that read 0 when unused.
pub const VERSION_VALUE: u32 = 0x0001_0000;

// ---- global block ----------------------------------------------------------------------

/// RO, `ID_VALUE`: identifies the adapter; a driver refuses a BAR that reads otherwise.
pub const ID: u32 = 0x000;
/// RO, `VERSION_VALUE`: register map version, `major << 16 | minor`.
pub const VERSION: u32 = 0x004;
/// RO, model parameter: capabilities, bits in [`caps`].
pub const CAPS: u32 = 0x008;
/// RO, model parameter: largest payload of one torus packet in bytes (see [`check_max_pkt`]).
pub const MAX_PKT: u32 = 0x00C;
/// RO, set by the network: this node's coordinates, [`Coord::pack`].
pub const NODE_COORD: u32 = 0x010;
/// RO, set by the network: torus dimensions, [`Dims::pack`].
pub const TORUS_DIMS: u32 = 0x014;
/// RO, reset 0: bit `i` set when link `i` ([`Link::index`]) is up; links train after ENABLE.
pub const LINK_STATE: u32 = 0x018;
/// RW1C, reset 0: sticky error causes, bits in [`err`]; fatal ones also halt the adapter.
pub const ERR_STATUS: u32 = 0x01C;
/// RW, reset 0: control, bits in [`ctrl`].
pub const CTRL: u32 = 0x020;
/// RO, reset `status::READY` once the reset sequence ends: bits in [`status`].
pub const STATUS: u32 = 0x024;
/// RW1C, reset 0: pending interrupt causes, bits in [`irq`].
pub const IRQ_STATUS: u32 = 0x028;
/// RW, reset `irq::ALL`: a set bit masks (suppresses) that cause; all masked out of reset.
pub const IRQ_MASK: u32 = 0x02C;
/// RW, reset 0: TX_DONE/RX_READY interrupts fire at most this many ns after their first
/// event (coalescing); 0 = at once. ERROR and LINK_CHANGE are never delayed.
pub const IRQ_COALESCE_NS: u32 = 0x030;
/// RO, reset 0: low 32 bits of the TX index of the descriptor that set `err::TX_DESC_BAD`
/// or `err::DMA_FAULT` (first one since the bit was last clear).
pub const ERR_TX_INDEX: u32 = 0x034;

// ---- TX descriptor ring ----------------------------------------------------------------

/// RW: TX descriptor ring base (IOVA) bits 0..31; 4 KiB aligned ([`RING_ALIGN`]).
pub const TX_BASE_LO: u32 = 0x040;
/// RW: TX descriptor ring base bits 32..63.
pub const TX_BASE_HI: u32 = 0x044;
/// RW: TX ring entries, a power of two in [`RING_ENTRIES_MIN`]..=[`RING_ENTRIES_MAX`].
pub const TX_SIZE: u32 = 0x048;
/// RW doorbell, reset 0: the driver's free-running producer index (descriptors written).
pub const TX_TAIL: u32 = 0x04C;
/// RO, reset 0: the device's free-running consumer index: descriptors whose payload has
/// been read, so their descriptor slots and payload buffers are the driver's again.
pub const TX_HEAD: u32 = 0x050;
/// RW: if non-zero, the device DMA-writes `TX_HEAD` (as a u64, little-endian) to this IOVA
/// whenever it advances, so the driver polls host memory instead of an MMIO read
/// (~1 µs on PCIe). Bits 0..31; 8-byte aligned.
pub const TX_WB_LO: u32 = 0x054;
/// RW: TX_HEAD write-back address bits 32..63.
pub const TX_WB_HI: u32 = 0x058;

// ---- counters (RO, reset 0, cleared by CTRL.RESET) ------------------------------------

/// Messages whose TX descriptor was consumed (LO; HI at +4).
pub const CNT_TX_MSGS: u32 = 0x100;
/// Packets injected into the torus by this node.
pub const CNT_TX_PKTS: u32 = 0x108;
/// Payload bytes injected.
pub const CNT_TX_BYTES: u32 = 0x110;
/// Messages completed into an RX queue (any status).
pub const CNT_RX_MSGS: u32 = 0x118;
/// Packets ejected at this node.
pub const CNT_RX_PKTS: u32 = 0x120;
/// Payload bytes written into RX data rings.
pub const CNT_RX_BYTES: u32 = 0x128;
/// Transit packets this node's router forwarded.
pub const CNT_FWD_PKTS: u32 = 0x130;
/// Times a packet waited for a link credit (back-pressure from the next router).
pub const CNT_CREDIT_STALLS: u32 = 0x138;
/// Times an arriving message waited for RX data or completion space (receiver back-pressure).
pub const CNT_RX_STALLS: u32 = 0x140;
/// Packets dropped for a bad header check.
pub const CNT_PKT_CORRUPT: u32 = 0x148;
/// Messages refused by the receiver (`RxCompletion` status TOO_LARGE).
pub const CNT_RX_DROPPED: u32 = 0x150;

// ---- RX queues -------------------------------------------------------------------------

/// Offset of RX queue 0's register block. Queue `q` is at `RXQ_BASE + q * RXQ_STRIDE`
/// ([`rxq_reg`]); the registers inside a block are in [`rxq`].
///
/// Queue 0 receives every port's messages unless `CTRL.HW_DEMUX_EN` is set; then port `p`
/// goes to queue `p` when `p < CAPS.RX_QUEUES` and queue `p` is configured (`RX_SIZE != 0`),
/// and to queue 0 otherwise (the driver demultiplexes queue 0 in software).
pub const RXQ_BASE: u32 = 0x200;
/// Bytes between RX queue register blocks.
pub const RXQ_STRIDE: u32 = 0x40;
/// Most RX queues BAR0 has room for.
pub const RXQ_MAX: u32 = (BAR0_SIZE - RXQ_BASE) / RXQ_STRIDE;

/// Registers of one RX queue, relative to its block ([`rxq_reg`]).
pub mod rxq {
    /// RW: RX data ring base (IOVA) bits 0..31; 4 KiB aligned.
    pub const RX_BASE_LO: u32 = 0x00;
    /// RW: RX data ring base bits 32..63.
    pub const RX_BASE_HI: u32 = 0x04;
    /// RW: RX data ring bytes: 0 = queue off, else a power of two in
    /// [`super::RX_BYTES_MIN`]..=[`super::RX_BYTES_MAX`].
    pub const RX_SIZE: u32 = 0x08;
    /// RW, reset 0: free-running count of RX data bytes the driver has released
    /// (RecvComp). The device writes only below `RX_FREE + RX_SIZE`.
    pub const RX_FREE: u32 = 0x0C;
    /// RW: RX completion ring base (IOVA) bits 0..31; 4 KiB aligned.
    pub const RXC_BASE_LO: u32 = 0x10;
    /// RW: RX completion ring base bits 32..63.
    pub const RXC_BASE_HI: u32 = 0x14;
    /// RW: completion ring entries, a power of two like `TX_SIZE`.
    pub const RXC_SIZE: u32 = 0x18;
    /// RO, reset 0: free-running count of completions written.
    pub const RXC_HEAD: u32 = 0x1C;
    /// RW, reset 0: free-running count of completions the driver has consumed.
    pub const RXC_TAIL: u32 = 0x20;
}

/// Offset of register `rel` (one of [`rxq`]) of RX queue `queue`; `None` past BAR0 or for
/// an offset that is not a queue register.
///
/// # Examples
/// ```
/// use fpga::regs::{rxq, rxq_reg, RX_FREE};
/// assert_eq!(rxq_reg(0, rxq::RX_FREE), Some(RX_FREE));
/// assert_eq!(rxq_reg(2, rxq::RXC_TAIL), Some(0x200 + 2 * 0x40 + 0x20));
/// assert_eq!(rxq_reg(56, rxq::RX_FREE), None);
/// ```
pub const fn rxq_reg(queue: u32, rel: u32) -> Option<u32> {
    if queue >= RXQ_MAX || rel > rxq::RXC_TAIL || rel & 3 != 0 {
        return None;
    }
    Some(RXQ_BASE + queue * RXQ_STRIDE + rel)
}

// A queue block holds its registers, and the blocks fill BAR0 exactly.
const _: () = assert!(rxq::RXC_TAIL < RXQ_STRIDE && RXQ_BASE + RXQ_MAX * RXQ_STRIDE == BAR0_SIZE);

/// Queue 0's `RX_BASE_LO` (absolute offset).
pub const RX_BASE_LO: u32 = RXQ_BASE + rxq::RX_BASE_LO;
/// Queue 0's `RX_BASE_HI`.
pub const RX_BASE_HI: u32 = RXQ_BASE + rxq::RX_BASE_HI;
/// Queue 0's `RX_SIZE`.
pub const RX_SIZE: u32 = RXQ_BASE + rxq::RX_SIZE;
/// Queue 0's `RX_FREE`.
pub const RX_FREE: u32 = RXQ_BASE + rxq::RX_FREE;
/// Queue 0's `RXC_BASE_LO`.
pub const RXC_BASE_LO: u32 = RXQ_BASE + rxq::RXC_BASE_LO;
/// Queue 0's `RXC_BASE_HI`.
pub const RXC_BASE_HI: u32 = RXQ_BASE + rxq::RXC_BASE_HI;
/// Queue 0's `RXC_SIZE`.
pub const RXC_SIZE: u32 = RXQ_BASE + rxq::RXC_SIZE;
/// Queue 0's `RXC_HEAD`.
pub const RXC_HEAD: u32 = RXQ_BASE + rxq::RXC_HEAD;
/// Queue 0's `RXC_TAIL`.
pub const RXC_TAIL: u32 = RXQ_BASE + rxq::RXC_TAIL;

// ---- bit fields ------------------------------------------------------------------------

/// `CAPS` bits; [`Caps`] packs and checks them.
pub mod caps {
    /// Per-port RX queues (demultiplexing in hardware) can be enabled (`ctrl::HW_DEMUX_EN`).
    pub const HW_DEMUX: u32 = 1 << 0;
    /// MSI-X capable (v1.0: one vector carries every cause).
    pub const MSIX: u32 = 1 << 1;
    /// Bits 8..15: log2 of the ports per node the adapter addresses (ports `0..1 << n`).
    pub const LOG2_PORTS_SHIFT: u32 = 8;
    /// Mask of the LOG2_PORTS field.
    pub const LOG2_PORTS_MASK: u32 = 0xFF << LOG2_PORTS_SHIFT;
    /// Bits 16..23: number of RX queues (1 without HW_DEMUX).
    pub const RX_QUEUES_SHIFT: u32 = 16;
    /// Mask of the RX_QUEUES field.
    pub const RX_QUEUES_MASK: u32 = 0xFF << RX_QUEUES_SHIFT;
}

/// `CTRL` bits.
pub mod ctrl {
    /// 0 → 1: latch the ring configuration, check it (`err::RING_CONFIG`), start. 1 → 0:
    /// stop taking descriptors and packets; indices keep their values.
    pub const ENABLE: u32 = 1 << 0;
    /// Self-clearing: return every register to its reset value (ends HALTED); reads 0.
    pub const RESET: u32 = 1 << 1;
    /// Route port `p` to RX queue `p` (see [`super::RXQ_BASE`]); needs `caps::HW_DEMUX`.
    pub const HW_DEMUX_EN: u32 = 1 << 2;
    /// Every defined bit.
    pub const ALL: u32 = ENABLE | RESET | HW_DEMUX_EN;
}

/// `STATUS` bits.
pub mod status {
    /// The reset sequence is over; registers may be programmed.
    pub const READY: u32 = 1 << 0;
    /// A fatal error ([`super::err::FATAL`]) stopped the adapter until `CTRL.RESET`.
    pub const HALTED: u32 = 1 << 1;
}

/// `ERR_STATUS` bits (sticky, RW1C). Each raises `irq::ERROR`.
pub mod err {
    /// Fatal: a TX descriptor failed its checks (`TxDesc::validate`); `ERR_TX_INDEX` says which.
    pub const TX_DESC_BAD: u32 = 1 << 0;
    /// Fatal: a DMA read or write hit an address the IOMMU refused.
    pub const DMA_FAULT: u32 = 1 << 1;
    /// A message was larger than its RX queue's data ring: completed as TOO_LARGE, dropped.
    pub const RX_OVERFLOW: u32 = 1 << 2;
    /// A link went down (see `LINK_STATE`).
    pub const LINK_DOWN: u32 = 1 << 3;
    /// A packet failed its header check and was dropped; its message completes CORRUPT.
    pub const PKT_CORRUPT: u32 = 1 << 4;
    /// Fatal: ENABLE with a bad ring size or base alignment.
    pub const RING_CONFIG: u32 = 1 << 5;
    /// Fatal: a doorbell moved backwards or past what exists (TX_TAIL beyond
    /// TX_HEAD + TX_SIZE, RX_FREE beyond the bytes written, RXC_TAIL beyond RXC_HEAD).
    pub const DOORBELL_BAD: u32 = 1 << 6;
    /// A packet's dimension-order route needs a link that is down: it was dropped and its
    /// message completes TRUNCATED at the receiver, if it got there at all.
    pub const NO_ROUTE: u32 = 1 << 7;
    /// The errors that halt the adapter.
    pub const FATAL: u32 = TX_DESC_BAD | DMA_FAULT | RING_CONFIG | DOORBELL_BAD;
    /// Every defined bit.
    pub const ALL: u32 = 0xFF;
}

/// `IRQ_STATUS` / `IRQ_MASK` bits.
pub mod irq {
    /// TX_HEAD passed a descriptor flagged IRQ_ON_DONE.
    pub const TX_DONE: u32 = 1 << 0;
    /// A completion was written to an RX queue.
    pub const RX_READY: u32 = 1 << 1;
    /// A bit was set in `ERR_STATUS`.
    pub const ERROR: u32 = 1 << 2;
    /// `LINK_STATE` changed.
    pub const LINK_CHANGE: u32 = 1 << 3;
    /// Every defined bit.
    pub const ALL: u32 = 0xF;
}

// ---- the register table ----------------------------------------------------------------

/// How software may access a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read-only; writes are ignored.
    Ro,
    /// Read-write.
    Rw,
    /// Read, write 1 to clear.
    Rw1c,
}

impl Access {
    /// The datasheet spelling: `RO`, `RW`, `RW1C`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Access::Ro => "RO",
            Access::Rw => "RW",
            Access::Rw1c => "RW1C",
        }
    }
}

/// A register's value after reset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reset {
    /// A fixed value.
    Value(u32),
    /// Set by the implementation: a model parameter or the network's configuration.
    Param,
}

/// One row of the datasheet's register table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegInfo {
    /// Datasheet name.
    pub name: &'static str,
    /// Byte offset in BAR0.
    pub offset: u32,
    /// Access type.
    pub access: Access,
    /// Reset value.
    pub reset: Reset,
    /// One-line description (the README's description column, verbatim).
    pub doc: &'static str,
}

const fn reg(
    name: &'static str,
    offset: u32,
    access: Access,
    reset: Reset,
    doc: &'static str,
) -> RegInfo {
    RegInfo {
        name,
        offset,
        access,
        reset,
        doc,
    }
}

use Access::{Ro, Rw, Rw1c};
use Reset::{Param, Value};

/// Every register, by offset; RX queues > 0 repeat queue 0's rows at `q * RXQ_STRIDE`.
#[rustfmt::skip]
pub const REGISTERS: &[RegInfo] = &[
    reg("ID", ID, Ro, Value(ID_VALUE), "\"SKIF\": identifies the adapter"),
    reg("VERSION", VERSION, Ro, Value(VERSION_VALUE), "register map version, major << 16 + minor"),
    reg("CAPS", CAPS, Ro, Param, "capabilities: HW_DEMUX, MSIX, LOG2_PORTS, RX_QUEUES"),
    reg("MAX_PKT", MAX_PKT, Ro, Param, "largest packet payload in bytes"),
    reg("NODE_COORD", NODE_COORD, Ro, Param, "this node: x + y << 8 + z << 16"),
    reg("TORUS_DIMS", TORUS_DIMS, Ro, Param, "torus size: X + Y << 8 + Z << 16"),
    reg("LINK_STATE", LINK_STATE, Ro, Value(0), "bit i: link i is up"),
    reg("ERR_STATUS", ERR_STATUS, Rw1c, Value(0), "sticky error causes"),
    reg("CTRL", CTRL, Rw, Value(0), "ENABLE, RESET (self-clearing), HW_DEMUX_EN"),
    reg("STATUS", STATUS, Ro, Value(status::READY), "READY, HALTED"),
    reg("IRQ_STATUS", IRQ_STATUS, Rw1c, Value(0), "pending interrupt causes"),
    reg("IRQ_MASK", IRQ_MASK, Rw, Value(irq::ALL), "1 = cause masked"),
    reg("IRQ_COALESCE_NS", IRQ_COALESCE_NS, Rw, Value(0), "TX_DONE/RX_READY delay bound, ns"),
    reg("ERR_TX_INDEX", ERR_TX_INDEX, Ro, Value(0), "TX index of the first bad descriptor"),
    reg("TX_BASE_LO", TX_BASE_LO, Rw, Value(0), "TX descriptor ring IOVA, bits 0..31"),
    reg("TX_BASE_HI", TX_BASE_HI, Rw, Value(0), "TX descriptor ring IOVA, bits 32..63"),
    reg("TX_SIZE", TX_SIZE, Rw, Value(0), "TX ring entries (power of two)"),
    reg("TX_TAIL", TX_TAIL, Rw, Value(0), "doorbell: descriptors written (free-running)"),
    reg("TX_HEAD", TX_HEAD, Ro, Value(0), "descriptors consumed (free-running)"),
    reg("TX_WB_LO", TX_WB_LO, Rw, Value(0), "TX_HEAD write-back IOVA, bits 0..31 (0 = off)"),
    reg("TX_WB_HI", TX_WB_HI, Rw, Value(0), "TX_HEAD write-back IOVA, bits 32..63"),
    reg("CNT_TX_MSGS_LO", CNT_TX_MSGS, Ro, Value(0), "messages sent"),
    reg("CNT_TX_MSGS_HI", CNT_TX_MSGS + 4, Ro, Value(0), "high word"),
    reg("CNT_TX_PKTS_LO", CNT_TX_PKTS, Ro, Value(0), "packets injected"),
    reg("CNT_TX_PKTS_HI", CNT_TX_PKTS + 4, Ro, Value(0), "high word"),
    reg("CNT_TX_BYTES_LO", CNT_TX_BYTES, Ro, Value(0), "payload bytes sent"),
    reg("CNT_TX_BYTES_HI", CNT_TX_BYTES + 4, Ro, Value(0), "high word"),
    reg("CNT_RX_MSGS_LO", CNT_RX_MSGS, Ro, Value(0), "messages completed"),
    reg("CNT_RX_MSGS_HI", CNT_RX_MSGS + 4, Ro, Value(0), "high word"),
    reg("CNT_RX_PKTS_LO", CNT_RX_PKTS, Ro, Value(0), "packets ejected here"),
    reg("CNT_RX_PKTS_HI", CNT_RX_PKTS + 4, Ro, Value(0), "high word"),
    reg("CNT_RX_BYTES_LO", CNT_RX_BYTES, Ro, Value(0), "payload bytes received"),
    reg("CNT_RX_BYTES_HI", CNT_RX_BYTES + 4, Ro, Value(0), "high word"),
    reg("CNT_FWD_PKTS_LO", CNT_FWD_PKTS, Ro, Value(0), "transit packets forwarded"),
    reg("CNT_FWD_PKTS_HI", CNT_FWD_PKTS + 4, Ro, Value(0), "high word"),
    reg("CNT_CREDIT_STALLS_LO", CNT_CREDIT_STALLS, Ro, Value(0), "waits for a link credit"),
    reg("CNT_CREDIT_STALLS_HI", CNT_CREDIT_STALLS + 4, Ro, Value(0), "high word"),
    reg("CNT_RX_STALLS_LO", CNT_RX_STALLS, Ro, Value(0), "waits for RX ring space"),
    reg("CNT_RX_STALLS_HI", CNT_RX_STALLS + 4, Ro, Value(0), "high word"),
    reg("CNT_PKT_CORRUPT_LO", CNT_PKT_CORRUPT, Ro, Value(0), "packets dropped, bad check"),
    reg("CNT_PKT_CORRUPT_HI", CNT_PKT_CORRUPT + 4, Ro, Value(0), "high word"),
    reg("CNT_RX_DROPPED_LO", CNT_RX_DROPPED, Ro, Value(0), "messages refused, too large"),
    reg("CNT_RX_DROPPED_HI", CNT_RX_DROPPED + 4, Ro, Value(0), "high word"),
    reg("RX_BASE_LO", RX_BASE_LO, Rw, Value(0), "RX data ring IOVA, bits 0..31"),
    reg("RX_BASE_HI", RX_BASE_HI, Rw, Value(0), "RX data ring IOVA, bits 32..63"),
    reg("RX_SIZE", RX_SIZE, Rw, Value(0), "RX data ring bytes (power of two; 0 = off)"),
    reg("RX_FREE", RX_FREE, Rw, Value(0), "RX bytes released (free-running)"),
    reg("RXC_BASE_LO", RXC_BASE_LO, Rw, Value(0), "completion ring IOVA, bits 0..31"),
    reg("RXC_BASE_HI", RXC_BASE_HI, Rw, Value(0), "completion ring IOVA, bits 32..63"),
    reg("RXC_SIZE", RXC_SIZE, Rw, Value(0), "completion ring entries (power of two)"),
    reg("RXC_HEAD", RXC_HEAD, Ro, Value(0), "completions written (free-running)"),
    reg("RXC_TAIL", RXC_TAIL, Rw, Value(0), "completions consumed (free-running)"),
];

/// The register at `offset`, if any (queue > 0 registers are found as queue 0's row).
///
/// # Examples
/// ```
/// use fpga::regs::{find, Access, TX_TAIL};
/// let r = find(TX_TAIL).unwrap();
/// assert_eq!((r.name, r.access), ("TX_TAIL", Access::Rw));
/// assert_eq!(find(0x200 + 3 * 0x40).unwrap().name, "RX_BASE_LO");
/// assert!(find(0x0FC).is_none());
/// ```
pub fn find(offset: u32) -> Option<&'static RegInfo> {
    let offset = if (RXQ_BASE + RXQ_STRIDE..BAR0_SIZE).contains(&offset) {
        RXQ_BASE + (offset - RXQ_BASE) % RXQ_STRIDE
    } else {
        offset
    };
    REGISTERS.iter().find(|r| r.offset == offset)
}

// ---- rings and packet size -------------------------------------------------------------

/// Alignment of every ring base (TX, RX data, RX completion): one page, so a ring never
/// shares an IOMMU page with unrelated memory.
pub const RING_ALIGN: u64 = 4096;
/// Fewest entries of a TX or completion ring.
pub const RING_ENTRIES_MIN: u32 = 8;
/// Most entries of a TX or completion ring (indices are compared modulo 2^32).
pub const RING_ENTRIES_MAX: u32 = 1 << 16;
/// Smallest RX data ring in bytes.
pub const RX_BYTES_MIN: u32 = 4096;
/// Largest RX data ring in bytes (free-running byte counts are compared modulo 2^32).
pub const RX_BYTES_MAX: u32 = 1 << 30;
/// Each message's payload starts on this boundary in the RX data ring, so it takes
/// `len` rounded up to it ([`crate::desc::RxCompletion::span`]).
pub const RX_ALIGN: u32 = 64;
// Alignment checks use masks.
const _: () = assert!(RX_ALIGN.is_power_of_two() && RING_ALIGN.is_power_of_two());
/// MAX_PKT bounds: a multiple of 16 bytes in `MAX_PKT_MIN..=MAX_PKT_LIMIT`.
pub const MAX_PKT_MIN: u32 = 16;
/// Largest MAX_PKT a router buffer is designed for.
pub const MAX_PKT_LIMIT: u32 = 4096;

fn config(what: &str, v: impl std::fmt::Display, rule: &str) -> Error {
    Error::BadConfig(format!("{what} = {v}: {rule}"))
}

/// Checks a TX or completion ring size (entries).
///
/// # Examples
/// ```
/// use fpga::regs::check_ring_entries;
/// assert!(check_ring_entries("TX_SIZE", 1024).is_ok());
/// assert!(check_ring_entries("TX_SIZE", 1000).is_err());
/// ```
pub fn check_ring_entries(what: &str, n: u32) -> Result<()> {
    if n.is_power_of_two() && (RING_ENTRIES_MIN..=RING_ENTRIES_MAX).contains(&n) {
        Ok(())
    } else {
        Err(config(
            what,
            n,
            "entries must be a power of two in 8..=65536",
        ))
    }
}

/// Checks an RX data ring size in bytes (0, a disabled queue, is refused here).
///
/// # Examples
/// ```
/// use fpga::regs::check_rx_bytes;
/// assert!(check_rx_bytes(1 << 20).is_ok());
/// assert!(check_rx_bytes(2048).is_err());
/// ```
pub fn check_rx_bytes(n: u32) -> Result<()> {
    if n.is_power_of_two() && (RX_BYTES_MIN..=RX_BYTES_MAX).contains(&n) {
        Ok(())
    } else {
        Err(config(
            "RX_SIZE",
            n,
            "bytes must be a power of two in 4096..=2^30",
        ))
    }
}

/// Checks a ring base IOVA ([`RING_ALIGN`]).
///
/// # Examples
/// ```
/// use fpga::regs::check_ring_base;
/// assert!(check_ring_base("TX_BASE", 0x1_0000_0000).is_ok());
/// assert!(check_ring_base("TX_BASE", 0x1_0000_0040).is_err());
/// ```
pub fn check_ring_base(what: &str, iova: u64) -> Result<()> {
    if iova & (RING_ALIGN - 1) == 0 {
        Ok(())
    } else {
        Err(config(
            what,
            format_args!("{iova:#x}"),
            "must be 4 KiB aligned",
        ))
    }
}

/// Checks a MAX_PKT value.
///
/// # Examples
/// ```
/// use fpga::regs::check_max_pkt;
/// assert!(check_max_pkt(256).is_ok());
/// assert!(check_max_pkt(100).is_err());
/// ```
pub fn check_max_pkt(n: u32) -> Result<()> {
    if n & 15 == 0 && (MAX_PKT_MIN..=MAX_PKT_LIMIT).contains(&n) {
        Ok(())
    } else {
        Err(config(
            "MAX_PKT",
            n,
            "must be a multiple of 16 in 16..=4096",
        ))
    }
}

/// The `CAPS` register, unpacked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Per-port RX queues can be enabled.
    pub hw_demux: bool,
    /// MSI-X capable.
    pub msix: bool,
    /// log2 of the ports per node (0..=16).
    pub log2_ports: u8,
    /// RX queues (1 without `hw_demux`, else 1..=[`RXQ_MAX`]).
    pub rx_queues: u8,
}

impl Caps {
    /// The register value; refuses an inconsistent set (see [`Caps::unpack`]).
    ///
    /// # Examples
    /// ```
    /// use fpga::regs::Caps;
    /// let c = Caps { hw_demux: true, msix: false, log2_ports: 6, rx_queues: 8 };
    /// assert_eq!(c.pack().unwrap(), 0x0008_0601);
    /// assert_eq!(Caps::unpack(0x0008_0601).unwrap(), c);
    /// ```
    pub fn pack(self) -> Result<u32> {
        self.check()?;
        Ok(self.hw_demux as u32
            | (self.msix as u32) << 1
            | (self.log2_ports as u32) << caps::LOG2_PORTS_SHIFT
            | (self.rx_queues as u32) << caps::RX_QUEUES_SHIFT)
    }

    /// Reads `CAPS`: reserved bits clear, `log2_ports <= 16`, one queue without HW_DEMUX and
    /// `1..=RXQ_MAX` with it.
    pub fn unpack(v: u32) -> Result<Caps> {
        if v & !(caps::HW_DEMUX | caps::MSIX | caps::LOG2_PORTS_MASK | caps::RX_QUEUES_MASK) != 0 {
            return Err(config("CAPS", format_args!("{v:#x}"), "reserved bits set"));
        }
        let c = Caps {
            hw_demux: v & caps::HW_DEMUX != 0,
            msix: v & caps::MSIX != 0,
            log2_ports: (v >> caps::LOG2_PORTS_SHIFT) as u8,
            rx_queues: (v >> caps::RX_QUEUES_SHIFT) as u8,
        };
        c.check()?;
        Ok(c)
    }

    /// Ports per node: `1 << log2_ports`.
    pub const fn ports(self) -> u32 {
        1 << self.log2_ports
    }

    fn check(self) -> Result<()> {
        let queues_ok = if self.hw_demux {
            (1..=RXQ_MAX).contains(&(self.rx_queues as u32))
        } else {
            self.rx_queues == 1
        };
        if self.log2_ports > 16 || !queues_ok {
            return Err(config(
                "CAPS",
                format_args!("{self:?}"),
                "log2_ports <= 16, rx_queues 1 (or 1..=56 with HW_DEMUX)",
            ));
        }
        Ok(())
    }
}

// ---- geometry: see geometry.rs ----
mod geometry;
pub use geometry::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_aligned_unique_and_inside_bar0() {
        for w in REGISTERS.windows(2) {
            assert!(w[0].offset < w[1].offset, "{} / {}", w[0].name, w[1].name);
        }
        for r in REGISTERS {
            assert_eq!(r.offset % 4, 0, "{}", r.name);
            assert!(r.offset < BAR0_SIZE, "{}", r.name);
            assert_eq!(find(r.offset), Some(r));
        }
        let last_q = rxq_reg(RXQ_MAX - 1, rxq::RXC_TAIL).unwrap();
        assert!(last_q + 4 <= BAR0_SIZE);
        assert_eq!(rxq_reg(0, 2), None);
    }

    #[test]
    fn coords_round_trip_on_the_extreme_tori() {
        for d in [
            Dims::new(1, 1, 1).unwrap(),
            Dims::new(16, 16, 16).unwrap(),
            Dims::new(3, 5, 2).unwrap(),
        ] {
            for id in 0..d.nodes() {
                let c = d.coord(id).unwrap();
                assert_eq!(d.node_id(c).unwrap() as u32, id);
                assert_eq!(Coord::unpack(c.pack()).unwrap(), c);
            }
            assert!(d.coord(d.nodes()).is_err());
            assert_eq!(Dims::unpack(d.pack()).unwrap(), d);
        }
        let big = Dims::new(16, 16, 16).unwrap();
        assert_eq!(big.nodes(), MAX_NODES);
        assert_eq!(
            big.node_id(Coord {
                x: 15,
                y: 15,
                z: 15
            })
            .unwrap(),
            4095
        );
        assert!(big.node_id(Coord { x: 16, y: 0, z: 0 }).is_err());
        assert!(Dims::unpack(0x0100_0101).is_err());
        assert!(Dims::unpack(0).is_err());
        assert!(Coord::unpack(0x0100_0000).is_err());
    }

    #[test]
    fn links_and_neighbours() {
        for (i, l) in Link::ALL.iter().enumerate() {
            assert_eq!(Link::from_index(i as u8).unwrap(), *l);
            assert_eq!(Link::new(l.dim(), l.dir()), *l);
            assert_eq!(l.opposite().opposite(), *l);
            assert_eq!(l.opposite().dim(), l.dim());
            assert_ne!(l.opposite().dir(), l.dir());
        }
        let one = Dims::new(1, 1, 1).unwrap();
        let c = Coord::default();
        for l in Link::ALL {
            assert_eq!(one.neighbour(c, l).unwrap(), c);
        }
        let d = Dims::new(16, 2, 5).unwrap();
        for id in 0..d.nodes() {
            let c = d.coord(id).unwrap();
            for l in Link::ALL {
                let n = d.neighbour(c, l).unwrap();
                assert!(d.contains(n));
                assert_eq!(d.neighbour(n, l.opposite()).unwrap(), c);
            }
        }
        assert_eq!(
            d.neighbour(Coord { x: 15, y: 1, z: 4 }, Link::PlusX)
                .unwrap()
                .x,
            0
        );
        assert!(d
            .neighbour(Coord { x: 0, y: 2, z: 0 }, Link::PlusX)
            .is_err());
    }

    #[test]
    fn caps_and_sizes() {
        let c = Caps {
            hw_demux: false,
            msix: true,
            log2_ports: 16,
            rx_queues: 1,
        };
        assert_eq!(Caps::unpack(c.pack().unwrap()).unwrap(), c);
        assert_eq!(c.ports(), 65536);
        assert!(Caps { rx_queues: 2, ..c }.pack().is_err());
        assert!(Caps {
            log2_ports: 17,
            ..c
        }
        .pack()
        .is_err());
        assert!(Caps::unpack(1 << 24).is_err());
        assert!(Caps::unpack(caps::HW_DEMUX | 57 << 16).is_err());
        assert!(check_ring_entries("RXC_SIZE", 4).is_err());
        assert!(check_ring_entries("RXC_SIZE", 1 << 17).is_err());
        assert!(check_rx_bytes(0).is_err());
        assert!(check_rx_bytes(RX_BYTES_MAX).is_ok());
        assert!(check_max_pkt(4096).is_ok() && check_max_pkt(4112).is_err());
    }
}
