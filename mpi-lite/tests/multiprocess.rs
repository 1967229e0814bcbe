//! The Rust API in real multi-process jobs: `examples/ring.rs` under `skifrun` with 2, 3
//! and 4 ranks (shared-memory driver, one process per rank).

use std::path::Path;
use std::time::Duration;

use skifch_testing as testing;

#[test]
fn ring_example_under_skifrun() {
    let exe = testing::profile_dir().join("examples/ring");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    testing::cargo_build(&manifest, &["--example", "ring"], &exe);
    for n in [2, 3, 4] {
        let stdout = testing::run_job(testing::skifrun_cmd(n, &[], &exe), Duration::from_secs(60))
            .expect_ok(&format!("examples/ring with {n} ranks"));
        for r in 0..n {
            assert!(
                stdout.contains(&format!("ring: rank {r} of {n} ok")),
                "rank {r} of {n}:\n{stdout}"
            );
        }
    }
}
