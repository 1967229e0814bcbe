//! `skifrun --hosts`: a job on several hosts, started through MPICH's `mpiexec.hydra`
//! (which reaches each host through ssh, or through `--launcher-exec`), the ranks
//! bootstrapping through its PMI-1 server ([`crate::boot::from_env`]).
//!
//! ```text
//! skifrun --hosts node1:2,node2:2 -n 4 -- prog args        # ssh to node1 and node2
//! skifrun --hostfile hosts -n 8 -- prog                    # lines: host[:ranks]
//! skifrun --hosts a,b --launcher-exec ./my-ssh -n 4 -- prog
//! skifrun --hosts a,b --ppn 2 -n 8 -- prog                 # a: 0,1,4,5  b: 2,3,6,7
//! ```
//! `skifrun` replaces itself with `mpiexec.hydra` (or the program `SKIFRUN_HYDRA`
//! names), so signals, output, failure handling and the exit status are hydra's. The
//! options map as follows: `-n` → `-n`; `--hosts` → `-hosts`; `--hostfile` → `-f`;
//! `--launcher-exec` → `-launcher ssh -launcher-exec`; `--iface` → `-iface`; `--ppn` →
//! `-ppn` (hydra's meaning: that many consecutive ranks per host, in the list's order,
//! wrapping around after the last host; it overrides the hosts' `:ranks` counts); `-x`,
//! `--wait`, `--ports`, `--lane-kb` → `-genv` of the variables they set; `--timeout` →
//! `MPIEXEC_TIMEOUT`; `--tag-output`/`-l` → `-l`. `--driver fpga-model` (one machine
//! hosting the device model) and `--torus` are refused; `--grace` has no equivalent
//! (hydra ends the job as soon as a rank fails).
//!
//! The ranks get hydra's `PMI_FD`, `PMI_RANK`, `PMI_SIZE` and no `SKIFCH_FD`: they join
//! through the bootstrap ([`crate::boot`]), not through a `skifrun` segment.

use std::ffi::OsString;
use std::process::Command;

use skifch::{Error, Result};

use super::{policy_env, DriverKind, LaunchOptions, TagOutput};

/// Where the ranks of a multi-host job run and how the hosts are reached.
#[derive(Clone, Debug, Default)]
pub struct Hosts {
    /// `host[:ranks],…` (hydra's `-hosts`), or
    pub list: Option<String>,
    /// a file of `host[:ranks]` lines (hydra's `-f`).
    pub file: Option<OsString>,
    /// The program that reaches a host as ssh does (`<it> [options] <host> <command>`);
    /// `None`: ssh.
    pub launcher_exec: Option<OsString>,
    /// The network interface the hosts reach this one through (hydra's `-iface`).
    pub iface: Option<String>,
    /// Ranks per host (hydra's `-ppn`), instead of the hosts' `:ranks` counts.
    pub ppn: Option<u32>,
}

impl Hosts {
    /// `--hosts <list>`.
    pub fn list(list: impl Into<String>) -> Hosts {
        Hosts {
            list: Some(list.into()),
            ..Hosts::default()
        }
    }
}

/// The `mpiexec.hydra` command that runs `opts` on `hosts` (see the module docs).
///
/// # Errors
/// [`Error::InvalidArgument`] for an empty or malformed host list, both a list and a
/// file, or an option that cannot apply to several hosts.
///
/// ```
/// use skifch_drivers::launch::{hosts, LaunchOptions};
/// let cmd = hosts::hydra_command(&LaunchOptions::new(4, "prog"), &hosts::Hosts::list("a:2,b:2"))?;
/// let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
/// assert_eq!(args, ["-hosts", "a:2,b:2", "-n", "4", "prog"]);
/// let mut two_each = hosts::Hosts::list("a,b");
/// two_each.ppn = Some(2);
/// let cmd = hosts::hydra_command(&LaunchOptions::new(8, "prog"), &two_each)?;
/// let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
/// assert_eq!(args, ["-hosts", "a,b", "-ppn", "2", "-n", "8", "prog"]);
/// # Ok::<(), skifch::Error>(())
/// ```
pub fn hydra_command(opts: &LaunchOptions, hosts: &Hosts) -> Result<Command> {
    let bad = |why: String| Err(Error::InvalidArgument(why.into()));
    if opts.driver != DriverKind::Shm || opts.torus.is_some() {
        return bad("--hosts: --driver fpga-model and --torus run on one machine only".into());
    }
    let hydra = std::env::var_os("SKIFRUN_HYDRA").unwrap_or_else(|| "mpiexec.hydra".into());
    let mut cmd = Command::new(hydra);
    match (&hosts.list, &hosts.file) {
        (Some(list), None) => {
            let ok = |h: &str| {
                let (name, n) = h.split_once(':').unwrap_or((h, "1"));
                !name.is_empty()
                    && !name.contains(char::is_whitespace)
                    && n.parse::<u32>().is_ok_and(|n| n > 0)
            };
            if list.is_empty() || !list.split(',').all(ok) {
                return bad(format!(
                    "--hosts {list:?}: expected host[:ranks],... (ranks ≥ 1)"
                ));
            }
            cmd.args(["-hosts", list]);
        }
        (None, Some(file)) => {
            cmd.arg("-f").arg(file);
        }
        (Some(_), Some(_)) => return bad("--hosts and --hostfile exclude each other".into()),
        (None, None) => return bad("no hosts (--hosts or --hostfile)".into()),
    }
    if let Some(exec) = &hosts.launcher_exec {
        cmd.args(["-launcher", "ssh", "-launcher-exec"]).arg(exec);
    }
    if let Some(iface) = &hosts.iface {
        cmd.args(["-iface", iface]);
    }
    match hosts.ppn {
        Some(0) => return bad("--ppn 0: at least one rank per host".into()),
        Some(n) => {
            cmd.arg("-ppn").arg(n.to_string());
        }
        None => {}
    }
    let mut genv: Vec<(OsString, OsString)> = opts.env.clone();
    if let Some(w) = opts.wait {
        genv.push(("SKIFCH_WAIT".into(), policy_env(w).into()));
    }
    for (name, v) in [
        ("SKIFCH_PORTS", opts.ports),
        ("SKIFCH_LANE_KB", opts.lane_kb),
    ] {
        if let Some(v) = v {
            genv.push((name.into(), v.to_string().into()));
        }
    }
    for (k, v) in &genv {
        cmd.arg("-genv").arg(k).arg(v);
    }
    if opts.tag_output != TagOutput::Off {
        cmd.arg("-l");
    }
    if let Some(limit) = opts.time_limit()? {
        cmd.env("MPIEXEC_TIMEOUT", limit.0.as_secs().max(1).to_string());
    }
    cmd.arg("-n")
        .arg(opts.nranks.to_string())
        .arg(&opts.program)
        .args(&opts.args);
    Ok(cmd)
}
