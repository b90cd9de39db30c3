//! The run-time driver of a checkpointing plan: replays the Revolve action list over a chain of
//! stages, storing and restoring states, and chaining the stages' reverse sweeps.
//!
//! It is generic over how a stage program is evaluated ([`StageRunner`]: "run this program on
//! these buffers"): the tests run it with the interpreter, the facade with JIT-compiled stage
//! programs. The [`Executor`] is the immutable part (actions, where each state slot lives, buffer
//! sizes) and can be shared between threads; every mutable buffer lives in [`ExecBuffers`],
//! allocated once by [`Executor::buffers`], so [`Executor::run`] allocates nothing. It assumes
//! the plan's action list is well formed (as [`super::revolve::schedule`] produces) and leaves
//! the stage programs' numbers alone: state values are copied, never rounded or combined, so
//! the result is the chain rule evaluated exactly as the stage reverses compute it.
//!
//! Slot conventions: a state is one `f64` per value of [`StagePartition::states`]; an adjoint of
//! a state has one `f64` per entry of [`StagePartition::adjoint_slots`], in the same order.

use adjit_ir::Function;

use crate::layout::Part;

use super::revolve::Action;
use super::stages::StagePartition;
use super::Plan;

/// One program of a stage chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageProgram {
    /// Stage `k` forward: `state_k -> state_{k+1}` (no taping).
    Forward(usize),
    /// Stage `k` taped and reversed, in the `vjp` calling convention:
    /// `(state_k ++ adjoint of its outputs) -> (its outputs ++ adjoint of state_k)`.
    Reverse(usize),
}

/// How the stage programs of a chain are evaluated.
pub trait StageRunner {
    type Error;

    /// Run `program` on `inputs`, writing every output to `outputs` (lengths as the program's
    /// parameters and returns).
    fn run(
        &mut self,
        program: StageProgram,
        inputs: &[f64],
        outputs: &mut [f64],
    ) -> Result<(), Self::Error>;
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExecError<E> {
    /// A buffer whose length does not match its part of the VJP layout (`x`, `ȳ`, `y`, `x̄`).
    #[error("{} has {got} numbers, expected {expected}", part.symbol(false))]
    Length {
        part: Part,
        expected: usize,
        got: usize,
    },
    #[error("stage {stage}: {source}")]
    Stage { stage: usize, source: E },
}

/// Where a state slot is kept while it is not current.
#[derive(Clone, Copy, Debug)]
enum Home {
    /// Index into the stored-once buffer.
    Once(usize),
    /// Index into a snapshot.
    Snapshot(usize),
}

/// The immutable layout for running one plan repeatedly (`Send + Sync`; pair it with one
/// [`ExecBuffers`] per thread).
#[derive(Clone, Debug)]
pub struct Executor {
    actions: Vec<Action>,
    /// `homes[k][i]`: where slot i of state k is stored.
    homes: Vec<Vec<Home>>,
    state_lens: Vec<usize>,
    adjoint_lens: Vec<usize>,
    n_outputs: usize,
    n_once: usize,
    n_snapshots: usize,
    snapshot_stride: usize,
}

/// The mutable buffers of one run of an [`Executor`]: stored-once values, snapshots, the
/// current state and adjoint, and the packed inputs and outputs of a stage reverse.
#[derive(Clone, Debug)]
pub struct ExecBuffers {
    once: Vec<f64>,
    snapshots: Vec<f64>,
    state: Vec<f64>,
    state_next: Vec<f64>,
    adjoint: Vec<f64>,
    adjoint_next: Vec<f64>,
    outputs: Vec<f64>,
    reverse_in: Vec<f64>,
    reverse_out: Vec<f64>,
}

impl Executor {
    /// Lay out buffers for `plan` over the original function `func`.
    pub fn new(func: &Function, plan: &Plan) -> Executor {
        let part: &StagePartition = &plan.partition;
        let homes: Vec<Vec<Home>> = part
            .states
            .iter()
            .map(|state| {
                let mut n_snap = 0;
                state
                    .iter()
                    .map(|v| match part.stored_once.binary_search(v) {
                        Ok(i) => Home::Once(i),
                        Err(_) => {
                            n_snap += 1;
                            Home::Snapshot(n_snap - 1)
                        }
                    })
                    .collect()
            })
            .collect();
        let state_lens: Vec<usize> = part.states.iter().map(Vec::len).collect();
        let adjoint_lens: Vec<usize> = part.adjoint_slots.iter().map(Vec::len).collect();
        Executor {
            actions: plan.actions.clone(),
            homes,
            state_lens,
            adjoint_lens,
            n_outputs: func.n_outputs(),
            n_once: part.stored_once.len(),
            n_snapshots: plan.snapshots,
            snapshot_stride: part.max_snapshot_len(),
        }
    }

