//! Teams and contexts (OpenSHMEM 1.5 §9.4–9.5): handles translated to [`crate::team`]'s
//! and [`crate::ctx`]'s tables. `SHMEM_TEAM_INVALID` (0) makes the query calls return
//! −1, as the standard asks.
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in shmem.h and the OpenSHMEM standard

use std::ffi::{c_int, c_long, c_void};

use super::{ok, st, team, w, Error};
use crate::ctx::{CtxTeam, CTX_INVALID};
use crate::team::{TEAM_INVALID, TEAM_WORLD};

/// `SHMEM_TEAM_NUM_CONTEXTS`, the one field of `shmem_team_config_t`.
const NUM_CONTEXTS: c_long = 1;

/// The `num_contexts` of a new team's `config` under `mask` (0 when not given).
unsafe fn num_contexts(config: *const c_int, mask: c_long) -> i32 {
    if mask & NUM_CONTEXTS == 0 || config.is_null() {
        return 0;
    }
    // SAFETY: shmem_team_config_t starts with `int num_contexts`; the caller passes one.
    unsafe { *config }
}

/// Stores handle `h` at `out` (if not NULL).
unsafe fn put_handle(out: *mut usize, h: usize) {
    if !out.is_null() {
        // SAFETY: the caller passes a valid shmem_team_t / shmem_ctx_t pointer.
        unsafe { *out = h };
    }
}

#[no_mangle]
pub extern "C" fn pshmem_team_my_pe(t: usize) -> c_int {
    let call = "shmem_team_my_pe";
    if t == TEAM_INVALID {
        return -1;
    }
    w(call)
        .team_my_pe(&team(call, t))
        .map_or(-1, |i| i as c_int)
}

#[no_mangle]
pub extern "C" fn pshmem_team_n_pes(t: usize) -> c_int {
    if t == TEAM_INVALID {
        return -1;
    }
    team("shmem_team_n_pes", t).size() as c_int
}

