//! Test program for the launcher (`tests/launcher.rs`): each mode plays one scenario.
//!
//! ```text
//! skifrun -n N -- launch_probe alltoall <msgs>      every rank sends <msgs> messages to every other
//!                                                   rank and checks what it receives; exit 0
//! skifrun -n N -- launch_probe exit <rank> <code>   <rank> exits with <code> without finalizing;
//!                                                   the others block in recv() and exit 42 on PeerLost
//! skifrun -n N -- launch_probe raise <rank> <sig>   the same, but <rank> kills itself with <sig>
//! skifrun -n N -- launch_probe stream-kill <rank>   <rank> streams to rank 0, then SIGKILLs itself while
//!                                                   rank 0 sleeps in recv(); rank 0 exits 42 if it got
//!                                                   PeerLost within 1 s of the death, 99 if later
//! skifrun -n N -- launch_probe ignore <rank> <code> <rank> exits with <code>; the others sleep forever
//! skifrun -n N -- launch_probe pids <file> [<rank>] every rank appends "rank pid" to <file> and sleeps
//!                                                   forever; <rank> ignores SIGTERM
//! skifrun -n N -- launch_probe leave <rank>         <rank> finalizes and exits 0; the others wait in
//!                                                   recv() for a message that never comes
//! skifrun -n N -- launch_probe private            exit 0 if every skifch memfd this rank holds has
//!                                                   mode 0600 and a sealed size (truncate fails)
//! skifrun -n N -- launch_probe spawn <file>         every rank leaves processes behind and exits 0
//!                                                   (finalized): a forked child, a double-forked
//!                                                   grandchild in its own session, a `sleep`;
//!                                                   appends "<kind> <pid>" lines and "segment <inode>"
//! skifrun -n N -- launch_probe wait-policy <policy> exit 0 if SKIFCH_WAIT and the channel's policy
//!                                                   are <policy> and SKIFCH_DRIVER is shm
//! skifrun -n N -- launch_probe crowded <0|1>        exit 0 if the waits' oversubscribed() is <0|1>
//! ```
//! Unexpected outcomes exit 98 with a message on stderr.
use std::io::{IoSlice, Write};
use std::time::Duration;

use skifch::{Error, WaitPolicy};

/// Exit status of a rank that saw the expected PeerLost.
const SAW_PEER_LOST: i32 = 42;
/// PeerLost came, but too late.
const TOO_SLOW: i32 = 99;

/// One line on stderr in one `write`, so it does not interleave with skifrun's lines.
fn say(msg: &str) {
    let _ = std::io::stderr().write_all(format!("launch_probe: {msg}\n").as_bytes());
}

