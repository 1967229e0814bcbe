//! The Rust API in-process (the loopback job of `skifch::local`: ranks are threads),
//! on the direct path (its RMA provider) and on the message path: typed handlers for
//! Short/Medium/Long with replies, Long payloads landing in the segment, put/get with
//! the Rust API's events, barriers.

use std::sync::atomic::{AtomicU64, Ordering};

use gasnet::am::RustHandler;
use gasnet::skifch::local;
use gasnet::{Category, Data, Gasnet, Options, Token};

/// Per replying rank (ranks are threads of one process): sum of what came back.
static GOT: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
static LONGS: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

fn med(t: &mut Token<'_>, args: &[u32], d: Data<'_>) {
    let Data::Medium(b) = d else {
        panic!("not a Medium")
    };
    assert_eq!(b.len(), args[0] as usize);
    assert!(b
        .iter()
        .enumerate()
        .all(|(i, &x)| x == (i as u8).wrapping_add(args[1] as u8)));
    let sum: u32 = b.iter().map(|&x| u32::from(x)).sum();
    t.reply(202, Category::Short, &[sum], &[], 0, false)
        .unwrap();
}
fn long(t: &mut Token<'_>, args: &[u32], d: Data<'_>) {
    let Data::Long { addr, len } = d else {
        panic!("not a Long")
    };
    assert_eq!(len, args[0] as usize);
    // The payload is in this rank's segment: read through the address, by copy.
    let mut v = vec![0u8; len];
    // SAFETY: `addr..addr+len` is the Long's landing zone in this rank's live segment.
    unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, v.as_mut_ptr(), len) };
    assert!(v.iter().all(|&x| x == 7));
    t.reply(203, Category::Short, &[len as u32], &[], 0, false)
        .unwrap();
}
fn sum_back(t: &mut Token<'_>, args: &[u32], _: Data<'_>) {
    GOT[t.src() as usize].fetch_add(u64::from(args[0]), Ordering::SeqCst);
}
fn long_back(t: &mut Token<'_>, args: &[u32], _: Data<'_>) {
    LONGS[t.src() as usize].fetch_add(u64::from(args[0]), Ordering::SeqCst);
}

fn run(direct: bool) {
    let p = local::Params {
        nranks: 3,
        nports: 5,
        lane_bytes: 1 << 14,
    };
    local::run_with(p, move |job| {
        let rma = if direct { job.rma() } else { None };
        let g = Gasnet::new(
            &job,
            Options {
                rma,
                progress_thread: false,
            },
        )
        .unwrap();
        g.register_rust(&[
            (200, med as RustHandler),
            (201, long),
            (202, sum_back),
            (203, long_back),
        ])
        .unwrap();
        g.attach(1 << 20).unwrap();
        g.barrier().unwrap();
        let (me, n) = (g.me(), g.size());
        let peer = (me + 1) % n;
        let data: Vec<u8> = (0..100u32).map(|i| (i as u8).wrapping_add(5)).collect();
        g.request_medium(peer, 200, &[100, 5], &data).unwrap();
        let want: u64 = data.iter().map(|&x| u64::from(x)).sum();
        g.wait_until(|| GOT[peer as usize].load(Ordering::SeqCst) >= want)
            .unwrap();
        let big = vec![7u8; 50_000]; // beyond one message: RMA or chunks
        let dest = g.segment_of(peer).unwrap() + 4096;
        g.request_long(peer, 201, &[50_000], &big, dest).unwrap();
        g.wait_until(|| LONGS[peer as usize].load(Ordering::SeqCst) >= 50_000)
            .unwrap();
        g.barrier().unwrap();
        // put/get: each rank writes its number into the peer's segment at offset 1 MiB - 64.
        let at = g.segment_of(peer).unwrap() + (1 << 20) - 64;
        let e = g.put_nb(peer, at, &[me as u8 + 1; 64]).unwrap();
        g.complete(e).unwrap();
        g.barrier().unwrap();
        let mut back = [0u8; 64];
        g.get_bytes(&mut back, peer, at).unwrap();
        assert_eq!(back, [me as u8 + 1; 64]);
        // Bad input is an error, not a panic: outside the segment.
        assert!(g.put_bytes(peer, at + 1, &[0u8; 64]).is_err());
        g.barrier().unwrap();
        Ok(())
    })
    .unwrap();
}

#[test]
fn rust_api_direct_path() {
    run(true);
}

#[test]
fn rust_api_message_path() {
    // Separate statics would be cleaner; both tests only ever add, and each waits for at
    // least its own contribution, so running them in either order (or at once) is fine.
    run(false);
}
