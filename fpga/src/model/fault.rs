//! Faults a test injects into a running machine ([`super::Machine::inject`]).

use crate::regs::Link;

/// A device or network fault (datasheet "Model parameters": which faults to inject).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// The node's next RX completion carries a wrong length: `len + RX_SIZE` of its queue
    /// (capped at `MAX_MSG`), correctly sealed and tagged, so only the driver's
    /// `RxCompletion::validate` (span beyond the ring / released space) can catch it. The
    /// device itself advances by the true span.
    BadCompletionLength,
    /// The cable on this link of the node goes down (both directions: the neighbour's
    /// opposite link too): `LINK_STATE` bit cleared, `ERR_STATUS.LINK_DOWN`, ERROR and
    /// LINK_CHANGE interrupts on both nodes; messages whose route needs it are dropped at
    /// their source with `ERR_STATUS.NO_ROUTE`.
    LinkDown(Link),
    /// The cable comes back: `LINK_STATE` bit set, LINK_CHANGE interrupt on both nodes.
    LinkUp(Link),
    /// `true`: writes to the `TX_TAIL` doorbell are ignored (lost) until `false`.
    StuckDoorbell(bool),
    /// The header of the next packet this node injects is corrupted (one bit flipped after
    /// sealing): the first router that checks it drops it and counts `CNT_PKT_CORRUPT`;
    /// the receiver completes that message CORRUPT (or never sees it if it had one packet).
    CorruptPacket,
}