#[no_mangle]
pub extern "C" fn pshmem_team_translate_pe(src: usize, pe: c_int, dst: usize) -> c_int {
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
pub unsafe extern "C" fn pshmem_team_split_strided(
    parent: usize,
    start: c_int,
    stride: c_int,
    size: c_int,
    config: *const c_void,
    mask: c_long,
    new_team: *mut usize,
) -> c_int {
    let call = "shmem_team_split_strided";
    let s = st(call);
    if parent == TEAM_INVALID {
        // SAFETY: forwards the caller's pointer.
        unsafe { put_handle(new_team, TEAM_INVALID) };
        return -1;
    }
    let p = team(call, parent);
    // SAFETY: forwards the caller's config.
    let nc = unsafe { num_contexts(config.cast(), mask) };
    let (h, r) = match s.world.team_split_strided(&p, start, stride, size) {
        Ok(Some(t)) => (s.teams.add(t, nc), 0),
        Ok(None) => (TEAM_INVALID, 0),
        Err(Error::BadArgument(_) | Error::BadPe { .. }) => (TEAM_INVALID, -1),
        Err(e) => super::fatal(call, &e),
    };
    // SAFETY: forwards the caller's pointer.
    unsafe { put_handle(new_team, h) };
    r
}

/// `shmem_team_split_2d` (§9.4.7): collective over the parent; every member gets its row
/// (x-axis team) and column (y-axis team). Returns 0, or −1 (both handles
/// `SHMEM_TEAM_INVALID`) for an invalid parent or a `xrange` below 1.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the standard's signature
pub unsafe extern "C" fn pshmem_team_split_2d(
    parent: usize,
    xrange: c_int,
    xconfig: *const c_void,
    xmask: c_long,
    xteam: *mut usize,
    yconfig: *const c_void,
    ymask: c_long,
    yteam: *mut usize,
) -> c_int {
    let call = "shmem_team_split_2d";
    let s = st(call);
    let (x, y, r) = if parent == TEAM_INVALID {
        (TEAM_INVALID, TEAM_INVALID, -1)
    } else {
        match s.world.team_split_2d(&team(call, parent), xrange) {
            // SAFETY: forwards the caller's configs.
            Ok((row, col)) => unsafe {
                (
                    s.teams.add(row, num_contexts(xconfig.cast(), xmask)),
                    s.teams.add(col, num_contexts(yconfig.cast(), ymask)),
                    0,
                )
            },
            Err(Error::BadArgument(_)) => (TEAM_INVALID, TEAM_INVALID, -1),
            Err(e) => super::fatal(call, &e),
        }
    };
    // SAFETY: forwards the caller's pointers.
    unsafe {
        put_handle(xteam, x);
        put_handle(yteam, y);
    }
    r
}

#[no_mangle]
pub extern "C" fn pshmem_team_destroy(t: usize) {
    let call = "shmem_team_destroy";
    ok(call, st(call).teams.destroy(t));
}

#[no_mangle]
pub extern "C" fn pshmem_team_sync(t: usize) -> c_int {
    let call = "shmem_team_sync";
    if t == TEAM_INVALID {
        return -1;
    }
    ok(call, w(call).team_sync(&team(call, t)));
    0
}

/// The team's options under `mask` (only `SHMEM_TEAM_NUM_CONTEXTS`: the value it was
/// created with, 0 for the predefined teams). Returns 0, or −1 for `SHMEM_TEAM_INVALID`.
#[no_mangle]
pub unsafe extern "C" fn pshmem_team_get_config(
    t: usize,
    mask: c_long,
    config: *mut c_int,
) -> c_int {
    let call = "shmem_team_get_config";
    if t == TEAM_INVALID {
        return -1;
    }
    let nc = st(call)
        .teams
        .num_contexts(t)
        .unwrap_or_else(|| super::fatal(call, &crate::team::invalid()));
    if mask & NUM_CONTEXTS != 0 && !config.is_null() {
        // SAFETY: shmem_team_config_t starts with `int num_contexts`.
        unsafe { *config = nc };
    }
    0
}

/// A new context of the world (all contexts share the PE's ordering domain, see
/// [`crate::ctx`]).
#[no_mangle]
pub unsafe extern "C" fn pshmem_ctx_create(_options: c_long, ctx: *mut usize) -> c_int {
    let h = st("shmem_ctx_create").ctxs.create(CtxTeam {
        handle: TEAM_WORLD,
        members: None,
    });
    // SAFETY: forwards the caller's pointer.
    unsafe { put_handle(ctx, h) };
    0
}

/// A context of team `t`: PE numbers in calls on it are `t`'s (§9.5.2). Returns 0, or
/// −1 with `SHMEM_CTX_INVALID` for `SHMEM_TEAM_INVALID` (a PE outside a split's team).
#[no_mangle]
pub unsafe extern "C" fn pshmem_team_create_ctx(
    t: usize,
    _options: c_long,
    ctx: *mut usize,
) -> c_int {
    let call = "shmem_team_create_ctx";
    if t == TEAM_INVALID {
        // SAFETY: forwards the caller's pointer.
        unsafe { put_handle(ctx, CTX_INVALID) };
        return -1;
    }
    let tm = team(call, t);
    let h = st(call).ctxs.create(CtxTeam {
        handle: t,
        members: (t > crate::team::TEAM_SHARED).then_some(tm),
    });
    // SAFETY: forwards the caller's pointer.
    unsafe { put_handle(ctx, h) };
    0
}

/// Ends `ctx` after a quiet; `SHMEM_CTX_INVALID` is ignored (§9.5.3).
#[no_mangle]
pub extern "C" fn pshmem_ctx_destroy(ctx: usize) {
    let call = "shmem_ctx_destroy";
    if ctx == CTX_INVALID {
        return;
    }
    let s = st(call);
    ok(call, s.ctxs.destroy(&s.world, ctx));
}

/// The team `ctx` was made from (the world for the default context and
/// `shmem_ctx_create`'s). Returns 0, or −1 with `SHMEM_TEAM_INVALID` for
/// `SHMEM_CTX_INVALID` (§9.5.4).
#[no_mangle]
pub unsafe extern "C" fn pshmem_ctx_get_team(ctx: usize, t: *mut usize) -> c_int {
    let call = "shmem_ctx_get_team";
    let (h, r) = if ctx == CTX_INVALID {
        (TEAM_INVALID, -1)
    } else {
        (ok(call, st(call).ctxs.team(ctx)).handle, 0)
    };
    // SAFETY: forwards the caller's pointer.
    unsafe { put_handle(t, h) };
    r
}

crate::capi::profiled! {
    shmem_team_split_2d => pshmem_team_split_2d(parent: usize, xrange: c_int, xconfig: *const c_void, xmask: c_long, xteam: *mut usize, yconfig: *const c_void, ymask: c_long, yteam: *mut usize) -> c_int;
    shmem_team_my_pe => pshmem_team_my_pe(t: usize) -> c_int;
    shmem_team_n_pes => pshmem_team_n_pes(t: usize) -> c_int;
    shmem_team_translate_pe => pshmem_team_translate_pe(src: usize, pe: c_int, dst: usize) -> c_int;
    shmem_team_split_strided => pshmem_team_split_strided(parent: usize, start: c_int, stride: c_int, size: c_int, config: *const c_void, mask: c_long, new_team: *mut usize) -> c_int;
    shmem_team_destroy => pshmem_team_destroy(t: usize);
    shmem_team_sync => pshmem_team_sync(t: usize) -> c_int;
    shmem_team_get_config => pshmem_team_get_config(t: usize, mask: c_long, config: *mut c_int) -> c_int;
    shmem_ctx_create => pshmem_ctx_create(_options: c_long, ctx: *mut usize) -> c_int;
    shmem_team_create_ctx => pshmem_team_create_ctx(t: usize, _options: c_long, ctx: *mut usize) -> c_int;
    shmem_ctx_destroy => pshmem_ctx_destroy(ctx: usize);
    shmem_ctx_get_team => pshmem_ctx_get_team(ctx: usize, t: *mut usize) -> c_int;
}
