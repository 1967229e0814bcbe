//! Distributed locks (OpenSHMEM 1.5 §9.12). A lock is a symmetric `long`; the lock word
//! that counts is PE 0's copy: 0 when free, else the holder's PE number + 1, changed only
//! by compare-and-swap (so a PE that clears a lock it does not hold is caught). Setting
//! first completes nothing; clearing first completes this PE's puts (`quiet`), so what
//! the holder wrote inside the critical section is visible to the next holder.

use skifch::rma::Amo;
use skifch::Port;

use crate::{Error, SymAddr, World};

/// The PE whose copy of a lock is the lock word.
const HOME: u32 = 0;

impl<P: Port> World<P> {
    /// Compare-and-swap on the lock word of `lock`.
    fn lock_cas(&self, lock: SymAddr, expected: u64, new: u64) -> Result<u64, Error> {
        self.amo(HOME, lock, 8, Amo::CompareSwap { expected, new }, true)
    }

    /// This PE's value in a lock word.
    fn holder(&self) -> u64 {
        u64::from(self.my_pe()) + 1
    }

    /// Acquires `lock` (`shmem_set_lock`), waiting as long as another PE holds it. An
    /// error if this PE already holds it.
    pub fn set_lock(&self, lock: SymAddr) -> Result<(), Error> {
        let me = self.holder();
        let mut b = crate::wait::backoff();
        loop {
            match self.lock_cas(lock, 0, me)? {
                0 => return Ok(()),
                old if old == me => {
                    return Err(Error::BadArgument("this PE already holds the lock".into()))
                }
                _ => {}
            }
            self.poll()?;
            b.snooze();
        }
    }

    /// Acquires `lock` if it is free (`shmem_test_lock`); true: acquired.
    pub fn try_lock(&self, lock: SymAddr) -> Result<bool, Error> {
        Ok(self.lock_cas(lock, 0, self.holder())? == 0)
    }

    /// Releases `lock` (`shmem_clear_lock`) after completing this PE's puts. An error if
    /// this PE does not hold it.
    pub fn clear_lock(&self, lock: SymAddr) -> Result<(), Error> {
        self.quiet()?;
        let me = self.holder();
        if self.lock_cas(lock, me, 0)? != me {
            return Err(Error::BadArgument(
                "clearing a lock this PE does not hold".into(),
            ));
        }
        Ok(())
    }
}
