//! A PMIx client (PMIx Standard v4, chapters 3 "Client initialization", 5 "Data access"
//! and 12 "Data exchange"): the system's `libpmix.so.2` (Debian `libpmix2`, pulled in by
//! Open MPI and Slurm's PMIx plugin), loaded with `dlopen` when the environment names a
//! PMIx server (`PMIX_NAMESPACE`, `PMIX_RANK`).
//!
//! Why loaded and not linked: every C library of the workspace (`libskifch`,
//! `libskifmpi`, `libskifshmem`, …) is built on this crate; linking `-lpmix` would make
//! each of them need `libpmix.so.2` at load time, on machines that never run a PMIx
//! launcher too. A cargo feature would leave the default build without PMIx. Seven
//! functions are looked up (`PMIx_Init`, `PMIx_Finalize`, `PMIx_Put`, `PMIx_Commit`,
//! `PMIx_Fence`, `PMIx_Get`, `PMIx_Value_destruct`, plus `PMIx_Abort` and
//! `PMIx_Error_string`); `SKIFCH_PMIX_LIB` names another library file.
//!
//! The structures are declared here with the layout of PMIx 4.x's `pmix_common.h`
//! (sizes pinned below; `tests/boot_pmix.rs` compares them with the C compiler's when the
//! headers are installed). Values are exchanged as `PMIX_BYTE_OBJECT`s, so
//! [`Bootstrap::allgather`] needs no encoding: put, commit, fence with
//! `PMIX_COLLECT_DATA`, then a get per rank. Node locality: `PMIX_NODEID` of each rank
//! (the host name, `PMIX_HOSTNAME`, where the server gives no node id).
#![allow(unsafe_code)] // dlopen/dlsym of libpmix and the C calls into it

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::Mutex;

use skifch::{Error, Result};

use super::{number_nodes, Bootstrap};

const NSLEN: usize = 256; // PMIX_MAX_NSLEN + 1
const KEYLEN: usize = 512; // PMIX_MAX_KEYLEN + 1
const RANK_WILDCARD: u32 = u32::MAX - 1;
const SUCCESS: c_int = 0;
const GLOBAL: u8 = 3; // PMIX_GLOBAL: share with local and remote processes
const T_BOOL: u16 = 1;
const T_STRING: u16 = 3;
const T_UINT32: u16 = 14;
const T_BYTE_OBJECT: u16 = 27;

/// `pmix_proc_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Proc {
    nspace: [c_char; NSLEN],
    rank: u32,
}

/// `pmix_byte_object_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct ByteObject {
    bytes: *mut c_char,
    size: usize,
}

/// The union of `pmix_value_t`: the members used here, padded to the C union's size
/// (its largest member, `pmix_envar_t`, is three words).
#[repr(C)]
#[derive(Clone, Copy)]
union Data {
    flag: bool,
    uint32: u32,
    string: *mut c_char,
    bo: ByteObject,
    _size: [u64; 3],
}

/// `pmix_value_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Value {
    kind: u16,
    data: Data,
}

/// `pmix_info_t`.
#[repr(C)]
struct Info {
    key: [c_char; KEYLEN],
    flags: u32,
    value: Value,
}

static_assertions::const_assert_eq!(std::mem::size_of::<Proc>(), 260);
static_assertions::const_assert_eq!(std::mem::size_of::<Value>(), 32);
static_assertions::const_assert_eq!(std::mem::size_of::<Info>(), 552);
static_assertions::const_assert_eq!(std::mem::offset_of!(Info, value), 520);

/// Layout facts for the test that compares them with the C headers:
/// `(sizeof pmix_proc_t, sizeof pmix_value_t, sizeof pmix_info_t, offsetof(pmix_info_t, value))`.
pub const LAYOUT: (usize, usize, usize, usize) = (
    std::mem::size_of::<Proc>(),
    std::mem::size_of::<Value>(),
    std::mem::size_of::<Info>(),
    std::mem::offset_of!(Info, value),
);

type InitFn = unsafe extern "C" fn(*mut Proc, *mut Info, usize) -> c_int;
type FinalizeFn = unsafe extern "C" fn(*const Info, usize) -> c_int;
type PutFn = unsafe extern "C" fn(u8, *const c_char, *mut Value) -> c_int;
type CommitFn = unsafe extern "C" fn() -> c_int;
type FenceFn = unsafe extern "C" fn(*const Proc, usize, *const Info, usize) -> c_int;
type GetFn =
    unsafe extern "C" fn(*const Proc, *const c_char, *const Info, usize, *mut *mut Value) -> c_int;
