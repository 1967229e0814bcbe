//! The syscall layer under the vfio backend: every VFIO operation, `mmap`, `pread` and
//! sysfs lookup the backend makes goes through [`VfioSys`], so the backend's code runs in
//! tests over [`super::vfio_fake::FakeVfio`] without a card.
//!
//! [`LinuxVfio`] is the real implementation, on rust-vmm's `vfio-ioctls` crate (default
//! features off, so no KVM or MSHV device is involved): its `VfioContainer` opens
//! `/dev/vfio/vfio`, checks the API version and the Type1 v2 IOMMU, and maps and unmaps DMA;
//! its `VfioDevice` opens the IOMMU group, checks that it is viable, attaches it to the
//! container, sets the IOMMU type, gets the device descriptor with its region and interrupt
//! information, connects interrupt eventfds, unmasks INTx and resets the device. What the
//! crate does not do stays here, on `libc`: the sysfs lookups (so errors can name the
//! driver in the way), `mmap` of BAR0 and of DMA memory, and `pread`/`pwrite` of config
//! space (the crate's `region_read`/`region_write` log a failure instead of returning it,
//! and the command register is read-modify-written).
//!
//! The seam follows the crate's granularity: opening is two steps ([`VfioSys::open_container`],
//! [`VfioSys::open_device`]) whose failures say which kernel operation failed
//! ([`OpenStep`]), so that the backend can say what to do. The crate's limits, and why they
//! are acceptable here, are in `docs/VFIO.md` ("The vfio-ioctls crate").
//!
//! Ref: Linux `include/uapi/linux/vfio.h`, `Documentation/driver-api/vfio.rst`.
#![allow(unsafe_code)] // mmap, pread/pwrite on VFIO descriptors; DMA mapping; borrowed eventfds

use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;

use vfio_ioctls::{VfioContainer, VfioError};
use vmm_sys_util::eventfd::EventFd;

// ---------------------------------------------------------------------------------------
// <linux/vfio.h> values the backend names
// ---------------------------------------------------------------------------------------

/// `VFIO_API_VERSION`.
pub const VFIO_API_VERSION: i32 = 0;
/// `VFIO_REGION_INFO_FLAG_READ`.
pub const REGION_FLAG_READ: u32 = 1 << 0;
/// `VFIO_REGION_INFO_FLAG_WRITE`.
pub const REGION_FLAG_WRITE: u32 = 1 << 1;
/// `VFIO_REGION_INFO_FLAG_MMAP`.
pub const REGION_FLAG_MMAP: u32 = 1 << 2;
/// `VFIO_PCI_BAR0_REGION_INDEX`.
pub const PCI_BAR0_REGION_INDEX: u32 = 0;
/// `VFIO_PCI_CONFIG_REGION_INDEX`.
pub const PCI_CONFIG_REGION_INDEX: u32 = 7;
/// `VFIO_PCI_INTX_IRQ_INDEX`.
pub const PCI_INTX_IRQ_INDEX: u32 = 0;
/// `VFIO_PCI_MSI_IRQ_INDEX`.
pub const PCI_MSI_IRQ_INDEX: u32 = 1;
/// `VFIO_PCI_MSIX_IRQ_INDEX`.
pub const PCI_MSIX_IRQ_INDEX: u32 = 2;
/// `VFIO_IRQ_INFO_EVENTFD`: the interrupt can signal an eventfd.
pub const IRQ_INFO_EVENTFD: u32 = 1 << 0;

// ---------------------------------------------------------------------------------------
// The seam
// ---------------------------------------------------------------------------------------

/// A device region (`VFIO_DEVICE_GET_REGION_INFO`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionInfo {
    /// `REGION_FLAG_*`.
    pub flags: u32,
    /// Size in bytes (0: the region does not exist, e.g. an unimplemented BAR).
    pub size: u64,
    /// Offset of the region in the device descriptor (for `mmap` and `pread`).
    pub offset: u64,
}

/// An interrupt index (`VFIO_DEVICE_GET_IRQ_INFO`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrqInfo {
    /// `IRQ_INFO_*`.
    pub flags: u32,
    /// Number of vectors of this index (0: not available).
    pub count: u32,
}

/// A PCI device as sysfs describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciDevice {
    /// Its IOMMU group (`None`: no IOMMU group — the IOMMU is off).
    pub iommu_group: Option<u32>,
    /// The driver bound to it (`None`: no driver).
    pub driver: Option<String>,
}

