//! Iterated steps: `s_{k+1} = step(s_k, θ)` for N steps, compiled once whatever N, with
//! gradients under a memory [`Strategy`] that Revolve schedules over the steps.
//!
//! **The step's signature.** A step function returns the next state: its `n` outputs are the
//! state, and its first `n` parameters are the state, of the same types and differentiated
//! (not `data`). The parameters after them, `θ`, are shared by every step and never change;
//! the differentiated ones get adjoints, `data` ones (a step size, say) do not. So
//! `step(s₀ … s_{n−1}, θ₀ … θ_{p−1}) -> (s₀′ … s_{n−1}′)`.
//!
//! **The iterated function** F(s₀, θ) has the step's parameters and returns the final state
//! s_N, or `objective(s_N, θ)` when an objective is given (same parameters as the step, any
//! number of outputs). [`IteratedStep`] behaves like the unrolled program of F (the step traced
//! N times, then the objective): the same layouts (`x = (s₀, θ)`, `x̄ = (s̄₀, θ̄)`), and the same
//! numbers bit for bit, because each piece is the unrolled program's own arithmetic:
//!
//! * the primal and the JVP run the step's compiled primal and JVP N times (forward
//!   derivatives are local to each instruction);
//! * the VJP runs the compiled VJP of `step′(s, θ) = (step(s, θ), θ)` once per step, last step
//!   first. Feeding θ's running adjoint in as the cotangent of the pass-through θ makes each
//!   step continue the unrolled reverse sweep's single chain of additions into θ̄ instead of
//!   adding per-step partial sums, so θ̄ is the unrolled tape's bit for bit. The chain starts
//!   from −0.0, the IEEE additive identity.
//!
//! **Strategies** decide which states are stored. Every strategy is an action list over the N
//! steps that `adjit_diff` generates ([`adjit_diff::checkpoint::StepSchedule`], streamed so
//! that memory is O(snapshots), not O(N)): [`Strategy::Tape`] stores every state (Revolve with
//! N snapshots), `checkpoint:S` is binomial checkpointing with S snapshots (min_advances(N, S)
//! re-advanced steps), `bytes:B` the most snapshots whose [`StepStats::peak_bytes`] fit in B,
//! and `uniform` stores every ⌈√N⌉-th state and then the states of one segment at a time
//! (about one extra forward pass, 2√N states). `diff`'s executor replays the list (advance =
//! run the step's primal, takeshot/restore = copy a state, firsturn / youturn = the step's
//! VJP), the same executor that drives a
//! [`CheckpointedGradient`](crate::checkpoint::CheckpointedGradient)'s stages.
//!
//! Files: this one holds [`IteratedStep`]; `programs.rs` the compiled programs and what each
//! stage program of the replay runs; `summed.rs` [`SummedLoss`]. The IR transforms
//! (`step′ = (step, θ)`, the running sum) are `adjit_diff::steps` passes.

mod programs;
mod summed;

pub use summed::SummedLoss;

use std::num::NonZeroUsize;
use std::sync::OnceLock;

use adjit_diff::checkpoint::{
    ExecBuffers, ExecError, Executor, StepMemory, StepSchedule, Strategy,
};
use adjit_diff::layout::{Kind, Layout};
use adjit_diff::steps::pass_through;
use adjit_diff::Mode;
use adjit_ir::{Function, Value};

use crate::compile::derive;
use crate::error::{Error, Expected, Result};
use crate::inverse::CompiledInverse;
use crate::options::{InverseMode, Options};
use crate::prepared::{check_lengths, length_error, parts_error, signature_of, Prepared};
use crate::runner::Runner;
use programs::{InverseRunner, ObjectivePrograms, StepPrograms, VjpRunner};

/// Figures of an [`IteratedStep`]'s VJP, from its schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct StepStats {
    pub steps: usize,
    /// Stored states (snapshot slots) the schedule uses.
    pub snapshots: usize,
    /// Step primals run per VJP call besides the N step VJPs (re-advances included): for
    /// `checkpoint:S`, Revolve's `min_advances(N, S)`; N − 1 for the tape. With an objective,
    /// one more step primal computes the final state before the objective's VJP. Named like
    /// [`crate::checkpoint::CheckpointStats::forward_ops`] (forward work per call,
    /// recomputation included), counted in steps.
    pub forward_steps: u64,
    /// Bytes one VJP call holds beyond the caller's buffers: stored states, the current state
    /// and adjoint, the programs' input and output buffers, and the largest native workspace.
    pub peak_bytes: u64,
}

