//! Composed kernels: an inner kernel mapped over k components, feeding an outer reduction, per
//! data row, summed over the rows of a data buffer.
//!
//! Per data row `x`, the value is
//!
//! ```text
//! g(f(φ₀, x), …, f(φ_{k−1}, x), θ_s, x)
//! ```
//!
//! where the *inner* kernel `f(φ, x)` has `m` float outputs, `φⱼ` are the parameters of
//! component `j` gathered from θ by an affine map ([`Gather`]: inner parameter `i` of component
//! `j` is `θ[base_i + j·stride_i]`; stride 0 shares one entry between every component), and the
//! *outer* kernel `g` takes the `k·m` component outputs, then the shared entries `θ_s`
//! ([`Composition::shared`]) as its differentiated parameters, and optionally the row itself
//! as `data` parameters. f and g are each compiled once, so code size and compile time grow
//! with the size of f (gmm: d²), not with k times it, as a fully unrolled kernel's would.
//!
//! An optional per-component *transform* `h` ([`Composition::transform`]) maps the gathered
//! parameters to the inner kernel's, `φⱼ = h(ψⱼ)`, once per call instead of once per row and
//! component: whatever depends on the parameters alone (gmm's `exp qⱼ` and `αⱼ + Σqⱼ`) is
//! computed k times per call, not n·k times. Reverse mode accumulates the inner parameters'
//! cotangents over all rows, then runs h's VJP once per component.
//!
//! **Reverse mode through the composition**, per row: the k components run through f's
//! gradient (`m = 1`, [`Reverse::Stored`]: value and ∇f stored per component) or f's primal
//! ([`Reverse::Vjp`]); g's value and gradient give the cotangents ȳⱼ; then ȳⱼ·∇fⱼ (stored) or
//! f's VJP with ȳⱼ (vjp) is accumulated per component. The k components of one row run as one
//! batch of the compiled code (pairs of components through two-lane kernels with
//! [`ComposeOptions::lanes`] = 2, their φⱼ laid out for the kernels once per call).
//!
//! **Hessian-vector products** ([`ComposedKernel::hvp`], for an inner kernel with one output
//! and no transform) apply the chain rule per component: g's HVP, then f's HVP scaled by ȳⱼ
//! and its tangent; see the `hvp` module for what is skipped when g is piecewise linear (a
//! `min`) and with [`ComposeOptions::skip_zero_cotangents`].
//!
//! **Fixed summation order**, as [`crate::map`]: rows in blocks of
//! [`ComposeOptions::block_rows`], each block summed row by row from −0.0, block partials
//! added in block order, so results are bitwise the same for every thread count. Within a row,
//! contributions are accumulated per (component, inner parameter) slot; only after the last
//! block are the slots taken through h's VJP (with a transform) and added into θ̄ by the
//! gather map, in component order, then the shared entries.
//!
//! Memory per thread: the k components' inputs and outputs of f's programs (about
//! `2·k·(n_f + p)` numbers for f with `n_f` inputs and `p` differentiated ones) and one block
//! partial of `1 + k·p + |θ_s|` numbers; nothing is allocated per row.
//!
//! A two-component mixture of Gaussian bumps, `ln Σⱼ exp(−(x − μⱼ)²)` per point:
//!
//! ```
//! use adjit::compose::{Composition, ComposedKernel, Gather};
//! let bump = adjit::trace_with_data(1, 1, |mu, x| -(x[0] - mu[0]).square());
//! let lse = adjit::trace(2, |y| (y[0].exp() + y[1].exp()).ln());
//! let spec = Composition {
//!     transform: None,
//!     inner: &bump,
//!     outer: &lse,
//!     components: 2,
//!     gather: &[Gather { base: 0, stride: 1 }], // μⱼ = θ[j]
//!     shared: &[],
//!     n_theta: 2,
//! };
//! let mix = ComposedKernel::new(&spec).unwrap();
//! let (theta, data) = ([0.0, 1.0], [0.5, 0.5]);
//! let mut grad = [0.0; 2];
//! let total = mix.gradient(&theta, &data, &mut grad).unwrap();
//! let one = (2.0 * (-0.25f64).exp()).ln();
//! assert!((total - 2.0 * one).abs() < 1e-15);
//! // Symmetric around x = 0.5: ∂/∂μ₀ = −∂/∂μ₁.
//! assert!((grad[0] + grad[1]).abs() < 1e-15 && grad[0] > 0.0);
//! ```

use std::ops::Range;
use std::sync::OnceLock;

use adjit_diff::layout::{Layout, Part};
use adjit_diff::Mode;
use adjit_ir::Function;
use adjit_jit::PairBatch;

use crate::error::{Error, Expected, Result};
use crate::map::{run_on_threads, sum_blocks, Blocks, PARALLEL_WORK};
use crate::options::Options;
use crate::rows::{self, put_pair, RowProgram};
use crate::runner::Runner;

mod hvp;

/// Where one inner parameter of every component lives in θ: component `j` reads
/// `θ[base + j·stride]` (stride 0: one entry shared by every component, its gradient summed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gather {
    pub base: usize,
    pub stride: usize,
}

