//! The predefined datatypes (MPI-3.1 §3.2.2, §4.1.11 pair types, §5.9.4) with their C
//! layout on x86-64/aarch64 Linux.

use skifch::coll::DType;

use super::Block;

/// The predefined element types, which reductions understand. Pair types are the
/// `{value; int}` structs of `MPI_MINLOC`/`MPI_MAXLOC` (MPI-3.1 §5.9.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Basic {
    Char,
    SignedChar,
    UnsignedChar,
    Byte,
    Packed,
    WChar,
    Short,
    UnsignedShort,
    Int,
    Unsigned,
    Long,
    UnsignedLong,
    LongLong,
    UnsignedLongLong,
    Float,
    Double,
    LongDouble,
    CBool,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    Aint,
    Offset,
    Count,
    CFloatComplex,
    CDoubleComplex,
    FloatInt,
    DoubleInt,
    LongInt,
    TwoInt,
    ShortInt,
    LongDoubleInt,
    CLongDoubleComplex,
    CxxBool,
    CxxFloatComplex,
    CxxDoubleComplex,
    CxxLongDoubleComplex,
    // The Fortran named types (MPI-3.1 §3.2.2, §17.2.5: C programs may name them too),
    // as gfortran lays them out on x86-64/aarch64 Linux: see [`Basic::c_twin`].
    Integer,
    Real,
    DoublePrecision,
    Complex,
    DoubleComplex,
    Logical,
    Character,
    Integer1,
    Integer2,
    Integer4,
    Integer8,
    Real4,
    Real8,
    Complex8,
    Complex16,
    TwoInteger,
    TwoReal,
    TwoDoublePrecision,
}

impl Basic {
    /// The two predefined types of a pair type (`MPI_DOUBLE_INT`…, §5.9.4), `None` for
    /// the others: a pair is two elements for `MPI_Get_elements` and external32.
    pub fn pair(self) -> Option<(Basic, Basic)> {
        use Basic::*;
        Some(match self {
            FloatInt => (Float, Int),
            DoubleInt => (Double, Int),
            LongInt => (Long, Int),
            TwoInt => (Int, Int),
            ShortInt => (Short, Int),
            LongDoubleInt => (LongDouble, Int),
            TwoInteger => (Integer, Integer),
            TwoReal => (Real, Real),
            TwoDoublePrecision => (DoublePrecision, DoublePrecision),
            _ => return None,
        })
    }
    /// All predefined types, in the order of their C handles (`mpi.h`, 1-based).
    pub const ALL: [Basic; 60] = [
        Basic::Char,
        Basic::SignedChar,
        Basic::UnsignedChar,
        Basic::Byte,
        Basic::Packed,
        Basic::WChar,
        Basic::Short,
        Basic::UnsignedShort,
        Basic::Int,
        Basic::Unsigned,
        Basic::Long,
        Basic::UnsignedLong,
        Basic::LongLong,
        Basic::UnsignedLongLong,
        Basic::Float,
        Basic::Double,
        Basic::LongDouble,
        Basic::CBool,
        Basic::Int8,
        Basic::Int16,
        Basic::Int32,
        Basic::Int64,
        Basic::Uint8,
        Basic::Uint16,
        Basic::Uint32,
        Basic::Uint64,
        Basic::Aint,
        Basic::Offset,
        Basic::Count,
        Basic::CFloatComplex,
        Basic::CDoubleComplex,
        Basic::FloatInt,
        Basic::DoubleInt,
        Basic::LongInt,
        Basic::TwoInt,
        Basic::ShortInt,
        Basic::LongDoubleInt,
        Basic::CLongDoubleComplex,
        Basic::CxxBool,
        Basic::CxxFloatComplex,
        Basic::CxxDoubleComplex,
        Basic::CxxLongDoubleComplex,
        Basic::Integer,
        Basic::Real,
        Basic::DoublePrecision,
        Basic::Complex,
        Basic::DoubleComplex,
        Basic::Logical,
        Basic::Character,
        Basic::Integer1,
        Basic::Integer2,
        Basic::Integer4,
        Basic::Integer8,
        Basic::Real4,
        Basic::Real8,
        Basic::Complex8,
        Basic::Complex16,
        Basic::TwoInteger,
        Basic::TwoReal,
        Basic::TwoDoublePrecision,
    ];

