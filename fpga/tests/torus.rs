//! The torus model against closed forms on small cases, plus conservation, ordering,
//! determinism, deadlock (1 VC) vs deadlock freedom (2 VCs), link faults and bad input.

use std::collections::{HashMap, HashSet};

use fpga::torus::topology::Port;
use fpga::torus::traffic::Pattern;
use fpga::torus::{route, Config, Delivered, Dims, Message, Network, NodeId};
use proptest::prelude::*;

fn dims(x: u8, y: u8, z: u8) -> Dims {
    Dims::new(x, y, z).unwrap()
}

/// Equal bandwidths everywhere and no adapter overhead: the textbook cut-through case.
fn plain(d: Dims) -> Config {
    Config {
        dims: d,
        nic_msg_ns: 0.0,
        inject_bw: 4.0,
        eject_bw: 4.0,
        ..Config::default()
    }
}

fn msg(id: u64, src: NodeId, dst: NodeId, bytes: u32) -> Message {
    Message {
        id,
        src,
        dst,
        bytes,
        tag: id as u32,
    }
}

/// Σ over dimensions of min(d, k − d), written independently of the library.
fn torus_distance(d: &Dims, a: NodeId, b: NodeId) -> u32 {
    let (ca, cb) = (d.coords(a), d.coords(b));
    (0..3)
        .map(|i| {
            let k = d.extents()[i] as i32;
            let diff = (ca[i] as i32 - cb[i] as i32).rem_euclid(k);
            diff.min(k - diff) as u32
        })
        .sum()
}

#[test]
fn routes_are_as_long_as_the_torus_distance() {
    for d in [dims(2, 2, 2), dims(3, 4, 5), dims(4, 4, 4), dims(5, 1, 2)] {
        let n = d.nodes() as NodeId;
        for a in 0..n {
            for b in 0..n {
                let r = route(&d, 2, a, b);
                assert_eq!(r.len() as u32, torus_distance(&d, a, b), "{d} {a}->{b}");
                assert_eq!(d.distance(a, b), torus_distance(&d, a, b));
                // The route ends at b.
                let end = r.last().map_or(a, |h| d.next_node(h.node, h.port));
                assert_eq!(end, b);
            }
        }
    }
}

#[test]
fn simulated_hops_equal_torus_distance() {
    let d = dims(3, 4, 2);
    let mut net = Network::new(plain(d)).unwrap();
    let n = d.nodes() as NodeId;
    let mut id = 0;
    for a in 0..n {
        for b in 0..n {
            net.inject(0.0, msg(id, a, b, 8)).unwrap();
            id += 1;
        }
    }
    let got = net.run().unwrap();
    assert_eq!(got.len(), id as usize);
    for g in got {
        assert_eq!(g.hops, torus_distance(&d, g.src, g.dst));
    }
}

#[test]
fn mean_hop_count_matches_closed_form() {
    // k/4 per even dimension, (k²−1)/(4k) per odd one, times N/(N−1) without self pairs.
    for d in [
        dims(2, 2, 2),
        dims(3, 3, 3),
        dims(4, 4, 4),
        dims(5, 2, 7),
        dims(6, 1, 1),
    ] {
        let n = d.nodes() as NodeId;
        let mut sum = 0u64;
        for a in 0..n {
            for b in (0..n).filter(|&b| b != a) {
                sum += torus_distance(&d, a, b) as u64;
            }
        }
        let mean = sum as f64 / (n as f64 * (n as f64 - 1.0));
        assert!((mean - d.mean_hops_uniform()).abs() < 1e-9, "{d}: {mean}");
    }
    // 4×4×4: 3·(4/4)·64/63.
    assert!((dims(4, 4, 4).mean_hops_uniform() - 192.0 / 63.0).abs() < 1e-12);
    // 3×3×3: 3·(8/12)·27/26.
    assert!((dims(3, 3, 3).mean_hops_uniform() - 2.0 * 27.0 / 26.0).abs() < 1e-12);
}

