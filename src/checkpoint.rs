//! Checkpointed gradients: a [`adjit_diff::checkpoint::Plan`] whose stage functions and stage
//! reverses are simplified and prepared once on an engine (native code by default), then driven
//! by the plan's executor on every call.
//!
//! Generated code is O(program size): one forward and one reverse function per stage.
//! `simplify` preserves every output bit for bit, and the stage reverses accumulate adjoints in
//! the whole-function `vjp`'s order, so a checkpointed gradient equals the taped one bit for bit
//! (checked in the tests below). Calls take `&self`: each concurrent caller borrows a set of
//! executor buffers from a pool (allocated on first use), so steady-state calls allocate nothing.

use std::sync::Mutex;

use adjit_diff::checkpoint::{self, ExecBuffers, Executor, Plan, StageProgram, StageRunner};
use adjit_diff::layout::{Kind, Layout};
use adjit_ir::Function;

use crate::error::{Error, Result};
use crate::options::Options;
use crate::prepared::{length_error, parts_error, Prepared, Signature};
use crate::runner::Runner;
use adjit_diff::checkpoint::Strategy;

fn make_plan(func: &Function, strategy: Strategy) -> Result<Plan> {
    adjit_ir::verify(func)?;
    Ok(checkpoint::plan(func, strategy)?)
}

/// Figures of one checkpointed gradient (per call, from the plan).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CheckpointStats {
    /// Peak bytes: stored-once values, snapshots, working buffers and the largest stage's tape.
    pub peak_bytes: u64,
    /// Primal instructions executed per call, recomputation included (IR of the partition).
    pub forward_ops: u64,
    /// Of those, instructions executed again because of checkpointing.
    pub recomputed_ops: u64,
    /// Instructions of the compiled (simplified) stage programs executed per call, forward
    /// advances and stage reverses together: the predicted cost of a call.
    pub executed_insts: u64,
    pub stages: usize,
    pub snapshots: usize,
    /// Measured: the largest native workspace (spilled values) of one compiled stage program
    /// (0 on the interpreter); the executor's buffers come on top (see `peak_bytes`).
    pub workspace_bytes: u64,
}

/// The prepared stage programs, run by the executor.
struct Stages {
    forward: Vec<Runner>,
    reverse: Vec<Runner>,
}

impl StageRunner for &Stages {
    type Error = Error;

    fn run(&mut self, program: StageProgram, inputs: &[f64], outputs: &mut [f64]) -> Result<()> {
        match program {
            StageProgram::Forward(k) => self.forward[k].run(inputs, outputs),
            StageProgram::Reverse(k) => self.reverse[k].run(inputs, outputs),
        }
    }
}

/// Value and `Jᵀ·w` of a function under a memory [`Strategy`], compiled once and callable
/// from many threads.
///
/// ```
/// use adjit::checkpoint::CheckpointedGradient;
/// let f = adjit::trace(2, |x| (x[0] * x[1]).sin() * x[0]);
/// let g = CheckpointedGradient::new(&f, adjit::Strategy::Checkpoint { snapshots: 2 }).unwrap();
/// let (mut y, mut grad) = ([0.0], [0.0; 2]);
/// g.call(&[0.5, 2.0], &[1.0], &mut y, &mut grad).unwrap();
/// assert!((y[0] - 1.0f64.sin() * 0.5).abs() < 1e-15);
/// assert!((grad[1] - 1.0f64.cos() * 0.25).abs() < 1e-15); // ∂/∂x₁ = cos(x₀x₁)·x₀²
/// ```
pub struct CheckpointedGradient {
    sig: Signature,
    layout: Layout,
    executor: Executor,
    stages: Stages,
    pool: Mutex<Vec<ExecBuffers>>,
    stats: CheckpointStats,
}

