//! One-sided communication (MPI-3.1 chapter 11): windows, their operations and their
//! synchronisation.
//!
//! ## Paths
//! * **Direct** (drivers whose RMA capability maps peers' memory: shm, the in-process
//!   job). At creation every member exposes a segment through [`skifch::rma::expose_among`]:
//!   a control page (the passive-target lock word and the accumulate lock of that rank)
//!   followed, for `MPI_Win_allocate`, by the window's memory, so a put or get is a bounds
//!   check and a copy into the mapped segment, and accumulates on 4- and 8-byte elements
//!   are CPU atomics (a compare-and-swap loop per element: atomic against every other
//!   accumulate, `Fetch_and_op` and `Compare_and_swap` on the same element). A window over
//!   the program's own memory (`MPI_Win_create`) cannot be mapped by a peer after the
//!   fact: its bytes are reached by the kernel's cross-memory copies
//!   (`process_vm_readv`/`writev`), and its accumulates run under the target's
//!   accumulate lock. Every operation is complete, locally and at the target, when it
//!   returns, so flushes only order (on x86-64 the barrier moves to the next load:
//!   `direct.rs`) and a fence is a barrier.
//! * **Messages** (drivers without mapped memory, e.g. the FPGA model; forced on any driver
//!   by `SKIFMPI_RMA=messages`; always for dynamic windows, whose target validates every
//!   address): every operation is an active message on mpi-lite's own
//!   endpoint served by the target process's handlers (`msg.rs` the origin side,
//!   `served.rs` the target side and the wire). Passive-target operations complete when
//!   the target progresses (any MPI call of it).
//! * **Messages with transfers** (a job of several hosts whose driver reaches the other
//!   hosts' memory by transfers, `MPI_Win_allocate`; `xfer.rs`): puts and gets go straight
//!   to the target's memory — by the fabric's RMA across hosts, by copies within the node —
//!   while synchronisation and accumulates stay messages. By default only over a NIC that
//!   applies transfers itself; `SKIFMPI_RMA=transfers` asks for it over any provider.
//!
//! ## Memory model
//! `MPI_WIN_UNIFIED` on both paths: the public and private copies are the same memory.
//!
//! ## Synchronisation
//! [`Win`] records the epochs this process has open (fence, per-target locks, lock_all)
//! and refuses an operation outside one with `MPI_ERR_RMA_SYNC`. The passive-target lock
//! of a rank is a reader/writer lock word in its control page: shared requests are granted
//! while no writer holds or waits, a writer announces itself (new readers then wait) and
//! takes the lock when the readers are gone (seed 003's reader preference, FIFO once a
//! writer waits). One exception on the message path, where a lock is sent with the first
//! operation that waits: the shared locks of an `MPI_Win_lock_all` epoch are held, in
//! MPI's terms, from the call on, so a writer that asked meanwhile does not hold them back
//! (`served::LOCK_ALL`; with the plain queue, lock_all holders could wait for each other
//! through queued writers: a deadlock). Waiting for a lock keeps the engine progressing.
//!
//! Files: this one (windows, creation, attributes, epochs), `ops.rs` (put, get and the
//! accumulate family), `sync.rs` (fence, locks, flushes), `mem.rs` (the raw tier),
//! `msg.rs` and `served.rs` (the message path), `xfer.rs` (its transfers), `pscw.rs`
//! (post/start/complete/wait).

mod direct;
mod mem;
mod msg;
mod ops;
mod pscw;
mod served;
mod sync;
mod types;
mod xfer;

use std::sync::atomic::AtomicU8;
use std::sync::Arc;

use crate::engine::lock::FlagLock;

use skifch::rma::{self, MappedWindow, Rma};
use skifch::Port;

use crate::comm::{CommData, Mpi};
use crate::error::{class, Error, Result};
use mem::{Ctl, Owned, Reach, CTL_BYTES};
pub(crate) use served::register;
pub use served::Served;

pub use direct::one_program_thread;
pub(crate) use direct::stores_init;
pub use direct::RmwOp;
pub use ops::{AccOp, Target};
pub use sync::LockType;
pub use types::type_freed;

