//! `waitcheck` — what each waiting policy costs and how fast it wakes, over a real 2-rank shm
//! job (see `benches/README.md`, "Waiting policies (measured)").
//!
//! For each policy (`spin`, `fixed:<us>`, `block`; rank 1 is the receiver under test):
//! * **idle CPU** — rank 1 blocks in `Channel::recv()` for `--idle-s` with nothing arriving;
//!   a monitor thread reads the receiving thread's CPU clock over the window that starts
//!   once the spin period is over (+5 ms) and ends at `--idle-s`: % of one core;
//! * **wake-up latency** — rank 1 asks for a message and blocks in `recv()`; rank 0 sleeps
//!   a random 1–20 ms (so that the receiver is asleep), then sends a message holding a
//!   `CLOCK_MONOTONIC` stamp (system-wide, so both processes read the same clock); rank 1
//!   records now − stamp when `recv()` returns. `--samples` samples: median, p90, p99, max;
//! * **in-spin latency** (fixed spin only) — the same, but rank 0 (spinning) sends at once
//!   or after a random busy wait of up to half the spin period, so that the message lands
//!   while rank 1 still spins; only samples whose message was sent within the spin period
//!   count (their share is reported).
//!
//! Then the floor the OS sets: the same wake-up test between two threads of rank 1's
//! process, with `std::thread::park`/`unpark` (a private futex; test `wake_*_park`) and with
//! a futex word in a shared memfd mapping, as the lane transport sleeps (`wake_*_futex`).
//!
//! Rank r runs on the r-th allowed CPU (`--no-pin`: unpinned). Unpinned on a busy 2-CPU
//! machine, both ranks may end up on one CPU, where a spinning receiver only keeps its
//! sender from running.
//!
//! ```text
//! cargo run --release -p skifch-benches --bin waitcheck
//! cargo run --release -p skifch-benches --bin waitcheck -- --policies fixed:20,block --samples 100
//! ```
//! Output: a table and CSV lines `impl,test,size,value,unit` (`wait_cpu_<policy>` in %,
//! `wake_{p50,p90,p99,max}_<policy>` and `wakespin_{p50,p90,p99,max}_<policy>` in us,
//! `wakespin_share_<policy>` in %) in `--csv`. With `--strict` the exit status is 5 when a
//! requirement is missed (fixed spin idle CPU < 5 % of a core; p99 wake-up ≤ 50 us).
#![deny(unsafe_code)]

use std::io::IoSlice;
use std::path::PathBuf;
use std::process::exit;
use std::time::{Duration, Instant};

use clap::Parser;
use hdrhistogram::Histogram;
use skifch::coll::Barrier;
use skifch::{Channel, Port, WaitPolicy};
use skifch_benches::layers::loadavg;
use skifch_benches::results::{write_csv, Row};
use skifch_benches::{affinity, BenchError, Result};

/// Idle CPU of a fixed-spin receiver must stay below this (% of one core).
const MAX_IDLE_CPU: f64 = 5.0;
/// A sleeping receiver must wake within this of a message (checked at p99).
const MAX_WAKE: Duration = Duration::from_micros(50);
/// Exit status when `--strict` and a requirement is missed.
const EXIT_REQUIREMENT: i32 = 5;
const DATA_PORT: u32 = 0;
const BARRIER_PORT: u32 = 1;

#[derive(Parser, Debug)]
#[command(
    name = "waitcheck",
    about = "Idle CPU and wake-up latency of the waiting policies (spin, fixed:<us>, block)"
)]
struct Args {
    /// Policies to measure, comma-separated.
    #[arg(long, default_value = "spin,fixed:5,fixed:20,block")]
    policies: String,
    /// Seconds the receiver stays blocked for the idle-CPU test.
    #[arg(long, default_value_t = 2.0)]
    idle_s: f64,
    /// Wake-up samples per policy (each waits 1-20 ms).
    #[arg(long, default_value_t = 200)]
    samples: u32,
    /// Seed of the random delays (default: from the clock).
    #[arg(long)]
    seed: Option<u64>,
    /// Where the CSV goes.
    #[arg(long, default_value = "results/waitcheck.csv")]
    csv: PathBuf,
    /// Exit with status 5 when a requirement is missed.
    #[arg(long)]
    strict: bool,
    /// Do not pin rank r to the r-th allowed CPU.
    #[arg(long)]
    no_pin: bool,
}

