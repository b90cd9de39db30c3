//! Dense derivative matrices, compiled once: [`Jacobian`] (every partial of every float output)
//! and [`Hessian`] (every second partial of a scalar function).
//!
//! Neither is a program of its own. A `Jacobian` compiles one derived program and calls it once
//! per chunk of columns (forward: a vector JVP, `Mode::JvpVector(k)`, seeded with `k` unit
//! directions) or once per row (reverse: a VJP seeded with a unit cotangent); a row (reverse)
//! or column (forward) that comes out with a NaN is computed again by a program seeded with a
//! literal 1, compiled on first need, so another output's or input's `0·NaN` or `0·∞` never
//! reaches a finite entry; a `Hessian`
//! compiles the HVP (`Mode::Hvp`) and calls it once per column, `H·eⱼ`. When the structural
//! pattern ([`adjit_diff::sparsity`]) colours into fewer seeds than that, both instead run the
//! seed-baked sparse program once and scatter its nonzeros; in every mode, entries outside the
//! pattern are written as exact zeros. Derivatives are taken
//! with respect to the **differentiated** float inputs ([`Function::differentiated_params`]):
//! `bool` and `data` inputs have a slot in `x` and no column. The results are row-major in
//! caller buffers whose lengths are checked against the object's [`Layout`]
//! ([`Kind::Jacobian`], [`Kind::Hessian`]); after the first call on a thread, a call on native
//! code does not allocate (the program's flat buffers come from `scratch.rs`).

use adjit_diff::layout::{Kind, Layout, Part};
use adjit_diff::sparsity::{
    jacobian_pattern, sparse_jacobian_column, sparse_jacobian_rows, Coloring, SparsityPattern,
};
use adjit_diff::Mode;
use adjit_ir::Function;
use std::sync::OnceLock;

use crate::compile::derive;
use crate::error::Result;
use crate::options::{Engine, JacobianMode, Options};
use crate::prepared::Signature;
use crate::runner::Runner;
use crate::scratch::with_scratch;
use crate::sparse_plan::{scatter, Analysis, SparseKind, SparsePlan};

/// The most directions one forward call of a [`Jacobian`] carries: the vector JVP's code grows
/// with its direction count, so wider Jacobians are assembled from several calls of one
/// program (the last chunk padded with zero directions).
const MAX_DIRECTIONS: usize = 8;

/// Refuses a dense `rows × cols` matrix of `func` that this machine cannot hold, before
/// anything is analysed or allocated.
fn check_dense(func: &Function, rows: usize, cols: usize) -> Result<()> {
    crate::memory::check_f64s(
        &func.name,
        &format!("the dense Jacobian ({rows} × {cols})"),
        rows as u128 * cols as u128,
        "use the sparse Jacobian (--sparse / SparseJacobian), which stores only the nonzeros",
    )
}

/// The dense Jacobian `J[i][j] = ∂yᵢ/∂xⱼ` of a function, compiled once.
///
/// Rows are the float outputs, columns the differentiated float inputs; `J` is row-major.
/// [`JacobianMode::Auto`] picks forward mode (columns by vector JVPs) when there are no more
/// columns than rows, reverse mode (rows by VJPs) otherwise; both give the same matrix up to
/// rounding.
///
/// ```
/// use adjit::{Jacobian, Type};
/// // Polar to Cartesian coordinates: J = [[cos t, −r sin t], [sin t, r cos t]].
/// let f = adjit::trace_multi("polar", &[Type::F64; 2], |x| {
///     vec![x[0] * x[1].cos(), x[0] * x[1].sin()]
/// });
/// let jac = Jacobian::new(&f).unwrap();
/// let (mut y, mut j) = ([0.0; 2], [0.0; 4]);
/// jac.call(&[2.0, 0.0], &mut y, &mut j).unwrap();
/// assert_eq!(j, [1.0, 0.0, 0.0, 2.0]);
/// assert_eq!(jac.layout().to_string(), "(x (2)) -> (y (2) ++ J (4))");
/// ```
pub struct Jacobian {
    /// The user's signature, to name inputs in messages and find `bool` inputs.
    sig: Signature,
    /// Forward or reverse (never `Auto`).
    mode: JacobianMode,
    /// `(x) -> (y, J)`.
    layout: Layout,
    /// The layout of the derived program that runs.
    program: Layout,
    /// Directions per forward call (1 in reverse mode).
    directions: usize,
    rows: usize,
    cols: usize,
    /// The structural pattern: entries outside it are written as exact zeros.
    pattern: SparsityPattern,
    /// Forward: the vector JVP; reverse: the VJP; sparse: the primal.
    runner: Runner,
    /// Sparse mode: the program of the nonzeros (CSR order of `pattern`).
    sparse: Option<Runner>,
    /// Reverse mode: what rebuilds a row that came out with a NaN.
    repair: Option<Repair>,
}

impl std::fmt::Debug for Jacobian {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jacobian")
            .field("func", &self.sig.name())
            .field("mode", &self.mode)
            .field("layout", &self.layout.to_string())
            .finish_non_exhaustive()
    }
}

/// A second opinion on a row (reverse mode) or a column (forward mode): the program of its
/// nonzeros, one sweep seeded with a literal 1 ([`sparse_jacobian_rows`],
/// [`sparse_jacobian_column`]), compiled the first time it is needed. A runtime unit seed
/// multiplies the other outputs' (reverse) or inputs' (forward) partials by 0, and `0·NaN` or
/// `0·∞` through a shared intermediate turns a finite entry into NaN; with the literal seed the
/// others contribute nothing. Compiling every row this way up front costs a sweep per row
/// (20 × 2000 over 10⁴ operations: 6× the code and 10× the compile time of the one VJP; 100
/// rows: 30× and 57×), so only lines that hold a NaN are rebuilt, each compiled once.
struct Repair {
    func: Function,
    opts: Options,
    lines: Lines,
    programs: Vec<OnceLock<Runner>>,
}

/// What a [`Repair`] rebuilds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lines {
    /// Reverse-mode Jacobian rows.
    Rows,
    /// Forward-mode Jacobian columns.
    Columns,
    /// Hessian columns `H·eⱼ` ([`adjit_diff::hvp_along`], whose last `n` outputs they are).
    HessianColumns,
}

