//! The one-call entry points: load a program, evaluate or differentiate it once, render a
//! stage, compile an object file. Each builds a compile-once object and calls it; the CLI and
//! the tests use them.

use std::path::Path;

use adjit_diff::checkpoint::Strategy;
use adjit_diff::inverse::InverseOptions;
use adjit_diff::layout::Part;
use adjit_diff::Mode;
use adjit_ir::Function;
use adjit_jit::{JitOptions, ObjectCode};

use crate::checkpoint;
use crate::compile::{self, derive, object_for, rolled_object_for, rolled_program, Compiled};
use crate::error::{Error, Result};
use crate::options::{DumpOptions, Engine, InverseMode, Options, Stage};
use crate::sparse;

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
    let inv = crate::inverse::CompiledInverse::with_options(func, mode, &Options::on(engine))?;
    let (mut y, mut out) = (vec![0.0; inv.n()], vec![0.0; inv.n()]);
    inv.call(x, v, &mut y, &mut out)?;
    Ok((y, out))
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
        Stage::Rolled => {
            let derived = adjit_diff::derive(func, options.mode)?; // verified above
            let mut text = rolled_text(&derived.func, &JitOptions::default());
            text.push_str(&templates_text(func, options.mode));
            Ok(text)
        }
        Stage::Lumps => crate::inverse::dump_lumps(func, false),
        Stage::Dot => crate::inverse::dump_lumps(func, true),
        // Simplified, like the jvp/vjp stages and like the program CompiledInverse runs.
        Stage::ReverseInverse => {
            Ok(
                crate::inverse::inverse_program(func, InverseMode::Reverse, &Default::default())?
                    .to_string(),
            )
        }
        Stage::ForwardInverse => {
            Ok(
                crate::inverse::inverse_program(func, InverseMode::Forward, &Default::default())?
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
///
/// A program that [`KeepRolled::Auto`](crate::KeepRolled::Auto) keeps rolled (the primal,
/// JVP, VJP, gradient and HVP modes, from [`KeepRolled::AUTO_ABOVE`](crate::KeepRolled)
/// instructions) is derived per template and compiled from its templates
/// ([`adjit_jit::compile_object_rolled`]): its compile time and memory follow the distinct
/// work, not the length of the trace (the two-point kernels are made from straight-line code
/// only).
pub fn compile_object_with(
    func: &Function,
    mode: Mode,
    target: Option<&str>,
    symbol: Option<&str>,
    opts: &JitOptions,
) -> Result<ObjectCode> {
    let options = Options {
        jit: opts.clone(),
        ..Options::default()
    };
    if opts.batch_lanes < 2 {
        if let Some(program) = rolled_program(func, mode, &options)? {
            return rolled_object_for(&program, target, symbol, opts);
        }
    }
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
    let program = crate::inverse::inverse_program(func, mode, &InverseOptions::default())?;
    object_for(&program, target, symbol, &JitOptions::default())
}

/// The `rolled` stage: which instructions of `func` the JIT runs as loops, the share they
/// cover, and each loop's body (its first iteration, as text, numbered as in the program the
/// JIT lowers).
/// One line on the program held as its loops before derivation ([`adjit_ir::Rolled`]), its
/// derivative taken per template (`jvp_rolled`, `jvp_vector_rolled`, `vjp_rolled`, the
/// gradient's and the HVP's; unsimplified, so not the program above), and that derivative
/// compiled from its templates ([`adjit_jit::compile_templates`]), as `Options::rolled` does.
fn templates_text(func: &Function, mode: Mode) -> String {
    let rolled = adjit_ir::Rolled::from_function(func);
    let held = |r: &adjit_ir::Rolled| {
        format!(
            "{} instructions in {} loop(s), {} held",
            r.n_values() - r.n_params(),
            r.loops().len(),
            r.n_template_insts()
        )
    };
    let scalar = func.ret_types.iter().filter(|t| t.is_float()).count() == 1;
    let derived = match mode {
        Mode::Jvp => Some(("jvp_rolled", adjit_diff::jvp_rolled(&rolled))),
        Mode::JvpVector(k) if k > 0 => Some((
            "jvp_vector_rolled",
            adjit_diff::jvp_vector_rolled(&rolled, k),
        )),
        Mode::Vjp => Some(("vjp_rolled", adjit_diff::vjp_rolled(&rolled))),
        Mode::Gradient if scalar => Some((
            "vjp_rolled_seeded_with_one",
            adjit_diff::vjp_rolled_seeded_with_one(&rolled),
        )),
        Mode::Hvp if scalar => Some(("hvp_rolled", adjit_diff::hvp_rolled(&rolled))),
        _ => None,
    };
    let mut line = format!(
        "; held as loops before derivation (adjit_ir::Rolled): {}",
        held(&rolled)
    );
    if let Some((pass, d)) = &derived {
        line.push_str(&format!(
            "; derived per template (adjit_diff::{pass}, unsimplified): {}",
            held(d)
        ));
    }
    let program = derived.as_ref().map_or(&rolled, |(_, d)| d);
    let compiled = match adjit_jit::compile_templates(program, &JitOptions::default()) {
        Ok(Some(code)) => format!(
            "{} loop(s), {} code bytes, {} workspace bytes",
            code.loops(),
            code.code_bytes(),
            code.workspace_bytes()
        ),
        Ok(None) => "not held by the rolled plan (compiled expanded)".to_string(),
        Err(e) => format!("not compiled ({e})"),
    };
    line.push_str(&format!(
        "; compiled from the templates (adjit_jit::compile_templates): {compiled}"
    ));
    line.push('\n');
    line
}

fn rolled_text(func: &Function, opts: &JitOptions) -> String {
    use std::fmt::Write;
    // The program as the JIT lowers it (scheduled, unless the program order rolled better):
    // the regions' values are numbered in it.
    let (func, regions) = adjit_jit::rolled_program(func, opts);
    let func = &func;
    let n = func.n_insts();
    let covered: usize = regions.iter().map(|r| r.insts()).sum();
    let lowered = n - covered + regions.iter().map(|r| r.lowered()).sum::<usize>();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "; @{}: {n} instructions; {} loop(s) cover {covered} ({:.1}%); {lowered} instructions are lowered",
        func.name,
        regions.len(),
        if n == 0 { 0.0 } else { 100.0 * covered as f64 / n as f64 },
    );
    if regions.is_empty() {
        let _ = writeln!(
            out,
            "; nothing is rolled (programs under {} instructions are not searched, and runs must cover half of a program; see docs/rolling.md)",
            opts.roll_above
        );
        return out;
    }
    // One line per instruction, in order, after the signature line.
    let text = func.to_string();
    let lines: Vec<&str> = text.lines().skip(1).collect();
    for (k, r) in regions.iter().enumerate() {
        let _ = writeln!(out, "loop {k}: {r}; iteration 0:");
        // A nest's row-0 instructions between its inner loop and the next row's follow.
        for &v in r.template.iter().chain(&r.between) {
            if let Some(line) = lines.get(v - func.n_params) {
                let _ = writeln!(out, "  {}", line.trim());
            }
        }
    }
    out
}
