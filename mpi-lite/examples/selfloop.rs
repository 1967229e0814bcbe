//! Software cost of mpi-lite's point-to-point path without any peer or scheduler in the
//! way: a 1-rank in-process job sends 8-byte messages to itself and receives them, in
//! both orders (unexpected: send then receive; expected: receive posted first).
//! `cargo run --release -p mpi-lite --example selfloop [iterations]`; prints ns per
//! message (noisy on a shared machine; `perf stat -e instructions:u` is steadier).

use std::time::Instant;

use mpi_lite::api::Comm;
use mpi_lite::Mpi;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(Ok(1_000_000), |s| s.parse())?;
    let job = skifch::local::job(skifch::local::Params {
        nranks: 1,
        nports: 4,
        lane_bytes: 256 << 10,
    })?
    .pop()
    .ok_or("no rank")?;
    let mpi = Mpi::new(&job)?;
    let w = Comm::world(&mpi);
    let mut buf = [0u64];
    let t = Instant::now();
    for i in 0..n {
        w.send(&[i as u64], 0, 1)?;
        w.recv(&mut buf, 0, 1)?;
    }
    let unexpected = t.elapsed().as_nanos() as f64 / n as f64;
    let t = Instant::now();
    for i in 0..n {
        let r = w.irecv(vec![0u64], 0, 2)?;
        w.send(&[i as u64], 0, 2)?;
        r.wait()?;
    }
    let expected = t.elapsed().as_nanos() as f64 / n as f64;
    println!("selfloop: {n} x 8 B: unexpected {unexpected:.0} ns, expected (Irecv+Send+Wait) {expected:.0} ns per message");
    mpi.finalize()?;
    Ok(())
}
