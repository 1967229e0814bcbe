//! The direct paths (see the module docs, "The direct blocking receive"): a blocking
//! receive that takes the next matching eager message straight from the channel, and the
//! C ABI's byte sends and receives.

use skifch::proto::Take;
use skifch::Port;

use super::protocol::{eager_envelope, send_eager, unenv, H_CTS, H_RTS, H_SYNC};
use super::state::Unex;
use super::{Core, Envelope, Sink, Status, PROC_NULL};
use crate::error::{Error, Result};
use crate::mem::UserBuf;

impl<P: Port> Core<P> {
    /// Blocking receive: an eager message already waiting in the unexpected queue is
    /// copied out without a request; else, when no other receive is posted
    /// (so none can have a prior claim, §3.5), the next matching eager message is copied
    /// straight from the channel into `buf` (`recv_direct`). Otherwise (and for
    /// synchronous or rendezvous messages) as `irecv` + `wait`.
    pub fn recv(&mut self, env: Envelope, mut buf: UserBuf) -> Result<Status> {
        self.check()?;
        if env.src != PROC_NULL && self.st().pending() == 0 {
            // Nothing posted, queued or cleared.
            if let Some(r) = self.recv_direct(env, &mut buf)? {
                return r;
            }
        } else if env.src != PROC_NULL {
            let s = self.st_mut();
            let found = s.find_unexpected(env);
            if let Some(key) = found {
                let q = s.unex.get_mut(&key).expect("found");
                if let Some((
                    _,
                    Unex::Eager {
                        env: m,
                        data,
                        ack: None,
                    },
                )) = q.front()
                {
                    let (src, tag, len) = (m.src, m.tag, data.len());
                    buf.write_packed(0, data.as_slice());
                    q.pop_front();
                    s.unex_n -= 1;
                    let cap = buf.packed_len();
                    if len > cap {
                        return Err(Error::Truncate { len, cap });
                    }
                    return Ok(Status {
                        source: src,
                        tag,
                        error: 0,
                        bytes: len,
                        cancelled: false,
                    });
                }
            }
            // A matching synchronous or rendezvous message waits in the queue: that one is
            // ours, taken by the general path.
            let direct = found.is_none() && s.posted_n == 0 && s.cleared.is_empty();
            if direct {
                if let Some(r) = self.recv_direct(env, &mut buf)? {
                    return r;
                }
            }
        }
        let id = self.irecv(env, buf)?;
        self.wait(id)
    }

    /// The C ABI's blocking send of contiguous bytes: sent at once when it goes eagerly
    /// (`true`); `false` (nothing done) for a message above the eager limit.
    #[inline]
    pub fn try_send_eager(&mut self, env: Envelope, dst: u32, data: &[u8]) -> Result<bool> {
        self.check()?;
        if data.len() > self.eager {
            return Ok(false);
        }
        let r = send_eager(&mut self.ep, env, dst, data);
        r.map_err(|e| self.fail(e))?;
        Ok(true)
    }

    /// The C ABI's blocking receive into contiguous bytes when it can go direct (nothing
    /// posted, queued or cleared, and the next matching message is eager; see
    /// [`Core::recv`]): its status or `MPI_ERR_TRUNCATE`. `None`: nothing was received,
    /// use [`Core::recv`].
    #[inline]
    pub fn try_recv_bytes(&mut self, env: Envelope, buf: &mut [u8]) -> Result<Option<Status>> {
        self.check()?;
        if self.st().pending() != 0 {
            return Ok(None);
        }
        match self.recv_direct(env, buf)? {
            Some(r) => r.map(Some),
            None => Ok(None),
        }
    }

    /// Waits for the next incoming message that concerns a receive of `env`, dispatching the others as usual. A matching eager message is copied from
    /// the channel into `buf` (no queue, no request, no lock): `Some` with its status, or
    /// `MPI_ERR_TRUNCATE`. `None` when something else must be handled first — a matching
    /// synchronous or rendezvous message (now in the unexpected queue), or a CTS whose
    /// data must go out — and the caller continues with the general path.
    ///
    /// Called only while no receive is posted and no unexpected message matches: the
    /// channel is FIFO per pair and handlers run only inside this wait, so the first
    /// matching message to arrive is the one MPI's order gives this receive.
    pub(super) fn recv_direct<S: Sink + ?Sized>(
        &mut self,
        env: Envelope,
        buf: &mut S,
    ) -> Result<Option<Result<Status>>> {
        let mut got = None;
        let r = self.ep.progress_take(
            |am| {
                if let Some(m) = eager_envelope(am) {
                    if !env.accepts(m) {
                        return Take::Pass;
                    }
                    let p = am.payload();
                    buf.put(p.segments());
                    got = Some((m.src, m.tag, p.len()));
                    return Take::Mine;
                }
                match am.handler() {
                    H_SYNC | H_RTS => {
                        if env.accepts(unenv(am.args().first().copied().unwrap_or(0), am.arg())) {
                            Take::PassStop
                        } else {
                            Take::Pass
                        }
                    }
                    H_CTS => Take::PassStop,
                    _ => Take::Pass,
                }
            },
            None,
        );
        r.map_err(|e| self.fail(e))?;
        if let Some(e) = self.ep.take_error() {
            return Err(self.fail(e));
        }
        Ok(got.map(|(source, tag, len)| {
            let cap = buf.cap();
            if len > cap {
                return Err(Error::Truncate { len, cap });
            }
            Ok(Status {
                source,
                tag,
                error: 0,
                bytes: len,
                cancelled: false,
            })
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn byte_sink_copies_every_small_size_and_split() {
        let src: Vec<u8> = (1..=40).collect();
        for n in 0..=40usize {
            for cut in 0..=n {
                for cap in [n, n.saturating_sub(3), n + 5] {
                    let mut out = vec![0u8; cap];
                    out[..].put([&src[..cut], &src[cut..n]]);
                    let k = n.min(cap);
                    assert_eq!(&out[..k], &src[..k], "n {n} cut {cut} cap {cap}");
                    assert!(
                        out[k..].iter().all(|&x| x == 0),
                        "n {n} cut {cut} cap {cap}"
                    );
                }
            }
        }
    }
}
