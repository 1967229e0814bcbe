//! The in-process job over the lanes: N ranks as threads of one process, over the same
//! lane transport as the shm driver ([`crate::shm`]) but on heap memory. For the lane
//! tests and benchmarks, and for thread-per-rank programs that want the fast transport;
//! `skifch::local` is the core's small loopback job with the same entry points.

use std::sync::Arc;

use skifch::{Job, Result};

use crate::shm::{Fabric, HeapRegion, Layout, Params, RingDriver};

/// The driver type of an in-process job.
pub type InprocDriver = RingDriver<HeapRegion>;
/// A rank's handle in an in-process job.
pub type InprocJob = Job<InprocDriver>;

/// Creates an in-process job of `params.nranks` ranks; element `r` is rank `r`'s handle.
pub fn job(params: Params) -> Result<Vec<InprocJob>> {
    let lay = Layout::new(params)?;
    let fab = Arc::new(Fabric::create(HeapRegion::new(lay.total)?, params)?);
    (0..params.nranks)
        .map(|r| {
            Ok(Job::new(Arc::new(RingDriver::new(
                fab.clone(),
                r,
                "local",
            )?)))
        })
        .collect()
}

/// Runs `f` as an in-process job of `params`, one thread per rank; returns each rank's
/// result in rank order. A rank that panics is reported to the others as lost, and its
/// panic becomes an error (as `skifch::local::run`, over the lanes).
pub fn run_with<T: Send + 'static>(
    params: Params,
    f: impl Fn(InprocJob) -> Result<T> + Send + Sync + 'static,
) -> Result<Vec<T>> {
    skifch::local::run_ranks(job(params)?, |j| j.driver().bind_thread(), f)
}
