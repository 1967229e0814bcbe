//! The raw tier: user memory described by (address, count, datatype), as MPI calls
//! receive it. Only this module dereferences user pointers; everything above moves bytes
//! through [`UserBuf`]'s safe methods, whose soundness rests on the contract of
//! [`UserBuf::new`].
#![allow(unsafe_code)] // user buffers arrive as raw pointers (C ABI, nonblocking requests)

use std::borrow::Cow;

use skifch::mem::copy_slice;

use crate::datatype::Datatype;
use crate::error::{Error, Result};

/// `len` zero bytes, or `MPI_ERR_NO_MEM` when the allocation fails (instead of the
/// process aborting: a message of a huge count must be an error the caller sees).
pub fn zeroed(len: usize) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| Error::NoMem(format!("{len} bytes for a packed copy")))?;
    v.resize(len, 0);
    Ok(v)
}

/// A user buffer: `count` elements of `dt` at `base`.
#[derive(Debug)]
pub struct UserBuf {
    base: *mut u8,
    count: usize,
    /// Borrowed for the predefined types (no reference count on the per-call path);
    /// `None`: plain bytes (`count` of them), the C ABI's contiguous buffers, whose
    /// length and run are known without asking a type map on the per-message path.
    dt: Option<Cow<'static, Datatype>>,
    /// Storage owned by the buffer itself (copies made by Bsend, the Rust API's owned
    /// requests); `base` points into it.
    owned: Option<Vec<u8>>,
}

// SAFETY: `UserBuf` is a pointer plus a contract (`new`): the memory stays valid while the
// buffer exists and is touched only by the thread that runs the engine owning the buffer
// (MPI calls are serialized by the engine's lock), never by two threads at once.
unsafe impl Send for UserBuf {}

impl UserBuf {
    /// Describes `count` elements of `dt` at `base`.
    ///
    /// # Safety
    /// Every byte the type map reaches (`for_each_piece` over `count` elements) is valid
    /// for reads — and for writes if the buffer is received into — until this `UserBuf` is
    /// dropped, and nothing else accesses those bytes meanwhile except through it (MPI's
    /// rule: the user does not touch a buffer of a pending request).
    pub unsafe fn new(base: *const u8, count: usize, dt: Datatype) -> Self {
        UserBuf {
            base: base as *mut u8,
            count,
            dt: Some(Cow::Owned(dt)),
            owned: None,
        }
    }

    /// As [`UserBuf::new`] with a type of the process-wide table
    /// ([`Datatype::basic_at`]).
    ///
    /// # Safety
    /// As [`UserBuf::new`].
    pub unsafe fn new_static(base: *const u8, count: usize, dt: &'static Datatype) -> Self {
        UserBuf {
            base: base as *mut u8,
            count,
            dt: Some(Cow::Borrowed(dt)),
            owned: None,
        }
    }

    /// `len` plain bytes at `base` (an `MPI_BYTE` array, or any contiguous run of a
    /// predefined type measured in bytes).
    ///
    /// # Safety
    /// As [`UserBuf::new`] for the `len` bytes at `base`.
    #[inline]
    pub unsafe fn bytes(base: *mut u8, len: usize) -> Self {
        UserBuf {
            base,
            count: len,
            dt: None,
            owned: None,
        }
    }

    /// The type map (`MPI_BYTE` for plain bytes).
    #[inline]
    fn ty(&self) -> &Datatype {
        match &self.dt {
            Some(d) => d,
            None => Datatype::basic_ref(crate::datatype::Basic::Byte),
        }
    }

    /// The bytes of a buffer of plain bytes (its one run).
    #[inline]
    fn plain(&self) -> &[u8] {
        if self.count == 0 {
            return &[];
        }
        // SAFETY: `bytes`'s (or `owned`'s) contract: `count` bytes at `base`, readable
        // while `self` lives; the slice borrows `self`.
        unsafe { std::slice::from_raw_parts(self.base, self.count) }
    }

    /// [`UserBuf::plain`], writable.
    #[inline]
    fn plain_mut(&mut self) -> &mut [u8] {
        if self.count == 0 {
            return &mut [];
        }
        // SAFETY: as `plain`, writable per `bytes`'s contract (or owned storage),
        // borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.base, self.count) }
    }

    /// A buffer owning its bytes (a packed `MPI_BYTE` array).
    pub fn owned(mut v: Vec<u8>) -> Self {
        let base = v.as_mut_ptr();
        UserBuf {
            base,
            count: v.len(),
            dt: None,
            owned: Some(v),
        }
    }

