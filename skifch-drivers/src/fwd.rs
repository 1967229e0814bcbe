//! The forwarding driver: a library that finds the process's job already joined by another
//! library (another copy of this crate, [`crate::share`]) uses that library's driver
//! through the C-ABI [`Table`] it published. Every call is one indirect call into the
//! publisher's copy; received messages stay in the publisher's driver memory (zero-copy,
//! as with the direct driver).
#![allow(unsafe_code)] // calls through the publisher's C-ABI table, raw handles

use std::ffi::c_void;
use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::sync::Arc;
use std::time::Duration;

use skifch::driver::{Driver, Port, RawMessage, RawSeg, Reserved, SendMode, Token, Waiter};
use skifch::{NetAddr, Result};

use crate::any::AnyWaiter;
use crate::share::{CErr, CMsg, CRes, Info, Table, ABI, RMA_SHM};

/// A driver published by another library of this process, used through its [`Table`].
pub struct FwdDriver {
    t: &'static Table,
    rank: u32,
    size: u32,
    max_ports: u32,
    max_message: usize,
    rma: u32,
    name: &'static str,
}

/// Runs a table call that reports failure by a negative result and `*err`.
fn call<T: PartialOrd + Default>(f: impl FnOnce(*mut CErr) -> T) -> Result<T> {
    let mut err = MaybeUninit::<CErr>::uninit();
    let r = f(err.as_mut_ptr());
    if r < T::default() {
        // SAFETY: a table function that fails writes `*err` before returning (its contract).
        Err(unsafe { err.assume_init_ref() }.read())
    } else {
        Ok(r)
    }
}

impl FwdDriver {
    /// Becomes a user of the driver behind `t` (released on drop).
    pub(crate) fn acquire(t: &'static Table) -> Result<FwdDriver> {
        if t.abi != ABI || t.size as usize != std::mem::size_of::<Table>() {
            return Err(skifch::Error::Bootstrap(
                format!(
                    "another SkifCh library of this process (table version {}, {} bytes) is incompatible with this one (version {ABI})",
                    t.abi, t.size
                )
                .into(),
            ));
        }
        let mut info = MaybeUninit::<Info>::uninit();
        // SAFETY: both pointers are valid for writes; the table fills `info` on success.
        call(|e| unsafe { (t.acquire)(info.as_mut_ptr(), e) })?;
        // SAFETY: `acquire` succeeded, so it wrote `info`.
        let info = unsafe { info.assume_init() };
        let n = (info.name_len as usize).min(info.name.len());
        let name = String::from_utf8_lossy(&info.name[..n]).into_owned();
        Ok(FwdDriver {
            t,
            rank: info.rank,
            size: info.size,
            max_ports: info.max_ports,
            max_message: usize::try_from(info.max_message).unwrap_or(usize::MAX),
            rma: info.rma,
            // One per library per process (a driver name for logs and `Job::driver_name`).
            name: Box::leak(name.into_boxed_str()),
        })
    }

    /// [`crate::AnyDriver::request_exit`] of the publisher's driver.
    pub fn request_exit(&self, status: i32) -> i32 {
        (self.t.request_exit)(status)
    }

    /// [`crate::AnyDriver::exit_request`] of the publisher's driver.
    pub fn exit_request(&self) -> Option<i32> {
        i32::try_from((self.t.exit_request)()).ok()
    }
}

impl Drop for FwdDriver {
    fn drop(&mut self) {
        (self.t.release)();
    }
}

impl Driver for FwdDriver {
    type Port = FwdPort;
    fn name(&self) -> &'static str {
        self.name
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn max_ports(&self) -> u32 {
        self.max_ports
    }
    fn open_port(self: &Arc<Self>, port: u32) -> Result<FwdPort> {
        let mut h = std::ptr::null_mut();
        let mut addr = 0u32;
        // SAFETY: both out-pointers are valid for writes.
        call(|e| unsafe { (self.t.open_port)(port, &mut h, &mut addr, e) })?;
        Ok(FwdPort {
            t: self.t,
            h,
            addr: NetAddr::new((addr >> 16) as u16, addr as u16),
            _drv: self.clone(),
        })
    }
    fn max_message(&self) -> usize {
        self.max_message
    }
    /// The shm provider keeps no driver state, so this copy builds its own (see
    /// [`crate::share`]).
    fn rma(self: &Arc<Self>) -> Option<Arc<dyn skifch::rma::Rma>> {
        (self.rma == RMA_SHM).then(|| {
            Arc::new(crate::shm_rma::ShmRma::new(self.rank, self.size)) as Arc<dyn skifch::rma::Rma>
        })
    }
}

/// A port of the publisher's driver.
pub struct FwdPort {
    t: &'static Table,
    h: *mut c_void,
    addr: NetAddr,
    /// Keeps this library's use of the driver counted while the port is open.
    _drv: Arc<FwdDriver>,
}

// SAFETY: the handle is the publisher's `AnyPort`, which is `Send`; it is used only
// through `&mut self` (one thread at a time).
unsafe impl Send for FwdPort {}

