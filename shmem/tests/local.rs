//! The Rust API on the in-process job (ranks as threads), on both access paths: the
//! direct path through `skifch::rma::LocalRma` and the message path (no RMA).

use skifch::local::{self, LocalJob};
use skifch::rma::{Amo, LocalRma};
use skifshmem::{Options, Path, ReduceOp, SymVec, Team, World};

fn world(
    job: &LocalJob,
    direct: bool,
    progress_thread: bool,
) -> std::sync::Arc<World<<skifch::local::LocalDriver as skifch::Driver>::Port>> {
    let opts = Options {
        rma: direct.then(|| Box::new(LocalRma::new(job)) as Box<dyn skifch::rma::Rma>),
        heap_size: 8 << 20,
        globals: None,
        progress_thread,
    };
    World::new(job, opts).expect("init")
}

fn properties(job: LocalJob, direct: bool, progress_thread: bool) -> skifch::Result<()> {
    let w = world(&job, direct, progress_thread);
    assert_eq!(w.path(), if direct { Path::Direct } else { Path::Messages });
    let (me, n) = (w.my_pe(), w.n_pes());
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;

    // put / get, small and larger than one message
    let v = SymVec::<u64>::new(&w, 40_000).unwrap();
    let data: Vec<u64> = (0..40_000).map(|i| u64::from(me) << 32 | i).collect();
    v.put(&w, 0, &data, right).unwrap();
    w.barrier_all().unwrap();
    let mut got = vec![0u64; 40_000];
    v.get(&w, 0, &mut got, me).unwrap();
    assert!(got
        .iter()
        .enumerate()
        .all(|(i, &x)| x == u64::from(left) << 32 | i as u64));
    let mut one = [0u64];
    v.get(&w, 7, &mut one, right).unwrap();
    assert_eq!(one[0], u64::from(me) << 32 | 7);
    w.barrier_all().unwrap();

    // atomics: every PE adds to PE 0; compare-swap elects one winner
    let c = SymVec::<i64>::new(&w, 2).unwrap();
    for _ in 0..100 {
        c.fetch_add(&w, 0, 1, 0).unwrap();
    }
    let won = c
        .atomic(
            &w,
            1,
            Amo::CompareSwap {
                expected: 0,
                new: u64::from(me) + 1,
            },
            0,
        )
        .unwrap()
        == 0;
    w.barrier_all().unwrap();
    if me == 0 {
        assert_eq!(c.read(&w, 0).unwrap(), 100 * i64::from(n));
        assert!(c.read(&w, 1).unwrap() >= 1);
    }
    let winners = SymVec::<i32>::new(&w, 1).unwrap();
    winners.atomic(&w, 0, Amo::Add(u64::from(won)), 0).unwrap();
    w.barrier_all().unwrap();
    if me == 0 {
        assert_eq!(winners.read(&w, 0).unwrap(), 1);
    }

    // point-to-point: flag after data, fence orders them
    let flag = SymVec::<u64>::new(&w, 1).unwrap();
    v.put(&w, 100, &[0xABCD], right).unwrap();
    w.fence();
    flag.put(&w, 0, &[1], right).unwrap();
    flag.wait_until(&w, 0, |x| x == 1).unwrap();
    let mut x = [0u64];
    v.get(&w, 100, &mut x, me).unwrap();
    assert_eq!(x[0], 0xABCD);

    // collectives on the world and on a strided team
    let all = Team::world(n);
    let src = SymVec::<i32>::new(&w, 4).unwrap();
    let dst = SymVec::<i32>::new(&w, 4 * n as usize).unwrap();
    src.put(&w, 0, &[me as i32, 1, -(me as i32), 1 << me], me)
        .unwrap();
    w.reduce(
        &all,
        dst.addr(0),
        src.addr(0),
        4,
        skifshmem::coll::Num::I(4),
        ReduceOp::Sum,
    )
    .unwrap();
    let mut r = [0i32; 4];
    dst.get(&w, 0, &mut r, me).unwrap();
    let s: i32 = (0..n as i32).sum();
    assert_eq!(r, [s, n as i32, -s, (1 << n) - 1]);
    w.reduce(
        &all,
        src.addr(0),
        src.addr(0),
        1,
        skifshmem::coll::Num::I(4),
        ReduceOp::Max,
    )
    .unwrap();
    src.get(&w, 0, &mut r[..1], me).unwrap();
    assert_eq!(r[0], n as i32 - 1);
    w.broadcast(&all, dst.addr(0), src.addr(3), 4, (n - 1) as usize, true)
        .unwrap();
    dst.get(&w, 0, &mut r[..1], me).unwrap();
    assert_eq!(r[0], 1 << (n - 1));
    src.put(&w, 0, &[me as i32 * 10], me).unwrap();
    w.collect(&all, dst.addr(0), src.addr(0), 4).unwrap();
    let mut cat = vec![0i32; n as usize];
    dst.get(&w, 0, &mut cat, me).unwrap();
    assert_eq!(cat, (0..n as i32).map(|p| p * 10).collect::<Vec<_>>());
    let a2a_src = SymVec::<i32>::new(&w, n as usize).unwrap();
    let row: Vec<i32> = (0..n as i32).map(|j| me as i32 * 100 + j).collect();
    a2a_src.put(&w, 0, &row, me).unwrap();
    w.alltoall(&all, dst.addr(0), a2a_src.addr(0), 4).unwrap();
    dst.get(&w, 0, &mut cat, me).unwrap();
    assert_eq!(
        cat,
        (0..n as i32)
            .map(|j| j * 100 + me as i32)
            .collect::<Vec<_>>()
    );
    let evens = Team::strided(n, 0, 2, i64::from(n.div_ceil(2))).unwrap();
    if evens.index_of(me).is_some() {
        src.put(&w, 0, &[1], me).unwrap();
        w.reduce(
            &evens,
            dst.addr(0),
            src.addr(0),
            1,
            skifshmem::coll::Num::I(4),
            ReduceOp::Sum,
        )
        .unwrap();
        dst.get(&w, 0, &mut r[..1], me).unwrap();
        assert_eq!(r[0], evens.size() as i32);
    }
    w.barrier_all().unwrap();

    // bad input is an error, not an access
    assert!(matches!(
        w.put(n, v.addr(0), &[0]),
        Err(skifshmem::Error::BadPe { .. })
    ));
    assert!(v.put(&w, 39_999, &[1, 2], right).is_err());
    assert!(w
        .put(
            right,
            skifshmem::SymAddr {
                seg: 0,
                off: 8 << 20
            },
            &[0]
        )
        .is_err());
    assert!(matches!(
        SymVec::<u8>::new(&w, 64 << 20),
        Err(skifshmem::Error::HeapExhausted { .. })
    ));
    w.barrier_all().unwrap();
    w.finalize().unwrap();
    Ok(())
}

#[test]
fn direct_path_2_and_4() {
    local::run(2, |j| properties(j, true, false)).unwrap();
    local::run(4, |j| properties(j, true, false)).unwrap();
}

#[test]
fn message_path_2_and_4() {
    local::run(2, |j| properties(j, false, false)).unwrap();
    local::run(4, |j| properties(j, false, false)).unwrap();
}

#[test]
fn message_path_with_progress_thread() {
    local::run(3, |j| properties(j, false, true)).unwrap();
}

#[test]
fn lost_pe_is_an_error_not_a_hang() {
    let r = local::run(2, |job| {
        let w = world(&job, false, false);
        if w.my_pe() == 1 {
            panic!("PE 1 dies");
        }
        let v = SymVec::<u64>::new(&w, 1);
        match v {
            Err(e) => Err(skifch::Error::InvalidArgument(e.to_string().into())),
            Ok(v) => v
                .wait_until(&w, 0, |x| x == 1)
                .map(|_| ())
                .map_err(|e| skifch::Error::InvalidArgument(e.to_string().into())),
        }
    });
    let e = r.unwrap_err().to_string();
    assert!(e.contains("panicked") || e.contains("lost"), "{e}");
}
