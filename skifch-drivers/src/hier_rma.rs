//! Remote memory access in a hierarchical job ([`crate::hier`]): the node's ranks map each
//! other's segments (the shm provider), the other ranks reach them by the fabric's
//! transfers (the ofi provider, `FI_RMA`). One [`Rma`] over both, whose windows
//! ([`skifch::rma::MappedWindow`]) reach node peers by loads and stores and the others
//! through [`skifch::rma::RemoteSegment`]s ([`RmaCaps::transfers`]).
//!
//! A segment is the node provider's (shared memory a node peer can map), registered with
//! the fabric too ([`Rma::extend`]); its token is both providers' tokens, and a peer opens
//! the half that fits where it is. With `SKIFCH_ROUTE=fabric` every peer is reached by
//! transfers, as messages are.
#![allow(unsafe_code)] // forwarding `Rma::share_in_place`, an unsafe fn

use std::sync::Arc;

use skifch::rma::{PeerMapping, Rma, RmaCaps, Segment};
use skifch::{Error, Result};

/// The provider of one rank of a hierarchical job (module docs).
pub struct HierRma {
    /// The node's provider (ranks numbered within the node).
    pub(crate) local: Arc<dyn Rma>,
    /// The fabric's (ranks numbered as the job).
    pub(crate) remote: Arc<dyn Rma>,
    /// Job rank → node rank, for the ranks whose segments are mapped.
    pub(crate) to_local: Vec<Option<u16>>,
    pub(crate) rank: u32,
    pub(crate) size: u32,
}

impl HierRma {
    /// `seg` of the node's provider registered with the fabric, with both tokens.
    fn join(&self, seg: Segment) -> Result<Segment> {
        let node = seg.token().to_vec();
        let seg = self.remote.extend(seg)?;
        let mut t = (node.len() as u32).to_le_bytes().to_vec();
        t.extend_from_slice(&node);
        t.extend_from_slice(seg.token());
        Ok(seg.with_token(t))
    }
}

impl Rma for HierRma {
    fn name(&self) -> &'static str {
        "hier"
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn caps(&self) -> RmaCaps {
        RmaCaps {
            load_store: false,
            share_in_place: self.local.caps().share_in_place,
            transfers: true,
            remote_progress: self.remote.caps().remote_progress,
        }
    }
    fn alloc(&self, len: usize) -> Result<Segment> {
        self.join(self.local.alloc(len)?)
    }
    unsafe fn share_in_place(&self, addr: *mut u8, len: usize) -> Result<Segment> {
        // SAFETY: the caller's contract, forwarded.
        let seg = unsafe { self.local.share_in_place(addr, len)? };
        self.join(seg)
    }
    fn open_peer(&self, rank: u32, token: &[u8]) -> Result<PeerMapping> {
        let bad =
            || Error::Corrupt(format!("rank {rank}'s hierarchy segment token is truncated").into());
        let (n, rest) = token.split_first_chunk::<4>().ok_or_else(bad)?;
        let n = u32::from_le_bytes(*n) as usize;
        if rest.len() < n {
            return Err(bad());
        }
        let (node, fabric) = rest.split_at(n);
        match self.to_local.get(rank as usize).copied().flatten() {
            Some(l) => self.local.open_peer(u32::from(l), node),
            None => self.remote.open_peer(rank, fabric),
        }
    }
}
