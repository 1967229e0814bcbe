//! One driver per process, shared by every SkifCh library loaded into it.
//!
//! Each library we ship as a C library (`libmpi.so`, `libskifshmem`, `libarmci`,
//! `libgasnet`, `libskifch`) statically contains its own copy of this crate. Two copies
//! joining the job on their own would bring up two drivers: harmless over shm (each joins
//! the shared job segment), fatal over `fpga-model`, whose adapter's host side (the node's
//! TX ring, the register queue's producer position, the DMA allocator) is process memory of
//! the one driver that brought it up. So the copies agree on one driver:
//!
//! 1. **The registry.** Every copy exports `skifch_driver_registry_v1`, returning its
//!    [`Registry`] (a lock word and a table pointer, `#[repr(C)]`). A copy finds *the*
//!    registry with `dlsym(RTLD_DEFAULT, ...)`: the dynamic linker returns the first
//!    definition in the process's global lookup order, the same one for every copy. A copy
//!    the linker cannot see (a library opened `RTLD_LOCAL`, a program linked statically)
//!    finds no symbol, or only its own, and uses its own registry.
//! 2. **The first copy to join publishes its driver** as a [`Table`] of `extern "C"`
//!    functions (acquire/release, open a port, send, receive, complete, ready, the waiter's
//!    arm/sleep/disarm/lost-peer, the job's exit request). Nothing but `#[repr(C)]` data and
//!    C function pointers crosses between copies (two copies' Rust types are unrelated,
//!    even when built by the same compiler). That copy keeps its direct driver: its hot
//!    path does not change.
//! 3. **Later copies forward**: [`crate::fwd::FwdDriver`] calls the table
//!    ([`crate::AnyDriver::Fwd`]). Each library opens its own port (`skifch::ports`), so
//!    no port is opened twice.
//! 4. **Reference-counted finalisation.** The publisher's driver lives while its own
//!    library holds it *or* any forwarder has acquired it (the table holds a strong handle
//!    for the forwarders, dropped when the last one releases): the last user closes it.
//!
//! RMA: the shm provider ([`crate::shm_rma::ShmRma`]) holds no driver state (every segment
//! is a memfd of its own), so the table only says that the driver offers it and the
//! forwarding copy builds its own provider; drivers without RMA say so.
//!
//! Copies are never unloaded while the process uses them (a library that called into
//! another copy's table must not `dlclose` it; none of ours is ever closed).
#![allow(unsafe_code)] // dlsym, the C-ABI table and the raw port handles it passes

use std::ffi::c_void;
use std::io::IoSlice;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use skifch::driver::{Driver, Port, RawMessage, Reserved, SendMode, Token, Waiter};
use skifch::error::Unreachable;
use skifch::{Error, NetAddr, Result};

use crate::any::{AnyDriver, AnyPort, AnyWaiter, ConcreteJob};

/// Version of [`Registry`] and [`Table`]; a copy finding another version joins alone.
/// 2: [`Table::reserve`] and [`Table::publish`] (negotiated payload through the table).
pub const ABI: u32 = 2;
const MAGIC: u64 = u64::from_le_bytes(*b"SKIFREG\x01");
/// The exported symbol every copy looks up.
const SYMBOL: &std::ffi::CStr = c"skifch_driver_registry_v1";

/// The process-wide meeting point (one per copy; the copies use the one `dlsym` finds).
#[repr(C)]
pub struct Registry {
    magic: u64,
    abi: u32,
    /// 0 free, 1 held: held across a join, so two libraries' first calls make one join.
    lock: AtomicU32,
    /// The published driver, or null.
    table: AtomicPtr<Table>,
}

static REGISTRY: Registry = Registry {
    magic: MAGIC,
    abi: ABI,
    lock: AtomicU32::new(0),
    table: AtomicPtr::new(std::ptr::null_mut()),
};

/// This copy's registry, exported for the other copies of this crate in the process.
#[no_mangle]
pub extern "C" fn skifch_driver_registry_v1() -> *const Registry {
    &REGISTRY
}

