//! The combined MsgRate run (`msgrate --with mpi-lite,shmem`): the peers' unmodified C
//! programs (`../shared/peers/msgrate_mpi.c`, `msgrate_shmem.c`) are built with
//! `skif-mpicc` / `skif-oshcc` against this profile's `libskifmpi` / `libskifshmem`, run as
//! 2-rank `skifrun` jobs beside the raw-channel MsgRate, with our own `benches/c/mpi_bw.c`
//! and `shmem_lat.c` (1 MiB bandwidth; get and fetch-add latency, 64 KiB put/get and memcpy
//! bandwidth), and merged into one CSV, table and plot. Tiny settings; no real peers (Open
//! MPI etc. are not installed on CI): a stand-in `run.sh` checks the merge of peer rows
//! and the ratio columns, and missing peers must fail with the install hint before
//! anything runs.
//!
//! Needs `cc` and the peers' sources; without them the test FAILS (set
//! `SKIFCH_BENCH_NO_PEERS=1` to leave the layer test out on purpose).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use skifch_benches::results::{read_csv, Row};
use skifch_testing::{c_library_dir, skifrun_exe};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("msgrate-layers-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn msgrate(dir: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_msgrate"));
    // each test its own work directory: tests run in parallel
    c.arg("--work-dir")
        .arg(dir.join("work"))
        .arg("--csv")
        .arg(dir.join("all.csv"))
        .arg("--svg")
        .arg(dir.join("all.svg"))
        .args(args)
        .env_remove("SKIFCH_RANK")
        .env_remove("SKIFCH_SIZE")
        .env_remove("SKIFCH_FD");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("running msgrate")
}

