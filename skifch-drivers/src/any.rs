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
//! | unset | [`crate::shm`] (under `skifrun`, or a PMI/PMIx launcher's ranks on one host, or a fresh 1-rank job); the hierarchy ([`crate::hier`]: the node's shm lanes, libfabric between nodes) when a PMI/PMIx launcher placed the ranks on several hosts |
//! | `shm` | [`crate::shm`] only (a job on several hosts is refused) |
//! | `hier` | the hierarchy, also on one host (`SKIFCH_ROUTE=fabric` then sends every message through libfabric) |
//! | `fpga-model` | the FPGA adapter driver over the device model hosted by `skifrun` ([`crate::fpga::remote`]) |
//! | `ofi` | the libfabric driver ([`crate::ofi`]; started by `skifrun --driver ofi`, `mpiexec.hydra` or `srun`) |
//!
//! When another SkifCh library of the process joined first, the job is over its driver
//! ([`AnyDriver::Fwd`], [`crate::share`]).
//!
//! With `SKIFCH_FAULT` or `SKIFCH_TRACE` set, that driver is wrapped in the fault injector
//! and the tracer ([`crate::wrap`]): variant [`AnyDriver::Wrapped`], [`ConcreteJob::Wrapped`].
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
//!     ConcreteJob::Ofi(job) => work(job),
//!     ConcreteJob::Hier(job) => work(job),
//!     ConcreteJob::Wrapped(job) => work(job),
//!     ConcreteJob::Fwd(job) => work(job),
//! }?;
//! # Ok::<(), skifch::Error>(())
//! ```
#![allow(unsafe_code)] // `unsafe impl Port` and the forwarding of `unsafe fn complete`

use std::io::IoSlice;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use skifch::driver::{Driver, Port, RawMessage, Reserved, SendMode, Token, Waiter};
use skifch::{Error, Job, NetAddr, Result};

use crate::fpga::remote::{RemoteDriver, RemoteJob};
use crate::fwd::{FwdDriver, FwdWaiter};
use crate::hier::ShmOfi;
use crate::ofi::{OfiDriver, OfiJob};
use crate::shm::{ShmDriver, ShmJob};
use crate::wrap::Wrapped;

/// The value of `SKIFCH_DRIVER` for the FPGA driver over `skifrun`'s device model.
pub const FPGA_MODEL: &str = "fpga-model";
/// The value of `SKIFCH_DRIVER` for the libfabric driver.
pub const OFI: &str = "ofi";
/// The value of `SKIFCH_DRIVER` for the hierarchy of shm lanes and libfabric, also on one
/// node (the default, unset, picks it for a job on several nodes).
pub const HIER: &str = "hier";

/// One of the drivers a launched program can be given.
pub enum AnyDriver {
    /// The shared-memory emulator.
    Shm(Arc<ShmDriver>),
    /// The FPGA adapter driver over the device model hosted by the launcher.
    Fpga(Arc<RemoteDriver>),
    /// The libfabric driver.
    Ofi(Arc<OfiDriver>),
    /// The node's shm lanes and the libfabric driver between nodes ([`crate::hier`]).
    Hier(Arc<ShmOfi>),
    /// One of the above inside the fault injector and the tracer (`SKIFCH_FAULT`,
    /// `SKIFCH_TRACE`); never nested.
    Wrapped(Arc<Wrapped<AnyDriver>>),
    /// The driver another SkifCh library of this process joined with ([`crate::share`]),
    /// through its C-ABI table.
    Fwd(Arc<FwdDriver>),
}

/// A port of [`AnyDriver`].
///
/// `repr(u8)`: an explicit tag byte, so each call's dispatch is one compare. Without it the
/// compiler folds the tag into a niche of the shm port's fields, and decoding that costs ~10
/// instructions per call (measured on `MPI_Send` / `MPI_Recv` once the third variant came).
#[repr(u8)]
pub enum AnyPort {
    /// A shm port.
    Shm(<ShmDriver as Driver>::Port),
    /// An FPGA adapter port.
    Fpga(<RemoteDriver as Driver>::Port),
    /// A libfabric port.
    Ofi(<OfiDriver as Driver>::Port),
    /// A port of the wrapped driver or a forwarded port ([`crate::fwd`]), behind a
    /// vtable ([`DynPort`]). (The hierarchy's ports are shm ports: [`crate::shm::far`].)
    Wrapped(Box<dyn DynPort>),
}

