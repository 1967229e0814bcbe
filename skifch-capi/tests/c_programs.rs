//! The C ABI from C: compiles the programs of `tests/c/` and `examples/c/` against
//! `libskifch.so` (with an rpath) and `libskifch.a`, runs them under `skifrun` with 1, 2
//! and 4 ranks and several transport/wait settings, and checks the exit status (the
//! programs exit non-zero on any wrong value). Also checks that `include/skifch.h` agrees
//! with the library: `SKIFCH_CONT_SIZE`, the version, and the exported symbols.
//!
//! The library is a `cdylib`/`staticlib`, which Rust tests cannot link; it is built with
//! `cargo build` (same profile) when it is missing or older than this test. Needs a C
//! compiler (`cc`); without one the tests are skipped with a message.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use skifch_testing::{self as testing, have_cc, Outcome};

mod common;
use common::{compile, lib_dir, root, Link};

/// Each job must finish within this (they take well under a second).
const JOB_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `exe` under `skifrun -n <n> <opts>` (or alone for `n == 0`), killed after
/// [`JOB_TIMEOUT`].
fn run(exe: &Path, n: u32, opts: &[&str]) -> Outcome {
    let cmd = if n == 0 {
        let mut c = Command::new(exe);
        testing::clean_env(&mut c);
        c
    } else {
        testing::skifrun_cmd(n, opts, exe)
    };
    testing::run_job(cmd, JOB_TIMEOUT)
}

/// Runs and asserts a clean exit; returns stdout.
fn run_ok(exe: &Path, n: u32, opts: &[&str]) -> String {
    run(exe, n, opts).expect_ok(&format!("{} with {n} ranks {opts:?}", exe.display()))
}

/// Compiles `tests/c/<name>.c` both ways and runs it in each `(ranks, skifrun options)`
/// configuration with the shared library, then the first one with the static library.
fn check_program(name: &str, configs: &[(u32, &[&str])]) {
    if !have_cc() {
        return;
    }
    let src = format!("tests/c/{name}.c");
    let shared = compile(&src, Link::Shared);
    for &(n, opts) in configs {
        run_ok(&shared, n, opts);
    }
    let stat = compile(&src, Link::Static);
    let (n, opts) = configs[0];
    run_ok(&stat, n, opts);
}

#[test]
fn order_per_pair_with_held_messages() {
    check_program("order", &[(2, &[]), (4, &[]), (4, &["--lane-kb", "1"])]);
}

#[test]
fn all_to_all_two_ports() {
    check_program(
        "alltoall",
        &[
            (4, &[]),
            (1, &[]),
            (2, &["--lane-kb", "1"]),
            (4, &["--lane-kb", "1"]),
        ],
    );
}

#[test]
fn partial_sends_reassemble() {
    check_program(
        "partial",
        &[(2, &[]), (1, &[]), (4, &[]), (4, &["--lane-kb", "4"])],
    );
}

#[test]
fn back_pressure_without_loss_or_duplication() {
    check_program(
        "backpressure",
        &[(2, &[]), (1, &[]), (4, &["--wait", "block"])],
    );
}

#[test]
fn zero_length_messages() {
    check_program("zerolen", &[(2, &[]), (1, &[]), (4, &[])]);
}

#[test]
fn bad_arguments_and_lifecycle() {
    check_program("badargs", &[(2, &[]), (1, &[]), (4, &[])]);
}

#[test]
fn wait_timeout_and_wake_up() {
    check_program(
        "wait",
        &[
            (2, &[]),
            (1, &[]),
            (2, &["--wait", "block"]),
            (4, &["--wait", "spin"]),
        ],
    );
}

#[test]
fn peer_lost_wakes_waiters_with_epipe() {
    if !have_cc() {
        return;
    }
    for (link, n, opts) in [
        (Link::Shared, 2, &[][..]),
        (Link::Shared, 4, &["--wait", "block"][..]),
        (Link::Static, 3, &["--wait", "spin"][..]),
    ] {
        let exe = compile("tests/c/peerlost.c", link);
        let o = run(&exe, n, opts);
        let ctx = format!(
            "{link:?}, {n} ranks {opts:?}: {}\nstdout:\n{}\nstderr:\n{}",
            o.status, o.stdout, o.stderr
        );
        // Rank 1 killed itself: skifrun reports 128 + SIGKILL.
        assert_eq!(o.status.code(), Some(128 + libc::SIGKILL), "{ctx}");
        for r in (0..n).filter(|&r| r != 1) {
            assert!(
                o.stdout.contains(&format!("peerlost: rank {r} ok")),
                "rank {r} did not get EPIPE in time: {ctx}"
            );
        }
        assert!(!o.stderr.contains("FAIL"), "{ctx}");
    }
}

