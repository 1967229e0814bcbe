//! A rank's membership of a job (spec: "The rest of the C ABI": Init, Rank, Size, Open).

use std::sync::Arc;

use crate::driver::Driver;
use crate::{Channel, NetAddr, Result, SharedChannel, WaitPolicy};

/// This rank's handle on a job over driver `D`. Dropping the last handle (and every channel
/// opened from it) finalizes the rank: its ports close, and peers that send to it get
/// [`crate::Error::Unreachable`]. A rank that ends without finalizing (crash, `kill -9`, a
/// panicking thread in an in-process job) is reported to its peers as lost.
pub struct Job<D: Driver> {
    drv: Arc<D>,
    policy: WaitPolicy,
}

impl<D: Driver> Clone for Job<D> {
    fn clone(&self) -> Self {
        Job {
            drv: self.drv.clone(),
            policy: self.policy,
        }
    }
}

impl<D: Driver> Job<D> {
    /// Wraps a driver; channels get the waiting policy from `SKIFCH_WAIT`.
    pub fn new(drv: Arc<D>) -> Self {
        Job {
            drv,
            policy: WaitPolicy::from_env(),
        }
    }
    /// This process's (or thread's) rank.
    pub fn rank(&self) -> u32 {
        self.drv.rank()
    }
    /// Ranks in the job.
    pub fn size(&self) -> u32 {
        self.drv.size()
    }
    /// Ports each rank may open (`0..ports()`).
    pub fn ports(&self) -> u32 {
        self.drv.max_ports()
    }
    /// Largest message one send can carry to any port of this job.
    pub fn max_message(&self) -> usize {
        self.drv.max_message()
    }
    /// The driver's name (`shm`, `local`, …).
    pub fn driver_name(&self) -> &'static str {
        self.drv.name()
    }
    /// The driver's remote memory access provider, if any ([`Driver::rma`]; how libraries
    /// use it: [`crate::rma`]). Each call returns a fresh handle on the same capability.
    pub fn rma(&self) -> Option<Arc<dyn crate::rma::Rma>> {
        self.drv.rma()
    }
    /// The driver.
    pub fn driver(&self) -> &Arc<D> {
        &self.drv
    }
    /// Default waiting policy for channels opened from now on.
    pub fn set_wait_policy(&mut self, p: WaitPolicy) {
        self.policy = p;
    }
    /// Address of `port` on `rank` (not checked; a send to a bad address fails).
    pub fn addr(&self, rank: u32, port: u32) -> NetAddr {
        NetAddr::new(rank as u16, port as u16)
    }
    /// Opens this rank's channel on `port`.
    ///
    /// Ports are `0..ports()` (shm: 5 by default, `SKIFCH_PORTS` up to 64). A port is
    /// open at most once at a time. Messages sent to a port that is not open yet wait in
    /// its lanes (back-pressure when full) and are delivered when it opens; sending to a
    /// port its owner closed fails with `Unreachable`.
    pub fn open(&self, port: u32) -> Result<Channel<D::Port>> {
        Ok(Channel::new(self.drv.open_port(port)?, self.policy))
    }
    /// Opens a channel that several threads may share.
    pub fn open_shared(&self, port: u32) -> Result<SharedChannel<D::Port>> {
        Ok(SharedChannel::new(self.drv.open_port(port)?, self.policy))
    }
}
