//! A fake of the VFIO syscall layer: one IOMMU group with one PCI device, whose behaviour
//! a test configures ([`FakeConfig`]) to reach every error path of the vfio backend.
//!
//! BAR0 is heap memory handed out by `mmap_region`, so the backend's volatile MMIO path
//! runs for real; the test plays the device through [`FakeVfio::bar_read32`] /
//! [`FakeVfio::bar_write32`], DMA through [`FakeVfio::dma_read`] / [`FakeVfio::dma_write`]
//! (translated by the fake's IOMMU table, like real DMA), and interrupts through
//! [`FakeVfio::fire_irq`] (it signals the eventfds the backend registered). Host memory for
//! DMA is real anonymous memory. [`FakeVfio::events`] records the calls that matter for
//! ordering (maps, unmaps, closes). Opening fails at the step a test chooses
//! ([`FakeConfig`]: container, IOMMU type, group file, viability, device name), with the
//! [`OpenStep`] the real layer reports for it.
//!
//! Device-side BAR accesses are atomic while the backend's are volatile: a test must order
//! the two sides (same thread, or a join/channel between them), as it would anyway to
//! check a value.
#![allow(unsafe_code)] // the fake BAR handed out as a mapping; device-side DMA copies

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use skifch::{Error, Result};

use super::hw::{copy_from_shared, copy_to_shared};
use super::iova::IovaMap;
use super::vfio_sys::*;

/// What the group's file does when opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupFile {
    /// Opens.
    Present,
    /// `ENOENT`: no device of the group is bound to vfio-pci.
    Missing,
    /// `EACCES`.
    PermissionDenied,
}

/// The fake machine and device.
#[derive(Debug, Clone)]
pub struct FakeConfig {
    /// The device's PCI address.
    pub bdf: String,
    /// Its IOMMU group (`None`: the IOMMU is off).
    pub group: Option<u32>,
    /// The driver sysfs shows for it.
    pub driver: Option<String>,
    /// Other devices of the group, with their drivers.
    pub other_devices: Vec<(String, Option<String>)>,
    /// `/dev/vfio/vfio` exists.
    pub container_present: bool,
    /// What opening `/dev/vfio/<group>` does.
    pub group_file: GroupFile,
    /// `VFIO_GROUP_FLAGS_VIABLE`.
    pub viable: bool,
    /// The container offers the Type1 v2 IOMMU.
    pub type1_iommu: bool,
    /// Size of BAR0 in bytes.
    pub bar0_len: u64,
    /// BAR0 has `VFIO_REGION_INFO_FLAG_MMAP`.
    pub bar0_mmap: bool,
    /// `VFIO_IOMMU_MAP_DMA` fails with this errno.
    pub dma_map_errno: Option<i32>,
    /// Vectors of MSI-X, MSI and INTx (0: not offered).
    pub irq_counts: [u32; 3],
    /// `VFIO_DEVICE_SET_IRQS` fails with this errno.
    pub set_irqs_errno: Option<i32>,
}

impl Default for FakeConfig {
    /// A healthy adapter: `0000:03:00.0` in group 12, bound to vfio-pci, 64 KiB BAR0,
    /// 4 MSI-X vectors, MSI and INTx.
    fn default() -> Self {
        FakeConfig {
            bdf: "0000:03:00.0".into(),
            group: Some(12),
            driver: Some("vfio-pci".into()),
            other_devices: Vec::new(),
            container_present: true,
            group_file: GroupFile::Present,
            viable: true,
            type1_iommu: true,
            bar0_len: 64 * 1024,
            bar0_mmap: true,
            dma_map_errno: None,
            irq_counts: [4, 1, 1],
            set_irqs_errno: None,
        }
    }
}

/// Region offsets in the device descriptor, as vfio-pci lays them out (`index << 40`).
const fn region_offset(index: u32) -> u64 {
    (index as u64) << 40
}

struct State {
    cfg: FakeConfig,
    config_space: [u8; 256],
    dma: IovaMap<usize>, // host addresses
    irq: Option<(u32, Vec<OwnedFd>)>,
    bar_mapped: bool,
    intx_unmasks: u32,
    resets: u32,
    events: Vec<String>,
}

struct Inner {
    state: Mutex<State>,
    bar: Box<[AtomicU32]>,
}

/// The fake. Clones share one device: keep a clone to play the device while the backend
/// owns another.
#[derive(Clone)]
pub struct FakeVfio {
    inner: Arc<Inner>,
}

