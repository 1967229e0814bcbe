//! Target datatypes on the message path, described to each target once (seed 003): the
//! first operation with a non-contiguous target type to a peer is preceded by an `H_TYPE`
//! message giving the type's byte runs of one element under a new id; that and later
//! operations name it by id with a count and a base offset, and the target expands the
//! runs itself. The channel is FIFO per pair of ranks, so the description always arrives
//! before its first use.
//!
//! * **Origin** ([`Sent`]): per type object (`Datatype::identity`, the cache keeps a clone
//!   so the identity cannot be reused while cached) its id and the peers that know it. Ids
//!   come from a per-process counter and are never reused.
//! * **Invalidation**: `MPI_Type_free` ([`type_freed`]) drops the origin's entry and sends
//!   each peer that knows the id an `H_FORGET` (after every operation that used it, FIFO);
//!   the target drops its description. A type the program keeps stays cached.
//!
//! Wire: `H_TYPE` (one-way) `args[0]` = id, `args[1]` = extent (two's complement),
//! `args[2]` = size, payload = pairs (offset in the element as two's complement, length)
//! of little-endian `u64`s (packed in order). An operation with a described type has
//! `args[1]` = [`TYPED`], `args[0]` = the byte offset of its first element (two's
//! complement) and a 16-byte head: the id and the count.

use std::collections::HashMap;

use skifch::Port;

use super::ops::Runs;
use crate::comm::Mpi;
use crate::datatype::Datatype;
use crate::error::Result;

/// `args[1]` of an operation whose target runs come from a described type.
pub(crate) const TYPED: u64 = 1 << 63;

/// The origin's cache: type identity → (the type, its id, world ranks that know it).
#[derive(Default)]
pub(crate) struct Sent {
    next: u64,
    by_type: HashMap<usize, (Datatype, u64, Vec<u32>)>,
    /// Operations on described types kept under deferred locks (every window), not sent
    /// yet: while any is, `H_FORGET`s wait in `forgets` (they must not overtake one).
    kept: usize,
    /// (world rank, id) of freed types' forgets held back for `kept`.
    forgets: Vec<(u32, u64)>,
}

impl Sent {
    /// The id of `dt` at world rank `dst`, and its description if `dst` does not know it
    /// yet (the caller sends it first).
    pub(crate) fn id_for(&mut self, dt: &Datatype, dst: u32) -> (u64, Option<Description>) {
        let next = &mut self.next;
        let e = self.by_type.entry(dt.identity()).or_insert_with(|| {
            *next += 1;
            (dt.clone(), *next, Vec::new())
        });
        if e.2.contains(&dst) {
            return (e.1, None);
        }
        e.2.push(dst);
        (e.1, Some(Description::of(dt)))
    }

    /// Forgets `dt`: the (peer, id) forgets to send now (none while operations on
    /// described types are kept: they wait for those, [`Sent::sent_kept`]).
    pub(crate) fn forget(&mut self, dt: &Datatype) -> Vec<(u32, u64)> {
        let Some((_, id, peers)) = self.by_type.remove(&dt.identity()) else {
            return Vec::new();
        };
        let f = peers.into_iter().map(|p| (p, id));
        if self.kept > 0 {
            self.forgets.extend(f);
            return Vec::new();
        }
        f.collect()
    }

    /// An operation on a described type is kept under a deferred lock.
    pub(crate) fn keep(&mut self) {
        self.kept += 1;
    }

    /// `n` kept operations were sent: the held-back forgets to send once none is left.
    pub(crate) fn sent_kept(&mut self, n: usize) -> Vec<(u32, u64)> {
        self.kept = self.kept.saturating_sub(n);
        if self.kept == 0 {
            std::mem::take(&mut self.forgets)
        } else {
            Vec::new()
        }
    }
}

/// One element of a type as the target needs it.
pub(crate) struct Description {
    pub(crate) extent: isize,
    pub(crate) size: usize,
    /// (offset from the element's start, offset in the packed element, length).
    pub(crate) runs: Vec<(isize, usize, usize)>,
}

impl Description {
    fn of(dt: &Datatype) -> Description {
        let mut runs = Vec::with_capacity(dt.runs().min(1 << 16));
        dt.for_each_piece(0, dt.size(), |a, p, l| runs.push((a, p, l)));
        Description {
            extent: dt.extent(),
            size: dt.size(),
            runs,
        }
    }

    /// `args` and payload of its `H_TYPE` message (module docs).
    pub(crate) fn wire(&self, id: u64) -> ([u64; 3], Vec<u8>) {
        let mut b = Vec::with_capacity(16 * self.runs.len());
        for &(off, _, len) in &self.runs {
            b.extend_from_slice(&(off as i64 as u64).to_le_bytes());
            b.extend_from_slice(&(len as u64).to_le_bytes());
        }
        ([id, self.extent as i64 as u64, self.size as u64], b)
    }

