//! The raw tier over libfabric: the library is loaded at run time (`dlopen` of
//! `libfabric.so.1`), so the crate's other users (libmpi.so, libskifch.so, …) gain no link
//! dependency on it and a machine without libfabric still runs every other driver. The
//! five exported entry points are looked up once ([`lib`]); every other libfabric call is
//! a `static inline` wrapper in C that calls through the object's ops table, and is written
//! here the same way over the struct layouts of [`super::ffi`] (libfabric's ABI: ops tables
//! only grow at the end, so the 1.17 layouts hold for later 1.x libraries).
//!
//! Every function here is `unsafe`: the caller passes live libfabric objects. The safe
//! owners ([`Owned`], [`Info`]) close what they hold exactly once.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use skifch::{Error, Result};

use super::ffi::*;

/// The libfabric API version this driver is written against (`FI_VERSION(1, 17)`).
pub const API_VERSION: u32 = (1 << 16) | 17;

type GetInfo = unsafe extern "C" fn(
    u32,
    *const c_char,
    *const c_char,
    u64,
    *const fi_info,
    *mut *mut fi_info,
) -> c_int;
type FreeInfo = unsafe extern "C" fn(*mut fi_info);
type DupInfo = unsafe extern "C" fn(*const fi_info) -> *mut fi_info;
type Fabric = unsafe extern "C" fn(*mut fi_fabric_attr, *mut *mut fid_fabric, *mut c_void) -> c_int;
type StrError = unsafe extern "C" fn(c_int) -> *const c_char;

/// The entry points libfabric exports (the rest are inline calls through ops tables).
pub struct Lib {
    /// `fi_getinfo`.
    pub getinfo: GetInfo,
    /// `fi_freeinfo`.
    pub freeinfo: FreeInfo,
    /// `fi_dupinfo` (`fi_allocinfo` is `fi_dupinfo(NULL)`).
    pub dupinfo: DupInfo,
    /// `fi_fabric`.
    pub fabric: Fabric,
    strerror: StrError,
}

/// The library, loaded on first use; a clear error where it is not installed.
pub fn lib() -> Result<&'static Lib> {
    static LIB: OnceLock<std::result::Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(load)
        .as_ref()
        .map_err(|e| Error::Bootstrap(e.clone().into()))
}

fn load() -> std::result::Result<Lib, String> {
    const NAME: &CStr = c"libfabric.so.1";
    // SAFETY: dlopen with a NUL-terminated name; libfabric's initialisers are reentrant.
    let h = unsafe { libc::dlopen(NAME.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        // SAFETY: dlerror returns a NUL-terminated string or null.
        let why = unsafe { cstr(libc::dlerror()) };
        return Err(format!(
            "the ofi driver needs libfabric (libfabric.so.1; Debian: apt install libfabric1): {why}"
        ));
    }
    let sym = |name: &CStr| -> std::result::Result<*mut c_void, String> {
        // SAFETY: `h` is a live handle, `name` NUL-terminated.
        let p = unsafe { libc::dlsym(h, name.as_ptr()) };
        if p.is_null() {
            Err(format!("libfabric.so.1 has no symbol {name:?}"))
        } else {
            Ok(p)
        }
    };
    // SAFETY: each symbol is the libfabric function of that name, whose C prototype the
    // type alias spells out (fabric.h of 1.17, the default symbol versions).
    unsafe {
        Ok(Lib {
            getinfo: std::mem::transmute::<*mut c_void, GetInfo>(sym(c"fi_getinfo")?),
            freeinfo: std::mem::transmute::<*mut c_void, FreeInfo>(sym(c"fi_freeinfo")?),
            dupinfo: std::mem::transmute::<*mut c_void, DupInfo>(sym(c"fi_dupinfo")?),
            fabric: std::mem::transmute::<*mut c_void, Fabric>(sym(c"fi_fabric")?),
            strerror: std::mem::transmute::<*mut c_void, StrError>(sym(c"fi_strerror")?),
        })
    }
}

/// A C string as text ("" for null).
///
/// # Safety
/// `p` is null or points to a NUL-terminated string.
pub unsafe fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: the caller's contract.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// `fi_strerror` of a (positive or negative) libfabric error code.
pub fn strerror(code: isize) -> String {
    match lib() {
        // SAFETY: fi_strerror accepts any code and returns a static string.
        Ok(l) => unsafe { cstr((l.strerror)(code.unsigned_abs() as c_int)) },
        Err(_) => format!("libfabric error {code}"),
    }
}

/// An error from libfabric call `what` that returned `ret`.
pub fn err(what: &str, ret: isize) -> Error {
    Error::Bootstrap(format!("{what}: {} ({ret})", strerror(ret)).into())
}

/// Turns a libfabric return code into a result.
pub fn check(what: &str, ret: c_int) -> Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(err(what, ret as isize))
    }
}

