//! The array constructors built from the basic ones: `MPI_Type_create_subarray` (MPI-3.1
//! §4.1.3) and `MPI_Type_create_darray` (§4.1.4). Each dimension is a selection of index
//! runs of an array whose element is the (resized) type of the inner dimensions; the result
//! is resized to the whole array, so consecutive elements tile arrays.

use super::{overflow, Datatype};
use crate::error::{Error, Result};

/// How a dimension of a distributed array is split over the process grid (§4.1.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distrib {
    /// `MPI_DISTRIBUTE_BLOCK` with the block size (`None`: `MPI_DISTRIBUTE_DFLT_DARG`,
    /// ⌈size / processes⌉).
    Block(Option<usize>),
    /// `MPI_DISTRIBUTE_CYCLIC` with the block size (`None`: 1).
    Cyclic(Option<usize>),
    /// `MPI_DISTRIBUTE_NONE`: the dimension is not distributed.
    None,
}

/// Builds the type selecting runs `(first index, count)` of each dimension (outermost
/// first) of an array of `sizes` elements of `old`, resized to the whole array.
fn select(
    sizes: &[usize],
    runs: &[Vec<(usize, usize)>],
    old: &Datatype,
    what: &str,
) -> Result<Datatype> {
    let ext = old.extent();
    // stride[d]: bytes between consecutive indices of dimension d.
    let mut stride = vec![ext; sizes.len()];
    for d in (0..sizes.len().saturating_sub(1)).rev() {
        stride[d] = isize::try_from(sizes[d + 1])
            .ok()
            .and_then(|s| s.checked_mul(stride[d + 1]))
            .ok_or_else(|| overflow(what))?;
    }
    let total = match sizes.first() {
        Some(&s) => isize::try_from(s)
            .ok()
            .and_then(|s| s.checked_mul(stride[0]))
            .ok_or_else(|| overflow(what))?,
        None => ext,
    };
    let mut t = old.clone();
    for d in (0..sizes.len()).rev() {
        let unit = if d + 1 == sizes.len() {
            old.clone()
        } else {
            Datatype::resized(&t, 0, stride[d])
        };
        let (lens, displs): (Vec<usize>, Vec<isize>) = runs[d]
            .iter()
            .map(|&(first, n)| (n, first as isize * stride[d]))
            .unzip();
        t = Datatype::hindexed(&lens, &displs, &unit)?;
    }
    Ok(Datatype::resized(&t, 0, total))
}

fn check_dims(what: &str, n: usize, lens: &[usize]) -> Result<()> {
    if n == 0 || lens.iter().any(|&l| l != n) {
        return Err(Error::Arg(format!(
            "{what}: ndims {n} and the array lengths disagree"
        )));
    }
    Ok(())
}

/// Reverses the dimensions of Fortran (column-major) order into C order.
fn c_order<T: Clone>(v: &[T], fortran: bool) -> Vec<T> {
    let mut v = v.to_vec();
    if fortran {
        v.reverse();
    }
    v
}

impl Datatype {
    /// `MPI_Type_create_subarray`: the `subsizes` block at `starts` of an array of
    /// `sizes` elements of `old`, in C (`fortran == false`) or Fortran order.
    pub fn subarray(
        sizes: &[usize],
        subsizes: &[usize],
        starts: &[usize],
        fortran: bool,
        old: &Datatype,
    ) -> Result<Datatype> {
        let what = "MPI_Type_create_subarray";
        check_dims(what, sizes.len(), &[subsizes.len(), starts.len()])?;
        for d in 0..sizes.len() {
            if sizes[d] == 0 || subsizes[d] == 0 || starts[d] + subsizes[d] > sizes[d] {
                return Err(Error::Arg(format!(
                    "{what}: dimension {d}: subsize {} at {} does not fit size {} (sizes and subsizes ≥ 1)",
                    subsizes[d], starts[d], sizes[d]
                )));
            }
        }
        let runs: Vec<Vec<(usize, usize)>> = (0..sizes.len())
            .map(|d| vec![(starts[d], subsizes[d])])
            .collect();
        select(
            &c_order(sizes, fortran),
            &c_order(&runs, fortran),
            old,
            what,
        )
    }

