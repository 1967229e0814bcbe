//! The message path's handlers (port [`skifch::ports::ARMCI`]): each remote operation is
//! one [`skifch::proto`] request of at most one channel message, executed by the target
//! on its own memory after checking the range against its live allocations ([`Ctx`]),
//! and answered with a reply (the data of a get, the old value of an atomic, or nothing).
//! The initiator checked the range too, against every rank's allocation table, so a
//! rejected request means the two disagree (a protocol error).
//!
//! | handler | `arg` | `args` | payload | reply |
//! |---|---|---|---|---|
//! | [`H_PUT`] | – | addr | data | – |
//! | [`H_GET`] | – | addr, len | – | data |
//! | [`H_ACC`] | type | addr, scale₀, scale₁ | source elements | – |
//! | [`H_AMO`] | width | addr, code, operand | – | old value (8 bytes) |
//! | [`H_PUTS`] | levels | addr | counts, strides ([`Strided::encode_dst`]), packed data | – |
//! | [`H_GETS`] | levels | addr | counts, strides of the remote side | packed data |
//! | [`H_MSG`] | tag | – | the message (one-way; long ones land in a vector) | – |
//! | [`H_PUTV`] | – | pieces | the pieces' list, then their data | – |
//! | [`H_GETV`] | – | pieces | the pieces' list | their data |
//! | [`H_ACCV`] | type | scale₀, scale₁, pieces | the pieces' list, then their source elements | – |
//!
//! The `V` requests gather many small pieces of one transfer (a strided patch larger than
//! one request, a vector transfer) into one message: a list of [`PIECE`]-byte entries
//! (remote address, 8 bytes; length, 4 bytes; little-endian), then the pieces' data in
//! list order. The target checks every piece before it touches any, then applies them in
//! order.
#![allow(unsafe_code)] // the target's own allocations, reached by address

use skifch::proto::{Am, Io, Phase};
use skifch::rma::{amo_at, Amo};
use skifch::{Error as CommError, Port, Result as CommResult};

use crate::acc::{self, AccType};
use crate::strided::Strided;

/// Put.
pub const H_PUT: u8 = 1;
/// Get.
pub const H_GET: u8 = 2;
/// Accumulate.
pub const H_ACC: u8 = 3;
/// Atomic (read-modify-write).
pub const H_AMO: u8 = 4;

/// Strided put of packed data.
pub const H_PUTS: u8 = 6;
/// Strided get, answered with packed data.
pub const H_GETS: u8 = 7;

/// Point-to-point message (`armci_msg_snd`).
pub const H_MSG: u8 = 5;

/// Gathered put: many pieces in one request (module docs).
pub const H_PUTV: u8 = 8;
/// Gathered get, answered with the pieces' data in list order.
pub const H_GETV: u8 = 9;
/// Gathered accumulate.
pub const H_ACCV: u8 = 10;
/// Bytes of one entry of a gathered request's list.
pub const PIECE: usize = 12;

/// Appends the entry of a piece of `len` bytes at remote `addr` to a gathered list.
pub fn push_piece(list: &mut Vec<u8>, addr: usize, len: usize) {
    list.extend_from_slice(&(addr as u64).to_le_bytes());
    list.extend_from_slice(&(len as u32).to_le_bytes());
}

/// The first `n` pieces listed at the start of `data`, each checked inside an
/// allocation (and, for an accumulate of `ty`, whole aligned elements): their local
/// addresses and lengths, and the list's length in bytes.
fn gathered(
    ctx: &Ctx,
    n: u64,
    data: &[u8],
    ty: Option<AccType>,
) -> CommResult<(Vec<(*mut u8, usize)>, usize)> {
    let list = usize::try_from(n)
        .ok()
        .and_then(|n| n.checked_mul(PIECE))
        .filter(|&l| l <= data.len())
        .ok_or_else(|| bad(format!("a list of {n} pieces in {} bytes", data.len())))?;
    let pieces = data[..list]
        .chunks_exact(PIECE)
        .map(|e| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&e[..8]);
            let mut l = [0u8; 4];
            l.copy_from_slice(&e[8..]);
            let (addr, len) = (u64::from_le_bytes(a), u32::from_le_bytes(l) as usize);
            if let Some(t) = ty {
                acc::check(t, addr as usize, len).map_err(|e| bad(e.to_string()))?;
            }
            inside(ctx, addr, len).map(|p| (p, len))
        })
        .collect::<CommResult<Vec<_>>>()?;
    Ok((pieces, list))
}

