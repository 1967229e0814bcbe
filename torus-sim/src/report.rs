//! One simulator run of a pattern at a message size, and what it measures.

use hdrhistogram::Histogram;

use fpga::torus::traffic::Pattern;
use fpga::torus::{Config, Message, Network, NodeId, Port};
use fpga::{Error, Result};

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// The network and adapter parameters.
    pub cfg: Config,
    /// Who sends to whom.
    pub pattern: Pattern,
    /// Payload bytes per message.
    pub size: u32,
    /// Messages per sender.
    pub messages: u32,
    /// Gap between a sender's messages, ns; 0 = all at time 0 (saturating: the adapters send
    /// as fast as they and the network can, as in MsgRate).
    pub interval_ns: f64,
    /// Seed of the pattern's random choices (`uniform`).
    pub seed: u64,
}

/// What a run measured. Rates are in messages per second of simulated time.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// What was run.
    pub spec: Spec,
    /// Nodes that sent.
    pub senders: usize,
    /// Messages delivered.
    pub delivered: u64,
    /// Time of the last delivery, ns.
    pub elapsed_ns: f64,
    /// All deliveries / elapsed.
    pub rate_aggregate: f64,
    /// Mean over senders of (its messages / time its last message was delivered): the
    /// MsgRate figure per pair.
    pub rate_per_sender: f64,
    /// The slowest sender's rate.
    pub rate_per_sender_min: f64,
    /// Message latency (inject → last packet in host memory), ns.
    pub lat_p50: f64,
    /// 90th percentile latency, ns.
    pub lat_p90: f64,
    /// 99th percentile latency, ns.
    pub lat_p99: f64,
    /// Largest latency, ns.
    pub lat_max: f64,
    /// Mean hops per message.
    pub mean_hops: f64,
    /// Link busy time / elapsed, mean over all links and the busiest one.
    pub util_mean: f64,
    /// Utilisation of the busiest link.
    pub util_max: f64,
    /// The busiest link: node and output port.
    pub busiest: (NodeId, Port),
    /// Offered load per sender, payload bytes/ns (infinite when saturating).
    pub offered: f64,
    /// Accepted load per sender, payload bytes/ns.
    pub accepted: f64,
}

/// Runs `spec` to completion.
///
/// # Examples
/// ```
/// use fpga::torus::{traffic::Pattern, Config, Dims};
/// use torus_sim::report;
/// let cfg = Config { dims: Dims::new(2, 2, 2).unwrap(), ..Config::default() };
/// let spec = report::Spec { cfg, pattern: Pattern::Pairs, size: 8, messages: 100,
///                           interval_ns: 0.0, seed: 1 };
/// let r = report::run(&spec).unwrap();
/// assert_eq!(r.delivered, 400);
/// assert!(r.rate_per_sender <= spec.cfg.nic_msg_rate(8) * 1.0001);
/// ```
pub fn run(spec: &Spec) -> Result<Report> {
    if spec.size > 1 << 26
        || spec.messages == 0
        || spec.interval_ns.is_nan()
        || spec.interval_ns < 0.0
    {
        return Err(Error::BadConfig(format!(
            "run: size {} (max 64 MiB), messages {} (min 1), interval {} ns (min 0)",
            spec.size, spec.messages, spec.interval_ns
        )));
    }
    let mut net = Network::new(spec.cfg.clone())?;
    let dims = spec.cfg.dims;
    let senders = spec.pattern.senders(&dims);
    let flows = spec.pattern.messages(&dims, spec.messages, spec.seed);
    let per_round = senders.len().max(1);
    for (i, &(src, dst)) in flows.iter().enumerate() {
        let t = (i / per_round) as f64 * spec.interval_ns;
        let msg = Message {
            id: i as u64,
            src,
            dst,
            bytes: spec.size,
            tag: 0,
        };
        net.inject(t, msg)?;
    }
    let n = dims.nodes() as usize;
    let mut last = vec![0.0f64; n];
    let mut count = vec![0u64; n];
    // 1 ns .. 2^50 ns (13 days of simulated time), 3 significant digits.
    let mut hist = Histogram::<u64>::new_with_bounds(1, 1 << 50, 3)
        .map_err(|e| Error::BadConfig(e.to_string()))?;
    let (mut delivered, mut hops, mut end) = (0u64, 0u64, 0.0f64);
    net.run_until_with(f64::INFINITY, |d| {
        delivered += 1;
        hops += d.hops as u64;
        end = end.max(d.deliver_ns);
        last[d.src as usize] = last[d.src as usize].max(d.deliver_ns);
        count[d.src as usize] += 1;
        hist.saturating_record(((d.deliver_ns - d.inject_ns).ceil() as u64).max(1));
    })?;
    let rates: Vec<f64> = senders
        .iter()
        .filter(|&&s| last[s as usize] > 0.0)
        .map(|&s| count[s as usize] as f64 * 1e9 / last[s as usize])
        .collect();
    let links = net.link_stats();
    let util = |busy: f64| if end > 0.0 { busy / end } else { 0.0 };
    let busiest = links.iter().max_by(|a, b| a.busy_ns.total_cmp(&b.busy_ns));
    let per = |x: f64| {
        if delivered > 0 {
            x / delivered as f64
        } else {
            0.0
        }
    };
    Ok(Report {
        senders: senders.len(),
        delivered,
        elapsed_ns: end,
        rate_aggregate: if end > 0.0 {
            delivered as f64 * 1e9 / end
        } else {
            0.0
        },
        rate_per_sender: rates.iter().sum::<f64>() / rates.len().max(1) as f64,
        rate_per_sender_min: rates.iter().copied().reduce(f64::min).unwrap_or(0.0),
        lat_p50: hist.value_at_quantile(0.5) as f64,
        lat_p90: hist.value_at_quantile(0.9) as f64,
        lat_p99: hist.value_at_quantile(0.99) as f64,
        lat_max: hist.max() as f64,
        mean_hops: per(hops as f64),
        util_mean: util(links.iter().map(|l| l.busy_ns).sum::<f64>() / links.len().max(1) as f64),
        util_max: busiest.map_or(0.0, |l| util(l.busy_ns)),
        busiest: busiest.map_or((0, Port::PlusX), |l| (l.node, l.port)),
        offered: if spec.interval_ns > 0.0 {
            spec.size as f64 / spec.interval_ns
        } else {
            f64::INFINITY
        },
        accepted: if end > 0.0 {
            delivered as f64 * spec.size as f64 / end / senders.len().max(1) as f64
        } else {
            0.0
        },
        spec: spec.clone(),
    })
}

