//! The operations (MPI-3.1 §11.3): put, get and the accumulate family, on the direct path
//! (see the module docs of [`super`]). Each is complete at the target and at the origin
//! when it returns.

use std::sync::atomic::Ordering;

use skifch::coll::{Op, Reducer};
use skifch::Port;

use super::mem::Reach;

use super::{Member, Win};
use crate::coll::with_bytes;
use crate::comm::Mpi;
use crate::datatype::{Basic, Datatype};
use crate::error::{Error, Result};
use crate::mem::UserBuf;
use crate::op::{reducer, Red, ReduceOp};

/// The operation of an accumulate (`MPI_Op` of the accumulate family).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccOp {
    /// A predefined reduction: `target = origin op target`.
    Op(Op),
    /// `MPI_REPLACE`: `target = origin`.
    Replace,
    /// `MPI_NO_OP`: the target is unchanged (`MPI_Get_accumulate`: an atomic read).
    NoOp,
}

impl AccOp {
    /// The operation's code on the wire (the `mpi.h` handle numbers).
    pub(crate) fn code(self) -> u64 {
        match self {
            AccOp::Replace => 13,
            AccOp::NoOp => 14,
            AccOp::Op(o) => match o {
                Op::Max => 1,
                Op::Min => 2,
                Op::Sum => 3,
                Op::Prod => 4,
                Op::Land => 5,
                Op::Band => 6,
                Op::Lor => 7,
                Op::Bor => 8,
                Op::Lxor => 9,
                Op::Bxor => 10,
                Op::MinLoc => 11,
                Op::MaxLoc => 12,
            },
        }
    }

    /// The operation of a wire code.
    pub(crate) fn from_code(c: u64) -> Option<AccOp> {
        AccOp::from_handle(c as i32, "").ok()
    }

    /// The operation of `mpi.h`'s handle (`MPI_MAX` = 1 … `MPI_REPLACE` = 13,
    /// `MPI_NO_OP` = 14); user operations are `MPI_ERR_OP` (§11.3.4).
    #[inline]
    pub fn from_handle(h: i32, call: &str) -> Result<AccOp> {
        match h {
            13 => Ok(AccOp::Replace),
            14 => Ok(AccOp::NoOp),
            1..=12 => crate::coll::op_from_handle(h).map(AccOp::Op),
            _ => Err(Error::Op(format!(
                "{call}: operation {h} is not a predefined operation (user operations are not allowed in one-sided accumulates)"
            ))),
        }
    }
}

/// The byte runs an operation reaches in one member's memory: `(offset in its memory,
/// offset in the packed data, length)`, all checked inside it.
pub(crate) type Runs = Vec<(usize, usize, usize)>;

/// The runs [`Win::locate`] found: one (a contiguous target type, the common case, kept
/// without an allocation — it was a fifth of an 8-byte put's instructions) or many.
pub(crate) enum RunList {
    One([(usize, usize, usize); 1]),
    Many(Runs),
}

impl std::ops::Deref for RunList {
    type Target = [(usize, usize, usize)];
    fn deref(&self) -> &Self::Target {
        match self {
            RunList::One(r) => r,
            RunList::Many(v) => v,
        }
    }
}

/// The target of an operation: a member, a displacement (in its units), a count and a type.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    /// Rank in the window's group.
    pub rank: i32,
    /// Displacement in the target's `disp_unit`s.
    pub disp: isize,
    /// Elements of `dt`.
    pub count: usize,
    /// The target datatype.
    pub dt: &'a Datatype,
}

fn range(msg: String) -> Error {
    Error::Code {
        code: crate::error::class::RMA_RANGE,
        msg: format!("MPI_ERR_RMA_RANGE: {msg}"),
    }
}

/// The predefined element type an accumulate works on (the target type's, which the
/// origin's must share).
fn elem_type(t: &Datatype, o: Option<&Datatype>, call: &str) -> Result<Basic> {
    let (b, _) = t
        .homogeneous()
        .ok_or_else(|| Error::Type(format!("{call}: a target type that mixes predefined types")))?;
    if let Some(o) = o {
        if o.homogeneous().map(|x| x.0) != Some(b) {
            return Err(Error::Type(format!(
                "{call}: origin and target types are not of the same predefined type ({})",
                b.name()
            )));
        }
    }
    Ok(b)
}

