//! A loom model of the lanes that runs the lane code itself: `RingPort::send`,
//! `recv_into`, `complete`, `ready` and `RingWaiter` of `skifch_drivers::shm`, over a job
//! segment of 64-byte lanes, with exhaustive interleavings (up to a preemption bound)
//! under the C11 memory model.
//!
//! Under `--cfg loom` the crate's atomics shim (`skifch_drivers` `sync`) gives every segment
//! word the code reaches atomically a loom atomic of its own (payload copies are mirrored
//! into the words they wrote, so a header poll can see a stale payload word of an earlier
//! lap as real memory would), and `skifch_drivers::sys` swaps the futex for loom's mutex +
//! condition variable without a timeout (a lost wake-up is a deadlock, which loom reports)
//! and both sides of the asymmetric barrier for `fence(SeqCst)`, the guarantee the pair
//! gives. `MIN_LANE` is 64 bytes under loom: three 8-byte messages fill a lane.
//!
//! Covered: publication (the header is the flag; free space, zeroed by the consumer before
//! it publishes the tail past it, reads "not yet"), wrap-around (a payload crossing the
//! lane end comes out as two segments), back-pressure (a full lane, the producer re-reading
//! the tail), messages held while later ones are completed, completion out of order, lazy
//! tail publication (every `lane/16` bytes, or when the lane is found empty: a 256-byte
//! lane there), the wake-up protocol (`arm`, a last look, `sleep`, `disarm`), two senders
//! into one receiving channel (the summary bitmap's scan). Payload bytes are checked on
//! receipt and again before completion: a producer writing over a message still held shows
//! as changed bytes. Not covered: several receiving channels, peer loss, corrupt segments
//! (the property and corrupt-segment tests), the scan's fairness.
//!
//! A deliberately wrong use of the waiter (arming after the last look) shows that the model
//! finds a lost wake-up.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test --release -p skifch-drivers --test loom_lane`
//! (`LOOM_MAX_PREEMPTIONS` overrides each test's preemption bound).
#![cfg(loom)]

use std::io::IoSlice;
use std::sync::Arc;
use std::time::Duration;

use loom::thread;
use skifch::driver::{Driver, Port, RawMessage, SendMode, Waiter};
use skifch::{Error, NetAddr};
use skifch_drivers::inproc::{self, InprocDriver};
use skifch_drivers::shm::{Params, RingPort};

type P = RingPort<skifch_drivers::shm::HeapRegion>;

/// Explores `f` with at most `preemptions` forced thread switches per execution (unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise).
fn model(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(preemptions);
    }
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = runs.clone();
    b.check(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f()
    });
    eprintln!(
        "{} executions",
        runs.load(std::sync::atomic::Ordering::Relaxed)
    );
}

/// `nranks` ranks of one port each, over 64-byte lanes; the ports of every rank, opened.
fn ports(nranks: u32) -> Vec<P> {
    ports_with(nranks, 64)
}

/// As [`ports`], with lanes of `lane_bytes`.
fn ports_with(nranks: u32, lane_bytes: usize) -> Vec<P> {
    let jobs = inproc::job(Params {
        nranks,
        nports: 1,
        lane_bytes,
    })
    .expect("a loom job");
    jobs.iter()
        .map(|j| {
            let d: &Arc<InprocDriver> = j.driver();
            d.open_port(0).expect("opening port 0")
        })
        .collect()
}

/// The payload of message `id` of `len` bytes from sender `src`.
fn payload(src: u32, id: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|k| (src * 64 + id * 8 + k as u32) as u8)
        .collect()
}

/// The bytes of a received message (one or two segments).
fn bytes(m: &RawMessage) -> Vec<u8> {
    let mut v = Vec::with_capacity(m.len);
    for s in &m.segs[..m.count as usize] {
        // SAFETY: the port's contract: `len` readable bytes until `complete`.
        v.extend_from_slice(unsafe { std::slice::from_raw_parts(s.ptr, s.len) });
    }
    v
}

