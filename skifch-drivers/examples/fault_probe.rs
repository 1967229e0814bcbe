//! Test program for the fault tests (`tests/faults.rs`); each mode is one scenario of a
//! 2-rank job (rank 0 sends, rank 1 receives), run through `skifrun`.
//!
//! ```text
//! skifrun -n 2 --lane-kb 4 -- fault_probe full poll    rank 0 fills rank 1's lane (WouldBlock, nothing
//!                                                     lost: rank 1 drains and checks), fills it again;
//!                                                     rank 1 SIGKILLs itself; rank 0 retries send()
//!                                                     until PeerLost: exit 42 within 1 s of the death
//! skifrun -n 2 --lane-kb 4 -- fault_probe full block  the same, but rank 0 is blocked in send_all()
//!                                                     on the full lane when rank 1 dies
//! skifrun -n 2 -- fault_probe stream <pidfile>        rank 1 writes its pid to <pidfile> and streams
//!                                                     to rank 0 until killed; rank 0 checks every
//!                                                     message and exits 42 on PeerLost
//! skifrun -n 2 --lane-kb 4 -- fault_probe too-large   send_whole/send/send_all of messages larger
//!                                                     than the lane
//! skifrun -n 2 -- fault_probe bad-args                Unreachable and InvalidArgument (IOV_MAX)
//! skifrun -n 2 -- fault_probe finalized               rank 1 finalizes and exits; rank 0 sends to
//!                                                     it until Unreachable (Closed): exit 42
//! skifrun -n 4 -- fault_probe gather <count>         ranks 1.. send <count> messages each to rank 0
//!                                                     and leave as soon as they are done; rank 0
//!                                                     checks every sender's order
//! skifrun -n 2 -- fault_probe closed                  rank 1 opens, closes and reopens port 2; rank 0
//!                                                     sees Unreachable (Closed), then delivers again
//! mpiexec.hydra … fault_probe ring <dir>              any size: every rank streams to the next and
//!                                                     checks what the previous sends, writes
//!                                                     <dir>/streaming.<rank> once 1000 arrived, and
//!                                                     at the first error <dir>/lost.<rank> ("<unix
//!                                                     ms> <error>"); once every rank wrote one
//!                                                     (at most 60 s), exit 42 on PeerLost
//! ```
//! Every mode runs over the driver `skifrun --driver` chose (`tests/fpga_model.rs` runs
//! the stream and full modes over the FPGA device model; `--lane-kb` is then not given).
//! Rank 0 prints one summary line on stdout; an unexpected outcome exits 98 with a message
//! on stderr, PeerLost too late exits 99.
#![deny(unsafe_code)]

use std::io::{IoSlice, Write};
use std::time::{Duration, Instant};

use skifch::driver::IOV_MAX;
use skifch::{Error, NetAddr, Unreachable, WaitPolicy};
use skifch_drivers::DefaultJob as Job;

type Chan = skifch::Channel<skifch_drivers::DefaultPort>;

/// Rank 0 saw PeerLost in time (or the stream ended as it should).
const SAW_PEER_LOST: i32 = 42;
/// PeerLost came, but later than [`LOST_WITHIN`].
const TOO_SLOW: i32 = 99;
/// Something else went wrong.
const UNEXPECTED: i32 = 98;
/// How soon after a death the peers must see it.
const LOST_WITHIN: Duration = Duration::from_secs(1);
/// Rank 1 announces its death this long before it happens.
const DEATH_NOTICE: Duration = Duration::from_millis(100);
/// Payload of the messages that fill a lane.
const FILL_LEN: usize = 100;

const DATA: u32 = 0;
const CONTROL: u32 = 1;

