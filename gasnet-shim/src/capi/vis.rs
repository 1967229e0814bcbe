//! `gasnet_vis.h`: vector, indexed and strided put/get (Blocking, NB, NBI), reached
//! through macros over three entry points (`mode` 0 Blocking, 1 NB, 2 NBI; `put` 1/0).
#![allow(unsafe_code)] // the C ABI: raw pointers from C
#![allow(clippy::missing_safety_doc)] // documented in the headers and GASNet's specification

use std::ffi::{c_char, c_int, c_void};

use super::{fatal, g, job_rank, ok};
use crate::rma::Pending;
use crate::vis::{strided, Pieces};
use crate::Error;

type Ev = *mut c_void;

fn name(call: *const c_char) -> String {
    super::call_name(call, "gex_VIS") // VIS calls are not per-message: text at once
}

/// `gex_Memvec_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Memvec {
    addr: *mut c_void,
    len: usize,
}

fn slice<'a, T>(call: &str, p: *const T, n: usize) -> &'a [T] {
    if n == 0 {
        return &[];
    }
    if p.is_null() {
        fatal(call, &Error::BadArgument("a NULL list".into()));
    }
    // SAFETY: the caller's list of `n` entries.
    unsafe { std::slice::from_raw_parts(p, n) }
}

/// Moves the pieces: `remote` in `rank`'s segment, `local` here; finishes per `mode`.
unsafe fn go(
    call: &str,
    put: c_int,
    mode: c_int,
    rank: u32,
    remote: &Pieces,
    local: &Pieces,
) -> Ev {
    let gn = g(call);
    // SAFETY: the caller's local pieces (readable for a put, writable and untouched until
    // completion for a get).
    let p: Pending = ok(call, unsafe {
        if put != 0 {
            gn.put_pieces(rank, remote, local)
        } else {
            gn.get_pieces(local, rank, remote)
        }
    });
    match mode {
        0 => {
            ok(call, gn.complete(p));
            std::ptr::null_mut()
        }
        1 => gn.event_for(p) as Ev,
        _ => {
            ok(call, gn.nbi_add(p, put != 0));
            std::ptr::null_mut()
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn gasnetc_vis_vector(
    put: c_int,
    mode: c_int,
    tm: Ev,
    rank: u32,
    rcount: usize,
    rlist: *const Memvec,
    lcount: usize,
    llist: *const Memvec,
    call: *const c_char,
) -> Ev {
    let call = name(call);
    let r = job_rank(&call, tm, rank);
    let pieces = |l: &[Memvec]| -> Pieces { l.iter().map(|m| (m.addr as usize, m.len)).collect() };
    let remote = pieces(slice(&call, rlist, rcount));
    let local = pieces(slice(&call, llist, lcount));
    // SAFETY: forwards the caller's lists.
    unsafe { go(&call, put, mode, r, &remote, &local) }
}

#[no_mangle]
pub unsafe extern "C" fn gasnetc_vis_indexed(
    put: c_int,
    mode: c_int,
    tm: Ev,
    rank: u32,
    rcount: usize,
    rlist: *const *mut c_void,
    rlen: usize,
    lcount: usize,
    llist: *const *mut c_void,
    llen: usize,
    call: *const c_char,
) -> Ev {
    let call = name(call);
    let r = job_rank(&call, tm, rank);
    let pieces =
        |l: &[*mut c_void], n: usize| -> Pieces { l.iter().map(|&a| (a as usize, n)).collect() };
    let remote = pieces(slice(&call, rlist, rcount), rlen);
    let local = pieces(slice(&call, llist, lcount), llen);
    // SAFETY: forwards the caller's lists.
    unsafe { go(&call, put, mode, r, &remote, &local) }
}

#[no_mangle]
pub unsafe extern "C" fn gasnetc_vis_strided(
    put: c_int,
    mode: c_int,
    tm: Ev,
    rank: u32,
    raddr: *mut c_void,
    rstrides: *const isize,
    laddr: *mut c_void,
    lstrides: *const isize,
    elemsz: usize,
    count: *const usize,
    levels: usize,
    call: *const c_char,
) -> Ev {
    let call = name(call);
    let r = job_rank(&call, tm, rank);
    let count = slice(&call, count, levels);
    let remote = ok(
        &call,
        strided(
            raddr as usize,
            slice(&call, rstrides, levels),
            elemsz,
            count,
        ),
    );
    let local = ok(
        &call,
        strided(
            laddr as usize,
            slice(&call, lstrides, levels),
            elemsz,
            count,
        ),
    );
    // SAFETY: forwards the caller's regions.
    unsafe { go(&call, put, mode, r, &remote, &local) }
}
