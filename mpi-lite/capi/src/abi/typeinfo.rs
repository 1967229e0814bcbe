//! Datatype constructors and queries beyond the basic ones (MPI-3.1 §4.1.3-4.1.13,
//! §4.1.8 `_x` calls, §12.3 status setters): subarray, darray, hindexed_block, envelope
//! and contents, `Type_match_size`, the `MPI_Count` variants.

use std::ffi::{c_char, c_int, c_void};

use mpi_lite::datatype::{
    external32_size, from_external32, to_external32, Basic, Combiner, Contents, Datatype, Distrib,
};
use mpi_lite::error::class;
use mpi_lite::mem::zeroed;
use mpi_lite::{Error, Result};

use super::{arr, arr_mut, count, get, get_str, mpi_fn, put, user_buf, MPI_Status, STATUS_IGNORE};
use crate::state::{call, call_pure, h, CState};

const ORDER_C: c_int = 56;
const ORDER_FORTRAN: c_int = 57;
const DISTRIBUTE_BLOCK: c_int = 121;
const DISTRIBUTE_CYCLIC: c_int = 122;
const DISTRIBUTE_NONE: c_int = 123;
const DISTRIBUTE_DFLT_DARG: c_int = -49767;
const TYPECLASS_REAL: c_int = 1;
const TYPECLASS_INTEGER: c_int = 2;
const TYPECLASS_COMPLEX: c_int = 3;
const UNDEFINED: c_int = -32766;

fn sizes(v: &[c_int], what: &str) -> Result<Vec<usize>> {
    v.iter()
        .map(|&x| usize::try_from(x).map_err(|_| Error::Arg(format!("{what}: negative value {x}"))))
        .collect()
}

fn order(o: c_int, what: &str) -> Result<bool> {
    match o {
        ORDER_C => Ok(false),
        ORDER_FORTRAN => Ok(true),
        _ => Err(Error::Arg(format!(
            "{what}: order {o} is not MPI_ORDER_C or MPI_ORDER_FORTRAN"
        ))),
    }
}

/// Registers a new type and writes its handle.
///
/// # Safety
/// `out` is NULL (an error) or the caller's `MPI_Datatype`.
unsafe fn out_type(st: &CState, d: Datatype, c: Contents, out: *mut c_int) -> Result<()> {
    if out.is_null() {
        return Err(Error::Arg("newtype is NULL".into()));
    }
    let hd = st.add_type(d.with_contents(c));
    // SAFETY: checked non-null, the caller's handle.
    unsafe { put(out, hd, "newtype") }
}

mpi_fn!(MPI_Type_create_hindexed_block, PMPI_Type_create_hindexed_block, (n: c_int, blocklength: c_int,
        displs: *const isize, oldtype: c_int, newtype: *mut c_int) -> c_int {
    let name = "MPI_Type_create_hindexed_block";
    call(name, h::COMM_WORLD, |st| {
        // SAFETY: `n` addresses (MPI contract).
        let d = unsafe { arr(displs, n, "array_of_displacements")? };
        let bl = count(blocklength, name)?;
        let o = st.dtype_any(oldtype)?;
        let t = Datatype::hindexed(&vec![bl; d.len()], d, &o)?;
        let c = Contents { combiner: Combiner::HindexedBlock, ints: vec![n, blocklength], aints: d.to_vec(), types: vec![o] };
        // SAFETY: the caller's handle.
        unsafe { out_type(st, t, c, newtype) }
    })
});

