//! Where the data of a long transfer or a reply lands: an owned buffer, or caller memory
//! named by a raw pointer (GASNet "long": the receiver writes each chunk straight from the
//! channel's receive memory into its final place, no intermediate copy).
#![allow(unsafe_code)] // the one place where proto writes through a caller's raw pointer

use std::ptr::NonNull;

/// A destination for received bytes. Writes past its length are dropped and reported as
/// truncation ([`Landing::truncated`]), never written.
pub struct Landing {
    ptr: NonNull<u8>,
    len: usize,
    owned: Option<Vec<u8>>,
    truncated: bool,
}

// SAFETY: a raw landing's creator promised (see `Landing::raw`) that the memory stays valid
// and unaliased until the landing is finished, whichever thread finishes it; an owned one
// is a `Vec`.
unsafe impl Send for Landing {}

impl Landing {
    /// An owned, zeroed buffer of `len` bytes (get it back with [`Landing::into_vec`]).
    pub fn vec(len: usize) -> Landing {
        let mut v = vec![0u8; len];
        Landing {
            ptr: NonNull::new(v.as_mut_ptr()).unwrap_or(NonNull::dangling()),
            len,
            owned: Some(v),
            truncated: false,
        }
    }

    /// Nowhere: every byte is dropped (and counted as truncation if any arrives).
    pub fn discard() -> Landing {
        Landing {
            ptr: NonNull::dangling(),
            len: 0,
            owned: None,
            truncated: false,
        }
    }

    /// Caller memory.
    ///
    /// # Safety
    /// `ptr..ptr+len` is valid for writes, and nothing else reads or writes it, from now
    /// until the transfer that lands here completes or is cancelled (the endpoint drops
    /// the landing then); for a request: until [`super::Endpoint::wait`] / `test` returns
    /// its reply, or [`super::Endpoint::cancel`] returns.
    pub unsafe fn raw(ptr: *mut u8, len: usize) -> Landing {
        Landing {
            ptr: NonNull::new(ptr).unwrap_or(NonNull::dangling()),
            len: if ptr.is_null() { 0 } else { len },
            owned: None,
            truncated: false,
        }
    }

    /// `out` for the duration of a call that waits for or cancels the transfer before it
    /// returns (crate-internal: the borrow checker cannot see that promise).
    pub(crate) fn scoped(out: &mut [u8]) -> Landing {
        // SAFETY: the callers (`Endpoint::call`, the collective layer) complete or cancel
        // the request before the borrow of `out` ends, so nothing writes to it afterwards.
        unsafe { Landing::raw(out.as_mut_ptr(), out.len()) }
    }

    /// Where it writes (to recognise a caller's buffer).
    pub(crate) fn ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// Capacity in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether bytes were dropped because they did not fit.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// The owned buffer, if this landing owns one.
    pub fn into_vec(self) -> Option<Vec<u8>> {
        self.owned
    }

    /// Copies the segments, one after the other, from offset `off`.
    pub(crate) fn write_segs(&mut self, mut off: usize, segs: [&[u8]; 2]) {
        for s in segs {
            self.write(off, s);
            off += s.len();
        }
    }

    /// Copies `src` to offset `off`; what does not fit is dropped and marks truncation.
    pub(crate) fn write(&mut self, off: usize, src: &[u8]) {
        let room = self.len.saturating_sub(off);
        let n = src.len().min(room);
        if n < src.len() {
            self.truncated = true;
        }
        if n == 0 {
            return;
        }
        // SAFETY: `off + n <= len`, and the memory is writable and unaliased (owned `Vec`
        // behind `ptr`, or `raw`'s contract); `src` is channel receive memory or a caller
        // slice, never inside the landing.
        unsafe { crate::mem::copy_mem(src.as_ptr(), self.ptr.as_ptr().add(off), n) }
    }
}

impl std::fmt::Debug for Landing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Landing")
            .field("len", &self.len)
            .field("owned", &self.owned.is_some())
            .field("truncated", &self.truncated)
            .finish()
    }
}