impl Repair {
    fn new(func: &Function, opts: &Options, lines: Lines, n: usize) -> Repair {
        Repair {
            func: func.clone(),
            opts: opts.clone(),
            lines,
            programs: (0..n).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The line's program, compiled on first use (two threads may both compile it; one keeps
    /// it).
    fn program(&self, line: usize, pattern: &SparsityPattern) -> Result<&Runner> {
        if let Some(runner) = self.programs[line].get() {
            return Ok(runner);
        }
        let program = match self.lines {
            Lines::Columns => sparse_jacobian_column(&self.func, pattern, line),
            Lines::Rows => sparse_jacobian_rows(&self.func, pattern, line..line + 1),
            Lines::HessianColumns => {
                let mut unit = vec![0.0; self.programs.len()];
                unit[line] = 1.0;
                adjit_diff::hvp_along(&self.func, &unit)
            }
        };
        let runner = Runner::new(&program, &self.opts)?;
        Ok(self.programs[line].get_or_init(|| runner))
    }
}

impl Jacobian {
    /// Compile the Jacobian of `func`, choosing the mode by its shape, as native code.
    pub fn new(func: &Function) -> Result<Jacobian> {
        Jacobian::with_mode(func, JacobianMode::Auto, &Options::default())
    }

    /// [`Jacobian::new`] on the engine and with the code-generation options of `opts`.
    pub fn with_options(func: &Function, opts: &Options) -> Result<Jacobian> {
        Jacobian::with_mode(func, JacobianMode::Auto, opts)
    }

    /// [`Jacobian::with_options`] in the given mode (`Auto` picks by shape).
    pub fn with_mode(func: &Function, mode: JacobianMode, opts: &Options) -> Result<Jacobian> {
        let layout = Layout::of(func, Kind::Jacobian);
        let cols = func.differentiated_params().count();
        let rows = func.ret_types.iter().filter(|t| t.is_float()).count();
        adjit_ir::verify(func)?;
        check_dense(func, rows, cols)?;
        let (mode, pattern) = match mode {
            JacobianMode::Auto | JacobianMode::Sparse => {
                let analysis = Analysis::of_verified(func, SparseKind::Jacobian)?;
                let sparse_pays = analysis.coloring.n_colors < rows.min(cols);
                if mode == JacobianMode::Sparse || sparse_pays {
                    return Jacobian::sparse(func, analysis.plan(func)?, opts);
                }
                let mode = if cols <= rows {
                    JacobianMode::Forward
                } else {
                    JacobianMode::Reverse
                };
                (mode, analysis.pattern)
            }
            chosen => (chosen, jacobian_pattern(func)),
        };
        let directions = match mode {
            JacobianMode::Forward => cols.clamp(1, MAX_DIRECTIONS),
            _ => 1,
        };
        let derived = match mode {
            JacobianMode::Forward => derive(func, Mode::JvpVector(directions))?,
            _ => derive(func, Mode::Vjp)?,
        };
        let repair = match mode {
            JacobianMode::Forward => Repair::new(func, opts, Lines::Columns, cols),
            _ => Repair::new(func, opts, Lines::Rows, rows),
        };
        Ok(Jacobian {
            sig: Signature::of(func),
            mode,
            layout,
            program: derived.layout,
            directions,
            rows,
            cols,
            pattern,
            runner: Runner::new(&derived.func, opts)?,
            sparse: None,
            repair: Some(repair),
        })
    }

    /// The sparse path: the primal for `y`, the plan's seed-baked program for the nonzeros.
    fn sparse(func: &Function, plan: SparsePlan, opts: &Options) -> Result<Jacobian> {
        let primal = derive(func, Mode::Primal)?;
        Ok(Jacobian {
            sig: Signature::of(func),
            mode: JacobianMode::Sparse,
            layout: Layout::of(func, Kind::Jacobian),
            program: primal.layout,
            directions: plan.coloring.n_colors,
            rows: plan.pattern.nrows(),
            cols: plan.pattern.ncols(),
            runner: Runner::new(&primal.func, opts)?,
            sparse: Some(Runner::new(&plan.program, opts)?),
            repair: None,
            pattern: plan.pattern,
        })
    }

    /// Writes `y = f(x)` (every output) and the row-major `J` (`rows() × cols()` numbers). A
    /// slice of the wrong length is an [`crate::Error::Length`] naming its part (`x`, `y`, `J`).
    pub fn call(&self, x: &[f64], y: &mut [f64], jac: &mut [f64]) -> Result<()> {
        let layout = &self.layout;
        self.sig.check(
            self.sig.name(),
            layout,
            [x.len()].into_iter(),
            layout.output_parts(),
            [y.len(), jac.len()].into_iter(),
            x,
        )?;
        let program = &self.program;
        if let Some(sparse) = &self.sparse {
            self.runner.run(x, y)?;
            return with_scratch(0, self.pattern.nnz(), |_, values| {
                sparse.run(x, values)?;
                scatter(&self.pattern, values, None, jac);
                Ok(())
            });
        }
        with_scratch(
            program.n_inputs(),
            program.n_outputs(),
            |input, output| -> Result<()> {
                input[program.input(Part::Inputs)].copy_from_slice(x);
                match self.mode {
                    JacobianMode::Forward => self.forward(input, output, y, jac)?,
                    _ => self.reverse(input, output, y, jac)?,
                }
                zero_outside(&self.pattern, jac);
                Ok(())
            },
        )?;
        self.repair(x, jac)
    }

    /// Columns `first..first + k` per call, seeded with unit directions.
    fn forward(
        &self,
        input: &mut [f64],
        output: &mut [f64],
        y: &mut [f64],
        jac: &mut [f64],
    ) -> Result<()> {
        let (program, cols) = (&self.program, self.cols);
        let mut first = 0;
        loop {
            let count = (cols - first).min(self.directions);
            for d in 0..self.directions {
                let seed = &mut input[program.input(Part::Tangent(d))];
                seed.fill(0.0);
                if d < count {
                    seed[first + d] = 1.0;
                }
            }
            self.runner.run(input, output)?;
            if first == 0 {
                y.copy_from_slice(&output[program.output(Part::Outputs)]);
            }
            for d in 0..count {
                let column = &output[program.output(Part::OutputTangent(d))];
                for (i, &value) in column.iter().enumerate() {
                    jac[i * cols + first + d] = value;
                }
            }
            first += self.directions;
            if first >= cols {
                return Ok(());
            }
        }
    }

    /// One row per call, seeded with a unit cotangent (one call for `y` when there are no rows).
    fn reverse(
        &self,
        input: &mut [f64],
        output: &mut [f64],
        y: &mut [f64],
        jac: &mut [f64],
    ) -> Result<()> {
        let (program, cols) = (&self.program, self.cols);
        for row in 0..self.rows.max(1) {
            let seed = &mut input[program.input(Part::Cotangent)];
            seed.fill(0.0);
            if row < self.rows {
                seed[row] = 1.0;
            }
            self.runner.run(input, output)?;
            if row == 0 {
                y.copy_from_slice(&output[program.output(Part::Outputs)]);
            }
            if row < self.rows {
                jac[row * cols..(row + 1) * cols]
                    .copy_from_slice(&output[program.output(Part::Gradient)]);
            }
        }
        Ok(())
    }

    /// Every row (reverse mode) or column (forward mode) that holds a NaN again from its
    /// literal-seeded program, so a NaN that is left is the entry's own (the program adds no
    /// other output's or input's terms).
    fn repair(&self, x: &[f64], jac: &mut [f64]) -> Result<()> {
        let (Some(repair), cols) = (&self.repair, self.cols) else {
            return Ok(());
        };
        if !jac.iter().any(|v| v.is_nan()) {
            return Ok(());
        }
        let indptr = self.pattern.indptr();
        if repair.lines == Lines::Columns {
            for col in 0..cols {
                if !(0..self.rows).any(|i| jac[i * cols + col].is_nan()) {
                    continue;
                }
                let program = repair.program(col, &self.pattern)?;
                let rows: Vec<usize> = self
                    .pattern
                    .entries()
                    .filter(|&(_, j)| j == col)
                    .map(|(i, _)| i)
                    .collect();
                with_scratch(0, rows.len(), |_, values| -> Result<()> {
                    program.run(x, values)?;
                    for i in 0..self.rows {
                        jac[i * cols + col] = 0.0;
                    }
                    for (&i, &value) in rows.iter().zip(values.iter()) {
                        jac[i * cols + col] = value;
                    }
                    Ok(())
                })?;
            }
            return Ok(());
        }
        for row in 0..self.rows {
            let entries = &mut jac[row * cols..(row + 1) * cols];
            if !entries.iter().any(|v| v.is_nan()) {
                continue;
            }
            let program = repair.program(row, &self.pattern)?;
            with_scratch(
                0,
                indptr[row + 1] - indptr[row],
                |_, values| -> Result<()> {
                    program.run(x, values)?;
                    entries.fill(0.0);
                    for (&j, &value) in self.pattern.row(row).iter().zip(values.iter()) {
                        entries[j as usize] = value;
                    }
                    Ok(())
                },
            )?;
        }
        Ok(())
    }

    /// The mode that runs: forward, reverse or sparse (`Auto` resolved by the pattern and the
    /// shape).
    pub fn mode(&self) -> JacobianMode {
        self.mode
    }

    /// `(x) -> (y, J)`.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Rows of `J`: the float outputs.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns of `J`: the differentiated float inputs.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Directions per call of the compiled program: in forward mode the number of columns, at
    /// most 8 (wider Jacobians take several calls); 1 in reverse mode; the colours in sparse
    /// mode (one call).
    pub fn directions(&self) -> usize {
        self.directions
    }
}

/// The dense Hessian `H[i][j] = ∂²y/∂xᵢ∂xⱼ` of a function with one float output, compiled once.
///
/// When a star colouring of the Hessian's structural pattern needs fewer than `n` colours, one
/// call of the seed-baked sparse program ([`crate::SparseHessian`]) gives every nonzero and
/// `H` is symmetric by construction. Otherwise column `j` is `H·eⱼ` from the compiled HVP
/// (forward-over-reverse), so `n` calls per Hessian over `n` differentiated float inputs, and
/// `H` is **not symmetrised**: `H[i][j]` and `H[j][i]` come from different sweeps and may differ
/// in the last bits (and differ outright at kinks, where each is the derivative of the
/// conventional gradient, see the guide). Either way, entries outside the structural pattern
/// are exactly 0.
///
/// ```
/// let f = adjit::trace(2, |x| {
///     let a = 1.0 - x[0];
///     let d = x[1] - x[0] * x[0];
///     a * a + 100.0 * d * d
/// });
/// let hess = adjit::Hessian::new(&f).unwrap();
/// let (mut g, mut h) = ([0.0; 2], [0.0; 4]);
/// let y = hess.call(&[1.0, 1.0], &mut g, &mut h).unwrap();
/// assert_eq!((y, g, h), (0.0, [0.0, 0.0], [802.0, -400.0, -400.0, 200.0]));
/// ```
pub struct Hessian {
    sig: Signature,
    /// `(x) -> (y, x̄, H)`.
    layout: Layout,
    /// The layout of the HVP program that runs.
    program: Layout,
    n: usize,
    /// The full symmetric structural pattern: entries outside it are exact zeros.
    pattern: SparsityPattern,
    /// The HVP program, or with `sparse` the gradient program.
    runner: Runner,
    /// When a star colouring needs fewer than `n` products: the program of the lower
    /// triangle's nonzeros.
    sparse: Option<SparseLower>,
    /// Which output is the float one (`bool` outputs may sit beside it).
    value_at: usize,
    /// Dense mode: what rebuilds a column that came out with a NaN.
    repair: Option<Repair>,
}

impl std::fmt::Debug for Hessian {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hessian")
            .field("func", &self.sig.name())
            .field("layout", &self.layout.to_string())
            .field(
                "sparse_colors",
                &self.sparse.as_ref().map(|s| s.coloring.n_colors),
            )
            .finish_non_exhaustive()
    }
}

/// A [`Hessian`]'s sparse mode, from its [`SparsePlan`]: the program of the lower triangle's
/// nonzeros and the mirror that fills the full pattern from them.
struct SparseLower {
    runner: Runner,
    /// For each entry of the full pattern, the lower-triangle value it mirrors.
    mirror: Vec<usize>,
    /// Nonzeros of the lower triangle: the program's outputs.
    nnz: usize,
    /// The star colouring the program was built from: its colours are the Hessian-vector
    /// products folded into the program.
    coloring: Coloring,
}

impl Hessian {
    /// Compile the HVP of `func`, which must have exactly one float output (and no other).
    pub fn new(func: &Function) -> Result<Hessian> {
        Hessian::with_options(func, &Options::default())
    }

