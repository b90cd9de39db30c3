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
//! **Strategies** decide which states are stored. Every strategy is a Revolve action list over
//! the N steps (advance = run the step's primal, takeshot/restore = copy a state, firsturn /
//! youturn = the step's VJP), generated on the fly so that memory is O(snapshots), not O(N):
//! [`Strategy::Tape`] stores every state (Revolve with N snapshots), `checkpoint:S` is
//! binomial checkpointing with S snapshots (min_advances(N, S) re-advanced steps),
//! `bytes:B` the most snapshots whose [`StepStats::peak_bytes`] fit in B, and `uniform` stores
//! every ⌈√N⌉-th state and then the states of one segment at a time (about one extra forward
//! pass, 2√N states).

use adjit_diff::checkpoint::revolve::{self, min_advances, Action};
use adjit_diff::checkpoint::CheckpointError;
use adjit_diff::layout::{Kind, Layout};
use adjit_diff::Mode;
use adjit_ir::{Function, Value};

use crate::compile::derive;
use crate::prepared::{check_lengths, signature_of};
use crate::runner::Runner;
use std::sync::OnceLock;

use crate::error::{Error, Expected, Result};
use crate::inverse::CompiledInverse;
use crate::options::InverseMode;
use crate::options::Options;
use adjit_diff::checkpoint::Strategy;

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

/// How the states are stored: a Revolve action list with `snapshots` slots, or the two-level
/// √N scheme with segments of `segment` steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Schedule {
    Revolve { snapshots: usize },
    Uniform { segment: usize },
}

