//! Rust errors as Python exceptions. The classes live in `adjit/_errors.py` (so they can
//! derive from both `adjit.Error` and a built-in such as `ValueError`); this module looks them
//! up once and raises them with the library's message.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// The exception classes of `adjit._errors`, by name.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// Parse and verifier errors of IR text (`FILE:LINE:COL: error: …`), unreadable files.
    Parse,
    /// A mistake while tracing (a comparison used as a Python `bool`, values of two traces).
    Trace,
    /// Wrong length, rank or shape of an argument.
    Shape,
    /// An argument that is not numeric (strings, objects, complex), or not float64 and
    /// C-contiguous with `strict=True`.
    DType,
    /// NaN or ±inf in an input under `nonfinite="raise"`.
    NonFinite,
    /// The transform cannot be derived or compiled (two outputs for a gradient, …).
    Derive,
    /// A numerically singular Jacobian in an inverse mode.
    Singular,
    /// An array sized from the arguments that this machine cannot hold (refused before it is
    /// allocated).
    Memory,
    /// An option whose value adjit does not accept (an unknown mode, strategy, stage or
    /// `nonfinite` spelling, a count out of range, a byte budget too small).
    Option,
    /// Anything else the library reports.
    Other,
}

impl Kind {
    fn class_name(self) -> &'static str {
        match self {
            Kind::Parse => "ParseError",
            Kind::Trace => "TraceError",
            Kind::Shape => "ShapeError",
            Kind::DType => "DTypeError",
            Kind::NonFinite => "NonFiniteError",
            Kind::Derive => "DeriveError",
            Kind::Singular => "SingularError",
            Kind::Memory => "MemoryError",
            Kind::Option => "OptionError",
            Kind::Other => "Error",
        }
    }
}

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// A Python exception of class `kind` with `message`.
pub fn error(kind: Kind, message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| {
        let class = ERRORS
            .get_or_try_init(py, || {
                PyModule::import(py, "adjit._errors").map(Bound::unbind)
            })
            .and_then(|m| m.bind(py).getattr(kind.class_name()))
            .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
        match class {
            Ok(class) => PyErr::from_type(class, message),
            // Only when the Python half of the package is missing (a broken install).
            Err(e) => PyRuntimeError::new_err(format!("{message} (and adjit._errors: {e})")),
        }
    })
}

/// The class of a library error. Every variant is named (no catch-all arm), so a new variant
/// does not compile until someone decides which exception a Python user gets for it.
pub fn kind_of(e: &adjit::Error) -> Kind {
    use adjit::jit::JitError as J;
    use adjit::Error as E;
    match e {
        E::Io { .. } | E::Parse(_) | E::Invalid(_) | E::Verify(_) => Kind::Parse,
        E::Length { .. } | E::Arity { .. } | E::Parts { .. } | E::ArgumentLength { .. } => {
            Kind::Shape
        }
        E::NotBool { .. } => Kind::DType,
        E::Derive(_)
        | E::Diff(_)
        | E::Inverse(_)
        | E::BoolInput { .. }
        | E::Signature { .. }
        | E::Limit { .. } => Kind::Derive,
        E::UnknownName(_) | E::TooFew { .. } | E::Checkpoint(_) => Kind::Option,
        E::Singular { .. } | E::NotFinite { .. } => Kind::Singular,
        E::Memory { .. } => Kind::Memory,
        E::Jit(jit) => match jit {
            J::InputLength { .. } | J::OutputLength { .. } | J::BatchLength { .. } => Kind::Shape,
            J::UnknownTriple { .. } | J::Symbol { .. } => Kind::Option,
            J::NotVerified(_) | J::RolledNotVerified(_) => Kind::Parse,
            J::HostNotSupported(_) | J::Cranelift { .. } | J::TooLarge(_) | J::ForeignBatch => {
                Kind::Other
            }
        },
        E::Interp(_) | E::Internal { .. } => Kind::Other,
    }
}

/// The exception for a library error, of the class [`kind_of`] decides.
pub fn from_adjit(e: adjit::Error) -> PyErr {
    error(kind_of(&e), e.to_string())
}

/// `Result<T, adjit::Error>` → `PyResult<T>`.
pub trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, adjit::Error> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(from_adjit)
    }
}
