//! The vfio backend: the adapter on a real card, through Linux VFIO (container, group,
//! device), generic over the syscall layer [`VfioSys`] so that tests run it over
//! [`super::vfio_fake::FakeVfio`]. Bring-up on a machine: `docs/VFIO.md`.
//!
//! * Registers: BAR0 mmapped once ([`Mmio`] over [`MmioRegion`]: bounds-checked, volatile).
//! * DMA: anonymous memory (`MADV_DONTFORK`) mapped into the IOMMU with
//!   `VFIO_IOMMU_MAP_DMA` at an IOVA from an [`IovaAllocator`] over the window
//!   [`VfioConfig::iova_window`]; [`VfioDma`] is a clonable handle, and each buffer unmaps
//!   itself (IOMMU first, then the host memory) when dropped.
//! * Interrupts: one eventfd per vector through `VFIO_DEVICE_SET_IRQS`, on MSI-X, else
//!   MSI, else INTx — whichever the device reports first.
//! * Teardown ([`VfioDevice::close`] or drop): interrupts off, bus mastering off (the
//!   device stops DMA), BAR0 unmapped. The device descriptor, its group and the container
//!   stay open while any DMA buffer lives, so each buffer can still be unmapped from the
//!   IOMMU (`vfio-ioctls` detaches the group from the container when its device closes).
//!
//! ```no_run
//! use skifch_drivers::fpga::hw::{DmaMemory, Hw, Interrupts, Mmio};
//! use skifch_drivers::fpga::vfio::VfioDevice;
//! use skifch_drivers::fpga::vfio_sys::LinuxVfio;
//! let dev = VfioDevice::open(LinuxVfio::new(), "0000:03:00.0", 4096)?;
//! let ring = dev.dma().alloc(64 * 1024)?;
//! dev.write64(0x100, ring.iova())?; // e.g. a ring base register
//! dev.wait_irq(0, std::time::Duration::from_millis(100))?;
//! # Ok::<(), skifch::Error>(())
//! ```
#![allow(unsafe_code)] // wrapping the BAR mapping, DMA mappings handed to DmaBuffer

use std::io;
use std::os::fd::AsFd;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use skifch::{Error, Result};

use super::hw::{DmaMemory, DmaRaw, Hw, Interrupts, IrqEvent, Mmio, MmioRegion};
use super::iova::IovaAllocator;
use super::vfio_sys::*;

/// PCI command register (config space offset 4): memory space and bus master enable.
const PCI_COMMAND: u64 = 4;
const PCI_COMMAND_MEMORY: u16 = 1 << 1;
const PCI_COMMAND_MASTER: u16 = 1 << 2;

/// How to open the adapter.
#[derive(Debug, Clone)]
pub struct VfioConfig {
    /// The smallest BAR0 the driver can work with (the register map's size).
    pub bar0_len: usize,
    /// Interrupt vectors wanted (0: none, the driver polls). Fewer are used if the device
    /// offers fewer.
    pub irq_vectors: u32,
    /// Reset the device when opening it (if it supports `VFIO_DEVICE_RESET`).
    pub reset: bool,
    /// IOVA window `[base, limit)` for DMA buffers (see [`super::iova`]).
    pub iova_window: (u64, u64),
}

impl VfioConfig {
    /// Defaults: one interrupt vector, reset on open, IOVA window `[1 MiB, 0xFEE0_0000)`.
    pub fn new(bar0_len: usize) -> Self {
        VfioConfig {
            bar0_len,
            irq_vectors: 1,
            reset: true,
            iova_window: (0x10_0000, 0xFEE0_0000),
        }
    }
}

fn page_size() -> u64 {
    4096
}

fn round_page(n: u64) -> Option<u64> {
    n.max(1)
        .checked_add(page_size() - 1)
        .map(|n| n & !(page_size() - 1))
}

/// Container and device: what a DMA mapping needs; shared by the device and every buffer.
struct Iommu<S: VfioSys> {
    // Field order is drop order: the device closes (its group leaves the container), then
    // the container closes.
    /// Held open until the last DMA buffer is unmapped: the container has an IOMMU (and
    /// can unmap DMA) only while the device's group is attached.
    device: S::Device,
    container: S::Container,
    iova: Mutex<IovaAllocator>,
    sys: S,
}

