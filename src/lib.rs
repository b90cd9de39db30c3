//! # adjit
//!
//! Straight-line numeric programs to fast native derivative code. This facade crate is the
//! public API: it re-exports the IR ([`ir`]), the transforms ([`diff`]) and the Cranelift
//! backend ([`jit`]), and offers one-call entry points used by the `adjit` CLI and the tests.

mod bench;
pub mod checkpoint;
mod compile;
pub mod inverse;
pub mod plot;
mod scratch;

use std::path::Path;

pub use adjit_diff as diff;
pub use adjit_diff::checkpoint::Strategy;
pub use adjit_ir as ir;
pub use adjit_ir::trace::{trace, trace_multi};
pub use adjit_ir::{Builder, Function, Type, Value};
pub use adjit_jit as jit;
pub use adjit_jit::{JitOptions, ObjectCode};
pub use bench::{bench, time_per_call, BenchMeasurement, BenchMode};
pub use compile::{derive, Compiled, Gradient, Mode};

/// Everything that can go wrong in a facade call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// Parse errors, each already formatted as `FILE:LINE:COL: error: MESSAGE`.
    #[error("{0}")]
    Parse(String),
    #[error(transparent)]
    Verify(#[from] adjit_ir::VerifyErrors),
    #[error(transparent)]
    Interp(#[from] adjit_ir::InterpError),
    #[error(transparent)]
    Jit(#[from] adjit_jit::JitError),
    #[error(transparent)]
    Diff(#[from] adjit_diff::DiffError),
    /// The program cannot be inverted (not square, a narrow cut, a structurally singular or
    /// oversized lump).
    #[error(transparent)]
    Inverse(#[from] adjit_diff::inverse::InverseError),
    /// A numerically singular pivot at run time, naming the lump.
    #[error("{0}")]
    SingularLump(String),
    /// No checkpointing plan fits (e.g. a byte budget below the smallest that works).
    #[error(transparent)]
    Checkpoint(#[from] adjit_diff::checkpoint::CheckpointError),
    #[error("{0}")]
    Usage(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Which evaluator runs a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Engine {
    /// The reference interpreter.
    Interp,
    /// Native code from Cranelift.
    #[default]
    Jit,
}

/// Which inverse product to compute for a square program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InverseMode {
    /// Reverse-inverse: J⁻¹·v.
    Reverse,
    /// Forward-inverse: J⁻ᵀ·w.
    Forward,
    /// Dense fallback: forward-mode Jacobian + LU, J⁻¹·v.
    Dense,
}

impl InverseMode {
    /// The mode's name in `adjit bench` rows and messages: `reverse-inverse`,
    /// `forward-inverse` or `dense-inverse`.
    pub fn name(self) -> &'static str {
        match self {
            InverseMode::Reverse => "reverse-inverse",
            InverseMode::Forward => "forward-inverse",
            InverseMode::Dense => "dense-inverse",
        }
    }
}

/// Parse and verify the `.ir` file at `path`; errors carry the file name.
pub fn load(path: &Path) -> Result<Vec<Function>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    load_str(&text, &path.display().to_string())
}

/// Parse and verify source text; `file` names it in error messages.
pub fn load_str(text: &str, file: &str) -> Result<Vec<Function>> {
    let funcs = adjit_ir::parse(text).map_err(|errs| {
        Error::Parse(
            errs.errors
                .iter()
                .map(|e| format!("{file}:{e}"))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })?;
    for f in &funcs {
        adjit_ir::verify(f)?;
    }
    Ok(funcs)
}

/// Evaluate `func` at `x`.
pub fn eval(func: &Function, engine: Engine, x: &[f64]) -> Result<Vec<f64>> {
    adjit_ir::verify(func)?;
    run_verified(func, engine, x)
}

/// [`eval`] of a function already verified (user input checked by the caller, or the output of
/// a pass), so one-shot derivative calls do not verify the derived program a second time.
fn run_verified(func: &Function, engine: Engine, x: &[f64]) -> Result<Vec<f64>> {
    match engine {
        Engine::Interp => Ok(adjit_ir::interpret(func, x)?),
        Engine::Jit => {
            let code = adjit_jit::compile(func, &JitOptions::default())?;
            let mut out = vec![0.0; func.n_outputs()];
            code.call(x, &mut out)?;
            Ok(out)
        }
    }
}

/// Number of float parameters (the tangent / adjoint slots of derived functions).
fn float_params(func: &Function) -> usize {
    func.param_types().iter().filter(|t| t.is_float()).count()
}

/// Number of float outputs (the cotangent / tangent-output slots of derived functions).
fn float_outputs(func: &Function) -> usize {
    func.ret_types.iter().filter(|t| t.is_float()).count()
}

/// Check that a user vector has the length a function needs.
fn check_len(what: &str, got: &[f64], expected: usize, func: &Function, unit: &str) -> Result<()> {
    if got.len() == expected {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "{what} has {} numbers, @{} takes {expected} {unit}",
            got.len(),
            func.name
        )))
    }
}

/// Evaluate a derived function on `primal ++ seed` and split its outputs after `n_primal`.
fn run_split(
    derived: &Function,
    engine: Engine,
    primal: &[f64],
    seed: &[f64],
    n_primal: usize,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let mut input = Vec::with_capacity(primal.len() + seed.len());
    input.extend_from_slice(primal);
    input.extend_from_slice(seed);
    let mut out = run_verified(derived, engine, &input)?;
    let rest = out.split_off(n_primal.min(out.len()));
    Ok((out, rest))
}

/// Forward mode: outputs `f(x)` and tangents `J·v` (`v` has one entry per float parameter; the
/// tangents one per float output).
pub fn jvp(func: &Function, engine: Engine, x: &[f64], v: &[f64]) -> Result<(Vec<f64>, Vec<f64>)> {
    adjit_ir::verify(func)?;
    check_len("--at", x, func.n_params, func, "inputs")?;
    check_len("--tangent", v, float_params(func), func, "float inputs")?;
    let derived = adjit_diff::simplify(&adjit_diff::jvp(func));
    run_split(&derived, engine, x, v, func.n_outputs())
}

/// Reverse mode: outputs `f(x)` and gradient `Jᵀ·w`.
pub fn vjp(
    func: &Function,
    engine: Engine,
    strategy: Strategy,
    x: &[f64],
    w: &[f64],
) -> Result<(Vec<f64>, Vec<f64>)> {
    adjit_ir::verify(func)?;
    check_len("--at", x, func.n_params, func, "inputs")?;
    check_len("--cotangent", w, float_outputs(func), func, "float outputs")?;
    match strategy {
        Strategy::Tape => {
            let derived = adjit_diff::simplify(&adjit_diff::vjp(func));
            run_split(&derived, engine, x, w, func.n_outputs())
        }
        other => {
            let mut grad = checkpoint::CheckpointedGradient::new(func, other)?;
            let mut y = vec![0.0; func.n_outputs()];
            let mut g = vec![0.0; float_params(func)];
            match engine {
                Engine::Jit => grad.call(x, w, &mut y, &mut g)?,
                Engine::Interp => {
                    return Err(Error::Usage(
                        "checkpointing strategies run compiled stages; use --engine jit".into(),
                    ))
                }
            }
            Ok((y, g))
        }
    }
}

/// Inverse modes: outputs `f(x)` and `J⁻¹·v` (reverse, dense) or `J⁻ᵀ·v` (forward).
pub fn inverse(
    func: &Function,
    engine: Engine,
    mode: InverseMode,
    x: &[f64],
    v: &[f64],
) -> Result<(Vec<f64>, Vec<f64>)> {
    adjit_ir::verify(func)?;
    check_len("--at", x, func.n_params, func, "inputs")?;
    inverse::inverse_product(func, mode, engine, x, v)
}

/// Render one stage of the pipeline as text. Stage names: `ir`, `simplified`, `jvp`, `vjp`,
/// `clif`, `asm`, `schedule`, `lumps`, `dot`, `reverse-inverse`, `forward-inverse`.
pub fn dump(func: &Function, stage: &str, options: &DumpOptions) -> Result<String> {
    adjit_ir::verify(func)?;
    match stage {
        "ir" => Ok(func.to_string()),
        "simplified" => Ok(adjit_diff::simplify(func).to_string()),
        "jvp" => Ok(adjit_diff::simplify(&adjit_diff::jvp(func)).to_string()),
        "vjp" => Ok(adjit_diff::simplify(&adjit_diff::vjp(func)).to_string()),
        "schedule" => checkpoint::schedule_text(func, options.strategy),
        "clif" | "asm" => {
            let mode = match &options.mode {
                Some(m) => m.parse()?,
                None => Mode::Primal,
            };
            let derived = derive(func, mode)?;
            let opts = JitOptions::default();
            Ok(if stage == "clif" {
                adjit_jit::clif_text(&derived, &opts)?
            } else {
                adjit_jit::asm_text(&derived, &opts)?
            })
        }
        other => inverse::dump_stage(func, other).unwrap_or_else(|| {
            Err(Error::Usage(format!(
                "unknown stage `{other}`: expected ir, simplified, jvp, vjp, clif, asm, schedule, \
                 lumps, dot, reverse-inverse or forward-inverse"
            )))
        }),
    }
}

/// Options of [`dump`].
#[derive(Clone, Debug, Default)]
pub struct DumpOptions {
    /// For `clif`/`asm`: which program to lower: `primal` (default), `jvp` or `vjp`.
    pub mode: Option<String>,
    /// For `schedule`: the strategy.
    pub strategy: Strategy,
}

/// Compile `mode` of `func` to a relocatable object file for `target` (a target triple such as
/// `aarch64-unknown-linux-gnu`; `None` is the host), with a C header declaring its entry point.
pub fn compile_object(func: &Function, mode: Mode, target: Option<&str>) -> Result<ObjectCode> {
    let derived = derive(func, mode)?;
    let host = target_lexicon::Triple::host().to_string();
    Ok(adjit_jit::compile_object(
        &derived,
        target.unwrap_or(&host),
        &JitOptions::default(),
    )?)
}
