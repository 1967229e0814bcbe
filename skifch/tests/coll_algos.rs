//! Every collective algorithm of `skifch::coll` against a sequential reference, over
//! `ProtoGroup` on the in-process job, 1..=7 ranks (powers of two and not), every
//! reduction operation, a non-commutative user operation, small lanes, subgroups.

use skifch::coll::ops::fold;
use skifch::coll::{self, DType, GroupOn, Kernel, Op, ProtoGroup, Reducer, Transport};
use skifch::local::Params;
use skifch::local::{self, LocalJob};
use skifch::proto::Endpoint;
use skifch::{Error, Result};

const PORT: u32 = 1;

/// Deterministic bytes of member `r` for test `seed`.
fn data(seed: usize, r: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 131 + r * 71 + seed * 29) % 251) as u8)
        .collect()
}

/// Elements whose every reduction is exact and in range: small integers (floats too).
fn elems(dt: DType, seed: usize, r: usize, count: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(count * dt.size());
    for i in 0..count {
        let v = ((i * 7 + r * 3 + seed) % 5) as i64; // 0..=4
        let idx = ((i + r * 5 + seed) % 7) as i32;
        match dt {
            DType::I8 => out.extend((v as i8).to_ne_bytes()),
            DType::U8 => out.extend((v as u8).to_ne_bytes()),
            DType::I16 => out.extend((v as i16 - 2).to_ne_bytes()),
            DType::U16 => out.extend((v as u16).to_ne_bytes()),
            DType::I32 => out.extend((v as i32 - 2).to_ne_bytes()),
            DType::U32 => out.extend((v as u32).to_ne_bytes()),
            DType::I64 => out.extend((v - 2).to_ne_bytes()),
            DType::U64 => out.extend((v as u64).to_ne_bytes()),
            DType::F32 => out.extend((v as f32 - 1.0).to_ne_bytes()),
            DType::F64 => out.extend((v as f64 - 1.5).to_ne_bytes()),
            DType::FloatInt => {
                out.extend((v as f32).to_ne_bytes());
                out.extend(idx.to_ne_bytes());
            }
            DType::DoubleInt => {
                out.extend((v as f64).to_ne_bytes());
                out.extend(idx.to_ne_bytes());
                out.extend([0u8; 4]);
            }
            DType::LongInt => {
                out.extend(v.to_ne_bytes());
                out.extend(idx.to_ne_bytes());
                out.extend([0u8; 4]);
            }
            DType::TwoInt => {
                out.extend((v as i32).to_ne_bytes());
                out.extend(idx.to_ne_bytes());
            }
            DType::ShortInt => {
                out.extend((v as i16).to_ne_bytes());
                out.extend([0u8; 2]);
                out.extend(idx.to_ne_bytes());
            }
        }
    }
    out
}

/// 2×2 matrices of wrapping u32 under multiplication: associative, not commutative.
struct MatMul;
impl MatMul {
    fn get(b: &[u8]) -> [u32; 4] {
        let w = |i: usize| u32::from_ne_bytes(b[4 * i..4 * i + 4].try_into().unwrap());
        [w(0), w(1), w(2), w(3)]
    }
}
impl Reducer for MatMul {
    fn elem_size(&self) -> usize {
        16
    }
    fn commutative(&self) -> bool {
        false
    }
    fn apply(&self, a: &[u8], io: &mut [u8]) {
        for (x, y) in a.chunks_exact(16).zip(io.chunks_exact_mut(16)) {
            let (p, q) = (MatMul::get(x), MatMul::get(y));
            let m = [
                p[0].wrapping_mul(q[0])
                    .wrapping_add(p[1].wrapping_mul(q[2])),
                p[0].wrapping_mul(q[1])
                    .wrapping_add(p[1].wrapping_mul(q[3])),
                p[2].wrapping_mul(q[0])
                    .wrapping_add(p[3].wrapping_mul(q[2])),
                p[2].wrapping_mul(q[1])
                    .wrapping_add(p[3].wrapping_mul(q[3])),
            ];
            for (k, v) in m.iter().enumerate() {
                y[4 * k..4 * k + 4].copy_from_slice(&v.to_ne_bytes());
            }
        }
    }
}

