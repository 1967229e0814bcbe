//! The port: send, receive and RecvComp over the adapter's rings (see the [driver
//! docs](super), "Send", "Receive", "RecvComp", "Errors and peer loss").
#![allow(unsafe_code)] // `unsafe impl Port` and `DmaBuffer::cpu_slice` for received payloads

use std::io::IoSlice;
use std::sync::Arc;

use fpga::desc::{self, RxCompletion};
use skifch::driver::{iov_total, Port, RawMessage, RawSeg, SendMode, Token};
use skifch::{Error, NetAddr, Result, Unreachable};

use super::super::hw::Hw;
use super::rx::{RxQueue, RxSnapshot};
use super::waiter::FpgaWaiter;
use super::{lock, FpgaDriver, HEALTH_EVERY, SENDS_PER_HEALTH_CHECK};

/// One open channel on the adapter: its own RX queue, the adapter's shared TX ring.
pub struct FpgaPort<H: Hw + Send + Sync + 'static> {
    pub(super) drv: Arc<FpgaDriver<H>>,
    pub(super) addr: NetAddr,
    pub(super) rx: Option<RxQueue<H::Dma>>,
    pub(super) broken: Option<Error>,
    pub(super) polls: u32,
    pub(super) refusals: u32,
    pub(super) sends: u32,
}

impl<H: Hw + Send + Sync + 'static> std::fmt::Debug for FpgaPort<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FpgaPort")
            .field("addr", &self.addr)
            .field("rx", &self.rx_snapshot())
            .field("broken", &self.broken)
            .finish()
    }
}

enum Poll {
    Empty,
    Fresh(RxCompletion),
}

impl<H: Hw + Send + Sync + 'static> FpgaPort<H> {
    /// The RX queue's indices (`None` never happens for an open port).
    pub fn rx_snapshot(&self) -> Option<RxSnapshot> {
        self.rx.as_ref().map(|q| q.snapshot())
    }

    /// The driver this port belongs to.
    pub fn driver(&self) -> &Arc<FpgaDriver<H>> {
        &self.drv
    }

    /// The error that broke this port, if any.
    pub fn broken(&self) -> Option<&Error> {
        self.broken.as_ref()
    }

    #[cold]
    fn corrupt(&mut self, e: Error) -> Error {
        self.broken = Some(e.clone());
        e
    }

    #[inline]
    fn usable(&self) -> Result<()> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        self.drv.check_fatal()
    }

    /// Looks at the completion slot at the queue's tail; a fresh entry is copied into a
    /// shadow and validated (not consumed).
    fn poll(&mut self) -> Result<Poll> {
        let Some(rx) = self.rx.as_ref() else {
            return Ok(Poll::Empty);
        };
        match rx.poll(&self.drv.limits) {
            Ok(Some(c)) => Ok(Poll::Fresh(c)),
            Ok(None) => Ok(Poll::Empty),
            Err(e) => Err(self.corrupt(e)),
        }
    }

    /// An empty poll: publish lazily-kept indices, look at the device now and then, report
    /// a lost peer or "would block".
    #[cold]
    fn nothing(&mut self) -> Error {
        let drv = &*self.drv;
        if let Some(rx) = self.rx.as_mut() {
            rx.publish(&drv.hw);
            // Idle: everything released goes back to its senders now.
            drv.return_credits(rx, true);
        }
        if let Err(e) = drv.drain_credits() {
            return e;
        }
        self.polls = self.polls.wrapping_add(1);
        if self.polls.is_multiple_of(HEALTH_EVERY) {
            if let Err(e) = drv.check_health() {
                return e;
            }
        }
        match drv.lost_peer() {
            Some(rank) => Error::PeerLost { rank },
            None => Error::WouldBlock,
        }
    }

    #[cold]
    fn refused(&mut self) -> Error {
        self.refusals = self.refusals.wrapping_add(1);
        if self.refusals.is_multiple_of(HEALTH_EVERY) {
            if let Err(e) = self.drv.check_health() {
                return e;
            }
        }
        Error::WouldBlock
    }

    /// A completion with a status bit: consumed, its span released, reported.
    #[cold]
    fn failed_message(&mut self, c: &RxCompletion) -> Error {
        let drv = &*self.drv;
        let st = c.status.get();
        let (len, src) = (c.len.get(), NetAddr::from(c.src.get()));
        if let Some(rx) = self.rx.as_mut() {
            if rx.release(&drv.hw, c.offset.get(), c.span()) {
                drv.return_credits(rx, false);
            }
        }
        if st & desc::rx_status::TOO_LARGE != 0 {
            Error::MessageTooLarge {
                len: len as u64,
                max: drv.max_msg as u32,
            }
        } else if st & desc::rx_status::TRUNCATED != 0 {
            Error::Corrupt(
                format!("fpga: a {len}-byte message from {src} was truncated in the network (its sender stopped or a route failed); dropped").into(),
            )
        } else {
            Error::Corrupt(
                format!("fpga: a {len}-byte message from {src} was damaged in the network (bad packet); dropped").into(),
            )
        }
    }
}

