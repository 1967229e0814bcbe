//! Reduction operations, written once for every library (MPI-3.1 §5.9.2 predefined
//! operations, §5.9.4 MINLOC/MAXLOC; OpenSHMEM 1.5 §9.9.7 reductions).
//!
//! A [`Kernel`] is a checked (element type, operation) pair; it implements [`Reducer`], the
//! interface the collective algorithms use, which user-defined (possibly non-commutative)
//! operations implement too. Buffers are byte slices in native byte order with no alignment
//! requirement (elements are read and written unaligned).

use crate::{Error, Result};

/// An element-wise reduction, as the algorithms see it.
///
/// `apply(a, inout)` computes `inout[i] = a[i] ∘ inout[i]` for every element, where `a`
/// holds the contribution of **lower** ranks (MPI's `invec`/`inoutvec` order). For a
/// non-commutative operation the algorithms combine in rank order (MPI-3.1 §5.9.1).
pub trait Reducer {
    /// Bytes per element (buffer lengths are multiples of it).
    fn elem_size(&self) -> usize;
    /// Whether `a ∘ b == b ∘ a` (lets the algorithms reorder; predefined ops are).
    fn commutative(&self) -> bool {
        true
    }
    /// `inout = a ∘ inout`, element-wise; `a.len() == inout.len()`.
    fn apply(&self, a: &[u8], inout: &mut [u8]);
}

/// The sequential reference: `inputs[0] ∘ inputs[1] ∘ …` in order (what every reducing
/// collective computes over the members' contributions). For tests and small local uses.
pub fn fold<R: Reducer + ?Sized, B: AsRef<[u8]>>(red: &R, inputs: &[B]) -> Vec<u8> {
    let Some((first, rest)) = inputs.split_first() else {
        return Vec::new();
    };
    let mut acc = first.as_ref().to_vec();
    for x in rest {
        let mut next = x.as_ref().to_vec();
        red.apply(&acc, &mut next);
        acc = next;
    }
    acc
}

/// Element types of the predefined reductions: the one element-type enum of the stack
/// (mpi-lite maps its predefined datatypes onto it, `Basic::dtype`; shmem its typed
/// reductions). Native-endian C layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// `int8_t`.
    I8,
    /// `uint8_t` (also `MPI_BYTE`, `MPI_C_BOOL`).
    U8,
    /// `int16_t`.
    I16,
    /// `uint16_t`.
    U16,
    /// `int32_t`.
    I32,
    /// `uint32_t`.
    U32,
    /// `int64_t`.
    I64,
    /// `uint64_t`.
    U64,
    /// `float`.
    F32,
    /// `double`.
    F64,
    /// `struct { float v; int i; }` (MPI_FLOAT_INT, 8 bytes).
    FloatInt,
    /// `struct { double v; int i; }` (MPI_DOUBLE_INT, 16 bytes with padding).
    DoubleInt,
    /// `struct { long v; int i; }` (MPI_LONG_INT, 16 bytes with padding).
    LongInt,
    /// `struct { int v; int i; }` (MPI_2INT, 8 bytes).
    TwoInt,
    /// `struct { short v; int i; }` (MPI_SHORT_INT, 8 bytes).
    ShortInt,
}

impl DType {
    /// Bytes per element (C layout).
    pub fn size(self) -> usize {
        use DType::*;
        match self {
            I8 | U8 => 1,
            I16 | U16 => 2,
            I32 | U32 | F32 => 4,
            I64 | U64 | F64 => 8,
            FloatInt | TwoInt | ShortInt => 8,
            DoubleInt | LongInt => 16,
        }
    }
    fn is_pair(self) -> bool {
        use DType::*;
        matches!(self, FloatInt | DoubleInt | LongInt | TwoInt | ShortInt)
    }
    fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }
}

/// The predefined operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Sum (`MPI_SUM`).
    Sum,
    /// Product (`MPI_PROD`).
    Prod,
    /// Minimum (`MPI_MIN`).
    Min,
    /// Maximum (`MPI_MAX`).
    Max,
    /// Logical and (`MPI_LAND`).
    Land,
    /// Logical or (`MPI_LOR`).
    Lor,
    /// Logical exclusive or (`MPI_LXOR`).
    Lxor,
    /// Bitwise and (`MPI_BAND`).
    Band,
    /// Bitwise or (`MPI_BOR`).
    Bor,
    /// Bitwise exclusive or (`MPI_BXOR`).
    Bxor,
    /// Minimum value and the lowest index holding it (`MPI_MINLOC`, pair types).
    MinLoc,
    /// Maximum value and the lowest index holding it (`MPI_MAXLOC`, pair types).
    MaxLoc,
}

