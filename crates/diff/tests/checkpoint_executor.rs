//! The executor replays Revolve schedules correctly, independent of any derivative code: a
//! recording runner checks that every stage is reversed once, last to first, at exactly the
//! state a plain forward pass reaches, and that adjoints are handed from stage to stage.

use adjit_diff::checkpoint::{plan, Executor, StageProgram, StageRunner, Strategy};
use adjit_ir::random::{random_function, RandomOptions, Rng};
use adjit_ir::{interpret, Function, InterpError};

/// Forward stages run in the interpreter; a "reverse" records the stage and its input state,
/// and maps adjoints by a fixed rule (adjoint_in[i] = Σ adjoint_out + i + 1000·stage) so the
/// test can follow them through the chain.
struct Recorder {
    stages: Vec<Function>,
    adjoint_slots: Vec<Vec<usize>>,
    turns: Vec<(usize, Vec<u64>)>,
    forward_insts: u64,
}

fn bits(xs: &[f64]) -> Vec<u64> {
    xs.iter().map(|x| x.to_bits()).collect()
}

impl StageRunner for Recorder {
    type Error = InterpError;

    fn run(
        &mut self,
        program: StageProgram,
        inputs: &[f64],
        outputs: &mut [f64],
    ) -> Result<(), InterpError> {
        let stage = match program {
            StageProgram::Forward(stage) => {
                self.forward_insts += self.stages[stage].n_insts() as u64;
                let out = interpret(&self.stages[stage], inputs)?;
                outputs.copy_from_slice(&out);
                return Ok(());
            }
            StageProgram::Reverse(stage) => stage,
        };
        // Reverse: inputs are state_in ++ adjoint_out, outputs state_out ++ adjoint_in.
        let (state_in, adjoint_out) = inputs.split_at(self.stages[stage].n_params);
        let n_adjoint_in = self.adjoint_slots[stage].len();
        let (state_out, adjoint_in) = outputs.split_at_mut(outputs.len() - n_adjoint_in);
        self.forward_insts += self.stages[stage].n_insts() as u64;
        let out = interpret(&self.stages[stage], state_in)?;
        if stage + 1 == self.stages.len() {
            state_out.copy_from_slice(&out);
        } else {
            for (o, &i) in state_out.iter_mut().zip(&self.adjoint_slots[stage + 1]) {
                *o = out[i];
            }
        }
        self.turns.push((stage, bits(state_in)));
        let total: f64 = adjoint_out.iter().sum();
        for (i, a) in adjoint_in.iter_mut().enumerate() {
            *a = total + i as f64 + 1000.0 * stage as f64;
        }
        Ok(())
    }
}

fn check_replay(func: &Function, strategy: Strategy) {
    let p = plan(func, strategy).unwrap();
    let part = &p.partition;
    let l = part.n_stages();
    let x = Rng::new(7).vector(func.n_params, -2.0, 2.0);
    // The states a plain forward pass goes through.
    let mut expected_states = vec![x.clone()];
    for stage in &part.stages {
        let next = interpret(stage, expected_states.last().unwrap()).unwrap();
        expected_states.push(next);
    }
    let mut runner = Recorder {
        stages: part.stages.clone(),
        adjoint_slots: part.adjoint_slots.clone(),
        turns: Vec::new(),
        forward_insts: 0,
    };
    let exec = Executor::new(func, &p);
    let mut bufs = exec.buffers();
    let w: Vec<f64> = (0..func.n_outputs()).map(|i| 0.5 + i as f64).collect();
    let mut y = vec![0.0; func.n_outputs()];
    let mut grad = vec![0.0; func.n_params];
    for round in 0..2 {
        runner.turns.clear();
        runner.forward_insts = 0;
        exec.run(&mut bufs, &mut runner, &x, &w, &mut y, &mut grad)
            .unwrap();
        let order: Vec<usize> = runner.turns.iter().map(|t| t.0).collect();
        assert_eq!(
            order,
            (0..l).rev().collect::<Vec<_>>(),
            "{strategy}, round {round}"
        );
        for (stage, state) in &runner.turns {
            assert_eq!(
                state,
                &bits(&expected_states[*stage]),
                "{strategy}: state of stage {stage}"
            );
        }
        assert_eq!(bits(&y), bits(&interpret(func, &x).unwrap()), "{strategy}");
        assert_eq!(runner.forward_insts, p.cost.forward_insts, "{strategy}");
        // Follow the adjoint rule through the chain by hand.
        let mut adjoint: Vec<f64> = w.clone();
        for k in (0..l).rev() {
            let total: f64 = adjoint.iter().sum();
            adjoint = (0..part.adjoint_slots[k].len())
                .map(|i| total + i as f64 + 1000.0 * k as f64)
                .collect();
        }
        assert_eq!(bits(&grad), bits(&adjoint), "{strategy}");
    }
}

#[test]
fn every_strategy_reverses_each_stage_once_at_the_right_state() {
    for seed in 0..6 {
        let func = random_function(
            seed,
            &RandomOptions {
                n_insts: 400,
                ..RandomOptions::default()
            },
        );
        for strategy in [
            Strategy::Tape,
            Strategy::Uniform,
            Strategy::Checkpoint { snapshots: 1 },
            Strategy::Checkpoint { snapshots: 2 },
            Strategy::Checkpoint { snapshots: 5 },
            Strategy::CheckpointBytes(4000),
        ] {
            check_replay(&func, strategy);
        }
    }
}

#[test]
fn wrong_buffer_lengths_are_errors() {
    let func = random_function(1, &RandomOptions::default());
    let p = plan(&func, Strategy::Uniform).unwrap();
    let exec = Executor::new(&func, &p);
    let mut bufs = exec.buffers();
    let mut runner = Recorder {
        stages: p.partition.stages.clone(),
        adjoint_slots: p.partition.adjoint_slots.clone(),
        turns: Vec::new(),
        forward_insts: 0,
    };
    let mut y = vec![0.0; func.n_outputs()];
    let mut grad = vec![0.0; func.n_params];
    let w = vec![1.0; func.n_outputs()];
    assert!(exec
        .run(&mut bufs, &mut runner, &[1.0], &w, &mut y, &mut grad)
        .is_err());
    let x = vec![0.5; func.n_params];
    assert!(exec
        .run(&mut bufs, &mut runner, &x, &w[1..], &mut y, &mut grad)
        .is_err());
    assert!(exec
        .run(&mut bufs, &mut runner, &x, &w, &mut y, &mut grad)
        .is_ok());
}
