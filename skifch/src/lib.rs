//! # SkifCh — the channel interface
//!
//! A non-buffering message interface for HPC interconnects, after Klimov, Orlov and
//! Shvorin, *SkifCh: high performance communication interface* (2011). The contract is
//! `SKIFCH-SPEC.md`; this crate is its Rust form and the base of everything above it.
//!
//! ## Layers
//! * [`Channel`] / [`Message`] — the three calls: [`Channel::send`] (one message from a
//!   prefix of an iovec; `WouldBlock` instead of buffering), [`Channel::try_recv`] (the next
//!   message *in place*, as a guard whose segments borrow the driver's memory), and
//!   dropping the guard (RecvComp). Blocking [`Channel::recv`] follows a [`WaitPolicy`].
//! * [`Job`] — rank, size, opening ports ([`NetAddr`] = rank ≪ 16 | port).
//! * [`driver`] — the hardware boundary: [`Driver`], [`Port`], [`Waiter`]. A new
//!   interconnect implements these and passes [`conformance`].
//! * [`local`] — an in-process loopback job (ranks as threads over a small safe driver)
//!   for doctests, tests and examples; the transports themselves (the shm lanes, the FPGA
//!   adapter) are in crate `skifch-drivers`.
//! * [`proto`] — active messages over one channel (inline header + payload, handlers,
//!   request/reply, chunked long transfers, progress engine): the protocol layer of the
//!   higher libraries. An endpoint owns its library's context; handlers are plain
//!   functions given `&mut` that context and a non-blocking send half.
//! * [`coll`] — collective algorithms over a small transport trait (barrier, broadcast,
//!   reductions, gather/scatter, all-to-all, scans) and the reduction kernels, written
//!   once for every library; plus a barrier straight over a channel (MsgRate, conformance).
//!
//! Unsafe code lives only in [`channel`] (turning driver pointers into borrows), [`mem`]
//! (the copies), [`rma`] (windows on peers' memory) and [`proto`]'s landing buffers (its
//! one write through a caller's pointer), plus the declaration of the unsafe [`Port`]
//! contract and the loopback driver's `unsafe impl` of it (no unsafe operation); the rest
//! of the crate denies it.
#![deny(unsafe_code)]
#![allow(clippy::len_without_is_empty)]

mod addr;
pub mod channel;
pub mod coll;
pub mod conformance;
pub mod diag;
pub mod driver;
pub mod error;
mod job;
pub mod local;
pub mod mem;
pub mod ports;
pub mod proto;
pub mod rma;
pub mod wait;

pub use addr::NetAddr;
pub use channel::{Channel, Message, Segments, SharedChannel, SharedMessage};
pub use driver::{Driver, Port, SendMode, Waiter, CONT_SIZE};
pub use error::{Error, Msg, OsError, Result, Unreachable};
pub use job::Job;
pub use wait::WaitPolicy;