/// The compiled programs of an objective.
struct ObjectivePrograms {
    primal: Runner,
    /// VJP of `objective′(s, θ) = (objective(s, θ), θ)`.
    vjp: Runner,
    jvp: Runner,
    /// Float outputs (the cotangent's length) and all outputs.
    n_float_outputs: usize,
    n_outputs: usize,
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
    n_steps: usize,
    schedule: Schedule,
    /// Positions, among the step's parameters, of the differentiated θ entries.
    theta_at: Vec<usize>,
    step: Runner,
    /// VJP of `step′(s, θ) = (step(s, θ), θ)`.
    step_vjp: Runner,
    step_jvp: Runner,
    objective: Option<ObjectivePrograms>,
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
        if n_steps == 0 {
            return Err(Error::TooFew {
                func: step.name.clone(),
                what: "the number of steps N of an iterated step (at least one step)",
                least: 1,
                got: n_steps,
            });
        }
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
                    vjp: Runner::new(&derive(&pass_theta(obj, &theta_at), Mode::Vjp)?.func, opts)?,
                    jvp: Runner::new(&derive(obj, Mode::Jvp)?.func, opts)?,
                    n_float_outputs: obj.ret_types.iter().filter(|t| t.is_float()).count(),
                    n_outputs: obj.n_outputs(),
                })
            }
        };
        let step_vjp = derive(&pass_theta(step, &theta_at), Mode::Vjp)?.func;
        let step_vjp_len = (step_vjp.n_params + step_vjp.n_outputs()) as u64;
        let mut this = IteratedStep {
            sig,
            layouts,
            n_state,
            n_steps,
            schedule: Schedule::Revolve { snapshots: 1 },
            step: Runner::new(&derive(step, Mode::Primal)?.func, opts)?,
            step_vjp: Runner::new(&step_vjp, opts)?,
            step_jvp: Runner::new(&derive(step, Mode::Jvp)?.func, opts)?,
            theta_at,
            objective,
            stats: StepStats::default(),
            step_func: step.clone(),
            opts: opts.clone(),
            inverses: Default::default(),
        };
        let workspace = [&this.step, &this.step_vjp]
            .iter()
            .chain(this.objective.as_ref().map(|o| &o.vjp).as_ref())
            .filter_map(|r| r.code().map(|c| c.workspace_bytes() as u64))
            .max()
            .unwrap_or(0);
        // Fixed bytes: current state and adjoint, the primal's and the VJPs' buffers.
        let fixed = 8 * (2 * (n_state + this.theta_at.len()) as u64 + step_vjp_len)
            + 8 * (step.n_params + n_state) as u64
            + this.objective.as_ref().map_or(0, |o| {
                8 * (step.n_params + 2 * (o.n_outputs + this.theta_at.len()) + n_state) as u64
            })
            + workspace;
        let state_bytes = 8 * n_state as u64;
        let peak = |slots: usize| fixed.saturating_add(state_bytes.saturating_mul(slots as u64));
        let schedule = match strategy {
            Strategy::Tape => Schedule::Revolve { snapshots: n_steps },
            Strategy::Checkpoint { snapshots: 0 } => {
                return Err(Error::Checkpoint(CheckpointError::NoSnapshots))
            }
            Strategy::Checkpoint { snapshots } => Schedule::Revolve {
                snapshots: snapshots.min(n_steps),
            },
            Strategy::CheckpointBytes(budget) => {
                if peak(1) > budget {
                    return Err(Error::Checkpoint(CheckpointError::BudgetTooSmall {
                        budget,
                        smallest: peak(1),
                    }));
                }
                // A budget is a ceiling: never more states than a machine could hold.
                let slots = ((budget - fixed) / state_bytes)
                    .min(u64::try_from(crate::memory::MAX_BYTES).unwrap_or(u64::MAX) / state_bytes);
                Schedule::Revolve {
                    snapshots: usize::try_from(slots).unwrap_or(usize::MAX).min(n_steps),
                }
            }
            Strategy::Uniform => Schedule::Uniform {
                segment: (n_steps as f64).sqrt().ceil().max(1.0) as usize,
            },
        };
        this.schedule = schedule;
        let (snapshots, advances) = count_schedule(n_steps, schedule);
        this.stats = StepStats {
            steps: n_steps,
            snapshots,
            forward_steps: advances,
            peak_bytes: peak(snapshots),
        };
        Ok(this)
    }

    pub fn stats(&self) -> StepStats {
        self.stats
    }

    /// Number of state entries.
    pub fn n_state(&self) -> usize {
        self.n_state
    }

    pub fn n_steps(&self) -> usize {
        self.n_steps
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
                    rows: self.n_steps,
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
            self.step.run(&input, row)?;
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
        for _ in 0..self.n_steps {
            self.step.run(&input, &mut next)?;
            input[..n].copy_from_slice(&next);
        }
        match &self.objective {
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
        for _ in 0..self.n_steps {
            self.step_jvp.run(&input, &mut next)?;
            input[..n].copy_from_slice(&next[..n]);
            input[tangent_at..tangent_at + n].copy_from_slice(&next[n..]);
        }
        match &self.objective {
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
        if !self.theta_at.is_empty() || self.step_func.n_params != n || self.objective.is_some() {
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
        let mut product = v.to_vec();
        let mut next = vec![0.0; n];
        if mode == InverseMode::Forward {
            // J⁻ᵀ = J_1⁻ᵀ first: each step's forward-inverse also returns the next state.
            let mut state = x.to_vec();
            for _ in 0..self.n_steps {
                inv.call(&state, &product, &mut next, out)?;
                product.copy_from_slice(out);
                state.copy_from_slice(&next);
            }
            y.copy_from_slice(&state);
            out.copy_from_slice(&product);
            return Ok(());
        }
        // J⁻¹ = J_N⁻¹ first: the states in reverse order, as the VJP's sweep visits them.
        let mut states = StateWalk::new(self, x)?;
        let mut first = true;
        let mut on_action = |a: Action| -> Result<()> {
            if let Some(state) = states.act(a)? {
                inv.call(state, &product, &mut next, out)?;
                product.copy_from_slice(out);
                if first {
                    y.copy_from_slice(&next);
                    first = false;
                }
            }
            Ok(())
        };
        match self.schedule {
            Schedule::Revolve { snapshots } => {
                revolve::stream(self.n_steps, snapshots, &mut on_action)?
            }
            Schedule::Uniform { segment } => {
                uniform_actions(self.n_steps, segment, &mut on_action)?
            }
        }
        out.copy_from_slice(&product);
        Ok(())
    }

    /// The VJP, returning the number of step primals it ran (re-advances, not counting the
    /// one before the objective).
    fn sweep(&self, x: &[f64], w: &[f64], y: &mut [f64], grad: &mut [f64]) -> Result<u64> {
        let mut sweep = Sweep::new(self, x)?;
        let mut on_action = |a: Action| sweep.act(a, w, y);
        match self.schedule {
            Schedule::Revolve { snapshots } => {
                revolve::stream(self.n_steps, snapshots, &mut on_action)?
            }
            Schedule::Uniform { segment } => {
                uniform_actions(self.n_steps, segment, &mut on_action)?
            }
        }
        grad.copy_from_slice(&sweep.adjoint);
        Ok(sweep.advances)
    }
}

/// `func` with its differentiated θ parameters (positions `theta_at`) appended to its
/// returns, so that a VJP takes θ's running adjoint as their cotangent.
/// A loss summed over the states of a run, L = Σ_{k=1..N} ℓ(s_k, θ), with its gradient by
/// Revolve over the steps. The running sum is carried as one more state entry: the step
/// becomes `(s, acc, θ) ↦ (step(s, θ), acc + ℓ(step(s, θ), θ))` and L is the final `acc`, so
/// every strategy applies unchanged and `checkpoint:S` still holds S states.
///
/// ```
/// use adjit::steps::SummedLoss;
/// use adjit::{Strategy, Type};
/// // s ← 0.5·s + θ; ℓ(s, θ) = s². From s₀ = 1, θ = 0: L = 1/4 + 1/16 + 1/64.
/// let step = adjit::trace_multi("affine", &[Type::F64; 2], |x| vec![x[0] * 0.5 + x[1]]);
/// let loss = adjit::trace_multi("square", &[Type::F64; 2], |x| vec![x[0] * x[0]]);
/// let sum = SummedLoss::new(&step, &loss, 3, Strategy::Checkpoint { snapshots: 1 }).unwrap();
/// let mut grad = [0.0; 2]; // ∂L/∂s₀, ∂L/∂θ
/// let l = sum.gradient(&[1.0, 0.0], &mut grad).unwrap();
/// assert_eq!(l, 0.25 + 0.0625 + 0.015625);
/// // ∂L/∂s₀ = s₁ + s₂/2 + s₃/4, ∂L/∂θ = 2s₁ + 3s₂ + 3.5s₃.
/// assert_eq!(grad, [0.5 + 0.125 + 0.03125, 1.0 + 0.75 + 0.4375]);
/// # Ok::<(), adjit::Error>(())
/// ```
pub struct SummedLoss {
    it: IteratedStep,
    n_state: usize,
    /// `(x) -> (y ++ x̄)`: the gradient layout of the loss (which has the step's parameters).
    layout: Layout,
}

impl std::fmt::Debug for SummedLoss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummedLoss")
            .field("steps", &self.it)
            .field("n_state", &self.n_state)
            .finish_non_exhaustive()
    }
}