    /// Buffers for [`Executor::run`], sized once for this plan.
    pub fn buffers(&self) -> ExecBuffers {
        let max_state = self.state_lens.iter().copied().max().unwrap_or(0);
        let max_adjoint = self.adjoint_lens.iter().copied().max().unwrap_or(0);
        let widest = max_state + max_adjoint + self.n_outputs;
        ExecBuffers {
            once: vec![0.0; self.n_once],
            snapshots: vec![0.0; self.snapshot_stride * self.n_snapshots],
            state: vec![0.0; max_state],
            state_next: vec![0.0; max_state],
            adjoint: vec![0.0; max_adjoint],
            adjoint_next: vec![0.0; max_adjoint],
            outputs: vec![0.0; self.n_outputs],
            reverse_in: Vec::with_capacity(widest),
            reverse_out: vec![0.0; widest],
        }
    }

    /// Outputs `y = f(x)` (one per output) and gradient `grad = Jᵀ·w`, where `w` has one
    /// entry per float output and `grad` one per float parameter, in order (the `vjp`
    /// convention).
    pub fn run<R: StageRunner>(
        &self,
        bufs: &mut ExecBuffers,
        runner: &mut R,
        x: &[f64],
        w: &[f64],
        y: &mut [f64],
        grad: &mut [f64],
    ) -> Result<(), ExecError<R::Error>> {
        let check = |part, expected, got: usize| {
            if expected == got {
                Ok(())
            } else {
                Err(ExecError::Length {
                    part,
                    expected,
                    got,
                })
            }
        };
        let n_params = self.state_lens[0];
        let n_float_params = self.adjoint_lens[0];
        let n_float_outputs = self.adjoint_lens[self.adjoint_lens.len() - 1];
        check(Part::Inputs, n_params, x.len())?;
        check(Part::Cotangent, n_float_outputs, w.len())?;
        check(Part::Outputs, self.n_outputs, y.len())?;
        check(Part::Gradient, n_float_params, grad.len())?;

        bufs.state[..n_params].copy_from_slice(x);
        for &action in &self.actions {
            match action {
                Action::Takeshot { state, slot } => {
                    let snap = &mut bufs.snapshots[slot * self.snapshot_stride..];
                    for (home, &value) in self.homes[state].iter().zip(&bufs.state) {
                        match *home {
                            Home::Once(j) => bufs.once[j] = value,
                            Home::Snapshot(j) => snap[j] = value,
                        }
                    }
                }
                Action::Restore { state, slot } => {
                    let snap = &bufs.snapshots[slot * self.snapshot_stride..];
                    for (home, value) in self.homes[state].iter().zip(&mut bufs.state) {
                        *value = match *home {
                            Home::Once(j) => bufs.once[j],
                            Home::Snapshot(j) => snap[j],
                        };
                    }
                }
                Action::Advance { from, to } => {
                    for stage in from..to {
                        let (n_in, n_out) = (self.state_lens[stage], self.state_lens[stage + 1]);
                        runner
                            .run(
                                StageProgram::Forward(stage),
                                &bufs.state[..n_in],
                                &mut bufs.state_next[..n_out],
                            )
                            .map_err(|source| ExecError::Stage { stage, source })?;
                        std::mem::swap(&mut bufs.state, &mut bufs.state_next);
                    }
                }
                Action::Firsturn { stage } => {
                    bufs.adjoint[..n_float_outputs].copy_from_slice(w);
                    self.turn(bufs, runner, stage, true)?;
                    y.copy_from_slice(&bufs.outputs);
                }
                Action::Youturn { stage } => self.turn(bufs, runner, stage, false)?,
                Action::Terminate => {
                    grad.copy_from_slice(&bufs.adjoint[..n_float_params]);
                }
            }
        }
        Ok(())
    }

    /// Reverse `stage` at the current state; the adjoint of its input becomes current.
    fn turn<R: StageRunner>(
        &self,
        bufs: &mut ExecBuffers,
        runner: &mut R,
        stage: usize,
        first: bool,
    ) -> Result<(), ExecError<R::Error>> {
        let n_in = self.state_lens[stage];
        // The reverse returns the primal values carrying an adjoint (every output, last).
        let n_out = if first {
            self.n_outputs
        } else {
            self.adjoint_lens[stage + 1]
        };
        let (a_in, a_out) = (self.adjoint_lens[stage], self.adjoint_lens[stage + 1]);
        bufs.reverse_in.clear();
        bufs.reverse_in.extend_from_slice(&bufs.state[..n_in]);
        bufs.reverse_in.extend_from_slice(&bufs.adjoint[..a_out]);
        let outputs = &mut bufs.reverse_out[..n_out + a_in];
        runner
            .run(StageProgram::Reverse(stage), &bufs.reverse_in, outputs)
            .map_err(|source| ExecError::Stage { stage, source })?;
        let (primal, adjoint) = outputs.split_at(n_out);
        let state_out = if first {
            &mut bufs.outputs[..n_out]
        } else {
            &mut bufs.state_next[..n_out]
        };
        state_out.copy_from_slice(primal);
        bufs.adjoint_next[..a_in].copy_from_slice(adjoint);
        std::mem::swap(&mut bufs.adjoint, &mut bufs.adjoint_next);
        Ok(())
    }
}
