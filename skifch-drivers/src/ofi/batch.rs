//! The send side of batching (see [`super::port`]): a pair's open batch is one send
//! buffer that messages are appended to as records ([`super::wire`]); it leaves as one
//! fabric message. [`Ports`] holds every port state of a rank, so that batches a busy
//! owner left open are flushed from elsewhere: another port's empty polls, a sleeping
//! waiter, the heartbeat thread's tick.
#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use skifch::mem::copy_small;
use skifch::{Error, Result};

use super::ffi::FI_EAGAIN;
use super::live::broken;
use super::port::{PortState, TX_SLOTS};
use super::sys;
use super::wire::{rec_len, Kind, HDR, REC};

/// Largest lone message (header and record) sent from the stack ([`PortState::append`]).
pub(super) const LONE: usize = 128;

/// Writes the record of a `len`-byte message, a prefix of `iov`, at `rec`: its length, 4
/// zero bytes, the payload, zero padding to [`REC`]. Every byte of the record is written.
///
/// # Safety
/// `rec` is valid for `rec_len(len)` bytes of writes, and `len <= iov_total(iov)`.
#[inline(always)]
unsafe fn write_record(rec: *mut u8, iov: &[IoSlice<'_>], len: usize) {
    let need = rec_len(len);
    // The last REC bytes are zeroed first (the padding; the payload is copied over the
    // rest of them), then the length word, then the payload: no memset call per message,
    // and large payloads are never zeroed first.
    // SAFETY: the caller's contract; the iovec parts are the caller's slices.
    unsafe {
        rec.add(need - REC).cast::<u64>().write_unaligned(0);
        rec.cast::<u64>().write_unaligned((len as u64).to_le());
        // The usual shapes, whole, without the loop (~25 instructions less for an MPI
        // envelope and its payload): one part, or two.
        match iov {
            [a] if a.len() == len => return copy_small(a.as_ptr(), rec.add(REC), len),
            [a, b] if a.len() + b.len() == len => {
                copy_small(a.as_ptr(), rec.add(REC), a.len());
                return copy_small(b.as_ptr(), rec.add(REC + a.len()), b.len());
            }
            _ => {}
        }
        let mut w = REC;
        for s in iov {
            let n = s.len().min(REC + len - w);
            copy_small(s.as_ptr(), rec.add(w), n);
            w += n;
            if w == REC + len {
                break;
            }
        }
    }
}

/// An open batch: `len` bytes (header included) in send buffer `slot` for pair `sid`,
/// opened in heartbeat tick `tick`.
#[derive(Clone, Copy, Debug)]
pub struct Open {
    sid: u32,
    slot: u32,
    len: u32,
    tick: u32,
}

/// What the ports of a rank and its heartbeat thread share about open batches.
#[derive(Default)]
pub struct Flags {
    /// Bit `p`: port `p` has an open batch.
    open: AtomicU64,
    /// Bit `p`: port `p` owes a credit message it held back ([`PortState::flush_credits`]).
    credit: AtomicU64,
    /// The heartbeat thread's tick count.
    tick: AtomicU32,
}

impl Flags {
    /// Sets or clears port `port`'s bit in `credit` (no atomic write when it is so).
    pub(super) fn set_credit(&self, port: u32, on: bool) {
        let bit = 1u64 << port;
        if (self.credit.load(Ordering::Relaxed) & bit != 0) != on {
            if on {
                self.credit.fetch_or(bit, Ordering::AcqRel);
            } else {
                self.credit.fetch_and(!bit, Ordering::AcqRel);
            }
        }
    }
}

/// Why a batch is flushed by someone else than a send.
#[derive(Clone, Copy)]
enum Why {
    /// A poll: only a port that sent nothing since its previous poll.
    Idle,
    /// A heartbeat tick: batches opened before the previous tick.
    Aged(u32),
    /// A waiter about to sleep, a closing port or rank: every batch.
    All,
}

impl PortState {
    fn bit(&self) -> u64 {
        1u64 << self.me.port()
    }

    /// Appends a `len`-byte message (a prefix of `iov`) to pair `sid`'s batch, flushing
    /// the batch first when the message does not fit and opening one where none is open.
    pub(super) fn append(&mut self, sid: usize, iov: &[IoSlice<'_>], len: usize) -> Result<usize> {
        let need = rec_len(len);
        // A lone message leaves at once: the pair has no batch open and the receiver has
        // freed every batch sent to it (nothing in flight: a ping-pong, the first message
        // of a burst). Messages behind one in flight are batched (Nagle's rule, with the
        // receiver's credit return as the acknowledgement).
        let lone = self.pairs[sid].sent == self.pairs[sid].acked;
        if lone && self.open.is_empty() && HDR + need <= self.lone {
            // The latency path: header and record built on the stack and injected, no
            // send buffer or open batch (callgrind: 168 fewer instructions per 8-byte
            // MPI_Send over `net`). Refused, it takes the batch path, whose flush retries.
            // Not zeroed: header and record write every byte that is sent.
            let mut b = MaybeUninit::<[u8; LONE]>::uninit();
            let b = b.as_mut_ptr().cast::<u8>();
            // SAFETY: `HDR + need <= LONE`: the record fits behind the header in `b`.
            unsafe { write_record(b.add(HDR), iov, len) };
            // SAFETY: as above; `send_lone` writes the header in front of the record.
            if unsafe { self.send_lone(sid, b, HDR + need) } {
                self.sends += 1;
                return Ok(len);
            }
        }
        let k = match self.open.iter().position(|o| o.sid == sid as u32) {
            Some(k) if self.open[k].len as usize + need <= self.ep.slot => k,
            Some(k) => {
                self.flush(k)?;
                self.open_batch(sid)?
            }
            None => self.open_batch(sid)?,
        };
        let o = &mut self.open[k];
        let at = o.len as usize;
        let buf = self.ep.buf(o.slot as usize);
        // SAFETY: send buffer `o.slot` is this batch's (not posted to the provider until
        // the flush) and `at + need <= slot`.
        unsafe { write_record(buf.add(at), iov, len) };
        let alone = o.len == HDR as u32;
        o.len += need as u32;
        self.sends += 1;
        if !self.batch || (lone && alone) {
            // Sent now, or (refused) with the next flush: the message is taken either way.
            let _ = self.flush(k);
        }
        Ok(len)
    }

    /// Injects the `n` bytes at `b` (room for the header, then records) as pair `sid`'s
    /// next batch; false when the provider did not take it.
    ///
    /// # Safety
    /// `b` is valid for `n` bytes (`HDR <= n <= inject_size`), of which `HDR..n` are
    /// initialized.
    unsafe fn send_lone(&mut self, sid: usize, b: *mut u8, n: usize) -> bool {
        let (h, freed) = self.hdr(sid, Kind::Data);
        let p = &mut self.pairs[sid];
        // SAFETY: the caller's contract: with the header written all `n` bytes are
        // initialized; live endpoint; the provider copies them before returning.
        let r = unsafe {
            std::ptr::copy_nonoverlapping(h.as_ptr(), b, HDR);
            sys::inject(self.ep.ep.0, b, n, p.to)
        };
        if r != 0 {
            return false;
        }
        p.sent += 1;
        p.told = freed;
        true
    }

    /// Opens a batch to pair `sid` (with a credit and a send buffer) or `WouldBlock`.
    fn open_batch(&mut self, sid: usize) -> Result<usize> {
        let out = |p: &super::port::Pair, c: u64| p.sent - p.acked >= c;
        if out(&self.pairs[sid], self.credits) || self.tx_free.is_empty() {
            if self.tx_free.is_empty() {
                self.flush_all();
            }
            self.progress()?;
            if out(&self.pairs[sid], self.credits) {
                return Err(Error::WouldBlock);
            }
        }
        let Some(slot) = self.tx_free.pop() else {
            return Err(Error::WouldBlock);
        };
        if self.open.is_empty() {
            self.flags.open.fetch_or(self.bit(), Ordering::AcqRel);
        }
        self.open.push(Open {
            sid: sid as u32,
            slot: slot as u32,
            len: HDR as u32,
            tick: self.flags.tick.load(Ordering::Relaxed),
        });
        Ok(self.open.len() - 1)
    }

    fn close_batch(&mut self, k: usize) {
        self.open.swap_remove(k);
        if self.open.is_empty() {
            self.flags.open.fetch_and(!self.bit(), Ordering::AcqRel);
        }
    }

    /// Sends open batch `k` as one fabric message; `WouldBlock` (the batch stays open)
    /// when the provider's queue is full.
    fn flush(&mut self, k: usize) -> Result<()> {
        let o = self.open[k];
        let (sid, slot, n) = (o.sid as usize, o.slot as usize, o.len as usize);
        let (h, freed) = self.hdr(sid, Kind::Data);
        let to = self.pairs[sid].to;
        let buf = self.ep.buf(slot);
        let inject = n <= self.ep.net.inject_size;
        // SAFETY: the batch's send buffer holds `n <= slot` bytes; its first HDR bytes are
        // reserved for the header. Live endpoint; the buffer stays untouched until its
        // completion (a send) or is copied before the call returns (an inject).
        let ret = unsafe {
            std::ptr::copy_nonoverlapping(h.as_ptr(), buf, HDR);
            if inject {
                sys::inject(self.ep.ep.0, buf, n, to)
            } else {
                sys::send(self.ep.ep.0, buf, n, self.ep.desc(), to, self.ep.ctx(slot))
            }
        };
        let rank = sid as u32 / self.ports;
        if ret == -(FI_EAGAIN as isize) {
            return Err(Error::WouldBlock);
        }
        if ret != 0 && !broken(ret) {
            return Err(Error::os(
                "fi_send",
                std::io::Error::other(sys::strerror(ret)),
            ));
        }
        self.close_batch(k);
        if ret != 0 {
            self.tx_free.push(slot);
            self.live.mark_lost(rank);
            return Err(Error::PeerLost { rank });
        }
        if inject {
            self.tx_free.push(slot);
        } else {
            self.tx_dst[slot - self.ep.rx] = rank;
        }
        let p = &mut self.pairs[sid];
        p.sent += 1;
        p.told = freed;
        Ok(())
    }

    fn flush_where(&mut self, why: Why) {
        for k in (0..self.open.len()).rev() {
            let o = self.open[k];
            let due = match why {
                Why::Aged(t) => t.wrapping_sub(o.tick) >= 2,
                Why::Idle | Why::All => true,
            };
            // A refused flush stays open for the next occasion; a lost peer is recorded.
            if due {
                let _ = self.flush(k);
            }
        }
    }

    /// Sends every open batch and every credit message held back that the provider takes
    /// now.
    pub(super) fn flush_all(&mut self) {
        self.flush_where(Why::All);
        if !self.dirty_is_empty() {
            self.flush_credits(true);
        }
    }

    /// At a poll: sends the open batches if no message was appended since the previous
    /// poll (the sender is waiting for something, not streaming).
    pub(super) fn idle_flush(&mut self) {
        if self.sends == self.seen {
            self.flush_where(Why::Idle);
        } else {
            self.seen = self.sends;
        }
    }
}

impl PortState {
    /// At the rank's end, to pair `sid`: one header-only `Credit` message by `fi_send`,
    /// whose completion says that everything sent to the pair before it has left this
    /// process (the provider's queue is in send order, `FI_ORDER_SAS`; injected batches
    /// report no completion). True when sent, or not needed (the peer finalized or is
    /// lost); false when it must be tried again (no send buffer, queue full).
    fn send_last(&mut self, sid: usize) -> bool {
        let rank = sid as u32 / self.ports;
        if self.live.is_lost(rank) || self.live.is_finalized(rank) {
            return true;
        }
        let Some(slot) = self.tx_free.pop() else {
            return false;
        };
        let (h, freed) = self.hdr(sid, Kind::Credit);
        let to = self.pairs[sid].to;
        let buf = self.ep.buf(slot);
        // SAFETY: send buffer `slot` is free (taken from `tx_free`) and holds at least HDR
        // bytes; live endpoint; the buffer stays untouched until the send's completion.
        let ret = unsafe {
            std::ptr::copy_nonoverlapping(h.as_ptr(), buf, HDR);
            sys::send(
                self.ep.ep.0,
                buf,
                HDR,
                self.ep.desc(),
                to,
                self.ep.ctx(slot),
            )
        };
        if ret == 0 {
            self.tx_dst[slot - self.ep.rx] = rank;
            self.pairs[sid].told = freed;
            return true;
        }
        self.tx_free.push(slot);
        if ret == -(FI_EAGAIN as isize) {
            return false;
        }
        if broken(ret) {
            self.live.mark_lost(rank);
        }
        true
    }

    /// Whether nothing of this port is batched or in the provider's hands.
    fn settled(&self) -> bool {
        self.open.is_empty() && self.tx_free.len() == TX_SLOTS
    }
}

/// One port's state, its lock, and whether a [`super::port::OfiPort`] holds it.
///
/// Not a `std::sync::Mutex`: the owner takes the state three times per hop of a ping-pong
/// (send, receive, completion), and the standard lock's poisoning checks (the thread's
/// panic count read at lock and at unlock) and its unlock's swap cost ~17 instructions a
/// time (callgrind). Here taking it is one compare-exchange and giving it back one release
/// store. It is waited for only by the owner's calls (for the heartbeat thread's tick or
/// another port's flush, which never wait themselves, `try_lock`, and hold it for a flush)
/// and by the rank's last settle at finalize (`Ports::settle`): a short spin, then yields.
/// A panic while holding it releases it (the guard's drop) and leaves the state
/// consistent: every update is completed before anything that can panic.
pub struct Home {
    held: AtomicBool,
    st: UnsafeCell<PortState>,
    taken: AtomicBool,
}

// SAFETY: the state is reached only through a `StGuard`, which exists only while `held` was
// set by its taker (`Home::lock`, `Home::try_lock`): one thread at a time.
unsafe impl Sync for Home {}

/// The state of a [`Home`], held.
pub struct StGuard<'a> {
    home: &'a Home,
}

impl Home {
    /// The state, waiting while another thread holds it.
    #[inline]
    pub fn lock(&self) -> StGuard<'_> {
        if self
            .held
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_slow();
        }
        StGuard { home: self }
    }

    #[cold]
    #[inline(never)]
    fn lock_slow(&self) {
        let mut spins = 0u32;
        loop {
            if !self.held.load(Ordering::Relaxed)
                && self
                    .held
                    .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return;
            }
            spins += 1;
            if spins < 100 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// The state, unless another thread holds it.
    #[inline]
    pub fn try_lock(&self) -> Option<StGuard<'_>> {
        let taken = self
            .held
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        // (a guard made and dropped on failure would release the holder's lock)
        taken.then(|| StGuard { home: self })
    }
}

