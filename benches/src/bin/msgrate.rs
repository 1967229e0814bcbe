//! `msgrate` — the SkifCh MsgRate tool: the paper's message-rate test, latency, bandwidth
//! and N-to-one over a real job, in the CSV format of `../shared/peers`.
//!
//! ```text
//! cargo run --release -p skifch-benches --bin msgrate                  # 2 ranks, everything
//! cargo run --release -p skifch-benches --bin msgrate -- --quick       # a few seconds
//! skifrun -n 4 -- target/release/msgrate --tests n2one                 # 3 senders -> rank 0
//! skifrun -n 2 --driver fpga-model -- target/release/msgrate --quick   # over the device model
//! ```
//! Started without a launcher it re-starts itself as a `--ranks`-rank job (default 2);
//! started by `skifrun` it is one rank of that job. `--local` runs the ranks as threads
//! of one process instead (the in-process job, impl `skifch-local`).
//! See `benches/README.md` for the options, the output and how to compare with the peers.

use std::path::{Path, PathBuf};
use std::process::exit;
use std::sync::Arc;

use clap::Parser;
use skifch_benches::measure::MeasureArgs;
use skifch_benches::msgrate::{parse_tests, run_rank, table, Config, Gate, Report};
use skifch_benches::results::{read_csv, write_csv, Row};
use skifch_benches::{layers, parse_sizes, plot::plot_svg, BenchError, Result};
use skifch_drivers::shm::Params;
use skifch_drivers::ConcreteJob;

/// The peers' sizes (`../shared/peers`).
const SIZES: &str = "1,8,16,32,64,128,256,512,1024,2048,4096,16384,65536";
const QUICK_SIZES: &str = "8,256,4096,65536";
/// The peers' kept results, relative to the workspace root (only for a hint).
const PEERS_HINT: &str = "../shared/peers/results-2026-11-22.csv";

