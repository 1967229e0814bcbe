//! The target side of the message path (module docs of [`super`]): the windows this
//! process serves, their passive-target locks (seed 003's reader/writer queue) and the
//! handlers of the one-sided active messages, which run inside the engine's proto calls
//! with the engine's state (`engine::State::rma`) as their context.
//!
//! ## Wire (handler ids 16-28 on mpi-lite's endpoint; `arg` = the window's id)
//! * `args[0]` = byte offset of the first run, `args[1]` = number of runs `k` (0: one run
//!   at `args[0]` as long as the data); with `k > 0` the payload starts with `k` pairs
//!   (offset, length) of little-endian `u64`s, then the data.
//! * `H_PUT` (one-way): data. `H_ACC` (one-way): `args[2]` = operation | element type <<
//!   8, data. `H_GET` (request): `args[2]` = length of the single run; the reply is the
//!   data. `H_GACC` (request): as `H_ACC`, the reply is the old data (compare-and-swap:
//!   operation 15, data = new value then compare value). `H_LOCK` / `H_UNLOCK` (requests):
//!   `args[0]` = 0 exclusive, 1 shared, 2 shared for an `MPI_Win_lock_all` epoch ([`LOCK_ALL`]);
//!   answered when granted / released. `H_FLUSH`
//!   (request): answered at once — the channel is FIFO per pair, so every earlier
//!   operation of that origin has been applied. `H_FENCE`, `H_POST`, `H_DONE` (one-way):
//!   counted (fence; post/start/complete/wait, per sender).
//! * `H_BATCH` (request; seed 003's aggregation): a lock request carrying the operations
//!   its epoch issued before anything had to wait — `args[0]` as `H_LOCK`, `args[1]` = 1:
//!   release the lock after them (the unlock too). The payload is a sequence of
//!   sub-operations, each five little-endian `u64`s (handler, `args[0..3]`, payload
//!   length) and that payload. When the lock is granted the sub-operations are applied in
//!   order and the reply carries the fetching ones' data, concatenated; a queued batch
//!   runs when a release grants it.
//! * `H_TYPE`, `H_FORGET` (one-way): target types described once (`types.rs`), whose
//!   operations carry `args[1]` = `TYPED` and a head (type id, count) instead of runs.

use std::collections::{HashMap, VecDeque};

use skifch::proto::{Am, Endpoint, Io, Landing, Phase, ReplyTo};
use skifch::Port;

use super::mem::Reach;
use super::ops::{rmw_runs, AccOp, Runs};
use super::types::{Description, Known, Sent, TYPED};
use crate::datatype::Basic;
use crate::engine::State;

pub(crate) const H_PUT: u8 = 16;
pub(crate) const H_GET: u8 = 17;
pub(crate) const H_ACC: u8 = 18;
pub(crate) const H_GACC: u8 = 19;
pub(crate) const H_LOCK: u8 = 20;
pub(crate) const H_UNLOCK: u8 = 21;
pub(crate) const H_FLUSH: u8 = 22;
pub(crate) const H_FENCE: u8 = 23;
/// `MPI_Win_post` notice to an origin of the post group (one-way).
pub(crate) const H_POST: u8 = 24;
/// `MPI_Win_complete` notice to a target of the start group (one-way, after the origin's
/// operations to it).
pub(crate) const H_DONE: u8 = 25;
/// A deferred lock with the operations issued under it, and maybe the unlock (request).
pub(crate) const H_BATCH: u8 = 26;
/// A target type's description (one-way, `types.rs`); `arg` is not a window.
pub(crate) const H_TYPE: u8 = 27;
/// Forget a described type (one-way, after `MPI_Type_free` at the origin).
pub(crate) const H_FORGET: u8 = 28;
/// `args[0]` of a lock request for an `MPI_Win_lock_all` epoch: a shared lock the origin
/// holds, in MPI's terms, since its `MPI_Win_lock_all` returned; the message path only
/// sends it later, with the first operation that waits. So a writer queued meanwhile does
/// not hold it back (seed 003's queue would: with lock_all holders waiting for each other
/// through queued writers, 4 ranks of `rmalock.c` deadlocked about 1 run in 60).
pub(crate) const LOCK_ALL: u64 = 2;
/// The operation code of compare-and-swap in `H_GACC`.
pub(crate) const OP_CAS: u64 = 15;

