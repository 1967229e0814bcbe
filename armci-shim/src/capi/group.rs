//! ARMCI groups in C (`ARMCI_Group`, `ARMCI_Group_*`, `ARMCI_Malloc_group`, the
//! `armci_msg_group_*` collectives) over [`crate::group`]. An `ARMCI_Group` holds a boxed
//! [`Group`] (`impl`), the member list as `int`s (`grp_to_abs`), this process's group
//! rank (-1 for a non-member) and the size; `ARMCI_Group_free` releases them.
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in armci.h

use std::ffi::{c_char, c_int, c_long, c_longlong, c_void};
use std::sync::Mutex;

use super::{a, ok};
use crate::group::Group;
use crate::{fatal, Error};

/// `ARMCI_Group` of armci.h.
#[repr(C)]
pub struct ArmciGroup {
    imp: *mut c_void,
    grp_to_abs: *mut c_int,
    rank: c_int,
    size: c_int,
}

/// What `imp` points to.
struct Boxed {
    group: Group,
    abs: Vec<c_int>,
    /// Made by `ARMCI_Group_create`/`_create_child` (not a copy from `_get_default` or
    /// `_get_world`): freeing it frees the group's MPI communicator ([`super::mpi`]).
    created: bool,
}

/// The default group (`ARMCI_Group_set_default`); `None`: the world.
static DEFAULT: Mutex<Option<Group>> = Mutex::new(None);

