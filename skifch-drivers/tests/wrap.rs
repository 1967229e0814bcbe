//! The wrapper drivers (`skifch_drivers::wrap`) in-process: the conformance suite passes
//! over the fault injector (forced partial sends and would-blocks, a slow consumer), a rank
//! lost at message N is reported to its peers as `PeerLost` (not a hang), the tracer logs
//! what went through, and the `SKIFCH_FAULT` / `SKIFCH_TRACE` syntax.
use std::io::IoSlice;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use skifch::conformance::{self, Config};
use skifch::local::{self, LocalJob};
use skifch::{Error, NetAddr};
use skifch_drivers::wrap::{
    Death, FaultConfig, FaultDriver, Loss, TraceConfig, TraceDriver, TraceSink, Trigger,
};

fn faulty() -> FaultConfig {
    FaultConfig {
        seed: 11,
        partial: Trigger::Rate(0.3),
        would_block: Trigger::Rate(0.2),
        recv_would_block: Trigger::Every(3),
        ..FaultConfig::none()
    }
}

#[test]
fn conformance_over_forced_partial_sends_and_would_blocks() {
    let cfg = faulty();
    local::run(3, move |job: LocalJob| {
        conformance::run_all(&FaultDriver::wrap(&job, cfg.clone()), &Config::small())
    })
    .unwrap();
}

#[test]
fn conformance_over_a_slow_consumer() {
    let cfg = FaultConfig {
        slow: Trigger::Every(7),
        recv_delay: Duration::from_micros(200),
        complete_delay: Duration::from_micros(50),
        would_block: Trigger::Every(5),
        ..FaultConfig::none()
    };
    local::run(2, move |job: LocalJob| {
        conformance::run_all(&FaultDriver::wrap(&job, cfg.clone()), &Config::small())
    })
    .unwrap();
}

#[test]
fn forced_faults_are_deterministic_per_seed() {
    // The same seed cuts the same sends at the same places.
    let lens = |seed: u64| {
        let cfg = FaultConfig {
            seed,
            partial: Trigger::Rate(0.5),
            ..FaultConfig::none()
        };
        local::run(2, move |job: LocalJob| {
            let job = FaultDriver::wrap(&job, cfg.clone());
            let ch = job.open(0)?;
            let data = [7u8; 100];
            let mut got = Vec::new();
            for _ in 0..40 {
                let k = ch.send(ch.addr(), &[IoSlice::new(&data)])?;
                got.push(k);
                drop(ch.recv()?);
            }
            Ok(got)
        })
        .unwrap()
    };
    let a = lens(5);
    assert_eq!(a, lens(5));
    assert_ne!(a, lens(6));
    assert!(
        a[0].iter().any(|&k| k < 100) && a[0].contains(&100),
        "{a:?}"
    );
}

