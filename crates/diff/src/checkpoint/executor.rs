//! The run-time driver of a reversal schedule: replays a Revolve-style action list over a chain
//! of stages, storing and restoring states, and chaining the stages' reverse sweeps.
//!
//! It serves two kinds of chain. A *stage chain* is a program cut into stages by a checkpointing
//! [`Plan`] (each stage its own program, states of their own lengths, some values stored once);
//! its action list is stored. A *step chain* is N runs of one step program `(s, θ) -> s′`
//! ([`StepShape`]): every state is `(s, θ)` with θ carried unchanged, only s is stored, and the
//! actions are streamed from a [`StepSchedule`] (so memory is O(snapshots) whatever N).
//!
//! It is generic over how a stage program is evaluated ([`StageRunner`]: "run this program on
//! these buffers"): the tests run it with the interpreter, the facade with JIT-compiled stage
//! programs and, for iterated steps, with a step's compiled VJP or inverse. The [`Executor`] is
//! the immutable part (actions, where each state slot lives, buffer sizes) and can be shared
//! between threads; every mutable buffer lives in [`ExecBuffers`], allocated once by
//! [`Executor::buffers`] (or [`Executor::try_buffers`]), so [`Executor::run`] allocates nothing.
//! It assumes the action list is well formed (as [`super::revolve::schedule`] and
//! [`StepSchedule::stream`] produce) and leaves the stage programs' numbers alone: state values
//! are copied, never rounded or combined, so the result is the chain rule evaluated exactly as
//! the stage reverses compute it.
//!
//! Slot conventions: a state is one `f64` per value of [`StagePartition::states`]; an adjoint of
//! a state has one `f64` per entry of [`StagePartition::adjoint_slots`], in the same order. For a
//! step chain a state is the step's parameters and an adjoint is `n_adjoint` numbers (see
//! [`StepShape`]).

use adjit_ir::Function;

use crate::layout::Part;

use super::revolve::Action;
use super::stages::StagePartition;
use super::step_schedule::StepSchedule;
use super::Plan;

/// One program of a stage chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageProgram {
    /// Stage `k` forward: `state_k -> state_{k+1}` (no taping). For a step chain, the step:
    /// `(s, θ) -> s′` (θ is carried by the executor).
    Forward(usize),
    /// Stage `k` taped and reversed, in the `vjp` calling convention:
    /// `(state_k ++ adjoint of its outputs) -> (its outputs ++ adjoint of state_k)`; "its
    /// outputs" are those carrying an adjoint, or every output of the chain for the last stage.
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

/// N runs of one step program as a chain: what the executor needs to know of its buffers.
///
/// A state is the step's `n_params` parameters `(s, θ)`: the first `n_state` (s, the step's
/// outputs) change from step to step and are what a snapshot stores; θ is carried unchanged.
/// Between steps the adjoint is `n_adjoint` numbers (s̄, then θ's running adjoint); the last
/// step's reverse takes the chain's cotangent (`n_cotangent` numbers, one per float output) and
/// returns its `n_outputs` outputs. So the programs are: `Forward(k)`: `(s, θ) -> s′`;
/// `Reverse(k)` for k < N − 1: `(s, θ, adjoint) -> (n_adjoint values, adjoint)`; and
/// `Reverse(N − 1)`: `(s, θ, w) -> (y, adjoint)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepShape {
    pub n_state: usize,
    pub n_params: usize,
    pub n_adjoint: usize,
    pub n_cotangent: usize,
    pub n_outputs: usize,
}

/// The chain an executor reverses, and where its actions come from.
#[derive(Clone, Debug)]
enum Chain {
    /// A planned stage chain: its stored action list, and per state its length and where each
    /// value is kept (`homes[k][i]`: slot i of state k).
    Stages {
        actions: Vec<Action>,
        homes: Vec<Vec<Home>>,
        state_lens: Vec<usize>,
        adjoint_lens: Vec<usize>,
        n_once: usize,
        snapshot_stride: usize,
    },
    /// A step chain: the same shape at every step, actions streamed from the schedule.
    Steps {
        shape: StepShape,
        schedule: StepSchedule,
    },
}

