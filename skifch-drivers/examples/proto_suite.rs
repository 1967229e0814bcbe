//! The protocol-layer and collectives self-check (`skifch::proto::suite`) as a job of
//! processes: `skifrun -n 4 -- proto_suite [--rounds N] [--die]`. Each rank prints
//! `proto_suite: rank R ok`. With `--die`, the last rank kills itself (SIGKILL) while the
//! others wait for it; survivors must report `PeerLost` promptly and print
//! `proto_suite: rank R saw PeerLost`.
use std::time::{Duration, Instant};

use skifch::proto::{suite, Endpoint};
use skifch::Error;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut cfg = suite::Config::small();
    if let Some(i) = args.iter().position(|a| a == "--rounds") {
        cfg.rounds = args[i + 1].parse().expect("--rounds N");
    }
    let job = skifch_drivers::init().expect("joining the job");
    let me = job.rank();
    if args.iter().any(|a| a == "--die") {
        let mut ep = Endpoint::open(&job, 0).expect("endpoint");
        ep.barrier().expect("barrier");
        if me == job.size() - 1 {
            std::thread::sleep(Duration::from_millis(200));
            // Die without finalizing, as a crash would: SIGKILL ourselves.
            let _ = std::process::Command::new("kill")
                .args(["-9", &std::process::id().to_string()])
                .status();
            std::thread::sleep(Duration::from_secs(30));
            unreachable!("still alive after SIGKILL");
        }
        let t0 = Instant::now();
        match ep.barrier() {
            Err(Error::PeerLost { rank }) => {
                println!(
                    "proto_suite: rank {me} saw PeerLost (rank {rank}) after {:?}",
                    t0.elapsed()
                );
                std::process::exit(0);
            }
            other => {
                eprintln!("proto_suite: rank {me}: expected PeerLost, got {other:?}");
                std::process::exit(1);
            }
        }
    }
    match suite::run(&job, 0, &cfg) {
        Ok(()) => println!("proto_suite: rank {me} ok"),
        Err(e) => {
            eprintln!("proto_suite: rank {me} failed: {e}");
            std::process::exit(1);
        }
    }
}