/// A clonable handle that allocates DMA buffers of one [`VfioDevice`] (they may outlive it).
pub struct VfioDma<S: VfioSys> {
    iommu: Arc<Iommu<S>>,
}

impl<S: VfioSys> Clone for VfioDma<S> {
    fn clone(&self) -> Self {
        VfioDma {
            iommu: self.iommu.clone(),
        }
    }
}

#[cold]
fn dma_map_error(e: io::Error) -> Error {
    let what = match e.raw_os_error() {
        Some(libc::ENOMEM) => {
            "VFIO_IOMMU_MAP_DMA: out of locked memory — DMA pins pages, so raise the memlock \
             limit (ulimit -l, LimitMEMLOCK=, /etc/security/limits.conf; see docs/VFIO.md)"
        }
        Some(libc::EINVAL) => {
            "VFIO_IOMMU_MAP_DMA rejected the mapping: the IOVA is outside the IOMMU's \
             aperture or overlaps a reserved range (set VfioConfig::iova_window; see docs/VFIO.md)"
        }
        Some(libc::EEXIST) => "VFIO_IOMMU_MAP_DMA: the IOVA range is already mapped",
        _ => "VFIO_IOMMU_MAP_DMA",
    };
    Error::os(what, e)
}

// SAFETY: `dma_map` returns fresh anonymous memory (zeroed, page-aligned) that the IOMMU
// maps at `iova`; `dma_unmap` unmaps it from the IOMMU before the host memory is freed,
// and leaks the memory if the IOMMU unmap fails.
unsafe impl<S: VfioSys> DmaMemory for VfioDma<S> {
    fn dma_map(&self, len: usize) -> Result<DmaRaw> {
        let m = &self.iommu;
        let size = round_page(len as u64)
            .filter(|&s| s <= isize::MAX as u64)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("DMA buffer of {len} bytes is too large").into())
            })?;
        let iova = m
            .iova
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .alloc(size)?;
        let give_back_iova = || {
            let _ = m
                .iova
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .free(iova, size);
        };
        let ptr = match m.sys.mmap_anon(size as usize) {
            Ok(p) => p,
            Err(e) => {
                give_back_iova();
                return Err(Error::os("allocating host memory for DMA (mmap)", e));
            }
        };
        // SAFETY: `ptr` is a fresh mapping of `size` bytes that stays allocated until
        // `dma_unmap` has unmapped it from the IOMMU (or forever, if that fails).
        if let Err(e) = unsafe { m.sys.map_dma(&m.container, ptr, iova, size) } {
            // SAFETY: the mapping just created; the IOMMU never got it.
            let _ = unsafe { m.sys.munmap(ptr, size as usize) };
            give_back_iova();
            return Err(dma_map_error(e));
        }
        Ok(DmaRaw {
            ptr,
            len: size as usize,
            iova,
        })
    }

    unsafe fn dma_unmap(&self, raw: &DmaRaw) -> Result<()> {
        let m = &self.iommu;
        let size = raw.len as u64;
        // On failure (or an unmap of another size) the device may still reach (part of)
        // the memory: leak it, never free it.
        m.sys
            .unmap_dma(&m.container, raw.iova, size)
            .map_err(|e| Error::os("VFIO_IOMMU_UNMAP_DMA (the buffer is leaked)", e))?;
        m.iova
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .free(raw.iova, size)?;
        // SAFETY: `raw` came from `dma_map` (caller), the IOMMU no longer maps it, and the
        // caller uses it no more.
        unsafe { m.sys.munmap(raw.ptr, raw.len) }
            .map_err(|e| Error::os("munmap of a DMA buffer", e))
    }
}

/// The adapter opened through VFIO: registers, DMA and interrupts ([`Hw`]).
pub struct VfioDevice<S: VfioSys> {
    bar: MmioRegion,
    bar_map: Option<(NonNull<u8>, usize)>,
    config_offset: u64,
    irqs: Vec<IrqEvent>,
    irq_index: Option<u32>,
    bdf: String,
    group: u32,
    /// Torn down: no register, interrupt or config-space access any more.
    closed: bool,
    iommu: Arc<Iommu<S>>,
}

