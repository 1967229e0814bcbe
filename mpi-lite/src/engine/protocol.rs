//! The protocol (see the module docs, "Protocols"): mpi-lite's handler ids, how an
//! envelope travels in a proto header, the eager send, and the one handler of every
//! mpi-lite message.

use skifch::proto::{Am, Endpoint, Io, Landing, Phase};
use skifch::Port;

use super::state::{Req, ReqKind, Stash, State, Unex};
use super::Envelope;

/// A reply decided while matching and sent after (through proto's non-blocking send half).
#[derive(Debug, Clone, Copy)]
pub(super) enum Reply {
    Cts { dst: u32, sreq: u32, rreq: u32 },
    Ack { dst: u32, sreq: u32 },
}

// Handler ids on mpi-lite's endpoint.
/// Eager, envelope packed in `arg`: context (8 bits) | source (8) | tag (16).
pub(super) const H_EAGER_S: u8 = 1;
/// Eager: `arg` = tag, `args[0]` = envelope ([`env`]).
pub(super) const H_EAGER: u8 = 2;
/// Synchronous eager: `arg` = tag, `args` = [envelope, send request].
pub(super) const H_SYNC: u8 = 3;
/// Request to send: `arg` = tag, `args` = [envelope, send request, length].
pub(super) const H_RTS: u8 = 4;
/// Clear to send: `arg` = send request, `args[0]` = receive request.
pub(super) const H_CTS: u8 = 5;
/// Rendezvous data for receive request `arg` (a proto long message).
pub(super) const H_DATA: u8 = 6;
/// A synchronous send was matched: `arg` = send request.
pub(super) const H_ACK: u8 = 7;
/// Take back an unmatched send (`MPI_Cancel`, §3.8.4): `arg` = send request.
pub(super) const H_CANCEL: u8 = 8;
/// The answer to [`H_CANCEL`]: `arg` = send request, `args[0]` = 1 if it was taken back
/// (cancelled), 0 if it was matched already (it completes normally).
pub(super) const H_CANCELLED: u8 = 9;

/// Context and source rank in one argument word.
pub(super) fn env_word(e: Envelope) -> u64 {
    e.ctx as u64 | (e.src as u32 as u64) << 16
}

/// The envelope of an argument word from [`env_word`] and a tag.
pub(super) fn unenv(v: u64, tag: u32) -> Envelope {
    Envelope {
        ctx: v as u16,
        src: (v >> 16) as u32 as i32,
        tag: tag as i32,
    }
}

/// Sends a CTS or ACK; never waits (queued behind a full lane).
pub(super) fn send_reply<P: Port>(io: &mut Io<'_, P>, r: Reply) -> skifch::Result<()> {
    match r {
        Reply::Cts { dst, sreq, rreq } => io.send(dst, H_CTS, sreq, &[rreq as u64], &[]),
        Reply::Ack { dst, sreq } => io.send(dst, H_ACK, sreq, &[], &[]),
    }
}

/// Sends an eager message: the envelope packed in the 8-byte header when it fits.
pub(super) fn send_eager<P: Port>(
    ep: &mut Endpoint<P, State>,
    env: Envelope,
    dst: u32,
    data: &[u8],
) -> skifch::Result<()> {
    let Envelope { ctx, src, tag } = env;
    if ctx < 256 && (0..256).contains(&src) && (0..65536).contains(&tag) {
        let a = ctx as u32 | (src as u32) << 8 | (tag as u32) << 16;
        ep.send_short(dst, H_EAGER_S, a, data)
    } else {
        ep.send(dst, H_EAGER, tag as u32, &[env_word(env)], data)
    }
}

/// The envelope (context, source, tag) of an eager message without an ACK (`H_EAGER_S`,
/// `H_EAGER`), else `None`.
#[inline(always)]
pub(super) fn eager_envelope(am: &Am<'_>) -> Option<Envelope> {
    match am.handler() {
        H_EAGER_S => {
            let a = am.arg();
            Some(Envelope {
                ctx: (a & 0xff) as u16,
                src: ((a >> 8) & 0xff) as i32,
                tag: (a >> 16) as i32,
            })
        }
        H_EAGER => Some(unenv(am.args().first().copied().unwrap_or(0), am.arg())),
        _ => None,
    }
}

/// The handler of every mpi-lite message (runs inside proto calls of this rank, with the
/// matching state as the endpoint's context).
pub(super) fn on_message<P: Port>(
    s: &mut State,
    io: &mut Io<'_, P>,
    am: &Am<'_>,
) -> skifch::Result<()> {
    let world = am.src();
    let args = am.args();
    let arg = |i: usize| args.get(i).copied().unwrap_or(0);
    let reply = match am.handler() {
        H_EAGER_S | H_EAGER | H_SYNC => {
            let env = eager_envelope(am).unwrap_or_else(|| unenv(arg(0), am.arg()));
            let ack = (am.handler() == H_SYNC).then_some((world, arg(1) as u32));
            let p = am.payload();
            match s.match_posted(env) {
                Some(id) => {
                    s.fill_eager(id, env, p.len(), |buf| buf.write_segments(p.segments()));
                    ack.map(|(dst, sreq)| Reply::Ack { dst, sreq })
                }
                None => {
                    s.push_unexpected(Unex::Eager {
                        env,
                        data: Stash::new(p.segments()),
                        ack,
                    });
                    None
                }
            }
        }
        H_RTS => {
            let env = unenv(arg(0), am.arg());
            let (sreq, len) = (arg(1) as u32, arg(2) as usize);
            match s.match_posted(env) {
                Some(id) => s.start_rndv(id, env, world, sreq, len),
                None => {
                    s.push_unexpected(Unex::Rts {
                        env,
                        world,
                        sreq,
                        len,
                    });
                    None
                }
            }
        }
        H_CTS => {
            s.cleared.push_back((am.arg(), arg(0) as u32));
            None
        }
        H_DATA => {
            let id = am.arg();
            let Some(Req {
                kind: ReqKind::Recv { buf, .. },
                ..
            }) = s.get_mut(id)
            else {
                return Err(skifch::Error::InvalidArgument(
                    format!("mpi-lite: data for unknown receive {id}").into(),
                ));
            };
            match am.phase() {
                Phase::Whole => {
                    let [a, b] = am.payload().segments();
                    buf.write_packed(0, a);
                    buf.write_packed(a.len(), b);
                    s.complete(id);
                }
                Phase::LongStart { total } => {
                    // Straight into the user's memory when it is one run, else a temporary.
                    let l = buf
                        .landing()
                        .unwrap_or_else(|| Landing::vec(total as usize));
                    am.place(l);
                }
                Phase::LongDone { .. } => {
                    if let Some(v) = am.take_landing().and_then(Landing::into_vec) {
                        buf.write_packed(0, &v);
                    }
                    s.complete(id);
                }
            }
            None
        }
        H_ACK => {
            s.complete(am.arg());
            None
        }
        H_CANCEL => {
            let taken = s.withdraw(world, am.arg());
            return io.send(world, H_CANCELLED, am.arg(), &[taken as u64], &[]);
        }
        H_CANCELLED => {
            if args.first() == Some(&1) {
                s.send_cancelled(am.arg());
            }
            None
        }
        h => {
            return Err(skifch::Error::InvalidArgument(
                format!("mpi-lite: unknown message kind {h} from rank {world}").into(),
            ))
        }
    };
    // From a handler proto never blocks: a reply that does not fit is queued.
    match reply {
        Some(r) => send_reply(io, r),
        None => Ok(()),
    }
}
