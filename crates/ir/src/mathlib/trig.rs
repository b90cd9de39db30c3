//! `sin`, `cos` and `tan`, sharing one argument reduction.
//!
//! **Reduction.** `x = k·π/2 + r` with `|r| ≤ π/4 + 2⁻²⁰`, `r = rh + rl` a double-double,
//! `k mod 4` the quadrant. Cody–Waite serves `|x| < 2³⁰` and Payne–Hanek the rest: both are
//! evaluated and one selected per lane, except that arguments all below `2³⁰` run Cody–Waite
//! alone, behind a branch where the emitter has one (the same values). The worst case of the reduction over all `f64`
//! (`x = 6381956970095103·2⁷⁹⁷`, `|r| ≈ 2⁻⁶⁰·⁹`) bounds `|r| ≥ 2⁻⁶¹` for every `x` with
//! `k ≠ 0`, so an absolute error of `2⁻¹²⁴` in `r` is a relative error below `2⁻⁶³`.
//!
//! *Cody–Waite, `|x| < 2³⁰`.* `k = round(x·2/π)` (through `SHIFT`), `|k| < 2³⁰`, and
//! `π/2 = P1 + P2 + P3 + δ` (three `f64`, `|δ| < 2⁻¹⁶³`). `r1 = fma(−k, P1, x)` is exact: for
//! `|x| ≥ 1` both `x` and `k·P1` are multiples of `2⁻⁵²` and `|x − k·P1| < 1` (`|k|·|π/2 − P1|
//! < 2⁻²³`); for `|x| < 1`, `k ∈ {−1, 0, 1}` and the difference is exact by Sterbenz or
//! trivially. `k·P2 = th + tl` exactly (`fma`), `r1 − th = s + se` exactly (TwoSum), and
//! `lo = fma(−k, P3, se − tl)` has an error below `2⁻¹³⁰` (`|se|, |tl|, |k·P3| < 2⁻⁷⁵`): with
//! `|k·δ| < 2⁻¹³³`, `r = s + lo` to `2⁻¹²⁹`, renormalized by FastTwoSum (`|s| ≥ 2⁻⁶² ≫ |lo|`).
//!
//! *Payne–Hanek, `|x| ≥ 2³⁰`.* `x = M·2ᵉ` with `M ∈ [1, 2)` (sign included: every step below
//! is odd) and `0 ≤ e ≤ 1023`; `2/π = Σ bⱼ2⁻ʲ`. The bits `j < e − 53` contribute multiples of
//! 4 to `x·2/π` (`M` is a multiple of `2⁻⁵²`) and are dropped; row `e` of [`TWO_OVER_PI`]
//! holds the next 184 bits as five `f64` chunks `Tᵢ = (bits j ∈ [e − 53 + oᵢ, e − 53 + oᵢ +
//! lᵢ))·2^(e−j)` of 26, 26, 26, 53 and 53 bits (bits `j ≤ 0` are zero). So `Pᵢ = M·Tᵢ` is a
//! multiple of `2^(−24 − 26i)` (`i ≤ 2`) below `2^(55 − 26i)` in magnitude, `P3 < 2⁻²³`,
//! `P4 < 2⁻⁷⁶`, and the bits not in the window add less than `2⁻¹²⁹`. `Pᵢ = hᵢ + lᵢ` exactly
//! (`fma`), and every `nearest(v)` and `v − nearest(v)` below is exact:
//! - `F1 = (h0 − n(h0)) + (l0 − n(l0)) + (h1 − n(h1)) + l1`: multiples of `2⁻⁵⁰` below 2 in
//!   magnitude (each partial sum too), so exact; `G = F1 − n(F1)`, `|G| ≤ 1/2`.
//! - `G + (h2 − n(h2)) = s + se` (TwoSum), `s' = s − n(s)`, `|s'| ≤ 1/2`.
//! - the small terms `h3 + l2 + se` summed by two TwoSums, their errors plus `l3 + M·T4`
//!   rounded (below `2⁻⁷⁴`, error below `2⁻¹²⁵`); `f = s' + …` by TwoSum and FastTwoSum.
//!
//! The quadrant is the sum of the integer parts (each large one reduced mod 4 exactly);
//! `f` is within `2⁻¹²⁴·⁵` of the fraction `x·2/π − k` (`|f| ≤ 1/2 + 2⁻²²`), and
//! `r = f·π/2` with `π/2` as a double-double adds a relative error below `2⁻¹⁰⁴`. `±inf`
//! gives NaN (`fma(x, 0, f)`), NaN propagates.
//!
//! **Kernels** (`|r| ≤ 0.786`, `z = rh²` split exactly as `zh + zl`).
//! *sin:* `sin(r) = rh + rh³·P(z) + rl·(1 − z/2)`, `P` a degree-6 fit of
//! `(sin √z − √z)/√z³` (within `2⁻⁵⁷·¹` relative, see [`SIN`]). `rh³ = v + vl` to
//! `2⁻¹⁰⁵` (`fma`); the correction `c = fma(v, P, vl·S1 + rl(1 − z/2))` is at most `0.103·|r|`
//! and its rounding errors (the last `fma`'s below 1/8 ulp of the result, `P`'s below
//! `2⁻⁵³·|c|`) and the fit's error add at most 1/4 ulp before `rh + c` rounds once:
//! ≤ 0.75 ulp (measured: 0.66 on 10⁶ points).
//! *cos:* `1 − zh/2 = w + we` exactly (FastTwoSum), `cos(r) = w + (we − (zl/2 + rh·rl) +
//! z²·Q(z))` with `Q` a degree-5 fit of `(cos √z − 1 + z/2)/z²` (within `2⁻⁵⁹·⁶`); the
//! tail is below `0.016` of a result at least `0.7`: ≤ 0.52 ulp.
//! *Quadrant:* `sin x = ±sin r` or `±cos r` by `k mod 4`; `cos x` likewise with `k + 1`.
//! *tan:* `tan x = s/c` (`k` even) or `−c/s` (`k` odd) with `s`, `c` the kernels as
//! double-doubles (FastTwoSum of their last addition, `s` within about `2⁻⁵⁵` relative,
//! `c` within `2⁻⁵⁸`); the quotient `q = nh·(1/dh)` is corrected by
//! `(nh − q·dh + nl − q·dl)·(1/dh)` (the first difference by `fma`), which adds an error
//! below `2⁻¹⁰⁰` relative, and the final `fma` rounds once: ≤ 0.8 ulp (measured: 0.77 on
//! 10⁶ points). One division.
//!
//! Tiny arguments (`|x| < 2⁻²⁷`): `sin x = tan x = x` (error below `x²/3`, 1/6 ulp;
//! keeps `±0` and subnormals exact), `cos x` rounds to 1 through the kernel.

