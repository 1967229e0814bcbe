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
