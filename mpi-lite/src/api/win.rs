//! One-sided communication in the Rust API: a typed [`Window`] of `T` elements over a
//! [`Comm`], whose operations take slices (the C ABI's `MPI_Win_*` calls run the same
//! [`crate::win::Win`]).
//!
//! ```
//! use mpi_lite::api::{Comm, Window};
//! use mpi_lite::win::AccOp;
//! use skifch::coll::Op;
//! let out = skifch::local::run(2, |job| {
//!     let mpi = mpi_lite::Mpi::new(&job).map_err(|e| skifch::Error::Bootstrap(e.to_string().into()))?;
//!     let world = Comm::world(&mpi);
//!     let (me, other) = (world.rank() as i32, 1 - world.rank() as i32);
//!     let w = Window::<_, i64>::allocate(&world, 4, job.rma()).unwrap();
//!     w.fence().unwrap();
//!     w.put(&[10 + me as i64], other, 1).unwrap();  // into the other's element 1
//!     w.fence().unwrap();
//!     let got = w.local(1);
//!     w.lock_all().unwrap();
//!     let old = w.fetch_and_op(1, 0, 0, AccOp::Op(Op::Sum)).unwrap(); // a counter on rank 0
//!     w.unlock_all().unwrap();
//!     w.fence().unwrap();
//!     let count = if me == 0 { w.local(0) } else { -1 };
//!     w.free().unwrap();
//!     mpi.finalize().unwrap();
//!     Ok((got, old, count))
//! }).unwrap();
//! assert_eq!((out[0].0, out[1].0), (11, 10));
//! assert_eq!(out[0].2, 2);
//! ```
#![allow(unsafe_code)] // slices lent to the window as user buffers

use std::marker::PhantomData;
use std::sync::Arc;

use skifch::rma::Rma;
use skifch::Port;

use super::{slice_buf, Comm};
use crate::comm::Mpi;
use crate::datatype::{Datatype, Equivalence};
use crate::error::{Error, Result};
use crate::win::{AccOp, Flavor, LockType, Target, Win};

/// A window of `len` elements of `T` on every member of a communicator (MPI-3.1
/// chapter 11), displacements counted in elements.
pub struct Window<'m, P: Port, T: Equivalence> {
    mpi: &'m Mpi<P>,
    win: Win,
    len: usize,
    _t: PhantomData<T>,
}

