//! `exp`, and the argument reduction that `tanh` (and later `expm1`, `sinh`, `cosh`, `erf`)
//! share: `exp(x) = 2ᵏ·(1 + q)` with `q` as a double-double.
//!
//! **Reduction.** `k = round(x/ln2)` (rounding `x·(1/ln2)` through `SHIFT`), then
//! `r = x − k·ln2` as `rh + rl`: `LN2_HI` has 42 significant bits, so for `|k| ≤ 1100` the
//! product `k·LN2_HI` is exact and so is `rh = fma(−k, LN2_HI, x)` (the difference is below
//! 0.35 and a multiple of `min(ulp(x), 2⁻⁴²)`); `rl = x_lo − k·LN2_LO` carries the rest with
//! an absolute error below 2⁻⁸⁰ (`|k·LN2_LO| < 2⁻³³`; `ln2 − LN2_HI − LN2_LO < 2⁻⁹⁶`).
//! `|rh| ≤ ln2/2 + 2⁻⁴⁰`.
//!
//! **Polynomial.** `exp(rh) − 1 = rh + rh²/2 + rh³·P(rh)` with `P` the Taylor polynomial
//! `1/3! + rh/4! + … + rh¹⁰/13!`; the truncation error is below `rh¹⁴/14!·e^{|rh|} < 2⁻⁵⁷`.
//! `rh²` is split exactly (`fma`), so `rh + rh²/2` is formed exactly as a double-double and
//! only the small terms `rh³·P` (below 2⁻⁷) and `rl·exp(rh)` are rounded, each with a relative
//! error of a few 2⁻⁵³: `q = qh + ql` is within about 2⁻⁵⁷ of `exp(r) − 1`.
//!
//! **exp.** `1 + qh + ql` is summed exactly to its last rounding (FastTwoSum), then scaled by
//! `2^k1·2^k2` with `k1 = round(k/2)`, `k2 = k − k1`: the first product is exact (normal),
//! the second rounds once, also into the subnormal range or to infinity. So the result is the
//! exact value rounded once after an error of about 2⁻⁵⁷ relative: ≤ 0.52 ulp (≤ 1 ulp in the
//! subnormal range, where the final rounding happens twice). Arguments are clamped to
//! `[−746, 710]` (beyond which exp underflows to 0 or overflows to inf anyway); NaN
//! propagates through the arithmetic.

use super::{clamp_above, clamp_below, fast_two_sum, horner, pow2, two_sum, MathEmitter, SHIFT};

pub(crate) const INV_LN2: f64 = std::f64::consts::LOG2_E;
/// `ln 2` rounded to 42 significant bits (`0x3fe62e42fefa3800`).
pub(crate) const LN2_HI: f64 = 0.6931471805598903;
/// `ln 2 − LN2_HI`, rounded.
pub(crate) const LN2_LO: f64 = 5.497923018708371e-14;

/// `1/3!, 1/4!, …, 1/13!`.
const EXP_TAYLOR: [f64; 11] = [
    0.16666666666666666,
    0.041666666666666664,
    0.008333333333333333,
    0.001388888888888889,
    0.0001984126984126984,
    2.48015873015873e-05,
    2.7557319223985893e-06,
    2.755731922398589e-07,
    2.505210838544172e-08,
    2.08767569878681e-09,
    1.6059043836821613e-10,
];

/// `exp(xh + xl) = 2ᵏ·(1 + qh + ql)`.
pub(crate) struct Reduced<F> {
    /// An integral float, `round((xh + xl)/ln2)` (up to one), in `[−1100, 1100]`.
    pub k: F,
    pub qh: F,
    pub ql: F,
}

/// The shared reduction for `xh` in `[−746, 710]` and `|xl| ≤ ulp(xh)` (`None`: 0).
pub(crate) fn reduce<E: MathEmitter>(e: &mut E, xh: E::F, xl: Option<E::F>) -> Reduced<E::F> {
    let inv_ln2 = e.fconst(INV_LN2);
    let shift = e.fconst(SHIFT);
    let t = e.fma(xh, inv_ln2, shift);
    let k = e.sub(t, shift);
    let neg_k = e.neg(k);
    let ln2_hi = e.fconst(LN2_HI);
    let rh = e.fma(neg_k, ln2_hi, xh);
    let ln2_lo = e.fconst(LN2_LO);
    let klo = e.mul(k, ln2_lo);
    let rl = match xl {
        Some(xl) => e.sub(xl, klo),
        None => e.neg(klo),
    };
    // rh² = h + hl exactly.
    let h = e.mul(rh, rh);
    let neg_h = e.neg(h);
    let hl = e.fma(rh, rh, neg_h);
    let half = e.fconst(0.5);
    let h2 = e.mul(h, half);
    let hl2 = e.mul(hl, half);
    let r3 = e.mul(h, rh);
    let p = horner(e, rh, &EXP_TAYLOR);
    let poly = e.mul(r3, p);
    // rh + rh²/2 exactly, then the small terms.
    let (a, ae) = fast_two_sum(e, rh, h2);
    let s = e.add(a, poly);
    let rl_exp = e.fma(rl, s, rl);
    let tail = e.add(poly, hl2);
    let tail = e.add(tail, ae);
    let tail = e.add(tail, rl_exp);
    let (qh, ql) = two_sum(e, a, tail);
    Reduced { k, qh, ql }
}

/// `2ᵏ·p` for `k` in `[−1100, 1100]`, rounded once.
pub(crate) fn scale<E: MathEmitter>(e: &mut E, p: E::F, k: E::F) -> E::F {
    let half = e.fconst(0.5);
    let shift = e.fconst(SHIFT);
    let t = e.fma(k, half, shift);
    let k1 = e.sub(t, shift);
    let k2 = e.sub(k, k1);
    let s1 = pow2(e, k1);
    let s2 = pow2(e, k2);
    let p1 = e.mul(p, s1);
    e.mul(p1, s2)
}

/// `eˣ`, within 1 ulp (see the module documentation).
pub fn exp<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let x = clamp_above(e, x, 710.0);
    let x = clamp_below(e, x, -746.0);
    let Reduced { k, qh, ql } = reduce(e, x, None);
    let one = e.fconst(1.0);
    let (u, ue) = fast_two_sum(e, one, qh);
    let lo = e.add(ue, ql);
    let p = e.add(u, lo);
    scale(e, p, k)
}
