//! mpi-lite's Rust API in a real multi-process job: `skifrun -n 4 target/debug/examples/ring`.
//!
//! Passes a token around the ring, exchanges a 4 MiB buffer with both neighbours
//! (rendezvous), reduces, splits the world, and prints `ring: rank R of N ok`.
//! Exits non-zero on any wrong value.

use mpi_lite::api::{Comm, Op};
use mpi_lite::{Mpi, Result};

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ring: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn check(ok: bool, what: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(mpi_lite::Error::Other(format!("wrong value: {what}")))
    }
}

fn run() -> Result<()> {
    let job = skifch_drivers::init()?;
    let mpi = Mpi::new(&job)?;
    let world = Comm::world(&mpi);
    let (r, n) = (world.rank() as i32, world.size() as i32);
    let (right, left) = ((r + 1) % n, (r + n - 1) % n);

    // A token around the ring: each rank adds its rank.
    let mut tok = [0i64];
    if r == 0 {
        world.send(&[0i64], right, 1)?;
        world.recv(&mut tok, left, 1)?;
        check(tok[0] == (n as i64) * (n as i64 - 1) / 2, "token")?;
    } else {
        world.recv(&mut tok, left, 1)?;
        world.send(&[tok[0] + r as i64], right, 1)?;
    }

    // 4 MiB both ways around the ring with nonblocking requests that own their buffers.
    let len = 1 << 20;
    let data: Vec<u32> = (0..len as u32).map(|i| i ^ r as u32).collect();
    let rx = world.irecv(vec![0u32; len], left, 2)?;
    let tx = world.isend(data, right, 2)?;
    let (got, st) = rx.wait()?;
    tx.wait()?;
    check(st.source == left && st.bytes == 4 * len, "status")?;
    check(
        got.iter()
            .enumerate()
            .all(|(i, &v)| v == i as u32 ^ left as u32),
        "4 MiB payload",
    )?;

    let mut sum = [0.0f64];
    world.allreduce(&[r as f64], &mut sum, Op::Sum)?;
    check(sum[0] == (n * (n - 1) / 2) as f64, "allreduce")?;

    let half = world.split(r % 2, r)?.expect("every rank has a color");
    let mut hs = [0i32];
    half.allreduce(&[1], &mut hs, Op::Sum)?;
    check(hs[0] == (n + 1 - r % 2) / 2, "split size")?;
    world.barrier()?;
    println!("ring: rank {r} of {n} ok");
    mpi.finalize()
}
