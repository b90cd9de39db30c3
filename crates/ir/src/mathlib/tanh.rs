//! `tanh`.
//!
//! `tanh(x) = sign(x)·M/(M + 2)` with `M = expm1(2|x|)`, one formula for every argument:
//! no cancellation for small `|x|` (`M ≈ 2|x|`), none for large (`M/(M+2) → 1`).
//!
//! `2|x|` is exact; [`super::exp::reduce`] gives `exp(2|x|) = 2ᵏ(1 + qh + ql)` to about 2⁻⁵⁷
//! relative, so `M = (2ᵏ − 1) + 2ᵏqh + 2ᵏql` (`2ᵏ − 1` exact for `k ≤ 53`; beyond, its
//! error is 2⁻⁵⁴ relative where `tanh` rounds to 1 − ulp or 1) is summed as a
//! double-double (TwoSum), and so is `D = M + 2`. The quotient is `q = Mh/Dh` corrected by
//! `(Mh − q·Dh + Ml − q·Dl)/Dh` (the first difference exact by `fma`), which leaves an error
//! of about 2⁻⁵⁶ relative before the final addition rounds: ≤ 0.53 ulp. `|x|` is clamped to
//! 20 (`tanh(20)` rounds to 1); the sign is copied bitwise, so `tanh(−0) = −0` and NaN stays
//! NaN.

use super::exp::{reduce, Reduced};
use super::{clamp_above, copysign, fast_two_sum, pow2, two_sum, MathEmitter};

/// `tanh x`, within 1 ulp (see the module documentation).
pub fn tanh<E: MathEmitter>(e: &mut E, x: E::F) -> E::F {
    let a = e.abs(x);
    let a = clamp_above(e, a, 20.0);
    let y = e.add(a, a);
    let Reduced { k, qh, ql } = reduce(e, y, None);
    // M = expm1(2|x|) as mh + ml.
    let sc = pow2(e, k);
    let one = e.fconst(1.0);
    let am1 = e.sub(sc, one);
    let b = e.mul(qh, sc);
    let c = e.mul(ql, sc);
    let (sh, sl) = two_sum(e, am1, b);
    let mlo = e.add(sl, c);
    let (mh, ml) = fast_two_sum(e, sh, mlo);
    // D = M + 2.
    let two = e.fconst(2.0);
    let (dh, dl0) = two_sum(e, mh, two);
    let dl = e.add(dl0, ml);
    // M/D.
    let q = e.div(mh, dh);
    let neg_q = e.neg(q);
    let rem = e.fma(neg_q, dh, mh);
    let rem = e.add(rem, ml);
    let rem = e.fma(neg_q, dl, rem);
    let corr = e.div(rem, dh);
    let t = e.add(q, corr);
    copysign(e, t, x)
}
