//! # mpi-lite — MPI on SkifCh channels
//!
//! An MPI 3.1 subset for Rust and (through the `skifmpi` crate, `include/mpi.h` and
//! `bin/skif-mpicc`) for unmodified C programs, on its own SkifCh channel (port 1 of every
//! rank), so it never sees another library's messages and runs over any driver that
//! passes the conformance suite. See `README.md` for what is implemented and what is not.
//!
//! ## Layers
//! * [`datatype`], [`mem`] — predefined and derived datatypes flattened to byte blocks;
//!   user memory as ([`mem::UserBuf`]: address, count, type). Contiguous types move
//!   straight between the wire and user memory.
//! * [`engine`] — matching (O(1) exact match, wildcards, unexpected queue,
//!   non-overtaking) and the eager/rendezvous/synchronous protocols as active messages of
//!   [`skifch::proto`] (its header carries the envelope, eager payloads travel inline,
//!   rendezvous data lands straight in the user's buffer); lost peers are errors.
//! * [`group`], [`comm`], [`topo`] — groups, communicators with agreed context ids,
//!   Cartesian and distributed-graph topologies; [`Mpi`] owns the engine.
//! * [`inter`], [`intercoll`], `internbc` — intercommunicators: construction, context
//!   agreement over two groups, and their blocking and nonblocking collectives (MPI-3.1
//!   §5.2.2).
//! * [`coll`] — collectives: MPI arguments onto the shared algorithms of
//!   [`skifch::coll`] (a communicator's collective context is their `Transport`).
//! * [`api`] — the idiomatic Rust API ([`api::Comm`], typed slices, owned-buffer
//!   requests).
//! * [`win`] — one-sided communication (windows, operations, synchronisation) on the
//!   direct and the message path; [`api::Window`] is its typed Rust API.
//! * [`op`] — reduction operations: predefined kernels and the user's (`MPI_Op_create`).
//! * [`error`] — the error enum and MPI error classes.
//!
//! Unsafe code is confined to [`mem`] (user pointers), `win::mem` (memory other processes
//! reach: raw copies, atomics, cross-memory copies), [`ldouble`] (x87 instructions), [`api`] (slices lent to the
//! engine), [`coll`] (byte slices lent to the engine) and the engine's lock (`engine::lock`, a
//! flag beside the value), each with its contract.
#![deny(unsafe_code)]
// The docs name internal items for readers of the source; `cargo doc --document-private-items` resolves them.
#![allow(rustdoc::private_intra_doc_links)]

pub mod datatype;
pub mod engine;
pub mod error;
pub mod group;
pub mod ldouble;
pub mod mem;
pub mod op;

pub use error::{Error, Result};
pub mod api;
pub mod coll;
pub mod comm;
pub mod ctxid;
pub mod inter;
pub mod intercoll;
mod internbc;
pub mod nbc;
pub mod topo;
pub mod win;

pub use comm::Mpi;
pub use engine::{Status, ANY_SOURCE, ANY_TAG, PROC_NULL};