/// What to compose: see the [module docs](self).
#[derive(Clone, Copy, Debug)]
pub struct Composition<'a> {
    /// f(φ, x): float parameters only, differentiated ones φ and at least one `data`
    /// parameter (a row), every output a float.
    pub inner: &'a Function,
    /// h(ψ) → φ, applied to each component's gathered parameters ψⱼ once per call: float
    /// parameters, all differentiated (one [`Gather`] each), no `data`, one output per
    /// differentiated parameter of f. `None`: φⱼ = ψⱼ (one [`Gather`] per parameter of f).
    pub transform: Option<&'a Function>,
    /// g: its differentiated parameters are the `k·m` component outputs (component-major:
    /// y₀ of every output, then y₁, …) followed by one per [`Composition::shared`] entry; its
    /// `data` parameters, if any, are the row (as many as the inner kernel's). One float
    /// output.
    pub outer: &'a Function,
    /// k, the number of components (at least 1).
    pub components: usize,
    /// Where ψⱼ comes from: one per parameter of the transform (or of φ without one), in
    /// signature order.
    pub gather: &'a [Gather],
    /// The θ index of each differentiated parameter of g after the component outputs.
    pub shared: &'a [usize],
    /// The length of θ.
    pub n_theta: usize,
}

/// How reverse mode runs the inner kernel (see the [module docs](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reverse {
    /// [`Reverse::Stored`] for an inner kernel with one output, [`Reverse::Vjp`] otherwise.
    /// (gmm's component kernel, d = 2…64, k = 5…100, one thread: the stored gradient is
    /// 1.2–1.6× faster than the VJP, which runs f's primal twice.)
    #[default]
    Auto,
    /// One gradient run per component, ∇fⱼ stored and scaled by ȳⱼ (inner kernels with one
    /// output only).
    Stored,
    /// A primal run per component before g, a VJP run per component after it.
    Vjp,
}

/// How a [`ComposedKernel`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComposeOptions {
    /// Worker threads (0 = every thread of rayon's pool, one per core unless configured, or the
    /// caller's thread alone for a call too short to pay for handing work out). Results do not
    /// depend on it.
    pub threads: usize,
    /// Rows per block of a sum (0 is read as 1). Results depend on it: it fixes the order.
    pub block_rows: usize,
    /// 2: pairs of components run through two-lane kernels of f, and pairs of rows through
    /// the fused HVP program (bitwise the same results). Their inputs stay laid out for the
    /// kernels between rows ([`adjit_jit::PairBatch`]): φⱼ is written once per call, a row
    /// only its own entries. It pays unless the inner kernel is tiny (GradBench gmm's
    /// component, primal and gradient against one lane: d = 64 0.62–0.69× and 0.73–0.78×,
    /// d = 10 0.8×, d = 2 1.1–1.4× slower; kmeans' fused HVP 0.83–0.85× at k = 10 and
    /// 0.71–0.74× at k = 100). The inner VJP and HVP, which run on components gathered per
    /// row, stay in one lane.
    pub lanes: usize,
    pub reverse: Reverse,
    /// Skip the inner kernel's reverse work for a component whose cotangents from the outer
    /// kernel are all exactly zero (and, in [`ComposedKernel::hvp`], their tangents too): its
    /// contributions are products with zero. Pays when the outer kernel selects (a `min`,
    /// `max` or `select` over the components: k-means' nearest centroid gets the whole
    /// cotangent, the other k − 1 none). Applies to [`Reverse::Vjp`] gradients and to
    /// Hessian-vector products. Results equal those without it, except that a skipped
    /// component adds nothing where its zero products would have added `+0.0` to a `−0.0`
    /// entry, or NaN where the inner kernel's derivatives are not finite.
    pub skip_zero_cotangents: bool,
}

impl Default for ComposeOptions {
    fn default() -> ComposeOptions {
        ComposeOptions {
            threads: 0,
            block_rows: 1024,
            lanes: 1,
            reverse: Reverse::Auto,
            skip_zero_cotangents: false,
        }
    }
}

/// A compiled program with its layout, and the slots a row reads (looked up once).
struct Program {
    runner: Runner,
    layout: Layout,
    cost: usize,
    n_in: usize,
    n_out: usize,
    /// The output slots of y and x̄, the input slots of ȳ.
    y: Range<usize>,
    grad: Range<usize>,
    cot: Range<usize>,
    /// For the outer HVP: whether any output reads the direction's entries of the component
    /// outputs (`false` when g is piecewise linear in them, as a `min`: then their tangents
    /// J·v need not be computed). `true` for every other program.
    reads_component_tangents: bool,
}

/// The programs a call may run, in the order of the lazily compiled slots.
#[derive(Clone, Copy)]
enum Slot {
    TransformPrimal,
    TransformVjp,
    InnerPrimal,
    InnerGradient,
    InnerVjp,
    OuterPrimal,
    OuterGradient,
    InnerHvp,
    OuterHvp,
    /// Every component's value and g's HVP in one program (the inner kernel inlined k times).
    Fused,
}