impl SummedLoss {
    /// `n_steps` steps of `step` and `loss` (the step's parameters, one float output) summed
    /// over the states after each step, under `strategy`, as native code.
    pub fn new(
        step: &Function,
        loss: &Function,
        n_steps: usize,
        strategy: Strategy,
    ) -> Result<SummedLoss> {
        SummedLoss::with_options(step, loss, n_steps, strategy, &Options::default())
    }

    /// [`SummedLoss::new`] on the engine and with the code-generation options of `opts`.
    pub fn with_options(
        step: &Function,
        loss: &Function,
        n_steps: usize,
        strategy: Strategy,
        opts: &Options,
    ) -> Result<SummedLoss> {
        adjit_ir::verify(step)?;
        adjit_ir::verify(loss)?;
        let n_state = step.n_outputs();
        let same = loss.n_params == step.n_params
            && step
                .params()
                .all(|p| loss.ty(p) == step.ty(p) && loss.is_data(p) == step.is_data(p));
        let float_out = loss.ret_types.iter().filter(|t| t.is_float()).count();
        if !same || float_out != 1 || loss.ret_types.len() != 1 {
            return Err(Error::Signature {
                func: loss.name.clone(),
                needs: format!(
                    "a summed loss takes the step's parameters (state, then θ, with their types \
                     and kinds), like @{}, and returns one float",
                    step.name
                ),
            });
        }
        if n_state == 0 || step.n_params < n_state {
            return Err(Error::Signature {
                func: step.name.clone(),
                needs: "a step returns the state and takes it first".into(),
            });
        }
        let (augmented, total) = running_sum(step, loss, n_state);
        let it = IteratedStep::with_options(&augmented, Some(&total), n_steps, strategy, opts)?;
        Ok(SummedLoss {
            it,
            n_state,
            layout: Layout::of(loss, Kind::Gradient),
        })
    }

    /// `(s₀, 0, θ)`: the augmented state starts its sum at 0.
    fn augmented_x(&self, x: &[f64]) -> Result<Vec<f64>> {
        let n = self.n_state;
        let expected = self.it.sig.n_params - 1;
        if x.len() != expected {
            return Err(Error::ArgumentLength {
                func: self.it.sig.name.clone(),
                what: "x = (s₀, θ)".into(),
                expected: Expected::Count(expected),
                got: x.len(),
            });
        }
        let mut xa = Vec::with_capacity(x.len() + 1);
        xa.extend_from_slice(&x[..n]);
        xa.push(0.0);
        xa.extend_from_slice(&x[n..]);
        Ok(xa)
    }

    /// L = Σ ℓ(s_k, θ) at `x = (s₀, θ)`.
    pub fn eval(&self, x: &[f64]) -> Result<f64> {
        let mut y = [0.0];
        self.it.eval(&self.augmented_x(x)?, &mut y)?;
        Ok(y[0])
    }

    /// L and its gradient `grad = (s̄₀, θ̄)` (one entry per differentiated input of the step).
    pub fn gradient(&self, x: &[f64], grad: &mut [f64]) -> Result<f64> {
        let n = self.n_state;
        let xa = self.augmented_x(x)?;
        let mut full = vec![0.0; grad.len() + 1];
        let mut y = [0.0];
        self.it.vjp(&xa, &[1.0], &mut y, &mut full)?;
        grad[..n].copy_from_slice(&full[..n]);
        grad[n..].copy_from_slice(&full[n + 1..]);
        Ok(y[0])
    }

    /// The run's statistics (snapshots, re-advanced steps, peak bytes).
    pub fn stats(&self) -> StepStats {
        self.it.stats()
    }
}

