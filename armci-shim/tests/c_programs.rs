//! The C ABI from ARMCI C programs: compiles `tests/c/*.c` with `bin/skif-armcicc` (and
//! once against `libarmci.a`), runs them under `skifrun` with 2–4 ranks on the direct
//! path and on the message path (`ARMCI_SHIM_RMA=off`, and over `--driver fpga-model`,
//! which has no RMA), and checks the exit status (the programs exit non-zero on any wrong
//! value). Bad input must end the job with a message naming the call, nothing written.
//!
//! Needs a C compiler (`cc`); without one the tests are skipped with a message.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use skifch_testing::{self as testing, have_cc, Outcome, STATIC_LIBS};

/// Each job must finish within this (they take well under a second).
const JOB_TIMEOUT: Duration = Duration::from_secs(60);

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding `libarmci.so`/`.a`, built if missing or stale.
fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| skifch_testing::c_library_dir(&crate_dir().join("Cargo.toml"), "armci"))
}

/// Compiles `tests/c/<name>.c` with skif-armcicc (shared) or cc + the static library
/// (tests running at once may compile the same one: [`testing::build_exe`]).
fn compile(name: &str, shared: bool) -> PathBuf {
    let lib = lib_dir();
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("armci-c");
    std::fs::create_dir_all(&out_dir).expect("scratch directory");
    let exe = out_dir.join(format!("{name}-{}", if shared { "so" } else { "a" }));
    let src = crate_dir().join(format!("tests/c/{name}.c"));
    let flags = ["-Wall", "-Wextra", "-Werror", "-O1", "-g"];
    testing::build_exe(&exe, name, |out| {
        if shared {
            let mut c = Command::new(crate_dir().join("bin/skif-armcicc"));
            c.env("ARMCI_SHIM_LIBDIR", lib)
                .args(flags)
                .arg(&src)
                .arg("-o")
                .arg(out);
            c
        } else {
            let mut c = Command::new("cc");
            c.arg("-std=gnu11")
                .arg("-I")
                .arg(crate_dir().join("include"))
                .args(flags)
                .arg(&src)
                .arg("-o")
                .arg(out)
                .arg(lib.join("libarmci.a"))
                .args(STATIC_LIBS);
            c
        }
    })
}

/// ARMCI inside an MPI job (mpi-lite): `tests/c/with_mpi.c` against `libskifmpi.so` and
/// `libarmci.so`, 2 and 4 ranks over shm and 2 and 3 over fpga-model (libarmci uses the
/// driver libskifmpi joined with: `skifch_drivers::share`).
#[test]
fn armci_inside_an_mpi_job() {
    if !have_cc() {
        return;
    }
    let mpi = crate_dir().parent().expect("workspace").join("mpi-lite");
    let mpi_lib = skifch_testing::c_library_dir(&mpi.join("capi/Cargo.toml"), "skifmpi");
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("armci-c");
    std::fs::create_dir_all(&out_dir).expect("scratch directory");
    let exe = testing::build_exe(&out_dir.join("with_mpi"), "with_mpi", |out| {
        let mut c = Command::new("cc");
        c.args([
            "-std=gnu11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O1",
            "-g",
            "-I",
        ])
        .arg(crate_dir().join("include"))
        .arg("-I")
        .arg(mpi.join("include"))
        .arg(crate_dir().join("tests/c/with_mpi.c"))
        .arg("-o")
        .arg(out);
        for l in [lib_dir(), mpi_lib.as_path()] {
            c.arg(format!("-L{}", l.display()))
                .arg(format!("-Wl,-rpath,{}", l.display()));
        }
        c.args(["-lskifmpi", "-larmci"]);
        c
    });
    for (n, driver, mode) in [
        (2, "shm", ""),
        (4, "shm", ""),
        (2, "fpga-model", ""),
        (3, "fpga-model", ""),
        (3, "shm", "thread_comm"),
        (2, "fpga-model", "thread_comm"),
    ] {
        let o = run(&exe, n, driver, DIRECT, &[mode]);
        assert!(
            o.status.success(),
            "{n} ranks over {driver} {mode}: {}\n{}",
            o.status,
            o.stderr
        );
    }
    // ARMCI_Init_thread_comm over a part of the job, ARMCI_Init_thread above the MPI's
    // level: the job ends with the call named.
    for (mode, call, why) in [
        ("bad_comm", "ARMCI_Init_thread_comm", "not implemented"),
        ("bad_level", "ARMCI_Init_thread", "below the requested 3"),
    ] {
        let o = run(&exe, 2, "shm", DIRECT, &[mode]);
        assert!(
            !o.status.success()
                && o.stderr.contains(&format!("armci: {call}: "))
                && o.stderr.contains(why),
            "{mode}: {}\n{}",
            o.status,
            o.stderr
        );
    }
}