/// The port of [`AnyDriver::Wrapped`] as a trait object. The wrapped port holds an
/// [`AnyPort`]; a direct (boxed) variant would make every `AnyPort` call statically
/// recursive, which stops the compiler from inlining the shm arm into the libraries' hot
/// paths (measured: +34 instructions per `MPI_Recv`). The vtable breaks the cycle and
/// costs only the wrapped arm, which is a debugging tool.
pub trait DynPort: Send {
    /// [`Port::addr`].
    fn addr(&self) -> NetAddr;
    /// [`Port::send`].
    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize>;
    /// [`Port::recv_into`].
    fn recv_into(&mut self, out: &mut RawMessage) -> Result<()>;
    /// [`Port::ready`].
    fn ready(&mut self) -> Result<bool>;
    /// [`Port::complete`].
    ///
    /// # Safety
    /// As [`Port::complete`]: `token` comes from `recv_into` on this port, completed once.
    unsafe fn complete(&mut self, token: Token);
    /// [`Port::waiter`].
    fn waiter(&self) -> AnyWaiter;
    /// [`Port::reserve`].
    fn reserve(&mut self, dst: NetAddr, max: usize) -> Result<Option<Reserved>>;
    /// [`Port::publish`].
    ///
    /// # Safety
    /// As [`Port::publish`].
    unsafe fn publish(&mut self, r: Reserved, len: usize);
}

impl<P: Port<Waiter = AnyWaiter>> DynPort for P {
    fn addr(&self) -> NetAddr {
        Port::addr(self)
    }
    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        Port::send(self, dst, iov, mode)
    }
    fn recv_into(&mut self, out: &mut RawMessage) -> Result<()> {
        Port::recv_into(self, out)
    }
    fn ready(&mut self) -> Result<bool> {
        Port::ready(self)
    }
    unsafe fn complete(&mut self, token: Token) {
        // SAFETY: the caller's contract is `Port::complete`'s.
        unsafe { Port::complete(self, token) }
    }
    fn waiter(&self) -> AnyWaiter {
        Port::waiter(self)
    }
    fn reserve(&mut self, dst: NetAddr, max: usize) -> Result<Option<Reserved>> {
        Port::reserve(self, dst, max)
    }
    unsafe fn publish(&mut self, r: Reserved, len: usize) {
        // SAFETY: the caller's contract is `Port::publish`'s.
        unsafe { Port::publish(self, r, len) }
    }
}

/// The waiter of an [`AnyPort`].
#[derive(Clone)]
pub enum AnyWaiter {
    /// A shm waiter.
    Shm(<<ShmDriver as Driver>::Port as Port>::Waiter),
    /// An FPGA adapter waiter.
    Fpga(<<RemoteDriver as Driver>::Port as Port>::Waiter),
    /// A libfabric waiter.
    Ofi(<<OfiDriver as Driver>::Port as Port>::Waiter),
    /// The waiter of a forwarded port.
    Fwd(FwdWaiter),
}

macro_rules! each {
    ($v:expr, $x:ident => $e:expr) => {
        match $v {
            Self::Shm($x) => $e,
            Self::Fpga($x) => $e,
            Self::Ofi($x) => $e,
            Self::Fwd($x) => $e,
        }
    };
}

/// As `each!`, for the driver (every variant).
macro_rules! each_driver {
    ($v:expr, $x:ident => $e:expr) => {
        match $v {
            Self::Shm($x) => $e,
            Self::Fpga($x) => $e,
            Self::Ofi($x) => $e,
            Self::Hier($x) => $e,
            Self::Wrapped($x) => $e,
            Self::Fwd($x) => $e,
        }
    };
}