impl Win {
    /// The member reached by an operation to `t` and the runs it touches, after the rank,
    /// epoch and range checks. `None`: `MPI_PROC_NULL` (nothing to do).
    fn locate(&self, t: &Target<'_>, call: &str) -> Result<Option<(&Member, RunList)>> {
        if t.rank == crate::engine::PROC_NULL {
            return Ok(None);
        }
        let m = self.member(t.rank, call)?;
        self.check_access(t.rank as usize, call)?;
        // Loads, plain copies or locked sections follow (`direct`, the flush's barrier).
        self.before_loads();
        self.stored();
        let origin = t
            .disp
            .checked_mul(m.disp_unit as isize)
            .filter(|&o| o >= 0)
            .ok_or_else(|| {
                range(format!(
                    "{call}: displacement {} (unit {}) of rank {}",
                    t.disp, m.disp_unit, t.rank
                ))
            })?;
        let before = || {
            range(format!(
                "{call}: data before the start of rank {}'s window",
                t.rank
            ))
        };
        let runs = if let Some((o, len)) = t.dt.contiguous_span(t.count) {
            let at = origin
                .checked_add(o)
                .filter(|&x| x >= 0)
                .ok_or_else(before)?;
            RunList::One([(at as usize, 0, len)])
        } else {
            let bytes = t.dt.span(t.count)?;
            let mut runs = Runs::new();
            let mut bad = false;
            t.dt.for_each_piece(0, bytes, |a, p, len| {
                match origin.checked_add(a).filter(|&x| x >= 0) {
                    Some(x) => runs.push((x as usize, p, len)),
                    None => bad = true,
                }
            });
            if bad {
                return Err(before());
            }
            RunList::Many(runs)
        };
        for &(off, _, len) in runs.iter() {
            m.reach.check(off, len).map_err(|_| {
                range(format!(
                    "{call}: {len} bytes at byte {off} of rank {}'s window of {} bytes",
                    t.rank,
                    m.reach.len()
                ))
            })?;
        }
        Ok(Some((m, runs)))
    }

    /// `MPI_Put`: copies `origin` to the target.
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside an access epoch to the target; on this path it is
    /// complete at the origin and at the target when it returns.
    pub fn put<P: Port>(&self, mpi: &Mpi<P>, origin: &UserBuf, t: Target<'_>) -> Result<()> {
        let call = "MPI_Put";
        let Some((m, runs)) = self.locate(&t, call)? else {
            return Ok(());
        };
        same_size(origin.packed_len(), t, call)?;
        let data = crate::coll::bytes(origin)?;
        if self.transfers {
            return self.xfer_put(mpi, t.rank as u32, &runs, &data);
        }
        if self.msg {
            return self.msg_put(mpi, &t, &runs, &data);
        }
        for &(off, p, len) in runs.iter() {
            m.reach.write(off, &data[p..p + len])?;
        }
        Ok(())
    }

    /// `MPI_Get`: copies the target's data into `origin`.
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside an access epoch; the data is in `origin` when it
    /// returns.
    pub fn get<P: Port>(&self, mpi: &Mpi<P>, origin: &mut UserBuf, t: Target<'_>) -> Result<()> {
        let call = "MPI_Get";
        let Some((m, runs)) = self.locate(&t, call)? else {
            return Ok(());
        };
        same_size(origin.packed_len(), t, call)?;
        with_bytes(origin, false, |b| {
            if self.transfers {
                return self.xfer_get(mpi, t.rank as u32, &runs, b);
            }
            if self.msg {
                return self.msg_get(mpi, &t, &runs, b);
            }
            for &(off, p, len) in runs.iter() {
                m.reach.read(off, &mut b[p..p + len])?;
            }
            Ok(())
        })
    }

    /// `MPI_Accumulate`: `target = origin op target`, element by element, atomic per
    /// predefined element against every other accumulate-family operation.
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside an access epoch; complete when it returns.
    pub fn accumulate<P: Port>(
        &self,
        mpi: &Mpi<P>,
        origin: &UserBuf,
        t: Target<'_>,
        op: AccOp,
    ) -> Result<()> {
        let call = "MPI_Accumulate";
        let Some((m, runs)) = self.locate(&t, call)? else {
            return Ok(());
        };
        same_size(origin.packed_len(), t, call)?;
        let b = elem_type(t.dt, Some(origin.datatype()), call)?;
        let data = crate::coll::bytes(origin)?;
        self.update(mpi, &t, m, &runs, b, op, Some(&data), None, None, call)
    }

