//! The numbers of a combined run: CSV lines of a program's output, the median over rounds,
//! and the machine's load ([`CpuSnap`], [`loadavg`]) for the notes.

use std::collections::BTreeMap;

use crate::results::Row;

/// The `impl,test,size,value,unit` lines of a program's output (other lines are notes).
pub fn csv_lines(text: &str) -> Vec<Row> {
    text.lines()
        .filter(|l| !l.starts_with('#') && l.trim() != crate::results::HEADER)
        .filter_map(Row::parse)
        .collect()
}

/// Several rounds of the same points into one: per (impl, test, size, unit) the median of
/// the rounds that measured it (the mean of the two middle values for an even count).
pub fn median_rounds(rounds: &[Vec<Row>]) -> Vec<Row> {
    let mut by: BTreeMap<(String, String, u64, String), Vec<f64>> = BTreeMap::new();
    let mut order = Vec::new();
    for r in rounds.iter().flatten() {
        let k = (r.imp.clone(), r.test.clone(), r.size, r.unit.clone());
        let v = by.entry(k.clone()).or_default();
        if v.is_empty() {
            order.push(k);
        }
        v.push(r.value);
    }
    order
        .into_iter()
        .map(|k| {
            let mut v = by.remove(&k).unwrap_or_default();
            v.sort_by(f64::total_cmp);
            let n = v.len();
            let m = (v[(n - 1) / 2] + v[n / 2]) / 2.0;
            Row::new(&k.0, &k.1, k.2, m, &k.3)
        })
        .collect()
}

/// CPU time counters for "other work" during a group, as `run.sh` computes it: the busy
/// time of all CPUs (`/proc/stat`) minus the CPU time of our own finished children
/// (`/proc/self/stat` cutime + cstime, which includes their children once waited for), in
/// clock ticks.
#[derive(Clone, Copy, Debug)]
pub struct CpuSnap {
    busy: u64,
    total: u64,
    mine: u64,
}

impl CpuSnap {
    /// The counters now; `None` where `/proc` is not readable.
    pub fn now() -> Option<CpuSnap> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let cpu: Vec<u64> = stat
            .lines()
            .next()?
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(|v| v.parse().ok())
            .collect::<Option<_>>()?;
        if cpu.len() < 8 {
            return None;
        }
        // user nice system idle iowait irq softirq steal: busy as run.sh counts it
        let busy = cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6];
        let me = std::fs::read_to_string("/proc/self/stat").ok()?;
        let rest: Vec<&str> = me.rsplit_once(')')?.1.split_whitespace().collect();
        // fields 16 and 17 of proc(5), counted from field 3 after the command name
        let mine = rest.get(13)?.parse::<u64>().ok()? + rest.get(14)?.parse::<u64>().ok()?;
        Some(CpuSnap {
            busy,
            total: cpu.iter().sum(),
            mine,
        })
    }

    /// Percent of all CPUs' time between `self` and `later` used by processes not ours.
    pub fn other_work_pct(&self, later: &CpuSnap) -> f64 {
        let total = later.total.saturating_sub(self.total);
        let busy = later.busy.saturating_sub(self.busy);
        let ours = later.mine.saturating_sub(self.mine);
        if total == 0 {
            return 0.0;
        }
        100.0 * busy.saturating_sub(ours) as f64 / total as f64
    }
}

/// The load average now (`/proc/loadavg`, first three fields), for the notes.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    #[test]
    fn other_work_counts_only_what_is_not_ours() {
        let a = CpuSnap::now().expect("/proc is readable");
        // burn ~200 ms of CPU in a child: it is ours, so it must not count as other work
        let st = Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status()
            .unwrap();
        assert!(st.success());
        let b = CpuSnap::now().unwrap();
        assert!(
            b.mine > a.mine,
            "the child's CPU time was not seen: {a:?} {b:?}"
        );
        let p = a.other_work_pct(&b);
        assert!((0.0..=100.0).contains(&p), "{p}");
        let fake = CpuSnap {
            busy: a.busy + 100,
            total: a.total + 400,
            mine: a.mine + 60,
        };
        assert_eq!(a.other_work_pct(&fake), 10.0);
    }

    #[test]
    fn median_over_rounds() {
        let r = |v| vec![Row::new("a", "msgrate", 8, v, "msg/s")];
        let m = median_rounds(&[r(3.0), r(1.0), r(2.0)]);
        assert_eq!(m, r(2.0));
        assert_eq!(median_rounds(&[r(4.0), r(1.0)]), r(2.5));
    }

    #[test]
    fn csv_lines_skip_notes_and_header() {
        let rows =
            csv_lines("impl,test,size,value,unit\n# note\nmpi-lite,msgrate,8,100,msg/s\ngarbage\n");
        assert_eq!(
            rows,
            vec![Row::new("mpi-lite", "msgrate", 8, 100.0, "msg/s")]
        );
    }
}
