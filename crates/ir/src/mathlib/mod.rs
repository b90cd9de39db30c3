//! adjit's own math routines, written once over an emitter ([`MathEmitter`]) so that the same
//! definition evaluates a routine on `f64`s (the interpreter, through [`Eval`]) and emits it as
//! scalar or two-lane vector Cranelift IR (the JIT), with the same bits in every lane.
//!
//! The rules every routine follows, which make that possible:
//! - Only operations whose IEEE 754 result is exactly defined: `+ - × ÷`, `√` and `fma` (one
//!   rounding) in round-to-nearest-even, sign and bit manipulation, integer arithmetic on the
//!   bit patterns, comparisons and selects. No library call, no reassociation; each emitter
//!   performs the operations in the order the routine states them.
//! - No branches: special values (±0, ±inf, NaN, overflow, underflow, subnormals) are handled
//!   by clamping and `select`, so one straight-line sequence serves every lane.
//! - Integers are obtained from floats without conversion instructions: adding
//!   `SHIFT = 1.5·2⁵²` rounds a float of magnitude below 2⁵¹ to an integer and leaves that
//!   integer in the low bits of the sum's pattern.
//!
//! Accuracy: every routine here is within 1 ulp of the exact result for every `f64` argument
//! (the error analysis is at each routine; `crates/ir/tests/mathlib_accuracy/` measures it
//! against a double-double or better reference). `f32` operations evaluate the `f64` routine
//! on the (exact) promoted argument and round the result to `f32`: the `f64` result is within
//! `2⁻⁵²` relative of the exact value, i.e. within `2⁻²⁹` of an `f32` ulp, so after the final
//! rounding the `f32` result is within `0.5 + 2⁻²⁹ < 1` ulp (overflow, underflow and subnormal
//! `f32` results included, as the `f64` range contains them).
//!
//! The routines: `exp`, `expm1`, `log`, `log1p`, `sin`, `cos`, `tan`, `sinh`, `cosh`, `tanh`,
//! `asin`, `acos`, `atan`, `erf` (one file per family) and the binary `pow` and `atan2`: every
//! transcendental operation of the IR.
//!
//! Tables: most routines are table-driven (a row of a `static` table picked by an index
//! computed from the argument, [`MathEmitter::lookup_row`]). Every emitter has them: `Eval`
//! reads the `static`s, and generated code reads them as read-only data of its module (JIT
//! code and object files alike).
//!
//! The polynomial coefficients and table entries are decimal literals of the exactly rounded
//! values of Taylor coefficients (`1/n!`, `2/(2k+1)`, …), of Chebyshev interpolants (`erf`,
//! the small-argument forms of `tanh` and `expm1`) or of the tabulated constants, printed by
//! short mpmath scripts at 200–300 bits (`float(mpmath.nstr(c, 40))`); the scripts are not
//! part of the repository.

mod asin;
mod atan;
mod erf;
mod exp;
mod expm1;
mod hyperbolic;
mod log;
mod log1p;
mod pow;
mod tanh;
mod trig;

pub use asin::{acos, asin};
pub use atan::{atan, atan2};
pub use erf::erf;
pub use exp::exp;
pub use expm1::expm1;
pub use hyperbolic::{cosh, sinh};
pub use log::log;
pub use log1p::log1p;
pub use pow::pow;
pub use tanh::tanh;
pub use trig::{cos, sin, tan};

use crate::opcode::{BinaryOp, UnaryOp};

/// A float comparison (`Uno`: either operand is NaN). Ordered predicates are false on NaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Uno,
}

/// The primitive operations the routines are written in: `F` is an `f64` (or a vector of
/// them), `I` the 64-bit integer of the same shape, `M` the result of a comparison.
/// Implementations must give each operation its exact IEEE 754 (round-to-nearest-even)
/// result; integer operations wrap.
pub trait MathEmitter {
    type F: Copy;
    type I: Copy;
    type M: Copy;

    fn fconst(&mut self, c: f64) -> Self::F;
    fn iconst(&mut self, c: u64) -> Self::I;

