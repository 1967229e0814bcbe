//! Datatypes (MPI-3.1 chapter 4): the predefined C types, the derived-type constructors
//! and the flattened type map that pack/unpack walk.
//!
//! A committed type is a list of contiguous byte blocks of one element (adjacent blocks
//! merged) plus its extent; `count` elements repeat it every extent. A type whose blocks are
//! one run as long as its extent is *contiguous*: messages of it are sent straight from and
//! received straight into the user's memory, with no intermediate copy
//! ([`Datatype::contiguous_span`]).

use std::sync::Arc;

use skifch::coll::DType;

use crate::error::{Error, Result};

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
}

impl Basic {
    /// All predefined types, in the order of their C handles (`mpi.h`, 1-based).
    pub const ALL: [Basic; 37] = [
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
    ];

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
            LongLong => "MPI_LONG_LONG",
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
            CFloatComplex => "MPI_C_FLOAT_COMPLEX",
            CDoubleComplex => "MPI_C_DOUBLE_COMPLEX",
            FloatInt => "MPI_FLOAT_INT",
            DoubleInt => "MPI_DOUBLE_INT",
            LongInt => "MPI_LONG_INT",
            TwoInt => "MPI_2INT",
            ShortInt => "MPI_SHORT_INT",
            LongDoubleInt => "MPI_LONG_DOUBLE_INT",
        }
    }

    /// The element type the predefined reductions see in it — `skifch::coll::DType`, the
    /// one element-type enum of the stack (LP64 Linux: `long` is 64-bit, `wchar_t` 32-bit
    /// signed; `MPI_C_BOOL` and `MPI_BYTE` are 8-bit unsigned, MPI-3.1 §5.9.2). `None`:
    /// no predefined reduction applies (packed data, long double, the complex types).
    pub fn dtype(self) -> Option<DType> {
        use Basic::*;
        Some(match self {
            Char | SignedChar | Int8 => DType::I8,
            UnsignedChar | Uint8 | CBool | Byte => DType::U8,
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
            CFloatComplex | CDoubleComplex | Packed | LongDouble | LongDoubleInt => return None,
        })
    }

    /// Bytes of one element when it is one dense run (size = extent), as the C layout on
    /// x86-64/aarch64 Linux has it; `None` for the pair types with padding. Constant: the
    /// C ABI's per-message path sizes buffers with it.
    pub const fn dense_size(self) -> Option<usize> {
        use Basic::*;
        match self {
            Char | SignedChar | UnsignedChar | Byte | Packed | CBool | Int8 | Uint8 => Some(1),
            Short | UnsignedShort | Int16 | Uint16 => Some(2),
            Int | Unsigned | WChar | Int32 | Uint32 | Float => Some(4),
            Long | UnsignedLong | LongLong | UnsignedLongLong | Int64 | Uint64 | Double | Aint
            | Offset | Count | CFloatComplex => Some(8),
            LongDouble | CDoubleComplex => Some(16),
            FloatInt | TwoInt => Some(8),
            DoubleInt | LongInt | ShortInt | LongDoubleInt => None,
        }
    }

    /// (blocks of one element, extent): the C layout on x86-64/aarch64 Linux.
    fn layout(self) -> (Vec<Block>, usize) {
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

/// One contiguous run of bytes of an element: `len` bytes at `disp` from its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Byte displacement from the element's base address (may be negative).
    pub disp: isize,
    /// Bytes.
    pub len: usize,
}

#[derive(Debug)]
struct TypeInfo {
    /// Data bytes of one element (`MPI_Type_size`).
    size: usize,
    lb: isize,
    ub: isize,
    true_lb: isize,
    true_ub: isize,
    /// Non-empty blocks of one element, in type-map order, adjacent ones merged.
    blocks: Vec<Block>,
    /// Packed offset of each block (prefix sums of `blocks[..].len`).
    starts: Vec<usize>,
    /// `Some((b, n))` when one element is `n` elements of predefined type `b` (what
    /// reductions need).
    homog: Option<(Basic, usize)>,
    predefined: Option<Basic>,
    committed: bool,
    name: String,
}

