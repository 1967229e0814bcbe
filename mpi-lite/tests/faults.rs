//! mpi-lite over the fault injector (`skifch_drivers::wrap::FaultDriver`, in-process ranks):
//! forced would-blocks (partial sends too, though mpi-lite asks for none: it sends every
//! message whole) and a slow consumer change timing only, never results; a rank lost at message N is an error (`PeerLost`) at its peers, not a hang.
use std::time::{Duration, Instant};

use mpi_lite::api::{Comm, Op};
use mpi_lite::{Mpi, ANY_SOURCE, ANY_TAG};
use skifch::local::{self, LocalDriver, LocalJob};
use skifch_drivers::wrap::{Death, FaultConfig, FaultDriver, Loss, Trigger};

type Port = <FaultDriver<LocalDriver> as skifch::Driver>::Port;

fn fail(e: mpi_lite::Error) -> skifch::Error {
    skifch::Error::Bootstrap(e.to_string().into())
}

fn faulty() -> FaultConfig {
    FaultConfig {
        seed: 3,
        partial: Trigger::Rate(0.3),
        would_block: Trigger::Rate(0.2),
        recv_would_block: Trigger::Every(4),
        slow: Trigger::Every(50),
        recv_delay: Duration::from_micros(300),
        complete_delay: Duration::from_micros(20),
        ..FaultConfig::none()
    }
}

/// Runs `f(world)` on `n` thread-ranks over a fault injector configured by `cfg`.
fn run<T: Send + 'static>(
    n: u32,
    cfg: FaultConfig,
    f: impl Fn(&Comm<'_, Port>) -> mpi_lite::Result<T> + Send + Sync + 'static,
) -> skifch::Result<Vec<T>> {
    local::run(n, move |job: LocalJob| {
        let job = FaultDriver::wrap(&job, cfg.clone());
        let mpi = Mpi::new(&job).map_err(fail)?;
        let v = f(&Comm::world(&mpi)).map_err(fail)?;
        mpi.finalize().map_err(fail)?;
        let st = job.driver().stats();
        // The faults happened. (Forced partial sends never fire: mpi-lite and proto send
        // every message whole; the configuration still asks for them in case that changes.)
        assert!(
            st.would_block > 0 && st.recv_would_block > 0 && st.delayed > 0,
            "{st:?}"
        );
        Ok(v)
    })
}

#[test]
fn point_to_point_and_collectives_survive_the_faults() {
    let out = run(3, faulty(), |w| {
        let (me, n) = (w.rank() as i32, w.size() as i32);
        // Eager messages in order per sender, with wildcards.
        if me > 0 {
            for i in 0..200i32 {
                w.send(&[me, i], 0, i % 5)?;
            }
        } else {
            let mut next = [0i32; 3];
            for _ in 0..400 {
                let mut b = [0i32; 2];
                let st = w.recv(&mut b, ANY_SOURCE, ANY_TAG)?;
                assert_eq!((st.source, st.tag), (b[0], b[1] % 5));
                assert_eq!(b[1], next[b[0] as usize], "overtaking from {}", b[0]);
                next[b[0] as usize] += 1;
            }
        }
        // A long (rendezvous) message around the ring, far beyond a lane.
        let len = 600_000usize;
        let data: Vec<u32> = (0..len as u32)
            .map(|i| i.wrapping_mul(3) ^ me as u32)
            .collect();
        let mut back = vec![0u32; len];
        let (to, from) = ((me + 1) % n, (me + n - 1) % n);
        w.sendrecv(&data, to, 7, &mut back, from, 7)?;
        assert!(back
            .iter()
            .enumerate()
            .all(|(i, &v)| v == (i as u32).wrapping_mul(3) ^ from as u32));
        let mut sum = [0u64];
        w.allreduce(&[me as u64 + 1], &mut sum, Op::Sum)?;
        w.barrier()?;
        Ok(sum[0])
    })
    .unwrap();
    assert_eq!(out, vec![6, 6, 6]);
}

#[test]
fn a_rank_lost_at_message_n_fails_its_peers() {
    let cfg = FaultConfig {
        lose: Some(Loss {
            rank: 1,
            after: 40,
            how: Death::Panic,
        }),
        ..faulty()
    };
    let t0 = Instant::now();
    let r = run(2, cfg, |w| {
        // Rank 1 dies inside this loop; rank 0 must get an error, not wait for ever.
        for i in 0..1000i32 {
            if w.rank() == 0 {
                w.recv(&mut [0i32], 1, 0)?;
            } else {
                w.send(&[i], 0, 0)?;
            }
        }
        Ok(())
    });
    let e = r.unwrap_err().to_string();
    assert!(e.contains("panicked") || e.contains("lost"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
}