/// The pieces of a gathered put or accumulate, with their data checked to fill the rest
/// of the payload exactly.
fn gathered_with_data(
    ctx: &Ctx,
    n: u64,
    data: &[u8],
    ty: Option<AccType>,
) -> CommResult<(Vec<(*mut u8, usize)>, usize)> {
    let (pieces, list) = gathered(ctx, n, data, ty)?;
    let total: usize = pieces.iter().map(|p| p.1).sum();
    if total != data.len() - list {
        return Err(bad(format!(
            "{} bytes of data for pieces of {total}",
            data.len() - list
        )));
    }
    Ok((pieces, list))
}

/// The handlers' context.
#[derive(Debug, Default)]
pub struct Ctx {
    /// This rank's live allocations (local address, length).
    pub allocs: Vec<(usize, usize)>,
    /// Point-to-point messages arrived and not yet received, in arrival order.
    pub inbox: std::collections::VecDeque<Letter>,
}

/// A point-to-point message (`armci_msg_snd`), waiting for `armci_msg_rcv`.
#[derive(Debug)]
pub struct Letter {
    /// The sender.
    pub src: u32,
    /// The sender's tag.
    pub tag: u32,
    /// The bytes.
    pub data: Vec<u8>,
}

fn bad(why: String) -> CommError {
    CommError::InvalidArgument(why.into())
}

/// The local address of `len` bytes at `addr` if inside one allocation.
fn inside(ctx: &Ctx, addr: u64, len: usize) -> CommResult<*mut u8> {
    let a = addr as usize;
    ctx.allocs
        .iter()
        .find(|&&(b, l)| a >= b && a.checked_add(len).is_some_and(|e| e <= b + l))
        .map(|_| a as *mut u8)
        .ok_or_else(|| {
            bad(format!(
                "{len} bytes at {a:#x} are not inside an ARMCI allocation here"
            ))
        })
}

/// The request's payload in (at most) two pieces: a channel may hand a message that
/// wraps around its ring as two segments (seen over the fpga-model driver with 4 KiB
/// puts, which hung when such a payload was refused).
fn pieces<'a>(am: &'a Am<'_>) -> CommResult<[&'a [u8]; 2]> {
    match am.phase() {
        Phase::Whole => Ok(am.payload().segments()),
        _ => Err(bad("armci requests fit one message".into())),
    }
}

/// Registers the handlers on `ep`.
pub fn install<P: Port>(ep: &mut skifch::proto::Endpoint<P, Ctx>) -> CommResult<()> {
    ep.register(H_PUT, put)?;
    ep.register(H_GET, get)?;
    ep.register(H_ACC, accumulate)?;
    ep.register(H_AMO, atomic)?;
    ep.register(H_MSG, letter)?;
    ep.register(H_PUTS, put_strided)?;
    ep.register(H_GETS, get_strided)?;
    ep.register(H_PUTV, put_gathered)?;
    ep.register(H_GETV, get_gathered)?;
    ep.register(H_ACCV, acc_gathered)?;
    Ok(())
}

fn reply_to(am: &Am<'_>) -> CommResult<skifch::proto::ReplyTo> {
    am.reply_to()
        .ok_or_else(|| bad("an armci request without a reply slot".into()))
}