type Outcome = Result<i32, String>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let job = match skifch_drivers::init() {
        Ok(j) => j,
        Err(e) => exit(Err(format!("init: {e}"))),
    };
    let rank = job.rank();
    let outcome = match (args.first().map(String::as_str), rank) {
        (Some("full"), 0) => full_sender(&job, args.get(1).map(String::as_str)),
        (Some("full"), _) => full_receiver(&job),
        (Some("stream"), 0) => stream_receiver(&job),
        (Some("stream"), _) => stream_sender(&job, args.get(1)),
        (Some("too-large"), 0) => too_large_sender(&job),
        (Some("too-large"), _) => too_large_receiver(&job),
        (Some("bad-args"), 0) => bad_args_sender(&job),
        (Some("bad-args"), _) => bad_args_receiver(&job),
        (Some("finalized"), 0) => finalized_sender(&job),
        (Some("finalized"), _) => finalized_receiver(&job),
        (Some("gather"), _) => gather(&job, args.get(1)),
        (Some("closed"), 0) => closed_sender(&job),
        (Some("closed"), _) => closed_receiver(&job),
        (Some("ring"), _) => ring(&job, args.get(1)),
        (mode, _) => Err(format!(
            "unknown mode {mode:?} (see the source for the modes)"
        )),
    };
    // Status 0 means a clean end: finalize (process::exit skips the job's destructor).
    if let Ok(0) = outcome {
        drop(job);
    }
    exit(outcome.map_err(|e| format!("rank {rank}: {e}")))
}

fn exit(outcome: Outcome) -> ! {
    match outcome {
        Ok(code) => std::process::exit(code),
        Err(msg) => {
            // One write, so the line does not interleave with skifrun's.
            let _ = std::io::stderr().write_all(format!("fault_probe: {msg}\n").as_bytes());
            std::process::exit(UNEXPECTED)
        }
    }
}

/// Kills this process with SIGKILL, as `kill -9` from outside would.
#[allow(unsafe_code)]
fn die() -> ! {
    // SAFETY: raise takes an integer; SIGKILL ends the process here.
    unsafe { libc::raise(libc::SIGKILL) };
    exit(Err("still alive after SIGKILL".into()))
}

/// The fill message number `seq`: the number, then bytes that depend on it.
fn fill_msg(seq: u64) -> Vec<u8> {
    let mut m = seq.to_le_bytes().to_vec();
    m.extend((0..FILL_LEN - 8).map(|i| (seq as u8).wrapping_mul(31).wrapping_add(i as u8)));
    m
}

fn control<P: skifch::Port>(ch: &skifch::Channel<P>) -> Result<Vec<u8>, String> {
    ch.recv()
        .map(|m| m.to_vec())
        .map_err(|e| format!("control: {e}"))
}

/// Sends `fill_msg(seq..)` with `send_whole` until the lane is full; returns the next seq.
/// Then checks that further `send` and `send_whole` calls return WouldBlock at once.
fn fill(ch: &Chan, dst: NetAddr, mut seq: u64) -> Result<u64, String> {
    loop {
        match ch.send_whole(dst, &[IoSlice::new(&fill_msg(seq))]) {
            Ok(()) => seq += 1,
            Err(Error::WouldBlock) => break,
            Err(e) => return Err(format!("filling: {e}")),
        }
    }
    let mut slowest = Duration::ZERO;
    for k in 0..200 {
        let m = fill_msg(seq);
        let t = Instant::now();
        let r = match k % 2 {
            0 => ch.send(dst, &[IoSlice::new(&m)]),
            _ => ch.send_whole(dst, &[IoSlice::new(&m)]).map(|()| m.len()),
        };
        slowest = slowest.max(t.elapsed());
        if !matches!(r, Err(Error::WouldBlock)) {
            return Err(format!("send into a full lane: {r:?}, expected WouldBlock"));
        }
    }
    // A send that blocked would never return (nobody consumes); this catches slow ones.
    if slowest > Duration::from_millis(100) {
        return Err(format!("a send on a full lane took {slowest:?}"));
    }
    Ok(seq)
}

