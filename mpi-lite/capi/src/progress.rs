//! The asynchronous progress thread (`SKIFMPI_ASYNC_PROGRESS=1`): started by `MPI_Init`,
//! stopped first thing in `MPI_Finalize`. It runs [`mpi_lite::win::serve_until`] (polls
//! while messages come, sleeps on the channel's waiter when idle, naps 1 ms while a program
//! thread is inside the library: [`crate::active::others_inside`]), so passive-target operations on the message path complete while the
//! target computes without MPI calls. It shares the engine, not the C state: the engine
//! then runs with `MPI_THREAD_MULTIPLE`'s locking (its waits release its lock), the state
//! with the program's level (below `MPI_THREAD_MULTIPLE`, the one-sided short cuts of the
//! bound thread stay). `SKIFMPI_BIND` keeps its default (`core` below
//! `MPI_THREAD_MULTIPLE`): the program's thread is bound, the progress thread may run on
//! any CPU the process had (left unbound, two ranks' waits took turns on one CPU: a
//! message-path round trip cost the wait's whole 20 µs spin).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::thread::JoinHandle;

use mpi_lite::{Error, Result};

use crate::state;

static STOP: AtomicBool = AtomicBool::new(false);
static THREAD: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);

/// `SKIFMPI_ASYNC_PROGRESS`: `1` on, `0` or unset off, anything else an error.
pub fn wanted() -> Result<bool> {
    match std::env::var("SKIFMPI_ASYNC_PROGRESS") {
        Err(_) => Ok(false),
        Ok(v) => match v.trim() {
            "1" => Ok(true),
            "0" | "" => Ok(false),
            other => Err(Error::Arg(format!(
                "SKIFMPI_ASYNC_PROGRESS={other:?}: expected 1 or 0"
            ))),
        },
    }
}

/// Starts the thread serving `served` (`MPI_Init`, the state in place); it runs `first`
/// first (its CPU affinity).
pub fn start(served: Option<state::Served>, first: impl FnOnce() + Send + 'static) -> Result<()> {
    let Some(served) = served else {
        return Err(Error::Intern("the progress thread: no state".into()));
    };
    STOP.store(false, Ordering::Release);
    let t = std::thread::Builder::new()
        .name("skifmpi-progress".into())
        .spawn(move || {
            first();
            // SAFETY: `MPI_Finalize` stops and joins this thread (`stop`) before it takes
            // the state, and with it the `Mpi`, away.
            let mpi = unsafe { served.get() };
            // An error (a lost peer breaks the engine) ends the thread; the program's own
            // calls report it.
            let _ = mpi_lite::win::serve_until(mpi, &STOP, state::program_inside);
        })
        .map_err(|e| Error::Other(format!("MPI_Init: the progress thread: {e}")))?;
    *THREAD.lock().unwrap_or_else(|p| p.into_inner()) = Some(t);
    Ok(())
}

/// Stops the thread and waits for it (`MPI_Finalize`, before the state is retired).
pub fn stop() {
    let t = THREAD.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(t) = t {
        STOP.store(true, Ordering::Release);
        let _ = t.join(); // it catches nothing that could panic across: a panic is a bug
    }
}
