//! The FPGA/PCIe 3D-torus adapter: the hardware seam the driver is written against, and
//! its backends.
//!
//! * [`hw`] — the seam: [`hw::Mmio`] (registers), [`hw::DmaMemory`] / [`hw::DmaBuffer`]
//!   (host memory the device reaches by DMA, IOVA translation), [`hw::Interrupts`] /
//!   [`hw::IrqEvent`], bundled as [`hw::Hw`]; [`hw::mem`] is a heap-memory backend.
//! * [`vfio`] — a real card through Linux VFIO, over the syscall layer [`vfio_sys`]
//!   ([`vfio_sys::LinuxVfio`], on rust-vmm's `vfio-ioctls` without KVM;
//!   [`vfio_fake::FakeVfio`] in tests). Bring-up, and the crate's limits: `docs/VFIO.md`.
//! * [`iova`] — the IOVA allocator of the vfio backend.
//! * [`model`] — the behavioural device of the `fpga` crate in this process (threads as
//!   ranks); [`remote`] — the same device hosted by `skifrun --driver fpga-model`, one
//!   process per rank.
//!
//! The driver logic (rings, doorbells, completions) is written once as `Driver<H: Hw>`
//! against the register map of the `fpga` crate; the behavioural model of that crate is
//! the other backend.
//!
//! ```
//! use skifch_drivers::fpga::hw::{DmaMemory, Hw, Mmio};
//! use skifch_drivers::fpga::vfio::VfioDevice;
//! use skifch_drivers::fpga::vfio_fake::{FakeConfig, FakeVfio};
//! let fake = FakeVfio::new(FakeConfig::default());
//! let dev = VfioDevice::open(fake.clone(), "0000:03:00.0", 4096)?;
//! dev.write32(0x40, 7)?;
//! assert_eq!(fake.bar_read32(0x40), Some(7));
//! let buf = dev.dma().alloc(4096)?;
//! assert_eq!(fake.dma_mappings(), vec![(buf.iova(), 4096)]);
//! # Ok::<(), skifch::Error>(())
//! ```

pub mod driver;
pub mod hw;
pub mod iova;
pub mod model;
pub mod remote;
pub mod vfio;
pub mod vfio_fake;
pub mod vfio_sys;
