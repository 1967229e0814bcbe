//! Reduction operations (MPI-3.1 §5.9): the predefined ones (kernels of
//! [`skifch::coll`]) and the user's (`MPI_Op_create`, §5.9.5), both as the
//! [`Reducer`] the collective algorithms combine with. A user operation sees elements laid
//! out as the program has them (`count` elements, `extent` bytes apart), which for the
//! dense types the reductions accept is their packed form too.

use std::fmt;
use std::sync::Arc;

use skifch::coll::{Kernel, Op, Reducer};

use crate::coll::kernel;
use crate::datatype::{Basic, Datatype};
use crate::error::{Error, Result};
use crate::ldouble::{self, Ld};

/// A user function: `f(invec, inoutvec, count)` computes `inoutvec[i] = invec[i] ∘
/// inoutvec[i]` for `count` elements (the C ABI passes the datatype handle itself).
pub type UserFn = Arc<dyn Fn(&[u8], &mut [u8], usize) + Send + Sync>;

/// A reduction operation.
#[derive(Clone)]
pub enum ReduceOp {
    /// `MPI_SUM`, `MPI_MAX`, …
    Predefined(Op),
    /// `MPI_Op_create`'s: the function and whether it commutes (if not, the algorithms
    /// combine in rank order).
    User {
        /// The function.
        f: UserFn,
        /// `commute` of `MPI_Op_create`.
        commutative: bool,
    },
}

impl fmt::Debug for ReduceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReduceOp::Predefined(op) => write!(f, "{op:?}"),
            ReduceOp::User { commutative, .. } => {
                write!(f, "user operation (commutative: {commutative})")
            }
        }
    }
}

impl From<Op> for ReduceOp {
    fn from(op: Op) -> Self {
        ReduceOp::Predefined(op)
    }
}

impl ReduceOp {
    /// `MPI_Op_commutative`.
    pub fn commutative(&self) -> bool {
        match self {
            ReduceOp::Predefined(_) => true,
            ReduceOp::User { commutative, .. } => *commutative,
        }
    }
}

/// A reduction on elements of one datatype, as the algorithms use it.
pub enum Red {
    /// A predefined operation on a predefined element type.
    Kernel(Kernel),
    /// `MPI_SUM` / `MPI_PROD` (`prod`) on the C complex types (`double`: the 16-byte
    /// ones), which `skifch::coll`'s kernels do not know.
    Complex {
        /// `double _Complex` rather than `float _Complex`.
        double: bool,
        /// `MPI_PROD` rather than `MPI_SUM`.
        prod: bool,
    },
    /// A predefined operation on `MPI_LONG_DOUBLE` (`Real`), `MPI_C_LONG_DOUBLE_COMPLEX`
    /// or `MPI_LONG_DOUBLE_INT`, with the x87 unit ([`crate::ldouble`]).
    LongDouble(Op, LdType),
    /// `MPI_MINLOC`/`MPI_MAXLOC` (`max`) on the Fortran pairs of reals, `MPI_2REAL` or
    /// (`double`) `MPI_2DOUBLE_PRECISION` (MPI-3.1 §5.9.4: value, then index, both reals).
    RealPair {
        /// `MPI_MAXLOC` rather than `MPI_MINLOC`.
        max: bool,
        /// 8-byte reals.
        double: bool,
    },
    /// The user's function on elements of `elem` bytes.
    User {
        /// The function.
        f: UserFn,
        /// Whether it commutes.
        commutative: bool,
        /// Bytes per element (the type's extent; its size when `typed`).
        elem: usize,
        /// The elements' type (what [`current_type`] gives the function's queries).
        ty: Datatype,
        /// A derived type whose elements are not one dense run: operands come packed,
        /// and the function gets them in the type's own layout ([`apply_typed`]).
        typed: bool,
    },
}

impl Red {
    /// Whether operands may swap (`a ∘ b == b ∘ a` exactly): every predefined operation
    /// (MPI-3.1 §5.9.2), a user operation created commutative.
    pub fn commutes(&self) -> bool {
        match self {
            Red::User { commutative, .. } => *commutative,
            _ => true,
        }
    }
}

/// The `long double` element types of the reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LdType {
    /// `long double` (16 bytes).
    Real,
    /// `long double _Complex` (32 bytes).
    Complex,
    /// `struct { long double v; int i; }` (32 bytes with padding).
    Pair,
}

fn real_pair(dt: &Datatype, o: Op) -> Option<Result<Red>> {
    let double = match dt.homogeneous()?.0 {
        Basic::TwoReal => false,
        Basic::TwoDoublePrecision => true,
        _ => return None,
    };
    Some(match o {
        Op::MinLoc | Op::MaxLoc => Ok(Red::RealPair {
            max: o == Op::MaxLoc,
            double,
        }),
        _ => Err(Error::Op(format!(
            "{o:?} on {}: a pair type takes MPI_MINLOC and MPI_MAXLOC only (MPI-3.1 §5.9.4)",
            dt.name()
        ))),
    })
}

