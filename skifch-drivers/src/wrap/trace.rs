//! The tracer: a driver that wraps another and logs its traffic, one line per event, for
//! debugging a port (of a library to SkifCh, or of SkifCh to new hardware).
//!
//! ```text
//! skifch-trace 0.001234 r0 p0 open
//! skifch-trace 0.001301 r0 p0 send 1:0 12 B prefix -> 12 | 00 00 00 00 01 00 00 00 0c 00 00 00
//! skifch-trace 0.001377 r1 p0 recv 0:0 12 B 1 seg tok 0:32 | 00 00 00 00 01 00 00 00 0c 00 00 00
//! skifch-trace 0.001402 r1 p0 complete tok 0:32
//! skifch-trace 0.001422 r1 p0 recv -> peer lost: rank 2
//! ```
//!
//! Seconds since the tracer started, rank, port, then the event: a send's destination,
//! length, mode and result (bytes sent or the error) with the first bytes of the data; a
//! receive's source, length, segments and token with its first bytes; a completion's
//! token; a failed receive. Would-blocks are left out unless asked for (a polling loop makes
//! millions). Each line is written with one `write` call, so ranks can share a file.
#![allow(unsafe_code)] // `unsafe impl Port` and the forwarding of `unsafe fn complete`

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::{IoSlice, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use skifch::driver::{Driver, Port, RawMessage, SendMode, Token};
use skifch::{Error, Job, NetAddr, Result};

/// The environment variable [`TraceConfig::from_env`] reads.
pub const TRACE_ENV: &str = "SKIFCH_TRACE";

/// Where the trace goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceSink {
    /// Standard error.
    Stderr,
    /// A file, appended to; `%r` in the path is replaced by the rank (a file per rank).
    File(PathBuf),
}

/// What the tracer logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceConfig {
    /// Where the lines go.
    pub sink: TraceSink,
    /// Bytes of payload shown per send and receive (hex).
    pub bytes: usize,
    /// Also log sends and receives that return [`Error::WouldBlock`].
    pub would_block: bool,
}

impl TraceConfig {
    /// To stderr, 16 bytes per message, no would-blocks.
    pub fn stderr() -> Self {
        TraceConfig {
            sink: TraceSink::Stderr,
            bytes: 16,
            would_block: false,
        }
    }

    /// Parses the `SKIFCH_TRACE` syntax: `DEST[,bytes=N][,wouldblock]`, where `DEST` is
    /// `stderr` (or `1`) or a file path (`%r` is replaced by the rank). Example:
    /// `SKIFCH_TRACE=/tmp/trace.%r,bytes=32`.
    pub fn parse(spec: &str) -> Result<Self> {
        let mut items = spec.split(',').map(str::trim);
        let dest = items.next().unwrap_or_default();
        let mut c = TraceConfig::stderr();
        c.sink = match dest {
            "" => return Err(bad_spec("no destination (stderr or a file path)".into())),
            "stderr" | "1" => TraceSink::Stderr,
            path => TraceSink::File(path.into()),
        };
        for item in items.filter(|s| !s.is_empty()) {
            match item.split_once('=') {
                Some(("bytes", n)) => {
                    c.bytes = n
                        .parse()
                        .map_err(|_| bad_spec(format!("bytes={n:?}: not a number")))?
                }
                None if item == "wouldblock" => c.would_block = true,
                _ => return Err(bad_spec(format!("unknown option {item:?}"))),
            }
        }
        Ok(c)
    }

    /// The configuration in `SKIFCH_TRACE` ([`TraceConfig::parse`]); `None` when it is
    /// unset, empty or `0`.
    pub fn from_env() -> Result<Option<Self>> {
        match std::env::var(TRACE_ENV) {
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(v)) => Err(bad_spec(format!("{v:?} is not UTF-8"))),
            Ok(s) if matches!(s.trim(), "" | "0") => Ok(None),
            Ok(s) => TraceConfig::parse(&s).map(Some),
        }
    }
}

fn bad_spec(what: String) -> Error {
    Error::Bootstrap(format!("{TRACE_ENV}: {what}").into())
}

/// The shared output of one rank's tracer.
struct Tracer {
    out: Mutex<Box<dyn Write + Send>>,
    t0: Instant,
    rank: u32,
    bytes: usize,
    would_block: bool,
}

impl Tracer {
    fn line(&self, port: u32, f: impl FnOnce(&mut String)) {
        let mut s = format!(
            "skifch-trace {:.6} r{} p{port} ",
            self.t0.elapsed().as_secs_f64(),
            self.rank
        );
        f(&mut s);
        s.push('\n');
        // A trace that cannot be written must not change the traffic it describes.
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = out.write_all(s.as_bytes());
    }

    /// ` | xx xx …` of the first bytes of `parts`.
    fn hex<'a>(&self, s: &mut String, parts: impl Iterator<Item = &'a [u8]>) {
        if self.bytes == 0 {
            return;
        }
        let mut left = self.bytes;
        let mut sep = " |";
        for p in parts {
            for b in &p[..p.len().min(left)] {
                let _ = write!(s, "{sep} {b:02x}");
                sep = "";
            }
            left -= p.len().min(left);
            if left == 0 {
                break;
            }
        }
    }
}

/// A driver whose ports log `D`'s traffic ([module docs](self)). Every other call is `D`'s.
pub struct TraceDriver<D: Driver> {
    inner: Arc<D>,
    /// `None`: tracing off (a pass-through, for a stack of wrappers chosen at run time).
    out: Option<Arc<Tracer>>,
}