/// What rank 0 is asked to do (first word of a request from rank 1).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
enum Req {
    /// Sleep 1-20 ms, then send a stamp.
    Sleepy = 1,
    /// Busy-wait up to the given nanoseconds, then send a stamp.
    Busy = 2,
}

fn main() {
    let args = Args::parse();
    let policies = parse_policies(&args.policies).unwrap_or_else(|e| fail("setup", e));
    if !(args.idle_s > 0.05 && args.idle_s < 600.0) || args.samples == 0 {
        fail(
            "setup",
            BenchError::Setup("--idle-s must be in (0.05, 600) and --samples >= 1".into()),
        );
    }
    if let Some(status) = skifch_drivers::launch::self_launch(2) {
        exit(status);
    }
    // The shm driver's waiting is what this tool measures.
    let job = match skifch_drivers::init_concrete() {
        Ok(skifch_drivers::ConcreteJob::Shm(job)) => job,
        Ok(_) => fail(
            "setup",
            BenchError::Setup("waitcheck measures the shm driver: run it with --driver shm".into()),
        ),
        Err(e) => fail("joining the job", e.into()),
    };
    if job.size() != 2 {
        fail(
            "setup",
            BenchError::Setup(format!("needs a 2-rank job, this one has {}", job.size())),
        );
    }
    let cpus = match args.no_pin {
        true => None,
        false => affinity::plan_pinning(2).unwrap_or(None),
    };
    if let Some(cpus) = &cpus {
        if let Err(e) = affinity::pin_to(cpus[job.rank() as usize]) {
            fail("pinning", BenchError::io("sched_setaffinity", e));
        }
    }
    let r = match job.rank() {
        0 => driver(&job, &args, &policies).map(|()| None),
        _ => receiver(&job, &args, &policies, cpus.as_deref()).map(Some),
    };
    match r {
        Ok(None) => {}
        Ok(Some(report)) => {
            drop(job);
            if let Err(e) = write_csv(&args.csv, &report.rows) {
                fail("rank 1", e);
            }
            print!("{}", report.table);
            println!("CSV: {}", args.csv.display());
            if args.strict && !report.met {
                exit(EXIT_REQUIREMENT);
            }
        }
        Err(e) => {
            // Lost, not finalized: the peer stops at once instead of waiting for us.
            job.driver().fabric().ctl().mark_lost(job.rank());
            fail(&format!("rank {}", job.rank()), e)
        }
    }
}

fn fail(who: &str, e: BenchError) -> ! {
    eprintln!("waitcheck: {who}: {e}");
    exit(e.exit_code())
}

fn parse_policies(s: &str) -> Result<Vec<WaitPolicy>> {
    s.split(',')
        .map(|p| WaitPolicy::parse(p).map_err(|e| BenchError::Setup(e.to_string())))
        .collect()
}

/// `spin`, `fixed20`, `block`: the policy's part of a CSV test name.
fn tag(p: WaitPolicy) -> String {
    match p {
        WaitPolicy::Spin => "spin".into(),
        WaitPolicy::Block => "block".into(),
        WaitPolicy::Fixed(d) => format!("fixed{}", d.as_micros()),
    }
}

/// The spin period of a policy (`None`: spins for ever).
fn spin_period(p: WaitPolicy) -> Option<Duration> {
    match p {
        WaitPolicy::Spin => None,
        WaitPolicy::Block => Some(Duration::ZERO),
        WaitPolicy::Fixed(d) => Some(d),
    }
}

type Chan = Channel<<skifch_drivers::ShmDriver as skifch::Driver>::Port>;

