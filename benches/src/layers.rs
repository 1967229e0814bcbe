//! The combined MsgRate run (`msgrate --with mpi-lite,shmem --peers-run`): raw SkifCh
//! channels, the libraries built on them (mpi-lite, skifshmem) and the peers of
//! `../shared/peers` (Open MPI, MPICH, Open MPI's OpenSHMEM, the raw ring) measured in one
//! run, merged into one CSV, one table and one plot.
//!
//! The libraries are measured with the peers' own programs, unmodified:
//! `msgrate_mpi.c` built with `mpi-lite/bin/skif-mpicc` (impl `mpi-lite`) and
//! `msgrate_shmem.c` built with `shmem/bin/skif-oshcc` (impl `skifshmem`), each run as a
//! 2-rank job under `skifrun`, with the options `run.sh` gives the peers (`-t -r -s -g`), so
//! both sides of a ratio come from the same code, the same measuring rule and the same
//! core-to-core gate (`c2c_gate.h`). The peers run through `run.sh`, one group per call
//! (`ONLY=<group>`), placed right after the SkifCh group they are compared with; with
//! `rounds > 1` the whole sequence repeats in alternating order and each point reports the
//! median over the rounds — the peers README's advice ("Noise": compare within one run,
//! back to back, same gating).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub use crate::compare::comparison_table;
use crate::results::Row;
use crate::{BenchError, Result};

/// A library on SkifCh measured with a peers' C program (and/or our own programs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    /// mpi-lite (`libskifmpi`) running `msgrate_mpi.c`.
    MpiLite,
    /// skifshmem (`libskifshmem`) running `msgrate_shmem.c`.
    Shmem,
    /// The same over skifshmem's message path (`SKIFSHMEM_RMA=off`: puts as active
    /// messages, the path of a driver without remote memory access), against the raw ring.
    ShmemMsg,
    /// armci-shim (`libarmci`) running our `armci_bench.c` (the peers have no ARMCI
    /// program), beside the same program over Debian's ARMCI-MPI on Open MPI and MPICH.
    Armci,
    /// gasnet-shim (`libgasnet`) running our `gasnet_bench.c` (AM latency and rates, RMA),
    /// beside UCX's active messages (`run.sh` group `ucx`: ucp_am_lat / ucp_am_bw).
    Gasnet,
}

/// A peer library that runs a layer's extra programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerBuild {
    /// The impl column of its rows.
    pub imp: &'static str,
    /// The `run.sh` group whose MPI (or OSHMEM) it runs on: it is built and run when that
    /// group is in `--peers-run`, with that group's launcher.
    pub group: &'static str,
    /// Its compiler, and the libraries to link after the source.
    pub cc: &'static str,
    pub libs: &'static [&'static str],
    /// Launcher options beyond its group's.
    pub args: &'static [&'static str],
    /// The extra programs it runs (empty: all of its layer's).
    pub only: &'static [&'static str],
}

const PEER_OMPI: PeerBuild = PeerBuild {
    imp: "openmpi",
    group: "openmpi",
    cc: "mpicc.openmpi",
    libs: &[],
    args: &[],
    only: &["mpi_bw.c", "mpi_coll.c"],
};
/// `mpi_rma.c` over Open MPI's UCX one-sided component (its default, osc/rdma over vader,
/// crashed in the benchmark's MPI_Bcast after the fetch-and-op test).
const PEER_OMPI_OSC_UCX: PeerBuild = PeerBuild {
    imp: "openmpi-osc-ucx",
    group: "openmpi",
    cc: "mpicc.openmpi",
    libs: &[],
    args: &["--mca", "osc", "ucx", "-x", "UCX_TLS=sm,self"],
    only: &["mpi_rma.c"],
};
/// `mpi_rma.c` over Open MPI's shared-memory one-sided component (`osc/sm`), which it does
/// not pick itself for `MPI_Win_allocate` here although it is the fastest one-sided MPI on
/// this machine (mpi-lite/README.md "One-sided speed").
const PEER_OMPI_OSC_SM: PeerBuild = PeerBuild {
    imp: "openmpi-osc-sm",
    group: "openmpi",
    cc: "mpicc.openmpi",
    libs: &[],
    args: &["--mca", "osc", "sm,pt2pt"],
    only: &["mpi_rma.c"],
};
/// `mpi_rma.c` over MPICH (its default one-sided path).
const PEER_MPICH_RMA: PeerBuild = PeerBuild {
    imp: "mpich",
    group: "mpich",
    cc: "mpicc.mpich",
    libs: &[],
    args: &[],
    only: &["mpi_rma.c"],
};
const PEER_OSHMEM: PeerBuild = PeerBuild {
    imp: "oshmem",
    group: "oshmem",
    cc: "oshcc",
    libs: &[],
    args: &[],
    only: &[],
};
/// Debian's `libarmci-mpi-dev`: ARMCI-MPI built for each MPI (static libraries). On Open
/// MPI twice: with the one-sided component Open MPI picks itself, and with its shared-memory
/// one (`osc/sm`), which it does not pick for ARMCI-MPI's windows although it is 2-3x
/// faster for them on one node (docs/results-2026-11-28-armci): the best ARMCI-MPI.
const PEER_ARMCI: [PeerBuild; 3] = [
    PeerBuild {
        imp: "armci-mpi-openmpi",
        group: "openmpi",
        cc: "mpicc.openmpi",
        libs: &["-larmci-openmpi"],
        args: &[],
        only: &[],
    },
    PeerBuild {
        imp: "armci-mpi-openmpi-sm",
        group: "openmpi",
        cc: "mpicc.openmpi",
        libs: &["-larmci-openmpi"],
        args: &["--mca", "osc", "sm,pt2pt"],
        only: &[],
    },
    PeerBuild {
        imp: "armci-mpi-mpich",
        group: "mpich",
        cc: "mpicc.mpich",
        libs: &["-larmci-mpich"],
        args: &[],
        only: &[],
    },
];

