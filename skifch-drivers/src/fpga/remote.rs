//! Multi-process jobs over the device model: `skifrun --driver fpga-model`.
//!
//! The launcher hosts the [`Machine`] (the adapters' and the network's threads run in the
//! launcher, outside every rank's call stack, as a card runs outside the host CPU). Each
//! rank is the node whose linear id is its rank, and reaches its adapter through one
//! *node window*: an anonymous memfd (size sealed) that the launcher creates, keeps
//! mapped, and passes to that rank only (`SKIFCH_FPGA_FD`). The window holds
//!
//! | offset | what | written by |
//! | --- | --- | --- |
//! | `0x0000` | header: magic `SKIFNODE`, version, node, nodes, total size, DMA window | launcher |
//! | `0x0040` | interrupt counter (a futex word): +1 per interrupt | model |
//! | `0x0080` | register queue tail | rank |
//! | `0x00C0` | register queue head | launcher |
//! | `0x0100` | read response: sequence number, value | launcher |
//! | `0x0140` | "register server asleep" flag (the rank then wakes it) | launcher |
//! | `0x1000` | register queue: 256 × `{op, offset, value, seq}` (16 B) | rank |
//! | `0x10000` | DMA memory (IOVA = byte offset in the window) | rank and model |
//!
//! * **Registers** are PCIe transactions in a queue: a write is *posted* (queued, the rank
//!   goes on), a read waits for its response; one *register server* thread per node in
//!   the launcher applies them in order to the model's [`Bar`] ([`Bar::host_read`] /
//!   [`Bar::host_write`]), so the datasheet's register semantics (RW1C, latches, doorbell
//!   wake-ups, ENABLE checks) are the model's own. Order matches the [`Mmio`] contract: a
//!   queued write is published with a release store after the rank's earlier stores to
//!   DMA memory; a read's response is loaded with acquire.
//! * **DMA memory** is the window's tail, allocated by the rank with the
//!   [`IovaAllocator`]; the model reaches it through [`WindowDevice`], which accepts
//!   any IOVA inside the window (the window is the node's IOMMU domain) and refuses
//!   everything else — an IOMMU fault for the adapter (`ERR_STATUS.DMA_FAULT`).
//! * **Interrupts**: the model's [`IrqSink`] adds one to the counter and wakes futex
//!   waiters ([`Interrupts::wait_irq`] sleeps on it).
//! * **Peer loss**: the job segment of the shm driver (`SKIFCH_FD`) also serves this
//!   driver as the launcher's view of the job: rank states and the lost marking
//!   ([`LauncherControl`] is the driver's [`JobControl`]); the launcher also raises every
//!   node's interrupt when it marks a rank lost, so sleepers see it at once.
//!
//! ## Trust
//! A rank can be buggy or hostile; the launcher must survive it and keep serving the
//! others. The register server never trusts the queue: a tail more than the queue
//! ahead of its own head, or an unknown operation, stops serving that node (one
//! `skifrun:` line); register offsets are checked by the [`Bar`]. The model's DMA goes
//! through the launcher's own record of the window's size, never the header, and the
//! window's size is sealed, so a rank cannot shrink it under the launcher. No server or
//! model thread waits on a rank: a rank that dies leaves a queue nobody adds to.
//!
//! On the rank side the window is device memory: reached only with atomics (the DMA
//! part through [`DmaBuffer`](super::hw::DmaBuffer)), every wait bounded ([`MODEL_TIMEOUT`]).
#![allow(unsafe_code)] // atomics over the mapped window, futex waits, the DMA memory contract

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fpga::model::{Bar, HostMemory, IrqSink, Machine, ModelConfig};
use fpga::regs::{self, Dims};
use crate::shm::{Fabric, Region};
use crate::sys::{futex_wait, futex_wake_all};
use skifch::wait::Backoff;
use skifch::{Driver, Error, Job, Result};

use super::driver::{FpgaConfig, FpgaDriver, JobControl};
use super::hw::{check_access, copy_from_shared, copy_to_shared, DmaMemory, DmaRaw};
use super::hw::{Hw, Interrupts, Mmio};
use super::iova::IovaAllocator;
use super::model::{DeviceDma, ModelMemory};
use crate::shm::{env_u32, MemfdRegion};

