//! The conformance suite: what every driver must show (spec: "Ordering and reliability",
//! "Recv", "RecvComp"; driver obligations in [`crate::driver`]).
//!
//! The checks are SPMD: every rank of a job calls the same function with its [`Job`], as
//! in an MPI test. They use port 0 for data and port 1 for a [`Barrier`], so the driver
//! must offer at least two ports and at least two ranks. Each returns `Ok(())` or an
//! error naming what went wrong ([`Error::InvalidArgument`] with a `conformance:` message).
//!
//! A driver's own tests run [`run_all`] on an in-process job and/or under `skifrun`, and
//! [`peer_failure`] last (it kills a rank). Example with the in-process job:
//! ```
//! use skifch::{conformance, local};
//! local::run(3, |job| conformance::run_all(&job, &conformance::Config::small())).unwrap();
//! ```

use std::io::IoSlice;
use std::time::{Duration, Instant};

use crate::coll::Barrier;
use crate::{Channel, Driver, Error, Job, NetAddr, Port, Result};

/// Bytes of per-message overhead assumed when estimating how many messages fit a lane.
const REC: usize = 16;

/// Port used for data by the suite.
pub const DATA_PORT: u32 = 0;
/// Port used for the suite's barrier.
pub const SYNC_PORT: u32 = 1;

/// How much traffic the checks generate.
#[derive(Clone, Debug)]
pub struct Config {
    /// Messages per sender in the ordering / interleaving checks.
    pub messages: u32,
    /// Largest payload in the mixed-size checks.
    pub max_payload: usize,
    /// Bytes a receiving port may hold for one sender before the sender is pushed back,
    /// where a driver's receive memory per pair is more than three of its largest
    /// messages (the hierarchy's node lanes under a fabric's smaller limit); 0: three
    /// largest messages. The "completion" check sends that much plus `messages` while
    /// holding the first message, and requires the sender to stall.
    pub pair_memory: usize,
}

impl Config {
    /// Small counts (Miri, debug builds, CI).
    pub fn small() -> Self {
        Config {
            messages: 300,
            max_payload: 300,
            pair_memory: 0,
        }
    }
    /// The default counts.
    pub fn standard() -> Self {
        Config {
            messages: 5000,
            max_payload: 3000,
            pair_memory: 0,
        }
    }
}

fn fail(check: &str, what: String) -> Error {
    Error::InvalidArgument(format!("conformance: {check}: {what}").into())
}

/// The payload pattern of message `seq` from `src` (first 12 bytes: src, seq, len).
fn fill(buf: &mut Vec<u8>, src: u32, seq: u32, len: usize) {
    buf.clear();
    let hdr = [
        src.to_le_bytes(),
        seq.to_le_bytes(),
        (len as u32).to_le_bytes(),
    ]
    .concat();
    buf.extend_from_slice(&hdr[..len.min(12)]);
    buf.extend(
        (buf.len()..len).map(|i| (i as u32).wrapping_mul(31).wrapping_add(seq ^ (src << 8)) as u8),
    );
}

fn msg_len(src: u32, seq: u32, max: usize) -> usize {
    // Mixed sizes: zero-length messages, sizes not multiple of 8, up to `max`; every
    // non-empty message carries the 12-byte (src, seq, len) prefix.
    let max = max.max(12);
    if seq % 11 == 5 {
        return 0;
    }
    match seq % 7 {
        0 => 12,
        1 => 13,
        2 => 64.min(max),
        3 => 12 + ((seq as usize).wrapping_mul(2654435761) ^ src as usize) % (max - 11),
        _ => (12 + seq as usize % 50).min(max),
    }
}