impl Drop for FwdPort {
    fn drop(&mut self) {
        // SAFETY: `h` is this port's live handle, closed once.
        unsafe { (self.t.close_port)(self.h) }
    }
}

// SAFETY: every segment and token comes from the publisher's port, whose own `Port` promise
// (obligation 5) covers them; tokens go back to the port they came from.
unsafe impl Port for FwdPort {
    type Waiter = AnyWaiter;
    fn addr(&self) -> NetAddr {
        self.addr
    }
    fn send(&mut self, dst: NetAddr, iov: &[IoSlice<'_>], mode: SendMode) -> Result<usize> {
        let whole = u32::from(mode == SendMode::Whole);
        // SAFETY: a live handle; `IoSlice` is ABI-compatible with `struct iovec`, and the
        // buffers outlive the call.
        call(|e| unsafe {
            (self.t.send)(self.h, dst.raw(), iov.as_ptr().cast(), iov.len(), whole, e)
        })
        .map(|n| n as usize)
    }
    fn recv_into(&mut self, out: &mut RawMessage) -> Result<()> {
        let mut m = MaybeUninit::<CMsg>::uninit();
        // SAFETY: a live handle; `m` is valid for writes.
        call(|e| unsafe { (self.t.recv)(self.h, m.as_mut_ptr(), e) })?;
        // SAFETY: `recv` succeeded, so it wrote `m`.
        let m = unsafe { m.assume_init() };
        let seg = |i: usize| RawSeg {
            ptr: m.segs[i].ptr,
            len: m.segs[i].len,
        };
        *out = RawMessage {
            segs: [seg(0), seg(1)],
            len: m.len,
            count: m.count,
            src: NetAddr::new((m.src >> 16) as u16, m.src as u16),
            token: Token {
                a: m.token[0],
                b: m.token[1],
            },
        };
        Ok(())
    }
    fn ready(&mut self) -> Result<bool> {
        // SAFETY: a live handle.
        call(|e| unsafe { (self.t.ready)(self.h, e) }).map(|r| r > 0)
    }
    fn reserve(&mut self, dst: NetAddr, max: usize) -> Result<Option<Reserved>> {
        let mut r = MaybeUninit::<CRes>::uninit();
        // SAFETY: a live handle; `r` is valid for writes.
        let got = call(|e| unsafe { (self.t.reserve)(self.h, dst.raw(), max, r.as_mut_ptr(), e) })?;
        // SAFETY: `reserve` returned 1, so it wrote `r`.
        Ok((got > 0).then(|| unsafe { r.assume_init() }.into_reserved()))
    }
    unsafe fn publish(&mut self, r: Reserved, len: usize) {
        let c = CRes::new(r);
        // SAFETY: a live handle; the caller's contract (a reservation of this port, once)
        // is the publisher port's, whose `reserve` made it.
        unsafe { (self.t.publish)(self.h, &c, len) }
    }
    unsafe fn complete(&mut self, token: Token) {
        // SAFETY: a live handle; the caller's contract (a token of this port's `recv`,
        // once) is the publisher port's.
        unsafe { (self.t.complete)(self.h, token.a, token.b) }
    }
    fn waiter(&self) -> AnyWaiter {
        // SAFETY: a live handle; `waiter` only reads the port.
        let w = unsafe { (self.t.waiter)(self.h) };
        AnyWaiter::Fwd(FwdWaiter(Arc::new(WaiterHandle { t: self.t, w })))
    }
}

/// The waiter of a [`FwdPort`].
#[derive(Clone)]
pub struct FwdWaiter(Arc<WaiterHandle>);

struct WaiterHandle {
    t: &'static Table,
    w: *mut c_void,
}

// SAFETY: the handle is the publisher's `AnyWaiter`, which is `Send + Sync`; its calls take
// `&self` on that side.
unsafe impl Send for WaiterHandle {}
// SAFETY: as for `Send`.
unsafe impl Sync for WaiterHandle {}

impl Drop for WaiterHandle {
    fn drop(&mut self) {
        // SAFETY: the live waiter handle, freed once (the last clone).
        unsafe { (self.t.waiter_free)(self.w) }
    }
}

impl Waiter for FwdWaiter {
    fn arm(&self) -> u32 {
        // SAFETY: a live waiter handle.
        unsafe { (self.0.t.arm)(self.0.w) }
    }
    fn sleep(&self, ticket: u32, timeout: Duration) {
        let ns = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        // SAFETY: a live waiter handle.
        unsafe { (self.0.t.sleep)(self.0.w, ticket, ns) }
    }
    fn disarm(&self) {
        // SAFETY: a live waiter handle.
        unsafe { (self.0.t.disarm)(self.0.w) }
    }
    fn lost_peer(&self) -> Option<u32> {
        // SAFETY: a live waiter handle.
        u32::try_from(unsafe { (self.0.t.lost_peer)(self.0.w) }).ok()
    }
}
