//! The launcher end to end: real multi-process jobs through `skifrun`, with the test
//! programs of `examples/launch_probe.rs` and `examples/self_launch_probe.rs`.
//! Every run has a timeout; every test checks that nothing is left in `/dev/shm`.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use skifch_testing::{example_exe, skifrun_exe};

/// Exit status of a probe rank that saw the expected PeerLost.
const SAW_PEER_LOST: i32 = 42;

fn probe() -> PathBuf {
    example_exe("launch_probe")
}

/// Names in /dev/shm that look like ours.
fn shm_entries() -> BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.to_lowercase().contains("skifch"))
                .collect()
        })
        .unwrap_or_default()
}

/// Fails the test if a `skifch` entry appeared in /dev/shm while it ran.
struct NoLeftovers(BTreeSet<String>);

impl NoLeftovers {
    fn new() -> Self {
        NoLeftovers(shm_entries())
    }
}

impl Drop for NoLeftovers {
    fn drop(&mut self) {
        let new: Vec<_> = shm_entries().difference(&self.0).cloned().collect();
        if !std::thread::panicking() {
            assert!(new.is_empty(), "left in /dev/shm: {new:?}");
        }
    }
}

fn skifrun(args: &[&str], probe_args: &[&str]) -> Command {
    let mut c = Command::new(skifrun_exe());
    c.args(args).arg("--").arg(probe()).args(probe_args);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// Waits for `child` up to `limit`; on timeout kills it (its ranks die with it) and fails.
fn wait_limit(mut child: Child, limit: Duration) -> (Output, Duration) {
    let t0 = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return (child.wait_with_output().unwrap(), t0.elapsed());
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "skifrun did not finish within {limit:?}; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs a job to its end: (exit status, stderr, elapsed).
fn run(args: &[&str], probe_args: &[&str], limit: Duration) -> (i32, String, Duration) {
    let (out, dt) = wait_limit(skifrun(args, probe_args).spawn().unwrap(), limit);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("skifrun itself died: {:?}\n{stderr}", out.status));
    (code, stderr, dt)
}

const LIMIT: Duration = Duration::from_secs(10);

#[test]
fn four_ranks_all_to_all() {
    let _shm = NoLeftovers::new();
    let (out, _) = wait_limit(
        skifrun(&["-n", "4"], &["alltoall", "3"]).spawn().unwrap(),
        LIMIT,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for r in 0..4 {
        assert!(
            stdout.contains(&format!("rank {r}: received 9 messages")),
            "{stdout}"
        );
    }
}

#[test]
fn exit_status_of_the_first_failure() {
    let _shm = NoLeftovers::new();
    // Rank 2 exits 7; the others see PeerLost and exit 42 after it: the job's status is 7.
    let (code, err, _) = run(&["-n", "4"], &["exit", "2", "7"], LIMIT);
    assert_eq!(code, 7, "{err}");
    assert!(err.contains("skifrun: rank 2 (pid "), "{err}");
    assert!(err.contains(") exited with status 7"), "{err}");
    assert_eq!(err.matches("exited with status 42").count(), 3, "{err}");
    // A rank killed by a signal: 128 + 9.
    let (code, err, _) = run(&["-n", "3"], &["raise", "1", "9"], LIMIT);
    assert_eq!(code, 128 + 9, "{err}");
    assert!(
        err.contains(") was killed by signal 9 (SIGKILL)") && err.contains("rank 1 (pid "),
        "{err}"
    );
    // Exiting 0 without finalizing is a failure too (status 1), and peers are told.
    let (code, err, _) = run(&["-n", "2"], &["exit", "0", "0"], LIMIT);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("rank 0 (pid ") && err.contains("without finalizing"),
        "{err}"
    );
    assert!(
        err.contains("rank 1 (pid ") && err.contains("exited with status 42"),
        "{err}"
    );
}

#[test]
fn killed_rank_wakes_a_receiver_sleeping_in_recv() {
    let _shm = NoLeftovers::new();
    // Rank 0 sleeps in the futex (fixed spin of 50 µs) when rank 1 SIGKILLs itself; the
    // probe measures how long PeerLost took (42 if under 1 s, 99 otherwise).
    let (code, err, dt) = run(
        &["-n", "3", "--wait", "fixed:50", "--grace", "3"],
        &["stream-kill", "1"],
        LIMIT,
    );
    assert_eq!(code, 128 + 9, "{err}");
    assert!(
        err.contains("rank 1 (pid ") && err.contains("was killed by signal 9 (SIGKILL)"),
        "{err}"
    );
    for r in [0, 2] {
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("skifrun: rank {r} (pid "))
                    && l.ends_with(&format!("exited with status {SAW_PEER_LOST}"))),
            "rank {r} did not see PeerLost in time:\n{err}"
        );
    }
    assert!(!err.contains("still running"), "{err}");
    // Everybody left on their own: well before the 3 s grace period ended.
    assert!(dt < Duration::from_secs(2), "took {dt:?}\n{err}");
}

