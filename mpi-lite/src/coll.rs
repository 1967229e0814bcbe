//! Collectives (MPI-3.1 chapter 5) over the shared algorithms of [`skifch::coll`]: a
//! communicator's collective context is the algorithms' [`Transport`] (blocking tagged
//! send/recv on the engine, so collective traffic never matches user receives), and this
//! module turns MPI arguments — datatypes, counts, `MPI_IN_PLACE`, reduction operations —
//! into the byte buffers the algorithms take.
//!
//! Buffers whose type map is contiguous are used in place (no copy); others are packed
//! into a temporary and unpacked after. Reductions take the elements as the C program
//! lays them out (predefined types with their padding, dense derived types), or packed
//! when the type is a derived type of one predefined type without padding ([`dense_in`]);
//! others get `MPI_ERR_TYPE`.
//!
//! # Collective Operation
//! Every member of the communicator calls the same collectives in the same order with
//! matching arguments (same root; counts that agree as MPI requires). A call returns when
//! this member's part is done (its receive buffer holds the result); only [`Mpi::barrier`]
//! implies that every member has entered. Calls fail with the transport's error if a
//! member is lost.
#![allow(unsafe_code)] // byte slices of the algorithms lent to the engine (see `CommTransport`)

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::Ordering;

use skifch::coll::{self, Kernel, Op, Transport};
use skifch::Port;

use crate::comm::{CommData, Mpi};
use crate::datatype::{Basic, Datatype};
use crate::error::{Error, Result};
use crate::mem::UserBuf;
use crate::op::{reducer, Red, ReduceOp};

/// A communicator's collective context as the algorithms' transport.
pub struct CommTransport<'a, P: Port> {
    mpi: &'a Mpi<P>,
    c: &'a CommData,
    /// The MPI error behind the last failure (the algorithms carry `skifch::Error`).
    last: RefCell<Option<Error>>,
}

impl<'a, P: Port> CommTransport<'a, P> {
    /// The transport of communicator `c`.
    pub fn new(mpi: &'a Mpi<P>, c: &'a CommData) -> Self {
        CommTransport {
            mpi,
            c,
            last: RefCell::new(None),
        }
    }

    fn keep(&self, e: Error) -> skifch::Error {
        let out = match &e {
            Error::Transport(t) => t.clone(),
            other => skifch::Error::InvalidArgument(other.to_string().into()),
        };
        *self.last.borrow_mut() = Some(e);
        out
    }

    /// An algorithm's error as an MPI error (the original one when it came from here).
    fn mpi_error(&self, e: skifch::Error) -> Error {
        match self.last.borrow_mut().take() {
            Some(m) => m,
            None => match e {
                skifch::Error::InvalidArgument(m) => {
                    Error::Arg(format!("collective arguments do not match: {m}"))
                }
                other => Error::Transport(other),
            },
        }
    }

    /// `len` bytes at `data` as an engine buffer.
    ///
    /// # Safety
    /// The bytes stay valid (and, for a receive, untouched by anything else) until the
    /// request made with the buffer is complete or the engine is broken. The callers below
    /// lend a slice borrowed for the call and wait for the request before returning; if
    /// the wait fails, either the request was released (request errors) or the engine is
    /// broken and never touches a buffer again (transport errors; see `Engine`).
    unsafe fn byte_buf(data: *const u8, len: usize) -> UserBuf {
        // SAFETY: forwarded contract (the type map of `len` bytes is `data..data + len`).
        unsafe { UserBuf::new_static(data, len, Datatype::basic_ref(Basic::Byte)) }
    }
}

