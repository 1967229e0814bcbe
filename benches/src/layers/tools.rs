//! [`Tools`]: where the wrappers, libraries, peers and work files are; building the
//! programs, checking the peers and running them with their output logged.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{csv_lines, group_needs, on_path, Layer, PeerBuild};
use crate::results::Row;
use crate::{BenchError, Result};

/// Where everything is.
#[derive(Clone, Debug)]
pub struct Tools {
    /// The workspace root (for the compiler wrappers).
    pub root: PathBuf,
    /// Where `skifrun`, `libskifmpi.so` and `libskifshmem.so` are (the profile directory
    /// of the running `msgrate`).
    pub bin_dir: PathBuf,
    /// `../shared/peers`: the C sources and `run.sh`.
    pub peers_dir: PathBuf,
    /// Built programs, per-group CSVs and logs.
    pub work_dir: PathBuf,
    /// Seconds a group may take before it is killed.
    pub timeout_s: u64,
}

impl Tools {
    pub(super) fn skifrun(&self) -> Result<PathBuf> {
        let p = self.bin_dir.join("skifrun");
        if p.is_file() {
            Ok(p)
        } else {
            Err(BenchError::Setup(format!(
                "{} not found: build it with `cargo build --release -p skifrun`",
                p.display()
            )))
        }
    }

    fn log(&self, name: &str) -> PathBuf {
        self.work_dir.join(format!("{name}.log"))
    }

    /// Checks that the wrapper, the library and the peers' source exist; builds the layer's
    /// programs (the peers' if it runs one, and our extra ones) into `work_dir`; returns
    /// their paths.
    pub fn build(&self, layer: Layer) -> Result<(Option<PathBuf>, Vec<PathBuf>)> {
        let wrapper = self.root.join(layer.wrapper());
        if !wrapper.is_file() {
            return Err(BenchError::Setup(format!(
                "{}: compiler wrapper {} not found",
                layer.imp(),
                wrapper.display()
            )));
        }
        let (var, lib, pkg) = layer.library();
        if !self.bin_dir.join(lib).is_file() {
            return Err(BenchError::Setup(format!(
                "{}: {} not found in {}: build it with `cargo build --release -p {pkg}` \
                 (the same profile as this msgrate)",
                layer.imp(),
                lib,
                self.bin_dir.display()
            )));
        }
        let exe = match layer.source() {
            Some(src) => {
                let src = self.peers_dir.join(src);
                if !src.is_file() {
                    return Err(BenchError::Setup(format!(
                        "{}: {} not found (--peers-dir names the directory of ../shared/peers)",
                        layer.imp(),
                        src.display()
                    )));
                }
                Some(self.compile(
                    &format!("msgrate_{}", layer.imp().replace('-', "")),
                    Command::new(&wrapper).env(var, &self.bin_dir),
                    &src,
                    &[],
                )?)
            }
            None => None,
        };
        let mut extra = Vec::new();
        for src in layer.extra_sources() {
            extra.push(self.compile(
                &format!(
                    "{}_{}",
                    src.trim_end_matches(".c"),
                    layer.imp().replace('-', "")
                ),
                Command::new(&wrapper).env(var, &self.bin_dir),
                &self.extra_dir().join(src),
                &[],
            )?);
        }
        Ok((exe, extra))
    }

    /// `benches/c/`: our extra C programs.
    fn extra_dir(&self) -> PathBuf {
        self.root.join("benches").join("c")
    }

    /// Builds the layer's extra programs for a peer library (`mpicc.openmpi`, `oshcc`,
    /// ARMCI-MPI's libraries), in the order of `Layer::extra_sources` (`None`: one the
    /// peer does not run, [`PeerBuild::only`]).
    pub fn build_peer_extra(&self, layer: Layer, peer: &PeerBuild) -> Result<Vec<Option<PathBuf>>> {
        let mut out = Vec::new();
        for src in layer.extra_sources() {
            if !peer.only.is_empty() && !peer.only.contains(src) {
                out.push(None);
                continue;
            }
            let built = self.compile(
                &format!("{}_{}", src.trim_end_matches(".c"), peer.imp),
                &mut Command::new(peer.cc),
                &self.extra_dir().join(src),
                peer.libs,
            );
            out.push(Some(built.map_err(|e| match (e, layer) {
                (BenchError::Setup(m), Layer::Armci) => BenchError::Setup(format!(
                    "{m}\n(ARMCI-MPI for Open MPI and MPICH: apt-get install -y libarmci-mpi-dev)"
                )),
                (e, _) => e,
            })?));
        }
        Ok(out)
    }

    /// Compiles `src` with `cc` (a compiler command, maybe with environment) and links
    /// `libs` into `work_dir/name`; the compiler's output goes to `build-<name>.log`, and
    /// into the error.
    fn compile(&self, name: &str, cc: &mut Command, src: &Path, libs: &[&str]) -> Result<PathBuf> {
        std::fs::create_dir_all(&self.work_dir)
            .map_err(|e| BenchError::io(format!("creating {}", self.work_dir.display()), e))?;
        let exe = self.work_dir.join(name);
        let log = self.log(&format!("build-{name}"));
        let out = cc
            .args(["-O2", "-Wall", "-I"])
            .arg(&self.peers_dir)
            .arg(src)
            .arg("-o")
            .arg(&exe)
            .args(libs)
            .output()
            .map_err(|e| BenchError::io(format!("running {:?}", cc.get_program()), e))?;
        let _ = std::fs::write(&log, [&out.stdout[..], &out.stderr[..]].concat());
        if !out.status.success() {
            return Err(BenchError::Setup(format!(
                "building {name}: {:?} {} failed ({}); the compiler said:\n{}",
                cc.get_program(),
                src.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim_end()
            )));
        }
        Ok(exe)
    }

