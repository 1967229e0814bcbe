//! ARMCI's scopes of the `armci_msg_*` collectives (`enum armci_scope_e` of message.h):
//! `SCOPE_ALL` is every process of the group, `SCOPE_NODE` those of the caller's
//! `ARMCI_DOMAIN_SMP` domain ([`super::domain`]), `SCOPE_MASTERS` the lowest process of
//! each domain (its master). Classic ARMCI lets only the masters call a `SCOPE_MASTERS`
//! collective, ARMCI-MPI lets everyone call it: here a process outside a node scope
//! returns at once with its buffer untouched, so both conventions work. `SCOPE_ALL` is the
//! group's own collective, which ends the job of a caller outside the group.
//!
//! A domain is the whole job (direct path) or one process (message path), so a scope is
//! always the whole group, the caller alone, or a set the caller is not in: a collective
//! over a strict part of the group (which would need a group of its own, created
//! collectively) cannot arise, and is refused naming the call if domains ever change.

use std::ffi::c_int;

use super::{a, domain::domain_of};
use crate::{fatal, Error};

/// How the calling process takes part in a scoped collective.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Part {
    /// Every process of the group: the group's own collective.
    All,
    /// Only the caller: nothing to exchange.
    Alone,
    /// The caller is not in the scope: it returns at once.
    Outside,
}

/// The processes of `scope` within the group `members` (job ranks, ascending as
/// ARMCI's groups list them), seen from the caller.
pub(super) fn members(call: &str, scope: c_int, members: &[u32]) -> Vec<u32> {
    let w = a(call);
    match scope {
        0 => members.to_vec(),
        1 => {
            let mine = domain_of(w, w.me());
            members
                .iter()
                .copied()
                .filter(|&m| domain_of(w, m) == mine)
                .collect()
        }
        2 => {
            let mut seen = Vec::new();
            let mut sorted = members.to_vec();
            sorted.sort_unstable();
            sorted.retain(|&m| {
                let d = domain_of(w, m);
                let first = !seen.contains(&d);
                seen.push(d);
                first
            });
            sorted
        }
        _ => fatal(
            call,
            &Error::BadArgument(format!(
                "scope {scope} is not SCOPE_ALL, SCOPE_NODE or SCOPE_MASTERS"
            )),
        ),
    }
}

/// How the caller takes part in a collective of `scope` over the group `group`.
pub(super) fn part(call: &str, scope: c_int, group: &[u32]) -> Part {
    if scope == 0 {
        // The group's own collective, which refuses a caller outside the group.
        return Part::All;
    }
    let me = a(call).me();
    let chosen = members(call, scope, group);
    if !chosen.contains(&me) {
        Part::Outside
    } else if chosen.len() == group.len() {
        Part::All
    } else if chosen.len() == 1 {
        Part::Alone
    } else {
        fatal(
            call,
            &Error::NotImplemented("a scope that is a strict part of the group"),
        )
    }
}

/// The job's ranks (the world group's members).
pub(super) fn world(call: &str) -> Vec<u32> {
    (0..a(call).nproc()).collect()
}
