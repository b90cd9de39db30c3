//! The reference interpreter: evaluates a verified function value by value, using the
//! semantics of [`crate::math`]. Every backend is tested against it.

use crate::function::{Function, Operand, ValueDef};

/// Why a function could not be evaluated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InterpError {
    #[error("@{func} takes {expected} inputs, got {got}")]
    InputCount {
        func: String,
        expected: usize,
        got: usize,
    },
    #[error("@{func} returns {expected} outputs, but the output buffer holds {got}")]
    OutputCount {
        func: String,
        expected: usize,
        got: usize,
    },
    #[error("@{func} is not verified: value {value} uses a value that is not defined before it")]
    NotVerified { func: String, value: usize },
}

/// Evaluate `func` at `inputs` (one `f64` per parameter; `f32` parameters are rounded to
/// `f32`, `bool` parameters read as nonzero = true). Returns one `f64` per returned value
/// (`bool` results are 0.0 or 1.0).
pub fn interpret(func: &Function, inputs: &[f64]) -> Result<Vec<f64>, InterpError> {
    let mut outputs = vec![0.0; func.n_outputs()];
    Interpreter::default().run(func, inputs, &mut outputs)?;
    Ok(outputs)
}

/// An interpreter that keeps its value buffer between calls, for repeated evaluation.
#[derive(Debug, Default, Clone)]
pub struct Interpreter {
    values: Vec<f64>,
}

impl Interpreter {
    /// Evaluate `func` at `inputs`, writing its results to `outputs`.
    pub fn run(
        &mut self,
        func: &Function,
        inputs: &[f64],
        outputs: &mut [f64],
    ) -> Result<(), InterpError> {
        if inputs.len() != func.n_params {
            return Err(InterpError::InputCount {
                func: func.name.clone(),
                expected: func.n_params,
                got: inputs.len(),
            });
        }
        if outputs.len() != func.n_outputs() {
            return Err(InterpError::OutputCount {
                func: func.name.clone(),
                expected: func.n_outputs(),
                got: outputs.len(),
            });
        }
        self.values.clear();
        self.values.reserve(func.n_values());
        for (i, data) in func.values.iter().enumerate() {
            let x = match &data.def {
                ValueDef::Param => data.ty.round(inputs[i]),
                ValueDef::Inst(inst) => {
                    let mut bad = false;
                    inst.for_each_value(|v| bad |= v.index() >= i);
                    if bad {
                        return Err(InterpError::NotVerified {
                            func: func.name.clone(),
                            value: i,
                        });
                    }
                    let values = &self.values;
                    crate::math::eval_inst(inst, data.ty, |o| match o {
                        Operand::Value(v) => values[v.index()],
                        Operand::Const(c) => c,
                    })
                }
            };
            self.values.push(x);
        }
        for (out, r) in outputs.iter_mut().zip(&func.rets) {
            *out = *self
                .values
                .get(r.index())
                .ok_or_else(|| InterpError::NotVerified {
                    func: func.name.clone(),
                    value: r.index(),
                })?;
        }
        Ok(())
    }

    /// Every value of the last run, indexed by [`crate::Value::index`].
    pub fn values(&self) -> &[f64] {
        &self.values
    }
}
