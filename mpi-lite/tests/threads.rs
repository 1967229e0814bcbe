//! The Rust API under `MPI_THREAD_MULTIPLE` (`Mpi::new_multiple`, in-process ranks over
//! `skifch::local`): an `Mpi` shared by threads of one rank; a receive blocked in one thread
//! is completed by another thread's send and progress.

use mpi_lite::api::{Comm, Op};
use mpi_lite::{Error, Mpi, ANY_SOURCE};
use skifch::local::LocalJob;

type R<T> = skifch::Result<T>;

fn fail(e: Error) -> skifch::Error {
    skifch::Error::Bootstrap(e.to_string().into())
}

const THREADS: usize = 3;

#[test]
fn threads_share_one_mpi_each_on_its_own_communicator() {
    skifch::local::run(2, |job: LocalJob| -> R<()> {
        let mpi = Mpi::new_multiple(&job).map_err(fail)?;
        let world = Comm::world(&mpi);
        let comms: Vec<_> = (0..THREADS)
            .map(|_| world.dup())
            .collect::<mpi_lite::Result<_>>()
            .map_err(fail)?;
        let peer = 1 - world.rank() as i32;
        std::thread::scope(|s| {
            for (t, c) in comms.iter().enumerate() {
                s.spawn(move || {
                    for i in 0..300i32 {
                        let v = [t as i32, i, c.rank() as i32];
                        let mut got = [0i32; 3];
                        if c.rank() == 0 {
                            c.send(&v, peer, 1).unwrap();
                            c.recv(&mut got, peer, 1).unwrap();
                        } else {
                            c.recv(&mut got, peer, 1).unwrap();
                            c.send(&v, peer, 1).unwrap();
                        }
                        assert_eq!(got, [t as i32, i, peer]);
                    }
                    // Collectives on the thread's communicator, at once with the others'.
                    let mut sum = [0i64];
                    c.allreduce(&[t as i64 + c.rank() as i64], &mut sum, Op::Sum)
                        .unwrap();
                    assert_eq!(sum[0], 2 * t as i64 + 1);
                    c.barrier().unwrap();
                });
            }
        });
        // A receive blocked in one thread (from any source) while this one sends to it.
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                let mut x = [0u32];
                let st = world.recv(&mut x, ANY_SOURCE, 9).unwrap();
                (x[0], st.source)
            });
            std::thread::sleep(std::time::Duration::from_millis(20));
            let me = world.rank() as i32;
            world.send(&[1234u32 + me as u32], me, 9).unwrap();
            assert_eq!(h.join().unwrap(), (1234 + me as u32, me));
        });
        world.barrier().map_err(fail)?;
        drop(comms);
        mpi.finalize().map_err(fail)
    })
    .unwrap();
}