/// A datatype: cheap to clone (shared, immutable once built).
///
/// ```
/// use mpi_lite::datatype::{Basic, Datatype};
/// let int = Datatype::basic(Basic::Int);
/// // every other int of 3 blocks of 2: MPI_Type_vector(3, 2, 4, MPI_INT)
/// let v = Datatype::vector(3, 2, 4, &int).unwrap().commit();
/// assert_eq!((v.size(), v.extent()), (24, 40));
/// assert!(v.contiguous_span(1).is_none());
/// let c = Datatype::contiguous(5, &int).unwrap();
/// assert_eq!(c.contiguous_span(2), Some((0, 40)));
/// ```
#[derive(Clone, Debug)]
pub struct Datatype(Arc<TypeInfo>);

fn span_err(what: &str) -> Error {
    Error::Type(format!("{what}: the type's extent or size overflows"))
}

impl Datatype {
    /// The predefined type `b` (committed). Built once per process and shared: this is
    /// on every typed call's path.
    pub fn basic(b: Basic) -> Self {
        Self::basic_ref(b).clone()
    }

    /// The predefined type `b`, borrowed from the process-wide table.
    pub fn basic_ref(b: Basic) -> &'static Datatype {
        let i = Basic::ALL
            .iter()
            .position(|&x| x == b)
            .expect("every Basic is in ALL");
        &Self::basic_table()[i]
    }

    /// The predefined type at index `i` of [`Basic::ALL`] (its C handle − 1), borrowed
    /// from the process-wide table: no reference count to bump on the per-call path.
    pub fn basic_at(i: usize) -> Option<&'static Datatype> {
        Self::basic_table().get(i)
    }

    fn basic_table() -> &'static [Datatype] {
        static TABLE: std::sync::OnceLock<Vec<Datatype>> = std::sync::OnceLock::new();
        TABLE.get_or_init(|| Basic::ALL.iter().map(|&b| Self::build_basic(b)).collect())
    }

    fn build_basic(b: Basic) -> Self {
        let (blocks, extent) = b.layout();
        let mut t = Self::from_blocks(blocks, 0, extent as isize, Some((b, 1)));
        let info = Arc::get_mut(&mut t.0).expect("fresh");
        info.predefined = Some(b);
        info.committed = true;
        info.name = b.name().to_string();
        t
    }

    fn from_blocks(raw: Vec<Block>, lb: isize, ub: isize, homog: Option<(Basic, usize)>) -> Self {
        let mut blocks: Vec<Block> = Vec::with_capacity(raw.len());
        for b in raw.into_iter().filter(|b| b.len > 0) {
            match blocks.last_mut() {
                Some(last) if last.disp + last.len as isize == b.disp => last.len += b.len,
                _ => blocks.push(b),
            }
        }
        let mut starts = Vec::with_capacity(blocks.len());
        let mut size = 0usize;
        for b in &blocks {
            starts.push(size);
            size += b.len;
        }
        let true_lb = blocks.iter().map(|b| b.disp).min().unwrap_or(0);
        let true_ub = blocks
            .iter()
            .map(|b| b.disp + b.len as isize)
            .max()
            .unwrap_or(0);
        Datatype(Arc::new(TypeInfo {
            size,
            lb,
            ub,
            true_lb,
            true_ub,
            blocks,
            starts,
            homog,
            predefined: None,
            committed: false,
            name: String::new(),
        }))
    }

    /// The predefined type this is, if any.
    pub fn predefined(&self) -> Option<Basic> {
        self.0.predefined
    }
    /// `Some((b, n))`: one element is `n` values of predefined `b` (reductions need this).
    pub fn homogeneous(&self) -> Option<(Basic, usize)> {
        self.0.homog
    }
    /// Bytes of data in one element (`MPI_Type_size`).
    pub fn size(&self) -> usize {
        self.0.size
    }
    /// Lower bound (`MPI_Type_get_extent`).
    pub fn lb(&self) -> isize {
        self.0.lb
    }
    /// Extent: distance between consecutive elements (`MPI_Type_get_extent`).
    pub fn extent(&self) -> isize {
        self.0.ub - self.0.lb
    }
    /// True lower bound and extent (`MPI_Type_get_true_extent`).
    pub fn true_extent(&self) -> (isize, isize) {
        (self.0.true_lb, self.0.true_ub - self.0.true_lb)
    }
    /// `true` once committed (predefined types always are).
    pub fn is_committed(&self) -> bool {
        self.0.committed
    }
    /// The blocks of one element.
    pub fn blocks(&self) -> &[Block] {
        &self.0.blocks
    }
    /// The name set by `MPI_Type_set_name` (or the predefined name; empty otherwise).
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// `MPI_Type_commit`: returns the committed type (the layout is already flattened).
    pub fn commit(&self) -> Datatype {
        if self.0.committed {
            return self.clone();
        }
        let mut i = clone_info(&self.0);
        i.committed = true;
        Datatype(Arc::new(i))
    }

    /// `MPI_Type_set_name`.
    pub fn with_name(&self, name: &str) -> Datatype {
        let mut i = clone_info(&self.0);
        i.name = name.to_string();
        Datatype(Arc::new(i))
    }

    /// When `count` elements are one contiguous byte run: `(offset from the buffer
    /// address, length)`. Then data moves straight between the wire and user memory.
    pub fn contiguous_span(&self, count: usize) -> Option<(isize, usize)> {
        let i = &self.0;
        if count == 0 || i.size == 0 {
            return Some((0, 0));
        }
        match i.blocks.as_slice() {
            [b] if count == 1 || b.len as isize == self.extent() => {
                Some((b.disp, b.len.checked_mul(count)?))
            }
            _ => None,
        }
    }

    /// Calls `f(address offset, packed offset, len)` for the pieces of the packed byte
    /// range `[from, from + len)` of `count` elements, in order.
    pub fn for_each_piece(&self, from: usize, len: usize, mut f: impl FnMut(isize, usize, usize)) {
        let i = &self.0;
        if len == 0 || i.size == 0 {
            return;
        }
        let ext = self.extent();
        if let [b] = i.blocks.as_slice() {
            if b.len as isize == ext {
                // Dense: consecutive elements touch, the range is one run.
                f(b.disp + from as isize, from, len);
                return;
            }
        }
        let end = from + len;
        let mut pos = from;
        let mut elem = pos / i.size;
        let mut within = pos % i.size;
        // The block holding `within`: the last one starting at or before it.
        let mut bi = i.starts.partition_point(|&s| s <= within) - 1;
        while pos < end {
            let b = i.blocks[bi];
            let off = within - i.starts[bi];
            let n = (b.len - off).min(end - pos);
            f(elem as isize * ext + b.disp + off as isize, pos, n);
            pos += n;
            within += n;
            if within == i.size {
                elem += 1;
                within = 0;
                bi = 0;
            } else if within == i.starts[bi] + b.len {
                bi += 1;
            }
        }
    }

    /// `MPI_Type_contiguous`.
    pub fn contiguous(count: usize, old: &Datatype) -> Result<Datatype> {
        Self::hvector(count, 1, old.extent(), old)
    }

    /// `MPI_Type_vector`: `count` blocks of `blocklen` elements, `stride` elements apart.
    pub fn vector(
        count: usize,
        blocklen: usize,
        stride: isize,
        old: &Datatype,
    ) -> Result<Datatype> {
        let s = stride
            .checked_mul(old.extent())
            .ok_or_else(|| span_err("MPI_Type_vector"))?;
        Self::hvector(count, blocklen, s, old)
    }

    /// `MPI_Type_create_hvector`: as vector with the stride in bytes.
    pub fn hvector(
        count: usize,
        blocklen: usize,
        stride_bytes: isize,
        old: &Datatype,
    ) -> Result<Datatype> {
        let displs: Vec<isize> = (0..count as isize).map(|k| k * stride_bytes).collect();
        Self::hindexed(&vec![blocklen; count], &displs, old)
    }

    /// `MPI_Type_indexed`: displacements in elements of `old`.
    pub fn indexed(blocklens: &[usize], displs: &[isize], old: &Datatype) -> Result<Datatype> {
        let ext = old.extent();
        let d: Vec<isize> = displs
            .iter()
            .map(|&d| {
                d.checked_mul(ext)
                    .ok_or_else(|| span_err("MPI_Type_indexed"))
            })
            .collect::<Result<_>>()?;
        Self::hindexed(blocklens, &d, old)
    }

    /// `MPI_Type_create_hindexed`: displacements in bytes.
    pub fn hindexed(blocklens: &[usize], displs: &[isize], old: &Datatype) -> Result<Datatype> {
        let types = vec![old.clone(); blocklens.len()];
        Self::structure(blocklens, displs, &types)
    }

    /// `MPI_Type_create_struct`.
    pub fn structure(
        blocklens: &[usize],
        displs: &[isize],
        types: &[Datatype],
    ) -> Result<Datatype> {
        if blocklens.len() != displs.len() || displs.len() != types.len() {
            return Err(Error::Arg(
                "MPI_Type_create_struct: array lengths differ".into(),
            ));
        }
        let mut blocks = Vec::new();
        let (mut lb, mut ub) = (isize::MAX, isize::MIN);
        let mut homog: Option<(Basic, usize)> = None;
        let mut mixed = false;
        for ((&n, &d), t) in blocklens.iter().zip(displs).zip(types) {
            if n == 0 {
                continue;
            }
            let ext = t.extent();
            let last = (n as isize - 1)
                .checked_mul(ext)
                .ok_or_else(|| span_err("a type constructor"))?;
            lb = lb.min(d + t.lb()).min(d + last + t.lb());
            ub = ub.max(d + t.lb() + ext).max(d + last + t.lb() + ext);
            if blocks.len() + n * t.blocks().len() > 1 << 26 {
                return Err(Error::Type(
                    "a derived type of more than 2^26 blocks is not supported".into(),
                ));
            }
            for k in 0..n as isize {
                for b in t.blocks() {
                    blocks.push(Block {
                        disp: d + k * ext + b.disp,
                        len: b.len,
                    });
                }
            }
            match (t.homogeneous(), homog) {
                (Some((b, m)), None) if !mixed => homog = Some((b, m * n)),
                (Some((b, m)), Some((h, k))) if b == h => homog = Some((h, k + m * n)),
                _ => mixed = true,
            }
        }
        if lb > ub {
            (lb, ub) = (0, 0);
        }
        Ok(Self::from_blocks(
            blocks,
            lb,
            ub,
            if mixed { None } else { homog },
        ))
    }

    /// `MPI_Type_create_resized`.
    pub fn resized(old: &Datatype, lb: isize, extent: isize) -> Datatype {
        let mut i = clone_info(&old.0);
        i.lb = lb;
        i.ub = lb + extent;
        i.committed = false;
        i.predefined = None;
        i.name.clear();
        Datatype(Arc::new(i))
    }
}

