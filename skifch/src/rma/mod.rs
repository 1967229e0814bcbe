//! Remote memory access as an **optional** driver capability (ARCHITECTURE "Higher
//! libraries"). A driver that can reach a peer's memory without the peer's CPU (the shm
//! driver by mapping it, the in-process job on the heap, later the FPGA adapter by DMA)
//! offers an [`Rma`] provider through [`crate::Driver::rma`]; libraries use it when it is
//! there and fall back to active messages over a channel when it is not.
//!
//! ## Discovery: one call, for every library
//! A library (skifshmem today; MPI windows, ARMCI, GASNet next) asks the job and reads the
//! provider's [`RmaCaps`], never the driver's name:
//! ```
//! use skifch::rma::{self, Window};
//! # fn lib<D: skifch::Driver>(job: &skifch::Job<D>,
//! #     exchange: &mut rma::Exchange<'_>) -> skifch::Result<()> {
//! match job.rma() {
//!     // peers' memory is mapped here: puts are copies, atomics CPU atomics
//!     Some(r) if r.caps().load_store => {
//!         let win = rma::expose(r.as_ref(), r.alloc(1 << 20)?, exchange)?;
//!         win.put(0, 64, b"hello")?;
//!         win.quiet()?;
//!     }
//!     // some peers reached by transfers (a fabric's RDMA): `MappedWindow::reach` misses
//!     // them, `Window::put`/`get` reach them; atomics on them take the message path
//!     Some(r) if r.caps().transfers => {}
//!     // no RMA: the library's active-message path
//!     _ => {}
//! }
//! # Ok(()) }
//! ```
//! A library's hot path keeps the [`MappedWindow`] (not `dyn Window`) and calls its inlined
//! accessors ([`MappedWindow::reach`], [`MappedWindow::put_raw`], [`MappedWindow::get_raw`]):
//! a bounds check and a copy, no dynamic call, no lock. Drivers: return the provider from
//! `Driver::rma` (the default is `None`); a wrapping driver forwards the call.
//!
//! ## Model
//! 1. Each rank obtains a [`Segment`] of its own memory: fresh memory from [`Rma::alloc`]
//!    (zeroed, backed lazily page by page, so a large heap costs nothing until touched), or
//!    existing pages shared in place with [`Rma::share_in_place`] (used for a program's
//!    global variables).
//! 2. **Collectively** (every rank, same order) the ranks [`expose`] one segment each; the
//!    exchange of the segments' descriptors is an all-gather supplied by the caller (the
//!    library runs it over its own channel, so the provider needs no port of its own).
//!    The result is a [`Window`]: rank `r`'s segment, addressed by byte offset.
//! 3. [`Window::put`], [`Window::get`] and [`Window::amo`] reach any rank's segment. Every
//!    offset and length is checked against the target's segment length (an error, never an
//!    access outside it); atomics must be naturally aligned.
//!
//! ## Completion and ordering
//! * `put` returns when the source buffer may be reused (local completion). The data is
//!   visible to the target and to other ranks no later than the next [`Window::quiet`] by
//!   the initiator (remote completion). For a mapped window both happen at return; `quiet`
//!   is a sequentially consistent fence, so every store issued before it is ordered before
//!   any store or atomic issued after it (the flag-after-data pattern).
//! * `get` returns when the data is in the destination buffer.
//! * `amo` is atomic with respect to every other `amo` on the same location from any rank
//!   (hardware atomics on the shared mapping), and returns the previous value.
//! * Plain local loads and stores by the target on its own segment race with remote puts
//!   as in any one-sided model; a target waits on a location with atomic loads.
//!
//! Memory a peer can write is reached here only through raw pointers and atomics, never a
//! Rust reference (the spec's rule for shared memory).
//!
//! ## Peers reached by transfers ([`RmaCaps::transfers`])
//! A provider whose peers are on other hosts (the libfabric driver's `FI_RMA`, or the
//! hierarchy: the node's peers mapped, the others over the fabric) opens such a peer as a
//! [`RemoteSegment`] ([`PeerMapping::remote`]): [`MappedWindow::reach`] misses it (so a
//! library's inlined fast path falls through), [`Window::put`] and [`Window::get`] reach it
//! by the provider's transfers, [`MappedWindow::remote`] gives it to a library directly.
//! Such a put may still be in flight at return (its source is free); [`Window::quiet`]
//! completes it (`RemoteSegment::flush`), and a get completes this rank's puts first. There
//! are no atomics on such a peer (`amo` is unsupported): a
//! fabric's atomics are atomic only with respect to that fabric's atomics (libfabric
//! `fi_atomic(3)`, "Completions": "results of atomic operations performed by
//! multiple actors simultaneously are undefined"), not to the CPU atomics that the
//! target's node peers apply to the same memory, so a library serves atomics on it with its
//! message path (the target's CPU applies them).
//!
//! ## Files
//! This module: the model, [`Amo`], [`Segment`], [`PeerMapping`], [`RmaCaps`] and the
//! [`Rma`] trait; `window.rs`: [`expose`], the [`Window`] trait and [`MappedWindow`] (the
//! one implementation of direct access) with [`amo_at`]; `local.rs`: [`LocalRma`].
#![allow(unsafe_code)] // raw access to memory shared with other processes or threads

