//! Requests: completion, waiting with progress (and pushing cleared rendezvous data),
//! cancel, probe.

use skifch::Port;

use super::protocol::{H_CANCEL, H_DATA};
use super::state::{Req, ReqKind};
use super::{Core, Envelope, ReqId, State, Status, PROC_NULL, SENT};
use crate::error::{Error, Result};

impl<P: Port> Core<P> {
    /// A completed request that needs no communication (PROC_NULL sends, …).
    pub fn done_request(&mut self) -> ReqId {
        self.nothing_request(true, Status::proc_null())
    }

    /// A request with no communication of its own, complete or not.
    pub(super) fn nothing_request(&mut self, done: bool, status: Status) -> ReqId {
        let s = self.st_mut();
        let seq = s.next_seq();
        s.alloc(Req {
            kind: ReqKind::Nothing,
            done,
            freed: false,
            status,
            err: None,
            seq,
        })
    }

    /// A request the program completes itself (`MPI_Grequest_start`, MPI-3.1 §12.2):
    /// pending until [`Core::complete_user`]; waiting on it progresses as usual.
    pub fn user_request(&mut self) -> ReqId {
        self.nothing_request(false, Status::default())
    }

    /// Completes a request of [`Core::user_request`] with `status` (or `err`)
    /// (`MPI_Grequest_complete`); `true` when that released it (freed before).
    pub fn complete_user(&mut self, id: ReqId, status: Status, err: Option<Error>) -> Result<bool> {
        let s = self.st_mut();
        match s.get_mut(id) {
            Some(r) if matches!(r.kind, ReqKind::Nothing) && !r.done => {
                r.status = status;
                r.err = err.map(Box::new);
                r.done = true;
                let freed = r.freed;
                if freed {
                    // MPI_Request_free came first: nobody will wait for it.
                    s.release(id);
                }
                Ok(freed)
            }
            _ => Err(Error::Request(format!(
                "request {id} is not a pending generalized request"
            ))),
        }
    }

    /// `true` if `id` names a live request.
    pub fn is_request(&self, id: ReqId) -> bool {
        self.st().is_request(id)
    }

    /// `true` if the request is complete (without releasing it).
    pub fn is_done(&self, id: ReqId) -> bool {
        self.st().is_done(id)
    }

    /// `MPI_Test` on one request: `None` while pending; when complete, releases the
    /// request and returns its status, or its error.
    pub fn test(&mut self, id: ReqId) -> Result<Option<Status>> {
        if id == SENT {
            return Ok(Some(Status::default()));
        }
        let s = self.st_mut();
        match s.get(id) {
            None => Err(Error::Request(format!("request {id} does not exist"))),
            Some(r) if !r.done => Ok(None),
            Some(_) => s.finish(id).map(Some),
        }
    }

    /// `MPI_Request_get_status`: one round of progress, then the status of a complete
    /// request (or its error) without releasing it; `None` while pending.
    pub fn peek(&mut self, id: ReqId) -> Result<Option<Status>> {
        if id == SENT {
            return Ok(Some(Status::default()));
        }
        if !self.is_done(id) {
            self.progress()?;
        }
        let s = self.st();
        match s.get(id) {
            None => Err(Error::Request(format!("request {id} does not exist"))),
            Some(r) if !r.done => Ok(None),
            Some(r) => match &r.err {
                Some(e) => Err((**e).clone()),
                None => Ok(Some(r.status)),
            },
        }
    }

    /// `MPI_Wait`: progresses until `id` completes, then as [`Core::test`].
    pub fn wait(&mut self, id: ReqId) -> Result<Status> {
        // Already complete (eager sends, unexpected receives): one lock, no progress.
        if let Some(r) = self.test_done(id) {
            return r;
        }
        self.wait_until(|s| s.is_done(id) || !s.is_request(id))?;
        self.test(id)?
            .ok_or_else(|| Error::Intern("request not complete after wait".into()))
    }

    /// The outcome of `id` if it is complete (releasing it), else `None`.
    pub(super) fn test_done(&mut self, id: ReqId) -> Option<Result<Status>> {
        if id == SENT {
            return Some(Ok(Status::default()));
        }
        let s = self.st_mut();
        if !s.is_done(id) {
            return None;
        }
        Some(s.finish(id))
    }

