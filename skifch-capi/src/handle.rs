//! `struct SkifCh`: a channel as C holds it (spec: "The core: three calls").
#![allow(unsafe_code)] // completes raw messages on the C caller's behalf (RecvComp, Close)

use std::collections::VecDeque;
use std::io::IoSlice;
use std::time::Duration;

use skifch::driver::{RawMessage, Token};
use skifch::{Channel, Error, NetAddr, Result};
use skifch_drivers::DefaultPort;

/// One open channel of the C ABI (opaque `struct SkifCh` in `skifch.h`).
///
/// Used by one thread at a time (the C caller's duty, stated in the header); the hot calls
/// take no lock. Received messages are completed oldest first, as in the paper: one
/// `SkifCh_RecvComp` per `SkifCh_Recv`.
pub struct SkifCh {
    ch: Channel<DefaultPort>,
    /// Tokens of received, not yet completed messages, oldest first.
    held: VecDeque<Token>,
}

impl SkifCh {
    pub(crate) fn new(ch: Channel<DefaultPort>) -> Self {
        SkifCh {
            ch,
            held: VecDeque::new(),
        }
    }

    /// This channel's address.
    pub fn addr(&self) -> NetAddr {
        self.ch.addr()
    }

    /// Spec "Send": one message from a prefix of `iov`.
    #[inline]
    pub fn send(&self, dst: NetAddr, iov: &[IoSlice<'_>]) -> Result<usize> {
        self.ch.send(dst, iov)
    }

    /// Spec "Recv": the next message in place; it stays valid until its RecvComp.
    #[inline]
    pub fn recv(&mut self) -> Result<RawMessage> {
        let m = self.ch.try_recv_raw()?;
        self.held.push_back(m.token);
        Ok(m)
    }

    /// Spec "RecvComp": completes the oldest received message.
    ///
    /// # Safety
    /// Nothing reads that message's segments after this call.
    #[inline]
    pub unsafe fn complete_oldest(&mut self) -> Result<()> {
        let token = self.held.pop_front().ok_or_else(|| {
            Error::InvalidArgument(
                "SkifCh_RecvComp without a received, not yet completed message".into(),
            )
        })?;
        // SAFETY: the token came from `try_recv_raw` on this channel and leaves `held` here,
        // so it is completed once; the caller no longer reads its segments.
        unsafe { self.ch.complete_raw(token) };
        Ok(())
    }

    /// `SkifCh_Wait`: until a message is ready (`None`: forever), per the channel's policy.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        self.ch.wait(timeout)
    }

    /// `SkifCh_Close`: completes every message still held, then closes the port.
    ///
    /// # Safety
    /// Nothing reads the segments of messages received on this channel after this call.
    pub unsafe fn close(mut self: Box<Self>) {
        while !self.held.is_empty() {
            // SAFETY: forwarded contract; `held` is non-empty so this cannot fail.
            let _ = unsafe { self.complete_oldest() };
        }
    }
}

impl Drop for SkifCh {
    fn drop(&mut self) {
        crate::job::channel_closed();
    }
}
