//! `expm1`: `eˣ − 1` without cancellation.
//!
//! Arguments are clamped to `[−40, 710]` (`expm1(−40)` rounds to −1, `expm1(710)`
//! overflows); both forms below are evaluated and one selected; NaN propagates.
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

use super::exp::{table_exp, TableExp};
use super::{clamp_above, clamp_below, horner, two_sum, Cmp, MathEmitter};

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
