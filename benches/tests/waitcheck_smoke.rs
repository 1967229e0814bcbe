//! Smoke test of `waitcheck`: a real 2-process job with few samples; the CSV must hold every
//! row, a spinning receiver must burn CPU and a fixed-spin one must not.

use std::process::Command;

use skifch_benches::results::read_csv;

#[test]
fn waitcheck_measures_every_policy() {
    let dir = std::env::temp_dir().join(format!("waitcheck-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("w.csv");
    let out = Command::new(env!("CARGO_BIN_EXE_waitcheck"))
        .args(["--policies", "spin,fixed:20,block", "--samples", "10"])
        .args(["--idle-s", "0.3", "--csv"])
        .arg(&csv)
        .env_remove("SKIFCH_RANK")
        .env_remove("SKIFCH_SIZE")
        .env_remove("SKIFCH_FD")
        .output()
        .expect("run waitcheck");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "waitcheck failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("load average"), "{stdout}");
    let rows = read_csv(&csv).unwrap();
    let value = |test: &str, unit: &str| {
        let r = rows
            .iter()
            .find(|r| r.test == test)
            .unwrap_or_else(|| panic!("no {test} row in {rows:?}"));
        assert_eq!((r.imp.as_str(), r.unit.as_str()), ("skifch-shm", unit));
        r.value
    };
    // A sleeping receiver costs nothing once its spin period is over.
    let (fixed, block) = (value("wait_cpu_fixed20", "%"), value("wait_cpu_block", "%"));
    assert!(fixed < 5.0 && block < 5.0, "{stdout}");
    // A spinning one holds its CPU: a fifth of a core or more on an idle machine; on a
    // loaded one (its fair share shrinks with the load) still several times the sleepers'.
    let spin = value("wait_cpu_spin", "%");
    assert!(
        spin > 20.0 || spin > 5.0 * fixed.max(block).max(1.0),
        "{stdout}"
    );
    for p in ["spin", "fixed20", "block", "park", "futex"] {
        let (p50, max) = (
            value(&format!("wake_p50_{p}"), "us"),
            value(&format!("wake_max_{p}"), "us"),
        );
        assert!(p50 > 0.0 && p50 <= max && max < 1e6, "{p}: {p50} {max}");
    }
    // With the ranks on two CPUs, messages do land within the 20 us spin, and are then
    // seen without sleeping.
    let share = value("wakespin_share_fixed20", "%");
    assert!((0.0..=100.0).contains(&share), "{share}");
    if skifch_benches::affinity::allowed_cpus().unwrap().len() >= 2 {
        assert!(share > 0.0, "{stdout}");
        assert!(value("wakespin_p50_fixed20", "us") < 20.0, "{stdout}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
