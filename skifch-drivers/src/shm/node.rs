//! The shm driver for the ranks of one node when no `skifrun` made the job segment: the
//! job was started by `mpiexec.hydra`, `srun` or a PMIx launcher, and what the ranks know
//! of each other comes from a [`Bootstrap`] (issue 21).
//!
//! The node's first rank (its *leader*) creates the segment (a sealed memfd, as `skifrun`
//! does) for the node's ranks; one all-gather tells every rank each rank's process id and
//! the leader's descriptor number, and the other ranks of the node open the same memfd
//! through `/proc/<leader>/fd/<n>` (same user: the segment is mode 0600) and check it as
//! they check one inherited from `skifrun` (sealed size, magic). Nothing is named in any
//! file system; the memory goes with the last process of the node.
//!
//! No launcher watches the ranks for the shm driver here, so each rank watches its node's
//! other ranks itself: a thread waits on their process descriptors (`pidfd_open`) and
//! marks a rank that exits without finalizing lost in the segment — which wakes every
//! sleeper, as `skifrun`'s watcher does (driver obligation 6).
#![allow(unsafe_code)] // pidfd_open and poll

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Weak};

use skifch::{Error, Job, Result};

use super::memfd::check_segment;
use super::{create_fabric, Fabric, MemfdRegion, Params, RingDriver, ShmJob};
use crate::boot::Bootstrap;
use crate::jobctl::rank_state;

/// The ranks of `boot`'s job on this process's node, in rank order (the shm job's ranks
/// `0..`), and this process's index among them.
pub fn node_ranks(boot: &dyn Bootstrap) -> (Vec<u32>, u32) {
    let me = boot.rank();
    let node = boot.node_of(me);
    let local: Vec<u32> = (0..boot.size())
        .filter(|&r| boot.node_of(r) == node)
        .collect();
    let idx = local.iter().position(|&r| r == me).unwrap_or(0) as u32;
    (local, idx)
}

/// Collective over the whole job of `boot`: joins a shm job of the ranks on this node
/// (see [`node_ranks`]; the job's rank of global rank `local[i]` is `i`). Ports and lane
/// size come from `SKIFCH_PORTS` and `SKIFCH_LANE_KB` as under `skifrun` (the leader's).
pub fn node_job(boot: &dyn Bootstrap) -> Result<ShmJob> {
    let (local, idx) = node_ranks(boot);
    let leader = idx == 0;
    let made = if leader {
        Some(create_fabric(Params::from_env(local.len() as u32)?)?)
    } else {
        None
    };
    let fd = made
        .as_ref()
        .map_or(-1, |f| f.region().file().as_raw_fd() as i64);
    let mine = format!("{} {fd}", std::process::id());
    // Everyone's contribution, so that each rank learns its peers' pids (the watcher's).
    let all = boot.allgather(mine.as_bytes())?;
    let parse = |r: u32| -> Result<(u32, i64)> {
        let s = all
            .get(r as usize)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("");
        let mut it = s.split(' ').map(str::parse::<i64>);
        match (it.next(), it.next()) {
            (Some(Ok(p)), Some(Ok(f))) if p > 0 && p <= u32::MAX as i64 => Ok((p as u32, f)),
            _ => Err(Error::Bootstrap(
                format!(
                    "rank {r} published {s:?} for the node's shared memory, not \"<pid> <fd>\""
                )
                .into(),
            )),
        }
    };
    let pids = local
        .iter()
        .map(|&r| parse(r).map(|p| p.0))
        .collect::<Result<Vec<_>>>()?;
    let fab = match made {
        Some(f) => f,
        None => {
            let (lpid, lfd) = parse(local[0])?;
            Arc::new(Fabric::attach(MemfdRegion::map(open_leaders(
                lpid, lfd, local[0],
            )?)?)?)
        }
    };
    if fab.layout().params.nranks != local.len() as u32 {
        return Err(Error::Bootstrap(
            format!(
                "the node's segment is for {} ranks, but the launcher puts {} on this node",
                fab.layout().params.nranks,
                local.len()
            )
            .into(),
        ));
    }
    let drv = Arc::new(RingDriver::new(fab.clone(), idx, "shm")?);
    // Every rank of the node has mapped the segment before the leader may exit.
    boot.barrier()?;
    watch(Arc::downgrade(&fab), idx, pids);
    Ok(Job::new(drv))
}

/// The leader's segment, opened through its descriptor table and checked.
fn open_leaders(pid: u32, fd: i64, rank: u32) -> Result<File> {
    let path = format!("/proc/{pid}/fd/{fd}");
    let file = OpenOptions::new().read(true).write(true).open(&path).map_err(|e| {
        Error::Bootstrap(
            format!(
                "cannot open the node's shared memory at {path} (made by rank {rank}): {e}; \
                 the ranks of one node must run as one user with /proc readable (not mounted hidepid)"
            )
            .into(),
        )
    })?;
    check_segment(file.as_raw_fd(), super::layout::MAGIC)
        .map_err(|why| Error::Bootstrap(format!("{path} (rank {rank}'s segment) {why}").into()))?;
    Ok(file)
}

/// Starts the thread that marks a rank of the node lost when its process ends without
/// finalizing. It ends when the segment is dropped (checked at least every 250 ms).
fn watch(fab: Weak<Fabric<MemfdRegion>>, me: u32, pids: Vec<u32>) {
    let mut peers = Vec::new();
    for (i, &pid) in pids.iter().enumerate().filter(|&(i, _)| i as u32 != me) {
        match pidfd(pid) {
            Ok(fd) => peers.push((i as u32, fd)),
            // Gone already: lost unless it finalized first.
            Err(libc::ESRCH) => {
                if let Some(f) = fab.upgrade() {
                    if f.ctl().rank_state(i as u32) != rank_state::FINALIZED {
                        f.ctl().mark_lost(i as u32);
                    }
                }
            }
            // No process descriptors (Linux < 5.3): peers are not watched here.
            Err(_) => {}
        }
    }
    if peers.is_empty() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("skifch-node-watch".into())
        .spawn(move || watch_loop(fab, peers));
    // Without the thread a lost peer is still seen by the fabric layers above (timeouts
    // of the launcher); the job itself works.
    drop(spawned);
}

fn watch_loop(fab: Weak<Fabric<MemfdRegion>>, mut peers: Vec<(u32, OwnedFd)>) {
    while !peers.is_empty() {
        let mut fds: Vec<libc::pollfd> = peers
            .iter()
            .map(|(_, fd)| libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd records for the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 250) };
        let Some(fab) = fab.upgrade() else { return };
        if n <= 0 {
            continue;
        }
        let ctl = fab.ctl();
        let mut i = 0;
        peers.retain(|(rank, _)| {
            let ended = fds[i].revents != 0;
            i += 1;
            if ended && ctl.rank_state(*rank) != rank_state::FINALIZED {
                ctl.mark_lost(*rank);
            }
            !ended
        });
    }
}

/// A process descriptor for `pid` (readable once the process has ended), or the errno:
/// `ESRCH` when the process is gone, `ENOSYS` before Linux 5.3.
fn pidfd(pid: u32) -> std::result::Result<OwnedFd, i32> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    // SAFETY: `fd` was just returned by pidfd_open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}
