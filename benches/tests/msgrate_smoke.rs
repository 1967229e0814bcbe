//! Smoke test of the MsgRate tool: a real 2-process job (the binary re-starts itself under
//! the launcher), `--quick`, then the CSV must hold sane positive values for every test and
//! size, and the SVG must exist. Also the in-process variant (`--local`) with 3 ranks, the
//! FPGA driver over the device model (`--fpga-model`), and a bad option failing cleanly.

use std::path::Path;
use std::process::Command;

use skifch_benches::results::{read_csv, Row};

fn run(dir: &Path, extra: &[&str]) -> std::process::Output {
    let csv = dir.join("m.csv");
    let svg = dir.join("m.svg");
    let out = Command::new(env!("CARGO_BIN_EXE_msgrate"))
        .args(["--quick", "--csv"])
        .arg(&csv)
        .arg("--svg")
        .arg(&svg)
        .args(extra)
        .env_remove("SKIFCH_RANK")
        .env_remove("SKIFCH_SIZE")
        .env_remove("SKIFCH_FD")
        .output()
        .expect("run msgrate");
    assert!(
        out.status.success(),
        "msgrate {extra:?} failed: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("msgrate-smoke-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn check(rows: &[Row], imp: &str, tests: &[(&str, &str)], sizes: &[u64]) {
    for &(test, unit) in tests {
        for &size in sizes {
            let r = rows
                .iter()
                .find(|r| r.test == test && r.size == size)
                .unwrap_or_else(|| panic!("no {test} row for {size} B in {rows:?}"));
            assert_eq!(r.imp, imp);
            assert_eq!(r.unit, unit);
            assert!(r.value.is_finite() && r.value > 0.0, "{r:?}");
        }
    }
    // A message rate below 10/s or a latency above 1 s means something is badly wrong.
    for r in rows {
        match r.unit.as_str() {
            "msg/s" => assert!(r.value > 10.0, "{r:?}"),
            "us" => assert!(r.value < 1e6, "{r:?}"),
            _ => {}
        }
    }
}

#[test]
fn two_process_job_writes_csv_and_svg() {
    let dir = tmpdir("shm");
    let out = run(&dir, &["--sizes", "8,4096,65536"]);
    let rows = read_csv(&dir.join("m.csv")).unwrap();
    check(
        &rows,
        "skifch-shm",
        &[
            ("msgrate", "msg/s"),
            ("bandwidth", "MB/s"),
            ("latency", "us"),
        ],
        &[8, 4096, 65536],
    );
    let svg = std::fs::read_to_string(dir.join("m.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("skifch-shm msgrate"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("msg/s") && stdout.contains("65536"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("n2one skipped"), "{stderr}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn in_process_three_ranks_with_peers() {
    let dir = tmpdir("local");
    let peers = dir.join("peers.csv");
    std::fs::write(
        &peers,
        "impl,test,size,value,unit\nrawring,msgrate,64,26400000,msg/s\nmpich,msgrate,64,9200000,msg/s\n",
    )
    .unwrap();
    let peers = peers.to_str().unwrap();
    let out = run(
        &dir,
        &[
            "--local",
            "-n",
            "3",
            "--tests",
            "n2one,msgrate",
            "--sizes",
            "64",
            "--peers",
            peers,
        ],
    );
    let rows = read_csv(&dir.join("m.csv")).unwrap();
    check(
        &rows,
        "skifch-local",
        &[("msgrate", "msg/s"), ("n2one", "msg/s")],
        &[64],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("(mpich)") && stdout.contains("skifch/rawring"),
        "{stdout}"
    );
    let svg = std::fs::read_to_string(dir.join("m.svg")).unwrap();
    assert!(svg.contains("rawring msgrate") && svg.contains("skifch-local n2one"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn over_the_fpga_device_model() {
    // The FPGA adapter driver over the behavioural device model (threads): the same tool,
    // correct data at every size (the receiver checks every byte), beside the shm driver.
    let dir = tmpdir("fpga");
    run(
        &dir,
        &[
            "--fpga-model",
            "--tests",
            "msgrate,latency",
            "--sizes",
            "8,4096,65536",
        ],
    );
    let rows = read_csv(&dir.join("m.csv")).unwrap();
    check(
        &rows,
        "skifch-fpga-model",
        &[("msgrate", "msg/s"), ("latency", "us")],
        &[8, 4096, 65536],
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_options_fail_with_a_message() {
    let out = Command::new(env!("CARGO_BIN_EXE_msgrate"))
        .args(["--tests", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown test"));
}
