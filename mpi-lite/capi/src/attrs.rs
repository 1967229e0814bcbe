//! Attribute caching (MPI-3.1 §6.7): keyvals with their copy and delete callbacks, and the
//! attributes set on communicators, datatypes and windows — one mechanism for the three
//! kinds of object (`Kind`); the object calls (`MPI_Comm_dup`, `MPI_Type_free`, …, and
//! the window calls when windows exist) call [`copy_all`] and [`delete_all`].
//!
//! The tables are their own lock, never held while a callback runs: callbacks are the
//! program's code and may call MPI (mpi4py's do), so they are called with no lock of the
//! library held (the state lock is released too: see the callers).
//!
//! Values are the program's `void *` (stored as addresses, never dereferenced here).

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::{Mutex, MutexGuard};

use mpi_lite::{Error, Result};

/// `MPI_{Comm,Type,Win}_copy_attr_function` and MPI-1 `MPI_Copy_function` (handles are
/// ints: one shape): (old object, keyval, extra state, value in, `void **` value out,
/// `int *` flag) → error code.
pub type CopyFn =
    unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_{Comm,Type,Win}_delete_attr_function` and `MPI_Delete_function`: (object,
/// keyval, value, extra state) → error code.
pub type DeleteFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

/// What an attribute is attached to (a keyval serves one kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Comm,
    Type,
    Win,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Comm => "communicator",
            Kind::Type => "datatype",
            Kind::Win => "window",
        }
    }
}

/// Handle of the first keyval (leaves room below for nothing else to be taken as one).
const FIRST: i32 = 0x1000;

struct Keyval {
    kind: Kind,
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    extra: usize,
    /// `MPI_*_free_keyval` was called: no new attribute; the slot goes with the last one.
    freed: bool,
    /// Attributes set with it.
    uses: usize,
}

#[derive(Default)]
struct Table {
    keyvals: Vec<Option<Keyval>>,
    /// (kind, object handle) → (keyval, value), in the order set.
    on: HashMap<(Kind, c_int), Vec<(c_int, usize)>>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

fn with<T>(f: impl FnOnce(&mut Table) -> T) -> T {
    let mut g: MutexGuard<'_, Option<Table>> = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    f(g.get_or_insert_with(Table::default))
}

impl Table {
    fn keyval(&self, kind: Kind, kv: c_int, live: bool) -> Result<&Keyval> {
        let k = usize::try_from(kv.wrapping_sub(FIRST))
            .ok()
            .and_then(|i| self.keyvals.get(i))
            .and_then(|k| k.as_ref())
            .filter(|k| !(live && k.freed))
            .ok_or_else(|| {
                Error::Keyval(format!("keyval {kv:#x} does not exist (or was freed)"))
            })?;
        if k.kind != kind {
            return Err(Error::Keyval(format!(
                "keyval {kv:#x} is a {} keyval, used on a {}",
                k.kind.name(),
                kind.name()
            )));
        }
        Ok(k)
    }

    fn slot(&mut self, kv: c_int) -> Option<&mut Keyval> {
        let i = usize::try_from(kv.wrapping_sub(FIRST)).ok()?;
        self.keyvals.get_mut(i)?.as_mut()
    }

    /// One attribute fewer with `kv`: a freed keyval without attributes goes.
    fn unuse(&mut self, kv: c_int) {
        if let Some(k) = self.slot(kv) {
            k.uses = k.uses.saturating_sub(1);
            if k.freed && k.uses == 0 {
                self.keyvals[(kv - FIRST) as usize] = None;
            }
        }
    }
}

/// `MPI_*_create_keyval`: a new keyval of `kind`.
pub fn create(kind: Kind, copy: Option<CopyFn>, delete: Option<DeleteFn>, extra: usize) -> c_int {
    with(|t| {
        let k = Keyval {
            kind,
            copy,
            delete,
            extra,
            freed: false,
            uses: 0,
        };
        let i = match t.keyvals.iter().position(|k| k.is_none()) {
            Some(i) => {
                t.keyvals[i] = Some(k);
                i
            }
            None => {
                t.keyvals.push(Some(k));
                t.keyvals.len() - 1
            }
        };
        FIRST + i as c_int
    })
}

/// `MPI_*_free_keyval`: attributes already set keep it until they are deleted (§6.7.2).
pub fn free(kind: Kind, kv: c_int) -> Result<()> {
    with(|t| {
        t.keyval(kind, kv, true)?;
        let k = t.slot(kv).expect("checked");
        k.freed = true;
        if k.uses == 0 {
            t.keyvals[(kv - FIRST) as usize] = None;
        }
        Ok(())
    })
}

/// The value of `kv` on object `obj`: `None` if not set.
pub fn get(kind: Kind, obj: c_int, kv: c_int) -> Result<Option<usize>> {
    with(|t| {
        t.keyval(kind, kv, false)?;
        Ok(t.on
            .get(&(kind, obj))
            .and_then(|l| l.iter().find(|a| a.0 == kv))
            .map(|a| a.1))
    })
}

/// Calls a delete callback (no lock held).
fn call_delete(
    name: &str,
    obj: c_int,
    kv: c_int,
    f: Option<DeleteFn>,
    val: usize,
    extra: usize,
) -> Result<()> {
    let Some(f) = f else { return Ok(()) };
    // SAFETY: `f` is the function the program registered for this keyval, called as MPI
    // specifies with the object, the keyval and the two values it gave us.
    let rc = unsafe { f(obj, kv, val as *mut c_void, extra as *mut c_void) };
    if rc != 0 {
        return Err(Error::Other(format!(
            "{name}: the delete callback of keyval {kv:#x} returned {rc}"
        )));
    }
    Ok(())
}

/// The delete callback, value and extra state of `kv` on `obj`, if set.
fn lookup(
    t: &Table,
    kind: Kind,
    obj: c_int,
    kv: c_int,
) -> Option<(Option<DeleteFn>, usize, usize)> {
    let val = t.on.get(&(kind, obj))?.iter().find(|a| a.0 == kv)?.1;
    let k = t.keyval(kind, kv, false).ok()?;
    Some((k.delete, val, k.extra))
}

/// `MPI_*_set_attr`: an existing value is first deleted (its callback called; if that
/// fails, nothing changes).
pub fn set(name: &str, kind: Kind, obj: c_int, kv: c_int, val: usize) -> Result<()> {
    let old = with(|t| {
        t.keyval(kind, kv, true)?;
        Ok::<_, Error>(lookup(t, kind, obj, kv))
    })?;
    if let Some((f, v, extra)) = old {
        call_delete(name, obj, kv, f, v, extra)?;
    }
    with(|t| {
        let l = t.on.entry((kind, obj)).or_default();
        match l.iter_mut().find(|a| a.0 == kv) {
            Some(a) => a.1 = val,
            None => {
                l.push((kv, val));
                if let Some(k) = t.slot(kv) {
                    k.uses += 1;
                }
            }
        }
    });
    Ok(())
}

/// Removes `kv` from `obj` (after its delete callback succeeded).
fn remove(kind: Kind, obj: c_int, kv: c_int) {
    with(|t| {
        if let Some(l) = t.on.get_mut(&(kind, obj)) {
            if let Some(i) = l.iter().position(|a| a.0 == kv) {
                l.remove(i);
                if l.is_empty() {
                    t.on.remove(&(kind, obj));
                }
                t.unuse(kv);
            }
        }
    })
}

/// `MPI_*_delete_attr`: calls the delete callback, then removes the attribute (kept if
/// the callback fails). Deleting an attribute that is not set succeeds (as in MPICH).
pub fn delete(name: &str, kind: Kind, obj: c_int, kv: c_int) -> Result<()> {
    let found = with(|t| {
        t.keyval(kind, kv, false)?;
        Ok::<_, Error>(lookup(t, kind, obj, kv))
    })?;
    if let Some((f, v, extra)) = found {
        call_delete(name, obj, kv, f, v, extra)?;
        remove(kind, obj, kv);
    }
    Ok(())
}

/// Deletes every attribute of `obj` (object freed; `MPI_COMM_SELF` at `MPI_Finalize`), in
/// the reverse order of setting (MPI-3.1 §8.7.1 asks that order for `MPI_COMM_SELF`). The
/// first failing callback stops it (the remaining attributes stay) and is the error.
pub fn delete_all(name: &str, kind: Kind, obj: c_int) -> Result<()> {
    loop {
        let last = with(|t| {
            let kv = t.on.get(&(kind, obj))?.last()?.0;
            let (f, v, extra) = lookup(t, kind, obj, kv)?;
            Some((kv, f, v, extra))
        });
        let Some((kv, f, v, extra)) = last else {
            return Ok(());
        };
        call_delete(name, obj, kv, f, v, extra)?;
        remove(kind, obj, kv);
    }
}

/// Copies the attributes of `old` to `new` as their copy callbacks decide (object
/// duplicated: `MPI_Comm_dup`, `MPI_Type_dup`, …). A failing callback is the error; the
/// attributes copied so far stay on `new` (the caller deletes them with the object).
pub fn copy_all(name: &str, kind: Kind, old: c_int, new: c_int) -> Result<()> {
    let todo: Vec<(c_int, Option<CopyFn>, usize, usize)> = with(|t| {
        let l = t.on.get(&(kind, old)).cloned().unwrap_or_default();
        l.into_iter()
            .filter_map(|(kv, v)| {
                let k = t.keyval(kind, kv, false).ok()?;
                Some((kv, k.copy, v, k.extra))
            })
            .collect()
    });
    for (kv, f, v, extra) in todo {
        let Some(f) = f else { continue }; // MPI_*_NULL_COPY_FN: not copied
        let mut out: *mut c_void = std::ptr::null_mut();
        let mut flag: c_int = 0;
        // SAFETY: `f` is the program's copy callback for this keyval, called as MPI
        // specifies: `out` and `flag` are valid for writing for the whole call.
        let rc = unsafe {
            f(
                old,
                kv,
                extra as *mut c_void,
                v as *mut c_void,
                (&mut out as *mut *mut c_void).cast(),
                &mut flag,
            )
        };
        if rc != 0 {
            return Err(Error::Other(format!(
                "{name}: the copy callback of keyval {kv:#x} returned {rc}"
            )));
        }
        if flag != 0 {
            with(|t| {
                t.on.entry((kind, new))
                    .or_default()
                    .push((kv, out as usize));
                if let Some(k) = t.slot(kv) {
                    k.uses += 1;
                }
            });
        }
    }
    Ok(())
}

/// `MPI_*_DUP_FN`: copies the value (MPI-3.1 §6.7.2).
///
/// # Safety
/// `out` points to a writable `void *` and `flag` to a writable int (MPI's contract for a
/// copy callback).
#[no_mangle]
pub unsafe extern "C" fn mpi_lite_attr_dup_fn(
    _old: c_int,
    _kv: c_int,
    _extra: *mut c_void,
    val: *mut c_void,
    out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        out.cast::<*mut c_void>().write(val);
        flag.write(1);
    }
    0
}
