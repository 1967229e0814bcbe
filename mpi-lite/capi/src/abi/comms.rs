//! Groups and communicators (MPI-3.1 chapter 6), plus the predefined attributes.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use mpi_lite::comm::{CommData, UNDEFINED};
use mpi_lite::engine::{ANY_SOURCE, PROC_NULL, TAG_UB};
use mpi_lite::{Error, Mpi, Result};

use super::{arr, arr_mut, get, get_str, mpi_fn, put, put_str};
use crate::attrs;
use crate::state::{call, call_steps, h, with_state, CState};

/// # Safety
/// `out` is NULL (an error) or the caller's handle.
unsafe fn put_comm(st: &CState, c: Option<Arc<CommData>>, out: *mut c_int) -> Result<()> {
    let hd = match c {
        Some(c) => st.add_comm(c),
        None => h::COMM_NULL,
    };
    // SAFETY: the caller's handle.
    unsafe { put(out, hd, "newcomm") }
}

mpi_fn!(MPI_Comm_size, PMPI_Comm_size, (comm: c_int, size: *mut c_int) -> c_int {
    call("MPI_Comm_size", comm, |st| {
        let n = st.comm(comm)?.size() as c_int;
        // SAFETY: the caller's int.
        unsafe { put(size, n, "size") }
    })
});

mpi_fn!(MPI_Comm_rank, PMPI_Comm_rank, (comm: c_int, rank: *mut c_int) -> c_int {
    call("MPI_Comm_rank", comm, |st| {
        let r = st.comm(comm)?.rank as c_int;
        // SAFETY: the caller's int.
        unsafe { put(rank, r, "rank") }
    })
});

/// Duplicates `comm` (its group, topology and error handler, §6.4.2) then its attributes
/// through their copy callbacks (called with the state lock released); a failing callback
/// frees the new communicator again. `MPI_Comm_dup` and the calls made of it.
pub(crate) fn dup_comm(name: &'static str, comm: c_int) -> Result<c_int> {
    dup_comm_by(name, comm, |st, c| Ok((st.mpi.dup(c)?, ()))).map(|(hd, _)| hd)
}

/// [`dup_comm`] with the duplicate made by `make` (which may return more, e.g.
/// `MPI_Comm_idup`'s request).
pub(crate) fn dup_comm_by<T>(
    name: &'static str,
    comm: c_int,
    make: impl FnOnce(&CState, &CommData) -> Result<(Arc<CommData>, T)>,
) -> Result<(c_int, T)> {
    let (hd, more) = with_state(name, |st| {
        let c = st.comm(comm)?;
        let (d, more) = make(st, &c)?;
        Ok((st.add_child(comm, d)?, more))
    })?;
    if let Err(e) = attrs::copy_all(name, attrs::Kind::Comm, comm, hd) {
        let _ = attrs::delete_all(name, attrs::Kind::Comm, hd);
        let _ = with_state(name, |st| {
            st.t().remove_comm(hd);
            Ok(())
        });
        return Err(e);
    }
    Ok((hd, more))
}

mpi_fn!(MPI_Comm_dup, PMPI_Comm_dup, (comm: c_int, newcomm: *mut c_int) -> c_int {
    call_steps("MPI_Comm_dup", comm, || {
        if newcomm.is_null() {
            return Err(Error::Arg("MPI_Comm_dup: newcomm is NULL".into()));
        }
        let hd = dup_comm("MPI_Comm_dup", comm)?;
        // SAFETY: the caller's handle (checked non-null).
        unsafe { put(newcomm, hd, "newcomm") }
    })
});

mpi_fn!(MPI_Comm_split, PMPI_Comm_split, (comm: c_int, color: c_int, key: c_int, newcomm: *mut c_int) -> c_int {
    call("MPI_Comm_split", comm, |st| {
        let c = st.comm(comm)?;
        let d = st.mpi.split(&c, color, key)?;
        // SAFETY: the caller's handle.
        unsafe { put_comm(st, d, newcomm) }
    })
});