use std::any::Any;
use std::sync::Arc;

use crate::Result;

mod local;
mod window;

pub use local::LocalRma;
pub use window::{amo_at, expose, expose_among, MappedWindow, Window};

/// An atomic memory operation on a 4- or 8-byte integer; [`Window::amo`] returns the value
/// the location held before the operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Amo {
    /// Read the value.
    Fetch,
    /// Store the operand.
    Set(u64),
    /// Store the operand (returns the old value).
    Swap(u64),
    /// Store `new` if the location holds `expected`.
    CompareSwap {
        /// The value compared with.
        expected: u64,
        /// The value stored on equality.
        new: u64,
    },
    /// Wrapping add.
    Add(u64),
    /// Bitwise and.
    And(u64),
    /// Bitwise or.
    Or(u64),
    /// Bitwise xor.
    Xor(u64),
}

impl Amo {
    /// The operation's code and operands `(code, a, b)`: the one numbering of the atomic
    /// operations, used wherever an `Amo` crosses a boundary (a C ABI, a wire format).
    pub fn encode(self) -> (u8, u64, u64) {
        match self {
            Amo::Fetch => (0, 0, 0),
            Amo::Set(v) => (1, v, 0),
            Amo::Swap(v) => (2, v, 0),
            Amo::CompareSwap { expected, new } => (3, expected, new),
            Amo::Add(v) => (4, v, 0),
            Amo::And(v) => (5, v, 0),
            Amo::Or(v) => (6, v, 0),
            Amo::Xor(v) => (7, v, 0),
        }
    }

    /// The operation of [`Amo::encode`]'s `(code, a, b)`; `None` for an unknown code.
    pub fn decode(code: u8, a: u64, b: u64) -> Option<Amo> {
        Some(match code {
            0 => Amo::Fetch,
            1 => Amo::Set(a),
            2 => Amo::Swap(a),
            3 => Amo::CompareSwap {
                expected: a,
                new: b,
            },
            4 => Amo::Add(a),
            5 => Amo::And(a),
            6 => Amo::Or(a),
            7 => Amo::Xor(a),
            _ => return None,
        })
    }
}

/// All-gather of small byte strings among all ranks: called with this rank's bytes,
/// returns every rank's bytes in rank order (supplied by the library, see [`expose`]).
pub type Exchange<'a> = dyn FnMut(&[u8]) -> Result<Vec<Vec<u8>>> + 'a;

/// One rank's memory that peers may reach once exposed (see the module docs).
pub struct Segment {
    ptr: *mut u8,
    len: usize,
    token: Vec<u8>,
    _keep: Box<dyn Any + Send + Sync>,
}

// SAFETY: the segment only carries the address of memory kept alive by `_keep`; every
// access through it is a raw-pointer or atomic access with the races documented above.
unsafe impl Send for Segment {}
// SAFETY: as for Send; a shared `&Segment` gives out only the address.
unsafe impl Sync for Segment {}

impl Segment {
    /// A segment at `ptr..ptr+len` that peers open with `token`; `keep` owns the memory
    /// (or the mapping) and is dropped with the segment.
    ///
    /// # Safety
    /// `ptr..ptr+len` must stay valid for reads and writes while `keep` lives.
    pub unsafe fn new(
        ptr: *mut u8,
        len: usize,
        token: Vec<u8>,
        keep: Box<dyn Any + Send + Sync>,
    ) -> Self {
        Segment {
            ptr,
            len,
            token,
            _keep: keep,
        }
    }
    /// Local base address.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// The token peers open it with ([`Rma::open_peer`]).
    pub fn token(&self) -> &[u8] {
        &self.token
    }
    /// The same memory, opened by peers with `token` instead (a provider joining
    /// others' tokens).
    pub fn with_token(mut self, token: Vec<u8>) -> Segment {
        self.token = token;
        self
    }
}

