//! The collective algorithms, over any [`Transport`] (see the [module docs](super) for who
//! participates and when calls complete). Buffers are bytes; reductions go through a
//! [`Reducer`]. Algorithms (after MPICH's choices, Thakur, Rabenseifner & Gropp 2005):
//!
//! | call | algorithm |
//! |---|---|
//! | barrier | dissemination, ⌈log₂ n⌉ rounds |
//! | bcast | binomial tree; ≥ 32 KiB and n > 2: binomial scatter + ring allgather |
//! | reduce | binomial tree (non-commutative: towards rank 0 in rank order, then to root) |
//! | allreduce | recursive doubling (non-powers of two fold the extra ranks in first); ≥ 16 KiB and commutative: ring reduce-scatter + ring allgather |
//! | gather, scatter | binomial tree up to 64 KiB in total, else linear at the root |
//! | gatherv, scatterv | linear at the root, in rank order |
//! | allgather | up to 64 KiB in total: recursive doubling (powers of two) or Bruck; else ring |
//! | allgatherv | ring |
//! | alltoall(v) | pairwise exchange, n − 1 steps |
//! | reduce_scatter(_block) | ring (commutative); else reduce to rank 0 + scatterv |
//! | scan, exscan | recursive doubling (order-preserving) |

use std::ops::Range;

use super::ops::Reducer;
use super::Transport;
use crate::{Error, Result};

/// Broadcasts of at least this many bytes use scatter + allgather.
pub const BCAST_LONG: usize = 32 << 10;
/// Allreduces of at least this many bytes use the ring (commutative operations).
pub const ALLREDUCE_RING: usize = 16 << 10;
/// Gathers and scatters of at most this many bytes in total use a binomial tree.
pub const GATHER_BINOMIAL_MAX: usize = 64 << 10;
/// Allgathers of at most this many bytes in total use recursive doubling (powers of two)
/// or Bruck's algorithm (other sizes); larger ones the ring.
pub const ALLGATHER_RD_MAX: usize = 64 << 10;

fn bad(what: &str, why: String) -> Error {
    Error::InvalidArgument(format!("{what}: {why}").into())
}

fn check_root<T: Transport + ?Sized>(t: &T, what: &str, root: usize) -> Result<()> {
    if root >= t.size() {
        return Err(bad(
            what,
            format!("root {root} is not in a group of {}", t.size()),
        ));
    }
    Ok(())
}

fn check_elems<R: Reducer + ?Sized>(what: &str, red: &R, len: usize) -> Result<usize> {
    let es = red.elem_size();
    if es == 0 || !len.is_multiple_of(es) {
        return Err(bad(
            what,
            format!("{len} bytes is not a whole number of {es}-byte elements"),
        ));
    }
    Ok(es)
}

fn check_len(what: &str, name: &str, got: usize, want: usize) -> Result<()> {
    if got != want {
        return Err(bad(
            what,
            format!("{name} has {got} bytes, expected {want}"),
        ));
    }
    Ok(())
}

/// A receive that must fill `want` bytes exactly (the peers' arguments must match).
fn recv_exact<T: Transport + ?Sized>(t: &T, from: usize, tag: u32, buf: &mut [u8]) -> Result<()> {
    let n = t.recv(from, tag, buf)?;
    expect(from, n, buf.len())
}

fn sendrecv_exact<T: Transport + ?Sized>(
    t: &T,
    to: usize,
    sdata: &[u8],
    from: usize,
    rbuf: &mut [u8],
    tag: u32,
) -> Result<()> {
    let n = t.sendrecv(to, sdata, from, rbuf, tag)?;
    expect(from, n, rbuf.len())
}

fn expect(from: usize, got: usize, want: usize) -> Result<()> {
    if got != want {
        return Err(bad(
            "collective",
            format!(
                "member {from} sent {got} bytes where {want} were expected (mismatched arguments)"
            ),
        ));
    }
    Ok(())
}

/// `(&buf[s], &mut buf[r])` for disjoint ranges.
fn split2(buf: &mut [u8], s: Range<usize>, r: Range<usize>) -> (&[u8], &mut [u8]) {
    debug_assert!(s.end <= r.start || r.end <= s.start || s.is_empty() || r.is_empty());
    if s.is_empty() {
        return (&[], &mut buf[r]);
    }
    if r.is_empty() {
        return (&buf[s], &mut []);
    }
    if s.start < r.start {
        let (a, b) = buf.split_at_mut(r.start);
        (&a[s], &mut b[..r.end - r.start])
    } else {
        let (a, b) = buf.split_at_mut(s.start);
        (&b[..s.end - s.start], &mut a[r])
    }
}

