//! Ending every process of a job, not only the ranks (issue 16: helpers started by a rank,
//! `fork()` after Init, double forks kept the job's segment alive after the launcher left).
//!
//! * Each rank leads its own process group; its children inherit it. The launcher signals
//!   the group with the rank, and kills it when the job ends (see [`super::watch`]).
//! * The launcher is a *child subreaper* while a job runs (`PR_SET_CHILD_SUBREAPER`):
//!   orphans of the job (a double fork, a helper whose rank exited) become its children
//!   instead of init's, so that it can reap those it killed and find the ones that left
//!   their process group (`setsid`) but still hold the job's segment ([`orphans`]).
//!
//! What escapes: a process that left its rank's process group *and* no longer holds the
//! segment (it exec'd: the descriptor is close-on-exec), when its parent outlives the job
//! — the same limit as `mpirun`'s, short of a cgroup per job.
#![allow(unsafe_code)] // prctl, kill, waitpid

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Launches running in this process: the first sets the subreaper flag, the last puts
/// back what was there before.
static REAPING: Mutex<(u32, bool)> = Mutex::new((0, false));

/// Makes this process a child subreaper while the value lives.
pub(super) struct Subreaper;

impl Subreaper {
    pub(super) fn enable() -> Subreaper {
        let mut g = REAPING.lock().unwrap_or_else(|p| p.into_inner());
        if g.0 == 0 {
            let mut was: libc::c_int = 0;
            // SAFETY: PR_GET_CHILD_SUBREAPER writes one int through the valid pointer.
            unsafe { libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &mut was as *mut libc::c_int) };
            g.1 = was != 0;
            // SAFETY: prctl with integer arguments. Without it (old kernel) the orphans go
            // to init, which reaps them; the process groups still end them.
            unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong) };
        }
        g.0 += 1;
        Subreaper
    }
}

impl Drop for Subreaper {
    fn drop(&mut self) {
        let mut g = REAPING.lock().unwrap_or_else(|p| p.into_inner());
        g.0 -= 1;
        if g.0 == 0 && !g.1 {
            // SAFETY: prctl with integer arguments.
            unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0 as libc::c_ulong) };
        }
    }
}

/// Kills and reaps this process's children that belong to the job: members of one of the
/// ranks' process groups `groups` (already sent `SIGKILL`; orphans that came here), or
/// processes holding the job's segment `seg` (open or mapped). Repeats while it finds
/// some (their own children come here when they die), for at most a second.
pub(super) fn orphans(groups: &[libc::pid_t], seg: &File) {
    let Ok(meta) = seg.metadata() else { return };
    let seg = (meta.dev(), meta.ino());
    let me = std::process::id() as libc::pid_t;
    let end = Instant::now() + Duration::from_secs(1);
    loop {
        let found: Vec<libc::pid_t> = children(me)
            .into_iter()
            .filter(|&(pid, pgid)| groups.contains(&pgid) || holds(pid, seg))
            .map(|(pid, _)| pid)
            .collect();
        if found.is_empty() || Instant::now() > end {
            return;
        }
        for &pid in &found {
            // SAFETY: kill with integers; `pid` is our unreaped child (ppid checked).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        for &pid in &found {
            while Instant::now() <= end {
                // SAFETY: waitpid on our own child; a null status pointer is allowed.
                let r = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
                if r != 0 {
                    break; // reaped, or not ours any more
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// `(pid, process group)` of every child of process `parent` (from `/proc/<pid>/stat`).
fn children(parent: libc::pid_t) -> Vec<(libc::pid_t, libc::pid_t)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
            let mut f = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().skip(1);
            let ppid: libc::pid_t = f.next()?.parse().ok()?;
            let pgid: libc::pid_t = f.next()?.parse().ok()?;
            (ppid == parent).then_some((pid, pgid))
        })
        .collect()
}

/// Whether process `pid` has the file `(dev, ino)` open or mapped.
fn holds(pid: libc::pid_t, (dev, ino): (u64, u64)) -> bool {
    let open = std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|d| {
        d.filter_map(|e| e.ok())
            .any(|e| std::fs::metadata(e.path()).is_ok_and(|m| (m.dev(), m.ino()) == (dev, ino)))
    });
    // Mappings: "start-end perms offset dev inode path"; a memfd's path is "/memfd:…".
    open || std::fs::read_to_string(format!("/proc/{pid}/maps")).is_ok_and(|maps| {
        maps.lines().any(|l| {
            let mut f = l.split_whitespace().skip(4);
            f.next().and_then(|i| i.parse::<u64>().ok()) == Some(ino)
                && f.next().is_some_and(|p| p.starts_with("/memfd:"))
        })
    })
}