    /// [`Hessian::new`] on the engine and with the code-generation options of `opts`.
    pub fn with_options(func: &Function, opts: &Options) -> Result<Hessian> {
        // The function must verify and have one float output; the message names the Hessian.
        adjit_ir::verify(func)?;
        let value_at = adjit_diff::hessian::scalar_output(func, None)?;
        let n = func.differentiated_params().count();
        crate::memory::check_f64s(
            &func.name,
            &format!("the dense Hessian ({n} × {n})"),
            n as u128 * n as u128,
            "use the sparse Hessian (--sparse / SparseHessian) or Hessian-vector products (hvp)",
        )?;
        let analysis = Analysis::of_verified(func, SparseKind::Hessian)?;
        if analysis.coloring.n_colors < n {
            // Fewer products than columns: one call of the seed-baked program, mirrored.
            let plan = analysis.plan(func)?;
            let gradient = derive(func, Mode::Gradient)?;
            let sparse = SparseLower {
                runner: Runner::new(&plan.program, opts)?,
                nnz: plan.pattern.nnz(),
                coloring: plan.coloring,
                mirror: plan.mirror,
            };
            return Ok(Hessian {
                sig: Signature::of(func),
                layout: Layout::of(func, Kind::Hessian),
                program: gradient.layout,
                n,
                runner: Runner::new(&gradient.func, opts)?,
                sparse: Some(sparse),
                // The plan of a Hessian holds its full pattern.
                pattern: plan.full.unwrap_or(plan.pattern),
                value_at,
                repair: None,
            });
        }
        let pattern = analysis.pattern;
        let derived = derive(func, Mode::Hvp)?;
        Ok(Hessian {
            sig: Signature::of(func),
            layout: Layout::of(func, Kind::Hessian),
            program: derived.layout,
            n,
            pattern,
            runner: Runner::new(&derived.func, opts)?,
            sparse: None,
            value_at,
            repair: Some(Repair::new(func, opts, Lines::HessianColumns, n)),
        })
    }

