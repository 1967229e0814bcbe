//! The Rust API in-process (ranks as threads over `skifch::local`): point-to-point
//! semantics, protocols, communicators.

use mpi_lite::api::Comm;
use mpi_lite::{Error, Mpi, ANY_SOURCE, ANY_TAG, PROC_NULL};
use skifch::local::LocalJob;

type R<T> = skifch::Result<T>;

fn fail(e: Error) -> skifch::Error {
    skifch::Error::Bootstrap(e.to_string().into())
}

/// Runs `f(world)` on `n` thread-ranks, each with its own `Mpi`.
fn run<T: Send + 'static>(
    n: u32,
    f: impl Fn(&Comm<'_, <skifch::local::LocalDriver as skifch::Driver>::Port>) -> mpi_lite::Result<T>
        + Send
        + Sync
        + 'static,
) -> Vec<T> {
    skifch::local::run(n, move |job: LocalJob| -> R<T> {
        let mpi = Mpi::new(&job).map_err(fail)?;
        let v = f(&Comm::world(&mpi)).map_err(fail)?;
        mpi.finalize().map_err(fail)?;
        Ok(v)
    })
    .unwrap()
}

#[test]
fn non_overtaking_and_wildcards() {
    let out = run(3, |w| {
        if w.rank() > 0 {
            for i in 0..50i32 {
                w.send(&[w.rank() as i32, i], 0, i % 3)?;
            }
            return Ok(vec![]);
        }
        // Per sender, messages arrive in send order whatever the tag filter.
        let mut next = [0i32; 3];
        let mut got = Vec::new();
        for _ in 0..100 {
            let mut b = [0i32; 2];
            let st = w.recv(&mut b, ANY_SOURCE, ANY_TAG)?;
            assert_eq!(st.source, b[0]);
            assert_eq!(st.tag, b[1] % 3);
            assert_eq!(b[1], next[b[0] as usize], "overtaking from {}", b[0]);
            next[b[0] as usize] += 1;
            got.push(b[0]);
        }
        Ok(got)
    });
    assert_eq!(out[0].len(), 100);
}

#[test]
fn tag_selection_takes_the_first_match_and_leaves_others() {
    run(2, |w| {
        if w.rank() == 0 {
            for t in [5, 6, 5, 7] {
                w.send(&[t * 10], 1, t)?;
            }
            w.ssend(&[0u8], 1, 99)?; // all four are there before the probe below
        } else {
            let mut b = [0u8];
            w.recv(&mut b, 0, 99)?;
            assert_eq!(w.iprobe(0, 7)?.map(|s| s.bytes), Some(4));
            let mut x = [0i32];
            w.recv(&mut x, 0, 6)?;
            assert_eq!(x[0], 60);
            w.recv(&mut x, 0, 5)?;
            assert_eq!(x[0], 50);
            let st = w.recv(&mut x, ANY_SOURCE, ANY_TAG)?;
            assert_eq!((x[0], st.tag), (50, 5));
            w.recv(&mut x, 0, 7)?;
            assert_eq!(x[0], 70);
            assert!(w.iprobe(ANY_SOURCE, ANY_TAG)?.is_none());
        }
        Ok(())
    });
}

#[test]
fn truncation_zero_size_self_and_proc_null() {
    run(2, |w| {
        let peer = 1 - w.rank() as i32;
        if w.rank() == 0 {
            w.send(&[1i64, 2, 3], 1, 1)?;
            w.send::<u8>(&[], 1, 2)?;
            let big: Vec<u32> = (0..100_000).collect();
            w.send(&big, 1, 3)?;
        } else {
            let mut small = [0i64; 2];
            match w.recv(&mut small, 0, 1) {
                Err(Error::Truncate { len: 24, cap: 16 }) => {}
                other => panic!("expected MPI_ERR_TRUNCATE, got {other:?}"),
            }
            assert_eq!(small, [1, 2]);
            let st = w.recv::<u8>(&mut [], 0, 2)?;
            assert_eq!(st.bytes, 0);
            let mut part = vec![0u32; 1000];
            assert!(matches!(
                w.recv(&mut part, 0, 3),
                Err(Error::Truncate { .. })
            ));
            assert_eq!(part[999], 999);
        }
        // Self-send: eager and rendezvous to myself.
        let r = w.irecv(vec![0u16; 50_000], w.rank() as i32, 4)?;
        let data: Vec<u16> = (0..50_000u32).map(|i| i as u16).collect();
        w.send(&data, w.rank() as i32, 4)?;
        assert_eq!(r.wait()?.0, data);
        let st = w.recv::<u8>(&mut [0; 4], PROC_NULL, 0)?;
        assert_eq!((st.source, st.bytes), (PROC_NULL, 0));
        w.send(&[1u8], PROC_NULL, 0)?;
        let _ = peer;
        Ok(())
    });
}

