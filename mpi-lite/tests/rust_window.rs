//! The Rust API's one-sided [`Window`] in-process (ranks as threads over `skifch::local`):
//! every operation with its data checked, on the direct path (the job's RMA capability maps
//! the peers' memory: the short cuts) and on the message path (no capability).

use mpi_lite::api::{Comm, Window};
use mpi_lite::win::{AccOp, LockType};
use mpi_lite::{Error, Mpi};
use skifch::coll::Op;
use skifch::local::LocalJob;

fn fail(e: Error) -> skifch::Error {
    skifch::Error::Bootstrap(e.to_string().into())
}

/// Rank r puts, gets, accumulates, fetches and swaps on rank (r + 1) % n's window inside a
/// lock epoch (shared: the atomics must stay exact with every rank at once), then checks
/// what its own window received.
fn every_operation(n: u32, direct: bool) {
    let out = skifch::local::run(n, move |job: LocalJob| -> skifch::Result<Vec<i64>> {
        let mpi = Mpi::new(&job).map_err(fail)?;
        let world = Comm::world(&mpi);
        let (me, n) = (world.rank() as i32, world.size() as i32);
        let t = (me + 1) % n;
        let rma = if direct { job.rma() } else { None };
        let w = Window::<_, i64>::allocate(&world, 8, rma).map_err(fail)?;
        w.fence().map_err(fail)?;
        w.lock(LockType::Shared, t).map_err(fail)?;
        w.put(&[100 + me as i64, 7], t, 0).map_err(fail)?;
        w.flush(t).map_err(fail)?;
        let mut got = [0i64; 2];
        w.get(&mut got, t, 0).map_err(fail)?;
        w.accumulate(&[5, 6], t, 2, AccOp::Op(Op::Sum))
            .map_err(fail)?;
        let before = w.fetch_and_op(3, t, 4, AccOp::Op(Op::Sum)).map_err(fail)?;
        let read = w.fetch_and_op(0, t, 4, AccOp::NoOp).map_err(fail)?;
        let swapped = w.compare_and_swap(9, 0, t, 5).map_err(fail)?;
        let kept = w.compare_and_swap(11, 0, t, 5).map_err(fail)?;
        w.unlock(t).map_err(fail)?;
        // The path asked for; the direct path's operations and lock send nothing.
        assert_eq!(w.raw().is_message_path(), !direct);
        assert_eq!(w.raw().messages_sent() == 0, direct);
        w.fence().map_err(fail)?;
        let mine: Vec<i64> = (0..6).map(|i| w.local(i)).collect();
        w.free().map_err(fail)?;
        mpi.finalize().map_err(fail)?;
        let from = ((me + n - 1) % n) as i64;
        assert_eq!(got, [100 + me as i64, 7]);
        assert_eq!((before, read, swapped, kept), (0, 3, 0, 9));
        assert_eq!(mine, vec![100 + from, 7, 5, 6, 3, 9]);
        Ok(mine)
    })
    .unwrap();
    assert_eq!(out.len(), n as usize);
}

#[test]
fn window_operations_on_the_direct_path() {
    every_operation(2, true);
    every_operation(3, true);
}

#[test]
fn window_operations_on_the_message_path() {
    every_operation(2, false);
}
