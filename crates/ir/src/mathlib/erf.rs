//! `erf`.
//!
//! **Small arguments, `|x| < 0.75`.** `erf(x) = x + x·Q(x²)` with `Q(z) = erf(√z)/√z − 1`
//! (`Q(0) = 2/√π − 1`), a degree-12 polynomial fitted on `[0, 0.5625]` (fit error below
//! 10⁻²²). `x` is exact and `x·Q` is at most 13% of the result; its rounding errors (the
//! rounded `x²`, the Horner steps) amount to a few 2⁻⁵⁶ of `x`, and the `fma` rounds once:
//! below 0.85 ulp.
//!
//! **Large arguments, `0.75 ≤ |x| ≤ 6`.** `erf(x) = 1 − exp(−x²)·erfcx(x)`, where
//! `erfcx(x) = exp(x²)·erfc(x)` is smooth and slowly varying. `erfcx` is a degree-18
//! polynomial in `s = |x| − mid` on each of `[0.75, 1.5]`, `[1.5, 2.75]`, `[2.75, 4.25]`,
//! `[4.25, 6]` (relative fit errors below 4·10⁻²⁰; `s` is exact by Sterbenz), its
//! coefficients chosen lane by lane with selects. The constant term is a double-double, so
//! `erfcx` is known to about 2⁻⁵⁵ relative (only `s·P(s)`, at most 35% of it, is rounded).
//! `x²` is split exactly (`fma`) and `exp(−x²)` comes from [`super::exp::reduce`] as a
//! double-double (about 2⁻⁵⁷). The product `erfc` and `1 − erfc` are formed as
//! double-doubles (`erfc ≤ 0.29`), so only the final addition rounds: about 0.5 ulp + 0.3 ·
//! 2⁻⁵³·2⁵³ < 0.9 ulp. Above 6, `erf` rounds to ±1 (`erfc(6) < 2⁻⁵⁴`): `|x|` is clamped.
//!
//! Coefficients: Chebyshev interpolants (mpmath `chebyfit` at 200 bits, near-minimax) of
//! `Q` and of `erfcx(mid + s)`, rounded to `f64`. The sign is copied bitwise (`erf(−0) = −0`,
//! NaN stays NaN, `erf(±inf) = ±1`).

use super::exp::{reduce, Reduced};
use super::{clamp_above, copysign, fast_two_sum, horner, pow2, Cmp, MathEmitter};

/// Q(z) = erf(√z)/√z − 1 on [0, 0.5625], degree 12; fit error 8.86e-23
const SMALL: [f64; 13] = [
    0.1283791670955126,
    -0.37612638903183754,
    0.11283791670955125,
    -0.026866170645131044,
    0.00522397762543796,
    -0.0008548327022938597,
    0.00012055332941926721,
    -1.4925648277963885e-05,
    1.6462039947573494e-06,
    -1.636401288305236e-07,
    1.4776618764400006e-08,
    -1.1958368091524506e-09,
    7.272605667746851e-11,
];
/// erfcx(mid + s) per piece: (mid, lo part of the constant term, coefficients).
const PIECES: [(f64, f64, [f64; 19]); 4] = [
    // [0.75, 1.5]: relative fit error 1.56e-22
    (
        1.125,
        -5.777675056089129e-18,
        [
            0.3956980795529959,
            -0.2380584881012718,
            0.12788228043906513,
            -0.06279394840488235,
            0.028619544241786244,
            -0.012238784453149252,
            0.0049503039106645235,
            -0.0019056264438934796,
            0.0007016185403172994,
            -0.0002480679082238029,
            8.450842881783569e-05,
            -2.7817437149231485e-05,
            8.868966920591895e-06,
            -2.7446349593411563e-06,
            8.259112389060845e-07,
            -2.417866034740977e-07,
            6.912609687023508e-08,
            -2.0285331636778858e-08,
            5.5263910170262604e-09,
        ],
    ),
    // [1.5, 2.75]: relative fit error 3.64e-20
    (
        2.125,
        8.859480007862904e-18,
        [
            0.24267036461265454,
            -0.09703011749173075,
            0.0364813649427267,
            -0.013004811325624312,
            0.004423070437887482,
            -0.00144231465804665,
            0.00045271726318064465,
            -0.00013722584962730733,
            4.027808316082537e-05,
            -1.1474427606029673e-05,
            3.178985088741602e-06,
            -8.580134175477094e-07,
            2.2594999740619086e-07,
            -5.814131811136768e-08,
            1.4632478893000808e-08,
            -3.5886874771252673e-09,
            8.672275687979421e-10,
            -2.2795882565301801e-10,
            5.286990733152946e-11,
        ],
    ),
    // [2.75, 4.25]: relative fit error 6.39e-21
    (
        3.5,
        -1.355844542216092e-18,
        [
            0.1552936556088943,
            -0.041323577833252495,
            0.010661133192510575,
            -0.002673074439643651,
            0.0006526863268788949,
            -0.000155468918227068,
            3.6181704361467194e-05,
            -8.237986559689986e-06,
            1.8371878497284011e-06,
            -4.017398034588343e-07,
            8.621971337663792e-08,
            -1.817648017785412e-08,
            3.766982461653194e-09,
            -7.680888420820348e-10,
            1.5415202328876287e-10,
            -3.0340128463783295e-11,
            5.9123182421979915e-12,
            -1.2542235815321368e-12,
            2.371077073558871e-13,
        ],
    ),
    // [4.25, 6.0]: relative fit error 7.38e-22
    (
        5.125,
        2.17250001322154e-18,
        [
            0.10809973724654746,
            -0.020356860318401043,
            0.0037708281147421233,
            -0.0006875774868984405,
            0.0001234967471938077,
            -2.186266301207274e-05,
            3.816866418982638e-06,
            -6.574921756288626e-07,
            1.1180475468628134e-07,
            -1.8776179663547002e-08,
            3.1153669442934584e-09,
            -5.108948245633537e-10,
            8.28380338853598e-11,
            -1.328552841878181e-11,
            2.1079137460090484e-12,
            -3.298868287484646e-13,
            5.128449549114045e-14,
            -8.613488443840937e-15,
            1.3110560943810705e-15,
        ],
    ),
];

