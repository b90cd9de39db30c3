//! References and test points of `log1p`, `sinh`, `cosh`, `atan`, `asin`, `acos`, and the
//! test of `atan2` over pairs of arguments.

use super::dd::{exp_ref_dd, log_ref, pow2i, Dd};
use super::{Routine, INF, NAN};
use adjit_ir::UnaryOp;

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
    ]
}
