//! How one point (test, size) is measured — the rule of `../shared/peers` (`measure()` in
//! `shm_ring.c`): a calibration pass whose iteration count doubles (×8 while a pass is
//! under 1/20 of the minimum) until one pass takes at least `calib_min_s`; then `reps`
//! passes that add up to about `target_s`; the median pass (or the fastest) is reported.

use crate::{BenchError, Result};

/// The measuring options shared by the tools (`#[command(flatten)]` them).
#[derive(clap::Args, Clone, Debug)]
pub struct MeasureArgs {
    /// Seconds the measured passes of one point add up to [default: 0.3; --quick: 0.02].
    #[arg(long)]
    pub target_s: Option<f64>,
    /// Measured passes per point (1..=15) [default: 5; --quick: 3].
    #[arg(long)]
    pub reps: Option<usize>,
    /// Which pass a point reports: median or best.
    #[arg(long, default_value = "median")]
    pub stat: Stat,
    /// A short run for smoke tests: few sizes, 20 ms per point, 5 ms calibration passes.
    #[arg(long)]
    pub quick: bool,
}

impl MeasureArgs {
    /// The plan these options ask for (explicit values win over `--quick`), validated.
    pub fn plan(&self) -> Result<Plan> {
        let (target_s, reps, calib_min_s) = if self.quick {
            (0.02, 3, 0.005)
        } else {
            (0.3, 5, Plan::CALIB_MIN_S)
        };
        let plan = Plan {
            target_s: self.target_s.unwrap_or(target_s),
            reps: self.reps.unwrap_or(reps),
            stat: self.stat,
            calib_min_s,
        };
        plan.validate()?;
        Ok(plan)
    }
}

/// Which pass a point reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    Median,
    Best,
}

impl std::str::FromStr for Stat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "median" => Ok(Stat::Median),
            "best" => Ok(Stat::Best),
            _ => Err(format!("{s:?}: expected median or best")),
        }
    }
}

/// Measuring parameters of a run.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Seconds the measured passes of one point add up to.
    pub target_s: f64,
    /// Measured passes per point (1..=15, as the peers allow).
    pub reps: usize,
    pub stat: Stat,
    /// A calibration pass must last this long (the peers: 0.05 s).
    pub calib_min_s: f64,
}

impl Plan {
    /// The peers' minimum calibration pass.
    pub const CALIB_MIN_S: f64 = 0.05;
    /// The peers' limit on passes per point.
    pub const MAX_REPS: usize = 15;

    /// Checks the parameters.
    pub fn validate(&self) -> Result<()> {
        if !(self.target_s > 0.0 && self.target_s.is_finite()) {
            return Err(BenchError::Setup(format!(
                "target time {} s: must be > 0",
                self.target_s
            )));
        }
        if self.reps == 0 || self.reps > Self::MAX_REPS {
            return Err(BenchError::Setup(format!(
                "{} passes per point: 1..={} allowed",
                self.reps,
                Self::MAX_REPS
            )));
        }
        Ok(())
    }
}

/// What one point measured.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Seconds per iteration of the reported pass.
    pub per_iter_s: f64,
    /// Seconds per iteration of every measured pass, in the order run.
    pub passes: Vec<f64>,
    /// Iterations of the last calibration pass and its seconds.
    pub calib: (u64, f64),
    /// Iterations per measured pass.
    pub iters: u64,
}

/// Measures one point; `pass(n)` runs `n` iterations and returns the elapsed seconds.
///
/// ```
/// use skifch_benches::measure::{measure, Plan, Stat};
/// let plan = Plan { target_s: 0.01, reps: 3, stat: Stat::Median, calib_min_s: 0.002 };
/// let m = measure(&plan, |n| {
///     let t = std::time::Instant::now();
///     let mut x = 0u64;
///     for i in 0..n { x = std::hint::black_box(x ^ i); }
///     Ok(t.elapsed().as_secs_f64())
/// }).unwrap();
/// assert_eq!(m.passes.len(), 3);
/// assert!(m.per_iter_s > 0.0 && m.iters >= 1);
/// ```
pub fn measure(plan: &Plan, mut pass: impl FnMut(u64) -> Result<f64>) -> Result<Measured> {
    plan.validate()?;
    let mut n: u64 = 4;
    let t = loop {
        let t = pass(n)?;
        if t >= plan.calib_min_s {
            break t;
        }
        n = if t < plan.calib_min_s / 20.0 {
            n * 8
        } else {
            n * 2
        };
        if n > 1 << 40 {
            return Err(BenchError::Setup(
                "calibration never reached the minimum pass time".into(),
            ));
        }
    };
    let iters = ((plan.target_s / plan.reps as f64) / (t / n as f64)).max(1.0) as u64;
    let mut passes = Vec::with_capacity(plan.reps);
    for _ in 0..plan.reps {
        passes.push(pass(iters)? / iters as f64);
    }
    let mut sorted = passes.clone();
    sorted.sort_by(f64::total_cmp);
    let per_iter_s = match plan.stat {
        Stat::Median => sorted[plan.reps / 2],
        Stat::Best => sorted[0],
    };
    Ok(Measured {
        per_iter_s,
        passes,
        calib: (n, t),
        iters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_the_median_or_the_best_pass() {
        // A fake clock: pass k of the measured ones takes (k+1) * n ns, calibration 0.1 s.
        let plan = |stat| Plan {
            target_s: 1.0,
            reps: 5,
            stat,
            calib_min_s: 0.05,
        };
        for (stat, want) in [(Stat::Median, 3e-9), (Stat::Best, 1e-9)] {
            let mut k = 0u32;
            let mut order = [5.0, 1.0, 3.0, 4.0, 2.0].into_iter();
            let m = measure(&plan(stat), |n| {
                k += 1;
                if k == 1 {
                    return Ok(0.1);
                }
                Ok(order.next().unwrap() * 1e-9 * n as f64)
            })
            .unwrap();
            assert!(
                (m.per_iter_s - want).abs() < 1e-15,
                "{stat:?}: {}",
                m.per_iter_s
            );
            assert_eq!(m.calib, (4, 0.1));
            // 5 passes of 0.2 s at 0.1 s / 4 iterations each.
            assert_eq!(m.iters, 8);
        }
    }

    #[test]
    fn calibration_grows_faster_when_far_below_the_minimum() {
        let plan = Plan {
            target_s: 0.1,
            reps: 1,
            stat: Stat::Median,
            calib_min_s: 0.05,
        };
        let mut seen = Vec::new();
        measure(&plan, |n| {
            seen.push(n);
            Ok(n as f64 * 1e-4)
        })
        .unwrap();
        // 4 -> 0.4 ms (< 2.5 ms: x8) -> 32 -> 3.2 ms (x2) -> 64 ... -> 512 = 51 ms.
        assert_eq!(&seen[..6], &[4, 32, 64, 128, 256, 512]);
    }

    #[test]
    fn bad_plans_are_refused() {
        for (t, r) in [(0.0, 5), (0.3, 0), (0.3, 16), (f64::NAN, 5)] {
            let p = Plan {
                target_s: t,
                reps: r,
                stat: Stat::Median,
                calib_min_s: 0.05,
            };
            assert!(measure(&p, |_| Ok(1.0)).is_err());
        }
    }
}
