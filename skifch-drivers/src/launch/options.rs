//! What to launch and how: [`LaunchOptions`] (the options of `skifrun`) and [`DriverKind`].

use std::ffi::OsString;
use std::time::Duration;

use crate::shm::{Layout, Params};
use skifch::{Error, Result, WaitPolicy};

use super::{TagOutput, DEFAULT_GRACE};

/// The driver the ranks of a launched job use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriverKind {
    /// The shared-memory emulator ([`crate::shm`]).
    #[default]
    Shm,
    /// The FPGA adapter driver over the device model, which the launcher hosts
    /// ([`crate::fpga::remote`]); one torus node per rank.
    FpgaModel,
    /// The libfabric driver ([`crate::ofi`]): the ranks exchange endpoint addresses over
    /// the shm job the launcher makes, then talk through the fabric provider.
    Ofi,
}

impl DriverKind {
    /// Parses a `--driver` / `SKIFCH_DRIVER` value.
    ///
    /// ```
    /// use skifch_drivers::launch::DriverKind;
    /// assert_eq!(DriverKind::parse("fpga-model")?, DriverKind::FpgaModel);
    /// assert!(DriverKind::parse("ib").is_err());
    /// # Ok::<(), skifch::Error>(())
    /// ```
    pub fn parse(s: &str) -> Result<DriverKind> {
        match s {
            "shm" => Ok(DriverKind::Shm),
            crate::FPGA_MODEL => Ok(DriverKind::FpgaModel),
            crate::OFI => Ok(DriverKind::Ofi),
            _ => Err(Error::InvalidArgument(
                format!(
                    "driver {s:?}: unknown (known: shm, {}, ofi)",
                    crate::FPGA_MODEL
                )
                .into(),
            )),
        }
    }

    /// `SKIFCH_DRIVER` when set (and not empty), else [`DriverKind::Shm`].
    pub fn from_env() -> Result<DriverKind> {
        match std::env::var("SKIFCH_DRIVER") {
            Ok(v) if !v.is_empty() => DriverKind::parse(&v).map_err(|_| {
                Error::InvalidArgument(
                    format!(
                        "SKIFCH_DRIVER={v:?}: unknown driver (known: shm, {}, ofi)",
                        crate::FPGA_MODEL
                    )
                    .into(),
                )
            }),
            _ => Ok(DriverKind::Shm),
        }
    }

    /// The value of `SKIFCH_DRIVER` / `--driver`.
    pub fn name(self) -> &'static str {
        match self {
            DriverKind::Shm => "shm",
            DriverKind::FpgaModel => crate::FPGA_MODEL,
            DriverKind::Ofi => crate::OFI,
        }
    }
}

/// What to launch and how (the options of `skifrun`; see the [module docs](super)).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LaunchOptions {
    /// Number of ranks.
    pub nranks: u32,
    /// The program (searched in `PATH` when it has no `/`).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// `SKIFCH_WAIT` for the ranks; `None` leaves the environment as it is.
    pub wait: Option<WaitPolicy>,
    /// Time survivors get after a failure or a forwarded `SIGTERM` before `SIGKILL`.
    pub grace: Duration,
    /// Ports per rank (`None`: `SKIFCH_PORTS` or the default).
    pub ports: Option<u32>,
    /// Lane size in KiB (`None`: `SKIFCH_LANE_KB` or a default for the job size).
    pub lane_kb: Option<u32>,
    /// The driver.
    pub driver: DriverKind,
    /// `fpga-model` only: the torus (X·Y·Z must equal `nranks`; `None`: the most
    /// cube-like one, [`crate::fpga::remote::default_dims`]).
    pub torus: Option<fpga::regs::Dims>,
    /// The job's time limit (`--timeout`); `None`: `SKIFRUN_TIMEOUT`, else
    /// `MPIEXEC_TIMEOUT`, else none ([`LaunchOptions::time_limit`]).
    pub timeout: Option<Duration>,
    /// Variables set in every rank's environment (`-x VAR=value`), besides the
    /// launcher's own environment, which the ranks inherit.
    pub env: Vec<(OsString, OsString)>,
    /// Whether and how the ranks' output lines are tagged with their rank (`--tag-output`,
    /// `-l`).
    pub tag_output: TagOutput,
}

impl LaunchOptions {
    /// `nranks` copies of `program` without arguments, everything else by default.
    pub fn new(nranks: u32, program: impl Into<OsString>) -> Self {
        LaunchOptions {
            nranks,
            program: program.into(),
            args: Vec::new(),
            wait: None,
            grace: DEFAULT_GRACE,
            ports: None,
            lane_kb: None,
            driver: DriverKind::Shm,
            torus: None,
            timeout: None,
            env: Vec::new(),
            tag_output: TagOutput::Off,
        }
    }

