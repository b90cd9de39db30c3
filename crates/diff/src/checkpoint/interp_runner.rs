//! A [`StageRunner`] that evaluates stage functions with the reference interpreter.
//!
//! It runs [`StagePartition::stages`] forward and [`StagePartition::reverse`] backward (the
//! `vjp` calling convention: inputs, then output adjoints; outputs, then input adjoints). It is
//! the reference the JIT-driven runner is checked against; it assumes verified functions.
//!
//! Steady-state calls allocate nothing: the interpreter reuses its value buffer.

use adjit_ir::{Function, InterpError, Interpreter};

use super::executor::{ReverseBuffers, StageRunner};
use super::stages::StagePartition;

/// Runs stages with [`adjit_ir::Interpreter`]; buffers are reused between calls.
#[derive(Clone, Debug)]
pub struct InterpRunner {
    forward: Vec<Function>,
    reverse: Vec<Function>,
    interp: Interpreter,
    buffers: ReverseBuffers,
}

impl InterpRunner {
    /// Runs the stage and reverse functions of `part`.
    pub fn new(part: &StagePartition) -> InterpRunner {
        let widest = part
            .reverse
            .iter()
            .map(|r| r.n_params.max(r.n_outputs()))
            .max()
            .unwrap_or(0);
        InterpRunner {
            forward: part.stages.clone(),
            reverse: part.reverse.clone(),
            interp: Interpreter::default(),
            buffers: ReverseBuffers::with_width(widest),
        }
    }
}

impl StageRunner for InterpRunner {
    type Error = InterpError;

    fn forward(
        &mut self,
        stage: usize,
        state_in: &[f64],
        state_out: &mut [f64],
    ) -> Result<(), InterpError> {
        self.interp.run(&self.forward[stage], state_in, state_out)
    }

    fn reverse(
        &mut self,
        stage: usize,
        state_in: &[f64],
        adjoint_out: &[f64],
        state_out: &mut [f64],
        adjoint_in: &mut [f64],
    ) -> Result<(), InterpError> {
        let (func, interp) = (&self.reverse[stage], &mut self.interp);
        self.buffers.run(
            state_in,
            adjoint_out,
            state_out,
            adjoint_in,
            |inputs, outputs| interp.run(func, inputs, outputs),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::stages::partition;
    use adjit_ir::random::{random_function, RandomOptions};

    #[test]
    fn errors_name_the_stage_they_came_from() {
        let func = random_function(
            4,
            &RandomOptions {
                n_insts: 60,
                ..RandomOptions::default()
            },
        );
        let part = partition(&func, 3);
        let mut runner = InterpRunner::new(&part);
        let mut out = vec![0.0; part.states[2].len()];
        let too_short = vec![0.0; part.states[1].len() + 1];
        let err = runner.forward(1, &too_short, &mut out).unwrap_err();
        assert!(
            matches!(&err, InterpError::InputCount { func, .. } if *func == part.stages[1].name),
            "{err}"
        );
        let mut adjoint_in = vec![0.0; part.adjoint_slots[2].len()];
        let err = runner
            .reverse(2, &[], &[], &mut out, &mut adjoint_in)
            .unwrap_err();
        assert!(
            matches!(&err, InterpError::InputCount { func, .. } if *func == part.reverse[2].name),
            "{err}"
        );
    }
}
