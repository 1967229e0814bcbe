//! The type map of one element as a small tree whose size does not grow with the counts
//! of the constructors (MPI-3.1 §4.1: a type map is a sequence of (type, displacement)
//! pairs; here it is kept as runs of bytes).
//!
//! `MPI_Type_contiguous(10^7, MPI_BYTE)` is one run; `MPI_Type_vector(10^7, 1, 2,
//! MPI_INT)` is one [`Node::Repeat`] over one run — O(1) memory whatever the count (the
//! explicit list this replaces took 40 bytes per element). Small maps (≤ [`FLAT`] runs)
//! and irregular ones (indexed, struct: as many runs as the caller gave) are kept as the
//! explicit list of runs, which packing walks fastest.

use std::sync::Arc;

use crate::error::{Error, Result};

/// Maps of at most this many runs are stored flat.
pub(super) const FLAT: usize = 64;

/// One contiguous run of bytes of an element: `len` bytes at `disp` from its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Byte displacement from the element's base address (may be negative).
    pub disp: isize,
    /// Bytes.
    pub len: usize,
}

#[derive(Debug)]
pub(super) enum Node {
    /// Explicit runs in type-map order, adjacent ones merged; `starts[i]`: packed offset
    /// of run `i` (prefix sums of the lengths).
    Blocks {
        blocks: Vec<Block>,
        starts: Vec<usize>,
    },
    /// `count` copies of `inner`, the k-th shifted by `k × stride` bytes.
    Repeat {
        count: usize,
        stride: isize,
        inner: Arc<Map>,
    },
    /// Each part's map shifted by its displacement, in order; `starts` as for `Blocks`.
    Seq {
        parts: Vec<(isize, Arc<Map>)>,
        starts: Vec<usize>,
    },
}

/// The type map of one element.
#[derive(Debug)]
pub(super) struct Map {
    pub node: Node,
    /// Data bytes.
    pub size: usize,
    /// True bounds (first and one past the last byte reached; both 0 when `size` is 0).
    pub true_lb: isize,
    pub true_ub: isize,
    /// Runs when flattened (saturating): decides whether flattening pays.
    pub runs: usize,
}

fn overflow(what: &str) -> Error {
    Error::Count(format!(
        "{what}: the datatype's size or extent overflows the address space"
    ))
}

impl Map {
    /// The map of explicit runs (empty runs dropped, adjacent ones merged).
    pub fn blocks(raw: impl IntoIterator<Item = Block>) -> Map {
        let mut blocks: Vec<Block> = Vec::new();
        for b in raw.into_iter().filter(|b| b.len > 0) {
            match blocks.last_mut() {
                Some(last) if last.disp + last.len as isize == b.disp => last.len += b.len,
                _ => blocks.push(b),
            }
        }
        let mut starts = Vec::with_capacity(blocks.len());
        let mut size = 0usize;
        for b in &blocks {
            starts.push(size);
            size += b.len;
        }
        let true_lb = blocks.iter().map(|b| b.disp).min().unwrap_or(0);
        let true_ub = blocks
            .iter()
            .map(|b| b.disp + b.len as isize)
            .max()
            .unwrap_or(0);
        Map {
            runs: blocks.len(),
            node: Node::Blocks { blocks, starts },
            size,
            true_lb,
            true_ub,
        }
    }

    fn empty() -> Arc<Map> {
        Arc::new(Map::blocks([]))
    }

    /// The single run when the map is one.
    pub fn single(&self) -> Option<Block> {
        match &self.node {
            Node::Blocks { blocks, .. } if blocks.len() == 1 => Some(blocks[0]),
            _ => None,
        }
    }

    /// `count` copies of `inner`, `stride` bytes apart.
    pub fn repeat(count: usize, stride: isize, inner: &Arc<Map>, what: &str) -> Result<Arc<Map>> {
        if count == 0 || inner.size == 0 {
            return Ok(Self::empty());
        }
        if count == 1 {
            return Ok(inner.clone());
        }
        let size = inner
            .size
            .checked_mul(count)
            .ok_or_else(|| overflow(what))?;
        if size > isize::MAX as usize {
            return Err(overflow(what));
        }
        let last = isize::try_from(count - 1)
            .ok()
            .and_then(|c| c.checked_mul(stride))
            .ok_or_else(|| overflow(what))?;
        let (lo, hi) = if last < 0 { (last, 0) } else { (0, last) };
        let true_lb = inner
            .true_lb
            .checked_add(lo)
            .ok_or_else(|| overflow(what))?;
        let true_ub = inner
            .true_ub
            .checked_add(hi)
            .ok_or_else(|| overflow(what))?;
        if let Some(b) = inner.single() {
            if stride == b.len as isize {
                // Copies that touch: one run.
                return Ok(Arc::new(Map::blocks([Block {
                    disp: b.disp,
                    len: size,
                }])));
            }
        }
        let runs = inner.runs.saturating_mul(count);
        if runs <= FLAT {
            let mut out = Vec::with_capacity(runs);
            for k in 0..count as isize {
                inner.push_runs(k * stride, &mut out);
            }
            return Ok(Arc::new(Map::blocks(out)));
        }
        Ok(Arc::new(Map {
            node: Node::Repeat {
                count,
                stride,
                inner: inner.clone(),
            },
            size,
            true_lb,
            true_ub,
            runs,
        }))
    }