use super::{fast_two_sum, horner, two_sum, Cmp, MathEmitter, SHIFT, SIGN};

/// `2/π`, its first 1280 bits (`2/π = Σ bⱼ2⁻ʲ`, bit 1 the top bit of the first word).
const TWO_OVER_PI_BITS: [u64; 20] = [
    0xa2f9836e4e441529,
    0xfc2757d1f534ddc0,
    0xdb6295993c439041,
    0xfe5163abdebbc561,
    0xb7246e3a424dd2e0,
    0x06492eea09d1921c,
    0xfe1deb1cb129a73e,
    0xe88235f52ebb4484,
    0xe99c7026b45f7e41,
    0x3991d639835339f4,
    0x9c845f8bbdf9283b,
    0x1ff897ffde05980f,
    0xef2f118b5a0a6d1f,
    0x6d367ecf27cb09b7,
    0x4f463f669e5fea2d,
    0x7527bac7ebe5f17b,
    0x3d0739f78a5292ea,
    0x6bfb5fb11f8d5d08,
    0x56033046fc7b6bab,
    0xf0cfbc209af4361d,
];

/// The bits `j ∈ [start, start + len)` of `2/π` as an integer (`len ≤ 64`; bits `j ≤ 0`
/// are 0).
const fn two_over_pi_bits(start: i64, len: i64) -> u64 {
    if start < 1 {
        let skip = 1 - start;
        return if len > skip {
            two_over_pi_bits(1, len - skip)
        } else {
            0
        };
    }
    let p = (start - 1) as usize;
    let (w, off) = (p / 64, p % 64);
    let pair = ((TWO_OVER_PI_BITS[w] as u128) << 64) | TWO_OVER_PI_BITS[w + 1] as u128;
    ((pair << off) >> (128 - len)) as u64
}

