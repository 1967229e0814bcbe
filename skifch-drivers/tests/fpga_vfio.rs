//! The vfio backend of the FPGA driver, run over the fake syscall layer (`FakeVfio`): the
//! success path (BAR, DMA, interrupts, teardown order) and every setup error, plus the
//! real `LinuxVfio` on this machine (no card: a clear error, no panic, no hang).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use skifch::Error;
use skifch_drivers::fpga::hw::{DmaMemory, Hw, Interrupts, Mmio};
use skifch_drivers::fpga::vfio::{VfioConfig, VfioDevice};
use skifch_drivers::fpga::vfio_fake::{FakeConfig, FakeVfio, GroupFile};
use skifch_drivers::fpga::vfio_sys::{
    LinuxVfio, PCI_INTX_IRQ_INDEX, PCI_MSIX_IRQ_INDEX, PCI_MSI_IRQ_INDEX,
};

const BDF: &str = "0000:03:00.0";

fn fake(f: impl FnOnce(&mut FakeConfig)) -> FakeVfio {
    let mut cfg = FakeConfig::default();
    f(&mut cfg);
    FakeVfio::new(cfg)
}

/// Opens over a fake configured by `f` and returns the error message (the open must fail).
fn open_err(f: impl FnOnce(&mut FakeConfig)) -> (Error, String) {
    match VfioDevice::open(fake(f), BDF, 4096) {
        Ok(_) => panic!("open succeeded"),
        Err(e) => {
            let s = e.to_string();
            (e, s)
        }
    }
}

