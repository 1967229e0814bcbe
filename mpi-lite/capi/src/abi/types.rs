//! Datatypes (MPI-3.1 chapter 4): constructors, commit/free, queries, names, Pack/Unpack,
//! addresses.

use std::ffi::{c_char, c_int, c_void};

use mpi_lite::datatype::{Combiner, Contents, Datatype};
use mpi_lite::mem::UserBuf;
use mpi_lite::{Error, Result};

use super::{arr, count, get, get_str, mpi_fn, put, put_str};
use crate::attrs;
use crate::state::{call, call_steps, h, with_state, CState};

/// Registers a new (uncommitted) type and writes its handle.
///
/// # Safety
/// `out` is NULL (an error) or the caller's `MPI_Datatype`.
unsafe fn new_type(st: &CState, d: Result<Datatype>, out: *mut c_int) -> Result<()> {
    if out.is_null() {
        return Err(Error::Arg("newtype is NULL".into()));
    }
    let h = st.add_type(d?);
    // SAFETY: checked non-null, the caller's handle.
    unsafe { put(out, h, "newtype") }
}

/// The constructor's result recording its arguments (`MPI_Type_get_contents`).
fn rec(
    d: Result<Datatype>,
    combiner: Combiner,
    ints: Vec<i32>,
    aints: Vec<isize>,
    types: Vec<Datatype>,
) -> Result<Datatype> {
    d.map(|d| {
        d.with_contents(Contents {
            combiner,
            ints,
            aints,
            types,
        })
    })
}

/// A query of datatype `t`: answered without the library's lock for a predefined type or
/// the operation's own, asked from inside a user operation (see `ops::type_in_op`), else
/// as any call.
pub(crate) fn query(
    name: &'static str,
    t: c_int,
    f: impl FnOnce(&Datatype) -> Result<()>,
) -> c_int {
    if let Some(d) = super::ops::type_in_op(t) {
        // The reduction holds the lock: an error is returned (its handler cannot be
        // consulted without the lock).
        return f(&d).map_or_else(
            |e| crate::errors::code_of(&e),
            |()| mpi_lite::error::class::SUCCESS,
        );
    }
    call(name, h::COMM_WORLD, |st| f(&st.dtype_any(t)?))
}

fn lens(v: &[c_int], what: &str) -> Result<Vec<usize>> {
    v.iter()
        .map(|&n| {
            usize::try_from(n).map_err(|_| Error::Arg(format!("{what}: negative block length {n}")))
        })
        .collect()
}

mpi_fn!(MPI_Type_contiguous, PMPI_Type_contiguous, (n: c_int, oldtype: c_int, newtype: *mut c_int) -> c_int {
    call("MPI_Type_contiguous", h::COMM_WORLD, |st| {
        let o = st.dtype_any(oldtype)?;
        let d = rec(Datatype::contiguous(count(n, "MPI_Type_contiguous")?, &o), Combiner::Contiguous, vec![n], vec![], vec![o]);
        // SAFETY: the caller's handle.
        unsafe { new_type(st, d, newtype) }
    })
});

mpi_fn!(MPI_Type_vector, PMPI_Type_vector, (n: c_int, blocklength: c_int, stride: c_int, oldtype: c_int,
        newtype: *mut c_int) -> c_int {
    call("MPI_Type_vector", h::COMM_WORLD, |st| {
        let o = st.dtype_any(oldtype)?;
        let d = Datatype::vector(count(n, "MPI_Type_vector")?, count(blocklength, "MPI_Type_vector")?, stride as isize, &o);
        let d = rec(d, Combiner::Vector, vec![n, blocklength, stride], vec![], vec![o]);
        // SAFETY: the caller's handle.
        unsafe { new_type(st, d, newtype) }
    })
});

mpi_fn!(MPI_Type_create_hvector, PMPI_Type_create_hvector, (n: c_int, blocklength: c_int, stride: isize,
        oldtype: c_int, newtype: *mut c_int) -> c_int {
    call("MPI_Type_create_hvector", h::COMM_WORLD, |st| {
        let o = st.dtype_any(oldtype)?;
        let d = Datatype::hvector(count(n, "MPI_Type_create_hvector")?, count(blocklength, "MPI_Type_create_hvector")?, stride, &o);
        let d = rec(d, Combiner::Hvector, vec![n, blocklength], vec![stride], vec![o]);
        // SAFETY: the caller's handle.
        unsafe { new_type(st, d, newtype) }
    })
});