/// `SKIFNODE`: the first word of a node window.
pub const WINDOW_MAGIC: u64 = u64::from_le_bytes(*b"SKIFNODE");
/// Version of the window layout.
pub const WINDOW_VERSION: u32 = 1;
/// Byte offset of the DMA memory in the window (also its lowest IOVA: never 0).
pub const DMA_OFF: usize = 0x1_0000;
/// DMA memory per node unless configured otherwise (the default driver configuration
/// needs about 1 MiB; the memfd's pages are only allocated when touched).
pub const DEFAULT_DMA_BYTES: usize = 16 << 20;
/// Longest a rank waits for the launcher's register server (a read's response, room in
/// the queue) before the call fails: the launcher is gone or wedged.
pub const MODEL_TIMEOUT: Duration = Duration::from_secs(5);
/// Ports per rank unless `SKIFCH_PORTS` says otherwise.
pub const DEFAULT_PORTS: u32 = 4;
/// Most ports per rank: the model's RX queues, one kept for credit returns.
pub const MAX_PORTS: u32 = 7;

const H_MAGIC: usize = 0;
const H_VERSION: usize = 8;
const H_NODE: usize = 12;
const H_NODES: usize = 16;
const H_TOTAL: usize = 24;
const H_DMA_OFF: usize = 32;
const H_DMA_LEN: usize = 40;
const IRQ_COUNT: usize = 0x40;
const REQ_TAIL: usize = 0x80;
const REQ_HEAD: usize = 0xC0;
const RESP_SEQ: usize = 0x100;
const RESP_VAL: usize = 0x104;
const SERVER_ASLEEP: usize = 0x140;
const REQ_RING: usize = 0x1000;
const REQ_SLOTS: u32 = 256;
const REQ_SLOT: usize = 16;
const OP_READ: u32 = 1;
const OP_WRITE: u32 = 2;
const PAGE: u64 = 4096;

/// The model configuration `skifrun` hosts: per-port RX queues in "hardware" (so every
/// SkifCh port is its own queue) and the datasheet's defaults otherwise.
pub fn model_config() -> ModelConfig {
    ModelConfig {
        hw_demux: true,
        rx_queues: MAX_PORTS as u8 + 1,
        ..ModelConfig::default()
    }
}

/// One node's window, mapped (by the launcher or by the rank).
pub struct NodeWindow {
    region: MemfdRegion,
    dma_len: usize,
}

impl std::fmt::Debug for NodeWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeWindow")
            .field("len", &self.region.len())
            .field("dma_len", &self.dma_len)
            .finish()
    }
}

impl NodeWindow {
    /// Creates the window of node `node` of `nodes`, with `dma_len` bytes of DMA memory.
    pub fn create(node: u32, nodes: u32, dma_len: usize) -> Result<NodeWindow> {
        if dma_len == 0 || !dma_len.is_multiple_of(PAGE as usize) || dma_len > 1 << 40 {
            return Err(Error::InvalidArgument(
                format!("node window: {dma_len} bytes of DMA memory is not a whole number of pages up to 1 TiB").into(),
            ));
        }
        let total = DMA_OFF + dma_len;
        let w = NodeWindow {
            region: MemfdRegion::create(total)?,
            dma_len,
        };
        w.u32_at(H_VERSION).store(WINDOW_VERSION, Ordering::Relaxed);
        w.u32_at(H_NODE).store(node, Ordering::Relaxed);
        w.u32_at(H_NODES).store(nodes, Ordering::Relaxed);
        w.u64_at(H_TOTAL).store(total as u64, Ordering::Relaxed);
        w.u64_at(H_DMA_OFF).store(DMA_OFF as u64, Ordering::Relaxed);
        w.u64_at(H_DMA_LEN).store(dma_len as u64, Ordering::Relaxed);
        w.u64_at(H_MAGIC).store(WINDOW_MAGIC, Ordering::Release);
        Ok(w)
    }

