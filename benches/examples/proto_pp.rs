//! 8-byte ping-pong over the raw channel and over `skifch::proto` active messages, as a
//! 2-rank job (self-launched), to measure what the protocol layer adds to latency.
//! `cargo run --release -p skifch-benches --example proto_pp -- [MODE] [round trips] [passes]`
//! MODE: `raw` (8-byte channel messages), `raw16` (16 bytes: a record that straddles a
//! cache line now and then), `am` (`Endpoint::send` of 8 bytes, `poll`), `short`
//! (`send_short` of 8 bytes, `poll_ready_one`: MPI eager's path), `hdr` (`send_header`
//! without payload, `poll_ready_one`: GASNet's AM Short).
//! (both pin rank r to CPU r and spin; on a shared machine run each a few times, or give
//! `am` several passes: the fastest pass is printed, the one with the least of other
//! processes' time in it).
//! Environment, for the protocol modes: `PP_PAUSE=1` makes the wait `pause` after each
//! empty poll (as `raw` always does); `PP_WORK=W` makes the handler run W steps of a
//! dependent multiply-add chain (6 instructions, ~0.5 ns each here), on rank `PP_WORK_RANK`
//! only if set: a library's work between a message's arrival and its answer, stood in for
//! (`docs/results-2026-11-30-work-window`).
use std::io::IoSlice;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use skifch::proto::{Am, Endpoint, Io};
use skifch::{Error, NetAddr, WaitPolicy};

fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// `PP_WORK` of this rank (the handler is a plain function: no captures).
static WORK: AtomicU64 = AtomicU64::new(0);

/// W steps of a dependent multiply-add chain, out of line: work of a known latency.
#[inline(never)]
fn work(w: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..w {
        x = std::hint::black_box(x.wrapping_mul(3).wrapping_add(i));
    }
    x
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .map(|s| s.parse().unwrap_or_else(|_| panic!("{name}: a number")))
}

fn main() {
    if let Some(c) = skifch_drivers::launch::self_launch(2) {
        std::process::exit(c)
    }
    let job = skifch_drivers::init_concrete().expect("job");
    skifch_drivers::with_driver!(job, |job| run(job));
}

fn run<D: skifch::Driver>(job: skifch::Job<D>) {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "am".into());
    let n: u64 = std::env::args()
        .nth(2)
        .map_or(500_000, |s| s.parse().expect("round trips"));
    let me = job.rank();
    pin(me as usize);
    let peer = 1 - me;
    let msg = [7u8; 8];
    let t0;
    if mode.starts_with("raw") {
        let ch = job.open(0).expect("port");
        let to = NetAddr::new(peer as u16, 0);
        let big = [7u8; 16];
        let m: &[u8] = if mode == "raw16" { &big } else { &msg };
        let send = || while ch.send(to, &[IoSlice::new(m)]).is_err() {};
        let recv = || loop {
            match ch.try_recv_with(|m| std::hint::black_box(m.len())) {
                Ok(_) => break,
                Err(Error::WouldBlock) => std::hint::spin_loop(),
                Err(e) => panic!("{e}"),
            }
        };
        t0 = Instant::now();
        for _ in 0..n {
            if me == 0 {
                send();
                recv();
            } else {
                recv();
                send();
            }
        }
    } else {
        let pause = env_u64("PP_PAUSE").unwrap_or(0) != 0;
        let w = match env_u64("PP_WORK_RANK") {
            Some(r) if r != u64::from(me) => 0,
            _ => env_u64("PP_WORK").unwrap_or(0),
        };
        WORK.store(w, Ordering::Relaxed);
        // The context: messages received.
        let mut ep = Endpoint::new(
            job.driver().open_port(0).expect("port"),
            2,
            job.max_message(),
            WaitPolicy::Spin,
            0u64,
        )
        .expect("endpoint");
        ep.register(1, |got: &mut u64, _: &mut Io<'_, _>, am: &Am<'_>| {
            std::hint::black_box(am.payload().len());
            let w = WORK.load(Ordering::Relaxed);
            if w > 0 {
                std::hint::black_box(work(w));
            }
            *got += 1;
            Ok(())
        })
        .expect("register");
        ep.barrier().expect("barrier");
        let one = mode == "short" || mode == "hdr";
        let hdr = mode == "hdr";
        let wait = |ep: &mut Endpoint<_, u64>, k: u64| {
            while *ep.ctx() < k {
                if one {
                    ep.poll_ready_one().expect("poll");
                } else {
                    ep.poll().expect("poll");
                }
                if pause && *ep.ctx() < k {
                    std::hint::spin_loop();
                }
            }
        };
        let send = |ep: &mut Endpoint<_, u64>| {
            let r = if hdr {
                ep.send_header(peer, 1, 0, &[])
            } else if one {
                ep.send_short(peer, 1, 0, &msg)
            } else {
                ep.send(peer, 1, 0, &[], &msg)
            };
            r.expect("send");
        };
        let passes: u64 = std::env::args()
            .nth(3)
            .map_or(1, |s| s.parse().expect("passes"));
        let mut fastest = f64::MAX;
        for p in 0..passes {
            let t = Instant::now();
            for k in p * n + 1..=(p + 1) * n {
                if me == 0 {
                    send(&mut ep);
                    wait(&mut ep, k);
                } else {
                    wait(&mut ep, k);
                    send(&mut ep);
                }
            }
            fastest = fastest.min(t.elapsed().as_secs_f64());
        }
        let dt = fastest;
        if me == 0 {
            println!("{mode}: half-rtt {:.3} us", dt / n as f64 / 2.0 * 1e6);
        }
        return;
    }
    let dt = t0.elapsed().as_secs_f64();
    if me == 0 {
        println!("{mode}: half-rtt {:.3} us", dt / n as f64 / 2.0 * 1e6);
    }
}
