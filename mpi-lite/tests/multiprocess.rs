//! The Rust API in real multi-process jobs: `examples/ring.rs` under `skifrun` with 2, 3
//! and 4 ranks (shared-memory driver, one process per rank).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn ring_example_under_skifrun() {
    let exe = skifch_drivers::testing::profile_dir().join("examples/ring");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    skifch_drivers::testing::cargo_build(&manifest, &["--example", "ring"], &exe);
    for n in [2, 3, 4] {
        let out = Command::new(skifch_drivers::testing::skifrun_exe())
            .args(["-n", &n.to_string(), "--"])
            .arg(&exe)
            .env_remove("SKIFCH_RANK")
            .env_remove("SKIFCH_SIZE")
            .env_remove("SKIFCH_FD")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("running skifrun");
        // A deadlock must fail the test, not hang it (skifrun's ranks die with it).
        let start = Instant::now();
        let mut child = out;
        while child.try_wait().expect("waiting").is_none() {
            if start.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                panic!("{n} ranks: still running after 60 s");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let out = child.wait_with_output().expect("collecting output");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{n} ranks: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        for r in 0..n {
            assert!(
                stdout.contains(&format!("ring: rank {r} of {n} ok")),
                "rank {r} of {n}:\n{stdout}"
            );
        }
    }
}
