//! Compile once, call many times: derived programs as runnable objects.
//!
//! [`derive`] builds the simplified IR of a [`Mode`] with its [`Layout`]; [`Compiled`] prepares
//! it on an engine and checks every call against the layout; [`Gradient`] is the common special
//! case of a scalar function's value and gradient, with the cotangent 1 folded into the code.

use adjit_diff::layout::{Layout, Part};
use adjit_diff::{Derived, Mode};
use std::sync::OnceLock;

use adjit_ir::{Function, Rolled};
use adjit_jit::{CompiledFunction, JitOptions, ObjectCode};

use crate::error::{Error, Result};
use crate::options::{Engine, Options};
use crate::prepared::{
    batch_by_points, batch_picked_by_points, batch_points, check_lengths, copy_picks, Prepared,
    Signature,
};
use crate::runner::Runner;

/// The simplified program of `mode` applied to `func` (which must verify), with its layout.
pub fn derive(func: &Function, mode: Mode) -> Result<Derived> {
    adjit_ir::verify(func)?;
    Ok(adjit_diff::derive(func, mode)?)
}

/// One Hessian-vector product along a direction known now: the HVP with `v` baked in as
/// literals ([`adjit_diff::hvp_along`]), so a zero entry of `v` contributes nothing (no
/// `0·∞ = NaN` from a partial that is infinite at `x`). Returns `(y, ∇f, H·v)`; the lengths of
/// `x` and `v` and the `bool` inputs are checked as [`Compiled::call_parts`] checks them.
pub(crate) fn hvp_along(
    func: &Function,
    engine: crate::options::Engine,
    x: &[f64],
    v: &[f64],
) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    adjit_ir::verify(func)?;
    if func.ret_types.iter().filter(|t| t.is_float()).count() != 1 {
        // The error `derive` gives for an HVP of a function without one float output.
        derive(func, Mode::Hvp)?;
    }
    let layout = Layout::of(func, adjit_diff::layout::Kind::Hvp);
    let name = format!("{}_hvp", func.name);
    let in_lens = [x.len(), v.len()].into_iter();
    Signature::of(func).check(&name, &layout, in_lens, &[], [].into_iter(), x)?;
    let program = adjit_diff::hvp_along(func, v);
    let runner = Runner::new(&program, &Options::on(engine))?;
    let mut out = vec![0.0; layout.n_outputs()];
    runner.run(x, &mut out)?;
    let part = |p: Part| out[layout.output(p)].to_vec();
    Ok((
        part(Part::Outputs),
        part(Part::Gradient),
        part(Part::HessianVector),
    ))
}

/// The program a [`Compiled`] runs: the simplified derived program, or the derived program
/// held as loops (its expansion made only if asked for).
enum Program {
    Flat(Function),
    Rolled {
        rolled: Rolled,
        flat: OnceLock<Function>,
    },
}

impl Program {
    fn name(&self) -> &str {
        match self {
            Program::Flat(func) => &func.name,
            Program::Rolled { rolled, .. } => &rolled.header().name,
        }
    }
}

/// `mode` of `func` derived per template of its loops ([`rolled`]), when [`Options::rolled`]
/// keeps a program of its size rolled on native code and `mode` has a rolled derivative;
/// `None` otherwise (also when its loops hold less than half of it).
pub(crate) fn rolled_program(
    func: &Function,
    mode: Mode,
    opts: &Options,
) -> Result<Option<Rolled>> {
    let scalar = func.ret_types.iter().filter(|t| t.is_float()).count() == 1;
    let wanted = match mode {
        Mode::Primal | Mode::Jvp | Mode::Vjp => true,
        // (No directions: the usual derivation names the error.)
        Mode::JvpVector(k) => k > 0,
        Mode::Gradient | Mode::Hvp => scalar,
    };
    let insts = func.n_insts();
    let keeps = opts.rolled.keeps(insts) && insts >= opts.jit.roll_above;
    if !keeps || !wanted || opts.engine != Engine::Jit {
        return Ok(None);
    }
    adjit_ir::verify(func)?;
    let r = Rolled::from_function(func);
    if 2 * r.n_template_insts() > func.n_insts()
        || !opts.rolled.keeps_staged(insts, r.staged_share())
    {
        return Ok(None);
    }
    let program = match mode {
        Mode::Jvp => adjit_diff::jvp_rolled(&r),
        Mode::JvpVector(k) => adjit_diff::jvp_vector_rolled(&r, k),
        Mode::Vjp => adjit_diff::vjp_rolled(&r),
        Mode::Hvp => adjit_diff::hvp_rolled(&r),
        Mode::Gradient => {
            let mut g = adjit_diff::vjp_rolled_seeded_with_one(&r);
            g.set_function_name(format!("{}_grad", func.name));
            g
        }
        _ => r,
    };
    Ok(Some(program))
}

