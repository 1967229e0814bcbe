//! Strided transfer descriptors (ARMCI's `PutS`/`GetS`/`AccS`): `count[0]` contiguous
//! bytes, repeated `count[1]` times `stride[0]` bytes apart, that block `count[2]` times
//! `stride[1]` apart, and so on for `levels` levels. Checked before any byte moves: counts
//! are positive and each level's stride at least spans the level below it (the blocks do
//! not overlap), on both sides; then the whole access has one known extent per side.

use crate::{Error, Result};

/// A checked strided descriptor (source and destination strides share the counts).
#[derive(Clone, Debug)]
pub struct Strided {
    /// `count[0..=levels]` (bytes, then repetitions per level).
    pub count: Vec<usize>,
    /// Source strides, `levels` of them.
    pub src: Vec<usize>,
    /// Destination strides, `levels` of them.
    pub dst: Vec<usize>,
}

fn check_side(side: &str, count: &[usize], stride: &[i64]) -> Result<Vec<usize>> {
    let mut span = count[0];
    let mut out = Vec::with_capacity(stride.len());
    for (l, &s) in stride.iter().enumerate() {
        if s < 0 || (s as usize) < span {
            return Err(Error::BadStrides(format!(
                "{side} stride[{l}] = {s} is smaller than the {span} bytes of level {l} (count[0..={l}] = {:?}): blocks would overlap",
                &count[..=l]
            )));
        }
        let s = s as usize;
        span = s
            .checked_mul(count[l + 1] - 1)
            .and_then(|v| v.checked_add(span))
            .ok_or_else(|| Error::BadStrides(format!("{side} extent overflows")))?;
        out.push(s);
    }
    Ok(out)
}

impl Strided {
    /// Checks `count[0..=levels]` and both stride arrays (`levels` entries each).
    pub fn new(src: &[i64], dst: &[i64], count: &[i64]) -> Result<Strided> {
        let levels = src.len();
        if dst.len() != levels || count.len() != levels + 1 {
            return Err(Error::BadStrides(format!(
                "{} source strides, {} destination strides and {} counts (need L, L and L+1)",
                src.len(),
                dst.len(),
                count.len()
            )));
        }
        if let Some((i, c)) = count.iter().enumerate().find(|(_, &c)| c < 0) {
            return Err(Error::BadStrides(format!("count[{i}] = {c} is negative")));
        }
        let count: Vec<usize> = count.iter().map(|&c| c as usize).collect();
        if count.contains(&0) {
            // Nothing to move; strides are not looked at.
            return Ok(Strided {
                count,
                src: vec![0; levels],
                dst: vec![0; levels],
            });
        }
        Ok(Strided {
            src: check_side("source", &count, src)?,
            dst: check_side("destination", &count, dst)?,
            count,
        })
    }

    /// The same counts with the source side densely packed (what a message carries).
    pub fn packed_source(&self) -> Strided {
        let mut src = Vec::with_capacity(self.dst.len());
        let mut span = self.count.first().copied().unwrap_or(0);
        for c in &self.count[1..] {
            src.push(span);
            span *= c;
        }
        Strided {
            count: self.count.clone(),
            src,
            dst: self.dst.clone(),
        }
    }

    /// The same transfer seen from the other side (source and destination swapped).
    pub fn swapped(&self) -> Strided {
        Strided {
            count: self.count.clone(),
            src: self.dst.clone(),
            dst: self.src.clone(),
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
        extent(&self.count, &self.src)
    }

    /// Extent in bytes of the destination side.
    pub fn dst_extent(&self) -> usize {
        extent(&self.count, &self.dst)
    }

    /// Calls `f(src_offset, dst_offset, len)` for every contiguous block, in order.
    pub fn for_each<E>(
        &self,
        mut f: impl FnMut(usize, usize, usize) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        if self.bytes() == 0 {
            return Ok(());
        }
        let levels = self.src.len();
        let mut idx = vec![0usize; levels];
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

fn extent(count: &[usize], stride: &[usize]) -> usize {
    if count.contains(&0) {
        return 0;
    }
    count[0]
        + stride
            .iter()
            .zip(&count[1..])
            .map(|(s, c)| s * (c - 1))
            .sum::<usize>()
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
    }
}