#[test]
fn survivors_that_ignore_the_failure_are_killed_after_the_grace_period() {
    let _shm = NoLeftovers::new();
    let (code, err, dt) = run(&["-n", "3", "--grace", "1"], &["ignore", "1", "5"], LIMIT);
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains("skifrun: 2 ranks still running after the 1 s grace period; killing them"),
        "{err}"
    );
    // The killed survivors are not reported as failures of their own.
    assert!(!err.contains("signal 9"), "{err}");
    assert!(
        dt >= Duration::from_millis(950) && dt < Duration::from_secs(3),
        "{dt:?}"
    );
}

fn temp_file(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("skifrun-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

/// Waits until `n` ranks wrote "rank pid" lines to `path`; returns the pids.
fn rank_pids(path: &Path, n: usize) -> Vec<i32> {
    let t0 = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let pids: Vec<i32> = text
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
            .collect();
        if pids.len() == n {
            return pids;
        }
        assert!(t0.elapsed() < LIMIT, "ranks did not start: {text:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `true` once `pid` no longer runs (gone, or a zombie waiting for an init that does
/// not reap).
fn gone(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return true;
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let state = s.rsplit(')').next().unwrap_or("").trim_start();
            state.starts_with('Z') || state.starts_with('X')
        })
        .unwrap_or(true)
}

fn all_gone_within(pids: &[i32], limit: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if pids.iter().all(|&p| gone(p)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn sigterm_to_the_launcher_ends_every_rank() {
    let _shm = NoLeftovers::new();
    let file = temp_file("sigterm");
    // Rank 2 ignores SIGTERM, so it needs the SIGKILL after the grace period.
    let child = skifrun(
        &["-n", "3", "--grace", "1"],
        &["pids", file.to_str().unwrap(), "2"],
    )
    .spawn()
    .unwrap();
    let pids = rank_pids(&file, 3);
    // SAFETY: kill with integer arguments, to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let (out, dt) = wait_limit(child, LIMIT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM), "{err}");
    assert!(
        err.contains("skifrun: got SIGTERM; sending SIGTERM to 3 ranks"),
        "{err}"
    );
    assert!(
        err.contains("1 rank still running after SIGTERM and the 1 s grace period"),
        "{err}"
    );
    assert!(dt < Duration::from_secs(3), "{dt:?}");
    assert!(pids.iter().all(|&p| gone(p)), "orphans left: {pids:?}");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn kill_9_of_the_launcher_takes_the_ranks_down() {
    let _shm = NoLeftovers::new();
    let file = temp_file("kill9");
    let mut child = skifrun(&["-n", "3"], &["pids", file.to_str().unwrap()])
        .spawn()
        .unwrap();
    let pids = rank_pids(&file, 3);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        all_gone_within(&pids, Duration::from_secs(1)),
        "ranks outlived the launcher: {pids:?}"
    );
    let _ = std::fs::remove_file(&file);
}

#[test]
fn wait_policy_reaches_the_ranks() {
    let _shm = NoLeftovers::new();
    let (code, err, _) = run(
        &["-n", "2", "--wait", "block"],
        &["wait-policy", "block"],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    let (code, err, _) = run(
        &["-n", "2", "--wait", "fixed:7"],
        &["wait-policy", "fixed:7"],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    // The probe does notice a mismatch.
    let (code, _, _) = run(
        &["-n", "1", "--wait", "spin"],
        &["wait-policy", "block"],
        LIMIT,
    );
    assert_eq!(code, 98);
}

#[test]
fn bad_arguments_and_missing_programs() {
    let out = Command::new(skifrun_exe())
        .args(["-n", "0", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'-n <N>'"));
    let out = Command::new(skifrun_exe())
        .args(["-n", "2", "--", "./no-such-program"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "skifrun: cannot start ./no-such-program: No such file or directory"
    );
    let out = Command::new(skifrun_exe())
        .args(["-n", "2", "--lane-kb", "3", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("power of two"));
    let out = Command::new(skifrun_exe()).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for word in ["--grace", "--wait", "SKIFCH_RANK", "Exit status"] {
        assert!(help.contains(word), "--help lacks {word}:\n{help}");
    }
}

#[test]
fn self_launch_reruns_the_program_as_a_job() {
    let _shm = NoLeftovers::new();
    let exe = example_exe("self_launch_probe");
    for status in [0, 3] {
        let child = Command::new(&exe)
            .arg(status.to_string())
            .env_remove("SKIFCH_RANK")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (out, _) = wait_limit(child, LIMIT);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(status), "{stdout}");
        for r in 0..3 {
            assert!(
                stdout.contains(&format!("rank {r} of 3: args [\"{status}\"]")),
                "{stdout}"
            );
        }
        assert!(stdout.contains(&format!("launcher: job exited with {status}")));
    }
}

/// Whether any process has the memfd with inode `ino` open or mapped.
fn segment_holders(ino: &str) -> Vec<String> {
    let mut holders = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        let pid = e.file_name().to_string_lossy().into_owned();
        if pid.parse::<u32>().is_err() {
            continue;
        }
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        let mapped = maps
            .lines()
            .any(|l| l.contains("/memfd:skifch-job") && l.split_whitespace().nth(4) == Some(ino));
        let open = std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|d| {
            d.filter_map(|e| e.ok()).any(|e| {
                std::fs::read_link(e.path())
                    .is_ok_and(|t| t.to_string_lossy().starts_with("/memfd:skifch-job"))
                    && std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(e.path()).unwrap())
                        .to_string()
                        == ino
            })
        });
        if (mapped || open) && !gone(pid.parse().unwrap()) {
            holders.push(pid);
        }
    }
    holders
}

#[test]
fn processes_started_by_ranks_end_with_the_job() {
    // Issue 16, defect 2: a wrapper's background helper (`sh -c 'helper & exec prog'`,
    // which inherits SKIFCH_FD), a fork after Init, a double fork into a new session and a
    // plain child of each rank: none may outlive skifrun or keep the segment alive.
    let file = temp_file("spawn");
    let f = file.to_str().unwrap();
    let script = format!(
        "sleep 1000 & echo \"wrapper $!\" >> {f}; exec {} spawn {f}",
        probe().display()
    );
    // stdout to /dev/null: helpers that inherit a pipe would keep the test reading it.
    let child = Command::new(skifrun_exe())
        .args(["-n", "2", "--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (out, _) = wait_limit(child, LIMIT);
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let _ = std::fs::remove_file(&file);
    let mut pids = Vec::new();
    let mut segment = None;
    for l in text.lines() {
        let (kind, v) = l.split_once(' ').unwrap();
        match kind {
            "segment" => segment = Some(v.to_string()),
            _ => pids.push(v.parse::<i32>().unwrap()),
        }
    }
    assert_eq!(
        pids.len(),
        8,
        "2 ranks x (wrapper, fork, setsid, sleep): {text}"
    );
    let left: Vec<i32> = pids.iter().copied().filter(|&p| !gone(p)).collect();
    for &p in &left {
        // SAFETY: kill with integers; cleaning up after a failed check.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    assert!(left.is_empty(), "outlived the job: {left:?} of\n{text}");
    let holders = segment_holders(&segment.expect("the ranks reported the segment"));
    assert!(holders.is_empty(), "still hold the segment: {holders:?}");
}

#[test]
fn ctrl_c_to_the_whole_process_group_is_an_interrupt_not_a_failure() {
    // Issue 16, defect 9: the terminal sends SIGINT to the whole foreground process group.
    // skifrun must exit 130 (128 + SIGINT, as mpirun does) and report no rank "killed by
    // signal 2" as a failure, every time.
    use std::os::unix::process::CommandExt;
    for round in 0..10 {
        let file = temp_file(&format!("sigint-{round}"));
        let child = skifrun(&["-n", "12"], &["pids", file.to_str().unwrap()])
            .process_group(0)
            .spawn()
            .unwrap();
        let pids = rank_pids(&file, 12);
        // SAFETY: kill with integer arguments, to the process group of our own child.
        assert_eq!(unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) }, 0);
        let (out, _) = wait_limit(child, LIMIT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "round {round}: {err}");
        assert!(err.contains("skifrun: got SIGINT"), "round {round}: {err}");
        assert!(!err.contains("killed by signal"), "round {round}: {err}");
        assert!(
            all_gone_within(&pids, Duration::from_secs(1)),
            "round {round}"
        );
        let _ = std::fs::remove_file(&file);
    }
}

#[test]
fn rank_0_reads_a_terminal_on_stdin() {
    // The ranks lead their own process groups, outside the terminal's foreground group:
    // rank 0 reading the terminal directly would be stopped by SIGTTIN (the job hangs).
    // skifrun forwards a terminal stdin to rank 0 through a pipe, as mpirun does. The
    // terminal is a pty made by `script` (util-linux).
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("SKIPPED: no `script` (util-linux) to run skifrun on a terminal");
        return;
    }
    let inner = format!(
        "{} -n 2 -- sh -c 'if [ $SKIFCH_RANK = 0 ]; then read x; echo \"rank0 got $x\"; fi'",
        skifrun_exe().display()
    );
    let mut child = Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kept open until the end: an end of file on script's input may end the session.
    let mut input = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut input, b"hello\n").unwrap();
    let (out, _) = wait_limit(child, LIMIT);
    drop(input);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("rank0 got hello"), "{stdout}");
}

#[test]
fn the_time_limit_ends_a_hung_job() {
    // Issue 16, defect 10: a rank stuck for ever, or one that finalizes and leaves while
    // its peer waits for it, hung the job for ever. --timeout / SKIFRUN_TIMEOUT /
    // MPIEXEC_TIMEOUT end it with a message naming the limit and status 124.
    let _shm = NoLeftovers::new();
    /// skifrun's options, the probe's, an environment variable, the limit's source.
    type Case<'a> = (
        &'a [&'a str],
        &'a [&'a str],
        Option<(&'a str, &'a str)>,
        &'a str,
    );
    let cases: [Case; 4] = [
        // Every rank stuck (sleeping for ever).
        (
            &["-n", "2", "--grace", "1", "--timeout", "1"],
            &["ignore", "5", "0"],
            None,
            "--timeout",
        ),
        // Rank 0 finalizes and leaves; rank 1 waits for it.
        (
            &["-n", "2", "--grace", "1"],
            &["leave", "0"],
            Some(("SKIFRUN_TIMEOUT", "1")),
            "SKIFRUN_TIMEOUT",
        ),
        (
            &["-n", "3", "--grace", "1"],
            &["leave", "1"],
            Some(("MPIEXEC_TIMEOUT", "0.5")),
            "MPIEXEC_TIMEOUT",
        ),
        // --timeout wins over the environment.
        (
            &["-n", "2", "--grace", "1", "--timeout", "1"],
            &["leave", "1"],
            Some(("SKIFRUN_TIMEOUT", "100")),
            "--timeout",
        ),
    ];
    for (args, probe_args, env, from) in cases {
        let mut cmd = skifrun(args, probe_args);
        cmd.env_remove("SKIFRUN_TIMEOUT")
            .env_remove("MPIEXEC_TIMEOUT");
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let t0 = Instant::now();
        let (out, _) = wait_limit(cmd.spawn().unwrap(), LIMIT);
        let dt = t0.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(124), "{args:?} {env:?}: {err}");
        assert!(
            err.contains("skifrun: the job's time limit of")
                && err.contains(&format!("({from}) has passed")),
            "{args:?} {env:?}: {err}"
        );
        assert!(!err.contains("killed by signal"), "{err}");
        assert!(dt < Duration::from_secs(5), "{dt:?}");
    }
    // Within the limit: the job's own status.
    let (code, err, _) = run(&["-n", "2", "--timeout", "30"], &["alltoall", "10"], LIMIT);
    assert_eq!(code, 0, "{err}");
    let out = Command::new(skifrun_exe())
        .args(["-n", "1", "--timeout", "x", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(skifrun_exe())
        .args(["-n", "1", "--", "true"])
        .env("SKIFRUN_TIMEOUT", "soon")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SKIFRUN_TIMEOUT=\"soon\""));
}

