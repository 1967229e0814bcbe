//! TX: the descriptor ring and the payload staging ring, shared by every port of the
//! adapter (see the [driver docs](super), "Send").

use std::io::IoSlice;
use std::sync::atomic::Ordering;

use fpga::desc::{self, TxDesc};
use fpga::regs;
use skifch::driver::{partial_prefix, SendMode};
use skifch::{Error, Result};

use super::super::hw::{DmaBuffer, DmaMemory, Hw};

pub(super) struct TxRing<D: DmaMemory> {
    pub(super) ring: DmaBuffer<D>,
    pub(super) stage: DmaBuffer<D>,
    pub(super) wb: DmaBuffer<D>,
    pub(super) entries: u64,
    /// Descriptors written (free-running; `TX_TAIL` is its low 32 bits).
    pub(super) tail: u64,
    /// Descriptors the device has consumed (validated copy of `TX_HEAD`).
    pub(super) head: u64,
    pub(super) stage_bytes: u64,
    /// Staging bytes handed out / reclaimed (free-running).
    pub(super) stage_head: u64,
    pub(super) stage_tail: u64,
    /// Per descriptor slot: `stage_head` after that descriptor (what its consumption frees).
    pub(super) stage_end: Box<[u64]>,
    /// Credits in use per destination `node * ports + port`: bytes (spans) and messages.
    pub(super) used: Vec<(u64, u32)>,
    /// Per destination: its owner closed the port (a port-state notice said so).
    pub(super) closed: Vec<bool>,
    /// Packets the device will have injected once it has sent every descriptor written.
    pub(super) pkts: u64,
    pub(super) max_pkt: u64,
}

/// The TX side's indices, for tests and diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxSnapshot {
    /// Descriptors written (free-running).
    pub tail: u64,
    /// Descriptors known consumed by the device.
    pub head: u64,
    /// Staging bytes handed out (free-running).
    pub stage_head: u64,
    /// Staging bytes reclaimed (free-running).
    pub stage_tail: u64,
}

impl<D: DmaMemory> TxRing<D> {
    /// Start (free-running) of `n` contiguous staging bytes, if they fit now.
    fn stage_fit(&self, n: u64) -> Option<u64> {
        let free = self.stage_bytes - (self.stage_head - self.stage_tail);
        let pos = self.stage_head & (self.stage_bytes - 1);
        let to_end = self.stage_bytes - pos;
        if n <= to_end {
            (n <= free).then_some(self.stage_head)
        } else {
            (to_end + n <= free).then_some(self.stage_head + to_end)
        }
    }

    /// The largest `n` that [`TxRing::stage_fit`] accepts now.
    fn stage_room(&self) -> u64 {
        let free = self.stage_bytes - (self.stage_head - self.stage_tail);
        let to_end = self.stage_bytes - (self.stage_head & (self.stage_bytes - 1));
        free.min(to_end).max(free.saturating_sub(to_end))
    }

    /// Advances `head` from the write-back word (or the `TX_HEAD` register when `deep`),
    /// validated: the device cannot have consumed descriptors that were never written.
    pub(super) fn reclaim<H: Hw>(&mut self, hw: &H, deep: bool) -> Result<()> {
        let mut v = self.wb.load64(0, Ordering::Acquire)? as u32;
        if deep && v == self.head as u32 {
            v = hw.read32(regs::TX_HEAD as usize)?;
        }
        let ahead = v.wrapping_sub(self.head as u32) as u64;
        let behind = (self.head as u32).wrapping_sub(v) as u64;
        if behind <= self.entries && ahead > self.tail - self.head {
            // A write-back older than a register read already taken (the device writes
            // the register first, then the write-back word): nothing new.
            return Ok(());
        }
        if ahead > self.tail - self.head {
            return Err(Error::Corrupt(
                format!(
                    "fpga adapter: TX_HEAD {v} is beyond the descriptors written (head {}, tail {})",
                    self.head, self.tail
                )
                .into(),
            ));
        }
        if ahead > 0 {
            self.head += ahead;
            let end = self.stage_end[((self.head - 1) & (self.entries - 1)) as usize];
            self.stage_tail = self.stage_tail.max(end);
        }
        Ok(())
    }

