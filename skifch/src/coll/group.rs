//! The collective [`Transport`] over active messages: tagged messages between the members
//! of a group, matched by (group id, source, tag) with an unexpected queue; a receive
//! posted before its message arrives gets it straight from the channel's receive memory
//! (long messages chunk by chunk, see [`crate::proto`]).

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};

use super::Transport;
use crate::proto::{Am, Endpoint, Landing, Phase};
use crate::{Error, Port, Result};

/// Handler id of collective traffic (reserved for skifch's layers).
pub(crate) const H_COLL: u8 = 0xF0;

/// (group id, source world rank, tag).
type Key = (u32, u32, u32);

enum Posted {
    /// A receive waits; its buffer.
    Waiting(Landing),
    /// The buffer was given to a long transfer now arriving.
    Landing,
    Done {
        len: u64,
        truncated: bool,
    },
}

/// The collective layer's matching state, part of every [`Endpoint`] (its handler is
/// built in: no installation step, and [`Endpoint::barrier`] runs on it).
#[derive(Default)]
pub(crate) struct CollState {
    /// Messages that came before their receive, in order; `None` while a long one arrives.
    unexpected: HashMap<Key, VecDeque<Option<Vec<u8>>>>,
    posted: HashMap<Key, Posted>,
    /// Posted receives completed so far: a wait looks its own up only after this moved
    /// (a hashed lookup on every poll lengthened the loop that serves AMs while waiting).
    done: u64,
}

/// The first message kept under a key.
enum Front {
    /// Whole, and taken.
    Whole(Vec<u8>),
    /// A long one still arriving (ahead of any other).
    Arriving,
    /// None.
    Nothing,
}

impl CollState {
    /// Takes the first message kept under `key` if it is whole; a key left without
    /// messages leaves no empty queue behind (an empty store then answers without
    /// hashing: `ProtoGroup::try_take`).
    fn take_front(&mut self, key: &Key) -> Front {
        let Some(q) = self.unexpected.get_mut(key) else {
            return Front::Nothing;
        };
        match q.front() {
            Some(Some(_)) => {}
            Some(None) => return Front::Arriving,
            None => {
                self.unexpected.remove(key);
                return Front::Nothing;
            }
        }
        let v = q.pop_front().flatten().unwrap_or_default();
        if q.is_empty() {
            self.unexpected.remove(key);
        }
        Front::Whole(v)
    }

    /// The handler of collective traffic ([`H_COLL`]).
    pub(crate) fn on_message(&mut self, am: &Am<'_>) -> Result<()> {
        let gid = am.args().first().copied().unwrap_or(0) as u32;
        let key = (gid, am.src(), am.arg());
        let st = self;
        let queued = st.unexpected.get(&key).is_some_and(|q| !q.is_empty());
        let waiting = !queued && matches!(st.posted.get(&key), Some(Posted::Waiting(_)));
        match am.phase() {
            Phase::Whole if waiting => {
                if let Some(Posted::Waiting(mut l)) = st.posted.remove(&key) {
                    l.write_segs(0, am.payload().segments());
                    let truncated = l.truncated();
                    st.done += 1;
                    st.posted.insert(
                        key,
                        Posted::Done {
                            len: am.payload().len() as u64,
                            truncated,
                        },
                    );
                }
            }
            Phase::Whole => st
                .unexpected
                .entry(key)
                .or_default()
                .push_back(Some(am.payload().to_vec())),
            Phase::LongStart { .. } if waiting => {
                if let Some(Posted::Waiting(l)) = st.posted.insert(key, Posted::Landing) {
                    am.place(l);
                }
            }
            Phase::LongStart { total } => {
                let len = usize::try_from(total).map_err(|_| {
                    Error::InvalidArgument("collective message too large for memory".into())
                })?;
                st.unexpected.entry(key).or_default().push_back(None);
                am.place(Landing::vec(len));
            }
            Phase::LongDone { total } => {
                let l = am.take_landing();
                if matches!(st.posted.get(&key), Some(Posted::Landing)) {
                    let truncated = l.as_ref().is_none_or(|l| l.truncated());
                    st.done += 1;
                    st.posted.insert(
                        key,
                        Posted::Done {
                            len: total,
                            truncated,
                        },
                    );
                } else if let Some(slot) = st
                    .unexpected
                    .get_mut(&key)
                    .and_then(|q| q.iter_mut().find(|m| m.is_none()))
                {
                    *slot = Some(l.and_then(Landing::into_vec).unwrap_or_default());
                }
            }
        }
        Ok(())
    }
}

