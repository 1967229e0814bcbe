//! The MPI communicators of ARMCI groups, for libraries built on both ARMCI and MPI in
//! one program (Global Arrays: `GA_MPI_Comm_pgroup` and TCGMSG-MPI call
//! `armci_group_comm`, as ARMCI-MPI provides it). libarmci does not link an MPI: when
//! the program's MPI is initialized at `ARMCI_Init`, the world group gets a duplicate of
//! `MPI_COMM_WORLD`, and each group made afterwards a communicator split from its
//! parent's (collective like the group's creation, members in the group's order), found
//! by name in the program (`dlsym`). Without an MPI, `armci_group_comm` gives
//! `MPI_COMM_NULL`.
//!
//! The handles are those of mpi-lite's `mpi.h`, the MPI of this stack (`MPI_Comm` is an
//! `int`); a test reads the header to keep the constants below equal to its own. Another
//! MPI (its `MPI_Get_library_version` does not name mpi-lite) is left alone: its groups'
//! communicators are `MPI_COMM_NULL`.
#![allow(unsafe_code)] // dlsym and calls through the pointers it gives
#![allow(clippy::missing_safety_doc)] // documented in armci.h

use std::collections::HashMap;
use std::ffi::{c_char, c_int, CStr};
use std::sync::{Mutex, OnceLock};

use super::group::ArmciGroup;

/// `MPI_Comm` of mpi-lite's mpi.h.
pub type Comm = c_int;
/// `MPI_COMM_NULL` of mpi.h.
pub const COMM_NULL: Comm = 0;
/// `MPI_COMM_WORLD` of mpi.h.
pub const COMM_WORLD: Comm = 1;
/// `MPI_IDENT` and `MPI_CONGRUENT` of mpi.h (`MPI_Comm_compare`'s answers).
pub const IDENT: c_int = 0;
/// See [`IDENT`].
pub const CONGRUENT: c_int = 1;
/// `MPI_UNDEFINED` of mpi.h (the split colour of a process outside the new group).
pub const UNDEFINED: c_int = -32766;

type FlagFn = unsafe extern "C" fn(*mut c_int) -> c_int;
type DupFn = unsafe extern "C" fn(Comm, *mut Comm) -> c_int;
type SplitFn = unsafe extern "C" fn(Comm, c_int, c_int, *mut Comm) -> c_int;
type FreeFn = unsafe extern "C" fn(*mut Comm) -> c_int;
type VersionFn = unsafe extern "C" fn(*mut c_char, *mut c_int) -> c_int;
type CompareFn = unsafe extern "C" fn(Comm, Comm, *mut c_int) -> c_int;

/// `MPI_MAX_LIBRARY_VERSION_STRING` of mpi.h (as large as any MPI's).
const VERSION_MAX: usize = 8192;

/// The program's MPI calls, if it has an MPI.
struct Mpi {
    initialized: FlagFn,
    finalized: FlagFn,
    dup: DupFn,
    split: SplitFn,
    free: FreeFn,
    query_thread: FlagFn,
    compare: CompareFn,
}

/// Looks `name` up in the program and its libraries.
fn sym(name: &CStr) -> Option<*mut libc::c_void> {
    // SAFETY: dlsym with a NUL-terminated name; RTLD_DEFAULT searches the global scope.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// Whether the program's MPI is mpi-lite (another MPI's handles are not `int`s with these
/// values: with it, groups get no communicator).
fn is_mpi_lite() -> bool {
    let Some(f) = sym(c"MPI_Get_library_version") else {
        return false;
    };
    // SAFETY: the MPI function of that name (mpi.h's signature); callable at any time.
    let f = unsafe { std::mem::transmute::<*mut libc::c_void, VersionFn>(f) };
    let mut buf = vec![0 as c_char; VERSION_MAX];
    let mut len = 0;
    // SAFETY: a buffer of MPI_MAX_LIBRARY_VERSION_STRING bytes and an int.
    if unsafe { f(buf.as_mut_ptr(), &mut len) } != 0 {
        return false;
    }
    let text: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    text.starts_with(b"mpi-lite")
}

fn mpi() -> Option<&'static Mpi> {
    static MPI: OnceLock<Option<Mpi>> = OnceLock::new();
    MPI.get_or_init(|| {
        if !is_mpi_lite() {
            return None;
        }
        // SAFETY: each symbol is the MPI function of that name, whose C signature the
        // type spells (mpi.h).
        unsafe {
            Some(Mpi {
                initialized: std::mem::transmute::<*mut libc::c_void, FlagFn>(sym(
                    c"MPI_Initialized",
                )?),
                finalized: std::mem::transmute::<*mut libc::c_void, FlagFn>(sym(c"MPI_Finalized")?),
                dup: std::mem::transmute::<*mut libc::c_void, DupFn>(sym(c"MPI_Comm_dup")?),
                split: std::mem::transmute::<*mut libc::c_void, SplitFn>(sym(c"MPI_Comm_split")?),
                free: std::mem::transmute::<*mut libc::c_void, FreeFn>(sym(c"MPI_Comm_free")?),
                query_thread: std::mem::transmute::<*mut libc::c_void, FlagFn>(sym(
                    c"MPI_Query_thread",
                )?),
                compare: std::mem::transmute::<*mut libc::c_void, CompareFn>(sym(
                    c"MPI_Comm_compare",
                )?),
            })
        }
    })
    .as_ref()
}

