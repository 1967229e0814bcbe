//! [`Combined`]: the combined run's sequence of groups (raw channels, layers, peers),
//! run for several rounds, and its [`Outcome`].

use std::path::PathBuf;
use std::process::Command;

use super::{loadavg, median_rounds, CpuSnap, Layer, PeerBuild, Tools};
use crate::results::Row;
use crate::Result;

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
