//! The C ABI from GASNet-EX C programs: builds `tests/c/*.c` with the conduit's own
//! `skifch-seq.mak` fragment (written by `scripts/fragments.sh`, read by `make`), one
//! through `gasnet-skifch-par.pc` (pkg-config), runs them under `skifrun` with 2-4 ranks
//! on shm (direct path), shm with `GASNET_SHIM_RMA=off` (message path) and
//! `--driver fpga-model`, and checks the exit status (the programs exit non-zero on any
//! wrong value). Bad input and a dead rank must end the job with a message naming the
//! call, never hang. Needs `cc` and `make`; without them the tests are skipped.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use skifch_testing::{self as testing, have_cc, Outcome};

const JOB_TIMEOUT: Duration = Duration::from_secs(60);

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn out_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gasnet-c");
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

/// The fragments directory (made once per test binary from the library's directory).
fn fragments() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let lib = testing::c_library_dir(&crate_dir().join("Cargo.toml"), "gasnet");
        let out = out_dir().join(format!("fragments-{}", std::process::id()));
        let st = Command::new(crate_dir().join("scripts/fragments.sh"))
            .arg(&lib)
            .arg(&out)
            .status()
            .expect("fragments.sh");
        assert!(st.success(), "fragments.sh failed");
        out
    })
}

/// Compiles `tests/c/<name>.c` through a Makefile that includes `skifch-<mode>.mak`.
fn compile(name: &str, mode: &str) -> PathBuf {
    compile_with(name, mode, "")
}

/// As [`compile`], with `extra` flags (other libraries) on the command line.
fn compile_with(name: &str, mode: &str, extra: &str) -> PathBuf {
    let exe = out_dir().join(format!("{name}-{mode}"));
    let mk = out_dir().join(format!("{name}-{mode}.mk"));
    let mak = fragments().join(format!("skifch-conduit/skifch-{mode}.mak"));
    let src = crate_dir().join(format!("tests/c/{name}.c"));
    std::fs::write(
        &mk,
        format!(
            "include {}\nall:\n\t$(GASNET_CC) $(GASNET_CPPFLAGS) $(GASNET_CFLAGS) -Wall -Wextra -Werror -g {} -o $(OUT) $(GASNET_LDFLAGS) $(GASNET_LIBS) {extra}\n",
            mak.display(),
            src.display()
        ),
    )
    .expect("makefile");
    testing::build_exe(&exe, name, |out| {
        let mut c = Command::new("make");
        c.arg("-s")
            .arg("-f")
            .arg(&mk)
            .arg(format!("OUT={}", out.display()));
        c
    })
}

fn run(exe: &Path, n: u32, driver: &str, env: &[(&str, &str)], args: &[&str]) -> Outcome {
    let mut cmd = testing::skifrun_cmd(n, &["--driver", driver], exe);
    // Port 4 is this library's: the drivers' default of five ports per rank has it.
    cmd.args(args).envs(env.iter().copied());
    testing::run_job(cmd, JOB_TIMEOUT)
}

const DIRECT: &[(&str, &str)] = &[];
const MESSAGES: &[(&str, &str)] = &[("GASNET_SHIM_RMA", "off")];

fn check_program(name: &str, mode: &str) {
    check_runs(
        name,
        mode,
        &[
            (2, "shm", DIRECT),
            (4, "shm", DIRECT),
            (3, "shm", MESSAGES),
            (2, "fpga-model", DIRECT),
            (3, "fpga-model", DIRECT),
        ],
    );
}

/// A job: ranks, driver, environment.
type Run<'a> = (u32, &'a str, &'a [(&'a str, &'a str)]);