    /// Writes `∇f(x)` to `grad` (`n()` numbers) and the row-major `H` to `hess` (`n() × n()`),
    /// and returns `f(x)`. A slice of the wrong length is an [`crate::Error::Length`] naming
    /// its part (`x`, `x̄`, `H`).
    pub fn call(&self, x: &[f64], grad: &mut [f64], hess: &mut [f64]) -> Result<f64> {
        let layout = &self.layout;
        // `y` is returned, not passed: check the parts after it.
        self.sig.check(
            self.sig.name(),
            layout,
            [x.len()].into_iter(),
            &layout.output_parts()[1..],
            [grad.len(), hess.len()].into_iter(),
            x,
        )?;
        let (program, n) = (&self.program, self.n);
        if let Some(sparse) = &self.sparse {
            return with_scratch(0, program.n_outputs() + sparse.nnz, |_, output| {
                let (gradient_out, values) = output.split_at_mut(program.n_outputs());
                self.runner.run(x, gradient_out)?;
                grad.copy_from_slice(&gradient_out[program.output(Part::Gradient)]);
                sparse.runner.run(x, values)?;
                scatter(&self.pattern, values, Some(&sparse.mirror), hess);
                Ok(gradient_out[program.output(Part::Outputs).start + self.value_at])
            });
        }
        with_scratch(program.n_inputs(), program.n_outputs(), |input, output| {
            input[program.input(Part::Inputs)].copy_from_slice(x);
            let vector = program.input(Part::Vector);
            let column = program.output(Part::HessianVector);
            for j in 0..n.max(1) {
                input[vector.clone()].fill(0.0);
                if j < n {
                    input[vector.start + j] = 1.0;
                }
                self.runner.run(input, output)?;
                for (i, &value) in output[column.clone()].iter().enumerate() {
                    hess[i * n + j] = value;
                }
            }
            grad.copy_from_slice(&output[program.output(Part::Gradient)]);
            zero_outside(&self.pattern, hess);
            Ok(output[program.output(Part::Outputs).start + self.value_at])
        })
        .and_then(|y| self.repair(x, hess).map(|()| y))
    }

    /// Every column that holds a NaN again from `H·eⱼ` with `eⱼ` baked in as literals
    /// ([`adjit_diff::hvp_along`]), so another input's `∞·0` never reaches a finite entry.
    fn repair(&self, x: &[f64], hess: &mut [f64]) -> Result<()> {
        let (Some(repair), n) = (&self.repair, self.n) else {
            return Ok(());
        };
        if !hess.iter().any(|v| v.is_nan()) {
            return Ok(());
        }
        for j in 0..n {
            if !(0..n).any(|i| hess[i * n + j].is_nan()) {
                continue;
            }
            let program = repair.program(j, &self.pattern)?;
            // (y…, ∇f…, H·eⱼ…): every output, the gradient, the column.
            let n_outputs = self.layout.output(Part::Outputs).len() + 2 * n;
            with_scratch(0, n_outputs, |_, output| -> Result<()> {
                program.run(x, output)?;
                for (i, &value) in output[n_outputs - n..].iter().enumerate() {
                    hess[i * n + j] = value;
                }
                Ok(())
            })?;
        }
        zero_outside(&self.pattern, hess);
        Ok(())
    }

    /// `(x) -> (y, x̄, H)`.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Rows and columns of `H`: the differentiated float inputs.
    pub fn n(&self) -> usize {
        self.n
    }
}

/// Set every entry of the row-major `dense` outside `pattern` to exactly 0: it is zero at every
/// point, although a dense sweep may have computed `0·∞ = NaN` for it (a unit seed meeting an
/// infinite partial of an operation that does not depend on that input).
fn zero_outside(pattern: &SparsityPattern, dense: &mut [f64]) {
    let cols = pattern.ncols();
    if cols == 0 {
        return;
    }
    for (i, row) in dense
        .chunks_exact_mut(cols)
        .enumerate()
        .take(pattern.nrows())
    {
        let mut next = pattern.row(i).iter().peekable();
        for (j, value) in row.iter_mut().enumerate() {
            if next.peek().is_some_and(|&&k| k as usize == j) {
                next.next();
            } else {
                *value = 0.0;
            }
        }
    }
}

/// One call of a [`Jacobian`] in `mode` on `engine`: `f(x)` and the row-major `J`.
pub fn jacobian(
    func: &Function,
    engine: Engine,
    mode: JacobianMode,
    x: &[f64],
) -> Result<(Vec<f64>, Vec<f64>)> {
    let jac = Jacobian::with_mode(func, mode, &Options::on(engine))?;
    let mut y = vec![0.0; jac.layout().output(Part::Outputs).len()];
    let what = format!("the dense Jacobian ({} × {})", jac.rows(), jac.cols());
    let alternative = "use the sparse Jacobian (--sparse / SparseJacobian)";
    let mut j = crate::memory::zeros(&func.name, &what, jac.rows() * jac.cols(), alternative)?;
    jac.call(x, &mut y, &mut j)?;
    Ok((y, j))
}

/// One call of a [`Hessian`] on `engine`: `f(x)`, `∇f(x)` and the row-major `H`.
pub fn hessian(func: &Function, engine: Engine, x: &[f64]) -> Result<(f64, Vec<f64>, Vec<f64>)> {
    let hess = Hessian::with_options(func, &Options::on(engine))?;
    let what = format!("the dense Hessian ({0} × {0})", hess.n());
    let alternative = "use the sparse Hessian (--sparse / SparseHessian)";
    let mut h = crate::memory::zeros(&func.name, &what, hess.n() * hess.n(), alternative)?;
    let mut g = vec![0.0; hess.n()];
    let y = hess.call(x, &mut g, &mut h)?;
    Ok((y, g, h))
}

impl crate::prepared::Prepared for Jacobian {
    fn name(&self) -> &str {
        self.sig.name()
    }

    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn call_parts(&self, inputs: &[&[f64]], outputs: &mut [&mut [f64]]) -> Result<()> {
        match (inputs, outputs) {
            ([x], [y, jac]) => self.call(x, y, jac),
            (inputs, outputs) => Err(crate::prepared::parts_error(
                self,
                inputs.len(),
                outputs.len(),
            )),
        }
    }
}

impl crate::prepared::Prepared for Hessian {
    fn name(&self) -> &str {
        self.sig.name()
    }