/// The windows this process serves, by id, and the target types of the message path.
#[derive(Default)]
pub struct Served {
    wins: HashMap<u32, Exposed>,
    /// Types this process described to others (`types.rs`).
    pub(crate) sent: Sent,
    /// Types others described to this process.
    known: Known,
}

/// One served window.
struct Exposed {
    reach: Reach,
    /// A dynamic window's attached regions (address, length); `None`: not dynamic.
    regions: Option<Vec<(usize, usize)>>,
    /// `H_FENCE` messages received.
    fences: u64,
    /// `H_POST` / `H_DONE` notices received and not yet consumed, by sender (world rank).
    posts: HashMap<u32, u64>,
    dones: HashMap<u32, u64>,
    lock: RwQueue,
}

/// Seed 003's target-side reader/writer lock.
#[derive(Default)]
struct RwQueue {
    excl: bool,
    shared: u32,
    waiting_excl: u32,
    queue: VecDeque<Locker>,
}

/// A lock request: `H_LOCK` (answered when granted) or `H_BATCH` (its operations run, and
/// the lock is released if it says so, when granted; then answered).
struct Locker {
    to: ReplyTo,
    /// The origin's world rank.
    src: u32,
    excl: bool,
    /// Shared, for a lock_all epoch ([`LOCK_ALL`]): not held back by waiting writers.
    all: bool,
    batch: Option<Batch>,
}

/// The operations of an `H_BATCH` (sub-operations as in `batch_ops`) and whether the
/// lock is released after them.
struct Batch {
    ops: Vec<u8>,
    unlock: bool,
}

impl RwQueue {
    /// A request: granted now (returned) or queued.
    fn request(&mut self, l: Locker) -> Option<Locker> {
        let excl = l.excl;
        let free = !self.excl && self.shared == 0;
        if free && self.queue.is_empty() {
            self.take(excl);
            return Some(l);
        }
        if !excl && !self.excl && (self.waiting_excl == 0 || l.all) {
            self.shared += 1;
            return Some(l);
        }
        if excl {
            self.waiting_excl += 1;
        }
        self.queue.push_back(l);
        None
    }
    fn take(&mut self, excl: bool) {
        if excl {
            self.excl = true;
        } else {
            self.shared += 1;
        }
    }
    /// A release; returns the requests granted now, in their order.
    fn release(&mut self, excl: bool) -> VecDeque<Locker> {
        if excl {
            self.excl = false;
        } else {
            self.shared = self.shared.saturating_sub(1);
        }
        let mut granted = VecDeque::new();
        if self.excl || self.shared > 0 {
            return granted;
        }
        if let Some(l) = self.queue.pop_front() {
            self.take(l.excl);
            if l.excl {
                self.waiting_excl -= 1;
                granted.push_back(l);
            } else {
                granted.push_back(l);
                while self.queue.front().is_some_and(|l| !l.excl) {
                    let l = self.queue.pop_front().expect("a front");
                    self.take(false);
                    granted.push_back(l);
                }
            }
        }
        granted
    }
}