impl PeerBuild {
    /// The command that runs `exe` as 2 processes under this peer's launcher, bound and
    /// with the transports `run.sh` uses for its group.
    fn cmd(&self, exe: &Path) -> Command {
        let two_cpus = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
        let bind: &[&str] = if two_cpus {
            &["--bind-to", "core", "--map-by", "core"]
        } else {
            &["--oversubscribe", "--bind-to", "none"]
        };
        let mut c = match self.group {
            "mpich" => {
                // as run.sh: MPICH's on-node traffic goes through UCX, on its shm transports
                let mut c = Command::new("mpirun.mpich");
                c.args(["-np", "2"])
                    .args(if two_cpus {
                        &["-bind-to", "core"][..]
                    } else {
                        &[]
                    })
                    .env("UCX_TLS", "sm,self");
                c
            }
            "oshmem" => {
                let mut c = Command::new("oshrun");
                c.args(["-np", "2"]).args(bind);
                // as run.sh: osc/rdma crashes OSHMEM's finalize (open-mpi/ompi#11604)
                c.args(["--mca", "osc", "^rdma", "-x", "UCX_TLS=sm,self"]);
                c
            }
            _ => {
                let mut c = Command::new("mpirun.openmpi");
                c.args(["-np", "2"]).args(bind);
                c.args(["--mca", "pml", "ob1", "--mca", "btl", "vader,self"]);
                c
            }
        };
        c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .args(self.args)
            .arg(exe)
            .args(["-i", self.imp]);
        c
    }
}

impl Layer {
    /// The impl column of its rows.
    pub fn imp(self) -> &'static str {
        match self {
            Layer::MpiLite => "mpi-lite",
            Layer::Shmem => "skifshmem",
            Layer::ShmemMsg => "skifshmem-msg",
            Layer::Armci => "armci-shim",
            Layer::Gasnet => "gasnet-shim",
        }
    }
    /// Environment of its runs.
    fn env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Layer::ShmemMsg => &[("SKIFSHMEM_RMA", "off")],
            _ => &[],
        }
    }
    /// The peers' program it runs, if any.
    fn source(self) -> Option<&'static str> {
        match self {
            Layer::MpiLite => Some("msgrate_mpi.c"),
            Layer::Shmem | Layer::ShmemMsg => Some("msgrate_shmem.c"),
            Layer::Armci | Layer::Gasnet => None,
        }
    }
    /// The compiler wrapper, relative to the workspace root.
    fn wrapper(self) -> &'static str {
        match self {
            Layer::MpiLite => "mpi-lite/bin/skif-mpicc",
            Layer::Shmem | Layer::ShmemMsg => "shmem/bin/skif-oshcc",
            Layer::Armci => "armci-shim/bin/skif-armcicc",
            Layer::Gasnet => "gasnet-shim/bin/skif-gasnetcc",
        }
    }
    /// (environment variable naming the library directory, library file, package).
    fn library(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Layer::MpiLite => ("SKIFMPI_LIBDIR", "libskifmpi.so", "skifmpi"),
            Layer::Shmem | Layer::ShmemMsg => ("SKIFSHMEM_LIBDIR", "libskifshmem.so", "shmem"),
            Layer::Armci => ("ARMCI_SHIM_LIBDIR", "libarmci.so", "armci-shim"),
            Layer::Gasnet => ("GASNET_SHIM_LIBDIR", "libgasnet.so", "gasnet-shim"),
        }
    }
    /// Our own programs (in `benches/c/`), for what the peers' program does not measure:
    /// 1-16 MiB bandwidth and 2-rank Barrier/8 B Allreduce latency (MPI), get and
    /// fetch-add latency and 64 KiB-4 MiB put/get bandwidth beside memcpy's (SHMEM); all
    /// of ARMCI.
    fn extra_sources(self) -> &'static [&'static str] {
        match self {
            Layer::MpiLite => &["mpi_bw.c", "mpi_coll.c", "mpi_rma.c"],
            Layer::Shmem => &["shmem_lat.c"],
            Layer::ShmemMsg => &[],
            Layer::Armci => &["armci_bench.c"],
            Layer::Gasnet => &["gasnet_bench.c"],
        }
    }
    /// The peer libraries that also run the extra programs.
    pub fn extra_peers(self) -> &'static [PeerBuild] {
        match self {
            Layer::MpiLite => &[
                PEER_OMPI,
                PEER_OMPI_OSC_UCX,
                PEER_OMPI_OSC_SM,
                PEER_MPICH_RMA,
            ],
            Layer::Shmem | Layer::ShmemMsg => &[PEER_OSHMEM],
            Layer::Armci => &PEER_ARMCI,
            Layer::Gasnet => &[],
        }
    }
    /// The peers' groups (`run.sh` names) this layer is compared with.
    fn peer_groups(self) -> &'static [&'static str] {
        match self {
            Layer::MpiLite => &["openmpi", "openmpi-ucx", "mpich"],
            Layer::Shmem => &["oshmem"],
            Layer::ShmemMsg => &["rawring"],
            Layer::Armci => &[],
            Layer::Gasnet => &["ucx"],
        }
    }
}

