//! Calls that MPI programs and benchmark suites commonly link: memory allocation
//! (MPI-3.1 §8.2), handle conversion between C and Fortran (§17.2.4; handles are integers
//! in both here, so the conversions are the identity; a status is the same words) and
//! `MPI_Info` objects (§9, with `MPI_INFO_ENV` of §8.7.2).

use std::ffi::{c_char, c_int, c_void};

use mpi_lite::{Error, Result};

use super::{get, get_str, mpi_fn, put, put_str, MPI_Status, STATUS_IGNORE};
use crate::state::{call, call_pure, h, CState, Tables};

mpi_fn!(MPI_Alloc_mem, PMPI_Alloc_mem, (size: isize, _info: c_int, baseptr: *mut c_void) -> c_int {
    call_pure("MPI_Alloc_mem", || {
        let n = usize::try_from(size).map_err(|_| Error::Arg(format!("MPI_Alloc_mem: size {size}")))?;
        // SAFETY: malloc of any size is sound; NULL is checked (0 bytes: one byte asked).
        let p = unsafe { libc::malloc(n.max(1)) };
        if p.is_null() {
            return Err(Error::Other(format!("MPI_Alloc_mem: cannot allocate {n} bytes")));
        }
        // SAFETY: `baseptr` is the address of the caller's pointer (§8.2).
        unsafe { put(baseptr.cast::<*mut c_void>(), p, "baseptr") }
    })
});

mpi_fn!(MPI_Free_mem, PMPI_Free_mem, (base: *mut c_void) -> c_int {
    // SAFETY: `base` came from MPI_Alloc_mem (malloc) and is freed once (MPI contract).
    unsafe { libc::free(base) };
    0
});

macro_rules! identity_conv {
    ($($mpi:ident, $pmpi:ident;)*) => {$(
        mpi_fn!($mpi, $pmpi, (handle: c_int) -> c_int { handle });
    )*};
}
identity_conv! {
    MPI_Comm_c2f, PMPI_Comm_c2f; MPI_Comm_f2c, PMPI_Comm_f2c;
    MPI_Type_c2f, PMPI_Type_c2f; MPI_Type_f2c, PMPI_Type_f2c;
    MPI_Group_c2f, PMPI_Group_c2f; MPI_Group_f2c, PMPI_Group_f2c;
    MPI_Request_c2f, PMPI_Request_c2f; MPI_Request_f2c, PMPI_Request_f2c;
    MPI_Op_c2f, PMPI_Op_c2f; MPI_Op_f2c, PMPI_Op_f2c;
    MPI_Info_c2f, PMPI_Info_c2f; MPI_Info_f2c, PMPI_Info_f2c;
    MPI_Win_c2f, PMPI_Win_c2f; MPI_Win_f2c, PMPI_Win_f2c;
    MPI_Errhandler_c2f, PMPI_Errhandler_c2f; MPI_Errhandler_f2c, PMPI_Errhandler_f2c;
    MPI_File_c2f, PMPI_File_c2f; MPI_File_f2c, PMPI_File_f2c;
}

const F_STATUS_SIZE: usize = std::mem::size_of::<MPI_Status>() / std::mem::size_of::<c_int>();
const _: () = assert!(F_STATUS_SIZE == 6, "mpi.h's MPI_F_STATUS_SIZE");

mpi_fn!(MPI_Status_c2f, PMPI_Status_c2f, (c_status: *const MPI_Status, f_status: *mut c_int) -> c_int {
    call_pure("MPI_Status_c2f", || {
        if c_status.is_null() || c_status as usize == STATUS_IGNORE || f_status.is_null() {
            return Err(Error::Arg("MPI_Status_c2f: a status argument is NULL or MPI_STATUS_IGNORE".into()));
        }
        // SAFETY: a valid MPI_Status and MPI_F_STATUS_SIZE Fortran INTEGERs (§17.2.5);
        // bytes are copied, so neither side's alignment matters.
        unsafe {
            std::ptr::copy_nonoverlapping(c_status.cast::<u8>(), f_status.cast::<u8>(), std::mem::size_of::<MPI_Status>())
        };
        Ok(())
    })
});