#[test]
fn bar_round_trip_through_the_mapped_fake_bar() {
    let f = fake(|_| {});
    let dev = VfioDevice::open(f.clone(), BDF, 4096).unwrap();
    assert_eq!(dev.len(), 64 * 1024);
    assert_eq!((dev.bdf(), dev.iommu_group()), (BDF, 12));
    assert!(f.bus_master(), "bus mastering enabled for DMA");
    assert_eq!(f.resets(), 1);

    dev.write32(0x100, 0xdead_beef).unwrap();
    assert_eq!(f.bar_read32(0x100), Some(0xdead_beef));
    dev.write64(0x108, 0x0123_4567_89ab_cdef).unwrap();
    assert_eq!(f.bar_read32(0x108), Some(0x89ab_cdef));
    assert_eq!(f.bar_read32(0x10c), Some(0x0123_4567));
    assert!(f.bar_write32(0xfffc, 42));
    assert_eq!(dev.read32(0xfffc).unwrap(), 42);
    assert_eq!(dev.read64(0x108).unwrap(), 0x0123_4567_89ab_cdef);

    for off in [0x1_0000, 0x1_0000 - 2, 0x101, usize::MAX - 3] {
        assert!(
            matches!(dev.read32(off), Err(Error::InvalidArgument(_))),
            "{off:#x}"
        );
        assert!(
            matches!(dev.write32(off, 1), Err(Error::InvalidArgument(_))),
            "{off:#x}"
        );
    }
    assert!(matches!(dev.read64(0xfffc), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        dev.write64(0x104, 0),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn short_bdf_and_group_number_resolve() {
    let f = fake(|_| {});
    drop(VfioDevice::open(f.clone(), "03:00.0", 4096).unwrap());
    drop(VfioDevice::open(f.clone(), "12", 4096).unwrap());
    let two = fake(|c| c.other_devices = vec![("0000:03:00.1".into(), None)]);
    let e = VfioDevice::open(two, "12", 4096).err().unwrap().to_string();
    assert!(
        e.contains("has 2 devices") && e.contains("PCI address"),
        "{e}"
    );
    let e = VfioDevice::open(fake(|_| {}), "not-a-device", 4096)
        .err()
        .unwrap();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
}

#[test]
fn dma_map_translate_and_unmap_on_drop() {
    let f = fake(|_| {});
    let dev = VfioDevice::open(f.clone(), BDF, 4096).unwrap();
    let dma = dev.dma();
    let ring = dma.alloc(10_000).unwrap();
    let data = dma.alloc(1).unwrap();
    assert_eq!(ring.len(), 12 * 1024, "rounded up to pages");
    assert_eq!(ring.iova() % 4096, 0);
    assert!(
        ring.iova() >= 0x10_0000,
        "IOVA 0 and the first MiB stay unmapped"
    );
    assert_eq!(
        f.dma_mappings(),
        vec![(ring.iova(), 12 * 1024), (data.iova(), 4096)]
    );

    // CPU -> device.
    ring.write(5, b"descriptor").unwrap();
    let mut seen = [0u8; 10];
    f.dma_read(ring.iova() + 5, &mut seen).unwrap();
    assert_eq!(&seen, b"descriptor");
    // Device -> CPU, then the completion flag with acquire.
    f.dma_write(data.iova() + 64, b"payload").unwrap();
    f.dma_write(data.iova(), &1u32.to_ne_bytes()).unwrap();
    assert_eq!(data.load32(0, Ordering::Acquire).unwrap(), 1);
    let mut got = [0u8; 7];
    data.read(64, &mut got).unwrap();
    assert_eq!(&got, b"payload");

    // IOVA translation: inside is an offset, outside any mapping is Corrupt.
    assert_eq!(ring.offset_of(ring.iova() + 100, 8).unwrap(), 100);
    assert!(matches!(
        ring.offset_of(ring.iova() + ring.len() as u64 - 4, 8),
        Err(Error::Corrupt(_))
    ));
    assert!(matches!(
        ring.offset_of(data.iova(), 1),
        Err(Error::Corrupt(_))
    ));
    assert!(
        f.dma_write(data.iova() + 4096, &[1]).is_err(),
        "the fake IOMMU faults too"
    );
    assert!(matches!(
        ring.write(ring.len() - 1, b"xy"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        ring.load64(4, Ordering::Relaxed),
        Err(Error::InvalidArgument(_))
    ));

    let ring_iova = ring.iova();
    drop(ring);
    assert_eq!(f.dma_mappings(), vec![(data.iova(), 4096)]);
    // The freed IOVA range is reused.
    let again = dma.alloc(4096).unwrap();
    assert_eq!(again.iova(), ring_iova);
    again.free().unwrap();

    // Teardown order: the device stops (IRQs off, bus master off, BAR unmapped) while a
    // buffer still lives; the buffer then unmaps through the still-open container, whose
    // group stays attached until the device descriptor closes, after the last unmap.
    drop(dev);
    assert!(!f.bus_master() && !f.bar_mapped());
    drop(dma);
    drop(data);
    let ev = f.events();
    let at = |s: &str| {
        ev.iter()
            .position(|e| e.starts_with(s))
            .unwrap_or_else(|| panic!("{s}: {ev:?}"))
    };
    assert!(at("disable_irqs") < at("munmap bar0"), "{ev:?}");
    let last_unmap = ev.iter().rposition(|e| e.starts_with("unmap_dma")).unwrap();
    assert!(
        last_unmap > at("munmap bar0") && last_unmap < at("close device"),
        "{ev:?}"
    );
    assert!(at("close device") < at("close container"), "{ev:?}");
    assert!(f.dma_mappings().is_empty());
}

#[test]
fn interrupt_signalled_by_the_device_and_waited_with_timeout() {
    let f = fake(|_| {});
    let cfg = VfioConfig {
        irq_vectors: 2,
        ..VfioConfig::new(4096)
    };
    let dev = VfioDevice::open_with(f.clone(), BDF, &cfg).unwrap();
    assert_eq!(dev.irq_index(), Some(PCI_MSIX_IRQ_INDEX));
    assert_eq!(dev.irq_vectors(), 2);
    assert_eq!(f.irq_enabled(), Some((PCI_MSIX_IRQ_INDEX, 2)));

    let t = Instant::now();
    assert!(matches!(
        dev.wait_irq(1, Duration::from_millis(30)),
        Err(Error::TimedOut)
    ));
    assert!(t.elapsed() >= Duration::from_millis(30));

    let device = f.clone();
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        device.fire_irq(1).unwrap();
    });
    assert_eq!(dev.wait_irq(1, Duration::from_secs(10)).unwrap(), 1);
    h.join().unwrap();
    assert!(matches!(
        dev.wait_irq(0, Duration::ZERO),
        Err(Error::TimedOut)
    ));
    assert!(matches!(
        dev.wait_irq(2, Duration::ZERO),
        Err(Error::InvalidArgument(_))
    ));
    dev.rearm_irq(1).unwrap();
    assert_eq!(f.intx_unmasks(), 0, "MSI-X needs no unmask");
    drop(dev);
    assert_eq!(f.irq_enabled(), None);
}

#[test]
fn falls_back_to_msi_then_intx() {
    let f = fake(|c| c.irq_counts = [0, 1, 1]);
    let dev = VfioDevice::open(f.clone(), BDF, 4096).unwrap();
    assert_eq!(dev.irq_index(), Some(PCI_MSI_IRQ_INDEX));
    drop(dev);
    let f = fake(|c| c.irq_counts = [0, 0, 1]);
    let dev = VfioDevice::open(f.clone(), BDF, 4096).unwrap();
    assert_eq!(dev.irq_index(), Some(PCI_INTX_IRQ_INDEX));
    f.fire_irq(0).unwrap();
    assert_eq!(dev.wait_irq(0, Duration::from_secs(10)).unwrap(), 1);
    dev.rearm_irq(0).unwrap();
    assert_eq!(
        f.intx_unmasks(),
        1,
        "INTx is unmasked after the driver served it"
    );
}

#[test]
fn interrupts_unsupported_means_poll() {
    let f = fake(|c| c.irq_counts = [0, 0, 0]);
    let dev = VfioDevice::open(f, BDF, 4096).unwrap();
    assert_eq!(dev.irq_vectors(), 0);
    let e = dev.wait_irq(0, Duration::from_secs(10)).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument(_)) && e.to_string().contains("poll"),
        "{e}"
    );
    let (e, _) = match VfioDevice::open(fake(|c| c.set_irqs_errno = Some(libc::EINVAL)), BDF, 4096)
    {
        Err(e) => (e.errno(), e.to_string()),
        Ok(_) => panic!("SET_IRQS failure must fail the open"),
    };
    assert_eq!(e, libc::EINVAL);
}

