//! Datatypes (MPI-3.1 chapter 4): the predefined C types, the derived-type constructors
//! and the type map that pack/unpack walk.
//!
//! A type is the map of one element ([`map`]: runs of bytes, as a small tree for regular
//! types so that memory does not grow with the counts) plus its bounds; `count` elements
//! repeat it every extent. A type whose map is one run as long as its extent is
//! *contiguous*: messages of it are sent straight from and received straight into the
//! user's memory, with no intermediate copy ([`Datatype::contiguous_span`]).

use std::sync::Arc;

use crate::error::{Error, Result};

mod basic;
mod build;
mod external;
mod map;
mod sig;

pub use basic::Basic;
pub use build::Distrib;
pub use external::{external32_size, from_external32, to_external32};
pub use map::Block;
use map::Map;
use sig::Sig;

/// How a type was made (`MPI_Type_get_envelope`, MPI-3.1 §4.1.13); the values are
/// `mpi.h`'s `MPI_COMBINER_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Combiner {
    Named = 1,
    Dup = 2,
    Contiguous = 3,
    Vector = 4,
    Hvector = 6,
    Indexed = 7,
    Hindexed = 9,
    IndexedBlock = 10,
    Struct = 12,
    Subarray = 13,
    Darray = 14,
    F90Real = 15,
    F90Complex = 16,
    F90Integer = 17,
    Resized = 18,
    HindexedBlock = 19,
}

/// The arguments a derived type was made with (`MPI_Type_get_contents`): integers,
/// addresses and types in the order of MPI-3.1 §4.1.13's table.
#[derive(Clone, Debug)]
pub struct Contents {
    /// The constructor.
    pub combiner: Combiner,
    /// `array_of_integers`.
    pub ints: Vec<i32>,
    /// `array_of_addresses`.
    pub aints: Vec<isize>,
    /// `array_of_datatypes`.
    pub types: Vec<Datatype>,
}

#[derive(Debug, Clone)]
struct TypeInfo {
    map: Arc<Map>,
    lb: isize,
    ub: isize,
    /// `Some((b, n))` when one element is `n` elements of predefined type `b` (what
    /// reductions need).
    homog: Option<(Basic, usize)>,
    /// The predefined types in packing order (element counts, external32).
    sig: Arc<Sig>,
    /// Largest alignment of the predefined types inside (struct padding, §4.1.6).
    align: usize,
    /// Bounds set explicitly (`MPI_Type_create_resized` somewhere inside): a struct of
    /// it is not padded (MPICH's "sticky" bounds).
    explicit: bool,
    predefined: Option<Basic>,
    committed: bool,
    name: String,
    contents: Option<Arc<Contents>>,
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

fn overflow(what: &str) -> Error {
    Error::Count(format!("{what}: the type's extent or size overflows"))
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
        Datatype(Arc::new(TypeInfo {
            map: Arc::new(Map::blocks(blocks)),
            lb: 0,
            ub: extent as isize,
            homog: Some((b, 1)),
            sig: match b.pair() {
                Some((x, y)) => Sig::seq([Sig::basic(x), Sig::basic(y)]),
                None => Sig::basic(b),
            },
            align: b.align(),
            explicit: false,
            predefined: Some(b),
            committed: true,
            name: b.name().to_string(),
            contents: None,
        }))
    }

    fn derived(
        map: Arc<Map>,
        sig: Arc<Sig>,
        bounds: (isize, isize),
        from: &[&Datatype],
        homog: Option<(Basic, usize)>,
    ) -> Self {
        Datatype(Arc::new(TypeInfo {
            map,
            lb: bounds.0,
            ub: bounds.1,
            homog,
            sig,
            align: from.iter().map(|t| t.0.align).max().unwrap_or(1),
            explicit: from.iter().any(|t| t.0.explicit),
            predefined: None,
            committed: false,
            name: String::new(),
            contents: None,
        }))
    }

