//! `pow(x, y) = xʸ`, as `±exp(y·log|x|)` with `log|x|` and the product as double-doubles.
//!
//! **log|x| to about 2⁻⁷⁰ relative.** `log`'s table-driven reduction (`log::table_reduce`:
//! subnormals scaled by 2⁵⁴, `|x| = 2ᵏ·z`, `LOG_TABLE[i] = (c⁻¹, log c as hi + lo)`) gives
//! `r = z·c⁻¹ − 1` exactly, `r ∈ [−0.0014077, 2⁻⁹]`, and
//! `log|x| = k·ln2 + log c + r − r²/2 + r³·Q(r)`, summed as (after Arm's optimized-routines
//! `pow`):
//! - `t1 = k·LN2_HI + hi` exactly (both multiples of 2⁻⁴²), `t2 + lo2 = t1 + r` exactly
//!   (FastTwoSum: `|t1| ≥ |r|` or `t1 = 0`, as in `log`);
//! - `ar2 = fl(−r²/2)` and its error `lo3` exactly (`fma`), `hi + lo4 = t2 + ar2` exactly
//!   (FastTwoSum: `|t2| ≥ 2⁻¹⁰·0.99 > |ar2|` away from the two rows beside 1, and `t2 = r`
//!   there);
//! - `lo1 = fl(k·LN2_LO + lo)`: below 2⁻³³, rounded to 2⁻⁸⁷, with `ln2 − LN2_HI − LN2_LO`
//!   (below 2⁻⁹⁶) times `|k| ≤ 1130` and the table's 2⁻⁹⁷: absolute error below 2⁻⁸⁵;
//! - `p = fl(fl(ar2·r)·Q(r)) ≈ r³·Q`, `Q` a degree-5 fit of `(log1p(r) − r + r²/2)/(−r³/2)`
//!   (Chebyshev interpolant at 300 bits, error below 2⁻⁵⁴·⁵ with its coefficients rounded):
//!   `|p| < 2⁻²⁸·⁶`, with its truncation and three roundings below `|r|³·2⁻⁵¹`, i.e. below
//!   `2⁻⁶⁹·|r|`;
//! - `lo = lo1 + lo2 + lo3 + lo4 + p` (four roundings, each below 2⁻⁵³ of a partial sum of at
//!   most 2⁻²⁸ for `k ≠ 0` or `c ≠ 1`, of at most `r²` on the rows beside 1), and
//!   `lh + ll = hi + lo` (FastTwoSum, then `ll` rounds: below 2⁻¹⁰⁵ relative).
//!
//! The result `lh + ll` is within about 2⁻⁷⁰·|log|x|| of `log|x|`: where `k ≠ 0`,
//! `|log|x|| > 0.3` against absolute errors below 2⁻⁸⁰; where `k = 0` and `c ≠ 1`,
//! `|log|x|| > 2⁻¹⁰·0.99` against absolute errors below 2⁻⁸⁰; on the rows beside 1 every term
//! is relative to `|r| ≈ |log|x||` (`lo1 = 0`, `t1 = 0`).
//!
//! **y·log|x|.** `ph = fl(y·lh)`, `pl = fl(fma(y, ll, fma(y, lh, −ph)))`: the first error
//! term exact, `pl` rounded relative to itself, so `ph + pl` is within 2⁻¹⁰⁴ relative of
//! `y·(lh + ll)`. Where the result is neither 0 nor infinite, `|ph| < 746`, so the error of
//! `log|x|` becomes an absolute error below `746·2⁻⁷⁰ < 2⁻⁶⁰·⁵` in the exponent, i.e. a
//! relative error below 2⁻⁶⁰·⁵ in the result.
//!
//! **exp(ph + pl).** `exp`'s table-driven form on the double-double (`exp::table_exp_dd`: `pl`
//! joins the reduced argument `r` before its one rounding, below 2⁻⁶¹·⁵): before the final
//! rounding `th + small` is within `2⁻⁶¹ + 2⁻⁶¹·⁵` relative (`exp`'s budget) `+ 2⁻⁶⁰·⁵` of
//! `|x|ʸ`, about 2⁻⁵⁹·⁵ in total, i.e. at most 0.5 + 2⁻⁶·⁵ ≈ 0.511 ulp after it; scaling by
//! `2ᴷ` is exact for normal results and rounds once more into the subnormal range (so there
//! the result is within 0.5 ulp of the subnormal grid plus half an ulp of 53 bits: < 1 ulp,
//! gradual underflow). `ph` is clamped to `[−746, 710]` (beyond, the result is 0 or inf);
//! `pl` is replaced by 0 where `|ph| ≥ 746` or `ph` is NaN (the result is then decided by
//! `ph` alone, and `pl` can be large, or NaN when `ph` is infinite).
//!
//! **Sign and special values** (C99 Annex F, as glibc), without branches:
//! - `y` is an integer and its parity is read off bits: `|y|` clamped to 2⁵³ (even; inf too),
//!   plus 2⁵² when below 2⁵² (rounding it to an integer in the low bits), so the sum's last
//!   bit is the parity and `sum − 2⁵² = |y|` tests integrality. The result takes `x`'s sign
//!   bit when `y` is an odd integer: `pow(−2, 3) = −8`, `pow(−0, 3) = −0`,
//!   `pow(−0, −1) = −inf`, `pow(−inf, 3) = −inf`, `pow(−inf, −3) = −0`.
//! - `log|x|` is `−inf` at `±0`, `+inf` at `±inf`, NaN at NaN, so `y·log|x|` is `±inf` and the
//!   clamped `exp` gives 0 or inf for `pow(±0, y ≠ 0)` and `pow(±inf, y ≠ 0)`;
//! - for `|x| ≠ 1`, `|log|x|| ≥ 2⁻⁵³`, so `y = ±inf` gives 0 or inf by `|x| < 1` or `> 1`;
//!   `|x| = 1` selects a magnitude of 1 (`y·log|x|` is NaN for `y = ±inf`), so that
//!   `pow(1, y) = 1` for every `y` (even NaN), `pow(−1, ±inf) = 1` (inf counts as even),
//!   `pow(−1, y) = ±1` for integer `y`, and the rule below gives NaN for `pow(−1, NaN)`;
//! - `x < 0` finite (not `−0`, not `−inf`) and `y` not an integer (or NaN): NaN;
//! - `pow(x, ±0) = 1` for every `x` (even NaN), selected last; other NaN arguments
//!   propagate.

