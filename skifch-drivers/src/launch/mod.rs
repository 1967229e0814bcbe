//! The job launcher behind `skifrun` (spec: "The rest of the C ABI" leaves job start-up to
//! the implementation; this is ours).
//!
//! ```text
//! skifrun -n N [--wait spin|fixed|fixed:<us>|block] [--grace SECS] [--ports P]
//!              [--lane-kb K] [--driver shm|fpga-model] [--torus XxYxZ] [--timeout SECS]
//!              -- program args...
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
//! | `--ports P` | `SKIFCH_PORTS`, else 5 | ports per rank |
//! | `--lane-kb K` | `SKIFCH_LANE_KB`, else by job size | bytes of each lane, in KiB (power of two) |
//! | `--driver D` | `SKIFCH_DRIVER`, else `shm` | `shm`; `fpga-model`: the FPGA adapter driver over the device model, which the launcher hosts ([`crate::fpga::remote`]); `ofi`: the libfabric driver ([`crate::ofi`], bootstrapped over the shm job) |
//! | `--torus XxYxZ` | most cube-like for N | `fpga-model` only: the torus; X·Y·Z must be N (rank r is node r) |
//! | `-x VAR=value` | — | `skifrun` (`LaunchOptions::env`): set in every rank's environment; `-x VAR` passes the launcher's own |
//! | `--bind-to core\|none` | `SKIFMPI_BIND` | `skifrun`: sets `SKIFMPI_BIND` (mpi-lite's CPU binding) |
//! | `--tag-output`, `-l` | off | each output line of a rank prefixed `[1,r]<stdout>:` (Open MPI) or `[r] ` (MPICH) ([`TagOutput`]) |
//! | `-np N`, `--oversubscribe`, `--allow-run-as-root` | — | `skifrun`: mpirun's spelling of `-n`; accepted, no effect |
//! | `--timeout S` | `SKIFRUN_TIMEOUT`, else `MPIEXEC_TIMEOUT` (as MPICH's `mpiexec`), else none | the job's time limit in seconds (0: none): then `SIGTERM` to every rank, `SIGKILL` after the grace period, exit status [`EXIT_TIMEOUT`] (124) |
//!
//! ## What each rank gets
//! * Environment: `SKIFCH_RANK`, `SKIFCH_SIZE` (also as `PMI_RANK`, `PMI_SIZE`,
//!   `OMPI_COMM_WORLD_RANK`, `_SIZE`, `_LOCAL_RANK`, `_LOCAL_SIZE` for launch-aware
//!   tools), `SKIFCH_FD` (the inherited segment
//!   descriptor), `SKIFCH_DRIVER` (`shm` or `fpga-model`), and `SKIFCH_WAIT` when
//!   `--wait` is given; with `fpga-model` also `SKIFCH_FPGA_FD` (this rank's node window,
//!   a memfd no other rank gets) and `SKIFCH_PORTS` when `--ports` is given.
//!   `PMI_FD`: a socket to the launcher's PMI-1 server (`pmi_serve`), so that programs
//!   that bootstrap through PMI-1 ([`crate::boot::from_env`], MPICH-built ones) run under
//!   `skifrun` as under `mpiexec.hydra`; `cmd=abort exitcode=C` ends the job with status C.
//!   [`crate::init`] reads them; a program started without `skifrun` is a 1-rank job.
//! * Standard input for rank 0 only (the others read `/dev/null`); stdout and stderr are
//!   shared with the launcher. A terminal on stdin is forwarded to rank 0 through a pipe,
//!   as `mpirun` does (the ranks are not in the terminal's foreground process group).
//! * Its own process group, which the processes it starts inherit (see "Every process of
//!   the job" below).
//! * `PR_SET_PDEATHSIG = SIGKILL`: if the launcher dies (even by `kill -9`), every rank dies
//!   with it, and the segment — referenced only by these processes — vanishes with them
//!   (the device model of `fpga-model` runs in the launcher's threads and its node windows
//!   are memfds too). Nothing is ever left in `/dev/shm`.
//!
//! ## Every process of the job
//! A rank's helpers (`sh -c 'helper & exec prog'`), its `fork()`s after Init and double
//! forks end with the job, not with their rank: the launcher signals each rank's process
//! group with the rank, and when the job ends (every rank exited) kills what is left of
//! the groups, then — as the job's child subreaper (`PR_SET_CHILD_SUBREAPER`), to which
//! the job's orphans are reparented — every orphan that still holds the segment (one that
//! left its group with `setsid`). The segment descriptor is close-on-exec in the launcher
//! and is cleared only in each rank's own exec; Init closes the inherited number (the job
//! works on a close-on-exec copy), so programs a rank starts after Init do not get it. A
//! helper started *before* Init (the wrapper's `helper &`) inherits it and holds the
//! segment until the job ends. A `kill -9` of the launcher ends the ranks
//! (`PDEATHSIG`) but not their helpers. Exited ranks are kept unreaped until the end, so
//! that no pid or process group id of the job can be reused while the launcher may
//! signal it.
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
//! `SIGINT`, `SIGTERM` or `SIGHUP` to the launcher: the same signal goes to every rank's
//! process group (a Ctrl-C reaches the ranks as `SIGINT`), `SIGKILL` after the grace
//! period (at once on a second such signal). Ranks that die of it are not failures: the
//! job was interrupted, and the launcher exits 128 + the signal (130 for Ctrl-C, as
//! `mpirun`); signals the launcher got are handled before the exits it sees next, so a
//! signal sent to a whole process group gives the same answer every time.
//! `SIGTSTP` (Ctrl-Z) stops every rank's group and then the launcher; `SIGCONT` continues
//! them.
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
//! | the status a rank asked for | a rank asked the job to end with it before the first failure (`shmem_global_exit`: [`crate::jobctl::JobCtl::request_exit`]); ranks that end after the request are not failures |
//! | 128 + signal | the first rank to fail was killed by that signal |
//! | [`EXIT_NOT_FINALIZED`] (1) | the first rank to fail exited 0 without finalizing |
//! | 128 + signal | the launcher got `SIGINT`/`SIGTERM`/`SIGHUP` (takes precedence) |
//! | [`EXIT_TIMEOUT`] (124) | the job's time limit ended it (takes precedence) |
//! | [`EXIT_CANNOT_EXECUTE`] (126), [`EXIT_NOT_FOUND`] (127) | the program could not be started |
//! | 1 (`skifrun`) | the launcher itself failed (segment creation, …); 2: bad arguments |
//!
//! ## Limits
//! The launcher blocks `SIGINT`, `SIGTERM`, `SIGHUP`, `SIGCHLD`, `SIGTSTP` and `SIGCONT` in the calling thread
//! while [`launch`] runs and polls them (10 ms tick). In a process with other threads that
//! do not block them, such a signal may be delivered elsewhere (a terminating signal then
//! ends the process, and the ranks die with it through `PDEATHSIG`). Call [`launch`] early
//! in `main`, from the thread that will wait: `PDEATHSIG` fires when the *thread* that
//! started a rank exits.
//!
//! ## Files
//! * [`options`](LaunchOptions) — what to launch and how;
//! * [`hosts`] — `skifrun --hosts`: a job on several hosts through `mpiexec.hydra`;
//! * `child` — the rank's side between fork and exec, rank 0's standard input;
//! * `output` — `--tag-output`: the ranks' output, line by line, tagged;
//! * `pmi_serve` — the PMI-1 server of the ranks' `PMI_FD`;
//! * `watch` — the wait loop (signals, exits, grace period);
//! * `sweep` — ending every process of the job (process groups, subreaper);
//! * `signals` — the launcher's signal mask and signal names.

