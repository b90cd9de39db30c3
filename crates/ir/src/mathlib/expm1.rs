//! `expm1`: `eˣ − 1` without cancellation.
//!
//! **Table-driven form** (where the emitter has tables, [`MathEmitter::has_tables`]).
//! Arguments are clamped to `[−40, 710]` as below; both forms are evaluated and one selected.
//!
//! *`|x| < 1/8`:* `expm1(x) = x + x²·Q(x)`, `Q` a degree-8 polynomial fitted on
//! `[−1/8, 1/8]` (relative error below 2⁻⁵⁷ with its coefficients rounded). `x` is exact,
//! `x²·Q` is below `x/15`; `x²` and `Q` are each rounded once more, which is below 2⁻⁵⁶ of
//! the result, and the final `fma` rounds once: ≤ 0.63 ulp (measured 0.6).
//!
//! *`|x| ≥ 1/8`:* [`super::exp::table_exp`] gives `eˣ = 2ᴷ·(th + small)` (`small` within
//! 2⁻⁶¹ of its value, `|small| < 0.004`), so `eˣ − 1 = 2ᴷ⁻¹·(2th − 2¹⁻ᴷ + 2small)` (the
//! doublings exact; `K − 1 ≤ 1023` keeps both powers of two in `pow2`'s range, and
//! `2¹⁻ᴷ = 2⁻¹⁰²³` comes out as 0, far below an ulp of the sum). `2th − 2¹⁻ᴷ` is summed
//! exactly by TwoSum, the low part joins `2small`, and the sum `S` rounds once: `|S| ≥ 0.26`
//! (`S = 2·expm1(x)` for `K = 0`, `4·expm1(x)` for `K = −1`), so the errors before that
//! rounding are below 2⁻⁵⁷ relative: ≤ 0.57 ulp. The product with `2ᴷ⁻¹` is exact (the
//! results are normal) or infinity.
//!
//! **Table-free form** (object files). From [`super::exp::reduce`], `eˣ − 1 = (2ᵏ − 1) + 2ᵏ·qh + 2ᵏ·ql` with `qh + ql` within
//! about 2⁻⁵⁷ relative of `exp(r) − 1`. `2ᵏ − 1` is a TwoSum (its rounding error, nonzero
//! for `k > 53` or `k < −53`, joins the low part); the sum is formed by TwoSum so that only
//! the last addition rounds. Where the terms
//! cancel (`k = 1`, `qh < 0`: results in `[0.41, 1]`; `k = −1`), the double-double
//! carries the lost bits, so the result is within 0.5 ulp + a few 2⁻⁵⁶ relative: < 0.6 ulp.
//! For `k = 1024` (`x` just below the overflow threshold) the scale is taken as `2¹⁰²³`
//! and the sum doubled at the end (exactly, or to infinity). Arguments are clamped to
//! `[−40, 710]` (`expm1(−40)` rounds to −1, `expm1(710)` overflows); `expm1(−0) = −0`
//! (the sum `0 + (−0)` is selected away by a sign copy for zero arguments) and NaN propagates.

use super::exp::{reduce, table_exp, Reduced, TableExp};
use super::{clamp_above, clamp_below, horner, pow2, two_sum, Cmp, MathEmitter};

/// `(expm1(x) − x)/x²` on `[−1/8, 1/8]`, degree 8 (Chebyshev interpolant, mpmath at 200
/// bits).
const SMALL: [f64; 9] = [
    0.5,
    0.1666666666666666,
    0.041666666666666664,
    0.00833333333337814,
    0.0013888888888926227,
    0.00019841268808950876,
    2.4801586441345773e-05,
    2.7566127929189027e-06,
    2.7564659654102525e-07,
];

/// `eˣ − 1`, within 1 ulp (see the module documentation).
pub fn expm1<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let xc = clamp_above(e, x, 710.0);
    let xc = clamp_below(e, xc, -40.0);
    if !e.has_tables() {
        return expm1_table_free(e, x, xc);
    }
    // |x| < 1/8, as −(−x − x²·Q) so that expm1(±0) = ±0 (rounding is symmetric, so
    // other arguments get the bits of x + x²·Q).
    let q = horner(e, xc, &SMALL);
    let x2 = e.mul(xc, xc);
    let neg_q = e.neg(q);
    let neg_x = e.neg(xc);
    let neg_form = e.fma(x2, neg_q, neg_x);
    let small_form = e.neg(neg_form);

    // |x| ≥ 1/8: 2ᴷ⁻¹·((2th − 2¹⁻ᴷ) + 2small), with K − 1 ∈ [−59, 1023] so that both powers
    // of two are `pow2`'s (2¹⁻ᴷ = 2⁻¹⁰²³ comes out as 0, which changes nothing that rounds).
    let TableExp { big_k, th, small } = table_exp(e, xc);
    let one = e.fconst(1.0);
    let k_less = e.sub(big_k, one);
    // 2ᴷ⁻¹ as `pow2` builds it, and 2¹⁻ᴷ from its exponent field f: 2046 − f.
    let bias = e.fconst(4503599627370496.0 + 1023.0);
    let biased = e.add(k_less, bias);
    let biased = e.bits_of(biased);
    let field = e.shl(biased, 52);
    let sc = e.float_of(field);
    let top = e.iconst(2046 << 52);
    let inverse = e.isub(top, field);
    let unit = e.float_of(inverse);
    let neg_unit = e.neg(unit);
    let th2 = e.add(th, th);
    let (a, ae) = two_sum(e, th2, neg_unit);
    let two = e.fconst(2.0);
    let lo = e.fma(small, two, ae);
    let s = e.add(a, lo);
    let large_form = e.mul(s, sc);

    let a = e.abs(xc);
    let edge = e.fconst(0.125);
    let is_small = e.cmp(Cmp::Lt, a, edge);
    e.select(is_small, small_form, large_form)
}

/// The table-free `eˣ − 1` of `x`, already clamped to `xc`.
fn expm1_table_free<E: MathEmitter>(e: &mut E, x: E::F, xc: E::F) -> E::F {
    let Reduced { k, qh, ql } = reduce(e, xc, None);
    // k = 1024 → scale 2¹⁰²³, doubled at the end.
    let max_k = e.fconst(1023.0);
    let over = e.cmp(Cmp::Gt, k, max_k);
    let kk = e.select(over, max_k, k);
    let two = e.fconst(2.0);
    let one = e.fconst(1.0);
    let factor = e.select(over, two, one);
    let half = e.fconst(0.5);
    let unit = e.select(over, half, one);
    let sc = pow2(e, kk);
    let neg_unit = e.neg(unit);
    let (a, ae) = two_sum(e, sc, neg_unit);
    let b = e.mul(qh, sc);
    let c = e.mul(ql, sc);
    let (sh, sl) = two_sum(e, a, b);
    let lo = e.add(sl, c);
    let lo = e.add(lo, ae);
    let m = e.add(sh, lo);
    let m = e.mul(m, factor);
    // expm1(±0) = ±0.
    let zero = e.fconst(0.0);
    let is_zero = e.cmp(Cmp::Eq, x, zero);
    e.select(is_zero, x, m)
}
