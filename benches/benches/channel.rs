//! Criterion micro-benchmarks of single channel operations, on one thread of an in-process
//! job (`skifch_drivers::inproc::job`), so they need no launcher:
//!
//! * `send/<size>` — `Channel::send_whole` into a lane that the same thread drains (the
//!   draining is not timed);
//! * `recv_complete/<size>` — `try_recv` + dropping the guard (RecvComp) of messages already
//!   in the lane (the filling is not timed);
//! * `roundtrip/<size>` — send, receive, complete, all on one thread;
//! * `ring/{lanes,mpsc}/<size>` — the same round trip on the two ring designs that `ringcmp`
//!   compares (lane transport vs `mpsc_ring`), with no contention.
//!
//! ```text
//! cargo bench -p skifch-benches --bench channel
//! cargo bench -p skifch-benches --bench channel -- --warm-up-time 0.1 --measurement-time 0.2 send/8
//! ```
#![allow(missing_docs)] // criterion_group! generates undocumented functions

use std::hint::black_box;
use std::io::IoSlice;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Bencher, BenchmarkId, Criterion, Throughput};
use skifch::{Channel, Driver, Error, NetAddr};
use skifch_benches::check::pattern;
use skifch_benches::mpsc_ring;
use skifch_drivers::inproc::InprocDriver;
use skifch_drivers::shm::Params;

const SIZES: [usize; 3] = [8, 64, 2048];
const LANE: usize = 64 << 10;

type LocalChannel = Channel<<InprocDriver as Driver>::Port>;

/// A one-rank job whose port 0 sends to itself (the lane from port 0 to port 0).
fn self_channel() -> (LocalChannel, NetAddr) {
    let jobs = skifch_drivers::inproc::job(Params {
        nranks: 1,
        nports: 1,
        lane_bytes: LANE,
    })
    .expect("in-process job");
    let ch = jobs[0].open(0).expect("open port 0");
    let me = ch.addr();
    (ch, me)
}

fn drain(ch: &LocalChannel) {
    while let Ok(m) = ch.try_recv() {
        black_box(m.len());
    }
}

/// One benchmark per size in group `name`, each on a fresh self-sending channel.
fn per_size(
    c: &mut Criterion,
    name: &str,
    f: impl Fn(&mut Bencher<'_>, &LocalChannel, NetAddr, &[u8]),
) {
    let mut g = c.benchmark_group(name);
    for size in SIZES {
        let (ch, me) = self_channel();
        let msg = pattern(size);
        g.throughput(Throughput::Elements(1));
        g.bench_function(BenchmarkId::from_parameter(size), |b| f(b, &ch, me, &msg));
    }
    g.finish();
}

fn send(c: &mut Criterion) {
    per_size(c, "send", |b, ch, me, msg| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            let mut t0 = Instant::now();
            for _ in 0..iters {
                loop {
                    match ch.send_whole(me, &[IoSlice::new(msg)]) {
                        Ok(()) => break,
                        Err(Error::WouldBlock) => {
                            timed += t0.elapsed();
                            drain(ch);
                            t0 = Instant::now();
                        }
                        Err(e) => panic!("send: {e}"),
                    }
                }
            }
            timed += t0.elapsed();
            drain(ch);
            timed
        })
    });
}

fn recv_complete(c: &mut Criterion) {
    per_size(c, "recv_complete", |b, ch, me, msg| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let mut filled = 0;
                while filled < left && ch.send_whole(me, &[IoSlice::new(msg)]).is_ok() {
                    filled += 1;
                }
                let t0 = Instant::now();
                for _ in 0..filled {
                    let m = ch.try_recv().expect("a queued message");
                    black_box(m.segments().next());
                }
                timed += t0.elapsed();
                left -= filled;
            }
            timed
        })
    });
}

/// Send, receive, complete on one thread.
fn lane_roundtrip(b: &mut Bencher<'_>, ch: &LocalChannel, me: NetAddr, msg: &[u8]) {
    b.iter(|| {
        ch.send_whole(me, &[IoSlice::new(msg)]).expect("room");
        let m = ch.try_recv().expect("the message just sent");
        black_box(m.len())
    })
}

fn roundtrip(c: &mut Criterion) {
    per_size(c, "roundtrip", lane_roundtrip);
}

/// An empty poll (`try_recv` finding nothing) on a channel that has received before: its
/// cost bounds how soon a polling receiver notices a message.
fn poll_empty(c: &mut Criterion) {
    let (ch, me) = self_channel();
    ch.send_whole(me, &[IoSlice::new(b"x")]).expect("room");
    drain(&ch);
    c.bench_function("poll_empty", |b| {
        b.iter(|| matches!(black_box(ch.try_recv()), Err(Error::WouldBlock)))
    });
}

fn ring(c: &mut Criterion) {
    let mut g = c.benchmark_group("ring");
    for size in SIZES {
        let msg = pattern(size);
        g.throughput(Throughput::Elements(1));
        let (ch, me) = self_channel();
        g.bench_function(BenchmarkId::new("lanes", size), |b| {
            lane_roundtrip(b, &ch, me, &msg)
        });
        let (mut tx, mut rx) = mpsc_ring::ring(LANE).expect("ring");
        g.bench_function(BenchmarkId::new("mpsc", size), |b| {
            b.iter(|| {
                tx.try_send(&msg).expect("room");
                let r = rx
                    .try_recv()
                    .expect("sound ring")
                    .expect("the record just sent");
                black_box(r.len())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, send, recv_complete, roundtrip, poll_empty, ring);
criterion_main!(benches);