#[test]
fn rendezvous_both_ways_at_once_does_not_deadlock() {
    run(2, |w| {
        let peer = 1 - w.rank() as i32;
        let n = 3 << 20; // 12 MiB of u32 each way, far beyond the lanes
        let data: Vec<u32> = (0..n as u32).map(|i| i ^ w.rank() as u32).collect();
        let mut back = vec![0u32; n];
        w.sendrecv(&data, peer, 0, &mut back, peer, 0)?;
        assert!(back
            .iter()
            .enumerate()
            .all(|(i, &v)| v == i as u32 ^ peer as u32));
        // Blocking sends of many eager messages both ways before any receive: the
        // engine queues what does not fit and keeps draining.
        let rs: Vec<_> = (0..2000)
            .map(|i| w.irecv(vec![0u64; 16], peer, i))
            .collect::<Result<_, _>>()?;
        for i in 0..2000 {
            w.send(&[i as u64; 16], peer, i)?;
        }
        for (i, r) in rs.into_iter().enumerate() {
            assert_eq!(r.wait()?.0, vec![i as u64; 16]);
        }
        Ok(())
    });
}

#[test]
fn ssend_waits_for_the_match() {
    run(2, |w| {
        if w.rank() == 0 {
            let r = w.issend(vec![7i32], 1, 0)?;
            let r = match r.test()? {
                Ok(_) => panic!("Issend completed before the receive was posted"),
                Err(r) => r,
            };
            w.send(&[0u8], 1, 1)?; // "now post it"
            r.wait()?;
        } else {
            w.recv(&mut [0u8], 0, 1)?;
            let mut x = [0i32];
            w.recv(&mut x, 0, 0)?;
            assert_eq!(x[0], 7);
        }
        Ok(())
    });
}

#[test]
fn split_dup_and_bad_arguments() {
    let out = run(4, |w| {
        let half = w
            .split((w.rank() % 2) as i32, -(w.rank() as i32))?
            .expect("colored");
        assert_eq!(half.size(), 2);
        // key reverses the order
        let expect_rank = if w.rank() < 2 { 1 } else { 0 };
        assert_eq!(half.rank(), expect_rank);
        let d = half.dup()?;
        let peer = 1 - d.rank() as i32;
        let mut x = [0usize];
        d.sendrecv(&[w.rank()], peer, 0, &mut x, peer, 0)?;
        // Traffic on `half` with the same tag must not match on `d`.
        assert!(matches!(w.send(&[0u8], 4, 0), Err(Error::Rank(_))));
        assert!(matches!(w.send(&[0u8], 0, -5), Err(Error::Tag(_))));
        assert!(w.split(mpi_lite::comm::UNDEFINED, 0)?.is_none());
        w.barrier()?;
        Ok(x[0])
    });
    assert_eq!(out, vec![2, 3, 0, 1]);
}

#[test]
fn intercommunicators_from_rust() {
    // Even and odd ranks of 3: groups of 2 and 1.
    let out = run(3, |w| {
        let (color, me) = (w.rank() as i32 % 2, w.rank() as i32);
        let local = w.split(color, me)?.expect("a color");
        let ic = local.intercomm_create(0, Some(w), 1 - color, 5)?;
        let rsize = ic.remote_size().expect("an intercommunicator");
        assert_eq!((ic.size(), rsize), (local.size(), 3 - local.size()));
        // Ranks name the remote group: the odd rank hears from both even ones and answers.
        let mut got = [0i32];
        if color == 0 {
            ic.send(&[me], 0, 1)?;
            ic.recv(&mut got, 0, 2)?;
            assert_eq!(got[0], 1);
        } else {
            for j in 0..rsize as i32 {
                let st = ic.recv(&mut got, j, 1)?;
                assert_eq!((got[0], st.source), (2 * j, j));
                ic.send(&[me], j, 2)?;
            }
        }
        let mut sum = [0i32];
        ic.allreduce(&[me], &mut sum, mpi_lite::api::Op::Sum)?;
        assert_eq!(sum[0], if color == 0 { 1 } else { 2 });
        let mut v = [0u8; 4];
        ic.allgather(&[me as u8, 7], &mut v[..2 * rsize])?;
        let root = match (color, ic.rank()) {
            (1, _) => 0,
            (_, 0) => mpi_lite::inter::ROOT,
            _ => PROC_NULL,
        };
        let mut r = [0i32];
        ic.reduce(&[me], &mut r, mpi_lite::api::Op::Max, root)?;
        let merged = ic.merge(color == 1)?;
        assert!(merged.remote_size().is_none());
        Ok((v, r[0], merged.rank()))
    });
    assert_eq!(out[0], ([1, 7, 0, 0], 1, 0));
    assert_eq!(out[1], ([0, 7, 2, 7], 0, 2));
    assert_eq!(out[2], ([1, 7, 0, 0], 0, 1));
}