fn fail(msg: String) -> ! {
    say(&msg);
    std::process::exit(98)
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize) -> T {
    args.get(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fail(format!("argument {i} missing or bad in {args:?}")))
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// CLOCK_MONOTONIC, which all processes of the machine share (unlike `Instant`'s values).
fn monotonic() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write to.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Forks a child that sleeps for ever (in a new session if `setsid`); returns its pid.
fn fork_sleeper(setsid: bool) -> i32 {
    // SAFETY: the child makes only async-signal-safe calls (setsid, pause) and never returns.
    match unsafe { libc::fork() } {
        0 => {
            if setsid {
                // SAFETY: setsid takes no arguments.
                unsafe { libc::setsid() };
            }
            loop {
                // SAFETY: pause takes no arguments.
                unsafe { libc::pause() };
            }
        }
        -1 => fail("fork failed".into()),
        pid => pid,
    }
}

fn raise(sig: i32) -> ! {
    // SAFETY: raise takes an integer; a fatal signal ends the process here.
    unsafe { libc::raise(sig) };
    fail(format!("still alive after raising signal {sig}"))
}

/// Blocks in `recv()` until the job reports a lost peer; exits 42 (98 on anything else).
fn expect_peer_lost<P: skifch::Port>(ch: &skifch::Channel<P>) -> ! {
    match ch.recv() {
        Err(Error::PeerLost { .. }) => std::process::exit(SAW_PEER_LOST),
        Err(e) => fail(format!("expected PeerLost, got {e}")),
        Ok(m) => fail(format!("expected PeerLost, got a {}-byte message", m.len())),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let job = skifch_drivers::init().unwrap_or_else(|e| fail(format!("init: {e}")));
    let (me, n) = (job.rank(), job.size());
    let ch = job.open(0).unwrap_or_else(|e| fail(format!("open: {e}")));
    let mode = args.first().map(String::as_str).unwrap_or("");
    match mode {
        "alltoall" => {
            let msgs: u32 = arg(&args, 1);
            for k in 0..msgs {
                for peer in (0..n).filter(|&p| p != me) {
                    let body = [me.to_le_bytes(), k.to_le_bytes()].concat();
                    ch.send_all(job.addr(peer, 0), &[IoSlice::new(&body)])
                        .unwrap_or_else(|e| fail(format!("send to {peer}: {e}")));
                }
            }
            // Per sender, messages arrive in order.
            let mut next = vec![0u32; n as usize];
            for _ in 0..msgs * (n - 1) {
                let m = ch.recv().unwrap_or_else(|e| fail(format!("recv: {e}")));
                let v = m.to_vec();
                let from = u32::from_le_bytes(v[0..4].try_into().unwrap());
                let k = u32::from_le_bytes(v[4..8].try_into().unwrap());
                if m.src() != job.addr(from, 0) || from == me || k != next[from as usize] {
                    fail(format!(
                        "rank {me}: message {k} from {from} (src {}) out of order",
                        m.src()
                    ));
                }
                next[from as usize] += 1;
            }
            println!("rank {me}: received {} messages", msgs * (n - 1));
        }
        "exit" | "raise" | "ignore" => {
            let victim: u32 = arg(&args, 1);
            let what: i32 = arg(&args, 2);
            if me == victim {
                if mode == "raise" {
                    raise(what);
                }
                std::process::exit(what); // skips the job's destructor: not finalized
            }
            if mode == "ignore" {
                sleep_forever();
            }
            expect_peer_lost(&ch);
        }
        "stream-kill" => {
            let victim: u32 = arg(&args, 1);
            if me == victim {
                for k in 0..1000u32 {
                    ch.send_all(job.addr(0, 0), &[IoSlice::new(&k.to_le_bytes())])
                        .unwrap_or_else(|e| fail(format!("send: {e}")));
                }
                // The last message carries the time of death: now + 100 ms (so rank 0 is
                // asleep in the futex by then), on the system-wide monotonic clock.
                let death = monotonic() + Duration::from_millis(100);
                let stamp = death.as_nanos() as u64;
                ch.send_all(job.addr(0, 0), &[IoSlice::new(&stamp.to_le_bytes())])
                    .unwrap_or_else(|e| fail(format!("send: {e}")));
                std::thread::sleep(death.saturating_sub(monotonic()));
                raise(libc::SIGKILL);
            }
            if me != 0 {
                expect_peer_lost(&ch);
            }
            for k in 0..1000u32 {
                let m = ch.recv().unwrap_or_else(|e| fail(format!("recv {k}: {e}")));
                if m.to_vec() != k.to_le_bytes() {
                    fail(format!("message {k} corrupt"));
                }
            }
            let last = ch.recv().map(|m| m.to_vec());
            let death = match last.as_deref().map(<[u8; 8]>::try_from) {
                Ok(Ok(b)) => Duration::from_nanos(u64::from_le_bytes(b)),
                other => fail(format!("expected the time of death, got {other:?}")),
            };
            let r = ch.recv().map(|m| m.len());
            // Measured from the moment rank 1 killed itself (at `death` or a bit later).
            let dt = monotonic().saturating_sub(death);
            match r {
                Err(Error::PeerLost { rank }) if rank == victim => {
                    say(&format!(
                        "rank 0 saw PeerLost {dt:?} after rank {victim} died"
                    ));
                    std::process::exit(if dt < Duration::from_secs(1) {
                        SAW_PEER_LOST
                    } else {
                        TOO_SLOW
                    });
                }
                other => fail(format!("expected PeerLost from {victim}, got {other:?}")),
            }
        }
        "pids" => {
            let path: String = arg(&args, 1);
            if args.len() > 2 && arg::<u32>(&args, 2) == me {
                // SAFETY: setting a disposition to SIG_IGN installs no handler code.
                unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
            }
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&path)
                .unwrap_or_else(|e| fail(format!("{path}: {e}")));
            // One write of one line: O_APPEND keeps the ranks' lines whole.
            f.write_all(format!("{me} {}\n", std::process::id()).as_bytes())
                .unwrap_or_else(|e| fail(format!("{path}: {e}")));
            sleep_forever();
        }
        "private" => {
            let mut seen = 0;
            for e in std::fs::read_dir("/proc/self/fd").unwrap_or_else(|e| fail(e.to_string())) {
                let path = e.unwrap_or_else(|e| fail(e.to_string())).path();
                let target = std::fs::read_link(&path).unwrap_or_default();
                if !target.to_string_lossy().starts_with("/memfd:skifch") {
                    continue;
                }
                seen += 1;
                let f = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&path)
                    .unwrap_or_else(|e| fail(format!("{target:?}: {e}")));
                let meta = f.metadata().unwrap_or_else(|e| fail(e.to_string()));
                let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777;
                if mode != 0o600 {
                    fail(format!("{target:?} has mode {mode:o}, not 600"));
                }
                for len in [0, meta.len() + 4096] {
                    if f.set_len(len).is_ok() {
                        fail(format!("{target:?}: truncating to {len} bytes succeeded"));
                    }
                }
            }
            if seen == 0 {
                fail("no skifch memfd open".into());
            }
        }
        "leave" => {
            if me != arg::<u32>(&args, 1) {
                let m = ch.recv();
                fail(format!("recv returned {:?}", m.map(|m| m.len())));
            }
        }
        "spawn" => {
            let path: String = arg(&args, 1);
            let mut lines = String::new();
            // A fork after Init: holds the segment's mapping.
            lines += &format!("fork {}\n", fork_sleeper(false));
            // A double fork into a new session: an orphan outside the rank's group.
            let (rd, wr) = {
                let mut fds = [0; 2];
                // SAFETY: `fds` has room for two descriptors.
                assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
                (fds[0], fds[1])
            };
            // SAFETY: the child only forks, writes and exits (async-signal-safe calls).
            match unsafe { libc::fork() } {
                0 => {
                    let pid = fork_sleeper(true);
                    // SAFETY: `wr` is the pipe's write end; 4 bytes from a live i32.
                    unsafe {
                        libc::write(wr, (&pid as *const i32).cast(), 4);
                        libc::_exit(0)
                    }
                }
                -1 => fail("fork failed".into()),
                mid => {
                    let mut pid = 0i32;
                    // SAFETY: reads 4 bytes into a live i32; waits for our own child.
                    unsafe {
                        libc::read(rd, (&mut pid as *mut i32).cast(), 4);
                        libc::waitpid(mid, std::ptr::null_mut(), 0);
                    }
                    lines += &format!("setsid {pid}\n");
                }
            }
            let sleep = std::process::Command::new("sleep")
                .arg("1000")
                .spawn()
                .unwrap_or_else(|e| fail(format!("sleep: {e}")));
            lines += &format!("sleep {}\n", sleep.id());
            std::mem::forget(sleep); // left running on purpose: the launcher must end it
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
            let ino = maps
                .lines()
                .find(|l| l.contains("/memfd:skifch-job"))
                .and_then(|l| l.split_whitespace().nth(4))
                .unwrap_or_else(|| fail("the segment is not mapped".into()));
            lines += &format!("segment {ino}\n");
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&path)
                .unwrap_or_else(|e| fail(format!("{path}: {e}")));
            f.write_all(lines.as_bytes())
                .unwrap_or_else(|e| fail(format!("{path}: {e}")));
        }
        "wait-policy" => {
            let want: String = arg(&args, 1);
            let policy = WaitPolicy::parse(&want).unwrap_or_else(|e| fail(e.to_string()));
            let env = std::env::var("SKIFCH_WAIT").ok();
            let drv = std::env::var("SKIFCH_DRIVER").ok();
            if ch.wait_policy() != policy
                || env.as_deref().map(WaitPolicy::parse).and_then(Result::ok) != Some(policy)
                || drv.as_deref() != Some("shm")
            {
                fail(format!(
                    "rank {me}: policy {:?}, SKIFCH_WAIT={env:?}, SKIFCH_DRIVER={drv:?}; wanted {policy:?}",
                    ch.wait_policy()
                ));
            }
        }
        "crowded" => {
            let want = arg::<u32>(&args, 1) == 1;
            if skifch::wait::oversubscribed() != want {
                fail(format!("rank {me}: oversubscribed() is not {want}"));
            }
        }
        _ => fail(format!(
            "unknown mode {mode:?} (see the source for the modes)"
        )),
    }
}
