//! `pow(x, y)`: the special values of C99 Annex F (F.9.4.4, as glibc returns them), written
//! down here as rules and as a table; everywhere else a reference `±exp(y·log|x|)` in
//! double-double (`log_ref`, the product, `exp_ref_dd`), with pairs chosen so that results
//! span the whole range, subnormals and overflow included.
//!
//! The reference's error: `log_ref` is within about 2⁻¹⁰⁰ relative, the double-double product
//! within 2⁻¹⁰⁴, so `y·log|x|` is within about `746·2⁻¹⁰⁰ < 2⁻⁹⁰` absolute wherever the
//! result is neither 0 nor infinite (`|y·log|x|| < 746`; larger products are decided by
//! their sign from the leading part alone), and `exp_ref_dd` adds about 2⁻⁹⁷: the reference is
//! within 2⁻⁸⁹ relative of `|x|ʸ`, far below the 2⁻⁵³ being measured.

use super::dd::{exp_ref_dd, log_ref, pow2i, ulp_error, Dd};
use super::n_points;
use adjit_ir::random::Rng;
use adjit_ir::{mathlib, BinaryOp, UnaryOp};

const INF: f64 = f64::INFINITY;
const NAN: f64 = f64::NAN;

fn pow(x: f64, y: f64) -> f64 {
    mathlib::binary_f64(BinaryOp::Pow, x, y).expect("pow has a routine")
}

fn pow32(x: f32, y: f32) -> f32 {
    pow(f64::from(x), f64::from(y)) as f32
}

/// `y` is an integer (the infinities count as even integers).
fn is_int(y: f64) -> bool {
    y.is_infinite() || y == y.trunc()
}

fn is_odd(y: f64) -> bool {
    y.is_finite() && is_int(y) && (y % 2.0).abs() == 1.0
}

/// C99 Annex F's `pow` where it prescribes the value (`None`: a finite nonzero `x`, finite
/// nonzero `y`, and `x > 0` or `y` an integer; the value is then `±|x|ʸ`).
fn annex_f(x: f64, y: f64) -> Option<f64> {
    if y == 0.0 || x == 1.0 {
        return Some(1.0);
    }
    if x.is_nan() || y.is_nan() {
        return Some(NAN);
    }
    if y.is_infinite() {
        let ax = x.abs();
        return Some(if ax == 1.0 {
            1.0
        } else if (ax < 1.0) == (y < 0.0) {
            INF
        } else {
            0.0
        });
    }
    let odd = is_odd(y);
    if x == 0.0 {
        return Some(match (y < 0.0, odd) {
            (true, true) => INF.copysign(x),
            (true, false) => INF,
            (false, true) => x,
            (false, false) => 0.0,
        });
    }
    if x.is_infinite() {
        let mag = if y < 0.0 { 0.0 } else { INF };
        return Some(if x < 0.0 && odd { -mag } else { mag });
    }
    if x < 0.0 && !is_int(y) {
        return Some(NAN);
    }
    None
}

/// `xʸ` as `(m, k)`, the exact value `m·2ᵏ`.
fn pow_ref(x: f64, y: f64) -> (Dd, i32) {
    if let Some(v) = annex_f(x, y) {
        return (Dd::from(v), 0);
    }
    let sign = if x < 0.0 && is_odd(y) { -1.0 } else { 1.0 };
    let l = log_ref(x.abs());
    let lead = l.0 * y;
    if lead > 1000.0 {
        return (Dd::from(sign * INF), 0);
    }
    if lead < -1000.0 {
        return (Dd::from(sign * 0.0), 0);
    }
    let p = l.mul_f(y);
    if p.0 > 709.8 {
        return (Dd::from(sign * INF), 0);
    }
    if p.0 < -745.2 {
        return (Dd::from(sign * 0.0), 0);
    }
    let (m, k) = exp_ref_dd(p);
    (Dd(sign * m.0, sign * m.1), k)
}

