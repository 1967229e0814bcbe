//! The ofi driver's credit return: credit rides on the replies of a ping-pong, whatever the
//! credit count, and a credit-only message is sent only for a sender that may be short of
//! credit. With 2 credits a credit message used to precede every reply (the receiver owed
//! credit for one batch, half its grant, and sent it at the completion), which tripled the
//! 8-byte latency between two namespaces (15 us against 5.8); now the reply carries it.
//! Counted, not timed: [`OfiPort::credit_messages`]. That a one-way stream still gets its
//! credit back by credit messages is checked with the streams of `ofi_buffers.rs`.
use std::io::IoSlice;
use std::time::Duration;

use skifch::NetAddr;
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