/// Rank 0: answers rank 1's requests; rank 0 waits with the default policy except while
/// serving in-spin samples, where it spins so that it answers within the spin period.
fn driver(job: &skifch_drivers::ShmJob, args: &Args, policies: &[WaitPolicy]) -> Result<()> {
    let ch = job.open(DATA_PORT)?;
    let bch = job.open(BARRIER_PORT)?;
    let mut bar = Barrier::new(0, 2);
    let peer = job.addr(1, DATA_PORT);
    let mut rng = SplitMix(args.seed.unwrap_or_else(|| sys::monotonic_ns() ^ 0x5eed));
    for &p in policies {
        // Idle CPU: rank 1 blocks; release it after the window.
        bar.wait(&bch)?;
        std::thread::sleep(Duration::from_secs_f64(args.idle_s) + Duration::from_millis(100));
        send_stamp(&ch, peer)?;
        // Wake-up latency: one request per sample.
        for _ in 0..args.samples {
            let (req, _) = request(&ch)?;
            if req != Req::Sleepy as u32 {
                return Err(BenchError::Check(format!("unexpected request {req}")));
            }
            let us = 1000 + rng.below(19_001);
            std::thread::sleep(Duration::from_micros(us));
            send_stamp(&ch, peer)?;
        }
        if let WaitPolicy::Fixed(_) = p {
            ch.set_wait_policy(WaitPolicy::Spin);
            for _ in 0..args.samples {
                let (req, max_ns) = request(&ch)?;
                if req != Req::Busy as u32 {
                    return Err(BenchError::Check(format!("unexpected request {req}")));
                }
                let until = Instant::now() + Duration::from_nanos(rng.below(max_ns + 1));
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
                send_stamp(&ch, peer)?;
            }
            ch.set_wait_policy(WaitPolicy::default());
        }
    }
    bar.wait(&bch)?;
    Ok(())
}

/// Receives a request: (kind, argument).
fn request<P: Port>(ch: &Channel<P>) -> Result<(u32, u64)> {
    let v = ch.recv()?.to_vec();
    match v.len() {
        12 => Ok((
            u32::from_le_bytes(v[0..4].try_into().unwrap_or_default()),
            u64::from_le_bytes(v[4..12].try_into().unwrap_or_default()),
        )),
        n => Err(BenchError::Check(format!("request of {n} bytes"))),
    }
}

fn send_request<P: Port>(ch: &Channel<P>, req: Req, arg: u64) -> Result<()> {
    let body = [&(req as u32).to_le_bytes()[..], &arg.to_le_bytes()].concat();
    ch.send_all(
        skifch::NetAddr::new(0, DATA_PORT as u16),
        &[IoSlice::new(&body)],
    )?;
    Ok(())
}

/// Sends the current `CLOCK_MONOTONIC` time (ns) to `dst`, stamped just before the send.
fn send_stamp<P: Port>(ch: &Channel<P>, dst: skifch::NetAddr) -> Result<()> {
    let stamp = sys::monotonic_ns().to_le_bytes();
    ch.send_all(dst, &[IoSlice::new(&stamp)])?;
    Ok(())
}

/// Blocks in `recv()` for a stamp; returns (stamp, time of return), both ns.
fn recv_stamp(ch: &Chan) -> Result<(u64, u64)> {
    let m = ch.recv()?;
    let now = sys::monotonic_ns();
    let stamp = m
        .as_contiguous()
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| BenchError::Check(format!("expected an 8-byte stamp, got {m:?}")))?;
    if stamp > now {
        return Err(BenchError::Check(format!(
            "stamp {stamp} is after the receive time {now}: not CLOCK_MONOTONIC?"
        )));
    }
    Ok((stamp, now))
}

/// Percentiles of one latency series, in microseconds.
struct Lat {
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
    n: u64,
}

impl Lat {
    fn of(ns: &[u64]) -> Result<Option<Lat>> {
        if ns.is_empty() {
            return Ok(None);
        }
        let mut h =
            Histogram::<u64>::new(3).map_err(|e| BenchError::Setup(format!("histogram: {e}")))?;
        for &v in ns {
            h.record(v)
                .map_err(|e| BenchError::Setup(format!("histogram: {e}")))?;
        }
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
        Ok(Some(Lat {
            p50: us(0.5),
            p90: us(0.9),
            p99: us(0.99),
            max: h.max() as f64 / 1e3,
            n: h.len(),
        }))
    }

    fn rows(&self, imp: &str, test: &str, policy: &str) -> [Row; 4] {
        let r = |what: &str, v: f64| Row::new(imp, &format!("{test}_{what}_{policy}"), 0, v, "us");
        [
            r("p50", self.p50),
            r("p90", self.p90),
            r("p99", self.p99),
            r("max", self.max),
        ]
    }

