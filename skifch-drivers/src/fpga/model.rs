//! The `model` backend of the hardware seam: [`ModelHw`] implements [`Hw`] over the
//! behavioural adapter of the `fpga` crate ([`fpga::model`]), so the same driver code
//! ([`FpgaDriver`]) runs end-to-end without a card, against device threads that race it
//! for real.
//!
//! * registers: [`Bar::host_read`] / [`Bar::host_write`], behind [`check_access`];
//! * DMA memory: the heap backend [`MemDma`]; the device reaches it through
//!   [`ModelMemory`] ([`fpga::model::HostMemory`]) with the IOMMU's translation;
//! * interrupts: an [`IrqEvent`] the model signals ([`fpga::model::IrqSink`]).
//!
//! [`run`] builds an in-process job of one thread per node over a [`Machine`] (the
//! conformance suite runs on it).
//!
//! ```
//! use fpga::model::{Machine, ModelConfig};
//! use fpga::regs::Dims;
//! use skifch_drivers::fpga::{driver::FpgaConfig, model};
//! use std::io::IoSlice;
//! let cfg = ModelConfig { hw_demux: true, ..ModelConfig::default() };
//! let got = model::run(Dims::new(2, 1, 1)?, cfg, FpgaConfig::default(), |job| {
//!     let ch = job.open(0)?;
//!     let peer = job.addr(1 - job.rank(), 0);
//!     ch.send_whole_wait(peer, &[IoSlice::new(b"over the torus")])?;
//!     let m = ch.recv()?;
//!     let bytes = m.to_vec();
//!     drop(m); // RecvComp
//!     Ok(bytes)
//! })?;
//! assert_eq!(got, vec![b"over the torus".to_vec(); 2]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fpga::model::{Bar, HostMemory, IrqSink, Machine, ModelConfig};
use fpga::regs::{self, Dims};
use skifch::{Error, Job, Result};

use super::driver::{FpgaConfig, FpgaDriver, JobControl};
use super::hw::mem::MemDma;
use super::hw::{check_access, Hw, Interrupts, IrqEvent, Mmio};

/// One node's adapter in a model [`Machine`], seen through the seam.
pub struct ModelHw {
    node: u16,
    bar: Arc<Bar>,
    dma: MemDma,
    irq: IrqEvent,
}

impl std::fmt::Debug for ModelHw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelHw").field("node", &self.node).finish()
    }
}

/// The device side of a backend's DMA memory: copies by IOVA, refused outside what the
/// IOMMU maps ([`Error::Corrupt`]). [`MemDma`] (heap memory, in-process jobs) and the node
/// windows of multi-process jobs ([`super::remote::WindowDevice`]) implement it.
pub trait DeviceDma: Send + Sync {
    /// The device reads `dst.len()` bytes at `iova`.
    fn device_read(&self, iova: u64, dst: &mut [u8]) -> Result<()>;
    /// The device writes `src` at `iova`.
    fn device_write(&self, iova: u64, src: &[u8]) -> Result<()>;
}

impl DeviceDma for MemDma {
    fn device_read(&self, iova: u64, dst: &mut [u8]) -> Result<()> {
        MemDma::device_read(self, iova, dst)
    }
    fn device_write(&self, iova: u64, src: &[u8]) -> Result<()> {
        MemDma::device_write(self, iova, src)
    }
}

/// The device side of DMA memory ([`DeviceDma`]) as the model's host memory.
///
/// Ordering: a release fence before every device write and an acquire fence after every
/// device read, so a word the device writes last (a completion's tag, the TX write-back)
/// publishes what it wrote before to a driver that loads that word with `Acquire`, and
/// the device sees what the driver stored before its doorbell.
pub struct ModelMemory<M: DeviceDma = MemDma>(pub M);

impl<M: DeviceDma> HostMemory for ModelMemory<M> {
    fn dma_read(&self, iova: u64, dst: &mut [u8]) -> fpga::Result<()> {
        let r = self.0.device_read(iova, dst);
        fence(Ordering::Acquire);
        r.map_err(|e| fpga::Error::BadConfig(format!("IOMMU: {e}")))
    }
    fn dma_write(&self, iova: u64, src: &[u8]) -> fpga::Result<()> {
        let err = |e: Error| fpga::Error::BadConfig(format!("IOMMU: {e}"));
        fence(Ordering::Release);
        let word = iova & !7;
        if !src.is_empty() && src.len() < 8 && iova + src.len() as u64 <= word + 8 {
            // A PCIe write of an aligned dword (a completion's tag) reaches memory whole;
            // the heap backend copies unaligned runs byte by byte. So a short write inside
            // one 8-byte word becomes one 8-byte store of that word, read-modify-write:
            // only the device writes the memory it writes into.
            let mut w = [0u8; 8];
            self.0.device_read(word, &mut w).map_err(err)?;
            let at = (iova - word) as usize;
            w[at..at + src.len()].copy_from_slice(src);
            return self.0.device_write(word, &w).map_err(err);
        }
        self.0.device_write(iova, src).map_err(err)
    }
}

/// An [`IrqEvent`] as the model's interrupt line (vector 0 carries every cause).
pub struct ModelIrq(pub IrqEvent);

impl IrqSink for ModelIrq {
    fn raise(&self, _vector: u32) {
        // An eventfd write fails only when its counter would overflow: the event is then
        // signalled already, which is all a waiter needs.
        let _ = self.0.signal();
    }
}

