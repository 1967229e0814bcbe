//! Active messages (`skifch::proto`) on the in-process job: inline and long messages,
//! request/reply with data landing in caller buffers, full lanes, handler rules, peer loss,
//! and the progress thread.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use skifch::local::Params;
use skifch::local::{self, LocalJob};
use skifch::proto::{Am, Endpoint, Io, Landing, Phase, ProgressThread};
use skifch::{Error, Port, Result};

const PORT: u32 = 1;
const H_COUNT: u8 = 1;
const H_GET: u8 = 2;
const H_PUT: u8 = 3;
const H_WAITS: u8 = 4;

fn params(n: u32, lane: usize) -> Params {
    Params {
        nranks: n,
        nports: 2,
        lane_bytes: lane,
    }
}

/// A byte pattern that depends on the rank and the offset.
fn pattern(seed: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(seed * 7) as u8)
        .collect()
}

/// Handlers used by most tests:
/// * H_COUNT: checks per-sender sequence numbers (arg) and a payload of `args[0]` bytes
///   of `pattern(src ^ arg)`; counts messages and bytes.
/// * H_GET: replies with `pattern(me, args[0])` (a "get" of any length).
/// * H_PUT: long or inline; verifies the data (`pattern(src, len)`) and replies its length.
///
/// Their state is the endpoint's context.
#[derive(Default)]
struct State {
    next_seq: Vec<u64>,
    msgs: usize,
    bytes: usize,
}

/// An endpoint on `PORT` with the handlers above.
fn open(job: &LocalJob) -> Result<Endpoint<impl Port, State>> {
    let st = State {
        next_seq: vec![0; job.size() as usize],
        ..State::default()
    };
    let mut ep = Endpoint::open_with(job, PORT, st)?;
    install(&mut ep);
    Ok(ep)
}

fn install<P: Port>(ep: &mut Endpoint<P, State>) {
    ep.register(H_COUNT, |s: &mut State, _: &mut Io<'_, P>, am: &Am<'_>| {
        let want = s.next_seq[am.src() as usize];
        s.next_seq[am.src() as usize] += 1;
        if am.arg() as u64 != want {
            return Err(Error::InvalidArgument(
                format!("out of order: got {} want {want}", am.arg()).into(),
            ));
        }
        let len = am.args()[0] as usize;
        let data = match am.phase() {
            Phase::Whole => am.payload().to_vec(),
            Phase::LongStart { total } => {
                am.place(Landing::vec(total as usize));
                // Counted at LongDone.
                s.next_seq[am.src() as usize] -= 1;
                return Ok(());
            }
            Phase::LongDone { .. } => am.take_landing().and_then(Landing::into_vec).unwrap(),
        };
        if data != pattern(am.src() ^ am.arg(), len) {
            return Err(Error::InvalidArgument("payload mismatch".into()));
        }
        s.msgs += 1;
        s.bytes += len;
        Ok(())
    })
    .unwrap();
    ep.register(H_GET, |_: &mut State, io: &mut Io<'_, P>, am: &Am<'_>| {
        let (to, me) = (am.reply_to().unwrap(), io.rank());
        io.reply(to, me, &[], &pattern(me, am.args()[0] as usize))
    })
    .unwrap();
    ep.register(H_PUT, |_: &mut State, io: &mut Io<'_, P>, am: &Am<'_>| {
        let data = match am.phase() {
            Phase::Whole => am.payload().to_vec(),
            Phase::LongStart { total } => {
                am.place(Landing::vec(total as usize));
                return Ok(());
            }
            Phase::LongDone { .. } => am.take_landing().and_then(Landing::into_vec).unwrap(),
        };
        let ok = data == pattern(am.src(), data.len());
        io.reply(am.reply_to().unwrap(), ok as u32, &[data.len() as u64], &[])
    })
    .unwrap();
}

