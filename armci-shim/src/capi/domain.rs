//! The topology calls (`armci_domain_*`, `ARMCI_Same_node`) with ARMCI's one domain kind,
//! `ARMCI_DOMAIN_SMP`: the processes that reach each other's memory directly. On the
//! direct path that is every process of the job (one domain, as on the shm driver's one
//! node); on the message path each process is its own domain.
#![allow(clippy::missing_safety_doc)] // documented in armci.h

use std::ffi::c_int;

use super::{a, A};
use crate::{fatal, Error, Path};

/// The `ARMCI_DOMAIN_SMP` domain of job rank `r` (module docs): the scopes of the
/// `armci_msg_*` collectives ([`super::scope`]) follow the same partition.
pub(super) fn domain_of(w: &A, r: u32) -> u32 {
    match w.path() {
        Path::Direct => 0,
        Path::Messages => r,
    }
}

/// (domains, processes per domain, this process's domain) for `call`.
fn shape(call: &str, domain: c_int) -> (c_int, c_int, c_int) {
    if domain != 0 {
        fatal(
            call,
            &Error::BadArgument(format!("domain kind {domain} is not ARMCI_DOMAIN_SMP")),
        );
    }
    let w = a(call);
    let n = w.nproc() as c_int;
    match w.path() {
        Path::Direct => (1, n, 0),
        Path::Messages => (n, 1, w.me() as c_int),
    }
}

fn check(call: &str, what: &str, v: c_int, n: c_int) -> c_int {
    if v < 0 || v >= n {
        fatal(
            call,
            &Error::BadArgument(format!("{what} {v} is out of range (0..{n})")),
        );
    }
    v
}

#[no_mangle]
pub extern "C" fn parmci_domain_count(domain: c_int) -> c_int {
    shape("armci_domain_count", domain).0
}
#[no_mangle]
pub extern "C" fn parmci_domain_my_id(domain: c_int) -> c_int {
    shape("armci_domain_my_id", domain).2
}
#[no_mangle]
pub extern "C" fn parmci_domain_nprocs(domain: c_int, id: c_int) -> c_int {
    let call = "armci_domain_nprocs";
    let (count, per, _) = shape(call, domain);
    check(call, "domain", id, count);
    per
}
#[no_mangle]
pub extern "C" fn parmci_domain_id(domain: c_int, proc: c_int) -> c_int {
    let call = "armci_domain_id";
    let (count, _, _) = shape(call, domain);
    let p = check(call, "process", proc, a(call).nproc() as c_int);
    if count == 1 {
        0
    } else {
        p
    }
}
#[no_mangle]
pub extern "C" fn parmci_domain_glob_proc_id(domain: c_int, id: c_int, loc: c_int) -> c_int {
    let call = "armci_domain_glob_proc_id";
    let (count, per, _) = shape(call, domain);
    let id = check(call, "domain", id, count);
    let loc = check(call, "local process", loc, per);
    if count == 1 {
        loc
    } else {
        id
    }
}
#[no_mangle]
pub extern "C" fn parmci_domain_same_id(domain: c_int, proc: c_int) -> c_int {
    let call = "armci_domain_same_id";
    let (count, _, mine) = shape(call, domain);
    let p = check(call, "process", proc, a(call).nproc() as c_int);
    c_int::from(count == 1 || p == mine)
}
/// Whether `proc` is in this process's SMP domain (module docs).
#[no_mangle]
pub extern "C" fn PARMCI_Same_node(proc: c_int) -> c_int {
    parmci_domain_same_id(0, proc)
}

profiled! {
    armci_domain_count => parmci_domain_count(domain: c_int) -> c_int;
    armci_domain_my_id => parmci_domain_my_id(domain: c_int) -> c_int;
    armci_domain_nprocs => parmci_domain_nprocs(domain: c_int, id: c_int) -> c_int;
    armci_domain_id => parmci_domain_id(domain: c_int, proc: c_int) -> c_int;
    armci_domain_glob_proc_id => parmci_domain_glob_proc_id(domain: c_int, id: c_int, loc: c_int) -> c_int;
    armci_domain_same_id => parmci_domain_same_id(domain: c_int, proc: c_int) -> c_int;
    ARMCI_Same_node => PARMCI_Same_node(proc: c_int) -> c_int;
}