/// `len` bytes in `n` contiguous element-aligned blocks, as even as possible.
fn blocks(len: usize, es: usize, n: usize) -> Vec<Range<usize>> {
    let elems = len / es;
    let (q, rem) = (elems / n, elems % n);
    let mut out = Vec::with_capacity(n);
    let mut at = 0;
    for i in 0..n {
        let k = (q + usize::from(i < rem)) * es;
        out.push(at..at + k);
        at += k;
    }
    out
}

/// Counts and displacements of `n` consecutive blocks of `k` bytes.
fn equal_blocks(n: usize, k: usize) -> (Vec<usize>, Vec<usize>) {
    (0..n).map(|i| (k, i * k)).unzip()
}

/// Ranges from MPI-style counts and displacements (bytes), checked against `len`.
fn ranges(
    what: &str,
    n: usize,
    counts: &[usize],
    displs: &[usize],
    len: usize,
) -> Result<Vec<Range<usize>>> {
    if counts.len() != n || displs.len() != n {
        return Err(bad(what, format!("{n} counts and displacements needed")));
    }
    counts
        .iter()
        .zip(displs)
        .map(|(&c, &d)| match d.checked_add(c) {
            Some(e) if e <= len => Ok(d..e),
            _ => Err(bad(
                what,
                format!("block {d}+{c} exceeds the {len}-byte buffer"),
            )),
        })
        .collect()
}

/// Dissemination barrier.
pub fn barrier<T: Transport + ?Sized>(t: &T) -> Result<()> {
    let (r, n, tag) = (t.rank(), t.size(), t.next_tag());
    dissemination(r, n, |_, to, from| {
        sendrecv_exact(t, to, &[], from, &mut [], tag).map(|_| ())
    })
}

/// The dissemination schedule (Hensgen, Finkel and Manber 1988): in round `k` (distance
/// `2^k < n`) member `rank` sends to `rank + 2^k` and hears from `rank - 2^k` (mod `n`);
/// after ⌈log₂ n⌉ rounds every member has heard, transitively, from every other. The one
/// barrier schedule of the stack: [`barrier`] (any transport, so also
/// `proto::Endpoint::barrier`) and the channel-level [`super::Barrier`] run it.
pub(crate) fn dissemination(
    rank: usize,
    n: usize,
    mut round: impl FnMut(u8, usize, usize) -> Result<()>,
) -> Result<()> {
    let (mut d, mut k) = (1, 0u8);
    while d < n {
        round(k, (rank + d) % n, (rank + n - d) % n)?;
        d *= 2;
        k += 1;
    }
    Ok(())
}

