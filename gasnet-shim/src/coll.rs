//! Teams (`gex_TM_t`: the primordial team and those of `gex_TM_Split`) and the
//! collectives over them (`skifch::coll` on this library's endpoint): barrier, broadcast,
//! reductions to one and to all, with the predefined types and operators or a user
//! function.
//!
//! # Collective Operation
//! Every member of the team calls each collective, in the same order as every other
//! collective of the team. The calls here complete inside the initiating call; the C
//! API's `*NB` calls run as schedules instead (`crate::nbcoll`).

use std::sync::atomic::{AtomicU32, Ordering};

use skifch::coll::{self, DType, Kernel, Op, ProtoGroup, Reducer};
use skifch::Port;

use crate::engine::Gasnet;
use crate::{Error, Result};

/// A team: its members as job ranks, in team-rank order.
#[derive(Debug)]
pub struct Team {
    /// The collective layer's group id (the same on every member).
    pub gid: u32,
    /// Job rank of each team rank.
    pub members: Vec<u32>,
    /// This rank's team rank.
    pub me: u32,
    /// Splits of this team so far (names the next child).
    splits: AtomicU32,
    /// Non-blocking collectives started on this team so far (`crate::nbcoll`).
    nb: AtomicU32,
}

/// The group id `ProtoGroup::world` uses.
const WORLD_GID: u32 = u32::MAX;

impl Team {
    /// The primordial team of `n` ranks, seen from `me`.
    pub fn world(me: u32, n: u32) -> Team {
        Team {
            gid: WORLD_GID,
            members: (0..n).collect(),
            me,
            splits: AtomicU32::new(0),
            nb: AtomicU32::new(0),
        }
    }
    /// Members.
    pub fn size(&self) -> u32 {
        self.members.len() as u32
    }
    /// The sequence number of the next non-blocking collective (every member starts the
    /// team's collectives in the same order).
    pub(crate) fn next_nb(&self) -> u32 {
        self.nb.fetch_add(1, Ordering::Relaxed)
    }
    /// The job rank of team rank `r`, checked.
    pub fn job_rank(&self, r: u32) -> Result<u32> {
        self.members.get(r as usize).copied().ok_or(Error::BadRank {
            rank: i64::from(r),
            n: self.size(),
        })
    }
}

/// The element types of reductions and remote atomics (`GEX_DT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dt {
    /// `int32_t`.
    I32,
    /// `uint32_t`.
    U32,
    /// `int64_t`.
    I64,
    /// `uint64_t`.
    U64,
    /// `float`.
    Flt,
    /// `double`.
    Dbl,
}

impl Dt {
    /// The type of a `GEX_DT_*` value (not `GEX_DT_USER`).
    pub fn from_gex(bits: u32) -> Option<Dt> {
        [Dt::I32, Dt::U32, Dt::I64, Dt::U64, Dt::Flt, Dt::Dbl]
            .into_iter()
            .find(|d| d.gex() == bits)
    }
    /// Its `GEX_DT_*` value.
    pub fn gex(self) -> u32 {
        match self {
            Dt::I32 => 1,
            Dt::U32 => 2,
            Dt::I64 => 4,
            Dt::U64 => 8,
            Dt::Flt => 16,
            Dt::Dbl => 32,
        }
    }
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dt::I32 | Dt::U32 | Dt::Flt => 4,
            _ => 8,
        }
    }
    fn coll(self) -> DType {
        match self {
            Dt::I32 => DType::I32,
            Dt::U32 => DType::U32,
            Dt::I64 => DType::I64,
            Dt::U64 => DType::U64,
            Dt::Flt => DType::F32,
            Dt::Dbl => DType::F64,
        }
    }
    /// Floating point.
    pub fn is_float(self) -> bool {
        matches!(self, Dt::Flt | Dt::Dbl)
    }
}

/// A reduction operator of the collectives (`GEX_OP_AND`, `OR`, `XOR`, `ADD`, `MULT`,
/// `MIN`, `MAX`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedOp {
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise xor.
    Xor,
    /// Sum.
    Add,
    /// Product.
    Mult,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

/// A user reduction: `f(a, inout, count)` sets `inout[i] = a[i] op inout[i]`.
pub type UserFn<'a> = &'a dyn Fn(&[u8], &mut [u8], usize);

/// A reduction: predefined, or a user function over elements of `size` bytes.
pub enum Reduction<'a> {
    /// A predefined type and operator.
    Predefined(Dt, RedOp),
    /// `f(a, inout, count)`: `inout[i] = a[i] op inout[i]`.
    User {
        /// Bytes per element.
        size: usize,
        /// Whether the operator commutes (`GEX_OP_USER` vs `GEX_OP_USER_NC`).
        commutative: bool,
        /// The operation.
        f: UserFn<'a>,
    },
}

/// A user reduction as a [`Reducer`]: `f(a, inout, count)` over elements of `size` bytes
/// (a borrowed closure for the blocking calls, an owned one for a schedule's).
pub(crate) struct User<F> {
    pub(crate) size: usize,
    pub(crate) commutative: bool,
    pub(crate) f: F,
}

