//! The `torus-sim` tool over the 3D-torus network model of the `fpga` crate
//! ([`fpga::torus`]; the model and the tool are described in `fpga/TORUS.md`).
//!
//! * [`report`] — one simulator run of a traffic pattern at a message size, and what it
//!   measures (rates, latency percentiles, link utilisation, CSV rows).
//! * [`plot`] — the SVG of message rate against message size.
//! * the `torus-sim` binary — the command line (`cargo run --release -p torus-sim -- --paper`).
//!
//! A crate of its own so that the libraries linking `fpga` (the drivers, hence
//! libskifch, libskifmpi, libskifshmem) link none of hdrhistogram, plotters or clap.
#![deny(unsafe_code)]

pub mod plot;
pub mod report;
