//! The driver chosen at run time: [`init`] reads `SKIFCH_DRIVER` (set by `skifrun
//! --driver`) and returns a job over [`AnyDriver`], one `match` per driver call, so that a
//! program or a C ABI built once runs over every driver.
//!
//! Hot loops that care about the `match` (the MsgRate tool, the probes in
//! `benches/examples`) dispatch once instead: [`init_concrete`] (or [`concrete`] of a job)
//! gives a [`ConcreteJob`], and each arm calls the same generic function with the concrete
//! driver ([`with_driver!`](crate::with_driver) writes the arms).
//!
//! | `SKIFCH_DRIVER` | driver |
//! | --- | --- |
//! | unset, `shm` | [`crate::shm`] (also a fresh 1-rank job when started without `skifrun`) |
//! | `fpga-model` | the FPGA adapter driver over the device model hosted by `skifrun` ([`crate::fpga::remote`]) |
//!
//! ```no_run
//! use skifch_drivers::ConcreteJob;
//! fn work<D: skifch::Driver>(job: skifch::Job<D>) -> skifch::Result<()> {
//!     let _ch = job.open(0)?;
//!     Ok(())
//! }
//! match skifch_drivers::init_concrete()? {
//!     ConcreteJob::Shm(job) => work(job),
//!     ConcreteJob::Fpga(job) => work(job),
//! }?;
//! # Ok::<(), skifch::Error>(())
//! ```
#![allow(unsafe_code)] // `unsafe impl Port` and the forwarding of `unsafe fn complete`

use std::io::IoSlice;
use std::sync::Arc;
use std::time::Duration;

use skifch::driver::{Driver, Port, RawMessage, SendMode, Token, Waiter};
use skifch::{Error, Job, NetAddr, Result};

use crate::fpga::remote::{RemoteDriver, RemoteJob};
use crate::shm::{ShmDriver, ShmJob};

/// The value of `SKIFCH_DRIVER` for the FPGA driver over `skifrun`'s device model.
pub const FPGA_MODEL: &str = "fpga-model";

/// One of the drivers a launched program can be given.
pub enum AnyDriver {
    /// The shared-memory emulator.
    Shm(Arc<ShmDriver>),
    /// The FPGA adapter driver over the device model hosted by the launcher.
    Fpga(Arc<RemoteDriver>),
}

/// A port of [`AnyDriver`].
pub enum AnyPort {
    /// A shm port.
    Shm(<ShmDriver as Driver>::Port),
    /// An FPGA adapter port.
    Fpga(<RemoteDriver as Driver>::Port),
}

/// The waiter of an [`AnyPort`].
#[derive(Clone)]
pub enum AnyWaiter {
    /// A shm waiter.
    Shm(<<ShmDriver as Driver>::Port as Port>::Waiter),
    /// An FPGA adapter waiter.
    Fpga(<<RemoteDriver as Driver>::Port as Port>::Waiter),
}

macro_rules! each {
    ($v:expr, $x:ident => $e:expr) => {
        match $v {
            Self::Shm($x) => $e,
            Self::Fpga($x) => $e,
        }
    };
}

impl Driver for AnyDriver {
    type Port = AnyPort;
    fn name(&self) -> &'static str {
        each!(self, d => d.name())
    }
    fn rank(&self) -> u32 {
        each!(self, d => d.rank())
    }
    fn size(&self) -> u32 {
        each!(self, d => d.size())
    }
    fn max_ports(&self) -> u32 {
        each!(self, d => d.max_ports())
    }
    fn open_port(self: &Arc<Self>, port: u32) -> Result<AnyPort> {
        match &**self {
            AnyDriver::Shm(d) => d.open_port(port).map(AnyPort::Shm),
            AnyDriver::Fpga(d) => d.open_port(port).map(AnyPort::Fpga),
        }
    }
    fn max_message(&self) -> usize {
        each!(self, d => d.max_message())
    }
    fn rma(self: &Arc<Self>) -> Option<Arc<dyn skifch::rma::Rma>> {
        each!(&**self, d => d.rma())
    }
}