/// How a window's memory was made (`MPI_WIN_CREATE_FLAVOR`; numbers of `mpi.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// `MPI_Win_create`: the program's memory.
    Create = 1,
    /// `MPI_Win_allocate`: the library's memory.
    Allocate = 2,
    /// `MPI_Win_create_dynamic`.
    Dynamic = 3,
    /// `MPI_Win_allocate_shared`.
    Shared = 4,
}

/// `MPI_WIN_UNIFIED` (`mpi.h`).
pub const MODEL_UNIFIED: i32 = 2;

/// One member of a window as this process reaches it.
struct Member {
    reach: Reach,
    disp_unit: usize,
    /// The epochs open to this member, its own and the window-wide ones
    /// ([`direct::ACCESS`], [`direct::PASSIVE`]), mirrored from [`Epoch`] for the
    /// operations' checks without the epoch's lock.
    open: AtomicU8,
    /// The direct path's view of the member's memory ([`direct`]).
    direct: mem::Direct,
}

/// The epochs this process has open on a window (MPI-3.1 §11.5).
#[derive(Default)]
struct Epoch {
    /// Inside a fence epoch (a fence without `MPI_MODE_NOSUCCEED` was called).
    fence: bool,
    /// Passive-target locks held, per member.
    locks: Vec<Option<LockType>>,
    /// `MPI_Win_lock_all` is in force.
    lock_all: bool,
    /// Members of the access epoch `MPI_Win_start` opened (`None`: none open).
    started: Option<Vec<usize>>,
    /// Members of the exposure epoch `MPI_Win_post` opened (`None`: none open).
    posted: Option<Vec<usize>>,
    /// Locks taken with `MPI_MODE_NOCHECK` (nothing to release), per member.
    nocheck: Vec<bool>,
    /// `MPI_Win_lock_all` was called with `MPI_MODE_NOCHECK`.
    nocheck_all: bool,
    /// Message path, per member: a lock not yet requested and the operations issued under
    /// it so far (encoded as `H_BATCH` sub-operations; `msg.rs`).
    deferred: Vec<Option<Vec<u8>>>,
    /// Per member: how many operations kept under its deferred lock use a described
    /// target type (`types.rs`: a freed type's forget waits for them).
    typed: Vec<usize>,
}

/// A window: every member's memory, reachable by one-sided operations.
pub struct Win {
    /// A private duplicate of the creating communicator (fences and frees synchronise on
    /// it, never on the program's traffic).
    comm: Arc<CommData>,
    flavor: Flavor,
    members: Vec<Member>,
    ctls: Vec<Ctl>,
    /// Accumulates on 4-/8-byte elements are CPU atomics (every member's memory mapped).
    atomics: bool,
    /// The message path (module docs).
    msg: bool,
    /// On the message path, puts and gets by transfers (`xfer.rs`).
    transfers: bool,
    /// Transfers were issued since the last [`Win::xfer_quiet`].
    unquiet: std::sync::atomic::AtomicBool,
    /// The window's id on the wire (its communicator's context).
    id: u32,
    /// Fences called (the message path waits for as many notices from every member).
    fences: std::sync::atomic::AtomicU64,
    /// Messages this process sent for the window's operations and synchronisation (the
    /// message path; `MPI_Win_get_info` key `mpi_lite_rma_messages`).
    sent: std::sync::atomic::AtomicU64,
    /// Message path, per member: one-way data messages sent, and how many of them a
    /// request's reply has covered (a flush with none uncovered sends nothing; `msg.rs`).
    oneway: Vec<[std::sync::atomic::AtomicU64; 2]>,
    /// Memory of `MPI_Win_allocate` on the message path.
    _own: Option<Owned>,
    base: usize,
    size: usize,
    disp_unit: usize,
    /// The epochs, behind the engine's flag lock (one locked instruction to take it, a
    /// plain store to give it back: `std`'s mutex takes two, and the lock epoch's short
    /// cut takes it twice).
    epoch: FlagLock<Epoch>,
    /// The epochs open to every member (fence, lock_all; [`direct`]'s bits), mirrored
    /// from `epoch` as [`Member::open`] is.
    open: AtomicU8,
    /// The rank's mark of plain stores no barrier has followed yet ([`direct`]; the
    /// `Mpi`'s, shared by its windows).
    stores: Arc<AtomicU8>,
    /// Keeps every member's segment mapped.
    _map: MappedWindow,
}

fn sync_err(msg: String) -> Error {
    Error::Code {
        code: class::RMA_SYNC,
        msg: format!("MPI_ERR_RMA_SYNC: {msg}"),
    }
}

