//! The syscall layer under the vfio backend: every `open`, `ioctl`, `mmap`, `pread` and
//! sysfs lookup the backend makes goes through [`VfioSys`], so the backend's code runs in
//! tests over [`super::vfio_fake::FakeVfio`] without a card.
//!
//! [`LinuxVfio`] is the real implementation, on `libc::ioctl` with the few `#[repr(C)]`
//! structures of `<linux/vfio.h>` defined here (sizes pinned with `static_assertions`).
//! Why not the `vfio-ioctls` crate: its syscall layer cannot be swapped from outside the
//! crate (its fake is a private `#[cfg(test)]` module), and by default it pulls in
//! `kvm-ioctls`; `vfio-bindings` would give the structures but not the ioctl numbers, and
//! renders `vfio_irq_set` as a flexible-array type. Eight structures and fifteen ioctl
//! numbers are less code than the glue.
//!
//! Ref: Linux `include/uapi/linux/vfio.h`, `Documentation/driver-api/vfio.rst`.
#![allow(unsafe_code)] // ioctl, mmap, pread/pwrite on VFIO descriptors

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

// ---------------------------------------------------------------------------------------
// <linux/vfio.h>
// ---------------------------------------------------------------------------------------

/// `VFIO_API_VERSION`.
pub const VFIO_API_VERSION: i32 = 0;
/// `VFIO_TYPE1_IOMMU`.
pub const VFIO_TYPE1_IOMMU: u32 = 1;
/// `VFIO_TYPE1v2_IOMMU`.
pub const VFIO_TYPE1V2_IOMMU: u32 = 3;

/// `VFIO_GROUP_FLAGS_VIABLE`: every device of the group is bound to a VFIO driver (or to none).
pub const GROUP_FLAGS_VIABLE: u32 = 1 << 0;
/// `VFIO_DEVICE_FLAGS_RESET`: the device supports `VFIO_DEVICE_RESET`.
pub const DEVICE_FLAGS_RESET: u32 = 1 << 0;
/// `VFIO_DEVICE_FLAGS_PCI`.
pub const DEVICE_FLAGS_PCI: u32 = 1 << 1;
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

const IRQ_SET_DATA_NONE: u32 = 1 << 0;
const IRQ_SET_DATA_EVENTFD: u32 = 1 << 2;
const IRQ_SET_ACTION_UNMASK: u32 = 1 << 4;
const IRQ_SET_ACTION_TRIGGER: u32 = 1 << 5;
const DMA_MAP_FLAG_READ: u32 = 1 << 0;
const DMA_MAP_FLAG_WRITE: u32 = 1 << 1;

// `_IO(VFIO_TYPE, VFIO_BASE + n)`: direction "none", no size. `_IOC_NONE` is 0 with the
// direction at bit 30 on the generic ioctl layout, 1 at bit 29 on powerpc/mips/sparc.
#[cfg(any(
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc64"
))]
const IOC_NONE: u32 = 1 << 29;
#[cfg(not(any(
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc64"
)))]
const IOC_NONE: u32 = 0;

const fn vfio_io(n: u32) -> u32 {
    IOC_NONE | (b';' as u32) << 8 | (100 + n)
}
const VFIO_GET_API_VERSION: u32 = vfio_io(0);
const VFIO_CHECK_EXTENSION: u32 = vfio_io(1);
const VFIO_SET_IOMMU: u32 = vfio_io(2);
const VFIO_GROUP_GET_STATUS: u32 = vfio_io(3);
const VFIO_GROUP_SET_CONTAINER: u32 = vfio_io(4);
const VFIO_GROUP_GET_DEVICE_FD: u32 = vfio_io(6);
const VFIO_DEVICE_GET_INFO: u32 = vfio_io(7);
const VFIO_DEVICE_GET_REGION_INFO: u32 = vfio_io(8);
const VFIO_DEVICE_GET_IRQ_INFO: u32 = vfio_io(9);
const VFIO_DEVICE_SET_IRQS: u32 = vfio_io(10);
const VFIO_DEVICE_RESET: u32 = vfio_io(11);
const VFIO_IOMMU_MAP_DMA: u32 = vfio_io(13);
const VFIO_IOMMU_UNMAP_DMA: u32 = vfio_io(14);
static_assertions::const_assert_eq!(VFIO_GET_API_VERSION & 0xffff, 0x3b64);
static_assertions::const_assert_eq!(VFIO_IOMMU_UNMAP_DMA & 0xffff, 0x3b72);

