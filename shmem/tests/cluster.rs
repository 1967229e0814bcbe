//! OpenSHMEM C programs on PEs of two "nodes" (network namespaces joined by a bridge, 2 PEs
//! each: `skifch_testing::NetNodes`), started by MPICH's `mpiexec.hydra` (PMI-1) and by Open
//! MPI's `mpirun` (PMIx). Needs `cc` and root; skipped with a message otherwise.

use std::time::Duration;

use skifch_testing::{self as testing, have_cc};

mod common;
use common::{compile, JOB_TIMEOUT};

/// PEs on two "nodes" (network namespaces joined by a bridge, 2 PEs each) started by
/// `mpiexec.hydra`: the hierarchy's RMA (`skifch_drivers::hier_rma`) maps the node's PEs
/// and reaches the other node's by the fabric's transfers (`FI_RMA` over the provider the
/// driver picks, `net`) with `SKIFSHMEM_RMA=transfers`; atomics on those go as messages.
/// By default the message path. Then `shmem_global_exit` on PE 1 (on node 0) ends the PEs
/// of both nodes with its status, 7 and 0, none reporting an error (it leaves the job:
/// `AnyDriver::leave`; the other node's PEs used to fail with status 1). Skipped where
/// namespaces cannot be made.
#[test]
fn programs_across_two_network_namespaces() {
    if !have_cc() {
        return;
    }
    let Some(nodes) = testing::NetNodes::create(2) else {
        return;
    };
    let limit = JOB_TIMEOUT + Duration::from_secs(60);
    for (name, rma) in [
        ("rma", "transfers"),
        ("amo", "transfers"),
        ("sync", "transfers"),
        ("setup_heap", "transfers"),
        ("coll", "transfers"),
        ("rma", "default"),
    ] {
        let exe = compile(name, true);
        let Some(mut cmd) = nodes.hydra_cmd(&[2, 2]) else {
            return;
        };
        cmd.envs([("SKIFSHMEM_VERBOSE", "1"), ("SKIFSHMEM_RMA", rma)])
            .arg(&exe);
        let o = testing::run_job(cmd, limit);
        let text = format!("{}{}", o.stdout, o.stderr);
        o.expect_ok(&format!("{name} on 2 × 2 PEs, SKIFSHMEM_RMA={rma}"));
        let by_transfers = text.matches("by transfers").count();
        assert_eq!(
            by_transfers,
            if rma == "transfers" { 4 } else { 0 },
            "{name}: {text}"
        );
    }
    for args in [&["7"][..], &["0"], &["5", "early"]] {
        let Some(mut cmd) = nodes.hydra_cmd(&[2, 2]) else {
            return;
        };
        cmd.arg(compile("global_exit", true)).args(args);
        let o = testing::run_job(cmd, limit);
        assert!(
            o.status.code() == args[0].parse().ok() && !o.stderr.contains("skifshmem:"),
            "shmem_global_exit({args:?}) across namespaces: {}\n{}",
            o.status,
            o.text()
        );
    }
}

/// Uneven layouts (issue 21): 2+1 PEs under `mpiexec.hydra` and 1+2 under `skifrun
/// --hosts`, with `SKIFSHMEM_RMA=transfers`: the node's PEs mapped, the other node's reached
/// by the fabric's transfers, each PE saying it took that path; `rma` (puts and gets to its
/// right neighbour: node-local for some PEs, across for others) and `amo`. Skipped where
/// namespaces cannot be made.
#[test]
fn uneven_layouts_across_network_namespaces() {
    if !have_cc() {
        return;
    }
    let Some(nodes) = testing::NetNodes::create(2) else {
        return;
    };
    let limit = JOB_TIMEOUT + Duration::from_secs(60);
    for name in ["rma", "amo"] {
        let exe = compile(name, true);
        for (ranks, by_hydra) in [(&[2, 1], true), (&[1, 2], false)] {
            let cmd = if by_hydra {
                nodes.hydra_cmd(ranks)
            } else {
                nodes.skifrun_cmd(ranks)
            };
            let Some(mut cmd) = cmd else {
                return;
            };
            cmd.envs([("SKIFSHMEM_VERBOSE", "1"), ("SKIFSHMEM_RMA", "transfers")])
                .arg(&exe);
            let o = testing::run_job(cmd, limit);
            let text = o.text();
            o.expect_ok(&format!("{name} on {ranks:?} PEs, hydra {by_hydra}"));
            assert_eq!(text.matches("by transfers").count(), 3, "{name}: {text}");
        }
    }
}

/// `shmem_global_exit` under Open MPI's `mpirun` (PMIx) on 2 × 2 PEs in two namespaces:
/// PE 1 (node 0) ends the PEs of both nodes, and the job ends with its status as `mpirun`
/// reports it (a non-zero one: the first PE's non-zero status; 0: every PE ended with 0,
/// none "exiting improperly", which was 1 before the PE finalized its PMIx connection),
/// none reporting an error, nothing left behind (`NetNodes::openmpi_job`). Skipped where
/// namespaces cannot be made, Open MPI is missing or its `mpirun` cannot start jobs
/// across the namespaces (said on stderr).
#[test]
fn global_exit_across_two_network_namespaces_under_mpirun() {
    if !have_cc() {
        return;
    }
    let Some(nodes) = testing::NetNodes::create(2) else {
        return;
    };
    let exe = compile("global_exit", true);
    for args in [&["7"][..], &["0"], &["5", "early"]] {
        let Some(job) = nodes.openmpi_job(&[2, 2], &[], &exe, args, 120) else {
            return;
        };
        let o = &job.outcome;
        assert!(
            o.code() == args[0].parse().ok() && !o.stderr.contains("skifshmem:"),
            "shmem_global_exit({args:?}) under mpirun across namespaces, {:?}: {}\n{}",
            job.elapsed,
            o.status,
            o.text()
        );
    }
}