mpi_fn!(MPI_Type_indexed, PMPI_Type_indexed, (n: c_int, blocklengths: *const c_int, displs: *const c_int,
        oldtype: c_int, newtype: *mut c_int) -> c_int {
    call("MPI_Type_indexed", h::COMM_WORLD, |st| {
        // SAFETY: `n` ints in each array (MPI contract).
        let (b, d) = unsafe { (arr(blocklengths, n, "array_of_blocklengths")?, arr(displs, n, "array_of_displacements")?) };
        let ints = [&[n][..], b, d].concat();
        let b = lens(b, "MPI_Type_indexed")?;
        let d: Vec<isize> = d.iter().map(|&x| x as isize).collect();
        let o = st.dtype_any(oldtype)?;
        let t = rec(Datatype::indexed(&b, &d, &o), Combiner::Indexed, ints, vec![], vec![o]);
        // SAFETY: the caller's handle.
        unsafe { new_type(st, t, newtype) }
    })
});

mpi_fn!(MPI_Type_create_hindexed, PMPI_Type_create_hindexed, (n: c_int, blocklengths: *const c_int,
        displs: *const isize, oldtype: c_int, newtype: *mut c_int) -> c_int {
    call("MPI_Type_create_hindexed", h::COMM_WORLD, |st| {
        // SAFETY: `n` elements in each array (MPI contract).
        let (b, d) = unsafe { (arr(blocklengths, n, "array_of_blocklengths")?, arr(displs, n, "array_of_displacements")?) };
        let ints = [&[n][..], b].concat();
        let b = lens(b, "MPI_Type_create_hindexed")?;
        let o = st.dtype_any(oldtype)?;
        let t = rec(Datatype::hindexed(&b, d, &o), Combiner::Hindexed, ints, d.to_vec(), vec![o]);
        // SAFETY: the caller's handle.
        unsafe { new_type(st, t, newtype) }
    })
});

mpi_fn!(MPI_Type_create_indexed_block, PMPI_Type_create_indexed_block, (n: c_int, blocklength: c_int,
        displs: *const c_int, oldtype: c_int, newtype: *mut c_int) -> c_int {
    call("MPI_Type_create_indexed_block", h::COMM_WORLD, |st| {
        // SAFETY: `n` ints (MPI contract).
        let d = unsafe { arr(displs, n, "array_of_displacements")? };
        let ints = [&[n, blocklength][..], d].concat();
        let bl = count(blocklength, "MPI_Type_create_indexed_block")?;
        let d: Vec<isize> = d.iter().map(|&x| x as isize).collect();
        let o = st.dtype_any(oldtype)?;
        let t = rec(Datatype::indexed(&vec![bl; d.len()], &d, &o), Combiner::IndexedBlock, ints, vec![], vec![o]);
        // SAFETY: the caller's handle.
        unsafe { new_type(st, t, newtype) }
    })
});

mpi_fn!(MPI_Type_create_struct, PMPI_Type_create_struct, (n: c_int, blocklengths: *const c_int,
        displs: *const isize, types: *const c_int, newtype: *mut c_int) -> c_int {
    call("MPI_Type_create_struct", h::COMM_WORLD, |st| {
        // SAFETY: `n` elements in each array (MPI contract).
        let (b, d, t) = unsafe {
            (arr(blocklengths, n, "array_of_blocklengths")?, arr(displs, n, "array_of_displacements")?,
             arr(types, n, "array_of_types")?)
        };
        let ints = [&[n][..], b].concat();
        let b = lens(b, "MPI_Type_create_struct")?;
        let ts: Vec<Datatype> = t.iter().map(|&x| st.dtype_any(x)).collect::<Result<_>>()?;
        let r = rec(Datatype::structure(&b, d, &ts), Combiner::Struct, ints, d.to_vec(), ts);
        // SAFETY: the caller's handle.
        unsafe { new_type(st, r, newtype) }
    })
});

mpi_fn!(MPI_Type_create_resized, PMPI_Type_create_resized, (oldtype: c_int, lb: isize, extent: isize,
        newtype: *mut c_int) -> c_int {
    call("MPI_Type_create_resized", h::COMM_WORLD, |st| {
        let o = st.dtype_any(oldtype)?;
        let t = rec(Ok(Datatype::resized(&o, lb, extent)), Combiner::Resized, vec![], vec![lb, extent], vec![o]);
        // SAFETY: the caller's handle.
        unsafe { new_type(st, t, newtype) }
    })
});

