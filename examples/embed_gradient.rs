//! The "fast repeated gradients" story: trace a Rust closure once, compile its gradient once,
//! then call the native code thousands of times in a gradient-descent loop.
//!
//! The model fits `y(t) = a·exp(−b·t) + c` to 64 noisy samples by least squares.
//!
//! Run: `cargo run --release --example embed_gradient`

use std::time::Instant;

fn main() -> Result<(), adjit::Error> {
    // Synthetic data from a = 2.5, b = 1.3, c = 0.4 with deterministic "noise".
    let (a0, b0, c0) = (2.5, 1.3, 0.4);
    let data: Vec<(f64, f64)> = (0..64)
        .map(|i| {
            let t = i as f64 * 0.05;
            let noise = 0.01 * ((i * 7919) % 13) as f64 / 13.0 - 0.005;
            (t, a0 * (-b0 * t).exp() + c0 + noise)
        })
        .collect();

    // 1. Trace the loss: ordinary Rust over traced scalars; the data become literals.
    let loss = adjit::trace(3, |p| {
        let (a, b, c) = (p[0], p[1], p[2]);
        let mut sum = None;
        for &(t, y) in &data {
            let r = a * (b * -t).exp() + c - y;
            let sq = r * r;
            sum = Some(match sum {
                None => sq,
                Some(s) => s + sq,
            });
        }
        sum.expect("at least one sample") * (1.0 / data.len() as f64)
    });
    println!(
        "traced loss: {} instructions over 3 parameters",
        loss.n_insts()
    );

    // 2. Compile the value-and-gradient program once.
    let start = Instant::now();
    let grad = adjit::Gradient::new(&loss)?;
    let primal = adjit::Compiled::new(&loss, adjit::Mode::Primal)?;
    println!(
        "compiled gradient ({} instructions after simplification) and primal in {:.1} ms",
        grad.compiled().ir().n_insts(),
        start.elapsed().as_secs_f64() * 1e3
    );

    // 3. Gradient descent, calling native code every step.
    let mut p = [1.0, 0.5, 0.0];
    let mut g = [0.0; 3];
    let steps = 5_000;
    let lr = 0.3;
    let start = Instant::now();
    for step in 0..=steps {
        let value = grad.call(&p, &mut g)?;
        if step % 500 == 0 {
            println!(
                "step {step:>6}: loss = {value:.3e}  a = {:.4}  b = {:.4}  c = {:.4}",
                p[0], p[1], p[2]
            );
        }
        for (pi, gi) in p.iter_mut().zip(&g) {
            *pi -= lr * gi;
        }
    }
    let per_grad = start.elapsed().as_nanos() as f64 / (steps + 1) as f64;

    // 4. How expensive is a gradient compared with the loss itself?
    let mut out = [0.0];
    let per_primal = adjit::time_per_call(|| primal.call(&p, &mut out))?;
    let per_grad_bench = adjit::time_per_call(|| grad.call(&p, &mut g).map(|_| ()))?;
    println!(
        "time per gradient call: {per_grad:.0} ns in the loop, {per_grad_bench:.0} ns benchmarked; \
         loss alone {per_primal:.0} ns (gradient / primal = {:.2})",
        per_grad_bench / per_primal
    );
    println!("true parameters: a = {a0}, b = {b0}, c = {c0}");
    Ok(())
}
