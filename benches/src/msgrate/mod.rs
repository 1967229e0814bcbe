//! The MsgRate tool's harness, generic over the driver: what every rank runs.
//!
//! Rank 0 leads: for each point (test, size) it calibrates and measures ([`crate::measure`]);
//! for each pass it sends a command (test, size, iterations) to every other rank on the
//! control port, then all ranks run the pass between two barriers, and rank 0's elapsed
//! time counts. Ports: [`DATA_PORT`] carries the measured traffic, [`BARRIER_PORT`] is
//! reserved for [`Barrier`], [`CONTROL_PORT`] carries the commands.
//!
//! | test | what one iteration is | value |
//! | --- | --- | --- |
//! | `msgrate` | rank 0 sends one `size`-byte message to rank 1 (the paper's test) | msg/s |
//! | `bandwidth` | derived from `msgrate`: msg/s × size | MB/s |
//! | `latency` | ping-pong 0 → 1 → 0 | µs, half a round trip |
//! | `n2one` | every rank ≥ 1 sends one message to rank 0 (needs ≥ 3 ranks) | msg/s, all senders |
//!
//! A message larger than a send can carry goes as several partial sends and counts as one
//! message. The receiver reads every byte in place (a 64-bit sum, [`crate::check`]) and
//! checks it, as `shm_ring.c` does, so the comparison with the raw ring is fair.

use std::io::IoSlice;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use skifch::coll::Barrier;
use skifch::{Channel, Driver, Error, Job, NetAddr, Port, WaitPolicy};

use crate::check::{sum64, LinePattern};
use crate::measure::{measure, Measured, Plan};
use crate::results::Row;
use crate::{affinity, BenchError, Result, Spinner};

mod table;
mod wire;

pub use table::{table, MPI_IMPLS, RAWRING};
pub use wire::{send_msg, Inbox};
use wire::{send_n, take_n};

/// Port of the measured traffic.
pub const DATA_PORT: u32 = 0;
/// Port reserved for the barrier.
pub const BARRIER_PORT: u32 = 1;
/// Port of rank 0's commands.
pub const CONTROL_PORT: u32 = 2;
/// Round trips of one c2c probe (as `GATE_ROUNDS` in `c2c_gate.h`).
pub const PROBE_ROUNDS: u64 = 5000;
/// Longest wait for the next command (a follower's watchdog, as the peers' 600 s alarm).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// A measured test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    Msgrate,
    Latency,
    N2one,
}

impl Test {
    pub fn name(self) -> &'static str {
        match self {
            Test::Msgrate => "msgrate",
            Test::Latency => "latency",
            Test::N2one => "n2one",
        }
    }
    fn code(self) -> u32 {
        self as u32
    }
    fn from_code(c: u32) -> Option<Test> {
        [Test::Msgrate, Test::Latency, Test::N2one]
            .into_iter()
            .find(|t| t.code() == c)
    }
}

/// Parses `--tests` into the tests in run order. `bandwidth` is derived from `msgrate`
/// (its lines come with every `msgrate` point), so asking for it runs `msgrate`.
///
/// ```
/// use skifch_benches::msgrate::{parse_tests, Test};
/// assert_eq!(parse_tests("latency,bandwidth").unwrap(), vec![Test::Msgrate, Test::Latency]);
/// assert!(parse_tests("msgrate,nope").is_err());
/// ```
pub fn parse_tests(s: &str) -> Result<Vec<Test>> {
    let mut want = [false; 3];
    for t in s.split(',').map(str::trim) {
        match t {
            "msgrate" | "bandwidth" => want[0] = true,
            "latency" => want[1] = true,
            "n2one" => want[2] = true,
            _ => {
                return Err(BenchError::Setup(format!(
                    "unknown test {t:?}: expected msgrate, bandwidth, latency, n2one"
                )))
            }
        }
    }
    Ok([Test::Msgrate, Test::Latency, Test::N2one]
        .into_iter()
        .zip(want)
        .filter_map(|(t, w)| w.then_some(t))
        .collect())
}

