//! Process-wide state behind the C handles: the [`Mpi`] object made by `MPI_Init`, the
//! handle tables (communicators, datatypes, groups, user ops) and error-handler dispatch
//! (MPI-3.1 §8.3).
//!
//! Threads (MPI-3.1 §12.4): the level is chosen at `MPI_Init_thread`. Below
//! `MPI_THREAD_MULTIPLE` a call holds the state exclusively (a try-lock: a call entered while
//! another thread is inside one fails at once, see [`concurrent_entry`]), exactly one lock
//! per call. Under `MPI_THREAD_MULTIPLE` calls hold it shared (only `MPI_Init`/`Finalize`
//! take it exclusively): the handle tables have a lock of their own, taken for a lookup or
//! an update, never across communication, and the library ([`Mpi`]) is shared by the
//! threads, its waits holding no lock (`mpi_lite::engine::Engine`).

use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::ops::{Deref, DerefMut};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mpi_lite::comm::CommData;
use mpi_lite::datatype::{Basic, Datatype};
use mpi_lite::engine::lock::{FlagGuard, FlagLock};
use mpi_lite::error::class;
use mpi_lite::group::Group;
use mpi_lite::{Error, Mpi, Result};

use crate::cache::{self, Generation};
use crate::errors::{Kind, Raised};
use skifch_drivers::{DefaultJob, DefaultPort};

/// Handle values of `mpi.h`.
pub mod h {
    pub const COMM_NULL: i32 = 0;
    pub const COMM_WORLD: i32 = 1;
    pub const COMM_SELF: i32 = 2;
    pub const GROUP_EMPTY: i32 = 1;
    pub const REQUEST_NULL: i32 = 0;
    pub const ERRORS_ARE_FATAL: i32 = 1;
    pub const ERRORS_RETURN: i32 = 2;
    pub const DATATYPE_NULL: i32 = 0;
    /// First handle of a user datatype (after the predefined ones).
    pub const FIRST_USER_TYPE: usize = 1 + mpi_lite::datatype::Basic::ALL.len();
    pub const INFO_ENV: i32 = 1;
}

/// A communicator handle's entry.
pub struct CommEntry {
    pub data: Arc<CommData>,
    pub errh: i32,
    pub name: String,
}

/// The handle tables (behind [`CState::t`]).
pub struct Tables {
    pub comms: Vec<Option<CommEntry>>,
    pub types: Vec<Option<Datatype>>,
    pub groups: Vec<Option<Group>>,
    /// `MPI_Info` objects: (key, value) pairs in insertion order (handle 0 is MPI_INFO_NULL).
    pub infos: Vec<Option<Vec<(String, String)>>>,
    /// The handles `MPI_Type_create_f90_*` returned, by (combiner, p, r): the same
    /// parameters give the same predefined handle (§17.1.9).
    pub f90: Vec<((i32, i32, i32), i32)>,
}

/// The handle tables and their lock.
struct TableCell {
    m: Mutex<()>,
    t: UnsafeCell<Tables>,
}

// SAFETY: the tables are reached through a `TablesGuard`, which holds `m`, or — below
// MPI_THREAD_MULTIPLE only — read by `CState::with_comm` in the one thread that holds the
// state (see there); so sharing the cell hands the tables between threads (`Tables: Send`).
unsafe impl Sync for TableCell {}

/// The tables, locked.
pub struct TablesGuard<'a> {
    _m: MutexGuard<'a, ()>,
    t: &'a mut Tables,
}

impl Deref for TablesGuard<'_> {
    type Target = Tables;
    fn deref(&self) -> &Tables {
        self.t
    }
}

impl DerefMut for TablesGuard<'_> {
    fn deref_mut(&mut self) -> &mut Tables {
        self.t
    }
}

/// Everything `MPI_Init` creates.
pub struct CState {
    pub mpi: Mpi<DefaultPort>,
    /// The handle tables: locked for a lookup or an update only (never across a call into
    /// `mpi`, which may wait, nor across a callback of the program).
    tables: TableCell,
    pub provided: i32,
    /// Receives `MPI_Irecv` wrote down without posting (`defer`).
    pub defer: crate::defer::Defer,
    // Dropped after `mpi` (field order): the job outlives its channel.
    pub job: DefaultJob,
}

