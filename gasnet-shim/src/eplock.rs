//! The endpoint's lock. Shared by the client's threads, handlers' threads and the progress
//! thread it is a `std` mutex (`GASNET_PAR`, the progress thread, the Rust API); for a
//! client built `GASNET_SEQ` without a progress thread it is no lock at all, as in
//! GASNet-EX's SEQ builds (spec 0.13 §"Threading": in SEQ mode only one client thread
//! calls GASNet): a mutex costs every AM request and every poll two locked
//! read-modify-writes (try-lock and unlock, ≈ 5–7.5 ns each here), more than the shm
//! driver's whole send. The SEQ form keeps a flag of its one thread's use, which is what
//! tells a handler's own GASNet calls (the endpoint busy) from the application's.
#![allow(unsafe_code)] // the SEQ form: a cell the client's single thread reaches without a lock

use std::cell::{Cell, UnsafeCell};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

/// The endpoint behind one of the two forms of lock.
pub(crate) enum EpLock<T> {
    /// A mutex (shared with the progress thread, which takes the `Arc`).
    Shared(Arc<Mutex<T>>),
    /// A GASNET_SEQ client's single thread: no lock.
    Seq(SeqCell<T>),
}

/// The SEQ form: the value and whether it is in use (by the one thread: a handler's call
/// finds it busy).
pub(crate) struct SeqCell<T> {
    busy: Cell<bool>,
    val: UnsafeCell<T>,
}

// SAFETY: a `SeqCell` is made only by `EpLock::seq`, with a `SingleThread` promise that
// one thread at a time uses it (the GASNET_SEQ contract); under that promise nothing is
// shared between threads at once, and the value may move between threads (`T: Send`).
unsafe impl<T: Send> Sync for SeqCell<T> {}

/// The promise the SEQ form rests on: one thread at a time uses the endpoint (no
/// progress thread either).
pub(crate) struct SingleThread(());

impl SingleThread {
    /// # Safety
    /// Only one thread at a time ever uses the lock made with this promise.
    pub(crate) unsafe fn promise() -> Self {
        SingleThread(())
    }
}

/// What `try_enter` found.
pub(crate) enum Entered<'a, T> {
    /// The endpoint, held.
    Held(EpGuard<'a, T>),
    /// Held by another thread (the mutex form; `lock` waits for it).
    Busy,
    /// Held by this thread's own caller up the stack (the SEQ form: a handler's call).
    Nested,
}

/// The endpoint, held: through the value's address, whichever form holds it.
pub(crate) struct EpGuard<'a, T> {
    val: NonNull<T>,
    hold: Hold<'a, T>,
}

enum Hold<'a, T> {
    /// Kept for its drop (the unlock).
    Shared {
        _guard: MutexGuard<'a, T>,
    },
    Seq(&'a SeqCell<T>),
}

impl<T> EpLock<T> {
    /// The mutex form.
    pub(crate) fn shared(v: T) -> Self {
        EpLock::Shared(Arc::new(Mutex::new(v)))
    }

    /// The SEQ form, on the promise that one thread uses it.
    pub(crate) fn seq(v: T, _: SingleThread) -> Self {
        EpLock::Seq(SeqCell {
            busy: Cell::new(false),
            val: UnsafeCell::new(v),
        })
    }

    /// The mutex, for the progress thread (`None` in the SEQ form).
    pub(crate) fn mutex(&self) -> Option<&Arc<Mutex<T>>> {
        match self {
            EpLock::Shared(m) => Some(m),
            EpLock::Seq(_) => None,
        }
    }

    /// Takes the endpoint if it is free now.
    #[inline(always)]
    pub(crate) fn try_enter(&self) -> Entered<'_, T> {
        match self {
            EpLock::Seq(c) => {
                if c.busy.get() {
                    return Entered::Nested;
                }
                c.busy.set(true);
                Entered::Held(EpGuard {
                    // SAFETY: `busy` was clear: no other guard exists (one thread, the
                    // constructor's contract), so this is the only reference.
                    val: unsafe { NonNull::new_unchecked(c.val.get()) },
                    hold: Hold::Seq(c),
                })
            }
            EpLock::Shared(m) => match m.try_lock() {
                Ok(g) => Entered::Held(EpGuard::from_mutex(g)),
                Err(TryLockError::Poisoned(p)) => {
                    Entered::Held(EpGuard::from_mutex(p.into_inner()))
                }
                Err(TryLockError::WouldBlock) => Entered::Busy,
            },
        }
    }

    /// Waits for the mutex (after `try_enter` found it `Busy`).
    pub(crate) fn lock(&self) -> Option<EpGuard<'_, T>> {
        match self {
            EpLock::Shared(m) => Some(EpGuard::from_mutex(
                m.lock().unwrap_or_else(|p| p.into_inner()),
            )),
            EpLock::Seq(_) => None,
        }
    }
}

impl<'a, T> EpGuard<'a, T> {
    #[inline(always)]
    fn from_mutex(mut g: MutexGuard<'a, T>) -> Self {
        EpGuard {
            val: NonNull::from(&mut *g),
            hold: Hold::Shared { _guard: g },
        }
    }
}

impl<T> Deref for EpGuard<'_, T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: `val` is the held value (the mutex's, which the guard in `hold` keeps
        // locked and in place; or the SEQ cell's, marked busy until this guard drops).
        unsafe { self.val.as_ref() }
    }
}

impl<T> DerefMut for EpGuard<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference.
        unsafe { self.val.as_mut() }
    }
}

impl<T> Drop for EpGuard<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        if let Hold::Seq(c) = self.hold {
            c.busy.set(false);
        }
        // The mutex form unlocks when `hold` drops, after this.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_form_tells_a_nested_entry_and_frees_on_drop() {
        // SAFETY: this test's thread is the lock's only user.
        let l = EpLock::seq(5u32, unsafe { SingleThread::promise() });
        let Entered::Held(mut g) = l.try_enter() else {
            panic!("a free SEQ lock is taken")
        };
        *g += 1;
        assert!(matches!(l.try_enter(), Entered::Nested));
        assert!(l.lock().is_none() && l.mutex().is_none());
        drop(g);
        let Entered::Held(g) = l.try_enter() else {
            panic!("a SEQ lock is free again after its guard drops")
        };
        assert_eq!(*g, 6);
    }

    #[test]
    fn shared_form_is_busy_for_another_thread_until_unlocked() {
        let l = EpLock::shared(0u32);
        let Entered::Held(mut g) = l.try_enter() else {
            panic!("a free mutex is taken")
        };
        *g = 7;
        std::thread::scope(|s| {
            s.spawn(|| assert!(matches!(l.try_enter(), Entered::Busy)))
                .join()
                .unwrap();
        });
        drop(g);
        assert_eq!(*l.lock().expect("the mutex form locks"), 7);
        assert!(l.mutex().is_some());
    }
}