/// The c2c gate (`--gate THR_US[:MAXWAIT_S[:LO_US]]`): before a point, probe until the
/// probe is within `[lo_us, thr_us]` or `max_wait_s` has passed; re-measure (twice at most)
/// a point whose before/after probes left that range; after three timed-out waits in a
/// row, stop gating. Same rules as `c2c_gate.h`, but the probe itself differs: it is an
/// 8-byte ping-pong through the channel (library overhead included), not one raw cache
/// line, so its "near" values are higher — choose the threshold from a run with `-v`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gate {
    pub thr_us: f64,
    pub max_wait_s: f64,
    pub lo_us: f64,
}

impl std::str::FromStr for Gate {
    type Err = String;
    /// ```
    /// use skifch_benches::msgrate::Gate;
    /// let g: Gate = "0.3:20:0.05".parse().unwrap();
    /// assert_eq!((g.thr_us, g.max_wait_s, g.lo_us), (0.3, 20.0, 0.05));
    /// assert_eq!("0.3".parse::<Gate>().unwrap().max_wait_s, 60.0);
    /// assert!("x".parse::<Gate>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, String> {
        let mut it = s.split(':');
        let mut num = |d: f64| -> Result<f64, String> {
            match it.next() {
                None => Ok(d),
                Some(v) => v
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| format!("{s:?}: expected THR_US[:MAXWAIT_S[:LO_US]]")),
            }
        };
        let g = Gate {
            thr_us: num(f64::NAN)?,
            max_wait_s: num(60.0)?,
            lo_us: num(0.0)?,
        };
        if g.thr_us.is_nan() || it.next().is_some() {
            return Err(format!("{s:?}: expected THR_US[:MAXWAIT_S[:LO_US]]"));
        }
        Ok(g)
    }
}

/// What the tool was asked to do (the parsed command line).
#[derive(Clone, Debug)]
pub struct Config {
    pub tests: Vec<Test>,
    pub sizes: Vec<usize>,
    pub plan: Plan,
    pub gate: Option<Gate>,
    /// Pin rank r to the r-th allowed CPU.
    pub pin: bool,
    /// The `impl` column; `None`: `skifch-<driver>`.
    pub imp: Option<String>,
    /// Calibration details and probes on stderr.
    pub verbose: bool,
    /// Progress bar on stderr (rank 0).
    pub progress: bool,
}

/// What rank 0 brings home.
#[derive(Clone, Debug)]
pub struct Report {
    pub rows: Vec<Row>,
    /// Lines for the end of the run (skipped tests, gating summary, pinning).
    pub notes: Vec<String>,
}

const CMD_RUN: u32 = 1;
const CMD_EXIT: u32 = 2;
const CMD_LEN: usize = 24;

