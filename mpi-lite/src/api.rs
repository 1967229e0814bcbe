//! The idiomatic Rust API: a [`Comm`] borrowed from an [`Mpi`], typed send/receive over
//! slices, and requests that own their buffers until waited or tested.
//!
//! ```
//! use mpi_lite::{api::Comm, Mpi};
//! let out = skifch::local::run(2, |job| {
//!     let mpi = Mpi::new(&job).map_err(|e| skifch::Error::Bootstrap(e.to_string().into()))?;
//!     let world = Comm::world(&mpi);
//!     let mut got = [0i32; 3];
//!     if world.rank() == 0 {
//!         world.send(&[1, 2, 3], 1, 7).unwrap();
//!     } else {
//!         let st = world.recv(&mut got, 0, 7).unwrap();
//!         assert_eq!((st.source, st.tag, st.bytes), (0, 7, 12));
//!     }
//!     mpi.finalize().unwrap();
//!     Ok(got)
//! }).unwrap();
//! assert_eq!(out[1], [1, 2, 3]);
//! ```
#![allow(unsafe_code)] // typed slices become `UserBuf`s or bytes (the constructors below)

use std::sync::Arc;

use skifch::Port;

use crate::comm::{CommData, Mpi};
use crate::datatype::Equivalence;
use crate::engine::{Mode, ReqId, Status};
use crate::error::Result;
use crate::group::Group;
use crate::mem::UserBuf;
pub use skifch::coll::Op;

mod win;
pub use win::Window;

/// A communicator of an [`Mpi`] instance.
#[derive(Clone)]
pub struct Comm<'m, P: Port> {
    mpi: &'m Mpi<P>,
    data: Arc<CommData>,
}

/// A slice as a user buffer.
///
/// # Safety
/// The slice must outlive the returned buffer, and (for receives) not be accessed while it
/// exists; callers below keep both (blocking calls drop it before returning, requests own
/// the vector).
unsafe fn slice_buf<T: Equivalence>(s: &[T]) -> UserBuf {
    let dt = crate::datatype::Datatype::basic_ref(T::BASIC);
    // SAFETY: `s` is `len` contiguous `T`s, the exact type map of (len, T's type);
    // validity and exclusivity are forwarded from the caller.
    unsafe { UserBuf::new_static(s.as_ptr().cast(), s.len(), dt) }
}

/// The bytes of a slice of plain numbers (the blocking calls' fast paths).
fn bytes_of<T: Equivalence>(s: &[T]) -> &[u8] {
    // SAFETY: `Equivalence` is sealed to integers and floats: no padding, so the
    // `size_of_val(s)` bytes at `s` are initialized; borrowed for the slice's lifetime.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast(), std::mem::size_of_val(s)) }
}

/// [`bytes_of`] for receiving.
fn bytes_of_mut<T: Equivalence>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: as `bytes_of`; every byte pattern is a valid integer or float, so writing
    // any bytes leaves valid `T`s; the mutable borrow is the slice's.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast(), std::mem::size_of_val(s)) }
}

