//! The asynchronous progress thread (`SKIFMPI_ASYNC_PROGRESS=1`): started by `MPI_Init`,
//! stopped first thing in `MPI_Finalize`. It runs [`mpi_lite::win::serve_until`] (polls
//! while messages come, sleeps up to 1 ms when idle or while a program thread is inside
//! the library), so passive-target operations on the message path complete while the
//! target computes without MPI calls. It needs the state shared between threads, so the library then runs
//! with `MPI_THREAD_MULTIPLE`'s locking whatever level the program asked for (the level
//! reported stays the one asked), and `SKIFMPI_BIND` defaults to `none` (the thread must
//! not be tied to the computing thread's CPU).

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

/// Starts the thread (after `MPI_Init` made the state shared).
pub fn start() -> Result<()> {
    STOP.store(false, Ordering::Release);
    let t = std::thread::Builder::new()
        .name("skifmpi-progress".into())
        .spawn(|| {
            // An error (a lost peer breaks the engine) ends the thread; the program's own
            // calls report it.
            let _ = state::with_state("the progress thread", |st| {
                mpi_lite::win::serve_until(&st.mpi, &STOP)
            });
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
