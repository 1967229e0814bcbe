//! Opening the fabric: provider choice (`fi_getinfo` with the driver's requirements), the
//! fabric, domain and address vector one rank shares by all its endpoints ([`Net`]), and
//! the endpoints with their completion queue and pre-registered buffers ([`Ep`]).
#![allow(unsafe_code)]

use std::alloc::Layout;
use std::ffi::{c_void, CString};
use std::mem::MaybeUninit;
use std::os::fd::RawFd;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use skifch::{Error, Result};

use super::ffi::*;
use super::sys::{self, Info, Owned};
use super::Config;

/// What a rank opens once: fabric, domain, address vector, and the chosen provider's facts.
pub struct Net {
    // Field order is drop order: the AV and domain close before the fabric.
    pub(super) av: Owned<fid_av>,
    pub(super) domain: Owned<fid_domain>,
    pub(super) fabric: Owned<fid_fabric>,
    info: Info,
    /// The provider, as `fi_info -l` names it (`tcp;ofi_rxm`, `verbs;ofi_rxm`, `efa`, …).
    pub provider: String,
    /// The domain (for sockets-based providers, the network interface: `lo`, `eth0`).
    pub domain_name: String,
    /// Largest message `fi_inject` takes.
    pub inject_size: usize,
    /// Buffers must be registered (`FI_MR_LOCAL`).
    pub mr_local: bool,
    /// The domain's memory-registration mode (`FI_MR_*` bits, `fi_mr(3)`).
    pub mr_mode: u32,
    /// Over `net`: the domain's progress set (`progress_set`), found once.
    progress: OnceLock<Option<RawFd>>,
}

fn set_str(slot: &mut *mut libc::c_char, v: &str) -> Result<()> {
    let c = CString::new(v)
        .map_err(|_| Error::InvalidArgument(format!("{v:?} contains a NUL byte").into()))?;
    // SAFETY: strdup copies the NUL-terminated string into malloc'd memory, which
    // fi_freeinfo frees with the hints.
    *slot = unsafe { libc::strdup(c.as_ptr()) };
    Ok(())
}

/// Every `provider (domain)` pair libfabric offers for reliable-datagram messaging, for
/// the error message when the configured one is not there.
fn offered(lib: &sys::Lib) -> String {
    let mut list: *mut fi_info = std::ptr::null_mut();
    // SAFETY: no hints; the list is freed by `Info`.
    let r = unsafe {
        (lib.getinfo)(
            sys::API_VERSION,
            std::ptr::null(),
            std::ptr::null(),
            0,
            std::ptr::null(),
            &mut list,
        )
    };
    let list = Info(list);
    if r != 0 {
        return format!("none ({})", sys::strerror(r as isize));
    }
    let mut seen = Vec::new();
    let mut p = list.0;
    while !p.is_null() {
        // SAFETY: `p` walks the list fi_getinfo returned, alive while `list` is.
        unsafe {
            if (*(*p).ep_attr).type_ == FI_EP_RDM {
                let s = format!(
                    "{} ({})",
                    sys::cstr((*(*p).fabric_attr).prov_name),
                    sys::cstr((*(*p).domain_attr).name)
                );
                if !seen.contains(&s) {
                    seen.push(s);
                }
            }
            p = (*p).next;
        }
    }
    if seen.is_empty() {
        "none".into()
    } else {
        seen.join(", ")
    }
}

