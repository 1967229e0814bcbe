//! Per-message cost probe of the protocol layer against the raw channel (for
//! `perf stat -e cycles,instructions` or callgrind, which load on a shared machine does not
//! disturb as much as wall time): one rank sends `count` 8-byte messages to itself and
//! handles each at once. `proto_ic raw|raw_drain|am|am_args <count>`; the difference between two
//! counts divided by their difference is the cost of one message.
use std::io::IoSlice;

use skifch::proto::{Am, Endpoint, Io};

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "am".into());
    let count: u64 = std::env::args()
        .nth(2)
        .map_or(1_000_000, |s| s.parse().expect("count"));
    let job = skifch_drivers::init().expect("job");
    let msg = [7u8; 8];
    let mut sum = 0u64;
    if mode == "raw" || mode == "raw_drain" {
        // raw_drain: receive until the lane is empty, as a poll loop does (`Endpoint::poll`
        // dispatches until nothing is waiting, so it pays one empty receive per call).
        let drain = mode == "raw_drain";
        let ch = job.open(0).expect("port");
        let me = ch.addr();
        for _ in 0..count {
            ch.send_whole(me, &[IoSlice::new(&msg)]).expect("send");
            sum += ch
                .try_recv_with(|m| m.as_contiguous().map_or(0, |s| s[0] as u64))
                .expect("recv");
            if drain {
                assert!(ch.try_recv().is_err());
            }
        }
    } else {
        let args: &[u64] = if mode == "am_args" { &[1, 2] } else { &[] };
        // The context: the sum of the payloads' first bytes.
        let mut ep = Endpoint::open_with(&job, 0, 0u64).expect("endpoint");
        ep.register(1, |total: &mut u64, _: &mut Io<'_, _>, am: &Am<'_>| {
            *total += am.payload().as_contiguous().map_or(0, |s| s[0] as u64);
            Ok(())
        })
        .expect("register");
        for _ in 0..count {
            ep.send(0, 1, 5, args, &msg).expect("send");
            ep.poll().expect("poll");
        }
        sum = *ep.ctx();
    }
    assert_eq!(sum, count * 7);
}
