//! Point-to-point synchronization (OpenSHMEM 1.5 §9.11): waiting on and testing this PE's
//! variables that peers update, one at a time or a set (`_all`, `_any`, `_some`, and
//! their `_vector` forms). Every wait serves requests meanwhile (the message path needs
//! this PE's progress for the very puts it waits for) and reports a lost PE instead of
//! hanging.

use std::time::Duration;

use skifch::wait::Backoff;
use skifch::Port;

use crate::{Error, World};

/// The back-off of every wait of this library (variables, sets, locks): 200 busy polls,
/// then `yield` on every poll (2 vCPUs are often shared by more processes than that; a
/// waiting PE gives its CPU to the PE it waits for), a nap only after ~10⁶ empty polls.
pub(crate) fn backoff() -> Backoff {
    Backoff::with(200, 1 << 20, Duration::from_micros(50))
}

/// A comparison of §9.11 (`SHMEM_CMP_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `>`
    Gt,
    /// `<=`
    Le,
    /// `<`
    Lt,
    /// `>=`
    Ge,
}

impl Cmp {
    /// The comparison of shmem.h's code (`SHMEM_CMP_EQ` 0, NE 1, GT 2, LE 3, LT 4, GE 5).
    pub fn from_code(code: i32) -> Option<Cmp> {
        Some(match code {
            0 => Cmp::Eq,
            1 => Cmp::Ne,
            2 => Cmp::Gt,
            3 => Cmp::Le,
            4 => Cmp::Lt,
            5 => Cmp::Ge,
            _ => return None,
        })
    }

    /// Whether `v <self> val` holds for the `width`-byte integers in the low bytes of `v`
    /// and `val`, compared signed or unsigned.
    pub fn holds(self, v: u64, val: u64, width: usize, signed: bool) -> bool {
        use std::cmp::Ordering as O;
        let o = if signed {
            let sh = 64 - 8 * width.clamp(1, 8) as u32;
            (((v << sh) as i64) >> sh).cmp(&(((val << sh) as i64) >> sh))
        } else {
            let m = if width >= 8 {
                u64::MAX
            } else {
                (1u64 << (8 * width)) - 1
            };
            (v & m).cmp(&(val & m))
        };
        match self {
            Cmp::Eq => o == O::Equal,
            Cmp::Ne => o != O::Equal,
            Cmp::Gt => o == O::Greater,
            Cmp::Le => o != O::Greater,
            Cmp::Lt => o == O::Less,
            Cmp::Ge => o != O::Less,
        }
    }
}

/// A variable of this PE that peers update: its address, width (1, 2, 4 or 8 bytes) and
/// signedness. Read only atomically.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Var {
    addr: usize,
    width: usize,
    signed: bool,
}

impl Var {
    /// The `width`-byte variable at local address `addr`; an error unless `addr` is
    /// non-null and aligned and `width` is 1, 2, 4 or 8.
    pub fn new(addr: usize, width: usize, signed: bool) -> Result<Var, Error> {
        if addr == 0 || !matches!(width, 1 | 2 | 4 | 8) || !addr.is_multiple_of(width) {
            return Err(Error::BadArgument(format!(
                "{addr:#x} is not an aligned {width}-byte variable"
            )));
        }
        Ok(Var {
            addr,
            width,
            signed,
        })
    }
    /// The address.
    pub fn addr(&self) -> usize {
        self.addr
    }
    /// The variable `i` elements after this one (an array's element `i`).
    pub fn at(&self, i: usize) -> Var {
        Var {
            addr: self.addr + i * self.width,
            ..*self
        }
    }
}

/// Which members of a set a wait is for (§9.11's `_all`, `_any`, `_some`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Every member satisfies its condition.
    All,
    /// One member does (the lowest index found satisfied is returned).
    Any,
    /// At least one does (every index found satisfied is returned).
    Some,
}