impl Net {
    /// Finds a provider for the driver's needs (reliable datagrams, send-after-send order,
    /// thread-safe domain) as `cfg` restricts it, and opens fabric, domain and AV.
    /// `rx_size`: receives each endpoint keeps posted (asked of the provider as its
    /// receive queue size). `caps`: capabilities besides `FI_MSG` (`FI_RMA`, …).
    pub fn open(cfg: &Config, av_count: usize, rx_size: usize, caps: u64) -> Result<Net> {
        let lib = sys::lib()?;
        // SAFETY: fi_dupinfo(NULL) is fi_allocinfo: a zeroed fi_info with its attribute
        // structs allocated; filled below and freed by `Info`.
        let hints = Info(unsafe { (lib.dupinfo)(std::ptr::null()) });
        if hints.0.is_null() {
            return Err(Error::Bootstrap("fi_allocinfo failed".into()));
        }
        // SAFETY: `hints` and its attribute structs are live and ours.
        unsafe {
            let h = &mut *hints.0;
            h.caps = FI_MSG as u64 | caps;
            h.mode = FI_CONTEXT | FI_CONTEXT2;
            (*h.ep_attr).type_ = FI_EP_RDM;
            let d = &mut *h.domain_attr;
            d.threading = FI_THREAD_SAFE;
            d.av_type = FI_AV_TABLE;
            d.mr_mode = (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY) as i32;
            (*h.tx_attr).msg_order = FI_ORDER_SAS as u64;
            (*h.rx_attr).msg_order = FI_ORDER_SAS as u64;
            (*h.rx_attr).size = rx_size;
            if let Some(p) = &cfg.provider {
                set_str(&mut (*h.fabric_attr).prov_name, p)?;
            }
            if let Some(n) = &cfg.domain {
                set_str(&mut d.name, n)?;
            }
        }
        let mut list: *mut fi_info = std::ptr::null_mut();
        // SAFETY: valid hints; the result list is freed by `Info`.
        let r = unsafe {
            (lib.getinfo)(
                sys::API_VERSION,
                std::ptr::null(),
                std::ptr::null(),
                0,
                hints.0,
                &mut list,
            )
        };
        let list = Info(list);
        let wanted = || {
            format!(
                "provider {} on domain {}",
                cfg.provider.as_deref().unwrap_or("<any but shm>"),
                cfg.domain.as_deref().unwrap_or("<any>")
            )
        };
        if r != 0 {
            return Err(Error::Bootstrap(
                format!(
                    "ofi: libfabric offers no reliable-datagram endpoint (FI_EP_RDM, FI_MSG, send-after-send order) for {}: {}. Offered: {}. Choose with SKIFCH_OFI_PROVIDER / SKIFCH_OFI_DOMAIN (see `fi_info -t FI_EP_RDM`)",
                    wanted(),
                    sys::strerror(r as isize),
                    offered(lib)
                )
                .into(),
            ));
        }
        // The first entry fi_getinfo ranks best that matches the domain asked for (the
        // hints' domain name is not a filter for every provider: tcp;ofi_rxm ignores it),
        // except the shm provider (one node only) unless it was asked for.
        let mut p = list.0;
        // SAFETY: walking the returned list while it lives.
        unsafe {
            while !p.is_null() {
                let prov = sys::cstr((*(*p).fabric_attr).prov_name);
                let dom = sys::cstr((*(*p).domain_attr).name);
                let prov_ok = cfg.provider.is_some() || !prov.starts_with("shm");
                if prov_ok && cfg.domain.as_ref().is_none_or(|d| *d == dom) {
                    break;
                }
                p = (*p).next;
            }
        }
        // Without a provider asked for, libfabric 1.17 ranks `tcp;ofi_rxm` before `net`,
        // the fork of tcp with native reliable datagrams that became libfabric 1.18's
        // `tcp`: no rxm layer (no copy through its buffers, no rendezvous size limit) and
        // no wait-descriptor signal per completion. Over the sockets providers, `net` on
        // the same domain is taken when offered; hardware providers rank first anyway.
        // SAFETY: as above.
        unsafe {
            let sockets = ["tcp;ofi_rxm", "sockets", "udp;ofi_rxd", "net;ofi_rxm"];
            if cfg.provider.is_none()
                && !p.is_null()
                && sockets.contains(&sys::cstr((*(*p).fabric_attr).prov_name).as_str())
            {
                let dom = sys::cstr((*(*p).domain_attr).name);
                let mut q = list.0;
                while !q.is_null() {
                    if sys::cstr((*(*q).fabric_attr).prov_name) == "net"
                        && sys::cstr((*(*q).domain_attr).name) == dom
                    {
                        p = q;
                        break;
                    }
                    q = (*q).next;
                }
            }
        }
        if p.is_null() {
            return Err(Error::Bootstrap(
                format!(
                    "ofi: libfabric offers no reliable-datagram endpoint for {}. Offered: {}. Choose with SKIFCH_OFI_PROVIDER / SKIFCH_OFI_DOMAIN (see `fi_info -t FI_EP_RDM`)",
                    wanted(),
                    offered(lib)
                )
                .into(),
            ));
        }
        // SAFETY: `p` is a live entry; dupinfo copies it (with its attributes).
        let info = Info(unsafe { (lib.dupinfo)(p) });
        drop(list);
        // SAFETY: `info` is a complete fi_info of the chosen provider.
        let (provider, domain_name, inject_size, mr_mode) = unsafe {
            let i = &*info.0;
            (
                sys::cstr((*i.fabric_attr).prov_name),
                sys::cstr((*i.domain_attr).name),
                (*i.tx_attr).inject_size,
                (*i.domain_attr).mr_mode as u32,
            )
        };
        let mr_local = mr_mode & FI_MR_LOCAL != 0;
        let ctx = |what: &str, r: isize| {
            Error::Bootstrap(
                format!(
                    "ofi: {what} on provider {provider}, domain {domain_name}: {} ({r})",
                    sys::strerror(r)
                )
                .into(),
            )
        };
        let mut fab: *mut fid_fabric = std::ptr::null_mut();
        // SAFETY: the chosen entry's fabric attributes.
        let r = unsafe { (lib.fabric)((*info.0).fabric_attr, &mut fab, std::ptr::null_mut()) };
        if r != 0 {
            return Err(ctx("fi_fabric", r as isize));
        }
        let fabric = Owned(fab);
        let mut dom: *mut fid_domain = std::ptr::null_mut();
        // SAFETY: live fabric, its own fi_info entry.
        let r = unsafe { sys::domain(fabric.0, info.0, &mut dom) };
        if r != 0 {
            return Err(ctx("fi_domain", r));
        }
        let domain = Owned(dom);
        // SAFETY: all-zero is the documented default of fi_av_attr.
        let mut attr: fi_av_attr = unsafe { std::mem::zeroed() };
        attr.type_ = FI_AV_TABLE;
        attr.count = av_count;
        let mut av: *mut fid_av = std::ptr::null_mut();
        // SAFETY: live domain.
        let r = unsafe { sys::av_open(domain.0, &mut attr, &mut av) };
        if r != 0 {
            return Err(ctx("fi_av_open", r));
        }
        Ok(Net {
            av: Owned(av),
            domain,
            fabric,
            info,
            provider,
            domain_name,
            inject_size,
            mr_local,
            mr_mode,
            progress: OnceLock::new(),
        })
    }