    /// Attaches to a window mapped from the launcher's descriptor, checking that it is
    /// node `node`'s of a job of `nodes`.
    pub fn attach(region: MemfdRegion, node: u32, nodes: u32) -> Result<NodeWindow> {
        let bad = |m: String| Err(Error::Bootstrap(format!("node window: {m}").into()));
        if region.len() < DMA_OFF + PAGE as usize
            || !(region.as_ptr() as usize).is_multiple_of(PAGE as usize)
        {
            return bad(format!("{} bytes is too small", region.len()));
        }
        let w = NodeWindow { region, dma_len: 0 };
        let magic = w.u64_at(H_MAGIC).load(Ordering::Acquire);
        if magic != WINDOW_MAGIC {
            return bad(format!(
                "bad magic {magic:#018x} (is SKIFCH_FPGA_FD a node window?)"
            ));
        }
        let version = w.u32_at(H_VERSION).load(Ordering::Relaxed);
        if version != WINDOW_VERSION {
            return bad(format!(
                "layout version {version}, this library speaks {WINDOW_VERSION}"
            ));
        }
        let (n, ns) = (
            w.u32_at(H_NODE).load(Ordering::Relaxed),
            w.u32_at(H_NODES).load(Ordering::Relaxed),
        );
        if (n, ns) != (node, nodes) {
            return bad(format!(
                "it is node {n} of {ns}, this is rank {node} of {nodes}"
            ));
        }
        let total = w.u64_at(H_TOTAL).load(Ordering::Relaxed);
        let off = w.u64_at(H_DMA_OFF).load(Ordering::Relaxed);
        let len = w.u64_at(H_DMA_LEN).load(Ordering::Relaxed);
        if off != DMA_OFF as u64
            || total != w.region.len() as u64
            || off.checked_add(len) != Some(total)
            || !len.is_multiple_of(PAGE)
        {
            return bad(format!(
                "header says {total} bytes with DMA memory {off:#x}+{len:#x}; the mapping has {}",
                w.region.len()
            ));
        }
        Ok(NodeWindow {
            dma_len: len as usize,
            ..w
        })
    }

    /// The window's descriptor (what the launcher passes to the rank).
    pub fn file(&self) -> &File {
        self.region.file()
    }

    /// Bytes of DMA memory.
    pub fn dma_len(&self) -> usize {
        self.dma_len
    }

    fn u32_at(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off.is_multiple_of(4) && off + 4 <= DMA_OFF);
        // SAFETY: `off` is one of this module's constant control offsets, 4-aligned and
        // below DMA_OFF, inside the mapping (checked at create/attach); the word is shared
        // with another process and only ever accessed atomically.
        unsafe { AtomicU32::from_ptr(self.region.as_ptr().add(off).cast()) }
    }

    fn u64_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off.is_multiple_of(8) && off + 8 <= DMA_OFF);
        // SAFETY: as in `u32_at`, 8-aligned (the mapping is page-aligned).
        unsafe { AtomicU64::from_ptr(self.region.as_ptr().add(off).cast()) }
    }

    /// Word `w` (0..4) of register queue slot `i`.
    fn slot(&self, i: u32, w: usize) -> &AtomicU32 {
        self.u32_at(REQ_RING + (i % REQ_SLOTS) as usize * REQ_SLOT + 4 * w)
    }

    /// The DMA range `iova..iova + n` as a pointer, if it lies inside the DMA memory.
    fn dma_ptr(&self, iova: u64, n: usize) -> Result<*mut u8> {
        let end = iova.checked_add(n as u64);
        if iova < DMA_OFF as u64 || end.is_none_or(|e| e > (DMA_OFF + self.dma_len) as u64) {
            return Err(Error::Corrupt(
                format!(
                    "device DMA to IOVA {iova:#x}+{n:#x}, outside the node's DMA memory {DMA_OFF:#x}..{:#x} (an IOMMU fault)",
                    DMA_OFF + self.dma_len
                )
                .into(),
            ));
        }
        // SAFETY: `iova..iova + n` is inside the mapping (checked just above).
        Ok(unsafe { self.region.as_ptr().add(iova as usize) })
    }

    fn raise_irq(&self) {
        let w = self.u32_at(IRQ_COUNT);
        w.fetch_add(1, Ordering::Release);
        futex_wake_all(w);
    }
}

// ---------------------------------------------------------------------------------------
// The launcher's side
// ---------------------------------------------------------------------------------------

/// The model's view of a node's DMA memory: the window, bounded by the launcher's own
/// record of its size.
pub struct WindowDevice(Arc<NodeWindow>);

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

