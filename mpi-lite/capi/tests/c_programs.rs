//! mpi-lite from C: compiles the programs of `mpi-lite/tests/c/` with `bin/skif-mpicc`
//! (shared and static library), runs them under `skifrun` with 2, 3 and 4 ranks and checks
//! the exit status (the programs exit non-zero on any wrong value). Also checks that
//! `mpi.h` declares exactly the exported `MPI_`/`PMPI_` functions and compiles as C and C++.
//!
//! The library is a `cdylib`/`staticlib`, built with `cargo build` (same profile) through
//! the workspace's test-build helper. Needs a C compiler (`cc`); without one the tests
//! are skipped with a message.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use skifch_testing::{self as testing, have_cc, Outcome};

mod common;
use common::{compile, lib_dir, mpi_root, JOB_TIMEOUT};

fn run(exe: &Path, n: u32, env: &[(&str, &str)]) -> Outcome {
    let mut cmd = testing::skifrun_cmd(n, &[], exe);
    cmd.envs(env.iter().copied());
    testing::run_job(cmd, JOB_TIMEOUT)
}

fn run_ok(exe: &Path, n: u32, env: &[(&str, &str)]) -> String {
    run(exe, n, env).expect_ok(&format!("{} with {n} ranks {env:?}", exe.display()))
}

/// Compiles `name` and runs it with 2, 3 and 4 ranks (shared library), then with 2 ranks
/// linked statically.
fn check(name: &str, env: &[(&str, &str)]) {
    if !have_cc() {
        return;
    }
    let exe = compile(name, false);
    for n in [2, 3, 4] {
        run_ok(&exe, n, env);
    }
    run_ok(&compile(name, true), 2, env);
}

#[test]
fn point_to_point() {
    check("p2p", &[]);
}

#[test]
fn point_to_point_under_thread_multiple() {
    // The same program on the paths of MPI_THREAD_MULTIPLE (no direct receive, waits that
    // release the library's lock).
    check("p2p", &[("MPI_TEST_THREAD_LEVEL", "3")]);
}

#[test]
fn point_to_point_all_rendezvous() {
    // Eager limit 0: every message (even 4 bytes) goes RTS/CTS/DATA.
    if !have_cc() {
        return;
    }
    let exe = compile("p2p", false);
    run_ok(&exe, 3, &[("SKIFMPI_EAGER", "0")]);
}

#[test]
fn point_to_point_and_collectives_over_the_fault_injector() {
    // SKIFCH_FAULT wraps the job's driver (skifch_drivers::init): C programs unchanged.
    if !have_cc() {
        return;
    }
    let faults = [(
        "SKIFCH_FAULT",
        "seed=2,wouldblock=0.2,recv_wouldblock=every:3,slow=every:200,recv_delay=100",
    )];
    run_ok(&compile("p2p", false), 3, &faults);
    run_ok(&compile("coll", false), 3, &faults);
}

#[test]
fn environment_and_remaining_calls() {
    check("env", &[]);
}

#[test]
fn binding_can_be_turned_off_and_a_bad_policy_is_an_error() {
    if !have_cc() {
        return;
    }
    let exe = compile("env", false);
    run_ok(&exe, 2, &[("SKIFMPI_BIND", "none")]);
    let o = run(&exe, 2, &[("SKIFMPI_BIND", "sockets")]);
    let ctx = format!("{}\nstderr:\n{}", o.status, o.stderr);
    assert!(!o.status.success(), "{ctx}");
    assert!(o.stderr.contains("SKIFMPI_BIND=\"sockets\""), "{ctx}");
}

#[test]
fn collectives() {
    check("coll", &[]);
}

#[test]
fn attribute_caching() {
    check("attrs", &[]);
}

#[test]
fn matched_probe() {
    check("mprobe", &[]);
    if have_cc() {
        // Every message rendezvous: the CTS goes when the held message is received.
        run_ok(&compile("mprobe", false), 3, &[("SKIFMPI_EAGER", "0")]);
    }
}

