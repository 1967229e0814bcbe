//! The wire header of an active message (Madeleine's lesson, SEED-NOTES: one fixed header
//! that carries the control fields *and* is followed by the first bytes of data, never a
//! separate size message).
//!
//! ```text
//! byte 0      handler id (0..=0xEF user, 0xF0..=0xFD reserved for skifch layers:
//!             0xF0 collectives, 0xFC no-op (peer check), 0xFD the endpoint barrier;
//!             0xFE chunk of a long
//!             transfer, 0xFF reply)
//! byte 1      flags: bits 0-1 number of extra u64 arguments (0..=3), bit 2 REQUEST
//!             (the sender waits for a reply), bit 3 LONG (first message of a chunked
//!             transfer: one more u64 follows the arguments), bit 4 ERROR (a reply that
//!             reports a failure at the target)
//! bytes 2-3   request id (REQUEST, reply) or transfer id (chunk), little endian
//! bytes 4-7   arg: a small u32 argument, little endian
//! then        nargs × u64 arguments; if LONG: u64 = total bytes | transfer id << 48
//! then        payload (inline data, or the first chunk of a long transfer)
//! ```
//! The header is 8 bytes in the common case and always a multiple of 8, so a payload keeps
//! the 8-byte alignment of the lane record it sits in.

use crate::{Error, Result};

/// First handler id reserved for skifch's own layers (collectives, …).
pub const FIRST_RESERVED: u8 = 0xF0;
/// Handler id of a chunk of a long transfer.
pub const H_CHUNK: u8 = 0xFE;
/// Handler id of a reply.
pub const H_REPLY: u8 = 0xFF;

/// Mask of the extra-argument count.
pub const F_NARGS: u8 = 0b11;
/// The sender waits for a reply.
pub const F_REQUEST: u8 = 1 << 2;
/// First message of a long (chunked) transfer.
pub const F_LONG: u8 = 1 << 3;
/// A reply reporting a failure at the target (the payload says why).
pub const F_ERROR: u8 = 1 << 4;

/// Largest header: 8 + 3 arguments + the long-transfer word.
pub const MAX_HDR: usize = 8 + 3 * 8 + 8;
/// Largest byte count of a long transfer (48 bits).
pub const MAX_LONG: u64 = (1 << 48) - 1;

/// The first header word (little endian on the wire).
#[inline(always)]
pub fn word(handler: u8, flags: u8, id: u16, arg: u32) -> u64 {
    handler as u64 | (flags as u64) << 8 | (id as u64) << 16 | (arg as u64) << 32
}

/// The decoded control fields of a message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Head {
    /// Handler id (byte 0).
    pub handler: u8,
    /// `F_*` flags; the low two bits count the extra arguments.
    pub flags: u8,
    /// Request id (request, reply) or transfer id (chunk).
    pub id: u16,
    /// The small argument.
    pub arg: u32,
    /// Extra arguments (the first `nargs()` are meaningful).
    pub args: [u64; 3],
    /// For LONG: (total bytes, transfer id).
    pub long: Option<(u64, u16)>,
}

impl Head {
    /// Extra `u64` arguments (0 to 3).
    pub fn nargs(&self) -> usize {
        (self.flags & F_NARGS) as usize
    }

    /// Header length on the wire.
    pub fn len(&self) -> usize {
        8 + 8 * self.nargs() + if self.flags & F_LONG != 0 { 8 } else { 0 }
    }

    /// A header with `args` (at most 3, checked by the caller).
    pub fn new(handler: u8, flags: u8, id: u16, arg: u32, args: &[u64]) -> Head {
        let mut a = [0u64; 3];
        a[..args.len()].copy_from_slice(args);
        Head {
            handler,
            flags: (flags & !F_NARGS) | args.len() as u8,
            id,
            arg,
            args: a,
            long: None,
        }
    }

    /// Encodes into `out`, returns the length.
    #[inline(always)]
    pub fn encode(&self, out: &mut [u8; MAX_HDR]) -> usize {
        out[0] = self.handler;
        out[1] = self.flags;
        out[2..4].copy_from_slice(&self.id.to_le_bytes());
        out[4..8].copy_from_slice(&self.arg.to_le_bytes());
        let mut n = 8;
        for a in &self.args[..self.nargs()] {
            out[n..n + 8].copy_from_slice(&a.to_le_bytes());
            n += 8;
        }
        if let Some((total, xid)) = self.long {
            out[n..n + 8].copy_from_slice(&(total | (xid as u64) << 48).to_le_bytes());
            n += 8;
        }
        n
    }