// ---------------------------------------------------------------------------------------
// The rank's side
// ---------------------------------------------------------------------------------------

struct Producer {
    /// Next slot to fill (the queue tail published last).
    tail: u32,
    /// Sequence number of the last read.
    seq: u32,
}

/// A rank's adapter as the driver sees it: the [`Hw`] seam over its node window.
pub struct RemoteHw {
    win: Arc<NodeWindow>,
    node: u32,
    prod: Mutex<Producer>,
    irq_seen: AtomicU32,
    dma: RemoteDma,
}

impl std::fmt::Debug for RemoteHw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteHw")
            .field("node", &self.node)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn no_answer(what: &str) -> Error {
    Error::Corrupt(
        format!(
            "the device model did not {what} within {MODEL_TIMEOUT:?} (is skifrun still running?)"
        )
        .into(),
    )
}

impl RemoteHw {
    /// The seam over `win` (node `win`'s own window, attached by [`NodeWindow::attach`]).
    pub fn new(win: Arc<NodeWindow>) -> Result<RemoteHw> {
        let node = win.u32_at(H_NODE).load(Ordering::Relaxed);
        let tail = win.u32_at(REQ_TAIL).load(Ordering::Acquire);
        let seq = win.u32_at(RESP_SEQ).load(Ordering::Acquire);
        let alloc = IovaAllocator::new(DMA_OFF as u64, (DMA_OFF + win.dma_len) as u64, PAGE)?;
        Ok(RemoteHw {
            node,
            prod: Mutex::new(Producer { tail, seq }),
            irq_seen: AtomicU32::new(win.u32_at(IRQ_COUNT).load(Ordering::Acquire)),
            dma: RemoteDma {
                win: win.clone(),
                alloc: Arc::new(Mutex::new(alloc)),
            },
            win,
        })
    }

    /// The node id (the rank).
    pub fn node(&self) -> u32 {
        self.node
    }

    /// Queues one register access (waits, bounded, while the queue is full).
    fn push(&self, p: &mut Producer, op: u32, off: u32, val: u32, seq: u32) -> Result<()> {
        let w = &*self.win;
        let t0 = Instant::now();
        let mut full = Backoff::new();
        while p
            .tail
            .wrapping_sub(w.u32_at(REQ_HEAD).load(Ordering::Acquire))
            >= REQ_SLOTS
        {
            if t0.elapsed() > MODEL_TIMEOUT {
                return Err(no_answer("take a register access"));
            }
            if w.u32_at(SERVER_ASLEEP).load(Ordering::SeqCst) != 0 {
                futex_wake_all(w.u32_at(REQ_TAIL));
            }
            full.snooze();
        }
        w.slot(p.tail, 0).store(op, Ordering::Relaxed);
        w.slot(p.tail, 1).store(off, Ordering::Relaxed);
        w.slot(p.tail, 2).store(val, Ordering::Relaxed);
        w.slot(p.tail, 3).store(seq, Ordering::Relaxed);
        p.tail = p.tail.wrapping_add(1);
        // Release: the entry, and every earlier store to DMA memory, before the tail.
        w.u32_at(REQ_TAIL).store(p.tail, Ordering::Release);
        fence(Ordering::SeqCst); // pairs with the server's "asleep" store and re-check
        if w.u32_at(SERVER_ASLEEP).load(Ordering::Relaxed) != 0 {
            futex_wake_all(w.u32_at(REQ_TAIL));
        }
        Ok(())
    }
}

