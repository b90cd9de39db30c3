//! Accuracy of adjit's math routines ([`adjit_ir::mathlib`], as the JIT emits them under
//! `MathImpl::Inline`: the table-driven forms, and the table-free ones of object files)
//! against a double-double reference written here, independent of the routines and of the C
//! library: every result within 1 ulp of the exact value, for
//! `f64` and for the `f32` forms, on random bit patterns, dense samples of the interesting
//! range and the special values.
//!
//! Points per routine: 100,000 (`ADJIT_MATH_POINTS=1000000` for more); with `--nocapture`
//! the maximal error in ulps is printed per routine.

use adjit_ir::random::Rng;
use adjit_ir::{mathlib, UnaryOp};

/// Which form of the routines is measured: the table-driven one (JIT code, interpreter) or
/// the table-free one (object files).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Form {
    Tables,
    TableFree,
}

/// adjit's routine on `f64` (every routine tested here has one).
fn unary_f64(form: Form, op: UnaryOp, x: f64) -> f64 {
    match form {
        Form::Tables => mathlib::unary_f64(op, x),
        Form::TableFree => mathlib::unary_f64_table_free(op, x),
    }
    .unwrap_or(f64::NAN)
}

/// The `f32` form: the `f64` routine on the promoted argument, rounded (as the JIT emits it).
fn unary_f32(form: Form, op: UnaryOp, x: f32) -> f32 {
    unary_f64(form, op, f64::from(x)) as f32
}

// ---- double-double arithmetic (about 106 bits) ----

#[derive(Clone, Copy, Debug)]
struct Dd(f64, f64);

fn two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    let bb = s - a;
    Dd(s, (a - (s - bb)) + (b - bb))
}

fn fast_two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    Dd(s, b - (s - a))
}

impl Dd {
    fn from(x: f64) -> Dd {
        Dd(x, 0.0)
    }
    fn add(self, o: Dd) -> Dd {
        let s = two_sum(self.0, o.0);
        let t = two_sum(self.1, o.1);
        let s = fast_two_sum(s.0, s.1 + t.0);
        fast_two_sum(s.0, s.1 + t.1)
    }
    fn neg(self) -> Dd {
        Dd(-self.0, -self.1)
    }
    fn sub(self, o: Dd) -> Dd {
        self.add(o.neg())
    }
    fn mul(self, o: Dd) -> Dd {
        let p = self.0 * o.0;
        let e = self.0.mul_add(o.0, -p) + (self.0 * o.1 + self.1 * o.0);
        fast_two_sum(p, e)
    }
    fn mul_f(self, x: f64) -> Dd {
        self.mul(Dd::from(x))
    }
    fn div(self, o: Dd) -> Dd {
        let q1 = self.0 / o.0;
        let r = self.sub(o.mul_f(q1));
        let q2 = r.0 / o.0;
        let r = r.sub(o.mul_f(q2));
        let q3 = r.0 / o.0;
        fast_two_sum(q1, q2).add(Dd::from(q3))
    }
    /// Multiply by 2^k (exact while no part leaves the normal range).
    fn ldexp(self, k: i32) -> Dd {
        let half = k / 2;
        let s1 = pow2i(half);
        let s2 = pow2i(k - half);
        Dd(self.0 * s1 * s2, self.1 * s1 * s2)
    }
}

const LN2: Dd = Dd(std::f64::consts::LN_2, 2.3190468138462996e-17);
const TWO_OVER_SQRT_PI: Dd = Dd(std::f64::consts::FRAC_2_SQRT_PI, 1.533545961316588e-17);
const INV_SQRT_PI: Dd = Dd(0.5641895835477563, 7.66772980658294e-18);

