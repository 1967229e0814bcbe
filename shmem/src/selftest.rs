//! A self-test of the library's one-sided and collective properties on a live job (the
//! shape of [`skifch::conformance`]): every PE calls [`run`] on its [`World`]; it checks
//! put/get (small and larger than one message), atomics under contention, flag-after-data
//! ordering, locks, signals and wait sets, team splits, collectives on the world and a
//! strided team, and that bad input is an error.
//! Used by the in-process tests on both paths and by `examples/selftest.rs` under
//! `skifrun` (the shm driver's RMA, or messages with `SKIFSHMEM_RMA=off`).
//!
//! # Collective Operation
//! Every PE of the job calls it; it allocates ~330 KiB of the symmetric heap per PE and
//! leaves it allocated.

use skifch::rma::Amo;
use skifch::Port;

use crate::coll::Num;
use crate::{Error, ReduceOp, SymAddr, SymVec, Team, World};

macro_rules! ensure {
    ($c:expr) => {
        if !$c {
            return Err(Error::BadArgument(format!(
                "self-test failed at {}:{}: {}",
                file!(),
                line!(),
                stringify!($c)
            )));
        }
    };
}

macro_rules! ensure_eq {
    ($a:expr, $b:expr) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            return Err(Error::BadArgument(format!(
                "self-test failed at {}:{}: {} = {:?}, expected {:?}",
                file!(),
                line!(),
                stringify!($a),
                a,
                b
            )));
        }
    }};
}

