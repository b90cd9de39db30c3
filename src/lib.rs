//! # adjit
//!
//! Straight-line numeric programs to fast native derivative code. This facade crate is the
//! public API: it re-exports the IR ([`ir`]), the transforms ([`diff`]) and the Cranelift
//! backend ([`jit`]), and offers one-call entry points used by the `adjit` CLI and the tests.

pub mod checkpoint;
mod compile;
pub mod compose;
pub mod inverse;
mod jacobian;
pub mod map;
pub mod memory;
mod runner;
mod scratch;
pub mod sparse;
pub mod steps;
mod timing;

use std::path::Path;

pub use adjit_diff as diff;
pub use adjit_diff::checkpoint::Strategy;
pub use adjit_diff::inverse::InverseOptions;
pub use adjit_diff::layout::{Layout, Part};
pub use adjit_diff::sparsity::{Coloring, SparsityPattern};
pub use adjit_diff::{Derived, Mode, UnknownName};
pub use adjit_ir as ir;
pub use adjit_ir::trace::{
    trace, trace_multi, trace_named, trace_with_data, Bool, Scalar, Tracer, Var,
};
pub use adjit_ir::{Builder, Function, Type, Value};
pub use adjit_jit as jit;
pub use adjit_jit::{JitOptions, ObjectCode};
pub use compile::{derive, Compiled, Gradient};
/// The `faer` linear-algebra crate the sparse objects convert to ([`SparseJacobian::to_faer`]).
pub use faer;
pub use jacobian::{hessian, jacobian, Hessian, Jacobian};
pub use sparse::{SparseHessian, SparseJacobian, SparseKind};
pub use timing::time_per_call;