/// Sends each of `lens` whole to `dst`, polling (yielding) while the lane is full; the
/// odd ones of 8 bytes or more first as a word and the rest (`Port::try_send_word`).
fn send_all(port: &mut P, src: u32, dst: NetAddr, lens: &[usize]) {
    for (id, &len) in lens.iter().enumerate() {
        let data = payload(src, id as u32, len);
        loop {
            if id % 2 == 1 && len >= 8 {
                let w = u64::from_le_bytes(data[..8].try_into().unwrap());
                if port.try_send_word(dst, w, &data[8..]) {
                    break;
                }
            }
            match port.send(dst, &[IoSlice::new(&data)], SendMode::Whole) {
                Ok(n) => {
                    assert_eq!(n, len);
                    break;
                }
                Err(Error::WouldBlock) => thread::yield_now(),
                Err(e) => panic!("send: {e}"),
            }
        }
    }
}

/// The next message, polling (yielding) while there is none.
fn poll(port: &mut P) -> RawMessage {
    let mut m = RawMessage::EMPTY;
    loop {
        match port.recv_into(&mut m) {
            Ok(()) => return m,
            Err(Error::WouldBlock) => thread::yield_now(),
            Err(e) => panic!("recv: {e}"),
        }
    }
}

/// The next message, sleeping on the port's waiter when there is none: the protocol of
/// `skifch::Channel`'s blocking receive (`arm`, one more look, `sleep`, `disarm`). With
/// `arm_late` the look comes before `arm` (a wrong use: a message published between the two
/// wakes nobody).
fn sleep_recv(port: &mut P, arm_late: bool) -> RawMessage {
    let w = port.waiter();
    let mut m = RawMessage::EMPTY;
    loop {
        match port.recv_into(&mut m) {
            Ok(()) => return m,
            Err(Error::WouldBlock) => {}
            Err(e) => panic!("recv: {e}"),
        }
        let ready = |port: &mut P| port.ready().expect("ready");
        let t = if arm_late {
            let r = ready(port);
            let t = w.arm();
            if r {
                w.disarm();
                continue;
            }
            t
        } else {
            let t = w.arm();
            if ready(port) {
                w.disarm();
                continue;
            }
            t
        };
        w.sleep(t, Duration::from_secs(3600));
        w.disarm();
    }
}

/// Checks a received message against what sender `src` sent as message `id`.
fn check(m: &RawMessage, src: u32, id: u32, len: usize) {
    assert_eq!(m.src, NetAddr::new(src as u16, 0), "message {id}: sender");
    assert_eq!(m.len, len, "message {id} from {src}: length");
    assert_eq!(
        bytes(m),
        payload(src, id, len),
        "message {id} from {src}: payload"
    );
}

/// Completes `m` (this port's message, once), after checking that its bytes are unchanged.
fn complete(port: &mut P, m: RawMessage, src: u32, id: u32) {
    check(&m, src, id, m.len);
    // SAFETY: `m` came from `recv_into` on this port and is completed once; no reference
    // into it outlives this call (`check` copied its bytes).
    unsafe { port.complete(m.token) };
}

/// One sender, a polling receiver: five messages through a 64-byte lane — it wraps, the
/// fourth payload crosses the lane end (two segments), the fifth is empty, the sender is
/// pushed back and re-reads the tail; the receiver holds the first message while it takes the second and
/// completes them in reverse order (memory comes back only up to the oldest held).
#[test]
fn wrap_back_pressure_and_completion_out_of_order() {
    const LENS: [usize; 5] = [8, 8, 8, 16, 0];
    model(3, || {
        let mut p = ports(2);
        let mut rx = p.pop().unwrap();
        let mut tx = p.pop().unwrap();
        let to = rx.addr();
        let t = thread::spawn(move || send_all(&mut tx, 0, to, &LENS));
        let a = poll(&mut rx);
        check(&a, 0, 0, LENS[0]);
        let b = poll(&mut rx);
        check(&b, 0, 1, LENS[1]);
        complete(&mut rx, b, 0, 1);
        complete(&mut rx, a, 0, 0);
        for (id, &len) in LENS.iter().enumerate().skip(2) {
            let m = poll(&mut rx);
            check(&m, 0, id as u32, len);
            if id == 3 {
                assert_eq!(m.count, 2, "the 16-byte payload at offset 56 wraps");
            }
            complete(&mut rx, m, 0, id as u32);
        }
        t.join().unwrap();
    });
}

