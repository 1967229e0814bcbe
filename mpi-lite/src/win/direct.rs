//! The direct path's operations without the general path's layers (MPI-3.1 §11.3, §11.5.4):
//! on a window whose target memory is mapped here, inside an access epoch, a put or get of
//! one contiguous run is a range check and a copy, an accumulate-family operation on 4- or
//! 8-byte integers (and a floating-point sum) one CPU atomic per element, and a flush at
//! most a memory barrier (below). Each returns `false` having done nothing when anything does not fit (a
//! rank, a range, an epoch, a type, the message path): the caller then takes the general
//! path (`ops.rs`, `sync.rs`), which checks everything again and reports the error.
//!
//! The epoch checks read [`Member::open`] and [`Win::open`] (relaxed atomics: the epoch is
//! changed by this process's own synchronisation calls, which the program orders before
//! its operations), kept equal to [`Epoch`] by [`EpochGuard`] whenever it is changed.
//!
//! **The flush's barrier** (MPI-3.1 §11.5.4: the operations are complete at the target
//! when it returns; §11.7: in the unified model that is the target's memory, and plain loads
//! observe it "eventually", ordered only by the program's synchronisation). A direct-path
//! operation has reached the target's memory when it returns, except for stores still in
//! this CPU's store buffer, so a flush only has to order. On x86-64 (TSO: Intel SDM vol. 3A
//! §9.2.2, AMD APM vol. 2 §7.2) stores become visible in program order, after every earlier
//! load, and only a later *load* may pass them: every signal the origin sends after a flush
//! (a store: a message, a barrier's arrival, another put) is seen after the put's data.
//! What a missing barrier breaks is `put x; flush; get y` here against `put y; flush; get x`
//! elsewhere, where MPI forbids both gets to read the old values. So the barrier moves from
//! the flush to the next operation that loads from a window of this rank (a direct get, a
//! `MPI_NO_OP` fetch, any general-path operation: `Win::before_loads`), and only when a plain
//! store (a direct put, a general-path operation: [`Win::stored`]) happened since the last
//! one — the mark is the rank's, shared by its windows (`Mpi::rma_stores`). Locked
//! instructions (the other single-instruction accumulates) are full barriers themselves.
//! Epoch ends (unlock, fence, complete) and `MPI_Win_sync` keep their barriers. So on
//! x86-64 a flush issues no locked instruction and a put costs one only when a get follows
//! its flush. Elsewhere (weaker models) and under `MPI_THREAD_MULTIPLE` (another thread's
//! barrier would clear the mark while this thread's stores are still in its own store
//! buffer) every flush issues the barrier and loads check nothing. `MPI_Win_flush_local`
//! completes only at the origin (the copies and atomics read its buffers already) and
//! issues none.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

use skifch::coll::DType;

use super::{AccOp, Epoch, Win};
use crate::datatype::Basic;
use crate::engine::lock::FlagGuard;

/// In [`Member::open`](super::Member): an access epoch to the member (lock, start); in
/// [`Win::open`]: to every member (fence, lock_all).
pub(super) const ACCESS: u8 = 1;
/// A passive-target epoch: the member is locked (in `Win::open`: lock_all).
pub(super) const PASSIVE: u8 = 2;
/// In `Win::open` only: some member is locked or lock_all is in force (`flush_all`).
const ANY_PASSIVE: u8 = 4;

/// The rank's store mark (`Mpi::rma_stores`): every plain store of its one-sided
/// operations was followed by a full barrier.
const FENCED: u8 = 0;
/// A plain store happened since the last barrier: the next load from a window issues one.
const STORED: u8 = 1;
/// No mark: every flush issues the barrier (`MPI_THREAD_MULTIPLE`, weaker memory models).
const ALWAYS: u8 = 2;
/// The memory model lets the barrier move from the flush to the next load (module docs).
const TSO: bool = cfg!(target_arch = "x86_64");

/// A rank's store mark at `MPI_Init` (`threads`: `MPI_THREAD_MULTIPLE`).
pub(crate) fn stores_init(threads: bool) -> AtomicU8 {
    AtomicU8::new(if threads || !TSO { ALWAYS } else { FENCED })
}

/// The store mark of a program of one thread whose engine the asynchronous progress thread
/// shares (opened for `MPI_THREAD_MULTIPLE`): that thread makes no one-sided operation and
/// touches no mark, so the flush's barrier may move as in any single-threaded program.
/// Called before any window exists.
pub fn one_program_thread<P: skifch::Port>(mpi: &crate::comm::Mpi<P>) {
    mpi.rma_stores
        .store(stores_init(false).into_inner(), Ordering::Relaxed);
}