/// g(f(φ₀, x), …, f(φ_{k−1}, x), θ_s, x) per data row, summed over rows in a fixed order,
/// with its gradient in θ (see the [module docs](self)).
pub struct ComposedKernel {
    inner: Function,
    outer: Function,
    /// `inner∘outer`, for messages.
    name: String,
    inner_opts: Options,
    outer_opts: Options,
    compose: ComposeOptions,
    k: usize,
    /// Outputs of the inner kernel.
    m: usize,
    n_theta: usize,
    gather: Vec<Gather>,
    shared: Vec<usize>,
    /// Positions of φ and of the row among the inner kernel's parameters.
    inner_phi_at: Vec<usize>,
    inner_row_at: Vec<usize>,
    /// Positions of the component outputs, the shared entries and the row among g's.
    outer_y_at: Vec<usize>,
    outer_shared_at: Vec<usize>,
    outer_row_at: Vec<usize>,
    /// The per-component transform h, if any.
    transform: Option<Function>,
    /// Differentiated parameters of the inner kernel (= outputs of the transform).
    n_phi: usize,
    programs: [OnceLock<Program>; 10],
}

impl std::fmt::Debug for ComposedKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComposedKernel")
            .field("name", &self.name)
            .field("components", &self.k)
            .field("theta", &self.n_theta)
            .field("options", &self.compose)
            .finish_non_exhaustive()
    }
}

impl ComposedKernel {
    /// Compose with the default options (see [`ComposedKernel::with_options`]).
    pub fn new(spec: &Composition<'_>) -> Result<ComposedKernel> {
        ComposedKernel::with_options(spec, ComposeOptions::default(), &Options::default())
    }

    /// Check `spec` and keep its kernels; their programs are compiled on first use (or by
    /// [`ComposedKernel::prepare`]) on the engine of `opts`.
    pub fn with_options(
        spec: &Composition<'_>,
        compose: ComposeOptions,
        opts: &Options,
    ) -> Result<ComposedKernel> {
        let (inner, outer) = (spec.inner, spec.outer);
        adjit_ir::verify(inner)?;
        adjit_ir::verify(outer)?;
        if let Some(h) = spec.transform {
            adjit_ir::verify(h)?;
        }
        let name = format!("{}∘{}", inner.name, outer.name);
        let fail = |needs: String| Error::Signature {
            func: name.clone(),
            needs,
        };
        let kernels = [
            Some((inner, "the inner kernel")),
            Some((outer, "the outer kernel")),
            spec.transform.map(|h| (h, "the transform")),
        ];
        for (func, what) in kernels.into_iter().flatten() {
            if let Some(p) = func.params().find(|&p| !func.ty(p).is_float()) {
                return Err(Error::BoolInput {
                    what,
                    func: func.name.clone(),
                    index: p.index(),
                });
            }
            if !func.ret_types.iter().all(|t| t.is_float()) {
                return Err(fail(format!("{what} has a bool output")));
            }
        }
        let k = spec.components;
        let m = inner.n_outputs();
        if k == 0 {
            return Err(Error::TooFew {
                func: name.clone(),
                what: "the number of components k",
                least: 1,
                got: k,
            });
        }
        if m == 0 {
            return Err(fail(
                "the inner kernel has no outputs; it needs at least one".into(),
            ));
        }
        if outer.n_outputs() != 1 {
            return Err(fail(format!(
                "the outer kernel must have one output, it has {}",
                outer.n_outputs()
            )));
        }
        let inner_phi_at: Vec<usize> = inner.differentiated_params().map(|p| p.index()).collect();
        let inner_row_at: Vec<usize> = inner.data_params().map(|p| p.index()).collect();
        let outer_diff: Vec<usize> = outer.differentiated_params().map(|p| p.index()).collect();
        let outer_row_at: Vec<usize> = outer.data_params().map(|p| p.index()).collect();
        let r = inner_row_at.len();
        if r == 0 {
            return Err(fail(
                "the inner kernel needs `data` inputs (one row); it has none".into(),
            ));
        }
        if !outer_row_at.is_empty() && outer_row_at.len() != r {
            return Err(fail(format!(
                "the outer kernel has {} data inputs, expected 0 or the row length {r}",
                outer_row_at.len()
            )));
        }
        let n_psi = match spec.transform {
            None => inner_phi_at.len(),
            Some(h) => {
                let n_psi = h.differentiated_params().count();
                if n_psi != h.params().len() {
                    return Err(fail("the transform has `data` inputs".into()));
                }
                if h.n_outputs() != inner_phi_at.len() {
                    return Err(fail(format!(
                        "the transform has {} outputs, expected one per differentiated input of the inner kernel ({})",
                        h.n_outputs(),
                        inner_phi_at.len()
                    )));
                }
                n_psi
            }
        };
        if n_psi == 0 || inner_phi_at.is_empty() {
            return Err(fail(
                "the components need parameters: the inner kernel (and the transform) have no differentiated inputs".into(),
            ));
        }
        if spec.gather.len() != n_psi {
            return Err(fail(format!(
                "gather has {} entries, expected one per differentiated input of the {} ({n_psi})",
                spec.gather.len(),
                match spec.transform {
                    Some(_) => "transform",
                    None => "inner kernel",
                }
            )));
        }
        let n = spec.n_theta;
        for (i, g) in spec.gather.iter().enumerate() {
            let last = g
                .stride
                .checked_mul(k - 1)
                .and_then(|s| s.checked_add(g.base));
            if last.is_none_or(|last| last >= n) {
                return Err(fail(format!(
                    "gather {i} (base {}, stride {}) reaches past θ of {n} numbers at component {}",
                    g.base,
                    g.stride,
                    k - 1
                )));
            }
        }
        if let Some(&s) = spec.shared.iter().find(|&&s| s >= n) {
            return Err(fail(format!("shared index {s} is past θ of {n} numbers")));
        }
        let n_y = k * m;
        if outer_diff.len() != n_y + spec.shared.len() {
            return Err(fail(format!(
                "the outer kernel has {} differentiated inputs, expected k·m + shared = {} + {}",
                outer_diff.len(),
                n_y,
                spec.shared.len()
            )));
        }
        let reverse = match (compose.reverse, m) {
            (Reverse::Auto, 1) => Reverse::Stored,
            (Reverse::Auto, _) => Reverse::Vjp,
            (Reverse::Stored, m) if m != 1 => {
                return Err(fail(format!(
                    "Reverse::Stored needs an inner kernel with one output, it has {m}"
                )))
            }
            (other, _) => other,
        };
        let mut inner_opts = opts.clone();
        if compose.lanes >= 2 {
            inner_opts.jit.batch_lanes = inner_opts.jit.batch_lanes.max(2);
        }
        Ok(ComposedKernel {
            inner: inner.clone(),
            outer: outer.clone(),
            name,
            inner_opts,
            outer_opts: opts.clone(),
            compose: ComposeOptions {
                block_rows: compose.block_rows.max(1),
                reverse,
                ..compose
            },
            k,
            m,
            n_theta: n,
            gather: spec.gather.to_vec(),
            shared: spec.shared.to_vec(),
            n_phi: inner_phi_at.len(),
            transform: spec.transform.cloned(),
            inner_phi_at,
            inner_row_at,
            outer_y_at: outer_diff[..n_y].to_vec(),
            outer_shared_at: outer_diff[n_y..].to_vec(),
            outer_row_at,
            programs: Default::default(),
        })
    }

