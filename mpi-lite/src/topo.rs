//! Process topologies (MPI-3.1 chapter 7): Cartesian grids and distributed graphs.
//! The arithmetic (pure functions) and the constructors of topology communicators
//! ([`crate::Mpi::cart_create`], [`crate::Mpi::dist_graph_adjacent`]…).

use std::sync::Arc;

use skifch::Port;

use crate::comm::{CommData, Mpi, Topology, UNDEFINED};
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

impl<P: Port> Mpi<P> {
    /// `MPI_Cart_create` (no reordering): the first `∏ dims` ranks of `c` form the grid,
    /// the others get `None`.
    ///
    /// # Collective Operation
    /// Every member of `c` calls it with the same arguments.
    pub fn cart_create(
        &self,
        c: &CommData,
        dims: &[i32],
        periods: &[bool],
    ) -> Result<Option<Arc<CommData>>> {
        if dims.len() != periods.len() || dims.iter().any(|&d| d <= 0) {
            return Err(Error::Dims(
                "MPI_Cart_create: dimensions must be positive".into(),
            ));
        }
        let n: i64 = dims.iter().map(|&d| d as i64).product();
        if n > c.size() as i64 {
            return Err(Error::Topology(format!(
                "MPI_Cart_create: a grid of {n} processes in a communicator of {}",
                c.size()
            )));
        }
        let topo = Topology::Cart {
            dims: dims.to_vec(),
            periods: periods.to_vec(),
        };
        self.topo_sub(c, n as usize, topo)
    }

    /// The first `n` ranks of `c` (n ≤ its size) as a new communicator with `topo`, the
    /// others `None` (no reordering): what the topology constructors build.
    fn topo_sub(&self, c: &CommData, n: usize, topo: Topology) -> Result<Option<Arc<CommData>>> {
        c.intra("a topology constructor")?;
        let color = if c.rank < n { 0 } else { UNDEFINED };
        let sub = self.split(c, color, c.rank as i32)?;
        Ok(sub.map(|s| Arc::new(s.with_topo(Some(topo)))))
    }

    /// `MPI_Graph_create` (no reordering, MPI-3.1 §7.5.3): the first `index.len()` ranks of
    /// `c` form the graph, the others get `None`.
    ///
    /// # Collective Operation
    /// Every member of `c` calls it with the same arguments.
    pub fn graph_create(
        &self,
        c: &CommData,
        index: &[i32],
        edges: &[i32],
    ) -> Result<Option<Arc<CommData>>> {
        let n = index.len();
        if n > c.size() {
            return Err(Error::Topology(format!(
                "MPI_Graph_create: a graph of {n} nodes in a communicator of {}",
                c.size()
            )));
        }
        let ok_index = index.windows(2).all(|w| w[0] <= w[1])
            && index.first().is_none_or(|&i| i >= 0)
            && index.last().is_none_or(|&i| i as usize == edges.len());
        if !ok_index || edges.iter().any(|&e| !(0..n as i32).contains(&e)) {
            return Err(Error::Topology(
                "MPI_Graph_create: index must be non-decreasing up to the edge count, edges name nodes".into(),
            ));
        }
        let topo = Topology::Graph {
            index: index.to_vec(),
            edges: edges.to_vec(),
        };
        self.topo_sub(c, n, topo)
    }