/// `inout = a ∘ inout` element-wise on (value, index) pairs of `W`-byte reals: the smaller
/// (`max`: larger) value, the smaller index on a tie (§5.9.4).
fn real_pair_loc<const W: usize>(max: bool, a: &[u8], inout: &mut [u8]) {
    let get = |b: &[u8]| -> f64 {
        if W == 4 {
            f32::from_le_bytes(b[..4].try_into().expect("4 bytes")) as f64
        } else {
            f64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
        }
    };
    for (x, y) in a.chunks_exact(2 * W).zip(inout.chunks_exact_mut(2 * W)) {
        let (xv, yv, xi, yi) = (get(x), get(y), get(&x[W..]), get(&y[W..]));
        let better = if max { xv > yv } else { xv < yv };
        if better || (xv == yv && xi < yi) {
            y.copy_from_slice(x);
        }
    }
}

fn long_double(dt: &Datatype, o: Op) -> Option<Result<Red>> {
    let t = match dt.homogeneous()?.0 {
        Basic::LongDouble => LdType::Real,
        Basic::CLongDoubleComplex | Basic::CxxLongDoubleComplex => LdType::Complex,
        Basic::LongDoubleInt => LdType::Pair,
        _ => return None,
    };
    let ok = match t {
        LdType::Real => matches!(o, Op::Sum | Op::Prod | Op::Min | Op::Max),
        LdType::Complex => matches!(o, Op::Sum | Op::Prod),
        LdType::Pair => matches!(o, Op::MinLoc | Op::MaxLoc),
    };
    Some(if !ldouble::AVAILABLE {
        Err(Error::Op(format!(
            "{o:?} on {}: long double arithmetic is only built for x86-64",
            dt.name()
        )))
    } else if ok {
        Ok(Red::LongDouble(o, t))
    } else {
        Err(Error::Op(format!(
            "{o:?} is not defined on {t:?} long double (MPI-3.1 §5.9.2)"
        )))
    })
}

/// One `long double` of `b`: the 16 bytes at `at`.
fn ld16(b: &[u8], at: usize) -> [u8; 16] {
    b[at..at + 16].try_into().expect("16 bytes")
}

/// `inout = a ∘ inout` on `long double` elements.
fn apply_ld(o: Op, t: LdType, a: &[u8], inout: &mut [u8]) {
    let size = if t == LdType::Real { 16 } else { 32 };
    for (x, y) in a.chunks_exact(size).zip(inout.chunks_exact_mut(size)) {
        match (t, o) {
            (LdType::Real, Op::Sum | Op::Prod) => {
                let mut v = ld16(y, 0);
                ldouble::arith(
                    if o == Op::Sum { Ld::Add } else { Ld::Mul },
                    &ld16(x, 0),
                    &mut v,
                );
                y.copy_from_slice(&v);
            }
            (LdType::Real, _) => {
                let (xv, yv) = (ld16(x, 0), ld16(y, 0));
                let take = if o == Op::Min {
                    ldouble::less(&xv, &yv)
                } else {
                    ldouble::less(&yv, &xv)
                };
                if take {
                    y.copy_from_slice(x);
                }
            }
            (LdType::Complex, Op::Sum) => {
                for at in [0, 16] {
                    let mut v = ld16(y, at);
                    ldouble::arith(Ld::Add, &ld16(x, at), &mut v);
                    y[at..at + 16].copy_from_slice(&v);
                }
            }
            (LdType::Complex, _) => {
                // (p + qi)(r + si) = (pr − qs) + (ps + qr)i
                let (p, q, r, s) = (ld16(x, 0), ld16(x, 16), ld16(y, 0), ld16(y, 16));
                let (mut pr, mut qs, mut ps, mut qr) = (r, s, s, r);
                ldouble::arith(Ld::Mul, &p, &mut pr);
                ldouble::arith(Ld::Mul, &q, &mut qs);
                ldouble::arith(Ld::Mul, &p, &mut ps);
                ldouble::arith(Ld::Mul, &q, &mut qr);
                ldouble::arith(Ld::Sub, &pr, &mut qs); // qs = pr − qs
                ldouble::arith(Ld::Add, &ps, &mut qr); // qr = ps + qr
                y[..16].copy_from_slice(&qs);
                y[16..].copy_from_slice(&qr);
            }
            (LdType::Pair, _) => {
                // MINLOC/MAXLOC: the better value; on a tie the smaller index (§5.9.4).
                let (xv, yv) = (ld16(x, 0), ld16(y, 0));
                let xi = i32::from_ne_bytes(x[16..20].try_into().expect("4 bytes"));
                let yi = i32::from_ne_bytes(y[16..20].try_into().expect("4 bytes"));
                let (better, worse) = if o == Op::MinLoc {
                    (ldouble::less(&xv, &yv), ldouble::less(&yv, &xv))
                } else {
                    (ldouble::less(&yv, &xv), ldouble::less(&xv, &yv))
                };
                if better {
                    y[..20].copy_from_slice(&x[..20]);
                } else if !worse && xi < yi {
                    y[16..20].copy_from_slice(&xi.to_ne_bytes());
                }
            }
        }
    }
}

