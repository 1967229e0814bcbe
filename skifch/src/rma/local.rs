//! [`LocalRma`]: the RMA provider of jobs whose ranks are threads of one process.
#![allow(unsafe_code)] // heap memory shared between the ranks' threads

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::{PeerMapping, Rma, RmaCaps, Segment};
use crate::{Error, Result};

/// Zeroed heap memory owned by a [`LocalRma`] segment.
struct HeapMem {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}
// SAFETY: plain owned memory; accesses go through raw pointers (module docs).
unsafe impl Send for HeapMem {}
// SAFETY: as for Send.
unsafe impl Sync for HeapMem {}
impl Drop for HeapMem {
    fn drop(&mut self) {
        // SAFETY: allocated in `LocalRma::alloc` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// Segments of the in-process job ([`crate::local`]) by token, so that a peer's window
/// keeps the memory alive after its owner thread ended.
fn local_registry() -> &'static Mutex<HashMap<u64, Arc<HeapMem>>> {
    static REG: OnceLock<Mutex<HashMap<u64, Arc<HeapMem>>>> = OnceLock::new();
    REG.get_or_init(Default::default)
}

/// The RMA provider of the in-process job (ranks are threads of one address space):
/// segments are heap memory and a peer's window holds a reference to it.
/// [`Rma::share_in_place`] is unsupported (globals are not per-rank between threads).
pub struct LocalRma {
    rank: u32,
    size: u32,
}

impl LocalRma {
    /// The provider of rank `rank` of `size` in a job whose ranks are threads of this
    /// process (any in-process driver returns it from [`crate::Driver::rma`]).
    pub fn new(rank: u32, size: u32) -> Self {
        LocalRma { rank, size }
    }
}

struct Unregister(u64);
impl Drop for Unregister {
    fn drop(&mut self) {
        if let Ok(mut m) = local_registry().lock() {
            m.remove(&self.0);
        }
    }
}

impl Rma for LocalRma {
    fn name(&self) -> &'static str {
        "local"
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn caps(&self) -> RmaCaps {
        RmaCaps {
            load_store: true,
            transfers: false,
            remote_progress: false,
            share_in_place: false,
        }
    }
    fn alloc(&self, len: usize) -> Result<Segment> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let layout = std::alloc::Layout::from_size_align(len.max(1), 4096)
            .map_err(|_| Error::InvalidArgument(format!("segment of {len} bytes").into()))?;
        // SAFETY: non-zero size; a null result is handled.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::InvalidArgument(
                format!("cannot allocate a {len}-byte segment").into(),
            ));
        }
        let mem = Arc::new(HeapMem { ptr, layout });
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        local_registry()
            .lock()
            .map_err(|_| Error::Corrupt("the local segment registry is poisoned".into()))?
            .insert(id, mem.clone());
        // SAFETY: `mem` owns ptr..ptr+len and is kept by the segment.
        Ok(unsafe {
            Segment::new(
                ptr,
                len,
                id.to_le_bytes().to_vec(),
                Box::new((mem, Unregister(id))),
            )
        })
    }
    unsafe fn share_in_place(&self, _addr: *mut u8, _len: usize) -> Result<Segment> {
        Err(Error::InvalidArgument(
            "the in-process job cannot share global variables per rank (ranks are threads)".into(),
        ))
    }
    fn open_peer(&self, rank: u32, token: &[u8]) -> Result<PeerMapping> {
        let id = <[u8; 8]>::try_from(token)
            .map(u64::from_le_bytes)
            .map_err(|_| {
                Error::Corrupt(
                    format!("rank {rank}'s segment token has {} bytes", token.len()).into(),
                )
            })?;
        let mem = local_registry()
            .lock()
            .map_err(|_| Error::Corrupt("the local segment registry is poisoned".into()))?
            .get(&id)
            .cloned()
            .ok_or_else(|| Error::Corrupt(format!("rank {rank}'s segment {id} is gone").into()))?;
        let (ptr, len) = (mem.ptr, mem.layout.size());
        // SAFETY: `mem` keeps the allocation alive as long as the mapping.
        Ok(unsafe { PeerMapping::new(ptr, len, Box::new(mem)) })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{expose, Amo, Window};
    use crate::local;
    use crate::Result;

    #[test]
    fn local_window_put_get_amo_bounds() {
        let out = local::run(3, |job| {
            let rma = job.rma().expect("the in-process job offers RMA");
            assert!(rma.caps().load_store);
            let rma = rma.as_ref();
            let ch = job.open(2)?;
            let me = job.rank();
            let n = job.size();
            // all-gather of the tokens over the channel (every rank sends to every rank)
            let mut ex = |b: &[u8]| -> Result<Vec<Vec<u8>>> {
                for r in 0..n {
                    ch.send_all(job.addr(r, 2), &[std::io::IoSlice::new(b)])?;
                }
                let mut all = vec![Vec::new(); n as usize];
                for _ in 0..n {
                    let m = ch.recv()?;
                    all[m.src().rank() as usize] = m.to_vec();
                }
                Ok(all)
            };
            let w = expose(rma, rma.alloc(4096)?, &mut ex)?;
            let mut b = crate::coll::Barrier::new(me, n);
            let bch = job.open(1)?;
            b.wait(&bch)?;
            w.put(
                (me + 1) % n,
                8 * me as usize,
                &u64::from(me + 10).to_le_bytes(),
            )?;
            w.amo(0, 1024, 8, Amo::Add(1))?;
            w.quiet()?;
            b.wait(&bch)?;
            let mut got = [0u8; 8];
            let from = (me + n - 1) % n;
            w.get(me, 8 * from as usize, &mut got)?;
            assert_eq!(u64::from_le_bytes(got), u64::from(from + 10));
            assert_eq!(w.amo(0, 1024, 8, Amo::Fetch)?, u64::from(n));
            assert!(w.put(1, 4090, &[0; 8]).is_err());
            assert!(w.get(n, 0, &mut got).is_err());
            assert!(w.amo(1, 4, 8, Amo::Fetch).is_err());
            b.wait(&bch)?;
            Ok(())
        });
        out.unwrap();
    }
}