// These doc comments are clap's `--help` text, printed as written: they keep their plain
// `THR_US[:MAXWAIT_S[:LO_US]]`-style text rather than rustdoc escapes that `--help` would show.
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
#[derive(Parser, Debug)]
#[command(
    name = "msgrate",
    about = "SkifCh MsgRate: message rate, latency, bandwidth and N-to-one over a SkifCh job",
    after_help = "Output: CSV lines impl,test,size,value,unit (units msg/s, MB/s, us) in --csv, \
                  a table on stdout, a log-log plot in --svg. Exit status: 0 ok, 1 setup error, \
                  3 data check failed, 4 a peer died or stopped answering."
)]
struct Args {
    /// Tests, comma-separated: msgrate, bandwidth (derived from msgrate), latency, n2one
    /// (n2one needs a job of >= 3 ranks, e.g. -n 4).
    #[arg(long, default_value = "msgrate,latency,n2one")]
    tests: String,
    /// Message sizes in bytes, comma-separated [default: the peers' sizes, 1..65536].
    #[arg(long)]
    sizes: Option<String>,
    #[command(flatten)]
    measure: MeasureArgs,
    /// Ranks when re-starting itself as a job (ignored when started by skifrun).
    #[arg(short = 'n', long, default_value_t = 2)]
    ranks: u32,
    /// Where the CSV goes.
    #[arg(long, default_value = "results/msgrate.csv")]
    csv: PathBuf,
    /// Where the plot goes.
    #[arg(long, default_value = "results/msgrate.svg")]
    svg: PathBuf,
    /// A peers CSV (e.g. ../shared/peers/results-2026-11-22.csv) to put in the table
    /// (ratio columns) and the plot.
    #[arg(long)]
    peers: Option<PathBuf>,
    /// Wait for the CPUs to be "near" before each point: THR_US[:MAXWAIT_S[:LO_US]]
    /// (probe: 8-byte channel ping-pong, not the raw cache line of c2c_gate.h).
    #[arg(long)]
    gate: Option<Gate>,
    /// Do not pin rank r to the r-th allowed CPU.
    #[arg(long)]
    no_pin: bool,
    /// The impl column [default: skifch-<driver>].
    #[arg(long = "impl")]
    imp: Option<String>,
    /// Run the ranks as threads of this process (in-process job) instead of processes.
    #[arg(long)]
    local: bool,
    /// Run over the FPGA adapter driver and its behavioural device model (an N×1×1 torus,
    /// ranks as threads of this process): the model's correctness, not its speed, is the
    /// point (impl `skifch-fpga-model`).
    #[arg(long, conflicts_with = "local")]
    fpga_model: bool,
    /// Calibration details and probes on stderr.
    #[arg(short, long)]
    verbose: bool,
    /// Combined run: also measure these libraries on SkifCh with the peers' C programs
    /// (mpi-lite: msgrate_mpi.c via skif-mpicc; shmem: msgrate_shmem.c via skif-oshcc;
    /// shmem-msg: the same over skifshmem's message path, SKIFSHMEM_RMA=off; armci,
    /// gasnet: our armci_bench.c / gasnet_bench.c), as 2-rank skifrun jobs, beside the raw
    /// channels; one CSV, table and plot.
    #[arg(long, value_name = "mpi-lite,shmem,shmem-msg,armci,gasnet", conflicts_with_all = ["local", "fpga_model"])]
    with: Option<String>,
    /// Combined run: also run ../shared/peers/run.sh for these groups (comma/space list of
    /// rawring openmpi openmpi-ucx mpich oshmem ucx; without a list all but ucx), each
    /// right after the SkifCh group it is compared with.
    #[arg(long, value_name = "GROUPS", num_args = 0..=1,
          default_missing_value = layers::DEFAULT_PEER_GROUPS,
          conflicts_with_all = ["peers", "local", "fpga_model"])]
    peers_run: Option<String>,
    /// Combined run: the directory of the peers' sources and run.sh.
    #[arg(long, value_name = "DIR")]
    peers_dir: Option<PathBuf>,
    /// Combined run: repeat every group this many times, alternating the order; each point
    /// reports the median over the rounds.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=15))]
    rounds: u32,
    /// Combined run: the c2c_gate.h gate of the C programs and run.sh,
    /// THR_US[:MAXWAIT_S[:LO_US]] or `off` (run.sh's default); also the raw channels' gate
    /// (on this tool's probe) unless --gate is given.
    #[arg(long, default_value = "0.1:20:0.04", value_name = "GATE|off")]
    c2c_gate: String,
    /// Combined run without measuring: the table and plot (--svg) of CSV files already
    /// written (e.g. the per-round CSVs of a run, or a run and a peers CSV); rows of the same
    /// point in several files are merged by their median, as rounds are. Writes --csv too.
    #[arg(long, value_name = "CSV", num_args = 1.., conflicts_with_all = ["with", "peers_run"])]
    table_from: Vec<PathBuf>,
    /// Combined run: where the built programs, each group's CSV and logs go
    /// [default: msgrate-layers/ beside this program, e.g. target/release/msgrate-layers].
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Combined run: seconds one group (one program, one run.sh call) may take.
    #[arg(long, default_value_t = 1800)]
    group_timeout_s: u64,
}

impl Args {
    fn config(&self) -> Result<Config> {
        let sizes = match (&self.sizes, self.measure.quick) {
            (Some(s), _) => s.as_str(),
            (None, true) => QUICK_SIZES,
            (None, false) => SIZES,
        };
        let cfg = Config {
            tests: parse_tests(&self.tests)?,
            sizes: parse_sizes(sizes)?,
            plan: self.measure.plan()?,
            gate: self.gate,
            pin: !self.no_pin,
            imp: self.imp.clone(),
            verbose: self.verbose,
            progress: true,
        };
        if self.ranks < 2 {
            return Err(BenchError::Setup("--ranks must be at least 2".into()));
        }
        Ok(cfg)
    }
}

fn main() {
    let args = Args::parse();
    if args.with.is_some() || args.peers_run.is_some() {
        exit(combined::run(&args));
    }
    if !args.table_from.is_empty() {
        exit(combined::table_from(&args));
    }
    let setup = args.config().and_then(|cfg| {
        let peers = match &args.peers {
            Some(p) => read_csv(p)?,
            None => Vec::new(),
        };
        Ok((cfg, peers))
    });
    let (cfg, peers) = setup.unwrap_or_else(|e| fail("setup", e));
    let report = if args.local {
        run_local(&args, cfg)
    } else if args.fpga_model {
        run_fpga_model(&args, cfg)
    } else {
        run_job(&args, &cfg)
    };
    if let Some(rep) = report {
        if let Err(e) = output(&args, &rep, &peers) {
            fail("rank 0", e);
        }
    }
}