impl std::fmt::Debug for CheckpointedGradient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckpointedGradient")
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl CheckpointedGradient {
    /// Plan `func` under `strategy`, simplify and compile every stage and stage reverse.
    pub fn new(func: &Function, strategy: Strategy) -> Result<CheckpointedGradient> {
        CheckpointedGradient::with_options(func, strategy, &Options::default())
    }

    /// [`CheckpointedGradient::new`] on the engine and with the code-generation options of
    /// `opts`.
    pub fn with_options(
        func: &Function,
        strategy: Strategy,
        opts: &Options,
    ) -> Result<CheckpointedGradient> {
        let plan = make_plan(func, strategy)?;
        let part = &plan.partition;
        let mut forward = Vec::with_capacity(part.n_stages());
        let mut reverse = Vec::with_capacity(part.n_stages());
        let mut forward_insts = Vec::with_capacity(part.n_stages());
        let mut executed_insts = 0u64;
        for (stage, rev) in part.stages.iter().zip(&part.reverse) {
            let stage = adjit_diff::simplify(stage);
            let rev = adjit_diff::simplify(rev);
            forward_insts.push(stage.n_insts() as u64);
            executed_insts += rev.n_insts() as u64;
            forward.push(Runner::new(&stage, opts)?);
            reverse.push(Runner::new(&rev, opts)?);
        }
        for action in &plan.actions {
            if let checkpoint::Action::Advance { from, to } = *action {
                executed_insts += forward_insts[from..to].iter().sum::<u64>();
            }
        }
        let workspace_bytes = forward
            .iter()
            .chain(&reverse)
            .filter_map(|r| r.code().map(|code| code.workspace_bytes() as u64))
            .max()
            .unwrap_or(0);
        let stats = CheckpointStats {
            workspace_bytes,
            peak_bytes: plan.cost.peak_bytes,
            forward_ops: plan.cost.forward_insts,
            recomputed_ops: plan.cost.recomputed_insts,
            executed_insts,
            stages: part.n_stages(),
            snapshots: plan.snapshots,
        };
        let executor = Executor::new(func, &plan);
        Ok(CheckpointedGradient {
            sig: Signature::of(func),
            layout: Layout::of(func, Kind::Vjp),
            pool: Mutex::new(vec![executor.buffers()]),
            executor,
            stages: Stages { forward, reverse },
            stats,
        })
    }

    /// `y = f(x)` (one per output) and `grad = Jᵀ·w` (`w`: one per float output; `grad`: one
    /// per float input): the parts `x`, `ȳ`, `y`, `x̄` of the VJP layout.
    pub fn call(&self, x: &[f64], w: &[f64], y: &mut [f64], grad: &mut [f64]) -> Result<()> {
        self.sig.check(
            self.sig.name(),
            &self.layout,
            [x.len(), w.len()].into_iter(),
            self.layout.output_parts(),
            [y.len(), grad.len()].into_iter(),
            x,
        )?;
        // A poisoned pool only means another caller panicked: the buffers hold no invariant.
        let taken = self.pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut bufs = taken.unwrap_or_else(|| self.executor.buffers());
        let result = self
            .executor
            .run(&mut bufs, &mut &self.stages, x, w, y, grad)
            .map_err(|e| match e {
                checkpoint::ExecError::Stage { source, .. } => source,
                checkpoint::ExecError::Length {
                    part,
                    expected,
                    got,
                } => length_error(self.sig.name(), &self.layout, part, expected, got),
            });
        self.pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(bufs);
        result
    }

    /// The layout of the VJP this object computes: `(x, ȳ) -> (y, x̄)`.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn stats(&self) -> CheckpointStats {
        self.stats
    }
}

/// The plan of `func` under `strategy` as text, for `adjit dump --stage schedule`: stages
/// (instructions, cut widths, snapshot sizes), memory and cost, and the action list.
pub fn schedule_text(func: &Function, strategy: Strategy) -> Result<String> {
    Ok(make_plan(func, strategy)?.describe())
}