/// One member of a waited set: `var <cmp> value`, reported as `key` (the caller's index).
#[derive(Clone, Copy, Debug)]
pub struct Cond {
    /// The caller's index of this member (the array index in C).
    pub key: usize,
    /// The variable.
    pub var: Var,
    /// The value compared with.
    pub value: u64,
}

impl<P: Port> World<P> {
    /// Waits until `var <cmp> value` (`shmem_wait_until`); returns the value seen.
    pub fn wait_until(&self, var: Var, cmp: Cmp, value: u64) -> Result<u64, Error> {
        self.wait_local(var.addr, var.width, |v| {
            cmp.holds(v, value, var.width, var.signed)
        })
    }

    /// Whether `var <cmp> value` now (`shmem_test`), after one progress sweep.
    pub fn test(&self, var: Var, cmp: Cmp, value: u64) -> Result<bool, Error> {
        self.poll()?;
        Ok(self.holds(&Cond { key: 0, var, value }, cmp))
    }

    fn holds(&self, c: &Cond, cmp: Cmp) -> bool {
        let v = self.load_local(c.var.addr, c.var.width);
        cmp.holds(v, c.value, c.var.width, c.var.signed)
    }

    /// Waits until `set` satisfies `mode` under `cmp` (`shmem_wait_until_all/any/some` and
    /// the `_vector` forms), or with `block == false` tests once (`shmem_test_*`). Returns
    /// the satisfied members' keys (every key for `All`, one for `Any`, at least one for
    /// `Some`); `None` when a test finds the set unsatisfied. An empty set is satisfied
    /// at once, with no keys (§9.11: all → 1, any → `SIZE_MAX`, some → 0). A test makes
    /// one progress sweep first, as [`World::test`] does: on the message path a program
    /// that puts and then loops on a test (`while (!shmem_test_all(…))`, as test suites
    /// do) would otherwise never send its own aggregated puts or serve its peers'.
    pub fn wait_set(
        &self,
        set: &[Cond],
        cmp: Cmp,
        mode: Mode,
        block: bool,
    ) -> Result<Option<Vec<usize>>, Error> {
        let mut b = backoff();
        if !block {
            self.poll()?;
        }
        loop {
            let hit = match mode {
                Mode::All => set
                    .iter()
                    .all(|c| self.holds(c, cmp))
                    .then(|| set.iter().map(|c| c.key).collect()),
                Mode::Any => match set.iter().find(|c| self.holds(c, cmp)) {
                    Some(c) => Some(vec![c.key]),
                    None => set.is_empty().then(Vec::new),
                },
                Mode::Some => {
                    let k: Vec<usize> = set
                        .iter()
                        .filter(|c| self.holds(c, cmp))
                        .map(|c| c.key)
                        .collect();
                    (!k.is_empty() || set.is_empty()).then_some(k)
                }
            };
            if hit.is_some() || !block {
                return Ok(hit);
            }
            self.poll()?;
            b.snooze();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_signed_and_unsigned() {
        assert!(Cmp::Gt.holds(1, 0xFF, 1, true)); // 1 > -1 as i8
        assert!(!Cmp::Gt.holds(1, 0xFF, 1, false));
        assert!(Cmp::Eq.holds(0x1_0000_0005, 5, 4, false)); // only the low 4 bytes count
        assert!(Cmp::Le.holds(3, 3, 8, true) && Cmp::Ge.holds(3, 3, 8, false));
        assert!(Cmp::Lt.holds(u64::MAX, 0, 8, true) && Cmp::Ne.holds(1, 2, 2, false));
        assert_eq!(Cmp::from_code(5), Some(Cmp::Ge));
        assert_eq!(Cmp::from_code(6), None);
        assert!(Var::new(3, 4, false).is_err() && Var::new(8, 3, false).is_err());
        assert_eq!(Var::new(8, 4, true).unwrap().at(2).addr(), 16);
    }
}
