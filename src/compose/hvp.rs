//! Hessian-vector products of a composition: `H·v` of Σᵢ g(f(φ₀, xᵢ), …, f(φ_{k−1}, xᵢ), θ_s, xᵢ)
//! for an inner kernel with one output and no transform.
//!
//! Per row, with vⱼ the direction gathered like φⱼ and v_s its shared entries, the chain rule
//! is (`∇fⱼ`, `Hⱼ` the inner kernel's gradient and Hessian at φⱼ; `uⱼ = ∇fⱼ·vⱼ` the
//! components' tangents):
//!
//! ```text
//! (ȳ, ȳ_s), (ẏ̄, ẏ̄_s) = g's gradient and g's H·(u, v_s)        (g's HVP program)
//! θ̄ⱼ  += ȳⱼ·∇fⱼ
//! (Hv)ⱼ += ẏ̄ⱼ·∇fⱼ + ȳⱼ·Hⱼvⱼ                                     (f's HVP program)
//! ```
//!
//! Two things are skipped when they cannot matter:
//! - the tangents `uⱼ`, when no output of g's HVP program reads them (g piecewise linear in
//!   the component values: a `min` or `max` over them). Then the components run through f's
//!   primal, not its gradient, and (up to [`VALUES_UNROLL`] instructions) one program per row
//!   computes all k values and g's HVP ([`ComposedKernel::fused_function`]). This is exact:
//!   the program's outputs do not depend on what is passed.
//! - with [`super::ComposeOptions::skip_zero_cotangents`], f's HVP for a component whose ȳⱼ
//!   and ẏ̄ⱼ are both zero. For k-means (g = the minimum over k distances) one component in k
//!   runs it, so a row costs k primal distances and one HVP, not k HVPs.

use std::ops::Range;

use adjit_diff::layout::Part;
use adjit_ir::Function;
use adjit_jit::{PairBatch, PointOutputs};

#[cfg(doc)]
use super::ComposeOptions;
use super::{put, run_batch, ComposedKernel, Program, Slot};
use crate::error::{Error, Expected, Result};
use crate::map::{sum_blocks, Blocks, PARALLEL_WORK};
use crate::rows;

/// Whether any output of `func` reads a parameter at one of the positions `params`, through
/// any operand (a comparison or a `select` condition included).
pub(super) fn reads_any(func: &Function, params: Range<usize>) -> bool {
    let mut reads = vec![false; func.n_values()];
    for p in func.params().skip(params.start).take(params.len()) {
        reads[p.index()] = true;
    }
    for (v, inst) in func.insts() {
        let mut read = false;
        inst.for_each_value(|u| read |= reads[u.index()]);
        reads[v.index()] = read;
    }
    func.rets.iter().any(|r| reads[r.index()])
}

/// Component runs per stage of a block: the rows of a stage run each program as one batch
/// (the first program over rows × k components), so the calls' overhead is paid per stage,
/// not per row and component, and the buffers stay within a few hundred KB.
const STAGE_RUNS: usize = 1024;

/// The bytes of the fused program's inputs and outputs a stage holds at most: every row's
/// inputs repeat φ (k·p numbers), which the stage's rows then read from L1 instead of L2. At
/// k = 10, d = 8 (872 bytes a row) 16 rows a stage ran the `map` bench's two-lane HVP 5 %
/// faster than 102.
const FUSED_STAGE_BYTES: usize = 16 * 1024;

/// Up to this many instructions (k times the inner kernel's), the component values and g's HVP
/// run as one program per row ([`ComposedKernel::fused_function`]). Its k copies of f are a run the JIT
/// rolls into one loop past `JitOptions::roll_above`, so its code follows f, not k: GradBench
/// kmeans at k = 1000, d = 8 (24,000 instructions) ran 46 → 14 ms per call with k values in one
/// program.
const VALUES_UNROLL: usize = 1_000_000;

