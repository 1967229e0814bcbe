//! Property tests of the ring transport:
//! (a) any few-byte mutation of a segment header is either refused by `Fabric::attach` or
//!     describes a layout that fits the mapping — never a panic;
//! (b) random send / receive / hold / complete-in-any-order sequences on an in-process job
//!     with 1 KiB lanes, checked against a model of the lanes;
//! (c) the record header encoding round-trips and rejects other positions and lengths;
//! (d) random writes into a live job's lane indices, record headers and summary bitmap
//!     never break memory safety, and a receive side that reported corruption keeps doing so.
//! Plus one two-thread stream through a small lane, for Miri's data-race detector.
//!
//! Under Miri the case counts shrink (`cargo +nightly miri test -p skifch --test ring_props`).

mod common;

use std::collections::VecDeque;
use std::io::IoSlice;

use common::*;
use proptest::prelude::*;
use skifch::{Channel, Error, Message};
use skifch_drivers::inproc as local;
use skifch_drivers::shm::layout::{
    decode_rec, encode_rec, fit, max_message, record_len, record_size, ALIGN_ABOVE, MAX_LANE,
    PAD_MAX, REC_HDR, REC_MAX_LEN, REC_PRESENT, TERM,
};
use skifch_drivers::shm::{Fabric, HeapRegion, Layout, Params, Region, RingPort};