/// Runs this rank's part of the tool. Rank 0 returns the report; the others `None`.
///
/// # Collective Operation
/// Every rank of the job calls it with the same `cfg`; it needs ≥ 2 ranks and ≥ 3 ports.
/// On an error the caller should mark this rank lost before it drops `job` (e.g.
/// `job.driver().fabric().ctl().mark_lost(rank)`, or exit without finalizing), so that the peers
/// stop at once instead of waiting for it.
pub fn run_rank<D: Driver>(job: &Job<D>, cfg: &Config) -> Result<Option<Report>> {
    let (me, n) = (job.rank(), job.size());
    if n < 2 {
        return Err(BenchError::Setup(format!(
            "the job has {n} rank; the tool needs at least 2 (start it with skifrun -n 2, or without SKIFCH_RANK set)"
        )));
    }
    if job.ports() <= CONTROL_PORT {
        return Err(BenchError::Setup(format!(
            "the job has {} ports per rank; the tool needs {} (SKIFCH_PORTS)",
            job.ports(),
            CONTROL_PORT + 1
        )));
    }
    cfg.plan.validate()?;
    let mut notes = Vec::new();
    // Before pinning: a pinned rank sees one allowed CPU, and took itself for one of
    // several threads sharing it (a yield every 64 empty polls, a system call each, and
    // the CPU given away where another task is runnable).
    let patience = Spinner::patience_for(n as usize);
    if cfg.pin {
        match affinity::plan_pinning(n as usize)
            .map_err(|e| BenchError::io("sched_getaffinity", e))?
        {
            Some(cpus) => affinity::pin_to(cpus[me as usize]).map_err(|e| {
                BenchError::io(format!("pinning rank {me} to CPU {}", cpus[me as usize]), e)
            })?,
            None => notes.push(format!(
                "fewer allowed CPUs than the {n} ranks (or than 2): running unpinned"
            )),
        }
    }
    let maxsize = cfg.sizes.iter().copied().max().unwrap_or(1);
    let data = job.open(DATA_PORT)?;
    data.set_wait_policy(WaitPolicy::Spin);
    let bar_ch = job.open(BARRIER_PORT)?;
    let ctl = job.open(CONTROL_PORT)?;
    let mut r = Rank {
        me,
        n,
        data,
        bar_ch,
        ctl,
        bar: Barrier::new(me, n),
        src: LinePattern::new(maxsize.max(8)),
        inbox: Inbox::new(n),
        patience,
    };
    if me != 0 {
        r.follow()?;
        return Ok(None);
    }
    let imp = cfg
        .imp
        .clone()
        .unwrap_or_else(|| format!("skifch-{}", job.driver_name()));
    let res = r.lead(cfg, &imp, &mut notes);
    // Tell the followers to stop, also after an error (best effort: they may be mid-pass,
    // then the caller's "leave without finalizing" stops them).
    let stop = r.command(CMD_EXIT, Test::Msgrate, 0, 0);
    let rows = res?;
    stop?;
    Ok(Some(Report { rows, notes }))
}

struct Rank<P: Port> {
    me: u32,
    n: u32,
    data: Channel<P>,
    bar_ch: Channel<P>,
    ctl: Channel<P>,
    bar: Barrier,
    src: LinePattern,
    inbox: Inbox,
    /// Spins before a yield while waiting ([`Spinner`]).
    patience: u32,
}

impl<P: Port> Rank<P> {
    fn to(&self, rank: u32) -> NetAddr {
        NetAddr::new(rank as u16, DATA_PORT as u16)
    }

    /// One pass of `iters` iterations, on every rank between two barriers; seconds elapsed.
    fn pass(&mut self, test: Test, size: usize, iters: u64) -> Result<f64> {
        let msg = &self.src.as_slice()[..size];
        self.inbox.start(size, sum64(msg));
        // A rank with no part in a two-rank test sleeps in the barriers: spinning, it would
        // take a CPU from the two that measure when there are more ranks than CPUs.
        let idle = test != Test::N2one && self.me >= 2;
        self.bar_ch.set_wait_policy(if idle {
            WaitPolicy::Block
        } else {
            WaitPolicy::Spin
        });
        self.bar.wait(&self.bar_ch)?;
        let t0 = Instant::now();
        match (test, self.me) {
            (Test::Msgrate, 0) => send_n(&self.data, self.to(1), msg, iters, self.patience)?,
            (Test::Msgrate, 1) => take_n(&mut self.inbox, &self.data, iters, self.patience)?,
            (Test::Latency, 0) => {
                let to = self.to(1);
                for _ in 0..iters {
                    send_msg(&self.data, to, msg, self.patience)?;
                    self.inbox.take(&self.data, 1, self.patience)?;
                }
            }
            (Test::Latency, 1) => {
                let to = self.to(0);
                for _ in 0..iters {
                    self.inbox.take(&self.data, 1, self.patience)?;
                    send_msg(&self.data, to, msg, self.patience)?;
                }
            }
            (Test::N2one, 0) => {
                self.inbox
                    .take(&self.data, iters * (self.n as u64 - 1), self.patience)?
            }
            (Test::N2one, _) => {
                let to = self.to(0);
                for _ in 0..iters {
                    send_msg(&self.data, to, msg, self.patience)?;
                }
            }
            _ => {} // ranks >= 2 only take part in the barriers of two-rank tests
        }
        self.bar.wait(&self.bar_ch)?;
        Ok(t0.elapsed().as_secs_f64())
    }

