//! `ringcmp` — the two ring designs under one harness (see `benches/README.md`, "Ring designs").
//!
//! * `ring-lanes` (B, kept): [`skifch_drivers::shm::lane`] through the in-process job — one
//!   single-producer lane per (sender, receiver) pair, no atomic RMW on the send path;
//!   sends go through the real `Channel::send_whole` (with its per-send checks).
//! * `ring-mpsc` (A): [`skifch_benches::mpsc_ring`] — one ring per receiver, producers
//!   reserve space with a CAS on a shared index and mark records ready.
//!
//! Each point: S sender threads each send N messages of `size` bytes to one receiver thread,
//! which reads every byte in place and checks it; rate = S·N / the receiver's elapsed time
//! (from a common start to the last message). Calibration and median as in the MsgRate tool.
//! Threads are pinned (receiver on the first allowed CPU, senders on the next) when there are
//! enough CPUs, else unpinned.
//!
//! ```text
//! cargo run --release -p skifch-benches --bin ringcmp            # 1 and 3 senders; 8, 64, 2048 B
//! cargo run --release -p skifch-benches --bin ringcmp -- --quick
//! ```

use std::io::IoSlice;
use std::path::PathBuf;
use std::process::exit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use clap::Parser;
use skifch::{Channel, Driver, Error, NetAddr};
use skifch_benches::check::{pattern, sum64, Sum64};
use skifch_benches::measure::{measure, MeasureArgs, Plan};
use skifch_benches::mpsc_ring::{self, TrySendError};
use skifch_benches::results::{si, write_csv, Row};
use skifch_benches::{affinity, parse_list, parse_sizes, BenchError, Result, Spinner};
use skifch_drivers::inproc::InprocDriver;
use skifch_drivers::shm::Params;

#[derive(Parser, Debug)]
#[command(
    name = "ringcmp",
    about = "Lane rings vs one multi-producer ring per receiver"
)]
struct Args {
    /// Message sizes in bytes, comma-separated.
    #[arg(long, default_value = "8,64,2048")]
    sizes: String,
    /// Sender counts, comma-separated (each runs S senders -> 1 receiver).
    #[arg(long, default_value = "1,3")]
    senders: String,
    #[command(flatten)]
    measure: MeasureArgs,
    /// Bytes of each ring in KiB (one lane per sender for B; one ring per receiver for A).
    #[arg(long, default_value_t = 64)]
    cap_kb: usize,
    /// Where the CSV goes.
    #[arg(long, default_value = "results/ringcmp.csv")]
    csv: PathBuf,
    /// Do not pin threads.
    #[arg(long)]
    no_pin: bool,
}

/// What a ring design offers the harness.
trait Design {
    const NAME: &'static str;
    type Tx: Send;
    type Rx: Send;
    /// `senders` producers and one consumer over rings of `cap` bytes.
    fn build(senders: usize, cap: usize) -> Result<(Vec<Self::Tx>, Self::Rx)>;
    /// Sends `msg` whole; `false` when there is no room now.
    fn send(tx: &mut Self::Tx, msg: &[u8]) -> Result<bool>;
    /// Takes one ready message, reading every byte into `sum`; its length.
    fn recv(rx: &mut Self::Rx, sum: &mut Sum64) -> Result<Option<usize>>;
}

type LaneChannel = Channel<<InprocDriver as Driver>::Port>;

