//! The shm driver of one node's ranks made from a `Bootstrap` (no skifrun): the node's
//! leader creates the segment, the others open it through /proc, and the conformance
//! suite runs over it; and the hierarchical job (node lanes + a job-wide "fabric", here
//! the in-process lanes standing in for it). Ranks are threads here (one process; an
//! in-memory bootstrap); the launcher tests run them across processes.
use std::sync::{Arc, Mutex};

use skifch::{conformance, Channel, Driver, Result};
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

/// Messages of an 8-byte slice and a payload (the shape of `proto`'s short send, which the
/// hierarchy's node route sends through the node port's word path) arrive whole and in
/// order, node-local and across the fabric, payloads of 0 bytes and up.
#[test]
fn hierarchical_word_shaped_messages_arrive_whole() {
    hier(4, 2, Route::Auto, |job| {
        let ch = job.open(0)?;
        let me = job.rank();
        let sizes = [0usize, 1, 7, 8, 9, 23, 64, 200, 1000];
        let msg = |src: u32, dst: u32, n: usize| -> Vec<u8> {
            (0..8 + n)
                .map(|i| (i as u32 * 7 + src * 31 + dst * 5) as u8)
                .collect()
        };
        for dst in (0..4).filter(|&d| d != me) {
            for &n in &sizes {
                let m = msg(me, dst, n);
                let iov = [
                    std::io::IoSlice::new(&m[..8]),
                    std::io::IoSlice::new(&m[8..]),
                ];
                ch.send_whole_wait(skifch::NetAddr::new(dst as u16, 0), &iov)?;
            }
        }
        let mut next = [0usize; 4];
        for _ in 0..3 * sizes.len() {
            let m = ch.recv()?;
            let src = m.src().rank();
            let n = sizes[next[src as usize]];
            next[src as usize] += 1;
            assert_eq!(
                m.to_vec(),
                msg(src, me, n),
                "from {src}, {n} bytes after the word"
            );
            m.complete();
        }
        Ok(())
    });
}

/// Polls `ch` until a message from `from` comes (every other is from the node's peer):
/// how many receives that took.
fn polls_until<P: skifch::driver::Port>(ch: &Channel<P>, from: u32) -> Result<usize> {
    for n in 1..100_000 {
        match ch.try_recv() {
            Ok(m) => {
                let src = m.src().rank();
                m.complete();
                if src == from {
                    return Ok(n);
                }
            }
            Err(skifch::Error::WouldBlock) => {}
            Err(e) => return Err(e),
        }
    }
    panic!("no message from rank {from} in 100000 polls");
}

/// A fabric message is seen within a bounded number of polls however the node's traffic
/// goes (`hier`, `shm::far`): behind a node lane that is never empty, within
/// `FABRIC_LOOK_MAX + BURST` receives once the fabric's turns have backed off to that; on
/// an empty node after node messages (and many empty polls), within `FABRIC_LOOK_MAX` polls.
#[test]
fn fabric_messages_are_seen_within_bounded_polls() {
    use skifch_drivers::hier::FABRIC_LOOK_MAX;
    use skifch_drivers::shm::BURST;
    // Rank r on node r % 2: 0 and 2 share node 0, rank 1 is on the other node.
    let bar = Arc::new(std::sync::Barrier::new(4));
    hier(4, 2, Route::Auto, move |job| {
        let ch = job.open(0)?;
        let to0 = skifch::NetAddr::new(0, 0);
        let b = [0u8; 8];
        let node_burst = |n: usize| -> Result<()> {
            for _ in 0..n {
                ch.send_whole_wait(to0, &[std::io::IoSlice::new(&b)])?;
            }
            Ok(())
        };
        // Node traffic only, until rank 0's fabric polls have backed off fully.
        let warm = 4 * FABRIC_LOOK_MAX as usize;
        match job.rank() {
            0 => {
                for _ in 0..warm {
                    let m = ch.recv()?;
                    assert_eq!(m.src().rank(), 2);
                    m.complete();
                }
            }
            2 => node_burst(warm)?,
            _ => {}
        }
        bar.wait();
        // A fabric message behind more node messages than one back-off interval.
        let behind = (FABRIC_LOOK_MAX + 2 * BURST) as usize;
        match job.rank() {
            2 => node_burst(behind)?,
            1 => ch.send_whole_wait(to0, &[std::io::IoSlice::new(&b)])?,
            _ => {}
        }
        bar.wait();
        if job.rank() == 0 {
            let n = polls_until(&ch, 1)?;
            assert!(
                n <= (FABRIC_LOOK_MAX + BURST) as usize,
                "the fabric's message came after {n} receives from a busy node"
            );
            // Drain the node's rest; its last message came from the node.
            for _ in 0..behind - (n - 1) {
                ch.recv_timeout(std::time::Duration::from_secs(60))?
                    .complete();
            }
        }
        bar.wait();
        // The node is empty now: rank 0's empty polls back the fabric's off fully, then
        // a fabric message within FABRIC_LOOK_MAX polls.
        if job.rank() == 0 {
            for _ in 0..4 * FABRIC_LOOK_MAX {
                assert!(matches!(ch.try_recv(), Err(skifch::Error::WouldBlock)));
            }
        }
        bar.wait();
        if job.rank() == 1 {
            ch.send_whole_wait(to0, &[std::io::IoSlice::new(&b)])?;
        }
        bar.wait();
        if job.rank() == 0 {
            let n = polls_until(&ch, 1)?;
            assert!(
                n <= FABRIC_LOOK_MAX as usize,
                "the fabric's message came after {n} polls of an empty node"
            );
        }
        bar.wait();
        Ok(())
    });
}