fn full_sender(job: &Job, how: Option<&str>) -> Outcome {
    let poll = match how {
        Some("poll") => true,
        Some("block") => false,
        other => return Err(format!("full: expected poll or block, got {other:?}")),
    };
    let ch = job.open(DATA).map_err(|e| e.to_string())?;
    let ctl = job.open(CONTROL).map_err(|e| e.to_string())?;
    let (dst, peer_ctl) = (job.addr(1, DATA), job.addr(1, CONTROL));
    let n = fill(&ch, dst, 0)?;
    // Nothing lost: rank 1 drains the lane and checks every message.
    ctl.send_all(peer_ctl, &[IoSlice::new(&n.to_le_bytes())])
        .map_err(|e| e.to_string())?;
    if control(&ctl)? != b"drained" {
        return Err("rank 1 did not confirm the drain".into());
    }
    let n2 = fill(&ch, dst, n)?;
    if n2 - n != n {
        return Err(format!(
            "the drained lane took {} messages, the fresh one {n}",
            n2 - n
        ));
    }
    ctl.send_all(peer_ctl, &[IoSlice::new(b"die")])
        .map_err(|e| e.to_string())?;
    // Spin for the notice so that its arrival time is the time it was sent.
    ctl.set_wait_policy(WaitPolicy::Spin);
    if control(&ctl)? != b"dying" {
        return Err("expected the death notice".into());
    }
    let death = Instant::now() + DEATH_NOTICE;
    let m = fill_msg(n2);
    let r = if poll {
        loop {
            match ch.send(dst, &[IoSlice::new(&m)]) {
                Err(Error::WouldBlock) => std::thread::yield_now(),
                r => break r,
            }
        }
    } else {
        ch.send_all(dst, &[IoSlice::new(&m)]).map(|_| m.len())
    };
    let seen = Instant::now();
    match r {
        // `death` is late by the notice's delivery time (milliseconds through a loaded
        // device model), so only a PeerLost well before the death counts as early.
        Err(Error::PeerLost { rank: 1 }) if seen + DEATH_NOTICE / 2 < death => {
            Err(format!("PeerLost {:?} before rank 1 died", death - seen))
        }
        Err(Error::PeerLost { rank: 1 }) => {
            let dt = seen - death;
            let call = if poll { "send" } else { "send_all" };
            println!("full {call}: {n} messages filled the lane, WouldBlock until PeerLost {dt:?} after the death");
            Ok(if dt < LOST_WITHIN {
                SAW_PEER_LOST
            } else {
                TOO_SLOW
            })
        }
        other => Err(format!("expected PeerLost from rank 1, got {other:?}")),
    }
}

fn full_receiver(job: &Job) -> Outcome {
    let ch = job.open(DATA).map_err(|e| e.to_string())?;
    let ctl = job.open(CONTROL).map_err(|e| e.to_string())?;
    let n = control(&ctl)?;
    let n = u64::from_le_bytes(n.try_into().map_err(|v| format!("bad count {v:?}"))?);
    for seq in 0..n {
        let m = ch
            .try_recv()
            .map_err(|e| format!("message {seq} of {n}: {e}"))?;
        if m.to_vec() != fill_msg(seq) {
            return Err(format!("message {seq} of {n} differs"));
        }
    }
    // The refused sends left nothing behind.
    if let Ok(m) = ch.try_recv() {
        return Err(format!("an extra message of {} bytes", m.len()));
    }
    let peer = job.addr(0, CONTROL);
    ctl.send_all(peer, &[IoSlice::new(b"drained")])
        .map_err(|e| e.to_string())?;
    if control(&ctl)? != b"die" {
        return Err("expected the order to die".into());
    }
    ctl.send_all(peer, &[IoSlice::new(b"dying")])
        .map_err(|e| e.to_string())?;
    std::thread::sleep(DEATH_NOTICE);
    die()
}

/// Length of stream message `seq` (8..=255 bytes, varying so records wrap the lane end at
/// every offset).
fn stream_len(seq: u64) -> usize {
    8 + (seq.wrapping_mul(37) % 248) as usize
}

fn stream_byte(seq: u64, i: usize) -> u8 {
    (seq as u8) ^ (i as u8).wrapping_mul(7)
}

fn stream_sender(job: &Job, pidfile: Option<&String>) -> Outcome {
    let pidfile = pidfile.ok_or("stream: the pid file argument is missing")?;
    let ch = job.open(DATA).map_err(|e| e.to_string())?;
    publish(pidfile, &std::process::id().to_string())?;
    let dst = job.addr(0, DATA);
    let mut buf = Vec::with_capacity(256);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seq = 0u64;
    loop {
        buf.clear();
        buf.extend_from_slice(&seq.to_le_bytes());
        buf.extend((8..stream_len(seq)).map(|i| stream_byte(seq, i)));
        loop {
            match ch.send_whole(dst, &[IoSlice::new(&buf)]) {
                Ok(()) => break,
                Err(Error::WouldBlock) => std::hint::spin_loop(),
                Err(e) => return Err(format!("stream send {seq}: {e}")),
            }
        }
        if seq.is_multiple_of(4096) && Instant::now() > deadline {
            return Err("nobody killed the streaming rank within 30 s".into());
        }
        seq += 1;
    }
}

