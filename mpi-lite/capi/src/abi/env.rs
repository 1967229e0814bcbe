//! Environment (MPI-3.1 chapter 8 and §12.4): Init/Finalize, clocks, names, versions,
//! error classes and handlers.

use std::ffi::{c_char, c_int};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::Instant;

use mpi_lite::error::class;
use mpi_lite::{Error, Mpi};

use super::{mpi_fn, put, put_str};
use crate::state::{self, call, h, lock, raise, CState, PHASE, WORLD_ERRH};

const THREAD_MULTIPLE: c_int = 3;
static EPOCH: OnceLock<Instant> = OnceLock::new();
static MAIN_THREAD: OnceLock<std::thread::ThreadId> = OnceLock::new();

fn init(required: c_int) -> c_int {
    let name = "MPI_Init";
    let mut g = match lock() {
        Ok(g) => g,
        Err(e) => return raise(None, h::COMM_WORLD, name, &e),
    };
    let r = (|| {
        match PHASE.load(Ordering::Acquire) {
            0 => {}
            1 => return Err(Error::Other("MPI_Init called twice".into())),
            _ => return Err(Error::Other("MPI_Init after MPI_Finalize".into())),
        }
        if !(0..=3).contains(&required) {
            return Err(Error::Arg(format!(
                "MPI_Init_thread: required level {required}"
            )));
        }
        let progress = crate::progress::wanted()?;
        let defer = crate::defer::Mode::from_env()?;
        let multiple = required == THREAD_MULTIPLE;
        // A progress thread shares the engine: MPI_THREAD_MULTIPLE's locking there
        // (`progress`); the state keeps the program's level.
        let shared = multiple || progress;
        // A progress thread is not bound (`progress::start` gives it the CPUs the process
        // had), so the program's thread may be.
        let bind_cores = bind_policy(multiple)?;
        let job = skifch_drivers::init()?;
        crate::ending::set_driver(job.driver());
        let unbound = if bind_cores {
            bind(job.driver().placement())
        } else {
            None
        };
        crate::errors::set_rank(job.rank());
        // The locking is chosen here, once: below MPI_THREAD_MULTIPLE the single-threaded
        // paths (one lock per call, waits inside the channel); with it, shared state and
        // waits that hold no lock (`state`, `mpi_lite::engine::Engine`).
        let mpi = if shared {
            Mpi::new_multiple(&job)?
        } else {
            Mpi::new(&job)?
        };
        if !multiple && progress {
            mpi_lite::win::one_program_thread(&mpi);
        }
        EPOCH.get_or_init(Instant::now);
        MAIN_THREAD.get_or_init(|| std::thread::current().id());
        *g = Some(CState::new(job, mpi, required));
        if let Some(st) = g.as_ref() {
            st.defer.set_mode(defer);
        }
        // MPI_THREAD_SINGLE and FUNNELED: only this thread calls (bound, no atomic
        // read-modify-write per call); a progress thread shares the engine only.
        state::set_level(&mut g, multiple, required <= 1, progress)?;
        PHASE.store(1, Ordering::Release);
        if progress {
            crate::progress::start(state::Served::of(&g), move || {
                if let Some(set) = unbound {
                    set_affinity(&set);
                }
            })?;
        }
        Ok(())
    })();
    match r {
        Ok(()) => class::SUCCESS,
        Err(e) => {
            let r = state::raise_later(g.as_ref(), h::COMM_WORLD, name, &e);
            drop(g);
            let code = r.now();
            // Not fatal: the failed job's driver goes with it.
            if PHASE.load(Ordering::Acquire) == 0 {
                crate::ending::forget_driver();
            }
            code
        }
    }
}

/// `SKIFMPI_BIND`: `core` or `none`. Unset: `core`, except under `MPI_THREAD_MULTIPLE`:
/// the program's threads inherit the binding, and threads of one rank sharing one CPU
/// wait for each other's time slices (measured: the osu_latency_mt pattern took
/// milliseconds per round trip on a loaded machine, 40 µs unbound).
fn bind_policy(multiple: bool) -> mpi_lite::Result<bool> {
    match std::env::var("SKIFMPI_BIND") {
        Err(_) => Ok(!multiple),
        Ok(v) => match v.trim() {
            "core" | "" => Ok(true),
            "none" => Ok(false),
            other => Err(Error::Arg(format!(
                "SKIFMPI_BIND={other:?}: expected core or none"
            ))),
        },
    }
}