impl<'m, P: Port> Comm<'m, P> {
    /// `MPI_COMM_WORLD`.
    pub fn world(mpi: &'m Mpi<P>) -> Self {
        Comm {
            mpi,
            data: mpi.world_data().clone(),
        }
    }
    /// `MPI_COMM_SELF`.
    pub fn self_comm(mpi: &'m Mpi<P>) -> Self {
        Comm {
            mpi,
            data: mpi.self_data().clone(),
        }
    }
    /// The communicator's description (context, group, rank).
    pub fn data(&self) -> &Arc<CommData> {
        &self.data
    }
    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.data.rank
    }
    /// Number of processes.
    pub fn size(&self) -> usize {
        self.data.size()
    }
    /// The group.
    pub fn group(&self) -> Group {
        self.data.group.clone()
    }

    /// `MPI_Send` of a slice to rank `dst` (or `PROC_NULL`).
    pub fn send<T: Equivalence>(&self, data: &[T], dst: i32, tag: i32) -> Result<()> {
        if self
            .mpi
            .try_send_bytes(&self.data, bytes_of(data), dst, tag)?
        {
            return Ok(());
        }
        // SAFETY: `data` outlives the call, which completes the send before returning.
        let b = unsafe { slice_buf(data) };
        self.mpi.send(&self.data, b, dst, tag)
    }

    /// `MPI_Ssend`: returns once the receive is matched.
    pub fn ssend<T: Equivalence>(&self, data: &[T], dst: i32, tag: i32) -> Result<()> {
        self.send_mode(data, dst, tag, Mode::Sync)
    }

    fn send_mode<T: Equivalence>(&self, data: &[T], dst: i32, tag: i32, mode: Mode) -> Result<()> {
        // SAFETY: `data` outlives the request: it is waited for before returning (the
        // engine drops the buffer when the request completes).
        let b = unsafe { slice_buf(data) };
        let id = self.mpi.isend(&self.data, b, dst, tag, mode)?;
        self.mpi.wait(id).map(|_| ())
    }

    /// `MPI_Recv` into a slice from `src` (or `ANY_SOURCE`/`PROC_NULL`) with `tag` (or
    /// `ANY_TAG`). `MPI_ERR_TRUNCATE` if the message is longer than the slice.
    pub fn recv<T: Equivalence>(&self, buf: &mut [T], src: i32, tag: i32) -> Result<Status> {
        let direct = self
            .mpi
            .try_recv_bytes(&self.data, bytes_of_mut(buf), src, tag)?;
        if let Some(s) = direct {
            return Ok(s);
        }
        // SAFETY: `buf` is borrowed mutably for the whole call and the request is
        // complete (its buffer dropped) when `wait` returns.
        let b = unsafe { slice_buf(buf) };
        self.mpi.recv(&self.data, b, src, tag)
    }

    /// `MPI_Sendrecv`.
    pub fn sendrecv<T: Equivalence, U: Equivalence>(
        &self,
        data: &[T],
        dst: i32,
        stag: i32,
        buf: &mut [U],
        src: i32,
        rtag: i32,
    ) -> Result<Status> {
        // SAFETY: both slices outlive the requests, which complete before returning.
        let (sb, rb) = unsafe { (slice_buf(data), slice_buf(buf)) };
        self.mpi.sendrecv(&self.data, sb, dst, stag, rb, src, rtag)
    }

    /// `MPI_Isend`: the request owns `data` and gives it back when complete.
    pub fn isend<T: Equivalence>(
        &self,
        data: Vec<T>,
        dst: i32,
        tag: i32,
    ) -> Result<Request<'m, P, T>> {
        self.istart(data, |b| {
            self.mpi.isend(&self.data, b, dst, tag, Mode::Standard)
        })
    }

    /// `MPI_Issend`.
    pub fn issend<T: Equivalence>(
        &self,
        data: Vec<T>,
        dst: i32,
        tag: i32,
    ) -> Result<Request<'m, P, T>> {
        self.istart(data, |b| {
            self.mpi.isend(&self.data, b, dst, tag, Mode::Sync)
        })
    }

    /// `MPI_Irecv` into `buf` (its length is the capacity).
    pub fn irecv<T: Equivalence>(
        &self,
        buf: Vec<T>,
        src: i32,
        tag: i32,
    ) -> Result<Request<'m, P, T>> {
        self.istart(buf, |b| self.mpi.irecv(&self.data, b, src, tag))
    }

    fn istart<T: Equivalence>(
        &self,
        buf: Vec<T>,
        start: impl FnOnce(UserBuf) -> Result<ReqId>,
    ) -> Result<Request<'m, P, T>> {
        // SAFETY: the heap block of `buf` does not move while the `Request` owns the
        // vector, and the request is complete before the vector is handed back or
        // dropped (see `Request`'s `Drop`). A leaked request leaks the vector too.
        let b = unsafe { slice_buf(&buf) };
        let id = start(b)?;
        Ok(Request {
            mpi: self.mpi,
            id: Some(id),
            buf,
        })
    }

    /// `MPI_Probe`.
    pub fn probe(&self, src: i32, tag: i32) -> Result<Status> {
        self.mpi.probe(&self.data, src, tag)
    }

    /// `MPI_Iprobe`.
    pub fn iprobe(&self, src: i32, tag: i32) -> Result<Option<Status>> {
        self.mpi.iprobe(&self.data, src, tag)
    }

    /// `MPI_Barrier` (see [`Mpi::barrier`]).
    pub fn barrier(&self) -> Result<()> {
        self.mpi.barrier(&self.data)
    }

    /// `MPI_Bcast` of a slice from `root` (see [`crate::coll`] for who participates).
    pub fn bcast<T: Equivalence>(&self, buf: &mut [T], root: i32) -> Result<()> {
        // SAFETY: `buf` is borrowed mutably for the whole (blocking) call.
        let mut b = unsafe { slice_buf(buf) };
        self.mpi.bcast(&self.data, &mut b, root)
    }

    /// `MPI_Allreduce` of `send` into `recv` (same length) with a predefined operation.
    pub fn allreduce<T: Equivalence>(&self, send: &[T], recv: &mut [T], op: Op) -> Result<()> {
        if send.len() != recv.len() {
            return Err(crate::Error::Count(format!(
                "MPI_Allreduce: {} elements sent, room for {}",
                send.len(),
                recv.len()
            )));
        }
        // SAFETY: both slices are borrowed for the whole (blocking) call.
        let (s, mut r) = unsafe { (slice_buf(send), slice_buf(recv)) };
        self.mpi.allreduce(&self.data, Some(&s), &mut r, op)
    }

    /// `MPI_Reduce` to `root`; `recv` matters at the root only (on an intercommunicator:
    /// `root` is `MPI_ROOT` at the root, `MPI_PROC_NULL` in the rest of its group, the
    /// root's rank in the other group).
    pub fn reduce<T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: Op,
        root: i32,
    ) -> Result<()> {
        // SAFETY: both slices are borrowed for the whole (blocking) call.
        let (s, mut r) = unsafe { (slice_buf(send), slice_buf(recv)) };
        let at_root = self.data.is_root(root);
        self.mpi.reduce(
            &self.data,
            Some(&s),
            if at_root { Some(&mut r) } else { None },
            op,
            root,
        )
    }

    /// `MPI_Allgather`: every member's `send` (same length everywhere) into `recv`
    /// (`size() × send.len()` elements), in rank order; on an intercommunicator the
    /// remote group's (`remote_size()` blocks).
    pub fn allgather<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let n = self.data.peers().size();
        let (counts, displs): (Vec<usize>, Vec<usize>) =
            (0..n).map(|i| (send.len(), i * send.len())).unzip();
        if recv.len() < n * send.len() {
            return Err(crate::Error::Count(
                "MPI_Allgather: receive slice too short".into(),
            ));
        }
        // SAFETY: both slices are borrowed for the whole (blocking) call.
        let (s, mut r) = unsafe { (slice_buf(send), slice_buf(recv)) };
        self.mpi
            .allgatherv(&self.data, Some(&s), &mut r, &counts, &displs)
    }

    /// `MPI_Comm_dup` (collective).
    pub fn dup(&self) -> Result<Comm<'m, P>> {
        Ok(Comm {
            mpi: self.mpi,
            data: self.mpi.dup(&self.data)?,
        })
    }

    /// `MPI_Comm_split` (collective); `None` for `color == UNDEFINED`.
    pub fn split(&self, color: i32, key: i32) -> Result<Option<Comm<'m, P>>> {
        Ok(self.mpi.split(&self.data, color, key)?.map(|data| Comm {
            mpi: self.mpi,
            data,
        }))
    }

    /// `MPI_Intercomm_create` (collective over both groups): an intercommunicator between
    /// this communicator's group and the group whose leader is `remote_leader` in `peer`
    /// (which matters at `local_leader` only); the leaders exchange with `tag` on `peer`.
    pub fn intercomm_create(
        &self,
        local_leader: i32,
        peer: Option<&Comm<'m, P>>,
        remote_leader: i32,
        tag: i32,
    ) -> Result<Comm<'m, P>> {
        let peer = peer.map(|p| &*p.data);
        let data = self
            .mpi
            .intercomm_create(&self.data, local_leader, peer, remote_leader, tag)?;
        Ok(Comm {
            mpi: self.mpi,
            data,
        })
    }

    /// `MPI_Intercomm_merge` (collective over both groups): the group passing `high ==
    /// false` first.
    pub fn merge(&self, high: bool) -> Result<Comm<'m, P>> {
        Ok(Comm {
            mpi: self.mpi,
            data: self.mpi.intercomm_merge(&self.data, high)?,
        })
    }

    /// The remote group's size (`None`: an intracommunicator).
    pub fn remote_size(&self) -> Option<usize> {
        self.data.remote_size()
    }

    /// `MPI_Comm_create` (collective); `None` outside `g`.
    pub fn create(&self, g: &Group) -> Result<Option<Comm<'m, P>>> {
        Ok(self.mpi.create(&self.data, g)?.map(|data| Comm {
            mpi: self.mpi,
            data,
        }))
    }
}

