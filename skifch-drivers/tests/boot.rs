//! The job bootstrap (`skifch_drivers::boot`) in real jobs: `examples/boot_probe.rs` under
//! MPICH's `mpiexec.hydra` (PMI-1 over `PMI_FD` and over `PMI_PORT`, one and two "hosts"),
//! with no launcher (a 1-rank job), and its failures: an abort, a dead rank, a PMI server
//! that goes away, a malformed environment. The hydra tests skip with a message where
//! `mpiexec.hydra` is missing.
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use skifch_testing::{
    clean_env, example_exe, hydra_cmd, run_job, skifrun_cmd, ssh_stand_in, NetNodes, Outcome,
    ScratchDir,
};

/// Longer than hydra's own limit (`MPIEXEC_TIMEOUT`), which ends the ranks first.
const LIMIT: Duration = Duration::from_secs(skifch_testing::LAUNCHER_JOB_LIMIT_SECS as u64 + 60);

fn probe() -> String {
    example_exe("boot_probe").to_string_lossy().into_owned()
}

/// `mpiexec.hydra <args> boot_probe <probe args>`, or `None` (skipped) without hydra.
fn hydra(args: &[&str], probe_args: &[&str]) -> Option<Outcome> {
    let mut cmd = hydra_cmd(args)?;
    cmd.arg(probe()).args(probe_args);
    Some(run_job(cmd, LIMIT))
}

/// Every rank printed its "ok" line with the expected node count; returns each rank's
/// node and network namespace.
fn expect_ranks_ok(out: Outcome, n: u32, nodes: u32, via: &str) -> Vec<(String, String)> {
    let text = out.expect_ok("boot_probe check");
    (0..n)
        .map(|r| {
            let want = format!("boot_probe ok rank {r} of {n}, nodes {nodes}, ");
            let line = text
                .lines()
                .find(|l| l.starts_with(&want))
                .unwrap_or_else(|| panic!("no line {want:?} in:\n{text}"));
            assert!(line.ends_with(&format!("via {via}")), "{line}");
            let field = |name: &str| {
                line.split(", ")
                    .find_map(|f| f.strip_prefix(name))
                    .unwrap_or_else(|| panic!("no {name:?} in {line}"))
                    .to_owned()
            };
            (field("node "), field("netns "))
        })
        .collect()
}

#[test]
fn no_launcher_is_a_one_rank_job() {
    let mut cmd = Command::new(probe());
    clean_env(&mut cmd).args(["check", "1"]);
    expect_ranks_ok(run_job(cmd, LIMIT), 1, 1, "single");
}

#[test]
fn hydra_four_ranks_over_pmi_fd() {
    if let Some(out) = hydra(&["-n", "4"], &["check", "1"]) {
        expect_ranks_ok(out, 4, 1, "pmi1");
    }
}

/// After its last user dropped it (finalize), the bootstrap is not joined twice: a clear
/// refusal under hydra, a fresh 1-rank job without a launcher.
#[test]
fn rejoin_after_finalize_is_refused() {
    let mut cmd = Command::new(probe());
    clean_env(&mut cmd).arg("rejoin");
    let text = run_job(cmd, LIMIT).expect_ok("rejoin without launcher");
    assert!(text.contains("a new 1-rank bootstrap"), "{text}");
    if let Some(out) = hydra(&["-n", "2"], &["rejoin"]) {
        let text = out.expect_ok("rejoin under hydra");
        assert_eq!(text.matches("rejoin refused: ").count(), 2, "{text}");
        assert!(text.contains("pmi1 bootstrap was finalized"), "{text}");
    }
}

#[test]
fn hydra_one_rank() {
    if let Some(out) = hydra(&["-n", "1"], &["check", "1"]) {
        expect_ranks_ok(out, 1, 1, "pmi1");
    }
}

#[test]
fn hydra_over_pmi_port() {
    if let Some(out) = hydra(&["-pmi-port", "-n", "3"], &["check", "1"]) {
        expect_ranks_ok(out, 3, 1, "pmi1");
    }
}