/// The all-gather of byte strings among `c`'s members, for the creation exchanges.
fn allgather_bytes<P: Port>(mpi: &Mpi<P>, c: &CommData, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
    mpi.run(c, |t| skifch::coll::allgather_bytes(t, mine))
}

impl Win {
    /// `MPI_Win_create` (`base`/`size` the program's memory, `None` base for size 0) and
    /// `MPI_Win_allocate` (`base == None`, `flavor == Allocate`: the window's memory is the
    /// library's, see [`Win::base`]).
    ///
    /// # Collective Operation
    /// Every member of `c` calls it (each with its own size and displacement unit); it
    /// returns once every member's memory is reachable from this process and every member
    /// has created the window (a barrier ends it), so an operation may follow at once.
    #[allow(clippy::too_many_arguments)]
    pub fn create<P: Port>(
        mpi: &Mpi<P>,
        c: &CommData,
        rma: Option<Arc<dyn Rma>>,
        flavor: Flavor,
        base: usize,
        size: usize,
        disp_unit: usize,
        call: &str,
    ) -> Result<Win> {
        if c.inter.is_some() {
            return Err(Error::Comm(format!("{call} on an intercommunicator")));
        }
        if disp_unit == 0 {
            return Err(Error::Arg(format!(
                "{call}: disp_unit 0 (must be positive)"
            )));
        }
        // Puts and gets by transfers on the message path (`xfer.rs`).
        let xfer = rma.clone().filter(|r| xfer::wanted(r.caps(), flavor));
        let mapped = rma.filter(|r| r.caps().load_store);
        if flavor == Flavor::Shared && mapped.is_none() {
            return Err(Error::Code {
                code: class::RMA_SHARED,
                msg: format!(
                    "MPI_ERR_RMA_SHARED: {call}: this driver cannot map one process's memory into another"
                ),
            });
        }
        // A dynamic window is served by its target, which validates every address.
        let rma = mapped.filter(|_| {
            flavor == Flavor::Shared || (flavor != Flavor::Dynamic && !force_messages())
        });
        let comm = mpi.dup(c)?;
        // MPI_Win_allocate_shared: one block on the first member, each member's part
        // right after the previous one's (contiguous, as MPI-3.1 §11.2.3 asks by default).
        let mut shared_at = Vec::new();
        let mut total = 0usize;
        if flavor == Flavor::Shared {
            for d in allgather_bytes(mpi, &comm, &(size as u64).to_le_bytes())? {
                shared_at.push(total);
                total = total
                    .checked_add(skifch::coll::le_word(&d, 0) as usize)
                    .ok_or_else(|| Error::NoMem(format!("{call}: the sizes overflow")))?;
            }
        }
        let (map, base, own) = match rma.as_ref().or(xfer.as_ref()) {
            Some(rma) => {
                let seg_len = match flavor {
                    // The window's memory alone (its locks are the target's, by messages).
                    _ if xfer.is_some() => size.max(1),
                    Flavor::Allocate => CTL_BYTES
                        .checked_add(size)
                        .ok_or_else(|| Error::NoMem(format!("{call}: {size} bytes")))?,
                    Flavor::Shared if comm.rank == 0 => CTL_BYTES
                        .checked_add(total)
                        .ok_or_else(|| Error::NoMem(format!("{call}: {total} bytes")))?,
                    _ => CTL_BYTES,
                };
                let seg = rma.alloc(seg_len).map_err(|e| {
                    Error::NoMem(format!("{call}: {size} bytes of window memory: {e}"))
                })?;
                let base = match flavor {
                    _ if xfer.is_some() => seg.as_ptr() as usize,
                    Flavor::Allocate => seg.as_ptr() as usize + CTL_BYTES,
                    _ => base,
                };
                let mut first: Option<Error> = None;
                let map = rma::expose_among(rma.as_ref(), seg, comm.group.ranks(), &mut |b| {
                    allgather_bytes(mpi, &comm, b).map_err(|e| {
                        let s = skifch::Error::InvalidArgument(e.to_string().into());
                        first.get_or_insert(e);
                        s
                    })
                });
                match map {
                    Ok(m) => (m, base, None),
                    Err(e) => return Err(first.unwrap_or(Error::Transport(e))),
                }
            }
            None => {
                let (base, own) = match flavor {
                    Flavor::Allocate => {
                        let o = Owned::new(size)?;
                        (o.ptr() as usize, Some(o))
                    }
                    _ => (base, None),
                };
                (MappedWindow::empty(comm.rank as u32), base, own)
            }
        };
        let msg = rma.is_none();
        let transfers = msg && xfer.is_some();
        let mut desc = Vec::with_capacity(32);
        for v in [
            base as u64,
            size as u64,
            disp_unit as u64,
            std::process::id() as u64,
        ] {
            desc.extend_from_slice(&v.to_le_bytes());
        }
        let all = allgather_bytes(mpi, &comm, &desc)?;
        let me = comm.rank;
        let atomics = matches!(flavor, Flavor::Allocate | Flavor::Shared) && !msg;
        let mut members = Vec::with_capacity(all.len());
        let mut ctls = Vec::with_capacity(all.len());
        for (i, d) in all.iter().enumerate() {
            if !msg {
                let ctl = map.reach(i as u32, 0, CTL_BYTES).ok_or_else(|| {
                    Error::Intern(format!("{call}: member {i}'s control page is not mapped"))
                })?;
                ctls.push(Ctl(ctl));
            }
            let (b, len, unit, pid) = (
                skifch::coll::le_word(d, 0) as usize,
                skifch::coll::le_word(d, 1) as usize,
                skifch::coll::le_word(d, 2),
                skifch::coll::le_word(d, 3),
            );
            let reach = match flavor {
                Flavor::Dynamic => Reach::Elsewhere { len: usize::MAX },
                _ if msg && i != me => Reach::Elsewhere { len },
                _ if msg => Reach::Mapped {
                    base: b as *mut u8,
                    len,
                },
                Flavor::Shared => Reach::Mapped {
                    base: map.reach(0, CTL_BYTES + shared_at[i], len).ok_or_else(|| {
                        Error::Intern(format!("{call}: member {i}'s memory is not mapped"))
                    })?,
                    len,
                },
                Flavor::Allocate => Reach::Mapped {
                    base: map.reach(i as u32, CTL_BYTES, len).ok_or_else(|| {
                        Error::Intern(format!("{call}: member {i}'s memory is not mapped"))
                    })?,
                    len,
                },
                _ if i == me => Reach::Mapped {
                    base: b as *mut u8,
                    len,
                },
                _ => Reach::Remote {
                    pid: pid as i32,
                    base: b,
                    len,
                },
            };
            members.push(Member {
                reach,
                disp_unit: unit as usize,
                open: AtomicU8::new(0),
                direct: mem::Direct::new(&reach, !msg, atomics),
            });
        }
        let base = match (flavor, members[me].reach) {
            (Flavor::Shared, Reach::Mapped { base, .. }) => base as usize,
            _ => base,
        };
        let id = u32::from(comm.ctx());
        // Served on both paths: the message path's operations, and every window's
        // post/start/complete/wait notices.
        let reach = members[me].reach;
        mpi.engine().with_ep(|ep| {
            ep.ctx_mut().rma.add(id, reach, flavor == Flavor::Dynamic);
            Ok(())
        })?;
        mpi.barrier(&comm)?;
        let n = members.len();
        Ok(Win {
            comm,
            flavor,
            members,
            ctls,
            atomics,
            msg,
            transfers,
            unquiet: Default::default(),
            id,
            fences: Default::default(),
            sent: Default::default(),
            oneway: (0..n).map(|_| Default::default()).collect(),
            _own: own,
            base,
            size,
            disp_unit,
            epoch: FlagLock::new(Epoch {
                locks: vec![None; n],
                nocheck: vec![false; n],
                deferred: vec![None; n],
                typed: vec![0; n],
                ..Epoch::default()
            }),
            open: AtomicU8::new(0),
            stores: mpi.rma_stores.clone(),
            _map: map,
        })
    }