/// When [`Options::rolled`] keeps a program of its size rolled, on native code: `mode` of
/// `func` (verified here) derived per template of its loops and compiled from the templates
/// ([`adjit_jit::compile_templates`]), never expanded, for the primal, JVP (one or several
/// directions), VJP, gradient and HVP modes of a program of at least
/// [`JitOptions::roll_above`](adjit_jit::JitOptions::roll_above) instructions whose loops
/// hold at least half of it. `None` (derive and compile as
/// usual, simplified) otherwise, or when the rolled plan does not hold the derivative.
/// The rolled derivative is not simplified: `simplify` works on the expansion.
fn rolled(
    func: &Function,
    mode: Mode,
    opts: &Options,
) -> Result<Option<(Rolled, CompiledFunction)>> {
    let Some(program) = rolled_program(func, mode, opts)? else {
        return Ok(None);
    };
    // SAFETY: `program` is a rolled transform of `func`, which `rolled_program` verified (the
    // rolled transforms keep programs valid: their tests verify every output, and debug builds
    // verify here).
    let code = unsafe { adjit_jit::compile_templates_verified(&program, &opts.jit) }?;
    Ok(code.map(|code| (program, code)))
}

/// A derived program, prepared once on an engine ([`Options::engine`]).
///
/// ```
/// let f = adjit::trace(2, |x| x[0] * x[1].sin());
/// let jvp = adjit::Compiled::new(&f, adjit::Mode::Jvp).unwrap();
/// let (mut y, mut dy) = ([0.0], [0.0]);
/// // x = (2, 0.5), ẋ = (1, 0): the parts of the layout, in order.
/// jvp.call_parts(&[&[2.0, 0.5], &[1.0, 0.0]], &mut [&mut y, &mut dy]).unwrap();
/// assert_eq!(dy[0], 0.5f64.sin());
/// assert_eq!(jvp.layout().to_string(), "(x (2) ++ ẋ (2)) -> (y (1) ++ ẏ (1))");
/// ```
pub struct Compiled {
    /// The user's function's signature, for messages and the `bool` check.
    sig: Signature,
    derived: Program,
    layout: Layout,
    /// `layout.n_inputs()` and `n_outputs()`, kept so a call does not sum the parts.
    n_in: usize,
    n_out: usize,
    runner: Runner,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("func", &self.sig.name())
            .field("layout", &self.layout.to_string())
            .field("code", &self.code())
            .finish_non_exhaustive()
    }
}

impl Compiled {
    /// Derive `mode` from `func`, simplify it and JIT-compile it.
    pub fn new(func: &Function, mode: Mode) -> Result<Compiled> {
        Compiled::with_options(func, mode, &Options::default())
    }

    /// [`Compiled::new`] on the engine and with the code-generation options of `opts`; a large
    /// program's repetition is kept rolled from derivation to machine code as
    /// [`Options::rolled`] says ([`Compiled::rolled`] then holds the loops).
    pub fn with_options(func: &Function, mode: Mode, opts: &Options) -> Result<Compiled> {
        let (derived, layout, runner) = match rolled(func, mode, opts)? {
            Some((program, code)) => (
                Program::Rolled {
                    rolled: program,
                    flat: OnceLock::new(),
                },
                Layout::of(func, mode.kind()),
                Runner::Jit(Box::new(code)),
            ),
            None => {
                let Derived {
                    func: program,
                    layout,
                } = derive(func, mode)?;
                let runner = Runner::new(&program, opts)?;
                (Program::Flat(program), layout, runner)
            }
        };
        Ok(Compiled {
            sig: Signature::of(func),
            n_in: layout.n_inputs(),
            n_out: layout.n_outputs(),
            derived,
            layout,
            runner,
        })
    }