    /// Over `net`, the domain's progress set: the epoll set of every socket of the domain,
    /// readable while one has data — what a waiter sleeps on. Found once, through the wait
    /// descriptor of a CQ opened for that and closed again, so that the endpoints' own CQs
    /// need none: each CQ wait descriptor is an epoll set holding the progress set, and
    /// every arriving message ran the kernel's wakeup through each of them (one per
    /// endpoint: six a rank, seven with RMA) inside the sender's `sendto`: 0.25-0.35 us of
    /// every send (`docs/results-2026-11-29-fabric-gap`). `None` elsewhere, or when not
    /// found.
    fn progress_fd(&self) -> Option<RawFd> {
        if self.provider != "net" {
            return None;
        }
        *self.progress.get_or_init(|| {
            let mut cq: *mut fid_cq = std::ptr::null_mut();
            // SAFETY: all-zero is fi_cq_attr's default; the domain is live; the CQ is
            // closed by `Owned` when this block ends.
            unsafe {
                let mut attr: fi_cq_attr = std::mem::zeroed();
                attr.size = 1;
                attr.format = FI_CQ_FORMAT_DATA;
                attr.wait_obj = FI_WAIT_FD;
                if sys::cq_open(self.domain.0, &mut attr, &mut cq) != 0 {
                    return None;
                }
                let cq = Owned(cq);
                let mut fd: libc::c_int = -1;
                if sys::control(cq.fid(), FI_GETWAIT, (&mut fd as *mut libc::c_int).cast()) != 0 {
                    return None;
                }
                progress_set(fd)
            }
        })
    }

    /// The chosen provider's `fi_info` entry.
    pub fn info(&self) -> *const fi_info {
        self.info.0
    }

    /// `addr` as the provider prints it.
    pub fn straddr(&self, addr: &[u8]) -> String {
        // SAFETY: the AV is live.
        unsafe { sys::av_straddr(self.av.0, addr) }
    }

    /// Adds a peer endpoint's address (from its `fi_getname`).
    pub fn insert(&self, addr: &[u8]) -> Result<fi_addr_t> {
        // SAFETY: the AV is live; the address comes from the same provider on a peer (a
        // malformed one is rejected by the provider with an error).
        unsafe { sys::av_insert(self.av.0, addr) }
    }
}