/// What a stage runs before the components' f-HVPs.
#[derive(Clone, Copy)]
enum FirstStage<'a> {
    /// f's HVP for every component (nothing is skipped; its results are used directly), then
    /// g's HVP.
    Hvp(&'a Program),
    /// f's gradient (for uⱼ) or f's primal for every component, then g's HVP.
    Components(&'a Program),
    /// One call per row of [`ComposedKernel::fused_function`]: the k values and g's HVP.
    Fused(&'a Program),
}

/// The programs of one HVP call and the slots they are read at.
struct HvpPrograms<'a> {
    first: FirstStage<'a>,
    inner_hvp: &'a Program,
    outer: &'a Program,
    /// The inner HVP's `v` inputs and `H·v` outputs.
    inner_v: Range<usize>,
    inner_hv: Range<usize>,
    /// The outer HVP's `v` inputs and `H·v` outputs.
    outer_v: Range<usize>,
    outer_hv: Range<usize>,
}

/// One thread's buffers for HVP rows.
struct HvpWorker {
    /// Stage rows × the fused program's inputs (every φⱼ, the row, θ_s and v_s).
    fused_in: Vec<f64>,
    /// The same stage rows in the fused program's two-point layout, with two-point kernels
    /// ([`super::ComposeOptions::lanes`] = 2): everything but the rows written once per call.
    fused_pairs: Option<PairBatch>,
    /// Stage rows × k × the first program's inputs: φⱼ (and vⱼ) in place, the row put per
    /// stage.
    first_in: Vec<f64>,
    first_out: Vec<f64>,
    /// The inner HVP's outputs for one (row, component) pair (skipping).
    hvp_out: Vec<f64>,
    /// k × the inner HVP's inputs (skipping): component j's φⱼ and vⱼ in place, so that a
    /// pair's run writes only its row.
    hvp_templates: Vec<f64>,
    outer_in: Vec<f64>,
    outer_out: Vec<f64>,
}

impl ComposedKernel {
    /// Compile the programs [`ComposedKernel::hvp`] runs now, instead of on first use.
    pub fn prepare_hvp(&self) -> Result<()> {
        self.check_hvp()?;
        self.hvp_programs(true)?;
        Ok(())
    }

    /// Writes ∇θ Σᵢ (row value) to `grad` and the Hessian-vector product `H·v` to `hv`, and
    /// returns the sum, all in the fixed order of [`ComposedKernel::gradient`]. Needs an inner
    /// kernel with one output and no transform.
    ///
    /// Per row, with vⱼ the direction gathered like φⱼ: g's HVP at the component values with
    /// their tangents uⱼ = ∇fⱼ·vⱼ gives ȳ and ẏ̄; then θ̄ⱼ += ȳⱼ·∇fⱼ and (H·v)ⱼ += ẏ̄ⱼ·∇fⱼ +
    /// ȳⱼ·Hⱼvⱼ by f's HVP. When no output of g's HVP program reads the uⱼ (g piecewise linear
    /// in the components, as a `min`), they are not computed, and one program per row gives
    /// the k values and g's HVP. With [`ComposeOptions::skip_zero_cotangents`] f's HVP runs
    /// only where ȳⱼ or ẏ̄ⱼ is nonzero (for k-means, the nearest centroid).
    ///
    /// ```
    /// use adjit::compose::{ComposeOptions, ComposedKernel, Composition, Gather};
    /// // k-means: each point's squared distance to its nearest centroid (d = 1, k = 2).
    /// let dist = adjit::trace_with_data(1, 1, |c, a| (a[0] - c[0]).square());
    /// let nearest = adjit::trace(2, |y| y[0].min(y[1]));
    /// let spec = Composition {
    ///     transform: None,
    ///     inner: &dist,
    ///     outer: &nearest,
    ///     components: 2,
    ///     gather: &[Gather { base: 0, stride: 1 }],
    ///     shared: &[],
    ///     n_theta: 2,
    /// };
    /// let compose = ComposeOptions { skip_zero_cotangents: true, ..ComposeOptions::default() };
    /// let kmeans = ComposedKernel::with_options(&spec, compose, &adjit::Options::default()).unwrap();
    /// let (centroids, points) = ([0.0, 10.0], [1.0, 2.0, 9.0]);
    /// let (mut grad, mut hv) = ([0.0; 2], [0.0; 2]);
    /// let cost = kmeans.hvp(&centroids, &points, &[1.0, 1.0], &mut grad, &mut hv).unwrap();
    /// assert_eq!(cost, 1.0 + 4.0 + 1.0);
    /// // ∂/∂c₀ = 2(c₀ − 1) + 2(c₀ − 2), ∂/∂c₁ = 2(c₁ − 9); H = diag(2·|cluster|).
    /// assert_eq!((grad, hv), ([-6.0, 2.0], [4.0, 2.0]));
    /// ```
    pub fn hvp(
        &self,
        theta: &[f64],
        data: &[f64],
        v: &[f64],
        grad: &mut [f64],
        hv: &mut [f64],
    ) -> Result<f64> {
        self.hvp_with(theta, data, v, grad, hv, true)
    }

    /// [`ComposedKernel::hvp`], with the fused program allowed or not (tests run both).
    fn hvp_with(
        &self,
        theta: &[f64],
        data: &[f64],
        v: &[f64],
        grad: &mut [f64],
        hv: &mut [f64],
        fused_allowed: bool,
    ) -> Result<f64> {
        self.check_hvp()?;
        let n_rows = self.check_inputs(theta, data)?;
        let each = Expected::CountOf {
            count: self.n_theta,
            each: "one per θ entry",
        };
        for (what, len) in [
            ("the direction v", v.len()),
            ("the gradient", grad.len()),
            ("the Hessian-vector product", hv.len()),
        ] {
            if len != self.n_theta {
                return Err(self.length_error(what, each, len));
            }
        }
        let progs = self.hvp_programs(fused_allowed)?;
        let (k, p, s) = (self.k, self.n_phi, self.shared.len());
        let phis = self.gathered(theta, p);
        let v_phis = self.gathered(v, p);
        // Instructions per row, for the thread decision: with skipping, f's HVP is counted
        // once per row (one component in k, for a minimum).
        let cost = match progs.first {
            FirstStage::Fused(fused) => fused.cost + progs.inner_hvp.cost,
            FirstStage::Hvp(first) => k * first.cost + progs.outer.cost,
            FirstStage::Components(first) => {
                k * first.cost + progs.inner_hvp.cost + progs.outer.cost
            }
        };
        let block = self.compose.block_rows;
        let n_blocks = n_rows.div_ceil(block);
        let pays = n_rows.saturating_mul(cost) >= PARALLEL_WORK;
        let threads = adjit_jit::threads_for(self.compose.threads, n_blocks, pays);
        let mut workers: Vec<HvpWorker> = (0..threads)
            .map(|_| self.hvp_worker(&progs, theta, v, &phis, &v_phis, n_rows))
            .collect();
        let half = k * p + s;
        let mut acc = vec![0.0; 1 + 2 * half];
        let blocks = Blocks {
            n_rows,
            block,
            min_wave: threads,
        };
        let stage = self.stage_rows(&progs);
        sum_blocks(blocks, &mut acc, &mut workers, |worker, rows, partial| {
            for start in rows.clone().step_by(stage) {
                let part = start..(start + stage).min(rows.end);
                self.rows_hvp(&progs, worker, data, part, &v_phis, partial)?;
            }
            Ok(())
        })?;
        for (out, sums) in [(grad, &acc[1..1 + half]), (hv, &acc[1 + half..])] {
            out.fill(0.0);
            self.scatter(&sums[..k * p], out);
            for (&at, &a) in self.shared.iter().zip(&sums[k * p..]) {
                out[at] += a;
            }
        }
        Ok(acc[0])
    }

    /// An HVP needs one inner output and no transform.
    fn check_hvp(&self) -> Result<()> {
        let needs = if self.transform.is_some() {
            "a Hessian-vector product of a composition needs no transform (compose φⱼ = h(ψⱼ) into the inner kernel instead)".to_string()
        } else if self.m != 1 {
            format!(
                "a Hessian-vector product of a composition needs an inner kernel with one output, it has {}",
                self.m
            )
        } else {
            return Ok(());
        };
        Err(Error::Signature {
            func: self.name.clone(),
            needs,
        })
    }

    /// One row's value, ȳ and ẏ̄ (g's HVP outputs) as one program, when g's HVP reads none of
    /// the components' tangents: the inner kernel inlined once per component, then g's HVP
    /// program with those tangents 0. Parameters: the k·p inner parameters
    /// (component-major), the row as `data`, the shared entries, their direction entries.
    /// One call per row then computes all k values with φ in place and g's HVP, where a
    /// batch of k inner runs copies the row into each and g runs as a second batch.
    pub(super) fn fused_function(&self) -> Result<Function> {
        let g_hvp = crate::compile::derive(&self.outer, adjit_diff::Mode::Hvp)?;
        let mut f = Function::new(format!("{}_{}_hvp", self.inner.name, self.outer.name));
        let inner_ty = |at: usize| self.inner.ty(adjit_ir::Value::new(at));
        let outer_ty = |at: usize| self.outer.ty(adjit_ir::Value::new(at));
        let phi: Vec<_> = (0..self.k)
            .flat_map(|_| self.inner_phi_at.iter())
            .map(|&at| f.add_param(inner_ty(at), None))
            .collect();
        let row: Vec<_> = self
            .inner_row_at
            .iter()
            .map(|&at| {
                let p = f.add_param(inner_ty(at), None);
                f.set_param_kind(p, adjit_ir::ParamKind::Data);
                p
            })
            .collect();
        let shared: Vec<_> = (self.outer_shared_at.iter())
            .map(|&at| f.add_param(outer_ty(at), None))
            .collect();
        let shared_v: Vec<_> = (self.outer_shared_at.iter())
            .map(|&at| f.add_param(outer_ty(at), None))
            .collect();
        let n = self.inner.params().len();
        let mut ys = Vec::with_capacity(self.k);
        for j in 0..self.k {
            let mut args = vec![row[0]; n];
            for (i, &at) in self.inner_phi_at.iter().enumerate() {
                args[at] = phi[j * self.n_phi + i];
            }
            for (l, &at) in self.inner_row_at.iter().enumerate() {
                args[at] = row[l];
            }
            ys.extend(f.inline(&self.inner, &args));
        }
        // g's HVP program: its inputs (g's parameters), then its direction (the components',
        // then the shared entries').
        let mut args = vec![phi[0]; self.outer.params().len()];
        for (&at, &y) in self.outer_y_at.iter().zip(&ys) {
            args[at] = y;
        }
        for (&at, &v) in self.outer_shared_at.iter().zip(&shared) {
            args[at] = v;
        }
        for (&at, &v) in self.outer_row_at.iter().zip(&row) {
            args[at] = v;
        }
        for &at in &self.outer_y_at {
            let ty = outer_ty(at);
            args.push(f.push_inst(ty, adjit_ir::InstData::constant(ty, 0.0), None));
        }
        args.extend(&shared_v);
        for out in f.inline(&g_hvp.func, &args) {
            f.push_ret(out);
        }
        Ok(f)
    }

    fn hvp_programs(&self, fused_allowed: bool) -> Result<HvpPrograms<'_>> {
        let inner_hvp = self.program(Slot::InnerHvp)?;
        let outer = self.program(Slot::OuterHvp)?;
        let skip = self.compose.skip_zero_cotangents;
        let fused = fused_allowed && self.k * self.inner.n_insts() <= VALUES_UNROLL;
        let first = match (skip, outer.reads_component_tangents) {
            (false, _) => FirstStage::Hvp(inner_hvp),
            (true, true) => FirstStage::Components(self.program(Slot::InnerGradient)?),
            (true, false) if fused => FirstStage::Fused(self.program(Slot::Fused)?),
            (true, false) => FirstStage::Components(self.program(Slot::InnerPrimal)?),
        };
        let outer_hv = outer.layout.output(Part::HessianVector);
        Ok(HvpPrograms {
            first,
            inner_hvp,
            outer,
            inner_v: inner_hvp.layout.input(Part::Vector),
            inner_hv: inner_hvp.layout.output(Part::HessianVector),
            outer_v: outer.layout.input(Part::Vector),
            outer_hv,
        })
    }

    /// Put component `j`'s φⱼ and (into `v_at`) vⱼ into one program's inputs `x`.
    fn put_component(&self, x: &mut [f64], j: usize, phis: &[f64], v_phis: &[f64], v_at: usize) {
        let p = self.n_phi;
        put(x, &self.inner_phi_at, &phis[j * p..(j + 1) * p]);
        x[v_at..v_at + p].copy_from_slice(&v_phis[j * p..(j + 1) * p]);
    }

    /// Rows per stage of [`ComposedKernel::rows_hvp`]: about [`STAGE_RUNS`] component runs,
    /// and with the fused program at most [`FUSED_STAGE_BYTES`] of its inputs and outputs
    /// unless that is fewer than 16 rows (then the calls per stage cost more than L2 reads: at
    /// k = 100, 2 rows a stage ran 3–5 % slower than 10).
    fn stage_rows(&self, progs: &HvpPrograms<'_>) -> usize {
        let rows = (STAGE_RUNS / self.k).clamp(1, self.compose.block_rows);
        match progs.first {
            FirstStage::Fused(fused) => {
                let per_row = 8 * (fused.n_in + fused.n_out);
                rows.min((FUSED_STAGE_BYTES / per_row.max(1)).max(16))
            }
            _ => rows,
        }
    }

    fn hvp_worker(
        &self,
        progs: &HvpPrograms<'_>,
        theta: &[f64],
        v: &[f64],
        phis: &[f64],
        v_phis: &[f64],
        n_rows: usize,
    ) -> HvpWorker {
        let (k, c) = (self.k, self.stage_rows(progs));
        let (inner_hvp, outer) = (progs.inner_hvp, progs.outer);
        // The per-component first program's buffers: stage rows × k runs.
        let (mut first_in, mut first_out) = (Vec::new(), Vec::new());
        if let FirstStage::Hvp(first) | FirstStage::Components(first) = progs.first {
            first_in = vec![0.0; c * k * first.n_in];
            first_out = vec![0.0; c * k * first.n_out];
            for (at, x) in first_in.chunks_mut(first.n_in).enumerate() {
                let j = at % k;
                match progs.first {
                    FirstStage::Hvp(_) => {
                        self.put_component(x, j, phis, v_phis, progs.inner_v.start)
                    }
                    _ => put(
                        x,
                        &self.inner_phi_at,
                        &phis[j * self.n_phi..(j + 1) * self.n_phi],
                    ),
                }
            }
        }
        // g's inputs, unless the fused program computes g's HVP itself.
        let g_runs = if matches!(progs.first, FirstStage::Fused(_)) {
            0
        } else {
            c
        };
        let mut outer_in = vec![0.0; g_runs * outer.n_in];
        let shared_v = progs.outer_v.start + k * self.m;
        for x in outer_in.chunks_mut(outer.n_in) {
            for (i, (&at, &s)) in self.outer_shared_at.iter().zip(&self.shared).enumerate() {
                x[at] = theta[s];
                x[shared_v + i] = v[s];
            }
        }
        let skipping = !matches!(progs.first, FirstStage::Hvp(_));
        // The fused program's inputs, the same for every row but the row itself: every φⱼ
        // (from 0), then after the row θ_s and v_s.
        let (kp, r, n_s) = (phis.len(), self.row_len(), self.shared.len());
        let shared = || {
            (self.shared.iter().enumerate())
                .flat_map(move |(i, &at)| [(kp + r + i, theta[at]), (kp + r + n_s + i, v[at])])
        };
        let (mut fused_in, mut fused_pairs) = (Vec::new(), None);
        if let FirstStage::Fused(fused) = progs.first {
            // A call of fewer rows than a stage needs fewer points.
            let pairs = (fused.runner.code())
                .filter(|_| self.compose.lanes >= 2)
                .and_then(|code| code.pair_batch(c.min(n_rows)));
            if let Some(mut batch) = pairs {
                batch.set_all_run(0, phis);
                for (slot, value) in shared() {
                    batch.set_all(slot, value);
                }
                fused_pairs = Some(batch);
            } else {
                fused_in = vec![0.0; c * fused.n_in];
                for x in fused_in.chunks_mut(fused.n_in) {
                    x[..kp].copy_from_slice(phis);
                    for (slot, value) in shared() {
                        x[slot] = value;
                    }
                }
            }
        }
        let mut hvp_templates = Vec::new();
        if skipping {
            hvp_templates = vec![0.0; k * inner_hvp.n_in];
            for (j, x) in hvp_templates.chunks_mut(inner_hvp.n_in).enumerate() {
                self.put_component(x, j, phis, v_phis, progs.inner_v.start);
            }
        }
        HvpWorker {
            fused_pairs,
            fused_in,
            first_out,
            first_in,
            hvp_out: vec![0.0; if skipping { inner_hvp.n_out } else { 0 }],
            hvp_templates,
            outer_in,
            outer_out: vec![0.0; c * outer.n_out],
        }
    }

    /// Add the values, gradient slots and HVP slots of `rows` (at most
    /// [`ComposedKernel::stage_rows`] rows of `data`) to `acc` (value; k·p gradient slots, the
    /// shared gradient; k·p HVP slots, the shared HVP), each slot's terms in row order. Each
    /// stage runs as one batch over the rows: every component's first program, g's HVP, then
    /// the inner HVP of the components that need it.
    #[allow(clippy::too_many_arguments)]
    fn rows_hvp(
        &self,
        progs: &HvpPrograms<'_>,
        worker: &mut HvpWorker,
        data: &[f64],
        rows: Range<usize>,
        v_phis: &[f64],
        acc: &mut [f64],
    ) -> Result<()> {
        let (r, n_rows) = (self.row_len(), rows.len());
        let row = |i: usize| &data[(rows.start + i) * r..(rows.start + i + 1) * r];
        let outer = progs.outer;
        let (g_in, g_out) = (outer.n_in, outer.n_out);
        let in_pairs = match progs.first {
            FirstStage::Fused(fused) => self.stage_fused(fused, worker, &row, n_rows)?,
            FirstStage::Hvp(first) | FirstStage::Components(first) => {
                self.stage_first(first, progs, worker, &row, n_rows, v_phis)?;
                for (i, x) in worker.outer_in[..n_rows * g_in]
                    .chunks_mut(g_in)
                    .enumerate()
                {
                    for (&at, &value) in self.outer_row_at.iter().zip(row(i)) {
                        x[at] = value;
                    }
                }
                run_batch(
                    &outer.runner,
                    g_in,
                    g_out,
                    &worker.outer_in[..n_rows * g_in],
                    &mut worker.outer_out[..n_rows * g_out],
                )?;
                false
            }
        };
        let HvpWorker {
            fused_pairs,
            outer_out,
            first_out,
            hvp_templates,
            hvp_out,
            ..
        } = worker;
        let add = AddRows {
            kernel: self,
            progs,
            n_rows,
            first_out,
            hvp_templates,
            hvp_out,
        };
        match fused_pairs.as_ref().filter(|_| in_pairs) {
            // g's outputs read where the two-point kernels wrote them.
            Some(batch) => add.run(|i| batch.point_outputs(i), &row, acc),
            None => {
                let outs = &outer_out[..n_rows * g_out];
                add.run(|i| &outs[i * g_out..(i + 1) * g_out], &row, acc)
            }
        }
    }

    /// g's HVP outputs for `n_rows` rows by the fused program (its outputs are laid out as g's
    /// HVP program's): in the worker's pair batch (returns `true`), or in `outer_out`.
    fn stage_fused<'d>(
        &self,
        fused: &Program,
        worker: &mut HvpWorker,
        row: &impl Fn(usize) -> &'d [f64],
        n_rows: usize,
    ) -> Result<bool> {
        let kp = self.k * self.n_phi;
        let (n_in, n_out) = (fused.n_in, fused.n_out);
        if let (Some(batch), Some(code)) = (worker.fused_pairs.as_mut(), fused.runner.code()) {
            for i in 0..n_rows {
                batch.set_run(i, kp, row(i));
            }
            code.run_pair_batch_first(batch, n_rows)?;
            return Ok(true);
        }
        for (i, x) in worker.fused_in[..n_rows * n_in]
            .chunks_mut(n_in)
            .enumerate()
        {
            copy_short(&mut x[kp..kp + self.row_len()], row(i));
        }
        run_batch(
            &fused.runner,
            n_in,
            n_out,
            &worker.fused_in[..n_rows * n_in],
            &mut worker.outer_out[..n_rows * n_out],
        )?;
        Ok(false)
    }

    /// g's component inputs for `n_rows` rows from the first program run over every row and
    /// component: the values and uⱼ = ∇fⱼ·vⱼ (0 without a gradient: then g's outputs do not
    /// read them).
    fn stage_first<'d>(
        &self,
        first: &Program,
        progs: &HvpPrograms<'_>,
        worker: &mut HvpWorker,
        row: &impl Fn(usize) -> &'d [f64],
        n_rows: usize,
        v_phis: &[f64],
    ) -> Result<()> {
        let (k, p) = (self.k, self.n_phi);
        let (n_in, n_out, g_in) = (first.n_in, first.n_out, progs.outer.n_in);
        for (at, x) in worker.first_in[..n_rows * k * n_in]
            .chunks_mut(n_in)
            .enumerate()
        {
            for (&slot, &value) in self.inner_row_at.iter().zip(row(at / k)) {
                x[slot] = value;
            }
        }
        run_batch(
            &first.runner,
            n_in,
            n_out,
            &worker.first_in[..n_rows * k * n_in],
            &mut worker.first_out[..n_rows * k * n_out],
        )?;
        for (i, x) in worker.outer_in[..n_rows * g_in]
            .chunks_mut(g_in)
            .enumerate()
        {
            let outs = &worker.first_out[i * k * n_out..(i + 1) * k * n_out];
            for (j, out) in outs.chunks(n_out).enumerate() {
                x[self.outer_y_at[j]] = out[first.y.start];
                let u = out[first.grad.clone()]
                    .iter()
                    .zip(&v_phis[j * p..(j + 1) * p])
                    .map(|(a, b)| a * b)
                    .reduce(|sum, t| sum + t);
                x[progs.outer_v.start + j] = u.unwrap_or(0.0);
            }
        }
        Ok(())
    }
}