/// expm1 for |y| ≤ 0.5 without cancellation: Taylor at y/1024, then expm1(2s) = e(e + 2) ten
/// times.
fn expm1_small(y: Dd) -> Dd {
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
fn exp_ref_dd(y: Dd) -> (Dd, i32) {
    let k = (y.0 / LN2.0).round();
    let r = y.sub(LN2.mul_f(k));
    (expm1_small(r).add(Dd::from(1.0)), k as i32)
}

/// exp as `(m, k)`, the exact value `m·2ᵏ` (kept apart so that subnormal results keep their
/// low part).
fn exp_ref(x: f64) -> (Dd, i32) {
    if x > 709.8 {
        return (Dd::from(f64::INFINITY), 0);
    }
    if x < -745.2 {
        return (Dd::from(0.0), 0);
    }
    exp_ref_dd(Dd::from(x))
}

/// expm1 as `(m, k)`: `expm1_small` directly for |x| ≤ 0.5, `exp − 1` (no cancellation)
/// beyond, the tiny arguments scaled so that their low part survives.
fn expm1_ref(x: f64) -> (Dd, i32) {
    if x.is_nan() || x == 0.0 {
        return (Dd::from(x), 0);
    }
    if x.abs() < 1e-200 {
        // x + x²/2.
        let m = x * pow2i(600);
        return (Dd::from(m).add(Dd::from(m * x * 0.5)), -600);
    }
    if x.abs() <= 0.5 {
        return (expm1_small(Dd::from(x)), 0);
    }
    if x > 709.8 {
        return (Dd::from(f64::INFINITY), 0);
    }
    if x < -50.0 {
        return (Dd::from(-1.0), 0);
    }
    let (m, k) = exp_ref_dd(Dd::from(x));
    if k > 1000 {
        return (m.sub(Dd::from(pow2i(-k))), k);
    }
    (m.ldexp(k).sub(Dd::from(1.0)), 0)
}

fn log_ref(x: f64) -> Dd {
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

fn tanh_ref(x: f64) -> Dd {
    if x.is_nan() {
        return Dd::from(x);
    }
    let a = x.abs();
    let t = if a > 22.0 {
        Dd::from(1.0)
    } else if a < 1e-6 {
        // x − x³/3 + 2x⁵/15 − 17x⁷/315.
        let z = Dd::from(a).mul(Dd::from(a));
        let p = Dd::from(-17.0)
            .div(Dd::from(315.0))
            .mul(z)
            .add(Dd::from(2.0).div(Dd::from(15.0)))
            .mul(z)
            .sub(Dd::from(1.0).div(Dd::from(3.0)))
            .mul(z);
        Dd::from(a).add(Dd::from(a).mul(p))
    } else {
        let y = Dd::from(2.0 * a);
        let m = if a < 0.25 {
            expm1_small(y)
        } else {
            let (e, k) = exp_ref_dd(y);
            e.ldexp(k).sub(Dd::from(1.0))
        };
        m.div(m.add(Dd::from(2.0)))
    };
    if x.is_sign_negative() {
        t.neg()
    } else {
        t
    }
}

/// erf: the Taylor series in double-double for |x| < 4, `1 − erfc` by its continued fraction
/// (in `f64`: erfc < 2⁻²⁶ there) beyond.
fn erf_ref(x: f64) -> Dd {
    if x.is_nan() {
        return Dd::from(x);
    }
    let a = x.abs();
    let r = if a < 4.0 {
        let z = Dd::from(a).mul(Dd::from(a)).neg();
        let mut term = Dd::from(a);
        let mut sum = Dd::from(a);
        let mut n = 1.0;
        loop {
            term = term.mul(z).div(Dd::from(n));
            let t = term.div(Dd::from(2.0 * n + 1.0));
            sum = sum.add(t);
            if t.0.abs() < 1e-40 {
                break;
            }
            n += 1.0;
        }
        TWO_OVER_SQRT_PI.mul(sum)
    } else if a > 30.0 {
        Dd::from(1.0)
    } else {
        let mut cf = a;
        for k in (1..80).rev() {
            cf = a + (k as f64 / 2.0) / cf;
        }
        let (e, k) = exp_ref_dd(Dd::from(a).mul(Dd::from(a)).neg());
        let erfc = e.ldexp(k).mul(INV_SQRT_PI).div(Dd::from(cf));
        Dd::from(1.0).sub(erfc)
    };
    if x.is_sign_negative() {
        r.neg()
    } else {
        r
    }
}

// ---- measuring ----

/// |got − exact| in ulps of the exact value `m·2ᵏ` at precision `digits` (53 or 24) and
/// minimal exponent `min_exp`, measured at the scale of `m` (so that the low part of a
/// subnormal result counts); NaN and infinite references must be matched exactly (error 0 if
/// matched, else ∞).
fn ulp_error(got: f64, (exact, k): (Dd, i32), digits: i32, min_exp: i32) -> f64 {
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
fn pow2i(n: i32) -> f64 {
    if n >= -1022 {
        f64::from_bits(((n + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (n + 1074))
    }
}

struct Routine {
    op: UnaryOp,
    /// The exact value as `(m, k)`: `m·2ᵏ`.
    reference: fn(f64) -> (Dd, i32),
    /// Dense sampling: uniform over these intervals (the first the whole interesting range,
    /// the others where a routine changes form or loses digits), equally often.
    ranges: &'static [(f64, f64)],
    /// Arguments with exactly known results (compared bitwise, NaN as NaN).
    special: &'static [(f64, f64)],
    /// Arguments where a routine switches form or a table row, measured like the samples.
    edges: &'static [f64],
}

const INF: f64 = f64::INFINITY;
const NAN: f64 = f64::NAN;

fn routines() -> Vec<Routine> {
    vec![
        Routine {
            op: UnaryOp::Exp,
            reference: exp_ref,
            ranges: &[(-746.0, 710.0), (-1.0, 1.0)],
            edges: &[709.78, 709.782, -708.4, -745.13, 0.0027, -0.0027],
            special: &[
                (0.0, 1.0),
                (-0.0, 1.0),
                (INF, INF),
                (-INF, 0.0),
                (NAN, NAN),
                (709.8, INF),
                (1000.0, INF),
                (-746.0, 0.0),
                (-1e300, 0.0),
                (-745.1, 5e-324),
                (5e-324, 1.0),
                (1.0, std::f64::consts::E),
            ],
        },
        Routine {
            op: UnaryOp::Expm1,
            reference: expm1_ref,
            ranges: &[(-40.0, 710.0), (-1.0, 1.0), (-0.25, 0.25)],
            edges: &[
                709.78,
                709.782,
                0.125,
                -0.125,
                0.12499999999999999,
                -0.12499999999999999,
                0.0027,
                -0.0027,
                -37.5,
            ],
            special: &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (INF, INF),
                (-INF, -1.0),
                (NAN, NAN),
                (709.8, INF),
                (-40.0, -1.0),
                (-1e300, -1.0),
                (5e-324, 5e-324),
                (-1e-300, -1e-300),
            ],
        },
        Routine {
            op: UnaryOp::Log,
            reference: |x| (log_ref(x), 0),
            ranges: &[(0.0, 4.0), (0.98, 1.02), (0.999, 1.001)],
            edges: &[
                1.0000000000000002,
                0.9999999999999999,
                0.998046875,
                1.00390625,
                0.9990234375,
                1.001953125,
                0.9990234374999999,
                1.0019531249999998,
                0.6875,
                1.375,
                1.3749999999999998,
                2.2250738585072014e-308,
                2.225073858507201e-308,
            ],
            special: &[
                (1.0, 0.0),
                (0.0, -INF),
                (-0.0, -INF),
                (-1.0, NAN),
                (-INF, NAN),
                (INF, INF),
                (NAN, NAN),
                (5e-324, -744.4400719213812),
                (f64::MAX, 709.782712893384),
                (std::f64::consts::E, 1.0),
            ],
        },
        Routine {
            op: UnaryOp::Tanh,
            reference: |x| (tanh_ref(x), 0),
            ranges: &[(-20.0, 20.0), (-1.0, 1.0), (-0.2, 0.2)],
            edges: &[0.125, -0.125, 0.12499999999999999, 18.4, 19.1, 0.0027],
            special: &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (INF, 1.0),
                (-INF, -1.0),
                (NAN, NAN),
                (20.0, 1.0),
                (-1e300, -1.0),
                (5e-324, 5e-324),
                (-1e-300, -1e-300),
            ],
        },
        Routine {
            op: UnaryOp::Erf,
            // Tiny arguments scaled up, so that the low part is not lost to underflow.
            reference: |x| {
                if x != 0.0 && x.abs() < 1e-150 {
                    (TWO_OVER_SQRT_PI.mul_f(x * pow2i(600)), -600)
                } else {
                    (erf_ref(x), 0)
                }
            },
            ranges: &[(-6.5, 6.5), (-1.0, 1.0), (5.0, 6.5)],
            edges: &[
                0.5,
                -0.5,
                0.4999999999999999,
                0.5625,
                0.4375,
                5.9375,
                5.95,
                0.75,
            ],
            special: &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (INF, 1.0),
                (-INF, -1.0),
                (NAN, NAN),
                (6.0, 1.0),
                (-5.95, -1.0),
                (5e-324, 5e-324),
                (-1e-300, -1.1283791670955126e-300),
            ],
        },
    ]
}

/// The sample points of a routine: a quarter random bit patterns, a quarter log-uniform
/// magnitudes in [2⁻⁶⁰, 2⁶] of both signs, half uniform over its ranges.
pub fn points(ranges: &[(f64, f64)], n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| match i % 4 {
            0 => f64::from_bits(rng.next_u64()),
            1 => {
                let m = 2f64.powf(-60.0 + 66.0 * rng.uniform(0.0, 1.0));
                if rng.next_u64() & 1 == 1 {
                    -m
                } else {
                    m
                }
            }
            _ => {
                let (lo, hi) = ranges[(i / 4) % ranges.len()];
                rng.uniform(lo, hi)
            }
        })
        .collect()
}

fn n_points() -> usize {
    std::env::var("ADJIT_MATH_POINTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000)
}

/// Every routine in `form` against the reference: the special values bitwise, the edges and
/// samples within 1 ulp; the failures, described.
fn check(form: Form) -> Vec<String> {
    let n = n_points();
    let mut failures = Vec::new();
    for (i, r) in routines().iter().enumerate() {
        let name = r.op.name();
        for &(x, want) in r.special {
            let got = unary_f64(form, r.op, x);
            let same = (got.is_nan() && want.is_nan()) || got.to_bits() == want.to_bits();
            if !same {
                failures.push(format!(
                    "{name}({x:e}) = {got:e}, expected {want:e} ({form:?})"
                ));
            }
        }
        let (mut worst, mut worst_at) = (0.0f64, 0.0);
        let (mut worst32, mut worst32_at) = (0.0f64, 0.0f32);
        let samples = points(r.ranges, n, 0x5eed + i as u64);
        for x in r.edges.iter().copied().chain(samples) {
            let exact = (r.reference)(x);
            let err = ulp_error(unary_f64(form, r.op, x), exact, 53, -1022);
            if err.is_nan() || err > worst {
                (worst, worst_at) = (err, x);
            }
            let x32 = x as f32;
            let (m, k) = (r.reference)(f64::from(x32));
            let exact32 = m.ldexp(k);
            let exact32 = if exact32.0.abs() > f64::from(f32::MAX) * (1.0 + 2f64.powi(-25)) {
                Dd::from(exact32.0.signum() * f64::INFINITY)
            } else {
                exact32
            };
            let exact32 = (exact32, 0);
            let err32 = ulp_error(f64::from(unary_f32(form, r.op, x32)), exact32, 24, -126);
            if err32.is_nan() || err32 > worst32 {
                (worst32, worst32_at) = (err32, x32);
            }
        }
        println!(
            "{name} ({form:?}): {n} points, max {worst:.3} ulp (at {worst_at:e}); f32 max {worst32:.3} ulp (at {worst32_at:e})"
        );
        if worst.is_nan() || worst >= 1.0 {
            failures.push(format!("{name} ({form:?}): {worst} ulp at {worst_at:e}"));
        }
        if worst32.is_nan() || worst32 >= 1.0 {
            failures.push(format!(
                "{name} ({form:?}, f32): {worst32} ulp at {worst32_at:e}"
            ));
        }
    }
    failures
}

#[test]
fn routines_are_within_one_ulp() {
    let failures = check(Form::Tables);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The forms object files contain (no tables).
#[test]
fn table_free_routines_are_within_one_ulp() {
    let failures = check(Form::TableFree);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
