//! `adjit bench`: compile time, time per call and memory of each mode on one program, measured
//! through the library's public compile-once objects (so a row times what a library user gets).
//!
//! Times are medians of `adjit::time_per_call`: compare them *within* one run (gradient /
//! primal), not across machines.

use std::hint::black_box;
use std::time::Instant;

use adjit::checkpoint::CheckpointedGradient;
use adjit::inverse::CompiledInverse;
use adjit::{
    Compiled, Function, InverseMode, Mode, Part, Prepared, SparseHessian, SparseJacobian, Strategy,
};

/// What one benchmark row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchMode {
    /// The function itself.
    Primal,
    /// Forward mode (outputs and J·v).
    Jvp,
    /// Reverse mode (outputs and Jᵀ·w) with a strategy.
    Vjp,
    /// J⁻¹·v by lumps.
    ReverseInverse,
    /// J⁻ᵀ·v by lumps.
    ForwardInverse,
    /// J⁻¹·v by the dense Jacobian.
    #[value(alias = "dense")]
    DenseInverse,
    /// Every nonzero of the Jacobian from one compiled program.
    SparseJacobian,
    /// Every nonzero of the Hessian's lower triangle from one compiled program.
    SparseHessian,
}

impl BenchMode {
    /// The name used in `adjit bench` rows.
    pub fn name(self) -> &'static str {
        match self.inverse() {
            Some(mode) => mode.name(),
            None => match self {
                BenchMode::Primal => "primal",
                BenchMode::Jvp => "jvp",
                BenchMode::SparseJacobian => adjit::SparseKind::Jacobian.name(),
                BenchMode::SparseHessian => adjit::SparseKind::Hessian.name(),
                _ => "vjp",
            },
        }
    }

    fn inverse(self) -> Option<InverseMode> {
        match self {
            BenchMode::ReverseInverse => Some(InverseMode::Reverse),
            BenchMode::ForwardInverse => Some(InverseMode::Forward),
            BenchMode::DenseInverse => Some(InverseMode::Dense),
            _ => None,
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
    /// For the sparse rows: the nonzeros and the colours.
    pub sparse: Option<SparseStats>,
    /// For `--batch` rows: the batch and the time per point.
    pub batch: Option<BatchStats>,
    /// For rows of one compiled program: its bytes of machine code and its loops.
    pub code: Option<CodeStats>,
}

/// The machine code of a row's compiled program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeStats {
    /// Bytes of machine code (every chunk, both lane widths when batches use two).
    pub bytes: usize,
    /// Loops made of repeated instruction groups (see `docs/rolling.md`).
    pub loops: usize,
}

impl CodeStats {
    pub fn of(code: &adjit::jit::CompiledFunction) -> CodeStats {
        CodeStats {
            bytes: code.code_bytes(),
            loops: code.loops(),
        }
    }
}

/// A batch to measure: points, points per kernel call, threads (0 = every core).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batch {
    pub points: usize,
    pub lanes: usize,
    pub threads: usize,
    /// The C library or adjit's inline routines.
    pub math: adjit::jit::MathImpl,
}

/// What a `--batch` row reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchStats {
    pub batch: Batch,
    pub ns_per_point: f64,
}

/// The size of a sparse matrix row of `adjit bench`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparseStats {
    pub nnz: usize,
    pub colors: usize,
}

/// A deterministic seed direction of length `n` (entries in [0.5, 1.5), not all equal, so no
/// structure of the program is accidentally exploited).
fn direction(n: usize) -> Vec<f64> {
    let mut rng = adjit::ir::random::Rng::new(n as u64);
    rng.vector(n, 0.5, 1.5)
}