/// Parses `--with`: a comma- or space-separated list of `mpi-lite`, `shmem` (`skifshmem`),
/// `shmem-msg`, `armci` (`armci-shim`), `gasnet` (`gasnet-shim`).
///
/// ```
/// use skifch_benches::layers::{parse_layers, Layer};
/// assert_eq!(parse_layers("mpi-lite,shmem").unwrap(), vec![Layer::MpiLite, Layer::Shmem]);
/// assert!(parse_layers("mpi").is_err());
/// ```
pub fn parse_layers(s: &str) -> Result<Vec<Layer>> {
    let mut out = Vec::new();
    for t in s.split([',', ' ']).filter(|t| !t.is_empty()) {
        let l = match t {
            "mpi-lite" | "mpilite" | "skifmpi" => Layer::MpiLite,
            "shmem" | "skifshmem" => Layer::Shmem,
            "shmem-msg" | "skifshmem-msg" => Layer::ShmemMsg,
            "armci" | "armci-shim" => Layer::Armci,
            "gasnet" | "gasnet-shim" => Layer::Gasnet,
            _ => {
                return Err(BenchError::Setup(format!(
                    "--with: unknown layer {t:?} (known: mpi-lite, shmem, shmem-msg, armci, gasnet)"
                )))
            }
        };
        if !out.contains(&l) {
            out.push(l);
        }
    }
    Ok(out)
}

/// The groups of `../shared/peers/run.sh` (`ONLY=`).
pub const PEER_GROUPS: [&str; 6] = [
    "rawring",
    "openmpi",
    "openmpi-ucx",
    "mpich",
    "oshmem",
    "ucx",
];
/// `--peers-run` without a list: everything but UCX's own perftest.
pub const DEFAULT_PEER_GROUPS: &str = "rawring openmpi openmpi-ucx mpich oshmem";

/// Parses a `--peers-run` list (comma- or space-separated `run.sh` group names).
pub fn parse_peer_groups(s: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for t in s.split([',', ' ']).filter(|t| !t.is_empty()) {
        if !PEER_GROUPS.contains(&t) {
            return Err(BenchError::Setup(format!(
                "--peers-run: unknown group {t:?} (run.sh knows: {})",
                PEER_GROUPS.join(" ")
            )));
        }
        if !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    }
    Ok(out)
}

/// The commands a peers group needs, with how to get them when they are missing.
fn group_needs(group: &str) -> (&'static [&'static str], &'static str) {
    match group {
        "rawring" => (&["gcc"], "apt-get install -y gcc libc6-dev"),
        "openmpi" | "openmpi-ucx" => (
            &["mpicc.openmpi", "mpirun.openmpi"],
            "apt-get install -y openmpi-bin libopenmpi-dev",
        ),
        "mpich" => (
            &["mpicc.mpich", "mpirun.mpich"],
            "apt-get install -y mpich libmpich-dev",
        ),
        "oshmem" => (
            &["oshcc", "oshrun"],
            "apt-get install -y openmpi-bin libopenmpi-dev (Open MPI's OSHMEM)",
        ),
        _ => (&["ucx_perftest"], "apt-get install -y ucx-utils"),
    }
}

fn on_path(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
}

/// Where everything is.
#[derive(Clone, Debug)]
pub struct Tools {
    /// The workspace root (for the compiler wrappers).
    pub root: PathBuf,
    /// Where `skifrun`, `libskifmpi.so` and `libskifshmem.so` are (the profile directory
    /// of the running `msgrate`).
    pub bin_dir: PathBuf,
    /// `../shared/peers`: the C sources and `run.sh`.
    pub peers_dir: PathBuf,
    /// Built programs, per-group CSVs and logs.
    pub work_dir: PathBuf,
    /// Seconds a group may take before it is killed.
    pub timeout_s: u64,
}

