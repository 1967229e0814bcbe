//! Teams and collectives (OpenSHMEM 1.5 §9.9–9.10): barrier, broadcast, collect,
//! fcollect, alltoall(s) and reductions over a [`Team`] (the world, a strided split, or a
//! legacy active set `(PE_start, logPE_stride, PE_size)`). The algorithms and reduction
//! kernels are those of [`skifch::coll`], run over this library's active-message endpoint
//! ([`skifch::coll::ProtoGroup`], one group id per call, see `World::group_id`); only
//! the complex sum/product, which the collective layer does not have, is a local
//! [`Reducer`]. They run the same way on both access paths.
//!
//! # Collective Operation
//! Every member of the team calls the operation with the same sizes, root and operation,
//! and in the same order with respect to other collectives on overlapping teams. Source
//! and destination are symmetric. Each call first completes this PE's outstanding puts
//! (`quiet`) and reads its source; on return this PE's destination holds the result and
//! its source may be reused (members do not wait for each other beyond what the
//! algorithm needs; [`World::barrier`] is the synchronizing call). `pSync`/`pWrk`
//! arguments of the legacy forms are accepted and not used, so they need not be
//! initialized or kept apart between calls.

use skifch::coll::{DType, GroupOn, Kernel, Op, ProtoGroup, Reducer};
use skifch::Port;

use crate::{Error, SymAddr, World};

/// An ordered set of PEs (OpenSHMEM team or active set).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Team {
    /// The members' global PE numbers, in team order.
    pub members: Vec<u32>,
}

impl Team {
    /// All PEs.
    pub fn world(n: u32) -> Team {
        Team {
            members: (0..n).collect(),
        }
    }

    /// PEs `start + k·stride` for `k` in `0..size` (strides may be negative: 1.5
    /// `shmem_team_split_strided` allows any non-zero stride when size is 1).
    pub fn strided(n: u32, start: i64, stride: i64, size: i64) -> Result<Team, Error> {
        if size < 1 || start < 0 || (stride == 0 && size > 1) {
            return Err(Error::BadArgument(format!(
                "team of start {start}, stride {stride}, size {size}"
            )));
        }
        let members = (0..size)
            .map(|k| {
                let pe = start + k * stride;
                if pe < 0 || pe >= i64::from(n) {
                    Err(Error::BadPe { pe, n })
                } else {
                    Ok(pe as u32)
                }
            })
            .collect::<Result<Vec<u32>, Error>>()?;
        Ok(Team { members })
    }

    /// A legacy active set.
    pub fn active_set(n: u32, pe_start: i32, log_stride: i32, size: i32) -> Result<Team, Error> {
        if !(0..31).contains(&log_stride) {
            return Err(Error::BadArgument(format!("logPE_stride {log_stride}")));
        }
        Team::strided(n, i64::from(pe_start), 1i64 << log_stride, i64::from(size))
    }

    /// Index of `pe` in the team.
    pub fn index_of(&self, pe: u32) -> Option<usize> {
        self.members.iter().position(|&p| p == pe)
    }

    /// Members.
    pub fn size(&self) -> usize {
        self.members.len()
    }
}

/// Reduction operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Bitwise and (integers).
    And,
    /// Bitwise or (integers).
    Or,
    /// Bitwise xor (integers).
    Xor,
    /// Minimum (integers, reals).
    Min,
    /// Maximum (integers, reals).
    Max,
    /// Sum (integers, reals, complex).
    Sum,
    /// Product (integers, reals, complex).
    Prod,
}

/// Element types of reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Num {
    /// Signed integer of this many bytes (1, 2, 4, 8).
    I(usize),
    /// Unsigned integer of this many bytes.
    U(usize),
    /// `float`.
    F32,
    /// `double`.
    F64,
    /// `float _Complex`.
    C32,
    /// `double _Complex`.
    C64,
}

impl Num {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Num::I(s) | Num::U(s) => s,
            Num::F32 => 4,
            Num::F64 | Num::C32 => 8,
            Num::C64 => 16,
        }
    }
}

