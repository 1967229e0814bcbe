//! Strided transfer descriptors (ARMCI's `PutS`/`GetS`/`AccS`): `count[0]` contiguous
//! bytes, repeated `count[1]` times `stride[0]` bytes apart, that block `count[2]` times
//! `stride[1]` apart, and so on for `levels` levels. Checked before any byte moves: counts
//! are positive and each level's stride at least spans the level below it (the blocks do
//! not overlap) where that level repeats (a stride over one block is never applied and
//! not checked), on both sides; then the whole access has one known extent per side.
//!
//! A descriptor is built for every strided call, so it lives on the stack up to 3 levels
//! (4-D arrays; deeper ones, up to ARMCI's `ARMCI_MAX_STRIDE_LEVEL` of 8 and beyond, go to
//! the heap) and knows its extents: an 8x8 `PutS` spent most of its time in the allocator
//! when the three arrays were vectors.

#![allow(unsafe_code)] // Strided::copy: the direct path's copies, between raw pointers

use std::ops::{Deref, DerefMut};

use crate::{Error, Result};

/// Values kept in place; deeper descriptors go to the heap.
pub const INLINE: usize = 4;

/// A short list of sizes: in place up to [`INLINE`] values, else on the heap.
#[derive(Clone, Debug)]
pub enum Dims {
    /// The first `len` values of the array.
    Inline(u8, [usize; INLINE]),
    /// More than [`INLINE`] values.
    Heap(Vec<usize>),
}

impl Dims {
    /// `len` zeros.
    pub fn zeros(len: usize) -> Dims {
        if len <= INLINE {
            Dims::Inline(len as u8, [0; INLINE])
        } else {
            Dims::Heap(vec![0; len])
        }
    }
}

impl Deref for Dims {
    type Target = [usize];
    #[inline]
    fn deref(&self) -> &[usize] {
        match self {
            Dims::Inline(n, a) => &a[..usize::from(*n)],
            Dims::Heap(v) => v,
        }
    }
}

impl DerefMut for Dims {
    #[inline]
    fn deref_mut(&mut self) -> &mut [usize] {
        match self {
            Dims::Inline(n, a) => &mut a[..usize::from(*n)],
            Dims::Heap(v) => v,
        }
    }
}

impl FromIterator<usize> for Dims {
    fn from_iter<I: IntoIterator<Item = usize>>(it: I) -> Dims {
        let it = it.into_iter();
        let mut a = [0; INLINE];
        let mut n = 0;
        let mut heap: Option<Vec<usize>> = None;
        for v in it {
            match &mut heap {
                Some(h) => h.push(v),
                None if n < INLINE => {
                    a[n] = v;
                    n += 1;
                }
                None => {
                    let mut h = a.to_vec();
                    h.push(v);
                    heap = Some(h);
                }
            }
        }
        heap.map_or(Dims::Inline(n as u8, a), Dims::Heap)
    }
}

impl<'a> IntoIterator for &'a Dims {
    type Item = &'a usize;
    type IntoIter = std::slice::Iter<'a, usize>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for Dims {
    fn eq(&self, o: &Dims) -> bool {
        **self == **o
    }
}

/// A checked strided descriptor (source and destination strides share the counts).
#[derive(Clone, Debug)]
pub struct Strided {
    /// `count[0..=levels]` (bytes, then repetitions per level).
    pub count: Dims,
    /// Source strides, `levels` of them.
    pub src: Dims,
    /// Destination strides, `levels` of them.
    pub dst: Dims,
    /// Extents of the two sides (bytes from the first to past the last; 0 if nothing
    /// moves).
    src_ext: usize,
    dst_ext: usize,
}

/// Checks one side's strides against the counts, writes them to `out` (as long as
/// `stride`) and returns the side's extent.
#[inline]
fn fill_side<T: Copy + Into<i64>>(
    side: &str,
    count: &[usize],
    stride: &[T],
    out: &mut [usize],
) -> Result<usize> {
    let mut span = count[0];
    for (l, (&s, o)) in stride.iter().zip(out.iter_mut()).enumerate() {
        if count[l + 1] == 1 {
            // One block at this level: its stride is never applied, whatever it says
            // (Global Arrays passes its buffer's leading dimension, which may be less than
            // a one-column patch's bytes). Kept as the span, so the descriptor stays
            // well-formed for the message path's target, which checks it again.
            *o = span;
            continue;
        }
        let s: i64 = s.into();
        if s < 0 || (s as usize) < span {
            return Err(overlap(side, l, s, span, count));
        }
        let s = s as usize;
        span = s
            .checked_mul(count[l + 1] - 1)
            .and_then(|v| v.checked_add(span))
            .ok_or_else(|| overflows(side))?;
        *o = s;
    }
    Ok(span)
}