// SAFETY: the raw BAR pointer in `bar_map` is only used by `teardown` (with `&mut self`);
// every other field is `Send`/`Sync` (handles are required to be by `VfioSys`).
unsafe impl<S: VfioSys> Send for VfioDevice<S> {}
// SAFETY: `&VfioDevice` reaches the BAR only through `MmioRegion` (volatile accesses).
unsafe impl<S: VfioSys> Sync for VfioDevice<S> {}

fn setup(msg: String) -> Error {
    Error::Bootstrap(msg.into())
}

/// A PCI address in full form (`dddd:bb:dd.f`), from `dddd:bb:dd.f` or `bb:dd.f`.
pub fn normalize_bdf(s: &str) -> Option<String> {
    let full = if s.matches(':').count() == 1 {
        format!("0000:{s}")
    } else {
        s.to_owned()
    };
    let b = full.as_bytes();
    let hex = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_hexdigit);
    (b.len() == 12
        && hex(0..4)
        && b[4] == b':'
        && hex(5..7)
        && b[7] == b':'
        && hex(8..10)
        && b[10] == b'.'
        && (b'0'..=b'7').contains(&b[11]))
    .then(|| full.to_ascii_lowercase())
}

/// Which device and group `dev` names: a PCI address, or a group number whose group holds
/// exactly one device.
fn resolve<S: VfioSys>(sys: &S, dev: &str) -> Result<(String, u32)> {
    if let Ok(group) = dev.parse::<u32>() {
        let devs = sys.group_devices(group).map_err(|e| {
            setup(format!(
                "IOMMU group {group}: cannot list /sys/kernel/iommu_groups/{group}/devices ({e}): \
                 is the IOMMU on and the group number right? (see docs/VFIO.md)"
            ))
        })?;
        return match devs.as_slice() {
            [(bdf, _)] => Ok((bdf.clone(), group)),
            _ => Err(setup(format!(
                "IOMMU group {group} has {} devices ({}): name the adapter by its PCI address instead",
                devs.len(),
                devs.iter().map(|d| d.0.as_str()).collect::<Vec<_>>().join(", ")
            ))),
        };
    }
    let bdf = normalize_bdf(dev).ok_or_else(|| {
        Error::InvalidArgument(
            format!("{dev:?} is neither a PCI address (0000:03:00.0, as `lspci -D` prints) nor an IOMMU group number").into(),
        )
    })?;
    let pci = sys.pci_device(&bdf).map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            setup(format!(
                "no PCI device {bdf}: check the address with `lspci -D -nn` (see docs/VFIO.md)"
            ))
        } else {
            setup(format!("reading /sys/bus/pci/devices/{bdf}: {e}"))
        }
    })?;
    let Some(group) = pci.iommu_group else {
        return Err(setup(format!(
            "{bdf} has no IOMMU group: the IOMMU is off — boot with intel_iommu=on (Intel) or \
             amd_iommu=on (AMD), plus iommu=pt, and enable VT-d/AMD-Vi in the firmware (see docs/VFIO.md)"
        )));
    };
    match pci.driver.as_deref() {
        Some("vfio-pci") => {}
        other => {
            let now = other.map_or("no driver".to_owned(), |d| format!("driver {d}"));
            return Err(setup(format!(
                "{bdf} is bound to {now}, not vfio-pci: `echo vfio-pci > /sys/bus/pci/devices/{bdf}/driver_override`, \
                 unbind it, then `echo {bdf} > /sys/bus/pci/drivers_probe` (see docs/VFIO.md, \"Binding\")"
            )));
        }
    }
    Ok((bdf, group))
}

fn open_error(path: &str, group: u32, e: &io::Error) -> Error {
    setup(match e.raw_os_error() {
        Some(libc::ENOENT) if path.ends_with("/vfio") => format!(
            "{path} does not exist: VFIO is not loaded — `modprobe vfio-pci` (see docs/VFIO.md)"
        ),
        Some(libc::ENOENT) => format!(
            "{path} does not exist: no device of IOMMU group {group} is bound to vfio-pci \
             (see docs/VFIO.md, \"Binding\")"
        ),
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "{path}: permission denied: add the user to the group owning it (or install a udev \
             rule giving it to the user), or run as root (see docs/VFIO.md, \"Permissions\")"
        ),
        Some(libc::EBUSY) => format!(
            "{path} is busy: another process (a VM, another rank of the job) holds IOMMU group {group}"
        ),
        _ => format!("opening {path}: {e}"),
    })
}