impl<D: Driver> TraceDriver<D> {
    /// Wraps `inner`; opens the trace file if the sink is one.
    pub fn new(inner: Arc<D>, cfg: &TraceConfig) -> Result<Self> {
        let rank = inner.rank();
        let out: Box<dyn Write + Send> = match &cfg.sink {
            TraceSink::Stderr => Box::new(std::io::stderr()),
            TraceSink::File(p) => {
                let path = PathBuf::from(p.to_string_lossy().replace("%r", &rank.to_string()));
                let f = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .map_err(|e| Error::os("opening the trace file", e))?;
                Box::new(f)
            }
        };
        Ok(TraceDriver {
            inner,
            out: Some(Arc::new(Tracer {
                out: Mutex::new(out),
                t0: Instant::now(),
                rank,
                bytes: cfg.bytes,
                would_block: cfg.would_block,
            })),
        })
    }

    /// Wraps `inner` with tracing off: every call goes straight through.
    pub fn off(inner: Arc<D>) -> Self {
        TraceDriver { inner, out: None }
    }

    /// The same rank's job over a tracer around `job`'s driver.
    pub fn wrap(job: &Job<D>, cfg: &TraceConfig) -> Result<Job<TraceDriver<D>>> {
        Ok(Job::new(Arc::new(TraceDriver::new(
            job.driver().clone(),
            cfg,
        )?)))
    }

    /// The wrapped driver.
    pub fn inner(&self) -> &Arc<D> {
        &self.inner
    }
}

impl<D: Driver> Driver for TraceDriver<D> {
    type Port = TracePort<D::Port>;
    forward_driver!();
    fn open_port(self: &Arc<Self>, port: u32) -> Result<Self::Port> {
        let r = self.inner.open_port(port);
        if let Some(out) = &self.out {
            out.line(port, |s| match &r {
                Ok(_) => s.push_str("open"),
                Err(e) => {
                    let _ = write!(s, "open -> {e}");
                }
            });
        }
        Ok(TracePort {
            inner: r?,
            port,
            out: self.out.clone(),
        })
    }
}

/// A port of [`TraceDriver`].
pub struct TracePort<P: Port> {
    inner: P,
    port: u32,
    out: Option<Arc<Tracer>>,
}

impl<P: Port> TracePort<P> {
    /// The wrapped port.
    pub fn inner(&self) -> &P {
        &self.inner
    }
}

impl<P: Port> Drop for TracePort<P> {
    fn drop(&mut self) {
        if let Some(out) = &self.out {
            out.line(self.port, |s| s.push_str("close"));
        }
    }
}

// SAFETY: every call forwards to the inner port with the same arguments; the tracer only
// reads the segments of a message between `recv` and returning it, while the inner port's
// promise (obligation 5) holds them valid.
unsafe impl<P: Port> Port for TracePort<P> {
    type Waiter = P::Waiter;
    fn addr(&self) -> NetAddr {
        self.inner.addr()
    }

    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        let r = self.inner.send(dst, iov, mode);
        let Some(out) = &self.out else { return r };
        if out.would_block || !matches!(r, Err(Error::WouldBlock)) {
            let total: usize = iov.iter().map(|s| s.len()).sum();
            out.line(self.port, |s| {
                let m = if mode == SendMode::Whole {
                    "whole"
                } else {
                    "prefix"
                };
                let _ = write!(s, "send {}:{} {total} B {m} -> ", dst.rank(), dst.port());
                match &r {
                    Ok(k) => {
                        let _ = write!(s, "{k}");
                    }
                    Err(e) => {
                        let _ = write!(s, "{e}");
                    }
                }
                out.hex(s, iov.iter().map(|s| &**s));
            });
        }
        r
    }

    fn recv_into(&mut self, msg: &mut RawMessage) -> Result<()> {
        let r = self.inner.recv_into(msg);
        let Some(out) = &self.out else { return r };
        match &r {
            Ok(()) => {
                let m = *msg;
                out.line(self.port, |s| {
                    let _ = write!(
                        s,
                        "recv {}:{} {} B {} seg tok {}:{}",
                        m.src.rank(),
                        m.src.port(),
                        m.len,
                        m.count,
                        m.token.a,
                        m.token.b
                    );
                    let n = (m.count as usize).min(m.segs.len());
                    out.hex(
                        s,
                        m.segs[..n].iter().map(|g| {
                            // SAFETY: `g` is a segment the inner port just returned: `len`
                            // readable bytes that stay unchanged until the message is
                            // completed, which cannot happen during this call.
                            unsafe { std::slice::from_raw_parts(g.ptr, g.len) }
                        }),
                    );
                });
            }
            Err(Error::WouldBlock) if !out.would_block => {}
            Err(e) => out.line(self.port, |s| {
                let _ = write!(s, "recv -> {e}");
            }),
        }
        r
    }

    fn ready(&mut self) -> Result<bool> {
        self.inner.ready()
    }

    unsafe fn complete(&mut self, token: Token) {
        if let Some(out) = &self.out {
            out.line(self.port, |s| {
                let _ = write!(s, "complete tok {}:{}", token.a, token.b);
            });
        }
        // SAFETY: the caller's contract (a token of this port's `recv`, once) is the inner
        // port's: this port's tokens are the inner port's.
        unsafe { self.inner.complete(token) }
    }

    fn waiter(&self) -> P::Waiter {
        self.inner.waiter()
    }
}
