//! Incoming long transfers: after the first message (whose handler chose the landing),
//! each chunk is copied straight from the channel's receive memory into the landing; the
//! last one completes the transfer (the handler runs again with [`Phase::LongDone`], or
//! the request gets its reply).

use std::cell::Cell;

use super::am::{Am, Payload, Phase};
use super::header::Head;
use super::recv::Parts;
use super::{Endpoint, Landing};
use crate::{Error, Port, Result};

pub(super) enum Target {
    /// A handler's long message: call it again when done.
    Am { head: Head, landing: Landing },
    /// The data of a reply to request `idx`.
    Reply { idx: u16, head: Head },
    /// Nobody wants it.
    Discard,
}

pub(super) struct InXfer {
    total: u64,
    got: u64,
    pub(super) target: Target,
}

impl<P: Port, C> Parts<'_, P, C> {
    pub(super) fn start_xfer(
        &mut self,
        src: u32,
        xid: u16,
        total: u64,
        got: u64,
        target: Target,
    ) -> Result<()> {
        let x = InXfer { total, got, target };
        if got >= total {
            return self.finish_xfer(src, x);
        }
        if self.io.inx.insert((src, xid), x).is_some() {
            return Err(Error::Corrupt(
                format!("proto: rank {src} reused transfer id {xid} while it was in progress")
                    .into(),
            ));
        }
        Ok(())
    }

    #[inline(never)]
    pub(super) fn on_chunk(&mut self, src: u32, xid: u16, payload: Payload<'_>) -> Result<()> {
        let io = &mut *self.io;
        let Some(x) = io.inx.get_mut(&(src, xid)) else {
            return Err(Error::Corrupt(
                format!("proto: a chunk of unknown transfer {xid} from rank {src}").into(),
            ));
        };
        let off = x.got as usize;
        match &mut x.target {
            Target::Am { landing, .. } => landing.write_segs(off, payload.segments()),
            Target::Reply { idx, .. } => {
                if let Some(l) = io.reqs[*idx as usize].landing.as_mut() {
                    l.write_segs(off, payload.segments());
                }
            }
            Target::Discard => {}
        }
        x.got += payload.len() as u64;
        if x.got >= x.total {
            let x = io.inx.remove(&(src, xid)).expect("present");
            return self.finish_xfer(src, x);
        }
        Ok(())
    }

    fn finish_xfer(&mut self, src: u32, x: InXfer) -> Result<()> {
        if x.got != x.total {
            return Err(Error::Corrupt(
                format!(
                    "proto: rank {src} sent {} bytes of a {}-byte transfer",
                    x.got, x.total
                )
                .into(),
            ));
        }
        match x.target {
            Target::Am { head, landing } => {
                let am = Am {
                    src,
                    head: &head,
                    payload: &Payload { a: &[], b: &[] },
                    phase: Phase::LongDone { total: x.total },
                    landing: Cell::new(Some(landing)),
                };
                self.invoke(head.handler, &am)
            }
            Target::Reply { idx, head } => {
                self.io.complete_req(src, idx, &head, x.total, None);
                Ok(())
            }
            Target::Discard => Ok(()),
        }
    }
}

impl<P: Port, C> Endpoint<P, C> {
    /// Stops every incoming long transfer that lands at `ptr` from writing there (its
    /// remaining chunks are dropped; its handler still gets `LongDone`, with an empty
    /// landing). For a layer whose wait on caller memory failed.
    pub(crate) fn forget_landing(&mut self, ptr: *const u8) {
        for x in self.io.inx.values_mut() {
            if let Target::Am { landing, .. } = &mut x.target {
                if landing.ptr() == ptr {
                    *landing = Landing::discard();
                }
            }
        }
    }
}
