//! Torus geometry: node numbering, ports, dimension-order routes and the closed forms the
//! tests check the simulator against.

use crate::regs::Dim;

/// A node's index: `x + X·(y + Y·z)` (the adapter's linear node id, `regs::Dims::node_id`).
pub type NodeId = u16;

/// The torus size: the adapter's `TORUS_DIMS` type, one type for the device model, the
/// driver and the simulator. Each extent is `1..=16`; an extent of 1 means "no links in
/// that dimension", so 8×1×1 is a ring.
///
/// # Examples
/// ```
/// use fpga::torus::Dims;
/// let d: Dims = "4x4x4".parse().unwrap();
/// assert_eq!(d.nodes(), 64);
/// assert_eq!(d.distance(0, d.node([2, 3, 1])), 2 + 1 + 1);
/// assert!("0x4x4".parse::<Dims>().is_err());
/// ```
pub use crate::regs::Dims;

/// The simulator's view of a torus: node ids and `[x, y, z]` coordinates as `u16`, routes,
/// and the closed forms the tests check the simulator against.
impl Dims {
    /// The extents `[X, Y, Z]`.
    pub fn extents(&self) -> [u16; 3] {
        [Dim::X, Dim::Y, Dim::Z].map(|d| self.get(d) as u16)
    }

    /// Coordinates of node `n` (`n < nodes()`).
    pub fn coords(&self, n: NodeId) -> [u16; 3] {
        let [x, y, _] = self.extents();
        [n % x, (n / x) % y, n / (x * y)]
    }

    /// Node at coordinates `c` (each taken modulo its dimension).
    pub fn node(&self, c: [u16; 3]) -> NodeId {
        let [x, y, z] = self.extents();
        (c[0] % x) + x * ((c[1] % y) + y * (c[2] % z))
    }

    /// The neighbour of `n` through `port`.
    pub fn next_node(&self, n: NodeId, port: Port) -> NodeId {
        let mut c = self.coords(n);
        let i = port.axis();
        let k = self.extents()[i];
        c[i] = if port.plus() {
            (c[i] + 1) % k
        } else {
            (c[i] + k - 1) % k
        };
        self.node(c)
    }

    /// Torus distance: Σ over dimensions of `min(d, k − d)`.
    pub fn distance(&self, a: NodeId, b: NodeId) -> u32 {
        let (ca, cb, ext) = (self.coords(a), self.coords(b), self.extents());
        (0..3)
            .map(|i| {
                let k = ext[i];
                let d = (cb[i] + k - ca[i]) % k;
                d.min(k - d) as u32
            })
            .sum()
    }

    /// Whether the hop from `n` through `port` is the wrap-around link of its dimension (the
    /// dateline of the virtual-channel scheme).
    pub fn is_wrap(&self, n: NodeId, port: Port) -> bool {
        let c = self.coords(n)[port.axis()];
        let k = self.extents()[port.axis()];
        if port.plus() {
            c == k - 1
        } else {
            c == 0
        }
    }

    /// Mean hop count of uniform traffic over all ordered pairs `src ≠ dst` (closed form).
    ///
    /// Per dimension the mean of `min(d, k − d)` over `d` uniform in `0..k` is `k/4` for even
    /// `k` and `(k² − 1)/(4k)` for odd `k`. Over all `N²` ordered pairs (self included, at
    /// distance 0) the mean is the sum over dimensions; excluding the `N` self pairs multiplies
    /// it by `N/(N − 1)`.
    ///
    /// # Examples
    /// ```
    /// use fpga::torus::Dims;
    /// let d = Dims::new(4, 4, 4).unwrap();
    /// assert!((d.mean_hops_uniform() - 3.0 * 64.0 / 63.0).abs() < 1e-12);
    /// ```
    pub fn mean_hops_uniform(&self) -> f64 {
        let n = self.nodes() as f64;
        if n < 2.0 {
            return 0.0;
        }
        let per_dim: f64 = self
            .extents()
            .iter()
            .map(|&k| {
                let k = k as f64;
                if k as u64 & 1 == 0 {
                    k / 4.0
                } else {
                    (k * k - 1.0) / (4.0 * k)
                }
            })
            .sum();
        per_dim * n / (n - 1.0)
    }

