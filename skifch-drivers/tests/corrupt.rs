//! The ring transport facing a corrupt segment (driver obligation 7, "untrusted memory"):
//! a bad header is refused at attach time, and a bad lane index, record header or summary
//! bit in a live job gives `Error::Corrupt` on the port that meets it — again on every later
//! call, without a panic, an out-of-bounds access (Miri checks that) or a hang — while the
//! other ports keep working. Corruption is injected by writing the shared memory directly,
//! as a faulty process that maps the segment could.

mod common;

use std::io::IoSlice;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use skifch::{Channel, Error, NetAddr};
use skifch_drivers::inproc as local;
use skifch_drivers::shm::layout::{encode_rec, record_len};
use skifch_drivers::shm::{Fabric, HeapRegion, Layout, Params, RingPort, MAX_PORTS, MAX_RANKS};

const LANE: usize = 1 << 10;

fn params(nranks: u32, nports: u32) -> Params {
    Params {
        nranks,
        nports,
        lane_bytes: LANE,
    }
}

/// A formatted segment for `p`, and its memory.
fn formatted(p: Params) -> SharedRegion {
    let lay = Layout::new(p).unwrap();
    let mem = SharedRegion::new(lay.total);
    drop(Fabric::create(mem.clone(), p).unwrap());
    mem
}

/// `Fabric::attach` must fail with `Corrupt` and a message containing `what`.
fn assert_attach_corrupt(mem: SharedRegion, what: &str) {
    match Fabric::attach(mem) {
        Err(Error::Corrupt(m)) => assert!(
            m.contains(what),
            "attach error {m:?} does not mention {what:?}"
        ),
        Err(e) => panic!("attach: expected Corrupt ({what}), got {e:?}"),
        Ok(f) => panic!(
            "attach accepted a corrupt segment ({what}): {:?}",
            f.layout().params
        ),
    }
}

fn is_corrupt(r: &skifch::Result<impl Sized>, what: &str) -> bool {
    matches!(r, Err(Error::Corrupt(m)) if m.contains(what))
}

#[test]
fn attach_accepts_a_formatted_segment() {
    // The baseline for every test below: the untouched segment attaches, same parameters.
    for p in [params(1, 1), params(3, 2), params(2, MAX_PORTS)] {
        let mem = formatted(p);
        let f = Fabric::attach(mem.clone()).unwrap();
        assert_eq!(f.layout(), &Layout::new(p).unwrap());
        // A mapping larger than the segment is fine (page rounding).
        let big = SharedRegion::new(f.layout().total + 8192);
        drop(Fabric::create(big.clone(), p).unwrap());
        assert_eq!(Fabric::attach(big).unwrap().layout().params, p);
    }
}

#[test]
fn attach_refuses_a_bad_magic() {
    let mem = formatted(params(2, 2));
    poke_u64(&mem, H_MAGIC, u64::from_le_bytes(*b"SKIFCH\0\x02"));
    assert_attach_corrupt(mem, "magic");
    // Never formatted: all zero.
    assert_attach_corrupt(SharedRegion::new(1 << 16), "magic");
}

#[test]
fn attach_refuses_another_layout_version() {
    let mem = formatted(params(2, 2));
    poke_u32(&mem, H_VERSION, skifch_drivers::shm::layout::VERSION + 1);
    assert_attach_corrupt(
        mem,
        &format!("version {}", skifch_drivers::shm::layout::VERSION + 1),
    );
}

#[test]
fn attach_refuses_parameters_out_of_range() {
    let cases: [(usize, u32, &str); 6] = [
        (H_NRANKS, 0, "0 ranks"),
        (H_NRANKS, MAX_RANKS + 1, "1025 ranks"),
        (H_NPORTS, 0, "0 ports"),
        (H_NPORTS, MAX_PORTS + 1, "65 ports"),
        // The header stores the lane size as a power of two (log2), so a non-power of two
        // cannot be expressed there; out-of-range exponents can.
        (H_LANE_LOG2, 9, "lane size 512 bytes"),
        (H_LANE_LOG2, 29, "lane size 536870912 bytes"),
    ];
    for (off, v, what) in cases {
        let mem = formatted(params(2, 2));
        poke_u32(&mem, off, v);
        assert_attach_corrupt(mem.clone(), what);
        assert_attach_corrupt(mem, "segment header parameters");
    }
    for log2 in [64, 200, u32::MAX] {
        let mem = formatted(params(2, 2));
        poke_u32(&mem, H_LANE_LOG2, log2);
        assert_attach_corrupt(mem, &format!("lane size 2^{log2} out of range"));
    }
}

