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

/// A fresh directory for the ranks of one job to write into (`what` names it).
pub fn job_dir(what: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("mpi-jobs")
        .join(format!("{what}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a job's directory");
    dir
}

/// `sh -c '"$0" "$@"; <write $? into dir/status.RANK>; exit $?'`: put before the program
/// and its arguments, it records how each rank's program ended (the rank from skifrun,
/// hydra or Open MPI); a rank the launcher kills first writes nothing.
pub fn status_recorder(dir: &Path) -> [String; 3] {
    let d = dir.display();
    [
        "sh".into(),
        "-c".into(),
        format!(
            "\"$0\" \"$@\"; s=$?; r=${{SKIFCH_RANK:-${{PMI_RANK:-$OMPI_COMM_WORLD_RANK}}}}; \
             echo $s > '{d}'/tmp.$r && mv '{d}'/tmp.$r '{d}'/status.$r; exit $s"
        ),
    ]
}

/// The statuses [`status_recorder`] wrote, by rank.
pub fn recorded_statuses(dir: &Path) -> std::collections::BTreeMap<u32, i32> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Default::default();
    };
    entries
        .filter_map(|e| {
            let e = e.ok()?;
            let rank = e
                .file_name()
                .to_str()?
                .strip_prefix("status.")?
                .parse()
                .ok()?;
            let status = std::fs::read_to_string(e.path())
                .ok()?
                .trim()
                .parse()
                .ok()?;
            Some((rank, status))
        })
        .collect()
}

/// Checks a job of `tests/c/fatal.c abort` on `n` ranks (the last calls
/// `MPI_Abort(MPI_COMM_WORLD, 7)`, the others wait for it), each rank run by
/// [`status_recorder`] into `dir`, whose launcher said `status`: the job ended with 7,
/// every rank that recorded its status ended with 7 (all `n` when `every_rank`: a
/// launcher that kills survivors may stop some first), no rank passed its receive, and
/// the only line of mpi-lite on stderr is the aborting rank's (the others end quietly:
/// finding that rank gone is the job ending, not an error of theirs).
pub fn expect_abort_7(o: &testing::Outcome, dir: &Path, n: u32, every_rank: bool, what: &str) {
    let statuses = recorded_statuses(dir);
    let ctx = format!(
        "{what}: {}, rank statuses {statuses:?}\n{}",
        o.status,
        o.text()
    );
    assert_eq!(o.code(), Some(7), "{ctx}");
    assert!(statuses.values().all(|&s| s == 7), "{ctx}");
    if every_rank {
        assert_eq!(statuses.len(), n as usize, "{ctx}");
    }
    assert!(
        !o.stdout.contains("received from the aborting rank"),
        "{ctx}"
    );
    let said: Vec<&str> = o
        .stderr
        .lines()
        .filter(|l| l.contains("mpi-lite:") || l.contains("MPI_ERRORS_ARE_FATAL"))
        .collect();
    let abort = format!(
        "mpi-lite: rank {}: MPI_Abort(7) called: aborting the job",
        n - 1
    );
    assert!(said.len() == 1 && said[0].contains(&abort), "{ctx}");
}
