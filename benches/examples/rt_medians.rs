//! Round-trip medians of an 8-byte ping-pong, each over the concrete shm port and over
//! `AnyPort` (what the C ABIs use), alternated in rounds, as a 2-rank job (self-launched,
//! shm only): the raw channel; a record dispatched through a table of function pointers
//! with the reply sent from inside the receive (`rec`: the floor of an active message
//! without `skifch::proto`); proto header-only active messages, the reply sent after the
//! poll and from inside the handler (`in`, as GASNet's AM Short reply).
//! `cargo run --release -p skifch-benches --example rt_medians -- [rounds]`
//! (`PC`/`PA`: the ports of the two raw channels, default 0 and 1; `TSC=1`: time-stamp
//! counter ticks instead of ns; `ONLY=rec-a|rec-c|raw-a|pro-in-a|pro-in-c`: that one
//! alone, each in its own process: for callgrind, and for a kind's own figure without the
//! other kinds' code beside it in the rounds; proto with the reply from the handler reads
//! 338 on the concrete port against 312 over `AnyPort` that way, same instruction counts).
//!
//! One clock reading per round trip and the median of 20000 round trips: a round trip
//! that another process preempted moves the median little, so on a loaded machine this
//! still reads what one round trip costs (where a timed loop's mean reads the load). What
//! it cannot see past is the placement of the two CPUs (see `../shared/peers` "Noise"):
//! compare rounds of one placement only.
use std::io::IoSlice;
use std::time::Instant;

use skifch::proto::{Am, Endpoint, Io};
use skifch::{Error, NetAddr, Port, WaitPolicy};

/// Nanoseconds since `t0`, or with `TSC` set the time-stamp counter (finer than this
/// VM's clock: 26 ticks against ~10 ns).
fn ns(t0: Instant) -> u64 {
    static TSC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    #[cfg(target_arch = "x86_64")]
    if *TSC.get_or_init(|| std::env::var_os("TSC").is_some()) {
        // SAFETY: rdtsc has no preconditions on x86_64.
        return unsafe { core::arch::x86_64::_rdtsc() };
    }
    t0.elapsed().as_nanos() as u64
}