    fn add(&mut self, a: Self::F, b: Self::F) -> Self::F;
    fn sub(&mut self, a: Self::F, b: Self::F) -> Self::F;
    fn mul(&mut self, a: Self::F, b: Self::F) -> Self::F;
    fn div(&mut self, a: Self::F, b: Self::F) -> Self::F;
    /// `a·b + c` with one rounding.
    fn fma(&mut self, a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    fn neg(&mut self, a: Self::F) -> Self::F;
    fn abs(&mut self, a: Self::F) -> Self::F;
    /// The correctly rounded square root (NaN below −0).
    fn sqrt(&mut self, a: Self::F) -> Self::F;
    /// Round to an integer, ties to even.
    fn nearest(&mut self, a: Self::F) -> Self::F;
    fn floor(&mut self, a: Self::F) -> Self::F;

    fn bits_of(&mut self, a: Self::F) -> Self::I;
    fn float_of(&mut self, a: Self::I) -> Self::F;
    fn iadd(&mut self, a: Self::I, b: Self::I) -> Self::I;
    fn isub(&mut self, a: Self::I, b: Self::I) -> Self::I;
    fn band(&mut self, a: Self::I, b: Self::I) -> Self::I;
    fn bor(&mut self, a: Self::I, b: Self::I) -> Self::I;
    /// Shift left by `n < 64` bits.
    fn shl(&mut self, a: Self::I, n: u32) -> Self::I;
    /// Logical shift right by `n < 64` bits.
    fn ushr(&mut self, a: Self::I, n: u32) -> Self::I;

    /// Row `i & (N − 1)` of `table` (`N` a power of two, so no index can read outside it),
    /// its `W` values in every lane: one address computation for the row, then `W` loads.
    fn lookup_row<const W: usize, const N: usize>(
        &mut self,
        table: &'static [[f64; W]; N],
        i: Self::I,
    ) -> [Self::F; W];
    fn cmp(&mut self, cmp: Cmp, a: Self::F, b: Self::F) -> Self::M;
    /// `if m { a } else { b }`.
    fn select(&mut self, m: Self::M, a: Self::F, b: Self::F) -> Self::F;

    /// The values of `general`, computed by `fast` instead when `m` holds in every lane.
    /// `general` must give `fast`'s values wherever `m` holds (it selects them by `m`), so the
    /// result is the same whichever runs: emitters with control flow branch, and skip
    /// `general`'s extra work in the common case.
    fn when_all<const N: usize>(
        &mut self,
        m: Self::M,
        fast: impl FnOnce(&mut Self) -> [Self::F; N],
        general: impl FnOnce(&mut Self) -> [Self::F; N],
    ) -> [Self::F; N];
}

/// Plain evaluation on `f64`: the interpreter's emitter.
#[derive(Clone, Copy, Debug, Default)]
pub struct Eval;

impl MathEmitter for Eval {
    type F = f64;
    type I = u64;
    type M = bool;