    /// Evaluate on the flat `inputs` (the layout's input parts, concatenated), writing the flat
    /// `outputs`. Lengths are checked against the layout.
    ///
    /// Inlined: with native code a call is the lengths, the `bool` inputs' check (none in most
    /// programs) and the JIT's own checked call; errors are built out of line.
    #[inline]
    pub fn call(&self, inputs: &[f64], outputs: &mut [f64]) -> Result<()> {
        // The hot path holds no error value: building or converting one here made the whole
        // function too big to inline, and its register saves cost a tiny program's call more
        // than the program (seed001's gradient in `adjit bench`: 4.8 ns against 2.2 ns).
        if let Runner::Jit(code) = &self.runner {
            let fits = inputs.len() == self.n_in && outputs.len() == self.n_out;
            if fits && self.sig.bools.is_empty() && code.try_call(inputs, outputs) {
                return Ok(());
            }
        }
        self.call_checked(inputs, outputs)
    }

    /// [`Compiled::call`] with every check and error: the interpreter, `bool` inputs, wrong
    /// lengths.
    #[inline(never)]
    fn call_checked(&self, inputs: &[f64], outputs: &mut [f64]) -> Result<()> {
        if inputs.len() != self.n_in || outputs.len() != self.n_out {
            return Err(self.arity_error(inputs.len(), outputs.len()));
        }
        self.sig.check_bools(inputs)?;
        self.runner.run(inputs, outputs)
    }

    /// Built only on the error path, out of line, so a call stays a few instructions.
    #[cold]
    #[inline(never)]
    fn arity_error(&self, inputs: usize, outputs: usize) -> Error {
        crate::prepared::arity_error(self.derived.name(), &self.layout, inputs, outputs)
    }

    /// Evaluate with one slice per part of the layout: `inputs` in the order of
    /// [`Layout::input_parts`], `outputs` in the order of [`Layout::output_parts`]. A wrong
    /// length names the part. Does not allocate after the first call on a thread.
    pub fn call_parts(&self, inputs: &[&[f64]], outputs: &mut [&mut [f64]]) -> Result<()> {
        let layout = &self.layout;
        let name = self.derived.name();
        let in_lens = inputs.iter().map(|s| s.len());
        let out_lens = outputs.iter().map(|s| s.len());
        check_lengths(name, layout, in_lens, layout.output_parts(), out_lens)?;
        if let [x] = inputs {
            // One input part: it is the flat input already.
            self.sig.check_bools(x)?;
            return crate::scratch::with_scratch(0, self.n_out, |_, flat_out| {
                self.runner.run(x, flat_out)?;
                scatter(flat_out, outputs);
                Ok(())
            });
        }
        crate::scratch::with_scratch(self.n_in, self.n_out, |flat_in, flat_out| {
            let mut at = 0;
            for part in inputs {
                flat_in[at..at + part.len()].copy_from_slice(part);
                at += part.len();
            }
            self.sig.check_bools(flat_in)?;
            self.runner.run(flat_in, flat_out)?;
            scatter(flat_out, outputs);
            Ok(())
        })
    }

    /// The derived IR that runs (after simplification); compiled with [`Options::rolled`],
    /// the rolled program's expansion, built at the first call of this method.
    pub fn ir(&self) -> &Function {
        match &self.derived {
            Program::Flat(func) => func,
            Program::Rolled { rolled, flat } => flat.get_or_init(|| rolled.expand()),
        }
    }