/// As `each!`, for the types with a `Wrapped` variant (the driver and its ports; the
/// wrappers' waiter is the inner `AnyWaiter`).
macro_rules! each3 {
    ($v:expr, $x:ident => $e:expr) => {
        match $v {
            Self::Shm($x) => $e,
            Self::Fpga($x) => $e,
            Self::Ofi($x) => $e,
            Self::Wrapped($x) => $e,
        }
    };
}

impl AnyDriver {
    /// Records this rank's request that the whole job end with exit status `status`
    /// (OpenSHMEM `shmem_global_exit`) in the job's control block, where the launcher
    /// reads it to report that status and peers read it ([`AnyDriver::exit_request`]) to
    /// end with it too. The first request of the job wins; returns the status the job
    /// will end with.
    pub fn request_exit(&self, status: i32) -> i32 {
        match self {
            AnyDriver::Shm(d) => d.fabric().ctl().request_exit(status),
            AnyDriver::Fpga(d) => d.job_control().request_exit(status),
            AnyDriver::Ofi(d) => d.request_exit(status),
            AnyDriver::Hier(d) => d.local().fabric().ctl().request_exit(status),
            AnyDriver::Wrapped(d) => d.inner().inner().request_exit(status),
            AnyDriver::Fwd(d) => d.request_exit(status),
        }
    }

    /// This rank's index among the job's ranks on its machine, and their count
    /// ([`crate::place`]): for binding ranks to CPUs. A job of shm lanes or of the device
    /// model runs on one machine; the fabric's ranks say where they run. A driver another
    /// library joined with ([`AnyDriver::Fwd`]) does not say: the whole job counts as one
    /// machine.
    pub fn placement(&self) -> crate::place::Placement {
        use crate::place::Placement;
        match self {
            AnyDriver::Ofi(d) => d.placement(),
            AnyDriver::Hier(d) => d.remote().placement(),
            AnyDriver::Wrapped(d) => d.inner().inner().placement(),
            AnyDriver::Shm(_) | AnyDriver::Fpga(_) | AnyDriver::Fwd(_) => {
                Placement::one_machine(self.rank(), self.size())
            }
        }
    }

    /// Ends this rank's part in the job before the process exits with `status` without
    /// finalizing (GASNet's `gasnet_exit`, after [`AnyDriver::request_exit`]): the fabric's
    /// peers are told the request and count this rank lost ([`crate::ofi::OfiDriver::leave`]:
    /// other hosts have no shared control block to read it from), and the launcher's
    /// connection is finalized ([`crate::boot::finalize_current`]: hydra kills a node's
    /// ranks when one of them exits with it open). The driver carries no more messages.
    pub fn leave(&self, status: i32) {
        match self {
            AnyDriver::Ofi(d) => d.leave(status),
            AnyDriver::Hier(d) => d.remote().leave(status),
            AnyDriver::Wrapped(d) => d.inner().inner().leave(status),
            AnyDriver::Shm(_) | AnyDriver::Fpga(_) | AnyDriver::Fwd(_) => {}
        }
        crate::boot::finalize_current();
    }

    /// The status a rank of the job asked it to end with, if any.
    pub fn exit_request(&self) -> Option<i32> {
        match self {
            AnyDriver::Shm(d) => d.fabric().ctl().exit_request(),
            AnyDriver::Fpga(d) => d.job_control().exit_request(),
            AnyDriver::Ofi(d) => d.exit_request(),
            AnyDriver::Hier(d) => d
                .local()
                .fabric()
                .ctl()
                .exit_request()
                .or_else(|| d.remote().exit_request()),
            AnyDriver::Wrapped(d) => d.inner().inner().exit_request(),
            AnyDriver::Fwd(d) => d.exit_request(),
        }
    }
}

/// Flushes Rust's stdout and the C program's stdio streams: `_exit` (and a process killed
/// by its launcher) drops what they buffer. For the C ABIs' fatal errors and job-ending
/// calls, before their last line on stderr.
pub fn flush_stdio() {
    let _ = std::io::Write::flush(&mut std::io::stdout());
    // SAFETY: fflush(NULL) flushes every open output stream of the C library.
    unsafe { libc::fflush(std::ptr::null_mut()) };
}