/// One row's outputs of g's HVP (or of the fused program, laid out alike), wherever the
/// program wrote them: a slice, or one point of a pair batch read in place.
trait GOutputs {
    fn get(&self, slot: usize) -> f64;
}

impl GOutputs for &[f64] {
    #[inline]
    fn get(&self, slot: usize) -> f64 {
        self[slot]
    }
}

impl GOutputs for PointOutputs<'_> {
    #[inline]
    fn get(&self, slot: usize) -> f64 {
        PointOutputs::get(self, slot)
    }
}

/// The second half of a stage: g's outputs of its rows added to the sums, with the f-HVPs they
/// ask for.
struct AddRows<'a> {
    kernel: &'a ComposedKernel,
    progs: &'a HvpPrograms<'a>,
    n_rows: usize,
    /// Every (row, component) pair's f-HVP outputs, with [`FirstStage::Hvp`].
    first_out: &'a [f64],
    /// See [`HvpWorker`].
    hvp_templates: &'a mut [f64],
    hvp_out: &'a mut [f64],
}

impl AddRows<'_> {
    /// Add the values, gradient slots and HVP slots of the stage's rows (g's outputs of row
    /// `i` are `outs(i)`) to `acc` (value; k·p gradient slots, the shared gradient; k·p HVP
    /// slots, the shared HVP), each slot's terms in row order.
    fn run<'d, O: GOutputs>(
        self,
        outs: impl Fn(usize) -> O,
        row: &impl Fn(usize) -> &'d [f64],
        acc: &mut [f64],
    ) -> Result<()> {
        let this = self.kernel;
        let progs = self.progs;
        let (k, p, s) = (this.k, this.n_phi, this.shared.len());
        let outer = progs.outer;
        let (y, grad, hv) = (outer.y.start, outer.grad.start, progs.outer_hv.start);
        // The value and the shared slots row by row, then the components' slots: the slots
        // are disjoint, so each still adds its terms in row order. Apart, the value's sum
        // stays in a register instead of going through memory from row to row.
        let half = k * p + s;
        let mut value = acc[0];
        for i in 0..self.n_rows {
            value += outs(i).get(y);
        }
        acc[0] = value;
        for i in (0..self.n_rows).filter(|_| s > 0) {
            let out = outs(i);
            for t in 0..s {
                acc[1 + k * p + t] += out.get(grad + k + t);
                acc[1 + half + k * p + t] += out.get(hv + k + t);
            }
        }
        let slots = Slots {
            p,
            half,
            grad: progs.inner_hvp.grad.clone(),
            hv: progs.inner_hv.clone(),
        };
        if let FirstStage::Hvp(first) = progs.first {
            // Every (row, component) pair's f-HVP ran in the first batch.
            let n_res = first.n_out;
            for i in 0..self.n_rows {
                let out = outs(i);
                for j in 0..k {
                    let e = i * k + j;
                    let res = &self.first_out[e * n_res..(e + 1) * n_res];
                    slots.add(acc, j, (out.get(grad + j), out.get(hv + j)), res);
                }
            }
            return Ok(());
        }
        // The components whose ȳⱼ or ẏ̄ⱼ is nonzero run f's HVP, row by row, each on its
        // component's inputs kept in place (φⱼ and vⱼ), with only the row written: no pair's
        // inputs are gathered into a batch first.
        let inner = progs.inner_hvp;
        let (n_in, n_res) = (inner.n_in, inner.n_out);
        let (row_run, n_row) = (
            rows::consecutive(&this.inner_row_at),
            this.inner_row_at.len(),
        );
        let res = &mut self.hvp_out[..n_res];
        for i in 0..self.n_rows {
            let out = outs(i);
            let weights = |j: usize| (out.get(grad + j), out.get(hv + j));
            for_each_nonzero(k, weights, |j, w| {
                let x = &mut self.hvp_templates[j * n_in..(j + 1) * n_in];
                match row_run {
                    Some(first) => copy_short(&mut x[first..first + n_row], &row(i)[..n_row]),
                    None => put(x, &this.inner_row_at, row(i)),
                }
                inner.runner.run(x, res)?;
                slots.add(acc, j, w, res);
                Ok(())
            })?;
        }
        Ok(())
    }
}