    /// Compile every program the value and the gradient need now, instead of on first use.
    pub fn prepare(&self) -> Result<()> {
        if self.transform.is_some() {
            self.program(Slot::TransformPrimal)?;
            self.program(Slot::TransformVjp)?;
        }
        for slot in [
            Slot::InnerPrimal,
            self.inner_reverse_slot(),
            Slot::OuterPrimal,
            Slot::OuterGradient,
        ] {
            self.program(slot)?;
        }
        Ok(())
    }

    /// The length of θ.
    pub fn n_theta(&self) -> usize {
        self.n_theta
    }

    /// Numbers per data row.
    pub fn row_len(&self) -> usize {
        self.inner_row_at.len()
    }

    /// The number of components k.
    pub fn components(&self) -> usize {
        self.k
    }

    /// The options in force ([`Reverse::Auto`] resolved).
    pub fn options(&self) -> ComposeOptions {
        self.compose
    }

    /// The number of rows in `data`, checking it holds whole rows.
    pub fn n_rows(&self, data: &[f64]) -> Result<usize> {
        rows::n_rows(&self.name, self.row_len(), data)
    }

    /// `y[i]` = the value of row `i`.
    pub fn eval(&self, theta: &[f64], data: &[f64], y: &mut [f64]) -> Result<()> {
        let n_rows = self.check_inputs(theta, data)?;
        if y.len() != n_rows {
            return Err(self.length_error(
                "the output y",
                Expected::CountOf {
                    count: n_rows,
                    each: "one per row",
                },
                y.len(),
            ));
        }
        let progs = self.programs(false)?;
        let phis = self.phis(theta)?;
        let threads = self.threads(n_rows, n_rows, &progs);
        let per_thread = n_rows.div_ceil(threads).max(1);
        let shares: Vec<&mut [f64]> = y.chunks_mut(per_thread).collect();
        let r = self.row_len();
        run_on_threads(shares, |t, share| {
            let mut worker = self.worker(&progs, theta, &phis);
            for (b, out) in share.iter_mut().enumerate() {
                let i = t * per_thread + b;
                *out = self.row_value(&progs, &mut worker, &data[i * r..(i + 1) * r])?;
            }
            Ok(())
        })
    }

    /// Σᵢ of the row values, in the fixed order.
    pub fn eval_sum(&self, theta: &[f64], data: &[f64]) -> Result<f64> {
        let mut total = [0.0];
        self.sum(theta, data, &mut total, false)?;
        Ok(total[0])
    }