/// A peer's segment as this rank reaches it: its address in this process (mapped
/// windows), or a [`RemoteSegment`].
pub struct PeerMapping {
    ptr: *mut u8,
    len: usize,
    remote: Option<Box<dyn RemoteSegment>>,
    _keep: Box<dyn Any + Send + Sync>,
}

impl PeerMapping {
    /// A peer's memory mapped at `ptr..ptr+len` in this process, kept mapped by `keep`.
    ///
    /// # Safety
    /// `ptr..ptr+len` must stay valid for reads and writes while `keep` lives.
    pub unsafe fn new(ptr: *mut u8, len: usize, keep: Box<dyn Any + Send + Sync>) -> Self {
        PeerMapping {
            ptr,
            len,
            remote: None,
            _keep: keep,
        }
    }

    /// A peer's segment reached by transfers (not mapped).
    pub fn remote(seg: Box<dyn RemoteSegment>) -> Self {
        PeerMapping {
            ptr: std::ptr::null_mut(),
            len: seg.len(),
            remote: Some(seg),
            _keep: Box::new(()),
        }
    }
}

/// What an [`Rma`] provider offers: the facts a library chooses its path by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmaCaps {
    /// Every peer's segment is mapped in this process: [`expose`] gives a [`MappedWindow`]
    /// whose accesses are loads, stores and CPU atomics (and `shmem_ptr` works). Only such
    /// providers exist today; a DMA-only provider will say `false`.
    pub load_store: bool,
    /// [`Rma::share_in_place`] works (a program's global variables can be exposed).
    pub share_in_place: bool,
    /// Peers that are not mapped are reached by transfers ([`RemoteSegment`], module docs
    /// "Peers reached by transfers"): [`expose`] works although `load_store` is false.
    pub transfers: bool,
    /// With `transfers`: the target's hardware applies them with no call of the target (a
    /// NIC's RMA engine), so a library may prefer them to its messages by default. False
    /// where software applies them inside the target's calls (the sockets providers),
    /// and for providers without transfers.
    pub remote_progress: bool,
}

impl RmaCaps {
    /// Whether a library reaches the peers it cannot map by transfers (puts and gets by
    /// [`RemoteSegment`], everything else by its messages), given the value of its
    /// environment variable (`SKIFMPI_RMA`, `ARMCI_SHIM_RMA`, …; `None`: unset):
    /// `transfers` asks for them, `messages`, `off` or `0` refuses them, and otherwise a
    /// provider whose hardware applies them takes them ([`RmaCaps::remote_progress`];
    /// over software providers a library's own messages are faster). Never where every
    /// peer is mapped (the direct path) or there are no transfers.
    pub fn transfers_chosen(self, choice: Option<&str>) -> bool {
        if self.load_store || !self.transfers {
            return false;
        }
        match choice.map(str::trim) {
            Some("transfers") => true,
            Some("messages" | "off" | "0") => false,
            _ => self.remote_progress,
        }
    }
}

/// The path a library takes for every rank of a job, the same on all ranks.
pub enum JobPath {
    /// Every peer mapped: loads, stores and CPU atomics.
    Direct(Arc<dyn Rma>),
    /// Messages, with puts and gets to the peers not mapped by transfers of this provider
    /// (and the mapped ones direct): [`RmaCaps::transfers_chosen`].
    Transfers(Arc<dyn Rma>),
    /// Messages only.
    Messages,
}

impl JobPath {
    /// Collective: each rank's vote from its provider `rma` and the library variable's
    /// value `choice`, exchanged (`exchange`: an all-gather among all ranks); a path is
    /// taken only if every rank can take it, `Direct` first.
    pub fn choose(
        rma: Option<Arc<dyn Rma>>,
        choice: Option<&str>,
        exchange: &mut Exchange<'_>,
    ) -> Result<JobPath> {
        let caps = rma.as_ref().map(|r| r.caps());
        let direct = caps.is_some_and(|c| c.load_store);
        let xfer = caps.is_some_and(|c| c.transfers_chosen(choice));
        let votes = exchange(&[u8::from(direct), u8::from(xfer)])?;
        let all = |i: usize| votes.iter().all(|v| v.get(i) == Some(&1));
        Ok(match rma {
            Some(r) if all(0) => JobPath::Direct(r),
            Some(r) if all(1) => JobPath::Transfers(r),
            _ => JobPath::Messages,
        })
    }
}

