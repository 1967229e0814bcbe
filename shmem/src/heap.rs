//! The symmetric heap's allocator: offsets into the heap segment. Every PE runs the same
//! deterministic allocator on the same sequence of collective calls (OpenSHMEM 1.5 §9.3:
//! `shmem_malloc` and friends are called by all PEs with the same arguments), so an object
//! has the same offset on every PE and offsets are the symmetric addresses.

use std::collections::BTreeMap;

use crate::Error;

/// First-fit allocator over `[start, end)`.
#[derive(Debug)]
pub struct Heap {
    /// Free blocks: offset → length (coalesced).
    free: BTreeMap<usize, usize>,
    /// Live blocks: offset → length.
    used: BTreeMap<usize, usize>,
    end: usize,
}

/// Alignment of every block (the largest standard type, `long double`/128-bit puts).
pub const MIN_ALIGN: usize = 16;

impl Heap {
    /// A heap managing `[start, end)`.
    pub fn new(start: usize, end: usize) -> Self {
        let start = start.next_multiple_of(MIN_ALIGN);
        let mut free = BTreeMap::new();
        if end > start {
            free.insert(start, end - start);
        }
        Heap {
            free,
            used: BTreeMap::new(),
            end,
        }
    }

    /// Bytes in the heap's range.
    pub fn capacity(&self) -> usize {
        self.end
    }

    /// Allocates `size` bytes aligned to `align` (a power of two); `size` 0 is a 1-byte block.
    pub fn alloc(&mut self, size: usize, align: usize) -> Result<usize, Error> {
        if !align.is_power_of_two() {
            return Err(Error::BadArgument(format!(
                "alignment {align} is not a power of two"
            )));
        }
        let align = align.max(MIN_ALIGN);
        let size = size.max(1).next_multiple_of(MIN_ALIGN);
        let hit = self.free.iter().find_map(|(&off, &len)| {
            let a = off.checked_next_multiple_of(align)?;
            (a.checked_add(size)? <= off + len).then_some((off, len, a))
        });
        let Some((off, len, a)) = hit else {
            let free: usize = self.free.values().sum();
            return Err(Error::HeapExhausted { size, free });
        };
        self.free.remove(&off);
        if a > off {
            self.free.insert(off, a - off);
        }
        if a + size < off + len {
            self.free.insert(a + size, off + len - a - size);
        }
        self.used.insert(a, size);
        Ok(a)
    }

    /// Frees the block at `off`.
    pub fn free(&mut self, off: usize) -> Result<(), Error> {
        let Some(mut len) = self.used.remove(&off) else {
            return Err(Error::BadArgument(format!(
                "freeing symmetric heap offset {off:#x}, which is not an allocated block"
            )));
        };
        let end = off + len;
        let mut start = off;
        if let Some((&p, &pl)) = self.free.range(..off).next_back() {
            if p + pl == off {
                self.free.remove(&p);
                start = p;
                len += pl;
            }
        }
        if let Some(nl) = self.free.remove(&end) {
            len += nl;
        }
        self.free.insert(start, len);
        Ok(())
    }

    /// The size of the live block at `off`.
    pub fn size_of(&self, off: usize) -> Option<usize> {
        self.used.get(&off).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_free_coalesce_exhaust() {
        let mut h = Heap::new(0, 1024);
        let a = h.alloc(100, 1).unwrap();
        let b = h.alloc(100, 64).unwrap();
        let c = h.alloc(100, 1).unwrap();
        assert_eq!(b % 64, 0);
        assert!(a + 112 <= b && b + 112 <= c);
        h.free(b).unwrap();
        h.free(a).unwrap();
        h.free(c).unwrap();
        assert_eq!(h.free.len(), 1, "{:?}", h.free);
        assert_eq!(h.free.get(&0), Some(&1024));
        assert!(matches!(h.alloc(2000, 1), Err(Error::HeapExhausted { .. })));
        assert!(h.free(5).is_err());
        let all = h.alloc(1024, 16).unwrap();
        assert_eq!(all, 0);
    }
}