mpi_fn!(MPI_Type_dup, PMPI_Type_dup, (oldtype: c_int, newtype: *mut c_int) -> c_int {
    call_steps("MPI_Type_dup", h::COMM_WORLD, || {
        if newtype.is_null() {
            return Err(Error::Arg("MPI_Type_dup: newtype is NULL".into()));
        }
        let hd = with_state("MPI_Type_dup", |st| {
            let o = st.dtype_any(oldtype)?;
            let t = rec(Ok(o.clone()), Combiner::Dup, vec![], vec![], vec![o]);
            let mut hd = 0;
            // SAFETY: a local int.
            unsafe { new_type(st, t, &mut hd)? };
            Ok(hd)
        })?;
        // The attributes, through their copy callbacks, with the lock released (§6.7.4).
        if let Err(e) = attrs::copy_all("MPI_Type_dup", attrs::Kind::Type, oldtype, hd) {
            let _ = attrs::delete_all("MPI_Type_dup", attrs::Kind::Type, hd);
            let _ = with_state("MPI_Type_dup", |st| {
                st.t().types[hd as usize] = None;
                Ok(())
            });
            return Err(e);
        }
        // SAFETY: the caller's handle (checked non-null).
        unsafe { put(newtype, hd, "newtype") }
    })
});

mpi_fn!(MPI_Type_commit, PMPI_Type_commit, (datatype: *mut c_int) -> c_int {
    call("MPI_Type_commit", h::COMM_WORLD, |st| {
        // SAFETY: the caller's handle.
        let t = unsafe { get(datatype, "datatype")? };
        let d = st.dtype_any(t)?.commit();
        st.t().types[t as usize] = Some(d);
        Ok(())
    })
});

mpi_fn!(MPI_Type_free, PMPI_Type_free, (datatype: *mut c_int) -> c_int {
    call_steps("MPI_Type_free", h::COMM_WORLD, || {
        // SAFETY: the caller's handle.
        let t = unsafe { get(datatype, "datatype")? };
        with_state("MPI_Type_free", |st| {
            st.dtype_any(t)?;
            let f90 = st.t().f90.iter().any(|e| e.1 == t);
            if (t as usize) < h::FIRST_USER_TYPE || f90 {
                return Err(Error::Type(format!("MPI_Type_free: datatype {t} is predefined")));
            }
            Ok(())
        })?;
        attrs::delete_all("MPI_Type_free", attrs::Kind::Type, t)?;
        // Pending operations keep their own reference to the type. Peers that were given
        // it as a one-sided target type forget it (mpi_lite::win::type_freed).
        with_state("MPI_Type_free", |st| {
            let freed = st.t().types[t as usize].take();
            match freed {
                Some(d) => mpi_lite::win::type_freed(&st.mpi, &d),
                None => Ok(()),
            }
        })?;
        // SAFETY: the caller's handle.
        unsafe { put(datatype, h::DATATYPE_NULL, "datatype") }
    })
});

mpi_fn!(MPI_Type_size, PMPI_Type_size, (datatype: c_int, size: *mut c_int) -> c_int {
    query("MPI_Type_size", datatype, |d| {
        let s = d.size();
        let s = c_int::try_from(s).unwrap_or(-32766); // MPI_UNDEFINED: use MPI_Type_size_x
        // SAFETY: the caller's int.
        unsafe { put(size, s, "size") }
    })
});

mpi_fn!(MPI_Type_size_x, PMPI_Type_size_x, (datatype: c_int, size: *mut i64) -> c_int {
    query("MPI_Type_size_x", datatype, |d| {
        let s = d.size() as i64;
        // SAFETY: the caller's MPI_Count.
        unsafe { put(size, s, "size") }
    })
});

mpi_fn!(MPI_Type_get_extent, PMPI_Type_get_extent, (datatype: c_int, lb: *mut isize, extent: *mut isize) -> c_int {
    query("MPI_Type_get_extent", datatype, |d| {
        // SAFETY: the caller's MPI_Aints.
        unsafe {
            put(lb, d.lb(), "lb")?;
            put(extent, d.extent(), "extent")
        }
    })
});

mpi_fn!(MPI_Type_get_true_extent, PMPI_Type_get_true_extent, (datatype: c_int, true_lb: *mut isize,
        true_extent: *mut isize) -> c_int {
    query("MPI_Type_get_true_extent", datatype, |d| {
        let (l, e) = d.true_extent();
        // SAFETY: the caller's MPI_Aints.
        unsafe {
            put(true_lb, l, "true_lb")?;
            put(true_extent, e, "true_extent")
        }
    })
});

