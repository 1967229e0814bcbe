//! The Rust API in-process (the loopback job of `skifch::local`: ranks are threads),
//! on the direct path (its RMA provider) and on the message path: typed handlers for
//! Short/Medium/Long with replies, Long payloads landing in the segment, put/get with
//! the Rust API's events, barriers.

use std::sync::atomic::{AtomicU64, Ordering};

use gasnet::am::RustHandler;
use gasnet::eps::Route;
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

/// Per (rank that replied, endpoint that ran the reply handler, endpoint that replied):
/// replies seen (ranks are threads: each rank reads only its peer's row).
static EP_REPLIES: [[[AtomicU64; 2]; 2]; 2] =
    [const { [const { [const { AtomicU64::new(0) }; 2] }; 2] }; 2];

/// Index 210 on endpoint 0 and on endpoint 1 (different functions): replies with the
/// endpoint's own index, which must be the one the request named.
fn ep_req0(t: &mut Token<'_>, args: &[u32], _: Data<'_>) {
    assert_eq!((t.ep(), args[0]), (0, 0));
    t.reply(211, Category::Short, &[0], &[], 0, false).unwrap();
}
fn ep_req1(t: &mut Token<'_>, args: &[u32], d: Data<'_>) {
    assert_eq!((t.ep(), args[0]), (1, 1));
    if let Data::Long { len, .. } = d {
        assert_eq!(len, 3000);
    }
    t.reply(211, Category::Short, &[1], &[], 0, false).unwrap();
}
/// Index 211: the reply, on the requesting endpoint.
fn ep_rep(t: &mut Token<'_>, args: &[u32], _: Data<'_>) {
    assert!(!t.is_request());
    EP_REPLIES[t.src() as usize][t.ep() as usize][args[0] as usize].fetch_add(1, Ordering::SeqCst);
}

fn endpoints(direct: bool) {
    let p = local::Params {
        nranks: 2,
        nports: 5,
        lane_bytes: 1 << 14,
    };
    local::run_with(p, move |job| {
        let rma = if direct { job.rma() } else { None };
        let opts = Options {
            rma,
            progress_thread: false,
        };
        let g = Gasnet::new(&job, opts).unwrap();
        assert_eq!(g.create_ep().unwrap(), 1);
        g.register_rust_on(0, &[(210, ep_req0 as RustHandler), (211, ep_rep)])
            .unwrap();
        g.register_rust_on(1, &[(210, ep_req1 as RustHandler), (211, ep_rep)])
            .unwrap();
        assert!(g
            .register_rust_on(2, &[(210, ep_rep as RustHandler)])
            .is_err());
        g.attach(1 << 16).unwrap();
        let s = g.create_segment(1 << 16).unwrap();
        g.publish_on(1, s).unwrap();
        let (me, peer) = (g.me(), 1 - g.me());
        for (l, r) in [(0, 1), (1, 0), (1, 1)] {
            let route = Route {
                local: l,
                remote: r,
            };
            let seen = &EP_REPLIES[peer as usize][l as usize][r as usize];
            let before = seen.load(Ordering::SeqCst);
            g.request_on(route, peer, 210, Category::Short, &[r], &[], 0)
                .unwrap();
            g.wait_until(|| seen.load(Ordering::SeqCst) > before)
                .unwrap();
        }
        // A Long and a put into endpoint 1's segment, not endpoint 0's.
        let at = g.segment_on(1, peer).unwrap() + 8192;
        let route = Route {
            local: 0,
            remote: 1,
        };
        g.request_on(route, peer, 210, Category::Long, &[1], &[5u8; 3000], at)
            .unwrap();
        g.put_bytes_on(1, peer, at + 4096, &[me as u8 + 1; 64])
            .unwrap();
        g.barrier().unwrap();
        let mut back = [0u8; 64];
        g.get_bytes_on(1, &mut back, peer, at + 4096).unwrap();
        assert_eq!(back, [me as u8 + 1; 64]);
        let mine = g.segment_on(1, me).unwrap() + 8192;
        let mut b = vec![0u8; 3000];
        // SAFETY: endpoint 1's segment here, whose Long from the peer has landed (its
        // handler ran before the barrier's messages were dispatched).
        unsafe { std::ptr::copy_nonoverlapping(mine as *const u8, b.as_mut_ptr(), 3000) };
        assert!(b.iter().all(|&x| x == 5));
        // ... and nothing in endpoint 0's segment at the same offset.
        let zero = g.segment().unwrap().0 + 8192;
        // SAFETY: this rank's endpoint 0 segment, never written at that offset.
        unsafe { std::ptr::copy_nonoverlapping(zero as *const u8, b.as_mut_ptr(), 3000) };
        assert!(b.iter().all(|&x| x == 0));
        // An endpoint this rank does not have is an error.
        let bad = Route {
            local: 5,
            remote: 0,
        };
        assert!(g
            .request_on(bad, peer, 210, Category::Short, &[0], &[], 0)
            .is_err());
        g.barrier().unwrap();
        Ok(())
    })
    .unwrap();
}

/// Endpoints made by `create_ep`, their handlers and segments, through the Rust API on
/// both paths (one after the other: they share `EP_REPLIES`, and each waits for its own
/// counts to grow past what it read before its request).
#[test]
fn rust_api_endpoints() {
    endpoints(true);
    endpoints(false);
}
