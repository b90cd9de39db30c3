//! `sinh` and `cosh`, from `e^a` and `e^−a` (`a = |x|`) by one shared table reduction.
//!
//! **Reduction.** As in [`super::exp::table_exp`]: `k' = round(a·128/ln2)` (through `SHIFT`),
//! `r = (a − k'·LN2_128_HI) − k'·LN2_128_LO` (`|r| < 0.0028`), so `e^a = 2ᴷ·2^(j/128)·e^r`
//! with `j = k' mod 128`, `K = floor(k'/128)`; and from the same `k'` and `r`,
//! `e^−a = 2^Kn·2^(jn/128)·e^−r` with `jn = −k' mod 128` (the low bits of `SHIFT − k'`, exact)
//! and `Kn = floor(−k'/128)`. `expm1(±r)` is `table_exp`'s degree-5 polynomial (error below
//! 2⁻⁶⁰), and each exponential is `2ᴷ·(th + small)` with `th` the table's rounded `2^(j/128)`
//! and `small = th·expm1(r) + tl` within 2⁻⁶¹ of its value (`|small| < 0.004`). Both
//! exponentials are put over `2ᴷ`: `e^−a = 2ᴷ·(B + Bs)` with `B = 2ᵐ·thn`, `Bs = 2ᵐ·smalln`,
//! `m = Kn − K` (exact products; `m` is clamped to `−1000` for large `a`, where `e^−a` is below
//! 2⁻¹⁰⁰⁰ of `e^a` and replacing it changes nothing that rounds). `a` is clamped to 711
//! (`sinh`, `cosh` overflow from 710.4758600739439 on), so `K ≤ 1025`.
//!
//! **cosh** `= 2ᴷ⁻¹·((th + B) + small + Bs)`: `th ≥ 1 ≥ B`, so FastTwoSum forms `th + B`
//! exactly; its error joins `small + Bs`, and the sum `S ∈ [2, 4)` rounds once after errors
//! below 2⁻⁵⁹ (2⁻⁸ ulp of `S`). The product with `2ᴷ⁻¹` is [`super::exp::scale`]'s: exact, or
//! infinity exactly where the result overflows. ≤ 0.51 ulp.
//!
//! **sinh**, `a ≥ 1/8`: `2ᴷ⁻¹·((th − B) + small − Bs)` in the same way (`K ≥ 0`, `m ≤ −1`, so
//! `B < 1 ≤ th`). `S = 2·sinh(a)·2⁻ᴷ` is at least 0.25 (`a = 1/8`), against absolute errors
//! below 2⁻⁵⁹ before its one rounding: ≤ 0.5 + 2⁻⁵ ulp (measured 0.51).
//!
//! **sinh**, `a < 1/8`: `a + a³·P(a²)` with `P` the Taylor polynomial `1/3! + z/5! + … +
//! z⁴/11!` (truncation below `a¹²/13! < 2⁻⁶⁸` relative). The correction is below `a/380`, so
//! its roundings are below 2⁻⁶⁰ of the result and the final `fma` rounds once: ≤ 0.51 ulp;
//! exactly `a` for `a < 2⁻²⁶` (subnormals included).
//!
//! **Signs and special values.** `sinh` copies `x`'s sign bitwise onto `sinh(a)`
//! (`sinh(−0) = −0`, `sinh(±inf) = ±inf`); `cosh` is even. NaN propagates through the
//! arithmetic (the clamps keep NaN).

use super::exp::{scale, EXP2, INV_LN2_128, LN2_128_HI, LN2_128_LO};
use super::SHIFT;
use super::{clamp_above, clamp_below, copysign, fast_two_sum, horner, pow2, Cmp, MathEmitter};

/// `1/3!, 1/5!, …, 1/11!`.
const SINH_TAYLOR: [f64; 5] = [
    0.16666666666666666,
    0.008333333333333333,
    0.0001984126984126984,
    2.7557319223985893e-06,
    2.505210838544172e-08,
];

/// `e^a = 2ᴷ·(th + small)` and `e^−a = 2ᴷ·(b + bs)` (see the module documentation).
struct ExpPair<F> {
    big_k: F,
    th: F,
    small: F,
    b: F,
    bs: F,
}

