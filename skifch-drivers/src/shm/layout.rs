//! The segment layout: a header, rank records, channel records (these three are the
//! job-control block, [`crate::jobctl`]), lane control lines and lane data. Everything
//! here is plain arithmetic on trusted parameters; the header copy in shared memory is
//! only compared against it, never used to compute an address.

use skifch::{Error, Result};

pub use crate::jobctl::{CHAN_REC, H_EXIT, H_FIRST_LOST, H_LOST, RANK_REC};

/// `"SKIFCH\0\1"`: first 8 bytes of every segment.
pub const MAGIC: u64 = u64::from_le_bytes(*b"SKIFCH\0\x01");
/// Layout version; bumped on any change to this file or to the lane protocol
/// (2: record headers are the consumer's ready flag, no per-message `head` store;
/// 3: the header's check word is a position tag, see [`encode_rec`];
/// 4: payloads above [`ALIGN_ABOVE`] bytes start on a cache line, see [`record_size`];
/// 5: free space is zero — the consumer zeroes what it gives back, the producer no longer
/// zeroes the next header word, see [`super::lane`]).
pub const VERSION: u32 = 5;
/// Cache line size assumed for padding.
pub const LINE: usize = 64;
/// Most ports (channels) one rank may have open in the shm/in-process transport.
pub const MAX_PORTS: u32 = 64;
/// Most ranks in one segment.
pub const MAX_RANKS: u32 = 1024;
/// Smallest and largest lane capacity (bytes; a power of two). The loom model runs lanes
/// of a few records.
#[cfg(not(loom))]
pub const MIN_LANE: usize = 1 << 10;
/// Smallest and largest lane capacity (bytes; a power of two). The loom model runs lanes
/// of a few records.
#[cfg(loom)]
pub const MIN_LANE: usize = 1 << 6;
/// Largest lane capacity (bytes).
pub const MAX_LANE: usize = 1 << 28;
/// Bytes of the per-message record header in a lane.
pub const REC_HDR: usize = 8;
/// Bytes a producer keeps free after its last record: the word where the next header
/// will go, zero as all free space is (the consumer's "not yet" flag, see [`super::lane`]).
pub const TERM: usize = 8;
/// Payloads longer than this are placed on a cache line (see [`record_size`]).
pub const ALIGN_ABOVE: usize = 2048;
/// Most padding [`record_size`] adds after a payload.
pub const PAD_MAX: usize = LINE - REC_HDR;

pub(super) const HDR_BYTES: usize = 4 * LINE;
pub(super) const LANE_CTL: usize = 2 * LINE;

// Header field offsets (bytes from the segment start).
pub(super) const H_MAGIC: usize = 0;
pub(super) const H_VERSION: usize = 8;
pub(super) const H_NRANKS: usize = 12;
pub(super) const H_NPORTS: usize = 16;
pub(super) const H_LANE_LOG2: usize = 20;
pub(super) const H_TOTAL: usize = 24;
// `H_LOST`, `H_FIRST_LOST` and `H_EXIT` (the job-control block's words of the header) follow.

// Lane control: head and tail on separate lines. `head` is written only when a sending
// port closes (so a port reopened later continues there); `tail` lazily by the receiver.
pub(super) const L_HEAD: usize = 0;
pub(super) const L_TAIL: usize = LINE;

/// Parameters of a job's segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Ranks in the job.
    pub nranks: u32,
    /// Ports (channels) per rank.
    pub nports: u32,
    /// Bytes of each lane's ring (power of two).
    pub lane_bytes: usize,
}

impl Params {
    /// Default ports per rank: one per library of [`skifch::ports`] (0 application, 1 MPI,
    /// 2 SHMEM, 3 ARMCI, 4 GASNet). The fifth port costs address space only: a lane's
    /// pages are touched when it first carries a message, and only lanes between ports
    /// that talk ever do (a formatted segment has one page touched at any port count).
    pub const DEFAULT_PORTS: u32 = 5;
    /// Default lane size, shrunk for big jobs so the segment stays below ~8 GiB of
    /// (sparse, touched-on-use) address space. 1 MiB: room for ~250 messages of 4 KiB; in
    /// 256 KiB lanes the 2-16 KiB message rate was half as high (4 KiB: 3.9 vs 9.6 M msg/s,
    /// same run), with 8 B rate and latency unchanged. The budget (8 GiB since the default
    /// went from 4 to 5 ports, 4 GiB before) gives 5-port jobs the lanes 4-port jobs had
    /// at every size (1 MiB up to 16 ranks, 256 KiB at 32, 64 KiB at 64, 16 KiB from 256).
    pub fn default_lane_bytes(nranks: u32, nports: u32) -> usize {
        let chans = (nranks as u64 * nports as u64).max(1);
        let lanes = chans * chans;
        let mut lane = 1usize << 20;
        while lane > 16 << 10 && lanes * lane as u64 > 8 << 30 {
            lane /= 2;
        }
        lane
    }