/// Checks a received message against the pattern; returns (src rank, seq).
fn verify<P: Port>(
    check: &str,
    m: &crate::Message<'_, P>,
    scratch: &mut Vec<u8>,
) -> Result<(u32, u32)> {
    let data = m.to_vec();
    if data.len() < 12 {
        if !data.is_empty() {
            return Err(fail(
                check,
                format!("short message of {} bytes from {}", data.len(), m.src()),
            ));
        }
        return Ok((m.src().rank(), u32::MAX));
    }
    let src = u32::from_le_bytes(data[0..4].try_into().unwrap());
    let seq = u32::from_le_bytes(data[4..8].try_into().unwrap());
    let len = u32::from_le_bytes(data[8..12].try_into().unwrap()) as usize;
    if src != m.src().rank() {
        return Err(fail(
            check,
            format!(
                "message says it is from rank {src} but arrived from {}",
                m.src()
            ),
        ));
    }
    fill(scratch, src, seq, len);
    if *scratch != data {
        return Err(fail(
            check,
            format!("corrupt payload in message {seq} from rank {src} ({len} bytes)"),
        ));
    }
    Ok((src, seq))
}

/// Each rank sends `messages` mixed-size messages to every rank (itself included) while
/// receiving: checks per-pair order, arbitrary interleaving across senders, content, no
/// loss and no duplication, zero-length messages.
pub fn ordering_and_interleaving<D: Driver>(s: &mut Suite<D>) -> Result<()> {
    let (job, ch, sync, bar, cfg) = s.parts();
    const C: &str = "ordering";
    let (me, n) = (job.rank(), job.size());
    bar.wait(sync)?;
    let mut next_send = vec![0u32; n as usize];
    let mut next_recv = vec![0u32; n as usize];
    let mut zero_seen = vec![0u32; n as usize];
    let total_in = cfg.messages as u64 * n as u64;
    let mut got = 0u64;
    let (mut buf, mut scratch) = (Vec::new(), Vec::new());
    let mut dst = me;
    let mut switches = 0u32;
    let mut last_src = u32::MAX;
    let deadline = Instant::now() + Duration::from_secs(120);
    while got < total_in || next_send.iter().any(|&s| s < cfg.messages) {
        // Send one message to the next destination that still needs some.
        for _ in 0..n {
            dst = (dst + 1) % n;
            let seq = next_send[dst as usize];
            if seq >= cfg.messages {
                continue;
            }
            let len = msg_len(me, seq, cfg.max_payload.min(job.max_message()));
            fill(&mut buf, me, seq, len);
            let parts = if len > 20 {
                vec![IoSlice::new(&buf[..7]), IoSlice::new(&buf[7..])]
            } else {
                vec![IoSlice::new(&buf)]
            };
            match ch.send_whole(NetAddr::new(dst as u16, DATA_PORT as u16), &parts) {
                Ok(()) => next_send[dst as usize] += 1,
                Err(Error::WouldBlock) => {}
                Err(e) => return Err(e),
            }
            break;
        }
        // Receive what is there.
        for _ in 0..4 {
            match ch.try_recv() {
                Ok(m) => {
                    let (src, seq) = verify(C, &m, &mut scratch)?;
                    let exp = &mut next_recv[src as usize];
                    if seq == u32::MAX {
                        // Zero-length: its place in the sequence is known from the pattern.
                        if msg_len(src, *exp, cfg.max_payload.min(job.max_message())) != 0 {
                            return Err(fail(
                                C,
                                format!("unexpected empty message from {src} at seq {exp}"),
                            ));
                        }
                        zero_seen[src as usize] += 1;
                    } else if seq != *exp {
                        return Err(fail(C, format!("from rank {src}: got seq {seq}, expected {exp} (reordered, lost or duplicated)")));
                    }
                    *exp += 1;
                    got += 1;
                    if src != last_src {
                        switches += 1;
                        last_src = src;
                    }
                }
                Err(Error::WouldBlock) => break,
                Err(e) => return Err(e),
            }
        }
        if Instant::now() > deadline {
            return Err(fail(
                C,
                format!("no progress: received {got} of {total_in}"),
            ));
        }
    }
    if next_recv.iter().any(|&r| r != cfg.messages) {
        return Err(fail(
            C,
            format!(
                "received counts {next_recv:?}, expected {} each",
                cfg.messages
            ),
        ));
    }
    if zero_seen.iter().all(|&z| z == 0) && cfg.messages > 20 {
        return Err(fail(C, "no zero-length message was delivered".into()));
    }
    let _ = switches; // interleaving is allowed, not required
    bar.wait(sync)?;
    Ok(())
}