pub(super) fn default_group() -> Option<Group> {
    DEFAULT.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Fills `out` with `g` (`created`: by a group creation).
unsafe fn fill(call: &str, out: *mut ArmciGroup, g: Group, created: bool) {
    // SAFETY: the caller's group to fill, or NULL.
    let Some(out) = (unsafe { out.as_mut() }) else {
        fatal(
            call,
            &Error::BadArgument("the group pointer is NULL".into()),
        );
    };
    let me = a(call).me();
    let mut b = Box::new(Boxed {
        abs: g.members().iter().map(|&m| m as c_int).collect(),
        group: g,
        created,
    });
    out.rank = b.group.rank_of(me).map_or(-1, |r| r as c_int);
    out.size = b.abs.len() as c_int;
    out.grp_to_abs = b.abs.as_mut_ptr();
    out.imp = Box::into_raw(b).cast();
}

/// The group of a filled `ARMCI_Group`.
pub(super) unsafe fn group<'a>(call: &str, g: *const ArmciGroup) -> &'a Group {
    // SAFETY: the caller's group, filled by this library (checked non-null below).
    match unsafe { g.as_ref() } {
        Some(g) if !g.imp.is_null() => {
            // SAFETY: `imp` came from `fill`'s Box::into_raw and lives until Group_free.
            &unsafe { &*g.imp.cast::<Boxed>() }.group
        }
        _ => fatal(
            call,
            &Error::BadArgument("not a group made by ARMCI_Group_create (or already freed)".into()),
        ),
    }
}

unsafe fn ranks(call: &str, n: c_int, list: *const c_int) -> Vec<u32> {
    let n = usize::try_from(n)
        .unwrap_or_else(|_| fatal(call, &Error::BadArgument(format!("group size {n}"))));
    if n > 0 && list.is_null() {
        fatal(call, &Error::BadArgument("pid_list is NULL".into()));
    }
    (0..n)
        .map(|i| {
            // SAFETY: the caller's list of `n` ranks.
            let r = unsafe { *list.add(i) };
            u32::try_from(r).unwrap_or_else(|_| {
                fatal(
                    call,
                    &Error::BadProc {
                        proc: r.into(),
                        n: a(call).nproc(),
                    },
                )
            })
        })
        .collect()
}

/// The group of `list[0..n]` (ranks in `parent`) within `parent`, into `out`.
pub(super) unsafe fn create(
    call: &str,
    n: c_int,
    list: *const c_int,
    out: *mut ArmciGroup,
    parent: Group,
) {
    let w = a(call);
    // SAFETY: forwards the caller's contract.
    let members = unsafe { ranks(call, n, list) };
    let members = members
        .iter()
        .map(|&r| {
            *parent.members().get(r as usize).unwrap_or_else(|| {
                fatal(
                    call,
                    &Error::BadProc {
                        proc: r.into(),
                        n: parent.members().len() as u32,
                    },
                )
            })
        })
        .collect::<Vec<_>>();
    let g = ok(call, w.group_create(&parent, &members));
    super::mpi::group_created(parent.id(), g.id(), g.rank_of(w.me()));
    // SAFETY: the caller's group to fill.
    unsafe { fill(call, out, g, true) }
}

/// Collective over the default group; `list` holds ranks of the default group.
#[no_mangle]
pub unsafe extern "C" fn PARMCI_Group_create(n: c_int, list: *mut c_int, out: *mut ArmciGroup) {
    let call = "ARMCI_Group_create";
    let parent = default_group().unwrap_or_else(|| a(call).world_group());
    // SAFETY: forwards the caller's contract.
    unsafe { create(call, n, list, out, parent) }
}

/// Collective over `parent`; `list` holds ranks of `parent`.
#[no_mangle]
pub unsafe extern "C" fn PARMCI_Group_create_child(
    n: c_int,
    list: *mut c_int,
    out: *mut ArmciGroup,
    parent: *mut ArmciGroup,
) {
    let call = "ARMCI_Group_create_child";
    // SAFETY: the caller's parent group.
    let parent = unsafe { group(call, parent) }.clone();
    // SAFETY: forwards the caller's contract.
    unsafe { create(call, n, list, out, parent) }
}

#[no_mangle]
pub unsafe extern "C" fn PARMCI_Group_free(g: *mut ArmciGroup) {
    // SAFETY: the caller's group or NULL.
    if let Some(g) = unsafe { g.as_mut() } {
        if !g.imp.is_null() {
            // SAFETY: from `fill`'s Box::into_raw, freed once (the pointer is cleared).
            let b = unsafe { Box::from_raw(g.imp.cast::<Boxed>()) };
            if b.created {
                super::mpi::group_freed(b.group.id());
            }
        }
        g.imp = std::ptr::null_mut();
        g.grp_to_abs = std::ptr::null_mut();
        g.rank = -1;
        g.size = 0;
    }
}

#[no_mangle]
pub unsafe extern "C" fn PARMCI_Group_rank(g: *mut ArmciGroup, rank: *mut c_int) -> c_int {
    let call = "ARMCI_Group_rank";
    // SAFETY: the caller's group and int.
    unsafe {
        let gr = group(call, g);
        if !rank.is_null() {
            *rank = gr.rank_of(a(call).me()).map_or(-1, |r| r as c_int);
        }
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn PARMCI_Group_size(g: *mut ArmciGroup, size: *mut c_int) {
    let call = "ARMCI_Group_size";
    // SAFETY: the caller's group and int.
    unsafe {
        let n = group(call, g).members().len() as c_int;
        if !size.is_null() {
            *size = n;
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn PARMCI_Group_set_default(g: *mut ArmciGroup) {
    // SAFETY: the caller's group.
    let gr = unsafe { group("ARMCI_Group_set_default", g) }.clone();
    *DEFAULT.lock().unwrap_or_else(|p| p.into_inner()) = Some(gr);
}

#[no_mangle]
pub unsafe extern "C" fn PARMCI_Group_get_default(out: *mut ArmciGroup) {
    let call = "ARMCI_Group_get_default";
    let g = default_group().unwrap_or_else(|| a(call).world_group());
    // SAFETY: the caller's group to fill.
    unsafe { fill(call, out, g, false) }
}

#[no_mangle]
pub unsafe extern "C" fn PARMCI_Group_get_world(out: *mut ArmciGroup) {
    let call = "ARMCI_Group_get_world";
    let g = a(call).world_group();
    // SAFETY: the caller's group to fill.
    unsafe { fill(call, out, g, false) }
}

#[no_mangle]
pub unsafe extern "C" fn PARMCI_Absolute_id(g: *mut ArmciGroup, rank: c_int) -> c_int {
    let call = "ARMCI_Absolute_id";
    // SAFETY: the caller's group.
    let gr = unsafe { group(call, g) };
    usize::try_from(rank)
        .ok()
        .and_then(|r| gr.members().get(r))
        .map_or_else(
            || {
                fatal(
                    call,
                    &Error::BadProc {
                        proc: rank.into(),
                        n: gr.members().len() as u32,
                    },
                )
            },
            |&m| m as c_int,
        )
}

/// Group allocation: `ptr_arr[i]` is group member i's base.
pub(super) unsafe fn malloc_group(
    call: &str,
    ptr_arr: *mut *mut c_void,
    bytes: c_long,
    g: &Group,
) -> c_int {
    let w = a(call);
    if ptr_arr.is_null() {
        fatal(call, &Error::BadArgument("ptr_arr is NULL".into()));
    }
    let len = usize::try_from(bytes)
        .unwrap_or_else(|_| fatal(call, &Error::BadArgument(format!("negative size {bytes}"))));
    let bases = ok(call, w.malloc_group(g, len));
    for (i, &m) in g.members().iter().enumerate() {
        // SAFETY: the caller's array of one pointer per group member.
        unsafe { *ptr_arr.add(i) = bases[m as usize].0 as *mut c_void };
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn PARMCI_Malloc_group(
    ptr_arr: *mut *mut c_void,
    bytes: c_long,
    g: *mut ArmciGroup,
) -> c_int {
    let call = "ARMCI_Malloc_group";
    // SAFETY: forwards the caller's contract.
    unsafe { malloc_group(call, ptr_arr, bytes, group(call, g)) }
}

#[no_mangle]
pub unsafe extern "C" fn PARMCI_Free_group(ptr: *mut c_void, g: *mut ArmciGroup) -> c_int {
    let call = "ARMCI_Free_group";
    // SAFETY: the caller's group.
    let gr = unsafe { group(call, g) };
    ok(call, a(call).free_group(gr, ptr as usize));
    0
}

/// Memory devices are a placement hint: the memory is the ordinary kind.
#[no_mangle]
pub unsafe extern "C" fn PARMCI_Malloc_memdev(
    ptr_arr: *mut *mut c_void,
    bytes: c_long,
    _dev: *const c_char,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe { super::PARMCI_Malloc(ptr_arr, bytes) }
}
/// As `ARMCI_Malloc_group` (the device is a hint).
#[no_mangle]
pub unsafe extern "C" fn PARMCI_Malloc_group_memdev(
    ptr_arr: *mut *mut c_void,
    bytes: c_long,
    g: *mut ArmciGroup,
    _dev: *const c_char,
) -> c_int {
    // SAFETY: forwards the caller's contract.
    unsafe { PARMCI_Malloc_group(ptr_arr, bytes, g) }
}
/// As `ARMCI_Free`.
#[no_mangle]
pub extern "C" fn PARMCI_Free_memdev(ptr: *mut c_void) -> c_int {
    super::PARMCI_Free(ptr)
}
/// As `ARMCI_Uses_shm`.
#[no_mangle]
pub extern "C" fn PARMCI_Uses_shm_grp(_g: *mut ArmciGroup) -> c_int {
    super::PARMCI_Uses_shm()
}

#[no_mangle]
pub unsafe extern "C" fn parmci_msg_group_barrier(g: *mut ArmciGroup) {
    let call = "armci_msg_group_barrier";
    // SAFETY: the caller's group.
    let gr = unsafe { group(call, g) };
    ok(call, a(call).group_barrier(gr));
}

#[no_mangle]
pub unsafe extern "C" fn parmci_msg_group_bcast_scope(
    scope: c_int,
    buf: *mut c_void,
    len: c_int,
    root: c_int,
    g: *mut ArmciGroup,
) {
    let call = "armci_msg_group_bcast_scope";
    // SAFETY: the caller's group.
    let gr = unsafe { group(call, g) };
    if super::scope::part(call, scope, gr.members()) != super::scope::Part::All {
        return; // alone or outside the scope: nothing to send
    }
    let n = usize::try_from(len)
        .unwrap_or_else(|_| fatal(call, &Error::BadArgument(format!("negative length {len}"))));
    let root = usize::try_from(root).unwrap_or(usize::MAX);
    if n == 0 {
        return;
    }
    // SAFETY: the caller's buffer of `len` bytes.
    let b = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), n) };
    ok(call, a(call).group_bcast(gr, root, b));
}

#[no_mangle]
pub unsafe extern "C" fn parmci_msg_group_gop_scope(
    scope: c_int,
    x: *mut c_void,
    n: c_int,
    op: *mut c_char,
    ty: c_int,
    g: *mut ArmciGroup,
) {
    let call = "armci_msg_group_gop_scope";
    // SAFETY: the caller's group; forwards the caller's contract.
    unsafe { super::message::gop(call, scope, x, n, op, ty, Some(group(call, g))) }
}

/// `armci_exchange_address_grp`: fills `ptr_arr[i]` of every member with member `i`'s own
/// `ptr_arr[i]` (`n` = the group's size; group ranks).
#[no_mangle]
pub unsafe extern "C" fn parmci_exchange_address_grp(
    ptr_arr: *mut *mut c_void,
    n: c_int,
    g: *mut ArmciGroup,
) {
    let call = "armci_exchange_address_grp";
    // SAFETY: the caller's group.
    let gr = unsafe { group(call, g) };
    let w = a(call);
    let size = gr.members().len();
    let Some(me) = gr.rank_of(w.me()) else {
        fatal(
            call,
            &Error::BadArgument("the caller is not in the group".into()),
        );
    };
    if ptr_arr.is_null() || usize::try_from(n) != Ok(size) {
        fatal(
            call,
            &Error::BadArgument(format!("an array of {n} pointers for {size} members")),
        );
    }
    // SAFETY: the caller's array of one pointer per member.
    let mine = unsafe { *ptr_arr.add(me) } as u64;
    let all = ok(call, w.group_allgather(gr, &mine.to_le_bytes()));
    for (i, b) in all.chunks_exact(8).enumerate() {
        let v = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        // SAFETY: as above (`all` has one word per member).
        unsafe { *ptr_arr.add(i) = v as usize as *mut c_void };
    }
}

/// `armci_grp_clus_brdcst`: the buffer of group rank `master` to the members `master ..
/// master + nproc` of `g`, which must be the caller's node (`SCOPE_NODE` within the
/// group, as classic ARMCI's caller computes them).
#[no_mangle]
pub unsafe extern "C" fn parmci_grp_clus_brdcst(
    buf: *mut c_void,
    len: c_int,
    master: c_int,
    nproc: c_int,
    g: *mut ArmciGroup,
) {
    let call = "armci_grp_clus_brdcst";
    // SAFETY: the caller's group.
    let gr = unsafe { group(call, g) };
    let node = super::scope::members(call, 1, gr.members());
    let named: Option<Vec<u32>> = usize::try_from(master)
        .ok()
        .zip(usize::try_from(nproc).ok())
        .and_then(|(m, k)| gr.members().get(m..m.checked_add(k)?))
        .map(<[u32]>::to_vec);
    if named.as_deref() != Some(&node[..]) {
        fatal(
            call,
            &Error::BadArgument(format!(
                "group ranks {master}..{master}+{nproc} are not the caller's node (job ranks {node:?})"
            )),
        );
    }
    // SAFETY: the caller's group; forwards the caller's contract.
    unsafe { parmci_msg_group_bcast_scope(1, buf, len, master, g) }
}

macro_rules! group_gops {
    ($($name:ident, $t:ty, $ty:literal, $call:literal;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(x: *mut $t, n: c_int, op: *mut c_char, g: *mut ArmciGroup) {
            // SAFETY: the caller's group; forwards the caller's contract.
            unsafe { super::message::gop($call, 0, x.cast(), n, op, $ty, Some(group($call, g))) }
        }
    )*};
}
group_gops! {
    parmci_msg_group_igop, c_int, 0, "armci_msg_group_igop";
    parmci_msg_group_lgop, c_long, 1, "armci_msg_group_lgop";
    parmci_msg_group_llgop, c_longlong, 2, "armci_msg_group_llgop";
    parmci_msg_group_fgop, f32, 3, "armci_msg_group_fgop";
    parmci_msg_group_dgop, f64, 4, "armci_msg_group_dgop";
}

profiled! {
    ARMCI_Group_create => PARMCI_Group_create(n: c_int, list: *mut c_int, out: *mut ArmciGroup);
    ARMCI_Group_create_child => PARMCI_Group_create_child(n: c_int, list: *mut c_int, out: *mut ArmciGroup, parent: *mut ArmciGroup);
    ARMCI_Group_free => PARMCI_Group_free(g: *mut ArmciGroup);
    ARMCI_Group_rank => PARMCI_Group_rank(g: *mut ArmciGroup, rank: *mut c_int) -> c_int;
    ARMCI_Group_size => PARMCI_Group_size(g: *mut ArmciGroup, size: *mut c_int);
    ARMCI_Group_set_default => PARMCI_Group_set_default(g: *mut ArmciGroup);
    ARMCI_Group_get_default => PARMCI_Group_get_default(out: *mut ArmciGroup);
    ARMCI_Group_get_world => PARMCI_Group_get_world(out: *mut ArmciGroup);
    ARMCI_Absolute_id => PARMCI_Absolute_id(g: *mut ArmciGroup, rank: c_int) -> c_int;
    ARMCI_Malloc_group => PARMCI_Malloc_group(ptr_arr: *mut *mut c_void, bytes: c_long, g: *mut ArmciGroup) -> c_int;
    ARMCI_Free_group => PARMCI_Free_group(ptr: *mut c_void, g: *mut ArmciGroup) -> c_int;
    ARMCI_Malloc_memdev => PARMCI_Malloc_memdev(ptr_arr: *mut *mut c_void, bytes: c_long, dev: *const c_char) -> c_int;
    ARMCI_Malloc_group_memdev => PARMCI_Malloc_group_memdev(ptr_arr: *mut *mut c_void, bytes: c_long, g: *mut ArmciGroup, dev: *const c_char) -> c_int;
    ARMCI_Free_memdev => PARMCI_Free_memdev(ptr: *mut c_void) -> c_int;
    ARMCI_Uses_shm_grp => PARMCI_Uses_shm_grp(g: *mut ArmciGroup) -> c_int;
    armci_msg_group_barrier => parmci_msg_group_barrier(g: *mut ArmciGroup);
    armci_exchange_address_grp => parmci_exchange_address_grp(ptr_arr: *mut *mut c_void, n: c_int, g: *mut ArmciGroup);
    armci_grp_clus_brdcst => parmci_grp_clus_brdcst(buf: *mut c_void, len: c_int, master: c_int, nproc: c_int, g: *mut ArmciGroup);
    armci_msg_group_bcast_scope => parmci_msg_group_bcast_scope(scope: c_int, buf: *mut c_void, len: c_int, root: c_int, g: *mut ArmciGroup);
    armci_msg_group_gop_scope => parmci_msg_group_gop_scope(scope: c_int, x: *mut c_void, n: c_int, op: *mut c_char, ty: c_int, g: *mut ArmciGroup);
    armci_msg_group_igop => parmci_msg_group_igop(x: *mut c_int, n: c_int, op: *mut c_char, g: *mut ArmciGroup);
    armci_msg_group_lgop => parmci_msg_group_lgop(x: *mut c_long, n: c_int, op: *mut c_char, g: *mut ArmciGroup);
    armci_msg_group_llgop => parmci_msg_group_llgop(x: *mut c_longlong, n: c_int, op: *mut c_char, g: *mut ArmciGroup);
    armci_msg_group_fgop => parmci_msg_group_fgop(x: *mut f32, n: c_int, op: *mut c_char, g: *mut ArmciGroup);
    armci_msg_group_dgop => parmci_msg_group_dgop(x: *mut f64, n: c_int, op: *mut c_char, g: *mut ArmciGroup);
}