fn mats(seed: usize, r: usize, count: usize) -> Vec<u8> {
    data(seed, r, count * 16)
}

fn check(what: &str, got: &[u8], want: &[u8]) -> Result<()> {
    if got != want {
        let at = got.iter().zip(want).position(|(a, b)| a != b);
        return Err(Error::InvalidArgument(
            format!(
                "{what}: mismatch (lengths {} vs {}, first difference at {at:?})",
                got.len(),
                want.len()
            )
            .into(),
        ));
    }
    Ok(())
}

const TYPES: [DType; 15] = [
    DType::I8,
    DType::U8,
    DType::I16,
    DType::U16,
    DType::I32,
    DType::U32,
    DType::I64,
    DType::U64,
    DType::F32,
    DType::F64,
    DType::FloatInt,
    DType::DoubleInt,
    DType::LongInt,
    DType::TwoInt,
    DType::ShortInt,
];

/// Reductions: every valid (type, op) at a few counts, through reduce (every root),
/// allreduce, scan, exscan, reduce_scatter_block.
fn reductions<T: Transport>(t: &T, counts: &[usize]) -> Result<()> {
    let (r, n) = (t.rank(), t.size());
    for (ti, &dt) in TYPES.iter().enumerate() {
        for op in Op::ALL {
            let Ok(k) = Kernel::new(dt, op) else { continue };
            for &count in counts {
                let seed = ti * 100 + count;
                let ins: Vec<Vec<u8>> = (0..n).map(|i| elems(dt, seed, i, count)).collect();
                let want = fold(&k, &ins);
                let w = format!("{dt:?} {op:?} x{count} n={n}");
                let mut out = vec![0u8; ins[r].len()];
                coll::allreduce(t, &ins[r], &mut out, &k)?;
                check(&format!("allreduce {w}"), &out, &want)?;
                let root = seed % n;
                let mut out = vec![0u8; if r == root { ins[r].len() } else { 0 }];
                coll::reduce(t, root, &ins[r], &mut out, &k)?;
                if r == root {
                    check(&format!("reduce {w}"), &out, &want)?;
                }
                let mut out = vec![0u8; ins[r].len()];
                coll::scan(t, &ins[r], &mut out, &k)?;
                check(&format!("scan {w}"), &out, &fold(&k, &ins[..=r]))?;
                let mut out = vec![0xEEu8; ins[r].len()];
                coll::exscan(t, &ins[r], &mut out, &k)?;
                if r > 0 {
                    check(&format!("exscan {w}"), &out, &fold(&k, &ins[..r]))?;
                }
                // reduce_scatter_block: n blocks of `count` elements each.
                let big: Vec<Vec<u8>> = (0..n).map(|i| elems(dt, seed + 1, i, count * n)).collect();
                let all = fold(&k, &big);
                let b = count * dt.size();
                let mut out = vec![0u8; b];
                coll::reduce_scatter_block(t, &big[r], &mut out, &k)?;
                check(
                    &format!("reduce_scatter_block {w}"),
                    &out,
                    &all[r * b..(r + 1) * b],
                )?;
                // reduce_scatter with uneven blocks (some empty): member i gets
                // (i + count) % 3 elements.
                let es = dt.size();
                let cb: Vec<usize> = (0..n).map(|i| (i + count) % 3 * es).collect();
                let total: usize = cb.iter().sum();
                let big: Vec<Vec<u8>> =
                    (0..n).map(|i| elems(dt, seed + 2, i, total / es)).collect();
                let all = fold(&k, &big);
                let start: usize = cb[..r].iter().sum();
                let mut out = vec![0u8; cb[r]];
                coll::reduce_scatter(t, &big[r], &mut out, &cb, &k)?;
                check(
                    &format!("reduce_scatter {w}"),
                    &out,
                    &all[start..start + cb[r]],
                )?;
            }
        }
    }
    Ok(())
}