/// Lazy tail publication: in a 256-byte lane the tail is published every 16 freed bytes
/// or when the receiver finds the lane empty. The receiver completes an empty message (8
/// bytes: not published yet), holds the next one, which fills the lane, and polls again:
/// finding the lane empty, it publishes the 8 bytes that the third message needs.
#[test]
fn an_empty_lane_publishes_the_tail() {
    const LENS: [usize; 3] = [0, 232, 0];
    model(3, || {
        let mut p = ports_with(2, 256);
        let mut rx = p.pop().unwrap();
        let mut tx = p.pop().unwrap();
        let to = rx.addr();
        let t = thread::spawn(move || send_all(&mut tx, 0, to, &LENS));
        let m = poll(&mut rx);
        complete(&mut rx, m, 0, 0);
        let held = poll(&mut rx);
        check(&held, 0, 1, LENS[1]);
        let m = poll(&mut rx);
        complete(&mut rx, m, 0, 2);
        complete(&mut rx, held, 0, 1);
        t.join().unwrap();
    });
}

/// One sender, a sleeping receiver: no wake-up is lost, whether a message is published
/// before `arm`, between `arm` and the last look, or while the receiver sleeps; the third
/// message waits for room (two 16-byte messages fill the lane) that the receiver makes
/// between its sleeps.
#[test]
fn a_sleeping_receiver_is_always_woken() {
    const LENS: [usize; 3] = [16, 16, 16];
    model(3, || {
        let mut p = ports(2);
        let mut rx = p.pop().unwrap();
        let mut tx = p.pop().unwrap();
        let to = rx.addr();
        let t = thread::spawn(move || send_all(&mut tx, 0, to, &LENS));
        for (id, &len) in LENS.iter().enumerate() {
            let m = sleep_recv(&mut rx, false);
            check(&m, 0, id as u32, len);
            complete(&mut rx, m, 0, id as u32);
        }
        t.join().unwrap();
    });
}

/// Two senders into one receiving channel, a sleeping receiver: the scan of the summary
/// bitmap finds a lane whose first message arrived while it slept, and each sender's
/// messages arrive in order.
#[test]
fn a_sleeping_receiver_finds_every_sender() {
    model(3, || {
        let mut p = ports(3);
        let mut rx = p.pop().unwrap();
        let to = rx.addr();
        let senders: Vec<_> = p
            .into_iter()
            .enumerate()
            .map(|(src, mut tx)| thread::spawn(move || send_all(&mut tx, src as u32, to, &[8])))
            .collect();
        let mut seen = [false; 2];
        for _ in 0..2 {
            let m = sleep_recv(&mut rx, false);
            let src = m.src.rank() as u32;
            assert!(!seen[src as usize], "two messages from {src}");
            seen[src as usize] = true;
            complete(&mut rx, m, src, 0);
        }
        for s in senders {
            s.join().unwrap();
        }
    });
}

/// The model can fail: a receiver that takes its last look before arming misses a message
/// published in between, and sleeps for ever (loom: deadlock). The ports are never dropped:
/// their destructors would touch the model's atomics while the failed run unwinds.
#[test]
#[should_panic(expected = "deadlock")]
fn arming_after_the_last_look_loses_a_wakeup() {
    use std::mem::ManuallyDrop;
    model(2, || {
        let mut p: Vec<_> = ports(2).into_iter().map(ManuallyDrop::new).collect();
        let mut rx = p.pop().unwrap();
        let mut tx = p.pop().unwrap();
        let to = rx.addr();
        let t = thread::spawn(move || send_all(&mut tx, 0, to, &[8]));
        let m = sleep_recv(&mut rx, true);
        complete(&mut rx, m, 0, 0);
        t.join().unwrap();
    });
}
