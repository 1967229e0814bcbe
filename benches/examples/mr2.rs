//! The MsgRate tool's own loops (`send_msg`, `Inbox::take`) as a bare 2-rank stream, without
//! its barriers, calibration and passes: `cargo run --release -p skifch-benches --example mr2 [size [count]]`.
use skifch::NetAddr;
use skifch_benches::check::sum64;
use skifch_benches::msgrate::{send_msg, Inbox};
use std::io::IoSlice;
use std::time::Instant;

fn main() {
    if let Some(c) = skifch_drivers::launch::self_launch(2) {
        std::process::exit(c)
    }
    let size: usize = std::env::args().nth(1).map_or(8, |s| s.parse().unwrap());
    let job = skifch_drivers::init_concrete().unwrap();
    skifch_drivers::with_driver!(job, |job| run(job, size));
}

fn run<D: skifch::Driver>(job: skifch::Job<D>, size: usize) {
    let me = job.rank();
    let _ = skifch_benches::affinity::pin_to(me as usize);
    let ch = job.open(0).unwrap();
    let peer = NetAddr::new(1 - me as u16, 0);
    let msg = skifch_benches::check::LinePattern::new(size.max(8));
    let msg = &msg.as_slice()[..size];
    let n: u64 = std::env::args()
        .nth(2)
        .map_or(50_000_000, |s| s.parse().unwrap());
    let mut inbox = Inbox::new(2);
    inbox.start(size, sum64(msg));
    for _ in 0..3 {
        let t0 = Instant::now();
        if me == 0 {
            for _ in 0..n {
                send_msg(&ch, peer, msg, 1 << 14).unwrap();
            }
            while ch.try_recv().is_err() {}
        } else {
            inbox.take(&ch, n, 1 << 14).unwrap();
            ch.send_whole(peer, &[IoSlice::new(b"done")]).unwrap();
        }
        let dt = t0.elapsed().as_secs_f64();
        if me == 0 {
            println!("{size} B: {:.1} M msg/s", n as f64 / dt / 1e6);
        }
    }
}