/// The reducer for `op` on elements of `dt`.
pub fn reducer(dt: &Datatype, op: &ReduceOp) -> Result<Red> {
    match op {
        ReduceOp::Predefined(o) => {
            if let Some(r) = long_double(dt, *o).or_else(|| real_pair(dt, *o)) {
                return r;
            }
            let double = match dt.homogeneous().map(|(b, n)| (b.c_twin().unwrap_or(b), n)) {
                Some((Basic::CFloatComplex | Basic::CxxFloatComplex, _)) => false,
                Some((Basic::CDoubleComplex | Basic::CxxDoubleComplex, _)) => true,
                _ => return kernel(dt, *o).map(Red::Kernel),
            };
            match o {
                Op::Sum | Op::Prod => Ok(Red::Complex {
                    double,
                    prod: *o == Op::Prod,
                }),
                _ => Err(Error::Op(format!(
                    "{o:?} on a complex type (MPI-3.1 §5.9.2: only MPI_SUM and MPI_PROD)"
                ))),
            }
        }
        ReduceOp::User { f, commutative } if !dense(dt) => Ok(Red::User {
            f: f.clone(),
            commutative: *commutative,
            elem: dt.size(),
            ty: dt.clone(),
            typed: true,
        }),
        ReduceOp::User { f, commutative } => {
            let elem = usize::try_from(dt.extent())
                .ok()
                .filter(|&e| e > 0)
                .ok_or_else(|| {
                    Error::Type(format!(
                        "a user reduction on a type of extent {}",
                        dt.extent()
                    ))
                })?;
            Ok(Red::User {
                f: f.clone(),
                commutative: *commutative,
                elem,
                ty: dt.clone(),
                typed: false,
            })
        }
    }
}

impl Reducer for Red {
    fn elem_size(&self) -> usize {
        match self {
            Red::Kernel(k) => k.elem_size(),
            Red::Complex { double, .. } => 8 << *double as usize,
            Red::LongDouble(_, t) => 16 << (*t != LdType::Real) as usize,
            Red::RealPair { double, .. } => 8 << *double as usize,
            Red::User { elem, .. } => *elem,
        }
    }
    fn commutative(&self) -> bool {
        match self {
            Red::Kernel(k) => k.commutative(),
            Red::Complex { .. } | Red::LongDouble(..) | Red::RealPair { .. } => true,
            Red::User { commutative, .. } => *commutative,
        }
    }
    fn apply(&self, a: &[u8], inout: &mut [u8]) {
        match self {
            Red::Kernel(k) => k.apply(a, inout),
            Red::Complex {
                double: false,
                prod,
            } => complex::<4>(a, inout, *prod),
            Red::Complex { double: true, prod } => complex::<8>(a, inout, *prod),
            Red::LongDouble(o, t) => apply_ld(*o, *t, a, inout),
            Red::RealPair { max, double: false } => real_pair_loc::<4>(*max, a, inout),
            Red::RealPair { max, double: true } => real_pair_loc::<8>(*max, a, inout),
            Red::User {
                f, elem, ty, typed, ..
            } => with_current(ty, || {
                if *typed {
                    apply_typed(f, ty, a, inout)
                } else {
                    f(a, inout, a.len() / elem)
                }
            }),
        }
    }
}