// SAFETY: segments lie in a validated completion's span, inside the space released to the
// device, which writes it only after RX_FREE passes it: in `complete` with its token (or in
// `Drop`, when nothing is held). The data ring lives as long as this port's queue.
unsafe impl<H: Hw + Send + Sync + 'static> Port for FpgaPort<H> {
    type Waiter = FpgaWaiter<H>;

    fn addr(&self) -> NetAddr {
        self.addr
    }

    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        self.usable()?;
        let drv = &*self.drv;
        if let Some(e) = drv.unreachable(dst) {
            return Err(e);
        }
        if drv.lost_peer() == Some(dst.rank()) {
            return Err(Error::PeerLost { rank: dst.rank() });
        }
        if drv.job.finalized(dst.rank()) {
            return Err(Error::Unreachable {
                addr: dst,
                why: Unreachable::Closed,
            });
        }
        let total = iov_total(iov)?;
        let want = match mode {
            SendMode::Whole if total > drv.max_msg => {
                return Err(Error::MessageTooLarge {
                    len: total as u64,
                    max: drv.max_msg as u32,
                })
            }
            SendMode::Whole => total,
            SendMode::Prefix => total.min(drv.max_msg),
        };
        let dst_raw = desc::net_addr(dst.rank() as u16, dst.port() as u16);
        if drv.ctl.is_some() {
            drv.drain_credits()?;
        }
        let r = drv.send_credited(dst, dst_raw, self.addr.port() as u16, iov, want, mode);
        match r {
            Ok(n) => {
                self.sends = self.sends.wrapping_add(1);
                if self.sends.is_multiple_of(SENDS_PER_HEALTH_CHECK) {
                    // A link may have failed under a stream that never blocks (the
                    // device drops unroutable messages at the source, NO_ROUTE).
                    let _ = drv.check_health();
                }
                Ok(n)
            }
            Err(Error::WouldBlock) => Err(self.refused()),
            Err(Error::Corrupt(m)) => Err(drv.set_fatal(Error::Corrupt(m))),
            Err(e) => Err(e),
        }
    }

    fn recv_into(&mut self, out: &mut RawMessage) -> Result<()> {
        self.usable()?;
        let c = match self.poll()? {
            Poll::Empty => return Err(self.nothing()),
            Poll::Fresh(c) => c,
        };
        let drv = &*self.drv;
        let Some(rx) = self.rx.as_mut() else {
            return Err(Error::WouldBlock);
        };
        let (off, len, span) = (c.offset.get(), c.len.get() as u64, c.span());
        rx.consume(&c, drv.ctl.is_some());
        if rx.tail - rx.pub_tail >= rx.entries / 4 {
            rx.publish(&drv.hw);
            drv.return_credits(rx, false);
        }
        if c.status.get() != 0 {
            return Err(self.failed_message(&c));
        }
        let parts = desc::ring_split(off, len, rx.bytes);
        let mut count = 0;
        for (i, &(start, n)) in parts.iter().enumerate() {
            if i > 0 && n == 0 {
                break;
            }
            // SAFETY: `start..start + n` lies in the data ring (`ring_split` of a validated
            // completion) inside the message's span, which the device does not write until
            // RX_FREE passes it — only after `complete` with this message's token.
            let s = unsafe { rx.data.cpu_slice(start as usize, n as usize) };
            match s {
                Ok(s) => {
                    out.segs[i] = RawSeg {
                        ptr: s.as_ptr(),
                        len: s.len(),
                    }
                }
                Err(e) => {
                    let e = Error::Corrupt(format!("fpga RX queue: {e}").into());
                    return Err(self.corrupt(e));
                }
            }
            count += 1;
        }
        out.count = count;
        out.len = len as usize;
        out.src = NetAddr::from(c.src.get());
        out.token = Token { a: off, b: span };
        Ok(())
    }

    fn ready(&mut self) -> Result<bool> {
        self.usable()?;
        match self.poll()? {
            Poll::Fresh(_) => Ok(true),
            Poll::Empty => match self.nothing() {
                Error::WouldBlock => Ok(false),
                e => Err(e),
            },
        }
    }

    unsafe fn complete(&mut self, token: Token) {
        let drv = &*self.drv;
        if let Some(rx) = self.rx.as_mut() {
            if rx.release(&drv.hw, token.a, token.b) {
                drv.return_credits(rx, false);
            }
        }
    }

    fn waiter(&self) -> FpgaWaiter<H> {
        FpgaWaiter {
            drv: self.drv.clone(),
        }
    }
}

impl<H: Hw + Send + Sync + 'static> Drop for FpgaPort<H> {
    fn drop(&mut self) {
        if let Some(mut rx) = self.rx.take() {
            rx.publish(&self.drv.hw);
            self.drv.return_credits(&mut rx, true);
            // A rank dying by a panic is lost, not closing its ports (as on shm).
            if !std::thread::panicking() {
                self.drv.notify_port_state(rx.port, false);
                rx.was_closed = true;
            }
            // The queue keeps its state: a port opened again continues where this one stopped.
            let q = rx.port as usize;
            *lock(&self.drv.queues[q]) = Some(rx);
        }
    }
}