    /// Whether dropping it frees nothing (a predefined or no type, user memory).
    #[inline(always)]
    pub fn owns_nothing(&self) -> bool {
        matches!(self.dt, None | Some(Cow::Borrowed(_))) && self.owned.is_none()
    }

    /// Packed size in bytes (`count × size`).
    #[inline]
    pub fn packed_len(&self) -> usize {
        match &self.dt {
            Some(d) => self.count * d.size(),
            None => self.count,
        }
    }

    /// The bytes of a buffer made by [`UserBuf::owned`] (`None` for user memory).
    pub fn into_owned(self) -> Option<Vec<u8>> {
        self.owned
    }

    /// The element count.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The datatype.
    pub fn datatype(&self) -> &Datatype {
        self.ty()
    }

    /// The buffer as one slice when the type map is contiguous (zero-copy send).
    #[inline]
    pub fn as_contiguous(&self) -> Option<&[u8]> {
        let Some(dt) = &self.dt else {
            return Some(self.plain());
        };
        let (off, len) = dt.contiguous_span(self.count)?;
        if len == 0 {
            return Some(&[]);
        }
        // SAFETY: `new`'s contract: the `len` bytes at `base + off` (the whole type map)
        // are readable while `self` lives; the slice borrows `self`.
        Some(unsafe { std::slice::from_raw_parts(self.base.offset(off), len) })
    }

    /// The buffer as one mutable slice when the type map is contiguous.
    #[inline]
    pub fn as_contiguous_mut(&mut self) -> Option<&mut [u8]> {
        let Some(dt) = &self.dt else {
            return Some(self.plain_mut());
        };
        let (off, len) = dt.contiguous_span(self.count)?;
        if len == 0 {
            return Some(&mut []);
        }
        // SAFETY: as `as_contiguous`, writable per `new`'s contract (or owned storage),
        // borrowed mutably through `self`.
        Some(unsafe { std::slice::from_raw_parts_mut(self.base.offset(off), len) })
    }

    /// The memory of `count` elements as the C program lays them out, padding included
    /// (`count × extent` bytes) — how reductions see arrays of predefined types such as
    /// `MPI_DOUBLE_INT`. `None` for derived types that are not one dense run.
    pub fn dense_mut(&mut self) -> Option<&mut [u8]> {
        if self.ty().predefined().is_none() || self.dt.is_none() {
            return self.as_contiguous_mut();
        }
        let len = self.count * self.ty().extent() as usize;
        if len == 0 {
            return Some(&mut []);
        }
        // SAFETY: a predefined type's element is `extent` bytes of C object (padding
        // included), so `count` of them are `len` bytes at `base`, valid per `new`.
        Some(unsafe { std::slice::from_raw_parts_mut(self.base, len) })
    }

    /// Read-only [`UserBuf::dense_mut`].
    pub fn dense(&self) -> Option<&[u8]> {
        if self.ty().predefined().is_none() || self.dt.is_none() {
            return self.as_contiguous();
        }
        let len = self.count * self.ty().extent() as usize;
        if len == 0 {
            return Some(&[]);
        }
        // SAFETY: as `dense_mut`, readable.
        Some(unsafe { std::slice::from_raw_parts(self.base, len) })
    }

    /// The buffer as the C program lays it out, as `count × extent` bytes, when that
    /// differs from its packed form: the predefined pair types with padding
    /// (`MPI_DOUBLE_INT` is 16 bytes in memory and 12 packed), whose reduction kernels work
    /// on the C layout ([`UserBuf::dense`]). Other buffers are returned as they are.
    pub fn laid_out(self) -> UserBuf {
        let ext = self.ty().extent() as usize;
        if self.dt.is_none() || self.ty().predefined().is_none() || ext == self.ty().size() {
            return self;
        }
        // The same memory (`dense`'s `count × extent` bytes at `base`, valid per `new`'s
        // contract, or the owned storage, which moves along), described as bytes.
        UserBuf {
            base: self.base,
            count: self.count * ext,
            dt: None,
            owned: self.owned,
        }
    }