mpi_fn!(MPI_Type_create_subarray, PMPI_Type_create_subarray, (ndims: c_int, array_of_sizes: *const c_int,
        array_of_subsizes: *const c_int, array_of_starts: *const c_int, ord: c_int, oldtype: c_int,
        newtype: *mut c_int) -> c_int {
    let name = "MPI_Type_create_subarray";
    call(name, h::COMM_WORLD, |st| {
        // SAFETY: `ndims` ints in each array (MPI contract).
        let (sz, sub, start) = unsafe {
            (arr(array_of_sizes, ndims, "array_of_sizes")?, arr(array_of_subsizes, ndims, "array_of_subsizes")?,
             arr(array_of_starts, ndims, "array_of_starts")?)
        };
        let o = st.dtype_any(oldtype)?;
        let t = Datatype::subarray(&sizes(sz, name)?, &sizes(sub, name)?, &sizes(start, name)?, order(ord, name)?, &o)?;
        let ints = [&[ndims][..], sz, sub, start, &[ord]].concat();
        let c = Contents { combiner: Combiner::Subarray, ints, aints: vec![], types: vec![o] };
        // SAFETY: the caller's handle.
        unsafe { out_type(st, t, c, newtype) }
    })
});

mpi_fn!(MPI_Type_create_darray, PMPI_Type_create_darray, (size: c_int, rank: c_int, ndims: c_int,
        array_of_gsizes: *const c_int, array_of_distribs: *const c_int, array_of_dargs: *const c_int,
        array_of_psizes: *const c_int, ord: c_int, oldtype: c_int, newtype: *mut c_int) -> c_int {
    let name = "MPI_Type_create_darray";
    call(name, h::COMM_WORLD, |st| {
        // SAFETY: `ndims` ints in each array (MPI contract).
        let (g, ds, da, ps) = unsafe {
            (arr(array_of_gsizes, ndims, "array_of_gsizes")?, arr(array_of_distribs, ndims, "array_of_distribs")?,
             arr(array_of_dargs, ndims, "array_of_dargs")?, arr(array_of_psizes, ndims, "array_of_psizes")?)
        };
        let arg = |a: c_int| -> Result<Option<usize>> {
            if a == DISTRIBUTE_DFLT_DARG { Ok(None) } else { sizes(&[a], name).map(|v| Some(v[0])) }
        };
        let distribs: Vec<Distrib> = ds.iter().zip(da).map(|(&d, &a)| match d {
            DISTRIBUTE_BLOCK => Ok(Distrib::Block(arg(a)?)),
            DISTRIBUTE_CYCLIC => Ok(Distrib::Cyclic(arg(a)?)),
            DISTRIBUTE_NONE => Ok(Distrib::None),
            other => Err(Error::Arg(format!("{name}: distribution {other}"))),
        }).collect::<Result<_>>()?;
        let o = st.dtype_any(oldtype)?;
        let t = Datatype::darray(count(size, name)?, count(rank, name)?, &sizes(g, name)?, &distribs,
            &sizes(ps, name)?, order(ord, name)?, &o)?;
        let ints = [&[size, rank, ndims][..], g, ds, da, ps, &[ord]].concat();
        let c = Contents { combiner: Combiner::Darray, ints, aints: vec![], types: vec![o] };
        // SAFETY: the caller's handle.
        unsafe { out_type(st, t, c, newtype) }
    })
});

mpi_fn!(MPI_Type_get_envelope, PMPI_Type_get_envelope, (datatype: c_int, num_integers: *mut c_int,
        num_addresses: *mut c_int, num_datatypes: *mut c_int, combiner: *mut c_int) -> c_int {
    call("MPI_Type_get_envelope", h::COMM_WORLD, |st| {
        let d = st.dtype_any(datatype)?;
        let (ni, na, nd, comb) = match d.contents() {
            Some(c) => (c.ints.len(), c.aints.len(), c.types.len(), c.combiner),
            None => (0, 0, 0, Combiner::Named),
        };
        // SAFETY: the caller's ints.
        unsafe {
            put(num_integers, ni as c_int, "num_integers")?;
            put(num_addresses, na as c_int, "num_addresses")?;
            put(num_datatypes, nd as c_int, "num_datatypes")?;
            put(combiner, comb as c_int, "combiner")
        }
    })
});