/// The step of [`VfioSys::open_container`] / [`VfioSys::open_device`] that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenStep {
    /// Opening `/dev/vfio/vfio`.
    Container,
    /// `VFIO_GET_API_VERSION`: not [`VFIO_API_VERSION`].
    ApiVersion,
    /// `VFIO_CHECK_EXTENSION`: the container offers no Type1 v2 IOMMU.
    Iommu,
    /// Finding the device's IOMMU group in sysfs.
    Sysfs,
    /// Opening `/dev/vfio/<group>`.
    Group,
    /// `VFIO_GROUP_GET_STATUS`: the group is not viable (or its status is unreadable).
    GroupViable,
    /// `VFIO_GROUP_SET_CONTAINER` or `VFIO_SET_IOMMU`.
    Attach,
    /// `VFIO_GROUP_GET_DEVICE_FD`, or the device's info, region or interrupt queries.
    Device,
    /// The device is not a PCI device with the regions and interrupt indexes of one.
    NotPci,
}

/// A failed open: which step, and the system error (an errno where the kernel gave one).
#[derive(Debug)]
pub struct OpenError {
    /// The step that failed.
    pub step: OpenStep,
    /// What the system said.
    pub error: io::Error,
}

impl OpenError {
    /// `step` failed with `errno`.
    pub fn errno(step: OpenStep, errno: i32) -> OpenError {
        OpenError {
            step,
            error: io::Error::from_raw_os_error(errno),
        }
    }
}