#[test]
fn deferred_receives() {
    check("deferred", &[]);
    // Every receive deferred, whatever the runs before it met (`auto` stops deferring
    // after runs posted by other calls).
    check("deferred", &[("SKIFMPI_DEFER", "always")]);
    if have_cc() {
        let exe = compile("deferred", false);
        // Every message rendezvous: the drain hands every one to the general path.
        run_ok(
            &exe,
            2,
            &[("SKIFMPI_EAGER", "0"), ("SKIFMPI_DEFER", "always")],
        );
        run_ok(&exe, 3, &[("SKIFMPI_DEFER", "off")]);
        let out = run(&exe, 2, &[("SKIFMPI_DEFER", "sometimes")]);
        assert!(
            !out.status.success() && out.stderr.contains("SKIFMPI_DEFER=\"sometimes\""),
            "a bad SKIFMPI_DEFER must fail MPI_Init naming it: {}",
            out.stderr
        );
    }
}

/// The point-to-point, probe, persistent, nonblocking-collective and generalized-request
/// programs with every byte receive deferred: each call that meets a deferred receive
/// must see it posted.
#[test]
fn deferred_receives_everywhere() {
    for name in [
        "p2p",
        "mprobe",
        "persist",
        "nbc",
        "greq",
        "intercomm",
        "userops",
    ] {
        check(name, &[("SKIFMPI_DEFER", "always")]);
    }
}

#[test]
fn persistent_requests() {
    check("persist", &[]);
}

#[test]
fn nonblocking_collectives() {
    check("nbc", &[]);
    if have_cc() {
        let exe = compile("nbc", false);
        run_ok(&exe, 1, &[]);
        run_ok(&exe, 3, &[("SKIFMPI_EAGER", "0")]);
    }
}

/// Context ids: `MPI_Comm_idup` started in different orders and behind messages, many at
/// once; more communicator creations and frees than there are ids (33 000 with 2 ranks,
/// 2 000 with 3 and 4 and under `MPI_THREAD_MULTIPLE`).
#[test]
fn context_ids_idup_and_reuse() {
    if !have_cc() {
        return;
    }
    let exe = compile("ctxids", false);
    let job = |n: u32, env: &[(&str, &str)], cycles: Option<&str>| {
        let mut cmd = testing::skifrun_cmd(n, &[], &exe);
        cmd.envs(env.iter().copied()).args(cycles);
        testing::run_job(cmd, Duration::from_secs(300))
            .expect_ok(&format!("ctxids with {n} ranks {env:?} {cycles:?}"));
    };
    job(2, &[], None);
    job(3, &[], Some("2000"));
    job(4, &[], Some("2000"));
    job(3, &[("MPI_TEST_THREAD_LEVEL", "3")], Some("2000"));
}

#[test]
fn communicator_breadth_and_no_dynamic_processes() {
    check("commx", &[]);
}

/// Intercommunicators: even/odd world ranks as two groups (different sizes with 3 ranks).
#[test]
fn intercommunicators() {
    check("intercomm", &[]);
}

#[test]
fn neighbourhood_collectives() {
    check("neighbor", &[]);
    if have_cc() {
        run_ok(&compile("neighbor", false), 1, &[]);
    }
}

#[test]
fn datatypes() {
    check("types", &[]);
}

#[test]
fn groups_communicators_topologies() {
    check("comms", &[]);
}

#[test]
fn derived_datatypes_padded_constant_memory_and_huge_counts() {
    check("dtypes", &[]);
}

#[test]
fn one_sided_windows_operations_and_synchronisation() {
    check("rma", &[("RMA_TEST_PATH", "direct")]);
}

#[test]
fn one_sided_on_the_message_path_forced_and_over_fpga_model() {
    if !have_cc() {
        return;
    }
    let exe = compile("rma", false);
    for n in [2, 3, 4] {
        run_ok(
            &exe,
            n,
            &[("SKIFMPI_RMA", "messages"), ("RMA_TEST_PATH", "messages")],
        );
    }
    for n in [2, 4] {
        let mut cmd = testing::skifrun_cmd(n, &["--driver", "fpga-model"], &exe);
        cmd.env("RMA_TEST_PATH", "messages");
        testing::run_job(cmd, JOB_TIMEOUT).expect_ok(&format!("rma over fpga-model, {n} ranks"));
    }
    // Without the lock aggregation (its measuring switch): every lock requested at once.
    let env = [("SKIFMPI_RMA", "messages"), ("SKIFMPI_RMA_AGGREGATE", "0")];
    run_ok(&exe, 3, &env);
}