/// Benchmark one `mode` of `func` at `x`. `strategy` matters for [`BenchMode::Vjp`] only.
///
/// Every row is the same measurement of a different object: construct it (the compile
/// time), then time [`Prepared::call_flat`] at `x` with a fixed direction in every other
/// input part ([`measure`]). What the row reports besides time comes from the object itself.
pub fn bench(
    func: &Function,
    x: &[f64],
    mode: BenchMode,
    strategy: Strategy,
) -> adjit::Result<BenchMeasurement> {
    if let Some(inverse) = mode.inverse() {
        let (inv, compile_ms) = timed(|| CompiledInverse::new(func, inverse))?;
        return measure(&inv, x, compile_ms, Facts::default());
    }
    let mode = match mode {
        BenchMode::SparseJacobian => {
            let (j, compile_ms) = timed(|| SparseJacobian::new(func))?;
            let facts = Facts::sparse(j.nnz(), j.colors(), j.code());
            return measure(&j, x, compile_ms, facts);
        }
        BenchMode::SparseHessian => {
            let (h, compile_ms) = timed(|| SparseHessian::new(func))?;
            let facts = Facts::sparse(h.nnz(), h.colors(), h.code());
            return measure(&h, x, compile_ms, facts);
        }
        BenchMode::Primal => Mode::Primal,
        BenchMode::Jvp => Mode::Jvp,
        _ if strategy == Strategy::Tape => Mode::Vjp,
        _ => {
            let (grad, compile_ms) = timed(|| CheckpointedGradient::new(func, strategy))?;
            let stats = grad.stats();
            let facts = Facts {
                peak_bytes: stats.peak_bytes,
                recomputed_ops: stats.recomputed_ops,
                ..Facts::default()
            };
            return measure(&grad, x, compile_ms, facts);
        }
    };
    let (compiled, compile_ms) = timed(|| Compiled::new(func, mode))?;
    // The tape row uses the one memory model of checkpointing plans, so its figure is a
    // budget that `bytes:N` accepts.
    let peak_bytes = if mode == Mode::Vjp {
        adjit::diff::checkpoint::plan(func, Strategy::Tape)?
            .cost
            .peak_bytes
    } else {
        compiled.code().map_or(0, |c| c.workspace_bytes() as u64)
    };
    let facts = Facts {
        peak_bytes,
        code: compiled.code().map(CodeStats::of),
        ..Facts::default()
    };
    measure(&compiled, x, compile_ms, facts)
}

/// Benchmark the primal, JVP or VJP (a tape) of `func` at `x` kept rolled from derivation to
/// machine code ([`adjit::Options::rolled`]): the row's peak bytes are the code's workspace
/// (the tape's arrays among it).
pub fn bench_rolled(
    func: &Function,
    x: &[f64],
    mode: BenchMode,
) -> adjit::Result<BenchMeasurement> {
    let mode = match mode {
        BenchMode::Primal => Mode::Primal,
        BenchMode::Jvp => Mode::Jvp,
        _ => Mode::Vjp,
    };
    let options = adjit::Options {
        rolled: adjit::KeepRolled::Always,
        ..adjit::Options::default()
    };
    let (compiled, compile_ms) = timed(|| Compiled::with_options(func, mode, &options))?;
    let facts = Facts {
        peak_bytes: compiled.code().map_or(0, |c| c.workspace_bytes() as u64),
        code: compiled.code().map(CodeStats::of),
        ..Facts::default()
    };
    measure(&compiled, x, compile_ms, facts)
}

/// What a row reports besides its times, read from the object it measures.
#[derive(Default)]
struct Facts {
    peak_bytes: u64,
    recomputed_ops: u64,
    sparse: Option<SparseStats>,
    code: Option<CodeStats>,
}

impl Facts {
    /// A sparse object's: nonzeros, colours, and its one program's workspace and code.
    fn sparse(nnz: usize, colors: usize, code: Option<&adjit::jit::CompiledFunction>) -> Facts {
        Facts {
            peak_bytes: code.map_or(0, |c| c.workspace_bytes() as u64),
            recomputed_ops: 0,
            sparse: Some(SparseStats { nnz, colors }),
            code: code.map(CodeStats::of),
        }
    }
}

/// `make()` and the milliseconds it took.
fn timed<T>(make: impl FnOnce() -> adjit::Result<T>) -> adjit::Result<(T, f64)> {
    let start = Instant::now();
    let made = make()?;
    Ok((made, start.elapsed().as_secs_f64() * 1e3))
}