/// Where one component's f-HVP results add up: its p gradient slots after the value, its p
/// HVP slots `half` further on.
struct Slots {
    p: usize,
    half: usize,
    /// The gradient ∇fⱼ and the product Hⱼvⱼ in f's HVP outputs.
    grad: Range<usize>,
    hv: Range<usize>,
}

impl Slots {
    /// θ̄ⱼ += ȳⱼ·∇fⱼ and (H·v)ⱼ += ẏ̄ⱼ·∇fⱼ + ȳⱼ·Hⱼvⱼ for component `j`, from f's HVP outputs
    /// `res`, with `(w, w_dot)` = (ȳⱼ, ẏ̄ⱼ).
    #[inline]
    fn add(&self, acc: &mut [f64], j: usize, (w, w_dot): (f64, f64), res: &[f64]) {
        let (g, h) = (&res[self.grad.clone()], &res[self.hv.clone()]);
        let at = 1 + j * self.p;
        let (grads, hvs) = acc[at..].split_at_mut(self.half);
        for ((a, &gi), &hi) in hvs[..self.p].iter_mut().zip(g).zip(h) {
            *a += w_dot * gi + w * hi;
        }
        for (a, &gi) in grads[..self.p].iter_mut().zip(g) {
            *a += w * gi;
        }
    }
}