impl<P: Port> Transport for CommTransport<'_, P> {
    fn rank(&self) -> usize {
        self.c.rank
    }
    fn size(&self) -> usize {
        self.c.size()
    }
    fn next_tag(&self) -> u32 {
        self.c.coll_seq.fetch_add(1, Ordering::Relaxed) & 0x7fff_ffff
    }
    fn send(&self, to: usize, tag: u32, data: &[u8]) -> skifch::Result<()> {
        let e = self.mpi.engine();
        let env = self.c.coll_env(self.c.rank as i32, tag as i32);
        let dst = self.c.world_of(to);
        let r = match e.try_send_eager(env, dst, data) {
            Ok(true) => Ok(()),
            Ok(false) => {
                // SAFETY: `data` is borrowed for this call, which completes the send (or
                // breaks the engine) before returning.
                let b = unsafe { Self::byte_buf(data.as_ptr(), data.len()) };
                e.send(env, dst, b)
            }
            Err(x) => Err(x),
        };
        r.map_err(|x| self.keep(x))
    }
    fn recv(&self, from: usize, tag: u32, buf: &mut [u8]) -> skifch::Result<usize> {
        let e = self.mpi.engine();
        let env = self.c.coll_env(from as i32, tag as i32);
        let r = match e.try_recv_bytes(env, buf) {
            Ok(None) => {
                // SAFETY: `buf` is borrowed mutably for this call, which completes the
                // receive (or breaks the engine) before returning.
                let b = unsafe { Self::byte_buf(buf.as_mut_ptr(), buf.len()) };
                e.recv(env, b)
            }
            Ok(Some(s)) => Ok(s),
            Err(x) => Err(x),
        };
        r.map(|s| s.bytes).map_err(|x| self.keep(x))
    }
    fn sendrecv(
        &self,
        to: usize,
        sdata: &[u8],
        from: usize,
        rbuf: &mut [u8],
        tag: u32,
    ) -> skifch::Result<usize> {
        let e = self.mpi.engine();
        let out = self.c.coll_env(self.c.rank as i32, tag as i32);
        let inc = self.c.coll_env(from as i32, tag as i32);
        let dst = self.c.world_of(to);
        let r = (|| {
            // The common small exchange: eager send, then the direct receive into `rbuf`.
            if e.try_send_eager(out, dst, sdata)? {
                if let Some(s) = e.try_recv_bytes(inc, rbuf)? {
                    return Ok(s);
                }
                // SAFETY: `rbuf` is borrowed mutably for this call, which completes the
                // receive (or breaks the engine) before returning.
                let rb = unsafe { Self::byte_buf(rbuf.as_mut_ptr(), rbuf.len()) };
                return e.recv(inc, rb);
            }
            // SAFETY: both slices are borrowed for this call, which completes (or breaks
            // the engine for) both transfers before returning.
            let (rb, sb) = unsafe {
                (
                    Self::byte_buf(rbuf.as_mut_ptr(), rbuf.len()),
                    Self::byte_buf(sdata.as_ptr(), sdata.len()),
                )
            };
            e.sendrecv(out, dst, sb, inc, rb)
        })();
        r.map(|s| s.bytes).map_err(|x| self.keep(x))
    }
}

/// The predefined reduction operations, as `mpi.h` numbers them (`MPI_MAX` = 1 …).
#[inline]
pub fn op_from_handle(h: i32) -> Result<Op> {
    Ok(match h {
        1 => Op::Max,
        2 => Op::Min,
        3 => Op::Sum,
        4 => Op::Prod,
        5 => Op::Land,
        6 => Op::Band,
        7 => Op::Lor,
        8 => Op::Bor,
        9 => Op::Lxor,
        10 => Op::Bxor,
        11 => Op::MinLoc,
        12 => Op::MaxLoc,
        13 | 14 => {
            return Err(Error::Op(
                "MPI_REPLACE and MPI_NO_OP are for one-sided accumulates only".into(),
            ))
        }
        other => return Err(Error::Op(format!("operation handle {other} is not valid"))),
    })
}

/// The reduction kernel for `op` on elements of `dt`.
pub fn kernel(dt: &Datatype, op: Op) -> Result<Kernel> {
    let (b, _) = dt.homogeneous().ok_or_else(|| {
        Error::Type("a reduction on a derived type of mixed element types".into())
    })?;
    kernel_of(b, op)
}

/// The reduction kernel for `op` on elements of predefined type `b`.
pub fn kernel_of(b: Basic, op: Op) -> Result<Kernel> {
    let d = b.dtype().ok_or_else(|| {
        Error::Op(format!(
            "reductions on {} are not supported by mpi-lite",
            b.name()
        ))
    })?;
    Kernel::new(d, op).map_err(|e| Error::Op(format!("{op:?} on {}: {e}", b.name())))
}

/// A buffer's bytes for reading: in place when contiguous, else packed.
pub(crate) fn bytes(b: &UserBuf) -> Result<Cow<'_, [u8]>> {
    Ok(match b.as_contiguous() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(b.to_packed()?),
    })
}

/// Runs `f` on a buffer's bytes for writing (in place, or packed and unpacked after);
/// `load`: the bytes start as the buffer's contents.
pub(crate) fn with_bytes<T>(
    b: &mut UserBuf,
    load: bool,
    f: impl FnOnce(&mut [u8]) -> Result<T>,
) -> Result<T> {
    if let Some(s) = b.as_contiguous_mut() {
        return f(s);
    }
    let mut tmp = if load {
        b.to_packed()?
    } else {
        crate::mem::zeroed(b.packed_len())?
    };
    let r = f(&mut tmp)?;
    b.write_packed(0, &tmp);
    Ok(r)
}