    /// Checks that every command `groups` need is installed.
    pub fn check_peers(&self, groups: &[String]) -> Result<()> {
        let run = self.peers_dir.join("run.sh");
        if !run.is_file() {
            return Err(BenchError::Setup(format!(
                "{} not found (--peers-dir names the directory of ../shared/peers)",
                run.display()
            )));
        }
        let mut missing = Vec::new();
        for g in groups {
            let (cmds, how) = group_needs(g);
            let lack: Vec<&str> = cmds.iter().copied().filter(|c| !on_path(c)).collect();
            if !lack.is_empty() {
                missing.push(format!(
                    "  {g}: {} not on PATH; install: {how}",
                    lack.join(", ")
                ));
            }
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(BenchError::Setup(format!(
                "--peers-run: peers not installed:\n{}\n(as root, `bash {}` installs them all; \
                 or leave these groups out of --peers-run)",
                missing.join("\n"),
                run.display()
            )))
        }
    }

    /// Runs `run.sh` for one group (`ONLY=group`, `NO_INSTALL=1`, builds in `work_dir`);
    /// `env` adds knobs (`TARGET_S`, `REPS`, `STAT`, the gate's). Its stderr (transports,
    /// noise figures) goes to `work_dir/peers-<group>.log`.
    pub fn run_peers(&self, group: &str, tag: &str, env: &[(String, String)]) -> Result<Vec<Row>> {
        let mut cmd = Command::new("bash");
        cmd.arg(self.peers_dir.join("run.sh"))
            .env("ONLY", group)
            .env("NO_INSTALL", "1")
            .env("BUILD_DIR", self.work_dir.join("peers-build"))
            .envs(env.iter().map(|(k, v)| (k, v)));
        self.run_csv(&format!("peers-{group}{tag}"), cmd)
    }

    /// Runs `cmd` and parses the CSV lines of its stdout (see [`Tools::run_logged`]); no
    /// line at all is an error.
    pub fn run_csv(&self, name: &str, cmd: Command) -> Result<Vec<Row>> {
        let stdout = self.run_logged(name, cmd)?;
        let _ = std::fs::write(self.work_dir.join(format!("{name}.csv")), stdout.as_bytes());
        let rows = csv_lines(&stdout);
        if rows.is_empty() {
            return Err(BenchError::Setup(format!(
                "{name} printed no CSV lines (see {})",
                self.log(name).display()
            )));
        }
        Ok(rows)
    }

    /// Runs `cmd` under `timeout`, stderr to `work_dir/<name>.log`; returns its stdout. A
    /// failure (status, timeout) is an error quoting the end of the log.
    pub fn run_logged(&self, name: &str, cmd: Command) -> Result<String> {
        std::fs::create_dir_all(&self.work_dir)
            .map_err(|e| BenchError::io(format!("creating {}", self.work_dir.display()), e))?;
        let log = self.log(name);
        let errf = std::fs::File::create(&log)
            .map_err(|e| BenchError::io(format!("creating {}", log.display()), e))?;
        // `timeout` (coreutils) bounds the group: a hung job must not hang the whole run.
        let mut t = Command::new("timeout");
        t.args(["--kill-after=10", &self.timeout_s.to_string()])
            .arg(cmd.get_program())
            .args(cmd.get_args())
            .envs(cmd.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
            .stdin(Stdio::null())
            .stderr(errf);
        let out = t.output().map_err(|e| {
            BenchError::io(
                format!("running {name} (timeout {:?})", cmd.get_program()),
                e,
            )
        })?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            let tail: Vec<String> = std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .rev()
                .take(12)
                .map(String::from)
                .collect();
            let tail: Vec<String> = tail.into_iter().rev().collect();
            let why = if out.status.code() == Some(124) {
                format!("killed after {} s", self.timeout_s)
            } else {
                out.status.to_string()
            };
            return Err(BenchError::Setup(format!(
                "{name} failed ({why}); end of {}:\n{}",
                log.display(),
                tail.join("\n")
            )));
        }
        Ok(stdout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_is_a_clear_error() {
        let dir = std::env::temp_dir().join(format!("layers-nolib-{}", std::process::id()));
        let tools = Tools {
            root: Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
            bin_dir: dir.clone(),
            peers_dir: dir.clone(),
            work_dir: dir.join("work"),
            timeout_s: 5,
        };
        let e = tools.build(Layer::MpiLite).unwrap_err().to_string();
        assert!(
            e.contains("libskifmpi.so not found") && e.contains("cargo build --release -p skifmpi"),
            "{e}"
        );
        let e = tools.skifrun().unwrap_err().to_string();
        assert!(e.contains("skifrun"), "{e}");
    }
}