/// Builds `tests/c/<name>.c` and runs it as each job of `runs`.
fn check_runs(name: &str, mode: &str, runs: &[Run<'_>]) {
    if !have_cc() {
        eprintln!("no C compiler: skipped");
        return;
    }
    let exe = compile(name, mode);
    for &(n, driver, env) in runs {
        let o = run(&exe, n, driver, env, &[]);
        assert!(
            o.status.success(),
            "{name} with {n} ranks over {driver} {env:?}: {}\nstdout:\n{}\nstderr:\n{}",
            o.status,
            o.stdout,
            o.stderr
        );
    }
}

#[test]
fn core_active_messages() {
    check_program("am", "seq");
}

#[test]
fn rma_events_nbi_and_access_regions() {
    check_program("rma", "seq");
}

#[test]
fn collectives_teams_atomics_vis_and_tools() {
    check_program("ext", "seq");
}

/// The `*NB` collectives return before the other members enter them and progress while
/// a member only polls (`tests/c/nbcoll.c`: each case hangs if a call blocks).
#[test]
fn non_blocking_collectives_do_not_wait_for_the_team() {
    check_program("nbcoll", "seq");
}

/// A waiting rank sleeps only as `SKIFCH_WAIT` says: waiting for a collective (its event,
/// the split-phase barrier while one runs) it serves the AMs that arrive without sleeping
/// between them, and `GASNET_BLOCKUNTIL` does not nap under `spin` (`tests/c/waits.c`,
/// under `SKIFCH_WAIT=spin`: it counts the waiting ranks' sleeps).
/// Over shm only: over fpga-model a rank's register accesses wait on a futex for the
/// device model that `skifrun` hosts (a device's answer, not a back-off), which a loaded
/// machine makes them do often enough to count.
#[test]
fn waits_sleep_only_as_the_wait_policy_says() {
    const SPIN: &[(&str, &str)] = &[("SKIFCH_WAIT", "spin")];
    const SPIN_MESSAGES: &[(&str, &str)] = &[("SKIFCH_WAIT", "spin"), ("GASNET_SHIM_RMA", "off")];
    check_runs(
        "waits",
        "seq",
        &[
            (2, "shm", SPIN),
            (3, "shm", SPIN),
            (3, "shm", SPIN_MESSAGES),
        ],
    );
}

/// GASNet inside an MPI job (mpi-lite's `libskifmpi.so`), each library initialising first
/// in turn, over shm and over fpga-model (one driver per process: `skifch_drivers::share`).
#[test]
fn gasnet_inside_an_mpi_job() {
    if !have_cc() {
        return;
    }
    let mpi = crate_dir().parent().expect("workspace").join("mpi-lite");
    let mpi_lib = testing::c_library_dir(&mpi.join("capi/Cargo.toml"), "skifmpi");
    let extra = format!(
        "-I{} -L{lib} -Wl,-rpath,{lib} -lskifmpi",
        mpi.join("include").display(),
        lib = mpi_lib.display()
    );
    let exe = compile_with("with_mpi", "seq", &extra);
    for (n, driver) in [(2, "shm"), (3, "shm"), (2, "fpga-model"), (3, "fpga-model")] {
        for order in ["mpi-first", "gasnet-first"] {
            let o = run(&exe, n, driver, DIRECT, &[order]);
            assert!(
                o.status.success(),
                "{n} ranks over {driver}, {order}: {}",
                o.text()
            );
        }
    }
}

/// GASNET_PAR (the -par fragment): 4 threads per rank communicating at once.
#[test]
fn par_threads() {
    check_program("par", "par");
}

/// The progress thread serves a rank that computes without calling GASNet (the computing
/// rank counts what its handler served: no clock comparison, robust under load; without
/// the thread it fails after a minute, checked).
#[test]
fn progress_thread_serves_a_computing_rank() {
    if !have_cc() {
        return;
    }
    let exe = compile("progress", "seq");
    let on = ("GASNET_SHIM_PROGRESS_THREAD", "1");
    for (driver, env) in [
        ("shm", vec![on]),
        ("shm", vec![on, MESSAGES[0]]),
        ("fpga-model", vec![on]),
    ] {
        let o = run(&exe, 2, driver, &env, &[]);
        assert!(o.status.success(), "{driver} {env:?}: {}", o.text());
    }
}

/// gex_Segment_Create + BindSegment + PublishBoundSegment, with the library's memory and
/// with the client's (on both paths and over fpga-model).
#[test]
fn client_created_segments() {
    check_program("segcreate", "seq");
    if !have_cc() {
        return;
    }
    let exe = compile("segcreate", "seq");
    for (driver, env) in [("shm", DIRECT), ("shm", MESSAGES), ("fpga-model", DIRECT)] {
        let o = run(&exe, 2, driver, env, &["client"]);
        assert!(
            o.status.success(),
            "client memory over {driver} {env:?}: {}",
            o.text()
        );
    }
}

/// Endpoints made by `gex_EP_Create`, each with its handler table and bound segment,
/// addressed through `gex_TM_Pair` (AMs, replies, Longs, puts and gets), on 2-4 ranks over
/// both paths and fpga-model; a collective on a pair team and an index the target's
/// endpoint lacks are errors naming what is wrong.
#[test]
fn several_endpoints_per_client() {
    check_program("multiep", "seq");
    if !have_cc() {
        return;
    }
    let exe = compile("multiep", "seq");
    for env in [DIRECT, MESSAGES] {
        let o = run(&exe, 2, "shm", env, &["pair_barrier"]);
        let what = format!("{env:?}: {}\n{}", o.status, o.text());
        assert!(!o.status.success(), "{what}");
        assert!(
            o.stderr.contains("gasnet: gex_Coll_BarrierNB: ") && o.stderr.contains("gex_TM_Pair"),
            "{what}"
        );
        let o = run(&exe, 2, "shm", env, &["ep_unregistered"]);
        let what = format!("{env:?}: {}\n{}", o.status, o.text());
        assert!(!o.status.success(), "{what}");
        assert!(
            o.stderr
                .contains("handler index 222 is not registered on endpoint 1 of rank 1"),
            "{what}"
        );
        assert!(!o.stdout.contains("returned"), "{what}");
    }
}

#[test]
fn gasnet1_interface_and_legacy_barrier() {
    check_program("legacy", "seq");
}

/// `gasnet_exit(7)` on one rank ends every rank with 7.
#[test]
fn gasnet_exit_ends_the_job_with_its_code() {
    if !have_cc() {
        return;
    }
    let exe = compile("legacy", "seq");
    for driver in ["shm", "fpga-model"] {
        let o = run(&exe, 3, driver, DIRECT, &["exit7"]);
        assert_eq!(o.code(), Some(7), "{driver}: {}", o.text());
    }
}

/// `gasnetrun_skifch`, the conduit's launcher under GASNet's name: `-n` runs the job
/// (exit status the job's: `gasnet_exit(7)` gives 7), `-t` shows the skifrun command,
/// `-N` spreads the ranks over GASNET_SSH_SERVERS' hosts, bad options exit 2 saying why.
#[test]
fn gasnetrun_skifch_launches_with_gasnet_options() {
    if !have_cc() {
        return;
    }
    let exe = compile("legacy", "seq");
    let launcher = crate_dir().join("bin/gasnetrun_skifch");
    let cmd = |args: &[&str]| {
        let mut c = Command::new(&launcher);
        testing::clean_env(&mut c);
        c.env("SKIFRUN", testing::skifrun_exe())
            .env_remove("GASNET_SSH_SERVERS")
            .env_remove("GASNET_NODEFILE")
            .args(args);
        c
    };
    let e = exe.to_str().expect("a UTF-8 path");
    testing::run_job(cmd(&["-n", "3", "-E", "HOME", e]), JOB_TIMEOUT)
        .expect_ok("gasnetrun_skifch -n 3");
    let o = testing::run_job(cmd(&["-np", "2", e, "exit7"]), JOB_TIMEOUT);
    assert_eq!(o.code(), Some(7), "{}", o.text());
    let mut spread = cmd(&["-t", "-N", "3", "-n", "4", "--", "./prog", "-x"]);
    spread.env("GASNET_SSH_SERVERS", "a,b c");
    let o = testing::run_job(spread, JOB_TIMEOUT);
    assert!(
        o.status.success()
            && o.stderr
                .contains("skifrun --hosts a:2,b:1,c:1 -n 4 -- ./prog -x"),
        "{}",
        o.text()
    );
    for (args, why) in [
        (&["-n", "0", "./prog"][..], "-n needs a number"),
        (&["-q", "-n", "2", "./prog"][..], "unknown option -q"),
        (&["-n", "2"][..], "no program given"),
        (&["-N", "2", "-n", "2", "./prog"][..], "only 0 hosts"),
    ] {
        let o = testing::run_job(cmd(args), JOB_TIMEOUT);
        assert!(
            o.code() == Some(2) && o.stderr.contains(why),
            "{args:?}: {}",
            o.text()
        );
    }
}

fn bad_input(case: &str, call: &str) {
    let exe = compile("bad", "seq");
    for env in [DIRECT, MESSAGES] {
        let o = run(&exe, 2, "shm", env, &[case]);
        let what = format!("{case} {env:?}: {}\n{}", o.status, o.text());
        assert!(!o.status.success(), "{what}");
        assert!(o.stderr.contains(&format!("gasnet: {call}: ")), "{what}");
        assert!(!o.stdout.contains("returned"), "{what}");
    }
}

#[test]
fn bad_input_names_the_call() {
    if !have_cc() {
        return;
    }
    bad_input("long_outside", "gex_AM_RequestLong0");
    bad_input("unregistered", "gex_AM_RequestShort0");
    bad_input("medium_too_large", "gex_AM_RequestMedium0");
    bad_input("put_outside", "gex_RMA_PutBlocking");
    bad_input("get_outside", "gex_RMA_GetNB");
    bad_input("legacy_unregistered", "gasnet_AMRequestShort0");
    bad_input("reply_too_large", "gex_AM_ReplyMedium0");
}

/// `gasnett_fatalerror` prints its message and, with `GASNET_BACKTRACE=1`, a backtrace
/// (`gasnett_print_backtrace`), and ends the job with an error.
#[test]
fn fatalerror_prints_its_message_and_a_backtrace() {
    if !have_cc() {
        return;
    }
    let exe = compile("bad", "seq");
    let o = run(
        &exe,
        2,
        "shm",
        &[("GASNET_BACKTRACE", "1")],
        &["fatalerror"],
    );
    let what = format!("{}\n{}", o.status, o.text());
    assert!(!o.status.success(), "{what}");
    assert!(o.stderr.contains("*** FATAL ERROR: code 42"), "{what}");
    // backtrace_symbols_fd: one line per frame, each with its address in brackets
    assert!(o.stderr.matches("[0x").count() >= 2, "{what}");
}

#[test]
fn a_dead_rank_is_an_error_not_a_hang() {
    if !have_cc() {
        return;
    }
    let exe = compile("dead", "seq");
    for (n, driver, env, arg) in [
        (2, "shm", DIRECT, "am"),
        (3, "shm", MESSAGES, "am"),
        (2, "fpga-model", DIRECT, "am"),
        (2, "shm", DIRECT, "rma"),
        (3, "shm", MESSAGES, "rma"),
        (2, "fpga-model", DIRECT, "rma"),
    ] {
        let o = run(&exe, n, driver, env, &[arg]);
        let what = format!(
            "{n} ranks over {driver} {env:?}: {}\n{}",
            o.status,
            o.text()
        );
        assert!(!o.status.success(), "{what}");
        assert!(!o.stdout.contains("without an error"), "{what}");
        assert!(o.stderr.contains("gasnet: "), "{what}");
    }
}

/// The pkg-config fragment builds a program too (GASNET_PAR flags).
#[test]
fn pkg_config_fragment() {
    if !have_cc()
        || Command::new("pkg-config")
            .arg("--version")
            .output()
            .is_err()
    {
        return;
    }
    let pc = fragments().join("pkgconfig");
    let flags = |what: &str| {
        let o = Command::new("pkg-config")
            .env("PKG_CONFIG_PATH", &pc)
            .args([what, "gasnet-skifch-par"])
            .output()
            .expect("pkg-config");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let (cflags, libs) = (flags("--cflags"), flags("--libs"));
    assert!(cflags.contains("-DGASNET_PAR"), "{cflags}");
    let exe = testing::build_exe(&out_dir().join("am-pc"), "am-pc", |out| {
        let mut c = Command::new("cc");
        c.args(cflags.split_whitespace())
            .arg(crate_dir().join("tests/c/am.c"))
            .arg("-o")
            .arg(out)
            .args(libs.split_whitespace());
        c
    });
    let o = run(&exe, 2, "shm", DIRECT, &[]);
    assert!(o.status.success(), "{}", o.text());
}

/// Over the libfabric driver (`skifrun --driver ofi`, `tcp;ofi_rxm` on the loopback
/// interface: every rank reached by the fabric, RMA by transfers only): the message path
/// by default (a sockets provider), and with `GASNET_SHIM_RMA=transfers` segments exposed
/// and puts and gets by `FI_RMA` (`src/rma.rs`), each rank saying which
/// (`GASNET_SHIM_VERBOSE`). Across hosts: the next test.
#[test]
fn programs_over_ofi_by_messages_and_by_transfers() {
    if !have_cc() {
        eprintln!("no C compiler: skipped");
        return;
    }
    for (rma, path) in [
        ("default", "message path"),
        ("transfers", "message (with transfers) path"),
    ] {
        let env = [
            ("SKIFCH_OFI_PROVIDER", "tcp;ofi_rxm"),
            ("SKIFCH_OFI_DOMAIN", "lo"),
            ("GASNET_SHIM_RMA", rma),
            ("GASNET_SHIM_VERBOSE", "1"),
        ];
        for name in ["am", "rma", "ext"] {
            let o = run(&compile(name, "seq"), 3, "ofi", &env, &[]);
            let said = o.stderr.matches(path).count();
            let text = o.expect_ok(&format!("{name} over ofi, GASNET_SHIM_RMA={rma}"));
            assert_eq!(said, 3, "{name}: every rank names the {path}: {text}");
        }
    }
}

/// Across two "nodes" (network namespaces, 2 ranks each) under MPICH's `mpiexec.hydra`:
/// the hierarchy (the node's shm lanes, libfabric between the nodes), by messages and with
/// `GASNET_SHIM_RMA=transfers`, each rank naming its path; then `gasnet_exit(7)` on one
/// rank ends the ranks of both nodes with 7. Every job ends by `gasnet_exit`, which lets
/// the rank's messages leave, tells the other host and finalizes the PMI connection
/// (`AnyDriver::leave`): before, hydra SIGKILLed one node's ranks in about half the runs.
/// Skipped where namespaces cannot be made or hydra is missing.
#[test]
fn programs_across_two_network_namespaces_under_hydra() {
    if !have_cc() {
        eprintln!("no C compiler: skipped");
        return;
    }
    let Some(nodes) = testing::NetNodes::create(2) else {
        return;
    };
    let limit = JOB_TIMEOUT + Duration::from_secs(60);
    let hydra = |exe: &Path, args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = nodes.hydra_cmd(&[2, 2])?;
        cmd.envs(env.iter().copied()).arg(exe).args(args);
        Some(testing::run_job(cmd, limit))
    };
    for (rma, path) in [
        ("default", "message path"),
        ("transfers", "message (with transfers) path"),
    ] {
        let env = [("GASNET_SHIM_RMA", rma), ("GASNET_SHIM_VERBOSE", "1")];
        for name in ["am", "rma", "ext"] {
            let Some(o) = hydra(&compile(name, "seq"), &[], &env) else {
                return;
            };
            let said = o.stderr.matches(path).count();
            let what = format!("{name} on 2 × 2 ranks under hydra, GASNET_SHIM_RMA={rma}");
            let text = o.expect_ok(&what);
            assert!(text.contains(&format!("{name}: ok")), "{what}: {text}");
            assert_eq!(said, 4, "{what}: every rank names the {path}: {text}");
        }
    }
    let Some(o) = hydra(&compile("legacy", "seq"), &["exit7"], &[]) else {
        return;
    };
    assert_eq!(
        o.code(),
        Some(7),
        "gasnet_exit(7) across hosts: {}",
        o.text()
    );
}

/// Under Open MPI's `mpirun` (PMIx) across two "nodes" (network namespaces, 2 ranks each):
/// `gasnet_exit(7)` on the last rank ends the ranks of both nodes and the job with 7 (what
/// `mpirun` reports: the first rank's non-zero status), and a job whose ranks all call
/// `gasnet_exit(0)` ends with 0 (it leaves the PMIx server finalized: `mpirun` ended a job
/// with a rank that did not with 1). Nothing is left in the namespaces
/// (`NetNodes::openmpi_job`). Skipped where namespaces cannot be made, Open MPI is missing
/// or its `mpirun` cannot start jobs across the namespaces (said on stderr).
#[test]
fn exits_across_two_network_namespaces_under_mpirun() {
    if !have_cc() {
        return;
    }
    let Some(nodes) = testing::NetNodes::create(2) else {
        return;
    };
    let exe = compile("legacy", "seq");
    for (args, code) in [(&["exit7"][..], 7), (&[][..], 0)] {
        let Some(job) = nodes.openmpi_job(&[2, 2], &[], &exe, args, 120) else {
            return;
        };
        let o = &job.outcome;
        assert_eq!(
            o.code(),
            Some(code),
            "legacy {args:?} on 2 × 2 ranks under mpirun, {:?}: {}",
            job.elapsed,
            o.text()
        );
        if code == 0 {
            assert!(o.stdout.contains("legacy: ok"), "{}", o.text());
        }
    }
}