/// The lower ends of pieces 1, 2 and 3 of `PIECES`.
const BREAKS: [f64; 3] = [1.5, 2.75, 4.25];

/// `erf x`, within 1 ulp (see the module documentation).
pub fn erf<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let a = e.abs(x);
    let a = clamp_above(e, a, 6.0);

    // |x| < 0.75.
    let z = e.mul(a, a);
    let q = horner(e, z, &SMALL);
    let small = e.fma(a, q, a);

    // 0.75 ≤ |x| ≤ 6: the piece's coefficients, selected per lane.
    let masks = BREAKS.map(|b| {
        let b = e.fconst(b);
        e.cmp(Cmp::Ge, a, b)
    });
    let pick = |e: &mut E, coef: &dyn Fn(usize) -> f64| {
        let mut c = e.fconst(coef(0));
        for (piece, &m) in masks.iter().enumerate() {
            let alt = e.fconst(coef(piece + 1));
            c = e.select(m, alt, c);
        }
        c
    };
    let mid = pick(e, &|p| PIECES[p].0);
    let s = e.sub(a, mid);
    let n = PIECES[0].2.len();
    let mut p = pick(e, &|piece| PIECES[piece].2[n - 1]);
    for j in (1..n - 1).rev() {
        let c = pick(e, &|piece| PIECES[piece].2[j]);
        p = e.fma(p, s, c);
    }
    let c0_lo = pick(e, &|piece| PIECES[piece].1);
    let c0 = pick(e, &|piece| PIECES[piece].2[0]);
    let tail = e.fma(s, p, c0_lo);
    let (gh, gl) = fast_two_sum(e, c0, tail);

    // exp(−x²) = eh + el.
    let neg_z = e.neg(z);
    let zl = e.fma(a, a, neg_z);
    let neg_zl = e.neg(zl);
    let Reduced { k, qh, ql } = reduce(e, neg_z, Some(neg_zl));
    let one = e.fconst(1.0);
    let (u, ue) = fast_two_sum(e, one, qh);
    let el = e.add(ue, ql);
    let sc = pow2(e, k);
    let eh = e.mul(u, sc);
    let el = e.mul(el, sc);

    // erfc = eh·gh + (eh·gl + el·gh), then 1 − erfc.
    let ph = e.mul(eh, gh);
    let neg_ph = e.neg(ph);
    let ph_err = e.fma(eh, gh, neg_ph);
    let cross = e.mul(el, gh);
    let cross = e.fma(eh, gl, cross);
    let pl = e.add(ph_err, cross);
    let (r, re) = fast_two_sum(e, one, neg_ph);
    let re = e.sub(re, pl);
    let large = e.add(r, re);

    let edge = e.fconst(0.75);
    let is_small = e.cmp(Cmp::Lt, a, edge);
    let y = e.select(is_small, small, large);
    copysign(e, y, x)
}
