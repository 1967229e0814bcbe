//! Remote atomics (`gex_AD_*`): one operation on a 4- or 8-byte element of a rank's
//! segment. Every operation is a compare-and-swap loop over [`skifch::rma::amo_at`]
//! (the same CPU atomics on the same word, whichever path and operation), run by the
//! initiator on the mapped segment (direct path) or by the target on its own segment
//! (message path, handler `H_AMO`), so operations from all ranks at once are atomic with
//! respect to each other.
#![allow(unsafe_code)] // atomics on segment memory reached through raw pointers

use std::num::Wrapping;

use skifch::proto::{Am, Endpoint, Io, Landing};
use skifch::rma::{amo_at, Amo};
use skifch::Port;

use crate::am::Ctx;
use crate::coll::Dt;
use crate::engine::Gasnet;
use crate::rma::Pending;
use crate::{Error, Result};

/// proto handler id of a remote atomic (message path).
pub(crate) const H_AMO: u8 = 6;

/// The atomic operations, in the order of their `GEX_OP_*` bits in `gasnetex.h` (bit `i`
/// is `AdOp::ALL[i]`; a fetching operator is its non-fetching one shifted by 10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // named as GASNet names them
pub enum AdOp {
    Set,
    Get,
    Swap,
    Fcas,
    Cas,
    And,
    Or,
    Xor,
    Add,
    Sub,
    Mult,
    Min,
    Max,
    Inc,
    Dec,
    Fand,
    For,
    Fxor,
    Fadd,
    Fsub,
    Fmult,
    Fmin,
    Fmax,
    Finc,
    Fdec,
}

impl AdOp {
    /// Every operation, by bit number.
    pub const ALL: [AdOp; 25] = [
        AdOp::Set,
        AdOp::Get,
        AdOp::Swap,
        AdOp::Fcas,
        AdOp::Cas,
        AdOp::And,
        AdOp::Or,
        AdOp::Xor,
        AdOp::Add,
        AdOp::Sub,
        AdOp::Mult,
        AdOp::Min,
        AdOp::Max,
        AdOp::Inc,
        AdOp::Dec,
        AdOp::Fand,
        AdOp::For,
        AdOp::Fxor,
        AdOp::Fadd,
        AdOp::Fsub,
        AdOp::Fmult,
        AdOp::Fmin,
        AdOp::Fmax,
        AdOp::Finc,
        AdOp::Fdec,
    ];
    /// The operation of the one bit set in `mask`.
    pub fn from_bit(mask: u32) -> Option<AdOp> {
        if mask.count_ones() != 1 {
            return None;
        }
        Self::ALL.get(mask.trailing_zeros() as usize).copied()
    }
    /// Whether it returns the previous value.
    pub fn fetches(self) -> bool {
        use AdOp::*;
        matches!(
            self,
            Get | Swap | Fcas | Fand | For | Fxor | Fadd | Fsub | Fmult | Fmin | Fmax | Finc | Fdec
        )
    }
    /// Its `GEX_OP_*` bit.
    pub fn bit(self) -> u32 {
        1 << (Self::ALL.iter().position(|&o| o == self).unwrap_or(31) as u32)
    }
    fn bitwise(self) -> bool {
        use AdOp::*;
        matches!(self, And | Or | Xor | Fand | For | Fxor)
    }
}

fn dt_code(dt: Dt) -> u32 {
    match dt {
        Dt::I32 => 0,
        Dt::U32 => 1,
        Dt::I64 => 2,
        Dt::U64 => 3,
        Dt::Flt => 4,
        Dt::Dbl => 5,
    }
}

fn dt_from(c: u32) -> Option<Dt> {
    [Dt::I32, Dt::U32, Dt::I64, Dt::U64, Dt::Flt, Dt::Dbl]
        .get(c as usize)
        .copied()
}

/// Checks that `op` is meaningful on `dt` (no bitwise operations on floating point).
pub fn check(dt: Dt, op: AdOp) -> Result<()> {
    if dt.is_float() && op.bitwise() {
        return Err(Error::BadArgument(format!(
            "a bitwise atomic ({op:?}) on floating-point data"
        )));
    }
    Ok(())
}

/// The new value of an element holding `old` (raw bits), or `None` when nothing is
/// stored (a get, a compare-and-swap that does not match).
fn compute(dt: Dt, op: AdOp, old: u64, a: u64, b: u64) -> Option<u64> {
    use AdOp::*;
    macro_rules! arith {
        ($t:ty, $one:expr, $from:expr, $to:expr) => {{
            let (o, x): ($t, $t) = ($from(old), $from(a));
            let one: $t = $one;
            let r: $t = match op {
                Add | Fadd => o + x,
                Sub | Fsub => o - x,
                Mult | Fmult => o * x,
                Min | Fmin => {
                    if x < o {
                        x
                    } else {
                        o
                    }
                }
                Max | Fmax => {
                    if x > o {
                        x
                    } else {
                        o
                    }
                }
                Inc | Finc => o + one,
                Dec | Fdec => o - one,
                _ => return None,
            };
            Some($to(r))
        }};
    }
    match op {
        Set | Swap => return Some(a),
        Get => return None,
        Cas | Fcas => {
            let w = if dt.size() == 4 {
                0xffff_ffff
            } else {
                u64::MAX
            };
            return (old & w == a & w).then_some(b);
        }
        And | Fand => return Some(old & a),
        Or | For => return Some(old | a),
        Xor | Fxor => return Some(old ^ a),
        _ => {}
    }
    match dt {
        // Integers wrap, as C's unsigned arithmetic and GASNet's atomics do.
        Dt::I32 => arith!(
            Wrapping<i32>,
            Wrapping(1),
            |v: u64| Wrapping(v as u32 as i32),
            |r: Wrapping<i32>| r.0 as u32 as u64
        ),
        Dt::U32 => arith!(
            Wrapping<u32>,
            Wrapping(1),
            |v: u64| Wrapping(v as u32),
            |r: Wrapping<u32>| u64::from(r.0)
        ),
        Dt::I64 => arith!(
            Wrapping<i64>,
            Wrapping(1),
            |v: u64| Wrapping(v as i64),
            |r: Wrapping<i64>| r.0 as u64
        ),
        Dt::U64 => arith!(Wrapping<u64>, Wrapping(1), Wrapping, |r: Wrapping<u64>| r.0),
        Dt::Flt => arith!(f32, 1.0, |v: u64| f32::from_bits(v as u32), |r: f32| {
            u64::from(r.to_bits())
        }),
        Dt::Dbl => arith!(f64, 1.0, f64::from_bits, |r: f64| r.to_bits()),
    }
    .map(|v| if dt.size() == 4 { v & 0xffff_ffff } else { v })
}