fn clone_info(i: &TypeInfo) -> TypeInfo {
    TypeInfo {
        size: i.size,
        lb: i.lb,
        ub: i.ub,
        true_lb: i.true_lb,
        true_ub: i.true_ub,
        blocks: i.blocks.clone(),
        starts: i.starts.clone(),
        homog: i.homog,
        predefined: i.predefined,
        committed: i.committed,
        name: i.name.clone(),
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Rust element types with an MPI datatype (the typed Rust API sends slices of these).
/// Sealed: implemented for the plain numeric types, for which every bit pattern is a
/// valid value (a receive may write any bytes into them).
pub trait Equivalence: sealed::Sealed + Copy + Default + Send + 'static {
    /// The predefined type of `Self`.
    const BASIC: Basic;
    /// Its datatype.
    fn datatype() -> Datatype {
        Datatype::basic(Self::BASIC)
    }
}

macro_rules! equiv {
    ($($t:ty => $b:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl Equivalence for $t { const BASIC: Basic = Basic::$b; }
    )*};
}
equiv!(u8 => Uint8, i8 => Int8, u16 => Uint16, i16 => Int16, u32 => Uint32, i32 => Int32,
       u64 => Uint64, i64 => Int64, f32 => Float, f64 => Double,
       usize => Uint64, isize => Int64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_size_is_the_layout_of_the_dense_types() {
        for b in Basic::ALL {
            let d = Datatype::basic(b);
            let dense = d.contiguous_span(2).map(|(_, len)| len / 2);
            assert_eq!(b.dense_size(), dense, "{b:?}");
            if let Some(n) = b.dense_size() {
                assert_eq!((d.size(), d.extent()), (n, n as isize), "{b:?}");
            }
        }
    }

    fn int() -> Datatype {
        Datatype::basic(Basic::Int)
    }

    #[test]
    fn pair_types_have_c_layout() {
        let d = Datatype::basic(Basic::DoubleInt);
        assert_eq!((d.size(), d.extent()), (12, 16));
        let s = Datatype::basic(Basic::ShortInt);
        assert_eq!((s.size(), s.extent(), s.blocks().len()), (6, 8, 2));
        assert!(s.contiguous_span(2).is_none());
        assert_eq!(
            Datatype::basic(Basic::TwoInt).contiguous_span(3),
            Some((0, 24))
        );
    }

    #[test]
    fn dense_types_are_one_piece() {
        let c = Datatype::basic(Basic::Char);
        let mut got = Vec::new();
        c.for_each_piece(3, 1000, |a, p, n| got.push((a, p, n)));
        assert_eq!(got, vec![(3, 3, 1000)]);
    }

    #[test]
    fn pieces_of_a_vector_walk_the_strides() {
        let v = Datatype::vector(2, 1, 3, &int()).unwrap();
        assert_eq!((v.size(), v.extent()), (8, 16));
        let mut got = Vec::new();
        // 2 elements of v = 4 ints at byte offsets 0, 12, 16, 28; from packed byte 2, 11 bytes.
        v.for_each_piece(2, 11, |a, p, n| got.push((a, p, n)));
        assert_eq!(got, vec![(2, 2, 2), (12, 4, 4), (16, 8, 4), (28, 12, 1)]);
    }

    #[test]
    fn struct_bounds_and_homogeneity() {
        let d = Datatype::basic(Basic::Double);
        let s = Datatype::structure(&[1, 2], &[0, 8], &[d.clone(), int()]).unwrap();
        assert_eq!((s.size(), s.extent(), s.lb()), (16, 16, 0));
        assert!(s.homogeneous().is_none());
        let h = Datatype::structure(&[2, 1], &[16, 0], &[int(), int()]).unwrap();
        assert_eq!(h.homogeneous(), Some((Basic::Int, 3)));
        assert_eq!((h.lb(), h.extent(), h.true_extent()), (0, 24, (0, 24)));
        let r = Datatype::resized(&int(), -4, 12);
        assert_eq!((r.lb(), r.extent(), r.size()), (-4, 12, 4));
        assert!(r.contiguous_span(2).is_none());
        assert_eq!(r.contiguous_span(1), Some((0, 4)));
    }

    #[test]
    fn indexed_with_negative_displacements() {
        let t = Datatype::indexed(&[1, 2], &[-1, 2], &int()).unwrap();
        assert_eq!((t.lb(), t.extent(), t.size()), (-4, 20, 12));
        let mut got = Vec::new();
        t.for_each_piece(0, 12, |a, _, n| got.push((a, n)));
        assert_eq!(got, vec![(-4, 4), (8, 8)]);
    }
}