#[test]
fn zero_load_latency_is_hops_times_router_plus_link_plus_serialisation() {
    let d = dims(4, 4, 4);
    let cfg = plain(d);
    for (dst, bytes) in [(1, 8), (5, 64), (21, 240), (42, 100), (63, 0)] {
        let mut net = Network::new(cfg.clone()).unwrap();
        net.inject(0.0, msg(0, 0, dst, bytes)).unwrap();
        let got = net.run().unwrap();
        let h = d.distance(0, dst) as f64;
        let wire = (bytes + cfg.overhead) as f64;
        let expect = h * (cfg.router_ns + cfg.link_ns) + wire / cfg.link_bw;
        assert!(
            (got[0].deliver_ns - expect).abs() < 0.002,
            "{dst}: {got:?} vs {expect}"
        );
        assert_eq!(expect, cfg.zero_load_ns(h as u32, bytes));
    }
}

#[test]
fn zero_load_latency_of_a_long_message_pipelines_at_the_slowest_stage() {
    // Defaults: injection (3.2 B/ns) is slower than the links (4 B/ns): the closed form is exact.
    let cfg = Config::default();
    for (dst, bytes) in [(1, 2048), (21, 1000), (42, 65536)] {
        let mut net = Network::new(cfg.clone()).unwrap();
        net.inject(0.0, msg(0, 0, dst, bytes)).unwrap();
        let got = net.run().unwrap();
        let expect = cfg.zero_load_ns(got[0].hops, bytes);
        assert!(
            (got[0].deliver_ns - expect).abs() < 0.05,
            "{got:?} vs {expect}"
        );
    }
    // 2 hops, 2048 B = 8 packets of 272 wire bytes: 80 + 2·250 + 2176/3.2.
    assert_eq!(cfg.zero_load_ns(2, 2048), 1260.0);
}

#[test]
fn a_link_never_carries_more_than_its_bandwidth() {
    // 0 → 1 on a 2-ring, fast adapters: the link is the bottleneck.
    let cfg = Config {
        inject_bw: 64.0,
        eject_bw: 64.0,
        ..plain(dims(2, 1, 1))
    };
    let mut net = Network::new(cfg.clone()).unwrap();
    for id in 0..400 {
        net.inject(0.0, msg(id, 0, 1, 256)).unwrap();
    }
    let got = net.run().unwrap();
    let end = got.iter().map(|g| g.deliver_ns).fold(0.0, f64::max);
    let wire = 400.0 * (256.0 + cfg.overhead as f64);
    let rate = wire / end;
    assert!(rate <= cfg.link_bw, "{rate} B/ns > link");
    assert!(
        rate > 0.95 * cfg.link_bw,
        "{rate} B/ns: the link should be nearly saturated"
    );
    for l in net.link_stats() {
        assert!(l.busy_ns <= end + 1e-9);
        assert!(l.bytes as f64 <= cfg.link_bw * end + 1e-6);
    }
}

fn check_conservation_and_order(injected: &[Message], got: &[Delivered]) {
    assert_eq!(got.len(), injected.len(), "every message delivered once");
    let ids: HashSet<u64> = got.iter().map(|g| g.id).collect();
    assert_eq!(ids.len(), injected.len());
    let by_id: HashMap<u64, &Message> = injected.iter().map(|m| (m.id, m)).collect();
    let mut last: HashMap<(NodeId, NodeId), u64> = HashMap::new();
    for g in got {
        let m = by_id[&g.id];
        assert_eq!(
            (g.src, g.dst, g.bytes, g.tag),
            (m.src, m.dst, m.bytes, m.tag)
        );
        // Ids are injected in increasing order per pair, so delivery order must follow.
        if let Some(prev) = last.insert((g.src, g.dst), g.id) {
            assert!(prev < g.id, "pair {}->{} out of order", g.src, g.dst);
        }
    }
}

#[test]
fn every_message_arrives_once_and_in_order_per_pair() {
    let d = dims(4, 3, 2);
    let mut net = Network::new(Config {
        buf_flits: 17,
        ..Config {
            dims: d,
            ..Config::default()
        }
    })
    .unwrap();
    let mut rng = fpga::torus::traffic::SplitMix64(7);
    let n = d.nodes() as u64;
    let mut injected = Vec::new();
    for id in 0..3000 {
        let (s, t) = (
            (rng.next_u64() % n) as NodeId,
            (rng.next_u64() % n) as NodeId,
        );
        let m = msg(id, s, t, (rng.next_u64() % 1500) as u32);
        net.inject(0.0, m).unwrap();
        injected.push(m);
    }
    let got = net.run().unwrap();
    check_conservation_and_order(&injected, &got);
    assert_eq!(net.in_flight(), 0);
}