    /// The derived program held as loops, when it was compiled rolled ([`Options::rolled`]).
    pub fn rolled(&self) -> Option<&Rolled> {
        match &self.derived {
            Program::Flat(_) => None,
            Program::Rolled { rolled, .. } => Some(rolled),
        }
    }

    /// Which input and output slots hold which part.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The native code (batched and multi-threaded calls live there); `None` on the
    /// interpreter.
    pub fn code(&self) -> Option<&CompiledFunction> {
        self.runner.code()
    }

    pub fn n_inputs(&self) -> usize {
        self.layout.n_inputs()
    }

    pub fn n_outputs(&self) -> usize {
        self.layout.n_outputs()
    }
}

/// Copy the flat outputs into one slice per part (lengths already checked).
fn scatter(flat: &[f64], parts: &mut [&mut [f64]]) {
    let mut at = 0;
    for part in parts.iter_mut() {
        let len = part.len();
        part.copy_from_slice(&flat[at..at + len]);
        at += len;
    }
}

/// Value and gradient of a scalar function, compiled once and callable from many threads.
///
/// ```
/// let f = adjit::trace(2, |x| {
///     let a = 1.0 - x[0];
///     let d = x[1] - x[0] * x[0];
///     a * a + 100.0 * d * d
/// });
/// let grad = adjit::Gradient::new(&f).unwrap();
/// let mut g = [0.0; 2];
/// let y = grad.call(&[0.0, 0.0], &mut g).unwrap();
/// assert_eq!((y, g), (1.0, [-2.0, 0.0]));
/// ```
pub struct Gradient {
    compiled: Compiled,
    /// Outputs of the function (the float one and any `bool`s) and where the float one is.
    n_outputs: usize,
    value_at: usize,
}

impl std::fmt::Debug for Gradient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gradient")
            .field("compiled", &self.compiled)
            .finish_non_exhaustive()
    }
}

impl Gradient {
    /// Compile the gradient of `func`, which must have exactly one float output (`bool`
    /// outputs beside it are allowed and not returned).
    pub fn new(func: &Function) -> Result<Gradient> {
        Gradient::with_options(func, &Options::default())
    }

    /// [`Gradient::new`] on the engine and with the code-generation options of `opts`.
    pub fn with_options(func: &Function, opts: &Options) -> Result<Gradient> {
        Ok(Gradient {
            compiled: Compiled::with_options(func, Mode::Gradient, opts)?,
            n_outputs: func.n_outputs(),
            value_at: func
                .ret_types
                .iter()
                .position(|t| t.is_float())
                .unwrap_or(0),
        })
    }

    /// Writes `∇f(x)` to `grad` (one entry per float input) and returns `f(x)`. Does not
    /// allocate after the first call on a thread.
    ///
    /// Inlined, so that a caller's use of the result needs no 112-byte `Result` in memory: a
    /// small gradient on native code is the lengths, the native call into a stack buffer and
    /// the copies, with no error value on the way (everything else goes out of line).
    #[inline]
    pub fn call(&self, x: &[f64], grad: &mut [f64]) -> Result<f64> {
        let c = &self.compiled;
        if let Runner::Jit(code) = &c.runner {
            let fits = x.len() == c.n_in && grad.len() + self.n_outputs == c.n_out;
            if fits && c.sig.bools.is_empty() {
                // A buffer just large enough: zeroing a 16-slot one costs a 2 ns call a third.
                let done = if c.n_out <= 4 {
                    self.native::<4>(code, x, grad)
                } else if c.n_out <= 16 {
                    self.native::<16>(code, x, grad)
                } else {
                    None
                };
                if let Some(y) = done {
                    return Ok(y);
                }
            }
        }
        self.call_checked(x, grad)
    }

