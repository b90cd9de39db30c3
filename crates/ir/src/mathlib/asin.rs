//! `asin` and `acos`, as the angles `atan2(x, √(1 − x²))` and `atan2(√(1 − x²), x)` by
//! [`super::atan`]'s core, with the root as a double-double.
//!
//! **The root.** With `a = |x| ≤ 1`, `1 − a² = wh + wl` exactly up to one rounding of the
//! low part: `a² = p + pl` (`fma`), `1 − p` by FastTwoSum (`p ≤ 1`), `wl = (its error) − pl`
//! (relative error below 2⁻¹⁰⁵ of `1 − a²`, also for `a` next to 1, where `1 − a²` is as
//! small as 2⁻⁵³). `S = sh + sl` with `sh = √wh` (correctly rounded) and
//! `sl = (wh − sh² + wl)/(2sh)` (the first difference exact by `fma`; the denominator kept
//! above 10⁻³⁰⁰ so that `a = 1`, `S = 0` gives `sl = 0`): within 2⁻¹⁰⁰ of `√(1 − a²)`.
//! `wl` can reach 2⁻⁴⁰ of `wh` (`a` near 1), so `sl` can reach 2⁻⁴¹ of `sh`: the pair is
//! left so (its inverse below is `1/sh`, computed beside `sl` rather than after it), and the
//! quotient is renormalized instead.
//!
//! **The quotient.** Of the two legs `a` and `S`, `n` is the smaller and `d` the larger
//! (`d ≥ 1/√2`, so neither its inverse nor the remainder below can leave the normal range);
//! `q = n/d` as `qh = n·(1/d)`, `ql = (n − qh·dh + nl − qh·dl)·(1/d)` (the first difference by
//! `fma`), within about 2⁻¹⁰⁰ of `n/d`, and renormalized by FastTwoSum (the atan core
//! evaluates its polynomial at the high part of `t` and needs the low part below an ulp). [`super::atan::angle`] adds `π/2`, `π` and the signs
//! by the quadrant and rounds once: ≤ 0.51 ulp, as `atan2`.
//!
//! **asin** `= ±angle(S, a)` (the sign of `x` copied bitwise: `asin(−0) = −0`);
//! **acos** `= angle(x, S)` (`acos(1) = +0`, `acos(−1) = π` rounded). `|x| > 1` (infinities
//! included) makes `wh` negative and the root NaN, and NaN propagates.

use super::atan::angle;
use super::{clamp_below, copysign, fast_two_sum, Cmp, MathEmitter};

/// `√(1 − a²)` as `sh + sl` (see the module documentation).
fn root<E: MathEmitter>(e: &mut E, a: E::F) -> (E::F, E::F) {
    let p = e.mul(a, a);
    let neg_p = e.neg(p);
    let pl = e.fma(a, a, neg_p);
    let one = e.fconst(1.0);
    let (wh, wl) = fast_two_sum(e, one, neg_p);
    let wl = e.sub(wl, pl);
    let sh = e.sqrt(wh);
    let neg_sh = e.neg(sh);
    let rem = e.fma(neg_sh, sh, wh);
    let rem = e.add(rem, wl);
    let twice = e.add(sh, sh);
    let twice = clamp_below(e, twice, 1e-300);
    let sl = e.div(rem, twice);
    (sh, sl)
}

/// `(qh + ql, swapped)` for the legs `y = yh + yl` and `x = xh + xl` (non-negative, one of
/// them at least `1/√2`): `min(x, y)/max(x, y)` as a double-double, and whether `y > x`.
fn ratio<E: MathEmitter>(
    e: &mut E,
    (yh, yl): (E::F, E::F),
    (xh, xl): (E::F, E::F),
) -> (E::F, E::F, E::M) {
    let swapped = e.cmp(Cmp::Gt, yh, xh);
    let nh = e.select(swapped, xh, yh);
    let nl = e.select(swapped, xl, yl);
    let dh = e.select(swapped, yh, xh);
    let dl = e.select(swapped, yl, xl);
    let one = e.fconst(1.0);
    let inv = e.div(one, dh);
    let qh = e.mul(nh, inv);
    let neg_qh = e.neg(qh);
    let rem = e.fma(neg_qh, dh, nh);
    let rem = e.add(rem, nl);
    let rem = e.fma(neg_qh, dl, rem);
    let ql = e.mul(rem, inv);
    // Renormalized (see the module documentation).
    let (qh, ql) = fast_two_sum(e, qh, ql);
    (qh, ql, swapped)
}

/// `asin x`, within 1 ulp (see the module documentation).
pub fn asin<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let a = e.abs(x);
    let s = root(e, a);
    let zero = e.fconst(0.0);
    let (qh, ql, swapped) = ratio(e, (a, zero), s);
    let r = angle(e, qh, ql, swapped, None);
    copysign(e, r, x)
}

/// `acos x`, within 1 ulp (see the module documentation).
pub fn acos<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let a = e.abs(x);
    let s = root(e, a);
    let zero = e.fconst(0.0);
    let (qh, ql, swapped) = ratio(e, s, (a, zero));
    let one = e.fconst(1.0);
    let x_sign = copysign(e, one, x);
    angle(e, qh, ql, swapped, Some(x_sign))
}
