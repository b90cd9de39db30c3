//! `log` (natural logarithm).
//!
//! **Reduction.** Subnormal arguments are first scaled by 2⁵⁴. Then `x = 2ᵉ·m` with
//! `m ∈ [√½, √2)`, read off the bit pattern: adding `0x3ff0… − bits(√½)` to the pattern
//! carries into the exponent field exactly when the significand is at least `√2`, so the
//! (logical) top 12 bits are the biased `e` and `m` is the pattern with that exponent
//! replaced by 0. `f = m − 1` is exact (Sterbenz), `f ∈ [−0.293, 0.415)`.
//!
//! **Polynomial.** With `s = f/(2 + f)` (`|s| ≤ 0.1716`), `log(1 + f) = 2·atanh(s) =
//! f − f²/2 + s·(f²/2 + R)` where `R = z·(2/3 + z·(2/5 + …))`, `z = s²`, the Taylor series
//! truncated after `2z¹⁰/21` (remainder below `2|s|·z¹¹/23 < 2⁻⁶⁰·|f|`). This is the classic
//! formulation (as in fdlibm): the leading term `f` is exact, the corrections are at most 9%
//! of it and carry a few 2⁻⁵³ of relative error, so `log(1 + f)` is within 0.5 ulp + about
//! 2⁻⁵⁶ relative before the last operation.
//!
//! **Result.** `e·LN2_HI` is exact (42-bit `LN2_HI`, `|e| ≤ 1130`), `e·LN2_LO` joins the
//! small terms, and one final subtraction rounds: < 1 ulp overall. `log(±0) = −inf`,
//! `log(x < 0) = NaN`, `log(+inf) = +inf`, `log(NaN) = NaN` are selected at the end.

use super::exp::{LN2_HI, LN2_LO};
use super::{horner, Cmp, MathEmitter};

/// `2/3, 2/5, …, 2/21`.
const ATANH_TAYLOR: [f64; 10] = [
    0.6666666666666666,
    0.4,
    0.2857142857142857,
    0.2222222222222222,
    0.18181818181818182,
    0.15384615384615385,
    0.13333333333333333,
    0.11764705882352941,
    0.10526315789473684,
    0.09523809523809523,
];

/// `bits(1.0) − bits(√½)`.
const TO_SQRT_HALF: u64 = 0x3ff0_0000_0000_0000 - 0x3fe6_a09e_667f_3bcd;

/// `ln x`, within 1 ulp (see the module documentation).
pub fn log<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    // Subnormals (and zero, negatives: replaced below) scaled into the normal range.
    let min_normal = e.fconst(f64::MIN_POSITIVE);
    let tiny = e.cmp(Cmp::Lt, x, min_normal);
    let two54 = e.fconst(18014398509481984.0);
    let scaled = e.mul(x, two54);
    let xs = e.select(tiny, scaled, x);
    let fifty_four = e.fconst(54.0);
    let zero = e.fconst(0.0);
    let e_adjust = e.select(tiny, fifty_four, zero);

    let ix = e.bits_of(xs);
    let offset = e.iconst(TO_SQRT_HALF);
    let shifted = e.iadd(ix, offset);
    let biased = e.ushr(shifted, 52);
    let top_mask = e.iconst(0xfff0_0000_0000_0000);
    let top = e.band(shifted, top_mask);
    let m_bits = e.isub(ix, top);
    let one_bits = e.iconst(0x3ff0_0000_0000_0000);
    let m_bits = e.iadd(m_bits, one_bits);
    let m = e.float_of(m_bits);
    // The biased exponent as a float: 2⁵² + E exactly, minus 2⁵² + 1023.
    let magic = e.iconst(0x4330_0000_0000_0000);
    let ef = e.bor(biased, magic);
    let ef = e.float_of(ef);
    let unbias = e.fconst(4503599627370496.0 + 1023.0);
    let ef = e.sub(ef, unbias);
    let dk = e.sub(ef, e_adjust);

    let one = e.fconst(1.0);
    let f = e.sub(m, one);
    let two = e.fconst(2.0);
    let denom = e.add(two, f);
    let s = e.div(f, denom);
    let z = e.mul(s, s);
    let p = horner(e, z, &ATANH_TAYLOR);
    let r = e.mul(z, p);
    let half = e.fconst(0.5);
    let hf = e.mul(half, f);
    let hfsq = e.mul(hf, f);
    let ln2_lo = e.fconst(LN2_LO);
    let ln2_hi = e.fconst(LN2_HI);
    let klo = e.mul(dk, ln2_lo);
    let hr = e.add(hfsq, r);
    let shr = e.fma(s, hr, klo);
    let t = e.sub(hfsq, shr);
    let t = e.sub(t, f);
    let khi = e.mul(dk, ln2_hi);
    let y = e.sub(khi, t);

    let zero_in = e.cmp(Cmp::Eq, x, zero);
    let neg_inf = e.fconst(f64::NEG_INFINITY);
    let y = e.select(zero_in, neg_inf, y);
    let negative = e.cmp(Cmp::Lt, x, zero);
    let nan = e.fconst(f64::NAN);
    let y = e.select(negative, nan, y);
    let inf = e.fconst(f64::INFINITY);
    let is_inf = e.cmp(Cmp::Eq, x, inf);
    let y = e.select(is_inf, inf, y);
    let is_nan = e.cmp(Cmp::Uno, x, x);
    let quiet = e.add(x, x);
    e.select(is_nan, quiet, y)
}
