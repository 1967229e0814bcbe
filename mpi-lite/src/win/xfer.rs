//! The transfers part of the message path: on a job of several hosts whose driver reaches
//! other hosts' memory by transfers (`skifch::rma`, `RmaCaps::transfers`: the fabric's
//! `FI_RMA`), an `MPI_Win_allocate` window's memory is a segment every member exposes,
//! and `MPI_Put`/`MPI_Get` go straight to the target's memory — by transfers to members
//! on other hosts, by copies to the node's members, whose segments are mapped — while
//! synchronisation and the accumulate family stay messages served by the target's CPU:
//! a fabric's atomics are atomic only against that fabric's, not against the CPU atomics
//! the target's node peers apply (`fi_atomic(3)`, "Completions").
//!
//! Completion (MPI-3.1 §11.5): a put returns locally complete (the provider copied or
//! sent it); before any message that reports completion — a flush's request, an unlock,
//! a fence's notice, `MPI_Win_complete`'s notice, the free's barrier — this origin waits
//! for every transfer of the window to be in the target's memory
//! ([`skifch::rma::Window::quiet`]). A lock not yet requested (the message path defers it,
//! `msg.rs`) is taken before the first transfer under it, so the data never lands outside
//! the lock.
//!
//! Chosen per window at creation ([`wanted`]): `SKIFMPI_RMA=transfers` asks for it,
//! `SKIFMPI_RMA=messages` refuses it, and by default a provider whose hardware applies
//! transfers without the target's calls (`RmaCaps::remote_progress`: a NIC's RMA) takes it,
//! while the sockets providers keep messages: there a transfer is applied only inside the
//! target's libfabric calls, every millisecond of its progress thread (`docs/CLUSTER.md`).

use std::sync::atomic::Ordering;

use skifch::rma::{RmaCaps, Window as _};
use skifch::Port;

use super::Win;
use crate::comm::Mpi;
use crate::error::Result;

/// Whether a window of `flavor` over a provider offering `caps` takes transfers (module
/// docs). Only `MPI_Win_allocate` windows: the library's memory, exposed at creation
/// (the program's memory of `MPI_Win_create` is not registered with the fabric).
pub(super) fn wanted(caps: RmaCaps, flavor: super::Flavor) -> bool {
    flavor == super::Flavor::Allocate
        && caps.transfers_chosen(std::env::var("SKIFMPI_RMA").ok().as_deref())
}

impl Win {
    /// `MPI_Put` on the transfers path: member `r`'s lock taken if deferred, then each run.
    pub(super) fn xfer_put<P: Port>(
        &self,
        mpi: &Mpi<P>,
        r: u32,
        runs: &[(usize, usize, usize)],
        data: &[u8],
    ) -> Result<()> {
        self.take_deferred_lock(mpi, r)?;
        for &(off, p, len) in runs {
            self._map.put(r, off, &data[p..p + len])?;
        }
        self.unquiet.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// `MPI_Get` on the transfers path (the provider completes this origin's puts first).
    pub(super) fn xfer_get<P: Port>(
        &self,
        mpi: &Mpi<P>,
        r: u32,
        runs: &[(usize, usize, usize)],
        out: &mut [u8],
    ) -> Result<()> {
        self.take_deferred_lock(mpi, r)?;
        for &(off, p, len) in runs {
            self._map.get(r, off, &mut out[p..p + len])?;
        }
        Ok(())
    }

    /// Waits until every transfer of this window is in its target's memory (before a
    /// message that reports completion: module docs).
    pub(super) fn xfer_quiet(&self) -> Result<()> {
        if self.unquiet.swap(false, Ordering::Relaxed) {
            self._map.quiet()?;
        }
        Ok(())
    }
}
