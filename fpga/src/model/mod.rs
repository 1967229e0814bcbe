//! The behavioural model of the SKIF adapter (datasheet `fpga/README.md`), as real threads.
//!
//! * [`Bar`] — BAR0 of one adapter: `BAR0_SIZE / 4` atomic words with the datasheet's
//!   access semantics ([`Bar::host_read`], [`Bar::host_write`]: RO, RW, RW1C, latched
//!   64-bit counters, self-clearing `CTRL.RESET`, ring configuration checked at ENABLE).
//! * [`HostMemory`], [`IrqSink`] — what the device sees of its host: DMA by IOVA and an
//!   interrupt vector. The driver's `model` backend implements them over its DMA memory.
//! * [`Machine`] — X×Y×Z adapters and the torus between them. One device engine thread
//!   steps every attached adapter's TX and RX engines and the routers (dimension-order
//!   routing, two dateline virtual channels, credit-based flow control with bounded per-VC
//!   input buffers). Nothing runs on the caller's stack, so the races between driver and
//!   device are real.
//! * [`Fault`] — faults a test injects ([`Machine::inject`]).
//!
//! Where the model decides what the datasheet leaves open, or departs from it, is listed
//! in `fpga/MODEL.md`.
//!
//! The model never panics on what the driver or host memory does: a bad register value,
//! descriptor, doorbell or DMA address becomes an `ERR_STATUS` bit (and `STATUS.HALTED`
//! when the datasheet calls it fatal) and an ERROR interrupt.
//!
//! # Examples
//! ```
//! use std::sync::Arc;
//! use fpga::model::{Bar, Machine, ModelConfig};
//! use fpga::regs::{self, Dims};
//! let m = Machine::new(Dims::new(2, 1, 1).unwrap(), ModelConfig::default()).unwrap();
//! let bar: Arc<Bar> = m.bar(1).unwrap();
//! assert_eq!(bar.host_read(regs::ID).unwrap(), regs::ID_VALUE);
//! assert_eq!(bar.host_read(regs::NODE_COORD).unwrap(), 1);
//! m.shutdown();
//! ```

mod adapter;
mod bar;
mod engine;
mod fault;
mod machine;
mod network;

use std::time::Duration;

pub use bar::Bar;
pub use fault::Fault;
pub use machine::Machine;

/// The device's view of its host's memory: DMA by IOVA (what the IOMMU maps).
///
/// An `Err` is an access the IOMMU refused: the adapter sets `ERR_STATUS.DMA_FAULT` and
/// halts. Implementations must not block indefinitely (the model's shutdown waits for them).
pub trait HostMemory: Send + Sync {
    /// Copies `dst.len()` bytes at `iova` into `dst`.
    fn dma_read(&self, iova: u64, dst: &mut [u8]) -> crate::Result<()>;
    /// Copies `src` to `iova`.
    fn dma_write(&self, iova: u64, src: &[u8]) -> crate::Result<()>;
}

/// The adapter's interrupt line (an MSI-X vector; v1.0 uses vector 0 for every cause).
/// Called from the adapter's thread (or from the writer of `IRQ_MASK`); must not block.
pub trait IrqSink: Send + Sync {
    /// Signals `vector`.
    fn raise(&self, vector: u32);
}

/// Parameters of one model instance (datasheet "Model parameters").
///
/// # Examples
/// ```
/// use fpga::model::ModelConfig;
/// let c = ModelConfig { max_pkt: 64, ..ModelConfig::default() };
/// assert!(c.validate().is_ok());
/// assert!(ModelConfig { max_pkt: 100, ..c }.validate().is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ModelConfig {
    /// `MAX_PKT`: largest packet payload, a multiple of 16 in 16..=4096. Default 256.
    pub max_pkt: u32,
    /// `CAPS.HW_DEMUX`: per-port RX queues can be enabled. Default false.
    pub hw_demux: bool,
    /// `CAPS.RX_QUEUES` when `hw_demux` (1..=56; forced to 1 without). Default 8.
    pub rx_queues: u8,
    /// `CAPS.LOG2_PORTS`: ports per node are `0..1 << log2_ports` (≤ 16). Default 4.
    pub log2_ports: u8,
    /// Credits: packets each (link, VC) input buffer holds; also the router's injection and
    /// ejection buffers. Default 4.
    pub credits: usize,
    /// Optional pacing: latency added to every link crossing. Default zero (unpaced).
    pub link_latency: Duration,
    /// Optional pacing: link bandwidth in bytes per second (header + payload); 0 = unpaced.
    pub link_bandwidth: f64,
    /// Longest the idle device engine sleeps before looking again (a safety net: every
    /// event also wakes it). Default 2 ms.
    pub idle_poll: Duration,
    /// How many times the idle device engine yields its CPU, looking for an event after
    /// each, before it sleeps: a polite fixed spin (SEED-NOTES), so that a doorbell soon
    /// after costs no wake-up, while ranks sharing the CPU still run (a busy spin slowed
    /// every round trip on a machine with more threads than CPUs). Default 64; 0 sleeps
    /// at once.
    pub idle_yields: u32,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            max_pkt: 256,
            hw_demux: false,
            rx_queues: 8,
            log2_ports: 4,
            credits: 4,
            link_latency: Duration::ZERO,
            link_bandwidth: 0.0,
            idle_poll: Duration::from_millis(2),
            idle_yields: 64,
        }
    }
}

