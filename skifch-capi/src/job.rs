//! Process-wide state of the C ABI (spec: "The rest of the C ABI": Init, Finalize, Rank,
//! Size, Open).
//!
//! `SkifCh_Init` is reference-counted so that an application and the libraries it uses
//! (MPI, SHMEM, … each on its own channel) may all call Init/Finalize; the last Finalize
//! leaves the job. A process joins its job once: Init after that last Finalize fails.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use skifch::{Error, Result};
use skifch_drivers::DefaultJob;

use crate::handle::{self, SkifCh, Slot};

struct State {
    job: Option<DefaultJob>,
    /// Successful Init calls not yet matched by a Finalize.
    inits: u32,
    /// The last Finalize ran: the rank is finalized in the job segment for good.
    finalized: bool,
    /// Per port, the handle C got when it was last opened (reused: see `handle`).
    slots: Vec<Option<Slot>>,
}

static STATE: Mutex<State> = Mutex::new(State {
    job: None,
    inits: 0,
    finalized: false,
    slots: Vec::new(),
});
/// Rank and size while joined, else -1 (read without the lock by Rank/Size).
static RANK: AtomicI32 = AtomicI32::new(-1);
static SIZE: AtomicI32 = AtomicI32::new(-1);
/// Channels opened and not closed; Finalize refuses to leave while any is open, because
/// the user still holds pointers into them.
static OPEN: AtomicUsize = AtomicUsize::new(0);

fn state() -> MutexGuard<'static, State> {
    // A panic while holding the lock cannot leave `State` half-updated (each update is a
    // single assignment after the fallible work), so a poisoned lock is still usable.
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

fn not_initialized(what: &str) -> Error {
    Error::InvalidArgument(format!("{what} before SkifCh_Init (or after SkifCh_Finalize)").into())
}

/// `SkifCh_Init`: joins the job on the first call, counts later ones.
pub fn init() -> Result<()> {
    let mut st = state();
    if st.finalized {
        return Err(Error::InvalidArgument(
            "SkifCh_Init after the last SkifCh_Finalize: a process joins its job only once".into(),
        ));
    }
    if st.inits > 0 {
        st.inits += 1;
        return Ok(());
    }
    let job = skifch_drivers::init()?;
    let (rank, size) = (job.rank(), job.size());
    // Ranks are at most `skifch_drivers::shm::MAX_RANKS` (1024), so both fit an `int`.
    RANK.store(rank as i32, Ordering::Release);
    SIZE.store(size as i32, Ordering::Release);
    st.job = Some(job);
    st.inits = 1;
    Ok(())
}

/// `SkifCh_Finalize`: the call matching the first Init leaves the job (peers sending here
/// then get `EHOSTUNREACH`); it fails while channels are still open.
pub fn finalize() -> Result<()> {
    let mut st = state();
    match st.inits {
        0 => Err(not_initialized("SkifCh_Finalize")),
        1 => {
            let open = OPEN.load(Ordering::Acquire);
            if open > 0 {
                return Err(Error::InvalidArgument(format!(
                    "SkifCh_Finalize with {open} channel(s) still open: close them with SkifCh_Close first"
                ).into()));
            }
            RANK.store(-1, Ordering::Release);
            SIZE.store(-1, Ordering::Release);
            st.inits = 0;
            st.finalized = true;
            // Dropping the last handle on the driver marks this rank finalized.
            drop(st.job.take());
            Ok(())
        }
        _ => {
            st.inits -= 1;
            Ok(())
        }
    }
}

/// `SkifCh_Rank`.
pub fn rank() -> Result<i32> {
    match RANK.load(Ordering::Acquire) {
        -1 => Err(not_initialized("SkifCh_Rank")),
        r => Ok(r),
    }
}

/// `SkifCh_Size`.
pub fn size() -> Result<i32> {
    match SIZE.load(Ordering::Acquire) {
        -1 => Err(not_initialized("SkifCh_Size")),
        s => Ok(s),
    }
}

/// `SkifCh_Open`: this rank's channel on `port`.
pub fn open(port: i32) -> Result<*mut SkifCh> {
    let mut st = state();
    let job = st
        .job
        .as_ref()
        .ok_or_else(|| not_initialized("SkifCh_Open"))?;
    let port = u32::try_from(port).map_err(|_| {
        Error::InvalidArgument(
            format!("port {port} is negative; ports are 0..{}", job.ports()).into(),
        )
    })?;
    let ch = job.open(port)?;
    // Counted under the lock, so a concurrent Finalize sees it.
    OPEN.fetch_add(1, Ordering::AcqRel);
    let i = port as usize; // < job.ports() <= 64: the open succeeded
    if st.slots.len() <= i {
        st.slots.resize_with(i + 1, || None);
    }
    Ok(handle::install(&mut st.slots[i], ch))
}

/// Called once by every [`SkifCh`] when it is closed.
pub(crate) fn channel_closed() {
    OPEN.fetch_sub(1, Ordering::AcqRel);
}
