//! `struct SkifCh`: a channel as C holds it (spec: "The core: three calls").
//!
//! A handle is never freed: `SkifCh_Close` drops the channel inside it and marks it closed,
//! and the next `SkifCh_Open` of the same port reuses it. So a call on a closed handle
//! reads valid memory and fails with `EBADF` instead of acting on freed memory, and the
//! memory kept is one small struct per port ever opened. Like a file descriptor number,
//! a stale handle becomes usable again once its port is reopened (the same pointer is
//! returned).
#![allow(unsafe_code)] // completes raw messages on the C caller's behalf; handle slots

use std::collections::VecDeque;
use std::io::IoSlice;
use std::ptr::NonNull;
use std::time::Duration;

use skifch::driver::{RawMessage, Token};
use skifch::{Channel, Error, NetAddr, Result};
use skifch_drivers::DefaultPort;

/// `magic` of an open handle.
const LIVE: u64 = 0x534B_4946_4348_4F4B; // "SKIFCHOK"
/// `magic` of a closed one.
const CLOSED: u64 = 0x534B_4946_4348_4344; // "SKIFCHCD"

/// One channel of the C ABI (opaque `struct SkifCh` in `skifch.h`).
///
/// Used by one thread at a time (the C caller's duty, stated in the header); the hot calls
/// take no lock. Received messages are completed oldest first, as in the paper: one
/// `SkifCh_RecvComp` per `SkifCh_Recv`.
pub struct SkifCh {
    /// [`LIVE`] or [`CLOSED`]; anything else is not a handle of ours.
    magic: u64,
    /// `None` once closed.
    open: Option<Open>,
}

struct Open {
    ch: Channel<DefaultPort>,
    /// Tokens of received, not yet completed messages, oldest first.
    held: VecDeque<Token>,
}

/// A handle's memory, kept by the job state for reuse (see the module docs).
pub(crate) struct Slot(NonNull<SkifCh>);

// SAFETY: a slot is only dereferenced under the C ABI's contract (one thread per handle)
// or while it is closed and the job state's lock is held (`install`).
unsafe impl Send for Slot {}

/// Puts `ch` in `slot` (a closed handle of the same port) or in a new handle, and returns
/// the pointer C gets.
pub(crate) fn install(slot: &mut Option<Slot>, ch: Channel<DefaultPort>) -> *mut SkifCh {
    let open = Some(Open {
        ch,
        held: VecDeque::new(),
    });
    match slot {
        Some(Slot(p)) => {
            // SAFETY: the slot's memory is leaked, so valid for the process's life. The port
            // was closed (the driver just opened it again), so no C call may legally be using
            // the handle; the job lock the caller holds orders this against other opens.
            let h = unsafe { p.as_mut() };
            debug_assert!(h.magic == CLOSED && h.open.is_none());
            h.open = open;
            h.magic = LIVE;
            p.as_ptr()
        }
        None => {
            let p = NonNull::from(Box::leak(Box::new(SkifCh { magic: LIVE, open })));
            *slot = Some(Slot(p));
            p.as_ptr()
        }
    }
}

fn bad_handle(call: &'static str) -> Error {
    // The core has no "bad handle" variant: it never sees handles; EBADF is the C ABI's.
    Error::os(call, std::io::Error::from_raw_os_error(libc::EBADF))
}

impl SkifCh {
    #[inline(always)]
    fn live(&self, call: &'static str) -> Result<&Open> {
        match &self.open {
            Some(o) if self.magic == LIVE => Ok(o),
            _ => Err(bad_handle(call)),
        }
    }

    #[inline(always)]
    fn live_mut(&mut self, call: &'static str) -> Result<&mut Open> {
        match &mut self.open {
            Some(o) if self.magic == LIVE => Ok(o),
            _ => Err(bad_handle(call)),
        }
    }

    /// This channel's address.
    pub fn addr(&self) -> Result<NetAddr> {
        Ok(self.live("SkifCh_MyAddr on a closed channel")?.ch.addr())
    }

    /// Spec "Send": one message from a prefix of `iov`.
    #[inline]
    pub fn send(&self, dst: NetAddr, iov: &[IoSlice<'_>]) -> Result<usize> {
        self.live("SkifCh_Send on a closed channel")?
            .ch
            .send(dst, iov)
    }

    /// Spec "Recv": the next message in place; it stays valid until its RecvComp.
    #[inline]
    pub fn recv(&mut self) -> Result<RawMessage> {
        let o = self.live_mut("SkifCh_Recv on a closed channel")?;
        let m = o.ch.try_recv_raw()?;
        o.held.push_back(m.token);
        Ok(m)
    }

    /// Spec "RecvComp": completes the oldest received message.
    ///
    /// # Safety
    /// Nothing reads that message's segments after this call.
    #[inline]
    pub unsafe fn complete_oldest(&mut self) -> Result<()> {
        let o = self.live_mut("SkifCh_RecvComp on a closed channel")?;
        let token = o.held.pop_front().ok_or_else(|| {
            Error::InvalidArgument(
                "SkifCh_RecvComp without a received, not yet completed message".into(),
            )
        })?;
        // SAFETY: the token came from `try_recv_raw` on this channel and leaves `held` here,
        // so it is completed once; the caller no longer reads its segments.
        unsafe { o.ch.complete_raw(token) };
        Ok(())
    }

    /// `SkifCh_Wait`: until a message is ready (`None`: forever), per the channel's policy.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        self.live("SkifCh_Wait on a closed channel")?
            .ch
            .wait(timeout)
    }

    /// `SkifCh_Close`: completes every message still held, then closes the port; the
    /// handle stays allocated, marked closed.
    ///
    /// # Safety
    /// Nothing reads the segments of messages received on this channel after this call.
    pub unsafe fn close(&mut self) -> Result<()> {
        let call = "SkifCh_Close of a closed channel";
        if self.magic != LIVE {
            return Err(bad_handle(call));
        }
        let mut o = self.open.take().ok_or_else(|| bad_handle(call))?;
        self.magic = CLOSED;
        while let Some(token) = o.held.pop_front() {
            // SAFETY: forwarded contract; each held token is completed once.
            unsafe { o.ch.complete_raw(token) };
        }
        drop(o);
        crate::job::channel_closed();
        Ok(())
    }
}