mpi_fn!(MPI_Comm_split_type, PMPI_Comm_split_type, (comm: c_int, split_type: c_int, key: c_int,
        _info: c_int, newcomm: *mut c_int) -> c_int {
    call("MPI_Comm_split_type", comm, |st| {
        const SHARED: c_int = 1;
        let c = st.comm(comm)?;
        let color = match split_type {
            // Processes of one node share memory: the color is the node's lowest rank in
            // the driver's node map (the launcher's: namespaces, containers and hosts of
            // one name are nodes of their own), else a hash of the host name.
            SHARED => match crate::ending::driver().as_deref().and_then(skifch_drivers::place::node_leader) {
                Some(leader) => (leader & 0x3fff_ffff) as c_int,
                None => {
                    let hash = super::env::host_name().bytes()
                        .fold(0x811c_9dc5u32, |h, b| (h ^ b as u32).wrapping_mul(0x0100_0193));
                    (hash & 0x3fff_ffff) as c_int
                }
            },
            UNDEFINED => UNDEFINED,
            t => return Err(Error::Arg(format!("MPI_Comm_split_type: split type {t}"))),
        };
        let d = st.mpi.split(&c, color, key)?;
        // SAFETY: the caller's handle.
        unsafe { put_comm(st, d, newcomm) }
    })
});

mpi_fn!(MPI_Comm_create, PMPI_Comm_create, (comm: c_int, group: c_int, newcomm: *mut c_int) -> c_int {
    call("MPI_Comm_create", comm, |st| {
        let c = st.comm(comm)?;
        let g = st.group(group)?;
        let d = st.mpi.create(&c, &g)?;
        // SAFETY: the caller's handle.
        unsafe { put_comm(st, d, newcomm) }
    })
});

mpi_fn!(MPI_Comm_free, PMPI_Comm_free, (comm: *mut c_int) -> c_int {
    call_steps("MPI_Comm_free", h::COMM_WORLD, || {
        // SAFETY: the caller's handle.
        let c = unsafe { get(comm, "comm")? };
        with_state("MPI_Comm_free", |st| {
            st.t().comm_entry(c)?;
            if c == h::COMM_WORLD || c == h::COMM_SELF {
                return Err(Error::Comm("MPI_Comm_free: MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed".into()));
            }
            Ok(())
        })?;
        // The attributes' delete callbacks first, with the lock released (§6.7.2).
        attrs::delete_all("MPI_Comm_free", attrs::Kind::Comm, c)?;
        with_state("MPI_Comm_free", |st| {
            st.t().remove_comm(c);
            Ok(())
        })?;
        super::commx::forget(c);
        // SAFETY: the caller's handle.
        unsafe { put(comm, h::COMM_NULL, "comm") }
    })
});

mpi_fn!(MPI_Comm_compare, PMPI_Comm_compare, (comm1: c_int, comm2: c_int, result: *mut c_int) -> c_int {
    call("MPI_Comm_compare", comm1, |st| {
        let r = if comm1 == comm2 {
            st.comm(comm1)?;
            0
        } else {
            { let (a, b) = (st.comm(comm1)?, st.comm(comm2)?); Mpi::<skifch_drivers::DefaultPort>::compare(&a, &b) as c_int }
        };
        // SAFETY: the caller's int.
        unsafe { put(result, r, "result") }
    })
});

mpi_fn!(MPI_Comm_test_inter, PMPI_Comm_test_inter, (comm: c_int, flag: *mut c_int) -> c_int {
    call("MPI_Comm_test_inter", comm, |st| {
        let inter = st.comm(comm)?.inter.is_some() as c_int;
        // SAFETY: the caller's int.
        unsafe { put(flag, inter, "flag") }
    })
});

mpi_fn!(MPI_Comm_set_name, PMPI_Comm_set_name, (comm: c_int, name: *const c_char) -> c_int {
    call("MPI_Comm_set_name", comm, |st| {
        // SAFETY: a NUL-terminated string.
        let n = unsafe { get_str(name, "comm_name")? };
        let mut t = st.t();
        t.comm_entry(comm)?;
        if let Some(Some(e)) = t.comms.get_mut(comm as usize) {
            e.name = n;
        }
        Ok(())
    })
});

