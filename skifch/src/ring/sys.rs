//! The only syscalls of the ring transport: futex wait/wake and the asymmetric barrier
//! (membarrier). Kept in one place so that Miri and other platforms swap them out.
#![allow(unsafe_code)]

use std::sync::atomic::{fence, AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

/// Set when this process registered for `MEMBARRIER_CMD_GLOBAL_EXPEDITED`: then a sender
/// needs no fence between publishing and reading the sleeper count, because a sleeping
/// receiver issues the heavy barrier on every registered process instead.
static ASYM: AtomicBool = AtomicBool::new(false);

#[cfg(all(target_os = "linux", not(miri)))]
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

#[cfg(any(not(target_os = "linux"), miri))]
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
    if asym {
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
