//! Accumulate kernels: `dst[i] += scale * src[i]` for the six ARMCI types, each element
//! updated atomically (a compare-and-swap loop on its 4 or 8 bytes; complex numbers as
//! two independent parts), so accumulates of several ranks to one location sum exactly
//! in integer types and never lose an update in any type. The same kernel serves the
//! direct path (the target mapped here) and the message path's handler (the target's own
//! memory).
#![allow(unsafe_code)] // memory other ranks may write: reached only through atomics

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::{Error, Result};

/// An accumulate type (`enum ARMCI_Acc_e` of armci.h, same numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccType {
    /// `ARMCI_ACC_INT`: C `int`.
    Int = 0,
    /// `ARMCI_ACC_LNG`: C `long`.
    Long = 1,
    /// `ARMCI_ACC_FLT`: `float`.
    Float = 2,
    /// `ARMCI_ACC_DBL`: `double`.
    Double = 3,
    /// `ARMCI_ACC_CPL`: single-precision complex (two floats).
    Complex = 4,
    /// `ARMCI_ACC_DCP`: double-precision complex (two doubles).
    DoubleComplex = 5,
}

impl AccType {
    /// The type of armci.h's code `c`.
    pub fn from_code(c: i64) -> Result<AccType> {
        Ok(match c {
            0 => AccType::Int,
            1 => AccType::Long,
            2 => AccType::Float,
            3 => AccType::Double,
            4 => AccType::Complex,
            5 => AccType::DoubleComplex,
            _ => {
                return Err(Error::BadArgument(format!(
                    "accumulate type {c} is not one of ARMCI_ACC_INT/LNG/FLT/DBL/CPL/DCP"
                )))
            }
        })
    }

    /// Bytes of one element (a complex number counts as one).
    pub fn size(self) -> usize {
        match self {
            AccType::Int | AccType::Float => 4,
            AccType::Long | AccType::Double | AccType::Complex => 8,
            AccType::DoubleComplex => 16,
        }
    }

    /// Bytes of the scale argument (the element type).
    pub fn scale_size(self) -> usize {
        self.size()
    }

    /// Width of the atomic word the kernel updates (a complex number's part).
    fn word(self) -> usize {
        match self {
            AccType::Int | AccType::Float | AccType::Complex => 4,
            AccType::Long | AccType::Double | AccType::DoubleComplex => 8,
        }
    }
}

/// A scale value as two 64-bit words (the raw bytes of the C scale, zero-padded), so it
/// travels in a message header.
pub type Scale = [u64; 2];

/// Reads the scale of type `t` from C memory.
///
/// # Safety
/// `p` is readable for `t.scale_size()` bytes.
pub unsafe fn read_scale(t: AccType, p: *const u8) -> Scale {
    let mut b = [0u8; 16];
    // SAFETY: the caller's contract; `b` has room for 16 bytes.
    unsafe { std::ptr::copy_nonoverlapping(p, b.as_mut_ptr(), t.scale_size()) };
    let (lo, hi) = b.split_at(8);
    [
        u64::from_le_bytes(lo.try_into().unwrap_or([0; 8])),
        u64::from_le_bytes(hi.try_into().unwrap_or([0; 8])),
    ]
}

/// Checks that `len` bytes at `dst` hold whole, aligned elements of `t`.
pub fn check(t: AccType, dst: usize, len: usize) -> Result<()> {
    if !len.is_multiple_of(t.size()) {
        return Err(Error::BadArgument(format!(
            "{len} bytes are not a whole number of {t:?} elements ({} bytes each)",
            t.size()
        )));
    }
    if !dst.is_multiple_of(t.word()) {
        return Err(Error::BadArgument(format!(
            "accumulate target {dst:#x} is not aligned to {} bytes",
            t.word()
        )));
    }
    Ok(())
}

