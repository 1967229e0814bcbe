//! `torus-sim`: replays traffic patterns on a simulated SKIF 3D torus and reports message
//! rate, latency percentiles and link utilisation (table, CSV, SVG). See `fpga/TORUS.md`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use fpga::torus::traffic::Pattern;
use fpga::torus::{Config, Dims};
use fpga::{Error, Result};
use torus_sim::plot::{self, Series};
use torus_sim::report::{self, Report, Spec};

/// Simulate the SKIF-Aurora 3D-torus network: message rate, latency and link use of traffic
/// patterns on tori from 2x2x2 to 16x16x16. Parameter defaults are assumptions close to
/// SKIF-Aurora (4 lanes x 10 Gbit/s links, FPGA routers, PCIe 2.0 x8 adapters); see
/// fpga/TORUS.md for their sources.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Torus sizes, XxYxZ, each dimension 1..=16 (several: 4x4x4,8x8x8).
    #[arg(long, value_delimiter = ',', default_value = "4x4x4")]
    dims: Vec<String>,
    /// Traffic patterns: pairs (the paper's MsgRate), alltoall, halo, hotspot, uniform.
    #[arg(long, value_delimiter = ',', default_value = "pairs")]
    pattern: Vec<String>,
    /// Message sizes, bytes.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "8,16,32,64,128,256,512,1024,2048"
    )]
    sizes: Vec<u32>,
    /// Messages per sender.
    #[arg(long, default_value_t = 1000)]
    messages: u32,
    /// Gap between a sender's messages, ns (0 = back to back, saturating).
    #[arg(long, default_value_t = 0.0)]
    interval_ns: f64,
    /// Link bandwidth per direction, bytes/ns (4 = 4 lanes x 10 Gbit/s, 8b/10b; assumption).
    #[arg(long, default_value_t = Config::default().link_bw)]
    link_bw: f64,
    /// Link latency (cable + SerDes), ns (assumption).
    #[arg(long, default_value_t = Config::default().link_ns)]
    link_ns: f64,
    /// Router latency per hop, ns (assumption: FPGA pipeline).
    #[arg(long, default_value_t = Config::default().router_ns)]
    router_ns: f64,
    /// Largest packet payload, bytes (assumption).
    #[arg(long, default_value_t = Config::default().max_payload)]
    max_payload: u32,
    /// Per-packet header + CRC bytes on the wire (assumption).
    #[arg(long, default_value_t = Config::default().overhead)]
    overhead: u32,
    /// Credit unit (flit), bytes (assumption: 128-bit datapath).
    #[arg(long, default_value_t = Config::default().flit_bytes)]
    flit: u32,
    /// Input buffer per virtual channel, flits (credits; 128 x 16 B = 2 KiB covers the credit
    /// round trip; assumption).
    #[arg(long, default_value_t = Config::default().buf_flits)]
    buf: u32,
    /// Virtual channels per link: 2 = dateline, deadlock-free; 1 = can deadlock.
    #[arg(long, default_value_t = Config::default().vcs)]
    vcs: u8,
    /// Host-to-adapter DMA bandwidth, bytes/ns (PCIe 2.0 x8; assumption).
    #[arg(long, default_value_t = Config::default().inject_bw)]
    inject_bw: f64,
    /// Adapter-to-host DMA bandwidth, bytes/ns.
    #[arg(long, default_value_t = Config::default().eject_bw)]
    eject_bw: f64,
    /// Adapter time per message (descriptor, doorbell), ns (assumption).
    #[arg(long, default_value_t = Config::default().nic_msg_ns)]
    nic_msg_ns: f64,
    /// Seed of the uniform pattern.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the results as CSV (impl,test,size,value,unit).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write an SVG plot of message rate against size.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// The paper's case: MsgRate pairs, 8 B to 2 KiB, on a 4x4x4 torus, with the
    /// assumptions printed (overrides --dims, --pattern and --sizes).
    #[arg(long)]
    paper: bool,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("torus-sim: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(mut a: Args) -> Result<()> {
    if a.paper {
        a.dims = vec!["4x4x4".into()];
        a.pattern = vec!["pairs".into()];
        a.sizes = (3..=11).map(|i| 1 << i).collect();
    }
    let dims: Vec<Dims> = a.dims.iter().map(|d| d.parse()).collect::<Result<_>>()?;
    let patterns: Vec<Pattern> = a.pattern.iter().map(|p| p.parse()).collect::<Result<_>>()?;
    let base = Config {
        dims: dims[0],
        link_bw: a.link_bw,
        link_ns: a.link_ns,
        router_ns: a.router_ns,
        max_payload: a.max_payload,
        overhead: a.overhead,
        flit_bytes: a.flit,
        buf_flits: a.buf,
        vcs: a.vcs,
        inject_bw: a.inject_bw,
        eject_bw: a.eject_bw,
        nic_msg_ns: a.nic_msg_ns,
    };
    base.validate()?;
    print_assumptions(&base, &a);
    let mut reports = Vec::new();
    for &d in &dims {
        let cfg = Config {
            dims: d,
            ..base.clone()
        };
        println!(
            "\n== {d} torus, {} nodes: mean hops (uniform, closed form) {:.3}, all-to-all \
             bisection bound {:.1} B/ns aggregate",
            d.nodes(),
            d.mean_hops_uniform(),
            d.bisection_bound(cfg.link_bw)
        );
        println!("{}", Report::table_header());
        for &pattern in &patterns {
            for &size in &a.sizes {
                let spec = Spec {
                    cfg: cfg.clone(),
                    pattern,
                    size,
                    messages: a.messages,
                    interval_ns: a.interval_ns,
                    seed: a.seed,
                };
                let r = report::run(&spec)?;
                println!("{}", r.table_row());
                reports.push(r);
            }
        }
    }
    if a.paper {
        print_paper(&reports);
    }
    if let Some(path) = &a.csv {
        write_csv(path, &reports)?;
        println!("\nCSV: {}", path.display());
    }
    if let Some(path) = &a.svg {
        let series: Vec<Series> = reports
            .chunk_by(|x, y| x.spec.pattern == y.spec.pattern && x.spec.cfg.dims == y.spec.cfg.dims)
            .map(|c| {
                let label = format!("{} {}", c[0].spec.pattern, c[0].spec.cfg.dims);
                (
                    label,
                    c.iter().map(|r| (r.spec.size, r.rate_per_sender)).collect(),
                )
            })
            .collect();
        let title = format!("torus-sim: message rate per sender (vcs {})", base.vcs);
        plot::rate_svg(path, &title, &series)?;
        println!("SVG: {}", path.display());
    }
    Ok(())
}

