//! Traffic patterns of the simulator: who sends to whom, in what order.

use std::fmt;
use std::str::FromStr;

use super::topology::{Dims, NodeId, Port};
use crate::{Error, Result};

/// A traffic pattern. Every sender streams its messages back to back (or one per interval,
/// see `torus_sim::report::Spec`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// The paper's MsgRate test: node `i` of the first half streams to node `i + N/2`.
    Pairs,
    /// Every node sends to every other node in turn (`src + 1`, `src + 2`, …).
    AllToAll,
    /// Nearest-neighbour halo: every node sends to its six neighbours in turn.
    Halo,
    /// Every other node sends to one node (the centre of the torus).
    HotSpot,
    /// Every node sends to uniformly random other nodes (seeded).
    Uniform,
}

impl Pattern {
    /// All patterns, in the order the tool lists them.
    pub const ALL: [Pattern; 5] = [
        Pattern::Pairs,
        Pattern::AllToAll,
        Pattern::Halo,
        Pattern::HotSpot,
        Pattern::Uniform,
    ];

    /// The node every sender targets under [`Pattern::HotSpot`].
    pub fn hot_node(dims: &Dims) -> NodeId {
        dims.node(dims.extents().map(|k| k / 2))
    }

    /// The sending nodes, in order.
    pub fn senders(self, dims: &Dims) -> Vec<NodeId> {
        let n = dims.nodes() as NodeId;
        match self {
            _ if n < 2 => Vec::new(),
            Pattern::Pairs => (0..n / 2).collect(),
            Pattern::HotSpot => {
                let hot = Self::hot_node(dims);
                (0..n).filter(|&i| i != hot).collect()
            }
            Pattern::Halo if dims.extents().iter().all(|&k| k < 2) => Vec::new(),
            _ => (0..n).collect(),
        }
    }

    /// The messages of a run as `(src, dst)` in injection order: round `j` gives every sender
    /// its `j`-th message. Deterministic for a given `seed` (only `Uniform` uses it).
    ///
    /// # Examples
    /// ```
    /// use fpga::torus::{traffic::Pattern, Dims};
    /// let d = Dims::new(4, 4, 4).unwrap();
    /// let m = Pattern::Pairs.messages(&d, 2, 1);
    /// assert_eq!(m.len(), 64);
    /// assert_eq!(m[0], (0, 32));
    /// assert!(Pattern::Uniform.messages(&d, 10, 9).iter().all(|(s, t)| s != t));
    /// ```
    pub fn messages(self, dims: &Dims, per_sender: u32, seed: u64) -> Vec<(NodeId, NodeId)> {
        let n = dims.nodes() as NodeId;
        let senders = self.senders(dims);
        let ports: Vec<Port> = Port::ALL
            .into_iter()
            .filter(|p| dims.extents()[p.axis()] > 1)
            .collect();
        let hot = Self::hot_node(dims);
        let mut rng = SplitMix64(seed);
        let mut out = Vec::with_capacity(senders.len() * per_sender as usize);
        for j in 0..per_sender {
            for &s in &senders {
                let dst = match self {
                    Pattern::Pairs => s + n / 2,
                    Pattern::AllToAll => ((s as u32 + 1 + j % (n as u32 - 1)) % n as u32) as NodeId,
                    Pattern::Halo => dims.next_node(s, ports[j as usize % ports.len()]),
                    Pattern::HotSpot => hot,
                    Pattern::Uniform => {
                        let r = (rng.next_u64() % (n as u64 - 1)) as NodeId;
                        if r >= s {
                            r + 1
                        } else {
                            r
                        }
                    }
                };
                out.push((s, dst));
            }
        }
        out
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Pattern::Pairs => "pairs",
            Pattern::AllToAll => "alltoall",
            Pattern::Halo => "halo",
            Pattern::HotSpot => "hotspot",
            Pattern::Uniform => "uniform",
        })
    }
}

impl FromStr for Pattern {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Pattern::ALL
            .into_iter()
            .find(|p| p.to_string() == s)
            .ok_or_else(|| {
                Error::BadConfig(format!(
                    "pattern {s:?}: expected pairs, alltoall, halo, hotspot or uniform"
                ))
            })
    }
}

/// SplitMix64: a small, fast, well-mixed generator — enough for traffic, and no dependency.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