fn config(cases: u32) -> ProptestConfig {
    if cfg!(miri) {
        ProptestConfig {
            cases: 4,
            // Miri isolates the file system: no regression file.
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    } else {
        ProptestConfig::with_cases(cases)
    }
}

// ---- (a) header mutations ----------------------------------------------------------------

fn small_params() -> impl Strategy<Value = Params> {
    (
        1u32..=3,
        1u32..=3,
        prop_oneof![Just(1usize << 10), Just(4 << 10)],
    )
        .prop_map(|(nranks, nports, lane_bytes)| Params {
            nranks,
            nports,
            lane_bytes,
        })
}

/// (offset, new byte): mostly in the fields `attach` reads, some anywhere in the header.
fn mutation() -> impl Strategy<Value = (usize, u8)> {
    (
        prop_oneof![3 => 0..H_USED, 1 => 0..H_BYTES],
        prop_oneof![Just(0u8), Just(0xff), Just(1), any::<u8>()],
    )
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn header_mutations_are_refused_or_harmless(
        p in small_params(),
        muts in prop::collection::vec(mutation(), 1..4),
        cut in prop_oneof![3 => Just(None), 1 => (0usize..=1).prop_map(Some)],
        cut_pages in 0usize..4,
        cut_bytes in 0usize..4096,
    ) {
        let lay = Layout::new(p).unwrap();
        let mem = SharedRegion::new(lay.total);
        drop(Fabric::create(mem.clone(), p).unwrap());
        let before: Vec<u8> = (0..H_USED).map(|i| peek_u8(&mem, i)).collect();
        for &(off, v) in &muts {
            poke_u8(&mem, off, v);
        }
        let changed = |r: std::ops::Range<usize>| r.into_iter().any(|i| peek_u8(&mem, i) != before[i]);
        let len = match cut {
            None => lay.total,
            Some(0) => cut_bytes,                                  // maybe shorter than a header
            Some(_) => lay.total.saturating_sub(cut_pages * 4096 + cut_bytes % 8),
        };
        match Fabric::attach(mem.truncated(len)) {
            Ok(f) => {
                let l = *f.layout();
                // Whatever was accepted is a valid layout that fits the mapping...
                prop_assert_eq!(l, Layout::new(l.params).unwrap());
                prop_assert!(l.total <= len);
                prop_assert!(!changed(H_MAGIC..H_VERSION + 4), "bad magic/version accepted");
                // ...and differs from the original only if the parameter fields changed
                // (consistently: e.g. ranks and ports swapped give the same size).
                if l.params != p {
                    prop_assert!(changed(H_NRANKS..H_TOTAL));
                }
            }
            Err(Error::Corrupt(_)) => {
                // Refused: then something it reads must have changed or the mapping is short.
                prop_assert!(changed(0..H_USED) || len < lay.total);
            }
            Err(e) => prop_assert!(false, "attach: {e:?}, expected Corrupt"),
        }
    }
}

// ---- (b) model-based send / receive -------------------------------------------------------

/// The small lane of most tests: every record packed. [`BIG_LANE`]: also records padded to
/// put large payloads on a line (`skifch_drivers::shm::layout::record_size`).
const LANE: usize = 1 << 10;
const BIG_LANE: usize = 16 << 10;
const CAP: u64 = LANE as u64;
const MAX_MSG: usize = LANE - REC_HDR - TERM;

#[derive(Clone, Debug)]
enum Op {
    /// Channel `s` sends `size` bytes to channel `d`: all or nothing, or a prefix; `word`
    /// (with `whole`, from 8 bytes): first as a word and the rest (`Channel::try_send_word`),
    /// whole if that declines — the outcome of a whole send either way.
    Send {
        s: usize,
        d: usize,
        size: usize,
        whole: bool,
        word: bool,
    },
    /// Channel `d` polls once; a message received is held or completed at once.
    Recv { d: usize, hold: bool },
    /// Channel `d` completes its `k`-th held message (modulo how many it holds).
    Complete { d: usize, k: usize },
}

/// Operations on a job with lanes of `lane` bytes (sizes scaled to it).
fn op(lane: usize) -> impl Strategy<Value = Op> {
    let max = max_message(lane as u64);
    let size = if lane <= LANE {
        prop_oneof![
            2 => Just(0usize),
            4 => 1usize..=24,
            3 => 25usize..=300,
            1 => 900usize..=1100, // around and beyond the largest message (1008)
        ]
        .boxed()
    } else {
        prop_oneof![
            2 => Just(0usize),
            2 => 1usize..=300,
            3 => ALIGN_ABOVE - 64..=ALIGN_ABOVE + 64, // packed and padded records
            3 => ALIGN_ABOVE + 65..=3 * lane / 8,
            1 => max - 100..=max + 100, // around and beyond the largest message
        ]
        .boxed()
    };
    prop_oneof![
        4 => (0usize..4, 0usize..4, size, 0u8..3).prop_map(|(s, d, size, kind)| Op::Send {
            s,
            d,
            size,
            whole: kind > 0,
            word: kind == 2
        }),
        3 => (0usize..4, any::<bool>()).prop_map(|(d, hold)| Op::Recv { d, hold }),
        2 => (0usize..4, any::<usize>()).prop_map(|(d, k)| Op::Complete { d, k }),
    ]
}

/// Payload of message `id`: distinct per message, so loss, duplication and reordering show.
fn payload(id: u64, size: usize) -> Vec<u8> {
    (0..size)
        .map(|i| (id.wrapping_mul(0x9E37_79B9) as usize ^ i.wrapping_mul(31) ^ (i >> 8)) as u8)
        .collect()
}

/// The model of one lane (sender `s` → receiver `d`).
struct LaneModel {
    /// The lane's size, and its producer position (the sum of the record sizes sent).
    cap: u64,
    head: u64,
    /// Sent, not yet received: (id, bytes).
    pending: VecDeque<(u64, Vec<u8>)>,
    /// Records in the ring not yet reclaimed, in ring order: (id, record bytes, completed).
    /// Memory is reclaimed in order, up to the oldest message still held.
    ring: VecDeque<(u64, u64, bool)>,
}

impl LaneModel {
    fn new(cap: u64) -> Self {
        LaneModel {
            cap,
            head: 0,
            pending: VecDeque::new(),
            ring: VecDeque::new(),
        }
    }
    fn unfreed(&self) -> u64 {
        self.ring.iter().map(|r| r.1).sum()
    }
    /// The least free space the sender may see: the truth (less the terminator word the
    /// producer keeps free) minus the tail's lag. The receiver publishes its tail once
    /// `lane_bytes/16` bytes are freed (`skifch_drivers::shm::lane` docs), or when it finds
    /// the lane empty: the sender's view lags the truth by less than that.
    fn min_free(&self) -> u64 {
        (self.cap - TERM as u64 - self.unfreed()).saturating_sub(self.cap / 16 - 8)
    }
    /// Bytes the record of a `k`-byte message sent now occupies.
    fn record(&self, k: usize) -> u64 {
        record_size(self.head, k)
    }
    fn complete(&mut self, id: u64) {
        let r = self
            .ring
            .iter_mut()
            .find(|r| r.0 == id)
            .expect("completed twice");
        assert!(!r.2, "completed twice");
        r.2 = true;
        while self.ring.front().is_some_and(|r| r.2) {
            self.ring.pop_front();
        }
    }
}

type Port = RingPort<HeapRegion>;

struct Held<'c> {
    msg: Message<'c, Port>,
    id: u64,
    bytes: Vec<u8>,
    src: usize,
}

