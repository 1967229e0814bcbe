//! A receiver waiting over the fabric sleeps: once its port has taken a message, a wait
//! for a late one turns a bounded number of times (each turn a sleep of up to a
//! millisecond that a message ends), not once every few microseconds.
//!
//! Over libfabric 1.17's `net` the completion queue's wait descriptor stays readable after
//! its first completion (`fi_trywait` never drains the provider's signal), so a waiter
//! sleeping on it came back at once, every time: the wait spun through its sleep path
//! (`ofi::fabric::Ep::sleep_fd`, `docs/results-2026-11-29-ofi-syscalls`).
use std::io::IoSlice;
use std::time::{Duration, Instant};

use skifch::wait::{wait_until_by, WaitPolicy};
use skifch::{Channel, NetAddr, Port};
use skifch_drivers::ofi::{threads, Config};

const WAIT: Duration = Duration::from_secs(60);
/// How long rank 0 keeps rank 1 waiting.
const LATE: Duration = Duration::from_millis(300);

/// Rank 1's polls per millisecond of a wait for a message sent `LATE` after its first
/// one, and whether that message then arrived intact.
fn polls_per_ms(cfg: &Config) -> f64 {
    let out = threads::run(2, cfg, move |job| {
        let ch = job.open(0)?;
        let peer = NetAddr::new((1 - job.rank()) as u16, 0);
        if job.rank() == 0 {
            ch.send_whole_wait(peer, &[IoSlice::new(b"one")])?;
            ch.recv_timeout(WAIT)?.complete(); // rank 1 has taken "one"
            std::thread::sleep(LATE);
            ch.send_whole_wait(peer, &[IoSlice::new(b"two")])?;
            ch.recv_timeout(WAIT)?.complete();
            return Ok(0.0);
        }
        let m = ch.recv_timeout(WAIT)?;
        assert_eq!(m.to_vec(), b"one");
        m.complete();
        ch.send_whole_wait(peer, &[IoSlice::new(b"go")])?;
        let mut port = ch.into_port();
        let waiter = port.waiter();
        let mut polls = 0u64;
        let t0 = Instant::now();
        // Block: no spinning first, every turn of the wait is a sleep.
        wait_until_by(
            WaitPolicy::Block,
            &waiter,
            || Some(Instant::now() + WAIT),
            || {
                polls += 1;
                port.ready()
            },
        )?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        let ch = Channel::new(port, WaitPolicy::Block);
        let m = ch.recv_timeout(WAIT)?;
        assert_eq!(m.to_vec(), b"two");
        m.complete();
        ch.send_whole_wait(peer, &[IoSlice::new(b"done")])?;
        Ok(polls as f64 / ms)
    })
    .expect("both messages arrive");
    out[1]
}

/// A sleep of up to 1 ms per turn, two polls a turn: about 2 per ms, a few more when
/// traffic wakes it. Spinning through the sleep path: hundreds per ms.
fn assert_sleeps(cfg: &Config) {
    let rate = polls_per_ms(cfg);
    eprintln!("polls per ms: {rate:.2}");
    assert!(
        rate < 20.0,
        "{rate:.1} polls per ms of waiting: the waiter does not sleep"
    );
}

#[test]
fn a_receiver_waiting_over_net_sleeps() {
    assert_sleeps(&Config {
        domain: Some("lo".into()),
        ..Config::default()
    });
}

#[test]
fn a_receiver_waiting_over_rxm_sleeps() {
    assert_sleeps(&Config {
        provider: Some("tcp;ofi_rxm".into()),
        domain: Some("lo".into()),
        ..Config::default()
    });
}
