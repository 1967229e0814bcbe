//! Events (`gex_Event_t`) and implicit operations (NBI, access regions): a table of what
//! each outstanding non-blocking operation still waits for. A handle is a slot number
//! offset past the reserved values (`GEX_EVENT_INVALID` 0, `NO_OP` 1, and the input
//! pointers `NOW`/`DEFER`/`GROUP` 1-3), so it never collides with them. The event table is
//! the process's; implicit operations and access regions are per thread.

use skifch::Port;

use crate::engine::{barrier_flags, Gasnet};
use crate::rma::Pending;
use crate::{Error, Result};

/// First handle value.
const BASE: usize = 16;

/// What an event waits for.
#[derive(Debug)]
pub(crate) enum Kind {
    /// Requests of RMA operations.
    Ops(Pending),
    /// A non-blocking barrier of the primordial team (`gex_Coll_BarrierNB`).
    Barrier,
    /// A non-blocking collective's schedule (`crate::nbcoll`), by its slot.
    Coll(usize),
}

/// The event table and the implicit-operation lists.
#[derive(Debug, Default)]
pub struct Events {
    slots: Vec<Option<Kind>>,
    free: Vec<usize>,
}

/// A thread's implicit operations (GASNet's NBI state is per thread: with GASNET_PAR
/// each thread syncs its own).
#[derive(Default)]
struct Nbi {
    /// Implicit puts and gets outside an access region.
    put: Pending,
    get: Pending,
    /// The open access region's operations.
    region: Option<Pending>,
}

thread_local! {
    static NBI: std::cell::RefCell<Nbi> = std::cell::RefCell::new(Nbi::default());
}

/// Which implicit operations a `gex_NBI_Wait`/`Test` covers (`GEX_EC_*`).
pub mod ec {
    /// `GEX_EC_GET`.
    pub const GET: u32 = 1;
    /// `GEX_EC_PUT`.
    pub const PUT: u32 = 2;
    /// `GEX_EC_AM`.
    pub const AM: u32 = 4;
    /// `GEX_EC_LC`.
    pub const LC: u32 = 8;
    /// `GEX_EC_RMW`.
    pub const RMW: u32 = 16;
}

/// Implicit operations outstanding before the oldest are completed (proto has 65536
/// request slots per endpoint).
const NBI_MAX: usize = 4096;

impl<P: Port> Gasnet<P> {
    fn events(&self) -> std::sync::MutexGuard<'_, Events> {
        self.events.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An event for a collective started by [`Gasnet::nbc_start`] (0 when it finished).
    pub(crate) fn coll_event(&self, slot: Option<usize>) -> usize {
        slot.map_or(0, |i| self.new_event(Kind::Coll(i)))
    }

    /// An event for `p` (0, `GEX_EVENT_INVALID`, when nothing is outstanding).
    pub fn event_for(&self, p: Pending) -> usize {
        if p.is_done() {
            return 0;
        }
        self.new_event(Kind::Ops(p))
    }

    pub(crate) fn new_event(&self, k: Kind) -> usize {
        let mut ev = self.events();
        let i = match ev.free.pop() {
            Some(i) => i,
            None => {
                ev.slots.push(None);
                ev.slots.len() - 1
            }
        };
        ev.slots[i] = Some(k);
        i + BASE
    }

    fn take_event(&self, h: usize) -> Result<Kind> {
        let mut ev = self.events();
        let k = h
            .checked_sub(BASE)
            .and_then(|i| ev.slots.get_mut(i).and_then(Option::take));
        match k {
            Some(k) => {
                ev.free.push(h - BASE);
                Ok(k)
            }
            None => Err(Error::BadArgument(format!(
                "event {h:#x} is not an outstanding event (completed already?)"
            ))),
        }
    }

    fn put_back(&self, h: usize, k: Kind) {
        let mut ev = self.events();
        let i = h - BASE;
        ev.free.retain(|&f| f != i);
        ev.slots[i] = Some(k);
    }