    /// Writes ∇θ Σᵢ (row value) to `grad` and returns the sum, both in the fixed order.
    pub fn gradient(&self, theta: &[f64], data: &[f64], grad: &mut [f64]) -> Result<f64> {
        if grad.len() != self.n_theta {
            return Err(self.length_error(
                "the gradient",
                Expected::CountOf {
                    count: self.n_theta,
                    each: "one per θ entry",
                },
                grad.len(),
            ));
        }
        let (k, p) = (self.k, self.n_phi);
        let mut acc = vec![0.0; 1 + k * p + self.shared.len()];
        self.sum(theta, data, &mut acc, true)?;
        grad.fill(0.0);
        let slots = &acc[1..1 + k * p];
        match &self.transform {
            None => self.scatter(slots, grad),
            Some(_) => {
                // ψ̄ⱼ = (∂h/∂ψ)ᵀ φ̄ⱼ, every component in one batch.
                let vjp = self.program(Slot::TransformVjp)?;
                let layout = &vjp.layout;
                let (n_in, n_out) = (layout.n_inputs(), layout.n_outputs());
                let cot = layout.input(Part::Cotangent);
                let mut inputs = self.gathered(theta, n_in);
                for (j, input) in inputs.chunks_mut(n_in).enumerate() {
                    input[cot.clone()].copy_from_slice(&slots[j * p..(j + 1) * p]);
                }
                let mut outputs = vec![0.0; k * n_out];
                run_batch(&vjp.runner, n_in, n_out, &inputs, &mut outputs)?;
                let psi_bar: Vec<f64> = outputs
                    .chunks(n_out)
                    .flat_map(|out| out[layout.output(Part::Gradient)].iter().copied())
                    .collect();
                self.scatter(&psi_bar, grad);
            }
        }
        for (&s, &a) in self.shared.iter().zip(&acc[1 + k * p..]) {
            grad[s] += a;
        }
        Ok(acc[0])
    }

    /// k copies of `n_in` numbers, component j's ψⱼ gathered from θ into the first entries.
    fn gathered(&self, theta: &[f64], n_in: usize) -> Vec<f64> {
        let mut inputs = vec![0.0; self.k * n_in];
        for (j, x) in inputs.chunks_mut(n_in).enumerate() {
            for (slot, g) in x.iter_mut().zip(&self.gather) {
                *slot = theta[g.base + j * g.stride];
            }
        }
        inputs
    }

    /// Add the per-component cotangents of ψ (k × gather entries) into θ̄ by the gather map.
    fn scatter(&self, psi_bar: &[f64], grad: &mut [f64]) {
        for (j, slots) in psi_bar.chunks(self.gather.len()).enumerate() {
            for (g, &a) in self.gather.iter().zip(slots) {
                grad[g.base + j * g.stride] += a;
            }
        }
    }

    /// Every component's inner parameters φⱼ (k × n_φ): gathered, then transformed.
    fn phis(&self, theta: &[f64]) -> Result<Vec<f64>> {
        if self.transform.is_none() {
            return Ok(self.gathered(theta, self.n_phi));
        }
        let h = self.program(Slot::TransformPrimal)?;
        let (n_in, n_out) = (h.layout.n_inputs(), h.layout.n_outputs());
        let inputs = self.gathered(theta, n_in);
        let mut outputs = vec![0.0; self.k * n_out];
        run_batch(&h.runner, n_in, n_out, &inputs, &mut outputs)?;
        let y = h.layout.output(Part::Outputs);
        Ok(outputs
            .chunks(n_out)
            .flat_map(|out| out[y.clone()].iter().copied())
            .collect())
    }

    fn inner_reverse_slot(&self) -> Slot {
        match self.compose.reverse {
            Reverse::Vjp => Slot::InnerVjp,
            _ => Slot::InnerGradient,
        }
    }

    /// The compiled program of `slot`, compiling it on first use.
    fn program(&self, slot: Slot) -> Result<&Program> {
        rows::on_first_use(&self.programs[slot as usize], || self.compile(slot))
    }

    /// The program of `slot`, compiled now.
    fn compile(&self, slot: Slot) -> Result<Program> {
        let transform = || {
            self.transform.as_ref().ok_or_else(|| Error::Internal {
                func: self.name.clone(),
                what: "a transform program asked of a composition without a transform",
            })
        };
        let fused;
        // The inner VJP and HVP run on batches gathered per row (the components that need
        // them, each with its own φⱼ), so pairs of them would be interleaved on every call:
        // one lane.
        let mut one_lane = self.inner_opts.clone();
        one_lane.jit.batch_lanes = 1;
        let (func, mode, opts) = match slot {
            Slot::TransformPrimal => (transform()?, Mode::Primal, &self.outer_opts),
            Slot::TransformVjp => (transform()?, Mode::Vjp, &self.outer_opts),
            Slot::InnerPrimal => (&self.inner, Mode::Primal, &self.inner_opts),
            Slot::InnerGradient => (&self.inner, Mode::Gradient, &self.inner_opts),
            Slot::InnerVjp => (&self.inner, Mode::Vjp, &one_lane),
            Slot::OuterPrimal => (&self.outer, Mode::Primal, &self.outer_opts),
            Slot::OuterGradient => (&self.outer, Mode::Gradient, &self.outer_opts),
            Slot::InnerHvp => (&self.inner, Mode::Hvp, &one_lane),
            Slot::OuterHvp => (&self.outer, Mode::Hvp, &self.outer_opts),
            Slot::Fused => {
                fused = self.fused_function()?;
                (&fused, Mode::Primal, &self.inner_opts)
            }
        };
        let n_y = self.k * self.m;
        let (program, reads_component_tangents) =
            RowProgram::compile_inspect(func, mode, opts, |derived, layout| match slot {
                Slot::OuterHvp => {
                    let v = layout.input(Part::Vector);
                    hvp::reads_any(derived, v.start..v.start + n_y)
                }
                _ => true,
            })?;
        let RowProgram {
            runner,
            layout,
            cost,
        } = program;
        Ok(Program {
            reads_component_tangents,
            runner,
            cost,
            n_in: layout.n_inputs(),
            n_out: layout.n_outputs(),
            y: layout.output(Part::Outputs),
            grad: layout.output(Part::Gradient),
            cot: layout.input(Part::Cotangent),
            layout,
        })
    }