impl Served {
    /// Serves window `id` over this process's `reach` (at creation, before the barrier
    /// that ends it).
    pub(crate) fn add(&mut self, id: u32, reach: Reach, dynamic: bool) {
        self.wins.insert(
            id,
            Exposed {
                reach,
                regions: dynamic.then(Vec::new),
                fences: 0,
                posts: HashMap::new(),
                dones: HashMap::new(),
                lock: RwQueue::default(),
            },
        );
    }
    /// `MPI_Win_attach`: `len` bytes at `addr` join dynamic window `id`.
    pub(crate) fn attach(&mut self, id: u32, addr: usize, len: usize) -> bool {
        match self.wins.get_mut(&id).and_then(|w| w.regions.as_mut()) {
            Some(r) => {
                r.push((addr, len));
                true
            }
            None => false,
        }
    }
    /// `MPI_Win_detach`: the region attached at `addr` leaves window `id` (`false`: none).
    pub(crate) fn detach(&mut self, id: u32, addr: usize) -> bool {
        let Some(r) = self.wins.get_mut(&id).and_then(|w| w.regions.as_mut()) else {
            return false;
        };
        match r.iter().position(|x| x.0 == addr) {
            Some(i) => {
                r.swap_remove(i);
                true
            }
            None => false,
        }
    }
    /// Stops serving window `id` (at `MPI_Win_free`, after its barrier).
    pub(crate) fn remove(&mut self, id: u32) {
        self.wins.remove(&id);
    }
    /// Unconsumed `H_POST` (`done == false`) or `H_DONE` notices of window `id` from world
    /// rank `src`.
    pub(crate) fn notices(&self, id: u32, src: u32, done: bool) -> u64 {
        self.wins.get(&id).map_or(0, |w| {
            let m = if done { &w.dones } else { &w.posts };
            m.get(&src).copied().unwrap_or(0)
        })
    }
    /// Consumes one notice (see [`Served::notices`]); `false` if there was none.
    pub(crate) fn consume(&mut self, id: u32, src: u32, done: bool) -> bool {
        let Some(w) = self.wins.get_mut(&id) else {
            return false;
        };
        let m = if done { &mut w.dones } else { &mut w.posts };
        match m.get_mut(&src) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }
    /// `H_FENCE` messages received for window `id`.
    pub(crate) fn fences(&self, id: u32) -> u64 {
        self.wins.get(&id).map_or(0, |w| w.fences)
    }
}

/// Registers the handlers on mpi-lite's endpoint.
pub(crate) fn register<P: Port>(ep: &mut Endpoint<P, State>) -> skifch::Result<()> {
    for h in [
        H_PUT, H_GET, H_ACC, H_GACC, H_LOCK, H_UNLOCK, H_FLUSH, H_FENCE, H_POST, H_DONE, H_BATCH,
        H_TYPE, H_FORGET,
    ] {
        ep.register(h, on_rma::<P>)?;
    }
    Ok(())
}

fn bad(msg: String) -> skifch::Error {
    skifch::Error::InvalidArgument(format!("mpi-lite one-sided: {msg}").into())
}

/// The message's whole payload: `None` while a long transfer is landing.
fn whole(am: &Am<'_>) -> skifch::Result<Option<Vec<u8>>> {
    Ok(match am.phase() {
        Phase::Whole => Some(am.payload().to_vec()),
        Phase::LongStart { total } => {
            am.place(Landing::vec(total as usize));
            None
        }
        Phase::LongDone { .. } => Some(
            am.take_landing()
                .and_then(Landing::into_vec)
                .ok_or_else(|| bad("a long transfer lost its landing".into()))?,
        ),
    })
}

/// The runs of a message and the data after their list (or after the type's head).
fn runs_of(
    types: (&Known, u32),
    args: &[u64],
    payload: &[u8],
    len: usize,
) -> Result<(Runs, usize), String> {
    let arg = |i: usize| args.get(i).copied().unwrap_or(0) as usize;
    if args.get(1).is_some_and(|&k| k == TYPED) {
        let w = |i: usize| {
            payload
                .get(8 * i..8 * i + 8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("8")))
        };
        let (Some(id), Some(count)) = (w(0), w(1)) else {
            return Err("a typed operation without its head".into());
        };
        let d = types.0.get(types.1, id)?;
        return Ok((d.expand(arg(0) as isize, count as usize)?, 16));
    }
    let k = arg(1);
    if k == 0 {
        return Ok((vec![(arg(0), 0, len)], 0));
    }
    let head = k
        .checked_mul(16)
        .filter(|&h| h <= payload.len())
        .ok_or_else(|| format!("{k} runs in a {}-byte payload", payload.len()))?;
    let w = |i: usize| {
        u64::from_le_bytes(payload[8 * i..8 * i + 8].try_into().expect("8 bytes")) as usize
    };
    let mut runs = Vec::with_capacity(k);
    let mut p = 0;
    for i in 0..k {
        let (off, l) = (w(2 * i), w(2 * i + 1));
        runs.push((off, p, l));
        p += l;
    }
    Ok((runs, head))
}