fn fail(who: &str, e: BenchError) -> ! {
    eprintln!("msgrate: {who}: {e}");
    exit(e.exit_code())
}

/// As a rank of a launched job (re-starting this program under the launcher first when
/// it is not one yet).
fn run_job(args: &Args, cfg: &Config) -> Option<Report> {
    if let Some(status) = skifch_drivers::launch::self_launch(args.ranks) {
        exit(status);
    }
    // The driver is chosen once, here: each arm runs the generic measurement loop over
    // its concrete driver (no per-message dispatch).
    let job = skifch_drivers::init_concrete().unwrap_or_else(|e| fail("joining the job", e.into()));
    match job {
        ConcreteJob::Shm(job) => match run_rank(&job, cfg) {
            Ok(rep) => rep,
            Err(e) => {
                // Lost, not finalized: the peers stop at once instead of waiting for us.
                job.driver().fabric().ctl().mark_lost(job.rank());
                fail(&format!("rank {}", job.rank()), e)
            }
        },
        ConcreteJob::Fpga(job) => {
            let mut cfg = cfg.clone();
            cfg.imp.get_or_insert_with(|| "skifch-fpga-model-mp".into());
            cfg.pin = false; // the device model's threads run in skifrun, unpinned
                             // On an error `fail` exits without finalizing: skifrun marks this rank lost.
            run_rank(&job, &cfg).unwrap_or_else(|e| fail(&format!("rank {}", job.rank()), e))
        }
        ConcreteJob::Ofi(job) => {
            let mut cfg = cfg.clone();
            cfg.imp
                .get_or_insert_with(|| format!("skifch-ofi-{}", job.driver().provider()));
            run_rank(&job, &cfg).unwrap_or_else(|e| fail(&format!("rank {}", job.rank()), e))
        }
        ConcreteJob::Hier(job) => {
            let mut cfg = cfg.clone();
            let fabric = job.driver().remote().provider().to_owned();
            cfg.imp
                .get_or_insert_with(|| format!("skifch-hier-shm-{fabric}"));
            run_rank(&job, &cfg).unwrap_or_else(|e| fail(&format!("rank {}", job.rank()), e))
        }
        // SKIFCH_FAULT / SKIFCH_TRACE: the same loop over the wrappers (not a measurement).
        ConcreteJob::Wrapped(job) => {
            run_rank(&job, cfg).unwrap_or_else(|e| fail(&format!("rank {}", job.rank()), e))
        }
        // Another library of this process joined first (never, for this program alone).
        ConcreteJob::Fwd(job) => {
            run_rank(&job, cfg).unwrap_or_else(|e| fail(&format!("rank {}", job.rank()), e))
        }
    }
}

/// All ranks as threads of this process.
fn run_local(args: &Args, cfg: Config) -> Option<Report> {
    let params = Params::from_env(args.ranks).unwrap_or_else(|e| fail("setup", e.into()));
    let cfg = Arc::new(cfg);
    let out = skifch_drivers::inproc::run_with(params, move |job| {
        Ok(run_rank(&job, &cfg).inspect_err(|_| {
            job.driver().fabric().ctl().mark_lost(job.rank());
        }))
    })
    .unwrap_or_else(|e| fail("in-process job", e.into()));
    first_report(out)
}

/// All ranks as threads over the FPGA driver and the device model of the `fpga` crate.
fn run_fpga_model(args: &Args, mut cfg: Config) -> Option<Report> {
    use skifch_drivers::fpga::{driver::FpgaConfig, model};
    let dims = fpga::regs::Dims::new(args.ranks as u8, 1, 1)
        .unwrap_or_else(|e| fail("setup", BenchError::Setup(format!("--ranks: {e}"))));
    let machine = fpga::model::ModelConfig {
        hw_demux: true,
        ..Default::default()
    };
    // Data, barrier and control ports (the credit return queue is the driver's own).
    let drv = FpgaConfig {
        max_ports: 3,
        ..FpgaConfig::default()
    };
    cfg.imp.get_or_insert_with(|| "skifch-fpga-model".into());
    cfg.pin = false; // threads of one process, plus the model's own threads
    let cfg = Arc::new(cfg);
    let out = model::run(dims, machine, drv, move |job| Ok(run_rank(&job, &cfg)))
        .unwrap_or_else(|e| fail("fpga-model job", e.into()));
    first_report(out)
}

