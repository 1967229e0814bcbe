//! The Rust API in-process (ranks as threads, `skifch::local`) on both paths: the direct
//! path over the local RMA provider, the message path without it. Typed put/get, shapes
//! with holes, accumulate of every type from every rank (exact totals), fetch-and-add
//! tickets, mutexes, and bad input returned as errors with nothing written.

use armci::{Armci, Error, Options, Path, Shape};

fn e(e: Error) -> skifch::Error {
    skifch::Error::InvalidArgument(e.to_string().into())
}

fn scenario(direct: bool) {
    let out = skifch::local::run(4, move |job| {
        let rma = if direct { job.rma() } else { None };
        let a = Armci::new(
            &job,
            Options {
                rma,
                progress_thread: false,
            },
        )
        .map_err(e)?;
        assert_eq!(a.path(), if direct { Path::Direct } else { Path::Messages });
        let (me, n) = (a.me(), a.nproc());
        // typed put/get, all pairs
        let g = a.alloc::<u32>(64).map_err(e)?;
        for r in 0..n {
            a.put(&g, r, 4 * me as usize, &[me * 10 + r; 4])
                .map_err(e)?;
        }
        a.barrier().map_err(e)?;
        let mut v = [0u32; 16];
        a.get(&g, me, 0, &mut v).map_err(e)?;
        for w in 0..n as usize {
            assert_eq!(v[4 * w..4 * w + 4], [w as u32 * 10 + me; 4]);
        }
        // a 3-level shape with holes: 2 elems x 3 rows x 2 planes, dst ld 5 and 20
        let src: Vec<u32> = (0..2 * 3 * 2).map(|i| 100 + i).collect();
        let h = a.alloc::<u32>(64).map_err(e)?;
        let shape = Shape::new(&[2, 3, 2], &[2, 6], &[5, 20]);
        a.put_shape(&h, (me + 1) % n, 0, &src, &shape).map_err(e)?;
        a.barrier().map_err(e)?;
        let mut all = [0u32; 40];
        a.get(&h, me, 0, &mut all).map_err(e)?;
        for p in 0..2 {
            for r in 0..4 {
                for c in 0..5 {
                    let x = all[p * 20 + r * 5 + c];
                    let want = if r < 3 && c < 2 {
                        100 + (p * 6 + r * 2 + c) as u32
                    } else {
                        0
                    };
                    assert_eq!(x, want, "plane {p} row {r} col {c}");
                }
            }
        }
        let mut back = [0u32; 12];
        a.get_shape(
            &h,
            me,
            0,
            &mut back,
            &Shape::new(&[2, 3, 2], &[5, 20], &[2, 6]),
        )
        .map_err(e)?;
        assert_eq!(back.to_vec(), src);
        // accumulates of every type from every rank into every rank
        let fi = a.alloc::<i32>(8).map_err(e)?;
        let fl = a.alloc::<i64>(8).map_err(e)?;
        let ff = a.alloc::<f32>(8).map_err(e)?;
        let fd = a.alloc::<f64>(8).map_err(e)?;
        let fc = a.alloc::<[f32; 2]>(8).map_err(e)?;
        let fz = a.alloc::<[f64; 2]>(8).map_err(e)?;
        for r in 0..n {
            a.acc(&fi, r, 0, -2, &[me as i32; 8]).map_err(e)?;
            a.acc(&fl, r, 0, 1 << 33, &[i64::from(me); 8]).map_err(e)?;
            a.acc(&ff, r, 0, 0.5, &[me as f32; 8]).map_err(e)?;
            a.acc(&fd, r, 0, 3.0, &[f64::from(me); 8]).map_err(e)?;
            a.acc(&fc, r, 0, [0.0, 1.0], &[[me as f32, 1.0]; 8])
                .map_err(e)?; // i·(me + i)
            a.acc(&fz, r, 0, [2.0, 0.0], &[[f64::from(me), -1.0]; 8])
                .map_err(e)?;
        }
        a.barrier().map_err(e)?;
        let s = (n * (n - 1) / 2) as i64;
        let mut i32s = [0; 8];
        a.get(&fi, me, 0, &mut i32s).map_err(e)?;
        assert_eq!(i32s, [-2 * s as i32; 8]);
        let mut i64s = [0; 8];
        a.get(&fl, me, 0, &mut i64s).map_err(e)?;
        assert_eq!(i64s, [s << 33; 8]);
        let mut f32s = [0.0f32; 8];
        a.get(&ff, me, 0, &mut f32s).map_err(e)?;
        assert_eq!(f32s, [0.5 * s as f32; 8]);
        let mut f64s = [0.0; 8];
        a.get(&fd, me, 0, &mut f64s).map_err(e)?;
        assert_eq!(f64s, [3.0 * s as f64; 8]);
        let mut c = [[0.0f32; 2]; 8];
        a.get(&fc, me, 0, &mut c).map_err(e)?;
        assert_eq!(c, [[-(n as f32), s as f32]; 8]);
        let mut z = [[0.0f64; 2]; 8];
        a.get(&fz, me, 0, &mut z).map_err(e)?;
        assert_eq!(z, [[2.0 * s as f64, -2.0 * f64::from(n)]; 8]);
        // tickets
        let t = a.alloc::<i64>(1).map_err(e)?;
        let mut mine = Vec::new();
        for _ in 0..10 {
            mine.push(a.fetch_add_i64(&t, 0, 0, 1).map_err(e)?);
        }
        // mutexes around a non-atomic counter on rank 0
        a.create_mutexes(1).map_err(e)?;
        let c = a.alloc::<u64>(1).map_err(e)?;
        for _ in 0..10 {
            a.lock(0, 0).map_err(e)?;
            let mut v = [0u64];
            a.get(&c, 0, 0, &mut v).map_err(e)?;
            a.put(&c, 0, 0, &[v[0] + 1]).map_err(e)?;
            a.unlock(0, 0).map_err(e)?;
        }
        a.barrier().map_err(e)?;
        let mut total = [0u64];
        a.get(&c, 0, 0, &mut total).map_err(e)?;
        assert_eq!(total[0], 10 * u64::from(n));
        a.destroy_mutexes().map_err(e)?;
        // bad input: errors, nothing written
        let before = {
            let mut b = [0u32; 64];
            a.get(&g, me, 0, &mut b).map_err(e)?;
            b
        };
        assert!(matches!(
            a.put(&g, me, 62, &[7u32; 4]),
            Err(Error::NotAllocated { .. })
        ));
        assert!(matches!(
            a.put(&g, n, 0, &[7u32]),
            Err(Error::BadProc { .. })
        ));
        let bad = Shape::new(&[4, 2], &[4], &[3]);
        assert!(matches!(
            a.put_shape(&g, me, 0, &[7u32; 8], &bad),
            Err(Error::BadStrides(_))
        ));
        let long = Shape::new(&[4, 20], &[4], &[4]);
        assert!(a.put_shape(&g, me, 0, &[7u32; 80], &long).is_err());
        let mut after = [0u32; 64];
        a.get(&g, me, 0, &mut after).map_err(e)?;
        assert_eq!(before, after);
        a.barrier().map_err(e)?;
        a.free_global(g).map_err(e)?;
        a.finalize().map_err(e)?;
        Ok(mine)
    })
    .unwrap();
    let mut tickets: Vec<i64> = out.into_iter().flatten().collect();
    tickets.sort_unstable();
    assert_eq!(tickets, (0..40).collect::<Vec<_>>());
}