type DestructFn = unsafe extern "C" fn(*mut Value);
type AbortFn = unsafe extern "C" fn(c_int, *const c_char, *mut Proc, usize) -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;

/// The library's entry points (the handle stays open for the process's life: PMIx
/// keeps a progress thread running inside it).
struct Lib {
    init: InitFn,
    finalize: FinalizeFn,
    put: PutFn,
    commit: CommitFn,
    fence: FenceFn,
    get: GetFn,
    destruct: DestructFn,
    abort: AbortFn,
    error_string: ErrorStringFn,
}

fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until the next dl call
    // of this thread; it is copied at once.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: non-null, NUL-terminated (above).
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

impl Lib {
    fn load() -> Result<Lib> {
        let path = std::env::var("SKIFCH_PMIX_LIB").unwrap_or_else(|_| "libpmix.so.2".into());
        let cpath = CString::new(path.clone()).map_err(|_| {
            Error::Bootstrap(format!("SKIFCH_PMIX_LIB={path:?} holds a NUL").into())
        })?;
        // SAFETY: a valid C string; loading runs libpmix's initializers, which only set up
        // its own state. RTLD_GLOBAL: its plugins resolve symbols against it.
        let handle = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if handle.is_null() {
            return Err(Error::Bootstrap(
                format!(
                    "PMIX_NAMESPACE is set (a PMIx launcher started this process) but {path} cannot be \
                     loaded: {} (install the PMIx runtime, Debian libpmix2, or set SKIFCH_PMIX_LIB)",
                    dl_error()
                )
                .into(),
            ));
        }
        let sym = |name: &str| -> Result<*mut c_void> {
            let c = CString::new(name).expect("symbol names have no NUL");
            // SAFETY: `handle` is a live dlopen handle and `c` a valid C string.
            let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
            if p.is_null() {
                Err(Error::Bootstrap(
                    format!(
                        "{path} has no {name}: {} (PMIx 4 or later is needed)",
                        dl_error()
                    )
                    .into(),
                ))
            } else {
                Ok(p)
            }
        };
        // SAFETY: (each transmute) the symbol is the PMIx 4 function of that name, whose C
        // prototype (pmix.h) the function pointer type repeats.
        unsafe {
            Ok(Lib {
                init: std::mem::transmute::<*mut c_void, InitFn>(sym("PMIx_Init")?),
                finalize: std::mem::transmute::<*mut c_void, FinalizeFn>(sym("PMIx_Finalize")?),
                put: std::mem::transmute::<*mut c_void, PutFn>(sym("PMIx_Put")?),
                commit: std::mem::transmute::<*mut c_void, CommitFn>(sym("PMIx_Commit")?),
                fence: std::mem::transmute::<*mut c_void, FenceFn>(sym("PMIx_Fence")?),
                get: std::mem::transmute::<*mut c_void, GetFn>(sym("PMIx_Get")?),
                destruct: std::mem::transmute::<*mut c_void, DestructFn>(sym(
                    "PMIx_Value_destruct",
                )?),
                abort: std::mem::transmute::<*mut c_void, AbortFn>(sym("PMIx_Abort")?),
                error_string: std::mem::transmute::<*mut c_void, ErrorStringFn>(sym(
                    "PMIx_Error_string",
                )?),
            })
        }
    }

    fn status(&self, call: &str, rc: c_int) -> Result<()> {
        if rc == SUCCESS {
            return Ok(());
        }
        // SAFETY: PMIx_Error_string returns a static NUL-terminated string (or null).
        let text = unsafe { (self.error_string)(rc) };
        let text = if text.is_null() {
            "unknown status".into()
        } else {
            // SAFETY: non-null and static (above).
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        };
        Err(Error::Bootstrap(
            format!("PMIx: {call} failed: {text} ({rc})").into(),
        ))
    }

    /// `PMIx_Get(proc, key)`, the value handed to `read` and then released.
    fn get<T>(
        &self,
        proc: &Proc,
        key: &str,
        read: impl FnOnce(&Value) -> Option<T>,
    ) -> Result<Option<T>> {
        let ckey = CString::new(key).expect("keys have no NUL");
        let mut val: *mut Value = std::ptr::null_mut();
        // SAFETY: `proc` and `ckey` are valid for the call; PMIx writes a pointer to a
        // value it allocated (malloc) into `val`.
        let rc = unsafe { (self.get)(proc, ckey.as_ptr(), std::ptr::null(), 0, &mut val) };
        if rc != SUCCESS || val.is_null() {
            return match rc {
                SUCCESS => Ok(None),
                _ if rc == -46 => Ok(None), // PMIX_ERR_NOT_FOUND
                _ => self
                    .status(&format!("PMIx_Get({key}) of rank {}", proc.rank), rc)
                    .map(|_| None),
            };
        }
        // SAFETY: `val` points to an initialized pmix_value_t owned by us until released.
        let out = read(unsafe { &*val });
        // SAFETY: PMIX_VALUE_RELEASE: destruct the contents, then free the malloc'd value.
        unsafe {
            (self.destruct)(val);
            libc::free(val.cast());
        }
        Ok(out)
    }
}