/// The non-commutative operation through every reducing collective.
fn non_commutative<T: Transport>(t: &T, counts: &[usize]) -> Result<()> {
    let (r, n) = (t.rank(), t.size());
    let op = MatMul;
    for &count in counts {
        let ins: Vec<Vec<u8>> = (0..n).map(|i| mats(count, i, count)).collect();
        let want = fold(&op, &ins);
        let mut out = vec![0u8; ins[r].len()];
        coll::allreduce(t, &ins[r], &mut out, &op)?;
        check("noncomm allreduce", &out, &want)?;
        for root in 0..n {
            let mut out = vec![0u8; ins[r].len()];
            coll::reduce(t, root, &ins[r], &mut out, &op)?;
            if r == root {
                check("noncomm reduce", &out, &want)?;
            }
        }
        coll::scan(t, &ins[r], &mut out, &op)?;
        check("noncomm scan", &out, &fold(&op, &ins[..=r]))?;
        coll::exscan(t, &ins[r], &mut out, &op)?;
        if r > 0 {
            check("noncomm exscan", &out, &fold(&op, &ins[..r]))?;
        }
        // reduce_scatter with uneven blocks: member i gets (i % 3) matrices.
        let counts_b: Vec<usize> = (0..n).map(|i| (i % 3) * 16).collect();
        let total: usize = counts_b.iter().sum();
        let big: Vec<Vec<u8>> = (0..n).map(|i| mats(count + 9, i, total / 16)).collect();
        let all = fold(&op, &big);
        let start: usize = counts_b[..r].iter().sum();
        let mut out = vec![0u8; counts_b[r]];
        coll::reduce_scatter(t, &big[r], &mut out, &counts_b, &op)?;
        check(
            "noncomm reduce_scatter",
            &out,
            &all[start..start + counts_b[r]],
        )?;
    }
    Ok(())
}

