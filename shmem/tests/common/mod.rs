//! Shared by the C-program tests: the library's directory and the compiler (skif-oshcc,
//! or cc + the static library).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use skifch_testing::{self as testing, STATIC_LIBS};

/// Each job must finish within this (they take about a second).
pub const JOB_TIMEOUT: Duration = Duration::from_secs(60);

pub fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding `libskifshmem.so`/`.a`, built if missing or stale.
pub fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| skifch_testing::c_library_dir(&crate_dir().join("Cargo.toml"), "skifshmem"))
}

/// Compiles `tests/c/<name>.c` with skif-oshcc (shared) or cc + the static library.
/// Tests running at once may compile the same program (the fpga-model test and the
/// program's own): [`testing::build_exe`].
pub fn compile(name: &str, shared: bool) -> PathBuf {
    compile_with(name, shared, "", &[])
}

/// As [`compile`] with extra compiler arguments, to `<name><tag>-so`/`-a`.
pub fn compile_with(name: &str, shared: bool, tag: &str, extra: &[&str]) -> PathBuf {
    let lib = lib_dir();
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shmem-c");
    std::fs::create_dir_all(&out_dir).expect("scratch directory");
    let exe = out_dir.join(format!("{name}{tag}-{}", if shared { "so" } else { "a" }));
    let src = crate_dir().join(format!("tests/c/{name}.c"));
    let flags = ["-Wall", "-Wextra", "-Werror", "-O1", "-g"];
    testing::build_exe(&exe, name, |out| {
        if shared {
            let mut c = Command::new(crate_dir().join("bin/skif-oshcc"));
            c.env("SKIFSHMEM_LIBDIR", lib)
                .args(flags)
                .args(extra)
                .arg(&src)
                .arg("-o")
                .arg(out);
            c
        } else {
            let mut c = Command::new("cc");
            c.arg("-std=gnu11")
                .arg("-I")
                .arg(crate_dir().join("include"))
                .args(flags)
                .args(extra)
                .arg(&src)
                .arg("-o")
                .arg(out)
                .arg(lib.join("libskifshmem.a"))
                .args(STATIC_LIBS);
            c
        }
    })
}