/// Every rank sends `count` messages of sizes cycling through `sizes` to every rank
/// (itself included) while answering gets; then checks what arrived.
fn all_to_all(job: LocalJob, count: u32, sizes: &[usize]) -> Result<()> {
    let mut ep = open(&job)?;
    let (me, n) = (ep.rank(), ep.size());
    ep.barrier()?;
    let mut expect_bytes = 0;
    for k in 0..count {
        for d in 0..n {
            let dst = (me + d) % n;
            let len = sizes[(k as usize + d as usize) % sizes.len()];
            ep.send(dst, H_COUNT, k, &[len as u64], &pattern(me ^ k, len))?;
        }
        // Interleave a get from the next rank: the reply may be long.
        let peer = (me + 1 + k) % n;
        let len = sizes[k as usize % sizes.len()];
        let mut buf = vec![0u8; len];
        let r = ep.call(peer, H_GET, 0, &[len as u64], &[], &mut buf)?;
        assert_eq!((r.arg, r.len, r.truncated), (peer, len as u64, false));
        assert_eq!(buf, pattern(peer, len));
    }
    for k in 0..count {
        for d in 0..n {
            expect_bytes += sizes[(k as usize + d as usize) % sizes.len()];
        }
    }
    let want_msgs = (count * n) as usize;
    ep.progress_until(
        |ep| ep.ctx().msgs == want_msgs,
        Some(Duration::from_secs(60)),
    )?;
    assert_eq!(ep.ctx().bytes, expect_bytes);
    ep.barrier()?;
    Ok(())
}

#[test]
fn inline_and_long_messages_in_order_1_to_5_ranks() {
    for n in 1..=5 {
        local::run_with(params(n, 64 << 10), |job| {
            all_to_all(job, 20, &[0, 1, 8, 100, 5000, 70_000, 300_000])
        })
        .unwrap();
    }
}

#[test]
fn full_lanes_do_not_deadlock_or_lose() {
    // 1 KiB lanes: every message of more than ~1000 bytes goes in ~250-byte chunks, and all
    // ranks flood each other at once, so sends block on full lanes all the time.
    for n in [2, 3, 4] {
        local::run_with(params(n, 1 << 10), |job| {
            all_to_all(job, 30, &[3, 200, 900, 4000, 20_000])
        })
        .unwrap();
    }
}

#[test]
fn requests_with_long_payloads_and_replies_from_handlers() {
    // Puts whose data is long (placed by the handler) and whose reply is sent from the
    // LongDone phase, many outstanding at once.
    local::run_with(params(3, 4 << 10), |job| {
        let mut ep = open(&job)?;
        let (me, n) = (ep.rank(), ep.size());
        ep.barrier()?;
        let mut ids = Vec::new();
        let data = pattern(me, 50_000);
        for k in 0..40usize {
            let len = [10, 3000, 50_000][k % 3];
            let dst = (me + 1 + k as u32) % n;
            ids.push((
                len,
                ep.request(dst, H_PUT, 0, &[], &data[..len], Landing::discard())?,
            ));
        }
        for (len, id) in ids {
            let r = ep.wait(id)?;
            assert_eq!((r.arg, r.args[0]), (1, len as u64));
        }
        ep.barrier()
    })
    .unwrap();
}

#[test]
fn reply_longer_than_the_buffer_is_truncated_not_overrun() {
    local::run(2, |job| {
        let mut ep = open(&job)?;
        ep.barrier()?;
        let peer = 1 - ep.rank();
        let mut buf = vec![0xAAu8; 200_001];
        let r = ep.call(peer, H_GET, 0, &[150_000], &[], &mut buf[..100_000])?;
        assert!(r.truncated);
        assert_eq!(r.len, 150_000);
        assert_eq!(&buf[..100_000], &pattern(peer, 100_000)[..]);
        assert!(buf[100_000..].iter().all(|&b| b == 0xAA));
        ep.barrier()
    })
    .unwrap();
}

