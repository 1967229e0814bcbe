//! Test program for the job bootstrap (`tests/boot.rs`, the namespace tests of
//! `skifch-testing`): each mode plays one scenario through `skifch_drivers::boot::from_env`.
//!
//! ```text
//! boot_probe check <nodes>    all-gathers strings of different lengths (rank r: 1500·r + 7
//!                             bytes of every value 0..=255, longer than PMI's 1 KiB values),
//!                             checks every rank's, barriers, checks that the ranks agree on
//!                             node_of and that it names <nodes> nodes; prints
//!                             "boot_probe ok rank R of N, nodes K, node I, netns NS, via NAME"
//!                             and exits 0
//! boot_probe abort <rank>     <rank> aborts the job with exit code 7 and exits 7; the others
//!                             wait in a barrier: exit 42 if it fails, 98 if it completes
//! boot_probe die <rank>       the same, but <rank> exits 9 without finalizing
//! boot_probe rejoin          drops its bootstrap (finalize) and asks again: refused with
//!                             a reason (a 1-rank job: a new one); exit 0
//! boot_probe server-gone <dir> every rank joins, writes <dir>/pid.R (its pid and its parent's),
//!                             then waits in a barrier that never completes (nobody
//!                             answers once the test killed the servers); a rank whose barrier
//!                             fails writes the error to <dir>/err.R and exits 42
//! ```
//! Unexpected outcomes exit 98 with a message on stderr.
use std::io::Write;
use std::sync::Arc;

use skifch_drivers::boot::{self, Bootstrap};

/// Exit status of a rank whose barrier failed as expected.
const SAW_ERROR: i32 = 42;

fn say(msg: &str) {
    let _ = std::io::stderr().write_all(format!("boot_probe: {msg}\n").as_bytes());
}

fn fail(msg: String) -> ! {
    say(&msg);
    std::process::exit(98)
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize) -> T {
    args.get(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fail(format!("argument {i} missing or bad in {args:?}")))
}

/// Rank `r`'s contribution: every byte value (spaces, `=`, newlines, NULs included).
fn pattern(r: u32) -> Vec<u8> {
    (0..(1500 * r as usize + 7))
        .map(|i| (i as u32 * 7 + r) as u8)
        .collect()
}

fn check(boot: &Arc<dyn Bootstrap>, nodes: u32) {
    let (rank, size) = (boot.rank(), boot.size());
    let all = boot
        .allgather(&pattern(rank))
        .unwrap_or_else(|e| fail(format!("allgather: {e}")));
    if all.len() != size as usize {
        fail(format!(
            "allgather gave {} entries for {size} ranks",
            all.len()
        ));
    }
    for (r, got) in all.iter().enumerate() {
        if *got != pattern(r as u32) {
            fail(format!(
                "rank {rank}: rank {r}'s contribution is wrong ({} bytes)",
                got.len()
            ));
        }
    }
    // An empty contribution, and a second exchange on the same connection.
    let empty = boot
        .allgather(b"")
        .unwrap_or_else(|e| fail(format!("empty allgather: {e}")));
    if empty.iter().any(|e| !e.is_empty()) || empty.len() != size as usize {
        fail(format!("empty allgather gave {empty:?}"));
    }
    boot.barrier()
        .unwrap_or_else(|e| fail(format!("barrier: {e}")));
    let mine: Vec<u8> = (0..size)
        .flat_map(|r| boot.node_of(r).to_le_bytes())
        .collect();
    let views = boot
        .allgather(&mine)
        .unwrap_or_else(|e| fail(format!("allgather of node_of: {e}")));
    if views.iter().any(|v| *v != mine) {
        fail(format!("ranks disagree on node_of: {views:?}"));
    }
    let distinct = (0..size)
        .map(|r| boot.node_of(r))
        .max()
        .map_or(0, |m| m + 1);
    let counted = {
        let mut v: Vec<u32> = (0..size).map(|r| boot.node_of(r)).collect();
        v.sort_unstable();
        v.dedup();
        v.len() as u32
    };
    if distinct != nodes || counted != nodes {
        fail(format!(
            "node_of names {counted} nodes (largest index {}), expected {nodes}: {:?}",
            distinct.saturating_sub(1),
            (0..size).map(|r| boot.node_of(r)).collect::<Vec<_>>()
        ));
    }
    let netns = std::fs::read_link("/proc/self/ns/net").unwrap_or_default();
    println!(
        "boot_probe ok rank {rank} of {size}, nodes {nodes}, node {}, netns {}, via {}",
        boot.node_of(rank),
        netns.display(),
        boot.name()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("check");
    let boot = boot::from_env().unwrap_or_else(|e| fail(format!("from_env: {e}")));
    let again = boot::from_env().unwrap_or_else(|e| fail(format!("second from_env: {e}")));
    if !Arc::ptr_eq(&boot, &again) {
        fail("a second from_env did not share the first connection".into());
    }
    drop(again);
    let rank = boot.rank();
    if mode == "rejoin" {
        // Dropping the last Arc finalizes; joining again is refused with a reason.
        let name = boot.name();
        drop(boot);
        match boot::from_env() {
            Err(e) if name != "single" && e.to_string().contains("was finalized") => {
                println!("boot_probe rejoin refused: {e}");
                return;
            }
            Ok(b) if name == "single" && b.size() == 1 => {
                println!("boot_probe rejoin: a new 1-rank bootstrap");
                return;
            }
            r => fail(format!(
                "rejoin after finalize ({name}) gave {:?}",
                r.map(|b| b.name())
            )),
        }
    }
    match mode {
        "check" => check(&boot, arg(&args, 2)),
        "abort" | "die" => {
            if rank == arg::<u32>(&args, 2) {
                if mode == "die" {
                    std::process::exit(9);
                }
                boot.abort(7, "boot_probe abort test")
                    .unwrap_or_else(|e| fail(format!("abort: {e}")));
                std::process::exit(7); // as the trait asks: the launcher may take a moment
            }
            match boot.barrier() {
                // PMIx and skifrun tell the survivors; hydra ends them.
                Err(e) => {
                    say(&format!("rank {rank}: barrier failed as expected: {e}"));
                    std::process::exit(SAW_ERROR)
                }
                Ok(()) => fail(format!("the barrier completed although a rank did {mode}")),
            }
        }
        "server-gone" => {
            let dir = std::path::PathBuf::from(arg::<String>(&args, 2));
            let ids = format!(
                "{} {}\n",
                std::process::id(),
                std::os::unix::process::parent_id()
            );
            let tmp = dir.join(format!("tmp.{rank}"));
            std::fs::write(&tmp, ids).unwrap_or_else(|e| fail(format!("writing {tmp:?}: {e}")));
            let _ = std::fs::rename(&tmp, dir.join(format!("pid.{rank}")));
            // Rank 0 never arrives, so the barrier cannot complete while servers live.
            let r = if rank == 0 {
                std::thread::sleep(std::time::Duration::from_secs(120));
                Ok(())
            } else {
                boot.barrier()
            };
            match r {
                Err(e) => {
                    // Whole or not at all: the test reads it as soon as it exists.
                    let tmp = dir.join(format!("tmp-err.{rank}"));
                    let _ = std::fs::write(&tmp, e.to_string());
                    let _ = std::fs::rename(&tmp, dir.join(format!("err.{rank}")));
                    std::process::exit(SAW_ERROR)
                }
                Ok(()) => fail("the barrier completed although rank 0 never entered it".into()),
            }
        }
        _ => fail(format!("unknown mode {mode:?}")),
    }
}
