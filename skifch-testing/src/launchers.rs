//! The ecosystem's launchers in tests (issue 21: bootstrap from them): MPICH's
//! `mpiexec.hydra` (a PMI-1 server) and Open MPI's `mpirun` (a PMIx server). Tests that
//! need one skip, saying so once on stderr, where it is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The first executable `name` on `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// `mpiexec.hydra` (Debian package `mpich`) if installed; otherwise `None`, after saying
/// once on stderr that the hydra tests are skipped and why.
pub fn mpiexec_hydra() -> Option<PathBuf> {
    static HYDRA: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    HYDRA
        .get_or_init(|| {
            let found = which("mpiexec.hydra");
            if found.is_none() {
                eprintln!(
                    "SKIPPED: mpiexec.hydra is not on PATH (install Debian's `mpich`): \
                     the PMI-1 bootstrap tests under hydra do not run"
                );
            }
            found
        })
        .clone()
}

/// How long hydra (`MPIEXEC_TIMEOUT`) or Open MPI (`--timeout`) lets a test job run
/// before it ends every rank:
/// generous, for a loaded machine; a test's own limit should be longer.
pub const LAUNCHER_JOB_LIMIT_SECS: u32 = 150;

/// `mpiexec.hydra <args>` with a clean job environment ([`crate::clean_env`]) and
/// `MPIEXEC_TIMEOUT` set ([`LAUNCHER_JOB_LIMIT_SECS`]), so a job that hangs ends with every
/// rank; `None` if hydra is missing ([`mpiexec_hydra`]).
pub fn hydra_cmd(args: &[&str]) -> Option<Command> {
    let mut cmd = Command::new(mpiexec_hydra()?);
    crate::clean_env(&mut cmd);
    cmd.env("MPIEXEC_TIMEOUT", LAUNCHER_JOB_LIMIT_SECS.to_string())
        .args(args);
    Some(cmd)
}

/// Open MPI's launcher `mpirun.openmpi` (Debian `openmpi-bin`; its `mpirun` serves PMIx
/// to the ranks) if installed; otherwise `None`, after saying once on stderr that the
/// PMIx tests are skipped and why.
pub fn mpirun_openmpi() -> Option<PathBuf> {
    static MPIRUN: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    MPIRUN
        .get_or_init(|| {
            let found = which("mpirun.openmpi");
            if found.is_none() {
                eprintln!(
                    "SKIPPED: mpirun.openmpi is not on PATH (install Debian's `openmpi-bin`): \
                     the PMIx bootstrap tests do not run"
                );
            }
            found
        })
        .clone()
}

/// `mpirun.openmpi --oversubscribe --allow-run-as-root --timeout <limit> --mca
/// orte_tmpdir_base <session> <args>` with a clean job environment; `None` if Open MPI is
/// missing ([`mpirun_openmpi`]). `session` is a directory of the caller's own (e.g. a
/// [`ScratchDir`]): Open MPI 4 jobs that share the default session directory
/// (`/tmp/ompi.<host>.<uid>`) race when they run at once (one removes it while another
/// creates its job directory in it: "A call to mkdir was unable to create …").
pub fn openmpi_cmd(args: &[&str], session: &Path) -> Option<Command> {
    let mut cmd = Command::new(mpirun_openmpi()?);
    crate::clean_env(&mut cmd);
    cmd.args(["--oversubscribe", "--allow-run-as-root", "--timeout"])
        .arg(LAUNCHER_JOB_LIMIT_SECS.to_string())
        .args(["--mca", "orte_tmpdir_base"])
        .arg(session)
        .args(args);
    Some(cmd)
}

/// Writes into `dir` an executable stand-in for `ssh` that hydra can use as its launcher
/// (`-launcher ssh -launcher-exec <it>`), and returns its path. Hydra runs it as
/// `<it> -x <host> "<proxy>" <proxy args…>`, like ssh: options, the host, then a command
/// line for the remote shell. `wrap` is put before that shell, with `{host}` replaced by
/// the host name: `""` runs every "host" on this machine (the ranks still see one node per
/// host name in `PMI_process_mapping`), `"ip netns exec {host}"` runs each in the network
/// namespace of that name.
pub fn ssh_stand_in(dir: &Path, wrap: &str) -> PathBuf {
    let path = dir.join("ssh-stand-in");
    let wrap = wrap.replace("{host}", "\"$host\"");
    let script = format!(
        "#!/bin/sh\n\
         # ssh for hydra's launcher: skip options, take the host, run the command line.\n\
         while [ \"${{1#-}}\" != \"$1\" ]; do shift; done\n\
         host=$1; shift\n\
         exec {wrap} sh -c \"$*\"\n"
    );
    let tmp = dir.join(format!("ssh-stand-in.{}", std::process::id()));
    std::fs::write(&tmp, script).unwrap_or_else(|e| panic!("writing {}: {e}", tmp.display()));
    std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", tmp.display()));
    std::fs::rename(&tmp, &path).unwrap_or_else(|e| panic!("renaming {}: {e}", tmp.display()));
    path
}

/// A fresh, empty scratch directory for one test (`<tmp>/<name>-<pid>`), removed on drop.
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Creates it (replacing a leftover of the same name).
    pub fn new(name: &str) -> ScratchDir {
        let p = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("creating {}: {e}", p.display()));
        ScratchDir(p)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
