//! A long time integration as an iterated step: the Lorenz system under classical RK4, one step
//! compiled once ([`adjit::steps::IteratedStep`]) and run N times, with the gradient of
//! ⟨w, s_N⟩ with respect to s₀ by Revolve over the steps.
//!
//! It prints, for N = 10⁴ and N = 10⁶:
//! - the compile time (the same whatever N: one step's primal, JVP and VJP);
//! - the time per step of the gradient under `tape` (every state stored) and `checkpoint:20`
//!   (20 stored states, Revolve's minimal re-advances), with their memory;
//! - the process's peak resident memory after the 10⁶-step runs (Linux);
//! - at N = 10⁴, the unrolled 10⁴-step program's compile time and tape VJP for comparison,
//!   and a check that every gradient equals the unrolled tape's bit for bit.
//!
//! Run: `cargo run --release --example lorenz_steps`

#[path = "common/lorenz.rs"]
mod lorenz;
use lorenz::lorenz_rk4;

use std::time::Instant;

use adjit::steps::IteratedStep;
use adjit::{Mode, Options, Strategy, Type};

/// Small enough that the gradient stays finite over 10⁶ steps (10 time units).
const DT: f64 = 1e-5;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let step = lorenz_rk4(1, DT, Type::F64);
    let s0 = [1.0, 1.5, 20.0];
    let w = [1.0, 0.0, 0.0];
    println!("Lorenz RK4 step: {} instructions", step.n_insts());

    // 10⁶ first, so the peak resident memory printed after it is the iterated step's.
    for n_steps in [1_000_000, 10_000] {
        println!("\nN = {n_steps} steps");
        let mut gradients = Vec::new();
        // checkpoint:20 first, so the peak resident memory printed after it is its own.
        for strategy in [Strategy::Checkpoint { snapshots: 20 }, Strategy::Tape] {
            let start = Instant::now();
            let it =
                IteratedStep::with_options(&step, None, n_steps, strategy, &Options::default())?;
            let compile = start.elapsed();
            let (mut y, mut grad) = ([0.0; 3], [0.0; 3]);
            // The fastest of a few calls: the machine may be busy.
            let mut call = std::time::Duration::MAX;
            for _ in 0..if n_steps > 100_000 { 3 } else { 20 } {
                let start = Instant::now();
                it.vjp(&s0, &w, &mut y, &mut grad)?;
                call = call.min(start.elapsed());
            }
            let stats = it.stats();
            println!(
                "  {:<14} compile {:>7.2} ms   gradient {:>8.1} ms = {:>6.1} ns/step   \
                 memory {:>10} bytes ({} states)   re-advanced steps {}",
                strategy.to_string(),
                compile.as_secs_f64() * 1e3,
                call.as_secs_f64() * 1e3,
                call.as_secs_f64() * 1e9 / n_steps as f64,
                stats.peak_bytes,
                stats.snapshots,
                stats.forward_steps,
            );
            if let Some(hwm) = peak_resident() {
                println!("  {:<14} process peak resident memory so far: {hwm}", "");
            }
            gradients.push(grad);
        }
        println!("  s_N = {:?}", {
            let mut y = [0.0; 3];
            IteratedStep::new(&step, n_steps, Strategy::Tape)?.eval(&s0, &mut y)?;
            y
        });
        println!("  ∂x_N/∂s₀ = {:?}", gradients[0]);
        assert_eq!(
            gradients[0], gradients[1],
            "checkpoint:20 differs from tape"
        );

        if n_steps == 10_000 {
            let unrolled = lorenz_rk4(n_steps, DT, Type::F64);
            let start = Instant::now();
            let vjp = adjit::Compiled::new(&unrolled, Mode::Vjp)?;
            let compile = start.elapsed();
            let (mut y, mut grad) = ([0.0; 3], [0.0; 3]);
            vjp.call_parts(&[&s0, &w], &mut [&mut y, &mut grad])?;
            let mut call = std::time::Duration::MAX;
            for _ in 0..20 {
                let start = Instant::now();
                vjp.call_parts(&[&s0, &w], &mut [&mut y, &mut grad])?;
                call = call.min(start.elapsed());
            }
            println!(
                "  unrolled program ({} instructions): compile {:.0} ms, tape VJP {:.2} ms = {:.1} ns/step",
                unrolled.n_insts(),
                compile.as_secs_f64() * 1e3,
                call.as_secs_f64() * 1e3,
                call.as_secs_f64() * 1e9 / n_steps as f64,
            );
            let same = grad
                .iter()
                .zip(&gradients[0])
                .all(|(a, b)| a.to_bits() == b.to_bits());
            println!("  iterated gradient bitwise equal to the unrolled tape's: {same}");
            assert!(same);
        }
    }
    Ok(())
}

/// The process's peak resident memory (Linux only).
fn peak_resident() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM"))?;
    Some(line.trim_start_matches("VmHWM:").trim().to_string())
}