#[test]
fn handler_rules_and_bad_input() {
    local::run(2, |job| {
        let mut ep = open(&job)?;
        // A handler's failure is kept for the application (a handler cannot wait at all:
        // `Io` has no wait, see the compile-fail example in the proto docs).
        ep.register(H_WAITS, |_: &mut State, _: &mut Io<'_, _>, _: &Am<'_>| {
            Err(Error::InvalidArgument("refused by the handler".into()))
        })?;
        assert!(matches!(
            ep.register(0xF5, |_: &mut State, _: &mut Io<'_, _>, _: &Am<'_>| Ok(())),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            ep.register(H_GET, |_: &mut State, _: &mut Io<'_, _>, _: &Am<'_>| Ok(())),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            ep.send(0, 1, 0, &[1, 2, 3, 4], &[]),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            ep.send(7, 1, 0, &[], &[]),
            Err(Error::Unreachable { .. })
        ));
        ep.barrier()?;
        if ep.rank() == 0 {
            // Unregistered handler: the request fails with the target's explanation.
            let id = ep.request(1, 77, 0, &[], b"x", Landing::discard())?;
            match ep.wait(id) {
                Err(Error::InvalidArgument(m)) => assert!(m.contains("no handler 77"), "{m}"),
                other => panic!("{other:?}"),
            }
            ep.send(1, H_WAITS, 0, &[], &[])?;
        } else {
            // The target reports each failure from `poll`, in order (waits do not).
            let mut errs = Vec::new();
            ep.progress_until(
                |ep| {
                    errs.extend(ep.take_error());
                    errs.len() == 2
                },
                Some(Duration::from_secs(5)),
            )?;
            assert!(
                matches!(&errs[0], Error::InvalidArgument(m) if m.contains("unregistered")),
                "{errs:?}"
            );
            assert!(
                matches!(&errs[1], Error::InvalidArgument(m) if m.contains("refused by the handler")),
                "{errs:?}"
            );
            assert!(ep.poll().is_ok());
        }
        ep.barrier()
    })
    .unwrap();
}

#[test]
fn peer_lost_during_a_wait_is_an_error_not_a_hang() {
    let seen: Arc<Mutex<Option<Result<()>>>> = Arc::new(Mutex::new(None));
    let s = seen.clone();
    let t0 = Instant::now();
    let r = local::run(2, move |job| {
        let mut ep = Endpoint::open(&job, PORT)?;
        ep.register(H_GET, |_: &mut (), _: &mut Io<'_, _>, _: &Am<'_>| Ok(()))?; // never replies
        ep.barrier()?;
        if ep.rank() == 1 {
            std::thread::sleep(Duration::from_millis(100));
            panic!("rank 1 dies");
        }
        let mut buf = [0u8; 8];
        let r = ep.call(1, H_GET, 0, &[], &[], &mut buf).map(|_| ());
        *s.lock().unwrap() = Some(r);
        Ok(())
    });
    assert!(r.is_err());
    let r = seen.lock().unwrap().take().expect("rank 0 finished");
    assert!(matches!(r, Err(Error::PeerLost { rank: 1 })), "{r:?}");
    assert!(t0.elapsed() < Duration::from_secs(10));
}

#[test]
fn blocked_sender_gives_up_when_the_receiver_dies() {
    let seen: Arc<Mutex<Option<Result<()>>>> = Arc::new(Mutex::new(None));
    let s = seen.clone();
    let r = local::run_with(params(2, 1 << 10), move |job| {
        let mut ep = Endpoint::open(&job, PORT)?;
        ep.barrier()?;
        if ep.rank() == 1 {
            std::thread::sleep(Duration::from_millis(100));
            panic!("rank 1 dies without reading");
        }
        // Long enough to fill the 1 KiB lane many times over.
        let r = ep.send(1, H_COUNT, 0, &[], &vec![0u8; 1 << 20]);
        *s.lock().unwrap() = Some(r);
        Ok(())
    });
    assert!(r.is_err());
    let r = seen.lock().unwrap().take().expect("rank 0 finished");
    // The dying rank's port closes as it unwinds, or it is reported lost: either way the
    // send ends.
    assert!(
        matches!(
            r,
            Err(Error::PeerLost { rank: 1 } | Error::Unreachable { .. })
        ),
        "{r:?}"
    );
}

