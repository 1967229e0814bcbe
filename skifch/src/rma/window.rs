//! [`expose`] and the one implementation of direct access: [`MappedWindow`] (every
//! segment mapped in this process), its inlined accessors and [`Window`] on top.
#![allow(unsafe_code)] // raw access to memory shared with other processes or threads

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use super::{Amo, Exchange, PeerMapping, RemoteSegment, Rma, Segment};
use crate::mem::copy_move;
use crate::{Error, Result};

/// Collective: every rank exposes `seg` (the calls of all ranks pair up in order); returns
/// the window of all ranks' segments. `exchange` is an all-gather among all ranks.
///
/// # Collective Operation
/// Every rank calls it with its segment; it returns once this rank has opened every
/// peer's segment (not necessarily once the peers have opened this one: a library
/// synchronizes before its first remote access).
pub fn expose(rma: &dyn Rma, seg: Segment, exchange: &mut Exchange<'_>) -> Result<MappedWindow> {
    let all: Vec<u32> = (0..rma.size()).collect();
    expose_among(rma, seg, &all, exchange)
}

/// As [`expose`] among the job ranks `members` only (an MPI window on a communicator):
/// `exchange` is an all-gather among them (entries in `members` order), and the window's
/// rank `i` is job rank `members[i]`; this rank must be one of them.
///
/// # Collective Operation
/// Every member calls it with its segment and the same `members`; it returns once this
/// rank has opened every member's segment.
pub fn expose_among(
    rma: &dyn Rma,
    seg: Segment,
    members: &[u32],
    exchange: &mut Exchange<'_>,
) -> Result<MappedWindow> {
    let caps = rma.caps();
    if !caps.load_store && !caps.transfers {
        return Err(Error::InvalidArgument(
            format!("the {} RMA provider reaches no peer's memory", rma.name()).into(),
        ));
    }
    let Some(me) = members.iter().position(|&r| r == rma.rank()) else {
        return Err(Error::InvalidArgument(
            format!("rank {} exposes a window it is not a member of", rma.rank()).into(),
        ));
    };
    let mut token = (seg.len as u64).to_le_bytes().to_vec();
    token.extend_from_slice(&seg.token);
    let all = exchange(&token)?;
    if all.len() != members.len() {
        return Err(Error::InvalidArgument(
            format!(
                "the exchange returned {} entries for {} ranks",
                all.len(),
                members.len()
            )
            .into(),
        ));
    }
    let mut bases = Vec::with_capacity(all.len());
    let mut maps = Vec::with_capacity(all.len());
    let mut remote: Vec<Option<Box<dyn RemoteSegment>>> = Vec::new();
    for (i, t) in all.iter().enumerate() {
        let r = members[i];
        if i == me {
            bases.push((seg.ptr, seg.len));
            continue;
        }
        if t.len() < 8 {
            return Err(Error::Corrupt(
                format!("rank {r}'s segment descriptor is truncated").into(),
            ));
        }
        let mut l = [0u8; 8];
        l.copy_from_slice(&t[..8]);
        let len = u64::from_le_bytes(l);
        let mut m = rma.open_peer(r, &t[8..])?;
        if m.len as u64 != len {
            return Err(Error::Corrupt(
                format!(
                    "rank {r}'s segment maps {} bytes, it announced {len}",
                    m.len
                )
                .into(),
            ));
        }
        if let Some(x) = m.remote.take() {
            // Not mapped: `reach` finds no byte of it (a dangling base, length 0).
            remote.resize_with(all.len(), || None);
            remote[i] = Some(x);
            bases.push((std::ptr::NonNull::dangling().as_ptr(), 0));
            continue;
        }
        bases.push((m.ptr, m.len));
        maps.push(m);
    }
    Ok(MappedWindow {
        bases,
        remote,
        rank: me as u32,
        _own: Some(seg),
        _peers: maps,
    })
}

/// Access to every rank's exposed segment, by rank and byte offset (see the module docs
/// for completion and ordering).
pub trait Window: Send + Sync {
    /// Length of rank `rank`'s segment (0 for a rank out of range).
    fn len(&self, rank: u32) -> usize;
    /// Copies `src` to `rank`'s segment at `off`.
    fn put(&self, rank: u32, off: usize, src: &[u8]) -> Result<()>;
    /// Copies `dst.len()` bytes from `rank`'s segment at `off` into `dst`.
    fn get(&self, rank: u32, off: usize, dst: &mut [u8]) -> Result<()>;
    /// Atomic `op` on the `width`-byte (4 or 8) integer at `off` in `rank`'s segment;
    /// returns the previous value (zero-extended).
    fn amo(&self, rank: u32, off: usize, width: usize, op: Amo) -> Result<u64>;
    /// Remote completion of every put and atomic issued before (module docs); an error
    /// of a put to a peer reached by transfers (e.g. its target was lost) is reported here.
    fn quiet(&self) -> Result<()>;
    /// The address of `rank`'s segment in this process, if it is mapped here (load/store
    /// access, `shmem_ptr`); `None` for DMA-only windows.
    fn direct(&self, rank: u32) -> Option<*mut u8>;
}