    fn cells(l: &Option<Lat>) -> String {
        match l {
            Some(l) => format!(
                "{:>8.1} {:>8.1} {:>8.1} {:>8.1}",
                l.p50, l.p90, l.p99, l.max
            ),
            None => format!("{:>8} {:>8} {:>8} {:>8}", "-", "-", "-", "-"),
        }
    }
}

struct Report {
    rows: Vec<Row>,
    table: String,
    /// Every requirement held.
    met: bool,
}

/// Rank 1: the receiver under test; measures and reports.
fn receiver(
    job: &skifch_drivers::ShmJob,
    args: &Args,
    policies: &[WaitPolicy],
    cpus: Option<&[usize]>,
) -> Result<Report> {
    let ch = job.open(DATA_PORT)?;
    let bch = job.open(BARRIER_PORT)?;
    let mut bar = Barrier::new(1, 2);
    let imp = format!("skifch-{}", job.driver_name());
    let cpu_clock = sys::this_thread_cpu_clock()?;
    let load_before = loadavg();
    let mut rows = Vec::new();
    let mut met = true;
    let mut lines = vec![
        format!(
            "{:<9} {:>7} | {:^35} | {:^35} {:>6}",
            "policy", "idle", "wake-up after 1-20 ms (us)", "message within the spin (us)", "share"
        ),
        format!(
            "{:<9} {:>7} | {:>8} {:>8} {:>8} {:>8} | {:>8} {:>8} {:>8} {:>8} {:>6}",
            "", "CPU %", "p50", "p90", "p99", "max", "p50", "p90", "p99", "max", "%"
        ),
    ];
    let mut verdicts = Vec::new();
    for &p in policies {
        let name = tag(p);
        ch.set_wait_policy(p);
        // (a) Idle CPU after the spin period.
        bar.wait(&bch)?;
        let cpu = idle_cpu(&ch, cpu_clock, p, Duration::from_secs_f64(args.idle_s))?;
        rows.push(Row::new(&imp, &format!("wait_cpu_{name}"), 0, cpu, "%"));
        // (b) Wake-up from sleep.
        let mut wake = Vec::with_capacity(args.samples as usize);
        for _ in 0..args.samples {
            send_request(&ch, Req::Sleepy, 0)?;
            let (stamp, now) = recv_stamp(&ch)?;
            wake.push(now - stamp);
        }
        let wake = Lat::of(&wake)?;
        // (c) Message during the spin period.
        let mut in_spin = Vec::new();
        if let Some(d) = spin_period(p).filter(|d| !d.is_zero()) {
            for _ in 0..args.samples {
                let enter = sys::monotonic_ns();
                send_request(&ch, Req::Busy, d.as_nanos() as u64 / 2)?;
                let (stamp, now) = recv_stamp(&ch)?;
                if stamp.saturating_sub(enter) < d.as_nanos() as u64 {
                    in_spin.push(now - stamp);
                }
            }
        }
        let spun = Lat::of(&in_spin)?;
        if let Some(l) = &wake {
            rows.extend(l.rows(&imp, "wake", &name));
        }
        let share = 100.0 * in_spin.len() as f64 / args.samples as f64;
        if let Some(l) = &spun {
            rows.extend(l.rows(&imp, "wakespin", &name));
        }
        if spin_period(p).is_some_and(|d| !d.is_zero()) {
            rows.push(Row::new(
                &imp,
                &format!("wakespin_share_{name}"),
                0,
                share,
                "%",
            ));
        }
        lines.push(format!(
            "{:<9} {:>7.2} | {} | {} {:>6}",
            name,
            cpu,
            Lat::cells(&wake),
            Lat::cells(&spun),
            if spun.is_some() {
                format!("{share:.0}")
            } else {
                "-".into()
            }
        ));
        // The requirements: fixed spin is nearly free when idle; sleepers wake fast.
        if let WaitPolicy::Fixed(_) = p {
            let ok = cpu < MAX_IDLE_CPU;
            met &= ok;
            verdicts.push(format!(
                "{}: {name}: idle CPU {cpu:.2} % of a core (requirement < {MAX_IDLE_CPU} %)",
                if ok { "ok  " } else { "MISS" }
            ));
        }
        if let (Some(l), Some(_)) = (&wake, spin_period(p)) {
            let limit = MAX_WAKE.as_secs_f64() * 1e6;
            let ok = l.p99 <= limit;
            met &= ok;
            verdicts.push(format!(
                "{}: {name}: p99 wake-up {:.1} us over {} samples (requirement <= {limit:.0} us; max {:.1} us)",
                if ok { "ok  " } else { "MISS" },
                l.p99,
                l.n,
                l.max
            ));
        }
    }
    bar.wait(&bch)?;
    // The floor: bare wake-ups between two threads (rank 0's CPU wakes rank 1's).
    for (floor, name, what) in [
        (Floor::Park, "park", "thread::park/unpark: a private futex"),
        (
            Floor::SharedFutex,
            "futex",
            "futex in shared memory: the cross-process floor",
        ),
    ] {
        let l = Lat::of(&floor_wake(args, floor, cpus.map(|c| c[0]))?)?;
        if let Some(l) = &l {
            rows.extend(l.rows(&imp, "wake", name));
        }
        lines.push(format!(
            "{name:<9} {:>7} | {} | ({what}, two threads)",
            "-",
            Lat::cells(&l)
        ));
    }
    let mut table = lines.join("\n");
    table.push('\n');
    for v in verdicts {
        table.push_str(&v);
        table.push('\n');
    }
    table.push_str(&format!(
        "load average (1, 5, 15 min): before {load_before}, after {}; {}\n",
        loadavg(),
        match cpus {
            Some(c) => format!("rank 0 on CPU {}, rank 1 on CPU {}", c[0], c[1]),
            None => "unpinned".into(),
        }
    ));
    Ok(Report { rows, table, met })
}