// The errors, out of the checks' way (every strided call runs them).
#[cold]
#[inline(never)]
fn overlap(side: &str, l: usize, s: i64, span: usize, count: &[usize]) -> Error {
    Error::BadStrides(format!(
        "{side} stride[{l}] = {s} is smaller than the {span} bytes of level {l} (count[0..={l}] = {:?}): blocks would overlap",
        &count[..=l]
    ))
}
#[cold]
#[inline(never)]
fn overflows(side: &str) -> Error {
    Error::BadStrides(format!("{side} extent overflows"))
}
#[cold]
#[inline(never)]
fn bad_lengths(src: usize, dst: usize, count: usize) -> Error {
    Error::BadStrides(format!(
        "{src} source strides, {dst} destination strides and {count} counts (need L, L and L+1)"
    ))
}
#[cold]
#[inline(never)]
fn negative(i: usize, c: i64) -> Error {
    Error::BadStrides(format!("count[{i}] = {c} is negative"))
}

impl Strided {
    /// Checks `count[0..=levels]` and both stride arrays (`levels` entries each; C's
    /// `int` arrays as they are, or 64-bit ones).
    pub fn new<T: Copy + Into<i64>>(src: &[T], dst: &[T], count: &[T]) -> Result<Strided> {
        let levels = src.len();
        if dst.len() != levels || count.len() != levels + 1 {
            return Err(bad_lengths(src.len(), dst.len(), count.len()));
        }
        // Built in place: the descriptor is not moved between checks.
        let mut d = Strided {
            count: Dims::zeros(levels + 1),
            src: Dims::zeros(levels),
            dst: Dims::zeros(levels),
            src_ext: 0,
            dst_ext: 0,
        };
        let mut empty = false;
        for (i, (&c, o)) in count.iter().zip(d.count.iter_mut()).enumerate() {
            let c: i64 = c.into();
            if c < 0 {
                return Err(negative(i, c));
            }
            empty |= c == 0;
            *o = c as usize;
        }
        if empty {
            // Nothing to move; strides are not looked at.
            return Ok(d);
        }
        d.src_ext = fill_side("source", &d.count, src, &mut d.src)?;
        d.dst_ext = fill_side("destination", &d.count, dst, &mut d.dst)?;
        Ok(d)
    }

    /// The same counts with the source side densely packed (what a message carries).
    pub fn packed_source(&self) -> Strided {
        let mut span = self.count.first().copied().unwrap_or(0);
        let src: Dims = self.count[1..]
            .iter()
            .map(|c| {
                let s = span;
                span *= c;
                s
            })
            .collect();
        Strided {
            count: self.count.clone(),
            src,
            dst: self.dst.clone(),
            src_ext: self.bytes(),
            dst_ext: self.dst_ext,
        }
    }

    /// The same transfer seen from the other side (source and destination swapped).
    pub fn swapped(&self) -> Strided {
        Strided {
            count: self.count.clone(),
            src: self.dst.clone(),
            dst: self.src.clone(),
            src_ext: self.dst_ext,
            dst_ext: self.src_ext,
        }
    }

    /// The wire form of the counts and destination strides: `levels + 1` counts, then
    /// `levels` strides, each a little-endian u64.
    pub fn encode_dst(&self) -> Vec<u8> {
        self.count
            .iter()
            .chain(&self.dst)
            .flat_map(|v| (*v as u64).to_le_bytes())
            .collect()
    }

    /// Parses [`Strided::encode_dst`] for `levels` levels (the source side packed),
    /// checked as [`Strided::new`]; returns it and the bytes it used.
    pub fn decode_dst(levels: usize, b: &[u8]) -> Result<(Strided, usize)> {
        let words = 2 * levels + 1;
        if b.len() < 8 * words {
            return Err(Error::BadStrides(format!(
                "a {}-byte descriptor for {levels} levels",
                b.len()
            )));
        }
        let v: Vec<i64> = b[..8 * words]
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        let (count, dst) = v.split_at(levels + 1);
        let probe = Strided::new(dst, dst, count)?;
        Ok((probe.packed_source(), 8 * words))
    }

    /// Bytes moved (0 if a count is 0).
    pub fn bytes(&self) -> usize {
        self.count.iter().product()
    }

    /// Extent in bytes of the source side (from the first byte to past the last).
    pub fn src_extent(&self) -> usize {
        self.src_ext
    }

    /// Extent in bytes of the destination side.
    pub fn dst_extent(&self) -> usize {
        self.dst_ext
    }

