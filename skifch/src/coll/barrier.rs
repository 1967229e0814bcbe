//! The channel barrier: the dissemination schedule of [`super::barrier`] straight over a
//! [`Channel`] port reserved for it (used by the MsgRate tool and the conformance suite,
//! which test the channel itself and so must not depend on the protocol layer).

use std::io::IoSlice;

use super::algo::dissemination;
use crate::{Channel, Error, Port, Result};

/// A dissemination barrier among all ranks of a job (⌈log₂ n⌉ rounds of one zero-copy
/// 5-byte message each way).
///
/// # Collective Operation
/// Every rank of the job calls [`Barrier::wait`] the same number of times, each on its
/// channel of the **same port**, reserved for this barrier (any other message arriving on
/// it is an error). A call returns once every rank has entered the same barrier episode;
/// it fails with `PeerLost` if a rank is lost meanwhile.
///
/// ```
/// use skifch::{coll::Barrier, local};
/// local::run(3, |job| {
///     let ch = job.open(1)?;
///     let mut b = Barrier::new(job.rank(), job.size());
///     for _ in 0..10 { b.wait(&ch)?; }
///     Ok(())
/// }).unwrap();
/// ```
pub struct Barrier {
    rank: u32,
    size: u32,
    epoch: u32,
    /// Messages of later rounds/episodes that arrived early: (epoch, round).
    early: Vec<(u32, u8)>,
}

impl Barrier {
    /// A barrier for `rank` of `size`.
    pub fn new(rank: u32, size: u32) -> Self {
        Barrier {
            rank,
            size,
            epoch: 0,
            early: Vec::new(),
        }
    }

    /// Enters the barrier and waits for every rank (see the type docs).
    pub fn wait<P: Port>(&mut self, ch: &Channel<P>) -> Result<()> {
        self.epoch = self.epoch.wrapping_add(1);
        let port = ch.addr().port();
        let (epoch, early) = (self.epoch, &mut self.early);
        dissemination(self.rank as usize, self.size as usize, |round, to, _| {
            let msg = [epoch.to_le_bytes().as_slice(), &[round]].concat();
            // One message, never split: a driver may send any prefix of a Prefix-mode
            // send (obligation 1), and the receiver reads the 5 bytes as one record.
            ch.send_whole_wait(
                crate::NetAddr::new(to as u16, port as u16),
                &[IoSlice::new(&msg)],
            )?;
            let want = (epoch, round);
            if let Some(i) = early.iter().position(|&e| e == want) {
                early.swap_remove(i);
                return Ok(());
            }
            loop {
                let m = ch.recv()?;
                let mut b = [0u8; 5];
                if m.len() != 5 || m.copy_to(&mut b) != 5 {
                    return Err(Error::InvalidArgument(
                        format!(
                            "a {}-byte message from {} arrived on the barrier's port {port}",
                            m.len(),
                            m.src()
                        )
                        .into(),
                    ));
                }
                let got = (u32::from_le_bytes([b[0], b[1], b[2], b[3]]), b[4]);
                if got == want {
                    return Ok(());
                }
                early.push(got);
            }
        })
    }
}
