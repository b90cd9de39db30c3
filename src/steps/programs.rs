//! The compiled programs of an iterated step, and how `diff`'s reversal executor runs them.
//!
//! The executor replays the schedule (advance, takeshot, restore, turn) over a step chain; this
//! file only says what each stage program is: an advance runs the step's primal, a turn the
//! VJP of `step′(s, θ) = (step(s, θ), θ)`, and the last step's turn first seeds its adjoint
//! from the cotangent (through the objective's VJP at s_N when there is one; θ's running adjoint
//! starts from −0.0, the IEEE additive identity). For inverse products a turn is the step's
//! inverse program instead.

use adjit_diff::checkpoint::{StageProgram, StageRunner, StepShape};

use crate::error::{Error, Result};
use crate::inverse::CompiledInverse;
use crate::runner::Runner;

/// The compiled programs of an objective.
pub(super) struct ObjectivePrograms {
    pub(super) primal: Runner,
    /// VJP of `objective′(s, θ) = (objective(s, θ), θ)`.
    pub(super) vjp: Runner,
    pub(super) jvp: Runner,
    /// Float outputs (the cotangent's length) and all outputs.
    pub(super) n_float_outputs: usize,
    pub(super) n_outputs: usize,
}

/// The compiled programs of a step and its optional objective.
pub(super) struct StepPrograms {
    pub(super) step: Runner,
    /// VJP of `step′(s, θ) = (step(s, θ), θ)`: `(s, θ, s̄′, θ̄) -> (s′, θ, s̄, θ̄)` (θ here and
    /// in θ̄: the differentiated entries only).
    pub(super) step_vjp: Runner,
    pub(super) step_jvp: Runner,
    pub(super) objective: Option<ObjectivePrograms>,
    pub(super) n_state: usize,
    /// The step's parameters, state and θ.
    pub(super) n_params: usize,
    /// Differentiated θ entries.
    pub(super) n_theta: usize,
}

impl StepPrograms {
    /// The chain the VJP reverses: states `(s, θ)`, adjoints `(s̄, θ̄)`, and F's cotangent and
    /// outputs at the end.
    pub(super) fn vjp_shape(&self) -> StepShape {
        let (n_cotangent, n_outputs) = self
            .objective
            .as_ref()
            .map_or((self.n_state, self.n_state), |o| {
                (o.n_float_outputs, o.n_outputs)
            });
        StepShape {
            n_state: self.n_state,
            n_params: self.n_params,
            n_adjoint: self.n_state + self.n_theta,
            n_cotangent,
            n_outputs,
        }
    }

    /// The chain inverse products reverse: a square step, the product in place of an adjoint.
    pub(super) fn inverse_shape(&self) -> StepShape {
        let n = self.n_state;
        StepShape {
            n_state: n,
            n_params: n,
            n_adjoint: n,
            n_cotangent: n,
            n_outputs: n,
        }
    }
}

/// The VJP over `n_steps` steps as stage programs, counting the steps advanced.
pub(super) struct VjpRunner<'a> {
    pub(super) programs: &'a StepPrograms,
    pub(super) n_steps: usize,
    pub(super) advances: u64,
}

impl StageRunner for VjpRunner<'_> {
    type Error = Error;

    fn run(&mut self, program: StageProgram, inputs: &[f64], outputs: &mut [f64]) -> Result<()> {
        match program {
            StageProgram::Forward(_) => {
                self.advances += 1;
                self.programs.step.run(inputs, outputs)
            }
            StageProgram::Reverse(k) if k + 1 == self.n_steps => self.last_turn(inputs, outputs),
            StageProgram::Reverse(_) => self.programs.step_vjp.run(inputs, outputs),
        }
    }
}

impl VjpRunner<'_> {
    /// The last step's turn: `(s_{N−1}, θ, w) -> (y, s̄_{N−1}, θ̄)`. Its VJP's cotangent is `w`
    /// (F = s_N, and y the step's output) or, with an objective, the objective VJP's adjoint of
    /// `(s_N, θ)`, which also gives y.
    fn last_turn(&self, inputs: &[f64], outputs: &mut [f64]) -> Result<()> {
        let p = self.programs;
        let (n, n_theta) = (p.n_state, p.n_theta);
        let n_adjoint = n + n_theta;
        let (x, w) = inputs.split_at(p.n_params);
        let (y, adjoint) = outputs.split_at_mut(outputs.len() - n_adjoint);
        let mut vjp_in = Vec::with_capacity(p.n_params + 2 * n_adjoint);
        vjp_in.extend_from_slice(x);
        match &p.objective {
            None => {
                vjp_in.extend_from_slice(w);
                vjp_in.resize(vjp_in.len() + n_theta, -0.0);
            }
            Some(obj) => {
                let mut next = vec![0.0; n];
                p.step.run(x, &mut next)?;
                // (s_N, θ, w, −0.0…) -> (y, θ, s̄_N, θ̄)
                let mut input = x.to_vec();
                input[..n].copy_from_slice(&next);
                input.extend_from_slice(w);
                input.resize(input.len() + n_theta, -0.0);
                let m = obj.n_outputs;
                let mut out = vec![0.0; m + n_theta + n_adjoint];
                obj.vjp.run(&input, &mut out)?;
                y.copy_from_slice(&out[..m]);
                vjp_in.extend_from_slice(&out[m + n_theta..]);
            }
        }
        let mut vjp_out = vec![0.0; 2 * n_adjoint];
        p.step_vjp.run(&vjp_in, &mut vjp_out)?;
        if p.objective.is_none() {
            // Without an objective F's value is the last step's output.
            y.copy_from_slice(&vjp_out[..n]);
        }
        adjoint.copy_from_slice(&vjp_out[n_adjoint..]);
        Ok(())
    }
}

/// `J⁻¹·v` through the steps as stage programs: a turn at state s maps the product `v` to
/// `J_k(s)⁻¹·v` with the step's reverse- or dense-inverse, which also returns the next state.
pub(super) struct InverseRunner<'a> {
    pub(super) step: &'a Runner,
    pub(super) inverse: &'a CompiledInverse,
    pub(super) n_state: usize,
}

impl StageRunner for InverseRunner<'_> {
    type Error = Error;

    fn run(&mut self, program: StageProgram, inputs: &[f64], outputs: &mut [f64]) -> Result<()> {
        match program {
            StageProgram::Forward(_) => self.step.run(inputs, outputs),
            StageProgram::Reverse(_) => {
                let (state, v) = inputs.split_at(self.n_state);
                let (next, product) = outputs.split_at_mut(self.n_state);
                self.inverse.call(state, v, next, product)
            }
        }
    }
}
