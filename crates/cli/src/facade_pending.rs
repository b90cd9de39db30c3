//! Stand-ins for the two facade entry points that do not exist yet: `adjit::bench` and
//! `adjit::compile_object`. Both return `Error::Unsupported` ("not yet available").
//!
//! The signatures here are the ones the CLI assumes; when the facade gains the real functions
//! (with these shapes, or close to them), each body becomes a one-line call and this module can
//! be replaced by imports from `adjit`.

use adjit::{Error, Function, InverseMode, Result, Strategy};

/// What one benchmark row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchMode {
    /// The function itself.
    Primal,
    /// Forward mode (outputs and J·v).
    Jvp,
    /// Reverse mode (outputs and Jᵀ·w) with a strategy.
    Vjp,
    /// One of the inverse products.
    Inverse(InverseMode),
}

/// The numbers of one benchmark row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BenchMeasurement {
    /// Wall time to build and JIT-compile the program, in milliseconds.
    pub compile_ms: f64,
    /// Time per call of the compiled program, in nanoseconds.
    pub ns_per_call: f64,
    /// Peak bytes of stored intermediates (tape, snapshots, workspace) during one call.
    pub peak_bytes: u64,
    /// Primal operations executed again because of checkpointing (0 for a tape).
    pub recomputed_ops: u64,
}

/// Assumed facade call: `adjit::bench(func, x, mode, strategy) -> Result<BenchMeasurement>`;
/// `strategy` matters for [`BenchMode::Vjp`] only.
pub fn bench(
    func: &Function,
    x: &[f64],
    mode: BenchMode,
    strategy: Strategy,
) -> Result<BenchMeasurement> {
    let _ = (func, x, mode, strategy);
    Err(Error::Unsupported("benchmarking (adjit::bench)".into()))
}

/// Which program [`compile_object`] compiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompileMode {
    Primal,
    Jvp,
    Vjp,
}

/// An object file and the C header declaring its entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectCode {
    pub object: Vec<u8>,
    pub header: String,
}

/// Assumed facade call: `adjit::compile_object(func, mode, target_triple) -> Result<ObjectCode>`;
/// `None` targets the host.
pub fn compile_object(
    func: &Function,
    mode: CompileMode,
    target_triple: Option<&str>,
) -> Result<ObjectCode> {
    let _ = (func, mode, target_triple);
    Err(Error::Unsupported(
        "object files (adjit::compile_object)".into(),
    ))
}
