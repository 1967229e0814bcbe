//! The message-based path: put, get and atomics as active messages of
//! [`skifch::proto`] on this library's endpoint (port 2), executed by the target PE in its
//! own address space. Used when the driver offers no remote memory access, when a PE
//! cannot open the others' memory, or with `SKIFSHMEM_RMA=off`.
//!
//! ## Handlers (ids 1–5)
//! | id | message | the target |
//! | --- | --- | --- |
//! | [`H_PUT`] | one-way; `arg` segment, `args` \[offset\]; payload = data | copies it in; a long put lands straight in the segment ([`Landing::raw`]) |
//! | [`H_GET`] | request; `arg` segment, `args` \[offset, length\] | replies with the bytes (landing in the caller's buffer) |
//! | [`H_AMO`] | one-way or request; `arg` = op · width · segment, `args` \[offset, a, b\] | applies the atomic; a request gets the old value |
//! | [`H_FLUSH`] | request | replies (after every earlier message of this source) |
//! | [`H_PUTV`] | one-way; payload = records `[segment u8, length u32, offset u64, data]` | applies each put in order |
//!
//! Puts of up to 256 bytes are **aggregated** per target into one `H_PUTV` message of up
//! to 8 KiB, sent when it is full, before any other message to that PE (so per-PE order
//! holds), and before this PE waits for anything (`quiet`, barriers, collectives, gets,
//! fetching atomics, `wait_until`/`test`, lock loops) so a peer waiting for one of them is
//! never stranded by a waiter here. A PE that puts and then computes without calling
//! the library holds its last small puts until its next call (remote completion is only
//! promised by `quiet` anyway).
//!
//! Every offset and length is checked against this PE's segment (a bad one is a handler
//! error, reported by this PE's next library call; nothing is written).
//!
//! ## Completion
//! Puts and non-fetching atomics are one-way. Messages of one source to one target are
//! handled in send order, so [`crate::World::quiet`] sends one `H_FLUSH` request to every
//! PE written since the last quiet and waits for the replies: each reply proves that all
//! earlier puts to that PE are applied. `fence` needs nothing.
//!
//! ## Progress
//! The target serves these messages inside its own library calls (every wait polls) or,
//! with `SKIFSHMEM_PROGRESS_THREAD=1`, on a [`skifch::proto::ProgressThread`].
#![allow(unsafe_code)] // applying requests to this PE's memory through raw pointers

use std::sync::{Arc, OnceLock};

use skifch::proto::{Am, Endpoint, Landing, Phase};
use skifch::rma::{amo_at, Amo};
use skifch::{Error as ChError, Port};

/// Handler id of a put.
pub const H_PUT: u8 = 1;
/// Handler id of a get.
pub const H_GET: u8 = 2;
/// Handler id of an atomic.
pub const H_AMO: u8 = 3;
/// Handler id of a flush (the completion of `quiet`).
pub const H_FLUSH: u8 = 4;
/// Handler id of aggregated small puts.
pub const H_PUTV: u8 = 5;

/// Bytes of a [`H_PUTV`] record header: segment (1), length (4), offset (8).
pub(crate) const PUTV_REC: usize = 13;

/// Appends one put record to an [`H_PUTV`] payload.
pub(crate) fn putv_record(buf: &mut Vec<u8>, seg: u8, off: u64, data: &[u8]) {
    buf.push(seg);
    buf.extend_from_slice(&(data.len() as u32).to_le_bytes());
    buf.extend_from_slice(&off.to_le_bytes());
    buf.extend_from_slice(data);
}

/// Applies the records of an [`H_PUTV`] payload (each checked; a bad one stops the rest).
fn apply_putv(segs: &OnceLock<Segs>, src: u32, mut p: &[u8]) -> Result<(), ChError> {
    while !p.is_empty() {
        if p.len() < PUTV_REC {
            return Err(bad(src, "a truncated put record".into()));
        }
        let seg = u32::from(p[0]);
        let len = u32::from_le_bytes([p[1], p[2], p[3], p[4]]) as usize;
        let mut o = [0u8; 8];
        o.copy_from_slice(&p[5..13]);
        let off = u64::from_le_bytes(o);
        let Some(data) = p.get(PUTV_REC..PUTV_REC + len) else {
            return Err(bad(src, "a put record longer than its message".into()));
        };
        let dst = local(segs, src, seg, off, len as u64)?;
        // SAFETY: `local` checked dst..dst+len lies in this PE's live segment.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst as *mut u8, len) };
        p = &p[PUTV_REC + len..];
    }
    Ok(())
}

/// This PE's local segments as the target of requests: (base address, length); set once
/// the segments exist (before any PE can send a request, see `World::new`).
pub(crate) type Segs = [(usize, usize); 2];

fn bad(src: u32, what: String) -> ChError {
    ChError::InvalidArgument(format!("shmem: PE {src} sent {what}").into())
}

/// Checked local address of `len` bytes at `off` of segment `seg`.
fn local(segs: &OnceLock<Segs>, src: u32, seg: u32, off: u64, len: u64) -> Result<usize, ChError> {
    let r = segs.get().and_then(|s| {
        let &(base, size) = s.get(seg as usize)?;
        let end = off.checked_add(len)?;
        (end <= size as u64).then_some(base + off as usize)
    });
    r.ok_or_else(|| {
        bad(
            src,
            format!("an access of {len} bytes at offset {off:#x} outside its segment {seg}"),
        )
    })
}

