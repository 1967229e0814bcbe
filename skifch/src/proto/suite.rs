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
const H_HDR: u8 = 3;
const H_HDR_ACK: u8 = 4;

/// Checks a header-only message of the suite: no payload, and argument `i` is
/// `arg * 7 + i` (none, or up to three).
fn check_header(what: &str, am: &Am<'_>) -> Result<()> {
    let ok = am.payload().is_empty()
        && am
            .args()
            .iter()
            .enumerate()
            .all(|(i, &a)| a == u64::from(am.arg()) * 7 + i as u64);
    if !ok {
        return Err(fail(
            what,
            format!("bad header-only message from {}", am.src()),
        ));
    }
    Ok(())
}

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
    // Header-only messages (`send_header`, a driver's word path where it has one), and
    // replies to them from the handler (`Io::send_header`), with 0 to 3 arguments.
    ep.register(H_HDR, |got: &mut usize, io: &mut Io<'_, _>, am: &Am<'_>| {
        check_header("header-only message", am)?;
        *got += 1;
        io.send_header(am.src(), H_HDR_ACK, am.arg(), am.args())
    })?;
    ep.register(
        H_HDR_ACK,
        |got: &mut usize, _: &mut Io<'_, _>, am: &Am<'_>| {
            check_header("header-only reply", am)?;
            // Counts its argument too: a reply with a wrong one (nothing to check it
            // against when it has no arguments) leaves the total short or long.
            *got += am.arg() as usize + 1;
            Ok(())
        },
    )?;
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
        for d in 0..n {
            let args: Vec<u64> = (0..(k + d) as u64 % 4)
                .map(|i| u64::from(k) * 7 + i)
                .collect();
            ep.send_header((me + d) % n, H_HDR, k, &args)?;
        }
        let peer = (me + 1 + k) % n;
        let len = sizes[k as usize % sizes.len()];
        let mut buf = vec![0u8; len];
        let r = ep.call(peer, H_GET, 0, &[len as u64], &[], &mut buf)?;
        if r.arg != peer || buf != pattern(peer as usize, len) {
            return Err(fail("get", format!("bad reply from {peer} ({len} bytes)")));
        }
    }
    // Each rank gets rounds * n data messages and header-only messages, and n replies to
    // its own of round k, each counted k + 1.
    let (rounds, ranks) = (cfg.rounds as usize, n as usize);
    let want = 2 * rounds * ranks + ranks * rounds * (rounds + 1) / 2;
    ep.progress_until(|ep| *ep.ctx() >= want, Some(Duration::from_secs(120)))?;
    if let Some(e) = ep.take_error() {
        return Err(e);
    }
    if *ep.ctx() != want {
        return Err(fail(
            "active messages",
            format!("counted {}, expected {want}", ep.ctx()),
        ));
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