/// A receiver blocked in `recv` (spinning, then sleeping on both sides in turn) sees a
/// fabric message within a few sleeps, also after node traffic backed the fabric's turns
/// off: each sleep makes the next `ready` look at the fabric (`hier::FabricWaiter`), and a
/// fabric message found ready makes the next receive take it (`shm::far`). Counted in
/// `ready` calls alone, the backed-off turns left it ~0.2 s (512 sleeps of two slices).
#[test]
fn a_blocked_receiver_sees_a_fabric_message_within_a_few_sleeps() {
    use skifch_drivers::hier::FABRIC_LOOK_MAX;
    use std::time::{Duration, Instant};
    let bar = Arc::new(std::sync::Barrier::new(4));
    let sent: Arc<Mutex<Option<Instant>>> = Arc::default();
    hier(4, 2, Route::Auto, move |job| {
        let ch = job.open(0)?;
        let to0 = skifch::NetAddr::new(0, 0);
        let b = [0u8; 8];
        // Node traffic, then empty polls: rank 0's fabric turns backed off fully.
        match job.rank() {
            0 => {
                for _ in 0..4 * FABRIC_LOOK_MAX {
                    ch.recv()?.complete();
                }
                for _ in 0..4 * FABRIC_LOOK_MAX {
                    assert!(matches!(ch.try_recv(), Err(skifch::Error::WouldBlock)));
                    assert!(!ch.ready()?);
                }
            }
            2 => {
                for _ in 0..4 * FABRIC_LOOK_MAX {
                    ch.send_whole_wait(to0, &[std::io::IoSlice::new(&b)])?;
                }
            }
            _ => {}
        }
        bar.wait();
        match job.rank() {
            0 => {
                let m = ch.recv_timeout(Duration::from_secs(20))?;
                let late = sent
                    .lock()
                    .unwrap()
                    .expect("sent before received")
                    .elapsed();
                assert_eq!(m.src().rank(), 1);
                m.complete();
                assert!(
                    // Seen in 0.03-0.3 ms; without the look after a sleep, 50-300 ms.
                    late < Duration::from_millis(20),
                    "a blocked receiver took {late:?} to see a fabric message"
                );
            }
            1 => {
                // Long enough for rank 0 to be asleep (its spin is the fabric's floor).
                std::thread::sleep(Duration::from_millis(30));
                *sent.lock().unwrap() = Some(Instant::now());
                ch.send_whole_wait(to0, &[std::io::IoSlice::new(&b)])?;
            }
            _ => {}
        }
        bar.wait();
        Ok(())
    });
}

