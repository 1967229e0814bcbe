//! armci-shim as a build system finds it: `scripts/install-armci.sh PREFIX` lays out
//! `include/armci.h`, `message.h`, `lib/libarmci.{so,a}`, `lib/pkgconfig/armci.pc` and
//! `bin/skif-armcicc`; a configure-style check ("armci.h" compiles, `ARMCI_Init` links
//! from `-larmci`, as Global Arrays' `--with-armci=PREFIX` does) passes with the flags of
//! `pkg-config armci`, with plain `-IPREFIX/include -LPREFIX/lib -larmci`, and through the
//! installed wrapper; the programs run under skifrun.
//!
//! Needs `cc` (and `pkg-config` for its part); without them the checks are skipped with a
//! message.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use skifch_testing::{self as testing, have_cc};

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn scratch() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("armci-install");
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

/// armci-shim installed under the scratch directory (this profile's library), once.
fn prefix() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let lib = testing::c_library_dir(&crate_dir().join("Cargo.toml"), "armci");
        let p = scratch().join("prefix");
        let script = crate_dir().join("../scripts/install-armci.sh");
        let out = Command::new(script)
            .arg(&p)
            .arg("--libdir")
            .arg(lib)
            .output()
            .expect("running install-armci.sh");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        p
    })
}

fn run(cmd: &mut Command, what: &str) -> String {
    let o = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        o.status.success(),
        "{what}: {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs `exe` on `n` ranks over `driver` and checks it reports success.
fn run_job(exe: &Path, n: u32, driver: &str) {
    let cmd = testing::skifrun_cmd(n, &["--driver", driver], exe);
    let o = testing::run_job(cmd, Duration::from_secs(60));
    assert!(
        o.status.success(),
        "{} over {driver}: {}",
        exe.display(),
        o.text()
    );
    assert!(
        o.stdout.contains(&format!("conftest: ok on {n} ranks")),
        "{}",
        o.text()
    );
}

/// `cc` with `flags` compiling `src` (to `out`, linking unless `-c` is among the flags).
fn cc(src: &Path, out: &Path, flags: &[String]) {
    let mut c = Command::new("cc");
    c.arg(src).arg("-o").arg(out).args(flags);
    run(&mut c, &format!("cc {} {flags:?}", src.display()));
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

/// The checks autoconf makes for `--with-armci=PREFIX`: the header compiles alone, and a
/// program calling `ARMCI_Init` (declared as autoconf does, `char ARMCI_Init ();`) links.
fn configure_checks(dir: &Path, cflags: &[String], libs: &[String]) {
    let hdr = dir.join("conftest_h.c");
    std::fs::write(&hdr, "#include <armci.h>\nint main(void) { return 0; }\n").expect("write");
    let mut f = cflags.to_vec();
    f.push("-c".into());
    cc(&hdr, &dir.join("conftest_h.o"), &f);
    let link = dir.join("conftest_l.c");
    std::fs::write(
        &link,
        "char ARMCI_Init ();\nint main(void) { return ARMCI_Init (); }\n",
    )
    .expect("write");
    cc(&link, &dir.join("conftest_l"), libs);
}

#[test]
fn configure_check_with_pkg_config() {
    if !have_cc() {
        return;
    }
    if Command::new("pkg-config")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: no pkg-config (apt-get install pkg-config)");
        return;
    }
    let p = prefix();
    let pc = |what: &str| {
        let mut c = Command::new("pkg-config");
        c.env("PKG_CONFIG_PATH", p.join("lib/pkgconfig"))
            .args([what, "armci"]);
        words(&run(&mut c, &format!("pkg-config {what} armci")))
    };
    let (cflags, libs) = (pc("--cflags"), pc("--libs"));
    assert!(libs.iter().any(|l| l == "-larmci"), "{libs:?}");
    let dir = scratch().join("pkg-config");
    std::fs::create_dir_all(&dir).expect("scratch");
    configure_checks(&dir, &cflags, &libs);
    let exe = dir.join("conftest");
    let mut flags = cflags;
    flags.extend(libs);
    cc(&crate_dir().join("tests/c/conftest.c"), &exe, &flags);
    run_job(&exe, 2, "shm");
    run_job(&exe, 3, "fpga-model");
}

#[test]
fn configure_check_with_prefix_flags_and_wrapper() {
    if !have_cc() {
        return;
    }
    let p = prefix();
    let dir = scratch().join("prefix-flags");
    std::fs::create_dir_all(&dir).expect("scratch");
    let (inc, lib) = (p.join("include"), p.join("lib"));
    let cflags = vec![format!("-I{}", inc.display())];
    let libs = vec![
        format!("-L{}", lib.display()),
        format!("-Wl,-rpath,{}", lib.display()),
        "-larmci".to_owned(),
    ];
    configure_checks(&dir, &cflags, &libs);
    // The installed wrapper finds the prefix's own library (no workspace around it).
    let exe = dir.join("conftest-wrapped");
    let mut c = Command::new(p.join("bin/skif-armcicc"));
    c.arg(crate_dir().join("tests/c/conftest.c"))
        .arg("-o")
        .arg(&exe)
        .env_remove("ARMCI_SHIM_LIBDIR");
    run(&mut c, "skif-armcicc");
    let shown = run(
        Command::new(p.join("bin/skif-armcicc"))
            .args(["--showme", "x.c"])
            .env_remove("ARMCI_SHIM_LIBDIR"),
        "skif-armcicc --showme",
    );
    assert!(
        shown.contains(&format!("-L{}", lib.display())),
        "the installed wrapper links the prefix's library: {shown}"
    );
    run_job(&exe, 2, "shm");
}
