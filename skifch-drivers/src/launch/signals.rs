//! The launcher's signals: the ones it blocks and polls ([`SignalGuard`]), the ones it
//! sends, and their names.
#![allow(unsafe_code)] // signal mask, sigtimedwait, kill

use std::io;
use std::time::Duration;

use skifch::{Error, Result};

/// The launcher's terminating signals, `SIGCHLD` and the job-control pair `SIGTSTP` /
/// `SIGCONT`, blocked in this thread and polled with `sigtimedwait`; the previous mask
/// comes back on drop (and in each rank).
pub(super) struct SignalGuard {
    set: libc::sigset_t,
    pub(super) old: libc::sigset_t,
}

impl SignalGuard {
    pub(super) fn block() -> Result<Self> {
        // SAFETY: sigset_t is plain data; sigemptyset initialises it fully.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid sigset_t; the signal numbers are valid.
        unsafe {
            libc::sigemptyset(&mut set);
            for s in [
                libc::SIGINT,
                libc::SIGTERM,
                libc::SIGHUP,
                libc::SIGCHLD,
                libc::SIGTSTP,
                libc::SIGCONT,
            ] {
                libc::sigaddset(&mut set, s);
            }
        }
        // SAFETY: both pointers are valid sigset_t for the duration of the call.
        let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) };
        if r != 0 {
            return Err(Error::os(
                "blocking signals in the launcher",
                io::Error::from_raw_os_error(r),
            ));
        }
        Ok(SignalGuard { set, old })
    }

    /// The next of our signals, waiting up to `timeout`.
    pub(super) fn wait(&self, timeout: Duration) -> Option<i32> {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `set` and `ts` are valid; a null siginfo pointer is allowed.
        let s = unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), &ts) };
        (s > 0).then_some(s)
    }

    /// Consumes pending signals so that unblocking does not deliver them; returns the last
    /// terminating one.
    pub(super) fn drain(&self) -> Option<i32> {
        let mut term = None;
        while let Some(s) = self.wait(Duration::ZERO) {
            if terminating(s) {
                term = Some(s);
            }
        }
        term
    }
}

/// Whether `s`, one of [`SignalGuard`]'s, ends the job (`SIGINT`, `SIGTERM`, `SIGHUP`).
pub(super) fn terminating(s: i32) -> bool {
    !matches!(s, libc::SIGCHLD | libc::SIGTSTP | libc::SIGCONT)
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        // SAFETY: `old` is the mask saved by `block`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

/// `SIGKILL`-style name of a signal number.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTKFLT => "SIGSTKFLT",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        s if (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&s) => {
            return format!("SIGRTMIN+{}", s - libc::SIGRTMIN())
        }
        s => return format!("signal {s}"),
    };
    name.to_string()
}
