//! # SkifCh drivers
//!
//! * [`shm`] — the shared-memory emulator, the default driver: every rank of a node maps
//!   one memory segment (an anonymous `memfd`, inherited from the launcher, so nothing is
//!   ever left in `/dev/shm`); a sender copies straight into the receiver's lane and the
//!   receiver reads in place (the lane transport of [`skifch::ring`]).
//! * [`launch`] and the `skifrun` binary — the launcher: `skifrun -n N [options] -- program args`
//!   (options, environment, failure handling and exit statuses are documented there).
//! * [`testing`] — helpers for integration tests that run real multi-process jobs.
//!
//! ## Joining a job
//! ```no_run
//! let job = skifch_drivers::init()?;          // the job started by skifrun, or a 1-rank job
//! let ch = job.open(0)?;
//! println!("rank {} of {}: my address is {}", job.rank(), job.size(), ch.addr());
//! # Ok::<(), skifch::Error>(())
//! ```
//!
//! ## Environment (set by `skifrun`; all optional for a 1-rank job)
//! | variable | meaning |
//! | --- | --- |
//! | `SKIFCH_RANK`, `SKIFCH_SIZE` | this process's rank and the job size |
//! | `SKIFCH_FD` | descriptor of the job's segment (a memfd) inherited from the launcher |
//! | `SKIFCH_WAIT` | waiting policy: `spin`, `fixed`, `fixed:<us>`, `block` |
//! | `SKIFCH_PORTS`, `SKIFCH_LANE_KB` | ports per rank, lane size (read by the launcher) |
//!
//! ## Ring designs measured
//! See [`shm`] for the two designs measured and the numbers behind the choice.
#![deny(unsafe_code)]

pub mod fpga;
pub mod launch;
pub mod shm;
pub mod shm_rma;
pub mod testing;

pub use shm::{init, ShmDriver, ShmJob};

/// The job type [`init`] returns; libraries with a C ABI (mpi-lite, shmem, the SkifCh C
/// ABI) name this instead of a concrete driver, so the launcher can choose the driver.
pub type DefaultJob = ShmJob;
/// The port type of [`DefaultJob`]'s channels.
pub type DefaultPort = <ShmDriver as skifch::Driver>::Port;