impl Deref for StGuard<'_> {
    type Target = PortState;
    #[inline]
    fn deref(&self) -> &PortState {
        // SAFETY: this guard holds the lock (`Home`'s `Sync`).
        unsafe { &*self.home.st.get() }
    }
}

impl DerefMut for StGuard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut PortState {
        // SAFETY: this guard holds the lock (`Home`'s `Sync`), and is borrowed mutably.
        unsafe { &mut *self.home.st.get() }
    }
}

impl Drop for StGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.home.held.store(false, Ordering::Release);
    }
}

/// Every port state of a rank.
pub struct Ports {
    homes: Vec<Arc<Home>>,
    flags: Arc<Flags>,
}

impl Ports {
    /// The states of ports `0..states.len()`, sharing `flags`.
    pub fn new(states: Vec<PortState>, flags: Arc<Flags>) -> Ports {
        Ports {
            homes: states
                .into_iter()
                .map(|st| {
                    Arc::new(Home {
                        held: AtomicBool::new(false),
                        st: UnsafeCell::new(st),
                        taken: AtomicBool::new(false),
                    })
                })
                .collect(),
            flags,
        }
    }

    /// Ports of the rank.
    pub fn len(&self) -> usize {
        self.homes.len()
    }

    /// Whether the rank has no port.
    pub fn is_empty(&self) -> bool {
        self.homes.is_empty()
    }