#[test]
fn attach_refuses_a_size_that_disagrees() {
    let p = params(2, 2);
    let total = Layout::new(p).unwrap().total as u64;
    for bad in [0, total - 4096, total + 4096, u64::MAX] {
        let mem = formatted(p);
        poke_u64(&mem, H_TOTAL, bad);
        assert_attach_corrupt(mem, &format!("says {bad} bytes"));
    }
    // Parameters that need more than the mapping, with a matching size field: a segment
    // made for 1 rank claiming 3.
    let mem = formatted(params(1, 2));
    let p3 = params(3, 2);
    poke_u32(&mem, H_NRANKS, 3);
    poke_u64(&mem, H_TOTAL, Layout::new(p3).unwrap().total as u64);
    assert_attach_corrupt(mem, "the mapping has");
}

#[test]
fn attach_refuses_a_truncated_mapping() {
    let p = params(2, 2);
    let mem = formatted(p);
    let total = Layout::new(p).unwrap().total;
    for len in [total - 8, total - 4096, 4096] {
        assert_attach_corrupt(mem.truncated(len), &format!("the mapping has {len}"));
    }
    for len in [0, 8, H_BYTES - 1] {
        assert_attach_corrupt(mem.truncated(len), "too small for a header");
    }
    assert!(Fabric::attach(mem.truncated(total)).is_ok());
}

#[test]
fn create_refuses_bad_parameters_and_small_regions() {
    let bad = [
        params(0, 1),
        params(1, 0),
        params(MAX_RANKS + 1, 1),
        params(1, MAX_PORTS + 1),
        Params {
            lane_bytes: 3000,
            ..params(1, 1)
        },
        Params {
            lane_bytes: 512,
            ..params(1, 1)
        },
    ];
    for p in bad {
        let r = Fabric::create(SharedRegion::new(1 << 16), p);
        assert!(
            matches!(r, Err(Error::InvalidArgument(_))),
            "create({p:?}): {:?}",
            r.err()
        );
    }
    let total = Layout::new(params(2, 2)).unwrap().total;
    let r = Fabric::create(
        SharedRegion::new(total).truncated(total - 4096),
        params(2, 2),
    );
    assert!(matches!(r, Err(Error::InvalidArgument(m)) if m.contains("smaller than")));
}

// ---- live jobs -------------------------------------------------------------------------

type Ch = Channel<RingPort<HeapRegion>>;

/// A 1-rank job with ports 0 (A, a sender), 1 (B, the victim) and 2 (C, a bystander).
struct Live {
    fab: Arc<Fabric<HeapRegion>>,
    a: Ch,
    b: Ch,
    c: Ch,
}

impl Live {
    fn new() -> Live {
        let job = local::job(params(1, 3)).unwrap().pop().unwrap();
        let fab = job.driver().fabric().clone();
        let (a, b, c) = (
            job.open(0).unwrap(),
            job.open(1).unwrap(),
            job.open(2).unwrap(),
        );
        Live { fab, a, b, c }
    }
    fn lay(&self) -> &Layout {
        self.fab.layout()
    }
    fn region(&self) -> &HeapRegion {
        self.fab.region()
    }
    /// Offsets of the lane from port `src` to port `dst`.
    fn head(&self, dst: u32, src: u32) -> usize {
        head_off(self.lay(), dst as usize, src as usize)
    }
    fn tail(&self, dst: u32, src: u32) -> usize {
        tail_off(self.lay(), dst as usize, src as usize)
    }
    fn record(&self, dst: u32, src: u32, pos: u64) -> usize {
        data_off(self.lay(), dst as usize, src as usize, pos)
    }
    /// After A's send side met corruption, A refuses every further send (the port is
    /// broken, not only the lane); the bystander C still works.
    fn bystander_still_works_and_a_refuses(&self) {
        let r = self.a.send(self.c.addr(), &[IoSlice::new(b"to C from A")]);
        assert!(
            matches!(r, Err(Error::Corrupt(_))),
            "a broken port sent: {r:?}"
        );
        self.c
            .send(self.c.addr(), &[IoSlice::new(b"to C from C")])
            .unwrap();
        assert_eq!(self.c.try_recv().unwrap().to_vec(), b"to C from C");
        assert!(matches!(self.c.try_recv(), Err(Error::WouldBlock)));
    }

