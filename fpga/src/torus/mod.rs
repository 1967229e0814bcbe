//! The 3D-torus network of the SKIF adapters, as a model and a simulator.
//!
//! * [`topology`] — X×Y×Z torus geometry, dimension-order routes, dateline virtual channels,
//!   and the closed forms (mean hop count, bisection bound) the tests hold the simulator to.
//! * [`config`] — link, router and adapter parameters with their sources.
//! * [`sim`] — the deterministic discrete-event [`Network`] the behavioural device model
//!   drives: [`Network::inject`], [`Network::run_until`], link faults, link statistics.
//! * [`traffic`] — the traffic patterns of the `torus-sim` tool (its measurements, plots and
//!   command line are the `torus-sim` crate, so that the libraries that link this crate
//!   do not link plotters, hdrhistogram or clap).
//!
//! # The model
//!
//! * **Nodes and links.** Every node is an adapter (NIC) plus a router with six ports (X±,
//!   Y±, Z±); each port drives one directed link to the neighbour, wrap-around included.
//!   A dimension of size 2 has two distinct links (+ and −) between the same two nodes.
//! * **Routing.** Dimension order X, Y, Z; shortest direction; ties (`d = k/2`) go + from
//!   an even source coordinate and − from an odd one. Routes are fixed per (src, dst), so
//!   delivery is in order per pair.
//! * **Virtual channels.** Two per link, dateline scheme: VC 0 on entering a dimension, VC 1
//!   from its wrap-around link on. Channel dependencies are then acyclic (a route never
//!   wraps twice in a dimension and never returns to an earlier dimension), so the network is
//!   deadlock-free. With one VC it is not, and [`Network::run`] reports the cycle.
//! * **Flow control.** Credit-based, per VC, in flits: a router sends a packet only
//!   when the downstream buffer of that VC has room for all its flits; the room frees when the packet's
//!   tail has left, and its credit returns one link latency later. Each output port serves
//!   the inputs waiting for it oldest-request-first among those that hold a credit; inputs
//!   are FIFO (head-of-line blocking is modelled).
//! * **Timing.** Virtual cut-through: a packet's head leaves a router as soon as the output
//!   is free; a transmission takes `wire_bytes / bandwidth` but cannot end before the tail has
//!   arrived. Each link adds `link_ns`, each router crossed after a link `router_ns`.
//! * **Adapters.** A message queues at its source adapter, which splits it into packets
//!   (`max_payload` bytes plus `overhead` bytes each) and DMAs them into the router at
//!   `inject_bw`, paying `nic_msg_ns` per message; the router's injection buffer holds
//!   `buf_flits` flits (credit-controlled as well). At the destination the ejection port
//!   writes packets to the host at `eject_bw`.
//!
//! Simplifications: packets are the unit of flow control (no flits: a buffer slot holds a
//! whole packet); the host always has room for incoming packets (receive-ring back-pressure
//! is the device model's business); the adapter's send queue is unbounded; a link fault drops
//! the packets that reach it and makes [`Network::inject`] refuse routes through it — no
//! adaptive rerouting (the real routers' fault handling is not public).
//!
//! # Examples
//! ```
//! use fpga::torus::{Config, Dims, Message, Network};
//! let mut net = Network::new(Config { dims: "2x2x2".parse().unwrap(), ..Config::default() })
//!     .unwrap();
//! for id in 0..10 {
//!     net.inject(0.0, Message { id, src: 0, dst: 7, bytes: 1000, tag: 0 }).unwrap();
//! }
//! let done = net.run().unwrap();
//! assert_eq!(done.iter().map(|d| d.id).collect::<Vec<_>>(), (0..10).collect::<Vec<_>>());
//! assert!(done.iter().all(|d| d.hops == 3));
//! ```

pub mod config;
pub mod sim;
pub mod topology;
pub mod traffic;

pub use config::Config;
pub use sim::{Deadlock, Delivered, Dropped, LinkStats, Message, Network};
pub use topology::{route, Dims, Hop, NodeId, Port};