    /// Rank 0: sends a command to every other rank.
    fn command(&self, kind: u32, test: Test, size: usize, iters: u64) -> Result<()> {
        let mut b = [0u8; CMD_LEN];
        b[0..4].copy_from_slice(&kind.to_le_bytes());
        b[4..8].copy_from_slice(&test.code().to_le_bytes());
        b[8..16].copy_from_slice(&(size as u64).to_le_bytes());
        b[16..24].copy_from_slice(&iters.to_le_bytes());
        for r in 1..self.n {
            self.ctl.send_all(
                NetAddr::new(r as u16, CONTROL_PORT as u16),
                &[IoSlice::new(&b)],
            )?;
        }
        Ok(())
    }

    /// Rank 0: runs one pass on every rank.
    fn run_all(&mut self, test: Test, size: usize, iters: u64) -> Result<f64> {
        self.command(CMD_RUN, test, size, iters)?;
        self.pass(test, size, iters)
    }

    /// Ranks ≥ 1: run what rank 0 commands until it says stop.
    fn follow(&mut self) -> Result<()> {
        loop {
            let mut b = [0u8; CMD_LEN];
            {
                let m = self
                    .ctl
                    .recv_timeout(COMMAND_TIMEOUT)
                    .map_err(|e| match e {
                        Error::TimedOut => BenchError::Stalled(COMMAND_TIMEOUT),
                        e => e.into(),
                    })?;
                if m.src() != NetAddr::new(0, CONTROL_PORT as u16) || m.len() != CMD_LEN {
                    return Err(BenchError::Check(format!(
                        "a {}-byte message from {} on the control port",
                        m.len(),
                        m.src()
                    )));
                }
                m.copy_to(&mut b);
            }
            let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
            let kind = word(0) as u32;
            let test = Test::from_code((word(0) >> 32) as u32);
            let (size, iters) = (word(8) as usize, word(16));
            match (kind, test) {
                (CMD_EXIT, _) => return Ok(()),
                (CMD_RUN, Some(t)) if (1..=self.src.as_slice().len()).contains(&size) => {
                    self.pass(t, size, iters)?;
                }
                _ => {
                    return Err(BenchError::Check(format!(
                        "bad command {kind}/{test:?}/{size} from rank 0"
                    )))
                }
            }
        }
    }

    /// Rank 0: one c2c probe (8-byte ping-pong with rank 1), half a round trip in µs.
    fn probe(&mut self) -> Result<f64> {
        let t = self.run_all(Test::Latency, 8, PROBE_ROUNDS)?;
        Ok(t / (2.0 * PROBE_ROUNDS as f64) * 1e6)
    }