fn check_held(held: &[Vec<Held<'_>>]) -> Result<(), TestCaseError> {
    for (d, hs) in held.iter().enumerate() {
        for h in hs {
            prop_assert_eq!(h.msg.len(), h.bytes.len());
            prop_assert!(
                h.msg.to_vec() == h.bytes,
                "held message {} at {} changed",
                h.id,
                d
            );
        }
    }
    Ok(())
}

/// Polls channel `d` once; a message received must be the oldest unreceived one of its lane.
fn take<'c>(
    chans: &'c [Channel<Port>],
    lanes: &mut [LaneModel],
    d: usize,
) -> Result<Option<Held<'c>>, TestCaseError> {
    let n = chans.len();
    match chans[d].try_recv() {
        Ok(msg) => {
            let s = msg.src().rank() as usize * 2 + msg.src().port() as usize;
            let Some((id, bytes)) = lanes[s * n + d].pending.pop_front() else {
                return Err(TestCaseError::fail(format!(
                    "{d} got an unsent message from {s}"
                )));
            };
            prop_assert!(msg.to_vec() == bytes, "message {} {}->{} differs", id, s, d);
            prop_assert!(msg.segments().len() <= 2);
            prop_assert_eq!(msg.is_empty(), bytes.is_empty());
            Ok(Some(Held {
                msg,
                id,
                bytes,
                src: s,
            }))
        }
        Err(Error::WouldBlock) => {
            // One thread: everything sent is visible to the next poll.
            for s in 0..n {
                prop_assert!(lanes[s * n + d].pending.is_empty(), "{}->{} missed", s, d);
            }
            Ok(None)
        }
        Err(e) => Err(TestCaseError::fail(format!("try_recv: {e:?}"))),
    }
}

