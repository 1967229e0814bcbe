//! The wait loop: watches the ranks, books their ends, forwards signals, applies the
//! grace period, and at the end takes down every process of the job ([`super::sweep`]).
#![allow(unsafe_code)] // waitid, kill

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use crate::jobctl::rank_state;
use crate::shm::{Fabric, MemfdRegion};

use super::signals::{signal_name, SignalGuard};
use super::sweep;
use super::{LaunchOptions, EXIT_NOT_FINALIZED, EXIT_TIMEOUT, TICK};

/// A started rank: the leader of its own process group (pgid = its pid), which its
/// helpers and forked children inherit.
struct Rank {
    rank: u32,
    child: Child,
    /// Not exited yet. An exited rank stays an unreaped zombie until the job ends, so
    /// that neither its pid nor its process group id can be reused meanwhile.
    alive: bool,
    /// The last signal the launcher sent it (its death by that signal is not news).
    sent: Option<i32>,
}

impl Rank {
    fn pid(&self) -> libc::pid_t {
        self.child.id() as libc::pid_t
    }

    /// Sends `sig` to the rank's process group and to the rank itself (in case it left
    /// the group). Both ids are reserved: the rank is not reaped before the job ends.
    fn signal(&self, sig: i32) {
        // SAFETY: kill takes integers only; the pid is our unreaped child and leads its group.
        unsafe {
            libc::kill(-self.pid(), sig);
            libc::kill(self.pid(), sig);
        }
    }

