//! Negotiated payload on the lanes ([`skifch::Port::reserve`] / `publish`): a message written
//! in place in the receiver's lane arrives as written, shortened to what was published;
//! other sends to that receiver wait behind the reservation (per-pair order) while sends
//! to others go on; room that would wrap the lane end is refused (`None`: copy instead),
//! as is a second reservation or one larger than any message.
use std::io::IoSlice;

use skifch::{Error, NetAddr};
use skifch_drivers::inproc;
use skifch_drivers::shm::Params;

/// A one-rank in-process job with two ports and 4 KiB lanes.
fn one_rank_two_ports() -> inproc::InprocJob {
    let params = Params {
        nranks: 1,
        nports: 2,
        lane_bytes: 4096,
    };
    inproc::job(params).unwrap().remove(0)
}

#[test]
fn a_reserved_message_is_written_in_place_and_keeps_its_order() {
    let params = Params {
        nranks: 1,
        nports: 3,
        lane_bytes: 4096,
    };
    let job = inproc::job(params).unwrap().remove(0);
    let (a, b, c) = (
        job.open(0).unwrap(),
        job.open(1).unwrap(),
        job.open(2).unwrap(),
    );
    let (to_b, to_c) = (b.addr(), c.addr());
    let mut wrapped_refusals = 0;
    for round in 0..400u32 {
        let max = 40 + (round as usize * 53) % 900;
        let r = match a.reserve(to_b, max).unwrap() {
            Some(r) => r,
            None => {
                // The room would wrap the lane end: the message goes as a copy.
                wrapped_refusals += 1;
                a.send_whole(to_b, &[IoSlice::new(&[9u8; 8])]).unwrap();
                assert_eq!(b.try_recv().unwrap().to_vec(), [9u8; 8]);
                continue;
            }
        };
        assert_eq!(r.max, max);
        assert!(matches!(a.reserve(to_c, 8), Err(Error::InvalidArgument(_))));
        let len = max - (round as usize % 40);
        for k in 0..len {
            // SAFETY: `k < len <= r.max`: the reserved room, written before publishing.
            unsafe { r.ptr.add(k).write((k as u32 ^ round) as u8) };
        }
        // Behind the reservation, another message to the same receiver waits; one to
        // another receiver does not.
        let after = round.to_le_bytes();
        assert!(matches!(
            a.send_whole(to_b, &[IoSlice::new(&after)]),
            Err(Error::WouldBlock)
        ));
        a.send_whole(to_c, &[IoSlice::new(&after)]).unwrap();
        assert!(
            b.try_recv().is_err(),
            "nothing is visible before publishing"
        );
        // SAFETY: this channel's reservation, published once, `len <= max`.
        unsafe { a.publish(r, len) };
        a.send_whole(to_b, &[IoSlice::new(&after)]).unwrap();
        let m = b.try_recv().unwrap();
        let want: Vec<u8> = (0..len).map(|k| (k as u32 ^ round) as u8).collect();
        assert_eq!(m.to_vec(), want, "round {round}");
        assert_eq!(m.src(), a.addr());
        drop(m);
        assert_eq!(b.try_recv().unwrap().to_vec(), after);
        assert_eq!(c.try_recv().unwrap().to_vec(), after);
    }
    assert!(wrapped_refusals > 0, "no reservation met the lane end");
    assert!(matches!(
        a.reserve(to_b, 1 << 20),
        Err(Error::MessageTooLarge { .. })
    ));
    assert!(matches!(
        a.reserve(NetAddr::new(0, 7), 8),
        Err(Error::Unreachable { .. })
    ));
}

#[test]
fn a_reservation_waits_for_room() {
    let job = one_rank_two_ports();
    let (a, b) = (job.open(0).unwrap(), job.open(1).unwrap());
    // Fill the lane; the reservation finds no room until the receiver completes.
    let mut sent = 0;
    while a.send_whole(b.addr(), &[IoSlice::new(&[1u8; 256])]).is_ok() {
        sent += 1;
    }
    // Full: no room (or, at the lane end, room that would wrap).
    assert!(matches!(
        a.reserve(b.addr(), 256),
        Err(Error::WouldBlock) | Ok(None)
    ));
    for _ in 0..sent {
        assert_eq!(b.try_recv().unwrap().to_vec(), [1u8; 256]);
    }
    // Completed memory is reclaimed once the receiver publishes its tail (found empty).
    assert!(b.try_recv().is_err());
    let r = loop {
        match a.reserve(b.addr(), 256).unwrap() {
            Some(r) => break r,
            None => a.send_whole(b.addr(), &[IoSlice::new(&[2u8; 8])]).unwrap(),
        }
    };
    // SAFETY: the reserved room, 256 bytes, published once.
    unsafe {
        std::ptr::write_bytes(r.ptr, 5, 256);
        a.publish(r, 256);
    }
    let got = loop {
        let m = b.try_recv().unwrap().to_vec();
        if m != [2u8; 8] {
            break m;
        }
    };
    assert_eq!(got, [5u8; 256]);
}

