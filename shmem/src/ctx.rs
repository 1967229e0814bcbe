//! Communication contexts (OpenSHMEM 1.5 §9.5) by handle (the C ABI's `shmem_ctx_t`).
//! Every context of a PE shares the PE's one ordering domain: an operation on any context
//! completes at the next quiet of any context, which is a valid implementation of the
//! standard's rules (a context only narrows what a quiet must complete). So a context is
//! a live handle and its team (§9.5.2: a context made from a team numbers PEs within the
//! team), and operations on it are the world's.

use std::sync::Mutex;

use skifch::Port;

use crate::team::TEAM_WORLD;
use crate::{Error, Team, World};

/// `SHMEM_CTX_DEFAULT`'s handle.
pub const CTX_DEFAULT: usize = 1;
/// `SHMEM_CTX_INVALID`.
pub const CTX_INVALID: usize = 0;

/// A live context's team: its handle (`shmem_ctx_get_team`) and, for a context made from
/// a created team, the members its PE numbers index (`None`: the world's numbering).
#[derive(Clone, Debug)]
pub struct CtxTeam {
    /// The team handle.
    pub handle: usize,
    /// The team's members, unless it is the world.
    pub members: Option<Team>,
}

/// The contexts of a PE: handle `h` is slot `h - 1`, live (its team) or destroyed.
pub struct Contexts {
    live: Mutex<Vec<Option<CtxTeam>>>,
}

impl Default for Contexts {
    fn default() -> Self {
        Contexts {
            live: Mutex::new(vec![Some(CtxTeam {
                handle: TEAM_WORLD,
                members: None,
            })]),
        }
    }
}

impl Contexts {
    fn live(&self) -> std::sync::MutexGuard<'_, Vec<Option<CtxTeam>>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new context of team `t` (`shmem_ctx_create`: the world; `shmem_team_create_ctx`);
    /// its handle.
    pub fn create(&self, t: CtxTeam) -> usize {
        let mut l = self.live();
        l.push(Some(t));
        l.len()
    }

    /// Whether `h` is a live context.
    pub fn is_live(&self, h: usize) -> bool {
        self.team(h).is_ok()
    }

    /// `h`, or the error of a handle that names no live context.
    pub fn check(&self, h: usize) -> Result<usize, Error> {
        self.team(h).map(|_| h)
    }

    /// The team of live context `h`.
    pub fn team(&self, h: usize) -> Result<CtxTeam, Error> {
        h.checked_sub(1)
            .and_then(|i| self.live().get(i).cloned().flatten())
            .ok_or_else(|| Error::BadArgument("invalid or destroyed shmem_ctx_t".into()))
    }

    /// `shmem_ctx_destroy`: completes the context's operations (a quiet), then ends it.
    /// The default context cannot be destroyed.
    pub fn destroy<P: Port>(&self, w: &World<P>, h: usize) -> Result<(), Error> {
        if h == CTX_DEFAULT {
            return Err(Error::BadArgument(
                "SHMEM_CTX_DEFAULT cannot be destroyed".into(),
            ));
        }
        self.check(h)?;
        w.quiet()?;
        if let Some(c) = self.live().get_mut(h - 1) {
            *c = None;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_check() {
        let c = Contexts::default();
        assert!(c.is_live(CTX_DEFAULT) && !c.is_live(0) && !c.is_live(2));
        let h = c.create(CtxTeam {
            handle: 5,
            members: None,
        });
        assert_eq!(h, 2);
        assert!(c.is_live(h) && c.check(3).is_err());
        assert_eq!(c.team(h).unwrap().handle, 5);
        assert_eq!(c.team(CTX_DEFAULT).unwrap().handle, TEAM_WORLD);
    }
}
