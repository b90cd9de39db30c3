//! Sparse derivative matrices, compiled once: [`SparseJacobian`] and [`SparseHessian`].
//!
//! Each reads the exact structural pattern of its matrix from the IR
//! ([`adjit_diff::sparsity`]), colours it (columns or rows for a Jacobian, whichever needs
//! fewer colours; a star colouring for a Hessian) and compiles **one** program whose outputs
//! are exactly the structurally nonzero entries in CSR order: the seed matrix and the recovery
//! are baked in, so a call is one run of native code into the caller's buffer, with no
//! allocation and no decompression. Entries outside the pattern are zero at every point, and
//! an entry inside never picks up a NaN from another input's infinite partial (`0·∞`).
//!
//! ```
//! use adjit::{SparseJacobian, Type};
//! // A tridiagonal map: yᵢ = x_{i−1} − 2xᵢ + x_{i+1} + xᵢ³.
//! let n = 6;
//! let f = adjit::trace_multi("tri", &vec![Type::F64; n], |x| {
//!     (0..n)
//!         .map(|i| {
//!             let mut y = x[i] * x[i] * x[i] - x[i] * 2.0;
//!             if i > 0 { y = y + x[i - 1]; }
//!             if i + 1 < n { y = y + x[i + 1]; }
//!             y
//!         })
//!         .collect()
//! });
//! let jac = SparseJacobian::new(&f)?;
//! assert_eq!((jac.nnz(), jac.colors()), (16, 3));
//! let mut values = vec![0.0; jac.nnz()];
//! jac.eval(&[1.0; 6], &mut values)?;
//! assert_eq!(&values[..2], &[1.0, 1.0]); // row 0: ∂y₀/∂x₀ = 3 − 2, ∂y₀/∂x₁ = 1
//! assert_eq!(jac.pattern().row(1), &[0, 1, 2]);
//! # Ok::<(), adjit::Error>(())
//! ```

use adjit_diff::layout::{Kind, Layout, Part};
use adjit_diff::sparsity::{Coloring, SparsityPattern};
use adjit_ir::{Function, InstData};

use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::options::Options;
use crate::prepared::{check_length, check_lengths, check_parts, Signature};
use crate::runner::Runner;
use crate::sparse_plan::{expand, scatter, Analysis};
pub use crate::sparse_plan::{SparseKind, SparsePlan};

/// The sparse Jacobian `∂yᵢ/∂xⱼ` of a function (rows: float outputs; columns: differentiated
/// float inputs), compiled once into one program that writes its nonzeros. See the
/// [module docs](self).
pub struct SparseJacobian {
    inner: Sparse,
}

impl std::fmt::Debug for SparseJacobian {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparseJacobian")
            .field("func", &self.inner.sig.name())
            .field("nnz", &self.nnz())
            .field("colors", &self.colors())
            .finish_non_exhaustive()
    }
}

/// The sparse Hessian of a function with one float output: its **lower triangle**
/// (`j ≤ i`) in CSR order, compiled once by forward-over-reverse with a star colouring. The
/// full symmetric matrix is [`SparseHessian::full_pattern`] with values from
/// [`SparseHessian::expand`].
///
/// ```
/// // Chained Rosenbrock: a tridiagonal Hessian, three Hessian-vector products' worth.
/// let n = 5;
/// let f = adjit::trace(n, |x| {
///     (0..n - 1)
///         .map(|i| {
///             let d = x[i + 1] - x[i] * x[i];
///             let a = 1.0 - x[i];
///             d * d * 100.0 + a * a
///         })
///         .sum()
/// });
/// let hess = adjit::SparseHessian::new(&f)?;
/// assert_eq!((hess.nnz(), hess.colors()), (9, 3));
/// let mut lower = vec![0.0; hess.nnz()];
/// hess.eval(&[1.0; 5], &mut lower)?;
/// assert_eq!(&lower[..3], &[802.0, -400.0, 1002.0]); // H₀₀, H₁₀, H₁₁
/// # Ok::<(), adjit::Error>(())
/// ```
pub struct SparseHessian {
    /// Its plan holds the full symmetric pattern and the mirror.
    inner: Sparse,
}