/// A window whose segments are all mapped in this process (shm driver, in-process job):
/// the one implementation of direct put, get and atomics. Libraries keep the concrete type
/// on their hot paths and call the inlined accessors ([`MappedWindow::reach`],
/// [`MappedWindow::put_raw`], [`MappedWindow::get_raw`]); [`Window`] wraps them with errors.
pub struct MappedWindow {
    bases: Vec<(*mut u8, usize)>,
    /// Peers reached by transfers, by rank (empty when every peer is mapped); their
    /// `bases` entry reaches nothing.
    remote: Vec<Option<Box<dyn RemoteSegment>>>,
    rank: u32,
    _own: Option<Segment>,
    _peers: Vec<PeerMapping>,
}

// SAFETY: the window holds addresses of mappings it keeps alive; all accesses are raw or
// atomic (module docs), so sharing it between threads adds no reference aliasing.
unsafe impl Send for MappedWindow {}
// SAFETY: as for Send.
unsafe impl Sync for MappedWindow {}

impl MappedWindow {
    /// A window without segments (every access is out of reach): a library's stand-in for
    /// a segment it did not expose, so its fast path needs no `Option`.
    pub fn empty(rank: u32) -> Self {
        MappedWindow {
            bases: Vec::new(),
            remote: Vec::new(),
            rank,
            _own: None,
            _peers: Vec::new(),
        }
    }

    /// This rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// `rank`'s segment if it is reached by transfers, not mapped (module docs of
    /// [`super`], "Peers reached by transfers"); offsets are the caller's to check
    /// ([`Window::len`]). [`Window::put`] and [`Window::get`] use it.
    #[inline]
    pub fn remote(&self, rank: u32) -> Option<&dyn RemoteSegment> {
        self.remote.get(rank as usize)?.as_deref()
    }

    /// Drives the provider of the peers reached by transfers once
    /// ([`RemoteSegment::progress`]); nothing when every peer is mapped.
    #[inline]
    pub fn progress(&self) {
        if let Some(r) = self.remote.iter().flatten().next() {
            r.progress();
        }
    }

    /// The same window limited to bytes `skip..skip + len` of every rank's segment (offset
    /// 0 is then byte `skip`): for a library that must map whole pages but expose only
    /// part of them (skifshmem's globals are `.data`/`.bss`, not the `.got.plt` that
    /// shares their first page). Only shrinks: a rank whose segment is shorter keeps
    /// what it has.
    pub fn narrow(mut self, skip: usize, len: usize) -> Self {
        for (base, size) in &mut self.bases {
            let s = skip.min(*size);
            *base = base.wrapping_add(s);
            *size = len.min(*size - s);
        }
        for r in &mut self.remote {
            if let Some(inner) = r.take() {
                let s = skip.min(inner.len());
                let len = len.min(inner.len() - s);
                *r = Some(Box::new(Narrowed {
                    inner,
                    skip: s,
                    len,
                }));
            }
        }
        self
    }

    /// The fast accessor: where `off..off+len` of `rank`'s segment is mapped in this
    /// process; `None` if `rank` is out of range or the range leaves the segment. A bounds
    /// check and an addition (no call, no error value).
    #[inline(always)]
    pub fn reach(&self, rank: u32, off: usize, len: usize) -> Option<*mut u8> {
        let &(base, size) = self.bases.get(rank as usize)?;
        (off <= size && len <= size - off).then(|| base.wrapping_add(off))
    }

    /// Copies `len` bytes from `src` to `rank`'s segment at `off`, if [`MappedWindow::reach`]
    /// reaches it (true); false: nothing was copied.
    ///
    /// # Safety
    /// `src..src+len` is readable.
    #[inline(always)]
    pub unsafe fn put_raw(&self, rank: u32, off: usize, src: *const u8, len: usize) -> bool {
        match self.reach(rank, off, len) {
            Some(dst) => {
                // SAFETY: `reach` bounded `dst..dst+len` by a live mapping; the caller
                // vouches for the source.
                unsafe { copy_move(src, dst, len) };
                true
            }
            None => false,
        }
    }

