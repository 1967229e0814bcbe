//! Remote memory access for the shm driver ([`skifch::rma`]): every exposed segment is an
//! anonymous `memfd` that every rank of the job maps `MAP_SHARED`, so a put is one
//! `memcpy` into the peer's pages and an atomic is a CPU atomic on them.
//!
//! ## How a peer's memfd is opened
//! A segment's token is the owner's pid and descriptor number; a peer opens
//! `/proc/<pid>/fd/<fd>` (a same-user process may, unless the owner is non-dumpable or
//! Yama's `ptrace_scope` is 2 or more — the open then fails and the library falls back to
//! its message path). The peer checks the size it maps against the size announced. The
//! owner keeps the descriptor open while the segment lives; the mapping keeps the memory
//! alive after the owner exits, so a dead peer never faults a survivor.
//!
//! ## Global variables ([`Rma::share_in_place`])
//! The pages of the program's writable data (`.data`/`.bss`) are copied into a memfd that
//! is then mapped `MAP_FIXED` over the same addresses: the process sees the same values at
//! the same addresses, and peers can map them like any segment. This was chosen over
//! serving globals with messages (needs the target's progress for every access, and AMOs
//! on globals would be a different mechanism from AMOs on the heap) and over
//! `process_vm_readv/writev` (a syscall per access, no atomics, subject to ptrace policy
//! at every call instead of once at start-up). [`data_segment`] finds `.data`/`.bss`
//! (never the `.got.plt` beside them); the caller shares their pages.
#![allow(unsafe_code)] // memfd/mmap syscalls and dl_iterate_phdr

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

use memmap2::MmapRaw;
use skifch::rma::{PeerMapping, Rma, RmaCaps, Segment};
use skifch::{Error, Result};

/// The shm RMA provider of one rank. Only for jobs whose ranks are processes of this
/// host (the shm driver); each peer segment is checked by inode, so a rank elsewhere is
/// an error, never a wrong mapping.
pub struct ShmRma {
    rank: u32,
    size: u32,
}

impl ShmRma {
    /// The provider of rank `rank` of `size` (ranks that are processes of one host). The
    /// shm driver offers it through [`skifch::Driver::rma`]; libraries get it from
    /// [`skifch::Job::rma`], never by building it.
    pub fn new(rank: u32, size: u32) -> Self {
        ShmRma { rank, size }
    }
}

fn memfd(len: usize) -> Result<File> {
    crate::shm::sealed_memfd(
        c"skifch-rma",
        len,
        [
            "memfd_create for an RMA segment",
            "making an RMA segment private (mode 0600)",
            "sizing an RMA segment",
            "sealing the size of an RMA segment",
        ],
    )
}

/// pid, descriptor and inode of a segment's memfd: the inode lets a peer check that
/// `/proc/<pid>/fd/<fd>` is this very memfd (and not, e.g., another process's file).
fn token(file: &File) -> Result<Vec<u8>> {
    let ino = file
        .metadata()
        .map_err(|e| Error::os("fstat of an RMA segment", e))?
        .ino();
    let mut t = std::process::id().to_le_bytes().to_vec();
    t.extend_from_slice(&file.as_raw_fd().to_le_bytes());
    t.extend_from_slice(&ino.to_le_bytes());
    Ok(t)
}

const PAGE: usize = 4096;

impl Rma for ShmRma {
    fn name(&self) -> &'static str {
        "shm"
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn caps(&self) -> RmaCaps {
        RmaCaps {
            load_store: true,
            transfers: false,
            remote_progress: false,
            share_in_place: true,
        }
    }

    fn alloc(&self, len: usize) -> Result<Segment> {
        if len == 0 {
            return Err(Error::InvalidArgument("an RMA segment of 0 bytes".into()));
        }
        let file = memfd(len)?;
        let map = MmapRaw::map_raw(&file).map_err(|e| Error::os("mapping an RMA segment", e))?;
        let tok = token(&file)?;
        // SAFETY: the mapping is `len` bytes and lives in the segment's keep-alive.
        Ok(unsafe { Segment::new(map.as_mut_ptr(), len, tok, Box::new((map, file))) })
    }