/// The step with a running sum, `(s, acc, θ) ↦ (step(s, θ), acc + ℓ(step(s, θ), θ))`, and the
/// objective `(s, acc, θ) ↦ acc`.
fn running_sum(step: &Function, loss: &Function, n_state: usize) -> (Function, Function) {
    let mut f = Function::new(format!("{}_with_{}", step.name, loss.name));
    let mut params: Vec<Value> = Vec::with_capacity(step.n_params + 1);
    for p in step.params() {
        if p.index() == n_state {
            f.add_param(adjit_ir::Type::F64, Some(running_name(step)));
        }
        let v = f.add_param(step.ty(p), step.name_of(p).map(String::from));
        f.set_param_kind(v, step.param_kind(p));
        params.push(v);
    }
    let acc = Value::new(n_state);
    if step.n_params == n_state {
        f.add_param(adjit_ir::Type::F64, Some(running_name(step)));
    }
    let next = f.inline(step, &params);
    // ℓ reads the new state and the same θ.
    let mut loss_params = next.clone();
    loss_params.extend_from_slice(&params[n_state..]);
    let l = f.inline(loss, &loss_params)[0];
    let l = if f.ty(l) == adjit_ir::Type::F64 {
        l
    } else {
        f.push_inst(
            adjit_ir::Type::F64,
            adjit_ir::InstData::Fpromote { arg: l },
            None,
        )
    };
    let sum = f.push_inst(
        adjit_ir::Type::F64,
        adjit_ir::InstData::Binary {
            op: adjit_ir::BinaryOp::Add,
            args: [acc.into(), l.into()],
        },
        None,
    );
    for v in next {
        f.push_ret(v);
    }
    f.push_ret(sum);
    let mut total = Function::new(format!("{}_total", f.name));
    for p in f.params() {
        let v = total.add_param(f.ty(p), f.name_of(p).map(String::from));
        total.set_param_kind(v, f.param_kind(p));
    }
    total.push_ret(acc);
    (f, total)
}

/// A parameter name for the running sum that the step does not use.
fn running_name(step: &Function) -> String {
    let names = adjit_ir::text::printed_names(step);
    let mut name = "loss_sum".to_string();
    while names.contains(&name) {
        name.push('_');
    }
    name
}

fn pass_theta(func: &Function, theta_at: &[usize]) -> Function {
    let mut f = func.clone();
    for &i in theta_at {
        f.push_ret(Value::new(i));
    }
    f
}

/// The states of a reversal schedule without derivatives: advances, snapshots and restores,
/// and at every turn the state before the step being reversed.
struct StateWalk<'a> {
    it: &'a IteratedStep,
    current: Vec<f64>,
    next: Vec<f64>,
    slots: Vec<f64>,
}

impl<'a> StateWalk<'a> {
    fn new(it: &'a IteratedStep, x: &[f64]) -> Result<StateWalk<'a>> {
        let n = it.n_state;
        Ok(StateWalk {
            it,
            current: x.to_vec(),
            next: vec![0.0; n],
            slots: slot_buffer(it)?,
        })
    }

    /// Apply `action`; at a turn, the state the reversed step starts from.
    fn act(&mut self, action: Action) -> Result<Option<&[f64]>> {
        let n = self.it.n_state;
        match action {
            Action::Advance { from, to } => {
                for _ in from..to {
                    self.it.step.run(&self.current, &mut self.next)?;
                    self.current[..n].copy_from_slice(&self.next);
                }
            }
            Action::Takeshot { slot, .. } => {
                self.slots[slot * n..(slot + 1) * n].copy_from_slice(&self.current[..n]);
            }
            Action::Restore { slot, .. } => {
                self.current[..n].copy_from_slice(&self.slots[slot * n..(slot + 1) * n]);
            }
            Action::Firsturn { .. } | Action::Youturn { .. } => return Ok(Some(&self.current)),
            Action::Terminate => {}
        }
        Ok(None)
    }
}

/// The buffers of one VJP call, driven action by action.
struct Sweep<'a> {
    it: &'a IteratedStep,
    /// The step primal's input: the current state, then θ (fixed).
    current: Vec<f64>,
    next: Vec<f64>,
    /// Snapshot slots, `n_state` each.
    slots: Vec<f64>,
    /// The step VJP's inputs `(s, θ, s̄′, θ̄)` and outputs `(s′, θ, s̄, θ̄)`.
    vjp_in: Vec<f64>,
    vjp_out: Vec<f64>,
    /// `(s̄_k, θ̄)`: the adjoint of the current state and θ's running adjoint.
    adjoint: Vec<f64>,
    advances: u64,
}

