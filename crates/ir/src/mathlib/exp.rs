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

// The table-driven form's constants, printed by Python's `decimal` at 60 digits (the table
// holds 2^(64/128) = √2 as printed, not as `SQRT_2`, so that it reads as the table it is):
// `128/ln 2`; `ln 2/128` split into 32 significant bits and the rounded rest; and
// `2^(j/128)` for j < 128 as `hi + lo` (hi the rounded value, lo the rounded remainder).
pub(crate) const INV_LN2_128: f64 = 184.6649652337873;
pub(crate) const LN2_128_HI: f64 = 0.005415212348452769;
pub(crate) const LN2_128_LO: f64 = -3.2819649005320973e-13;
/// `2^(j/128)` as `[hi, lo]` for `j < 128`.
#[allow(clippy::approx_constant)]
#[rustfmt::skip]
pub(crate) static EXP2: [[f64; 2]; 128] = [
    [1.0, 0.0],
    [1.0054299011128027, 9.499186535455032e-17],
    [1.0108892860517005, -1.5234778603368577e-17],
    [1.016378314910953, -5.77217007319966e-17],
    [1.0218971486541166, 5.109225028973444e-17],
    [1.0274459491187637, -4.9560741746453704e-17],
    [1.0330248790212284, 7.600838874027088e-18],
    [1.0386341019613787, 5.996273788852511e-17],
    [1.0442737824274138, 8.551889705537965e-17],
    [1.0499440858006872, 5.592937848127003e-17],
    [1.0556451783605572, 1.759325738772092e-18],
    [1.061377227289262, -1.1973537085365658e-17],
    [1.0671404006768237, -7.899853966841582e-17],
    [1.0729348675259756, -3.839668843358824e-18],
    [1.0787607977571199, -6.656660436056593e-17],
    [1.0846183622133092, 3.166152845816346e-17],
    [1.0905077326652577, -3.046782079812471e-17],
    [1.0964290818163769, -5.919933484449316e-17],
    [1.102382583307841, 5.2660368715706944e-17],
    [1.1083684117236787, -8.786813845180527e-17],
    [1.1143867425958924, 1.0410278456845571e-16],
    [1.1204377524096067, -6.201085906554179e-17],
    [1.1265216186082418, 5.165856758795457e-17],
    [1.1326385195987192, 3.237356166738e-17],
    [1.1387886347566916, 8.912812676025408e-17],
    [1.1449721444318042, 4.6412898921700107e-17],
    [1.1511892299529827, 3.250710218863827e-17],
    [1.1574400736337511, -9.1238712311344e-17],
    [1.1637248587775775, 3.8292048369240935e-17],
    [1.1700437696832502, -1.8477442017900047e-18],
    [1.1763969916502812, 5.554203254218079e-17],
    [1.182784710984341, 1.542975430079076e-17],
    [1.189207115002721, 3.982015231465646e-17],
    [1.1956643920398273, 4.6166036704814814e-17],
    [1.202156731452703, 6.644981499252301e-17],
    [1.2086843236265816, -4.746725945228984e-17],
    [1.215247359980469, -7.712630692681488e-17],
    [1.2218460329727576, -1.0611021211402691e-16],
    [1.22848053610687, -1.89878163130253e-17],
    [1.2351510639369334, -1.0755244344307841e-16],
    [1.241857812073484, 4.658027591836937e-17],
    [1.2486009771892048, -8.261810999021964e-17],
    [1.255380757024691, -6.7113898212968784e-18],
    [1.2621973503942507, -3.0844648874738465e-17],
    [1.2690509571917332, 2.667932131342186e-18],
    [1.275941778396392, 9.91543024421429e-17],
    [1.2828700160787783, 1.713594918243561e-17],
    [1.2898358734066657, 8.949257530897592e-17],
    [1.2968395546510096, 2.5382502794888315e-17],
    [1.3038812651919358, 8.647675598267871e-17],
    [1.3109612115247644, -7.181536135519454e-17],
    [1.318079601266064, -5.4579558271491535e-17],
    [1.3252366431597413, -2.8587312100388614e-17],
    [1.3324325470831615, -5.101586630916744e-17],
    [1.339667524053303, 8.927282594831732e-17],
    [1.3469417862329458, 3.224065101254679e-17],
    [1.3542555469368927, 7.70094837980299e-17],
    [1.3616090206382248, 1.533787661270668e-18],
    [1.3690024229745905, 9.593797919118849e-17],
    [1.3764359707545302, -6.898588935871801e-17],
    [1.383909881963832, -6.770511658794786e-17],
    [1.3914243757719262, -4.9061748652889893e-17],
    [1.3989796725383112, -9.614213209051323e-17],
    [1.4065759938190154, 7.034914812136422e-18],
    [1.4142135623730951, -9.667293313452913e-17],
    [1.4218926021691656, -1.6077828915890244e-17],
    [1.42961333839197, -1.2031642489053655e-17],
    [1.4373759974489824, -4.2040340164675566e-17],
    [1.4451808069770467, -3.0237581349939873e-17],
    [1.4530279958490526, -5.779948609396106e-17],
    [1.460917794180647, -5.600377186075216e-17],
    [1.4688504333369818, 8.465882756533628e-17],
    [1.4768261459394993, -3.483994556892796e-17],
    [1.4848451658727524, 1.0780086764407481e-16],
    [1.4929077282912648, 1.4192920154284036e-17],
    [1.5010140696264256, -6.413767275790235e-17],
    [1.5091644275934228, -1.016455327754295e-16],
    [1.5173590411982147, -4.308699472043341e-17],
    [1.5255981507445384, -1.1024941712342561e-16],
    [1.533881997840956, 8.875226844438446e-17],
    [1.5422108254079407, 7.949834809697621e-17],
    [1.550584877685, -1.4600706590689385e-17],
    [1.559004400237837, 3.7812070533575275e-17],
    [1.567469639965553, -1.0352061768849722e-16],
    [1.5759808451078865, -1.0136916471278304e-17],
    [1.5845382652524937, -1.9337717034585703e-17],
    [1.593142151342267, -1.0094406542311964e-16],
    [1.6017927556826934, -6.054917453527784e-17],
    [1.6104903319492543, 2.4707192569797888e-17],
    [1.6192351351948637, 2.0941334154229092e-17],
    [1.6280274218573478, -6.712955084707084e-17],
    [1.6368674497669644, 7.698325071319876e-17],
    [1.645755478153965, -1.0125679913674773e-16],
    [1.6546917676561943, 9.643294303196029e-17],
    [1.6636765803267364, 5.8909926967131e-17],
    [1.6727101796415966, -5.476715964599563e-17],
    [1.681792830507429, 8.199010020581497e-17],
    [1.6909247992693053, -9.66967147439488e-17],
    [1.7001063537185235, -8.0237193703977e-18],
    [1.709337763100463, -9.868779456632931e-17],
    [1.718619298122478, -1.851380418263111e-17],
    [1.7279512309618377, -1.0750981861204642e-16],
    [1.7373338352737062, 3.164389299292957e-17],
    [1.746767386199169, -1.0752290483507515e-16],
    [1.7562521603732995, 2.960140695448873e-17],
    [1.7657884359332727, 9.461315018083268e-17],
    [1.7753764925265212, 6.429731796556572e-17],
    [1.785016611318935, 1.5330400121031314e-17],
    [1.7947090750031072, 1.8227458427912087e-17],
    [1.804454167806624, -5.177222408793318e-17],
    [1.8142521755003989, -9.969531538920349e-17],
    [1.8241033854070534, -1.0159627862277083e-16],
    [1.8340080864093424, 3.283107224245627e-17],
    [1.843966568958626, -5.939742026949965e-17],
    [1.8539791250833855, 9.761887490727594e-17],
    [1.864046048397789, 6.540912680620572e-17],
    [1.8741676341103, -6.122763413004143e-17],
    [1.8843441790323345, -8.226593125533711e-17],
    [1.8945759815869656, 3.4034035352165297e-17],
    [1.9048633418176741, 6.533857514718279e-17],
    [1.9152065613971474, -1.0619946056195963e-16],
    [1.925605943636125, -9.914963769693741e-17],
    [1.9360617934922943, 1.0332385960676326e-16],
    [1.9465744175792332, 6.811022349533877e-17],
    [1.9571441241754002, 8.960767791036668e-17],
    [1.9677712232331759, -1.0314928011531132e-16],
    [1.978456026387951, 4.0388753109278167e-17],
    [1.9891988469672663, 8.2051326383692e-18],
];