#[test]
fn collectives_from_rust() {
    let out = run(3, |w| {
        let mut v = [0u64; 3];
        if w.rank() == 1 {
            v = [7, 8, 9];
        }
        w.bcast(&mut v, 1)?;
        assert_eq!(v, [7, 8, 9]);
        let mut s = [0.0f64; 2];
        w.allreduce(&[w.rank() as f64, 1.0], &mut s, mpi_lite::api::Op::Sum)?;
        assert_eq!(s, [3.0, 3.0]);
        let mut m = [0i32];
        w.reduce(&[w.rank() as i32 * 5], &mut m, mpi_lite::api::Op::Max, 0)?;
        let mut all = [0u16; 6];
        w.allgather(&[w.rank() as u16, 9], &mut all)?;
        assert_eq!(all, [0, 9, 1, 9, 2, 9]);
        Ok(m[0])
    });
    assert_eq!(out[0], 10);
}

#[test]
fn non_overtaking_across_protocols_with_small_lanes() {
    let params = skifch::local::Params {
        nranks: 2,
        nports: 4,
        lane_bytes: 4096,
    };
    for _ in 0..20 {
        skifch::local::run_with(params, |job: LocalJob| -> R<()> {
            let mpi = Mpi::new(&job).map_err(fail)?;
            let w = Comm::world(&mpi);
            let peer = 1 - w.rank() as i32;
            let r = (|| -> mpi_lite::Result<()> {
                let big: Vec<i32> = (0..100_000).collect();
                let a = w.isend(vec![1i32], peer, 7)?;
                let b = w.isend(big, peer, 7)?;
                let c = w.isend(vec![2i32], peer, 7)?;
                w.barrier()?;
                let mut g = [0i32];
                let st = w.recv(&mut g, peer, 7)?;
                assert_eq!((g[0], st.bytes), (1, 4));
                let mut r1 = vec![0i32; 100_000];
                w.recv(&mut r1, ANY_SOURCE, ANY_TAG)?;
                assert_eq!(r1[99_999], 99_999);
                w.recv(&mut g, peer, ANY_TAG)?;
                assert_eq!(g[0], 2);
                a.wait()?;
                b.wait()?;
                c.wait()?;
                Ok(())
            })();
            r.map_err(fail)?;
            mpi.finalize().map_err(fail)
        })
        .unwrap();
    }
}

/// A blocking receive must not take a message a receive posted earlier can claim (the
/// direct path is off while receives are posted), and takes messages in order when it is
/// on: posted wildcard, posted exact, then blocking receives; a message of another tag in
/// between is queued, not lost.
#[test]
fn blocking_receive_respects_posted_receives() {
    let out = run(2, |w| {
        if w.rank() == 0 {
            w.barrier()?; // rank 1 has posted its receives
            for i in 0..4i32 {
                w.send(&[i], 1, 5)?;
            }
            w.send(&[99i32], 1, 6)?;
            w.send(&[4i32], 1, 5)?;
            return Ok(vec![]);
        }
        let a = w.irecv(vec![-1i32], ANY_SOURCE, ANY_TAG)?;
        let b = w.irecv(vec![-1i32], 0, 5)?;
        w.barrier()?;
        let mut x = [-1i32];
        let mut got = Vec::new();
        for _ in 0..2 {
            w.recv(&mut x, 0, 5)?;
            got.push(x[0]);
        }
        got.push(a.wait()?.0[0]);
        got.push(b.wait()?.0[0]);
        w.recv(&mut x, 0, 5)?; // the tag-6 message waits in the queue meanwhile
        got.push(x[0]);
        w.recv(&mut x, 0, 6)?;
        got.push(x[0]);
        Ok(got)
    });
    assert_eq!(out[1], [2, 3, 0, 1, 4, 99]);
}
