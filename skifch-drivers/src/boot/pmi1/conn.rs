//! The connection to the PMI-1 server: the socket inherited as `PMI_FD`, or a TCP
//! connection to `PMI_PORT`. Lines in, lines out; end of file is an error, never a wait.
#![allow(unsafe_code)] // fcntl/fstat on the inherited PMI_FD; send(2) with MSG_NOSIGNAL

use std::io::{self, Read};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use skifch::{Error, Result};

/// A line longer than this is a broken server, not a value (values are about 1 KiB).
const MAX_LINE: usize = 1 << 20;

/// A stream socket to the server, with the bytes read past the last line.
pub(crate) struct Conn {
    /// Any stream socket (a `socketpair` from hydra or Slurm, or TCP): only read, send
    /// and `SO_RCVTIMEO` are used, which do not depend on the address family.
    sock: UnixStream,
    pending: Vec<u8>,
}

impl Conn {
    /// Takes the socket a launcher passed as `PMI_FD=<fd>`, after checking (without taking
    /// ownership) that it is one: a stale variable naming stdin or a file fails here and
    /// that descriptor stays untouched. The process keeps a close-on-exec copy and closes
    /// the inherited number, so programs it starts do not inherit the connection.
    pub(crate) fn inherited(text: &str) -> Result<Conn> {
        let bad = |why: &str| {
            Err(Error::Bootstrap(
                format!("PMI_FD={text:?} {why} (left open)").into(),
            ))
        };
        let Ok(fd) = text.trim().parse::<i32>() else {
            return bad("is not a descriptor number");
        };
        if fd < 3 {
            return bad("is standard input, output or error, not a PMI socket");
        }
        // SAFETY: F_GETFD only inspects the descriptor table entry.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            return bad("is not an open descriptor");
        }
        // SAFETY: `st` is plain data that fstat fills; the descriptor is only inspected.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above; `st` is a valid out-pointer.
        if unsafe { libc::fstat(fd, &mut st) } < 0 || st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
            return bad("is not a socket");
        }
        // SAFETY: F_DUPFD_CLOEXEC creates a new descriptor that nobody else owns.
        let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
        if copy < 0 {
            return Err(Error::last_os("duplicating the PMI_FD socket"));
        }
        // SAFETY: `copy` was just created and is owned by nobody else.
        let owned = unsafe { OwnedFd::from_raw_fd(copy) };
        // SAFETY: `fd` is the launcher's socket (checked above), replaced by our copy; no
        // other code of this process uses the number (the PMI connection is one per
        // process: `boot::from_env` shares it).
        unsafe { libc::close(fd) };
        Ok(Self::new(UnixStream::from(owned)))
    }

    /// Connects to `PMI_PORT=<host>:<port>` (each address the name resolves to, in turn).
    pub(crate) fn connect(port: &str, timeout: Duration) -> Result<Conn> {
        let addrs = port.to_socket_addrs().map_err(|e| {
            Error::Bootstrap(format!("PMI_PORT={port:?} is not a reachable host:port: {e}").into())
        })?;
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    return Ok(Self::new(UnixStream::from(OwnedFd::from(s))));
                }
                Err(e) => last = Some(format!("{addr}: {e}")),
            }
        }
        Err(Error::Bootstrap(
            format!(
                "cannot connect to the PMI server at PMI_PORT={port:?}: {}",
                last.unwrap_or_else(|| "the name resolves to no address".into())
            )
            .into(),
        ))
    }

    /// Over a socket of the caller's (the unit tests' fake servers).
    #[cfg(test)]
    pub(crate) fn from_stream(sock: UnixStream) -> Conn {
        Self::new(sock)
    }

    fn new(sock: UnixStream) -> Conn {
        Conn {
            sock,
            pending: Vec::new(),
        }
    }

    /// Limits each wait for an answer (`None`: no limit).
    pub(crate) fn set_timeout(&self, limit: Option<Duration>) -> io::Result<()> {
        self.sock.set_read_timeout(limit)
    }

    /// Sends `line` whole. A closed peer is an `EPIPE` error, not a `SIGPIPE`.
    pub(crate) fn send(&mut self, line: &str) -> io::Result<()> {
        let mut rest = line.as_bytes();
        while !rest.is_empty() {
            // SAFETY: `rest` is a valid buffer of `rest.len()` bytes for the whole call.
            let n = unsafe {
                libc::send(
                    self.sock.as_raw_fd(),
                    rest.as_ptr().cast(),
                    rest.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            rest = &rest[n as usize..];
        }
        Ok(())
    }

    /// The next line, without its `\n`. End of file is `UnexpectedEof`; a wait longer
    /// than the timeout is `WouldBlock`/`TimedOut`.
    pub(crate) fn recv_line(&mut self) -> io::Result<String> {
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).take(end).collect();
                return String::from_utf8(line).map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidData, "a line is not UTF-8")
                });
            }
            if self.pending.len() > MAX_LINE {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a line longer than {MAX_LINE} bytes"),
                ));
            }
            let mut chunk = [0u8; 4096];
            match self.sock.read(&mut chunk) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    ))
                }
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}