mpi_fn!(MPI_Type_get_name, PMPI_Type_get_name, (datatype: c_int, type_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    call("MPI_Type_get_name", h::COMM_WORLD, |st| {
        let d = st.dtype_any(datatype)?;
        // SAFETY: MPI_MAX_OBJECT_NAME bytes at `type_name`.
        unsafe { put_str(type_name, resultlen, d.name(), 128) }
    })
});

mpi_fn!(MPI_Type_set_name, PMPI_Type_set_name, (datatype: c_int, type_name: *const c_char) -> c_int {
    call("MPI_Type_set_name", h::COMM_WORLD, |st| {
        // SAFETY: a NUL-terminated string (MPI contract).
        let n = unsafe { get_str(type_name, "type_name")? };
        let d = st.dtype_any(datatype)?.with_name(&n);
        st.t().types[datatype as usize] = Some(d);
        Ok(())
    })
});

mpi_fn!(MPI_Pack, PMPI_Pack, (inbuf: *const c_void, incount: c_int, datatype: c_int, outbuf: *mut c_void,
        outsize: c_int, position: *mut c_int, comm: c_int) -> c_int {
    call("MPI_Pack", comm, |st| {
        st.comm(comm)?;
        // SAFETY: the input buffer holds `incount` elements (MPI contract).
        let b = unsafe { super::user_buf(st, inbuf, incount, datatype, "MPI_Pack")? };
        // SAFETY: the caller's position.
        let pos = count(unsafe { get(position, "position")? }, "MPI_Pack position")?;
        let room = count(outsize, "MPI_Pack outsize")?;
        let n = b.packed_len();
        if pos + n > room {
            return Err(Error::Truncate { len: pos + n, cap: room });
        }
        // SAFETY: `outbuf` has `outsize` bytes (MPI contract), `pos + n` of which we write.
        let out = unsafe { super::arr_mut(outbuf.cast::<u8>(), room, "outbuf")? };
        b.read_packed(0, &mut out[pos..pos + n]);
        // SAFETY: the caller's position.
        unsafe { put(position, (pos + n) as c_int, "position") }
    })
});

mpi_fn!(MPI_Unpack, PMPI_Unpack, (inbuf: *const c_void, insize: c_int, position: *mut c_int,
        outbuf: *mut c_void, outcount: c_int, datatype: c_int, comm: c_int) -> c_int {
    call("MPI_Unpack", comm, |st| {
        st.comm(comm)?;
        // SAFETY: the output buffer holds `outcount` elements (MPI contract).
        let mut b: UserBuf = unsafe { super::user_buf(st, outbuf, outcount, datatype, "MPI_Unpack")? };
        // SAFETY: the caller's position.
        let pos = count(unsafe { get(position, "position")? }, "MPI_Unpack position")?;
        // SAFETY: `inbuf` has `insize` bytes (MPI contract).
        let inp = unsafe { arr(inbuf.cast::<u8>(), insize, "inbuf")? };
        let n = b.packed_len();
        if pos + n > inp.len() {
            return Err(Error::Truncate { len: pos + n, cap: inp.len() });
        }
        b.write_packed(0, &inp[pos..pos + n]);
        // SAFETY: the caller's position.
        unsafe { put(position, (pos + n) as c_int, "position") }
    })
});

mpi_fn!(MPI_Pack_size, PMPI_Pack_size, (incount: c_int, datatype: c_int, comm: c_int, size: *mut c_int) -> c_int {
    call("MPI_Pack_size", comm, |st| {
        st.comm(comm)?;
        let n = st.dtype_any(datatype)?.span(count(incount, "MPI_Pack_size")?)?;
        let n = c_int::try_from(n).map_err(|_| Error::Count("MPI_Pack_size: size does not fit an int".into()))?;
        // SAFETY: the caller's int.
        unsafe { put(size, n, "size") }
    })
});

mpi_fn!(MPI_Get_address, PMPI_Get_address, (location: *const c_void, address: *mut isize) -> c_int {
    // SAFETY: the caller's MPI_Aint.
    crate::state::call_pure("MPI_Get_address", || unsafe { put(address, location as isize, "address") })
});

mpi_fn!(MPI_Aint_add, PMPI_Aint_add, (base: isize, disp: isize) -> isize {
    base.wrapping_add(disp)
});

mpi_fn!(MPI_Aint_diff, PMPI_Aint_diff, (addr1: isize, addr2: isize) -> isize {
    addr1.wrapping_sub(addr2)
});
