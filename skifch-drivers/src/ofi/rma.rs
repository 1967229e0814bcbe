//! Remote memory access over libfabric (`FI_RMA`, `fi_rma(3)`): the [`skifch::rma`]
//! capability of peers reached by transfers ([`skifch::rma::RmaCaps::transfers`]).
//!
//! A rank's segments are registered with the provider for remote reads and writes
//! (`fi_mr_reg`, `FI_REMOTE_READ | FI_REMOTE_WRITE`); a segment's token carries the
//! address peers name it by (its virtual address under `FI_MR_VIRT_ADDR`, else 0: an
//! offset), its key (the provider's under `FI_MR_PROV_KEY`, else one this rank chose) and
//! this rank's RMA endpoint address. A put is one `fi_writemsg` with
//! `FI_DELIVERY_COMPLETE` (its completion means the data is in the target's memory), a get
//! one `fi_readmsg`. A put of at most the provider's inject size (`FI_INJECT`: the source
//! is copied by the call) stays in flight, up to [`SLOTS`] of them, until
//! [`skifch::rma::Window::quiet`] (or a get, which completes them first so that it reads
//! them); every other transfer waits for its completion, so the caller's buffer is free at
//! return.
//!
//! ## Its own fabric objects
//! RMA uses a domain, address vector, endpoint and completion queue of its own (same
//! provider and interface as the messages), opened when a library first asks for the
//! capability ([`skifch::Driver::rma`]). The message endpoints' completion handling
//! (credits, batches) never sees an RMA completion, and they are not opened with
//! `FI_RMA`, which providers may serve with other protocols.
//!
//! ## Progress at the target
//! A target's provider applies the transfers it receives only while some call drives it:
//! `tcp;ofi_rxm` says so (`FI_PROGRESS_MANUAL`), and `net` in libfabric 1.17, though it
//! reports `FI_PROGRESS_AUTO`, served no get while its target made no RMA call (tried:
//! the test over `net` hung without this thread). A thread per rank (started with the
//! rank's first segment peers can reach) therefore reads the RMA completion queue when no
//! call of this rank holds it (reaping its puts in flight), so a target busy computing,
//! or waiting on its own memory, still serves its peers. Over `net` the thread sleeps on
//! the RMA domain's progress set ([`Ep::progress_set`]: the domain holds only RMA
//! connections, so message traffic never wakes it) and reads when a peer's transfer
//! arrives: a put with its remote completion takes a wake-up, not a tick (8 B put + quiet
//! between two namespaces 1.10 ms -> 0.03 ms, `docs/results-2026-11-30-rma-wake`). A set
//! found readable before the thread could sleep `HOT_WAKES` (16) times in a row (this
//! rank's own call holding the queue, data the provider leaves unread, or a stream of
//! transfers) costs one tick's sleep, so the thread never spins.
//! Elsewhere a CQ's descriptor would not wake for a peer's transfer (no completion at
//! the target), so the thread reads every [`PROGRESS_EVERY`]: there a transfer can take
//! up to a millisecond. Over either, transfers stay slower than the message path's
//! aggregated puts, which is why skifshmem uses them only when asked (`docs/CLUSTER.md`,
//! "Remote memory access across hosts").
//!
//! ## Failure
//! A transfer to a rank the message driver reports lost (heartbeats, `SKIFCH_OFI_TIMEOUT_MS`)
//! fails with `PeerLost`; one to a rank that finalized (its registrations closed) fails at
//! once with the provider's error (`Unreachable`, `Closed`, once its goodbye was heard). A
//! transfer abandoned in flight (a lost rank that never answered) leaves the provider
//! unusable for RMA (later calls fail with the same error): the job has lost a rank anyway.
//!
//! ## Limits
//! Providers that need local buffers registered (`FI_MR_LOCAL`: `verbs`) or keys wider
//! than 64 bits (`FI_MR_RAW`) or memory bound to endpoints (`FI_MR_ENDPOINT`) are not
//! asked for: there [`open`] fails, the driver offers no RMA and libraries take their
//! message path. No atomics (`fi_atomic`): see [`skifch::rma`], "Peers reached by
//! transfers".
#![allow(unsafe_code)] // libfabric calls on memory peers write

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use memmap2::{MmapOptions, MmapRaw};
use skifch::rma::{PeerMapping, RemoteSegment, Rma, RmaCaps, Segment};
use skifch::{Error, Result};