impl<'a> Sweep<'a> {
    fn new(it: &'a IteratedStep, x: &[f64]) -> Result<Sweep<'a>> {
        let n = it.n_state;
        let n_adj = n + it.theta_at.len();
        let mut vjp_in = x.to_vec();
        vjp_in.resize(x.len() + n_adj, 0.0);
        Ok(Sweep {
            it,
            current: x.to_vec(),
            next: vec![0.0; n],
            slots: slot_buffer(it)?,
            vjp_in,
            vjp_out: vec![0.0; 2 * n_adj],
            adjoint: vec![0.0; n_adj],
            advances: 0,
        })
    }

    fn act(&mut self, action: Action, w: &[f64], y: &mut [f64]) -> Result<()> {
        let n = self.it.n_state;
        match action {
            Action::Advance { from, to } => {
                for _ in from..to {
                    self.it.step.run(&self.current, &mut self.next)?;
                    self.current[..n].copy_from_slice(&self.next);
                }
                self.advances += (to - from) as u64;
            }
            Action::Takeshot { slot, .. } => {
                self.slots[slot * n..(slot + 1) * n].copy_from_slice(&self.current[..n]);
            }
            Action::Restore { slot, .. } => {
                self.current[..n].copy_from_slice(&self.slots[slot * n..(slot + 1) * n]);
            }
            Action::Firsturn { .. } => {
                self.seed(w, y)?;
                self.turn()?;
                if self.it.objective.is_none() {
                    // Without an objective F's value is the last step's output.
                    y.copy_from_slice(&self.vjp_out[..n]);
                }
            }
            Action::Youturn { .. } => self.turn()?,
            Action::Terminate => {}
        }
        Ok(())
    }

    /// The adjoint of the final state (and θ's, from the objective) before the last step's
    /// VJP, and F's value when it is not the last step's output. The current state is s_{N−1}.
    fn seed(&mut self, w: &[f64], y: &mut [f64]) -> Result<()> {
        let n = self.it.n_state;
        match &self.it.objective {
            None => {
                self.adjoint[..n].copy_from_slice(w);
                self.adjoint[n..].fill(-0.0);
            }
            Some(obj) => {
                self.it.step.run(&self.current, &mut self.next)?;
                // (s_N, θ, w, −0.0…) -> (y, θ, s̄_N, θ̄)
                let mut input = self.current.clone();
                input[..n].copy_from_slice(&self.next);
                input.extend_from_slice(w);
                input.resize(input.len() + self.it.theta_at.len(), -0.0);
                debug_assert_eq!(w.len(), obj.n_float_outputs);
                let m = obj.n_outputs;
                let mut out = vec![0.0; m + self.it.theta_at.len() + self.adjoint.len()];
                obj.vjp.run(&input, &mut out)?;
                y.copy_from_slice(&out[..m]);
                self.adjoint
                    .copy_from_slice(&out[m + self.it.theta_at.len()..]);
            }
        }
        Ok(())
    }

    /// The VJP of the step from the current state: the adjoint moves one step back.
    fn turn(&mut self) -> Result<()> {
        let x_len = self.current.len();
        self.vjp_in[..x_len].copy_from_slice(&self.current);
        self.vjp_in[x_len..].copy_from_slice(&self.adjoint);
        self.it.step_vjp.run(&self.vjp_in, &mut self.vjp_out)?;
        let n_adj = self.adjoint.len();
        self.adjoint.copy_from_slice(&self.vjp_out[n_adj..]);
        Ok(())
    }
}

/// Snapshot slots and step advances of a VJP under `schedule`, in closed form (O(1) in the
/// number of steps; the sweeps' own counts agree: tested).
fn count_schedule(n_steps: usize, schedule: Schedule) -> (usize, u64) {
    match schedule {
        Schedule::Revolve { snapshots } if snapshots >= n_steps => (n_steps, n_steps as u64 - 1),
        Schedule::Revolve { snapshots } => (snapshots, min_advances(n_steps, snapshots)),
        Schedule::Uniform { segment } => {
            // One pass to the last segment's start, then each segment's inner states again:
            // (segments − 1)·segment + Σ (length − 1) = (segments − 1)·segment + N − segments.
            let segments = n_steps.div_ceil(segment) as u128;
            let advances = (segments - 1) * segment as u128 + n_steps as u128 - segments;
            (
                uniform_slots(n_steps, segment),
                u64::try_from(advances).unwrap_or(u64::MAX),
            )
        }
    }
}

/// The snapshot buffer of one sweep (slots × state numbers), allocated fallibly: a tape the
/// machine cannot hold is an error that says what fits, never an abort.
fn slot_buffer(it: &IteratedStep) -> Result<Vec<f64>> {
    let slots = match it.schedule {
        Schedule::Revolve { snapshots } => snapshots,
        Schedule::Uniform { segment } => uniform_slots(it.n_steps, segment),
    };
    let bytes = slots as u128 * it.n_state as u128 * 8;
    let limit = crate::memory::limit();
    let len = slots.checked_mul(it.n_state).filter(|_| bytes <= limit);
    let mut buffer = Vec::new();
    match len.map(|len| buffer.try_reserve_exact(len).map(|_| len)) {
        Some(Ok(len)) => {
            buffer.resize(len, 0.0);
            Ok(buffer)
        }
        _ => Err(too_many_slots(&it.sig.name, it.n_steps, slots, it.n_state)),
    }
}

/// Snapshots that cannot be stored: say how many bytes they need and what fits instead.
fn too_many_slots(func: &str, n_steps: usize, slots: usize, n_state: usize) -> Error {
    Error::Memory {
        func: func.to_string(),
        what: format!(
            "{n_steps} steps' {slots} stored states of {n_state} number{}",
            if n_state == 1 { "" } else { "s" }
        ),
        bytes: (slots as u128) * (n_state as u128) * 8,
        available: crate::memory::limit(),
        alternative: "use checkpoint:S (S states, e.g. checkpoint:20) or bytes:B (a memory \
                      budget), which recompute instead of storing"
            .to_string(),
    }
}

/// Slots of the √N scheme: one per segment start, plus the inner states of one segment.
fn uniform_slots(n_steps: usize, segment: usize) -> usize {
    n_steps.div_ceil(segment) + segment - 1
}

/// The √N scheme as actions: store every `segment`-th state on one forward pass, then for each
/// segment, last first, restore its start, store its states and reverse them.
fn uniform_actions(
    n_steps: usize,
    segment: usize,
    f: &mut impl FnMut(Action) -> Result<()>,
) -> Result<()> {
    let n_segments = n_steps.div_ceil(segment);
    f(Action::Takeshot { state: 0, slot: 0 })?;
    for b in 1..n_segments {
        f(Action::Advance {
            from: (b - 1) * segment,
            to: b * segment,
        })?;
        f(Action::Takeshot {
            state: b * segment,
            slot: b,
        })?;
    }
    for b in (0..n_segments).rev() {
        let start = b * segment;
        let end = (start + segment).min(n_steps);
        f(Action::Restore {
            state: start,
            slot: b,
        })?;
        let inner = |j: usize| n_segments + (j - start - 1);
        for j in start + 1..end {
            f(Action::Advance { from: j - 1, to: j })?;
            f(Action::Takeshot {
                state: j,
                slot: inner(j),
            })?;
        }
        for j in (start..end).rev() {
            if j + 1 < end {
                let slot = if j == start { b } else { inner(j) };
                f(Action::Restore { state: j, slot })?;
            }
            f(if j + 1 == n_steps {
                Action::Firsturn { stage: j }
            } else {
                Action::Youturn { stage: j }
            })?;
        }
    }
    f(Action::Terminate)
}

impl crate::prepared::Prepared for IteratedStep {
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
            (inputs, outputs) => Err(crate::prepared::parts_error(
                self,
                inputs.len(),
                outputs.len(),
            )),
        }
    }
}