    /// The C type of the same layout and arithmetic as a Fortran type (`INTEGER` is a C
    /// `int`, `DOUBLE COMPLEX` a `double _Complex`, `LOGICAL` a 4-byte integer whose
    /// logical operations treat non-zero as true…); `None` for the C types and for
    /// `MPI_2REAL`/`MPI_2DOUBLE_PRECISION` (pairs of two reals, no C twin).
    pub const fn c_twin(self) -> Option<Basic> {
        use Basic::*;
        Some(match self {
            Integer | Integer4 | Logical => Int,
            Real | Real4 => Float,
            DoublePrecision | Real8 => Double,
            Complex | Complex8 => CFloatComplex,
            DoubleComplex | Complex16 => CDoubleComplex,
            Character => Char,
            Integer1 => Int8,
            Integer2 => Int16,
            Integer8 => Int64,
            TwoInteger => TwoInt,
            _ => return None,
        })
    }

    /// The MPI name (`MPI_INT`, …), which `MPI_Type_get_name` returns.
    pub fn name(self) -> &'static str {
        use Basic::*;
        match self {
            Char => "MPI_CHAR",
            SignedChar => "MPI_SIGNED_CHAR",
            UnsignedChar => "MPI_UNSIGNED_CHAR",
            Byte => "MPI_BYTE",
            Packed => "MPI_PACKED",
            WChar => "MPI_WCHAR",
            Short => "MPI_SHORT",
            UnsignedShort => "MPI_UNSIGNED_SHORT",
            Int => "MPI_INT",
            Unsigned => "MPI_UNSIGNED",
            Long => "MPI_LONG",
            UnsignedLong => "MPI_UNSIGNED_LONG",
            // The names MPICH gives (MPI_LONG_LONG and MPI_C_FLOAT_COMPLEX are synonyms).
            LongLong => "MPI_LONG_LONG_INT",
            UnsignedLongLong => "MPI_UNSIGNED_LONG_LONG",
            Float => "MPI_FLOAT",
            Double => "MPI_DOUBLE",
            LongDouble => "MPI_LONG_DOUBLE",
            CBool => "MPI_C_BOOL",
            Int8 => "MPI_INT8_T",
            Int16 => "MPI_INT16_T",
            Int32 => "MPI_INT32_T",
            Int64 => "MPI_INT64_T",
            Uint8 => "MPI_UINT8_T",
            Uint16 => "MPI_UINT16_T",
            Uint32 => "MPI_UINT32_T",
            Uint64 => "MPI_UINT64_T",
            Aint => "MPI_AINT",
            Offset => "MPI_OFFSET",
            Count => "MPI_COUNT",
            CFloatComplex => "MPI_C_COMPLEX",
            CDoubleComplex => "MPI_C_DOUBLE_COMPLEX",
            FloatInt => "MPI_FLOAT_INT",
            DoubleInt => "MPI_DOUBLE_INT",
            LongInt => "MPI_LONG_INT",
            TwoInt => "MPI_2INT",
            ShortInt => "MPI_SHORT_INT",
            LongDoubleInt => "MPI_LONG_DOUBLE_INT",
            CLongDoubleComplex => "MPI_C_LONG_DOUBLE_COMPLEX",
            CxxBool => "MPI_CXX_BOOL",
            CxxFloatComplex => "MPI_CXX_FLOAT_COMPLEX",
            CxxDoubleComplex => "MPI_CXX_DOUBLE_COMPLEX",
            CxxLongDoubleComplex => "MPI_CXX_LONG_DOUBLE_COMPLEX",
            Integer => "MPI_INTEGER",
            Real => "MPI_REAL",
            DoublePrecision => "MPI_DOUBLE_PRECISION",
            Complex => "MPI_COMPLEX",
            DoubleComplex => "MPI_DOUBLE_COMPLEX",
            Logical => "MPI_LOGICAL",
            Character => "MPI_CHARACTER",
            Integer1 => "MPI_INTEGER1",
            Integer2 => "MPI_INTEGER2",
            Integer4 => "MPI_INTEGER4",
            Integer8 => "MPI_INTEGER8",
            Real4 => "MPI_REAL4",
            Real8 => "MPI_REAL8",
            Complex8 => "MPI_COMPLEX8",
            Complex16 => "MPI_COMPLEX16",
            TwoInteger => "MPI_2INTEGER",
            TwoReal => "MPI_2REAL",
            TwoDoublePrecision => "MPI_2DOUBLE_PRECISION",
        }
    }

    /// The element type the predefined reductions see in it — `skifch::coll::DType`, the
    /// one element-type enum of the stack (LP64 Linux: `long` is 64-bit, `wchar_t` 32-bit
    /// signed; `MPI_C_BOOL` and `MPI_BYTE` are 8-bit unsigned, MPI-3.1 §5.9.2). `None`:
    /// no predefined reduction applies (packed data, long double, the complex types).
    pub const fn dtype(self) -> Option<DType> {
        use Basic::*;
        if let Some(c) = self.c_twin() {
            return c.dtype();
        }
        Some(match self {
            Char | SignedChar | Int8 => DType::I8,
            UnsignedChar | Uint8 | CBool | CxxBool | Byte => DType::U8,
            Short | Int16 => DType::I16,
            UnsignedShort | Uint16 => DType::U16,
            Int | Int32 | WChar => DType::I32,
            Unsigned | Uint32 => DType::U32,
            Long | LongLong | Int64 | Aint | Offset | Count => DType::I64,
            UnsignedLong | UnsignedLongLong | Uint64 => DType::U64,
            Float => DType::F32,
            Double => DType::F64,
            FloatInt => DType::FloatInt,
            DoubleInt => DType::DoubleInt,
            LongInt => DType::LongInt,
            TwoInt => DType::TwoInt,
            ShortInt => DType::ShortInt,
            CFloatComplex | CDoubleComplex | CLongDoubleComplex | CxxFloatComplex
            | CxxDoubleComplex | CxxLongDoubleComplex | Packed | LongDouble | LongDoubleInt
            | TwoReal | TwoDoublePrecision => return None,
            _ => return None,
        })
    }

    /// Bytes of one element when it is one dense run (size = extent), as the C layout on
    /// x86-64/aarch64 Linux has it; `None` for the pair types with padding. Constant: the
    /// C ABI's per-message path sizes buffers with it.
    pub const fn dense_size(self) -> Option<usize> {
        use Basic::*;
        if let Some(c) = self.c_twin() {
            return c.dense_size();
        }
        match self {
            Char | SignedChar | UnsignedChar | Byte | Packed | CBool | CxxBool | Int8 | Uint8 => {
                Some(1)
            }
            Short | UnsignedShort | Int16 | Uint16 => Some(2),
            Int | Unsigned | WChar | Int32 | Uint32 | Float => Some(4),
            Long | UnsignedLong | LongLong | UnsignedLongLong | Int64 | Uint64 | Double | Aint
            | Offset | Count | CFloatComplex | CxxFloatComplex => Some(8),
            LongDouble | CDoubleComplex | CxxDoubleComplex => Some(16),
            CLongDoubleComplex | CxxLongDoubleComplex => Some(32),
            FloatInt | TwoInt | TwoReal => Some(8),
            TwoDoublePrecision => Some(16),
            DoubleInt | LongInt | ShortInt | LongDoubleInt => None,
            _ => None,
        }
    }

    /// Alignment of the C type (the `alignof` of x86-64/aarch64 Linux): a struct's extent
    /// is padded to the largest of its members' (MPI-3.1 §4.1.6).
    pub const fn align(self) -> usize {
        use Basic::*;
        if let Some(c) = self.c_twin() {
            return c.align();
        }
        match self {
            LongDouble | LongDoubleInt | CLongDoubleComplex | CxxLongDoubleComplex => 16,
            DoubleInt | LongInt => 8,
            ShortInt | FloatInt | TwoInt | TwoReal => 4,
            TwoDoublePrecision => 8,
            CFloatComplex | CxxFloatComplex => 4,
            CDoubleComplex | CxxDoubleComplex => 8,
            other => match other.dense_size() {
                Some(n) => n,
                None => 1,
            },
        }
    }

    /// Bytes of data in one element (its size without the padding of the pair types).
    pub const fn packed_size(self) -> usize {
        use Basic::*;
        match self {
            DoubleInt | LongInt => 12,
            ShortInt => 6,
            LongDoubleInt => 20,
            dense => match dense.dense_size() {
                Some(n) => n,
                None => 0,
            },
        }
    }

    /// (blocks of one element, extent): the C layout on x86-64/aarch64 Linux.
    pub(super) fn layout(self) -> (Vec<Block>, usize) {
        use Basic::*;
        match self {
            DoubleInt | LongInt => (vec![Block { disp: 0, len: 12 }], 16),
            ShortInt => (
                vec![Block { disp: 0, len: 2 }, Block { disp: 4, len: 4 }],
                8,
            ),
            LongDoubleInt => (vec![Block { disp: 0, len: 20 }], 32),
            dense => {
                let n = dense
                    .dense_size()
                    .expect("the other types are one dense run");
                (vec![Block { disp: 0, len: n }], n)
            }
        }
    }
}