    /// `MPI_Type_create_darray`: the part of a `gsizes` array of `old` that process
    /// `rank` of `size` owns, on a row-major process grid of `psizes`.
    #[allow(clippy::too_many_arguments)]
    pub fn darray(
        size: usize,
        rank: usize,
        gsizes: &[usize],
        distribs: &[Distrib],
        psizes: &[usize],
        fortran: bool,
        old: &Datatype,
    ) -> Result<Datatype> {
        let what = "MPI_Type_create_darray";
        let n = gsizes.len();
        check_dims(what, n, &[distribs.len(), psizes.len()])?;
        if psizes.iter().product::<usize>() != size || rank >= size {
            return Err(Error::Arg(format!(
                "{what}: process grid {psizes:?} does not hold {size} processes with rank {rank}"
            )));
        }
        // The process grid is row-major whatever the array order (§4.1.4).
        let mut coords = vec![0; n];
        let mut r = rank;
        for d in (0..n).rev() {
            coords[d] = r % psizes[d];
            r /= psizes[d];
        }
        let mut runs = Vec::with_capacity(n);
        for d in 0..n {
            let (g, p, c) = (gsizes[d], psizes[d], coords[d]);
            let mine = match distribs[d] {
                Distrib::None => {
                    if p != 1 {
                        return Err(Error::Arg(format!(
                            "{what}: dimension {d} is not distributed but has {p} processes"
                        )));
                    }
                    vec![(0, g)]
                }
                Distrib::Block(b) => {
                    let b = b.unwrap_or(g.div_ceil(p.max(1)));
                    if b == 0 || b * p < g {
                        return Err(Error::Arg(format!(
                            "{what}: dimension {d}: block {b} × {p} processes < size {g}"
                        )));
                    }
                    let first = (c * b).min(g);
                    vec![(first, (first + b).min(g) - first)]
                }
                Distrib::Cyclic(k) => {
                    let k = k.unwrap_or(1);
                    if k == 0 {
                        return Err(Error::Arg(format!("{what}: dimension {d}: block 0")));
                    }
                    (0..)
                        .map(|j| (c + j * p) * k)
                        .take_while(|&first| first < g)
                        .map(|first| (first, k.min(g - first)))
                        .collect()
                }
            };
            runs.push(mine);
        }
        select(
            &c_order(gsizes, fortran),
            &c_order(&runs, fortran),
            old,
            what,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::Basic;

    fn ints(t: &Datatype) -> Vec<isize> {
        let mut v = Vec::new();
        t.for_each_piece(0, t.size(), |a, _, n| {
            for k in 0..n / 4 {
                v.push(a / 4 + k as isize)
            }
        });
        v
    }

    #[test]
    fn subarray_selects_the_block_and_spans_the_array() {
        let int = Datatype::basic(Basic::Int);
        // 4×5 array, the 2×3 block at (1, 2): indices 7,8,9, 12,13,14.
        let t = Datatype::subarray(&[4, 5], &[2, 3], &[1, 2], false, &int).unwrap();
        assert_eq!((t.size(), t.lb(), t.extent()), (24, 0, 80));
        assert_eq!(ints(&t), [7, 8, 9, 12, 13, 14]);
        // Fortran order: dimension 0 varies fastest.
        let f = Datatype::subarray(&[5, 4], &[3, 2], &[2, 1], true, &int).unwrap();
        assert_eq!(ints(&f), [7, 8, 9, 12, 13, 14]);
        assert!(Datatype::subarray(&[4], &[3], &[2], false, &int).is_err());
    }

    #[test]
    fn darray_block_and_cyclic() {
        let int = Datatype::basic(Basic::Int);
        // 10 elements over 3 processes, block: 4, 4, 2.
        let b = Datatype::darray(3, 2, &[10], &[Distrib::Block(None)], &[3], false, &int).unwrap();
        assert_eq!((ints(&b), b.extent()), (vec![8, 9], 40));
        // cyclic(2) over 2: rank 1 owns 2,3, 6,7.
        let c =
            Datatype::darray(2, 1, &[8], &[Distrib::Cyclic(Some(2))], &[2], false, &int).unwrap();
        assert_eq!(ints(&c), [2, 3, 6, 7]);
        // 2-D 4×4 on a 2×2 grid, block: rank 3 owns the lower-right quarter.
        let q = Datatype::darray(
            4,
            3,
            &[4, 4],
            &[Distrib::Block(None); 2],
            &[2, 2],
            false,
            &int,
        )
        .unwrap();
        assert_eq!(ints(&q), [10, 11, 14, 15]);
    }
}