/// Ends this process at once with `status`, as the C ABIs' job-ending calls do
/// (`gasnet_exit`, `MPI_Abort`, their fatal errors): output flushed ([`flush_stdio`]),
/// this rank's part in the job ended first when `driver` is given ([`AnyDriver::leave`]:
/// its messages leave, peers on other hosts learn an exit request, the launcher's
/// connection is finalized), no atexit handlers (the job is ending; a C program's
/// handlers would call the library).
pub fn end_process(driver: Option<&AnyDriver>, status: i32) -> ! {
    flush_stdio();
    if let Some(d) = driver {
        d.leave(status);
    }
    // SAFETY: ends the process; nothing runs after.
    unsafe { libc::_exit(status) }
}

impl Driver for AnyDriver {
    type Port = AnyPort;
    fn name(&self) -> &'static str {
        each_driver!(self, d => d.name())
    }
    fn rank(&self) -> u32 {
        each_driver!(self, d => d.rank())
    }
    fn size(&self) -> u32 {
        each_driver!(self, d => d.size())
    }
    fn max_ports(&self) -> u32 {
        each_driver!(self, d => d.max_ports())
    }
    fn open_port(self: &Arc<Self>, port: u32) -> Result<AnyPort> {
        match &**self {
            AnyDriver::Shm(d) => d.open_port(port).map(AnyPort::Shm),
            AnyDriver::Fpga(d) => d.open_port(port).map(AnyPort::Fpga),
            AnyDriver::Ofi(d) => d.open_port(port).map(AnyPort::Ofi),
            // The hierarchy's port is the node's shm port holding the fabric's half
            // (`shm::far`): node-local traffic runs the shm arm's inline code.
            AnyDriver::Hier(d) => d.open_port(port).map(AnyPort::Shm),
            AnyDriver::Wrapped(d) => d
                .open_port(port)
                .map(|p| AnyPort::Wrapped(Box::new(p) as Box<dyn DynPort>)),
            AnyDriver::Fwd(d) => d
                .open_port(port)
                .map(|p| AnyPort::Wrapped(Box::new(p) as Box<dyn DynPort>)),
        }
    }
    fn max_message(&self) -> usize {
        each_driver!(self, d => d.max_message())
    }
    fn rma(self: &Arc<Self>) -> Option<Arc<dyn skifch::rma::Rma>> {
        each_driver!(&**self, d => d.rma())
    }
}

/// The hot calls of the FPGA and fabric drivers, out of line (see `impl Port for AnyPort`).
impl AnyPort {
    #[inline(never)]
    fn send_other(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        each3!(self, p => p.send(dst, iov, mode))
    }
    #[inline(never)]
    fn recv_other(&mut self, out: &mut RawMessage) -> Result<()> {
        each3!(self, p => p.recv_into(out))
    }
    #[inline(never)]
    fn ready_other(&mut self) -> Result<bool> {
        each3!(self, p => p.ready())
    }
    /// # Safety
    /// As [`Port::complete`].
    #[inline(never)]
    unsafe fn complete_other(&mut self, token: Token) {
        // SAFETY: the caller's contract (a token of this port's `recv`, once) is the
        // wrapped port's contract.
        each3!(self, p => unsafe { p.complete(token) })
    }
}