impl Tools {
    fn skifrun(&self) -> Result<PathBuf> {
        let p = self.bin_dir.join("skifrun");
        if p.is_file() {
            Ok(p)
        } else {
            Err(BenchError::Setup(format!(
                "{} not found: build it with `cargo build --release -p skifrun`",
                p.display()
            )))
        }
    }

    fn log(&self, name: &str) -> PathBuf {
        self.work_dir.join(format!("{name}.log"))
    }

    /// Checks that the wrapper, the library and the peers' source exist; builds the layer's
    /// programs (the peers' if it runs one, and our extra ones) into `work_dir`; returns
    /// their paths.
    pub fn build(&self, layer: Layer) -> Result<(Option<PathBuf>, Vec<PathBuf>)> {
        let wrapper = self.root.join(layer.wrapper());
        if !wrapper.is_file() {
            return Err(BenchError::Setup(format!(
                "{}: compiler wrapper {} not found",
                layer.imp(),
                wrapper.display()
            )));
        }
        let (var, lib, pkg) = layer.library();
        if !self.bin_dir.join(lib).is_file() {
            return Err(BenchError::Setup(format!(
                "{}: {} not found in {}: build it with `cargo build --release -p {pkg}` \
                 (the same profile as this msgrate)",
                layer.imp(),
                lib,
                self.bin_dir.display()
            )));
        }
        let exe = match layer.source() {
            Some(src) => {
                let src = self.peers_dir.join(src);
                if !src.is_file() {
                    return Err(BenchError::Setup(format!(
                        "{}: {} not found (--peers-dir names the directory of ../shared/peers)",
                        layer.imp(),
                        src.display()
                    )));
                }
                Some(self.compile(
                    &format!("msgrate_{}", layer.imp().replace('-', "")),
                    Command::new(&wrapper).env(var, &self.bin_dir),
                    &src,
                    &[],
                )?)
            }
            None => None,
        };
        let mut extra = Vec::new();
        for src in layer.extra_sources() {
            extra.push(self.compile(
                &format!(
                    "{}_{}",
                    src.trim_end_matches(".c"),
                    layer.imp().replace('-', "")
                ),
                Command::new(&wrapper).env(var, &self.bin_dir),
                &self.extra_dir().join(src),
                &[],
            )?);
        }
        Ok((exe, extra))
    }

    /// `benches/c/`: our extra C programs.
    fn extra_dir(&self) -> PathBuf {
        self.root.join("benches").join("c")
    }

    /// Builds the layer's extra programs for a peer library (`mpicc.openmpi`, `oshcc`,
    /// ARMCI-MPI's libraries), in the order of `Layer::extra_sources` (`None`: one the
    /// peer does not run, [`PeerBuild::only`]).
    pub fn build_peer_extra(&self, layer: Layer, peer: &PeerBuild) -> Result<Vec<Option<PathBuf>>> {
        let mut out = Vec::new();
        for src in layer.extra_sources() {
            if !peer.only.is_empty() && !peer.only.contains(src) {
                out.push(None);
                continue;
            }
            let built = self.compile(
                &format!("{}_{}", src.trim_end_matches(".c"), peer.imp),
                &mut Command::new(peer.cc),
                &self.extra_dir().join(src),
                peer.libs,
            );
            out.push(Some(built.map_err(|e| match (e, layer) {
                (BenchError::Setup(m), Layer::Armci) => BenchError::Setup(format!(
                    "{m}\n(ARMCI-MPI for Open MPI and MPICH: apt-get install -y libarmci-mpi-dev)"
                )),
                (e, _) => e,
            })?));
        }
        Ok(out)
    }

    /// Compiles `src` with `cc` (a compiler command, maybe with environment) and links
    /// `libs` into `work_dir/name`; the compiler's output goes to `build-<name>.log`, and
    /// into the error.
    fn compile(&self, name: &str, cc: &mut Command, src: &Path, libs: &[&str]) -> Result<PathBuf> {
        std::fs::create_dir_all(&self.work_dir)
            .map_err(|e| BenchError::io(format!("creating {}", self.work_dir.display()), e))?;
        let exe = self.work_dir.join(name);
        let log = self.log(&format!("build-{name}"));
        let out = cc
            .args(["-O2", "-Wall", "-I"])
            .arg(&self.peers_dir)
            .arg(src)
            .arg("-o")
            .arg(&exe)
            .args(libs)
            .output()
            .map_err(|e| BenchError::io(format!("running {:?}", cc.get_program()), e))?;
        let _ = std::fs::write(&log, [&out.stdout[..], &out.stderr[..]].concat());
        if !out.status.success() {
            return Err(BenchError::Setup(format!(
                "building {name}: {:?} {} failed ({}); the compiler said:\n{}",
                cc.get_program(),
                src.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim_end()
            )));
        }
        Ok(exe)
    }