    /// Parameters for `nranks` with defaults, overridden by `SKIFCH_PORTS` and `SKIFCH_LANE_KB`.
    /// A value out of range is an [`Error::InvalidArgument`] naming the variable.
    pub fn from_env(nranks: u32) -> Result<Params> {
        let nports = match std::env::var("SKIFCH_PORTS") {
            Ok(v) => match v.parse::<u32>() {
                Ok(n) if (1..=MAX_PORTS).contains(&n) => n,
                Ok(_) => {
                    return Err(Error::InvalidArgument(
                        format!("SKIFCH_PORTS={v}: ports per rank must be 1..={MAX_PORTS}").into(),
                    ))
                }
                Err(_) => {
                    return Err(Error::Bootstrap(
                        format!("SKIFCH_PORTS={v:?} is not a number").into(),
                    ))
                }
            },
            Err(_) => Self::DEFAULT_PORTS,
        };
        let lane_bytes = match std::env::var("SKIFCH_LANE_KB") {
            Ok(v) => {
                let kb = v.parse::<usize>().map_err(|_| {
                    Error::Bootstrap(format!("SKIFCH_LANE_KB={v:?} is not a number").into())
                })?;
                let bytes = kb.saturating_mul(1024);
                if !bytes.is_power_of_two() || !(MIN_LANE..=MAX_LANE).contains(&bytes) {
                    return Err(Error::InvalidArgument(
                        format!(
                            "SKIFCH_LANE_KB={v}: the lane size in KiB must be a power of two in {}..={}",
                            MIN_LANE.div_ceil(1024),
                            MAX_LANE / 1024
                        )
                        .into(),
                    ));
                }
                bytes
            }
            Err(_) => Self::default_lane_bytes(nranks, nports),
        };
        let p = Params {
            nranks,
            nports,
            lane_bytes,
        };
        Layout::new(p)?;
        Ok(p)
    }
}

/// Trusted offsets derived from [`Params`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The parameters it was computed from.
    pub params: Params,
    /// Channels (ranks × ports) and lanes (channels²: one per ordered pair).
    pub chans: usize,
    /// See `chans`.
    pub lanes: usize,
    /// Offset of the rank records and of the channel records (the job-control block).
    pub rank_off: usize,
    /// See `rank_off`.
    pub chan_off: usize,
    /// Per receiving channel: a bitmap (one bit per sending channel) of the lanes that
    /// have ever carried a message — the receiver scans only these.
    pub sum_off: usize,
    /// Words of one summary bitmap, and the bytes between two bitmaps (a line multiple).
    pub sum_words: usize,
    /// See `sum_words`.
    pub sum_stride: usize,
    /// Offset of the lane control lines (head and tail of each lane).
    pub lctl_off: usize,
    /// Offset of the lane data (page-aligned).
    pub data_off: usize,
    /// Bytes of the whole segment.
    pub total: usize,
}