/// Rank 0 receives from every other rank; senders send messages larger than the
/// receiver's lane with many iovec parts: each send forms one message from a prefix (a
/// partial send), the caller advances; the receiver reassembles and checks every byte.
pub fn partial_sends<D: Driver>(s: &mut Suite<D>) -> Result<()> {
    let (job, ch, sync, bar, _cfg) = s.parts();
    const C: &str = "partial sends";
    let (me, n) = (job.rank(), job.size());
    bar.wait(sync)?;
    let big = job.max_message() * 2 + 1000;
    let pattern = |src: u32, i: usize| (i as u32).wrapping_mul(7).wrapping_add(src * 13) as u8;
    if me != 0 {
        let data: Vec<u8> = (0..big).map(|i| pattern(me, i)).collect();
        // Odd-sized parts (boundaries anywhere in a record), few enough for IOV_MAX.
        let part = (big / (crate::driver::IOV_MAX / 2)).max(997) | 1;
        let parts: Vec<IoSlice<'_>> = data.chunks(part).map(IoSlice::new).collect();
        let (mut sent, mut msgs) = (0usize, 0u32);
        let mut rest: Vec<IoSlice<'_>> = parts.clone();
        let mut rest: &mut [IoSlice<'_>] = &mut rest;
        while sent < big {
            match ch.send(NetAddr::new(0, DATA_PORT as u16), rest) {
                Ok(k) => {
                    if k == 0 || k > big - sent {
                        return Err(fail(
                            C,
                            format!("send returned {k} with {} bytes left", big - sent),
                        ));
                    }
                    sent += k;
                    msgs += 1;
                    IoSlice::advance_slices(&mut rest, k);
                }
                Err(Error::WouldBlock) => std::thread::yield_now(),
                Err(e) => return Err(e),
            }
        }
        if msgs < 3 {
            return Err(fail(
                C,
                format!(
                    "{big} bytes went out in {msgs} messages; the lane holds only {}",
                    job.max_message()
                ),
            ));
        }
    } else {
        let mut have: Vec<Vec<u8>> = vec![Vec::new(); n as usize];
        while have.iter().skip(1).any(|v| v.len() < big) {
            let m = ch.recv_timeout(Duration::from_secs(30))?;
            if m.len() > job.max_message() {
                return Err(fail(
                    C,
                    format!(
                        "a {}-byte message exceeds the maximum {}",
                        m.len(),
                        job.max_message()
                    ),
                ));
            }
            let v = &mut have[m.src().rank() as usize];
            for s in m.segments() {
                v.extend_from_slice(s);
            }
        }
        for (src, v) in have.iter().enumerate().skip(1) {
            if v.len() != big
                || v.iter()
                    .enumerate()
                    .any(|(i, &b)| b != pattern(src as u32, i))
            {
                return Err(fail(
                    C,
                    format!(
                        "reassembled data from rank {src} is wrong ({} bytes)",
                        v.len()
                    ),
                ));
            }
        }
    }
    bar.wait(sync)?;
    Ok(())
}

/// Every other rank sends to rank 0 until its sends would block (rank 0 does not consume);
/// then rank 0 drains while senders finish: checks that back-pressure loses and duplicates
/// nothing, with many senders. A would-block counts as back-pressure only when it persists
/// (a transport may refuse a send for a moment with room at the receiver, obligation 2).
pub fn back_pressure<D: Driver>(s: &mut Suite<D>) -> Result<()> {
    let (job, ch, sync, bar, cfg) = s.parts();
    const C: &str = "back-pressure";
    let (me, n) = (job.rank(), job.size());
    bar.wait(sync)?;
    let mut buf = Vec::new();
    let to0 = NetAddr::new(0, DATA_PORT as u16);
    if me != 0 {
        let mut seq = 0u32;
        // Fill until the receiver's lane pushes back.
        let t0 = Instant::now();
        let mut refused = 0;
        loop {
            fill(&mut buf, me, seq, 24);
            match ch.send_whole(to0, &[IoSlice::new(&buf)]) {
                Ok(()) => {
                    seq += 1;
                    refused = 0;
                }
                Err(Error::WouldBlock) if refused >= 32 => break,
                Err(Error::WouldBlock) => {
                    refused += 1;
                    std::thread::yield_now();
                }
                Err(e) => return Err(e),
            }
            if t0.elapsed() > Duration::from_secs(30) {
                return Err(fail(
                    C,
                    format!("{seq} messages sent and still no back-pressure"),
                ));
            }
        }
        bar.wait(sync)?; // rank 0 starts draining only now
        let total = seq + cfg.messages;
        while seq < total {
            fill(&mut buf, me, seq, 24);
            ch.send_whole_wait(to0, &[IoSlice::new(&buf)])?;
            seq += 1;
        }
        ch.send_all(to0, &[IoSlice::new(&[])])?; // end marker
    } else {
        bar.wait(sync)?;
        let mut next = vec![0u32; n as usize];
        let mut ended = 1;
        let mut scratch = Vec::new();
        while ended < n {
            let m = ch.recv_timeout(Duration::from_secs(30))?;
            if m.is_empty() {
                ended += 1;
                continue;
            }
            let (src, seq) = verify(C, &m, &mut scratch)?;
            if seq != next[src as usize] {
                return Err(fail(
                    C,
                    format!(
                        "from rank {src}: seq {seq}, expected {}",
                        next[src as usize]
                    ),
                ));
            }
            next[src as usize] += 1;
        }
        if next.iter().skip(1).any(|&k| k <= cfg.messages) {
            return Err(fail(
                C,
                format!("counts {next:?}: every sender should have filled the lane first"),
            ));
        }
    }
    bar.wait(sync)?;
    Ok(())
}

/// Rank 1 sends a stream to rank 0; rank 0 holds its first message while receiving and
/// completing the following ones, until the sender is pushed back (memory is reclaimed only
/// up to the oldest held message); the held bytes must be unchanged throughout. Then
/// several messages are held and completed in scrambled order, and traffic continues.
pub fn hold_and_out_of_order<D: Driver>(s: &mut Suite<D>) -> Result<()> {
    let (job, ch, sync, bar, cfg) = s.parts();
    const C: &str = "completion";
    let me = job.rank();
    bar.wait(sync)?;
    let len = 200usize;
    let pair = cfg.pair_memory.max(job.max_message() * 3);
    let count = (pair / len) as u32 + cfg.messages;
    let mut buf = Vec::new();
    if me == 1 {
        for seq in 0..count {
            fill(&mut buf, me, seq, len);
            ch.send_whole_wait(NetAddr::new(0, DATA_PORT as u16), &[IoSlice::new(&buf)])?;
        }
    } else if me == 0 {
        let mut scratch = Vec::new();
        let held = ch.recv_timeout(Duration::from_secs(30))?;
        let copy = held.to_vec();
        let mut seq = 1u32;
        // Receive until the sender is stalled by the held message.
        loop {
            match ch.recv_timeout(Duration::from_millis(200)) {
                Ok(m) => {
                    let (_, s) = verify(C, &m, &mut scratch)?;
                    if s != seq {
                        return Err(fail(C, format!("got seq {s}, expected {seq}")));
                    }
                    seq += 1;
                }
                Err(Error::TimedOut) => break,
                Err(e) => return Err(e),
            }
        }
        if seq >= count {
            return Err(fail(
                C,
                "a held message did not hold back the lane's memory".into(),
            ));
        }
        if held.to_vec() != copy {
            return Err(fail(
                C,
                "a held message changed before it was completed".into(),
            ));
        }
        drop(held);
        // Hold batches and complete them in scrambled order.
        while seq < count {
            let mut batch = Vec::new();
            // As many as the lane can hold at once (held messages pin their memory).
            let fit = ((job.max_message() + REC) / (len + REC)).clamp(1, 8);
            for _ in 0..fit {
                if seq + batch.len() as u32 >= count {
                    break;
                }
                batch.push(ch.recv_timeout(Duration::from_secs(30))?);
            }
            let copies: Vec<Vec<u8>> = batch.iter().map(|m| m.to_vec()).collect();
            // Scrambled: last, first, second-to-last, second, ...
            let k = copies.len();
            let order: Vec<usize> = (0..k)
                .map(|j| if j % 2 == 0 { k - 1 - j / 2 } else { j / 2 })
                .collect();
            let mut slots: Vec<Option<_>> = batch.into_iter().map(Some).collect();
            for &k in order.iter() {
                if let Some(m) = slots.get_mut(k).and_then(|s| s.take()) {
                    if m.to_vec() != copies[k] {
                        return Err(fail(
                            C,
                            "a held message changed while others were completed".into(),
                        ));
                    }
                    let (_, s) = verify(C, &m, &mut scratch)?;
                    if s != seq + k as u32 {
                        return Err(fail(C, format!("got seq {s}, expected {}", seq + k as u32)));
                    }
                }
            }
            seq += copies.len() as u32;
        }
    }
    bar.wait(sync)?;
    Ok(())
}

/// Bad input: unknown rank or port, an iovec that is too long, a whole message larger
/// than any receiver, a second open of a port — each a clear error, nothing sent.
pub fn bad_input<D: Driver>(s: &mut Suite<D>) -> Result<()> {
    let (job, ch, sync, bar, _cfg) = s.parts();
    const C: &str = "bad input";
    bar.wait(sync)?;
    let b = [1u8; 8];
    let one = [IoSlice::new(&b)];
    let expect = |r: Result<usize>, what: &str, ok: fn(&Error) -> bool| match r {
        Err(e) if ok(&e) => Ok(()),
        other => Err(fail(C, format!("{what}: got {other:?}"))),
    };
    expect(
        ch.send(NetAddr::new(job.size() as u16, 0), &one),
        "send to a rank past the job",
        |e| matches!(e, Error::Unreachable { .. }),
    )?;
    expect(
        ch.send(NetAddr::new(0, job.ports() as u16), &one),
        "send to a port past the last",
        |e| matches!(e, Error::Unreachable { .. }),
    )?;
    // After a valid send (a driver may remember its last destination), the all-ones
    // address (`SKIFCH_ADDR_INVALID`) is still refused.
    ch.send_whole_wait(ch.addr(), &one)?;
    drop(ch.recv_timeout(Duration::from_secs(30))?);
    expect(
        ch.send(NetAddr::from(u32::MAX), &one),
        "send to the all-ones address after a valid send",
        |e| matches!(e, Error::Unreachable { .. }),
    )?;
    let many = vec![IoSlice::new(&b); crate::driver::IOV_MAX + 1];
    expect(ch.send(NetAddr::new(0, 0), &many), "iovec too long", |e| {
        matches!(e, Error::InvalidArgument(_))
    })?;
    let huge = vec![0u8; job.max_message() + 1];
    expect(
        ch.send_whole(NetAddr::new(0, 0), &[IoSlice::new(&huge)])
            .map(|_| 0),
        "whole message larger than the receiver",
        |e| matches!(e, Error::MessageTooLarge { .. }),
    )?;
    match job.open(DATA_PORT) {
        Err(Error::InvalidArgument(_)) => {}
        Err(e) => return Err(fail(C, format!("second open of a port: {e}"))),
        Ok(_) => return Err(fail(C, "a port was opened twice".into())),
    }
    bar.wait(sync)?;
    // Nothing from the failed sends may have arrived.
    match ch.try_recv() {
        Err(Error::WouldBlock) => {}
        Ok(m) => {
            return Err(fail(
                C,
                format!("a failed send delivered a {}-byte message", m.len()),
            ))
        }
        Err(e) => return Err(e),
    }
    bar.wait(sync)?;
    Ok(())
}

/// One rank's state for the suite: its job, its data and barrier channels (opened once,
/// so no check races a peer that is closing or reopening a port) and the barrier.
pub struct Suite<D: Driver> {
    job: Job<D>,
    data: Channel<D::Port>,
    sync: Channel<D::Port>,
    bar: Barrier,
    cfg: Config,
}

impl<D: Driver> Suite<D> {
    /// Opens ports [`DATA_PORT`] and [`SYNC_PORT`]; needs >= 2 ranks and >= 2 ports.
    pub fn new(job: &Job<D>, cfg: Config) -> Result<Self> {
        if job.size() < 2 || job.ports() < 2 {
            return Err(fail(
                "setup",
                format!(
                    "needs >= 2 ranks and >= 2 ports (have {} and {})",
                    job.size(),
                    job.ports()
                ),
            ));
        }
        Ok(Suite {
            data: job.open(DATA_PORT)?,
            sync: job.open(SYNC_PORT)?,
            bar: Barrier::new(job.rank(), job.size()),
            job: job.clone(),
            cfg,
        })
    }

    #[allow(clippy::type_complexity)]
    fn parts(
        &mut self,
    ) -> (
        &Job<D>,
        &Channel<D::Port>,
        &Channel<D::Port>,
        &mut Barrier,
        &Config,
    ) {
        (&self.job, &self.data, &self.sync, &mut self.bar, &self.cfg)
    }
}

/// Every check except [`peer_failure`], in order. All ranks must call it.
pub fn run_all<D: Driver>(job: &Job<D>, cfg: &Config) -> Result<()> {
    let s = &mut Suite::new(job, cfg.clone())?;
    bad_input(s)?;
    ordering_and_interleaving(s)?;
    partial_sends(s)?;
    back_pressure(s)?;
    hold_and_out_of_order(s)?;
    Ok(())
}

/// Peer failure: rank `size-1` calls `die` (which must end it without finalizing: a
/// SIGKILL for a process, a panic for a thread); rank 0, blocked in `recv`, and every
/// survivor sending to the victim, must see [`Error::PeerLost`] within `within`. Returns
/// for survivors only; the job is failed afterwards.
pub fn peer_failure<D: Driver>(
    s: &mut Suite<D>,
    within: Duration,
    die: impl FnOnce(),
) -> Result<()> {
    const C: &str = "peer failure";
    let (job, ch, sync, bar, _) = s.parts();
    let (me, n) = (job.rank(), job.size());
    let victim = n - 1;
    bar.wait(sync)?;
    if me == victim {
        std::thread::sleep(Duration::from_millis(100));
        die();
        return Err(fail(C, "the victim's die() returned".into()));
    }
    let t0 = Instant::now();
    let limit = within + Duration::from_millis(100);
    if me == 0 {
        match ch.recv_timeout(limit + Duration::from_secs(5)) {
            Err(Error::PeerLost { rank }) if rank == victim => {}
            Err(e) => {
                return Err(fail(
                    C,
                    format!("blocked recv: expected PeerLost(rank {victim}), got {e}"),
                ))
            }
            Ok(m) => {
                return Err(fail(
                    C,
                    format!("unexpected {}-byte message from {}", m.len(), m.src()),
                ))
            }
        }
    } else {
        let to = NetAddr::new(victim as u16, DATA_PORT as u16);
        loop {
            match ch.send(to, &[IoSlice::new(b"ping")]) {
                Err(Error::PeerLost { rank }) if rank == victim => break,
                Ok(_) | Err(Error::WouldBlock) => std::thread::sleep(Duration::from_millis(1)),
                Err(e) => {
                    return Err(fail(
                        C,
                        format!("send to the victim: expected PeerLost, got {e}"),
                    ))
                }
            }
            if t0.elapsed() > limit + Duration::from_secs(5) {
                return Err(fail(C, "sends to a dead rank never failed".into()));
            }
        }
    }
    let dt = t0.elapsed();
    if dt > limit {
        return Err(fail(
            C,
            format!("peer loss reported after {dt:?}, limit {limit:?}"),
        ));
    }
    Ok(())
}
