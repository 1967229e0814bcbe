//! # mpi-lite — MPI on SkifCh channels (issue 5; under construction)
#![deny(unsafe_code)]

pub mod datatype;
pub mod engine;
pub mod error;
pub mod group;
pub mod mem;
pub mod wire;

pub use error::{Error, Result};
pub mod api;
pub mod coll;
pub mod comm;
pub mod topo;

pub use comm::Mpi;
pub use engine::{Status, ANY_SOURCE, ANY_TAG, PROC_NULL};
