//! The rank's side: the [`Hw`] seam over the node window, its DMA memory, the launcher's
//! view of the job, and joining a job (see the [module docs](super)).

use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use fpga::regs;

use crate::shm::{close_inherited, env_u32, inherited_memfd, Fabric, MemfdRegion};
use crate::sys::{futex_wait, futex_wake_all};
use skifch::wait::Backoff;
use skifch::{Driver, Error, Job, Result};

use super::super::driver::{FpgaConfig, FpgaDriver, JobControl};
use super::super::hw::{check_access, DmaMemory, DmaRaw, Hw, Interrupts, Mmio};
use super::super::iova::IovaAllocator;
use super::{
    NodeWindow, DEFAULT_PORTS, DEFAULT_RX_BYTES, DMA_OFF, H_NODE, IRQ_COUNT, MAX_PORTS,
    MODEL_TIMEOUT, OP_READ, OP_WRITE, PAGE, REQ_HEAD, REQ_SLOTS, REQ_TAIL, RESP_SEQ, RESP_VAL,
    SERVER_ASLEEP, WINDOW_MAGIC,
};

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
    fn request_exit(&self, status: i32) -> i32 {
        self.fab.ctl().request_exit(status)
    }
    fn exit_request(&self) -> Option<i32> {
        self.fab.ctl().exit_request()
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
/// `SKIFCH_PORTS` ports (1..=[`MAX_PORTS`], default [`DEFAULT_PORTS`]), RX data rings of
/// `SKIFCH_FPGA_RX_BYTES` bytes per port (default [`DEFAULT_RX_BYTES`]; every rank of a
/// job inherits the same value from the launcher) and a TX ring of twice the completion
/// ring's entries.
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
        rx_bytes: env_u32("SKIFCH_FPGA_RX_BYTES")?.unwrap_or(DEFAULT_RX_BYTES),
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
    // Checked and copied; the inherited number is closed only once the job is joined.
    let file = inherited_memfd("SKIFCH_FPGA_FD", fd, WINDOW_MAGIC).map_err(|e| match e {
        // The adapter is brought up once per process: the libraries of a process share the
        // first one's driver (`crate::share`); a copy that cannot see the others (loaded
        // RTLD_LOCAL, linked statically) finds the window's descriptor consumed.
        Error::Bootstrap(m) => Error::Bootstrap(
            format!("{} (over fpga-model the adapter is brought up once per process: another SkifCh library of this program may have joined without sharing its driver, e.g. one loaded RTLD_LOCAL or linked statically)", &*m).into(),
        ),
        e => e,
    })?;
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
    close_inherited(fd);
    Ok(Job::new(drv))
}
