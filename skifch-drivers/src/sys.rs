//! The waiting syscalls of the drivers: futex wait/wake and the asymmetric barrier
//! (membarrier), used by the shm lanes ([`crate::shm`]), the job-control block
//! ([`crate::jobctl`]) and the FPGA model host ([`crate::fpga::remote`]). Kept in one
//! place so that they are swapped as a whole: Linux has the real ones; other platforms
//! and Miri a fence and a polling sleep; the loom model (`--cfg loom`) a futex built from
//! loom's mutex and condition variable, without a timeout (so that a lost wake-up shows
//! as a deadlock, not a delay), and plain `SeqCst` fences for both sides of the barrier
//! (the guarantee the asymmetric pair gives; loom has no `membarrier`).
#![allow(unsafe_code)]

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::sync::{fence, AtomicU32, Ordering};

/// Set when this process registered for `MEMBARRIER_CMD_GLOBAL_EXPEDITED`: then a sender
/// needs no fence between publishing and reading the sleeper count, because a sleeping
/// receiver issues the heavy barrier on every registered process instead.
static ASYM: AtomicBool = AtomicBool::new(false);

#[cfg(all(target_os = "linux", not(miri), not(loom)))]
mod imp {
    use super::*;
    const MEMBARRIER_CMD_GLOBAL_EXPEDITED: libc::c_long = 1 << 1;
    const MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED: libc::c_long = 1 << 2;
    const MEMBARRIER_CMD_QUERY: libc::c_long = 0;

    pub fn register() {
        // SAFETY: membarrier takes integer arguments only and touches no user memory.
        let mask = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_QUERY, 0) };
        if mask < 0 || mask & MEMBARRIER_CMD_GLOBAL_EXPEDITED == 0 {
            return;
        }
        // SAFETY: as above.
        let r = unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED,
                0,
            )
        };
        if r == 0 {
            ASYM.store(true, Ordering::SeqCst);
        }
    }

    pub fn heavy() {
        fence(Ordering::SeqCst);
        if ASYM.load(Ordering::Relaxed) {
            // SAFETY: as above. A failure leaves only the futex timeout as the safety net.
            unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0) };
        }
    }

    pub fn wait(word: &AtomicU32, expect: u32, timeout: Duration) {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `word` is a live, aligned u32 for the duration of the call; not using
        // FUTEX_PRIVATE_FLAG because the word may be shared between processes. Errors
        // (EAGAIN: value changed, ETIMEDOUT, EINTR) all mean "go and look again".
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT,
                expect,
                &ts as *const libc::timespec,
            );
        }
    }

    pub fn wake_all(word: &AtomicU32) {
        // SAFETY: as in `wait`; FUTEX_WAKE only reads the address as a key.
        unsafe {
            libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
        }
    }
}

#[cfg(all(any(not(target_os = "linux"), miri), not(loom)))]
mod imp {
    //! Portable fallback (and Miri): a real fence on the sender, polling sleep on the receiver.
    use super::*;
    pub fn register() {}
    pub fn heavy() {
        fence(Ordering::SeqCst);
    }
    pub fn wait(word: &AtomicU32, expect: u32, timeout: Duration) {
        let end = std::time::Instant::now() + timeout;
        while word.load(Ordering::Acquire) == expect && std::time::Instant::now() < end {
            std::thread::yield_now();
        }
    }
    pub fn wake_all(_word: &AtomicU32) {}
}

#[cfg(loom)]
mod imp {
    //! The loom model's futex: one mutex + condition variable per word (by address), the
    //! word compared under the mutex, as the kernel compares it under its hash-bucket lock.
    use super::*;
    use loom::sync::{Condvar, Mutex};
    use std::cell::RefCell;
    use std::collections::HashMap;

    type Queue = &'static (Mutex<()>, Condvar);

    thread_local! {
        /// Per model run (cleared with the words, [`crate::sync::reset`] time): leaked
        /// like the words' atomics.
        static QUEUES: RefCell<(usize, HashMap<usize, Queue>)> = RefCell::default();
    }

    fn queue(word: &AtomicU32) -> Queue {
        let key = word as *const AtomicU32 as usize;
        QUEUES.with(|q| {
            let mut q = q.borrow_mut();
            let gen = crate::sync::generation();
            if q.0 != gen {
                *q = (gen, HashMap::new());
            }
            *q.1.entry(key)
                .or_insert_with(|| Box::leak(Box::new((Mutex::new(()), Condvar::new()))))
        })
    }

    pub fn register() {}
    pub fn heavy() {
        fence(Ordering::SeqCst);
    }
    pub fn wait(word: &AtomicU32, expect: u32, _timeout: Duration) {
        let (m, cv) = queue(word);
        let g = m.lock().unwrap();
        if word.load(Ordering::SeqCst) == expect {
            drop(cv.wait(g).unwrap());
        }
    }
    pub fn wake_all(word: &AtomicU32) {
        let (m, cv) = queue(word);
        let _g = m.lock().unwrap();
        cv.notify_all();
    }
}

/// Registers this process for the asymmetric barrier (once per process; cheap to repeat).
pub fn register_process() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(imp::register);
}

/// Whether this process registered for the asymmetric barrier (after
/// [`register_process`]): a port keeps the answer for [`light_barrier`].
pub fn asymmetric() -> bool {
    ASYM.load(Ordering::SeqCst)
}

/// Sender side: between publishing a message and reading the sleeper count; `asym` is
/// [`asymmetric`]'s answer.
#[inline(always)]
pub fn light_barrier(asym: bool) {
    // loom has no compiler fence: the model checks the fence the pair stands for.
    if asym && !cfg!(loom) {
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
}

/// Receiver side: between announcing a sleeper and the last look at the lanes.
pub fn heavy_barrier() {
    imp::heavy()
}

/// Sleeps while `*word == expect`, at most `timeout`.
pub fn futex_wait(word: &AtomicU32, expect: u32, timeout: Duration) {
    imp::wait(word, expect, timeout)
}

/// Wakes every sleeper on `word`.
pub fn futex_wake_all(word: &AtomicU32) {
    imp::wake_all(word)
}
