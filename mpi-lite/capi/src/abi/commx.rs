//! More communicator calls (MPI-3.1 §6.3-6.4): `MPI_Comm_create_group`, `Comm_idup`,
//! `Comm_dup_with_info`, `Comm_set_info` / `Comm_get_info`, `Group_range_incl` / `excl`.
//!
//! Info hints of a communicator are stored (and returned by `Comm_get_info`); no call
//! interprets them (MPI-3.1 §6.4.4 allows ignoring every hint).

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::Mutex;

use mpi_lite::{Error, Result};

use super::comms::{dup_comm, dup_comm_by};
use super::misc::{add_info, info};
use super::p2p::req_handle;
use super::{arr, mpi_fn, put};
use crate::state::{call, call_steps, h, with_state, CState};

/// Communicator handle → its info hints (`Comm_set_info`, `Comm_dup_with_info`).
type Hints = HashMap<c_int, Vec<(String, String)>>;
static HINTS: Mutex<Option<Hints>> = Mutex::new(None);

fn with_hints<T>(f: impl FnOnce(&mut Hints) -> T) -> T {
    let mut g = HINTS.lock().unwrap_or_else(|p| p.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

/// Forgets the hints of a freed communicator (its handle may be reused).
pub(crate) fn forget(comm: c_int) {
    with_hints(|m| m.remove(&comm));
}

fn set_hints(st: &CState, comm: c_int, i: c_int) -> Result<()> {
    let v = if i == 0 {
        Vec::new()
    } else {
        info(&mut st.t(), i)?.clone()
    };
    with_hints(|m| m.insert(comm, v));
    Ok(())
}

mpi_fn!(MPI_Comm_create_group, PMPI_Comm_create_group, (comm: c_int, group: c_int, tag: c_int,
        newcomm: *mut c_int) -> c_int {
    call("MPI_Comm_create_group", comm, |st| {
        if newcomm.is_null() {
            return Err(Error::Arg("MPI_Comm_create_group: newcomm is NULL".into()));
        }
        if tag < 0 {
            return Err(Error::Tag(format!("MPI_Comm_create_group: tag {tag} is negative")));
        }
        let c = st.comm(comm)?;
        let g = st.group(group)?;
        let d = st.mpi.create_group(&c, &g, tag)?;
        let hd = match d {
            Some(d) => st.add_comm(d),
            None => h::COMM_NULL,
        };
        // SAFETY: the caller's handle (checked non-null).
        unsafe { put(newcomm, hd, "newcomm") }
    })
});

mpi_fn!(MPI_Comm_idup, PMPI_Comm_idup, (comm: c_int, newcomm: *mut c_int, request: *mut c_int) -> c_int {
    // The handle exists at once (attributes copied now, §6.7.2); its context comes when
    // the request completes.
    call_steps("MPI_Comm_idup", comm, || {
        if newcomm.is_null() || request.is_null() {
            return Err(Error::Arg("MPI_Comm_idup: newcomm or request is NULL".into()));
        }
        let (hd, id) = dup_comm_by("MPI_Comm_idup", comm, |st, c| st.mpi.idup(c))?;
        // SAFETY: the caller's handles (checked non-null).
        unsafe {
            put(newcomm, hd, "newcomm")?;
            put(request, req_handle(id), "request")
        }
    })
});

mpi_fn!(MPI_Comm_dup_with_info, PMPI_Comm_dup_with_info, (comm: c_int, info: c_int, newcomm: *mut c_int) -> c_int {
    call_steps("MPI_Comm_dup_with_info", comm, || {
        if newcomm.is_null() {
            return Err(Error::Arg("MPI_Comm_dup_with_info: newcomm is NULL".into()));
        }
        let hd = dup_comm("MPI_Comm_dup_with_info", comm)?;
        with_state("MPI_Comm_dup_with_info", |st| set_hints(st, hd, info))?;
        // SAFETY: the caller's handle (checked non-null).
        unsafe { put(newcomm, hd, "newcomm") }
    })
});

mpi_fn!(MPI_Comm_set_info, PMPI_Comm_set_info, (comm: c_int, info: c_int) -> c_int {
    call("MPI_Comm_set_info", comm, |st| {
        st.comm(comm)?;
        set_hints(st, comm, info)
    })
});

mpi_fn!(MPI_Comm_get_info, PMPI_Comm_get_info, (comm: c_int, info_used: *mut c_int) -> c_int {
    call("MPI_Comm_get_info", comm, |st| {
        st.comm(comm)?;
        let v = with_hints(|m| m.get(&comm).cloned().unwrap_or_default());
        let i = add_info(st, v);
        // SAFETY: the caller's handle.
        unsafe { put(info_used, i, "info_used") }
    })
});

/// The ranks named by `n` (first, last, stride) triplets (MPI-3.1 §6.3.2), each checked
/// against a group of `size`.
fn range_ranks(ranges: &[[c_int; 3]], size: usize, name: &str) -> Result<Vec<i32>> {
    let mut out = Vec::new();
    for &[first, last, stride] in ranges {
        if stride == 0 {
            return Err(Error::Arg(format!(
                "{name}: stride 0 in ({first}, {last}, 0)"
            )));
        }
        let ok = |r: c_int| (0..size as c_int).contains(&r);
        if !ok(first) || !ok(last) {
            return Err(Error::Rank(format!(
                "{name}: ({first}, {last}, {stride}) leaves a group of {size}"
            )));
        }
        let mut r = first;
        while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
            out.push(r);
            r += stride;
        }
    }
    Ok(out)
}

macro_rules! group_range_op {
    ($mpi:ident, $pmpi:ident, $name:literal, $method:ident) => {
        mpi_fn!($mpi, $pmpi, (group: c_int, n: c_int, ranges: *const [c_int; 3], newgroup: *mut c_int) -> c_int {
            call($name, h::COMM_WORLD, |st| {
                // SAFETY: `n` triplets (MPI contract).
                let t = unsafe { arr(ranges, n, "ranges")? };
                let g = st.group(group)?;
                let ranks = range_ranks(t, g.size(), $name)?;
                let ng = g.$method(&ranks)?;
                let hd = st.add_group(ng);
                // SAFETY: the caller's handle.
                unsafe { put(newgroup, hd, "newgroup") }
            })
        });
    };
}
group_range_op!(
    MPI_Group_range_incl,
    PMPI_Group_range_incl,
    "MPI_Group_range_incl",
    incl
);
group_range_op!(
    MPI_Group_range_excl,
    PMPI_Group_range_excl,
    "MPI_Group_range_excl",
    excl
);
