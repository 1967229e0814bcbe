//! `skifrun` as a PMI-1 server: each rank gets one end of a socket pair as `PMI_FD`, and
//! a thread of the launcher answers the "simple PMI" wire protocol on the other ends
//! (the client and the format: [`crate::boot::pmi1`]), so that programs that bootstrap
//! through PMI — ours via [`crate::boot::from_env`], MPICH-built ones — run under
//! `skifrun` as under `mpiexec.hydra`.
//!
//! One node: `PMI_process_mapping` is `(vector,(0,1,N))`. `cmd=abort exitcode=C` asks the
//! job to end with status `C` (as `shmem_global_exit`: [`crate::jobctl::JobCtl::request_exit`]).
//! A rank whose connection ends after `init` and before `finalize` (it died, or exited
//! without finalizing) breaks the job's collectives: the server then closes every
//! connection, so the other ranks' PMI calls fail at once instead of waiting in a
//! barrier that can never complete; so does an abort.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use skifch::{Error, Result};

use crate::boot::pmi1::wire::{self, Message};

/// The limits announced in `cmd=maxes` (hydra's).
const KVSNAME_MAX: usize = 256;
const KEYLEN_MAX: usize = 64;
const VALLEN_MAX: usize = 1024;
/// A rank that sends a longer line without a newline is cut off.
const MAX_LINE: usize = 64 * 1024;

/// The server thread; stopped (and joined) on drop.
pub(super) struct PmiServer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// One rank's connection.
struct Peer {
    sock: Option<UnixStream>,
    pending: Vec<u8>,
    joined: bool,
    finalized: bool,
    in_barrier: bool,
}

impl Peer {
    fn new(sock: UnixStream) -> Peer {
        Peer {
            sock: Some(sock),
            pending: Vec::new(),
            joined: false,
            finalized: false,
            in_barrier: false,
        }
    }
}

impl PmiServer {
    /// Makes one socket pair per rank: the ranks' ends (to pass as `PMI_FD`; close-on-exec
    /// here, cleared in each rank's own exec) and a server serving the other ends.
    pub(super) fn start(
        size: u32,
        on_abort: Box<dyn Fn(i32) + Send>,
    ) -> Result<(PmiServer, Vec<UnixStream>)> {
        let mut theirs = Vec::with_capacity(size as usize);
        let mut peers = Vec::with_capacity(size as usize);
        for _ in 0..size {
            let (ours, rank_end) =
                UnixStream::pair().map_err(|e| Error::os("creating a PMI socket pair", e))?;
            ours.set_nonblocking(true)
                .map_err(|e| Error::os("making a PMI socket non-blocking", e))?;
            peers.push(Peer::new(ours));
            theirs.push(rank_end);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let kvsname = format!("skifrun_{}", std::process::id());
        let thread = std::thread::Builder::new()
            .name("skifrun-pmi".into())
            .spawn(move || {
                State {
                    peers,
                    kvs: HashMap::new(),
                    kvsname,
                    size,
                    on_abort,
                }
                .serve(&flag)
            })
            .map_err(|e| Error::os("starting the PMI server thread", e))?;
        Ok((
            PmiServer {
                stop,
                thread: Some(thread),
            },
            theirs,
        ))
    }
}

impl Drop for PmiServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct State {
    peers: Vec<Peer>,
    kvs: HashMap<String, String>,
    kvsname: String,
    size: u32,
    on_abort: Box<dyn Fn(i32) + Send>,
}

impl State {
    fn serve(mut self, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            let mut fds: Vec<libc::pollfd> = Vec::new();
            let mut who = Vec::new();
            for (i, p) in self.peers.iter().enumerate() {
                if let Some(s) = &p.sock {
                    fds.push(libc::pollfd {
                        fd: s.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    });
                    who.push(i);
                }
            }
            if fds.is_empty() {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            if super::output::poll_fds(&mut fds, 100).is_err() {
                continue;
            }
            for (fd, &i) in fds.iter().zip(&who) {
                if fd.revents != 0 {
                    self.read_from(i);
                }
            }
        }
    }

