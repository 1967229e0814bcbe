//! `skifrun` — starts an N-rank SkifCh job. A thin wrapper over
//! [`skifch_drivers::launch`], where the behaviour is documented.
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use skifch::{Error, WaitPolicy};

use skifch_drivers::launch::hosts::{self, Hosts};
use skifch_drivers::launch::{launch, DriverKind, LaunchOptions, TagOutput, DEFAULT_GRACE};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Driver {
    /// Shared-memory emulator (one memfd segment per job)
    Shm,
    /// FPGA adapter driver over the device model hosted by skifrun (one torus node per rank)
    FpgaModel,
    /// libfabric driver (provider from SKIFCH_OFI_PROVIDER / FI_PROVIDER, e.g. tcp;ofi_rxm)
    Ofi,
}

/// Starts N copies of a program as one SkifCh job (ranks 0..N-1).
///
/// Each rank gets SKIFCH_RANK, SKIFCH_SIZE, SKIFCH_FD (the job segment) and
/// SKIFCH_DRIVER (and SKIFCH_WAIT with --wait); for launch-aware tools also PMI_RANK,
/// PMI_SIZE, OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK and _LOCAL_SIZE, and PMI_FD, a
/// PMI-1 server's socket (programs that bootstrap through PMI run as under
/// mpiexec.hydra). Ranks die with the launcher.
/// With --hosts or --hostfile the job runs on several hosts through mpiexec.hydra
/// (--ppn N: N consecutive ranks per host, as hydra's -ppn).
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
// These doc comments are clap's `--help` text, printed as written: they keep their plain
// `[1,RANK]<stdout>:`-style text rather than rustdoc escapes that `--help` would show.
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
#[derive(Parser, Debug)]
#[command(
    name = "skifrun",
    version,
    verbatim_doc_comment,
    override_usage = "skifrun -n <N> [OPTIONS] -- <PROGRAM> [ARGS]..."
)]
struct Cli {
    /// Number of ranks (also -np, --np)
    #[arg(short = 'n', value_name = "N", value_parser = clap::value_parser!(u32).range(1..=skifch_drivers::shm::MAX_RANKS as i64))]
    nranks: u32,
    /// Waiting policy of blocking calls: spin, fixed, fixed:MICROSECONDS, block [default: SKIFCH_WAIT or fixed]
    #[arg(long, value_name = "POLICY", value_parser = parse_wait)]
    wait: Option<WaitPolicy>,
    /// Seconds survivors get to exit after a failure or SIGTERM before SIGKILL
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_GRACE.as_secs_f64(), value_parser = parse_grace)]
    grace: f64,
    /// Ports per rank [default: SKIFCH_PORTS or 5]
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
    /// Sets VAR=value in every rank's environment; -x VAR passes the launcher's own VAR
    /// (every rank inherits the launcher's environment anyway). Repeatable
    #[arg(short = 'x', value_name = "VAR[=value]")]
    export: Vec<String>,
    /// Binding of each rank to a CPU: core (also hwthread) or none; sets SKIFMPI_BIND for
    /// mpi-lite [default: SKIFMPI_BIND, else core]
    #[arg(long, value_name = "WHAT", value_parser = ["core", "hwthread", "none"])]
    bind_to: Option<String>,
    /// Prefixes each line of the ranks' output with [1,RANK]<stdout>: or [1,RANK]<stderr>: (as Open MPI)
    #[arg(long)]
    tag_output: bool,
    /// Prefixes each line of the ranks' output with [RANK] (as MPICH)
    #[arg(short = 'l')]
    label: bool,
    /// Accepted for mpirun compatibility; no effect (ranks may outnumber the CPUs anyway)
    #[arg(long)]
    oversubscribe: bool,
    /// Accepted for mpirun compatibility; no effect
    #[arg(long)]
    allow_run_as_root: bool,
    /// Runs the job on these hosts, host[:ranks],... through MPICH's mpiexec.hydra (ssh
    /// to each host; SKIFRUN_HYDRA names another hydra); the ranks bootstrap through its
    /// PMI-1 server. skifrun replaces itself with hydra: signals, failures and the exit
    /// status are hydra's
    #[arg(long, value_name = "LIST", conflicts_with = "hostfile")]
    hosts: Option<String>,
    /// As --hosts, the hosts read from a file of host[:ranks] lines
    #[arg(long, value_name = "FILE")]
    hostfile: Option<OsString>,
    /// With --hosts: the program that reaches a host instead of ssh (called as ssh is:
    /// [options] HOST COMMAND...)
    #[arg(long, value_name = "PROGRAM")]
    launcher_exec: Option<OsString>,
    /// With --hosts: the network interface through which the hosts reach this one
    #[arg(long, value_name = "NAME")]
    iface: Option<String>,
    /// With --hosts: N consecutive ranks on each host in turn, wrapping around after the
    /// last (hydra's -ppn; overrides the hosts' :ranks counts; also -ppn)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    ppn: Option<u32>,
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