/// Blocks in `recv()` for `window` (rank 0 sends after it) while a monitor thread reads
/// this thread's CPU clock from the end of the spin period to the end of the window.
/// Returns the CPU use in % of one core.
fn idle_cpu(ch: &Chan, cpu: sys::CpuClock, p: WaitPolicy, window: Duration) -> Result<f64> {
    let start = Instant::now();
    let skip = spin_period(p).unwrap_or(Duration::ZERO) + Duration::from_millis(5);
    std::thread::scope(|s| {
        let monitor = s.spawn(move || -> Result<f64> {
            std::thread::sleep((start + skip).saturating_duration_since(Instant::now()));
            let (c0, t0) = (cpu.read()?, Instant::now());
            std::thread::sleep((start + window).saturating_duration_since(Instant::now()));
            let (c1, t1) = (cpu.read()?, Instant::now());
            Ok(100.0 * (c1 - c0).as_secs_f64() / (t1 - t0).as_secs_f64())
        });
        let got = recv_stamp(ch);
        let pct = monitor
            .join()
            .map_err(|_| BenchError::Setup("the CPU monitor thread panicked".into()))??;
        let (stamp, _) = got?;
        // The message must be the one sent after the window, not an early one.
        if start.elapsed() < window {
            return Err(BenchError::Check(format!(
                "recv() returned after {:?}, before the {window:?} window ended (stamp {stamp})",
                start.elapsed()
            )));
        }
        Ok(pct)
    })
}

/// A bare OS wake-up, without the channel: the floor under the policies' wake-up latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Floor {
    /// `thread::park`/`unpark`: a futex private to the process (the cheapest kind).
    Park,
    /// A futex word in a shared memfd mapping, through the same `futex_wait`/`futex_wake_all`
    /// as the lane transport: what a wake-up between two processes must pay at least.
    SharedFutex,
}

