//! Memory copies, written once for the whole stack: the lanes' send copy, proto's
//! landings, mpi-lite's direct receive, skifshmem's puts and gets.
//!
//! * [`copy_mem`] — `memmove` for data copies of any size, steering clear of glibc's slow
//!   `rep movsb` case;
//! * [`copy_small`] / [`copy_slice`] — no call for the short lengths of message-rate
//!   traffic (two overlapping word moves up to 16 bytes);
//! * [`copy_move`] — `memmove` semantics (ranges may overlap) with no call for 4–16 bytes:
//!   the direct put and get of [`crate::rma::MappedWindow`];
//! * [`copy_put`] — a leaf copy for small puts (16-byte chunks, no call at all).
#![allow(unsafe_code)] // raw copies between ranges the callers vouch for

/// Bytes per `memcpy` call of [`copy_mem`]'s split copies: below glibc's `rep movsb`
/// threshold.
const COPY_CHUNK: usize = 2048;
/// From this size on glibc's `memmove` no longer uses `rep movsb` (measured: 384 KiB slow,
/// 512 KiB fast).
const COPY_SPLIT_MAX: usize = 512 << 10;

/// `memmove` for data copies of any size (the lanes' send copy, proto's landings, skifshmem's
/// puts and gets). glibc 2.36's `memmove` copies a few KiB and more with `rep
/// movsb`, which on this machine's AMD EPYC runs at ~2 GB/s instead of ~30 GB/s when the
/// destination lies 1–31 bytes past the source modulo 4096 (64 KiB copies, every offset
/// measured; from `COPY_SPLIT_MAX`, 512 KiB, on glibc takes another path and is fast again). A `get` into a
/// `malloc` buffer (16 bytes into its page) from a page-aligned symmetric buffer is exactly
/// that case. Such copies (skews up to a cache line, 1–63, are treated alike), when the
/// ranges do not overlap, go as `COPY_CHUNK`-byte `memcpy` calls, which glibc does with
/// vector loops at full speed (~29 GB/s measured). Short copies: [`copy_small`].
///
/// # Safety
/// As [`std::ptr::copy`].
#[inline(always)]
pub unsafe fn copy_mem(src: *const u8, dst: *mut u8, n: usize) {
    let skew = (dst as usize).wrapping_sub(src as usize) & 4095;
    if n > COPY_CHUNK && n < COPY_SPLIT_MAX && skew > 0 && skew < 64 {
        // SAFETY: forwards the caller's contract.
        unsafe { copy_split(src, dst, n) }
    } else {
        // SAFETY: forwards the caller's contract.
        unsafe { std::ptr::copy(src, dst, n) }
    }
}

/// A copy between non-overlapping ranges that makes no call for the short lengths of
/// message-rate traffic (a `memcpy` call costs about as much as the rest of a send): two
/// overlapping word moves up to 16 bytes, [`copy_mem`] above. The one small-copy routine of
/// the stack (lane sends, the fabric driver's records, skifshmem's aggregated puts,
/// mpi-lite's direct receive).
///
/// # Safety
/// As [`std::ptr::copy_nonoverlapping`].
#[inline(always)]
pub unsafe fn copy_small(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: (every arm) each access lies within the first `n` bytes of the caller's
    // ranges; unaligned accesses are explicit.
    unsafe {
        if (8..=16).contains(&n) {
            let a = src.cast::<u64>().read_unaligned();
            let b = src.add(n - 8).cast::<u64>().read_unaligned();
            dst.cast::<u64>().write_unaligned(a);
            dst.add(n - 8).cast::<u64>().write_unaligned(b);
        } else if (4..8).contains(&n) {
            let a = src.cast::<u32>().read_unaligned();
            let b = src.add(n - 4).cast::<u32>().read_unaligned();
            dst.cast::<u32>().write_unaligned(a);
            dst.add(n - 4).cast::<u32>().write_unaligned(b);
        } else if n < 4 {
            for i in 0..n {
                *dst.add(i) = *src.add(i);
            }
        } else {
            copy_mem(src, dst, n);
        }
    }
}

/// `memmove` (the ranges may overlap: a rank may put to itself from an overlapping buffer)
/// without a call for 4 to 16 bytes — [`copy_small`] loads both words before storing
/// either, so overlap is harmless there — and [`copy_mem`] otherwise. The copy of
/// [`crate::rma::MappedWindow`]'s direct put and get.
///
/// # Safety
/// As [`std::ptr::copy`].
#[inline(always)]
pub unsafe fn copy_move(src: *const u8, dst: *mut u8, n: usize) {
    if n.wrapping_sub(4) <= 12 {
        // SAFETY: 4..=16 bytes within the caller's ranges; overlap-safe as said above.
        unsafe { copy_small(src, dst, n) }
    } else {
        // SAFETY: forwards the caller's contract.
        unsafe { copy_mem(src, dst, n) }
    }
}

/// [`copy_small`] between slices: copies `src` into the start of `dst`.
///
/// # Panics
/// If `dst` is shorter than `src` (a caller's bug, as for `copy_from_slice`).
#[inline(always)]
pub fn copy_slice(dst: &mut [u8], src: &[u8]) {
    assert!(dst.len() >= src.len(), "copy_slice: destination too short");
    // SAFETY: `src` is readable and `dst` writable for `src.len()` bytes (checked above);
    // a `&mut` and a `&` slice never overlap.
    unsafe { copy_small(src.as_ptr(), dst.as_mut_ptr(), src.len()) }
}

/// [`copy_mem`]'s split copy (overlapping ranges: one `memmove`).
///
/// # Safety
/// As [`std::ptr::copy`].
#[inline(never)]
unsafe fn copy_split(src: *const u8, dst: *mut u8, n: usize) {
    let (s, d) = (src as usize, dst as usize);
    if s < d + n && d < s + n {
        // SAFETY: forwards the caller's contract.
        return unsafe { std::ptr::copy(src, dst, n) };
    }
    let mut o = 0;
    while o < n {
        let k = COPY_CHUNK.min(n - o);
        // SAFETY: `o + k <= n` within the caller's ranges, which do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(src.add(o), dst.add(o), k) };
        o += k;
    }
}

/// Copies `n` bytes between non-overlapping ranges without any call (a small put's copy,
/// for `n` up to a few KiB; keeps the put path a leaf): 16-byte chunks and an overlapping last chunk;
/// up to 16 bytes, [`copy_small`].
///
/// # Safety
/// `src..src + n` readable, `dst..dst + n` writable, not overlapping.
#[inline(always)]
pub unsafe fn copy_put(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: (both arms) the caller's ranges; each access lies within the first `n` bytes.
    unsafe {
        if n <= 16 {
            return copy_small(src, dst, n);
        }
        let mut i = 0;
        while i + 16 < n {
            let v = src.add(i).cast::<u128>().read_unaligned();
            dst.add(i).cast::<u128>().write_unaligned(v);
            i += 16;
        }
        let v = src.add(n - 16).cast::<u128>().read_unaligned();
        dst.add(n - 16).cast::<u128>().write_unaligned(v);
    }
}