/// Broadcasts `buf` from `root` (same length on every member).
pub fn bcast<T: Transport + ?Sized>(t: &T, root: usize, buf: &mut [u8]) -> Result<()> {
    check_root(t, "bcast", root)?;
    let n = t.size();
    let tag = t.next_tag();
    if n == 1 {
        return Ok(());
    }
    if buf.len() >= BCAST_LONG && n > 2 {
        return bcast_scatter_allgather(t, root, buf, tag);
    }
    let r = t.rank();
    let rel = (r + n - root) % n;
    let mut mask = 1;
    while mask < n {
        if rel & mask != 0 {
            recv_exact(t, (r + n - mask) % n, tag, buf)?;
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if rel + mask < n {
            t.send((r + mask) % n, tag, buf)?;
        }
        mask >>= 1;
    }
    Ok(())
}

/// Size of the binomial subtree rooted at relative rank `rel` (itself included).
fn subtree(rel: usize, n: usize) -> usize {
    if rel == 0 {
        n
    } else {
        (rel & rel.wrapping_neg()).min(n - rel)
    }
}

fn bcast_scatter_allgather<T: Transport + ?Sized>(
    t: &T,
    root: usize,
    buf: &mut [u8],
    tag: u32,
) -> Result<()> {
    let (r, n) = (t.rank(), t.size());
    let rel = (r + n - root) % n;
    let ps = blocks(buf.len(), 1, n);
    let span = |c: usize| ps[c].start..ps[c + subtree(c, n) - 1].end;
    // Scatter: each relative rank gets the pieces of its subtree.
    let mut mask = 1;
    while mask < n {
        if rel & mask != 0 {
            recv_exact(t, (r + n - mask) % n, tag, &mut buf[span(rel)])?;
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if rel + mask < n {
            t.send((r + mask) % n, tag, &buf[span(rel + mask)])?;
        }
        mask >>= 1;
    }
    ring_allgather(t, buf, &ps, rel, tag)
}

/// Ring allgather: the member at position `pos` (= rank rotated so that positions follow
/// the ring) owns block `pos`; after n − 1 steps everyone has every block.
fn ring_allgather<T: Transport + ?Sized>(
    t: &T,
    buf: &mut [u8],
    bl: &[Range<usize>],
    pos: usize,
    tag: u32,
) -> Result<()> {
    let (r, n) = (t.rank(), t.size());
    let (right, left) = ((r + 1) % n, (r + n - 1) % n);
    for s in 0..n - 1 {
        let si = (pos + n - s) % n;
        let ri = (pos + 2 * n - s - 1) % n;
        let (sr, rr) = (bl[si].clone(), bl[ri].clone());
        if !sr.is_empty() && !rr.is_empty() && sr.start < rr.end && rr.start < sr.end {
            // Blocks that overlap (displacements writing a place twice: erroneous by
            // MPI-3.1 §5.7, yet seen in real test suites): the outgoing one from a copy.
            let out = buf[sr].to_vec();
            sendrecv_exact(t, right, &out, left, &mut buf[rr], tag)?;
            continue;
        }
        let (sb, rb) = split2(buf, sr, rr);
        sendrecv_exact(t, right, sb, left, rb, tag)?;
    }
    Ok(())
}

/// Ring reduce-scatter in place (commutative operations): afterwards member `r` holds the
/// full reduction of block `r`.
fn ring_reduce_scatter<T: Transport + ?Sized, R: Reducer + ?Sized>(
    t: &T,
    buf: &mut [u8],
    bl: &[Range<usize>],
    red: &R,
    tag: u32,
) -> Result<()> {
    let (r, n) = (t.rank(), t.size());
    let (right, left) = ((r + 1) % n, (r + n - 1) % n);
    let mut tmp = vec![0u8; bl.iter().map(|b| b.len()).max().unwrap_or(0)];
    for s in 0..n - 1 {
        let si = (r + 2 * n - s - 1) % n;
        let ri = (r + 2 * n - s - 2) % n;
        let k = bl[ri].len();
        sendrecv_exact(t, right, &buf[bl[si].clone()], left, &mut tmp[..k], tag)?;
        red.apply(&tmp[..k], &mut buf[bl[ri].clone()]);
    }
    Ok(())
}

/// Binomial reduction towards `root`: the root gets `Some(result)`. Order-preserving when
/// `root == 0` (each member combines its own lower range with the next higher one).
fn reduce_binomial<T: Transport + ?Sized, R: Reducer + ?Sized>(
    t: &T,
    root: usize,
    send: &[u8],
    red: &R,
    tag: u32,
) -> Result<Option<Vec<u8>>> {
    let (r, n) = (t.rank(), t.size());
    let rel = (r + n - root) % n;
    let mut acc = send.to_vec();
    let mut tmp = vec![0u8; send.len()];
    let mut mask = 1;
    while mask < n {
        if rel & mask == 0 {
            let c = rel | mask;
            if c < n {
                recv_exact(t, (c + root) % n, tag, &mut tmp)?;
                red.apply(&acc, &mut tmp);
                std::mem::swap(&mut acc, &mut tmp);
            }
        } else {
            t.send(((rel & !mask) + root) % n, tag, &acc)?;
            return Ok(None);
        }
        mask <<= 1;
    }
    Ok(Some(acc))
}

/// Reduces `send` of every member into `recv` at `root` (`recv` is ignored elsewhere and
/// may be empty there).
pub fn reduce<T: Transport + ?Sized, R: Reducer + ?Sized>(
    t: &T,
    root: usize,
    send: &[u8],
    recv: &mut [u8],
    red: &R,
) -> Result<()> {
    const W: &str = "reduce";
    check_root(t, W, root)?;
    check_elems(W, red, send.len())?;
    let r = t.rank();
    if r == root {
        check_len(W, "the receive buffer", recv.len(), send.len())?;
    }
    let tag = t.next_tag();
    if red.commutative() {
        if let Some(v) = reduce_binomial(t, root, send, red, tag)? {
            recv.copy_from_slice(&v);
        }
        return Ok(());
    }
    let v = reduce_binomial(t, 0, send, red, tag)?;
    match (r, v) {
        (_, Some(v)) if root == 0 => recv.copy_from_slice(&v),
        (0, Some(v)) => t.send(root, tag, &v)?,
        _ if r == root => recv_exact(t, 0, tag, recv)?,
        _ => {}
    }
    Ok(())
}

/// Reduces `send` of every member; every member gets the result in `recv`.
pub fn allreduce<T: Transport + ?Sized, R: Reducer + ?Sized>(
    t: &T,
    send: &[u8],
    recv: &mut [u8],
    red: &R,
) -> Result<()> {
    const W: &str = "allreduce";
    let es = check_elems(W, red, send.len())?;
    check_len(W, "the receive buffer", recv.len(), send.len())?;
    let (r, n, tag) = (t.rank(), t.size(), t.next_tag());
    recv.copy_from_slice(send);
    if n == 1 {
        return Ok(());
    }
    if red.commutative() && send.len() >= ALLREDUCE_RING && send.len() / es >= n {
        let bl = blocks(send.len(), es, n);
        ring_reduce_scatter(t, recv, &bl, red, tag)?;
        // Member r owns block r: positions are ranks.
        return ring_allgather(t, recv, &bl, r, tag);
    }
    // Recursive doubling; the first 2·rem members pair up so that a power of two remains.
    let pof2 = 1usize << (usize::BITS - 1 - n.leading_zeros());
    let rem = n - pof2;
    // Scratch on the stack for short vectors (a heap buffer was about a quarter of an
    // 8-byte Allreduce's instructions), else on the heap.
    let (mut small, mut big) = ([0u8; 64], Vec::new());
    let tmp: &mut [u8] = if send.len() <= small.len() {
        &mut small[..send.len()]
    } else {
        big.resize(send.len(), 0);
        &mut big
    };
    let newrank = if r < 2 * rem {
        if r % 2 == 0 {
            t.send(r + 1, tag, recv)?;
            None
        } else {
            recv_exact(t, r - 1, tag, tmp)?;
            red.apply(tmp, recv);
            Some(r / 2)
        }
    } else {
        Some(r - rem)
    };
    if let Some(nr) = newrank {
        let mut mask = 1;
        while mask < pof2 {
            let nd = nr ^ mask;
            let dst = if nd < rem { nd * 2 + 1 } else { nd + rem };
            sendrecv_exact(t, dst, recv, dst, tmp, tag)?;
            if dst < r {
                red.apply(tmp, recv);
            } else {
                red.apply(recv, tmp);
                recv.copy_from_slice(tmp);
            }
            mask <<= 1;
        }
    }
    if r < 2 * rem {
        if r % 2 == 1 {
            t.send(r - 1, tag, recv)?;
        } else {
            recv_exact(t, r + 1, tag, recv)?;
        }
    }
    Ok(())
}

/// Gathers `send` (same length everywhere) into `recv` at `root`, in rank order.
pub fn gather<T: Transport + ?Sized>(
    t: &T,
    root: usize,
    send: &[u8],
    recv: &mut [u8],
) -> Result<()> {
    let n = t.size();
    let k = send.len();
    check_root(t, "gather", root)?;
    if t.rank() == root {
        check_len("gather", "the receive buffer", recv.len(), n * k)?;
    }
    if n * k > GATHER_BINOMIAL_MAX {
        let (c, d) = equal_blocks(n, k);
        return gatherv(t, root, send, recv, &c, &d);
    }
    // Binomial: each member collects its subtree's blocks (in relative-rank order) and
    // passes them to its parent in one message.
    let (r, tag) = (t.rank(), t.next_tag());
    let rel = (r + n - root) % n;
    let mut tmp = vec![0u8; subtree(rel, n) * k];
    tmp[..k].copy_from_slice(send);
    let mut mask = 1;
    while mask < n {
        if rel & mask != 0 {
            return t.send((r + n - mask) % n, tag, &tmp);
        }
        let c = rel + mask;
        if c < n {
            let at = mask * k;
            recv_exact(t, (c + root) % n, tag, &mut tmp[at..at + subtree(c, n) * k])?;
        }
        mask <<= 1;
    }
    for i in 0..n {
        let a = (i + root) % n * k;
        recv[a..a + k].copy_from_slice(&tmp[i * k..(i + 1) * k]);
    }
    Ok(())
}

/// Gathers `send` of member i into `recv[displs[i]..][..counts[i]]` at `root` (counts and
/// displacements in bytes, significant at the root only).
pub fn gatherv<T: Transport + ?Sized>(
    t: &T,
    root: usize,
    send: &[u8],
    recv: &mut [u8],
    counts: &[usize],
    displs: &[usize],
) -> Result<()> {
    check_root(t, "gatherv", root)?;
    let (r, n, tag) = (t.rank(), t.size(), t.next_tag());
    if r != root {
        return t.send(root, tag, send);
    }
    let rg = ranges("gatherv", n, counts, displs, recv.len())?;
    check_len("gatherv", "the root's own block", send.len(), counts[r])?;
    recv[rg[r].clone()].copy_from_slice(send);
    for (i, g) in rg.into_iter().enumerate() {
        if i != r {
            recv_exact(t, i, tag, &mut recv[g])?;
        }
    }
    Ok(())
}

/// Scatters block i of `send` (at `root`, `n · recv.len()` bytes) to member i's `recv`.
pub fn scatter<T: Transport + ?Sized>(
    t: &T,
    root: usize,
    send: &[u8],
    recv: &mut [u8],
) -> Result<()> {
    let n = t.size();
    let k = recv.len();
    check_root(t, "scatter", root)?;
    if t.rank() == root {
        check_len("scatter", "the send buffer", send.len(), n * k)?;
    }
    if n * k > GATHER_BINOMIAL_MAX {
        let (c, d) = equal_blocks(n, k);
        return scatterv(t, root, send, &c, &d, recv);
    }
    // Binomial: each member receives its subtree's blocks (relative-rank order) from its
    // parent and forwards each child's part.
    let (r, tag) = (t.rank(), t.next_tag());
    let rel = (r + n - root) % n;
    let mut tmp = vec![0u8; subtree(rel, n) * k];
    let mut mask = 1;
    if rel == 0 {
        for i in 0..n {
            let a = (i + root) % n * k;
            tmp[i * k..(i + 1) * k].copy_from_slice(&send[a..a + k]);
        }
        while mask < n {
            mask <<= 1;
        }
    } else {
        while rel & mask == 0 {
            mask <<= 1;
        }
        recv_exact(t, (r + n - mask) % n, tag, &mut tmp)?;
    }
    mask >>= 1;
    while mask > 0 {
        let c = rel + mask;
        if c < n {
            let at = mask * k;
            t.send((c + root) % n, tag, &tmp[at..at + subtree(c, n) * k])?;
        }
        mask >>= 1;
    }
    recv.copy_from_slice(&tmp[..k]);
    Ok(())
}

/// Scatters `send[displs[i]..][..counts[i]]` (at `root`) to member i's `recv`.
pub fn scatterv<T: Transport + ?Sized>(
    t: &T,
    root: usize,
    send: &[u8],
    counts: &[usize],
    displs: &[usize],
    recv: &mut [u8],
) -> Result<()> {
    check_root(t, "scatterv", root)?;
    let (r, n, tag) = (t.rank(), t.size(), t.next_tag());
    if r != root {
        return recv_exact(t, root, tag, recv);
    }
    let rg = ranges("scatterv", n, counts, displs, send.len())?;
    check_len(
        "scatterv",
        "the root's receive buffer",
        recv.len(),
        counts[r],
    )?;
    for (i, g) in rg.into_iter().enumerate() {
        if i == r {
            recv.copy_from_slice(&send[g]);
        } else {
            t.send(i, tag, &send[g])?;
        }
    }
    Ok(())
}

/// Every member's `send` (same length) into everyone's `recv`, in rank order.
pub fn allgather<T: Transport + ?Sized>(t: &T, send: &[u8], recv: &mut [u8]) -> Result<()> {
    let (r, n) = (t.rank(), t.size());
    let k = send.len();
    check_len("allgather", "the receive buffer", recv.len(), n * k)?;
    let tag = t.next_tag();
    recv[r * k..(r + 1) * k].copy_from_slice(send);
    if n.is_power_of_two() && n * k <= ALLGATHER_RD_MAX {
        let mut mask = 1;
        while mask < n {
            let p = r ^ mask;
            let mine = (r & !(mask - 1)) * k;
            let theirs = (p & !(mask - 1)) * k;
            let (sb, rb) = split2(recv, mine..mine + mask * k, theirs..theirs + mask * k);
            sendrecv_exact(t, p, sb, p, rb, tag)?;
            mask <<= 1;
        }
        return Ok(());
    }
    if n * k <= ALLGATHER_RD_MAX {
        // Bruck: ⌈log₂ n⌉ steps for any n. `tmp` holds the blocks of ranks r, r+1, … in
        // that order; each step doubles it with the blocks of the rank `dist` ahead.
        let mut tmp = vec![0u8; n * k];
        tmp[..k].copy_from_slice(send);
        let mut dist = 1;
        while dist < n {
            let m = dist.min(n - dist);
            let (sb, rb) = split2(&mut tmp, 0..m * k, dist * k..(dist + m) * k);
            sendrecv_exact(t, (r + n - dist) % n, sb, (r + dist) % n, rb, tag)?;
            dist *= 2;
        }
        for i in 0..n {
            let a = (r + i) % n * k;
            recv[a..a + k].copy_from_slice(&tmp[i * k..(i + 1) * k]);
        }
        return Ok(());
    }
    let bl: Vec<_> = (0..n).map(|i| i * k..(i + 1) * k).collect();
    ring_allgather(t, recv, &bl, r, tag)
}

/// Member i's `send` into everyone's `recv[displs[i]..][..counts[i]]` (same counts and
/// displacements on every member; blocks must not overlap).
pub fn allgatherv<T: Transport + ?Sized>(
    t: &T,
    send: &[u8],
    recv: &mut [u8],
    counts: &[usize],
    displs: &[usize],
) -> Result<()> {
    let (r, n) = (t.rank(), t.size());
    let bl = ranges("allgatherv", n, counts, displs, recv.len())?;
    check_len("allgatherv", "the send buffer", send.len(), counts[r])?;
    let tag = t.next_tag();
    recv[bl[r].clone()].copy_from_slice(send);
    ring_allgather(t, recv, &bl, r, tag)
}

/// Block j of member i's `send` goes to block i of member j's `recv` (equal blocks).
pub fn alltoall<T: Transport + ?Sized>(t: &T, send: &[u8], recv: &mut [u8]) -> Result<()> {
    let n = t.size();
    if !send.len().is_multiple_of(n) {
        return Err(bad(
            "alltoall",
            format!("{} bytes do not split into {n} blocks", send.len()),
        ));
    }
    check_len("alltoall", "the receive buffer", recv.len(), send.len())?;
    let k = send.len() / n;
    let (c, d) = equal_blocks(n, k);
    alltoallv(t, send, &c, &d, recv, &c, &d)
}

/// Pairwise exchange with counts and displacements in bytes.
pub fn alltoallv<T: Transport + ?Sized>(
    t: &T,
    send: &[u8],
    scounts: &[usize],
    sdispls: &[usize],
    recv: &mut [u8],
    rcounts: &[usize],
    rdispls: &[usize],
) -> Result<()> {
    let (r, n, tag) = (t.rank(), t.size(), t.next_tag());
    let sr = ranges("alltoallv", n, scounts, sdispls, send.len())?;
    let rr = ranges("alltoallv", n, rcounts, rdispls, recv.len())?;
    check_len("alltoallv", "the block to itself", rr[r].len(), sr[r].len())?;
    recv[rr[r].clone()].copy_from_slice(&send[sr[r].clone()]);
    for s in 1..n {
        let (to, from) = ((r + s) % n, (r + n - s) % n);
        sendrecv_exact(
            t,
            to,
            &send[sr[to].clone()],
            from,
            &mut recv[rr[from].clone()],
            tag,
        )?;
    }
    Ok(())
}

/// Reduces `send` (n blocks of `recv.len()` bytes) and scatters block i to member i.
pub fn reduce_scatter_block<T: Transport + ?Sized, R: Reducer + ?Sized>(
    t: &T,
    send: &[u8],
    recv: &mut [u8],
    red: &R,
) -> Result<()> {
    let n = t.size();
    let counts = vec![recv.len(); n];
    reduce_scatter(t, send, recv, &counts, red)
}

/// Reduces `send` (blocks of `counts[i]` bytes, in order) and scatters block i to member
/// i's `recv`.
pub fn reduce_scatter<T: Transport + ?Sized, R: Reducer + ?Sized>(
    t: &T,
    send: &[u8],
    recv: &mut [u8],
    counts: &[usize],
    red: &R,
) -> Result<()> {
    const W: &str = "reduce_scatter";
    let (r, n) = (t.rank(), t.size());
    if counts.len() != n {
        return Err(bad(W, format!("{n} counts needed")));
    }
    for &c in counts {
        check_elems(W, red, c)?;
    }
    let total: usize = counts.iter().sum();
    check_len(W, "the send buffer", send.len(), total)?;
    check_len(W, "the receive buffer", recv.len(), counts[r])?;
    let mut bl = Vec::with_capacity(n);
    let mut at = 0;
    for &c in counts {
        bl.push(at..at + c);
        at += c;
    }
    if !red.commutative() {
        let mut all = vec![0u8; if r == 0 { total } else { 0 }];
        reduce(t, 0, send, &mut all, red)?;
        let displs: Vec<usize> = bl.iter().map(|b| b.start).collect();
        return scatterv(t, 0, &all, counts, &displs, recv);
    }
    let tag = t.next_tag();
    let mut buf = send.to_vec();
    if n > 1 {
        ring_reduce_scatter(t, &mut buf, &bl, red, tag)?;
    }
    recv.copy_from_slice(&buf[bl[r].clone()]);
    Ok(())
}

/// Inclusive prefix reduction: member r gets `send_0 ∘ … ∘ send_r`.
pub fn scan<T: Transport + ?Sized, R: Reducer + ?Sized>(
    t: &T,
    send: &[u8],
    recv: &mut [u8],
    red: &R,
) -> Result<()> {
    prefix(t, send, recv, red, true)
}

/// Exclusive prefix reduction: member r > 0 gets `send_0 ∘ … ∘ send_{r−1}`; member 0's
/// `recv` is left unchanged (undefined in MPI).
pub fn exscan<T: Transport + ?Sized, R: Reducer + ?Sized>(
    t: &T,
    send: &[u8],
    recv: &mut [u8],
    red: &R,
) -> Result<()> {
    prefix(t, send, recv, red, false)
}

fn prefix<T: Transport + ?Sized, R: Reducer + ?Sized>(
    t: &T,
    send: &[u8],
    recv: &mut [u8],
    red: &R,
    inclusive: bool,
) -> Result<()> {
    let w = if inclusive { "scan" } else { "exscan" };
    check_elems(w, red, send.len())?;
    check_len(w, "the receive buffer", recv.len(), send.len())?;
    let (r, n, tag) = (t.rank(), t.size(), t.next_tag());
    // `partial`: the reduction over this member's current hypercube group; `acc`: over the
    // lower members seen so far (exclusive) or including itself (inclusive).
    let mut partial = send.to_vec();
    let mut tmp = vec![0u8; send.len()];
    let mut acc: Option<Vec<u8>> = inclusive.then(|| send.to_vec());
    let mut mask = 1;
    while mask < n {
        let p = r ^ mask;
        if p < n {
            sendrecv_exact(t, p, &partial, p, &mut tmp, tag)?;
            if p < r {
                red.apply(&tmp, &mut partial);
                match acc.as_mut() {
                    Some(a) => red.apply(&tmp, a),
                    None => acc = Some(tmp.clone()),
                }
            } else {
                red.apply(&partial, &mut tmp);
                std::mem::swap(&mut partial, &mut tmp);
            }
        }
        mask <<= 1;
    }
    if let Some(a) = acc {
        recv.copy_from_slice(&a);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_in_whole_elements() {
        let b = blocks(40, 4, 3);
        assert_eq!(b, [0..16, 16..28, 28..40]);
        let b = blocks(8, 4, 5);
        assert_eq!(
            b.iter().map(|r| r.len()).collect::<Vec<_>>(),
            [4, 4, 0, 0, 0]
        );
    }

    #[test]
    fn subtrees_partition_the_ranks() {
        for n in 1..20 {
            assert_eq!(subtree(0, n), n);
            // Children of the root cover 1..n exactly.
            let mut m = 1;
            let mut covered = 1;
            while m < n {
                covered += subtree(m, n);
                m <<= 1;
            }
            assert_eq!(covered, n);
        }
    }
}