    /// Marks port `p` taken; false if it was.
    pub fn take(&self, p: usize) -> bool {
        self.homes[p]
            .taken
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Marks port `p` free.
    pub fn release(&self, p: usize) {
        self.homes[p].taken.store(false, Ordering::Release);
    }

    /// Port `p`'s state.
    pub fn lock(&self, p: usize) -> StGuard<'_> {
        self.homes[p].lock()
    }

    /// Port `p`'s home (an open port keeps it, so that its calls lock it directly).
    pub fn home(&self, p: usize) -> Arc<Home> {
        self.homes[p].clone()
    }

    /// Calls `f` on every port with an open batch (and, with `credit`, every port owing a
    /// credit message) but those in `skip`, unless in use.
    fn each_open(&self, skip: u64, credit: bool, f: impl Fn(&mut PortState)) {
        let mut m = self.flags.open.load(Ordering::Acquire);
        if credit {
            m |= self.flags.credit.load(Ordering::Acquire);
        }
        m &= !skip;
        while m != 0 {
            let p = m.trailing_zeros() as usize;
            m &= m - 1;
            // Never waits: a port in use is flushed by its owner's next calls.
            if let Some(h) = self.homes.get(p) {
                if let Some(mut st) = h.try_lock() {
                    f(&mut st);
                }
            }
        }
    }