/// Data movement: bcast from every root, gather(v), scatter(v), allgather(v), alltoall(v).
fn movement<T: Transport>(t: &T, sizes: &[usize]) -> Result<()> {
    let (r, n) = (t.rank(), t.size());
    for &len in sizes {
        for root in 0..n {
            let mut buf = if r == root {
                data(len, root, len)
            } else {
                vec![0u8; len]
            };
            coll::bcast(t, root, &mut buf)?;
            check(
                &format!("bcast {len} from {root}"),
                &buf,
                &data(len, root, len),
            )?;
        }
        let root = len % n;
        let all: Vec<u8> = (0..n).flat_map(|i| data(len + 1, i, len)).collect();
        // gather / scatter
        let mut g = vec![0u8; if r == root { n * len } else { 0 }];
        coll::gather(t, root, &data(len + 1, r, len), &mut g)?;
        if r == root {
            check("gather", &g, &all)?;
        }
        let mut s = vec![0u8; len];
        coll::scatter(t, root, if r == root { &all } else { &[] }, &mut s)?;
        check("scatter", &s, &data(len + 1, r, len))?;
        // allgather
        let mut a = vec![0u8; n * len];
        coll::allgather(t, &data(len + 1, r, len), &mut a)?;
        check(&format!("allgather {len}"), &a, &all)?;
        // v-variants: member i has (i+1)*len/n bytes, stored in reverse rank order with gaps.
        let cnt: Vec<usize> = (0..n).map(|i| (i + 1) * len / n).collect();
        let mut displs = vec![0usize; n];
        let mut at = 0;
        for i in (0..n).rev() {
            displs[i] = at;
            at += cnt[i] + 3;
        }
        let vlen = at;
        let mine = data(len + 2, r, cnt[r]);
        let mut want = vec![0u8; vlen];
        for i in 0..n {
            want[displs[i]..displs[i] + cnt[i]].copy_from_slice(&data(len + 2, i, cnt[i]));
        }
        let mut g = vec![0u8; if r == root { vlen } else { 0 }];
        coll::gatherv(t, root, &mine, &mut g, &cnt, &displs)?;
        if r == root {
            check("gatherv", &g, &want)?;
        }
        let mut s = vec![0u8; cnt[r]];
        coll::scatterv(
            t,
            root,
            if r == root { &want } else { &[] },
            &cnt,
            &displs,
            &mut s,
        )?;
        check("scatterv", &s, &mine)?;
        let mut a = vec![0u8; vlen];
        coll::allgatherv(t, &mine, &mut a, &cnt, &displs)?;
        check("allgatherv", &a, &want)?;
        // alltoall: block j of member i is data(i*n + j).
        let block = |i: usize, j: usize| data(len + 3 + i * n + j, i, len);
        let send: Vec<u8> = (0..n).flat_map(|j| block(r, j)).collect();
        let want: Vec<u8> = (0..n).flat_map(|i| block(i, r)).collect();
        let mut recv = vec![0u8; n * len];
        coll::alltoall(t, &send, &mut recv)?;
        check(&format!("alltoall {len}"), &recv, &want)?;
        // alltoallv: member i sends (i + j) % 3 * len/2 bytes to member j, packed.
        let c = |i: usize, j: usize| (i + j) % 3 * len / 2;
        let vb = |i: usize, j: usize| data(len + 5 + i * n + j, j, c(i, j));
        let sc: Vec<usize> = (0..n).map(|j| c(r, j)).collect();
        let sd: Vec<usize> = sc
            .iter()
            .scan(0, |a, &x| {
                let d = *a;
                *a += x;
                Some(d)
            })
            .collect();
        let rc: Vec<usize> = (0..n).map(|i| c(i, r)).collect();
        let rd: Vec<usize> = rc
            .iter()
            .scan(0, |a, &x| {
                let d = *a;
                *a += x;
                Some(d)
            })
            .collect();
        let send: Vec<u8> = (0..n).flat_map(|j| vb(r, j)).collect();
        let want: Vec<u8> = (0..n).flat_map(|i| vb(i, r)).collect();
        let mut recv = vec![0u8; want.len()];
        coll::alltoallv(t, &send, &sc, &sd, &mut recv, &rc, &rd)?;
        check("alltoallv", &recv, &want)?;
        coll::barrier(t)?;
    }
    Ok(())
}

fn with_world<T: Send + 'static>(
    params: Params,
    f: impl Fn(&GroupOn<'_, <skifch::local::LocalDriver as skifch::Driver>::Port>) -> Result<T>
        + Send
        + Sync
        + 'static,
) -> Result<Vec<T>> {
    local::run_with(params, move |job: LocalJob| {
        let mut ep = Endpoint::open(&job, PORT)?;
        let g = ProtoGroup::world(&ep);
        let r = f(&g.on(&mut ep))?;
        ep.barrier()?;
        Ok(r)
    })
}

fn params(n: u32, lane: usize) -> Params {
    Params {
        nranks: n,
        nports: 2,
        lane_bytes: lane,
    }
}

#[test]
fn every_reduction_on_1_to_7_ranks() {
    for n in 1..=7 {
        with_world(params(n, 64 << 10), |w| reductions(w, &[1, 5])).unwrap();
    }
}

#[test]
fn large_reductions_take_the_ring_path() {
    // ≥ ALLREDUCE_RING bytes, element counts not divisible by n.
    for n in [2, 3, 5, 6] {
        with_world(params(n, 64 << 10), |w| {
            let (r, n) = (w.rank(), w.size());
            for (dt, op) in [
                (DType::I32, Op::Sum),
                (DType::F64, Op::Max),
                (DType::U8, Op::Bxor),
            ] {
                let k = Kernel::new(dt, op)?;
                let count = coll::ALLREDUCE_RING / dt.size() * 3 + 7;
                let ins: Vec<Vec<u8>> = (0..n).map(|i| elems(dt, 3, i, count)).collect();
                let mut out = vec![0u8; ins[r].len()];
                coll::allreduce(w, &ins[r], &mut out, &k)?;
                check("large allreduce", &out, &fold(&k, &ins))?;
            }
            Ok(())
        })
        .unwrap();
    }
}