fn put<P: Port>(ctx: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> CommResult<()> {
    let to = reply_to(am)?;
    let [a, b] = pieces(am)?;
    match inside(
        ctx,
        am.args().first().copied().unwrap_or(0),
        a.len() + b.len(),
    ) {
        Ok(p) => {
            // SAFETY: `p..p+len` lies in a live allocation of this rank (checked); the
            // two pieces fill it in order.
            unsafe {
                skifch::mem::copy_move(a.as_ptr(), p, a.len());
                skifch::mem::copy_move(b.as_ptr(), p.add(a.len()), b.len());
            }
            io.reply(to, 0, &[], &[])
        }
        Err(e) => io.reply_error(to, &e.to_string()),
    }
}

fn get<P: Port>(ctx: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> CommResult<()> {
    let to = reply_to(am)?;
    let (addr, len) = match am.args() {
        [a, l, ..] => (*a, *l as usize),
        _ => return io.reply_error(to, "a get without address and length"),
    };
    match inside(ctx, addr, len) {
        Ok(p) => {
            // Copied out first: the owner (or, with a progress thread, the application
            // thread) may write the memory meanwhile, so it is never borrowed as a slice.
            let mut out = vec![0u8; len];
            // SAFETY: `p..p+len` lies in a live allocation of this rank (checked).
            unsafe { skifch::mem::copy_move(p, out.as_mut_ptr(), len) };
            io.reply(to, 0, &[], &out)
        }
        Err(e) => io.reply_error(to, &e.to_string()),
    }
}

fn accumulate<P: Port>(ctx: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> CommResult<()> {
    let to = reply_to(am)?;
    let [a, b] = pieces(am)?;
    // An element may straddle the two pieces: join them (rare).
    let joined;
    let data = if b.is_empty() {
        a
    } else {
        joined = [a, b].concat();
        &joined[..]
    };
    let (addr, scale) = match am.args() {
        [a, s0, s1, ..] => (*a, [*s0, *s1]),
        _ => return io.reply_error(to, "an accumulate without address and scale"),
    };
    let r = AccType::from_code(i64::from(am.arg()))
        .and_then(|t| acc::check(t, addr as usize, data.len()).map(|()| t))
        .map_err(|e| bad(e.to_string()))
        .and_then(|t| inside(ctx, addr, data.len()).map(|p| (t, p)));
    match r {
        Ok((t, p)) => {
            // SAFETY: checked: inside an allocation, aligned, whole elements.
            unsafe { acc::apply(t, scale, data.as_ptr(), p, data.len()) };
            io.reply(to, 0, &[], &[])
        }
        Err(e) => io.reply_error(to, &e.to_string()),
    }
}

fn atomic<P: Port>(ctx: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> CommResult<()> {
    let to = reply_to(am)?;
    let width = am.arg() as usize;
    let (addr, op) = match am.args() {
        [a, c, v, ..] => (*a, Amo::decode(*c as u8, *v, 0)),
        _ => return io.reply_error(to, "an atomic without address and operation"),
    };
    let Some(op) = op else {
        return io.reply_error(to, "an unknown atomic operation");
    };
    if (width != 4 && width != 8) || !(addr as usize).is_multiple_of(width) {
        return io.reply_error(to, "an atomic of a bad width or alignment");
    }
    match inside(ctx, addr, width) {
        Ok(p) => {
            // SAFETY: inside an allocation, aligned to its width (checked).
            let old = unsafe { amo_at(p, width, op) };
            io.reply(to, 0, &[], &old.to_le_bytes())
        }
        Err(e) => io.reply_error(to, &e.to_string()),
    }
}

fn letter<P: Port>(ctx: &mut Ctx, _io: &mut Io<'_, P>, am: &Am<'_>) -> CommResult<()> {
    let data = match am.phase() {
        Phase::Whole => am.payload().to_vec(),
        Phase::LongStart { total } => {
            am.place(skifch::proto::Landing::vec(total as usize));
            return Ok(());
        }
        Phase::LongDone { .. } => am
            .take_landing()
            .and_then(skifch::proto::Landing::into_vec)
            .ok_or_else(|| bad("a long message without its data".into()))?,
    };
    ctx.inbox.push_back(Letter {
        src: am.src(),
        tag: am.arg(),
        data,
    });
    Ok(())
}

/// The request's payload as one slice (joined if the channel split it).
fn joined<'a>(am: &'a Am<'_>) -> CommResult<std::borrow::Cow<'a, [u8]>> {
    let [a, b] = pieces(am)?;
    Ok(if b.is_empty() {
        std::borrow::Cow::Borrowed(a)
    } else {
        std::borrow::Cow::Owned([a, b].concat())
    })
}

fn put_strided<P: Port>(ctx: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> CommResult<()> {
    let to = reply_to(am)?;
    let data = joined(am)?;
    let addr = am.args().first().copied().unwrap_or(0);
    let r = Strided::decode_dst(am.arg() as usize, &data)
        .map_err(|e| bad(e.to_string()))
        .and_then(|(d, used)| {
            let packed = &data[used..];
            if packed.len() != d.bytes() {
                return Err(bad(format!(
                    "{} packed bytes for a {}-byte shape",
                    packed.len(),
                    d.bytes()
                )));
            }
            inside(ctx, addr, d.dst_extent()).map(|p| (d, p, used))
        });
    match r {
        Ok((d, p, used)) => {
            let packed = &data[used..];
            let _ = d.for_each(|so, doff, n| {
                // SAFETY: the destination extent lies in a live allocation (checked);
                // `so + n <= packed.len()` (the packed side is dense, sized checked).
                unsafe { skifch::mem::copy_move(packed.as_ptr().add(so), p.add(doff), n) };
                Ok::<(), ()>(())
            });
            io.reply(to, 0, &[], &[])
        }
        Err(e) => io.reply_error(to, &e.to_string()),
    }
}

fn get_strided<P: Port>(ctx: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> CommResult<()> {
    let to = reply_to(am)?;
    let data = joined(am)?;
    let addr = am.args().first().copied().unwrap_or(0);
    // The descriptor's "destination" is the remote side here; pack it densely.
    let r = Strided::decode_dst(am.arg() as usize, &data)
        .map_err(|e| bad(e.to_string()))
        .and_then(|(d, _)| inside(ctx, addr, d.dst_extent()).map(|p| (d, p)));
    match r {
        Ok((d, p)) => {
            let mut out = vec![0u8; d.bytes()];
            let _ = d.for_each(|so, doff, n| {
                // SAFETY: as in `put_strided`, copying the other way.
                unsafe { skifch::mem::copy_move(p.add(doff), out.as_mut_ptr().add(so), n) };
                Ok::<(), ()>(())
            });
            io.reply(to, 0, &[], &out)
        }
        Err(e) => io.reply_error(to, &e.to_string()),
    }
}

fn put_gathered<P: Port>(ctx: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> CommResult<()> {
    let to = reply_to(am)?;
    let data = joined(am)?;
    let n = am.args().first().copied().unwrap_or(0);
    match gathered_with_data(ctx, n, &data, None) {
        Ok((pieces, mut at)) => {
            for (p, len) in pieces {
                // SAFETY: `p..p+len` lies in a live allocation of this rank (checked);
                // `at + len` is within the data (the lengths sum to it, checked).
                unsafe { skifch::mem::copy_move(data.as_ptr().add(at), p, len) };
                at += len;
            }
            io.reply(to, 0, &[], &[])
        }
        Err(e) => io.reply_error(to, &e.to_string()),
    }
}

fn get_gathered<P: Port>(ctx: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> CommResult<()> {
    let to = reply_to(am)?;
    let data = joined(am)?;
    let n = am.args().first().copied().unwrap_or(0);
    match gathered(ctx, n, &data, None) {
        Ok((pieces, _)) => {
            let mut out = Vec::with_capacity(pieces.iter().map(|p| p.1).sum());
            for (p, len) in pieces {
                let at = out.len();
                out.resize(at + len, 0);
                // SAFETY: `p..p+len` lies in a live allocation of this rank (checked);
                // copied out, never borrowed (as in `get`).
                unsafe { skifch::mem::copy_move(p, out.as_mut_ptr().add(at), len) };
            }
            io.reply(to, 0, &[], &out)
        }
        Err(e) => io.reply_error(to, &e.to_string()),
    }
}

fn acc_gathered<P: Port>(ctx: &mut Ctx, io: &mut Io<'_, P>, am: &Am<'_>) -> CommResult<()> {
    let to = reply_to(am)?;
    let data = joined(am)?;
    let (scale, n) = match am.args() {
        [s0, s1, n, ..] => ([*s0, *s1], *n),
        _ => return io.reply_error(to, "a gathered accumulate without scale and count"),
    };
    let r = AccType::from_code(i64::from(am.arg()))
        .map_err(|e| bad(e.to_string()))
        .and_then(|t| gathered_with_data(ctx, n, &data, Some(t)).map(|g| (t, g)));
    match r {
        Ok((t, (pieces, mut at))) => {
            for (p, len) in pieces {
                // SAFETY: checked: inside an allocation, aligned, whole elements; the
                // source elements are within the data.
                unsafe { acc::apply(t, scale, data.as_ptr().add(at), p, len) };
                at += len;
            }
            io.reply(to, 0, &[], &[])
        }
        Err(e) => io.reply_error(to, &e.to_string()),
    }
}
