//! User-defined reduction operations (MPI-3.1 §5.9.5): `MPI_Op_create`, `Op_free`,
//! `Op_commutative`, and the lookup of an op handle for the reducing collectives.
//!
//! Handles 1-14 are the predefined operations; user operations get handles from
//! [`FIRST_USER_OP`] in a table of their own (it needs no MPI state).

use std::borrow::Cow;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

use mpi_lite::coll::op_from_handle;
use mpi_lite::op::{ReduceOp, UserFn};
use mpi_lite::{Error, Result};

use super::{get, mpi_fn, put};
use crate::state::call_pure;

/// `MPI_User_function`: `(invec, inoutvec, len, datatype)`.
pub type MPI_User_function = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut c_int);

/// The first handle of a user operation.
pub const FIRST_USER_OP: c_int = 32;

static OPS: Mutex<Vec<Option<(MPI_User_function, bool)>>> = Mutex::new(Vec::new());

fn table() -> std::sync::MutexGuard<'static, Vec<Option<(MPI_User_function, bool)>>> {
    OPS.lock().unwrap_or_else(|p| p.into_inner())
}

fn user(op: c_int) -> Option<(MPI_User_function, bool)> {
    let i = usize::try_from(op.checked_sub(FIRST_USER_OP)?).ok()?;
    table().get(i).copied().flatten()
}

thread_local! {
    /// Depth of user operations running on this thread (inside a reduction, which holds
    /// the library's lock).
    static IN_OP: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// The datatype handle the innermost running user operation was called with.
    static OP_TYPE: std::cell::Cell<c_int> = const { std::cell::Cell::new(0) };
}

/// The datatype for a query made by a user operation while its reduction holds the
/// library's lock (mpi4py's callbacks ask `MPI_Type_get_extent` of the type they are
/// given): a predefined type (no state needed) or the operation's own type (from the
/// reduction, `mpi_lite::op::current_type`). `None` outside user operations or for
/// other types, which then take the ordinary path.
pub(crate) fn type_in_op(t: c_int) -> Option<Cow<'static, mpi_lite::datatype::Datatype>> {
    if IN_OP.with(|c| c.get()) == 0 || t <= 0 {
        return None;
    }
    if (t as usize) < crate::state::h::FIRST_USER_TYPE {
        return mpi_lite::datatype::Datatype::basic_at(t as usize - 1).map(Cow::Borrowed);
    }
    (OP_TYPE.with(|c| c.get()) == t)
        .then(mpi_lite::op::current_type)
        .flatten()
        .map(Cow::Owned)
}

/// The operation of handle `op`, applied to elements of datatype handle `dt` (a user
/// function is called with that handle, as MPI requires).
pub(crate) fn op_of(op: c_int, dt: c_int) -> Result<ReduceOp> {
    if op < FIRST_USER_OP {
        return op_from_handle(op).map(ReduceOp::Predefined);
    }
    let (f, commutative) =
        user(op).ok_or_else(|| Error::Op(format!("operation handle {op} is not valid")))?;
    let call: UserFn = Arc::new(move |a: &[u8], inout: &mut [u8], n: usize| {
        let (mut len, mut d) = (n as c_int, dt);
        IN_OP.with(|c| c.set(c.get() + 1));
        let outer = OP_TYPE.with(|c| c.replace(dt));
        // SAFETY: the program's function with MPI's arguments: `n` elements at each
        // address (`a` is only read by a correct function: MPI's `invec`), the count and
        // the datatype handle, all valid for the call.
        unsafe {
            f(
                a.as_ptr().cast_mut().cast(),
                inout.as_mut_ptr().cast(),
                &mut len,
                &mut d,
            )
        };
        OP_TYPE.with(|c| c.set(outer));
        IN_OP.with(|c| c.set(c.get() - 1));
    });
    Ok(ReduceOp::User {
        f: call,
        commutative,
    })
}

mpi_fn!(MPI_Op_create, PMPI_Op_create, (user_fn: Option<MPI_User_function>, commute: c_int, op: *mut c_int) -> c_int {
    call_pure("MPI_Op_create", || {
        let f = user_fn.ok_or_else(|| Error::Arg("MPI_Op_create: user_fn is NULL".into()))?;
        let hd = {
            let mut t = table();
            let i = match t.iter().position(Option::is_none) {
                Some(i) => i,
                None => {
                    t.push(None);
                    t.len() - 1
                }
            };
            t[i] = Some((f, commute != 0));
            FIRST_USER_OP + i as c_int
        };
        // SAFETY: the caller's handle.
        unsafe { put(op, hd, "op") }
    })
});

mpi_fn!(MPI_Op_free, PMPI_Op_free, (op: *mut c_int) -> c_int {
    call_pure("MPI_Op_free", || {
        // SAFETY: the caller's handle.
        let h = unsafe { get(op, "op")? };
        if user(h).is_none() {
            return Err(Error::Op(format!("MPI_Op_free: {h} is not a user operation (predefined ones cannot be freed)")));
        }
        table()[(h - FIRST_USER_OP) as usize] = None;
        // SAFETY: the caller's handle.
        unsafe { put(op, 0, "op") }
    })
});

mpi_fn!(MPI_Op_commutative, PMPI_Op_commutative, (op: c_int, commute: *mut c_int) -> c_int {
    call_pure("MPI_Op_commutative", || {
        // MPI_REPLACE and MPI_NO_OP (one-sided only) do not commute.
        let c = match op {
            1..=12 => true,
            13 | 14 => false,
            o if o >= FIRST_USER_OP => op_of(o, 0)?.commutative(),
            o => return Err(Error::Op(format!("MPI_Op_commutative: {o} is not an operation"))),
        };
        // SAFETY: the caller's int.
        unsafe { put(commute, c as c_int, "commute") }
    })
});