impl Op {
    /// Every operation, for tests and tables.
    pub const ALL: [Op; 12] = [
        Op::Sum,
        Op::Prod,
        Op::Min,
        Op::Max,
        Op::Land,
        Op::Lor,
        Op::Lxor,
        Op::Band,
        Op::Bor,
        Op::Bxor,
        Op::MinLoc,
        Op::MaxLoc,
    ];
}

/// A valid (element type, operation) pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Kernel {
    dtype: DType,
    op: Op,
}

impl Kernel {
    /// Checks the combination as MPI does: arithmetic (SUM, PROD) and MIN/MAX on integers
    /// and floats; logical and bitwise ops on integers; MINLOC/MAXLOC on the pair types
    /// only. Anything else is `InvalidArgument`.
    pub fn new(dtype: DType, op: Op) -> Result<Kernel> {
        use Op::*;
        let ok = match op {
            Sum | Prod | Min | Max => !dtype.is_pair(),
            Land | Lor | Lxor | Band | Bor | Bxor => !dtype.is_pair() && !dtype.is_float(),
            MinLoc | MaxLoc => dtype.is_pair(),
        };
        if !ok {
            return Err(Error::InvalidArgument(
                format!("reduction {op:?} is not defined on {dtype:?}").into(),
            ));
        }
        Ok(Kernel { dtype, op })
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// The operation.
    pub fn op(&self) -> Op {
        self.op
    }
}

/// Element-wise loop over unaligned native-endian elements of type `$t`.
macro_rules! each {
    ($t:ty, $a:expr, $io:expr, |$x:ident, $y:ident| $e:expr) => {{
        const N: usize = std::mem::size_of::<$t>();
        for (pa, pio) in $a.chunks_exact(N).zip($io.chunks_exact_mut(N)) {
            let $x = <$t>::from_ne_bytes(pa.try_into().expect("N bytes"));
            let $y = <$t>::from_ne_bytes((&*pio).try_into().expect("N bytes"));
            pio.copy_from_slice(&($e).to_ne_bytes());
        }
    }};
}

macro_rules! int_ops {
    ($t:ty, $op:expr, $a:expr, $io:expr) => {
        match $op {
            Op::Sum => each!($t, $a, $io, |x, y| x.wrapping_add(y)),
            Op::Prod => each!($t, $a, $io, |x, y| x.wrapping_mul(y)),
            Op::Min => each!($t, $a, $io, |x, y| if x < y { x } else { y }),
            Op::Max => each!($t, $a, $io, |x, y| if x > y { x } else { y }),
            Op::Land => each!($t, $a, $io, |x, y| ((x != 0) && (y != 0)) as $t),
            Op::Lor => each!($t, $a, $io, |x, y| ((x != 0) || (y != 0)) as $t),
            Op::Lxor => each!($t, $a, $io, |x, y| ((x != 0) != (y != 0)) as $t),
            Op::Band => each!($t, $a, $io, |x, y| x & y),
            Op::Bor => each!($t, $a, $io, |x, y| x | y),
            Op::Bxor => each!($t, $a, $io, |x, y| x ^ y),
            Op::MinLoc | Op::MaxLoc => unreachable!("rejected by Kernel::new"),
        }
    };
}

macro_rules! float_ops {
    ($t:ty, $op:expr, $a:expr, $io:expr) => {
        match $op {
            Op::Sum => each!($t, $a, $io, |x, y| x + y),
            Op::Prod => each!($t, $a, $io, |x, y| x * y),
            Op::Min => each!($t, $a, $io, |x, y| if x < y { x } else { y }),
            Op::Max => each!($t, $a, $io, |x, y| if x > y { x } else { y }),
            _ => unreachable!("rejected by Kernel::new"),
        }
    };
}

/// MINLOC/MAXLOC on `struct { V v; int i; }` with the index at byte `ioff`: the better
/// value wins; on a tie, the smaller index (MPI-3.1 §5.9.4).
fn loc<V: Copy + PartialOrd>(
    a: &[u8],
    io: &mut [u8],
    size: usize,
    ioff: usize,
    max: bool,
    get: impl Fn(&[u8]) -> V,
) {
    for (pa, pio) in a.chunks_exact(size).zip(io.chunks_exact_mut(size)) {
        let (va, vb) = (get(pa), get(pio));
        let ia = i32::from_ne_bytes(pa[ioff..ioff + 4].try_into().expect("4 bytes"));
        let ib = i32::from_ne_bytes(pio[ioff..ioff + 4].try_into().expect("4 bytes"));
        let a_wins = if max { va > vb } else { va < vb };
        if a_wins || (va == vb && ia < ib) {
            pio.copy_from_slice(pa);
        }
    }
}

impl Reducer for Kernel {
    fn elem_size(&self) -> usize {
        self.dtype.size()
    }