/// Runs the checks on PE `w.my_pe()` (see the module docs); the first failure is an
/// `Error::BadArgument` naming the line.
pub fn run<P: Port>(w: &World<P>) -> Result<(), Error> {
    let (me, n) = (w.my_pe(), w.n_pes());
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;

    // put / get, small and larger than one message
    let v = SymVec::<u64>::new(w, 40_000)?;
    let data: Vec<u64> = (0..40_000).map(|i| u64::from(me) << 32 | i).collect();
    v.put(w, 0, &data, right)?;
    w.barrier_all()?;
    let mut got = vec![0u64; 40_000];
    v.get(w, 0, &mut got, me)?;
    ensure!(got
        .iter()
        .enumerate()
        .all(|(i, &x)| x == u64::from(left) << 32 | i as u64));
    let mut one = [0u64];
    v.get(w, 7, &mut one, right)?;
    ensure_eq!(one[0], u64::from(me) << 32 | 7);
    w.barrier_all()?;

    // atomics: every PE adds to PE 0; compare-swap elects one winner
    let c = SymVec::<i64>::new(w, 2)?;
    for _ in 0..100 {
        c.fetch_add(w, 0, 1, 0)?;
    }
    let won = c.atomic(
        w,
        1,
        Amo::CompareSwap {
            expected: 0,
            new: u64::from(me) + 1,
        },
        0,
    )? == 0;
    w.barrier_all()?;
    if me == 0 {
        ensure_eq!(c.read(w, 0)?, 100 * i64::from(n));
        ensure!(c.read(w, 1)? >= 1);
    }
    let winners = SymVec::<i32>::new(w, 1)?;
    winners.atomic(w, 0, Amo::Add(u64::from(won)), 0)?;
    w.barrier_all()?;
    if me == 0 {
        ensure_eq!(winners.read(w, 0)?, 1);
    }

    // point-to-point: flag after data, fence orders them
    let flag = SymVec::<u64>::new(w, 1)?;
    v.put(w, 100, &[0xABCD], right)?;
    w.fence()?;
    flag.put(w, 0, &[1], right)?;
    flag.wait_until(w, 0, |x| x == 1)?;
    let mut x = [0u64];
    v.get(w, 100, &mut x, me)?;
    ensure_eq!(x[0], 0xABCD);

    // collectives on the world and on a strided team
    let all = Team::world(n);
    let src = SymVec::<i32>::new(w, 4)?;
    let dst = SymVec::<i32>::new(w, 4 * n as usize)?;
    src.put(w, 0, &[me as i32, 1, -(me as i32), 1 << me], me)?;
    w.reduce(&all, dst.addr(0), src.addr(0), 4, Num::I(4), ReduceOp::Sum)?;
    let mut r = [0i32; 4];
    dst.get(w, 0, &mut r, me)?;
    let s: i32 = (0..n as i32).sum();
    ensure_eq!(r, [s, n as i32, -s, (1 << n) - 1]);
    w.reduce(&all, src.addr(0), src.addr(0), 1, Num::I(4), ReduceOp::Max)?;
    src.get(w, 0, &mut r[..1], me)?;
    ensure_eq!(r[0], n as i32 - 1);
    w.broadcast(&all, dst.addr(0), src.addr(3), 4, (n - 1) as usize, true)?;
    dst.get(w, 0, &mut r[..1], me)?;
    ensure_eq!(r[0], 1 << (n - 1));
    src.put(w, 0, &[me as i32 * 10], me)?;
    w.collect(&all, dst.addr(0), src.addr(0), 4)?;
    let mut cat = vec![0i32; n as usize];
    dst.get(w, 0, &mut cat, me)?;
    ensure_eq!(cat, (0..n as i32).map(|p| p * 10).collect::<Vec<_>>());
    let a2a_src = SymVec::<i32>::new(w, n as usize)?;
    let row: Vec<i32> = (0..n as i32).map(|j| me as i32 * 100 + j).collect();
    a2a_src.put(w, 0, &row, me)?;
    w.alltoall(&all, dst.addr(0), a2a_src.addr(0), 4)?;
    dst.get(w, 0, &mut cat, me)?;
    ensure_eq!(
        cat,
        (0..n as i32)
            .map(|j| j * 100 + me as i32)
            .collect::<Vec<_>>()
    );
    let evens = Team::strided(n, 0, 2, i64::from(n.div_ceil(2)))?;
    if evens.index_of(me).is_some() {
        src.put(w, 0, &[1], me)?;
        w.reduce(
            &evens,
            dst.addr(0),
            src.addr(0),
            1,
            Num::I(4),
            ReduceOp::Sum,
        )?;
        dst.get(w, 0, &mut r[..1], me)?;
        ensure_eq!(r[0], evens.size() as i32);
    }
    w.barrier_all()?;

    // locks: every PE increments PE 0's counter inside the lock, non-atomically
    let lock = SymVec::<i64>::new(w, 2)?;
    for _ in 0..5 {
        w.set_lock(lock.addr(0))?;
        let mut cur = [0i64];
        lock.get(w, 1, &mut cur, 0)?;
        lock.put(w, 1, &[cur[0] + 1], 0)?;
        w.clear_lock(lock.addr(0))?;
    }
    ensure!(w.clear_lock(lock.addr(0)).is_err()); // not held
    w.barrier_all()?;
    if me == 0 {
        ensure_eq!(lock.read(w, 1)?, 5 * i64::from(n));
        ensure!(w.try_lock(lock.addr(0))?);
        ensure!(w.set_lock(lock.addr(0)).is_err()); // already held
        w.clear_lock(lock.addr(0))?;
    }
    w.barrier_all()?;

    // signals and wait sets: each PE signals its right neighbour's word `me`
    let sig = SymVec::<u64>::new(w, n as usize)?;
    w.put_signal(
        right,
        v.addr(200),
        &(u64::from(me) + 7).to_le_bytes(),
        sig.addr(me as usize),
        2,
        crate::SignalOp::Set,
    )?;
    w.signal(right, sig.addr(me as usize), 1, crate::SignalOp::Add)?;
    let base = crate::Var::new(w.local(sig.addr(0)), 8, false)?;
    let set: Vec<crate::Cond> = (0..n as usize)
        .map(|i| crate::Cond {
            key: i,
            var: base.at(i),
            value: 3,
        })
        .collect();
    let hit = w.wait_set(&set, crate::Cmp::Eq, crate::Mode::Any, true)?;
    ensure_eq!(hit, Some(vec![left as usize]));
    v.get(w, 200, &mut x, me)?;
    ensure_eq!(x[0], u64::from(left) + 7);
    let none = w.wait_set(
        &set[me as usize..=me as usize],
        crate::Cmp::Eq,
        crate::Mode::All,
        false,
    )?;
    ensure!(n > 1 && none.is_none() || n == 1);
    ensure_eq!(
        w.wait_set(&[], crate::Cmp::Eq, crate::Mode::Some, false)?,
        Some(vec![])
    );
    w.barrier_all()?;

    // a team split: the odd PEs, then their translation to the world
    let world = Team::world(n);
    let odd = w.team_split_strided(&world, 1, 2, (n / 2) as i32)?;
    ensure_eq!(odd.is_some(), me % 2 == 1 && n > 1);
    if let Some(t) = &odd {
        ensure_eq!(w.team_my_pe(t), Some(me as usize / 2));
        ensure_eq!(t.translate(0, &world), Some(1));
        w.team_sync(t)?;
    }
    ensure!(w.team_split_strided(&world, 0, 1, n as i32 + 1).is_err());
    w.barrier_all()?;

    // bad input is an error, not an access
    ensure!(matches!(
        w.put(n, v.addr(0), &[0]),
        Err(Error::BadPe { .. })
    ));
    ensure!(v.put(w, 39_999, &[1, 2], right).is_err());
    ensure!(w
        .put(
            right,
            SymAddr {
                seg: 0,
                off: w.segment(crate::SEG_HEAP).1
            },
            &[0]
        )
        .is_err());
    ensure!(matches!(
        SymVec::<u8>::new(w, w.segment(crate::SEG_HEAP).1 + 1),
        Err(Error::HeapExhausted { .. })
    ));
    w.barrier_all()?;
    Ok(())
}