/// A reduction operand's bytes as the kernels take them (MPI-3.1 §5.9.1: predefined
/// operations apply to each predefined element): the C layout in place when the buffer is
/// one dense run (predefined types with their padding, dense derived types); packed when
/// its type is a derived type of one predefined type without padding (a matrix column, an
/// indexed set of doubles), whose packed bytes are an array of that type. Other types, and
/// user operations on a non-dense type (they are called with the user's layout), are
/// `MPI_ERR_TYPE`.
pub(crate) fn dense_in<'a>(b: &'a UserBuf, k: &Red) -> Result<Cow<'a, [u8]>> {
    if let Some(d) = b.dense() {
        return Ok(Cow::Borrowed(d));
    }
    packable(b, k)?;
    Ok(Cow::Owned(b.to_packed()?))
}

/// Runs `f` on a reduction result's bytes in [`dense_in`]'s form, starting as the buffer's
/// contents; packed ones are unpacked into the buffer when `f` succeeds.
pub(crate) fn with_dense<T>(
    b: &mut UserBuf,
    k: &Red,
    f: impl FnOnce(&mut [u8]) -> Result<T>,
) -> Result<T> {
    if let Some(d) = b.dense_mut() {
        return f(d);
    }
    packable(b, k)?;
    let mut tmp = b.to_packed()?;
    let r = f(&mut tmp)?;
    b.write_packed(0, &tmp);
    Ok(r)
}

/// `MPI_Reduce_local`: `inout = input op inout`, element by element (local; no
/// communication). Buffers as [`dense_in`] takes them.
pub fn reduce_local(input: &UserBuf, inout: &mut UserBuf, op: &ReduceOp) -> Result<()> {
    let k = reducer(input.datatype(), op)?;
    let a = dense_in(input, &k)?.into_owned();
    with_dense(inout, &k, |out| {
        if out.len() != a.len() {
            return Err(Error::Count(
                "MPI_Reduce_local: the buffers' sizes differ".into(),
            ));
        }
        coll::Reducer::apply(&k, &a, out);
        Ok(())
    })
}

/// Whether a non-dense buffer can be reduced as its packed bytes ([`dense_in`]).
pub(crate) fn packable(b: &UserBuf, k: &Red) -> Result<()> {
    if let Red::User { typed, .. } = k {
        // Typed: called on the type's layout rebuilt from the packed bytes.
        return match typed {
            true => Ok(()),
            false => Err(Error::Type(format!(
                "a user operation on a non-contiguous buffer of {}",
                b.datatype().name()
            ))),
        };
    }
    match b.datatype().homogeneous() {
        Some((e, _)) if e.dense_size() == Some(e.packed_size()) => Ok(()),
        _ => Err(Error::Type(
            "predefined reductions need a predefined type, a dense derived type or a derived \
             type of one predefined type without padding"
                .into(),
        )),
    }
}

/// Bytes of one element of `dt` in [`dense_in`]'s form: the extent of a predefined type
/// (its padding included), the size of a derived one (equal to its extent when dense).
pub(crate) fn reduce_elem(dt: &Datatype) -> usize {
    match dt.predefined() {
        Some(_) => dt.extent() as usize,
        None => dt.size(),
    }
}

pub(crate) fn overlap_err() -> Error {
    Error::Buffer("MPI_Allreduce: the send and receive buffers overlap (use MPI_IN_PLACE)".into())
}

/// Whether two byte ranges share memory.
fn overlap(a: &[u8], b: &[u8]) -> bool {
    let (a0, b0) = (a.as_ptr() as usize, b.as_ptr() as usize);
    !a.is_empty() && !b.is_empty() && a0 < b0 + b.len() && b0 < a0 + a.len()
}

pub(crate) fn root_of(c: &CommData, root: i32) -> Result<usize> {
    usize::try_from(root)
        .ok()
        .filter(|&r| r < c.size())
        .ok_or_else(|| {
            Error::Root(format!(
                "root {root} is not in a communicator of {}",
                c.size()
            ))
        })
}