/// `m·2ᵘ` with `m` uniform in `[1, 2)` and `u` uniform in `[emin, emax]`, of either sign when
/// `signed`.
fn log_uniform(rng: &mut Rng, emin: i32, emax: i32, signed: bool) -> f64 {
    let u = emin + rng.below((emax - emin + 1) as usize) as i32;
    let x = rng.uniform(1.0, 2.0) * pow2i(u);
    if signed && rng.next_u64() & 1 == 1 {
        -x
    } else {
        x
    }
}

/// The format's ranges: exponents of `x` and of the results.
#[derive(Clone, Copy)]
struct Format {
    /// The smallest and largest exponent of a (subnormal or normal) value.
    emin: i32,
    emax: i32,
}

const F64: Format = Format {
    emin: -1074,
    emax: 1023,
};
const F32: Format = Format {
    emin: -149,
    emax: 127,
};

/// `y` such that `|x|ʸ = 2ᵗ` with `t` uniform over the results' exponents, past the
/// underflow and overflow thresholds.
fn spanning_y(rng: &mut Rng, f: Format, x: f64) -> f64 {
    let t = rng.uniform(f64::from(f.emin - 6), f64::from(f.emax + 7));
    t / x.abs().log2()
}

/// Test pairs: random bit patterns, log-uniform `x` with `y` spanning the results, `x` near 1,
/// subnormal `x`, negative `x` with integer `y`, `y` near ±1/2, the range the C library's
/// `pow` was measured on against correct rounding (`x < 100`, `|y| < 20`) and small integer
/// powers.
fn pairs(f: Format, n: usize, seed: u64) -> Vec<(f64, f64)> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| match i % 8 {
            0 => (
                f64::from_bits(rng.next_u64()),
                f64::from_bits(rng.next_u64()),
            ),
            1 => {
                let x = log_uniform(&mut rng, f.emin, f.emax, false);
                (x, spanning_y(&mut rng, f, x))
            }
            2 => {
                // 1 ± 2⁻ᵘ·m: where log x is small and y large.
                let d = log_uniform(&mut rng, -52, -1, true);
                let x = 1.0 + d;
                (x, spanning_y(&mut rng, f, x))
            }
            3 => {
                let x = log_uniform(&mut rng, f.emin, f.emin + 60, false);
                (x, spanning_y(&mut rng, f, x))
            }
            4 => {
                let x = -log_uniform(&mut rng, f.emin, f.emax, false);
                let y = spanning_y(&mut rng, f, x).round();
                let y = if y == 0.0 { 3.0 } else { y };
                (x, y)
            }
            5 => {
                let x = log_uniform(&mut rng, f.emin, f.emax, false);
                let half = if rng.next_u64() & 1 == 1 { 0.5 } else { -0.5 };
                let y = if rng.chance(0.25) {
                    half
                } else {
                    half * (1.0 + rng.uniform(-1e-3, 1e-3))
                };
                (x, y)
            }
            6 => (rng.uniform(0.0, 100.0), rng.uniform(-20.0, 20.0)),
            _ => (rng.uniform(-12.0, 12.0), rng.below(81) as f64 - 40.0),
        })
        .collect()
}

/// The special arguments of the grid.
const GRID: [f64; 20] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -0.5,
    2.0,
    -2.0,
    3.0,
    -3.0,
    INF,
    -INF,
    NAN,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    f64::MAX,
    -f64::MAX,
    1e300,
    -1e-300,
];