mpi_fn!(MPI_Type_get_contents, PMPI_Type_get_contents, (datatype: c_int, max_integers: c_int,
        max_addresses: c_int, max_datatypes: c_int, array_of_integers: *mut c_int,
        array_of_addresses: *mut isize, array_of_datatypes: *mut c_int) -> c_int {
    let name = "MPI_Type_get_contents";
    call(name, h::COMM_WORLD, |st| {
        let d = st.dtype_any(datatype)?;
        let c = d.contents().cloned().ok_or_else(|| {
            Error::Type(format!("{name}: datatype {datatype} is predefined (MPI_COMBINER_NAMED)"))
        })?;
        let room = |n: usize, max: c_int, what: &str| -> Result<()> {
            if (max as i64) < n as i64 {
                return Err(Error::Arg(format!("{name}: {what} holds {max}, {n} needed")));
            }
            Ok(())
        };
        room(c.ints.len(), max_integers, "max_integers")?;
        room(c.aints.len(), max_addresses, "max_addresses")?;
        room(c.types.len(), max_datatypes, "max_datatypes")?;
        // Predefined types come back as themselves, derived ones as new handles the
        // caller frees (MPI-3.1 §4.1.13).
        let handles: Vec<c_int> = c.types.iter().map(|t| match t.predefined().and_then(|b| Basic::ALL.iter().position(|&x| x == b)) {
            Some(i) if t.contents().is_none() => (i + 1) as c_int,
            _ => st.add_type(t.clone()),
        }).collect();
        // SAFETY: the caller's arrays hold max_* ≥ the lengths written (checked above).
        unsafe {
            write_all(array_of_integers, &c.ints, "array_of_integers")?;
            write_all(array_of_addresses, &c.aints, "array_of_addresses")?;
            write_all(array_of_datatypes, &handles, "array_of_datatypes")
        }
    })
});

/// Copies `v` into a C array.
///
/// # Safety
/// `p` has room for `v.len()` elements (or `v` is empty).
unsafe fn write_all<T: Copy>(p: *mut T, v: &[T], what: &str) -> Result<()> {
    // SAFETY: forwarded.
    let out = unsafe { super::arr_mut(p, v.len(), what)? };
    out.copy_from_slice(v);
    Ok(())
}

mpi_fn!(MPI_Type_match_size, PMPI_Type_match_size, (typeclass: c_int, size: c_int, datatype: *mut c_int) -> c_int {
    call_pure("MPI_Type_match_size", || {
        let b = match (typeclass, size) {
            (TYPECLASS_INTEGER, 1) => Basic::Int8,
            (TYPECLASS_INTEGER, 2) => Basic::Int16,
            (TYPECLASS_INTEGER, 4) => Basic::Int32,
            (TYPECLASS_INTEGER, 8) => Basic::Int64,
            (TYPECLASS_REAL, 4) => Basic::Float,
            (TYPECLASS_REAL, 8) => Basic::Double,
            (TYPECLASS_REAL, 16) => Basic::LongDouble,
            (TYPECLASS_COMPLEX, 8) => Basic::CFloatComplex,
            (TYPECLASS_COMPLEX, 16) => Basic::CDoubleComplex,
            (TYPECLASS_COMPLEX, 32) => Basic::CLongDoubleComplex,
            _ => return Err(Error::Arg(format!("MPI_Type_match_size: no type of class {typeclass} and size {size}"))),
        };
        let hd = Basic::ALL.iter().position(|&x| x == b).expect("in ALL") as c_int + 1;
        // SAFETY: the caller's handle.
        unsafe { put(datatype, hd, "datatype") }
    })
});