fn stream_receiver(job: &Job) -> Outcome {
    let ch = job.open(DATA).map_err(|e| e.to_string())?;
    let mut next = 0u64;
    loop {
        let m = match ch.recv() {
            Ok(m) => m,
            Err(Error::PeerLost { rank: 1 }) => break,
            Err(e) => return Err(format!("after {next} messages: {e}")),
        };
        let v = m.to_vec();
        let seq = v
            .get(..8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
            .ok_or_else(|| format!("message {next}: only {} bytes", v.len()))?;
        if seq != next {
            let what = if seq < next { "duplicate" } else { "gap" };
            return Err(format!("{what}: message {seq} where {next} was due"));
        }
        if v.len() != stream_len(seq) || (8..v.len()).any(|i| v[i] != stream_byte(seq, i)) {
            return Err(format!("message {seq}: wrong length or bytes"));
        }
        next += 1;
    }
    println!("stream: received {next} messages in order, then PeerLost from rank 1");
    Ok(SAW_PEER_LOST)
}

/// Writes `text` to `path` whole (a temporary name, then renamed): a reader never sees half.
fn publish(path: &str, text: &str) -> Result<(), String> {
    let tmp = format!("{path}.tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| format!("{path}: {e}"))
}

/// Every rank streams to the next and checks the previous one's stream until an error
/// (the test takes a link down); see the module docs.
fn ring(job: &Job, dir: Option<&String>) -> Outcome {
    let dir = dir.ok_or("ring: the directory argument is missing")?;
    let (me, n) = (job.rank(), job.size());
    let ch = job.open(DATA).map_err(|e| e.to_string())?;
    let (to, from) = (job.addr((me + 1) % n, DATA), (me + n - 1) % n);
    let (mut seq, mut next) = (0u64, 0u64);
    let mut buf = Vec::with_capacity(256);
    let mut announced = false;
    let deadline = Instant::now() + Duration::from_secs(120);
    let err = loop {
        buf.clear();
        buf.extend_from_slice(&seq.to_le_bytes());
        buf.extend((8..stream_len(seq)).map(|i| stream_byte(seq, i)));
        match ch.send_whole(to, &[IoSlice::new(&buf)]) {
            Ok(()) => seq += 1,
            Err(Error::WouldBlock) => {}
            Err(e) => break e,
        }
        match ch.try_recv() {
            Ok(m) => {
                let v = m.to_vec();
                let got = v
                    .get(..8)
                    .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()));
                if m.src().rank() != from || got != Some(next) || v.len() != stream_len(next) {
                    return Err(format!(
                        "from {}: message {got:?} of {} bytes where {next} from rank {from} was due",
                        m.src(),
                        v.len()
                    ));
                }
                if (8..v.len()).any(|i| v[i] != stream_byte(next, i)) {
                    return Err(format!("message {next}: wrong bytes"));
                }
                next += 1;
            }
            Err(Error::WouldBlock) => {}
            Err(e) => break e,
        }
        if !announced && next >= 1000 {
            publish(&format!("{dir}/streaming.{me}"), "")?;
            announced = true;
        }
        if seq.is_multiple_of(1024) && Instant::now() > deadline {
            return Err("ring: no error within 120 s".into());
        }
    };
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    publish(&format!("{dir}/lost.{me}"), &format!("{ms} {err}"))?;
    println!("ring: rank {me}: {err}, after {next} messages in order");
    // Alive (port open) until every rank saw its error, so that none sees a node peer's
    // exit instead of the fault under test.
    let t0 = Instant::now();
    while !(0..n).all(|r| std::path::Path::new(&format!("{dir}/lost.{r}")).exists())
        && t0.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(ch);
    match err {
        Error::PeerLost { .. } => Ok(SAW_PEER_LOST),
        e => Err(format!("ring: {e}")),
    }
}