/// Annex F cases written out (x, y, pow(x, y)), a check on the rules above, and two exact
/// powers.
const TABLE: [(f64, f64, f64); 32] = [
    (NAN, 0.0, 1.0),
    (NAN, -0.0, 1.0),
    (1.0, NAN, 1.0),
    (1.0, INF, 1.0),
    (-1.0, INF, 1.0),
    (-1.0, -INF, 1.0),
    (-1.0, NAN, NAN),
    (NAN, 1.0, NAN),
    (2.0, NAN, NAN),
    (-0.0, -3.0, -INF),
    (0.0, -3.0, INF),
    (-0.0, -2.0, INF),
    (-0.0, -0.5, INF),
    (-0.0, -INF, INF),
    (-0.0, 3.0, -0.0),
    (-0.0, 2.0, 0.0),
    (-0.0, 0.5, 0.0),
    (-0.0, INF, 0.0),
    (0.5, -INF, INF),
    (-0.5, INF, 0.0),
    (2.0, -INF, 0.0),
    (-3.0, INF, INF),
    (-INF, -3.0, -0.0),
    (-INF, -2.0, 0.0),
    (-INF, 3.0, -INF),
    (-INF, 0.5, INF),
    (INF, -0.5, 0.0),
    (INF, 2.0, INF),
    (-2.0, 0.5, NAN),
    (-3.0, -2.5, NAN),
    (-2.0, 3.0, -8.0),
    (0.5, -3.0, 8.0),
];

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// The largest error in ulps over `pairs` in `f64` and, on the pairs rounded to `f32`, in
/// `f32`, with where it occurs.
fn measure(pts: &[(f64, f64)]) -> (f64, (f64, f64)) {
    measure_where(pts, |_| true)
}

/// [`measure`] over the pairs whose exact result satisfies `keep`.
fn measure_where(pts: &[(f64, f64)], keep: impl Fn(f64) -> bool) -> (f64, (f64, f64)) {
    let (mut worst, mut at) = (0.0f64, (0.0, 0.0));
    for &(x, y) in pts {
        let (m, k) = pow_ref(x, y);
        if !keep(m.ldexp(k).0) {
            continue;
        }
        let err = ulp_error(pow(x, y), (m, k), 53, -1022);
        if err.is_nan() || err > worst {
            (worst, at) = (err, (x, y));
        }
    }
    (worst, at)
}

fn measure32(pts: &[(f64, f64)]) -> (f64, (f32, f32)) {
    let (mut worst, mut at) = (0.0f64, (0.0, 0.0));
    for &(x, y) in pts {
        let (x, y) = (x as f32, y as f32);
        let (m, k) = pow_ref(f64::from(x), f64::from(y));
        let exact = m.ldexp(k);
        let exact = if exact.0.abs() > f64::from(f32::MAX) * (1.0 + 2f64.powi(-25)) {
            Dd::from(exact.0.signum() * INF)
        } else {
            exact
        };
        let err = ulp_error(f64::from(pow32(x, y)), (exact, 0), 24, -126);
        if err.is_nan() || err > worst {
            (worst, at) = (err, (x, y));
        }
    }
    (worst, at)
}

