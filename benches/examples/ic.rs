//! Instruction-count probe (for `valgrind --tool=callgrind`): one rank sends `count`
//! `size`-byte messages to itself and receives each at once, so the count per iteration
//! is exactly one send plus one receive and completion, with no spinning.
//! `valgrind --tool=callgrind target/release/examples/ic 8 100000` (and 200000: the
//! difference over 100000 is the cost of one message).
use std::io::IoSlice;

fn main() {
    let size: usize = std::env::args().nth(1).map_or(8, |s| s.parse().unwrap());
    let count: u64 = std::env::args()
        .nth(2)
        .map_or(1_000_000, |s| s.parse().unwrap());
    // Receiving right after sending needs a driver that delivers during the send (shm);
    // a NIC (the fpga driver) delivers later.
    match skifch_drivers::init_concrete().unwrap() {
        skifch_drivers::ConcreteJob::Shm(job) => run(job, size, count),
        _ => {
            eprintln!("ic: counts the shm driver's instructions; run it without --driver");
            std::process::exit(2)
        }
    }
}

/// The loop, over the concrete driver (no per-call dispatch in what is counted).
fn run<D: skifch::Driver>(job: skifch::Job<D>, size: usize, count: u64) {
    let ch = job.open(0).unwrap();
    let me = ch.addr();
    let msg = vec![7u8; size];
    let mut sum = 0u64;
    for _ in 0..count {
        ch.send_whole(me, &[IoSlice::new(&msg)]).unwrap();
        let m = ch.try_recv().unwrap();
        sum += m.segments().map(|s| s.len() as u64).sum::<u64>();
        m.complete();
    }
    assert_eq!(sum, count * size as u64);
}