/// 0: before `MPI_Init`, 1: initialized, 2: finalized.
pub static PHASE: AtomicU8 = AtomicU8::new(0);
/// The error handler of `MPI_COMM_WORLD`, readable before Init and after Finalize (errors
/// of calls made then are raised on it).
pub static WORLD_ERRH: AtomicI32 = AtomicI32::new(h::ERRORS_ARE_FATAL);
/// The state. Below `MPI_THREAD_MULTIPLE` every call holds this lock (a try-lock: one
/// atomic exchange in, one store out; a `Mutex` cost ~10 instructions more per call in its
/// poisoning checks); under it only `MPI_Init` and `MPI_Finalize` take it, and calls reach
/// the state through [`LIVE`].
static STATE: FlagLock<Option<CState>> = FlagLock::new(None);
/// `MPI_THREAD_MULTIPLE` was provided. Set by `MPI_Init` (after [`LIVE`]) with the state
/// locked, so every call after it sees it.
static MULTIPLE: AtomicBool = AtomicBool::new(false);
/// Under `MPI_THREAD_MULTIPLE`: the state inside [`STATE`] for calls, null before `MPI_Init`
/// and from the start of `MPI_Finalize`.
static LIVE: AtomicPtr<CState> = AtomicPtr::new(std::ptr::null_mut());

/// The thread the library is bound to under `MPI_THREAD_SINGLE` and `FUNNELED`
/// ([`mpi_lite::engine::lock::this_thread`]'s value there; set by `MPI_Init`, never
/// changed after), 0 at the other levels and before `MPI_Init`. One load.
#[inline(always)]
pub fn bound_thread() -> usize {
    STATE.bound_to()
}

/// Bumped whenever a communicator handle is freed (its number may then name another).
static COMM_GEN: Generation = Generation::new();

thread_local! {
    /// Under `MPI_THREAD_MULTIPLE`: this thread's last communicator (`cache`).
    static LAST_COMM: cache::Last<CommData> = const { cache::empty() };
}

/// The state for one call: exclusive below `MPI_THREAD_MULTIPLE`, shared under it.
pub enum Guard {
    Excl(FlagGuard<'static, Option<CState>>),
    Shared(Option<&'static CState>, &'static crate::active::Active),
}

impl Guard {
    /// The state, if initialized.
    #[inline]
    pub fn as_ref(&self) -> Option<&CState> {
        match self {
            Guard::Excl(g) => g.as_ref(),
            Guard::Shared(s, _) => *s,
        }
    }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        if let Guard::Shared(_, a) = self {
            crate::active::leave(a);
        }
    }
}

/// The state shared, for one call under `MPI_THREAD_MULTIPLE`.
fn shared() -> Guard {
    // This thread's flag is set before the pointer is read (`active`): either Finalize sees
    // the flag and waits, or this call sees the pointer null.
    let a = crate::active::enter();
    let p = LIVE.load(Ordering::Acquire);
    // SAFETY: when non-null, `p` points to the `CState` inside `STATE` (set by MPI_Init,
    // which does not move it afterwards); MPI_Finalize clears `LIVE` and waits until no
    // thread's flag says it is inside a call before it takes the state out, and under
    // MPI_THREAD_MULTIPLE nothing else locks `STATE` but to read it, so the reference stays
    // valid and shared for as long as this guard (its flag set) lives.
    Guard::Shared(unsafe { p.cast_const().as_ref() }, a)
}

/// The state for one call; `None` when it cannot be had at once (another thread is inside a
/// call and the level is below `MPI_THREAD_MULTIPLE`).
#[inline]
fn enter() -> Option<Guard> {
    if MULTIPLE.load(Ordering::Relaxed) {
        return Some(shared());
    }
    STATE.try_lock().map(Guard::Excl)
}

