//! The conformance suite as a job: `skifrun -n 4 -- conformance [--kill] [--messages N]
//! [--within MS] [--pair-kb K] [--forwarded]`. Every rank runs every check; with `--kill`
//! the last rank then SIGKILLs itself and the others must see `PeerLost` within a second
//! (`--within MS`: another bound, for drivers whose documented bound is longer).
//! `--pair-kb`: `Config::pair_memory` (the hierarchy, whose node lanes hold more than its
//! largest message). Survivors print
//! `conformance: rank R ok`. `--forwarded`: over the forwarding driver, through the C-ABI
//! table this process published (what a second SkifCh library of a process uses,
//! `skifch_drivers::share`).
use std::time::Duration;

use skifch::conformance::{self, Config, Suite};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kill = args.iter().any(|a| a == "--kill");
    let mut cfg = Config::standard();
    if let Some(i) = args.iter().position(|a| a == "--messages") {
        cfg.messages = args[i + 1].parse().expect("--messages N");
    }
    let within = match args.iter().position(|a| a == "--within") {
        Some(i) => Duration::from_millis(args[i + 1].parse().expect("--within MS")),
        None => Duration::from_secs(1),
    };
    if let Some(i) = args.iter().position(|a| a == "--pair-kb") {
        cfg.pair_memory = args[i + 1].parse::<usize>().expect("--pair-kb K") << 10;
    }
    let joined = if args.iter().any(|a| a == "--forwarded") {
        skifch_drivers::share::forward_to_self()
            .map(|j| skifch_drivers::ConcreteJob::Fwd(j).to_any())
    } else {
        skifch_drivers::init()
    };
    let job = match joined {
        Ok(j) => j,
        Err(e) => {
            eprintln!("conformance: cannot join the job: {e}");
            std::process::exit(2);
        }
    };
    let rank = job.rank();
    let run = || -> skifch::Result<()> {
        let mut s = Suite::new(&job, cfg.clone())?;
        conformance::bad_input(&mut s)?;
        conformance::ordering_and_interleaving(&mut s)?;
        conformance::partial_sends(&mut s)?;
        conformance::back_pressure(&mut s)?;
        conformance::hold_and_out_of_order(&mut s)?;
        if kill {
            conformance::peer_failure(&mut s, within, || {
                // SIGKILL: no destructor runs, the rank does not finalize: a real crash.
                let _ = std::process::Command::new("kill")
                    .args(["-9", &std::process::id().to_string()])
                    .status();
                std::thread::sleep(Duration::from_secs(10));
            })?;
        }
        Ok(())
    };
    match run() {
        // One write per line (unbuffered stderr writes each format piece separately, and
        // the tests look for whole lines among other ranks' and skifrun's output).
        Ok(()) => {
            let line = format!("conformance: rank {rank} ok ({})\n", job.driver_name());
            let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), line.as_bytes());
        }
        Err(e) => {
            let line = format!("conformance: rank {rank}: {e}\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
            std::process::exit(1);
        }
    }
}
