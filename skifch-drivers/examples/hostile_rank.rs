//! A rank that attacks the device model `skifrun --driver fpga-model` hosts, for
//! `tests/fpga_model.rs`: `skifrun -n 2 --driver fpga-model -- hostile_rank`.
//!
//! * Rank 1 programs its adapter's TX ring at an IOVA outside its node window, enables it
//!   and rings the doorbell: the model's DMA must be refused (`ERR_STATUS.DMA_FAULT`, the
//!   adapter halts), never reach the launcher's other memory. Then it writes a register
//!   queue tail far past the head: the launcher stops serving it (one `skifrun:` line).
//!   It prints what it saw, stays 3 s (leaving would make it a lost peer for rank 0),
//!   and exits 0 without joining the job.
//! * Rank 0 joins normally and exchanges a message with itself, twice, around rank 1's
//!   attack: the launcher and the model keep working for everyone else.
use std::fs::File;
use std::io::IoSlice;
use std::os::fd::FromRawFd;
use std::time::{Duration, Instant};

use fpga::regs;
use skifch_drivers::fpga::hw::Mmio;
use skifch_drivers::fpga::remote::{NodeWindow, RemoteHw};
use skifch_drivers::shm::MemfdRegion;

fn env(name: &str) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} is not set (start with skifrun --driver fpga-model)"))
}

fn attacker() -> Result<(), String> {
    let fd = env("SKIFCH_FPGA_FD") as i32;
    // SAFETY: the launcher passed this descriptor to this process for its own use.
    #[allow(unsafe_code)]
    let file = unsafe { File::from_raw_fd(fd) };
    let region = MemfdRegion::map(file).map_err(|e| e.to_string())?;
    let win = NodeWindow::attach(region, env("SKIFCH_RANK"), env("SKIFCH_SIZE"))
        .map_err(|e| e.to_string())?;
    let raw = win.file().try_clone().map_err(|e| e.to_string())?;
    let hw = RemoteHw::new(std::sync::Arc::new(win)).map_err(|e| e.to_string())?;
    let w = |off: u32, v: u32| hw.write32(off as usize, v).map_err(|e| e.to_string());
    let r = |off: u32| hw.read32(off as usize).map_err(|e| e.to_string());
    w(regs::CTRL, regs::ctrl::RESET)?;
    let t0 = Instant::now();
    while r(regs::STATUS)? & regs::status::READY == 0 {
        if t0.elapsed() > Duration::from_secs(2) {
            return Err("no READY after reset".into());
        }
    }
    // A TX ring at 4 GiB: far outside the window (the launcher's memory, were it mapped).
    w(regs::TX_BASE_LO, 0)?;
    w(regs::TX_BASE_HI, 1)?;
    w(regs::TX_SIZE, 8)?;
    w(regs::RX_BASE_LO, 0x2_0000)?;
    w(regs::RX_BASE_HI, 0)?;
    w(regs::RX_SIZE, 4096)?;
    w(regs::RXC_BASE_LO, 0x3_0000)?;
    w(regs::RXC_BASE_HI, 0)?;
    w(regs::RXC_SIZE, 8)?;
    w(regs::CTRL, regs::ctrl::ENABLE)?;
    w(regs::TX_TAIL, 1)?;
    let t0 = Instant::now();
    let err = loop {
        let e = r(regs::ERR_STATUS)?;
        if e != 0 || t0.elapsed() > Duration::from_secs(2) {
            break e;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let halted = r(regs::STATUS)? & regs::status::HALTED != 0;
    println!(
        "hostile: ERR_STATUS {:#x} ({}), halted {halted}",
        err,
        skifch_drivers::fpga::driver::describe_err(err)
    );
    // Now break the register queue: a tail 10 000 entries past the head.
    let map = memmap2::MmapRaw::map_raw(&raw).map_err(|e| e.to_string())?;
    // SAFETY: offset 0x80 (the queue tail) is inside the mapping and 4-aligned; the word
    // is shared with the launcher and written atomically.
    #[allow(unsafe_code)]
    let tail = unsafe { std::sync::atomic::AtomicU32::from_ptr(map.as_mut_ptr().add(0x80).cast()) };
    tail.fetch_add(10_000, std::sync::atomic::Ordering::Release);
    skifch_drivers::sys::futex_wake_all(tail);
    println!("hostile: queue broken");
    // Leaving now would mark this rank lost (it never joined) and fail rank 0's calls
    // with PeerLost; stay until rank 0 is done.
    std::thread::sleep(Duration::from_secs(3));
    Ok(())
}

fn victim() -> Result<(), String> {
    let job = skifch_drivers::init().map_err(|e| e.to_string())?;
    let ch = job.open(0).map_err(|e| e.to_string())?;
    let me = ch.addr();
    for round in 0..2 {
        ch.send_whole_wait(me, &[IoSlice::new(b"still here")])
            .map_err(|e| e.to_string())?;
        let m = ch
            .recv_timeout(Duration::from_secs(5))
            .map_err(|e| e.to_string())?;
        if m.to_vec() != b"still here" {
            return Err("wrong bytes".into());
        }
        drop(m);
        if round == 0 {
            std::thread::sleep(Duration::from_millis(500)); // rank 1 attacks meanwhile
        }
    }
    println!("victim: rank 0 unaffected");
    Ok(())
}

fn main() {
    let r = if env("SKIFCH_RANK") == 1 {
        attacker()
    } else {
        victim()
    };
    if let Err(e) = r {
        eprintln!("hostile_rank: rank {}: {e}", env("SKIFCH_RANK"));
        std::process::exit(1);
    }
}