/// Two host names, both run on this machine through an ssh stand-in: the ranks see two
/// nodes in `PMI_process_mapping` (round-robin, and blocks of 1 and 3).
#[test]
fn hydra_two_hosts_give_two_nodes() {
    let dir = ScratchDir::new("boot-two-hosts");
    let ssh = ssh_stand_in(dir.path(), "");
    let ssh = ssh.to_str().unwrap();
    for hosts in ["nodea,nodeb", "nodea:1,nodeb:3"] {
        let args = [
            "-launcher",
            "ssh",
            "-launcher-exec",
            ssh,
            "-hosts",
            hosts,
            "-n",
            "4",
        ];
        if let Some(out) = hydra(&args, &["check", "2"]) {
            expect_ranks_ok(out, 4, 2, "pmi1");
        }
    }
}

#[test]
fn abort_ends_the_job_with_its_code() {
    if let Some(out) = hydra(&["-n", "4"], &["abort", "2"]) {
        // (The rank's "aborts the job" line may be lost: hydra ends the job at once.)
        assert_eq!(out.code(), Some(7), "{out:?}");
    }
}

/// A rank exits without finalizing while the others wait in a barrier: the job ends (hydra
/// ends the survivors) with a failure status, well before the test's limit.
#[test]
fn dead_rank_ends_the_job() {
    let t0 = Instant::now();
    if let Some(out) = hydra(&["-n", "4"], &["die", "1"]) {
        assert!(!out.status.success(), "{out:?}");
        assert!(!out.text().contains("barrier completed"), "{out:?}");
        assert!(t0.elapsed() < LIMIT / 2, "took {:?}", t0.elapsed());
    }
}

/// `skifrun` serves PMI-1 on `PMI_FD` (one node): the probe joins through it; an abort
/// ends the job with its code; a rank that dies makes the others' PMI calls fail.
#[test]
fn skifrun_serves_pmi1() {
    let probe = example_exe("boot_probe");
    let mut cmd = skifrun_cmd(4, &[], &probe);
    cmd.args(["check", "1"]);
    expect_ranks_ok(run_job(cmd, LIMIT), 4, 1, "pmi1");
    let mut cmd = skifrun_cmd(4, &[], &probe);
    cmd.args(["abort", "2"]);
    let out = run_job(cmd, LIMIT);
    assert_eq!(out.code(), Some(7), "{out:?}");
    // A long grace period: the survivors, woken by the closed PMI connections, must get to
    // print their error before skifrun's SIGKILL, also on a machine whose load keeps them
    // off the CPUs for seconds (the default 3 s was missed once, at load 14).
    let mut cmd = skifrun_cmd(4, &["--grace", "120"], &probe);
    cmd.args(["die", "1"]);
    let out = run_job(cmd, LIMIT);
    // The survivors' errors may reach skifrun before the death: any failure status.
    assert!(!out.status.success(), "{out:?}");
    assert!(out.stderr.contains("exited with status 9"), "{out:?}");
    assert!(!out.text().contains("barrier completed"), "{out:?}");
    assert!(out.stderr.contains("closed the connection"), "{out:?}");
}

/// Slurm's `srun --mpi=pmi2` (its PMI-1 server: the PMI client's puts must fit its
/// 1024-byte line) and `srun --mpi=pmix`: the probe joins through each, as does the
/// conformance suite over the node's shm. Skipped with a message where no Slurm
/// controller answers `sinfo` (`scripts/slurm-one-node.sh start` runs one on this
/// machine: docs/CLUSTER.md).
#[test]
fn srun_serves_pmi1_and_pmix() {
    let up = Command::new("sinfo")
        .args(["-h", "-o", "%t"])
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("idle"));
    if !up {
        eprintln!("skipped: no Slurm controller with an idle node answers `sinfo` here");
        return;
    }
    let srun = |mpi: &str, n: &str| {
        let mut cmd = Command::new("srun");
        // --immediate: fail instead of queueing when the node is busy.
        cmd.args([
            mpi,
            "-n",
            n,
            "-N",
            "1",
            "--overcommit",
            "--immediate=120",
            "-t",
            "10",
        ]);
        clean_env(&mut cmd);
        cmd
    };
    for (mpi, via) in [("--mpi=pmi2", "pmi1"), ("--mpi=pmix", "pmix")] {
        let mut cmd = srun(mpi, "3");
        cmd.arg(probe()).args(["check", "1"]);
        expect_ranks_ok(run_job(cmd, LIMIT), 3, 1, via);
    }
    let mut cmd = srun("--mpi=pmi2", "4");
    cmd.arg(example_exe("conformance"));
    let text = run_job(cmd, LIMIT).expect_ok("conformance under srun");
    for r in 0..4 {
        assert!(
            text.contains(&format!("conformance: rank {r} ok (shm)")),
            "{text}"
        );
    }
}