/// The attached region holding every run of an operation on a dynamic window (the runs'
/// offsets are addresses; they become offsets in the region), or the error the origin
/// gets (`MPI_ERR_RMA_RANGE`: the target validates every address, MPI-3.1 §11.2.4).
fn attached(
    regions: &[(usize, usize)],
    runs: &mut [(usize, usize, usize)],
) -> Result<Reach, String> {
    if runs.iter().all(|r| r.2 == 0) {
        // No bytes: no memory is accessed (only accessing memory not attached is
        // erroneous), so any address is valid — OSU's benchmarks start at size 0 on a
        // zero-byte attachment.
        for r in runs.iter_mut() {
            r.0 = 0;
        }
        return Ok(Reach::Mapped {
            base: std::ptr::NonNull::dangling().as_ptr(),
            len: 0,
        });
    }
    let lo = runs.iter().map(|r| r.0).min().unwrap_or(0);
    let hi = runs
        .iter()
        .map(|r| r.0.saturating_add(r.2))
        .max()
        .unwrap_or(0);
    let missing = || {
        format!("MPI_ERR_RMA_RANGE: address {lo:#x}..{hi:#x} is not in memory attached to the dynamic window")
    };
    // The region holding `lo`, joined with the regions attached right after it (one span
    // of the target's memory: an operation may cross from one attachment into the next).
    let &(base, mut len) = regions
        .iter()
        .find(|&&(b, l)| lo >= b && lo < b.saturating_add(l))
        .ok_or_else(missing)?;
    while base.saturating_add(len) < hi {
        let end = base + len;
        let &(_, l) = regions
            .iter()
            .find(|&&(b, _)| b == end)
            .ok_or_else(missing)?;
        len += l;
    }
    for r in runs.iter_mut() {
        r.0 -= base;
    }
    Ok(Reach::Mapped {
        base: base as *mut u8,
        len,
    })
}

/// A data operation (`H_PUT`, `H_GET`, `H_ACC`, `H_GACC`) on window `w`, its message whole:
/// the reply's data (empty for put and accumulate).
fn apply(
    w: &Exposed,
    types: (&Known, u32),
    h: u8,
    args: &[u64],
    payload: &[u8],
) -> Result<Vec<u8>, String> {
    let a = |i: usize| args.get(i).copied().unwrap_or(0);
    // The length of a single run: the data's (half of it for compare-and-swap).
    let cas = h == H_GACC && a(2) & 0xff == OP_CAS;
    let len = match h {
        H_GET => a(2) as usize,
        _ if cas => payload.len() / 2,
        _ => payload.len(),
    };
    let (mut runs, head) = runs_of(types, args, payload, len)?;
    let data = &payload[head..];
    let total: usize = runs.iter().map(|r| r.2).sum();
    let reach = match &w.regions {
        None => w.reach,
        Some(regions) => attached(regions, &mut runs)?,
    };
    for &(off, _, l) in &runs {
        reach.check(off, l).map_err(|e| e.to_string())?;
    }
    match h {
        H_PUT => {
            if data.len() < total {
                return Err(format!("{} bytes of data for {total}", data.len()));
            }
            for &(off, p, l) in &runs {
                reach
                    .write(off, &data[p..p + l])
                    .map_err(|e| e.to_string())?;
            }
            Ok(Vec::new())
        }
        H_GET => {
            let mut out = vec![0u8; total];
            for &(off, p, l) in &runs {
                reach
                    .read(off, &mut out[p..p + l])
                    .map_err(|e| e.to_string())?;
            }
            Ok(out)
        }
        H_ACC | H_GACC => {
            let code = a(2);
            let b = *Basic::ALL
                .get((code >> 8) as usize)
                .ok_or("bad element type")?;
            let op = if cas {
                AccOp::Replace
            } else {
                AccOp::from_code(code & 0xff).ok_or("bad operation")?
            };
            let n = total;
            if data.len() < if cas { 2 * n } else { n } {
                return Err(format!("{} bytes of data for {n}", data.len()));
            }
            let mut old = vec![0u8; n];
            let c = cas.then(|| &data[n..2 * n]);
            let src = (op != AccOp::NoOp).then_some(&data[..n]);
            rmw_runs(&reach, &runs, b, op, src, Some(&mut old), c).map_err(|e| e.to_string())?;
            Ok(if h == H_GACC { old } else { Vec::new() })
        }
        h => Err(format!("{h} is not a data operation")),
    }
}

