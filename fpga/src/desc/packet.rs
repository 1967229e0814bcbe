//! The packet header the adapters put on the torus links, and its CRC.

#[allow(unused_imports)]
use super::*;

const PKT_NODE_MASK: u16 = 0x0FFF;
const PKT_VC_SHIFT: u16 = 12;
const PKT_FIRST: u16 = 1 << 14;
const PKT_LAST: u16 = 1 << 15;
const PKT_SEQ_SHIFT: u16 = 12;
const _: () = assert!(MAX_NODES == PKT_NODE_MASK as u32 + 1);

/// The header in front of every packet on a torus link (16 bytes, datasheet "Packet
/// header"). Bit-packed to keep the per-packet overhead at 16 bytes for 4096 nodes:
/// `dst` holds the destination node (bits 0..11), the virtual channel (12..13) and
/// FIRST/LAST (14, 15); `src` the source node (0..11) and a 4-bit packet sequence
/// number per (source, destination) node pair (12..15); `msg_len` and `offset` are
/// 24-bit little-endian. The payload length is the link frame's length minus 16
/// ([`PacketHeader::check_payload`]). Use [`PacketFields`] to build or read one.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct PacketHeader {
    /// Destination node | VC << 12 | FIRST << 14 | LAST << 15.
    pub dst: U16,
    /// Source node | seq << 12.
    pub src: U16,
    /// Destination port.
    pub dst_port: U16,
    /// Source port.
    pub src_port: U16,
    /// Message length (24-bit little-endian).
    pub msg_len: [u8; 3],
    /// Offset of this packet's payload in the message (24-bit little-endian).
    pub offset: [u8; 3],
    /// CRC-16/CCITT-FALSE of bytes 0..14.
    pub check: U16,
}

const_assert_eq!(size_of::<PacketHeader>(), 16);
const_assert_eq!(core::mem::align_of::<PacketHeader>(), 1);
const_assert_eq!(offset_of!(PacketHeader, dst), 0);
const_assert_eq!(offset_of!(PacketHeader, src), 2);
const_assert_eq!(offset_of!(PacketHeader, dst_port), 4);
const_assert_eq!(offset_of!(PacketHeader, src_port), 6);
const_assert_eq!(offset_of!(PacketHeader, msg_len), 8);
const_assert_eq!(offset_of!(PacketHeader, offset), 11);
const_assert_eq!(offset_of!(PacketHeader, check), 14);

/// A packet header's fields, unpacked (the parsed representation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PacketFields {
    /// Destination node id (< 4096).
    pub dst_node: u16,
    /// Source node id (< 4096).
    pub src_node: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Source port.
    pub src_port: u16,
    /// Message length (<= MAX_MSG).
    pub msg_len: u32,
    /// Offset of this packet's payload in the message.
    pub offset: u32,
    /// Virtual channel (< VCS_MAX).
    pub vc: u8,
    /// First packet of its message (exactly when `offset == 0`).
    pub first: bool,
    /// Last packet of its message.
    pub last: bool,
    /// Packet sequence number modulo 16, per (source, destination) node pair: detects a
    /// lost packet (or whole message) that offsets alone cannot.
    pub seq: u8,
}

/// CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection): cheap in HDL, and unlike
/// a ones'-complement sum it sees swapped words.
pub fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0xFFFF, |crc, &b| {
        (0..8).fold(crc ^ (b as u16) << 8, |c, _| {
            if c & 0x8000 != 0 {
                c << 1 ^ 0x1021
            } else {
                c << 1
            }
        })
    })
}

fn u24(b: [u8; 3]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], 0])
}

fn to_u24(v: u32) -> [u8; 3] {
    let b = v.to_le_bytes();
    [b[0], b[1], b[2]]
}

impl PacketHeader {
    /// Bytes of a header.
    pub const SIZE: usize = 16;

    /// A sealed header from `f`, refused if a field does not fit or the fields disagree
    /// (see [`PacketHeader::check_format`]).
    ///
    /// # Examples
    /// ```
    /// use fpga::desc::{PacketFields, PacketHeader};
    /// let f = PacketFields { dst_node: 4095, src_node: 1, dst_port: 2, src_port: 3,
    ///     msg_len: 1000, offset: 0, vc: 1, first: true, last: false, seq: 15 };
    /// let h = PacketHeader::new(&f).unwrap();
    /// assert_eq!(h.fields(), f);
    /// assert!(h.check_payload(256, 256).is_ok());
    /// assert!(PacketHeader::new(&PacketFields { offset: 8, ..f }).is_err()); // FIRST, offset 8
    /// ```
    pub fn new(f: &PacketFields) -> Result<Self> {
        const W: &str = "packet header";
        if f.dst_node > PKT_NODE_MASK || f.src_node > PKT_NODE_MASK {
            return Err(bad(
                W,
                format!("nodes {} -> {}: ids are 12 bits", f.src_node, f.dst_node),
            ));
        }
        if f.vc >= VCS_MAX || f.seq >= 16 || f.msg_len > MAX_MSG || f.offset > MAX_MSG {
            return Err(bad(
                W,
                format!(
                    "vc {} (< 4), seq {} (< 16), length {} and offset {} (<= 2^24-1)",
                    f.vc, f.seq, f.msg_len, f.offset
                ),
            ));
        }
        let dst = f.dst_node
            | (f.vc as u16) << PKT_VC_SHIFT
            | if f.first { PKT_FIRST } else { 0 }
            | if f.last { PKT_LAST } else { 0 };
        let mut h = PacketHeader {
            dst: dst.into(),
            src: (f.src_node | (f.seq as u16) << PKT_SEQ_SHIFT).into(),
            dst_port: f.dst_port.into(),
            src_port: f.src_port.into(),
            msg_len: to_u24(f.msg_len),
            offset: to_u24(f.offset),
            check: 0.into(),
        };
        h.seal();
        h.check_format()?;
        Ok(h)
    }

