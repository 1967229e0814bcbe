//! A PMI-1 client: the "simple PMI" wire protocol v1.1 that MPICH's `mpiexec.hydra`
//! proxies serve on the socket they pass as `PMI_FD` (and on TCP with `-pmi-port`:
//! `PMI_PORT` + `PMI_ID`), and that Slurm's `srun --mpi=pmi2` serves too.
//!
//! The conversation (MPICH `src/pmi/simple`, the reference client; the format: [`wire`]):
//!
//! | step | client sends | server answers |
//! | --- | --- | --- |
//! | TCP only | `cmd=initack pmiid=<PMI_ID>` | `cmd=initack`, then `cmd=set size=N`, `cmd=set rank=R`, `cmd=set debug=D` |
//! | join | `cmd=init pmi_version=1 pmi_subversion=1` | `cmd=response_to_init … rc=0` |
//! | limits | `cmd=get_maxes` | `cmd=maxes kvsname_max=… keylen_max=… vallen_max=…` |
//! | | `cmd=get_appnum`, `cmd=get_my_kvsname` | `cmd=appnum appnum=…`, `cmd=my_kvsname kvsname=…` |
//! | exchange | `cmd=put kvsname=… key=… value=…` | `cmd=put_result rc=0` |
//! | | `cmd=barrier_in` | `cmd=barrier_out` once every rank sent it (puts are visible after it) |
//! | | `cmd=get kvsname=… key=…` | `cmd=get_result rc=0 value=…` (`rc≠0`: no such key) |
//! | leave | `cmd=finalize` | `cmd=finalize_ack` |
//! | | `cmd=abort exitcode=N` | (the launcher ends the job) |
//!
//! Node locality comes from the server's `PMI_process_mapping` key ([`wire::parse_mapping`]);
//! a server without it gets the ranks' host names exchanged instead.
//!
//! [`Bootstrap::allgather`] puts each rank's bytes as base64 text split into values of at
//! most `vallen_max - 1` characters (the server keeps one byte for C's terminating NUL
//! and silently truncates longer values), under keys `skifch.ag<call>.<rank>.<part>`,
//! then `barrier_in`, then gets every other rank's parts.
//!
//! A server that goes away (end of file, reset) makes the call that was waiting, and
//! every later call, fail with [`Error::Bootstrap`]; `SKIFCH_BOOT_TIMEOUT=<seconds>`
//! also bounds each wait for an answer (default: none, as a barrier waits for the
//! slowest rank; the launcher ends the job when a rank dies).

mod conn;
#[cfg(test)]
mod tests;
pub mod wire;

use std::sync::Mutex;
use std::time::Duration;

use skifch::{Error, Result};

use self::conn::Conn;
use self::wire::Message;
use super::{env_num, number_nodes, Bootstrap};

/// The longest command line the PMI-1 servers read (MPICH's simple PMI `PMIU_MAXLINE`;
/// Slurm's pmi2 plugin refuses longer ones), newline included.
pub const MAX_LINE: usize = 1024;

/// The server's limits (`cmd=maxes`): longest KVS name, key and value, each counting
/// C's terminating NUL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Maxes {
    /// `kvsname_max`.
    pub kvsname: usize,
    /// `keylen_max`.
    pub key: usize,
    /// `vallen_max`.
    pub value: usize,
}

/// A joined PMI-1 connection; finalized on drop.
pub struct Pmi1 {
    rank: u32,
    size: u32,
    nodes: Vec<u32>,
    kvsname: String,
    appnum: i32,
    maxes: Maxes,
    /// Where the server is, for messages: `PMI_FD=8` or `PMI_PORT=host:1234`.
    origin: String,
    state: Mutex<State>,
    /// Held through each collective: calls from several threads of a rank go one at a
    /// time, whole (their puts, barrier and gets never interleave).
    collective: Mutex<()>,
}

struct State {
    conn: Conn,
    /// Number of the next all-gather (keys are never reused: PMI-1 cannot delete).
    calls: u64,
    /// Why the connection is unusable (the server went away, a broken answer, finalize).
    broken: Option<String>,
}