/// A joined PMIx client; finalized on drop.
pub struct Pmix {
    lib: Lib,
    me: Proc,
    size: u32,
    nodes: Vec<u32>,
    /// Number of the next all-gather (its key); the lock also keeps collectives in order.
    calls: Mutex<u64>,
    /// `PMIx_Finalize` was called ([`Bootstrap::finalize`]): not again on drop.
    finalized: std::sync::atomic::AtomicBool,
}

// SAFETY: `Lib` holds function pointers into a library that is never unloaded, and `Proc`
// plain data; PMIx 4 client calls are thread-safe (its progress thread serializes them).
unsafe impl Send for Pmix {}
// SAFETY: as above.
unsafe impl Sync for Pmix {}

impl Pmix {
    /// Joins the PMIx server the environment names (`PMIX_NAMESPACE` and `PMIX_RANK`
    /// set); `Ok(None)` when it names none.
    pub fn from_env() -> Result<Option<Pmix>> {
        if std::env::var_os("PMIX_NAMESPACE").is_none() || std::env::var_os("PMIX_RANK").is_none() {
            return Ok(None);
        }
        let lib = Lib::load()?;
        let mut me = Proc {
            nspace: [0; NSLEN],
            rank: 0,
        };
        // SAFETY: `me` is a valid out-parameter; no info array.
        lib.status("PMIx_Init", unsafe {
            (lib.init)(&mut me, std::ptr::null_mut(), 0)
        })?;
        let mut p = Pmix {
            lib,
            me,
            size: 0,
            nodes: Vec::new(),
            calls: Mutex::new(0),
            finalized: std::sync::atomic::AtomicBool::new(false),
        };
        let job = Proc {
            rank: RANK_WILDCARD,
            ..p.me
        };
        p.size = p.lib.get(&job, "pmix.job.size", read_u32)?.ok_or_else(|| {
            Error::Bootstrap("PMIx: the server gives no PMIX_JOB_SIZE (pmix.job.size)".into())
        })?;
        if p.me.rank >= p.size {
            return Err(Error::Bootstrap(
                format!(
                    "PMIx: rank {} is not below the job size {}",
                    p.me.rank, p.size
                )
                .into(),
            ));
        }
        p.nodes = p.locality()?;
        Ok(Some(p))
    }

    /// Each rank's node: `PMIX_NODEID`, else `PMIX_HOSTNAME` (job-level data every client
    /// has locally after `PMIx_Init`).
    fn locality(&self) -> Result<Vec<u32>> {
        let mut ids = Vec::with_capacity(self.size as usize);
        for rank in 0..self.size {
            let who = Proc { rank, ..self.me };
            match self.lib.get(&who, "pmix.nodeid", read_u32)? {
                Some(id) => ids.push(id.to_string()),
                None => {
                    let host = self.lib.get(&who, "pmix.hname", read_string)?.ok_or_else(|| {
                        Error::Bootstrap(
                            format!("PMIx: the server gives neither PMIX_NODEID nor PMIX_HOSTNAME of rank {rank}").into(),
                        )
                    })?;
                    ids.push(host);
                }
            }
        }
        Ok(number_nodes(&ids))
    }

