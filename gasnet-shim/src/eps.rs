//! Several endpoints per client (GASNet-EX specification 0.13 §"Endpoints", the 2020+
//! releases' multi-EP support): `gex_EP_Create` makes endpoint 1, 2, ... of this process,
//! each with its own handler table and bound segment, all on the one `skifch::proto`
//! endpoint of port 4. An AM carries the target endpoint's index and the sender's in its
//! small argument (bits 17-21 and 22-26, [`crate::am`]'s wire format), so the target
//! dispatches on that endpoint's table and the reply goes back to the sender's endpoint;
//! a put or get to another endpoint addresses its segment. A client reaches endpoint
//! `r` of every rank from its endpoint `l` through the team `gex_TM_Pair(l, r)`.
//!
//! Endpoint indices mean the same on every rank when every rank creates its endpoints in
//! the same order (GASNet-EX assigns them in creation order); `gex_EP_PublishBoundSegment`
//! checks that the ranks publish the same indices.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use skifch::Port;

use crate::am::{Entry, EntryRec, HandlerFn, Segs};
use crate::engine::{Gasnet, NewSegment};
use crate::{Error, Result};

/// Most endpoints of one process (`GASNET_MAXEPS`): the wire format's 5 bits.
pub const MAX_EPS: u32 = 32;

const TARGET_SHIFT: u32 = 17;
const SOURCE_SHIFT: u32 = 22;

/// Where an AM or RMA goes: from this process's endpoint `local` to endpoint `remote` of
/// the target rank (both 0 for the primordial endpoint and its teams).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Route {
    /// The sending endpoint's index here.
    pub local: u32,
    /// The target endpoint's index at the target rank.
    pub remote: u32,
}

impl Route {
    /// The primordial endpoint to the primordial endpoint.
    pub const PRIMORDIAL: Route = Route {
        local: 0,
        remote: 0,
    };
    /// Its bits of an AM's small argument.
    #[inline(always)]
    pub fn bits(self) -> u32 {
        self.remote << TARGET_SHIFT | self.local << SOURCE_SHIFT
    }
}

/// The target endpoint of an AM's small argument (or of a token's reply bits).
#[inline(always)]
pub(crate) fn target_ep(meta: u32) -> u32 {
    (meta >> TARGET_SHIFT) & (MAX_EPS - 1)
}

/// The sending endpoint of an AM's small argument.
#[inline(always)]
pub(crate) fn source_ep(meta: u32) -> u32 {
    (meta >> SOURCE_SHIFT) & (MAX_EPS - 1)
}

/// The reply's endpoint bits for a request with small argument `meta`: back to its
/// sender's endpoint, from its target's.
#[inline(always)]
pub(crate) fn swap(meta: u32) -> u32 {
    source_ep(meta) << TARGET_SHIFT | target_ep(meta) << SOURCE_SHIFT
}

/// The handler table slot of an AM's small argument: its target endpoint's table, its
/// handler index.
#[inline(always)]
pub(crate) fn slot(meta: u32) -> usize {
    ((meta >> (TARGET_SHIFT - 8)) & ((MAX_EPS - 1) << 8) | (meta & 0xff)) as usize
}

impl<P: Port> Gasnet<P> {
    /// Makes the next endpoint of this process (`gex_EP_Create`): its index, with an empty
    /// handler table and no segment. Local (not collective).
    pub fn create_ep(&self) -> Result<u32> {
        let mut ep = self.ep()?;
        let idx = self.n_eps.load(Ordering::Acquire);
        if idx >= MAX_EPS {
            return Err(Error::BadArgument(format!(
                "this client already has {MAX_EPS} endpoints (GASNET_MAXEPS)"
            )));
        }
        let ctx = ep.ctx_mut();
        ctx.table.resize_with(256 * (idx as usize + 1), || None);
        ctx.ep_segs.resize_with(idx as usize + 1, || None);
        self.n_eps.store(idx + 1, Ordering::Release);
        Ok(idx)
    }

    /// Endpoints of this process (the primordial one included).
    pub fn ep_count(&self) -> u32 {
        self.n_eps.load(Ordering::Acquire)
    }

    /// `ep` checked against the endpoints made here.
    pub fn check_ep(&self, ep: u32) -> Result<u32> {
        if ep >= self.ep_count() {
            return Err(Error::BadArgument(format!(
                "endpoint index {ep} (this rank has {} endpoints)",
                self.ep_count()
            )));
        }
        Ok(ep)
    }

    /// Every rank's segment of endpoint `ep`, once published.
    #[inline(always)]
    pub fn segs_of(&self, ep: u32) -> Option<&Arc<Segs>> {
        if ep == 0 {
            self.segs.get()
        } else {
            self.ep_segs.get(ep as usize)?.get()
        }
    }

    /// Registers handlers on endpoint `ep` as [`Gasnet::register`] does on the primordial
    /// one.
    pub fn register_on(&self, ep: u32, entries: &[(HandlerFn, EntryRec)]) -> Result<Vec<u8>> {
        self.check_ep(ep)?;
        let mut e = self.ep()?;
        let base = 256 * ep as usize;
        let t = &mut e.ctx_mut().table[base..base + 256];
        let mut out = Vec::with_capacity(entries.len());
        for (f, rec) in entries {
            let idx = if rec.index != 0 {
                rec.index
            } else {
                (1..=255u8)
                    .rev()
                    .find(|&i| t[i as usize].is_none())
                    .ok_or_else(|| Error::BadArgument("all 255 handler indices are taken".into()))?
            };
            if t[idx as usize].is_some() {
                return Err(Error::BadArgument(format!(
                    "handler index {idx} is already registered"
                )));
            }
            let mut rec = *rec;
            rec.index = idx;
            t[idx as usize] = Some(Entry {
                f: *f,
                rec: Box::new(rec),
            });
            out.push(idx);
        }
        Ok(out)
    }

    /// Publishes `s` as the segment of endpoint `ep` on every rank (collective over the
    /// job, as [`Gasnet::publish`]; every rank names the same endpoint index).
    pub fn publish_on(&self, ep: u32, s: NewSegment) -> Result<usize> {
        self.check_ep(ep)?;
        self.publish_segment(ep, s)
    }
}