/// Runs `ops` on a job of `nranks` ranks × 2 ports (channel c = rank·2 + port) and lanes
/// of `lane_bytes`, all in this thread, checking each result against the model.
fn run_model(nranks: u32, lane_bytes: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let params = Params {
        nranks,
        nports: 2,
        lane_bytes,
    };
    let (cap, max_msg) = (lane_bytes as u64, max_message(lane_bytes as u64));
    let jobs = local::job(params).unwrap();
    let chans: Vec<Channel<Port>> = jobs
        .iter()
        .flat_map(|j| (0..2).map(move |p| j.open(p).unwrap()))
        .collect();
    let n = chans.len();
    let mut lanes: Vec<LaneModel> = (0..n * n).map(|_| LaneModel::new(cap)).collect();
    let lane = |s: usize, d: usize| s * n + d;
    // Declared after `chans`: dropped first.
    let mut held: Vec<Vec<Held<'_>>> = (0..n).map(|_| Vec::new()).collect();
    let mut next_id = 0u64;

    for op in ops {
        match *op {
            Op::Send {
                s,
                d,
                size,
                whole,
                word,
            } => {
                let (s, d) = (s % n, d % n);
                let id = next_id;
                next_id += 1;
                let data = payload(id, size);
                let to = chans[d].addr();
                let lm = &mut lanes[lane(s, d)];
                let want = size.min(max_msg);
                let r = if word && size >= 8 {
                    let w = u64::from_le_bytes(data[..8].try_into().unwrap());
                    if chans[s].try_send_word(to, w, &data[8..]) {
                        Ok(size)
                    } else {
                        chans[s]
                            .send_whole(to, &[IoSlice::new(&data)])
                            .map(|()| size)
                    }
                } else if whole {
                    chans[s]
                        .send_whole(to, &[IoSlice::new(&data)])
                        .map(|()| size)
                } else {
                    // Two parts: the copy gathers.
                    let (x, y) = data.split_at(size / 3);
                    chans[s].send(to, &[IoSlice::new(x), IoSlice::new(y)])
                };
                match r {
                    Ok(k) => {
                        prop_assert!(!(whole && size > max_msg), "whole {} accepted", size);
                        prop_assert!(k <= want);
                        if k < want {
                            // Partial: never a tiny fragment, and only when short of room.
                            prop_assert!(k >= want.clamp(1, lane_bytes / 8), "fragment of {}", k);
                            prop_assert!(lm.record(want) > lm.min_free());
                        }
                        let rec = lm.record(k);
                        lm.ring.push_back((id, rec, false));
                        lm.head += rec;
                        prop_assert!(lm.unfreed() <= cap - TERM as u64, "lane overfilled");
                        lm.pending.push_back((id, data[..k].to_vec()));
                    }
                    Err(Error::MessageTooLarge { len, max }) => {
                        prop_assert!(whole && size > max_msg);
                        prop_assert_eq!((len, max as usize), (size as u64, max_msg));
                    }
                    Err(Error::WouldBlock) => {
                        // Back-pressure only when the lane may really be full.
                        let free = lm.min_free();
                        if whole {
                            prop_assert!(lm.record(size) > free, "{} fits {}", size, free);
                        } else {
                            let room = fit(lm.head, lm.head + free);
                            prop_assert!(
                                room < want.clamp(1, lane_bytes / 8),
                                "{}: room {}",
                                size,
                                room
                            );
                        }
                    }
                    Err(e) => prop_assert!(false, "send: {:?}", e),
                }
            }
            Op::Recv { d, hold } => {
                let d = d % n;
                if let Some(h) = take(&chans, &mut lanes, d)? {
                    if hold {
                        held[d].push(h);
                    } else {
                        drop(h.msg);
                        lanes[lane(h.src, d)].complete(h.id);
                    }
                }
            }
            Op::Complete { d, k } => {
                let d = d % n;
                if !held[d].is_empty() {
                    let k = k % held[d].len();
                    let h = held[d].remove(k);
                    prop_assert!(h.msg.to_vec() == h.bytes);
                    drop(h.msg);
                    lanes[lane(h.src, d)].complete(h.id);
                }
            }
        }
        check_held(&held)?;
    }

    // Complete everything, drain, poll once more: every tail is published, so a largest
    // message now fits every lane at once, whatever the lazy publication held back before.
    for (d, hs) in held.iter_mut().enumerate() {
        for h in hs.drain(..) {
            drop(h.msg);
            lanes[lane(h.src, d)].complete(h.id);
        }
    }
    for d in 0..n {
        while let Some(h) = take(&chans, &mut lanes, d)? {
            drop(h.msg);
            lanes[lane(h.src, d)].complete(h.id);
        }
        prop_assert!(take(&chans, &mut lanes, d)?.is_none());
    }
    prop_assert!(lanes
        .iter()
        .all(|l| l.pending.is_empty() && l.ring.is_empty()));
    for s in 0..n {
        for d in 0..n {
            let data = payload(next_id, max_msg);
            chans[s]
                .send_whole(chans[d].addr(), &[IoSlice::new(&data)])
                .map_err(|e| TestCaseError::fail(format!("{s}->{d} after draining: {e}")))?;
            lanes[lane(s, d)].pending.push_back((next_id, data));
            next_id += 1;
        }
    }
    for d in 0..n {
        for _ in 0..n {
            let h = take(&chans, &mut lanes, d)?
                .ok_or_else(|| TestCaseError::fail("a largest message was not delivered"))?;
            prop_assert_eq!(h.msg.len(), max_msg);
        }
        prop_assert!(take(&chans, &mut lanes, d)?.is_none());
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(192))]

    #[test]
    fn lanes_follow_the_model(
        nranks in 1u32..=2,
        ops in prop::collection::vec(op(LANE), 1..if cfg!(miri) { 40 } else { 160 }),
    ) {
        run_model(nranks, LANE, &ops)?;
    }

    /// Lanes large enough for padded records (payloads above `ALIGN_ABOVE` start a line).
    #[test]
    fn big_lanes_follow_the_model(
        nranks in 1u32..=2,
        ops in prop::collection::vec(op(BIG_LANE), 1..if cfg!(miri) { 20 } else { 120 }),
    ) {
        run_model(nranks, BIG_LANE, &ops)?;
    }
}

