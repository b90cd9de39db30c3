//! The run-time driver of a checkpointing plan: replays the Revolve action list over a chain of
//! stages, storing and restoring states, and chaining the stages' reverse sweeps.
//!
//! It is generic over how a stage is evaluated ([`StageRunner`]): the tests run it with the
//! interpreter, the facade with JIT-compiled stage functions. Every buffer is allocated once,
//! in [`Executor::new`]; [`Executor::run`] allocates nothing. It assumes the plan's action list
//! is well formed (as [`super::revolve::schedule`] produces) and leaves the stage functions'
//! numbers alone: state values are copied, never rounded or combined, so the result is the
//! chain rule evaluated exactly as the stage reverses compute it.
//!
//! Slot conventions: a state is one `f64` per value of [`StagePartition::states`]; an adjoint of
//! a state has one `f64` per entry of [`StagePartition::adjoint_slots`], in the same order.

use adjit_ir::Function;

use super::revolve::Action;
use super::stages::StagePartition;
use super::Plan;

/// How one stage of a chain is evaluated.
pub trait StageRunner {
    type Error;

    /// Evaluate stage `stage`: `state_in` → `state_out` (no taping).
    fn forward(
        &mut self,
        stage: usize,
        state_in: &[f64],
        state_out: &mut [f64],
    ) -> Result<(), Self::Error>;

