//! References and test points of `log1p`, `sinh`, `cosh`, `atan`, `asin`, `acos`, and the
//! test of `atan2` over pairs of arguments.

// Expected results and test points are written as the decimal literals they are (π/2 as the
// rounded value expected bitwise, edges such as 0.7071067811865476 where asin changes form).
#![allow(clippy::approx_constant, clippy::excessive_precision)]

use super::dd::{exp_ref_dd, log_ref, pow2i, ulp_error, Dd};
use super::{n_points, Routine, INF, NAN};
use adjit_ir::random::Rng;
use adjit_ir::{mathlib, BinaryOp, UnaryOp};

/// `2·atanh(s)` for `|s| ≤ 0.2` by its Taylor series.
fn two_atanh(s: Dd) -> Dd {
    let z = s.mul(s);
    let mut pow = s;
    let mut sum = s;
    for k in 1..40 {
        pow = pow.mul(z);
        sum = sum.add(pow.div(Dd::from((2 * k + 1) as f64)));
    }
    sum.mul_f(2.0)
}

/// log1p: `2·atanh(x/(2 + x))` for `|x| ≤ 0.5` (`2 + x` exact as a double-double), beyond
/// `log(u) + err/u` with `u + err = 1 + x` exactly; tiny arguments scaled.
fn log1p_ref(x: f64) -> (Dd, i32) {
    if x.is_nan() || x == 0.0 || x == INF {
        return (Dd::from(x), 0);
    }
    if x < -1.0 {
        return (Dd::from(NAN), 0);
    }
    if x == -1.0 {
        return (Dd::from(-INF), 0);
    }
    if x.abs() < 1e-200 {
        // x − x²/2.
        let m = x * pow2i(600);
        return (Dd::from(m).add(Dd::from(-m * x * 0.5)), -600);
    }
    if x.abs() <= 0.5 {
        let s = Dd::from(x).div(Dd::from(2.0).add(Dd::from(x)));
        return (two_atanh(s), 0);
    }
    let u = 1.0 + x;
    let err = super::dd::two_sum(1.0, x).1;
    (log_ref(u).add(Dd::from(err).div(Dd::from(u))), 0)
}

/// `Σ aⁿ/n!` over `n ≡ first (mod 2)`, `n ≥ first`, for `|a| < 1`.
fn parity_series(a: f64, first: u32) -> Dd {
    let a = Dd::from(a);
    let z = a.mul(a);
    let mut term = if first == 0 { Dd::from(1.0) } else { a };
    let mut sum = term;
    let mut n = first as f64;
    loop {
        term = term.mul(z).div(Dd::from((n + 1.0) * (n + 2.0)));
        sum = sum.add(term);
        if term.0.abs() < 1e-40 * sum.0.abs() {
            return sum;
        }
        n += 2.0;
    }
}

/// `(e^a ± e^−a)/2` as `(m, k)` for `a ≥ 0.5`, the exponentials from `exp_ref_dd` kept apart
/// from their powers of two (no overflow before the measure).
fn exp_pm(a: f64, sign: f64) -> (Dd, i32) {
    let (m1, k1) = exp_ref_dd(Dd::from(a));
    let (m2, k2) = exp_ref_dd(Dd::from(-a));
    let d = k2 - k1;
    let m2 = if d < -1000 {
        Dd::from(0.0)
    } else {
        m2.ldexp(d)
    };
    (m1.add(m2.mul_f(sign)), k1 - 1)
}

fn sinh_ref(x: f64) -> (Dd, i32) {
    let a = x.abs();
    let (m, k) = if x.is_nan() || x == 0.0 {
        return (Dd::from(x), 0);
    } else if a > 711.0 {
        (Dd::from(INF), 0)
    } else if a < 1e-200 {
        (Dd::from(a * pow2i(600)), -600)
    } else if a < 0.5 {
        (parity_series(a, 1), 0)
    } else {
        exp_pm(a, -1.0)
    };
    if x < 0.0 {
        (m.neg(), k)
    } else {
        (m, k)
    }
}

fn cosh_ref(x: f64) -> (Dd, i32) {
    let a = x.abs();
    if x.is_nan() {
        (Dd::from(x), 0)
    } else if a > 711.0 {
        (Dd::from(INF), 0)
    } else if a < 0.5 {
        (parity_series(a, 0), 0)
    } else {
        exp_pm(a, 1.0)
    }
}