    /// The ring is full: rings the doorbell again with the same tail (harmless for a
    /// device that saw it; recovers from a doorbell write the device lost) and reports
    /// back-pressure.
    #[cold]
    fn kick<H: Hw>(&self, hw: &H) -> Error {
        let _ = hw.write32(regs::TX_TAIL as usize, self.tail as u32);
        Error::WouldBlock
    }

    pub(super) fn send<H: Hw>(
        &mut self,
        hw: &H,
        dst: u32,
        src_port: u16,
        iov: &[IoSlice<'_>],
        want: usize,
        mode: SendMode,
    ) -> Result<usize> {
        if self.tail - self.head >= self.entries {
            self.reclaim(hw, true)?;
            if self.tail - self.head >= self.entries {
                return Err(self.kick(hw));
            }
        }
        let index = self.tail;
        let slot = (index & (self.entries - 1)) as usize;
        let (d, n) = if want <= desc::INLINE_MAX {
            let mut b = [0u8; desc::INLINE_MAX];
            gather(iov, &mut b[..want]);
            let d = TxDesc::new_inline(&b[..want], dst, src_port, 0, index);
            (d, want)
        } else {
            let rounded = |n: usize| (n as u64).next_multiple_of(8);
            let mut start = self.stage_fit(rounded(want));
            if start.is_none() {
                self.reclaim(hw, true)?;
                start = self.stage_fit(rounded(want));
            }
            let (start, n) = match start {
                Some(s) => (s, want),
                None => {
                    let room = (self.stage_room() & !7) as usize;
                    let Some(room) = partial_prefix(mode, room, want, self.stage_bytes as usize)
                    else {
                        return Err(self.kick(hw));
                    };
                    match self.stage_fit(room as u64) {
                        Some(s) => (s, room),
                        None => return Err(self.kick(hw)),
                    }
                }
            };
            let off = (start & (self.stage_bytes - 1)) as usize;
            scatter(&self.stage, off, iov, n)?;
            self.stage_head = start + rounded(n);
            let d = TxDesc::new(
                self.stage.iova() + off as u64,
                n as u32,
                dst,
                src_port,
                0,
                index,
            );
            (d, n)
        };
        let d = d.map_err(|e| Error::InvalidArgument(format!("TX descriptor: {e}").into()))?;
        let mut bytes = [0u8; TxDesc::SIZE];
        d.emit(&mut bytes)
            .map_err(|e| Error::InvalidArgument(format!("TX descriptor: {e}").into()))?;
        self.ring.write(slot * TxDesc::SIZE, &bytes)?;
        self.stage_end[slot] = self.stage_head;
        self.tail += 1;
        self.pkts += (n as u64).div_ceil(self.max_pkt).max(1);
        // The doorbell: ordered after the descriptor and payload stores (`Mmio::write32`).
        hw.write32(regs::TX_TAIL as usize, self.tail as u32)?;
        Ok(n)
    }
}

/// Copies the first `out.len()` bytes of `iov` into `out`.
fn gather(iov: &[IoSlice<'_>], out: &mut [u8]) {
    let mut at = 0;
    for s in iov {
        if at == out.len() {
            break;
        }
        let k = s.len().min(out.len() - at);
        out[at..at + k].copy_from_slice(&s[..k]);
        at += k;
    }
}

/// Copies the first `n` bytes of `iov` into `buf` at `off` (atomic stores).
fn scatter<D: DmaMemory>(
    buf: &DmaBuffer<D>,
    off: usize,
    iov: &[IoSlice<'_>],
    n: usize,
) -> Result<()> {
    let mut at = 0;
    for s in iov {
        if at == n {
            break;
        }
        let k = s.len().min(n - at);
        buf.write(off + at, &s[..k])?;
        at += k;
    }
    Ok(())
}