thread_local! {
    /// The type of the user operation running on this thread.
    static CURRENT: std::cell::RefCell<Option<Datatype>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with `ty` as [`current_type`] (restored after: operations may nest).
fn with_current(ty: &Datatype, f: impl FnOnce()) {
    let prev = CURRENT.with(|c| c.replace(Some(ty.clone())));
    f();
    CURRENT.with(|c| *c.borrow_mut() = prev);
}

/// The datatype a user operation running on this thread was called with: its queries
/// (`MPI_Type_get_extent`…) are answered from it, since the reduction holds the
/// library's lock.
pub fn current_type() -> Option<Datatype> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Whether elements of `dt` are one run each, touching (a predefined type, or a derived
/// one of no holes and no padding): their packed form is their memory.
fn dense(dt: &Datatype) -> bool {
    dt.predefined().is_some() || (dt.runs() == 1 && dt.extent() == dt.size() as isize)
}

/// A user function on packed operands of a derived type with holes (MPI-3.1 §5.9.5: it
/// is called with the type, on memory in its layout): both are laid out in scratch
/// memory as the type maps them (holes zero), the function runs there, and `inout` is
/// packed back.
fn apply_typed(f: &UserFn, dt: &Datatype, a: &[u8], inout: &mut [u8]) {
    let n = a.len() / dt.size().max(1);
    let (mut lo, mut hi) = (0isize, 0isize);
    dt.for_each_piece(0, a.len(), |at, _, len| {
        lo = lo.min(at);
        hi = hi.max(at + len as isize);
    });
    // Element 0's origin sits at `-lo` (a type may reach below its displacement 0).
    let (origin, span) = ((-lo) as usize, (hi - lo) as usize);
    let (mut ta, mut tb) = (vec![0u8; span], vec![0u8; span]);
    dt.for_each_piece(0, a.len(), |at, pos, len| {
        let i = (at - lo) as usize;
        ta[i..i + len].copy_from_slice(&a[pos..pos + len]);
        tb[i..i + len].copy_from_slice(&inout[pos..pos + len]);
    });
    f(&ta[origin..], &mut tb[origin..], n);
    dt.for_each_piece(0, inout.len(), |at, pos, len| {
        let i = (at - lo) as usize;
        inout[pos..pos + len].copy_from_slice(&tb[i..i + len]);
    });
}

/// `inout = a + inout` or `a × inout` on complex numbers of two `W`-byte floats.
fn complex<const W: usize>(a: &[u8], inout: &mut [u8], prod: bool) {
    let get = |b: &[u8]| -> f64 {
        if W == 4 {
            f32::from_ne_bytes(b.try_into().expect("4 bytes")) as f64
        } else {
            f64::from_ne_bytes(b.try_into().expect("8 bytes"))
        }
    };
    let put = |b: &mut [u8], v: f64| {
        if W == 4 {
            b.copy_from_slice(&(v as f32).to_ne_bytes())
        } else {
            b.copy_from_slice(&v.to_ne_bytes())
        }
    };
    for (x, y) in a.chunks_exact(2 * W).zip(inout.chunks_exact_mut(2 * W)) {
        let (ar, ai) = (get(&x[..W]), get(&x[W..]));
        let (br, bi) = (get(&y[..W]), get(&y[W..]));
        let (r, i) = if prod {
            (ar * br - ai * bi, ar * bi + ai * br)
        } else {
            (ar + br, ai + bi)
        };
        put(&mut y[..W], r);
        put(&mut y[W..], i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complex_sum_and_product() {
        let c = |r: f64, i: f64| [r.to_ne_bytes(), i.to_ne_bytes()].concat();
        let dt = Datatype::basic(Basic::CDoubleComplex);
        let p = reducer(&dt, &Op::Prod.into()).unwrap();
        let mut io = c(3.0, 4.0);
        p.apply(&c(1.0, 2.0), &mut io); // (1+2i)(3+4i) = -5+10i
        assert_eq!(io, c(-5.0, 10.0));
        let s = reducer(&dt, &Op::Sum.into()).unwrap();
        s.apply(&c(1.0, 1.0), &mut io);
        assert_eq!(io, c(-4.0, 11.0));
        assert!(reducer(&dt, &Op::Max.into()).is_err());
        let f = reducer(&Datatype::basic(Basic::CFloatComplex), &Op::Sum.into()).unwrap();
        assert_eq!(f.elem_size(), 8);
    }

    #[test]
    fn a_user_operation_sees_whole_elements_in_order() {
        // Non-commutative: "keep the left one" over i32s.
        let f: UserFn = Arc::new(|a: &[u8], io: &mut [u8], n: usize| {
            assert_eq!(a.len(), n * 4);
            io.copy_from_slice(a);
        });
        let op = ReduceOp::User {
            f,
            commutative: false,
        };
        let r = reducer(&Datatype::basic(Basic::Int), &op).unwrap();
        assert!(!r.commutative() && !op.commutative());
        assert_eq!(r.elem_size(), 4);
        let out = skifch::coll::ops::fold(&r, &[[1u8, 0, 0, 0], [2, 0, 0, 0], [3, 0, 0, 0]]);
        assert_eq!(out, [1, 0, 0, 0]);
        let sum = reducer(&Datatype::basic(Basic::Int), &Op::Sum.into()).unwrap();
        assert!(sum.commutative());
    }
}
