//! The terminal table of a MsgRate run ([`table`]), beside the peers' best MPI and raw ring.

use crate::results::Row;

/// MPI implementations among the peers (`../shared/peers`), for the "best MPI" column.
pub const MPI_IMPLS: [&str; 3] = ["openmpi", "openmpi-ucx", "mpich"];
/// The peers' raw ring, the physical limit.
pub const RAWRING: &str = "rawring";

/// The terminal table: one line per size with our msg/s, MB/s, latency (and n2one), and,
/// when `peers` has them, the best MPI `msgrate` and `rawring` `msgrate` with our ratio.
pub fn table(ours: &[Row], peers: &[Row]) -> String {
    use std::fmt::Write as _;
    let get = |rows: &[Row], imp: Option<&str>, test: &str, size: u64| {
        rows.iter()
            .find(|r| imp.iter().all(|i| r.imp == *i) && r.test == test && r.size == size)
            .map(|r| r.value)
    };
    let mut sizes: Vec<u64> = ours.iter().map(|r| r.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let has = |test: &str| ours.iter().any(|r| r.test == test);
    let with_peers = !peers.is_empty();
    let mut head = vec!["size", "msg/s", "MB/s", "lat us"];
    if has("n2one") {
        head.push("n2one msg/s");
    }
    if with_peers {
        head.extend([
            "best MPI msg/s",
            "skifch/best MPI",
            "rawring msg/s",
            "skifch/rawring",
        ]);
    }
    let dash = || "-".to_string();
    let mut lines: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for &size in &sizes {
        let rate = get(ours, None, "msgrate", size);
        let mut l = vec![
            size.to_string(),
            rate.map_or_else(dash, crate::results::si),
            rate.map_or_else(dash, |r| format!("{:.1}", r * size as f64 / 1e6)),
            get(ours, None, "latency", size).map_or_else(dash, |v| format!("{v:.3}")),
        ];
        if has("n2one") {
            l.push(get(ours, None, "n2one", size).map_or_else(dash, crate::results::si));
        }
        if with_peers {
            let mpi = MPI_IMPLS
                .iter()
                .filter_map(|i| get(peers, Some(i), "msgrate", size).map(|v| (v, *i)))
                .max_by(|a, b| a.0.total_cmp(&b.0));
            let raw = get(peers, Some(RAWRING), "msgrate", size);
            let ratio = |p: Option<f64>| match (rate, p) {
                (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
                _ => dash(),
            };
            l.push(mpi.map_or_else(dash, |(v, i)| format!("{} ({i})", crate::results::si(v))));
            l.push(ratio(mpi.map(|m| m.0)));
            l.push(raw.map_or_else(dash, crate::results::si));
            l.push(ratio(raw));
        }
        lines.push(l);
    }
    let widths: Vec<usize> = (0..head.len())
        .map(|c| lines.iter().map(|l| l[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for l in &lines {
        let cells: Vec<String> = l
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_ratios_against_the_best_mpi_and_the_raw_ring() {
        let ours = vec![
            Row::new("skifch-shm", "msgrate", 8, 30e6, "msg/s"),
            Row::new("skifch-shm", "latency", 8, 0.2, "us"),
        ];
        let peers = vec![
            Row::new("openmpi", "msgrate", 8, 10e6, "msg/s"),
            Row::new("mpich", "msgrate", 8, 15e6, "msg/s"),
            Row::new("rawring", "msgrate", 8, 60e6, "msg/s"),
            Row::new("rawring", "latency", 8, 0.1, "us"),
        ];
        let t = table(&ours, &peers);
        let line = t.lines().nth(1).unwrap();
        assert!(line.contains("15.0M (mpich)"), "{t}");
        assert!(line.contains("2.00"), "{t}");
        assert!(line.contains("0.50"), "{t}");
        assert!(line.contains("0.200"), "{t}");
        assert!(!table(&ours, &[]).contains("rawring"));
    }
}