    /// `(x) -> (y ++ x̄ ++ H)`.
    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn call_parts(&self, inputs: &[&[f64]], outputs: &mut [&mut [f64]]) -> Result<()> {
        match (inputs, outputs) {
            ([x], [y, grad, hess]) => {
                let y_len = self.layout.output(Part::Outputs).len();
                crate::prepared::check_length(
                    self.sig.name(),
                    &self.layout,
                    Part::Outputs,
                    y_len,
                    y.len(),
                )?;
                let value = self.call(x, grad, hess)?;
                if y_len > 1 {
                    // `bool` outputs beside the value: every output from the program's own.
                    self.outputs(x, y)?;
                }
                y[self.value_at] = value;
                Ok(())
            }
            (inputs, outputs) => Err(crate::prepared::parts_error(
                self,
                inputs.len(),
                outputs.len(),
            )),
        }
    }
}

impl Hessian {
    /// Every output of the function at `x` (the value and the `bool`s beside it), from the
    /// program that runs (its inputs after `x`, a direction, held at 0).
    fn outputs(&self, x: &[f64], y: &mut [f64]) -> Result<()> {
        let program = &self.program;
        with_scratch(program.n_inputs(), program.n_outputs(), |input, output| {
            input.fill(0.0);
            input[program.input(Part::Inputs)].copy_from_slice(x);
            self.runner.run(input, output)?;
            y.copy_from_slice(&output[program.output(Part::Outputs)]);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use adjit_ir::random::{random_function, RandomOptions, Rng};
    use adjit_ir::Type;

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// `|a − b| ≤ rel·(1 + |b|)` entrywise.
    fn assert_close(a: &[f64], b: &[f64], rel: f64, what: &str) {
        assert_eq!(a.len(), b.len(), "{what}");
        for (k, (p, q)) in a.iter().zip(b).enumerate() {
            assert!(
                (p - q).abs() <= rel * (1.0 + q.abs()),
                "{what}[{k}]: {p} vs {q}"
            );
        }
    }

    fn random(seed: u64, n_params: usize, n_outputs: usize) -> Function {
        let opts = RandomOptions {
            n_params,
            n_outputs,
            n_insts: 60,
            ..RandomOptions::default()
        };
        random_function(seed, &opts)
    }

    /// Forward columns are the JVPs along unit directions and reverse rows the VJPs along
    /// unit cotangents, bit for bit (where they hold no NaN); the two modes agree to rounding on non-square programs,
    /// including forward Jacobians wider than one chunk of directions.
    #[test]
    fn forward_and_reverse_agree_with_each_other_and_with_single_products() {
        for (seed, n, m) in [(1, 3, 5), (2, 5, 2), (3, 11, 13), (4, 1, 1), (5, 9, 4)] {
            let f = random(seed, n, m);
            let x = Rng::new(seed).vector(n, -2.0, 2.0);
            let fwd = Jacobian::with_mode(&f, JacobianMode::Forward, &Options::default()).unwrap();
            let rev = Jacobian::with_mode(&f, JacobianMode::Reverse, &Options::default()).unwrap();
            let auto = Jacobian::new(&f).unwrap();
            let colors = adjit_diff::sparsity::best_jacobian_coloring(&jacobian_pattern(&f));
            let expected_auto = if colors.n_colors < n.min(m) {
                JacobianMode::Sparse
            } else if n <= m {
                JacobianMode::Forward
            } else {
                JacobianMode::Reverse
            };
            assert_eq!(auto.mode(), expected_auto);
            let (mut y1, mut j1) = (vec![0.0; m], vec![0.0; m * n]);
            let (mut y2, mut j2) = (vec![0.0; m], vec![0.0; m * n]);
            fwd.call(&x, &mut y1, &mut j1).unwrap();
            rev.call(&x, &mut y2, &mut j2).unwrap();
            assert_eq!(bits(&y1), bits(&y2));
            assert_close(&j1, &j2, 1e-12, &format!("@{} forward vs reverse", f.name));
            // Entries outside the structural pattern are +0.0 exactly (a single product may
            // hold −0.0 or 0·∞ there); every other entry is the single product's, bit for bit.
            let pattern = jacobian_pattern(&f);
            let through = |i: usize, j: usize, v: f64| if pattern.contains(i, j) { v } else { 0.0 };
            for col in 0..n {
                let mut e = vec![0.0; n];
                e[col] = 1.0;
                let (_, dy) = crate::jvp(&f, Engine::Jit, &x, &e).unwrap();
                let column: Vec<f64> = (0..m).map(|row| j1[row * n + col]).collect();
                let dy: Vec<f64> = (0..m).map(|row| through(row, col, dy[row])).collect();
                assert_eq!(bits(&column), bits(&dy), "@{} column {col}", f.name);
            }
            for row in 0..m {
                let mut w = vec![0.0; m];
                w[row] = 1.0;
                let (_, g) = crate::vjp(&f, Engine::Jit, crate::Strategy::Tape, &x, &w).unwrap();
                let g: Vec<f64> = (0..n).map(|col| through(row, col, g[col])).collect();
                assert_eq!(
                    bits(&j2[row * n..(row + 1) * n]),
                    bits(&g),
                    "@{} row {row}",
                    f.name
                );
            }
        }
    }

    /// `f` with one more output `acos(u + 3)` of an intermediate `u` drawn by `seed`: NaN, with
    /// a NaN partial, so a cotangent of 0 on it meets `0·NaN` in every row whose cone holds `u`.
    fn with_nan_output(f: &Function, seed: u64) -> Function {
        use adjit_ir::{BinaryOp, InstData, Operand, UnaryOp};
        let mut g = f.clone();
        let floats: Vec<adjit_ir::Value> = g
            .insts()
            .map(|(v, _)| v)
            .filter(|&v| g.ty(v) == Type::F64)
            .collect();
        let u = floats[Rng::new(seed).below(floats.len())];
        let args = [Operand::Value(u), Operand::Const(3.0)];
        let op = BinaryOp::Add;
        let shifted = g.push_inst(Type::F64, InstData::Binary { op, args }, None);
        let arg = shifted;
        let y = g.push_inst(
            Type::F64,
            InstData::Unary {
                op: UnaryOp::Acos,
                arg,
            },
            None,
        );
        g.push_ret(y);
        adjit_ir::verify(&g).unwrap();
        g
    }

    /// Reverse mode equals forward mode wherever forward is finite, and a row whose forward
    /// entries are all finite is never NaN: a zero cotangent contributes nothing, even where
    /// another output's partial through a shared intermediate is NaN or infinite.
    #[test]
    fn reverse_rows_never_pick_up_another_outputs_nan() {
        // The issue's example: y0 = acos(t), y1 = t, t = x0 + x1 + x2, at t = 3.
        let f = crate::trace_multi("acos_t", &[Type::F64; 3], |x| {
            let t = x[0] + x[1] + x[2];
            vec![t.acos(), t]
        });
        let (_, j) = jacobian(&f, Engine::Jit, JacobianMode::Reverse, &[1.0; 3]).unwrap();
        assert_eq!(&j[3..], &[1.0; 3], "row 1 of {j:?}");
        let mut poisoned = Vec::new();
        for seed in 0..400u64 {
            let (n, m) = (2 + seed as usize % 5, 1 + seed as usize % 4);
            let f = with_nan_output(&random(1000 + seed, n, m), seed);
            let x = Rng::new(seed).vector(n, -2.0, 2.0);
            let (_, fwd) = jacobian(&f, Engine::Jit, JacobianMode::Forward, &x).unwrap();
            let (_, rev) = jacobian(&f, Engine::Jit, JacobianMode::Reverse, &x).unwrap();
            let rows = f.ret_types.len();
            for row in 0..rows {
                let (a, b) = (&fwd[row * n..(row + 1) * n], &rev[row * n..(row + 1) * n]);
                let agree = a
                    .iter()
                    .zip(b)
                    .all(|(p, q)| !p.is_finite() || (p - q).abs() <= 1e-12 * (1.0 + p.abs()));
                if !agree {
                    poisoned.push((seed, row, a.to_vec(), b.to_vec()));
                }
            }
        }
        assert!(
            poisoned.is_empty(),
            "{} rows differ from forward mode where it is finite, first {:?}",
            poisoned.len(),
            poisoned.first()
        );
    }

    /// `g` = `f` with one more output, `f`'s first output plus `√(x_p − c)`: at `x_p = c` it is
    /// finite and its partial in `x_p` is `+∞`.
    fn with_infinite_partial(f: &Function, p: usize, c: f64) -> Function {
        use adjit_ir::{BinaryOp, InstData, Operand, UnaryOp};
        let mut g = f.clone();
        let args = [Operand::Value(adjit_ir::Value::new(p)), Operand::Const(c)];
        let op = BinaryOp::Sub;
        let arg = g.push_inst(Type::F64, InstData::Binary { op, args }, None);
        let op = UnaryOp::Sqrt;
        let t = g.push_inst(Type::F64, InstData::Unary { op, arg }, None);
        let args = [Operand::Value(g.rets[0]), Operand::Value(t)];
        let op = BinaryOp::Add;
        let y = g.push_inst(Type::F64, InstData::Binary { op, args }, None);
        g.push_ret(y);
        adjit_ir::verify(&g).unwrap();
        g
    }

    /// Forward mode: a column never picks up another input's infinite or NaN partial (`∞·0`
    /// from a runtime unit tangent): `y = x0 + √x1` at x1 = 0 has ∂y/∂x0 = 1.
    #[test]
    fn forward_columns_never_pick_up_another_inputs_infinity() {
        let f = crate::trace_multi("sqrt_x1", &[Type::F64; 2], |x| {
            vec![x[0] + x[1].sqrt(), x[0] * 2.0]
        });
        for engine in [Engine::Jit, Engine::Interp] {
            let (_, j) = jacobian(&f, engine, JacobianMode::Forward, &[0.5, 0.0]).unwrap();
            assert_eq!(j, [1.0, f64::INFINITY, 2.0, 0.0], "{engine}");
        }
        let mut poisoned = Vec::new();
        for seed in 0..200u64 {
            let (n, m) = (2 + seed as usize % 5, 1 + seed as usize % 4);
            let x = Rng::new(seed).vector(n, -2.0, 2.0);
            let p = Rng::new(seed + 7).below(n);
            let g = with_infinite_partial(&random(3000 + seed, n, m), p, x[p]);
            let (_, fwd) = jacobian(&g, Engine::Jit, JacobianMode::Forward, &x).unwrap();
            // The new row (m) equals row 0 in every column but p.
            for col in (0..n).filter(|&c| c != p) {
                let (a, b) = (fwd[m * n + col], fwd[col]);
                let same = (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-12 * (1.0 + b.abs());
                if !same {
                    poisoned.push((seed, col, a, b));
                }
            }
        }
        assert!(
            poisoned.is_empty(),
            "{} entries differ from the row they copy, first {:?}",
            poisoned.len(),
            poisoned.first()
        );
    }

    /// A dense Hessian column never picks up another input's infinite second partial
    /// (`−∞·0` from a runtime unit direction): `x0·x1 + √x1 + x0²` at (1, 0) has H[1][0] = 1.
    #[test]
    fn hessian_columns_never_pick_up_another_inputs_infinity() {
        let f = crate::trace(2, |x| x[0] * x[1] + x[1].sqrt() + x[0] * x[0]);
        for engine in [Engine::Jit, Engine::Interp] {
            let (_, _, h) = hessian(&f, engine, &[1.0, 0.0]).unwrap();
            assert_eq!(h, [2.0, 1.0, 1.0, f64::NEG_INFINITY], "{engine}");
        }
    }

    /// The one-shot HVP bakes its direction in: `x² + √y` at (1, 0) along (1, 0) is (2, 0),
    /// the Hessian's column, not `0·∞ = NaN` in the structural zero.
    #[test]
    fn one_shot_hvp_has_the_hessians_structural_zeros() {
        let f = crate::trace(2, |x| x[0] * x[0] + x[1].sqrt());
        let (_, _, h) = hessian(&f, Engine::Jit, &[1.0, 0.0]).unwrap();
        for engine in [Engine::Jit, Engine::Interp] {
            let (y, g, hv) = crate::hvp(&f, engine, &[1.0, 0.0], &[1.0, 0.0]).unwrap();
            assert_eq!((y, &g[..1]), (vec![1.0], &[2.0][..]), "{engine}");
            assert_eq!(hv, [h[0], h[2]], "{engine}");
            assert_eq!(hv, [2.0, 0.0], "{engine}");
        }
        let err = crate::hvp(&f, Engine::Jit, &[1.0, 0.0], &[1.0]).unwrap_err();
        assert!(matches!(err, Error::Length { .. }), "{err}");
    }

    /// A dense 10⁵ × 10⁵ Jacobian or Hessian (80 GB) is refused up front with the size and the
    /// sparse alternative, before any analysis or allocation, not aborted by the allocator.
    #[test]
    fn dense_matrices_beyond_memory_are_refused_with_the_sparse_alternative() {
        let n = 100_000;
        let mut b = adjit_ir::Builder::new("identity");
        let x: Vec<adjit_ir::Value> = (0..n)
            .map(|i| b.param(Type::F64, &format!("x{i}")))
            .collect();
        let y: Vec<adjit_ir::Value> = x
            .iter()
            .map(|&v| b.unary(adjit_ir::UnaryOp::Neg, v))
            .collect();
        let f = b.finish(&y);
        for mode in [
            JacobianMode::Auto,
            JacobianMode::Forward,
            JacobianMode::Reverse,
        ] {
            let err = Jacobian::with_mode(&f, mode, &Options::default())
                .map(|_| ())
                .unwrap_err();
            let text = err.to_string();
            assert!(matches!(err, Error::Memory { .. }), "{mode}: {text}");
            assert!(
                text.contains("100000 × 100000") && text.contains("80 GB"),
                "{text}"
            );
            assert!(text.contains("--sparse / SparseJacobian"), "{text}");
        }
        let mut b = adjit_ir::Builder::new("sum_of_squares");
        let x: Vec<adjit_ir::Value> = (0..n)
            .map(|i| b.param(Type::F64, &format!("x{i}")))
            .collect();
        let mut sum = b.mul(x[0], x[0]);
        for &v in &x[1..] {
            let sq = b.mul(v, v);
            sum = b.add(sum, sq);
        }
        let g = b.finish(&[sum]);
        let err = Hessian::new(&g).map(|_| ()).unwrap_err();
        assert!(matches!(err, Error::Memory { .. }), "{err}");
        assert!(err.to_string().contains("SparseHessian"), "{err}");
        // The sparse objects of the same functions fit.
        let sparse = crate::SparseJacobian::with_options(&f, &Options::on(Engine::Interp));
        assert_eq!(sparse.unwrap().nnz(), n);
    }

    /// Chained Rosenbrock in `n` variables plus `x₀·x_{n−1}` (an arrowhead corner): a sparse
    /// Hessian whose star colouring needs fewer than `n` products.
    fn chained(n: usize) -> Function {
        crate::trace(n, |x| {
            let mut sum = x[0] * x[n - 1];
            for i in 0..n - 1 {
                let a = 1.0 - x[i];
                let d = x[i + 1] - x[i] * x[i];
                sum = sum + a * a + 100.0 * d * d + (x[i] * x[i + 1]).sin();
            }
            sum
        })
    }

    /// Every sparse object takes its plan from one place: `SparsePlan`, `SparseHessian` and
    /// `Hessian` in sparse mode (and `SparseJacobian`, `Jacobian` in sparse mode) hold the same
    /// patterns, colourings, mirror and program, and give the same bits; the numbers are those
    /// of the interpreter's column-by-column reference Hessian and of forward mode.
    #[test]
    fn every_sparse_object_is_built_from_the_same_plan() {
        for (n, seed) in [(6, 1u64), (12, 2), (31, 3)] {
            let f = chained(n);
            let x = Rng::new(seed).vector(n, -1.5, 1.5);
            let plan = SparsePlan::new(&f, SparseKind::Hessian).unwrap();
            let sparse = crate::SparseHessian::new(&f).unwrap();
            let hess = Hessian::new(&f).unwrap();
            let Some(lower) = &hess.sparse else {
                panic!(
                    "n = {n}: {} colours, the Hessian is not in sparse mode",
                    plan.coloring.n_colors
                );
            };
            assert_eq!(plan.kind, SparseKind::Hessian);
            assert_eq!(
                (&plan.pattern, sparse.pattern()),
                (sparse.pattern(), &plan.pattern)
            );
            assert_eq!(plan.full.as_ref(), Some(sparse.full_pattern()), "n = {n}");
            assert_eq!(&hess.pattern, sparse.full_pattern(), "n = {n}");
            assert_eq!(&plan.coloring, sparse.coloring(), "n = {n}");
            assert_eq!(&lower.coloring, sparse.coloring(), "n = {n}");
            assert_eq!(lower.nnz, sparse.nnz(), "n = {n}");
            assert_eq!(plan.mirror(), Some(&lower.mirror[..]), "n = {n}");
            assert_eq!(&plan.program, sparse.ir(), "n = {n}");

            let (mut grad, mut dense) = (vec![0.0; n], vec![f64::NAN; n * n]);
            hess.call(&x, &mut grad, &mut dense).unwrap();
            let mut through = vec![f64::NAN; n * n];
            sparse.eval_dense(&x, &mut through).unwrap();
            assert_eq!(bits(&dense), bits(&through), "n = {n}");
            let mut values = vec![0.0; sparse.nnz()];
            sparse.eval(&x, &mut values).unwrap();
            let mut full = vec![0.0; sparse.full_pattern().nnz()];
            sparse.expand(&values, &mut full).unwrap();
            let (pattern, cols) = (sparse.full_pattern(), n);
            for (k, (i, j)) in pattern.entries().enumerate() {
                assert_eq!(
                    full[k].to_bits(),
                    dense[i * cols + j].to_bits(),
                    "H[{i}][{j}]"
                );
            }
            let reference: Vec<f64> = adjit_diff::hessian(&f, &x).unwrap().concat();
            assert_close(&dense, &reference, 1e-12, &format!("H of chained({n})"));

            // The Jacobian of its gradient map: the same plan through three objects.
            let g = crate::derive(&f, Mode::Gradient).unwrap().func;
            let mut g = g;
            g.rets.remove(0);
            g.ret_types.remove(0);
            let plan = SparsePlan::new(&g, SparseKind::Jacobian).unwrap();
            let sparse = crate::SparseJacobian::new(&g).unwrap();
            let jac = Jacobian::new(&g).unwrap();
            assert_eq!(jac.mode(), JacobianMode::Sparse, "n = {n}");
            assert_eq!(plan.mirror(), None);
            assert_eq!(plan.dense_pattern(), sparse.pattern());
            assert_eq!(&jac.pattern, sparse.pattern(), "n = {n}");
            assert_eq!(&plan.coloring, sparse.coloring(), "n = {n}");
            assert_eq!(jac.directions(), sparse.colors(), "n = {n}");
            assert_eq!(&plan.program, sparse.ir(), "n = {n}");
            let (mut y, mut j) = (vec![0.0; n], vec![f64::NAN; n * n]);
            jac.call(&x, &mut y, &mut j).unwrap();
            let mut through = vec![f64::NAN; n * n];
            sparse.eval_dense(&x, &mut through).unwrap();
            assert_eq!(bits(&j), bits(&through), "n = {n}");
            let (_, forward) = jacobian(&g, Engine::Jit, JacobianMode::Forward, &x).unwrap();
            assert_close(&j, &forward, 1e-12, &format!("J of ∇chained({n})"));
            assert_close(&j, &dense, 1e-12, &format!("J of ∇chained({n}) = H"));
        }
    }

    /// A function without one float output gets one error, with one message, from every
    /// entry point that needs a Hessian.
    #[test]
    fn every_hessian_refuses_a_non_scalar_function_with_one_error() {
        let two = crate::trace_multi("two", &[Type::F64; 2], |x| vec![x[0] * x[1], x[1].exp()]);
        let expected = "@two has 2 float outputs; a Hessian needs exactly one";
        let errors: Vec<(&str, Error)> = vec![
            ("Hessian", Hessian::new(&two).map(|_| ()).unwrap_err()),
            (
                "Hessian (interpreter)",
                Hessian::with_options(&two, &Options::on(Engine::Interp))
                    .map(|_| ())
                    .unwrap_err(),
            ),
            (
                "hessian",
                hessian(&two, Engine::Jit, &[1.0, 2.0])
                    .map(|_| ())
                    .unwrap_err(),
            ),
            (
                "SparseHessian",
                crate::SparseHessian::new(&two).map(|_| ()).unwrap_err(),
            ),
            (
                "SparsePlan",
                SparsePlan::new(&two, SparseKind::Hessian)
                    .map(|_| ())
                    .unwrap_err(),
            ),
            (
                "compile_object",
                crate::sparse::compile_object(&two, SparseKind::Hessian, None, None)
                    .map(|_| ())
                    .unwrap_err(),
            ),
            (
                "diff::hessian",
                Error::from(adjit_diff::hessian(&two, &[1.0, 2.0]).unwrap_err()),
            ),
        ];
        for (entry, err) in errors {
            assert_eq!(err.to_string(), expected, "{entry}");
            assert!(
                matches!(
                    &err,
                    Error::Diff(adjit_diff::DiffError::NotScalar {
                        float_outputs: 2,
                        mode: None,
                        ..
                    })
                ),
                "{entry}: {err:?}"
            );
        }
        // The gradient's and the HVP's refusal is the same error, naming the mode.
        for mode in [Mode::Gradient, Mode::Hvp] {
            let err = crate::derive(&two, mode).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("{mode} needs a function with one float output; @two returns (f64, f64)")
            );
            assert!(
                matches!(
                    &err,
                    Error::Derive(adjit_diff::DeriveError::Diff(
                        adjit_diff::DiffError::NotScalar {
                            float_outputs: 2,
                            ..
                        }
                    ))
                ),
                "{err:?}"
            );
        }
        let summary = crate::sparse::summary(&two).unwrap();
        assert!(!summary.contains("Hessian"), "{summary}");
    }

    #[test]
    fn interpreter_and_native_code_agree_bitwise() {
        let f = random(7, 4, 3);
        let x = [0.5, -1.0, 1.5, 0.25];
        for mode in [JacobianMode::Forward, JacobianMode::Reverse] {
            let run = |engine| jacobian(&f, engine, mode, &x).unwrap();
            let (a, b) = (run(Engine::Jit), run(Engine::Interp));
            assert_eq!((bits(&a.0), bits(&a.1)), (bits(&b.0), bits(&b.1)), "{mode}");
        }
        let g = random(8, 4, 1);
        let (a, b) = (
            hessian(&g, Engine::Jit, &x).unwrap(),
            hessian(&g, Engine::Interp, &x).unwrap(),
        );
        assert_eq!(a.0.to_bits(), b.0.to_bits());
        assert_eq!((bits(&a.1), bits(&a.2)), (bits(&b.1), bits(&b.2)));
    }

    /// `ir/examples/rosenbrock.ir`: H = [[2 − 400(y − x²) + 800x², −400x], [−400x, 200]].
    #[test]
    fn rosenbrock_hessian_is_the_analytic_one() {
        let text = include_str!("../ir/examples/rosenbrock.ir");
        let f = crate::load_str(text, "rosenbrock.ir").unwrap().remove(0);
        let hess = Hessian::new(&f).unwrap();
        for (x, y) in [
            (-1.2, 1.0),
            (1.0, 1.0),
            (0.0, 0.0),
            (0.5, 2.0),
            (3.0, -7.25),
        ] {
            let (mut g, mut h) = ([0.0; 2], [0.0; 4]);
            let value = hess.call(&[x, y], &mut g, &mut h).unwrap();
            let d = y - x * x;
            assert_close(
                &[value],
                &[(1.0 - x) * (1.0 - x) + 100.0 * d * d],
                1e-14,
                "y",
            );
            assert_close(
                &g,
                &[-2.0 * (1.0 - x) - 400.0 * x * d, 200.0 * d],
                1e-14,
                "∇",
            );
            let analytic = [
                2.0 - 400.0 * d + 800.0 * x * x,
                -400.0 * x,
                -400.0 * x,
                200.0,
            ];
            assert_close(&h, &analytic, 1e-14, &format!("H at ({x}, {y})"));
        }
    }

    /// The chained Rosenbrock function in 100 variables: a tridiagonal Hessian, compiled once.
    #[test]
    fn hessian_of_a_hundred_inputs() {
        let n = 100;
        let f = crate::trace(n, |x| {
            let mut sum = (1.0 - x[0]) * (1.0 - x[0]);
            for i in 0..n - 1 {
                let a = 1.0 - x[i + 1];
                let d = x[i + 1] - x[i] * x[i];
                sum = sum + a * a + 100.0 * d * d;
            }
            sum
        });
        let hess = Hessian::new(&f).unwrap();
        assert_eq!(
            (hess.n(), hess.layout().output(Part::Hessian).len()),
            (n, n * n)
        );
        let x: Vec<f64> = (0..n).map(|i| 0.01 * i as f64 - 0.3).collect();
        let (mut g, mut h) = (vec![0.0; n], vec![0.0; n * n]);
        hess.call(&x, &mut g, &mut h).unwrap();
        for i in 0..n {
            for j in 0..n {
                let expected = if i == j {
                    let from_left = if i > 0 { 2.0 + 200.0 } else { 2.0 };
                    let from_right = if i + 1 < n {
                        1200.0 * x[i] * x[i] - 400.0 * x[i + 1]
                    } else {
                        0.0
                    };
                    from_left + from_right
                } else if i.abs_diff(j) == 1 {
                    -400.0 * x[i.min(j)]
                } else {
                    0.0
                };
                assert_close(&[h[i * n + j]], &[expected], 1e-12, &format!("H[{i}][{j}]"));
            }
        }
    }

    #[test]
    fn derivatives_skip_data_and_bool_inputs() {
        let fit = adjit_ir::trace::trace_with_data(2, 2, |p, d| {
            let r = p[0] * (p[1] * d[0]).exp() - d[1];
            r * r
        });
        let x = [0.5, -0.25, 2.0, 1.0];
        let hess = Hessian::new(&fit).unwrap();
        assert_eq!(
            hess.layout().to_string(),
            "(x (4)) -> (y (1) ++ x̄ (2) ++ H (4))"
        );
        let (mut g, mut h) = ([0.0; 2], [0.0; 4]);
        hess.call(&x, &mut g, &mut h).unwrap();
        let jac = Jacobian::new(&fit).unwrap();
        assert_eq!(
            (jac.rows(), jac.cols(), jac.mode()),
            (1, 2, JacobianMode::Reverse)
        );
        let (mut y, mut j) = ([0.0], [0.0; 2]);
        jac.call(&x, &mut y, &mut j).unwrap();
        assert_eq!(bits(&j), bits(&g));

        let mut b = adjit_ir::Builder::new("flagged");
        let x0 = b.param(Type::F64, "x");
        let flag = b.param(Type::Bool, "flag");
        let s = b.unary(adjit_ir::UnaryOp::Sin, x0);
        let y0 = b.select(flag, s, x0);
        let f = b.finish(&[y0, flag]);
        let jac = Jacobian::new(&f).unwrap();
        assert_eq!(jac.layout().to_string(), "(x (2)) -> (y (2) ++ J (1))");
        let (mut y, mut j) = ([0.0; 2], [0.0]);
        jac.call(&[0.5, 1.0], &mut y, &mut j).unwrap();
        assert_eq!((y, j), ([0.5f64.sin(), 1.0], [0.5f64.cos()]));
        let err = jac.call(&[0.5, 0.5], &mut y, &mut j).unwrap_err();
        assert!(matches!(err, Error::NotBool { index: 1, .. }), "{err}");
    }

    #[test]
    fn wrong_lengths_name_the_part() {
        let f = random(9, 2, 3);
        let check = |err: Error, part: Part, message: &str| {
            assert!(
                matches!(&err, Error::Length { part: p, .. } if *p == part),
                "{err}"
            );
            assert_eq!(err.to_string(), message);
        };
        let jac = Jacobian::new(&f).unwrap();
        let (mut y, mut j) = ([0.0; 3], [0.0; 6]);
        let layout = "(layout (x (2)) -> (y (3) ++ J (6)))";
        check(
            jac.call(&[1.0], &mut y, &mut j).unwrap_err(),
            Part::Inputs,
            &format!("@random9: x has 1 numbers, expected 2 {layout}"),
        );
        check(
            jac.call(&[1.0, 2.0], &mut y[..2], &mut j).unwrap_err(),
            Part::Outputs,
            &format!("@random9: y has 2 numbers, expected 3 {layout}"),
        );
        check(
            jac.call(&[1.0, 2.0], &mut y, &mut [0.0; 4]).unwrap_err(),
            Part::Jacobian,
            &format!("@random9: J has 4 numbers, expected 6 {layout}"),
        );
        let g = random(10, 2, 1);
        let hess = Hessian::new(&g).unwrap();
        let (mut grad, mut h) = ([0.0; 2], [0.0; 4]);
        let err = hess
            .call(&[1.0, 2.0], &mut grad, &mut [0.0; 2])
            .unwrap_err();
        check(
            err,
            Part::Hessian,
            "@random10: H has 2 numbers, expected 4 (layout (x (2)) -> (y (1) ++ x̄ (2) ++ H (4)))",
        );
        let err = hess.call(&[1.0, 2.0], &mut [0.0; 3], &mut h).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Length {
                    part: Part::Gradient,
                    ..
                }
            ),
            "{err}"
        );
        let err = Hessian::new(&f).map(|_| ()).unwrap_err();
        assert!(matches!(err, Error::Diff(_)), "{err}");
        assert!(
            err.to_string().contains("a Hessian needs exactly one"),
            "{err}"
        );
    }
}
