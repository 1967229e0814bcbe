//! Jobs under Open MPI's `mpirun` across the nodes of a [`NetNodes`], with what a test of
//! the ways a job ends needs (issue 21: `gasnet_exit`, `shmem_global_exit`, `MPI_Abort`
//! across hosts under a PMIx launcher): [`NetNodes::openmpi_job`] tells `mpirun`'s own
//! failures to start a job across the namespaces (its daemons' wiring there is flaky; seen
//! in CI) apart from ours, and checks that the job left nothing behind.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::{run_job, NetNodes, Outcome};

/// `mpirun`'s exit status when its `--timeout` ends the job.
pub const OPENMPI_TIMED_OUT: i32 = 110;

/// How long the trivial job that checks `mpirun` itself may take.
const PROBE_SECS: u32 = 60;

/// How long the processes of an ended job may take to leave the namespaces.
const DRAIN: Duration = Duration::from_secs(30);

/// One Open MPI job at a time per test process: Open MPI 4 jobs started at once by one
/// test process interfered (a job in the namespaces hung until its time limit).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// How an Open MPI job across the namespaces ended (see [`NetNodes::openmpi_job`]).
#[derive(Debug)]
pub struct OpenmpiJob {
    /// `mpirun`'s status and everything the job printed.
    pub outcome: Outcome,
    /// From the start of `mpirun` to its end.
    pub elapsed: Duration,
}

impl NetNodes {
    /// Runs `program args` with `ranks[i]` ranks on node `i` under Open MPI's `mpirun`
    /// ([`NetNodes::openmpi_cmd`], `--timeout` `limit_secs`), with `env` added, and checks
    /// what it left: no process in any namespace of these nodes (within 30 s of `mpirun`'s
    /// end), nothing new in `/dev/shm` named after a rank's pid or SkifCh.
    ///
    /// `None`, said on stderr, where Open MPI is missing or its `mpirun` cannot start jobs
    /// across the namespaces: a trivial job (`hostname`) run first fails twice, or `mpirun`
    /// reaches its time limit before it started every rank of the job, twice. A job whose
    /// ranks all started is returned whatever its status: a hang of ours is then
    /// `mpirun`'s timeout ([`OPENMPI_TIMED_OUT`]), for the test to refuse.
    ///
    /// # Panics
    /// If a process is left in the namespaces or a file in `/dev/shm` (naming them), or
    /// `mpirun` still runs 60 s after its own time limit.
    pub fn openmpi_job(
        &self,
        ranks: &[u32],
        env: &[(&str, &str)],
        program: &Path,
        args: &[&str],
        limit_secs: u32,
    ) -> Option<OpenmpiJob> {
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        if !self.openmpi_starts_jobs(ranks) {
            return None;
        }
        let total: u32 = ranks.iter().sum();
        for attempt in 1..=2 {
            // Empty: a job before this one on these nodes left its ranks' marks there.
            let started = self.scratch().join("ompi-started");
            let _ = std::fs::remove_dir_all(&started);
            std::fs::create_dir_all(&started).expect("the started-ranks directory");
            let mut cmd = self.openmpi_cmd(ranks)?;
            cmd.args(["--timeout", &limit_secs.to_string()])
                .envs(env.iter().copied())
                .args(rank_marker(&started))
                .arg(program)
                .args(args);
            let shm_before = shm_listing();
            let t0 = Instant::now();
            let outcome = run_job(cmd, Duration::from_secs(limit_secs as u64 + 60));
            let elapsed = t0.elapsed();
            let pids = started_pids(&started);
            if pids.len() as u32 == total || outcome.code() != Some(OPENMPI_TIMED_OUT) {
                self.expect_nothing_left(&pids, &shm_before, &outcome);
                return Some(OpenmpiJob { outcome, elapsed });
            }
            // mpirun's failure: what it left is its own, or ranks it never let run.
            self.kill_processes_left();
            eprintln!(
                "mpirun reached its time limit with {} of {total} ranks started (its daemons \
                 in the namespaces did not wire up){}:\n{}",
                pids.len(),
                if attempt == 1 {
                    "; trying once more"
                } else {
                    ""
                },
                outcome.text()
            );
        }
        eprintln!(
            "SKIPPED: Open MPI's mpirun did not start every rank across the namespaces, twice \
             (its own failure, not the program's): the test does not run"
        );
        None
    }