/// `2ᵖ` for `−1022 ≤ p ≤ 1023`.
const fn pow2_const(p: i64) -> f64 {
    f64::from_bits(((p + 1023) as u64) << 52)
}

/// Offsets and lengths of the chunks of a row of [`TWO_OVER_PI`].
const CHUNKS: [(i64, i64); 5] = [(0, 26), (26, 26), (52, 26), (78, 53), (131, 53)];

const fn build_table() -> [[f64; 5]; 1024] {
    let mut t = [[0.0; 5]; 1024];
    let mut e = 0;
    while e < 1024 {
        let j0 = e - 53;
        let mut i = 0;
        while i < 5 {
            let (o, l) = CHUNKS[i];
            let start = j0 + o;
            let n = two_over_pi_bits(start, l);
            // The last bit, j = start + l − 1, has weight 2^(e − j).
            t[e as usize][i] = n as f64 * pow2_const(e - (start + l - 1));
            i += 1;
        }
        e += 1;
    }
    t
}

/// Row `e` (`0 ≤ e ≤ 1023`, the exponent of `x`): the chunks `T0 … T4` of `2/π` that matter
/// for `x·2/π mod 4` (see the module documentation).
pub(crate) static TWO_OVER_PI: [[f64; 5]; 1024] = build_table();

const INV_PIO2: f64 = std::f64::consts::FRAC_2_PI;
/// `π/2 = PIO2_1 + PIO2_2 + PIO2_3 + δ`, each the rounded rest, `|δ| < 2⁻¹⁶³`.
const PIO2_1: f64 = std::f64::consts::FRAC_PI_2;
const PIO2_2: f64 = 6.123233995736766e-17;
const PIO2_3: f64 = -1.4973849048591698e-33;
/// Below this, Cody–Waite; at and above, Payne–Hanek.
const CW_LIMIT: f64 = 1073741824.0;
/// Below this, `sin x = tan x = x`.
const TINY: f64 = 7.450580596923828e-9;

/// `(sin √z − √z)/√z³` on `[0, (π/4 + 2⁻²⁰)²]`, degree 6 (Chebyshev interpolant, mpmath at
/// 200 bits): `√z + √z³·P(z)` is within `2⁻⁵⁷·¹` of `sin √z` relative, the coefficients'
/// rounding included (the fit alone: below `2⁻⁶⁰`).
const SIN: [f64; 7] = [
    -0.16666666666666666,
    0.008333333333333331,
    -0.00019841269841265065,
    2.755731921933912e-06,
    -2.505210623243192e-08,
    1.6058531616504608e-10,
    -7.586696971425154e-13,
];

/// `(cos √z − 1 + z/2)/z²` on `[0, (π/4 + 2⁻²⁰)²]`, degree 5 (Chebyshev interpolant, mpmath
/// at 200 bits): `1 − z/2 + z²·Q(z)` is within `2⁻⁵⁹·⁶` of `cos √z` relative.
const COS: [f64; 6] = [
    0.041666666666666664,
    -0.0013888888888887398,
    2.4801587298765662e-05,
    -2.7557317271715595e-07,
    2.087614626544433e-09,
    -1.1382632212345609e-11,
];