use super::fabric::{readable_now, wait_readable, Ep, Net};
use super::ffi::*;
use super::live::Live;
use super::port::NONE;
use super::sys::{self, Owned};
use super::Config;

/// Interval of the progress thread's reads without a progress set, and its longest
/// sleep on one (module docs, "Progress at the target").
pub const PROGRESS_EVERY: Duration = Duration::from_millis(1);

/// The capabilities asked of the RMA domain.
const CAPS: u32 = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

/// Transfers a rank can have in flight (small puts waiting for their completion).
pub const SLOTS: usize = 64;

/// The transfers in flight (`Inner::op`).
struct Op {
    /// One context per transfer in flight (boxed: the addresses go to the provider).
    ctx: Box<[fi_context2]>,
    /// The target rank of the transfer in each slot; `None`: free.
    busy: Vec<Option<u32>>,
    inflight: usize,
    /// A put that failed after its call returned (found by the progress thread or by a
    /// later call's reaping): reported by the next call.
    failed: Option<Error>,
    /// Why RMA is unusable (a transfer was abandoned in flight).
    broken: Option<String>,
}

// SAFETY: the contexts are provider scratch space handed out only while `Inner::op` is
// locked; their pointers are the provider's, never dereferenced here.
unsafe impl Send for Op {}

impl Op {
    /// The slot whose context is `c`.
    fn slot_of(&self, c: *mut std::ffi::c_void) -> Option<usize> {
        let off = (c as usize).checked_sub(self.ctx.as_ptr() as usize)?;
        let sz = std::mem::size_of::<fi_context2>();
        (off % sz == 0 && off / sz < self.ctx.len()).then_some(off / sz)
    }
    fn free(&mut self, slot: usize) -> Option<u32> {
        let r = self.busy.get_mut(slot)?.take()?;
        self.inflight -= 1;
        Some(r)
    }
}

struct Inner {
    // Field order is drop order: the endpoint before its domain.
    ep: Ep,
    net: Arc<Net>,
    op: Mutex<Op>,
    peers: Mutex<HashMap<Vec<u8>, fi_addr_t>>,
    next_key: AtomicU64,
    /// Largest transfer the endpoint takes in one call.
    max: usize,
    /// Largest put sent with `FI_INJECT` (the source copied at the call).
    inject: usize,
    live: Arc<Live>,
    /// Longest wait for one completion from a rank not reported lost.
    patience: Duration,
}

/// The libfabric RMA provider of one rank (module docs). Obtained from the driver's
/// [`skifch::Driver::rma`]; its peers are all reached by transfers.
pub struct OfiRma {
    inner: Arc<Inner>,
    rank: u32,
    size: u32,
    /// The progress thread, started with the first segment peers can reach (a library
    /// that only looks at the capabilities costs no thread).
    thread: OnceLock<std::result::Result<(), String>>,
}