/// Calls an ops-table entry, `-FI_ENOSYS` where the provider left it empty.
macro_rules! op {
    ($table:expr, $f:ident ( $($a:expr),* )) => {
        match (*$table).$f {
            Some(f) => f($($a),*) as isize,
            None => -(super::ffi::FI_ENOSYS as isize),
        }
    };
}

/// A `fi_getinfo` list, freed on drop.
pub struct Info(pub *mut fi_info);

impl Drop for Info {
    fn drop(&mut self) {
        if let (false, Ok(l)) = (self.0.is_null(), lib()) {
            // SAFETY: the list came from fi_getinfo/fi_dupinfo and is freed once.
            unsafe { (l.freeinfo)(self.0) }
        }
    }
}

// SAFETY: the list is only read after creation (by fi_endpoint, under FI_THREAD_SAFE) and
// freed once, by its owner.
unsafe impl Send for Info {}
// SAFETY: as for Send: shared use is read-only.
unsafe impl Sync for Info {}

/// A libfabric object (`fid` at offset 0 of every `fid_*`), closed on drop.
pub struct Owned<T>(pub *mut T);

impl<T> Owned<T> {
    /// The object's `fid` header.
    pub fn fid(&self) -> *mut fid {
        self.0.cast()
    }
}

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: every fid_* struct starts with its `struct fid`; closed once, after
            // everything bound to it (owners drop in dependency order).
            unsafe { close(self.fid()) };
        }
    }
}

// SAFETY: the objects are opened with FI_THREAD_SAFE (the domain and everything in it),
// so libfabric serialises concurrent calls itself; the pointer is only a handle.
unsafe impl<T> Send for Owned<T> {}
// SAFETY: as for Send.
unsafe impl<T> Sync for Owned<T> {}

/// `fi_close`.
///
/// # Safety
/// `f` is a live fid, not used afterwards.
pub unsafe fn close(f: *mut fid) -> isize {
    // SAFETY: the caller's contract; `ops` of a live fid is valid.
    unsafe { op!((*f).ops, close(f)) }
}

/// `fi_control` (`FI_ENABLE`, `FI_GETWAIT`).
///
/// # Safety
/// `f` is a live fid; `arg` is what `cmd` expects.
pub unsafe fn control(f: *mut fid, cmd: u32, arg: *mut c_void) -> isize {
    // SAFETY: the caller's contract.
    unsafe { op!((*f).ops, control(f, cmd as c_int, arg)) }
}

/// `fi_ep_bind` / `fi_av_bind`-style bind of `what` to `f`.
///
/// # Safety
/// Both are live fids of one domain.
pub unsafe fn bind(f: *mut fid, what: *mut fid, flags: u64) -> isize {
    // SAFETY: the caller's contract.
    unsafe { op!((*f).ops, bind(f, what, flags)) }
}

/// `fi_domain`.
///
/// # Safety
/// `fab` is a live fabric, `info` one of its `fi_getinfo` entries.
pub unsafe fn domain(fab: *mut fid_fabric, info: *mut fi_info, out: *mut *mut fid_domain) -> isize {
    // SAFETY: the caller's contract.
    unsafe { op!((*fab).ops, domain(fab, info, out, std::ptr::null_mut())) }
}

/// `fi_trywait` on one fid: 0 when blocking on its wait object is safe now.
///
/// # Safety
/// `fab` is a live fabric and `f` a live fid in it.
pub unsafe fn trywait(fab: *mut fid_fabric, f: *mut fid) -> isize {
    let mut fids = [f];
    // SAFETY: the caller's contract; the array outlives the call.
    unsafe { op!((*fab).ops, trywait(fab, fids.as_mut_ptr(), 1)) }
}

/// `fi_av_open`.
///
/// # Safety
/// `d` is a live domain.
pub unsafe fn av_open(d: *mut fid_domain, attr: *mut fi_av_attr, out: *mut *mut fid_av) -> isize {
    // SAFETY: the caller's contract.
    unsafe { op!((*d).ops, av_open(d, attr, out, std::ptr::null_mut())) }
}

