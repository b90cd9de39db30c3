//! Newton's method on a square nonlinear system `F(x) = 0`, n = 32, with every step
//! `Δx = J⁻¹·F(x)` computed by reverse-inverse mode ([`adjit::inverse::CompiledInverse`]):
//! the Jacobian is never formed. The dense fallback (`InverseMode::Dense`: the Jacobian from
//! vector JVPs and an n × n LU with partial pivoting at run time) runs the same iteration next
//! to it.
//!
//! The system is a backward chain: equation i reads its own unknown and the *residual* of
//! equation i + 1,
//!
//! ```text
//! F_{n−1}(x) = x_{n−1}³ + 2·x_{n−1} − b_{n−1}
//! F_i(x)     = x_i³ + 2·x_i + x_i·tanh(F_{i+1}) + 0.5·sin(F_{i+1}) − b_i
//! ```
//!
//! with `b_i = x*_i³ + 2·x*_i` for a chosen root `x*` (every `F_{i+1}` vanishes there), so the
//! answer is known. `F_i` depends on every `x_j` with `j ≥ i`: `J` is a full upper triangle,
//! with diagonal `3x_i² + 2 + tanh(F_{i+1}) ≥ 1`, never singular.
//!
//! The chain shape is what makes reverse-inverse cheap: the inverse modes split a program into
//! *lumps* between cuts where exactly n active values are live, and solve each lump with a small
//! LU (at most `max_lump` = 16 unknowns). Computing `F_i` ends the life of `x_i`, so every lump
//! has one unknown and `J⁻¹·v` costs about one sweep. The dense fallback pushes n forward
//! directions through the chain (O(n²) here) and factors an n × n matrix. A system whose every
//! equation reads every unknown directly would be a single lump of size 32, rejected with a
//! message suggesting `InverseMode::Dense`.
//!
//! Run: `cargo run --release --example newton`

use std::time::Instant;

use adjit::diff::inverse::analyze;
use adjit::inverse::CompiledInverse;
use adjit::{Compiled, InverseMode, Mode, Type};

const N: usize = 32;

/// The chain system `F(x)` as IR (`b` becomes literals), computed from the last equation back.
fn chain_system(b: &[f64]) -> adjit::Function {
    adjit::trace_multi("chain", &[Type::F64; N], |x| {
        let mut f = vec![x[N - 1].powi(3) + x[N - 1] * 2.0 - b[N - 1]];
        for i in (0..N - 1).rev() {
            let next = f[f.len() - 1];
            let fi = x[i].powi(3) + x[i] * 2.0 + x[i] * next.tanh() + next.sin() * 0.5 - b[i];
            f.push(fi);
        }
        f.reverse();
        f
    })
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|a| a * a).sum::<f64>().sqrt()
}

/// Run Newton from `x0` with steps from `inverse`; prints one line per iteration and returns
/// the solution and the mean wall time of a step (residual evaluation + inverse product).
fn newton(
    label: &str,
    residual: &Compiled,
    inverse: &CompiledInverse,
    x0: &[f64],
) -> Result<(Vec<f64>, f64), adjit::Error> {
    let mut x = x0.to_vec();
    let (mut r, mut y, mut step) = (vec![0.0; N], vec![0.0; N], vec![0.0; N]);
    let mut total = 0.0;
    let mut steps = 0;
    println!("{label}:");
    for iteration in 0..20 {
        let start = Instant::now();
        residual.call(&x, &mut r)?;
        let r_norm = norm(&r);
        if r_norm < 1e-13 {
            println!("  iter {iteration:2}  |F(x)| = {r_norm:.3e}  converged");
            break;
        }
        inverse.call(&x, &r, &mut y, &mut step)?; // step = J(x)⁻¹ · F(x)
        for (xi, si) in x.iter_mut().zip(&step) {
            *xi -= si;
        }
        let elapsed = start.elapsed().as_secs_f64();
        total += elapsed;
        steps += 1;
        println!(
            "  iter {iteration:2}  |F(x)| = {r_norm:.3e}  |Δx| = {:.3e}  step {:7.1} µs",
            norm(&step),
            elapsed * 1e6
        );
    }
    Ok((x, total / steps.max(1) as f64))
}

fn main() -> Result<(), adjit::Error> {
    // The root we want Newton to find, and the right-hand side that makes it a root.
    let root: Vec<f64> = (0..N).map(|i| 0.8 * (1.3 * i as f64 + 0.4).sin()).collect();
    let b: Vec<f64> = root.iter().map(|r| r.powi(3) + 2.0 * r).collect();
    let system = chain_system(&b);
    adjit::ir::verify(&system)?;

    let analysis = analyze(&system).map_err(adjit::Error::Inverse)?;
    let largest = analysis.lumps.iter().map(|l| l.size()).max().unwrap_or(0);
    println!(
        "system: n = {N}, {} instructions, {} lumps, largest lump l = {largest}",
        system.n_insts(),
        analysis.lumps.len()
    );

    let start = Instant::now();
    let residual = Compiled::new(&system, Mode::Primal)?;
    let reverse = CompiledInverse::new(&system, InverseMode::Reverse)?;
    let reverse_ms = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    let dense = CompiledInverse::new(&system, InverseMode::Dense)?;
    let dense_ms = start.elapsed().as_secs_f64() * 1e3;
    println!(
        "compiled: reverse-inverse {} instructions in {reverse_ms:.0} ms, \
         dense (Jacobian + LU at run time) in {dense_ms:.0} ms\n",
        reverse.program().n_insts(),
    );

    let x0 = vec![0.0; N];
    let (x_rev, t_rev) = newton("reverse-inverse (J⁻¹·F, no J)", &residual, &reverse, &x0)?;
    let (x_dense, t_dense) = newton("dense (Jacobian + LU)", &residual, &dense, &x0)?;

    let err = |x: &[f64]| {
        x.iter()
            .zip(&root)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max)
    };
    println!(
        "\nmax |x − x*|: reverse-inverse {:.1e}, dense {:.1e}",
        err(&x_rev),
        err(&x_dense)
    );

    // Steady-state cost of one inverse product alone, median of many calls.
    let (mut y, mut out) = (vec![0.0; N], vec![0.0; N]);
    let t_rev_call = adjit::time_per_call(|| reverse.call(&x_rev, &b, &mut y, &mut out))? / 1e3;
    let t_dense_call = adjit::time_per_call(|| dense.call(&x_rev, &b, &mut y, &mut out))? / 1e3;
    println!(
        "mean Newton step: reverse-inverse {:.1} µs, dense {:.1} µs",
        t_rev * 1e6,
        t_dense * 1e6
    );
    println!(
        "one inverse product (median): reverse-inverse {t_rev_call:.2} µs, dense {t_dense_call:.2} µs ({:.1}×)",
        t_dense_call / t_rev_call
    );
    Ok(())
}
