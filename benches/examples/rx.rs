//! Instruction-count probe of each side alone (for `valgrind --tool=callgrind`): one rank
//! fills its own lane with `batch` `size`-byte messages, then drains them, `rounds` times.
//! `fill`/`drain` are the bare channel calls (send; receive, check length and checksum in
//! place, complete); `tool_fill`/`tool_drain` are the MsgRate tool's own loops
//! (`msgrate::send_msg`, `msgrate::Inbox::take`).
//! `valgrind --tool=callgrind target/release/examples/rx 8 1000 200` then
//! `callgrind_annotate --inclusive=yes`: each function ran `batch × rounds` messages.
use std::io::IoSlice;

use skifch::{Channel, Error, NetAddr, Port};
use skifch_benches::check::sum64_whole;
use skifch_benches::msgrate::{send_msg, Inbox};

fn main() {
    let arg = |i: usize, d: usize| std::env::args().nth(i).map_or(d, |s| s.parse().unwrap());
    let (size, batch, rounds) = (arg(1, 8), arg(2, 1000), arg(3, 200));
    match skifch_drivers::init_concrete().unwrap() {
        skifch_drivers::ConcreteJob::Shm(job) => {
            let ch = job.open(0).unwrap();
            let msg = vec![7u8; size];
            let expect = sum64_whole(&msg);
            let mut inbox = Inbox::new(1);
            inbox.start(size, expect);
            for _ in 0..rounds {
                fill(&ch, ch.addr(), &msg, batch);
                assert_eq!(drain(&ch, size, expect), batch);
                tool_fill(&ch, ch.addr(), &msg, batch);
                tool_drain(&ch, &mut inbox, batch);
            }
        }
        _ => {
            eprintln!("rx: counts the shm driver's instructions; run it without --driver");
            std::process::exit(2)
        }
    }
}

#[inline(never)]
fn fill<P: Port>(ch: &Channel<P>, to: NetAddr, msg: &[u8], n: usize) {
    for _ in 0..n {
        ch.send(to, &[IoSlice::new(msg)]).unwrap();
    }
}

#[inline(never)]
fn drain<P: Port>(ch: &Channel<P>, size: usize, expect: u64) -> usize {
    let mut got = 0;
    loop {
        let m = match ch.try_recv() {
            Ok(m) => m,
            Err(Error::WouldBlock) => return got,
            Err(e) => panic!("{e}"),
        };
        let p = m.as_contiguous().expect("one segment");
        assert!(p.len() == size && sum64_whole(p) == expect);
        m.complete();
        got += 1;
    }
}

#[inline(never)]
fn tool_fill<P: Port>(ch: &Channel<P>, to: NetAddr, msg: &[u8], n: usize) {
    for _ in 0..n {
        send_msg(ch, to, msg, 1000).unwrap();
    }
}

#[inline(never)]
fn tool_drain<P: Port>(ch: &Channel<P>, inbox: &mut Inbox, n: usize) {
    inbox.take(ch, n as u64, 1000).unwrap();
}
