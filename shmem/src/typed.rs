//! The Rust API's typed symmetric allocation, [`SymVec`], and its typed RMA and atomics.

use std::marker::PhantomData;

use skifch::rma::Amo;
use skifch::Port;

use crate::{Error, SymAddr, World};

mod sealed {
    pub trait Sealed {}
}

/// Element types of symmetric arrays: plain numbers, copied as little-endian bytes.
pub trait Elem: Copy + Default + Send + 'static + sealed::Sealed {
    /// Size in bytes.
    const SIZE: usize;
    /// Writes the value's bytes.
    fn to_bytes(self, out: &mut [u8]);
    /// Reads a value.
    fn from_bytes(b: &[u8]) -> Self;
    /// The value as raw bits (atomics).
    fn to_bits(self) -> u64;
    /// A value from raw bits (atomics).
    fn from_bits(b: u64) -> Self;
}

macro_rules! elem {
    ($($t:ty => $bits:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn to_bytes(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            fn from_bytes(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
            fn to_bits(self) -> u64 {
                <$bits>::from_le_bytes(self.to_le_bytes()) as u64
            }
            fn from_bits(b: u64) -> Self {
                <$t>::from_le_bytes((b as $bits).to_le_bytes())
            }
        }
    )*};
}
elem!(i8 => u8, u8 => u8, i16 => u16, u16 => u16, i32 => u32, u32 => u32, i64 => u64, u64 => u64,
      f32 => u32, f64 => u64, isize => usize, usize => usize);

/// A symmetric array of `len` elements of `T` on every PE (OpenSHMEM's `shmem_malloc`ed
/// object). Created and freed collectively; it names the same object on every PE.
pub struct SymVec<T: Elem> {
    addr: SymAddr,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Elem> SymVec<T> {
    /// Collective (every PE, same `len`, same order as other allocations): allocates a
    /// zero-filled array; returns after a barrier.
    pub fn new<P: Port>(w: &World<P>, len: usize) -> Result<Self, Error> {
        let addr = w.malloc(len * T::SIZE, T::SIZE.max(8))?;
        let v = SymVec {
            addr,
            len,
            _t: PhantomData,
        };
        // A reused block may hold old data: zero this PE's copy, then agree.
        w.write_local(addr, &vec![0u8; len * T::SIZE])?;
        w.barrier_all()?;
        Ok(v)
    }

    /// Collective free (every PE); a barrier first so no PE still accesses it.
    pub fn free<P: Port>(self, w: &World<P>) -> Result<(), Error> {
        w.free(self.addr)
    }

    /// Elements per PE.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` if empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The symmetric address of element `i`.
    pub fn addr(&self, i: usize) -> SymAddr {
        self.addr.offset(i * T::SIZE)
    }

    fn range(&self, i: usize, n: usize) -> Result<SymAddr, Error> {
        match i.checked_add(n) {
            Some(e) if e <= self.len => Ok(self.addr(i)),
            _ => Err(Error::BadArgument(format!(
                "elements {i}..{} of a {}-element symmetric array",
                i.saturating_add(n),
                self.len
            ))),
        }
    }

    /// One-sided put of `src` into elements `i..` on `pe`. Only this PE takes part;
    /// returns when `src` may be reused; visible at `pe` after `quiet` or a barrier.
    pub fn put<P: Port>(&self, w: &World<P>, i: usize, src: &[T], pe: u32) -> Result<(), Error> {
        let a = self.range(i, src.len())?;
        let mut b = vec![0u8; src.len() * T::SIZE];
        for (x, c) in src.iter().zip(b.chunks_exact_mut(T::SIZE)) {
            x.to_bytes(c);
        }
        w.put(pe, a, &b)
    }

    /// One-sided get of `dst.len()` elements from `i..` on `pe`; complete at return.
    pub fn get<P: Port>(
        &self,
        w: &World<P>,
        i: usize,
        dst: &mut [T],
        pe: u32,
    ) -> Result<(), Error> {
        let a = self.range(i, dst.len())?;
        let mut b = vec![0u8; dst.len() * T::SIZE];
        w.get(pe, a, &mut b)?;
        for (x, c) in dst.iter_mut().zip(b.chunks_exact(T::SIZE)) {
            *x = T::from_bytes(c);
        }
        Ok(())
    }

    /// This PE's element `i` (an atomic load; a peer may be writing it).
    pub fn read<P: Port>(&self, w: &World<P>, i: usize) -> Result<T, Error> {
        let a = self.range(i, 1)?;
        Ok(T::from_bits(w.load_local(w.local(a), T::SIZE)))
    }

    /// Atomic `op` on element `i` at `pe` (4- or 8-byte types); returns the old value.
    /// One-sided, complete at return; atomic with respect to every other atomic on it.
    pub fn atomic<P: Port>(&self, w: &World<P>, i: usize, op: Amo, pe: u32) -> Result<T, Error> {
        let a = self.range(i, 1)?;
        Ok(T::from_bits(w.amo(pe, a, T::SIZE, op, true)?))
    }

    /// Atomic fetch-and-add on element `i` at `pe` (integers; see [`SymVec::atomic`]).
    pub fn fetch_add<P: Port>(&self, w: &World<P>, i: usize, v: T, pe: u32) -> Result<T, Error> {
        self.atomic(w, i, Amo::Add(v.to_bits()), pe)
    }

    /// Waits until this PE's element `i` satisfies `cond` (`shmem_wait_until`); serves
    /// the message path meanwhile and fails if a PE is lost.
    pub fn wait_until<P: Port>(
        &self,
        w: &World<P>,
        i: usize,
        mut cond: impl FnMut(T) -> bool,
    ) -> Result<T, Error> {
        let a = self.range(i, 1)?;
        Ok(T::from_bits(w.wait_local(w.local(a), T::SIZE, |v| {
            cond(T::from_bits(v))
        })?))
    }
}
