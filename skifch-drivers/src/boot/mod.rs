//! The seam between a job's drivers and whatever started the job (issue 21): `skifrun`, a
//! PMI-1 server (`mpiexec.hydra`, `srun --mpi=pmi2`), a PMIx server. A driver that must
//! exchange endpoint addresses before it can send (the fabric driver) or must know which
//! ranks share a node (the hierarchical job) asks a [`Bootstrap`], never a launcher by name.
//!
//! Every call except [`Bootstrap::rank`], [`Bootstrap::size`] and [`Bootstrap::node_of`]
//! is collective: every rank of the job calls it, in the same order.
//!
//! [`from_env`] picks the client from what the launcher left in the environment:
//!
//! | launcher | variables it sets | client |
//! | --- | --- | --- |
//! | `mpiexec.hydra` (MPICH), `srun --mpi=pmi2` (Slurm) | `PMI_FD`, `PMI_RANK`, `PMI_SIZE` | [`pmi1`] over the inherited socket |
//! | `mpiexec.hydra -pmi-port`, a process the proxy did not fork | `PMI_PORT` (`host:port`), `PMI_ID` | [`pmi1`] over TCP |
//! | Open MPI's `mpirun`, `prterun`, `srun --mpi=pmix` | `PMIX_NAMESPACE`, `PMIX_RANK` (and the server's URI) | [`pmix`], through the system's `libpmix.so.2` loaded at run time |
//! | none of these | | [`Single`]: a 1-rank job |
//!
//! ## Starting a job on several nodes
//! ```text
//! mpiexec.hydra -hosts node1:4,node2:4 -n 8 ./prog     # MPICH's hydra (ssh to each host)
//! mpiexec.hydra -f hostfile -n 8 ./prog                # hostfile lines: node1:4
//! srun --mpi=pmi2 -N 2 -n 8 ./prog                     # Slurm: the PMI-1 wire protocol on PMI_FD
//! srun --mpi=pmix -N 2 -n 8 ./prog                     # Slurm's PMIx plugin
//! mpirun.openmpi --host node1:4,node2:4 -n 8 ./prog    # Open MPI (PMIx)
//! ```
//! Tested here: hydra (over `PMI_FD` and `-pmi-port`, one host, two host names, and two or
//! four network namespaces as nodes) and Open MPI 4.1's `mpirun` (one host, two
//! namespaces): `tests/boot.rs`, `tests/boot_pmix.rs`. Slurm is not installed on this
//! machine: its two plugins speak the same protocols but are untested.
//!
//! `skifrun` serves PMI-1 too (`PMI_FD`, one node: [`crate::launch`]). A process with
//! `SKIFCH_SIZE` > 1 and none of the PMI variables (started by a launcher that serves no
//! bootstrap) gets an "unsupported" error.

pub mod pmi1;
pub mod pmix;
pub mod threads;

use std::sync::{Arc, Mutex, Weak};

use skifch::{Error, Result};

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
    /// Asks the launcher to end the whole job with `exit_code` (`why` goes to its log).
    /// Not collective. The caller should exit afterwards: a launcher may take a moment.
    fn abort(&self, exit_code: i32, why: &str) -> Result<()> {
        let _ = (exit_code, why);
        Err(Error::Bootstrap(
            "abort is unsupported by this bootstrap".into(),
        ))
    }
    /// Leaves the launcher's job now, for a process about to end by `_exit` with its
    /// bootstrap never dropped (GASNet's `gasnet_exit`): MPICH's hydra SIGKILLs every rank
    /// of a node when one closes its PMI connection without `cmd=finalize`, as a crashed
    /// rank does. Collectives fail afterwards. The default does nothing.
    fn finalize(&self) {}
    /// A short name of the mechanism, for messages (`"pmi1"`, `"pmix"`, `"single"`).
    fn name(&self) -> &'static str {
        "bootstrap"
    }
}

/// The bootstrap of a process that no launcher started: a 1-rank job.
///
/// # Examples
/// ```
/// use skifch_drivers::boot::{Bootstrap, Single};
/// let b = Single;
/// assert_eq!((b.rank(), b.size(), b.node_of(0)), (0, 1, 0));
/// assert_eq!(b.allgather(b"me").unwrap(), vec![b"me".to_vec()]);
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct Single;

impl Bootstrap for Single {
    fn rank(&self) -> u32 {
        0
    }
    fn size(&self) -> u32 {
        1
    }
    fn node_of(&self, _rank: u32) -> u32 {
        0
    }
    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(vec![mine.to_vec()])
    }
    fn barrier(&self) -> Result<()> {
        Ok(())
    }
    fn abort(&self, _exit_code: i32, _why: &str) -> Result<()> {
        Ok(()) // the job is this process: its exit ends it
    }
    fn name(&self) -> &'static str {
        "single"
    }
}

