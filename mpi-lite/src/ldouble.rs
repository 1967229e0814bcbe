//! `long double` arithmetic for the reductions on `MPI_LONG_DOUBLE`,
//! `MPI_C_LONG_DOUBLE_COMPLEX` and `MPI_LONG_DOUBLE_INT` (MPI-3.1 §5.9.2). Rust has no
//! 80-bit float: on x86-64 the x87 unit does the arithmetic on the C program's own bytes
//! (an 80-bit extended value in the first 10 of 16 bytes), so results are what C's
//! `long double` operators give. Elsewhere these reductions stay `MPI_ERR_OP`.
#![allow(unsafe_code)] // x87 instructions through inline assembly

/// An x87 two-operand operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ld {
    /// `b = a + b`
    Add,
    /// `b = a × b`
    Mul,
    /// `b = a − b`
    Sub,
}

/// `true` when this target has the arithmetic.
pub const AVAILABLE: bool = cfg!(target_arch = "x86_64");

/// `b = a ∘ b` on two `long double`s (16 bytes each, the first 10 significant).
#[cfg(target_arch = "x86_64")]
pub fn arith(op: Ld, a: &[u8; 16], b: &mut [u8; 16]) {
    let (pa, pb) = (a.as_ptr(), b.as_mut_ptr());
    // SAFETY: `pa` and `pb` point to 16 readable (and, for `pb`, writable) bytes; the
    // instructions read 10 bytes at each and write 10 at `pb`; the x87 stack is empty on
    // entry (the Rust ABI) and left empty (two loads, one pop, one store-and-pop).
    unsafe {
        match op {
            Ld::Add => std::arch::asm!(
                "fld tbyte ptr [{b}]", "fld tbyte ptr [{a}]", "faddp st(1), st", "fstp tbyte ptr [{b}]",
                a = in(reg) pa, b = in(reg) pb,
                out("st(0)") _, out("st(1)") _, options(nostack)),
            Ld::Mul => std::arch::asm!(
                "fld tbyte ptr [{b}]", "fld tbyte ptr [{a}]", "fmulp st(1), st", "fstp tbyte ptr [{b}]",
                a = in(reg) pa, b = in(reg) pb,
                out("st(0)") _, out("st(1)") _, options(nostack)),
            // fsubrp st(1), st: st(1) = st(0) − st(1), with st(0) = a and st(1) = b.
            Ld::Sub => std::arch::asm!(
                "fld tbyte ptr [{b}]", "fld tbyte ptr [{a}]", "fsubrp st(1), st", "fstp tbyte ptr [{b}]",
                a = in(reg) pa, b = in(reg) pb,
                out("st(0)") _, out("st(1)") _, options(nostack)),
        }
    }
}

/// `a < b` on two `long double`s (false when either is a NaN).
#[cfg(target_arch = "x86_64")]
pub fn less(a: &[u8; 16], b: &[u8; 16]) -> bool {
    let lt: u8;
    // SAFETY: as `arith`, reading only; `fcomip` pops one, `fstp st(0)` the other.
    unsafe {
        std::arch::asm!(
            "fld tbyte ptr [{a}]", "fld tbyte ptr [{b}]", "fcomip st, st(1)", "fstp st(0)", "seta {lt}",
            a = in(reg) a.as_ptr(), b = in(reg) b.as_ptr(), lt = out(reg_byte) lt,
            out("st(0)") _, out("st(1)") _, options(nostack, readonly));
    }
    // After comparing st(0) = b with st(1) = a: "above" is b > a.
    lt != 0
}

/// Not built on this target (see [`AVAILABLE`]).
#[cfg(not(target_arch = "x86_64"))]
pub fn arith(_op: Ld, _a: &[u8; 16], _b: &mut [u8; 16]) {
    unreachable!("long double reductions are only built on x86-64 (AVAILABLE)")
}

/// Not built on this target (see [`AVAILABLE`]).
#[cfg(not(target_arch = "x86_64"))]
pub fn less(_a: &[u8; 16], _b: &[u8; 16]) -> bool {
    unreachable!("long double reductions are only built on x86-64 (AVAILABLE)")
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// An x87 extended value from a small integer (exact).
    fn ld(v: i64) -> [u8; 16] {
        let mut out = [0u8; 16];
        if v == 0 {
            return out;
        }
        let (neg, m) = (v < 0, v.unsigned_abs());
        let shift = m.leading_zeros();
        let mant = m << shift;
        let exp = 16383 + 63 - shift as u16;
        out[..8].copy_from_slice(&mant.to_le_bytes());
        out[8..10].copy_from_slice(&(exp | if neg { 0x8000 } else { 0 }).to_le_bytes());
        out
    }

    #[test]
    fn x87_arithmetic_and_comparison() {
        let mut b = ld(5);
        arith(Ld::Add, &ld(3), &mut b);
        assert_eq!(b[..10], ld(8)[..10]);
        arith(Ld::Mul, &ld(-2), &mut b);
        assert_eq!(b[..10], ld(-16)[..10]);
        let mut c = ld(3);
        arith(Ld::Sub, &ld(10), &mut c);
        assert_eq!(c[..10], ld(7)[..10]);
        assert!(less(&ld(-3), &ld(2)) && !less(&ld(2), &ld(2)) && !less(&ld(4), &ld(1)));
    }
}
