//! The three formats of the adapter (datasheet `fpga/README.md`, "Formats"):
//!
//! * [`TxDesc`] — 32 bytes, in the TX ring in host memory, written by the driver and
//!   DMA-read by the device;
//! * [`RxCompletion`] — 32 bytes, in an RX completion ring in host memory, DMA-written by
//!   the device and polled by the driver;
//! * [`PacketHeader`] — 16 bytes, in front of every packet's payload on the torus links.
//!
//! Every field is little-endian and the types have alignment 1 (`zerocopy`'s byte-order
//! integers), so the layout is the same on any host and a format can be parsed from any
//! offset of a buffer. Sizes and offsets are pinned at compile time below.
//!
//! # Trust
//! Any 32 (16) bytes are a value of these types — they derive `FromBytes` — so a value
//! proves nothing. What a device or another process can write is untrusted: the driver
//! copies a completion from its ring into a private shadow once, then calls
//! [`RxCompletion::validate`] on that copy against its own trusted state ([`RxExpect`]),
//! and uses only the validated copy; the device model does the same with
//! [`TxDesc::validate`] for descriptors and [`PacketHeader::validate`] for packets.
//! `parse`/`read_from` check only what the bytes alone can tell (reserved fields,
//! flags, lengths, check words); `validate` adds what needs context (ring position,
//! torus size, ports).

use core::mem::{offset_of, size_of};

use static_assertions::const_assert_eq;
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::regs::{Dims, MAX_NODES, RX_ALIGN};
use crate::{Error, Result};

/// Largest message: lengths and offsets in the packet header are 24 bits.
pub const MAX_MSG: u32 = (1 << 24) - 1;
/// Most payload bytes a TX descriptor can carry inline (in its `iova` field).
pub const INLINE_MAX: usize = 8;
/// Most virtual channels the packet header can name (2 bits).
pub const VCS_MAX: u8 = 4;

/// `NetAddr` encoding of the SkifCh core: `node << 16 | port`, where the rank is the
/// linear node id ([`Dims::node_id`]).
///
/// # Examples
/// ```
/// use fpga::desc::{addr_node, addr_port, net_addr};
/// let a = net_addr(4095, 7);
/// assert_eq!((a, addr_node(a), addr_port(a)), (0x0FFF_0007, 4095, 7));
/// ```
pub const fn net_addr(node: u16, port: u16) -> u32 {
    (node as u32) << 16 | port as u32
}
/// The node (rank) part of a `NetAddr`.
pub const fn addr_node(addr: u32) -> u32 {
    addr >> 16
}
/// The port part of a `NetAddr`.
pub const fn addr_port(addr: u32) -> u32 {
    addr & 0xFFFF
}

fn bad(what: &'static str, detail: impl Into<String>) -> Error {
    Error::BadFormat {
        what,
        detail: detail.into(),
    }
}

/// What a job allows, for `validate`: the driver builds it once from the registers
/// (`TORUS_DIMS`, `CAPS`) and its configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Nodes in the torus: node ids are below it.
    pub nodes: u32,
    /// Ports per node: ports are below it.
    pub ports: u32,
    /// Virtual channels in use: VC numbers are below it.
    pub vcs: u8,
    /// Largest message accepted.
    pub max_msg: u32,
}

impl Limits {
    /// Checked constructor: `ports` in `1..=65536`, `vcs` in `1..=VCS_MAX`,
    /// `max_msg <= MAX_MSG`.
    ///
    /// # Examples
    /// ```
    /// use fpga::{desc::Limits, regs::Dims};
    /// let l = Limits::new(Dims::new(4, 4, 4).unwrap(), 64, 2, 1 << 20).unwrap();
    /// assert_eq!(l.nodes, 64);
    /// assert!(Limits::new(Dims::new(1, 1, 1).unwrap(), 64, 2, 1 << 24).is_err());
    /// ```
    pub fn new(dims: Dims, ports: u32, vcs: u8, max_msg: u32) -> Result<Limits> {
        if !(1..=1 << 16).contains(&ports) || !(1..=VCS_MAX).contains(&vcs) || max_msg > MAX_MSG {
            return Err(Error::BadConfig(format!(
                "limits: ports {ports} (1..=65536), vcs {vcs} (1..=4), max_msg {max_msg} (<= {MAX_MSG})"
            )));
        }
        Ok(Limits {
            nodes: dims.nodes(),
            ports,
            vcs,
            max_msg,
        })
    }