pub const PI: Dd = Dd(3.141592653589793, 1.2246467991473532e-16);
pub const PI_2: Dd = Dd(1.5707963267948966, 6.123233995736766e-17);

/// `√a` of a positive double-double: the rounded root and one Newton correction.
fn sqrt_dd(a: Dd) -> Dd {
    if a.0 == 0.0 {
        return Dd::from(0.0);
    }
    let s = a.0.sqrt();
    let r = a.sub(Dd::from(s).mul(Dd::from(s)));
    super::dd::fast_two_sum(s, r.0 / (2.0 * s))
}

/// `atan q` for `0 ≤ q ≤ 1`: three halvings `q ← q/(1 + √(1 + q²))` (to below 0.1), then
/// the Taylor series.
fn atan_small(q: Dd) -> Dd {
    let mut q = q;
    for _ in 0..3 {
        let one = Dd::from(1.0);
        q = q.div(one.add(sqrt_dd(one.add(q.mul(q)))));
    }
    let z = q.mul(q);
    let mut pow = q;
    let mut sum = q;
    for k in 1..30 {
        pow = pow.mul(z).neg();
        sum = sum.add(pow.div(Dd::from((2 * k + 1) as f64)));
    }
    sum.mul_f(8.0)
}

/// `atan q` for finite `q ≥ 0`: `π/2 − atan(1/q)` beyond 1.
fn atan_dd(q: Dd) -> Dd {
    if q.0 > 1.0 {
        PI_2.sub(atan_small(Dd::from(1.0).div(q)))
    } else {
        atan_small(q)
    }
}

fn atan_ref(x: f64) -> (Dd, i32) {
    if x.is_nan() || x == 0.0 {
        return (Dd::from(x), 0);
    }
    let a = x.abs();
    let (m, k) = if a == INF {
        (PI_2, 0)
    } else if a < 1e-200 {
        (Dd::from(a * pow2i(600)), -600)
    } else {
        (atan_dd(Dd::from(a)), 0)
    };
    if x < 0.0 {
        (m.neg(), k)
    } else {
        (m, k)
    }
}

/// `√(1 − a²)` for `0 ≤ a ≤ 1`, from `(1 − a)(1 + a)`.
fn cos_leg(a: f64) -> Dd {
    let one = Dd::from(1.0);
    sqrt_dd(one.sub(Dd::from(a)).mul(one.add(Dd::from(a))))
}

fn asin_ref(x: f64) -> (Dd, i32) {
    let a = x.abs();
    if x.is_nan() || a > 1.0 {
        return (Dd::from(NAN), 0);
    }
    if x == 0.0 {
        return (Dd::from(x), 0);
    }
    let (m, k) = if a < 1e-200 {
        (Dd::from(a * pow2i(600)), -600)
    } else if a <= 0.7 {
        (atan_dd(Dd::from(a).div(cos_leg(a))), 0)
    } else {
        (PI_2.sub(atan_dd(cos_leg(a).div(Dd::from(a)))), 0)
    };
    if x < 0.0 {
        (m.neg(), k)
    } else {
        (m, k)
    }
}

fn acos_ref(x: f64) -> (Dd, i32) {
    let a = x.abs();
    if x.is_nan() || a > 1.0 {
        return (Dd::from(NAN), 0);
    }
    let r = if a >= 0.7 {
        let t = atan_dd(cos_leg(a).div(Dd::from(a)));
        if x < 0.0 {
            PI.sub(t)
        } else {
            t
        }
    } else {
        let t = atan_dd(Dd::from(a).div(cos_leg(a)));
        if x < 0.0 {
            PI_2.add(t)
        } else {
            PI_2.sub(t)
        }
    };
    (r, 0)
}