    /// Checks that every command `groups` need is installed.
    pub fn check_peers(&self, groups: &[String]) -> Result<()> {
        let run = self.peers_dir.join("run.sh");
        if !run.is_file() {
            return Err(BenchError::Setup(format!(
                "{} not found (--peers-dir names the directory of ../shared/peers)",
                run.display()
            )));
        }
        let mut missing = Vec::new();
        for g in groups {
            let (cmds, how) = group_needs(g);
            let lack: Vec<&str> = cmds.iter().copied().filter(|c| !on_path(c)).collect();
            if !lack.is_empty() {
                missing.push(format!(
                    "  {g}: {} not on PATH; install: {how}",
                    lack.join(", ")
                ));
            }
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(BenchError::Setup(format!(
                "--peers-run: peers not installed:\n{}\n(as root, `bash {}` installs them all; \
                 or leave these groups out of --peers-run)",
                missing.join("\n"),
                run.display()
            )))
        }
    }

    /// Runs `run.sh` for one group (`ONLY=group`, `NO_INSTALL=1`, builds in `work_dir`);
    /// `env` adds knobs (`TARGET_S`, `REPS`, `STAT`, the gate's). Its stderr (transports,
    /// noise figures) goes to `work_dir/peers-<group>.log`.
    pub fn run_peers(&self, group: &str, tag: &str, env: &[(String, String)]) -> Result<Vec<Row>> {
        let mut cmd = Command::new("bash");
        cmd.arg(self.peers_dir.join("run.sh"))
            .env("ONLY", group)
            .env("NO_INSTALL", "1")
            .env("BUILD_DIR", self.work_dir.join("peers-build"))
            .envs(env.iter().map(|(k, v)| (k, v)));
        self.run_csv(&format!("peers-{group}{tag}"), cmd)
    }

    /// Runs `cmd` and parses the CSV lines of its stdout (see [`Tools::run_logged`]); no
    /// line at all is an error.
    pub fn run_csv(&self, name: &str, cmd: Command) -> Result<Vec<Row>> {
        let stdout = self.run_logged(name, cmd)?;
        let _ = std::fs::write(self.work_dir.join(format!("{name}.csv")), stdout.as_bytes());
        let rows = csv_lines(&stdout);
        if rows.is_empty() {
            return Err(BenchError::Setup(format!(
                "{name} printed no CSV lines (see {})",
                self.log(name).display()
            )));
        }
        Ok(rows)
    }

    /// Runs `cmd` under `timeout`, stderr to `work_dir/<name>.log`; returns its stdout. A
    /// failure (status, timeout) is an error quoting the end of the log.
    pub fn run_logged(&self, name: &str, cmd: Command) -> Result<String> {
        std::fs::create_dir_all(&self.work_dir)
            .map_err(|e| BenchError::io(format!("creating {}", self.work_dir.display()), e))?;
        let log = self.log(name);
        let errf = std::fs::File::create(&log)
            .map_err(|e| BenchError::io(format!("creating {}", log.display()), e))?;
        // `timeout` (coreutils) bounds the group: a hung job must not hang the whole run.
        let mut t = Command::new("timeout");
        t.args(["--kill-after=10", &self.timeout_s.to_string()])
            .arg(cmd.get_program())
            .args(cmd.get_args())
            .envs(cmd.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
            .stdin(Stdio::null())
            .stderr(errf);
        let out = t.output().map_err(|e| {
            BenchError::io(
                format!("running {name} (timeout {:?})", cmd.get_program()),
                e,
            )
        })?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            let tail: Vec<String> = std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .rev()
                .take(12)
                .map(String::from)
                .collect();
            let tail: Vec<String> = tail.into_iter().rev().collect();
            let why = if out.status.code() == Some(124) {
                format!("killed after {} s", self.timeout_s)
            } else {
                out.status.to_string()
            };
            return Err(BenchError::Setup(format!(
                "{name} failed ({why}); end of {}:\n{}",
                log.display(),
                tail.join("\n")
            )));
        }
        Ok(stdout)
    }
}

/// A combined run, as the `msgrate` options ask for it.
#[derive(Clone, Debug)]
pub struct Combined {
    /// The libraries to measure beside the raw channels.
    pub layers: Vec<Layer>,
    /// `run.sh` groups to run.
    pub peers: Vec<String>,
    /// Rounds of the whole sequence (order alternates; median per point).
    pub rounds: u32,
    /// The raw-channel MsgRate: this `msgrate` binary and its options (no outputs).
    pub raw_exe: PathBuf,
    pub raw_args: Vec<String>,
    /// Options of the peers' C programs (`-t -r -s [-m] [-g]`).
    pub c_args: Vec<String>,
    /// Options of our extra C programs (`-t -r -s`), and their size cap (`-m`).
    pub extra_plan: Vec<String>,
    pub max_size: Option<usize>,
    /// `run.sh` knobs (`TARGET_S`, `REPS`, `STAT`, the gate's).
    pub peer_env: Vec<(String, String)>,
    pub tools: Tools,
}

