//! Helpers for integration tests (of any crate of the workspace) that run real
//! multi-process jobs through `skifrun`.
//!
//! A test binary runs from `target/<profile>/deps/<test>-<hash>`; the launcher and the
//! examples of this crate live beside it in `target/<profile>/`. Cargo builds them only for
//! some invocations (a crate's own binaries for its own integration tests; examples for a
//! plain `cargo test`), so these helpers run `cargo build` for the wanted target, once per
//! test process, into the same target directory and profile. That is a quick no-op when the
//! binary is up to date, and it never hands a test a stale binary.
//!
//! ```no_run
//! use std::process::Command;
//! let status = Command::new(skifch_drivers::testing::skifrun_exe())
//!     .args(["-n", "2", "--"])
//!     .arg(skifch_drivers::testing::example_exe("launch_probe"))
//!     .arg("alltoall")
//!     .status()
//!     .unwrap();
//! assert!(status.success());
//! ```
use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Path of the `skifrun` binary for the running test's profile, built if needed.
///
/// # Panics
/// If it cannot be built (the message has cargo's output). Meant for tests only.
pub fn skifrun_exe() -> PathBuf {
    let exe = profile_dir().join("skifrun");
    cargo_build(OWN_MANIFEST.as_ref(), &["--bin", "skifrun"], &exe);
    exe
}

/// Path of example `name` of this crate (`skifch-drivers/examples/<name>.rs`) for the
/// running test's profile, built if needed.
///
/// # Panics
/// As [`skifrun_exe`].
pub fn example_exe(name: &str) -> PathBuf {
    let exe = profile_dir().join("examples").join(name);
    cargo_build(OWN_MANIFEST.as_ref(), &["--example", name], &exe);
    exe
}

const OWN_MANIFEST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");

/// `target/<profile>` of the running executable (a test in `deps/`, an example in
/// `examples/`, or a binary in the profile directory itself).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the path of the running test executable");
    let mut dir = exe
        .parent()
        .expect("the test executable is in a directory")
        .to_path_buf();
    if matches!(
        dir.file_name().and_then(|n| n.to_str()),
        Some("deps" | "examples")
    ) {
        dir.pop();
    }
    dir
}

/// Runs `cargo build <what>` of the package at `manifest` into the running test's target
/// directory and profile, once per process and `product` (the file it must produce, e.g.
/// `profile_dir().join("libskifch.so")`). Any crate's tests can build another workspace
/// package's binaries or libraries this way.
///
/// # Panics
/// If the build fails and `product` does not exist (the message has cargo's output).
pub fn cargo_build(manifest: &Path, what: &[&str], product: &Path) {
    let dir = profile_dir();
    let exe = product;
    static BUILT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
    // Held during the build: concurrent tests wait for one cargo run instead of racing.
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    let built = built.get_or_insert_with(HashSet::new);
    if built.contains(exe) {
        return;
    }
    let target_dir = dir.parent().unwrap_or(&dir);
    let mut args: Vec<OsString> = vec!["build".into(), "--quiet".into()];
    args.push("--manifest-path".into());
    args.push(manifest.into());
    args.push("--target-dir".into());
    args.push(target_dir.into());
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => {}
        Some("release") => args.push("--release".into()),
        Some(other) => {
            args.push("--profile".into());
            args.push(other.into());
        }
    }
    args.extend(what.iter().map(OsString::from));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(&cargo).args(&args).output();
    match out {
        Ok(o) if o.status.success() && exe.exists() => {}
        Ok(o) if exe.exists() => eprintln!(
            "warning: `cargo build {}` failed ({}); using the existing {}:\n{}",
            what.join(" "),
            o.status,
            exe.display(),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) if exe.exists() => eprintln!(
            "warning: cannot run {}: {e}; using the existing {}",
            cargo.to_string_lossy(),
            exe.display()
        ),
        Ok(o) => panic!(
            "`cargo build {}` did not produce {} ({}):\n{}",
            what.join(" "),
            exe.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!(
            "cannot run {} to build {}: {e}",
            cargo.to_string_lossy(),
            exe.display()
        ),
    }
    built.insert(exe.to_path_buf());
}

/// Waits (at most `limit`) until a rank has written its pid into `path` (e.g.
/// `fault_probe stream <pidfile>`), then removes the file and returns the pid.
///
/// # Panics
/// If no pid appears in time. Meant for tests only.
pub fn wait_for_pid_file(path: &Path, limit: std::time::Duration) -> i32 {
    let t0 = std::time::Instant::now();
    loop {
        if let Some(p) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            let _ = std::fs::remove_file(path);
            return p;
        }
        assert!(t0.elapsed() < limit, "nobody wrote a pid into {}", path.display());
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}
