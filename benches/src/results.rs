//! Result rows and the CSV format shared with `../shared/peers`: a header line
//! `impl,test,size,value,unit`, then one line per point, e.g.
//! `skifch-shm,msgrate,8,31000000,msg/s` or `skifch-shm,latency,8,0.210,us`.

use std::fmt::Write as _;
use std::path::Path;

use crate::{BenchError, Result};

/// The CSV header line.
pub const HEADER: &str = "impl,test,size,value,unit";

/// One measured point.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub imp: String,
    pub test: String,
    pub size: u64,
    pub value: f64,
    pub unit: String,
}

impl Row {
    pub fn new(imp: &str, test: &str, size: u64, value: f64, unit: &str) -> Self {
        Row {
            imp: imp.into(),
            test: test.into(),
            size,
            value,
            unit: unit.into(),
        }
    }

    /// The CSV line (no newline), with the peers' precision: whole msg/s, 3 decimals for us and %.
    ///
    /// ```
    /// use skifch_benches::results::Row;
    /// assert_eq!(Row::new("skifch-shm", "msgrate", 8, 3.14159e7, "msg/s").csv(),
    ///            "skifch-shm,msgrate,8,31415900,msg/s");
    /// assert_eq!(Row::new("skifch-shm", "latency", 8, 0.21049, "us").csv(),
    ///            "skifch-shm,latency,8,0.210,us");
    /// ```
    pub fn csv(&self) -> String {
        let v = match self.unit.as_str() {
            "us" | "%" => format!("{:.3}", self.value),
            "MB/s" => format!("{:.1}", self.value),
            _ => format!("{:.0}", self.value),
        };
        format!("{},{},{},{v},{}", self.imp, self.test, self.size, self.unit)
    }

    /// Parses one CSV line.
    pub fn parse(line: &str) -> Option<Row> {
        let f: Vec<&str> = line.trim().split(',').collect();
        if f.len() != 5 || f.iter().any(|s| s.is_empty()) {
            return None;
        }
        Some(Row {
            imp: f[0].into(),
            test: f[1].into(),
            size: f[2].parse().ok()?,
            value: f[3].parse().ok().filter(|v: &f64| v.is_finite())?,
            unit: f[4].into(),
        })
    }
}

/// Whether an impl name is one of ours: the raw channels (`skifch-*`) or a library on them
/// (`mpi-lite`, `skifshmem`, as the combined run names them).
///
/// ```
/// use skifch_benches::results::is_ours;
/// assert!(is_ours("skifch-shm") && is_ours("mpi-lite") && is_ours("skifshmem"));
/// assert!(!is_ours("openmpi") && !is_ours("oshmem"));
/// ```
pub fn is_ours(imp: &str) -> bool {
    imp.starts_with("skifch") || imp.starts_with("mpi-lite") || imp.starts_with("skifshmem")
}

/// The whole CSV text (header + rows).
pub fn to_csv(rows: &[Row]) -> String {
    let mut s = String::from(HEADER);
    s.push('\n');
    for r in rows {
        let _ = writeln!(s, "{}", r.csv());
    }
    s
}

/// Writes `rows` to `path`, creating its directory.
pub fn write_csv(path: &Path, rows: &[Row]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| BenchError::io(format!("creating {}", dir.display()), e))?;
    }
    std::fs::write(path, to_csv(rows))
        .map_err(|e| BenchError::io(format!("writing {}", path.display()), e))
}

/// Reads a results CSV (ours or the peers'): the header line is required; blank lines and
/// lines starting with `#` are skipped; any other malformed line is an error.
pub fn read_csv(path: &Path) -> Result<Vec<Row>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| BenchError::io(format!("reading {}", path.display()), e))?;
    parse_csv(&text).map_err(|e| BenchError::Setup(format!("{}: {e}", path.display())))
}

/// Parses CSV text as [`read_csv`] does.
pub fn parse_csv(text: &str) -> Result<Vec<Row>, String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    match lines.next() {
        Some((_, h)) if h.trim() == HEADER => {}
        _ => return Err(format!("the first line must be the header {HEADER:?}")),
    }
    lines
        .map(|(i, l)| Row::parse(l).ok_or_else(|| format!("line {}: cannot parse {l:?}", i + 1)))
        .collect()
}

/// Formats a rate for the table: `139.2M`, `503k`, `812`.
///
/// ```
/// use skifch_benches::results::si;
/// assert_eq!(si(139_175_961.0), "139.2M");
/// assert_eq!(si(503_000.0), "503k");
/// assert_eq!(si(2_150_000_000.0), "2.15G");
/// ```
pub fn si(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let rows = vec![
            Row::new("a", "msgrate", 8, 1234.0, "msg/s"),
            Row::new("a", "latency", 8, 0.125, "us"),
            Row::new("a", "bandwidth", 4096, 812.5, "MB/s"),
        ];
        assert_eq!(parse_csv(&to_csv(&rows)).unwrap(), rows);
        assert!(parse_csv("a,b,1,2,us\n").is_err(), "header required");
        assert!(parse_csv(&format!("{HEADER}\na,b,x,2,us\n")).is_err());
        assert!(parse_csv(&format!("{HEADER}\na,b,1,nan,us\n")).is_err());
        assert_eq!(
            parse_csv(&format!("{HEADER}\n# note\n\na,b,1,2,us\n")).unwrap(),
            vec![Row::new("a", "b", 1, 2.0, "us")]
        );
    }

    #[test]
    fn the_peers_file_parses() {
        let p =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/peers/results-2026-11-22.csv");
        if !p.exists() {
            eprintln!("skipped: {} not found", p.display());
            return;
        }
        let rows = read_csv(&p).unwrap();
        assert!(rows
            .iter()
            .any(|r| r.imp == "rawring" && r.test == "msgrate" && r.size == 8));
    }
}