/// Opens the RMA objects of rank `rank` of `size` on the provider and interface the
/// messages use (`msg`); `live` reports lost ranks, `timeout` is the driver's loss timeout.
pub fn open(msg: &Net, rank: u32, size: u32, live: Arc<Live>, timeout: Duration) -> Result<OfiRma> {
    let cfg = Config {
        provider: Some(msg.provider.clone()),
        domain: Some(msg.domain_name.clone()),
        ..Config::default()
    };
    let net = Arc::new(Net::open(&cfg, 2 * size as usize + 8, 64, u64::from(CAPS))?);
    let unfit = net.mr_mode & (FI_MR_LOCAL | FI_MR_RAW | FI_MR_ENDPOINT);
    if unfit != 0 {
        return Err(Error::Bootstrap(
            format!(
                "ofi RMA: provider {} needs memory registration mode {unfit:#x} (FI_MR_LOCAL/RAW/ENDPOINT), which the driver does not use",
                net.provider
            )
            .into(),
        ));
    }
    let ep = Ep::open(&net, 0, 1, 64)?;
    // SAFETY: the chosen entry's endpoint attributes, alive with `net`.
    let max = unsafe { (*(*net.info()).ep_attr).max_msg_size }.clamp(4096, 1 << 30);
    let inject = net.inject_size;
    let inner = Arc::new(Inner {
        ep,
        net,
        op: Mutex::new(Op {
            // SAFETY: fi_context2 is plain provider scratch space; zero is a valid start.
            ctx: (0..SLOTS).map(|_| unsafe { std::mem::zeroed() }).collect(),
            busy: vec![None; SLOTS],
            inflight: 0,
            failed: None,
            broken: None,
        }),
        peers: Mutex::new(HashMap::new()),
        next_key: AtomicU64::new(1),
        max,
        inject,
        live,
        patience: timeout * 4 + Duration::from_secs(10),
    });
    Ok(OfiRma {
        inner,
        rank,
        size,
        thread: OnceLock::new(),
    })
}

/// Core providers that move RMA in software, inside the target's libfabric calls (module
/// docs, "Progress at the target"), whatever progress model they report.
const SOFTWARE: [&str; 5] = ["tcp", "net", "sockets", "udp", "shm"];

impl Inner {
    /// Whether a target's provider applies transfers without its calls
    /// ([`RmaCaps::remote_progress`]): automatic data progress, reported by a provider that
    /// is not one of the [`SOFTWARE`] ones (`verbs;ofi_rxm` counts by its core, `verbs`).
    fn remote_progress(&self) -> bool {
        // SAFETY: the chosen entry's domain attributes, alive with `net`.
        let auto = unsafe { (*(*self.net.info()).domain_attr).data_progress } == FI_PROGRESS_AUTO;
        let core = self.net.provider.split(';').next().unwrap_or("");
        auto && !SOFTWARE.contains(&core)
    }
}

/// Reads in a row that found the progress set readable before the thread slept, after
/// which it sleeps a tick (module docs, "Progress at the target").
const HOT_WAKES: u32 = 16;

/// The progress thread (module docs): ends when the provider and its segments are gone.
fn progress(inner: Weak<Inner>) {
    let mut hot = 0u32;
    loop {
        let Some(i) = inner.upgrade() else { return };
        let set = i.ep.progress_set().filter(|_| hot < HOT_WAKES);
        // Not kept while asleep: the provider's last holder closes it, not this thread.
        // (Its descriptor closed meanwhile ends the sleep within the cap, or at once as
        // POLLNVAL; the upgrade then ends the thread.)
        drop(i);
        match set {
            // Data there already: the last read left it (this rank's own call holds the
            // queue) or more came meanwhile.
            Some(fd) if readable_now(fd) => hot += 1,
            Some(fd) => {
                hot = 0;
                wait_readable([fd], PROGRESS_EVERY);
            }
            None => {
                hot = 0;
                std::thread::sleep(PROGRESS_EVERY);
            }
        }
        let Some(i) = inner.upgrade() else { return };
        i.progress();
    }
}

impl Inner {
    fn err(&self, what: String) -> Error {
        let text = format!(
            "provider {}, domain {}: {what}",
            self.net.provider, self.net.domain_name
        );
        Error::os("ofi RMA", std::io::Error::other(text))
    }

