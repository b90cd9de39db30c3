//! One module per GradBench eval. Each traces its kernels once per size with adjit's tracer,
//! caches the compiled objects, and answers `evaluate` with the output shape of GradBench's
//! reference implementation (`cpp/gradbench/evals/<eval>.hpp` and `tools/manual`).

mod hello;
mod kmeans;
mod llsq;
mod lse;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::measure::Evaluation;

/// A defined eval: answers `evaluate` messages for its functions.
pub trait Eval {
    /// Run `function` on `input` as often as the input's `min_runs`/`min_seconds` ask.
    fn evaluate(&mut self, function: &str, input: &Value) -> Result<Evaluation>;
}

/// The evals adjit implements, by GradBench module name.
const IMPLEMENTED: &[(&str, fn() -> Box<dyn Eval>)] = &[
    ("hello", || Box::<hello::Hello>::default()),
    ("llsq", || Box::<llsq::Llsq>::default()),
    ("lse", || Box::<lse::Lse>::default()),
    ("kmeans", || Box::<kmeans::Kmeans>::default()),
];

/// The eval named `module`, or an error naming the ones adjit implements.
pub fn define(module: &str) -> Result<Box<dyn Eval>> {
    IMPLEMENTED
        .iter()
        .find(|(name, _)| *name == module)
        .map(|(_, make)| make())
        .ok_or_else(|| Error::UnknownModule {
            module: module.to_string(),
            implemented: IMPLEMENTED
                .iter()
                .map(|(name, _)| *name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The error for a function `module` does not have; `expected` lists the ones it has.
fn unknown_function(module: &str, function: &str, expected: &'static str) -> Error {
    Error::UnknownFunction {
        module: module.to_string(),
        function: function.to_string(),
        expected,
    }
}

/// Worker threads for `items` independent pieces of work: every core, at most one per item.
fn threads(items: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.min(items).max(1)
}