fn align(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

impl Layout {
    /// Computes the layout, refusing parameters out of range.
    pub fn new(p: Params) -> Result<Layout> {
        if p.nranks == 0 || p.nranks > MAX_RANKS {
            return Err(Error::InvalidArgument(
                format!("{} ranks; 1..={MAX_RANKS} supported", p.nranks).into(),
            ));
        }
        if p.nports == 0 || p.nports > MAX_PORTS {
            return Err(Error::InvalidArgument(
                format!("{} ports per rank; 1..={MAX_PORTS} supported", p.nports).into(),
            ));
        }
        if !p.lane_bytes.is_power_of_two() || !(MIN_LANE..=MAX_LANE).contains(&p.lane_bytes) {
            return Err(Error::InvalidArgument(
                format!(
                    "lane size {} bytes: must be a power of two in {MIN_LANE}..={MAX_LANE}",
                    p.lane_bytes
                )
                .into(),
            ));
        }
        let chans = p.nranks as usize * p.nports as usize;
        let lanes = chans
            .checked_mul(chans)
            .ok_or_else(|| Error::InvalidArgument("too many channels".into()))?;
        let rank_off = HDR_BYTES;
        let chan_off = rank_off + p.nranks as usize * RANK_REC;
        let sum_words = chans.div_ceil(64);
        let sum_stride = align(sum_words * 8, LINE);
        let sum_off = chan_off + chans * CHAN_REC;
        let lctl_off = align(sum_off + chans * sum_stride, LINE);
        let data_off = align(lctl_off + lanes * LANE_CTL, 4096);
        let total = lanes
            .checked_mul(p.lane_bytes)
            .and_then(|d| d.checked_add(data_off))
            .filter(|&t| t <= 1 << 46)
            .ok_or_else(|| {
                Error::InvalidArgument(
                    "segment would be too large; use fewer ports or smaller lanes".into(),
                )
            })?;
        Ok(Layout {
            params: p,
            chans,
            lanes,
            rank_off,
            chan_off,
            sum_off,
            sum_words,
            sum_stride,
            lctl_off,
            data_off,
            total,
        })
    }

    /// Lane carrying messages from channel `src` to channel `dst` (channel = rank·P + port).
    #[inline(always)]
    pub fn lane(&self, dst: usize, src: usize) -> usize {
        dst * self.chans + src
    }

    /// Largest message a lane can hold.
    pub fn max_message(&self) -> usize {
        max_message(self.params.lane_bytes as u64)
    }
}

/// Largest message a lane of `cap` bytes holds: the record of one that size ends within
/// `cap - TERM` bytes wherever it starts (padding included).
#[inline(always)]
pub const fn max_message(cap: u64) -> usize {
    let packed = cap as usize - REC_HDR - TERM;
    if packed <= ALIGN_ABOVE {
        packed
    } else if packed - PAD_MAX > ALIGN_ABOVE {
        packed - PAD_MAX
    } else {
        ALIGN_ABOVE
    }
}

/// The fewest bytes a message of `len` payload bytes occupies in a lane: its header and its
/// payload padded to 8 bytes ([`record_size`] may add up to [`PAD_MAX`] more).
#[inline(always)]
pub const fn record_len(len: usize) -> usize {
    REC_HDR + ((len + 7) & !7)
}

/// Bytes the record of a `len`-byte message that starts at `pos` occupies: where the next
/// record's header goes is `pos +` this. A payload longer than [`ALIGN_ABOVE`] (copied
/// with `rep movsb`, which on this machine's EPYC ran 25–35 % faster to a
/// cache-line-aligned destination in a one-thread probe: 4 KiB copies into a ring at
/// 13.8 M/s line-aligned vs 10.1 M/s drifting by 8 bytes per copy) is padded so that the
/// next header is the last word of a line and the next payload starts a line: in a stream of large messages every payload is line-aligned, and
/// no line holds the end of one payload and the start of the next (which the consumer
/// would read while the producer writes it). Shorter records stay packed (an 8-byte
/// message: 16 bytes). Both sides compute it from the header's length and the record's
/// position (only its low bits: no overflow).
#[inline(always)]
pub fn record_size(pos: u64, len: usize) -> u64 {
    let packed = record_len(len) as u64;
    if len <= ALIGN_ABOVE {
        packed
    } else {
        // A branch, not a select: the padding costs short messages nothing.
        std::hint::cold_path();
        let next_payload = pos.wrapping_add(packed + REC_HDR as u64);
        packed + (next_payload.wrapping_neg() & (LINE as u64 - 1))
    }
}

/// The longest payload whose record fits from `pos` to `limit` (both multiples of 8):
/// every `n` up to it has `pos + `[`record_size`]`(pos, n) <= limit` (0 when not even a
/// header fits).
#[inline]
pub fn fit(pos: u64, limit: u64) -> usize {
    if limit < pos + REC_HDR as u64 {
        return 0;
    }
    let packed = (limit - pos) as usize - REC_HDR;
    if packed <= ALIGN_ABOVE {
        return packed;
    }
    // A padded record ends at or below `limit` iff its next line starts at or below
    // `limit + REC_HDR`.
    let line = LINE as u64;
    let top = (limit + REC_HDR as u64) / line * line;
    let padded = top.saturating_sub(pos + 2 * REC_HDR as u64) as usize;
    if padded > ALIGN_ABOVE {
        padded
    } else {
        ALIGN_ABOVE
    }
}

/// Bit 63 of a header (the top bit of its tag): set in every header, so that no header is
/// zero (zero is the consumer's "nothing here yet").
pub const REC_PRESENT: u64 = 1 << 63;
/// Largest length a header may carry (lanes are far smaller: [`MAX_LANE`]).
pub const REC_MAX_LEN: u32 = u32::MAX >> 1;

/// Encodes a record header (`len <= REC_MAX_LEN`): the length in the low word, and in the
/// high word a tag of the record's position with the present bit, so that a stale header
/// (one lap earlier: another position) or a word of payload is refused. The header is one
/// atomic 64-bit store, so it is never seen torn; the length is checked against the space
/// the producer owns instead of by a check word (a cheaper test on every message).
#[inline(always)]
pub const fn encode_rec(len: u32, pos: u64) -> u64 {
    len as u64 | tag(pos)
}

/// The high word of the header at `pos` (8-aligned): position bits 3..33 with the present
/// bit on top; the low word is zero.
#[inline(always)]
const fn tag(pos: u64) -> u64 {
    (pos << 29) | REC_PRESENT
}

/// Validates a non-zero record header read at `pos`, where at most `avail` bytes from `pos`
/// can belong to the producer (the record's padding included); returns the payload length
/// and the record's [`record_size`] (computed once, for the bound and the consumer's step).
#[inline(always)]
pub fn decode_rec(word: u64, pos: u64, avail: u64) -> Result<(usize, u64)> {
    let len = word as u32;
    if (word ^ tag(pos)) >> 32 != 0 {
        return Err(bad_tag(word, pos));
    }
    let size = record_size(pos, len as usize);
    if size > avail {
        return Err(bad_len(len, pos, avail));
    }
    Ok((len as usize, size))
}

#[cold]
fn bad_tag(word: u64, pos: u64) -> Error {
    Error::Corrupt(
        format!("message header {word:#018x} at lane offset {pos} does not carry its position tag")
            .into(),
    )
}

#[cold]
fn bad_len(len: u32, pos: u64, avail: u64) -> Error {
    Error::Corrupt(
        format!("message header at lane offset {pos} claims {len} bytes but only {avail} are free")
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(nranks: u32, nports: u32, lane_bytes: usize) -> Params {
        Params {
            nranks,
            nports,
            lane_bytes,
        }
    }

    #[test]
    fn parameter_limits_are_inclusive() {
        for ok in [
            p(1, 1, MIN_LANE),
            p(MAX_RANKS, 1, MIN_LANE),
            p(1, MAX_PORTS, MIN_LANE),
            p(1, 1, MAX_LANE),
        ] {
            assert!(Layout::new(ok).is_ok(), "{ok:?}");
        }
        for bad in [
            p(0, 1, MIN_LANE),
            p(MAX_RANKS + 1, 1, MIN_LANE),
            p(1, 0, MIN_LANE),
            p(1, MAX_PORTS + 1, MIN_LANE),
            p(1, 1, MIN_LANE / 2),
            p(1, 1, MAX_LANE * 2),
            p(1, 1, MIN_LANE + 8),
            p(1, 1, 0),
        ] {
            assert!(
                matches!(Layout::new(bad), Err(Error::InvalidArgument(_))),
                "{bad:?}"
            );
        }
        // In range one by one, too large together.
        let e = Layout::new(p(MAX_RANKS, MAX_PORTS, MAX_LANE)).unwrap_err();
        assert!(e.to_string().contains("too large"), "{e}");
    }

    #[test]
    fn regions_are_ordered_aligned_and_inside_the_segment() {
        for (nr, np, lane) in [
            (1, 1, MIN_LANE),
            (3, 2, 4096),
            (2, 64, MIN_LANE),
            (65, 1, MIN_LANE),
        ] {
            let l = Layout::new(p(nr, np, lane)).unwrap();
            assert_eq!(l.chans, (nr * np) as usize);
            assert_eq!(l.lanes, l.chans * l.chans);
            assert!(HDR_BYTES <= l.rank_off);
            assert!(l.rank_off + nr as usize * RANK_REC <= l.chan_off);
            assert!(l.chan_off + l.chans * CHAN_REC <= l.sum_off);
            assert!(l.sum_words * 64 >= l.chans && l.sum_stride >= l.sum_words * 8);
            assert!(l.sum_off + l.chans * l.sum_stride <= l.lctl_off);
            assert!(l.lctl_off + l.lanes * LANE_CTL <= l.data_off);
            assert_eq!(l.data_off + l.lanes * lane, l.total);
            for off in [l.rank_off, l.chan_off, l.sum_off, l.sum_stride, l.lctl_off] {
                assert_eq!(off % LINE, 0);
            }
            assert_eq!(l.data_off % 4096, 0);
            assert_eq!(l.lane(l.chans - 1, l.chans - 1), l.lanes - 1);
            let pad = if lane - REC_HDR - TERM > ALIGN_ABOVE {
                PAD_MAX
            } else {
                0
            };
            assert_eq!(l.max_message() + REC_HDR + TERM + pad, lane, "{lane}");
        }
    }

    #[test]
    fn large_payloads_start_a_line_and_fit_finds_the_largest_record() {
        for pos in (0..256u64).step_by(8) {
            for len in [0, 1, 8, 2047, 2048, 2049, 2056, 4096, 4100, 16384] {
                let size = record_size(pos, len);
                assert_eq!(size % 8, 0);
                let packed = record_len(len) as u64;
                assert!((packed..=packed + PAD_MAX as u64).contains(&size));
                if len > ALIGN_ABOVE {
                    // The next payload starts a line.
                    assert_eq!(
                        (pos + size + REC_HDR as u64) % LINE as u64,
                        0,
                        "{pos} {len}"
                    );
                } else {
                    assert_eq!(size, packed);
                }
            }
            for free in (0..6000u64).step_by(8) {
                let limit = pos + free;
                let n = fit(pos, limit);
                if free < REC_HDR as u64 {
                    assert_eq!(n, 0);
                    continue;
                }
                assert!(pos + record_size(pos, n) <= limit, "{pos} {free} {n}");
                assert!(pos + record_size(pos, n + 1) > limit, "{pos} {free} {n}");
                // Every shorter payload fits too (partial sends may cut anywhere below).
                for k in [0, n / 2, ALIGN_ABOVE.min(n), n.saturating_sub(1)] {
                    assert!(pos + record_size(pos, k) <= limit);
                }
            }
        }
        for lane in [MIN_LANE, 2048, 4096, 1 << 20] {
            let m = max_message(lane as u64);
            for pos in (0..128u64).step_by(8) {
                assert!(record_size(pos, m) <= (lane - TERM) as u64, "{lane} {pos}");
            }
        }
    }

    #[test]
    fn fields_fit_their_records() {
        // Pinned: skifch-drivers/tests/common/mod.rs mirrors the header and lane-control offsets.
        assert_eq!(
            [
                H_MAGIC,
                H_VERSION,
                H_NRANKS,
                H_NPORTS,
                H_LANE_LOG2,
                H_TOTAL,
                H_LOST,
                H_FIRST_LOST,
                H_EXIT
            ],
            [0, 8, 12, 16, 20, 24, 64, 68, 72]
        );
        assert_eq!((HDR_BYTES, LANE_CTL, L_HEAD, L_TAIL), (256, 128, 0, 64));
        assert_eq!(MAGIC.to_le_bytes(), *b"SKIFCH\0\x01");
    }

    const _: () =
        assert!(H_TOTAL + 8 <= H_LOST && H_FIRST_LOST + 4 <= H_EXIT && H_EXIT + 4 <= HDR_BYTES);
    const _: () = assert!(H_LOST.is_multiple_of(LINE) && RANK_REC == LINE && CHAN_REC == 2 * LINE);
    const _: () = assert!(L_HEAD + 8 <= L_TAIL && L_TAIL / LINE == 1 && L_TAIL + 8 <= LANE_CTL);

    #[test]
    fn default_lanes_keep_big_jobs_addressable() {
        for nr in [1, 2, 16, 64, 256, MAX_RANKS] {
            let lane = Params::default_lane_bytes(nr, Params::DEFAULT_PORTS);
            assert!(lane.is_power_of_two() && (16 << 10..=1 << 20).contains(&lane));
            let l = Layout::new(p(nr, Params::DEFAULT_PORTS, lane)).unwrap();
            assert!(
                lane == 16 << 10 || (l.lanes * lane) as u64 <= 8 << 30,
                "{nr} ranks: {lane}-byte lanes"
            );
            // The fifth port left the lanes of the 4-port default (and its 4 GiB) as they were.
            let four = |nr: u32| {
                let chans = u64::from(nr) * 4;
                let mut lane = 1usize << 20;
                while lane > 16 << 10 && chans * chans * lane as u64 > 4 << 30 {
                    lane /= 2;
                }
                lane
            };
            assert_eq!(lane, four(nr), "{nr} ranks");
        }
        assert_eq!(Params::default_lane_bytes(2, 5), 1 << 20);
    }

    #[test]
    fn records_are_padded_to_eight_bytes() {
        for (len, rec) in [(0, 8), (1, 16), (8, 16), (9, 24), (16, 24), (1016, 1024)] {
            assert_eq!(record_len(len), rec, "len {len}");
        }
        // A zeroed (never written) header is never a valid record, and no header is zero,
        // not even a zero-length one.
        for pos in [0u64, 8, 1 << 20, 0xA5A5_FFFF * 8] {
            assert!(decode_rec(0, pos, u64::MAX).is_err());
            assert_ne!(encode_rec(0, pos), 0);
            assert_eq!(decode_rec(encode_rec(0, pos), pos, 8).unwrap(), (0, 8));
        }
    }
}