// SAFETY: every call forwards to the wrapped port, whose own `Port` promise (obligation 5)
// covers the segments and tokens it hands out; tokens never cross variants because a
// port's variant never changes.
unsafe impl Port for AnyPort {
    type Waiter = AnyWaiter;
    fn addr(&self) -> NetAddr {
        each3!(self, p => p.addr())
    }
    // The shm arm of the hot calls inline in the caller (as a concrete port is), the other
    // drivers' out of line: one compare more than a concrete shm port, not a call (the
    // hierarchy's ports are shm ports, `shm::far`). The vtable arm (wrapped and forwarded
    // ports) is called from here too: through `*_other` it paid that function's frame, ~24
    // instructions a call (its other arms inline the fabric driver's and spill every
    // callee-saved register; `docs/results-2026-11-29-hier-send`).
    #[inline(always)]
    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        match self {
            AnyPort::Shm(p) => p.send(dst, iov, mode),
            AnyPort::Wrapped(p) => p.send(dst, iov, mode),
            other => other.send_other(dst, iov, mode),
        }
    }
    #[inline(always)]
    fn try_send_word(&mut self, dst: NetAddr, word: u64, data: &[u8]) -> bool {
        match self {
            AnyPort::Shm(p) => p.try_send_word(dst, word, data),
            _ => false,
        }
    }
    #[inline(always)]
    fn recv_into(&mut self, out: &mut RawMessage) -> Result<()> {
        match self {
            AnyPort::Shm(p) => p.recv_into(out),
            other => {
                // Into a local first: `out`'s address never escapes into an opaque call,
                // so the shm arm's message can stay in registers in the caller.
                let mut m = RawMessage::EMPTY;
                let r = match other {
                    AnyPort::Wrapped(p) => p.recv_into(&mut m),
                    other => other.recv_other(&mut m),
                };
                *out = m;
                r
            }
        }
    }
    #[inline(always)]
    fn ready(&mut self) -> Result<bool> {
        match self {
            AnyPort::Shm(p) => p.ready(),
            AnyPort::Wrapped(p) => p.ready(),
            other => other.ready_other(),
        }
    }
    #[inline(always)]
    unsafe fn complete(&mut self, token: Token) {
        match self {
            // SAFETY: the caller's contract (a token of this port's `recv`, once) is the
            // wrapped port's contract.
            AnyPort::Shm(p) => unsafe { p.complete(token) },
            // SAFETY: as above.
            AnyPort::Wrapped(p) => unsafe { p.complete(token) },
            // SAFETY: as above.
            other => unsafe { other.complete_other(token) },
        }
    }
    fn waiter(&self) -> AnyWaiter {
        match self {
            AnyPort::Shm(p) => AnyWaiter::Shm(p.waiter()),
            AnyPort::Fpga(p) => AnyWaiter::Fpga(p.waiter()),
            AnyPort::Ofi(p) => AnyWaiter::Ofi(p.waiter()),
            AnyPort::Wrapped(p) => p.waiter(),
        }
    }
    fn reserve(&mut self, dst: NetAddr, max: usize) -> Result<Option<Reserved>> {
        each3!(self, p => p.reserve(dst, max))
    }
    unsafe fn publish(&mut self, r: Reserved, len: usize) {
        // SAFETY: the caller's contract (a reservation of this port, once) is the wrapped
        // port's; a port's variant never changes.
        each3!(self, p => unsafe { p.publish(r, len) })
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
    fn spin_floor(&self) -> Duration {
        each!(self, w => w.spin_floor())
    }
}

/// A job over the concrete driver `skifrun` chose, for code that dispatches once.
pub enum ConcreteJob {
    /// Over the shm driver.
    Shm(ShmJob),
    /// Over the FPGA adapter driver and the launcher's device model.
    Fpga(RemoteJob),
    /// Over the libfabric driver.
    Ofi(OfiJob),
    /// Over the node's shm lanes and the libfabric driver ([`crate::hier`]).
    Hier(Job<ShmOfi>),
    /// Over one of the above inside the fault injector and the tracer ([`crate::wrap`]).
    Wrapped(Job<Wrapped<AnyDriver>>),
    /// Over the driver another SkifCh library of this process joined with ([`crate::share`]).
    Fwd(Job<FwdDriver>),
}