    /// Registers `ptr..ptr+len` for peers' reads and writes; the registration and the
    /// token peers open it with.
    fn register(&self, ptr: *mut u8, len: usize) -> Result<(Owned<fid_mr>, Vec<u8>)> {
        let want = self.next_key.fetch_add(1, Ordering::Relaxed);
        let mut mr: *mut fid_mr = std::ptr::null_mut();
        // SAFETY: the caller keeps the memory alive longer than the registration.
        let r = unsafe {
            sys::mr_reg(
                self.net.domain.0,
                ptr.cast_const().cast(),
                len,
                u64::from(FI_REMOTE_READ | FI_REMOTE_WRITE),
                want,
                &mut mr,
            )
        };
        if r != 0 {
            return Err(self.err(format!("fi_mr_reg of {len} bytes: {}", sys::strerror(r))));
        }
        let mr = Owned(mr);
        let key = if self.net.mr_mode & FI_MR_PROV_KEY != 0 {
            // SAFETY: a live MR's key field (`fi_mr_key`).
            unsafe { (*mr.0).key }
        } else {
            want
        };
        let base = if self.net.mr_mode & FI_MR_VIRT_ADDR != 0 {
            ptr as u64
        } else {
            0
        };
        let mut t = base.to_le_bytes().to_vec();
        t.extend_from_slice(&key.to_le_bytes());
        t.extend_from_slice(&(len as u64).to_le_bytes());
        t.extend_from_slice(&self.ep.name);
        Ok((mr, t))
    }

    /// Reads the completions there are, freeing their slots; an error completion is
    /// returned as the error of its transfer.
    fn reap(&self, op: &mut Op) -> Result<usize> {
        let mut out = [NONE; 8];
        match self.ep.read(&mut out) {
            n if n >= 0 => {
                for e in &out[..n as usize] {
                    op.free(op.slot_of(e.op_context).unwrap_or(usize::MAX));
                }
                Ok(n as usize)
            }
            r if r == -(FI_EAVAIL as isize) => {
                let (rank, why) = match self.ep.read_error() {
                    Some((e, text)) => (
                        op.free(op.slot_of(e.op_context).unwrap_or(usize::MAX)),
                        format!("error {} ({text})", e.err),
                    ),
                    None => (None, "an error completion".into()),
                };
                let rank = rank.unwrap_or(u32::MAX);
                if rank != u32::MAX && self.live.is_lost(rank) {
                    return Err(Error::PeerLost { rank });
                }
                if rank != u32::MAX && self.live.is_finalized(rank) {
                    // RMA has no ports: the rank as a whole has left.
                    let addr = skifch::NetAddr::new(rank as u16, 0);
                    let why = skifch::error::Unreachable::Closed;
                    return Err(Error::Unreachable { addr, why });
                }
                Err(self.err(format!("a transfer with rank {rank} failed: {why}")))
            }
            r => {
                let why = format!("fi_cq_read: {}", sys::strerror(r));
                op.broken = Some(why.clone());
                Err(self.err(why))
            }
        }
    }

    /// Reaps completions until `done(op)`; a lost target of a transfer in flight or
    /// [`Inner::patience`] without progress ends the wait (and leaves RMA unusable).
    fn wait_until(&self, op: &mut Op, done: impl Fn(&Op) -> bool) -> Result<()> {
        let mut t0 = Instant::now();
        let mut spins = 0u32;
        while !done(op) {
            if self.reap(op)? > 0 {
                t0 = Instant::now();
                continue;
            }
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(256) {
                self.check(op, t0)?;
                std::thread::yield_now();
            }
        }
        Ok(())
    }

    /// One read of the completion queue unless a call of this rank holds it (which reads
    /// it meanwhile): drives the provider for peers' transfers, reaps this rank's puts in
    /// flight; a failed one is reported by the next call.
    fn progress(&self) {
        if let Ok(mut op) = self.op.try_lock() {
            if let Err(e) = self.reap(&mut op) {
                op.failed.get_or_insert(e);
            }
        }
    }