/// An endpoint with its completion queue and `slots` buffers of `slot` bytes, each with an
/// operation context: `0..rx` for receives, `rx..` for sends.
pub struct Ep {
    pub(super) ep: Owned<fid_ep>,
    pub(super) cq: Owned<fid_cq>,
    mr: Option<Owned<fid_mr>>,
    /// Buffer memory: written by the provider while a receive is posted, so only ever
    /// reached through raw pointers.
    mem: *mut u8,
    ctx: *mut fi_context2,
    slots: usize,
    /// Bytes per buffer.
    pub slot: usize,
    /// Receive buffers (the first `rx` slots).
    pub rx: usize,
    /// The CQ's wait descriptor (`FI_WAIT_FD`), or -1 where it has none (over `net`
    /// always: `Net::progress_fd`).
    pub fd: RawFd,
    /// What a waiter sleeps on: [`Ep::fd`], or over `net` the domain's progress set
    /// (`progress_set`); -1 when neither is there.
    pub sleep_fd: RawFd,
    /// This endpoint's address (`fi_getname`).
    pub name: Vec<u8>,
    pub(super) net: Arc<Net>,
}

// SAFETY: the raw pointers are this endpoint's own allocations (freed in Drop, after the
// endpoint is closed); the libfabric objects are thread-safe (FI_THREAD_SAFE).
unsafe impl Send for Ep {}
// SAFETY: shared use is limited to the CQ wait calls, which FI_THREAD_SAFE allows.
unsafe impl Sync for Ep {}

impl Ep {
    /// The domain's progress set when this endpoint's waits sleep on it (over `net`):
    /// readable when data arrives on any of the domain's connections, a peer's transfer
    /// included, unlike a CQ's descriptor, which only completions wake.
    pub fn progress_set(&self) -> Option<RawFd> {
        (self.sleep_fd >= 0 && self.sleep_fd != self.fd).then_some(self.sleep_fd)
    }

    /// Opens an endpoint with `rx` receive and `tx` send buffers of `slot` bytes, bound to
    /// a fresh CQ (with a wait descriptor where the provider has one) and to the AV.
    pub fn open(net: &Arc<Net>, rx: usize, tx: usize, slot: usize) -> Result<Ep> {
        let slots = rx + tx;
        let err = |what: &str, r: isize| {
            Error::Bootstrap(
                format!(
                    "ofi: {what} on provider {}, domain {}: {} ({r})",
                    net.provider,
                    net.domain_name,
                    sys::strerror(r)
                )
                .into(),
            )
        };
        let lay = Layout::from_size_align(slots.max(1) * slot, 4096)
            .map_err(|_| Error::InvalidArgument("ofi: buffer pool too large".into()))?;
        let clay = Layout::array::<fi_context2>(slots.max(1))
            .map_err(|_| Error::InvalidArgument("ofi: too many buffers".into()))?;
        // SAFETY: non-zero sizes; freed in Drop with the same layouts.
        let (mem, ctx) = unsafe {
            (
                std::alloc::alloc_zeroed(lay),
                std::alloc::alloc_zeroed(clay),
            )
        };
        let mut me = Ep {
            ep: Owned(std::ptr::null_mut()),
            cq: Owned(std::ptr::null_mut()),
            mr: None,
            mem,
            ctx: ctx.cast(),
            slots,
            slot,
            rx,
            fd: -1,
            sleep_fd: -1,
            name: Vec::new(),
            net: net.clone(),
        };
        if mem.is_null() || ctx.is_null() {
            return Err(Error::Bootstrap(
                "ofi: out of memory for endpoint buffers".into(),
            ));
        }
        let mut cq: *mut fid_cq = std::ptr::null_mut();
        // Over `net` a waiter sleeps on the domain's progress set: the CQ needs no wait
        // descriptor of its own (`Net::progress_fd`).
        let progress = net.progress_fd();
        let waits: &[fi_wait_obj] = if progress.is_some() {
            &[FI_WAIT_NONE]
        } else {
            &[FI_WAIT_FD, FI_WAIT_NONE]
        };
        for &wait in waits {
            // SAFETY: all-zero is fi_cq_attr's default; the domain is live.
            let r = unsafe {
                let mut attr: fi_cq_attr = std::mem::zeroed();
                attr.size = slots * 2 + 64;
                attr.format = FI_CQ_FORMAT_DATA;
                attr.wait_obj = wait;
                sys::cq_open(net.domain.0, &mut attr, &mut cq)
            };
            if r == 0 {
                break;
            }
            if wait == FI_WAIT_NONE {
                return Err(err("fi_cq_open", r));
            }
        }
        me.cq = Owned(cq);
        let mut ep: *mut fid_ep = std::ptr::null_mut();
        // SAFETY: live domain and its fi_info.
        let r = unsafe { sys::endpoint(net.domain.0, net.info.0, &mut ep) };
        if r != 0 {
            return Err(err("fi_endpoint", r));
        }
        me.ep = Owned(ep);
        // SAFETY: endpoint, CQ and AV are live objects of one domain.
        unsafe {
            let r = sys::bind(me.ep.fid(), me.cq.fid(), (FI_TRANSMIT | FI_RECV) as u64);
            if r != 0 {
                return Err(err("fi_ep_bind(cq)", r));
            }
            let r = sys::bind(me.ep.fid(), net.av.fid(), 0);
            if r != 0 {
                return Err(err("fi_ep_bind(av)", r));
            }
            let r = sys::control(me.ep.fid(), FI_ENABLE, std::ptr::null_mut());
            if r != 0 {
                return Err(err("fi_enable", r));
            }
            let mut fd: libc::c_int = -1;
            if let Some(p) = progress {
                me.sleep_fd = p;
            } else if sys::control(
                me.cq.fid(),
                FI_GETWAIT,
                (&mut fd as *mut libc::c_int).cast(),
            ) == 0
            {
                me.fd = fd;
                me.sleep_fd = if net.provider == "net" {
                    progress_set(fd).unwrap_or(fd)
                } else {
                    fd
                };
            }
        }
        if net.mr_local {
            let mut mr: *mut fid_mr = std::ptr::null_mut();
            // SAFETY: the pool outlives the registration (closed first in Drop).
            let r = unsafe {
                sys::mr_reg(
                    net.domain.0,
                    mem.cast(),
                    lay.size(),
                    (FI_SEND | FI_RECV) as u64,
                    0,
                    &mut mr,
                )
            };
            if r != 0 {
                return Err(err("fi_mr_reg", r));
            }
            me.mr = Some(Owned(mr));
        }
        let mut name = [0u8; 256];
        // SAFETY: live, enabled endpoint.
        let n = unsafe { sys::getname(me.ep.0, &mut name)? };
        me.name = name[..n].to_vec();
        Ok(me)
    }