/// Lock epochs: lock + operations + unlock aggregated into one message on the message path
/// (counted), and exclusive/shared locks under contention, on the direct path, forced
/// messages and over fpga-model.
#[test]
fn one_sided_lock_aggregation_and_contention_on_both_paths() {
    on_every_path("rmalock");
}

/// A lock_all epoch's shared lock, sent to its target after a writer asked there, is not
/// queued behind that writer while another lock_all holder of the target waits for it
/// (the deadlock rmalock met about 1 run in 60 on 4 ranks; 4 ranks here too).
#[test]
fn one_sided_lock_all_not_held_back_by_a_later_writer() {
    on_every_path("rmalockall");
}

/// Assertions: bad values are MPI_ERR_ASSERT; NOPRECEDE fences and NOCHECK post/start
/// save their messages (counted), with the data checked.
#[test]
fn one_sided_assertions_validated_and_honoured_on_both_paths() {
    on_every_path("rmaassert");
}

/// Runs `name` on the direct path (2-4 ranks, and static), the forced message path (2-4)
/// and over fpga-model (2 and 4), telling it the path expected (`RMA_TEST_PATH`).
fn on_every_path(name: &str) {
    if !have_cc() {
        return;
    }
    check(name, &[("RMA_TEST_PATH", "direct")]);
    let exe = compile(name, false);
    for n in [2, 3, 4] {
        let mut cmd = testing::skifrun_cmd(n, &[], &exe);
        cmd.envs([("SKIFMPI_RMA", "messages"), ("RMA_TEST_PATH", "messages")]);
        testing::run_job(cmd, JOB_TIMEOUT)
            .expect_ok(&format!("{name} on the message path, {n} ranks"));
    }
    for n in [2, 4] {
        let mut cmd = testing::skifrun_cmd(n, &["--driver", "fpga-model"], &exe);
        cmd.env("RMA_TEST_PATH", "messages");
        testing::run_job(cmd, JOB_TIMEOUT).expect_ok(&format!("{name} over fpga-model, {n} ranks"));
    }
}

/// The direct path's short cuts (every single-instruction accumulate and compare-and-swap
/// checked, atomic against the general path on one element; errors, epochs and a reused
/// window handle still caught), and the same program on the message path.
#[test]
fn one_sided_direct_short_cuts_atomic_and_checked_on_both_paths() {
    on_every_path("rmadirect");
}

/// Derived target types: described to each target once on the message path (counted),
/// forgotten at MPI_Type_free, never stale across types made and freed in a loop.
#[test]
fn one_sided_target_types_described_once_on_both_paths() {
    on_every_path("rmatypes");
}

/// PSCW and MPI_Win_test, the request forms, derived origin types, shared windows: direct,
/// forced messages, and over fpga-model (which cannot share memory: MPI_ERR_RMA_SHARED).
#[test]
fn one_sided_pscw_requests_and_shared_windows_on_both_paths() {
    if !have_cc() {
        return;
    }
    check("rma2", &[]);
    let exe = compile("rma2", false);
    for n in [2, 3, 4] {
        run_ok(&exe, n, &[("SKIFMPI_RMA", "messages")]);
    }
    for n in [2, 4] {
        let mut cmd = testing::skifrun_cmd(n, &["--driver", "fpga-model"], &exe);
        cmd.env("RMA_TEST_NO_SHARED", "1");
        testing::run_job(cmd, JOB_TIMEOUT).expect_ok(&format!("rma2 over fpga-model, {n} ranks"));
    }
}

#[test]
fn generalized_requests() {
    check("greq", &[]);
}

#[test]
fn user_defined_reductions() {
    check("userops", &[]);
}

#[test]
fn error_classes_codes_and_user_handlers() {
    check("errclass", &[]);
}

#[test]
fn bad_input_returns_error_classes() {
    check("errors", &[]);
}

#[test]
fn large_zero_size_self_and_unexpected_messages() {
    check("big", &[]);
}