impl Mmio for RemoteHw {
    fn len(&self) -> usize {
        regs::BAR0_SIZE as usize
    }
    fn read32(&self, off: usize) -> Result<u32> {
        check_access("model BAR0", self.len(), off, 4)?;
        let mut p = lock(&self.prod);
        p.seq = p.seq.wrapping_add(1);
        let seq = p.seq;
        self.push(&mut p, OP_READ, off as u32, 0, seq)?;
        let resp = self.win.u32_at(RESP_SEQ);
        let t0 = Instant::now();
        // Yields first (the server answers within a few of them when awake), then a futex
        // wait on the answer word, which the server wakes (not a timed nap: see `serve`).
        let mut wait = Backoff::with(0, 32, Duration::from_millis(10));
        loop {
            let cur = resp.load(Ordering::Acquire);
            if cur == seq {
                return Ok(self.win.u32_at(RESP_VAL).load(Ordering::Relaxed));
            }
            if t0.elapsed() > MODEL_TIMEOUT {
                return Err(no_answer("answer a register read"));
            }
            if wait.is_sleeping() {
                futex_wait(resp, cur, Duration::from_millis(10));
            } else {
                wait.snooze();
            }
        }
    }
    fn write32(&self, off: usize, v: u32) -> Result<()> {
        check_access("model BAR0", self.len(), off, 4)?;
        let mut p = lock(&self.prod);
        self.push(&mut p, OP_WRITE, off as u32, v, 0)
    }
}

impl Interrupts for RemoteHw {
    fn irq_vectors(&self) -> u32 {
        1
    }
    fn wait_irq(&self, vector: u32, timeout: Duration) -> Result<u64> {
        if vector != 0 {
            return Err(Error::InvalidArgument(
                format!("interrupt vector {vector}: the model has only vector 0").into(),
            ));
        }
        let word = self.win.u32_at(IRQ_COUNT);
        let seen = self.irq_seen.load(Ordering::Relaxed);
        let deadline = Instant::now() + timeout;
        loop {
            let cur = word.load(Ordering::Acquire);
            if cur != seen {
                self.irq_seen.store(cur, Ordering::Relaxed);
                return Ok(u64::from(cur.wrapping_sub(seen)));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::TimedOut);
            }
            futex_wait(word, seen, left);
        }
    }
}

impl Hw for RemoteHw {
    type Dma = RemoteDma;
    fn dma(&self) -> RemoteDma {
        self.dma.clone()
    }
}

/// DMA memory from a node window (IOVA = offset in the window).
#[derive(Clone)]
pub struct RemoteDma {
    win: Arc<NodeWindow>,
    alloc: Arc<Mutex<IovaAllocator>>,
}

// SAFETY: every range handed out lies inside the window's DMA memory (the allocator's
// window is exactly it), is page-aligned, is zeroed here before it is returned, and the
// mapping stays valid as long as any clone of `win` lives (each `DmaBuffer` holds one
// through its `RemoteDma`). Ranges are disjoint until freed. The device (the launcher's
// model) keeps access to the whole window, as an IOMMU domain would; the driver resets
// the adapter before it frees its rings.
unsafe impl DmaMemory for RemoteDma {
    fn dma_map(&self, len: usize) -> Result<DmaRaw> {
        let mut a = lock(&self.alloc);
        let size = a.round(len as u64).ok_or_else(|| {
            Error::InvalidArgument(format!("DMA buffer of {len} bytes is too large").into())
        })?;
        let iova = a.alloc(size).map_err(|e| {
            Error::InvalidArgument(
                format!(
                    "node window DMA memory ({} bytes) exhausted: {e}",
                    self.win.dma_len
                )
                .into(),
            )
        })?;
        let ptr = self.win.dma_ptr(iova, size as usize)?;
        for i in (0..size as usize).step_by(8) {
            // SAFETY: inside the range just checked, 8-aligned (page-aligned start).
            unsafe { AtomicU64::from_ptr(ptr.add(i).cast()) }.store(0, Ordering::Relaxed);
        }
        Ok(DmaRaw {
            ptr: std::ptr::NonNull::new(ptr).expect("a mapping is never at address 0"),
            len: size as usize,
            iova,
        })
    }

    unsafe fn dma_unmap(&self, raw: &DmaRaw) -> Result<()> {
        lock(&self.alloc).free(raw.iova, raw.len as u64)
    }
}

/// The launcher's view of the job for the driver: lost ranks from the job segment;
/// dropping it (with the driver) finalizes the rank there, or marks it lost when the
/// thread is panicking.
pub struct LauncherControl {
    fab: Arc<Fabric<MemfdRegion>>,
    rank: u32,
    joined: AtomicBool,
}

impl JobControl for LauncherControl {
    fn lost(&self) -> Option<u32> {
        self.fab.ctl().lost()
    }
    fn finalized(&self, rank: u32) -> bool {
        rank < self.fab.layout().params.nranks
            && self.fab.ctl().rank_state(rank) == crate::jobctl::rank_state::FINALIZED
    }
}