/// The sub-operations of an `H_BATCH` (module docs), applied in order; the data of the
/// fetching ones, concatenated. The first failure ends it.
fn batch_ops(w: &Exposed, types: (&Known, u32), mut ops: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    while !ops.is_empty() {
        if ops.len() < 40 {
            return Err(format!("a batch ends in {} stray bytes", ops.len()));
        }
        let word = |i: usize| u64::from_le_bytes(ops[8 * i..8 * i + 8].try_into().expect("8"));
        let (h, args, len) = (word(0), [word(1), word(2), word(3)], word(4) as usize);
        let body = ops
            .get(40..40usize.saturating_add(len))
            .ok_or_else(|| format!("a batched operation of {len} bytes past the batch's end"))?;
        let h = u8::try_from(h).map_err(|_| format!("batched operation {h}"))?;
        out.extend_from_slice(&apply(w, types, h, &args, body)?);
        ops = &ops[40 + len..];
    }
    Ok(out)
}

/// Answers lock requests granted now, in order: a lock is answered; a batch runs, releases
/// the lock if it says so (which may grant more) and is answered with its data or error.
/// A reply that cannot be sent (its origin is gone) does not stop the others: the first
/// such failure is returned after them.
fn grant<P: Port>(
    io: &mut Io<'_, P>,
    w: &mut Exposed,
    known: &Known,
    mut work: VecDeque<Locker>,
) -> skifch::Result<()> {
    let mut first = Ok(());
    while let Some(l) = work.pop_front() {
        let sent = match l.batch {
            None => io.reply(l.to, 0, &[], &[]),
            Some(b) => {
                let r = batch_ops(w, (known, l.src), &b.ops);
                if b.unlock {
                    work.extend(w.lock.release(l.excl));
                }
                match r {
                    Ok(data) => io.reply(l.to, 0, &[], &data),
                    Err(why) => io.reply_error(l.to, &why),
                }
            }
        };
        if first.is_ok() {
            first = sent;
        }
    }
    first
}