mpi_fn!(MPI_Comm_get_name, PMPI_Comm_get_name, (comm: c_int, name: *mut c_char, resultlen: *mut c_int) -> c_int {
    call("MPI_Comm_get_name", comm, |st| {
        let n = st.t().comm_entry(comm)?.name.clone();
        // SAFETY: MPI_MAX_OBJECT_NAME bytes.
        unsafe { put_str(name, resultlen, &n, 128) }
    })
});

static ATTR_TAG_UB: AtomicI32 = AtomicI32::new(TAG_UB);
static ATTR_HOST: AtomicI32 = AtomicI32::new(PROC_NULL);
static ATTR_IO: AtomicI32 = AtomicI32::new(ANY_SOURCE);
static ATTR_WTIME_GLOBAL: AtomicI32 = AtomicI32::new(0);
static ATTR_UNIVERSE: AtomicI32 = AtomicI32::new(0);
static ATTR_LASTUSEDCODE: AtomicI32 = AtomicI32::new(0);

mpi_fn!(MPI_Comm_get_attr, PMPI_Comm_get_attr, (comm: c_int, keyval: c_int, attribute_val: *mut c_void,
        flag: *mut c_int) -> c_int {
    call("MPI_Comm_get_attr", comm, |st| {
        st.comm(comm)?;
        ATTR_UNIVERSE.store(st.mpi.world_data().size() as i32, Ordering::Relaxed);
        let v: Option<&AtomicI32> = match keyval {
            0x6440_0001 => Some(&ATTR_TAG_UB),
            0x6440_0003 => Some(&ATTR_HOST),
            0x6440_0005 => Some(&ATTR_IO),
            0x6440_0007 => Some(&ATTR_WTIME_GLOBAL),
            0x6440_0009 => Some(&ATTR_UNIVERSE),
            0x6440_000b => {
                ATTR_LASTUSEDCODE.store(crate::errors::last_used(), Ordering::Relaxed);
                Some(&ATTR_LASTUSEDCODE)
            }
            0x6440_000d => None,
            k => {
                // A user keyval (§6.7.2): the value is the program's `void *`.
                let v = attrs::get(attrs::Kind::Comm, comm, k)?;
                // SAFETY: `attribute_val` is the address of the caller's `void *`; `flag`
                // the caller's int.
                return unsafe {
                    if let Some(v) = v {
                        put(attribute_val.cast::<*mut c_void>(), v as *mut c_void, "attribute_val")?;
                    }
                    put(flag, v.is_some() as c_int, "flag")
                };
            }
        };
        // SAFETY: `attribute_val` is the address of the caller's `int *` (§6.7.2): it gets
        // the address of the value, static here; `flag` is the caller's int.
        unsafe {
            if let Some(v) = v {
                put(attribute_val.cast::<*mut c_int>(), v.as_ptr(), "attribute_val")?;
            }
            put(flag, v.is_some() as c_int, "flag")
        }
    })
});

// ---- groups ----

mpi_fn!(MPI_Comm_group, PMPI_Comm_group, (comm: c_int, group: *mut c_int) -> c_int {
    call("MPI_Comm_group", comm, |st| {
        let g = st.comm(comm)?.group.clone();
        let hd = st.add_group(g);
        // SAFETY: the caller's handle.
        unsafe { put(group, hd, "group") }
    })
});

mpi_fn!(MPI_Group_size, PMPI_Group_size, (group: c_int, size: *mut c_int) -> c_int {
    call("MPI_Group_size", h::COMM_WORLD, |st| {
        let n = st.group(group)?.size() as c_int;
        // SAFETY: the caller's int.
        unsafe { put(size, n, "size") }
    })
});

