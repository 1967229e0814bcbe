//! The Rust API over the engine: a collective allocation returned as a typed handle
//! ([`Global`]), element-indexed put/get/accumulate, strided copies described by a
//! [`Shape`], fetch-and-add and swap. Safe: every access is checked by the engine
//! (rank, allocation, extent) and reaches memory only through its raw copies and atomics.
//!
//! # Examples
//! ```
//! use armci::{skifch, Armci, Options, Shape};
//! let sums = skifch::local::run(3, |job| {
//!     let e = |e: armci::Error| skifch::Error::InvalidArgument(e.to_string().into());
//!     let a = Armci::new(&job, Options { rma: job.rma(), progress_thread: false }).map_err(e)?;
//!     let (me, n) = (a.me(), a.nproc());
//!     let g = a.alloc::<f64>(16).map_err(e)?;           // 16 doubles on every rank
//!     for r in 0..n {
//!         a.acc(&g, r, 0, 2.0, &[f64::from(me); 4]).map_err(e)?; // g[r][0..4] += 2·me
//!     }
//!     a.barrier().map_err(e)?;
//!     let mut v = [0.0; 4];
//!     a.get(&g, me, 0, &mut v).map_err(e)?;
//!     // a 2×3 block of a 4-wide row-major matrix, into rank 0 at element 8
//!     let src = [1.0, 2.0, 3.0, 9.0, 4.0, 5.0, 6.0, 9.0];
//!     if me == 1 {
//!         a.put_shape(&g, 0, 8, &src, &Shape::new(&[3, 2], &[4], &[4])).map_err(e)?;
//!     }
//!     a.barrier().map_err(e)?;
//!     let mut m = [0.0; 8];
//!     a.get(&g, 0, 8, &mut m).map_err(e)?;
//!     assert_eq!(m, [1.0, 2.0, 3.0, 0.0, 4.0, 5.0, 6.0, 0.0]);
//!     let ticket = a.fetch_add_i64(&a.alloc::<i64>(1).map_err(e)?, 0, 0, 1).map_err(e)?;
//!     assert!(ticket < i64::from(n));
//!     a.finalize().map_err(e)?;
//!     Ok(v[0])
//! }).unwrap();
//! assert_eq!(sums, [6.0, 6.0, 6.0]); // 2·(0 + 1 + 2)
//! ```

#![allow(unsafe_code)] // calls the engine's raw-pointer operations with live Rust slices

use std::marker::PhantomData;

use skifch::Port;

use crate::acc::{AccType, Scale};
use crate::engine::{Armci, Rmw};
use crate::strided::Strided;
use crate::{Error, Result};

mod sealed {
    pub trait Sealed {}
}

/// Plain numeric elements (any bit pattern is a value): what a [`Global`] holds.
pub trait Elem: Copy + Default + sealed::Sealed + 'static {}

/// Elements ARMCI accumulates ([`AccType`]).
pub trait AccElem: Elem {
    /// The accumulate type.
    const TYPE: AccType;
    /// The scale's bits as the kernel reads them.
    fn scale(self) -> Scale;
}

macro_rules! elems {
    ($($t:ty),*) => {$( impl sealed::Sealed for $t {} impl Elem for $t {} )*};
}
elems!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64, [f32; 2], [f64; 2]);

impl AccElem for i32 {
    const TYPE: AccType = AccType::Int;
    fn scale(self) -> Scale {
        [u64::from(self as u32), 0]
    }
}
impl AccElem for i64 {
    const TYPE: AccType = AccType::Long;
    fn scale(self) -> Scale {
        [self as u64, 0]
    }
}
impl AccElem for f32 {
    const TYPE: AccType = AccType::Float;
    fn scale(self) -> Scale {
        [u64::from(self.to_bits()), 0]
    }
}
impl AccElem for f64 {
    const TYPE: AccType = AccType::Double;
    fn scale(self) -> Scale {
        [self.to_bits(), 0]
    }
}
/// Single-precision complex as `[re, im]`.
impl AccElem for [f32; 2] {
    const TYPE: AccType = AccType::Complex;
    fn scale(self) -> Scale {
        [
            u64::from(self[0].to_bits()) | u64::from(self[1].to_bits()) << 32,
            0,
        ]
    }
}
/// Double-precision complex as `[re, im]`.
impl AccElem for [f64; 2] {
    const TYPE: AccType = AccType::DoubleComplex;
    fn scale(self) -> Scale {
        [self[0].to_bits(), self[1].to_bits()]
    }
}