#[test]
fn a_rank_lost_at_message_n_is_peer_lost_not_a_hang() {
    const N: u64 = 25;
    let cfg = FaultConfig {
        lose: Some(Loss {
            rank: 2,
            after: N,
            how: Death::Panic,
        }),
        ..faulty()
    };
    // Rank 2 streams to rank 0 and dies at its 26th message; rank 1 sends to rank 2
    // (which never receives) until that fails; rank 0 receives until that fails.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let out = seen.clone();
    let t0 = Instant::now();
    let r = local::run(3, move |job: LocalJob| {
        let job = FaultDriver::wrap(&job, cfg.clone());
        let ch = job.open(0)?;
        let deadline = Instant::now() + Duration::from_secs(20);
        let outcome = match job.rank() {
            2 => loop {
                ch.send_all(NetAddr::new(0, 0), &[IoSlice::new(b"stream")])?;
            },
            1 => loop {
                match ch.send(NetAddr::new(2, 0), &[IoSlice::new(b"x")]) {
                    Ok(_) | Err(Error::WouldBlock) => std::thread::sleep(Duration::from_millis(1)),
                    Err(e) => break (0, e),
                }
                if Instant::now() > deadline {
                    break (0, Error::TimedOut);
                }
            },
            _ => {
                let mut got = 0u64;
                loop {
                    match ch.recv_timeout(Duration::from_secs(10)) {
                        Ok(m) => {
                            got += 1;
                            drop(m)
                        }
                        Err(e) => break (got, e),
                    }
                }
            }
        };
        out.lock()
            .unwrap()
            .push((job.rank(), outcome.0, outcome.1.to_string()));
        Ok(())
    });
    let err = r.expect_err("rank 2 died");
    assert!(err.to_string().contains("rank 2 panicked"), "{err}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "{seen:?}");
    let lost = Error::PeerLost { rank: 2 }.to_string();
    for (rank, got, e) in seen.iter() {
        assert_eq!(*e, lost, "rank {rank}");
        if *rank == 0 {
            // Whole messages only (send_all of 6 bytes: a cut send is two messages), all
            // that rank 2 sent before its 26th message.
            assert!(*got >= 1 && *got <= N, "rank 0 got {got}");
        }
    }
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
}

#[test]
fn the_tracer_logs_sends_receives_and_completions() {
    let dir = std::env::temp_dir().join(format!("skifch-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = TraceConfig {
        sink: TraceSink::File(dir.join("t.%r")),
        bytes: 4,
        would_block: false,
    };
    local::run(2, move |job: LocalJob| {
        let job = TraceDriver::wrap(&job, &cfg)?;
        let ch = job.open(1)?;
        if job.rank() == 0 {
            ch.send_all(
                NetAddr::new(1, 1),
                &[IoSlice::new(b"hel"), IoSlice::new(b"lo")],
            )?;
        } else {
            let m = ch.recv()?;
            assert_eq!(m.to_vec(), b"hello");
        }
        Ok(())
    })
    .unwrap();
    let t0 = std::fs::read_to_string(dir.join("t.0")).unwrap();
    let t1 = std::fs::read_to_string(dir.join("t.1")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(t0.contains(" r0 p1 open\n"), "{t0}");
    assert!(
        t0.contains(" r0 p1 send 1:1 5 B prefix -> 5 | 68 65 6c 6c\n"),
        "{t0}"
    );
    assert!(t0.contains(" r0 p1 close\n"), "{t0}");
    assert!(t1.contains(" r1 p1 recv 0:1 5 B 1 seg tok "), "{t1}");
    assert!(t1.contains(" | 68 65 6c 6c\n"), "{t1}");
    assert!(t1.contains(" r1 p1 complete tok "), "{t1}");
    assert!(t0
        .lines()
        .chain(t1.lines())
        .all(|l| l.starts_with("skifch-trace ")));
}

#[test]
fn conformance_over_the_tracer_and_the_fault_injector() {
    let dir = std::env::temp_dir().join(format!("skifch-trace-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("all");
    let tcfg = TraceConfig {
        sink: TraceSink::File(path.clone()),
        bytes: 0,
        would_block: true,
    };
    let fcfg = faulty();
    local::run(2, move |job: LocalJob| {
        let job = FaultDriver::wrap(&job, fcfg.clone());
        let job = TraceDriver::wrap(&job, &tcfg)?;
        conformance::run_all(&job, &Config::small())
    })
    .unwrap();
    let t = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(t
        .lines()
        .any(|l| l.ends_with("-> would block: no room at the receiver / no message waiting")));
    assert!(t
        .lines()
        .any(|l| l.contains(" r1 ") && l.contains(" send ")));
}

#[test]
fn fault_and_trace_specs_parse() {
    let c = FaultConfig::parse(
        "seed=9, partial=0.25,wouldblock=every:7,recv_wouldblock=never,slow=always,recv_delay=50,complete_delay=5,recv_hold=7,lose=3@100,death=panic",
    )
    .unwrap();
    assert_eq!(
        c,
        FaultConfig {
            seed: 9,
            partial: Trigger::Rate(0.25),
            would_block: Trigger::Every(7),
            recv_would_block: Trigger::Never,
            slow: Trigger::Every(1),
            recv_delay: Duration::from_micros(50),
            complete_delay: Duration::from_micros(5),
            recv_hold: Duration::from_micros(7),
            lose: Some(Loss {
                rank: 3,
                after: 100,
                how: Death::Panic
            }),
        }
    );
    assert_eq!(
        FaultConfig::parse("lose=1@5").unwrap().lose.unwrap().how,
        Death::Kill
    );
    assert!(FaultConfig::parse("").unwrap().is_none());
    assert!(!FaultConfig::parse("wouldblock=0.1").unwrap().is_none());
    for bad in [
        "partial=2",
        "wouldblock=every:x",
        "lose=1",
        "speed=3",
        "death=maybe",
        "x",
    ] {
        let e = FaultConfig::parse(bad).unwrap_err().to_string();
        assert!(e.contains("SKIFCH_FAULT"), "{bad}: {e}");
    }
    let t = TraceConfig::parse("/tmp/x.%r,bytes=8,wouldblock").unwrap();
    assert_eq!(t.sink, TraceSink::File("/tmp/x.%r".into()));
    assert_eq!((t.bytes, t.would_block), (8, true));
    assert_eq!(TraceConfig::parse("stderr").unwrap(), TraceConfig::stderr());
    assert!(TraceConfig::parse("stderr,colour").is_err());
    assert!(TraceConfig::parse("").is_err());
}

#[test]
fn the_wrappers_forward_the_rma_capability() {
    local::run(2, |job: LocalJob| {
        let direct = job.rma().is_some();
        let f = FaultDriver::wrap(&job, faulty());
        let t = TraceDriver::wrap(&f, &TraceConfig::stderr())?;
        assert_eq!(f.rma().is_some(), direct);
        assert_eq!(t.rma().is_some(), direct);
        Ok(())
    })
    .unwrap();
}

#[test]
fn conformance_over_the_in_process_lanes_and_a_rank_lost_there() {
    // The same over the lane transport (skifch_drivers::inproc, small lanes: back-pressure
    // and wrap-around often), then peer loss injected at message N on it.
    use skifch_drivers::inproc::{self, InprocJob};
    use skifch_drivers::shm::Params;
    let p = |nranks| Params {
        nranks,
        nports: 2,
        lane_bytes: 16 << 10,
    };
    let cfg = faulty();
    inproc::run_with(p(3), move |job: InprocJob| {
        conformance::run_all(&FaultDriver::wrap(&job, cfg.clone()), &Config::small())
    })
    .unwrap();
    let cfg = FaultConfig {
        lose: Some(Loss {
            rank: 1,
            after: 10,
            how: Death::Panic,
        }),
        ..faulty()
    };
    let t0 = Instant::now();
    let r = inproc::run_with(p(2), move |job: InprocJob| {
        let job = FaultDriver::wrap(&job, cfg.clone());
        let ch = job.open(0)?;
        if job.rank() == 1 {
            loop {
                ch.send_all(NetAddr::new(0, 0), &[IoSlice::new(b"stream")])?;
            }
        }
        loop {
            drop(ch.recv_timeout(Duration::from_secs(10))?);
        }
    });
    let e = r.map(|_: Vec<()>| ()).unwrap_err();
    // Rank 0's error comes first (rank order): PeerLost, not a timeout.
    assert_eq!(e.to_string(), Error::PeerLost { rank: 1 }.to_string());
    assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
}

/// A peer's last message still in flight when its goodbye is seen (a fabric's goodbye on
/// its control connection can overtake the data): a wait on that peer takes the message
/// instead of ending `Unreachable` at the first probe that finds the peer closed
/// (`skifch::proto`'s wait looks a second time, a probe period later). The message is held
/// 0.75 s: past the first probe (0.5 s into the wait), before the second (1 s). Checked
/// to fail with the second look removed.
#[test]
fn a_wait_takes_a_closed_peers_last_message_still_in_flight() {
    use skifch::proto::{Am, Endpoint, Io};
    const H_LAST: u8 = 1;
    let cfg = FaultConfig {
        recv_hold: Duration::from_millis(750),
        ..FaultConfig::none()
    };
    let seen = Arc::new(Mutex::new(None));
    let out = seen.clone();
    local::run(2, move |plain: LocalJob| {
        let job = FaultDriver::wrap(&plain, cfg.clone());
        let mut ep = Endpoint::open_with(&job, 3, 0u32)?;
        ep.register(H_LAST, |n: &mut u32, _: &mut Io<'_, _>, _: &Am<'_>| {
            *n += 1;
            Ok(())
        })?;
        // Both endpoints open and registered (a barrier on another port, nothing held).
        Endpoint::open(&plain, 2)?.barrier()?;
        if job.rank() == 1 {
            // The last message, then the goodbye: the port closes with the endpoint.
            ep.send(0, H_LAST, 0, &[], b"last")?;
            return Ok(());
        }
        let t0 = Instant::now();
        let r = ep.progress_until_peer(|ep| *ep.ctx() == 1, Some(Duration::from_secs(10)), Some(1));
        *out.lock().unwrap() = Some((r, t0.elapsed(), job.driver().stats().held));
        Ok(())
    })
    .unwrap();
    let (r, took, held) = seen.lock().unwrap().take().expect("rank 0 waited");
    r.unwrap_or_else(|e| panic!("the held message was lost: {e} after {took:?} ({held} held)"));
    assert_eq!(held, 1, "the last message was held");
    assert!(
        took >= Duration::from_millis(700),
        "taken before it was released: {took:?}"
    );
}
