//! The segment's memory for the shm driver: an anonymous, private (0600), size-sealed `memfd` mapped
//! `MAP_SHARED` ([`MemfdRegion`]), and joining the job through it.
#![allow(unsafe_code)] // mmap of the segment and the memfd syscalls

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

use super::{Fabric, Layout, Params, Region, RingDriver};
use memmap2::MmapRaw;
use skifch::{Error, Job, Result};

/// A job segment mapped from a memfd.
pub struct MemfdRegion {
    map: MmapRaw,
    file: File,
}

impl MemfdRegion {
    /// Creates an anonymous segment of `len` zeroed bytes (`sealed_memfd`: mode 0600,
    /// size sealed, close-on-exec; the launcher clears that flag on the copy it passes to
    /// ranks).
    pub fn create(len: usize) -> Result<Self> {
        Self::map(sealed_memfd(
            c"skifch-job",
            len,
            [
                "memfd_create for the job segment",
                "making the job segment private (mode 0600)",
                "sizing the job segment",
                "sealing the size of the job segment",
            ],
        )?)
    }

    /// Maps an existing segment descriptor (e.g. inherited from the launcher).
    pub fn map(file: File) -> Result<Self> {
        let len = file
            .metadata()
            .map_err(|e| Error::os("fstat of the job segment", e))?
            .len();
        if len == 0 {
            return Err(Error::Corrupt("the job segment is empty".into()));
        }
        let map = MmapRaw::map_raw(&file).map_err(|e| Error::os("mapping the job segment", e))?;
        Ok(MemfdRegion { map, file })
    }

    /// The segment's descriptor.
    pub fn file(&self) -> &File {
        &self.file
    }
}

// SAFETY: a MAP_SHARED mapping is page-aligned, `len()` bytes long and stays mapped until
// `map` is dropped with the region; Rust reaches it only through the lane code ([`super`]).
unsafe impl Region for MemfdRegion {
    fn as_ptr(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }
    fn len(&self) -> usize {
        self.map.len()
    }
    /// Every rank maps this memfd, so every rank is a process of this host: memfd
    /// segments mapped by all ranks ([`crate::shm_rma`]).
    fn rma(&self, rank: u32, size: u32) -> Option<Arc<dyn skifch::rma::Rma>> {
        Some(Arc::new(crate::shm_rma::ShmRma::new(rank, size)))
    }
}

/// A new anonymous memfd of `len` zeroed bytes for memory that processes of one job share
/// (`what`: the error context of each step — create, chmod, size, seal): close-on-exec; mode 0600, so that other users cannot open
/// it through `/proc/<pid>/fd` (a memfd is created 0777); its size sealed
/// (`F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL`), so that no process holding it can
/// truncate it under the others (whose accesses would turn into `SIGBUS`) or unseal it.
///
/// The remaining trust boundary: every process of the job (and any process of the same
/// user allowed to ptrace one of them) can read and write the contents — ranks of one
/// job trust each other; the segment's readers validate what they read, so a hostile rank
/// can break the job's messages but not the other ranks' memory safety.
pub(crate) fn sealed_memfd(
    name: &std::ffi::CStr,
    len: usize,
    what: [&'static str; 4],
) -> Result<File> {
    // SAFETY: the name is a NUL-terminated string; memfd_create only reads it.
    let fd =
        unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if fd < 0 {
        return Err(Error::last_os(what[0]));
    }
    // SAFETY: `fd` was just returned by memfd_create and is owned by nobody else.
    let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    // SAFETY: fchmod with integer arguments on a descriptor we own.
    if unsafe { libc::fchmod(file.as_raw_fd(), 0o600) } < 0 {
        return Err(Error::last_os(what[1]));
    }
    file.set_len(len as u64)
        .map_err(|e| Error::os(what[2], e))?;
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
    // SAFETY: F_ADD_SEALS with an integer argument on a descriptor we own.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) } < 0 {
        return Err(Error::last_os(what[3]));
    }
    Ok(file)
}

/// The shm driver: a rank's attachment to the job's segment.
pub type ShmDriver = RingDriver<MemfdRegion>;
/// A rank's job handle over the shm driver.
pub type ShmJob = Job<ShmDriver>;