    /// Copies every block from `src` to `dst` (the direct path's strided put and get).
    ///
    /// # Safety
    /// `src` is readable over the source extent, `dst` writable over the destination
    /// extent; the two may overlap only as [`std::ptr::copy`] allows.
    #[inline]
    pub unsafe fn copy(&self, src: *const u8, dst: *mut u8) {
        let _ = self.for_each(|so, doff, n| {
            // SAFETY: both blocks lie in their extents (the caller's contract).
            unsafe { skifch::mem::copy_move(src.add(so), dst.add(doff), n) };
            Ok::<(), ()>(())
        });
    }

    /// Calls `f(src_offset, dst_offset, len)` for every contiguous block, in order.
    #[inline]
    pub fn for_each<E>(
        &self,
        mut f: impl FnMut(usize, usize, usize) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        if self.bytes() == 0 {
            return Ok(());
        }
        let levels = self.src.len();
        if levels == 1 {
            // 2-D, the common case (a patch of a matrix): one loop, no odometer.
            let (s, d, n) = (self.src[0], self.dst[0], self.count[0]);
            for i in 0..self.count[1] {
                f(i * s, i * d, n)?;
            }
            return Ok(());
        }
        let mut idx = Dims::zeros(levels);
        loop {
            let (mut so, mut d) = (0, 0);
            for ((i, s), t) in idx.iter().zip(&self.src).zip(&self.dst) {
                so += i * s;
                d += i * t;
            }
            f(so, d, self.count[0])?;
            // odometer over levels 1..=levels
            let mut l = 0;
            loop {
                if l == levels {
                    return Ok(());
                }
                idx[l] += 1;
                if idx[l] < self.count[l + 1] {
                    break;
                }
                idx[l] = 0;
                l += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_extents_and_checks() {
        let s = Strided::new(&[10, 50], &[4, 12], &[3, 3, 2]).unwrap();
        let mut v = Vec::new();
        s.for_each(|a, b, n| {
            v.push((a, b, n));
            Ok::<_, ()>(())
        })
        .unwrap();
        assert_eq!(
            v,
            [
                (0, 0, 3),
                (10, 4, 3),
                (20, 8, 3),
                (50, 12, 3),
                (60, 16, 3),
                (70, 20, 3)
            ]
        );
        assert_eq!((s.bytes(), s.src_extent(), s.dst_extent()), (18, 73, 23));
        assert!(Strided::new(&[2], &[4], &[3, 2]).is_err());
        assert!(Strided::new(&[10, 20], &[4, 12], &[3, 3, 2]).is_err());
        assert!(Strided::new(&[4], &[4], &[-1, 2]).is_err());
        assert!(Strided::new(&[4], &[4, 4], &[1, 2]).is_err());
        assert_eq!(Strided::new(&[], &[], &[7]).unwrap().dst_extent(), 7);
        // A level of one block: its stride is never applied (Global Arrays' 1-column
        // patches pass a stride below the block's bytes).
        let one = Strided::new(&[-3, 1200], &[8, 1200], &[1200, 1, 2]).unwrap();
        assert_eq!(
            (one.src_extent(), one.dst_extent(), one.bytes()),
            (2400, 2400, 2400)
        );
        assert!(Strided::new(&[8, 8], &[8, 8], &[1200, 2, 1]).is_err());
    }

    #[test]
    fn deep_descriptors_spill_to_the_heap() {
        // 5 levels: 6 counts, more than INLINE, in the heap form; same answers as inline
        let c = [2i32, 2, 2, 2, 2, 2];
        let st = [4i32, 8, 16, 32, 64];
        let s = Strided::new(&st, &st, &c).unwrap();
        assert!(matches!(s.count, Dims::Heap(_)) && matches!(s.src, Dims::Heap(_)));
        let mut offs = Vec::new();
        s.for_each(|a, b, n| {
            assert_eq!((a, n), (b, 2));
            offs.push(a);
            Ok::<_, ()>(())
        })
        .unwrap();
        assert_eq!(offs, (0..32).map(|i| i * 4).collect::<Vec<_>>());
        assert_eq!((s.bytes(), s.src_extent(), s.dst_extent()), (64, 126, 126));
        let p = s.packed_source();
        assert_eq!(&p.src[..], &[2, 4, 8, 16, 32]);
        assert_eq!((p.src_extent(), p.swapped().dst_extent()), (64, 64));
        let (d, used) = Strided::decode_dst(5, &s.encode_dst()).unwrap();
        assert_eq!(
            (used, &d.dst[..], d.dst_extent()),
            (88, &st.map(|v| v as usize)[..], 126)
        );
    }
}