/// Rank 0's report, or the first error — the cause, not the echoes: a peer that saw the
/// failing rank lost comes last.
fn first_report(out: Vec<Result<Option<Report>>>) -> Option<Report> {
    let mut errs: Vec<(usize, BenchError)> = Vec::new();
    let mut rep = None;
    for (rank, r) in out.into_iter().enumerate() {
        match r {
            Ok(Some(r)) => rep = Some(r),
            Ok(None) => {}
            Err(e) => errs.push((rank, e)),
        }
    }
    errs.sort_by_key(|(_, e)| e.exit_code() == 4);
    if let Some((rank, e)) = errs.into_iter().next() {
        fail(&format!("rank {rank}"), e);
    }
    rep
}

fn output(args: &Args, rep: &Report, peers: &[Row]) -> Result<()> {
    write_csv(&args.csv, &rep.rows)?;
    let mut all = rep.rows.clone();
    all.extend(peers.iter().cloned());
    let imp = rep.rows.first().map_or("skifch", |r| r.imp.as_str());
    let title = if peers.is_empty() {
        format!("MsgRate: {imp}")
    } else {
        format!("MsgRate: {imp} and the peers")
    };
    plot_svg(&args.svg, &all, &title)?;
    print!("{}", table(&rep.rows, peers));
    for n in &rep.notes {
        eprintln!("# {n}");
    }
    let hint = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(PEERS_HINT);
    if let (true, Ok(hint)) = (peers.is_empty(), hint.canonicalize()) {
        eprintln!("# compare with the peers: add --peers {}", hint.display());
    }
    println!("CSV: {}   plot: {}", args.csv.display(), args.svg.display());
    Ok(())
}

/// `--with` / `--peers-run`: the combined run of `skifch_benches::layers`.
mod combined {
    use super::*;
    use skifch_benches::layers::{loadavg, Combined, Tools};

    /// Runs it; the exit status (1 when anything failed, after writing what worked).
    pub fn run(args: &Args) -> i32 {
        match go(args) {
            Ok(status) => status,
            Err(e) => {
                eprintln!("msgrate: {e}");
                e.exit_code()
            }
        }
    }

    /// `--table-from`: merge, table, plot; no measuring.
    pub fn table_from(args: &Args) -> i32 {
        let res = (|| -> Result<()> {
            let files = args
                .table_from
                .iter()
                .map(|p| read_csv(p))
                .collect::<Result<Vec<_>>>()?;
            let rows = layers::median_rounds(&files);
            write_csv(&args.csv, &rows)?;
            plot_svg(&args.svg, &rows, TITLE)?;
            print!("{}", layers::comparison_table(&rows));
            println!("CSV: {}   plot: {}", args.csv.display(), args.svg.display());
            Ok(())
        })();
        res.map_or_else(
            |e| {
                eprintln!("msgrate: {e}");
                e.exit_code()
            },
            |()| 0,
        )
    }

    const TITLE: &str = "MsgRate: raw SkifCh channels, mpi-lite, skifshmem and the peers (one run)";