    /// The rank's exit status if it has exited, without reaping it (`WNOWAIT`).
    fn peek_exit(&self) -> io::Result<Option<ExitStatus>> {
        // SAFETY: siginfo_t is plain data; waitid fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        // SAFETY: `info` is a valid out-pointer; the pid is our child.
        if unsafe { libc::waitid(libc::P_PID, self.pid() as libc::id_t, &mut info, flags) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: waitid filled `info` for a child state change (or left it zeroed).
        let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
        if pid == 0 {
            return Ok(None);
        }
        // The `wait` status encoding ExitStatus::from_raw expects.
        let raw = match info.si_code {
            libc::CLD_EXITED => (status & 0xff) << 8,
            libc::CLD_KILLED => status & 0x7f,
            libc::CLD_DUMPED => (status & 0x7f) | 0x80,
            _ => return Ok(None),
        };
        Ok(Some(ExitStatus::from_raw(raw)))
    }
}

/// The wait loop's state.
pub(super) struct Watch<'a> {
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
    /// The job's time limit: when it ends, and the option or variable that set it.
    deadline: Option<(Instant, Duration, &'static str)>,
    /// The time limit ended the job.
    timed_out: bool,
}

impl<'a> Watch<'a> {
    pub(super) fn new(
        opts: &'a LaunchOptions,
        fab: &'a Fabric<MemfdRegion>,
        model: Option<&'a crate::fpga::remote::ModelHost>,
        limit: Option<(Duration, &'static str)>,
    ) -> Self {
        Watch {
            deadline: limit.map(|(t, from)| (Instant::now() + t, t, from)),
            timed_out: false,
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

    pub(super) fn started(&mut self, rank: u32, child: Child) {
        self.ranks.push(Rank {
            rank,
            child,
            alive: true,
            sent: None,
        });
    }

    /// Rank `failed_rank` could not be started: the job cannot run; end the others now.
    pub(super) fn abort_start(&mut self, failed_rank: u32) {
        self.mark_lost(failed_rank);
        for r in &mut self.ranks {
            r.signal(libc::SIGKILL);
            r.alive = false;
        }
        self.end_processes();
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

    /// Waits for every rank, then ends what is left of the job; returns the job's status.
    pub(super) fn run(mut self, sigs: &SignalGuard) -> i32 {
        loop {
            let timeout = match self.kill_at {
                Some(t) if !self.killed => t.saturating_duration_since(Instant::now()).min(TICK),
                _ => TICK,
            };
            if let Some(s) = sigs.wait(timeout) {
                self.on_any_signal(s);
            }
            self.reap(sigs);
            if self.alive() == 0 {
                break;
            }
            self.check_time_limit();
            if let Some(t) = self.kill_at {
                if !self.killed && Instant::now() >= t {
                    let n = self.alive();
                    let them = if n == 1 { "it" } else { "them" };
                    let after = match self.signalled {
                        Some(s) => format!("{} and ", signal_name(s)),
                        None if self.timed_out => "SIGTERM and ".to_string(),
                        None => String::new(),
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
        self.end_processes();
        if let Some(s) = sigs.drain() {
            self.signalled.get_or_insert(s);
        }
        match (self.timed_out, self.signalled, self.first_failure) {
            (true, _, _) => EXIT_TIMEOUT,
            (false, Some(s), _) => 128 + s,
            (false, None, Some(code)) => code,
            (false, None, None) => 0,
        }
    }

    /// Ends the job if its time limit has passed: `SIGTERM` to every rank still running,
    /// `SIGKILL` after the grace period; the job's status is [`EXIT_TIMEOUT`].
    fn check_time_limit(&mut self) {
        let Some((at, limit, from)) = self.deadline else {
            return;
        };
        if self.timed_out || self.signalled.is_some() || Instant::now() < at {
            return;
        }
        self.timed_out = true;
        say!(
            "the job's time limit of {} s ({from}) has passed; sending SIGTERM to {} (SIGKILL after {} s); exit status {EXIT_TIMEOUT}",
            limit.as_secs_f64(),
            ranks(self.alive()),
            self.opts.grace.as_secs_f64()
        );
        self.kill_all(libc::SIGTERM);
        let t = Instant::now() + self.opts.grace;
        self.kill_at = Some(self.kill_at.map_or(t, |k| k.min(t)));
    }

    /// Every rank has exited: kills what remains of their process groups (helpers,
    /// forked children, orphans), reaps the ranks, then the orphans that came to the
    /// launcher as their subreaper.
    fn end_processes(&mut self) {
        let groups: Vec<libc::pid_t> = self.ranks.iter().map(Rank::pid).collect();
        for r in &self.ranks {
            r.signal(libc::SIGKILL);
        }
        for r in &mut self.ranks {
            let _ = r.child.wait();
        }
        sweep::orphans(&groups, self.fab.region().file());
    }

    /// Sends `sig` to every rank still running (and its group).
    fn kill_all(&mut self, sig: i32) {
        if sig == libc::SIGKILL {
            self.killed = true;
        }
        for r in self.ranks.iter_mut().filter(|r| r.alive) {
            r.signal(sig);
            r.sent = Some(sig);
        }
    }

    fn on_any_signal(&mut self, s: i32) {
        match s {
            libc::SIGCHLD => {}
            // Ctrl-Z: the ranks are not in the terminal's foreground group; stop them
            // with the launcher, and continue them with it (`fg`, `bg`).
            libc::SIGTSTP => {
                for r in &self.ranks {
                    r.signal(libc::SIGSTOP);
                }
                // SAFETY: kill with integers, to this process: it stops here until SIGCONT.
                unsafe { libc::kill(libc::getpid(), libc::SIGSTOP) };
            }
            libc::SIGCONT => {
                for r in &self.ranks {
                    r.signal(libc::SIGCONT);
                }
            }
            s => self.on_signal(s),
        }
    }

    fn on_signal(&mut self, s: i32) {
        let n = self.alive();
        if self.signalled.is_some() || self.timed_out {
            let when = if self.signalled.is_some() {
                "again"
            } else {
                "after the time limit"
            };
            say!("got {} {when}; killing the {}", signal_name(s), ranks(n));
            self.kill_all(libc::SIGKILL);
            return;
        }
        self.signalled = Some(s);
        // Forwarded as it is: a Ctrl-C reaches the ranks as SIGINT, as if they were in the
        // terminal's foreground process group themselves.
        say!(
            "got {0}; sending {0} to {1} (SIGKILL after {2} s)",
            signal_name(s),
            ranks(n),
            self.opts.grace.as_secs_f64()
        );
        self.kill_all(s);
        let t = Instant::now() + self.opts.grace;
        self.kill_at = Some(self.kill_at.map_or(t, |k| k.min(t)));
    }

    fn reap(&mut self, sigs: &SignalGuard) {
        // Signals the launcher got before a rank ended come first: a rank that died of a
        // signal sent to the whole process group (the terminal's Ctrl-C) is then part of
        // the interrupted job, not a failure of its own. The kernel queues a group's
        // signal to every member before any of them can end, so this is deterministic.
        while let Some(s) = sigs.wait(Duration::ZERO) {
            self.on_any_signal(s);
        }
        for i in 0..self.ranks.len() {
            if !self.ranks[i].alive {
                continue;
            }
            match self.ranks[i].peek_exit() {
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
        if let Some(code) = self.fab.ctl().exit_request() {
            // A rank asked the job to end with this status (`shmem_global_exit`): the
            // job's status, and the ranks that end with it are no failures.
            if self.first_failure.is_none() && self.signalled.is_none() && !self.timed_out {
                say!(
                    "rank {rank} (pid {pid}) ended; a rank asked the job to end with status {code}"
                );
                self.first_failure = Some(code);
                if self.alive() > 0 {
                    self.kill_at = Some(Instant::now() + self.opts.grace);
                }
            }
            return;
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
                let expected = sent == Some(s) || self.signalled.is_some_and(|g| s == g);
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
        if self.first_failure.is_none() && self.signalled.is_none() && !self.timed_out {
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
