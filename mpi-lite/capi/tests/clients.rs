//! The client software MPI users already have, built against mpi-lite as a user would
//! (issue 17): mpi4py from its source release with `MPICC=<our mpicc>`, running its object
//! API (`tests/clients/objects.py`), `mpi4py.futures` and mpi4py's own test suite (the
//! source release's `test/`, less [`SUITE_EXCLUDED`]) under skifrun with 1-4 ranks; and
//! a small crate on the `mpi` crate (rsmpi, `tests/clients/rsmpi`) built with the same
//! `MPICC` and run under skifrun.
//!
//! Both download and build for minutes, so they are `#[ignore]`d:
//! `cargo test -p skifmpi --test clients -- --ignored` (scripts/test.sh runs them). Each is
//! skipped with a message when what it needs is missing: the package index (PyPI,
//! crates.io), Python's `venv`, or libclang (rsmpi's bindings are made by bindgen; set
//! `LIBCLANG_PATH`). The mpi4py wheel is cached in the target directory, rebuilt when
//! `mpi.h` changes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use skifch_testing::{self as testing, have_cc};

const JOB: Duration = Duration::from_secs(300);
/// One run of mpi4py's test suite (about 2100 tests per rank; minutes on a loaded machine).
const SUITE: Duration = Duration::from_secs(1200);

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("mpi-lite/capi is two levels below the workspace")
}

fn clients() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

fn scratch() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("clients");
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

/// mpi-lite installed under the scratch directory (the library of this test profile).
fn prefix() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let lib = testing::c_library_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"),
            "skifmpi",
        );
        let p = scratch().join("prefix");
        let out = Command::new(root().join("scripts/install-mpi.sh"))
            .arg(&p)
            .arg("--libdir")
            .arg(lib)
            .arg("--skifrun")
            .arg(testing::skifrun_exe())
            .output()
            .expect("running install-mpi.sh");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        p
    })
}

fn skip(why: &str) {
    eprintln!("SKIPPED: {why}");
}

