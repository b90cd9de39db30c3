//! The extension module `adjit._adjit`: the Python package's native half. `adjit/__init__.py`
//! re-exports it with docstrings and type stubs; this crate holds no logic of its own beyond
//! argument conversion — every transform is the Rust library's.
//!
//! - `trace.rs`: `adjit.trace` and the traced values' operators;
//! - `function.rs`: `adjit.Function`, `parse`, `load`;
//! - `transforms.rs`: the compiled callables (`value_and_grad`, `jvp`, …);
//! - `drivers.rs`: `adjit.map` and `adjit.steps`;
//! - `arrays.rs`, `errors.rs`: NumPy arguments and the exception classes.

mod arrays;
mod derived;
mod drivers;
mod errors;
mod function;
mod trace;
mod transforms;

use adjit::ir::{BinaryOp, UnaryOp};
use pyo3::prelude::*;

use function::Function;
use transforms::{Settings, Transform, What};

/// `adjit.trace(fn, n, data=0, name="traced")`: call `fn(x)` (or `fn(x, d)` with data inputs)
/// once on traced values and return the recorded `Function`.
#[pyfunction]
#[pyo3(name = "trace", signature = (f, n, data=0, name="traced"))]
fn trace_function(
    py: Python<'_>,
    f: &Bound<'_, PyAny>,
    n: i64,
    data: i64,
    name: &str,
) -> PyResult<Function> {
    check_name(name)?;
    let f = trace::trace(py, f, count("n", n)?, count("data", data)?, name)?;
    function::warn_if_large(py, &f, "adjit.trace")?;
    Ok(f)
}

/// A function name must be one the IR text can spell (`@name`: letters, digits, `_`, `.`),
/// or the Function would not parse back from its text when pickled (Dask workers).
fn check_name(name: &str) -> PyResult<()> {
    let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    if !name.is_empty() && name.chars().all(ok) {
        return Ok(());
    }
    Err(errors::error(
        errors::Kind::Trace,
        format!(
            "name={name:?}: a function name is letters, digits, '_' and '.' (ASCII, at least \
             one), as the IR writes @name; e.g. name={:?}",
            {
                let fixed: String = name.chars().map(|c| if ok(c) { c } else { '_' }).collect();
                if fixed.is_empty() {
                    "traced".to_string()
                } else {
                    fixed
                }
            }
        ),
    ))
}

/// `adjit.parse(text, name=None, file="<string>")`.
#[pyfunction]
#[pyo3(signature = (text, name=None, file="<string>"))]
fn parse(py: Python<'_>, text: &str, name: Option<&str>, file: &str) -> PyResult<Function> {
    let f = function::parse(text, name, file)?;
    function::warn_if_large(py, &f, "adjit.parse")?;
    Ok(f)
}

/// `adjit.load(path, name=None)`.
#[pyfunction]
#[pyo3(signature = (path, name=None))]
fn load(py: Python<'_>, path: std::path::PathBuf, name: Option<&str>) -> PyResult<Function> {
    let f = function::load(py, &path, name)?;
    function::warn_if_large(py, &f, "adjit.load")?;
    Ok(f)
}

/// One compiled transform (the public functions of `adjit/__init__.py` call this).
#[pyfunction]
#[pyo3(signature = (f, what, strategy="tape", engine="jit", sparse=false, mode="reverse", strict=false, nonfinite="raise", threads=0, lanes=1, math="auto", rolled=None))]
#[allow(clippy::too_many_arguments)]
fn transform(
    f: &Function,
    what: &str,
    strategy: &str,
    engine: &str,
    sparse: bool,
    mode: &str,
    strict: bool,
    nonfinite: &str,
    threads: i64,
    lanes: i64,
    math: &str,
    rolled: Option<bool>,
) -> PyResult<Transform> {
    let (threads, lanes) = (count("threads", threads)?, count("lanes", lanes)?);
    let what = match what {
        "jit" => What::Eval,
        "value_and_grad" => What::ValueAndGrad,
        "grad" => What::Grad,
        "jvp" => What::Jvp,
        "vjp" => What::Vjp,
        "hvp" => What::Hvp,
        "jacobian" => What::Jacobian,
        "hessian" => What::Hessian,
        "inverse" => What::Inverse,
        other => {
            return Err(errors::error(
                errors::Kind::Option,
                format!("no transform {other:?}"),
            ))
        }
    };
    let settings = Settings {
        strategy,
        engine,
        sparse,
        mode,
        strict,
        nonfinite,
        threads,
        lanes,
        math,
        rolled,
    };
    Transform::new(f, what, &settings)
}