impl crate::prepared::Prepared for SummedLoss {
    fn name(&self) -> &str {
        &self.it.sig.name
    }

    /// `(x) -> (y ++ x̄)` with `x = (s₀, θ)`: the loss and its gradient.
    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn call_parts(&self, inputs: &[&[f64]], outputs: &mut [&mut [f64]]) -> Result<()> {
        match (inputs, outputs) {
            ([x], [y, grad]) => {
                crate::prepared::check_lengths(
                    &self.it.sig.name,
                    &self.layout,
                    [x.len()].into_iter(),
                    self.layout.output_parts(),
                    [y.len(), grad.len()].into_iter(),
                )?;
                y[0] = self.gradient(x, grad)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use adjit_ir::trace::{trace_multi, Var};
    use adjit_ir::Type;

    fn bits(xs: &[f64]) -> Vec<u64> {
        xs.iter().map(|x| x.to_bits()).collect()
    }

    /// A pendulum-like step with θ = (a, b) used several times per step and a data step size.
    fn pendulum_step<'t>(x: &[Var<'t>]) -> Vec<Var<'t>> {
        let (s0, s1, a, b, dt) = (x[0], x[1], x[2], x[3], x[4]);
        let force = -a * s0.sin() - b * s1 + a * a * 0.01 * s0;
        vec![s0 + dt * s1, s1 + dt * force]
    }

    fn with_dt_as_data(mut f: Function) -> Function {
        f.set_param_kind(Value::new(4), adjit_ir::ParamKind::Data);
        f
    }

    fn pendulum(steps: usize) -> Function {
        with_dt_as_data(trace_multi("pendulum", &[Type::F64; 5], |x| {
            let mut s = vec![x[0], x[1]];
            for _ in 0..steps {
                let mut input = s.clone();
                input.extend_from_slice(&x[2..]);
                s = pendulum_step(&input);
            }
            s
        }))
    }

