//! The job launcher behind `skifrun` (spec: "The rest of the C ABI" leaves job start-up to
//! the implementation; this is ours).
//!
//! ```text
//! skifrun -n N [--wait spin|fixed|fixed:<us>|block] [--grace SECS] [--ports P]
//!              [--lane-kb K] [--driver shm|fpga-model] [--torus XxYxZ] -- program args...
//! ```
//!
//! The launcher creates the job's segment (an anonymous memfd, see [`crate::shm`]), starts
//! `N` copies of the program, watches them, and tears the job down when one fails.
//! [`launch`] is the whole launcher as a library call, so that a tool can re-start itself as
//! an `N`-rank job ([`self_launch`]); the `skifrun` binary is a thin command-line wrapper.
//!
//! ## Options
//! | option | default | meaning |
//! | --- | --- | --- |
//! | `-n N` | required | number of ranks (1..=1024, `shm::MAX_RANKS`) |
//! | `--wait P` | `SKIFCH_WAIT`, else `fixed` | waiting policy of the ranks' blocking calls ([`WaitPolicy`]) |
//! | `--grace S` | 3 | seconds that survivors get to exit on their own after a failure or after SIGTERM |
//! | `--ports P` | `SKIFCH_PORTS`, else 4 | ports per rank |
//! | `--lane-kb K` | `SKIFCH_LANE_KB`, else by job size | bytes of each lane, in KiB (power of two) |
//! | `--driver D` | `SKIFCH_DRIVER`, else `shm` | `shm`, or `fpga-model`: the FPGA adapter driver over the device model, which the launcher hosts ([`crate::fpga::remote`]) |
//! | `--torus XxYxZ` | most cube-like for N | `fpga-model` only: the torus; X·Y·Z must be N (rank r is node r) |
//!
//! ## What each rank gets
//! * Environment: `SKIFCH_RANK`, `SKIFCH_SIZE`, `SKIFCH_FD` (the inherited segment
//!   descriptor), `SKIFCH_DRIVER` (`shm` or `fpga-model`), and `SKIFCH_WAIT` when
//!   `--wait` is given; with `fpga-model` also `SKIFCH_FPGA_FD` (this rank's node window,
//!   a memfd no other rank gets) and `SKIFCH_PORTS` when `--ports` is given.
//!   [`crate::init`] reads them; a program started without `skifrun` is a 1-rank job.
//! * Standard input for rank 0 only (the others read `/dev/null`); stdout and stderr are
//!   shared with the launcher.
//! * `PR_SET_PDEATHSIG = SIGKILL`: if the launcher dies (even by `kill -9`), every rank dies
//!   with it, and the segment — referenced only by these processes — vanishes with them
//!   (the device model of `fpga-model` runs in the launcher's threads and its node windows
//!   are memfds too). Nothing is ever left in `/dev/shm`.
//!
//! ## Failure handling
//! A rank **fails** when it exits non-zero, is killed by a signal, or exits 0 after joining
//! the job without finalizing it (dropping its job handle, `SkifCh_Finalize`; note that
//! `std::process::exit` skips destructors). A rank that leaves without finalizing — failed
//! or not — is marked *lost* in the segment at once, which wakes every blocked call of the
//! peers: they return [`Error::PeerLost`] (C: `EPIPE`) within milliseconds.
//!
//! After the first failure the survivors get the grace period (`--grace`) to notice and
//! exit on their own; whoever is still running after it is killed with `SIGKILL`. Each
//! failing rank gets one line on stderr, e.g.
//! `skifrun: rank 2 (pid 1234) was killed by signal 9 (SIGKILL)`.
//!
//! `SIGINT`, `SIGTERM` or `SIGHUP` to the launcher: `SIGTERM` goes to every rank, `SIGKILL`
//! after the grace period (at once on a second such signal).
//!
//! A rank that never joins the job (never calls `init`, e.g. `skifrun -n 2 -- hostname`) and
//! exits 0 is not a failure, but it is still marked lost so that peers waiting for it
//! do not hang.
//!
//! ## Exit status
//! | status | when |
//! | --- | --- |
//! | 0 | every rank exited 0 (and finalized, if it joined the job) |
//! | the failing rank's status | the first rank to fail exited non-zero |
//! | 128 + signal | the first rank to fail was killed by that signal |
//! | [`EXIT_NOT_FINALIZED`] (1) | the first rank to fail exited 0 without finalizing |
//! | 128 + signal | the launcher got `SIGINT`/`SIGTERM`/`SIGHUP` (takes precedence) |
//! | [`EXIT_CANNOT_EXECUTE`] (126), [`EXIT_NOT_FOUND`] (127) | the program could not be started |
//! | 1 (`skifrun`) | the launcher itself failed (segment creation, …); 2: bad arguments |
//!
//! ## Limits
//! The launcher blocks `SIGINT`, `SIGTERM`, `SIGHUP` and `SIGCHLD` in the calling thread
//! while [`launch`] runs and polls them (10 ms tick). In a process with other threads that
//! do not block them, such a signal may be delivered elsewhere (a terminating signal then
//! ends the process, and the ranks die with it through `PDEATHSIG`). Call [`launch`] early
//! in `main`, from the thread that will wait: `PDEATHSIG` fires when the *thread* that
//! started a rank exits.
#![allow(unsafe_code)] // signal mask and sigtimedwait, kill, prctl in the child before exec