/// The predefined type `MPI_Type_create_f90_*` returns for (combiner, p, r), §17.1.9:
/// the smallest C type whose precision (decimal digits) and exponent range (decimal) are
/// at least `p` and `r`, as gfortran's kinds (`MPI_UNDEFINED`: no requirement). Made once
/// per parameters and kept, so the same parameters give the same handle.
fn f90_type(
    st: &CState,
    name: &str,
    comb: Combiner,
    p: c_int,
    r: c_int,
    out: *mut c_int,
) -> Result<()> {
    let at_most = |x: c_int, lim: c_int| x == UNDEFINED || (0..=lim).contains(&x);
    let b = match comb {
        Combiner::F90Integer => [
            (2, Basic::Int8),
            (4, Basic::Int16),
            (9, Basic::Int32),
            (18, Basic::Int64),
        ]
        .into_iter()
        .find(|&(lim, _)| at_most(r, lim))
        .map(|(_, b)| b),
        _ => {
            let kinds = if comb == Combiner::F90Real {
                [
                    (6, 37, Basic::Float),
                    (15, 307, Basic::Double),
                    (18, 4931, Basic::LongDouble),
                ]
            } else {
                [
                    (6, 37, Basic::CFloatComplex),
                    (15, 307, Basic::CDoubleComplex),
                    (18, 4931, Basic::CLongDoubleComplex),
                ]
            };
            if p == UNDEFINED && r == UNDEFINED {
                None // §17.1.9: at least one must be given
            } else {
                kinds
                    .into_iter()
                    .find(|&(pl, rl, _)| at_most(p, pl) && at_most(r, rl))
                    .map(|(_, _, b)| b)
            }
        }
    }
    .ok_or_else(|| {
        Error::Arg(format!(
            "{name}: no type with precision {p} and range {r} (MPI_UNDEFINED = {UNDEFINED})"
        ))
    })?;
    if out.is_null() {
        return Err(Error::Arg(format!("{name}: newtype is NULL")));
    }
    let key = (comb as i32, p, r);
    let known = st.t().f90.iter().find(|e| e.0 == key).map(|e| e.1);
    let hd = match known {
        Some(hd) => hd,
        None => {
            let ints = if comb == Combiner::F90Integer {
                vec![r]
            } else {
                vec![p, r]
            };
            let c = Contents {
                combiner: comb,
                ints,
                aints: vec![],
                types: vec![],
            };
            let hd = st.add_type(Datatype::basic(b).with_contents(c));
            st.t().f90.push((key, hd));
            hd
        }
    };
    // SAFETY: checked non-null, the caller's handle.
    unsafe { put(out, hd, "newtype") }
}

mpi_fn!(MPI_Type_create_f90_integer, PMPI_Type_create_f90_integer, (r: c_int, newtype: *mut c_int) -> c_int {
    let name = "MPI_Type_create_f90_integer";
    call(name, h::COMM_WORLD, |st| f90_type(st, name, Combiner::F90Integer, UNDEFINED, r, newtype))
});

mpi_fn!(MPI_Type_create_f90_real, PMPI_Type_create_f90_real, (p: c_int, r: c_int, newtype: *mut c_int) -> c_int {
    let name = "MPI_Type_create_f90_real";
    call(name, h::COMM_WORLD, |st| f90_type(st, name, Combiner::F90Real, p, r, newtype))
});

mpi_fn!(MPI_Type_create_f90_complex, PMPI_Type_create_f90_complex, (p: c_int, r: c_int,
        newtype: *mut c_int) -> c_int {
    let name = "MPI_Type_create_f90_complex";
    call(name, h::COMM_WORLD, |st| f90_type(st, name, Combiner::F90Complex, p, r, newtype))
});

mpi_fn!(MPI_Type_get_extent_x, PMPI_Type_get_extent_x, (datatype: c_int, lb: *mut i64, extent: *mut i64) -> c_int {
    super::types::query("MPI_Type_get_extent_x", datatype, |d| {
        // SAFETY: the caller's MPI_Counts.
        unsafe {
            put(lb, d.lb() as i64, "lb")?;
            put(extent, d.extent() as i64, "extent")
        }
    })
});