fn run(exe: &Path, n: u32, driver: &str, env: &[(&str, &str)], args: &[&str]) -> Outcome {
    let mut cmd = testing::skifrun_cmd(n, &["--driver", driver], exe);
    cmd.args(args).envs(env.iter().copied());
    testing::run_job(cmd, JOB_TIMEOUT)
}

const DIRECT: &[(&str, &str)] = &[];
const MESSAGES: &[(&str, &str)] = &[("ARMCI_SHIM_RMA", "off")];

/// Compiles `name` and runs it with 2 and 4 ranks on both paths, with 3 over the
/// fpga-model driver, then once statically linked.
fn check_program(name: &str) {
    if !have_cc() {
        eprintln!("no C compiler: skipped");
        return;
    }
    let exe = compile(name, true);
    for (n, driver, env) in [
        (2, "shm", DIRECT),
        (4, "shm", DIRECT),
        (2, "shm", MESSAGES),
        (4, "shm", MESSAGES),
        (3, "fpga-model", DIRECT),
    ] {
        let o = run(&exe, n, driver, env, &[]);
        assert!(
            o.status.success(),
            "{name} with {n} ranks over {driver} {env:?}: {}\nstdout:\n{}\nstderr:\n{}",
            o.status,
            o.stdout,
            o.stderr
        );
    }
    let stat = compile(name, false);
    let o = run(&stat, 2, "shm", DIRECT, &[]);
    assert!(
        o.status.success(),
        "{name} (static) with 2 ranks: {}\n{}",
        o.status,
        o.stderr
    );
}

#[test]
fn setup_and_memory() {
    check_program("setup_mem");
}

#[test]
fn contiguous_strided_vector_values() {
    check_program("strided");
}

#[test]
fn accumulate_rmw_mutexes() {
    check_program("acc_rmw_mutex");
}

/// Runs `bad_input <case>` on the direct and the message path and checks the message
/// names `call`, the status is non-zero and (where rank 0 could check) nothing was written.
fn bad_input(case: &str, call: &str, untouched: bool) {
    if !have_cc() {
        return;
    }
    let exe = compile("bad_input", true);
    for env in [DIRECT, MESSAGES] {
        let o = run(&exe, 2, "shm", env, &[case]);
        let what = format!("{case} {env:?}: {}\n{}", o.status, o.text());
        assert!(!o.status.success(), "{what}");
        assert!(o.stderr.contains(&format!("armci: {call}: ")), "{what}");
        assert!(!o.stdout.contains("returned"), "{what}");
        if untouched {
            assert!(o.stdout.contains("rank 0: untouched"), "{what}");
        }
    }
}

#[test]
fn bad_remote_addresses() {
    bad_input("outside", "ARMCI_Put", true);
    bad_input("not_allocated", "ARMCI_Put", true);
    bad_input("strided_outside", "ARMCI_GetS", true);
    bad_input("vector", "ARMCI_PutV", true);
}

#[test]
fn bad_strides_ranks_types() {
    bad_input("strides", "ARMCI_PutS", true);
    bad_input("rank", "ARMCI_Put", true);
    bad_input("negative_rank", "ARMCI_GetValueInt", true);
    bad_input("acc_type", "ARMCI_Acc", true);
}

#[test]
fn bad_scope_and_armci_error() {
    bad_input("bad_scope", "armci_msg_bcast_scope", false);
    bad_input("group_list", "ARMCI_Group_create", false);
    bad_input("group_outsider", "armci_msg_group_gop_scope", false);
    if !have_cc() {
        return;
    }
    let o = run(&compile("bad_input", true), 2, "shm", DIRECT, &["error"]);
    assert_eq!(o.code(), Some(7), "{}", o.text());
    assert!(
        o.stderr.contains("ARMCI_Error: the program gave up 7"),
        "{}",
        o.text()
    );
}