    fn node(&self, what: &'static str, n: u32) -> Result<()> {
        if n >= self.nodes {
            return Err(bad(
                what,
                format!("node {n} outside a torus of {} nodes", self.nodes),
            ));
        }
        Ok(())
    }

    fn port(&self, what: &'static str, p: u32) -> Result<()> {
        if p >= self.ports {
            return Err(bad(what, format!("port {p} not below {}", self.ports)));
        }
        Ok(())
    }

    fn len(&self, what: &'static str, len: u32) -> Result<()> {
        if len > self.max_msg {
            return Err(bad(
                what,
                format!("length {len} above the limit {}", self.max_msg),
            ));
        }
        Ok(())
    }
}

/// The check word of descriptors and completions: FNV-1a over 32-bit little-endian words,
/// seeded per format, with a final xor-shift. Any single-word change alters it (each step
/// is a bijection of the running value); it catches torn, stale and garbage entries, not
/// an adversary. In HDL: seven 32×32 multiplies.
fn check_word(salt: u32, words: impl IntoIterator<Item = u32>) -> u32 {
    let h = words
        .into_iter()
        .fold(0x811C_9DC5 ^ salt, |h, w| (h ^ w).wrapping_mul(0x0100_0193));
    h ^ (h >> 16)
}

fn words(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

fn prefix<'a, T: FromBytes + KnownLayout + Immutable + Unaligned>(
    what: &'static str,
    bytes: &'a [u8],
) -> Result<&'a T> {
    match T::ref_from_prefix(bytes) {
        Ok((t, _)) => Ok(t),
        Err(_) => Err(bad(
            what,
            format!("{} bytes, need {}", bytes.len(), size_of::<T>()),
        )),
    }
}

fn emit_to<T: IntoBytes + Immutable>(what: &'static str, t: &T, out: &mut [u8]) -> Result<()> {
    let n = size_of::<T>();
    match out.get_mut(..n) {
        Some(dst) => {
            dst.copy_from_slice(t.as_bytes());
            Ok(())
        }
        None => Err(bad(
            what,
            format!("output of {} bytes, need {n}", out.len()),
        )),
    }
}

// ---- TX descriptor ---------------------------------------------------------------------

/// `TxDesc::flags` bits.
pub mod tx_flags {
    /// Raise `irq::TX_DONE` when TX_HEAD passes this descriptor.
    pub const IRQ_ON_DONE: u16 = 1 << 0;
    /// The payload (at most [`super::INLINE_MAX`] bytes) is in the `iova` field, in order
    /// from its first byte, the rest zero: no DMA read for small messages.
    pub const INLINE: u16 = 1 << 1;
    /// Every defined bit.
    pub const ALL: u16 = IRQ_ON_DONE | INLINE;
}

const TX_SALT: u32 = u32::from_le_bytes(*b"TXD1");

/// One message to send: a TX ring entry (32 bytes, datasheet "TX descriptor").
///
/// The device reads descriptors `TX_HEAD..TX_TAIL`; `seq` must be the low 32 bits of the
/// descriptor's free-running ring index, so a descriptor left over from an earlier lap
/// (a doorbell rung too early) is refused, and `check` covers bytes 0..28, so a
/// half-written one is too.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct TxDesc {
    /// Payload IOVA (or the inline payload, [`tx_flags::INLINE`]).
    pub iova: U64,
    /// Message length in bytes (`<= MAX_MSG`; 0 is a valid, empty message).
    pub len: U32,
    /// Destination `NetAddr`: node id << 16 | port.
    pub dst: U32,
    /// Sending port (the source port of the `NetAddr` the receiver sees).
    pub src_port: U16,
    /// [`tx_flags`].
    pub flags: U16,
    /// Low 32 bits of this descriptor's ring index.
    pub seq: U32,
    /// Zero.
    pub rsvd: U32,
    /// [`TxDesc::expected_check`].
    pub check: U32,
}

