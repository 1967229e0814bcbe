//! An ofi job in one process, ranks as threads: [`run`] over the in-process bootstrap
//! ([`ThreadBoot`], `crate::boot::threads`), for tests and examples. Every rank still opens
//! its own endpoints and talks through the provider (over loopback for `tcp`).

use std::sync::Arc;

use skifch::{Error, Result};

use super::{Config, OfiJob};
pub use crate::boot::threads::ThreadBoot;

/// Runs `f` as an in-process ofi job of `size` ranks over `cfg`, one thread per rank;
/// returns each rank's result in rank order (a rank that panics becomes an error).
pub fn run<T: Send + 'static>(
    size: u32,
    cfg: &Config,
    f: impl Fn(OfiJob) -> Result<T> + Send + Sync + 'static,
) -> Result<Vec<T>> {
    let f = Arc::new(f);
    let threads: Vec<_> = ThreadBoot::job(size)
        .into_iter()
        .map(|boot| {
            let (f, cfg) = (f.clone(), cfg.clone());
            std::thread::spawn(move || f(super::init(&boot, &cfg)?))
        })
        .collect();
    threads
        .into_iter()
        .enumerate()
        .map(|(r, t)| {
            t.join()
                .unwrap_or_else(|_| Err(Error::Bootstrap(format!("rank {r} panicked").into())))
        })
        .collect()
}