#[repr(C)]
#[derive(Default)]
struct GroupStatusRaw {
    argsz: u32,
    flags: u32,
}
#[repr(C)]
#[derive(Default)]
struct DeviceInfoRaw {
    argsz: u32,
    flags: u32,
    num_regions: u32,
    num_irqs: u32,
    cap_offset: u32,
    pad: u32,
}
#[repr(C)]
#[derive(Default)]
struct RegionInfoRaw {
    argsz: u32,
    flags: u32,
    index: u32,
    cap_offset: u32,
    size: u64,
    offset: u64,
}
#[repr(C)]
#[derive(Default)]
struct IrqInfoRaw {
    argsz: u32,
    flags: u32,
    index: u32,
    count: u32,
}
/// `struct vfio_irq_set` without its flexible `data[]`.
#[repr(C)]
struct IrqSetHdr {
    argsz: u32,
    flags: u32,
    index: u32,
    start: u32,
    count: u32,
}
#[repr(C)]
struct DmaMapRaw {
    argsz: u32,
    flags: u32,
    vaddr: u64,
    iova: u64,
    size: u64,
}
#[repr(C)]
struct DmaUnmapRaw {
    argsz: u32,
    flags: u32,
    iova: u64,
    size: u64,
}
static_assertions::assert_eq_size!(GroupStatusRaw, [u8; 8]);
static_assertions::assert_eq_size!(DeviceInfoRaw, [u8; 24]);
static_assertions::assert_eq_size!(RegionInfoRaw, [u8; 32]);
static_assertions::assert_eq_size!(IrqInfoRaw, [u8; 16]);
static_assertions::assert_eq_size!(IrqSetHdr, [u8; 20]);
static_assertions::assert_eq_size!(DmaMapRaw, [u8; 32]);
static_assertions::assert_eq_size!(DmaUnmapRaw, [u8; 24]);

// ---------------------------------------------------------------------------------------
// The seam
// ---------------------------------------------------------------------------------------

/// `VFIO_DEVICE_GET_INFO`, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `DEVICE_FLAGS_*`.
    pub flags: u32,
    /// Number of regions (BARs, ROM, config space, …).
    pub num_regions: u32,
    /// Number of interrupt indexes (INTx, MSI, MSI-X, …).
    pub num_irqs: u32,
}

/// `VFIO_DEVICE_GET_REGION_INFO`, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionInfo {
    /// `REGION_FLAG_*`.
    pub flags: u32,
    /// Size in bytes (0: the region does not exist, e.g. an unimplemented BAR).
    pub size: u64,
    /// Offset of the region in the device descriptor (for `mmap` and `pread`).
    pub offset: u64,
}

/// `VFIO_DEVICE_GET_IRQ_INFO`, decoded.
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

