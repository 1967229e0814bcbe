//! The MsgRate wire helpers: [`Inbox`] (receive, reassemble and check messages) and
//! [`send_msg`] (send one whole, as partial sends if needed), with the test loops' bodies.

use std::io::IoSlice;

use skifch::{Channel, Error, NetAddr, Port};

use super::DATA_PORT;
use crate::check::{sum64_whole, Sum64};
use crate::{BenchError, Result, Spinner};

/// Receive side: reassembles messages that arrived as several partial sends (per sender:
/// fragments of one sender never interleave with each other) and checks their sums.
pub struct Inbox {
    size: usize,
    expect: u64,
    /// Per sending rank: the running sum and bytes so far of its current message.
    acc: Vec<(Sum64, usize)>,
    /// Senders with a message in progress (fragments received, not all of it).
    pending: usize,
}

impl Inbox {
    /// An inbox for messages from `n` ranks.
    pub fn new(n: u32) -> Self {
        Inbox {
            size: 0,
            expect: 0,
            acc: vec![(Sum64::default(), 0); n as usize],
            pending: 0,
        }
    }

    /// Expects `size`-byte messages whose [`sum64`](crate::check::sum64) is `expect`.
    pub fn start(&mut self, size: usize, expect: u64) {
        self.size = size;
        self.expect = expect;
        self.acc.fill((Sum64::default(), 0));
        self.pending = 0;
    }

    /// A message that is not a whole, contiguous data message with no fragment of any
    /// sender pending (one that wraps the lane end, a fragment of a partial send; from
    /// `src`, in segments `a` and `b`): summed in place into its sender's running sum, then
    /// reassembly bookkeeping and the same checks as the fast path. `true` when it completed
    /// a message. Out of line and cold. Never copied out: copying out the messages that wrap
    /// (one in 64 at 16 KiB in 1 MiB lanes, one in 252 at 4 KiB) made the whole stream
    /// bimodal, at times a third as fast (`docs/results-2026-11-22-v5`).
    #[cold]
    #[inline(never)]
    fn piece(&mut self, src: NetAddr, a: &[u8], b: &[u8]) -> Result<bool> {
        let len = a.len() + b.len();
        let acc = match self.acc.get_mut(src.rank() as usize) {
            Some(acc) if src.port() == DATA_PORT => acc,
            _ => {
                return Err(BenchError::Check(format!(
                    "a message from {src}, which is not a data port of this job"
                )))
            }
        };
        acc.0.update(a);
        acc.0.update(b);
        if acc.1 == 0 {
            self.pending += 1;
        }
        acc.1 += len;
        if acc.1 < self.size {
            return Ok(false);
        }
        let (sum, got) = (acc.0.finish(), acc.1);
        *acc = (Sum64::default(), 0);
        self.pending -= 1;
        if got != self.size {
            return Err(BenchError::Check(format!(
                "from {src}: {got} bytes where a {}-byte message was due",
                self.size
            )));
        }
        if sum != self.expect {
            return Err(self.bad_sum(src, sum));
        }
        Ok(true)
    }

    #[cold]
    fn bad_sum(&self, src: NetAddr, sum: u64) -> BenchError {
        BenchError::Check(format!(
            "from {src}: payload sum {sum:#x}, expected {:#x}",
            self.expect
        ))
    }

