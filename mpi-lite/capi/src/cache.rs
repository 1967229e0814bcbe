//! A thread's last looked-up handle of one handle table (communicators, windows): the hot
//! calls of a thread that keeps using one object take no table lock and no reference count
//! (each was a locked read-modify-write on a line every thread shares). The cached object is
//! current while the table's [`Generation`] has not moved since it was looked up; the
//! reference it holds keeps the object alive even against an (erroneous) free by another
//! thread meanwhile.
//!
//! Under `MPI_THREAD_SINGLE` and `FUNNELED` the library is bound to one thread
//! ([`crate::state::bound_thread`]): that thread's slot is then a static ([`Bound`]), reached
//! without the `__tls_get_addr` call a thread-local costs in a shared library, and any other
//! thread gets no object at all (its call takes the general path, which refuses it).

use std::cell::{RefCell, UnsafeCell};
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::LocalKey;

use mpi_lite::engine::lock::this_thread;

/// A handle table's generation: bumped whenever a handle is added or removed (a number may
/// then name another object).
pub struct Generation(AtomicU64);

impl Generation {
    pub const fn new() -> Self {
        Generation(AtomicU64::new(0))
    }
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

/// A cached handle taken out of its slot: (handle, generation when looked up, object).
pub type Entry<T> = (c_int, u64, Arc<T>);
/// The thread-local slot of one table (`thread_local!`, initially [`empty`]): handle,
/// generation, object (none while taken out or never looked up).
pub type Last<T> = RefCell<(c_int, u64, Option<Arc<T>>)>;

/// A slot's initial value.
pub const fn empty<T>() -> Last<T> {
    RefCell::new((0, u64::MAX, None))
}

/// The slot of a table for the thread the library is bound to (a static beside the
/// table's thread-local [`Last`]).
pub struct Bound<T>(UnsafeCell<Last<T>>);

// SAFETY: only the thread the library is bound to reaches the slot ([`bound_slot`]), and
// that binding, once made, never changes: the slot is that one thread's, as a thread-local
// would be. The objects in it are shared (`Arc`), hence `Send + Sync`.
#[allow(unsafe_code)]
unsafe impl<T: Send + Sync> Sync for Bound<T> {}

impl<T> Bound<T> {
    pub const fn new() -> Self {
        Bound(UnsafeCell::new(empty()))
    }
}

/// The calling thread's slot when the library is bound to a thread: `Some(bound's)` on
/// that thread, `None` on any other; `Err(())` when it is not bound (the thread-local).
#[inline(always)]
fn bound_slot<T>(bound: &'static Bound<T>) -> Result<Option<&'static Last<T>>, ()> {
    match crate::state::bound_thread() {
        0 => Err(()),
        // SAFETY: this is the thread the library is bound to, the only one that ever
        // reaches the slot (see `Sync` above); it is used through its `RefCell` only.
        #[allow(unsafe_code)]
        t if t == this_thread() => Ok(Some(unsafe { &*bound.0.get() })),
        _ => Ok(None),
    }
}

/// `f` on the object of handle `h`: this thread's cached one while `gen` has not moved,
/// else `lookup`'s (then kept), compared and used in place with one access to the slot —
/// the static `bound` on the thread the library is bound to, else the thread-local `last`
/// (in a shared library each access to it costs a `__tls_get_addr` call). `None` when
/// `lookup` finds nothing, the slot is in use (a nested call) or the library is bound to
/// another thread: the caller's general path (which refuses the last).
#[inline(always)]
pub fn with<T: 'static, R>(
    last: &'static LocalKey<Last<T>>,
    bound: &'static Bound<T>,
    gen: &Generation,
    h: c_int,
    lookup: impl FnOnce() -> Option<Arc<T>>,
    f: impl FnOnce(&T) -> R,
) -> Option<R> {
    let g = gen.0.load(Ordering::Acquire);
    let slot = match bound_slot(bound) {
        Ok(slot) => slot?,
        Err(()) => {
            let p: *const Last<T> = last.try_with(|c| c as *const Last<T>).ok()?;
            // SAFETY: this thread's own slot, alive for as long as the thread (so
            // throughout this call, which the reference does not outlive).
            #[allow(unsafe_code)]
            unsafe {
                &*p
            }
        }
    };
    let mut c = slot.try_borrow_mut().ok()?;
    if c.0 != h || c.1 != g {
        *c = (h, g, Some(lookup()?));
    }
    c.2.as_deref().map(f)
}

/// As [`with`] on the thread the library is bound to, for a short cut that makes no call
/// (so its caller can keep its arguments in registers): `f` on the cached object if it is
/// `h`'s and current; `None` otherwise — another thread, not bound, a miss, the slot
/// borrowed mutably by a call below this one — and the caller takes [`with`]'s way. `f`
/// must not call into the library (it could reach the slot): the slot is read without
/// marking it borrowed, so the hot calls write no memory of their own before their atomic.
#[inline(always)]
pub fn with_bound<T: 'static, R>(
    bound: &'static Bound<T>,
    gen: &Generation,
    h: c_int,
    f: impl FnOnce(&T) -> R,
) -> Option<R> {
    let g = gen.0.load(Ordering::Acquire);
    let slot = bound_slot(bound).ok()??;
    // SAFETY: not borrowed mutably now (checked), and nothing borrows it mutably while the
    // reference lives: the slot is this thread's alone (`bound_slot`) and neither this
    // function nor `f` (its contract) calls anything that could.
    #[allow(unsafe_code)]
    let c = unsafe { slot.try_borrow_unguarded() }.ok()?;
    if c.0 != h || c.1 != g {
        return None;
    }
    let o = c.2.as_deref()?;
    Some(f(o))
}

/// As [`with`] for a caller that must hold the object across code of its own: taken out
/// of the slot (a nested call meanwhile calls `lookup`), given back with [`keep`].
#[inline(always)]
pub fn take<T: 'static, E>(
    last: &'static LocalKey<Last<T>>,
    gen: &Generation,
    h: c_int,
    lookup: impl FnOnce() -> Result<Arc<T>, E>,
) -> Result<Entry<T>, E> {
    // Read before any lookup: a change after it makes the next call look again.
    let g = gen.0.load(Ordering::Acquire);
    let cached = last.try_with(|s| {
        let mut c = s.try_borrow_mut().ok()?;
        let (ch, cg) = (c.0, c.1);
        c.2.take().map(|a| (ch, cg, a))
    });
    match cached.ok().flatten() {
        Some(e) if e.0 == h && e.1 == g => Ok(e),
        _ => Ok((h, g, lookup()?)),
    }
}

/// Keeps `e` as this thread's cached handle (after [`take`]).
#[inline(always)]
pub fn keep<T: 'static>(last: &'static LocalKey<Last<T>>, e: Entry<T>) {
    let _ = last.try_with(|s| {
        if let Ok(mut c) = s.try_borrow_mut() {
            *c = (e.0, e.1, Some(e.2));
        }
    });
}

/// Drops this thread's cached object (its owner wants it released now).
pub fn forget<T: 'static>(last: &'static LocalKey<Last<T>>, bound: &'static Bound<T>) {
    let take = |s: &Last<T>| s.try_borrow_mut().ok().and_then(|mut c| c.2.take());
    let old = match bound_slot(bound) {
        Ok(slot) => slot.and_then(take),
        Err(()) => last.try_with(take).ok().flatten(),
    };
    drop(old);
}
