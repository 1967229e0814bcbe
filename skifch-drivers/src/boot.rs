//! The seam between a job's drivers and whatever started the job (issue 21): `skifrun`, a
//! PMI-1 server (`mpiexec.hydra`, `srun --mpi=pmi2`), a PMIx server. A driver that must
//! exchange endpoint addresses before it can send (the fabric driver) or must know which
//! ranks share a node (the hierarchical job) asks a [`Bootstrap`], never a launcher by name.
//!
//! Every call except [`Bootstrap::rank`], [`Bootstrap::size`] and [`Bootstrap::node_of`]
//! is collective: every rank of the job calls it, in the same order.

use skifch::Result;

/// What the launcher tells a rank and the collective exchanges it serves.
pub trait Bootstrap: Send + Sync {
    /// This process's rank in the job.
    fn rank(&self) -> u32;
    /// Ranks in the job.
    fn size(&self) -> u32;
    /// The node (host) index of `rank`, `0..` in order of first appearance; ranks with the
    /// same index share memory (PMI's `PMI_process_mapping`, PMIx's locality).
    fn node_of(&self, rank: u32) -> u32;
    /// Collective: every rank contributes `mine` (any length, may differ by rank) and gets
    /// every rank's contribution, indexed by rank. Completes when all ranks have called it.
    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>>;
    /// Collective: returns once every rank has called it.
    fn barrier(&self) -> Result<()>;
}