/// `eˣ`, within 1 ulp (see the module documentation): table-driven where the emitter has
/// tables ([`MathEmitter::has_tables`]), the table-free form above otherwise.
///
/// **Table-driven form.** `k' = round(x·128/ln2)` (through `SHIFT`), `j = k' mod 128` from the
/// sum's low bits, `K = floor(k'/128)`, so `x = K·ln2 + j·ln2/128 + r` with
/// `r = (x − k'·LN2_128_HI) − k'·LN2_128_LO`: `LN2_128_HI` has 32 significant bits and
/// `|k'| < 2¹⁸`, so the first product and difference are exact (as in `reduce`), the second
/// rounds with an error below 2⁻⁵³·|r|; `|r| ≤ ln2/256 + 2⁻⁴⁰ < 0.0028`. `p = expm1(r)` by
/// `r + r²·(1/2 + r/6 + r²/24 + r³/120)`: truncation below `r⁶/720 < 2⁻⁶⁰`, rounding below
/// ulp(p) ≤ 2⁻⁶¹. Then `2^(j/128)·(1 + p) = T + (T_lo + T·p)` with `T = EXP2[j][0]`
/// (`T_lo = EXP2[j][1]`/// carries 2^(j/128) − T to 2⁻¹⁰⁶): the small term (below 0.004) is formed with an error
/// below 2⁻⁶¹, and the one large rounding is the final sum's. Total below 0.51 ulp before the
/// scaling by `2^K` (the table-free form's `scale`: exact for normal results, one more
/// rounding into the subnormal range, ≤ 1 ulp there). Clamping, NaN and infinities as above.
pub fn exp<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let x = clamp_above(e, x, 710.0);
    let x = clamp_below(e, x, -746.0);
    if !e.has_tables() {
        return exp_table_free(e, x);
    }
    let TableExp { big_k, th, small } = table_exp(e, x);
    let s = e.add(th, small);
    scale(e, s, big_k)
}