impl ModelHw {
    /// Attaches node `node` of `machine` to fresh host memory and an interrupt event.
    pub fn attach(machine: &Machine, node: u16) -> Result<ModelHw> {
        let dma = MemDma::new();
        let irq = IrqEvent::new()?;
        let sink = ModelIrq(irq.try_clone()?);
        let bar = machine
            .attach(node, Arc::new(ModelMemory(dma.clone())), Arc::new(sink))
            .map_err(|e| Error::Bootstrap(format!("model node {node}: {e}").into()))?;
        Ok(ModelHw {
            node,
            bar,
            dma,
            irq,
        })
    }

    /// The node id (the rank of its driver).
    pub fn node(&self) -> u16 {
        self.node
    }

    /// The host memory the device reaches (for tests that inspect mappings).
    pub fn memory(&self) -> &MemDma {
        &self.dma
    }
}

fn model_err(off: usize, e: fpga::Error) -> Error {
    Error::InvalidArgument(format!("model BAR0 at {off:#x}: {e}").into())
}

impl Mmio for ModelHw {
    fn len(&self) -> usize {
        regs::BAR0_SIZE as usize
    }
    fn read32(&self, off: usize) -> Result<u32> {
        check_access("model BAR0", self.len(), off, 4)?;
        let v = self
            .bar
            .host_read(off as u32)
            .map_err(|e| model_err(off, e))?;
        fence(Ordering::Acquire); // later DMA-memory loads stay after this read
        Ok(v)
    }
    fn write32(&self, off: usize, v: u32) -> Result<()> {
        check_access("model BAR0", self.len(), off, 4)?;
        fence(Ordering::Release); // earlier DMA-memory stores are visible first
        self.bar
            .host_write(off as u32, v)
            .map_err(|e| model_err(off, e))
    }
}

impl Interrupts for ModelHw {
    fn irq_vectors(&self) -> u32 {
        1
    }
    fn wait_irq(&self, vector: u32, timeout: Duration) -> Result<u64> {
        if vector != 0 {
            return Err(Error::InvalidArgument(
                format!("interrupt vector {vector}: the model has only vector 0").into(),
            ));
        }
        self.irq.wait(timeout)
    }
}

impl Hw for ModelHw {
    type Dma = MemDma;
    fn dma(&self) -> MemDma {
        self.dma.clone()
    }
}

/// The driver over the model.
pub type ModelDriver = FpgaDriver<ModelHw>;
/// A rank's handle in an in-process job over the model.
pub type ModelJob = Job<ModelDriver>;

/// Which rank of an in-process job died (a panicking rank thread), shared by the ranks:
/// the [`JobControl`] of [`run`].
#[derive(Debug, Clone)]
pub struct ThreadJobControl {
    lost: Arc<AtomicU32>,
}

impl Default for ThreadJobControl {
    fn default() -> Self {
        ThreadJobControl {
            lost: Arc::new(AtomicU32::new(u32::MAX)),
        }
    }
}

impl ThreadJobControl {
    /// Records that `rank` died (the first one is kept).
    pub fn mark_lost(&self, rank: u32) {
        let _ = self
            .lost
            .compare_exchange(u32::MAX, rank, Ordering::AcqRel, Ordering::Relaxed);
    }
}

impl JobControl for ThreadJobControl {
    fn lost(&self) -> Option<u32> {
        match self.lost.load(Ordering::Acquire) {
            u32::MAX => None,
            r => Some(r),
        }
    }
}

/// Runs `f` as an in-process job over a fresh model machine of `dims`: one thread per
/// node, each bringing up its own driver; returns each rank's result in rank order. A
/// rank that panics is reported to the others as lost ([`ThreadJobControl`]).
pub fn run<T: Send + 'static>(
    dims: Dims,
    model: ModelConfig,
    cfg: FpgaConfig,
    f: impl Fn(ModelJob) -> Result<T> + Send + Sync + 'static,
) -> Result<Vec<T>> {
    let machine = Arc::new(
        Machine::new(dims, model).map_err(|e| Error::Bootstrap(format!("model: {e}").into()))?,
    );
    let r = run_on(&machine, cfg, f);
    machine.shutdown();
    r
}

/// As [`run`], on an existing machine (every node attached here; e.g. to inject faults
/// from the test while the ranks run).
pub fn run_on<T: Send + 'static>(
    machine: &Arc<Machine>,
    cfg: FpgaConfig,
    f: impl Fn(ModelJob) -> Result<T> + Send + Sync + 'static,
) -> Result<Vec<T>> {
    let f = Arc::new(f);
    let ctl = ThreadJobControl::default();
    let handles: Vec<_> = (0..machine.dims().nodes())
        .map(|node| {
            let (f, ctl, m, cfg) = (f.clone(), ctl.clone(), machine.clone(), cfg.clone());
            std::thread::Builder::new()
                .name(format!("fpga-rank{node}"))
                .spawn(move || {
                    let hw = ModelHw::attach(&m, node as u16)?;
                    let drv = FpgaDriver::with_job_control(hw, cfg, Arc::new(ctl.clone()))?;
                    let r = std::panic::catch_unwind(AssertUnwindSafe(|| f(Job::new(drv))));
                    // This rank's host is gone (its driver was dropped with the job, unless
                    // `f` kept a handle): late packets for it must not stall the others.
                    let _ = m.host_gone(node as u16);
                    r.unwrap_or_else(|p| {
                        ctl.mark_lost(node);
                        let msg = p
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| p.downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "panic".into());
                        Err(Error::Bootstrap(
                            format!("rank {node} panicked: {msg}").into(),
                        ))
                    })
                })
                .map_err(|e| Error::os("spawning a rank thread", e))
        })
        .collect::<Result<_>>()?;
    let mut out = Vec::with_capacity(handles.len());
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(v)) => out.push(v),
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert(Error::Bootstrap("a rank thread panicked".into()));
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}
