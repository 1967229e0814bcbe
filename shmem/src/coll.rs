//! Teams and collectives (OpenSHMEM 1.5 §9.9–9.10): barrier, broadcast, collect,
//! fcollect, alltoall(s) and reductions over a [`Team`] (the world, a strided split, or a
//! legacy active set `(PE_start, logPE_stride, PE_size)`), built on the one-sided
//! operations of [`World`], so they run on both access paths.
//!
//! # Collective Operation
//! Every member of the team calls the operation with the same sizes, root and operation,
//! and in the same order with respect to other collectives on overlapping teams. Source
//! and destination are symmetric. Each call starts and ends with a team barrier: on
//! return this PE's destination holds the result and every member has finished reading
//! this PE's source, so both may be reused. `pSync`/`pWrk` arguments of the legacy forms
//! are accepted and not used (the barrier needs no per-call state: see
//! [`World::barrier`]).

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

fn rd(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(a)
}

fn sext(v: u64, s: usize) -> i64 {
    let sh = 64 - 8 * s as u32;
    ((v << sh) as i64) >> sh
}

/// `acc = acc op x` elementwise, for element type `t`.
pub fn combine(t: Num, op: ReduceOp, acc: &mut [u8], x: &[u8]) -> Result<(), Error> {
    use ReduceOp::*;
    let s = t.size();
    let bad = || Error::BadArgument(format!("reduction {op:?} on {t:?}"));
    for (a, b) in acc.chunks_exact_mut(s).zip(x.chunks_exact(s)) {
        match t {
            Num::I(_) | Num::U(_) => {
                let (u, v) = (rd(a), rd(b));
                let signed = matches!(t, Num::I(_));
                let r = match op {
                    And => u & v,
                    Or => u | v,
                    Xor => u ^ v,
                    Sum => u.wrapping_add(v),
                    Prod => u.wrapping_mul(v),
                    Min | Max => {
                        let less = if signed {
                            sext(u, s) < sext(v, s)
                        } else {
                            u < v
                        };
                        if less == (op == Min) {
                            u
                        } else {
                            v
                        }
                    }
                };
                a.copy_from_slice(&r.to_le_bytes()[..s]);
            }
            Num::F32 | Num::F64 => {
                let f = |b: &[u8]| {
                    if s == 4 {
                        f64::from(f32::from_bits(rd(b) as u32))
                    } else {
                        f64::from_bits(rd(b))
                    }
                };
                let (u, v) = (f(a), f(b));
                let r = match op {
                    Sum => u + v,
                    Prod => u * v,
                    Min => u.min(v),
                    Max => u.max(v),
                    _ => return Err(bad()),
                };
                if s == 4 {
                    a.copy_from_slice(&(r as f32).to_le_bytes());
                } else {
                    a.copy_from_slice(&r.to_le_bytes());
                }
            }
            Num::C32 | Num::C64 => {
                let h = s / 2;
                let f = |b: &[u8]| {
                    if h == 4 {
                        f64::from(f32::from_bits(rd(b) as u32))
                    } else {
                        f64::from_bits(rd(b))
                    }
                };
                let (ar, ai, br, bi) = (f(&a[..h]), f(&a[h..]), f(&b[..h]), f(&b[h..]));
                let (r, i) = match op {
                    Sum => (ar + br, ai + bi),
                    Prod => (ar * br - ai * bi, ar * bi + ai * br),
                    _ => return Err(bad()),
                };
                if h == 4 {
                    a[..4].copy_from_slice(&(r as f32).to_le_bytes());
                    a[4..].copy_from_slice(&(i as f32).to_le_bytes());
                } else {
                    a[..8].copy_from_slice(&r.to_le_bytes());
                    a[8..].copy_from_slice(&i.to_le_bytes());
                }
            }
        }
    }
    Ok(())
}

impl<P: Port> World<P> {
    fn me_in(&self, t: &Team) -> Result<usize, Error> {
        t.index_of(self.my_pe()).ok_or_else(|| {
            Error::BadArgument(format!(
                "PE {} is not a member of the team {:?}",
                self.my_pe(),
                t.members
            ))
        })
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
        let Some(&rpe) = t.members.get(root) else {
            return Err(Error::BadArgument(format!(
                "root {root} of a {}-PE team",
                t.size()
            )));
        };
        self.barrier(&t.members)?;
        if me != root || to_root {
            let mut b = vec![0u8; bytes];
            self.get(rpe, src, &mut b)?;
            self.write_local(dst, &b)?;
        }
        self.barrier(&t.members)
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
        let s = self.scratch();
        self.write_local(s, &(my_bytes as u64).to_le_bytes())?;
        self.barrier(&t.members)?;
        let mut out = Vec::new();
        for &pe in &t.members {
            let mut c = [0u8; 8];
            self.get(pe, s, &mut c)?;
            let n = u64::from_le_bytes(c) as usize;
            let at = out.len();
            out.resize(at + n, 0);
            self.get(pe, src, &mut out[at..])?;
        }
        self.write_local(dst, &out)?;
        self.barrier(&t.members)
    }

