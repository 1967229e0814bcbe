//! Attribute caching calls (MPI-3.1 §6.7): keyvals and attributes of communicators,
//! datatypes and windows, and the MPI-1 names (`MPI_Keyval_create`, `MPI_Attr_put`, …,
//! §15.2 deprecated but in 3.1). The mechanism is `crate::attrs`; these check the object
//! handle and translate. `MPI_Comm_get_attr` (with the predefined keys) is in `comms`.

use std::ffi::{c_int, c_void};

use mpi_lite::{Error, Result};

use super::{get, mpi_fn, put};
use crate::attrs::{self, CopyFn, DeleteFn, Kind};
use crate::state::{call_steps, h, with_state};

/// `MPI_KEYVAL_INVALID`.
const KEYVAL_INVALID: c_int = 0x2400_0000;

/// Predefined communicator keys (`MPI_TAG_UB`, … of mpi.h): read-only.
fn predefined_comm_key(kv: c_int) -> bool {
    (0x6440_0001..=0x6440_000d).contains(&kv)
}

/// Checks that `obj` names an object of `kind` (the object calls own the handles).
fn check_object(name: &'static str, kind: Kind, obj: c_int) -> Result<()> {
    match kind {
        Kind::Comm => with_state(name, |st| st.t().comm_entry(obj).map(|_| ())),
        Kind::Type => with_state(name, |st| st.dtype_any(obj).map(|_| ())),
        Kind::Win if super::rma::exists(obj) => Ok(()),
        Kind::Win => Err(Error::Win(format!("{name}: {obj} is not a window"))),
    }
}

/// The communicator whose handler an error of a call on `obj` goes to.
fn raised_on(kind: Kind, obj: c_int) -> c_int {
    if kind == Kind::Comm {
        obj
    } else {
        h::COMM_WORLD
    }
}

fn create_keyval(
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    keyval: *mut c_int,
    extra: *mut c_void,
    kind: Kind,
) -> Result<()> {
    if keyval.is_null() {
        return Err(Error::Arg("keyval is NULL".into()));
    }
    let kv = attrs::create(kind, copy, delete, extra as usize);
    // SAFETY: the caller's int (checked non-null).
    unsafe { put(keyval, kv, "keyval") }
}

fn free_keyval(keyval: *mut c_int, kind: Kind) -> Result<()> {
    // SAFETY: the caller's int.
    let kv = unsafe { get(keyval, "keyval")? };
    attrs::free(kind, kv)?;
    // SAFETY: the caller's int.
    unsafe { put(keyval, KEYVAL_INVALID, "keyval") }
}

fn set_attr(name: &'static str, kind: Kind, obj: c_int, kv: c_int, val: *mut c_void) -> Result<()> {
    if kind == Kind::Comm && predefined_comm_key(kv) {
        return Err(Error::Keyval(format!(
            "{name}: keyval {kv:#x} is predefined (read-only)"
        )));
    }
    check_object(name, kind, obj)?;
    attrs::set(name, kind, obj, kv, val as usize)
}

pub(crate) fn get_attr(
    name: &'static str,
    kind: Kind,
    obj: c_int,
    kv: c_int,
    val: *mut c_void,
    flag: *mut c_int,
) -> Result<()> {
    check_object(name, kind, obj)?;
    let v = attrs::get(kind, obj, kv)?;
    // SAFETY: `val` is the address of the caller's `void *` (§6.7.3); `flag` its int.
    unsafe {
        if let Some(v) = v {
            put(val.cast::<*mut c_void>(), v as *mut c_void, "attribute_val")?;
        }
        put(flag, v.is_some() as c_int, "flag")
    }
}

fn delete_attr(name: &'static str, kind: Kind, obj: c_int, kv: c_int) -> Result<()> {
    if kind == Kind::Comm && predefined_comm_key(kv) {
        return Err(Error::Keyval(format!(
            "{name}: keyval {kv:#x} is predefined (read-only)"
        )));
    }
    check_object(name, kind, obj)?;
    attrs::delete(name, kind, obj, kv)
}