#[test]
fn dead_peer_is_an_error_not_a_hang() {
    if !have_cc() {
        return;
    }
    let exe = compile("peerdead", false);
    // Also under MPI_THREAD_MULTIPLE, whose waits are the engine's own (not proto's).
    let multiple = [("MPI_TEST_THREAD_LEVEL", "3")];
    for (n, env) in [
        (2, &[][..]),
        (3, &[]),
        (4, &[]),
        (2, &multiple),
        (4, &multiple),
    ] {
        let o = run(&exe, n, env);
        let ctx = format!(
            "{n} ranks {env:?}: {}\nstdout:\n{}\nstderr:\n{}",
            o.status, o.stdout, o.stderr
        );
        // Rank 1 exited with status 3: the job's status.
        assert_eq!(o.status.code(), Some(3), "{ctx}");
        for r in (0..n).filter(|&r| r != 1) {
            assert!(
                o.stdout.contains(&format!("peerdead: rank {r} ok")),
                "rank {r} did not get an error: {ctx}"
            );
        }
    }
}

/// Passive target while the target sleeps outside MPI: the epoch completes (during the
/// sleep on the direct path, after it on the message path without a progress thread) with
/// the data right.
#[test]
fn one_sided_passive_target_while_the_target_computes() {
    if !have_cc() {
        return;
    }
    let exe = compile("rmapassive", false);
    for n in [2, 3] {
        let out = run_ok(&exe, n, &[]);
        assert!(out.contains("rmapassive: rank 1: epoch done"), "{out}");
        run_ok(&exe, n, &[("SKIFMPI_RMA", "messages")]);
    }
    let cmd = testing::skifrun_cmd(2, &["--driver", "fpga-model"], &exe);
    testing::run_job(cmd, JOB_TIMEOUT).expect_ok("rmapassive over fpga-model");
}

/// A target that computes until its origins' epochs have changed its window (no MPI call
/// meanwhile): they complete on the direct path, and on the message path with the
/// asynchronous progress thread (forced messages and fpga-model); other programs (one and
/// many threads, the direct path's short cuts) run unchanged with the thread; a bad `SKIFMPI_ASYNC_PROGRESS` value fails `MPI_Init`.
#[test]
fn one_sided_asynchronous_progress_while_the_target_computes() {
    if !have_cc() {
        return;
    }
    let exe = compile("rmaprogress", false);
    let on = ("SKIFMPI_ASYNC_PROGRESS", "1");
    for n in [2, 3] {
        run_ok(&exe, n, &[]);
    }
    for n in [2, 3, 4] {
        run_ok(&exe, n, &[on, ("SKIFMPI_RMA", "messages")]);
    }
    let mut cmd = testing::skifrun_cmd(3, &["--driver", "fpga-model"], &exe);
    cmd.env(on.0, on.1);
    testing::run_job(cmd, JOB_TIMEOUT).expect_ok("rmaprogress over fpga-model");
    run_ok(
        &compile("rma", false),
        3,
        &[on, ("SKIFMPI_RMA", "messages")],
    );
    run_ok(&compile("p2p", false), 3, &[on]);
    // The thread shares the engine, not the state: the direct path's short cuts of the
    // bound thread (MPI_THREAD_SINGLE) and a program of many threads run beside it.
    run_ok(
        &compile("rmadirect", false),
        2,
        &[on, ("RMA_TEST_PATH", "direct")],
    );
    run_ok(&compile("mt", false), 2, &[on]);
    let o = run(&exe, 2, &[("SKIFMPI_ASYNC_PROGRESS", "yes")]);
    let ctx = format!("{}\nstderr:\n{}", o.status, o.stderr);
    assert!(!o.status.success(), "{ctx}");
    assert!(o.stderr.contains("SKIFMPI_ASYNC_PROGRESS=\"yes\""), "{ctx}");
}

