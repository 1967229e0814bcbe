//! Several "nodes" on one machine (issue 21): Linux network namespaces, each with an
//! `eth0` joined by a veth pair to a bridge, with the real kernel network stack between
//! them. The bridge lives in a namespace of its own (the "switch", which also holds the
//! launcher: `mpiexec.hydra` runs there, reaching every node's proxy), so nothing is
//! added to the machine's own namespace and concurrent tests cannot collide: every
//! namespace of one [`NetNodes`] uses the same addresses, `10.10.0.<i+1>/24` for node
//! `i` and `10.10.0.254` for the switch.
//!
//! Everything is torn down on drop (also when a test panics): the processes left in the
//! namespaces are killed, then the namespaces deleted (their interfaces go with them).
//! Namespaces that a killed test process left behind are swept at the next
//! [`NetNodes::create`]. Needs `ip` (iproute2) and `CAP_SYS_ADMIN` + `CAP_NET_ADMIN`
//! (root); without them `create` returns `None` after saying why on stderr.
//!
//! ```no_run
//! use skifch_testing::NetNodes;
//! let Some(nodes) = NetNodes::create(2) else { return }; // skipped: no namespaces here
//! let mut cmd = nodes.hydra_cmd(&[2, 2]).unwrap();        // 2 nodes × 2 ranks
//! cmd.arg("./prog");
//! assert!(cmd.status().unwrap().success());
//! ```

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::ScratchDir;

/// Prefix of every namespace this harness creates: `skn-<pid>-<k>-<node|sw>`.
const PREFIX: &str = "skn-";

/// The variable and value that point the fabric driver (`skifch_drivers::ofi`) at the
/// nodes' interface: every job command of [`NetNodes`] and [`crate::Slurm`] sets it.
pub const OFI_DOMAIN: (&str, &str) = ("SKIFCH_OFI_DOMAIN", "eth0");

/// 2–4 (or more, up to 250) network namespaces joined by a bridge; see the module docs.
pub struct NetNodes {
    nodes: Vec<String>,
    switch: String,
    scratch: ScratchDir,
}

/// Runs `ip <args>`; `Err` with its stderr when it fails.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Kills every process in namespace `ns` and deletes it.
fn remove_namespace(ns: &str) {
    kill_processes_in(ns);
    let _ = ip(&["netns", "del", ns]);
}