/// Whether calls share the state (`MPI_THREAD_MULTIPLE`, or before it is known).
#[inline(always)]
pub fn shared_level() -> bool {
    MULTIPLE.load(Ordering::Relaxed)
}

/// Chooses the thread level's locking (`MPI_Init`, holding the state's lock, `g` just
/// initialized): under `MPI_THREAD_MULTIPLE` calls reach the state through [`LIVE`]; under
/// `MPI_THREAD_SINGLE` and `FUNNELED` the state and the engine are bound to this thread
/// (no atomic read-modify-write per call, `mpi_lite::engine::lock`; other threads are
/// refused); `SERIALIZED` keeps the try-lock of any thread.
/// `served`: the asynchronous progress thread shares the engine (opened for
/// `MPI_THREAD_MULTIPLE`, never bound), not the state.
pub fn set_level(
    g: &mut FlagGuard<'static, Option<CState>>,
    multiple: bool,
    one_thread: bool,
    served: bool,
) -> Result<()> {
    if let (true, Some(st)) = (multiple, g.as_ref()) {
        crate::active::init();
        LIVE.store(st as *const CState as *mut CState, Ordering::SeqCst);
    }
    MULTIPLE.store(multiple, Ordering::SeqCst);
    if one_thread && !multiple {
        if let (Some(st), false) = (g.as_ref(), served) {
            st.mpi.engine().bind_to_current_thread()?;
        }
        FlagLock::bind_to_current_thread(g);
    }
    Ok(())
}

/// The state's `Mpi` for the asynchronous progress thread (`progress.rs`), which serves
/// its engine beside the program's calls, at any thread level, without entering calls.
pub struct Served(*const Mpi<DefaultPort>);

// SAFETY: the `Mpi` it points to is shared by threads (its engine opened for
// `MPI_THREAD_MULTIPLE`: every use takes the engine's lock); see `Served::get` for how long.
unsafe impl Send for Served {}

impl Served {
    /// The `Mpi` of the state `g` holds (`MPI_Init`, after opening it for a progress thread).
    pub fn of(g: &FlagGuard<'static, Option<CState>>) -> Option<Served> {
        g.as_ref().map(|st| Served(&st.mpi))
    }

    /// The `Mpi`.
    ///
    /// # Safety
    /// Only until `MPI_Finalize` takes the state out of [`STATE`] (the state is not moved
    /// before: `MPI_Init` put it there, and Finalize stops the progress thread first).
    pub unsafe fn get(&self) -> &Mpi<DefaultPort> {
        // SAFETY: the caller's contract: the state, and its `Mpi`, are still in place.
        unsafe { &*self.0 }
    }
}

/// Whether a program thread is inside a call now (the progress thread's look: such a call
/// progresses for itself): one holds the state's lock, or, under `MPI_THREAD_MULTIPLE`,
/// one's flag is set.
pub fn program_inside() -> bool {
    if MULTIPLE.load(Ordering::Relaxed) {
        crate::active::others_inside()
    } else {
        STATE.is_held()
    }
}

/// `MPI_Finalize`'s first step under `MPI_THREAD_MULTIPLE`: no new call reaches the state,
/// and the calls inside it leave (MPI-3.1 §8.7: the program's other threads must have
/// finished theirs). A call that does not leave within `wait` (a thread blocked for ever, an
/// erroneous program) is an error: the state stays, so nothing is freed under it.
pub fn retire(wait: Duration) -> Result<()> {
    if !MULTIPLE.load(Ordering::SeqCst) {
        return Ok(());
    }
    let p = LIVE.swap(std::ptr::null_mut(), Ordering::SeqCst);
    let t0 = Instant::now();
    loop {
        let n = crate::active::inside();
        if n == 0 {
            break;
        }
        if t0.elapsed() > wait {
            LIVE.store(p, Ordering::SeqCst);
            return Err(Error::Other(format!(
                "MPI_Finalize while {n} other threads are inside MPI calls (they must have \
                 completed them, MPI-3.1 §8.7)"
            )));
        }
        std::thread::yield_now();
    }
    Ok(())
}

