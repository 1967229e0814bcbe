//! The "external32" data representation (MPI-3.1 §13.5.2, Table 13.2): big-endian,
//! IEEE formats, fixed sizes (`long` is 4 bytes, `long double` IEEE quad). Used by
//! `MPI_Pack_external` / `Unpack_external` / `Pack_external_size` on any type: the
//! predefined values are converted one by one in the order of the type's signature.

use super::{Basic, Datatype};
use crate::error::{class, Error, Result};

/// How one component of a predefined element converts (native packed ↔ external32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// `n` bytes, byte order swapped (n = 1: copied).
    Swap(usize),
    /// A native 8-byte integer that is 4 bytes in external32 (`long`); signed or not.
    Narrow(bool),
    /// A native `long double` (x86-64: 80-bit extended in 16 bytes) as IEEE quad.
    Quad,
}

fn parts(b: Basic) -> &'static [Part] {
    use Basic::*;
    use Part::*;
    if let Some(c) = b.c_twin() {
        return parts(c);
    }
    match b {
        Char | SignedChar | UnsignedChar | Byte | Packed | CBool | CxxBool | Int8 | Uint8 => {
            &[Swap(1)]
        }
        Short | UnsignedShort | Int16 | Uint16 => &[Swap(2)],
        Int | Unsigned | WChar | Int32 | Uint32 | Float => &[Swap(4)],
        LongLong | UnsignedLongLong | Int64 | Uint64 | Double | Aint | Offset | Count => &[Swap(8)],
        Long => &[Narrow(true)],
        UnsignedLong => &[Narrow(false)],
        LongDouble => &[Quad],
        CFloatComplex | CxxFloatComplex | FloatInt | TwoInt | TwoReal => &[Swap(4), Swap(4)],
        CDoubleComplex | CxxDoubleComplex | TwoDoublePrecision => &[Swap(8), Swap(8)],
        CLongDoubleComplex | CxxLongDoubleComplex => &[Quad, Quad],
        DoubleInt => &[Swap(8), Swap(4)],
        LongInt => &[Narrow(true), Swap(4)],
        ShortInt => &[Swap(2), Swap(4)],
        LongDoubleInt => &[Quad, Swap(4)],
        _ => &[Swap(1)], // every Fortran type has a C twin or is listed above
    }
}

fn sizes(p: Part) -> (usize, usize) {
    match p {
        Part::Swap(n) => (n, n),
        Part::Narrow(_) => (8, 4),
        Part::Quad => (16, 16),
    }
}

/// External32 bytes of one value of `b`.
fn ext_size(b: Basic) -> usize {
    parts(b).iter().map(|&p| sizes(p).1).sum()
}

/// Bytes of `count` elements of `dt` in external32 (`MPI_Pack_external_size`).
pub fn external32_size(dt: &Datatype, count: usize) -> Result<usize> {
    let mut one = 0usize;
    dt.0.sig
        .try_for_each_run(&mut |b, n| {
            one = ext_size(b)
                .checked_mul(n)
                .and_then(|x| x.checked_add(one))
                .ok_or(())?;
            std::result::Result::<(), ()>::Ok(())
        })
        .ok()
        .and_then(|()| one.checked_mul(count))
        .ok_or_else(|| Error::Count(format!("{count} elements overflow the external32 size")))
}

/// Calls `f(b, n)` for the runs of predefined values in `len` packed bytes of `dt`
/// elements, in order (a homogeneous type is one run, whatever the count).
fn for_each_run(
    dt: &Datatype,
    len: usize,
    mut f: impl FnMut(Basic, usize) -> Result<()>,
) -> Result<()> {
    if let Some((b, _)) = dt.homogeneous() {
        return match len.checked_div(b.packed_size()) {
            Some(n) => f(b, n),
            None => Ok(()),
        };
    }
    let size = dt.size();
    if size == 0 {
        return Ok(());
    }
    (0..len / size).try_for_each(|_| dt.0.sig.try_for_each_run(&mut f))
}

fn conversion(msg: String) -> Error {
    Error::Code {
        code: class::CONVERSION,
        msg: format!("MPI_ERR_CONVERSION: {msg}"),
    }
}

/// x87 80-bit extended (in the low 10 of 16 bytes, little-endian) → IEEE quad, big-endian.
#[cfg(target_arch = "x86_64")]
fn ld_out(n: &[u8], out: &mut [u8]) {
    let m = u64::from_le_bytes(n[..8].try_into().expect("8 bytes"));
    let se = u16::from_le_bytes([n[8], n[9]]) as u128;
    // Same sign and exponent (bias 16383); the explicit integer bit is implicit in quad.
    let q = (se << 112) | (((m & !(1 << 63)) as u128) << 49);
    out.copy_from_slice(&q.to_be_bytes());
}

#[cfg(target_arch = "x86_64")]
fn ld_in(e: &[u8], n: &mut [u8]) {
    let q = u128::from_be_bytes(e.try_into().expect("16 bytes"));
    let se = (q >> 112) as u16;
    let int_bit = if se & 0x7fff != 0 { 1u64 << 63 } else { 0 };
    let m = ((q >> 49) as u64 & !(1 << 63)) | int_bit;
    n[..8].copy_from_slice(&m.to_le_bytes());
    n[8..10].copy_from_slice(&se.to_le_bytes());
    n[10..].fill(0);
}