/// `fi_cq_open`.
///
/// # Safety
/// `d` is a live domain.
pub unsafe fn cq_open(d: *mut fid_domain, attr: *mut fi_cq_attr, out: *mut *mut fid_cq) -> isize {
    // SAFETY: the caller's contract.
    unsafe { op!((*d).ops, cq_open(d, attr, out, std::ptr::null_mut())) }
}

/// `fi_endpoint`.
///
/// # Safety
/// `d` is a live domain, `info` the entry it was opened with.
pub unsafe fn endpoint(d: *mut fid_domain, info: *mut fi_info, out: *mut *mut fid_ep) -> isize {
    // SAFETY: the caller's contract.
    unsafe { op!((*d).ops, endpoint(d, info, out, std::ptr::null_mut())) }
}

/// `fi_mr_reg` of `len` bytes at `buf` for `access`.
///
/// # Safety
/// `d` is a live domain; the memory outlives the registration.
pub unsafe fn mr_reg(
    d: *mut fid_domain,
    buf: *const c_void,
    len: usize,
    access: u64,
    key: u64,
    out: *mut *mut fid_mr,
) -> isize {
    // SAFETY: the caller's contract.
    unsafe {
        op!(
            (*d).mr,
            reg(
                &mut (*d).fid,
                buf,
                len,
                access,
                0,
                key,
                0,
                out,
                std::ptr::null_mut()
            )
        )
    }
}

/// `fi_getname` of an endpoint into `buf`; returns the address length.
///
/// # Safety
/// `ep` is a live, enabled endpoint.
pub unsafe fn getname(ep: *mut fid_ep, buf: &mut [u8]) -> Result<usize> {
    let mut len = buf.len();
    // SAFETY: the caller's contract; `buf` has `len` writable bytes.
    let r = unsafe {
        op!(
            (*ep).cm,
            getname(&mut (*ep).fid, buf.as_mut_ptr().cast(), &mut len)
        )
    };
    if r != 0 || len > buf.len() {
        return Err(err(
            "fi_getname",
            if r != 0 { r } else { -(FI_ETOOSMALL as isize) },
        ));
    }
    Ok(len)
}

/// `fi_av_insert` of one address; returns its `fi_addr_t`.
///
/// # Safety
/// `av` is a live address vector; `addr` is an address of the AV's format.
pub unsafe fn av_insert(av: *mut fid_av, addr: &[u8]) -> Result<fi_addr_t> {
    let mut out: fi_addr_t = u64::MAX;
    // SAFETY: the caller's contract; one address, one output slot.
    let r = unsafe {
        op!(
            (*av).ops,
            insert(
                av,
                addr.as_ptr().cast(),
                1,
                &mut out,
                0,
                std::ptr::null_mut()
            )
        )
    };
    if r != 1 {
        return Err(err(
            "fi_av_insert",
            if r < 0 { r } else { -(FI_EINVAL as isize) },
        ));
    }
    Ok(out)
}

/// `fi_av_straddr`: an address as text for messages.
///
/// # Safety
/// `av` is a live address vector.
pub unsafe fn av_straddr(av: *mut fid_av, addr: &[u8]) -> String {
    let mut buf = [0 as c_char; 128];
    let mut len = buf.len();
    // SAFETY: the caller's contract; `buf` holds `len` bytes and the provider writes a
    // NUL-terminated string of at most `len` bytes.
    unsafe {
        let p = match (*(*av).ops).straddr {
            Some(f) => f(av, addr.as_ptr().cast(), buf.as_mut_ptr(), &mut len),
            None => std::ptr::null(),
        };
        buf[buf.len() - 1] = 0;
        if p.is_null() {
            String::from("?")
        } else {
            cstr(buf.as_ptr())
        }
    }
}

/// `fi_recv`.
///
/// # Safety
/// `ep` is live; `buf..buf+len` stays valid (and untouched) until the completion of
/// `ctx`, which points to an `fi_context2` owned by the caller until then.
pub unsafe fn recv(
    ep: *mut fid_ep,
    buf: *mut u8,
    len: usize,
    desc: *mut c_void,
    ctx: *mut fi_context2,
) -> isize {
    // SAFETY: the caller's contract.
    unsafe {
        op!(
            (*ep).msg,
            recv(ep, buf.cast(), len, desc, FI_ADDR_UNSPEC_, ctx.cast())
        )
    }
}