/// A call entered while another thread is inside one (issue 16 defect 6), below
/// `MPI_THREAD_MULTIPLE`: calls must not overlap (MPI-3.1 §12.4.3), and in these levels
/// the library's blocking calls keep its lock while they wait (the fast single-threaded
/// paths), so a blocking call cannot be completed by a call of another thread and waiting
/// for the lock could deadlock for ever. Fails at once instead, naming the call, on
/// `MPI_COMM_WORLD`'s handler (the state, and so the communicator's handler, cannot be read
/// while the other call holds it).
#[cold]
fn concurrent_entry(name: &str) -> c_int {
    raise_later(None, h::COMM_WORLD, name, &concurrent_error()).now()
}

#[cold]
fn concurrent_error() -> Error {
    if STATE.bound_elsewhere() {
        return mpi_lite::engine::wrong_thread();
    }
    // The running call's name is not recorded: storing it cost 13 instructions per call
    // on the MPI_Send/MPI_Recv path (callgrind).
    Error::Other(
        "called while another thread is inside an MPI call: the library was initialized \
         for MPI_THREAD_SERIALIZED at most, so MPI calls of several threads must not overlap \
         (a blocking call cannot be completed by another thread's call then: failing instead \
         of deadlocking; MPI_Init_thread with MPI_THREAD_MULTIPLE allows concurrent calls)"
            .into(),
    )
}

/// Runs `f` on the initialized state and returns its result (errors not raised: for calls
/// made of several steps, some of which run the program's callbacks with the lock
/// released; see [`call_steps`]).
pub fn with_state<T>(name: &'static str, f: impl FnOnce(&CState) -> Result<T>) -> Result<T> {
    let Some(g) = enter() else {
        return Err(concurrent_error());
    };
    match g.as_ref() {
        None => Err(not_running(name)),
        Some(st) => f(st),
    }
}

/// MPI call `name` made of steps that take the state lock ([`with_state`]) between which
/// the program's callbacks run (attribute copy and delete functions); errors are raised on
/// `comm`'s handler, a panic becomes `MPI_ERR_INTERN`.
pub fn call_steps(name: &'static str, comm: i32, f: impl FnOnce() -> Result<()>) -> c_int {
    let r = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => Err(Error::Intern(format!("{name}: internal panic (a bug)"))),
    };
    let Err(e) = r else { return class::SUCCESS };
    // Not `raise_now`: after a concurrent entry the lock is another thread's.
    let how = match enter() {
        Some(g) => raise_later(g.as_ref(), comm, name, &e),
        None => raise_later(None, h::COMM_WORLD, name, &e),
    };
    how.now()
}

/// The state locked exclusively, for `MPI_Init` and `MPI_Finalize` (no poisoning: a panic
/// inside a call becomes MPI_ERR_INTERN and leaves tables consistent, each update being a
/// single assignment). An error when this thread may not have it (the state is bound to
/// another thread, or this one holds it).
pub fn lock() -> Result<FlagGuard<'static, Option<CState>>> {
    STATE.lock().ok_or_else(concurrent_error)
}

/// The state for a short look (deciding an error's handler), shared or exclusive as the
/// level wants, waiting for it; `None` when this thread may not have it.
fn look() -> Option<Guard> {
    if MULTIPLE.load(Ordering::Relaxed) {
        return Some(shared());
    }
    lock().ok().map(Guard::Excl)
}

fn alloc<T>(v: &mut Vec<Option<T>>, first: usize, x: T) -> i32 {
    match (first..v.len()).find(|&i| v[i].is_none()) {
        Some(i) => {
            v[i] = Some(x);
            i as i32
        }
        None => {
            v.push(Some(x));
            (v.len() - 1) as i32
        }
    }
}

