//! The torus-sim measurements (`report::run`) against the bisection bound, determinism per
//! seed, and every pattern on degenerate and odd tori (moved here from `fpga/tests/torus.rs`
//! with the report code).

use fpga::torus::traffic::Pattern;
use fpga::torus::{Config, Dims};
use torus_sim::report::{self, Spec};

fn dims(x: u8, y: u8, z: u8) -> Dims {
    Dims::new(x, y, z).unwrap()
}

#[test]
fn all_to_all_stays_under_and_near_the_bisection_bound() {
    // Bound: T ≤ 8·b·(N − 1)/k of wire bytes per ns (topology::Dims::bisection_bound).
    let d = dims(4, 4, 4);
    // No adapter overhead, adapters faster than the links: the network is the bottleneck.
    let cfg = Config {
        dims: d,
        nic_msg_ns: 0.0,
        inject_bw: 64.0,
        eject_bw: 64.0,
        ..Config::default()
    };
    let spec = Spec {
        cfg: cfg.clone(),
        pattern: Pattern::AllToAll,
        size: 256,
        messages: 63 * 3,
        interval_ns: 0.0,
        seed: 1,
    };
    let r = report::run(&spec).unwrap();
    let wire_per_msg = cfg.wire_bytes(256) as f64;
    let t = r.delivered as f64 * wire_per_msg / r.elapsed_ns;
    let bound = d.bisection_bound(cfg.link_bw);
    assert_eq!(bound, 8.0 * 4.0 * 63.0 / 4.0);
    assert!(t <= bound, "{t} B/ns above the bisection bound {bound}");
    // Dimension-order routing with finite buffers reaches a good share of it.
    assert!(
        t >= 0.5 * bound,
        "{t} B/ns: less than half the bisection bound {bound}"
    );
    assert!(r.util_max <= 1.0);
}

#[test]
fn same_seed_same_result() {
    let spec = Spec {
        cfg: Config {
            dims: dims(4, 4, 2),
            ..Config::default()
        },
        pattern: Pattern::Uniform,
        size: 300,
        messages: 40,
        interval_ns: 20.0,
        seed: 42,
    };
    let a = report::run(&spec).unwrap();
    let b = report::run(&spec).unwrap();
    assert_eq!(a, b);
    let c = report::run(&Spec { seed: 43, ..spec }).unwrap();
    assert_ne!(a.lat_max, c.lat_max);
}

#[test]
fn every_pattern_runs_on_degenerate_and_odd_tori() {
    for d in [dims(1, 1, 1), dims(2, 1, 1), dims(3, 3, 1), dims(2, 2, 2)] {
        for p in Pattern::ALL {
            let spec = Spec {
                cfg: Config {
                    dims: d,
                    ..Config::default()
                },
                pattern: p,
                size: 100,
                messages: 5,
                interval_ns: 0.0,
                seed: 3,
            };
            let r = report::run(&spec).unwrap();
            assert_eq!(r.delivered, 5 * p.senders(&d).len() as u64, "{p} on {d}");
        }
    }
}