    /// The bystander port still works both ways, and so does the sender A towards it.
    fn others_still_work(&self) {
        let n = self
            .a
            .send(self.c.addr(), &[IoSlice::new(b"to C from A")])
            .unwrap();
        assert_eq!(n, 11);
        self.c
            .send(self.c.addr(), &[IoSlice::new(b"to C from C")])
            .unwrap();
        let mut got = vec![
            self.c.try_recv().unwrap().to_vec(),
            self.c.try_recv().unwrap().to_vec(),
        ];
        got.sort();
        assert_eq!(got, [b"to C from A".to_vec(), b"to C from C".to_vec()]);
        assert!(matches!(self.c.try_recv(), Err(Error::WouldBlock)));
    }
}

/// Every receive-side call of `ch` keeps failing with `Corrupt` mentioning `what`, and the
/// blocking ones return at once instead of waiting.
fn assert_rx_broken(ch: &Ch, what: &str) {
    for _ in 0..3 {
        let r = ch.try_recv().map(|m| m.to_vec());
        assert!(
            is_corrupt(&r, what),
            "try_recv: {r:?} (expected Corrupt: {what})"
        );
    }
    let t = Instant::now();
    let r = ch.recv_timeout(Duration::from_secs(5)).map(|m| m.to_vec());
    assert!(is_corrupt(&r, what), "recv_timeout: {r:?}");
    let r = ch.wait(Some(Duration::from_secs(5)));
    assert!(is_corrupt(&r, what), "wait: {r:?}");
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "a broken port made a blocking call wait"
    );
}

/// A sends `n` messages of `len` bytes to B; B receives and completes them.
fn a_to_b(l: &Live, n: usize, len: usize) {
    let buf = vec![0x5Au8; len];
    for _ in 0..n {
        l.a.send_whole(l.b.addr(), &[IoSlice::new(&buf)]).unwrap();
        assert_eq!(l.b.try_recv().unwrap().to_vec(), buf);
    }
}

/// Lane position after `n` records of `len` bytes (the producer's head is private while its
/// port is open: the shared `head` is written only on close).
fn pos_after(n: usize, len: usize) -> u64 {
    (n * record_len(len)) as u64
}

#[test]
fn the_shared_head_is_not_read_while_the_sender_is_open() {
    // The consumer polls record headers; a scribbled `head` changes nothing until the
    // sending port is reopened (see `corrupt_lane_at_open_...`).
    let l = Live::new();
    a_to_b(&l, 3, 8);
    for junk in [u64::MAX, 4, LANE as u64 * 3] {
        poke_u64(l.region(), l.head(1, 0), junk);
        a_to_b(&l, 2, 8);
    }
    l.others_still_work();
}

#[test]
fn garbage_where_the_next_header_goes() {
    // Never written and then scribbled on, or a header of an earlier lap at the same offset
    // (its tag names that position), or a valid tag without the present bit.
    for laps in [0u64, 1] {
        // One message announces the lane to B (the summary bit); with `laps == 1`, a whole
        // lap of 8-byte messages, consumed and completed.
        let n = 1 + laps as usize * (LANE / record_len(8));
        let pos = pos_after(n, 8);
        let stale = encode_rec(8, pos.wrapping_sub(LANE as u64));
        let no_present_bit = encode_rec(8, pos) & !(1 << 63);
        for word in [0xdead_beef_u64, u64::MAX, stale, no_present_bit] {
            let l = Live::new();
            a_to_b(&l, n, 8);
            poke_u64(l.region(), l.record(1, 0, pos), word);
            assert_rx_broken(&l.b, "position tag");
            l.others_still_work();
        }
    }
}

#[test]
fn record_header_with_a_bad_position_tag() {
    let l = Live::new();
    a_to_b(&l, 1, 24);
    let pos = pos_after(1, 24);
    l.a.send(l.b.addr(), &[IoSlice::new(b"corrupt me")])
        .unwrap();
    let off = l.record(1, 0, pos);
    let word = peek_u64(l.region(), off);
    assert_eq!(word, encode_rec(10, pos));
    poke_u64(l.region(), off, word ^ (1 << 40));
    assert_rx_broken(&l.b, "position tag");
    l.others_still_work();
}