/// A rank dies holding a window lock: the others' MPI_Win_lock fails within a second on
/// the direct path, the forced message path and over fpga-model.
#[test]
fn one_sided_peer_dead_inside_an_epoch_is_an_error_within_a_second() {
    if !have_cc() {
        return;
    }
    let exe = compile("rmadead", false);
    let msgs = [("SKIFMPI_RMA", "messages")];
    for (n, env, opts) in [
        (2, &[][..], &[][..]),
        (4, &[], &[]),
        (3, &msgs, &[]),
        (3, &[], &["--driver", "fpga-model"][..]),
    ] {
        let mut cmd = testing::skifrun_cmd(n, opts, &exe);
        cmd.envs(env.iter().copied());
        let o = testing::run_job(cmd, JOB_TIMEOUT);
        let ctx = format!(
            "{n} ranks {env:?} {opts:?}: {}\nstdout:\n{}\nstderr:\n{}",
            o.status, o.stdout, o.stderr
        );
        assert_eq!(o.status.code(), Some(3), "{ctx}");
        for r in (0..n).filter(|&r| r != 1) {
            assert!(
                o.stdout.contains(&format!("rmadead: rank {r} ok")),
                "rank {r}: {ctx}"
            );
        }
    }
}

#[test]
fn fatal_messages_after_a_peer_loss_name_the_rank_in_one_line() {
    if !have_cc() {
        return;
    }
    let exe = compile("peerdead", false);
    for _ in 0..3 {
        let mut cmd = testing::skifrun_cmd(3, &[], &exe);
        cmd.arg("fatal");
        let o = testing::run_job(cmd, JOB_TIMEOUT);
        let ctx = format!("{}\nstderr:\n{}", o.status, o.stderr);
        // MPI_Finalize fails once the state is gone: the message named "rank -1".
        assert!(!o.stderr.contains("rank -1"), "{ctx}");
        for line in o.stderr.lines().filter(|l| l.contains("mpi-lite:")) {
            // One write per message: never two messages on a line, never a cut one.
            assert!(line.starts_with("mpi-lite: rank "), "{ctx}");
            assert!(line.ends_with("aborting the job)"), "{ctx}");
            assert_eq!(line.matches("mpi-lite:").count(), 1, "{ctx}");
        }
    }
}

#[test]
fn errors_are_fatal_by_default_and_name_the_call() {
    if !have_cc() {
        return;
    }
    let exe = compile("fatal", false);
    for (arg, call, class) in [
        ("rank", "MPI_Send", 6),
        ("win", "MPI_Put", 45),
        ("spawn", "MPI_Comm_spawn", 42),
    ] {
        let mut cmd = testing::skifrun_cmd(3, &[], &exe);
        cmd.arg(arg);
        let o = testing::run_job(cmd, JOB_TIMEOUT);
        let ctx = format!(
            "{arg}: {}\nstdout:\n{}\nstderr:\n{}",
            o.status, o.stdout, o.stderr
        );
        // The failing rank exits with the error class; skifrun ends the others.
        assert_eq!(o.status.code(), Some(class), "{ctx}");
        assert!(o.stderr.contains(&format!("rank 0: {call}:")), "{ctx}");
        assert!(o.stderr.contains("MPI_ERRORS_ARE_FATAL"), "{ctx}");
        assert!(
            !o.stdout.contains("returned from the failing call"),
            "{ctx}"
        );
    }
}

/// `MPI_Abort(MPI_COMM_WORLD, 7)` on the last rank while the others wait for it in a
/// receive ends every rank with 7 and the job with 7, the others quietly (no error of
/// their own, though their receive fails on the aborting rank's loss: the driver's exit
/// request tells them the job is ending), over shm (2 and 4 ranks, shared and static),
/// fpga-model and ofi (where peers learn the request by message). Survivors get a long
/// `--grace`: each must end by itself and record its status.
#[test]
fn abort_ends_every_rank_with_its_code() {
    if !have_cc() {
        return;
    }
    let ofi = [
        "--driver",
        "ofi",
        "-x",
        "SKIFCH_OFI_PROVIDER=tcp;ofi_rxm",
        "-x",
        "SKIFCH_OFI_DOMAIN=lo",
    ];
    for (n, stat, driver) in [
        (2, false, &["--driver", "shm"][..]),
        (4, false, &["--driver", "shm"][..]),
        (3, true, &["--driver", "shm"][..]),
        (3, false, &["--driver", "fpga-model"][..]),
        (3, false, &ofi[..]),
    ] {
        let dir = common::job_dir("abort");
        let mut cmd = Command::new(testing::skifrun_exe());
        cmd.args(["-n", &n.to_string(), "--grace", "60"])
            .args(driver)
            .arg("--")
            .args(common::status_recorder(&dir))
            .arg(compile("fatal", stat))
            .arg("abort");
        testing::clean_env(&mut cmd);
        let o = testing::run_job(cmd, JOB_TIMEOUT + Duration::from_secs(60));
        let what = format!("MPI_Abort on {n} ranks {driver:?}, static {stat}");
        common::expect_abort_7(&o, &dir, n, true, &what);
    }
}

