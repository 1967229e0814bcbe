//! The SKIF adapter (the paper's FPGA/PCIe 3D-torus interconnect) as a contract and a model.
//!
//! * [`regs`] — the BAR0 register map (the datasheet: `fpga/README.md`).
//! * [`desc`] — TX descriptor, RX completion and packet header formats (`#[repr(C)]`,
//!   `zerocopy`, sizes and offsets pinned by `static_assertions`), with length-checked
//!   parse/emit: the single source of truth shared by the driver and the device model.
//! * [`model`] — the behavioural device model: one thread per adapter, a router network
//!   with credits between them, "DMA" into host memory through [`model::HostMemory`].
//! * [`torus`] — the X×Y×Z torus network model (dimension-order routing, virtual channels,
//!   credits, per-link bandwidth and latency) and the traffic simulator behind `torus-sim`.
//!
//! No unsafe code: device memory is reached through the driver's accessors
//! (`skifch-drivers`), never through references made here.
#![deny(unsafe_code)]

pub mod desc;
pub mod error;
pub mod model;
pub mod regs;
pub mod torus;

pub use error::{Error, Result};