/// The epoch state, locked; dropping it after a change publishes the change to the
/// members' `open` bits.
pub(super) struct EpochGuard<'a> {
    g: FlagGuard<'a, Epoch>,
    win: &'a Win,
    changed: bool,
}

impl Deref for EpochGuard<'_> {
    type Target = Epoch;
    fn deref(&self) -> &Epoch {
        &self.g
    }
}

impl DerefMut for EpochGuard<'_> {
    fn deref_mut(&mut self) -> &mut Epoch {
        self.changed = true;
        &mut self.g
    }
}

impl EpochGuard<'_> {
    /// Publishes the epoch to the `open` bits: the window's and member `only`'s (every
    /// member's: `None`; a lock or unlock changes one member's alone); the guard is clean.
    fn publish(&mut self, only: Option<usize>) {
        let e = &*self.g;
        let mut all = 0;
        if e.fence || e.lock_all {
            all |= ACCESS;
        }
        if e.lock_all {
            all |= PASSIVE | ANY_PASSIVE;
        }
        if e.locks.iter().any(Option::is_some) {
            all |= ANY_PASSIVE;
        }
        let bits = |r: usize| {
            let mut b = 0;
            if e.locks.get(r).is_some_and(Option::is_some) {
                b |= ACCESS | PASSIVE;
            }
            if e.started.as_ref().is_some_and(|g| g.contains(&r)) {
                b |= ACCESS;
            }
            b
        };
        // Every member's bits carry the window-wide ones (one load per operation's check):
        // all members are written when those change.
        let wide = all & (ACCESS | PASSIVE);
        let members = &self.win.members;
        let range = match only {
            Some(r) if self.win.open.load(Ordering::Relaxed) & (ACCESS | PASSIVE) == wide => {
                r..(r + 1).min(members.len())
            }
            _ => 0..members.len(),
        };
        for r in range {
            members[r].open.store(bits(r) | wide, Ordering::Relaxed);
        }
        self.win.open.store(all, Ordering::Relaxed);
        self.changed = false;
    }
}

impl Drop for EpochGuard<'_> {
    fn drop(&mut self) {
        if self.changed {
            self.publish(None);
        }
    }
}

/// The atomic read-modify-write an accumulate-family operation is on the direct path (its
/// code in [`RMW_TABLE`], with [`WIDE`]).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Rmw {
    Add = 1,
    FAdd,
    And,
    Or,
    Xor,
    MaxS,
    MinS,
    MaxU,
    MinU,
    Swap,
    Load,
    Cas,
}

/// In a code of [`RMW_TABLE`]: 8-byte elements.
const WIDE: u8 = 0x80;

/// The code in [`RMW_TABLE`] of operation handle `op` (`mpi.h`: `MPI_MAX` = 1 …
/// `MPI_REPLACE` = 13, `MPI_NO_OP` = 14; [`CAS`]: compare-and-swap) on elements of `d`:
/// the [`Rmw`], with [`WIDE`] for 8-byte elements; 0 when it has no single instruction
/// (the general path's compare-and-swap loop with the reducer).
const fn rmw_code(d: Option<DType>, op: usize) -> u8 {
    use DType::*;
    // (8 bytes, integer, signed)
    let (wide, int, signed) = match d {
        Some(I32) => (false, true, true),
        Some(U32) => (false, true, false),
        Some(I64) => (true, true, true),
        Some(U64) => (true, true, false),
        Some(F32) => (false, false, false),
        Some(F64) => (true, false, false),
        _ => return 0,
    };
    let k = match op {
        CAS => Rmw::Cas,
        14 => Rmw::Load,
        13 => Rmw::Swap,
        3 if int => Rmw::Add,
        3 => Rmw::FAdd,
        6 if int => Rmw::And,
        8 if int => Rmw::Or,
        10 if int => Rmw::Xor,
        1 if int && signed => Rmw::MaxS,
        2 if int && signed => Rmw::MinS,
        1 if int => Rmw::MaxU,
        2 if int => Rmw::MinU,
        _ => return 0,
    };
    k as u8 | if wide { WIDE } else { 0 }
}

/// Columns of [`RMW_TABLE`]: operation handles 0 to 14 ([`AccOp`]'s codes; 0 is none),
/// then [`CAS`].
const COLS: usize = 16;
/// The column of compare-and-swap.
const CAS: usize = 15;