use std::ffi::OsString;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::jobctl::rank_state;
use crate::shm::{Fabric, Layout, Params};
use skifch::{Error, Result, WaitPolicy};

use crate::shm::MemfdRegion;

/// Prints one `skifrun:` line on stderr with a single `write`, so that it does not
/// interleave with the ranks' output on the same pipe (`eprintln!` may write in pieces).
macro_rules! say {
    ($($arg:tt)*) => {
        say_line(format!($($arg)*))
    };
}

fn say_line(msg: String) {
    use std::io::Write;
    let line = format!("skifrun: {msg}\n");
    let _ = io::stderr().lock().write_all(line.as_bytes());
}

/// Exit status when the first rank to fail exited 0 without finalizing.
pub const EXIT_NOT_FINALIZED: i32 = 1;
/// Exit status when the program exists but cannot be executed (as in a shell).
pub const EXIT_CANNOT_EXECUTE: i32 = 126;
/// Exit status when the program is not found (as in a shell).
pub const EXIT_NOT_FOUND: i32 = 127;
/// Default grace period.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(3);

/// Polling period of the wait loop (a child's exit wakes it at once through `SIGCHLD`).
const TICK: Duration = Duration::from_millis(10);

/// The driver the ranks of a launched job use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriverKind {
    /// The shared-memory emulator ([`crate::shm`]).
    #[default]
    Shm,
    /// The FPGA adapter driver over the device model, which the launcher hosts
    /// ([`crate::fpga::remote`]); one torus node per rank.
    FpgaModel,
}

impl DriverKind {
    /// Parses a `--driver` / `SKIFCH_DRIVER` value.
    ///
    /// ```
    /// use skifch_drivers::launch::DriverKind;
    /// assert_eq!(DriverKind::parse("fpga-model")?, DriverKind::FpgaModel);
    /// assert!(DriverKind::parse("ib").is_err());
    /// # Ok::<(), skifch::Error>(())
    /// ```
    pub fn parse(s: &str) -> Result<DriverKind> {
        match s {
            "shm" => Ok(DriverKind::Shm),
            crate::FPGA_MODEL => Ok(DriverKind::FpgaModel),
            _ => Err(Error::InvalidArgument(
                format!("driver {s:?}: unknown (known: shm, {})", crate::FPGA_MODEL).into(),
            )),
        }
    }

    /// `SKIFCH_DRIVER` when set (and not empty), else [`DriverKind::Shm`].
    pub fn from_env() -> Result<DriverKind> {
        match std::env::var("SKIFCH_DRIVER") {
            Ok(v) if !v.is_empty() => DriverKind::parse(&v).map_err(|_| {
                Error::InvalidArgument(
                    format!(
                        "SKIFCH_DRIVER={v:?}: unknown driver (known: shm, {})",
                        crate::FPGA_MODEL
                    )
                    .into(),
                )
            }),
            _ => Ok(DriverKind::Shm),
        }
    }

