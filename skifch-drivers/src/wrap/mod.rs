//! Drivers that wrap another driver (the smoltcp `phy` habit: a tracer and a fault injector
//! around any device), generic over the inner [`Driver`] and forwarding every call they do
//! not change:
//!
//! * [`fault`] — [`FaultDriver`]: forced partial sends and would-blocks, a slow consumer,
//!   the loss of a rank at a chosen message; deterministic per seed. The conformance suite
//!   and the libraries' tests run over it to show they tolerate what the contract allows.
//! * [`trace`] — [`TraceDriver`]: logs every send, receive and completion (addresses,
//!   lengths, first bytes, results) to stderr or a file.
//!
//! In code, wrap any job: `FaultDriver::wrap(&job, cfg)`, `TraceDriver::wrap(&job, &cfg)`.
//! For real programs (C included), [`crate::init`] wraps the driver the launcher chose
//! when the environment asks for it ([`from_env`]):
//!
//! | variable | meaning |
//! | --- | --- |
//! | `SKIFCH_FAULT` | faults to inject, e.g. `partial=0.3,wouldblock=every:7,recv_delay=50,lose=1@500` ([`FaultConfig::parse`]) |
//! | `SKIFCH_TRACE` | `stderr` or a file path (`%r`: the rank), options `bytes=N`, `wouldblock` ([`TraceConfig::parse`]) |
//!
//! The tracer sits outside the fault injector, so a trace shows what the program saw
//! (forced would-blocks and cut sends included).
//!
//! Remote memory access ([`Driver::rma`]) is forwarded untouched: the wrappers act on
//! messages, so a library's direct RMA path (skifshmem over shm) bypasses them; its message
//! path (`SKIFSHMEM_RMA=off`) goes through them.

/// The [`Driver`] methods a wrapper (a struct with an `inner: Arc<D>`) passes through
/// unchanged: the job's shape, the name, and the RMA provider (see the module docs).
macro_rules! forward_driver {
    () => {
        fn name(&self) -> &'static str {
            self.inner.name()
        }
        fn rank(&self) -> u32 {
            self.inner.rank()
        }
        fn size(&self) -> u32 {
            self.inner.size()
        }
        fn max_ports(&self) -> u32 {
            self.inner.max_ports()
        }
        fn max_message(&self) -> usize {
            self.inner.max_message()
        }
        fn rma(self: &Arc<Self>) -> Option<Arc<dyn skifch::rma::Rma>> {
            self.inner.rma()
        }
    };
}

pub mod fault;
pub mod trace;

use std::sync::Arc;

use skifch::{Driver, Result};

pub use fault::{Death, FaultConfig, FaultDriver, FaultPort, FaultStats, Loss, Trigger, FAULT_ENV};
pub use trace::{TraceConfig, TraceDriver, TracePort, TraceSink, TRACE_ENV};

/// The wrapper stack [`from_env`] builds: a tracer (possibly off) over a fault injector
/// (possibly injecting nothing) over `D`.
pub type Wrapped<D> = TraceDriver<FaultDriver<D>>;

/// `inner` wrapped as `SKIFCH_FAULT` and `SKIFCH_TRACE` ask; `None` when neither is set.
pub fn from_env<D: Driver>(inner: &Arc<D>) -> Result<Option<Wrapped<D>>> {
    let (fault, trace) = (FaultConfig::from_env()?, TraceConfig::from_env()?);
    if fault.is_none() && trace.is_none() {
        return Ok(None);
    }
    let f = Arc::new(FaultDriver::new(inner.clone(), fault.unwrap_or_default()));
    Ok(Some(match trace {
        Some(t) => TraceDriver::new(f, &t)?,
        None => TraceDriver::off(f),
    }))
}