/// The immutable layout for running one plan repeatedly (`Send + Sync`; pair it with one
/// [`ExecBuffers`] per thread).
#[derive(Clone, Debug)]
pub struct Executor {
    chain: Chain,
    n_outputs: usize,
    n_snapshots: usize,
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
            chain: Chain::Stages {
                actions: plan.actions.clone(),
                homes,
                state_lens,
                adjoint_lens,
                n_once: part.stored_once.len(),
                snapshot_stride: part.max_snapshot_len(),
            },
            n_outputs: func.n_outputs(),
            n_snapshots: plan.snapshots,
        }
    }

    /// Reverse `schedule.n_steps()` runs of a step program of `shape`, storing states as
    /// `schedule` says (see [`StepShape`] for the programs the runner is asked for).
    pub fn steps(shape: StepShape, schedule: StepSchedule) -> Executor {
        Executor {
            chain: Chain::Steps { shape, schedule },
            n_outputs: shape.n_outputs,
            n_snapshots: schedule.snapshots(),
        }
    }

    /// Length of state `k` (the input of stage `k`).
    fn state_len(&self, k: usize) -> usize {
        match &self.chain {
            Chain::Stages { state_lens, .. } => state_lens[k],
            Chain::Steps { shape, .. } => shape.n_params,
        }
    }

    /// Length of the adjoint of state `k`; that of the last state is the cotangent's.
    fn adjoint_len(&self, k: usize) -> usize {
        match &self.chain {
            Chain::Stages { adjoint_lens, .. } => adjoint_lens[k],
            Chain::Steps { shape, schedule } if k == schedule.n_steps() => shape.n_cotangent,
            Chain::Steps { shape, .. } => shape.n_adjoint,
        }
    }

    fn n_stages(&self) -> usize {
        match &self.chain {
            Chain::Stages { state_lens, .. } => state_lens.len() - 1,
            Chain::Steps { schedule, .. } => schedule.n_steps(),
        }
    }

    /// Numbers one snapshot slot holds.
    fn snapshot_stride(&self) -> usize {
        match &self.chain {
            Chain::Stages {
                snapshot_stride, ..
            } => *snapshot_stride,
            Chain::Steps { shape, .. } => shape.n_state,
        }
    }

    /// Numbers all snapshot slots hold together (`None` beyond `usize`): the part of
    /// [`ExecBuffers`] that grows with the schedule.
    pub fn snapshot_values(&self) -> Option<usize> {
        self.snapshot_stride().checked_mul(self.n_snapshots)
    }

    /// Buffers for [`Executor::run`], sized once for this plan. A stage chain's sizes follow
    /// from a program held in memory; for a step chain, whose snapshots may not fit, use
    /// [`Executor::try_buffers`].
    ///
    /// # Aborts
    /// Like `vec!`, when the snapshots cannot be allocated.
    pub fn buffers(&self) -> ExecBuffers {
        match self.try_buffers() {
            Some(bufs) => bufs,
            None => std::alloc::handle_alloc_error(std::alloc::Layout::new::<f64>()),
        }
    }

    /// [`Executor::buffers`], or `None` when the snapshots cannot be allocated (more numbers
    /// than `usize` counts, or than the allocator gives).
    pub fn try_buffers(&self) -> Option<ExecBuffers> {
        let n_snapshot_values = self.snapshot_values()?;
        let mut snapshots = Vec::new();
        snapshots.try_reserve_exact(n_snapshot_values).ok()?;
        snapshots.resize(n_snapshot_values, 0.0);
        let (max_state, max_adjoint, n_once) = match &self.chain {
            Chain::Stages {
                state_lens,
                adjoint_lens,
                n_once,
                ..
            } => (
                state_lens.iter().copied().max().unwrap_or(0),
                adjoint_lens.iter().copied().max().unwrap_or(0),
                *n_once,
            ),
            Chain::Steps { shape, .. } => {
                (shape.n_params, shape.n_adjoint.max(shape.n_cotangent), 0)
            }
        };
        let widest = max_state + max_adjoint + self.n_outputs;
        Some(ExecBuffers {
            once: vec![0.0; n_once],
            snapshots,
            state: vec![0.0; max_state],
            state_next: vec![0.0; max_state],
            adjoint: vec![0.0; max_adjoint],
            adjoint_next: vec![0.0; max_adjoint],
            outputs: vec![0.0; self.n_outputs],
            reverse_in: Vec::with_capacity(widest),
            reverse_out: vec![0.0; widest],
        })
    }

    /// Outputs `y = f(x)` (one per output) and gradient `grad = Jᵀ·w`, where `w` has one
    /// entry per float output and `grad` one per float parameter, in order (the `vjp`
    /// convention). For a step chain, `x` is the first state `(s₀, θ)`, `w` the cotangent of
    /// the last step's reverse and `grad` the adjoint of the first state.
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
        let n_params = self.state_len(0);
        check(Part::Inputs, n_params, x.len())?;
        check(Part::Cotangent, self.adjoint_len(self.n_stages()), w.len())?;
        check(Part::Outputs, self.n_outputs, y.len())?;
        check(Part::Gradient, self.adjoint_len(0), grad.len())?;

        bufs.state[..n_params].copy_from_slice(x);
        let mut act = |action| self.act(action, bufs, runner, w, y, grad);
        match &self.chain {
            Chain::Stages { actions, .. } => actions.iter().try_for_each(|&a| act(a)),
            Chain::Steps { schedule, .. } => schedule.stream(&mut act),
        }
    }

    /// Carry out one action on the current state and adjoint.
    fn act<R: StageRunner>(
        &self,
        action: Action,
        bufs: &mut ExecBuffers,
        runner: &mut R,
        w: &[f64],
        y: &mut [f64],
        grad: &mut [f64],
    ) -> Result<(), ExecError<R::Error>> {
        let stride = self.snapshot_stride();
        match (action, &self.chain) {
            (Action::Takeshot { state, slot }, Chain::Stages { homes, .. }) => {
                let snap = &mut bufs.snapshots[slot * stride..];
                for (home, &value) in homes[state].iter().zip(&bufs.state) {
                    match *home {
                        Home::Once(j) => bufs.once[j] = value,
                        Home::Snapshot(j) => snap[j] = value,
                    }
                }
            }
            (Action::Restore { state, slot }, Chain::Stages { homes, .. }) => {
                let snap = &bufs.snapshots[slot * stride..];
                for (home, value) in homes[state].iter().zip(&mut bufs.state) {
                    *value = match *home {
                        Home::Once(j) => bufs.once[j],
                        Home::Snapshot(j) => snap[j],
                    };
                }
            }
            (Action::Takeshot { slot, .. }, Chain::Steps { .. }) => {
                bufs.snapshots[slot * stride..(slot + 1) * stride]
                    .copy_from_slice(&bufs.state[..stride]);
            }
            (Action::Restore { slot, .. }, Chain::Steps { .. }) => {
                bufs.state[..stride]
                    .copy_from_slice(&bufs.snapshots[slot * stride..(slot + 1) * stride]);
            }
            (Action::Advance { from, to }, Chain::Stages { state_lens, .. }) => {
                for stage in from..to {
                    let (n_in, n_out) = (state_lens[stage], state_lens[stage + 1]);
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
            (Action::Advance { from, to }, Chain::Steps { shape, .. }) => {
                // The step returns s′ only: θ stays where it is.
                let n = shape.n_state;
                for stage in from..to {
                    runner
                        .run(
                            StageProgram::Forward(stage),
                            &bufs.state[..shape.n_params],
                            &mut bufs.state_next[..n],
                        )
                        .map_err(|source| ExecError::Stage { stage, source })?;
                    bufs.state[..n].copy_from_slice(&bufs.state_next[..n]);
                }
            }
            (Action::Firsturn { stage }, _) => {
                bufs.adjoint[..w.len()].copy_from_slice(w);
                self.turn(bufs, runner, stage, true)?;
                y.copy_from_slice(&bufs.outputs);
            }
            (Action::Youturn { stage }, _) => self.turn(bufs, runner, stage, false)?,
            (Action::Terminate, _) => {
                grad.copy_from_slice(&bufs.adjoint[..grad.len()]);
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
        let n_in = self.state_len(stage);
        // The reverse returns the primal values carrying an adjoint (every output, last).
        let n_out = if first {
            self.n_outputs
        } else {
            self.adjoint_len(stage + 1)
        };
        let (a_in, a_out) = (self.adjoint_len(stage), self.adjoint_len(stage + 1));
        bufs.reverse_in.clear();
        bufs.reverse_in.extend_from_slice(&bufs.state[..n_in]);
        bufs.reverse_in.extend_from_slice(&bufs.adjoint[..a_out]);
        let outputs = &mut bufs.reverse_out[..n_out + a_in];
        runner
            .run(StageProgram::Reverse(stage), &bufs.reverse_in, outputs)
            .map_err(|source| ExecError::Stage { stage, source })?;
        let (primal, adjoint) = outputs.split_at(n_out);
        // Only the last stage's primal outputs are kept (the chain's y); the others are the
        // state that the next advance or restore replaces.
        if first {
            bufs.outputs.copy_from_slice(primal);
        }
        bufs.adjoint_next[..a_in].copy_from_slice(adjoint);
        std::mem::swap(&mut bufs.adjoint, &mut bufs.adjoint_next);
        Ok(())
    }
}