    /// Whether `mpirun` runs `hostname` on every rank of `ranks` here (one more try after a
    /// failure); says on stderr why not.
    fn openmpi_starts_jobs(&self, ranks: &[u32]) -> bool {
        let total: u32 = ranks.iter().sum();
        let mut last = String::new();
        for _ in 0..2 {
            let Some(mut cmd) = self.openmpi_cmd(ranks) else {
                return false;
            };
            cmd.args(["--timeout", &PROBE_SECS.to_string(), "hostname"]);
            let o = run_job(cmd, Duration::from_secs(PROBE_SECS as u64 + 60));
            if o.status.success() && o.stdout.lines().count() == total as usize {
                return true;
            }
            last = format!("{}\n{}", o.status, o.text());
            self.kill_processes_left();
        }
        eprintln!(
            "SKIPPED: Open MPI's mpirun cannot run even `hostname` across the namespaces here \
             (twice): the test does not run. Its last try: {last}"
        );
        false
    }

    /// Waits until no process is left in these namespaces (at most [`DRAIN`]), then
    /// checks `/dev/shm`; panics naming what is left, with the job's output.
    fn expect_nothing_left(&self, pids: &[u32], shm_before: &BTreeSet<String>, job: &Outcome) {
        let t0 = Instant::now();
        let left = loop {
            let left = self.processes_left();
            if left.is_empty() || t0.elapsed() > DRAIN {
                break left;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(
            left.is_empty(),
            "left in the namespaces {DRAIN:?} after the job ended: {left:?}\njob: {}\n{}",
            job.status,
            job.text()
        );
        let shm: Vec<String> = shm_listing()
            .difference(shm_before)
            .filter(|n| n.contains("skif") || pids.iter().any(|p| n.contains(&p.to_string())))
            .cloned()
            .collect();
        assert!(
            shm.is_empty(),
            "left in /dev/shm: {shm:?}\njob: {}\n{}",
            job.status,
            job.text()
        );
    }

    /// Kills every process in these namespaces.
    fn kill_processes_left(&self) {
        for ns in self
            .names()
            .iter()
            .map(String::as_str)
            .chain([self.switch()])
        {
            crate::netns::kill_processes_in(ns);
        }
    }

    /// `<pid> <command line>` of every process in these namespaces.
    fn processes_left(&self) -> Vec<String> {
        let mut left = Vec::new();
        for ns in self
            .names()
            .iter()
            .map(String::as_str)
            .chain([self.switch()])
        {
            let out = Command::new("ip")
                .args(["netns", "pids", ns])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            for pid in out.split_whitespace() {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
                    .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                    .unwrap_or_default();
                left.push(format!("{ns}: {pid} {}", cmdline.trim_end()));
            }
        }
        left
    }
}

/// `sh -c '<write $$ into dir/rank.$PMIX_RANK>; exec "$0" "$@"'`: put before the program,
/// it marks each rank started (its pid) and then becomes the program (same pid, status).
fn rank_marker(dir: &Path) -> [String; 3] {
    let d = dir.display();
    [
        "sh".into(),
        "-c".into(),
        format!(
            "echo $$ > '{d}'/tmp.$PMIX_RANK && mv '{d}'/tmp.$PMIX_RANK '{d}'/rank.$PMIX_RANK; \
             exec \"$0\" \"$@\""
        ),
    ]
}

/// The pids the ranks wrote into `dir` ([`rank_marker`]).
fn started_pids(dir: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| {
            let e = e.ok()?;
            e.file_name().to_str()?.strip_prefix("rank.")?;
            std::fs::read_to_string(e.path()).ok()?.trim().parse().ok()
        })
        .collect()
}

/// The names in `/dev/shm` now.
fn shm_listing() -> BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default()
}