/// What to do about a failed open step (see [`OpenStep`]).
fn open_failed<S: VfioSys>(sys: &S, e: OpenError, bdf: &str, group: u32) -> Error {
    let OpenError { step, error } = e;
    match step {
        OpenStep::Container => open_error("/dev/vfio/vfio", group, &error),
        OpenStep::ApiVersion => setup(format!(
            "the kernel's VFIO API version is not {VFIO_API_VERSION}, the version this driver speaks"
        )),
        OpenStep::Iommu => setup(
            "the VFIO container offers no Type1 IOMMU (version 2): the IOMMU is off or unsupported — \
             boot with intel_iommu=on or amd_iommu=on (see docs/VFIO.md)"
                .into(),
        ),
        OpenStep::Sysfs => setup(format!(
            "{bdf}: cannot read its IOMMU group from /sys/bus/pci/devices/{bdf}/iommu_group ({error}): \
             is the IOMMU on? (see docs/VFIO.md)"
        )),
        OpenStep::Group => open_error(&format!("/dev/vfio/{group}"), group, &error),
        OpenStep::GroupViable => {
            let culprits = match sys.group_devices(group) {
                Ok(devs) => devs
                    .into_iter()
                    .filter(|(_, d)| d.as_deref().is_some_and(|d| d != "vfio-pci"))
                    .map(|(b, d)| format!("{b} (bound to {})", d.unwrap_or_default()))
                    .collect::<Vec<_>>()
                    .join(", "),
                Err(_) => String::new(),
            };
            let culprits = if culprits.is_empty() {
                String::new()
            } else {
                format!(" (now: {culprits})")
            };
            setup(format!(
                "IOMMU group {group} is not viable: every device in /sys/kernel/iommu_groups/{group}/devices \
                 must be bound to vfio-pci or to no driver{culprits} (see docs/VFIO.md)"
            ))
        }
        OpenStep::Attach => Error::os("VFIO_GROUP_SET_CONTAINER / VFIO_SET_IOMMU", error),
        OpenStep::Device => Error::os("VFIO_GROUP_GET_DEVICE_FD (or the device's info)", error),
        OpenStep::NotPci => setup(format!("{bdf} is not a VFIO PCI device ({error})")),
    }
}

impl<S: VfioSys> VfioDevice<S> {
    /// Opens the adapter `dev` (a PCI address such as `0000:03:00.0`, or the number of an
    /// IOMMU group holding only the adapter) with [`VfioConfig::new`]`(bar0_len)`.
    pub fn open(sys: S, dev: &str, bar0_len: usize) -> Result<Self> {
        Self::open_with(sys, dev, &VfioConfig::new(bar0_len))
    }

    /// Opens the adapter `dev` with explicit options.
    ///
    /// Errors are [`Error::Bootstrap`] for a machine not set up for VFIO (each message says
    /// what to do), [`Error::InvalidArgument`] for a malformed `dev`, and [`Error::Os`]
    /// for a failing system call.
    pub fn open_with(sys: S, dev: &str, cfg: &VfioConfig) -> Result<Self> {
        let (bdf, group) = resolve(&sys, dev)?;
        let container = sys
            .open_container()
            .map_err(|e| open_failed(&sys, e, &bdf, group))?;
        let device = sys
            .open_device(&container, &bdf)
            .map_err(|e| open_failed(&sys, e, &bdf, group))?;
        let (base, limit) = cfg.iova_window;
        let iova = IovaAllocator::new(base, limit, page_size())?;
        let iommu = Arc::new(Iommu {
            device,
            container,
            iova: Mutex::new(iova),
            sys,
        });
        Self::setup_device(iommu, bdf, group, cfg)
    }