macro_rules! keyval_calls {
    ($kind:expr, $h:ty, $create:ident, $pcreate:ident, $cname:literal, $free:ident, $pfree:ident,
     $fname:literal, $set:ident, $pset:ident, $sname:literal, $del:ident, $pdel:ident,
     $dname:literal) => {
        mpi_fn!($create, $pcreate, (copy_fn: Option<CopyFn>, delete_fn: Option<DeleteFn>,
                keyval: *mut c_int, extra_state: *mut c_void) -> c_int {
            call_steps($cname, h::COMM_WORLD, || create_keyval(copy_fn, delete_fn, keyval, extra_state, $kind))
        });
        mpi_fn!($free, $pfree, (keyval: *mut c_int) -> c_int {
            call_steps($fname, h::COMM_WORLD, || free_keyval(keyval, $kind))
        });
        mpi_fn!($set, $pset, (obj: $h, keyval: c_int, attribute_val: *mut c_void) -> c_int {
            call_steps($sname, raised_on($kind, obj), || set_attr($sname, $kind, obj, keyval, attribute_val))
        });
        mpi_fn!($del, $pdel, (obj: $h, keyval: c_int) -> c_int {
            call_steps($dname, raised_on($kind, obj), || delete_attr($dname, $kind, obj, keyval))
        });
    };
}

keyval_calls!(
    Kind::Comm,
    c_int,
    MPI_Comm_create_keyval,
    PMPI_Comm_create_keyval,
    "MPI_Comm_create_keyval",
    MPI_Comm_free_keyval,
    PMPI_Comm_free_keyval,
    "MPI_Comm_free_keyval",
    MPI_Comm_set_attr,
    PMPI_Comm_set_attr,
    "MPI_Comm_set_attr",
    MPI_Comm_delete_attr,
    PMPI_Comm_delete_attr,
    "MPI_Comm_delete_attr"
);
keyval_calls!(
    Kind::Type,
    c_int,
    MPI_Type_create_keyval,
    PMPI_Type_create_keyval,
    "MPI_Type_create_keyval",
    MPI_Type_free_keyval,
    PMPI_Type_free_keyval,
    "MPI_Type_free_keyval",
    MPI_Type_set_attr,
    PMPI_Type_set_attr,
    "MPI_Type_set_attr",
    MPI_Type_delete_attr,
    PMPI_Type_delete_attr,
    "MPI_Type_delete_attr"
);
keyval_calls!(
    Kind::Win,
    c_int,
    MPI_Win_create_keyval,
    PMPI_Win_create_keyval,
    "MPI_Win_create_keyval",
    MPI_Win_free_keyval,
    PMPI_Win_free_keyval,
    "MPI_Win_free_keyval",
    MPI_Win_set_attr,
    PMPI_Win_set_attr,
    "MPI_Win_set_attr",
    MPI_Win_delete_attr,
    PMPI_Win_delete_attr,
    "MPI_Win_delete_attr"
);

mpi_fn!(MPI_Type_get_attr, PMPI_Type_get_attr, (datatype: c_int, keyval: c_int, attribute_val: *mut c_void,
        flag: *mut c_int) -> c_int {
    call_steps("MPI_Type_get_attr", h::COMM_WORLD, || {
        get_attr("MPI_Type_get_attr", Kind::Type, datatype, keyval, attribute_val, flag)
    })
});

// MPI_Win_get_attr (with the predefined window keys) is in `rma`.

// ---- MPI-1 names (communicators only) ----

mpi_fn!(MPI_Keyval_create, PMPI_Keyval_create, (copy_fn: Option<CopyFn>, delete_fn: Option<DeleteFn>,
        keyval: *mut c_int, extra_state: *mut c_void) -> c_int {
    call_steps("MPI_Keyval_create", h::COMM_WORLD, || create_keyval(copy_fn, delete_fn, keyval, extra_state, Kind::Comm))
});

mpi_fn!(MPI_Keyval_free, PMPI_Keyval_free, (keyval: *mut c_int) -> c_int {
    call_steps("MPI_Keyval_free", h::COMM_WORLD, || free_keyval(keyval, Kind::Comm))
});

mpi_fn!(MPI_Attr_put, PMPI_Attr_put, (comm: c_int, keyval: c_int, attribute_val: *mut c_void) -> c_int {
    call_steps("MPI_Attr_put", comm, || set_attr("MPI_Attr_put", Kind::Comm, comm, keyval, attribute_val))
});

mpi_fn!(MPI_Attr_get, PMPI_Attr_get, (comm: c_int, keyval: c_int, attribute_val: *mut c_void,
        flag: *mut c_int) -> c_int {
    // SAFETY: the same contract (MPI_Attr_get is MPI_Comm_get_attr's MPI-1 name).
    unsafe { super::PMPI_Comm_get_attr(comm, keyval, attribute_val, flag) }
});

mpi_fn!(MPI_Attr_delete, PMPI_Attr_delete, (comm: c_int, keyval: c_int) -> c_int {
    call_steps("MPI_Attr_delete", comm, || delete_attr("MPI_Attr_delete", Kind::Comm, comm, keyval))
});
