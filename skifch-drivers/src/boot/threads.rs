//! A bootstrap in one process, ranks as threads ([`ThreadBoot`]): for tests and examples
//! of drivers that exchange addresses (the fabric driver) or need node locality (the
//! hierarchy). A rank that never arrives fails the others' collective after 120 s.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use skifch::{Error, Result};

use super::Bootstrap;

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
    /// Rank `r` is on node `r % nodes`.
    nodes: u32,
    shared: Arc<(Mutex<Round>, Condvar)>,
}

impl ThreadBoot {
    /// The bootstraps of an in-process job of `size` ranks on one node, element `r` for
    /// rank `r`.
    pub fn job(size: u32) -> Vec<ThreadBoot> {
        Self::job_on(size, 1)
    }

    /// As [`ThreadBoot::job`], the ranks dealt round-robin over `nodes` nodes (rank `r`
    /// on node `r % nodes`): a hierarchical job in one process.
    pub fn job_on(size: u32, nodes: u32) -> Vec<ThreadBoot> {
        let nodes = nodes.max(1);
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
                nodes,
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
    fn node_of(&self, rank: u32) -> u32 {
        rank % self.nodes
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