#[test]
fn group_not_viable_names_the_culprit() {
    let (e, s) = open_err(|c| {
        c.viable = false;
        c.other_devices = vec![
            ("0000:03:00.1".into(), Some("ixgbe".into())),
            ("0000:03:00.2".into(), None),
        ];
    });
    assert!(matches!(e, Error::Bootstrap(_)));
    assert!(s.contains("IOMMU group 12 is not viable"), "{s}");
    assert!(s.contains("/sys/kernel/iommu_groups/12/devices"), "{s}");
    assert!(
        s.contains("0000:03:00.1 (bound to ixgbe)") && !s.contains("03:00.2"),
        "{s}"
    );
    assert!(s.contains("docs/VFIO.md"), "{s}");
}

#[test]
fn missing_group_file_and_permission_denied() {
    let (_, s) = open_err(|c| c.group_file = GroupFile::Missing);
    assert!(
        s.contains("/dev/vfio/12 does not exist") && s.contains("vfio-pci"),
        "{s}"
    );
    let (_, s) = open_err(|c| c.group_file = GroupFile::PermissionDenied);
    assert!(
        s.contains("/dev/vfio/12: permission denied") && s.contains("run as root"),
        "{s}"
    );
    let (_, s) = open_err(|c| c.container_present = false);
    assert!(
        s.contains("/dev/vfio/vfio does not exist") && s.contains("modprobe vfio-pci"),
        "{s}"
    );
}

#[test]
fn sysfs_problems() {
    let (_, s) = open_err(|c| c.driver = Some("nvme".into()));
    assert!(
        s.contains("bound to driver nvme, not vfio-pci") && s.contains("driver_override"),
        "{s}"
    );
    let (_, s) = open_err(|c| c.group = None);
    assert!(
        s.contains("no IOMMU group") && s.contains("intel_iommu=on"),
        "{s}"
    );
    let (_, s) = open_err(|c| c.bdf = "0000:04:00.0".into());
    assert!(
        s.contains("no PCI device 0000:03:00.0") && s.contains("lspci"),
        "{s}"
    );
}

#[test]
fn no_iommu_extension() {
    let (_, s) = open_err(|c| c.type1_iommu = false);
    assert!(
        s.contains("no Type1 IOMMU") && s.contains("amd_iommu=on"),
        "{s}"
    );
}

#[test]
fn bar_too_small_or_not_mappable() {
    let (e, s) = open_err(|c| c.bar0_len = 256);
    assert!(matches!(e, Error::Bootstrap(_)));
    assert!(
        s.contains("BAR0 of 0000:03:00.0 is 256 bytes, the adapter needs 4096"),
        "{s}"
    );
    let f = fake(|c| c.bar0_mmap = false);
    let s = VfioDevice::open(f.clone(), BDF, 4096)
        .err()
        .unwrap()
        .to_string();
    assert!(s.contains("cannot be mmapped"), "{s}");
    assert!(!f.bar_mapped());
}

