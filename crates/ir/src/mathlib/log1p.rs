//! `log1p`: `ln(1 + x)` without the loss of `x`'s low bits in `1 + x`.
//!
//! **Reduction.** `1 + x = u + err` exactly by TwoSum (`u = fl(1 + x)`; for `x ≥ −1`, `u` is a
//! multiple of 2⁻⁵³, so `u` is 0 or normal), and `log1p(x) = log(u) + log1p(err/u)`. `log(u)`
//! is [`super::log`]'s table-driven form without its subnormal scaling
//! ([`super::log::table_reduce_normal`]: `u = 2ᵏ·c·(1 + r)`, `r` exact in `[−0.0014, 2⁻⁹]`, `log c`
//! as `hi + lo` from the table), so `log1p(x) = k·ln2 + log c + log1p(r) + d` with
//! `d = err/u`: `|d| ≤ 2⁻⁵³` and `log1p(d) = d` to within `d²/2 < 2⁻¹⁰⁷`.
//!
//! *Near 0* (`|x| < 2⁻¹⁰`): `u` lies in `[1 − 2⁻¹⁰, 1 + 2⁻¹⁰]`, the two subintervals beside 1
//! whose row has `c = 1`, `log c = 0`, and there `k = 0`: `r = u − 1` and `r + d = x`, so `r`
//! is replaced by `x` itself (inside the fitted range of the polynomial) and `d` by 0. Then
//! `log1p(x) = x + x²·P(x)` with the correction below `2⁻¹⁰·|x|`, each of its roundings below
//! 2⁻⁶³ relative to the result: within 0.5 ulp + 2⁻⁹ ulp, and exactly `x` for `|x| < 2⁻⁵⁴`
//! (subnormals included).
//!
//! *Elsewhere* the result is at least `log1p(2⁻¹⁰) > 2⁻¹⁰·0.999` in magnitude, and the sum is
//! `log`'s (`k·LN2_HI + hi` exact, FastTwoSum with `r`, the small terms `lo`, `k·LN2_LO`,
//! `r²·P(r)` and now `d` rounded at 2⁻⁷⁰ or below): the one large rounding is the final
//! addition, ≤ 0.5 ulp + 2⁻⁶ ulp. `d` costs one division.
//!
//! **Special values.** `log1p(±0) = ±0` (the sign copied from `x`: `log1p(x)` has `x`'s sign),
//! `log1p(−1) = −inf`, `log1p(x < −1) = NaN`, `log1p(+inf) = +inf`, NaN gives NaN: selected
//! at the end.

use super::exp::{LN2_HI, LN2_LO};
use super::log::{table_reduce_normal, LogReduced, LOG1P_FIT};
use super::{copysign, fast_two_sum, horner, two_sum, Cmp, MathEmitter};

/// `ln(1 + x)`, within 1 ulp (see the module documentation).
pub fn log1p<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let one = e.fconst(1.0);
    let (u, err) = two_sum(e, one, x);
    let bias = e.fconst(4503599627370496.0 + 1023.0);
    let LogReduced {
        k,
        r,
        log_c_hi,
        log_c_lo,
    } = table_reduce_normal(e, u, bias);
    let d = e.div(err, u);
    // Near 0: r + d = x exactly, so r = x and d = 0.
    let ax = e.abs(x);
    let edge = e.fconst(1.0 / 1024.0);
    let near = e.cmp(Cmp::Lt, ax, edge);
    let r = e.select(near, x, r);
    let zero = e.fconst(0.0);
    let d = e.select(near, zero, d);

    let p = horner(e, r, &LOG1P_FIT);
    let r2 = e.mul(r, r);
    let poly = e.mul(r2, p);
    let ln2_hi = e.fconst(LN2_HI);
    let ln2_lo = e.fconst(LN2_LO);
    let t = e.fma(k, ln2_hi, log_c_hi);
    let (hi, lo1) = fast_two_sum(e, t, r);
    let lo = e.fma(k, ln2_lo, log_c_lo);
    let small = e.add(poly, lo1);
    let small = e.add(small, lo);
    let small = e.add(small, d);
    let y = e.add(hi, small);
    let y = copysign(e, y, x);

    // x ≤ −1 or NaN: −inf at −1, NaN otherwise; +inf stays +inf.
    let neg_one = e.fconst(-1.0);
    let at_neg_one = e.cmp(Cmp::Eq, x, neg_one);
    let neg_inf = e.fconst(f64::NEG_INFINITY);
    let nan = e.fconst(f64::NAN);
    let outside = e.select(at_neg_one, neg_inf, nan);
    let inf = e.fconst(f64::INFINITY);
    let finite = e.cmp(Cmp::Lt, x, inf);
    let y = e.select(finite, y, inf);
    let inside = e.cmp(Cmp::Gt, x, neg_one);
    e.select(inside, y, outside)
}