/// The registry all copies in the process share (see the module docs).
fn registry() -> &'static Registry {
    static FOUND: OnceLock<&'static Registry> = OnceLock::new();
    FOUND.get_or_init(|| {
        // SAFETY: dlsym with a NUL-terminated name only looks the symbol up.
        let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, SYMBOL.as_ptr()) };
        if sym.is_null() {
            return &REGISTRY;
        }
        // SAFETY: every definition of this symbol is `skifch_driver_registry_v1` above (a
        // copy of this crate), an `extern "C" fn() -> *const Registry`.
        let f: extern "C" fn() -> *const Registry = unsafe { std::mem::transmute(sym) };
        let r = f();
        // SAFETY: the pointer is a static of a loaded copy (never unloaded, module docs);
        // `magic` and `abi` are written only at compile time, the rest are atomics.
        match unsafe { r.as_ref() } {
            Some(r) if r.magic == MAGIC && r.abi == ABI => r,
            _ => &REGISTRY,
        }
    })
}

struct RegistryLock(&'static Registry);

impl RegistryLock {
    fn take(r: &'static Registry) -> Self {
        let mut spins = 0u32;
        while r
            .lock
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // Held only across a join (milliseconds; an fpga bring-up at most seconds).
            spins += 1;
            if spins < 100 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        RegistryLock(r)
    }
}

impl Drop for RegistryLock {
    fn drop(&mut self) {
        self.0.lock.store(0, Ordering::Release);
    }
}

/// Joins the job once per process: forwards to the driver another copy published, or calls
/// `join` and publishes the result. `upgrade` makes, from the joined job, what gives a new
/// handle on it while any lives (the table serves forwarders from it).
pub(crate) fn join_shared(
    join: impl FnOnce() -> Result<ConcreteJob>,
    upgrade: impl FnOnce(&ConcreteJob) -> Upgrade,
) -> Result<ConcreteJob> {
    let reg = registry();
    let _held = RegistryLock::take(reg);
    let ours: *const Table = &TABLE;
    let published = reg.table.load(Ordering::Acquire);
    if !published.is_null() && !std::ptr::eq(published, ours) {
        // SAFETY: a published table is a static of a loaded copy (module docs), never
        // written after compile time.
        let t: &'static Table = unsafe { &*published };
        match crate::fwd::FwdDriver::acquire(t) {
            Ok(d) => return Ok(ConcreteJob::Fwd(skifch::Job::new(Arc::new(d)))),
            // The publisher's driver is gone (its library finalized and nobody forwards):
            // join anew below and publish ours instead.
            Err(Error::Bootstrap(_)) => {}
            Err(e) => return Err(e),
        }
    }
    let job = join()?;
    *owner() = Owner {
        upgrade: Some(upgrade(&job)),
        held: None,
        users: 0,
    };
    reg.table.store(ours.cast_mut(), Ordering::Release);
    Ok(job)
}

/// This process's job as another library sees it: the driver this copy joined with (joining
/// first if needed), used through its own published table by a forwarding driver, as a
/// second library of the process would. For tests of the table (the conformance suite
/// over it, `examples/conformance.rs --forwarded`); libraries call [`crate::init`].
pub fn forward_to_self() -> Result<skifch::Job<crate::fwd::FwdDriver>> {
    let _joined = crate::init_concrete()?;
    Ok(skifch::Job::new(Arc::new(crate::fwd::FwdDriver::acquire(
        &TABLE,
    )?)))
}

/// A new handle on the published driver, if a handle on it still lives.
pub(crate) type Upgrade = Box<dyn Fn() -> Option<ConcreteJob> + Send>;

/// The publishing side of this copy.
struct Owner {
    upgrade: Option<Upgrade>,
    /// A handle for the forwarders, while `users > 0`.
    held: Option<Arc<AnyDriver>>,
    users: usize,
}

fn owner() -> MutexGuard<'static, Owner> {
    static OWNER: Mutex<Owner> = Mutex::new(Owner {
        upgrade: None,
        held: None,
        users: 0,
    });
    OWNER.lock().unwrap_or_else(|p| p.into_inner())
}

/// An error as it crosses the table: a kind, two numbers, the message text.
#[repr(C)]
pub struct CErr {
    kind: u32,
    a: u32,
    b: u64,
    len: u32,
    msg: [u8; 240],
}

const E_WOULD_BLOCK: u32 = 1;
const E_UNREACHABLE: u32 = 2;
const E_TOO_LARGE: u32 = 3;
const E_PEER_LOST: u32 = 4;
const E_CORRUPT: u32 = 5;
const E_INVALID: u32 = 6;
const E_TIMED_OUT: u32 = 7;
const E_OS: u32 = 8;
const E_BOOTSTRAP: u32 = 9;