/// Creates a fresh, formatted segment for `params` (used by `skifrun` and by 1-rank jobs).
pub fn create_fabric(params: Params) -> Result<Arc<Fabric<MemfdRegion>>> {
    let lay = Layout::new(params)?;
    Ok(Arc::new(Fabric::create(
        MemfdRegion::create(lay.total)?,
        params,
    )?))
}

/// Joins the job this process belongs to over the shm driver: the one `skifrun` started
/// (from `SKIFCH_RANK`, `SKIFCH_SIZE`, `SKIFCH_FD`); else the one a PMI-1 or PMIx
/// launcher started (`mpiexec.hydra`, `srun`, `mpirun`: [`crate::boot::from_env`]),
/// whose ranks must then all be on this node ([`super::node::node_job`]); else a fresh
/// 1-rank job. [`crate::init`] chooses the driver and calls this for `SKIFCH_DRIVER=shm`.
pub fn init() -> Result<ShmJob> {
    if std::env::var_os("SKIFCH_FD").is_none() {
        let boot = crate::boot::from_env()?;
        if boot.size() > 1 {
            return init_from(&*boot);
        }
    }
    let (fab, rank) = join_segment()?;
    Ok(Job::new(Arc::new(RingDriver::new(fab, rank, "shm")?)))
}

/// The shm job of the ranks `boot` describes, which must all be on this node
/// ([`super::node::node_job`]); a job on several nodes is refused, naming the count.
pub fn init_from(boot: &dyn crate::boot::Bootstrap) -> Result<ShmJob> {
    let nodes = (0..boot.size()).map(|r| boot.node_of(r)).max().unwrap_or(0) + 1;
    if nodes > 1 {
        return Err(Error::Bootstrap(
            format!(
                "the launcher placed the job's {} ranks on {nodes} nodes; the shm driver \
                 reaches one node only (run the ranks on one host, or leave SKIFCH_DRIVER \
                 unset for the hierarchy of shm and libfabric)",
                boot.size()
            )
            .into(),
        ));
    }
    super::node::node_job(boot)
}

/// The job segment this process was given by `skifrun` (`SKIFCH_RANK`, `SKIFCH_SIZE`,
/// `SKIFCH_FD`) and this process's rank, or a fresh 1-rank segment when none is set. The
/// shm driver's lanes live in it; every driver uses its rank states and lost marking
/// (the launcher's view of the job, see [`crate::launch`]).
pub fn join_segment() -> Result<(Arc<Fabric<MemfdRegion>>, u32)> {
    let (rank, size, fd) = (
        env_u32("SKIFCH_RANK")?,
        env_u32("SKIFCH_SIZE")?,
        env_u32("SKIFCH_FD")?,
    );
    match (rank, size, fd) {
        (None, None, None) => Ok((create_fabric(Params::from_env(1)?)?, 0)),
        (Some(rank), Some(size), Some(fd)) => {
            // A copy of the inherited descriptor, made only once it proved to be a job
            // segment. The inherited number stays open for the other libraries of this
            // program (each joins through it: `JobCtl::set_running`), close-on-exec so
            // that programs this one starts do not hold the job's memory.
            let file = inherited_memfd("SKIFCH_FD", fd, super::layout::MAGIC)?;
            let fab = Arc::new(Fabric::attach(MemfdRegion::map(file)?)?);
            if fab.layout().params.nranks != size {
                return Err(Error::Bootstrap(format!(
                    "SKIFCH_SIZE={size} but the segment is for {} ranks",
                    fab.layout().params.nranks
                ).into()));
            }
            if rank >= size {
                return Err(Error::Bootstrap(
                    format!("SKIFCH_RANK={rank} is not below SKIFCH_SIZE={size}").into(),
                ));
            }
            keep_inherited(fd);
            Ok((fab, rank))
        }
        _ => Err(Error::Bootstrap(
            "SKIFCH_RANK, SKIFCH_SIZE and SKIFCH_FD must be set together (start the program with skifrun)".into(),
        )),
    }
}