impl Drop for LauncherControl {
    fn drop(&mut self) {
        if !self.joined.load(Ordering::Relaxed) {
            return; // bring-up failed: the launcher counts an exit without finalizing
        }
        if std::thread::panicking() {
            self.fab.ctl().mark_lost(self.rank);
        } else {
            self.fab.ctl().set_finalized(self.rank);
        }
    }
}

/// The FPGA driver over a node window.
pub type RemoteDriver = FpgaDriver<RemoteHw>;
/// A rank's job over [`RemoteDriver`].
pub type RemoteJob = Job<RemoteDriver>;

/// The driver configuration of `skifrun --driver fpga-model` ranks: the defaults, with
/// `SKIFCH_PORTS` ports (1..=[`MAX_PORTS`], default [`DEFAULT_PORTS`]) and a TX ring of
/// twice the completion ring's entries.
pub fn config_from_env() -> Result<FpgaConfig> {
    let ports = env_u32("SKIFCH_PORTS")?.unwrap_or(DEFAULT_PORTS);
    if !(1..=MAX_PORTS).contains(&ports) {
        return Err(Error::InvalidArgument(
            format!(
                "SKIFCH_PORTS={ports}: the fpga-model driver has 1..={MAX_PORTS} ports per rank"
            )
            .into(),
        ));
    }
    let d = FpgaConfig::default();
    Ok(FpgaConfig {
        max_ports: ports,
        // A TX ring larger than any credit window: towards one destination the window
        // (the receiver's free space), not the local ring, refuses a send, so a
        // WouldBlock lasts until the receiver consumes — as with the shm driver.
        tx_entries: 2 * d.rxc_entries,
        ..d
    })
}

