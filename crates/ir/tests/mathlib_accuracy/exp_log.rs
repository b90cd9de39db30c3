//! References and test points of `exp`, `expm1`, `log`, `tanh` and `erf`.

use super::dd::{exp_ref_dd, expm1_small, log_ref, pow2i, Dd, INV_SQRT_PI, TWO_OVER_SQRT_PI};
use super::{Routine, INF, NAN};
use adjit_ir::UnaryOp;

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

pub fn routines() -> Vec<Routine> {
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
