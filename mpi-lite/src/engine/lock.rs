//! A lock that is one flag beside its value: the engine's (around the [`Core`](super::Core))
//! and the C ABI's state (`skifmpi`'s `state`). Taking it untaken is one atomic exchange and
//! giving it back one store — the single-threaded paths pay that per call, where a
//! `std::sync::Mutex` cost about 30 instructions more per call (its poisoning checks;
//! callgrind, `mpi_loop self`). No poisoning: a panic inside a call leaves the value
//! consistent (see [`FlagGuard`]'s `Drop`). A thread that must wait spins briefly, then
//! yields its CPU: under `MPI_THREAD_MULTIPLE` the engine's is held for short sections only
//! (a post, a match, one poll), and waits never hold it (`threads`).
//!
//! **Bound to one thread** ([`FlagLock::bind_to_current_thread`], the C ABI's
//! `MPI_THREAD_SINGLE`/`FUNNELED`): only that thread takes the lock from then on, with a
//! plain flag of its own and no atomic read-modify-write — an uncontended exchange and its
//! release cost ≈ 7.5 ns on this machine's CPUs (a locked instruction), and a call took two
//! (the C state's and the engine's), half of an 8-byte message's budget at 30 M msg/s. Any
//! other thread is refused.
#![allow(unsafe_code)] // the value behind the flag (UnsafeCell)

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A value used by one thread at a time.
pub struct FlagLock<T> {
    busy: AtomicBool,
    /// The thread the lock is bound to (`pthread_self`, even), 0 while unbound; bit 0 set
    /// while the owner holds the value. Set by a holder of `busy`, never cleared; only the
    /// owner thread changes bit 0 (one load, compare and store per call).
    owner: AtomicUsize,
    v: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a `FlagGuard`, and at most one guard exists at a
// time: unbound, `busy` is set by the exchange that made it and cleared when it drops; bound,
// only the owner thread makes guards (bit 0 of `owner` excludes a second one of its own), and a
// thread that won the exchange finds the owner set (its `Acquire` reads the `Release` that
// ended the binding call, or a later one) and gives the flag back untouched. So sharing the
// lock between threads hands the value from one to the other, which needs `T: Send`.
unsafe impl<T: Send> Sync for FlagLock<T> {}

/// Access to the value while the lock is held.
pub struct FlagGuard<'a, T> {
    l: &'a FlagLock<T>,
    /// Made on the bound path: bit 0 of `owner`, not `busy`, is given back.
    bound: bool,
}

/// This thread's identity, never 0: the thread pointer, which is what `pthread_self`
/// returns on x86-64 Linux (its thread control block's address at `%fs:0`) — read in one
/// instruction here instead of a call through the PLT (≈ 6 instructions per lock).
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
#[inline(always)]
pub fn this_thread() -> usize {
    let tp: usize;
    // SAFETY: on x86-64 Linux `%fs` is the thread pointer and its first word is the TCB's
    // own address (the TLS ABI's self pointer); reading it has no side effect.
    unsafe {
        std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags, pure));
    }
    tp
}

/// This thread's identity, never 0 (`pthread_self`).
#[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri))))]
#[inline(always)]
pub fn this_thread() -> usize {
    // SAFETY: pthread_self has no preconditions and cannot fail.
    unsafe { libc::pthread_self() as usize }
}

impl<T> FlagLock<T> {
    /// `v`, unlocked.
    pub const fn new(v: T) -> Self {
        FlagLock {
            busy: AtomicBool::new(false),
            owner: AtomicUsize::new(0),
            v: UnsafeCell::new(v),
        }
    }

    /// The value if no other thread holds it (and, bound, if this is the owner thread).
    #[inline]
    pub fn try_lock(&self) -> Option<FlagGuard<'_, T>> {
        let o = self.owner.load(Ordering::Relaxed);
        if o != 0 {
            if o != this_thread() {
                return None; // another thread's, or held (bit 0) by this one
            }
            self.owner.store(o | 1, Ordering::Relaxed);
            return Some(FlagGuard {
                l: self,
                bound: true,
            });
        }
        if self.busy.swap(true, Ordering::Acquire) {
            return None;
        }
        if self.owner.load(Ordering::Relaxed) != 0 {
            // Bound since the first look: the owner's alone.
            self.busy.store(false, Ordering::Release);
            return None;
        }
        Some(FlagGuard {
            l: self,
            bound: false,
        })
    }

    /// Whether some thread holds the value now (a look from another thread, which takes
    /// nothing: the answer may change at once).
    pub fn is_held(&self) -> bool {
        self.busy.load(Ordering::Relaxed) || self.owner.load(Ordering::Relaxed) & 1 != 0
    }

    /// The thread the lock is bound to ([`this_thread`]'s value there), 0 while unbound.
    #[inline(always)]
    pub fn bound_to(&self) -> usize {
        self.owner.load(Ordering::Relaxed) & !1
    }

    /// `true` if the lock is bound to a thread other than this one (which never gets it).
    pub fn bound_elsewhere(&self) -> bool {
        let o = self.owner.load(Ordering::Relaxed);
        o != 0 && o & !1 != this_thread()
    }

    /// Binds the lock held by `g` to the calling thread (see the module docs); `g` stays
    /// valid and is given back the bound way. The binding stays for the lock's life.
    pub fn bind_to_current_thread(g: &mut FlagGuard<'_, T>) {
        if g.bound {
            return;
        }
        let l = g.l;
        l.owner.store(this_thread() | 1, Ordering::Relaxed);
        g.bound = true;
        // Ordered after the owner: a thread whose exchange reads this sees the binding.
        l.busy.store(false, Ordering::Release);
    }

    /// The value, waiting for it: spins while it looks taken, yields the CPU every so often
    /// (the holder may have been descheduled). `None` if it is bound and this thread cannot
    /// have it (another thread's, or held by this one).
    pub fn lock(&self) -> Option<FlagGuard<'_, T>> {
        let mut spins = 0u32;
        loop {
            if let Some(g) = self.try_lock() {
                return Some(g);
            }
            if self.owner.load(Ordering::Relaxed) != 0 {
                return None; // bound: to another thread, or this one holds it already
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
        if self.bound {
            let o = self.l.owner.load(Ordering::Relaxed);
            self.l.owner.store(o & !1, Ordering::Relaxed);
        } else {
            self.l.busy.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_identity_is_pthread_self_and_differs_between_threads() {
        // SAFETY: no preconditions.
        assert_eq!(this_thread(), unsafe { libc::pthread_self() } as usize);
        let other = std::thread::spawn(this_thread).join().unwrap();
        assert_ne!(other, this_thread());
    }

    #[test]
    fn a_bound_lock_is_the_owners_alone() {
        let l = std::sync::Arc::new(FlagLock::new(5u32));
        {
            let mut g = l.try_lock().unwrap();
            FlagLock::bind_to_current_thread(&mut g);
            assert!(
                l.try_lock().is_none(),
                "a second guard while the first lives"
            );
            *g += 1;
        }
        assert_eq!(*l.try_lock().unwrap(), 6);
        assert!(!l.bound_elsewhere());
        let l2 = l.clone();
        let (got, locked, elsewhere) = std::thread::spawn(move || {
            (
                l2.try_lock().is_some(),
                l2.lock().is_some(),
                l2.bound_elsewhere(),
            )
        })
        .join()
        .unwrap();
        assert!(!got && !locked && elsewhere);
        let g = l.try_lock().unwrap();
        assert!(l.lock().is_none(), "held by this thread: no wait for ever");
        drop(g);
        assert_eq!(*l.lock().unwrap(), 6);
    }
}