    #[inline(always)]
    fn fconst(&mut self, c: f64) -> f64 {
        c
    }
    #[inline(always)]
    fn iconst(&mut self, c: u64) -> u64 {
        c
    }
    #[inline(always)]
    fn add(&mut self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn sub(&mut self, a: f64, b: f64) -> f64 {
        a - b
    }
    #[inline(always)]
    fn mul(&mut self, a: f64, b: f64) -> f64 {
        a * b
    }
    #[inline(always)]
    fn div(&mut self, a: f64, b: f64) -> f64 {
        a / b
    }
    #[inline(always)]
    fn fma(&mut self, a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
    #[inline(always)]
    fn neg(&mut self, a: f64) -> f64 {
        -a
    }
    #[inline(always)]
    fn abs(&mut self, a: f64) -> f64 {
        a.abs()
    }
    #[inline(always)]
    fn sqrt(&mut self, a: f64) -> f64 {
        a.sqrt()
    }
    #[inline(always)]
    fn nearest(&mut self, a: f64) -> f64 {
        a.round_ties_even()
    }
    #[inline(always)]
    fn floor(&mut self, a: f64) -> f64 {
        a.floor()
    }
    #[inline(always)]
    fn bits_of(&mut self, a: f64) -> u64 {
        a.to_bits()
    }
    #[inline(always)]
    fn float_of(&mut self, a: u64) -> f64 {
        f64::from_bits(a)
    }
    #[inline(always)]
    fn iadd(&mut self, a: u64, b: u64) -> u64 {
        a.wrapping_add(b)
    }
    #[inline(always)]
    fn isub(&mut self, a: u64, b: u64) -> u64 {
        a.wrapping_sub(b)
    }
    #[inline(always)]
    fn band(&mut self, a: u64, b: u64) -> u64 {
        a & b
    }
    #[inline(always)]
    fn bor(&mut self, a: u64, b: u64) -> u64 {
        a | b
    }
    #[inline(always)]
    fn shl(&mut self, a: u64, n: u32) -> u64 {
        a << n
    }
    #[inline(always)]
    fn ushr(&mut self, a: u64, n: u32) -> u64 {
        a >> n
    }
    #[inline(always)]
    fn lookup_row<const W: usize, const N: usize>(
        &mut self,
        table: &'static [[f64; W]; N],
        i: u64,
    ) -> [f64; W] {
        const { assert!(N.is_power_of_two()) };
        table[(i as usize) & (N - 1)]
    }
    #[inline(always)]
    fn cmp(&mut self, cmp: Cmp, a: f64, b: f64) -> bool {
        match cmp {
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Eq => a == b,
            Cmp::Uno => a.is_nan() || b.is_nan(),
        }
    }
    #[inline(always)]
    fn select(&mut self, m: bool, a: f64, b: f64) -> f64 {
        if m {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn when_all<const N: usize>(
        &mut self,
        m: bool,
        fast: impl FnOnce(&mut Self) -> [f64; N],
        general: impl FnOnce(&mut Self) -> [f64; N],
    ) -> [f64; N] {
        if m {
            fast(self)
        } else {
            general(self)
        }
    }
}

/// Whether `op` has a routine here (otherwise it is a C library call).
pub fn has_unary(op: UnaryOp) -> bool {
    matches!(
        op,
        UnaryOp::Exp
            | UnaryOp::Expm1
            | UnaryOp::Log
            | UnaryOp::Log1p
            | UnaryOp::Sinh
            | UnaryOp::Cosh
            | UnaryOp::Tanh
            | UnaryOp::Asin
            | UnaryOp::Acos
            | UnaryOp::Atan
            | UnaryOp::Erf
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tan
    )
}

/// Whether binary `op` has a routine here.
pub fn has_binary(op: BinaryOp) -> bool {
    matches!(op, BinaryOp::Pow | BinaryOp::Atan2)
}

/// Whether the default math (`MathImpl::Auto` in the JIT, and [`crate::math`], so the
/// interpreter) computes `op` by the routine here rather than by the C library: per routine,
/// the faster of the two among those within 1 ulp of the correctly rounded value, measured
/// on x86-64 with glibc (the figures are in `docs/performance.md`; the accuracy test
/// `the_default_math_is_within_one_ulp` fails if a default is not within 1 ulp).
/// - adjit's: `tanh`, `sinh`, `cosh` (glibc 2.1, 1.8 and 1.8 ulp), `cos` and `tan` (glibc 8
///   and 14 ulp near zeros and poles of huge arguments), and `erf`, `atan`, `log1p`, where
///   both are within 1 ulp and adjit's is faster;
/// - the C library's: `exp`, `expm1`, `log`, `sin`, `asin`, `acos` (within 0.52–0.80 ulp,
///   and as fast or faster than the branch-free inline forms).
pub fn default_unary(op: UnaryOp) -> bool {
    matches!(
        op,
        UnaryOp::Tanh
            | UnaryOp::Sinh
            | UnaryOp::Cosh
            | UnaryOp::Cos
            | UnaryOp::Tan
            | UnaryOp::Erf
            | UnaryOp::Atan
            | UnaryOp::Log1p
    )
}

/// [`default_unary`] for the binary routines: none (glibc's `pow` and `atan2` are within 0.51
/// ulp and faster).
pub fn default_binary(op: BinaryOp) -> bool {
    let _ = op;
    false
}

/// `op(x)` by the routine here when it is the default ([`default_unary`]), else `None`.
#[inline]
pub fn default_unary_f64(op: UnaryOp, x: f64) -> Option<f64> {
    if default_unary(op) {
        unary_f64(op, x)
    } else {
        None
    }
}

/// `op(a, b)` by the routine here when it is the default ([`default_binary`]), else `None`.
#[inline]
pub fn default_binary_f64(op: BinaryOp, a: f64, b: f64) -> Option<f64> {
    if default_binary(op) {
        binary_f64(op, a, b)
    } else {
        None
    }
}

/// The routine for `op` applied to `x`, or `None` when [`has_unary`] is false.
pub fn unary<E: MathEmitter>(e: &mut E, op: UnaryOp, x: E::F) -> Option<E::F> {
    Some(match op {
        UnaryOp::Exp => exp(e, x),
        UnaryOp::Expm1 => expm1(e, x),
        UnaryOp::Log => log(e, x),
        UnaryOp::Log1p => log1p(e, x),
        UnaryOp::Sinh => sinh(e, x),
        UnaryOp::Cosh => cosh(e, x),
        UnaryOp::Tanh => tanh(e, x),
        UnaryOp::Asin => asin(e, x),
        UnaryOp::Acos => acos(e, x),
        UnaryOp::Atan => atan(e, x),
        UnaryOp::Erf => erf(e, x),
        UnaryOp::Sin => sin(e, x),
        UnaryOp::Cos => cos(e, x),
        UnaryOp::Tan => tan(e, x),
        _ => return None,
    })
}

/// The routine for binary `op` applied to `(a, b)`, or `None` when [`has_binary`] is false.
pub fn binary<E: MathEmitter>(e: &mut E, op: BinaryOp, a: E::F, b: E::F) -> Option<E::F> {
    Some(match op {
        BinaryOp::Pow => pow(e, a, b),
        BinaryOp::Atan2 => atan2(e, a, b),
        _ => return None,
    })
}

/// `op(x)` evaluated on `f64`, when the routine exists.
pub fn unary_f64(op: UnaryOp, x: f64) -> Option<f64> {
    unary(&mut Eval, op, x)
}

/// `op(a, b)` evaluated on `f64`, when the routine exists.
pub fn binary_f64(op: BinaryOp, a: f64, b: f64) -> Option<f64> {
    binary(&mut Eval, op, a, b)
}

// ---- building blocks shared by the routines ----

/// `1.5·2⁵²`: adding it to a float of magnitude below 2⁵¹ rounds it to an integer (ties to
/// even), held in the low bits of the sum.
pub(crate) const SHIFT: f64 = 6755399441055744.0;
pub(crate) const SIGN: u64 = 0x8000_0000_0000_0000;

/// `(s, t)` with `s = fl(a + b)` and `s + t = a + b` exactly (Knuth's TwoSum, any order).
pub(crate) fn two_sum<E: MathEmitter>(e: &mut E, a: E::F, b: E::F) -> (E::F, E::F) {
    let s = e.add(a, b);
    let bb = e.sub(s, a);
    let sbb = e.sub(s, bb);
    let da = e.sub(a, sbb);
    let db = e.sub(b, bb);
    let t = e.add(da, db);
    (s, t)
}

/// TwoSum when `|a| ≥ |b|` (or `a = 0`): Dekker's FastTwoSum.
pub(crate) fn fast_two_sum<E: MathEmitter>(e: &mut E, a: E::F, b: E::F) -> (E::F, E::F) {
    let s = e.add(a, b);
    let z = e.sub(s, a);
    let t = e.sub(b, z);
    (s, t)
}

/// `c[0] + x·(c[1] + x·(c[2] + …))` by Horner's rule with `fma`.
pub(crate) fn horner<E: MathEmitter>(e: &mut E, x: E::F, c: &[f64]) -> E::F {
    let (last, rest) = c.split_last().expect("at least one coefficient");
    let mut p = e.fconst(*last);
    for &ck in rest.iter().rev() {
        let k = e.fconst(ck);
        p = e.fma(p, x, k);
    }
    p
}

/// `2ᵏ` for an integral float `k` with `-1022 ≤ k ≤ 1023`, built from its exponent field.
pub(crate) fn pow2<E: MathEmitter>(e: &mut E, k: E::F) -> E::F {
    // k + 2⁵² + 1023 is an integer in [2⁵², 2⁵³): its low 52 bits are k + 1023, which the
    // shift moves into the exponent field (the sum's own exponent bits are shifted out).
    let bias = e.fconst(4503599627370496.0 + 1023.0);
    let biased = e.add(k, bias);
    let bits = e.bits_of(biased);
    let field = e.shl(bits, 52);
    e.float_of(field)
}

/// `|mag|` with the sign bit of `sign`.
pub(crate) fn copysign<E: MathEmitter>(e: &mut E, mag: E::F, sign: E::F) -> E::F {
    let m = e.bits_of(mag);
    let s = e.bits_of(sign);
    let sign_mask = e.iconst(SIGN);
    let s = e.band(s, sign_mask);
    let unsigned = e.iconst(!SIGN);
    let m = e.band(m, unsigned);
    let r = e.bor(m, s);
    e.float_of(r)
}

/// `x` clamped to at most `hi` (NaN stays NaN).
pub(crate) fn clamp_above<E: MathEmitter>(e: &mut E, x: E::F, hi: f64) -> E::F {
    let h = e.fconst(hi);
    let over = e.cmp(Cmp::Gt, x, h);
    e.select(over, h, x)
}

/// `x` clamped to at least `lo` (NaN stays NaN).
pub(crate) fn clamp_below<E: MathEmitter>(e: &mut E, x: E::F, lo: f64) -> E::F {
    let l = e.fconst(lo);
    let under = e.cmp(Cmp::Lt, x, l);
    e.select(under, l, x)
}
