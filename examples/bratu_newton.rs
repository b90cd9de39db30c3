//! Newton's method on the 2-D Bratu problem −Δu = λ·eᵘ (λ = 6, zero boundary values) on an
//! n × n interior grid with the 5-point stencil: n² unknowns, a Jacobian with ≤ 5 nonzeros a
//! row. Every step solves J·Δu = −F(u) with the **sparse** Jacobian from
//! [`adjit::SparseJacobian`] (one compiled program writes all nonzeros: 5 colours, the seeds
//! baked in) and a sparse LU from the `faer` crate (re-exported as `adjit::faer`).
//!
//! For a small grid it runs the same Newton iteration with the dense inverse mode
//! ([`adjit::inverse::CompiledInverse`], `InverseMode::Dense`: J from a compiled Jacobian and a
//! dense LU at run time, O(n³) per step). The lumped inverse modes do not apply: every residual
//! reads its four neighbours, so no cut with n live values splits the grid into small lumps.
//!
//! Run: `cargo run --release --example bratu_newton [n]` (default n = 100: 10⁴ unknowns).

use std::time::Instant;

use adjit::faer::linalg::solvers::Solve;
use adjit::faer::Mat;
use adjit::inverse::CompiledInverse;
use adjit::{Compiled, InverseMode, Mode, SparseJacobian, Type};

/// The residual F(u) scaled by h²: 4u_ij − Σ neighbours − h²·λ·e^u_ij.
fn bratu(n: usize, lambda: f64) -> adjit::Function {
    let h2 = 1.0 / ((n + 1) * (n + 1)) as f64;
    adjit::trace_multi("bratu", &vec![Type::F64; n * n], |u| {
        let at = |i: usize, j: usize| u[i * n + j];
        let mut r = Vec::with_capacity(n * n);
        for i in 0..n {
            for j in 0..n {
                let mut lap = at(i, j) * 4.0;
                if i > 0 {
                    lap -= at(i - 1, j);
                }
                if i + 1 < n {
                    lap -= at(i + 1, j);
                }
                if j > 0 {
                    lap -= at(i, j - 1);
                }
                if j + 1 < n {
                    lap -= at(i, j + 1);
                }
                r.push(lap - at(i, j).exp() * (h2 * lambda));
            }
        }
        r
    })
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// Newton with the sparse Jacobian and faer's sparse LU; returns (iterations, seconds per step,
/// the seconds of its Jacobian evaluations alone, the solution).
fn sparse_newton(f: &adjit::Function, n2: usize) -> adjit::Result<(usize, f64, f64, Vec<f64>)> {
    let start = Instant::now();
    let jac = SparseJacobian::new(f)?;
    let residual = Compiled::new(f, Mode::Primal)?;
    println!(
        "  compile: {:.0} ms (pattern {}×{}, {} nonzeros, {} colours by {})",
        start.elapsed().as_secs_f64() * 1e3,
        jac.rows(),
        jac.cols(),
        jac.nnz(),
        jac.colors(),
        jac.coloring().kind.name()
    );
    let (mut u, mut r, mut values) = (vec![0.0; n2], vec![0.0; n2], vec![0.0; jac.nnz()]);
    let (mut steps, mut step_time, mut jac_time) = (0, 0.0, 0.0);
    loop {
        residual.call(&u, &mut r)?;
        println!("  step {steps}: ‖F(u)‖ = {:.3e}", norm(&r));
        if norm(&r) < 1e-12 || steps == 20 {
            break;
        }
        let t = Instant::now();
        jac.eval(&u, &mut values)?;
        jac_time += t.elapsed().as_secs_f64();
        // The nonzeros as faer's CSR matrix (`adjit::faer` is the crate, re-exported).
        let lu = jac
            .to_faer(&values)?
            .sp_lu()
            .map_err(|e| adjit::Error::Parse(format!("sparse LU failed: {e:?}")))?;
        let mut rhs = Mat::<f64>::from_fn(n2, 1, |i, _| -r[i]);
        lu.solve_in_place(&mut rhs);
        for (ui, k) in u.iter_mut().zip(0..n2) {
            *ui += rhs[(k, 0)];
        }
        step_time += t.elapsed().as_secs_f64();
        steps += 1;
    }
    let per_step = step_time / steps.max(1) as f64;
    Ok((steps, per_step, jac_time / steps.max(1) as f64, u))
}

/// Newton with Δu = J⁻¹·(−F) by the dense inverse mode.
fn dense_inverse_newton(f: &adjit::Function, n2: usize) -> adjit::Result<(usize, f64, Vec<f64>)> {
    let start = Instant::now();
    let inv = CompiledInverse::new(f, InverseMode::Dense)?;
    println!("  compile: {:.0} ms", start.elapsed().as_secs_f64() * 1e3);
    let (mut u, mut y, mut step) = (vec![0.0; n2], vec![0.0; n2], vec![0.0; n2]);
    let residual = Compiled::new(f, Mode::Primal)?;
    let (mut steps, mut step_time) = (0, 0.0);
    loop {
        residual.call(&u, &mut y)?;
        println!("  step {steps}: ‖F(u)‖ = {:.3e}", norm(&y));
        if norm(&y) < 1e-12 || steps == 20 {
            break;
        }
        let minus_r: Vec<f64> = y.iter().map(|v| -v).collect();
        let t = Instant::now();
        inv.call(&u, &minus_r, &mut y, &mut step)?;
        for (ui, d) in u.iter_mut().zip(&step) {
            *ui += d;
        }
        step_time += t.elapsed().as_secs_f64();
        steps += 1;
    }
    Ok((steps, step_time / steps.max(1) as f64, u))
}

fn main() -> adjit::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let lambda = 6.0;
    println!("Bratu {n}×{n} ({} unknowns), λ = {lambda}", n * n);
    let f = bratu(n, lambda);
    println!("sparse Jacobian + sparse LU (faer):");
    let (steps, per_step, per_jac, u) = sparse_newton(&f, n * n)?;
    let centre = u[(n / 2) * n + n / 2];
    println!(
        "  {steps} steps, {:.2} ms per step ({:.3} ms of it the Jacobian), u at the centre {centre:.6}",
        per_step * 1e3,
        per_jac * 1e3
    );
    let small = n.min(12);
    let g = bratu(small, lambda);
    println!("dense inverse mode (J⁻¹·v, n² = {}):", small * small);
    let (steps, per_step, _) = dense_inverse_newton(&g, small * small)?;
    println!("  {steps} steps, {:.2} ms per step", per_step * 1e3);
    if small != n {
        println!("sparse Jacobian + sparse LU at the same size, for comparison:");
        let (steps, per_step, _, _) = sparse_newton(&g, small * small)?;
        println!("  {steps} steps, {:.3} ms per step", per_step * 1e3);
    }
    Ok(())
}
