//! The executor reverses a step chain (N runs of one step program, actions streamed from a
//! `StepSchedule`) to the unrolled program's VJP bit for bit, under every strategy, with the
//! interpreter running the step, its pass-through VJP and the seeding of the last step.

use std::num::NonZeroUsize;

use adjit_diff::checkpoint::{
    Executor, StageProgram, StageRunner, StepMemory, StepSchedule, StepShape, Strategy,
};
use adjit_diff::steps::pass_through;
use adjit_ir::trace::{trace_multi, Var};
use adjit_ir::{interpret, Function, InterpError, ParamKind, Type, Value};

fn bits(xs: &[f64]) -> Vec<u64> {
    xs.iter().map(|x| x.to_bits()).collect()
}

/// s = (p, q), θ = (a, b) used several times per step, and a data step size dt.
fn step_fn<'t>(x: &[Var<'t>]) -> Vec<Var<'t>> {
    let (p, q, a, b, dt) = (x[0], x[1], x[2], x[3], x[4]);
    let force = -a * p.sin() - b * q + a * a * 0.01 * p;
    vec![p + dt * q, q + dt * force]
}

fn steps(n: usize) -> Function {
    let mut f = trace_multi("pendulum", &[Type::F64; 5], |x| {
        let mut s = vec![x[0], x[1]];
        for _ in 0..n {
            s = step_fn(&[s[0], s[1], x[2], x[3], x[4]]);
        }
        s
    });
    f.set_param_kind(Value::new(4), ParamKind::Data);
    f
}

/// The step's programs in the interpreter, counting the steps run forward.
struct Interpreted {
    step: Function,
    /// VJP of `(s, θ) ↦ (step(s, θ), a, b)`: (s, θ, s̄′, ā, b̄) -> (s′, a, b, s̄, ā, b̄).
    step_vjp: Function,
    n_steps: usize,
    advances: u64,
}

impl StageRunner for Interpreted {
    type Error = InterpError;

    fn run(
        &mut self,
        program: StageProgram,
        inputs: &[f64],
        outputs: &mut [f64],
    ) -> Result<(), InterpError> {
        let out = match program {
            StageProgram::Forward(_) => {
                self.advances += 1;
                interpret(&self.step, inputs)?
            }
            StageProgram::Reverse(k) if k + 1 == self.n_steps => {
                // (s, θ, w) -> (y = s′, s̄, θ̄): θ's adjoint starts from −0.0.
                let mut seeded = inputs.to_vec();
                seeded.extend_from_slice(&[-0.0, -0.0]);
                let out = interpret(&self.step_vjp, &seeded)?;
                [&out[..2], &out[4..]].concat()
            }
            StageProgram::Reverse(_) => interpret(&self.step_vjp, inputs)?,
        };
        outputs.copy_from_slice(&out);
        Ok(())
    }
}

#[test]
fn every_step_schedule_is_bitwise_the_unrolled_vjp() {
    let step = steps(1);
    let step_vjp = adjit_diff::vjp(&pass_through(&step, &[2, 3]).unwrap());
    let shape = StepShape {
        n_state: 2,
        n_params: 5,
        n_adjoint: 4,
        n_cotangent: 2,
        n_outputs: 2,
    };
    let memory = StepMemory {
        fixed_bytes: 0,
        state_bytes: 16,
        max_bytes: 1 << 40,
    };
    let x = [0.3, -0.2, 1.7, 0.1, 0.05];
    let w = [0.7, -1.3];
    for n in [1, 2, 5, 23] {
        let whole = adjit_diff::vjp(&steps(n));
        let expected = interpret(&whole, &[&x[..], &w[..]].concat()).unwrap();
        for strategy in [
            Strategy::Tape,
            Strategy::Uniform,
            Strategy::Checkpoint { snapshots: 1 },
            Strategy::Checkpoint { snapshots: 3 },
            Strategy::CheckpointBytes(5 * 16),
        ] {
            let schedule =
                StepSchedule::new(strategy, NonZeroUsize::new(n).unwrap(), memory).unwrap();
            let exec = Executor::steps(shape, schedule);
            let mut bufs = exec.try_buffers().unwrap();
            let mut runner = Interpreted {
                step: step.clone(),
                step_vjp: step_vjp.clone(),
                n_steps: n,
                advances: 0,
            };
            let (mut y, mut grad) = ([0.0; 2], [0.0; 4]);
            exec.run(&mut bufs, &mut runner, &x, &w, &mut y, &mut grad)
                .unwrap();
            assert_eq!(bits(&y), bits(&expected[..2]), "{strategy} × {n}");
            assert_eq!(bits(&grad), bits(&expected[2..]), "{strategy} × {n}");
            assert_eq!(runner.advances, schedule.advances(), "{strategy} × {n}");
            // The buffers are reusable: a second run gives the same numbers.
            let (mut y2, mut grad2) = ([0.0; 2], [0.0; 4]);
            exec.run(&mut bufs, &mut runner, &x, &w, &mut y2, &mut grad2)
                .unwrap();
            assert_eq!(bits(&grad2), bits(&grad), "{strategy} × {n}");
        }
    }
}

/// Snapshots beyond what can be counted or allocated are `None`, not an abort.
#[test]
fn snapshots_that_cannot_be_held_are_refused() {
    let shape = StepShape {
        n_state: 3,
        n_params: 3,
        n_adjoint: 3,
        n_cotangent: 3,
        n_outputs: 3,
    };
    let memory = StepMemory {
        fixed_bytes: 0,
        state_bytes: 24,
        max_bytes: 1 << 40,
    };
    let tape = |n| StepSchedule::new(Strategy::Tape, NonZeroUsize::new(n).unwrap(), memory);
    let exec = Executor::steps(shape, tape(usize::MAX).unwrap());
    assert_eq!(exec.snapshot_values(), None);
    assert!(exec.try_buffers().is_none());
    let exec = Executor::steps(shape, tape(usize::MAX / 4).unwrap());
    assert!(exec.try_buffers().is_none());
    let exec = Executor::steps(shape, tape(10).unwrap());
    assert_eq!(exec.snapshot_values(), Some(30));
}
