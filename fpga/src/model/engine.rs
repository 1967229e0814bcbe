//! The device engine: one thread (`skif-model`) runs every attached adapter's TX and RX
//! engines and the network's routers in turn, outside every caller's stack.
//!
//! One thread for the whole machine, not one per adapter plus one for the network: a
//! packet then goes from a TX engine through the routers to an RX engine without a
//! hand-off between threads, where the per-part threads paid a wake-up every few packets
//! (the credits) and spent most of their time switching (`fpga/MODEL.md`, "Speed"). What
//! the model does is unchanged: each adapter steps exactly as its own thread did, and the
//! routers' passes are the same; only the interleaving of the parts is now chosen here
//! rather than by the OS scheduler (it was free to run them in this order before).
//!
//! Idle, the engine polls the machine's event counter ([`Wake`]), yielding its CPU between
//! looks, [`ModelConfig::idle_yields`] times, then sleeps on it (bounded by `idle_poll` and
//! by the next paced packet): the SEED-NOTES "fixed spin", polite to the ranks that share
//! the CPUs.

use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::adapter::Adapter;
use super::network::Network;
use super::{lock, ModelConfig, Wake};

/// Most router passes between two rounds of the adapters: a pass moves at most one packet
/// per input, so a few let a burst cross several hops before the engines refill.
const MAX_PASSES: usize = 8;

pub(crate) struct Engine {
    net: Arc<Network>,
    wake: Arc<Wake>,
    cfg: ModelConfig,
    /// Adapters attached since the engine last looked; `None` once the engine has ended.
    pending: Mutex<Option<Vec<Adapter>>>,
}

impl Engine {
    pub(crate) fn new(net: Arc<Network>, wake: Arc<Wake>, cfg: ModelConfig) -> Engine {
        Engine {
            net,
            wake,
            cfg,
            pending: Mutex::new(Some(Vec::new())),
        }
    }

    /// Hands an attached adapter to the engine; `false` (the adapter detached) once the
    /// engine has ended.
    pub(crate) fn adopt(&self, a: Adapter) -> bool {
        match lock(&self.pending).as_mut() {
            Some(v) => v.push(a),
            None => {
                a.detach();
                return false;
            }
        }
        self.wake.notify();
        true
    }

    /// The engine thread: steps until the machine stops, then detaches every adapter.
    pub(crate) fn run(&self) {
        let mut adapters: Vec<Adapter> = Vec::new();
        while !self.net.stop.load(SeqCst) {
            // Read before the step: an event during it makes the idle wait return at once.
            let seen = self.wake.generation();
            if let Some(v) = lock(&self.pending).as_mut() {
                adapters.append(v);
            }
            let mut progress = false;
            for a in adapters.iter_mut() {
                progress |= a.step();
            }
            let mut next: Option<Instant> = None;
            for _ in 0..MAX_PASSES {
                let (moved, at) = self.net.pass();
                next = at;
                if !moved {
                    break;
                }
                progress = true;
            }
            if progress {
                continue;
            }
            let mut t = self.cfg.idle_poll;
            if let Some(at) = next {
                t = t.min(at.saturating_duration_since(Instant::now()));
            }
            if t.is_zero() || self.wake.yield_poll(seen, self.cfg.idle_yields) {
                continue;
            }
            let mut seen = seen;
            self.wake.wait(&mut seen, t);
        }
        if let Some(v) = lock(&self.pending).take() {
            adapters.extend(v);
        }
        for a in &adapters {
            a.detach();
        }
    }
}