/// The same lane protocol between two threads (ranks), where Miri's data-race detector and
/// weak-memory emulation look at it: wrap-around, back-pressure, lazy tail publication,
/// messages held and completed out of order, blocking receive.
#[test]
fn two_threads_stream_through_a_small_lane() {
    let n: u64 = if cfg!(miri) { 100 } else { 20_000 };
    // Two held messages of at most 208 bytes leave room for the next one in a 1 KiB lane
    // even with the tail's lag, so the receiver never waits on a sender that waits on it.
    let size = |i: u64| (i * 37 % 201) as usize;
    let p = Params {
        nranks: 2,
        nports: 1,
        lane_bytes: LANE,
    };
    let got = local::run_with(p, move |job| {
        let ch = job.open(0)?;
        if job.rank() == 0 {
            for i in 0..n {
                let data = payload(i, size(i));
                while let Err(e) = ch.send_whole(job.addr(1, 0), &[IoSlice::new(&data)]) {
                    assert!(e.is_would_block(), "send: {e}");
                    std::thread::yield_now();
                }
            }
            return Ok(0);
        }
        let mut held = VecDeque::new();
        for i in 0..n {
            let m = ch.recv()?;
            assert_eq!(m.to_vec(), payload(i, size(i)), "message {i}");
            held.push_back((i, m));
            if held.len() == 2 {
                // Complete the newer first every other time.
                let (j, m) = if i % 2 == 0 {
                    held.pop_back()
                } else {
                    held.pop_front()
                }
                .unwrap();
                assert_eq!(m.to_vec(), payload(j, size(j)), "held message {j} changed");
            }
        }
        drop(held);
        assert!(matches!(ch.try_recv(), Err(Error::WouldBlock)));
        Ok(n)
    })
    .unwrap();
    assert_eq!(got, [0, n]);
}

// ---- (c) record headers ---------------------------------------------------------------------

/// Positions are 8-aligned byte counts.
fn pos() -> impl Strategy<Value = u64> {
    prop_oneof![any::<u64>(), 0u64..(4 * MAX_LANE as u64)].prop_map(|p| p & !7)
}

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn record_header_round_trips(len in 0..=REC_MAX_LEN, pos in pos(), extra in 0u64..64) {
        let packed = record_len(len as usize) as u64;
        prop_assert!(packed >= REC_HDR as u64 + len as u64 && packed < REC_HDR as u64 + len as u64 + 8);
        let need = record_size(pos, len as usize);
        prop_assert_eq!(need % 8, 0);
        prop_assert!(need >= packed && need <= packed + PAD_MAX as u64);
        let w = encode_rec(len, pos);
        // Zero is the consumer's "nothing yet": no header may ever be zero.
        prop_assert_ne!(w, 0);
        prop_assert_eq!(decode_rec(w, pos, need + extra * 8).unwrap(), (len as usize, need));
        // One byte short of the published range: refused.
        prop_assert!(matches!(decode_rec(w, pos, need - 1), Err(Error::Corrupt(_))));
    }

    #[test]
    fn record_header_is_tied_to_its_position(len in 0..=REC_MAX_LEN, pos in pos(), other in pos()) {
        let r = decode_rec(encode_rec(len, pos), other, u64::MAX);
        // The tag holds bits 3..33 of the position: a header read at a position that
        // differs there (any other position within 16 GiB, e.g. one lap earlier) is refused.
        if ((pos ^ other) >> 3) & (REC_MAX_LEN as u64) != 0 {
            prop_assert!(matches!(r, Err(Error::Corrupt(_))));
        } else {
            prop_assert_eq!(r.unwrap().0, len as usize);
        }
    }

    #[test]
    fn record_header_with_another_tag_is_refused(len in 0..=REC_MAX_LEN, flip in 1..=u32::MAX, pos in pos()) {
        // Any change to the high word (a payload word, a stale or forged header) is refused.
        let forged = encode_rec(len, pos) ^ ((flip as u64) << 32);
        prop_assert!(matches!(decode_rec(forged, pos, u64::MAX), Err(Error::Corrupt(_))));
        prop_assert!(forged & REC_PRESENT == 0 || flip & (1 << 31) == 0);
    }
}