impl CState {
    pub fn new(job: DefaultJob, mpi: Mpi<DefaultPort>, provided: i32) -> Self {
        let mut types = vec![None];
        types.extend(Basic::ALL.iter().map(|&b| Some(Datatype::basic(b))));
        let comms = vec![
            None,
            Some(CommEntry {
                data: mpi.world_data().clone(),
                errh: WORLD_ERRH.load(Ordering::Relaxed),
                name: "MPI_COMM_WORLD".into(),
            }),
            Some(CommEntry {
                data: mpi.self_data().clone(),
                errh: h::ERRORS_ARE_FATAL,
                name: "MPI_COMM_SELF".into(),
            }),
        ];
        let env = crate::abi::misc::info_env(provided, job.size());
        CState {
            mpi,
            tables: TableCell {
                m: Mutex::new(()),
                t: UnsafeCell::new(Tables {
                    comms,
                    types,
                    groups: vec![None, Some(Group::empty())],
                    infos: vec![None, Some(env)],
                    f90: Vec::new(),
                }),
            },
            provided,
            defer: Default::default(),
            job,
        }
    }

    /// The handle tables, for a lookup or an update (never held across communication or a
    /// callback of the program: see the field).
    #[inline]
    pub fn t(&self) -> TablesGuard<'_> {
        let m = self.tables.m.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: `m` is held for the guard's life, so no other guard exists; the unlocked
        // read of `with_comm` happens only in the thread that holds the whole state, below
        // MPI_THREAD_MULTIPLE, and never while that thread holds a guard.
        let t = unsafe { &mut *self.tables.t.get() };
        TablesGuard { _m: m, t }
    }

    /// Runs `f` on communicator `c`'s description (the hot paths: `MPI_Send`, `MPI_Recv`,
    /// an eager `MPI_Isend`, `MPI_Barrier`): below `MPI_THREAD_MULTIPLE` borrowed from the
    /// table without its lock (no atomic, no reference count per message: the call holds
    /// the whole state); otherwise a counted reference taken under the table lock.
    /// `f` must not use the tables.
    #[inline(always)]
    pub fn with_comm<T>(&self, c: i32, f: impl FnOnce(&CommData) -> Result<T>) -> Result<T> {
        // `f` has one call site, so it is inlined (two cost a call frame, ~25 instructions).
        let mut shared = None;
        let d: &CommData = if MULTIPLE.load(Ordering::Relaxed) {
            &shared
                .insert(cache::take(&LAST_COMM, &COMM_GEN, c, || self.comm(c))?)
                .2
        } else {
            // SAFETY: below MPI_THREAD_MULTIPLE every `&CState` is reached through the
            // state's lock (`enter`, `look`, `lock`): this thread holds it, so no other
            // thread reaches the tables; this thread holds no `TablesGuard` here (callers
            // take none around this call) and `f` takes none, so no `&mut` to the tables
            // exists meanwhile.
            let t = unsafe { &*self.tables.t.get() };
            &t.comm_entry(c)?.data
        };
        let r = f(d);
        if let Some(e) = shared {
            cache::keep(&LAST_COMM, e);
        }
        r
    }

    /// Communicator `c`'s error handler.
    pub fn comm_errh(&self, c: i32) -> Result<i32> {
        self.t().comm_entry(c).map(|e| e.errh)
    }
    pub fn comm(&self, c: i32) -> Result<Arc<CommData>> {
        self.t().comm(c)
    }
    pub fn add_comm(&self, data: Arc<CommData>) -> i32 {
        self.t().add_comm(data)
    }
    /// Adds `data` with the error handler of `parent` (a new communicator inherits it,
    /// MPI-3.1 §8.3.1).
    pub fn add_child(&self, parent: i32, data: Arc<CommData>) -> Result<i32> {
        let mut t = self.t();
        let errh = t.comm_entry(parent)?.errh;
        let hd = t.add_comm(data);
        if let Some(Some(e)) = t.comms.get_mut(hd as usize) {
            e.errh = errh;
        }
        Ok(hd)
    }
    pub fn dtype_any(&self, t: i32) -> Result<Datatype> {
        self.t().dtype_any(t)
    }
    pub fn dtype(&self, t: i32) -> Result<Datatype> {
        self.t().dtype(t)
    }
    pub fn add_type(&self, d: Datatype) -> i32 {
        self.t().add_type(d)
    }
    pub fn group(&self, g: i32) -> Result<Group> {
        self.t().group(g)
    }
    pub fn add_group(&self, g: Group) -> i32 {
        self.t().add_group(g)
    }
}