/// `x = k·π/2 + rh + rl`; `q` an integral float congruent to `k` mod 4, `|q| < 2³⁰`.
pub(crate) struct Reduced<F> {
    pub rh: F,
    pub rl: F,
    pub q: F,
}

/// The shared reduction (see the module documentation). Where every lane is below the
/// limit, only Cody–Waite runs ([`MathEmitter::when_all`]); otherwise both, selected per lane.
pub(crate) fn reduce<E: MathEmitter>(e: &mut E, x: E::F) -> Reduced<E::F> {
    let a = e.abs(x);
    let limit = e.fconst(CW_LIMIT);
    let small = e.cmp(Cmp::Lt, a, limit);
    let [rh, rl, q] = e.when_all(
        small,
        |e| cody_waite(e, x),
        |e| {
            let [ch, cl, k] = cody_waite(e, x);
            let (lh, ll, lq) = payne_hanek(e, x);
            [
                e.select(small, ch, lh),
                e.select(small, cl, ll),
                e.select(small, k, lq),
            ]
        },
    );
    Reduced { rh, rl, q }
}

/// `[rh, rl, k]` for `|x| < 2³⁰` (see the module documentation).
fn cody_waite<E: MathEmitter>(e: &mut E, x: E::F) -> [E::F; 3] {
    let inv = e.fconst(INV_PIO2);
    let shift = e.fconst(SHIFT);
    let t = e.fma(x, inv, shift);
    let k = e.sub(t, shift);
    let nk = e.neg(k);
    let p1 = e.fconst(PIO2_1);
    let r1 = e.fma(nk, p1, x);
    let p2 = e.fconst(PIO2_2);
    let th = e.mul(k, p2);
    let nth = e.neg(th);
    let tl = e.fma(k, p2, nth);
    let (s, se) = two_sum(e, r1, nth);
    let p3 = e.fconst(PIO2_3);
    let d = e.sub(se, tl);
    let lo = e.fma(nk, p3, d);
    let (ch, cl) = fast_two_sum(e, s, lo);
    [ch, cl, k]
}

/// `v − 4·round(v/4)`, exact.
fn mod4<E: MathEmitter>(e: &mut E, v: E::F) -> E::F {
    let quarter = e.fconst(0.25);
    let vq = e.mul(v, quarter);
    let n = e.nearest(vq);
    let m4 = e.fconst(-4.0);
    e.fma(m4, n, v)
}

/// `(n, v − n)` with `n = round(v)`, both exact.
fn split_int<E: MathEmitter>(e: &mut E, v: E::F) -> (E::F, E::F) {
    let n = e.nearest(v);
    let f = e.sub(v, n);
    (n, f)
}

/// `M·T = h + l` exactly.
fn two_prod<E: MathEmitter>(e: &mut E, a: E::F, b: E::F) -> (E::F, E::F) {
    let h = e.mul(a, b);
    let nh = e.neg(h);
    let l = e.fma(a, b, nh);
    (h, l)
}