    /// The value of `SKIFCH_DRIVER` / `--driver`.
    pub fn name(self) -> &'static str {
        match self {
            DriverKind::Shm => "shm",
            DriverKind::FpgaModel => crate::FPGA_MODEL,
        }
    }
}

/// What to launch and how (the options of `skifrun`; see the [module docs](self)).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LaunchOptions {
    /// Number of ranks.
    pub nranks: u32,
    /// The program (searched in `PATH` when it has no `/`).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// `SKIFCH_WAIT` for the ranks; `None` leaves the environment as it is.
    pub wait: Option<WaitPolicy>,
    /// Time survivors get after a failure or a forwarded `SIGTERM` before `SIGKILL`.
    pub grace: Duration,
    /// Ports per rank (`None`: `SKIFCH_PORTS` or the default).
    pub ports: Option<u32>,
    /// Lane size in KiB (`None`: `SKIFCH_LANE_KB` or a default for the job size).
    pub lane_kb: Option<u32>,
    /// The driver.
    pub driver: DriverKind,
    /// `fpga-model` only: the torus (X·Y·Z must equal `nranks`; `None`: the most
    /// cube-like one, [`crate::fpga::remote::default_dims`]).
    pub torus: Option<fpga::regs::Dims>,
}

impl LaunchOptions {
    /// `nranks` copies of `program` without arguments, everything else by default.
    pub fn new(nranks: u32, program: impl Into<OsString>) -> Self {
        LaunchOptions {
            nranks,
            program: program.into(),
            args: Vec::new(),
            wait: None,
            grace: DEFAULT_GRACE,
            ports: None,
            lane_kb: None,
            driver: DriverKind::Shm,
            torus: None,
        }
    }

    /// Sets the program's arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// The segment parameters: `--ports`/`--lane-kb`, else the environment, else defaults.
    /// For `fpga-model` the segment only carries the job state (one port, smallest lanes).
    pub fn params(&self) -> Result<Params> {
        if self.nranks == 0 {
            return Err(Error::InvalidArgument(
                "a job needs at least one rank (-n 1 or more)".into(),
            ));
        }
        if self.driver == DriverKind::FpgaModel {
            self.fpga_dims()?;
            if let Some(p) = self.ports {
                if !(1..=crate::fpga::remote::MAX_PORTS).contains(&p) {
                    return Err(Error::InvalidArgument(
                        format!(
                            "--ports {p}: the fpga-model driver has 1..={} ports per rank",
                            crate::fpga::remote::MAX_PORTS
                        )
                        .into(),
                    ));
                }
            }
            if self.lane_kb.is_some() {
                return Err(Error::InvalidArgument(
                    "--lane-kb sizes the shm driver's lanes; the fpga-model driver's rings are fixed (FpgaConfig)".into(),
                ));
            }
            let p = Params {
                nranks: self.nranks,
                nports: 1,
                lane_bytes: crate::shm::layout::MIN_LANE,
            };
            Layout::new(p)?;
            return Ok(p);
        }
        if self.torus.is_some() {
            return Err(Error::InvalidArgument(
                "--torus applies to --driver fpga-model only".into(),
            ));
        }
        let mut p = if self.ports.is_some() && self.lane_kb.is_some() {
            // Both given: a bad SKIFCH_PORTS/SKIFCH_LANE_KB in the environment is irrelevant.
            Params {
                nranks: self.nranks,
                nports: Params::DEFAULT_PORTS,
                lane_bytes: 0,
            }
        } else {
            Params::from_env(self.nranks)?
        };
        if let Some(ports) = self.ports {
            p.nports = ports;
            if self.lane_kb.is_none() && std::env::var_os("SKIFCH_LANE_KB").is_none() {
                p.lane_bytes = Params::default_lane_bytes(self.nranks, ports);
            }
        }
        if let Some(kb) = self.lane_kb {
            p.lane_bytes = (kb as usize).saturating_mul(1024);
        }
        Layout::new(p)?;
        Ok(p)
    }
}

