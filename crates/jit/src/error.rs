//! The error type of the backend: everything that can go wrong between a [`adjit_ir::Function`]
//! and a call into its machine code.

use adjit_ir::{RolledError, VerifyErrors};

/// Why a function could not be compiled or called.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JitError {
    /// The input function does not verify; nothing is lowered from an unverified function.
    #[error("cannot compile an unverified function: {0}")]
    NotVerified(#[from] VerifyErrors),
    /// The input rolled program does not verify ([`adjit_ir::Rolled::verify`]).
    #[error("cannot compile an unverified rolled program: {0}")]
    RolledNotVerified(#[from] RolledError),
    /// The input buffer of [`crate::CompiledFunction::call`] has the wrong length.
    #[error("expected {expected} inputs, got {got}")]
    InputLength { expected: usize, got: usize },
    /// The output buffer of [`crate::CompiledFunction::call`] has the wrong length.
    #[error("expected {expected} outputs, got {got}")]
    OutputLength { expected: usize, got: usize },
    /// Batch buffers that do not hold the same whole number of points.
    #[error(
        "batch buffers disagree: {inputs} inputs and {outputs} outputs are not the same number \
         of points of {n_inputs} inputs and {n_outputs} outputs"
    )]
    BatchLength {
        inputs: usize,
        outputs: usize,
        n_inputs: usize,
        n_outputs: usize,
    },
    /// A [`crate::PairBatch`] was run by a function other than the one that made it.
    #[error("this pair batch was made for another compiled function")]
    ForeignBatch,
    /// The target triple does not parse, or names an architecture the backend does not support.
    #[error("unsupported target triple `{triple}`: {reason}")]
    UnknownTriple { triple: String, reason: String },
    /// The host machine cannot run Cranelift code.
    #[error("host machine is not supported: {0}")]
    HostNotSupported(String),
    /// Cranelift rejected a setting, a declaration or a function.
    #[error("Cranelift failed while {stage}: {message}")]
    Cranelift { stage: String, message: String },
    /// An exported AOT symbol that would clash or not compile.
    #[error("cannot export the symbol `{symbol}`: {reason}; choose another name (adjit compile --symbol NAME)")]
    Symbol { symbol: String, reason: String },
    /// The program needs more memory offsets than the code generator can address.
    #[error("program too large: {0}")]
    TooLarge(String),
}

impl JitError {
    /// A Cranelift failure during `stage` (e.g. "compiling chunk 3 of @f").
    pub(crate) fn cranelift(stage: impl Into<String>, err: impl std::fmt::Display) -> JitError {
        JitError::Cranelift {
            stage: stage.into(),
            message: err.to_string(),
        }
    }
}