    /// `MPI_Win_free`: refused (`MPI_ERR_RMA_SYNC`) while this process holds a lock on it.
    ///
    /// # Collective Operation
    /// Every member calls it; it returns once all have (a barrier: no member's operation
    /// can still reach memory being released).
    pub fn free<P: Port>(&self, mpi: &Mpi<P>) -> Result<()> {
        {
            let e = self.epoch();
            if e.lock_all || e.locks.iter().any(Option::is_some) {
                return Err(sync_err(
                    "MPI_Win_free while a passive-target epoch is open (unlock first)".into(),
                ));
            }
        }
        self.xfer_quiet()?;
        mpi.barrier(&self.comm)?;
        let id = self.id;
        mpi.engine().with_ep(|ep| {
            ep.ctx_mut().rma.remove(id);
            Ok(())
        })
    }

    /// `MPI_Win_attach`: `len` bytes at `addr` (this process's memory) become reachable
    /// through this dynamic window at displacement `addr`.
    ///
    /// # One-sided Operation
    /// Local: only the target calls it; origins address the memory by its address.
    pub fn attach<P: Port>(&self, mpi: &Mpi<P>, addr: usize, len: usize) -> Result<()> {
        let id = self.id;
        if self.flavor != Flavor::Dynamic {
            return Err(Error::Code {
                code: class::RMA_FLAVOR,
                msg: "MPI_ERR_RMA_FLAVOR: MPI_Win_attach on a window not made by MPI_Win_create_dynamic".into(),
            });
        }
        if addr == 0 && len > 0 {
            return Err(Error::Arg("MPI_Win_attach: base is NULL".into()));
        }
        mpi.engine().with_ep(|ep| {
            ep.ctx_mut().rma.attach(id, addr, len);
            Ok(())
        })
    }

