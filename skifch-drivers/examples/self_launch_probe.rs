//! Test program for `launch::self_launch` (`tests/launcher.rs`): started directly, it re-runs
//! itself as a 3-rank job. Every rank passes a barrier, prints its rank and arguments,
//! finalizes, and rank 1 exits with the status given as the first argument.
use skifch::coll::Barrier;

fn main() {
    if let Some(status) = skifch_drivers::launch::self_launch(3) {
        println!("launcher: job exited with {status}");
        std::process::exit(status);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let job = skifch_drivers::init().expect("joining the job");
    let ch = job.open(0).expect("opening port 0");
    Barrier::new(job.rank(), job.size())
        .wait(&ch)
        .expect("barrier");
    println!("rank {} of {}: args {args:?}", job.rank(), job.size());
    let status = if job.rank() == 1 {
        args.first().and_then(|a| a.parse().ok()).unwrap_or(0)
    } else {
        0
    };
    // Finalize before exiting: process::exit skips destructors.
    drop(ch);
    drop(job);
    std::process::exit(status);
}
