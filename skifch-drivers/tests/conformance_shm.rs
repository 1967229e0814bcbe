//! The conformance suite on the shm driver, with real processes started by skifrun.
use std::time::{Duration, Instant};

use skifch_testing as testing;

fn run(n: u32, extra: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, Duration) {
    let t0 = Instant::now();
    let mut cmd = testing::skifrun_cmd(n, &["--grace", "2"], &testing::example_exe("conformance"));
    cmd.args(extra).envs(env.iter().copied());
    let o = testing::run_job(cmd, Duration::from_secs(60));
    (o.code(), o.text(), t0.elapsed())
}

#[test]
fn shm_passes_the_suite_with_4_processes() {
    // Small lanes so back-pressure, wrap-around and partial sends happen often.
    let (code, out, _) = run(4, &["--messages", "2000"], &[("SKIFCH_LANE_KB", "8")]);
    assert_eq!(code, Some(0), "{out}");
    for r in 0..4 {
        assert!(out.contains(&format!("conformance: rank {r} ok")), "{out}");
    }
}

#[test]
fn shm_passes_the_suite_with_2_processes_and_block_waiting() {
    let (code, out, _) = run(
        2,
        &["--messages", "1000"],
        &[("SKIFCH_LANE_KB", "4"), ("SKIFCH_WAIT", "block")],
    );
    assert_eq!(code, Some(0), "{out}");
}

#[test]
fn shm_reports_a_killed_peer_to_every_survivor() {
    let (code, out, dt) = run(
        3,
        &["--messages", "200", "--kill"],
        &[("SKIFCH_LANE_KB", "8")],
    );
    // The victim was killed by SIGKILL: skifrun reports 128 + 9; survivors passed.
    assert_eq!(code, Some(137), "{out}");
    assert!(
        out.contains("conformance: rank 0 ok") && out.contains("conformance: rank 1 ok"),
        "{out}"
    );
    assert!(dt < Duration::from_secs(30), "took {dt:?}");
}

#[test]
fn shm_passes_the_suite_over_the_fault_injector() {
    // SKIFCH_FAULT wraps the driver skifrun chose (skifch_drivers::init): forced partial
    // sends and would-blocks, a receive that sees its message a moment late, a slow consumer.
    let (code, out, _) = run(
        3,
        &["--messages", "500"],
        &[
            ("SKIFCH_LANE_KB", "8"),
            (
                "SKIFCH_FAULT",
                "seed=4,partial=0.3,wouldblock=0.2,recv_wouldblock=every:3,slow=every:100,recv_delay=200",
            ),
        ],
    );
    assert_eq!(code, Some(0), "{out}");
    for r in 0..3 {
        assert!(out.contains(&format!("conformance: rank {r} ok")), "{out}");
    }
}

#[test]
fn a_rank_lost_at_message_n_by_skifch_fault_is_peer_lost_at_its_peers() {
    // Rank 2 SIGKILLs itself at its 301st message (sent or received); the survivors' checks
    // fail with PeerLost (not a hang) and skifrun reports the killed rank.
    let (code, out, dt) = run(
        3,
        &["--messages", "2000"],
        &[("SKIFCH_LANE_KB", "8"), ("SKIFCH_FAULT", "lose=2@300")],
    );
    assert_eq!(code, Some(137), "{out}");
    // A survivor sees rank 2 lost; each survivor fails with PeerLost (of rank 2, or of the
    // other survivor if that one left unfinalized) or, when the other survivor failed first
    // and closed its ports on the way out, with Unreachable for that closed port (spec:
    // a send to a port its owner closed). Never a hang, never success.
    assert!(out.contains("peer lost: rank 2"), "{out}");
    for r in 0..2u32 {
        let other = 1 - r;
        assert!(
            out.contains(&format!("conformance: rank {r}: peer lost: rank "))
                || out.contains(&format!(
                    "conformance: rank {r}: no such destination {other}:0: the port was closed by its owner"
                )),
            "{out}"
        );
    }
    assert!(dt < Duration::from_secs(30), "took {dt:?}");
}

#[test]
fn skifch_trace_logs_every_rank_to_its_file() {
    let dir = std::env::temp_dir().join(format!("skifch-trace-shm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = format!("{},bytes=12", dir.join("trace.%r").display());
    let (code, out, _) = run(2, &["--messages", "30"], &[("SKIFCH_TRACE", &spec)]);
    assert_eq!(code, Some(0), "{out}");
    for r in 0..2 {
        let t = std::fs::read_to_string(dir.join(format!("trace.{r}"))).unwrap();
        assert!(t.contains(&format!(" r{r} p0 open\n")), "{t}");
        assert!(t.contains(&format!(" r{r} p0 send ")), "{t}");
        assert!(t.contains(&format!(" r{r} p0 recv ")), "{t}");
        assert!(t.contains(&format!(" r{r} p0 complete tok ")), "{t}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The forwarding driver (`skifch_drivers::share`, what a second library of a process
/// uses) through this process's own C-ABI table: every check, then a killed peer.
#[test]
fn the_forwarding_driver_passes_the_suite_over_shm() {
    let (code, out, _) = run(
        3,
        &["--messages", "500", "--forwarded"],
        &[("SKIFCH_LANE_KB", "8")],
    );
    assert_eq!(code, Some(0), "{out}");
    for r in 0..3 {
        assert!(
            out.contains(&format!("conformance: rank {r} ok (shm)")),
            "{out}"
        );
    }
    let (code, out, _) = run(
        3,
        &["--messages", "200", "--forwarded", "--kill"],
        &[("SKIFCH_LANE_KB", "8")],
    );
    assert_eq!(code, Some(137), "{out}");
    assert!(
        out.contains("conformance: rank 0 ok") && out.contains("conformance: rank 1 ok"),
        "{out}"
    );
}