/// [`rmw_code`] of every predefined type and operation handle, flat: entry
/// `i * COLS + op` for the type at position `i` of [`Basic::ALL`] and operation handle `op`
/// ([`CAS`]: compare-and-swap), made at compile time: a short cut finds its instruction with one
/// load and one bounds check.
const RMW_TABLE: [u8; Basic::ALL.len() * COLS] = {
    let mut t = [0u8; Basic::ALL.len() * COLS];
    let mut i = 0;
    while i < Basic::ALL.len() {
        // [`RmwOp::of`] finds a type's row by its discriminant.
        assert!(Basic::ALL[i] as usize == i);
        let mut op = 0;
        while op < COLS {
            t[i * COLS + op] = rmw_code(Basic::ALL[i].dtype(), op);
            op += 1;
        }
        i += 1;
    }
    t
};

/// One element's accumulate-family operation on the direct path: the instruction and the
/// element's width (4 or 8 bytes), found once per call from the type and the operation
/// (its code in [`RMW_TABLE`], never 0).
#[derive(Clone, Copy)]
pub struct RmwOp(u8);

impl RmwOp {
    /// The instruction for `op` on elements of `b` (compare-and-swap when `cas`); `None`
    /// for the rest (the general path's compare-and-swap loop with the reducer).
    #[inline(always)]
    pub fn of(b: Basic, op: AccOp, cas: bool) -> Option<RmwOp> {
        RmwOp::of_index(b as usize, op.code() as i32, cas)
    }

    /// As [`RmwOp::of`] for the type at position `i` of [`Basic::ALL`] and `mpi.h`'s
    /// operation handle `op` (anything else: `None`; unused when `cas`).
    #[inline(always)]
    pub fn of_index(i: usize, op: i32, cas: bool) -> Option<RmwOp> {
        // A negative handle is a large unsigned one.
        if i >= Basic::ALL.len() || (!cas && op as u32 >= CAS as u32) {
            return None;
        }
        let col = if cas { CAS } else { op as usize };
        let code = RMW_TABLE[i * COLS + col];
        match code {
            0 => None,
            // Compare-and-swap known at compile time: its caller's code has one instruction.
            _ if cas => Some(RmwOp(Rmw::Cas as u8 | (code & WIDE))),
            _ => Some(RmwOp(code)),
        }
    }

    /// The instruction.
    #[inline(always)]
    fn kind(self) -> Rmw {
        use Rmw::*;
        match self.0 & !WIDE {
            1 => Add,
            2 => FAdd,
            3 => And,
            4 => Or,
            5 => Xor,
            6 => MaxS,
            7 => MinS,
            8 => MaxU,
            9 => MinU,
            10 => Swap,
            11 => Load,
            _ => Cas,
        }
    }

    /// Bytes of the element.
    #[inline(always)]
    pub fn width(self) -> usize {
        if self.0 & WIDE != 0 {
            8
        } else {
            4
        }
    }

    /// `MPI_NO_OP`: the origin's value is not read.
    #[inline(always)]
    pub fn reads_origin(self) -> bool {
        self.0 & !WIDE != Rmw::Load as u8
    }
}

/// `one32` / `one64`: the atomic update of word `a` by `k` (`x` the origin's value, `c` the
/// compare value of `Rmw::Cas`), returning the old value. Sequentially consistent, as the
/// general path's compare-and-swap loop, with which it is atomic per element.
macro_rules! rmw_one {
    ($name:ident, $a:ty, $u:ty, $i:ty, $f:ty) => {
        #[inline(always)]
        fn $name(a: &$a, k: Rmw, x: $u, c: $u) -> $u {
            const O: Ordering = Ordering::SeqCst;
            let upd = |f: &dyn Fn($u) -> $u| match a.fetch_update(O, O, |v| Some(f(v))) {
                Ok(v) | Err(v) => v,
            };
            match k {
                Rmw::Add => a.fetch_add(x, O),
                Rmw::And => a.fetch_and(x, O),
                Rmw::Or => a.fetch_or(x, O),
                Rmw::Xor => a.fetch_xor(x, O),
                Rmw::MaxU => a.fetch_max(x, O),
                Rmw::MinU => a.fetch_min(x, O),
                Rmw::Swap => a.swap(x, O),
                Rmw::Load => a.load(O),
                Rmw::Cas => match a.compare_exchange(c, x, O, O) {
                    Ok(v) | Err(v) => v,
                },
                Rmw::MaxS => upd(&|v| (v as $i).max(x as $i) as $u),
                Rmw::MinS => upd(&|v| (v as $i).min(x as $i) as $u),
                Rmw::FAdd => upd(&|v| (<$f>::from_bits(v) + <$f>::from_bits(x)).to_bits()),
            }
        }
    };
}
rmw_one!(one32, AtomicU32, u32, i32, f32);
rmw_one!(one64, AtomicU64, u64, i64, f64);

