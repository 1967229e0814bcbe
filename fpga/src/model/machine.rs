//! The machine: every node's BAR, the network, and the device engine's thread.

use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::adapter::Adapter;
use super::bar::Bar;
use super::engine::Engine;
use super::network::Network;
use super::{lock, Fault, HostMemory, IrqSink, ModelConfig, Wake};
use crate::regs::Dims;
use crate::{Error, Result};

/// How long [`Machine::shutdown`] waits for its threads in all.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// X×Y×Z adapters and the torus between them (datasheet "Overview").
///
/// [`Machine::new`] builds every node's [`Bar`] (powered, at reset) and starts the device
/// engine's thread (`skif-model`: every adapter and router, `engine.rs`);
/// [`Machine::attach`] gives a node its host (memory and interrupt line) and hands its
/// adapter to the engine. Nodes never attached still route transit packets; packets for them
/// wait in the network (back-pressure) like packets for a disabled adapter.
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use fpga::model::{HostMemory, IrqSink, Machine, ModelConfig};
/// use fpga::regs::{self, Dims};
/// struct NoMem;
/// impl HostMemory for NoMem {
///     fn dma_read(&self, _: u64, _: &mut [u8]) -> fpga::Result<()> {
///         Err(fpga::Error::BadConfig("unmapped".into()))
///     }
///     fn dma_write(&self, _: u64, _: &[u8]) -> fpga::Result<()> {
///         Err(fpga::Error::BadConfig("unmapped".into()))
///     }
/// }
/// struct NoIrq;
/// impl IrqSink for NoIrq { fn raise(&self, _: u32) {} }
/// let m = Machine::new(Dims::new(2, 2, 1).unwrap(), ModelConfig::default()).unwrap();
/// let bar = m.attach(3, Arc::new(NoMem), Arc::new(NoIrq)).unwrap();
/// bar.host_write(regs::CTRL, regs::ctrl::ENABLE).unwrap(); // no rings programmed
/// assert_ne!(bar.host_read(regs::ERR_STATUS).unwrap() & regs::err::RING_CONFIG, 0);
/// assert_ne!(bar.host_read(regs::STATUS).unwrap() & regs::status::HALTED, 0);
/// assert!(m.attach(3, Arc::new(NoMem), Arc::new(NoIrq)).is_err()); // already attached
/// m.shutdown();
/// ```
pub struct Machine {
    dims: Dims,
    cfg: ModelConfig,
    net: Arc<Network>,
    engine: Arc<Engine>,
    wake: Arc<Wake>,
    bars: Vec<Arc<Bar>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Machine")
            .field("dims", &self.dims)
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Machine {
    /// A machine of `dims` nodes with `cfg` (checked); starts the device engine's thread.
    pub fn new(dims: Dims, cfg: ModelConfig) -> Result<Machine> {
        cfg.validate()?;
        let caps = cfg.caps()?;
        let wake = Arc::new(Wake::default());
        let bars = (0..dims.nodes())
            .map(|id| {
                let c = dims.coord(id)?;
                Ok(Bar::with_wake(c, dims, caps, cfg.max_pkt, wake.clone()))
            })
            .collect::<Result<Vec<_>>>()?;
        let net = Arc::new(Network::new(dims, cfg.clone(), bars.clone(), wake.clone()));
        let engine = Arc::new(Engine::new(net.clone(), wake.clone(), cfg.clone()));
        let e2 = engine.clone();
        let h = std::thread::Builder::new()
            .name("skif-model".into())
            .spawn(move || e2.run())
            .map_err(|e| {
                Error::BadConfig(format!(
                    "model: cannot start the device engine's thread: {e}"
                ))
            })?;
        Ok(Machine {
            dims,
            cfg,
            net,
            engine,
            wake,
            bars,
            threads: Mutex::new(vec![h]),
        })
    }

    /// The torus dimensions.
    pub fn dims(&self) -> Dims {
        self.dims
    }

    /// The configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// Node `node`'s BAR (attached or not).
    pub fn bar(&self, node: u16) -> Result<Arc<Bar>> {
        self.bars
            .get(node as usize)
            .cloned()
            .ok_or_else(|| Error::BadConfig(format!("model: no node {node}")))
    }

    /// Powers on node `node`'s adapter: its BAR, its host memory and interrupt sink; the
    /// device engine steps it on its own thread (never on the caller's stack). Once per
    /// node.
    pub fn attach(
        &self,
        node: u16,
        mem: Arc<dyn HostMemory>,
        irq: Arc<dyn IrqSink>,
    ) -> Result<Arc<Bar>> {
        if self.net.stop.load(SeqCst) {
            return Err(Error::BadConfig("model: machine shut down".into()));
        }
        let bar = self.bar(node)?;
        let adapter = Adapter::new(node, bar.clone(), mem, self.net.clone(), self.cfg.clone())?;
        bar.attach(irq)?;
        if !self.engine.adopt(adapter) {
            return Err(Error::BadConfig("model: machine shut down".into()));
        }
        Ok(bar)
    }

    /// Injects `fault` at node `node` (see [`Fault`]). A link fault on a dimension of
    /// extent 1 (no such link) is `Error::BadConfig`.
    pub fn inject(&self, node: u16, fault: Fault) -> Result<()> {
        let bar = self.bar(node)?;
        match fault {
            Fault::BadCompletionLength => bar.arm_bad_completion(),
            Fault::CorruptPacket => bar.arm_corrupt_packet(),
            Fault::StuckDoorbell(on) => bar.set_stuck_doorbell(on),
            Fault::LinkDown(l) | Fault::LinkUp(l) => {
                let up = matches!(fault, Fault::LinkUp(_));
                if self.dims.get(l.dim()) < 2 {
                    return Err(Error::BadConfig(format!(
                        "model: node {node} has no link {l:?} in a {}-wide dimension",
                        self.dims.get(l.dim())
                    )));
                }
                let nb = self.dims.node_id(self.dims.neighbour(bar.coord(), l)?)?;
                self.net.set_link(node, nb, l, up);
                bar.set_link_fault(l, up);
                self.bar(nb)?.set_link_fault(l.opposite(), up);
            }
        }
        Ok(())
    }

    /// Node `node`'s host is gone for good (its process exited or died): from now on the
    /// network drops the packets that arrive for it (counted in its `CNT_RX_DROPPED`)
    /// instead of back-pressuring them, so that one absent node cannot stall the traffic
    /// of the others behind its full ejection buffer. Before this, packets for a node whose
    /// adapter is not enabled wait (a rank that has not started yet loses nothing).
    pub fn host_gone(&self, node: u16) -> Result<()> {
        self.bar(node)?;
        self.net.set_host_gone(node);
        Ok(())
    }

    /// Stops every thread of the machine and waits for them (at most a few seconds in all;
    /// a thread stuck in a host-memory callback is left detached rather than hang the
    /// caller). Idempotent; also run on drop. Returns whether every thread ended.
    pub fn shutdown(&self) -> bool {
        self.net.stop.store(true, SeqCst);
        self.wake.notify();
        let handles: Vec<_> = lock(&self.threads).drain(..).collect();
        let deadline = Instant::now() + SHUTDOWN_WAIT;
        let mut all = true;
        for h in handles {
            while !h.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            if h.is_finished() {
                all &= h.join().is_ok();
            } else {
                all = false;
            }
        }
        all
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        self.shutdown();
    }
}
