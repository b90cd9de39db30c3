//! A [`StageRunner`] that evaluates stage functions with the reference interpreter.
//!
//! Each stage has a forward function F_k (`state_in → state_out`) and a reverse function
//! with the `vjp` calling convention: inputs are the stage's inputs followed by one adjoint
//! per float output, outputs are the stage's outputs followed by one adjoint per float input.
//! It is the reference the JIT-driven runner is checked against; it assumes both functions are
//! verified and that their signatures match the partition (checked once, in [`InterpRunner::new`]).

use adjit_ir::{Function, InterpError, Interpreter};

use super::executor::StageRunner;

/// Runs stages with [`adjit_ir::Interpreter`]; buffers are reused between calls.
#[derive(Clone, Debug)]
pub struct InterpRunner {
    forward: Vec<Function>,
    reverse: Vec<Function>,
    interp: Interpreter,
    inputs: Vec<f64>,
    outputs: Vec<f64>,
}

/// A stage's reverse function does not have the `vjp` calling convention.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("reverse of stage {stage} has {got_in} inputs and {got_out} outputs, expected {want_in} and {want_out}")]
pub struct SignatureError {
    pub stage: usize,
    pub got_in: usize,
    pub got_out: usize,
    pub want_in: usize,
    pub want_out: usize,
}

fn n_float(types: impl Iterator<Item = adjit_ir::Type>) -> usize {
    types.filter(|t| t.is_float()).count()
}

impl InterpRunner {
    /// `forward[k]` = F_k and `reverse[k]` = vjp(F_k).
    pub fn new(
        forward: Vec<Function>,
        reverse: Vec<Function>,
    ) -> Result<InterpRunner, SignatureError> {
        let mut widest = 0;
        for (stage, (f, r)) in forward.iter().zip(&reverse).enumerate() {
            let want_in = f.n_params + n_float(f.ret_types.iter().copied());
            let want_out = f.n_outputs() + n_float(f.param_types().into_iter());
            if r.n_params != want_in || r.n_outputs() != want_out {
                return Err(SignatureError {
                    stage,
                    got_in: r.n_params,
                    got_out: r.n_outputs(),
                    want_in,
                    want_out,
                });
            }
            widest = widest.max(want_in).max(want_out);
        }
        Ok(InterpRunner {
            forward,
            reverse,
            interp: Interpreter::default(),
            inputs: Vec::with_capacity(widest),
            outputs: vec![0.0; widest],
        })
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
        let func = &self.reverse[stage];
        self.inputs.clear();
        self.inputs.extend_from_slice(state_in);
        self.inputs.extend_from_slice(adjoint_out);
        let outputs = &mut self.outputs[..func.n_outputs()];
        self.interp.run(func, &self.inputs, outputs)?;
        let (primal, adjoint) = outputs.split_at(state_out.len());
        state_out.copy_from_slice(primal);
        adjoint_in.copy_from_slice(adjoint);
        Ok(())
    }
}