/// A descriptor of the fake; closing it is recorded in [`FakeVfio::events`].
pub struct FakeHandle {
    what: &'static str,
    fake: FakeVfio,
}

impl Drop for FakeHandle {
    fn drop(&mut self) {
        self.fake.log(format!("close {}", self.what));
    }
}

fn errno(e: i32) -> io::Error {
    io::Error::from_raw_os_error(e)
}

impl FakeVfio {
    /// A fake machine with one device configured by `cfg`.
    pub fn new(cfg: FakeConfig) -> Self {
        let words = (cfg.bar0_len.div_ceil(4096) * 4096 / 4) as usize;
        FakeVfio {
            inner: Arc::new(Inner {
                bar: (0..words).map(|_| AtomicU32::new(0)).collect(),
                state: Mutex::new(State {
                    cfg,
                    config_space: [0; 256],
                    dma: IovaMap::default(),
                    irq: None,
                    bar_mapped: false,
                    intx_unmasks: 0,
                    resets: 0,
                    events: Vec::new(),
                }),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn log(&self, s: String) {
        self.lock().events.push(s);
    }
    fn handle(&self, what: &'static str) -> FakeHandle {
        FakeHandle {
            what,
            fake: self.clone(),
        }
    }

    /// Changes the configuration (e.g. make DMA mapping fail after a successful open).
    pub fn configure(&self, f: impl FnOnce(&mut FakeConfig)) {
        f(&mut self.lock().cfg);
    }

    /// The device reads its own register at `off` (what the driver wrote).
    pub fn bar_read32(&self, off: usize) -> Option<u32> {
        off.is_multiple_of(4)
            .then(|| self.inner.bar.get(off / 4))?
            .map(|r| r.load(Ordering::SeqCst))
    }
    /// The device sets its register at `off` (what the driver will read).
    pub fn bar_write32(&self, off: usize, v: u32) -> bool {
        match off
            .is_multiple_of(4)
            .then(|| self.inner.bar.get(off / 4))
            .flatten()
        {
            Some(r) => {
                r.store(v, Ordering::SeqCst);
                true
            }
            None => false,
        }
    }

    fn with_dma(&self, iova: u64, n: usize, f: impl FnOnce(*mut u8)) -> Result<()> {
        let st = self.lock();
        let Some((host, off)) = st.dma.translate(iova, n) else {
            return Err(Error::Corrupt(
                format!("fake IOMMU fault: DMA to IOVA {iova:#x}+{n:#x}, which is not mapped")
                    .into(),
            ));
        };
        // The lock is held: the mapping cannot be unmapped (nor its memory freed, which
        // the backend does only after a successful unmap) during the copy.
        f((host + off) as *mut u8);
        Ok(())
    }

    /// The device writes host memory by DMA at `iova` (through the fake IOMMU).
    pub fn dma_write(&self, iova: u64, src: &[u8]) -> Result<()> {
        // SAFETY: `p..p + src.len()` lies inside a live DMA mapping (`with_dma`), whose
        // memory the backend keeps allocated until unmapped and reaches only atomically.
        self.with_dma(iova, src.len(), |p| unsafe { copy_to_shared(p, src) })
    }
    /// The device reads host memory by DMA at `iova`.
    pub fn dma_read(&self, iova: u64, dst: &mut [u8]) -> Result<()> {
        // SAFETY: as in `dma_write`.
        self.with_dma(iova, dst.len(), |p| unsafe { copy_from_shared(p, dst) })
    }
    /// The live DMA mappings as `(iova, size)`.
    pub fn dma_mappings(&self) -> Vec<(u64, u64)> {
        self.lock().dma.ranges().collect()
    }

    /// Fires interrupt vector `vector` (signals the eventfd the backend registered).
    pub fn fire_irq(&self, vector: u32) -> Result<()> {
        let st = self.lock();
        let Some(fd) = st
            .irq
            .as_ref()
            .and_then(|(_, fds)| fds.get(vector as usize))
        else {
            return Err(Error::InvalidArgument(
                format!("fake: no eventfd on vector {vector}").into(),
            ));
        };
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live local array to an eventfd we hold open.
        let n = unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), 8) };
        if n != 8 {
            return Err(Error::last_os("fake: signalling an interrupt eventfd"));
        }
        Ok(())
    }

    /// The interrupt index and vector count the backend enabled.
    pub fn irq_enabled(&self) -> Option<(u32, usize)> {
        self.lock().irq.as_ref().map(|(i, f)| (*i, f.len()))
    }
    /// Whether bus mastering is on in the fake config space.
    pub fn bus_master(&self) -> bool {
        let st = self.lock();
        u16::from_le_bytes([st.config_space[4], st.config_space[5]]) & 4 != 0
    }
    /// Whether BAR0 is mapped.
    pub fn bar_mapped(&self) -> bool {
        self.lock().bar_mapped
    }
    /// Times INTx was unmasked.
    pub fn intx_unmasks(&self) -> u32 {
        self.lock().intx_unmasks
    }
    /// Times the device was reset.
    pub fn resets(&self) -> u32 {
        self.lock().resets
    }
    /// The recorded calls, in order.
    pub fn events(&self) -> Vec<String> {
        self.lock().events.clone()
    }
}

impl VfioSys for FakeVfio {
    type Container = FakeHandle;
    type Device = FakeHandle;