impl CErr {
    fn write(out: *mut CErr, e: &Error) {
        let (kind, a, b) = match e {
            Error::WouldBlock => (E_WOULD_BLOCK, 0, 0),
            Error::Unreachable { addr, why } => (
                E_UNREACHABLE,
                match why {
                    Unreachable::NoSuchRank => 0,
                    Unreachable::NoSuchPort => 1,
                    Unreachable::Closed => 2,
                },
                u64::from(addr.raw()),
            ),
            Error::MessageTooLarge { len, max } => (E_TOO_LARGE, *max, *len),
            Error::PeerLost { rank } => (E_PEER_LOST, *rank, 0),
            Error::Corrupt(_) => (E_CORRUPT, 0, 0),
            Error::InvalidArgument(_) => (E_INVALID, 0, 0),
            Error::TimedOut => (E_TIMED_OUT, 0, 0),
            Error::Bootstrap(_) => (E_BOOTSTRAP, 0, 0),
            _ => (E_OS, 0, 0),
        };
        let text = match e {
            Error::Corrupt(m) | Error::InvalidArgument(m) | Error::Bootstrap(m) => m.to_string(),
            Error::WouldBlock | Error::PeerLost { .. } | Error::TimedOut => String::new(),
            other => other.to_string(),
        };
        let mut c = CErr {
            kind,
            a,
            b,
            len: 0,
            msg: [0; 240],
        };
        let n = floor_char_boundary(&text, c.msg.len());
        c.msg[..n].copy_from_slice(&text.as_bytes()[..n]);
        c.len = n as u32;
        // SAFETY: `out` is the caller's valid, writable `CErr` (every table function's
        // contract).
        unsafe { out.write(c) };
    }

    /// The error this describes (the forwarding side).
    pub(crate) fn read(&self) -> Error {
        let text = || {
            let n = (self.len as usize).min(self.msg.len());
            String::from_utf8_lossy(&self.msg[..n]).into_owned()
        };
        match self.kind {
            E_WOULD_BLOCK => Error::WouldBlock,
            E_UNREACHABLE => Error::Unreachable {
                addr: NetAddr::new((self.b >> 16) as u16, self.b as u16),
                why: match self.a {
                    0 => Unreachable::NoSuchRank,
                    1 => Unreachable::NoSuchPort,
                    _ => Unreachable::Closed,
                },
            },
            E_TOO_LARGE => Error::MessageTooLarge {
                len: self.b,
                max: self.a,
            },
            E_PEER_LOST => Error::PeerLost { rank: self.a },
            E_CORRUPT => Error::Corrupt(text().into()),
            E_INVALID => Error::InvalidArgument(text().into()),
            E_TIMED_OUT => Error::TimedOut,
            E_BOOTSTRAP => Error::Bootstrap(text().into()),
            _ => Error::os(
                "the process's shared driver (another library's)",
                std::io::Error::other(text()),
            ),
        }
    }
}

fn floor_char_boundary(s: &str, max: usize) -> usize {
    let mut n = s.len().min(max);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    n
}

/// What a forwarder learns on [`Table::acquire`].
#[repr(C)]
pub struct Info {
    /// This rank.
    pub rank: u32,
    /// Ranks in the job.
    pub size: u32,
    /// [`Driver::max_ports`].
    pub max_ports: u32,
    /// [`RMA_NONE`] or [`RMA_SHM`].
    pub rma: u32,
    /// [`Driver::max_message`].
    pub max_message: u64,
    /// Bytes of `name` used.
    pub name_len: u32,
    /// [`Driver::name`].
    pub name: [u8; 28],
}

/// The driver offers no RMA.
pub const RMA_NONE: u32 = 0;
/// The driver offers the shm provider ([`crate::shm_rma::ShmRma`], stateless).
pub const RMA_SHM: u32 = 1;

/// One segment of a received message ([`skifch::driver::RawSeg`] in C layout).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CSeg {
    /// First byte, in the publisher's receive memory.
    pub ptr: *const u8,
    /// Bytes.
    pub len: usize,
}

/// A received message ([`RawMessage`] in C layout).
#[repr(C)]
pub struct CMsg {
    /// `segs[..count]` are valid.
    pub segs: [CSeg; skifch::driver::CONT_SIZE],
    /// Total bytes.
    pub len: usize,
    /// Valid segments.
    pub count: u32,
    /// The sender's raw address.
    pub src: u32,
    /// The token's words.
    pub token: [u64; 2],
}