impl Prepared for CheckpointedGradient {
    fn name(&self) -> &str {
        self.sig.name()
    }

    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn call_parts(&self, inputs: &[&[f64]], outputs: &mut [&mut [f64]]) -> Result<()> {
        match (inputs, outputs) {
            ([x, w], [y, grad]) => self.call(x, w, y, grad),
            (inputs, outputs) => Err(parts_error(self, inputs.len(), outputs.len())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adjit_diff::layout::Part;
    use adjit_ir::random::{random_function, RandomOptions, Rng};

    const STRATEGIES: [Strategy; 5] = [
        Strategy::Tape,
        Strategy::Uniform,
        Strategy::Checkpoint { snapshots: 1 },
        Strategy::Checkpoint { snapshots: 3 },
        Strategy::CheckpointBytes(3000),
    ];

    fn bits(xs: &[f64]) -> Vec<u64> {
        xs.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn jit_checkpointed_gradients_are_bitwise_the_jit_tape() {
        for seed in 0..6 {
            let opts = RandomOptions {
                n_insts: 250,
                n_outputs: 2,
                non_smooth: seed % 2 == 1,
                ..RandomOptions::default()
            };
            let func = random_function(seed, &opts);
            let mut rng = Rng::new(seed);
            let x = rng.vector(func.n_params, -2.0, 2.0);
            let w = rng.vector(func.n_outputs(), -1.0, 1.0);
            let tape = crate::Compiled::new(&func, crate::Mode::Vjp).unwrap();
            let mut inputs = x.clone();
            inputs.extend_from_slice(&w);
            let mut expected = vec![0.0; tape.n_outputs()];
            tape.call(&inputs, &mut expected).unwrap();
            for strategy in STRATEGIES {
                let g = CheckpointedGradient::new(&func, strategy).unwrap();
                let mut y = vec![0.0; func.n_outputs()];
                let mut grad = vec![0.0; func.n_params];
                for _ in 0..2 {
                    g.call(&x, &w, &mut y, &mut grad).unwrap();
                    assert_eq!(
                        bits(&y),
                        bits(&expected[..y.len()]),
                        "seed {seed}, {strategy:?}"
                    );
                    assert_eq!(
                        bits(&grad),
                        bits(&expected[y.len()..]),
                        "seed {seed}, {strategy:?}"
                    );
                }
                let stats = g.stats();
                match strategy {
                    Strategy::Tape => assert_eq!((stats.stages, stats.recomputed_ops), (1, 0)),
                    Strategy::CheckpointBytes(budget) => assert!(stats.peak_bytes <= budget),
                    _ => assert!(stats.stages > 1 && stats.recomputed_ops > 0, "{strategy:?}"),
                }
            }
        }
    }

    #[test]
    fn errors_are_reported_not_panicked() {
        let func = random_function(2, &RandomOptions::default());
        let err =
            CheckpointedGradient::new(&func, Strategy::Checkpoint { snapshots: 0 }).unwrap_err();
        assert!(matches!(err, Error::Checkpoint(_)), "{err}");
        let err = CheckpointedGradient::new(&func, Strategy::CheckpointBytes(8)).unwrap_err();
        assert!(
            err.to_string().contains("smallest that works needs"),
            "{err}"
        );
        let g = CheckpointedGradient::new(&func, Strategy::Uniform).unwrap();
        let mut y = vec![0.0; func.n_outputs()];
        let mut grad = vec![0.0; func.n_params];
        let err = g.call(&[1.0], &[1.0, 1.0], &mut y, &mut grad).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Length {
                    part: Part::Inputs,
                    expected: 3,
                    got: 1,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn schedule_text_lists_stages_and_actions() {
        let func = random_function(
            4,
            &RandomOptions {
                n_insts: 100,
                ..RandomOptions::default()
            },
        );
        let text = schedule_text(&func, Strategy::Checkpoint { snapshots: 2 }).unwrap();
        let plan = make_plan(&func, Strategy::Checkpoint { snapshots: 2 }).unwrap();
        let l = plan.partition.n_stages();
        let header = format!("; strategy checkpoint:2: {l} stages, 2 snapshot slots");
        assert!(text.starts_with(&header), "{text}");
        assert_eq!(text.lines().filter(|t| t.starts_with("stage ")).count(), l);
        assert!(
            text.contains("actions: takeshot 0 in slot 0, advance "),
            "{text}"
        );
        // The peak is the sum of its parts, as printed.
        let c = plan.cost;
        assert_eq!(
            c.peak_bytes,
            c.stored_once_bytes + c.buffer_bytes + c.snapshot_bytes + c.tape_bytes
        );
        assert!(
            text.contains(&format!("; peak {} bytes = ", c.peak_bytes)),
            "{text}"
        );
        assert!(text.trim_end().ends_with("youturn 0, terminate"), "{text}");
    }
}