    /// Upper bound on the aggregate accepted throughput (bytes/ns, all nodes together) of
    /// uniform all-to-all traffic, from the bisection (closed form; `link_bw` in bytes/ns).
    ///
    /// Cut the torus in half across its largest dimension `k` (a plane cut crosses every ring
    /// of that dimension twice, once in the middle and once at the wrap-around): `2·N/k`
    /// directed links cross from one half to the other. With uniform traffic a fraction
    /// `(N/2)/(N − 1)` of the traffic of each of the `N/2` nodes of a half crosses the cut, so
    /// an aggregate throughput `T` puts `T/2 · (N/2)/(N − 1)` bytes/ns on those links:
    /// `T ≤ 8·b·(N − 1)/k`. For 4×4×4 that is `126·b`, i.e. `1.97·b` per node. (For odd `k`
    /// the halves are unequal; the bound uses `⌊k/2⌋` and is then slightly loose.)
    pub fn bisection_bound(&self, link_bw: f64) -> f64 {
        let n = self.nodes() as f64;
        let k = *self.extents().iter().max().unwrap_or(&1);
        if k < 2 {
            return f64::INFINITY;
        }
        let crossing = 2.0 * n / k as f64; // directed links, one direction
        let half = (k / 2) as f64 / k as f64; // fraction of nodes on one side
        let frac = (n * (1.0 - half)) / (n - 1.0); // share of a source's traffic crossing
        crossing * link_bw / (half * frac)
    }
}

/// One of a router's six network ports: the adapter's torus link of the same index
/// (`2·axis + (0 for +, 1 for −)`; [`Port::along`], [`Port::axis`], [`Port::plus`]).
pub type Port = crate::regs::Link;

/// One hop of a route: leave `node` through `port` on virtual channel `vc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    /// The router the hop leaves.
    pub node: NodeId,
    /// The link it leaves by.
    pub port: Port,
    /// The virtual channel it uses on that link.
    pub vc: u8,
}

/// The dimension-order routing decision at `cur` for a packet from `src` to `dst`: the port
/// to leave through, or `None` when `cur == dst` (eject).
///
/// X first, then Y, then Z; in each dimension the shorter direction. When both directions
/// are equally long (`d = k/2`, even `k`) the source's coordinate in that dimension breaks the
/// tie (even: +, odd: −), which spreads that traffic over both directions and stays
/// consistent along the route (after one hop the remaining distance is below `k/2`).
pub fn next_port(dims: &Dims, src: NodeId, cur: NodeId, dst: NodeId) -> Option<Port> {
    let (cc, cd) = (dims.coords(cur), dims.coords(dst));
    (0..3).find(|&i| cc[i] != cd[i]).map(|i| {
        let k = dims.extents()[i];
        let d = (cd[i] + k - cc[i]) % k;
        let plus = match (2 * d).cmp(&k) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => dims.coords(src)[i] & 1 == 0,
        };
        Port::along(i, plus)
    })
}

/// The virtual channel of the hop `(node, port)` given the previous hop's dimension and VC
/// (dateline scheme): VC 0 on entering a dimension, VC 1 from the wrap-around link of that
/// dimension on. With `vcs == 1` always VC 0.
pub fn hop_vc(dims: &Dims, vcs: u8, prev: Option<(usize, u8)>, node: NodeId, port: Port) -> u8 {
    if vcs < 2 {
        return 0;
    }
    let carried = match prev {
        Some((dim, vc)) if dim == port.axis() => vc,
        _ => 0,
    };
    if dims.is_wrap(node, port) {
        1
    } else {
        carried
    }
}

/// The full dimension-order route from `src` to `dst` (empty when equal).
///
/// # Examples
/// ```
/// use fpga::torus::{route, Dims};
/// let d = Dims::new(8, 1, 1).unwrap();
/// let r = route(&d, 2, 6, 2); // 6 → 7 → 0 → 1 → 2: VC 1 from the wrap-around on
/// assert_eq!(r.len(), 4);
/// assert_eq!(r.iter().map(|h| h.vc).collect::<Vec<_>>(), [0, 1, 1, 1]);
/// ```
pub fn route(dims: &Dims, vcs: u8, src: NodeId, dst: NodeId) -> Vec<Hop> {
    let mut hops = Vec::new();
    let mut cur = src;
    let mut prev = None;
    while let Some(port) = next_port(dims, src, cur, dst) {
        let vc = hop_vc(dims, vcs, prev, cur, port);
        hops.push(Hop {
            node: cur,
            port,
            vc,
        });
        prev = Some((port.axis(), vc));
        cur = dims.next_node(cur, port);
    }
    hops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_round_trips() {
        let d = Dims::new(3, 4, 5).unwrap();
        for n in 0..d.nodes() as NodeId {
            assert_eq!(d.node(d.coords(n)), n);
        }
    }

    #[test]
    fn tie_break_spreads_over_both_directions() {
        let d = Dims::new(4, 1, 1).unwrap();
        assert_eq!(next_port(&d, 0, 0, 2), Some(Port::along(0, true)));
        assert_eq!(next_port(&d, 1, 1, 3), Some(Port::along(0, false)));
    }

    #[test]
    fn bisection_bound_4x4x4() {
        let d = Dims::new(4, 4, 4).unwrap();
        assert!((d.bisection_bound(1.0) - 126.0).abs() < 1e-9);
    }
}