impl<F: Fn(&[u8], &mut [u8], usize)> Reducer for User<F> {
    fn elem_size(&self) -> usize {
        self.size
    }
    fn commutative(&self) -> bool {
        self.commutative
    }
    fn apply(&self, a: &[u8], inout: &mut [u8]) {
        (self.f)(a, inout, inout.len() / self.size.max(1))
    }
}

/// The predefined reduction of `op` over `dt`.
pub(crate) fn kernel(dt: Dt, op: RedOp) -> Result<Kernel> {
    if dt.is_float() && matches!(op, RedOp::And | RedOp::Or | RedOp::Xor) {
        return Err(Error::BadArgument(format!(
            "a bitwise reduction ({op:?}) on floating-point data"
        )));
    }
    let o = match op {
        RedOp::And => Op::Band,
        RedOp::Or => Op::Bor,
        RedOp::Xor => Op::Bxor,
        RedOp::Add => Op::Sum,
        RedOp::Mult => Op::Prod,
        RedOp::Min => Op::Min,
        RedOp::Max => Op::Max,
    };
    Ok(Kernel::new(dt.coll(), o)?)
}

/// A small id mixing the parent's id, the split's number and the color (never the ids
/// the collective layer keeps for the world and the endpoint barrier).
fn child_gid(parent: u32, seq: u32, color: i32) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in [parent, seq, color as u32]
        .iter()
        .flat_map(|w| w.to_le_bytes())
    {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    h % (u32::MAX - 2)
}

impl<P: Port> Gasnet<P> {
    pub(crate) fn group(
        &self,
        t: &Team,
        ep: &skifch::proto::Endpoint<P, crate::am::Ctx>,
    ) -> Result<ProtoGroup> {
        if t.gid == WORLD_GID {
            return Ok(ProtoGroup::world(ep));
        }
        Ok(ProtoGroup::new(ep, t.gid, t.members.clone())?)
    }

    /// Barrier of team `t`.
    pub fn team_barrier(&self, t: &Team) -> Result<()> {
        let mut ep = self.ep()?;
        let g = self.group(t, &ep)?;
        coll::barrier(&g.on(&mut ep)).or_else(|e| self.alive().and(Err(e.into())))
    }

    /// Broadcast of `buf` from team rank `root`.
    pub fn bcast(&self, t: &Team, root: u32, buf: &mut [u8]) -> Result<()> {
        t.job_rank(root)?;
        let mut ep = self.ep()?;
        let g = self.group(t, &ep)?;
        coll::bcast(&g.on(&mut ep), root as usize, buf).or_else(|e| self.alive().and(Err(e.into())))
    }

    /// Reduces `send` of every member into `recv`: at team rank `root`, or everywhere
    /// (`root` None).
    pub fn reduce(
        &self,
        t: &Team,
        root: Option<u32>,
        send: &[u8],
        recv: &mut [u8],
        red: &Reduction<'_>,
    ) -> Result<()> {
        if let Some(r) = root {
            t.job_rank(r)?;
        }
        let k;
        let u;
        let r: &dyn Reducer = match red {
            Reduction::Predefined(dt, op) => {
                k = kernel(*dt, *op)?;
                &k
            }
            Reduction::User {
                size,
                commutative,
                f,
            } => {
                u = User {
                    size: *size,
                    commutative: *commutative,
                    f: *f,
                };
                &u
            }
        };
        let mut ep = self.ep()?;
        let g = self.group(t, &ep)?;
        let on = g.on(&mut ep);
        let res = match root {
            Some(root) => coll::reduce(&on, root as usize, send, recv, r),
            None => coll::allreduce(&on, send, recv, r),
        };
        res.or_else(|e| self.alive().and(Err(e.into())))
    }

    /// Splits team `t` by `color` (negative: this rank joins no team), ordering each new
    /// team by `key` then by rank in `t`.
    ///
    /// # Collective Operation
    /// Every member of `t` calls it.
    pub fn split(&self, t: &Team, color: i32, key: i32) -> Result<Option<Team>> {
        let seq = t.splits.fetch_add(1, Ordering::Relaxed);
        let mut mine = [0u8; 8];
        mine[..4].copy_from_slice(&color.to_le_bytes());
        mine[4..].copy_from_slice(&key.to_le_bytes());
        let mut all = vec![0u8; 8 * t.members.len()];
        {
            let mut ep = self.ep()?;
            let g = self.group(t, &ep)?;
            coll::allgather(&g.on(&mut ep), &mine, &mut all)
                .or_else(|e| self.alive().and(Err(e.into())))?;
        }
        if color < 0 {
            return Ok(None);
        }
        let word = |i: usize, k: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&all[8 * i + 4 * k..8 * i + 4 * k + 4]);
            i32::from_le_bytes(b)
        };
        let mut m: Vec<(i32, usize)> = (0..t.members.len())
            .filter(|&i| word(i, 0) == color)
            .map(|i| (word(i, 1), i))
            .collect();
        m.sort();
        let members: Vec<u32> = m.iter().map(|&(_, i)| t.members[i]).collect();
        let me = m
            .iter()
            .position(|&(_, i)| i == t.me as usize)
            .ok_or_else(|| Error::Protocol("this rank is not in its own split".into()))?;
        Ok(Some(Team {
            gid: child_gid(t.gid, seq, color),
            members,
            me: me as u32,
            splits: AtomicU32::new(0),
            nb: AtomicU32::new(0),
        }))
    }
}