impl std::fmt::Debug for SparseHessian {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparseHessian")
            .field("func", &self.inner.sig.name())
            .field("nnz", &self.nnz())
            .field("colors", &self.colors())
            .finish_non_exhaustive()
    }
}

/// What both objects hold: the plan of the nonzeros and its compiled program.
struct Sparse {
    sig: Signature,
    plan: SparsePlan,
    layout: Layout,
    runner: Runner,
    /// The positions (CSR order) of the nonzeros whose value depends on the inputs: every
    /// other one is a constant of the program ([`varying_entries`]).
    varying: Vec<usize>,
    /// `(x) -> (varying nz)`, for [`Sparse::eval_varying`].
    varying_layout: Layout,
    /// The program of the varying nonzeros alone, compiled on the first
    /// [`Sparse::eval_varying`]: objects that never call it do not pay its compile.
    varying_runner: OnceLock<Runner>,
    opts: Options,
}

impl Sparse {
    /// Plan (verifying `func`) and compile the matrix of `kind`.
    fn new(func: &Function, kind: SparseKind, opts: &Options) -> Result<Sparse> {
        let plan = SparsePlan::new(func, kind)?;
        let varying = varying_entries(&plan.program);
        Ok(Sparse {
            sig: Signature::of(func),
            layout: Layout::of(func, Kind::Nonzeros(plan.pattern.nnz())),
            varying_layout: Layout::of(func, Kind::Nonzeros(varying.len())),
            runner: Runner::new(&plan.program, opts)?,
            varying,
            varying_runner: OnceLock::new(),
            opts: opts.clone(),
            plan,
        })
    }

    /// Checks a call's lengths (`x`: every input; `values`: the one output part of `layout`,
    /// `n_out` numbers) and its `bool` inputs.
    fn check_call(&self, layout: &Layout, n_out: usize, x: &[f64], values: &[f64]) -> Result<()> {
        if x.len() != self.sig.n_params() || values.len() != n_out {
            check_lengths(
                self.sig.name(),
                layout,
                [x.len()].into_iter(),
                layout.output_parts(),
                [values.len()].into_iter(),
            )?;
        }
        self.sig.check_bools(x)
    }

    /// Writes the nonzeros at [`Sparse::varying`] positions, compact, compiling their
    /// program on the first call.
    fn eval_varying(&self, x: &[f64], values: &mut [f64]) -> Result<()> {
        self.check_call(&self.varying_layout, self.varying.len(), x, values)?;
        let runner = match self.varying_runner.get() {
            Some(runner) => runner,
            None => {
                let program = varying_program(&self.plan.program, &self.varying);
                // Two threads may both compile on a first call; the first to finish is kept
                // and the other's code is dropped, so every caller runs the same program.
                let _ = self.varying_runner.set(Runner::new(&program, &self.opts)?);
                self.varying_runner.get().ok_or_else(|| Error::Internal {
                    func: self.sig.name().to_string(),
                    what: "the program of the varying nonzeros was not kept",
                })?
            }
        };
        runner.run(x, values)
    }

    /// Writes the varying nonzeros into `values`, all [`Sparse::eval`]'s numbers, in place.
    fn refresh(&self, x: &[f64], values: &mut [f64]) -> Result<()> {
        let (name, layout) = (self.sig.name(), &self.layout);
        check_length(
            name,
            layout,
            Part::Nonzeros,
            self.plan.pattern.nnz(),
            values.len(),
        )?;
        crate::scratch::with_scratch(0, self.varying.len(), |_, varying| {
            self.eval_varying(x, varying)?;
            for (&at, &v) in self.varying.iter().zip(varying.iter()) {
                values[at] = v;
            }
            Ok(())
        })
    }

    fn eval(&self, x: &[f64], values: &mut [f64]) -> Result<()> {
        self.check_call(&self.layout, self.plan.pattern.nnz(), x, values)?;
        self.runner.run(x, values)
    }
}

impl SparseJacobian {
    /// Analyse, colour and compile the sparse Jacobian of `func` as native code.
    pub fn new(func: &Function) -> Result<SparseJacobian> {
        SparseJacobian::with_options(func, &Options::default())
    }

