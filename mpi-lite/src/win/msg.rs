//! The origin side of the message path (module docs of [`super`]; the wire is in
//! `served.rs`): every operation is an active message to the target's process, served by
//! its handlers whenever it progresses. Puts and accumulates are one-way (locally
//! complete at return: the data was handed to the channel); gets and the fetching
//! accumulates wait for their reply; a flush or unlock is a request answered after every
//! earlier message of this origin (the channel is FIFO per pair of ranks).
//!
//! ## Aggregation (seed 003's fix for its 3-4x passive-target latency)
//! `MPI_Win_lock` of another rank sends nothing: the lock is *deferred*, and the one-way
//! operations issued under it (up to [`AGG_BYTES`] of them) are kept, encoded. The first
//! call that must wait — a get or fetching accumulate, a flush, the unlock — sends the
//! lock request, the kept operations, its own operation and (for the unlock) the release
//! as one `H_BATCH` request, answered once the target granted the lock and applied them:
//! `lock; put; unlock` is one message and one reply, `lock; get; unlock` two round trips
//! instead of three, `lock; unlock` nothing. Operations that do not fit are preceded by
//! the batch so far (the lock is then held as usual).

use skifch::proto::{Endpoint, Landing};
use skifch::Port;

use std::sync::atomic::Ordering;

use super::ops::Target;
use super::served::{
    H_ACC, H_BATCH, H_FENCE, H_FLUSH, H_GACC, H_GET, H_LOCK, H_PUT, H_TYPE, H_UNLOCK, LOCK_ALL,
    OP_CAS,
};
use super::types::TYPED;
use super::{LockType, Win};
use crate::comm::Mpi;
use crate::datatype::Basic;
use crate::engine::State;
use crate::error::{Error, Result};

/// Bytes of operations (with their 40-byte headers) a deferred lock keeps before sending.
pub(crate) const AGG_BYTES: usize = 4096;

/// `args[0..2]` and the head of a message reaching `runs` of member `r`: one run, else the
/// described target type (`types.rs`: its description goes first if `r` lacks it).
impl Win {
    fn wire<P: Port>(
        &self,
        mpi: &Mpi<P>,
        r: u32,
        t: &Target<'_>,
        runs: &[(usize, usize, usize)],
    ) -> Result<([u64; 2], Vec<u8>)> {
        match runs {
            [] => return Ok(([0, 0], Vec::new())),
            [(off, _, _)] => return Ok(([*off as u64, 0], Vec::new())),
            _ => {}
        }
        let dst = self.world(r);
        let base = t.disp * self.members[r as usize].disp_unit as isize;
        let (id, new) = mpi
            .engine()
            .with_ep(|ep| Ok(ep.ctx_mut().rma.sent.id_for(t.dt, dst)))?;
        if let Some(d) = new {
            let (a, body) = d.wire(id);
            self.ep(mpi, |ep| ep.send(dst, H_TYPE, 0, &a, &body))?;
        }
        let mut head = Vec::with_capacity(16);
        head.extend_from_slice(&id.to_le_bytes());
        head.extend_from_slice(&(t.count as u64).to_le_bytes());
        Ok(([base as i64 as u64, TYPED], head))
    }
}

fn with_head<'a>(head: &[u8], data: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
    if head.is_empty() {
        std::borrow::Cow::Borrowed(data)
    } else {
        std::borrow::Cow::Owned([head, data].concat())
    }
}

impl Win {
    /// World rank of member `r`.
    fn world(&self, r: u32) -> u32 {
        self.comm.world_of(r as usize)
    }

