//! The shm driver of one node's ranks made from a `Bootstrap` (no skifrun): the node's
//! leader creates the segment, the others open it through /proc, and the conformance
//! suite runs over it; and the hierarchical job (node lanes + a job-wide "fabric", here
//! the in-process lanes standing in for it). Ranks are threads here (one process; an
//! in-memory bootstrap); the launcher tests run them across processes.
use std::sync::{Arc, Mutex};

use skifch::{conformance, Channel, Result};
use skifch_drivers::boot::threads::ThreadBoot;
use skifch_drivers::boot::Bootstrap;
use skifch_drivers::hier::{HierDriver, Route};
use skifch_drivers::shm::node::{node_job, node_ranks};
use skifch_drivers::shm::Params;

/// Runs `f` on `size` thread ranks, rank r on node `r % nodes` (the in-process bootstrap
/// `boot::threads::ThreadBoot`); panics naming a rank that failed.
fn run(size: u32, nodes: u32, f: impl Fn(ThreadBoot) -> Result<()> + Send + Sync + 'static) {
    let f = Arc::new(f);
    let hs: Vec<_> = ThreadBoot::job_on(size, nodes)
        .into_iter()
        .map(|b| {
            let f = f.clone();
            std::thread::spawn(move || f(b))
        })
        .collect();
    for (r, h) in hs.into_iter().enumerate() {
        h.join()
            .unwrap()
            .unwrap_or_else(|e| panic!("rank {r}: {e}"));
    }
}

#[test]
fn one_node_job_from_a_bootstrap_passes_the_suite() {
    run(3, 1, |b| {
        let job = node_job(&b)?;
        assert_eq!((job.rank(), job.size()), (b.rank(), 3));
        conformance::run_all(&job, &conformance::Config::small())
    });
}

#[test]
fn two_nodes_make_two_segments_of_their_own_ranks() {
    run(4, 2, |b| {
        let (local, idx) = node_ranks(&b);
        assert_eq!(
            local,
            if b.rank() % 2 == 0 {
                vec![0, 2]
            } else {
                vec![1, 3]
            }
        );
        let job = node_job(&b)?;
        assert_eq!((job.rank(), job.size()), (idx, 2));
        // A message to the node's other rank, on the node's own segment.
        let ch: Channel<_> = job.open(0)?;
        let peer = skifch::NetAddr::new((1 - idx) as u16, 0);
        let payload = [b.rank() as u8; 8];
        ch.send_whole_wait(peer, &[std::io::IoSlice::new(&payload)])?;
        let m = ch.recv()?;
        assert_eq!(m.to_vec(), vec![local[1 - idx as usize] as u8; 8]);
        m.complete();
        b.barrier()
    });
}

/// A hierarchical job of `size` thread-ranks on `nodes` nodes, `f` run by each rank.
fn hier(
    size: u32,
    nodes: u32,
    route: Route,
    f: impl Fn(
            skifch::Job<HierDriver<skifch_drivers::ShmDriver, skifch_drivers::inproc::InprocDriver>>,
        ) -> Result<()>
        + Send
        + Sync
        + 'static,
) {
    let fabric = skifch_drivers::inproc::job(Params {
        nranks: size,
        nports: 2,
        lane_bytes: 16 << 10,
    })
    .unwrap();
    let fabric: Arc<Mutex<Vec<Option<_>>>> =
        Arc::new(Mutex::new(fabric.into_iter().map(Some).collect()));
    run(size, nodes, move |b| {
        let remote = fabric.lock().unwrap()[b.rank() as usize].take().unwrap();
        let local = node_job(&b)?;
        let drv = HierDriver::new(local.driver().clone(), remote.driver().clone(), &b, route)?;
        f(skifch::Job::new(Arc::new(drv)))
    });
}

#[test]
fn hierarchical_job_passes_the_suite_with_both_routes() {
    hier(4, 2, Route::Auto, |job| {
        conformance::run_all(&job, &conformance::Config::small())
    });
    hier(3, 3, Route::Auto, |job| {
        conformance::run_all(&job, &conformance::Config::small())
    });
    hier(4, 2, Route::Fabric, |job| {
        conformance::run_all(&job, &conformance::Config::small())
    });
}