    /// [`SparseJacobian::new`] on the engine and with the code-generation options of `opts`
    /// (the interpreter gives the same bits).
    pub fn with_options(func: &Function, opts: &Options) -> Result<SparseJacobian> {
        Ok(SparseJacobian {
            inner: Sparse::new(func, SparseKind::Jacobian, opts)?,
        })
    }

    /// Writes the nonzeros of `J` at `x` (every input of the function, `data` and `bool`
    /// included) to `values` ([`SparseJacobian::nnz`] numbers, CSR order of
    /// [`SparseJacobian::pattern`]). Does not allocate.
    pub fn eval(&self, x: &[f64], values: &mut [f64]) -> Result<()> {
        self.inner.eval(x, values)
    }

    /// [`SparseJacobian::eval`] into the dense row-major `J` (`rows() × cols()`), every entry
    /// outside the pattern exactly 0.
    pub fn eval_dense(&self, x: &[f64], dense: &mut [f64]) -> Result<()> {
        eval_dense(&self.inner, x, dense)
    }

    /// The positions, in the CSR order of [`SparseJacobian::eval`]'s values, of the nonzeros
    /// that depend on the point. Every other nonzero is the same constant at every point (the
    /// linear part of the function: a stencil's off-diagonal weights), so a caller that keeps
    /// its values between calls needs to write them once, with one
    /// [`SparseJacobian::eval`], and then only these, with
    /// [`SparseJacobian::eval_varying`].
    ///
    /// ```
    /// use adjit::{SparseJacobian, Type};
    /// // yᵢ = x_{i−1} − 2xᵢ + x_{i+1} + xᵢ³: only the diagonal, 3xᵢ² − 2, depends on x.
    /// let n = 4;
    /// let f = adjit::trace_multi("tri", &vec![Type::F64; n], |x| {
    ///     (0..n)
    ///         .map(|i| {
    ///             let mut y = x[i] * x[i] * x[i] - x[i] * 2.0;
    ///             if i > 0 { y = y + x[i - 1]; }
    ///             if i + 1 < n { y = y + x[i + 1]; }
    ///             y
    ///         })
    ///         .collect()
    /// });
    /// let jac = SparseJacobian::new(&f)?;
    /// assert_eq!(jac.varying(), &[0, 3, 6, 9]); // the diagonal of a 10-nonzero pattern
    /// let mut values = vec![0.0; jac.nnz()];
    /// jac.eval(&[1.0; 4], &mut values)?; // every entry, once
    /// let mut diagonal = vec![0.0; jac.varying().len()];
    /// jac.eval_varying(&[2.0; 4], &mut diagonal)?; // then only what moves, compact
    /// assert_eq!(diagonal, [10.0; 4]);
    /// jac.refresh(&[2.0; 4], &mut values)?; // or in place
    /// let mut all = vec![0.0; jac.nnz()];
    /// jac.eval(&[2.0; 4], &mut all)?;
    /// assert_eq!(values, all);
    /// # Ok::<(), adjit::Error>(())
    /// ```
    pub fn varying(&self) -> &[usize] {
        &self.inner.varying
    }

    /// Writes the nonzeros at [`SparseJacobian::varying`]'s positions at `x`, in that order,
    /// to `values` (`varying().len()` numbers), and nothing else: the same bits as
    /// [`SparseJacobian::eval`] writes there. Its program is compiled on the first call (the
    /// error of that compile is returned), so objects that never call it do not pay for it.
    pub fn eval_varying(&self, x: &[f64], values: &mut [f64]) -> Result<()> {
        self.inner.eval_varying(x, values)
    }

    /// Writes the nonzeros at [`SparseJacobian::varying`]'s positions at `x` into `values`,
    /// the full CSR values of an earlier [`SparseJacobian::eval`] (at any point), and leaves
    /// the constant ones as they are: `values` is then what `eval(x)` writes. For a caller
    /// that hands the whole matrix to a solver each step (Bratu 300 × 300: 1.2× the residual,
    /// against 1.5× for `eval`, which also rewrites the −1 entries of the stencil).
    pub fn refresh(&self, x: &[f64], values: &mut [f64]) -> Result<()> {
        self.inner.refresh(x, values)
    }

    /// The pattern (CSR); `pattern().transpose()` is its CSC form.
    pub fn pattern(&self) -> &SparsityPattern {
        &self.inner.plan.pattern
    }