    /// `MPI_Dist_graph_create` (MPI-3.1 §7.5.4): each process gives some edges (source,
    /// destination, weight) of the graph; every process learns its own in- and
    /// out-neighbours from all of them (an all-gather), then as
    /// [`Mpi::dist_graph_adjacent`].
    ///
    /// # Collective Operation
    /// Every member of `c` calls it.
    pub fn dist_graph_create(
        &self,
        c: &CommData,
        edges: &[(i32, i32, i32)],
        weighted: bool,
    ) -> Result<Arc<CommData>> {
        c.intra("MPI_Dist_graph_create")?;
        for &(s, d, _) in edges {
            if !(0..c.size() as i32).contains(&s) || !(0..c.size() as i32).contains(&d) {
                return Err(Error::Rank(format!(
                    "MPI_Dist_graph_create: edge {s} -> {d} leaves a communicator of {}",
                    c.size()
                )));
            }
        }
        let counts = self.exchange(c, -12, &(edges.len() as u32).to_le_bytes())?;
        let max = counts
            .iter()
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .max()
            .unwrap_or(0);
        let mut mine = vec![0xffu8; max * 12];
        for (k, &(s, d, w)) in edges.iter().enumerate() {
            for (j, x) in [s, d, w].iter().enumerate() {
                mine[k * 12 + j * 4..k * 12 + j * 4 + 4].copy_from_slice(&x.to_le_bytes());
            }
        }
        let all = self.exchange(c, -13, &mine)?;
        let me = c.rank as i32;
        let (mut sources, mut dests) = (Vec::new(), Vec::new());
        for b in &all {
            for e in b.chunks_exact(12) {
                let f = |j: usize| i32::from_le_bytes([e[j], e[j + 1], e[j + 2], e[j + 3]]);
                let (s, d, w) = (f(0), f(4), f(8));
                if s < 0 {
                    break; // padding
                }
                if d == me {
                    sources.push((s, w));
                }
                if s == me {
                    dests.push((d, w));
                }
            }
        }
        self.dist_graph_adjacent(c, sources, dests, weighted)
    }

    /// `MPI_Cart_sub` (MPI-3.1 §7.5.7): the members sharing this process's coordinates in
    /// the dimensions not kept form a grid of the kept ones (a split of `c`, ordered by
    /// rank, which is row-major order in the kept dimensions).
    ///
    /// # Collective Operation
    /// Every member of `c` calls it with the same `remain`.
    pub fn cart_sub(&self, c: &CommData, remain: &[bool]) -> Result<Arc<CommData>> {
        let Some(Topology::Cart { dims, periods }) = &c.topo else {
            return Err(Error::Topology(
                "MPI_Cart_sub: the communicator has no Cartesian topology".into(),
            ));
        };
        if remain.len() != dims.len() {
            return Err(Error::Arg("MPI_Cart_sub: one flag per dimension".into()));
        }
        let coords = crate::topo::cart_coords(dims, c.rank as i32);
        let (mut color, mut key) = (0i32, 0i32);
        for (i, &d) in dims.iter().enumerate() {
            if remain[i] {
                key = key * d + coords[i];
            } else {
                color = color * d + coords[i];
            }
        }
        let sub = self
            .split(c, color, key)?
            .ok_or_else(|| Error::Intern("MPI_Cart_sub lost this process".into()))?;
        let kept = |i: &usize| remain[*i];
        let dims = (0..dims.len()).filter(kept).map(|i| dims[i]).collect();
        let periods = (0..periods.len())
            .filter(kept)
            .map(|i| periods[i])
            .collect();
        Ok(Arc::new(
            sub.with_topo(Some(Topology::Cart { dims, periods })),
        ))
    }

    /// `MPI_Dist_graph_create_adjacent` (no reordering): a duplicate of `c` carrying this
    /// process's neighbours.
    ///
    /// # Collective Operation
    /// Every member of `c` calls it (with its own neighbour lists).
    pub fn dist_graph_adjacent(
        &self,
        c: &CommData,
        sources: Vec<(i32, i32)>,
        dests: Vec<(i32, i32)>,
        weighted: bool,
    ) -> Result<Arc<CommData>> {
        c.intra("MPI_Dist_graph_create")?;
        for &(r, _) in sources.iter().chain(&dests) {
            if !(0..c.size() as i32).contains(&r) {
                return Err(Error::Rank(format!(
                    "MPI_Dist_graph_create_adjacent: neighbour {r} is not in a communicator of {}",
                    c.size()
                )));
            }
        }
        let d = self.dup(c)?;
        Ok(Arc::new(d.with_topo(Some(Topology::DistGraph {
            sources,
            dests,
            weighted,
        }))))
    }
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