#[test]
fn threads_take_turns_and_an_overlapping_call_fails_instead_of_deadlocking() {
    // Issue 16 defect 6: a call entered while another thread blocks inside one used to wait
    // for the process-wide lock for ever (seen: this test hung until its timeout).
    if !have_cc() {
        return;
    }
    let exe = compile("threads", false);
    for n in [1, 2, 3] {
        run_ok(&exe, n, &[]);
    }
    for n in [1, 2] {
        let mut cmd = testing::skifrun_cmd(n, &[], &exe);
        cmd.arg("overlap");
        let o = testing::run_job(cmd, JOB_TIMEOUT);
        let ctx = format!(
            "overlap, {n} ranks: {}\nstdout:\n{}\nstderr:\n{}",
            o.status, o.stdout, o.stderr
        );
        assert_eq!(o.status.code(), Some(15), "{ctx}"); // MPI_ERR_OTHER, not a timeout
        assert!(o.stderr.contains("MPI_Send: "), "{ctx}");
        assert!(
            o.stderr.contains("another thread is inside an MPI call"),
            "{ctx}"
        );
        assert!(o.stderr.contains("MPI_THREAD_SERIALIZED"), "{ctx}");
        assert!(!o.stdout.contains("MPI_Send returned"), "{ctx}");
    }
    let mut cmd = testing::skifrun_cmd(2, &[], &exe);
    cmd.arg("return");
    let o = testing::run_job(cmd, JOB_TIMEOUT);
    let ctx = format!(
        "return: {}\nstdout:\n{}\nstderr:\n{}",
        o.status, o.stdout, o.stderr
    );
    // Each rank leaves without MPI_Finalize (its receiver can never finish): skifrun
    // counts that as a failure; what matters is that the send returned MPI_ERR_OTHER.
    assert_eq!(o.stdout.matches("MPI_Send returned 15").count(), 2, "{ctx}");
    // MPI_THREAD_FUNNELED binds the library to the main thread: another thread is refused
    // (returned, then fatal), the main thread goes on.
    for n in [1, 2] {
        let mut cmd = testing::skifrun_cmd(n, &[], &exe);
        cmd.arg("funneled");
        let o = testing::run_job(cmd, JOB_TIMEOUT);
        let ctx = format!(
            "funneled: {}\nstdout:\n{}\nstderr:\n{}",
            o.status, o.stdout, o.stderr
        );
        assert!(o.status.success(), "{ctx}");
        assert_eq!(o.stdout.matches("funneled ok").count(), n as usize, "{ctx}");
    }
    let mut cmd = testing::skifrun_cmd(1, &[], &exe);
    cmd.args(["funneled", "fatal"]);
    let o = testing::run_job(cmd, JOB_TIMEOUT);
    let ctx = format!(
        "funneled fatal: {}\nstdout:\n{}\nstderr:\n{}",
        o.status, o.stdout, o.stderr
    );
    assert_eq!(o.status.code(), Some(15), "{ctx}");
    assert!(o.stderr.contains("MPI_Send: "), "{ctx}");
    assert!(o.stderr.contains("MPI_THREAD_FUNNELED"), "{ctx}");
    assert!(!o.stdout.contains("funneled ok"), "{ctx}");
    // The one-sided short cut (a put inside the main thread's lock epoch) is refused alike.
    let mut cmd = testing::skifrun_cmd(1, &[], &exe);
    cmd.args(["funneled", "fatal", "put"]);
    let o = testing::run_job(cmd, JOB_TIMEOUT);
    let ctx = format!(
        "funneled fatal put: {}\nstdout:\n{}\nstderr:\n{}",
        o.status, o.stdout, o.stderr
    );
    assert_eq!(o.status.code(), Some(15), "{ctx}");
    assert!(o.stderr.contains("MPI_Put: "), "{ctx}");
    assert!(o.stderr.contains("MPI_THREAD_FUNNELED"), "{ctx}");
    assert!(!o.stdout.contains("funneled ok"), "{ctx}");
}

