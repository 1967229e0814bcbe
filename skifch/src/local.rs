//! The in-process job: N ranks as threads of one process, over the same lane transport as
//! the shm driver but on heap memory. For tests, and for thread-per-rank programs.

use std::sync::Arc;

use crate::ring::{Fabric, HeapRegion, Layout, Params, RingDriver};
use crate::{Error, Job, Result};

/// The driver type of an in-process job.
pub type LocalDriver = RingDriver<HeapRegion>;
/// A rank's handle in an in-process job.
pub type LocalJob = Job<LocalDriver>;

/// Creates an in-process job of `params.nranks` ranks; element `r` is rank `r`'s handle.
pub fn job(params: Params) -> Result<Vec<LocalJob>> {
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

/// Runs `f` as an `n`-rank in-process job, one thread per rank, with default parameters
/// (4 ports, lanes sized as for the shm driver); returns each rank's result in rank order.
/// A rank that panics is reported to the others as lost, and its panic becomes an error.
pub fn run<T: Send + 'static>(
    n: u32,
    f: impl Fn(LocalJob) -> Result<T> + Send + Sync + 'static,
) -> Result<Vec<T>> {
    let p = Params {
        nranks: n,
        nports: Params::DEFAULT_PORTS,
        lane_bytes: 64 << 10,
    };
    run_with(p, f)
}

/// As [`run`], with explicit transport parameters.
pub fn run_with<T: Send + 'static>(
    params: Params,
    f: impl Fn(LocalJob) -> Result<T> + Send + Sync + 'static,
) -> Result<Vec<T>> {
    let f = Arc::new(f);
    let handles: Vec<_> = job(params)?
        .into_iter()
        .map(|j| {
            let f = f.clone();
            std::thread::Builder::new()
                .name(format!("rank{}", j.rank()))
                .spawn(move || {
                    j.driver().bind_thread();
                    f(j)
                })
                .map_err(|e| Error::os("spawning a rank thread", e))
        })
        .collect::<Result<_>>()?;
    let mut out = Vec::with_capacity(handles.len());
    let mut first_err = None;
    for (r, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok(Ok(v)) => out.push(v),
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(p) => {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into());
                first_err
                    .get_or_insert(Error::Bootstrap(format!("rank {r} panicked: {msg}").into()));
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}