impl<'m, P: Port, T: Equivalence> Window<'m, P, T> {
    /// `MPI_Win_allocate` of `len` elements of `T` on each member of `comm`; `rma` is the
    /// job's RMA capability (`job.rma()`: the direct path when it maps peers' memory, the
    /// message path otherwise).
    ///
    /// # Collective Operation
    /// Every member calls it; it returns once every member's memory is reachable.
    pub fn allocate(comm: &Comm<'m, P>, len: usize, rma: Option<Arc<dyn Rma>>) -> Result<Self> {
        let size = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::NoMem(format!("a window of {len} elements")))?;
        let unit = std::mem::size_of::<T>();
        let win = Win::create(
            comm.mpi,
            &comm.data,
            rma,
            Flavor::Allocate,
            0,
            size,
            unit,
            "Window::allocate",
        )?;
        Ok(Window {
            mpi: comm.mpi,
            win,
            len,
            _t: PhantomData,
        })
    }

    /// The accumulate family's short cut ([`Win::direct_update`]): `false`, not done (the
    /// general path checks and reports).
    fn direct_update(
        &self,
        rank: i32,
        disp: usize,
        op: AccOp,
        src: Option<&[u8]>,
        cmp: Option<&[u8]>,
        old: Option<&mut [u8]>,
    ) -> bool {
        let d = disp as isize;
        self.win.direct_update(rank, d, T::BASIC, op, src, cmp, old)
    }

    fn target(&self, rank: i32, disp: usize, count: usize) -> Target<'static> {
        Target {
            rank,
            disp: disp as isize,
            count,
            dt: Datatype::basic_ref(T::BASIC),
        }
    }

    /// `MPI_Put` of `data` to `rank`'s elements `disp..`.
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside an epoch (fence, lock, lock_all); complete at the
    /// origin when it returns, at the target by the epoch's end or a flush.
    pub fn put(&self, data: &[T], rank: i32, disp: usize) -> Result<()> {
        if self
            .win
            .direct_put(rank, disp as isize, super::bytes_of(data))
        {
            return Ok(());
        }
        // SAFETY: `data` outlives the call (the buffer is dropped before returning).
        let b = unsafe { slice_buf(data) };
        self.win
            .put(self.mpi, &b, self.target(rank, disp, data.len()))
    }

    /// `MPI_Get` of `rank`'s elements `disp..disp + out.len()` into `out`.
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside an epoch; `out` holds the data when it returns.
    pub fn get(&self, out: &mut [T], rank: i32, disp: usize) -> Result<()> {
        if self
            .win
            .direct_get(rank, disp as isize, super::bytes_of_mut(out))
        {
            return Ok(());
        }
        let n = out.len();
        let dt = Datatype::basic_ref(T::BASIC);
        // SAFETY: `out` is borrowed mutably for the call (the pointer comes from that
        // borrow); every byte pattern is a valid `T`.
        let mut b = unsafe { crate::mem::UserBuf::new_static(out.as_mut_ptr().cast(), n, dt) };
        self.win.get(self.mpi, &mut b, self.target(rank, disp, n))
    }

    /// `MPI_Accumulate`: `rank`'s elements `disp..` become `data op` them, atomically per
    /// element.
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside an epoch.
    pub fn accumulate(&self, data: &[T], rank: i32, disp: usize, op: AccOp) -> Result<()> {
        let src = Some(super::bytes_of(data));
        if self.direct_update(rank, disp, op, src, None, None) {
            return Ok(());
        }
        // SAFETY: as in `put`.
        let b = unsafe { slice_buf(data) };
        self.win
            .accumulate(self.mpi, &b, self.target(rank, disp, data.len()), op)
    }

    /// `MPI_Fetch_and_op`: returns `rank`'s element `disp` and makes it `value op` it.
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside an epoch; atomic; complete when it returns.
    pub fn fetch_and_op(&self, value: T, rank: i32, disp: usize, op: AccOp) -> Result<T> {
        let src = [value];
        let mut old = T::default();
        let x = (op != AccOp::NoOp).then(|| super::bytes_of(&src));
        let o = Some(super::bytes_of_mut(std::slice::from_mut(&mut old)));
        if self.direct_update(rank, disp, op, x, None, o) {
            return Ok(old);
        }
        let dt = Datatype::basic_ref(T::BASIC);
        // SAFETY: `src` and `old` live through the call; `old`'s pointer comes from its
        // mutable borrow, and every byte pattern is a valid `T`.
        let (s, mut r) = unsafe {
            (
                slice_buf(&src),
                crate::mem::UserBuf::new_static((&mut old as *mut T).cast(), 1, dt),
            )
        };
        let name = "Window::fetch_and_op";
        self.win.get_accumulate(
            self.mpi,
            Some(&s),
            &mut r,
            self.target(rank, disp, 1),
            op,
            name,
        )?;
        drop(r);
        Ok(old)
    }

    /// `MPI_Compare_and_swap`: `rank`'s element `disp` becomes `new` if it equals
    /// `expected`; returns its old value.
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside an epoch; atomic; complete when it returns.
    pub fn compare_and_swap(&self, new: T, expected: T, rank: i32, disp: usize) -> Result<T> {
        let mut old = T::default();
        let (new, expected) = ([new], [expected]);
        let (x, c) = (super::bytes_of(&new), super::bytes_of(&expected));
        let o = Some(super::bytes_of_mut(std::slice::from_mut(&mut old)));
        if self.direct_update(rank, disp, AccOp::Replace, Some(x), Some(c), o) {
            return Ok(old);
        }
        let dt = Datatype::basic_ref(T::BASIC);
        self.win.compare_and_swap(
            self.mpi,
            x,
            c,
            super::bytes_of_mut(std::slice::from_mut(&mut old)),
            dt,
            rank,
            disp as isize,
        )?;
        Ok(old)
    }

    /// Element `i` of this process's own window memory (read with a raw copy: peers may
    /// write it; the program's synchronisation says when the value is meaningful).
    /// Panics if `i` is out of range.
    pub fn local(&self, i: usize) -> T {
        assert!(i < self.len, "element {i} of a window of {}", self.len);
        let p = (self.win.base() as *const T).wrapping_add(i);
        // SAFETY: `p` is element `i` of this process's window memory, which the window
        // keeps mapped; read by value, never referenced.
        unsafe { std::ptr::read_volatile(p) }
    }

    /// `MPI_Win_fence`.
    ///
    /// # One-sided Operation
    /// Every member calls it; it returns once all have, every operation complete.
    pub fn fence(&self) -> Result<()> {
        self.win.fence(self.mpi, 0)
    }
    /// `MPI_Win_lock` of `rank`.
    ///
    /// # One-sided Operation
    /// Only the origin calls it; returns once the lock is held.
    pub fn lock(&self, t: LockType, rank: i32) -> Result<()> {
        self.win.lock(self.mpi, t, rank, 0)
    }
    /// `MPI_Win_unlock` of `rank`.
    ///
    /// # One-sided Operation
    /// Only the origin calls it; every operation to `rank` is complete when it returns.
    pub fn unlock(&self, rank: i32) -> Result<()> {
        self.win.unlock(self.mpi, rank)
    }
    /// `MPI_Win_lock_all`.
    ///
    /// # One-sided Operation
    /// Only the origin calls it.
    pub fn lock_all(&self) -> Result<()> {
        self.win.lock_all(self.mpi, 0)
    }
    /// `MPI_Win_unlock_all`.
    ///
    /// # One-sided Operation
    /// Only the origin calls it; every operation is complete when it returns.
    pub fn unlock_all(&self) -> Result<()> {
        self.win.unlock_all(self.mpi)
    }
    /// `MPI_Win_flush` of `rank`.
    ///
    /// # One-sided Operation
    /// Only the origin calls it, inside a passive-target epoch.
    pub fn flush(&self, rank: i32) -> Result<()> {
        if self.win.direct_flush(Some(rank), false) {
            return Ok(());
        }
        self.win.flush(self.mpi, Some(rank), "Window::flush")
    }
    /// The underlying window (attributes, PSCW, the rest of the calls).
    pub fn raw(&self) -> &Win {
        &self.win
    }
    /// `MPI_Win_free`.
    ///
    /// # Collective Operation
    /// Every member calls it.
    pub fn free(self) -> Result<()> {
        self.win.free(self.mpi)
    }
}