    /// `MPI_Get_accumulate` (and `MPI_Fetch_and_op`): `result` receives the target's data
    /// as it was, and the target becomes `origin op target` (unchanged for `MPI_NO_OP`,
    /// whose `origin` is ignored), atomically per element.
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside an access epoch; `result` holds the old data when
    /// it returns.
    pub fn get_accumulate<P: Port>(
        &self,
        mpi: &Mpi<P>,
        origin: Option<&UserBuf>,
        result: &mut UserBuf,
        t: Target<'_>,
        op: AccOp,
        call: &str,
    ) -> Result<()> {
        let Some((m, runs)) = self.locate(&t, call)? else {
            return Ok(());
        };
        same_size(result.packed_len(), t, call)?;
        let b = elem_type(t.dt, Some(result.datatype()), call)?;
        let data = match (op, origin) {
            (AccOp::NoOp, _) => None,
            (_, Some(o)) => {
                same_size(o.packed_len(), t, call)?;
                elem_type(t.dt, Some(o.datatype()), call)?;
                Some(crate::coll::bytes(o)?)
            }
            (_, None) => return Err(Error::Buffer(format!("{call}: no origin buffer"))),
        };
        with_bytes(result, false, |out| {
            self.update(
                mpi,
                &t,
                m,
                &runs,
                b,
                op,
                data.as_deref(),
                Some(out),
                None,
                call,
            )
        })
    }

    /// `MPI_Compare_and_swap`: one element of predefined type `dt`; the target takes
    /// `origin` if it equals `compare`; `result` receives the old value.
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside an access epoch; atomic against every
    /// accumulate-family operation on the element; complete when it returns.
    #[allow(clippy::too_many_arguments)]
    pub fn compare_and_swap<P: Port>(
        &self,
        mpi: &Mpi<P>,
        origin: &[u8],
        compare: &[u8],
        result: &mut [u8],
        dt: &Datatype,
        rank: i32,
        disp: isize,
    ) -> Result<()> {
        let call = "MPI_Compare_and_swap";
        let t = Target {
            rank,
            disp,
            count: 1,
            dt,
        };
        let Some((m, runs)) = self.locate(&t, call)? else {
            return Ok(());
        };
        let b = elem_type(dt, None, call)?;
        if dt.predefined().is_none() {
            return Err(Error::Type(format!(
                "{call}: {} is not a predefined type",
                b.name()
            )));
        }
        self.update(
            mpi,
            &t,
            m,
            &runs,
            b,
            AccOp::Replace,
            Some(origin),
            Some(result),
            Some(compare),
            call,
        )
    }

    /// The accumulate family's one read-modify-write: over `runs` of member `m`, each
    /// element of `b` becomes `data op old` (or `data` when `cmp` is given and `old == cmp`),
    /// the old values going to `old_out`. CPU atomics per element where the window allows
    /// them, else under the target's accumulate lock.
    #[allow(clippy::too_many_arguments)]
    fn update<P: Port>(
        &self,
        mpi: &Mpi<P>,
        t: &Target<'_>,
        m: &Member,
        runs: &[(usize, usize, usize)],
        b: Basic,
        op: AccOp,
        data: Option<&[u8]>,
        mut old_out: Option<&mut [u8]>,
        cmp: Option<&[u8]>,
        call: &str,
    ) -> Result<()> {
        let bt = Datatype::basic_ref(b);
        let (sz, ext) = (bt.size(), bt.extent() as usize);
        let red = match op {
            AccOp::Op(o) => Some(
                reducer(bt, &ReduceOp::Predefined(o))
                    .map_err(|e| Error::Op(format!("{call}: {e}")))?,
            ),
            _ => None,
        };
        if self.msg {
            return self.msg_update(mpi, t, runs, b, op, data, old_out, cmp);
        }
        let atomic = self.atomics
            && sz == ext
            && runs.iter().all(|&(off, _, len)| {
                len % sz == 0 && (0..len).step_by(sz).all(|i| m.reach.atomic_ok(off + i, sz))
            });
        if atomic {
            for &(off, p, len) in runs {
                for i in (0..len).step_by(sz) {
                    let at = p + i;
                    let src = data.map(|d| &d[at..at + sz]);
                    let c = cmp.map(|c| &c[at..at + sz]);
                    let old = m.reach.rmw(off + i, sz, |old| {
                        let mut v = to_bytes(old, sz);
                        combine(op, red.as_ref(), src, c, &mut v[..sz]);
                        from_bytes(&v[..sz])
                    });
                    if let Some(out) = old_out.as_deref_mut() {
                        out[at..at + sz].copy_from_slice(&to_bytes(old, sz)[..sz]);
                    }
                }
            }
            return Ok(());
        }
        let acc = self.ctls[t.rank as usize].acc();
        let mut backoff = skifch::wait::Backoff::new();
        let mut polls = 0;
        while acc
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            super::sync::idle(mpi, &mut backoff, &mut polls)?;
        }
        let r = rmw_runs(&m.reach, runs, b, op, data, old_out, cmp);
        acc.store(0, Ordering::Release);
        r
    }
}