/// The live bootstrap of this process, shared by every library that asks for it: a PMI
/// connection can be initialized only once per process.
static CURRENT: Mutex<Option<(Weak<dyn Bootstrap>, &'static str)>> = Mutex::new(None);

/// The bootstrap of the job this process belongs to, chosen from the environment (table
/// in the [module docs](self)). The first call connects; later calls, while any returned
/// `Arc` is alive, return the same one (several drivers or libraries of one process share
/// it). The connection is finalized when the last `Arc` is dropped; a launcher's
/// connection cannot be joined twice, so a later call then fails saying so: keep an `Arc`
/// for as long as collectives may follow.
///
/// # Errors
/// [`Error::Bootstrap`] naming the variable or command that failed: a malformed variable,
/// a server that refuses `init`, or one that went away.
///
/// # Examples
/// ```
/// // Not started by a launcher (the doctest): a 1-rank job.
/// let boot = skifch_drivers::boot::from_env()?;
/// if std::env::var_os("PMI_FD").is_none() && std::env::var_os("PMI_PORT").is_none() {
///     assert_eq!((boot.rank(), boot.size()), (0, 1));
/// }
/// # Ok::<(), skifch::Error>(())
/// ```
pub fn from_env() -> Result<Arc<dyn Bootstrap>> {
    let mut cur = CURRENT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((weak, name)) = cur.as_ref() {
        if let Some(live) = weak.upgrade() {
            return Ok(live);
        }
        if *name != Single.name() {
            return Err(Error::Bootstrap(
                format!(
                    "this process's {name} bootstrap was finalized when the last Arc that \
                     boot::from_env returned was dropped, and a launcher's connection cannot \
                     be joined twice (keep that Arc while collectives may follow)"
                )
                .into(),
            ));
        }
    }
    let boot: Arc<dyn Bootstrap> = if let Some(p) = pmi1::Pmi1::from_env()? {
        Arc::new(p)
    } else if let Some(p) = pmix::Pmix::from_env()? {
        Arc::new(p)
    } else {
        if env_num("SKIFCH_SIZE")?.unwrap_or(1) > 1 {
            return Err(Error::Bootstrap(
                "SKIFCH_SIZE > 1 but no PMI_FD, PMI_PORT or PMIX_NAMESPACE: the launcher serves no \
                 bootstrap (unsupported); start the job with skifrun, mpiexec.hydra, srun or mpirun"
                    .into(),
            ));
        }
        Arc::new(Single)
    };
    *cur = Some((Arc::downgrade(&boot), boot.name()));
    Ok(boot)
}

/// Finalizes this process's live bootstrap, if any ([`Bootstrap::finalize`]): for a rank
/// ending by `_exit` while its drivers (which hold the bootstrap) are never dropped.
pub fn finalize_current() {
    let live = CURRENT
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .and_then(|(weak, _)| weak.upgrade());
    if let Some(b) = live {
        b.finalize();
    }
}

/// Whether a launcher started this process as a rank of a job: `skifrun` (`SKIFCH_RANK`),
/// a PMI-1 server (`PMI_FD`, `PMI_PORT`) or a PMIx one (`PMIX_NAMESPACE`).
pub fn launched() -> bool {
    ["SKIFCH_RANK", "PMI_FD", "PMI_PORT", "PMIX_NAMESPACE"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// A numeric launcher variable (`None` when unset), or an error naming it.
pub(crate) fn env_num(name: &str) -> Result<Option<u32>> {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().map(Some).map_err(|_| {
            Error::Bootstrap(format!("{name}={v:?} is not a non-negative number").into())
        }),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(v)) => {
            Err(Error::Bootstrap(format!("{name}={v:?} is not text").into()))
        }
    }
}

/// Node indices `0..` in order of first appearance from any per-rank labels (host names,
/// a launcher's node ids).
pub(crate) fn number_nodes<T: PartialEq>(labels: &[T]) -> Vec<u32> {
    let mut seen: Vec<&T> = Vec::new();
    labels
        .iter()
        .map(|l| match seen.iter().position(|s| *s == l) {
            Some(i) => i as u32,
            None => {
                seen.push(l);
                (seen.len() - 1) as u32
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_numbered_by_first_appearance() {
        assert_eq!(number_nodes(&[7, 7, 3, 7, 3, 9]), vec![0, 0, 1, 0, 1, 2]);
        assert_eq!(number_nodes::<u32>(&[]), Vec::<u32>::new());
    }
}