    /// Receives `count` whole messages (from anyone).
    #[inline(always)]
    pub fn take<P: Port>(&mut self, ch: &Channel<P>, count: u64, patience: u32) -> Result<()> {
        let mut done = 0;
        let (size, expect) = (self.size, self.expect);
        // Made at the first idle round of a wait, dropped on progress.
        let mut sp: Option<Spinner> = None;
        while done < count {
            let m = match ch.try_recv() {
                Ok(m) => m,
                Err(Error::WouldBlock) => {
                    sp.get_or_insert_with(|| Spinner::new(patience)).idle()?;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            sp = None;
            // Fast path, the shape of the raw ring's consumer: a whole message in one
            // segment from a data port, with no fragment of any sender pending. Every byte
            // is still summed and checked; only the reassembly bookkeeping is skipped.
            if m.len() == size && m.src().port() == DATA_PORT && self.pending == 0 {
                if let Some(p) = m.as_contiguous() {
                    let sum = sum64_whole(p);
                    let src = m.src();
                    m.complete();
                    if sum != expect {
                        return Err(self.bad_sum(src, sum));
                    }
                    done += 1;
                    continue;
                }
            }
            // Anything else: a message that wraps the lane end, a fragment of a partial send.
            // No drop glue across the call (a panic there leaks the guard, and the job ends):
            // a guard that must be dropped on unwinding lives in memory, on every receive.
            let m = std::mem::ManuallyDrop::new(m);
            let mut segs = m.segments();
            let (a, b) = (segs.next().unwrap_or(&[]), segs.next().unwrap_or(&[]));
            let piece = self.piece(m.src(), a, b);
            std::mem::ManuallyDrop::into_inner(m).complete();
            if piece? {
                done += 1;
            }
        }
        Ok(())
    }
}

/// Sends `msg` whole, as several partial sends if needed, spinning while the lane is full
/// (the MsgRate sender's loop body).
/// The first attempt is inlined into the test loops; the rest is out of line.
#[inline(always)]
pub fn send_msg<P: Port>(ch: &Channel<P>, dst: NetAddr, msg: &[u8], patience: u32) -> Result<()> {
    match ch.send(dst, &[IoSlice::new(msg)]) {
        Ok(k) if k == msg.len() => Ok(()),
        Ok(k) => send_rest(ch, dst, msg, patience, k),
        Err(Error::WouldBlock) => send_rest(ch, dst, msg, patience, 0),
        Err(e) => Err(e.into()),
    }
}

/// [`send_msg`] after a first attempt that sent only `sent` bytes (maybe none: the lane
/// was full); the error, if any, is not passed on: an error value passed to a call would
/// live in memory on every send.
#[inline(never)]
fn send_rest<P: Port>(
    ch: &Channel<P>,
    dst: NetAddr,
    msg: &[u8],
    patience: u32,
    sent: usize,
) -> Result<()> {
    let mut off = sent;
    let mut sp: Option<Spinner> = None;
    while off < msg.len() {
        match ch.send(dst, &[IoSlice::new(&msg[off..])]) {
            Ok(k) => {
                off += k;
                sp = None;
            }
            Err(Error::WouldBlock) => sp.get_or_insert_with(|| Spinner::new(patience)).idle()?,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The MsgRate sender's loop, in a function of its own: inlined into the pass that
/// dispatches every test, its registers were shared with the other tests' code.
#[inline(never)]
pub(super) fn send_n<P: Port>(
    ch: &Channel<P>,
    to: NetAddr,
    msg: &[u8],
    n: u64,
    patience: u32,
) -> Result<()> {
    for _ in 0..n {
        send_msg(ch, to, msg, patience)?;
    }
    Ok(())
}

/// The MsgRate receiver's loop, on its own for the same reason as [`send_n`].
#[inline(never)]
pub(super) fn take_n<P: Port>(
    inbox: &mut Inbox,
    ch: &Channel<P>,
    n: u64,
    patience: u32,
) -> Result<()> {
    inbox.take(ch, n, patience)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{pattern, sum64};
    use skifch::Driver;
    use skifch_drivers::inproc as local;
    use skifch_drivers::shm::Params;

    type LocalPort = <local::InprocDriver as Driver>::Port;

    /// Two ranks in one process, one port each, 4 KiB lanes: the jobs and the two channels.
    fn pair() -> (
        Vec<local::InprocJob>,
        Channel<LocalPort>,
        Channel<LocalPort>,
    ) {
        let jobs = local::job(Params {
            nranks: 2,
            nports: 1,
            lane_bytes: 4096,
        })
        .unwrap();
        let (a, b) = (jobs[0].open(0).unwrap(), jobs[1].open(0).unwrap());
        (jobs, a, b)
    }

    #[test]
    fn messages_that_wrap_are_checked_in_place() {
        let good = pattern(1400);
        let mut bad = good.clone();
        // The flipped byte is in the second segment of a message that wraps.
        bad[1399] ^= 1;
        // Which of 24 alternating good and bad messages wrap the 4 KiB lane's end: seen on a
        // raw channel (the lane layout is deterministic).
        let (_j, a, b) = pair();
        let mut wraps = Vec::new();
        for i in 0..24 {
            send_msg(&a, b.addr(), if i % 2 == 0 { &good } else { &bad }, 1).unwrap();
            let m = b.try_recv().unwrap();
            if m.segments().count() == 2 {
                wraps.push(i);
            }
        }
        assert!(wraps.iter().any(|i| i % 2 == 0) && wraps.iter().any(|i| i % 2 == 1));
        // The same sequence through the inbox: every good one passes, every bad one is caught.
        let (_j, a, b) = pair();
        let mut inbox = Inbox::new(2);
        inbox.start(1400, sum64(&good));
        for i in 0..24 {
            send_msg(&a, b.addr(), if i % 2 == 0 { &good } else { &bad }, 1).unwrap();
            let r = inbox.take(&b, 1, 1);
            assert_eq!(
                r.is_ok(),
                i % 2 == 0,
                "message {i} (wrapping: {wraps:?}): {r:?}"
            );
        }
        assert!(matches!(b.try_recv(), Err(Error::WouldBlock)));
    }

    #[test]
    fn wrong_data_is_detected() {
        let mut inbox = Inbox::new(2);
        let (_j, a, b) = pair();
        let good = pattern(16);
        inbox.start(16, sum64(&good));
        let mut bad = good.clone();
        bad[3] ^= 1;
        send_msg(&a, b.addr(), &good, 1).unwrap();
        inbox.take(&b, 1, 1).unwrap();
        // In two pieces (as partial sends deliver it): reassembled and checked.
        a.send_whole(b.addr(), &[IoSlice::new(&good[..5])]).unwrap();
        a.send_whole(b.addr(), &[IoSlice::new(&good[5..])]).unwrap();
        inbox.take(&b, 1, 1).unwrap();
        send_msg(&a, b.addr(), &bad, 1).unwrap();
        assert!(matches!(inbox.take(&b, 1, 1), Err(BenchError::Check(_))));
        a.send_whole(b.addr(), &[IoSlice::new(&bad[..5])]).unwrap();
        a.send_whole(b.addr(), &[IoSlice::new(&bad[5..])]).unwrap();
        assert!(matches!(inbox.take(&b, 1, 1), Err(BenchError::Check(_))));
        // A message longer than the size in force is caught too.
        send_msg(&a, b.addr(), &pattern(24), 1).unwrap();
        assert!(matches!(inbox.take(&b, 1, 1), Err(BenchError::Check(_))));
        assert!(matches!(b.try_recv(), Err(Error::WouldBlock)));
    }
}
