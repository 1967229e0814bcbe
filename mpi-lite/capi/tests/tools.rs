//! The conventions of other MPIs' tools (issue 17): the wrappers answer `-show`,
//! `-showme[:compile|:link|…]`, `-compile_info`, `-link_info`; an installed prefix
//! (`scripts/install-mpi.sh`) has plain `mpicc`/`mpicxx`/`mpiexec`/`mpirun` names in one
//! directory, pkg-config files, and finds everything relative to itself — never through
//! the caller's `CARGO_TARGET_DIR`. Needs `cc`; skipped with a message otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use skifch_testing::{self as testing, have_cc};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("mpi-lite/capi is two levels below the workspace")
}

fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        testing::c_library_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"),
            "skifmpi",
        )
    })
}

fn output(cmd: &mut Command) -> String {
    let o = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?}: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Installs into a fresh prefix under the test's scratch directory.
fn install() -> PathBuf {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX
        .get_or_init(|| {
            let p = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mpi-prefix");
            let _ = std::fs::remove_dir_all(&p);
            output(
                Command::new(root().join("scripts/install-mpi.sh"))
                    .arg(&p)
                    .arg("--libdir")
                    .arg(lib_dir())
                    .arg("--skifrun")
                    .arg(testing::skifrun_exe()),
            );
            p
        })
        .clone()
}

const HELLO: &str = "#include <mpi.h>\n#include <stdio.h>\n\
    int main(int argc, char **argv) { int r, n; MPI_Init(&argc, &argv);\n\
    MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);\n\
    MPI_Allreduce(MPI_IN_PLACE, &r, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);\n\
    printf(\"hello %d of %d, sum %d, %s\\n\", 0, n, r, MPI_LITE_VERSION); MPI_Finalize(); return 0; }\n";

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mpi-tools");
    std::fs::create_dir_all(&d).expect("scratch directory");
    d.join(name)
}

#[test]
fn wrappers_answer_the_show_options() {
    if !have_cc() {
        return;
    }
    let p = install();
    let (inc, lib) = (p.join("include"), p.join("lib"));
    let cc = p.join("bin/skif-mpicc");
    let show = output(Command::new(&cc).arg("-show"));
    let want_link = format!("-L{} -lskifmpi -Wl,-rpath,{}", lib.display(), lib.display());
    assert!(show.starts_with("cc "), "{show}");
    assert!(show.contains(&format!("-I{}", inc.display())), "{show}");
    assert!(show.contains(&want_link), "{show}");
    assert_eq!(output(Command::new(&cc).arg("-showme")), show);
    // With arguments, MPICH's -show prints them in place.
    let with = output(Command::new(&cc).args(["-show", "-O2", "x.c"]));
    assert!(with.contains(" -O2 x.c "), "{with}");
    assert_eq!(
        output(Command::new(&cc).arg("-showme:compile")).trim(),
        format!("-I{}", inc.display())
    );
    assert_eq!(
        output(Command::new(&cc).arg("-showme:link")).trim(),
        want_link
    );
    assert_eq!(
        output(Command::new(&cc).arg("-compile_info")).trim(),
        format!("cc -I{}", inc.display())
    );
    assert_eq!(
        output(Command::new(&cc).arg("-link_info")).trim(),
        format!("cc {want_link}")
    );
    let cxx = output(Command::new(p.join("bin/mpi/mpicxx")).arg("-show"));
    assert!(cxx.starts_with("c++ "), "{cxx}");
    let v = output(Command::new(&cc).arg("-showme:version"));
    // The vendor macro carries the crate's version.
    assert!(
        v.contains(&format!("mpi-lite {}", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
}

#[test]
fn plain_names_on_path_build_and_run_without_the_callers_target_dir() {
    if !have_cc() {
        return;
    }
    let p = install();
    let src = scratch("hello.c");
    std::fs::write(&src, HELLO).expect("writing hello.c");
    let exe = scratch("hello");
    let path = format!(
        "{}:{}",
        p.join("bin/mpi").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // A caller's own CARGO_TARGET_DIR (here: one holding a library that does not link)
    // must not be looked at.
    let decoy = scratch("decoy-target/release");
    std::fs::create_dir_all(&decoy).expect("decoy dir");
    std::fs::write(decoy.join("libskifmpi.so"), b"not a library").expect("decoy");
    let env = |c: &mut Command| {
        c.env("PATH", &path)
            .env("CARGO_TARGET_DIR", decoy.parent().expect("parent"))
            .env_remove("SKIFMPI_LIBDIR")
            .env_remove("SKIFRUN");
    };
    let mut cc = Command::new("mpicc");
    env(&mut cc);
    output(cc.arg(&src).arg("-o").arg(&exe));
    for launcher in ["mpiexec", "mpirun"] {
        let mut run = Command::new(launcher);
        env(&mut run);
        testing::clean_env(&mut run);
        run.args(["-n", "3", "--"]).arg(&exe);
        let out = testing::run_job(run, Duration::from_secs(60)).expect_ok(launcher);
        assert_eq!(out.matches("hello 0 of 3, sum 3, ").count(), 3, "{out}");
    }
    // The wrapper of the source tree ignores CARGO_TARGET_DIR too.
    let mut show = Command::new(root().join("mpi-lite/bin/skif-mpicc"));
    show.arg("x.c")
        .env("SKIFMPI_SHOW", "1")
        .env("CARGO_TARGET_DIR", decoy.parent().expect("parent"))
        .env_remove("SKIFMPI_LIBDIR");
    if let Ok(o) = show.output() {
        let s = String::from_utf8_lossy(&o.stdout);
        assert!(!s.contains("decoy-target"), "{s}");
    }
}

#[test]
fn pkg_config_describes_the_installed_library() {
    if !have_cc() {
        return;
    }
    if Command::new("pkg-config")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("pkg-config not found: skipping the pkg-config test");
        return;
    }
    let p = install();
    let src = scratch("hello_pc.c");
    std::fs::write(&src, HELLO).expect("writing hello_pc.c");
    let exe = scratch("hello_pc");
    for pc in ["mpi", "skifmpi"] {
        let flags = output(
            Command::new("pkg-config")
                .env("PKG_CONFIG_PATH", p.join("lib/pkgconfig"))
                .args(["--cflags", "--libs", pc]),
        );
        let mut cc = Command::new("cc");
        cc.arg(&src)
            .arg("-o")
            .arg(&exe)
            .args(flags.split_whitespace());
        output(&mut cc);
        let out = testing::run_job(testing::skifrun_cmd(2, &[], &exe), Duration::from_secs(60))
            .expect_ok(pc);
        assert!(out.contains("hello 0 of 2, sum 1"), "{out}");
    }
}