#[test]
fn thread_multiple_threads_progress_in_parallel() {
    // Issue 17: T threads × pairs on own and shared communicators, a receive blocked while
    // other threads communicate, MPI_ANY_SOURCE from several threads, concurrent
    // collectives on per-thread communicators, requests waited for by another thread.
    check("mt", &[]);
}

#[test]
fn osu_latency_mt_pattern() {
    // Sender and receiver threads ping-pong on one communicator and tag, half of them with
    // MPI_ANY_SOURCE, 0 B to 1 MiB, every message checked.
    check("latency_mt", &[]);
}

/// The `MPI_LITE_FN(ret, Name, (args))` declarations of mpi.h.
fn declared() -> Vec<String> {
    let h = std::fs::read_to_string(mpi_root().join("include/mpi.h")).expect("reading mpi.h");
    let mut v: Vec<String> = h
        .lines()
        .filter_map(|l| l.strip_prefix("MPI_LITE_FN("))
        .filter_map(|l| l.split(',').nth(1))
        .map(|n| n.trim().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn header_declares_exactly_the_exported_functions() {
    let so = lib_dir().join("libskifmpi.so");
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
    let syms: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(String::from))
        .collect();
    let mut mpi: Vec<String> = syms
        .iter()
        .filter_map(|s| s.strip_prefix("MPI_"))
        .map(String::from)
        .collect();
    let mut pmpi: Vec<String> = syms
        .iter()
        .filter_map(|s| s.strip_prefix("PMPI_"))
        .map(String::from)
        .collect();
    mpi.sort();
    pmpi.sort();
    let decl = declared();
    assert_eq!(decl, mpi, "mpi.h vs MPI_ symbols of {}", so.display());
    assert_eq!(decl, pmpi, "mpi.h vs PMPI_ symbols of {}", so.display());
    // Build systems probe for MPI-4 session symbols: they must not exist until they work.
    assert!(
        !syms.iter().any(|s| s.contains("Session")),
        "MPI-4 session symbols exported"
    );
}

#[test]
fn header_compiles_as_c_and_cpp_with_the_wrappers() {
    if !have_cc() {
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mpi-c");
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let src = dir.join("header_only.c");
    std::fs::write(
        &src,
        "#include <mpi.h>\n#include <mpi.h>\n\
         int main(int argc, char **argv) { MPI_Status s; MPI_Request r = MPI_REQUEST_NULL;\n\
         MPI_Init(&argc, &argv); MPI_Wait(&r, &s); MPI_Finalize();\n\
         return MPI_VERSION == 3 && MPI_SUBVERSION == 1 ? 0 : 1; }\n",
    )
    .expect("writing a test source");
    for (wrapper, std) in [("skif-mpicc", "-std=c99"), ("skif-mpicxx", "-std=c++11")] {
        let mut cmd = Command::new(mpi_root().join("bin").join(wrapper));
        cmd.env("SKIFMPI_LIBDIR", lib_dir()).args([
            std,
            "-pedantic",
            "-Wall",
            "-Wextra",
            "-Werror",
        ]);
        if wrapper == "skif-mpicxx" {
            cmd.args(["-x", "c++"]);
        }
        let exe = dir.join(format!("header_only_{wrapper}"));
        match cmd.arg(&src).arg("-o").arg(&exe).output() {
            Ok(o) => {
                assert!(
                    o.status.success(),
                    "{wrapper} {std}:\n{}",
                    String::from_utf8_lossy(&o.stderr)
                );
                run_ok(&exe, 2, &[]);
            }
            Err(e) => panic!("running {wrapper}: {e}"),
        }
    }
}