mpi_fn!(MPI_Status_f2c, PMPI_Status_f2c, (f_status: *const c_int, c_status: *mut MPI_Status) -> c_int {
    call_pure("MPI_Status_f2c", || {
        if f_status.is_null() || c_status.is_null() || c_status as usize == STATUS_IGNORE {
            return Err(Error::Arg("MPI_Status_f2c: a status argument is NULL, MPI_F_STATUS_IGNORE or MPI_STATUS_IGNORE".into()));
        }
        // SAFETY: as MPI_Status_c2f, the other way.
        unsafe {
            std::ptr::copy_nonoverlapping(f_status.cast::<u8>(), c_status.cast::<u8>(), std::mem::size_of::<MPI_Status>())
        };
        Ok(())
    })
});

/// The contents of `MPI_INFO_ENV` (§8.7.2): how this process was started, as far as it
/// can tell. `maxprocs` is the job's size; `soft` and `file` are left out (no spawn).
pub(crate) fn info_env(provided: i32, size: u32) -> Vec<(String, String)> {
    let mut args = std::env::args_os().map(|a| a.to_string_lossy().into_owned());
    let mut v = Vec::new();
    if let Some(c) = args.next() {
        v.push(("command".to_string(), c));
    }
    v.push(("argv".into(), args.collect::<Vec<_>>().join(" ")));
    v.push(("maxprocs".into(), size.to_string()));
    v.push(("host".into(), super::env::host_name()));
    v.push(("arch".into(), std::env::consts::ARCH.into()));
    if let Ok(d) = std::env::current_dir() {
        v.push(("wdir".into(), d.to_string_lossy().into_owned()));
    }
    let level = [
        "MPI_THREAD_SINGLE",
        "MPI_THREAD_FUNNELED",
        "MPI_THREAD_SERIALIZED",
        "MPI_THREAD_MULTIPLE",
    ];
    let l = usize::try_from(provided)
        .ok()
        .and_then(|i| level.get(i))
        .unwrap_or(&level[0]);
    v.push(("thread_level".into(), l.to_string()));
    v
}

/// Sets `k` to `v` in an info list: the value of a key already there changes, a new key
/// goes last.
pub(crate) fn info_put(e: &mut Vec<(String, String)>, k: String, v: String) {
    match e.iter_mut().find(|(x, _)| *x == k) {
        Some(p) => p.1 = v,
        None => e.push((k, v)),
    }
}

pub(crate) fn info(t: &mut Tables, i: c_int) -> Result<&mut Vec<(String, String)>> {
    usize::try_from(i)
        .ok()
        .and_then(|i| t.infos.get_mut(i))
        .and_then(|e| e.as_mut())
        .ok_or_else(|| Error::Arg(format!("info handle {i} is not valid")))
}

pub(crate) fn add_info(st: &CState, v: Vec<(String, String)>) -> c_int {
    let mut t = st.t();
    match t.infos.iter().skip(1).position(|e| e.is_none()) {
        Some(i) => {
            t.infos[i + 1] = Some(v);
            (i + 1) as c_int
        }
        None => {
            t.infos.push(Some(v));
            (t.infos.len() - 1) as c_int
        }
    }
}

mpi_fn!(MPI_Info_create, PMPI_Info_create, (out: *mut c_int) -> c_int {
    call("MPI_Info_create", h::COMM_WORLD, |st| {
        let i = add_info(st, Vec::new());
        // SAFETY: the caller's handle.
        unsafe { put(out, i, "info") }
    })
});

mpi_fn!(MPI_Info_dup, PMPI_Info_dup, (i: c_int, out: *mut c_int) -> c_int {
    call("MPI_Info_dup", h::COMM_WORLD, |st| {
        let v = info(&mut st.t(), i)?.clone();
        let n = add_info(st, v);
        // SAFETY: the caller's handle.
        unsafe { put(out, n, "newinfo") }
    })
});

mpi_fn!(MPI_Info_free, PMPI_Info_free, (i: *mut c_int) -> c_int {
    call("MPI_Info_free", h::COMM_WORLD, |st| {
        // SAFETY: the caller's handle.
        let k = unsafe { get(i, "info")? };
        if k == h::INFO_ENV {
            return Err(Error::Info("MPI_Info_free: MPI_INFO_ENV is predefined; it cannot be freed".into()));
        }
        let mut t = st.t();
        info(&mut t, k)?;
        t.infos[k as usize] = None;
        // SAFETY: the caller's handle.
        unsafe { put(i, 0, "info") }
    })
});

