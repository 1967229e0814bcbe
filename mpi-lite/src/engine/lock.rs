//! A lock that is one flag beside its value: the engine's (around the [`Core`](super::Core))
//! and the C ABI's state (`skifmpi`'s `state`). Taking it untaken is one atomic exchange and
//! giving it back one store — the single-threaded paths pay that per call, where a
//! `std::sync::Mutex` cost about 30 instructions more per call (its poisoning checks;
//! callgrind, `mpi_loop self`). No poisoning: a panic inside a call leaves the value
//! consistent (see [`FlagGuard`]'s `Drop`). A thread that must wait spins briefly, then
//! yields its CPU: under `MPI_THREAD_MULTIPLE` the engine's is held for short sections only
//! (a post, a match, one poll), and waits never hold it (`threads`).
#![allow(unsafe_code)] // the value behind the flag (UnsafeCell)

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// A value used by one thread at a time.
pub struct FlagLock<T> {
    busy: AtomicBool,
    v: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a `FlagGuard`, and at most one guard exists at a
// time (`busy` is set by the exchange that made it and cleared when it drops), so sharing the
// lock between threads hands the value from one to the other, which needs `T: Send`.
unsafe impl<T: Send> Sync for FlagLock<T> {}

/// Access to the value while the lock is held.
pub struct FlagGuard<'a, T> {
    l: &'a FlagLock<T>,
}

impl<T> FlagLock<T> {
    /// `v`, unlocked.
    pub const fn new(v: T) -> Self {
        FlagLock {
            busy: AtomicBool::new(false),
            v: UnsafeCell::new(v),
        }
    }

    /// The value if no other thread holds it.
    #[inline]
    pub fn try_lock(&self) -> Option<FlagGuard<'_, T>> {
        if self.busy.swap(true, Ordering::Acquire) {
            return None;
        }
        Some(FlagGuard { l: self })
    }

    /// The value, waiting for it: spins while it looks taken, yields the CPU every so often
    /// (the holder may have been descheduled).
    pub fn lock(&self) -> FlagGuard<'_, T> {
        let mut spins = 0u32;
        loop {
            if let Some(g) = self.try_lock() {
                return g;
            }
            while self.busy.load(Ordering::Relaxed) {
                spins += 1;
                if spins.is_multiple_of(64) {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
    }
}

impl<T> Deref for FlagGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one (see `Sync`): no `&mut` to the value exists.
        unsafe { &*self.l.v.get() }
    }
}

impl<T> DerefMut for FlagGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as `deref`, and `&mut self` makes this the only reference made through it.
        unsafe { &mut *self.l.v.get() }
    }
}

impl<T> Drop for FlagGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // Also when a panic unwinds through a call: the tables stay consistent (each update
        // is one assignment) and the C ABI reports the panic as MPI_ERR_INTERN.
        self.l.busy.store(false, Ordering::Release);
    }
}
