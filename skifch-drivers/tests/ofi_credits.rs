//! The ofi driver's credit return: credit rides on the replies of a ping-pong, whatever the
//! credit count, and a credit-only message is sent only for a sender that may be short of
//! credit. With 2 credits a credit message used to precede every reply (the receiver owed
//! credit for one batch, half its grant, and sent it at the completion), which tripled the
//! 8-byte latency between two namespaces (15 us against 5.8); now the reply carries it.
//! Counted, not timed: [`OfiPort::credit_messages`].
use std::io::IoSlice;
use std::time::Duration;

use skifch::{Driver, NetAddr};
use skifch_drivers::ofi::{threads, Config};

const WAIT: Duration = Duration::from_secs(60);

fn with_credits(credits: u32, provider: Option<&str>) -> Config {
    Config {
        provider: provider.map(Into::into),
        domain: Some("lo".into()),
        credits,
        ..Config::default()
    }
}

/// `rounds` 8-byte round trips between ranks 0 and 1; each rank's credit messages.
fn ping_pong(cfg: &Config, rounds: u32) -> Vec<u64> {
    threads::run(2, cfg, move |job| {
        let ch = job.open(0)?;
        let peer = NetAddr::new((1 - job.rank()) as u16, 0);
        for i in 0..rounds {
            if job.rank() == 0 {
                ch.send_whole_wait(peer, &[IoSlice::new(&(i as u64).to_le_bytes())])?;
            }
            let m = ch.recv_timeout(WAIT)?;
            assert_eq!(m.to_vec(), (i as u64).to_le_bytes(), "round {i}");
            m.complete();
            if job.rank() == 1 {
                ch.send_whole_wait(peer, &[IoSlice::new(&(i as u64).to_le_bytes())])?;
            }
        }
        Ok(ch.into_port().credit_messages())
    })
    .expect("every round trip completes")
}

/// Rank 0 streams `count` messages of the largest size (one batch each) to rank 1: credit
/// must come back by credit messages (rank 1 sends nothing else), or the sender would stall.
fn stream(cfg: &Config, count: u32) -> u64 {
    let r = threads::run(2, cfg, move |job| {
        let len = job.driver().max_message();
        let ch = job.open(0)?;
        let peer = NetAddr::new((1 - job.rank()) as u16, 0);
        if job.rank() == 0 {
            let mut buf = vec![0x5au8; len];
            for i in 0..count {
                buf[..4].copy_from_slice(&i.to_le_bytes());
                ch.send_whole_wait(peer, &[IoSlice::new(&buf)])?;
            }
            ch.recv_timeout(WAIT)?.complete();
            return Ok(0);
        }
        for i in 0..count {
            let m = ch.recv_timeout(WAIT)?;
            assert_eq!(m.len(), len);
            assert_eq!(m.to_vec()[..4], i.to_le_bytes(), "message {i}");
            m.complete();
        }
        ch.send_whole_wait(peer, &[IoSlice::new(b"done")])?;
        Ok(ch.into_port().credit_messages())
    })
    .expect("the stream arrives");
    r[1]
}

#[test]
fn a_ping_pong_sends_no_credit_message_over_net() {
    for credits in [2, 4, 16] {
        let msgs = ping_pong(&with_credits(credits, None), 2000);
        // Without the credit riding on the replies: about 2000 each with 2 credits.
        assert!(
            msgs.iter().all(|&m| m <= 2),
            "{credits} credits: credit messages per rank {msgs:?} in 2000 round trips"
        );
    }
}

#[test]
fn a_ping_pong_sends_no_credit_message_over_rxm() {
    let msgs = ping_pong(&with_credits(2, Some("tcp;ofi_rxm")), 500);
    assert!(
        msgs.iter().all(|&m| m <= 2),
        "credit messages per rank {msgs:?}"
    );
}

#[test]
fn a_one_way_stream_gets_its_credit_back() {
    for credits in [2, 16] {
        let msgs = stream(&with_credits(credits, None), 300);
        assert!(
            msgs > 0,
            "{credits} credits: no credit message in a one-way stream"
        );
    }
}