use super::exp::{scale, table_exp_dd, TableExp, LN2_HI, LN2_LO};
use super::log::{table_reduce, LogReduced};
use super::{clamp_above, clamp_below, fast_two_sum, horner, Cmp, MathEmitter};

/// `Q(r) ≈ (log1p(r) − r + r²/2)/(−r³/2)` on `[−0.0014077, 2⁻⁹]`, degree 5 (Chebyshev
/// interpolant at 300 bits, absolute error below 2⁻⁵⁴·⁵ with the coefficients rounded).
const LOG1P_TAIL: [f64; 6] = [
    -0.6666666666666666,
    0.49999999999999956,
    -0.39999999999940533,
    0.33333333426805584,
    -0.28571497889276576,
    0.24963754094958998,
];

/// `2⁵²`, `2⁵³`.
const TWO52: f64 = 4503599627370496.0;
const TWO53: f64 = 9007199254740992.0;

/// `log a` as `hi + lo` (about 2⁻⁷⁰ relative, see the module documentation) for positive
/// finite `a`; finite garbage for other `a`.
fn log_dd<E: MathEmitter>(e: &mut E, a: E::F) -> (E::F, E::F) {
    let LogReduced {
        k,
        r,
        log_c_hi,
        log_c_lo,
    } = table_reduce(e, a);
    let ln2_hi = e.fconst(LN2_HI);
    let ln2_lo = e.fconst(LN2_LO);
    let t1 = e.fma(k, ln2_hi, log_c_hi);
    let (t2, lo2) = fast_two_sum(e, t1, r);
    let lo1 = e.fma(k, ln2_lo, log_c_lo);
    // −r²/2 as ar2 + lo3 exactly.
    let neg_half = e.fconst(-0.5);
    let ar = e.mul(r, neg_half);
    let ar2 = e.mul(r, ar);
    let neg_ar2 = e.neg(ar2);
    let lo3 = e.fma(ar, r, neg_ar2);
    let (hi, lo4) = fast_two_sum(e, t2, ar2);
    // r³·Q as (−r³/2)·Q'.
    let ar3 = e.mul(ar2, r);
    let q = horner(e, r, &LOG1P_TAIL);
    let p = e.mul(ar3, q);
    let lo = e.add(lo1, lo2);
    let lo = e.add(lo, lo3);
    let lo = e.add(lo, lo4);
    let lo = e.add(lo, p);
    fast_two_sum(e, hi, lo)
}

