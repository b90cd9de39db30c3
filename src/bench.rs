//! `adjit bench`: compile time, time per call and memory of each mode on one program.
//!
//! Times are wall-clock medians over several batches after a warm-up, each batch long enough
//! (≥ 10 ms) that timer resolution does not matter. They are meant to be compared *within* one
//! run (gradient / primal), not across machines.

use std::hint::black_box;
use std::time::{Duration, Instant};

use adjit_ir::Function;

use crate::compile::{Compiled, Mode};
use crate::{Error, InverseMode, Result, Strategy};

/// What one benchmark row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchMode {
    /// The function itself.
    Primal,
    /// Forward mode (outputs and J·v).
    Jvp,
    /// Reverse mode (outputs and Jᵀ·w) with a strategy.
    Vjp,
    /// One of the inverse products.
    Inverse(InverseMode),
}

impl BenchMode {
    /// The name used in `adjit bench` rows.
    pub fn name(self) -> &'static str {
        match self {
            BenchMode::Primal => "primal",
            BenchMode::Jvp => "jvp",
            BenchMode::Vjp => "vjp",
            BenchMode::Inverse(mode) => mode.name(),
        }
    }
}

/// The numbers of one benchmark row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BenchMeasurement {
    /// Wall time to derive, simplify and JIT-compile the program, in milliseconds.
    pub compile_ms: f64,
    /// Median time per call of the compiled program, in nanoseconds.
    pub ns_per_call: f64,
    /// Peak bytes of stored intermediates: the tape (or tape + snapshots when checkpointing)
    /// for reverse modes; the native workspace (spilled values) otherwise.
    pub peak_bytes: u64,
    /// Primal operations executed again because of checkpointing (0 for a tape).
    pub recomputed_ops: u64,
}

/// Time `call` (which performs one evaluation) and return the median nanoseconds per call.
pub fn time_per_call(mut call: impl FnMut() -> Result<()>) -> Result<f64> {
    call()?; // warm-up, and surface errors before timing
    let mut iters: u64 = 1;
    loop {
        let start = Instant::now();
        for _ in 0..iters {
            call()?;
        }
        let elapsed = start.elapsed();
        if elapsed >= Duration::from_millis(10) || iters >= 1 << 30 {
            break;
        }
        iters *= 4;
    }
    let mut samples = Vec::with_capacity(7);
    for _ in 0..7 {
        let start = Instant::now();
        for _ in 0..iters {
            call()?;
        }
        samples.push(start.elapsed().as_nanos() as f64 / iters as f64);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

/// A deterministic seed direction of length `n` (entries in [0.5, 1.5), not all equal, so no
/// structure of the program is accidentally exploited).
fn direction(n: usize) -> Vec<f64> {
    let mut rng = adjit_ir::random::Rng::new(n as u64);
    rng.vector(n, 0.5, 1.5)
}

fn float_count(types: &[adjit_ir::Type]) -> usize {
    types.iter().filter(|t| t.is_float()).count()
}

/// Benchmark one `mode` of `func` at `x`. `strategy` matters for [`BenchMode::Vjp`] only.
pub fn bench(
    func: &Function,
    x: &[f64],
    mode: BenchMode,
    strategy: Strategy,
) -> Result<BenchMeasurement> {
    adjit_ir::verify(func)?;
    if x.len() != func.n_params {
        return Err(Error::Usage(format!(
            "--at has {} numbers, @{} takes {} inputs",
            x.len(),
            func.name,
            func.n_params
        )));
    }
    let n_float_in = float_count(&func.param_types());
    let n_float_out = float_count(&func.ret_types);
    let simple = |mode: Mode, seed: Vec<f64>, peak: Option<u64>| -> Result<BenchMeasurement> {
        let start = Instant::now();
        let compiled = Compiled::new(func, mode)?;
        let compile_ms = start.elapsed().as_secs_f64() * 1e3;
        measure_code(compiled.code(), compile_ms, x, &seed, peak)
    };
    match mode {
        BenchMode::Primal => simple(Mode::Primal, Vec::new(), None),
        BenchMode::Jvp => simple(Mode::Jvp, direction(n_float_in), None),
        BenchMode::Vjp => match strategy {
            Strategy::Tape => {
                let tape = adjit_diff::tape_stats(func).bytes as u64;
                simple(Mode::Vjp, direction(n_float_out), Some(tape))
            }
            other => bench_checkpointed(func, x, &direction(n_float_out), other),
        },
        BenchMode::Inverse(inverse_mode) => {
            bench_inverse(func, x, &direction(n_float_in), inverse_mode)
        }
    }
}

/// A checkpointed gradient: compile every stage, then time whole gradient calls.
fn bench_checkpointed(
    func: &Function,
    x: &[f64],
    w: &[f64],
    strategy: Strategy,
) -> Result<BenchMeasurement> {
    let start = Instant::now();
    let mut grad = crate::checkpoint::CheckpointedGradient::new(func, strategy)?;
    let compile_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut y = vec![0.0; func.n_outputs()];
    let mut g = vec![0.0; float_count(&func.param_types())];
    let ns_per_call = time_per_call(|| {
        grad.call(black_box(x), black_box(w), &mut y, &mut g)?;
        black_box((&y, &g));
        Ok(())
    })?;
    let stats = grad.stats();
    Ok(BenchMeasurement {
        compile_ms,
        ns_per_call,
        peak_bytes: stats.peak_bytes,
        recomputed_ops: stats.recomputed_ops,
    })
}

/// An inverse product: the simplified inverse program compiled with the JIT, timed per raw
/// call (the singular-pivot status is checked once, before timing).
fn bench_inverse(
    func: &Function,
    x: &[f64],
    v: &[f64],
    mode: InverseMode,
) -> Result<BenchMeasurement> {
    // Surfaces structural errors and singular pivots at this point with a readable message.
    crate::inverse::inverse_product(func, mode, crate::Engine::Jit, x, v)?;
    let start = Instant::now();
    let program = crate::inverse::inverse_program(func, mode, &Default::default())?;
    let program = adjit_diff::simplify(&program);
    let code = adjit_jit::compile(&program, &adjit_jit::JitOptions::default())?;
    let compile_ms = start.elapsed().as_secs_f64() * 1e3;
    measure_code(&code, compile_ms, x, v, None)
}

/// Time compiled code on `primal ++ seed`; `peak` defaults to the code's native workspace.
fn measure_code(
    code: &adjit_jit::CompiledFunction,
    compile_ms: f64,
    primal: &[f64],
    seed: &[f64],
    peak: Option<u64>,
) -> Result<BenchMeasurement> {
    let mut inputs = primal.to_vec();
    inputs.extend_from_slice(seed);
    let mut outputs = vec![0.0; code.n_outputs()];
    let ns_per_call = time_per_call(|| {
        code.call(black_box(&inputs), &mut outputs)?;
        black_box(&outputs);
        Ok(())
    })?;
    Ok(BenchMeasurement {
        compile_ms,
        ns_per_call,
        peak_bytes: peak.unwrap_or(code.workspace_bytes() as u64),
        recomputed_ops: 0,
    })
}