/// The job memfd that environment variable `var` (`SKIFCH_FD`, `SKIFCH_FPGA_FD`) names,
/// as a fresh close-on-exec copy, after checking without taking ownership that it is one:
/// open, not standard input/output/error, a memfd whose size is sealed (as
/// [`MemfdRegion::create`] leaves it) and that starts with `magic`. A stale environment
/// (a child that inherited `SKIFCH_*` while the number was reused) thus fails here and
/// the descriptor — stdin, a pipe, the program's own file — stays open and untouched.
pub(crate) fn inherited_memfd(var: &str, fd: u32, magic: u64) -> Result<File> {
    let bad = |why: String| {
        Err(Error::Bootstrap(
            format!("{var}={fd} {why}; it is not a job segment (left open; is this process started by skifrun?)").into(),
        ))
    };
    let Ok(raw) = i32::try_from(fd) else {
        return bad("is out of range".into());
    };
    if let Some(name) = ["standard input", "standard output", "standard error"].get(fd as usize) {
        return bad(format!("is {name}"));
    }
    if let Err(why) = check_segment(raw, magic) {
        return bad(why);
    }
    // SAFETY: F_DUPFD_CLOEXEC creates a new descriptor (>= 3) that nobody else owns.
    let copy = unsafe { libc::fcntl(raw, libc::F_DUPFD_CLOEXEC, 3) };
    if copy < 0 {
        return Err(Error::last_os(
            "duplicating the inherited job segment descriptor",
        ));
    }
    // SAFETY: `copy` was just created and is owned by nobody else.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(copy) }))
}

/// Checks, touching nothing, that descriptor `raw` is a job memory segment: open, a
/// regular file (memfd) whose size is sealed, starting with `magic`; else says why not.
pub(crate) fn check_segment(raw: i32, magic: u64) -> std::result::Result<(), String> {
    // SAFETY: F_GETFD only inspects the descriptor table entry.
    if unsafe { libc::fcntl(raw, libc::F_GETFD) } < 0 {
        return Err("is not an open descriptor".into());
    }
    // SAFETY: `st` is plain data written by fstat; the descriptor is only inspected.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `st` is a valid out-pointer.
    if unsafe { libc::fstat(raw, &mut st) } < 0 || st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err("is not a regular file or memfd".into());
    }
    // SAFETY: F_GET_SEALS only reads the file's seals (EINVAL for files without seals).
    let seals = unsafe { libc::fcntl(raw, libc::F_GET_SEALS) };
    let size_seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
    if seals < 0 || seals & size_seals != size_seals {
        return Err("is not a memfd with a sealed size".into());
    }
    let mut head = [0u8; 8];
    // SAFETY: `head` is a valid 8-byte buffer; pread does not move the file offset.
    let n = unsafe { libc::pread(raw, head.as_mut_ptr().cast(), head.len(), 0) };
    if n != head.len() as isize || u64::from_le_bytes(head) != magic {
        return Err(format!(
            "has the wrong header (magic {:#018x}, expected {magic:#018x})",
            u64::from_le_bytes(head)
        ));
    }
    Ok(())
}

/// Closes the descriptor a launcher variable named, once [`inherited_memfd`] proved it a
/// job segment and the process joined the job through its copy: programs this rank execs
/// or forks do not get it by accident.
/// Marks the launcher's job-segment descriptor `fd` (proven one by [`inherited_memfd`])
/// close-on-exec, keeping it open for the other libraries of this process.
pub(crate) fn keep_inherited(fd: u32) {
    // SAFETY: F_SETFD on the launcher's descriptor, proven a job segment; only its
    // close-on-exec flag changes.
    unsafe { libc::fcntl(fd as i32, libc::F_SETFD, libc::FD_CLOEXEC) };
}

/// Closes the launcher's descriptor `fd` (proven one by [`inherited_memfd`]) once this
/// process works on its own copy.
pub(crate) fn close_inherited(fd: u32) {
    // SAFETY: `fd` is the launcher's descriptor, proven a job segment by
    // `inherited_memfd`; this process works on its own copy, so closing it frees nothing
    // anyone else uses.
    unsafe { libc::close(fd as i32) };
}

/// Reads a numeric environment variable set by the launcher (`None` when unset).
pub(crate) fn env_u32(name: &str) -> Result<Option<u32>> {
    match std::env::var(name) {
        Ok(v) => v.parse().map(Some).map_err(|_| {
            Error::Bootstrap(
                format!("{name}={v:?} is not a number (is this process started by skifrun?)")
                    .into(),
            )
        }),
        Err(_) => Ok(None),
    }
}
