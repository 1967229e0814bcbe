//! The FPGA driver over the device model, multi-process: real jobs through
//! `skifrun --driver fpga-model` (the launcher hosts the model; one process per torus
//! node). The conformance suite, peer death mid-stream and in a blocked send, a killed
//! launcher, bad options and a bad environment. Every job has a time limit.
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use skifch_testing::{example_exe, skifrun_exe, wait_for_pid_file};

const LIMIT: Duration = Duration::from_secs(60);
/// Rank 0 of `fault_probe` saw PeerLost in time.
const SAW_PEER_LOST: i32 = 42;
const KILLED: i32 = 128 + libc::SIGKILL;

struct Ran {
    code: Option<i32>,
    out: String,
    took: Duration,
}

/// Runs `skifrun <opts> -- <example> <args>`; `during` runs while it runs.
fn job(opts: &[&str], example: &str, args: &[&str], during: impl FnOnce()) -> Ran {
    let t0 = Instant::now();
    let mut cmd = Command::new(skifrun_exe());
    cmd.args(opts)
        .arg("--")
        .arg(example_exe(example))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for v in [
        "SKIFCH_RANK",
        "SKIFCH_SIZE",
        "SKIFCH_FD",
        "SKIFCH_FPGA_FD",
        "SKIFCH_PORTS",
    ] {
        cmd.env_remove(v);
    }
    let mut child = cmd.spawn().expect("start skifrun");
    during();
    while child.try_wait().expect("wait for skifrun").is_none() {
        if t0.elapsed() > LIMIT {
            let _ = child.kill(); // the ranks and the model die with it
            let out = child.wait_with_output().expect("reap skifrun");
            panic!(
                "{example} {args:?} did not finish within {LIMIT:?}:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().expect("collect skifrun's output");
    Ran {
        code: out.status.code(),
        out: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        took: t0.elapsed(),
    }
}

fn fpga(n: &'static str, extra: &[&'static str]) -> Vec<&'static str> {
    let mut v = vec!["-n", n, "--grace", "2", "--driver", "fpga-model"];
    v.extend_from_slice(extra);
    v
}

fn assert_suite_passed(r: &Ran, ranks: &[u32]) {
    assert_eq!(r.code, Some(0), "{}", r.out);
    for rank in ranks {
        assert!(
            r.out
                .contains(&format!("conformance: rank {rank} ok (fpga)")),
            "rank {rank}: {}",
            r.out
        );
    }
}

#[test]
fn conformance_suite_on_2_processes() {
    let r = job(
        &fpga("2", &[]),
        "conformance",
        &["--messages", "300"],
        || {},
    );
    assert_suite_passed(&r, &[0, 1]);
}

/// The forwarding driver (a second library of a process, `skifch_drivers::share`) over the
/// adapter, through this process's own C-ABI table.
#[test]
fn conformance_suite_over_the_forwarding_driver() {
    let r = job(
        &fpga("2", &[]),
        "conformance",
        &["--messages", "300", "--forwarded"],
        || {},
    );
    assert_suite_passed(&r, &[0, 1]);
}

#[test]
fn conformance_suite_on_4_processes_of_a_2x2x1_torus() {
    let r = job(
        &fpga("4", &["--torus", "2x2x1", "--wait", "block"]),
        "conformance",
        &["--messages", "300"],
        || {},
    );
    assert_suite_passed(&r, &[0, 1, 2, 3]);
}

#[test]
fn a_sigkilled_rank_is_peer_lost_for_the_conformance_survivors() {
    // The suite's peer_failure check: rank 3 SIGKILLs itself; ranks 0..2 must see
    // PeerLost within a second on an empty receive and on sends to it.
    let r = job(
        &fpga("4", &[]),
        "conformance",
        &["--messages", "100", "--kill"],
        || {},
    );
    assert_eq!(r.code, Some(KILLED), "{}", r.out);
    for rank in 0..3 {
        assert!(
            r.out
                .contains(&format!("conformance: rank {rank} ok (fpga)")),
            "{}",
            r.out
        );
    }
    assert!(r.took < Duration::from_secs(30), "took {:?}", r.took);
}

#[test]
fn sigkill_mid_stream_is_peer_lost_not_a_hang() {
    for delay_ms in [20, 200] {
        let pidfile: PathBuf = std::env::temp_dir().join(format!(
            "fpga-model-stream-{}-{delay_ms}.pid",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&pidfile);
        let path = pidfile.to_str().expect("a UTF-8 temp path").to_string();
        let r = job(&fpga("2", &[]), "fault_probe", &["stream", &path], || {
            let pid = wait_for_pid_file(&pidfile, LIMIT);
            std::thread::sleep(Duration::from_millis(delay_ms));
            // SAFETY: kill takes integers; the pid is rank 1, alive until this signal.
            assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
        });
        let _ = std::fs::remove_file(&pidfile);
        assert_eq!(r.code, Some(KILLED), "{}", r.out);
        assert!(
            r.out.contains("rank 0 (pid")
                && r.out
                    .contains(&format!("exited with status {SAW_PEER_LOST}")),
            "{}",
            r.out
        );
        assert!(
            r.out.contains("then PeerLost from rank 1"),
            "rank 0 checked every message, then saw PeerLost: {}",
            r.out
        );
    }
}

#[test]
fn a_sender_blocked_on_credits_sees_its_receiver_die() {
    // Rank 0 fills rank 1's credit window (WouldBlock, nothing lost: rank 1 drains and
    // checks), fills it again and blocks in send_all; rank 1 SIGKILLs itself.
    let r = job(&fpga("2", &[]), "fault_probe", &["full", "block"], || {});
    assert_eq!(r.code, Some(KILLED), "{}", r.out);
    assert!(
        r.out.contains("WouldBlock until PeerLost")
            && r.out
                .contains(&format!("exited with status {SAW_PEER_LOST}")),
        "{}",
        r.out
    );
}

#[test]
fn bad_torus_options_are_clear_errors() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["-n", "4", "--driver", "fpga-model", "--torus", "2x2"],
            "expected XxYxZ",
        ),
        (
            &["-n", "4", "--driver", "fpga-model", "--torus", "0x2x2"],
            "each in 1..=16",
        ),
        (
            &["-n", "4", "--driver", "fpga-model", "--torus", "17x1x1"],
            "each in 1..=16",
        ),
        (
            &["-n", "4", "--driver", "fpga-model", "--torus", "2x2x2"],
            "--torus 2x2x2 has 8 nodes but -n is 4",
        ),
        (
            &["-n", "9", "--driver", "fpga-model", "--torus", "2x2x2"],
            "--torus 2x2x2 has 8 nodes but -n is 9",
        ),
        (
            &["-n", "17", "--driver", "fpga-model"],
            "17 ranks do not form an X×Y×Z torus",
        ),
        (
            &["-n", "2", "--driver", "fpga-model", "--lane-kb", "4"],
            "--lane-kb sizes the shm",
        ),
        (
            &["-n", "2", "--driver", "fpga-model", "--ports", "9"],
            "1..=7 ports",
        ),
        (
            &["-n", "2", "--torus", "2x1x1"],
            "--torus applies to --driver fpga-model only",
        ),
    ];
    for (opts, msg) in cases {
        let out = Command::new(skifrun_exe())
            .args(*opts)
            .args(["--", "true"])
            .output()
            .expect("run skifrun");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{opts:?}: {err}");
        assert!(err.contains(msg), "{opts:?}: expected {msg:?} in {err}");
    }
}