/// `adjit.map(kernel, threads=0, block_rows=1024, lanes=1)`.
#[pyfunction]
#[pyo3(name = "map", signature = (kernel, threads=0, block_rows=1024, lanes=1))]
fn map_kernel(
    kernel: &Function,
    threads: i64,
    block_rows: i64,
    lanes: i64,
) -> PyResult<drivers::Map> {
    let threads = count("threads", threads)?;
    let block_rows = count("block_rows", block_rows)?;
    drivers::Map::new(kernel, threads, block_rows, count("lanes", lanes)?)
}

/// A count from Python (`threads`, `lanes`, `block_rows`): an `adjit.Error` naming it when
/// negative, rather than Python's bare `OverflowError` from the conversion.
fn count(name: &str, v: i64) -> PyResult<usize> {
    usize::try_from(v).map_err(|_| {
        errors::error(
            errors::Kind::Option,
            format!("{name} must be 0 or more, not {v}"),
        )
    })
}

/// `adjit.steps(step, n, strategy="tape")`.
#[pyfunction]
#[pyo3(signature = (step, n, strategy="tape"))]
fn steps(step: &Function, n: i64, strategy: &str) -> PyResult<drivers::Steps> {
    drivers::Steps::new(step, count("n", n)?, strategy)
}

/// `adjit.where(c, a, b)`.
#[pyfunction]
#[pyo3(name = "where")]
fn where_(
    py: Python<'_>,
    c: &Bound<'_, PyAny>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    trace::select(py, c, a, b)
}

macro_rules! unary_functions {
    ($($name:ident => $op:ident),* $(,)?) => {
        $(
            #[doc = concat!("`adjit.", stringify!($name), "(x)` of a traced value or a number.")]
            #[pyfunction]
            fn $name(py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                trace::unary(py, UnaryOp::$op, x)
            }
        )*
        fn add_unary(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $( m.add_function(wrap_pyfunction!($name, m)?)?; )*
            Ok(())
        }
    };
}

unary_functions! {
    sin => Sin, cos => Cos, tan => Tan, exp => Exp, log => Log, sqrt => Sqrt, tanh => Tanh,
    sinh => Sinh, cosh => Cosh, asin => Asin, acos => Acos, atan => Atan, log1p => Log1p,
    expm1 => Expm1, erf => Erf, abs => Abs, floor => Floor, ceil => Ceil,
}

/// `adjit.pow(a, b)`: `a ** b` by `pow` (for `powi`, use `x ** k` with an integer `k`).
#[pyfunction]
fn pow(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    trace::binary(py, BinaryOp::Pow, a, b)
}

/// `adjit.atan2(y, x)`.
#[pyfunction]
fn atan2(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    trace::binary(py, BinaryOp::Atan2, a, b)
}

/// `adjit.minimum(a, b)` (the other operand when one is NaN; the first on a tie).
#[pyfunction]
fn minimum(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    trace::binary(py, BinaryOp::Min, a, b)
}

/// `adjit.maximum(a, b)`.
#[pyfunction]
fn maximum(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    trace::binary(py, BinaryOp::Max, a, b)
}

#[pymodule]
fn _adjit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Function>()?;
    m.add_class::<Transform>()?;
    m.add_class::<drivers::Map>()?;
    m.add_class::<drivers::Steps>()?;
    m.add_class::<trace::Var>()?;
    m.add_class::<trace::BoolVar>()?;
    m.add_function(wrap_pyfunction!(trace_function, m)?)?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    m.add_function(wrap_pyfunction!(function::restore, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(transform, m)?)?;
    m.add_function(wrap_pyfunction!(map_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(steps, m)?)?;
    m.add_function(wrap_pyfunction!(where_, m)?)?;
    m.add_function(wrap_pyfunction!(trace::elementwise, m)?)?;
    m.add_function(wrap_pyfunction!(trace::reduce_1d, m)?)?;
    m.add_function(wrap_pyfunction!(pow, m)?)?;
    m.add_function(wrap_pyfunction!(atan2, m)?)?;
    m.add_function(wrap_pyfunction!(minimum, m)?)?;
    m.add_function(wrap_pyfunction!(maximum, m)?)?;
    add_unary(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
