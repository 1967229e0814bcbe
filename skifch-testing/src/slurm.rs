//! Slurm across the "nodes" of a [`NetNodes`] (issue 21): `slurmctld` in the switch
//! namespace, one `slurmd` per node namespace (`slurmd -N n<i>`, `NodeAddr` the node's
//! address), from a `slurm.conf` of their own in the nodes' scratch directory
//! (`SLURM_CONF`). Nothing of the machine's own Slurm (`/etc/slurm`, munge) is read or
//! touched: authentication is `auth/none` and `cred/none`, right for a test only.
//!
//! `slurmd` enters its node's network namespace alone (`nsenter --net`): `ip netns exec`
//! also remounts `/sys`, without the cgroup file system that `slurmd` 22.05 wants even
//! with `proctrack/linuxproc`. The daemons end on drop (before the namespaces, whose drop
//! kills whatever is left in them: the jobs' `slurmstepd`s).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::NetNodes;

/// A Slurm cluster of one controller and a `slurmd` per node of a [`NetNodes`].
pub struct Slurm<'a> {
    nodes: &'a NetNodes,
    dir: PathBuf,
    conf: PathBuf,
}

/// `name` on `PATH` or in `/usr/sbin` (where Debian puts the daemons).
fn program(name: &str) -> Option<PathBuf> {
    crate::which(name).or_else(|| {
        let p = Path::new("/usr/sbin").join(name);
        p.is_file().then_some(p)
    })
}

/// Runs `cmd` (a daemon that forks into the background); panics with `what`'s log.
fn start(mut cmd: Command, what: &str, log: &Path) {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("starting {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} did not start: {}{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

impl NetNodes {
    /// Starts Slurm on these nodes (a controller in the switch namespace, a `slurmd` per
    /// node, a private `slurm.conf`, no authentication: a test cluster) and waits, at most 90 s,
    /// until every node is idle. `None`, said on stderr, where Slurm (`slurmctld`, `slurmd`,
    /// `srun`, `sinfo`) or `nsenter` is not installed.
    ///
    /// # Panics
    /// If a daemon does not start or the nodes do not become idle (with the daemons' logs).
    pub fn slurm(&self) -> Option<Slurm<'_>> {
        let mut progs = Vec::new();
        for name in ["slurmctld", "slurmd", "srun", "sinfo", "nsenter"] {
            let Some(p) = program(name) else {
                eprintln!(
                    "SKIPPED: {name} is not installed (Debian: slurmctld, slurmd, slurm-client; \
                     util-linux): the tests of Slurm across namespaces do not run"
                );
                return None;
            };
            progs.push(p);
        }
        let dir = self.scratch().join("slurm");
        let names: Vec<String> = (0..self.names().len()).map(|i| format!("n{i}")).collect();
        for n in &names {
            std::fs::create_dir_all(dir.join("spool").join(n)).expect("slurmd spool directory");
        }
        std::fs::create_dir_all(dir.join("state")).expect("slurmctld state directory");
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("host name");
        let host = host.trim().split('.').next().unwrap_or("localhost");
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let d = dir.display();
        let mut conf = format!(
            "# Written by skifch-testing (NetNodes::slurm): a test cluster, no authentication.\n\
             ClusterName=skn\nSlurmctldHost={host}(10.10.0.254)\nSlurmUser=root\n\
             SlurmdUser=root\nAuthType=auth/none\nCredType=cred/none\nMpiDefault=none\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\nReturnToService=2\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd-%n.pid\n\
             SlurmdSpoolDir={d}/spool/%n\nStateSaveLocation={d}/state\n\
             SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd-%n.log\n\
             SchedulerType=sched/builtin\nSelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\n"
        );
        for (i, n) in names.iter().enumerate() {
            conf += &format!(
                "NodeName={n} NodeHostname={n} NodeAddr={} CPUs={cpus} State=UNKNOWN\n",
                self.addr(i)
            );
        }
        conf += "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP \
                 OverSubscribe=FORCE:8\n";
        let path = dir.join("slurm.conf");
        std::fs::write(&path, conf).expect("slurm.conf");
        let slurm = Slurm {
            nodes: self,
            dir: dir.clone(),
            conf: path.clone(),
        };
        let mut ctl = Command::new("ip");
        ctl.args(["netns", "exec", self.switch()])
            .arg(&progs[0])
            .arg("-c")
            .arg("-f")
            .arg(&path);
        start(ctl, "slurmctld", &dir.join("slurmctld.log"));
        for (i, n) in names.iter().enumerate() {
            let mut sd = Command::new(&progs[4]);
            sd.arg(format!("--net=/run/netns/{}", self.names()[i]))
                .arg(&progs[1])
                .arg("-f")
                .arg(&path)
                .args(["-N", n]);
            start(
                sd,
                &format!("slurmd {n}"),
                &dir.join(format!("slurmd-{n}.log")),
            );
        }
        slurm.wait_idle(names.len(), Duration::from_secs(90));
        Some(slurm)
    }
}

impl Slurm<'_> {
    /// `cmd` run in the switch namespace with this cluster's `SLURM_CONF` and a clean job
    /// environment.
    fn in_switch(&self, prog: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", self.nodes.switch(), prog])
            .env("SLURM_CONF", &self.conf);
        crate::clean_env(&mut cmd);
        cmd.env(crate::netns::OFI_DOMAIN.0, crate::netns::OFI_DOMAIN.1);
        cmd
    }

    fn wait_idle(&self, n: usize, limit: Duration) {
        let t0 = Instant::now();
        let mut last = String::new();
        while t0.elapsed() < limit {
            let out = self
                .in_switch("sinfo")
                .args(["-h", "-N", "-o", "%t"])
                .output();
            if let Ok(o) = out {
                last = String::from_utf8_lossy(&o.stdout).into_owned();
                if last.lines().filter(|l| l.trim() == "idle").count() == n {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!(
            "Slurm across namespaces: the nodes are not idle after {limit:?} (sinfo: {last:?})\n{}",
            self.logs()
        );
    }

    /// The daemons' logs, for failure messages.
    pub fn logs(&self) -> String {
        let mut all = String::new();
        let mut files: Vec<_> = std::fs::read_dir(&self.dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.sort();
        for f in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "log"))
        {
            all += &format!(
                "== {}\n{}",
                f.display(),
                std::fs::read_to_string(f).unwrap_or_default()
            );
        }
        all
    }

    /// `srun <args>` run in the switch namespace (reaching every node); add the program
    /// and its arguments.
    pub fn srun_cmd(&self, args: &[&str]) -> Command {
        let mut cmd = self.in_switch("srun");
        cmd.args(args);
        cmd
    }
}

impl Drop for Slurm<'_> {
    fn drop(&mut self) {
        let pids = std::fs::read_dir(&self.dir)
            .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
            .unwrap_or_default();
        for f in pids
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "pid"))
        {
            let pid = std::fs::read_to_string(f)
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok());
            // Only our daemon: a pid file outlives its process, and pids are reused.
            let ours = pid.is_some_and(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm"))
                    .is_ok_and(|c| c.starts_with("slurm"))
            });
            if let (Some(pid), true) = (pid, ours) {
                let _ = Command::new("kill")
                    .arg(pid.to_string())
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}