/// `rmw32` / `rmw64`: [`one32`] / [`one64`] on each word of `words` (element `i` of the
/// packed native-endian `src` the origin's value, of `cmp` the compare value), the old
/// values going to `old`.
macro_rules! rmw_fn {
    ($name:ident, $one:ident, $a:ty, $u:ty) => {
        #[inline(always)]
        fn $name(
            words: &[$a],
            k: Rmw,
            src: Option<&[u8]>,
            cmp: Option<&[u8]>,
            mut old: Option<&mut [u8]>,
        ) {
            const W: usize = std::mem::size_of::<$u>();
            for (i, a) in words.iter().enumerate() {
                let x = <$u>::from_ne_bytes(elem::<W>(src, i));
                let c = <$u>::from_ne_bytes(elem::<W>(cmp, i));
                let v = $one(a, k, x, c);
                if let Some(o) = old.as_deref_mut() {
                    o[i * W..i * W + W].copy_from_slice(&v.to_ne_bytes());
                }
            }
        }
    };
}
rmw_fn!(rmw32, one32, AtomicU32, u32);
rmw_fn!(rmw64, one64, AtomicU64, u64);

/// Element `i` of packed native-endian words of `W` bytes (0 when absent).
#[inline(always)]
fn elem<const W: usize>(b: Option<&[u8]>, i: usize) -> [u8; W] {
    let mut v = [0u8; W];
    if let Some(s) = b.and_then(|b| b.get(i * W..i * W + W)) {
        v.copy_from_slice(s);
    }
    v
}