/// Every node of an 8-ring sends to the node 3 further on, so that every ring link carries
/// wrapping traffic; one-packet buffers.
fn ring_load(vcs: u8) -> (Network, usize) {
    let cfg = Config {
        dims: dims(8, 1, 1),
        vcs,
        buf_flits: 17,
        inject_bw: 16.0,
        nic_msg_ns: 0.0,
        ..Config::default()
    };
    let mut net = Network::new(cfg).unwrap();
    let mut id = 0;
    for _ in 0..50 {
        for s in 0..8 {
            net.inject(0.0, msg(id, s, (s + 3) % 8, 256)).unwrap();
            id += 1;
        }
    }
    (net, id as usize)
}

#[test]
fn one_virtual_channel_deadlocks_on_a_loaded_ring() {
    let (mut net, _) = ring_load(1);
    let err = net.run().unwrap_err();
    assert!(matches!(err, fpga::Error::Deadlock { .. }), "{err:?}");
    let err = err.to_string();
    assert!(err.starts_with("deadlock"), "{err}");
    let d = net.deadlock().expect("recorded").clone();
    assert_eq!(d.cycle.len(), 8, "the cycle is the whole ring: {err}");
    assert!(d
        .cycle
        .iter()
        .all(|&(_, p, vc)| p == Port::along(0, true) && vc == 0));
    // Stuck for good: running again reports it again instead of hanging.
    assert!(net.run().is_err());
}

#[test]
fn two_virtual_channels_never_deadlock_on_the_same_load() {
    let (mut net, n) = ring_load(2);
    assert_eq!(net.run().unwrap().len(), n);
}

#[test]
fn dateline_channel_dependencies_are_acyclic() {
    // The channel dependency graph of all DOR routes: acyclic with 2 VCs, cyclic with 1.
    let has_cycle = |d: Dims, vcs: u8| {
        let n = d.nodes() as NodeId;
        type Channel = (NodeId, Port, u8);
        let mut edges: HashMap<Channel, HashSet<Channel>> = HashMap::new();
        for a in 0..n {
            for b in 0..n {
                let r = route(&d, vcs, a, b);
                for w in r.windows(2) {
                    let (x, y) = (
                        (w[0].node, w[0].port, w[0].vc),
                        (w[1].node, w[1].port, w[1].vc),
                    );
                    edges.entry(x).or_default().insert(y);
                }
            }
        }
        // Kahn's algorithm.
        let mut indeg: HashMap<_, usize> = HashMap::new();
        for (x, ys) in &edges {
            indeg.entry(*x).or_default();
            for y in ys {
                *indeg.entry(*y).or_default() += 1;
            }
        }
        let mut ready: Vec<_> = indeg.iter().filter(|e| *e.1 == 0).map(|e| *e.0).collect();
        let mut seen = 0;
        while let Some(x) = ready.pop() {
            seen += 1;
            for y in edges.get(&x).into_iter().flatten() {
                let e = indeg.get_mut(y).unwrap();
                *e -= 1;
                if *e == 0 {
                    ready.push(*y);
                }
            }
        }
        seen < indeg.len()
    };
    for d in [dims(5, 1, 1), dims(4, 3, 5), dims(6, 6, 2)] {
        assert!(!has_cycle(d, 2), "{d} with 2 VCs");
    }
    assert!(has_cycle(dims(5, 1, 1), 1));
    assert!(has_cycle(dims(5, 4, 3), 1));
    // On a 4-ary torus the tie-break alone avoids cycles: a + route of 2 hops starts only
    // at an even coordinate, so no dependency chain goes round a ring.
    assert!(!has_cycle(dims(4, 4, 4), 1));
}

