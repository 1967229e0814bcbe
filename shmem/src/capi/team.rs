//! Teams and contexts (OpenSHMEM 1.5 §9.4–9.5): handles translated to [`crate::team`]'s
//! and [`crate::ctx`]'s tables. `SHMEM_TEAM_INVALID` (0) makes the query calls return
//! −1, as the standard asks.
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in shmem.h and the OpenSHMEM standard

use std::ffi::{c_int, c_long, c_void};

use super::{check_ctx, fatal, ok, st, team, w, Error};
use crate::team::TEAM_INVALID;

#[no_mangle]
pub extern "C" fn shmem_team_my_pe(t: usize) -> c_int {
    let call = "shmem_team_my_pe";
    if t == TEAM_INVALID {
        return -1;
    }
    w(call)
        .team_my_pe(&team(call, t))
        .map_or(-1, |i| i as c_int)
}

#[no_mangle]
pub extern "C" fn shmem_team_n_pes(t: usize) -> c_int {
    if t == TEAM_INVALID {
        return -1;
    }
    team("shmem_team_n_pes", t).size() as c_int
}

#[no_mangle]
pub extern "C" fn shmem_team_translate_pe(src: usize, pe: c_int, dst: usize) -> c_int {
    let call = "shmem_team_translate_pe";
    if src == TEAM_INVALID || dst == TEAM_INVALID || pe < 0 {
        return -1;
    }
    let (a, b) = (team(call, src), team(call, dst));
    a.translate(pe as usize, &b).map_or(-1, |i| i as c_int)
}

/// `shmem_team_split_strided(parent, start, stride, size, config, config_mask, new_team)`:
/// collective over the parent; members of the new team get a handle, others
/// `SHMEM_TEAM_INVALID`. Returns 0, or −1 for a triplet that leaves the parent.
#[no_mangle]
pub unsafe extern "C" fn shmem_team_split_strided(
    parent: usize,
    start: c_int,
    stride: c_int,
    size: c_int,
    _config: *const c_void,
    _mask: c_long,
    new_team: *mut usize,
) -> c_int {
    let call = "shmem_team_split_strided";
    let s = st(call);
    let p = team(call, parent);
    let (h, r) = match s.world.team_split_strided(&p, start, stride, size) {
        Ok(Some(t)) => (s.teams.add(t), 0),
        Ok(None) => (TEAM_INVALID, 0),
        Err(Error::BadArgument(_) | Error::BadPe { .. }) => (TEAM_INVALID, -1),
        Err(e) => fatal(call, &e),
    };
    if !new_team.is_null() {
        // SAFETY: the caller passes a valid shmem_team_t pointer.
        unsafe { *new_team = h };
    }
    r
}

#[no_mangle]
pub extern "C" fn shmem_team_destroy(t: usize) {
    let call = "shmem_team_destroy";
    ok(call, st(call).teams.destroy(t));
}

#[no_mangle]
pub extern "C" fn shmem_team_sync(t: usize) -> c_int {
    let call = "shmem_team_sync";
    if t == TEAM_INVALID {
        return -1;
    }
    ok(call, w(call).team_sync(&team(call, t)));
    0
}

/// Teams have no configurable options: `num_contexts` reads 0.
#[no_mangle]
pub unsafe extern "C" fn shmem_team_get_config(
    t: usize,
    _mask: c_long,
    config: *mut c_int,
) -> c_int {
    if t == TEAM_INVALID {
        return -1;
    }
    team("shmem_team_get_config", t);
    if !config.is_null() {
        // SAFETY: shmem_team_config_t starts with `int num_contexts`.
        unsafe { *config = 0 };
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn shmem_team_split_2d(
    _parent: usize,
    _xrange: c_int,
    _xc: *const c_void,
    _xm: c_long,
    _xt: *mut usize,
    _yc: *const c_void,
    _ym: c_long,
    _yt: *mut usize,
) -> c_int {
    fatal(
        "shmem_team_split_2d",
        &Error::NotImplemented("shmem_team_split_2d"),
    )
}

/// A new context (all contexts share the PE's ordering domain, see [`crate::ctx`]).
#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_create(_options: c_long, ctx: *mut usize) -> c_int {
    let h = st("shmem_ctx_create").ctxs.create();
    if !ctx.is_null() {
        // SAFETY: the caller passes a valid shmem_ctx_t pointer.
        unsafe { *ctx = h };
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn shmem_team_create_ctx(
    t: usize,
    _options: c_long,
    ctx: *mut usize,
) -> c_int {
    if t == TEAM_INVALID {
        return -1;
    }
    team("shmem_team_create_ctx", t);
    // SAFETY: forwards the caller's pointer.
    unsafe { shmem_ctx_create(0, ctx) }
}

#[no_mangle]
pub extern "C" fn shmem_ctx_destroy(ctx: usize) {
    let call = "shmem_ctx_destroy";
    let s = st(call);
    ok(call, s.ctxs.destroy(&s.world, ctx));
}

/// Every context's team is the world.
#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_get_team(ctx: usize, t: *mut usize) -> c_int {
    check_ctx("shmem_ctx_get_team", ctx);
    if !t.is_null() {
        // SAFETY: the caller passes a valid shmem_team_t pointer.
        unsafe { *t = crate::team::TEAM_WORLD };
    }
    0
}
