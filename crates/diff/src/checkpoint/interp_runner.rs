//! A [`StageRunner`] that evaluates stage functions with the reference interpreter.
//!
//! It runs [`StagePartition::stages`] forward and [`StagePartition::reverse`] backward (the
//! `vjp` calling convention: inputs, then output adjoints; outputs, then input adjoints). It is
//! the reference the JIT-driven runner is checked against; it assumes verified functions.
//!
//! Steady-state calls allocate nothing: the interpreter reuses its value buffer.

use adjit_ir::{Function, InterpError, Interpreter};

use super::executor::{StageProgram, StageRunner};
use super::stages::StagePartition;

/// Runs stage programs with [`adjit_ir::Interpreter`], whose value buffer is reused.
#[derive(Clone, Debug)]
pub struct InterpRunner {
    forward: Vec<Function>,
    reverse: Vec<Function>,
    interp: Interpreter,
}

impl InterpRunner {
    /// Runs the stage and reverse functions of `part`.
    pub fn new(part: &StagePartition) -> InterpRunner {
        InterpRunner {
            forward: part.stages.clone(),
            reverse: part.reverse.clone(),
            interp: Interpreter::default(),
        }
    }
}

impl StageRunner for InterpRunner {
    type Error = InterpError;

    fn run(
        &mut self,
        program: StageProgram,
        inputs: &[f64],
        outputs: &mut [f64],
    ) -> Result<(), InterpError> {
        let func = match program {
            StageProgram::Forward(k) => &self.forward[k],
            StageProgram::Reverse(k) => &self.reverse[k],
        };
        self.interp.run(func, inputs, outputs)
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
        let err = runner
            .run(StageProgram::Forward(1), &too_short, &mut out)
            .unwrap_err();
        assert!(
            matches!(&err, InterpError::InputCount { func, .. } if *func == part.stages[1].name),
            "{err}"
        );
        let err = runner
            .run(StageProgram::Reverse(2), &[], &mut out)
            .unwrap_err();
        assert!(
            matches!(&err, InterpError::InputCount { func, .. } if *func == part.reverse[2].name),
            "{err}"
        );
    }
}
