//! Faults end to end: full lanes, dead peers, oversized messages and bad arguments, as real
//! 2-process jobs through `skifrun` with the scenarios of `examples/fault_probe.rs`.
//! Every job has a time limit, and nothing may be left in `/dev/shm` after it.
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use skifch_testing::{example_exe, skifrun_exe, wait_for_pid_file};

/// Exit status of rank 0 when it saw PeerLost as expected (and in time).
const SAW_PEER_LOST: i32 = 42;
const KILLED: i32 = 128 + libc::SIGKILL;
const LIMIT: Duration = Duration::from_secs(20);

/// What a finished job left behind.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `/dev/shm` as it is now. The machine is shared (MPI peers keep their own segments
/// there), so only names that could be ours count.
fn shm_listing() -> BTreeSet<String> {
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return BTreeSet::new();
    };
    dir.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().to_lowercase()))
        .filter(|n| n.contains("skifch") || n.contains("fault_probe"))
        .collect()
}

/// Runs `skifrun <opts> -- fault_probe <mode>`; `during` runs while the job runs. Checks
/// the time limit and /dev/shm before and after.
fn job(opts: &[&str], mode: &[&str], during: impl FnOnce()) -> Ran {
    let shm_before = shm_listing();
    let mut child = Command::new(skifrun_exe())
        .args(opts)
        .arg("--")
        .arg(example_exe("fault_probe"))
        .args(mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start skifrun");
    during();
    let t0 = Instant::now();
    while child.try_wait().expect("wait for skifrun").is_none() {
        if t0.elapsed() > LIMIT {
            let _ = child.kill(); // the ranks die with it (PDEATHSIG)
            let out = child.wait_with_output().expect("reap skifrun");
            panic!(
                "{mode:?} did not finish within {LIMIT:?}:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().expect("collect skifrun's output");
    let leftovers: Vec<_> = shm_listing().difference(&shm_before).cloned().collect();
    assert!(
        leftovers.is_empty(),
        "{mode:?} left in /dev/shm: {leftovers:?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    Ran {
        code: out
            .status
            .code()
            .unwrap_or_else(|| panic!("skifrun itself died: {:?}\n{stderr}", out.status)),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    }
}

/// skifrun's verdict lines: rank 1 killed by SIGKILL, rank 0 saw PeerLost in time.
fn assert_killed_and_noticed(r: &Ran) {
    assert_eq!(r.code, KILLED, "{}\n{}", r.stdout, r.stderr);
    let line = |rank: u32, end: &str| {
        r.stderr
            .lines()
            .any(|l| l.starts_with(&format!("skifrun: rank {rank} (pid ")) && l.ends_with(end))
    };
    assert!(line(1, "was killed by signal 9 (SIGKILL)"), "{}", r.stderr);
    assert!(
        line(0, &format!("exited with status {SAW_PEER_LOST}")),
        "rank 0 did not see PeerLost in time:\n{}{}",
        r.stdout,
        r.stderr
    );
    assert!(!r.stderr.contains("fault_probe:"), "{}", r.stderr);
}

#[test]
fn full_lane_would_block_then_send_sees_the_receiver_die() {
    // Rank 0 fills a 4 KiB lane (WouldBlock, nothing lost), fills it again, then retries
    // send() while rank 1 SIGKILLs itself: PeerLost within 1 s of the death.
    let r = job(&["-n", "2", "--lane-kb", "4"], &["full", "poll"], || {});
    assert_killed_and_noticed(&r);
    assert!(
        r.stdout
            .contains("full send: 36 messages filled the lane, WouldBlock until PeerLost"),
        "{}",
        r.stdout
    );
}

#[test]
fn send_all_blocked_on_a_full_lane_returns_when_the_receiver_dies() {
    let r = job(&["-n", "2", "--lane-kb", "4"], &["full", "block"], || {});
    assert_killed_and_noticed(&r);
    assert!(
        r.stdout.contains("full send_all: 36 messages filled"),
        "{}",
        r.stdout
    );
}

#[test]
fn sigkill_mid_stream_leaves_a_clean_prefix() {
    // Killed from outside at three different moments; the 16 KiB lane wraps constantly.
    for delay_ms in [30, 120, 250] {
        let pidfile: PathBuf =
            std::env::temp_dir().join(format!("fault-probe-{}-{delay_ms}.pid", std::process::id()));
        let _ = std::fs::remove_file(&pidfile);
        let path = pidfile.to_str().expect("a UTF-8 temp path").to_string();
        let r = job(&["-n", "2", "--lane-kb", "16"], &["stream", &path], || {
            let pid = wait_for_pid_file(&pidfile, LIMIT);
            std::thread::sleep(Duration::from_millis(delay_ms));
            // SAFETY: kill takes integers; the pid is rank 1, alive until this signal (it
            // streams until killed, and its launcher is our child, which cannot reap it
            // before it dies).
            assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
        });
        let _ = std::fs::remove_file(&pidfile);
        assert_killed_and_noticed(&r);
        // Rank 0 checked every message (order, length, bytes) before the PeerLost.
        let got: u64 = r
            .stdout
            .strip_prefix("stream: received ")
            .and_then(|s| s.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no summary from rank 0: {}{}", r.stdout, r.stderr));
        assert!(got > 0, "killed after {delay_ms} ms, nothing received");
    }
}

#[test]
fn messages_larger_than_the_lane() {
    let r = job(&["-n", "2", "--lane-kb", "4"], &["too-large"], || {});
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // The probe checked the partial prefix and the reassembled send_all on rank 1; how
    // many pieces send_all made depends on how fast rank 1 frees room (at least 4). The
    // largest message of a 4 KiB lane: 4096 - header - terminator - the most padding a
    // record of a payload above 2 KiB can need (layout::max_message) = 4024.
    let rest = r
        .stdout
        .strip_prefix(
            "too-large: send_whole MessageTooLarge (max 4024), send took 4024 of 4025, \
             send_all used ",
        )
        .unwrap_or_else(|| panic!("{}", r.stdout));
    let msgs: u32 = rest.split_whitespace().next().unwrap().parse().unwrap();
    assert!(msgs >= 4, "{}", r.stdout);
    assert!(rest.contains(" messages for 14084 bytes"), "{}", r.stdout);
}

#[test]
fn unreachable_destinations_and_overlong_iovecs() {
    let r = job(&["-n", "2"], &["bad-args"], || {});
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(
            "bad-args: Unreachable for 4 addresses x 3 calls, InvalidArgument past IOV_MAX (1024)"
        ),
        "{}",
        r.stdout
    );
}

#[test]
fn sends_to_a_finalized_rank_are_unreachable() {
    let r = job(&["-n", "2"], &["finalized"], || {});
    assert_eq!(r.code, SAW_PEER_LOST, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("finalized: Unreachable (closed)"),
        "{}",
        r.stdout
    );
}

#[test]
fn sends_to_a_closed_port_are_unreachable_until_it_reopens() {
    let r = job(&["-n", "2"], &["closed"], || {});
    assert_eq!(r.code, SAW_PEER_LOST, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("delivered after reopening"),
        "{}",
        r.stdout
    );
}
