//! The tool's errors. Each becomes the `"error"` text of a `"success": false` answer; none
//! ends the session.

/// Everything that can go wrong while answering one message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A line that is not a JSON object of a known message kind.
    #[error("line {line}: not a GradBench message: {message}")]
    Message { line: usize, message: String },
    /// `define` of an eval this tool does not implement.
    #[error("adjit does not implement the eval {module:?} (it implements: {implemented})")]
    UnknownModule { module: String, implemented: String },
    /// `evaluate` of a module that was not defined first.
    #[error("module {0:?} was not defined (send a define message first)")]
    Undefined(String),
    /// `evaluate` of a function the module does not have.
    #[error("module {module:?} has no function {function:?} (it has: {expected})")]
    UnknownFunction {
        module: String,
        function: String,
        expected: &'static str,
    },
    /// An `evaluate` input that does not have the eval's shape.
    #[error("input of {module}.{function}: {message}")]
    Input {
        module: &'static str,
        function: String,
        message: String,
    },
    /// Tracing, deriving, compiling or running failed in adjit.
    #[error("adjit: {0}")]
    Adjit(#[from] adjit::Error),
    /// A compiled kernel is not what the harness built it to be (a defect of this tool).
    #[error("internal: {0}")]
    Internal(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