/// `fi_send`.
///
/// # Safety
/// As [`recv`], for the buffer sent.
pub unsafe fn send(
    ep: *mut fid_ep,
    buf: *const u8,
    len: usize,
    desc: *mut c_void,
    dst: fi_addr_t,
    ctx: *mut fi_context2,
) -> isize {
    // SAFETY: the caller's contract.
    unsafe { op!((*ep).msg, send(ep, buf.cast(), len, desc, dst, ctx.cast())) }
}

/// `fi_inject`: the data is copied before the call returns; no completion.
///
/// # Safety
/// `ep` is live; `len <= inject_size`.
pub unsafe fn inject(ep: *mut fid_ep, buf: *const u8, len: usize, dst: fi_addr_t) -> isize {
    // SAFETY: the caller's contract.
    unsafe { op!((*ep).msg, inject(ep, buf.cast(), len, dst)) }
}

/// `fi_cq_read` into `out`; the count read, `-FI_EAGAIN` or `-FI_EAVAIL`.
///
/// # Safety
/// `cq` is a live CQ of format `FI_CQ_FORMAT_DATA`.
pub unsafe fn cq_read(
    cq: *mut fid_cq,
    out: &mut [std::mem::MaybeUninit<fi_cq_data_entry>],
) -> isize {
    // SAFETY: the caller's contract; `out` holds `out.len()` entries of the CQ's format.
    unsafe { op!((*cq).ops, read(cq, out.as_mut_ptr().cast(), out.len())) }
}

/// `fi_cq_readerr` of one error entry, with the provider's text for it.
///
/// # Safety
/// `cq` is a live CQ.
pub unsafe fn cq_readerr(cq: *mut fid_cq) -> Option<(fi_cq_err_entry, String)> {
    // SAFETY: fi_cq_err_entry is plain data; all-zero is its documented initial state
    // (err_data_size 0: the provider keeps its own error data).
    let mut e: fi_cq_err_entry = unsafe { std::mem::zeroed() };
    // SAFETY: the caller's contract.
    let r = unsafe { op!((*cq).ops, readerr(cq, &mut e, 0)) };
    if r != 1 {
        return None;
    }
    let mut buf = [0 as c_char; 160];
    // SAFETY: strerror writes at most `buf.len()` bytes; `err_data` is the provider's.
    let text = unsafe {
        match (*(*cq).ops).strerror {
            Some(f) => cstr(f(cq, e.prov_errno, e.err_data, buf.as_mut_ptr(), buf.len())),
            None => String::new(),
        }
    };
    Some((e, text))
}

/// `fi_writemsg` of `len` bytes at `buf` to the peer's registered memory at `addr`
/// (`key`), or with `write == false` `fi_readmsg` of the same into `buf`; `flags` as
/// `fi_writemsg(3)` (`FI_COMPLETION`, `FI_DELIVERY_COMPLETE`).
///
/// # Safety
/// `ep` is live with `FI_RMA`; `buf..buf+len` (described by `desc`) stays valid and
/// untouched until the completion of `ctx`, an `fi_context2` owned by the caller till then.
#[allow(clippy::too_many_arguments)]
pub unsafe fn rma(
    ep: *mut fid_ep,
    write: bool,
    buf: *mut u8,
    len: usize,
    desc: *mut c_void,
    peer: fi_addr_t,
    addr: u64,
    key: u64,
    ctx: *mut fi_context2,
    flags: u64,
) -> isize {
    let iov = libc::iovec {
        iov_base: buf.cast(),
        iov_len: len,
    };
    let mut desc = desc;
    let riov = fi_rma_iov { addr, len, key };
    let msg = fi_msg_rma {
        msg_iov: &iov,
        desc: &mut desc,
        iov_count: 1,
        addr: peer,
        rma_iov: &riov,
        rma_iov_count: 1,
        context: ctx.cast(),
        data: 0,
    };
    // SAFETY: the caller's contract; `msg` and what it points to outlive the call (the
    // provider copies the descriptors it keeps).
    unsafe {
        if write {
            op!((*ep).rma, writemsg(ep, &msg, flags))
        } else {
            op!((*ep).rma, readmsg(ep, &msg, flags))
        }
    }
}

/// `FI_ADDR_UNSPEC` (a macro of a cast, which bindgen does not translate).
pub const FI_ADDR_UNSPEC_: fi_addr_t = u64::MAX;