#[test]
fn non_commutative_reductions_in_rank_order() {
    for n in 1..=7 {
        with_world(params(n, 64 << 10), |w| non_commutative(w, &[1, 3, 1500])).unwrap();
    }
}

#[test]
fn data_movement_on_1_to_7_ranks() {
    for n in 1..=7 {
        with_world(params(n, 64 << 10), |w| movement(w, &[0, 1, 13, 1000])).unwrap();
    }
}

#[test]
fn large_messages_and_scatter_allgather_broadcast() {
    for n in [2, 3, 4, 7] {
        with_world(params(n, 64 << 10), |w| {
            movement(w, &[coll::BCAST_LONG + 5, 200_000])
        })
        .unwrap();
    }
}

#[test]
fn tiny_lanes_do_not_deadlock() {
    // 1 KiB lanes: most messages are chunked and every exchange hits full lanes.
    for n in [3, 4] {
        with_world(params(n, 1 << 10), |w| {
            movement(w, &[0, 700, 5000])?;
            non_commutative(w, &[100])
        })
        .unwrap();
    }
}

#[test]
fn subgroups_run_beside_the_world() {
    local::run_with(params(6, 64 << 10), |job| {
        let mut ep = Endpoint::open(&job, PORT)?;
        let me = ep.rank();
        let parity: Vec<u32> = (0..6).filter(|x| x % 2 == me % 2).collect();
        let g = ProtoGroup::new(&ep, 10 + me % 2, parity.clone())?;
        let w = ProtoGroup::world(&ep);
        let k = Kernel::new(DType::U32, Op::Sum)?;
        for round in 0..20u32 {
            let mut s = [0u8; 4];
            coll::allreduce(&g.on(&mut ep), &(me + round).to_ne_bytes(), &mut s, &k)?;
            let want: u32 = parity.iter().map(|x| x + round).sum();
            assert_eq!(u32::from_ne_bytes(s), want);
            coll::allreduce(&w.on(&mut ep), &me.to_ne_bytes(), &mut s, &k)?;
            assert_eq!(u32::from_ne_bytes(s), 15);
        }
        assert!(ProtoGroup::new(&ep, 99, vec![(me + 1) % 6]).is_err());
        assert!(ProtoGroup::new(&ep, 99, vec![me, me]).is_err());
        ep.barrier()
    })
    .unwrap();
}

#[test]
fn bad_arguments_are_errors() {
    with_world(params(3, 64 << 10), |w| {
        let k = Kernel::new(DType::I32, Op::Sum)?;
        let bad = |r: &Result<()>| matches!(r, Err(Error::InvalidArgument(_)));
        assert!(bad(&coll::bcast(w, 3, &mut [0u8; 4])));
        assert!(bad(&coll::allreduce(w, &[0u8; 6], &mut [0u8; 6], &k)));
        assert!(bad(&coll::allreduce(w, &[0u8; 8], &mut [0u8; 4], &k)));
        assert!(bad(&coll::alltoall(w, &[0u8; 4], &mut [0u8; 4])));
        assert!(bad(&coll::allgatherv(
            w,
            &[0u8; 1],
            &mut [0u8; 2],
            &[1, 1, 1],
            &[0, 1, 2]
        )));
        // A length mismatch between members is detected by the receiver.
        let mut buf = vec![0u8; 8 + 8 * w.rank()];
        let r = coll::bcast(w, 2, &mut buf);
        if w.rank() == 2 {
            assert!(r.is_ok());
        } else {
            assert!(bad(&r), "{r:?}");
        }
        Ok(())
    })
    .unwrap();
}