#[test]
fn progress_thread_serves_requests_while_the_target_computes() {
    let served = Arc::new(std::sync::atomic::AtomicBool::new(false));
    local::run(2, move |job| {
        let ep = Arc::new(Mutex::new(open(&job)?));
        ep.lock().unwrap().barrier()?;
        if job.rank() == 1 {
            let pt = ProgressThread::start(ep.clone(), Duration::from_micros(20))?;
            // "Compute" without calling the library until rank 0 has its replies (bounded).
            let t0 = Instant::now();
            while !served.load(Ordering::Acquire) && t0.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(pt.is_running());
            pt.stop()?;
        } else {
            for k in 0..50 {
                let mut buf = vec![0u8; 1000 * k];
                let mut g = ep.lock().unwrap();
                g.call(1, H_GET, 0, &[buf.len() as u64], &[], &mut buf)?;
                assert_eq!(buf, pattern(1, buf.len()));
            }
            served.store(true, Ordering::Release);
        }
        let r = ep.lock().unwrap().barrier();
        r
    })
    .unwrap();
}

#[test]
fn deferred_replies_timeouts_and_cancel() {
    // The target keeps the reply address and answers later from application code (as an
    // MPI receiver answers a rendezvous once its receive is posted). The requester times
    // out, cancels, and a reply that still comes is dropped without touching its buffer.
    local::run(2, |job| {
        // The context: the reply addresses kept for later.
        let mut ep = Endpoint::open_with(&job, PORT, Vec::<skifch::proto::ReplyTo>::new())?;
        ep.register(
            H_GET,
            |kept: &mut Vec<_>, _: &mut Io<'_, _>, am: &Am<'_>| {
                kept.push(am.reply_to().unwrap());
                Ok(())
            },
        )?;
        ep.barrier()?;
        if ep.rank() == 0 {
            let mut first = vec![0u8; 4];
            let id = ep.request(1, H_GET, 0, &[], &[], Landing::vec(4))?;
            let r = ep.wait_timeout(id, Some(Duration::from_millis(50)));
            assert!(matches!(r, Err(Error::TimedOut)), "{r:?}");
            ep.cancel(id);
            assert!(matches!(ep.test(id), Err(Error::InvalidArgument(_))));
            ep.barrier()?; // 1: the target answers the cancelled request now
                           // A fresh request must get its own reply, not the stale one.
            let r = ep.call(1, H_GET, 0, &[], &[], &mut first)?;
            assert_eq!((r.arg, &first[..]), (2, &b"new!"[..]));
        } else {
            ep.barrier()?; // 1
            let stale = ep.ctx_mut().remove(0); // the oldest (the new one may be here already)
            ep.reply(stale, 1, &[], b"old!")?;
            ep.progress_until(|ep| !ep.ctx().is_empty(), None)?;
            let to = ep.ctx_mut().remove(0);
            ep.reply(to, 2, &[], b"new!")?;
        }
        ep.barrier()?;
        assert!(ep.take_error().is_none());
        Ok(())
    })
    .unwrap();
}

#[test]
fn non_blocking_sends_queue_and_flush() {
    // 1 KiB lanes: most of the 200 messages do not fit when sent, so they are queued in
    // order behind each other; the receiver checks the order and the bytes.
    local::run_with(params(2, 1 << 10), |job| {
        let mut ep = open(&job)?;
        ep.barrier()?;
        if ep.rank() == 0 {
            for k in 0..200u32 {
                let len = [16, 300, 3000][k as usize % 3];
                ep.send_nb(1, H_COUNT, k, &[len as u64], &pattern(k, len))?;
            }
            assert!(
                ep.queued() > 0,
                "nothing was queued: the test needs smaller lanes"
            );
            ep.flush()?;
            assert_eq!(ep.queued(), 0);
        } else {
            ep.progress_until(|ep| ep.ctx().msgs == 200, Some(Duration::from_secs(60)))?;
        }
        ep.barrier()?;
        assert!(ep.take_error().is_none());
        Ok(())
    })
    .unwrap();
}