/// A nonblocking operation that owns its buffer. [`Request::wait`] or a successful
/// [`Request::test`] hands the buffer back; dropping a pending request waits for it
/// (a receive not yet matched is cancelled first), so the buffer is never freed under
/// the engine.
pub struct Request<'m, P: Port, T> {
    mpi: &'m Mpi<P>,
    id: Option<ReqId>,
    buf: Vec<T>,
}

impl<P: Port, T> Request<'_, P, T> {
    /// `MPI_Wait`: the buffer (received data for a receive) and the status.
    pub fn wait(mut self) -> Result<(Vec<T>, Status)> {
        let id = self.id.take().expect("a live request has an id");
        match self.mpi.wait(id) {
            Ok(st) => Ok((std::mem::take(&mut self.buf), st)),
            Err(e) => {
                self.abandon(id);
                Err(e)
            }
        }
    }

    /// `MPI_Test`: `Ok(Err(self))` while pending.
    #[allow(clippy::type_complexity)]
    pub fn test(mut self) -> Result<std::result::Result<(Vec<T>, Status), Self>> {
        let id = self.id.expect("a live request has an id");
        match self.mpi.test(id) {
            Ok(Some(st)) => {
                self.id = None;
                Ok(Ok((std::mem::take(&mut self.buf), st)))
            }
            Ok(None) => Ok(Err(self)),
            Err(e) => {
                self.id = None;
                self.abandon(id);
                Err(e)
            }
        }
    }

    /// After an error: if the engine still holds the request (a lost peer ended the
    /// wait), the buffer is leaked rather than freed under it.
    fn abandon(&mut self, id: ReqId) {
        if self.mpi.engine().is_request(id) {
            std::mem::forget(std::mem::take(&mut self.buf));
        }
    }
}

impl<P: Port, T> Drop for Request<'_, P, T> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let e = self.mpi.engine();
            let _ = e.cancel(id);
            let failed = e.wait(id).is_err();
            if failed {
                self.abandon(id);
            }
        }
    }
}
