//! Minimal 8-byte message rate over the channel API, as a 2-rank shm job (self-launched):
//! the library's rate without the MsgRate tool's checks around it.
//! `cargo run --release -p skifch-benches --example mr [size [backoff [count]]]`
use skifch::{Error, NetAddr};
use std::io::IoSlice;
use std::time::Instant;

fn main() {
    if let Some(c) = skifch_drivers::launch::self_launch(2) {
        std::process::exit(c)
    }
    let size: usize = std::env::args().nth(1).map_or(8, |s| s.parse().unwrap());
    let backoff: usize = std::env::args().nth(2).map_or(1, |s| s.parse().unwrap());
    let job = skifch_drivers::init_concrete().unwrap();
    skifch_drivers::with_driver!(job, |job| run(job, size, backoff));
}

/// The stream, over the concrete driver (no per-call dispatch).
fn run<D: skifch::Driver>(job: skifch::Job<D>, size: usize, backoff: usize) {
    let me = job.rank();
    let _ = skifch_benches::affinity::pin_to(me as usize);
    let ch = job.open(0).unwrap();
    let peer = NetAddr::new(1 - me as u16, 0);
    let msg = vec![7u8; size];
    let n: u64 = std::env::args()
        .nth(3)
        .map_or(20_000_000, |s| s.parse().unwrap());
    let t0 = Instant::now();
    if me == 0 {
        let mut full = 0u64;
        for _ in 0..n {
            while let Err(e) = ch.send_whole(peer, &[IoSlice::new(&msg)]) {
                assert!(e.is_would_block(), "{e}");
                full += 1;
                std::hint::spin_loop();
            }
        }
        eprintln!("sender: {full} sends found the lane full");
        // Wait for the receiver's go-ahead that it has everything.
        while ch.try_recv().is_err() {}
    } else {
        let mut sum = 0u64;
        let mut got = 0;
        let mut empty = 0u64;
        while got < n {
            match ch.try_recv() {
                Ok(m) => {
                    sum += m.segments().map(|s| s.len() as u64).sum::<u64>();
                    got += 1;
                }
                Err(Error::WouldBlock) => {
                    empty += 1;
                    for _ in 0..backoff {
                        std::hint::spin_loop()
                    }
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(sum, n * size as u64);
        eprintln!("receiver: {empty} empty polls");
        ch.send_whole(peer, &[IoSlice::new(b"done")]).unwrap();
    }
    let dt = t0.elapsed().as_secs_f64();
    if me == 0 {
        println!("{size} B: {:.1} M msg/s", n as f64 / dt / 1e6);
    }
}