    /// Copies `len` bytes from `rank`'s segment at `off` to `dst`, if reached (true).
    ///
    /// # Safety
    /// `dst..dst+len` is writable and not referenced by Rust code meanwhile.
    #[inline(always)]
    pub unsafe fn get_raw(&self, rank: u32, off: usize, dst: *mut u8, len: usize) -> bool {
        match self.reach(rank, off, len) {
            Some(src) => {
                // SAFETY: as in `put_raw`, with the roles swapped.
                unsafe { copy_move(src, dst, len) };
                true
            }
            None => false,
        }
    }

    /// The address of `off..off+len` in `rank`'s segment, or the error saying why not.
    fn at(&self, rank: u32, off: usize, len: usize) -> Result<*mut u8> {
        if let Some(p) = self.reach(rank, off, len) {
            return Ok(p);
        }
        self.out_of_reach(rank, off, len)
    }

    /// `rank`'s segment reached by transfers with `off..off+len` inside it; `None` for a
    /// mapped one; the error for a range outside it.
    fn remote_at(&self, rank: u32, off: usize, len: usize) -> Result<Option<&dyn RemoteSegment>> {
        match self.remote(rank) {
            Some(r) if off <= r.len() && len <= r.len() - off => Ok(Some(r)),
            Some(_) => self.out_of_reach(rank, off, len),
            None => Ok(None),
        }
    }

    /// The error of an access to `off..off+len` of `rank` that reaches nothing.
    #[cold]
    fn out_of_reach<T>(&self, rank: u32, off: usize, len: usize) -> Result<T> {
        let Some(&(_, size)) = self.bases.get(rank as usize) else {
            return Err(Error::InvalidArgument(
                format!(
                    "rank {rank} is out of range (the window has {} ranks)",
                    self.bases.len()
                )
                .into(),
            ));
        };
        let size = self.remote(rank).map_or(size, |r| r.len());
        Err(Error::InvalidArgument(
            format!(
                "remote access of {len} bytes at offset {off} is outside rank {rank}'s {size}-byte segment"
            )
            .into(),
        ))
    }
}

/// A [`RemoteSegment`] seen from byte `skip` on, `len` bytes long ([`MappedWindow::narrow`]).
struct Narrowed {
    inner: Box<dyn RemoteSegment>,
    skip: usize,
    len: usize,
}

impl RemoteSegment for Narrowed {
    fn len(&self) -> usize {
        self.len
    }
    fn put(&self, off: usize, src: &[u8]) -> Result<()> {
        self.inner.put(self.skip + off, src)
    }
    fn get(&self, off: usize, dst: &mut [u8]) -> Result<()> {
        self.inner.get(self.skip + off, dst)
    }
    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }
    fn progress(&self) {
        self.inner.progress()
    }
}

impl Window for MappedWindow {
    fn len(&self, rank: u32) -> usize {
        match self.remote(rank) {
            Some(r) => r.len(),
            None => self.bases.get(rank as usize).map_or(0, |b| b.1),
        }
    }

    fn put(&self, rank: u32, off: usize, src: &[u8]) -> Result<()> {
        if let Some(r) = self.remote_at(rank, off, src.len())? {
            return r.put(off, src);
        }
        let dst = self.at(rank, off, src.len())?;
        // SAFETY: `at` checked that dst..dst+len lies in a live mapping; `src` is a local
        // buffer that may overlap the destination only if the caller puts to itself
        // (`copy` is a memmove).
        unsafe { copy_move(src.as_ptr(), dst, src.len()) };
        Ok(())
    }