mpi_fn!(MPI_Group_rank, PMPI_Group_rank, (group: c_int, rank: *mut c_int) -> c_int {
    call("MPI_Group_rank", h::COMM_WORLD, |st| {
        let me = st.mpi.world_data().rank as u32;
        let r = st.group(group)?.rank_of(me).map_or(UNDEFINED, |r| r as c_int);
        // SAFETY: the caller's int.
        unsafe { put(rank, r, "rank") }
    })
});

macro_rules! group_ranks_op {
    ($mpi:ident, $pmpi:ident, $name:literal, $method:ident) => {
        mpi_fn!($mpi, $pmpi, (group: c_int, n: c_int, ranks: *const c_int, newgroup: *mut c_int) -> c_int {
            call($name, h::COMM_WORLD, |st| {
                // SAFETY: `n` ints (MPI contract).
                let r = unsafe { arr(ranks, n, "ranks")? };
                let g = st.group(group)?.$method(r)?;
                let hd = st.add_group(g);
                // SAFETY: the caller's handle.
                unsafe { put(newgroup, hd, "newgroup") }
            })
        });
    };
}
group_ranks_op!(MPI_Group_incl, PMPI_Group_incl, "MPI_Group_incl", incl);
group_ranks_op!(MPI_Group_excl, PMPI_Group_excl, "MPI_Group_excl", excl);

macro_rules! group_set_op {
    ($mpi:ident, $pmpi:ident, $name:literal, $method:ident) => {
        mpi_fn!($mpi, $pmpi, (group1: c_int, group2: c_int, newgroup: *mut c_int) -> c_int {
            call($name, h::COMM_WORLD, |st| {
                let g = st.group(group1)?.$method(&st.group(group2)?);
                let hd = st.add_group(g);
                // SAFETY: the caller's handle.
                unsafe { put(newgroup, hd, "newgroup") }
            })
        });
    };
}
group_set_op!(MPI_Group_union, PMPI_Group_union, "MPI_Group_union", union);
group_set_op!(
    MPI_Group_intersection,
    PMPI_Group_intersection,
    "MPI_Group_intersection",
    intersection
);
group_set_op!(
    MPI_Group_difference,
    PMPI_Group_difference,
    "MPI_Group_difference",
    difference
);

mpi_fn!(MPI_Group_translate_ranks, PMPI_Group_translate_ranks, (group1: c_int, n: c_int, ranks1: *const c_int,
        group2: c_int, ranks2: *mut c_int) -> c_int {
    call("MPI_Group_translate_ranks", h::COMM_WORLD, |st| {
        let (g1, g2) = (st.group(group1)?, st.group(group2)?);
        // SAFETY: `n` ints in and out (MPI contract).
        let (inp, out) = unsafe { (arr(ranks1, n, "ranks1")?, arr_mut(ranks2, n.max(0) as usize, "ranks2")?) };
        for (i, &r) in inp.iter().enumerate() {
            out[i] = if r == PROC_NULL {
                PROC_NULL
            } else {
                let r = usize::try_from(r).ok().filter(|&r| r < g1.size()).ok_or_else(|| {
                    Error::Rank(format!("MPI_Group_translate_ranks: rank {r} not in a group of {}", g1.size()))
                })?;
                g1.translate(&[r], &g2)[0].map_or(UNDEFINED, |x| x as c_int)
            };
        }
        Ok(())
    })
});

mpi_fn!(MPI_Group_compare, PMPI_Group_compare, (group1: c_int, group2: c_int, result: *mut c_int) -> c_int {
    call("MPI_Group_compare", h::COMM_WORLD, |st| {
        let r = st.group(group1)?.compare(&st.group(group2)?) as c_int;
        // SAFETY: the caller's int.
        unsafe { put(result, r, "result") }
    })
});

mpi_fn!(MPI_Group_free, PMPI_Group_free, (group: *mut c_int) -> c_int {
    call("MPI_Group_free", h::COMM_WORLD, |st| {
        // SAFETY: the caller's handle.
        let g = unsafe { get(group, "group")? };
        st.group(g)?;
        if g != h::GROUP_EMPTY {
            st.t().groups[g as usize] = None;
        }
        // SAFETY: the caller's handle.
        unsafe { put(group, 0, "group") }
    })
});
