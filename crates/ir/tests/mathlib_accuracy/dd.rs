//! Double-double arithmetic (about 106 bits), the error measure in ulps, and the reference
//! functions other references are built from (`exp`, `expm1` near 0, `log`).

#[derive(Clone, Copy, Debug)]
pub struct Dd(pub f64, pub f64);

pub fn two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    let bb = s - a;
    Dd(s, (a - (s - bb)) + (b - bb))
}

pub fn fast_two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    Dd(s, b - (s - a))
}

impl Dd {
    pub fn from(x: f64) -> Dd {
        Dd(x, 0.0)
    }
    pub fn add(self, o: Dd) -> Dd {
        let s = two_sum(self.0, o.0);
        let t = two_sum(self.1, o.1);
        let s = fast_two_sum(s.0, s.1 + t.0);
        fast_two_sum(s.0, s.1 + t.1)
    }
    pub fn neg(self) -> Dd {
        Dd(-self.0, -self.1)
    }
    pub fn sub(self, o: Dd) -> Dd {
        self.add(o.neg())
    }
    pub fn mul(self, o: Dd) -> Dd {
        let p = self.0 * o.0;
        let e = self.0.mul_add(o.0, -p) + (self.0 * o.1 + self.1 * o.0);
        fast_two_sum(p, e)
    }
    pub fn mul_f(self, x: f64) -> Dd {
        self.mul(Dd::from(x))
    }
    pub fn div(self, o: Dd) -> Dd {
        let q1 = self.0 / o.0;
        let r = self.sub(o.mul_f(q1));
        let q2 = r.0 / o.0;
        let r = r.sub(o.mul_f(q2));
        let q3 = r.0 / o.0;
        fast_two_sum(q1, q2).add(Dd::from(q3))
    }
    /// Multiply by 2^k (exact while no part leaves the normal range).
    pub fn ldexp(self, k: i32) -> Dd {
        let half = k / 2;
        let s1 = pow2i(half);
        let s2 = pow2i(k - half);
        Dd(self.0 * s1 * s2, self.1 * s1 * s2)
    }
}

pub const LN2: Dd = Dd(std::f64::consts::LN_2, 2.3190468138462996e-17);
pub const TWO_OVER_SQRT_PI: Dd = Dd(std::f64::consts::FRAC_2_SQRT_PI, 1.533545961316588e-17);
pub const INV_SQRT_PI: Dd = Dd(0.5641895835477563, 7.66772980658294e-18);

/// expm1 for |y| ≤ 0.5 without cancellation: Taylor at y/1024, then expm1(2s) = e(e + 2) ten
/// times.
pub fn expm1_small(y: Dd) -> Dd {
    let s = y.ldexp(-10);
    let mut term = s;
    let mut sum = s;
    for n in 2..=12 {
        term = term.mul(s).div(Dd::from(n as f64));
        sum = sum.add(term);
    }
    for _ in 0..10 {
        sum = sum.mul(sum.add(Dd::from(2.0)));
    }
    sum
}

/// exp(y) as 2^k·(1 + expm1(r)), or None where it is not a finite normal-range product.
pub fn exp_ref_dd(y: Dd) -> (Dd, i32) {
    let k = (y.0 / LN2.0).round();
    let r = y.sub(LN2.mul_f(k));
    (expm1_small(r).add(Dd::from(1.0)), k as i32)
}

/// exp as `(m, k)`, the exact value `m·2ᵏ` (kept apart so that subnormal results keep their
/// low part).
pub fn log_ref(x: f64) -> Dd {
    if x.is_nan() || x < 0.0 {
        return Dd::from(f64::NAN);
    }
    if x == 0.0 {
        return Dd::from(f64::NEG_INFINITY);
    }
    if x == f64::INFINITY {
        return Dd::from(x);
    }
    // x = 2^e·m, m in [√½, √2).
    let (mut m, mut e) = (x, 0i32);
    if m < f64::MIN_POSITIVE {
        m *= 2f64.powi(64);
        e -= 64;
    }
    let bits = m.to_bits();
    let be = ((bits >> 52) & 0x7ff) as i32 - 1023;
    m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    e += be;
    if m >= std::f64::consts::SQRT_2 {
        m /= 2.0;
        e += 1;
    }
    let f = Dd::from(m).sub(Dd::from(1.0));
    let s = f.div(Dd::from(m).add(Dd::from(1.0)));
    let z = s.mul(s);
    let mut pow = s;
    let mut sum = s;
    for k in 1..40 {
        pow = pow.mul(z);
        sum = sum.add(pow.div(Dd::from((2 * k + 1) as f64)));
    }
    LN2.mul_f(e as f64).add(sum.mul_f(2.0))
}

/// |got − exact| in ulps of the exact value `m·2ᵏ` at precision `digits` (53 or 24) and
/// minimal exponent `min_exp`, measured at the scale of `m` (so that the low part of a
/// subnormal result counts); NaN and infinite references must be matched exactly (error 0 if
/// matched, else ∞).
pub fn ulp_error(got: f64, (exact, k): (Dd, i32), digits: i32, min_exp: i32) -> f64 {
    if k != 0 && exact.0.is_finite() && exact.0 != 0.0 && got.is_finite() {
        let exp = ((exact.0.abs().log2().floor() as i32) + k).max(min_exp) - k;
        let ulp = 2f64.powi(exp - (digits - 1));
        let got_m = got * 2f64.powi(-k / 2) * 2f64.powi(-k + k / 2);
        return (((got_m - exact.0) - exact.1) / ulp).abs();
    }
    let exact = exact.ldexp(k);
    let hi = exact.0;
    if hi.is_nan() || got.is_nan() {
        return if hi.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if !hi.is_finite() || !got.is_finite() {
        return if got == hi { 0.0 } else { f64::INFINITY };
    }
    if hi == 0.0 && got == 0.0 {
        return if got.is_sign_negative() == hi.is_sign_negative() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let exp = if hi == 0.0 {
        min_exp
    } else {
        (hi.abs().log2().floor() as i32).max(min_exp)
    };
    let ulp = pow2i(exp - (digits - 1));
    (((got - hi) - exact.1) / ulp).abs()
}

/// 2ⁿ for `n` in `[−1074, 1023]`, exactly.
pub fn pow2i(n: i32) -> f64 {
    if n >= -1022 {
        f64::from_bits(((n + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (n + 1074))
    }
}
