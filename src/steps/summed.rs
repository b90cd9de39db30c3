//! [`SummedLoss`]: a loss summed over the states of an iterated step's run, as an
//! [`IteratedStep`] of the step with a running sum (`adjit_diff::steps::running_sum`).

use adjit_diff::checkpoint::Strategy;
use adjit_diff::layout::{Kind, Layout};
use adjit_diff::steps::{running_sum, StepError};
use adjit_ir::Function;

use super::{IteratedStep, StepStats};
use crate::error::{Error, Expected, Result};
use crate::options::Options;
use crate::prepared::{check_lengths, parts_error, Prepared};

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
        let (augmented, total) = running_sum(step, loss).map_err(|e| match e {
            StepError::LossSignature { .. } => Error::Signature {
                func: loss.name.clone(),
                needs: format!(
                    "a summed loss takes the step's parameters (state, then θ, with their types \
                     and kinds), like @{}, and returns one float",
                    step.name
                ),
            },
            StepError::NotAStep { .. } => Error::Signature {
                func: step.name.clone(),
                needs: "a step returns the state and takes it first".into(),
            },
            StepError::NoSuchParam { .. } => Error::Signature {
                func: step.name.clone(),
                needs: e.to_string(),
            },
        })?;
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

impl Prepared for SummedLoss {
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
                check_lengths(
                    &self.it.sig.name,
                    &self.layout,
                    [x.len()].into_iter(),
                    self.layout.output_parts(),
                    [y.len(), grad.len()].into_iter(),
                )?;
                y[0] = self.gradient(x, grad)?;
                Ok(())
            }
            (inputs, outputs) => Err(parts_error(self, inputs.len(), outputs.len())),
        }
    }
}