    /// The header of a plain user message, the common case, decoded without the general
    /// checks: handler below [`FIRST_RESERVED`], no flag but the argument count, its
    /// arguments inside `b`; with the header's length. `None`: anything else (decode it
    /// with [`Head::decode`]).
    #[inline(always)]
    pub fn decode_plain(b: &[u8]) -> Option<(Head, usize)> {
        let mut h = Head::default();
        h.decode_plain_into(b).map(|n| (h, n))
    }

    /// [`Head::decode_plain`] into `self` (left as it was on `None`), returning the
    /// header's length: the receive path decodes in place, without moving the 56-byte
    /// header through an `Option` (~20 instructions of copies a message). Arguments past
    /// the decoded count are not written (only the first `nargs()` are meaningful), so
    /// `self` is a fresh `Head::default()` wherever the whole array is read.
    #[inline(always)]
    pub(crate) fn decode_plain_into(&mut self, b: &[u8]) -> Option<usize> {
        let w = u64::from_le_bytes(b.get(..8)?.try_into().ok()?);
        let (handler, flags) = (w as u8, (w >> 8) as u8);
        if handler >= FIRST_RESERVED || flags & !F_NARGS != 0 {
            return None;
        }
        let n = (flags & F_NARGS) as usize;
        let words = b.get(8..8 + 8 * n)?;
        for (a, c) in self.args.iter_mut().zip(words.chunks_exact(8)) {
            *a = u64::from_le_bytes(c.try_into().ok()?);
        }
        self.handler = handler;
        self.flags = flags;
        self.id = (w >> 16) as u16;
        self.arg = (w >> 32) as u32;
        self.long = None;
        Some(8 + 8 * n)
    }

    /// Decodes the header at the start of `b` (which holds at least the first
    /// `min(len, MAX_HDR)` bytes of a message of `len` bytes).
    #[inline(always)]
    pub fn decode(b: &[u8], src: u32) -> Result<Head> {
        let bad =
            |why: &str| Error::Corrupt(format!("active message from rank {src}: {why}").into());
        let Some(w) = b.get(..8) else {
            return Err(bad("shorter than the 8-byte header"));
        };
        let w = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
        let flags = (w >> 8) as u8;
        let mut h = Head {
            handler: w as u8,
            flags,
            id: (w >> 16) as u16,
            arg: (w >> 32) as u32,
            args: [0; 3],
            long: None,
        };
        if flags & !(F_NARGS | F_REQUEST | F_LONG | F_ERROR) != 0 {
            return Err(bad("unknown header flags"));
        }
        if flags & (F_NARGS | F_LONG) == 0 {
            return Ok(h);
        }
        if b.len() < h.len() {
            return Err(bad("truncated header"));
        }
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        for i in 0..h.nargs() {
            h.args[i] = word(8 + 8 * i);
        }
        if flags & F_LONG != 0 {
            let w = word(8 + 8 * h.nargs());
            h.long = Some((w & MAX_LONG, (w >> 48) as u16));
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut h = Head::new(7, F_REQUEST, 513, 0xdead_beef, &[1, u64::MAX]);
        h.flags |= F_LONG;
        h.long = Some((123_456_789, 0xabcd));
        let mut b = [0u8; MAX_HDR];
        let n = h.encode(&mut b);
        assert_eq!(n, 32);
        assert_eq!(Head::decode(&b[..n], 0).unwrap(), h);
        let s = Head::new(1, 0, 0, 5, &[]);
        assert_eq!(s.encode(&mut b), 8);
        assert!(Head::decode(&b[..4], 0).is_err());
        b[1] = 0x80;
        assert!(Head::decode(&b[..8], 0).is_err());
        assert!(Head::decode_plain(&b[..8]).is_none()); // unknown flag
        let p = Head::new(9, 0, 0, 77, &[5, 6]);
        let n = p.encode(&mut b);
        assert_eq!(Head::decode_plain(&b[..n]), Some((p, 24)));
        assert!(Head::decode_plain(&b[..n - 1]).is_none()); // truncated arguments
        Head::new(H_REPLY, 0, 3, 0, &[]).encode(&mut b);
        assert!(Head::decode_plain(&b[..8]).is_none()); // a reserved id
        Head::new(9, F_REQUEST, 3, 0, &[]).encode(&mut b);
        assert!(Head::decode_plain(&b[..8]).is_none()); // a request: the general path
    }
}