/// Call `run(j, (ȳⱼ, ẏ̄ⱼ))` for each of the `k` components whose cotangent ȳⱼ or its tangent
/// ẏ̄ⱼ (`weights(j)`) is nonzero, in component order: a bit mask per 64 components built
/// without a branch (which one is nonzero changes from row to row), then its set bits.
#[inline]
fn for_each_nonzero(
    k: usize,
    weights: impl Fn(usize) -> (f64, f64),
    mut run: impl FnMut(usize, (f64, f64)) -> Result<()>,
) -> Result<()> {
    for first in (0..k).step_by(64) {
        let mut mask = 0u64;
        for j in first..k.min(first + 64) {
            let (w, w_dot) = weights(j);
            mask |= u64::from((w != 0.0) | (w_dot != 0.0)) << (j - first);
        }
        while mask != 0 {
            let j = first + mask.trailing_zeros() as usize;
            run(j, weights(j))?;
            mask &= mask - 1;
        }
    }
    Ok(())
}

/// `dst.copy_from_slice(src)` (same lengths) in runs of four, inline: for the few numbers of
/// a row or a kernel's inputs, a call of the C library's `memcpy` cost more than the copy
/// (under `perf`, two such calls per active pair were 8 % of a k-means HVP).
#[inline]
fn copy_short(dst: &mut [f64], src: &[f64]) {
    let mut d = dst.chunks_exact_mut(4);
    let mut s = src.chunks_exact(4);
    for (d, s) in (&mut d).zip(&mut s) {
        let s: [f64; 4] = [s[0], s[1], s[2], s[3]];
        d.copy_from_slice(&s);
    }
    for (d, &s) in d.into_remainder().iter_mut().zip(s.remainder()) {
        *d = s;
    }
}