const_assert_eq!(size_of::<TxDesc>(), 32);
const_assert_eq!(core::mem::align_of::<TxDesc>(), 1);
const_assert_eq!(offset_of!(TxDesc, iova), 0);
const_assert_eq!(offset_of!(TxDesc, len), 8);
const_assert_eq!(offset_of!(TxDesc, dst), 12);
const_assert_eq!(offset_of!(TxDesc, src_port), 16);
const_assert_eq!(offset_of!(TxDesc, flags), 18);
const_assert_eq!(offset_of!(TxDesc, seq), 20);
const_assert_eq!(offset_of!(TxDesc, rsvd), 24);
const_assert_eq!(offset_of!(TxDesc, check), 28);

impl TxDesc {
    /// Bytes of a descriptor.
    pub const SIZE: usize = 32;

    /// A sealed descriptor for a payload at `iova`, at ring index `index`. `flags` may hold
    /// only `IRQ_ON_DONE` (inline payloads: [`TxDesc::new_inline`]).
    ///
    /// # Examples
    /// ```
    /// use fpga::desc::{net_addr, tx_flags, TxDesc};
    /// let d = TxDesc::new(0x1000, 512, net_addr(3, 1), 0, tx_flags::IRQ_ON_DONE, 7).unwrap();
    /// let mut ring = [0u8; 64];
    /// d.emit(&mut ring[32..]).unwrap();
    /// assert_eq!(TxDesc::parse(&ring[32..]).unwrap(), &d);
    /// assert!(TxDesc::new(0x1000, 1 << 24, net_addr(3, 1), 0, 0, 7).is_err());
    /// ```
    pub fn new(
        iova: u64,
        len: u32,
        dst: u32,
        src_port: u16,
        flags: u16,
        index: u64,
    ) -> Result<Self> {
        if flags & !tx_flags::IRQ_ON_DONE != 0 {
            return Err(bad(
                "TX descriptor",
                format!("flags {flags:#x}: only IRQ_ON_DONE here"),
            ));
        }
        Self::build(iova, len, dst, src_port, flags, index)
    }

    /// A sealed descriptor carrying `data` (at most [`INLINE_MAX`] bytes) inline.
    ///
    /// # Examples
    /// ```
    /// use fpga::desc::{net_addr, TxDesc};
    /// let d = TxDesc::new_inline(b"8 bytes!", net_addr(1, 0), 2, 0, 0).unwrap();
    /// assert_eq!(d.inline_payload(), Some(&b"8 bytes!"[..]));
    /// assert!(TxDesc::new_inline(b"nine byte", net_addr(1, 0), 2, 0, 0).is_err());
    /// ```
    pub fn new_inline(
        data: &[u8],
        dst: u32,
        src_port: u16,
        flags: u16,
        index: u64,
    ) -> Result<Self> {
        if data.len() > INLINE_MAX {
            return Err(bad(
                "TX descriptor",
                format!("{} inline bytes, at most {INLINE_MAX}", data.len()),
            ));
        }
        let mut word = [0u8; 8];
        word[..data.len()].copy_from_slice(data);
        let flags = flags | tx_flags::INLINE;
        if flags & !tx_flags::ALL != 0 {
            return Err(bad("TX descriptor", format!("unknown flags {flags:#x}")));
        }
        Self::build(
            u64::from_le_bytes(word),
            data.len() as u32,
            dst,
            src_port,
            flags,
            index,
        )
    }

    fn build(iova: u64, len: u32, dst: u32, src_port: u16, flags: u16, index: u64) -> Result<Self> {
        let mut d = TxDesc {
            iova: iova.into(),
            len: len.into(),
            dst: dst.into(),
            src_port: src_port.into(),
            flags: flags.into(),
            seq: (index as u32).into(),
            rsvd: 0.into(),
            check: 0.into(),
        };
        d.seal();
        d.check_format()?;
        Ok(d)
    }

    /// The check word bytes 0..28 call for.
    pub fn expected_check(&self) -> u32 {
        check_word(TX_SALT, words(&self.as_bytes()[..28]))
    }