#[test]
fn a_down_link_refuses_routes_and_drops_packets_in_flight() {
    let d = dims(4, 1, 1);
    let mut net = Network::new(plain(d)).unwrap();
    for id in 0..20 {
        net.inject(0.0, msg(id, 0, 1, 256)).unwrap();
    }
    net.run_until(300.0).unwrap();
    net.set_link(0, Port::along(0, true), false).unwrap();
    assert!(!net.link_up(0, Port::along(0, true)).unwrap());
    assert!(matches!(
        net.inject(net.now_ns(), msg(99, 0, 1, 8)),
        Err(fpga::Error::LinkDown(_))
    ));
    // The other direction still works.
    net.inject(net.now_ns(), msg(100, 1, 0, 8)).unwrap();
    let got = net.run().unwrap();
    let dropped = net.take_dropped();
    assert!(!dropped.is_empty());
    assert!(dropped
        .iter()
        .all(|x| x.node == 0 && x.port == Port::along(0, true)));
    let ids: HashSet<u64> = got
        .iter()
        .map(|g| g.id)
        .chain(dropped.iter().map(|x| x.id))
        .collect();
    assert_eq!(ids.len(), 21, "each message delivered or dropped");
    assert!(got.iter().any(|g| g.id == 100));
    assert_eq!(net.in_flight(), 0);
    net.set_link(0, Port::along(0, true), true).unwrap();
    net.inject(net.now_ns(), msg(101, 0, 1, 8)).unwrap();
    assert_eq!(net.run().unwrap().len(), 1);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    assert!(Dims::new(0, 4, 4).is_err());
    assert!(Dims::new(4, 17, 4).is_err());
    assert!("4x4".parse::<Dims>().is_err());
    assert!("axbxc".parse::<Dims>().is_err());
    for bad in [
        Config {
            vcs: 3,
            ..Config::default()
        },
        Config {
            vcs: 0,
            ..Config::default()
        },
        Config {
            link_bw: 0.0,
            ..Config::default()
        },
        Config {
            inject_bw: f64::NAN,
            ..Config::default()
        },
        Config {
            router_ns: -1.0,
            ..Config::default()
        },
        Config {
            max_payload: 0,
            ..Config::default()
        },
        Config {
            buf_flits: 16,
            ..Config::default()
        }, // smaller than one packet
        Config {
            flit_bytes: 0,
            ..Config::default()
        },
    ] {
        assert!(Network::new(bad.clone()).is_err(), "{bad:?}");
    }
    let mut net = Network::new(Config {
        dims: dims(2, 2, 2),
        ..Config::default()
    })
    .unwrap();
    assert!(net.inject(0.0, msg(0, 0, 8, 1)).is_err());
    assert!(net.inject(-1.0, msg(0, 0, 1, 1)).is_err());
    assert!(net.inject(f64::NAN, msg(0, 0, 1, 1)).is_err());
    assert!(net.set_link(9, Port::PlusX, false).is_err());
    let ring = Network::new(Config {
        dims: dims(4, 1, 1),
        ..Config::default()
    })
    .unwrap();
    assert!(
        ring.link_up(0, Port::along(1, true)).is_err(),
        "no Y links on a ring"
    );
    assert!("mesh".parse::<Pattern>().is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_traffic_is_conserved_ordered_and_not_faster_than_zero_load(
        (x, y, z) in (1u8..=5, 1u8..=4, 1u8..=3),
        msgs in prop::collection::vec((any::<u16>(), any::<u16>(), 0u32..1200, 0u32..2000), 1..120),
        vcs in 1u8..=2,
    ) {
        let d = dims(x, y, z);
        let n = d.nodes() as u16;
        let cfg = Config { dims: d, vcs: 2, ..Config::default() };
        let mut net = Network::new(cfg.clone()).unwrap();
        let mut injected = Vec::new();
        let mut order: Vec<_> = msgs.iter().enumerate().map(|(i, m)| (m.3, i)).collect();
        order.sort();
        for (id, &(t, i)) in order.iter().enumerate() {
            let (s, dst, bytes, _) = msgs[i];
            let m = msg(id as u64, s % n, dst % n, bytes);
            net.inject(t as f64, m).unwrap();
            injected.push(m);
        }
        let got = net.run().unwrap();
        check_conservation_and_order(&injected, &got);
        for g in &got {
            prop_assert_eq!(g.hops, torus_distance(&d, g.src, g.dst));
            let floor = cfg.zero_load_ns(g.hops, g.bytes);
            prop_assert!(g.deliver_ns - g.inject_ns >= floor - 0.01);
        }
        // The route VCs with `vcs` channels stay inside 0..vcs.
        for g in &got {
            prop_assert!(route(&d, vcs, g.src, g.dst).iter().all(|h| h.vc < vcs));
        }
    }
}
