//! The memory / recomputation trade-off of reverse mode on a long time integration: the gradient
//! of the final `x` of a Lorenz system after `STEPS` classical RK4 steps, with respect to the
//! initial state, under every [`adjit::Strategy`]:
//!
//! - `tape` stores every intermediate the adjoint reads (fastest, most memory);
//! - `checkpoint:S` is binomial (Revolve) checkpointing with S snapshots;
//! - `uniform` cuts the program into about √N stages and stores every boundary;
//! - `bytes:N` picks the cheapest schedule whose peak memory fits in N bytes (here a tenth of
//!   the tape's).
//!
//! For each it prints the planned peak bytes, the primal instructions recomputed per call, the
//! measured time per gradient, and checks that the gradient equals the tape's bit for bit (the
//! stage reverses accumulate adjoints in the taped order, so they must).
//!
//! Run: `cargo run --release --example strategies`

#[path = "common/lorenz.rs"]
mod lorenz;
use lorenz::lorenz_rk4;

use std::time::Instant;

use adjit::checkpoint::CheckpointedGradient;
use adjit::{Strategy, Type};

const STEPS: usize = 2_000;
const DT: f64 = 0.0005;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // (x, y, z) -> (x, y, z) after STEPS·DT = 1 time unit; we differentiate the first output.
    let lorenz = lorenz_rk4(STEPS, DT, Type::F64);
    println!(
        "Lorenz RK4: {STEPS} steps, {} instructions",
        lorenz.n_insts()
    );
    let x0 = [1.0, 1.5, 20.0];
    let w = [1.0, 0.0, 0.0];

    let tape = CheckpointedGradient::new(&lorenz, Strategy::Tape)?;
    let budget = tape.stats().peak_bytes / 10;
    let strategies = [
        Strategy::Tape,
        Strategy::Checkpoint { snapshots: 2 },
        Strategy::Checkpoint { snapshots: 4 },
        Strategy::Checkpoint { snapshots: 8 },
        Strategy::Checkpoint { snapshots: 16 },
        Strategy::Uniform,
        Strategy::CheckpointBytes(budget),
    ];

    println!(
        "\n{:<16} {:>7} {:>6} {:>12} {:>13} {:>10} {:>10} {:>10}",
        "strategy",
        "stages",
        "snaps",
        "peak bytes",
        "recomputed",
        "compile ms",
        "µs/grad",
        "vs tape"
    );
    let mut reference: Option<(Vec<f64>, f64)> = None;
    for strategy in strategies {
        let start = Instant::now();
        let grad = CheckpointedGradient::new(&lorenz, strategy)?;
        let compile_ms = start.elapsed().as_secs_f64() * 1e3;
        let (mut y, mut g) = ([0.0; 3], [0.0; 3]);
        grad.call(&x0, &w, &mut y, &mut g)?;
        let ns = adjit::time_per_call(|| grad.call(&x0, &w, &mut y, &mut g))?;
        let stats = grad.stats();
        let ratio = match &reference {
            None => {
                reference = Some((g.to_vec(), ns));
                1.0
            }
            Some((g_tape, ns_tape)) => {
                if g.iter()
                    .zip(g_tape)
                    .any(|(a, b)| a.to_bits() != b.to_bits())
                {
                    return Err(format!(
                        "{strategy}: gradient {g:?} differs from the tape's {g_tape:?}"
                    )
                    .into());
                }
                ns / ns_tape
            }
        };
        println!(
            "{:<16} {:>7} {:>6} {:>12} {:>13} {:>10.0} {:>10.1} {:>9.2}×",
            strategy.to_string(),
            stats.stages,
            stats.snapshots,
            stats.peak_bytes,
            stats.recomputed_ops,
            compile_ms,
            ns / 1e3,
            ratio
        );
    }
    if let Some((g, _)) = reference {
        println!("\n∂x(T)/∂(x0, y0, z0) = {g:?} (identical under every strategy)");
    }

    // A budget below the smallest workable schedule is an error that names the minimum.
    match CheckpointedGradient::new(&lorenz, Strategy::CheckpointBytes(100)) {
        Ok(_) => println!("bytes:100 unexpectedly fits"),
        Err(e) => println!("bytes:100 → error: {e}"),
    }
    Ok(())
}
