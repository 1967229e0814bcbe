//! An ofi job in one process, ranks as threads: a [`Bootstrap`] over shared memory of the
//! process ([`ThreadBoot`]) and [`run`], for tests and examples. Every rank still opens
//! its own endpoints and talks through the provider (over loopback for `tcp`).

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use skifch::{Error, Result};

use super::{Config, OfiJob};
use crate::boot::Bootstrap;

struct Round {
    gen: u64,
    arrived: u32,
    parts: Vec<Vec<u8>>,
    last: Arc<Vec<Vec<u8>>>,
}

/// One rank's view of an in-process bootstrap; [`ThreadBoot::job`] makes all of them.
pub struct ThreadBoot {
    rank: u32,
    size: u32,
    shared: Arc<(Mutex<Round>, Condvar)>,
}

impl ThreadBoot {
    /// The bootstraps of an in-process job of `size` ranks, element `r` for rank `r`.
    pub fn job(size: u32) -> Vec<ThreadBoot> {
        let shared = Arc::new((
            Mutex::new(Round {
                gen: 0,
                arrived: 0,
                parts: vec![Vec::new(); size as usize],
                last: Arc::default(),
            }),
            Condvar::new(),
        ));
        (0..size)
            .map(|rank| ThreadBoot {
                rank,
                size,
                shared: shared.clone(),
            })
            .collect()
    }
}

impl Bootstrap for ThreadBoot {
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn node_of(&self, _rank: u32) -> u32 {
        0
    }
    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let (m, cv) = &*self.shared;
        let mut st = m.lock().unwrap_or_else(|p| p.into_inner());
        let gen = st.gen;
        st.parts[self.rank as usize] = mine.to_vec();
        st.arrived += 1;
        if st.arrived == self.size {
            let parts = std::mem::replace(&mut st.parts, vec![Vec::new(); self.size as usize]);
            st.last = Arc::new(parts);
            st.arrived = 0;
            st.gen += 1;
            cv.notify_all();
        } else {
            // A rank that never arrives (it failed before) must not hang the others.
            let (g, t) = cv
                .wait_timeout_while(st, Duration::from_secs(120), |s| s.gen == gen)
                .unwrap_or_else(|p| p.into_inner());
            st = g;
            if t.timed_out() {
                return Err(Error::Bootstrap(
                    "in-process bootstrap: a rank never joined the all-gather".into(),
                ));
            }
        }
        Ok((*st.last).clone())
    }
    fn barrier(&self) -> Result<()> {
        self.allgather(&[]).map(drop)
    }
}

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