    /// `values` (from [`SparseJacobian::eval`]) as a `faer` sparse matrix in CSR form, ready for
    /// `faer`'s sparse LU (`.sp_lu()`); the crate is re-exported as [`crate::faer`].
    ///
    /// ```
    /// use adjit::faer::linalg::solvers::Solve;
    /// let f = adjit::trace_multi("f", &[adjit::Type::F64; 2], |x| vec![x[0] * 2.0, x[1].exp()]);
    /// let jac = adjit::SparseJacobian::new(&f)?;
    /// let mut values = vec![0.0; jac.nnz()];
    /// jac.eval(&[1.0, 0.0], &mut values)?;
    /// let lu = jac.to_faer(&values)?.sp_lu().expect("nonsingular");
    /// let mut rhs = adjit::faer::Mat::<f64>::from_fn(2, 1, |i, _| [4.0, 3.0][i]);
    /// lu.solve_in_place(&mut rhs); // J⁻¹·(4, 3) = (2, 3)
    /// assert_eq!((rhs[(0, 0)], rhs[(1, 0)]), (2.0, 3.0));
    /// # Ok::<(), adjit::Error>(())
    /// ```
    pub fn to_faer(&self, values: &[f64]) -> Result<faer::sparse::SparseRowMat<usize, f64>> {
        to_faer(&self.inner, &self.inner.plan.pattern, values)
    }

    /// The colouring the program was built from.
    pub fn coloring(&self) -> &Coloring {
        &self.inner.plan.coloring
    }

    /// The number of colours: forward directions (columns) or reverse sweeps (rows).
    pub fn colors(&self) -> usize {
        self.inner.plan.coloring.n_colors
    }

    pub fn nnz(&self) -> usize {
        self.inner.plan.pattern.nnz()
    }

    /// Rows of `J`: the float outputs.
    pub fn rows(&self) -> usize {
        self.inner.plan.pattern.nrows()
    }

    /// Columns of `J`: the differentiated float inputs.
    pub fn cols(&self) -> usize {
        self.inner.plan.pattern.ncols()
    }

    /// `(x) -> (nz)`.
    pub fn layout(&self) -> &Layout {
        &self.inner.layout
    }

    /// The program that runs, `(x…) -> (nz…)`, simplified.
    pub fn ir(&self) -> &Function {
        &self.inner.plan.program
    }

    /// The native code; `None` on the interpreter.
    pub fn code(&self) -> Option<&adjit_jit::CompiledFunction> {
        self.inner.runner.code()
    }
}

impl SparseHessian {
    /// Analyse, star-colour and compile the sparse Hessian of `func`, which must have exactly
    /// one float output, as native code.
    pub fn new(func: &Function) -> Result<SparseHessian> {
        SparseHessian::with_options(func, &Options::default())
    }

    /// [`SparseHessian::new`] on the engine and with the code-generation options of `opts`.
    pub fn with_options(func: &Function, opts: &Options) -> Result<SparseHessian> {
        Ok(SparseHessian {
            inner: Sparse::new(func, SparseKind::Hessian, opts)?,
        })
    }

    /// Writes the lower triangle of `H` at `x` (every input, `data` and `bool` included) to
    /// `lower` ([`SparseHessian::nnz`] numbers, CSR order of [`SparseHessian::pattern`]).
    /// Does not allocate.
    pub fn eval(&self, x: &[f64], lower: &mut [f64]) -> Result<()> {
        self.inner.eval(x, lower)
    }

    /// The values of the full symmetric pattern ([`SparseHessian::full_pattern`], CSR order)
    /// from the lower triangle's.
    pub fn expand(&self, lower: &[f64], full: &mut [f64]) -> Result<()> {
        let layout = &self.inner.layout;
        let name = self.inner.sig.name();
        // `lower` is the nonzeros object's output, not a call: its part alone.
        check_parts(
            name,
            layout,
            layout.output_parts(),
            [lower.len()].into_iter(),
        )?;
        let pattern = self.full_pattern();
        check_length(name, layout, Part::Hessian, pattern.nnz(), full.len())?;
        expand(&self.inner.plan.mirror, lower, full);
        Ok(())
    }

