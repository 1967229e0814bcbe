//! `--tag-output` / `-l`: each line a rank writes on stdout or stderr is prefixed with the
//! rank, as `mpirun` does. The ranks write into pipes; one thread of the launcher polls
//! them all and writes each complete line, prefixed, with a single `write` to the
//! launcher's stdout or stderr, so that lines of different ranks never mix.
#![allow(unsafe_code)] // poll, read

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use skifch::{Error, Result};

/// How output lines are tagged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TagOutput {
    /// Not at all: the ranks share the launcher's stdout and stderr.
    #[default]
    Off,
    /// Open MPI's `--tag-output`: `[1,<rank>]<stdout>:` / `[1,<rank>]<stderr>:`.
    OpenMpi,
    /// MPICH's `-l`: `[<rank>] `.
    Rank,
}

impl TagOutput {
    fn prefix(self, rank: u32, stderr: bool) -> String {
        match self {
            TagOutput::Off => String::new(),
            TagOutput::OpenMpi => {
                format!("[1,{rank}]<{}>:", if stderr { "stderr" } else { "stdout" })
            }
            TagOutput::Rank => format!("[{rank}] "),
        }
    }
}

/// One rank's stream: its pipe, its prefix and the start of a line not yet complete.
struct Stream {
    fd: OwnedFd,
    stderr: bool,
    prefix: String,
    partial: Vec<u8>,
}

/// The thread that copies the ranks' pipes, tagged, to the launcher's stdout and stderr.
pub(super) struct Tagger {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Poll period: how soon the thread sees its stop flag.
const POLL_MS: libc::c_int = 50;

impl Tagger {
    /// Starts copying `pipes` (rank, is stderr, read end). Call with the launcher's
    /// signals blocked (the thread inherits the mask).
    pub(super) fn start(style: TagOutput, pipes: Vec<(u32, bool, OwnedFd)>) -> Result<Tagger> {
        let streams = pipes
            .into_iter()
            .map(|(rank, stderr, fd)| Stream {
                fd,
                stderr,
                prefix: style.prefix(rank, stderr),
                partial: Vec::new(),
            })
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("skifrun-output".into())
            .spawn(move || copy_tagged(streams, &flag))
            .map_err(|e| Error::os("starting the output tagging thread", e))?;
        Ok(Tagger {
            stop,
            thread: Some(thread),
        })
    }
}

/// Copies what is left (every process of the job has ended, so the pipes are at their
/// end) and stops.
impl Drop for Tagger {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `poll(2)` on `fds` for at most `timeout_ms` (`-1`: no limit): the number of ready
/// descriptors (their `revents` set), 0 on timeout.
pub(super) fn poll_fds(
    fds: &mut [libc::pollfd],
    timeout_ms: libc::c_int,
) -> std::io::Result<usize> {
    // SAFETY: `fds` is a valid, exclusively borrowed array of `fds.len()` pollfds.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Copies until every pipe is at its end, or `stop` is set and nothing more is ready.
fn copy_tagged(mut streams: Vec<Stream>, stop: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    while !streams.is_empty() {
        let stopping = stop.load(Ordering::Relaxed);
        let mut fds: Vec<libc::pollfd> = streams
            .iter()
            .map(|s| libc::pollfd {
                fd: s.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let timeout = if stopping { 0 } else { POLL_MS };
        let n = poll_fds(&mut fds, timeout).unwrap_or(0);
        if n == 0 {
            if stopping {
                break;
            }
            continue;
        }
        let mut ended = Vec::new();
        for (i, p) in fds.iter().enumerate() {
            if p.revents == 0 {
                continue;
            }
            let s = &mut streams[i];
            // SAFETY: `buf` is a valid buffer of its length; the descriptor is ours.
            let got = unsafe { libc::read(s.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if got > 0 {
                s.partial.extend_from_slice(&buf[..got as usize]);
                emit_lines(s, false);
            } else if got == 0 || p.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                ended.push(i);
            }
        }
        for i in ended.into_iter().rev() {
            let mut s = streams.swap_remove(i);
            emit_lines(&mut s, true);
        }
    }
    for mut s in streams {
        emit_lines(&mut s, true);
    }
}

/// Writes the complete lines of `s` (and the incomplete rest if `all`), each prefixed.
fn emit_lines(s: &mut Stream, all: bool) {
    let cut = if all {
        s.partial.len()
    } else {
        match s.partial.iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None => return,
        }
    };
    if cut == 0 {
        return;
    }
    let mut out = Vec::with_capacity(cut + 32);
    for line in s.partial[..cut].split_inclusive(|&b| b == b'\n') {
        out.extend_from_slice(s.prefix.as_bytes());
        out.extend_from_slice(line);
    }
    if out.last() != Some(&b'\n') {
        out.push(b'\n');
    }
    s.partial.drain(..cut);
    // One write per batch of whole lines (std's write_all loops only on a short write).
    let _ = if s.stderr {
        std::io::stderr().lock().write_all(&out)
    } else {
        std::io::stdout().lock().write_all(&out)
    };
}