    fn get(&self, rank: u32, off: usize, dst: &mut [u8]) -> Result<()> {
        if let Some(r) = self.remote_at(rank, off, dst.len())? {
            return r.get(off, dst);
        }
        let src = self.at(rank, off, dst.len())?;
        // SAFETY: as in `put`, with the roles swapped.
        unsafe { copy_move(src, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    fn amo(&self, rank: u32, off: usize, width: usize, op: Amo) -> Result<u64> {
        if width != 4 && width != 8 {
            return Err(Error::InvalidArgument(
                format!("atomics are on 4- or 8-byte integers, not {width}").into(),
            ));
        }
        if self.remote_at(rank, off, width)?.is_some() {
            return Err(Error::InvalidArgument(
                format!("atomics on rank {rank}'s segment, reached by transfers, are unsupported (a fabric's atomics are not atomic with the target's CPU atomics): use messages").into(),
            ));
        }
        let p = self.at(rank, off, width)?;
        if !(p as usize).is_multiple_of(width) {
            return Err(Error::InvalidArgument(
                format!("atomic at offset {off} of rank {rank} is not {width}-byte aligned").into(),
            ));
        }
        // SAFETY: `p` is checked in bounds and aligned, in a mapping that lives as long
        // as `self`, and only ever accessed atomically or by raw copies.
        Ok(unsafe { amo_at(p, width, op) })
    }

    fn quiet(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        // One flush completes every put to any segment of the provider (all remote peers
        // come from the one provider that opened them): not one per peer.
        match self.remote.iter().flatten().next() {
            Some(r) => r.flush(),
            None => Ok(()),
        }
    }

    fn direct(&self, rank: u32) -> Option<*mut u8> {
        if self.remote(rank).is_some() {
            return None;
        }
        self.bases.get(rank as usize).map(|b| b.0)
    }
}

/// Atomic `op` on the `width`-byte (4 or 8; other widths act as 8) integer at `p`, with
/// sequential consistency; returns the previous value zero-extended. Used by
/// [`MappedWindow`] and by libraries that serve remote atomics on their own memory.
///
/// # Safety
/// `p` must be valid for `width` bytes, aligned to `width`, and accessed by other threads
/// or processes only atomically or by raw copies.
#[inline]
pub unsafe fn amo_at(p: *mut u8, width: usize, op: Amo) -> u64 {
    const O: Ordering = Ordering::SeqCst;
    if width == 8 {
        // SAFETY: the caller's contract (see the function docs).
        let a = unsafe { AtomicU64::from_ptr(p.cast()) };
        match op {
            Amo::Fetch => a.load(O),
            Amo::Set(v) => {
                a.store(v, O);
                0
            }
            Amo::Swap(v) => a.swap(v, O),
            Amo::CompareSwap { expected, new } => match a.compare_exchange(expected, new, O, O) {
                Ok(v) | Err(v) => v,
            },
            Amo::Add(v) => a.fetch_add(v, O),
            Amo::And(v) => a.fetch_and(v, O),
            Amo::Or(v) => a.fetch_or(v, O),
            Amo::Xor(v) => a.fetch_xor(v, O),
        }
    } else {
        // SAFETY: as above, for a 4-byte location.
        let a = unsafe { AtomicU32::from_ptr(p.cast()) };
        let v32 = |v: u64| v as u32;
        u64::from(match op {
            Amo::Fetch => a.load(O),
            Amo::Set(v) => {
                a.store(v32(v), O);
                0
            }
            Amo::Swap(v) => a.swap(v32(v), O),
            Amo::CompareSwap { expected, new } => {
                match a.compare_exchange(v32(expected), v32(new), O, O) {
                    Ok(v) | Err(v) => v,
                }
            }
            Amo::Add(v) => a.fetch_add(v32(v), O),
            Amo::And(v) => a.fetch_and(v32(v), O),
            Amo::Or(v) => a.fetch_or(v32(v), O),
            Amo::Xor(v) => a.fetch_xor(v32(v), O),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::LocalRma;
    use super::*;

    #[test]
    fn fast_accessors_check_bounds_and_copy_overlapping() {
        let rma = LocalRma::new(0, 1);
        let mut one = |b: &[u8]| -> Result<Vec<Vec<u8>>> { Ok(vec![b.to_vec()]) };
        let w = expose(&rma, rma.alloc(64).unwrap(), &mut one).unwrap();
        assert!(w.reach(0, 64, 0).is_some() && w.reach(0, 60, 4).is_some());
        assert!(w.reach(0, 61, 4).is_none() && w.reach(0, 65, 0).is_none());
        assert!(w.reach(0, usize::MAX, 2).is_none() && w.reach(1, 0, 1).is_none());
        let src: Vec<u8> = (1..=20).collect();
        for n in [1, 3, 4, 8, 13, 16, 20] {
            // SAFETY: `src` holds 20 readable bytes.
            assert!(unsafe { w.put_raw(0, 7, src.as_ptr(), n) });
            let mut got = [0u8; 20];
            // SAFETY: `got` holds 20 writable bytes.
            assert!(unsafe { w.get_raw(0, 7, got.as_mut_ptr(), n) });
            assert_eq!(got[..n], src[..n]);
        }
        // SAFETY: as above; refused, so nothing is read.
        assert!(!unsafe { w.put_raw(0, 60, src.as_ptr(), 8) });
        // a put to oneself from an overlapping range is a memmove
        let p = w.reach(0, 0, 32).unwrap();
        for n in [8, 12, 16, 20] {
            w.put(0, 0, &src[..n]).unwrap();
            // SAFETY: `p..p+32` is this rank's live segment; no reference aliases it.
            unsafe { w.put_raw(0, 2, p, n) };
            let mut got = [0u8; 24];
            w.get(0, 2, &mut got[..n]).unwrap();
            assert_eq!(got[..n], src[..n], "{n} bytes");
        }
        let e = MappedWindow::empty(0);
        assert!(e.reach(0, 0, 0).is_none() && e.put(0, 0, &[1]).is_err());
        assert_eq!(Window::len(&e, 0), 0);
    }

    /// A provider whose peers are "remote": a heap segment reached through a lock.
    struct Copies(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl RemoteSegment for Copies {
        fn len(&self) -> usize {
            self.0.lock().unwrap().len()
        }
        fn put(&self, off: usize, src: &[u8]) -> Result<()> {
            self.0.lock().unwrap()[off..off + src.len()].copy_from_slice(src);
            Ok(())
        }
        fn get(&self, off: usize, dst: &mut [u8]) -> Result<()> {
            let n = dst.len();
            dst.copy_from_slice(&self.0.lock().unwrap()[off..off + n]);
            Ok(())
        }
        fn flush(&self) -> Result<()> {
            Ok(())
        }
    }
    struct Transfers(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl Rma for Transfers {
        fn name(&self) -> &'static str {
            "transfers"
        }
        fn rank(&self) -> u32 {
            0
        }
        fn size(&self) -> u32 {
            2
        }
        fn caps(&self) -> super::super::RmaCaps {
            super::super::RmaCaps {
                load_store: false,
                share_in_place: false,
                transfers: true,
                remote_progress: false,
            }
        }
        fn alloc(&self, len: usize) -> Result<Segment> {
            LocalRma::new(0, 1).alloc(len)
        }
        unsafe fn share_in_place(&self, _: *mut u8, _: usize) -> Result<Segment> {
            unreachable!()
        }
        fn open_peer(&self, _: u32, _: &[u8]) -> Result<PeerMapping> {
            Ok(PeerMapping::remote(Box::new(Copies(self.0.clone()))))
        }
    }

    #[test]
    fn peers_reached_by_transfers_miss_the_fast_path_and_take_the_window_calls() {
        let mem = std::sync::Arc::new(std::sync::Mutex::new(vec![0u8; 32]));
        let rma = Transfers(mem.clone());
        let mut two = |b: &[u8]| -> Result<Vec<Vec<u8>>> { Ok(vec![b.to_vec(), b.to_vec()]) };
        let w = expose(&rma, rma.alloc(32).unwrap(), &mut two).unwrap();
        assert!(w.reach(1, 0, 1).is_none() && w.direct(1).is_none());
        assert!(w.reach(0, 0, 32).is_some() && w.remote(0).is_none() && w.direct(0).is_some());
        assert_eq!(Window::len(&w, 1), 32);
        w.put(1, 4, b"abcd").unwrap();
        assert_eq!(&mem.lock().unwrap()[4..8], b"abcd");
        let mut got = [0u8; 3];
        w.get(1, 5, &mut got).unwrap();
        assert_eq!(&got, b"bcd");
        assert!(w.put(1, 30, b"abc").is_err() && w.get(1, 33, &mut []).is_err());
        let e = w.amo(1, 8, 8, Amo::Add(1)).unwrap_err().to_string();
        assert!(e.contains("unsupported"), "{e}");
        // narrowing shifts a remote segment's offsets as a mapped one's
        let n = w.narrow(4, 8);
        assert_eq!(Window::len(&n, 1), 8);
        n.get(1, 0, &mut got).unwrap();
        assert_eq!(&got, b"abc");
        assert!(n.put(1, 6, b"xyz").is_err());
    }

    #[test]
    fn narrow_exposes_only_the_inner_range() {
        let rma = LocalRma::new(0, 1);
        let mut one = |b: &[u8]| -> Result<Vec<Vec<u8>>> { Ok(vec![b.to_vec()]) };
        let w = expose(&rma, rma.alloc(64).unwrap(), &mut one).unwrap();
        let base = w.reach(0, 0, 0).unwrap();
        let n = w.narrow(10, 20);
        assert_eq!(n.reach(0, 0, 20), Some(base.wrapping_add(10)));
        assert!(n.reach(0, 0, 21).is_none() && n.reach(0, 20, 1).is_none());
        let w = expose(&rma, rma.alloc(64).unwrap(), &mut one).unwrap();
        let base = w.reach(0, 0, 0).unwrap();
        let w = w.narrow(60, 100); // past the end: only what the segment has
        assert_eq!(w.reach(0, 0, 4), Some(base.wrapping_add(60)));
        assert!(w.reach(0, 0, 5).is_none());
    }
}