    /// The parts' maps, each shifted by its displacement, in order.
    pub fn seq(parts: Vec<(isize, Arc<Map>)>, what: &str) -> Result<Arc<Map>> {
        let parts: Vec<(isize, Arc<Map>)> = parts.into_iter().filter(|(_, m)| m.size > 0).collect();
        match parts.as_slice() {
            [] => return Ok(Self::empty()),
            [(0, m)] => return Ok(m.clone()),
            _ => {}
        }
        let mut starts = Vec::with_capacity(parts.len());
        let (mut size, mut runs) = (0usize, 0usize);
        let (mut lb, mut ub) = (isize::MAX, isize::MIN);
        for (d, m) in &parts {
            starts.push(size);
            size = size.checked_add(m.size).ok_or_else(|| overflow(what))?;
            runs = runs.saturating_add(m.runs);
            lb = lb.min(d.checked_add(m.true_lb).ok_or_else(|| overflow(what))?);
            ub = ub.max(d.checked_add(m.true_ub).ok_or_else(|| overflow(what))?);
        }
        if size > isize::MAX as usize {
            return Err(overflow(what));
        }
        // Flat when that costs no more than the parts themselves (indexed types of
        // plain elements: one run per block the caller listed).
        if runs <= FLAT.max(2 * parts.len()) {
            let mut out = Vec::with_capacity(runs);
            for (d, m) in &parts {
                m.push_runs(*d, &mut out);
            }
            return Ok(Arc::new(Map::blocks(out)));
        }
        Ok(Arc::new(Map {
            node: Node::Seq { parts, starts },
            size,
            true_lb: lb,
            true_ub: ub,
            runs,
        }))
    }

    /// Appends the runs of the map shifted by `shift` (callers bound the number by `runs`).
    fn push_runs(&self, shift: isize, out: &mut Vec<Block>) {
        match &self.node {
            Node::Blocks { blocks, .. } => out.extend(blocks.iter().map(|b| Block {
                disp: b.disp + shift,
                len: b.len,
            })),
            Node::Repeat {
                count,
                stride,
                inner,
            } => {
                for k in 0..*count as isize {
                    inner.push_runs(shift + k * stride, out);
                }
            }
            Node::Seq { parts, .. } => {
                for (d, m) in parts {
                    m.push_runs(shift + d, out);
                }
            }
        }
    }

    /// Calls `f(address offset, packed offset, len)` for the pieces of packed bytes
    /// `[from, from + len)` of this map (`from + len <= size`), the map placed at address
    /// offset `shift` and packed offset `pos0`.
    pub fn walk<F: FnMut(isize, usize, usize)>(
        &self,
        shift: isize,
        pos0: usize,
        from: usize,
        len: usize,
        f: &mut F,
    ) {
        let end = from + len;
        match &self.node {
            Node::Blocks { blocks, starts } => {
                let mut at = from;
                let mut bi = starts.partition_point(|&s| s <= at) - 1;
                while at < end {
                    let b = blocks[bi];
                    let off = at - starts[bi];
                    let n = (b.len - off).min(end - at);
                    f(shift + b.disp + off as isize, pos0 + at, n);
                    at += n;
                    bi += 1;
                }
            }
            Node::Repeat { stride, inner, .. } => {
                let isz = inner.size;
                let (mut k, mut within) = (from / isz, from % isz);
                let mut at = from;
                let one = inner.single();
                while at < end {
                    let n = (isz - within).min(end - at);
                    let s = shift + k as isize * stride;
                    match one {
                        Some(b) => f(s + b.disp + within as isize, pos0 + at, n),
                        None => inner.walk(s, pos0 + k * isz, within, n, f),
                    }
                    at += n;
                    k += 1;
                    within = 0;
                }
            }
            Node::Seq { parts, starts } => {
                let mut at = from;
                let mut pi = starts.partition_point(|&s| s <= at) - 1;
                while at < end {
                    let (d, m) = &parts[pi];
                    let within = at - starts[pi];
                    let n = (m.size - within).min(end - at);
                    m.walk(shift + d, pos0 + starts[pi], within, n, f);
                    at += n;
                    pi += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(m: &Map, from: usize, len: usize) -> Vec<(isize, usize, usize)> {
        let mut got = Vec::new();
        m.walk(0, 0, from, len, &mut |a, p, n| got.push((a, p, n)));
        got
    }

    #[test]
    fn a_huge_repeat_is_one_node_and_walks_like_its_flat_form() {
        let int = Arc::new(Map::blocks([Block { disp: 0, len: 4 }]));
        let big = Map::repeat(10_000_000, 8, &int, "t").unwrap();
        assert!(matches!(big.node, Node::Repeat { .. }));
        assert_eq!(
            (big.size, big.true_lb, big.true_ub),
            (40_000_000, 0, 79_999_996)
        );
        let small = Map::repeat(20, 8, &int, "t").unwrap();
        assert!(matches!(small.node, Node::Blocks { .. }));
        assert_eq!(pieces(&big, 2, 30), pieces(&small, 2, 30));
        // Touching copies merge into one run whatever the count.
        let dense = Map::repeat(1 << 40, 4, &int, "t").unwrap();
        assert_eq!(
            dense.single(),
            Some(Block {
                disp: 0,
                len: 4 << 40
            })
        );
        assert!(Map::repeat(usize::MAX / 2, 4, &int, "t").is_err());
    }

    #[test]
    fn nested_sequences_walk_in_type_map_order() {
        let int = Arc::new(Map::blocks([Block { disp: 0, len: 4 }]));
        let v = Map::repeat(100, 12, &int, "t").unwrap();
        let s = Map::seq(vec![(-1000, v.clone()), (5000, v.clone())], "t").unwrap();
        assert!(matches!(s.node, Node::Seq { .. }));
        assert_eq!(
            (s.size, s.true_lb, s.true_ub),
            (800, -1000, 5000 + 99 * 12 + 4)
        );
        let got = pieces(&s, 398, 4);
        assert_eq!(got, vec![(-1000 + 99 * 12 + 2, 398, 2), (5000, 400, 2)]);
    }
}