/// The system calls of the vfio backend. Errors are plain `io::Error`s (an errno where
/// there is one); the backend turns them into messages that say what to do.
pub trait VfioSys: Send + Sync + 'static {
    /// An open container (an IOMMU domain). Dropping it closes it.
    type Container: Send + Sync;
    /// An open device, its group attached to a container (and kept attached, so DMA can
    /// be unmapped, until the device is dropped). Dropping it closes it.
    type Device: Send + Sync;

    /// sysfs: `/sys/bus/pci/devices/<bdf>` (`NotFound`: no such device).
    fn pci_device(&self, bdf: &str) -> io::Result<PciDevice>;
    /// sysfs: the devices of `/sys/kernel/iommu_groups/<group>/devices`, with their drivers.
    fn group_devices(&self, group: u32) -> io::Result<Vec<(String, Option<String>)>>;

    /// Opens `/dev/vfio/vfio` and checks the API version and the Type1 v2 IOMMU.
    fn open_container(&self) -> Result<Self::Container, OpenError>;
    /// Opens the device `bdf` (its PCI address): its IOMMU group (`/dev/vfio/<group>`),
    /// which must be viable, attached to `container` (whose IOMMU type is set by the first
    /// group), then the device descriptor and its region and interrupt information.
    fn open_device(
        &self,
        container: &Self::Container,
        bdf: &str,
    ) -> Result<Self::Device, OpenError>;
    /// A region of the device (size 0 if it has none of that index).
    fn region_info(&self, device: &Self::Device, index: u32) -> RegionInfo;
    /// An interrupt index of the device (`None`: the device has none of that index).
    fn irq_info(&self, device: &Self::Device, index: u32) -> Option<IrqInfo>;
    /// `VFIO_DEVICE_SET_IRQS`, `DATA_EVENTFD | ACTION_TRIGGER`: vectors `0..fds.len()` of
    /// `index` signal `fds`.
    fn set_irq_eventfds(
        &self,
        device: &Self::Device,
        index: u32,
        fds: &[BorrowedFd<'_>],
    ) -> io::Result<()>;
    /// `VFIO_DEVICE_SET_IRQS`, `DATA_NONE | ACTION_TRIGGER`, count 0: disables `index`.
    fn disable_irqs(&self, device: &Self::Device, index: u32) -> io::Result<()>;
    /// `VFIO_DEVICE_SET_IRQS`, `DATA_NONE | ACTION_UNMASK`: unmasks INTx after it fired.
    fn unmask_intx(&self, device: &Self::Device) -> io::Result<()>;
    /// `VFIO_DEVICE_RESET`, if the device supports it (`VFIO_DEVICE_FLAGS_RESET`).
    fn reset(&self, device: &Self::Device) -> io::Result<()>;
    /// `pread` of a region (config space) at `offset` of the device descriptor.
    fn region_read(&self, device: &Self::Device, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// `pwrite` of a region at `offset` of the device descriptor.
    fn region_write(&self, device: &Self::Device, offset: u64, buf: &[u8]) -> io::Result<()>;
    /// `mmap(MAP_SHARED, PROT_READ | PROT_WRITE)` of `len` bytes at `offset` of the device
    /// descriptor (a BAR). The result is page-aligned and stays valid until `munmap`.
    fn mmap_region(
        &self,
        device: &Self::Device,
        offset: u64,
        len: usize,
    ) -> io::Result<NonNull<u8>>;
    /// Anonymous, zeroed, page-aligned memory for DMA (not inherited by `fork`).
    fn mmap_anon(&self, len: usize) -> io::Result<NonNull<u8>>;
    /// Unmaps what `mmap_region` or `mmap_anon` returned.
    ///
    /// # Safety
    /// `ptr`/`len` are exactly one earlier mapping of this object, not yet unmapped, and
    /// nothing uses the memory afterwards.
    unsafe fn munmap(&self, ptr: NonNull<u8>, len: usize) -> io::Result<()>;
    /// `VFIO_IOMMU_MAP_DMA` (read and write): the device reaches `vaddr..vaddr + size` at
    /// `iova..iova + size`; the kernel pins the pages.
    ///
    /// # Safety
    /// The memory must stay allocated until `unmap_dma` of the same range succeeds (the
    /// device may write it at any moment until then), and is reached through raw pointers
    /// (atomic or volatile accesses), or through a reference only to a range the device is
    /// known not to write while the reference lives ([`super::hw::DmaBuffer::cpu_slice`]).
    unsafe fn map_dma(
        &self,
        container: &Self::Container,
        vaddr: NonNull<u8>,
        iova: u64,
        size: u64,
    ) -> io::Result<()>;
    /// `VFIO_IOMMU_UNMAP_DMA` of exactly `iova..iova + size`: revokes the device's access.
    /// An unmap of another size is an error (the memory must then be leaked).
    fn unmap_dma(&self, container: &Self::Container, iova: u64, size: u64) -> io::Result<()>;
}

// ---------------------------------------------------------------------------------------
// Linux, on vfio-ioctls
// ---------------------------------------------------------------------------------------

/// The real system calls, on `vfio-ioctls`. sysfs can be pointed elsewhere
/// ([`LinuxVfio::with_sysfs`]) to test the lookups on a fake tree; `/dev/vfio` is the
/// crate's, fixed.
#[derive(Debug, Clone)]
pub struct LinuxVfio {
    sys: PathBuf,
}

impl Default for LinuxVfio {
    fn default() -> Self {
        Self::new()
    }
}

impl LinuxVfio {
    /// sysfs at `/sys`.
    pub fn new() -> Self {
        Self::with_sysfs("/sys")
    }
    /// Another sysfs root.
    pub fn with_sysfs(sys: impl Into<PathBuf>) -> Self {
        LinuxVfio { sys: sys.into() }
    }

    fn device_dir(&self, bdf: &str) -> PathBuf {
        self.sys.join("bus/pci/devices").join(bdf)
    }

    fn driver_of(dir: &Path) -> Option<String> {
        std::fs::read_link(dir.join("driver"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
    }
}

/// An error of the crate as an `io::Error`: its errno where it carries one, else the
/// crate's message (some operations, e.g. `VFIO_GROUP_SET_CONTAINER`, report none).
fn io_error(e: VfioError) -> io::Error {
    let errno = match &e {
        VfioError::OpenContainer(io) | VfioError::OpenGroup(io, _) => io.raw_os_error(),
        VfioError::ContainerSetIOMMU(s)
        | VfioError::GroupGetDeviceFD(s)
        | VfioError::VfioDeviceGetInfo(s)
        | VfioError::VfioDeviceGetRegionInfo(s)
        | VfioError::IommuDmaMap(s)
        | VfioError::IommuDmaUnmap(s) => Some(s.errno()),
        _ => None,
    };
    match errno {
        Some(n) => io::Error::from_raw_os_error(n),
        None => io::Error::other(e),
    }
}

/// Which step of an open a crate error belongs to.
fn open_error(e: VfioError) -> OpenError {
    let step = match &e {
        VfioError::OpenContainer(_) => OpenStep::Container,
        VfioError::VfioApiVersion => OpenStep::ApiVersion,
        VfioError::VfioExtension | VfioError::VfioInvalidType | VfioError::VfioType1V2 => {
            OpenStep::Iommu
        }
        VfioError::InvalidPath => OpenStep::Sysfs,
        VfioError::OpenGroup(..) => OpenStep::Group,
        VfioError::GetGroupStatus | VfioError::GroupViable => OpenStep::GroupViable,
        VfioError::GroupSetContainer | VfioError::ContainerSetIOMMU(_) => OpenStep::Attach,
        VfioError::VfioDeviceGetInfoPCI | VfioError::VfioDeviceGetInfoOther => OpenStep::NotPci,
        _ => OpenStep::Device,
    };
    OpenError {
        step,
        error: io_error(e),
    }
}

/// The crate's device, with what the backend needs beside it.
pub struct LinuxDevice {
    dev: vfio_ioctls::VfioDevice,
}

impl std::fmt::Debug for LinuxDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxDevice")
            .field("fd", &self.dev.as_raw_fd())
            .finish()
    }
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl VfioSys for LinuxVfio {
    type Container = Arc<VfioContainer>;
    type Device = LinuxDevice;

    fn pci_device(&self, bdf: &str) -> io::Result<PciDevice> {
        let dir = self.device_dir(bdf);
        std::fs::metadata(&dir)?;
        let iommu_group = match std::fs::read_link(dir.join("iommu_group")) {
            Ok(p) => p
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.parse().ok()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        Ok(PciDevice {
            iommu_group,
            driver: Self::driver_of(&dir),
        })
    }

    fn group_devices(&self, group: u32) -> io::Result<Vec<(String, Option<String>)>> {
        let dir = self
            .sys
            .join(format!("kernel/iommu_groups/{group}/devices"));
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            out.push((name, Self::driver_of(&e.path())));
        }
        out.sort();
        Ok(out)
    }

    fn open_container(&self) -> Result<Arc<VfioContainer>, OpenError> {
        // No hypervisor device: this process is the device's driver, not a VMM.
        VfioContainer::new(None).map(Arc::new).map_err(open_error)
    }

    fn open_device(
        &self,
        container: &Arc<VfioContainer>,
        bdf: &str,
    ) -> Result<LinuxDevice, OpenError> {
        // The crate names the device by its sysfs directory (for the IOMMU group) and
        // attaches the group to the container (sets the IOMMU for the first group).
        let ops: Arc<dyn vfio_ioctls::VfioOps> = container.clone();
        vfio_ioctls::VfioDevice::new(&self.device_dir(bdf), ops, false)
            .map(|dev| LinuxDevice { dev })
            .map_err(open_error)
    }

    fn region_info(&self, d: &LinuxDevice, index: u32) -> RegionInfo {
        RegionInfo {
            flags: d.dev.get_region_flags(index),
            size: d.dev.get_region_size(index),
            offset: d.dev.get_region_offset(index),
        }
    }
    fn irq_info(&self, d: &LinuxDevice, index: u32) -> Option<IrqInfo> {
        d.dev.get_irq_info(index).map(|i| IrqInfo {
            flags: i.flags,
            count: i.count,
        })
    }
    fn set_irq_eventfds(
        &self,
        d: &LinuxDevice,
        index: u32,
        fds: &[BorrowedFd<'_>],
    ) -> io::Result<()> {
        // The crate takes its own `EventFd` type; the backend owns its eventfds
        // (`IrqEvent`). Borrowed views, never closed: the kernel takes its own reference
        // to each eventfd during the ioctl.
        let evs: Vec<ManuallyDrop<EventFd>> = fds
            .iter()
            // SAFETY: `fd` is an open eventfd for the whole call (borrowed); the
            // `ManuallyDrop` never closes it, and the `EventFd` does not outlive the call.
            .map(|fd| ManuallyDrop::new(unsafe { EventFd::from_raw_fd(fd.as_raw_fd()) }))
            .collect();
        let refs: Vec<&EventFd> = evs.iter().map(|e| &**e).collect();
        d.dev.enable_irq(index, refs).map_err(io_error)
    }
    fn disable_irqs(&self, d: &LinuxDevice, index: u32) -> io::Result<()> {
        d.dev.disable_irq(index).map_err(io_error)
    }
    fn unmask_intx(&self, d: &LinuxDevice) -> io::Result<()> {
        d.dev.unmask_irq(PCI_INTX_IRQ_INDEX).map_err(io_error)
    }
    fn reset(&self, d: &LinuxDevice) -> io::Result<()> {
        // The crate checks VFIO_DEVICE_FLAGS_RESET and does not report the ioctl's result.
        d.dev.reset();
        Ok(())
    }
    fn region_read(&self, d: &LinuxDevice, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        // SAFETY: reads at most `buf.len()` bytes into `buf`, which is live and exclusive.
        let n = unsafe {
            libc::pread(
                d.dev.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                offset as libc::off_t,
            )
        };
        short_io(n, buf.len())
    }
    fn region_write(&self, d: &LinuxDevice, offset: u64, buf: &[u8]) -> io::Result<()> {
        // SAFETY: writes `buf.len()` bytes from `buf`, which is live.
        let n = unsafe {
            libc::pwrite(
                d.dev.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                offset as libc::off_t,
            )
        };
        short_io(n, buf.len())
    }
    fn mmap_region(&self, d: &LinuxDevice, offset: u64, len: usize) -> io::Result<NonNull<u8>> {
        // SAFETY: a new shared mapping chosen by the kernel; no existing memory is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                d.dev.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        mapped(p)
    }
    fn mmap_anon(&self, len: usize) -> io::Result<NonNull<u8>> {
        // SAFETY: a new private anonymous mapping chosen by the kernel.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        let p = mapped(p)?;
        // A child of `fork` must not share (or copy-on-write) pages the IOMMU has pinned:
        // the device would keep writing the parent's old pages.
        // SAFETY: advice on the mapping just created, which nothing else uses yet.
        if unsafe { libc::madvise(p.as_ptr().cast(), len, libc::MADV_DONTFORK) } != 0 {
            let e = io::Error::last_os_error();
            // SAFETY: the mapping just created, unused.
            unsafe { libc::munmap(p.as_ptr().cast(), len) };
            return Err(e);
        }
        Ok(p)
    }
    unsafe fn munmap(&self, ptr: NonNull<u8>, len: usize) -> io::Result<()> {
        // SAFETY: one earlier mapping of ours, unused afterwards (caller).
        check(unsafe { libc::munmap(ptr.as_ptr().cast(), len) }).map(drop)
    }
    unsafe fn map_dma(
        &self,
        c: &Arc<VfioContainer>,
        vaddr: NonNull<u8>,
        iova: u64,
        size: u64,
    ) -> io::Result<()> {
        let size = usize::try_from(size).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: the memory stays allocated until unmapped, and the CPU side never holds a
        // reference to a range the device may write meanwhile (caller): the crate's contract
        // for `vfio_dma_map` (a concurrent device write under a reference is what it rules out).
        unsafe { c.vfio_dma_map(iova, size, vaddr.as_ptr()) }.map_err(io_error)
    }
    fn unmap_dma(&self, c: &Arc<VfioContainer>, iova: u64, size: u64) -> io::Result<()> {
        let size = usize::try_from(size).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        c.vfio_dma_unmap(iova, size).map_err(io_error)
    }
}

fn short_io(n: isize, want: usize) -> io::Result<()> {
    if n < 0 {
        Err(io::Error::last_os_error())
    } else if n as usize != want {
        Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("short region access: {n} of {want} bytes"),
        ))
    } else {
        Ok(())
    }
}

fn mapped(p: *mut libc::c_void) -> io::Result<NonNull<u8>> {
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(p.cast()).ok_or_else(|| io::Error::from(io::ErrorKind::AddrNotAvailable))
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmm_sys_util::errno::Error as SysError;

    #[test]
    fn crate_errors_name_their_step_and_keep_the_errno() {
        let e = open_error(VfioError::OpenContainer(io::Error::from_raw_os_error(
            libc::ENOENT,
        )));
        assert_eq!(e.step, OpenStep::Container);
        assert_eq!(e.error.raw_os_error(), Some(libc::ENOENT));
        let e = open_error(VfioError::OpenGroup(
            io::Error::from_raw_os_error(libc::EACCES),
            "12".into(),
        ));
        assert_eq!(
            (e.step, e.error.raw_os_error()),
            (OpenStep::Group, Some(libc::EACCES))
        );
        let e = open_error(VfioError::GroupViable);
        assert_eq!(e.step, OpenStep::GroupViable);
        assert!(e.error.to_string().contains("not viable"), "{}", e.error);
        let e = open_error(VfioError::VfioType1V2);
        assert_eq!(e.step, OpenStep::Iommu);
        let e = open_error(VfioError::ContainerSetIOMMU(SysError::new(libc::EPERM)));
        assert_eq!(
            (e.step, e.error.raw_os_error()),
            (OpenStep::Attach, Some(libc::EPERM))
        );
        let e = open_error(VfioError::GroupGetDeviceFD(SysError::new(libc::ENODEV)));
        assert_eq!(
            (e.step, e.error.raw_os_error()),
            (OpenStep::Device, Some(libc::ENODEV))
        );
        assert_eq!(
            open_error(VfioError::VfioDeviceGetInfoOther).step,
            OpenStep::NotPci
        );
        assert_eq!(open_error(VfioError::InvalidPath).step, OpenStep::Sysfs);
        assert_eq!(
            io_error(VfioError::IommuDmaMap(SysError::new(libc::ENOMEM))).raw_os_error(),
            Some(libc::ENOMEM)
        );
    }
}
