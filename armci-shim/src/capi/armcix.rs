//! ARMCI-MPI's extensions (`armcix.h`): group split and duplicate, mutex handles (sets of
//! mutexes over a group, beside `ARMCI_Create_mutexes`'s), explicit progress. Plain names
//! only, as ARMCI-MPI's library has them (no `PARMCIX_`).
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in armcix.h

use std::ffi::{c_int, c_void};

use super::group::{create, group, ArmciGroup};
use super::rma::len_of;
use super::{a, ok};
use crate::mutex::Mutexes;
use crate::{fatal, Error};

/// `ARMCIX_Group_split`: like `MPI_Comm_split` over `parent` (collective over it): the
/// members passing the same `color` (≥ 0) form a group, ordered by `key`, then by their
/// rank in `parent`. Returns 0.
#[no_mangle]
pub unsafe extern "C" fn ARMCIX_Group_split(
    parent: *mut ArmciGroup,
    color: c_int,
    key: c_int,
    out: *mut ArmciGroup,
) -> c_int {
    let call = "ARMCIX_Group_split";
    let w = a(call);
    // SAFETY: the caller's parent group.
    let parent = unsafe { group(call, parent) }.clone();
    if color < 0 {
        fatal(
            call,
            &Error::BadArgument(format!(
                "color {color}: every member gets a group here (a color >= 0)"
            )),
        );
    }
    let mut mine = [0u8; 8];
    mine[..4].copy_from_slice(&color.to_le_bytes());
    mine[4..].copy_from_slice(&key.to_le_bytes());
    let all = ok(call, w.group_allgather(&parent, &mine));
    let word = |c: &[u8], k: usize| c_int::from_le_bytes([c[k], c[k + 1], c[k + 2], c[k + 3]]);
    let mut same: Vec<(c_int, c_int)> = all
        .chunks_exact(8)
        .enumerate()
        .filter(|(_, c)| word(c, 0) == color)
        .map(|(r, c)| (word(c, 4), r as c_int))
        .collect();
    same.sort_unstable();
    let list: Vec<c_int> = same.iter().map(|&(_, r)| r).collect();
    // SAFETY: `list` holds `list.len()` ranks of `parent`; `out` is the caller's.
    unsafe { create(call, list.len() as c_int, list.as_ptr(), out, parent) };
    0
}

/// `ARMCIX_Group_dup`: a new group of `parent`'s members in the same order (collective
/// over `parent`). Returns 0.
#[no_mangle]
pub unsafe extern "C" fn ARMCIX_Group_dup(parent: *mut ArmciGroup, out: *mut ArmciGroup) -> c_int {
    let call = "ARMCIX_Group_dup";
    // SAFETY: the caller's parent group.
    let parent = unsafe { group(call, parent) }.clone();
    let list: Vec<c_int> = (0..parent.members().len() as c_int).collect();
    // SAFETY: `list` holds every rank of `parent`; `out` is the caller's.
    unsafe { create(call, list.len() as c_int, list.as_ptr(), out, parent) };
    0
}

/// The set behind an `armcix_mutex_hdl_t`.
unsafe fn set<'a>(call: &str, h: *mut c_void) -> &'a Mutexes {
    // SAFETY: a handle from ARMCIX_Create_mutexes_hdl (a Box) not yet destroyed, or NULL.
    match unsafe { h.cast::<Mutexes>().as_ref() } {
        Some(m) => m,
        None => fatal(call, &Error::BadArgument("the mutex handle is NULL".into())),
    }
}

/// `ARMCIX_Create_mutexes_hdl`: `count` mutexes on this process among the members of
/// `g` (collective over it; counts may differ), beside any others.
#[no_mangle]
pub unsafe extern "C" fn ARMCIX_Create_mutexes_hdl(
    count: c_int,
    g: *mut ArmciGroup,
) -> *mut c_void {
    let call = "ARMCIX_Create_mutexes_hdl";
    // SAFETY: the caller's group.
    let g = unsafe { group(call, g) }.clone();
    let m = ok(call, a(call).create_mutexes_in(&g, len_of(call, count)));
    Box::into_raw(Box::new(m)).cast()
}

/// `ARMCIX_Destroy_mutexes_hdl` (collective over the handle's group). Returns 0.
#[no_mangle]
pub unsafe extern "C" fn ARMCIX_Destroy_mutexes_hdl(h: *mut c_void) -> c_int {
    let call = "ARMCIX_Destroy_mutexes_hdl";
    // SAFETY: checks the handle is not NULL.
    unsafe { set(call, h) };
    // SAFETY: from ARMCIX_Create_mutexes_hdl's Box::into_raw; the caller destroys it once.
    let m = unsafe { Box::from_raw(h.cast::<Mutexes>()) };
    ok(call, a(call).destroy_mutexes_in(*m));
    0
}

/// `ARMCIX_Lock_hdl`: acquires mutex `mutex` of process `proc` (an absolute id, a member
/// of the handle's group).
#[no_mangle]
pub unsafe extern "C" fn ARMCIX_Lock_hdl(h: *mut c_void, mutex: c_int, proc: c_int) {
    let call = "ARMCIX_Lock_hdl";
    // SAFETY: the caller's handle.
    ok(
        call,
        a(call).lock_in(unsafe { set(call, h) }, mutex.into(), proc.into()),
    );
}

/// `ARMCIX_Trylock_hdl`: takes the mutex if it is free and nobody waits for it; 0 when
/// taken, 1 when not.
#[no_mangle]
pub unsafe extern "C" fn ARMCIX_Trylock_hdl(h: *mut c_void, mutex: c_int, proc: c_int) -> c_int {
    let call = "ARMCIX_Trylock_hdl";
    // SAFETY: the caller's handle.
    let got = ok(
        call,
        a(call).try_lock_in(unsafe { set(call, h) }, mutex.into(), proc.into()),
    );
    c_int::from(!got)
}

/// `ARMCIX_Unlock_hdl`: releases a mutex this process holds.
#[no_mangle]
pub unsafe extern "C" fn ARMCIX_Unlock_hdl(h: *mut c_void, mutex: c_int, proc: c_int) {
    let call = "ARMCIX_Unlock_hdl";
    // SAFETY: the caller's handle.
    ok(
        call,
        a(call).unlock_in(unsafe { set(call, h) }, mutex.into(), proc.into()),
    );
}

/// `ARMCIX_Progress`: serves the requests that arrived for this process (on the message
/// path; nothing to do on the direct one).
#[no_mangle]
pub extern "C" fn ARMCIX_Progress() {
    let call = "ARMCIX_Progress";
    ok(call, a(call).poll());
}