#[test]
fn record_longer_than_the_lane_can_hold_next_to_a_held_message() {
    // B holds a 0-byte message (8 bytes at 0); the next record, at 8, may use at most the
    // rest of the lane but the terminator word: LANE - 16 bytes. Well-formed headers (valid
    // position tags) claiming more are refused, so a held message is never overlapped.
    let pos = pos_after(1, 0);
    for claim in [(LANE - 16 - 8 + 1) as u32, LANE as u32, (1 << 31) - 1] {
        let l = Live::new();
        l.a.send(l.b.addr(), &[IoSlice::new(&[])]).unwrap();
        let held = l.b.try_recv().unwrap();
        l.a.send(l.b.addr(), &[IoSlice::new(&[7u8; 8])]).unwrap();
        poke_u64(l.region(), l.record(1, 0, pos), encode_rec(claim, pos));
        let r = l.b.try_recv().map(|m| m.to_vec());
        let want = format!("claims {claim} bytes but only {} are free", LANE - 16);
        assert!(is_corrupt(&r, &want), "{r:?} (expected {want})");
        drop(held);
        assert_rx_broken(&l.b, &want);
        l.others_still_work();
    }
    // The untouched job delivers the message.
    let l = Live::new();
    l.a.send(l.b.addr(), &[IoSlice::new(&[])]).unwrap();
    let held = l.b.try_recv().unwrap();
    l.a.send(l.b.addr(), &[IoSlice::new(&[7u8; 8])]).unwrap();
    assert_eq!(l.b.try_recv().unwrap().to_vec(), [7u8; 8]);
    drop(held);
}

#[test]
fn record_shorter_than_written_is_caught_at_the_next_record() {
    // A header rewritten with a smaller (valid) length delivers a short message; the next
    // "header" is then payload and fails its position tag. Memory safety holds throughout.
    let l = Live::new();
    l.a.send(l.b.addr(), &[IoSlice::new(&[1u8; 32])]).unwrap();
    poke_u64(l.region(), l.record(1, 0, 0), encode_rec(8, 0));
    assert_eq!(l.b.try_recv().unwrap().to_vec(), [1u8; 8]);
    assert_rx_broken(&l.b, "position tag");
    l.others_still_work();
}

/// Fills the lane A→B to the last byte (15 records of 64 bytes, one of 56; the producer
/// keeps the word after its last record free, layout::TERM); returns the head.
fn fill_a_to_b(l: &Live) -> u64 {
    let mut k = 0;
    loop {
        match l.a.send_whole(l.b.addr(), &[IoSlice::new(&[k as u8; 56])]) {
            Ok(()) => k += 1,
            Err(Error::WouldBlock) => break,
            Err(e) => panic!("filling the lane: {e}"),
        }
    }
    assert_eq!(k, (LANE - 8) / record_len(56));
    l.a.send_whole(l.b.addr(), &[IoSlice::new(&[0xEE; 48])])
        .unwrap();
    let head = FULL_LANE;
    assert_eq!(head, pos_after(k, 56) + record_len(48) as u64);
    head
}

/// Bytes of records in a full lane.
const FULL_LANE: u64 = (LANE - 8) as u64;

/// A's sends to B keep failing with `Corrupt` mentioning `what`; A's receive side too.
fn assert_tx_broken(l: &Live, what: &str) {
    for len in [1usize, 8, 200] {
        let r = l.a.send(l.b.addr(), &[IoSlice::new(&vec![0u8; len])]);
        assert!(
            is_corrupt(&r, what),
            "send: {r:?} (expected Corrupt: {what})"
        );
    }
    assert_rx_broken(&l.a, what);
}

#[test]
fn tail_beyond_head_seen_by_the_sender() {
    let l = Live::new();
    let h = fill_a_to_b(&l);
    poke_u64(l.region(), l.tail(1, 0), h + 64);
    assert_tx_broken(&l, "tail");
    // The receiver's side of that lane is intact: B delivers what A had sent.
    assert_eq!(l.b.try_recv().unwrap().to_vec(), [0u8; 56]);
    l.bystander_still_works_and_a_refuses();
}

#[test]
fn tail_going_backwards_or_unaligned() {
    for bad in [|t: u64| t - 64, |t: u64| t + 4] {
        let l = Live::new();
        fill_a_to_b(&l);
        // Drain B; its empty poll publishes the tail, and A sees it when full again.
        while let Ok(m) = l.b.try_recv() {
            drop(m);
        }
        let t = peek_u64(l.region(), l.tail(1, 0));
        assert_eq!(t, FULL_LANE);
        fill_a_to_b(&l);
        poke_u64(l.region(), l.tail(1, 0), bad(t));
        assert_tx_broken(&l, "tail");
        l.bystander_still_works_and_a_refuses();
    }
}

// "The port then refuses further use" (ring module docs, and `Error::Corrupt`: "the channel
// refuses to touch the memory any further"): once a port has met corrupt shared state, its
// sends fail too, whichever lane they would use.