impl ModelConfig {
    /// Checks every field (`Error::BadConfig`).
    pub fn validate(&self) -> crate::Result<()> {
        crate::regs::check_max_pkt(self.max_pkt)?;
        self.caps()?;
        let bad = |m: &str| Err(crate::Error::BadConfig(format!("model: {m}")));
        if !(1..=1024).contains(&self.credits) {
            return bad("credits must be in 1..=1024");
        }
        if !(self.link_bandwidth >= 0.0 && self.link_bandwidth.is_finite()) {
            return bad("link_bandwidth must be finite and >= 0");
        }
        if self.idle_poll.is_zero() || self.idle_poll > Duration::from_millis(100) {
            return bad("idle_poll must be in (0, 100 ms]");
        }
        if self.idle_yields > 1 << 16 {
            return bad("idle_yields must be at most 65536");
        }
        Ok(())
    }

    /// The `CAPS` register value this configuration reports.
    pub fn caps(&self) -> crate::Result<u32> {
        crate::regs::Caps {
            hw_demux: self.hw_demux,
            msix: true,
            log2_ports: self.log2_ports,
            rx_queues: if self.hw_demux { self.rx_queues } else { 1 },
        }
        .pack()
    }
}

/// Lock a mutex, ignoring poisoning: the model's state stays usable (and the model never
/// panics while holding its locks anyway).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An event counter with a condition variable: a thread remembers the generation it saw
/// and sleeps until it changes (or a bound passes), so no wake-up is lost. A notify takes
/// the lock and calls the condition variable only when someone sleeps: the device engine
/// polls the counter a while before it sleeps (`ModelConfig::idle_yields`), and a doorbell
/// that finds it polling costs one atomic add.
#[derive(Default)]
pub(crate) struct Wake {
    gen: std::sync::atomic::AtomicU64,
    sleepers: std::sync::atomic::AtomicU32,
    lock: std::sync::Mutex<()>,
    cv: std::sync::Condvar,
}

impl Wake {
    pub(crate) fn notify(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        self.gen.fetch_add(1, SeqCst);
        // Pairs with `wait`'s increment of `sleepers` before its check of `gen` (both
        // SeqCst): either the sleeper sees the new generation, or this sees the sleeper.
        if self.sleepers.load(SeqCst) != 0 {
            let _g = lock(&self.lock);
            self.cv.notify_all();
        }
    }

    /// The current generation.
    pub(crate) fn generation(&self) -> u64 {
        self.gen.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Yields the CPU up to `yields` times until the generation differs from `seen`;
    /// whether it changed.
    pub(crate) fn yield_poll(&self, seen: u64, yields: u32) -> bool {
        for _ in 0..yields {
            if self.generation() != seen {
                return true;
            }
            std::thread::yield_now();
        }
        self.generation() != seen
    }

    /// Sleeps until the generation differs from `*seen` or `timeout` passes; updates `*seen`.
    pub(crate) fn wait(&self, seen: &mut u64, timeout: Duration) {
        use std::sync::atomic::Ordering::SeqCst;
        let g = lock(&self.lock);
        self.sleepers.fetch_add(1, SeqCst);
        let (g, _) = self
            .cv
            .wait_timeout_while(g, timeout, |_| self.gen.load(SeqCst) == *seen)
            .unwrap_or_else(|e| e.into_inner());
        self.sleepers.fetch_sub(1, SeqCst);
        drop(g);
        *seen = self.generation();
    }
}