impl ConcreteJob {
    /// The same rank's job over [`AnyDriver`] (a second handle: the rank finalizes when
    /// the last handle of either kind is dropped).
    pub fn to_any(&self) -> Job<AnyDriver> {
        Job::new(Arc::new(match self {
            ConcreteJob::Shm(j) => AnyDriver::Shm(j.driver().clone()),
            ConcreteJob::Fpga(j) => AnyDriver::Fpga(j.driver().clone()),
            ConcreteJob::Ofi(j) => AnyDriver::Ofi(j.driver().clone()),
            ConcreteJob::Hier(j) => AnyDriver::Hier(j.driver().clone()),
            ConcreteJob::Wrapped(j) => AnyDriver::Wrapped(j.driver().clone()),
            ConcreteJob::Fwd(j) => AnyDriver::Fwd(j.driver().clone()),
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
            $crate::ConcreteJob::Ofi($j) => $body,
            $crate::ConcreteJob::Hier($j) => $body,
            $crate::ConcreteJob::Wrapped($j) => $body,
            $crate::ConcreteJob::Fwd($j) => $body,
        }
    };
}

/// The concrete job under `job` (a second handle on the same driver; the waiting policy
/// comes from `SKIFCH_WAIT` again).
pub fn concrete(job: &Job<AnyDriver>) -> ConcreteJob {
    match &**job.driver() {
        AnyDriver::Shm(d) => ConcreteJob::Shm(Job::new(d.clone())),
        AnyDriver::Fpga(d) => ConcreteJob::Fpga(Job::new(d.clone())),
        AnyDriver::Ofi(d) => ConcreteJob::Ofi(Job::new(d.clone())),
        AnyDriver::Hier(d) => ConcreteJob::Hier(Job::new(d.clone())),
        AnyDriver::Wrapped(d) => ConcreteJob::Wrapped(Job::new(d.clone())),
        AnyDriver::Fwd(d) => ConcreteJob::Fwd(Job::new(d.clone())),
    }
}

/// The driver a process joined its job with, while any handle on it lives: a process joins
/// once, and every library in it (MPI, SHMEM, ARMCI, the C ABI) shares that join.
enum Joined {
    Shm(Weak<ShmDriver>),
    Fpga(Weak<RemoteDriver>),
    Ofi(Weak<OfiDriver>),
    Hier(Weak<ShmOfi>),
    Wrapped(Weak<Wrapped<AnyDriver>>),
    Fwd(Weak<FwdDriver>),
}

impl Joined {
    fn of(job: &ConcreteJob) -> Joined {
        match job {
            ConcreteJob::Shm(j) => Joined::Shm(Arc::downgrade(j.driver())),
            ConcreteJob::Fpga(j) => Joined::Fpga(Arc::downgrade(j.driver())),
            ConcreteJob::Ofi(j) => Joined::Ofi(Arc::downgrade(j.driver())),
            ConcreteJob::Hier(j) => Joined::Hier(Arc::downgrade(j.driver())),
            ConcreteJob::Wrapped(j) => Joined::Wrapped(Arc::downgrade(j.driver())),
            ConcreteJob::Fwd(j) => Joined::Fwd(Arc::downgrade(j.driver())),
        }
    }

    /// A new handle on the joined driver, if a handle on it still lives.
    fn upgrade(&self) -> Option<ConcreteJob> {
        Some(match self {
            Joined::Shm(w) => ConcreteJob::Shm(Job::new(w.upgrade()?)),
            Joined::Fpga(w) => ConcreteJob::Fpga(Job::new(w.upgrade()?)),
            Joined::Ofi(w) => ConcreteJob::Ofi(Job::new(w.upgrade()?)),
            Joined::Hier(w) => ConcreteJob::Hier(Job::new(w.upgrade()?)),
            Joined::Wrapped(w) => ConcreteJob::Wrapped(Job::new(w.upgrade()?)),
            Joined::Fwd(w) => ConcreteJob::Fwd(Job::new(w.upgrade()?)),
        })
    }
}

/// Joins the job this process belongs to over the driver `SKIFCH_DRIVER` names (see the
/// [module docs](self)); a program started without `skifrun` is a 1-rank shm job. With
/// `SKIFCH_FAULT` or `SKIFCH_TRACE` set, the driver comes wrapped ([`crate::wrap::from_env`]).
///
/// A process joins once: while a handle from an earlier call lives, this returns another
/// handle on the same driver (a program using MPI and SHMEM, or ARMCI inside an MPI job,
/// has one rank with a port per library), and the rank leaves the job when the last handle
/// is dropped. Joining again after that fails (the launcher's descriptor is consumed).
pub fn init_concrete() -> Result<ConcreteJob> {
    static JOINED: Mutex<Option<Joined>> = Mutex::new(None);
    // Held across the join, so two threads' first calls make one join.
    let mut joined = JOINED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(job) = joined.as_ref().and_then(Joined::upgrade) {
        return Ok(job);
    }
    // Once per process, across the libraries' copies of this crate (`crate::share`).
    let job = crate::share::join_shared(join_concrete, |job| {
        let j = Joined::of(job);
        Box::new(move || j.upgrade())
    })?;
    // The machine's ranks against its CPUs, before any library binds this process: the
    // waits of this copy of `skifch` yield when they outnumber them.
    skifch::wait::note_machine_ranks(job.to_any().driver().placement().count);
    *joined = Some(Joined::of(&job));
    Ok(job)
}

fn join_concrete() -> Result<ConcreteJob> {
    let job = init_unwrapped()?;
    let any = match &job {
        ConcreteJob::Shm(j) => AnyDriver::Shm(j.driver().clone()),
        ConcreteJob::Fpga(j) => AnyDriver::Fpga(j.driver().clone()),
        ConcreteJob::Ofi(j) => AnyDriver::Ofi(j.driver().clone()),
        ConcreteJob::Hier(j) => AnyDriver::Hier(j.driver().clone()),
        ConcreteJob::Wrapped(_) | ConcreteJob::Fwd(_) => return Ok(job),
    };
    Ok(match crate::wrap::from_env(&Arc::new(any))? {
        Some(w) => ConcreteJob::Wrapped(Job::new(Arc::new(w))),
        None => job,
    })
}

fn init_unwrapped() -> Result<ConcreteJob> {
    match std::env::var("SKIFCH_DRIVER").as_deref() {
        // Unset: the node's shm lanes; across nodes (a PMI/PMIx launcher's job on several
        // hosts) the hierarchy of shm lanes and the fabric.
        Err(std::env::VarError::NotPresent) | Ok("") => {
            if std::env::var_os("SKIFCH_FD").is_none() {
                let boot = crate::boot::from_env()?;
                if (0..boot.size()).any(|r| boot.node_of(r) != 0) {
                    return crate::hier::join(boot).map(ConcreteJob::Hier);
                }
                if boot.size() > 1 {
                    return crate::shm::init_from(&*boot).map(ConcreteJob::Shm);
                }
            }
            crate::shm::init().map(ConcreteJob::Shm)
        }
        Ok("shm") => crate::shm::init().map(ConcreteJob::Shm),
        Ok(HIER) => crate::hier::join(crate::boot::from_env()?).map(ConcreteJob::Hier),
        Ok(FPGA_MODEL) => crate::fpga::remote::init().map(ConcreteJob::Fpga),
        Ok(OFI) => crate::ofi::env::init().map(ConcreteJob::Ofi),
        Ok(other) => Err(Error::Bootstrap(
            format!(
                "SKIFCH_DRIVER={other:?}: unknown driver (known: shm, {FPGA_MODEL}, {OFI}, {HIER})"
            )
            .into(),
        )),
        Err(std::env::VarError::NotUnicode(v)) => Err(Error::Bootstrap(
            format!(
                "SKIFCH_DRIVER={v:?}: unknown driver (known: shm, {FPGA_MODEL}, {OFI}, {HIER})"
            )
            .into(),
        )),
    }
}

/// Joins the job this process belongs to (the one `skifrun` started, or a 1-rank shm job),
/// over the driver `SKIFCH_DRIVER` names: see the [module docs](self).
pub fn init() -> Result<Job<AnyDriver>> {
    Ok(init_concrete()?.to_any())
}