/// Deterministic content for the large messages.
fn big(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_add(salt) ^ (i >> 8) as u8)
        .collect()
}

fn too_large_sender(job: &Job) -> Outcome {
    let ch = job.open(DATA).map_err(|e| e.to_string())?;
    let dst = job.addr(1, DATA);
    let max = job.max_message();
    let one = big(max + 1, 1);
    match ch.send_whole(dst, &[IoSlice::new(&one)]) {
        Err(e @ Error::MessageTooLarge { len, max: m })
            if len == one.len() as u64 && m as usize == max && e.errno() == libc::EMSGSIZE => {}
        other => return Err(format!("send_whole of {} bytes: {other:?}", one.len())),
    }
    // The prefix form takes what fits: the whole (empty) lane.
    let n = ch
        .send(dst, &[IoSlice::new(&one)])
        .map_err(|e| format!("partial send: {e}"))?;
    if n == 0 || n >= one.len() {
        return Err(format!("send of {} bytes returned {n}", one.len()));
    }
    // 3.5 lanes in three iovec parts: several messages, waiting for room in between.
    let all = big(max * 7 / 2, 2);
    let (a, rest) = all.split_at(max / 3);
    let (b, c) = rest.split_at(max * 2);
    let msgs = ch
        .send_all(dst, &[IoSlice::new(a), IoSlice::new(b), IoSlice::new(c)])
        .map_err(|e| format!("send_all: {e}"))?;
    ch.send_all(dst, &[IoSlice::new(&(msgs as u64).to_le_bytes())])
        .map_err(|e| format!("trailer: {e}"))?;
    let ctl = job.open(CONTROL).map_err(|e| e.to_string())?;
    if control(&ctl)? != b"ok" {
        return Err("rank 1 did not confirm".into());
    }
    println!(
        "too-large: send_whole MessageTooLarge (max {max}), send took {n} of {}, send_all used {msgs} messages for {} bytes",
        one.len(),
        all.len()
    );
    Ok(0)
}

fn too_large_receiver(job: &Job) -> Outcome {
    let ch = job.open(DATA).map_err(|e| e.to_string())?;
    let max = job.max_message();
    let one = big(max + 1, 1);
    let m = ch.recv().map_err(|e| e.to_string())?.to_vec();
    if m.is_empty() || m.len() > max || m[..] != one[..m.len()] {
        return Err(format!("the partial send: {} bytes, not a prefix", m.len()));
    }
    let all = big(max * 7 / 2, 2);
    let (mut got, mut msgs) = (Vec::with_capacity(all.len()), 0u64);
    while got.len() < all.len() {
        let m = ch.recv().map_err(|e| e.to_string())?;
        got.extend(m.to_vec());
        msgs += 1;
    }
    if got != all {
        return Err(format!(
            "send_all reassembled to {} bytes that differ from the {} sent",
            got.len(),
            all.len()
        ));
    }
    let trailer = ch.recv().map_err(|e| e.to_string())?.to_vec();
    if trailer != msgs.to_le_bytes() || msgs < 4 {
        return Err(format!(
            "{msgs} messages received, sender says {trailer:?} (expected >= 4)"
        ));
    }
    let ctl = job.open(CONTROL).map_err(|e| e.to_string())?;
    ctl.send_all(job.addr(0, CONTROL), &[IoSlice::new(b"ok")])
        .map_err(|e| e.to_string())?;
    Ok(0)
}