/// `atan2(y, x)` as `(m, k)`: Annex F's special values, otherwise `±(off ± atan q)` with
/// `q = min/max` of the magnitudes, `q` kept apart from its power of two while tiny.
fn atan2_ref(y: f64, x: f64) -> (Dd, i32) {
    if x.is_nan() || y.is_nan() {
        return (Dd::from(NAN), 0);
    }
    let sign = |m: Dd| if y.is_sign_negative() { m.neg() } else { m };
    let x_neg = x.is_sign_negative();
    let (ax, ay) = (x.abs(), y.abs());
    let quarter = PI.mul_f(0.25);
    let r = if ax == INF && ay == INF {
        if x_neg {
            PI.sub(quarter)
        } else {
            quarter
        }
    } else if ay == 0.0 || ax == INF {
        if x_neg {
            PI
        } else {
            Dd::from(0.0)
        }
    } else if ax == 0.0 || ay == INF {
        PI_2
    } else {
        let swapped = ay > ax;
        let (n, d) = if swapped { (ax, ay) } else { (ay, ax) };
        // n/d = (mn/md)·2^(en − ed), mn, md in [1, 2).
        let exponent = |v: f64| -> i32 {
            let field = |v: f64| ((v.to_bits() >> 52) & 0x7ff) as i32 - 1023;
            if v < f64::MIN_POSITIVE {
                field(v * pow2i(200)) - 200
            } else {
                field(v)
            }
        };
        let (en, ed) = (exponent(n), exponent(d));
        let mn = Dd::from(n).ldexp(-en);
        let md = Dd::from(d).ldexp(-ed);
        let qm = mn.div(md);
        let k = en - ed;
        if k < -1100 && !swapped && !x_neg {
            return (sign(Dd::from(0.0)), 0);
        }
        if k < -40 && !swapped && !x_neg {
            // atan q = q·(1 − q²/3 + …), q < 2⁻³⁹.
            let q2 = qm.0 * qm.0 * pow2i((2 * k).max(-1074));
            return (sign(qm.sub(qm.mul_f(q2 / 3.0))), k);
        }
        let a = if k < -1000 {
            Dd::from(0.0)
        } else {
            atan_dd(qm.ldexp(k))
        };
        match (swapped, x_neg) {
            (false, false) => a,
            (false, true) => PI.sub(a),
            (true, false) => PI_2.sub(a),
            (true, true) => PI_2.add(a),
        }
    };
    (sign(r), 0)
}

/// Pairs: a quarter random bit patterns, a quarter log-uniform magnitudes in [2⁻⁶⁰, 2⁶⁰] of
/// random signs, a quarter uniform in [−4, 4]², a quarter with wildly different exponents.
fn pairs(n: usize, seed: u64) -> Vec<(f64, f64)> {
    let mut rng = Rng::new(seed);
    let signed = |rng: &mut Rng, lo: f64, hi: f64| {
        let m = 2f64.powf(rng.uniform(lo, hi));
        if rng.next_u64() & 1 == 1 {
            -m
        } else {
            m
        }
    };
    (0..n)
        .map(|i| match i % 4 {
            0 => (
                f64::from_bits(rng.next_u64()),
                f64::from_bits(rng.next_u64()),
            ),
            1 => (signed(&mut rng, -60.0, 60.0), signed(&mut rng, -60.0, 60.0)),
            2 => (rng.uniform(-4.0, 4.0), rng.uniform(-4.0, 4.0)),
            _ => (
                signed(&mut rng, -1074.0, 1023.9),
                signed(&mut rng, -1074.0, 1023.9),
            ),
        })
        .collect()
}