    /// The native call through an `N`-slot stack buffer (`n_out ≤ N`, lengths checked by the
    /// caller); `None` if the code refused the lengths.
    #[inline]
    fn native<const N: usize>(
        &self,
        code: &CompiledFunction,
        x: &[f64],
        grad: &mut [f64],
    ) -> Option<f64> {
        let n_out = self.compiled.n_out;
        let mut out = [0.0; N];
        if !code.try_call(x, &mut out[..n_out]) {
            return None;
        }
        // One number at a time: the native code has just stored each output with an 8-byte
        // store, and a copy by wider loads (what `copy_from_slice` or a vectorised loop
        // becomes) waits for those stores to retire instead of forwarding them (seed001's
        // gradient: 5.1 ns a call against 4.0). `black_box` only keeps the compiler from
        // merging the loads; it changes no value.
        for (g, o) in grad.iter_mut().zip(&out[self.n_outputs..n_out]) {
            *g = std::hint::black_box(*o);
        }
        Some(out[self.value_at])
    }

    /// [`Gradient::call`] with every check and error: the interpreter, `bool` inputs, wrong
    /// lengths, large gradients (through the thread's scratch buffers).
    #[inline(never)]
    fn call_checked(&self, x: &[f64], grad: &mut [f64]) -> Result<f64> {
        let c = &self.compiled;
        let m = self.n_outputs;
        const STACK: usize = 16;
        let mut y = [0.0; STACK];
        let y = y.get_mut(..m).ok_or_else(|| self.too_many_outputs())?;
        c.call_parts(&[x], &mut [y, grad])?;
        Ok(y[self.value_at])
    }

    /// More than 15 `bool` outputs beside the float one: not a gradient anyone asks for.
    #[cold]
    fn too_many_outputs(&self) -> Error {
        Error::Limit {
            func: self.compiled.sig.name().to_string(),
            what: "a gradient returns the value and x̄",
            counted: "outputs",
            limit: 16,
            got: self.n_outputs,
        }
    }

    /// Which input and output slots hold which part (of the gradient program: `(x) -> (y,
    /// x̄)`).
    pub fn layout(&self) -> &Layout {
        self.compiled.layout()
    }

    /// The compiled program `(x) -> (y, ∇y)`.
    pub fn compiled(&self) -> &Compiled {
        &self.compiled
    }
}

/// The triple an object is compiled for (`None`: the host) and the symbol it exports (`None`:
/// the default for the program's `name`).
fn target_and_symbol(name: &str, target: Option<&str>, symbol: Option<&str>) -> (String, String) {
    let target = target.map_or_else(
        || target_lexicon::Triple::host().to_string(),
        str::to_string,
    );
    let symbol = symbol.map_or_else(|| adjit_jit::default_symbol(name), str::to_string);
    (target, symbol)
}

/// [`object_for`] of a rolled program that [`rolled_program`] derived, compiled from its
/// templates ([`adjit_jit::compile_object_rolled`]).
pub(crate) fn rolled_object_for(
    program: &Rolled,
    target: Option<&str>,
    symbol: Option<&str>,
    opts: &JitOptions,
) -> Result<ObjectCode> {
    let (target, symbol) = target_and_symbol(&program.header().name, target, symbol);
    // SAFETY: `program` is a rolled transform of a function `rolled_program` verified (the
    // rolled transforms keep programs valid: their tests verify every output, and debug
    // builds verify here), as for `compile_templates_verified` in `rolled`.
    let obj = unsafe { adjit_jit::compile_object_rolled_verified(program, &target, opts, &symbol) };
    Ok(obj?)
}

/// Compile `program` to an object file for `target` (`None`: the host), exported as `symbol`
/// (`None`: the default for its name).
pub(crate) fn object_for(
    program: &Function,
    target: Option<&str>,
    symbol: Option<&str>,
    opts: &JitOptions,
) -> Result<ObjectCode> {
    let (target, symbol) = target_and_symbol(&program.name, target, symbol);
    Ok(adjit_jit::compile_object_as(
        program, &target, opts, &symbol,
    )?)
}

impl Prepared for Compiled {
    fn name(&self) -> &str {
        self.sig.name()
    }

    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn call_parts(&self, inputs: &[&[f64]], outputs: &mut [&mut [f64]]) -> Result<()> {
        Compiled::call_parts(self, inputs, outputs)
    }