fn bad_args_sender(job: &Job) -> Outcome {
    let ch = job.open(DATA).map_err(|e| e.to_string())?;
    let (size, ports) = (job.size() as u16, job.ports() as u16);
    let byte = [7u8];
    let one = [IoSlice::new(&byte)];
    for (dst, why) in [
        (NetAddr::new(size, 0), Unreachable::NoSuchRank),
        (NetAddr::new(u16::MAX, 0), Unreachable::NoSuchRank),
        (NetAddr::new(1, ports), Unreachable::NoSuchPort),
        (NetAddr::new(0, u16::MAX), Unreachable::NoSuchPort),
    ] {
        let results = [
            ch.send(dst, &one).map(|_| ()),
            ch.send_whole(dst, &one),
            ch.send_all(dst, &one).map(|_| ()),
        ];
        for r in results {
            match r {
                Err(e @ Error::Unreachable { addr, why: w })
                    if addr == dst && w == why && e.errno() == libc::EHOSTUNREACH => {}
                other => return Err(format!("send to {dst}: {other:?}, expected {why:?}")),
            }
        }
    }
    let dst = job.addr(1, DATA);
    let bytes: Vec<u8> = (0..=IOV_MAX).map(|i| i as u8).collect();
    let long: Vec<IoSlice<'_>> = bytes.chunks(1).map(IoSlice::new).collect();
    let results = [
        ch.send(dst, &long).map(|_| ()),
        ch.send_whole(dst, &long),
        ch.send_all(dst, &long).map(|_| ()),
    ];
    for r in results {
        match r {
            Err(e @ Error::InvalidArgument(_)) if e.errno() == libc::EINVAL => {}
            other => {
                return Err(format!(
                    "iovec of {} parts: {other:?}, expected InvalidArgument",
                    long.len()
                ))
            }
        }
    }
    // IOV_MAX parts exactly is fine; it is the first message rank 1 gets.
    let n = ch
        .send(dst, &long[..IOV_MAX])
        .map_err(|e| format!("iovec of IOV_MAX parts: {e}"))?;
    if n != IOV_MAX {
        return Err(format!("iovec of IOV_MAX 1-byte parts: sent {n}"));
    }
    let ctl = job.open(CONTROL).map_err(|e| e.to_string())?;
    if control(&ctl)? != b"ok" {
        return Err("rank 1 did not confirm".into());
    }
    println!(
        "bad-args: Unreachable for 4 addresses x 3 calls, InvalidArgument past IOV_MAX ({IOV_MAX})"
    );
    Ok(0)
}

fn bad_args_receiver(job: &Job) -> Outcome {
    let ch = job.open(DATA).map_err(|e| e.to_string())?;
    let m = ch.recv().map_err(|e| e.to_string())?.to_vec();
    let want: Vec<u8> = (0..IOV_MAX).map(|i| i as u8).collect();
    if m != want {
        return Err(format!(
            "expected the {IOV_MAX}-part message, got {} bytes",
            m.len()
        ));
    }
    let ctl = job.open(CONTROL).map_err(|e| e.to_string())?;
    ctl.send_all(job.addr(0, CONTROL), &[IoSlice::new(b"ok")])
        .map_err(|e| e.to_string())?;
    Ok(0)
}