fn wait_for(path: &Path, limit: Duration) -> Option<String> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Ok(s) = std::fs::read_to_string(path) {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// The PMI server (hydra's proxy, the ranks' parent) is killed while ranks wait in a
/// barrier: their calls fail with an error naming the command and the closed
/// connection, instead of waiting forever.
#[test]
fn server_gone_is_an_error_not_a_hang() {
    let Some(mut cmd) = hydra_cmd(&["-n", "3"]) else {
        return;
    };
    let dir = ScratchDir::new("boot-server-gone");
    cmd.arg(probe())
        .args(["server-gone", dir.path().to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut job = cmd.spawn().expect("starting mpiexec.hydra");
    let pids: Vec<(i32, i32)> = (0..3)
        .map(|r| {
            let text = wait_for(&dir.path().join(format!("pid.{r}")), LIMIT)
                .unwrap_or_else(|| panic!("rank {r} never wrote its pid"));
            let mut it = text.split_whitespace().map(|p| p.parse::<i32>().unwrap());
            (it.next().unwrap(), it.next().unwrap())
        })
        .collect();
    let kill = |sig: &str, pid: i32| {
        let _ = Command::new("kill").args([sig, &pid.to_string()]).status();
    };
    kill("-KILL", pids[0].1); // the proxy: one for all three ranks on this host
    let errors: Vec<String> = (1..3)
        .map(|r| {
            wait_for(
                &dir.path().join(format!("err.{r}")),
                Duration::from_secs(60),
            )
            .unwrap_or_default()
        })
        .collect();
    kill("-KILL", pids[0].0); // rank 0 sleeps; nobody else ends it now
    let _ = job.kill();
    let _ = job.wait();
    for (r, e) in errors.iter().enumerate() {
        assert!(
            e.contains("cmd=barrier_in") && e.contains("closed the connection"),
            "rank {}: {e:?}",
            r + 1
        );
    }
}

/// Runs the probe directly with `env` and expects it to fail joining with `words` in its
/// message.
fn expect_join_error(env: &[(&str, &str)], words: &[&str]) {
    let mut cmd = Command::new(probe());
    clean_env(&mut cmd)
        .args(["check", "1"])
        .envs(env.iter().copied());
    let out = run_job(cmd, LIMIT);
    assert_eq!(out.code(), Some(98), "{env:?}: {out:?}");
    for w in words {
        assert!(
            out.stderr.contains(w),
            "{env:?}: {w:?} not in {:?}",
            out.stderr
        );
    }
}

#[test]
fn malformed_environment_is_a_clear_error() {
    let fd = [("PMI_RANK", "0"), ("PMI_SIZE", "2")];
    expect_join_error(
        &[&fd[..], &[("PMI_FD", "0")]].concat(),
        &["PMI_FD=\"0\"", "standard input"],
    );
    expect_join_error(
        &[&fd[..], &[("PMI_FD", "977")]].concat(),
        &["PMI_FD=\"977\"", "not an open descriptor"],
    );
    expect_join_error(
        &[&fd[..], &[("PMI_FD", "x")]].concat(),
        &["PMI_FD", "not a descriptor number"],
    );
    expect_join_error(&[("PMI_FD", "5")], &["PMI_RANK is not set"]);
    expect_join_error(
        &[("PMI_FD", "5"), ("PMI_RANK", "a"), ("PMI_SIZE", "2")],
        &["PMI_RANK=\"a\""],
    );
    expect_join_error(
        &[("PMI_PORT", "127.0.0.1:1"), ("PMI_ID", "0")],
        &["PMI_PORT=\"127.0.0.1:1\"", "cannot connect"],
    );
    expect_join_error(&[("PMI_PORT", "no-port-here")], &["PMI_ID is not set"]);
    expect_join_error(
        &[("PMI_PORT", "no-port-here"), ("PMI_ID", "0")],
        &["PMI_PORT=\"no-port-here\""],
    );
    expect_join_error(&[("SKIFCH_SIZE", "2")], &["no PMI_FD", "unsupported"]);
}

// ---- Ranks on several "nodes": network namespaces (skifch_testing::NetNodes) ----

/// Each rank runs in its node's namespace and `node_of` names one node per namespace, the
/// ranks placed as the launcher placed them: 2 namespaces × 2 ranks, 4 × 1, and the
/// uneven layouts of a real cluster (issue 21) — 2+1 and 1+2 ranks (`host:N` slots), 3+1
/// through a hosts file, 4 ranks dealt round-robin to 2 nodes (hydra's mapping
/// `(vector,(0,2,1))`: node 0 holds ranks 0 and 2), 1+2+1 on 3 — under hydra, and 2+1
/// under `skifrun --hosts`.
#[test]
fn namespaces_are_nodes() {
    use skifch_testing::Layout;
    let layouts: [(usize, Layout, bool); 7] = [
        (2, Layout::Slots(&[2, 2]), true),
        (4, Layout::Slots(&[1, 1, 1, 1]), true),
        (2, Layout::Slots(&[2, 1]), true),
        (2, Layout::Slots(&[1, 2]), false),
        (2, Layout::File(&[3, 1]), true),
        (2, Layout::RoundRobin(4), true),
        (3, Layout::Slots(&[1, 2, 1]), true),
    ];
    for (count, layout, by_hydra) in layouts {
        let Some(nodes) = NetNodes::create(count) else {
            return;
        };
        let cmd = if by_hydra {
            nodes.hydra_cmd_in(layout)
        } else {
            nodes.skifrun_cmd_in(layout)
        };
        let Some(mut cmd) = cmd else {
            return;
        };
        cmd.arg(probe()).args(["check", &count.to_string()]);
        let seen = expect_ranks_ok(run_job(cmd, LIMIT), layout.size(), count as u32, "pmi1");
        let mine = std::fs::read_link("/proc/self/ns/net").unwrap();
        let want = layout.node_of(count);
        for (rank, &node) in want.iter().enumerate() {
            let first = want.iter().position(|&n| n == node).unwrap();
            assert_eq!(seen[rank].0, node.to_string(), "{layout:?}: {seen:?}");
            assert_eq!(seen[rank].1, seen[first].1, "{layout:?}: {seen:?}");
            assert_ne!(seen[rank].1, mine.display().to_string(), "{seen:?}");
        }
        let mut spaces: Vec<&String> = seen.iter().map(|s| &s.1).collect();
        spaces.sort();
        spaces.dedup();
        assert_eq!(spaces.len(), count, "{layout:?}: {seen:?}");
    }
}

/// Starts `boot_probe server-gone` on 2 namespaces × 2 ranks (rank 0 never enters the
/// barrier the others wait in) and returns the job, its files and each rank's (pid,
/// parent pid).
fn stalled_job(
    nodes: &NetNodes,
    env: &[(&str, &str)],
) -> Option<(std::process::Child, Vec<(i32, i32)>)> {
    stalled_job_by(nodes.hydra_cmd(&[2, 2])?, nodes, env)
}

/// [`stalled_job`] started by `launcher` (hydra or `skifrun --hosts` in the switch).
fn stalled_job_by(
    mut cmd: Command,
    nodes: &NetNodes,
    env: &[(&str, &str)],
) -> Option<(std::process::Child, Vec<(i32, i32)>)> {
    let dir = nodes.scratch();
    cmd.arg(probe())
        .args(["server-gone", dir.to_str().unwrap()])
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let job = cmd.spawn().expect("starting the launcher");
    let pids = (0..4)
        .map(|r| {
            let text = wait_for(&dir.join(format!("pid.{r}")), LIMIT)
                .unwrap_or_else(|| panic!("rank {r} never wrote its pid"));
            let mut it = text.split_whitespace().map(|p| p.parse::<i32>().unwrap());
            (it.next().unwrap(), it.next().unwrap())
        })
        .collect();
    Some((job, pids))
}

/// Waits (at most `limit`) for the job to end; `None` if it still runs.
fn wait_end(job: &mut std::process::Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some(s) = job.try_wait().unwrap() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// No process of the job is left in any node's namespace.
fn expect_nothing_left(nodes: &NetNodes) {
    for name in nodes.names() {
        let t0 = Instant::now();
        loop {
            let out = Command::new("ip")
                .args(["netns", "pids", name])
                .output()
                .unwrap();
            if out.stdout.is_empty() {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "processes left in {name}: {:?}",
                String::from_utf8_lossy(&out.stdout)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A rank on the other node is killed while the others wait in a barrier: the launcher
/// ends the job within seconds, with a failure status, leaving nothing behind.
#[test]
fn killed_rank_on_the_other_node_ends_the_job() {
    let Some(nodes) = NetNodes::create(2) else {
        return;
    };
    let Some((mut job, pids)) = stalled_job(&nodes, &[]) else {
        return;
    };
    let _ = Command::new("kill")
        .args(["-KILL", &pids[3].0.to_string()])
        .status();
    let status = wait_end(&mut job, Duration::from_secs(60));
    let _ = job.kill();
    assert!(
        status.is_some_and(|s| !s.success()),
        "the job did not end with a failure: {status:?}"
    );
    expect_nothing_left(&nodes);
}

/// The PMI server of the other node (its hydra proxy) dies: the ranks it served get an
/// error naming the barrier and the closed connection, and the job ends.
#[test]
fn server_gone_on_the_other_node_is_an_error() {
    let Some(nodes) = NetNodes::create(2) else {
        return;
    };
    let Some((mut job, pids)) = stalled_job(&nodes, &[]) else {
        return;
    };
    let _ = Command::new("kill")
        .args(["-KILL", &pids[2].1.to_string()])
        .status();
    let dir = nodes.scratch();
    for r in [2, 3] {
        let e =
            wait_for(&dir.join(format!("err.{r}")), Duration::from_secs(60)).unwrap_or_default();
        assert!(
            e.contains("cmd=barrier_in") && e.contains("closed the connection"),
            "rank {r}: {e:?}"
        );
    }
    let status = wait_end(&mut job, Duration::from_secs(60));
    let _ = job.kill();
    assert!(status.is_some_and(|s| !s.success()), "{status:?}");
    expect_nothing_left(&nodes);
}

/// The other node's link goes down while ranks wait in a barrier: nothing ends the job
/// (the launcher's TCP connections merely stall), so `SKIFCH_BOOT_TIMEOUT` bounds the
/// wait and the ranks of this node get an error instead of hanging.
#[test]
fn link_down_is_bounded_by_the_boot_timeout() {
    let Some(nodes) = NetNodes::create(2) else {
        return;
    };
    let Some((mut job, _)) = stalled_job(&nodes, &[("SKIFCH_BOOT_TIMEOUT", "5")]) else {
        return;
    };
    nodes.set_link(1, false);
    let e = wait_for(&nodes.scratch().join("err.1"), Duration::from_secs(90)).unwrap_or_default();
    let _ = job.kill();
    let _ = job.wait();
    assert!(
        e.contains("cmd=barrier_in") && e.contains("SKIFCH_BOOT_TIMEOUT"),
        "rank 1: {e:?}"
    );
}

// ---- skifrun --hosts (through mpiexec.hydra) ----

/// `skifrun --hosts` over 2 namespaces × 2 ranks: the ranks join through hydra's PMI-1
/// and see two nodes; then a rank on the other node is killed: the job ends with a
/// failure and leaves nothing behind.
#[test]
fn skifrun_hosts_over_namespaces() {
    let Some(nodes) = NetNodes::create(2) else {
        return;
    };
    let Some(mut cmd) = nodes.skifrun_cmd(&[2, 2]) else {
        return;
    };
    cmd.arg(probe()).args(["check", "2"]);
    let seen = expect_ranks_ok(run_job(cmd, LIMIT), 4, 2, "pmi1");
    assert_eq!(seen[0].1, seen[1].1, "{seen:?}");
    assert_ne!(seen[1].1, seen[2].1, "{seen:?}");
    let (mut job, pids) = stalled_job_by(nodes.skifrun_cmd(&[2, 2]).unwrap(), &nodes, &[]).unwrap();
    let _ = Command::new("kill")
        .args(["-KILL", &pids[3].0.to_string()])
        .status();
    let status = wait_end(&mut job, Duration::from_secs(60));
    let _ = job.kill();
    assert!(status.is_some_and(|s| !s.success()), "{status:?}");
    expect_nothing_left(&nodes);
}

/// `skifrun --hosts` with two host names on this machine (an ssh stand-in), `--ppn`, and
/// the options it refuses.
#[test]
fn skifrun_hosts_on_this_machine() {
    if skifch_testing::mpiexec_hydra().is_none() {
        return;
    }
    let dir = ScratchDir::new("skifrun-hosts");
    let ssh = ssh_stand_in(dir.path(), "");
    let mut cmd = Command::new(skifch_testing::skifrun_exe());
    clean_env(&mut cmd)
        .args(["--hosts", "nodea:3,nodeb:1", "--launcher-exec"])
        .arg(&ssh)
        .args(["-n", "4", "--timeout", "150", "--"])
        .arg(probe())
        .args(["check", "2"]);
    expect_ranks_ok(run_job(cmd, LIMIT), 4, 2, "pmi1");
    // --ppn N (hydra's -ppn, both spellings): N consecutive ranks per host, wrapping
    // around, whatever the hosts' counts.
    for (ppn, n, list, want) in [
        (
            ["--ppn", "2"],
            "4",
            "nodea,nodeb",
            &["0", "0", "1", "1"][..],
        ),
        (["-ppn", "1"], "4", "nodea:3,nodeb:1", &["0", "1", "0", "1"]),
        (
            ["--ppn", "2"],
            "6",
            "nodea,nodeb",
            &["0", "0", "1", "1", "0", "0"],
        ),
    ] {
        let mut cmd = Command::new(skifch_testing::skifrun_exe());
        clean_env(&mut cmd)
            .args(["--hosts", list, "--launcher-exec"])
            .arg(&ssh)
            .args(ppn)
            .args(["-n", n, "--timeout", "150", "--"])
            .arg(probe())
            .args(["check", "2"]);
        let seen = expect_ranks_ok(run_job(cmd, LIMIT), n.parse().unwrap(), 2, "pmi1");
        let nodes: Vec<&str> = seen.iter().map(|(node, _)| node.as_str()).collect();
        assert_eq!(nodes, want, "{ppn:?} on {list}");
    }
    for bad in [
        &["--hosts", "", "-n", "2"][..],
        &["--hosts", "a:0", "-n", "2"],
        &["--hosts", "a", "--driver", "fpga-model", "-n", "2"],
        &["--iface", "eth0", "-n", "2"],
        &["--hosts", "a", "--ppn", "0", "-n", "2"],
        &["-ppn", "2", "-n", "2"],
    ] {
        let mut cmd = Command::new(skifch_testing::skifrun_exe());
        clean_env(&mut cmd).args(bad).args(["--", "true"]);
        let out = run_job(cmd, LIMIT);
        assert_eq!(out.code(), Some(2), "{bad:?}: {out:?}");
    }
}
