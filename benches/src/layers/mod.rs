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

use std::path::Path;
use std::process::Command;

pub use crate::compare::comparison_table;
use crate::{BenchError, Result};

mod combined;
mod stats;
mod tools;

pub use combined::{Combined, Outcome};
pub use stats::{csv_lines, loadavg, median_rounds, CpuSnap};
pub use tools::Tools;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
