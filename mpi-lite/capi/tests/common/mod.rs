//! Shared by the C-program tests: the library's directory and skif-mpicc.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use skifch_testing as testing;

/// How long one job of a test may take (generous: the machine may be loaded).
pub const JOB_TIMEOUT: Duration = Duration::from_secs(60);

/// `mpi-lite/`.
pub fn mpi_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("capi lives in mpi-lite/")
}

/// Where the built libskifmpi is.
pub fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        skifch_testing::c_library_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"),
            "skifmpi",
        )
    })
}

/// Compiles `tests/c/<name>.c` with skif-mpicc (`static`: libskifmpi.a); tests running at
/// once may compile the same program ([`testing::build_exe`]).
pub fn compile(name: &str, stat: bool) -> PathBuf {
    let lib = lib_dir();
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mpi-c");
    std::fs::create_dir_all(&out_dir).expect("scratch directory");
    let exe = out_dir.join(format!("{name}-{}", if stat { "static" } else { "shared" }));
    testing::build_exe(&exe, name, |out| {
        let mut c = Command::new(mpi_root().join("bin/skif-mpicc"));
        c.env("SKIFMPI_LIBDIR", lib)
            .env("SKIFMPI_STATIC", if stat { "1" } else { "0" })
            .env_remove("SKIFMPI_CC")
            .args(["-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror"])
            .arg(mpi_root().join(format!("tests/c/{name}.c")))
            .arg("-o")
            .arg(out);
        c
    })
}
