//! One rulebook: the J that the inverse modes invert is the J that jvp differentiates, opcode
//! by opcode at the special points (±0, kinks, ties, ±1 for asin/acos, pow at a = 0, `powi` at
//! i32::MIN/MAX, NaN, ±inf, subnormals), and where J is singular or not finite the inverse is an
//! error, never a non-finite result.
//!
//! For every opcode a square program is built: `(u(x))` for a unary op, `(op(a, b), b)` and
//! `(a, op(a, b))` for a binary one (so each partial is the pivot once), `(fma(a, b, c), b, c)`
//! and its rotations, `select` and the conversions. J comes from `jvp` on the interpreter (unit
//! tangents). Then, for the reverse, forward and dense inverse modes, on the interpreter and the
//! JIT:
//! - `Ok(r)` must be finite and solve the system with jvp's J: `J·r = v` (reverse, dense) or
//!   `Jᵀ·r = v` (forward), to a backward error of 1e-12 (f32 rounding where the program has
//!   f32 inputs or outputs);
//! - when J has a non-finite entry or is exactly singular, the call must be an `Err`;
//! - an `Err` on a finite, nonsingular J is allowed only where it is ill-conditioned (a pivot
//!   under 1e-12 of the largest entry) or the exact product overflows.

use adjit::inverse::CompiledInverse;
use adjit::ir::{BinaryOp, Builder, CmpPred, Function, Type, UnaryOp, Value};
use adjit::{Engine, InverseMode};

const MODES: [InverseMode; 3] = [
    InverseMode::Reverse,
    InverseMode::Forward,
    InverseMode::Dense,
];

const SPECIAL: [f64; 14] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -0.5,
    2.0,
    3.0,
    1e-310,
    1e300,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    -2.5,
];

/// The Jacobian of `func` at `x` from jvp on the interpreter, `J[i][j] = ∂yᵢ/∂xⱼ`.
fn jacobian(func: &Function, x: &[f64]) -> Vec<Vec<f64>> {
    let n = x.len();
    let mut j = vec![vec![0.0; n]; n];
    for col in 0..n {
        let mut v = vec![0.0; n];
        v[col] = 1.0;
        let (_, jv) = adjit::jvp(func, Engine::Interp, x, &v).expect("jvp runs");
        for (row, t) in jv.iter().enumerate() {
            j[row][col] = *t;
        }
    }
    j
}

/// |det J| = 0 for the small matrices built here (triangular after a permutation, or 1×1/2×2).
fn det(j: &[Vec<f64>]) -> f64 {
    match j.len() {
        1 => j[0][0],
        2 => j[0][0] * j[1][1] - j[0][1] * j[1][0],
        3 => {
            j[0][0] * (j[1][1] * j[2][2] - j[1][2] * j[2][1])
                - j[0][1] * (j[1][0] * j[2][2] - j[1][2] * j[2][0])
                + j[0][2] * (j[1][0] * j[2][1] - j[1][1] * j[2][0])
        }
        _ => unreachable!("programs here have at most 3 inputs"),
    }
}

/// Whether an error is justified for a finite, nonsingular J: some entry of J⁻¹ would be
/// far larger than the entries of J allow (conditioning beyond the pivot tolerance), or the
/// product itself overflows.
fn ill_conditioned(j: &[Vec<f64>], v: &[f64], transposed: bool) -> bool {
    let n = j.len();
    let scale = j.iter().flatten().fold(0.0f64, |m, e| m.max(e.abs()));
    let d = det(j).abs();
    if d <= 1e-12 * scale.powi(n as i32) {
        return true;
    }
    // Cramer's rule in f64: an overflowing or non-finite exact product.
    let solve = |k: usize| {
        let mut m: Vec<Vec<f64>> = j.to_vec();
        if transposed {
            m = (0..n).map(|r| (0..n).map(|c| j[c][r]).collect()).collect();
        }
        for (r, row) in m.iter_mut().enumerate() {
            row[k] = v[r];
        }
        det(&m) / det(j)
    };
    (0..n).any(|k| !solve(k).is_finite())
}

