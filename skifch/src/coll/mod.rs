//! Collective operations, written once for every library (ARCHITECTURE "Higher libraries";
//! semantics after MPI-3.1 ch. 5 and OpenSHMEM 1.5 §9.9).
//!
//! * [`Transport`] — what an algorithm needs from a group: its rank and size, tagged
//!   blocking send/recv between members, and a `sendrecv` that cannot deadlock on a
//!   non-buffering channel. mpi-lite implements it over its matching engine (a
//!   communicator's collective context); a [`ProtoGroup`] on an endpoint
//!   ([`ProtoGroup::on`], a [`GroupOn`]) implements it over [`crate::proto`] active
//!   messages (used by shmem teams and by anything else).
//! * The algorithms ([`barrier`], [`bcast`], [`reduce`], [`allreduce`], [`gather`],
//!   [`gatherv`], [`scatter`], [`scatterv`], [`allgather`], [`allgatherv`], [`alltoall`],
//!   [`alltoallv`], [`reduce_scatter`], [`reduce_scatter_block`], [`scan`], [`exscan`]),
//!   chosen by size and group size and correct for any group size (table in `algo`).
//! * The reductions ([`ops`]): [`Kernel`] = (element type, operation), and the
//!   [`Reducer`] trait for user-defined (possibly non-commutative) operations.
//! * [`Barrier`] — a barrier straight over a channel, for the channel's own tools.
//!
//! # Who participates and when calls complete
//! Every member of the group calls the same collective, in the same order as every other
//! collective on that group, with matching arguments (same root, same lengths/counts where
//! MPI requires them to match); mismatched lengths are detected where a message arrives and
//! give `InvalidArgument`. A call is **blocking**: it returns when this member's part is
//! done — its receive buffer holds the result and its send buffer may be reused. It does
//! not imply that other members have finished, except for [`barrier`], which returns only
//! after every member has entered it. All calls make progress on the transport while they
//! wait (a [`ProtoGroup`] serves other active messages meanwhile) and fail with `PeerLost`
//! if a rank is lost.
//!
//! Buffers are bytes; counts and displacements are in bytes. Reductions combine in rank
//! order for non-commutative operations (MPI-3.1 §5.9.1).
//!
//! # Example
//! ```
//! use skifch::{coll::{self, DType, Kernel, Op, ProtoGroup}, local, proto::Endpoint};
//! let sums = local::run(5, |job| {
//!     let mut ep = Endpoint::open(&job, 1)?; // the collective layer is built in
//!     let group = ProtoGroup::world(&ep);
//!     let world = group.on(&mut ep);
//!     let mine = (job.rank() as i64 + 1).to_ne_bytes();
//!     let mut sum = [0u8; 8];
//!     coll::allreduce(&world, &mine, &mut sum, &Kernel::new(DType::I64, Op::Sum)?)?;
//!     Ok(i64::from_ne_bytes(sum))
//! }).unwrap();
//! assert_eq!(sums, [15; 5]);
//! ```

mod algo;
mod barrier;
mod group;
pub mod ops;

pub use algo::{
    allgather, allgatherv, allreduce, alltoall, alltoallv, barrier, bcast, exscan, gather, gatherv,
    reduce, reduce_scatter, reduce_scatter_block, scan, scatter, scatterv, ALLGATHER_RD_MAX,
    ALLREDUCE_RING, BCAST_LONG,
};
pub use barrier::Barrier;
pub(crate) use group::{CollState, H_COLL};
pub use group::{GroupOn, ProtoGroup};
pub use ops::{DType, Kernel, Op, Reducer};

use crate::Result;

/// All-gather of one byte string per member, of any lengths (the lengths first, then the
/// strings with [`allgatherv`]): the descriptors libraries exchange when they set up
/// (segment tokens, sizes, votes). Returns member i's string at index i.
///
/// # Collective Operation
/// Every member calls it in the same order; it returns when this member holds every
/// string.
pub fn allgather_bytes<T: Transport + ?Sized>(t: &T, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
    let n = t.size();
    let mut lens = vec![0u8; 8 * n];
    allgather(t, &(mine.len() as u64).to_le_bytes(), &mut lens)?;
    let counts: Vec<usize> = (0..n).map(|i| le_word(&lens, i) as usize).collect();
    let displs: Vec<usize> = counts
        .iter()
        .scan(0, |at, &c| Some(std::mem::replace(at, *at + c)))
        .collect();
    let mut all = vec![0u8; counts.iter().sum()];
    allgatherv(t, mine, &mut all, &counts, &displs)?;
    Ok(displs
        .iter()
        .zip(&counts)
        .map(|(&d, &c)| all[d..d + c].to_vec())
        .collect())
}

/// Little-endian word `i` of `b` (0 past its end): how the descriptors of
/// [`allgather_bytes`] carry numbers.
pub fn le_word(b: &[u8], i: usize) -> u64 {
    b.get(8 * i..8 * i + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The point-to-point service a group offers to the collective algorithms.
///
/// Members are numbered `0..size()`. Messages from one member to another with the same tag
/// are received in the order they were sent (the algorithms rely on this, and use one tag
/// per collective call).
pub trait Transport {
    /// This member's index in the group.
    fn rank(&self) -> usize;
    /// Members in the group.
    fn size(&self) -> usize;
    /// The tag of the next collective call (below 2³¹): every member gets the same
    /// sequence of tags because every member makes the same sequence of calls.
    fn next_tag(&self) -> u32;
    /// Sends `data` to member `to`; returns when `data` may be reused. Must not deadlock
    /// when `to` is itself blocked sending to this member (keep receiving meanwhile).
    fn send(&self, to: usize, tag: u32, data: &[u8]) -> Result<()>;
    /// Receives the next message from member `from` with `tag` into `buf`; returns its
    /// length (a longer message is an error).
    fn recv(&self, from: usize, tag: u32, buf: &mut [u8]) -> Result<usize>;
    /// Sends to `to` and receives from `from` at once (both may be the same member, doing
    /// the same call towards us); returns the received length. Must not deadlock whatever
    /// the message sizes (e.g. post the receive before sending).
    fn sendrecv(
        &self,
        to: usize,
        sdata: &[u8],
        from: usize,
        rbuf: &mut [u8],
        tag: u32,
    ) -> Result<usize>;
}