/// Everything that can go wrong in a facade call. Messages speak of arguments and layout parts
/// (`x`, `ẋ`, `ȳ`, …), never of command-line flags; the CLI adds its flag names.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// Parse errors, each already formatted as `FILE:LINE:COL: error: MESSAGE`.
    #[error("{0}")]
    Parse(String),
    /// Verifier errors of a source text, located like parse errors
    /// (`FILE:LINE:COL: error: MESSAGE` then `    in: ` and the user's line).
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Verify(#[from] adjit_ir::VerifyErrors),
    #[error(transparent)]
    Interp(#[from] adjit_ir::InterpError),
    #[error(transparent)]
    Jit(#[from] adjit_jit::JitError),
    /// The mode cannot be derived (e.g. a gradient of a function with two outputs).
    #[error(transparent)]
    Derive(#[from] adjit_diff::DeriveError),
    #[error(transparent)]
    Diff(#[from] adjit_diff::DiffError),
    /// The program cannot be inverted (not square, a narrow cut, a structurally singular or
    /// oversized lump).
    #[error(transparent)]
    Inverse(#[from] adjit_diff::inverse::InverseError),
    /// A numerically singular pivot at run time.
    #[error("{mode} of @{func}: {lump} has a numerically singular pivot: |pivot| relative to the largest entry of its row of J is {}, not above {threshold:e} (pivot_tol), condition estimate ≥ {:e}; J is singular or too ill-conditioned there; {}", pivot_ratio(*pivot), condition_estimate(*pivot, *threshold, *pivot_tol), advice(*mode))]
    Singular {
        mode: InverseMode,
        func: String,
        /// The lump, as `lump 2 (%a..%b, l = 3)`, or `the dense Jacobian`.
        lump: String,
        /// The ratio that failed the pivot test, as compared: a pivot's magnitude relative to
        /// the largest entry of its row of J (pivots are judged on the row-equilibrated lump,
        /// so scaling J changes nothing); NaN when that row is zero at the point (`0 / 0`).
        /// The dense mode reports its smallest pivot.
        pivot: f64,
        /// The threshold it was judged against: `pivot_tol`.
        threshold: f64,
        pivot_tol: f64,
    },
    /// An inverse product that is infinite or NaN although no pivot test failed.
    #[error("{mode} of @{func}: the product is not finite (inf or NaN): J is singular or too ill-conditioned at this point, or the vector is not finite; {}", advice(*mode))]
    NotFinite { mode: InverseMode, func: String },
    /// No checkpointing plan fits (e.g. a byte budget below the smallest that works).
    #[error(transparent)]
    Checkpoint(#[from] adjit_diff::checkpoint::CheckpointError),
    /// A buffer or vector whose length does not match its part of the layout.
    #[error("@{func}: {} has {got} numbers, expected {expected} (layout {layout})", part.symbol(false))]
    Length {
        func: String,
        part: Part,
        expected: usize,
        got: usize,
        /// The whole layout, e.g. `(x (2) ++ ẋ (2)) -> (y (1) ++ ẏ (1))`.
        layout: String,
    },
    /// Flat buffers whose lengths do not match the layout.
    #[error("@{func} takes {expected_inputs} inputs and returns {expected_outputs} outputs, got buffers of {inputs} and {outputs} (layout {layout})")]
    Arity {
        func: String,
        expected_inputs: usize,
        expected_outputs: usize,
        inputs: usize,
        outputs: usize,
        layout: String,
    },
    /// A call with one slice per part that has too few or too many slices.
    #[error("@{func}: expected {expected} slices, one per part, got {got} (layout {layout})")]
    Parts {
        func: String,
        expected: usize,
        got: usize,
        layout: String,
    },
    /// A value for a `bool` input that is neither 0 nor 1.
    #[error("@{func}: input {index} (%{name}) is a bool: give 0 or 1, not {value}")]
    NotBool {
        func: String,
        index: usize,
        name: String,
        value: f64,
    },
    /// The object or mode needs float inputs only.
    #[error("{what} needs float inputs; input {index} of @{func} is bool")]
    BoolInput {
        what: &'static str,
        func: String,
        index: usize,
    },
    #[error(transparent)]
    UnknownName(#[from] UnknownName),
    /// An argument of a driver ([`map::MappedKernel`], [`steps::IteratedStep`]) that does
    /// not fit; the message names it (`θ`, `the data`, `the output x̄`, …).
    #[error("@{func}: {message}")]
    Driver { func: String, message: String },
    /// An array sized from the inputs that this machine cannot hold, refused before it is
    /// allocated ([`memory`]); `alternative` says what to use instead.
    #[error("@{func}: {what} needs {}, more than this machine can hold ({} available); {alternative}", memory::human_bytes(*bytes), memory::human_bytes(*available))]
    Memory {
        func: String,
        /// The array, e.g. `the dense Jacobian (100000 × 100000)`.
        what: String,
        bytes: u128,
        available: u128,
        alternative: String,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The Rust examples of `docs/straight_line.md`, run as doc tests so the page stays true.
#[doc = include_str!("../docs/straight_line.md")]
#[cfg(doctest)]
pub struct StraightLineDoc;

/// What to try after a singular or non-finite inverse product.
fn advice(mode: InverseMode) -> &'static str {
    match mode {
        InverseMode::Dense => "try another point",
        _ => "try the dense mode (pivoting across the whole Jacobian) or another point",
    }
}

/// One over the smallest relative pivot: a lower bound on the equilibrated lump's condition
/// number.
/// The failing pivot ratio as the message prints it: NaN says why it failed.
fn pivot_ratio(pivot: f64) -> String {
    if pivot.is_nan() {
        "NaN (0/0: its row of J is zero at this point)".into()
    } else {
        format!("{pivot:e}")
    }
}

fn condition_estimate(pivot: f64, threshold: f64, pivot_tol: f64) -> f64 {
    let scale = threshold / pivot_tol;
    if pivot > 0.0 {
        scale / pivot
    } else {
        f64::INFINITY
    }
}

/// A fixed set of names (stages, engines, modes) with their spelling and parser.
macro_rules! named {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($variant:ident => $text:literal, $help:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $(#[doc = $help] $variant),*
        }

        impl $name {
            /// Every variant, in order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The spelling in messages and on the command line.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),*
                }
            }

            /// One line saying what the variant is (command-line help).
            pub fn help(self) -> &'static str {
                match self {
                    $($name::$variant => $help),*
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::UnknownName;

            fn from_str(s: &str) -> std::result::Result<$name, $crate::UnknownName> {
                $name::ALL.iter().copied().find(|v| v.name() == s).ok_or_else(|| $crate::UnknownName {
                    what: $what,
                    name: s.to_string(),
                    expected: $name::ALL.iter().map(|v| v.name()).collect::<Vec<_>>().join(", "),
                })
            }
        }
    };
}
pub(crate) use named;

named! {
    /// Which evaluator runs a function.
    Engine, "engine" {
        Jit => "jit", "Native code from Cranelift",
        Interp => "interp", "The reference interpreter",
    }
}

// The enum comes from `named!`, which does not take `#[default]`.
#[allow(clippy::derivable_impls)]
impl Default for Engine {
    fn default() -> Engine {
        Engine::Jit
    }
}

named! {
    /// Which inverse product to compute for a square program.
    InverseMode, "inverse mode" {
        Reverse => "reverse-inverse", "J⁻¹·v, lumps last to first (Pearlmutter & Siskind)",
        Forward => "forward-inverse", "J⁻ᵀ·v, lumps first to last, no tape",
        Dense => "dense-inverse", "J⁻¹·v by the dense Jacobian and one LU (the baseline)",
    }
}

named! {
    /// How a [`Jacobian`] assembles its matrix.
    JacobianMode, "Jacobian mode" {
        Auto => "auto", "Sparse when a colouring needs fewer sweeps than rows and columns, else forward when there are no more inputs than outputs, else reverse",
        Forward => "forward", "Columns by vector JVPs (several directions per call)",
        Reverse => "reverse", "Rows by VJPs (one per output)",
        Sparse => "sparse", "Every nonzero from one compiled program (a colouring baked in), scattered into the dense matrix",
    }
}

named! {
    /// A stage of the pipeline that [`dump`] renders.
    Stage, "stage" {
        Ir => "ir", "The function as parsed",
        Simplified => "simplified", "After constant folding, IEEE-exact identities, CSE and DCE",
        Jvp => "jvp", "The simplified JVP program",
        Vjp => "vjp", "The simplified VJP program",
        Clif => "clif", "Cranelift IR of the program chosen by the mode",
        Asm => "asm", "Machine code of the program chosen by the mode",
        Schedule => "schedule", "The checkpointing schedule of the strategy",
        Lumps => "lumps", "The lump analysis of a square program",
        Dot => "dot", "Graphviz source with the lumps as clusters",
        ReverseInverse => "reverse-inverse", "The simplified reverse-inverse program",
        ForwardInverse => "forward-inverse", "The simplified forward-inverse program",
        Sparsity => "sparsity", "Jacobian and Hessian patterns, colour counts per ordering, ASCII spy plots",
        SparseJacobian => "sparse-jacobian", "The simplified program of the Jacobian's nonzeros",
        SparseHessian => "sparse-hessian", "The simplified program of the Hessian's lower-triangle nonzeros",
    }
}

/// How the compile-once objects ([`Compiled`], [`Gradient`], [`Jacobian`], [`Hessian`],
/// [`checkpoint::CheckpointedGradient`], [`inverse::CompiledInverse`]) evaluate their programs.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Interpreter or native code (default).
    pub engine: Engine,
    /// Code generation, with [`Engine::Jit`].
    pub jit: JitOptions,
    /// Lump sizes and pivot tolerance, for the inverse modes.
    pub inverse: InverseOptions,
}

impl Options {
    /// The default options on `engine`.
    pub fn on(engine: Engine) -> Options {
        Options {
            engine,
            ..Options::default()
        }
    }
}

/// Parse and verify the `.ir` file at `path`; errors carry the file name and a place (invalid
/// UTF-8 included).
pub fn load(path: &Path) -> Result<Vec<Function>> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::Io {
        path: file.clone(),
        message: e.to_string(),
    })?;
    let text =
        adjit_ir::text::decode_source(&bytes).map_err(|e| Error::Parse(format!("{file}:{e}")))?;
    load_str(text, &file)
}

/// Parse and verify source text; `file` names it in error messages. Verifier errors are
/// located in the text (`FILE:LINE:COL`) and quote the user's line.
pub fn load_str(text: &str, file: &str) -> Result<Vec<Function>> {
    let parsed = adjit_ir::text::parse_with_source(text).map_err(|errs| {
        Error::Parse(
            errs.errors
                .iter()
                .map(|e| format!("{file}:{e}"))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })?;
    let lines: Vec<&str> = adjit_ir::text::source_lines(text).collect();
    let mut located = Vec::new();
    let mut funcs = Vec::with_capacity(parsed.len());
    for (f, map) in parsed {
        if let Err(errs) = adjit_ir::verify(&f) {
            for e in &errs.errors {
                let (line, col) = map.place(e.value);
                let mut message = format!("{file}:{line}:{col}: error: {}", e.message);
                if let Some(first) = e.related {
                    let (l, c) = map.place(Some(first));
                    message.push_str(&format!(" (first defined at {l}:{c})"));
                }
                let source = lines.get(line.wrapping_sub(1)).map_or("", |l| l.trim());
                message.push_str(&format!("\n    in: {source}"));
                located.push(message);
            }
        }
        funcs.push(f);
    }
    if !located.is_empty() {
        return Err(Error::Invalid(located.join("\n")));
    }
    Ok(funcs)
}

/// Run a one-shot `mode` of `func` on `engine` with one slice per input part, returning the
/// output parts.
fn one_shot(
    func: &Function,
    mode: Mode,
    engine: Engine,
    inputs: &[&[f64]],
) -> Result<Vec<Vec<f64>>> {
    let compiled = Compiled::with_options(func, mode, &Options::on(engine))?;
    let mut outputs: Vec<Vec<f64>> = compiled
        .layout()
        .output_parts()
        .iter()
        .map(|&(_, len)| vec![0.0; len])
        .collect();
    let mut slices: Vec<&mut [f64]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
    compiled.call_parts(inputs, &mut slices)?;
    Ok(outputs)
}

/// Evaluate `func` at `x`.
pub fn eval(func: &Function, engine: Engine, x: &[f64]) -> Result<Vec<f64>> {
    let mut parts = one_shot(func, Mode::Primal, engine, &[x])?;
    Ok(parts.swap_remove(0))
}

/// Forward mode: outputs `f(x)` and tangents `J·v` (`v` has one entry per float input; the
/// tangents one per float output).
pub fn jvp(func: &Function, engine: Engine, x: &[f64], v: &[f64]) -> Result<(Vec<f64>, Vec<f64>)> {
    let mut parts = one_shot(func, Mode::Jvp, engine, &[x, v])?.into_iter();
    Ok((
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    ))
}

/// Forward mode along several directions in one call (`Mode::JvpVector(k)`, `k` =
/// `tangents.len()`): outputs `f(x)` and one `J·vᵢ` per tangent, in order.
pub fn jvp_vector(
    func: &Function,
    engine: Engine,
    x: &[f64],
    tangents: &[&[f64]],
) -> Result<(Vec<f64>, Vec<Vec<f64>>)> {
    let inputs: Vec<&[f64]> = std::iter::once(x).chain(tangents.iter().copied()).collect();
    let mut parts = one_shot(func, Mode::JvpVector(tangents.len()), engine, &inputs)?;
    let tangent_outputs = parts.split_off(1.min(parts.len()));
    Ok((parts.pop().unwrap_or_default(), tangent_outputs))
}

/// Hessian-vector product of a function with one float output: `f(x)`, `∇f(x)` and `H·v`
/// (`v` has one entry per differentiated float input). `v` is compiled in as literals, so a
/// zero entry contributes nothing: a structural zero of `H·v` is 0 even where a partial is
/// infinite (`x² + √y` at `(1, 0)` along `(1, 0)` gives `(2, 0)`). A compiled HVP
/// (`Compiled` with `Mode::Hvp`) takes `v` at run time and follows IEEE (`0·∞ = NaN`).
pub fn hvp(
    func: &Function,
    engine: Engine,
    x: &[f64],
    v: &[f64],
) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    compile::hvp_along(func, engine, x, v)
}

/// Reverse mode: outputs `f(x)` and gradient `Jᵀ·w` under a memory `strategy`.
pub fn vjp(
    func: &Function,
    engine: Engine,
    strategy: Strategy,
    x: &[f64],
    w: &[f64],
) -> Result<(Vec<f64>, Vec<f64>)> {
    if strategy == Strategy::Tape {
        let mut parts = one_shot(func, Mode::Vjp, engine, &[x, w])?.into_iter();
        return Ok((
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
        ));
    }
    let grad =
        checkpoint::CheckpointedGradient::with_options(func, strategy, &Options::on(engine))?;
    let layout = grad.layout();
    let mut y = vec![0.0; layout.output(Part::Outputs).len()];
    let mut g = vec![0.0; layout.output(Part::Gradient).len()];
    grad.call(x, w, &mut y, &mut g)?;
    Ok((y, g))
}

/// Inverse modes: outputs `f(x)` and `J⁻¹·v` (reverse, dense) or `J⁻ᵀ·v` (forward).
pub fn inverse(
    func: &Function,
    engine: Engine,
    mode: InverseMode,
    x: &[f64],
    v: &[f64],
) -> Result<(Vec<f64>, Vec<f64>)> {
    let inv = inverse::CompiledInverse::with_options(func, mode, &Options::on(engine))?;
    let (mut y, mut out) = (vec![0.0; inv.n()], vec![0.0; inv.n()]);
    inv.call(x, v, &mut y, &mut out)?;
    Ok((y, out))
}

/// Options of [`dump`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DumpOptions {
    /// For [`Stage::Clif`] and [`Stage::Asm`]: which program to lower (default: the primal).
    pub mode: Mode,
    /// For [`Stage::Schedule`]: the strategy.
    pub strategy: Strategy,
    /// For [`Stage::Clif`] and [`Stage::Asm`]: 2 prints the two-point (`F64X2`) kernels that
    /// batches run with [`JitOptions::batch_lanes`] = 2; 0 or 1 the scalar code.
    pub lanes: usize,
    /// For [`Stage::Clif`] and [`Stage::Asm`]: C library calls or adjit's inline routines.
    pub math: adjit_jit::MathImpl,
}

/// Render one stage of the pipeline as text.
pub fn dump(func: &Function, stage: Stage, options: &DumpOptions) -> Result<String> {
    adjit_ir::verify(func)?;
    match stage {
        Stage::Ir => Ok(func.to_string()),
        Stage::Simplified => Ok(adjit_diff::simplify(func).to_string()),
        Stage::Jvp => Ok(adjit_diff::derive(func, Mode::Jvp)?.func.to_string()),
        Stage::Vjp => Ok(adjit_diff::derive(func, Mode::Vjp)?.func.to_string()),
        Stage::Schedule => checkpoint::schedule_text(func, options.strategy),
        Stage::Clif | Stage::Asm => {
            let derived = adjit_diff::derive(func, options.mode)?; // verified above
            let opts = JitOptions {
                batch_lanes: options.lanes,
                math: options.math,
                ..JitOptions::default()
            };
            Ok(if stage == Stage::Clif {
                adjit_jit::clif_text(&derived.func, &opts)?
            } else {
                adjit_jit::asm_text(&derived.func, &opts)?
            })
        }
        Stage::Lumps => inverse::dump_lumps(func, false),
        Stage::Dot => inverse::dump_lumps(func, true),
        // Simplified, like the jvp/vjp stages and like the program CompiledInverse runs.
        Stage::ReverseInverse => {
            Ok(
                inverse::inverse_program(func, InverseMode::Reverse, &Default::default())?
                    .to_string(),
            )
        }
        Stage::ForwardInverse => {
            Ok(
                inverse::inverse_program(func, InverseMode::Forward, &Default::default())?
                    .to_string(),
            )
        }
        Stage::Sparsity => sparse::summary(func),
        Stage::SparseJacobian => Ok(sparse::SparsePlan::new(func, sparse::SparseKind::Jacobian)?
            .program
            .to_string()),
        Stage::SparseHessian => Ok(sparse::SparsePlan::new(func, sparse::SparseKind::Hessian)?
            .program
            .to_string()),
    }
}

/// Compile `mode` of `func` to a relocatable object file for `target` (a target triple such as
/// `aarch64-unknown-linux-gnu`; `None` is the host), with a C header declaring its entry point.
pub fn compile_object(func: &Function, mode: Mode, target: Option<&str>) -> Result<ObjectCode> {
    compile_object_as(func, mode, target, None)
}

/// [`compile_object`] exported as `symbol` (`None`: `adjit_` and the derived program's name
/// made a C identifier, e.g. `adjit_rosen_vjp`). A symbol that is a C or C++ keyword, a
/// reserved identifier, a symbol of the C runtime libraries (`floor`, `dlopen`, `main`) or a
/// name the C standard or POSIX headers define (`NULL`, `size_t`) is refused with
/// [`adjit_jit::JitError::Symbol`].
pub fn compile_object_as(
    func: &Function,
    mode: Mode,
    target: Option<&str>,
    symbol: Option<&str>,
) -> Result<ObjectCode> {
    compile_object_with(func, mode, target, symbol, &JitOptions::default())
}

/// [`compile_object_as`] with code-generation options: `batch_lanes: 2` also exports the
/// two-point (SIMD) kernels as `SYMBOL_x2` on interleaved buffers (see
/// [`ObjectCode::pair_symbol`]); `math: MathImpl::Inline` emits adjit's own math routines
/// (every transcendental, `pow`, `atan2`), so the object imports no math routine.
pub fn compile_object_with(
    func: &Function,
    mode: Mode,
    target: Option<&str>,
    symbol: Option<&str>,
    opts: &JitOptions,
) -> Result<ObjectCode> {
    let derived = derive(func, mode)?;
    object_for(&derived.func, target, symbol, opts)
}

/// [`compile_object`] for an inverse mode of a square program: the object computes
/// `(x, v) -> (y, product, status, pivot, threshold)`, 2n + 3 outputs (status 0: ok; a lump
/// index: singular pivot, whose smallest relative pivot and the tolerance it failed follow;
/// [`adjit_diff::inverse::NOT_FINITE`]: the product is not finite).
pub fn compile_inverse_object(
    func: &Function,
    mode: InverseMode,
    target: Option<&str>,
) -> Result<ObjectCode> {
    compile_inverse_object_as(func, mode, target, None)
}

/// [`compile_inverse_object`] exported as `symbol` (see [`compile_object_as`]).
pub fn compile_inverse_object_as(
    func: &Function,
    mode: InverseMode,
    target: Option<&str>,
    symbol: Option<&str>,
) -> Result<ObjectCode> {
    adjit_ir::verify(func)?;
    let program = inverse::inverse_program(func, mode, &InverseOptions::default())?;
    object_for(&program, target, symbol, &JitOptions::default())
}

pub(crate) fn object_for(
    program: &Function,
    target: Option<&str>,
    symbol: Option<&str>,
    opts: &JitOptions,
) -> Result<ObjectCode> {
    let host = target_lexicon::Triple::host().to_string();
    let symbol = symbol.map_or_else(|| adjit_jit::default_symbol(&program.name), str::to_string);
    Ok(adjit_jit::compile_object_as(
        program,
        target.unwrap_or(&host),
        opts,
        &symbol,
    )?)
}
