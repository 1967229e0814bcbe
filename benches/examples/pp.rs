//! Minimal 8-byte ping-pong over the channel API, as a 2-rank shm job (self-launched): the
//! library's latency without the MsgRate tool around it.
//! `cargo run --release -p skifch-benches --example pp`
use skifch::{Error, NetAddr};
use std::io::IoSlice;
use std::time::Instant;
fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}
fn main() {
    if let Some(c) = skifch_drivers::launch::self_launch(2) {
        std::process::exit(c)
    }
    let job = skifch_drivers::init_concrete().unwrap();
    skifch_drivers::with_driver!(job, |job| run(job));
}

/// The ping-pong, over the concrete driver (no per-call dispatch).
fn run<D: skifch::Driver>(job: skifch::Job<D>) {
    let me = job.rank();
    pin(me as usize);
    let ch = job.open(0).unwrap();
    let peer = NetAddr::new(1 - me as u16, 0);
    let msg = [7u8; 8];
    let n = 2_000_000u64;
    let t0 = Instant::now();
    let send = || while ch.send(peer, &[IoSlice::new(&msg)]).is_err() {};
    let recv = || loop {
        match ch.try_recv() {
            Ok(m) => break std::hint::black_box(m.len()),
            Err(Error::WouldBlock) => std::hint::spin_loop(),
            Err(e) => panic!("{e}"),
        }
    };
    for _ in 0..n {
        if me == 0 {
            send();
            recv();
        } else {
            recv();
            send();
        }
    }
    let dt = t0.elapsed().as_secs_f64();
    if me == 0 {
        println!("half-rtt {:.3} us", dt / n as f64 / 2.0 * 1e6);
    }
}