/// One group of a round.
#[derive(Clone, Debug)]
enum Step {
    Raw,
    /// The peers' program over our library.
    Layer(Layer, PathBuf),
    /// Our extra program over our library.
    Extra(Layer, PathBuf),
    Peer(String),
    /// Our extra program over a peer library (Open MPI, OSHMEM, ARMCI-MPI).
    PeerExtra(Layer, PeerBuild, PathBuf),
}

impl Step {
    fn name(&self) -> String {
        match self {
            Step::Raw => "raw channels".into(),
            Step::Layer(l, _) => l.imp().into(),
            Step::Extra(l, p) => {
                let file = p.file_name().unwrap_or_default().to_string_lossy();
                format!("{} ({file})", l.imp())
            }
            Step::PeerExtra(_, peer, p) => {
                let file = p.file_name().unwrap_or_default().to_string_lossy();
                format!("{} ({file})", peer.imp)
            }
            Step::Peer(g) => format!("peers {g}"),
        }
    }
}

/// What a combined run measured: every round's rows merged (median per point), the
/// groups that failed (their rows are missing, the others are kept), notes.
#[derive(Debug, Default)]
pub struct Outcome {
    pub rows: Vec<Row>,
    pub failures: Vec<String>,
    pub notes: Vec<String>,
}

impl Combined {
    /// Checks and builds everything first (a missing wrapper, library, `skifrun` or peer is
    /// an error before anything is measured), then runs the rounds. `progress` hears about
    /// each group as it starts.
    pub fn run(&self, mut progress: impl FnMut(&str)) -> Result<Outcome> {
        self.tools.check_peers(&self.peers)?;
        if !self.layers.is_empty() {
            self.tools.skifrun()?;
        }
        let mut built = Vec::new();
        for &l in &self.layers {
            built.push((l, self.tools.build(l)?));
        }
        // Our extra programs over the peers' libraries: Open MPI's and OSHMEM's whenever
        // their group runs; ARMCI-MPI's only with `--with armci` (a package of its own).
        let mut peer_extra: Vec<(Layer, PeerBuild, Vec<Option<PathBuf>>)> = Vec::new();
        for l in [Layer::MpiLite, Layer::Shmem, Layer::Armci] {
            if l == Layer::Armci && !self.layers.contains(&l) {
                continue;
            }
            for p in l.extra_peers() {
                if self.peers.iter().any(|g| g == p.group) {
                    peer_extra.push((l, *p, self.tools.build_peer_extra(l, p)?));
                }
            }
        }
        // Each SkifCh group is followed by the peers it is compared with; each extra
        // program over our library by the same program over the peer's (the i-th of each).
        let mut seq = vec![Step::Raw];
        let peer = |g: &str| {
            self.peers
                .iter()
                .any(|p| p == g)
                .then(|| Step::Peer(g.into()))
        };
        let pextra = |l: Layer, i: usize| -> Vec<Step> {
            peer_extra
                .iter()
                .filter(|(pl, _, _)| *pl == l)
                .filter_map(|(_, p, exes)| {
                    let x = exes.get(i)?.as_ref()?;
                    Some(Step::PeerExtra(l, *p, x.clone()))
                })
                .collect()
        };
        seq.extend(peer("rawring"));
        for (l, (exe, extra)) in &built {
            if let Some(exe) = exe {
                seq.push(Step::Layer(*l, exe.clone()));
            }
            seq.extend(l.peer_groups().iter().filter_map(|g| peer(g)));
            for (i, x) in extra.iter().enumerate() {
                seq.push(Step::Extra(*l, x.clone()));
                seq.extend(pextra(*l, i));
            }
        }
        for g in &self.peers {
            if !seq.iter().any(|s| matches!(s, Step::Peer(p) if p == g)) {
                seq.push(Step::Peer(g.clone()));
            }
        }
        for (l, p, exes) in &peer_extra {
            if !seq
                .iter()
                .any(|s| matches!(s, Step::PeerExtra(pl, pp, _) if pl == l && pp == p))
            {
                seq.extend(
                    exes.iter()
                        .flatten()
                        .map(|exe| Step::PeerExtra(*l, *p, exe.clone())),
                );
            }
        }
        let mut out = Outcome::default();
        out.notes
            .push(format!("load average before: {}", loadavg()));
        let mut rounds = Vec::new();
        for round in 0..self.rounds {
            let mut order = seq.clone();
            if round % 2 == 1 {
                order.reverse();
            }
            let mut rows = Vec::new();
            for step in &order {
                let tag = if self.rounds > 1 {
                    format!("-r{}", round + 1)
                } else {
                    String::new()
                };
                progress(&format!(
                    "round {}/{}: {} (load average {})",
                    round + 1,
                    self.rounds,
                    step.name(),
                    loadavg()
                ));
                let t0 = std::time::Instant::now();
                let cpu0 = CpuSnap::now();
                let got = match step {
                    Step::Raw => self.run_raw(&tag),
                    Step::Layer(l, exe) => {
                        let mut cmd = Command::new(self.tools.skifrun()?);
                        cmd.args(["-n", "2", "--"])
                            .arg(exe)
                            .args(["-i", l.imp()])
                            .args(&self.c_args)
                            .envs(l.env().iter().copied());
                        self.tools.run_csv(&format!("{}{tag}", l.imp()), cmd)
                    }
                    Step::Extra(l, exe) => {
                        let mut cmd = Command::new(self.tools.skifrun()?);
                        cmd.args(["-n", "2", "--"])
                            .arg(exe)
                            .args(["-i", l.imp()])
                            .args(self.extra_args(*l));
                        self.tools.run_csv(&format!("{}-extra{tag}", l.imp()), cmd)
                    }
                    Step::Peer(g) => self.tools.run_peers(g, &tag, &self.peer_env),
                    Step::PeerExtra(l, p, exe) => {
                        let mut cmd = p.cmd(exe);
                        cmd.args(self.extra_args(*l));
                        let name = format!("peers-{}-extra{tag}", p.imp);
                        self.tools.run_csv(&name, cmd)
                    }
                };
                match got {
                    Ok(r) => {
                        let others = match (cpu0, CpuSnap::now()) {
                            (Some(a), Some(b)) => format!("{:.0} %", a.other_work_pct(&b)),
                            _ => "?".into(),
                        };
                        out.notes.push(format!(
                            "round {}: {}: {} points in {:.0} s, other work {others} of the CPUs, \
                             load average after {}",
                            round + 1,
                            step.name(),
                            r.len(),
                            t0.elapsed().as_secs_f64(),
                            loadavg()
                        ));
                        rows.extend(r);
                    }
                    Err(e) => {
                        out.failures
                            .push(format!("round {}: {}: {e}", round + 1, step.name()))
                    }
                }
            }
            rounds.push(rows);
        }
        out.notes.push(format!("load average after: {}", loadavg()));
        out.rows = median_rounds(&rounds);
        Ok(out)
    }