impl Tables {
    pub fn comm_entry(&self, c: i32) -> Result<&CommEntry> {
        usize::try_from(c)
            .ok()
            .and_then(|i| self.comms.get(i))
            .and_then(|e| e.as_ref())
            .ok_or_else(|| Error::Comm(format!("communicator handle {c} is not valid")))
    }
    pub fn comm(&self, c: i32) -> Result<Arc<CommData>> {
        self.comm_entry(c).map(|e| e.data.clone())
    }
    /// Frees communicator handle `c` (its number may be handed out again).
    pub fn remove_comm(&mut self, c: i32) {
        if let Some(e) = usize::try_from(c).ok().and_then(|i| self.comms.get_mut(i)) {
            *e = None;
        }
        COMM_GEN.bump();
    }
    pub fn add_comm(&mut self, data: Arc<CommData>) -> i32 {
        let errh = self.comms[h::COMM_WORLD as usize]
            .as_ref()
            .map_or(h::ERRORS_ARE_FATAL, |e| e.errh);
        alloc(
            &mut self.comms,
            3,
            CommEntry {
                data,
                errh,
                name: String::new(),
            },
        )
    }

    /// A datatype handle (committed or not).
    pub fn dtype_any(&self, t: i32) -> Result<Datatype> {
        usize::try_from(t)
            .ok()
            .and_then(|i| self.types.get(i))
            .and_then(|e| e.clone())
            .ok_or_else(|| Error::Type(format!("datatype handle {t} is not valid")))
    }
    /// A datatype for communication: must be committed.
    pub fn dtype(&self, t: i32) -> Result<Datatype> {
        let d = self.dtype_any(t)?;
        if !d.is_committed() {
            return Err(Error::Type(format!(
                "datatype {t} is not committed (MPI_Type_commit)"
            )));
        }
        Ok(d)
    }
    pub fn add_type(&mut self, d: Datatype) -> i32 {
        alloc(&mut self.types, h::FIRST_USER_TYPE, d)
    }

    pub fn group(&self, g: i32) -> Result<Group> {
        usize::try_from(g)
            .ok()
            .and_then(|i| self.groups.get(i))
            .and_then(|e| e.clone())
            .ok_or_else(|| Error::Group(format!("group handle {g} is not valid")))
    }
    /// A handle for new group `g`: `MPI_GROUP_EMPTY` itself when it has no member (what
    /// programs compare against, e.g. after excluding every rank).
    pub fn add_group(&mut self, g: Group) -> i32 {
        if g.size() == 0 {
            return h::GROUP_EMPTY;
        }
        alloc(&mut self.groups, 2, g)
    }
}

/// Decides how `e` from call `name` is raised on the error handler of communicator
/// `comm` (world's if the handle is bad or the error is not tied to one); carry it out with
/// [`Raised::now`] once the state lock is released (a user handler may call MPI).
pub fn raise_later(st: Option<&CState>, comm: i32, name: &str, e: &Error) -> Raised {
    let (errh, handle) = match st {
        Some(s) => match s.comm_errh(comm) {
            Ok(e) => (e, comm),
            Err(_) => (
                s.comm_errh(h::COMM_WORLD).unwrap_or(h::ERRORS_ARE_FATAL),
                h::COMM_WORLD,
            ),
        },
        None => (WORLD_ERRH.load(Ordering::Relaxed), h::COMM_WORLD),
    };
    Raised::decide(errh, Kind::Comm, handle, name, e)
}

/// Raises `e` on `comm`'s handler, taking the state lock only to decide.
pub fn raise_now(comm: i32, name: &str, e: &Error) -> c_int {
    let g = look();
    let r = raise_later(g.as_ref().and_then(Guard::as_ref), comm, name, e);
    drop(g);
    r.now()
}