    /// Recomputes `check` (after editing fields, e.g. to inject a fault past the check).
    pub fn seal(&mut self) {
        self.check = self.expected_check().into();
    }

    /// Checks what the bytes alone can tell: known flags, zero `rsvd`, `len <= MAX_MSG`,
    /// an inline length `<= INLINE_MAX` with zero padding, and the check word.
    pub fn check_format(&self) -> Result<()> {
        const W: &str = "TX descriptor";
        let (flags, len) = (self.flags.get(), self.len.get());
        if flags & !tx_flags::ALL != 0 {
            return Err(bad(W, format!("unknown flags {flags:#x}")));
        }
        if self.rsvd.get() != 0 {
            return Err(bad(W, "reserved word not zero"));
        }
        if len > MAX_MSG {
            return Err(bad(W, format!("length {len} above {MAX_MSG}")));
        }
        if flags & tx_flags::INLINE != 0 {
            if len as usize > INLINE_MAX {
                return Err(bad(W, format!("inline length {len} above {INLINE_MAX}")));
            }
            if self.iova.as_bytes()[len as usize..].iter().any(|&b| b != 0) {
                return Err(bad(W, "inline padding not zero"));
            }
        }
        if self.check.get() != self.expected_check() {
            return Err(bad(W, "check word mismatch (torn or garbage descriptor)"));
        }
        Ok(())
    }

    /// Everything the device checks before using a descriptor read at ring index `index`:
    /// [`TxDesc::check_format`], `seq`, and the destination, ports and length against `lim`.
    ///
    /// # Examples
    /// ```
    /// use fpga::{desc::{net_addr, Limits, TxDesc}, regs::Dims};
    /// let lim = Limits::new(Dims::new(2, 2, 2).unwrap(), 4, 2, 4096).unwrap();
    /// let d = TxDesc::new(0x2000, 100, net_addr(7, 3), 1, 0, 9).unwrap();
    /// assert!(d.validate(9, &lim).is_ok());
    /// assert!(d.validate(9 + 64, &lim).is_err()); // a stale lap
    /// let far = TxDesc::new(0x2000, 100, net_addr(8, 3), 1, 0, 9).unwrap();
    /// assert!(far.validate(9, &lim).is_err()); // node 8 of 8
    /// ```
    pub fn validate(&self, index: u64, lim: &Limits) -> Result<()> {
        const W: &str = "TX descriptor";
        self.check_format()?;
        if self.seq.get() != index as u32 {
            return Err(bad(
                W,
                format!("seq {} at ring index {index}", self.seq.get()),
            ));
        }
        lim.len(W, self.len.get())?;
        lim.node(W, addr_node(self.dst.get()))?;
        lim.port(W, addr_port(self.dst.get()))?;
        lim.port(W, self.src_port.get() as u32)
    }

    /// The inline payload, if the descriptor carries one (`len` bytes, not checked here
    /// beyond `INLINE_MAX`).
    pub fn inline_payload(&self) -> Option<&[u8]> {
        let len = self.len.get() as usize;
        (self.flags.get() & tx_flags::INLINE != 0 && len <= INLINE_MAX)
            .then(|| &self.iova.as_bytes()[..len])
    }

    /// A view of the first 32 bytes, format-checked.
    pub fn parse(bytes: &[u8]) -> Result<&TxDesc> {
        let d: &TxDesc = prefix("TX descriptor", bytes)?;
        d.check_format()?;
        Ok(d)
    }

    /// A format-checked copy of the first 32 bytes (the driver's shadow copy).
    pub fn read_from(bytes: &[u8]) -> Result<TxDesc> {
        Self::parse(bytes).copied()
    }

    /// Writes the 32 bytes to the start of `out`.
    pub fn emit(&self, out: &mut [u8]) -> Result<()> {
        emit_to("TX descriptor", self, out)
    }
}

// ---- RX completion ---------------------------------------------------------------------