    /// Rank 0: probes until the probe is in range or the wait times out; the last probe.
    fn gate_wait(&mut self, g: &Gate) -> Result<f64> {
        let t0 = Instant::now();
        loop {
            let p = self.probe()?;
            if (g.lo_us..=g.thr_us).contains(&p) || t0.elapsed().as_secs_f64() >= g.max_wait_s {
                return Ok(p);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Rank 0: the whole run.
    fn lead(&mut self, cfg: &Config, imp: &str, notes: &mut Vec<String>) -> Result<Vec<Row>> {
        let mut points: Vec<(Test, usize)> = Vec::new();
        for &t in &cfg.tests {
            if t == Test::N2one && self.n < 3 {
                notes.push(format!(
                    "n2one skipped: it needs >= 3 ranks, this job has {} (run: skifrun -n 4 -- msgrate --tests n2one)",
                    self.n
                ));
                continue;
            }
            points.extend(cfg.sizes.iter().map(|&s| (t, s)));
        }
        let bar = if cfg.progress {
            ProgressBar::new(points.len() as u64)
        } else {
            ProgressBar::hidden()
        };
        if let Ok(style) = ProgressStyle::with_template("{elapsed:>4} [{bar:32}] {pos}/{len} {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        // Ungated, the figures depend on where the two CPUs happen to be (on this VM: shared
        // cache or not, ~3x apart at 8 B): a probe at each end says which it was.
        let ends = if cfg.gate.is_none() {
            Some(self.probe()?)
        } else {
            None
        };
        let mut gate = cfg.gate;
        let (mut timeouts, mut near, mut far, mut redo) = (0, 0, 0, 0);
        let mut probes = (f64::MAX, 0f64);
        let mut rows = Vec::new();
        for (test, size) in points {
            bar.set_message(format!("{} {size} B", test.name()));
            let (m, pb, pa) = loop {
                let pb = match gate {
                    Some(g) => {
                        let p = self.gate_wait(&g)?;
                        timeouts = if (g.lo_us..=g.thr_us).contains(&p) {
                            0
                        } else {
                            timeouts + 1
                        };
                        if timeouts >= 3 {
                            notes.push(format!(
                                "probe outside [{}, {}] us for {} s three times in a row: gate off",
                                g.lo_us, g.thr_us, g.max_wait_s
                            ));
                            gate = None;
                        }
                        Some(p)
                    }
                    None => None,
                };
                let m = measure(&cfg.plan, |iters| self.run_all(test, size, iters))?;
                let pa = match cfg.gate {
                    Some(_) => Some(self.probe()?),
                    None => None,
                };
                let outside = |p: Option<f64>, g: &Gate| {
                    p.is_some_and(|p| !(g.lo_us..=g.thr_us).contains(&p))
                };
                match gate {
                    Some(g) if redo < 2 && (outside(pb, &g) || outside(pa, &g)) => redo += 1,
                    _ => break (m, pb, pa),
                }
            };
            redo = 0;
            if let (Some(g), Some(pb), Some(pa)) = (cfg.gate, pb, pa) {
                probes = (probes.0.min(pb).min(pa), probes.1.max(pb).max(pa));
                if [pb, pa].iter().all(|p| (g.lo_us..=g.thr_us).contains(p)) {
                    near += 1;
                } else {
                    far += 1;
                }
            }
            if cfg.verbose {
                bar.suspend(|| verbose_line(test, size, &m, pb, pa));
            }
            let per = m.per_iter_s;
            match test {
                Test::Msgrate => {
                    let mbs = size as f64 / per / 1e6;
                    rows.push(Row::new(imp, "msgrate", size as u64, 1.0 / per, "msg/s"));
                    rows.push(Row::new(imp, "bandwidth", size as u64, mbs, "MB/s"));
                }
                Test::Latency => {
                    rows.push(Row::new(imp, "latency", size as u64, per / 2.0 * 1e6, "us"))
                }
                Test::N2one => {
                    let rate = (self.n - 1) as f64 / per;
                    rows.push(Row::new(imp, "n2one", size as u64, rate, "msg/s"))
                }
            }
            bar.inc(1);
        }
        bar.finish_and_clear();
        if let Some(p0) = ends {
            let p1 = self.probe()?;
            notes.push(format!(
                "c2c probe (8-byte channel ping-pong, half a round trip) at start/end: {p0:.3}/{p1:.3} us; rates follow the CPUs' placement (a VM's vCPUs move), --gate THR_US measures each point only while the probe is below THR_US"
            ));
        }
        if let Some(g) = cfg.gate {
            notes.push(format!(
                "c2c probe (8-byte channel ping-pong) before/after each point: {near} points within [{}, {}] us, {far} not; probes {:.3}..{:.3} us",
                g.lo_us, g.thr_us, probes.0, probes.1
            ));
        }
        Ok(rows)
    }
}

fn verbose_line(test: Test, size: usize, m: &Measured, pb: Option<f64>, pa: Option<f64>) {
    let passes: Vec<String> = m
        .passes
        .iter()
        .map(|s| format!("{:.4e}", 1.0 / s))
        .collect();
    let probes = match (pb, pa) {
        (Some(b), Some(a)) => format!("; probe before/after {b:.3}/{a:.3} us"),
        _ => String::new(),
    };
    eprintln!(
        "# {} {size}: calib n={} t={:.4}s; measured n={}: {} iter/s{probes}",
        test.name(),
        m.calib.0,
        m.calib.1,
        m.iters,
        passes.join(" ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Stat;
    use skifch_drivers::inproc as local;
    use skifch_drivers::shm::Params;

    fn quick(tests: &str, sizes: &[usize]) -> Config {
        Config {
            tests: parse_tests(tests).unwrap(),
            sizes: sizes.to_vec(),
            plan: Plan {
                target_s: 0.003,
                reps: 3,
                stat: Stat::Median,
                calib_min_s: 0.001,
            },
            gate: None,
            pin: false,
            imp: None,
            verbose: false,
            progress: false,
        }
    }

    fn run(n: u32, lane_kb: usize, cfg: Config) -> Report {
        let p = Params {
            nranks: n,
            nports: 3,
            lane_bytes: lane_kb << 10,
        };
        let out = local::run_with(p, move |job| {
            run_rank(&job, &cfg).map_err(|e| skifch::Error::Bootstrap(e.to_string().into()))
        })
        .unwrap();
        out.into_iter().next().unwrap().unwrap()
    }

    #[test]
    fn every_test_yields_positive_values_in_process() {
        // 4 KiB lanes: the 9000-byte messages must go as partial sends.
        let rep = run(
            3,
            4,
            quick("msgrate,bandwidth,latency,n2one", &[1, 13, 9000]),
        );
        let names: Vec<_> = rep.rows.iter().map(|r| (r.test.as_str(), r.size)).collect();
        for t in ["msgrate", "bandwidth", "latency", "n2one"] {
            for s in [1, 13, 9000] {
                assert!(names.contains(&(t, s)), "{t} {s} missing: {names:?}");
            }
        }
        for r in &rep.rows {
            assert_eq!(r.imp, "skifch-local");
            assert!(r.value.is_finite() && r.value > 0.0, "{r:?}");
        }
        let rate = rep
            .rows
            .iter()
            .find(|r| r.test == "msgrate" && r.size == 9000)
            .unwrap();
        let bw = rep
            .rows
            .iter()
            .find(|r| r.test == "bandwidth" && r.size == 9000)
            .unwrap();
        assert!((bw.value - rate.value * 9000.0 / 1e6).abs() < 1e-6 * bw.value);
    }

    #[test]
    fn n2one_is_skipped_with_two_ranks() {
        let rep = run(2, 64, quick("n2one,latency", &[8]));
        assert_eq!(rep.rows.len(), 1);
        assert_eq!(rep.rows[0].test, "latency");
        assert!(rep.notes.iter().any(|n| n.contains("n2one skipped")));
    }

    #[test]
    fn one_rank_or_two_ports_are_refused() {
        let cfg = quick("msgrate", &[8]);
        let one = local::job(Params {
            nranks: 1,
            nports: 3,
            lane_bytes: 4096,
        })
        .unwrap();
        let e = run_rank(&one[0], &cfg).unwrap_err();
        assert!(e.to_string().contains("at least 2"), "{e}");
        let two = local::job(Params {
            nranks: 2,
            nports: 2,
            lane_bytes: 4096,
        })
        .unwrap();
        let e = run_rank(&two[0], &cfg).unwrap_err();
        assert!(e.to_string().contains("SKIFCH_PORTS"), "{e}");
    }
}