    /// Options of an extra program: the plan, and the largest size when `max_size` is set
    /// (mpi_bw.c starts at 1 MiB, shmem_lat.c at 8 B and its bandwidth at 64 KiB,
    /// armci_bench.c keeps its first size of each kind, so the cap never empties them;
    /// mpi_coll.c has no sizes and ignores it).
    fn extra_args(&self, l: Layer) -> Vec<String> {
        let mut a = self.extra_plan.clone();
        if let Some(m) = self.max_size {
            let floor = if l == Layer::MpiLite { 1 << 20 } else { 8 };
            a.extend(["-m".into(), m.max(floor).to_string()]);
        }
        a
    }

    /// The raw-channel MsgRate: this binary as a child, its CSV read back.
    fn run_raw(&self, tag: &str) -> Result<Vec<Row>> {
        let csv = self.tools.work_dir.join(format!("raw{tag}.csv"));
        let _ = std::fs::remove_file(&csv);
        let mut cmd = Command::new(&self.raw_exe);
        cmd.args(&self.raw_args)
            .arg("--csv")
            .arg(&csv)
            .arg("--svg")
            .arg(self.tools.work_dir.join(format!("raw{tag}.svg")))
            // a fresh job of its own, whatever started us
            .env_remove("SKIFCH_RANK")
            .env_remove("SKIFCH_SIZE")
            .env_remove("SKIFCH_FD");
        self.tools.run_logged(&format!("raw{tag}"), cmd)?;
        crate::results::read_csv(&csv)
    }
}

/// The `impl,test,size,value,unit` lines of a program's output (other lines are notes).
pub fn csv_lines(text: &str) -> Vec<Row> {
    text.lines()
        .filter(|l| !l.starts_with('#') && l.trim() != crate::results::HEADER)
        .filter_map(Row::parse)
        .collect()
}

/// Several rounds of the same points into one: per (impl, test, size, unit) the median of
/// the rounds that measured it (the mean of the two middle values for an even count).
pub fn median_rounds(rounds: &[Vec<Row>]) -> Vec<Row> {
    let mut by: BTreeMap<(String, String, u64, String), Vec<f64>> = BTreeMap::new();
    let mut order = Vec::new();
    for r in rounds.iter().flatten() {
        let k = (r.imp.clone(), r.test.clone(), r.size, r.unit.clone());
        let v = by.entry(k.clone()).or_default();
        if v.is_empty() {
            order.push(k);
        }
        v.push(r.value);
    }
    order
        .into_iter()
        .map(|k| {
            let mut v = by.remove(&k).unwrap_or_default();
            v.sort_by(f64::total_cmp);
            let n = v.len();
            let m = (v[(n - 1) / 2] + v[n / 2]) / 2.0;
            Row::new(&k.0, &k.1, k.2, m, &k.3)
        })
        .collect()
}

/// CPU time counters for "other work" during a group, as `run.sh` computes it: the busy
/// time of all CPUs (`/proc/stat`) minus the CPU time of our own finished children
/// (`/proc/self/stat` cutime + cstime, which includes their children once waited for), in
/// clock ticks.
#[derive(Clone, Copy, Debug)]
pub struct CpuSnap {
    busy: u64,
    total: u64,
    mine: u64,
}