    /// The programs of a value (`reverse` false) or a gradient call.
    fn programs(&self, reverse: bool) -> Result<Programs<'_>> {
        let inner = self.program(Slot::InnerPrimal)?;
        let (inner_rev, outer) = match reverse {
            false => (None, self.program(Slot::OuterPrimal)?),
            true => (
                Some(self.program(self.inner_reverse_slot())?),
                self.program(Slot::OuterGradient)?,
            ),
        };
        let cost = self.k * (inner.cost + inner_rev.map_or(0, |p| p.cost)) + outer.cost;
        Ok(Programs {
            inner,
            inner_rev,
            outer,
            cost,
        })
    }

    fn length_error(&self, what: &str, expected: Expected, got: usize) -> Error {
        rows::length_error(&self.name, what, expected, got)
    }

    /// Check θ and the data, returning the number of rows.
    fn check_inputs(&self, theta: &[f64], data: &[f64]) -> Result<usize> {
        let expected = Expected::Count(self.n_theta);
        rows::check_inputs(&self.name, theta, expected, self.row_len(), data)
    }

    /// Threads for `items` pieces of work over `rows` rows (as [`crate::map`] decides).
    fn threads(&self, items: usize, rows: usize, progs: &Programs<'_>) -> usize {
        let pays = rows.saturating_mul(progs.cost) >= PARALLEL_WORK;
        adjit_jit::threads_for(self.compose.threads, items, pays)
    }

    /// A thread's buffers, with every component's φⱼ (`phis`, k × n_φ) and the shared
    /// entries in place.
    fn worker(&self, progs: &Programs<'_>, theta: &[f64], phis: &[f64]) -> Worker {
        let k = self.k;
        let fill = |n_in: usize| {
            let mut inputs = vec![0.0; k * n_in];
            for (x, phi) in inputs.chunks_mut(n_in).zip(phis.chunks(self.n_phi)) {
                for (&at, &v) in self.inner_phi_at.iter().zip(phi) {
                    x[at] = v;
                }
            }
            inputs
        };
        let n_f = progs.inner.layout.n_inputs();
        let vjp_inputs = match progs.inner_rev {
            Some(rev) if self.compose.reverse == Reverse::Vjp => fill(rev.layout.n_inputs()),
            _ => Vec::new(),
        };
        let n_out = match progs.inner_rev {
            Some(rev) => rev.layout.n_outputs(),
            None => 0,
        };
        let mut outer_in = vec![0.0; progs.outer.layout.n_inputs()];
        for (&at, &s) in self.outer_shared_at.iter().zip(&self.shared) {
            outer_in[at] = theta[s];
        }
        let skipping = self.compose.skip_zero_cotangents && self.compose.reverse == Reverse::Vjp;
        // The program every row runs on all k components: with two-point kernels, its
        // batch in their layout, φⱼ written once.
        let per_row = match progs.inner_rev {
            None => Some(progs.inner),
            Some(rev) if self.compose.reverse != Reverse::Vjp => Some(rev),
            Some(_) => None,
        };
        let pairs = per_row
            .and_then(|program| program.runner.code())
            .and_then(|code| code.pair_batch(k))
            .map(|mut batch| {
                for (j, phi) in phis.chunks(self.n_phi).enumerate().take(k) {
                    put_pair(&mut batch, j, &self.inner_phi_at, phi);
                }
                batch
            });
        // The flat inputs, unless the pair batch takes their place.
        let inputs = match pairs {
            Some(_) => Vec::new(),
            None => fill(n_f),
        };
        Worker {
            pairs,
            inputs,
            phis: if skipping { phis.to_vec() } else { Vec::new() },
            active: Vec::with_capacity(k),
            ys: vec![0.0; k * self.m],
            vjp_inputs,
            rev_outputs: vec![0.0; k * n_out],
            outer_in,
            outer_out: vec![0.0; progs.outer.layout.n_outputs()],
        }
    }

    /// Put `row` into every component's inputs (`n_in` per component) at the row slots.
    fn put_row(&self, inputs: &mut [f64], n_in: usize, row: &[f64]) {
        for x in inputs.chunks_mut(n_in) {
            for (&at, &v) in self.inner_row_at.iter().zip(row) {
                x[at] = v;
            }
        }
    }

    /// g's inputs for one row: the component outputs `ys` and the row.
    fn put_outer(&self, worker: &mut Worker, row: &[f64]) {
        for (&at, &y) in self.outer_y_at.iter().zip(&worker.ys) {
            worker.outer_in[at] = y;
        }
        for (&at, &v) in self.outer_row_at.iter().zip(row) {
            worker.outer_in[at] = v;
        }
    }

    /// Run `program` on `row` in `batch` (its two-point layout, φⱼ in place).
    fn run_pairs(&self, program: &Program, batch: &mut PairBatch, row: &[f64]) -> Result<()> {
        for j in 0..self.k {
            put_pair(batch, j, &self.inner_row_at, row);
        }
        // A batch is made only from native code; on the interpreter it is refused as foreign.
        let code = (program.runner.code()).ok_or(adjit_jit::JitError::ForeignBatch)?;
        Ok(code.run_pair_batch(batch)?)
    }

    /// One row's value.
    fn row_value(&self, progs: &Programs<'_>, worker: &mut Worker, row: &[f64]) -> Result<f64> {
        let n_f = progs.inner.n_in;
        if let Some(batch) = worker.pairs.as_mut() {
            self.run_pairs(progs.inner, batch, row)?;
            for (j, ys) in worker.ys.chunks_mut(self.m).enumerate() {
                for (y, out) in ys.iter_mut().zip(batch.outputs(j, 0..self.m)) {
                    *y = out;
                }
            }
        } else {
            self.put_row(&mut worker.inputs, n_f, row);
            run_batch(
                &progs.inner.runner,
                n_f,
                self.m,
                &worker.inputs,
                &mut worker.ys,
            )?;
        }
        self.put_outer(worker, row);
        progs
            .outer
            .runner
            .run(&worker.outer_in, &mut worker.outer_out)?;
        Ok(worker.outer_out[progs.outer.y.start])
    }

    /// Add one row's value (`acc[0]`) and its gradient slots (`acc[1..]`: k·p per-component
    /// slots, then the shared entries) to `acc`.
    fn row_gradient(
        &self,
        progs: &Programs<'_>,
        rev: &Program,
        worker: &mut Worker,
        row: &[f64],
        acc: &mut [f64],
    ) -> Result<()> {
        let (k, m, p) = (self.k, self.m, self.n_phi);
        let n_f = progs.inner.n_in;
        let n_rev_out = rev.n_out;
        let (rev_y, rev_grad) = (&rev.y, &rev.grad);
        let stored = self.compose.reverse != Reverse::Vjp;
        // A worker of a gradient call has a pair batch only with the stored gradient.
        if let Some(batch) = worker.pairs.as_mut() {
            self.run_pairs(rev, batch, row)?;
            for (j, y) in worker.ys.iter_mut().enumerate() {
                *y = batch.output(j, rev_y.start);
            }
        } else if stored {
            self.put_row(&mut worker.inputs, n_f, row);
            // Value and ∇f of every component at once; ys from the stored outputs.
            run_batch(
                &rev.runner,
                n_f,
                n_rev_out,
                &worker.inputs,
                &mut worker.rev_outputs,
            )?;
            for (y, out) in worker
                .ys
                .iter_mut()
                .zip(worker.rev_outputs.chunks(n_rev_out))
            {
                *y = out[rev_y.start];
            }
        } else {
            self.put_row(&mut worker.inputs, n_f, row);
            run_batch(&progs.inner.runner, n_f, m, &worker.inputs, &mut worker.ys)?;
        }
        self.put_outer(worker, row);
        progs
            .outer
            .runner
            .run(&worker.outer_in, &mut worker.outer_out)?;
        acc[0] += worker.outer_out[progs.outer.y.start];
        let g_bar = &progs.outer.grad;
        let y_bar = &worker.outer_out[g_bar.start..g_bar.start + k * m];
        let shared_bar = &worker.outer_out[g_bar.start + k * m..g_bar.end];
        if let Some(batch) = worker.pairs.as_ref() {
            for (j, &w) in y_bar.iter().enumerate() {
                let slots = &mut acc[1 + j * p..1 + (j + 1) * p];
                for (a, g) in slots.iter_mut().zip(batch.outputs(j, rev_grad.clone())) {
                    *a += w * g;
                }
            }
        } else if stored {
            for (j, &w) in y_bar.iter().enumerate() {
                let out = &worker.rev_outputs[j * n_rev_out..(j + 1) * n_rev_out];
                let slots = &mut acc[1 + j * p..1 + (j + 1) * p];
                for (a, &g) in slots.iter_mut().zip(&out[rev_grad.clone()]) {
                    *a += w * g;
                }
            }
        } else {
            let (n_vjp, cot) = (rev.n_in, &rev.cot);
            // The components that run: all, or (skipping) those with a nonzero cotangent,
            // packed into the first batch entries with their φⱼ.
            worker.active.clear();
            for j in 0..k {
                let y_bar_j = &y_bar[j * m..(j + 1) * m];
                if self.compose.skip_zero_cotangents && y_bar_j.iter().all(|&c| c == 0.0) {
                    continue;
                }
                let at = worker.active.len();
                let x = &mut worker.vjp_inputs[at * n_vjp..(at + 1) * n_vjp];
                if self.compose.skip_zero_cotangents {
                    put(x, &self.inner_phi_at, &worker.phis[j * p..(j + 1) * p]);
                }
                put(x, &self.inner_row_at, row);
                x[cot.clone()].copy_from_slice(y_bar_j);
                worker.active.push(j);
            }
            let n = worker.active.len();
            run_batch(
                &rev.runner,
                n_vjp,
                n_rev_out,
                &worker.vjp_inputs[..n * n_vjp],
                &mut worker.rev_outputs[..n * n_rev_out],
            )?;
            for (at, &j) in worker.active.iter().enumerate() {
                let out = &worker.rev_outputs[at * n_rev_out..(at + 1) * n_rev_out];
                let slots = &mut acc[1 + j * p..1 + (j + 1) * p];
                for (a, &g) in slots.iter_mut().zip(&out[rev_grad.clone()]) {
                    *a += g;
                }
            }
        }
        for (a, &g) in acc[1 + k * p..].iter_mut().zip(shared_bar) {
            *a += g;
        }
        Ok(())
    }

    /// Sum the rows' values (`total` of length 1) or values and gradient slots (`reverse`),
    /// in the fixed block order, into `total`.
    fn sum(&self, theta: &[f64], data: &[f64], total: &mut [f64], reverse: bool) -> Result<()> {
        let n_rows = self.check_inputs(theta, data)?;
        let progs = self.programs(reverse)?;
        let phis = self.phis(theta)?;
        let r = self.row_len();
        let block = self.compose.block_rows;
        let n_blocks = n_rows.div_ceil(block);
        let threads = self.threads(n_blocks, n_rows, &progs);
        let mut workers: Vec<Worker> = (0..threads)
            .map(|_| self.worker(&progs, theta, &phis))
            .collect();
        // Waves of one block per thread at least: a gradient's partial holds k·p + 1 numbers.
        let blocks = Blocks {
            n_rows,
            block,
            min_wave: threads,
        };
        sum_blocks(blocks, total, &mut workers, |worker, rows, partial| {
            for i in rows {
                let row = &data[i * r..(i + 1) * r];
                match progs.inner_rev {
                    Some(rev) => self.row_gradient(&progs, rev, worker, row, partial)?,
                    None => partial[0] += self.row_value(&progs, worker, row)?,
                }
            }
            Ok(())
        })?;
        Ok(())
    }
}