use std::io;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::time::Duration;

use skifch::{Error, Result, WaitPolicy};

/// Prints one `skifrun:` line on stderr with a single `write`, so that it does not
/// interleave with the ranks' output on the same pipe (`eprintln!` may write in pieces).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::launch::say_line(format!($($arg)*))
    };
}

mod child;
pub mod hosts;
mod options;
mod output;
mod pmi_serve;
mod signals;
mod sweep;
mod watch;

pub use options::{DriverKind, LaunchOptions, TIMEOUT_ENV};
pub use output::TagOutput;
pub use signals::signal_name;

use child::{child_setup, Stdin0};
use output::Tagger;
use signals::SignalGuard;
use watch::Watch;

pub(crate) fn say_line(msg: String) {
    skifch::diag::line(&format!("skifrun: {msg}"));
}

/// Exit status when the first rank to fail exited 0 without finalizing.
pub const EXIT_NOT_FINALIZED: i32 = 1;
/// Exit status when the program exists but cannot be executed (as in a shell).
pub const EXIT_CANNOT_EXECUTE: i32 = 126;
/// Exit status when the program is not found (as in a shell).
pub const EXIT_NOT_FOUND: i32 = 127;
/// Exit status when the job's time limit (`--timeout`, `SKIFRUN_TIMEOUT`,
/// `MPIEXEC_TIMEOUT`) ended it (as GNU `timeout`).
pub const EXIT_TIMEOUT: i32 = 124;
/// Default grace period.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(3);