#[test]
fn a_port_broken_on_send_refuses_sends_to_every_destination() {
    let l = Live::new();
    let h = fill_a_to_b(&l);
    poke_u64(l.region(), l.tail(1, 0), h + 64);
    assert!(is_corrupt(
        &l.a.send(l.b.addr(), &[IoSlice::new(b"x")]),
        "tail"
    ));
    let r = l.a.send(l.c.addr(), &[IoSlice::new(b"x")]);
    assert!(is_corrupt(&r, "tail"), "broken port A sent to C: {r:?}");
}

#[test]
fn a_port_broken_on_receive_refuses_sends() {
    let l = Live::new();
    a_to_b(&l, 1, 8);
    poke_u64(l.region(), l.record(1, 0, pos_after(1, 8)), 0xbad);
    assert!(is_corrupt(&l.b.try_recv().map(|_| ()), "position tag"));
    let r = l.b.send(l.c.addr(), &[IoSlice::new(b"x")]);
    assert!(
        is_corrupt(&r, "position tag"),
        "broken port B sent to C: {r:?}"
    );
}

#[test]
fn summary_bit_naming_no_channel() {
    let l = Live::new();
    // 3 channels: bits 3..64 of summary word 0 name nothing.
    for bit in [3u32, 63] {
        let l = Live::new();
        let off = summary_off(l.lay(), 1, 0);
        poke_u64(l.region(), off, peek_u64(l.region(), off) | 1 << bit);
        assert_rx_broken(&l.b, &format!("summary bit {bit} names no channel"));
        l.others_still_work();
        // Found by `wait` (the readiness check) as well as by a receive.
        let l = Live::new();
        poke_u64(l.region(), off, 1 << bit);
        let r = l.b.wait(Some(Duration::from_secs(5)));
        assert!(is_corrupt(&r, "names no channel"), "wait: {r:?}");
    }
    // A bit naming a real channel that never sent is harmless.
    poke_u64(l.region(), summary_off(l.lay(), 1, 0), 0b111);
    assert!(matches!(l.b.try_recv(), Err(Error::WouldBlock)));
    l.others_still_work();
}

#[test]
fn corrupt_lane_at_open_is_refused_and_the_port_can_be_reopened() {
    let job = local::job(params(1, 2)).unwrap().pop().unwrap();
    let fab = job.driver().fabric().clone();
    let (lay, reg) = (*fab.layout(), fab.region());
    // Messages wait in the lane of a port that is not open yet; closing the sender stores
    // its head, where it continues when reopened.
    let a = job.open(0).unwrap();
    a.send(NetAddr::new(0, 1), &[IoSlice::new(b"early")])
        .unwrap();
    drop(a);
    let h = head_off(&lay, 1, 0);
    let good = peek_u64(reg, h);
    assert_eq!(good, pos_after(1, 5));
    for bad in [good + LANE as u64 + 8, good + 1] {
        poke_u64(reg, h, bad);
        let r = job.open(0).map(|_| ());
        assert!(is_corrupt(&r, "inconsistent"), "open: {r:?}");
    }
    poke_u64(reg, h, good);
    let a = job.open(0).unwrap();
    a.send(NetAddr::new(0, 1), &[IoSlice::new(b"late")])
        .unwrap();
    // The receiving side checks its tail.
    let t = tail_off(&lay, 1, 0);
    poke_u64(reg, t, 4);
    let r = job.open(1).map(|_| ());
    assert!(is_corrupt(&r, "not aligned"), "open: {r:?}");
    poke_u64(reg, t, 0);
    let b = job.open(1).unwrap();
    assert_eq!(b.try_recv().unwrap().to_vec(), b"early");
    assert_eq!(b.try_recv().unwrap().to_vec(), b"late");
}

#[test]
fn errors_are_reported_as_eproto() {
    let l = Live::new();
    poke_u64(l.region(), summary_off(l.lay(), 1, 0), 1 << 9);
    let e = l.b.try_recv().map(|_| ()).unwrap_err();
    // EPROTO on Linux; the C ABI maps Corrupt to it.
    assert_eq!(e.errno(), 71);
    assert!(e.to_string().starts_with("corrupt shared state: "), "{e}");
}

#[test]
fn garbage_in_the_lost_rank_word_names_a_rank_of_the_job() {
    let l = Live::new();
    poke_u32(l.region(), H_LOST, 1);
    poke_u32(l.region(), H_FIRST_LOST, u32::MAX);
    // Clamped to a rank that exists, so that callers may index with it.
    assert!(matches!(
        l.b.try_recv().map(|_| ()),
        Err(Error::PeerLost { rank: 0 })
    ));
    assert_eq!(l.fab.ctl().lost(), Some(0));
}