    fn go(args: &Args) -> Result<i32> {
        let cfg = args.config()?;
        let layers_list = layers::parse_layers(args.with.as_deref().unwrap_or(""))?;
        let peers = layers::parse_peer_groups(args.peers_run.as_deref().unwrap_or(""))?;
        let exe = std::env::current_exe()
            .map_err(|e| BenchError::io("finding this program's path", e))?;
        let bin_dir = exe
            .parent()
            .ok_or_else(|| BenchError::Setup("this program has no directory".into()))?
            .to_path_buf();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let peers_dir = args
            .peers_dir
            .clone()
            .unwrap_or_else(|| root.join("..").join("shared").join("peers"));
        let peers_dir = peers_dir.canonicalize().unwrap_or(peers_dir);

        // The raw-channel child: this binary with the measuring options, no combined ones.
        let plan = cfg.plan;
        let stat = match plan.stat {
            skifch_benches::measure::Stat::Median => "median",
            skifch_benches::measure::Stat::Best => "best",
        };
        let mut raw_args = vec![
            "--tests".to_string(),
            args.tests.clone(),
            "--target-s".into(),
            plan.target_s.to_string(),
            "--reps".into(),
            plan.reps.to_string(),
            "--stat".into(),
            stat.to_string(),
            "-n".into(),
            args.ranks.to_string(),
        ];
        if args.measure.quick {
            raw_args.push("--quick".into());
        }
        if let Some(s) = &args.sizes {
            raw_args.extend(["--sizes".into(), s.clone()]);
        }
        // The raw channels are gated like the C programs and the peers (their side of every
        // ratio is measured near): --gate if given, else the --c2c-gate thresholds applied
        // to this tool's own probe.
        let raw_gate = match &args.gate {
            Some(g) => Some(format!("{}:{}:{}", g.thr_us, g.max_wait_s, g.lo_us)),
            None if args.c2c_gate != "off" => Some(args.c2c_gate.clone()),
            None => None,
        };
        if let Some(g) = raw_gate {
            raw_args.extend(["--gate".into(), g]);
        }
        if args.no_pin {
            raw_args.push("--no-pin".into());
        }
        if let Some(i) = &args.imp {
            raw_args.extend(["--impl".into(), i.clone()]);
        }
        if args.verbose {
            raw_args.push("-v".into());
        }

        // The C programs and run.sh: the same plan and the c2c gate of c2c_gate.h.
        let mut c_args = vec![
            "-t".to_string(),
            plan.target_s.to_string(),
            "-r".into(),
            plan.reps.to_string(),
            "-s".into(),
            stat.to_string(),
        ];
        let extra_plan = c_args.clone();
        // --sizes caps the C programs' sizes; --quick keeps the 1-16 MiB bandwidth at 1 MiB
        let max_size = match (&args.sizes, args.measure.quick) {
            (Some(_), _) => cfg.sizes.iter().max().copied(),
            (None, true) => Some(1 << 20),
            (None, false) => None,
        };
        if let Some(max) = cfg.sizes.iter().max().filter(|_| args.sizes.is_some()) {
            c_args.extend(["-m".into(), max.to_string()]);
        }
        let mut peer_env = vec![
            ("TARGET_S".to_string(), plan.target_s.to_string()),
            ("REPS".into(), plan.reps.to_string()),
            ("STAT".into(), stat.to_string()),
        ];
        if args.c2c_gate == "off" {
            peer_env.push(("WAIT_NEAR_US".into(), "0".into()));
        } else {
            let g: Gate = args
                .c2c_gate
                .parse()
                .map_err(|e| BenchError::Setup(format!("--c2c-gate: {e}")))?;
            c_args.extend([
                "-g".into(),
                format!("{}:{}:{}", g.thr_us, g.max_wait_s, g.lo_us),
            ]);
            peer_env.extend([
                ("WAIT_NEAR_US".into(), g.thr_us.to_string()),
                ("GATE_WAIT_S".into(), g.max_wait_s.to_string()),
                ("WAIT_NEAR_MIN_US".into(), g.lo_us.to_string()),
            ]);
        }
        if args.verbose {
            c_args.push("-v".into());
        }

        let work_dir = args
            .work_dir
            .clone()
            .unwrap_or_else(|| bin_dir.join("msgrate-layers"));
        let run = Combined {
            layers: layers_list,
            peers,
            rounds: args.rounds,
            raw_exe: exe.clone(),
            raw_args,
            c_args,
            extra_plan,
            max_size,
            peer_env,
            tools: Tools {
                root,
                bin_dir,
                peers_dir,
                work_dir: work_dir.clone(),
                timeout_s: args.group_timeout_s,
            },
        };
        let out = run.run(|what| eprintln!("# {what}"))?;
        write_csv(&args.csv, &out.rows)?;
        plot_svg(&args.svg, &out.rows, TITLE)?;
        print!("{}", layers::comparison_table(&out.rows));
        for n in &out.notes {
            eprintln!("# {n}");
        }
        eprintln!("# logs and per-group CSVs: {}", work_dir.display());
        for f in &out.failures {
            eprintln!("msgrate: FAILED: {f}");
        }
        println!(
            "CSV: {}   plot: {}   (load average now {})",
            args.csv.display(),
            args.svg.display(),
            loadavg()
        );
        Ok(if out.failures.is_empty() { 0 } else { 1 })
    }
}
