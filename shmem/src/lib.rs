//! # shmem — OpenSHMEM on SkifCh (issue 6; under construction)
//!
//! Nothing is built yet: this crate is a placeholder so the workspace has its final shape.
#![deny(unsafe_code)]