    /// [`SparseHessian::eval`] into the dense row-major symmetric `H` (`n() × n()`), every
    /// entry outside the pattern exactly 0.
    pub fn eval_dense(&self, x: &[f64], dense: &mut [f64]) -> Result<()> {
        eval_dense(&self.inner, x, dense)
    }

    /// The positions, in the CSR order of [`SparseHessian::eval`]'s lower triangle, of the
    /// entries that depend on the point; every other one is a constant (a quadratic term's).
    /// See [`SparseJacobian::varying`].
    pub fn varying(&self) -> &[usize] {
        &self.inner.varying
    }

    /// Writes the lower-triangle entries at [`SparseHessian::varying`]'s positions at `x`, in
    /// that order, to `values` (`varying().len()` numbers): the same bits as
    /// [`SparseHessian::eval`] writes there. Compiled on the first call.
    pub fn eval_varying(&self, x: &[f64], values: &mut [f64]) -> Result<()> {
        self.inner.eval_varying(x, values)
    }

    /// Writes the entries at [`SparseHessian::varying`]'s positions at `x` into `lower`, the
    /// lower triangle of an earlier [`SparseHessian::eval`] (at any point), leaving the
    /// constant ones: `lower` is then what `eval(x)` writes. See [`SparseJacobian::refresh`].
    pub fn refresh(&self, x: &[f64], lower: &mut [f64]) -> Result<()> {
        self.inner.refresh(x, lower)
    }

    /// The pattern of the lower triangle (CSR), the layout of [`SparseHessian::eval`].
    pub fn pattern(&self) -> &SparsityPattern {
        &self.inner.plan.pattern
    }

    /// The full symmetric pattern (CSR; also its own CSC form).
    pub fn full_pattern(&self) -> &SparsityPattern {
        self.inner.plan.dense_pattern()
    }

    /// The full symmetric matrix of the lower-triangle `values` (from [`SparseHessian::eval`])
    /// as a `faer` sparse matrix in CSR form.
    pub fn to_faer(&self, values: &[f64]) -> Result<faer::sparse::SparseRowMat<usize, f64>> {
        let pattern = self.full_pattern();
        let mut full = vec![0.0; pattern.nnz()];
        self.expand(values, &mut full)?;
        to_faer(&self.inner, pattern, &full)
    }

    /// The star colouring the program was built from.
    pub fn coloring(&self) -> &Coloring {
        &self.inner.plan.coloring
    }

    /// The number of colours: Hessian-vector products folded into the program.
    pub fn colors(&self) -> usize {
        self.inner.plan.coloring.n_colors
    }

    /// Nonzeros of the lower triangle.
    pub fn nnz(&self) -> usize {
        self.inner.plan.pattern.nnz()
    }

    /// Rows and columns of `H`: the differentiated float inputs.
    pub fn n(&self) -> usize {
        self.full_pattern().nrows()
    }

    /// `(x) -> (nz)`.
    pub fn layout(&self) -> &Layout {
        &self.inner.layout
    }

    /// The program that runs, `(x…) -> (nz…)`, simplified.
    pub fn ir(&self) -> &Function {
        &self.inner.plan.program
    }

    /// The native code; `None` on the interpreter.
    pub fn code(&self) -> Option<&adjit_jit::CompiledFunction> {
        self.inner.runner.code()
    }
}

/// The positions of the outputs of `program` that are not `const` instructions: the
/// nonzeros whose value depends on the inputs. A nonzero the program computes from its
/// inputs but which happens to be constant (`x − x`) stays varying, which is only slower.
fn varying_entries(program: &Function) -> Vec<usize> {
    let constant = |v| matches!(program.inst(v), Some(InstData::Const { .. }));
    (program.rets.iter().enumerate())
        .filter(|&(_, &v)| !constant(v))
        .map(|(k, _)| k)
        .collect()
}

/// `program` returning only its outputs at `varying`, without the instructions only the
/// others needed.
fn varying_program(program: &Function, varying: &[usize]) -> Function {
    let mut out = program.clone();
    out.rets = varying.iter().map(|&k| program.rets[k]).collect();
    out.ret_types = varying.iter().map(|&k| program.ret_types[k]).collect();
    adjit_diff::simplify::dce(&out)
}