/// A reservation ([`Reserved`] in C layout).
#[repr(C)]
pub struct CRes {
    /// [`Reserved::ptr`].
    pub ptr: *mut u8,
    /// [`Reserved::max`].
    pub max: usize,
    /// [`Reserved::tag`].
    pub tag: [u64; 2],
}

impl CRes {
    /// A reservation in C layout.
    pub fn new(r: Reserved) -> CRes {
        CRes {
            ptr: r.ptr,
            max: r.max,
            tag: r.tag,
        }
    }
    /// The reservation it carries.
    pub fn into_reserved(self) -> Reserved {
        Reserved {
            ptr: self.ptr,
            max: self.max,
            tag: self.tag,
        }
    }
}

/// The published driver: C functions of the copy that joined. Port and waiter handles are
/// opaque pointers owned by that copy. Functions returning `i32`/`isize` return a negative
/// value on failure and then (only then) write `*err`.
#[repr(C)]
pub struct Table {
    /// [`ABI`].
    pub abi: u32,
    /// `size_of::<Table>()`.
    pub size: u32,
    /// Counts a user and describes the driver; fails (`Bootstrap`) if it is gone.
    pub acquire: unsafe extern "C" fn(info: *mut Info, err: *mut CErr) -> i32,
    /// Ends a user's [`Table::acquire`].
    pub release: extern "C" fn(),
    /// [`AnyDriver::request_exit`].
    pub request_exit: extern "C" fn(status: i32) -> i32,
    /// [`AnyDriver::exit_request`]: `i64::MIN` for none.
    pub exit_request: extern "C" fn() -> i64,
    /// Opens `port`: its handle into `*out`, its address into `*addr`.
    pub open_port: unsafe extern "C" fn(
        port: u32,
        out: *mut *mut c_void,
        addr: *mut u32,
        err: *mut CErr,
    ) -> i32,
    /// Closes a port handle.
    pub close_port: unsafe extern "C" fn(p: *mut c_void),
    /// [`Port::send`] (`iov`: `n` `struct iovec`s; `whole`: [`SendMode::Whole`]).
    pub send: unsafe extern "C" fn(
        p: *mut c_void,
        dst: u32,
        iov: *const libc::iovec,
        n: usize,
        whole: u32,
        err: *mut CErr,
    ) -> isize,
    /// [`Port::recv_into`].
    pub recv: unsafe extern "C" fn(p: *mut c_void, out: *mut CMsg, err: *mut CErr) -> i32,
    /// [`Port::ready`]: 1, 0, or negative.
    pub ready: unsafe extern "C" fn(p: *mut c_void, err: *mut CErr) -> i32,
    /// [`Port::complete`].
    pub complete: unsafe extern "C" fn(p: *mut c_void, a: u64, b: u64),
    /// A waiter handle of a port (usable from any thread, freed by `waiter_free`).
    pub waiter: unsafe extern "C" fn(p: *mut c_void) -> *mut c_void,
    /// Frees a waiter handle.
    pub waiter_free: unsafe extern "C" fn(w: *mut c_void),
    /// [`Waiter::arm`].
    pub arm: unsafe extern "C" fn(w: *mut c_void) -> u32,
    /// [`Waiter::sleep`] (timeout in nanoseconds).
    pub sleep: unsafe extern "C" fn(w: *mut c_void, ticket: u32, timeout_ns: u64),
    /// [`Waiter::disarm`].
    pub disarm: unsafe extern "C" fn(w: *mut c_void),
    /// [`Waiter::lost_peer`]: -1 for none.
    pub lost_peer: unsafe extern "C" fn(w: *mut c_void) -> i64,
    /// [`Port::reserve`]: 1 with `*out` written, 0 for `None`, negative on failure.
    pub reserve: unsafe extern "C" fn(
        p: *mut c_void,
        dst: u32,
        max: usize,
        out: *mut CRes,
        err: *mut CErr,
    ) -> i32,
    /// [`Port::publish`] of a reservation of this port.
    pub publish: unsafe extern "C" fn(p: *mut c_void, r: *const CRes, len: usize),
}