mpi_fn!(MPI_Type_get_true_extent_x, PMPI_Type_get_true_extent_x, (datatype: c_int, true_lb: *mut i64,
        true_extent: *mut i64) -> c_int {
    super::types::query("MPI_Type_get_true_extent_x", datatype, |d| {
        let (l, e) = d.true_extent();
        // SAFETY: the caller's MPI_Counts.
        unsafe {
            put(true_lb, l as i64, "true_lb")?;
            put(true_extent, e as i64, "true_extent")
        }
    })
});

/// The caller's status for writing.
///
/// # Safety
/// `status` is NULL / `MPI_STATUS_IGNORE` (errors) or the caller's status.
unsafe fn status_mut<'a>(status: *mut MPI_Status) -> Result<&'a mut MPI_Status> {
    if status.is_null() || status as usize == STATUS_IGNORE {
        return Err(Error::Arg("status is NULL or MPI_STATUS_IGNORE".into()));
    }
    // SAFETY: non-null, the caller's status (contract).
    Ok(unsafe { &mut *status })
}

fn set_elements(
    st: &CState,
    status: *mut MPI_Status,
    datatype: c_int,
    n: i64,
    name: &str,
) -> Result<()> {
    let d = st.dtype_any(datatype)?;
    let n =
        usize::try_from(n).map_err(|_| Error::Count(format!("{name}: count {n} is negative")))?;
    let bytes = i64::try_from(d.bytes_of_elements(n)?)
        .map_err(|_| Error::Count(format!("{name}: {n} elements overflow the status")))?;
    // SAFETY: the caller's status.
    unsafe { status_mut(status)? }.count = bytes;
    Ok(())
}

mpi_fn!(MPI_Status_set_elements, PMPI_Status_set_elements, (status: *mut MPI_Status, datatype: c_int, n: c_int) -> c_int {
    call("MPI_Status_set_elements", h::COMM_WORLD, |st| set_elements(st, status, datatype, n as i64, "MPI_Status_set_elements"))
});

mpi_fn!(MPI_Status_set_elements_x, PMPI_Status_set_elements_x, (status: *mut MPI_Status, datatype: c_int, n: i64) -> c_int {
    call("MPI_Status_set_elements_x", h::COMM_WORLD, |st| set_elements(st, status, datatype, n, "MPI_Status_set_elements_x"))
});

mpi_fn!(MPI_Status_set_cancelled, PMPI_Status_set_cancelled, (status: *mut MPI_Status, flag: c_int) -> c_int {
    call_pure("MPI_Status_set_cancelled", || {
        // SAFETY: the caller's status.
        unsafe { status_mut(status)? }.cancelled = (flag != 0) as c_int;
        Ok(())
    })
});

mpi_fn!(MPI_Get_elements_x, PMPI_Get_elements_x, (status: *const MPI_Status, datatype: c_int, n: *mut i64) -> c_int {
    call("MPI_Get_elements_x", h::COMM_WORLD, |st| {
        let v = match super::p2p::count_of(st, status, datatype, true)? {
            None => UNDEFINED as i64,
            Some(k) => i64::try_from(k).map_err(|_| Error::Count("count does not fit MPI_Count".into()))?,
        };
        // SAFETY: the caller's MPI_Count.
        unsafe { put(n, v, "count") }
    })
});

mpi_fn!(MPI_Pcontrol, PMPI_Pcontrol, (_level: c_int) -> c_int {
    // MPI-3.1 §14.2.4: a hook for profilers; the library itself does nothing.
    0
});

/// Checks `datarep` of the external calls: only "external32" exists (MPI-3.1 §13.5.2).
///
/// # Safety
/// `datarep` is NULL (an error) or a NUL-terminated string.
unsafe fn external32(datarep: *const c_char, name: &str) -> Result<()> {
    // SAFETY: forwarded.
    let d = unsafe { get_str(datarep, "datarep")? };
    if d != "external32" {
        return Err(Error::Code {
            code: class::UNSUPPORTED_DATAREP,
            msg: format!("MPI_ERR_UNSUPPORTED_DATAREP: {name}: data representation {d:?} (only \"external32\")"),
        });
    }
    Ok(())
}