impl Pmi1 {
    /// Joins the PMI-1 server the environment names: `PMI_FD` (with `PMI_RANK`,
    /// `PMI_SIZE`) or else `PMI_PORT` (with `PMI_ID`). `Ok(None)` when neither is set.
    pub fn from_env() -> Result<Option<Pmi1>> {
        let timeout = match env_num("SKIFCH_BOOT_TIMEOUT")? {
            None | Some(0) => None,
            Some(s) => Some(Duration::from_secs(s.into())),
        };
        let required = |name: &str| {
            env_num(name)?.ok_or_else(|| {
                Error::Bootstrap(format!("{name} is not set (the PMI server must set it)").into())
            })
        };
        if let Ok(fd) = std::env::var("PMI_FD") {
            let (rank, size) = (required("PMI_RANK")?, required("PMI_SIZE")?);
            let conn = Conn::inherited(&fd)?;
            Self::join(conn, format!("PMI_FD={fd}"), timeout, Ok((rank, size))).map(Some)
        } else if let Ok(port) = std::env::var("PMI_PORT") {
            let id = required("PMI_ID")?;
            let conn = Conn::connect(&port, timeout.unwrap_or(Duration::from_secs(60)))?;
            Self::join(conn, format!("PMI_PORT={port}"), timeout, Err(id)).map(Some)
        } else {
            Ok(None)
        }
    }

    /// The handshake: `initack` (TCP: `who` is `Err(PMI_ID)`), `init`, the limits, the
    /// KVS name and the process mapping.
    fn join(
        conn: Conn,
        origin: String,
        timeout: Option<Duration>,
        who: std::result::Result<(u32, u32), u32>,
    ) -> Result<Pmi1> {
        conn.set_timeout(timeout)
            .map_err(|e| Error::Bootstrap(format!("{origin}: setting the timeout: {e}").into()))?;
        let mut st = State {
            conn,
            calls: 0,
            broken: None,
        };
        let fail =
            |what: String| Error::Bootstrap(format!("PMI-1 server ({origin}): {what}").into());
        let (rank, size) = match who {
            Ok(rs) => rs,
            Err(id) => {
                st.call(&origin, "initack", &[("pmiid", &id.to_string())], "initack")?;
                let (mut rank, mut size) = (None, None);
                for _ in 0..3 {
                    let m = st.answer(&origin, "initack", "set")?;
                    let num = |v: &str| {
                        v.parse::<u32>()
                            .map_err(|_| fail(format!("bad cmd=set {v:?}")))
                    };
                    if let Some(v) = m.get("rank") {
                        rank = Some(num(v)?);
                    } else if let Some(v) = m.get("size") {
                        size = Some(num(v)?);
                    }
                }
                rank.zip(size)
                    .ok_or_else(|| fail("cmd=set did not give both rank and size".into()))?
            }
        };
        if size == 0 || rank >= size {
            return Err(fail(format!("rank {rank} is not below the size {size}")));
        }
        let init = st.call(
            &origin,
            "init",
            &[("pmi_version", "1"), ("pmi_subversion", "1")],
            "response_to_init",
        )?;
        check_rc(&init, &origin, "init")?;
        if init.get("pmi_version").is_some_and(|v| v != "1") {
            return Err(fail(format!(
                "the server speaks PMI version {:?}, not 1",
                init.get("pmi_version")
            )));
        }
        let m = st.call(&origin, "get_maxes", &[], "maxes")?;
        let max = |k: &str| {
            m.get(k)
                .and_then(|v| v.parse::<usize>().ok())
                .ok_or_else(|| fail(format!("cmd=maxes has no number {k}")))
        };
        let maxes = Maxes {
            kvsname: max("kvsname_max")?,
            key: max("keylen_max")?,
            value: max("vallen_max")?,
        };
        let m = st.call(&origin, "get_appnum", &[], "appnum")?;
        let appnum = m
            .get("appnum")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| fail("cmd=appnum has no number appnum".into()))?;
        let m = st.call(&origin, "get_my_kvsname", &[], "my_kvsname")?;
        let kvsname = m
            .get("kvsname")
            .filter(|k| !k.is_empty())
            .ok_or_else(|| fail("cmd=my_kvsname has no kvsname".into()))?
            .to_owned();
        let mut pmi = Pmi1 {
            rank,
            size,
            nodes: Vec::new(),
            kvsname,
            appnum,
            maxes,
            origin,
            state: Mutex::new(st),
            collective: Mutex::new(()),
        };
        pmi.nodes = match pmi.get("PMI_process_mapping")? {
            Some(text) => number_nodes(&wire::parse_mapping(&text, size).map_err(|e| pmi.fail(e))?),
            None => {
                let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
                number_nodes(&pmi.allgather(host.trim().as_bytes())?)
            }
        };
        Ok(pmi)
    }

    /// The job's key-value space name (`cmd=get_my_kvsname`).
    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// This process's application number in an MPMD launch (`cmd=get_appnum`).
    pub fn appnum(&self) -> i32 {
        self.appnum
    }

    /// The server's limits (`cmd=get_maxes`).
    pub fn maxes(&self) -> Maxes {
        self.maxes
    }

    /// Stores `value` under `key` in the job's KVS; other ranks see it after the next
    /// [`Bootstrap::barrier`]. Both must be free of whitespace and `=` and fit the limits.
    pub fn put(&self, key: &str, value: &str) -> Result<()> {
        if key.len() >= self.maxes.key || value.len() >= self.maxes.value {
            return Err(self.fail(format!(
                "put of key {key:?} ({} characters; value {}) exceeds keylen_max {} / vallen_max {}",
                key.len(),
                value.len(),
                self.maxes.key,
                self.maxes.value
            )));
        }
        let m = self.with(|st, origin| {
            st.call(
                origin,
                "put",
                &[("kvsname", &self.kvsname), ("key", key), ("value", value)],
                "put_result",
            )
        })?;
        check_rc(&m, &self.origin, "put")
    }

    /// The value stored under `key` by any rank before a barrier (`None`: no such key).
    pub fn get(&self, key: &str) -> Result<Option<String>> {
        let m = self.with(|st, origin| {
            st.call(
                origin,
                "get",
                &[("kvsname", &self.kvsname), ("key", key)],
                "get_result",
            )
        })?;
        Ok(match m.get("rc") {
            Some("0") | None => Some(m.get("value").unwrap_or("").to_owned()),
            Some(_) => None,
        })
    }

    fn barrier_in(&self) -> Result<()> {
        self.with(|st, origin| st.call(origin, "barrier_in", &[], "barrier_out").map(drop))
    }

    fn with<T>(&self, f: impl FnOnce(&mut State, &str) -> Result<T>) -> Result<T> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut st, &self.origin)
    }

    fn fail(&self, what: String) -> Error {
        Error::Bootstrap(format!("PMI-1 server ({}): {what}", self.origin).into())
    }

    fn key(call: u64, rank: u32, part: usize) -> String {
        format!("skifch.ag{call}.{rank}.{part}")
    }
}