/// Applies `op` at `p` atomically; returns the previous raw bits.
///
/// # Safety
/// `p` is valid for `dt.size()` bytes, aligned to it, and accessed by everyone only
/// atomically or by raw copies.
unsafe fn apply(p: *mut u8, dt: Dt, op: AdOp, a: u64, b: u64) -> u64 {
    let w = dt.size();
    // SAFETY: the caller's contract, for every access below.
    let mut old = unsafe { amo_at(p, w, Amo::Fetch) };
    loop {
        let Some(new) = compute(dt, op, old, a, b) else {
            return old;
        };
        // SAFETY: as above.
        let seen = unsafe { amo_at(p, w, Amo::CompareSwap { expected: old, new }) };
        if seen == old {
            return old;
        }
        old = seen;
    }
}

/// Installs the message path's handler.
pub(crate) fn install<P: Port>(ep: &mut Endpoint<P, Ctx>) -> Result<()> {
    ep.register(H_AMO, on_amo::<P>)?;
    Ok(())
}

fn on_amo<P: Port>(ctx: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> skifch::Result<()> {
    let Some(to) = am.reply_to() else {
        return Ok(());
    };
    let w = am.args();
    let (addr, a, b) = (
        w.first().copied().unwrap_or(0) as usize,
        w.get(1).copied().unwrap_or(0),
        w.get(2).copied().unwrap_or(0),
    );
    let (Some(dt), Some(op)) = (
        dt_from(am.arg() & 0xff),
        AdOp::ALL.get((am.arg() >> 8) as usize).copied(),
    ) else {
        return io.reply_error(to, "an unknown atomic operation");
    };
    let ok = ctx
        .segs
        .as_deref()
        .ok_or(Error::NotAttached)
        .and_then(|s| s.offset(ctx.rank, addr, dt.size()))
        .and_then(|_| check(dt, op));
    if let Err(e) = ok {
        return io.reply_error(to, &e.to_string());
    }
    if !addr.is_multiple_of(dt.size()) {
        return io.reply_error(to, "a misaligned atomic");
    }
    // SAFETY: inside this rank's segment (checked), aligned (checked), reached by every
    // rank only through these atomics.
    let old = unsafe { apply(addr as *mut u8, dt, op, a, b) };
    io.reply(to, 0, &[], &old.to_le_bytes()[..dt.size()])
}

impl<P: Port> Gasnet<P> {
    /// Atomic `op` with operands `a`, `b` (raw bits) on the `dt` element at `addr` of
    /// `rank`'s segment. The previous value (raw bits, for fetching operations) goes to
    /// `result` when given: at once on the direct path, when the returned [`Pending`]
    /// completes on the message path.
    ///
    /// # Safety
    /// `result`, if not null, is writable for `dt.size()` bytes until completion.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn amo(
        &self,
        dt: Dt,
        op: AdOp,
        rank: u32,
        addr: usize,
        a: u64,
        b: u64,
        result: *mut u8,
    ) -> Result<Pending> {
        check(dt, op)?;
        let w = dt.size();
        if !addr.is_multiple_of(w) {
            return Err(Error::BadArgument(format!(
                "an atomic on {w} bytes at {addr:#x}, not {w}-byte aligned"
            )));
        }
        let segs = self.segs().ok_or(Error::NotAttached)?;
        let off = segs.offset(rank, addr, w)?;
        let local = match &segs.win {
            Some(win) => win.reach(rank, off, w),
            None if rank == self.me() => Some(addr as *mut u8),
            None => None,
        };
        if let Some(p) = local {
            self.alive()?;
            // SAFETY: mapped, in bounds and aligned (the mapping keeps the owner's page
            // alignment); reached by every rank only through these atomics.
            let old = unsafe { apply(p, dt, op, a, b) };
            if !result.is_null() {
                let v = old.to_le_bytes();
                // SAFETY: the caller's result buffer of `w` bytes.
                unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), result, w) };
            }
            return Ok(Pending::default());
        }
        let l = if result.is_null() {
            Landing::discard()
        } else {
            // SAFETY: the caller's contract.
            unsafe { Landing::raw(result, w) }
        };
        let code = dt_code(dt) | (op.bit().trailing_zeros()) << 8;
        let mut ep = self.ep()?;
        let id = ep
            .request(rank, H_AMO, code, &[addr as u64, a, b], &[], l)
            .or_else(|e| self.alive().and(Err(e.into())))?;
        Ok(Pending(vec![id]))
    }
}