#[test]
fn job_memory_is_private_and_its_size_sealed() {
    // Issue 16, defect 11: the memfds had mode 0777, so that any same-user process allowed
    // to reopen /proc/<pid>/fd/<n> — and other users' too, where /proc allowed it — could
    // map the job's memory. Each rank checks every skifch memfd it holds (the job
    // segment; with fpga-model also its node window): mode 0600, and truncating fails.
    for driver in ["shm", "fpga-model"] {
        let (code, err, _) = run(&["-n", "2", "--driver", driver], &["private"], LIMIT);
        assert_eq!(code, 0, "{driver}: {err}");
    }
    // Seen from outside: the ranks' descriptors name a 0600 memfd.
    let file = temp_file("private");
    let child = skifrun(&["-n", "2"], &["pids", file.to_str().unwrap()])
        .spawn()
        .unwrap();
    let pids = rank_pids(&file, 2);
    let mut modes = Vec::new();
    for pid in &pids {
        for e in std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .flatten()
        {
            let target = std::fs::read_link(e.path()).unwrap_or_default();
            if target.to_string_lossy().starts_with("/memfd:skifch-job") {
                let m = std::fs::metadata(e.path()).unwrap();
                modes.push(std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777);
            }
        }
    }
    // SAFETY: kill with integer arguments, to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = wait_limit(child, LIMIT);
    let _ = std::fs::remove_file(&file);
    assert!(
        !modes.is_empty() && modes.iter().all(|&m| m == 0o600),
        "modes {modes:?} (decimal; 384 is 0600)"
    );
}

