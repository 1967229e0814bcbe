//! The type signature of one element (MPI-3.1 §4.1: the sequence of predefined types of
//! the type map, in packing order), kept as a small tree beside the byte map ([`super::map`]
//! forgets which predefined type a byte belongs to).
//!
//! It answers what needs the types and not the displacements: how many predefined elements
//! a received byte count holds (`MPI_Get_elements`), and how to convert packed bytes
//! element by element (`MPI_Pack_external` of a struct of mixed types). Regular types stay
//! O(1): `count` copies of a run of one type are one run.

use std::sync::Arc;

use super::Basic;

#[derive(Debug)]
enum Node {
    /// `n` consecutive values of one predefined type.
    Run(Basic, usize),
    /// `count` copies of `inner`.
    Repeat(usize, Arc<Sig>),
    /// The parts one after the other.
    Seq(Vec<Arc<Sig>>),
}

/// The signature of one element.
#[derive(Debug)]
pub(super) struct Sig {
    node: Node,
    /// Packed bytes (saturating: a type too large for the address space is refused
    /// elsewhere before any of this is used).
    size: usize,
    /// Predefined elements (saturating).
    elems: usize,
}

impl Sig {
    /// One value of predefined type `b`.
    pub fn basic(b: Basic) -> Arc<Sig> {
        Self::run(b, 1)
    }

    fn run(b: Basic, n: usize) -> Arc<Sig> {
        Arc::new(Sig {
            node: Node::Run(b, n),
            size: b.packed_size().saturating_mul(n),
            elems: n,
        })
    }

    /// `count` copies of `inner` (a run stays one run).
    pub fn repeat(count: usize, inner: &Arc<Sig>) -> Arc<Sig> {
        match inner.node {
            _ if count == 1 => inner.clone(),
            Node::Run(b, n) => match n.checked_mul(count) {
                Some(k) => Self::run(b, k),
                None => Self::repeat_node(count, inner),
            },
            _ => Self::repeat_node(count, inner),
        }
    }

    fn repeat_node(count: usize, inner: &Arc<Sig>) -> Arc<Sig> {
        Arc::new(Sig {
            node: Node::Repeat(count, inner.clone()),
            size: inner.size.saturating_mul(count),
            elems: inner.elems.saturating_mul(count),
        })
    }

    /// The parts in order (empty ones dropped, adjacent runs of one type merged).
    pub fn seq(parts: impl IntoIterator<Item = Arc<Sig>>) -> Arc<Sig> {
        let mut out: Vec<Arc<Sig>> = Vec::new();
        for p in parts.into_iter().filter(|p| p.elems > 0) {
            if let (Some(last), Node::Run(b, n)) = (out.last_mut(), &p.node) {
                if let Node::Run(lb, ln) = last.node {
                    if lb == *b {
                        if let Some(k) = ln.checked_add(*n) {
                            *last = Self::run(lb, k);
                            continue;
                        }
                    }
                }
            }
            out.push(p);
        }
        match out.len() {
            1 => out.pop().expect("one part"),
            _ => Arc::new(Sig {
                size: out.iter().fold(0, |a, p| a.saturating_add(p.size)),
                elems: out.iter().fold(0, |a, p| a.saturating_add(p.elems)),
                node: Node::Seq(out),
            }),
        }
    }

    /// Predefined elements wholly inside the first `bytes` packed bytes of a stream of
    /// elements of this signature, and the bytes left over (a part of one element).
    pub fn elements_in(&self, bytes: usize) -> (usize, usize) {
        if self.size == 0 {
            return (0, bytes);
        }
        let whole = bytes / self.size;
        let (k, rest) = self.prefix(bytes % self.size);
        (whole.saturating_mul(self.elems).saturating_add(k), rest)
    }