/// The large-argument reduction: `(rh, rl, q)` for `|x| ≥ 2³⁰` (garbage below, NaN for
/// `±inf` and NaN).
fn payne_hanek<E: MathEmitter>(e: &mut E, x: E::F) -> (E::F, E::F, E::F) {
    let bits = e.bits_of(x);
    let keep = e.iconst(SIGN | ((1u64 << 52) - 1));
    let mant = e.band(bits, keep);
    let one = e.iconst(1.0f64.to_bits());
    let mant = e.bor(mant, one);
    let m = e.float_of(mant);
    // Row e = biased exponent − 1023 = (biased exponent + 1) mod 1024 (sign bit masked off).
    let be = e.ushr(bits, 52);
    let one_i = e.iconst(1);
    let idx = e.iadd(be, one_i);
    let [t0, t1, t2, t3, t4] = e.lookup_row(&TWO_OVER_PI, idx);

    let (h0, l0) = two_prod(e, m, t0);
    let (n0, f0) = split_int(e, h0);
    let (n0l, f0l) = split_int(e, l0);
    let (h1, l1) = two_prod(e, m, t1);
    let (n1, f1) = split_int(e, h1);
    let f = e.add(f0, f0l);
    let f = e.add(f, f1);
    let f = e.add(f, l1);
    let (nf, g) = split_int(e, f);
    let (h2, l2) = two_prod(e, m, t2);
    let (n2, f2) = split_int(e, h2);
    let (s, se) = two_sum(e, g, f2);
    let (ns, s) = split_int(e, s);
    let (h3, l3) = two_prod(e, m, t3);
    let h4 = e.mul(m, t4);
    let (a, ae) = two_sum(e, h3, l2);
    let (b, be2) = two_sum(e, a, se);
    let c = e.add(ae, be2);
    let c = e.add(c, l3);
    let c = e.add(c, h4);
    let (t, te) = two_sum(e, s, b);
    let lo = e.add(te, c);
    let (rh, rl) = times_pio2(e, x, t, lo);
    // Quadrant.
    let q0 = mod4(e, n0);
    let q1 = mod4(e, n1);
    let q = e.add(q0, n0l);
    let q = e.add(q, q1);
    let q = e.add(q, nf);
    let q = e.add(q, n2);
    let q = e.add(q, ns);
    (rh, rl, q)
}

/// `r = (t + lo)·π/2` as a double-double (`|lo|` well below `|t|`), NaN for `x = ±inf`.
fn times_pio2<E: MathEmitter>(e: &mut E, x: E::F, t: E::F, lo: E::F) -> (E::F, E::F) {
    let (fh, fl) = fast_two_sum(e, t, lo);
    // ±inf: NaN.
    let zero = e.fconst(0.0);
    let fh = e.fma(x, zero, fh);
    let ph = e.fconst(PIO2_1);
    let pl = e.fconst(PIO2_2);
    let rh = e.mul(fh, ph);
    let nrh = e.neg(rh);
    let rerr = e.fma(fh, ph, nrh);
    let flp = e.mul(fl, ph);
    let cross = e.fma(fh, pl, flp);
    let rl = e.add(rerr, cross);
    (rh, rl)
}

/// `(sin(rh + rl), cos(rh + rl))` as double-doubles, `|rh| ≤ 0.786`.
#[allow(clippy::type_complexity)]
fn kernels<E: MathEmitter>(e: &mut E, rh: E::F, rl: E::F) -> ((E::F, E::F), (E::F, E::F)) {
    let z = e.mul(rh, rh);
    let nz = e.neg(z);
    let zl = e.fma(rh, rh, nz);
    let mhalf = e.fconst(-0.5);
    let mhz = e.mul(z, mhalf);
    // sin: rh + (v·P + vl·S1 + rl·(1 − z/2)), rh³ = v + vl.
    let v = e.mul(rh, z);
    let nv = e.neg(v);
    let ve = e.fma(rh, z, nv);
    let vl = e.fma(rh, zl, ve);
    let p = horner(e, z, &SIN);
    let rl_term = e.fma(mhz, rl, rl);
    let s1 = e.fconst(SIN[0]);
    let inner = e.fma(vl, s1, rl_term);
    let c = e.fma(v, p, inner);
    let sin = fast_two_sum(e, rh, c);
    // cos: (1 − z/2 exactly) + (z²·Q − zl/2 − rh·rl).
    let one = e.fconst(1.0);
    let (w, we) = fast_two_sum(e, one, mhz);
    let half = e.fconst(0.5);
    let hzl = e.mul(zl, half);
    let t = e.fma(rh, rl, hzl);
    let tail = e.sub(we, t);
    let q = horner(e, z, &COS);
    let z2 = e.mul(z, z);
    let tail = e.fma(z2, q, tail);
    let cos = fast_two_sum(e, w, tail);
    (sin, cos)
}