#[test]
fn msg_collectives() {
    check_program("msg");
}

/// SCOPE_NODE and SCOPE_MASTERS (before: the job ended with "not implemented").
#[test]
fn msg_node_and_master_scopes() {
    check_program("scopes");
}

#[test]
fn a_dead_rank_is_an_error_not_a_hang() {
    if !have_cc() {
        return;
    }
    let exe = compile("dead_peer", true);
    // The transfer loop, and (`spin`) a loop of the fast ways only: 8-byte Rmw and Get on
    // the lost rank's word, no put, no fence.
    let transfers: &[&str] = &["ARMCI_Get: ", "ARMCI_Put: ", "ARMCI_Fence: "];
    let spin: &[&str] = &["ARMCI_Rmw: peer lost", "ARMCI_Get: peer lost"];
    for (n, driver, env, args, calls) in [
        (2, "shm", DIRECT, &[][..], transfers),
        (3, "shm", MESSAGES, &[], transfers),
        (2, "fpga-model", DIRECT, &[], transfers),
        (2, "shm", DIRECT, &["spin"], spin),
        (3, "shm", DIRECT, &["spin"], spin),
        (2, "shm", MESSAGES, &["spin"], spin),
    ] {
        let o = run(&exe, n, driver, env, args);
        let what = format!(
            "{n} ranks over {driver} {env:?} {args:?}: {}\n{}",
            o.status,
            o.text()
        );
        assert!(!o.status.success(), "{what}");
        assert!(!o.stdout.contains("without an error"), "{what}");
        assert!(
            calls
                .iter()
                .any(|c| o.stderr.contains(&format!("armci: {c}"))),
            "{what}"
        );
    }
}

#[test]
fn a_computing_rank_does_not_stall_the_others() {
    if !have_cc() {
        return;
    }
    let exe = compile("progress", true);
    let thread = [("ARMCI_SHIM_PROGRESS_THREAD", "1")];
    let thread_msg = [
        ("ARMCI_SHIM_PROGRESS_THREAD", "1"),
        ("ARMCI_SHIM_RMA", "off"),
    ];
    for (n, driver, env) in [
        (3, "shm", &[][..]),
        (3, "shm", &thread_msg[..]),
        (3, "fpga-model", &thread[..]),
    ] {
        let o = run(&exe, n, driver, env, &[]);
        assert!(
            o.status.success(),
            "{driver} {env:?}: {}\n{}",
            o.status,
            o.text()
        );
    }
}

/// `ARMCI_Init_thread(MPI_THREAD_MULTIPLE)`: one-sided calls from two threads per rank at
/// once.
#[test]
fn calls_from_several_threads() {
    check_program("threads");
}

#[test]
fn groups_and_group_allocation() {
    check_program("groups");
}

/// ARMCI-MPI's `armcix.h`: group split and duplicate, mutex handles, progress.
#[test]
fn armcix_extensions() {
    check_program("armcix");
}

#[test]
fn smp_domains() {
    check_program("domain");
}

#[test]
fn point_to_point_messages() {
    check_program("p2p");
}

