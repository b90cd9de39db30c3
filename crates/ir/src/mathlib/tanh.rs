//! `tanh`.
//!
//! `|x|` is clamped to 20 (`tanh(20)` rounds to 1) and the sign copied bitwise at the end
//! (`tanh(−0) = −0`, NaN stays NaN). Both forms below are evaluated and one selected.
//!
//! *`|x| < 1/8`:* `tanh(a) = a + a·z·P(z)`, `z = a²`, `P` a degree-6 polynomial fitted on
//! `[0, 1/64]` (relative fit error below 2⁻⁶⁴, the coefficients' rounding below 2⁻⁵⁴ of
//! `P`). The correction `a·z·P` is below `a/190`, so its rounding errors are below 2⁻⁶⁰ of
//! the result and the final `fma` rounds once: ≤ 0.51 ulp.
//!
//! *`|x| ≥ 1/8`:* `tanh(a) = M/(M + 2)` with `M = expm1(2a)`. [`super::exp::table_exp`]
//! gives `exp(2a) = 2ᴷ·(th + small)` (`0 ≤ K ≤ 58`, `small` within 2⁻⁶¹ of its value and
//! below 0.004), so `M = (2ᴷ·th − 1) + 2ᴷ·small`: the first term is exact for `K ≤ 52`
//! (one `fma` of a representable result; beyond, `tanh` is 1 − 2⁻⁵² or 1 and the error is
//! 2⁻¹⁰⁵ relative) and at least 0.28 (`2a ≥ 1/4` gives `j ≥ 46`), the second below
//! 0.004·2ᴷ, so FastTwoSum gives `M = mh + ml` to about 2⁻⁵⁸ relative, and TwoSum gives
//! `D = M + 2 = dh + dl`. The quotient is `q = mh·(1/dh)` (within about 1 ulp of `mh/dh`)
//! corrected by `(mh − q·dh + ml − q·dl)·(1/dh)` (the first difference by `fma`), which
//! leaves an error of a few 2⁻⁵⁸ relative before the final `fma` rounds: ≤ 0.55 ulp. One
//! division.

use super::exp::{table_exp, TableExp};
use super::{clamp_above, copysign, fast_two_sum, horner, pow2, two_sum, Cmp, MathEmitter};

/// `(tanh(√z)/√z − 1)/z` on `[0, 1/64]`, degree 6 (Chebyshev interpolant, mpmath at 200
/// bits).
const SMALL: [f64; 7] = [
    -0.3333333333333333,
    0.13333333333333322,
    -0.053968253968151046,
    0.021869488496608067,
    -0.008863228290024993,
    0.0035914470237015917,
    -0.0014239969035219852,
];

/// `tanh x`, within 1 ulp (see the module documentation).
pub fn tanh<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let a = e.abs(x);
    let a = clamp_above(e, a, 20.0);

    // |x| < 1/8.
    let z = e.mul(a, a);
    let p = horner(e, z, &SMALL);
    let zp = e.mul(z, p);
    let small_form = e.fma(a, zp, a);

    // |x| ≥ 1/8: M/(M + 2), M = expm1(2|x|).
    let y = e.add(a, a);
    let TableExp { big_k, th, small } = table_exp(e, y);
    let sc = pow2(e, big_k);
    let neg_one = e.fconst(-1.0);
    let m_big = e.fma(sc, th, neg_one);
    let m_small = e.mul(sc, small);
    let (mh, ml) = fast_two_sum(e, m_big, m_small);
    let two = e.fconst(2.0);
    let (dh, dl0) = two_sum(e, mh, two);
    let dl = e.add(dl0, ml);
    let one = e.fconst(1.0);
    let inv = e.div(one, dh);
    let q = e.mul(mh, inv);
    let neg_q = e.neg(q);
    let rem = e.fma(neg_q, dh, mh);
    let rem = e.add(rem, ml);
    let rem = e.fma(neg_q, dl, rem);
    let large_form = e.fma(rem, inv, q);

    let edge = e.fconst(0.125);
    let is_small = e.cmp(Cmp::Lt, a, edge);
    let t = e.select(is_small, small_form, large_form);
    copysign(e, t, x)
}
