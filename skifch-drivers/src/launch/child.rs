//! The child side of a rank: what runs between fork and exec, and its standard input.
#![allow(unsafe_code)] // prctl, getppid, setpgid, pthread_sigmask, fcntl before exec; poll, read

use std::io::{self, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use skifch::{Error, Result};

/// Prepares the child side of a rank between fork and exec: its own process group, death
/// with the launcher, the launcher's signal mask undone; `fds` (`-1`: none) are inherited
/// by the program (they are close-on-exec in the launcher, so nothing else gets them).
pub(super) fn child_setup(cmd: &mut Command, fds: [i32; 3], old_mask: libc::sigset_t) {
    let parent = std::process::id() as libc::pid_t;
    const SIGKILL: libc::c_ulong = libc::SIGKILL as libc::c_ulong;
    let hook = move || -> io::Result<()> {
        // Its own process group, which its children inherit: the launcher signals and, at
        // the end of the job, kills the group (`super::sweep`).
        // SAFETY: setpgid with integer arguments; async-signal-safe.
        if unsafe { libc::setpgid(0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: prctl with integer arguments; async-signal-safe.
        let dies_with_parent = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) };
        if dies_with_parent != 0 {
            return Err(io::Error::last_os_error());
        }
        // The launcher may have died before prctl: then nobody would ever kill us.
        // SAFETY: getppid cannot fail and touches no memory.
        if unsafe { libc::getppid() } != parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        // SAFETY: `old_mask` is a valid sigset owned by this closure; async-signal-safe.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old_mask, std::ptr::null_mut()) };
        for fd in fds.into_iter().filter(|&fd| fd >= 0) {
            // SAFETY: fcntl on a descriptor that is open in the child (inherited from the
            // launcher, which keeps it open until this rank is started); async-signal-safe.
            let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
            // SAFETY: as above.
            if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) } < 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    };
    // SAFETY: the hook only makes async-signal-safe calls (setpgid, prctl, getppid,
    // pthread_sigmask, fcntl), allocates nothing and takes no locks.
    unsafe { cmd.pre_exec(hook) };
}

/// Rank 0's standard input. The ranks are not in the terminal's foreground process group
/// (each leads its own), so a rank reading the terminal would be stopped (`SIGTTIN`): when
/// the launcher's stdin is a terminal, rank 0 reads a pipe that a thread of the launcher
/// feeds from it, while the launcher is in the foreground (as `mpirun` forwards stdin).
/// Any other stdin (a file, a pipe, `/dev/null`) is passed on as it is.
pub(super) struct Stdin0 {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    pipe: Option<OwnedFd>,
}

/// How often the forwarding thread looks at its stop flag.
const STDIN_POLL: Duration = Duration::from_millis(50);

impl Stdin0 {
    /// Starts forwarding if stdin is a terminal. Call with the launcher's signals blocked
    /// (the thread inherits the mask).
    pub(super) fn new() -> Result<Stdin0> {
        let stop = Arc::new(AtomicBool::new(false));
        // SAFETY: isatty only inspects descriptor 0.
        if unsafe { libc::isatty(0) } != 1 {
            return Ok(Stdin0 {
                stop,
                thread: None,
                pipe: None,
            });
        }
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 returns.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(Error::last_os(
                "creating the pipe for rank 0's standard input",
            ));
        }
        // SAFETY: both descriptors were just created and are owned by nobody else.
        let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("skifrun-stdin".into())
            .spawn(move || forward_stdin(std::fs::File::from(wr), &flag))
            .map_err(|e| Error::os("starting the stdin forwarding thread", e))?;
        Ok(Stdin0 {
            stop,
            thread: Some(thread),
            pipe: Some(rd),
        })
    }

    /// What rank 0 gets as stdin (the pipe's read end once, else the launcher's stdin).
    pub(super) fn stdio(&mut self) -> Stdio {
        self.pipe.take().map_or_else(Stdio::inherit, Stdio::from)
    }
}

impl Drop for Stdin0 {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Copies the terminal on stdin to `out` until end of file, a write error (rank 0 is gone)
/// or `stop`; reads only while the launcher is the terminal's foreground process group.
fn forward_stdin(mut out: std::fs::File, stop: &AtomicBool) {
    // A write to a pipe whose reader is gone must fail with EPIPE, not kill the launcher:
    // SIGPIPE from a write is sent to the writing thread, where it now stays pending.
    // SAFETY: sigset_t is plain data, initialised by sigemptyset; the mask is this thread's.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    let mut buf = [0u8; 4096];
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: tcgetpgrp and getpgrp take integers only.
        let (fg, me) = unsafe { (libc::tcgetpgrp(0), libc::getpgrp()) };
        if fg != -1 && fg != me {
            // In the background of our controlling terminal: reading would stop us. (-1:
            // not our controlling terminal, which never stops a reader.)
            std::thread::sleep(STDIN_POLL);
            continue;
        }
        let mut pfd = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        };
        let ready = super::output::poll_fds(
            std::slice::from_mut(&mut pfd),
            STDIN_POLL.as_millis() as libc::c_int,
        );
        if !matches!(ready, Ok(1..)) {
            continue;
        }
        // SAFETY: `buf` is a valid buffer of its length.
        let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
        match n {
            0 => return, // end of input: dropping `out` gives rank 0 its end of file
            n if n > 0 => {
                if out.write_all(&buf[..n as usize]).is_err() {
                    return;
                }
            }
            _ => match io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR | libc::EAGAIN | libc::EIO) => std::thread::sleep(STDIN_POLL),
                _ => return,
            },
        }
    }
}
