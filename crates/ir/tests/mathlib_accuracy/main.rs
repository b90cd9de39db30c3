//! Accuracy of adjit's math routines ([`adjit_ir::mathlib`], as the JIT and object files emit
//! them under `MathImpl::Inline`) against a double-double reference written here, independent of the routines and of the C
//! library: every result within 1 ulp of the exact value, for
//! `f64` and for the `f32` forms, on random bit patterns, dense samples of the interesting
//! range and the special values.
//!
//! Points per routine: 100,000 (`ADJIT_MATH_POINTS=1000000` for more); with `--nocapture`
//! the maximal error in ulps is printed per routine.

mod dd;
mod exp_log;
mod more;
mod pow;
mod trig;

use adjit_ir::random::Rng;
use adjit_ir::{mathlib, UnaryOp};
use dd::{ulp_error, Dd};

/// adjit's routine on `f64` (every routine tested here has one).
fn unary_f64(op: UnaryOp, x: f64) -> f64 {
    mathlib::unary_f64(op, x).unwrap_or(f64::NAN)
}

/// The `f32` form: the `f64` routine on the promoted argument, rounded (as the JIT emits it).
fn unary_f32(op: UnaryOp, x: f32) -> f32 {
    unary_f64(op, f64::from(x)) as f32
}

/// A unary routine's reference and test points.
pub struct Routine {
    pub op: UnaryOp,
    /// The exact value as `(m, k)`: `m·2ᵏ`.
    pub reference: fn(f64) -> (Dd, i32),
    /// Dense sampling: uniform over these intervals (the first the whole interesting range,
    /// the others where a routine changes form or loses digits), equally often.
    pub ranges: &'static [(f64, f64)],
    /// Arguments with exactly known results (compared bitwise, NaN as NaN).
    pub special: &'static [(f64, f64)],
    /// Arguments where a routine switches form or a table row, measured like the samples.
    pub edges: &'static [f64],
}

pub const INF: f64 = f64::INFINITY;
pub const NAN: f64 = f64::NAN;

/// Every unary routine measured here.
fn routines() -> Vec<Routine> {
    let mut all = exp_log::routines();
    all.extend(more::routines());
    all.extend(trig::routines());
    all
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

/// Every routine against the reference: the special values bitwise, the edges and
/// samples within 1 ulp; the failures, described.
fn check() -> Vec<String> {
    let n = n_points();
    let mut failures = Vec::new();
    for (i, r) in routines().iter().enumerate() {
        let name = r.op.name();
        for &(x, want) in r.special {
            let got = unary_f64(r.op, x);
            let same = (got.is_nan() && want.is_nan()) || got.to_bits() == want.to_bits();
            if !same {
                failures.push(format!("{name}({x:e}) = {got:e}, expected {want:e}"));
            }
        }
        let (mut worst, mut worst_at) = (0.0f64, 0.0);
        let (mut worst32, mut worst32_at) = (0.0f64, 0.0f32);
        let samples = points(r.ranges, n, 0x5eed + i as u64);
        for x in r.edges.iter().copied().chain(samples) {
            let exact = (r.reference)(x);
            let err = ulp_error(unary_f64(r.op, x), exact, 53, -1022);
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
            let err32 = ulp_error(f64::from(unary_f32(r.op, x32)), exact32, 24, -126);
            if err32.is_nan() || err32 > worst32 {
                (worst32, worst32_at) = (err32, x32);
            }
        }
        println!(
            "{name}: {n} points, max {worst:.3} ulp (at {worst_at:e}); f32 max {worst32:.3} ulp (at {worst32_at:e})"
        );
        if worst.is_nan() || worst >= 1.0 {
            failures.push(format!("{name}: {worst} ulp at {worst_at:e}"));
        }
        if worst32.is_nan() || worst32 >= 1.0 {
            failures.push(format!("{name} (f32): {worst32} ulp at {worst32_at:e}"));
        }
    }
    failures
}

#[test]
fn routines_are_within_one_ulp() {
    let failures = check();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The default math ([`adjit_ir::math`], what the interpreter and the JIT's default compute:
/// per routine adjit's or the C library's, [`mathlib::default_unary`]) is within 1 ulp for
/// every routine, so choosing the faster of the two never costs accuracy; with
/// `--nocapture` the C library's own error is printed beside it (glibc's `tanh` is 2 ulp
/// away, which is why the default is adjit's there).
#[test]
fn the_default_math_is_within_one_ulp() {
    let n = n_points() / 8;
    let mut failures = Vec::new();
    for (i, r) in routines().iter().enumerate() {
        let name = r.op.name();
        let (mut default_worst, mut default_at) = (0.0f64, 0.0);
        let mut libm_worst = 0.0f64;
        for x in r
            .edges
            .iter()
            .copied()
            .chain(points(r.ranges, n, 0xd3f + i as u64))
        {
            let exact = (r.reference)(x);
            let err = ulp_error(adjit_ir::math::unary_f64(r.op, x), exact, 53, -1022);
            if err.is_nan() || err > default_worst {
                (default_worst, default_at) = (err, x);
            }
            let libm = ulp_error(adjit_ir::math::unary_f64_libm(r.op, x), exact, 53, -1022);
            if libm.is_nan() || libm > libm_worst {
                libm_worst = libm;
            }
        }
        let by = if mathlib::default_unary(r.op) {
            "adjit"
        } else {
            "libm"
        };
        println!(
            "{name}: default ({by}) max {default_worst:.3} ulp; C library {libm_worst:.3} ulp ({n} points)"
        );
        if default_worst.is_nan() || default_worst >= 1.0 {
            failures.push(format!(
                "{name}: the default ({by}) is {default_worst} ulp away at {default_at:e}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