#[test]
fn hello_example_rings_a_greeting() {
    if !have_cc() {
        return;
    }
    let check = check_hello;
    let shared = compile("examples/c/hello.c", Link::Shared);
    check(&run_ok(&shared, 4, &[]), 4);
    check(&run_ok(&shared, 0, &[]), 1); // started alone: a 1-rank job
    let stat = compile("examples/c/hello.c", Link::Static);
    check(&run_ok(&stat, 3, &[]), 3);
}

/// Checks the greetings of `hello` with `n` ranks.
fn check_hello(out: &str, n: u32) {
    for r in 0..n {
        let from = (r + n - 1) % n;
        let line = format!(
            "rank {r} got \"Hello from rank {from} of {n}\" (22 bytes in 1 segment) from rank {from} port 0"
        );
        assert!(out.contains(&line), "missing {line:?} in:\n{out}");
    }
}

#[test]
fn programs_run_over_the_fpga_device_model() {
    // The same binaries, unchanged, over `skifrun --driver fpga-model`: the C ABI's job is
    // the run-time driver choice of `skifch_drivers::init`.
    if !have_cc() {
        return;
    }
    const FPGA: &[&str] = &["--driver", "fpga-model"];
    let hello = compile("examples/c/hello.c", Link::Shared);
    check_hello(&run_ok(&hello, 4, FPGA), 4);
    let stat = compile("examples/c/hello.c", Link::Static);
    check_hello(&run_ok(&stat, 2, FPGA), 2);
    for (name, n) in [
        ("order", 2),
        ("alltoall", 4),
        ("partial", 2),
        ("backpressure", 2),
        ("zerolen", 2),
    ] {
        // Not `badargs`: it expects a message sent to itself to be there at once, as shm
        // delivers during the send; the adapter delivers asynchronously (many-to-one with
        // 4 ranks and closed ports: skifch-drivers/tests/fpga_model.rs).
        let exe = compile(&format!("tests/c/{name}.c"), Link::Shared);
        run_ok(&exe, n, FPGA);
    }
}

/// The value of `#define <name> <value>` in the header.
fn header_define(header: &str, name: &str) -> String {
    let prefix = format!("#define {name} ");
    header
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("skifch.h lacks #define {name}"))
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

fn header() -> String {
    std::fs::read_to_string(root().join("include/skifch.h")).expect("reading include/skifch.h")
}

#[test]
fn header_constants_match_the_library() {
    let h = header();
    assert_eq!(
        header_define(&h, "SKIFCH_CONT_SIZE").parse::<usize>().ok(),
        Some(skifch::CONT_SIZE),
        "SKIFCH_CONT_SIZE in skifch.h must equal skifch::CONT_SIZE"
    );
    assert_eq!(
        header_define(&h, "SKIFCH_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MAJOR")
    );
    assert_eq!(
        header_define(&h, "SKIFCH_VERSION_MINOR"),
        env!("CARGO_PKG_VERSION_MINOR")
    );
}

#[test]
fn header_declares_exactly_the_exported_functions() {
    let h = header();
    let mut declared: Vec<String> = h
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("SkifCh_"))
        .map(String::from)
        .collect();
    // Names followed by '(' only (a declaration), not mentions in comments.
    declared.retain(|name| h.contains(&format!(" {name}(")) || h.contains(&format!("*{name}(")));
    declared.sort();
    declared.dedup();
    let so = lib_dir().join("libskifch.so");
    let out = match Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&so)
        .output()
    {
        Ok(o) if o.status.success() => o,
        _ => {
            eprintln!("SKIPPED: `nm` (binutils) is not available");
            return;
        }
    };
    let mut exported: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|s| s.starts_with("SkifCh_"))
        .map(String::from)
        .collect();
    exported.sort();
    assert_eq!(
        declared,
        exported,
        "skifch.h vs symbols of {}",
        so.display()
    );
    assert_eq!(
        exported.len(),
        13,
        "the spec's C ABI has 13 functions: {exported:?}"
    );
}

