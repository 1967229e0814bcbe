//! Distributed locks (OpenSHMEM 1.5 §9.12). A lock is a symmetric `long`; the lock word
//! that counts is PE 0's copy: 0 when free, else the holder, changed only by
//! compare-and-swap (so a PE that clears a lock it does not hold is caught). The holder
//! is the PE number + 1 in the low 32 bits and the holding thread's number in the high
//! ones: threads of one PE exclude each other too (issue 16: two threads of a PE taking
//! one lock failed with "already holds"), and any thread of the holding PE may clear it.
//! Setting first completes nothing; clearing first completes this PE's puts (`quiet`),
//! so what the holder wrote inside the critical section is visible to the next holder.
//! Every attempt serves requests on the message path ([`World::amo`] on the lock's
//! home PE polls), so the holder and the home PE always make progress.

use std::sync::atomic::{AtomicU32, Ordering};

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

    /// This thread's value in a lock word (module docs).
    fn holder(&self) -> u64 {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        thread_local! {
            static THREAD: u32 = NEXT.fetch_add(1, Ordering::Relaxed);
        }
        let t = THREAD.with(|t| *t);
        u64::from(t) << 32 | (u64::from(self.my_pe()) + 1)
    }

    /// Acquires `lock` (`shmem_set_lock`), waiting as long as another PE or thread holds
    /// it. An error if this thread already holds it.
    pub fn set_lock(&self, lock: SymAddr) -> Result<(), Error> {
        let me = self.holder();
        let mut b = crate::wait::backoff();
        loop {
            match self.lock_cas(lock, 0, me)? {
                0 => return Ok(()),
                old if old == me => {
                    return Err(Error::BadArgument(
                        "this thread already holds the lock".into(),
                    ))
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
    /// this PE does not hold it (any of its threads may clear it).
    pub fn clear_lock(&self, lock: SymAddr) -> Result<(), Error> {
        self.quiet()?;
        let mut held = self.holder();
        loop {
            match self.lock_cas(lock, held, 0)? {
                old if old == held => return Ok(()),
                old if old as u32 == held as u32 => held = old, // another thread of this PE
                _ => {
                    return Err(Error::BadArgument(
                        "clearing a lock this PE does not hold".into(),
                    ))
                }
            }
        }
    }
}