#[cfg(test)]
mod tests {
    use adjit_diff::Mode;

    use super::*;
    use crate::compile::derive;

    /// Whether the HVP program of `g` reads its direction's entries.
    fn hvp_reads_direction(g: &Function) -> bool {
        let derived = derive(g, Mode::Hvp).expect("an HVP program");
        reads_any(&derived.func, derived.layout.input(Part::Vector))
    }

    #[test]
    fn a_minimum_does_not_read_the_tangents_and_a_smooth_reduction_does() {
        let min = crate::trace(4, |y| y[1..].iter().fold(y[0], |m, &v| m.min(v)));
        let max_select = crate::trace(3, |y| y[0].max(y[1]) + y[2]);
        assert!(!hvp_reads_direction(&min));
        assert!(!hvp_reads_direction(&max_select));
        let lse = crate::trace(3, |y| (y[0].exp() + y[1].exp() + y[2].exp()).ln());
        let square = crate::trace(2, |y| y[0] * y[1]);
        assert!(hvp_reads_direction(&lse));
        assert!(hvp_reads_direction(&square));
    }

    #[test]
    fn the_fused_program_gives_the_bits_of_the_component_runs() {
        // k-means with the fused program and with k inner primal runs and g's HVP; at
        // k = 4500 the fused program (27,000 instructions) is past `roll_above` and its
        // components run as a loop.
        for (d, k, rows) in [(3, 4, 50), (2, 4500, 9)] {
            fused_against_component_runs(d, k, rows);
        }
    }

