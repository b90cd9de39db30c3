//! A least-squares fit with a mapped loss: a small tanh network `m(θ, t)` fitted to rows
//! `(t, y)`, the loss Σᵢ (m(θ, tᵢ) − yᵢ)² as a [`adjit::map::MappedKernel`]. The kernel is
//! traced once with θ as differentiated inputs and one row as `data` inputs, compiled once, and
//! called on new data (other rows, another row count) without recompiling.
//!
//! It prints the compile time (the same for 10 rows or 10⁵: nothing depends on n), the gradient
//! time per row over 10⁵ rows on 1 and 2 threads against one kernel VJP call, checks that the
//! two thread counts give the same bits, and runs a few hundred steps of gradient descent.
//!
//! Run: `cargo run --release --example fit_rows`

use std::time::{Duration, Instant};

use adjit::map::{MapOptions, MappedKernel};
use adjit::Options;

const HIDDEN: usize = 8;
/// θ: per hidden unit a weight and a bias, then an output weight per unit and an output bias.
const N_THETA: usize = 3 * HIDDEN + 1;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One row is (t, y); the loss of one row is (m(θ, t) − y)².
    let kernel = adjit::ir::trace::trace_with_data(N_THETA, 2, |p, row| {
        let (t, y) = (row[0], row[1]);
        let mut out = p[3 * HIDDEN] * 1.0;
        for j in 0..HIDDEN {
            let h = (p[2 * j] * t + p[2 * j + 1]).tanh();
            out += p[2 * HIDDEN + j] * h;
        }
        (out - y).square()
    });
    println!(
        "kernel: {} instructions, θ has {N_THETA} entries",
        kernel.n_insts()
    );

    let theta0: Vec<f64> = (0..N_THETA)
        .map(|i| 0.3 * ((i as f64) * 1.7).sin())
        .collect();
    for n_rows in [10, 100_000] {
        let start = Instant::now();
        let loss = MappedKernel::new(&kernel)?;
        loss.prepare(&[adjit::Mode::Gradient])?;
        let compile = start.elapsed();
        let data = rows(n_rows, 0.0);
        let mut grad = vec![0.0; N_THETA];
        let value = loss.gradient(&theta0, &data, &mut grad)?;
        println!(
            "{n_rows:>6} rows: compile {:.2} ms, loss {value:.6}",
            compile.as_secs_f64() * 1e3
        );
    }

    // Gradient time per row over 10⁵ rows, against one call of the kernel's own VJP.
    let n_rows = 100_000;
    let data = rows(n_rows, 0.0);
    let single = adjit::Gradient::new(&kernel)?;
    let mut x = theta0.clone();
    x.extend_from_slice(&data[..2]);
    let mut g = vec![0.0; N_THETA];
    let one_call = fastest(2000, || {
        for _ in 0..1000 {
            single.call(&x, &mut g).map(|_| ())?;
        }
        Ok(())
    })? / 1000;
    println!(
        "\none kernel gradient call: {:.1} ns",
        one_call.as_secs_f64() * 1e9
    );
    let mut results = Vec::new();
    for threads in [1, 2] {
        let map = MapOptions {
            threads,
            ..MapOptions::default()
        };
        let loss = MappedKernel::with_options(&kernel, map, &Options::default())?;
        let mut grad = vec![0.0; N_THETA];
        let per_call = fastest(10, || loss.gradient(&theta0, &data, &mut grad).map(|_| ()))?;
        println!(
            "{threads} thread(s): gradient over {n_rows} rows {:.2} ms = {:.1} ns/row",
            per_call.as_secs_f64() * 1e3,
            per_call.as_secs_f64() * 1e9 / n_rows as f64
        );
        let value = loss.gradient(&theta0, &data, &mut grad)?;
        results.push((
            value.to_bits(),
            grad.iter().map(|g| g.to_bits()).collect::<Vec<_>>(),
        ));
    }
    println!(
        "1 and 2 threads bitwise equal: {}",
        results[0] == results[1]
    );
    assert_eq!(results[0], results[1]);

    // Fit: plain gradient descent on the mean loss; new data each epoch, no recompilation.
    let loss = MappedKernel::new(&kernel)?;
    let mut theta = theta0;
    let mut grad = vec![0.0; N_THETA];
    let n_rows = 2_000;
    let start = Instant::now();
    for epoch in 0..=300 {
        let data = rows(n_rows, epoch as f64);
        let value = loss.gradient(&theta, &data, &mut grad)?;
        for (t, g) in theta.iter_mut().zip(&grad) {
            *t -= 0.05 * g / n_rows as f64;
        }
        if epoch % 100 == 0 {
            println!("epoch {epoch:>3}: mean loss {:.6}", value / n_rows as f64);
        }
    }
    println!(
        "300 epochs of {n_rows} rows: {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

/// `n` rows `(t, sin 3t)` with t spread over [−1, 1] (shifted by `phase` to vary the sample).
fn rows(n: usize, phase: f64) -> Vec<f64> {
    (0..n)
        .flat_map(|i| {
            let t = -1.0 + 2.0 * ((i as f64 * 0.618_033_988_7 + phase * 0.1) % 1.0);
            [t, (3.0 * t).sin()]
        })
        .collect()
}

/// The fastest of `reps` runs of `f`.
fn fastest(reps: usize, mut f: impl FnMut() -> adjit::Result<()>) -> adjit::Result<Duration> {
    let mut best = Duration::MAX;
    for _ in 0..reps {
        let start = Instant::now();
        f()?;
        best = best.min(start.elapsed());
    }
    Ok(best)
}