// SAFETY: every call forwards to the wrapped port, whose own `Port` promise (obligation 5)
// covers the segments and tokens it hands out; tokens never cross variants because a
// port's variant never changes.
unsafe impl Port for AnyPort {
    type Waiter = AnyWaiter;
    fn addr(&self) -> NetAddr {
        each!(self, p => p.addr())
    }
    #[inline]
    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        each!(self, p => p.send(dst, iov, mode))
    }
    #[inline]
    fn recv_into(&mut self, out: &mut RawMessage) -> Result<()> {
        each!(self, p => p.recv_into(out))
    }
    fn ready(&mut self) -> Result<bool> {
        each!(self, p => p.ready())
    }
    #[inline]
    unsafe fn complete(&mut self, token: Token) {
        // SAFETY: the caller's contract (a token of this port's `recv`, once) is the
        // wrapped port's contract.
        each!(self, p => unsafe { p.complete(token) })
    }
    fn waiter(&self) -> AnyWaiter {
        match self {
            AnyPort::Shm(p) => AnyWaiter::Shm(p.waiter()),
            AnyPort::Fpga(p) => AnyWaiter::Fpga(p.waiter()),
        }
    }
}

impl Waiter for AnyWaiter {
    fn arm(&self) -> u32 {
        each!(self, w => w.arm())
    }
    fn sleep(&self, ticket: u32, timeout: Duration) {
        each!(self, w => w.sleep(ticket, timeout))
    }
    fn disarm(&self) {
        each!(self, w => w.disarm())
    }
    fn lost_peer(&self) -> Option<u32> {
        each!(self, w => w.lost_peer())
    }
}

/// A job over the concrete driver `skifrun` chose, for code that dispatches once.
pub enum ConcreteJob {
    /// Over the shm driver.
    Shm(ShmJob),
    /// Over the FPGA adapter driver and the launcher's device model.
    Fpga(RemoteJob),
}

impl ConcreteJob {
    /// The same rank's job over [`AnyDriver`] (a second handle: the rank finalizes when
    /// the last handle of either kind is dropped).
    pub fn to_any(&self) -> Job<AnyDriver> {
        Job::new(Arc::new(match self {
            ConcreteJob::Shm(j) => AnyDriver::Shm(j.driver().clone()),
            ConcreteJob::Fpga(j) => AnyDriver::Fpga(j.driver().clone()),
        }))
    }
}

/// Runs `$body` with `$job` bound to the concrete job inside a [`ConcreteJob`]: one arm per
/// driver, each compiled for its own driver type (dispatch once, then generic code).
///
/// ```no_run
/// fn work<D: skifch::Driver>(job: skifch::Job<D>) -> u32 {
///     job.size()
/// }
/// let n = skifch_drivers::with_driver!(skifch_drivers::init_concrete()?, |job| work(job));
/// # Ok::<(), skifch::Error>(())
/// ```
#[macro_export]
macro_rules! with_driver {
    ($job:expr, |$j:ident| $body:expr) => {
        match $job {
            $crate::ConcreteJob::Shm($j) => $body,
            $crate::ConcreteJob::Fpga($j) => $body,
        }
    };
}

/// The concrete job under `job` (a second handle on the same driver; the waiting policy
/// comes from `SKIFCH_WAIT` again).
pub fn concrete(job: &Job<AnyDriver>) -> ConcreteJob {
    match &**job.driver() {
        AnyDriver::Shm(d) => ConcreteJob::Shm(Job::new(d.clone())),
        AnyDriver::Fpga(d) => ConcreteJob::Fpga(Job::new(d.clone())),
    }
}

/// Joins the job this process belongs to over the driver `SKIFCH_DRIVER` names (see the
/// [module docs](self)); a program started without `skifrun` is a 1-rank shm job.
pub fn init_concrete() -> Result<ConcreteJob> {
    match std::env::var("SKIFCH_DRIVER").as_deref() {
        Err(std::env::VarError::NotPresent) | Ok("") | Ok("shm") => {
            crate::shm::init().map(ConcreteJob::Shm)
        }
        Ok(FPGA_MODEL) => crate::fpga::remote::init().map(ConcreteJob::Fpga),
        Ok(other) => Err(Error::Bootstrap(
            format!("SKIFCH_DRIVER={other:?}: unknown driver (known: shm, {FPGA_MODEL})").into(),
        )),
        Err(std::env::VarError::NotUnicode(v)) => Err(Error::Bootstrap(
            format!("SKIFCH_DRIVER={v:?}: unknown driver (known: shm, {FPGA_MODEL})").into(),
        )),
    }
}

/// Joins the job this process belongs to (the one `skifrun` started, or a 1-rank shm job),
/// over the driver `SKIFCH_DRIVER` names: see the [module docs](self).
pub fn init() -> Result<Job<AnyDriver>> {
    Ok(init_concrete()?.to_any())
}