impl State {
    /// Sends one command and reads the answer, which must be `cmd=<expect>`.
    fn call(
        &mut self,
        origin: &str,
        cmd: &str,
        attrs: &[(&str, &str)],
        expect: &str,
    ) -> Result<Message> {
        let line = wire::command(cmd, attrs)
            .map_err(|e| Error::Bootstrap(format!("PMI-1 ({origin}): {e}").into()))?;
        self.usable(origin, cmd)?;
        if let Err(e) = self.conn.send(&line) {
            let why = closed(&e).unwrap_or_else(|| format!("sending failed: {e}"));
            return Err(self.break_with(origin, cmd, why));
        }
        self.answer(origin, cmd, expect)
    }

    /// Reads the next message, which must be `cmd=<expect>` (the answer to `cmd`).
    fn answer(&mut self, origin: &str, cmd: &str, expect: &str) -> Result<Message> {
        self.usable(origin, cmd)?;
        let line = match self.conn.recv_line() {
            Ok(l) => l,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(self.break_with(
                    origin,
                    cmd,
                    "no answer within SKIFCH_BOOT_TIMEOUT".into(),
                ))
            }
            Err(e) => {
                let why = closed(&e).unwrap_or_else(|| e.to_string());
                return Err(self.break_with(
                    origin,
                    cmd,
                    format!("{why} while waiting for cmd={expect}"),
                ));
            }
        };
        match Message::parse(&line) {
            Ok(m) if m.cmd == expect => Ok(m),
            Ok(_) => {
                Err(self.break_with(origin, cmd, format!("expected cmd={expect}, got {line:?}")))
            }
            Err(e) => Err(self.break_with(origin, cmd, e)),
        }
    }

    fn usable(&self, origin: &str, cmd: &str) -> Result<()> {
        match &self.broken {
            Some(why) => Err(Error::Bootstrap(
                format!("PMI-1 server ({origin}): cmd={cmd}: the connection is unusable: {why}")
                    .into(),
            )),
            None => Ok(()),
        }
    }

    /// Marks the connection unusable (a later answer could belong to any command).
    fn break_with(&mut self, origin: &str, cmd: &str, why: String) -> Error {
        let msg = format!("PMI-1 server ({origin}): cmd={cmd}: {why}");
        self.broken = Some(why);
        Error::Bootstrap(msg.into())
    }
}