/// A collective allocation of `T`s: every rank's block (base in its own address space,
/// length in elements). Freed by [`Armci::free_global`] (collective).
#[derive(Debug)]
pub struct Global<T> {
    bases: Vec<usize>,
    lens: Vec<usize>,
    _t: PhantomData<T>,
}

impl<T> Global<T> {
    /// Elements in rank `r`'s block (0 for a rank out of range).
    pub fn len(&self, r: u32) -> usize {
        self.lens.get(r as usize).copied().unwrap_or(0)
    }
    /// Whether rank `r`'s block is empty.
    pub fn is_empty(&self, r: u32) -> bool {
        self.len(r) == 0
    }
}

/// A strided block in elements: `counts[0]` contiguous elements, repeated `counts[1]`
/// times `src_ld[0]`/`dst_ld[0]` elements apart, and so on (ARMCI's stride levels; the
/// leading dimensions of the source and destination arrays).
#[derive(Clone, Debug)]
pub struct Shape {
    counts: Vec<usize>,
    src_ld: Vec<usize>,
    dst_ld: Vec<usize>,
}

impl Shape {
    /// `counts` (levels + 1) and the two arrays' strides per level, in elements.
    pub fn new(counts: &[usize], src_ld: &[usize], dst_ld: &[usize]) -> Shape {
        Shape {
            counts: counts.to_vec(),
            src_ld: src_ld.to_vec(),
            dst_ld: dst_ld.to_vec(),
        }
    }

    /// The byte descriptor for elements of `size` bytes, checked.
    fn bytes(&self, size: usize) -> Result<Strided> {
        let b = |v: &[usize], k: usize| -> Vec<i64> { v.iter().map(|&x| (x * k) as i64).collect() };
        let mut c = b(&self.counts, 1);
        if let Some(c0) = c.first_mut() {
            *c0 *= size as i64;
        }
        Strided::new(&b(&self.src_ld, size), &b(&self.dst_ld, size), &c)
    }
}

fn too_short(what: &str, need: usize, have: usize) -> Error {
    Error::BadArgument(format!(
        "the {what} holds {have} elements, the shape spans {need}"
    ))
}

impl<P: Port> Armci<P> {
    /// Collective allocation of `len` elements of `T` on this rank (ranks may differ).
    ///
    /// # Collective Operation
    /// Every rank calls it (as [`Armci::malloc`]).
    pub fn alloc<T: Elem>(&self, len: usize) -> Result<Global<T>> {
        let size = std::mem::size_of::<T>();
        let bytes = len
            .checked_mul(size)
            .ok_or_else(|| Error::BadArgument(format!("{len} elements overflow")))?;
        let blocks = self.malloc_blocks(bytes)?;
        Ok(Global {
            bases: blocks.iter().map(|b| b.0).collect(),
            lens: blocks.iter().map(|b| b.1 / size).collect(),
            _t: PhantomData,
        })
    }

    /// Frees `g` (collective, as [`Armci::free`]).
    pub fn free_global<T>(&self, g: Global<T>) -> Result<()> {
        self.free(g.bases[self.me() as usize])
    }

    /// The byte address of element `at` of rank `proc`'s block.
    fn elem_addr<T>(&self, g: &Global<T>, proc: u32, at: usize) -> Result<usize> {
        let base = *g.bases.get(proc as usize).ok_or(Error::BadProc {
            proc: proc.into(),
            n: self.nproc(),
        })?;
        Ok(base + at * std::mem::size_of::<T>())
    }