    /// Reads what rank `i` sent and answers each complete line.
    fn read_from(&mut self, i: usize) {
        let mut buf = [0u8; 4096];
        // The lines a rank sent before its connection ended are served first: a rank that
        // aborts sends `cmd=abort` and exits, and both may be here in one read.
        let mut ended = false;
        loop {
            let Some(sock) = self.peers[i].sock.as_mut() else {
                return;
            };
            match sock.read(&mut buf) {
                Ok(0) => {
                    ended = true;
                    break;
                }
                Ok(n) => self.peers[i].pending.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    ended = true;
                    break;
                }
            }
        }
        while let Some(end) = self.peers[i].pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.peers[i].pending.drain(..=end).take(end).collect();
            let line = String::from_utf8_lossy(&line).into_owned();
            self.handle(i, &line);
            if self.peers[i].sock.is_none() {
                return;
            }
        }
        if ended {
            return self.gone(i);
        }
        if self.peers[i].pending.len() > MAX_LINE {
            say!("PMI: rank {i} sent a line longer than {MAX_LINE} bytes; closing its connection");
            self.gone(i);
        }
    }

    /// Rank `i`'s connection ended. After init and before finalize the job's collectives
    /// can never complete: every connection is closed, so nobody waits for them.
    fn gone(&mut self, i: usize) {
        let p = &mut self.peers[i];
        p.sock = None;
        if p.joined && !p.finalized {
            self.close_all();
        }
    }

    fn close_all(&mut self) {
        for p in &mut self.peers {
            if let Some(s) = p.sock.take() {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
        }
    }

    fn send(&mut self, i: usize, line: String) {
        let Some(sock) = self.peers[i].sock.as_mut() else {
            return;
        };
        // Answers are short and the rank waits for them: a blocking write of the whole.
        let _ = sock.set_nonblocking(false);
        let ok = sock.write_all(line.as_bytes()).is_ok();
        let _ = sock.set_nonblocking(true);
        if !ok {
            self.gone(i);
        }
    }

    fn handle(&mut self, i: usize, line: &str) {
        let m = match Message::parse(line) {
            Ok(m) => m,
            Err(e) => {
                say!("PMI: rank {i}: {e}");
                return self.send(i, "cmd=error rc=-1 msg=malformed_command\n".into());
            }
        };
        let answer = |cmd: &str, attrs: &[(&str, &str)]| {
            wire::command(cmd, attrs).unwrap_or_else(|_| format!("cmd={cmd} rc=-1\n"))
        };
        let reply = match m.cmd.as_str() {
            "init" => {
                self.peers[i].joined = true;
                answer(
                    "response_to_init",
                    &[("pmi_version", "1"), ("pmi_subversion", "1"), ("rc", "0")],
                )
            }
            "get_maxes" => answer(
                "maxes",
                &[
                    ("kvsname_max", &KVSNAME_MAX.to_string()),
                    ("keylen_max", &KEYLEN_MAX.to_string()),
                    ("vallen_max", &VALLEN_MAX.to_string()),
                ],
            ),
            "get_appnum" => answer("appnum", &[("appnum", "0")]),
            "get_universe_size" => answer("universe_size", &[("size", &self.size.to_string())]),
            "get_my_kvsname" => answer("my_kvsname", &[("kvsname", &self.kvsname.clone())]),
            "put" => match (m.get("key"), m.get("value")) {
                (Some(k), Some(v)) if k.len() < KEYLEN_MAX && v.len() < VALLEN_MAX => {
                    self.kvs.insert(k.to_owned(), v.to_owned());
                    answer("put_result", &[("rc", "0"), ("msg", "success")])
                }
                _ => answer("put_result", &[("rc", "-1"), ("msg", "bad_key_or_value")]),
            },
            "get" => {
                let key = m.get("key").unwrap_or("");
                let mapping = format!("(vector,(0,1,{}))", self.size);
                let found = match key {
                    "PMI_process_mapping" => Some(mapping.as_str()),
                    k => self.kvs.get(k).map(String::as_str),
                };
                match found {
                    Some(v) => answer(
                        "get_result",
                        &[("rc", "0"), ("msg", "success"), ("value", v)],
                    ),
                    None => answer("get_result", &[("rc", "-1"), ("msg", "key_not_found")]),
                }
            }
            "barrier_in" => {
                self.peers[i].in_barrier = true;
                if self.peers.iter().all(|p| p.in_barrier) {
                    for j in 0..self.peers.len() {
                        self.peers[j].in_barrier = false;
                        self.send(j, "cmd=barrier_out\n".into());
                    }
                }
                return;
            }
            "finalize" => {
                self.peers[i].finalized = true;
                answer("finalize_ack", &[])
            }
            "abort" => {
                let code = m.get("exitcode").and_then(|c| c.parse().ok()).unwrap_or(1);
                (self.on_abort)(code);
                self.close_all();
                return;
            }
            other => {
                say!("PMI: rank {i} sent an unknown command cmd={other}");
                format!("cmd={other}_response rc=-1 msg=unknown_command\n")
            }
        };
        self.send(i, reply);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::mpsc;

    /// A server state of `n` ranks (no thread) and the ranks' ends; aborts are sent on `tx`.
    fn state(n: u32, tx: mpsc::Sender<i32>) -> (State, Vec<UnixStream>) {
        let (mut peers, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let (ours, rank_end) = UnixStream::pair().unwrap();
            ours.set_nonblocking(true).unwrap();
            peers.push(Peer::new(ours));
            theirs.push(rank_end);
        }
        let on_abort = Box::new(move |c| tx.send(c).unwrap());
        let st = State {
            peers,
            kvs: HashMap::new(),
            kvsname: "t".into(),
            size: n,
            on_abort,
        };
        (st, theirs)
    }

    /// A rank's last lines and the end of its connection in one read: the lines are served
    /// first (an abort's exit code reaches the launcher; a finalize is not a death).
    #[test]
    fn lines_before_the_connection_ends_are_served() {
        let (tx, rx) = mpsc::channel();
        let (mut st, mut ends) = state(2, tx);
        for (r, end) in ends.iter_mut().enumerate() {
            end.write_all(b"cmd=init pmi_version=1 pmi_subversion=1\n")
                .unwrap();
            st.read_from(r);
            // the answer read, as a rank does (unread, a close is a reset, not an end)
            let mut b = [0u8; 256];
            let n = std::io::Read::read(end, &mut b).unwrap();
            assert!(b[..n].starts_with(b"cmd=response_to_init"));
        }
        // rank 1 finalizes and exits: rank 0's connection stays
        let mut one = ends.pop().unwrap();
        one.write_all(b"cmd=finalize\n").unwrap();
        drop(one);
        st.read_from(1);
        assert!(st.peers[0].sock.is_some() && st.peers[1].finalized);
        // rank 0 aborts with 7 and exits at once
        let mut zero = ends.pop().unwrap();
        zero.write_all(b"cmd=abort exitcode=7\n").unwrap();
        drop(zero);
        st.read_from(0);
        assert_eq!(rx.try_recv(), Ok(7));
    }
}