#[test]
fn atan2_is_within_one_ulp() {
    let atan2 = |y: f64, x: f64| mathlib::binary_f64(BinaryOp::Atan2, y, x).unwrap();
    let pi = PI.0;
    let (pi2, pi4) = (PI_2.0, PI.0 / 4.0);
    let pi34 = 2.356194490192345;
    let mut failures = Vec::new();
    let specials = [
        (0.0, 0.0, 0.0),
        (-0.0, 0.0, -0.0),
        (0.0, -0.0, pi),
        (-0.0, -0.0, -pi),
        (0.0, 1.0, 0.0),
        (-0.0, 1.0, -0.0),
        (0.0, -1.0, pi),
        (-0.0, -1.0, -pi),
        (1.0, 0.0, pi2),
        (1.0, -0.0, pi2),
        (-1.0, 0.0, -pi2),
        (-1.0, -0.0, -pi2),
        (INF, INF, pi4),
        (-INF, INF, -pi4),
        (INF, -INF, pi34),
        (-INF, -INF, -pi34),
        (1.0, INF, 0.0),
        (-1.0, INF, -0.0),
        (1.0, -INF, pi),
        (-1.0, -INF, -pi),
        (INF, 1.0, pi2),
        (-INF, -1.0, -pi2),
        (INF, 0.0, pi2),
        (0.0, INF, 0.0),
        (-0.0, -INF, -pi),
        (NAN, 1.0, NAN),
        (1.0, NAN, NAN),
        (NAN, NAN, NAN),
        (INF, NAN, NAN),
        (0.0, NAN, NAN),
        (1.0, 1.0, pi4),
        (-1.0, -1.0, -pi34),
        (5e-324, f64::MAX, 0.0),
        (f64::MAX, 5e-324, pi2),
        (5e-324, 1.0, 5e-324),
        (-5e-324, 5e-324, -pi4),
        (f64::MAX, f64::MAX, pi4),
    ];
    for (y, x, want) in specials {
        let got = atan2(y, x);
        if !((got.is_nan() && want.is_nan()) || got.to_bits() == want.to_bits()) {
            failures.push(format!("atan2({y:e}, {x:e}) = {got:e}, expected {want:e}"));
        }
    }
    let n = n_points();
    let (mut worst, mut worst_at) = (0.0f64, (0.0, 0.0));
    let (mut worst32, mut worst32_at) = (0.0f64, (0.0f32, 0.0f32));
    for (y, x) in pairs(n, 0xa7a2) {
        let err = ulp_error(atan2(y, x), atan2_ref(y, x), 53, -1022);
        if err.is_nan() || err > worst {
            (worst, worst_at) = (err, (y, x));
        }
        let (y32, x32) = (y as f32, x as f32);
        let got32 = atan2(f64::from(y32), f64::from(x32)) as f32;
        let (m, k) = atan2_ref(f64::from(y32), f64::from(x32));
        let err32 = ulp_error(f64::from(got32), (m.ldexp(k), 0), 24, -126);
        if err32.is_nan() || err32 > worst32 {
            (worst32, worst32_at) = (err32, (y32, x32));
        }
    }
    println!(
        "atan2: {n} pairs, max {worst:.3} ulp (at {worst_at:?}); f32 max {worst32:.3} ulp (at {worst32_at:?})"
    );
    if worst.is_nan() || worst >= 1.0 {
        failures.push(format!("atan2: {worst} ulp at {worst_at:?}"));
    }
    if worst32.is_nan() || worst32 >= 1.0 {
        failures.push(format!("atan2 (f32): {worst32} ulp at {worst32_at:?}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

pub fn routines() -> Vec<Routine> {
    vec![
        Routine {
            op: UnaryOp::Log1p,
            reference: log1p_ref,
            ranges: &[(-1.0, 4.0), (-0.01, 0.01), (-0.002, 0.003), (-1.0, -0.99)],
            edges: &[
                1.0 / 1024.0,
                -1.0 / 1024.0,
                0.0009765624999999999,
                -0.0009765624999999999,
                0.001953125,
                0.0019531249999999998,
                -0.001953125,
                1.1102230246251565e-16,
                -1.1102230246251565e-16,
                2.220446049250313e-16,
                1.6653345369377348e-16,
                -0.3125,
                0.375,
                -0.9999999999999999,
                9007199254740992.0,
                9007199254740993.0,
                1e300,
                f64::MAX,
            ],
            special: &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (-1.0, -INF),
                (-1.0000000000000002, NAN),
                (-INF, NAN),
                (INF, INF),
                (NAN, NAN),
                (5e-324, 5e-324),
                (-5e-324, -5e-324),
                (1e-300, 1e-300),
                (-1e-300, -1e-300),
                (1.718281828459045, 1.0),
            ],
        },
        Routine {
            op: UnaryOp::Sinh,
            reference: sinh_ref,
            ranges: &[(-711.0, 711.0), (-2.0, 2.0), (-0.2, 0.2), (700.0, 711.0)],
            edges: &[
                0.125,
                -0.125,
                0.12499999999999999,
                0.12500000000000003,
                0.0027,
                1.0 / 256.0,
                710.4758600739439,
                -710.4758600739439,
                709.78,
                22.0,
                1.4901161193847656e-8,
            ],
            special: &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (INF, INF),
                (-INF, -INF),
                (NAN, NAN),
                (710.475860073944, INF),
                (-711.0, -INF),
                (-1e300, -INF),
                (5e-324, 5e-324),
                (-1e-300, -1e-300),
                (1e-10, 1e-10),
            ],
        },
        Routine {
            op: UnaryOp::Cosh,
            reference: cosh_ref,
            ranges: &[(-711.0, 711.0), (-2.0, 2.0), (-0.2, 0.2), (700.0, 711.0)],
            edges: &[
                0.125,
                0.0027,
                1.0 / 256.0,
                0.00270703125,
                710.4758600739439,
                -710.4758600739439,
                709.78,
                22.0,
                1.4901161193847656e-8,
            ],
            special: &[
                (0.0, 1.0),
                (-0.0, 1.0),
                (INF, INF),
                (-INF, INF),
                (NAN, NAN),
                (710.475860073944, INF),
                (-711.0, INF),
                (1e300, INF),
                (5e-324, 1.0),
                (-1e-300, 1.0),
                (1e-9, 1.0),
            ],
        },
        Routine {
            op: UnaryOp::Atan,
            reference: atan_ref,
            ranges: &[(-300.0, 300.0), (-2.0, 2.0), (-0.01, 0.01), (100.0, 300.0)],
            edges: &[
                1.0 / 256.0,
                0.0039062499999999996,
                0.0078125,
                0.0078124999999999995,
                128.0,
                127.99999999999999,
                256.0,
                255.99999999999997,
                1.0,
                0.9999999999999999,
                1.0000000000000002,
                1.03125,
                7.450580596923828e-9,
                7.4505805969238274e-9,
                1e16,
                7.378697629483821e19,
                1.2676506002282294e30,
            ],
            special: &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (INF, 1.5707963267948966),
                (-INF, -1.5707963267948966),
                (NAN, NAN),
                (1e300, 1.5707963267948966),
                (-f64::MAX, -1.5707963267948966),
                (5e-324, 5e-324),
                (-1e-300, -1e-300),
                (1e-10, 1e-10),
                (1.0, 0.7853981633974483),
            ],
        },
        Routine {
            op: UnaryOp::Asin,
            reference: asin_ref,
            ranges: &[(-1.0, 1.0), (0.69, 0.72), (-1.0, -0.999), (-0.01, 0.01)],
            edges: &[
                0.7071067811865476,
                0.7071067811865475,
                -0.7071067811865476,
                0.9999999999999999,
                -0.9999999999999999,
                0.5,
                1.4901161193847656e-8,
                0.0078125,
                0.99999,
            ],
            special: &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (1.0, 1.5707963267948966),
                (-1.0, -1.5707963267948966),
                (1.0000000000000002, NAN),
                (-1.0000000000000002, NAN),
                (INF, NAN),
                (-INF, NAN),
                (NAN, NAN),
                (5e-324, 5e-324),
                (-1e-300, -1e-300),
                (1e-10, 1e-10),
            ],
        },
        Routine {
            op: UnaryOp::Acos,
            reference: acos_ref,
            ranges: &[(-1.0, 1.0), (0.69, 0.72), (0.999, 1.0), (-1.0, -0.999)],
            edges: &[
                0.7071067811865476,
                0.7071067811865475,
                -0.7071067811865476,
                0.9999999999999999,
                -0.9999999999999999,
                0.5,
                -0.5,
                1.4901161193847656e-8,
                0.0078125,
                0.99999,
            ],
            special: &[
                (0.0, 1.5707963267948966),
                (-0.0, 1.5707963267948966),
                (1.0, 0.0),
                (-1.0, 3.141592653589793),
                (1.0000000000000002, NAN),
                (-1.0000000000000002, NAN),
                (INF, NAN),
                (-INF, NAN),
                (NAN, NAN),
                (5e-324, 1.5707963267948966),
                (-1e-300, 1.5707963267948966),
            ],
        },
    ]
}