    fn setup_device(
        iommu: Arc<Iommu<S>>,
        bdf: String,
        group: u32,
        cfg: &VfioConfig,
    ) -> Result<Self> {
        let (sys, device) = (&iommu.sys, &iommu.device);
        let config = sys.region_info(device, PCI_CONFIG_REGION_INDEX);
        if config.size == 0 {
            return Err(setup(format!(
                "{bdf} is not a VFIO PCI device (no config space region)"
            )));
        }
        let bar0 = sys.region_info(device, PCI_BAR0_REGION_INDEX);
        if bar0.size < cfg.bar0_len as u64 {
            return Err(setup(format!(
                "BAR0 of {bdf} is {} bytes, the adapter needs {}: is this the adapter? (`lspci -vv -s {bdf}`)",
                bar0.size, cfg.bar0_len
            )));
        }
        let rw = REGION_FLAG_READ | REGION_FLAG_WRITE;
        if bar0.flags & rw != rw {
            return Err(setup(format!(
                "BAR0 of {bdf} is not readable and writable through VFIO"
            )));
        }
        if bar0.flags & REGION_FLAG_MMAP == 0 {
            return Err(setup(format!(
                "BAR0 of {bdf} cannot be mmapped (VFIO reports no MMAP support: an I/O-port BAR, or \
                 a BAR smaller than a page on an old kernel); the driver needs memory-mapped registers"
            )));
        }
        if cfg.reset {
            sys.reset(device)
                .map_err(|e| Error::os("VFIO_DEVICE_RESET", e))?;
        }
        let map_len = usize::try_from(bar0.size)
            .ok()
            .and_then(|s| round_page(s as u64))
            .ok_or_else(|| setup(format!("BAR0 of {bdf} is too large to map")))?
            as usize;
        let ptr = sys
            .mmap_region(device, bar0.offset, map_len)
            .map_err(|e| Error::os("mmap of BAR0", e))?;
        // From here on, `dev` owns the mapping and tears it down on every error path.
        let mut dev = VfioDevice {
            // SAFETY: a fresh MAP_SHARED mapping of BAR0, `map_len >= bar0.size` bytes,
            // page-aligned, unmapped only by `teardown`, which drops every use first.
            bar: unsafe { MmioRegion::new(ptr, bar0.size as usize) }?,
            bar_map: Some((ptr, map_len)),
            config_offset: config.offset,
            irqs: Vec::new(),
            irq_index: None,
            bdf,
            group,
            closed: false,
            iommu: iommu.clone(),
        };
        dev.set_command(PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, 0)?;
        if cfg.irq_vectors > 0 {
            dev.setup_irqs(cfg.irq_vectors)?;
        }
        Ok(dev)
    }

    fn handle(&self) -> Result<&S::Device> {
        if self.closed {
            return Err(Error::InvalidArgument("the VFIO device is closed".into()));
        }
        Ok(&self.iommu.device)
    }

    /// Read-modify-write of the PCI command register: set `set`, clear `clear`.
    fn set_command(&self, set: u16, clear: u16) -> Result<()> {
        let (sys, d) = (&self.iommu.sys, self.handle()?);
        let mut b = [0u8; 2];
        sys.region_read(d, self.config_offset + PCI_COMMAND, &mut b)
            .map_err(|e| Error::os("reading the PCI command register", e))?;
        let cmd = (u16::from_le_bytes(b) | set) & !clear;
        sys.region_write(d, self.config_offset + PCI_COMMAND, &cmd.to_le_bytes())
            .map_err(|e| Error::os("writing the PCI command register (bus master enable)", e))
    }

    fn setup_irqs(&mut self, want: u32) -> Result<()> {
        let sys = &self.iommu.sys;
        let d = self.handle()?;
        for index in [PCI_MSIX_IRQ_INDEX, PCI_MSI_IRQ_INDEX, PCI_INTX_IRQ_INDEX] {
            let Some(info) = sys.irq_info(d, index) else {
                continue;
            };
            if info.count == 0 || info.flags & IRQ_INFO_EVENTFD == 0 {
                continue;
            }
            let n = want.min(info.count);
            let evs = (0..n)
                .map(|_| IrqEvent::new())
                .collect::<Result<Vec<_>>>()?;
            let fds: Vec<_> = evs.iter().map(|e| e.as_fd()).collect();
            sys.set_irq_eventfds(d, index, &fds).map_err(|e| {
                Error::os("VFIO_DEVICE_SET_IRQS (connecting interrupt eventfds)", e)
            })?;
            self.irqs = evs;
            self.irq_index = Some(index);
            return Ok(());
        }
        // No usable interrupt: the driver polls ([`Interrupts::irq_vectors`] is 0).
        Ok(())
    }

