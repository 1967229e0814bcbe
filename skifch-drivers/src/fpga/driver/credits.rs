//! Software credit flow control and port-state notices, both carried by the credit queue
//! (see the [driver docs](super), "Credits").

use std::io::IoSlice;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use fpga::desc;
use fpga::regs;
use skifch::driver::SendMode;
use skifch::wait::Backoff;
use skifch::{Error, NetAddr, Result, Unreachable};

use super::super::hw::Hw;
use super::rx::RxQueue;
use super::{lock, FpgaDriver};

impl<H: Hw + Send + Sync + 'static> FpgaDriver<H> {
    /// A send within the sender's credit at `dst` (see the module docs, "Credits"): at most
    /// `win_bytes` of spans and `win_msgs` messages not yet returned by the receiver.
    pub(super) fn send_credited(
        &self,
        dst: NetAddr,
        dst_raw: u32,
        src_port: u16,
        iov: &[IoSlice<'_>],
        mut want: usize,
        mode: SendMode,
    ) -> Result<usize> {
        let span = |n: usize| (n as u64).next_multiple_of(regs::RX_ALIGN as u64);
        let mut tx = lock(&self.tx);
        let d = (dst.rank() * self.ports + dst.port()) as usize;
        if self.ctl.is_some() {
            if tx.closed.get(d) == Some(&true) {
                return Err(Error::Unreachable {
                    addr: dst,
                    why: Unreachable::Closed,
                });
            }
            let (ub, um) = tx.used.get(d).copied().unwrap_or((u64::MAX, u32::MAX));
            let avail = self.win_bytes.saturating_sub(ub);
            if um >= self.win_msgs {
                return Err(Error::WouldBlock);
            }
            if span(want) > avail {
                let least = span(want)
                    .min(self.win_bytes / 8)
                    .max(regs::RX_ALIGN as u64);
                if mode == SendMode::Whole || avail < least {
                    return Err(Error::WouldBlock);
                }
                want = avail as usize; // a multiple of RX_ALIGN below `want`
            }
        }
        let n = tx.send(&self.hw, dst_raw, src_port, iov, want, mode)?;
        if self.ctl.is_some() {
            if let Some(u) = tx.used.get_mut(d) {
                u.0 += span(n);
                u.1 += 1;
            }
        }
        Ok(n)
    }

    /// Returns the credits `rx` owes its senders: all of them when `idle`, else those
    /// past a quarter of a window. A credit message that does not fit the TX ring now
    /// stays owed (sent at the next chance).
    pub(super) fn return_credits(&self, rx: &mut RxQueue<H::Dma>, idle: bool) {
        if rx.owed_msgs == 0 || self.ctl.is_none() {
            return;
        }
        for node in 0..rx.owed.len() {
            let (b, m) = rx.owed[node];
            if m == 0 || !(idle || b >= self.win_bytes / 4 || m >= (self.win_msgs / 4).max(1)) {
                continue;
            }
            let (b, m) = (b.min(u32::MAX as u64), m.min(u16::MAX as u32));
            if self
                .send_ctl(node as u32, rx.port, m as u16, b as u32)
                .is_ok()
            {
                rx.owed[node].0 -= b;
                rx.owed[node].1 -= m;
                rx.owed_msgs -= m;
            }
        }
    }

    /// Sends a credit-queue message `(port: u16, messages: u16, bytes: u32)` to `node`
    /// (outside the credit windows: the credit queue is drained by every send and poll).
    pub(super) fn send_ctl(&self, node: u32, port: u32, msgs: u16, bytes: u32) -> Result<usize> {
        let ctl_port = self.ports as u16;
        let mut msg = [0u8; 8];
        msg[0..2].copy_from_slice(&(port as u16).to_le_bytes());
        msg[2..4].copy_from_slice(&msgs.to_le_bytes());
        msg[4..8].copy_from_slice(&bytes.to_le_bytes());
        lock(&self.tx).send(
            &self.hw,
            desc::net_addr(node as u16, ctl_port),
            ctl_port,
            &[IoSlice::new(&msg)],
            msg.len(),
            SendMode::Whole,
        )
    }

    /// Tells every live node that `port` here was closed (`open == false`) or opened
    /// again: a credit-queue message with no credit (`messages == 0`, `bytes` = 0 closed,
    /// 1 open). Senders then refuse sends to a closed port with `Unreachable` (`Closed`), as
    /// on shm; what was sent before the notice arrived waits in the port's queue. Best
    /// effort and bounded: a full TX ring is retried for a moment, then that node is skipped.
    pub(super) fn notify_port_state(&self, port: u32, open: bool) {
        if self.ctl.is_none() || self.fatal.load(Ordering::Relaxed) {
            return;
        }
        let lost = self.lost_peer();
        let deadline = Instant::now() + Duration::from_millis(200);
        let mut backoff = Backoff::new();
        for node in (0..self.size).filter(|&n| Some(n) != lost && !self.job.finalized(n)) {
            if node == self.rank {
                // This node's own ports learn it at once (no notice through the network).
                let d = (node * self.ports + port) as usize;
                if let Some(c) = lock(&self.tx).closed.get_mut(d) {
                    *c = !open;
                }
                continue;
            }
            backoff.reset();
            loop {
                match self.send_ctl(node, port, 0, u32::from(open)) {
                    Err(Error::WouldBlock) if Instant::now() < deadline => {
                        let _ = self.drain_credits();
                        backoff.snooze();
                    }
                    _ => break,
                }
            }
        }
    }

    /// Takes the credit messages that arrived and gives their credit back to the senders
    /// (any thread; one at a time). A bad credit message is a device fault.
    pub(super) fn drain_credits(&self) -> Result<()> {
        let Some(ctl) = &self.ctl else {
            return Ok(());
        };
        let Ok(mut q) = ctl.try_lock() else {
            return Ok(()); // another thread is at it
        };
        let mut took = false;
        loop {
            let c = match q.poll(&self.limits) {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => return Err(self.set_fatal(e)),
            };
            let (off, len, src) = (c.offset.get(), c.len.get(), c.src.get());
            q.consume(&c, false);
            took = true;
            let mut b = [0u8; 8];
            let pos = (off & (q.bytes - 1)) as usize;
            let ok = c.status.get() == 0 && len == 8 && q.data.read(pos, &mut b).is_ok();
            q.release(&self.hw, off, c.span());
            let port = u16::from_le_bytes([b[0], b[1]]) as u32;
            let msgs = u16::from_le_bytes([b[2], b[3]]) as u32;
            let bytes = u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as u64;
            let node = desc::addr_node(src);
            let d = (node * self.ports + port) as usize;
            let mut tx = lock(&self.tx);
            if ok && msgs == 0 && port < self.ports && bytes <= 1 && d < tx.closed.len() {
                // A port-state notice: the owner closed (0) or reopened (1) the port.
                tx.closed[d] = bytes == 0;
                continue;
            }
            match tx.used.get_mut(d) {
                Some(u) if ok && port < self.ports && u.0 >= bytes && u.1 >= msgs => {
                    u.0 -= bytes;
                    u.1 -= msgs;
                }
                _ => {
                    return Err(self.set_fatal(Error::Corrupt(
                        format!("fpga credit queue: a bad credit message from node {node} (port {port}, {msgs} messages, {bytes} bytes)").into(),
                    )))
                }
            }
        }
        if took {
            q.publish(&self.hw);
        }
        Ok(())
    }
}