/// Every function `armci.h` and `message.h` declare (with mpi-lite's `mpi.h` first, so
/// the MPI ones too) links from `libarmci` under its name and its profiling name
/// (`ARMCI_X`/`PARMCI_X`, `armci_x`/`parmci_x`), and every one of `armcix.h` under its
/// name (ARMCI-MPI has no profiling names for them): a program taking the address of each.
#[test]
fn every_declared_call_exists_under_both_names() {
    if !have_cc() {
        return;
    }
    let mut names = std::collections::BTreeSet::new();
    let mut plain = std::collections::BTreeSet::new();
    for h in ["armci.h", "message.h", "armcix.h"] {
        let text = std::fs::read_to_string(crate_dir().join("include").join(h)).expect("header");
        let mut in_comment = false;
        for line in text.lines() {
            let t = line.trim_start();
            let comment_line = in_comment || t.starts_with("/*") || t.starts_with('*');
            if t.contains("/*") && !t.contains("*/") {
                in_comment = true;
            }
            if t.contains("*/") {
                in_comment = false;
            }
            if comment_line || t.starts_with('#') {
                continue;
            }
            // identifiers directly followed by '(' that are ARMCI names
            let b = t.as_bytes();
            for (i, _) in t.match_indices('(') {
                let start = b[..i]
                    .iter()
                    .rposition(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
                    .map_or(0, |p| p + 1);
                let id = &t[start..i];
                if id.to_ascii_lowercase().starts_with("armci_") {
                    names.insert(id.to_owned());
                } else if id.starts_with("ARMCIX_") {
                    plain.insert(id.to_owned());
                }
            }
        }
    }
    assert!(names.len() > 100, "parsed only {names:?}");
    assert_eq!(plain.len(), 8, "armcix.h: {plain:?}");
    let both: Vec<String> = names
        .iter()
        .flat_map(|n| {
            let p = if n.starts_with("ARMCI_") {
                format!("P{n}")
            } else {
                format!("p{n}")
            };
            [n.clone(), p]
        })
        .chain(plain.iter().cloned())
        .collect();
    let mpi = crate_dir()
        .parent()
        .expect("workspace")
        .join("mpi-lite/include");
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("armci-c");
    std::fs::create_dir_all(&out_dir).expect("scratch directory");
    let src = out_dir.join("all_names.c");
    let mut c = String::from(
        "#include <mpi.h>\n#include <armci.h>\n#include <armcix.h>\n#include <stdio.h>\n",
    );
    c.push_str("typedef void (*fn_t)(void);\nstatic fn_t all[] = {\n");
    for n in &both {
        c.push_str(&format!("    (fn_t)&{n},\n"));
    }
    c.push_str("};\nint main(void) {\n    int k = 0;\n");
    c.push_str("    for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++) k += all[i] != 0;\n");
    c.push_str("    printf(\"%d\\n\", k);\n    return 0;\n}\n");
    std::fs::write(&src, c).expect("writing the program");
    let lib = lib_dir();
    let exe = out_dir.join("all_names");
    let o = Command::new("cc")
        .args(["-std=gnu11", "-Wall", "-Werror", "-I"])
        .arg(crate_dir().join("include"))
        .arg("-I")
        .arg(&mpi)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-larmci")
        .output()
        .expect("running cc");
    assert!(
        o.status.success(),
        "declared names that do not link:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = Command::new(&exe).output().expect("running the program");
    assert_eq!(
        String::from_utf8_lossy(&r.stdout).trim(),
        both.len().to_string()
    );
}

/// Ranks on two "nodes" (network namespaces joined by a bridge, 2 ranks each, started by
/// `mpiexec.hydra`; the hierarchy of shm lanes and libfabric's `net` between them): the
/// message path by default (a sockets provider), and with `ARMCI_SHIM_RMA=transfers` the
/// node's ranks mapped and the other node's puts and gets by `FI_RMA` (`transfers.rs`),
/// each rank saying which (`ARMCI_SHIM_VERBOSE`). Skipped where namespaces cannot be made.
#[test]
fn programs_across_two_network_namespaces() {
    if !have_cc() {
        eprintln!("no C compiler: skipped");
        return;
    }
    let Some(nodes) = testing::NetNodes::create(2) else {
        return;
    };
    let limit = JOB_TIMEOUT + Duration::from_secs(60);
    for (env, path) in [
        (&[][..], "message path"),
        (
            &[("ARMCI_SHIM_RMA", "transfers")][..],
            "message (with transfers) path",
        ),
    ] {
        for name in ["setup_mem", "strided", "acc_rmw_mutex"] {
            let exe = compile(name, true);
            let Some(mut cmd) = nodes.hydra_cmd(&[2, 2]) else {
                return;
            };
            cmd.env("ARMCI_SHIM_VERBOSE", "1")
                .envs(env.iter().copied())
                .arg(&exe);
            let what = format!("{name} on 2 × 2 ranks {env:?}");
            let o = testing::run_job(cmd, limit);
            let said = o.stderr.matches(path).count();
            o.expect_ok(&what);
            assert_eq!(said, 4, "{what}: every rank names the {path}");
        }
    }
}