impl LaunchOptions {
    /// The torus of an `fpga-model` job: `torus`, which must have exactly `nranks` nodes,
    /// or the default for `nranks`.
    pub fn fpga_dims(&self) -> Result<fpga::regs::Dims> {
        match self.torus {
            Some(d) if d.nodes() == self.nranks => Ok(d),
            Some(d) => Err(Error::InvalidArgument(
                format!(
                    "--torus {d} has {} nodes but -n is {}: the fpga-model driver runs one rank per torus node",
                    d.nodes(),
                    self.nranks
                )
                .into(),
            )),
            None => crate::fpga::remote::default_dims(self.nranks),
        }
    }
}

/// Runs the job described by `opts` to its end and returns the exit status for the
/// launcher (see the [module docs](self) for the rules). Diagnostics about the ranks go to
/// stderr, prefixed `skifrun:`.
///
/// `Err` only when the job cannot be set up: bad options, the segment cannot be created,
/// the signal mask cannot be changed. A program that cannot be started is reported on
/// stderr and gives `Ok(126)` or `Ok(127)`.
///
/// # Examples
/// ```
/// use skifch_drivers::launch::{launch, LaunchOptions};
/// // Programs that never join the job are fine; the status is the first failure's.
/// assert_eq!(launch(&LaunchOptions::new(2, "true"))?, 0);
/// let fail = LaunchOptions::new(3, "sh").args(["-c", "exit $((SKIFCH_RANK + 5))"]);
/// assert!((5..=7).contains(&launch(&fail)?));
/// assert_eq!(launch(&LaunchOptions::new(1, "/no/such/program"))?, 127);
/// # Ok::<(), skifch::Error>(())
/// ```
pub fn launch(opts: &LaunchOptions) -> Result<i32> {
    let params = opts.params()?;
    let fab = crate::shm::create_fabric(params)?;
    // The copy that ranks inherit: `try_clone` gives a descriptor >= 3 (clear of stdio) that
    // is close-on-exec here; only the child clears the flag, just before its exec, so other
    // programs this process may start never see the segment.
    let seg = fab
        .region()
        .file()
        .try_clone()
        .map_err(|e| Error::os("duplicating the job segment descriptor", e))?;
    let sigs = SignalGuard::block()?;
    // After blocking the signals: the model's threads inherit the mask, so a Ctrl-C reaches
    // the wait loop below and never kills the launcher from a model thread.
    let model = match opts.driver {
        DriverKind::Shm => None,
        DriverKind::FpgaModel => Some(crate::fpga::remote::ModelHost::start(
            opts.fpga_dims()?,
            crate::fpga::remote::model_config(),
            crate::fpga::remote::DEFAULT_DMA_BYTES,
        )?),
    };

    let mut job = Watch::new(opts, &fab, model.as_ref());
    for rank in 0..opts.nranks {
        let mut cmd = Command::new(&opts.program);
        cmd.args(&opts.args)
            .env("SKIFCH_RANK", rank.to_string())
            .env("SKIFCH_SIZE", opts.nranks.to_string())
            .env("SKIFCH_FD", seg.as_raw_fd().to_string())
            .env("SKIFCH_DRIVER", opts.driver.name());
        if let Some(w) = opts.wait {
            cmd.env("SKIFCH_WAIT", policy_env(w));
        }
        if rank > 0 {
            cmd.stdin(Stdio::null());
        }
        // fpga-model: this rank's node window, and only this rank's.
        let window = match &model {
            Some(m) => {
                let f = m.window_file(rank).ok_or_else(|| {
                    Error::Bootstrap(format!("the model has no node {rank}").into())
                })?;
                let fd = f
                    .try_clone()
                    .map_err(|e| Error::os("duplicating a node window descriptor", e))?;
                cmd.env("SKIFCH_FPGA_FD", fd.as_raw_fd().to_string());
                if let Some(p) = opts.ports {
                    cmd.env("SKIFCH_PORTS", p.to_string());
                }
                Some(fd)
            }
            None => None,
        };
        let win_fd = window.as_ref().map_or(-1, |f| f.as_raw_fd());
        child_setup(&mut cmd, [seg.as_raw_fd(), win_fd], sigs.old);
        match cmd.spawn() {
            Ok(child) => job.started(rank, child),
            Err(e) => {
                let code = match e.kind() {
                    io::ErrorKind::NotFound => EXIT_NOT_FOUND,
                    io::ErrorKind::PermissionDenied => EXIT_CANNOT_EXECUTE,
                    _ => 1,
                };
                say!(
                    "cannot start {}: {}",
                    opts.program.to_string_lossy(),
                    os_message(&e)
                );
                job.abort_start(rank);
                sigs.drain();
                return Ok(code);
            }
        }
    }
    drop(seg);
    let status = job.run(&sigs);
    drop(model); // stops the device model (bounded)
    Ok(status)
}