    fn pci_device(&self, bdf: &str) -> io::Result<PciDevice> {
        let st = self.lock();
        if bdf != st.cfg.bdf {
            return Err(errno(libc::ENOENT));
        }
        Ok(PciDevice {
            iommu_group: st.cfg.group,
            driver: st.cfg.driver.clone(),
        })
    }
    fn group_devices(&self, group: u32) -> io::Result<Vec<(String, Option<String>)>> {
        let st = self.lock();
        if st.cfg.group != Some(group) {
            return Err(errno(libc::ENOENT));
        }
        let mut v = vec![(st.cfg.bdf.clone(), st.cfg.driver.clone())];
        v.extend(st.cfg.other_devices.iter().cloned());
        Ok(v)
    }
    fn open_container(&self) -> std::result::Result<FakeHandle, OpenError> {
        let st = self.lock();
        if !st.cfg.container_present {
            return Err(OpenError::errno(OpenStep::Container, libc::ENOENT));
        }
        if !st.cfg.type1_iommu {
            return Err(OpenError {
                step: OpenStep::Iommu,
                error: io::Error::other("container doesn't support VfioType1V2 IOMMU"),
            });
        }
        drop(st);
        Ok(self.handle("container"))
    }
    fn open_device(&self, _: &FakeHandle, bdf: &str) -> std::result::Result<FakeHandle, OpenError> {
        let mut st = self.lock();
        if st.cfg.group.is_none() {
            return Err(OpenError {
                step: OpenStep::Sysfs,
                error: io::Error::other("invalid file path"),
            });
        }
        match st.cfg.group_file {
            GroupFile::Present => {}
            GroupFile::Missing => return Err(OpenError::errno(OpenStep::Group, libc::ENOENT)),
            GroupFile::PermissionDenied => {
                return Err(OpenError::errno(OpenStep::Group, libc::EACCES))
            }
        }
        if !st.cfg.viable {
            return Err(OpenError {
                step: OpenStep::GroupViable,
                error: io::Error::other("group is not viable"),
            });
        }
        if bdf != st.cfg.bdf {
            return Err(OpenError::errno(OpenStep::Device, libc::ENODEV));
        }
        st.events.push("attach group".into());
        drop(st);
        Ok(self.handle("device"))
    }
    fn region_info(&self, _: &FakeHandle, index: u32) -> RegionInfo {
        let st = self.lock();
        let rw = REGION_FLAG_READ | REGION_FLAG_WRITE;
        match index {
            PCI_BAR0_REGION_INDEX => RegionInfo {
                flags: rw
                    | if st.cfg.bar0_mmap {
                        REGION_FLAG_MMAP
                    } else {
                        0
                    },
                size: st.cfg.bar0_len,
                offset: region_offset(index),
            },
            PCI_CONFIG_REGION_INDEX => RegionInfo {
                flags: rw,
                size: 256,
                offset: region_offset(index),
            },
            i => RegionInfo {
                flags: 0,
                size: 0,
                offset: if i < 9 { region_offset(i) } else { 0 },
            },
        }
    }
    fn irq_info(&self, _: &FakeHandle, index: u32) -> Option<IrqInfo> {
        let st = self.lock();
        let count = match index {
            PCI_MSIX_IRQ_INDEX => st.cfg.irq_counts[0],
            PCI_MSI_IRQ_INDEX => st.cfg.irq_counts[1],
            PCI_INTX_IRQ_INDEX => st.cfg.irq_counts[2],
            i if i < 5 => 0,
            _ => return None,
        };
        Some(IrqInfo {
            flags: IRQ_INFO_EVENTFD,
            count,
        })
    }
    fn set_irq_eventfds(
        &self,
        _: &FakeHandle,
        index: u32,
        fds: &[BorrowedFd<'_>],
    ) -> io::Result<()> {
        let mut st = self.lock();
        if let Some(e) = st.cfg.set_irqs_errno {
            return Err(errno(e));
        }
        let owned = fds
            .iter()
            .map(|f| f.try_clone_to_owned())
            .collect::<io::Result<Vec<_>>>()?;
        st.events
            .push(format!("set_irqs index={index} count={}", owned.len()));
        st.irq = Some((index, owned));
        Ok(())
    }
    fn disable_irqs(&self, _: &FakeHandle, index: u32) -> io::Result<()> {
        let mut st = self.lock();
        st.irq = None;
        st.events.push(format!("disable_irqs index={index}"));
        Ok(())
    }
    fn unmask_intx(&self, _: &FakeHandle) -> io::Result<()> {
        self.lock().intx_unmasks += 1;
        Ok(())
    }
    fn reset(&self, _: &FakeHandle) -> io::Result<()> {
        let mut st = self.lock();
        st.resets += 1;
        st.config_space[4] = 0;
        st.config_space[5] = 0;
        Ok(())
    }
    fn region_read(&self, _: &FakeHandle, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let st = self.lock();
        let off = offset.wrapping_sub(region_offset(PCI_CONFIG_REGION_INDEX)) as usize;
        let src = off
            .checked_add(buf.len())
            .and_then(|end| st.config_space.get(off..end))
            .ok_or_else(|| errno(libc::EINVAL))?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn region_write(&self, _: &FakeHandle, offset: u64, buf: &[u8]) -> io::Result<()> {
        let mut st = self.lock();
        let off = offset.wrapping_sub(region_offset(PCI_CONFIG_REGION_INDEX)) as usize;
        let dst = off
            .checked_add(buf.len())
            .and_then(|end| st.config_space.get_mut(off..end))
            .ok_or_else(|| errno(libc::EINVAL))?;
        dst.copy_from_slice(buf);
        st.events.push(format!("config write {off:#x}"));
        Ok(())
    }
    fn mmap_region(&self, _: &FakeHandle, offset: u64, len: usize) -> io::Result<NonNull<u8>> {
        let mut st = self.lock();
        if offset != region_offset(PCI_BAR0_REGION_INDEX) || !st.cfg.bar0_mmap {
            return Err(errno(libc::EINVAL));
        }
        if len > self.inner.bar.len() * 4 || st.bar_mapped {
            return Err(errno(libc::EINVAL));
        }
        st.bar_mapped = true;
        st.events.push("mmap bar0".into());
        NonNull::new(self.inner.bar.as_ptr().cast_mut().cast()).ok_or_else(|| errno(libc::EFAULT))
    }
    fn mmap_anon(&self, len: usize) -> io::Result<NonNull<u8>> {
        LinuxVfio::new().mmap_anon(len)
    }
    unsafe fn munmap(&self, ptr: NonNull<u8>, len: usize) -> io::Result<()> {
        if ptr.as_ptr().cast_const() == self.inner.bar.as_ptr().cast() {
            let mut st = self.lock();
            st.bar_mapped = false;
            st.events.push("munmap bar0".into());
            return Ok(());
        }
        // SAFETY: not the fake BAR, so one of the anonymous mappings from `mmap_anon`,
        // unused afterwards (caller).
        unsafe { LinuxVfio::new().munmap(ptr, len) }
    }
    unsafe fn map_dma(
        &self,
        _: &FakeHandle,
        vaddr: NonNull<u8>,
        iova: u64,
        size: u64,
    ) -> io::Result<()> {
        let mut st = self.lock();
        if let Some(e) = st.cfg.dma_map_errno {
            return Err(errno(e));
        }
        if st.dma.insert(iova, vaddr.as_ptr() as usize, size).is_err() {
            return Err(errno(libc::EEXIST));
        }
        st.events.push(format!("map_dma {iova:#x}+{size:#x}"));
        Ok(())
    }
    fn unmap_dma(&self, _: &FakeHandle, iova: u64, size: u64) -> io::Result<()> {
        let mut st = self.lock();
        match st.dma.get(iova) {
            Some((_, s)) if s == size => {
                st.dma.remove(iova);
                st.events.push(format!("unmap_dma {iova:#x}+{size:#x}"));
                Ok(())
            }
            _ => Err(errno(libc::EINVAL)),
        }
    }
}
