//! Shared by the C ABI's test files: the workspace root, the C library and compiling a C
//! program against it.

#![allow(dead_code)] // each test file uses a part of it

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use skifch_testing::STATIC_LIBS;

/// The workspace root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("skifch-capi lives in the workspace root")
}

/// The directory holding `libskifch.so` and `libskifch.a`, built if missing or stale
/// (through the workspace's one test-build helper).
pub fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        skifch_testing::c_library_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"),
            "skifch",
        )
    })
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Link {
    Shared,
    Static,
}

/// Compiles `src` (relative to the workspace root) into the test's scratch directory
/// (tests running at once may compile the same program: [`skifch_testing::build_exe`]).
pub fn compile(src: &str, link: Link) -> PathBuf {
    let lib = lib_dir();
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c");
    std::fs::create_dir_all(&out_dir).expect("scratch directory");
    let stem = Path::new(src)
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("a file name");
    let exe = out_dir.join(format!("{stem}-{link:?}").to_lowercase());
    skifch_testing::build_exe(&exe, &format!("{src} ({link:?})"), |out| {
        let mut cmd = Command::new("cc");
        cmd.args(["-std=c11", "-O1", "-g", "-Wall", "-Wextra"])
            .arg("-I")
            .arg(root().join("include"))
            .arg("-I")
            .arg(root().join("tests/c"))
            .arg(root().join(src))
            .arg("-o")
            .arg(out);
        match link {
            Link::Shared => {
                cmd.arg("-L")
                    .arg(lib)
                    .arg("-lskifch")
                    .arg(format!("-Wl,-rpath,{}", lib.display()));
            }
            Link::Static => {
                cmd.arg(lib.join("libskifch.a")).args(STATIC_LIBS);
            }
        }
        cmd
    })
}