    unsafe fn share_in_place(&self, addr: *mut u8, len: usize) -> Result<Segment> {
        if len == 0 || !(addr as usize).is_multiple_of(PAGE) || !len.is_multiple_of(PAGE) {
            return Err(Error::InvalidArgument(
                format!("share_in_place needs page-aligned memory, got {addr:p}+{len}").into(),
            ));
        }
        let file = memfd(len)?;
        let tmp =
            MmapRaw::map_raw(&file).map_err(|e| Error::os("mapping a data segment copy", e))?;
        // SAFETY: the caller guarantees addr..addr+len is mapped and quiescent; `tmp` is a
        // fresh private-to-us mapping of `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(addr, tmp.as_mut_ptr(), len) };
        drop(tmp);
        // SAFETY: replaces exactly the caller's pages (MAP_FIXED at their page-aligned
        // address) with the memfd now holding the same bytes.
        let p = unsafe {
            libc::mmap(
                addr.cast(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED || p.cast::<u8>() != addr {
            return Err(Error::last_os(
                "mapping the data segment onto shared memory",
            ));
        }
        let tok = token(&file)?;
        // SAFETY: the pages stay mapped for the process's life (caller's contract).
        Ok(unsafe { Segment::new(addr, len, tok, Box::new(file)) })
    }

    fn open_peer(&self, rank: u32, token: &[u8]) -> Result<PeerMapping> {
        let word = |r: std::ops::Range<usize>| -> Result<u64> {
            let mut b = [0u8; 8];
            let f = token.get(r.clone()).ok_or_else(|| {
                Error::Corrupt(
                    format!("rank {rank}'s segment token has {} bytes", token.len()).into(),
                )
            })?;
            b[..f.len()].copy_from_slice(f);
            Ok(u64::from_le_bytes(b))
        };
        let (pid, fd, ino) = (word(0..4)? as u32, word(4..8)? as u32 as i32, word(8..16)?);
        let path = format!("/proc/{pid}/fd/{fd}");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::os("opening a peer's RMA segment through /proc", e))?;
        let got = file
            .metadata()
            .map_err(|e| Error::os("fstat of a peer's RMA segment", e))?
            .ino();
        if got != ino {
            return Err(Error::Corrupt(
                format!("{path} is not rank {rank}'s RMA segment (inode {got}, announced {ino}): is that rank on another host?").into(),
            ));
        }
        let map =
            MmapRaw::map_raw(&file).map_err(|e| Error::os("mapping a peer's RMA segment", e))?;
        let (ptr, len) = (map.as_mut_ptr(), map.len());
        // SAFETY: the mapping is kept by the PeerMapping.
        Ok(unsafe { PeerMapping::new(ptr, len, Box::new(map)) })
    }
}

/// The main program's `.data` and `.bss`: the address and length of the bytes from the
/// end of its RELRO part (read-only after relocation) and of its lazy-binding PLT slots
/// (`.got.plt`: with the default, partial-RELRO link they follow RELRO on the same page,
/// and a put there would redirect the peer's next library call — issue 16 defect 4) to
/// the end of its writable segment. Not page-aligned: a caller that shares them
/// ([`Rma::share_in_place`]) maps the enclosing pages and exposes only this range
/// ([`skifch::rma::MappedWindow::narrow`]). `None` if the program has none.
pub fn data_segment() -> Option<(usize, usize)> {
    struct Found {
        range: Option<(usize, usize)>,
    }
    unsafe extern "C" fn cb(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut libc::c_void,
    ) -> i32 {
        // SAFETY: dl_iterate_phdr passes a valid info for the duration of the callback and
        // our `data` pointer unchanged; the first object is the main program.
        let (info, found) = unsafe { (&*info, &mut *data.cast::<Found>()) };
        let bias = info.dlpi_addr as usize;
        // SAFETY: dlpi_phdr points at dlpi_phnum program headers.
        let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
        let mut lo = 0usize;
        for ph in phdrs {
            if ph.p_type == libc::PT_GNU_RELRO {
                lo = lo.max(bias + ph.p_vaddr as usize + ph.p_memsz as usize);
            }
            if ph.p_type == libc::PT_DYNAMIC {
                let dynamic = (bias + ph.p_vaddr as usize) as *const Elf64Dyn;
                let n = ph.p_memsz as usize / std::mem::size_of::<Elf64Dyn>();
                // SAFETY: the loaded program's dynamic section: `n` entries, mapped for
                // the process's life, written only by the loader before main.
                lo = lo.max(unsafe { plt_got_end(dynamic, n, bias) });
            }
        }
        for ph in phdrs {
            if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_W != 0 {
                let start = (bias + ph.p_vaddr as usize).max(lo);
                let end = bias + ph.p_vaddr as usize + ph.p_memsz as usize;
                if end > start {
                    found.range = Some((start, end - start));
                }
            }
        }
        1 // stop after the main program
    }
    let mut found = Found { range: None };
    // SAFETY: the callback matches the expected signature and only reads the headers.
    unsafe { libc::dl_iterate_phdr(Some(cb), (&mut found as *mut Found).cast()) };
    found.range
}

/// An `Elf64_Dyn` entry of the dynamic section (the libc crate does not declare it).
#[repr(C)]
#[derive(Clone, Copy)]
struct Elf64Dyn {
    d_tag: i64,
    d_val: u64,
}

/// The end of the program's `.got.plt` (its three reserved words and one slot per PLT
/// relocation, ELF x86-64 psABI §5.2), or 0 without one. `DT_PLTGOT` is a link-time
/// address that some loaders relocate in place: below `bias` it is unrelocated.
///
/// # Safety
/// `dynamic` points at `n` readable `Elf64_Dyn` entries.
unsafe fn plt_got_end(dynamic: *const Elf64Dyn, n: usize, bias: usize) -> usize {
    const DT_PLTRELSZ: i64 = 2;
    const DT_PLTGOT: i64 = 3;
    const DT_RELAENT: i64 = 9;
    const DT_RELENT: i64 = 19;
    const DT_PLTREL: i64 = 20;
    const DT_RELA: u64 = 7;
    let (mut got, mut relsz, mut relaent, mut relent, mut kind) = (0, 0, 24, 16, DT_RELA);
    for i in 0..n {
        // SAFETY: the caller's contract; `i < n`.
        let d = unsafe { dynamic.add(i).read() };
        match d.d_tag {
            0 => break, // DT_NULL
            DT_PLTGOT => got = d.d_val as usize,
            DT_PLTRELSZ => relsz = d.d_val as usize,
            DT_RELAENT => relaent = d.d_val as usize,
            DT_RELENT => relent = d.d_val as usize,
            DT_PLTREL => kind = d.d_val,
            _ => {}
        }
    }
    if got == 0 {
        return 0;
    }
    let got = if got < bias { got + bias } else { got };
    let ent = if kind == DT_RELA { relaent } else { relent };
    got + 8 * (3 + relsz / ent.max(1))
}
