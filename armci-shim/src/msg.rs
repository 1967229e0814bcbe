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