/// Kills every process in namespace `ns` (SIGKILL, until none is left or for about 1 s).
pub(crate) fn kill_processes_in(ns: &str) {
    for _ in 0..50 {
        let pids = Command::new("ip")
            .args(["netns", "pids", ns])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let pids: Vec<&str> = pids.split_whitespace().collect();
        if pids.is_empty() {
            break;
        }
        let _ = Command::new("kill")
            .arg("-KILL")
            .args(&pids)
            .stderr(Stdio::null())
            .status();
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Deletes the namespaces of test processes that no longer exist.
fn sweep_leftovers() {
    let list = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let Some(pid) = name.strip_prefix(PREFIX).and_then(|r| r.split('-').next()) else {
            continue;
        };
        if !std::path::Path::new("/proc").join(pid).exists() {
            remove_namespace(name);
        }
    }
}

impl NetNodes {
    /// Creates `n` nodes (1..=250), or returns `None` after saying on stderr why network
    /// namespaces cannot be made here (not root, no `ip`, a kernel without veth or bridge).
    ///
    /// # Panics
    /// If creation fails half-way for another reason (what was made is removed first).
    pub fn create(n: usize) -> Option<NetNodes> {
        assert!(
            (1..=250).contains(&n),
            "NetNodes::create({n}): 1 to 250 nodes"
        );
        static NEXT: AtomicU32 = AtomicU32::new(0);
        sweep_leftovers();
        let base = format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let switch = format!("{base}-sw");
        if let Err(e) = ip(&["netns", "add", &switch]) {
            eprintln!(
                "SKIPPED: cannot create network namespaces here (needs root or CAP_SYS_ADMIN + \
                 CAP_NET_ADMIN, and iproute2): {e}"
            );
            return None;
        }
        let mut made = NetNodes {
            nodes: Vec::new(),
            switch,
            scratch: ScratchDir::new(&format!("{base}-files")),
        };
        if let Err(e) = made.build(&base, n) {
            drop(made);
            if e.contains("not supported") || e.contains("Unknown device type") {
                eprintln!("SKIPPED: this kernel cannot make the veth pairs or bridge of the namespace nodes: {e}");
                return None;
            }
            panic!("creating {n} namespace nodes: {e}");
        }
        Some(made)
    }

    fn build(&mut self, base: &str, n: usize) -> Result<(), String> {
        let sw = self.switch.clone();
        ip(&["-n", &sw, "link", "set", "lo", "up"])?;
        ip(&["-n", &sw, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &sw, "addr", "add", "10.10.0.254/24", "dev", "br0"])?;
        ip(&["-n", &sw, "link", "set", "br0", "up"])?;
        for i in 0..n {
            let node = format!("{base}-n{i}");
            ip(&["netns", "add", &node])?;
            self.nodes.push(node.clone());
            let port = format!("v{i}");
            ip(&["-n", &node, "link", "set", "lo", "up"])?;
            ip(&[
                "link", "add", "name", "eth0", "netns", &node, "type", "veth", "peer", "name",
                &port, "netns", &sw,
            ])?;
            ip(&["-n", &sw, "link", "set", &port, "master", "br0"])?;
            ip(&["-n", &sw, "link", "set", &port, "up"])?;
            ip(&[
                "-n",
                &node,
                "addr",
                "add",
                &format!("{}/24", self.addr(i)),
                "dev",
                "eth0",
            ])?;
            ip(&["-n", &node, "link", "set", "eth0", "up"])?;
        }
        Ok(())
    }

    /// The nodes' namespace names (what `ip netns exec` and hydra's `-hosts` take).
    pub fn names(&self) -> &[String] {
        &self.nodes
    }

    /// Node `i`'s address on the bridge (its `eth0`).
    pub fn addr(&self, i: usize) -> String {
        format!("10.10.0.{}", i + 1)
    }

    /// The switch namespace (the bridge `br0`, address `10.10.0.254`): where a launcher
    /// that must reach every node runs.
    pub fn switch(&self) -> &str {
        &self.switch
    }

    /// `ip netns exec <node i> <program>`: a command that runs in node `i`.
    pub fn exec_in(&self, i: usize, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.nodes[i], program]);
        cmd
    }

    /// Takes node `i`'s link down (`up = false`) or back up: its traffic stops, as when a
    /// cable is pulled.
    ///
    /// # Panics
    /// If `ip` fails.
    pub fn set_link(&self, i: usize, up: bool) {
        let state = if up { "up" } else { "down" };
        ip(&["-n", &self.nodes[i], "link", "set", "eth0", state]).unwrap_or_else(|e| panic!("{e}"));
    }

    /// `mpiexec.hydra` run in the switch namespace, starting `ranks[i]` ranks on node `i`
    /// through an ssh stand-in that enters the node's namespace (hydra's
    /// `-launcher ssh -launcher-exec`, `-hosts <node>:<ranks>,…`, `-iface br0`); add the
    /// program and its arguments. `None` (skipped, said on stderr) without hydra.
    pub fn hydra_cmd(&self, ranks: &[u32]) -> Option<Command> {
        self.hydra_cmd_in(Layout::Slots(ranks))
    }

    /// [`NetNodes::hydra_cmd`] with the ranks placed as `layout` says (`-hosts` or `-f`).
    pub fn hydra_cmd_in(&self, layout: Layout<'_>) -> Option<Command> {
        let ssh = crate::ssh_stand_in(self.scratch.path(), "ip netns exec {host}");
        let mut inner = crate::hydra_cmd(&["-iface", "br0", "-launcher", "ssh", "-launcher-exec"])?;
        inner
            .arg(&ssh)
            .args(self.layout_args(layout, "-hosts", "-f"));
        Some(self.in_switch(inner))
    }

    /// `skifrun --hosts <node>:<ranks>,… --launcher-exec <ssh stand-in> --iface br0 -n N`
    /// run in the switch namespace (through `mpiexec.hydra`: [`crate::hydra_cmd`]'s
    /// limit as `--timeout`); add the program and its arguments. `None` (skipped, said on
    /// stderr) without hydra.
    pub fn skifrun_cmd(&self, ranks: &[u32]) -> Option<Command> {
        self.skifrun_cmd_in(Layout::Slots(ranks))
    }

    /// [`NetNodes::skifrun_cmd`] with the ranks placed as `layout` says (`--hosts` or
    /// `--hostfile`).
    pub fn skifrun_cmd_in(&self, layout: Layout<'_>) -> Option<Command> {
        crate::mpiexec_hydra()?;
        let ssh = crate::ssh_stand_in(self.scratch.path(), "ip netns exec {host}");
        let mut inner = Command::new(crate::skifrun_exe());
        crate::clean_env(&mut inner);
        inner
            .arg("--launcher-exec")
            .arg(&ssh)
            .args(["--iface", "br0", "--timeout"])
            .arg(crate::LAUNCHER_JOB_LIMIT_SECS.to_string())
            .args(self.layout_args(layout, "--hosts", "--hostfile"))
            .arg("--");
        Some(self.in_switch(inner))
    }

    /// The launcher's arguments for `layout`: `<list> <hosts>` or `<file> <hosts file>`,
    /// then `-n <ranks>`.
    fn layout_args(&self, layout: Layout<'_>, list: &str, file: &str) -> Vec<String> {
        let (opt, hosts) = match layout {
            Layout::Slots(ranks) => (list, self.host_list(ranks)),
            Layout::File(ranks) => {
                let path = self.scratch.path().join("hosts");
                let lines = self.host_slots(ranks).join("\n");
                let text = format!("# the test's nodes, ranks per node\n{lines}\n");
                std::fs::write(&path, text).expect("writing the hosts file");
                (file, path.display().to_string())
            }
            Layout::RoundRobin(_) => (list, self.nodes.join(",")),
        };
        vec![opt.into(), hosts, "-n".into(), layout.size().to_string()]
    }

    /// Open MPI's `mpirun` (a PMIx server) run in the switch namespace, starting
    /// `ranks[i]` ranks on node `i`: its daemons (`orted`) are started through an ssh
    /// stand-in (`--mca plm_rsh_agent`) that enters the node's network namespace and a UTS
    /// namespace of its own whose host name is the node's, and talk over the bridge
    /// (`--mca oob_tcp_if_include 10.10.0.0/24`), each to `mpirun` directly (no tree
    /// spawn, `routed direct`); add the program and its arguments.
    /// `None` (skipped, said on stderr) without Open MPI.
    ///
    /// Daemons that shared the machine's host name failed now and then to start the job:
    /// one of them never reported to `mpirun`, which waited until its time limit (3 of 25
    /// jobs at load 13-15; 0 of 80 beside them with a host name per node).
    pub fn openmpi_cmd(&self, ranks: &[u32]) -> Option<Command> {
        crate::mpirun_openmpi()?;
        let hosts = self.host_list(ranks);
        let total: u32 = ranks.iter().sum();
        // A directory of its own: hydra's stand-in (`hydra_cmd`) has the same file name.
        let agent = self.scratch.path().join("ompi-agent");
        std::fs::create_dir_all(&agent).expect("the Open MPI agent directory");
        let ssh = crate::ssh_stand_in(
            &agent,
            "ip netns exec {host} unshare --uts sh -c 'hostname \"$0\" && exec \"$@\"' {host}",
        );
        let session = self.scratch.path().join("ompi");
        std::fs::create_dir_all(&session).expect("the Open MPI session directory");
        let inner = crate::openmpi_cmd(
            &[
                "--host",
                &hosts,
                "--mca",
                "plm_rsh_agent",
                ssh.to_str().expect("a UTF-8 scratch path"),
                "--mca",
                "oob_tcp_if_include",
                "10.10.0.0/24",
                // Every daemon talks to mpirun only: daemons of "hosts" that share one
                // host name failed now and then to reach each other (tree spawn, radix).
                "--mca",
                "plm_rsh_no_tree_spawn",
                "1",
                "--mca",
                "routed",
                "direct",
                "-n",
                &total.to_string(),
            ],
            &session,
        )?;
        Some(self.in_switch(inner))
    }

    /// `<node>:<ranks>,…` for hydra's `-hosts` and Open MPI's `--host`.
    fn host_list(&self, ranks: &[u32]) -> String {
        self.host_slots(ranks).join(",")
    }

    /// `<node>:<ranks>` for each node.
    fn host_slots(&self, ranks: &[u32]) -> Vec<String> {
        assert_eq!(ranks.len(), self.nodes.len(), "one rank count per node");
        self.nodes
            .iter()
            .zip(ranks)
            .map(|(n, r)| format!("{n}:{r}"))
            .collect()
    }

    /// `inner` (its program, arguments and environment) run in the switch namespace, with
    /// the nodes' interface as the fabric driver's ([`OFI_DOMAIN`]) unless `inner` names
    /// another.
    fn in_switch(&self, inner: Command) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.switch])
            .arg(inner.get_program())
            .args(inner.get_args());
        let mut domain = false;
        for (k, v) in inner.get_envs() {
            match v {
                Some(v) => {
                    domain |= k == OFI_DOMAIN.0;
                    cmd.env(k, v)
                }
                None => cmd.env_remove(k),
            };
        }
        if !domain {
            cmd.env(OFI_DOMAIN.0, OFI_DOMAIN.1);
        }
        cmd
    }

    /// A directory for the test's files, removed with the nodes.
    pub fn scratch(&self) -> PathBuf {
        self.scratch.path().to_path_buf()
    }
}