// ---- (d) corruption of a live job --------------------------------------------------------

/// Where a hostile write lands, and what it writes (see `poke`).
#[derive(Clone, Debug)]
enum Poke {
    Head {
        s: usize,
        d: usize,
        how: u8,
        x: u64,
    },
    Tail {
        s: usize,
        d: usize,
        how: u8,
        x: u64,
    },
    Summary {
        d: usize,
        bit: u32,
    },
    Record {
        s: usize,
        d: usize,
        back: u64,
        how: u8,
        x: u64,
    },
}

fn poke_op() -> impl Strategy<Value = Poke> {
    let lane = (0usize..4, 0usize..4);
    prop_oneof![
        (lane.clone(), any::<u8>(), any::<u64>()).prop_map(|((s, d), how, x)| Poke::Head {
            s,
            d,
            how,
            x
        }),
        (lane.clone(), any::<u8>(), any::<u64>()).prop_map(|((s, d), how, x)| Poke::Tail {
            s,
            d,
            how,
            x
        }),
        (0usize..4, 0u32..64).prop_map(|(d, bit)| Poke::Summary { d, bit }),
        (lane, 0u64..16, any::<u8>(), any::<u64>())
            .prop_map(|((s, d), back, how, x)| Poke::Record { s, d, back, how, x }),
    ]
}

/// A plausible-looking bad index near `cur`.
fn bad_index(cur: u64, how: u8, x: u64) -> u64 {
    match how % 7 {
        0 => cur.wrapping_add(8),
        1 => cur.wrapping_sub(8),
        2 => cur.wrapping_add(4),
        3 => cur.wrapping_add(CAP),
        4 => cur.wrapping_add(CAP + 8),
        5 => cur.wrapping_sub(CAP),
        _ => x,
    }
}

/// `heads[s * n + d]`: the producer's position in lane s→d (private while its port is open,
/// so the test keeps its own count).
fn poke(reg: &HeapRegion, lay: &Layout, n: usize, heads: &[u64], p: &Poke) {
    match *p {
        Poke::Head { s, d, how, x } => {
            let off = head_off(lay, d % n, s % n);
            poke_u64(reg, off, bad_index(peek_u64(reg, off), how, x));
        }
        Poke::Tail { s, d, how, x } => {
            let off = tail_off(lay, d % n, s % n);
            poke_u64(reg, off, bad_index(peek_u64(reg, off), how, x));
        }
        Poke::Summary { d, bit } => {
            let off = summary_off(lay, d % n, 0);
            poke_u64(reg, off, peek_u64(reg, off) ^ 1 << bit);
        }
        Poke::Record { s, d, back, how, x } => {
            // A word at or before the head (the next header, zero until written): a record
            // header, or payload that may be read as one.
            let head = heads[(s % n) * n + d % n];
            let pos = head.saturating_sub(8 * back) & !7;
            let off = data_off(lay, d % n, s % n, pos);
            let v = match how % 3 {
                0 => x,
                1 => encode_rec((x % 2048) as u32, pos), // carries its position tag
                _ => peek_u64(reg, off) ^ 1 << (x % 64),
            };
            poke_u64(reg, off, v);
        }
    }
}

#[derive(Clone, Debug)]
enum COp {
    Op(Op),
    Poke(Poke),
}

