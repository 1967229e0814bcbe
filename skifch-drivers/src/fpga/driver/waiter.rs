//! Waiting: interrupt sleeps shared by every sleeper of the adapter.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use fpga::regs;
use skifch::driver::Waiter;

use super::super::hw::Hw;
use super::{lock, FpgaDriver};

/// The interrupt-sleep state of one adapter: the sleepers (the wake causes stay unmasked
/// while there are any), the wake sequence number, the leader lock (one sleeper waits on
/// the interrupt itself) and the condition variable the others wait on.
pub(super) struct IrqState {
    pub(super) sleepers: Mutex<u32>,
    pub(super) seq: AtomicU32,
    pub(super) leader: Mutex<()>,
    pub(super) cv_lock: Mutex<()>,
    pub(super) cv: Condvar,
}

impl IrqState {
    pub(super) fn new() -> IrqState {
        IrqState {
            sleepers: Mutex::new(0),
            seq: AtomicU32::new(0),
            leader: Mutex::new(()),
            cv_lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }
}

/// Sleeps on the adapter's interrupt (RX_READY, ERROR, LINK_CHANGE unmasked while anyone
/// sleeps). One sleeper at a time waits on the interrupt itself and wakes the others;
/// every sleep is bounded by [`FpgaConfig::irq_slice`], after which the device's health is
/// checked. Without interrupt vectors, sleeps are short naps.
///
/// [`FpgaConfig::irq_slice`]: super::FpgaConfig::irq_slice
pub struct FpgaWaiter<H: Hw + Send + Sync + 'static> {
    pub(super) drv: Arc<FpgaDriver<H>>,
}

impl<H: Hw + Send + Sync + 'static> Clone for FpgaWaiter<H> {
    fn clone(&self) -> Self {
        FpgaWaiter {
            drv: self.drv.clone(),
        }
    }
}

const WAKE_CAUSES: u32 = regs::irq::RX_READY | regs::irq::ERROR | regs::irq::LINK_CHANGE;

impl<H: Hw + Send + Sync + 'static> Waiter for FpgaWaiter<H> {
    fn arm(&self) -> u32 {
        let drv = &*self.drv;
        let ticket = drv.irq.seq.load(Ordering::Acquire);
        if drv.hw.irq_vectors() > 0 {
            let mut s = lock(&drv.irq.sleepers);
            *s += 1;
            if *s == 1 {
                let _ = drv
                    .hw
                    .write32(regs::IRQ_MASK as usize, regs::irq::ALL & !WAKE_CAUSES);
            }
            // Clear the causes: a completion written from now on raises a new interrupt;
            // one written before is seen by the caller's poll after `arm`.
            let _ = drv.hw.write32(regs::IRQ_STATUS as usize, WAKE_CAUSES);
        }
        ticket
    }

    fn sleep(&self, ticket: u32, timeout: Duration) {
        let drv = &*self.drv;
        let t = timeout.min(drv.cfg.irq_slice);
        if drv.hw.irq_vectors() == 0 {
            std::thread::sleep(t.min(Duration::from_micros(200)));
        } else if drv.irq.seq.load(Ordering::Acquire) == ticket {
            if let Ok(_leader) = drv.irq.leader.try_lock() {
                if drv.hw.wait_irq(0, t).is_ok() {
                    let _ = drv.hw.rearm_irq(0);
                }
                drv.irq.seq.fetch_add(1, Ordering::AcqRel);
                let _g = lock(&drv.irq.cv_lock);
                drv.irq.cv.notify_all();
            } else {
                let g = lock(&drv.irq.cv_lock);
                if drv.irq.seq.load(Ordering::Acquire) == ticket {
                    let _ = drv.irq.cv.wait_timeout(g, t);
                }
            }
        }
        let _ = drv.check_health();
    }

    fn disarm(&self) {
        let drv = &*self.drv;
        if drv.hw.irq_vectors() > 0 {
            let mut s = lock(&drv.irq.sleepers);
            *s = s.saturating_sub(1);
            if *s == 0 {
                let _ = drv.hw.write32(regs::IRQ_MASK as usize, regs::irq::ALL);
            }
        }
    }

    fn lost_peer(&self) -> Option<u32> {
        self.drv.lost_peer()
    }
}