/// How [`NetNodes::hydra_cmd_in`] and [`NetNodes::skifrun_cmd_in`] place a job's ranks.
/// Each puts them in job-rank order: [`Layout::node_of`].
#[derive(Clone, Copy, Debug)]
pub enum Layout<'a> {
    /// `ranks[i]` ranks on node `i`, in blocks: `-hosts <node>:<ranks>,…` (hydra's
    /// `host:N` slots; `skifrun --hosts`).
    Slots(&'a [u32]),
    /// The same through a hosts file of `<node>:<ranks>` lines (hydra's `-f`, `skifrun
    /// --hostfile`).
    File(&'a [u32]),
    /// `n` ranks dealt to the nodes in turn: `-hosts <node>,…` (one slot each; the
    /// launcher wraps around).
    RoundRobin(u32),
}

impl Layout<'_> {
    /// The job's rank count.
    pub fn size(&self) -> u32 {
        match self {
            Layout::Slots(r) | Layout::File(r) => r.iter().sum(),
            Layout::RoundRobin(n) => *n,
        }
    }

    /// The node of each rank, by rank, on `nodes` nodes.
    pub fn node_of(&self, nodes: usize) -> Vec<usize> {
        match self {
            Layout::Slots(r) | Layout::File(r) => r
                .iter()
                .enumerate()
                .flat_map(|(i, &k)| std::iter::repeat_n(i, k as usize))
                .collect(),
            Layout::RoundRobin(n) => (0..*n as usize).map(|r| r % nodes).collect(),
        }
    }
}

impl Drop for NetNodes {
    fn drop(&mut self) {
        for ns in self.nodes.iter().chain(std::iter::once(&self.switch)) {
            remove_namespace(ns);
        }
    }
}