    /// Runs `f` (which sends one message) on the engine's endpoint.
    pub(super) fn ep<P: Port, T>(
        &self,
        mpi: &Mpi<P>,
        f: impl FnOnce(&mut Endpoint<P, State>) -> skifch::Result<T>,
    ) -> Result<T> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        mpi.engine().with_ep(|ep| f(ep).map_err(Error::from))
    }

    /// A request to member `r` and its reply's data.
    fn ask<P: Port>(
        &self,
        mpi: &Mpi<P>,
        r: u32,
        h: u8,
        args: &[u64],
        data: &[u8],
        len: usize,
    ) -> Result<Vec<u8>> {
        let dst = self.world(r);
        let id = self.id;
        let c = &self.oneway[r as usize];
        let r = self.ep(mpi, |ep| {
            // Under the engine's lock: the one-way messages counted so far precede the
            // request on the channel, so its reply covers them (FIFO per pair).
            let before = c[0].load(Ordering::Relaxed);
            let q = ep.request(dst, h, id, args, data, Landing::vec(len))?;
            let rep = ep.wait(q)?;
            c[1].fetch_max(before, Ordering::Relaxed);
            Ok(rep.data.unwrap_or_default())
        });
        match r {
            // The target refused an address (a dynamic window): its class, not a transport
            // failure.
            Err(Error::Transport(skifch::Error::InvalidArgument(why)))
                if why.contains("MPI_ERR_RMA_RANGE") =>
            {
                Err(Error::Code {
                    code: crate::error::class::RMA_RANGE,
                    msg: why.to_string(),
                })
            }
            r => r,
        }
    }

    /// A dynamic window's puts and accumulates wait for the target's answer (it validates
    /// every address); other windows' are one-way.
    fn checked(&self) -> bool {
        self.flavor == super::Flavor::Dynamic
    }

    pub(super) fn msg_put<P: Port>(
        &self,
        mpi: &Mpi<P>,
        t: &Target<'_>,
        runs: &[(usize, usize, usize)],
        data: &[u8],
    ) -> Result<()> {
        let r = t.rank as u32;
        let (a, head) = self.wire(mpi, r, t, runs)?;
        let payload = with_head(&head, data);
        let op = (H_PUT, [a[0], a[1], 0], &payload[..]);
        if self.checked() {
            return self.ask_op(mpi, r, op, 0).map(|_| ());
        }
        if self.keep(mpi, r, op)? {
            return Ok(());
        }
        self.send_data(mpi, r, H_PUT, &a, &payload)
    }

    /// A one-way data operation to member `r`, counted: a later flush of `r` must wait
    /// for the target to have applied it.
    fn send_data<P: Port>(
        &self,
        mpi: &Mpi<P>,
        r: u32,
        h: u8,
        args: &[u64],
        data: &[u8],
    ) -> Result<()> {
        let (dst, id) = (self.world(r), self.id);
        let c = &self.oneway[r as usize];
        self.ep(mpi, |ep| {
            ep.send(dst, h, id, args, data)?;
            c[0].fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
    }

    pub(super) fn msg_get<P: Port>(
        &self,
        mpi: &Mpi<P>,
        t: &Target<'_>,
        runs: &[(usize, usize, usize)],
        out: &mut [u8],
    ) -> Result<()> {
        let r = t.rank as u32;
        let (a, head) = self.wire(mpi, r, t, runs)?;
        let op = (H_GET, [a[0], a[1], out.len() as u64], &head[..]);
        let got = self.ask_op(mpi, r, op, out.len())?;
        if got.len() != out.len() {
            return Err(Error::Intern(format!(
                "MPI_Get: {} bytes came back for {}",
                got.len(),
                out.len()
            )));
        }
        out.copy_from_slice(&got);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn msg_update<P: Port>(
        &self,
        mpi: &Mpi<P>,
        t: &Target<'_>,
        runs: &[(usize, usize, usize)],
        b: Basic,
        op: super::AccOp,
        data: Option<&[u8]>,
        old_out: Option<&mut [u8]>,
        cmp: Option<&[u8]>,
    ) -> Result<()> {
        let total: usize = runs.iter().map(|x| x.2).sum();
        let bi = Basic::ALL.iter().position(|&x| x == b).unwrap_or(0) as u64;
        let code = if cmp.is_some() { OP_CAS } else { op.code() } | bi << 8;
        let r = t.rank as u32;
        let (a, head) = self.wire(mpi, r, t, runs)?;
        let zeros;
        let d = match data {
            Some(d) => &d[..total],
            None => {
                zeros = vec![0u8; total];
                &zeros[..]
            }
        };
        let body = match cmp {
            Some(c) => [&head[..], d, &c[..total]].concat(),
            None => with_head(&head, d).into_owned(),
        };
        let args = [a[0], a[1], code];
        match old_out {
            None if self.checked() => self.ask_op(mpi, r, (H_ACC, args, &body), 0).map(|_| ()),
            None => {
                if self.keep(mpi, r, (H_ACC, args, &body))? {
                    return Ok(());
                }
                self.send_data(mpi, r, H_ACC, &args, &body)
            }
            Some(out) => {
                let got = self.ask_op(mpi, r, (H_GACC, args, &body), total)?;
                if got.len() != total {
                    return Err(Error::Intern(format!(
                        "an accumulate fetched {} bytes for {total}",
                        got.len()
                    )));
                }
                out[..total].copy_from_slice(&got);
                Ok(())
            }
        }
    }

    /// `MPI_Win_lock` of member `r`: deferred (module docs), except on this process
    /// itself, whose local loads and stores the lock must cover at once.
    pub(super) fn msg_lock<P: Port>(&self, mpi: &Mpi<P>, r: u32, t: LockType) -> Result<()> {
        if r as usize == self.comm.rank || !aggregate() {
            return self.msg_lock_now(mpi, r, t);
        }
        self.epoch().deferred[r as usize] = Some(Vec::new());
        Ok(())
    }

    /// Takes member `r`'s lock (waits for the grant).
    pub(super) fn msg_lock_now<P: Port>(&self, mpi: &Mpi<P>, r: u32, t: LockType) -> Result<()> {
        let code = self.lock_code(t);
        self.ask(mpi, r, H_LOCK, &[code], &[], 0).map(|_| ())
    }

    /// A lock request's `args[0]` (wire in `served.rs`): 0 exclusive, 1 shared,
    /// [`LOCK_ALL`] shared in a lock_all epoch.
    fn lock_code(&self, t: LockType) -> u64 {
        match t {
            LockType::Exclusive => 0,
            LockType::Shared if self.epoch().lock_all => LOCK_ALL,
            LockType::Shared => 1,
        }
    }

    /// Releases member `r`'s lock once every earlier operation there is done (a deferred
    /// lock: the batch with the release, or nothing if no operation was issued).
    pub(super) fn msg_unlock<P: Port>(&self, mpi: &Mpi<P>, r: u32, t: LockType) -> Result<()> {
        self.xfer_quiet()?;
        let shared = u64::from(t == LockType::Shared);
        let kept = self.epoch().deferred[r as usize].take();
        match kept {
            Some(ops) if ops.is_empty() => Ok(()),
            Some(ops) => {
                self.batch(mpi, r, t, ops, true, 0)?;
                self.sent_kept(mpi, r)
            }
            None => self.ask(mpi, r, H_UNLOCK, &[shared], &[], 0).map(|_| ()),
        }
    }

    /// Remote completion of every earlier operation to member `r` (a deferred lock with
    /// operations: the batch, after which the lock is held).
    pub(super) fn msg_flush<P: Port>(&self, mpi: &Mpi<P>, r: u32) -> Result<()> {
        self.xfer_quiet()?;
        if self.undefer(mpi, r, false)? {
            return Ok(());
        }
        // Every one-way operation to `r` was followed by a request already answered:
        // nothing left to complete (a get or fetch-and-op + flush is one round trip).
        let c = &self.oneway[r as usize];
        if c[1].load(Ordering::Relaxed) >= c[0].load(Ordering::Relaxed) {
            return Ok(());
        }
        self.ask(mpi, r, H_FLUSH, &[], &[], 0).map(|_| ())
    }

    /// Keeps a one-way operation under member `r`'s deferred lock if there is one and the
    /// operation fits (`true`); otherwise sends whatever was kept (the lock is then held).
    fn keep<P: Port>(&self, mpi: &Mpi<P>, r: u32, op: (u8, [u64; 3], &[u8])) -> Result<bool> {
        let typed = op.1[1] == TYPED;
        {
            let mut e = self.epoch();
            let Some(ops) = e.deferred[r as usize].as_mut() else {
                return Ok(false);
            };
            if ops.len() + 40 + op.2.len() <= AGG_BYTES {
                encode(ops, op);
                e.typed[r as usize] += usize::from(typed);
            } else {
                drop(e);
                self.undefer(mpi, r, true)?;
                return Ok(false);
            }
        }
        if typed {
            // The program may free the type at once: its forget must wait for this.
            mpi.engine().with_ep(|ep| {
                ep.ctx_mut().rma.sent.keep();
                Ok(())
            })?;
        }
        Ok(true)
    }

    /// Member `r`'s kept operations were sent: the forgets held back for those on
    /// described types may go (`types.rs`).
    fn sent_kept<P: Port>(&self, mpi: &Mpi<P>, r: u32) -> Result<()> {
        let n = std::mem::take(&mut self.epoch().typed[r as usize]);
        super::types::sent_kept(mpi, n)
    }

    /// Sends member `r`'s deferred lock and the operations kept under it, if any (`true`:
    /// there was a deferred lock, now held — or still deferred if nothing was kept and not
    /// `take`: there is nothing to complete).
    fn undefer<P: Port>(&self, mpi: &Mpi<P>, r: u32, take: bool) -> Result<bool> {
        let ops = {
            let mut e = self.epoch();
            match &e.deferred[r as usize] {
                None => return Ok(false),
                Some(ops) if ops.is_empty() && !take => return Ok(true),
                Some(_) => e.deferred[r as usize].take().unwrap_or_default(),
            }
        };
        let t = self.lock_type(r);
        self.batch(mpi, r, t, ops, false, 0)?;
        self.sent_kept(mpi, r)?;
        Ok(true)
    }

    /// Takes member `r`'s deferred lock now, if there is one (with the operations kept
    /// under it): before a transfer, which must land under the lock (`xfer.rs`).
    pub(super) fn take_deferred_lock<P: Port>(&self, mpi: &Mpi<P>, r: u32) -> Result<()> {
        self.undefer(mpi, r, true).map(drop)
    }

    /// A request for operation `op` to member `r` and its reply's `len` bytes: with a
    /// deferred lock, the last operation of the batch that takes it.
    fn ask_op<P: Port>(
        &self,
        mpi: &Mpi<P>,
        r: u32,
        op: (u8, [u64; 3], &[u8]),
        len: usize,
    ) -> Result<Vec<u8>> {
        let kept = self.epoch().deferred[r as usize].take();
        match kept {
            Some(mut ops) => {
                encode(&mut ops, op);
                let t = self.lock_type(r);
                let got = self.batch(mpi, r, t, ops, false, len)?;
                self.sent_kept(mpi, r)?;
                Ok(got)
            }
            None => self.ask(mpi, r, op.0, &op.1, op.2, len),
        }
    }

    /// The lock this process holds (or defers) on member `r`.
    fn lock_type(&self, r: u32) -> LockType {
        self.epoch().locks[r as usize].unwrap_or(LockType::Shared)
    }

    /// One `H_BATCH`: the lock of member `r`, `ops`, and the release if `unlock`; returns the
    /// fetched data (`len` bytes expected).
    fn batch<P: Port>(
        &self,
        mpi: &Mpi<P>,
        r: u32,
        t: LockType,
        ops: Vec<u8>,
        unlock: bool,
        len: usize,
    ) -> Result<Vec<u8>> {
        let code = self.lock_code(t);
        self.ask(mpi, r, H_BATCH, &[code, u64::from(unlock)], &ops, len)
    }

    /// The message part of a fence: tells every member this origin's operations to it are
    /// sent (they are applied before the notice, FIFO), then waits for every member's
    /// notice of fence number `k` (1-based).
    pub(super) fn msg_fence<P: Port>(&self, mpi: &Mpi<P>, k: u64) -> Result<()> {
        self.xfer_quiet()?;
        let n = self.members.len() as u64;
        let id = self.id;
        for r in 0..n as u32 {
            let dst = self.world(r);
            self.ep(mpi, |ep| ep.send(dst, H_FENCE, id, &[], &[]))?;
        }
        mpi.engine().wait_until(|s| s.rma.fences(id) >= k * n)
    }
}

/// `SKIFMPI_RMA_AGGREGATE=0` turns the aggregation off (every lock is requested at once,
/// every operation sent as it comes): a switch for measuring what it saves.
fn aggregate() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("SKIFMPI_RMA_AGGREGATE").map_or(true, |v| v.trim() != "0"))
}

/// Appends one `H_BATCH` sub-operation (wire in `served.rs`).
fn encode(ops: &mut Vec<u8>, (h, args, data): (u8, [u64; 3], &[u8])) {
    for w in [u64::from(h), args[0], args[1], args[2], data.len() as u64] {
        ops.extend_from_slice(&w.to_le_bytes());
    }
    ops.extend_from_slice(data);
}