    /// From an empty poll of port `me`: the other ports' batches, where idle.
    #[inline]
    pub fn flush_others(&self, me: usize) {
        if self.flags.open.load(Ordering::Relaxed) & !(1u64 << me) != 0 {
            self.each_open(1u64 << me, false, PortState::idle_flush);
        }
    }

    /// Before sleeping, or when the rank ends: every open batch and credit message held
    /// back. (No completions are read
    /// here: a message moved to a port's ready queue behind its owner's back would not
    /// wake the owner's waiter.)
    pub fn flush_everything(&self) {
        self.each_open(0, true, PortState::flush_all);
    }

    /// When the rank finalizes, before its endpoints close: sends every open batch, then
    /// drives each port's endpoint until what it sent has left this process, at most
    /// `limit` in all. A batch sent with `fi_inject` to a peer not connected yet waits in
    /// the provider's queue for the connection, which only the endpoint's progress makes;
    /// closed before, it was lost, and a peer waiting for it (the last barrier of a job
    /// whose ranks had not talked across nodes before) hung. So each peer port this port
    /// sent to gets a last message whose completion is awaited (`PortState::send_last`).
    pub fn settle(&self, limit: Duration) {
        let t0 = Instant::now();
        for p in 0..self.homes.len() {
            let mut st = self.lock(p);
            let mut todo: Vec<usize> = (0..st.pairs.len())
                .filter(|&sid| st.pairs[sid].sent > 0)
                .collect();
            loop {
                st.flush_all();
                todo.retain(|&sid| !st.send_last(sid));
                // A broken port (a corrupt peer) has nothing more to send.
                if st.progress().is_err() || (todo.is_empty() && st.settled()) {
                    break;
                }
                if t0.elapsed() > limit {
                    return;
                }
                std::thread::sleep(Duration::from_micros(100));
            }
        }
    }

    /// The heartbeat thread's tick: batches open for more than a tick leave, and credit
    /// messages held back. Returns whether a batch is still open or a credit message
    /// still owed (the thread then ticks again soon).
    pub fn tick(&self) -> bool {
        let t = self
            .flags
            .tick
            .fetch_add(1, Ordering::AcqRel)
            .wrapping_add(1);
        self.each_open(0, true, |st| {
            st.flush_where(Why::Aged(t));
            if !st.dirty_is_empty() {
                st.flush_credits(true);
            }
        });
        self.flags.open.load(Ordering::Acquire) | self.flags.credit.load(Ordering::Acquire) != 0
    }
}