    /// The identity of this type object (two clones share it; distinct objects alive at
    /// once never do): one-sided communication caches target types by it.
    pub fn identity(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// The predefined type this is, if any.
    pub fn predefined(&self) -> Option<Basic> {
        self.0.predefined
    }
    /// `Some((b, n))`: one element is `n` values of predefined `b` (reductions need this).
    pub fn homogeneous(&self) -> Option<(Basic, usize)> {
        self.0.homog
    }
    /// Predefined elements in `bytes` packed bytes of a stream of elements of this type
    /// (`MPI_Get_elements`, MPI-3.1 §4.1.11), or `None` when the bytes end inside one.
    pub fn elements_in(&self, bytes: usize) -> Option<usize> {
        match self.0.sig.elements_in(bytes) {
            (n, 0) => Some(n),
            _ => None,
        }
    }

    /// Packed bytes of the first `n` predefined elements of a stream of elements of this
    /// type (`MPI_Status_set_elements`: `MPI_Get_elements` then answers `n`).
    pub fn bytes_of_elements(&self, n: usize) -> Result<usize> {
        self.0.sig.bytes_of(n).ok_or_else(|| {
            Error::Count(format!(
                "{n} predefined elements of this type overflow a count"
            ))
        })
    }

    /// Bytes of data in one element (`MPI_Type_size`).
    pub fn size(&self) -> usize {
        self.0.map.size
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
        (self.0.map.true_lb, self.0.map.true_ub - self.0.map.true_lb)
    }
    /// `true` once committed (predefined types always are).
    pub fn is_committed(&self) -> bool {
        self.0.committed
    }
    /// Number of contiguous runs of one element (saturating).
    pub fn runs(&self) -> usize {
        self.0.map.runs
    }
    /// The name set by `MPI_Type_set_name` (or the predefined name; empty otherwise).
    pub fn name(&self) -> &str {
        &self.0.name
    }
    /// How the type was made; `None` for predefined types (`MPI_COMBINER_NAMED`) and
    /// types made by the Rust API.
    pub fn contents(&self) -> Option<&Contents> {
        self.0.contents.as_deref()
    }

    /// The same type recording how it was made (the C ABI's constructors).
    pub fn with_contents(self, c: Contents) -> Datatype {
        let mut i = Arc::try_unwrap(self.0).unwrap_or_else(|a| (*a).clone());
        i.contents = Some(Arc::new(c));
        Datatype(Arc::new(i))
    }

    /// `MPI_Type_commit`: returns the committed type (the map is already built).
    pub fn commit(&self) -> Datatype {
        if self.0.committed {
            return self.clone();
        }
        let mut i = (*self.0).clone();
        i.committed = true;
        Datatype(Arc::new(i))
    }

    /// `MPI_Type_set_name`.
    pub fn with_name(&self, name: &str) -> Datatype {
        let mut i = (*self.0).clone();
        i.name = name.to_string();
        Datatype(Arc::new(i))
    }

    /// When `count` elements are one contiguous byte run: `(offset from the buffer
    /// address, length)`. Then data moves straight between the wire and user memory.
    pub fn contiguous_span(&self, count: usize) -> Option<(isize, usize)> {
        let m = &self.0.map;
        if count == 0 || m.size == 0 {
            return Some((0, 0));
        }
        let b = m.single()?;
        if count == 1 || b.len as isize == self.extent() {
            Some((b.disp, b.len.checked_mul(count)?))
        } else {
            None
        }
    }

    /// Bytes of `count` packed elements, and the address range they reach from the buffer
    /// address, checked against overflow: `Err(MPI_ERR_COUNT)` when they do not fit the
    /// address space (a count near `INT_MAX` of a large type).
    pub fn span(&self, count: usize) -> Result<usize> {
        let what = "a buffer";
        let bytes = self
            .size()
            .checked_mul(count)
            .filter(|&n| n <= isize::MAX as usize);
        let reach = isize::try_from(count.saturating_sub(1))
            .ok()
            .and_then(|c| c.checked_mul(self.extent()));
        match (bytes, reach) {
            (Some(b), Some(_)) => Ok(b),
            _ => Err(Error::Count(format!(
                "{what} of {count} elements of a {}-byte type does not fit the address space",
                self.size()
            ))),
        }
    }

    /// Calls `f(address offset, packed offset, len)` for the pieces of the packed byte
    /// range `[from, from + len)` of `count` elements, in order.
    pub fn for_each_piece(&self, from: usize, len: usize, mut f: impl FnMut(isize, usize, usize)) {
        let m = &self.0.map;
        if len == 0 || m.size == 0 {
            return;
        }
        let ext = self.extent();
        if let Some(b) = m.single() {
            if b.len as isize == ext {
                // Dense: consecutive elements touch, the range is one run.
                f(b.disp + from as isize, from, len);
                return;
            }
        }
        let (end, size) = (from + len, m.size);
        let (mut elem, mut within, mut at) = (from / size, from % size, from);
        while at < end {
            let n = (size - within).min(end - at);
            m.walk(elem as isize * ext, elem * size, within, n, &mut f);
            at += n;
            elem += 1;
            within = 0;
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
            .ok_or_else(|| overflow("MPI_Type_vector"))?;
        Self::hvector(count, blocklen, s, old)
    }

    /// `MPI_Type_create_hvector`: as vector with the stride in bytes. O(1) memory.
    pub fn hvector(
        count: usize,
        blocklen: usize,
        stride_bytes: isize,
        old: &Datatype,
    ) -> Result<Datatype> {
        let what = "MPI_Type_create_hvector";
        let ext = old.extent();
        let block = Map::repeat(blocklen, ext, &old.0.map, what)?;
        let map = Map::repeat(count, stride_bytes, &block, what)?;
        let sig = Sig::repeat(count, &Sig::repeat(blocklen, &old.0.sig));
        if count == 0 || blocklen == 0 {
            let homog = old.0.homog.map(|(b, _)| (b, 0));
            return Ok(Self::derived(map, sig, (0, 0), &[old], homog));
        }
        // Bounds: the block's (its first and last element's), repeated count times.
        let add = |a: isize, b: isize| a.checked_add(b).ok_or_else(|| overflow(what));
        let in_blk = mul(blocklen as isize - 1, ext, what)?;
        let (blk_lb, blk_ub) = (
            old.0.lb.min(add(old.0.lb, in_blk)?),
            old.0.ub.max(add(old.0.ub, in_blk)?),
        );
        let last = mul(count as isize - 1, stride_bytes, what)?;
        let lb = blk_lb.min(add(blk_lb, last)?);
        let ub = blk_ub.max(add(blk_ub, last)?);
        let homog = old
            .0
            .homog
            .and_then(|(b, n)| Some((b, n.checked_mul(blocklen)?.checked_mul(count)?)));
        Ok(Self::derived(map, sig, (lb, ub), &[old], homog))
    }

    /// `MPI_Type_indexed`: displacements in elements of `old`.
    pub fn indexed(blocklens: &[usize], displs: &[isize], old: &Datatype) -> Result<Datatype> {
        let ext = old.extent();
        let d: Vec<isize> = displs
            .iter()
            .map(|&d| mul(d, ext, "MPI_Type_indexed"))
            .collect::<Result<_>>()?;
        Self::hindexed(blocklens, &d, old)
    }

    /// `MPI_Type_create_hindexed`: displacements in bytes.
    pub fn hindexed(blocklens: &[usize], displs: &[isize], old: &Datatype) -> Result<Datatype> {
        let types = vec![old.clone(); blocklens.len()];
        Self::parts(blocklens, displs, &types, false)
    }

    /// `MPI_Type_create_struct`: the extent is padded to the largest alignment of the
    /// members' predefined types, as a C compiler pads the struct (MPI-3.1 §4.1.6), unless
    /// a member's bounds were set explicitly (`MPI_Type_create_resized`).
    pub fn structure(
        blocklens: &[usize],
        displs: &[isize],
        types: &[Datatype],
    ) -> Result<Datatype> {
        Self::parts(blocklens, displs, types, true)
    }

    fn parts(
        blocklens: &[usize],
        displs: &[isize],
        types: &[Datatype],
        pad: bool,
    ) -> Result<Datatype> {
        let what = if pad {
            "MPI_Type_create_struct"
        } else {
            "MPI_Type_create_hindexed"
        };
        if blocklens.len() != displs.len() || displs.len() != types.len() {
            return Err(Error::Arg(format!("{what}: array lengths differ")));
        }
        let mut parts = Vec::with_capacity(types.len());
        let mut sigs = Vec::with_capacity(types.len());
        let (mut lb, mut ub) = (isize::MAX, isize::MIN);
        let mut homog: Option<(Basic, usize)> = None;
        let mut mixed = false;
        for ((&n, &d), t) in blocklens.iter().zip(displs).zip(types) {
            if n == 0 {
                continue;
            }
            let ext = t.extent();
            parts.push((d, Map::repeat(n, ext, &t.0.map, what)?));
            sigs.push(Sig::repeat(n, &t.0.sig));
            let last = mul(n as isize - 1, ext, what)?;
            let add = |a: isize, b: isize| a.checked_add(b).ok_or_else(|| overflow(what));
            let first_lb = add(d, t.lb())?;
            lb = lb.min(first_lb).min(add(first_lb, last)?);
            let first_ub = add(d, t.0.ub)?;
            ub = ub.max(first_ub).max(add(first_ub, last)?);
            match (t.homogeneous(), homog) {
                (Some((b, m)), None) if !mixed => homog = m.checked_mul(n).map(|k| (b, k)),
                (Some((b, m)), Some((h, k))) if b == h => {
                    homog = m
                        .checked_mul(n)
                        .and_then(|x| x.checked_add(k))
                        .map(|k| (h, k))
                }
                _ => mixed = true,
            }
        }
        if lb > ub {
            (lb, ub) = (0, 0);
        }
        let map = Map::seq(parts, what)?;
        let refs: Vec<&Datatype> = types.iter().collect();
        let homog = if mixed { None } else { homog };
        let mut t = Self::derived(map, Sig::seq(sigs), (lb, ub), &refs, homog);
        if pad && !t.0.explicit {
            let a = t.0.align as isize;
            let rem = (ub - lb).rem_euclid(a);
            if rem != 0 {
                Arc::get_mut(&mut t.0).expect("fresh").ub = ub + (a - rem);
            }
        }
        Ok(t)
    }

    /// `MPI_Type_create_resized`.
    pub fn resized(old: &Datatype, lb: isize, extent: isize) -> Datatype {
        let mut i = (*old.0).clone();
        i.lb = lb;
        i.ub = lb.wrapping_add(extent);
        i.committed = false;
        i.predefined = None;
        i.explicit = true;
        i.name.clear();
        i.contents = None;
        Datatype(Arc::new(i))
    }
}

fn mul(a: isize, b: isize, what: &str) -> Result<isize> {
    a.checked_mul(b).ok_or_else(|| overflow(what))
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
        assert_eq!((s.size(), s.extent(), s.runs()), (6, 8, 2));
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

    #[test]
    fn struct_extent_is_padded_like_c() {
        let d = Datatype::basic(Basic::Double);
        let c = Datatype::basic(Basic::Char);
        // struct { double d; char c; }: 9 data bytes, extent 16 (MPICH's too).
        let s = Datatype::structure(&[1, 1], &[0, 8], &[d.clone(), c.clone()]).unwrap();
        assert_eq!((s.size(), s.extent()), (9, 16));
        // struct { int i; char c; } → 8; struct { char a, b; } stays 2.
        let s = Datatype::structure(&[1, 1], &[0, 4], &[int(), c.clone()]).unwrap();
        assert_eq!(s.extent(), 8);
        let s = Datatype::structure(&[2], &[0], std::slice::from_ref(&c)).unwrap();
        assert_eq!(s.extent(), 2);
        // A member with explicit bounds: the user's extent stands.
        let r = Datatype::resized(&d, 0, 9);
        let s = Datatype::structure(&[1, 1], &[0, 8], &[r, c]).unwrap();
        assert_eq!(s.extent(), 9);
        // Contiguous arrays of the padded struct repeat every 16 bytes.
        let s = Datatype::structure(&[1, 1], &[0, 8], &[d, Datatype::basic(Basic::Char)]).unwrap();
        let a = Datatype::contiguous(3, &s).unwrap();
        let mut got = Vec::new();
        a.for_each_piece(0, a.size(), |addr, _, n| got.push((addr, n)));
        assert_eq!(got, vec![(0, 9), (16, 9), (32, 9)]);
    }

    #[test]
    fn regular_types_take_constant_memory_and_huge_counts_are_errors() {
        let byte = Datatype::basic(Basic::Byte);
        let c = Datatype::contiguous(i32::MAX as usize, &byte).unwrap();
        assert_eq!((c.size(), c.runs()), (i32::MAX as usize, 1));
        let v = Datatype::vector(i32::MAX as usize, 1, 2, &int()).unwrap();
        assert_eq!(
            (v.size(), v.extent()),
            (4 * i32::MAX as usize, 8 * i32::MAX as isize - 4)
        );
        // INT_MAX × INT_MAX × 16 bytes does not fit: an error class, not an abort.
        let big =
            Datatype::contiguous(i32::MAX as usize, &Datatype::basic(Basic::LongDouble)).unwrap();
        let e = Datatype::contiguous(i32::MAX as usize, &big).unwrap_err();
        assert_eq!(e.class(), crate::error::class::COUNT);
        assert!(big.span(i32::MAX as usize).is_err());
        assert_eq!(c.span(2).unwrap(), 2 * i32::MAX as usize);
    }
}