    /// `MPI_Win_detach`: the region attached at `addr` leaves the window.
    ///
    /// # One-sided Operation
    /// Local: only the target calls it.
    pub fn detach<P: Port>(&self, mpi: &Mpi<P>, addr: usize) -> Result<()> {
        let id = self.id;
        if self.flavor != Flavor::Dynamic {
            return Err(Error::Code {
                code: class::RMA_FLAVOR,
                msg: "MPI_ERR_RMA_FLAVOR: MPI_Win_detach on a window not made by MPI_Win_create_dynamic".into(),
            });
        }
        let found = mpi
            .engine()
            .with_ep(|ep| Ok(ep.ctx_mut().rma.detach(id, addr)))?;
        if found {
            Ok(())
        } else {
            Err(Error::Code {
                code: class::RMA_ATTACH,
                msg: format!(
                    "MPI_ERR_RMA_ATTACH: MPI_Win_detach: nothing is attached at {addr:#x}"
                ),
            })
        }
    }

    /// Whether operations go as messages (the message path) rather than directly.
    pub fn is_message_path(&self) -> bool {
        self.msg
    }

    /// Whether puts and gets go by transfers on the message path (`xfer.rs`).
    pub fn uses_transfers(&self) -> bool {
        self.transfers
    }

    /// Messages this process has sent for the window's operations and synchronisation
    /// (0 on the direct path, apart from post/start/complete/wait notices).
    pub fn messages_sent(&self) -> u64 {
        self.sent.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `MPI_Win_shared_query`: member `rank`'s size, displacement unit and address in this
    /// process (`MPI_PROC_NULL`: the first member with memory).
    pub fn shared_query(&self, rank: i32) -> Result<(usize, usize, usize)> {
        let call = "MPI_Win_shared_query";
        if self.flavor != Flavor::Shared {
            return Err(Error::Code {
                code: class::RMA_FLAVOR,
                msg: format!(
                    "MPI_ERR_RMA_FLAVOR: {call} on a window not made by MPI_Win_allocate_shared"
                ),
            });
        }
        let m = if rank == crate::engine::PROC_NULL {
            self.members
                .iter()
                .find(|m| m.reach.len() > 0)
                .unwrap_or(&self.members[0])
        } else {
            self.member(rank, call)?
        };
        let addr = match m.reach {
            Reach::Mapped { base, .. } => base as usize,
            _ => 0,
        };
        Ok((m.reach.len(), m.disp_unit, addr))
    }

    /// Sets (`set`) or clears the `MPI_MODE_NOCHECK` mark of member `r` (`usize::MAX`:
    /// of lock_all); returns whether it was set.
    fn nocheck_mark(&self, r: usize, set: bool) -> bool {
        let mut e = self.epoch();
        let slot = if r == usize::MAX {
            &mut e.nocheck_all
        } else {
            &mut e.nocheck[r]
        };
        std::mem::replace(slot, set)
    }

    /// The window's group (`MPI_Win_get_group`): its communicator's.
    pub fn comm(&self) -> &Arc<CommData> {
        &self.comm
    }
    /// `MPI_WIN_BASE`: this member's window memory.
    pub fn base(&self) -> usize {
        self.base
    }
    /// `MPI_WIN_SIZE`.
    pub fn size(&self) -> usize {
        self.size
    }
    /// `MPI_WIN_DISP_UNIT`.
    pub fn disp_unit(&self) -> usize {
        self.disp_unit
    }
    /// `MPI_WIN_CREATE_FLAVOR`.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }
    /// `MPI_WIN_MODEL`: always [`MODEL_UNIFIED`] (see the module docs).
    pub fn model(&self) -> i32 {
        MODEL_UNIFIED
    }

    /// The member `rank` (checked: `MPI_ERR_RANK`).
    fn member(&self, rank: i32, call: &str) -> Result<&Member> {
        usize::try_from(rank)
            .ok()
            .and_then(|r| self.members.get(r))
            .ok_or_else(|| {
                Error::Rank(format!(
                    "{call}: rank {rank} is not in the window's group of {}",
                    self.members.len()
                ))
            })
    }

    /// Checks that a request-based operation (`MPI_Rput`, …) to `rank` is inside a
    /// passive-target epoch (MPI-3.1 §11.3.5: `MPI_ERR_RMA_SYNC` otherwise).
    pub fn check_passive(&self, rank: i32, call: &str) -> Result<()> {
        if rank == crate::engine::PROC_NULL {
            return Ok(());
        }
        self.member(rank, call)?;
        let e = self.epoch();
        if e.lock_all || e.locks[rank as usize].is_some() {
            Ok(())
        } else {
            Err(sync_err(format!(
                "{call} to rank {rank} outside a passive-target epoch (request-based operations need lock or lock_all)"
            )))
        }
    }

    /// Checks that an operation to `rank` is inside an access epoch (`MPI_ERR_RMA_SYNC`).
    fn check_access(&self, rank: usize, call: &str) -> Result<()> {
        if self.open_to(rank) & direct::ACCESS != 0 {
            Ok(())
        } else {
            Err(sync_err(format!(
                "{call} to rank {rank} outside an access epoch (no fence, lock or lock_all)"
            )))
        }
    }
}

/// `SKIFMPI_RMA=messages` forces the message path on a driver that maps peers' memory.
fn force_messages() -> bool {
    std::env::var("SKIFMPI_RMA").is_ok_and(|v| v == "messages")
}

/// The body of an asynchronous progress thread (`SKIFMPI_ASYNC_PROGRESS=1` in the C ABI):
/// serves this process's messages — one-sided operations, lock requests — until `stop`
/// is set, so a target computing without MPI calls does not stall its origins on the
/// message path. It polls while messages come; idle, it sleeps on the channel's waiter
/// ([`crate::engine::Engine::idle_wait`], seeds 000/004: blocked in the kernel, woken by
/// the next arriving message, no CPU taken from the program); while a program thread is
/// inside the library (`busy`: it then progresses for itself, even while waiting without
/// the engine's lock) it naps 1 ms on a timer, touching nothing, rather than compete for the
/// engine's lock or the CPU, or make every sender pay a wake-up — polling beside the
/// program's own wait made a message-path put + flush 10-100× slower. `stop` is seen
/// within a few milliseconds.
///
/// The engine must have been opened for `MPI_THREAD_MULTIPLE` (else calls of the
/// program's thread would find it busy): an error otherwise.
pub fn serve_until<P: Port>(
    mpi: &Mpi<P>,
    stop: &std::sync::atomic::AtomicBool,
    busy: impl Fn() -> bool,
) -> Result<()> {
    const BUSY: std::time::Duration = std::time::Duration::from_millis(1);
    let e = mpi.engine();
    if !e.is_multiple() {
        return Err(Error::Other(
            "asynchronous progress needs the engine opened for MPI_THREAD_MULTIPLE".into(),
        ));
    }
    while !stop.load(std::sync::atomic::Ordering::Acquire) {
        if busy() {
            std::thread::sleep(BUSY);
            continue;
        }
        match e.try_progress()? {
            Some(true) => {}
            Some(false) => e.idle_wait(),
            None => std::thread::sleep(BUSY),
        }
    }
    Ok(())
}
