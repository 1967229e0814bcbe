//! # SkifCh drivers
//!
//! * [`shm`] — the shared-memory emulator, the default driver: every rank of a node maps
//!   one memory segment (an anonymous `memfd`, inherited from the launcher, so nothing is
//!   ever left in `/dev/shm`); a sender copies straight into the receiver's lane and the
//!   receiver reads in place (the lanes: [`shm::lane`]). [`inproc`] runs the same lanes
//!   in one process, ranks as threads, on heap memory.
//! * [`jobctl`] — the job-control block every driver shares with the launcher (rank
//!   states, lost ranks, channel states and wake words), at the start of the job segment.
//! * [`sys`] — the futex and membarrier syscalls, swapped as a whole for Miri and loom;
//!   the segment's atomics go through a shim (`sync`: std's, or loom's under `--cfg loom`)
//!   so that the loom model runs the lane code itself.
//! * [`fpga`] — the FPGA/PCIe 3D-torus adapter driver, written once against a hardware
//!   seam, over a real card (VFIO), over the device model in-process ([`fpga::model`]), or
//!   over the device model hosted by `skifrun --driver fpga-model`, one process per torus
//!   node ([`fpga::remote`]).
//! * [`ofi`] — the libfabric driver (issue 21): SkifCh channels over any libfabric
//!   provider with reliable-datagram endpoints (`tcp;ofi_rxm` on Ethernet, `verbs;ofi_rxm`,
//!   `efa`, `cxi`), chosen by `SKIFCH_OFI_PROVIDER` / `FI_PROVIDER` and
//!   `SKIFCH_OFI_DOMAIN`; receiver-granted credits, receive in place from pre-posted
//!   buffers, heartbeat liveness. Started by `skifrun --driver ofi` or by `mpiexec.hydra` /
//!   `srun` (PMI-1, [`boot`]) with `SKIFCH_DRIVER=ofi`. Its docs say which provider is used,
//!   the credit scheme, the failure bound and what a misconfigured fabric looks like.
//! * [`launch`] — the launcher behind the `skifrun` binary (crate `skifrun`, which adds only
//!   the command line): `skifrun -n N [options] -- program args` (options, environment,
//!   failure handling and exit statuses are documented there).
//! * [`wrap`] — drivers that wrap another: the fault injector ([`wrap::FaultDriver`]) and
//!   the tracer ([`wrap::TraceDriver`]), chosen from code or by `SKIFCH_FAULT` /
//!   `SKIFCH_TRACE`.
//! * [`boot`] — the job's bootstrap for drivers that exchange addresses before they can
//!   send and need node locality (the fabric driver): [`boot::from_env`] gives a PMI-1
//!   client under `mpiexec.hydra` / `srun --mpi=pmi2` ([`boot::pmi1`]), a PMIx client
//!   under Open MPI's `mpirun` / `srun --mpi=pmix` ([`boot::pmix`]) or a 1-rank job. The
//!   shm driver uses it when no `skifrun` made the segment ([`shm::node`]: the node's
//!   ranks make their own); [`hier`] combines a node's lanes with a job-wide fabric
//!   driver, chosen per destination.
//! * [`init`] — joins the job over the driver the launcher chose ([`AnyDriver`]: one
//!   `match` per call); [`init_concrete`] for code that dispatches once (see [`ConcreteJob`]).
//!   One driver per process: the first SkifCh library of a process to join publishes its
//!   driver, the others (each C library carries its own copy of this crate) forward to it
//!   ([`share`], [`fwd`]).
//! * [`place`] — which ranks share this rank's machine (its CPUs), for CPU binding
//!   ([`AnyDriver::placement`]).
//!
//! The helpers that tests use to run real multi-process jobs are the dev-only crate
//! `skifch-testing` (they panic; they are not part of this library).
//!
//! ## Joining a job
//! ```no_run
//! let job = skifch_drivers::init()?;          // the job started by skifrun, or a 1-rank job
//! let ch = job.open(0)?;
//! println!("rank {} of {} over {}: my address is {}", job.rank(), job.size(), job.driver_name(), ch.addr());
//! # Ok::<(), skifch::Error>(())
//! ```
//!
//! ## Environment (set by `skifrun`; all optional for a 1-rank shm job)
//! | variable | meaning |
//! | --- | --- |
//! | `SKIFCH_DRIVER` | `shm` (default), `fpga-model` or `ofi` ([`ofi`]; its own variables are listed there); anything else is an error. Set for each rank by `skifrun --driver`; also read by `skifrun` itself (the default of `--driver`) and by [`launch::self_launch`] |
//! | `SKIFCH_RANK`, `SKIFCH_SIZE` | this process's rank and the job size |
//! | `SKIFCH_FD` | descriptor of the job's segment (a memfd) inherited from the launcher; for `fpga-model` it carries only the job state (rank states, lost ranks) |
//! | `SKIFCH_FPGA_FD` | `fpga-model`: descriptor of this rank's node window (its adapter's register queue, interrupt word and DMA memory; [`fpga::remote`]) |
//! | | Both descriptors are checked before use (a size-sealed memfd with the segment's or window's magic): a stale variable naming another descriptor fails the join and leaves that descriptor open. Once joined, the inherited numbers are closed (the job works on close-on-exec copies) |
//! | `SKIFCH_WAIT` | waiting policy: `spin`, `fixed`, `fixed:<us>`, `block` |
//! | `SKIFCH_PORTS` | ports per rank (default 5, one per library of `skifch::ports`; shm: read by the launcher, up to 64; `fpga-model`: read by the rank, 1..=7) |
//! | `SKIFCH_LANE_KB` | shm lane size (read by the launcher) |
//! | `SKIFCH_FAULT`, `SKIFCH_TRACE` | wrap the driver in the fault injector / the tracer ([`wrap`]) |
//! | `SKIFCH_MACHINE_ID` | which ranks share this rank's CPUs, for binding ([`place`]): ranks with equal labels are numbered together (default: the kernel's boot id) |
//!
//! ## Environment of the bootstrap ([`boot::from_env`]; set by the launcher, never by hand)
//! | variable | meaning |
//! | --- | --- |
//! | `PMI_FD`, `PMI_RANK`, `PMI_SIZE` | a PMI-1 server's socket, this rank and the job size (`mpiexec.hydra`, `srun --mpi=pmi2`); the socket is checked (open, a socket, not 0–2) and replaced by a close-on-exec copy |
//! | `PMI_PORT`, `PMI_ID` | a PMI-1 server at `host:port` and this process's id there (`mpiexec.hydra -pmi-port`); rank and size come from the server |
//! | `PMIX_NAMESPACE`, `PMIX_RANK` | a PMIx server (Open MPI's `mpirun`, `prterun`, `srun --mpi=pmix`): the system's `libpmix.so.2` is loaded (`dlopen`) and joins it |
//! | `SKIFCH_PMIX_LIB` | another file to load instead of `libpmix.so.2` |
//! | `SKIFCH_BOOT_TIMEOUT` | seconds each wait for the PMI server's answer may take (default, or `0`: no limit; a server that goes away is an error at once either way) |
//! | (none of these) | a 1-rank job; with `SKIFCH_SIZE` > 1 an "unsupported" error (a launcher that serves no bootstrap; `skifrun` serves PMI-1 on `PMI_FD`) |
//!
//! ## Ring designs measured
//! See [`shm`] for the two designs measured and the numbers behind the choice.
#![deny(unsafe_code)]