fn print_assumptions(c: &Config, a: &Args) {
    println!(
        "torus-sim assumptions (defaults are assumptions close to SKIF-Aurora, not measurements):"
    );
    println!(
        "  link: {} B/ns per direction ({:.1} Gbit/s of data), {} ns latency; router {} ns per hop",
        c.link_bw,
        c.link_bw * 8.0,
        c.link_ns,
        c.router_ns
    );
    println!(
        "  packets: max payload {} B + {} B header/CRC; {} VC(s) x {} flits of {} B (credits)",
        c.max_payload, c.overhead, c.vcs, c.buf_flits, c.flit_bytes
    );
    println!(
        "  adapter: inject {} B/ns, eject {} B/ns (PCIe), {} ns per message",
        c.inject_bw, c.eject_bw, c.nic_msg_ns
    );
    println!(
        "  traffic: {} messages per sender, interval {} ns (0 = saturating), seed {}",
        a.messages, a.interval_ns, a.seed
    );
}

fn print_paper(reports: &[Report]) {
    println!(
        "\nPredicted MsgRate on a 4x4x4 torus (each of 32 nodes streams to node i+32, 2 hops):"
    );
    println!(
        "{:>6} {:>14} {:>14} {:>12} {:>14} {:>10}",
        "size B", "Mmsg/s/pair", "adapter bound", "p50 lat ns", "zero-load ns", "link max%"
    );
    for r in reports {
        let c = &r.spec.cfg;
        println!(
            "{:>6} {:>14.3} {:>14.3} {:>12.0} {:>14.0} {:>10.1}",
            r.spec.size,
            r.rate_per_sender / 1e6,
            c.nic_msg_rate(r.spec.size) / 1e6,
            r.lat_p50,
            c.zero_load_ns(2, r.spec.size),
            r.util_max * 100.0
        );
    }
}

fn write_csv(path: &PathBuf, reports: &[Report]) -> Result<()> {
    let io = |source| Error::Io {
        what: format!("write {}", path.display()),
        source,
    };
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    writeln!(f, "{}", report::CSV_HEADER).map_err(io)?;
    for r in reports {
        for row in r.csv_rows() {
            writeln!(f, "{row}").map_err(io)?;
        }
    }
    f.flush().map_err(io)
}