fn run_ok(cmd: &mut Command, what: &str) -> Result<String, String> {
    let o = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    } else {
        Err(format!(
            "{what}: {}\nstdout:\n{}\nstderr:\n{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

/// A hash of mpi.h: the cached wheel is rebuilt when the header changes.
fn header_tag() -> String {
    let h = std::fs::read(root().join("mpi-lite/include/mpi.h")).expect("mpi.h");
    let sum = h.iter().fold(0xcbf2_9ce4_8422_2325u64, |a, &b| {
        (a ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    format!("{sum:016x}")
}

/// The venv's Python with mpi4py built against mpi-lite (once per test binary), or
/// `None` (skipped, with the reason printed).
fn mpi4py_python() -> Option<PathBuf> {
    static PY: OnceLock<Option<PathBuf>> = OnceLock::new();
    PY.get_or_init(build_mpi4py).clone()
}

fn build_mpi4py() -> Option<PathBuf> {
    if !have_cc() {
        return None;
    }
    let dir = scratch();
    let venv = dir.join("venv");
    let py = venv.join("bin/python");
    if !py.exists() {
        if let Err(e) = run_ok(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            "python3 -m venv",
        ) {
            skip(&format!("no Python venv: {e}"));
            return None;
        }
    }
    let wheels = dir.join(format!("wheels-{}", header_tag()));
    let find = || {
        std::fs::read_dir(&wheels).ok().and_then(|d| {
            d.flatten().map(|e| e.path()).find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("mpi4py"))
            })
        })
    };
    if find().is_none() {
        // --no-cache-dir: pip's own wheel cache would hand back a build against an older mpi.h.
        let built = run_ok(
            Command::new(&py)
                .args([
                    "-m",
                    "pip",
                    "wheel",
                    "--no-cache-dir",
                    "--no-deps",
                    "--no-binary",
                    "mpi4py",
                    "-w",
                ])
                .arg(&wheels)
                .arg("mpi4py")
                .env("MPICC", prefix().join("bin/mpi/mpicc")),
            "pip wheel mpi4py",
        );
        if let Err(e) = built {
            let offline = [
                "No matching distribution",
                "Could not find",
                "onnection",
                "Network",
                "resolve",
            ];
            if offline.iter().any(|w| e.contains(w)) {
                skip(&format!("the package index cannot be reached: {e}"));
                return None;
            }
            panic!("building mpi4py against mpi-lite failed:\n{e}");
        }
    }
    let wheel = find().expect("the built wheel");
    run_ok(
        Command::new(&py)
            .args(["-m", "pip", "install", "--force-reinstall", "--no-deps"])
            .arg(&wheel),
        "pip install the wheel",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    Some(py)
}

#[test]
#[ignore = "downloads and builds mpi4py (minutes): cargo test -p skifmpi --test clients -- --ignored"]
fn mpi4py_object_api() {
    let Some(py) = mpi4py_python() else { return };
    for n in 1..=4 {
        let mut cmd = testing::skifrun_cmd(n, &[], &py);
        cmd.arg(clients().join("objects.py"));
        let out = testing::run_job(cmd, JOB).expect_ok(&format!("objects.py with {n} ranks"));
        for r in 0..n {
            assert!(
                out.contains(&format!("objects ok {r}/{n}")),
                "{n} ranks:\n{out}"
            );
        }
    }
}

#[test]
#[ignore = "downloads and builds mpi4py (minutes): cargo test -p skifmpi --test clients -- --ignored"]
fn mpi4py_futures() {
    let Some(py) = mpi4py_python() else { return };
    for n in [2, 3] {
        let mut cmd = testing::skifrun_cmd(n, &[], &py);
        cmd.args(["-m", "mpi4py.futures"])
            .arg(clients().join("futures.py"));
        let out = testing::run_job(cmd, JOB).expect_ok(&format!("mpi4py.futures with {n} ranks"));
        assert!(out.contains("futures ok"), "{out}");
    }
}

/// What mpi4py's test suite runs without, and why: each entry is `main.py`'s option (`-e`:
/// a module regex, `-x`: a test-name pattern) and the reason. Everything else runs; tests
/// of what mpi-lite does not provide skip themselves (mpi4py's suite skips on
/// `NotImplementedError` and on an unsupported call's error): MPI-IO (not declared), the
/// MPI-4 calls, spawning (`MPI4PY_TEST_SPAWN=0`: there is no `MPI_Comm_spawn` under
/// skifrun's fixed job).
const SUITE_EXCLUDED: &[(&str, &str, &str)] = &[(
    "-e",
    "test_dynproc",
    "dynamic processes: MPI_Open_port is MPI_ERR_SPAWN under skifrun's fixed job, and \
         the test then leaves the other ranks blocked in a receive (it skips itself only for \
         the vendors it knows)",
)];

/// The test directory of mpi4py's source release matching the installed version
/// (downloaded once), or `None` (skipped, with the reason printed).
fn mpi4py_tests(py: &Path) -> Option<PathBuf> {
    let version = run_ok(
        Command::new(py).args(["-c", "import mpi4py; print(mpi4py.__version__)"]),
        "mpi4py's version",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let version = version.trim();
    let dir = scratch().join(format!("mpi4py-{version}"));
    let test = dir.join("test");
    if test.join("main.py").exists() {
        return Some(test);
    }
    let sdist = scratch().join("sdist");
    let got = run_ok(
        Command::new(py)
            .args([
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "-d",
            ])
            .arg(&sdist)
            .arg(format!("mpi4py=={version}")),
        "pip download mpi4py's source release",
    );
    if let Err(e) = got {
        skip(&format!(
            "mpi4py's source release cannot be downloaded: {e}"
        ));
        return None;
    }
    let archive = sdist.join(format!("mpi4py-{version}.tar.gz"));
    run_ok(
        Command::new(py)
            .args([
                "-c",
                "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])",
            ])
            .arg(&archive)
            .arg(scratch()),
        "unpacking mpi4py's source release",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    Some(test)
}

/// The summary lines and failure reports of a unittest run (its full output is thousands
/// of lines).
fn suite_report(o: &testing::Outcome) -> String {
    let all = format!("{}\n{}", o.stdout, o.stderr);
    let mut keep = String::new();
    let mut in_report = false;
    for line in all.lines() {
        if line.starts_with("ERROR:") || line.starts_with("FAIL:") {
            in_report = true;
        }
        let summary = ["Ran ", "OK", "FAILED", "skifrun:"]
            .iter()
            .any(|p| line.starts_with(p));
        if in_report || summary {
            keep.push_str(line);
            keep.push('\n');
        }
        if line.starts_with("----------") && in_report && keep.len() > 40_000 {
            keep.push_str("[…]\n");
            in_report = false;
        }
    }
    format!("{}\n{keep}", o.status)
}

#[test]
#[ignore = "downloads and builds mpi4py (minutes): cargo test -p skifmpi --test clients -- --ignored"]
fn mpi4py_test_suite() {
    let Some(py) = mpi4py_python() else { return };
    let Some(tests) = mpi4py_tests(&py) else {
        return;
    };
    for n in 1..=4 {
        let mut cmd = testing::skifrun_cmd(n, &[], &py);
        cmd.arg(tests.join("main.py"))
            .current_dir(&tests)
            .env("MPI4PY_TEST_SPAWN", "0");
        for (opt, what, _why) in SUITE_EXCLUDED {
            cmd.args([opt, what]);
        }
        let o = testing::run_job(cmd, SUITE);
        let report = suite_report(&o);
        assert!(
            o.status.success(),
            "mpi4py's test suite with {n} ranks: {report}"
        );
        // Every rank ran the suite (unittest's summary, on stderr; the ranks' lines may
        // interleave, so counted as text). Success already means every rank's OK: skifrun
        // exits 0 only if every rank did, and main.py exits 1 on a failure or error.
        let ran = o.stderr.matches("Ran ").count();
        assert_eq!(ran, n as usize, "{n} ranks: {report}");
        eprintln!("mpi4py's test suite, {n} ranks: {report}");
    }
}

#[test]
#[ignore = "downloads and builds the mpi crate (minutes): cargo test -p skifmpi --test clients -- --ignored"]
fn rsmpi_crate_builds_and_runs() {
    if !have_cc() {
        return;
    }
    let libclang = std::env::var("LIBCLANG_PATH")
        .ok()
        .map(PathBuf::from)
        .or_else(|| {
            [
                "/usr/lib/llvm-14/lib",
                "/usr/lib/llvm-15/lib",
                "/usr/lib/llvm-16/lib",
                "/usr/lib/x86_64-linux-gnu",
            ]
            .iter()
            .map(PathBuf::from)
            .find(|d| d.join("libclang.so.1").exists() || d.join("libclang.so").exists())
        });
    let Some(libclang) = libclang else {
        return skip("rsmpi needs libclang for bindgen (install libclang1 and libclang-common-dev, or set LIBCLANG_PATH)");
    };
    // Per mpi.h: mpi-sys makes its bindings once per target directory (its build script
    // does not watch the header), so a changed header needs a fresh one.
    let target = scratch().join(format!("rsmpi-target-{}", header_tag()));
    let manifest = clients().join("rsmpi/Cargo.toml");
    let mut build = Command::new(env!("CARGO"));
    build
        .args(["build", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &target)
        .env("MPICC", prefix().join("bin/mpi/mpicc"))
        .env("LIBCLANG_PATH", &libclang)
        .env_remove("RUSTFLAGS");
    if let Err(e) = run_ok(&mut build, "cargo build (rsmpi)") {
        if e.contains("failed to get")
            || e.contains("Unable to update registry")
            || e.contains("failed to download")
        {
            return skip(&format!("crates.io cannot be reached: {e}"));
        }
        panic!("building a crate on rsmpi against mpi-lite failed:\n{e}");
    }
    let exe = target.join("debug/rsmpi-on-mpi-lite");
    for n in 1..=4 {
        let out = testing::run_job(testing::skifrun_cmd(n, &[], &exe), JOB)
            .expect_ok(&format!("rsmpi example with {n} ranks"));
        for r in 0..n {
            assert!(
                out.contains(&format!("rsmpi ok {r}/{n}")),
                "{n} ranks:\n{out}"
            );
        }
    }
}
