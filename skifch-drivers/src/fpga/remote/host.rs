//! The launcher's side: the device model, one register server per node, the model's
//! view of each node window (see the [module docs](super)).

use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use fpga::model::{Bar, HostMemory, IrqSink, Machine, ModelConfig};
use fpga::regs::Dims;
use skifch::wait::Backoff;
use skifch::{Error, Result};

use super::super::hw::{copy_from_shared, copy_to_shared};
use super::super::model::{DeviceDma, ModelMemory};
use super::{
    NodeWindow, OP_READ, OP_WRITE, REQ_HEAD, REQ_SLOTS, REQ_TAIL, RESP_SEQ, RESP_VAL, SERVER_ASLEEP,
};
use crate::sys::{futex_wait, futex_wake_all};

/// The model's view of a node's DMA memory: the window, bounded by the launcher's own
/// record of its size.
pub struct WindowDevice(pub(super) Arc<NodeWindow>);

impl DeviceDma for WindowDevice {
    fn device_read(&self, iova: u64, dst: &mut [u8]) -> Result<()> {
        let p = self.0.dma_ptr(iova, dst.len())?;
        // SAFETY: `p..p + dst.len()` is inside the mapping (dma_ptr), which lives as long
        // as `self.0`; the rank reaches it only atomically (through `DmaBuffer`), and a
        // hostile rank's plain stores cannot make these atomic loads unsound.
        unsafe { copy_from_shared(p, dst) };
        Ok(())
    }
    fn device_write(&self, iova: u64, src: &[u8]) -> Result<()> {
        let p = self.0.dma_ptr(iova, src.len())?;
        // SAFETY: as in `device_read`.
        unsafe { copy_to_shared(p, src) };
        Ok(())
    }
}

/// The model's interrupt line into a node window.
struct WindowIrq(Arc<NodeWindow>);

impl IrqSink for WindowIrq {
    fn raise(&self, _vector: u32) {
        self.0.raise_irq();
    }
}

/// The device model of a launched job: the machine, one window and one register server
/// per node. Owned by the launcher; dropping it stops the servers and the machine.
pub struct ModelHost {
    machine: Arc<Machine>,
    windows: Vec<Arc<NodeWindow>>,
    stop: Arc<AtomicBool>,
    servers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for ModelHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelHost")
            .field("dims", &self.machine.dims())
            .finish_non_exhaustive()
    }
}

impl ModelHost {
    /// Builds a machine of `dims` with `model`, a window of `dma_len` bytes of DMA memory
    /// for every node, attaches every node, and starts the register servers.
    pub fn start(dims: Dims, model: ModelConfig, dma_len: usize) -> Result<ModelHost> {
        let machine = Arc::new(
            Machine::new(dims, model)
                .map_err(|e| Error::Bootstrap(format!("model: {e}").into()))?,
        );
        let mut host = ModelHost {
            machine,
            windows: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            servers: Vec::new(),
        };
        let nodes = dims.nodes();
        for node in 0..nodes {
            let win = Arc::new(NodeWindow::create(node, nodes, dma_len)?);
            let mem: Arc<dyn HostMemory> = Arc::new(ModelMemory(WindowDevice(win.clone())));
            let bar = host
                .machine
                .attach(node as u16, mem, Arc::new(WindowIrq(win.clone())))
                .map_err(|e| Error::Bootstrap(format!("model node {node}: {e}").into()))?;
            let (w, stop) = (win.clone(), host.stop.clone());
            let h = std::thread::Builder::new()
                .name(format!("skif-regs-{node}"))
                .spawn(move || serve(&w, &bar, &stop, node))
                .map_err(|e| Error::os("starting a register server thread", e))?;
            host.servers.push(h);
            host.windows.push(win);
        }
        Ok(host)
    }

    /// The machine (e.g. to inject faults).
    pub fn machine(&self) -> &Arc<Machine> {
        &self.machine
    }

    /// Node `node`'s window descriptor, to pass to its rank.
    pub fn window_file(&self, node: u32) -> Option<&File> {
        self.windows.get(node as usize).map(|w| w.file())
    }

    /// Raises every node's interrupt: sleepers look at the job state again (after the
    /// launcher marked a rank lost).
    pub fn wake_all(&self) {
        for w in &self.windows {
            w.raise_irq();
        }
    }

    /// Stops the register servers and the machine (bounded; idempotent).
    pub fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for w in &self.windows {
            futex_wake_all(w.u32_at(REQ_TAIL));
        }
        for h in self.servers.drain(..) {
            let _ = h.join();
        }
        self.machine.shutdown();
    }
}