#[test]
fn hierarchical_sources_are_global_ranks_on_both_paths() {
    hier(4, 2, Route::Auto, |job| {
        let ch = job.open(0)?;
        let me = job.rank();
        for dst in (0..4).filter(|&d| d != me) {
            let p = [me as u8, dst as u8];
            ch.send_whole_wait(
                skifch::NetAddr::new(dst as u16, 0),
                &[std::io::IoSlice::new(&p)],
            )?;
        }
        let mut from = Vec::new();
        for _ in 0..3 {
            let m = ch.recv()?;
            let v = m.to_vec();
            assert_eq!((v[1] as u32, m.src().rank()), (me, v[0] as u32));
            from.push(v[0]);
            m.complete();
        }
        from.sort();
        assert_eq!(
            from,
            (0..4u8).filter(|&d| d as u32 != me).collect::<Vec<_>>()
        );
        Ok(())
    });
}

// ---- Across processes: the shm driver under mpiexec.hydra, no skifrun ----

const HYDRA_LIMIT: std::time::Duration =
    std::time::Duration::from_secs(skifch_testing::LAUNCHER_JOB_LIMIT_SECS as u64 + 60);

fn conformance_exe() -> String {
    skifch_testing::example_exe("conformance")
        .to_string_lossy()
        .into_owned()
}

/// A job started by MPICH's launcher gets the shm driver on its one node: the node's
/// segment made by its first rank, the conformance suite passes.
#[test]
fn hydra_job_on_one_node_runs_over_shm() {
    let Some(mut cmd) = skifch_testing::hydra_cmd(&["-n", "3"]) else {
        return;
    };
    cmd.arg(conformance_exe()).args(["--messages", "1000"]);
    let text = skifch_testing::run_job(cmd, HYDRA_LIMIT).expect_ok("conformance under hydra");
    for r in 0..3 {
        assert!(
            text.contains(&format!("conformance: rank {r} ok (shm)")),
            "{text}"
        );
    }
}

/// `sh -c` running the conformance example with `args`, then saying its exit status: hydra
/// (told not to end the job itself) sees the shell's status, not the victim's signal, and
/// the SIGUSR1 it sends survivors when a rank fails is ignored.
fn survivor_script(args: &str) -> [String; 3] {
    let script = format!(
        "trap '' USR1; {} {args}; echo \"exit $?\" >&2",
        conformance_exe()
    );
    ["sh".into(), "-c".into(), script]
}

/// With no launcher watching the segment, the ranks watch each other: a rank killed with
/// SIGKILL is reported lost to the others within a second.
#[test]
fn hydra_job_peers_see_a_killed_rank_lost() {
    let Some(mut cmd) =
        skifch_testing::hydra_cmd(&["-disable-auto-cleanup", "-prepend-rank", "-n", "3"])
    else {
        return;
    };
    cmd.args(survivor_script("--kill --messages 300"));
    let out = skifch_testing::run_job(cmd, HYDRA_LIMIT);
    let text = out.text();
    for r in 0..2 {
        assert!(
            text.contains(&format!("[{r}] conformance: rank {r} ok (shm)")),
            "{text}"
        );
        assert!(text.contains(&format!("[{r}] exit 0")), "{text}");
    }
    assert!(text.contains("[2] exit 137"), "{text}");
}

/// Ranks on two hosts: the shm driver says it reaches one node only, naming the count.
#[test]
fn hydra_job_on_two_nodes_is_refused_by_shm_with_a_reason() {
    let dir = skifch_testing::ScratchDir::new("node-two-hosts");
    let ssh = skifch_testing::ssh_stand_in(dir.path(), "");
    let args = [
        "-launcher",
        "ssh",
        "-launcher-exec",
        ssh.to_str().unwrap(),
        "-hosts",
        "nodea,nodeb",
        "-n",
        "2",
    ];
    let Some(mut cmd) = skifch_testing::hydra_cmd(&args) else {
        return;
    };
    cmd.arg(conformance_exe()).env("SKIFCH_DRIVER", "shm");
    let out = skifch_testing::run_job(cmd, HYDRA_LIMIT);
    assert!(!out.status.success());
    assert!(
        out.text()
            .contains("on 2 nodes; the shm driver reaches one node only"),
        "{}",
        out.text()
    );
}