/// The bits of `q + SHIFT`: `k mod 4` in the low two bits.
fn quadrant_bits<E: MathEmitter>(e: &mut E, q: E::F) -> E::I {
    let shift = e.fconst(SHIFT);
    let t = e.add(q, shift);
    e.bits_of(t)
}

/// Whether bit 0 of `kb` is set, as a comparison.
fn is_odd<E: MathEmitter>(e: &mut E, kb: E::I) -> E::M {
    let one = e.iconst(1);
    let b = e.band(kb, one);
    let b = e.shl(b, 62);
    let two_or_zero = e.float_of(b);
    let zero = e.fconst(0.0);
    e.cmp(Cmp::Gt, two_or_zero, zero)
}

/// `[s, c, −s, −c][kb mod 4]`.
fn pick<E: MathEmitter>(e: &mut E, kb: E::I, s: E::F, c: E::F) -> E::F {
    let odd = is_odd(e, kb);
    let v = e.select(odd, c, s);
    let two = e.iconst(2);
    let flip = e.band(kb, two);
    let flip = e.shl(flip, 62);
    let vb = e.bits_of(v);
    let vb = e.iadd(vb, flip);
    e.float_of(vb)
}

/// `x` where `|x| < 2⁻²⁷`, `y` elsewhere (NaN: `y`).
fn tiny_is_x<E: MathEmitter>(e: &mut E, x: E::F, y: E::F) -> E::F {
    let a = e.abs(x);
    let tiny = e.fconst(TINY);
    let is_tiny = e.cmp(Cmp::Lt, a, tiny);
    e.select(is_tiny, x, y)
}

/// `sin x`, within 1 ulp (see the module documentation).
pub fn sin<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let Reduced { rh, rl, q } = reduce(e, x);
    let ((s, _), (c, _)) = kernels(e, rh, rl);
    let kb = quadrant_bits(e, q);
    let y = pick(e, kb, s, c);
    tiny_is_x(e, x, y)
}

/// `cos x`, within 1 ulp (see the module documentation).
pub fn cos<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let Reduced { rh, rl, q } = reduce(e, x);
    let ((s, _), (c, _)) = kernels(e, rh, rl);
    let kb = quadrant_bits(e, q);
    let one = e.iconst(1);
    let kb = e.iadd(kb, one);
    pick(e, kb, s, c)
}

/// `tan x`, within 1 ulp (see the module documentation).
pub fn tan<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let Reduced { rh, rl, q } = reduce(e, x);
    let ((sh, sl), (ch, cl)) = kernels(e, rh, rl);
    let kb = quadrant_bits(e, q);
    let odd = is_odd(e, kb);
    let nch = e.neg(ch);
    let ncl = e.neg(cl);
    let nh = e.select(odd, nch, sh);
    let nl = e.select(odd, ncl, sl);
    let dh = e.select(odd, sh, ch);
    let dl = e.select(odd, sl, cl);
    let one = e.fconst(1.0);
    let inv = e.div(one, dh);
    let qt = e.mul(nh, inv);
    let nq = e.neg(qt);
    let rem = e.fma(nq, dh, nh);
    let rem = e.add(rem, nl);
    let rem = e.fma(nq, dl, rem);
    let y = e.fma(rem, inv, qt);
    tiny_is_x(e, x, y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mathlib::Eval;

    /// The reduction keeps its precision at the classic worst case of all `f64`
    /// (`|r| ≈ 2⁻⁶⁰·⁹`).
    #[test]
    fn reduction_at_the_worst_case() {
        let worst = 6381956970095103.0 * 2f64.powi(797);
        let red = reduce(&mut Eval, worst);
        let l = red.rh.abs().log2();
        assert!((-61.0..-60.8).contains(&l), "log2|r| = {l}");
    }
}