#[test]
fn dma_map_failures_leak_nothing() {
    let f = fake(|_| {});
    let dev = VfioDevice::open(f.clone(), BDF, 4096).unwrap();
    let dma = dev.dma();
    f.configure(|c| c.dma_map_errno = Some(libc::ENOMEM));
    let e = dma.alloc(4096).unwrap_err();
    assert_eq!(e.errno(), libc::ENOMEM);
    assert!(e.to_string().contains("ulimit -l"), "{e}");
    f.configure(|c| c.dma_map_errno = Some(libc::EINVAL));
    let e = dma.alloc(4096).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);
    assert!(e.to_string().contains("iova_window"), "{e}");
    assert!(f.dma_mappings().is_empty());
    f.configure(|c| c.dma_map_errno = None);
    let b = dma.alloc(4096).unwrap();
    assert_eq!(
        b.iova(),
        0x10_0000,
        "the failed attempts gave their IOVAs back"
    );
}

#[test]
fn iova_window_exhaustion_is_an_error() {
    let f = fake(|_| {});
    let cfg = VfioConfig {
        iova_window: (0x10_0000, 0x10_0000 + 8192),
        ..VfioConfig::new(4096)
    };
    let dev = VfioDevice::open_with(f, BDF, &cfg).unwrap();
    let a = dev.dma().alloc(8192).unwrap();
    assert!(dev.dma().alloc(1).is_err());
    drop(a);
    assert!(dev.dma().alloc(1).is_ok());
}

#[test]
fn close_reports_and_is_final() {
    let f = fake(|_| {});
    let dev = VfioDevice::open(f.clone(), BDF, 4096).unwrap();
    dev.close().unwrap();
    assert!(!f.bar_mapped() && !f.bus_master());
    let ev = f.events();
    assert!(ev.iter().any(|e| e == "close container"), "{ev:?}");
}

#[test]
fn linux_vfio_reports_a_missing_device_clearly() {
    // A PCI address that does not exist on any machine (bus 0xff, device 0x1f, fn 7 is
    // legal syntax but practically never populated) and a bogus group number.
    let t = Instant::now();
    let e = VfioDevice::open(LinuxVfio::new(), "0000:ff:1f.7", 4096)
        .err()
        .unwrap();
    let s = e.to_string();
    assert!(
        s.contains("0000:ff:1f.7") && s.contains("docs/VFIO.md"),
        "{s}"
    );
    let e = VfioDevice::open(LinuxVfio::new(), "4242424", 4096)
        .err()
        .unwrap();
    assert!(e.to_string().contains("IOMMU group 4242424"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(5), "no hang");
}

#[test]
fn linux_vfio_reads_a_sysfs_tree() {
    // A fake sysfs tree for the real LinuxVfio: the device is bound to another driver, then
    // to vfio-pci; the real /dev/vfio (vfio-ioctls opens it, not configurable) lacks the
    // container here, or, on a machine with VFIO, the fake tree's group 7.
    let root = std::env::temp_dir().join(format!("skifch-vfio-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let sys = root.join("sys");
    let dev_dir = sys.join("bus/pci/devices").join(BDF);
    let grp = sys.join("kernel/iommu_groups/7/devices");
    std::fs::create_dir_all(&dev_dir).unwrap();
    std::fs::create_dir_all(&grp).unwrap();
    std::fs::create_dir_all(sys.join("bus/pci/drivers/ixgbe")).unwrap();
    std::fs::create_dir_all(sys.join("bus/pci/drivers/vfio-pci")).unwrap();
    std::os::unix::fs::symlink(
        "../../../../kernel/iommu_groups/7",
        dev_dir.join("iommu_group"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&dev_dir, grp.join(BDF)).unwrap();
    std::os::unix::fs::symlink("../../../bus/pci/drivers/ixgbe", dev_dir.join("driver")).unwrap();
    let sysv = LinuxVfio::with_sysfs(&sys);

    let s = VfioDevice::open(sysv.clone(), BDF, 4096)
        .err()
        .unwrap()
        .to_string();
    assert!(s.contains("bound to driver ixgbe, not vfio-pci"), "{s}");

    std::fs::remove_file(dev_dir.join("driver")).unwrap();
    std::os::unix::fs::symlink("../../../bus/pci/drivers/vfio-pci", dev_dir.join("driver"))
        .unwrap();
    let s = VfioDevice::open(sysv.clone(), "7", 4096)
        .err()
        .unwrap()
        .to_string();
    assert!(
        s.contains("/dev/vfio/vfio does not exist") || s.contains("/dev/vfio/7"),
        "{s}"
    );

    std::fs::remove_file(dev_dir.join("iommu_group")).unwrap();
    let s = VfioDevice::open(sysv, BDF, 4096).err().unwrap().to_string();
    assert!(s.contains("no IOMMU group"), "{s}");
    let _ = std::fs::remove_dir_all(&root);
}