/// Wake-up latency of a bare `floor` between two threads: a helper thread (on `waker_cpu`)
/// sleeps 1-20 ms, stores a stamp and wakes this one. Nanoseconds per sample.
fn floor_wake(args: &Args, floor: Floor, waker_cpu: Option<usize>) -> Result<Vec<u64>> {
    use skifch_drivers::sys::{futex_wait, futex_wake_all};
    use std::sync::atomic::{AtomicU64, Ordering};
    let region = skifch_drivers::shm::MemfdRegion::create(4096)?;
    let word = sys::first_word(&region);
    let stamp = AtomicU64::new(0);
    let me = std::thread::current();
    let mut rng = SplitMix(args.seed.unwrap_or_else(sys::monotonic_ns) ^ floor as u64);
    let mut out = Vec::with_capacity(args.samples as usize);
    std::thread::scope(|s| {
        let waker = s.spawn(|| -> Result<()> {
            if let Some(c) = waker_cpu {
                affinity::pin_to(c).map_err(|e| BenchError::io("sched_setaffinity", e))?;
            }
            for _ in 0..args.samples {
                // Wait until the previous sample was taken (stamp cleared).
                while stamp.load(Ordering::Acquire) != 0 {
                    std::thread::sleep(Duration::from_micros(200));
                }
                std::thread::sleep(Duration::from_micros(1000 + rng.below(19_001)));
                stamp.store(sys::monotonic_ns().max(1), Ordering::Release);
                match floor {
                    Floor::Park => me.unpark(),
                    Floor::SharedFutex => {
                        word.fetch_add(1, Ordering::Release);
                        futex_wake_all(word);
                    }
                }
            }
            Ok(())
        });
        while out.len() < args.samples as usize {
            // Either wait may return early: the stamp says whether the wake-up is ours.
            let seen = word.load(Ordering::Acquire);
            let t = stamp.load(Ordering::Acquire);
            if t == 0 {
                if waker.is_finished() {
                    break; // it failed: its error comes out of join
                }
                match floor {
                    Floor::Park => std::thread::park_timeout(Duration::from_millis(100)),
                    Floor::SharedFutex => futex_wait(word, seen, Duration::from_millis(100)),
                }
                continue;
            }
            out.push(sys::monotonic_ns().saturating_sub(t));
            stamp.store(0, Ordering::Release);
        }
        waker
            .join()
            .map_err(|_| BenchError::Setup(format!("the {floor:?} waker panicked")))?
    })?;
    if out.len() < args.samples as usize {
        return Err(BenchError::Setup(format!(
            "the {floor:?} waker stopped early"
        )));
    }
    Ok(out)
}

/// splitmix64: enough randomness for delays, no dependency.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform-enough in `0..n` (n ≥ 1).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The unsafe corner: system-wide `CLOCK_MONOTONIC` (comparable across processes, unlike the
/// values of `Instant`), a thread's CPU-time clock that another thread can read, and a
/// futex word in a shared mapping.
mod sys {
    #![allow(unsafe_code)]
    use std::sync::atomic::AtomicU32;
    use std::time::Duration;

    use skifch_drivers::shm::Region;

    use skifch_benches::{BenchError, Result};

    fn read(clk: libc::clockid_t) -> std::io::Result<Duration> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec to write to; a bad clock id only gives EINVAL.
        if unsafe { libc::clock_gettime(clk, &mut ts) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }

    /// `CLOCK_MONOTONIC` in nanoseconds (it cannot fail on Linux; 0 if it ever did).
    pub fn monotonic_ns() -> u64 {
        read(libc::CLOCK_MONOTONIC).map_or(0, |d| d.as_nanos() as u64)
    }

    /// The CPU-time clock of one thread.
    #[derive(Clone, Copy)]
    pub struct CpuClock(libc::clockid_t);

    impl CpuClock {
        /// CPU time the thread has used so far (user + system).
        pub fn read(self) -> Result<Duration> {
            read(self.0).map_err(|e| BenchError::io("reading a thread's CPU clock", e))
        }
    }

    /// The first 4 bytes of `region` as an atomic word (for a futex in shared memory).
    pub fn first_word(region: &skifch_drivers::shm::MemfdRegion) -> &AtomicU32 {
        debug_assert!(region.len() >= 4);
        // SAFETY: the region is a live mapping of at least 4096 bytes, aligned to 4096
        // (`Region` contract), that outlives the borrow; this program reaches it only
        // through this atomic.
        unsafe { &*(region.as_ptr() as *const AtomicU32) }
    }

    /// The calling thread's CPU clock, readable from other threads while this one lives.
    pub fn this_thread_cpu_clock() -> Result<CpuClock> {
        let mut clk: libc::clockid_t = 0;
        // SAFETY: pthread_self() is the live calling thread; `clk` is a valid out pointer.
        let r = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clk) };
        if r != 0 {
            return Err(BenchError::io(
                "pthread_getcpuclockid",
                std::io::Error::from_raw_os_error(r),
            ));
        }
        Ok(CpuClock(clk))
    }
}