impl Win {
    /// The epoch state, locked (see [`EpochGuard`]).
    pub(super) fn epoch(&self) -> EpochGuard<'_> {
        EpochGuard {
            // `lock` declines only a lock bound to a thread, which this one never is.
            g: self
                .epoch
                .lock()
                .expect("a window's epoch lock is never bound to a thread"),
            win: self,
            changed: false,
        }
    }

    /// The epoch bits open to member `r` (its own and every member's).
    #[inline(always)]
    pub(super) fn open_to(&self, r: usize) -> u8 {
        self.members
            .get(r)
            .map_or(0, |m| m.open.load(Ordering::Relaxed))
    }

    /// Marks a plain store to window memory (module docs). A load and a compare first:
    /// the mark's line is not written while it is set.
    #[inline(always)]
    pub(super) fn stored(&self) {
        if self.stores.load(Ordering::Relaxed) == FENCED {
            self.stores.store(STORED, Ordering::Relaxed);
        }
    }

    /// Before an operation loads from a window: the barrier a flush left to it, if a plain
    /// store is outstanding (module docs).
    #[inline(always)]
    pub(super) fn before_loads(&self) {
        if self.stores.load(Ordering::Relaxed) == STORED {
            super::mem::full_barrier();
            self.stores.store(FENCED, Ordering::Relaxed);
        }
    }

    /// The direct view of `rank`'s memory and the byte offset an operation at `disp`
    /// reaches, inside an access epoch (the view is empty on the message path).
    #[inline(always)]
    fn direct_at(&self, rank: i32, disp: isize) -> Option<(&super::mem::Direct, usize)> {
        // A negative rank becomes an index past every member.
        let m = self.members.get(rank as u32 as usize)?;
        if m.open.load(Ordering::Relaxed) & ACCESS == 0 {
            return None;
        }
        let off = disp.checked_mul(m.disp_unit as isize)?;
        Some((&m.direct, usize::try_from(off).ok()?))
    }

    /// `MPI_Put` of the bytes `src` (one contiguous run of predefined elements) to `rank`
    /// at `disp` on the direct path; `false`: not done, take [`Win::put`].
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside an access epoch; complete when it returns.
    #[inline(always)]
    pub fn direct_put(&self, rank: i32, disp: isize, src: &[u8]) -> bool {
        let done = self
            .direct_at(rank, disp)
            .and_then(|(m, off)| m.put(off, src))
            .is_some();
        if done {
            self.stored();
        }
        done
    }

    /// `MPI_Get` into `dst` (one contiguous run) on the direct path; `false`: not done,
    /// take [`Win::get`].
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside an access epoch; the data is in `dst` when it
    /// returns.
    #[inline(always)]
    pub fn direct_get(&self, rank: i32, disp: isize, dst: &mut [u8]) -> bool {
        self.direct_at(rank, disp)
            .and_then(|(m, off)| {
                self.before_loads();
                m.get(off, dst)
            })
            .is_some()
    }

    /// The accumulate family on the direct path, one CPU atomic per element: elements of
    /// predefined type `b` at `rank`/`disp` become `src op old` (`MPI_Accumulate`,
    /// `MPI_Get_accumulate`, `MPI_Fetch_and_op`), or `src` where `old == cmp`
    /// (`MPI_Compare_and_swap`), the old values going to `old` (packed, as many bytes as
    /// the operation has; `src` may be `None` for `MPI_NO_OP`). `false`: not done (an
    /// operation or type without a single instruction here, a window without atomics, a
    /// misaligned or out-of-range target), take the general path.
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside an access epoch; atomic per element against every
    /// accumulate-family operation; complete when it returns.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn direct_update(
        &self,
        rank: i32,
        disp: isize,
        b: Basic,
        op: AccOp,
        src: Option<&[u8]>,
        cmp: Option<&[u8]>,
        old: Option<&mut [u8]>,
    ) -> bool {
        let Some(rop) = RmwOp::of(b, op, cmp.is_some()) else {
            return false;
        };
        let (w, k) = (rop.width(), rop.kind());
        let len = match (src, old.as_deref()) {
            (Some(s), o) if o.is_none_or(|o| o.len() == s.len()) => s.len(),
            (None, Some(o)) if matches!(k, Rmw::Load) => o.len(),
            _ => return false,
        };
        if !self.atomics || len & (w - 1) != 0 || cmp.is_some_and(|c| c.len() != len) {
            return false;
        }
        let Some((m, off)) = self.direct_at(rank, disp) else {
            return false;
        };
        let n = len / w;
        if k == Rmw::Load {
            // A plain load on x86-64; every other kind is a locked instruction.
            self.before_loads();
        }
        let done = match w {
            8 => m
                .words::<AtomicU64>(off, n)
                .map(|a| rmw64(a, k, src, cmp, old)),
            4 => m
                .words::<AtomicU32>(off, n)
                .map(|a| rmw32(a, k, src, cmp, old)),
            _ => None,
        };
        done.is_some()
    }

    /// One element's accumulate-family operation on the direct path ([`RmwOp`], one CPU
    /// atomic): the element at `rank`/`disp` becomes `x op old` (or `x` where
    /// `old == c`, compare-and-swap), returning `old` (in the low [`RmwOp::width`] bytes).
    /// `None`: not done (a window without atomics, a misaligned or out-of-range target, no
    /// epoch), take the general path.
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside an access epoch; atomic per element against every
    /// accumulate-family operation; complete when it returns.
    #[inline(always)]
    pub fn direct_rmw(&self, rank: i32, disp: isize, op: RmwOp, x: u64, c: u64) -> Option<u64> {
        // A window without atomics has none in its direct view (`atomic_len` 0).
        let (m, off) = self.direct_at(rank, disp)?;
        if !op.reads_origin() {
            // A plain load on x86-64; every other kind is a locked instruction.
            self.before_loads();
        }
        Some(if op.width() == 8 {
            one64(m.word::<AtomicU64>(off)?, op.kind(), x, c)
        } else {
            u64::from(one32(
                m.word::<AtomicU32>(off)?,
                op.kind(),
                x as u32,
                c as u32,
            ))
        })
    }

    /// The member index of `rank` for the direct path's lock calls (`None`: the message
    /// path or not a member).
    fn direct_rank(&self, rank: i32) -> Option<usize> {
        let r = usize::try_from(rank).ok()?;
        (!self.msg && r < self.members.len()).then_some(r)
    }

    /// `MPI_Win_lock` without assertions on the direct path when the lock of `rank` is free
    /// at once (one compare-and-swap on its lock word, no wait): `false`, nothing done, else
    /// (the message path, a bad rank, an epoch already open to it, the lock busy): take
    /// [`Win::lock`], which waits and reports.
    ///
    /// # One-sided Operation
    /// Only the origin calls it; the lock is held when it returns `true`.
    pub fn direct_lock(&self, t: super::LockType, rank: i32) -> bool {
        let Some(r) = self.direct_rank(rank) else {
            return false;
        };
        let mut e = self.epoch();
        if e.lock_all || e.locks[r].is_some() || !super::sync::try_acquire(self.ctls[r].lock(), t) {
            return false;
        }
        // A passive epoch ends the (empty) fence epoch, as in `Win::lock`.
        e.fence = false;
        e.locks[r] = Some(t);
        e.publish(Some(r));
        true
    }

    /// `MPI_Win_unlock` on the direct path of a lock [`Win::direct_lock`] or [`Win::lock`]
    /// took without `MPI_MODE_NOCHECK`: the lock word's release (a barrier).
    /// `false`, nothing done (the message path, a bad rank, no such lock): take
    /// [`Win::unlock`].
    ///
    /// # One-sided Operation
    /// Only the origin calls it; every operation to `rank` is complete when it returns.
    pub fn direct_unlock(&self, rank: i32) -> bool {
        let Some(r) = self.direct_rank(rank) else {
            return false;
        };
        let t = {
            let mut e = self.epoch();
            if e.nocheck[r] {
                return false;
            }
            let Some(t) = e.locks[r].take() else {
                return false;
            };
            e.publish(Some(r));
            t
        };
        // Every operation before the release (MPI-3.1 §11.5.3): on x86-64 the release is a
        // locked read-modify-write, a full barrier itself; elsewhere a fence first.
        if !TSO {
            super::mem::full_barrier();
        }
        super::sync::release(self.ctls[r].lock(), t);
        true
    }

    /// `MPI_Win_flush` (`Some(rank)`, `local` false), `flush_local` (`local`) and their
    /// `_all` forms (`None`) on the direct path: inside a passive-target epoch every
    /// operation is already complete, so at most a memory barrier (module docs). `false`:
    /// not done (the message path, no such epoch, a bad rank), take [`Win::flush`].
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside a passive-target epoch.
    #[inline(always)]
    pub fn direct_flush(&self, rank: Option<i32>, local: bool) -> bool {
        if self.msg {
            return false;
        }
        let open = match rank {
            Some(r) => self.open_to(r as u32 as usize) & PASSIVE,
            None => self.open.load(Ordering::Relaxed) & ANY_PASSIVE,
        };
        if open == 0 {
            return false;
        }
        if local || self.stores.load(Ordering::Relaxed) != ALWAYS {
            // Complete at the origin (the buffers were read); ordered for the targets by the
            // next load's barrier (module docs).
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
        } else {
            super::mem::full_barrier();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table by type position and operation handle: only handles 1-14 name an
    /// operation, compare-and-swap has its own column, and no out-of-range handle or type
    /// lands on an entry.
    #[test]
    fn rmw_table_lookup() {
        let long = Basic::ALL
            .iter()
            .position(|&b| b.dtype() == Some(DType::I64));
        let i = long.expect("a predefined 64-bit signed type");
        let op = |o: i32| RmwOp::of_index(i, o, false).map(|r| (r.kind(), r.width()));
        assert!(op(3) == Some((Rmw::Add, 8)));
        assert!(op(1) == Some((Rmw::MaxS, 8)));
        assert!(op(14) == Some((Rmw::Load, 8)));
        assert!(op(13) == Some((Rmw::Swap, 8)));
        for bad in [0, 15, 16, 31, -1, i32::MIN, i32::MAX] {
            assert!(op(bad).is_none(), "operation handle {bad}");
        }
        let cas = RmwOp::of_index(i, 0, true).expect("compare-and-swap of a long");
        assert!(cas.kind() == Rmw::Cas && cas.width() == 8 && cas.reads_origin());
        assert!(RmwOp::of_index(Basic::ALL.len(), 3, false).is_none());
        assert!(RmwOp::of_index(usize::MAX, 3, true).is_none());
        let byte = Basic::ALL
            .iter()
            .position(|&b| b == Basic::Byte)
            .expect("MPI_BYTE");
        assert!(RmwOp::of_index(byte, 3, false).is_none());
        let float = Basic::ALL
            .iter()
            .position(|&b| b.dtype() == Some(DType::F32));
        let f = RmwOp::of_index(float.expect("float"), 3, false).expect("a float sum");
        assert!(f.kind() == Rmw::FAdd && f.width() == 4);
        assert!(RmwOp::of_index(float.expect("float"), 6, false).is_none());
    }
}