#[test]
fn pow_special_values_are_annex_f() {
    let mut failures = Vec::new();
    for &(x, y, want) in &TABLE {
        if let Some(rule) = annex_f(x, y) {
            assert!(
                same(rule, want),
                "rules: pow({x:e}, {y:e}) = {rule:e}, table {want:e}"
            );
        }
        let got = pow(x, y);
        if !same(got, want) {
            failures.push(format!("pow({x:e}, {y:e}) = {got:e}, expected {want:e}"));
        }
    }
    let mut grid = Vec::new();
    for &x in &GRID {
        for &y in &GRID {
            let got = pow(x, y);
            match annex_f(x, y) {
                Some(want) => {
                    if !same(got, want) {
                        failures.push(format!("pow({x:e}, {y:e}) = {got:e}, expected {want:e}"));
                    }
                }
                None => grid.push((x, y)),
            }
            // Exactly representable powers are exact.
            if annex_f(x, y).is_none() && is_int(y) && y.abs() <= 3.0 && x.abs() <= 3.0 {
                let mut want = 1.0;
                for _ in 0..(y.abs() as i32) {
                    want *= x;
                }
                let want = if y < 0.0 { 1.0 / want } else { want };
                if !same(got, want) {
                    failures.push(format!("pow({x:e}, {y:e}) = {got:e}, expected {want:e}"));
                }
            }
        }
    }
    let (worst, at) = measure(&grid);
    if worst >= 1.0 || worst.is_nan() {
        failures.push(format!("grid: {worst} ulp at pow{at:?}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn pow_is_within_one_ulp() {
    let n = n_points();
    // Another sample: `ADJIT_MATH_SEED=k`.
    let seed = std::env::var("ADJIT_MATH_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0);
    let mut failures = Vec::new();
    let pts = pairs(F64, n, 0x90e + 2 * seed);
    let (worst, at) = measure(&pts);
    let (normal, normal_at) = measure_where(&pts, |v| v.abs() >= f64::MIN_POSITIVE);
    let pts32 = pairs(F32, n, 0x90f + 2 * seed);
    let (worst32, at32) = measure32(&pts32);
    println!(
        "pow (seed {seed}): {n} pairs, max {worst:.3} ulp (at pow{at:?}); f32 {n} pairs, max {worst32:.3} ulp (at pow{at32:?})"
    );
    println!("pow: normal results max {normal:.3} ulp (at pow{normal_at:?})");
    if worst.is_nan() || worst >= 1.0 {
        failures.push(format!("pow: {worst} ulp at pow{at:?}"));
    }
    if worst32.is_nan() || worst32 >= 1.0 {
        failures.push(format!("pow (f32): {worst32} ulp at pow{at32:?}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The routine is consistent with the partial derivatives the differentiation rules use,
/// `∂x = y·x^(y−1)` and `∂y = xʸ·log x`, by central differences.
#[test]
fn pow_agrees_with_its_partial_derivatives() {
    let mut rng = Rng::new(0xd1ff);
    let log = |x: f64| mathlib::unary_f64(UnaryOp::Log, x).expect("log has a routine");
    for i in 0..400 {
        let (x, y) = if i % 4 == 3 {
            (rng.uniform(-8.0, -0.1), rng.below(11) as f64 - 5.0)
        } else {
            (rng.uniform(0.05, 20.0), rng.uniform(-6.0, 6.0))
        };
        let v = pow(x, y);
        let h = 1e-6 * x.abs();
        let (xp, xm) = (x + h, x - h);
        let fd_x = (pow(xp, y) - pow(xm, y)) / (xp - xm);
        let d_x = y * pow(x, y - 1.0);
        let tol = 1e-6 * (d_x.abs() + v.abs() / x.abs());
        assert!(
            (fd_x - d_x).abs() <= tol,
            "∂x pow({x}, {y}): differences {fd_x:e}, rule {d_x:e}"
        );
        if x > 0.0 {
            let h = 1e-6;
            let (yp, ym) = (y + h, y - h);
            let fd_y = (pow(x, yp) - pow(x, ym)) / (yp - ym);
            let d_y = v * log(x);
            let tol = 1e-6 * (d_y.abs() + v.abs());
            assert!(
                (fd_y - d_y).abs() <= tol,
                "∂y pow({x}, {y}): differences {fd_y:e}, rule {d_y:e}"
            );
        }
    }
}

/// The default `pow` ([`adjit_ir::math`]: adjit's or the C library's, by
/// [`mathlib::default_binary`]) is within 1 ulp; the C library's error is printed beside it.
#[test]
fn the_default_pow_is_within_one_ulp() {
    let (mut worst, mut at, mut libm) = (0.0f64, (0.0, 0.0), 0.0f64);
    for (x, y) in pairs(F64, n_points() / 4, 0xd90e) {
        let exact = pow_ref(x, y);
        let err = ulp_error(
            adjit_ir::math::binary_f64(BinaryOp::Pow, x, y),
            exact,
            53,
            -1022,
        );
        if err.is_nan() || err > worst {
            (worst, at) = (err, (x, y));
        }
        let e = ulp_error(
            adjit_ir::math::binary_f64_libm(BinaryOp::Pow, x, y),
            exact,
            53,
            -1022,
        );
        if e.is_nan() || e > libm {
            libm = e;
        }
    }
    let by = if mathlib::default_binary(BinaryOp::Pow) {
        "adjit"
    } else {
        "libm"
    };
    println!("pow: default ({by}) max {worst:.3} ulp; C library {libm:.3} ulp");
    assert!(
        worst < 1.0,
        "pow: the default ({by}) is {worst} ulp away at pow{at:?}"
    );
}