/// The protocol layer's negotiated payload (`proto::Endpoint::prepare`/`commit`) between
/// two ranks: the handler sees the header's argument and words and the payload written in
/// place; then a copy-path message to the same rank arrives after it.
#[test]
fn proto_prepare_and_commit_between_two_ranks() {
    use skifch::proto::{Am, Endpoint, Io};
    const H: u8 = 3;
    let params = Params {
        nranks: 2,
        nports: 2,
        lane_bytes: 1 << 16,
    };
    let out = inproc::run_with(params, |job| {
        let mut ep = Endpoint::open_with(&job, 1, Vec::<(u32, Vec<u64>, Vec<u8>)>::new())?;
        fn h<P: skifch::Port>(
            got: &mut Vec<(u32, Vec<u64>, Vec<u8>)>,
            _: &mut Io<'_, P>,
            am: &Am<'_>,
        ) -> skifch::Result<()> {
            got.push((am.arg(), am.args().to_vec(), am.payload().to_vec()));
            Ok(())
        }
        ep.register(H, h)?;
        ep.barrier()?;
        let peer = 1 - job.rank();
        let mut prepared = 0;
        for i in 0..200u32 {
            let nargs = (i % 4) as usize;
            let len = (i as usize * 29) % 3000;
            match ep.prepare(peer, H, nargs, len + 7, false)? {
                Some(p) => {
                    assert!(p.max() >= len + 7);
                    for k in 0..len {
                        // SAFETY: `k < len < p.max()`: the prepared payload room.
                        unsafe { p.payload().add(k).write((k as u32 + i) as u8) };
                    }
                    ep.commit(p, i, &[1, 2, 3], len);
                    prepared += 1;
                }
                None => {
                    let data: Vec<u8> = (0..len).map(|k| (k as u32 + i) as u8).collect();
                    ep.send(peer, H, i, &[1, 2, 3][..nargs], &data)?;
                }
            }
        }
        ep.barrier()?;
        let got = std::mem::take(ep.ctx_mut());
        assert_eq!(got.len(), 200);
        for (i, (arg, args, data)) in got.into_iter().enumerate() {
            let i = i as u32;
            assert_eq!(arg, i);
            assert_eq!(args, [1, 2, 3][..(i % 4) as usize]);
            let len = (i as usize * 29) % 3000;
            assert!(data
                .iter()
                .enumerate()
                .all(|(k, b)| *b == (k as u32 + i) as u8));
            assert_eq!(data.len(), len);
        }
        Ok(prepared)
    })
    .unwrap();
    assert!(out.iter().all(|&n| n > 100), "prepared in place: {out:?}");
}

/// A reservation written in full and published shorter (GASNet-EX's Prepare for up to
/// `most_payload`, then Commit with less): the bytes written past the published length
/// are the lane's free space again, where the next headers go — they must read "nothing
/// yet" (layout version 5: free space is zero), not the sender's leftovers.
#[test]
fn a_reservation_published_shorter_than_written_leaves_nothing_behind() {
    let job = one_rank_two_ports();
    let (a, b) = (job.open(0).unwrap(), job.open(1).unwrap());
    let to_b = b.addr();
    let mut published = 0;
    for round in 0..300u32 {
        let max = 64 + (round as usize * 37) % 700;
        let Some(r) = a.reserve(to_b, max).unwrap() else {
            a.send_whole(to_b, &[IoSlice::new(&[9u8; 8])]).unwrap();
            assert_eq!(b.try_recv().unwrap().to_vec(), [9u8; 8]);
            continue;
        };
        // Everything reserved is written, with words that are not zero.
        for k in 0..max {
            // SAFETY: `k < r.max`: the reserved room, written before publishing.
            unsafe { r.ptr.add(k).write(0xa5 ^ k as u8) };
        }
        let len = (round as usize * 7) % 48;
        // SAFETY: this channel's reservation, published once, `len <= max`.
        unsafe { a.publish(r, len) };
        published += 1;
        // Short messages whose headers land where the leftovers were.
        for k in 0..4u8 {
            a.send_whole(to_b, &[IoSlice::new(&[k; 8])]).unwrap();
        }
        let m = b.try_recv().unwrap();
        let want: Vec<u8> = (0..len).map(|k| 0xa5 ^ k as u8).collect();
        assert_eq!(m.to_vec(), want, "round {round}");
        drop(m);
        for k in 0..4u8 {
            let m = b
                .try_recv()
                .unwrap_or_else(|e| panic!("round {round}, message {k}: {e}"));
            assert_eq!(m.to_vec(), [k; 8], "round {round}");
        }
        // The word after the last record: free space, "nothing yet".
        match b.try_recv() {
            Err(Error::WouldBlock) => {}
            Err(e) => panic!("round {round}: {e}"),
            Ok(m) => panic!("round {round}: a message of {} bytes from nowhere", m.len()),
        }
    }
    assert!(published > 100);
}