/// `dst[i] += scale * src[i]` for the `len` bytes (whole elements, [`check`]ed). Complex
/// elements use the complex product; each part is then added atomically on its own.
///
/// # Safety
/// `src` is readable for `len` bytes; `dst` is valid for `len` bytes, aligned as [`check`]
/// requires, and accessed by others only atomically or by raw copies.
pub unsafe fn apply(t: AccType, scale: Scale, src: *const u8, dst: *mut u8, len: usize) {
    let w = t.word();
    let sz = t.size();
    for e in (0..len).step_by(sz) {
        // The source element's words (unaligned reads: the source is any C buffer).
        let mut x = [0u64; 2];
        for (k, xk) in x.iter_mut().enumerate().take(sz / w) {
            // SAFETY: `e + (k + 1)·w <= len`: readable by the caller's contract.
            let p = unsafe { src.add(e + k * w) };
            *xk = if w == 4 {
                // SAFETY: as above.
                u64::from(unsafe { p.cast::<u32>().read_unaligned() })
            } else {
                // SAFETY: as above.
                unsafe { p.cast::<u64>().read_unaligned() }
            };
        }
        for k in 0..sz / w {
            // SAFETY: `e + (k + 1)·w <= len`, aligned to `w` (checked), valid by contract.
            let d = unsafe { dst.add(e + k * w) };
            if w == 4 {
                // SAFETY: `d` is aligned, valid, and only accessed atomically by others.
                let a = unsafe { AtomicU32::from_ptr(d.cast()) };
                let f = |old: u32| add32(t, scale, x, k, old);
                let _ = a.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |o| Some(f(o)));
            } else {
                // SAFETY: as above, for 8 bytes.
                let a = unsafe { AtomicU64::from_ptr(d.cast()) };
                let f = |old: u64| add64(t, scale, x, k, old);
                let _ = a.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |o| Some(f(o)));
            }
        }
    }
}

/// `old + (scale · x)[part]` for the 4-byte words (int, float, single complex: the scale's
/// real part in the low and its imaginary part in the high half of `scale[0]`).
fn add32(t: AccType, scale: Scale, x: [u64; 2], part: usize, old: u32) -> u32 {
    let f = |v: u64| f32::from_bits(v as u32);
    match t {
        AccType::Int => (old as i32)
            .wrapping_add((scale[0] as u32 as i32).wrapping_mul(x[0] as u32 as i32))
            as u32,
        AccType::Float => (f32::from_bits(old) + f(scale[0]) * f(x[0])).to_bits(),
        _ => {
            let (sr, si) = (f(scale[0]), f(scale[0] >> 32));
            let (xr, xi) = (f(x[0]), f(x[1]));
            let inc = if part == 0 {
                sr * xr - si * xi
            } else {
                sr * xi + si * xr
            };
            (f32::from_bits(old) + inc).to_bits()
        }
    }
}

/// As [`add32`] for the 8-byte words (long, double, double complex: scale `(re, im)`).
fn add64(t: AccType, scale: Scale, x: [u64; 2], part: usize, old: u64) -> u64 {
    let f = f64::from_bits;
    match t {
        AccType::Long => {
            (old as i64).wrapping_add((scale[0] as i64).wrapping_mul(x[0] as i64)) as u64
        }
        AccType::Double => (f(old) + f(scale[0]) * f(x[0])).to_bits(),
        _ => {
            let (sr, si) = (f(scale[0]), f(scale[1]));
            let (xr, xi) = (f(x[0]), f(x[1]));
            let inc = if part == 0 {
                sr * xr - si * xi
            } else {
                sr * xi + si * xr
            };
            (f(old) + inc).to_bits()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels() {
        let mut d = [1.0f64, 2.0, 3.0, 4.0];
        let s = [1.0f64, 1.0, 2.0, -1.0];
        // double complex (1+2i) += (2+1i)(1+1i) = 1+3i → (2, 5); (3+4i) += (2+i)(2-i) = 5 → (8, 4)
        let sc = [2.0f64.to_bits(), 1.0f64.to_bits()];
        // SAFETY: local arrays of 32 bytes, aligned.
        unsafe {
            apply(
                AccType::DoubleComplex,
                sc,
                s.as_ptr().cast(),
                d.as_mut_ptr().cast(),
                32,
            )
        };
        assert_eq!(d, [2.0, 5.0, 8.0, 4.0]);
        let mut i = [5i32, -7];
        let si = [3i32, 2];
        // SAFETY: as above, 8 bytes.
        unsafe {
            apply(
                AccType::Int,
                [(-2i32) as u32 as u64, 0],
                si.as_ptr().cast(),
                i.as_mut_ptr().cast(),
                8,
            )
        };
        assert_eq!(i, [-1, -11]);
        assert!(check(AccType::Double, 4, 8).is_err());
        assert!(check(AccType::Double, 8, 12).is_err());
        assert!(AccType::from_code(6).is_err());
    }
}
