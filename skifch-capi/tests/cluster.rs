//! The C ABI's programs with their ranks split across two "nodes" (issue 21): Linux network
//! namespaces joined by veth links to a bridge (`skifch_testing::NetNodes`), 2 ranks each,
//! started by MPICH's `mpiexec.hydra` and by `skifrun --hosts`. The default driver is then
//! the hierarchy: the node's shm lanes between the ranks of a namespace, libfabric's tcp
//! provider between the namespaces, one `Channel` API above both — the programs are
//! unchanged. Needs `cc`; skipped, saying so, without hydra or where namespaces cannot be
//! made (not root).

use std::time::Duration;

use skifch_testing::{self as testing, have_cc, NetNodes};

mod common;
use common::{compile, Link};

/// A job across namespaces starts its ranks through hydra's proxies and connects the
/// fabric: a few seconds on a quiet machine, far more beside other tests' jobs.
const JOB_TIMEOUT: Duration = Duration::from_secs(120);

/// The greetings of `examples/c/hello.c` on `n` ranks: each from the rank before it.
fn check_hello(out: &str, n: u32) {
    for r in 0..n {
        let from = (r + n - 1) % n;
        let line = format!("rank {r} got \"Hello from rank {from} of {n}\"");
        assert!(out.contains(&line), "missing {line:?} in:\n{out}");
    }
}

/// Per-pair order with held messages, all-to-all on two ports, partial sends, back
/// pressure, zero-length messages, bad arguments, waits and wake-ups, and the example,
/// on 2 × 2 ranks under `mpiexec.hydra`; the example again under `skifrun --hosts`.
#[test]
fn c_abi_programs_across_two_network_namespaces() {
    if !have_cc() {
        return;
    }
    let Some(nodes) = NetNodes::create(2) else {
        return;
    };
    let progs = [
        "tests/c/order.c",
        "tests/c/alltoall.c",
        "tests/c/partial.c",
        "tests/c/backpressure.c",
        "tests/c/zerolen.c",
        "tests/c/badargs.c",
        "tests/c/wait.c",
        "examples/c/hello.c",
    ];
    for src in progs {
        let exe = compile(src, Link::Shared);
        let Some(mut cmd) = nodes.hydra_cmd(&[2, 2]) else {
            return;
        };
        cmd.arg(&exe);
        let what = format!("{src} on 2 × 2 ranks under mpiexec.hydra");
        let out = testing::run_job(cmd, JOB_TIMEOUT).expect_ok(&what);
        if src.ends_with("hello.c") {
            check_hello(&out, 4);
        }
    }
    let hello = compile("examples/c/hello.c", Link::Shared);
    let Some(mut cmd) = nodes.skifrun_cmd(&[2, 2]) else {
        return;
    };
    cmd.arg(&hello);
    let out = testing::run_job(cmd, JOB_TIMEOUT).expect_ok("hello on 2 × 2 ranks, skifrun --hosts");
    check_hello(&out, 4);
}