/// The routines against the derivative formulas of `adjit-diff`'s rules (`log1p' = 1/(1 + x)`,
/// `sinh' = cosh`, `cosh' = sinh`, `atan' = 1/(1 + x²)`, `asin' = ±1/√(1 − x²)` for asin and
/// acos, `∂atan2(y, x) = (x, −y)/(x² + y²)`), by central differences at a few hundred points:
/// the routines are smooth where the rules say.
#[test]
fn derivatives_match_finite_differences() {
    let f = |op, x: f64| mathlib::unary_f64(op, x).unwrap();
    type Rule = (UnaryOp, fn(f64) -> f64, (f64, f64));
    let ops: [Rule; 6] = [
        (UnaryOp::Log1p, |x| 1.0 / (1.0 + x), (-0.9, 5.0)),
        (
            UnaryOp::Sinh,
            |x| mathlib::unary_f64(UnaryOp::Cosh, x).unwrap(),
            (-5.0, 5.0),
        ),
        (
            UnaryOp::Cosh,
            |x| mathlib::unary_f64(UnaryOp::Sinh, x).unwrap(),
            (-5.0, 5.0),
        ),
        (UnaryOp::Atan, |x| 1.0 / x.mul_add(x, 1.0), (-10.0, 10.0)),
        (
            UnaryOp::Asin,
            |x| 1.0 / (-x).mul_add(x, 1.0).sqrt(),
            (-0.95, 0.95),
        ),
        (
            UnaryOp::Acos,
            |x| -1.0 / (-x).mul_add(x, 1.0).sqrt(),
            (-0.95, 0.95),
        ),
    ];
    let mut rng = Rng::new(0xd1ff);
    let close = |fd: f64, want: f64| (fd - want).abs() <= 1e-7 * want.abs().max(1.0);
    for (op, derivative, (lo, hi)) in ops {
        for _ in 0..300 {
            let x = rng.uniform(lo, hi);
            let h = 1e-5 * x.abs().max(1.0);
            let fd = (f(op, x + h) - f(op, x - h)) / (2.0 * h);
            let want = derivative(x);
            assert!(
                close(fd, want),
                "{op}'({x}): {fd} by differences, {want} by the rule"
            );
        }
    }
    let atan2 = |y: f64, x: f64| mathlib::binary_f64(BinaryOp::Atan2, y, x).unwrap();
    for _ in 0..300 {
        let (y, x) = (rng.uniform(-3.0, 3.0), rng.uniform(-3.0, 3.0));
        let r2 = x * x + y * y;
        if r2 < 0.1 || (x < 0.0 && y.abs() < 0.1) {
            continue; // near the origin or the branch cut
        }
        let h = 1e-5;
        let dy = (atan2(y + h, x) - atan2(y - h, x)) / (2.0 * h);
        let dx = (atan2(y, x + h) - atan2(y, x - h)) / (2.0 * h);
        assert!(close(dy, x / r2), "∂atan2/∂y({y}, {x}): {dy} vs {}", x / r2);
        assert!(
            close(dx, -y / r2),
            "∂atan2/∂x({y}, {x}): {dx} vs {}",
            -y / r2
        );
    }
}