/// The node's lanes take larger messages than this job's fabric (16 KiB lanes): a send to a
/// node peer is held to the job's limit all the same (the node's ports are held to it at
/// open, `hier::NodePort`): a whole message above it is refused naming the job's limit, a
/// prefix send sends exactly that much, and the peer receives it.
#[test]
fn node_sends_are_held_to_the_jobs_limit() {
    hier(4, 2, Route::Auto, |job| {
        let max = job.max_message();
        assert!(
            job.driver().local().max_message() > max,
            "the node's lanes must take more than the job for this test"
        );
        let ch = job.open(0)?;
        let peer = skifch::NetAddr::new(((job.rank() + 2) % 4) as u16, 0); // node r % 2
        let big = vec![7u8; max + 1];
        let iov = [std::io::IoSlice::new(&big)];
        match ch.send_whole(peer, &iov) {
            Err(skifch::Error::MessageTooLarge { max: m, .. }) if m as usize == max => {}
            r => panic!("a whole message of {} bytes to a node peer: {r:?}", max + 1),
        }
        let sent = loop {
            match ch.send(peer, &iov) {
                Err(skifch::Error::WouldBlock) => std::thread::yield_now(),
                r => break r?,
            }
        };
        assert_eq!(sent, max);
        let m = ch.recv()?;
        assert_eq!((m.len(), m.src()), (max, peer));
        m.complete();
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
    let exe = conformance_exe();
    let script = format!("trap '' USR1; {exe} {args}; echo \"exit $?\" >&2");
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
/// other host's ranks through the fabric (its connections break; else heartbeat silence,
/// 4 s here): every survivor gets an error within a few seconds, none hangs.
#[test]
fn hierarchy_survivors_see_a_killed_rank_on_the_other_host() {
    let dir = skifch_testing::ScratchDir::new("hier-kill");
    let Some(mut cmd) = two_hosts(&dir, &["-disable-auto-cleanup", "-prepend-rank"]) else {
        return;
    };
    // Not 2 s: at load 3-4 (beside callgrind runs) a 2 s silence between live ranks was
    // heard now and then (1 run in 5), every rank then losing a different live peer.
    cmd.env("SKIFCH_OFI_TIMEOUT_MS", "4000");
    cmd.args(survivor_script(&format!(
        "--kill --messages 300 --pair-kb {PAIR_KB} --within 9000"
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
/// between them), 2 ranks each: the hierarchy passes the suite. On failure the job's whole
/// output, each rank's lines tagged (`-prepend-rank`), and when each step ended are printed
/// and kept in `target/tmp/node_hier-namespaces-<pid>.log` (it failed once in 58 CI runs
/// under load, and its output was lost).
#[test]
fn hierarchy_across_network_namespaces_passes_the_suite() {
    let t0 = std::time::Instant::now();
    let Some(nodes) = skifch_testing::NetNodes::create(2) else {
        return;
    };
    let made = t0.elapsed();
    let exe = conformance_exe();
    let built = t0.elapsed();
    let Some(mut cmd) = nodes.hydra_cmd(&[2, 2]) else {
        return;
    };
    // The provider the driver picks by itself on eth0 (`net` where libfabric has it; the
    // nodes' interface is set by `NetNodes`).
    cmd.arg("-prepend-rank")
        .arg(exe)
        .args(["--messages", "1000", "--pair-kb", PAIR_KB]);
    let out = skifch_testing::run_job(cmd, HYDRA_LIMIT);
    let report = format!(
        "namespaces made at {made:?}, conformance built at {built:?}, the job ended at {:?} \
         ({}), load {}\nstdout:\n{}\nstderr:\n{}",
        t0.elapsed(),
        out.status,
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim(),
        out.stdout,
        out.stderr
    );
    eprintln!("{report}");
    let missing: Vec<u32> = (0..4)
        .filter(|r| {
            !out.stdout
                .contains(&format!("[{r}] conformance: rank {r} ok (hier)"))
        })
        .collect();
    if !out.status.success() || !missing.is_empty() {
        let keep = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("node_hier-namespaces-{}.log", std::process::id()));
        let _ = std::fs::write(&keep, &report);
        panic!(
            "conformance across namespaces failed (ranks {missing:?} not ok; kept in {}):\n{report}",
            keep.display()
        );
    }
}

fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_millis()
}

/// Waits (at most `limit`) until `dir` holds `<prefix>.<r>` for every rank `r < n`, or
/// `stop()` says to give up; whether all came.
fn wait_files(
    dir: &std::path::Path,
    prefix: &str,
    n: u32,
    limit: std::time::Duration,
    stop: impl Fn() -> bool,
) -> bool {
    let t0 = std::time::Instant::now();
    loop {
        if (0..n).all(|r| dir.join(format!("{prefix}.{r}")).exists()) {
            return true;
        }
        if stop() || t0.elapsed() > limit {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A link pulled mid-stream: 2 × 2 ranks in two network namespaces stream in a ring
/// (`fault_probe ring`; the edges 1 → 2 and 3 → 0 cross the nodes), then node 1's link
/// goes down. Every rank, on both sides, gets "peer lost" within a few seconds (heartbeat
/// silence: 4 s here; the check allows 20 s on a loaded machine), none hangs; with the link
/// back up every rank ends (status 42: it saw the loss) and no process is left in the
/// namespaces. The ranks write their statuses into files: hydra's own connection to node
/// 1's proxy crosses the pulled link, and under load it failed now and then (`control_cb:
/// assert (!closed) failed`), taking node 1's last output lines with it (3 of 20 runs of
/// the test binary at load 12-20).
#[test]
fn hierarchy_ranks_see_a_link_taken_down_mid_stream() {
    use std::time::Duration;
    let Some(nodes) = skifch_testing::NetNodes::create(2) else {
        return;
    };
    let Some(mut cmd) = nodes.hydra_cmd(&[2, 2]) else {
        return;
    };
    let dir = nodes.scratch();
    let d = dir.display();
    let probe = skifch_testing::example_exe("fault_probe");
    // Not 2 s: at load 6+ (a CI run beside two callgrind jobs) a 2 s silence was heard
    // before the link went down, every rank losing every other.
    cmd.env("SKIFCH_OFI_TIMEOUT_MS", "4000");
    cmd.args(["-disable-auto-cleanup", "-prepend-rank", "sh", "-c"])
        .arg(format!(
            "trap '' USR1; {} ring {d}; s=$?; echo \"exit $s\" > {d}/tmp.$PMI_RANK; \
             mv {d}/tmp.$PMI_RANK {d}/exit.$PMI_RANK",
            probe.display()
        ));
    let job = std::thread::spawn(move || skifch_testing::run_job(cmd, HYDRA_LIMIT));
    let streaming = wait_files(&dir, "streaming", 4, Duration::from_secs(120), || {
        job.is_finished()
    });
    let down = unix_ms();
    if streaming {
        nodes.set_link(1, false);
    }
    // Not cut short by the end of hydra: its ranks may outlive it (see above).
    let lost = streaming && wait_files(&dir, "lost", 4, Duration::from_secs(60), || false);
    nodes.set_link(1, true);
    let ended = wait_files(&dir, "exit", 4, Duration::from_secs(90), || false);
    let text = job.join().expect("the job ended within its limit").text();
    assert!(streaming, "the ranks never all streamed: {text}");
    assert!(lost, "not every rank saw an error within 60 s: {text}");
    assert!(ended, "not every rank ended within 90 s: {text}");
    for r in 0..4 {
        let f = std::fs::read_to_string(dir.join(format!("lost.{r}"))).expect("lost file");
        let (ms, what) = f.split_once(' ').expect("<ms> <error>");
        let ms = ms.parse::<u128>().expect("ms");
        assert!(
            ms >= down,
            "rank {r}: {what}, before the link went down; {text}"
        );
        let after = ms - down;
        eprintln!("rank {r}: {what}, {after} ms after the link went down");
        assert!(what.contains("peer lost"), "rank {r}: {what}; {text}");
        assert!(
            after < 20_000,
            "rank {r}: error {after} ms after the link went down"
        );
        let status = std::fs::read_to_string(dir.join(format!("exit.{r}"))).expect("exit file");
        assert_eq!(status.trim(), "exit 42", "rank {r}; {text}");
    }
    let t0 = std::time::Instant::now();
    for ns in nodes.names() {
        let left = loop {
            let pids = std::process::Command::new("ip")
                .args(["netns", "pids", ns])
                .output()
                .expect("ip netns pids")
                .stdout;
            if pids.is_empty() || t0.elapsed() > Duration::from_secs(30) {
                break pids;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(
            left.is_empty(),
            "left in {ns}: {}",
            String::from_utf8_lossy(&left)
        );
    }
}