/// Re-runs the current program as an `n`-rank job over the driver `SKIFCH_DRIVER` names
/// (default shm), unless this process already is a rank of a job (`SKIFCH_RANK` set):
/// then `None`, and the caller goes on as that rank.
/// Otherwise `Some(exit status)` of the job, which the caller should exit with. Launcher
/// errors are reported on stderr (status 1).
///
/// ```no_run
/// // At the start of main:
/// if let Some(status) = skifch_drivers::launch::self_launch(2) {
///     std::process::exit(status);
/// }
/// let job = skifch_drivers::init()?; // one of the two ranks
/// assert_eq!(job.size(), 2);
/// # Ok::<(), skifch::Error>(())
/// ```
pub fn self_launch(n: u32) -> Option<i32> {
    if std::env::var_os("SKIFCH_RANK").is_some() {
        return None;
    }
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            say!("cannot find this program's path to re-start it as a job: {e}");
            return Some(1);
        }
    };
    let mut opts = LaunchOptions::new(n, exe).args(std::env::args_os().skip(1));
    opts.driver = match DriverKind::from_env() {
        Ok(d) => d,
        Err(e) => {
            say!("{e}");
            return Some(2);
        }
    };
    Some(launch(&opts).unwrap_or_else(|e| {
        say!("{e}");
        1
    }))
}

/// `SKIFCH_WAIT` spelling of a policy (what [`WaitPolicy::parse`] reads back).
fn policy_env(w: WaitPolicy) -> String {
    match w {
        WaitPolicy::Spin => "spin".into(),
        WaitPolicy::Block => "block".into(),
        WaitPolicy::Fixed(d) => format!("fixed:{}", d.as_micros()),
    }
}