/// `float _Complex` / `double _Complex` sum and product: the one reduction OpenSHMEM has
/// that [`skifch::coll::ops`] does not (the other pairs use its kernels).
struct Complex {
    half: usize,
    prod: bool,
}

impl Reducer for Complex {
    fn elem_size(&self) -> usize {
        2 * self.half
    }
    fn apply(&self, a: &[u8], io: &mut [u8]) {
        let h = self.half;
        let rd = |b: &[u8]| -> f64 {
            if h == 4 {
                f64::from(f32::from_ne_bytes(b[..4].try_into().unwrap_or_default()))
            } else {
                f64::from_ne_bytes(b[..8].try_into().unwrap_or_default())
            }
        };
        for (x, y) in a.chunks_exact(2 * h).zip(io.chunks_exact_mut(2 * h)) {
            let (ar, ai, br, bi) = (rd(&x[..h]), rd(&x[h..]), rd(&y[..h]), rd(&y[h..]));
            let (r, i) = if self.prod {
                (ar * br - ai * bi, ar * bi + ai * br)
            } else {
                (ar + br, ai + bi)
            };
            if h == 4 {
                y[..4].copy_from_slice(&(r as f32).to_ne_bytes());
                y[4..].copy_from_slice(&(i as f32).to_ne_bytes());
            } else {
                y[..8].copy_from_slice(&r.to_ne_bytes());
                y[8..].copy_from_slice(&i.to_ne_bytes());
            }
        }
    }
}

/// The reduction of `op` on `t`: a [`Kernel`] of the collective layer, or the local
/// complex sum/product.
pub fn reducer(t: Num, op: ReduceOp) -> Result<Box<dyn Reducer>, Error> {
    let bad = || Error::BadArgument(format!("reduction {op:?} is not defined on {t:?}"));
    let dt = match t {
        Num::I(1) => DType::I8,
        Num::I(2) => DType::I16,
        Num::I(4) => DType::I32,
        Num::I(8) => DType::I64,
        Num::U(1) => DType::U8,
        Num::U(2) => DType::U16,
        Num::U(4) => DType::U32,
        Num::U(8) => DType::U64,
        Num::F32 => DType::F32,
        Num::F64 => DType::F64,
        Num::C32 | Num::C64 => {
            let half = t.size() / 2;
            return match op {
                ReduceOp::Sum => Ok(Box::new(Complex { half, prod: false })),
                ReduceOp::Prod => Ok(Box::new(Complex { half, prod: true })),
                _ => Err(bad()),
            };
        }
        Num::I(_) | Num::U(_) => return Err(bad()),
    };
    let o = match op {
        ReduceOp::And => Op::Band,
        ReduceOp::Or => Op::Bor,
        ReduceOp::Xor => Op::Bxor,
        ReduceOp::Min => Op::Min,
        ReduceOp::Max => Op::Max,
        ReduceOp::Sum => Op::Sum,
        ReduceOp::Prod => Op::Prod,
    };
    Ok(Box::new(Kernel::new(dt, o).map_err(|_| bad())?))
}

impl<P: Port> World<P> {
    pub(crate) fn me_in(&self, t: &Team) -> Result<usize, Error> {
        t.index_of(self.my_pe()).ok_or_else(|| {
            Error::BadArgument(format!(
                "PE {} is not a member of the team {:?}",
                self.my_pe(),
                t.members
            ))
        })
    }