/// Rank 0 of `finalized`: after rank 1 said goodbye, sends to it until `Unreachable`.
fn finalized_sender(job: &Job) -> Outcome {
    let ch = job.open(DATA).map_err(|e| e.to_string())?;
    let ctl = job.open(CONTROL).map_err(|e| e.to_string())?;
    if control(&ctl)? != b"bye" {
        return Err("expected goodbye".into());
    }
    let t0 = Instant::now();
    let to = job.addr(1, DATA);
    let mut sent = 0u64;
    loop {
        match ch.send(to, &[IoSlice::new(b"anyone?")]) {
            Ok(_) | Err(Error::WouldBlock) => sent += 1,
            Err(Error::Unreachable {
                why: Unreachable::Closed,
                ..
            }) => {
                println!("finalized: Unreachable (closed) after {sent} sends");
                return Ok(SAW_PEER_LOST);
            }
            Err(e) => return Err(format!("expected Unreachable (closed), got {e}")),
        }
        if t0.elapsed() > Duration::from_secs(5) {
            return Err(format!("{sent} sends in 5 s, none Unreachable"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Rank 1 of `finalized`: says goodbye and finalizes (status 0 drops the job).
fn finalized_receiver(job: &Job) -> Outcome {
    let ctl = job.open(CONTROL).map_err(|e| e.to_string())?;
    ctl.send_all(job.addr(0, CONTROL), &[IoSlice::new(b"bye")])
        .map_err(|e| e.to_string())?;
    Ok(0)
}

/// The port `closed` plays with.
const SCRATCH: u32 = 2;

/// Sends to `to` until `done` says stop (at most 5 s); returns the sends tried.
fn send_until(
    ch: &Chan,
    to: NetAddr,
    mut done: impl FnMut(&Result<usize, Error>) -> bool,
) -> Result<u64, String> {
    let t0 = Instant::now();
    let mut n = 0u64;
    loop {
        let r = ch.send(to, &[IoSlice::new(b"knock")]);
        n += 1;
        if done(&r) {
            return Ok(n);
        }
        if t0.elapsed() > Duration::from_secs(5) {
            return Err(format!("after {n} sends in 5 s, the last gave {r:?}"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Rank 0 of `closed`.
fn closed_sender(job: &Job) -> Outcome {
    let ch = job.open(DATA).map_err(|e| e.to_string())?;
    let ctl = job.open(CONTROL).map_err(|e| e.to_string())?;
    let to = job.addr(1, SCRATCH);
    if control(&ctl)? != b"closed" {
        return Err("expected closed".into());
    }
    let closed = |r: &Result<usize, Error>| {
        matches!(
            r,
            Err(Error::Unreachable {
                why: Unreachable::Closed,
                ..
            })
        )
    };
    let n = send_until(&ch, to, closed)?;
    ctl.send_all(job.addr(1, CONTROL), &[IoSlice::new(b"seen")])
        .map_err(|e| e.to_string())?;
    if control(&ctl)? != b"open" {
        return Err("expected open".into());
    }
    let m = send_until(&ch, to, |r| r.is_ok())?;
    if control(&ctl)? != b"got it" {
        return Err("expected the receiver to get the message".into());
    }
    println!("closed: Unreachable (closed) after {n} sends, delivered after reopening ({m} sends)");
    Ok(SAW_PEER_LOST)
}

/// Rank 1 of `closed`.
fn closed_receiver(job: &Job) -> Outcome {
    let ctl = job.open(CONTROL).map_err(|e| e.to_string())?;
    let peer = job.addr(0, CONTROL);
    drop(job.open(SCRATCH).map_err(|e| e.to_string())?); // opened, then closed
    ctl.send_all(peer, &[IoSlice::new(b"closed")])
        .map_err(|e| e.to_string())?;
    if control(&ctl)? != b"seen" {
        return Err("expected seen".into());
    }
    let scratch = job.open(SCRATCH).map_err(|e| e.to_string())?;
    ctl.send_all(peer, &[IoSlice::new(b"open")])
        .map_err(|e| e.to_string())?;
    // Anything sent while the port was closed was refused: the first message is the one
    // sent after the reopening.
    let m = scratch.recv().map_err(|e| e.to_string())?;
    if m.to_vec() != b"knock" {
        return Err("wrong message".into());
    }
    drop(m);
    ctl.send_all(peer, &[IoSlice::new(b"got it")])
        .map_err(|e| e.to_string())?;
    Ok(0)
}

/// `gather`: many to one, senders leaving early (their late credit returns must not stall
/// the others' traffic).
fn gather(job: &Job, count: Option<&String>) -> Outcome {
    let count: u64 = count
        .and_then(|c| c.parse().ok())
        .ok_or("gather: the message count argument is missing")?;
    let ch = job.open(DATA).map_err(|e| e.to_string())?;
    if job.rank() > 0 {
        for seq in 0..count {
            ch.send_whole_wait(job.addr(0, DATA), &[IoSlice::new(&fill_msg(seq))])
                .map_err(|e| format!("message {seq}: {e}"))?;
        }
        return Ok(0);
    }
    let mut next = vec![0u64; job.size() as usize];
    let total = count * (job.size() as u64 - 1);
    for k in 0..total {
        let m = ch
            .recv_timeout(Duration::from_secs(10))
            .map_err(|e| format!("message {k} of {total}: {e}"))?;
        let src = m.src().rank() as usize;
        if src == 0 || m.to_vec() != fill_msg(next[src]) {
            return Err(format!(
                "message {k}: from {src}, expected its #{}",
                next[src]
            ));
        }
        next[src] += 1;
    }
    println!(
        "gather: {total} messages from {} ranks in order",
        job.size() - 1
    );
    Ok(0)
}
