//! How a rank ends the job: `MPI_Abort` and the fatal errors of `MPI_ERRORS_ARE_FATAL`.
//!
//! `MPI_Abort(comm, code)` ends every rank of the job with `code` (MPI-3.1 §8.7: "make a
//! best attempt to abort all tasks"; the code is returned to the invoking environment).
//! The request goes to the job's driver ([`skifch_drivers::AnyDriver::request_exit`]:
//! the control block on shm, which the launcher reads for the job's status; an EXIT
//! message to the fabric's peers on other hosts, [`skifch_drivers::AnyDriver::leave`]).
//! A rank that then fails on finding the aborting rank gone ends with the requested code
//! too, quietly: that is the job ending, not an error of its own. Under `mpirun`, which
//! reports the first non-zero status of a rank, a survivor's own error code could
//! otherwise win over `code`.
//!
//! The driver is reached without the state lock: `MPI_Abort` may be called while another
//! thread is inside a call, and fatal errors are carried out with the lock released.

use std::sync::{Arc, Mutex};

use skifch_drivers::AnyDriver;

/// The job's driver from `MPI_Init` to `MPI_Finalize`.
static DRIVER: Mutex<Option<Arc<AnyDriver>>> = Mutex::new(None);

/// The job's driver (also for its node map: `MPI_COMM_TYPE_SHARED`).
pub(crate) fn driver() -> Option<Arc<AnyDriver>> {
    DRIVER.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Keeps the job's driver for [`abort`] and [`fatal`] (`MPI_Init`).
pub fn set_driver(d: &Arc<AnyDriver>) {
    *DRIVER.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::clone(d));
}

/// Lets the driver go (`MPI_Finalize`, a failed `MPI_Init`): dropped with the job.
pub fn forget_driver() {
    DRIVER.lock().unwrap_or_else(|p| p.into_inner()).take();
}

/// `MPI_Abort(comm, code)`: the whole job ends with `code` (its low 8 bits; 0 is 1: an
/// aborted job does not report success), whatever `comm` is: MPI-3.1 §8.7 lets an
/// implementation abort every process. Prints one line naming the rank.
pub fn abort(errorcode: i32) -> ! {
    crate::errors::say(&format!("MPI_Abort({errorcode}) called: aborting the job"));
    let code = if errorcode & 0xff == 0 {
        1
    } else {
        errorcode & 0xff
    };
    let code = driver().map_or(code, |d| d.request_exit(code));
    leave(code)
}

/// Ends the process for an error under `MPI_ERRORS_ARE_FATAL`: prints `msg` and exits with
/// `status`; after another rank's `MPI_Abort(code)`, exits with `code` quietly instead
/// (this rank's error is, most likely, finding that rank gone).
pub fn fatal(msg: &str, status: i32) -> ! {
    if let Some(code) = driver().and_then(|d| d.exit_request()) {
        leave(code)
    }
    crate::errors::say(msg);
    std::process::exit(status)
}

/// Ends the process with `code` at once, this rank's part in the job ended first
/// ([`skifch_drivers::end_process`]).
fn leave(code: i32) -> ! {
    skifch_drivers::end_process(driver().as_deref(), code)
}
