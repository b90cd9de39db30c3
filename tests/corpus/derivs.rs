//! The derivative check of the corpus harness: at every `; run:` point of a function, forward
//! mode (JVP) must match central finite differences along a few random directions, and forward
//! and reverse mode must satisfy the adjoint identity ⟨w, J·v⟩ = ⟨Jᵀ·w, v⟩.
//!
//! Functions without a differentiated float parameter (one not marked `data`) or a float output
//! are skipped (nothing to check), and
//! so are points where a derivative or output is not finite. A direction along which the
//! function looks non-smooth (forward and backward one-sided differences disagree by far more
//! than curvature explains) is skipped for the finite-difference check only: the point is at
//! a kink, where the derivative is a convention (see `adjit_diff::rules`).
//!
//! Square programs (n float inputs, n float outputs) also run the three inverse modes: a
//! result must be finite and solve the system with jvp's J (`J·r = v`, or `Jᵀ·r = w` for
//! forward-inverse) to a backward error of `rel`; otherwise the call must be an error that
//! says the matrix is singular or the product not finite — never a silent inf/NaN.

use adjit::ir::random::Rng;
use adjit::ir::{interpret, Type};
use adjit::{Engine, Function, InverseMode};

/// Number of random directions per point.
const DIRECTIONS: usize = 3;

/// Check `func`'s derived programs at `x` (one value per parameter). `Err` says what differs.
pub fn check(func: &Function, x: &[f64]) -> Result<(), String> {
    // The parameters derived programs have seeds for: floats that are not `data`.
    let float_params: Vec<usize> = func.differentiated_params().map(|p| p.index()).collect();
    let float_outputs: Vec<usize> = (0..func.rets.len())
        .filter(|&j| func.ret_types[j].is_float())
        .collect();
    if float_params.is_empty() || float_outputs.is_empty() {
        return Ok(());
    }
    let any_f32 = func.values.iter().any(|d| d.ty == Type::F32);
    let (eps, base_step, rel) = if any_f32 {
        (f64::from(f32::EPSILON), 2f64.powi(-8), 1e-4)
    } else {
        (f64::EPSILON, 2f64.powi(-20), 1e-10)
    };
    let df = adjit::diff::jvp(func);
    let gf = adjit::diff::vjp(func);
    let run =
        |f: &Function, input: &[f64]| interpret(f, input).map_err(|e| format!("@{}: {e}", f.name));
    let y = run(func, x)?;
    let seed = x
        .iter()
        .fold(0x5eed_u64, |h, v| h.rotate_left(7) ^ v.to_bits());
    let mut rng = Rng::new(seed);
    for dir in 0..DIRECTIONS {
        let v = rng.vector(float_params.len(), -1.0, 1.0);
        let w = rng.vector(float_outputs.len(), -1.0, 1.0);
        let jv = run(&df, &[x, &v[..]].concat())?[func.n_outputs()..].to_vec();
        let jtw = run(&gf, &[x, &w[..]].concat())?[func.n_outputs()..].to_vec();
        if jv.iter().chain(&jtw).chain(&y).any(|t| !t.is_finite()) {
            return Ok(());
        }
        // Adjoint identity.
        let lhs: f64 = w.iter().zip(&jv).map(|(a, b)| a * b).sum();
        let rhs: f64 = jtw.iter().zip(&v).map(|(a, b)| a * b).sum();
        let scale: f64 = w
            .iter()
            .zip(&jv)
            .chain(jtw.iter().zip(&v))
            .map(|(a, b)| (a * b).abs())
            .sum();
        if (lhs - rhs).abs() > rel * scale {
            return Err(format!(
                "@{} at {x:?}: adjoint identity fails: <w, Jv> = {lhs}, <J^T w, v> = {rhs} (w = {w:?}, v = {v:?})",
                func.name
            ));
        }
        // JVP against central differences along v, with step h = base·max(1, |x|∞).
        let h = base_step * x.iter().fold(1.0f64, |m, t| m.max(t.abs()));
        let at = |t: f64| -> Result<Vec<f64>, String> {
            let mut xt = x.to_vec();
            for (k, &i) in float_params.iter().enumerate() {
                xt[i] += t * v[k];
            }
            let out = run(func, &xt)?;
            Ok(float_outputs.iter().map(|&j| out[j]).collect())
        };
        let (p1, m1, p2, m2) = (at(h)?, at(-h)?, at(2.0 * h)?, at(-2.0 * h)?);
        for (r, &j) in float_outputs.iter().enumerate() {
            let d1 = (p1[r] - m1[r]) / (2.0 * h);
            let d2 = (p2[r] - m2[r]) / (4.0 * h);
            let (ahead, behind) = ((p1[r] - y[j]) / h, (y[j] - m1[r]) / h);
            let noise = 30.0 * eps * (y[j].abs() + 1.0) / h;
            if !d1.is_finite()
                || (ahead - behind).abs() > 1e-2 * (ahead.abs() + behind.abs()) + noise
            {
                continue; // a kink (or a singularity) along this direction
            }
            // Truncation (Richardson estimate) + rounding + the derived program's own error.
            let tol = 4.0 * (d1 - d2).abs() + noise + rel * d1.abs();
            if (jv[r] - d1).abs() > tol {
                return Err(format!(
                    "@{} at {x:?}, direction {dir} {v:?}: output {j}: JVP {} but finite difference {d1} (tol {tol})",
                    func.name, jv[r]
                ));
            }
        }
    }
    check_inverse(func, x, rel)
}

/// The inverse identities at `x` for a square all-float program (see the module docs).
fn check_inverse(func: &Function, x: &[f64], rel: f64) -> Result<(), String> {
    let n = func.n_params;
    let square = !func.has_data_params()
        && func.param_types().iter().all(|t| t.is_float())
        && func.ret_types.iter().all(|t| t.is_float())
        && func.ret_types.len() == n;
    if !square {
        return Ok(());
    }
    let jacobian: Vec<Vec<f64>> = (0..n)
        .map(|col| {
            let mut e = vec![0.0; n];
            e[col] = 1.0;
            adjit::jvp(func, Engine::Interp, x, &e).map(|(_, jv)| jv)
        })
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    // jacobian[col][row] = ∂y_row/∂x_col
    let v: Vec<f64> = (0..n).map(|i| 1.0 - 0.25 * i as f64).collect();
    for mode in [
        InverseMode::Reverse,
        InverseMode::Forward,
        InverseMode::Dense,
    ] {
        let r = match adjit::inverse(func, Engine::Interp, mode, x, &v) {
            Ok((_, r)) => r,
            Err(e) => {
                let text = e.to_string();
                if text.contains("singular") || text.contains("not finite") {
                    continue;
                }
                return Err(format!("@{} {mode:?} at {x:?}: {text}", func.name));
            }
        };
        for row in 0..n {
            let (mut sum, mut mag) = (0.0f64, v[row].abs());
            for (col, rc) in r.iter().enumerate() {
                let j = if mode == InverseMode::Forward {
                    jacobian[row][col]
                } else {
                    jacobian[col][row]
                };
                sum += j * rc;
                mag += (j * rc).abs();
            }
            if !sum.is_finite() || (sum - v[row]).abs() > rel * mag {
                return Err(format!(
                    "@{} {mode:?} at {x:?}: inverse product {r:?} gives row {row} = {sum}, expected {}",
                    func.name, v[row]
                ));
            }
        }
    }
    Ok(())
}