impl Drop for ModelHost {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Yields before a register server sleeps (a doorbell often follows the last one).
const SERVER_YIELDS: u32 = 64;
/// Longest single sleep of a register server (the stop flag is also checked then).
const SERVER_NAP: Duration = Duration::from_millis(50);

/// Node `node`'s register server: applies queued register accesses to its BAR in order.
fn serve(win: &NodeWindow, bar: &Bar, stop: &AtomicBool, node: u32) {
    let tail_w = win.u32_at(REQ_TAIL);
    let head_w = win.u32_at(REQ_HEAD);
    let asleep = win.u32_at(SERVER_ASLEEP);
    let mut head = head_w.load(Ordering::Relaxed);
    // Yields while a doorbell is likely, then sleeps. The sleep is not the back-off's timed
    // nap but a futex wait on the queue's tail with the "asleep" flag raised (the rank
    // wakes the server when it sees the flag, `RemoteHw::push`): an idle server costs
    // nothing and a new access is served at once, not after a nap.
    let mut idle = Backoff::with(0, SERVER_YIELDS, SERVER_NAP);
    while !stop.load(Ordering::Relaxed) {
        let tail = tail_w.load(Ordering::Acquire);
        let n = tail.wrapping_sub(head);
        if n == 0 {
            if !idle.is_sleeping() {
                idle.snooze();
                continue;
            }
            asleep.store(1, Ordering::SeqCst);
            if tail_w.load(Ordering::SeqCst) == head {
                futex_wait(tail_w, head, SERVER_NAP);
            }
            asleep.store(0, Ordering::Relaxed);
            continue;
        }
        idle.reset();
        if n > REQ_SLOTS {
            return refuse(node, format!("register queue tail {tail} is {n} entries ahead of head {head} (the queue has {REQ_SLOTS})"), stop);
        }
        for _ in 0..n {
            let op = win.slot(head, 0).load(Ordering::Relaxed);
            let off = win.slot(head, 1).load(Ordering::Relaxed);
            let val = win.slot(head, 2).load(Ordering::Relaxed);
            let seq = win.slot(head, 3).load(Ordering::Relaxed);
            match op {
                OP_WRITE => {
                    // A bad offset is dropped, as a write to an unimplemented address is
                    // on PCIe (the rank's own `check_access` never lets one through).
                    let _ = bar.host_write(off, val);
                }
                OP_READ => {
                    // An unanswerable read completes with all ones (a PCIe master abort).
                    let v = bar.host_read(off).unwrap_or(u32::MAX);
                    win.u32_at(RESP_VAL).store(v, Ordering::Relaxed);
                    win.u32_at(RESP_SEQ).store(seq, Ordering::Release);
                    futex_wake_all(win.u32_at(RESP_SEQ));
                }
                _ => return refuse(node, format!("unknown register queue operation {op}"), stop),
            }
            head = head.wrapping_add(1);
            head_w.store(head, Ordering::Release);
        }
    }
}

/// A rank broke its register queue: say so once and serve it no more (until the stop).
fn refuse(node: u32, why: String, stop: &AtomicBool) {
    let line =
        format!("skifrun: rank {node}: {why}; its adapter no longer takes register accesses\n");
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(SERVER_NAP);
    }
}

/// The torus `skifrun` builds for `n` ranks when none is given: the most cube-like
/// X×Y×Z = n with X ≥ Y ≥ Z and every extent ≤ 16.
///
/// ```
/// use skifch_drivers::fpga::remote::default_dims;
/// assert_eq!(default_dims(8).unwrap().to_string(), "2x2x2");
/// assert_eq!(default_dims(12).unwrap().to_string(), "3x2x2");
/// assert_eq!(default_dims(2).unwrap().to_string(), "2x1x1");
/// assert!(default_dims(17).is_err()); // prime above 16
/// ```
pub fn default_dims(n: u32) -> Result<Dims> {
    let mut best: Option<(u32, [u32; 3])> = None;
    for z in 1..=16u32 {
        for y in z..=16 {
            if !n.is_multiple_of(y * z) {
                continue;
            }
            let x = n / (y * z);
            if x < y || x > 16 {
                continue;
            }
            if best.is_none_or(|(m, _)| x < m) {
                best = Some((x, [x, y, z]));
            }
        }
    }
    let Some((_, [x, y, z])) = best else {
        return Err(Error::InvalidArgument(
            format!("{n} ranks do not form an X×Y×Z torus with every extent in 1..=16 (and a job has at most 1024 ranks); give --torus or another -n").into(),
        ));
    };
    Dims::new(x as u8, y as u8, z as u8)
        .map_err(|e| Error::InvalidArgument(format!("torus for {n} ranks: {e}").into()))
}