/// Joins the job `skifrun --driver fpga-model` started: this rank's node window
/// (`SKIFCH_FPGA_FD`), the job segment (`SKIFCH_FD`), bring-up of the adapter.
pub fn init() -> Result<RemoteJob> {
    let Some(fd) = env_u32("SKIFCH_FPGA_FD")? else {
        return Err(Error::Bootstrap(
            "SKIFCH_DRIVER=fpga-model needs the device model hosted by the launcher: start the program with skifrun --driver fpga-model".into(),
        ));
    };
    if std::env::var_os("SKIFCH_RANK").is_none() {
        return Err(Error::Bootstrap(
            "SKIFCH_FPGA_FD is set but SKIFCH_RANK is not (start the program with skifrun --driver fpga-model)".into(),
        ));
    }
    let fd = fd as i32;
    // SAFETY: F_GETFD only inspects the descriptor table entry.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(Error::Bootstrap(
            format!("SKIFCH_FPGA_FD={fd} is not an open descriptor").into(),
        ));
    }
    // SAFETY: the launcher passed this descriptor to this process for its exclusive use.
    let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    // SAFETY: F_SETFD on a descriptor we own: keep it out of programs this rank may exec.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    let (fab, rank) = crate::shm::join_segment()?;
    let size = fab.layout().params.nranks;
    let win = NodeWindow::attach(MemfdRegion::map(file)?, rank, size)?;
    let hw = RemoteHw::new(Arc::new(win))?;
    fab.ctl().set_running(rank, std::process::id());
    let ctl = Arc::new(LauncherControl {
        fab,
        rank,
        joined: AtomicBool::new(false),
    });
    let drv = FpgaDriver::with_job_control(hw, config_from_env()?, ctl.clone())?;
    if (drv.rank(), drv.size()) != (rank, size) {
        return Err(Error::Bootstrap(
            format!(
                "the adapter says node {} of {}, the launcher says rank {rank} of {size}",
                drv.rank(),
                drv.size()
            )
            .into(),
        ));
    }
    ctl.joined.store(true, Ordering::Relaxed);
    Ok(Job::new(drv))
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
            format!("{n} ranks do not form an X×Y×Z torus with every extent in 1..=16 (at most 4096 nodes); give --torus or another -n").into(),
        ));
    };
    Dims::new(x as u8, y as u8, z as u8)
        .map_err(|e| Error::InvalidArgument(format!("torus for {n} ranks: {e}").into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window_of(host: &ModelHost, node: u32) -> MemfdRegion {
        let f = host.window_file(node).unwrap().try_clone().unwrap();
        MemfdRegion::map(f).unwrap()
    }

    #[test]
    fn attach_checks_the_window_it_is_given() {
        let host = ModelHost::start(Dims::new(2, 1, 1).unwrap(), model_config(), 1 << 20).unwrap();
        let e = NodeWindow::attach(window_of(&host, 1), 0, 2).unwrap_err();
        assert!(
            e.to_string()
                .contains("it is node 1 of 2, this is rank 0 of 2"),
            "{e}"
        );
        let e = NodeWindow::attach(window_of(&host, 0), 0, 3).unwrap_err();
        assert!(e.to_string().contains("node 0 of 2"), "{e}");
        let other = MemfdRegion::create(DMA_OFF + 4096).unwrap();
        let e = NodeWindow::attach(other, 0, 2).unwrap_err();
        assert!(e.to_string().contains("bad magic"), "{e}");
        let small = MemfdRegion::create(4096).unwrap();
        assert!(NodeWindow::attach(small, 0, 2).is_err());
        assert!(NodeWindow::create(0, 1, 100).is_err()); // not whole pages
    }

    #[test]
    fn registers_go_through_the_queue_in_order() {
        let host = ModelHost::start(Dims::new(2, 1, 1).unwrap(), model_config(), 1 << 20).unwrap();
        let win = NodeWindow::attach(window_of(&host, 1), 1, 2).unwrap();
        let hw = RemoteHw::new(Arc::new(win)).unwrap();
        assert_eq!(hw.read32(regs::ID as usize).unwrap(), regs::ID_VALUE);
        assert_eq!(hw.read32(regs::NODE_COORD as usize).unwrap(), 1);
        // More posted writes than the queue holds, then a read that must see the last one.
        for v in 0..3 * REQ_SLOTS {
            hw.write32(regs::IRQ_COALESCE_NS as usize, v).unwrap();
        }
        assert_eq!(
            hw.read32(regs::IRQ_COALESCE_NS as usize).unwrap(),
            3 * REQ_SLOTS - 1
        );
        assert!(hw.read32(regs::BAR0_SIZE as usize).is_err()); // checked on the rank's side
        assert!(hw.write32(2, 0).is_err());
        assert!(hw.wait_irq(0, Duration::from_millis(1)).is_err()); // nothing raised
        assert!(hw.wait_irq(1, Duration::ZERO).is_err()); // no such vector
    }

    #[test]
    fn the_device_reaches_only_the_window_dma_memory() {
        let win = Arc::new(NodeWindow::create(0, 1, 1 << 16).unwrap());
        let dev = WindowDevice(win.clone());
        let hw = RemoteHw::new(win).unwrap();
        let buf = hw.dma().alloc(100).unwrap();
        assert!(buf.iova() >= DMA_OFF as u64);
        buf.write(0, b"shared").unwrap();
        let mut got = [0u8; 6];
        dev.device_read(buf.iova(), &mut got).unwrap();
        assert_eq!(&got, b"shared");
        dev.device_write(buf.iova() + 8, b"back").unwrap();
        let mut back = [0u8; 4];
        buf.read(8, &mut back).unwrap();
        assert_eq!(&back, b"back");
        let end = (DMA_OFF + (1 << 16)) as u64;
        assert!(dev.device_read(end - 4, &mut got).is_err()); // runs past the end
        assert!(dev.device_read(0x80, &mut got).is_err()); // the control page
        assert!(dev.device_write(u64::MAX - 2, b"x!").is_err()); // wraps
        assert!(hw.dma().alloc(1 << 20).is_err()); // more than the window has
    }

    #[test]
    fn default_torus_is_the_most_cube_like() {
        for (n, want) in [
            (1, "1x1x1"),
            (4, "2x2x1"),
            (6, "3x2x1"),
            (64, "4x4x4"),
            (4096, "16x16x16"),
        ] {
            assert_eq!(default_dims(n).unwrap().to_string(), want);
        }
        assert!(default_dims(0).is_err());
        assert!(default_dims(4097).is_err());
        assert!(default_dims(34).is_err()); // 2 x 17
    }
}