/// The system calls of the vfio backend. Errors are plain `io::Error`s (an errno); the
/// backend turns them into messages that say what to do.
pub trait VfioSys: Send + Sync + 'static {
    /// An open descriptor: container, group or device. Dropping it closes it.
    type Handle: Send + Sync;

    /// sysfs: `/sys/bus/pci/devices/<bdf>` (`NotFound`: no such device).
    fn pci_device(&self, bdf: &str) -> io::Result<PciDevice>;
    /// sysfs: the devices of `/sys/kernel/iommu_groups/<group>/devices`, with their drivers.
    fn group_devices(&self, group: u32) -> io::Result<Vec<(String, Option<String>)>>;

    /// Opens `/dev/vfio/vfio`.
    fn open_container(&self) -> io::Result<Self::Handle>;
    /// Opens `/dev/vfio/<group>`.
    fn open_group(&self, group: u32) -> io::Result<Self::Handle>;
    /// `VFIO_GET_API_VERSION`.
    fn api_version(&self, container: &Self::Handle) -> io::Result<i32>;
    /// `VFIO_CHECK_EXTENSION`.
    fn check_extension(&self, container: &Self::Handle, ext: u32) -> io::Result<bool>;
    /// `VFIO_GROUP_GET_STATUS`: the group's flags.
    fn group_status(&self, group: &Self::Handle) -> io::Result<u32>;
    /// `VFIO_GROUP_SET_CONTAINER`.
    fn group_set_container(&self, group: &Self::Handle, container: &Self::Handle)
        -> io::Result<()>;
    /// `VFIO_SET_IOMMU`.
    fn set_iommu(&self, container: &Self::Handle, iommu_type: u32) -> io::Result<()>;
    /// `VFIO_GROUP_GET_DEVICE_FD` for the device named `name` (its PCI address).
    fn group_get_device(&self, group: &Self::Handle, name: &str) -> io::Result<Self::Handle>;
    /// `VFIO_DEVICE_GET_INFO`.
    fn device_info(&self, device: &Self::Handle) -> io::Result<DeviceInfo>;
    /// `VFIO_DEVICE_GET_REGION_INFO`.
    fn region_info(&self, device: &Self::Handle, index: u32) -> io::Result<RegionInfo>;
    /// `VFIO_DEVICE_GET_IRQ_INFO`.
    fn irq_info(&self, device: &Self::Handle, index: u32) -> io::Result<IrqInfo>;
    /// `VFIO_DEVICE_SET_IRQS`, `DATA_EVENTFD | ACTION_TRIGGER`: vectors `start..` of
    /// `index` signal `fds`.
    fn set_irq_eventfds(
        &self,
        device: &Self::Handle,
        index: u32,
        start: u32,
        fds: &[BorrowedFd<'_>],
    ) -> io::Result<()>;
    /// `VFIO_DEVICE_SET_IRQS`, `DATA_NONE | ACTION_TRIGGER`, count 0: disables `index`.
    fn disable_irqs(&self, device: &Self::Handle, index: u32) -> io::Result<()>;
    /// `VFIO_DEVICE_SET_IRQS`, `DATA_NONE | ACTION_UNMASK`: unmasks INTx after it fired.
    fn unmask_intx(&self, device: &Self::Handle) -> io::Result<()>;
    /// `VFIO_DEVICE_RESET`.
    fn reset(&self, device: &Self::Handle) -> io::Result<()>;
    /// `pread` of a region (config space) at `offset` of the device descriptor.
    fn region_read(&self, device: &Self::Handle, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// `pwrite` of a region at `offset` of the device descriptor.
    fn region_write(&self, device: &Self::Handle, offset: u64, buf: &[u8]) -> io::Result<()>;
    /// `mmap(MAP_SHARED, PROT_READ | PROT_WRITE)` of `len` bytes at `offset` of the device
    /// descriptor (a BAR). The result is page-aligned and stays valid until `munmap`.
    fn mmap_region(
        &self,
        device: &Self::Handle,
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
    /// device may write it at any moment until then).
    unsafe fn map_dma(
        &self,
        container: &Self::Handle,
        vaddr: NonNull<u8>,
        iova: u64,
        size: u64,
    ) -> io::Result<()>;
    /// `VFIO_IOMMU_UNMAP_DMA`: revokes the device's access; returns the bytes unmapped.
    fn unmap_dma(&self, container: &Self::Handle, iova: u64, size: u64) -> io::Result<u64>;
}

// ---------------------------------------------------------------------------------------
// Linux
// ---------------------------------------------------------------------------------------

/// The real system calls. `/dev/vfio` and `/sys` can be pointed elsewhere
/// ([`LinuxVfio::with_roots`]) to test the sysfs lookups on a fake tree.
#[derive(Debug, Clone)]
pub struct LinuxVfio {
    dev: PathBuf,
    sys: PathBuf,
}

impl Default for LinuxVfio {
    fn default() -> Self {
        Self::new()
    }
}

impl LinuxVfio {
    /// `/dev/vfio` and `/sys`.
    pub fn new() -> Self {
        Self::with_roots("/dev/vfio", "/sys")
    }
    /// Another VFIO device directory and sysfs root.
    pub fn with_roots(dev: impl Into<PathBuf>, sys: impl Into<PathBuf>) -> Self {
        LinuxVfio {
            dev: dev.into(),
            sys: sys.into(),
        }
    }

    fn open(&self, path: &Path) -> io::Result<OwnedFd> {
        let c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by open and is owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    fn driver_of(dir: &Path) -> Option<String> {
        std::fs::read_link(dir.join("driver"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
    }
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `ioctl(fd, req, arg)` where `arg` is an integer (or absent).
fn ioctl_val(fd: RawFd, req: u32, arg: libc::c_ulong) -> io::Result<libc::c_int> {
    // SAFETY: these VFIO ioctls take an integer argument (or none) and touch no memory.
    check(unsafe { libc::ioctl(fd, req as _, arg) })
}

/// `ioctl(fd, req, &mut *arg)`.
///
/// # Safety
/// `req` must be an ioctl whose argument is a `T` the kernel reads and writes.
unsafe fn ioctl_ptr<T>(fd: RawFd, req: u32, arg: &mut T) -> io::Result<libc::c_int> {
    // SAFETY: `arg` is a live, exclusive `T`, which is what `req` expects (caller).
    check(unsafe { libc::ioctl(fd, req as _, arg as *mut T) })
}

fn argsz<T>() -> u32 {
    std::mem::size_of::<T>() as u32
}

impl VfioSys for LinuxVfio {
    type Handle = OwnedFd;

    fn pci_device(&self, bdf: &str) -> io::Result<PciDevice> {
        let dir = self.sys.join("bus/pci/devices").join(bdf);
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

    fn open_container(&self) -> io::Result<OwnedFd> {
        self.open(&self.dev.join("vfio"))
    }
    fn open_group(&self, group: u32) -> io::Result<OwnedFd> {
        self.open(&self.dev.join(group.to_string()))
    }
    fn api_version(&self, c: &OwnedFd) -> io::Result<i32> {
        ioctl_val(c.as_raw_fd(), VFIO_GET_API_VERSION, 0)
    }
    fn check_extension(&self, c: &OwnedFd, ext: u32) -> io::Result<bool> {
        Ok(ioctl_val(c.as_raw_fd(), VFIO_CHECK_EXTENSION, ext.into())? > 0)
    }
    fn group_status(&self, g: &OwnedFd) -> io::Result<u32> {
        let mut st = GroupStatusRaw {
            argsz: argsz::<GroupStatusRaw>(),
            flags: 0,
        };
        // SAFETY: VFIO_GROUP_GET_STATUS takes a `struct vfio_group_status`.
        unsafe { ioctl_ptr(g.as_raw_fd(), VFIO_GROUP_GET_STATUS, &mut st) }?;
        Ok(st.flags)
    }
    fn group_set_container(&self, g: &OwnedFd, c: &OwnedFd) -> io::Result<()> {
        let mut fd: libc::c_int = c.as_raw_fd();
        // SAFETY: VFIO_GROUP_SET_CONTAINER takes a pointer to the container's descriptor.
        unsafe { ioctl_ptr(g.as_raw_fd(), VFIO_GROUP_SET_CONTAINER, &mut fd) }.map(drop)
    }
    fn set_iommu(&self, c: &OwnedFd, iommu_type: u32) -> io::Result<()> {
        ioctl_val(c.as_raw_fd(), VFIO_SET_IOMMU, iommu_type.into()).map(drop)
    }
    fn group_get_device(&self, g: &OwnedFd, name: &str) -> io::Result<OwnedFd> {
        let c = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: VFIO_GROUP_GET_DEVICE_FD takes a NUL-terminated name, live for the call.
        let fd = check(unsafe {
            libc::ioctl(g.as_raw_fd(), VFIO_GROUP_GET_DEVICE_FD as _, c.as_ptr())
        })?;
        // SAFETY: the ioctl returned a new descriptor that nobody else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
    fn device_info(&self, d: &OwnedFd) -> io::Result<DeviceInfo> {
        let mut i = DeviceInfoRaw {
            argsz: argsz::<DeviceInfoRaw>(),
            ..Default::default()
        };
        // SAFETY: VFIO_DEVICE_GET_INFO takes a `struct vfio_device_info`.
        unsafe { ioctl_ptr(d.as_raw_fd(), VFIO_DEVICE_GET_INFO, &mut i) }?;
        Ok(DeviceInfo {
            flags: i.flags,
            num_regions: i.num_regions,
            num_irqs: i.num_irqs,
        })
    }
    fn region_info(&self, d: &OwnedFd, index: u32) -> io::Result<RegionInfo> {
        let mut r = RegionInfoRaw {
            argsz: argsz::<RegionInfoRaw>(),
            index,
            ..Default::default()
        };
        // SAFETY: VFIO_DEVICE_GET_REGION_INFO takes a `struct vfio_region_info`; with
        // argsz = its size the kernel writes no capability chain past it.
        unsafe { ioctl_ptr(d.as_raw_fd(), VFIO_DEVICE_GET_REGION_INFO, &mut r) }?;
        Ok(RegionInfo {
            flags: r.flags,
            size: r.size,
            offset: r.offset,
        })
    }
    fn irq_info(&self, d: &OwnedFd, index: u32) -> io::Result<IrqInfo> {
        let mut r = IrqInfoRaw {
            argsz: argsz::<IrqInfoRaw>(),
            index,
            ..Default::default()
        };
        // SAFETY: VFIO_DEVICE_GET_IRQ_INFO takes a `struct vfio_irq_info`.
        unsafe { ioctl_ptr(d.as_raw_fd(), VFIO_DEVICE_GET_IRQ_INFO, &mut r) }?;
        Ok(IrqInfo {
            flags: r.flags,
            count: r.count,
        })
    }
    fn set_irq_eventfds(
        &self,
        d: &OwnedFd,
        index: u32,
        start: u32,
        fds: &[BorrowedFd<'_>],
    ) -> io::Result<()> {
        set_irqs(
            d.as_raw_fd(),
            IRQ_SET_DATA_EVENTFD | IRQ_SET_ACTION_TRIGGER,
            index,
            start,
            fds,
        )
    }
    fn disable_irqs(&self, d: &OwnedFd, index: u32) -> io::Result<()> {
        set_irqs(
            d.as_raw_fd(),
            IRQ_SET_DATA_NONE | IRQ_SET_ACTION_TRIGGER,
            index,
            0,
            &[],
        )
    }
    fn unmask_intx(&self, d: &OwnedFd) -> io::Result<()> {
        let mut h = IrqSetHdr {
            argsz: argsz::<IrqSetHdr>(),
            flags: IRQ_SET_DATA_NONE | IRQ_SET_ACTION_UNMASK,
            index: PCI_INTX_IRQ_INDEX,
            start: 0,
            count: 1,
        };
        // SAFETY: VFIO_DEVICE_SET_IRQS with DATA_NONE reads only the header.
        unsafe { ioctl_ptr(d.as_raw_fd(), VFIO_DEVICE_SET_IRQS, &mut h) }.map(drop)
    }
    fn reset(&self, d: &OwnedFd) -> io::Result<()> {
        ioctl_val(d.as_raw_fd(), VFIO_DEVICE_RESET, 0).map(drop)
    }
    fn region_read(&self, d: &OwnedFd, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        // SAFETY: reads at most `buf.len()` bytes into `buf`, which is live and exclusive.
        let n = unsafe {
            libc::pread(
                d.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                offset as libc::off_t,
            )
        };
        short_io(n, buf.len())
    }
    fn region_write(&self, d: &OwnedFd, offset: u64, buf: &[u8]) -> io::Result<()> {
        // SAFETY: writes `buf.len()` bytes from `buf`, which is live.
        let n = unsafe {
            libc::pwrite(
                d.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                offset as libc::off_t,
            )
        };
        short_io(n, buf.len())
    }
    fn mmap_region(&self, d: &OwnedFd, offset: u64, len: usize) -> io::Result<NonNull<u8>> {
        // SAFETY: a new shared mapping chosen by the kernel; no existing memory is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                d.as_raw_fd(),
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
        c: &OwnedFd,
        vaddr: NonNull<u8>,
        iova: u64,
        size: u64,
    ) -> io::Result<()> {
        let mut m = DmaMapRaw {
            argsz: argsz::<DmaMapRaw>(),
            flags: DMA_MAP_FLAG_READ | DMA_MAP_FLAG_WRITE,
            vaddr: vaddr.as_ptr() as u64,
            iova,
            size,
        };
        // SAFETY: VFIO_IOMMU_MAP_DMA takes a `struct vfio_iommu_type1_dma_map`; the
        // memory it names stays allocated until unmapped (caller).
        unsafe { ioctl_ptr(c.as_raw_fd(), VFIO_IOMMU_MAP_DMA, &mut m) }.map(drop)
    }
    fn unmap_dma(&self, c: &OwnedFd, iova: u64, size: u64) -> io::Result<u64> {
        let mut u = DmaUnmapRaw {
            argsz: argsz::<DmaUnmapRaw>(),
            flags: 0,
            iova,
            size,
        };
        // SAFETY: VFIO_IOMMU_UNMAP_DMA takes a `struct vfio_iommu_type1_dma_unmap`.
        unsafe { ioctl_ptr(c.as_raw_fd(), VFIO_IOMMU_UNMAP_DMA, &mut u) }?;
        Ok(u.size)
    }
}

fn set_irqs(
    fd: RawFd,
    flags: u32,
    index: u32,
    start: u32,
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    // Header then `count` i32 descriptors, in a u32 buffer (4-byte aligned like the C struct).
    let mut buf = vec![0u32; 5 + fds.len()];
    buf[0] = (20 + 4 * fds.len()) as u32;
    buf[1] = flags;
    buf[2] = index;
    buf[3] = start;
    buf[4] = fds.len() as u32;
    for (slot, fd) in buf[5..].iter_mut().zip(fds) {
        *slot = fd.as_raw_fd() as u32;
    }
    // SAFETY: the buffer is a `struct vfio_irq_set` with `count` i32s of data, live and
    // exclusive for the call; argsz tells the kernel its length.
    check(unsafe { libc::ioctl(fd, VFIO_DEVICE_SET_IRQS as _, buf.as_mut_ptr()) }).map(drop)
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
