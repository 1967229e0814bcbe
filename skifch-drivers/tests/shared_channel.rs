//! `SharedChannel` with several threads on one channel, on the in-process job: a message
//! held for a long time by one thread while others keep receiving (back-pressure, no loss,
//! the held bytes stay put), and several threads sending through one channel (per-thread
//! order at the receiver).
use std::collections::BTreeSet;
use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use skifch::{Error, NetAddr};
use skifch_drivers::inproc as local;
use skifch_drivers::shm::{layout::record_len, Params};

const LANE: usize = 4 << 10;
/// A multiple of 8, so a message is never sent partially.
const MSG: usize = 64;
const TOTAL: u64 = 400;
/// Generous bound for any wait of these tests (the machine may be busy).
const PATIENCE: Duration = Duration::from_secs(10);

fn params() -> Params {
    Params {
        nranks: 2,
        nports: 2,
        lane_bytes: LANE,
    }
}

/// Message `seq` of sender `tag`: both numbers, then bytes that depend on them.
fn msg(tag: u8, seq: u64) -> [u8; MSG] {
    let mut m = [0u8; MSG];
    m[..8].copy_from_slice(&seq.to_le_bytes());
    m[8] = tag;
    for (i, b) in m.iter_mut().enumerate().skip(9) {
        *b = (seq as u8).wrapping_mul(13) ^ (i as u8) ^ tag;
    }
    m
}

/// (tag, seq) of a message, after checking its bytes.
fn parse(v: &[u8]) -> (u8, u64) {
    assert_eq!(v.len(), MSG);
    let seq = u64::from_le_bytes(v[..8].try_into().unwrap());
    assert_eq!(v[..], msg(v[8], seq)[..], "message {seq} corrupt");
    (v[8], seq)
}

/// Retries a send on WouldBlock until `PATIENCE` runs out; the whole message must go.
fn send_patiently(send: impl Fn() -> skifch::Result<usize>) -> skifch::Result<()> {
    let t0 = Instant::now();
    loop {
        match send() {
            Ok(n) => {
                assert_eq!(n, MSG, "a {MSG}-byte message went partially");
                return Ok(());
            }
            Err(Error::WouldBlock) if t0.elapsed() < PATIENCE => std::thread::yield_now(),
            Err(e) => return Err(e),
        }
    }
}

