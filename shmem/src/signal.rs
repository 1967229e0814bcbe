//! Signaling puts (OpenSHMEM 1.5 §9.7): data, then a 64-bit signal word updated after it,
//! so a target that waits on the signal (§9.11) finds the data in place.

use skifch::rma::Amo;
use skifch::Port;

use crate::{Error, SymAddr, World};

/// How the signal word is updated (`SHMEM_SIGNAL_SET` 0, `SHMEM_SIGNAL_ADD` 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalOp {
    /// Store the value.
    Set,
    /// Add the value.
    Add,
}

impl SignalOp {
    /// The operation of shmem.h's code.
    pub fn from_code(code: i32) -> Option<SignalOp> {
        match code {
            0 => Some(SignalOp::Set),
            1 => Some(SignalOp::Add),
            _ => None,
        }
    }
}

impl<P: Port> World<P> {
    /// Updates `pe`'s signal word `sig` with `value` after every put this PE issued to
    /// `pe` before (a fence, then a non-fetching atomic: puts to one PE are delivered in
    /// order on both paths).
    pub fn signal(&self, pe: u32, sig: SymAddr, value: u64, op: SignalOp) -> Result<(), Error> {
        let op = match op {
            SignalOp::Set => Amo::Set(value),
            SignalOp::Add => Amo::Add(value),
        };
        self.fence()?;
        self.amo(pe, sig, 8, op, false).map(drop)
    }

    /// `shmem_put_signal`: `src` to `dst` on `pe`, then the signal.
    pub fn put_signal(
        &self,
        pe: u32,
        dst: SymAddr,
        src: &[u8],
        sig: SymAddr,
        value: u64,
        op: SignalOp,
    ) -> Result<(), Error> {
        self.put(pe, dst, src)?;
        self.signal(pe, sig, value, op)
    }
}