    /// Tests event `h` once; true (and the event is gone) when complete. 0 and 1
    /// (`GEX_EVENT_INVALID`, `NO_OP`) are complete.
    pub fn event_test(&self, h: usize) -> Result<bool> {
        if h < BASE {
            return Ok(true);
        }
        match self.take_event(h)? {
            Kind::Ops(mut p) => {
                let done = self.test(&mut p)?;
                if !done {
                    self.put_back(h, Kind::Ops(p));
                }
                Ok(done)
            }
            Kind::Barrier => {
                let done = self
                    .barrier_finish(0, barrier_flags::ANONYMOUS, false)?
                    .is_some();
                if !done {
                    self.put_back(h, Kind::Barrier);
                }
                Ok(done)
            }
            Kind::Coll(i) => {
                let done = self.nbc_test(i)?;
                if !done {
                    self.put_back(h, Kind::Coll(i));
                }
                Ok(done)
            }
        }
    }

    /// Waits for event `h`.
    pub fn event_wait(&self, h: usize) -> Result<()> {
        if h < BASE {
            return Ok(());
        }
        match self.take_event(h)? {
            Kind::Ops(p) => self.complete(p),
            Kind::Barrier => self
                .barrier_finish(0, barrier_flags::ANONYMOUS, true)
                .map(|_| ()),
            Kind::Coll(i) => {
                // The library's wait back-off (hot polls, then it yields early), reset by
                // every message served and step run.
                let mut idle = crate::engine::wait_backoff();
                loop {
                    match self.nbc_step(i)? {
                        (true, _) => return Ok(()),
                        (false, did) => self.idle_step(did, &mut idle)?,
                    }
                }
            }
        }
    }

    /// Records an implicit operation: in this thread's open access region, else in its
    /// NBI list of that kind (completing the oldest when the list is long).
    pub fn nbi_add(&self, p: Pending, is_put: bool) -> Result<()> {
        if p.is_done() {
            return Ok(());
        }
        let old = NBI.with(|n| {
            let mut n = n.borrow_mut();
            if let Some(r) = n.region.as_mut() {
                r.0.extend(p.0);
                return Pending::default();
            }
            let l = if is_put { &mut n.put } else { &mut n.get };
            l.0.extend(p.0);
            if l.0.len() > NBI_MAX {
                Pending(l.0.drain(..NBI_MAX / 2).collect())
            } else {
                Pending::default()
            }
        });
        self.complete(old)
    }

    /// Completes (`block`) or tests this thread's implicit operations of the categories
    /// in `mask`.
    pub fn nbi_sync(&self, mask: u32, block: bool) -> Result<bool> {
        let mut all = true;
        for (bit, put) in [(ec::PUT, true), (ec::GET, false)] {
            if mask & bit == 0 {
                continue;
            }
            let mut p = NBI.with(|n| {
                let mut n = n.borrow_mut();
                std::mem::take(if put { &mut n.put } else { &mut n.get })
            });
            if block {
                self.complete(p)?;
            } else if !self.test(&mut p)? {
                all = false;
                NBI.with(|n| {
                    let mut n = n.borrow_mut();
                    let l = if put { &mut n.put } else { &mut n.get };
                    p.0.append(&mut l.0);
                    *l = p;
                });
            }
        }
        Ok(all)
    }

    /// Opens an access region on this thread: its implicit operations until the end
    /// form one event.
    pub fn region_begin(&self) -> Result<()> {
        NBI.with(|n| {
            let mut n = n.borrow_mut();
            if n.region.is_some() {
                return Err(Error::BadArgument(
                    "an access region is already open".into(),
                ));
            }
            n.region = Some(Pending::default());
            Ok(())
        })
    }

    /// Closes this thread's access region; its event.
    pub fn region_end(&self) -> Result<usize> {
        match NBI.with(|n| n.borrow_mut().region.take()) {
            Some(p) => Ok(self.event_for(p)),
            None => Err(Error::BadArgument("no access region is open".into())),
        }
    }
}
