//! Where a rank runs, for CPU binding: the ranks of the job that share its *machine* — one
//! kernel, hence one set of CPUs — and its index among them.
//!
//! A launcher's node map (`PMI_process_mapping`, PMIx locality: [`crate::boot`]) says which
//! ranks share a node's memory; it does not say which share CPUs. On a cluster the two are
//! the same: one rank per node → index 0 of 1, and binding by that index is Open MPI's
//! `--bind-to core` (the node's k-th rank on the k-th core). Nodes that are network
//! namespaces, containers or VMs' shares of one host are different "nodes" on the same
//! CPUs: binding each by its node-local rank would put every node's first rank on CPU 0,
//! where they take turns at the scheduler tick (`docs/CLUSTER.md`, Open MPI's 4 ms). So the
//! ranks are grouped by the kernel's boot id (`/proc/sys/kernel/random/boot_id`, shared by
//! every namespace and container of one kernel, new at each boot), exchanged with the
//! fabric's addresses ([`crate::ofi::init_with`]).
//!
//! `SKIFCH_MACHINE_ID` replaces the boot id with any label: ranks with equal labels are
//! numbered together. For nodes of one kernel that do not share CPUs (containers, each
//! with its own cpuset): `SKIFCH_MACHINE_ID=$(hostname)` numbers each by its own ranks.

#[cfg(not(loom))]
use crate::AnyDriver;

/// This rank's node as the job's driver knows it, named by the node's lowest job rank:
/// a hierarchical job's node map (the launcher's: `PMI_process_mapping`, PMIx, `skifrun
/// --hosts`; [`crate::hier::HierDriver::node_ranks`]), rank 0 for a job of one node's
/// lanes (shm, the device model). `None` where the driver keeps no node map (the fabric
/// alone, a driver another library joined with): the caller's own guess then (mpi-lite's
/// `MPI_COMM_TYPE_SHARED`: the host name). A node is the launcher's, not the machine's
/// ([`Placement`]): network namespaces on one host are nodes of their own.
#[cfg(not(loom))]
pub fn node_leader(d: &AnyDriver) -> Option<u32> {
    match d {
        AnyDriver::Hier(h) => h.node_ranks().first().copied(),
        AnyDriver::Shm(_) | AnyDriver::Fpga(_) => Some(0),
        AnyDriver::Wrapped(w) => node_leader(w.inner().inner()),
        AnyDriver::Ofi(_) | AnyDriver::Fwd(_) => None,
    }
}

/// This process's index among the job's ranks on its machine, and their count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Index among the machine's ranks, in job-rank order.
    pub index: u32,
    /// Ranks of the job on this machine.
    pub count: u32,
}

impl Placement {
    /// Every rank of a `size`-rank job on this machine (a job of one node).
    pub fn one_machine(rank: u32, size: u32) -> Self {
        Placement {
            index: rank,
            count: size,
        }
    }

    /// The placement of `rank` given every rank's [`machine_key`] (in rank order).
    pub fn from_keys(keys: &[&[u8]], rank: u32) -> Self {
        let mine = keys.get(rank as usize).copied().unwrap_or_default();
        let same = |r: usize| !mine.is_empty() && keys[r] == mine;
        Placement {
            index: (0..rank as usize).filter(|&r| same(r)).count() as u32,
            count: if mine.is_empty() {
                1
            } else {
                (0..keys.len()).filter(|&r| same(r)).count() as u32
            },
        }
    }
}

/// This machine's identity: `SKIFCH_MACHINE_ID` if set, else the kernel's boot id, else
/// its host name; empty if none can be read (the rank then counts as alone on its
/// machine, and is not bound).
pub fn machine_key() -> Vec<u8> {
    if let Some(id) = std::env::var_os("SKIFCH_MACHINE_ID").filter(|v| !v.is_empty()) {
        return std::os::unix::ffi::OsStrExt::as_bytes(id.as_os_str()).to_vec();
    }
    [
        "/proc/sys/kernel/random/boot_id",
        "/proc/sys/kernel/hostname",
    ]
    .iter()
    .find_map(|p| {
        let s = std::fs::read_to_string(p).ok()?;
        let s = s.trim();
        (!s.is_empty()).then(|| s.as_bytes().to_vec())
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_numbered_within_their_machine() {
        let (a, b): (&[u8], &[u8]) = (b"host-a", b"host-b");
        let keys = [a, b, a, b, a];
        let at = |r| Placement::from_keys(&keys, r);
        assert_eq!(at(0), Placement { index: 0, count: 3 });
        assert_eq!(at(1), Placement { index: 0, count: 2 });
        assert_eq!(at(4), Placement { index: 2, count: 3 });
        assert_eq!(at(3), Placement { index: 1, count: 2 });
    }

    #[test]
    fn an_unknown_machine_is_alone() {
        let keys: [&[u8]; 3] = [b"", b"", b"x"];
        assert_eq!(
            Placement::from_keys(&keys, 1),
            Placement { index: 0, count: 1 }
        );
        assert_eq!(
            Placement::from_keys(&keys, 2),
            Placement { index: 0, count: 1 }
        );
    }

    #[test]
    fn this_machine_has_a_key() {
        assert!(!machine_key().is_empty());
    }
}