    /// The description of an `H_TYPE` message.
    pub(crate) fn parse(args: &[u64], payload: &[u8]) -> std::result::Result<Self, String> {
        let a = |i: usize| args.get(i).copied().unwrap_or(0);
        if !payload.len().is_multiple_of(16) {
            return Err(format!("a type description of {} bytes", payload.len()));
        }
        let w = |i: usize| u64::from_le_bytes(payload[8 * i..8 * i + 8].try_into().expect("8"));
        let mut runs = Vec::with_capacity(payload.len() / 16);
        let mut p = 0usize;
        for i in 0..payload.len() / 16 {
            let (off, len) = (w(2 * i) as i64 as isize, w(2 * i + 1) as usize);
            runs.push((off, p, len));
            p = p.saturating_add(len);
        }
        if p != a(2) as usize {
            return Err(format!("a type description of {p} bytes for size {}", a(2)));
        }
        Ok(Description {
            extent: a(1) as i64 as isize,
            size: p,
            runs,
        })
    }

    /// The runs of `count` elements from byte `base` of the target's memory (checked by
    /// the caller against the memory).
    pub(crate) fn expand(&self, base: isize, count: usize) -> std::result::Result<Runs, String> {
        let n = self.runs.len().saturating_mul(count);
        if n > (1 << 26) {
            return Err(format!(
                "{count} elements of a type of {} runs",
                self.runs.len()
            ));
        }
        let mut out = Vec::with_capacity(n);
        for i in 0..count {
            let start = (i as isize)
                .checked_mul(self.extent)
                .and_then(|x| x.checked_add(base))
                .ok_or("a displacement that overflows")?;
            for &(off, p, len) in &self.runs {
                let at = start
                    .checked_add(off)
                    .filter(|&x| x >= 0)
                    .ok_or("data before the start of the window")?;
                out.push((at as usize, i * self.size + p, len));
            }
        }
        Ok(out)
    }
}

/// The target's descriptions, by (origin's world rank, id).
#[derive(Default)]
pub(crate) struct Known {
    by_id: HashMap<(u32, u64), Description>,
}

impl Known {
    pub(crate) fn learn(&mut self, src: u32, id: u64, d: Description) {
        self.by_id.insert((src, id), d);
    }
    pub(crate) fn forget(&mut self, src: u32, id: u64) {
        self.by_id.remove(&(src, id));
    }
    pub(crate) fn get(&self, src: u32, id: u64) -> std::result::Result<&Description, String> {
        self.by_id
            .get(&(src, id))
            .ok_or_else(|| format!("type {id} of rank {src} was never described"))
    }
}

/// `MPI_Type_free` of `dt`: the peers that were told about it forget it (module docs).
/// Best effort per peer: a peer that is gone has nothing left to forget.
pub fn type_freed<P: Port>(mpi: &Mpi<P>, dt: &Datatype) -> Result<()> {
    if dt.predefined().is_some() {
        return Ok(());
    }
    forgets(mpi, |s| s.forget(dt))
}

/// `n` operations on described types kept under a deferred lock were sent (`msg.rs`):
/// the forgets held back for them go now if none is left.
pub(crate) fn sent_kept<P: Port>(mpi: &Mpi<P>, n: usize) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    forgets(mpi, |s| s.sent_kept(n))
}

/// Sends the `H_FORGET`s `which` picks from the origin's cache.
fn forgets<P: Port>(mpi: &Mpi<P>, which: impl FnOnce(&mut Sent) -> Vec<(u32, u64)>) -> Result<()> {
    mpi.engine().with_ep(|ep| {
        for (p, id) in which(&mut ep.ctx_mut().rma.sent) {
            // A lost peer: its descriptions went with it.
            let _ = ep.send(p, super::served::H_FORGET, 0, &[id], &[]);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::Basic;

    fn vector() -> Datatype {
        let int = Datatype::basic(Basic::Int);
        Datatype::vector(4, 1, 3, &int).expect("a vector").commit()
    }

    #[test]
    fn described_once_per_peer_then_forgotten_with_a_fresh_id() {
        let mut s = Sent::default();
        let t = vector();
        let (a, d) = s.id_for(&t, 1);
        assert!(d.is_some());
        assert!(s.id_for(&t, 1).1.is_none(), "known at rank 1");
        assert!(s.id_for(&t, 2).1.is_some(), "rank 2 is told too");
        assert_eq!(s.forget(&t), vec![(1, a), (2, a)]);
        assert_eq!(s.forget(&t), vec![]);
        let (b, d) = s.id_for(&t, 1);
        assert!(b != a && d.is_some(), "ids are never reused");
    }

    #[test]
    fn a_description_expands_to_the_origin_runs() {
        let t = vector();
        let d = Description::of(&t);
        let (args, body) = d.wire(7);
        let back = Description::parse(&args, &body).expect("parses");
        let runs = back.expand(100, 2).expect("expands");
        let mut want = Vec::new();
        t.for_each_piece(0, 2 * t.size(), |a, p, l| {
            want.push(((100 + a) as usize, p, l))
        });
        assert_eq!(runs, want);
        assert!(back.expand(-1000, 1).is_err(), "before the window");
        assert!(
            Description::parse(&[0, 0, 5], &body).is_err(),
            "size mismatch"
        );
    }
}