/// `values` of `pattern` as a `faer` CSR matrix (lengths checked).
fn to_faer(
    sparse: &Sparse,
    pattern: &SparsityPattern,
    values: &[f64],
) -> Result<faer::sparse::SparseRowMat<usize, f64>> {
    let (name, layout) = (sparse.sig.name(), &sparse.layout);
    check_length(name, layout, Part::Nonzeros, pattern.nnz(), values.len())?;
    let symbolic = faer::sparse::SymbolicSparseRowMat::new_checked(
        pattern.nrows(),
        pattern.ncols(),
        pattern.indptr().to_vec(),
        None,
        pattern.indices().iter().map(|&j| j as usize).collect(),
    );
    Ok(faer::sparse::SparseRowMat::new(symbolic, values.to_vec()))
}

/// Evaluate `sparse` and scatter its values (through the mirror, for a Hessian) into the
/// row-major `dense`, zeros outside the pattern.
fn eval_dense(sparse: &Sparse, x: &[f64], dense: &mut [f64]) -> Result<()> {
    let (pattern, mirror) = (sparse.plan.dense_pattern(), sparse.plan.mirror());
    let (rows, cols) = pattern.shape();
    let part = match sparse.plan.kind {
        SparseKind::Hessian => Part::Hessian,
        SparseKind::Jacobian => Part::Jacobian,
    };
    check_length(
        sparse.sig.name(),
        &sparse.layout,
        part,
        rows * cols,
        dense.len(),
    )?;
    crate::scratch::with_scratch(0, sparse.plan.pattern.nnz(), |_, values| {
        sparse.eval(x, values)?;
        scatter(pattern, values, mirror, dense);
        Ok(())
    })
}

/// Patterns up to this many rows and columns get an ASCII spy plot in [`summary`].
const SPY_LIMIT: usize = 64;

/// The `sparsity` stage of `adjit dump`: for the Jacobian (and the Hessian, for a function with
/// one float output) the shape, the nonzeros, the colour count of every ordering beside the
/// densest row, the colouring chosen and, for small matrices, an ASCII spy plot.
pub fn summary(func: &Function) -> Result<String> {
    use std::fmt::Write as _;
    adjit_ir::verify(func)?;
    let mut out = String::new();
    let Analysis {
        pattern: jac,
        coloring: chosen,
        ..
    } = Analysis::of_verified(func, SparseKind::Jacobian)?;
    let _ = writeln!(out, "; Jacobian of @{}", func.name);
    describe(&mut out, &jac, "columns", |o| {
        adjit_diff::sparsity::color_columns(&jac, o).n_colors
    });
    describe(&mut out, &jac, "rows", |o| {
        adjit_diff::sparsity::color_rows(&jac, o).n_colors
    });
    let _ = writeln!(
        out,
        ";   chosen: {} colours by {} ({}), lower bound {}",
        chosen.n_colors,
        chosen.kind.name(),
        chosen.ordering,
        match chosen.kind {
            adjit_diff::sparsity::ColoringKind::Rows => jac.transpose().max_row_len(),
            _ => jac.max_row_len(),
        }
    );
    spy(&mut out, &jac);
    if adjit_diff::hessian::scalar_output(func, None).is_ok() {
        let Analysis {
            pattern: hess,
            coloring: star,
            ..
        } = Analysis::of_verified(func, SparseKind::Hessian)?;
        let _ = writeln!(out, "; Hessian of @{} (full, symmetric)", func.name);
        describe(&mut out, &hess, "star", |o| {
            adjit_diff::sparsity::color_star(&hess, o).n_colors
        });
        let _ = writeln!(
            out,
            ";   chosen: {} colours, star ({}); lower triangle {} nonzeros",
            star.n_colors,
            star.ordering,
            hess.lower_triangle().nnz()
        );
        spy(&mut out, &hess);
    }
    Ok(out)
}

fn describe(
    out: &mut String,
    pattern: &SparsityPattern,
    what: &str,
    mut colors: impl FnMut(adjit_diff::sparsity::Ordering) -> usize,
) {
    use std::fmt::Write as _;
    if what != "rows" {
        let (m, n) = pattern.shape();
        let _ = writeln!(
            out,
            ";   shape {m}×{n}, {} nonzeros ({:.3} %), densest row {}",
            pattern.nnz(),
            100.0 * pattern.density(),
            pattern.max_row_len()
        );
    }
    let counts: Vec<String> = adjit_diff::sparsity::Ordering::ALL
        .iter()
        .map(|&o| format!("{o} {}", colors(o)))
        .collect();
    let _ = writeln!(out, ";   {what}: {}", counts.join(", "));
}