    /// Remote completion of every transfer issued ([`RemoteSegment::flush`]).
    fn flush(&self) -> Result<()> {
        let mut op = self.op.lock().unwrap_or_else(|p| p.into_inner());
        self.wait_until(&mut op, |o| o.inflight == 0)?;
        op.failed.take().map_or(Ok(()), Err)
    }

    /// `PeerLost` once the target of a transfer in flight is lost, an error after
    /// [`Inner::patience`] since `t0`; either leaves RMA unusable (the transfer is
    /// abandoned in flight).
    fn check(&self, op: &mut Op, t0: Instant) -> Result<()> {
        let lost = op
            .busy
            .iter()
            .flatten()
            .copied()
            .find(|&r| self.live.is_lost(r));
        let e = if let Some(rank) = lost {
            Error::PeerLost { rank }
        } else if t0.elapsed() > self.patience {
            self.err(format!("no completion in {:?}", self.patience))
        } else {
            return Ok(());
        };
        op.broken = Some(format!("a transfer was abandoned: {e}"));
        Err(e)
    }

    /// The address-vector entry of an RMA endpoint `name` (inserted once).
    fn peer(&self, name: &[u8]) -> Result<fi_addr_t> {
        let mut m = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&a) = m.get(name) {
            return Ok(a);
        }
        let a = self.net.insert(name)?;
        m.insert(name.to_vec(), a);
        Ok(a)
    }
}

/// A peer's segment reached by `fi_writemsg` / `fi_readmsg`.
struct FabricSegment {
    inner: Arc<Inner>,
    rank: u32,
    peer: fi_addr_t,
    base: u64,
    key: u64,
    len: usize,
}

impl FabricSegment {
    /// One transfer of `len` bytes between `buf` and the segment at `off`, in chunks the
    /// endpoint takes. A put of at most the provider's inject size is copied by the call
    /// and left in flight (completed by [`Inner::flush`]); any other transfer returns once
    /// complete. A get first completes the puts in flight, so that it reads them.
    fn transfer(&self, write: bool, off: usize, buf: *mut u8, len: usize) -> Result<()> {
        let (i, rank) = (&*self.inner, self.rank);
        let addr = self.base + off as u64;
        let mut op = i.op.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(why) = &op.broken {
            return Err(i.err(why.clone()));
        }
        if let Some(e) = op.failed.take() {
            return Err(e);
        }
        if !write {
            i.wait_until(&mut op, |o| o.inflight == 0)?;
        }
        if len == 0 {
            return Ok(());
        }
        let inject = write && len <= i.inject;
        let mut flags = FI_COMPLETION;
        if write {
            flags |= FI_DELIVERY_COMPLETE;
        }
        if inject {
            flags |= FI_INJECT;
        }
        let mut done = 0;
        while done < len {
            let n = (len - done).min(i.max);
            i.wait_until(&mut op, |o| o.inflight < SLOTS)?;
            let slot = op.busy.iter().position(Option::is_none).unwrap_or(0);
            let t0 = Instant::now();
            loop {
                let ctx: *mut fi_context2 = &mut op.ctx[slot];
                // SAFETY: `buf + done..+n` is the caller's live buffer (a put's source, a
                // get's destination): copied by the call under FI_INJECT, else untouched
                // until the completion waited for below; the context is a free slot's of
                // `op`, locked meanwhile.
                let r = unsafe {
                    sys::rma(
                        i.ep.ep.0,
                        write,
                        buf.add(done),
                        n,
                        std::ptr::null_mut(),
                        self.peer,
                        addr + done as u64,
                        self.key,
                        ctx,
                        u64::from(flags),
                    )
                };
                if r == 0 {
                    break;
                }
                if r != -(FI_EAGAIN as isize) {
                    return Err(i.err(format!(
                        "{} of {n} bytes with rank {rank}: {}",
                        if write { "fi_writemsg" } else { "fi_readmsg" },
                        sys::strerror(r)
                    )));
                }
                // The queue is full: drive the provider, then retry.
                i.reap(&mut op)?;
                i.check(&mut op, t0)?;
                std::thread::yield_now();
            }
            op.busy[slot] = Some(rank);
            op.inflight += 1;
            if !inject {
                i.wait_until(&mut op, |o| o.busy[slot].is_none())?;
            }
            done += n;
        }
        Ok(())
    }
}

