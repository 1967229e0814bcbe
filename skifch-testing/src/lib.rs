//! Helpers for integration tests (of any crate of the workspace) that run real
//! multi-process jobs through `skifrun`. A dev-dependency only (`publish = false`): these
//! helpers panic on failure, which is right for a test and wrong for a shipped library.
//!
//! A test binary runs from `target/<profile>/deps/<test>-<hash>`; the launcher (crate
//! `skifrun`) and the examples of `skifch-drivers` live beside it in `target/<profile>/`. Cargo builds them only for
//! some invocations (a crate's own binaries for its own integration tests; examples for a
//! plain `cargo test`), so these helpers run `cargo build` for the wanted target, once per
//! test process, into the same target directory and profile. That is a quick no-op when the
//! binary is up to date, and it never hands a test a stale binary.
//!
//! ```no_run
//! use std::process::Command;
//! let status = Command::new(skifch_testing::skifrun_exe())
//!     .args(["-n", "2", "--"])
//!     .arg(skifch_testing::example_exe("launch_probe"))
//!     .arg("alltoall")
//!     .status()
//!     .unwrap();
//! assert!(status.success());
//! ```
mod launchers;
mod netns;
mod ompi;
mod slurm;
pub use launchers::{
    hydra_cmd, mpiexec_hydra, mpirun_openmpi, openmpi_cmd, ssh_stand_in, which, ScratchDir,
    LAUNCHER_JOB_LIMIT_SECS,
};
pub use netns::{Layout, NetNodes};
pub use ompi::{OpenmpiJob, OPENMPI_TIMED_OUT};
pub use slurm::Slurm;

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Path of the `skifrun` binary for the running test's profile, built if needed.
///
/// # Panics
/// If it cannot be built (the message has cargo's output). Meant for tests only.
pub fn skifrun_exe() -> PathBuf {
    let exe = profile_dir().join("skifrun");
    cargo_build(SKIFRUN_MANIFEST.as_ref(), &["--bin", "skifrun"], &exe);
    exe
}

/// Path of example `name` of `skifch-drivers` (`skifch-drivers/examples/<name>.rs`) for the
/// running test's profile, built if needed.
///
/// # Panics
/// As [`skifrun_exe`].
pub fn example_exe(name: &str) -> PathBuf {
    let exe = profile_dir().join("examples").join(name);
    cargo_build(DRIVERS_MANIFEST.as_ref(), &["--example", name], &exe);
    exe
}

const SKIFRUN_MANIFEST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../skifrun/Cargo.toml");
const DRIVERS_MANIFEST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../skifch-drivers/Cargo.toml");

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
        assert!(
            t0.elapsed() < limit,
            "nobody wrote a pid into {}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// `true` if a C compiler `cc` is on `PATH`; otherwise says once, on stderr, that the C
/// tests are skipped and why.
pub fn have_cc() -> bool {
    static CC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CC.get_or_init(|| {
        let ok = Command::new("cc")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("SKIPPED: no C compiler `cc` on PATH (install build-essential)");
        }
        ok
    })
}

/// Builds the executable `exe` with `cmd(out)`, a compiler invocation that writes to `out`:
/// into a scratch file of its own, then renamed into place. Tests running at once may build
/// the same program (a program's own test and its fault-injection or FPGA-model run), and
/// none may start a half-written file (`skifrun: cannot start …: Permission denied`).
/// Panics with the compiler's output if it fails (`what` names the program).
pub fn build_exe(exe: &Path, what: &str, cmd: impl FnOnce(&Path) -> Command) -> PathBuf {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = exe.with_extension(format!("tmp{}-{seq}", std::process::id()));
    let out = cmd(&tmp).output().expect("running the compiler");
    assert!(
        out.status.success(),
        "compiling {what} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&tmp, exe).expect("renaming the executable into place");
    exe.to_path_buf()
}

/// Native libraries that a `staticlib` of this workspace (`libskifch.a`, `libskifmpi.a`,
/// `libskifshmem.a`) needs when a C program links it, from
/// `cargo rustc --crate-type staticlib -- --print native-static-libs`.
pub const STATIC_LIBS: &[&str] = &["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"];

/// Environment that configures jobs and the libraries (by prefix). A test job starts
/// without any of it, so that a variable left in the caller's shell cannot change a test
/// (nor a PMI/PMIx server's variables, when the tests themselves run under a launcher).
const JOB_ENV: &[&str] = &[
    "SKIFCH_",
    "SKIFMPI_",
    "SKIFSHMEM_",
    "SHMEM_SYMMETRIC_SIZE",
    "PMI_",
    "PMIX_",
];

/// Removes the job and library configuration inherited from the test's environment.
pub fn clean_env(cmd: &mut Command) -> &mut Command {
    for (k, _) in std::env::vars_os() {
        if k.to_str()
            .is_some_and(|k| JOB_ENV.iter().any(|p| k.starts_with(p)))
        {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// `skifrun -n <n> <opts> -- <exe>` with a clean job environment ([`clean_env`]); add the
/// program's arguments and any environment to the returned command.
pub fn skifrun_cmd(n: u32, opts: &[&str], exe: &Path) -> Command {
    let mut cmd = Command::new(skifrun_exe());
    cmd.arg("-n")
        .arg(n.to_string())
        .args(opts)
        .arg("--")
        .arg(exe);
    clean_env(&mut cmd);
    cmd
}

/// How a job ended and what it printed.
#[derive(Debug)]
pub struct Outcome {
    /// How the job ended.
    pub status: ExitStatus,
    /// Everything it wrote to stdout.
    pub stdout: String,
    /// Everything it wrote to stderr.
    pub stderr: String,
}

impl Outcome {
    /// The exit code (`None`: ended by a signal).
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Everything the job printed: stdout, then stderr.
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// The job's stdout if it exited with status 0.
    ///
    /// # Panics
    /// Otherwise, with `what`, the status and everything the job printed.
    pub fn expect_ok(self, what: &str) -> String {
        assert!(
            self.status.success(),
            "{what}: {}\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self.stdout
    }
}

/// Runs `cmd` (stdin closed, stdout and stderr captured) and waits for it.
///
/// # Panics
/// If it cannot start, or it still runs after `timeout` (it is killed first; a `skifrun`
/// takes its ranks with it).
pub fn run_job(mut cmd: Command, timeout: Duration) -> Outcome {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let err = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for the job") {
            break s;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} still running after {timeout:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Outcome {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// The profile directory holding the C library `lib<name>.so` and `lib<name>.a` of the
/// package at `manifest` (a `cdylib` + `staticlib`, which Rust tests cannot link), built
/// if missing or stale (see [`cargo_build`]).
///
/// A library crate that is also a `cdylib` has an unhashed `deps/lib<name>.rlib`; this
/// build of it may replace the one the outer `cargo test` made, against dependencies of
/// another hash. Its doctests should therefore name the crates it is built on through its
/// own re-exports (`armci::skifch`), never as `extern` crates of their own.
pub fn c_library_dir(manifest: &Path, name: &str) -> PathBuf {
    let dir = profile_dir();
    for lib in [format!("lib{name}.so"), format!("lib{name}.a")] {
        cargo_build(manifest, &["--lib"], &dir.join(lib));
    }
    dir
}
