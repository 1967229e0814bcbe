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
//!
//! The code: this file (the window's layout and [`NodeWindow`]), `host.rs` (the launcher's
//! side: [`ModelHost`], the register servers, [`default_dims`]), `rank.rs` (the rank's side:
//! [`RemoteHw`], [`RemoteDma`], [`LauncherControl`], [`init`]).
//!
//! [`Machine`]: fpga::model::Machine
//! [`Bar`]: fpga::model::Bar
//! [`Bar::host_read`]: fpga::model::Bar::host_read
//! [`Bar::host_write`]: fpga::model::Bar::host_write
//! [`IrqSink`]: fpga::model::IrqSink
//! [`Mmio`]: super::hw::Mmio
//! [`Interrupts::wait_irq`]: super::hw::Interrupts::wait_irq
//! [`IovaAllocator`]: super::iova::IovaAllocator
//! [`JobControl`]: super::driver::JobControl
#![allow(unsafe_code)] // atomics over the mapped window, futex waits, the DMA memory contract

use std::fs::File;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::shm::{MemfdRegion, Region};
use crate::sys::futex_wake_all;
use fpga::model::ModelConfig;
use skifch::{Error, Result};

/// `SKIFNODE`: the first word of a node window.
pub const WINDOW_MAGIC: u64 = u64::from_le_bytes(*b"SKIFNODE");
/// Version of the window layout.
pub const WINDOW_VERSION: u32 = 1;
/// Byte offset of the DMA memory in the window (also its lowest IOVA: never 0).
pub const DMA_OFF: usize = 0x1_0000;
/// DMA memory per node unless configured otherwise (the default driver configuration
/// needs about 9 MiB, see [`DEFAULT_RX_BYTES`]; the memfd's pages are only allocated when
/// touched).
pub const DEFAULT_DMA_BYTES: usize = 16 << 20;
/// Longest a rank waits for the launcher's register server (a read's response, room in
/// the queue) before the call fails: the launcher is gone or wedged.
pub const MODEL_TIMEOUT: Duration = Duration::from_secs(5);
/// Ports per rank unless `SKIFCH_PORTS` says otherwise: one per library of
/// [`skifch::ports`] (the fifth costs one more RX data and completion ring per rank, ~80 KiB
/// of the node window's DMA memory).
pub const DEFAULT_PORTS: u32 = 5;
/// Most ports per rank: the model's RX queues, one kept for credit returns.
pub const MAX_PORTS: u32 = 7;
/// RX data ring bytes per port unless `SKIFCH_FPGA_RX_BYTES` says otherwise. Each sender's
/// credit window at a port is this / N, and the bandwidth between two ranks is about one
/// window per credit round trip (driver, model, driver): with 64 KiB rings a 2-rank
/// `msgrate` of 64 KiB messages moved ~140 MB/s, with 1 MiB ~570 MB/s (same run, load 3). With [`MAX_PORTS`] ports, the credit queue and
/// the staging ring (twice this) they take 10 MiB of the [`DEFAULT_DMA_BYTES`] window,
/// pages touched only when used.
pub const DEFAULT_RX_BYTES: u32 = 1 << 20;

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

mod host;
mod rank;

pub use host::{default_dims, ModelHost, WindowDevice};
pub use rank::{
    config_from_env, init, LauncherControl, RemoteDma, RemoteDriver, RemoteHw, RemoteJob,
};

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use fpga::regs::{self, Dims};

    use super::super::hw::{DmaMemory, Hw, Interrupts, Mmio};
    use super::super::model::DeviceDma;
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