    /// Block `j` (of `bytes` each) of every member's `src` goes to block `i` of member
    /// `j`'s `dst`, where `i` is this PE's team index (`alltoall`). With strides (in
    /// elements of `elem` bytes) this is `alltoalls`: element `k` of the block for member
    /// `j` is at `src + (j·n + k)·sst·elem` and lands at `dst + (i·n + k)·dst_stride·elem`.
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
        let me = self.me_in(t)?;
        self.barrier(&t.members)?;
        let mut e = vec![0u8; elem];
        for (j, &pe) in t.members.iter().enumerate() {
            for k in 0..nelems {
                self.get(pe, src.offset((me * nelems + k) * sst * elem), &mut e)?;
                self.write_local(dst.offset((j * nelems + k) * dst_stride * elem), &e)?;
            }
        }
        self.barrier(&t.members)
    }

    /// Contiguous `alltoall` (see [`World::alltoalls`]) of `bytes` per member.
    pub fn alltoall(
        &self,
        t: &Team,
        dst: SymAddr,
        src: SymAddr,
        bytes: usize,
    ) -> Result<(), Error> {
        let me = self.me_in(t)?;
        self.barrier(&t.members)?;
        let mut b = vec![0u8; bytes];
        for (j, &pe) in t.members.iter().enumerate() {
            self.get(pe, src.offset(me * bytes), &mut b)?;
            self.write_local(dst.offset(j * bytes), &b)?;
        }
        self.barrier(&t.members)
    }

    /// `dst[k] = op over members of src[k]` for `k < nelems`, on every member (`dst` and
    /// `src` may be the same object).
    pub fn reduce(
        &self,
        t: &Team,
        dst: SymAddr,
        src: SymAddr,
        nelems: usize,
        ty: Num,
        op: ReduceOp,
    ) -> Result<(), Error> {
        self.me_in(t)?;
        let bytes = nelems * ty.size();
        // Validate the operator/type pair before any PE waits on another.
        combine(ty, op, &mut vec![0u8; ty.size()], &vec![0u8; ty.size()])?;
        self.barrier(&t.members)?;
        let mut acc = vec![0u8; bytes];
        let mut x = vec![0u8; bytes];
        for (j, &pe) in t.members.iter().enumerate() {
            if j == 0 {
                self.get(pe, src, &mut acc)?;
            } else {
                self.get(pe, src, &mut x)?;
                combine(ty, op, &mut acc, &x)?;
            }
        }
        // Everyone has read every source before anyone overwrites (dst may alias src).
        self.barrier(&t.members)?;
        self.write_local(dst, &acc)?;
        self.barrier(&t.members)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combine_ops() {
        let mut a = (-5i32).to_le_bytes().to_vec();
        combine(Num::I(4), ReduceOp::Max, &mut a, &3i32.to_le_bytes()).unwrap();
        assert_eq!(a, 3i32.to_le_bytes());
        combine(Num::I(4), ReduceOp::Min, &mut a, &(-7i32).to_le_bytes()).unwrap();
        assert_eq!(a, (-7i32).to_le_bytes());
        let mut u = 200u8.to_le_bytes().to_vec();
        combine(Num::U(1), ReduceOp::Max, &mut u, &100u8.to_le_bytes()).unwrap();
        assert_eq!(u, [200]);
        let mut f = 1.5f64.to_le_bytes().to_vec();
        combine(Num::F64, ReduceOp::Prod, &mut f, &2.0f64.to_le_bytes()).unwrap();
        assert_eq!(f, 3.0f64.to_le_bytes());
        assert!(combine(Num::F32, ReduceOp::Xor, &mut [0; 4], &[0; 4]).is_err());
        let mut c = [1.0f32.to_le_bytes(), 2.0f32.to_le_bytes()].concat();
        let d = [3.0f32.to_le_bytes(), 4.0f32.to_le_bytes()].concat();
        combine(Num::C32, ReduceOp::Prod, &mut c, &d).unwrap();
        assert_eq!(c, [(-5.0f32).to_le_bytes(), 10.0f32.to_le_bytes()].concat());
    }
}