/// Byte counts and displacements from element counts (`displs` in elements of the type).
pub(crate) fn byte_layout(
    dt: &Datatype,
    counts: &[usize],
    displs: &[usize],
) -> (Vec<usize>, Vec<usize>) {
    let s = dt.size();
    (
        counts.iter().map(|c| c * s).collect(),
        displs.iter().map(|d| d * s).collect(),
    )
}

impl<P: Port> Mpi<P> {
    pub(crate) fn run<T>(
        &self,
        c: &CommData,
        f: impl FnOnce(&CommTransport<'_, P>) -> skifch::Result<T>,
    ) -> Result<T> {
        let t = CommTransport::new(self, c);
        f(&t).map_err(|e| t.mpi_error(e))
    }

    /// `MPI_Bcast` of `buf` from `root`.
    pub fn bcast(&self, c: &CommData, buf: &mut UserBuf, root: i32) -> Result<()> {
        if let Some(x) = &c.inter {
            return self.inter_bcast(c, x, buf, root);
        }
        let root = root_of(c, root)?;
        let load = c.rank == root;
        with_bytes(buf, load, |b| self.run(c, |t| coll::bcast(t, root, b)))
    }

    /// `MPI_Reduce`: `send == None` is `MPI_IN_PLACE` (root only); `recv` matters at the root.
    pub fn reduce(
        &self,
        c: &CommData,
        send: Option<&UserBuf>,
        recv: Option<&mut UserBuf>,
        op: impl Into<ReduceOp>,
        root: i32,
    ) -> Result<()> {
        if let Some(x) = &c.inter {
            return self.inter_reduce(c, x, send, recv, op.into(), root);
        }
        let root = root_of(c, root)?;
        let dt = send
            .or(recv.as_deref())
            .map(|b| b.datatype().clone())
            .ok_or_else(|| Error::Buffer("MPI_Reduce: no send buffer".into()))?;
        let k = reducer(&dt, &op.into())?;
        match (send, recv) {
            (Some(s), Some(r)) if c.rank == root => {
                let s = dense_in(s, &k)?.into_owned();
                with_dense(r, &k, |out| {
                    self.run(c, |t| coll::reduce(t, root, &s, out, &k))
                })
            }
            (None, Some(r)) if c.rank == root => with_dense(r, &k, |out| {
                let s = out.to_vec();
                self.run(c, |t| coll::reduce(t, root, &s, out, &k))
            }),
            (Some(s), _) if c.rank != root => {
                let s = dense_in(s, &k)?;
                self.run(c, |t| coll::reduce(t, root, &s, &mut [], &k))
            }
            _ => Err(Error::Buffer(
                "MPI_Reduce: MPI_IN_PLACE is for the root's send buffer only".into(),
            )),
        }
    }

    /// `MPI_Allreduce`: `send == None` is `MPI_IN_PLACE`.
    pub fn allreduce(
        &self,
        c: &CommData,
        send: Option<&UserBuf>,
        recv: &mut UserBuf,
        op: impl Into<ReduceOp>,
    ) -> Result<()> {
        let k = reducer(send.map_or(recv.datatype(), |s| s.datatype()), &op.into())?;
        let s = match send {
            Some(s) => {
                let s = dense_in(s, &k)?;
                if let (Cow::Borrowed(a), Some(b)) = (&s, recv.dense()) {
                    if overlap(a, b) {
                        return Err(overlap_err());
                    }
                }
                Some(s)
            }
            None => None,
        };
        with_dense(recv, &k, |out| {
            self.allreduce_dense(c, s.as_deref(), out, &k)
        })
    }

    /// `MPI_Allreduce` of `recv.len()` bytes of predefined type `b` laid out densely (the C
    /// ABI's common case: no `UserBuf`); `send == None` is `MPI_IN_PLACE`. The caller makes
    /// sure `send` and `recv` do not overlap (MPI forbids it; `MPI_ERR_BUFFER`).
    pub fn allreduce_bytes(
        &self,
        c: &CommData,
        send: Option<&[u8]>,
        recv: &mut [u8],
        b: Basic,
        op: Op,
    ) -> Result<()> {
        match kernel_of(b, op) {
            Ok(k) => self.allreduce_dense(c, send, recv, &k),
            // The complex types: mpi-lite's own reducer.
            Err(e) => match reducer(Datatype::basic_ref(b), &op.into()) {
                Ok(r) => self.allreduce_dense(c, send, recv, &r),
                Err(_) => Err(e),
            },
        }
    }

    fn allreduce_dense<R: coll::Reducer>(
        &self,
        c: &CommData,
        send: Option<&[u8]>,
        recv: &mut [u8],
        k: &R,
    ) -> Result<()> {
        // The send buffer is used in place; MPI_IN_PLACE needs a copy of the input, on the
        // stack when small.
        let mut small = [0u8; 64];
        let copy: Vec<u8>;
        let s: &[u8] = match send {
            Some(s) => s,
            None if recv.len() <= small.len() => {
                small[..recv.len()].copy_from_slice(recv);
                &small[..recv.len()]
            }
            None => {
                copy = recv.to_vec();
                &copy
            }
        };
        if let Some(x) = &c.inter {
            return self.inter_allreduce(c, x, s, recv, k);
        }
        self.run(c, |t| coll::allreduce(t, s, recv, k))
    }

    /// `MPI_Scan` (`exclusive`: `MPI_Exscan`); `send == None` is `MPI_IN_PLACE`.
    pub fn scan(
        &self,
        c: &CommData,
        send: Option<&UserBuf>,
        recv: &mut UserBuf,
        op: impl Into<ReduceOp>,
        exclusive: bool,
    ) -> Result<()> {
        c.intra(if exclusive { "MPI_Exscan" } else { "MPI_Scan" })?;
        let k = reducer(send.map_or(recv.datatype(), |s| s.datatype()), &op.into())?;
        let s = match send {
            Some(s) => dense_in(s, &k)?.into_owned(),
            None => dense_in(recv, &k)?.into_owned(),
        };
        with_dense(recv, &k, |out| {
            if exclusive {
                self.run(c, |t| coll::exscan(t, &s, out, &k))
            } else {
                self.run(c, |t| coll::scan(t, &s, out, &k))
            }
        })
    }

    /// `MPI_Reduce_scatter`: `counts` in elements; `send == None` is `MPI_IN_PLACE` (then
    /// `recv` holds the whole input and gets this member's block at its start).
    pub fn reduce_scatter(
        &self,
        c: &CommData,
        send: Option<&UserBuf>,
        recv: &mut UserBuf,
        counts: &[usize],
        op: impl Into<ReduceOp>,
    ) -> Result<()> {
        if let Some(x) = &c.inter {
            return self.inter_reduce_scatter(c, x, send, recv, counts, op.into());
        }
        let dt = send.map_or(recv.datatype(), |s| s.datatype()).clone();
        let k = reducer(&dt, &op.into())?;
        let es = reduce_elem(&dt);
        let bc: Vec<usize> = counts.iter().map(|n| n * es).collect();
        let s = match send {
            Some(s) => dense_in(s, &k)?.into_owned(),
            None => dense_in(recv, &k)?.into_owned(),
        };
        let mine = bc.get(c.rank).copied().unwrap_or(0);
        with_dense(recv, &k, |out| {
            if out.len() < mine {
                return Err(Error::Count(
                    "MPI_Reduce_scatter: receive buffer smaller than the block".into(),
                ));
            }
            self.run(c, |t| {
                coll::reduce_scatter(t, &s, &mut out[..mine], &bc, &k)
            })
        })
    }

    /// `MPI_Gatherv` (and `MPI_Gather` with equal counts): `counts`/`displs` in elements
    /// of the receive type, significant at the root; `send == None` is `MPI_IN_PLACE` at
    /// the root (its block is already in place).
    pub fn gatherv(
        &self,
        c: &CommData,
        send: Option<&UserBuf>,
        recv: Option<&mut UserBuf>,
        counts: &[usize],
        displs: &[usize],
        root: i32,
    ) -> Result<()> {
        if let Some(x) = &c.inter {
            return self.inter_gatherv(c, x, send, recv, counts, displs, root);
        }
        let root = root_of(c, root)?;
        if c.rank != root {
            let s =
                send.ok_or_else(|| Error::Buffer("MPI_Gather: MPI_IN_PLACE on a non-root".into()))?;
            let s = bytes(s)?;
            return self.run(c, |t| coll::gatherv(t, root, &s, &mut [], &[], &[]));
        }
        let r =
            recv.ok_or_else(|| Error::Buffer("MPI_Gather: no receive buffer at the root".into()))?;
        let (bc, bd) = byte_layout(r.datatype(), counts, displs);
        let own = match send {
            Some(s) => bytes(s)?.into_owned(),
            None => {
                let mut v = crate::mem::zeroed(bc[c.rank])?;
                r.read_packed(bd[c.rank], &mut v);
                v
            }
        };
        with_bytes(r, true, |b| {
            self.run(c, |t| coll::gatherv(t, root, &own, b, &bc, &bd))
        })
    }

    /// `MPI_Scatterv` (and `MPI_Scatter`): `counts`/`displs` in elements of the send type,
    /// significant at the root; `recv == None` is `MPI_IN_PLACE` at the root.
    pub fn scatterv(
        &self,
        c: &CommData,
        send: Option<&UserBuf>,
        counts: &[usize],
        displs: &[usize],
        recv: Option<&mut UserBuf>,
        root: i32,
    ) -> Result<()> {
        if let Some(x) = &c.inter {
            return self.inter_scatterv(c, x, send, counts, displs, recv, root);
        }
        let root = root_of(c, root)?;
        if c.rank != root {
            let r = recv
                .ok_or_else(|| Error::Buffer("MPI_Scatter: MPI_IN_PLACE on a non-root".into()))?;
            return with_bytes(r, false, |b| {
                self.run(c, |t| coll::scatterv(t, root, &[], &[], &[], b))
            });
        }
        let s =
            send.ok_or_else(|| Error::Buffer("MPI_Scatter: no send buffer at the root".into()))?;
        let (bc, bd) = byte_layout(s.datatype(), counts, displs);
        let sb = bytes(s)?;
        match recv {
            Some(r) => with_bytes(r, false, |b| {
                self.run(c, |t| coll::scatterv(t, root, &sb, &bc, &bd, b))
            }),
            None => {
                let mut own = crate::mem::zeroed(bc[c.rank])?;
                self.run(c, |t| coll::scatterv(t, root, &sb, &bc, &bd, &mut own))
            }
        }
    }

    /// `MPI_Allgatherv` (and `MPI_Allgather`): `counts`/`displs` in elements of the receive
    /// type; `send == None` is `MPI_IN_PLACE` (this member's block is already in place).
    pub fn allgatherv(
        &self,
        c: &CommData,
        send: Option<&UserBuf>,
        recv: &mut UserBuf,
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        if let Some(x) = &c.inter {
            return self.inter_allgatherv(c, x, send, recv, counts, displs);
        }
        let (bc, bd) = byte_layout(recv.datatype(), counts, displs);
        let me = c.rank;
        let own = match send {
            Some(s) => bytes(s)?.into_owned(),
            None => {
                let mut v = crate::mem::zeroed(bc[me])?;
                recv.read_packed(bd[me], &mut v);
                v
            }
        };
        let equal =
            bc.iter().all(|&x| x == bc[0]) && bd.iter().enumerate().all(|(i, &d)| d == i * bc[0]);
        with_bytes(recv, true, |b| {
            self.run(c, |t| {
                if equal {
                    coll::allgather(t, &own, &mut b[..bc[0] * bc.len()])
                } else {
                    coll::allgatherv(t, &own, b, &bc, &bd)
                }
            })
        })
    }

    /// `MPI_Alltoallv` (and `MPI_Alltoall`): counts/displacements in elements of each
    /// side's type; `send == None` is `MPI_IN_PLACE` (the data starts in `recv`).
    #[allow(clippy::too_many_arguments)]
    pub fn alltoallv(
        &self,
        c: &CommData,
        send: Option<&UserBuf>,
        scounts: &[usize],
        sdispls: &[usize],
        recv: &mut UserBuf,
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<()> {
        if let Some(x) = &c.inter {
            return self.inter_alltoallv(c, x, send, scounts, sdispls, recv, rcounts, rdispls);
        }
        let (rc, rd) = byte_layout(recv.datatype(), rcounts, rdispls);
        let (sb, sc, sd) = match send {
            Some(s) => {
                let (sc, sd) = byte_layout(s.datatype(), scounts, sdispls);
                (bytes(s)?.into_owned(), sc, sd)
            }
            None => (recv.to_packed()?, rc.clone(), rd.clone()),
        };
        let equal = |cs: &[usize], ds: &[usize]| {
            cs.iter().all(|&x| x == cs[0]) && ds.iter().enumerate().all(|(i, &d)| d == i * cs[0])
        };
        let regular = !rc.is_empty() && equal(&rc, &rd) && sc == rc && sd == rd;
        // Loaded so that bytes between blocks keep their values when unpacked.
        with_bytes(recv, true, |b| {
            self.run(c, |t| {
                if regular {
                    let n = rc[0] * rc.len();
                    coll::alltoall(t, &sb[..n], &mut b[..n])
                } else {
                    coll::alltoallv(t, &sb, &sc, &sd, b, &rc, &rd)
                }
            })
        })
    }
}
