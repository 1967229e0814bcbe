//! The ofi driver's receive buffers come back under load: a receiver that holds messages
//! and completes them out of order (the spec's any-order completion) while a sender streams
//! small messages (many to a receive buffer) and messages of the largest size (one to a
//! buffer) gets every message, in order, and in the end has every buffer posted again —
//! including those a port holds back until its next empty poll (`ofi::port::DEFER`).
use std::io::IoSlice;
use std::time::Duration;

use skifch::{Driver, Error, NetAddr};
use skifch_drivers::ofi::{threads, Config};

const WAIT: Duration = Duration::from_secs(60);

/// Rank 0 sends `count` messages of `len` bytes (a sequence number, then filler) to rank 1,
/// which holds up to `hold` of them and completes each held group in reverse order. Rank
/// 1's credit messages ([`skifch_drivers::ofi::OfiPort::credit_messages`]).
fn stream(cfg: &Config, count: u32, len: Option<usize>, hold: usize) -> u64 {
    let r = threads::run(2, cfg, move |job| {
        let len = len.unwrap_or(job.driver().max_message());
        let ch = job.open(0)?;
        let peer = NetAddr::new((1 - job.rank()) as u16, 0);
        if job.rank() == 0 {
            let mut buf = vec![0xa5u8; len];
            for i in 0..count {
                buf[..4].copy_from_slice(&i.to_le_bytes());
                ch.send_whole_wait(peer, &[IoSlice::new(&buf)])?;
            }
            // Wait for the receiver's word that it has everything (the rank then ends).
            ch.recv_timeout(WAIT)?.complete();
            return Ok(0);
        }
        let mut held = Vec::with_capacity(hold);
        for i in 0..count {
            let m = ch.recv_timeout(WAIT)?;
            assert_eq!(m.len(), len);
            let v = m.to_vec();
            assert_eq!(v[..4], i.to_le_bytes(), "message {i} out of order");
            assert!(v[4..].iter().all(|&b| b == 0xa5), "message {i} damaged");
            held.push(m);
            if held.len() == hold || i + 1 == count {
                while let Some(m) = held.pop() {
                    m.complete();
                }
            }
        }
        drop(held);
        // A receive that finds nothing posts what the port held back.
        assert!(matches!(ch.try_recv(), Err(Error::WouldBlock)));
        ch.send_whole_wait(peer, &[IoSlice::new(b"done")])?;
        let port = ch.into_port();
        assert_eq!(port.unposted(), 0, "receive buffers not posted again");
        Ok(port.credit_messages())
    })
    .expect("every message arrives and every buffer comes back");
    r[1]
}

fn over(provider: Option<&str>) -> Config {
    Config {
        provider: provider.map(Into::into),
        domain: Some("lo".into()),
        ..Config::default()
    }
}

#[test]
fn many_small_messages_over_net() {
    stream(&over(None), 30_000, Some(8), 37);
}

#[test]
fn messages_of_the_largest_size_over_net() {
    // 4 credits of one message each: holding 3 leaves the sender one credit.
    stream(&over(None), 200, None, 3);
}

#[test]
fn many_small_messages_over_rxm() {
    stream(&over(Some("tcp;ofi_rxm")), 30_000, Some(8), 37);
}

#[test]
fn messages_of_the_largest_size_over_rxm() {
    stream(&over(Some("tcp;ofi_rxm")), 500, None, 15);
}

/// Rank 1 sends nothing but credit: a one-way stream of the largest messages (one batch
/// each) gets its credit back by credit messages, or the sender would stall.
#[test]
fn a_one_way_stream_gets_its_credit_back() {
    for credits in [2, 16] {
        let msgs = stream(
            &Config {
                credits,
                ..over(None)
            },
            300,
            None,
            1,
        );
        assert!(
            msgs > 0,
            "{credits} credits: no credit message in a one-way stream"
        );
    }
}