/// `RxCompletion::status` bits (0 = OK).
pub mod rx_status {
    /// The message was larger than the queue's data ring: nothing was written to it
    /// (`span` 0), `len` is the sender's length. Sets `err::RX_OVERFLOW`.
    pub const TOO_LARGE: u16 = 1 << 0;
    /// The sender stopped before the last packet (link down, reset): `len` bytes were
    /// reserved, the tail is undefined.
    pub const TRUNCATED: u16 = 1 << 1;
    /// A packet of the message failed its header check or arrived out of order: `len`
    /// bytes were reserved, the contents are unreliable.
    pub const CORRUPT: u16 = 1 << 2;
    /// Every defined bit.
    pub const ALL: u16 = TOO_LARGE | TRUNCATED | CORRUPT;
}

const RXC_SALT: u32 = u32::from_le_bytes(*b"RXC1");
/// Salt of the completion tag ([`RxCompletion::tag_for`]); its low 16 bits are non-zero,
/// so zeroed ring memory never looks fresh during the first lap (`RXC_SIZE <= 2^16`).
pub const RXC_TAG_SALT: u32 = 0x5A5A_C3A5;

/// One received message: an RX completion ring entry (32 bytes, datasheet "RX completion").
///
/// Freshness: the device writes `tag` last (after the other 28 bytes are visible), and
/// `tag` is a function of the completion's free-running index ([`RxCompletion::tag_for`]),
/// so the driver polls one word: when the tag at slot `i & (RXC_SIZE - 1)` equals
/// `tag_for(i)`, completion `i` is complete; a stale entry from an earlier lap holds the
/// tag of `i - k * RXC_SIZE`, and fresh zeroed memory never matches in the first lap. A
/// phase bit would need the ring to be zeroed and re-armed; the index-derived tag needs
/// neither. `check` covers the other words *and* the tag, so a body that does not belong
/// to its tag (garbage, a torn DMA) is detected.
///
/// Completions of one queue are written in RX data ring order: the payload of completion
/// `i + 1` starts where completion `i`'s [`span`](RxCompletion::span) ends.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct RxCompletion {
    /// Free-running byte offset of the payload in the RX data ring (a multiple of
    /// `RX_ALIGN`; the slot is `offset & (RX_SIZE - 1)`, and the payload wraps at the end).
    pub offset: U64,
    /// Payload length in bytes.
    pub len: U32,
    /// Source `NetAddr`: node id << 16 | port.
    pub src: U32,
    /// Destination port on this node.
    pub dst_port: U16,
    /// [`rx_status`] bits.
    pub status: U16,
    /// Zero.
    pub rsvd: U32,
    /// [`RxCompletion::expected_check`].
    pub check: U32,
    /// [`RxCompletion::tag_for`] of this completion's index; written last.
    pub tag: U32,
}

const_assert_eq!(size_of::<RxCompletion>(), 32);
const_assert_eq!(core::mem::align_of::<RxCompletion>(), 1);
const_assert_eq!(offset_of!(RxCompletion, offset), 0);
const_assert_eq!(offset_of!(RxCompletion, len), 8);
const_assert_eq!(offset_of!(RxCompletion, src), 12);
const_assert_eq!(offset_of!(RxCompletion, dst_port), 16);
const_assert_eq!(offset_of!(RxCompletion, status), 18);
const_assert_eq!(offset_of!(RxCompletion, rsvd), 20);
const_assert_eq!(offset_of!(RxCompletion, check), 24);
const_assert_eq!(offset_of!(RxCompletion, tag), 28);

/// The driver's trusted view of one RX queue, against which a completion is validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxExpect {
    /// Free-running index of the completion expected next (the driver's RXC_TAIL).
    pub index: u64,
    /// Where its payload must start: the previous completion's offset + span.
    pub offset: u64,
    /// RX data bytes released so far (the value last written to RX_FREE, unwrapped).
    pub released: u64,
    /// RX_SIZE of the queue.
    pub ring_bytes: u64,
}

impl RxCompletion {
    /// Bytes of a completion.
    pub const SIZE: usize = 32;
    /// Byte offset of the tag word, the one the driver polls.
    pub const TAG_OFFSET: usize = 28;

    /// The tag of completion `index`: `index as u32 ^ RXC_TAG_SALT`.
    pub const fn tag_for(index: u64) -> u32 {
        index as u32 ^ RXC_TAG_SALT
    }