/// Atomic operation codes of [`H_AMO`]'s `arg` (bits 0–7; width in bits 8–15, segment in
/// bits 16–23).
pub(crate) fn amo_arg(op: Amo, width: usize, seg: u8) -> (u32, u64, u64) {
    let (c, a, b) = op.encode();
    (
        u32::from(c) | (width as u32) << 8 | u32::from(seg) << 16,
        a,
        b,
    )
}

fn amo_decode(arg: u32, a: u64, b: u64) -> Option<(Amo, usize, u32)> {
    let op = Amo::decode((arg & 0xFF) as u8, a, b)?;
    Some((op, (arg >> 8 & 0xFF) as usize, arg >> 16 & 0xFF))
}

/// Registers the four handlers on `ep`; `segs` is filled in later by the world.
pub(crate) fn install<P: Port>(ep: &Endpoint<P>, segs: Arc<OnceLock<Segs>>) -> skifch::Result<()> {
    let s = segs.clone();
    ep.register(H_PUT, move |_ep: &Endpoint<P>, am: &Am<'_>| {
        let off = am.args().first().copied().unwrap_or(u64::MAX);
        match am.phase() {
            Phase::Whole => {
                let p = am.payload();
                let dst = local(&s, am.src(), am.arg(), off, p.len() as u64)?;
                let mut at = dst;
                for seg in p.segments() {
                    // SAFETY: `local` checked dst..dst+len lies in this PE's live segment;
                    // the program reaches that memory only as one-sided memory.
                    unsafe {
                        std::ptr::copy_nonoverlapping(seg.as_ptr(), at as *mut u8, seg.len())
                    };
                    at += seg.len();
                }
                Ok(())
            }
            Phase::LongStart { total } => {
                let dst = local(&s, am.src(), am.arg(), off, total)?;
                // SAFETY: the checked range of the segment receives this transfer alone
                // (the program must not access a put's destination until it completes).
                am.place(unsafe { Landing::raw(dst as *mut u8, total as usize) });
                Ok(())
            }
            Phase::LongDone { .. } => Ok(()),
        }
    })?;
    let s = segs.clone();
    ep.register(H_GET, move |ep: &Endpoint<P>, am: &Am<'_>| {
        let to = am
            .reply_to()
            .ok_or_else(|| bad(am.src(), "a get without a reply address".into()))?;
        let (off, len) = match am.args() {
            [o, l, ..] => (*o, *l),
            _ => return Err(bad(am.src(), "a get without offset and length".into())),
        };
        let src = match local(&s, am.src(), am.arg(), off, len) {
            Ok(p) => p,
            Err(e) => {
                ep.reply_error(to, &e.to_string())?;
                return Err(e);
            }
        };
        let mut v = vec![0u8; len as usize];
        // SAFETY: checked range of this PE's live segment, copied out by raw pointer (no
        // reference to memory the program may be writing).
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, v.as_mut_ptr(), v.len()) };
        ep.reply(to, 0, &[], &v)
    })?;
    let s = segs.clone();
    ep.register(H_AMO, move |ep: &Endpoint<P>, am: &Am<'_>| {
        let (off, a, b) = match am.args() {
            [o, a, b] => (*o, *a, *b),
            _ => return Err(bad(am.src(), "an atomic without its arguments".into())),
        };
        let checked = amo_decode(am.arg(), a, b)
            .filter(|&(_, w, _)| w == 4 || w == 8)
            .ok_or_else(|| bad(am.src(), format!("a bad atomic code {:#x}", am.arg())))
            .and_then(|(op, w, seg)| {
                let p = local(&s, am.src(), seg, off, w as u64)?;
                if p % w != 0 {
                    return Err(bad(
                        am.src(),
                        format!("a misaligned {w}-byte atomic at offset {off:#x}"),
                    ));
                }
                Ok((op, w, p))
            });
        let (op, w, p) = match (checked, am.reply_to()) {
            (Ok(c), _) => c,
            (Err(e), Some(to)) => {
                ep.reply_error(to, &e.to_string())?;
                return Err(e);
            }
            (Err(e), None) => return Err(e),
        };
        // SAFETY: checked in range and aligned; the location is only accessed atomically
        // or by raw copies.
        let old = unsafe { amo_at(p as *mut u8, w, op) };
        match am.reply_to() {
            Some(to) => ep.reply(to, 0, &[old], &[]),
            None => Ok(()),
        }
    })?;
    let s = segs.clone();
    ep.register(H_PUTV, move |_ep: &Endpoint<P>, am: &Am<'_>| {
        match am.phase() {
            Phase::Whole => match am.payload().as_contiguous() {
                Some(p) => apply_putv(&s, am.src(), p),
                None => apply_putv(&s, am.src(), &am.payload().to_vec()),
            },
            Phase::LongStart { total } => {
                am.place(Landing::vec(total as usize));
                Ok(())
            }
            Phase::LongDone { .. } => match am.take_landing().and_then(Landing::into_vec) {
                Some(v) => apply_putv(&s, am.src(), &v),
                None => Err(bad(am.src(), "aggregated puts without their data".into())),
            },
        }
    })?;
    ep.register(H_FLUSH, |ep: &Endpoint<P>, am: &Am<'_>| {
        match am.reply_to() {
            Some(to) => ep.reply(to, 0, &[], &[]),
            None => Ok(()),
        }
    })?;
    Ok(())
}
