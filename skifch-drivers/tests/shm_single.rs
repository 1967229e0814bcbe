//! The shm driver as a 1-rank job (no launcher): self-sends, wrap-around, partial sends.
use skifch::{Error, NetAddr};
use std::io::IoSlice;

#[test]
fn one_rank_job_self_send_wraps_and_splits() {
    std::env::set_var("SKIFCH_LANE_KB", "4");
    let job = skifch_drivers::init().unwrap();
    assert_eq!((job.rank(), job.size()), (0, 1));
    let ch = job.open(0).unwrap();
    let me = ch.addr();
    assert_eq!(me, NetAddr::new(0, 0));
    // Fill and drain repeatedly with odd sizes so records wrap the 4 KiB lane end.
    let mut wrapped = 0;
    for i in 0..2000u32 {
        let len = (i as usize * 37) % 700;
        let data: Vec<u8> = (0..len).map(|k| (k as u32 ^ i) as u8).collect();
        assert_eq!(ch.send(me, &[IoSlice::new(&data)]).unwrap(), len);
        let m = ch.try_recv().unwrap();
        if m.segments().len() == 2 {
            wrapped += 1;
        }
        assert_eq!(m.to_vec(), data);
        assert_eq!(m.src(), me);
    }
    assert!(wrapped > 0, "no message wrapped the lane end");
    // A message larger than the lane goes out as a prefix; a whole-send says it never fits.
    let big = vec![7u8; 10_000];
    let n = ch.send(me, &[IoSlice::new(&big)]).unwrap();
    assert!(n < big.len() && n > 0);
    assert!(matches!(
        ch.send_whole(me, &[IoSlice::new(&big)]),
        Err(Error::MessageTooLarge { .. })
    ));
    assert_eq!(ch.try_recv().unwrap().len(), n);
    assert!(matches!(ch.try_recv(), Err(Error::WouldBlock)));
}