static TABLE: Table = Table {
    abi: ABI,
    size: std::mem::size_of::<Table>() as u32,
    acquire: t_acquire,
    release: t_release,
    request_exit: t_request_exit,
    exit_request: t_exit_request,
    open_port: t_open_port,
    close_port: t_close_port,
    send: t_send,
    recv: t_recv,
    ready: t_ready,
    complete: t_complete,
    waiter: t_waiter,
    waiter_free: t_waiter_free,
    arm: t_arm,
    sleep: t_sleep,
    disarm: t_disarm,
    lost_peer: t_lost_peer,
    reserve: t_reserve,
    publish: t_publish,
};

/// The driver held for the forwarders (`None` before the first acquire or when gone).
fn held() -> Option<Arc<AnyDriver>> {
    owner().held.clone()
}

unsafe extern "C" fn t_acquire(info: *mut Info, err: *mut CErr) -> i32 {
    let mut o = owner();
    if o.held.is_none() {
        o.held = o
            .upgrade
            .as_ref()
            .and_then(|u| u())
            .map(|j| j.to_any().driver().clone());
    }
    let Some(d) = o.held.clone() else {
        CErr::write(
            err,
            &Error::Bootstrap(
                "the library that joined the job for this process has left it".into(),
            ),
        );
        return -1;
    };
    o.users += 1;
    drop(o);
    let name = d.name().as_bytes();
    let mut i = Info {
        rank: d.rank(),
        size: d.size(),
        max_ports: d.max_ports(),
        rma: match d.rma() {
            Some(r) if r.name() == "shm" => RMA_SHM,
            _ => RMA_NONE,
        },
        max_message: d.max_message() as u64,
        name_len: 0,
        name: [0; 28],
    };
    let n = name.len().min(i.name.len());
    i.name[..n].copy_from_slice(&name[..n]);
    i.name_len = n as u32;
    // SAFETY: `info` is the caller's writable `Info` (the table's contract).
    unsafe { info.write(i) };
    0
}

extern "C" fn t_release() {
    let mut o = owner();
    o.users = o.users.saturating_sub(1);
    if o.users == 0 {
        // The last forwarder: drop their handle outside the lock (finalisation may block).
        let d = o.held.take();
        drop(o);
        drop(d);
    }
}

extern "C" fn t_request_exit(status: i32) -> i32 {
    held().map_or(status, |d| d.request_exit(status))
}

extern "C" fn t_exit_request() -> i64 {
    held()
        .and_then(|d| d.exit_request())
        .map_or(i64::MIN, i64::from)
}

unsafe extern "C" fn t_open_port(
    port: u32,
    out: *mut *mut c_void,
    addr: *mut u32,
    err: *mut CErr,
) -> i32 {
    let r = held()
        .ok_or_else(|| Error::Bootstrap("the process's shared driver is not acquired".into()))
        .and_then(|d| d.open_port(port));
    match r {
        Ok(p) => {
            // SAFETY: `out` and `addr` are the caller's writable locations.
            unsafe {
                addr.write(p.addr().raw());
                out.write(Box::into_raw(Box::new(p)).cast());
            }
            0
        }
        Err(e) => {
            CErr::write(err, &e);
            -1
        }
    }
}

/// The port behind a handle.
///
/// # Safety
/// `p` is a live handle from `t_open_port`, used by one thread at a time (a forwarded
/// port is `&mut` on the forwarding side).
unsafe fn port<'a>(p: *mut c_void) -> &'a mut AnyPort {
    // SAFETY: the caller's contract.
    unsafe { &mut *p.cast::<AnyPort>() }
}

unsafe extern "C" fn t_close_port(p: *mut c_void) {
    // SAFETY: `p` came from `Box::into_raw` in `t_open_port` and is closed once.
    drop(unsafe { Box::from_raw(p.cast::<AnyPort>()) });
}

