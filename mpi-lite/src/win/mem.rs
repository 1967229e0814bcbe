//! The raw tier of windows: where a target's bytes are and how they are reached. Memory a
//! peer can write is never a Rust reference here: mapped segments are reached by raw
//! copies ([`skifch::mem::copy_move`]) and CPU atomics, memory of another process that is
//! not mapped (a `MPI_Win_create` window over the program's own memory) by the kernel's
//! cross-memory copies (`process_vm_readv`/`writev`), and the lock words in every rank's
//! control page by atomics.
#![allow(unsafe_code)] // raw access to memory shared with other processes

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use skifch::mem::copy_move;

use crate::error::{Error, Result};

/// Where one rank's window memory is, seen from this process.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reach {
    /// Mapped here (this rank's own memory, or a peer's segment mapped by the driver's RMA
    /// provider): `len` bytes at `base`.
    Mapped { base: *mut u8, len: usize },
    /// In process `pid` at address `base` (`len` bytes), reached by cross-memory copies.
    Remote { pid: i32, base: usize, len: usize },
    /// Reached only by messages to its process (the message path): `len` bytes, for the
    /// origin's range checks.
    Elsewhere { len: usize },
}

// SAFETY: a `Reach` is an address plus the window's contract (the window keeps the mapping
// alive; every access is a raw copy or an atomic).
unsafe impl Send for Reach {}
// SAFETY: as for Send.
unsafe impl Sync for Reach {}

fn range_err(off: usize, n: usize, len: usize) -> Error {
    Error::Code {
        code: crate::error::class::RMA_RANGE,
        msg: format!(
            "MPI_ERR_RMA_RANGE: {n} bytes at byte {off} of the target window, which has {len} bytes"
        ),
    }
}

fn elsewhere() -> Error {
    Error::Intern("a window of the message path accessed directly".into())
}

fn os_err(what: &str) -> Error {
    Error::Other(format!(
        "{what} of a peer's window memory failed: {}",
        std::io::Error::last_os_error()
    ))
}

impl Reach {
    /// Bytes reachable.
    pub(crate) fn len(&self) -> usize {
        match *self {
            Reach::Mapped { len, .. } | Reach::Remote { len, .. } | Reach::Elsewhere { len } => len,
        }
    }

    /// `Ok` when `off..off+n` lies inside, else `MPI_ERR_RMA_RANGE`.
    pub(crate) fn check(&self, off: usize, n: usize) -> Result<()> {
        let len = self.len();
        if off <= len && n <= len - off {
            Ok(())
        } else {
            Err(range_err(off, n, len))
        }
    }

    /// The address of byte `off` when mapped here and `off..off+n` is inside.
    #[inline(always)]
    pub(crate) fn mapped(&self, off: usize, n: usize) -> Option<*mut u8> {
        match *self {
            Reach::Mapped { base, len } if off <= len && n <= len - off => {
                Some(base.wrapping_add(off))
            }
            _ => None,
        }
    }

    /// Copies `src` to byte `off`.
    pub(crate) fn write(&self, off: usize, src: &[u8]) -> Result<()> {
        self.check(off, src.len())?;
        if src.is_empty() {
            return Ok(());
        }
        match *self {
            Reach::Mapped { base, .. } => {
                // SAFETY: checked inside the mapping the window keeps alive; raw copy.
                unsafe { copy_move(src.as_ptr(), base.add(off), src.len()) };
                Ok(())
            }
            Reach::Remote { pid, base, .. } => {
                cma(pid, base + off, src.as_ptr() as *mut u8, src.len(), true)
            }
            Reach::Elsewhere { .. } => Err(elsewhere()),
        }
    }

    /// Copies `dst.len()` bytes from byte `off` into `dst`.
    pub(crate) fn read(&self, off: usize, dst: &mut [u8]) -> Result<()> {
        self.check(off, dst.len())?;
        if dst.is_empty() {
            return Ok(());
        }
        match *self {
            Reach::Mapped { base, .. } => {
                // SAFETY: as in `write`, the other way.
                unsafe { copy_move(base.add(off), dst.as_mut_ptr(), dst.len()) };
                Ok(())
            }
            Reach::Remote { pid, base, .. } => {
                cma(pid, base + off, dst.as_mut_ptr(), dst.len(), false)
            }
            Reach::Elsewhere { .. } => Err(elsewhere()),
        }
    }

