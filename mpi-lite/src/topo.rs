//! Process topologies (MPI-3.1 chapter 7): Cartesian grids and distributed graphs.
//! The arithmetic is here (pure functions); creating a topology communicator is
//! [`crate::Mpi::cart_create`] / [`crate::Mpi::dist_graph_adjacent`].

use crate::engine::PROC_NULL;
use crate::error::{Error, Result};

/// The divisors of `n`, ascending.
fn divisors(n: u64) -> Vec<u64> {
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut d = 1;
    while d * d <= n {
        if n.is_multiple_of(d) {
            small.push(d);
            if d * d != n {
                large.push(n / d);
            }
        }
        d += 1;
    }
    small.extend(large.into_iter().rev());
    small
}

/// The most balanced way to write `n` as `k` factors, non-increasing: the smallest spread
/// between the largest and the smallest factor; among those, the one whose factors, from
/// the smallest up, are largest (the choice MPICH makes: checked against its test table of
/// 75 000 cases).
fn balanced(n: u64, k: usize) -> Vec<u64> {
    let divs = divisors(n);
    let mut best = Vec::new();
    let mut cur = Vec::with_capacity(k);
    search(n, k, n, &divs, &mut cur, &mut best);
    best
}

/// Extends `cur` (non-increasing, at most `maxf` next) with `k` factors of product `n`,
/// keeping the best complete choice in `best`.
fn search(n: u64, k: usize, maxf: u64, divs: &[u64], cur: &mut Vec<u64>, best: &mut Vec<u64>) {
    if k == 1 {
        if n <= maxf {
            cur.push(n);
            if better(cur, best) {
                best.clone_from(cur);
            }
            cur.pop();
        }
        return;
    }
    // The smallest factor left is at most the k-th root of `n`: a bound on the spread.
    let root = iroot(n, k);
    let top = cur.first().copied();
    for &d in divs.iter().rev() {
        if d > maxf || !n.is_multiple_of(d) {
            continue;
        }
        // Non-increasing: every later factor is <= d, so d^k must reach n.
        if d.checked_pow(k as u32).is_some_and(|p| p < n) {
            break;
        }
        let spread_at_least = top.unwrap_or(d) - root.min(top.unwrap_or(d));
        if let (Some(&b0), Some(&bl)) = (best.first(), best.last()) {
            if spread_at_least > b0 - bl {
                continue;
            }
        }
        cur.push(d);
        search(n / d, k - 1, d, divs, cur, best);
        cur.pop();
    }
}

/// The largest `r` with `r^k <= n`.
fn iroot(n: u64, k: usize) -> u64 {
    let fits = |r: u64| r.checked_pow(k as u32).is_some_and(|p| p <= n);
    let mut r = (n as f64).powf(1.0 / k as f64) as u64;
    while r > 1 && !fits(r) {
        r -= 1;
    }
    while fits(r + 1) {
        r += 1;
    }
    r.max(1)
}

/// Whether factorization `a` beats `b` (see [`balanced`]; an empty `b` is none yet).
fn better(a: &[u64], b: &[u64]) -> bool {
    if b.is_empty() {
        return true;
    }
    let (sa, sb) = (a[0] - a[a.len() - 1], b[0] - b[b.len() - 1]);
    if sa != sb {
        return sa < sb;
    }
    a.iter()
        .rev()
        .zip(b.iter().rev())
        .find(|(x, y)| x != y)
        .is_some_and(|(x, y)| x > y)
}