unsafe extern "C" fn t_send(
    p: *mut c_void,
    dst: u32,
    iov: *const libc::iovec,
    n: usize,
    whole: u32,
    err: *mut CErr,
) -> isize {
    // SAFETY: `IoSlice` is ABI-compatible with `struct iovec` on Unix; the caller passes
    // `n` valid iovecs whose buffers live across the call.
    let iov = unsafe { std::slice::from_raw_parts(iov.cast::<IoSlice<'_>>(), n) };
    let mode = if whole != 0 {
        SendMode::Whole
    } else {
        SendMode::Prefix
    };
    let dst = NetAddr::new((dst >> 16) as u16, dst as u16);
    // SAFETY: a live handle, used by the forwarding port's one `&mut` at a time.
    match unsafe { port(p) }.send(dst, iov, mode) {
        Ok(n) => n as isize,
        Err(e) => {
            CErr::write(err, &e);
            -1
        }
    }
}

unsafe extern "C" fn t_reserve(
    p: *mut c_void,
    dst: u32,
    max: usize,
    out: *mut CRes,
    err: *mut CErr,
) -> i32 {
    let dst = NetAddr::new((dst >> 16) as u16, dst as u16);
    // SAFETY: a live handle, used by the forwarding port's one `&mut` at a time.
    match unsafe { port(p) }.reserve(dst, max) {
        Ok(Some(r)) => {
            // SAFETY: the caller's `out` is valid for writes.
            unsafe { out.write(CRes::new(r)) };
            1
        }
        Ok(None) => 0,
        Err(e) => {
            CErr::write(err, &e);
            -1
        }
    }
}

unsafe extern "C" fn t_publish(p: *mut c_void, r: *const CRes, len: usize) {
    // SAFETY: the caller passes a reservation of this port's `reserve`, once.
    let r = unsafe { r.read() }.into_reserved();
    // SAFETY: a live handle; the reservation's contract is the caller's (`Port::publish`).
    unsafe { port(p).publish(r, len) }
}

unsafe extern "C" fn t_recv(p: *mut c_void, out: *mut CMsg, err: *mut CErr) -> i32 {
    let mut m = RawMessage::EMPTY;
    // SAFETY: a live handle, used by the forwarding port's one `&mut` at a time.
    match unsafe { port(p) }.recv_into(&mut m) {
        Ok(()) => {
            let seg = |i: usize| CSeg {
                ptr: m.segs[i].ptr,
                len: m.segs[i].len,
            };
            // SAFETY: `out` is the caller's writable `CMsg`.
            unsafe {
                out.write(CMsg {
                    segs: [seg(0), seg(1)],
                    len: m.len,
                    count: m.count,
                    src: m.src.raw(),
                    token: [m.token.a, m.token.b],
                })
            };
            0
        }
        Err(e) => {
            CErr::write(err, &e);
            -1
        }
    }
}

unsafe extern "C" fn t_ready(p: *mut c_void, err: *mut CErr) -> i32 {
    // SAFETY: a live handle, used by the forwarding port's one `&mut` at a time.
    match unsafe { port(p) }.ready() {
        Ok(r) => i32::from(r),
        Err(e) => {
            CErr::write(err, &e);
            -1
        }
    }
}

unsafe extern "C" fn t_complete(p: *mut c_void, a: u64, b: u64) {
    // SAFETY: a live handle; the token is one `t_recv` returned on it, completed once
    // (the forwarding port's `complete` contract).
    unsafe { port(p).complete(Token { a, b }) }
}

unsafe extern "C" fn t_waiter(p: *mut c_void) -> *mut c_void {
    // SAFETY: a live handle; `waiter` takes `&self`.
    let w = unsafe { port(p) }.waiter();
    Box::into_raw(Box::new(w)).cast()
}

/// The waiter behind a handle.
///
/// # Safety
/// `w` is a live handle from `t_waiter` (shared by any number of threads: `AnyWaiter` is
/// `Sync`).
unsafe fn waiter<'a>(w: *mut c_void) -> &'a AnyWaiter {
    // SAFETY: the caller's contract.
    unsafe { &*w.cast::<AnyWaiter>() }
}

unsafe extern "C" fn t_waiter_free(w: *mut c_void) {
    // SAFETY: `w` came from `Box::into_raw` in `t_waiter` and is freed once.
    drop(unsafe { Box::from_raw(w.cast::<AnyWaiter>()) });
}

unsafe extern "C" fn t_arm(w: *mut c_void) -> u32 {
    // SAFETY: a live waiter handle.
    unsafe { waiter(w) }.arm()
}

unsafe extern "C" fn t_sleep(w: *mut c_void, ticket: u32, timeout_ns: u64) {
    // SAFETY: a live waiter handle.
    unsafe { waiter(w) }.sleep(ticket, Duration::from_nanos(timeout_ns))
}

unsafe extern "C" fn t_disarm(w: *mut c_void) {
    // SAFETY: a live waiter handle.
    unsafe { waiter(w) }.disarm()
}

unsafe extern "C" fn t_lost_peer(w: *mut c_void) -> i64 {
    // SAFETY: a live waiter handle.
    unsafe { waiter(w) }.lost_peer().map_or(-1, i64::from)
}