/// `exp(x) = 2ᴷ·(th + small)`: the table-driven form's parts (see [`exp`]).
pub(crate) struct TableExp<F> {
    /// An integral float, `floor(round(x·128/ln2)/128)`.
    pub big_k: F,
    /// `2^(j/128)` rounded, in `[1, 2)`.
    pub th: F,
    /// `2^(j/128)·(1 + expm1(r)) − th`, below 0.004 in magnitude, within 2⁻⁶¹ of the exact
    /// value.
    pub small: F,
}

/// The table-driven reduction of [`exp`] for `x` in `[−746, 710]` (NaN propagates).
pub(crate) fn table_exp<E: MathEmitter>(e: &mut E, x: E::F) -> TableExp<E::F> {
    table_exp_parts(e, x, None)
}

/// [`table_exp`] of a double-double `x + x_lo` (`x` in `[−746, 710]`, `|x_lo| ≤ 2⁻⁴⁰`): the
/// same reduction on `x`, with `x_lo` joining its rounded part, `r = r_hi + (x_lo − k'·LN2_128_LO)`
/// (the parenthesis below 2⁻²³ and rounded relative to itself, so `r` carries one rounding
/// below 2⁻⁵³·|r|, as in [`exp`]). For `pow`, whose `y·log x` is a double-double.
pub(crate) fn table_exp_dd<E: MathEmitter>(e: &mut E, x: E::F, x_lo: E::F) -> TableExp<E::F> {
    table_exp_parts(e, x, Some(x_lo))
}

fn table_exp_parts<E: MathEmitter>(e: &mut E, x: E::F, x_lo: Option<E::F>) -> TableExp<E::F> {
    let inv = e.fconst(INV_LN2_128);
    let shift = e.fconst(SHIFT);
    let t = e.fma(x, inv, shift);
    let kf = e.sub(t, shift);
    let j = e.bits_of(t);
    let l_hi = e.fconst(LN2_128_HI);
    let l_lo = e.fconst(LN2_128_LO);
    let neg_k = e.neg(kf);
    let r_hi = e.fma(neg_k, l_hi, x);
    let r = match x_lo {
        None => e.fma(neg_k, l_lo, r_hi),
        Some(x_lo) => {
            let tail = e.fma(neg_k, l_lo, x_lo);
            e.add(r_hi, tail)
        }
    };
    let c5 = e.fconst(1.0 / 120.0);
    let c4 = e.fconst(1.0 / 24.0);
    let c3 = e.fconst(1.0 / 6.0);
    let c2 = e.fconst(0.5);
    let q = e.fma(r, c5, c4);
    let q = e.fma(r, q, c3);
    let q = e.fma(r, q, c2);
    let r2 = e.mul(r, r);
    let p = e.fma(r2, q, r);
    let [th, tl] = e.lookup_row(&EXP2, j);
    let small = e.fma(th, p, tl);
    let eighth = e.fconst(1.0 / 128.0);
    let scaled = e.mul(kf, eighth);
    let big_k = e.floor(scaled);
    TableExp { big_k, th, small }
}

/// The table-free `eˣ` of already clamped `x`.
fn exp_table_free<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let Reduced { k, qh, ql } = reduce(e, x, None);
    let one = e.fconst(1.0);
    let (u, ue) = fast_two_sum(e, one, qh);
    let lo = e.add(ue, ql);
    let p = e.add(u, lo);
    scale(e, p, k)
}
