//! A self-check of the protocol layer and the collectives on any driver, SPMD like
//! [`crate::conformance`]: every rank of a job calls [`run`] with its [`Job`]. Used by the
//! in-process tests, by a multi-process job under `skifrun` (shm) and by the FPGA driver
//! over its device model, so the same traffic checks every transport.
//!
//! ```
//! use skifch::{local, proto::suite};
//! local::run(3, |job| suite::run(&job, 1, &suite::Config::small())).unwrap();
//! ```

use std::time::Duration;

use super::{Am, Endpoint, Io, Landing, Phase};
use crate::coll::ops::fold;
use crate::coll::{self, DType, Kernel, Op, ProtoGroup, Transport};
use crate::{Driver, Error, Job, Result};

/// How much traffic the suite makes.
#[derive(Clone, Debug)]
pub struct Config {
    /// Rounds of the all-to-all active-message exchange.
    pub rounds: u32,
    /// Largest message (it is also made larger than one channel message).
    pub max_len: usize,
}

impl Config {
    /// Quick (debug builds, CI).
    pub fn small() -> Config {
        Config {
            rounds: 10,
            max_len: 100_000,
        }
    }
}

const H_DATA: u8 = 1;
const H_GET: u8 = 2;

fn fail(what: &str, why: String) -> Error {
    Error::InvalidArgument(format!("proto suite: {what}: {why}").into())
}

fn pattern(seed: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i * 13 + seed * 7 + i / 251) as u8)
        .collect()
}

/// Runs every check; all ranks call it with the same `port` and `cfg`.
pub fn run<D: Driver>(job: &Job<D>, port: u32, cfg: &Config) -> Result<()> {
    // The context: how many active messages arrived intact.
    let mut ep = Endpoint::open_with(job, port, 0usize)?;
    let (me, n) = (ep.rank(), ep.size());
    ep.register(H_DATA, |got: &mut usize, _: &mut Io<'_, _>, am: &Am<'_>| {
        let data = match am.phase() {
            Phase::Whole => am.payload().to_vec(),
            Phase::LongStart { total } => {
                am.place(Landing::vec(total as usize));
                return Ok(());
            }
            Phase::LongDone { .. } => am
                .take_landing()
                .and_then(Landing::into_vec)
                .unwrap_or_default(),
        };
        let seed = am.src() as usize * 1000 + am.arg() as usize;
        if data != pattern(seed, data.len()) {
            return Err(fail(
                "active message",
                format!("corrupt data from {}", am.src()),
            ));
        }
        *got += 1;
        Ok(())
    })?;
    ep.register(H_GET, |_: &mut usize, io: &mut Io<'_, _>, am: &Am<'_>| {
        let to = am
            .reply_to()
            .ok_or_else(|| fail("get", "not a request".into()))?;
        let len = am.args().first().copied().unwrap_or(0) as usize;
        let me = io.rank();
        io.reply(to, me, &[], &pattern(me as usize, len))
    })?;
    ep.barrier()?;

    // Active messages: everyone to everyone at sizes from 0 to beyond one channel message,
    // interleaved with gets whose replies may be long.
    let sizes = [0, 8, 1000, job.max_message() + 100, cfg.max_len];
    for k in 0..cfg.rounds {
        for d in 0..n {
            let len = sizes[(k + d) as usize % sizes.len()];
            let dst = (me + d) % n;
            ep.send(
                dst,
                H_DATA,
                k,
                &[],
                &pattern(me as usize * 1000 + k as usize, len),
            )?;
        }
        let peer = (me + 1 + k) % n;
        let len = sizes[k as usize % sizes.len()];
        let mut buf = vec![0u8; len];
        let r = ep.call(peer, H_GET, 0, &[len as u64], &[], &mut buf)?;
        if r.arg != peer || buf != pattern(peer as usize, len) {
            return Err(fail("get", format!("bad reply from {peer} ({len} bytes)")));
        }
    }
    let want = (cfg.rounds * n) as usize;
    ep.progress_until(|ep| *ep.ctx() == want, Some(Duration::from_secs(120)))?;
    if let Some(e) = ep.take_error() {
        return Err(e);
    }

    // Collectives against sequential references.
    let g = ProtoGroup::world(&ep);
    let w = g.on(&mut ep);
    let (r, n) = (w.rank(), w.size());
    for (dt, op, count) in [
        (DType::I64, Op::Sum, 3),
        (DType::F64, Op::Max, 5),
        (DType::U32, Op::Bxor, coll::ALLREDUCE_RING / 4 + 3),
        (DType::DoubleInt, Op::MinLoc, 4),
    ] {
        let k = Kernel::new(dt, op)?;
        let ins: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                (0..count * dt.size())
                    .map(|b| {
                        if b % 8 < 2 {
                            ((b + i * 3) % 5) as u8
                        } else {
                            0
                        }
                    })
                    .collect()
            })
            .collect();
        let mut out = vec![0u8; ins[r].len()];
        coll::allreduce(&w, &ins[r], &mut out, &k)?;
        if out != fold(&k, &ins) {
            return Err(fail("allreduce", format!("{dt:?} {op:?} x{count}")));
        }
        coll::scan(&w, &ins[r], &mut out, &k)?;
        if out != fold(&k, &ins[..=r]) {
            return Err(fail("scan", format!("{dt:?} {op:?} x{count}")));
        }
    }
    for len in [1, coll::BCAST_LONG + 1, cfg.max_len] {
        let root = len % n;
        let mut buf = if r == root {
            pattern(len, len)
        } else {
            vec![0u8; len]
        };
        coll::bcast(&w, root, &mut buf)?;
        if buf != pattern(len, len) {
            return Err(fail("bcast", format!("{len} bytes from {root}")));
        }
        let blk = len / n + 1;
        let send: Vec<u8> = (0..n).flat_map(|j| pattern(r * n + j, blk)).collect();
        let mut recv = vec![0u8; send.len()];
        coll::alltoall(&w, &send, &mut recv)?;
        let want: Vec<u8> = (0..n).flat_map(|i| pattern(i * n + r, blk)).collect();
        if recv != want {
            return Err(fail("alltoall", format!("{blk}-byte blocks")));
        }
        let mut all = vec![0u8; n * blk];
        coll::allgather(&w, &pattern(r, blk), &mut all)?;
        if all != (0..n).flat_map(|i| pattern(i, blk)).collect::<Vec<u8>>() {
            return Err(fail("allgather", format!("{blk}-byte blocks")));
        }
    }
    coll::barrier(&w)?;
    ep.barrier()
}
