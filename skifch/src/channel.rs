//! Channels and received-message guards: the spec's three calls, Rust-shaped
//! (spec: "The core: three calls"; extensions: sender address, any-order completion, waiting).
#![allow(unsafe_code)] // the guard tier: turns driver pointers into borrows (see `Port`'s safety contract)

use std::cell::{Cell, UnsafeCell};
use std::io::IoSlice;
use std::mem::ManuallyDrop;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::driver::{iov_total, Port, RawMessage, RawSeg, Reserved, SendMode, Token};
use crate::wait::{wait_until, wait_until_by, WaitPolicy};
use crate::{Error, NetAddr, Result};

/// One open channel (a port of this rank): send to any address, receive what is sent to
/// this one. Like a TCP port, each independent part of a program opens its own.
///
/// A `Channel` is used by one thread at a time (`Send`, not `Sync`); for several threads
/// on one channel use [`SharedChannel`]. Several [`Message`]s may be held at once and
/// completed in any order.
///
/// # Examples
/// An in-process job of two ranks (threads), rank 0 sends, rank 1 receives in place:
/// ```
/// use skifch::{local, NetAddr};
/// use std::io::IoSlice;
/// let out = local::run(2, |job| {
///     let ch = job.open(0)?;
///     if job.rank() == 0 {
///         ch.send_all(NetAddr::new(1, 0), &[IoSlice::new(b"hello "), IoSlice::new(b"world")])?;
///         Ok(Vec::new())
///     } else {
///         let msg = ch.recv()?;                 // blocks (fixed spin, then sleep)
///         assert_eq!(msg.src(), NetAddr::new(0, 0));
///         Ok(msg.to_vec())                      // dropping `msg` = RecvComp
///     }
/// }).unwrap();
/// assert_eq!(out[1], b"hello world");
/// ```
pub struct Channel<P: Port> {
    port: UnsafeCell<P>,
    waiter: P::Waiter,
    addr: NetAddr,
    policy: Cell<WaitPolicy>,
}

impl<P: Port> Channel<P> {
    /// Wraps an open port.
    pub fn new(port: P, policy: WaitPolicy) -> Self {
        Channel {
            waiter: port.waiter(),
            addr: port.addr(),
            port: UnsafeCell::new(port),
            policy: Cell::new(policy),
        }
    }