/// Time one call of `object` at `x` (its `Inputs` part), every other input part (the
/// tangent, cotangent or vector) the fixed [`direction`] of its length. Generic, not `dyn`,
/// so the call inlines as a library user's does.
fn measure<P: Prepared>(
    object: &P,
    x: &[f64],
    compile_ms: f64,
    facts: Facts,
) -> adjit::Result<BenchMeasurement> {
    let layout = object.layout();
    let mut inputs = vec![0.0; layout.n_inputs()];
    let mut at = 0;
    for &(part, len) in layout.input_parts() {
        if part == Part::Inputs {
            inputs[at..at + len].copy_from_slice(x);
        } else {
            inputs[at..at + len].copy_from_slice(&direction(len));
        }
        at += len;
    }
    let mut outputs = vec![0.0; layout.n_outputs()];
    let ns_per_call = adjit::time_per_call(|| {
        object.call_flat(black_box(&inputs), &mut outputs)?;
        black_box(&outputs);
        Ok(())
    })?;
    Ok(BenchMeasurement {
        compile_ms,
        ns_per_call,
        peak_bytes: facts.peak_bytes,
        recomputed_ops: facts.recomputed_ops,
        sparse: facts.sparse,
        batch: None,
        code: facts.code,
    })
}

/// `mode` (primal, jvp or a taped vjp) over a batch of points spread ±10 % around `x`, in one
/// batched call of the native code (`call_batch_parallel`), with `lanes` points per kernel call.
pub fn bench_batch(
    func: &Function,
    x: &[f64],
    mode: BenchMode,
    batch: Batch,
) -> Result<BenchMeasurement, crate::CliError> {
    let derived = match mode {
        BenchMode::Primal => Mode::Primal,
        BenchMode::Jvp => Mode::Jvp,
        BenchMode::Vjp => Mode::Vjp,
        other => {
            return Err(crate::CliError::input(format!(
                "bench --batch measures primal, jvp and vjp, not {}",
                other.name()
            )))
        }
    };
    if batch.points == 0 {
        return Err(crate::CliError::input("--batch needs at least one point"));
    }
    let mut options = adjit::Options::default();
    options.jit.batch_lanes = batch.lanes;
    options.jit.math = batch.math;
    let start = Instant::now();
    let compiled = Compiled::with_options(func, derived, &options)?;
    let compile_ms = start.elapsed().as_secs_f64() * 1e3;
    let layout = compiled.layout();
    let (n_in, n_out) = (layout.n_inputs(), layout.n_outputs());
    let too_big = || {
        crate::CliError::input(format!(
            "--batch {} × {} numbers does not fit in memory",
            batch.points,
            n_in + n_out
        ))
    };
    let in_len = batch.points.checked_mul(n_in).ok_or_else(too_big)?;
    let out_len = batch.points.checked_mul(n_out).ok_or_else(too_big)?;
    let mut inputs = Vec::new();
    inputs.try_reserve_exact(in_len).map_err(|_| too_big())?;
    let mut outputs = Vec::new();
    outputs.try_reserve_exact(out_len).map_err(|_| too_big())?;
    outputs.resize(out_len, 0.0);
    let seed_range = match derived {
        Mode::Jvp => layout.input(Part::Tangent(0)),
        Mode::Vjp => layout.input(Part::Cotangent),
        _ => 0..0,
    };
    let seed = direction(seed_range.len());
    let mut rng = adjit::ir::random::Rng::new(7);
    for _ in 0..batch.points {
        let at = inputs.len();
        inputs.extend(x.iter().map(|&v| v * rng.uniform(0.9, 1.1)));
        inputs.resize(at + n_in, 0.0);
        inputs[at + seed_range.start..at + seed_range.end].copy_from_slice(&seed);
    }
    let code = compiled.code().ok_or_else(|| {
        crate::CliError::input("bench --batch measures native code (not --engine interp)")
    })?;
    let ns_per_call = adjit::time_per_call(|| {
        compiled.call_batch(black_box(&inputs), &mut outputs, batch.threads)?;
        black_box(&outputs);
        Ok(())
    })?;
    Ok(BenchMeasurement {
        compile_ms,
        ns_per_call,
        peak_bytes: code.workspace_bytes() as u64,
        recomputed_ops: 0,
        sparse: None,
        batch: Some(BatchStats {
            batch,
            ns_per_point: ns_per_call / batch.points as f64,
        }),
        code: Some(CodeStats::of(code)),
    })
}