/// Reads and checks the caller's `MPI_Aint` position.
///
/// # Safety
/// `p` is NULL (an error) or the caller's `MPI_Aint`.
unsafe fn position(p: *const isize) -> Result<usize> {
    // SAFETY: forwarded.
    let v = unsafe { get(p, "position")? };
    usize::try_from(v).map_err(|_| Error::Arg(format!("position {v} is negative")))
}

mpi_fn!(MPI_Pack_external, PMPI_Pack_external, (datarep: *const c_char, inbuf: *const c_void, incount: c_int,
        datatype: c_int, outbuf: *mut c_void, outsize: isize, pos: *mut isize) -> c_int {
    let name = "MPI_Pack_external";
    call(name, h::COMM_WORLD, |st| {
        // SAFETY: the caller's string and position.
        let at = unsafe { external32(datarep, name)?; position(pos)? };
        // SAFETY: `incount` elements at `inbuf` (MPI contract).
        let b = unsafe { user_buf(st, inbuf, incount, datatype, name)? };
        let n = external32_size(b.datatype(), b.count())?;
        let room = usize::try_from(outsize).map_err(|_| Error::Arg(format!("{name}: outsize {outsize} < 0")))?;
        if at + n > room {
            return Err(Error::Truncate { len: at + n, cap: room });
        }
        // SAFETY: `outsize` bytes at `outbuf` (MPI contract), of which `at..at + n` written.
        let out = unsafe { arr_mut(outbuf.cast::<u8>(), room, "outbuf")? };
        to_external32(b.datatype(), &b.to_packed()?, &mut out[at..at + n])?;
        // SAFETY: the caller's position.
        unsafe { put(pos, (at + n) as isize, "position") }
    })
});

mpi_fn!(MPI_Unpack_external, PMPI_Unpack_external, (datarep: *const c_char, inbuf: *const c_void, insize: isize,
        pos: *mut isize, outbuf: *mut c_void, outcount: c_int, datatype: c_int) -> c_int {
    let name = "MPI_Unpack_external";
    call(name, h::COMM_WORLD, |st| {
        // SAFETY: the caller's string and position.
        let at = unsafe { external32(datarep, name)?; position(pos)? };
        // SAFETY: `outcount` elements at `outbuf` (MPI contract).
        let mut b = unsafe { user_buf(st, outbuf, outcount, datatype, name)? };
        let n = external32_size(b.datatype(), b.count())?;
        let len = usize::try_from(insize).map_err(|_| Error::Arg(format!("{name}: insize {insize} < 0")))?;
        if at + n > len {
            return Err(Error::Truncate { len: at + n, cap: len });
        }
        if inbuf.is_null() && len > 0 {
            return Err(Error::Buffer(format!("{name}: inbuf is NULL")));
        }
        // SAFETY: non-null (or empty): `insize` bytes at `inbuf` (MPI contract).
        let inp: &[u8] = if len == 0 { &[] } else { unsafe { std::slice::from_raw_parts(inbuf.cast::<u8>(), len) } };
        let mut native = zeroed(b.packed_len())?;
        from_external32(b.datatype(), &inp[at..at + n], &mut native)?;
        b.write_packed(0, &native);
        // SAFETY: the caller's position.
        unsafe { put(pos, (at + n) as isize, "position") }
    })
});

mpi_fn!(MPI_Pack_external_size, PMPI_Pack_external_size, (datarep: *const c_char, incount: c_int, datatype: c_int,
        size: *mut isize) -> c_int {
    let name = "MPI_Pack_external_size";
    call(name, h::COMM_WORLD, |st| {
        // SAFETY: the caller's string.
        unsafe { external32(datarep, name)? };
        let n = external32_size(&st.dtype_any(datatype)?, count(incount, name)?)?;
        // SAFETY: the caller's MPI_Aint.
        unsafe { put(size, n as isize, "size") }
    })
});