    /// Atomically replaces the `w`-byte (4 or 8) element at `off` (mapped, aligned: see
    /// [`Reach::atomic_ok`]) by `f(old)`, returning the old bytes (little-endian in a u64).
    pub(crate) fn rmw(&self, off: usize, w: usize, mut f: impl FnMut(u64) -> u64) -> u64 {
        let p = self.mapped(off, w).expect("checked by atomic_ok");
        const O: Ordering = Ordering::SeqCst;
        if w == 8 {
            // SAFETY: `atomic_ok`: inside the mapping, 8-byte aligned, only accessed
            // atomically or by raw copies.
            let a = unsafe { AtomicU64::from_ptr(p.cast()) };
            let mut old = a.load(O);
            loop {
                match a.compare_exchange_weak(old, f(old), O, O) {
                    Ok(v) => return v,
                    Err(v) => old = v,
                }
            }
        } else {
            // SAFETY: as above, 4 bytes.
            let a = unsafe { AtomicU32::from_ptr(p.cast()) };
            let mut old = a.load(O);
            loop {
                match a.compare_exchange_weak(old, f(u64::from(old)) as u32, O, O) {
                    Ok(v) => return u64::from(v),
                    Err(v) => old = v,
                }
            }
        }
    }

    /// Whether `off..off+w` can be updated with [`Reach::rmw`]: mapped, `w` 4 or 8, aligned.
    pub(crate) fn atomic_ok(&self, off: usize, w: usize) -> bool {
        (w == 4 || w == 8)
            && self
                .mapped(off, w)
                .is_some_and(|p| (p as usize).is_multiple_of(w))
    }
}

/// One cross-memory copy of `n` bytes between `local` and `remote` in process `pid`.
fn cma(pid: i32, remote: usize, local: *mut u8, n: usize, write: bool) -> Result<()> {
    let mut done = 0usize;
    while done < n {
        let l = libc::iovec {
            iov_base: local.wrapping_add(done).cast(),
            iov_len: n - done,
        };
        let r = libc::iovec {
            iov_base: (remote + done) as *mut libc::c_void,
            iov_len: n - done,
        };
        // SAFETY: `local..local+n` is this process's buffer, valid for the direction
        // (the caller's slice); the kernel checks the remote range in `pid`.
        let got = unsafe {
            if write {
                libc::process_vm_writev(pid, &l, 1, &r, 1, 0)
            } else {
                libc::process_vm_readv(pid, &l, 1, &r, 1, 0)
            }
        };
        if got <= 0 {
            return Err(os_err(if write { "a write" } else { "a read" }));
        }
        done += got as usize;
    }
    Ok(())
}

/// The atomic words of one rank's control page (mapped in every member's process).
pub(crate) struct Ctl(pub(crate) *mut u8);

// SAFETY: the address of a mapping the window keeps alive, accessed only atomically.
unsafe impl Send for Ctl {}
// SAFETY: as for Send.
unsafe impl Sync for Ctl {}

/// Byte offsets of the words in a control page.
pub(crate) const CTL_LOCK: usize = 0;
/// The accumulate lock (a separate cache line).
pub(crate) const CTL_ACC: usize = 64;
/// Bytes of the control page in front of an allocated window's memory.
pub(crate) const CTL_BYTES: usize = 4096;

impl Ctl {
    /// The passive-target lock word.
    pub(crate) fn lock(&self) -> &AtomicU64 {
        // SAFETY: the control page is mapped (window contract), 4096-byte aligned, and its
        // words are only ever accessed atomically.
        unsafe { AtomicU64::from_ptr(self.0.add(CTL_LOCK).cast()) }
    }
    /// The accumulate lock word.
    pub(crate) fn acc(&self) -> &AtomicU32 {
        // SAFETY: as in `lock`.
        unsafe { AtomicU32::from_ptr(self.0.add(CTL_ACC).cast()) }
    }
}

/// Window memory the library allocates itself on the message path (`MPI_Win_allocate`
/// without an RMA provider): zeroed, page-aligned, freed with the window.
pub(crate) struct Owned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

// SAFETY: owned memory, reached through raw pointers only (by the program and the
// serving handlers).
unsafe impl Send for Owned {}
// SAFETY: as for Send.
unsafe impl Sync for Owned {}

impl Owned {
    /// `len` zeroed bytes (at least one page is reserved, so the address is never null).
    pub(crate) fn new(len: usize) -> Result<Owned> {
        let layout = std::alloc::Layout::from_size_align(len.max(1), 4096)
            .map_err(|_| Error::NoMem(format!("{len} bytes of window memory")))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::NoMem(format!("{len} bytes of window memory")));
        }
        Ok(Owned { ptr, layout })
    }
    /// The address.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// The direct path's view of one member's memory ([`super::direct`]): its address here and