struct Lanes;
impl Design for Lanes {
    const NAME: &'static str = "ring-lanes";
    type Tx = LaneChannel;
    type Rx = LaneChannel;
    fn build(senders: usize, cap: usize) -> Result<(Vec<LaneChannel>, LaneChannel)> {
        let jobs = skifch_drivers::inproc::job(Params {
            nranks: senders as u32 + 1,
            nports: 1,
            lane_bytes: cap,
        })?;
        let rx = jobs[0].open(0)?;
        let txs = jobs[1..]
            .iter()
            .map(|j| j.open(0))
            .collect::<Result<_, _>>()?;
        Ok((txs, rx))
    }
    #[inline]
    fn send(tx: &mut LaneChannel, msg: &[u8]) -> Result<bool> {
        match tx.send_whole(NetAddr::new(0, 0), &[IoSlice::new(msg)]) {
            Ok(()) => Ok(true),
            Err(Error::WouldBlock) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
    #[inline]
    fn recv(rx: &mut LaneChannel, sum: &mut Sum64) -> Result<Option<usize>> {
        match rx.try_recv() {
            Ok(m) => {
                for s in m.segments() {
                    sum.update(s);
                }
                Ok(Some(m.len()))
            }
            Err(Error::WouldBlock) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

struct Mpsc;
impl Design for Mpsc {
    const NAME: &'static str = "ring-mpsc";
    type Tx = mpsc_ring::Sender;
    type Rx = mpsc_ring::Receiver;
    fn build(senders: usize, cap: usize) -> Result<(Vec<Self::Tx>, Self::Rx)> {
        let (tx, rx) = mpsc_ring::ring(cap)?;
        Ok((vec![tx; senders], rx))
    }
    #[inline]
    fn send(tx: &mut Self::Tx, msg: &[u8]) -> Result<bool> {
        match tx.try_send(msg) {
            Ok(()) => Ok(true),
            Err(TrySendError::Full) => Ok(false),
            Err(TrySendError::TooLarge { len, max }) => Err(BenchError::Setup(format!(
                "a {len}-byte message does not fit a ring (max {max}); use a larger --cap-kb"
            ))),
        }
    }
    #[inline]
    fn recv(rx: &mut Self::Rx, sum: &mut Sum64) -> Result<Option<usize>> {
        Ok(rx.try_recv()?.map(|r| {
            for s in r.segments() {
                sum.update(s);
            }
            r.len()
        }))
    }
}

/// One pass: every sender sends `iters` messages; the receiver's elapsed seconds.
fn pass<D: Design>(
    txs: &mut [D::Tx],
    rx: &mut D::Rx,
    msg: &[u8],
    iters: u64,
    cpus: Option<&[usize]>,
    patience: u32,
) -> Result<f64> {
    let total = iters * txs.len() as u64;
    let start = std::sync::Barrier::new(txs.len() + 1);
    let stop = AtomicBool::new(false);
    let expect = sum64(msg);
    std::thread::scope(|s| {
        let (start, stop) = (&start, &stop);
        let handles: Vec<_> = txs
            .iter_mut()
            .enumerate()
            .map(|(k, tx)| {
                s.spawn(move || -> Result<()> {
                    let pinned = match cpus {
                        Some(c) => {
                            affinity::pin_to(c[k + 1]).map_err(|e| BenchError::io("pinning", e))
                        }
                        None => Ok(()),
                    };
                    start.wait();
                    let res = pinned.and_then(|_| {
                        for _ in 0..iters {
                            let mut sp: Option<Spinner> = None;
                            while !D::send(tx, msg)? {
                                if stop.load(Ordering::Relaxed) {
                                    return Ok(()); // the receiver failed; it reports why
                                }
                                sp.get_or_insert_with(|| Spinner::new(patience)).idle()?;
                            }
                        }
                        Ok(())
                    });
                    if res.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    res
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        let mut recv_all = || -> Result<()> {
            let (mut got, mut sp) = (0u64, Spinner::new(patience));
            while got < total {
                let mut sum = Sum64::default();
                match D::recv(rx, &mut sum)? {
                    Some(len) if len == msg.len() && sum.finish() == expect => {
                        got += 1;
                        sp = Spinner::new(patience);
                    }
                    Some(len) => {
                        return Err(BenchError::Check(format!(
                        "{}: a {len}-byte message with sum {:#x}; sent {} bytes, sum {expect:#x}",
                        D::NAME,
                        sum.finish(),
                        msg.len()
                    )))
                    }
                    None if stop.load(Ordering::Relaxed) => {
                        return Err(BenchError::Setup(format!("{}: a sender failed", D::NAME)))
                    }
                    None => sp.idle()?,
                }
            }
            Ok(())
        };
        let res = recv_all();
        let elapsed = t0.elapsed().as_secs_f64();
        if res.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        // A sender's own error first: the receiver's is then only its echo.
        for h in handles {
            h.join()
                .map_err(|_| BenchError::Setup(format!("{}: a sender panicked", D::NAME)))??;
        }
        res.map(|_| elapsed)
    })
}

/// Measures one design at one point; aggregate msg/s.
fn point<D: Design>(
    plan: &Plan,
    senders: usize,
    size: usize,
    cap: usize,
    cpus: Option<&[usize]>,
) -> Result<f64> {
    let (mut txs, mut rx) = D::build(senders, cap)?;
    let msg = pattern(size);
    let patience = Spinner::patience_for(senders + 1);
    let m = measure(plan, |iters| {
        pass::<D>(&mut txs, &mut rx, &msg, iters, cpus, patience)
    })?;
    Ok(senders as f64 / m.per_iter_s)
}

fn run(args: &Args) -> Result<()> {
    let plan = args.measure.plan()?;
    let sizes = parse_sizes(if args.measure.quick {
        "8,2048"
    } else {
        &args.sizes
    })?;
    let senders = parse_list(&args.senders, "sender count")?;
    let cap = args.cap_kb << 10;
    let mut rows = Vec::new();
    let mut lines = vec![[
        "size",
        "senders",
        "lanes msg/s",
        "mpsc msg/s",
        "lanes/mpsc",
        "pinned",
    ]
    .map(String::from)];
    for &s in &senders {
        let cpus = if args.no_pin {
            None
        } else {
            affinity::plan_pinning(s + 1).map_err(|e| BenchError::io("sched_getaffinity", e))?
        };
        if let Some(c) = &cpus {
            affinity::pin_to(c[0]).map_err(|e| BenchError::io("pinning", e))?;
        }
        for &size in &sizes {
            let test = format!("rate_{s}to1");
            let lanes = point::<Lanes>(&plan, s, size, cap, cpus.as_deref())?;
            let mpsc = point::<Mpsc>(&plan, s, size, cap, cpus.as_deref())?;
            rows.push(Row::new(Lanes::NAME, &test, size as u64, lanes, "msg/s"));
            rows.push(Row::new(Mpsc::NAME, &test, size as u64, mpsc, "msg/s"));
            lines.push([
                size.to_string(),
                s.to_string(),
                si(lanes),
                si(mpsc),
                format!("{:.2}", lanes / mpsc),
                if cpus.is_some() { "yes" } else { "no" }.to_string(),
            ]);
        }
    }
    for l in &lines {
        println!(
            "{:>6}  {:>7}  {:>11}  {:>10}  {:>10}  {:>6}",
            l[0], l[1], l[2], l[3], l[4], l[5]
        );
    }
    write_csv(&args.csv, &rows)?;
    println!("CSV: {}", args.csv.display());
    Ok(())
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("ringcmp: {e}");
        exit(e.exit_code());
    }
}