// Under `--cfg loom` only the lanes and what they need are built (the model's scope).
#[cfg(not(loom))]
pub mod any;
#[cfg(not(loom))]
pub mod boot;
#[cfg(not(loom))]
pub mod fpga;
#[cfg(not(loom))]
pub mod fwd;
#[cfg(not(loom))]
pub mod hier;
#[cfg(not(loom))]
pub mod hier_rma;
pub mod inproc;
pub mod jobctl;
#[cfg(not(loom))]
pub mod launch;
#[cfg(not(loom))]
pub mod ofi;
pub mod place;
#[cfg(not(loom))]
pub mod share;
pub mod shm;
#[cfg(not(loom))]
pub mod shm_rma;
mod sync;
pub mod sys;
#[cfg(not(loom))]
pub mod wrap;

#[cfg(not(loom))]
pub use any::{
    concrete, end_process, flush_stdio, init, init_concrete, AnyDriver, AnyPort, AnyWaiter,
    ConcreteJob, DynPort, FPGA_MODEL, OFI,
};
#[cfg(not(loom))]
pub use fpga::remote::{RemoteDriver, RemoteJob};
#[cfg(not(loom))]
pub use shm::{ShmDriver, ShmJob};

#[cfg(not(loom))]
/// The job type [`init`] returns: a job over the driver the launcher chose
/// ([`AnyDriver`]). Libraries with a C ABI (mpi-lite, shmem, the SkifCh C ABI) name this
/// instead of a concrete driver.
pub type DefaultJob = skifch::Job<AnyDriver>;
#[cfg(not(loom))]
/// The port type of [`DefaultJob`]'s channels.
pub type DefaultPort = AnyPort;