    /// First byte of buffer `i` (`i < slots`).
    pub fn buf(&self, i: usize) -> *mut u8 {
        debug_assert!(i < self.slots);
        // SAFETY: in bounds of the pool for i < slots.
        unsafe { self.mem.add(i * self.slot) }
    }

    /// The operation context of buffer `i`.
    pub fn ctx(&self, i: usize) -> *mut fi_context2 {
        debug_assert!(i < self.slots);
        // SAFETY: in bounds of the context array for i < slots.
        unsafe { self.ctx.add(i) }
    }

    /// The buffer index a completion's context names, if it is one of ours.
    pub fn slot_of(&self, ctx: *mut c_void) -> Option<usize> {
        let off = (ctx as usize).checked_sub(self.ctx as usize)?;
        let sz = std::mem::size_of::<fi_context2>();
        (off % sz == 0 && off / sz < self.slots).then_some(off / sz)
    }

    /// The local descriptor for buffers (`fi_mr_desc`), null where none is needed.
    pub fn desc(&self) -> *mut c_void {
        // SAFETY: a live MR's mem_desc field.
        self.mr
            .as_ref()
            .map_or(std::ptr::null_mut(), |m| unsafe { (*m.0).mem_desc })
    }

    /// Posts receive buffer `i` (`-FI_EAGAIN` when the receive queue is full).
    pub fn post(&self, i: usize) -> isize {
        debug_assert!(i < self.rx);
        // SAFETY: buffer `i` and its context belong to this endpoint and are not in use
        // (the caller reposts a buffer only after its completion was handled).
        unsafe { sys::recv(self.ep.0, self.buf(i), self.slot, self.desc(), self.ctx(i)) }
    }

    /// Reads completions into `out`: the count, 0 when none, or a negative error code
    /// (`-FI_EAVAIL`: an error entry waits, see [`Ep::read_error`]).
    pub fn read(&self, out: &mut [fi_cq_data_entry]) -> isize {
        // SAFETY: the same memory seen as possibly uninitialized: the provider only writes
        // whole entries of plain data into it.
        self.read_uninit(unsafe {
            &mut *(out as *mut [fi_cq_data_entry] as *mut [MaybeUninit<fi_cq_data_entry>])
        })
    }