/// Check every inverse mode of `func` at `x` on both engines against jvp's J.
fn check(func: &Function, x: &[f64], inverses: &[(InverseMode, Engine, CompiledInverse)]) -> usize {
    let n = x.len();
    let j = jacobian(func, x);
    let finite_j = j.iter().flatten().all(|e| e.is_finite());
    let singular = finite_j && det(&j) == 0.0;
    let v: Vec<f64> = (0..n).map(|i| 1.0 - 0.375 * i as f64).collect();
    // Products are returned in the program's types: an f32 result carries f32 rounding.
    let has_f32 = func.param_types().contains(&Type::F32) || func.ret_types.contains(&Type::F32);
    let tol = if has_f32 {
        4.0 * f64::from(f32::EPSILON)
    } else {
        1e-12
    };
    let mut checked = 0;
    for (mode, engine, inv) in inverses {
        let transposed = *mode == InverseMode::Forward;
        let (mut y, mut r) = (vec![0.0; n], vec![0.0; n]);
        let result = inv.call(x, &v, &mut y, &mut r);
        let place = format!(
            "@{} {mode:?} {engine:?} at {x:?}: J = {j:?}, result {result:?} {r:?}",
            func.name
        );
        match result {
            Ok(()) => {
                assert!(
                    finite_j && !singular,
                    "no error for a singular or non-finite J: {place}"
                );
                assert!(
                    r.iter().all(|e| e.is_finite()),
                    "non-finite result: {place}"
                );
                for row in 0..n {
                    let (mut sum, mut mag) = (0.0f64, v[row].abs());
                    for (col, rc) in r.iter().enumerate() {
                        let e = if transposed { j[col][row] } else { j[row][col] };
                        sum += e * rc;
                        mag += (e * rc).abs();
                    }
                    assert!(
                        (sum - v[row]).abs() <= tol * mag + 1e-300,
                        "row {row}: J·r = {sum}, v = {}: {place}",
                        v[row]
                    );
                }
                checked += 1;
            }
            Err(e) => {
                let text = e.to_string();
                assert!(
                    !finite_j || singular || ill_conditioned(&j, &v, transposed),
                    "error on a well-conditioned J: {text}: {place}"
                );
                assert!(
                    text.contains("singular") || text.contains("not finite"),
                    "unexpected error: {text}: {place}"
                );
            }
        }
    }
    checked
}

/// The compiled inverse of `func` in every mode on both engines.
fn compile_all(func: &Function) -> Vec<(InverseMode, Engine, CompiledInverse)> {
    let mut out = Vec::new();
    for mode in MODES {
        for engine in [Engine::Interp, Engine::Jit] {
            let inv = CompiledInverse::with_options(func, mode, &adjit::Options::on(engine))
                .unwrap_or_else(|e| panic!("@{} {mode:?}: {e}", func.name));
            out.push((mode, engine, inv));
        }
    }
    out
}

fn unary(op: UnaryOp, ty: Type) -> Function {
    let mut b = Builder::new(format!("{}_{ty}", op.name()));
    let x = b.param(ty, "x");
    let y = b.unary(op, x);
    b.finish(&[y])
}

/// `(op(a, b), b)` when `first`, else `(a, op(a, b))`.
fn binary(name: &str, first: bool, emit: impl Fn(&mut Builder, Value, Value) -> Value) -> Function {
    let mut b = Builder::new(format!("{name}_{}", if first { "a" } else { "b" }));
    let a = b.param(Type::F64, "a");
    let c = b.param(Type::F64, "b");
    let y = emit(&mut b, a, c);
    if first {
        b.finish(&[y, c])
    } else {
        b.finish(&[a, y])
    }
}

#[test]
fn unary_ops_agree_with_jvp_at_special_points() {
    let mut checked = 0;
    for &op in UnaryOp::ALL {
        for ty in [Type::F64, Type::F32] {
            let f = unary(op, ty);
            if matches!(op, UnaryOp::Floor | UnaryOp::Ceil) {
                // J = 0 everywhere: structurally singular, an error before anything runs.
                for x in SPECIAL {
                    assert_eq!(jacobian(&f, &[ty.round(x)]), [[0.0]]);
                }
                for mode in MODES {
                    let e = CompiledInverse::with_options(
                        &f,
                        mode,
                        &adjit::Options::on(Engine::Interp),
                    );
                    assert!(
                        e.is_err_and(|e| e.to_string().contains("singular")),
                        "{op} {mode:?}"
                    );
                }
                continue;
            }
            let inverses = compile_all(&f);
            for x in SPECIAL {
                checked += check(&f, &[ty.round(x)], &inverses);
            }
        }
    }
    assert!(
        checked > 500,
        "only {checked} successful products were checked"
    );
}