mpi_fn!(MPI_Info_set, PMPI_Info_set, (i: c_int, key: *const c_char, value: *const c_char) -> c_int {
    call("MPI_Info_set", h::COMM_WORLD, |st| {
        // SAFETY: NUL-terminated strings (MPI contract).
        let (k, v) = unsafe { (get_str(key, "key")?, get_str(value, "value")?) };
        if k.is_empty() || k.len() > 255 || v.len() > 1024 {
            return Err(Error::Arg("MPI_Info_set: key or value length out of range".into()));
        }
        let mut t = st.t();
        info_put(info(&mut t, i)?, k, v);
        Ok(())
    })
});

mpi_fn!(MPI_Info_delete, PMPI_Info_delete, (i: c_int, key: *const c_char) -> c_int {
    call("MPI_Info_delete", h::COMM_WORLD, |st| {
        // SAFETY: a NUL-terminated string.
        let k = unsafe { get_str(key, "key")? };
        let mut t = st.t();
        let e = info(&mut t, i)?;
        let at = e.iter().position(|(x, _)| *x == k)
            .ok_or_else(|| Error::InfoNoKey(format!("MPI_Info_delete: no key {k:?}")))?;
        e.remove(at);
        Ok(())
    })
});

mpi_fn!(MPI_Info_get, PMPI_Info_get, (i: c_int, key: *const c_char, valuelen: c_int, value: *mut c_char,
        flag: *mut c_int) -> c_int {
    call("MPI_Info_get", h::COMM_WORLD, |st| {
        // SAFETY: a NUL-terminated string.
        let k = unsafe { get_str(key, "key")? };
        let found = info(&mut st.t(), i)?.iter().find(|(x, _)| *x == k).map(|p| p.1.clone());
        let room = usize::try_from(valuelen).map_err(|_| Error::Arg("valuelen < 0".into()))? + 1;
        // SAFETY: `value` has valuelen + 1 bytes; `flag` is the caller's int.
        unsafe {
            if let Some(v) = &found {
                put_str(value, std::ptr::null_mut(), v, room)?;
            }
            put(flag, found.is_some() as c_int, "flag")
        }
    })
});

mpi_fn!(MPI_Info_get_valuelen, PMPI_Info_get_valuelen, (i: c_int, key: *const c_char, valuelen: *mut c_int,
        flag: *mut c_int) -> c_int {
    call("MPI_Info_get_valuelen", h::COMM_WORLD, |st| {
        // SAFETY: a NUL-terminated string.
        let k = unsafe { get_str(key, "key")? };
        let found = info(&mut st.t(), i)?.iter().find(|(x, _)| *x == k).map(|p| p.1.len());
        // SAFETY: the caller's ints.
        unsafe {
            if let Some(n) = found {
                put(valuelen, n as c_int, "valuelen")?;
            }
            put(flag, found.is_some() as c_int, "flag")
        }
    })
});

mpi_fn!(MPI_Info_get_nkeys, PMPI_Info_get_nkeys, (i: c_int, nkeys: *mut c_int) -> c_int {
    call("MPI_Info_get_nkeys", h::COMM_WORLD, |st| {
        let n = info(&mut st.t(), i)?.len() as c_int;
        // SAFETY: the caller's int.
        unsafe { put(nkeys, n, "nkeys") }
    })
});

mpi_fn!(MPI_Info_get_nthkey, PMPI_Info_get_nthkey, (i: c_int, n: c_int, key: *mut c_char) -> c_int {
    call("MPI_Info_get_nthkey", h::COMM_WORLD, |st| {
        let mut t = st.t();
        let e = info(&mut t, i)?;
        let k = usize::try_from(n).ok().and_then(|n| e.get(n)).map(|p| p.0.clone())
            .ok_or_else(|| Error::Arg(format!("MPI_Info_get_nthkey: no key {n}")))?;
        // SAFETY: MPI_MAX_INFO_KEY + 1 bytes at `key`.
        unsafe { put_str(key, std::ptr::null_mut(), &k, 256) }
    })
});
