//! The 16-byte header every message of the ofi driver starts with, and the records of a
//! `Data` message. It is read from buffers a remote peer filled, so [`Hdr::parse`] checks
//! it and every caller validates the ranges against the job (driver obligation 7).
//!
//! A `Data` fabric message is a batch: the header, then one record per SkifCh message —
//! its length (`u32`, little-endian), 4 zero bytes, the payload, zero padding to a multiple
//! of [`REC`] — so every payload starts 8-byte aligned in the receive buffer.

use skifch::{Error, Result};

/// Header bytes.
pub const HDR: usize = 16;
const MAGIC: u8 = 0xa5;

/// Bytes before each record's payload (and the alignment of records).
pub const REC: usize = 8;

/// Bytes a record of a `len`-byte message takes in a batch.
pub const fn rec_len(len: usize) -> usize {
    REC + len.next_multiple_of(REC)
}

/// Message kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A batch of user messages (records follow the header).
    Data = 1,
    /// Credit return only (no payload).
    Credit = 2,
    /// Control endpoint: heartbeat.
    Beat = 3,
    /// Control endpoint: the sender finalized.
    Bye = 4,
    /// Control endpoint: the sender ends the job by exiting with status `seq` (GASNet's
    /// `gasnet_exit`): the receiver records the request and counts the sender lost.
    Exit = 5,
}

/// A parsed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hdr {
    /// What the message is.
    pub kind: Kind,
    /// The sender's port.
    pub port: u16,
    /// The sender's rank.
    pub rank: u32,
    /// `Data`: the pair's batch sequence number (low 32 bits).
    pub seq: u32,
    /// The cumulative count (low 32 bits) of the receiver's batches to the sender's port
    /// that the sender has completed: the receiver's credit (see [`super::port`]).
    pub credit: u32,
}

impl Hdr {
    /// The header's bytes (little-endian fields).
    pub fn emit(&self) -> [u8; HDR] {
        let mut b = [0u8; HDR];
        b[0] = MAGIC;
        b[1] = self.kind as u8;
        b[2..4].copy_from_slice(&self.port.to_le_bytes());
        b[4..8].copy_from_slice(&self.rank.to_le_bytes());
        b[8..12].copy_from_slice(&self.seq.to_le_bytes());
        b[12..16].copy_from_slice(&self.credit.to_le_bytes());
        b
    }

    /// Parses a header; a bad magic or kind is [`Error::Corrupt`].
    pub fn parse(b: &[u8; HDR]) -> Result<Hdr> {
        let kind = match (b[0], b[1]) {
            (MAGIC, 1) => Kind::Data,
            (MAGIC, 2) => Kind::Credit,
            (MAGIC, 3) => Kind::Beat,
            (MAGIC, 4) => Kind::Bye,
            (MAGIC, 5) => Kind::Exit,
            (m, k) => {
                return Err(Error::Corrupt(
                    format!("ofi: message header with magic {m:#x}, kind {k}").into(),
                ))
            }
        };
        let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Ok(Hdr {
            kind,
            port: u16::from_le_bytes([b[2], b[3]]),
            rank: w(4),
            seq: w(8),
            credit: w(12),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejects() {
        let h = Hdr {
            kind: Kind::Data,
            port: 3,
            rank: 70000,
            seq: u32::MAX,
            credit: 9,
        };
        assert_eq!(Hdr::parse(&h.emit()).unwrap(), h);
        let mut b = h.emit();
        b[1] = 9;
        assert!(matches!(Hdr::parse(&b), Err(Error::Corrupt(_))));
        b = h.emit();
        b[0] = 0;
        assert!(matches!(Hdr::parse(&b), Err(Error::Corrupt(_))));
    }
}