    /// The adapter's PCI address.
    pub fn bdf(&self) -> &str {
        &self.bdf
    }
    /// Its IOMMU group.
    pub fn iommu_group(&self) -> u32 {
        self.group
    }
    /// The VFIO interrupt index in use (`PCI_MSIX_IRQ_INDEX`, …), if any.
    pub fn irq_index(&self) -> Option<u32> {
        self.irq_index
    }

    /// Tears the device down and reports the first failure (dropping does the same
    /// silently): interrupts off, bus mastering off, BAR0 unmapped, device closed.
    pub fn close(mut self) -> Result<()> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        let iommu = self.iommu.clone();
        let (sys, device) = (&iommu.sys, &iommu.device);
        let mut first: Result<()> = Ok(());
        let mut note = |r: Result<()>| {
            if first.is_ok() {
                first = r;
            }
        };
        if let Some(index) = self.irq_index.take() {
            note(
                sys.disable_irqs(device, index)
                    .map_err(|e| Error::os("disabling interrupts", e)),
            );
        }
        // Stop the device's DMA before anything it may target is unmapped or freed.
        note(self.set_command(0, PCI_COMMAND_MASTER));
        if let Some((ptr, len)) = self.bar_map.take() {
            // The region must not be used after the unmap: make it empty first.
            // SAFETY: a zero-length window is never dereferenced.
            self.bar = unsafe { MmioRegion::new(ptr, 0) }?;
            // SAFETY: the BAR0 mapping made in `setup_device`, unmapped once (`take`), and
            // `self.bar` no longer covers it.
            note(unsafe { sys.munmap(ptr, len) }.map_err(|e| Error::os("munmap of BAR0", e)));
        }
        self.irqs.clear();
        self.closed = true;
        first
    }
}

impl<S: VfioSys> Drop for VfioDevice<S> {
    fn drop(&mut self) {
        // Failures cannot be reported from `drop`; `close` reports them.
        let _ = self.teardown();
    }
}

impl<S: VfioSys> Mmio for VfioDevice<S> {
    #[inline]
    fn len(&self) -> usize {
        self.bar.len()
    }
    #[inline]
    fn read32(&self, off: usize) -> Result<u32> {
        self.bar.read32(off)
    }
    #[inline]
    fn write32(&self, off: usize, v: u32) -> Result<()> {
        self.bar.write32(off, v)
    }
}

impl<S: VfioSys> Interrupts for VfioDevice<S> {
    fn irq_vectors(&self) -> u32 {
        self.irqs.len() as u32
    }
    fn wait_irq(&self, vector: u32, timeout: Duration) -> Result<u64> {
        match self.irqs.get(vector as usize) {
            Some(ev) => ev.wait(timeout),
            None if self.irqs.is_empty() => Err(Error::InvalidArgument(
                format!(
                    "{}: no interrupts (the device offers no MSI-X, MSI or INTx usable with an eventfd, \
                     or none were asked for): poll instead",
                    self.bdf
                )
                .into(),
            )),
            None => Err(Error::InvalidArgument(
                format!("interrupt vector {vector}: only {} are set up", self.irqs.len()).into(),
            )),
        }
    }
    fn rearm_irq(&self, vector: u32) -> Result<()> {
        if self.irq_index == Some(PCI_INTX_IRQ_INDEX) && vector == 0 {
            self.iommu
                .sys
                .unmask_intx(self.handle()?)
                .map_err(|e| Error::os("unmasking INTx", e))?;
        }
        Ok(())
    }
}

impl<S: VfioSys> Hw for VfioDevice<S> {
    type Dma = VfioDma<S>;
    fn dma(&self) -> VfioDma<S> {
        VfioDma {
            iommu: self.iommu.clone(),
        }
    }
}