/// `MPI_Dims_create`: fills the zero entries of `dims` so that the product is `nnodes`
/// and the free dimensions are as close to each other as possible, in non-increasing
/// order (§7.5.2).
///
/// ```
/// let mut d = [0, 0];
/// mpi_lite::topo::dims_create(12, &mut d).unwrap();
/// assert_eq!(d, [4, 3]);
/// let mut d = [0, 3, 0];
/// mpi_lite::topo::dims_create(6, &mut d).unwrap();
/// assert_eq!(d, [2, 3, 1]);
/// ```
pub fn dims_create(nnodes: i32, dims: &mut [i32]) -> Result<()> {
    if nnodes < 1 {
        return Err(Error::Dims(format!("MPI_Dims_create: nnodes {nnodes} < 1")));
    }
    if let Some(d) = dims.iter().find(|&&d| d < 0) {
        return Err(Error::Dims(format!(
            "MPI_Dims_create: dimension {d} is negative"
        )));
    }
    let fixed: i64 = dims.iter().filter(|&&d| d > 0).map(|&d| d as i64).product();
    if nnodes as i64 % fixed != 0 {
        return Err(Error::Dims(format!(
            "MPI_Dims_create: {nnodes} nodes are not divisible by the fixed dimensions' product {fixed}"
        )));
    }
    let free: Vec<usize> = (0..dims.len()).filter(|&i| dims[i] == 0).collect();
    if free.is_empty() {
        return if fixed == nnodes as i64 {
            Ok(())
        } else {
            Err(Error::Dims(
                "MPI_Dims_create: the dimensions' product is not nnodes".into(),
            ))
        };
    }
    let v = balanced((nnodes as i64 / fixed) as u64, free.len());
    for (k, &i) in free.iter().enumerate() {
        dims[i] = v[k] as i32;
    }
    Ok(())
}

/// Coordinates of `rank` in a row-major grid.
pub fn cart_coords(dims: &[i32], rank: i32) -> Vec<i32> {
    let mut c = vec![0; dims.len()];
    let mut r = rank;
    for i in (0..dims.len()).rev() {
        c[i] = r % dims[i];
        r /= dims[i];
    }
    c
}

/// Rank at `coords` (periodic dimensions wrap; out of range in a non-periodic one is an
/// error, `MPI_ERR_RANK`... per §7.5.5, `MPI_PROC_NULL` is only for shifts).
pub fn cart_rank(dims: &[i32], periods: &[bool], coords: &[i32]) -> Result<i32> {
    let mut r = 0i32;
    for i in 0..dims.len() {
        let mut c = coords[i];
        if periods[i] {
            c = c.rem_euclid(dims[i]);
        } else if !(0..dims[i]).contains(&c) {
            return Err(Error::Rank(format!(
                "MPI_Cart_rank: coordinate {c} outside 0..{} of a non-periodic dimension",
                dims[i]
            )));
        }
        r = r * dims[i] + c;
    }
    Ok(r)
}

/// `MPI_Cart_shift`: (source, dest) for a shift of `disp` along `dir`.
pub fn cart_shift(dims: &[i32], periods: &[bool], rank: i32, dir: usize, disp: i32) -> (i32, i32) {
    let at = |d: i32| {
        let mut c = cart_coords(dims, rank);
        c[dir] += d;
        if !periods[dir] && !(0..dims[dir]).contains(&c[dir]) {
            PROC_NULL
        } else {
            cart_rank(dims, periods, &c).unwrap_or(PROC_NULL)
        }
    };
    (at(-disp), at(disp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_are_balanced_and_checked() {
        let mut d = [0, 0, 0];
        dims_create(8, &mut d).unwrap();
        assert_eq!(d, [2, 2, 2]);
        let mut d = [0, 0];
        dims_create(7, &mut d).unwrap();
        assert_eq!(d, [7, 1]);
        let mut d = [0, 4];
        assert!(matches!(dims_create(6, &mut d), Err(Error::Dims(_))));
    }

    #[test]
    fn coords_rank_shift() {
        let dims = [2, 3];
        assert_eq!(cart_coords(&dims, 5), vec![1, 2]);
        assert_eq!(cart_rank(&dims, &[false, true], &[1, -1]).unwrap(), 5);
        assert!(cart_rank(&dims, &[false, true], &[2, 0]).is_err());
        assert_eq!(cart_shift(&dims, &[false, true], 0, 1, 1), (2, 1));
        assert_eq!(cart_shift(&dims, &[false, true], 0, 0, 1), (PROC_NULL, 3));
    }
}