impl CpuSnap {
    /// The counters now; `None` where `/proc` is not readable.
    pub fn now() -> Option<CpuSnap> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let cpu: Vec<u64> = stat
            .lines()
            .next()?
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(|v| v.parse().ok())
            .collect::<Option<_>>()?;
        if cpu.len() < 8 {
            return None;
        }
        // user nice system idle iowait irq softirq steal: busy as run.sh counts it
        let busy = cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6];
        let me = std::fs::read_to_string("/proc/self/stat").ok()?;
        let rest: Vec<&str> = me.rsplit_once(')')?.1.split_whitespace().collect();
        // fields 16 and 17 of proc(5), counted from field 3 after the command name
        let mine = rest.get(13)?.parse::<u64>().ok()? + rest.get(14)?.parse::<u64>().ok()?;
        Some(CpuSnap {
            busy,
            total: cpu.iter().sum(),
            mine,
        })
    }

    /// Percent of all CPUs' time between `self` and `later` used by processes not ours.
    pub fn other_work_pct(&self, later: &CpuSnap) -> f64 {
        let total = later.total.saturating_sub(self.total);
        let busy = later.busy.saturating_sub(self.busy);
        let ours = later.mine.saturating_sub(self.mine);
        if total == 0 {
            return 0.0;
        }
        100.0 * busy.saturating_sub(ours) as f64 / total as f64
    }
}

/// The load average now (`/proc/loadavg`, first three fields), for the notes.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_work_counts_only_what_is_not_ours() {
        let a = CpuSnap::now().expect("/proc is readable");
        // burn ~200 ms of CPU in a child: it is ours, so it must not count as other work
        let st = Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status()
            .unwrap();
        assert!(st.success());
        let b = CpuSnap::now().unwrap();
        assert!(
            b.mine > a.mine,
            "the child's CPU time was not seen: {a:?} {b:?}"
        );
        let p = a.other_work_pct(&b);
        assert!((0.0..=100.0).contains(&p), "{p}");
        let fake = CpuSnap {
            busy: a.busy + 100,
            total: a.total + 400,
            mine: a.mine + 60,
        };
        assert_eq!(a.other_work_pct(&fake), 10.0);
    }

    #[test]
    fn median_over_rounds() {
        let r = |v| vec![Row::new("a", "msgrate", 8, v, "msg/s")];
        let m = median_rounds(&[r(3.0), r(1.0), r(2.0)]);
        assert_eq!(m, r(2.0));
        assert_eq!(median_rounds(&[r(4.0), r(1.0)]), r(2.5));
    }

    #[test]
    fn lists_parse_and_reject() {
        assert_eq!(parse_peer_groups("rawring,openmpi mpich").unwrap().len(), 3);
        assert!(parse_peer_groups("openmpi,lam").is_err());
        assert_eq!(parse_layers("shmem,skifshmem").unwrap(), vec![Layer::Shmem]);
        assert_eq!(
            parse_layers("shmem-msg,shmem").unwrap(),
            vec![Layer::ShmemMsg, Layer::Shmem]
        );
        assert_eq!(Layer::ShmemMsg.env(), &[("SKIFSHMEM_RMA", "off")]);
        assert_eq!(parse_layers("armci").unwrap(), vec![Layer::Armci]);
        assert_eq!(parse_layers("gasnet").unwrap(), vec![Layer::Gasnet]);
        assert_eq!(Layer::Gasnet.peer_groups(), &["ucx"]);
        // ARMCI runs no peers' program, and ARMCI-MPI on both MPIs
        assert_eq!(Layer::Armci.source(), None);
        let p: Vec<_> = Layer::Armci.extra_peers().iter().map(|p| p.group).collect();
        assert_eq!(p, ["openmpi", "openmpi", "mpich"]);
    }

    #[test]
    fn csv_lines_skip_notes_and_header() {
        let rows =
            csv_lines("impl,test,size,value,unit\n# note\nmpi-lite,msgrate,8,100,msg/s\ngarbage\n");
        assert_eq!(
            rows,
            vec![Row::new("mpi-lite", "msgrate", 8, 100.0, "msg/s")]
        );
    }

    #[test]
    fn missing_library_is_a_clear_error() {
        let dir = std::env::temp_dir().join(format!("layers-nolib-{}", std::process::id()));
        let tools = Tools {
            root: Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
            bin_dir: dir.clone(),
            peers_dir: dir.clone(),
            work_dir: dir.join("work"),
            timeout_s: 5,
        };
        let e = tools.build(Layer::MpiLite).unwrap_err().to_string();
        assert!(
            e.contains("libskifmpi.so not found") && e.contains("cargo build --release -p skifmpi"),
            "{e}"
        );
        let e = tools.skifrun().unwrap_err().to_string();
        assert!(e.contains("skifrun"), "{e}");
    }
}