/// how many bytes from it a copy (`copy_len`) and an atomic (`atomic_len`) may reach — 0 on
/// the message path, where it is not mapped here and (atomics) on a window without them, so
/// one range check covers the path, the mapping and the flavour.
#[derive(Default)]
pub(crate) struct Direct {
    at: usize,
    copy_len: usize,
    atomic_len: usize,
}

impl Direct {
    /// The view of `reach` (`usable`: the window takes the direct path; `atomics`: its
    /// accumulates are CPU atomics).
    pub(crate) fn new(reach: &Reach, usable: bool, atomics: bool) -> Direct {
        match *reach {
            Reach::Mapped { base, len } if usable => Direct {
                at: base as usize,
                copy_len: len,
                atomic_len: if atomics { len } else { 0 },
            },
            _ => Direct::default(),
        }
    }

    /// The address of `n` bytes at `off` inside `len` (`None`: not, or nothing mapped).
    #[inline(always)]
    fn span(&self, off: usize, n: usize, len: usize) -> Option<usize> {
        (off < len && n <= len - off).then_some(self.at + off)
    }

    /// Copies `src` to byte `off`.
    #[inline(always)]
    pub(crate) fn put(&self, off: usize, src: &[u8]) -> Option<()> {
        let p = self.span(off, src.len(), self.copy_len)?;
        // SAFETY: `span` checked `off..off+len` inside the mapping the window keeps alive
        // (non-null: `copy_len` is 0 when nothing is mapped); a raw copy (the memory is
        // shared with other processes).
        unsafe { copy_move(src.as_ptr(), p as *mut u8, src.len()) };
        Some(())
    }

    /// Copies `dst.len()` bytes from byte `off` into `dst`.
    #[inline(always)]
    pub(crate) fn get(&self, off: usize, dst: &mut [u8]) -> Option<()> {
        let p = self.span(off, dst.len(), self.copy_len)?;
        // SAFETY: as in `put`, the other way.
        unsafe { copy_move(p as *const u8, dst.as_mut_ptr(), dst.len()) };
        Some(())
    }

    /// The `n` aligned words of `W` (4 or 8 bytes) from byte `off`, for CPU atomics.
    #[inline(always)]
    pub(crate) fn words<W: Word>(&self, off: usize, n: usize) -> Option<&[W]> {
        let p = self.span(
            off,
            n.checked_mul(std::mem::size_of::<W>())?,
            self.atomic_len,
        )?;
        if !p.is_multiple_of(std::mem::align_of::<W>()) {
            return None;
        }
        // SAFETY: as in `word`, `n` of them.
        Some(unsafe { std::slice::from_raw_parts(p as *const W, n) })
    }

    /// The aligned word of `W` (4 or 8 bytes) at byte `off`, for a CPU atomic.
    #[inline(always)]
    pub(crate) fn word<W: Word>(&self, off: usize) -> Option<&W> {
        let p = self.span(off, std::mem::size_of::<W>(), self.atomic_len)?;
        if !p.is_multiple_of(std::mem::align_of::<W>()) {
            return None;
        }
        // SAFETY: an aligned word inside the mapping the window keeps alive (as long as
        // `self`, which the window owns, is borrowed); only accessed atomically or by raw
        // copies, never through a plain reference.
        Some(unsafe { &*(p as *const W) })
    }
}

/// The atomic words [`Reach::words`] hands out.
pub(crate) trait Word: Sized {}
impl Word for AtomicU32 {}
impl Word for AtomicU64 {}

/// A full memory barrier for the direct path (a flush's, or the next load's after a flush:
/// `direct.rs`; every earlier load and store of this
/// thread, the copies into mapped segments included, is globally visible before any later
/// one). On x86-64 a locked read-modify-write is one (Intel SDM vol. 3A §9.2.2: loads and
/// stores are not reordered with locked instructions; glibc's non-temporal copies end in
/// their own `sfence`), and one on a word of this thread's stack costs a quarter of
/// `mfence` on the machine measured (5 vs 20 ns, AMD EPYC; 9.8 vs 55 ns back to back on
/// today's family-26 CPU); elsewhere `fence(SeqCst)`.
#[inline(always)]
pub(crate) fn full_barrier() {
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: adds 0 to the word at the stack pointer (this thread's own stack, always
    // mapped and writable; its value is unchanged); no memory is otherwise touched.
    unsafe {
        std::arch::asm!("lock or dword ptr [rsp], 0", options(nostack));
    }
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(Ordering::SeqCst);
}