    /// The fields, unpacked (not checked: call [`PacketHeader::check_format`] or
    /// [`PacketHeader::parse`] first).
    pub fn fields(&self) -> PacketFields {
        let (dst, src) = (self.dst.get(), self.src.get());
        PacketFields {
            dst_node: dst & PKT_NODE_MASK,
            src_node: src & PKT_NODE_MASK,
            dst_port: self.dst_port.get(),
            src_port: self.src_port.get(),
            msg_len: u24(self.msg_len),
            offset: u24(self.offset),
            vc: ((dst >> PKT_VC_SHIFT) & 3) as u8,
            first: dst & PKT_FIRST != 0,
            last: dst & PKT_LAST != 0,
            seq: (src >> PKT_SEQ_SHIFT) as u8,
        }
    }

    /// The CRC bytes 0..14 call for.
    pub fn expected_check(&self) -> u16 {
        crc16(&self.as_bytes()[..14])
    }

    /// Recomputes `check` (after editing fields, e.g. to inject a fault past the check).
    pub fn seal(&mut self) {
        self.check = self.expected_check().into();
    }

    /// Checks what the header alone can tell: the CRC, FIRST exactly at offset 0, the
    /// offset inside the message (a zero-length message is one FIRST|LAST packet).
    pub fn check_format(&self) -> Result<()> {
        const W: &str = "packet header";
        if self.check.get() != self.expected_check() {
            return Err(bad(W, "CRC mismatch"));
        }
        let f = self.fields();
        if f.first != (f.offset == 0) {
            return Err(bad(W, format!("FIRST {} at offset {}", f.first, f.offset)));
        }
        if f.msg_len == 0 && !f.last || f.msg_len > 0 && f.offset >= f.msg_len {
            return Err(bad(
                W,
                format!(
                    "offset {} in a message of {} bytes (LAST {})",
                    f.offset, f.msg_len, f.last
                ),
            ));
        }
        Ok(())
    }

    /// [`PacketHeader::check_format`] plus nodes, ports, VC and length against `lim`: what a
    /// router/receiver checks before it trusts a packet.
    pub fn validate(&self, lim: &Limits) -> Result<()> {
        const W: &str = "packet header";
        self.check_format()?;
        let f = self.fields();
        lim.node(W, f.dst_node as u32)?;
        lim.node(W, f.src_node as u32)?;
        lim.port(W, f.dst_port as u32)?;
        lim.port(W, f.src_port as u32)?;
        lim.len(W, f.msg_len)?;
        if f.vc >= lim.vcs {
            return Err(bad(W, format!("vc {} of {}", f.vc, lim.vcs)));
        }
        Ok(())
    }

    /// Checks a payload of `len` bytes (the link frame minus the header) against the
    /// header: `1..=max_pkt` bytes (0 only for a zero-length message), inside the message,
    /// and LAST exactly when it ends the message.
    pub fn check_payload(&self, len: u32, max_pkt: u32) -> Result<()> {
        let f = self.fields();
        let end = f.offset as u64 + len as u64;
        if len > max_pkt
            || (len == 0) != (f.msg_len == 0)
            || end > f.msg_len as u64
            || f.last != (end == f.msg_len as u64)
        {
            return Err(bad(
                "packet",
                format!(
                    "payload {len} bytes (max {max_pkt}) at offset {} of {} (LAST {})",
                    f.offset, f.msg_len, f.last
                ),
            ));
        }
        Ok(())
    }

    /// A view of the first 16 bytes, format-checked.
    pub fn parse(bytes: &[u8]) -> Result<&PacketHeader> {
        let h: &PacketHeader = prefix("packet header", bytes)?;
        h.check_format()?;
        Ok(h)
    }

    /// A format-checked copy of the first 16 bytes.
    pub fn read_from(bytes: &[u8]) -> Result<PacketHeader> {
        Self::parse(bytes).copied()
    }

    /// Writes the 16 bytes to the start of `out`.
    pub fn emit(&self, out: &mut [u8]) -> Result<()> {
        emit_to("packet header", self, out)
    }
}

/// How the device cuts a message of `msg_len` bytes into packets of at most `max_pkt`:
/// `(offset, len)` of each, in order; a zero-length message is one empty packet. Every
/// packet but the last is full.
///
/// # Examples
/// ```
/// use fpga::desc::packetise;
/// assert_eq!(packetise(600, 256).collect::<Vec<_>>(), [(0, 256), (256, 256), (512, 88)]);
/// assert_eq!(packetise(0, 256).collect::<Vec<_>>(), [(0, 0)]);
/// ```
pub fn packetise(msg_len: u32, max_pkt: u32) -> impl Iterator<Item = (u32, u32)> {
    let step = max_pkt.max(1);
    let n = msg_len.div_ceil(step).max(1);
    (0..n).map(move |i| {
        let off = i * step;
        (off, (msg_len - off).min(step))
    })
}
