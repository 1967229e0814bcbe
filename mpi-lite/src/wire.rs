//! The wire format of mpi-lite on its channel (port 1): every message starts with one
//! 16-byte header; eager messages carry the payload right after it in the same channel
//! message (no separate size message — SEED-NOTES, Madeleine's header optimisation).
//!
//! | bytes | field |
//! | --- | --- |
//! | 0 | kind ([`Kind`]) |
//! | 1 | reserved, 0 |
//! | 2..4 | context id (u16 LE): the communicator (even: point-to-point, odd: collectives) |
//! | 4..8 | tag (i32 LE) |
//! | 8..12 | `a`: sender's rank in the communicator (EAGER, SYNC, RTS) or the request id the message is for (CTS: sender's, DATA: receiver's, ACK: sender's) |
//! | 12..16 | `b`: sender's request id (SYNC, RTS) or receiver's (CTS) |
//! | 16..24 | RTS only: message length (u64 LE) |

/// Header bytes before an eager payload or rendezvous chunk.
pub const HDR: usize = 16;
/// Length of a request-to-send (header + total length).
pub const RTS_LEN: usize = 24;

/// Message kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Eager: the whole payload follows the header; completes the send at once.
    Eager = 1,
    /// Eager synchronous (`MPI_Ssend`): as Eager; the receiver answers ACK when matched.
    Sync = 2,
    /// Rendezvous request-to-send: envelope and length, no payload.
    Rts = 3,
    /// Clear-to-send: the receiver matched an RTS; `a` = sender request, `b` = receiver's.
    Cts = 4,
    /// A rendezvous chunk for receiver request `a`, in order, payload after the header.
    Data = 5,
    /// A Sync message was matched: sender request `a` completes.
    Ack = 6,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Eager,
            2 => Kind::Sync,
            3 => Kind::Rts,
            4 => Kind::Cts,
            5 => Kind::Data,
            6 => Kind::Ack,
            _ => return None,
        })
    }
}

/// A parsed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Message kind.
    pub kind: Kind,
    /// Context id.
    pub ctx: u16,
    /// Tag.
    pub tag: i32,
    /// Field `a` (see the module table).
    pub a: u32,
    /// Field `b`.
    pub b: u32,
    /// RTS: message length.
    pub len: u64,
}

impl Header {
    /// A header with `len` 0.
    pub fn new(kind: Kind, ctx: u16, tag: i32, a: u32, b: u32) -> Self {
        Header {
            kind,
            ctx,
            tag,
            a,
            b,
            len: 0,
        }
    }

    /// Encodes the 16 header bytes, plus the length for RTS (24 bytes in all).
    pub fn emit(&self) -> [u8; RTS_LEN] {
        let mut h = [0u8; RTS_LEN];
        h[0] = self.kind as u8;
        h[2..4].copy_from_slice(&self.ctx.to_le_bytes());
        h[4..8].copy_from_slice(&self.tag.to_le_bytes());
        h[8..12].copy_from_slice(&self.a.to_le_bytes());
        h[12..16].copy_from_slice(&self.b.to_le_bytes());
        h[16..24].copy_from_slice(&self.len.to_le_bytes());
        h
    }

    /// Bytes [`Header::emit`] output that go on the wire for this kind.
    pub fn wire_len(&self) -> usize {
        if self.kind == Kind::Rts {
            RTS_LEN
        } else {
            HDR
        }
    }

    /// Parses the first bytes of a message (`b` holds up to [`RTS_LEN`] of them).
    /// `None` for a message that is not ours (too short, unknown kind).
    pub fn parse(b: &[u8]) -> Option<Header> {
        if b.len() < HDR || b[1] != 0 {
            return None;
        }
        let kind = Kind::from_u8(b[0])?;
        let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let len = if kind == Kind::Rts {
            u64::from_le_bytes(b.get(16..24)?.try_into().ok()?)
        } else {
            0
        };
        Some(Header {
            kind,
            ctx: u16::from_le_bytes([b[2], b[3]]),
            tag: w(4) as i32,
            a: w(8),
            b: w(12),
            len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_bad_ones_are_refused() {
        let mut h = Header::new(Kind::Rts, 7, -3, 2, 99);
        h.len = 1 << 40;
        let b = h.emit();
        assert_eq!(Header::parse(&b), Some(h));
        assert_eq!(Header::parse(&b[..20]), None);
        let e = Header::new(Kind::Eager, 1, 5, 0, 0);
        assert_eq!(Header::parse(&e.emit()[..HDR]), Some(e));
        assert_eq!(Header::parse(&[9u8; 16]), None);
        assert_eq!(Header::parse(&[1u8; 8]), None);
    }
}