/// `s_{k+1} = step(s_k, θ)` for N steps, then an optional objective: value, JVP and VJP
/// compiled once (compile time independent of N), see the [module docs](self).
///
/// ```
/// use adjit::steps::IteratedStep;
/// use adjit::{Strategy, Type};
/// // Exponential decay s ← s − 0.1·θ·s, θ shared by all steps.
/// let step = adjit::trace_multi("decay", &[Type::F64; 2], |x| vec![x[0] - 0.1 * x[1] * x[0]]);
/// let decay = IteratedStep::new(&step, 1000, Strategy::Checkpoint { snapshots: 5 }).unwrap();
/// let (mut y, mut grad) = ([0.0], [0.0; 2]);
/// decay.vjp(&[1.0, 0.5], &[1.0], &mut y, &mut grad).unwrap(); // x = (s₀, θ), w = 1
/// let expected = 0.95f64.powi(1000);
/// assert!((y[0] - expected).abs() < 1e-12 * expected);
/// assert!((grad[0] - expected).abs() < 1e-12 * expected); // ∂s_N/∂s₀ = 0.95^N
/// let forward_steps = adjit::diff::checkpoint::revolve::min_advances(1000, 5);
/// assert_eq!(decay.stats().forward_steps, forward_steps);
/// ```
pub struct IteratedStep {
    /// The step's signature, for messages.
    sig: Function,
    /// F's layouts of the primal, the JVP and the VJP: those of the objective, or of the step
    /// when there is none (F has their parameters and outputs).
    layouts: [Layout; 3],
    n_state: usize,
    /// Which states the VJP stores: an action list over the steps that `diff` generates.
    schedule: StepSchedule,
    /// Replays the schedule over the step chain for the VJP.
    executor: Executor,
    /// Positions, among the step's parameters, of the differentiated θ entries.
    theta_at: Vec<usize>,
    programs: StepPrograms,
    stats: StepStats,
    /// The step itself and the options, to build its inverse programs on first use.
    step_func: Function,
    opts: Options,
    /// The step's compiled reverse-, forward- and dense-inverse (in `InverseMode::ALL` order).
    inverses: [OnceLock<CompiledInverse>; 3],
}