    /// The port, for the duration of one driver call. Two of these never overlap: a
    /// `Channel` is used by one thread (`!Sync`), driver calls never call back into the
    /// channel or into user code, and no method keeps the reference across a user callback.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    fn port(&self) -> &mut P {
        // SAFETY: see above — the only `&mut P` alive at any time.
        unsafe { &mut *self.port.get() }
    }

    /// This channel's address (give it to peers so they can send here).
    pub fn addr(&self) -> NetAddr {
        self.addr
    }

    /// The waiting policy of blocking calls on this channel.
    pub fn wait_policy(&self) -> WaitPolicy {
        self.policy.get()
    }

    /// Changes the waiting policy of this channel.
    pub fn set_wait_policy(&self, p: WaitPolicy) {
        self.policy.set(p)
    }

    /// Spec "Send": sends one message made of a prefix of `iov`; returns its length, which
    /// may be less than the total (advance and call again). [`Error::WouldBlock`] when
    /// nothing can be sent now: nothing was consumed, retry later.
    #[inline(always)]
    pub fn send(&self, dst: NetAddr, iov: &[IoSlice<'_>]) -> Result<usize> {
        self.port().send(dst, iov, SendMode::Prefix)
    }

    /// Sends all of `iov` as one message or nothing: `WouldBlock` while it does not fit,
    /// [`Error::MessageTooLarge`] if it can never fit the receiver.
    #[inline]
    pub fn send_whole(&self, dst: NetAddr, iov: &[IoSlice<'_>]) -> Result<()> {
        self.port().send(dst, iov, SendMode::Whole).map(|_| ())
    }

    /// [`Port::try_send_word`]: `word` then `data` as one message if the driver can send it
    /// at once; `false`: nothing was sent, send it with [`Channel::send_whole`].
    #[inline(always)]
    pub fn try_send_word(&self, dst: NetAddr, word: u64, data: &[u8]) -> bool {
        self.port().try_send_word(dst, word, data)
    }

    /// Negotiated payload ([`Port::reserve`]): room for one message of up to `max` bytes
    /// to `dst` in the receiver's memory, or `None` where the driver cannot offer it.
    pub fn reserve(&self, dst: NetAddr, max: usize) -> Result<Option<Reserved>> {
        self.port().reserve(dst, max)
    }

    /// Sends the first `len` bytes of a reservation ([`Port::publish`]).
    ///
    /// # Safety
    /// As [`Port::publish`]: `r` comes from [`Channel::reserve`] on this channel, published
    /// once, `len <= r.max`, and nothing writes through `r.ptr` afterwards.
    pub unsafe fn publish(&self, r: Reserved, len: usize) {
        // SAFETY: the caller's contract is the port's.
        unsafe { self.port().publish(r, len) }
    }

    /// Sends all of `iov` as one message, waiting while it does not fit yet (spin, then
    /// yield, then short sleeps); [`Error::MessageTooLarge`] if it never can, `PeerLost` if a
    /// rank of the job is lost while waiting. For protocol headers that must not be split.
    pub fn send_whole_wait(&self, dst: NetAddr, iov: &[IoSlice<'_>]) -> Result<()> {
        self.retry_send(|| self.send_whole(dst, iov).map(|()| 0))
            .map(|_| ())
    }

    /// Sends all of `iov`, as one message if it fits, else as several consecutive ones
    /// (the receiver sees their concatenation in order), waiting for room as needed.
    /// Returns the number of messages used.
    pub fn send_all(&self, dst: NetAddr, iov: &[IoSlice<'_>]) -> Result<usize> {
        let total = iov_total(iov)?;
        let mut parts: Vec<IoSlice<'_>> = iov.to_vec();
        let mut rest: &mut [IoSlice<'_>] = &mut parts;
        let (mut sent, mut msgs) = (0usize, 0usize);
        loop {
            let n = self.retry_send(|| self.send(dst, rest))?;
            sent += n;
            msgs += 1;
            if sent == total {
                return Ok(msgs);
            }
            IoSlice::advance_slices(&mut rest, n);
        }
    }

    /// Retries `f` while it would block: spin, then yield, then short sleeps
    /// ([`crate::wait::Backoff`]); gives up with `PeerLost` when a rank of the job is lost
    /// while waiting (looked at every 1024 polls: the lost-rank word is shared).
    fn retry_send(&self, mut f: impl FnMut() -> Result<usize>) -> Result<usize> {
        let mut backoff = crate::wait::Backoff::with(1024, 1 << 16, Duration::from_micros(50));
        loop {
            match f() {
                Err(Error::WouldBlock) => {}
                r => return r,
            }
            if backoff.polls() % 1024 == 1023 {
                use crate::driver::Waiter;
                if let Some(rank) = self.waiter.lost_peer() {
                    return Err(Error::PeerLost { rank });
                }
            }
            backoff.snooze();
        }
    }

    /// Spec "Recv", non-blocking: the next message, in place, or [`Error::WouldBlock`].
    /// When no message is waiting and a rank of the job is lost: [`Error::PeerLost`].
    #[inline(always)]
    pub fn try_recv(&self) -> Result<Message<'_, P>> {
        // The driver writes the message into its final place (see `Port::recv_into`).
        let mut msg = ManuallyDrop::new(Message {
            ch: self,
            raw: RawMessage::EMPTY,
        });
        let r = self.port().recv_into(&mut msg.raw);
        match r {
            Ok(()) => Ok(ManuallyDrop::into_inner(msg)),
            Err(e) => Err(e),
        }
    }

    /// Closure form of [`Channel::try_recv`]: runs `f` on the next message in place, then
    /// completes it. The fastest receive: the message is never moved.
    ///
    /// ```
    /// use skifch::{local, NetAddr};
    /// use std::io::IoSlice;
    /// let sums = local::run(1, |job| {
    ///     let ch = job.open(0)?;
    ///     ch.send(ch.addr(), &[IoSlice::new(&[1, 2, 3])])?;
    ///     ch.try_recv_with(|m| m.segments().flatten().map(|&b| b as u32).sum::<u32>())
    /// }).unwrap();
    /// assert_eq!(sums, [6]);
    /// ```
    // Deliberately not sharing a helper with `try_recv`: returning the guard from a common
    // function brings back the store-forwarding stall (criterion `recv_complete/8`: 8 ns
    // here, 23 ns with the helper).
    #[inline(always)]
    pub fn try_recv_with<T>(&self, f: impl FnOnce(&Message<'_, P>) -> T) -> Result<T> {
        let mut msg = ManuallyDrop::new(Message {
            ch: self,
            raw: RawMessage::EMPTY,
        });
        let r = self.port().recv_into(&mut msg.raw);
        match r {
            Ok(()) => {
                // Completed where it lies (also if `f` panics): moving the guard out of
                // its `ManuallyDrop` copied it from memory the port had just written in
                // parts, a store-forwarding stall per message where the port's receive is
                // not inlined whole (`AnyPort`: GASNet's AM Short round trip 5 % shorter).
                let done = CompleteOnDrop(&msg);
                Ok(f(done.0))
            }
            Err(e) => Err(e),
        }
    }

    /// Blocking receive with this channel's [`WaitPolicy`].
    pub fn recv(&self) -> Result<Message<'_, P>> {
        self.recv_deadline(None)
    }

    /// Blocking receive that gives up with [`Error::TimedOut`] after `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Message<'_, P>> {
        self.recv_deadline(Some(Instant::now() + timeout))
    }

    fn recv_deadline(&self, deadline: Option<Instant>) -> Result<Message<'_, P>> {
        loop {
            match self.try_recv() {
                Err(Error::WouldBlock) => self.wait_deadline(deadline)?,
                r => return r,
            }
        }
    }

    /// Whether a message is ready now (nothing is consumed): [`Port::ready`], a few loads
    /// where a receive that finds nothing walks the whole receive path. `Err(PeerLost)`
    /// when none is waiting and a rank of the job is lost.
    #[inline]
    pub fn ready(&self) -> Result<bool> {
        self.port().ready()
    }

    /// Waits until a message is ready (not consumed) — `SkifCh_Wait`. `None` waits forever.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        // The deadline is read from the clock only if the hot polls find nothing: a
        // message within a round trip ends the wait without a clock read.
        wait_until_by(
            self.policy.get(),
            &self.waiter,
            || timeout.map(|t| Instant::now() + t),
            || self.port().ready(),
        )
    }

    fn wait_deadline(&self, deadline: Option<Instant>) -> Result<()> {
        wait_until(self.policy.get(), &self.waiter, deadline, || {
            self.port().ready()
        })
    }

    /// Raw receive for foreign-language bindings: the message must later be passed to
    /// [`Channel::complete_raw`] exactly once.
    #[inline(always)]
    pub fn try_recv_raw(&self) -> Result<RawMessage> {
        self.port().recv()
    }

    /// Completes a message obtained with [`Channel::try_recv_raw`].
    ///
    /// # Safety
    /// `token` comes from `try_recv_raw` on this channel, is completed once, and nothing
    /// reads the message's segments after this call.
    #[inline(always)]
    pub unsafe fn complete_raw(&self, token: Token) {
        // SAFETY: forwarded contract.
        unsafe { self.port().complete(token) }
    }

    /// Returns the port (to close it explicitly, drop the channel).
    pub fn into_port(self) -> P {
        self.port.into_inner()
    }
}