    /// The job's namespace (`PMIX_NAMESPACE`).
    pub fn namespace(&self) -> String {
        let bytes: Vec<u8> = self
            .me
            .nspace
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn fence(&self, collect: bool) -> Result<()> {
        let mut info = Info {
            key: [0; KEYLEN],
            flags: 0,
            value: Value {
                kind: T_BOOL,
                data: Data { flag: true },
            },
        };
        for (d, s) in info.key.iter_mut().zip(b"pmix.collect") {
            *d = *s as c_char;
        }
        let (ptr, n) = if collect {
            (&info as *const Info, 1)
        } else {
            (std::ptr::null(), 0)
        };
        // SAFETY: no proc array (all of this namespace); `info` lives across the call.
        self.lib.status("PMIx_Fence", unsafe {
            (self.lib.fence)(std::ptr::null(), 0, ptr, n)
        })
    }
}

fn read_u32(v: &Value) -> Option<u32> {
    if v.kind != T_UINT32 {
        return None;
    }
    // SAFETY: `uint32` is the member `kind` says is set.
    Some(unsafe { v.data.uint32 })
}

fn read_string(v: &Value) -> Option<String> {
    if v.kind != T_STRING {
        return None;
    }
    // SAFETY: `string` is the member `kind` says is set: null or a NUL-terminated string.
    let s = unsafe { v.data.string };
    if s.is_null() {
        return None;
    }
    // SAFETY: non-null NUL-terminated string owned by the value (copied before release).
    Some(unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
}

impl Bootstrap for Pmix {
    fn rank(&self) -> u32 {
        self.me.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn node_of(&self, rank: u32) -> u32 {
        self.nodes.get(rank as usize).copied().unwrap_or(0)
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let key = format!("skifch.ag{}", *calls);
        *calls += 1;
        let ckey = CString::new(key.clone()).expect("no NUL");
        // A leading byte: PMIx may store an empty byte object as "no data".
        let mut framed = Vec::with_capacity(mine.len() + 1);
        framed.push(1u8);
        framed.extend_from_slice(mine);
        let mut val = Value {
            kind: T_BYTE_OBJECT,
            data: Data {
                bo: ByteObject {
                    bytes: framed.as_mut_ptr().cast(),
                    size: framed.len(),
                },
            },
        };
        // SAFETY: PMIx_Put copies the value; `framed` and `ckey` outlive the call.
        self.lib.status("PMIx_Put", unsafe {
            (self.lib.put)(GLOBAL, ckey.as_ptr(), &mut val)
        })?;
        // SAFETY: no arguments.
        let rc = unsafe { (self.lib.commit)() };
        self.lib.status("PMIx_Commit", rc)?;
        self.fence(true)?;
        let mut all = Vec::with_capacity(self.size as usize);
        for rank in 0..self.size {
            if rank == self.me.rank {
                all.push(mine.to_vec());
                continue;
            }
            let who = Proc { rank, ..self.me };
            let bytes = self.lib.get(&who, &key, |v| {
                (v.kind == T_BYTE_OBJECT).then(|| {
                    // SAFETY: `bo` is the member `kind` says is set: `size` bytes at `bytes`.
                    let bo = unsafe { v.data.bo };
                    if bo.bytes.is_null() {
                        Vec::new()
                    } else {
                        // SAFETY: as above; copied before the value is released.
                        unsafe { std::slice::from_raw_parts(bo.bytes.cast::<u8>(), bo.size) }
                            .to_vec()
                    }
                })
            })?;
            match bytes {
                Some(b) if b.first() == Some(&1) => all.push(b[1..].to_vec()),
                _ => {
                    return Err(Error::Bootstrap(
                        format!(
                            "PMIx: all-gather: rank {rank}'s {key} is missing or not a byte object"
                        )
                        .into(),
                    ))
                }
            }
        }
        Ok(all)
    }

    fn barrier(&self) -> Result<()> {
        let _order = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        self.fence(false)
    }

    /// `PMIx_Abort` for the whole namespace. Under Open MPI 4's `mpirun` (ORTE, which
    /// sets `OMPI_MCA_orte_hnp_uri`) nothing is sent: its PMIx server crashes or stops
    /// reaping its ranks on a `PMIx_Abort` from a process that is not Open MPI's own; the
    /// caller's exit with `exit_code`, which the trait asks for, ends that job instead.
    fn abort(&self, exit_code: i32, why: &str) -> Result<()> {
        if std::env::var_os("OMPI_MCA_orte_hnp_uri").is_some() {
            return Ok(());
        }
        let msg = CString::new(why.replace('\0', " ")).expect("NULs replaced");
        // SAFETY: a valid C string; no proc array (the whole namespace).
        let rc = unsafe { (self.lib.abort)(exit_code, msg.as_ptr(), std::ptr::null_mut(), 0) };
        self.lib.status("PMIx_Abort", rc)
    }

    fn finalize(&self) {
        // Open MPI's mpirun reports a rank that exits without it as "exiting improperly"
        // and ends the job with status 1.
        self.finalize_once();
    }

    fn name(&self) -> &'static str {
        "pmix"
    }
}

impl Pmix {
    /// `PMIx_Finalize`, once.
    fn finalize_once(&self) {
        if !self
            .finalized
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            // SAFETY: PMIx_Init succeeded (a `Pmix` exists only then); no info array.
            unsafe { (self.lib.finalize)(std::ptr::null(), 0) };
        }
    }
}

impl Drop for Pmix {
    fn drop(&mut self) {
        self.finalize_once();
    }
}