    /// A sealed, tagged completion `index` (what the device writes).
    ///
    /// # Examples
    /// ```
    /// use fpga::desc::{net_addr, RxCompletion, RxExpect, Limits};
    /// use fpga::regs::Dims;
    /// let c = RxCompletion::new(5, 4096, 100, net_addr(1, 2), 0, 0).unwrap();
    /// assert!(c.is_fresh(5) && !c.is_fresh(5 + 1024));
    /// assert_eq!(c.span(), 128);
    /// let lim = Limits::new(Dims::new(2, 1, 1).unwrap(), 4, 2, 1 << 16).unwrap();
    /// let at = RxExpect { index: 5, offset: 4096, released: 0, ring_bytes: 1 << 16 };
    /// assert!(c.validate(&at, &lim).is_ok());
    /// assert!(c.validate(&RxExpect { offset: 4032, ..at }, &lim).is_err());
    /// ```
    pub fn new(
        index: u64,
        offset: u64,
        len: u32,
        src: u32,
        dst_port: u16,
        status: u16,
    ) -> Result<Self> {
        let mut c = RxCompletion {
            offset: offset.into(),
            len: len.into(),
            src: src.into(),
            dst_port: dst_port.into(),
            status: status.into(),
            rsvd: 0.into(),
            check: 0.into(),
            tag: Self::tag_for(index).into(),
        };
        c.seal();
        c.check_format()?;
        Ok(c)
    }

    /// The check word of bytes 0..24 and the tag.
    pub fn expected_check(&self) -> u32 {
        let b = self.as_bytes();
        check_word(RXC_SALT, words(&b[..24]).chain(words(&b[28..])))
    }

    /// Recomputes `check` (after editing fields, e.g. to inject a fault past the check).
    pub fn seal(&mut self) {
        self.check = self.expected_check().into();
    }

    /// Whether this is completion `index` (its tag matches; not yet validated).
    pub fn is_fresh(&self, index: u64) -> bool {
        self.tag.get() == Self::tag_for(index)
    }

    /// Bytes of the RX data ring it occupies: `len` rounded up to `RX_ALIGN`, or 0 for
    /// TOO_LARGE. RecvComp releases exactly this many bytes (in ring order).
    pub fn span(&self) -> u64 {
        if self.status.get() & rx_status::TOO_LARGE != 0 {
            0
        } else {
            (self.len.get() as u64).next_multiple_of(RX_ALIGN as u64)
        }
    }

    /// Checks what the bytes alone can tell: known status bits, zero `rsvd`,
    /// `len <= MAX_MSG`, an `RX_ALIGN`-aligned offset and the check word.
    pub fn check_format(&self) -> Result<()> {
        const W: &str = "RX completion";
        let status = self.status.get();
        if status & !rx_status::ALL != 0 {
            return Err(bad(W, format!("unknown status bits {status:#x}")));
        }
        if self.rsvd.get() != 0 {
            return Err(bad(W, "reserved word not zero"));
        }
        if self.len.get() > MAX_MSG {
            return Err(bad(W, format!("length {} above {MAX_MSG}", self.len.get())));
        }
        if self.offset.get() & (RX_ALIGN as u64 - 1) != 0 {
            return Err(bad(
                W,
                format!(
                    "offset {:#x} not {RX_ALIGN}-byte aligned",
                    self.offset.get()
                ),
            ));
        }
        if self.check.get() != self.expected_check() {
            return Err(bad(W, "check word mismatch (torn or garbage completion)"));
        }
        Ok(())
    }