    /// Runs `f` on this call's active-message group of team `t`.
    fn with_group<R>(
        &self,
        t: &Team,
        f: impl FnOnce(&GroupOn<'_, P, crate::msg::Ctx>) -> skifch::Result<R>,
    ) -> Result<R, Error> {
        self.me_in(t)?;
        let gid = self.group_id(&t.members);
        let mut ep = self.ep();
        let g = ProtoGroup::new(&ep, gid, t.members.clone())?;
        Ok(f(&g.on(&mut ep))?)
    }

    /// Whether `flag` is true on every member of `t` (an allreduce; every member calls).
    pub fn all(&self, t: &Team, flag: bool) -> Result<bool, Error> {
        let r = reducer(Num::U(1), ReduceOp::And)?;
        let mut out = [0u8];
        self.with_group(t, |g| {
            skifch::coll::allreduce(g, &[u8::from(flag)], &mut out, &*r)
        })?;
        Ok(out[0] == 1)
    }

    /// The smallest and largest of each of `vals` over the members of `t` (every member
    /// calls with as many values): one allreduce of the values and their complements
    /// under max. The check that every member passed the same arguments to a collective
    /// whose sizes are not in its data (the symmetric allocations); every member learns
    /// the same answer, so all fail alike.
    pub fn min_max(&self, t: &Team, vals: &[u64]) -> Result<Vec<(u64, u64)>, Error> {
        let r = reducer(Num::U(8), ReduceOp::Max)?;
        let send: Vec<u8> = vals
            .iter()
            .flat_map(|&v| [v, !v])
            .flat_map(u64::to_le_bytes)
            .collect();
        let mut out = vec![0u8; send.len()];
        self.with_group(t, |g| skifch::coll::allreduce(g, &send, &mut out, &*r))?;
        let word = |c: &[u8]| u64::from_le_bytes(c.try_into().unwrap_or_default());
        Ok(out
            .chunks_exact(16)
            .map(|c| (!word(&c[8..]), word(&c[..8])))
            .collect())
    }

    fn read_vec(&self, a: SymAddr, len: usize) -> Result<Vec<u8>, Error> {
        let mut v = vec![0u8; len];
        self.read_local(a, &mut v)?;
        Ok(v)
    }

    /// Broadcast of `bytes` from `root` (team index) `src` into every member's `dst`
    /// (the root's own `dst` too when `to_root`). See the module docs.
    pub fn broadcast(
        &self,
        t: &Team,
        dst: SymAddr,
        src: SymAddr,
        bytes: usize,
        root: usize,
        to_root: bool,
    ) -> Result<(), Error> {
        let me = self.me_in(t)?;
        if root >= t.size() {
            return Err(Error::BadArgument(format!(
                "root {root} of a {}-PE team",
                t.size()
            )));
        }
        self.quiet()?;
        let mut b = if me == root {
            self.read_vec(src, bytes)?
        } else {
            vec![0u8; bytes]
        };
        self.with_group(t, |g| skifch::coll::bcast(g, root, &mut b))?;
        if me != root || to_root {
            self.write_local(dst, &b)?;
        }
        Ok(())
    }

    /// Concatenation of every member's `my_bytes` from `src`, in team order, into every
    /// member's `dst` (`collect`; `fcollect` is the case of equal sizes).
    pub fn collect(
        &self,
        t: &Team,
        dst: SymAddr,
        src: SymAddr,
        my_bytes: usize,
    ) -> Result<(), Error> {
        self.me_in(t)?;
        self.quiet()?;
        let mine = self.read_vec(src, my_bytes)?;
        let n = t.size();
        let out = self.with_group(t, |g| {
            let mut lens = vec![0u8; 8 * n];
            skifch::coll::allgather(g, &(my_bytes as u64).to_le_bytes(), &mut lens)?;
            let counts: Vec<usize> = lens
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()) as usize)
                .collect();
            let displs: Vec<usize> = counts
                .iter()
                .scan(0, |at, &c| {
                    let d = *at;
                    *at += c;
                    Some(d)
                })
                .collect();
            let mut out = vec![0u8; counts.iter().sum()];
            skifch::coll::allgatherv(g, &mine, &mut out, &counts, &displs)?;
            Ok(out)
        })?;
        self.write_local(dst, &out)
    }

    /// Block `j` of every member's `src` goes to block `i` of member `j`'s `dst`, where
    /// `i` is this PE's team index (`alltoall`); blocks of `bytes`.
    pub fn alltoall(
        &self,
        t: &Team,
        dst: SymAddr,
        src: SymAddr,
        bytes: usize,
    ) -> Result<(), Error> {
        self.me_in(t)?;
        self.quiet()?;
        let n = t.size();
        let send = self.read_vec(src, n * bytes)?;
        let mut recv = vec![0u8; n * bytes];
        self.with_group(t, |g| skifch::coll::alltoall(g, &send, &mut recv))?;
        self.write_local(dst, &recv)
    }

    /// Strided `alltoall` (`alltoalls`), in elements of `elem` bytes: element `k` of the
    /// block for member `j` is at `src + (j·nelems + k)·sst·elem` and lands at
    /// `dst + (i·nelems + k)·dst_stride·elem` of member `j`.
    #[allow(clippy::too_many_arguments)] // mirrors the OpenSHMEM call
    pub fn alltoalls(
        &self,
        t: &Team,
        dst: SymAddr,
        src: SymAddr,
        dst_stride: usize,
        sst: usize,
        nelems: usize,
        elem: usize,
    ) -> Result<(), Error> {
        self.me_in(t)?;
        self.quiet()?;
        let n = t.size();
        let mut send = vec![0u8; n * nelems * elem];
        for (k, e) in send.chunks_exact_mut(elem).enumerate() {
            self.read_local(src.offset(k * sst * elem), e)?;
        }
        let mut recv = vec![0u8; n * nelems * elem];
        self.with_group(t, |g| skifch::coll::alltoall(g, &send, &mut recv))?;
        for (k, e) in recv.chunks_exact(elem).enumerate() {
            self.write_local(dst.offset(k * dst_stride * elem), e)?;
        }
        Ok(())
    }

    /// `dst[k] = op over members of src[k]` for `k < nelems`, on every member (`dst` and
    /// `src` may be the same object): [`skifch::coll::allreduce`].
    pub fn reduce(
        &self,
        t: &Team,
        dst: SymAddr,
        src: SymAddr,
        nelems: usize,
        ty: Num,
        op: ReduceOp,
    ) -> Result<(), Error> {
        self.reduce_with(t, dst, src, nelems, &*reducer(ty, op)?)
    }

    /// [`World::reduce`] with any reduction kernel `r` (the C ABI's `long double`
    /// operators, which the C compiler provides).
    pub fn reduce_with(
        &self,
        t: &Team,
        dst: SymAddr,
        src: SymAddr,
        nelems: usize,
        r: &dyn Reducer,
    ) -> Result<(), Error> {
        self.me_in(t)?;
        self.quiet()?;
        let send = self.read_vec(src, nelems * r.elem_size())?;
        let mut recv = vec![0u8; send.len()];
        self.with_group(t, |g| skifch::coll::allreduce(g, &send, &mut recv, r))?;
        self.write_local(dst, &recv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(t: Num, op: ReduceOp, a: &[u8], b: &[u8]) -> Vec<u8> {
        let mut io = b.to_vec();
        reducer(t, op).unwrap().apply(a, &mut io);
        io
    }

    #[test]
    fn reducers() {
        let r = run(
            Num::I(4),
            ReduceOp::Max,
            &(-5i32).to_ne_bytes(),
            &3i32.to_ne_bytes(),
        );
        assert_eq!(r, 3i32.to_ne_bytes());
        assert_eq!(run(Num::U(1), ReduceOp::Max, &[200], &[100]), [200]);
        assert_eq!(run(Num::U(1), ReduceOp::Xor, &[6], &[3]), [5]);
        let r = run(
            Num::F64,
            ReduceOp::Prod,
            &1.5f64.to_ne_bytes(),
            &2.0f64.to_ne_bytes(),
        );
        assert_eq!(r, 3.0f64.to_ne_bytes());
        assert!(reducer(Num::F32, ReduceOp::Xor).is_err());
        assert!(reducer(Num::C64, ReduceOp::Max).is_err());
        let c = [1.0f32.to_ne_bytes(), 2.0f32.to_ne_bytes()].concat();
        let d = [3.0f32.to_ne_bytes(), 4.0f32.to_ne_bytes()].concat();
        let r = run(Num::C32, ReduceOp::Prod, &c, &d);
        assert_eq!(r, [(-5.0f32).to_ne_bytes(), 10.0f32.to_ne_bytes()].concat());
    }
}