/// The MPI, if the program has one and it is running (initialized, not finalized).
fn running() -> Option<&'static Mpi> {
    let m = mpi()?;
    let (mut i, mut f) = (0, 0);
    // SAFETY: MPI_Initialized/MPI_Finalized may be called at any time.
    unsafe {
        (m.initialized)(&mut i);
        (m.finalized)(&mut f);
    }
    (i != 0 && f == 0).then_some(m)
}

/// Group id → its communicator (the world group's too).
static COMMS: Mutex<Option<HashMap<u32, Comm>>> = Mutex::new(None);

fn with_comms<T>(f: impl FnOnce(&mut HashMap<u32, Comm>) -> T) -> T {
    let mut g = COMMS.lock().unwrap_or_else(|p| p.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

/// At `ARMCI_Init` (collective): the world group's duplicate of `comm`
/// (`MPI_COMM_WORLD`, or the communicator `ARMCI_Init_thread_comm` was given).
pub(super) fn init(world_gid: u32, comm: Comm) {
    let Some(m) = running() else { return };
    let mut c = COMM_NULL;
    // SAFETY: MPI_Comm_dup on a communicator of every process, collective like
    // ARMCI_Init.
    if unsafe { (m.dup)(comm, &mut c) } == 0 {
        with_comms(|t| t.insert(world_gid, c));
    }
}

/// The running MPI's thread level (`MPI_Query_thread`), if an MPI (mpi-lite) runs.
pub(super) fn thread_level() -> Option<c_int> {
    let m = running()?;
    let mut l = 0;
    // SAFETY: MPI_Query_thread on a running MPI, into an int.
    (unsafe { (m.query_thread)(&mut l) } == 0).then_some(l)
}

/// Whether `comm` has the processes of `MPI_COMM_WORLD` in the same order
/// (`MPI_Comm_compare` gives `MPI_IDENT` or `MPI_CONGRUENT`); `None` without a running
/// MPI.
pub(super) fn is_world(comm: Comm) -> Option<bool> {
    let m = running()?;
    let mut r = -1;
    // SAFETY: MPI_Comm_compare on the caller's communicator (an invalid handle is the
    // MPI's error, returned) and MPI_COMM_WORLD.
    let rc = unsafe { (m.compare)(comm, COMM_WORLD, &mut r) };
    Some(rc == 0 && (r == IDENT || r == CONGRUENT))
}

/// At a group's creation (collective over `parent`): this process's communicator of the
/// new group, split from the parent's; `rank` is its place in the new group, if any.
pub(super) fn group_created(parent_gid: u32, gid: u32, rank: Option<usize>) {
    let Some(parent) = with_comms(|t| t.get(&parent_gid).copied()) else {
        return;
    };
    let Some(m) = running() else { return };
    let (colour, key) = match rank {
        Some(r) => (0, r as c_int),
        None => (UNDEFINED, 0),
    };
    let mut c = COMM_NULL;
    // SAFETY: MPI_Comm_split over the parent's communicator, which every member of the
    // parent group enters now (ARMCI_Group_create is collective over it).
    if unsafe { (m.split)(parent, colour, key, &mut c) } == 0 && c != COMM_NULL {
        with_comms(|t| t.insert(gid, c));
    }
}

/// When the group made by `ARMCI_Group_create` is freed: its communicator too.
pub(super) fn group_freed(gid: u32) {
    if let Some(mut c) = with_comms(|t| t.remove(&gid)) {
        if let Some(m) = running() {
            // SAFETY: a communicator this module made and no longer hands out.
            unsafe { (m.free)(&mut c) };
        }
    }
}

/// At `ARMCI_Finalize`: every communicator left (while the MPI still runs).
pub(super) fn finalize() {
    let all: Vec<Comm> = with_comms(|t| t.drain().map(|(_, c)| c).collect());
    if let Some(m) = running() {
        for mut c in all {
            // SAFETY: communicators this module made, no longer handed out.
            unsafe { (m.free)(&mut c) };
        }
    }
}

/// `armci_group_comm`: the group's MPI communicator (`MPI_COMM_NULL` outside the group,
/// or without an MPI running at the group's creation; the world group made before the
/// MPI started gets `MPI_COMM_WORLD` itself).
#[no_mangle]
pub unsafe extern "C" fn parmci_group_comm(g: *mut ArmciGroup) -> Comm {
    let call = "armci_group_comm";
    // SAFETY: the caller's group.
    let gr = unsafe { super::group::group(call, g) };
    let gid = gr.id();
    if let Some(c) = with_comms(|t| t.get(&gid).copied()) {
        return c;
    }
    if gr.members().len() == super::a(call).nproc() as usize && running().is_some() {
        return COMM_WORLD;
    }
    COMM_NULL
}

profiled! {
    armci_group_comm => parmci_group_comm(g: *mut ArmciGroup) -> Comm;
}

#[cfg(test)]
mod tests {
    /// The constants above are mpi-lite's (mpi.h is the contract).
    #[test]
    fn constants_match_mpi_lite() {
        let h = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../mpi-lite/include/mpi.h"
        ))
        .expect("mpi-lite/include/mpi.h");
        for line in [
            "typedef int MPI_Comm;".to_owned(),
            format!("#define MPI_COMM_NULL ((MPI_Comm){})", super::COMM_NULL),
            format!("#define MPI_COMM_WORLD ((MPI_Comm){})", super::COMM_WORLD),
            format!("#define MPI_UNDEFINED ({})", super::UNDEFINED),
            format!("#define MPI_IDENT {}", super::IDENT),
            format!("#define MPI_CONGRUENT {}", super::CONGRUENT),
        ] {
            assert!(h.lines().any(|l| l.trim() == line), "mpi.h lacks {line:?}");
        }
    }
}