/// The programs of one call.
struct Programs<'a> {
    inner: &'a Program,
    /// The inner gradient or VJP, for gradient calls.
    inner_rev: Option<&'a Program>,
    /// g's primal or gradient.
    outer: &'a Program,
    /// Instructions per row, for the thread decision.
    cost: usize,
}

/// One thread's buffers.
struct Worker {
    /// With two-point kernels ([`ComposeOptions::lanes`] = 2): the k component runs of the
    /// program every row runs (f's primal for values, its gradient with
    /// [`Reverse::Stored`]) in the kernels' layout, φⱼ written once per call; a row writes
    /// only its own entries, and the outputs are read where the kernels wrote them. `None`:
    /// the flat `inputs` and one batch call per row.
    pairs: Option<PairBatch>,
    /// k × the inner primal's (= gradient's) inputs: φⱼ and the row.
    inputs: Vec<f64>,
    /// Every component's φⱼ (k × n_φ), when components with zero cotangents are skipped: the
    /// VJP's batch entries then hold a different component from row to row.
    phis: Vec<f64>,
    /// The components of the current row's VJP batch, in batch order.
    active: Vec<usize>,
    /// k × m component outputs.
    ys: Vec<f64>,
    /// k × the inner VJP's inputs (with [`Reverse::Vjp`]).
    vjp_inputs: Vec<f64>,
    /// k × the inner gradient's or VJP's outputs.
    rev_outputs: Vec<f64>,
    outer_in: Vec<f64>,
    outer_out: Vec<f64>,
}

/// `x[at[i]] = values[i]` for slots `at` in ascending order (parameter positions in signature
/// order, each once): one copy when they are consecutive (the common layout: the parameters,
/// then the row).
fn put(x: &mut [f64], at: &[usize], values: &[f64]) {
    match rows::consecutive(at) {
        Some(first) => x[first..first + at.len()].copy_from_slice(&values[..at.len()]),
        None => {
            for (&slot, &value) in at.iter().zip(values) {
                x[slot] = value;
            }
        }
    }
}

/// Run `runner` on consecutive points (`n_in` inputs and `n_out` outputs each): one batch
/// call of the native code, or point by point on the interpreter.
fn run_batch(
    runner: &Runner,
    n_in: usize,
    n_out: usize,
    inputs: &[f64],
    outputs: &mut [f64],
) -> Result<()> {
    match runner.code() {
        Some(code) => Ok(code.call_batch(inputs, outputs)?),
        None => {
            for (x, y) in inputs.chunks(n_in).zip(outputs.chunks_mut(n_out)) {
                runner.run(x, y)?;
            }
            Ok(())
        }
    }
}