/// "the server closed the connection" for the errors that mean it (end of file, a
/// reset: the server closed with our command unread, a broken pipe).
fn closed(e: &std::io::Error) -> Option<String> {
    use std::io::ErrorKind::{BrokenPipe, ConnectionReset, UnexpectedEof};
    match e.kind() {
        UnexpectedEof => Some("the server closed the connection".into()),
        BrokenPipe | ConnectionReset => Some(format!("the server closed the connection ({e})")),
        _ => None,
    }
}

/// An answer's `rc` must be 0 when present (`msg` says why not).
fn check_rc(m: &Message, origin: &str, cmd: &str) -> Result<()> {
    match m.get("rc") {
        None | Some("0") => Ok(()),
        Some(rc) => Err(Error::Bootstrap(
            format!(
                "PMI-1 server ({origin}): cmd={cmd} failed with rc={rc}: {}",
                m.get("msg").unwrap_or("no message")
            )
            .into(),
        )),
    }
}

impl Bootstrap for Pmi1 {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn node_of(&self, rank: u32) -> u32 {
        self.nodes.get(rank as usize).copied().unwrap_or(0)
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let _whole = self.collective.lock().unwrap_or_else(|p| p.into_inner());
        let call = self.with(|st, _| {
            st.calls += 1;
            Ok(st.calls - 1)
        })?;
        // A value within vallen_max whose whole `cmd=put` line also fits the servers' line
        // buffer (MAX_LINE): Slurm's pmi2 plugin answered a 1060-byte put line with
        // "invalid client request" and stored nothing.
        let line = "cmd=put kvsname= key= value=\n".len() + self.kvsname.len() + self.maxes.key;
        let fit = (self.maxes.value.saturating_sub(1)).min(MAX_LINE.saturating_sub(line));
        let values = wire::chunk_values(mine, fit).map_err(|e| self.fail(e))?;
        for (part, v) in values.iter().enumerate() {
            self.put(&Self::key(call, self.rank, part), v)?;
        }
        self.barrier_in()?;
        let missing =
            |key: &str| self.fail(format!("all-gather: key {key} is missing or malformed"));
        let mut all = Vec::with_capacity(self.size as usize);
        for r in 0..self.size {
            if r == self.rank {
                all.push(mine.to_vec());
                continue;
            }
            let key = Self::key(call, r, 0);
            let (count, mut bytes) = self
                .get(&key)?
                .as_deref()
                .and_then(wire::first_value)
                .ok_or_else(|| missing(&key))?;
            for part in 1..count as usize {
                let key = Self::key(call, r, part);
                let more = self
                    .get(&key)?
                    .as_deref()
                    .and_then(wire::b64_decode)
                    .ok_or_else(|| missing(&key))?;
                bytes.extend(more);
            }
            all.push(bytes);
        }
        Ok(all)
    }

    fn barrier(&self) -> Result<()> {
        let _whole = self.collective.lock().unwrap_or_else(|p| p.into_inner());
        self.barrier_in()
    }

    fn abort(&self, exit_code: i32, why: &str) -> Result<()> {
        eprintln!(
            "skifch: rank {} aborts the job with exit code {exit_code}: {why}",
            self.rank
        );
        self.with(|st, origin| {
            st.usable(origin, "abort")?;
            let line = wire::command("abort", &[("exitcode", &exit_code.to_string())])
                .map_err(|e| Error::Bootstrap(e.into()))?;
            let sent = st.conn.send(&line);
            st.broken = Some("this rank aborted the job".into());
            sent.map_err(|e| {
                Error::Bootstrap(format!("PMI-1 server ({origin}): cmd=abort: {e}").into())
            })
        })
    }

    fn finalize(&self) {
        let _ = self.with(|st, origin| {
            st.finalize(origin);
            Ok(())
        });
    }

    fn name(&self) -> &'static str {
        "pmi1"
    }
}

impl State {
    /// `cmd=finalize` once, unless the connection is unusable already.
    fn finalize(&mut self, origin: &str) {
        if self.broken.is_none() {
            // Bounded: a server that stopped answering must not hold up the exit.
            let _ = self.conn.set_timeout(Some(Duration::from_secs(30)));
            let _ = self.call(origin, "finalize", &[], "finalize_ack");
            self.broken = Some("this rank finalized its PMI connection".into());
        }
    }
}

impl Drop for Pmi1 {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        st.finalize(&self.origin);
    }
}