/// Header of [`Report::csv_rows`]: the benches' `impl,test,size,value,unit` layout.
pub const CSV_HEADER: &str = "impl,test,size,value,unit";

impl Report {
    /// The run as CSV rows: `impl` names the model and torus (`torus-sim-4x4x4-vc2`), `test`
    /// is `pattern/metric`.
    pub fn csv_rows(&self) -> Vec<String> {
        let c = &self.spec.cfg;
        let imp = format!("torus-sim-{}-vc{}", c.dims, c.vcs);
        let p = self.spec.pattern;
        let size = self.spec.size;
        [
            ("rate_per_sender", self.rate_per_sender / 1e6, "Mmsg/s"),
            (
                "rate_per_sender_min",
                self.rate_per_sender_min / 1e6,
                "Mmsg/s",
            ),
            ("rate_aggregate", self.rate_aggregate / 1e6, "Mmsg/s"),
            ("lat_p50", self.lat_p50, "ns"),
            ("lat_p90", self.lat_p90, "ns"),
            ("lat_p99", self.lat_p99, "ns"),
            ("lat_max", self.lat_max, "ns"),
            ("mean_hops", self.mean_hops, "hops"),
            ("link_util_mean", self.util_mean * 100.0, "%"),
            ("link_util_max", self.util_max * 100.0, "%"),
            ("offered_per_sender", self.offered, "B/ns"),
            ("accepted_per_sender", self.accepted, "B/ns"),
        ]
        .into_iter()
        .map(|(m, v, u)| format!("{imp},{p}/{m},{size},{v:.6},{u}"))
        .collect()
    }

    /// Header of [`table_row`](Self::table_row).
    pub fn table_header() -> String {
        format!(
            "{:<9} {:>6} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>6} {:>6} {:>6}  {}",
            "pattern",
            "size",
            "Mmsg/s/tx",
            "Mmsg/s",
            "p50 ns",
            "p90 ns",
            "p99 ns",
            "max ns",
            "hops",
            "util%",
            "max%",
            "busiest link"
        )
    }

    /// One line of the human-readable table.
    pub fn table_row(&self) -> String {
        format!(
            "{:<9} {:>6} {:>10.3} {:>10.2} {:>8.0} {:>8.0} {:>8.0} {:>8.0} {:>6.2} {:>6.1} {:>6.1}  node{}.{}",
            self.spec.pattern.to_string(),
            self.spec.size,
            self.rate_per_sender / 1e6,
            self.rate_aggregate / 1e6,
            self.lat_p50,
            self.lat_p90,
            self.lat_p99,
            self.lat_max,
            self.mean_hops,
            self.util_mean * 100.0,
            self.util_max * 100.0,
            self.busiest.0,
            self.busiest.1,
        )
    }
}
