//! A loom model of the lane protocol of `skifch_drivers::shm` (one receiving channel, one lane per
//! sender; layout version 2): exhaustive interleavings (up to a preemption bound) under the
//! C11 memory model.
//!
//! loom cannot run the real ring (raw shared memory), so this is a transcription of its
//! algorithm onto loom primitives. The same 8-byte lane word is a record header (the
//! consumer's ready flag, accessed atomically while the producer works) in one lap and
//! payload (plain copies) in another, so each word is modelled twice:
//! * a loom `AtomicU64`, which is what header polls read. Every producer store into the
//!   word goes there — the header (release), the terminator zero (relaxed) and also every
//!   payload word (relaxed) — so a poll can see stale payload of an earlier lap exactly as
//!   real memory would let it;
//! * a loom `UnsafeCell<u64>`, through which payload is written and read, so that loom
//!   reports any payload read that a write can overlap as a data race. Header and
//!   terminator stores write the cell too (a real store into a word the consumer still
//!   reads as payload is a race as well); header polls never read it.
//!
//! The index arithmetic and the record header are the real ones
//! (`skifch_drivers::shm::layout::{record_size, encode_rec, decode_rec, TERM}`). Transcribed from
//! `ring/mod.rs`:
//! * producer (`RingPort::send`): room is `record_size(head, n) <= cap - TERM - (head - tail)`
//!   against a cached tail, re-read (acquire) only when the cache says full and validated as
//!   there; announce the lane in the summary bitmap once; write the payload; store zero
//!   (relaxed) into the word at `end = head + record_size(head, n)` (the next record's flag, the
//!   "terminator"); release-store the header `encode_rec(n, head)` at `head`; barrier; read
//!   `sleepers`; if any, bump `seq` and wake. No shared `head` per message;
//! * consumer (`take`, `lane_ready`, `scan`, `complete`): acquire-load the word at
//!   `consumed`; zero means nothing yet (an empty lane publishes its tail if
//!   `published != freed`), anything else is decoded with
//!   `decode_rec(word, pos, cap - TERM - (pos - freed))`; completion in any order, memory reclaimed
//!   up to the oldest held message; the tail published every `publish_every` freed bytes
//!   (`lane_bytes/16` in the real code) or when the lane is found empty. `scan` finds a lane
//!   whose word is non-zero and `take` loads it again; the model's `take` does both at once
//!   (that word only goes from zero to a header while the consumer is there);
//! * sleeping (`RingWaiter` + `wait_until`): `ticket = seq` (acquire), `sleepers += 1`,
//!   barrier, look again (`ready`, which also publishes tails), futex-wait while
//!   `seq == ticket`, `sleepers -= 1`.
//!
//! The asymmetric barrier (sender: compiler fence; sleeper: `membarrier`) has no loom
//! equivalent; it is modelled as `fence(SeqCst)` on both sides, the guarantee it provides.
//! The futex is modelled without a timeout (the real one sleeps at most 250 ms), so that a
//! lost wake-up shows as a deadlock instead of a delay. Not modelled: the shared `head`
//! (stored only when a sending port closes, read only by a port reopened later), the
//! fairness of the scan (bursts, round-robin start, the last lane tried first), partial
//! sends, several receivers, peer loss.
//!
//! Deliberately broken variants show that the model can fail: without the barriers a
//! wake-up is lost (deadlock); a consumer that frees a record before reading it races with
//! the producer (data race); a producer that skips the terminator lets the consumer take a
//! stale payload word of an earlier lap for the next header (`decode_rec` refuses it).
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test --release -p skifch --test loom_lane`
//! (`LOOM_MAX_PREEMPTIONS` overrides each test's preemption bound, 3 or 4).
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering, Ordering::*};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;
use skifch_drivers::shm::layout::{decode_rec, encode_rec, record_size, REC_HDR, TERM};

/// How faithful a run is: the real protocol, or one with a deliberate bug (to show that
/// the model can fail).
#[derive(Clone, Copy)]
struct Variant {
    /// Ring bytes per lane (a power of two).
    cap: u64,
    /// Freed bytes after which the consumer publishes its tail.
    publish_every: u64,
    /// The barriers of the wake-up protocol (bug when false).
    barriers: bool,
    /// The consumer publishes a record's space before reading it (bug when true).
    free_before_read: bool,
    /// The producer zeroes the word after its record before publishing the record (bug
    /// when false).
    terminator: bool,
}

const REAL: Variant = Variant {
    cap: 32,
    publish_every: 32 / 16,
    barriers: true,
    free_before_read: false,
    terminator: true,
};

/// One lane: the consumer's tail and the ring words, each both as an atomic (header polls)
/// and as a plain cell (payload), see the module docs.
struct Lane {
    tail: AtomicU64,
    flags: Vec<AtomicU64>,
    cells: Vec<UnsafeCell<u64>>,
}

/// The shared state of one receiving channel.
struct Shared {
    v: Variant,
    lanes: Vec<Lane>,
    summary: AtomicU64,
    seq: AtomicU32,
    sleepers: AtomicU32,
    futex: (Mutex<()>, Condvar),
}

impl Shared {
    fn new(v: Variant, lanes: usize) -> Arc<Shared> {
        // Zeroed memory, as a fresh segment.
        let words = (v.cap / 8) as usize;
        Arc::new(Shared {
            v,
            lanes: (0..lanes)
                .map(|_| Lane {
                    tail: AtomicU64::new(0),
                    flags: (0..words).map(|_| AtomicU64::new(0)).collect(),
                    cells: (0..words).map(|_| UnsafeCell::new(0)).collect(),
                })
                .collect(),
            summary: AtomicU64::new(0),
            seq: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
            futex: (Mutex::new(()), Condvar::new()),
        })
    }

    /// Index of the lane word at absolute offset `pos`.
    fn at(&self, pos: u64) -> usize {
        ((pos & (self.v.cap - 1)) / 8) as usize
    }

    /// A producer's store of `val` into the word at `pos`: the plain write (which loom
    /// checks against payload reads) and the atomic store that header polls see.
    fn put(&self, lane: usize, pos: u64, val: u64, order: Ordering) {
        let (l, i) = (&self.lanes[lane], self.at(pos));
        // SAFETY: a loom cell; loom itself reports any access this write races with.
        l.cells[i].with_mut(|p| unsafe { *p = val });
        l.flags[i].store(val, order);
    }

    /// A header poll: the word at `pos`, as the consumer's acquire load sees it.
    fn poll_word(&self, lane: usize, pos: u64) -> u64 {
        self.lanes[lane].flags[self.at(pos)].load(Acquire)
    }

    /// A payload read of the word at `pos`.
    fn payload(&self, lane: usize, pos: u64) -> u64 {
        // SAFETY: a loom cell; loom itself reports any write this read races with.
        self.lanes[lane].cells[self.at(pos)].with(|p| unsafe { *p })
    }

    /// FUTEX_WAIT: sleeps unless `seq != ticket`, checked under the lock that a wake takes
    /// (the kernel's hash-bucket lock). No timeout, no spurious wake-up.
    fn futex_wait(&self, ticket: u32) {
        let g = self.futex.0.lock().unwrap();
        if self.seq.load(Relaxed) == ticket {
            drop(self.futex.1.wait(g).unwrap());
        }
    }

    fn futex_wake_all(&self) {
        let _g = self.futex.0.lock().unwrap();
        self.futex.1.notify_all();
    }
}

/// Payload word `k` of message `id`.
fn pay(id: u64, k: u64) -> u64 {
    id << 32 | k
}

/// Producer state of one lane (`Tx`).
struct Tx {
    lane: usize,
    head: u64,
    cached_tail: u64,
    announced: bool,
}

impl Tx {
    fn new(lane: usize) -> Tx {
        Tx {
            lane,
            head: 0,
            cached_tail: 0,
            announced: false,
        }
    }

    /// One whole-message send attempt of `len` payload bytes; `false` = would block.
    fn try_send(&mut self, sh: &Shared, id: u64, len: u32) -> bool {
        let (cap, l) = (sh.v.cap, &sh.lanes[self.lane]);
        let need = record_size(self.head, len as usize);
        // `free` leaves out the terminator word after the last record.
        let mut free = cap - TERM as u64 - (self.head - self.cached_tail);
        if need > free {
            let t = l.tail.load(Acquire);
            assert!(
                !(t < self.cached_tail || t > self.head || t & 7 != 0),
                "a conforming consumer published tail {t} (cached {}, head {})",
                self.cached_tail,
                self.head
            );
            self.cached_tail = t;
            free = cap - TERM as u64 - (self.head - t);
        }
        if need > free {
            return false;
        }
        if !self.announced {
            sh.summary.fetch_or(1 << self.lane, AcqRel);
            self.announced = true;
        }
        let (head, end) = (self.head, self.head + need);
        for k in 0..(len as u64).div_ceil(8) {
            sh.put(
                self.lane,
                head + REC_HDR as u64 + 8 * k,
                pay(id, k),
                Relaxed,
            );
        }
        if sh.v.terminator {
            sh.put(self.lane, end, 0, Relaxed);
        }
        sh.put(self.lane, head, encode_rec(len, head), Release);
        self.head = end;
        if sh.v.barriers {
            fence(SeqCst); // light side of the asymmetric barrier
        }
        if sh.sleepers.load(Relaxed) != 0 {
            sh.seq.fetch_add(1, Release);
            sh.futex_wake_all();
        }
        true
    }

    /// Sends, yielding while the lane is full.
    fn send(&mut self, sh: &Shared, id: u64, len: u32) {
        while !self.try_send(sh, id, len) {
            thread::yield_now();
        }
    }
}

/// Consumer state of one lane (`Rx`).
#[derive(Default)]
struct Rx {
    consumed: u64,
    freed: u64,
    published: u64,
    ooo: Vec<(u64, u64)>,
}

/// A received message: where it lies and what it said.
struct Msg {
    lane: usize,
    start: u64,
    end: u64,
    id: u64,
    len: usize,
}

/// The receiving channel (`RingPort`'s receive side).
struct Receiver {
    sh: Arc<Shared>,
    rx: Vec<Rx>,
}

impl Receiver {
    fn new(sh: Arc<Shared>) -> Receiver {
        let rx = (0..sh.lanes.len()).map(|_| Rx::default()).collect();
        Receiver { sh, rx }
    }

    fn publish(&mut self, lane: usize) {
        let rx = &mut self.rx[lane];
        self.sh.lanes[lane].tail.store(rx.freed, Release);
        rx.published = rx.freed;
    }

    /// Reads the payload of `m` and checks it against the sender's pattern.
    fn check(&self, m: &Msg) {
        for k in 0..(m.len as u64).div_ceil(8) {
            let w = self.sh.payload(m.lane, m.start + REC_HDR as u64 + 8 * k);
            assert_eq!(w >> 32, m.id, "word {k} of a message from lane {}", m.lane);
            assert_eq!(w & 0xffff_ffff, k, "word {k} of message {}", m.id);
        }
    }

    /// `take`: the next message of `lane`, if any.
    fn take(&mut self, lane: usize) -> Option<Msg> {
        let cap = self.sh.v.cap;
        let pos = self.rx[lane].consumed;
        // The header is the flag: zero until the producer publishes the record.
        let word = self.sh.poll_word(lane, pos);
        if word == 0 {
            if self.rx[lane].published != self.rx[lane].freed {
                self.publish(lane);
            }
            return None;
        }
        let avail = cap - TERM as u64 - (pos - self.rx[lane].freed);
        let (len, size) = decode_rec(word, pos, avail).expect("a conforming producer's record");
        let end = pos + size;
        self.rx[lane].consumed = end;
        if self.sh.v.free_before_read {
            // The bug: give the record's space back before reading it.
            self.rx[lane].freed = end;
            self.publish(lane);
        }
        // The sender's id is in the high half of every payload word; empty messages carry
        // none (0 stands for "unknown" and is not checked).
        let id = if len == 0 {
            0
        } else {
            self.sh.payload(lane, pos + REC_HDR as u64) >> 32
        };
        let m = Msg {
            lane,
            start: pos,
            end,
            id,
            len,
        };
        self.check(&m);
        Some(m)
    }

    /// `scan` + `take`: one message from any lane announced in the summary.
    fn poll(&mut self) -> Option<Msg> {
        let mut bits = self.sh.summary.load(Acquire);
        while bits != 0 {
            let lane = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if let Some(m) = self.take(lane) {
                return Some(m);
            }
        }
        None
    }

    /// `ready` (`lane_ready` of every announced lane): is a message waiting? Publishes the
    /// tails of empty lanes.
    fn ready(&mut self) -> bool {
        let mut bits = self.sh.summary.load(Acquire);
        while bits != 0 {
            let lane = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if self.sh.poll_word(lane, self.rx[lane].consumed) != 0 {
                return true;
            }
            let rx = &self.rx[lane];
            if rx.published != rx.freed {
                self.publish(lane);
            }
        }
        false
    }

    /// `complete` (RecvComp), in any order; re-reads the message first: it must be unchanged.
    fn complete(&mut self, m: Msg) {
        self.check(&m);
        let every = self.sh.v.publish_every;
        let rx = &mut self.rx[m.lane];
        if m.start == rx.freed {
            rx.freed = m.end;
            while let Some(k) = rx.ooo.iter().position(|&(s, _)| s == rx.freed) {
                rx.freed = rx.ooo.swap_remove(k).1;
            }
            if rx.freed - rx.published >= every {
                self.publish(m.lane);
            }
        } else {
            rx.ooo.push((m.start, m.end));
        }
    }

    /// Blocking receive with the sleep protocol (`wait_until` with the `block` policy).
    fn recv(&mut self) -> Msg {
        loop {
            if let Some(m) = self.poll() {
                return m;
            }
            if self.ready() {
                continue;
            }
            // arm
            let ticket = self.sh.seq.load(Acquire);
            self.sh.sleepers.fetch_add(1, SeqCst);
            if self.sh.v.barriers {
                fence(SeqCst); // heavy side of the asymmetric barrier
            }
            if !self.ready() {
                self.sh.futex_wait(ticket);
            }
            // disarm
            self.sh.sleepers.fetch_sub(1, Relaxed);
        }
    }

    /// Non-blocking receive in a polling loop.
    fn spin_recv(&mut self) -> Msg {
        loop {
            if let Some(m) = self.poll() {
                return m;
            }
            thread::yield_now();
        }
    }
}

/// Explores `f` with at most `preemptions` forced thread switches per execution (unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise); chosen so that the file runs in about a minute.
fn model(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(preemptions);
    }
    b.check(f);
}

/// One sender (ids from 1) of `lens` on lane `lane`.
fn sender(sh: &Arc<Shared>, lane: usize, lens: &'static [u32]) -> thread::JoinHandle<()> {
    let sh = sh.clone();
    thread::spawn(move || {
        let mut tx = Tx::new(lane);
        for (i, &len) in lens.iter().enumerate() {
            tx.send(&sh, i as u64 + 1, len);
        }
    })
}

#[test]
fn polling_receiver_wraps_holds_and_completes_out_of_order() {
    // 88 bytes of records through a 32-byte lane (24 usable: 8 are kept for the
    // terminator): wraps, back-pressure, a payload that straddles the ring end, terminators
    // over stale payload. The receiver holds two messages when it can (the 3- and 0-byte
    // ones) and completes the newer first; the tail is published lazily (every 16 freed
    // bytes or when empty).
    const LENS: &[u32] = &[8, 16, 3, 0, 12];
    model(4, || {
        let sh = Shared::new(
            Variant {
                publish_every: 16,
                ..REAL
            },
            1,
        );
        let p = sender(&sh, 0, LENS);
        let mut r = Receiver::new(sh);
        let mut next = 1u64;
        let expect = |m: &Msg, next: &mut u64| {
            assert_eq!(m.len, LENS[*next as usize - 1] as usize, "message {next}");
            assert!(m.len == 0 || m.id == *next);
            *next += 1;
        };
        while next <= LENS.len() as u64 {
            let a = r.spin_recv();
            expect(&a, &mut next);
            // Never wait while holding: the lane may be too small for the next one.
            match r.poll() {
                Some(b) => {
                    expect(&b, &mut next);
                    r.complete(b);
                    r.complete(a);
                }
                None => r.complete(a),
            }
        }
        p.join().unwrap();
        assert!(r.poll().is_none());
    });
}

/// One sender of `[8, 16, 8]` on a 32-byte lane, a polling receiver that completes each
/// message before taking the next. The third record starts at 40, a word (8) that still
/// holds the first message's payload until the second record's terminator zeroes it; the
/// third is sent only once the receiver has freed the second, so the receiver polls there
/// between the two.
fn stale_payload_under_the_next_header(v: Variant) {
    const LENS: &[u32] = &[8, 16, 8];
    model(4, move || {
        let sh = Shared::new(v, 1);
        let p = sender(&sh, 0, LENS);
        let mut r = Receiver::new(sh);
        for (i, &len) in LENS.iter().enumerate() {
            let m = r.spin_recv();
            assert_eq!((m.id, m.len), (i as u64 + 1, len as usize));
            r.complete(m);
        }
        p.join().unwrap();
    });
}

#[test]
fn a_stale_payload_word_is_never_taken_for_a_header() {
    stale_payload_under_the_next_header(REAL);
}

#[test]
#[should_panic(expected = "a conforming producer's record")]
fn without_the_terminator_a_stale_payload_is_taken_for_a_header() {
    // The model can fail: a producer that does not zero the word after its record lets the
    // receiver poll the first message's payload where the third header will go.
    stale_payload_under_the_next_header(Variant {
        terminator: false,
        ..REAL
    });
}

#[test]
fn sleeping_receiver_is_always_woken() {
    // The laziest tail (published only when the lane is found empty) and a lane that holds
    // one message: the sender waits for room while the receiver may be asleep.
    const LENS: &[u32] = &[16, 8, 16];
    model(4, || {
        let sh = Shared::new(
            Variant {
                publish_every: u64::MAX,
                ..REAL
            },
            1,
        );
        let p = sender(&sh, 0, LENS);
        let mut r = Receiver::new(sh);
        for (i, &len) in LENS.iter().enumerate() {
            let m = r.recv();
            assert_eq!((m.id, m.len), (i as u64 + 1, len as usize));
            r.complete(m);
        }
        p.join().unwrap();
    });
}

#[test]
fn sleeping_receiver_sees_every_lane_of_the_summary() {
    // Two senders announce their lanes in the summary just before their first record; the
    // receiver sleeps until both messages have arrived, from whichever lane first.
    const ONE: &[u32] = &[8];
    model(3, || {
        let sh = Shared::new(REAL, 2);
        let p0 = sender(&sh, 0, ONE);
        let p1 = sender(&sh, 1, ONE);
        let mut r = Receiver::new(sh);
        let (a, b) = (r.recv(), r.recv());
        assert_ne!(a.lane, b.lane);
        r.complete(b);
        r.complete(a);
        p0.join().unwrap();
        p1.join().unwrap();
    });
}

#[test]
#[should_panic(expected = "deadlock")]
fn without_the_barriers_a_wakeup_is_lost() {
    // The model can fail: drop both barriers and loom finds the execution in which the
    // sender misses the sleeper and the sleeper misses the message.
    model(3, || {
        let sh = Shared::new(
            Variant {
                barriers: false,
                ..REAL
            },
            1,
        );
        let p = sender(&sh, 0, &[8]);
        let mut r = Receiver::new(sh);
        let m = r.recv();
        r.complete(m);
        p.join().unwrap();
    });
}

#[test]
#[should_panic(expected = "Causality violation")]
fn freeing_before_reading_is_a_data_race() {
    // The model can fail: a consumer that publishes a record's space before reading it
    // lets the producer write the next record over the payload under the read (two
    // 24-byte records through a 32-byte lane: the second one's payload and terminator land
    // on the first one's payload); loom reports the race.
    model(3, || {
        let sh = Shared::new(
            Variant {
                free_before_read: true,
                ..REAL
            },
            1,
        );
        let p = sender(&sh, 0, &[16, 16]);
        let mut r = Receiver::new(sh);
        for _ in 0..2 {
            let m = r.spin_recv();
            r.complete(m);
        }
        p.join().unwrap();
    });
}