#[test]
fn fpga_model_without_the_launcher_is_a_clear_error() {
    for (driver, msg) in [
        (
            "fpga-model",
            "start the program with skifrun --driver fpga-model",
        ),
        (
            "infiniband",
            "unknown driver (known: shm, fpga-model, ofi, hier)",
        ),
    ] {
        let out = Command::new(example_exe("conformance"))
            .env("SKIFCH_DRIVER", driver)
            .env_remove("SKIFCH_RANK")
            .env_remove("SKIFCH_FPGA_FD")
            .output()
            .expect("run the conformance example");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(msg), "{err}");
    }
}

#[test]
fn killing_the_launcher_takes_the_ranks_with_it() {
    let pidfile: PathBuf =
        std::env::temp_dir().join(format!("fpga-model-launcher-{}.pid", std::process::id()));
    let _ = std::fs::remove_file(&pidfile);
    let path = pidfile.to_str().expect("a UTF-8 temp path").to_string();
    let mut child = Command::new(skifrun_exe())
        .args(["-n", "2", "--driver", "fpga-model", "--"])
        .arg(example_exe("fault_probe"))
        .args(["stream", &path])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start skifrun");
    let rank1 = wait_for_pid_file(&pidfile, LIMIT);
    child.kill().expect("SIGKILL skifrun");
    child.wait().expect("reap skifrun");
    // Rank 1 (and with it the model's memory, which only the job's processes map) goes.
    let t1 = Instant::now();
    // SAFETY: kill with signal 0 only checks whether the process exists.
    while unsafe { libc::kill(rank1, 0) } == 0 {
        let stat = std::fs::read_to_string(format!("/proc/{rank1}/stat")).unwrap_or_default();
        if stat.contains(") Z ") {
            break; // a zombie, waiting for init to reap it: it is dead
        }
        assert!(
            t1.elapsed() < Duration::from_secs(5),
            "rank 1 (pid {rank1}) outlived its launcher"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_hostile_rank_cannot_reach_outside_its_window_or_stop_the_launcher() {
    // examples/hostile_rank.rs: rank 1 points its adapter's DMA outside its node window
    // and corrupts its register queue; rank 0 keeps working throughout.
    let r = job(&fpga("2", &[]), "hostile_rank", &[], || {});
    assert_eq!(r.code, Some(0), "{}", r.out);
    assert!(
        r.out
            .contains("hostile: ERR_STATUS 0x2 (DMA_FAULT), halted true"),
        "{}",
        r.out
    );
    assert!(
        r.out.contains("skifrun: rank 1: register queue tail ")
            && r.out.contains(" is 10000 entries ahead of head ")
            && r.out
                .contains("its adapter no longer takes register accesses"),
        "{}",
        r.out
    );
    assert!(r.out.contains("victim: rank 0 unaffected"), "{}", r.out);
}

#[test]
fn sends_to_a_finalized_rank_are_unreachable() {
    // Rank 1 finalizes and exits; rank 0's sends to it fail with Unreachable (Closed), as
    // on shm, instead of vanishing into the network.
    let r = job(&fpga("2", &[]), "fault_probe", &["finalized"], || {});
    assert_eq!(r.code, Some(SAW_PEER_LOST), "{}", r.out);
    assert!(
        r.out.contains("finalized: Unreachable (closed)"),
        "{}",
        r.out
    );
}

#[test]
fn sigterm_to_the_launcher_ends_the_ranks_and_the_model() {
    let pidfile: PathBuf =
        std::env::temp_dir().join(format!("fpga-model-sigterm-{}.pid", std::process::id()));
    let _ = std::fs::remove_file(&pidfile);
    let path = pidfile.to_str().expect("a UTF-8 temp path").to_string();
    let r = job(&fpga("2", &[]), "fault_probe", &["stream", &path], || {
        let rank1 = wait_for_pid_file(&pidfile, LIMIT);
        std::thread::sleep(Duration::from_millis(100));
        // The launcher is rank 1's parent; SIGTERM it as a shell's `kill` would.
        let launcher = std::fs::read_to_string(format!("/proc/{rank1}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit(") ")
                    .next()?
                    .split_whitespace()
                    .nth(1)?
                    .parse()
                    .ok()
            })
            .expect("rank 1's parent pid");
        // SAFETY: kill takes integers; the pid is our child skifrun, not yet reaped.
        assert_eq!(unsafe { libc::kill(launcher, libc::SIGTERM) }, 0);
    });
    assert_eq!(r.code, Some(128 + libc::SIGTERM), "{}", r.out);
    assert!(r.out.contains("skifrun: got SIGTERM"), "{}", r.out);
    assert!(r.took < Duration::from_secs(20), "took {:?}", r.took);
}

#[test]
fn skifch_driver_in_the_environment_picks_the_launcher_driver() {
    let out = Command::new(skifrun_exe())
        .args(["-n", "2", "--"])
        .arg(example_exe("conformance"))
        .args(["--messages", "50"])
        .env("SKIFCH_DRIVER", "fpga-model")
        .output()
        .expect("run skifrun");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("conformance: rank 1 ok (fpga)"), "{text}");
    // --driver wins over the environment; a bad value is a clear error.
    let out = Command::new(skifrun_exe())
        .args(["-n", "2", "--driver", "shm", "--"])
        .arg(example_exe("conformance"))
        .args(["--messages", "10"])
        .env("SKIFCH_DRIVER", "fpga-model")
        .output()
        .expect("run skifrun");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("conformance: rank 1 ok (shm)"), "{text}");
    let out = Command::new(skifrun_exe())
        .args(["-n", "1", "--", "true"])
        .env("SKIFCH_DRIVER", "ib")
        .output()
        .expect("run skifrun");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("SKIFCH_DRIVER=\"ib\": unknown driver"),
        "{err}"
    );
}

#[test]
fn sends_to_a_closed_port_are_unreachable_until_it_reopens() {
    // Rank 1 opens and closes port 2: rank 0's sends to it fail with Unreachable (Closed)
    // once the port-state notice arrived; after the reopening they are delivered again.
    let r = job(&fpga("2", &[]), "fault_probe", &["closed"], || {});
    assert_eq!(r.code, Some(SAW_PEER_LOST), "{}", r.out);
    assert!(
        r.out.contains("closed: Unreachable (closed) after")
            && r.out.contains("delivered after reopening"),
        "{}",
        r.out
    );
}

#[test]
fn many_to_one_with_senders_leaving_early() {
    // Senders finish and leave while rank 0 still receives: the credits it returns to
    // them afterwards are dropped by the model (Machine::host_gone), not left to stall the
    // remaining senders' traffic in shared links (this hung a 4-rank job before).
    let r = job(&fpga("4", &[]), "fault_probe", &["gather", "3000"], || {});
    assert_eq!(r.code, Some(0), "{}", r.out);
    assert!(
        r.out
            .contains("gather: 9000 messages from 3 ranks in order"),
        "{}",
        r.out
    );
}