/// Polling period of the wait loop (a child's exit wakes it at once through `SIGCHLD`).
const TICK: Duration = Duration::from_millis(10);

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
    let limit = opts.time_limit()?;
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
    let _subreaper = sweep::Subreaper::enable();
    // After blocking the signals: the model's threads inherit the mask, so a Ctrl-C reaches
    // the wait loop below and never kills the launcher from a model thread.
    let model = match opts.driver {
        DriverKind::Shm | DriverKind::Ofi => None,
        DriverKind::FpgaModel => Some(crate::fpga::remote::ModelHost::start(
            opts.fpga_dims()?,
            crate::fpga::remote::model_config(),
            crate::fpga::remote::DEFAULT_DMA_BYTES,
        )?),
    };

    // After blocking the signals, as the model: rank 0's stdin, forwarded from a terminal.
    let mut stdin = Stdin0::new()?;
    let mut job = Watch::new(opts, &fab, model.as_ref(), limit);
    // PMI-1 for programs that bootstrap through it (`boot::from_env`, MPICH-built ones).
    let abort_to = fab.clone();
    let (pmi, pmi_ends) = pmi_serve::PmiServer::start(
        opts.nranks,
        Box::new(move |code| {
            abort_to.ctl().request_exit(code);
        }),
    )?;
    let mut pipes = Vec::new();
    for rank in 0..opts.nranks {
        let mut cmd = Command::new(&opts.program);
        cmd.args(&opts.args)
            .envs(opts.env.iter().map(|(k, v)| (k, v)))
            .envs(rank_env(rank, opts.nranks))
            .env("SKIFCH_FD", seg.as_raw_fd().to_string())
            .env("PMI_FD", pmi_ends[rank as usize].as_raw_fd().to_string())
            .env("SKIFCH_DRIVER", opts.driver.name());
        if let Some(w) = opts.wait {
            cmd.env("SKIFCH_WAIT", policy_env(w));
        }
        cmd.stdin(if rank == 0 {
            stdin.stdio()
        } else {
            Stdio::null()
        });
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
        let pmi_fd = pmi_ends[rank as usize].as_raw_fd();
        child_setup(&mut cmd, [seg.as_raw_fd(), win_fd, pmi_fd], sigs.old);
        if opts.tag_output != TagOutput::Off {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        match cmd.spawn() {
            Ok(mut child) => {
                if let Some(out) = child.stdout.take() {
                    pipes.push((rank, false, out.into()));
                }
                if let Some(err) = child.stderr.take() {
                    pipes.push((rank, true, err.into()));
                }
                job.started(rank, child)
            }
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
    drop(pmi_ends);
    let tagger = match pipes.is_empty() {
        true => None,
        false => Some(Tagger::start(opts.tag_output, pipes)?),
    };
    let status = job.run(&sigs);
    drop(pmi);
    drop(tagger); // the job's processes have ended: copies the rest of their output
    drop(stdin);
    drop(model); // stops the device model (bounded)
    Ok(status)
}

/// Re-runs the current program as an `n`-rank job over the driver `SKIFCH_DRIVER` names
/// (default shm), unless this process already is a rank of a job (started by `skifrun`,
/// `mpiexec.hydra`, `srun`, `mpirun`: [`crate::boot::launched`]): then `None`, and the
/// caller goes on as that rank.
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
    if crate::boot::launched() {
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

/// The environment that says which rank of how many a process is: ours, and those of
/// the process managers that launch-aware tools read (PMI as MPICH's Hydra sets it, Open
/// MPI's). Every rank is on this host, so local rank and size are the global ones.
fn rank_env(rank: u32, size: u32) -> [(&'static str, String); 8] {
    let (r, n) = (rank.to_string(), size.to_string());
    [
        ("SKIFCH_RANK", r.clone()),
        ("SKIFCH_SIZE", n.clone()),
        ("PMI_RANK", r.clone()),
        ("PMI_SIZE", n.clone()),
        ("OMPI_COMM_WORLD_RANK", r.clone()),
        ("OMPI_COMM_WORLD_SIZE", n.clone()),
        ("OMPI_COMM_WORLD_LOCAL_RANK", r),
        ("OMPI_COMM_WORLD_LOCAL_SIZE", n),
    ]
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