    /// Sets the program's arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// The segment parameters: `--ports`/`--lane-kb`, else the environment, else defaults.
    /// For `fpga-model` the segment only carries the job state (one port, smallest lanes).
    pub fn params(&self) -> Result<Params> {
        if self.nranks == 0 {
            return Err(Error::InvalidArgument(
                "a job needs at least one rank (-n 1 or more)".into(),
            ));
        }
        if self.driver == DriverKind::FpgaModel {
            self.fpga_dims()?;
            if let Some(p) = self.ports {
                if !(1..=crate::fpga::remote::MAX_PORTS).contains(&p) {
                    return Err(Error::InvalidArgument(
                        format!(
                            "--ports {p}: the fpga-model driver has 1..={} ports per rank",
                            crate::fpga::remote::MAX_PORTS
                        )
                        .into(),
                    ));
                }
            }
            if self.lane_kb.is_some() {
                return Err(Error::InvalidArgument(
                    "--lane-kb sizes the shm driver's lanes; the fpga-model driver's rings are fixed (FpgaConfig)".into(),
                ));
            }
            let p = Params {
                nranks: self.nranks,
                nports: 1,
                lane_bytes: crate::shm::layout::MIN_LANE,
            };
            Layout::new(p)?;
            return Ok(p);
        }
        if self.torus.is_some() {
            return Err(Error::InvalidArgument(
                "--torus applies to --driver fpga-model only".into(),
            ));
        }
        let mut p = if self.ports.is_some() && self.lane_kb.is_some() {
            // Both given: a bad SKIFCH_PORTS/SKIFCH_LANE_KB in the environment is irrelevant.
            Params {
                nranks: self.nranks,
                nports: Params::DEFAULT_PORTS,
                lane_bytes: 0,
            }
        } else {
            Params::from_env(self.nranks)?
        };
        if let Some(ports) = self.ports {
            p.nports = ports;
            if self.lane_kb.is_none() && std::env::var_os("SKIFCH_LANE_KB").is_none() {
                p.lane_bytes = Params::default_lane_bytes(self.nranks, ports);
            }
        }
        if let Some(kb) = self.lane_kb {
            p.lane_bytes = (kb as usize).saturating_mul(1024);
        }
        Layout::new(p)?;
        Ok(p)
    }
}

/// Environment variables that set the job's time limit when `--timeout` is not given,
/// in order: ours, then the one MPICH's `mpiexec` reads.
pub const TIMEOUT_ENV: [&str; 2] = ["SKIFRUN_TIMEOUT", "MPIEXEC_TIMEOUT"];

impl LaunchOptions {
    /// The job's time limit and where it comes from (`--timeout` or the variable of
    /// [`TIMEOUT_ENV`] that set it); a limit of 0 means none.
    ///
    /// ```
    /// use skifch_drivers::launch::LaunchOptions;
    /// use std::time::Duration;
    /// let mut o = LaunchOptions::new(2, "true");
    /// o.timeout = Some(Duration::from_secs(5));
    /// assert_eq!(o.time_limit()?, Some((Duration::from_secs(5), "--timeout")));
    /// assert!(LaunchOptions::parse_seconds("X", "-1").is_err());
    /// # Ok::<(), skifch::Error>(())
    /// ```
    pub fn time_limit(&self) -> Result<Option<(Duration, &'static str)>> {
        let limit = match self.timeout {
            Some(t) => Some((t, "--timeout")),
            None => {
                let mut found = None;
                for var in TIMEOUT_ENV {
                    if let Ok(v) = std::env::var(var) {
                        found = Some((Self::parse_seconds(var, &v)?, var));
                        break;
                    }
                }
                found
            }
        };
        Ok(limit.filter(|(t, _)| !t.is_zero()))
    }

    /// Seconds (a non-negative number, at most a year) given as `what`.
    pub fn parse_seconds(what: &str, v: &str) -> Result<Duration> {
        match v.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && (0.0..=31_536_000.0).contains(&s) => {
                Ok(Duration::from_secs_f64(s))
            }
            _ => Err(Error::InvalidArgument(
                format!("{what}={v:?}: not a number of seconds in 0..=31536000").into(),
            )),
        }
    }

    /// The torus of an `fpga-model` job: `torus`, which must have exactly `nranks` nodes,
    /// or the default for `nranks`.
    pub fn fpga_dims(&self) -> Result<fpga::regs::Dims> {
        match self.torus {
            Some(d) if d.nodes() == self.nranks => Ok(d),
            Some(d) => Err(Error::InvalidArgument(
                format!(
                    "--torus {d} has {} nodes but -n is {}: the fpga-model driver runs one rank per torus node",
                    d.nodes(),
                    self.nranks
                )
                .into(),
            )),
            None => crate::fpga::remote::default_dims(self.nranks),
        }
    }
}
