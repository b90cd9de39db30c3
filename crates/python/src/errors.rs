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

/// The exception for a library error: parse, shape, derive or singular, by its variant.
pub fn from_adjit(e: adjit::Error) -> PyErr {
    use adjit::Error as E;
    let kind = match &e {
        E::Io { .. } | E::Parse(_) | E::Invalid(_) | E::Verify(_) => Kind::Parse,
        E::Length { .. } | E::Arity { .. } | E::Parts { .. } => Kind::Shape,
        E::NotBool { .. } => Kind::DType,
        E::Derive(_) | E::Diff(_) | E::Inverse(_) | E::BoolInput { .. } | E::UnknownName(_) => {
            Kind::Derive
        }
        E::Singular { .. } | E::NotFinite { .. } => Kind::Singular,
        E::Jit(adjit::jit::JitError::InputLength { .. })
        | E::Jit(adjit::jit::JitError::OutputLength { .. })
        | E::Jit(adjit::jit::JitError::BatchLength { .. }) => Kind::Shape,
        E::Driver { .. } => Kind::Shape,
        E::Memory { .. } => Kind::Memory,
        _ => Kind::Other,
    };
    error(kind, e.to_string())
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
