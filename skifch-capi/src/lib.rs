//! # libskifch — the SkifCh C ABI
//!
//! Builds `libskifch.so` and `libskifch.a`; the declarations are in `include/skifch.h`
//! (the header is the reference for C users: semantics and `errno` of every call).
//! Implements the spec's sections "The core: three calls" (`SkifCh_Send`, `SkifCh_Recv`,
//! `SkifCh_RecvComp`) and "The rest of the C ABI" (job, channels, addresses, waiting) on
//! the shm driver of `skifch-drivers`.
//!
//! ## Layers
//! * `job` — process-wide state: the job joined by `SkifCh_Init` (one mutex, taken only
//!   by Init/Finalize/Open), rank and size as atomics.
//! * `handle` — `struct SkifCh`: one [`skifch::Channel`] plus the FIFO of received,
//!   not yet completed messages (the paper's RecvComp completes the oldest one).
//! * `abi` — the `extern "C"` functions: argument checks, `errno`, no unwinding across
//!   the boundary.
//!
//! The hot calls (Send, Recv, RecvComp, Wait) touch only their channel: no global lock.
//! A channel is used by one thread at a time; different threads may use different
//! channels at once.
#![deny(unsafe_code)]

mod abi;
mod handle;
mod job;

pub use abi::*;
pub use handle::SkifCh;