/// [`raise_later`] carried out at once: for callers that hold no lock.
pub fn raise(st: Option<&CState>, comm: i32, name: &str, e: &Error) -> c_int {
    raise_later(st, comm, name, e).now()
}

fn not_running(name: &str) -> Error {
    let when = if PHASE.load(Ordering::Acquire) == 2 {
        "after MPI_Finalize"
    } else {
        "before MPI_Init"
    };
    Error::Other(format!("{name} called {when}"))
}

/// Runs MPI call `name` on the initialized state; errors are raised on `comm`'s handler;
/// a panic (a bug) becomes `MPI_ERR_INTERN`, never unwinding into C. A call entered while
/// another thread is inside one fails at once (see [`concurrent_entry`]).
#[inline]
pub fn call(name: &'static str, comm: i32, f: impl FnOnce(&CState) -> Result<()>) -> c_int {
    call_hot(name, comm, |st| {
        match catch_unwind(AssertUnwindSafe(|| f(st))) {
            Ok(r) => r,
            Err(_) => Err(Error::Intern(format!("{name}: internal panic (a bug)"))),
        }
    })
}

/// As [`call`] for the per-message point-to-point calls (`MPI_Send`, `MPI_Recv`, the
/// nonblocking sends, `MPI_Irecv`, `MPI_Wait`, `MPI_Test`, `MPI_Waitall`, `MPI_Testall`),
/// without catching a panic: `catch_unwind` calls the body through a function pointer,
/// ≈ 25 instructions per call (callgrind, `mpi_loop wself`: 1435 → 1389 per message pair).
/// A panic there is a bug all the same: the message names the call, then the process ends
/// (Rust aborts a panic that reaches an `extern "C"` function) and the launcher ends the
/// job, instead of `MPI_ERR_INTERN` being returned.
#[inline]
pub fn call_hot(name: &'static str, comm: i32, f: impl FnOnce(&CState) -> Result<()>) -> c_int {
    entry::<true>(name, comm, f)
}

/// As [`call_hot`] for `MPI_Irecv` and `MPI_Waitall`, which leave the deferred receives
/// (`defer`) to their body: it defers one more, or drains them, or posts them first.
#[inline]
pub fn call_deferring(
    name: &'static str,
    comm: i32,
    f: impl FnOnce(&CState) -> Result<()>,
) -> c_int {
    entry::<false>(name, comm, f)
}

/// [`call_hot`]; `POST`: the deferred receives are posted before the body runs.
#[inline(always)]
fn entry<const POST: bool>(
    name: &'static str,
    comm: i32,
    f: impl FnOnce(&CState) -> Result<()>,
) -> c_int {
    let Some(g) = enter() else {
        return concurrent_entry(name);
    };
    let r = match g.as_ref() {
        None => Err(not_running(name)),
        Some(st) => {
            let note = PanicNote(name);
            let r = if POST && st.defer.pending() {
                st.defer.flush(&st.mpi).and_then(|()| f(st))
            } else {
                f(st)
            };
            std::mem::forget(note);
            r
        }
    };
    match r {
        Ok(()) => class::SUCCESS,
        Err(e) => {
            let r = raise_later(g.as_ref(), comm, name, &e);
            drop(g);
            r.now()
        }
    }
}

/// Dropped only while a panic unwinds out of a [`call_hot`] body (forgotten otherwise).
struct PanicNote(&'static str);

impl Drop for PanicNote {
    #[cold]
    fn drop(&mut self) {
        crate::errors::say(&format!(
            "{}: internal panic (a bug): the process ends",
            self.0
        ));
    }
}

/// As [`call`] for calls that need no state (pure functions of their arguments) but must
/// still report errors through the world's handler.
pub fn call_pure(name: &str, f: impl FnOnce() -> Result<()>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => class::SUCCESS,
        Ok(Err(e)) => raise_now(h::COMM_WORLD, name, &e),
        Err(_) => {
            let e = Error::Intern(format!("{name}: internal panic (a bug)"));
            raise_now(h::COMM_WORLD, name, &e)
        }
    }
}