/// Completes a message of [`Channel::try_recv_with`] in place when dropped.
struct CompleteOnDrop<'m, 'c, P: Port>(&'m Message<'c, P>);

impl<P: Port> Drop for CompleteOnDrop<'_, '_, P> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: the token is the message's, which is never dropped itself
        // (`ManuallyDrop`): completed once, here, after the last borrow of its segments
        // (the closure's) has ended.
        unsafe { self.0.ch.complete_raw(self.0.raw.token) }
    }
}

/// A received message: segments that borrow the driver's receive memory (no copy). Dropping
/// it is RecvComp; until then its memory stays valid and unchanged.
pub struct Message<'c, P: Port> {
    ch: &'c Channel<P>,
    raw: RawMessage,
}

impl<P: Port> Message<'_, P> {
    /// Total length in bytes.
    pub fn len(&self) -> usize {
        self.raw.len
    }
    /// `true` for a zero-length message.
    pub fn is_empty(&self) -> bool {
        self.raw.len == 0
    }
    /// The sender's channel address (extension).
    pub fn src(&self) -> NetAddr {
        self.raw.src
    }
    /// The segments, in order (more than one when the message wraps the ring end).
    pub fn segments(&self) -> Segments<'_> {
        raw_segments(&self.raw)
    }
    /// The message as one slice when it is in one segment.
    pub fn as_contiguous(&self) -> Option<&[u8]> {
        match self.raw.count {
            // SAFETY: as in `raw_segments`: the first segment is the whole message.
            1 => Some(unsafe {
                std::slice::from_raw_parts(self.raw.segs[0].ptr, self.raw.segs[0].len)
            }),
            0 => Some(&[]),
            _ => None,
        }
    }
    /// Copies the message into `buf` (up to its length); returns the bytes copied.
    pub fn copy_to(&self, buf: &mut [u8]) -> usize {
        let mut n = 0;
        for s in self.segments() {
            let k = s.len().min(buf.len() - n);
            buf[n..n + k].copy_from_slice(&s[..k]);
            n += k;
        }
        n
    }
    /// The message copied into a `Vec`.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        for s in self.segments() {
            v.extend_from_slice(s);
        }
        v
    }
    /// Spec "RecvComp": completes the message now (the same as dropping it, without going
    /// through the compiler's out-of-line drop glue on hot paths).
    #[inline(always)]
    pub fn complete(self) {
        let m = ManuallyDrop::new(self);
        // SAFETY: as in `Drop`: the token is this guard's, completed once (the guard is
        // forgotten), and no borrow of the segments outlives `self`.
        unsafe { m.ch.complete_raw(m.raw.token) }
    }
}