    /// Copies `src` to elements `at..` of rank `proc`'s block.
    pub fn put<T: Elem>(&self, g: &Global<T>, proc: u32, at: usize, src: &[T]) -> Result<()> {
        let len = std::mem::size_of_val(src);
        let t = self.locate(proc, self.elem_addr(g, proc, at)?, len)?;
        // SAFETY: `src` is a live slice of `len` bytes; `t` located for `len` bytes.
        unsafe { self.put_to(src.as_ptr().cast(), t, len) }
    }

    /// Copies elements `at..at + dst.len()` of rank `proc`'s block into `dst`.
    pub fn get<T: Elem>(&self, g: &Global<T>, proc: u32, at: usize, dst: &mut [T]) -> Result<()> {
        let len = std::mem::size_of_val(dst);
        let t = self.locate(proc, self.elem_addr(g, proc, at)?, len)?;
        // SAFETY: `dst` is an exclusive slice of `len` bytes of plain numbers (any bit
        // pattern is a value); `t` located for `len` bytes.
        unsafe { self.get_from(t, dst.as_mut_ptr().cast(), len) }
    }

    /// `g[proc][at + i] += scale · src[i]`, each element atomically.
    pub fn acc<T: AccElem>(
        &self,
        g: &Global<T>,
        proc: u32,
        at: usize,
        scale: T,
        src: &[T],
    ) -> Result<()> {
        let len = std::mem::size_of_val(src);
        let t = self.locate(proc, self.elem_addr(g, proc, at)?, len)?;
        // SAFETY: as in `put`.
        unsafe { self.acc_to(T::TYPE, scale.scale(), src.as_ptr().cast(), t, len) }
    }

    /// Strided put: the `shape` block of `src` to rank `proc`'s block from element `at`.
    pub fn put_shape<T: Elem>(
        &self,
        g: &Global<T>,
        proc: u32,
        at: usize,
        src: &[T],
        shape: &Shape,
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        let d = shape.bytes(size)?;
        if d.src_extent() > std::mem::size_of_val(src) {
            return Err(too_short("source", d.src_extent() / size, src.len()));
        }
        if d.bytes() == 0 {
            return Ok(());
        }
        let t = self.locate(proc, self.elem_addr(g, proc, at)?, d.dst_extent())?;
        // SAFETY: `src` spans the source extent (checked); the target was located for
        // the whole destination extent.
        unsafe { self.put_strided(src.as_ptr().cast(), &d, t) }
    }

    /// Strided get: the `shape` block of rank `proc`'s block from element `at` into `dst`.
    pub fn get_shape<T: Elem>(
        &self,
        g: &Global<T>,
        proc: u32,
        at: usize,
        dst: &mut [T],
        shape: &Shape,
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        // The remote block is the source side.
        let d = shape.bytes(size)?;
        if d.dst_extent() > std::mem::size_of_val(dst) {
            return Err(too_short("destination", d.dst_extent() / size, dst.len()));
        }
        if d.bytes() == 0 {
            return Ok(());
        }
        let t = self.locate(proc, self.elem_addr(g, proc, at)?, d.src_extent())?;
        // SAFETY: `dst` spans the destination extent (checked) and is borrowed
        // exclusively; the target was located for the whole source extent.
        unsafe { self.get_strided(t, &d, dst.as_mut_ptr().cast()) }
    }

    /// Atomically adds `v` to the `i64` at element `at` of rank `proc`; returns the old value.
    pub fn fetch_add_i64(&self, g: &Global<i64>, proc: u32, at: usize, v: i64) -> Result<i64> {
        let t = self.locate(proc, self.elem_addr(g, proc, at)?, 8)?;
        self.rmw(Rmw::FetchAddLong, t, v)
    }

    /// Atomically swaps `v` into the `i64` at element `at` of rank `proc`; returns the old value.
    pub fn swap_i64(&self, g: &Global<i64>, proc: u32, at: usize, v: i64) -> Result<i64> {
        let t = self.locate(proc, self.elem_addr(g, proc, at)?, 8)?;
        self.rmw(Rmw::SwapLong, t, v)
    }
}