/// The handler of every one-sided message (module docs).
fn on_rma<P: Port>(s: &mut State, io: &mut Io<'_, P>, am: &Am<'_>) -> skifch::Result<()> {
    let id = am.arg();
    let args = am.args();
    let a = |i: usize| args.get(i).copied().unwrap_or(0);
    let to = am.reply_to();
    let src = am.src();
    match am.handler() {
        H_TYPE => {
            let d = match whole(am)? {
                Some(p) => Description::parse(args, &p).map_err(bad)?,
                None => return Ok(()),
            };
            s.rma.known.learn(src, a(0), d);
            return Ok(());
        }
        H_FORGET => {
            s.rma.known.forget(src, a(0));
            return Ok(());
        }
        _ => {}
    }
    let Served { wins, known, .. } = &mut s.rma;
    let Some(w) = wins.get_mut(&id) else {
        let why = format!("window {id} is not served by rank {}", io.rank());
        return match to {
            Some(t) => io.reply_error(t, &why),
            None => Err(bad(why)),
        };
    };
    let r = match am.handler() {
        H_FENCE => {
            w.fences += 1;
            Ok(None)
        }
        H_POST | H_DONE => {
            let m = if am.handler() == H_DONE {
                &mut w.dones
            } else {
                &mut w.posts
            };
            *m.entry(am.src()).or_insert(0) += 1;
            Ok(None)
        }
        H_FLUSH => Ok(Some(Vec::new())),
        h @ (H_PUT | H_ACC | H_GACC | H_GET | H_BATCH) => {
            match whole(am) {
                Ok(None) => return Ok(()), // a long transfer: LongDone comes
                Err(e) => Err(e.to_string()),
                Ok(Some(payload)) if h != H_BATCH => {
                    apply(w, (known, src), h, args, &payload).map(Some)
                }
                Ok(Some(payload)) => {
                    let Some(to) = to else {
                        return Err(bad("a batch without a reply address".into()));
                    };
                    let batch = Batch {
                        ops: payload,
                        unlock: a(1) != 0,
                    };
                    let l = Locker {
                        to,
                        src,
                        excl: a(0) == 0,
                        all: a(0) == LOCK_ALL,
                        batch: Some(batch),
                    };
                    return match w.lock.request(l) {
                        Some(l) => grant(io, w, known, VecDeque::from([l])),
                        None => Ok(()), // answered when granted
                    };
                }
            }
        }
        H_LOCK => match to {
            Some(to) => {
                let l = Locker {
                    to,
                    src,
                    excl: a(0) == 0,
                    all: a(0) == LOCK_ALL,
                    batch: None,
                };
                Ok(w.lock.request(l).map(|_| Vec::new()))
            }
            None => Err("a lock without a reply address".into()),
        },
        H_UNLOCK => {
            let granted = w.lock.release(a(0) == 0);
            grant(io, w, known, granted)?;
            Ok(Some(Vec::new()))
        }
        h => Err(format!("unknown one-sided message {h}")),
    };
    match (r, to) {
        (Ok(Some(data)), Some(t)) => io.reply(t, 0, &[], &data),
        (Ok(_), _) => Ok(()),
        (Err(why), Some(t)) => io.reply_error(t, &why),
        (Err(why), None) => Err(bad(why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locker(src: u32, excl: bool, all: bool) -> Locker {
        Locker {
            to: ReplyTo { rank: src, req: 0 },
            src,
            excl,
            all,
            batch: None,
        }
    }

    /// Seed 003's queue: readers first, FIFO once a writer waits; a lock_all reader is
    /// not held back by a waiting writer, only by a holding one.
    #[test]
    fn lock_all_readers_pass_waiting_writers() {
        let mut q = RwQueue::default();
        assert!(q.request(locker(1, false, true)).is_some()); // lock_all reader holds
        assert!(q.request(locker(2, true, false)).is_none()); // a writer waits
        assert!(q.request(locker(3, false, false)).is_none()); // a plain reader queues behind it
        assert!(q.request(locker(4, false, true)).is_some()); // a lock_all reader does not
        assert!(q.release(false).is_empty()); // one reader left
        let g = q.release(false);
        assert_eq!(g.iter().map(|l| l.src).collect::<Vec<_>>(), [2]);
        // A holding writer keeps lock_all readers out too, then they go in order.
        assert!(q.request(locker(5, false, true)).is_none());
        let g = q.release(true);
        assert_eq!(g.iter().map(|l| l.src).collect::<Vec<_>>(), [3, 5]);
        assert_eq!((q.shared, q.excl), (2, false));
    }
}