/// `expm1(r)` for `|r| < 0.0028`, as [`super::exp::table_exp`] computes it.
fn expm1_tiny<E: MathEmitter>(e: &mut E, r: E::F) -> E::F {
    let c5 = e.fconst(1.0 / 120.0);
    let c4 = e.fconst(1.0 / 24.0);
    let c3 = e.fconst(1.0 / 6.0);
    let c2 = e.fconst(0.5);
    let q = e.fma(r, c5, c4);
    let q = e.fma(r, q, c3);
    let q = e.fma(r, q, c2);
    let r2 = e.mul(r, r);
    e.fma(r2, q, r)
}

/// The shared reduction of `a` in `[0, 711]` (NaN propagates).
fn exp_pair<E: MathEmitter>(e: &mut E, a: E::F) -> ExpPair<E::F> {
    let inv = e.fconst(INV_LN2_128);
    let shift = e.fconst(SHIFT);
    let t = e.fma(a, inv, shift);
    let kf = e.sub(t, shift);
    let j = e.bits_of(t);
    let tn = e.sub(shift, kf);
    let jn = e.bits_of(tn);
    let neg_k = e.neg(kf);
    let l_hi = e.fconst(LN2_128_HI);
    let l_lo = e.fconst(LN2_128_LO);
    let r_hi = e.fma(neg_k, l_hi, a);
    let r = e.fma(neg_k, l_lo, r_hi);
    let neg_r = e.neg(r);
    let p = expm1_tiny(e, r);
    let pn = expm1_tiny(e, neg_r);
    let [th, tl] = e.lookup_row(&EXP2, j);
    let small = e.fma(th, p, tl);
    let [thn, tln] = e.lookup_row(&EXP2, jn);
    let smalln = e.fma(thn, pn, tln);
    let eighth = e.fconst(1.0 / 128.0);
    let scaled = e.mul(kf, eighth);
    let big_k = e.floor(scaled);
    let scaled_n = e.mul(neg_k, eighth);
    let big_kn = e.floor(scaled_n);
    let m = e.sub(big_kn, big_k);
    let m = clamp_below(e, m, -1000.0);
    let sc = pow2(e, m);
    let b = e.mul(thn, sc);
    let bs = e.mul(smalln, sc);
    ExpPair {
        big_k,
        th,
        small,
        b,
        bs,
    }
}

/// `sinh x`, within 1 ulp (see the module documentation).
pub fn sinh<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let a = e.abs(x);
    // a < 1/8.
    let z = e.mul(a, a);
    let p = horner(e, z, &SINH_TAYLOR);
    let a3 = e.mul(a, z);
    let small_form = e.fma(a3, p, a);

    // a ≥ 1/8: 2ᴷ⁻¹·((th − B) + small − Bs).
    let ac = clamp_above(e, a, 711.0);
    let ExpPair {
        big_k,
        th,
        small,
        b,
        bs,
    } = exp_pair(e, ac);
    let neg_b = e.neg(b);
    let (dh, dl) = fast_two_sum(e, th, neg_b);
    let lo = e.add(dl, small);
    let lo = e.sub(lo, bs);
    let s = e.add(dh, lo);
    let one = e.fconst(1.0);
    let k_less = e.sub(big_k, one);
    let large_form = scale(e, s, k_less);

    let edge = e.fconst(0.125);
    let is_small = e.cmp(Cmp::Lt, a, edge);
    let y = e.select(is_small, small_form, large_form);
    copysign(e, y, x)
}

/// `cosh x`, within 1 ulp (see the module documentation).
pub fn cosh<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let a = e.abs(x);
    let ac = clamp_above(e, a, 711.0);
    let ExpPair {
        big_k,
        th,
        small,
        b,
        bs,
    } = exp_pair(e, ac);
    let (dh, dl) = fast_two_sum(e, th, b);
    let lo = e.add(dl, small);
    let lo = e.add(lo, bs);
    let s = e.add(dh, lo);
    let one = e.fconst(1.0);
    let k_less = e.sub(big_k, one);
    scale(e, s, k_less)
}
