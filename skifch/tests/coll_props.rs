//! Property tests of the collectives: random group sizes, lengths, roots, element types
//! and operations, each case a fresh in-process job, against the sequential reference.

use proptest::prelude::*;
use skifch::coll::ops::fold;
use skifch::coll::{self, DType, Kernel, Op, ProtoGroup, Transport};
use skifch::local;
use skifch::local::Params;
use skifch::proto::Endpoint;
use skifch::Result;

const TYPES: [DType; 10] = [
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
];

/// Member `r`'s bytes: small integers for exact float arithmetic.
fn input(dt: DType, seed: u64, r: usize, count: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..count {
        let v = ((seed as usize + i * 5 + r * 11) % 4) as i64;
        match dt {
            DType::I8 => out.extend((v as i8).to_ne_bytes()),
            DType::U8 => out.extend((v as u8).to_ne_bytes()),
            DType::I16 => out.extend((v as i16).to_ne_bytes()),
            DType::U16 => out.extend((v as u16).to_ne_bytes()),
            DType::I32 => out.extend((v as i32).to_ne_bytes()),
            DType::U32 => out.extend((v as u32).to_ne_bytes()),
            DType::I64 => out.extend(v.to_ne_bytes()),
            DType::U64 => out.extend((v as u64).to_ne_bytes()),
            DType::F32 => out.extend((v as f32).to_ne_bytes()),
            DType::F64 => out.extend((v as f64).to_ne_bytes()),
            _ => unreachable!(),
        }
    }
    out
}

#[derive(Clone, Debug)]
struct Case {
    n: u32,
    lane_kb: usize,
    dt: DType,
    op: Op,
    count: usize,
    root: usize,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1u32..=7,
        prop::sample::select(vec![1usize, 4, 64]),
        0..TYPES.len(),
        0..10usize,
        0usize..3000,
        0usize..7,
        any::<u64>(),
    )
        .prop_map(|(n, lane_kb, t, o, count, root, seed)| Case {
            n,
            lane_kb,
            dt: TYPES[t],
            op: Op::ALL[o],
            count,
            root: root % n as usize,
            seed,
        })
}

fn run(c: Case) -> Result<()> {
    let p = Params {
        nranks: c.n,
        nports: 1,
        lane_bytes: c.lane_kb << 10,
    };
    local::run_with(p, move |job| {
        let mut ep = Endpoint::open(&job, 0)?;
        let g = ProtoGroup::world(&ep);
        let w = g.on(&mut ep);
        let (r, n) = (w.rank(), w.size());
        let ins: Vec<Vec<u8>> = (0..n).map(|i| input(c.dt, c.seed, i, c.count)).collect();
        if let Ok(k) = Kernel::new(c.dt, c.op) {
            let mut out = vec![0u8; ins[r].len()];
            coll::allreduce(&w, &ins[r], &mut out, &k)?;
            assert_eq!(out, fold(&k, &ins), "allreduce {c:?}");
            let mut out = vec![0u8; if r == c.root { ins[r].len() } else { 0 }];
            coll::reduce(&w, c.root, &ins[r], &mut out, &k)?;
            if r == c.root {
                assert_eq!(out, fold(&k, &ins), "reduce {c:?}");
            }
        }
        let mut b = if r == c.root {
            ins[c.root].clone()
        } else {
            vec![0u8; ins[c.root].len()]
        };
        coll::bcast(&w, c.root, &mut b)?;
        assert_eq!(b, ins[c.root], "bcast {c:?}");
        // alltoallv with counts derived from the seed.
        let cnt = |i: usize, j: usize| (c.seed as usize + i * 7 + j * 3) % (c.count + 1);
        let sc: Vec<usize> = (0..n).map(|j| cnt(r, j)).collect();
        let rc: Vec<usize> = (0..n).map(|i| cnt(i, r)).collect();
        let displs = |v: &[usize]| -> Vec<usize> {
            v.iter()
                .scan(0, |a, &x| {
                    let d = *a;
                    *a += x;
                    Some(d)
                })
                .collect()
        };
        let blk = |i: usize, j: usize| -> Vec<u8> {
            (0..cnt(i, j))
                .map(|b| (b + i * 31 + j * 17) as u8)
                .collect()
        };
        let send: Vec<u8> = (0..n).flat_map(|j| blk(r, j)).collect();
        let want: Vec<u8> = (0..n).flat_map(|i| blk(i, r)).collect();
        let mut got = vec![0u8; want.len()];
        coll::alltoallv(&w, &send, &sc, &displs(&sc), &mut got, &rc, &displs(&rc))?;
        assert_eq!(got, want, "alltoallv {c:?}");
        ep.barrier()
    })
    .map(|_| ())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn collectives_match_the_sequential_reference(c in case()) {
        run(c).unwrap();
    }
}