/// An OS error's text without std's " (os error N)" suffix.
fn os_message(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Prepares the child side of a rank between fork and exec; `fds` (`-1`: none) are
/// inherited by the program.
fn child_setup(cmd: &mut Command, fds: [i32; 2], old_mask: libc::sigset_t) {
    let parent = std::process::id() as libc::pid_t;
    const SIGKILL: libc::c_ulong = libc::SIGKILL as libc::c_ulong;
    let hook = move || -> io::Result<()> {
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
    // SAFETY: the hook only makes async-signal-safe calls (prctl, getppid,
    // pthread_sigmask, fcntl), allocates nothing and takes no locks.
    unsafe { cmd.pre_exec(hook) };
}

/// The launcher's terminating signals and `SIGCHLD`, blocked in this thread and polled with
/// `sigtimedwait`; the previous mask comes back on drop (and in each rank).
struct SignalGuard {
    set: libc::sigset_t,
    old: libc::sigset_t,
}

impl SignalGuard {
    fn block() -> Result<Self> {
        // SAFETY: sigset_t is plain data; sigemptyset initialises it fully.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid sigset_t; the signal numbers are valid.
        unsafe {
            libc::sigemptyset(&mut set);
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD] {
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
    fn wait(&self, timeout: Duration) -> Option<i32> {
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
    fn drain(&self) -> Option<i32> {
        let mut term = None;
        while let Some(s) = self.wait(Duration::ZERO) {
            if s != libc::SIGCHLD {
                term = Some(s);
            }
        }
        term
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        // SAFETY: `old` is the mask saved by `block`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

/// Sends `sig` to a child that has not been reaped yet (so its pid cannot be reused).
fn signal(child: &Child, sig: i32) {
    // SAFETY: kill takes integers only; the pid is our unreaped child.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
}

/// A started rank.
struct Rank {
    rank: u32,
    child: Child,
    /// Not reaped yet.
    alive: bool,
    /// The last signal the launcher sent it (its death by that signal is not news).
    sent: Option<i32>,
}

/// The wait loop's state.
struct Watch<'a> {
    opts: &'a LaunchOptions,
    fab: &'a Fabric<MemfdRegion>,
    /// The device model of an fpga-model job (its sleepers are woken on a loss).
    model: Option<&'a crate::fpga::remote::ModelHost>,
    ranks: Vec<Rank>,
    /// Exit status owed to the first failure.
    first_failure: Option<i32>,
    /// Terminating signal received by the launcher.
    signalled: Option<i32>,
    /// When survivors get `SIGKILL`.
    kill_at: Option<Instant>,
    killed: bool,
}

impl<'a> Watch<'a> {
    fn new(
        opts: &'a LaunchOptions,
        fab: &'a Fabric<MemfdRegion>,
        model: Option<&'a crate::fpga::remote::ModelHost>,
    ) -> Self {
        Watch {
            opts,
            fab,
            model,
            ranks: Vec::with_capacity(opts.nranks as usize),
            first_failure: None,
            signalled: None,
            kill_at: None,
            killed: false,
        }
    }

    fn started(&mut self, rank: u32, child: Child) {
        self.ranks.push(Rank {
            rank,
            child,
            alive: true,
            sent: None,
        });
    }

    /// Rank `failed_rank` could not be started: the job cannot run; end the others now.
    fn abort_start(&mut self, failed_rank: u32) {
        self.mark_lost(failed_rank);
        for r in &mut self.ranks {
            signal(&r.child, libc::SIGKILL);
            let _ = r.child.wait();
            r.alive = false;
        }
    }

    fn mark_lost(&self, rank: u32) {
        if self.fab.ctl().mark_lost(rank) {
            if let Some(m) = self.model {
                m.wake_all();
            }
        }
    }

    fn alive(&self) -> usize {
        self.ranks.iter().filter(|r| r.alive).count()
    }

    fn run(mut self, sigs: &SignalGuard) -> i32 {
        loop {
            let timeout = match self.kill_at {
                Some(t) if !self.killed => t.saturating_duration_since(Instant::now()).min(TICK),
                _ => TICK,
            };
            // Signals first: a rank dying of the terminal's SIGINT is then not reported
            // as a failure of its own.
            match sigs.wait(timeout) {
                Some(libc::SIGCHLD) | None => {}
                Some(s) => self.on_signal(s),
            }
            self.reap();
            if self.alive() == 0 {
                break;
            }
            if let Some(t) = self.kill_at {
                if !self.killed && Instant::now() >= t {
                    let n = self.alive();
                    let them = if n == 1 { "it" } else { "them" };
                    let after = if self.signalled.is_some() {
                        "SIGTERM and "
                    } else {
                        ""
                    };
                    say!(
                        "{} still running after {after}the {} s grace period; killing {them}",
                        ranks(n),
                        self.opts.grace.as_secs_f64()
                    );
                    self.kill_all(libc::SIGKILL);
                }
            }
        }
        if let Some(s) = sigs.drain() {
            self.signalled.get_or_insert(s);
        }
        match (self.signalled, self.first_failure) {
            (Some(s), _) => 128 + s,
            (None, Some(code)) => code,
            (None, None) => 0,
        }
    }

    fn kill_all(&mut self, sig: i32) {
        if sig == libc::SIGKILL {
            self.killed = true;
        }
        for r in self.ranks.iter_mut().filter(|r| r.alive) {
            signal(&r.child, sig);
            r.sent = Some(sig);
        }
    }

    fn on_signal(&mut self, s: i32) {
        let n = self.alive();
        if self.signalled.is_some() {
            say!("got {} again; killing the {}", signal_name(s), ranks(n));
            self.kill_all(libc::SIGKILL);
            return;
        }
        self.signalled = Some(s);
        say!(
            "got {}; sending SIGTERM to {} (SIGKILL after {} s)",
            signal_name(s),
            ranks(n),
            self.opts.grace.as_secs_f64()
        );
        self.kill_all(libc::SIGTERM);
        let t = Instant::now() + self.opts.grace;
        self.kill_at = Some(self.kill_at.map_or(t, |k| k.min(t)));
    }

    fn reap(&mut self) {
        for i in 0..self.ranks.len() {
            if !self.ranks[i].alive {
                continue;
            }
            match self.ranks[i].child.try_wait() {
                Ok(None) => {}
                Ok(Some(st)) => {
                    self.ranks[i].alive = false;
                    self.exited(i, Some(st));
                }
                Err(_) => {
                    // Someone else reaped it (SIGCHLD ignored by the program embedding us?).
                    self.ranks[i].alive = false;
                    self.exited(i, None);
                }
            }
        }
    }

    /// Books the end of rank `i` (`st` is `None` if its status is unknown).
    fn exited(&mut self, i: usize, st: Option<ExitStatus>) {
        let (rank, pid, sent) = {
            let r = &self.ranks[i];
            (r.rank, r.child.id(), r.sent)
        };
        if let Some(m) = self.model {
            // Its adapter's traffic must not back up into the torus now.
            let _ = m.machine().host_gone(rank as u16);
        }
        let state = self.fab.ctl().rank_state(rank);
        let finalized = state == rank_state::FINALIZED;
        let joined = state != rank_state::STARTING;
        if !finalized {
            // Wakes every blocked peer: they get PeerLost.
            self.mark_lost(rank);
        }
        let (code, msg) = match st.map(|s| (s.code(), s.signal(), s.core_dumped())) {
            Some((Some(0), _, _)) if finalized || !joined => return,
            Some((Some(0), _, _)) => (
                EXIT_NOT_FINALIZED,
                format!(
                    "exited with status 0 without finalizing the job (its peers were told it \
                     is lost; drop the job handle or call SkifCh_Finalize before exiting — \
                     std::process::exit skips destructors); counting it as a failure \
                     (status {EXIT_NOT_FINALIZED})"
                ),
            ),
            Some((Some(c), _, _)) => (c, format!("exited with status {c}")),
            Some((None, Some(s), core)) => {
                let expected = sent == Some(s) || self.signalled == Some(s);
                if expected {
                    return;
                }
                let core = if core { ", core dumped" } else { "" };
                (
                    128 + s,
                    format!("was killed by signal {s} ({}{core})", signal_name(s)),
                )
            }
            _ => (
                1,
                "ended with an unknown status (waitpid failed: is SIGCHLD ignored?)".to_string(),
            ),
        };
        say!("rank {rank} (pid {pid}) {msg}");
        if self.first_failure.is_none() && self.signalled.is_none() {
            self.first_failure = Some(code);
            if self.alive() > 0 {
                self.kill_at = Some(Instant::now() + self.opts.grace);
            }
        }
    }
}

/// "1 rank", "3 ranks".
fn ranks(n: usize) -> String {
    format!("{n} rank{}", if n == 1 { "" } else { "s" })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_env_round_trips() {
        for w in [
            WaitPolicy::Spin,
            WaitPolicy::Block,
            WaitPolicy::Fixed(Duration::from_micros(37)),
        ] {
            assert_eq!(WaitPolicy::parse(&policy_env(w)).unwrap(), w);
        }
    }

    #[test]
    fn params_from_options() {
        let mut o = LaunchOptions::new(3, "x");
        o.ports = Some(2);
        o.lane_kb = Some(8);
        let p = o.params().unwrap();
        assert_eq!((p.nranks, p.nports, p.lane_bytes), (3, 2, 8192));
        o.lane_kb = Some(3); // not a power of two
        assert!(matches!(o.params(), Err(Error::InvalidArgument(_))));
        assert!(matches!(
            LaunchOptions::new(0, "x").params(),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn names_and_messages() {
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(
            os_message(&io::Error::from_raw_os_error(libc::ENOENT)),
            "No such file or directory"
        );
    }
}
