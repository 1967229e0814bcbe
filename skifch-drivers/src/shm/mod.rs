//! The shared-memory emulator (spec: "Hardware the paper ran on" — the software stand-in
//! for the NIC: the sender's copy into the receiver's memory is the one copy a NIC's DMA
//! would make).
//!
//! One segment per job: an anonymous `memfd` created by `skifrun` (or by the process
//! itself for a 1-rank job), mapped `MAP_SHARED` by every rank. It has no name in any
//! file system, so it disappears with the last process that maps it, also after
//! `kill -9` of any rank or of the launcher (ranks die with the launcher: `PR_SET_PDEATHSIG`).
//!
//! ## Ring designs measured (`cargo run --release -p skifch-benches --bin ringcmp`)
//! One single-producer lane per (sender, receiver) pair with a summary bitmap, versus one
//! multi-producer ring per receiving channel: the numbers and the reasons for keeping the
//! lanes are in the [`lane`] docs and `benches/README.md` ("Ring designs").
//!
//! ## Files
//! * [`layout`] — the segment layout (header, job-control block, lanes), plain arithmetic;
//! * [`fabric`] — the segment's memory ([`Region`]) and [`Fabric`], a validated segment;
//! * [`lane`] — the lane protocol (design, measurements, trust) and a lane's two ends;
//! * [`port`] — [`RingDriver`], [`RingPort`], [`RingWaiter`] over the lanes;
//! * [`far`] — a port's far half (the hierarchy's fabric), reached from its cold paths;
//! * `memfd` — the shm driver's memory: [`MemfdRegion`], [`init`], [`join_segment`];
//! * [`node`] — the segment of one node's ranks when a PMI/PMIx launcher, not `skifrun`,
//!   started the job ([`node::node_job`] over a [`crate::boot::Bootstrap`]).
//!
//! The in-process job runs the same lanes on heap memory ([`crate::inproc`]).

pub mod fabric;
pub mod far;
pub mod lane;
pub mod layout;
#[cfg(not(loom))]
mod memfd;
#[cfg(not(loom))]
pub mod node;
pub mod port;

pub use fabric::{Fabric, HeapRegion, Region};
pub use layout::{Layout, Params, MAX_PORTS, MAX_RANKS};
#[cfg(not(loom))]
pub(crate) use memfd::{close_inherited, env_u32, inherited_memfd, sealed_memfd};
#[cfg(not(loom))]
pub use memfd::{create_fabric, init, init_from, join_segment, MemfdRegion, ShmDriver, ShmJob};
pub use port::{RingDriver, RingPort, RingWaiter, BURST, MAX_SLEEP};