impl std::fmt::Debug for IteratedStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IteratedStep")
            .field("step", &self.sig.name)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl IteratedStep {
    /// `n_steps` steps of `step`, F = the final state, under `strategy`.
    pub fn new(step: &Function, n_steps: usize, strategy: Strategy) -> Result<IteratedStep> {
        IteratedStep::with_options(step, None, n_steps, strategy, &Options::default())
    }

    /// `n_steps` steps of `step`, then `objective` (with the step's parameters) if given, on
    /// the engine and with the code-generation options of `opts`.
    pub fn with_options(
        step: &Function,
        objective: Option<&Function>,
        n_steps: usize,
        strategy: Strategy,
        opts: &Options,
    ) -> Result<IteratedStep> {
        adjit_ir::verify(step)?;
        let driver_error = |needs: String| Error::Signature {
            func: step.name.clone(),
            needs,
        };
        if let Some(p) = step.params().find(|&p| !step.ty(p).is_float()) {
            return Err(Error::BoolInput {
                what: "an iterated step",
                func: step.name.clone(),
                index: p.index(),
            });
        }
        let n_state = step.n_outputs();
        let Some(n_steps) = NonZeroUsize::new(n_steps) else {
            return Err(Error::TooFew {
                func: step.name.clone(),
                what: "the number of steps N of an iterated step (at least one step)",
                least: 1,
                got: n_steps,
            });
        };
        if n_state == 0 || step.n_params < n_state {
            return Err(driver_error(format!(
                "a step returns the state and takes it first: {} outputs but {} parameters",
                n_state, step.n_params
            )));
        }
        for i in 0..n_state {
            let p = Value::new(i);
            if step.ret_types[i] != step.ty(p) || step.is_data(p) {
                return Err(driver_error(format!(
                    "state entry {i}: parameter {i} ({}{}) must be differentiated and of the \
                     type of output {i} ({})",
                    if step.is_data(p) { "data " } else { "" },
                    step.ty(p),
                    step.ret_types[i]
                )));
            }
        }
        let theta_at: Vec<usize> = (n_state..step.n_params)
            .filter(|&i| !step.is_data(Value::new(i)))
            .collect();
        let sig = signature_of(step);
        let shape = objective.unwrap_or(step);
        let layouts = [Kind::Primal, Kind::Jvp(1), Kind::Vjp].map(|k| Layout::of(shape, k));
        let objective = match objective {
            None => None,
            Some(obj) => {
                adjit_ir::verify(obj)?;
                let same = obj.n_params == step.n_params
                    && step
                        .params()
                        .all(|p| obj.ty(p) == step.ty(p) && obj.is_data(p) == step.is_data(p));
                if !same {
                    return Err(Error::Signature {
                        func: obj.name.clone(),
                        needs: format!(
                            "an objective takes the step's parameters (state, then θ, with \
                             their types and kinds), like @{}",
                            step.name
                        ),
                    });
                }
                Some(ObjectivePrograms {
                    primal: Runner::new(&derive(obj, Mode::Primal)?.func, opts)?,
                    vjp: Runner::new(&derive(&passed(obj, &theta_at)?, Mode::Vjp)?.func, opts)?,
                    jvp: Runner::new(&derive(obj, Mode::Jvp)?.func, opts)?,
                    n_float_outputs: obj.ret_types.iter().filter(|t| t.is_float()).count(),
                    n_outputs: obj.n_outputs(),
                })
            }
        };
        let step_vjp = derive(&passed(step, &theta_at)?, Mode::Vjp)?.func;
        let step_vjp_len = (step_vjp.n_params + step_vjp.n_outputs()) as u64;
        let programs = StepPrograms {
            step: Runner::new(&derive(step, Mode::Primal)?.func, opts)?,
            step_vjp: Runner::new(&step_vjp, opts)?,
            step_jvp: Runner::new(&derive(step, Mode::Jvp)?.func, opts)?,
            objective,
            n_state,
            n_params: step.n_params,
            n_theta: theta_at.len(),
        };
        let workspace = [&programs.step, &programs.step_vjp]
            .iter()
            .chain(programs.objective.as_ref().map(|o| &o.vjp).as_ref())
            .filter_map(|r| r.code().map(|c| c.workspace_bytes() as u64))
            .max()
            .unwrap_or(0);
        // Fixed bytes: current state and adjoint, the primal's and the VJPs' buffers.
        let fixed = 8 * (2 * (n_state + theta_at.len()) as u64 + step_vjp_len)
            + 8 * (step.n_params + n_state) as u64
            + programs.objective.as_ref().map_or(0, |o| {
                8 * (step.n_params + 2 * (o.n_outputs + theta_at.len()) + n_state) as u64
            })
            + workspace;
        let memory = StepMemory {
            fixed_bytes: fixed,
            state_bytes: 8 * n_state as u64,
            max_bytes: u64::try_from(crate::memory::MAX_BYTES).unwrap_or(u64::MAX),
        };
        let schedule = StepSchedule::new(strategy, n_steps, memory)?;
        let stats = StepStats {
            steps: schedule.n_steps(),
            snapshots: schedule.snapshots(),
            forward_steps: schedule.advances(),
            peak_bytes: memory.peak_bytes(schedule.snapshots()),
        };
        Ok(IteratedStep {
            sig,
            layouts,
            n_state,
            executor: Executor::steps(programs.vjp_shape(), schedule),
            schedule,
            theta_at,
            programs,
            stats,
            step_func: step.clone(),
            opts: opts.clone(),
            inverses: Default::default(),
        })
    }

    pub fn stats(&self) -> StepStats {
        self.stats
    }

    /// Number of state entries.
    pub fn n_state(&self) -> usize {
        self.n_state
    }

    pub fn n_steps(&self) -> usize {
        self.schedule.n_steps()
    }

    /// Every state of the run, like `scan`'s `ys`: `states` receives s₁ … s_N (N × n_state
    /// numbers, row-major) for `x = (s₀, θ)`. Its length is checked before anything runs.
    ///
    /// ```
    /// use adjit::steps::IteratedStep;
    /// use adjit::{Strategy, Type};
    /// let step = adjit::trace_multi("half", &[Type::F64; 1], |x| vec![x[0] * 0.5]);
    /// let it = IteratedStep::new(&step, 3, Strategy::Tape).unwrap();
    /// let mut states = [0.0; 3];
    /// it.trajectory(&[8.0], &mut states).unwrap();
    /// assert_eq!(states, [4.0, 2.0, 1.0]);
    /// ```
    pub fn trajectory(&self, x: &[f64], states: &mut [f64]) -> Result<()> {
        let n = self.n_state;
        let checks = [
            ("x = (s₀, θ)", Expected::Count(self.sig.n_params), x.len()),
            (
                "the states",
                Expected::Grid {
                    rows: self.schedule.n_steps(),
                    len: n,
                    rows_are: "steps",
                },
                states.len(),
            ),
        ];
        if let Some((what, expected, got)) = checks.into_iter().find(|(_, e, got)| !e.accepts(*got))
        {
            return Err(Error::ArgumentLength {
                func: self.sig.name.clone(),
                what: format!("the trajectory's {what}"),
                expected,
                got,
            });
        }
        let mut input = x.to_vec();
        for row in states.chunks_exact_mut(n.max(1)) {
            self.programs.step.run(&input, row)?;
            input[..n].copy_from_slice(row);
        }
        Ok(())
    }

    /// The layout of F's VJP: `(x, ȳ) -> (y, x̄)` with `x = (s₀, θ)` and `x̄ = (s̄₀, θ̄)`.
    pub fn layout(&self) -> &Layout {
        &self.layouts[2]
    }

    fn check(&self, kind: Kind, inputs: &[usize], outputs: &[usize]) -> Result<()> {
        let layout = match kind {
            Kind::Primal => &self.layouts[0],
            Kind::Jvp(_) => &self.layouts[1],
            _ => &self.layouts[2],
        };
        let name = &self.sig.name;
        check_lengths(
            name,
            layout,
            inputs.iter().copied(),
            layout.output_parts(),
            outputs.iter().copied(),
        )
    }

    /// `y = F(x)` with `x = (s₀, θ)`: N step primals, then the objective.
    pub fn eval(&self, x: &[f64], y: &mut [f64]) -> Result<()> {
        self.check(Kind::Primal, &[x.len()], &[y.len()])?;
        let n = self.n_state;
        let mut input = x.to_vec();
        let mut next = vec![0.0; n];
        for _ in 0..self.schedule.n_steps() {
            self.programs.step.run(&input, &mut next)?;
            input[..n].copy_from_slice(&next);
        }
        match &self.programs.objective {
            None => y.copy_from_slice(&input[..n]),
            Some(obj) => obj.primal.run(&input, y)?,
        }
        Ok(())
    }

    /// `y = F(x)` and `ydot = J·xdot` (`xdot = (ṡ₀, θ̇)`, one per differentiated input): the
    /// step's JVP N times, then the objective's.
    pub fn jvp(&self, x: &[f64], xdot: &[f64], y: &mut [f64], ydot: &mut [f64]) -> Result<()> {
        self.check(Kind::Jvp(1), &[x.len(), xdot.len()], &[y.len(), ydot.len()])?;
        let n = self.n_state;
        // The JVP's inputs: x, then ẋ = (ṡ, θ̇); outputs: s′, ṡ′.
        let mut input = x.to_vec();
        input.extend_from_slice(xdot);
        let mut next = vec![0.0; 2 * n];
        let tangent_at = x.len();
        for _ in 0..self.schedule.n_steps() {
            self.programs.step_jvp.run(&input, &mut next)?;
            input[..n].copy_from_slice(&next[..n]);
            input[tangent_at..tangent_at + n].copy_from_slice(&next[n..]);
        }
        match &self.programs.objective {
            None => {
                y.copy_from_slice(&input[..n]);
                ydot.copy_from_slice(&input[tangent_at..tangent_at + n]);
            }
            Some(obj) => {
                let mut out = vec![0.0; obj.n_outputs + ydot.len()];
                obj.jvp.run(&input, &mut out)?;
                y.copy_from_slice(&out[..obj.n_outputs]);
                ydot.copy_from_slice(&out[obj.n_outputs..]);
            }
        }
        Ok(())
    }

    /// `y = F(x)` and `grad = Jᵀ·w` (`w`: one per float output of F; `grad = (s̄₀, θ̄)`) under
    /// the strategy: the step's VJP once per step, last first, on states the schedule stores
    /// or recomputes.
    pub fn vjp(&self, x: &[f64], w: &[f64], y: &mut [f64], grad: &mut [f64]) -> Result<()> {
        self.check(Kind::Vjp, &[x.len(), w.len()], &[y.len(), grad.len()])?;
        self.sweep(x, w, y, grad).map(|_| ())
    }

    /// Inverse products through the steps, for a square step without θ and without an
    /// objective (F = s_N, J = J_N ⋯ J_1): `out = J⁻¹·v` (reverse- or dense-inverse: every
    /// step's inverse, last step first, the states visited in the Revolve order of the
    /// strategy, so `checkpoint:S` bounds the memory as for the VJP) or `out = J⁻ᵀ·v`
    /// (forward-inverse: first step first, streamed with the primal, no tape); `y = s_N`. A
    /// step whose J is singular or whose product is not finite is an error naming the step's
    /// lump, like [`CompiledInverse`]. The step's inverse program is compiled on first use.
    ///
    /// ```
    /// use adjit::steps::IteratedStep;
    /// use adjit::{InverseMode, Strategy, Type};
    /// // A rotation by 0.1 rad per step: J⁻¹ of 10 steps rotates back by 1 rad.
    /// let (c, s) = (0.1f64.cos(), 0.1f64.sin());
    /// let step = adjit::trace_multi("rot", &[Type::F64; 2], |x| {
    ///     vec![c * x[0] - s * x[1], s * x[0] + c * x[1]]
    /// });
    /// let it = IteratedStep::new(&step, 10, Strategy::Checkpoint { snapshots: 2 }).unwrap();
    /// let (mut y, mut back) = ([0.0; 2], [0.0; 2]);
    /// it.inverse(InverseMode::Reverse, &[1.0, 0.0], &[1.0f64.cos(), 1.0f64.sin()], &mut y, &mut back)
    ///     .unwrap();
    /// assert!((back[0] - 1.0).abs() < 1e-12 && back[1].abs() < 1e-12);
    /// ```
    pub fn inverse(
        &self,
        mode: InverseMode,
        x: &[f64],
        v: &[f64],
        y: &mut [f64],
        out: &mut [f64],
    ) -> Result<()> {
        let n = self.n_state;
        if !self.theta_at.is_empty()
            || self.step_func.n_params != n
            || self.programs.objective.is_some()
        {
            return Err(Error::Signature {
                func: self.sig.name.clone(),
                needs: "inverse products through the steps need a square step without θ \
                        (parameters = state) and no objective"
                    .into(),
            });
        }
        for (what, len) in [
            ("x", x.len()),
            ("v", v.len()),
            ("y", y.len()),
            ("out", out.len()),
        ] {
            if len != n {
                return Err(Error::ArgumentLength {
                    func: self.sig.name.clone(),
                    what: what.to_string(),
                    expected: Expected::CountOf {
                        count: n,
                        each: "the state's length",
                    },
                    got: len,
                });
            }
        }
        let k = InverseMode::ALL
            .iter()
            .position(|&m| m == mode)
            .unwrap_or(0);
        let inv = match self.inverses[k].get() {
            Some(inv) => inv,
            None => {
                let built = CompiledInverse::with_options(&self.step_func, mode, &self.opts)?;
                self.inverses[k].get_or_init(|| built)
            }
        };
        if mode == InverseMode::Forward {
            // J⁻ᵀ = J_1⁻ᵀ first: each step's forward-inverse also returns the next state.
            let mut product = v.to_vec();
            let mut next = vec![0.0; n];
            let mut state = x.to_vec();
            for _ in 0..self.schedule.n_steps() {
                inv.call(&state, &product, &mut next, out)?;
                product.copy_from_slice(out);
                state.copy_from_slice(&next);
            }
            y.copy_from_slice(&state);
            out.copy_from_slice(&product);
            return Ok(());
        }
        // J⁻¹ = J_N⁻¹ first: the states in reverse order, as the VJP's sweep visits them, the
        // product in place of the adjoint.
        let executor = Executor::steps(self.programs.inverse_shape(), self.schedule);
        let mut bufs = self.buffers(&executor)?;
        let mut runner = InverseRunner {
            step: &self.programs.step,
            inverse: inv,
            n_state: n,
        };
        executor
            .run(&mut bufs, &mut runner, x, v, y, out)
            .map_err(|e| match e {
                ExecError::Stage { source, .. } => source,
                ExecError::Length {
                    part,
                    expected,
                    got,
                } => Error::ArgumentLength {
                    func: self.sig.name.clone(),
                    what: part.symbol(false).to_string(),
                    expected: Expected::CountOf {
                        count: expected,
                        each: "the state's length",
                    },
                    got,
                },
            })
    }

    /// The VJP, returning the number of step primals it ran (re-advances, not counting the
    /// one before the objective).
    fn sweep(&self, x: &[f64], w: &[f64], y: &mut [f64], grad: &mut [f64]) -> Result<u64> {
        let mut bufs = self.buffers(&self.executor)?;
        let mut runner = VjpRunner {
            programs: &self.programs,
            n_steps: self.schedule.n_steps(),
            advances: 0,
        };
        self.executor
            .run(&mut bufs, &mut runner, x, w, y, grad)
            .map_err(|e| match e {
                ExecError::Stage { source, .. } => source,
                ExecError::Length {
                    part,
                    expected,
                    got,
                } => length_error(&self.sig.name, &self.layouts[2], part, expected, got),
            })?;
        Ok(runner.advances)
    }

    /// The buffers of one reversal, its stored states allocated fallibly: states the machine
    /// cannot hold are an error that says what fits, never an abort.
    fn buffers(&self, executor: &Executor) -> Result<ExecBuffers> {
        let (n_steps, slots, n_state) = (
            self.schedule.n_steps(),
            self.schedule.snapshots(),
            self.n_state,
        );
        let bytes = slots as u128 * n_state as u128 * 8;
        let available = crate::memory::limit();
        let too_many = || Error::Memory {
            func: self.sig.name.clone(),
            what: format!(
                "{n_steps} steps' {slots} stored states of {n_state} number{}",
                if n_state == 1 { "" } else { "s" }
            ),
            bytes,
            available,
            alternative: "use checkpoint:S (S states, e.g. checkpoint:20) or bytes:B (a memory \
                          budget), which recompute instead of storing"
                .to_string(),
        };
        if bytes > available {
            return Err(too_many());
        }
        executor.try_buffers().ok_or_else(too_many)
    }
}

/// `func` with its differentiated θ parameters (positions `theta_at`) appended to its
/// returns, so that a VJP takes θ's running adjoint as their cotangent.
fn passed(func: &Function, theta_at: &[usize]) -> Result<Function> {
    pass_through(func, theta_at).map_err(|e| Error::Signature {
        func: func.name.clone(),
        needs: e.to_string(),
    })
}

impl Prepared for IteratedStep {
    fn name(&self) -> &str {
        &self.sig.name
    }

    /// F's VJP, `(x ++ ȳ) -> (y ++ x̄)`: the product the strategy is for.
    fn layout(&self) -> &Layout {
        &self.layouts[2]
    }

    fn call_parts(&self, inputs: &[&[f64]], outputs: &mut [&mut [f64]]) -> Result<()> {
        match (inputs, outputs) {
            ([x, w], [y, grad]) => self.vjp(x, w, y, grad),
            (inputs, outputs) => Err(parts_error(self, inputs.len(), outputs.len())),
        }
    }
}

#[cfg(test)]
mod tests;