    /// Progresses until `done(state)`; `PeerLost` and other transport errors end it (and
    /// break the engine).
    pub fn wait_until(&mut self, mut done: impl FnMut(&State) -> bool) -> Result<()> {
        self.check()?;
        loop {
            if done(self.st()) {
                return Ok(());
            }
            if self.push_cleared()? {
                continue;
            }
            // Nonblocking collectives move whatever the program waits for (`sched`).
            if !self.st().colls.is_empty() && self.advance_colls()? {
                continue;
            }
            // Proto's wait: service messages (fixed spin, then sleep on the channel) until
            // ours is done, a rendezvous send may go or a collective's round is complete.
            let r = self.ep.progress_until(
                |ep| {
                    let s = ep.ctx();
                    done(s) || !s.cleared.is_empty() || (!s.colls.is_empty() && s.coll_ready())
                },
                None,
            );
            r.map_err(|e| self.fail(e))?;
            if let Some(e) = self.ep.take_error() {
                return Err(self.fail(e));
            }
        }
    }

    /// Sends the data of one rendezvous send whose CTS came (a proto long message that
    /// lands in the receiver's buffer); `false` if none is waiting.
    pub(super) fn push_cleared(&mut self) -> Result<bool> {
        if self.st().cleared.is_empty() {
            return Ok(false);
        }
        let next = {
            let s = self.st_mut();
            match s.cleared.pop_front() {
                None => None,
                Some((sreq, rreq)) => match s.get_mut(sreq) {
                    Some(Req {
                        kind: ReqKind::Send { buf, dst, .. },
                        ..
                    }) => Some((sreq, rreq, *dst, buf.take())),
                    _ => return Err(Error::Intern(format!("CTS for unknown send {sreq}"))),
                },
            }
        };
        let Some((sreq, rreq, dst, buf)) = next else {
            return Ok(false);
        };
        let data = buf.as_ref().and_then(|b| b.as_contiguous()).unwrap_or(&[]);
        let r = self.ep.send(dst, H_DATA, rreq, &[], data);
        r.map_err(|e| self.fail(e))?;
        drop(buf);
        self.st_mut().complete(sreq);
        Ok(true)
    }

    /// `MPI_Request_free`: the request is released when it completes.
    pub fn request_free(&mut self, id: ReqId) -> Result<()> {
        if id == SENT {
            return Ok(());
        }
        let s = self.st_mut();
        match s.get_mut(id) {
            None => Err(Error::Request(format!("request {id} does not exist"))),
            Some(r) if r.done => {
                s.release(id);
                Ok(())
            }
            Some(r) => {
                r.freed = true;
                Ok(())
            }
        }
    }

    /// `MPI_Cancel`: a receive not yet matched completes as cancelled. A send still
    /// pending (rendezvous or synchronous: an eager one completed as it started) asks its
    /// receiver to take it back; it completes as cancelled when that answer comes, or
    /// normally when it was matched already — either way a wait on it returns whatever the
    /// receiver does next (§3.8.4). Matched receives complete normally.
    pub fn cancel(&mut self, id: ReqId) -> Result<()> {
        if id == SENT {
            return Ok(()); // complete: a cancel has no effect (§3.8.4)
        }
        let s = self.st_mut();
        let Some(r) = s.get(id) else {
            return Err(Error::Request(format!("request {id} does not exist")));
        };
        if let (ReqKind::Send { dst, .. }, false) = (&r.kind, r.done) {
            let dst = *dst;
            let r = self.ep.send(dst, H_CANCEL, id, &[], &[]);
            return r.map_err(|e| self.fail(e));
        }
        if let ReqKind::Recv { env, total: 0, .. } = r.kind {
            if r.done {
                return Ok(());
            }
            let removed = if env.is_exact() {
                s.remove_posted_exact(env, id)
            } else {
                let i = s.posted_wild.iter().position(|&x| x == id);
                i.map(|i| s.posted_wild.remove(i)).is_some()
            };
            if removed {
                s.posted_n -= 1;
                let r = s.get_mut(id).expect("live");
                r.status.cancelled = true;
                s.complete(id);
            }
        }
        Ok(())
    }

    /// `MPI_Iprobe`: the envelope of the first unexpected message matching, after one
    /// round of progress.
    pub fn iprobe(&mut self, env: Envelope) -> Result<Option<Status>> {
        if env.src == PROC_NULL {
            return Ok(Some(Status::proc_null()));
        }
        if let Some(s) = self.st().peek_unexpected(env) {
            return Ok(Some(s));
        }
        self.progress()?;
        Ok(self.st().peek_unexpected(env))
    }

    /// `MPI_Probe`: waits for a matching message and returns its envelope.
    pub fn probe(&mut self, env: Envelope) -> Result<Status> {
        if env.src == PROC_NULL {
            return Ok(Status::proc_null());
        }
        let mut found = None;
        self.wait_until(|s| {
            found = s.peek_unexpected(env);
            found.is_some()
        })?;
        found.ok_or_else(|| Error::Intern("probe ended without a message".into()))
    }
}
