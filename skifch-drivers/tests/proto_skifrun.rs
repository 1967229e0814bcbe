//! `skifch::proto` and `skifch::coll` across processes (shm driver, started by skifrun) and
//! over the FPGA driver on its device model: the same self-check suite as the in-process
//! tests.

use fpga::model::ModelConfig;
use fpga::regs::Dims;
use skifch::proto::suite;
use skifch_drivers::fpga::{driver::FpgaConfig, model};
use std::time::Duration;

use skifch_testing as testing;

fn run(n: u32, extra: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = testing::skifrun_cmd(n, &["--grace", "2"], &testing::example_exe("proto_suite"));
    cmd.args(extra).envs(env.iter().copied());
    let o = testing::run_job(cmd, Duration::from_secs(120));
    (o.code(), o.text())
}

#[test]
fn suite_passes_with_3_and_4_processes() {
    for n in [3, 4] {
        let (code, out) = run(n, &[], &[]);
        assert_eq!(code, Some(0), "{out}");
        for r in 0..n {
            assert!(out.contains(&format!("proto_suite: rank {r} ok")), "{out}");
        }
    }
}

#[test]
fn suite_passes_with_small_lanes() {
    // 4 KiB lanes: most traffic is chunked and senders block on full lanes constantly;
    // waits sleep at once (no spinning), so every wake-up path is exercised.
    let (code, out) = run(
        3,
        &["--rounds", "5"],
        &[("SKIFCH_LANE_KB", "4"), ("SKIFCH_WAIT", "block")],
    );
    assert_eq!(code, Some(0), "{out}");
}

#[test]
fn survivors_see_a_killed_rank_as_peer_lost() {
    let (code, out) = run(3, &["--die"], &[("SKIFCH_LANE_KB", "8")]);
    // skifrun reports the victim's SIGKILL (128 + 9); the survivors got PeerLost.
    assert_eq!(code, Some(137), "{out}");
    for r in 0..2 {
        assert!(
            out.contains(&format!("proto_suite: rank {r} saw PeerLost")),
            "{out}"
        );
    }
}

#[test]
fn suite_passes_over_the_fpga_driver_model() {
    let cfg = ModelConfig {
        hw_demux: true,
        ..ModelConfig::default()
    };
    let small = suite::Config {
        rounds: 3,
        max_len: 40_000,
    };
    model::run(
        Dims::new(3, 1, 1).unwrap(),
        cfg,
        FpgaConfig::default(),
        move |job| suite::run(&job, 0, &small),
    )
    .unwrap();
}
