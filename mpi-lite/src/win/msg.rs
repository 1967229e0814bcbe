//! The origin side of the message path (module docs of [`super`]; the wire is in
//! `served.rs`): every operation is an active message to the target's process, served by
//! its handlers whenever it progresses. Puts and accumulates are one-way (locally
//! complete at return: the data was handed to the channel); gets and the fetching
//! accumulates wait for their reply; a flush or unlock is a request answered after every
//! earlier message of this origin (the channel is FIFO per pair of ranks).

use skifch::proto::{Endpoint, Landing};
use skifch::Port;

use super::served::{H_ACC, H_FENCE, H_FLUSH, H_GACC, H_GET, H_LOCK, H_PUT, H_UNLOCK, OP_CAS};
use super::{LockType, Win};
use crate::comm::Mpi;
use crate::datatype::Basic;
use crate::engine::State;
use crate::error::{Error, Result};

/// `args[0..2]` and the run list of a message (empty for one run).
fn wire(runs: &[(usize, usize, usize)]) -> ([u64; 2], Vec<u8>) {
    if let [(off, _, _)] = runs {
        return ([*off as u64, 0], Vec::new());
    }
    let mut head = Vec::with_capacity(16 * runs.len());
    for &(off, _, len) in runs {
        head.extend_from_slice(&(off as u64).to_le_bytes());
        head.extend_from_slice(&(len as u64).to_le_bytes());
    }
    ([0, runs.len() as u64], head)
}

fn with_head<'a>(head: &[u8], data: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
    if head.is_empty() {
        std::borrow::Cow::Borrowed(data)
    } else {
        std::borrow::Cow::Owned([head, data].concat())
    }
}

impl Win {
    /// World rank of member `r`.
    fn world(&self, r: u32) -> u32 {
        self.comm.world_of(r as usize)
    }

    fn ep<P: Port, T>(
        &self,
        mpi: &Mpi<P>,
        f: impl FnOnce(&mut Endpoint<P, State>) -> skifch::Result<T>,
    ) -> Result<T> {
        mpi.engine().with_ep(|ep| f(ep).map_err(Error::from))
    }

    /// A request to member `r` and its reply's data.
    fn ask<P: Port>(
        &self,
        mpi: &Mpi<P>,
        r: u32,
        h: u8,
        args: &[u64],
        data: &[u8],
        len: usize,
    ) -> Result<Vec<u8>> {
        let dst = self.world(r);
        let id = self.id;
        let r = mpi.engine().with_ep(|ep| {
            let q = ep.request(dst, h, id, args, data, Landing::vec(len))?;
            let rep = ep.wait(q)?;
            Ok(rep.data.unwrap_or_default())
        });
        match r {
            // The target refused an address (a dynamic window): its class, not a transport
            // failure.
            Err(Error::Transport(skifch::Error::InvalidArgument(why)))
                if why.contains("MPI_ERR_RMA_RANGE") =>
            {
                Err(Error::Code {
                    code: crate::error::class::RMA_RANGE,
                    msg: why.to_string(),
                })
            }
            r => r,
        }
    }

    /// A dynamic window's puts and accumulates wait for the target's answer (it validates
    /// every address); other windows' are one-way.
    fn checked(&self) -> bool {
        self.flavor == super::Flavor::Dynamic
    }

    pub(super) fn msg_put<P: Port>(
        &self,
        mpi: &Mpi<P>,
        r: u32,
        runs: &[(usize, usize, usize)],
        data: &[u8],
    ) -> Result<()> {
        let (a, head) = wire(runs);
        let payload = with_head(&head, data);
        if self.checked() {
            return self.ask(mpi, r, H_PUT, &a, &payload, 0).map(|_| ());
        }
        let (dst, id) = (self.world(r), self.id);
        self.ep(mpi, |ep| ep.send(dst, H_PUT, id, &a, &payload))
    }