// Elsewhere (aarch64 Linux) `long double` is IEEE quad already: a byte swap.
#[cfg(not(target_arch = "x86_64"))]
fn ld_out(n: &[u8], out: &mut [u8]) {
    reversed(n, out)
}

#[cfg(not(target_arch = "x86_64"))]
fn ld_in(e: &[u8], n: &mut [u8]) {
    ld_out(e, n)
}

/// `dst` = `src` in the other byte order.
fn reversed(src: &[u8], dst: &mut [u8]) {
    for (d, s) in dst.iter_mut().zip(src.iter().rev()) {
        *d = *s;
    }
}

/// Converts packed native bytes of `dt` elements into external32 (`out` is exactly
/// [`external32_size`] long).
pub fn to_external32(dt: &Datatype, native: &[u8], out: &mut [u8]) -> Result<()> {
    let (mut i, mut o) = (0, 0);
    for_each_run(dt, native.len(), |b, n| {
        for _ in 0..n {
            for &p in parts(b) {
                let (ni, no) = sizes(p);
                let (src, dst) = (&native[i..i + ni], &mut out[o..o + no]);
                match p {
                    Part::Swap(_) => reversed(src, dst),
                    Part::Narrow(signed) => {
                        let v = i64::from_ne_bytes(src.try_into().expect("8 bytes"));
                        let fits = if signed {
                            i32::try_from(v).is_ok()
                        } else {
                            u32::try_from(v as u64).is_ok()
                        };
                        if !fits {
                            return Err(conversion(format!(
                                "{} value {v} does not fit the 4 bytes of external32",
                                b.name()
                            )));
                        }
                        dst.copy_from_slice(&(v as u32).to_be_bytes());
                    }
                    Part::Quad => ld_out(src, dst),
                }
                i += ni;
                o += no;
            }
        }
        Ok(())
    })
}

/// Converts external32 bytes back into packed native bytes of `dt` elements.
pub fn from_external32(dt: &Datatype, ext: &[u8], native: &mut [u8]) -> Result<()> {
    let (mut i, mut o) = (0, 0);
    for_each_run(dt, native.len(), |b, n| {
        for _ in 0..n {
            for &p in parts(b) {
                let (ni, no) = sizes(p);
                let (dst, src) = (&mut native[i..i + ni], &ext[o..o + no]);
                match p {
                    Part::Swap(_) => reversed(src, dst),
                    Part::Narrow(signed) => {
                        let v = u32::from_be_bytes(src.try_into().expect("4 bytes"));
                        let w = if signed { v as i32 as i64 } else { v as i64 };
                        dst.copy_from_slice(&w.to_ne_bytes());
                    }
                    Part::Quad => ld_in(src, dst),
                }
                i += ni;
                o += no;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_are_big_endian_and_long_is_four_bytes() {
        let int = Datatype::basic(Basic::Int);
        let mut out = [0u8; 8];
        to_external32(&int, &[1, 0, 0, 0, 0, 1, 0, 0], &mut out).unwrap();
        assert_eq!(out, [0, 0, 0, 1, 0, 0, 1, 0]);
        let long = Datatype::basic(Basic::Long);
        assert_eq!(external32_size(&long, 3).unwrap(), 12);
        let mut e = [0u8; 4];
        to_external32(&long, &(-2i64).to_ne_bytes(), &mut e).unwrap();
        let mut back = [0u8; 8];
        from_external32(&long, &e, &mut back).unwrap();
        assert_eq!(i64::from_ne_bytes(back), -2);
        let big = (1i64 << 40).to_ne_bytes();
        assert_eq!(
            to_external32(&long, &big, &mut e).unwrap_err().class(),
            class::CONVERSION
        );
    }

    #[test]
    fn doubles_and_pairs_round_trip() {
        let di = Datatype::basic(Basic::DoubleInt);
        let mut native = Vec::new();
        native.extend_from_slice(&1.5f64.to_ne_bytes());
        native.extend_from_slice(&7i32.to_ne_bytes());
        let mut e = vec![0u8; external32_size(&di, 1).unwrap()];
        to_external32(&di, &native, &mut e).unwrap();
        assert_eq!(&e[..8], &1.5f64.to_be_bytes());
        let mut back = vec![0u8; 12];
        from_external32(&di, &e, &mut back).unwrap();
        assert_eq!(back, native);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn long_double_is_ieee_quad() {
        // 1.0L in x87: mantissa 1 << 63, exponent 16383.
        let mut one = [0u8; 16];
        one[..8].copy_from_slice(&(1u64 << 63).to_le_bytes());
        one[8..10].copy_from_slice(&16383u16.to_le_bytes());
        let mut q = [0u8; 16];
        ld_out(&one, &mut q);
        assert_eq!(q[..2], [0x3f, 0xff]); // quad 1.0 = 0x3fff 0000…
        assert!(q[2..].iter().all(|&x| x == 0));
        let mut back = [0u8; 16];
        ld_in(&q, &mut back);
        assert_eq!(back, one);
    }
}