    /// As [`Ep::read`], into entries not initialized before (no zeroing per poll); the
    /// first `count` are initialized after it.
    pub fn read_uninit(&self, out: &mut [MaybeUninit<fi_cq_data_entry>]) -> isize {
        // SAFETY: live CQ of format DATA.
        match unsafe { sys::cq_read(self.cq.0, out) } {
            r if r == -(FI_EAGAIN as isize) => 0,
            r => r,
        }
    }

    /// One error completion with the provider's explanation.
    pub fn read_error(&self) -> Option<(fi_cq_err_entry, String)> {
        // SAFETY: live CQ.
        unsafe { sys::cq_readerr(self.cq.0) }
    }

    /// 0 when sleeping on [`Ep::fd`] is safe now (`fi_trywait`).
    pub fn trywait(&self) -> isize {
        // SAFETY: live fabric and CQ.
        unsafe { sys::trywait(self.net.fabric.0, self.cq.fid()) }
    }
}

/// Sleeps until one of `fds` is readable or `cap` has passed (`ppoll`: microsecond caps,
/// which `poll`'s milliseconds would stretch; at least 1 us); whether one was readable.
pub fn wait_readable<const N: usize>(fds: [RawFd; N], cap: Duration) -> bool {
    let ts = libc::timespec {
        tv_sec: cap.as_secs() as libc::time_t,
        tv_nsec: cap.subsec_nanos().max(1000) as libc::c_long,
    };
    ppoll(fds, &ts)
}

/// Whether `fd` is readable now (a look, no sleep).
pub fn readable_now(fd: RawFd) -> bool {
    ppoll(
        [fd],
        &libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
    )
}

fn ppoll<const N: usize>(fds: [RawFd; N], ts: &libc::timespec) -> bool {
    let mut set = fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    // SAFETY: N valid pollfd entries (a closed descriptor reports POLLNVAL, not undefined
    // behaviour), a valid timespec, no mask.
    unsafe { libc::ppoll(set.as_mut_ptr(), N as libc::nfds_t, ts, std::ptr::null()) > 0 }
}

/// The epoll set nested in the `net` provider's CQ wait descriptor `fd`: the domain's
/// progress set, readable while one of its sockets has data.
///
/// Why not `fd` itself: `fd` is an epoll set of that progress set and the CQ's signal
/// socket, which `net` writes on the first completion and which stays readable from then
/// on, as libfabric 1.17's `net` `fi_trywait` never reads it (only `fi_cq_sread` and
/// `fi_wait` do). A waiter sleeping on `fd` then returned at once, every time: a rank
/// waiting for a late peer spun through its sleep path, two system calls and the
/// hierarchy's heavy barrier a turn, instead of sleeping
/// (`docs/results-2026-11-29-ofi-syscalls`). The set is found in `/proc/self/fdinfo`
/// (the descriptors an epoll set watches, `tfd:`); `None` when that does not name
/// exactly one epoll set.
fn progress_set(fd: RawFd) -> Option<RawFd> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
    let mut sets = info
        .lines()
        .filter_map(|l| {
            l.strip_prefix("tfd:")?
                .split_whitespace()
                .next()?
                .parse::<RawFd>()
                .ok()
        })
        .filter(|t| {
            std::fs::read_link(format!("/proc/self/fd/{t}"))
                .is_ok_and(|l| l.as_os_str() == "anon_inode:[eventpoll]")
        });
    let set = sets.next()?;
    sets.next().is_none().then_some(set)
}

impl Drop for Ep {
    fn drop(&mut self) {
        // Close the endpoint (cancelling posted buffers), then CQ and MR, then the memory.
        drop(std::mem::replace(&mut self.ep, Owned(std::ptr::null_mut())));
        drop(std::mem::replace(&mut self.cq, Owned(std::ptr::null_mut())));
        self.mr = None;
        let lay = Layout::from_size_align(self.slots.max(1) * self.slot, 4096);
        let clay = Layout::array::<fi_context2>(self.slots.max(1));
        if let (Ok(lay), Ok(clay), false) = (lay, clay, self.mem.is_null() || self.ctx.is_null()) {
            // SAFETY: allocated in `open` with these layouts; nothing refers to them now.
            unsafe {
                std::alloc::dealloc(self.mem, lay);
                std::alloc::dealloc(self.ctx.cast(), clay);
            }
        }
    }
}
