//! Which threads are inside an MPI call, under `MPI_THREAD_MULTIPLE` (for `MPI_Finalize`,
//! which must not take the state away under a call; MPI-3.1 §8.7).
//!
//! One flag per thread, on a cache line of its own, instead of one process-wide counter:
//! the counter cost every call two locked read-modify-writes on a line that all the
//! process's threads share (≈ 7.5 ns each uncontended, far more when threads bounce it).
//! A call sets its thread's flag, then reads the state pointer; `MPI_Finalize` clears the
//! pointer, then reads the flags. The two sides are ordered by the asymmetric barrier the
//! shm driver uses for its sleepers (`skifch_drivers::sys`): a compiler fence on the call's
//! side, `membarrier` on Finalize's (a full fence on each side when the kernel lacks it) —
//! so either the call sees the pointer gone, or Finalize sees the call's flag.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use skifch_drivers::sys;

/// One thread's flag (a line of its own: threads never write each other's).
#[repr(align(64))]
pub struct Active {
    inside: AtomicBool,
}

/// Every flag ever handed out (a thread's stays after it exits, for the next thread).
static ALL: Mutex<Vec<&'static Active>> = Mutex::new(Vec::new());
/// Flags of threads that exited, to hand out again.
static SPARE: Mutex<Vec<&'static Active>> = Mutex::new(Vec::new());
/// The asymmetric barrier is registered (the call's side needs no fence).
static ASYM: AtomicBool = AtomicBool::new(false);

/// This thread's flag; given back for reuse when the thread exits.
struct Mine(Cell<Option<&'static Active>>);

impl Drop for Mine {
    fn drop(&mut self) {
        if let Some(a) = self.0.get() {
            SPARE.lock().unwrap_or_else(|p| p.into_inner()).push(a);
        }
    }
}

thread_local! {
    static MINE: Mine = const { Mine(Cell::new(None)) };
}

/// Registers the asymmetric barrier (`MPI_Init` under `MPI_THREAD_MULTIPLE`).
pub fn init() {
    sys::register_process();
    ASYM.store(sys::asymmetric(), Ordering::SeqCst);
}

#[cold]
fn first_call() -> &'static Active {
    let spare = SPARE.lock().unwrap_or_else(|p| p.into_inner()).pop();
    let a = spare.unwrap_or_else(|| {
        let a: &'static Active = Box::leak(Box::new(Active {
            inside: AtomicBool::new(false),
        }));
        ALL.lock().unwrap_or_else(|p| p.into_inner()).push(a);
        a
    });
    // A thread being torn down (its thread-locals gone) keeps a leaked flag of its own.
    let _ = MINE.try_with(|m| m.0.set(Some(a)));
    a
}

/// Marks this thread inside a call; the caller reads the state pointer after this.
#[inline]
pub fn enter() -> &'static Active {
    let a = MINE
        .try_with(|m| m.0.get())
        .ok()
        .flatten()
        .unwrap_or_else(first_call);
    a.inside.store(true, Ordering::Relaxed);
    sys::light_barrier(ASYM.load(Ordering::Relaxed));
    a
}

/// The call is over.
#[inline]
pub fn leave(a: &Active) {
    a.inside.store(false, Ordering::Release);
}

/// How many threads are inside a call, seen by `MPI_Finalize` after it cleared the state
/// pointer (the heavy side of the barrier first).
pub fn inside() -> usize {
    sys::heavy_barrier();
    ALL.lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter(|a| a.inside.load(Ordering::Acquire))
        .count()
}

/// Whether a thread other than the caller is inside a call (the asynchronous progress
/// thread's look, `state::program_inside`: such a thread progresses for itself). Without
/// the heavy barrier: a call entered meanwhile is seen at the next look.
pub fn others_inside() -> bool {
    let me = MINE.try_with(|m| m.0.get()).ok().flatten();
    ALL.lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .any(|a| !me.is_some_and(|m| std::ptr::eq(*a, m)) && a.inside.load(Ordering::Relaxed))
}