fn med(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

const N: usize = 20000;

fn raw<P: Port>(ch: &skifch::Channel<P>, me: u32, port: u16) -> u64 {
    let to = NetAddr::new((1 - me) as u16, port);
    let msg = [7u8; 8];
    let send = || while ch.send(to, &[IoSlice::new(&msg)]).is_err() {};
    let recv = || loop {
        match ch.try_recv_with(|m| std::hint::black_box(m.len())) {
            Ok(_) => break,
            Err(Error::WouldBlock) => std::hint::spin_loop(),
            Err(e) => panic!("{e}"),
        }
    };
    let (mut t, t0) = (Vec::with_capacity(N + 1), Instant::now());
    for _ in 0..N {
        if me == 0 {
            t.push(ns(t0));
            send();
            recv();
        } else {
            recv();
            send();
        }
    }
    t.push(ns(t0));
    if me == 0 {
        med(t.windows(2).skip(100).map(|w| w[1] - w[0]).collect())
    } else {
        0
    }
}

type RecFn<P> = fn(&skifch::Channel<P>, &[u8], &mut u64);

fn rec_ping<P: Port>(ch: &skifch::Channel<P>, b: &[u8], _: &mut u64) {
    let to = NetAddr::new(u16::from(b[1]), b[2] as u16 | (b[3] as u16) << 8);
    let msg = [1u8, 1 - b[1], b[2], b[3], 0, 0, 0, 0];
    while ch.send(to, &[IoSlice::new(&msg)]).is_err() {}
}

fn rec_pong<P: Port>(_: &skifch::Channel<P>, _: &[u8], got: &mut u64) {
    *got += 1;
}

/// A record dispatched through a table of plain function pointers, the reply sent from
/// inside the receive (the floor of an AM path without proto).
fn rec<P: Port>(ch: &skifch::Channel<P>, me: u32, port: u16) -> u64 {
    let table: [RecFn<P>; 2] = std::hint::black_box([rec_ping::<P>, rec_pong::<P>]);
    let to = NetAddr::new((1 - me) as u16, port);
    let msg = [0u8, me as u8, port as u8, (port >> 8) as u8, 0, 0, 0, 0];
    let mut got = 0u64;
    let poll = |got: &mut u64| loop {
        match ch.try_recv_with(|m| {
            if let Some(b) = m.as_contiguous() {
                table[b[0] as usize & 1](ch, b, got)
            }
        }) {
            Ok(()) => break,
            Err(Error::WouldBlock) => std::hint::spin_loop(),
            Err(e) => panic!("{e}"),
        }
    };
    let (mut t, t0) = (Vec::with_capacity(N + 1), Instant::now());
    for k in 1..=N as u64 {
        if me == 0 {
            t.push(ns(t0));
            while ch.send(to, &[IoSlice::new(&msg)]).is_err() {}
            while got < k {
                poll(&mut got);
            }
        } else {
            poll(&mut got);
        }
    }
    t.push(ns(t0));
    if me == 0 {
        med(t.windows(2).skip(100).map(|w| w[1] - w[0]).collect())
    } else {
        0
    }
}

fn am<P: Port>(ep: &mut Endpoint<P, u64>, me: u32, inside: bool) -> u64 {
    let peer = 1 - me;
    let base = *ep.ctx();
    let wait = |ep: &mut Endpoint<P, u64>, k: u64| {
        while *ep.ctx() < k {
            ep.poll_ready_one().expect("poll");
        }
    };
    let (mut t, t0) = (Vec::with_capacity(N + 1), Instant::now());
    for k in base + 1..=base + N as u64 {
        if me == 0 {
            t.push(ns(t0));
            ep.send_header(peer, if inside { 2 } else { 1 }, 0, &[])
                .expect("send");
            wait(ep, k);
        } else if inside {
            wait(ep, k);
        } else {
            wait(ep, k);
            ep.send_header(peer, 1, 0, &[]).expect("send");
        }
    }
    t.push(ns(t0));
    if me == 0 {
        med(t.windows(2).skip(100).map(|w| w[1] - w[0]).collect())
    } else {
        0
    }
}

fn endpoint<P: Port>(p: P, max: usize) -> Endpoint<P, u64> {
    let mut ep = Endpoint::new(p, 2, max, WaitPolicy::Spin, 0u64).expect("endpoint");
    ep.register(1, |got: &mut u64, _: &mut Io<'_, _>, am: &Am<'_>| {
        std::hint::black_box(am.payload().len());
        *got += 1;
        Ok(())
    })
    .expect("register");
    ep.register(2, |got: &mut u64, io: &mut Io<'_, _>, am: &Am<'_>| {
        *got += 1;
        io.send_header(am.src(), 1, 0, &[])
    })
    .expect("register");
    ep.barrier().expect("barrier");
    ep
}

fn main() {
    if let Some(c) = skifch_drivers::launch::self_launch(2) {
        std::process::exit(c)
    }
    let any = skifch_drivers::init().expect("job");
    let skifch_drivers::ConcreteJob::Shm(conc) = skifch_drivers::concrete(&any) else {
        panic!("shm only")
    };
    let me = any.rank();
    let rounds: usize = std::env::args().nth(1).map_or(5, |s| s.parse().unwrap());
    let pc: u16 = std::env::var("PC").map_or(0, |v| v.parse().unwrap());
    let pa: u16 = std::env::var("PA").map_or(1, |v| v.parse().unwrap());
    let ch_c = conc.open(pc as u32).expect("port c");
    let ch_a = any.open(pa as u32).expect("port a");
    let mut ep_c = endpoint(
        skifch::Driver::open_port(conc.driver(), 2).unwrap(),
        conc.max_message(),
    );
    let mut ep_a = endpoint(
        skifch::Driver::open_port(any.driver(), 3).unwrap(),
        any.max_message(),
    );
    for r in 0..rounds {
        if let Ok(m) = std::env::var("ONLY") {
            // One kind only (instruction counts under callgrind).
            let t = match m.as_str() {
                "rec-a" => rec(&ch_a, me, pa),
                "rec-c" => rec(&ch_c, me, pc),
                "raw-a" => raw(&ch_a, me, pa),
                "pro-in-a" => am(&mut ep_a, me, true),
                _ => am(&mut ep_c, me, true),
            };
            if me == 0 {
                println!("round {r}: {m} {t}");
            }
            continue;
        }
        let a = raw(&ch_c, me, pc);
        let b = raw(&ch_a, me, pa);
        let e = rec(&ch_c, me, pc);
        let f = rec(&ch_a, me, pa);
        let c = am(&mut ep_c, me, false);
        let d = am(&mut ep_a, me, false);
        let g = am(&mut ep_c, me, true);
        let h = am(&mut ep_a, me, true);
        ep_c.barrier().unwrap();
        if me == 0 {
            println!("round {r}: round trip median: raw-concrete {a} raw-any {b} rec-concrete {e} rec-any {f} proto-concrete {c} proto-any {d} proto-in-c {g} proto-in-a {h}");
        }
    }
}
