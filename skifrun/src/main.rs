//! `skifrun` — starts an N-rank SkifCh job. A thin wrapper over
//! [`skifch_drivers::launch`], where the behaviour is documented.
use std::ffi::OsString;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use skifch::{Error, WaitPolicy};
use skifch_drivers::launch::{launch, DriverKind, LaunchOptions, DEFAULT_GRACE};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Driver {
    /// Shared-memory emulator (one memfd segment per job)
    Shm,
    /// FPGA adapter driver over the device model hosted by skifrun (one torus node per rank)
    FpgaModel,
}

/// Starts N copies of a program as one SkifCh job (ranks 0..N-1).
///
/// Each rank gets SKIFCH_RANK, SKIFCH_SIZE, SKIFCH_FD (the job segment) and
/// SKIFCH_DRIVER (and SKIFCH_WAIT with --wait). Ranks die with the launcher.
/// With --driver fpga-model, skifrun runs the FPGA adapter's device model (X*Y*Z torus,
/// --torus or the most cube-like one for N) in its own threads; rank r is torus node r
/// and gets its adapter's registers and DMA memory as SKIFCH_FPGA_FD. The same program
/// binaries run over either driver.
/// When a rank fails (non-zero exit, signal, or exit without finalizing), its peers'
/// calls fail with "peer lost" (EPIPE); survivors get --grace seconds to exit, then
/// SIGKILL. SIGINT/SIGTERM/SIGHUP: forwarded to every rank, SIGKILL after --grace.
/// Each rank runs in its own process group: processes it starts (helpers, forks) are
/// killed when the job ends. A terminal on stdin is forwarded to rank 0.
///
/// Exit status: 0 if every rank exited 0; else the first failing rank's status
/// (128+signal if killed; 1 if it exited 0 without finalizing); 128+signal if skifrun
/// itself was signalled (130 for Ctrl-C); 124 if the time limit (--timeout,
/// SKIFRUN_TIMEOUT or MPIEXEC_TIMEOUT) ended the job; 127/126 if the program cannot be
/// found/executed; 2 for bad arguments.
#[derive(Parser, Debug)]
#[command(
    name = "skifrun",
    version,
    verbatim_doc_comment,
    override_usage = "skifrun -n <N> [OPTIONS] -- <PROGRAM> [ARGS]..."
)]
struct Cli {
    /// Number of ranks
    #[arg(short = 'n', value_name = "N", value_parser = clap::value_parser!(u32).range(1..=skifch_drivers::shm::MAX_RANKS as i64))]
    nranks: u32,
    /// Waiting policy of blocking calls: spin, fixed, fixed:MICROSECONDS, block [default: SKIFCH_WAIT or fixed]
    #[arg(long, value_name = "POLICY", value_parser = parse_wait)]
    wait: Option<WaitPolicy>,
    /// Seconds survivors get to exit after a failure or SIGTERM before SIGKILL
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_GRACE.as_secs_f64(), value_parser = parse_grace)]
    grace: f64,
    /// Ports per rank [default: SKIFCH_PORTS or 4]
    #[arg(long, value_name = "P")]
    ports: Option<u32>,
    /// Lane size in KiB, a power of two [default: SKIFCH_LANE_KB or chosen by job size]
    #[arg(long, value_name = "K")]
    lane_kb: Option<u32>,
    /// Driver [default: SKIFCH_DRIVER or shm]
    #[arg(long, value_enum)]
    driver: Option<Driver>,
    /// Time limit of the job in seconds (0: none): then SIGTERM to every rank, SIGKILL
    /// after --grace, and exit status 124 [default: SKIFRUN_TIMEOUT, else MPIEXEC_TIMEOUT, else none]
    #[arg(long, value_name = "SECS", value_parser = parse_timeout)]
    timeout: Option<Duration>,
    /// fpga-model: torus size XxYxZ (each 1..=16; X*Y*Z must be N) [default: most cube-like for N]
    #[arg(long, value_name = "XxYxZ", value_parser = parse_torus)]
    torus: Option<fpga::regs::Dims>,
    /// The program and its arguments
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM [ARGS]"
    )]
    command: Vec<OsString>,
}

fn parse_wait(s: &str) -> Result<WaitPolicy, String> {
    WaitPolicy::parse(s).map_err(|e| e.to_string())
}

fn parse_torus(s: &str) -> Result<fpga::regs::Dims, String> {
    s.parse().map_err(|e: fpga::Error| e.to_string())
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    LaunchOptions::parse_seconds("--timeout", s).map_err(|e| e.to_string())
}

fn parse_grace(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(g) if g.is_finite() && (0.0..=86_400.0).contains(&g) => Ok(g),
        _ => Err(format!("{s:?} is not a number of seconds in 0..=86400")),
    }
}

fn main() {
    let cli = Cli::parse();
    let mut command = cli.command.into_iter();
    let program = command.next().expect("clap requires the program");
    let mut opts = LaunchOptions::new(cli.nranks, program).args(command);
    opts.wait = cli.wait;
    opts.grace = Duration::from_secs_f64(cli.grace);
    opts.ports = cli.ports;
    opts.lane_kb = cli.lane_kb;
    opts.driver = match cli.driver {
        Some(Driver::Shm) => DriverKind::Shm,
        Some(Driver::FpgaModel) => DriverKind::FpgaModel,
        None => DriverKind::from_env().unwrap_or_else(|e| {
            eprintln!("skifrun: {e}");
            std::process::exit(2)
        }),
    };
    opts.torus = cli.torus;
    opts.timeout = cli.timeout;
    let status = match launch(&opts) {
        Ok(status) => status,
        Err(e @ (Error::InvalidArgument(_) | Error::Bootstrap(_))) => {
            eprintln!("skifrun: {e}");
            2
        }
        Err(e) => {
            eprintln!("skifrun: {e}");
            1
        }
    };
    std::process::exit(status);
}