#[test]
fn a_held_message_holds_back_its_lane_and_keeps_its_bytes() {
    // Messages that fit one lane: nothing can be reclaimed behind the first message.
    let fits = (LANE / record_len(MSG)) as u64;
    local::run_with(params(), move |job| {
        let ctl = job.open(1)?;
        let (sender, receiver) = (job.addr(0, 0), job.addr(1, 0));
        if job.rank() == 0 {
            let ch = job.open(0)?;
            // Until WouldBlock: exactly one lane's worth, whatever the receivers do.
            let mut sent = 0u64;
            loop {
                match ch.send(receiver, &[IoSlice::new(&msg(0, sent))]) {
                    Ok(n) => assert_eq!(n, MSG),
                    Err(Error::WouldBlock) => break,
                    Err(e) => return Err(e),
                }
                sent += 1;
                assert!(sent <= fits, "sent {sent} messages into a {LANE}-byte lane");
            }
            assert_eq!(sent, fits, "back-pressure before the lane was full");
            // And it stays full while the receivers take everything else.
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_millis(100) {
                let r = ch.send(receiver, &[IoSlice::new(&msg(0, sent))]);
                assert!(matches!(r, Err(Error::WouldBlock)), "held lane: {r:?}");
                std::thread::yield_now();
            }
            ctl.send_all(job.addr(1, 1), &[IoSlice::new(&sent.to_le_bytes())])?;
            // Rank 1 says when the held message is gone; then everything else flows.
            let go = ctl.recv_timeout(PATIENCE)?;
            assert_eq!(go.to_vec(), b"released");
            drop(go);
            for seq in sent..TOTAL {
                send_patiently(|| ch.send(receiver, &[IoSlice::new(&msg(0, seq))]))?;
            }
            return Ok(());
        }
        let ch = job.open_shared(0)?;
        let got = Mutex::new(Vec::<(char, u64)>::new()); // (thread, seq), in delivery order
        let received = AtomicUsize::new(0);
        let (held, release) = (AtomicBool::new(false), AtomicBool::new(false));
        std::thread::scope(|s| -> skifch::Result<()> {
            // Thread A: takes the first message and keeps it, checking its bytes, until told.
            let a = s.spawn(|| -> skifch::Result<()> {
                let m = ch.recv(Some(PATIENCE))?;
                assert_eq!((parse(&m.to_vec()), m.src()), ((0, 0), sender));
                received.fetch_add(1, Ordering::SeqCst);
                held.store(true, Ordering::SeqCst);
                while !release.load(Ordering::SeqCst) {
                    assert_eq!(parse(&m.to_vec()), (0, 0), "the held message changed");
                    std::thread::sleep(Duration::from_micros(200));
                }
                assert_eq!(parse(&m.to_vec()), (0, 0), "the held message changed");
                Ok(()) // dropping `m` completes it
            });
            let t0 = Instant::now();
            while !held.load(Ordering::SeqCst) {
                assert!(t0.elapsed() < PATIENCE, "thread A got no message");
                std::thread::yield_now();
            }
            // Threads B and C: receive until every message of the test has arrived.
            let receivers: Vec<_> = ['B', 'C']
                .into_iter()
                .map(|name| {
                    let (ch, got, received) = (&ch, &got, &received);
                    s.spawn(move || -> skifch::Result<()> {
                        let t0 = Instant::now();
                        while received.load(Ordering::SeqCst) < TOTAL as usize {
                            assert!(t0.elapsed() < 3 * PATIENCE, "{name}: stuck");
                            match ch.recv(Some(Duration::from_millis(5))) {
                                Ok(m) => {
                                    let (_, seq) = parse(&m.to_vec());
                                    got.lock().unwrap().push((name, seq));
                                    received.fetch_add(1, Ordering::SeqCst);
                                }
                                Err(Error::TimedOut) => {}
                                Err(e) => return Err(e),
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            // Rank 0 reports the stall: by then B and C have had everything that fitted.
            let stalled = ctl.recv_timeout(PATIENCE)?.to_vec();
            let fitted = u64::from_le_bytes(stalled[..].try_into().unwrap());
            let t0 = Instant::now();
            while received.load(Ordering::SeqCst) < fitted as usize {
                assert!(
                    t0.elapsed() < PATIENCE,
                    "B and C did not get all that fitted"
                );
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(20)); // nothing more may come
            {
                let got = got.lock().unwrap();
                let seqs: BTreeSet<u64> = got.iter().map(|&(_, s)| s).collect();
                assert_eq!(seqs.len(), got.len(), "a message came twice: {got:?}");
                assert_eq!(seqs, (1..fitted).collect(), "before the release");
            }
            release.store(true, Ordering::SeqCst);
            a.join().unwrap()?;
            ctl.send_all(job.addr(0, 1), &[IoSlice::new(b"released")])?;
            for r in receivers {
                r.join().unwrap()?;
            }
            Ok(())
        })?;
        let got = got.into_inner().unwrap();
        let seqs: BTreeSet<u64> = got.iter().map(|&(_, s)| s).collect();
        assert_eq!(seqs.len(), got.len(), "a message came twice");
        assert_eq!(seqs, (1..TOTAL).collect(), "lost messages");
        // One lane is read in order, so each thread sees increasing numbers.
        for name in ['B', 'C'] {
            let mine: Vec<u64> = got.iter().filter(|g| g.0 == name).map(|g| g.1).collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]), "{name}: {mine:?}");
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn threads_sending_through_one_shared_channel_keep_their_order() {
    const SENDERS: u8 = 3;
    const EACH: u64 = 500;
    local::run_with(params(), |job| {
        if job.rank() == 0 {
            let ch = job.open_shared(0)?;
            let dst = NetAddr::new(1, 0);
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..SENDERS)
                    .map(|tag| {
                        let ch = &ch;
                        s.spawn(move || -> skifch::Result<()> {
                            for seq in 0..EACH {
                                // The lane (4 KiB) fills often: back-pressure on every thread.
                                send_patiently(|| ch.send(dst, &[IoSlice::new(&msg(tag, seq))]))?;
                            }
                            Ok(())
                        })
                    })
                    .collect();
                handles.into_iter().try_for_each(|h| h.join().unwrap())
            })?;
            return Ok(());
        }
        let ch = job.open(0)?;
        let mut next = [0u64; SENDERS as usize];
        for _ in 0..SENDERS as u64 * EACH {
            let m = ch.recv_timeout(PATIENCE)?;
            assert_eq!(m.src(), NetAddr::new(0, 0));
            let (tag, seq) = parse(&m.to_vec());
            let want = next.get_mut(tag as usize).expect("a known sender thread");
            assert_eq!(seq, *want, "sender thread {tag} out of order");
            *want += 1;
        }
        assert_eq!(next, [EACH; SENDERS as usize]);
        assert!(matches!(ch.try_recv(), Err(Error::WouldBlock)));
        Ok(())
    })
    .unwrap();
}