    // Inlined across crates like `Compiled::call`: without it a generic caller (`adjit
    // bench`) paid a call for seed001's 2-ns primal (8.3 → 12.7 ns a call, measured).
    #[inline]
    fn call_flat(&self, inputs: &[f64], outputs: &mut [f64]) -> Result<()> {
        self.call(inputs, outputs)
    }

    /// The native batch ([`CompiledFunction::call_batch_parallel`]: two points per kernel
    /// call where the code has two lanes), after every point's `bool` inputs are checked; on
    /// the interpreter, point by point.
    fn call_batch(&self, inputs: &[f64], outputs: &mut [f64], threads: usize) -> Result<()> {
        let Some(code) = self.code() else {
            return batch_by_points(self, inputs, outputs, threads);
        };
        let points = batch_points(
            self.name(),
            self.n_in,
            self.n_out,
            inputs.len(),
            outputs.len(),
        )?;
        if !self.sig.bools.is_empty() {
            for p in 0..points {
                self.sig.check_bools(&inputs[p * self.n_in..])?;
            }
        }
        Ok(code.call_batch_parallel(inputs, outputs, threads)?)
    }

    /// The native batch into a vector the code writes, never zeroed first (zeroing the
    /// results of 10⁵ points of a small gradient cost a third of its time).
    fn call_batch_vec(&self, inputs: &[f64], threads: usize) -> Result<Vec<f64>> {
        match self.code() {
            Some(code) if self.sig.bools.is_empty() && self.n_in > 0 => {
                batch_points(self.name(), self.n_in, 0, inputs.len(), 0)?;
                Ok(code.call_batch_vec(inputs, threads)?)
            }
            _ => {
                let points = inputs.len() / self.n_in.max(1);
                let mut outputs = vec![0.0; points.saturating_mul(self.n_out)];
                Prepared::call_batch(self, inputs, &mut outputs, threads)?;
                Ok(outputs)
            }
        }
    }

    /// The native batch into a vector the code writes, then the picked ranges copied out.
    fn call_batch_picked(
        &self,
        inputs: &[f64],
        picks: &[std::ops::Range<usize>],
        out: &mut [f64],
        threads: usize,
    ) -> Result<()> {
        if self.code().is_none() || !self.sig.bools.is_empty() || self.n_in == 0 {
            return batch_picked_by_points(self, inputs, picks, out, threads);
        }
        let len: usize = picks.iter().map(|r| r.len()).sum();
        if picks.iter().any(|r| r.end > self.n_out || r.start > r.end) {
            return batch_picked_by_points(self, inputs, picks, out, threads);
        }
        batch_points(self.name(), self.n_in, len, inputs.len(), out.len())?;
        let flat = Prepared::call_batch_vec(self, inputs, threads)?;
        for (src, dst) in flat
            .chunks_exact(self.n_out.max(1))
            .zip(out.chunks_exact_mut(len.max(1)))
        {
            copy_picks(src, picks, dst);
        }
        Ok(())
    }
}

impl Prepared for Gradient {
    fn name(&self) -> &str {
        self.compiled.sig.name()
    }

    fn layout(&self) -> &Layout {
        self.compiled.layout()
    }

    fn call_parts(&self, inputs: &[&[f64]], outputs: &mut [&mut [f64]]) -> Result<()> {
        self.compiled.call_parts(inputs, outputs)
    }

    #[inline]
    fn call_flat(&self, inputs: &[f64], outputs: &mut [f64]) -> Result<()> {
        self.compiled.call(inputs, outputs)
    }

    fn call_batch(&self, inputs: &[f64], outputs: &mut [f64], threads: usize) -> Result<()> {
        Prepared::call_batch(&self.compiled, inputs, outputs, threads)
    }

    fn call_batch_vec(&self, inputs: &[f64], threads: usize) -> Result<Vec<f64>> {
        self.compiled.call_batch_vec(inputs, threads)
    }

    fn call_batch_picked(
        &self,
        inputs: &[f64],
        picks: &[std::ops::Range<usize>],
        out: &mut [f64],
        threads: usize,
    ) -> Result<()> {
        self.compiled.call_batch_picked(inputs, picks, out, threads)
    }
}