fn show(o: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn positive(rows: &[Row], imp: &str, tests: &[&str]) {
    for t in tests {
        let r: Vec<&Row> = rows
            .iter()
            .filter(|r| r.imp == imp && r.test == *t)
            .collect();
        assert!(!r.is_empty(), "no {imp} {t} row in {rows:?}");
        for r in r {
            assert!(r.value.is_finite() && r.value > 0.0, "{r:?}");
            match r.unit.as_str() {
                "msg/s" => assert!(r.value > 10.0, "{r:?}"),
                "us" => assert!(r.value < 1e6, "{r:?}"),
                "MB/s" => assert!(r.value > 0.1, "{r:?}"),
                u => panic!("unexpected unit {u} in {r:?}"),
            }
        }
    }
}

#[test]
fn mpi_lite_and_shmem_beside_raw_channels() {
    let peers = root().join("../shared/peers");
    if std::env::var_os("SKIFCH_BENCH_NO_PEERS").is_some() {
        eprintln!("SKIPPED on purpose (SKIFCH_BENCH_NO_PEERS set)");
        return;
    }
    assert!(
        peers.join("msgrate_mpi.c").is_file() && peers.join("msgrate_shmem.c").is_file(),
        "the peers' sources are not in {} (set SKIFCH_BENCH_NO_PEERS=1 to skip this test)",
        peers.display()
    );
    // The libraries and the launcher of this profile, where msgrate looks for them.
    c_library_dir(&root().join("mpi-lite/capi/Cargo.toml"), "skifmpi");
    c_library_dir(&root().join("shmem/Cargo.toml"), "skifshmem");
    skifrun_exe();

    let tmp = tmpdir("with");
    let out = msgrate(
        &tmp,
        &[
            "--with",
            "mpi-lite,shmem",
            "--quick",
            "--sizes",
            "8",
            "--tests",
            "msgrate,latency",
            "--c2c-gate",
            "off",
            "--reps",
            "1",
            "--group-timeout-s",
            "120",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", show(&out));
    let rows = read_csv(&tmp.join("all.csv")).unwrap();
    positive(&rows, "skifch-shm", &["msgrate", "latency"]);
    positive(&rows, "mpi-lite", &["msgrate", "latency", "msgrate_window"]);
    positive(
        &rows,
        "skifshmem",
        &[
            "put_rate",
            "put_quiet_lat",
            "latency",
            "get_lat",
            "fetch_add_lat",
        ],
    );
    // benches/c/mpi_bw.c: its smallest size, 1 MiB, whatever --sizes says
    let bw: Vec<&Row> = rows
        .iter()
        .filter(|r| r.test == "bandwidth" && r.imp == "mpi-lite")
        .collect();
    assert!(
        bw.len() == 1 && bw[0].size == 1 << 20 && bw[0].unit == "MB/s" && bw[0].value > 1.0,
        "{bw:?}"
    );
    // benches/c/shmem_lat.c: put/get bandwidth and memcpy's at its smallest size, 64 KiB
    for t in ["put_bw", "get_bw", "memcpy_bw"] {
        let bw: Vec<&Row> = rows
            .iter()
            .filter(|r| r.test == t && r.imp == "skifshmem")
            .collect();
        assert!(
            bw.len() == 1 && bw[0].size == 64 << 10 && bw[0].unit == "MB/s" && bw[0].value > 1.0,
            "{bw:?}"
        );
    }
    // -m 8: the C programs measured their sizes up to 8 B only
    assert!(
        rows.iter()
            .all(|r| r.size <= 8 || r.test == "bandwidth" || r.test.ends_with("_bw")),
        "{rows:?}"
    );
    let table = String::from_utf8_lossy(&out.stdout);
    for l in [
        "mpi-lite vs best MPI",
        "mpi-lite vs Open MPI",
        "skifshmem vs OpenSHMEM",
        "skifshmem vs memcpy",
        "raw channels vs rawring",
    ] {
        assert!(table.contains(l), "{l} missing:\n{table}");
    }
    let svg = std::fs::read_to_string(tmp.join("all.svg")).unwrap();
    assert!(svg.contains("mpi-lite msgrate") && svg.contains("skifshmem put_rate"));
    std::fs::remove_dir_all(tmp).unwrap();
}

/// A stand-in for `run.sh`: prints peer rows for the group it is asked for, and fails
/// unless msgrate passes the knobs it must (ONLY, NO_INSTALL, the gate off, TARGET_S).
const FAKE_RUN_SH: &str = r##"
[ "$ONLY" = rawring ] && [ "$NO_INSTALL" = 1 ] && [ "$WAIT_NEAR_US" = 0 ] && [ -n "$TARGET_S" ] || { echo "bad env: ONLY=$ONLY NO_INSTALL=$NO_INSTALL WAIT_NEAR_US=$WAIT_NEAR_US" >&2; exit 7; }
echo "# a note" >&2
echo "impl,test,size,value,unit"
echo "rawring,msgrate,8,1000,msg/s"
echo "rawring,latency,8,1000000.5,us"
"##;

#[test]
fn peers_rows_merge_into_the_table() {
    let tmp = tmpdir("fake");
    let peers = tmp.join("peers");
    std::fs::create_dir_all(&peers).unwrap();
    std::fs::write(peers.join("run.sh"), FAKE_RUN_SH).unwrap();
    let out = msgrate(
        &tmp,
        &[
            "--peers-run",
            "rawring",
            "--peers-dir",
            peers.to_str().unwrap(),
            "--quick",
            "--sizes",
            "8",
            "--tests",
            "msgrate,latency",
            "--c2c-gate",
            "off",
            "--rounds",
            "2",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", show(&out));
    // two rounds, the second in reverse order; each group's output kept per round
    for f in [
        "raw-r1.csv",
        "raw-r2.csv",
        "peers-rawring-r1.csv",
        "peers-rawring-r2.csv",
    ] {
        assert!(tmp.join("work").join(f).is_file(), "{f} missing");
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let order: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("# round 2/2:"))
        .collect();
    assert!(
        order.len() == 2 && order[0].contains("peers rawring") && order[1].contains("raw channels"),
        "{err}"
    );
    assert!(err.contains("other work"), "{err}");
    let rows = read_csv(&tmp.join("all.csv")).unwrap();
    assert!(rows.contains(&Row::new("rawring", "msgrate", 8, 1000.0, "msg/s")));
    positive(&rows, "skifch-shm", &["msgrate", "latency"]);
    let table = String::from_utf8_lossy(&out.stdout);
    let line = |t: &str| {
        table
            .lines()
            .find(|l| l.starts_with("raw channels vs rawring") && l.contains(t))
            .unwrap_or_else(|| panic!("{t} line missing:\n{table}"))
            .to_string()
    };
    // ours beats 1000 msg/s and 1 s latency by far: both gains well above 1
    for t in ["msgrate", "latency"] {
        let gain: f64 = line(t).split_whitespace().last().unwrap().parse().unwrap();
        assert!(gain > 10.0, "{t}: gain {gain}\n{table}");
    }

    // The stand-in failing: the rows of the other groups are still written, status 1.
    std::fs::write(peers.join("run.sh"), "echo broken >&2; exit 3\n").unwrap();
    let out = msgrate(
        &tmp,
        &[
            "--peers-run",
            "rawring",
            "--peers-dir",
            peers.to_str().unwrap(),
            "--quick",
            "--sizes",
            "8",
            "--tests",
            "msgrate",
            "--c2c-gate",
            "off",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("FAILED") && err.contains("broken"), "{err}");
    let rows = read_csv(&tmp.join("all.csv")).unwrap();
    positive(&rows, "skifch-shm", &["msgrate"]);
    std::fs::remove_dir_all(tmp).unwrap();
}

#[test]
fn missing_peers_and_bad_lists_fail_before_measuring() {
    let tmp = tmpdir("missing");
    let empty = tmp.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let out = msgrate(
        &tmp,
        &["--peers-run", "openmpi,mpich", "--quick"],
        &[("PATH", empty.as_os_str())],
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mpirun.openmpi") && err.contains("apt-get install -y openmpi-bin"),
        "{err}"
    );
    assert!(!tmp.join("all.csv").exists(), "nothing measured");

    let out = msgrate(&tmp, &["--peers-run", "lam"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown group \"lam\""));
    let out = msgrate(&tmp, &["--with", "mpi"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown layer"));
    std::fs::remove_dir_all(tmp).unwrap();
}

#[test]
fn table_from_merges_rounds_without_measuring() {
    let tmp = tmpdir("from");
    let h = "impl,test,size,value,unit\n";
    let (a, b) = (tmp.join("r1.csv"), tmp.join("r2.csv"));
    std::fs::write(
        &a,
        format!("{h}mpi-lite,msgrate,8,3000000,msg/s\nmpich,msgrate,8,2000000,msg/s\n"),
    )
    .unwrap();
    std::fs::write(
        &b,
        format!("{h}mpi-lite,msgrate,8,5000000,msg/s\nmpich,msgrate,8,2000000,msg/s\n"),
    )
    .unwrap();
    let out = msgrate(
        &tmp,
        &["--table-from", a.to_str().unwrap(), b.to_str().unwrap()],
        &[],
    );
    assert!(out.status.success(), "{}", show(&out));
    let rows = read_csv(&tmp.join("all.csv")).unwrap();
    assert!(
        rows.contains(&Row::new("mpi-lite", "msgrate", 8, 4e6, "msg/s")),
        "{rows:?}"
    );
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(
        t.lines()
            .any(|l| l.starts_with("mpi-lite vs best MPI") && l.ends_with("2.00")),
        "{t}"
    );
    assert!(tmp.join("all.svg").is_file());
    let out = msgrate(&tmp, &["--table-from", "/nonexistent.csv"], &[]);
    assert_eq!(out.status.code(), Some(1));
    std::fs::remove_dir_all(tmp).unwrap();
}