    /// Tape and reverse stage `stage` at `state_in`: given the adjoint of its output state
    /// (`adjoint_out`, float slots), write its output state to `state_out` and the adjoint of its
    /// input state (float slots) to `adjoint_in`.
    fn reverse(
        &mut self,
        stage: usize,
        state_in: &[f64],
        adjoint_out: &[f64],
        state_out: &mut [f64],
        adjoint_in: &mut [f64],
    ) -> Result<(), Self::Error>;
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExecError<E> {
    #[error("expected {expected} {what}, got {got}")]
    Length {
        what: &'static str,
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

/// Buffers and layout for running one plan repeatedly.
#[derive(Clone, Debug)]
pub struct Executor {
    actions: Vec<Action>,
    /// `homes[k][i]`: where slot i of state k is stored.
    homes: Vec<Vec<Home>>,
    state_lens: Vec<usize>,
    adjoint_lens: Vec<usize>,
    once: Vec<f64>,
    snapshots: Vec<f64>,
    snapshot_stride: usize,
    state: Vec<f64>,
    state_next: Vec<f64>,
    adjoint: Vec<f64>,
    adjoint_next: Vec<f64>,
    outputs: Vec<f64>,
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
        let max_state = state_lens.iter().copied().max().unwrap_or(0);
        let max_adjoint = adjoint_lens.iter().copied().max().unwrap_or(0);
        let snapshot_stride = part.max_snapshot_len();
        Executor {
            actions: plan.actions.clone(),
            homes,
            state_lens,
            adjoint_lens,
            once: vec![0.0; part.stored_once.len()],
            snapshots: vec![0.0; snapshot_stride * plan.snapshots],
            snapshot_stride,
            state: vec![0.0; max_state],
            state_next: vec![0.0; max_state],
            adjoint: vec![0.0; max_adjoint],
            adjoint_next: vec![0.0; max_adjoint],
            outputs: vec![0.0; func.n_outputs()],
        }
    }

    /// Outputs `y = f(x)` (one per output) and gradient `grad = Jᵀ·w`, where `w` has one
    /// entry per float output and `grad` one per float parameter, in order (the `vjp`
    /// convention).
    pub fn run<R: StageRunner>(
        &mut self,
        runner: &mut R,
        x: &[f64],
        w: &[f64],
        y: &mut [f64],
        grad: &mut [f64],
    ) -> Result<(), ExecError<R::Error>> {
        let check = |what, expected, got: usize| {
            if expected == got {
                Ok(())
            } else {
                Err(ExecError::Length {
                    what,
                    expected,
                    got,
                })
            }
        };
        let n_params = self.state_lens[0];
        let n_float_params = self.adjoint_lens[0];
        let n_float_outputs = self.adjoint_lens[self.adjoint_lens.len() - 1];
        check("inputs", n_params, x.len())?;
        check(
            "gradient entries (float inputs)",
            n_float_params,
            grad.len(),
        )?;
        check("output weights (float outputs)", n_float_outputs, w.len())?;
        check("outputs", self.outputs.len(), y.len())?;

        self.state[..n_params].copy_from_slice(x);
        for i in 0..self.actions.len() {
            match self.actions[i] {
                Action::Takeshot { state, slot } => {
                    let snap = &mut self.snapshots[slot * self.snapshot_stride..];
                    for (home, &value) in self.homes[state].iter().zip(&self.state) {
                        match *home {
                            Home::Once(j) => self.once[j] = value,
                            Home::Snapshot(j) => snap[j] = value,
                        }
                    }
                }
                Action::Restore { state, slot } => {
                    let snap = &self.snapshots[slot * self.snapshot_stride..];
                    for (home, value) in self.homes[state].iter().zip(&mut self.state) {
                        *value = match *home {
                            Home::Once(j) => self.once[j],
                            Home::Snapshot(j) => snap[j],
                        };
                    }
                }
                Action::Advance { from, to } => {
                    for stage in from..to {
                        let (n_in, n_out) = (self.state_lens[stage], self.state_lens[stage + 1]);
                        runner
                            .forward(stage, &self.state[..n_in], &mut self.state_next[..n_out])
                            .map_err(|source| ExecError::Stage { stage, source })?;
                        std::mem::swap(&mut self.state, &mut self.state_next);
                    }
                }
                Action::Firsturn { stage } => {
                    self.adjoint[..n_float_outputs].copy_from_slice(w);
                    self.turn(runner, stage, true)?;
                    y.copy_from_slice(&self.outputs);
                }
                Action::Youturn { stage } => self.turn(runner, stage, false)?,
                Action::Terminate => {
                    grad.copy_from_slice(&self.adjoint[..n_float_params]);
                }
            }
        }
        Ok(())
    }

    /// Reverse `stage` at the current state; the adjoint of its input becomes current.
    fn turn<R: StageRunner>(
        &mut self,
        runner: &mut R,
        stage: usize,
        first: bool,
    ) -> Result<(), ExecError<R::Error>> {
        let n_in = self.state_lens[stage];
        // The reverse returns the primal values carrying an adjoint (every output, last).
        let n_out = if first {
            self.outputs.len()
        } else {
            self.adjoint_lens[stage + 1]
        };
        let (a_in, a_out) = (self.adjoint_lens[stage], self.adjoint_lens[stage + 1]);
        let state_out = if first {
            &mut self.outputs[..n_out]
        } else {
            &mut self.state_next[..n_out]
        };
        runner
            .reverse(
                stage,
                &self.state[..n_in],
                &self.adjoint[..a_out],
                state_out,
                &mut self.adjoint_next[..a_in],
            )
            .map_err(|source| ExecError::Stage { stage, source })?;
        std::mem::swap(&mut self.adjoint, &mut self.adjoint_next);
        Ok(())
    }
}

/// The two buffers a [`StageRunner`] needs to call a stage reverse, whose calling convention is
/// `(state_in ++ adjoint_out) -> (state_out ++ adjoint_in)` (the `vjp` layout). Shared by every
/// runner, so packing and unpacking is written once; the buffers grow once and are reused.
#[derive(Clone, Debug, Default)]
pub struct ReverseBuffers {
    inputs: Vec<f64>,
    outputs: Vec<f64>,
}

impl ReverseBuffers {
    /// Buffers for reverse functions with at most `widest` inputs and outputs.
    pub fn with_width(widest: usize) -> ReverseBuffers {
        ReverseBuffers {
            inputs: Vec::with_capacity(widest),
            outputs: vec![0.0; widest],
        }
    }

    /// Pack `state_in ++ adjoint_out`, call `run(inputs, outputs)`, and unpack its outputs into
    /// `state_out` and `adjoint_in`.
    pub fn run<E>(
        &mut self,
        state_in: &[f64],
        adjoint_out: &[f64],
        state_out: &mut [f64],
        adjoint_in: &mut [f64],
        run: impl FnOnce(&[f64], &mut [f64]) -> Result<(), E>,
    ) -> Result<(), E> {
        self.inputs.clear();
        self.inputs.extend_from_slice(state_in);
        self.inputs.extend_from_slice(adjoint_out);
        let n_out = state_out.len() + adjoint_in.len();
        if self.outputs.len() < n_out {
            self.outputs.resize(n_out, 0.0);
        }
        let outputs = &mut self.outputs[..n_out];
        run(&self.inputs, outputs)?;
        let (primal, adjoint) = outputs.split_at(state_out.len());
        state_out.copy_from_slice(primal);
        adjoint_in.copy_from_slice(adjoint);
        Ok(())
    }
}