    /// Elements wholly inside the first `bytes` (< `size`) bytes of one element.
    fn prefix(&self, bytes: usize) -> (usize, usize) {
        match &self.node {
            Node::Run(b, _) => {
                let one = b.packed_size();
                (bytes / one, bytes % one)
            }
            Node::Repeat(_, inner) => {
                let (k, rest) = inner.prefix(bytes % inner.size);
                ((bytes / inner.size) * inner.elems + k, rest)
            }
            Node::Seq(parts) => {
                let (mut k, mut left) = (0, bytes);
                for p in parts {
                    if left < p.size {
                        let (j, rest) = p.prefix(left);
                        return (k + j, rest);
                    }
                    k += p.elems;
                    left -= p.size;
                }
                (k, left)
            }
        }
    }

    /// Packed bytes of the first `elems` predefined elements of a stream of elements of
    /// this signature (the inverse of [`Sig::elements_in`]); `None` on overflow or when
    /// the signature is empty and `elems` is not 0.
    pub fn bytes_of(&self, elems: usize) -> Option<usize> {
        if self.elems == 0 {
            return (elems == 0).then_some(0);
        }
        let whole = (elems / self.elems).checked_mul(self.size)?;
        whole.checked_add(self.prefix_bytes(elems % self.elems))
    }

    /// Bytes of the first `elems` (< `self.elems`) elements of one element.
    fn prefix_bytes(&self, elems: usize) -> usize {
        match &self.node {
            Node::Run(b, _) => elems * b.packed_size(),
            Node::Repeat(_, inner) => {
                (elems / inner.elems) * inner.size + inner.prefix_bytes(elems % inner.elems)
            }
            Node::Seq(parts) => {
                let (mut bytes, mut left) = (0, elems);
                for p in parts {
                    if left < p.elems {
                        return bytes + p.prefix_bytes(left);
                    }
                    bytes += p.size;
                    left -= p.elems;
                }
                bytes
            }
        }
    }

    /// Calls `f(b, n)` for the runs of one element in packing order (adjacent calls may
    /// name the same type). Stops at the first error.
    pub fn try_for_each_run<E>(
        &self,
        f: &mut impl FnMut(Basic, usize) -> Result<(), E>,
    ) -> Result<(), E> {
        match &self.node {
            Node::Run(b, n) => f(*b, *n),
            Node::Repeat(count, inner) => (0..*count).try_for_each(|_| inner.try_for_each_run(f)),
            Node::Seq(parts) => parts.iter().try_for_each(|p| p.try_for_each_run(f)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(s: &Sig) -> Vec<(Basic, usize)> {
        let mut v = Vec::new();
        s.try_for_each_run::<()>(&mut |b, n| {
            v.push((b, n));
            Ok(())
        })
        .unwrap();
        v
    }

    #[test]
    fn regular_types_stay_one_run() {
        let int = Sig::basic(Basic::Int);
        let r = Sig::repeat(1_000_000_000, &Sig::repeat(3, &int));
        assert_eq!(runs(&r), [(Basic::Int, 3_000_000_000)]);
        assert_eq!(r.elements_in(4 * 7 + 2), (7, 2));
    }

    #[test]
    fn mixed_elements_are_counted_in_order() {
        // struct { double d[2]; char c; } x 3
        let s = Sig::seq([
            Sig::repeat(2, &Sig::basic(Basic::Double)),
            Sig::basic(Basic::Char),
        ]);
        assert_eq!((s.size, s.elems), (17, 3));
        let three = Sig::repeat(3, &s);
        assert_eq!(three.elements_in(17 + 8), (4, 0));
        assert_eq!(three.elements_in(17 + 16 + 1), (6, 0));
        assert_eq!(three.elements_in(17 + 9), (4, 1));
        for (k, bytes) in [(0, 0), (1, 8), (2, 16), (3, 17), (4, 25), (7, 42)] {
            assert_eq!(three.bytes_of(k), Some(bytes));
            assert_eq!(three.elements_in(bytes), (k, 0));
        }
        assert_eq!(
            runs(&Sig::repeat(2, &s)),
            [
                (Basic::Double, 2),
                (Basic::Char, 1),
                (Basic::Double, 2),
                (Basic::Char, 1)
            ]
        );
        let merged = Sig::seq([
            Sig::basic(Basic::Int),
            Sig::repeat(4, &Sig::basic(Basic::Int)),
        ]);
        assert_eq!(runs(&merged), [(Basic::Int, 5)]);
    }
}