/// A group of ranks of an endpoint's job: group id, members, and the tag sequence of its
/// collective calls. It does not hold the endpoint: [`ProtoGroup::on`] lends it one for a
/// call, as the collective [`Transport`] (tagged messages of the endpoint's built-in
/// collective layer), so groups live as long as the library wants (shmem teams) and
/// several groups share one endpoint. Collective calls on one group are made in the same
/// order by every member, one at a time.
pub struct ProtoGroup {
    gid: u32,
    me: usize,
    members: Vec<u32>,
    seq: Cell<u32>,
}

/// A [`ProtoGroup`] on its endpoint for one or more collective calls: the [`Transport`]
/// (the `RefCell` only adapts the transport's `&self` calls to the endpoint's
/// `&mut self`).
pub struct GroupOn<'a, P: Port, C = ()> {
    g: &'a ProtoGroup,
    ep: RefCell<&'a mut Endpoint<P, C>>,
}

enum Recv {
    /// Not matched yet, nothing posted (an earlier long message is still arriving).
    Pending,
    /// Posted; the completion count last seen.
    Posted(u64),
    Done(usize),
}

impl ProtoGroup {
    /// The group of every rank of the job (group id `u32::MAX`).
    pub fn world<P: Port, C>(ep: &Endpoint<P, C>) -> Self {
        ProtoGroup {
            gid: u32::MAX,
            me: ep.rank() as usize,
            members: (0..ep.size()).collect(),
            seq: Cell::new(0),
        }
    }

    /// A group of the given job ranks (member i = `members[i]`; this rank must be one).
    /// `gid` names the group: the same on every member, unique among live groups.
    pub fn new<P: Port, C>(ep: &Endpoint<P, C>, gid: u32, members: Vec<u32>) -> Result<Self> {
        let me = members
            .iter()
            .position(|&m| m == ep.rank())
            .ok_or_else(|| {
                Error::InvalidArgument(
                    format!("collective group {gid}: rank {} is not a member", ep.rank()).into(),
                )
            })?;
        let mut sorted = members.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != members.len() || sorted.last().is_some_and(|&m| m >= ep.size()) {
            return Err(Error::InvalidArgument(
                format!("collective group {gid}: members must be distinct ranks of the job").into(),
            ));
        }
        Ok(ProtoGroup {
            gid,
            me,
            members,
            seq: Cell::new(0),
        })
    }

    /// This group on `ep` (the endpoint it was made for), as the collective transport.
    pub fn on<'a, P: Port, C>(&'a self, ep: &'a mut Endpoint<P, C>) -> GroupOn<'a, P, C> {
        GroupOn {
            g: self,
            ep: RefCell::new(ep),
        }
    }

    /// The group's id.
    pub fn gid(&self) -> u32 {
        self.gid
    }

    /// Job rank of member `i`.
    pub fn member(&self, i: usize) -> u32 {
        self.members[i]
    }

    /// Sends `data` to member `to` under `tag` (at or above 2³¹: tags below are the
    /// blocking algorithms'), for a collective of the caller's that runs as a schedule of
    /// sends and [`ProtoGroup::try_take`]s instead of waiting in a call.
    pub fn send_to<P: Port, C>(
        &self,
        ep: &mut Endpoint<P, C>,
        to: usize,
        tag: u32,
        data: &[u8],
    ) -> Result<()> {
        let (_, dst, _) = self.key(to, tag)?;
        ep.send_reserved(dst, H_COLL, tag, &[self.gid as u64], data)
    }

    /// The next message from member `from` under `tag` if it has arrived whole (kept by
    /// the collective layer until taken; nothing is posted, so it never lands in place).
    pub fn try_take<P: Port, C>(
        &self,
        ep: &mut Endpoint<P, C>,
        from: usize,
        tag: u32,
    ) -> Result<Option<Vec<u8>>> {
        let st = ep.coll_state();
        if st.unexpected.is_empty() {
            return Ok(None); // the usual answer while waiting: no hashing
        }
        match st.take_front(&self.key(from, tag)?) {
            Front::Whole(v) => Ok(Some(v)),
            Front::Arriving | Front::Nothing => Ok(None),
        }
    }

    fn key(&self, from: usize, tag: u32) -> Result<Key> {
        let src = *self.members.get(from).ok_or_else(|| {
            Error::InvalidArgument(format!("no member {from} in group {}", self.gid).into())
        })?;
        Ok((self.gid, src, tag))
    }
}