/// Binds this process to one CPU, as Open MPI's `--bind-to core`: the k-th of the job's
/// ranks on this machine to the k-th CPU it may run on, when the machine's ranks fit those
/// CPUs. "This machine" is this kernel ([`skifch_drivers::place`]): on a cluster the ranks
/// of this node, in job-rank order; nodes that share one kernel (network namespaces,
/// containers) are numbered together, so their first ranks do not all take CPU 0. A
/// waiting rank spins before it sleeps (the channel's wait policy), so two ranks left to
/// share one CPU pay that spin at every hand-over. Otherwise, or if the kernel refuses,
/// the inherited affinity stays. Returns the CPUs the thread could use before, if it
/// bound it.
fn bind(at: skifch_drivers::place::Placement) -> Option<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let n = std::mem::size_of_val(&set);
    // SAFETY: `set` is a valid, writable cpu_set_t of `n` bytes; pid 0 is this thread.
    if unsafe { libc::sched_getaffinity(0, n, &mut set) } != 0 {
        return None;
    }
    let allowed: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c` < CPU_SETSIZE, inside the set.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    if at.count as usize > allowed.len() || at.count < 2 {
        return None;
    }
    // SAFETY: as above, the empty set.
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: an allowed CPU number is < CPU_SETSIZE.
    unsafe { libc::CPU_SET(allowed[at.index as usize], &mut one) };
    // The thread calling MPI_Init, usually the only one yet.
    set_affinity(&one);
    Some(set)
}

/// The calling thread may run on the CPUs of `set` (a failure leaves it as it was).
fn set_affinity(set: &libc::cpu_set_t) {
    // SAFETY: `set` is a valid cpu_set_t of the size given; pid 0 is this thread.
    let _ = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(set), set) };
}

mpi_fn!(MPI_Init, PMPI_Init, (_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    init(0)
});

mpi_fn!(MPI_Init_thread, PMPI_Init_thread, (_argc: *mut c_int, _argv: *mut *mut *mut c_char,
        required: c_int, provided: *mut c_int) -> c_int {
    if provided.is_null() {
        return raise(None, h::COMM_WORLD, "MPI_Init_thread",
            &Error::Arg("MPI_Init_thread: provided is NULL".into()));
    }
    let r = init(required);
    if r == class::SUCCESS {
        // SAFETY: checked non-null; the caller's int.
        unsafe { provided.write(required) };
    }
    r
});

mpi_fn!(MPI_Finalize, PMPI_Finalize, () -> c_int {
    // MPI_COMM_SELF's attributes are deleted first, in the reverse order of setting, while
    // MPI still works (MPI-3.1 §8.7.1: libraries hook their clean-up there).
    if PHASE.load(Ordering::Acquire) == 1 {
        if let Err(e) = crate::attrs::delete_all("MPI_Finalize", crate::attrs::Kind::Comm, h::COMM_SELF) {
            return state::raise_now(h::COMM_WORLD, "MPI_Finalize", &e);
        }
    }
    // The progress thread first: it is inside the state until stopped.
    crate::progress::stop();
    // Under MPI_THREAD_MULTIPLE: no call may be inside the state when it is taken.
    if let Err(e) = state::retire(std::time::Duration::from_secs(10)) {
        return state::raise_now(h::COMM_WORLD, "MPI_Finalize", &e);
    }
    let mut g = match lock() {
        Ok(g) => g,
        Err(e) => return raise(None, h::COMM_WORLD, "MPI_Finalize", &e),
    };
    let Some(st) = g.take() else {
        let e = Error::Other(if PHASE.load(Ordering::Acquire) == 2 {
            "MPI_Finalize called twice".into()
        } else {
            "MPI_Finalize before MPI_Init".into()
        });
        drop(g);
        return raise(None, h::COMM_WORLD, "MPI_Finalize", &e);
    };
    WORLD_ERRH.store(st.t().comm_entry(h::COMM_WORLD).map_or(h::ERRORS_ARE_FATAL, |c| c.errh), Ordering::Relaxed);
    PHASE.store(2, Ordering::Release);
    // Receives still deferred are posted (left pending: the program's error, as ever).
    let posted = st.defer.finish(&st.mpi);
    let CState { mpi, job, .. } = st;
    let r = posted.and(mpi.finalize());
    crate::ending::forget_driver();
    drop(job);
    drop(g);
    match r {
        Ok(()) => class::SUCCESS,
        Err(e) => raise(None, h::COMM_WORLD, "MPI_Finalize", &e),
    }
});

mpi_fn!(MPI_Initialized, PMPI_Initialized, (flag: *mut c_int) -> c_int {
    let v = (PHASE.load(Ordering::Acquire) >= 1) as c_int;
    // SAFETY: the caller's int.
    state::call_pure("MPI_Initialized", || unsafe { put(flag, v, "flag") })
});

mpi_fn!(MPI_Finalized, PMPI_Finalized, (flag: *mut c_int) -> c_int {
    let v = (PHASE.load(Ordering::Acquire) == 2) as c_int;
    // SAFETY: the caller's int.
    state::call_pure("MPI_Finalized", || unsafe { put(flag, v, "flag") })
});

mpi_fn!(MPI_Abort, PMPI_Abort, (_comm: c_int, errorcode: c_int) -> c_int {
    crate::ending::abort(errorcode)
});

mpi_fn!(MPI_Query_thread, PMPI_Query_thread, (provided: *mut c_int) -> c_int {
    // SAFETY: the caller's int.
    call("MPI_Query_thread", h::COMM_WORLD, |st| unsafe { put(provided, st.provided, "provided") })
});

mpi_fn!(MPI_Is_thread_main, PMPI_Is_thread_main, (flag: *mut c_int) -> c_int {
    call("MPI_Is_thread_main", h::COMM_WORLD, |_| {
        let v = MAIN_THREAD.get() == Some(&std::thread::current().id());
        // SAFETY: the caller's int.
        unsafe { put(flag, v as c_int, "flag") }
    })
});

mpi_fn!(MPI_Wtime, PMPI_Wtime, () -> f64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_secs_f64()
});

mpi_fn!(MPI_Wtick, PMPI_Wtick, () -> f64 {
    1e-9
});

/// This host's name (`localhost` if the system will not say): the processor name,
/// `MPI_INFO_ENV`'s `host`, the key of `MPI_COMM_TYPE_SHARED` when the driver has no node
/// map.
pub(crate) fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is writable for its length; gethostname NUL-terminates within it or
    // truncates (the last byte stays 0).
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    if rc != 0 {
        return "localhost".into();
    }
    let n = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

mpi_fn!(MPI_Get_processor_name, PMPI_Get_processor_name, (name: *mut c_char, resultlen: *mut c_int) -> c_int {
    state::call_pure("MPI_Get_processor_name", || {
        let host = host_name();
        // SAFETY: MPI_MAX_PROCESSOR_NAME (128) bytes at `name`, `resultlen` an int.
        unsafe { put_str(name, resultlen, &host, 128) }
    })
});

mpi_fn!(MPI_Get_version, PMPI_Get_version, (version: *mut c_int, subversion: *mut c_int) -> c_int {
    state::call_pure("MPI_Get_version", || {
        // SAFETY: the caller's ints.
        unsafe {
            put(version, 3, "version")?;
            put(subversion, 1, "subversion")
        }
    })
});

mpi_fn!(MPI_Get_library_version, PMPI_Get_library_version, (version: *mut c_char, resultlen: *mut c_int) -> c_int {
    let s = format!("mpi-lite {} (MPI 3.1 on SkifCh channels)", env!("CARGO_PKG_VERSION"));
    // SAFETY: MPI_MAX_LIBRARY_VERSION_STRING bytes at `version`.
    state::call_pure("MPI_Get_library_version", || unsafe { put_str(version, resultlen, &s, 8192) })
});
