//! Non-contiguous transfers (`gasnet_vis.h`): vector, indexed and strided descriptions of
//! both sides are flattened into lists of contiguous (address, length) pieces, paired
//! up, and moved with the contiguous put/get of [`crate::rma`] (on the direct path each
//! piece is a copy into or out of the mapped segment). Whatever a description does not
//! name is never touched.
#![allow(unsafe_code)] // the pieces are raw addresses of the caller's buffers

use skifch::Port;

use crate::engine::Gasnet;
use crate::rma::Pending;
use crate::{Error, Result};

/// Contiguous pieces: (address, length).
pub type Pieces = Vec<(usize, usize)>;

/// The pieces of a strided region (GASNet-EX convention): `count[d]` elements along
/// dimension `d` (0 fastest), `strides[d]` bytes apart, each element `elemsz` contiguous
/// bytes. Adjacent elements merge into one piece.
pub fn strided(base: usize, strides: &[isize], elemsz: usize, count: &[usize]) -> Result<Pieces> {
    if strides.len() != count.len() {
        return Err(Error::BadArgument(format!(
            "{} strides for {} dimensions",
            strides.len(),
            count.len()
        )));
    }
    let total: usize = count.iter().product();
    let mut out: Pieces = Vec::new();
    if total == 0 || elemsz == 0 {
        return Ok(out);
    }
    let mut idx = vec![0usize; count.len()];
    for _ in 0..total {
        let mut a = base as isize;
        for (d, &i) in idx.iter().enumerate() {
            a += i as isize * strides[d];
        }
        let a = a as usize;
        match out.last_mut() {
            Some(last) if last.0 + last.1 == a => last.1 += elemsz,
            _ => out.push((a, elemsz)),
        }
        for d in 0..idx.len() {
            idx[d] += 1;
            if idx[d] < count[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(out)
}

/// Pairs two piece lists of the same total length into (dst, src, len) transfers.
pub fn pair(dst: &[(usize, usize)], src: &[(usize, usize)]) -> Result<Vec<(usize, usize, usize)>> {
    let (td, ts): (usize, usize) = (dst.iter().map(|p| p.1).sum(), src.iter().map(|p| p.1).sum());
    if td != ts {
        return Err(Error::BadArgument(format!(
            "the destination describes {td} bytes, the source {ts}"
        )));
    }
    let mut out = Vec::new();
    let (mut i, mut j, mut oi, mut oj) = (0, 0, 0, 0);
    while i < dst.len() && j < src.len() {
        let (d, s) = (dst[i], src[j]);
        let n = (d.1 - oi).min(s.1 - oj);
        if n > 0 {
            out.push((d.0 + oi, s.0 + oj, n));
        }
        oi += n;
        oj += n;
        if oi == d.1 {
            i += 1;
            oi = 0;
        }
        if oj == s.1 {
            j += 1;
            oj = 0;
        }
    }
    Ok(out)
}

impl<P: Port> Gasnet<P> {
    /// Puts the local pieces `src` into `rank`'s segment at `dst` (paired in order).
    ///
    /// # Safety
    /// Every source piece is readable.
    pub unsafe fn put_pieces(
        &self,
        rank: u32,
        dst: &[(usize, usize)],
        src: &[(usize, usize)],
    ) -> Result<Pending> {
        let plan = pair(dst, src)?;
        let segs = self.segs().ok_or(Error::NotAttached)?;
        for &(d, _, n) in &plan {
            segs.offset(rank, d, n)?; // all checked before anything moves
        }
        let mut all = Pending::default();
        for (d, s, n) in plan {
            // SAFETY: the caller vouches for the source pieces.
            let p = unsafe { self.put(rank, d, s as *const u8, n) }?;
            all.0.extend(p.0);
        }
        Ok(all)
    }

    /// Gets `rank`'s pieces `src` into the local pieces `dst`.
    ///
    /// # Safety
    /// Every destination piece is writable and untouched until completion.
    pub unsafe fn get_pieces(
        &self,
        dst: &[(usize, usize)],
        rank: u32,
        src: &[(usize, usize)],
    ) -> Result<Pending> {
        let plan = pair(dst, src)?;
        let segs = self.segs().ok_or(Error::NotAttached)?;
        for &(_, s, n) in &plan {
            segs.offset(rank, s, n)?;
        }
        let mut all = Pending::default();
        for (d, s, n) in plan {
            // SAFETY: the caller vouches for the destination pieces.
            let p = unsafe { self.get(d as *mut u8, rank, s, n) }?;
            all.0.extend(p.0);
        }
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_pieces_merge_and_pair() {
        // 3 rows of 2 elements of 4 bytes, rows 16 bytes apart.
        let p = strided(100, &[4, 16], 4, &[2, 3]).unwrap();
        assert_eq!(p, vec![(100, 8), (116, 8), (132, 8)]);
        let q = pair(&[(0, 10), (20, 14)], &p).unwrap();
        assert_eq!(
            q,
            vec![(0, 100, 8), (8, 116, 2), (20, 118, 6), (26, 132, 8)]
        );
        assert!(pair(&[(0, 1)], &p).is_err());
    }
}