#[test]
fn mpirun_flags_and_launch_environment() {
    // Issue 17 (tool conventions): -np, -x VAR[=val], --oversubscribe, --bind-to,
    // --tag-output / -l, and the PMI_* / OMPI_COMM_WORLD_* variables tools read.
    let script = "echo \"$FOO $PMI_RANK $PMI_SIZE $OMPI_COMM_WORLD_RANK $OMPI_COMM_WORLD_SIZE \
                  $OMPI_COMM_WORLD_LOCAL_RANK $OMPI_COMM_WORLD_LOCAL_SIZE $SKIFMPI_BIND\"; \
                  printf 'no newline' >&2";
    let out = Command::new(skifrun_exe())
        .args([
            "-np",
            "3",
            "-x",
            "FOO=bar=baz",
            "--oversubscribe",
            "--bind-to",
            "none",
        ])
        .args(["--tag-output", "sh", "-c", script])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for r in 0..3 {
        let line = format!("[1,{r}]<stdout>:bar=baz {r} 3 {r} 3 {r} 3 none\n");
        assert!(stdout.contains(&line), "{line:?} not in:\n{stdout}");
        let line = format!("[1,{r}]<stderr>:no newline\n");
        assert!(stderr.contains(&line), "{line:?} not in:\n{stderr}");
    }
    assert_eq!(stdout.lines().count(), 3, "{stdout}");
    // -l: MPICH's label; lines of one rank stay whole and in order.
    let out = Command::new(skifrun_exe())
        .args(["-l", "--np", "2", "--bind-to", "core", "--"])
        .args([
            "sh",
            "-c",
            "for i in 1 2 3; do echo \"line $i $SKIFMPI_BIND\"; done",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    for r in 0..2 {
        let mine: Vec<&str> = stdout
            .lines()
            .filter(|l| l.starts_with(&format!("[{r}] ")))
            .collect();
        assert_eq!(
            mine,
            (1..=3)
                .map(|i| format!("[{r}] line {i} core"))
                .collect::<Vec<_>>()
        );
    }
    // The program's own -np is its own.
    let out = Command::new(skifrun_exe())
        .args(["-np", "1", "echo", "-np", "7"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "-np 7\n");
    let out = Command::new(skifrun_exe())
        .args(["-n", "1", "--bind-to", "socket", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_ranks_are_told_when_they_outnumber_the_cpus() {
    // The waits yield when the machine runs more of the job's ranks than the CPUs a rank
    // may use (`skifch::wait::oversubscribed`, from the driver's placement at the join);
    // `SKIFCH_OVERSUBSCRIBED` overrides it.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let many = (cpus + 1).to_string();
    let (code, err, _) = run(&["-n", "1"], &["crowded", "0"], LIMIT);
    assert_eq!(code, 0, "{err}");
    let (code, err, _) = run(&["-n", &many], &["crowded", "1"], LIMIT);
    assert_eq!(code, 0, "{err}");
    let (code, err, _) = run(
        &["-n", &many, "-x", "SKIFCH_OVERSUBSCRIBED=0"],
        &["crowded", "0"],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
}

/// The state letter of process `pid` (`R`, `S`, `T`, ...).
fn proc_state(pid: i32) -> char {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(')').next()?.trim_start().chars().next())
        .unwrap_or('?')
}

/// Waits up to [`LIMIT`] until every pid's state satisfies `want`.
fn states_become(pids: &[i32], want: impl Fn(char) -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < LIMIT {
        if pids.iter().all(|&p| want(proc_state(p))) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn ctrl_z_stops_and_continues_the_ranks_with_the_launcher() {
    // The ranks lead their own process groups, so the terminal's SIGTSTP reaches only
    // skifrun: it stops every rank's group, then itself; SIGCONT continues them all.
    let file = temp_file("tstp");
    let child = skifrun(
        &["-n", "2", "--grace", "1"],
        &["pids", file.to_str().unwrap()],
    )
    .spawn()
    .unwrap();
    let launcher = child.id() as i32;
    let pids = rank_pids(&file, 2);
    // SAFETY: kill with integer arguments, to our own child.
    assert_eq!(unsafe { libc::kill(launcher, libc::SIGTSTP) }, 0);
    let all: Vec<i32> = pids.iter().copied().chain([launcher]).collect();
    let stopped = states_become(&all, |s| s == 'T');
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(launcher, libc::SIGCONT) }, 0);
    let running = states_become(&all, |s| s != 'T');
    // SAFETY: as above.
    unsafe { libc::kill(launcher, libc::SIGTERM) };
    let (out, _) = wait_limit(child, LIMIT);
    let _ = std::fs::remove_file(&file);
    let states: Vec<char> = all.iter().map(|&p| proc_state(p)).collect();
    assert!(stopped, "not all stopped by SIGTSTP: {all:?}");
    assert!(running, "not all continued by SIGCONT: {all:?} {states:?}");
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM));
}
