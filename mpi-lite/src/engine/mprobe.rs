//! Matched probe (MPI-3.1 §3.8.2): `MPI_Mprobe`/`MPI_Improbe` take the first matching
//! message out of the unexpected queue — no other receive or probe can match it any more —
//! and hold it under a message id; `MPI_Mrecv`/`MPI_Imrecv` deliver it to a receive
//! request as a posted receive would have been (an eager payload is copied, a rendezvous
//! RTS is answered with its CTS then). The order of matching is the unexpected queue's,
//! so MPI's non-overtaking rule holds.

use skifch::Port;

use super::protocol::send_reply;
use super::state::Unex;
use super::{Core, Envelope, ReqId, Status};
use crate::error::{Error, Result};
use crate::mem::UserBuf;

/// A message held by a matched probe.
pub type MsgId = u32;

fn status_of(u: &Unex) -> Status {
    let (m, len) = u.envelope();
    Status {
        source: m.src,
        tag: m.tag,
        error: 0,
        bytes: len,
        cancelled: false,
    }
}

impl<P: Port> Core<P> {
    /// Takes the first unexpected message matching `env` (not `PROC_NULL`: the caller's)
    /// and holds it: its status and id.
    pub(super) fn hold(&mut self, env: Envelope) -> Option<(Status, MsgId)> {
        let s = self.st_mut();
        let u = s.take_unexpected(env)?;
        let st = status_of(&u);
        let id = match s.held.iter().position(|m| m.is_none()) {
            Some(i) => {
                s.held[i] = Some(u);
                i
            }
            None => {
                s.held.push(Some(u));
                s.held.len() - 1
            }
        };
        Some((st, id as MsgId))
    }

    /// `MPI_Improbe`: after one round of progress if nothing matches yet.
    pub fn improbe(&mut self, env: Envelope) -> Result<Option<(Status, MsgId)>> {
        self.check()?;
        if let Some(m) = self.hold(env) {
            return Ok(Some(m));
        }
        self.progress()?;
        Ok(self.hold(env))
    }

    /// `MPI_Mprobe`: waits for a matching message.
    pub fn mprobe(&mut self, env: Envelope) -> Result<(Status, MsgId)> {
        self.wait_until(|s| s.find_unexpected(env).is_some())?;
        self.hold(env)
            .ok_or_else(|| Error::Intern("matched probe ended without a message".into()))
    }

    /// `MPI_Imrecv`: a receive request for held message `msg` into `buf` (the message
    /// id is released).
    pub fn imrecv(&mut self, msg: MsgId, buf: UserBuf) -> Result<ReqId> {
        self.check()?;
        let s = self.st_mut();
        let u = s
            .held
            .get_mut(msg as usize)
            .and_then(Option::take)
            .ok_or_else(|| {
                Error::Request(format!("message {msg} does not exist (or was received)"))
            })?;
        let (env, _) = u.envelope();
        let id = s.new_recv(env, buf);
        if let Some(r) = s.deliver_unexpected(id, u) {
            send_reply(&mut self.ep.io(), r).map_err(|e| self.fail(e))?;
        }
        Ok(id)
    }
}