#[test]
fn progress_thread_ends_with_peer_lost() {
    let seen: Arc<Mutex<Option<Result<()>>>> = Arc::default();
    let s = seen.clone();
    let r = local::run(2, move |job| {
        let ep = Arc::new(Mutex::new(Endpoint::open(&job, PORT)?));
        ep.lock().unwrap().barrier()?;
        if job.rank() == 1 {
            std::thread::sleep(Duration::from_millis(50));
            panic!("rank 1 dies");
        }
        let pt = ProgressThread::start(ep.clone(), Duration::from_micros(20))?;
        let t0 = Instant::now();
        while pt.is_running() && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        *s.lock().unwrap() = Some(pt.stop());
        Ok(())
    });
    assert!(r.is_err());
    let r = seen.lock().unwrap().take().expect("rank 0 finished");
    assert!(matches!(r, Err(Error::PeerLost { rank: 1 })), "{r:?}");
}

#[test]
fn a_peer_that_finalizes_without_answering_ends_the_wait() {
    // Rank 1 takes the request and leaves normally (no crash: nothing reports it lost);
    // rank 0's wait notices the closed endpoint within about a second.
    local::run(2, |job| {
        let mut ep = Endpoint::open(&job, PORT)?;
        ep.register(H_GET, |_: &mut (), _: &mut Io<'_, _>, _: &Am<'_>| Ok(()))?; // never replies
        ep.barrier()?;
        if ep.rank() == 1 {
            ep.progress_until(|ep| ep.queued() == 0, None)?;
            std::thread::sleep(Duration::from_millis(100)); // the request has arrived
            let _ = ep.poll()?;
            return Ok(());
        }
        let t0 = Instant::now();
        let mut buf = [0u8; 8];
        let r = ep.call(1, H_GET, 0, &[], &[], &mut buf);
        assert!(matches!(r, Err(Error::Unreachable { .. })), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        Ok(())
    })
    .unwrap();
}

/// `progress_take`: messages before the one taken go to their handlers in order, the taken
/// one never does, later ones stay in the channel for later progress; `PassStop` ends the
/// wait after dispatching.
#[test]
fn progress_take_consumes_one_message_in_order() {
    use skifch::proto::Take;
    const H_SEEN: u8 = 5;
    local::run_with(params(2, 4096), |job: LocalJob| -> Result<()> {
        // The context: the arguments of the messages handled, in order.
        let mut ep = Endpoint::open_with(&job, PORT, Vec::<u32>::new())?;
        ep.register(
            H_SEEN,
            |seen: &mut Vec<u32>, _: &mut Io<'_, _>, am: &Am<'_>| {
                seen.push(am.arg());
                Ok(())
            },
        )?;
        ep.barrier()?;
        // No wait on rank 1 between its "ready" and `progress_take` (a wait would dispatch
        // the messages).
        if job.rank() == 0 {
            ep.progress_until(|ep| !ep.ctx().is_empty(), None)?;
            ep.ctx_mut().clear();
            for a in 1..=5u32 {
                ep.send(1, H_SEEN, a, &[], &a.to_le_bytes())?;
            }
        } else {
            ep.send(0, H_SEEN, 0, &[], &[])?;
            let mut got = None;
            ep.progress_take(
                |am| {
                    if am.arg() == 3 {
                        got = am.payload().as_contiguous().map(|b| b.to_vec());
                        Take::Mine
                    } else {
                        Take::Pass
                    }
                },
                Some(Duration::from_secs(20)),
            )?;
            assert_eq!(got.as_deref(), Some(&3u32.to_le_bytes()[..]));
            assert_eq!(*ep.ctx(), [1, 2]);
            ep.progress_take(
                |am| {
                    if am.arg() == 4 {
                        Take::PassStop
                    } else {
                        Take::Pass
                    }
                },
                Some(Duration::from_secs(20)),
            )?;
            assert_eq!(*ep.ctx(), [1, 2, 4]);
            ep.progress_until(|ep| ep.ctx().len() == 4, None)?;
            assert_eq!(*ep.ctx(), [1, 2, 4, 5]);
        }
        ep.barrier()
    })
    .unwrap();
}