    fn energy<'t>(x: &[Var<'t>]) -> Var<'t> {
        0.5 * x[1] * x[1] + x[2] * (1.0 - x[0].cos()) + x[3]
    }

    const STRATEGIES: [Strategy; 6] = [
        Strategy::Tape,
        Strategy::Uniform,
        Strategy::Checkpoint { snapshots: 1 },
        Strategy::Checkpoint { snapshots: 3 },
        Strategy::Checkpoint { snapshots: 20 },
        Strategy::CheckpointBytes(2000),
    ];

    /// Every strategy's VJP (and the JVP and value) equals the unrolled program's bit for bit,
    /// with and without an objective, and re-advances as often as the stats say.
    #[test]
    fn every_strategy_is_bitwise_the_unrolled_tape() {
        let n_steps = 37;
        let step = pendulum(1);
        let unrolled = pendulum(n_steps);
        let objective =
            with_dt_as_data(trace_multi("energy", &[Type::F64; 5], |x| vec![energy(x)]));
        let unrolled_obj = with_dt_as_data(trace_multi("energy_n", &[Type::F64; 5], |x| {
            let mut s = vec![x[0], x[1]];
            for _ in 0..n_steps {
                let mut input = s.clone();
                input.extend_from_slice(&x[2..]);
                s = pendulum_step(&input);
            }
            let mut input = s;
            input.extend_from_slice(&x[2..]);
            vec![energy(&input)]
        }));
        let x = [0.3, -0.2, 1.7, 0.1, 0.05];
        let xdot = [0.5, -1.0, 0.25, 2.0];
        for (obj, whole, w) in [
            (None, &unrolled, &[0.7, -1.3][..]),
            (Some(&objective), &unrolled_obj, &[1.0][..]),
        ] {
            let m = w.len();
            let tape = crate::Compiled::new(whole, Mode::Vjp).unwrap();
            let (mut y, mut g) = (vec![0.0; m], vec![0.0; 4]);
            tape.call_parts(&[&x, w], &mut [&mut y, &mut g]).unwrap();
            let jvp = crate::Compiled::new(whole, Mode::Jvp).unwrap();
            let (mut jy, mut ydot) = (vec![0.0; m], vec![0.0; m]);
            jvp.call_parts(&[&x, &xdot], &mut [&mut jy, &mut ydot])
                .unwrap();
            for strategy in STRATEGIES {
                let it =
                    IteratedStep::with_options(&step, obj, n_steps, strategy, &Options::default())
                        .unwrap();
                let (mut y2, mut g2) = (vec![0.0; m], vec![0.0; 4]);
                let advances = it.sweep(&x, w, &mut y2, &mut g2).unwrap();
                assert_eq!(bits(&y2), bits(&y), "{strategy}");
                assert_eq!(bits(&g2), bits(&g), "{strategy}");
                assert_eq!(advances, it.stats().forward_steps, "{strategy}");
                if let Strategy::Checkpoint { snapshots } = strategy {
                    assert_eq!(advances, min_advances(n_steps, snapshots), "{strategy}");
                }
                if let Strategy::CheckpointBytes(budget) = strategy {
                    assert!(it.stats().peak_bytes <= budget);
                    assert!(it.stats().snapshots > 1, "{:?}", it.stats());
                }
                let (mut y3, mut ydot3) = (vec![0.0; m], vec![0.0; m]);
                it.jvp(&x, &xdot, &mut y3, &mut ydot3).unwrap();
                assert_eq!(bits(&y3), bits(&jy));
                assert_eq!(bits(&ydot3), bits(&ydot));
                let mut y4 = vec![0.0; m];
                it.eval(&x, &mut y4).unwrap();
                assert_eq!(bits(&y4), bits(&jy));
            }
        }
    }

    #[test]
    fn lorenz_rk4_steps_are_bitwise_the_unrolled_tape() {
        let (n_steps, dt) = (200, 0.01);
        let step = adjit_testkit::lorenz_rk4(1, dt, Type::F64);
        let unrolled = adjit_testkit::lorenz_rk4(n_steps, dt, Type::F64);
        let x = [1.0, 1.0, 1.0];
        let w = [1.0, -0.5, 0.25];
        let tape = crate::Compiled::new(&unrolled, Mode::Vjp).unwrap();
        let (mut y, mut g) = ([0.0; 3], [0.0; 3]);
        tape.call_parts(&[&x, &w], &mut [&mut y, &mut g]).unwrap();
        for strategy in [Strategy::Tape, Strategy::Checkpoint { snapshots: 5 }] {
            let it = IteratedStep::new(&step, n_steps, strategy).unwrap();
            let (mut y2, mut g2) = ([0.0; 3], [0.0; 3]);
            it.vjp(&x, &w, &mut y2, &mut g2).unwrap();
            assert_eq!((bits(&y2), bits(&g2)), (bits(&y), bits(&g)), "{strategy}");
        }
    }

    /// Step counts beyond memory or `usize`: every strategy builds at once (its schedule is
    /// counted in closed form, never walked), the forward sweep needs no stored states, and a
    /// reverse sweep whose states do not fit says so and names what fits, before allocating.
    #[test]
    fn extreme_step_counts_are_errors_not_aborts() {
        let step = adjit_ir::trace::trace_multi("decay", &[Type::F64; 2], |x| {
            vec![x[0] - x[0] * x[1] * 0.1]
        });
        let strategies = [
            Strategy::Tape,
            Strategy::Uniform,
            Strategy::Checkpoint { snapshots: 20 },
            Strategy::Checkpoint {
                snapshots: usize::MAX,
            },
            Strategy::CheckpointBytes(u64::MAX),
        ];
        for n in [1_000_000_000_000, usize::MAX] {
            for strategy in strategies {
                let it = IteratedStep::new(&step, n, strategy).unwrap();
                assert_eq!(it.n_steps(), n);
                // 20 states, or √N·2 of them for 10¹² steps (16 MB), fit: those sweeps would
                // run for hours. Every other combination needs more than a machine holds.
                let fits = matches!(strategy, Strategy::Checkpoint { snapshots: 20 })
                    || (strategy == Strategy::Uniform && n == 1_000_000_000_000);
                if !fits {
                    let (mut y, mut g) = ([0.0], [0.0; 2]);
                    let err = it.vjp(&[1.0, 0.5], &[1.0], &mut y, &mut g).unwrap_err();
                    let text = err.to_string();
                    assert!(
                        text.contains("stored states") && text.contains("checkpoint:S"),
                        "{strategy:?} × {n}: {text}"
                    );
                }
            }
        }
        // The closed-form count of the √N scheme is the sweep's own.
        for n in [1, 2, 7, 100, 1001] {
            let it = IteratedStep::new(&step, n, Strategy::Uniform).unwrap();
            let (mut y, mut g) = ([0.0], [0.0; 2]);
            it.vjp(&[1.0, 0.5], &[1.0], &mut y, &mut g).unwrap();
            let counted = it.stats().forward_steps;
            let segment = (n as f64).sqrt().ceil() as usize;
            let mut walked = 0u64;
            uniform_actions(n, segment, &mut |a| {
                if let Action::Advance { from, to } = a {
                    walked += (to - from) as u64;
                }
                Ok(())
            })
            .unwrap();
            assert_eq!(counted, walked, "n = {n}");
        }
    }

    /// A loss summed over the states equals the unrolled program's, value and gradient, under
    /// every strategy; the trajectory is the states the primal visits.
    #[test]
    fn summed_loss_and_trajectory_match_the_unrolled_program() {
        // s = (p, q), θ = (a, b), one data input dt.
        fn step_fn<'t>(x: &[Var<'t>]) -> Vec<Var<'t>> {
            let (p, q, a, b, dt) = (x[0], x[1], x[2], x[3], x[4]);
            vec![p + q * dt, q - (p.sin() * a + q * b) * dt]
        }
        fn loss_fn<'t>(x: &[Var<'t>]) -> Var<'t> {
            x[0] * x[0] + x[1] * x[1] * x[2]
        }
        let types = [Type::F64; 5];
        let mut step = trace_multi("osc", &types, step_fn);
        step.set_param_kind(Value::new(4), adjit_ir::ParamKind::Data);
        let mut loss = trace_multi("energy", &types, |x| vec![loss_fn(x)]);
        loss.set_param_kind(Value::new(4), adjit_ir::ParamKind::Data);
        let n_steps = 7;
        let mut unrolled = trace_multi("unrolled", &types, |x| {
            let mut state = vec![x[0], x[1]];
            let mut total = x[0] * 0.0;
            for _ in 0..n_steps {
                let args = [state[0], state[1], x[2], x[3], x[4]];
                state = step_fn(&args);
                let args = [state[0], state[1], x[2], x[3], x[4]];
                total += loss_fn(&args);
            }
            vec![total]
        });
        unrolled.set_param_kind(Value::new(4), adjit_ir::ParamKind::Data);
        let x = [0.3, -0.2, 1.1, 0.4, 0.1];
        let grad = crate::Gradient::new(&unrolled).unwrap();
        let mut expected = [0.0; 4];
        let value = grad.call(&x, &mut expected).unwrap();
        for strategy in [
            Strategy::Tape,
            Strategy::Uniform,
            Strategy::Checkpoint { snapshots: 1 },
            Strategy::Checkpoint { snapshots: 3 },
        ] {
            let sum = SummedLoss::new(&step, &loss, n_steps, strategy).unwrap();
            let mut g = [0.0; 4];
            let l = sum.gradient(&x, &mut g).unwrap();
            assert!(
                (l - value).abs() <= 1e-14 * value.abs(),
                "{strategy:?}: {l} vs {value}"
            );
            assert_eq!(sum.eval(&x).unwrap(), l);
            for (a, b) in g.iter().zip(&expected) {
                assert!(
                    (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                    "{strategy:?}: {g:?} vs {expected:?}"
                );
            }
        }
        let it = IteratedStep::new(&step, n_steps, Strategy::Tape).unwrap();
        let mut states = vec![0.0; 2 * n_steps];
        it.trajectory(&x, &mut states).unwrap();
        let mut last = [0.0; 2];
        it.eval(&x, &mut last).unwrap();
        assert_eq!(&states[2 * n_steps - 2..], &last);
        assert!(it.trajectory(&x, &mut [0.0; 3]).is_err());
        let bad = trace_multi("bad", &[Type::F64; 2], |x| vec![x[0]]);
        assert!(SummedLoss::new(&step, &bad, 3, Strategy::Tape).is_err());
    }

    #[test]
    fn bad_steps_and_arguments_are_errors() {
        let step = pendulum(1);
        let err = IteratedStep::new(&step, 0, Strategy::Tape).unwrap_err();
        assert!(err.to_string().contains("at least one step"), "{err}");
        let five = trace_multi("five", &[Type::F64; 1], |x| vec![x[0]; 3]);
        let err = IteratedStep::new(&five, 4, Strategy::Tape).unwrap_err();
        assert!(
            err.to_string().contains("3 outputs but 1 parameters"),
            "{err}"
        );
        let err = IteratedStep::new(&step, 4, Strategy::CheckpointBytes(10)).unwrap_err();
        assert!(
            err.to_string().contains("smallest that works needs"),
            "{err}"
        );
        let it = IteratedStep::new(&step, 4, Strategy::Uniform).unwrap();
        let (mut y, mut g) = ([0.0; 2], [0.0; 4]);
        let err = it.vjp(&[0.0; 5], &[1.0], &mut y, &mut g).unwrap_err();
        assert!(
            err.to_string().contains("ȳ has 1 numbers, expected 2"),
            "{err}"
        );
        let bad_obj = trace_multi("obj", &[Type::F64; 2], |x| vec![x[0]]);
        let err = IteratedStep::with_options(
            &step,
            Some(&bad_obj),
            4,
            Strategy::Tape,
            &Options::default(),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("takes the step's parameters"),
            "{err}"
        );
    }
}
