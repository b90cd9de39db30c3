//! Helpers shared by the derivative tests: Jacobians from the derived programs, central finite
//! differences with a step-aware tolerance, and a comparison that says where it failed.
#![allow(dead_code)]

use adjit_diff::{jvp, simplify, vjp};
use adjit_ir::{interpret, verify, Function, Type};

/// Indices of the parameters derivatives are taken with respect to (float, not `data`), and
/// float output slots of `f`.
pub fn float_params(f: &Function) -> Vec<usize> {
    f.differentiated_params().map(|p| p.index()).collect()
}

pub fn float_outputs(f: &Function) -> Vec<usize> {
    (0..f.rets.len())
        .filter(|&j| f.ret_types[j].is_float())
        .collect()
}

/// Verify a pass output, naming the pass on failure.
pub fn verified(f: Function, pass: &str) -> Function {
    if let Err(e) = verify(&f) {
        panic!("after pass {pass}: {e}\n{f}");
    }
    f
}

/// The Jacobian (rows: float outputs, columns: float params) by forward mode, one column per
/// unit tangent.
pub fn jacobian_forward(f: &Function, df: &Function, x: &[f64]) -> Vec<Vec<f64>> {
    let (ins, outs) = (float_params(f), float_outputs(f));
    let mut jac = vec![vec![0.0; ins.len()]; outs.len()];
    for (c, _) in ins.iter().enumerate() {
        let mut input = x.to_vec();
        input.extend((0..ins.len()).map(|k| if k == c { 1.0 } else { 0.0 }));
        let out = interpret(df, &input).expect("jvp program runs");
        for (r, row) in jac.iter_mut().enumerate() {
            row[c] = out[f.rets.len() + r];
        }
    }
    jac
}

/// The Jacobian by reverse mode, one row per unit cotangent.
pub fn jacobian_reverse(f: &Function, gf: &Function, x: &[f64]) -> Vec<Vec<f64>> {
    let (ins, outs) = (float_params(f), float_outputs(f));
    let mut jac = vec![vec![0.0; ins.len()]; outs.len()];
    for (r, row) in jac.iter_mut().enumerate() {
        let mut input = x.to_vec();
        input.extend((0..outs.len()).map(|k| if k == r { 1.0 } else { 0.0 }));
        let out = interpret(gf, &input).expect("vjp program runs");
        row.copy_from_slice(&out[f.rets.len()..f.rets.len() + ins.len()]);
    }
    jac
}

/// Central difference (f(x + h e_i) − f(x − h e_i)) / 2h for every float output.
fn central(f: &Function, x: &[f64], i: usize, h: f64) -> Vec<f64> {
    let outs = float_outputs(f);
    let mut xp = x.to_vec();
    let mut xm = x.to_vec();
    xp[i] += h;
    xm[i] -= h;
    let (fp, fm) = (interpret(f, &xp).unwrap(), interpret(f, &xm).unwrap());
    outs.iter().map(|&j| (fp[j] - fm[j]) / (2.0 * h)).collect()
}

/// Machine epsilon and base step of a float type: h = base·max(1, |x|), a power of two so
/// that x ± h is exact where possible.
fn step(ty: Type) -> (f64, f64) {
    match ty {
        Type::F32 => (f32::EPSILON as f64, 2f64.powi(-8)),
        _ => (f64::EPSILON, 2f64.powi(-20)),
    }
}

/// Check a Jacobian against central finite differences, column by column.
///
/// Tolerance, with D(h) the central difference at step h, ε the type's epsilon and
/// |f| the output magnitude:
///   tol = 4·|D(h) − D(2h)|  +  30·ε·(|f| + 1)/h  +  rel·|D(h)|
/// The first term bounds the truncation error h²·|f'''|/6 (D(2h) − D(h) ≈ 3·that, Richardson);
/// the second the rounding error of the two evaluations divided by 2h; `rel` is the accuracy of
/// the derivative program itself (1e-12 for f64, 1e-5 for f32).
pub fn check_against_fd(f: &Function, x: &[f64], jac: &[Vec<f64>], what: &str) {
    let ins = float_params(f);
    let y = interpret(f, x).unwrap();
    let outs = float_outputs(f);
    for (c, &i) in ins.iter().enumerate() {
        let (eps, base) = step(f.values[i].ty);
        let rel: f64 = if f.values[i].ty == Type::F32 {
            1e-5
        } else {
            1e-12
        };
        let h = base * x[i].abs().max(1.0);
        let d1 = central(f, x, i, h);
        let d2 = central(f, x, i, 2.0 * h);
        for (r, &j) in outs.iter().enumerate() {
            let (eps, rel) = if f.ret_types[j] == Type::F32 {
                (eps.max(f32::EPSILON as f64), rel.max(1e-5))
            } else {
                (eps, rel)
            };
            let tol = 4.0 * (d1[r] - d2[r]).abs()
                + 30.0 * eps * (y[j].abs() + 1.0) / h
                + rel * d1[r].abs();
            let got = jac[r][c];
            assert!(
                (got - d1[r]).abs() <= tol,
                "{what}: ∂y{j}/∂x{i} at {x:?}: derivative {got}, finite difference {} (2h: {}), tol {tol}\n{f}",
                d1[r],
                d2[r]
            );
        }
    }
}

/// Check forward and reverse mode (raw and simplified) of `f` at `x` against finite
/// differences, and the simplified programs against the raw ones bitwise.
pub fn check_derivatives(f: &Function, x: &[f64]) {
    let df = verified(jvp(f), "jvp");
    let gf = verified(vjp(f), "vjp");
    let dfs = verified(simplify(&df), "simplify(jvp)");
    let gfs = verified(simplify(&gf), "simplify(vjp)");
    let jf = jacobian_forward(f, &df, x);
    let jr = jacobian_reverse(f, &gf, x);
    check_against_fd(f, x, &jf, "jvp");
    check_against_fd(f, x, &jr, "vjp");
    let bits = |j: &[Vec<f64>]| -> Vec<u64> { j.iter().flatten().map(|v| v.to_bits()).collect() };
    assert_eq!(
        bits(&jf),
        bits(&jacobian_forward(f, &dfs, x)),
        "simplify changed jvp\n{df}\n{dfs}"
    );
    assert_eq!(
        bits(&jr),
        bits(&jacobian_reverse(f, &gfs, x)),
        "simplify changed vjp\n{gf}\n{gfs}"
    );
}
