//! Communication contexts (OpenSHMEM 1.5 §9.5) by handle (the C ABI's `shmem_ctx_t`).
//! Every context of a PE shares the PE's one ordering domain: an operation on any context
//! completes at the next quiet of any context, which is a valid implementation of the
//! standard's rules (a context only narrows what a quiet must complete). So a context is
//! a live handle, and operations on it are the world's.

use std::sync::Mutex;

use skifch::Port;

use crate::{Error, World};

/// `SHMEM_CTX_DEFAULT`'s handle.
pub const CTX_DEFAULT: usize = 1;

/// The contexts of a PE: handle `h` is slot `h - 1`, live or destroyed.
pub struct Contexts {
    live: Mutex<Vec<bool>>,
}

impl Default for Contexts {
    fn default() -> Self {
        Contexts {
            live: Mutex::new(vec![true]),
        }
    }
}

impl Contexts {
    fn live(&self) -> std::sync::MutexGuard<'_, Vec<bool>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new context (`shmem_ctx_create`, `shmem_team_create_ctx`); its handle.
    pub fn create(&self) -> usize {
        let mut l = self.live();
        l.push(true);
        l.len()
    }

    /// Whether `h` is a live context.
    pub fn is_live(&self, h: usize) -> bool {
        h == CTX_DEFAULT || (h >= 1 && self.live().get(h - 1) == Some(&true))
    }

    /// `h`, or the error of a handle that names no live context.
    pub fn check(&self, h: usize) -> Result<usize, Error> {
        if self.is_live(h) {
            Ok(h)
        } else {
            Err(Error::BadArgument(
                "invalid or destroyed shmem_ctx_t".into(),
            ))
        }
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
            *c = false;
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
        let h = c.create();
        assert_eq!(h, 2);
        assert!(c.is_live(h) && c.check(3).is_err());
    }
}