/// `xʸ`, within 1 ulp, with C99 Annex F's special values (see the module documentation).
pub fn pow<E: MathEmitter>(e: &mut E, x: E::F, y: E::F) -> E::F {
    let zero = e.fconst(0.0);
    let one = e.fconst(1.0);
    let inf = e.fconst(f64::INFINITY);
    let neg_inf = e.fconst(f64::NEG_INFINITY);

    // log|x|, with −inf at ±0, +inf at ±inf, NaN at NaN.
    let ax = e.abs(x);
    let (lh, ll) = log_dd(e, ax);
    let finite = e.cmp(Cmp::Lt, ax, inf);
    let lh = e.select(finite, lh, ax);
    let min_sub = e.fconst(f64::from_bits(1));
    let is_zero = e.cmp(Cmp::Lt, ax, min_sub);
    let lh = e.select(is_zero, neg_inf, lh);

    // y·log|x| as ph + pl.
    let ph = e.mul(y, lh);
    let neg_ph = e.neg(ph);
    let err = e.fma(y, lh, neg_ph);
    let pl = e.fma(y, ll, err);
    // Beyond 746 (and at NaN) ph decides alone: pl may exceed ulp(746) there, or be NaN.
    let aph = e.abs(ph);
    let limit = e.fconst(746.0);
    let in_range = e.cmp(Cmp::Lt, aph, limit);
    let pl = e.select(in_range, pl, zero);

    // |x|ʸ.
    let ph = clamp_above(e, ph, 710.0);
    let ph = clamp_below(e, ph, -746.0);
    let TableExp { big_k, th, small } = table_exp_dd(e, ph, pl);
    let s = e.add(th, small);
    let m = scale(e, s, big_k);
    // |x| = 1: 1 (for y = ±inf too, where y·log|x| is NaN).
    let ax_one = e.cmp(Cmp::Eq, ax, one);
    let m = e.select(ax_one, one, m);

    // y an integer, and its parity in the last bit of `t`.
    let ay = e.abs(y);
    let ay = clamp_above(e, ay, TWO53);
    let two52 = e.fconst(TWO52);
    let below = e.cmp(Cmp::Lt, ay, two52);
    let c = e.select(below, two52, zero);
    let t = e.add(ay, c);
    let n = e.sub(t, c);
    let is_int = e.cmp(Cmp::Eq, n, ay);
    let t = e.select(is_int, t, zero);
    let t_bits = e.bits_of(t);
    let odd = e.shl(t_bits, 63);
    let x_bits = e.bits_of(x);
    let sign = e.band(x_bits, odd);
    let m_bits = e.bits_of(m);
    let r_bits = e.bor(m_bits, sign);
    let r = e.float_of(r_bits);

    // −inf < x < 0 and y not an integer: NaN.
    let xv = e.select(finite, x, one);
    let xv = e.select(is_int, one, xv);
    let negative = e.cmp(Cmp::Lt, xv, zero);
    let nan = e.fconst(f64::NAN);
    let r = e.select(negative, nan, r);

    // pow(x, ±0) = 1.
    let y_zero = e.cmp(Cmp::Eq, y, zero);
    e.select(y_zero, one, r)
}