    fn apply(&self, a: &[u8], io: &mut [u8]) {
        debug_assert_eq!(a.len(), io.len());
        let op = self.op;
        let max = op == Op::MaxLoc;
        let s = self.dtype.size();
        match self.dtype {
            DType::I8 => int_ops!(i8, op, a, io),
            DType::U8 => int_ops!(u8, op, a, io),
            DType::I16 => int_ops!(i16, op, a, io),
            DType::U16 => int_ops!(u16, op, a, io),
            DType::I32 => int_ops!(i32, op, a, io),
            DType::U32 => int_ops!(u32, op, a, io),
            DType::I64 => int_ops!(i64, op, a, io),
            DType::U64 => int_ops!(u64, op, a, io),
            DType::F32 => float_ops!(f32, op, a, io),
            DType::F64 => float_ops!(f64, op, a, io),
            DType::FloatInt => loc(a, io, s, 4, max, |b| {
                f32::from_ne_bytes(b[..4].try_into().expect("4"))
            }),
            DType::DoubleInt => loc(a, io, s, 8, max, |b| {
                f64::from_ne_bytes(b[..8].try_into().expect("8"))
            }),
            DType::LongInt => loc(a, io, s, 8, max, |b| {
                i64::from_ne_bytes(b[..8].try_into().expect("8"))
            }),
            DType::TwoInt => loc(a, io, s, 4, max, |b| {
                i32::from_ne_bytes(b[..4].try_into().expect("4"))
            }),
            DType::ShortInt => loc(a, io, s, 4, max, |b| {
                i16::from_ne_bytes(b[..2].try_into().expect("2"))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(k: Kernel, a: &[u8], b: &[u8]) -> Vec<u8> {
        let mut io = b.to_vec();
        k.apply(a, &mut io);
        io
    }

    #[test]
    fn integer_and_float_ops() {
        let a: Vec<u8> = [3i32, -4, 0, 7]
            .iter()
            .flat_map(|x| x.to_ne_bytes())
            .collect();
        let b: Vec<u8> = [5i32, 2, 6, 0]
            .iter()
            .flat_map(|x| x.to_ne_bytes())
            .collect();
        let dec = |v: Vec<u8>| -> Vec<i32> {
            v.chunks(4)
                .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
                .collect()
        };
        let k = |op| Kernel::new(DType::I32, op).unwrap();
        assert_eq!(dec(run(k(Op::Sum), &a, &b)), [8, -2, 6, 7]);
        assert_eq!(dec(run(k(Op::Prod), &a, &b)), [15, -8, 0, 0]);
        assert_eq!(dec(run(k(Op::Min), &a, &b)), [3, -4, 0, 0]);
        assert_eq!(dec(run(k(Op::Max), &a, &b)), [5, 2, 6, 7]);
        assert_eq!(dec(run(k(Op::Land), &a, &b)), [1, 1, 0, 0]);
        assert_eq!(dec(run(k(Op::Lor), &a, &b)), [1, 1, 1, 1]);
        assert_eq!(dec(run(k(Op::Lxor), &a, &b)), [0, 0, 1, 1]);
        assert_eq!(dec(run(k(Op::Band), &a, &b)), [1, 0, 0, 0]);
        assert_eq!(dec(run(k(Op::Bor), &a, &b)), [7, -2, 6, 7]);
        assert_eq!(dec(run(k(Op::Bxor), &a, &b)), [6, -2, 6, 7]);
        let f = Kernel::new(DType::F64, Op::Sum).unwrap();
        let r = run(f, &1.5f64.to_ne_bytes(), &2.25f64.to_ne_bytes());
        assert_eq!(f64::from_ne_bytes(r.try_into().unwrap()), 3.75);
    }

    #[test]
    fn loc_ops_prefer_the_smaller_index_on_ties() {
        let pair = |v: f64, i: i32| {
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&v.to_ne_bytes());
            b[8..12].copy_from_slice(&i.to_ne_bytes());
            b
        };
        let mx = Kernel::new(DType::DoubleInt, Op::MaxLoc).unwrap();
        let mn = Kernel::new(DType::DoubleInt, Op::MinLoc).unwrap();
        assert_eq!(run(mx, &pair(2.0, 5), &pair(1.0, 1)), pair(2.0, 5));
        assert_eq!(run(mx, &pair(2.0, 5), &pair(2.0, 1)), pair(2.0, 1));
        assert_eq!(run(mn, &pair(2.0, 0), &pair(2.0, 1)), pair(2.0, 0));
        assert_eq!(run(mn, &pair(3.0, 0), &pair(2.0, 1)), pair(2.0, 1));
    }

    #[test]
    fn invalid_combinations_are_refused() {
        assert!(Kernel::new(DType::F32, Op::Band).is_err());
        assert!(Kernel::new(DType::F64, Op::Land).is_err());
        assert!(Kernel::new(DType::I32, Op::MinLoc).is_err());
        assert!(Kernel::new(DType::TwoInt, Op::Sum).is_err());
        assert!(Kernel::new(DType::U8, Op::Bxor).is_ok());
    }
}
