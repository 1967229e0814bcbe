//! A port's queue of received messages ([`super::port`]'s `Ready`): a ring of a power-of-two
//! capacity, grown by doubling when full. `VecDeque`'s `push_back` stayed out of line once
//! the record walker was inlined into the completion handler, and its `pop_front` wraps by
//! compare and subtract: ~40 instructions a message on the latency path against ~15 here.
//! (Growth, while a stream first fills the queue, zeroes the new half: a warm-up cost, as
//! `VecDeque`'s reallocation.)

/// A FIFO of `T`.
pub struct Ring<T> {
    buf: Vec<T>,
    /// `buf.len() - 1` (`buf.len()` a power of two).
    mask: usize,
    head: usize,
    len: usize,
}

impl<T: Copy + Default> Ring<T> {
    /// Room for `n` items before the first growth.
    pub fn with_capacity(n: usize) -> Self {
        let cap = n.max(2).next_power_of_two();
        Ring {
            buf: vec![T::default(); cap],
            mask: cap - 1,
            head: 0,
            len: 0,
        }
    }

    /// Whether the ring holds nothing.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `v`.
    #[inline(always)]
    pub fn push_back(&mut self, v: T) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let i = (self.head + self.len) & self.mask;
        self.buf[i] = v;
        self.len += 1;
    }

    /// Puts `v` in front of the oldest item (a message taken and given back).
    pub fn push_front(&mut self, v: T) {
        if self.len == self.buf.len() {
            self.grow();
        }
        self.head = self.head.wrapping_sub(1) & self.mask;
        self.buf[self.head] = v;
        self.len += 1;
    }

    /// Takes the oldest item.
    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.buf[self.head];
        self.head = (self.head + 1) & self.mask;
        self.len -= 1;
        Some(v)
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let n = self.buf.len();
        let mut b = Vec::with_capacity(2 * n);
        b.extend_from_slice(&self.buf[self.head..]);
        b.extend_from_slice(&self.buf[..self.head]);
        b.resize(2 * n, T::default());
        self.buf = b;
        self.mask = 2 * n - 1;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::Ring;

    #[test]
    fn keeps_fifo_order_across_wraps_and_growth() {
        let mut r = Ring::with_capacity(2);
        let mut next = 0u32;
        let mut want = 0u32;
        for round in 0..50u32 {
            for _ in 0..(round % 7) {
                r.push_back(next);
                next += 1;
            }
            for _ in 0..(round % 5) {
                if let Some(v) = r.pop_front() {
                    assert_eq!(v, want);
                    want += 1;
                }
            }
        }
        while let Some(v) = r.pop_front() {
            assert_eq!(v, want);
            want += 1;
        }
        assert_eq!(want, next);
        assert!(r.is_empty());
    }

    #[test]
    fn an_item_pushed_in_front_comes_out_first() {
        let mut r = Ring::with_capacity(2);
        for round in 0..20u32 {
            for v in 1..=(round % 5) {
                r.push_back(v);
            }
            r.push_front(0);
            for want in 0..=(round % 5) {
                assert_eq!(r.pop_front(), Some(want));
            }
            assert!(r.is_empty());
        }
    }
}