    pub(super) fn msg_get<P: Port>(
        &self,
        mpi: &Mpi<P>,
        r: u32,
        runs: &[(usize, usize, usize)],
        out: &mut [u8],
    ) -> Result<()> {
        let (a, head) = wire(runs);
        let got = self.ask(
            mpi,
            r,
            H_GET,
            &[a[0], a[1], out.len() as u64],
            &head,
            out.len(),
        )?;
        if got.len() != out.len() {
            return Err(Error::Intern(format!(
                "MPI_Get: {} bytes came back for {}",
                got.len(),
                out.len()
            )));
        }
        out.copy_from_slice(&got);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn msg_update<P: Port>(
        &self,
        mpi: &Mpi<P>,
        r: u32,
        runs: &[(usize, usize, usize)],
        b: Basic,
        op: super::AccOp,
        data: Option<&[u8]>,
        old_out: Option<&mut [u8]>,
        cmp: Option<&[u8]>,
    ) -> Result<()> {
        let total: usize = runs.iter().map(|x| x.2).sum();
        let bi = Basic::ALL.iter().position(|&x| x == b).unwrap_or(0) as u64;
        let code = if cmp.is_some() { OP_CAS } else { op.code() } | bi << 8;
        let (a, head) = wire(runs);
        let zeros;
        let d = match data {
            Some(d) => &d[..total],
            None => {
                zeros = vec![0u8; total];
                &zeros[..]
            }
        };
        let body = match cmp {
            Some(c) => [&head[..], d, &c[..total]].concat(),
            None => with_head(&head, d).into_owned(),
        };
        let args = [a[0], a[1], code];
        match old_out {
            None if self.checked() => self.ask(mpi, r, H_ACC, &args, &body, 0).map(|_| ()),
            None => {
                let (dst, id) = (self.world(r), self.id);
                self.ep(mpi, |ep| ep.send(dst, H_ACC, id, &args, &body))
            }
            Some(out) => {
                let got = self.ask(mpi, r, H_GACC, &args, &body, total)?;
                if got.len() != total {
                    return Err(Error::Intern(format!(
                        "an accumulate fetched {} bytes for {total}",
                        got.len()
                    )));
                }
                out[..total].copy_from_slice(&got);
                Ok(())
            }
        }
    }

    /// Takes member `r`'s lock (waits for the grant).
    pub(super) fn msg_lock<P: Port>(&self, mpi: &Mpi<P>, r: u32, t: LockType) -> Result<()> {
        let shared = u64::from(t == LockType::Shared);
        self.ask(mpi, r, H_LOCK, &[shared], &[], 0).map(|_| ())
    }

    /// Releases member `r`'s lock once every earlier operation there is done.
    pub(super) fn msg_unlock<P: Port>(&self, mpi: &Mpi<P>, r: u32, t: LockType) -> Result<()> {
        let shared = u64::from(t == LockType::Shared);
        self.ask(mpi, r, H_UNLOCK, &[shared], &[], 0).map(|_| ())
    }

    /// Remote completion of every earlier operation to member `r`.
    pub(super) fn msg_flush<P: Port>(&self, mpi: &Mpi<P>, r: u32) -> Result<()> {
        self.ask(mpi, r, H_FLUSH, &[], &[], 0).map(|_| ())
    }

    /// The message part of a fence: tells every member this origin's operations to it are
    /// sent (they are applied before the notice, FIFO), then waits for every member's
    /// notice of fence number `k` (1-based).
    pub(super) fn msg_fence<P: Port>(&self, mpi: &Mpi<P>, k: u64) -> Result<()> {
        let n = self.members.len() as u64;
        let id = self.id;
        for r in 0..n as u32 {
            let dst = self.world(r);
            self.ep(mpi, |ep| ep.send(dst, H_FENCE, id, &[], &[]))?;
        }
        mpi.engine().wait_until(|s| s.rma.fences(id) >= k * n)
    }
}
