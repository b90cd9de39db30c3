//! `expm1`: `eˣ − 1` without cancellation.
//!
//! From [`super::exp::reduce`], `eˣ − 1 = (2ᵏ − 1) + 2ᵏ·qh + 2ᵏ·ql` with `qh + ql` within
//! about 2⁻⁵⁷ relative of `exp(r) − 1`. `2ᵏ − 1` is a TwoSum (its rounding error, nonzero
//! for `k > 53` or `k < −53`, joins the low part); the sum is formed by TwoSum so that only
//! the last addition rounds. Where the terms
//! cancel (`k = 1`, `qh < 0`: results in `[0.41, 1]`; `k = −1`), the double-double
//! carries the lost bits, so the result is within 0.5 ulp + a few 2⁻⁵⁶ relative: < 0.6 ulp.
//! For `k = 1024` (`x` just below the overflow threshold) the scale is taken as `2¹⁰²³`
//! and the sum doubled at the end (exactly, or to infinity). Arguments are clamped to
//! `[−40, 710]` (`expm1(−40)` rounds to −1, `expm1(710)` overflows); `expm1(−0) = −0`
//! (the sum `0 + (−0)` is selected away by a sign copy for zero arguments) and NaN propagates.

use super::exp::{reduce, Reduced};
use super::{clamp_above, clamp_below, pow2, two_sum, Cmp, MathEmitter};

/// `eˣ − 1`, within 1 ulp (see the module documentation).
pub fn expm1<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let xc = clamp_above(e, x, 710.0);
    let xc = clamp_below(e, xc, -40.0);
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
