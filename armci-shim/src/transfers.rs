//! The message path's transfers: on a job of several hosts whose driver reaches the other
//! hosts' memory only by transfers (`skifch::rma`, `RmaCaps::transfers`: the fabric's
//! `FI_RMA`), a world allocation is a segment every rank exposes. The node's ranks map it
//! and take the direct path to each other (copies, CPU atomics); a rank on another host
//! is reached by `FI_RMA` for contiguous puts and gets, and by requests its CPU serves for
//! everything else (accumulates, atomics, strided transfers, mutexes). Both apply atomics
//! with the same CPU atomics on the same memory, so they stay atomic with each other — a
//! fabric's own atomics would not be (`fi_atomic(3)`, "Completions").
//!
//! A put returns once its data is in the target's memory (the provider's quiet), as every
//! operation of the message path does: later requests, fences and barriers need no
//! extra step.
//!
//! Chosen at start-up (`skifch::rma::JobPath::choose`, every rank alike):
//! `ARMCI_SHIM_RMA=transfers` asks for it, and by default a provider whose hardware applies transfers without the target's
//! calls (`RmaCaps::remote_progress`: a NIC's RMA) takes it; over the sockets providers
//! the message path stays, whose requests the target serves at once where a transfer
//! waits for its provider's next progress tick (`docs/CLUSTER.md`).
#![allow(unsafe_code)] // the caller's buffers, as raw pointers

use skifch::rma::Window as _;
use skifch::Port;

use crate::engine::Target;
use crate::{Armci, Error, Result};

impl<P: Port> Armci<P> {
    /// Copies `len` bytes from local `src` to `t` by a transfer, complete at the target
    /// at return.
    ///
    /// # Safety
    /// `src` is readable for `len` bytes; `t` was located in a transfers allocation.
    pub(crate) unsafe fn xfer_put(&self, src: *const u8, t: Target, len: usize) -> Result<()> {
        // SAFETY: the caller's contract.
        let data = unsafe { std::slice::from_raw_parts(src, len) };
        self.with_window(t, len, |w, off| {
            w.put(t.proc, off, data)?;
            w.quiet()
        })
    }

    /// Copies `len` bytes from `t` to local `dst` by a transfer.
    ///
    /// # Safety
    /// `dst` is writable for `len` bytes and not referenced meanwhile; `t` was located in
    /// a transfers allocation.
    pub(crate) unsafe fn xfer_get(&self, t: Target, dst: *mut u8, len: usize) -> Result<()> {
        // SAFETY: the caller's contract.
        let out = unsafe { std::slice::from_raw_parts_mut(dst, len) };
        self.with_window(t, len, |w, off| w.get(t.proc, off, out))
    }

    /// Runs `f` with the window of `t`'s allocation and `t`'s offset in its rank's block.
    fn with_window(
        &self,
        t: Target,
        len: usize,
        f: impl FnOnce(&skifch::rma::MappedWindow, usize) -> skifch::Result<()>,
    ) -> Result<()> {
        let a = self.allocs.read().unwrap_or_else(|p| p.into_inner());
        let x = a.get(&t.alloc).ok_or(Error::NotAllocated {
            proc: t.proc,
            addr: t.addr,
            len,
        })?;
        let off = t.addr - x.bases[t.proc as usize].0;
        f(&x.win, off).map_err(Error::from)
    }
}