// ---- The hierarchy across processes: shm lanes within a "node", libfabric between ----

/// The fabric on the loopback interface (the ssh stand-in's "hosts" are this machine).
const LOOPBACK: [(&str, &str); 2] = [
    ("SKIFCH_OFI_PROVIDER", "tcp;ofi_rxm"),
    ("SKIFCH_OFI_DOMAIN", "lo"),
];
/// Above the node lanes' 1 MiB per pair (the fabric's largest message is far smaller).
const PAIR_KB: &str = "2048";

/// `mpiexec.hydra` starting 2 ranks on each of two host names, both this machine.
fn two_hosts(dir: &skifch_testing::ScratchDir, extra: &[&str]) -> Option<std::process::Command> {
    let ssh = skifch_testing::ssh_stand_in(dir.path(), "");
    let ssh = ssh.to_str().unwrap();
    let mut args = vec![
        "-launcher",
        "ssh",
        "-launcher-exec",
        ssh,
        "-hosts",
        "nodea:2,nodeb:2",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-n", "4"]);
    let mut cmd = skifch_testing::hydra_cmd(&args)?;
    cmd.envs(LOOPBACK);
    Some(cmd)
}

/// Ranks on two hosts: the default driver is the hierarchy, and it passes the suite.
#[test]
fn hierarchy_on_two_hosts_passes_the_suite() {
    let dir = skifch_testing::ScratchDir::new("hier-two-hosts");
    let Some(mut cmd) = two_hosts(&dir, &[]) else {
        return;
    };
    cmd.arg(conformance_exe())
        .args(["--messages", "1000", "--pair-kb", PAIR_KB]);
    let text =
        skifch_testing::run_job(cmd, HYDRA_LIMIT).expect_ok("conformance over the hierarchy");
    for r in 0..4 {
        assert!(
            text.contains(&format!("conformance: rank {r} ok (hier)")),
            "{text}"
        );
    }
}

/// A rank killed on the other host: its node peer sees it through the node's watcher, the
/// other host's ranks through the fabric (heartbeat silence of 2 s here): every survivor
/// gets an error within a few seconds, none hangs.
#[test]
fn hierarchy_survivors_see_a_killed_rank_on_the_other_host() {
    let dir = skifch_testing::ScratchDir::new("hier-kill");
    let Some(mut cmd) = two_hosts(&dir, &["-disable-auto-cleanup", "-prepend-rank"]) else {
        return;
    };
    cmd.env("SKIFCH_OFI_TIMEOUT_MS", "2000");
    cmd.args(survivor_script(&format!(
        "--kill --messages 300 --pair-kb {PAIR_KB} --within 5000"
    )));
    let text = skifch_testing::run_job(cmd, HYDRA_LIMIT).text();
    for r in 0..3 {
        assert!(
            text.contains(&format!("[{r}] conformance: rank {r} ok (hier)")),
            "{text}"
        );
        assert!(text.contains(&format!("[{r}] exit 0")), "{text}");
    }
}

/// Two "nodes" as network namespaces joined by a bridge (veth links, the kernel's TCP
/// between them), 2 ranks each: the hierarchy passes the suite.
#[test]
fn hierarchy_across_network_namespaces_passes_the_suite() {
    let Some(nodes) = skifch_testing::NetNodes::create(2) else {
        return;
    };
    let Some(mut cmd) = nodes.hydra_cmd(&[2, 2]) else {
        return;
    };
    cmd.env("SKIFCH_OFI_PROVIDER", "tcp;ofi_rxm")
        .env("SKIFCH_OFI_DOMAIN", "eth0");
    cmd.arg(conformance_exe())
        .args(["--messages", "1000", "--pair-kb", PAIR_KB]);
    let text = skifch_testing::run_job(cmd, HYDRA_LIMIT).expect_ok("conformance across namespaces");
    for r in 0..4 {
        assert!(
            text.contains(&format!("conformance: rank {r} ok (hier)")),
            "{text}"
        );
    }
}
