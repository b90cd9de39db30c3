//! NumPy arguments in, NumPy results out.
//!
//! A C-contiguous `float64` array is read in place (no copy). Anything else numeric (lists,
//! Python floats, `float32`, integer or strided arrays) is converted once with
//! `numpy.ascontiguousarray(…, dtype=float64)`, unless the caller asked for `strict=True`,
//! which refuses it. Strings, objects and complex numbers are refused with `adjit.DTypeError`
//! naming the argument.

use numpy::{PyArray1, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyString};

use crate::errors::{error, Kind};

/// What to do with NaN and ±inf among the inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NonFinite {
    /// Raise `adjit.NonFiniteError` naming the argument and the first such entry (default).
    Raise,
    /// Pass them to the compiled code, which propagates them by IEEE rules.
    Propagate,
}

impl NonFinite {
    pub fn parse(s: &str) -> PyResult<NonFinite> {
        match s {
            "raise" => Ok(NonFinite::Raise),
            "propagate" => Ok(NonFinite::Propagate),
            other => Err(error(
                Kind::Other,
                format!("nonfinite must be \"raise\" or \"propagate\", not {other:?}"),
            )),
        }
    }
}

/// How arguments are read: conversions allowed or not, and the non-finite policy.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    pub strict: bool,
    pub nonfinite: NonFinite,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            strict: false,
            nonfinite: NonFinite::Raise,
        }
    }
}

static NUMPY: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn numpy(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(NUMPY
        .get_or_try_init(py, || PyModule::import(py, "numpy").map(Bound::unbind))?
        .bind(py))
}

/// An argument read as a C-contiguous `float64` array (borrowed while it lives).
pub struct Arg<'py> {
    array: PyReadonlyArrayDyn<'py, f64>,
}

impl<'py> Arg<'py> {
    /// Read `obj`, the argument called `name` in messages.
    pub fn read(obj: &Bound<'py, PyAny>, name: &str, policy: Policy) -> PyResult<Arg<'py>> {
        let py = obj.py();
        if let Ok(a) = obj.cast::<PyArrayDyn<f64>>() {
            if a.is_c_contiguous() {
                return Ok(Arg {
                    array: a.try_readonly().map_err(|e| {
                        error(Kind::DType, format!("{name}: cannot read the array: {e}"))
                    })?,
                });
            }
        }
        if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
            return Err(error(
                Kind::DType,
                format!("{name} must be numbers (a NumPy array, a list or a float), not a string"),
            ));
        }
        let np = numpy(py)?;
        let array = np.call_method1("asarray", (obj,)).map_err(|e| {
            error(
                Kind::DType,
                format!("{name} must be numbers (a NumPy array, a list or a float): {e}"),
            )
        })?;
        let kind: String = array.getattr("dtype")?.getattr("kind")?.extract()?;
        if !matches!(kind.as_str(), "b" | "i" | "u" | "f") {
            let dtype = array.getattr("dtype")?.str()?.to_string();
            return Err(error(
                Kind::DType,
                format!("{name} must be real numbers; got an array of dtype {dtype}"),
            ));
        }
        if policy.strict && obj.cast::<numpy::PyUntypedArray>().is_ok() {
            let dtype = array.getattr("dtype")?.str()?.to_string();
            return Err(error(
                Kind::DType,
                format!(
                    "{name}: strict=True takes C-contiguous float64 arrays only; got dtype \
                     {dtype}{} (use numpy.ascontiguousarray(a, dtype=numpy.float64))",
                    if kind == "f" && dtype == "float64" {
                        ", not C-contiguous"
                    } else {
                        ""
                    }
                ),
            ));
        }
        let converted = np.call_method1("ascontiguousarray", (array, "float64"))?;
        let a = converted.cast_into::<PyArrayDyn<f64>>().map_err(|e| {
            error(
                Kind::DType,
                format!("{name}: conversion to float64 failed: {e}"),
            )
        })?;
        Ok(Arg {
            array: a
                .try_readonly()
                .map_err(|e| error(Kind::DType, format!("{name}: cannot read the array: {e}")))?,
        })
    }

    pub fn ndim(&self) -> usize {
        self.array.ndim()
    }

    pub fn shape(&self) -> &[usize] {
        self.array.shape()
    }

    /// Every entry, row-major.
    pub fn slice(&self) -> &[f64] {
        // A C-contiguous array (checked or made so in `read`) is always a slice.
        self.array.as_slice().unwrap_or(&[])
    }

    /// The entries as one vector of `len` numbers (a 0-d array is a vector of one).
    pub fn vector(&self, name: &str, len: usize, policy: Policy) -> PyResult<&[f64]> {
        if self.ndim() > 1 {
            return Err(shape_error(name, &format!("({len},)"), self.shape()));
        }
        let s = self.slice();
        if s.len() != len {
            return Err(shape_error(name, &format!("({len},)"), self.shape()));
        }
        check_finite(name, s, policy)?;
        Ok(s)
    }

    /// The entries as `B` rows of `len` numbers; a vector counts as one row only when
    /// `allow_vector`.
    pub fn rows(&self, name: &str, len: usize, policy: Policy) -> PyResult<(usize, &[f64])> {
        let shape = self.shape();
        let ok = match shape {
            [b, n] => *n == len || (*b == 0 && len == 0),
            _ => false,
        };
        if !ok {
            return Err(shape_error(name, &format!("(B, {len})"), shape));
        }
        let s = self.slice();
        check_finite(name, s, policy)?;
        Ok((shape[0], s))
    }
}

fn shape_text(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

pub fn shape_error(name: &str, expected: &str, got: &[usize]) -> PyErr {
    error(
        Kind::Shape,
        format!("{name} has shape {}, expected {expected}", shape_text(got)),
    )
}

fn check_finite(name: &str, s: &[f64], policy: Policy) -> PyResult<()> {
    if policy.nonfinite == NonFinite::Propagate {
        return Ok(());
    }
    if all_finite(s) {
        return Ok(());
    }
    match s.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(error(
            Kind::NonFinite,
            format!(
                "{name}[{i}] is {} (pass nonfinite=\"propagate\" to compute with it anyway)",
                s[i]
            ),
        )),
    }
}

/// Whether every entry is finite, in one vectorisable pass: `v · 0` is 0 for a finite `v`
/// and NaN for ±inf and NaN, and eight independent sums keep the lanes apart (a single
/// running sum would be one serial chain).
fn all_finite(s: &[f64]) -> bool {
    let mut acc = [0.0f64; 8];
    let mut chunks = s.chunks_exact(8);
    for c in &mut chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += v * 0.0;
        }
    }
    let tail = chunks.remainder().iter().fold(0.0, |a, v| a + v * 0.0);
    acc.iter().sum::<f64>() + tail == 0.0
}

/// A new 1-D array that takes over `v` (no copy).
pub fn vector<'py>(py: Python<'py>, v: Vec<f64>) -> Bound<'py, PyArray1<f64>> {
    PyArray1::from_vec(py, v)
}

/// A new array of `shape` taking over `v` (row-major, `v.len()` = the product of `shape`).
pub fn array<'py>(py: Python<'py>, v: Vec<f64>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let flat = PyArray1::from_vec(py, v);
    Ok(flat.reshape(shape.to_vec())?.into_any())
}