impl<P: Port, C> GroupOn<'_, P, C> {
    /// Posts or matches a receive into `buf`, sends `sdata` if any, waits for the receive.
    fn exchange(&self, key: Key, buf: &mut [u8], send: Option<(usize, &[u8])>) -> Result<usize> {
        let room = buf.len();
        let ptr = buf.as_ptr();
        let mut dest = Some(Landing::scoped(buf));
        let mut s = Recv::Pending;
        let mut ep = self.ep.borrow_mut();
        let r = (|| {
            step(ep.coll_state(), key, &mut dest, room, &mut s)?;
            if let Some((to, data)) = send {
                let (_, dst, _) = self.g.key(to, key.2)?;
                ep.send_reserved(dst, H_COLL, key.2, &[self.g.gid as u64], data)?;
            }
            let mut err = None;
            ep.progress_until_peer(
                |ep| match step(ep.coll_state(), key, &mut dest, room, &mut s) {
                    Ok(done) => done,
                    Err(e) => {
                        err = Some(e);
                        true
                    }
                },
                None,
                Some(key.1),
            )?;
            match (err, &s) {
                (Some(e), _) => Err(e),
                (None, Recv::Done(n)) => Ok(*n),
                _ => Err(Error::InvalidArgument(
                    "collective receive ended early".into(),
                )),
            }
        })();
        if r.is_err() {
            // The posted buffer must never be written again.
            if let Some(Posted::Landing) = ep.coll_state().posted.remove(&key) {
                ep.forget_landing(ptr);
            }
        }
        r
    }
}

/// One step of a receive into `dest` (`room` bytes): match an unexpected message or post
/// `dest`. The caller's buffer is reached only through `dest` from the start, so no
/// reborrow of it invalidates the pointer that a posted landing writes through.
fn step(
    st: &mut CollState,
    key: Key,
    dest: &mut Option<Landing>,
    room: usize,
    state: &mut Recv,
) -> Result<bool> {
    match state {
        Recv::Done(_) => Ok(true),
        Recv::Posted(seen) if *seen == st.done => Ok(false),
        Recv::Posted(seen) => match st.posted.get(&key) {
            Some(Posted::Done { len, truncated }) => {
                let (len, truncated) = (*len, *truncated);
                st.posted.remove(&key);
                if truncated {
                    return Err(too_long(key, len, room));
                }
                *state = Recv::Done(len as usize);
                Ok(true)
            }
            _ => {
                *seen = st.done;
                Ok(false)
            }
        },
        Recv::Pending => match st.take_front(&key) {
            Front::Whole(v) => {
                if v.len() > room {
                    return Err(too_long(key, v.len() as u64, room));
                }
                if let Some(d) = dest.as_mut() {
                    d.write_segs(0, [&v, &[]]);
                }
                *state = Recv::Done(v.len());
                Ok(true)
            }
            Front::Arriving => Ok(false),
            Front::Nothing => {
                let d = dest.take().unwrap_or_else(Landing::discard);
                st.posted.insert(key, Posted::Waiting(d));
                *state = Recv::Posted(st.done);
                Ok(false)
            }
        },
    }
}

fn too_long(key: Key, len: u64, room: usize) -> Error {
    Error::InvalidArgument(
        format!(
            "collective: rank {} sent {len} bytes into a {room}-byte buffer (mismatched arguments)",
            key.1
        )
        .into(),
    )
}

impl<P: Port, C> Transport for GroupOn<'_, P, C> {
    fn rank(&self) -> usize {
        self.g.me
    }
    fn size(&self) -> usize {
        self.g.members.len()
    }
    fn next_tag(&self) -> u32 {
        let s = self.g.seq.get();
        self.g.seq.set(s.wrapping_add(1) & 0x7fff_ffff);
        s
    }
    fn send(&self, to: usize, tag: u32, data: &[u8]) -> Result<()> {
        let (_, dst, _) = self.g.key(to, tag)?;
        self.ep
            .borrow_mut()
            .send_reserved(dst, H_COLL, tag, &[self.g.gid as u64], data)
    }
    fn recv(&self, from: usize, tag: u32, buf: &mut [u8]) -> Result<usize> {
        let key = self.g.key(from, tag)?;
        self.exchange(key, buf, None)
    }
    fn sendrecv(
        &self,
        to: usize,
        sdata: &[u8],
        from: usize,
        rbuf: &mut [u8],
        tag: u32,
    ) -> Result<usize> {
        // Posted first: the incoming message may land in place while we send.
        let key = self.g.key(from, tag)?;
        self.exchange(key, rbuf, Some((to, sdata)))
    }
}