impl RemoteSegment for FabricSegment {
    fn len(&self) -> usize {
        self.len
    }
    fn put(&self, off: usize, src: &[u8]) -> Result<()> {
        // The provider only reads a write's source (the pointer is `*mut` by the C API).
        let p = src.as_ptr().cast_mut();
        self.transfer(true, off, p, src.len())
    }
    fn get(&self, off: usize, dst: &mut [u8]) -> Result<()> {
        let p = dst.as_mut_ptr();
        self.transfer(false, off, p, dst.len())
    }
    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }
    fn progress(&self) {
        self.inner.progress()
    }
}

impl OfiRma {
    /// `ptr..ptr+len` (owned by `keep`) registered, with this provider's token; the
    /// segment keeps the registration, closed before the memory is released and before
    /// the domain (the tuple drops in order).
    fn registered(
        &self,
        ptr: *mut u8,
        len: usize,
        keep: Box<dyn std::any::Any + Send + Sync>,
    ) -> Result<Segment> {
        let started = self.thread.get_or_init(|| {
            let weak = Arc::downgrade(&self.inner);
            std::thread::Builder::new()
                .name(format!("skifch-ofi-rma-{}", self.rank))
                .spawn(move || progress(weak))
                .map(drop)
                .map_err(|e| e.to_string())
        });
        if let Err(e) = started {
            return Err(self.inner.err(format!("spawning the progress thread: {e}")));
        }
        let (mr, token) = self.inner.register(ptr, len)?;
        // SAFETY: `keep` owns the memory for as long as the segment lives.
        Ok(unsafe { Segment::new(ptr, len, token, Box::new((mr, keep, self.inner.clone()))) })
    }
}

impl Rma for OfiRma {
    fn name(&self) -> &'static str {
        "ofi"
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn caps(&self) -> RmaCaps {
        RmaCaps {
            load_store: false,
            share_in_place: true,
            transfers: true,
            remote_progress: self.inner.remote_progress(),
        }
    }
    fn alloc(&self, len: usize) -> Result<Segment> {
        if len == 0 {
            return Err(Error::InvalidArgument("an RMA segment of 0 bytes".into()));
        }
        let m = MmapOptions::new()
            .len(len)
            .map_anon()
            .map_err(|e| Error::os("mapping an RMA segment", e))?;
        let m = MmapRaw::from(m);
        self.registered(m.as_mut_ptr(), len, Box::new(m))
    }
    unsafe fn share_in_place(&self, addr: *mut u8, len: usize) -> Result<Segment> {
        // The pages stay where they are (the caller's contract keeps them mapped).
        self.registered(addr, len, Box::new(()))
    }
    fn open_peer(&self, rank: u32, token: &[u8]) -> Result<PeerMapping> {
        if token.len() <= 24 || rank >= self.size {
            return Err(Error::Corrupt(
                format!("rank {rank}'s ofi segment token has {} bytes", token.len()).into(),
            ));
        }
        let word = |i: usize| u64::from_le_bytes(token[i..i + 8].try_into().unwrap_or_default());
        let seg = FabricSegment {
            inner: self.inner.clone(),
            rank,
            peer: self.inner.peer(&token[24..])?,
            base: word(0),
            key: word(8),
            len: usize::try_from(word(16)).unwrap_or(usize::MAX),
        };
        Ok(PeerMapping::remote(Box::new(seg)))
    }
    fn extend(&self, seg: Segment) -> Result<Segment> {
        self.registered(seg.as_ptr(), seg.len(), Box::new(seg))
    }
}