#[test]
fn binary_ops_agree_with_jvp_at_special_points() {
    let mut checked = 0;
    for &op in BinaryOp::ALL {
        for first in [true, false] {
            let f = binary(op.name(), first, |b, x, y| b.binary(op, x, y));
            let inverses = compile_all(&f);
            for a in SPECIAL {
                for c in SPECIAL {
                    checked += check(&f, &[a, c], &inverses);
                }
            }
        }
    }
    assert!(
        checked > 5000,
        "only {checked} successful products were checked"
    );
}

#[test]
fn pow_at_zero_base_is_the_identity_not_nan() {
    // The reproducer: (pow(a, b) + a, b) at (0, 2) has J = I (∂pow/∂b = 0 at a = 0).
    let f = binary("pow_plus_a", true, |b, x, y| {
        let p = b.binary(BinaryOp::Pow, x, y);
        b.add(p, x)
    });
    let inverses = compile_all(&f);
    for b in [-1.0, 0.0, 2.0, 0.5] {
        check(&f, &[0.0, b], &inverses);
    }
    for (mode, engine, inv) in &inverses {
        let (mut y, mut r) = (vec![0.0; 2], vec![0.0; 2]);
        inv.call(&[0.0, 2.0], &[1.0, 1.0], &mut y, &mut r)
            .unwrap_or_else(|e| panic!("{mode:?} {engine:?}: {e}"));
        assert_eq!(r, [1.0, 1.0], "{mode:?} {engine:?}");
    }
}

#[test]
fn powi_fma_select_and_conversions_agree_with_jvp() {
    let mut checked = 0;
    for k in [i32::MIN, i32::MIN + 1, -3, -2, -1, 0, 1, 2, 3, i32::MAX] {
        let f = {
            let mut b = Builder::new(format!("powi_{k}"));
            let x = b.param(Type::F64, "x");
            let y = b.powi(x, k);
            b.finish(&[y])
        };
        if k == 0 {
            // powi x, 0 = 1: like floor, its operand carries no derivative, so J = 0 is
            // structurally singular, an error before anything runs.
            for mode in MODES {
                let e =
                    CompiledInverse::with_options(&f, mode, &adjit::Options::on(Engine::Interp));
                assert!(
                    e.is_err_and(|e| e.to_string().contains("singular")),
                    "{mode:?}"
                );
            }
            continue;
        }
        let inverses = compile_all(&f);
        for x in SPECIAL.iter().chain(&[1.0000001, -0.9999999]) {
            checked += check(&f, &[*x], &inverses);
        }
    }
    // fma(a, b, c) with each operand as the pivot: (fma, b, c), (a, fma, c), (a, b, fma).
    for slot in 0..3 {
        let f = {
            let mut b = Builder::new(format!("fma_{slot}"));
            let p: Vec<Value> = ["a", "b", "c"]
                .iter()
                .map(|n| b.param(Type::F64, n))
                .collect();
            let y = b.fma(p[0], p[1], p[2]);
            let mut rets = p.clone();
            rets[slot] = y;
            b.finish(&rets)
        };
        let inverses = compile_all(&f);
        for a in SPECIAL {
            for c in [0.0, -0.0, 1.0, f64::INFINITY, f64::NAN, -2.5] {
                checked += check(&f, &[a, c, 0.5], &inverses);
                checked += check(&f, &[c, a, -1.0], &inverses);
            }
        }
    }
    // select on a comparison of the operands (ties, NaN), with each operand as the pivot.
    for pred in [CmpPred::Lt, CmpPred::Ge, CmpPred::Eq] {
        for first in [true, false] {
            let f = binary(&format!("select_{pred}"), first, |b, x, y| {
                let c = b.fcmp(pred, x, y);
                let s = b.select(c, x, y);
                b.mul(s, 1.5)
            });
            let inverses = compile_all(&f);
            for a in SPECIAL {
                for c in SPECIAL {
                    checked += check(&f, &[a, c], &inverses);
                }
            }
        }
    }
    // fpromote / fdemote: the tangent converts.
    for (name, ty) in [("promote", Type::F32), ("demote", Type::F64)] {
        let f = {
            let mut b = Builder::new(name);
            let x = b.param(ty, "x");
            let y = if ty == Type::F32 {
                b.fpromote(x)
            } else {
                b.fdemote(x)
            };
            let z = b.mul(y, 3.0);
            b.finish(&[z])
        };
        let inverses = compile_all(&f);
        for x in SPECIAL {
            checked += check(&f, &[ty.round(x)], &inverses);
        }
    }
    assert!(
        checked > 1000,
        "only {checked} successful products were checked"
    );
}
