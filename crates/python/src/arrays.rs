//! NumPy arguments in, NumPy results out: the one reader of every input, and the one check of
//! every `out=`.
//!
//! An input is read in place when it is a native-byte-order `float64` array that is aligned
//! and C-contiguous. Anything else numeric (lists, Python floats, `float32`, integers,
//! booleans, big-endian `>f8`, Fortran order, strided or negative-stride views, unaligned
//! buffers such as arrays unpickled from a byte stream) is copied once, by NumPy, into a new
//! aligned C-contiguous `float64` array, unless the caller asked for `strict=True`, which
//! refuses it and names what is wrong. A copy is checked against the available memory first.
//! Strings, objects and complex numbers are refused with `adjit.DTypeError` naming the argument.
//! No layout is ever read as empty or in the wrong order.
//!
//! `out=` is never converted (a copy would not be the caller's array): it must be a
//! writeable, aligned, C-contiguous native `float64` array of exactly the result's shape, or it
//! is refused with `adjit.DTypeError` / `adjit.ShapeError` saying what to pass instead.

use numpy::{
    PyArray1, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyReadwriteArrayDyn,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::errors::{error, from_adjit, Kind};

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
                Kind::Option,
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

/// What keeps a `float64` array from being read in place: `None` when it is aligned and
/// C-contiguous (native byte order is the caller's cast to `PyArrayDyn<f64>`).
fn layout_problem(a: &Bound<'_, PyArrayDyn<f64>>) -> Option<&'static str> {
    if !a.is_c_contiguous() {
        Some("not C-contiguous (Fortran order, a strided or a negative-stride view)")
    } else if !a.is_aligned() {
        Some("not aligned to 8 bytes (e.g. a view into a byte buffer)")
    } else {
        None
    }
}

/// An argument read as an aligned C-contiguous `float64` array (borrowed while it lives).
pub struct Arg<'py> {
    array: PyReadonlyArrayDyn<'py, f64>,
}

impl<'py> Arg<'py> {
    /// Read `obj`, the argument called `name` in messages: in place when it is an aligned
    /// C-contiguous native `float64` array, else one copy made by NumPy (refused under
    /// `strict`).
    pub fn read(obj: &Bound<'py, PyAny>, name: &str, policy: Policy) -> PyResult<Arg<'py>> {
        let py = obj.py();
        let borrow = |a: &Bound<'py, PyArrayDyn<f64>>| {
            a.try_readonly()
                .map_err(|e| error(Kind::DType, format!("{name}: cannot read the array: {e}")))
        };
        if let Ok(a) = obj.cast::<PyArrayDyn<f64>>() {
            if layout_problem(a).is_none() {
                return Ok(Arg { array: borrow(a)? });
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
        let dtype = array.getattr("dtype")?;
        let kind: String = dtype.getattr("kind")?.extract()?;
        if !matches!(kind.as_str(), "b" | "i" | "u" | "f") {
            let dtype = dtype.str()?.to_string();
            return Err(error(
                Kind::DType,
                format!("{name} must be real numbers; got an array of dtype {dtype}"),
            ));
        }
        if let Ok(a) = array.cast::<PyArrayDyn<f64>>() {
            match layout_problem(a) {
                // A list or scalar NumPy made into a fresh float64 array.
                None => return Ok(Arg { array: borrow(a)? }),
                Some(problem) if policy.strict => {
                    return Err(strict_error(name, &format!("a float64 array {problem}")))
                }
                Some(_) => {}
            }
        } else if policy.strict && obj.cast::<numpy::PyUntypedArray>().is_ok() {
            // `float32`, `int64`; a byte-swapped one prints as `>f8`.
            let dtype = dtype.str()?.to_string();
            return Err(strict_error(name, &format!("dtype {dtype}")));
        }
        let size: usize = array.getattr("size")?.extract()?;
        adjit::memory::check_f64s(
            "python",
            "copy",
            size as u128,
            "pass an aligned C-contiguous float64 array (read in place) or a smaller one",
        )
        .map_err(|e| match e {
            adjit::Error::Memory {
                bytes, available, ..
            } => error(
                Kind::Memory,
                format!(
                    "{name}: its float64 copy needs {}, more than this machine can hold ({} \
                     available); pass an aligned C-contiguous float64 array (read in place, no \
                     copy) or fewer numbers",
                    adjit::memory::human_bytes(bytes),
                    adjit::memory::human_bytes(available)
                ),
            ),
            other => from_adjit(other),
        })?;
        // `numpy.array(…, order="C")` always makes a new array: aligned, C-contiguous, native.
        let kwargs = PyDict::new(py);
        kwargs.set_item("dtype", "float64")?;
        kwargs.set_item("order", "C")?;
        let converted = np
            .call_method("array", (array,), Some(&kwargs))
            .map_err(|e| {
                error(
                    Kind::DType,
                    format!("{name}: conversion to float64 failed: {e}"),
                )
            })?;
        let a = converted.cast_into::<PyArrayDyn<f64>>().map_err(|e| {
            error(
                Kind::DType,
                format!("{name}: conversion to float64 failed: {e}"),
            )
        })?;
        if let Some(problem) = layout_problem(&a) {
            return Err(error(
                Kind::Other,
                format!("{name}: NumPy's float64 copy is {problem}; please report this"),
            ));
        }
        Ok(Arg { array: borrow(&a)? })
    }

    pub fn ndim(&self) -> usize {
        self.array.ndim()
    }

    pub fn shape(&self) -> &[usize] {
        self.array.shape()
    }

    /// Every entry, row-major. `read` made the array aligned and C-contiguous, so this is a
    /// slice; the error is for an array changed behind the borrow, never an empty read.
    pub fn slice(&self, name: &str) -> PyResult<&[f64]> {
        self.array.as_slice().map_err(|_| {
            error(
                Kind::DType,
                format!("{name}: the array is no longer aligned and C-contiguous"),
            )
        })
    }

    /// The entries as one vector of `len` numbers (a 0-d array is a vector of one).
    pub fn vector(&self, name: &str, len: usize, policy: Policy) -> PyResult<&[f64]> {
        let shape = self.shape();
        let fits = match shape {
            [] => len == 1,
            [n] => *n == len,
            _ => false,
        };
        if !fits {
            return Err(shape_error(name, &format!("({len},)"), shape));
        }
        let s = self.slice(name)?;
        check_finite(name, s, 0, 0, policy)?;
        Ok(s)
    }

    /// The entries as `B` rows of `len` numbers. `first_row` is the index of the first row in
    /// the caller's whole array (a Dask block's offset), for messages.
    pub fn rows(
        &self,
        name: &str,
        len: usize,
        first_row: usize,
        policy: Policy,
    ) -> PyResult<(usize, &[f64])> {
        let shape = self.shape();
        let ok = match shape {
            [b, n] => *n == len || (*b == 0 && len == 0),
            _ => false,
        };
        if !ok {
            return Err(shape_error(name, &format!("(B, {len})"), shape));
        }
        let s = self.slice(name)?;
        check_finite(name, s, len, first_row, policy)?;
        Ok((shape[0], s))
    }
}

/// `strict=True` met an argument that would need a copy.
fn strict_error(name: &str, what: &str) -> PyErr {
    error(
        Kind::DType,
        format!(
            "{name}: strict=True reads aligned C-contiguous float64 arrays in place only; got \
             {what} (pass numpy.array({name}, dtype=numpy.float64, order=\"C\"), or drop \
             strict=True to have it copied once)"
        ),
    )
}

/// The caller's `out=` array, checked: a writeable, aligned, C-contiguous native `float64`
/// NumPy array of exactly `shape`. Nothing is converted: a copy would not be the caller's.
pub fn out_array<'py>(
    out: &Bound<'py, PyAny>,
    shape: &[usize],
) -> PyResult<PyReadwriteArrayDyn<'py, f64>> {
    let want = format!("pass numpy.empty({}) (float64, C order)", shape_text(shape));
    let Ok(untyped) = out.cast::<numpy::PyUntypedArray>() else {
        return Err(error(
            Kind::DType,
            format!(
                "out= must be a NumPy array, not {}; {want}",
                out.get_type().name()?
            ),
        ));
    };
    let Ok(arr) = out.cast::<PyArrayDyn<f64>>() else {
        let dtype = untyped.getattr("dtype")?.getattr("str")?.to_string();
        return Err(error(
            Kind::DType,
            format!("out= must have dtype float64 in native byte order, not {dtype}; {want}"),
        ));
    };
    if arr.shape() != shape {
        return Err(shape_error("out", &shape_text(shape), arr.shape()));
    }
    let writeable: bool = arr.getattr("flags")?.getattr("writeable")?.extract()?;
    if !writeable {
        return Err(error(Kind::DType, format!("out= is read-only; {want}")));
    }
    if let Some(problem) = layout_problem(arr) {
        return Err(error(Kind::DType, format!("out= is {problem}; {want}")));
    }
    arr.try_readwrite().map_err(|e| {
        error(
            Kind::DType,
            format!("out= cannot be written (does it share memory with an input?): {e}"),
        )
    })
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

/// The first non-finite entry of `s` is an error under `NonFinite::Raise`, named `name[i]`
/// for a vector (`row_len` 0) or `name[r, c]` for rows of `row_len` (`r` counted from
/// `first_row`).
fn check_finite(
    name: &str,
    s: &[f64],
    row_len: usize,
    first_row: usize,
    policy: Policy,
) -> PyResult<()> {
    if policy.nonfinite == NonFinite::Propagate {
        return Ok(());
    }
    if all_finite(s) {
        return Ok(());
    }
    match s.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => {
            let at = match i.checked_div(row_len) {
                None => format!("{i}"),
                Some(r) => format!("{}, {}", first_row.saturating_add(r), i % row_len),
            };
            Err(error(
                Kind::NonFinite,
                format!(
                    "{name}[{at}] is {} (pass nonfinite=\"propagate\" to compute with it anyway)",
                    s[i]
                ),
            ))
        }
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