#[test]
fn header_compiles_as_strict_c_and_as_cpp() {
    if !have_cc() {
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c");
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let src = dir.join("header_only.c");
    std::fs::write(
        &src,
        "#include \"skifch.h\"\n#include \"skifch.h\"\n\
         int main(void) { struct iovec c[SKIFCH_CONT_SIZE]; int n; netaddr_t s;\n\
         return (int)SkifCh_RecvFrom((struct SkifCh *)0, c, &n, &s) + SKIFCH_VERSION_MAJOR; }\n",
    )
    .expect("writing a test source");
    let inc = root().join("include");
    for (compiler, std) in [("cc", "-std=c99"), ("c++", "-std=c++11")] {
        let mut cmd = Command::new(compiler);
        cmd.args([
            std,
            "-pedantic",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-fsyntax-only",
        ])
        .arg("-I")
        .arg(&inc);
        if compiler == "c++" {
            cmd.args(["-x", "c++"]);
        }
        match cmd.arg(&src).output() {
            Ok(o) => assert!(
                o.status.success(),
                "skifch.h with {compiler} {std}:\n{}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(_) if compiler == "c++" => eprintln!("SKIPPED: no C++ compiler `c++`"),
            Err(e) => panic!("running {compiler}: {e}"),
        }
    }
}

#[test]
fn init_never_closes_a_descriptor_it_does_not_own() {
    // Issue 16, defect 1: SKIFCH_FD / SKIFCH_FPGA_FD naming stdin/stdout/stderr, the
    // program's own file, a pipe or a memfd that is not a segment: Init fails with a
    // reason and leaves the descriptor open (the program checks each one after the call).
    if !have_cc() {
        return;
    }
    for link in [Link::Shared, Link::Static] {
        let exe = compile("tests/c/badfd.c", link);
        let o = run(&exe, 0, &[]);
        let ctx = format!("{link:?}:\n{}", o.text());
        assert!(
            o.status.success() && o.stdout.contains("badfd: ok"),
            "{ctx}"
        );
        for why in [
            "SKIFCH_FD=1 is standard output",
            "SKIFCH_FPGA_FD=0 is standard input",
            "is not a memfd with a sealed size",
            "has the wrong header",
            "SKIFCH_FD=1000 is not an open descriptor",
            "left open",
        ] {
            assert!(o.stderr.contains(why), "no reason {why:?} on stderr: {ctx}");
        }
    }
}

#[test]
fn init_says_why_an_environment_value_is_out_of_range() {
    // Issue 16, defect 8: EINVAL with no reason on stderr for out-of-range SKIFCH_PORTS /
    // SKIFCH_LANE_KB, though skifch.h promises one.
    if !have_cc() {
        return;
    }
    let exe = compile("tests/c/initenv.c", Link::Shared);
    for (var, value, why) in [
        (
            "SKIFCH_PORTS",
            "0",
            "SKIFCH_PORTS=0: ports per rank must be 1..=64",
        ),
        (
            "SKIFCH_PORTS",
            "65",
            "SKIFCH_PORTS=65: ports per rank must be 1..=64",
        ),
        (
            "SKIFCH_LANE_KB",
            "3",
            "SKIFCH_LANE_KB=3: the lane size in KiB must be a power of two in 1..=262144",
        ),
        (
            "SKIFCH_LANE_KB",
            "1048576",
            "SKIFCH_LANE_KB=1048576: the lane size",
        ),
    ] {
        let mut cmd = Command::new(&exe);
        testing::clean_env(&mut cmd).env(var, value);
        let o = testing::run_job(cmd, JOB_TIMEOUT);
        let ctx = format!("{var}={value}:\n{}", o.text());
        assert!(
            o.status.success() && o.stdout.contains("initenv: EINVAL"),
            "{ctx}"
        );
        let line = o
            .stderr
            .lines()
            .find(|l| l.starts_with("skifch: SkifCh_Init: "));
        assert!(line.is_some_and(|l| l.contains(why)), "{ctx}");
    }
}
