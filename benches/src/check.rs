//! The payload pattern and the receiver's check, as in `../shared/peers/shm_ring.c`:
//! byte `i` of a message is `i·131 + 7`, and the receiver adds up every byte it receives
//! as native-endian 64-bit words (the trailing `len % 8` bytes one by one) and compares
//! the sum with the sender's.

/// The payload pattern of the peers' programs, `len` bytes.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(131).wrapping_add(7) as u8)
        .collect()
}

/// [`pattern`] in a buffer that starts on a cache line, as `shm_ring.c`'s `src_buf`
/// (`aligned_alloc(64, …)`): a sender's alignment changes how many lines a message touches.
pub struct LinePattern {
    buf: Vec<u8>,
    off: usize,
    len: usize,
}

impl LinePattern {
    /// `len` bytes of the pattern.
    pub fn new(len: usize) -> Self {
        let mut buf = vec![0u8; len + 63];
        let off = buf.as_ptr().align_offset(64).min(63);
        buf[off..off + len].copy_from_slice(&pattern(len));
        LinePattern { buf, off, len }
    }
    /// The pattern, starting on a 64-byte boundary.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[self.off..self.off + self.len]
    }
}

/// The sum of `p` as `shm_ring.c`'s `sum64` computes it.
///
/// ```
/// use skifch_benches::check::{sum64, Sum64};
/// let p = skifch_benches::check::pattern(37);
/// let mut s = Sum64::default();
/// s.update(&p[..5]);
/// s.update(&p[5..21]);
/// s.update(&p[21..]);
/// assert_eq!(s.finish(), sum64(&p));
/// ```
pub fn sum64(p: &[u8]) -> u64 {
    let mut s = Sum64::default();
    s.update(p);
    s.finish()
}

/// [`sum64`] of a message that arrived whole, in one piece: the C loop itself, without
/// [`Sum64`]'s carry bookkeeping (the MsgRate receiver's fast path).
#[inline(always)]
pub fn sum64_whole(p: &[u8]) -> u64 {
    let words = p.chunks_exact(8);
    let rest = words.remainder();
    let s = words.fold(0u64, |s, w| {
        s.wrapping_add(u64::from_ne_bytes(w.try_into().expect("8-byte chunk")))
    });
    rest.iter().fold(s, |s, &b| s.wrapping_add(b as u64))
}

/// [`sum64`] over a message that arrives in pieces (segments of a message that wraps the
/// ring end, fragments of a partial send): the result does not depend on where it was cut.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sum64 {
    sum: u64,
    carry: [u8; 8],
    /// Bytes waiting in `carry` to complete a word (0..8).
    pending: usize,
}

impl Sum64 {
    /// Adds the next piece of the message.
    #[inline]
    pub fn update(&mut self, mut p: &[u8]) {
        if self.pending != 0 {
            let k = (8 - self.pending).min(p.len());
            self.carry[self.pending..self.pending + k].copy_from_slice(&p[..k]);
            self.pending += k;
            p = &p[k..];
            if self.pending < 8 {
                return;
            }
            self.sum = self.sum.wrapping_add(u64::from_ne_bytes(self.carry));
            self.pending = 0;
        }
        // Payloads in the lanes are 8-byte aligned: peel one word when that leaves the rest
        // 16-byte aligned, so the vectorised loop's loads never straddle a cache line.
        if p.as_ptr() as usize % 16 == 8 && p.len() >= 24 {
            let mut b = [0u8; 8];
            b.copy_from_slice(&p[..8]);
            self.sum = self.sum.wrapping_add(u64::from_ne_bytes(b));
            p = &p[8..];
        }
        let words = p.chunks_exact(8);
        let rest = words.remainder();
        for w in words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.sum = self.sum.wrapping_add(u64::from_ne_bytes(b));
        }
        if !rest.is_empty() {
            self.carry[..rest.len()].copy_from_slice(rest);
            self.pending = rest.len();
        }
    }

    /// The sum of everything added so far.
    #[inline]
    pub fn finish(&self) -> u64 {
        self.carry[..self.pending]
            .iter()
            .fold(self.sum, |s, &b| s.wrapping_add(b as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(p: &[u8]) -> u64 {
        // The C loop, literally.
        let mut s = 0u64;
        let mut i = 0;
        while i + 8 <= p.len() {
            s = s.wrapping_add(u64::from_ne_bytes(p[i..i + 8].try_into().unwrap()));
            i += 8;
        }
        p[i..].iter().fold(s, |s, &b| s.wrapping_add(b as u64))
    }

    #[test]
    fn whole_sum_is_the_c_loop() {
        for len in [0usize, 1, 7, 8, 9, 16, 23, 64, 65, 4096, 4101] {
            let p = pattern(len);
            assert_eq!(sum64_whole(&p), reference(&p), "len {len}");
            let q = p.get(1..).unwrap_or_default();
            assert_eq!(sum64_whole(q), reference(q), "len {len}, unaligned");
        }
    }

    #[test]
    fn every_split_gives_the_same_sum() {
        for len in [0usize, 1, 7, 8, 9, 16, 23, 64, 65] {
            let p = pattern(len);
            let want = reference(&p);
            assert_eq!(sum64(&p), want, "len {len}");
            for a in 0..=len {
                for b in a..=len {
                    let mut s = Sum64::default();
                    s.update(&p[..a]);
                    s.update(&p[a..b]);
                    s.update(&p[b..]);
                    assert_eq!(s.finish(), want, "len {len} cut at {a},{b}");
                }
            }
        }
    }

    #[test]
    fn a_changed_byte_changes_the_sum() {
        let p = pattern(100);
        let mut q = p.clone();
        q[57] ^= 0x10;
        assert_ne!(sum64(&p), sum64(&q));
    }

    #[test]
    fn line_pattern_is_aligned_and_equal() {
        for len in [1, 64, 1000] {
            let p = LinePattern::new(len);
            assert_eq!(p.as_slice().as_ptr() as usize % 64, 0);
            assert_eq!(p.as_slice(), &pattern(len)[..]);
        }
    }

    #[test]
    fn pattern_matches_the_peers() {
        let p = pattern(300);
        assert_eq!(&p[..3], &[7, 138, 13]);
        assert_eq!(p[256], 7);
    }
}