fn spy(out: &mut String, pattern: &SparsityPattern) {
    if pattern.nrows() <= SPY_LIMIT && pattern.ncols() <= SPY_LIMIT && pattern.ncols() > 0 {
        out.push_str(&pattern.to_string());
    }
}

/// Compile the sparse matrix of `kind` of `func` to an object for `target` (`None`: the host),
/// exported as `symbol` (`None`: `adjit_NAME_sparse_jacobian` or `adjit_NAME_sparse_hessian`; see
/// [`crate::compile_object_as`]); the C header also holds the pattern as static arrays
/// (`SYMBOL_ROWS`, `SYMBOL_COLS`, `SYMBOL_NNZ`, `symbol_indptr`, `symbol_indices`).
pub fn compile_object(
    func: &Function,
    kind: SparseKind,
    target: Option<&str>,
    symbol: Option<&str>,
) -> Result<adjit_jit::ObjectCode> {
    let plan = SparsePlan::new(func, kind)?;
    let mut object = crate::compile::object_for(
        &plan.program,
        target,
        symbol,
        &adjit_jit::JitOptions::default(),
    )?;
    let upper = object.symbol.to_uppercase();
    let p = &plan.pattern;
    let join = |items: Vec<String>| items.join(", ");
    let arrays = format!(
        "/* The {what} pattern (CSR; {colors} colours): output k of {symbol} is entry\n \
         * (i, {name}_indices[k]) for {name}_indptr[i] <= k < {name}_indptr[i + 1]. */\n\
         #define {upper}_ROWS {rows}\n\
         #define {upper}_COLS {cols}\n\
         #define {upper}_NNZ {nnz}\n\
         static const unsigned long {name}_indptr[{rows} + 1] = {{{indptr}}};\n\
         static const unsigned int {name}_indices[{nnz_or_one}] = {{{indices}}};\n\n",
        what = match kind {
            SparseKind::Jacobian => "Jacobian",
            SparseKind::Hessian => "lower-triangle Hessian",
        },
        colors = plan.coloring.n_colors,
        symbol = object.symbol,
        name = object.symbol,
        rows = p.nrows(),
        cols = p.ncols(),
        nnz = p.nnz(),
        nnz_or_one = p.nnz().max(1),
        indptr = join(p.indptr().iter().map(|v| v.to_string()).collect()),
        indices = join(if p.nnz() == 0 {
            vec!["0".into()]
        } else {
            p.indices().iter().map(|v| v.to_string()).collect()
        }),
    );
    let anchor = "#ifdef __cplusplus";
    match object.header.find(anchor) {
        Some(at) => object.header.insert_str(at, &arrays),
        None => object.header.push_str(&arrays),
    }
    Ok(object)
}

impl crate::prepared::Prepared for SparseJacobian {
    fn name(&self) -> &str {
        self.inner.sig.name()
    }

    /// `(x) -> (nz)`.
    fn layout(&self) -> &Layout {
        SparseJacobian::layout(self)
    }

    fn call_parts(&self, inputs: &[&[f64]], outputs: &mut [&mut [f64]]) -> Result<()> {
        match (inputs, outputs) {
            ([x], [values]) => self.eval(x, values),
            (inputs, outputs) => Err(crate::prepared::parts_error(
                self,
                inputs.len(),
                outputs.len(),
            )),
        }
    }
}

impl crate::prepared::Prepared for SparseHessian {
    fn name(&self) -> &str {
        self.inner.sig.name()
    }

    /// `(x) -> (nz)`: the lower triangle.
    fn layout(&self) -> &Layout {
        SparseHessian::layout(self)
    }

    fn call_parts(&self, inputs: &[&[f64]], outputs: &mut [&mut [f64]]) -> Result<()> {
        match (inputs, outputs) {
            ([x], [lower]) => self.eval(x, lower),
            (inputs, outputs) => Err(crate::prepared::parts_error(
                self,
                inputs.len(),
                outputs.len(),
            )),
        }
    }
}
