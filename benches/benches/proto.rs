//! Criterion micro-benchmarks of the protocol layer (`skifch::proto`) against the raw
//! channel it runs on, one thread of a one-rank in-process job sending to itself, so the
//! numbers are the per-message CPU cost of each layer (no wire, no waiting):
//!
//! * `proto/raw/<size>` — `Channel::send_whole` + `try_recv` + RecvComp;
//! * `proto/am/<size>` — `Endpoint::send` (8-byte header + inline payload) + `poll`
//!   dispatching to a registered handler that reads the payload;
//! * `proto/am_args/<size>` — the same with two extra `u64` arguments (24-byte header).
//!
//! ```text
//! cargo bench -p skifch-benches --bench proto -- --warm-up-time 0.5 --measurement-time 2
//! ```
#![allow(missing_docs)] // criterion_group! generates undocumented functions

use std::hint::black_box;
use std::io::IoSlice;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use skifch::proto::{Am, Endpoint, Io};
use skifch::WaitPolicy;
use skifch_drivers::shm::Params;

const SIZES: [usize; 2] = [8, 256];

fn job() -> skifch_drivers::inproc::InprocJob {
    skifch_drivers::inproc::job(Params {
        nranks: 1,
        nports: 1,
        lane_bytes: 64 << 10,
    })
    .expect("in-process job")
    .remove(0)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("proto");
    g.throughput(Throughput::Elements(1));
    for size in SIZES {
        let msg = vec![7u8; size];
        {
            let j = job();
            let ch = j.open(0).expect("port");
            let me = ch.addr();
            g.bench_function(BenchmarkId::new("raw", size), |b| {
                b.iter(|| {
                    ch.send_whole(me, &[IoSlice::new(&msg)]).expect("room");
                    ch.try_recv_with(|m| black_box(m.as_contiguous().map(|s| s[0])))
                        .expect("message");
                })
            });
        }
        for (name, args) in [("am", &[][..]), ("am_args", &[1u64, 2][..])] {
            let j = job();
            // The context: a sum the handler adds each payload's first byte to.
            let mut ep = Endpoint::new(
                skifch::Driver::open_port(j.driver(), 0).expect("port"),
                1,
                j.max_message(),
                WaitPolicy::Spin,
                0u64,
            )
            .expect("endpoint");
            ep.register(1, |sum: &mut u64, _: &mut Io<'_, _>, am: &Am<'_>| {
                let p = am.payload().as_contiguous().unwrap_or(&[]);
                *sum += p.first().copied().unwrap_or(0) as u64;
                Ok(())
            })
            .expect("register");
            g.bench_function(BenchmarkId::new(name, size), |b| {
                b.iter(|| {
                    ep.send(0, 1, 5, args, &msg).expect("send");
                    black_box(ep.poll().expect("poll"));
                })
            });
            black_box(*ep.ctx());
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