    /// A proto landing over the buffer when it is one run: rendezvous data is written
    /// there straight from the channel's receive memory.
    pub fn landing(&mut self) -> Option<skifch::proto::Landing> {
        let s = self.as_contiguous_mut()?;
        // `Landing::raw` needs the memory valid and unaliased until the transfer completes
        // or is dropped. It is this buffer's (valid while the `UserBuf` lives, `new`'s
        // contract), and the engine keeps the `UserBuf` in its receive request until the
        // transfer's completion; if the transfer is dropped early (a lost peer) the engine
        // is broken and the landing is never written again.
        // SAFETY: as just argued.
        Some(unsafe { skifch::proto::Landing::raw(s.as_mut_ptr(), s.len()) })
    }

    /// Copies packed bytes `[from, from + out.len())` of the buffer into `out` (pack).
    pub fn read_packed(&self, from: usize, out: &mut [u8]) {
        debug_assert!(from + out.len() <= self.packed_len());
        self.ty().for_each_piece(from, out.len(), |addr, pos, n| {
            let dst = &mut out[pos - from..pos - from + n];
            // SAFETY: `addr..addr + n` is inside the type map of `count` elements, readable
            // per `new`'s contract; `dst` is a distinct Rust buffer.
            unsafe { std::ptr::copy_nonoverlapping(self.base.offset(addr), dst.as_mut_ptr(), n) }
        });
    }

    /// The whole buffer packed into a vector (`MPI_ERR_NO_MEM` when it cannot be
    /// allocated: a huge count of a noncontiguous type).
    pub fn to_packed(&self) -> Result<Vec<u8>> {
        let mut v = zeroed(self.packed_len())?;
        self.read_packed(0, &mut v);
        Ok(v)
    }

    /// Writes the message segments `[a, b]` (as a received message gives them) as packed
    /// bytes from 0; what does not fit is dropped (the caller reports truncation).
    #[inline(always)]
    pub fn write_segments(&mut self, [a, b]: [&[u8]; 2]) {
        if b.is_empty() && self.dt.is_none() {
            // Plain bytes (the C ABI's contiguous receives), one segment: a copy in the
            // caller (the handler of an eager message), no call.
            let dst = self.plain_mut();
            let n = a.len().min(dst.len());
            copy_slice(dst, &a[..n]);
            return;
        }
        self.write_segments_typed([a, b]);
    }

    /// [`UserBuf::write_segments`] through the type map, or of a message in two segments.
    #[inline(never)]
    fn write_segments_typed(&mut self, [a, b]: [&[u8]; 2]) {
        if b.is_empty() {
            if let Some(dst) = self.as_contiguous_mut() {
                // The common small message: one run into one run.
                let n = a.len().min(dst.len());
                copy_slice(dst, &a[..n]);
                return;
            }
        }
        self.write_packed(0, a);
        self.write_packed(a.len(), b);
    }

    /// Writes `data` as packed bytes `[from, from + data.len())` of the buffer (unpack);
    /// bytes past the buffer's packed length are dropped (the caller reports truncation).
    pub fn write_packed(&mut self, from: usize, data: &[u8]) {
        let cap = self.packed_len();
        if from >= cap {
            return;
        }
        let data = &data[..data.len().min(cap - from)];
        if let Some(dst) = self.as_contiguous_mut() {
            // One run (the common case): a plain copy.
            copy_slice(&mut dst[from..], data);
            return;
        }
        self.ty().for_each_piece(from, data.len(), |addr, pos, n| {
            let src = &data[pos - from..pos - from + n];
            // SAFETY: `addr..addr + n` is inside the type map, writable per `new`'s
            // contract (a receive buffer); `src` is a distinct Rust buffer (message
            // memory or a copy), so the ranges do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.base.offset(addr), n) }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::{Basic, Datatype};

    #[test]
    fn pack_and_unpack_a_vector_round_trip() {
        let int = Datatype::basic(Basic::Int);
        let v = Datatype::vector(3, 1, 2, &int).unwrap().commit();
        let src: Vec<i32> = (0..6).collect();
        // SAFETY: `src` holds the 6 ints the type map reaches and outlives `b`.
        let b = unsafe { UserBuf::new(src.as_ptr().cast(), 1, v.clone()) };
        let packed = b.to_packed().unwrap();
        let vals: Vec<i32> = packed
            .chunks(4)
            .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(vals, [0, 2, 4]);
        let mut dst = vec![-1i32; 6];
        // SAFETY: as above, `dst` is writable and outlives `d`.
        let mut d = unsafe { UserBuf::new(dst.as_mut_ptr().cast(), 1, v) };
        d.write_packed(0, &packed[..5]);
        d.write_packed(5, &packed[5..]);
        drop(d);
        assert_eq!(dst, [0, -1, 2, -1, 4, -1]);
    }
}