    /// Everything the driver checks before trusting a (shadow-copied) completion:
    /// [`RxCompletion::check_format`], the tag for `at.index`, the payload exactly at
    /// `at.offset` and inside the space the driver released (`offset + span <= released +
    /// ring_bytes`), and the source, port and length against `lim`. After this, the payload
    /// is `span` bytes the device will not write again until they are released.
    pub fn validate(&self, at: &RxExpect, lim: &Limits) -> Result<()> {
        const W: &str = "RX completion";
        self.check_format()?;
        if !self.is_fresh(at.index) {
            return Err(bad(
                W,
                format!("tag {:#x} is not completion {}'s", self.tag.get(), at.index),
            ));
        }
        let offset = self.offset.get();
        if offset != at.offset {
            return Err(bad(
                W,
                format!("payload at {offset}, expected {}", at.offset),
            ));
        }
        let end = offset.checked_add(self.span());
        let limit = at.released.saturating_add(at.ring_bytes);
        if self.span() > at.ring_bytes || !matches!(end, Some(e) if e <= limit) {
            return Err(bad(
                W,
                format!(
                    "payload {offset}+{} beyond the released space (limit {limit})",
                    self.len.get()
                ),
            ));
        }
        if self.status.get() & rx_status::TOO_LARGE == 0 {
            lim.len(W, self.len.get())?;
        }
        lim.node(W, addr_node(self.src.get()))?;
        lim.port(W, addr_port(self.src.get()))?;
        lim.port(W, self.dst_port.get() as u32)
    }

    /// A view of the first 32 bytes, format-checked (freshness is [`RxCompletion::is_fresh`]).
    pub fn parse(bytes: &[u8]) -> Result<&RxCompletion> {
        let c: &RxCompletion = prefix("RX completion", bytes)?;
        c.check_format()?;
        Ok(c)
    }

    /// A format-checked copy of the first 32 bytes (the driver's shadow copy).
    pub fn read_from(bytes: &[u8]) -> Result<RxCompletion> {
        Self::parse(bytes).copied()
    }

    /// Writes the 32 bytes to the start of `out`.
    pub fn emit(&self, out: &mut [u8]) -> Result<()> {
        emit_to("RX completion", self, out)
    }
}

/// Where `len` bytes at free-running position `pos` lie in a ring of `ring_bytes` (a power
/// of two): `(start, len)` of the part before the ring end and of the wrapped part
/// (`(0, 0)` if none) — the one or two segments of a received message.
///
/// # Examples
/// ```
/// use fpga::desc::ring_split;
/// assert_eq!(ring_split(4096 + 100, 50, 4096), [(100, 50), (0, 0)]);
/// assert_eq!(ring_split(4000, 200, 4096), [(4000, 96), (0, 104)]);
/// ```
pub fn ring_split(pos: u64, len: u64, ring_bytes: u64) -> [(u64, u64); 2] {
    let start = pos & ring_bytes.wrapping_sub(1);
    let first = len.min(ring_bytes - start);
    [(start, first), (0, len - first)]
}

// ---- packet: see packet.rs ----
mod packet;
pub use packet::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_matches_the_standard_check_value() {
        assert_eq!(crc16(b"123456789"), 0x29B1);
    }

    #[test]
    fn zeroed_memory_is_never_a_valid_entry() {
        let z = [0u8; 32];
        assert!(TxDesc::parse(&z).is_err());
        assert!(RxCompletion::parse(&z).is_err());
        assert!(PacketHeader::parse(&z[..16]).is_err());
        let c = RxCompletion::read_from_bytes(&z).unwrap();
        for i in 0..1u64 << 16 {
            assert!(!c.is_fresh(i));
        }
    }

    #[test]
    fn packetise_covers_the_message_with_consistent_flags() {
        for (len, max) in [(1, 16), (16, 16), (17, 16), (4096, 256), (MAX_MSG, 4096)] {
            let mut next = 0;
            let pkts: Vec<_> = packetise(len, max).collect();
            for (i, &(off, n)) in pkts.iter().enumerate() {
                assert_eq!(off, next);
                let f = PacketFields {
                    msg_len: len,
                    offset: off,
                    first: i == 0,
                    last: i + 1 == pkts.len(),
                    ..Default::default()
                };
                PacketHeader::new(&f)
                    .unwrap()
                    .check_payload(n, max)
                    .unwrap();
                next += n;
            }
            assert_eq!(next, len);
        }
    }

    #[test]
    fn ring_split_wraps_exactly_at_the_end() {
        assert_eq!(ring_split(4096, 4096, 4096), [(0, 4096), (0, 0)]);
        assert_eq!(ring_split(4095, 2, 4096), [(4095, 1), (0, 1)]);
        assert_eq!(ring_split(u64::MAX - 63, 64, 4096), [(4032, 64), (0, 0)]);
    }
}