/// Over `runs` of `reach`, each element of `b` becomes `data op old` (or `data` when `cmp`
/// is given and `old == cmp`; unchanged for `MPI_NO_OP`), the old values (packed) going to
/// `old_out`: read, combine, write back. The caller makes it atomic (the target's
/// accumulate lock, or the serving handler).
pub(crate) fn rmw_runs(
    reach: &Reach,
    runs: &[(usize, usize, usize)],
    b: Basic,
    op: AccOp,
    data: Option<&[u8]>,
    old_out: Option<&mut [u8]>,
    cmp: Option<&[u8]>,
) -> Result<()> {
    let bt = Datatype::basic_ref(b);
    let (sz, ext) = (bt.size(), bt.extent() as usize);
    let red = match op {
        AccOp::Op(o) => Some(reducer(bt, &ReduceOp::Predefined(o))?),
        _ => None,
    };
    let total: usize = runs.iter().map(|r| r.2).sum();
    let mut cur = crate::mem::zeroed(total)?;
    for &(off, p, len) in runs {
        reach.read(off, &mut cur[p..p + len])?;
    }
    if let Some(out) = old_out {
        out[..total].copy_from_slice(&cur);
    }
    if op == AccOp::NoOp {
        return Ok(());
    }
    if sz == ext && cmp.is_none() {
        // The packed bytes are the C layout: one call over all elements.
        if let Some(d) = data {
            combine(op, red.as_ref(), Some(&d[..total]), None, &mut cur);
        }
    } else {
        let mut c_old = vec![0u8; ext];
        let mut c_new = vec![0u8; ext];
        let mut c_cmp = vec![0u8; ext];
        for e in (0..total).step_by(sz.max(1)) {
            let unpack = |v: &[u8], c: &mut [u8]| {
                bt.for_each_piece(0, sz, |a, q, l| {
                    c[a as usize..a as usize + l].copy_from_slice(&v[e + q..e + q + l])
                })
            };
            unpack(&cur, &mut c_old);
            if let Some(d) = data {
                unpack(d, &mut c_new);
            }
            if let Some(c) = cmp {
                unpack(c, &mut c_cmp);
            }
            combine(
                op,
                red.as_ref(),
                data.map(|_| &c_new[..]),
                cmp.map(|_| &c_cmp[..]),
                &mut c_old,
            );
            bt.for_each_piece(0, sz, |a, q, l| {
                cur[e + q..e + q + l].copy_from_slice(&c_old[a as usize..a as usize + l])
            });
        }
    }
    for &(off, p, len) in runs {
        reach.write(off, &cur[p..p + len])?;
    }
    Ok(())
}

/// One element's new value in `cur` (its C layout): `src op cur`, `src` (replace, or
/// compare-and-swap when `cur == cmp`), or unchanged (no-op).
fn combine(op: AccOp, red: Option<&Red>, src: Option<&[u8]>, cmp: Option<&[u8]>, cur: &mut [u8]) {
    match (op, src) {
        (AccOp::NoOp, _) | (_, None) => {}
        (AccOp::Replace, Some(s)) => {
            if cmp.is_none_or(|c| c == &*cur) {
                cur.copy_from_slice(s);
            }
        }
        (AccOp::Op(_), Some(s)) => {
            if let Some(r) = red {
                r.apply(s, cur);
            }
        }
    }
}

fn to_bytes(v: u64, w: usize) -> [u8; 8] {
    let mut b = [0u8; 8];
    if w == 4 {
        b[..4].copy_from_slice(&(v as u32).to_ne_bytes());
    } else {
        b = v.to_ne_bytes();
    }
    b
}

fn from_bytes(b: &[u8]) -> u64 {
    if b.len() == 4 {
        u64::from(u32::from_ne_bytes(b.try_into().expect("4 bytes")))
    } else {
        u64::from_ne_bytes(b.try_into().expect("8 bytes"))
    }
}

/// Origin and target describe the same number of bytes (MPI's matching type signatures).
fn same_size(origin: usize, t: Target<'_>, call: &str) -> Result<()> {
    let target = t.dt.size() * t.count;
    if origin == target {
        Ok(())
    } else {
        Err(Error::Type(format!(
            "{call}: the origin describes {origin} bytes, the target {target}"
        )))
    }
}