/// The segments of a received message, borrowed for as long as the guard that owns `raw`.
/// The one place where driver pointers become slices (both guards use it). Each segment is
/// read by a constant index: a loop over `segs[..count]` would keep the whole message in
/// memory instead of registers on every receive (about 25 more instructions per message).
fn raw_segments(raw: &RawMessage) -> Segments<'_> {
    // SAFETY: `Port` contract: `len` readable bytes, unchanged until completion, which
    // happens only when the guard owning `raw` is dropped; the slices borrow `raw`.
    let seg = |s: &RawSeg| unsafe { std::slice::from_raw_parts(s.ptr, s.len) };
    Segments {
        first: (raw.count >= 1).then(|| seg(&raw.segs[0])),
        second: (raw.count >= 2).then(|| seg(&raw.segs[1])),
    }
}

// `Segments` names each of the `CONT_SIZE` segments.
const _: () = assert!(crate::driver::CONT_SIZE == 2);

/// The segments of a received message, in order (see [`Message::segments`]).
#[derive(Clone, Debug)]
pub struct Segments<'a> {
    first: Option<&'a [u8]>,
    second: Option<&'a [u8]>,
}

impl<'a> Iterator for Segments<'a> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        match self.first.take() {
            Some(s) => Some(s),
            None => self.second.take(),
        }
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.first.is_some() as usize + self.second.is_some() as usize;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Segments<'_> {}

impl<P: Port> Drop for Message<'_, P> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: the token came from `try_recv_raw` on `self.ch` and this guard is its only
        // owner; the segment borrows end with `self`.
        unsafe { self.ch.complete_raw(self.raw.token) }
    }
}

impl<P: Port> std::fmt::Debug for Message<'_, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Message")
            .field("src", &self.raw.src)
            .field("len", &self.raw.len)
            .field("segments", &self.raw.count)
            .finish()
    }
}

/// A channel that several threads may use at once (one lock around the port). Messages are
/// [`SharedMessage`]s, which may be held by one thread while others keep receiving.
pub struct SharedChannel<P: Port> {
    port: Mutex<P>,
    waiter: P::Waiter,
    addr: NetAddr,
    policy: WaitPolicy,
}

impl<P: Port> SharedChannel<P> {
    /// Wraps an open port.
    pub fn new(port: P, policy: WaitPolicy) -> Self {
        SharedChannel {
            waiter: port.waiter(),
            addr: port.addr(),
            port: Mutex::new(port),
            policy,
        }
    }
    fn lock(&self) -> MutexGuard<'_, P> {
        self.port.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// This channel's address.
    pub fn addr(&self) -> NetAddr {
        self.addr
    }
    /// As [`Channel::send`].
    pub fn send(&self, dst: NetAddr, iov: &[IoSlice<'_>]) -> Result<usize> {
        self.lock().send(dst, iov, SendMode::Prefix)
    }
    /// As [`Channel::try_recv`].
    pub fn try_recv(&self) -> Result<SharedMessage<'_, P>> {
        let raw = self.lock().recv()?;
        Ok(SharedMessage { ch: self, raw })
    }
    /// As [`Channel::recv_timeout`] (`None`: forever).
    pub fn recv(&self, timeout: Option<Duration>) -> Result<SharedMessage<'_, P>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            match self.try_recv() {
                Err(Error::WouldBlock) => {
                    wait_until(self.policy, &self.waiter, deadline, || self.lock().ready())?
                }
                r => return r,
            }
        }
    }
}

/// A message received on a [`SharedChannel`]; `Send`, so it may move between threads.
pub struct SharedMessage<'c, P: Port> {
    ch: &'c SharedChannel<P>,
    raw: RawMessage,
}

// SAFETY: the raw pointers point into driver memory owned by this message until completion,
// and completion goes through the channel's lock.
unsafe impl<P: Port> Send for SharedMessage<'_, P> where SharedChannel<P>: Sync {}

impl<P: Port> SharedMessage<'_, P> {
    /// Sender's address.
    pub fn src(&self) -> NetAddr {
        self.raw.src
    }
    /// Total length.
    pub fn len(&self) -> usize {
        self.raw.len
    }
    /// `true` for a zero-length message.
    pub fn is_empty(&self) -> bool {
        self.raw.len == 0
    }
    /// The message copied into a `Vec`.
    pub fn to_vec(&self) -> Vec<u8> {
        raw_segments(&self.raw).flatten().copied().collect()
    }
}

impl<P: Port> Drop for SharedMessage<'_, P> {
    fn drop(&mut self) {
        // SAFETY: the token came from `recv` on this channel's port, completed once here.
        unsafe { self.ch.lock().complete(self.raw.token) }
    }
}