/// Options that take a value (as separate words), to find where the program starts.
const VALUED: &[&str] = &[
    "-n",
    "--wait",
    "--grace",
    "--ports",
    "--lane-kb",
    "--driver",
    "--torus",
    "--timeout",
    "-x",
    "--bind-to",
    "--hosts",
    "--hostfile",
    "--launcher-exec",
    "--iface",
    "--ppn",
];

/// The command line with mpirun's `-np N` / `--np N` spelled `-n N` and hydra's `-ppn N`
/// spelled `--ppn N` (clap has no single-dash long options); words from the program on
/// are left alone.
fn mpirun_spellings(args: impl Iterator<Item = OsString>) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::new();
    let mut in_options = true;
    let mut value_next = false;
    for (i, a) in args.enumerate() {
        if i == 0 || !in_options {
            out.push(a);
            continue;
        }
        if value_next {
            value_next = false;
            out.push(a);
            continue;
        }
        let s = a.to_string_lossy();
        if s == "--" || !s.starts_with('-') {
            in_options = false;
        } else if s == "-np" || s == "--np" {
            out.push("-n".into());
            value_next = true;
            continue;
        } else if s == "-ppn" {
            out.push("--ppn".into());
            value_next = true;
            continue;
        } else {
            value_next = VALUED.contains(&s.as_ref());
        }
        out.push(a);
    }
    out
}

/// `-x VAR=value` → (VAR, value); `-x VAR` → the launcher's VAR if set (the ranks
/// inherit it anyway).
fn exports(xs: &[String]) -> Vec<(OsString, OsString)> {
    xs.iter()
        .filter_map(|x| match x.split_once('=') {
            Some((k, v)) => Some((k.into(), v.into())),
            None => std::env::var_os(x).map(|v| (x.into(), v)),
        })
        .collect()
}

fn main() {
    let cli = Cli::parse_from(mpirun_spellings(std::env::args_os()));
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
        Some(Driver::Ofi) => DriverKind::Ofi,
        None => DriverKind::from_env().unwrap_or_else(|e| {
            eprintln!("skifrun: {e}");
            std::process::exit(2)
        }),
    };
    opts.torus = cli.torus;
    opts.timeout = cli.timeout;
    opts.env = exports(&cli.export);
    if let Some(b) = cli.bind_to {
        let v = if b == "none" { "none" } else { "core" };
        opts.env.push(("SKIFMPI_BIND".into(), v.into()));
    }
    let _ = (cli.oversubscribe, cli.allow_run_as_root);
    opts.tag_output = match (cli.tag_output, cli.label) {
        (true, _) => TagOutput::OpenMpi,
        (false, true) => TagOutput::Rank,
        (false, false) => TagOutput::Off,
    };
    if cli.hosts.is_some() || cli.hostfile.is_some() {
        let hosts = Hosts {
            list: cli.hosts,
            file: cli.hostfile,
            launcher_exec: cli.launcher_exec,
            iface: cli.iface,
            ppn: cli.ppn,
        };
        match hosts::hydra_command(&opts, &hosts) {
            Ok(mut cmd) => {
                let e = cmd.exec();
                eprintln!("skifrun: cannot run {:?}: {e}", cmd.get_program());
                std::process::exit(127);
            }
            Err(e) => {
                eprintln!("skifrun: {e}");
                std::process::exit(2);
            }
        }
    }
    if cli.launcher_exec.is_some() || cli.iface.is_some() || cli.ppn.is_some() {
        eprintln!("skifrun: --launcher-exec, --iface and --ppn need --hosts or --hostfile");
        std::process::exit(2);
    }
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