#[test]
fn rust_api_direct_path() {
    scenario(true);
}

#[test]
fn rust_api_message_path() {
    scenario(false);
}

/// A located block is remembered per rank (`hint`): after a free, the old range is no
/// longer found, and a new allocation is, on every round (the hint follows the table).
#[test]
fn located_blocks_follow_free_and_new_allocations() {
    skifch::local::run(2, |job| {
        let a = Armci::new(
            &job,
            Options {
                rma: job.rma(),
                progress_thread: false,
            },
        )
        .map_err(e)?;
        assert_eq!(a.path(), Path::Direct);
        let (me, peer) = (a.me(), (a.me() + 1) % 2);
        for round in 0..4u64 {
            let bases = a.malloc(4096 << round).map_err(e)?;
            let at = bases[peer as usize] + 8 * me as usize;
            let t = a.locate(peer, at, 8).map_err(e)?;
            let v = (round << 8 | u64::from(me)).to_le_bytes();
            // SAFETY: 8 bytes of `v`; `t` located for 8 bytes.
            unsafe { a.put_to(v.as_ptr(), t, 8) }.map_err(e)?;
            a.barrier().map_err(e)?;
            let mut got = [0u8; 8];
            let mine = a.locate(me, bases[me as usize] + 8 * peer as usize, 8);
            // SAFETY: 8 writable bytes; located for 8 bytes.
            unsafe { a.get_from(mine.map_err(e)?, got.as_mut_ptr(), 8) }.map_err(e)?;
            assert_eq!(u64::from_le_bytes(got), round << 8 | u64::from(peer));
            // twice: the second lookup of the peer's block comes from the hint,
            // which the free must make stale
            let again = a.locate(peer, at, 8).map_err(e)?;
            assert_eq!(a.locate(peer, at, 8).map_err(e)?.addr(), again.addr());
            a.free(bases[me as usize]).map_err(e)?;
            assert!(
                a.locate(peer, at, 8).is_err(),
                "round {round}: a freed block is still found"
            );
        }
        a.finalize().map_err(e)
    })
    .unwrap();
}