    fn fused_against_component_runs(d: usize, k: usize, rows: usize) {
        let inner = crate::trace_with_data(d, d, |c, a| {
            let terms = c.iter().zip(a).map(|(&c, &a)| (a - c).square());
            terms.reduce(|s, t| s + t).expect("d ≥ 1")
        });
        let outer = crate::trace(k, |y| y[1..].iter().fold(y[0], |m, &v| m.min(v)));
        let gather: Vec<_> = (0..d)
            .map(|l| super::super::Gather { base: l, stride: d })
            .collect();
        let spec = super::super::Composition {
            transform: None,
            inner: &inner,
            outer: &outer,
            components: k,
            gather: &gather,
            shared: &[],
            n_theta: k * d,
        };
        let compose = super::super::ComposeOptions {
            skip_zero_cotangents: true,
            block_rows: 7,
            ..Default::default()
        };
        let kernel = ComposedKernel::with_options(&spec, compose, &crate::Options::default())
            .expect("composes");
        let mut rng = adjit_ir::random::Rng::new(5);
        let (theta, data, v) = (
            rng.vector(k * d, -1.0, 1.0),
            rng.vector(rows * d, -1.0, 1.0),
            rng.vector(k * d, -1.0, 1.0),
        );
        let run = |fused: bool| {
            let (mut g, mut h) = (vec![0.0; k * d], vec![0.0; k * d]);
            let total = kernel
                .hvp_with(&theta, &data, &v, &mut g, &mut h, fused)
                .expect("hvp");
            let all: Vec<u64> = [total]
                .iter()
                .chain(&g)
                .chain(&h)
                .map(|x| x.to_bits())
                .collect();
            all
        };
        let fused = |allowed| {
            let progs = kernel.hvp_programs(allowed).expect("programs");
            matches!(progs.first, FirstStage::Fused(_))
        };
        assert!(fused(true) && !fused(false));
        assert_eq!(run(true), run(false));
    }

    #[test]
    fn a_read_through_a_comparison_counts() {
        // An output that only compares its inputs reads them.
        let f = adjit_ir::parse_function(
            "func @f(%a: f64, %b: f64) -> (f64, bool) {\n  %c = fcmp.lt %a, %b\n  ret %a, %c\n}",
        )
        .expect("parses");
        assert!(reads_any(&f, 1..2));
        assert!(reads_any(&f, 0..1));
        let g = adjit_ir::parse_function(
            "func @g(%a: f64, %b: f64) -> f64 {\n  %t = mul %a, 2.0\n  ret %t\n}",
        )
        .expect("parses");
        assert!(!reads_any(&g, 1..2));
        assert!(reads_any(&g, 0..2));
    }
}