/// The capability: a driver's way of making one rank's memory reachable by the others
/// (obtained from [`crate::Job::rma`]).
pub trait Rma: Send + Sync {
    /// The provider's name (`shm`, `local`, …), for messages only: choose by [`Rma::caps`].
    fn name(&self) -> &'static str;
    /// This rank.
    fn rank(&self) -> u32;
    /// Ranks in the job.
    fn size(&self) -> u32;
    /// What this provider offers.
    fn caps(&self) -> RmaCaps;
    /// Fresh zeroed memory of `len` bytes that can be exposed (lazily backed).
    fn alloc(&self, len: usize) -> Result<Segment>;
    /// Makes the existing pages `addr..addr+len` exposable, keeping their contents (the shm
    /// provider moves them onto shared memory with the same address). Providers that cannot
    /// return [`crate::Error::InvalidArgument`] (see [`RmaCaps::share_in_place`]).
    ///
    /// # Safety
    /// `addr` and `len` must be page-aligned and the pages mapped read-write for the rest
    /// of the process's life; no other thread may access them during the call.
    unsafe fn share_in_place(&self, addr: *mut u8, len: usize) -> Result<Segment>;
    /// Opens rank `rank`'s segment from the token it published.
    fn open_peer(&self, rank: u32, token: &[u8]) -> Result<PeerMapping>;
    /// Makes `seg`, another provider's segment (the node's shared memory), reachable by
    /// this provider's transfers too; the returned segment has this provider's token only
    /// and keeps `seg` alive (the hierarchy's segments: mapped on the node, registered
    /// with the fabric). Providers without transfers: unsupported.
    fn extend(&self, seg: Segment) -> Result<Segment> {
        drop(seg);
        Err(crate::Error::InvalidArgument(
            format!(
                "Rma::extend is unsupported by the {} RMA provider",
                self.name()
            )
            .into(),
        ))
    }
}

/// A peer's segment reached by transfers, not mapped (module docs, "Peers reached by
/// transfers"). Offsets are checked by the window before a call.
pub trait RemoteSegment: Send + Sync {
    /// Length in bytes.
    fn len(&self) -> usize;
    /// Copies `src` to the segment at `off`; at return `src` may be reused; the data is
    /// visible at the target after the next [`RemoteSegment::flush`] (of any segment of
    /// the provider).
    fn put(&self, off: usize, src: &[u8]) -> Result<()>;
    /// Copies `dst.len()` bytes from the segment at `off` into `dst` (after the puts this
    /// rank issued before, to any segment of the provider, are complete).
    fn get(&self, off: usize, dst: &mut [u8]) -> Result<()>;
    /// Remote completion of every put issued before, to any segment of the provider; an
    /// error of one of them (e.g. its target was lost) is reported here.
    fn flush(&self) -> Result<()>;
    /// Drives this rank's provider once without waiting, for providers that apply peers'
    /// transfers to this rank's memory only inside its calls (libfabric's sockets
    /// providers); a library calls it while it waits ([`MappedWindow::progress`]).
    fn progress(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amo_codes_round_trip() {
        let ops = [
            Amo::Fetch,
            Amo::Set(1),
            Amo::Swap(2),
            Amo::CompareSwap {
                expected: 3,
                new: 4,
            },
            Amo::Add(5),
            Amo::And(6),
            Amo::Or(7),
            Amo::Xor(8),
        ];
        for op in ops {
            let (c, a, b) = op.encode();
            assert_eq!(Amo::decode(c, a, b), Some(op));
        }
        assert_eq!(Amo::decode(8, 0, 0), None);
    }

    #[test]
    fn transfers_are_chosen_by_the_variable_else_by_the_hardware() {
        let caps = |load_store, transfers, remote_progress| RmaCaps {
            load_store,
            share_in_place: false,
            transfers,
            remote_progress,
        };
        let sockets = caps(false, true, false);
        let nic = caps(false, true, true);
        assert!(!sockets.transfers_chosen(None));
        assert!(sockets.transfers_chosen(Some("transfers")));
        assert!(nic.transfers_chosen(None));
        assert!(nic.transfers_chosen(Some("")));
        for no in ["messages", "off", "0"] {
            assert!(!nic.transfers_chosen(Some(no)));
        }
        // Mapped peers take the direct path; no transfers, nothing to choose.
        assert!(!caps(true, false, false).transfers_chosen(Some("transfers")));
        assert!(!caps(false, false, true).transfers_chosen(Some("transfers")));
    }
}