/// The default `atan2` ([`adjit_ir::math`]: adjit's or the C library's, by
/// [`mathlib::default_binary`]) is within 1 ulp; the C library's error is printed beside it.
#[test]
fn the_default_atan2_is_within_one_ulp() {
    let (mut worst, mut at, mut libm) = (0.0f64, (0.0, 0.0), 0.0f64);
    for (y, x) in pairs(n_points() / 4, 0xda7a2) {
        let exact = atan2_ref(y, x);
        let err = ulp_error(
            adjit_ir::math::binary_f64(BinaryOp::Atan2, y, x),
            exact,
            53,
            -1022,
        );
        if err.is_nan() || err > worst {
            (worst, at) = (err, (y, x));
        }
        let e = ulp_error(
            adjit_ir::math::binary_f64_libm(BinaryOp::Atan2, y, x),
            exact,
            53,
            -1022,
        );
        if e.is_nan() || e > libm {
            libm = e;
        }
    }
    let by = if mathlib::default_binary(BinaryOp::Atan2) {
        "adjit"
    } else {
        "libm"
    };
    println!("atan2: default ({by}) max {worst:.3} ulp; C library {libm:.3} ulp");
    assert!(
        worst < 1.0,
        "atan2: the default ({by}) is {worst} ulp away at {at:?}"
    );
}