proptest! {
    #![proptest_config(config(128))]

    /// Whatever a faulty process writes into lane indices, record headers or the summary,
    /// nothing panics, every error is one the contract allows, a received message lies
    /// inside its lane (Miri checks every access too), and a receive side that reported
    /// corruption keeps reporting it.
    #[test]
    fn corruption_never_breaks_memory_safety(
        nranks in 1u32..=2,
        ops in prop::collection::vec(
            prop_oneof![4 => op(LANE).prop_map(COp::Op), 1 => poke_op().prop_map(COp::Poke)],
            1..if cfg!(miri) { 30 } else { 100 },
        ),
    ) {
        let params = Params { nranks, nports: 2, lane_bytes: LANE };
        let jobs = local::job(params).unwrap();
        let fab = jobs[0].driver().fabric().clone();
        let (lay, reg) = (*fab.layout(), fab.region());
        let chans: Vec<Channel<Port>> = jobs
            .iter()
            .flat_map(|j| (0..2).map(move |p| j.open(p).unwrap()))
            .collect();
        let n = chans.len();
        let mut held: Vec<Vec<Message<'_, Port>>> = (0..n).map(|_| Vec::new()).collect();
        let mut broken = vec![false; n];
        let base = reg.as_ptr() as usize;
        let mut heads = vec![0u64; n * n];
        for (i, cop) in ops.iter().enumerate() {
            match cop {
                COp::Poke(p) => poke(reg, &lay, n, &heads, p),
                COp::Op(Op::Send {
                    s,
                    d,
                    size,
                    whole,
                    word,
                }) => {
                    let (s, d) = (s % n, d % n);
                    let data = payload(i as u64, *size);
                    let iov = [IoSlice::new(&data)];
                    let w = |x: &[u8]| u64::from_le_bytes(x[..8].try_into().unwrap());
                    let r = if *word
                        && *size >= 8
                        && chans[s].try_send_word(chans[d].addr(), w(&data), &data[8..])
                    {
                        Ok(*size)
                    } else if *whole {
                        chans[s].send_whole(chans[d].addr(), &iov).map(|()| *size)
                    } else {
                        chans[s].send(chans[d].addr(), &iov)
                    };
                    match r {
                        Ok(k) => {
                            prop_assert!(k <= MAX_MSG && k <= *size);
                            let h = &mut heads[s * n + d];
                            *h += record_size(*h, k);
                        }
                        Err(Error::WouldBlock | Error::Corrupt(_)) => {}
                        Err(Error::MessageTooLarge { .. }) => prop_assert!(*whole && *size > MAX_MSG),
                        Err(e) => prop_assert!(false, "send: {:?}", e),
                    }
                }
                COp::Op(Op::Recv { d, hold }) => {
                    let d = d % n;
                    match chans[d].try_recv() {
                        Ok(m) => {
                            prop_assert!(!broken[d], "a port that reported corruption delivered");
                            prop_assert!(m.len() <= MAX_MSG);
                            let s = m.src().rank() as usize * 2 + m.src().port() as usize;
                            prop_assert!(s < n);
                            let lane0 = base + lay.data_off + lay.lane(d, s) * LANE;
                            let mut total = 0;
                            for seg in m.segments() {
                                let a = seg.as_ptr() as usize;
                                prop_assert!(
                                    seg.is_empty() || (a >= lane0 && a + seg.len() <= lane0 + LANE),
                                    "segment outside lane {}->{}", s, d
                                );
                                total += seg.len();
                            }
                            prop_assert_eq!(total, m.len());
                            if *hold {
                                held[d].push(m);
                            }
                        }
                        Err(Error::Corrupt(_)) => broken[d] = true,
                        Err(Error::WouldBlock) => prop_assert!(!broken[d], "corruption forgotten"),
                        Err(e) => prop_assert!(false, "try_recv: {:?}", e),
                    }
                }
                COp::Op(Op::Complete { d, k }) => {
                    let d = d % n;
                    if !held[d].is_empty() {
                        let k = k % held[d].len();
                        drop(held[d].remove(k));
                    }
                }
            }
        }
    }
}
