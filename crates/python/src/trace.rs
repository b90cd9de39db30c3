//! Tracing Python functions: `adjit.trace(fn, n, data=0)` calls `fn` once with traced values
//! whose operators append instructions to a function under construction.
//!
//! A [`Var`] is a float value of one trace, a [`BoolVar`] a comparison's result (combined by
//! `&`, `|`, `^`, `~`). Python numbers mixed in stay literal operands (`x * 2.0` records
//! `mul %x0, 2.0`). Control flow is not recorded: a comparison has no truth value (asking for
//! one raises `adjit.TraceError` pointing to `adjit.where`). The inputs reach `fn` as an
//! `adjit.TracedArray` (a NumPy object array, `adjit/_numpy.py`), so NumPy code traces:
//! ufuncs on one traced value reach [`Var::__array_ufunc__`], which records IR opcodes or the
//! definitions of [`crate::derived`]; anything involving arrays goes to the Python helper,
//! which applies the scalar operation one element at a time under NumPy broadcasting.

use std::sync::{Arc, Mutex, MutexGuard};

use adjit::ir::{math, BinaryOp, Builder, CmpPred, Operand, Type, UnaryOp, Value};
use numpy::PyUntypedArrayMethods;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyTuple};

use crate::derived::{self, Logic};
use crate::errors::{error, Kind};
use crate::function::Function;

/// The function under construction, shared by every value of one trace.
pub struct Session {
    builder: Mutex<Builder>,
}

impl Session {
    fn builder(&self) -> MutexGuard<'_, Builder> {
        // A poisoned lock means a panic while recording, which cannot leave the builder
        // half-updated (each append is one push); keep using it.
        self.builder
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A traced float value.
#[pyclass(frozen, module = "adjit")]
pub struct Var {
    session: Arc<Session>,
    value: Value,
}

/// A traced comparison result: use it in `adjit.where(c, a, b)`.
#[pyclass(frozen, module = "adjit", name = "Bool")]
pub struct BoolVar {
    session: Arc<Session>,
    value: Value,
}

/// An operand read from Python: a traced value or a number.
#[derive(Clone, Copy)]
enum Arg {
    Var(Value),
    Num(f64),
}

impl Var {
    fn new(session: &Arc<Session>, value: Value) -> Var {
        Var {
            session: session.clone(),
            value,
        }
    }

    /// Read `other` as an operand of this trace; `None` when it is not a number or a value
    /// (the operator then returns `NotImplemented`).
    fn arg(&self, other: &Bound<'_, PyAny>) -> PyResult<Option<Arg>> {
        if let Ok(v) = other.cast::<Var>() {
            let v = v.get();
            same_session(&self.session, &v.session)?;
            return Ok(Some(Arg::Var(v.value)));
        }
        if other.cast::<BoolVar>().is_ok() {
            return Err(error(
                Kind::Trace,
                "a traced comparison is not a number: use adjit.where(c, a, b) to choose \
                 between values",
            ));
        }
        Ok(number(other).map(Arg::Num))
    }

    fn binary(&self, op: BinaryOp, a: Arg, b: Arg) -> Var {
        let v = self.session.builder().binary(op, operand(a), operand(b));
        Var::new(&self.session, v)
    }

    fn unary_op(&self, op: UnaryOp) -> Var {
        let v = self.session.builder().unary(op, self.value);
        Var::new(&self.session, v)
    }

    fn bin_with(
        &self,
        py: Python<'_>,
        op: BinaryOp,
        other: &Bound<'_, PyAny>,
        reflected: bool,
    ) -> PyResult<Py<PyAny>> {
        let Some(o) = self.arg(other)? else {
            return Ok(py.NotImplemented());
        };
        let me = Arg::Var(self.value);
        let (a, b) = if reflected { (o, me) } else { (me, o) };
        Ok(Py::new(py, self.binary(op, a, b))?.into_any())
    }

    fn boolean(&self, py: Python<'_>, v: Value) -> PyResult<Py<PyAny>> {
        Ok(Py::new(
            py,
            BoolVar {
                session: self.session.clone(),
                value: v,
            },
        )?
        .into_any())
    }

    fn rounded(&self, decimals: i32) -> Var {
        let mut b = self.session.builder();
        let v = if decimals == 0 {
            derived::rint(&mut b, Operand::Value(self.value))
        } else {
            let scale = 10f64.powi(decimals);
            let scaled = b.mul(self.value, scale);
            let r = derived::rint(&mut b, Operand::Value(scaled));
            b.div(r, scale)
        };
        Var::new(&self.session, v)
    }

    /// A derived operation (see [`derived::float_op`]) with a Python operand.
    fn derived_with(
        &self,
        py: Python<'_>,
        name: &str,
        other: &Bound<'_, PyAny>,
        reflected: bool,
    ) -> PyResult<Py<PyAny>> {
        let Some(o) = self.arg(other)? else {
            return Ok(py.NotImplemented());
        };
        let me = Arg::Var(self.value);
        let (a, b) = if reflected { (o, me) } else { (me, o) };
        let v = derived::float_op(&mut self.session.builder(), name, &[operand(a), operand(b)]);
        match v {
            Some(v) => Ok(Py::new(py, Var::new(&self.session, v))?.into_any()),
            None => Err(unsupported_ufunc(name)),
        }
    }

    fn compare(
        &self,
        py: Python<'_>,
        pred: CmpPred,
        other: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let Some(o) = self.arg(other)? else {
            return Ok(py.NotImplemented());
        };
        let v = self
            .session
            .builder()
            .fcmp(pred, Operand::Value(self.value), operand(o));
        Ok(Py::new(
            py,
            BoolVar {
                session: self.session.clone(),
                value: v,
            },
        )?
        .into_any())
    }
}

fn operand(a: Arg) -> Operand {
    match a {
        Arg::Var(v) => Operand::Value(v),
        Arg::Num(c) => Operand::Const(c),
    }
}

/// A Python or NumPy real number (bools count as 0 and 1), or `None`.
fn number(obj: &Bound<'_, PyAny>) -> Option<f64> {
    if obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyInt>() {
        return obj.extract::<f64>().ok();
    }
    // NumPy scalars (np.float64, np.int32, 0-d arrays) convert with `float()`.
    let is_numpy_scalar = obj
        .get_type()
        .module()
        .is_ok_and(|m| m.to_cow().is_ok_and(|m| m == "numpy"));
    if is_numpy_scalar {
        return obj.extract::<f64>().ok();
    }
    None
}

fn same_session(a: &Arc<Session>, b: &Arc<Session>) -> PyResult<()> {
    if Arc::ptr_eq(a, b) {
        Ok(())
    } else {
        Err(error(
            Kind::Trace,
            "a value of another trace was used here; every traced value in one function must \
             come from its own adjit.trace call",
        ))
    }
}

const UNARY: &[(&str, UnaryOp)] = &[
    ("sin", UnaryOp::Sin),
    ("cos", UnaryOp::Cos),
    ("tan", UnaryOp::Tan),
    ("exp", UnaryOp::Exp),
    ("log", UnaryOp::Log),
    ("sqrt", UnaryOp::Sqrt),
    ("tanh", UnaryOp::Tanh),
    ("sinh", UnaryOp::Sinh),
    ("cosh", UnaryOp::Cosh),
    ("arcsin", UnaryOp::Asin),
    ("arccos", UnaryOp::Acos),
    ("arctan", UnaryOp::Atan),
    ("log1p", UnaryOp::Log1p),
    ("expm1", UnaryOp::Expm1),
    ("erf", UnaryOp::Erf),
    ("floor", UnaryOp::Floor),
    ("ceil", UnaryOp::Ceil),
    ("absolute", UnaryOp::Abs),
    ("fabs", UnaryOp::Abs),
    ("negative", UnaryOp::Neg),
];

const BINARY: &[(&str, BinaryOp)] = &[
    ("add", BinaryOp::Add),
    ("subtract", BinaryOp::Sub),
    ("multiply", BinaryOp::Mul),
    ("true_divide", BinaryOp::Div),
    ("divide", BinaryOp::Div),
    ("power", BinaryOp::Pow),
    ("float_power", BinaryOp::Pow),
    ("arctan2", BinaryOp::Atan2),
    ("minimum", BinaryOp::Min),
    ("maximum", BinaryOp::Max),
    ("fmin", BinaryOp::Min),
    ("fmax", BinaryOp::Max),
];

const COMPARE: &[(&str, CmpPred)] = &[
    ("less", CmpPred::Lt),
    ("less_equal", CmpPred::Le),
    ("greater", CmpPred::Gt),
    ("greater_equal", CmpPred::Ge),
    ("equal", CmpPred::Eq),
    ("not_equal", CmpPred::Ne),
];

#[pymethods]
impl Var {
    fn __add__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.bin_with(py, BinaryOp::Add, o, false)
    }
    fn __radd__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.bin_with(py, BinaryOp::Add, o, true)
    }
    fn __sub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.bin_with(py, BinaryOp::Sub, o, false)
    }
    fn __rsub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.bin_with(py, BinaryOp::Sub, o, true)
    }
    fn __mul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.bin_with(py, BinaryOp::Mul, o, false)
    }
    fn __rmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.bin_with(py, BinaryOp::Mul, o, true)
    }
    fn __truediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.bin_with(py, BinaryOp::Div, o, false)
    }
    fn __rtruediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.bin_with(py, BinaryOp::Div, o, true)
    }

    /// `x ** k` with a Python or NumPy integer k records `powi` (exact repeated
    /// multiplication); any other exponent records `pow`.
    fn __pow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if modulo.is_some_and(|m| !m.is_none()) {
            return Ok(py.NotImplemented());
        }
        if let Some(k) = integer_exponent(o) {
            let v = self.session.builder().powi(self.value, k);
            return Ok(Py::new(py, Var::new(&self.session, v))?.into_any());
        }
        self.bin_with(py, BinaryOp::Pow, o, false)
    }

    fn __rpow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if modulo.is_some_and(|m| !m.is_none()) {
            return Ok(py.NotImplemented());
        }
        self.bin_with(py, BinaryOp::Pow, o, true)
    }

    fn __neg__(&self) -> Var {
        self.unary_op(UnaryOp::Neg)
    }
    fn __pos__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    fn __abs__(&self) -> Var {
        self.unary_op(UnaryOp::Abs)
    }

    fn __lt__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.compare(py, CmpPred::Lt, o)
    }
    fn __le__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.compare(py, CmpPred::Le, o)
    }
    fn __gt__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.compare(py, CmpPred::Gt, o)
    }
    fn __ge__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.compare(py, CmpPred::Ge, o)
    }
    fn __eq__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.compare(py, CmpPred::Eq, o)
    }
    fn __ne__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.compare(py, CmpPred::Ne, o)
    }

    fn __bool__(&self) -> PyResult<bool> {
        Err(no_truth_value("a traced value"))
    }

    fn __float__(&self) -> PyResult<f64> {
        Err(error(
            Kind::Trace,
            "a traced value has no number at trace time: it stands for every input the \
             compiled function will be called with. To collect traced values in an array, \
             make it np.zeros_like(x) or np.zeros(n, dtype=object), not a float array",
        ))
    }

    fn __repr__(&self) -> String {
        format!("<adjit traced value %{}>", self.value.index())
    }

    // Methods NumPy's object-array loops call (`np.sin(x)` on an array of traced values).
    fn sin(&self) -> Var {
        self.unary_op(UnaryOp::Sin)
    }
    fn cos(&self) -> Var {
        self.unary_op(UnaryOp::Cos)
    }
    fn tan(&self) -> Var {
        self.unary_op(UnaryOp::Tan)
    }
    fn exp(&self) -> Var {
        self.unary_op(UnaryOp::Exp)
    }
    fn log(&self) -> Var {
        self.unary_op(UnaryOp::Log)
    }
    fn sqrt(&self) -> Var {
        self.unary_op(UnaryOp::Sqrt)
    }
    fn tanh(&self) -> Var {
        self.unary_op(UnaryOp::Tanh)
    }
    fn sinh(&self) -> Var {
        self.unary_op(UnaryOp::Sinh)
    }
    fn cosh(&self) -> Var {
        self.unary_op(UnaryOp::Cosh)
    }
    fn arcsin(&self) -> Var {
        self.unary_op(UnaryOp::Asin)
    }
    fn arccos(&self) -> Var {
        self.unary_op(UnaryOp::Acos)
    }
    fn arctan(&self) -> Var {
        self.unary_op(UnaryOp::Atan)
    }
    fn log1p(&self) -> Var {
        self.unary_op(UnaryOp::Log1p)
    }
    fn expm1(&self) -> Var {
        self.unary_op(UnaryOp::Expm1)
    }
    fn floor(&self) -> Var {
        self.unary_op(UnaryOp::Floor)
    }
    fn ceil(&self) -> Var {
        self.unary_op(UnaryOp::Ceil)
    }
    fn conjugate(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// NumPy ufuncs applied to a traced value (`np.sin(x[0])`, `np.maximum(x[0], 0.0)`).
    /// Arrays among the inputs, methods other than a plain call (`reduce`, `outer`) and
    /// keyword arguments go to `adjit._numpy.array_ufunc`, which applies this one element at
    /// a time.
    #[pyo3(signature = (ufunc, method, *inputs, **kwargs))]
    fn __array_ufunc__(
        &self,
        py: Python<'_>,
        ufunc: &Bound<'_, PyAny>,
        method: &str,
        inputs: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let args = inputs
            .iter()
            .map(|a| self.arg(&a))
            .collect::<PyResult<Vec<_>>>()?;
        if method != "__call__"
            || kwargs.is_some_and(|k| !k.is_empty())
            || args.iter().any(Option::is_none)
        {
            return array_ufunc(py, ufunc, method, inputs, kwargs);
        }
        let name: String = ufunc.getattr("__name__")?.extract()?;
        let args: Vec<Arg> = args.into_iter().flatten().collect();
        // `x ** 2` on an array reaches here as np.power(x, 2): an integer exponent records
        // `powi`, as the operator on one value does.
        let exponent = match name.as_str() {
            "power" => integer_exponent(&inputs.get_item(1)?),
            _ => None,
        };
        let recorded = record_ufunc(&mut self.session.builder(), &name, &args, exponent);
        match recorded {
            Some(Recorded::Float(v)) => Ok(Py::new(py, Var::new(&self.session, v))?.into_any()),
            Some(Recorded::Bool(v)) => self.boolean(py, v),
            None => Err(unsupported_ufunc(&name)),
        }
    }

    /// `round(x)` (half to even, as Python's) and `round(x, n)` (`rint(x·10ⁿ)/10ⁿ`).
    #[pyo3(signature = (ndigits=None))]
    fn __round__(&self, ndigits: Option<i32>) -> Var {
        self.rounded(ndigits.unwrap_or(0))
    }

    /// `x.round(decimals)`, which `np.round` calls.
    #[pyo3(signature = (decimals=0, out=None))]
    fn round(&self, decimals: i32, out: Option<&Bound<'_, PyAny>>) -> PyResult<Var> {
        if out.is_some_and(|o| !o.is_none()) {
            return Err(error(
                Kind::Trace,
                "round(out=...) is not traced: use the returned value",
            ));
        }
        Ok(self.rounded(decimals))
    }

    fn __mod__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.derived_with(py, "remainder", o, false)
    }
    fn __rmod__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.derived_with(py, "remainder", o, true)
    }
    /// NumPy functions (`np.where(c, a, b)`, `np.sum`, ...) with a traced value among their
    /// arguments: `adjit._numpy.array_function`.
    fn __array_function__(
        &self,
        py: Python<'_>,
        func: &Bound<'_, PyAny>,
        types: &Bound<'_, PyAny>,
        args: &Bound<'_, PyAny>,
        kwargs: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        array_function(py, func, types, args, kwargs)
    }

    fn __floordiv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.derived_with(py, "floor_divide", o, false)
    }
    fn __rfloordiv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.derived_with(py, "floor_divide", o, true)
    }
}

/// A Python or NumPy integer (not a bool) that fits `powi`'s exponent.
fn integer_exponent(obj: &Bound<'_, PyAny>) -> Option<i32> {
    if obj.is_instance_of::<PyBool>() {
        return None;
    }
    let numpy_integer = obj.get_type().name().is_ok_and(|n| {
        n.to_cow()
            .is_ok_and(|n| n.starts_with("int") || n.starts_with("uint"))
    }) && obj
        .get_type()
        .module()
        .is_ok_and(|m| m.to_cow().is_ok_and(|m| m == "numpy"));
    if obj.is_instance_of::<PyInt>() || numpy_integer {
        return obj.extract::<i32>().ok();
    }
    None
}

/// The one message for a NumPy operation adjit does not record.
fn unsupported_ufunc(name: &str) -> PyErr {
    error(
        Kind::Trace,
        format!(
            "numpy.{name} is not traced by adjit; write it with the supported operations \
             (arithmetic, comparisons with adjit.where, np.maximum/minimum/clip, the functions \
             of adjit), see the NumPy support page of adjit's documentation"
        ),
    )
}

/// Hand a NumPy function call to `adjit._numpy.array_function`.
fn array_function(
    py: Python<'_>,
    func: &Bound<'_, PyAny>,
    types: &Bound<'_, PyAny>,
    args: &Bound<'_, PyAny>,
    kwargs: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let helper = PyModule::import(py, "adjit._numpy")?;
    Ok(helper
        .getattr("array_function")?
        .call1((func, types, args, kwargs))?
        .unbind())
}

/// Hand a ufunc call involving arrays to `adjit._numpy.array_ufunc`.
fn array_ufunc(
    py: Python<'_>,
    ufunc: &Bound<'_, PyAny>,
    method: &str,
    inputs: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let helper = PyModule::import(py, "adjit._numpy")?;
    let mut args = vec![ufunc.clone(), method.into_pyobject(py)?.into_any()];
    args.extend(inputs.iter());
    Ok(helper
        .getattr("array_ufunc")?
        .call(PyTuple::new(py, args)?, kwargs)?
        .unbind())
}

fn lookup<T: Copy>(table: &[(&str, T)], name: &str) -> Option<T> {
    table.iter().find(|(n, _)| *n == name).map(|&(_, t)| t)
}

/// What a ufunc on traced values and numbers recorded.
#[derive(Clone, Copy)]
enum Recorded {
    Float(Value),
    Bool(Value),
}

/// Record the NumPy ufunc `name` on one element of each input (at least one of them a traced
/// value), as `np.name(...)` on traced scalars records it; `exponent` is the integer exponent
/// of `np.power(x, k)` (recorded as `powi`). `None`: adjit does not record this ufunc. The one
/// place both the scalar path (`Var.__array_ufunc__`) and the array path ([`elementwise`])
/// record a ufunc, so a traced array gives the instructions its elements would.
fn record_ufunc(
    b: &mut Builder,
    name: &str,
    args: &[Arg],
    exponent: Option<i32>,
) -> Option<Recorded> {
    if let (Some(k), [Arg::Var(x), _]) = (exponent, args) {
        return Some(Recorded::Float(b.powi(*x, k)));
    }
    if let Some(pred) = lookup(COMPARE, name) {
        if let [a, c] = args {
            return Some(Recorded::Bool(b.fcmp(pred, operand(*a), operand(*c))));
        }
    }
    // The operands without an allocation per element (a ufunc takes at most three).
    let mut buf = [Operand::Const(0.0); 3];
    let owned: Vec<Operand>;
    let ops: &[Operand] = if args.len() <= buf.len() {
        for (slot, &a) in buf.iter_mut().zip(args) {
            *slot = operand(a);
        }
        &buf[..args.len()]
    } else {
        owned = args.iter().copied().map(operand).collect();
        &owned
    };
    let v = match *ops {
        [x] => match lookup(UNARY, name) {
            Some(op) => {
                let x = match x {
                    Operand::Value(v) => v,
                    Operand::Const(c) => b.constant(Type::F64, c),
                };
                Some(b.unary(op, x))
            }
            // Real numbers: `+x`, and the conjugate `np.var`/`np.std` take.
            None if matches!(name, "positive" | "conjugate" | "conj") => Some(match x {
                Operand::Value(v) => v,
                Operand::Const(c) => b.constant(Type::F64, c),
            }),
            None => derived::float_op(b, name, ops),
        },
        [x, y] => match lookup(BINARY, name) {
            Some(op) => Some(b.binary(op, x, y)),
            None => derived::float_op(b, name, ops),
        },
        _ => derived::float_op(b, name, ops),
    };
    v.map(Recorded::Float)
}

/// Reads the elements of the fast paths ([`elementwise`], [`reduce_1d`]): a traced float value
/// (all of one trace, whose session it keeps) or a number; `None` for anything else, which
/// sends the call back to the element loop.
#[derive(Default)]
struct Elements {
    session: Option<Arc<Session>>,
}

impl Elements {
    fn read(&mut self, x: &Bound<'_, PyAny>) -> Option<Arg> {
        let Ok(v) = x.cast::<Var>() else {
            return number(x).map(Arg::Num);
        };
        let v = v.get();
        match &self.session {
            Some(s) if !Arc::ptr_eq(s, &v.session) => return None,
            Some(_) => {}
            None => self.session = Some(v.session.clone()),
        }
        Some(Arg::Var(v.value))
    }
}

/// One input of [`elementwise`]: a list of elements (an array's, in C order) or one element
/// that broadcasts.
enum Column<'py> {
    List(Bound<'py, PyList>),
    One(Bound<'py, PyAny>),
}

/// `adjit._numpy`'s fast path for a ufunc call on traced arrays: `inputs` are lists of the
/// broadcast arrays' elements in C order (all of one length `n`) or single elements (traced
/// values or numbers). Records every element in one call, under one lock of the trace, with
/// [`record_ufunc`] (the instructions NumPy's element-by-element loop would record, in C
/// order, which is that loop's own order for C-ordered operands), and returns the `n` results as a list; `None` when this call is not one it takes
/// (an element that is neither a traced float value nor a number, an element tuple without a
/// traced value, a ufunc adjit does not record, `power` with an array of exponents), which the
/// caller then evaluates element by element as before. Nothing is recorded in that case.
#[pyfunction]
#[pyo3(name = "_elementwise")]
pub fn elementwise(
    py: Python<'_>,
    name: &str,
    inputs: Vec<Bound<'_, PyAny>>,
) -> PyResult<Option<Py<PyList>>> {
    let columns: Vec<Column<'_>> = inputs
        .into_iter()
        .map(|x| match x.cast_into::<PyList>() {
            Ok(list) => Column::List(list),
            Err(e) => Column::One(e.into_inner()),
        })
        .collect();
    if columns.is_empty() || columns.len() > 3 {
        return Ok(None);
    }
    // The element count is the lists' (all of one length), never a number given from outside.
    let mut lengths = columns.iter().filter_map(|c| match c {
        Column::List(list) => Some(list.len()),
        Column::One(_) => None,
    });
    let Some(n) = lengths.next() else {
        return Ok(None);
    };
    if lengths.any(|m| m != n) {
        return Ok(None);
    }
    // An integer exponent applies to every element only when it is one scalar.
    let exponent = match (name, columns.get(1)) {
        ("power", Some(Column::One(k))) => integer_exponent(k),
        ("power", Some(Column::List(_))) => return Ok(None),
        _ => None,
    };
    // Read every element first: nothing is recorded unless all of them can be.
    let mut reader = Elements::default();
    let mut read = |x: &Bound<'_, PyAny>| reader.read(x);
    let mut args: Vec<[Arg; 3]> = Vec::with_capacity(n);
    let ones: Vec<Option<Arg>> = columns
        .iter()
        .map(|c| match c {
            Column::One(x) => read(x),
            Column::List(_) => None,
        })
        .collect();
    for (k, c) in columns.iter().enumerate() {
        if matches!(c, Column::One(_)) && ones[k].is_none() {
            return Ok(None);
        }
    }
    for i in 0..n {
        let mut tuple = [Arg::Num(0.0); 3];
        let mut traced = false;
        for (k, c) in columns.iter().enumerate() {
            let a = match c {
                Column::One(_) => ones[k],
                Column::List(list) => read(&list.get_item(i)?),
            };
            let Some(a) = a else { return Ok(None) };
            traced |= matches!(a, Arg::Var(_));
            tuple[k] = a;
        }
        if !traced {
            return Ok(None);
        }
        args.push(tuple);
    }
    let Some(session) = reader.session else {
        return Ok(None);
    };
    let arity = columns.len();
    // Whether adjit records this ufunc at all: tried once on a scratch builder.
    {
        let mut scratch = Builder::new("probe");
        let probe: Vec<Arg> = (0..arity)
            .map(|_| Arg::Var(scratch.param(Type::F64, "p")))
            .collect();
        if record_ufunc(&mut scratch, name, &probe, exponent).is_none() {
            return Ok(None);
        }
    }
    let recorded: Vec<Recorded> = {
        let mut b = session.builder();
        let mut out = Vec::with_capacity(n);
        for tuple in &args {
            match record_ufunc(&mut b, name, &tuple[..arity], exponent) {
                Some(r) => out.push(r),
                // Unreachable after the probe; kept an error, not a panic.
                None => return Err(unsupported_ufunc(name)),
            }
        }
        out
    };
    let objects = recorded
        .into_iter()
        .map(|r| -> PyResult<Py<PyAny>> {
            Ok(match r {
                Recorded::Float(v) => Py::new(py, Var::new(&session, v))?.into_any(),
                Recorded::Bool(v) => Py::new(
                    py,
                    BoolVar {
                        session: session.clone(),
                        value: v,
                    },
                )?
                .into_any(),
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Some(PyList::new(py, objects)?.unbind()))
}

/// `adjit._numpy`'s fast path for `np.add.reduce` (`np.sum`) and the other binary ufuncs'
/// reductions of a 1-D traced array, given as the list of its elements: the left fold
/// `((x₀ ∘ x₁) ∘ x₂) ∘ …` NumPy's object reduction computes, recorded in one call. `None`
/// when an element is not a traced float value or a number, when no element is traced, or
/// when the ufunc is not one adjit records as a binary operation.
#[pyfunction]
#[pyo3(name = "_reduce_1d")]
pub fn reduce_1d(
    py: Python<'_>,
    name: &str,
    items: Bound<'_, PyList>,
) -> PyResult<Option<Py<PyAny>>> {
    if items.is_empty() || lookup(BINARY, name).is_none() || name == "power" {
        return Ok(None);
    }
    let mut reader = Elements::default();
    let mut args = Vec::with_capacity(items.len());
    for x in items.iter() {
        let Some(a) = reader.read(&x) else {
            return Ok(None);
        };
        args.push(a);
    }
    let Some(session) = reader.session else {
        return Ok(None);
    };
    // A prefix of numbers folds numerically in NumPy (before any traced value): decline.
    if !matches!(args[0], Arg::Var(_)) {
        return Ok(None);
    }
    let mut b = session.builder();
    let mut acc = args[0];
    for &x in &args[1..] {
        match record_ufunc(&mut b, name, &[acc, x], None) {
            Some(Recorded::Float(v)) => acc = Arg::Var(v),
            _ => return Err(unsupported_ufunc(name)),
        }
    }
    drop(b);
    let Arg::Var(v) = acc else {
        return Ok(None);
    };
    Ok(Some(Py::new(py, Var::new(&session, v))?.into_any()))
}

fn no_truth_value(what: &str) -> PyErr {
    error(
        Kind::Trace,
        format!(
            "{what} has no truth value while tracing (Python's if/and/or/not would decide \
             once, at trace time): use adjit.where(condition, a, b)"
        ),
    )
}

impl BoolVar {
    /// Read `other` as a logical operand of this trace; `None` when it is neither a traced
    /// comparison nor a Python or NumPy bool.
    fn logic(&self, other: &Bound<'_, PyAny>) -> PyResult<Option<Logic>> {
        if let Ok(v) = other.cast::<BoolVar>() {
            let v = v.get();
            same_session(&self.session, &v.session)?;
            return Ok(Some(Logic::Traced(v.value)));
        }
        if other.cast::<Var>().is_ok() {
            return Err(error(
                Kind::Trace,
                "a logical operation (&, |, ^, ~, np.logical_*) takes traced comparisons; \
                 compare the traced value first, e.g. (x > 0) & (y > 0)",
            ));
        }
        let is_bool = other.is_instance_of::<PyBool>()
            || other
                .get_type()
                .name()
                .is_ok_and(|n| n.to_cow().is_ok_and(|n| n == "bool" || n == "bool_"));
        if is_bool {
            return Ok(Some(Logic::Const(other.is_truthy()?)));
        }
        Ok(None)
    }

    fn logic_with(
        &self,
        py: Python<'_>,
        name: &str,
        other: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let mut args = vec![Logic::Traced(self.value)];
        if let Some(o) = other {
            match self.logic(o)? {
                Some(l) => args.push(l),
                None => return Ok(py.NotImplemented()),
            }
        }
        self.record_logic(py, name, &args)
    }

    fn record_logic(&self, py: Python<'_>, name: &str, args: &[Logic]) -> PyResult<Py<PyAny>> {
        let v = derived::logic_op(&mut self.session.builder(), name, args);
        match v {
            Some(v) => Ok(Py::new(
                py,
                BoolVar {
                    session: self.session.clone(),
                    value: v,
                },
            )?
            .into_any()),
            None => Err(error(
                Kind::Trace,
                format!(
                    "numpy.{name} does not apply to a traced comparison; choose numbers with \
                     adjit.where(c, a, b), combine comparisons with &, |, ^, ~"
                ),
            )),
        }
    }
}

#[pymethods]
impl BoolVar {
    fn __bool__(&self) -> PyResult<bool> {
        Err(no_truth_value("a traced comparison"))
    }

    fn __repr__(&self) -> String {
        format!("<adjit traced bool %{}>", self.value.index())
    }

    fn __and__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.logic_with(py, "logical_and", Some(o))
    }
    fn __rand__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.logic_with(py, "logical_and", Some(o))
    }
    fn __or__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.logic_with(py, "logical_or", Some(o))
    }
    fn __ror__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.logic_with(py, "logical_or", Some(o))
    }
    fn __xor__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.logic_with(py, "logical_xor", Some(o))
    }
    fn __rxor__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.logic_with(py, "logical_xor", Some(o))
    }
    fn __invert__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.logic_with(py, "logical_not", None)
    }

    /// NumPy functions (`np.where(c, a, b)`, `np.sum`, ...) with a traced value among their
    /// arguments: `adjit._numpy.array_function`.
    fn __array_function__(
        &self,
        py: Python<'_>,
        func: &Bound<'_, PyAny>,
        types: &Bound<'_, PyAny>,
        args: &Bound<'_, PyAny>,
        kwargs: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        array_function(py, func, types, args, kwargs)
    }

    /// `np.logical_and(a, b)` and friends on traced comparisons; arrays go to
    /// `adjit._numpy.array_ufunc`.
    #[pyo3(signature = (ufunc, method, *inputs, **kwargs))]
    fn __array_ufunc__(
        &self,
        py: Python<'_>,
        ufunc: &Bound<'_, PyAny>,
        method: &str,
        inputs: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let name: String = ufunc.getattr("__name__")?.extract()?;
        let mut args = Vec::new();
        for a in inputs.iter() {
            match self.logic(&a) {
                Ok(Some(l)) => args.push(l),
                Ok(None) if number(&a).is_none() && a.cast::<Var>().is_err() => {
                    return array_ufunc(py, ufunc, method, inputs, kwargs)
                }
                // A number or traced value among the inputs: not a logical operation.
                _ => {
                    return Err(error(
                        Kind::Trace,
                        format!(
                            "numpy.{name} got a traced comparison where a number is needed: \
                             choose numbers with adjit.where(c, a, b)"
                        ),
                    ))
                }
            }
        }
        if method != "__call__" || kwargs.is_some_and(|k| !k.is_empty()) {
            return array_ufunc(py, ufunc, method, inputs, kwargs);
        }
        self.record_logic(py, &name, &args)
    }
}

/// `op(x)` for a traced value or a number (numbers are computed at once, with adjit's
/// semantics).
pub fn unary(py: Python<'_>, op: UnaryOp, x: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    if let Ok(v) = x.cast::<Var>() {
        return Ok(Py::new(py, v.get().unary_op(op))?.into_any());
    }
    if x.cast::<BoolVar>().is_ok() {
        return Err(error(Kind::Trace, "a traced comparison is not a number"));
    }
    match number(x) {
        Some(c) => Ok(PyFloat::new(py, math::unary_f64(op, c)).into_any().unbind()),
        None => Err(error(
            Kind::DType,
            format!(
                "adjit.{} takes a traced value or a number, not {}",
                op.name(),
                x.get_type().name()?
            ),
        )),
    }
}

/// `op(a, b)` for traced values or numbers.
pub fn binary(
    py: Python<'_>,
    op: BinaryOp,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let first = a.cast::<Var>().ok().or_else(|| b.cast::<Var>().ok());
    match first {
        Some(v) => {
            let v = v.get();
            let read = |o: &Bound<'_, PyAny>| -> PyResult<Arg> {
                v.arg(o)?.ok_or_else(|| {
                    error(Kind::DType, "adjit functions take traced values or numbers")
                })
            };
            let (x, y) = (read(a)?, read(b)?);
            Ok(Py::new(py, v.binary(op, x, y))?.into_any())
        }
        None => match (number(a), number(b)) {
            (Some(x), Some(y)) => Ok(PyFloat::new(py, math::binary_f64(op, x, y))
                .into_any()
                .unbind()),
            _ => Err(error(
                Kind::DType,
                "adjit functions take traced values or numbers",
            )),
        },
    }
}

/// `where(c, a, b)`: `a` where `c` holds, else `b` (both sides are computed; the derivative
/// flows through the chosen one).
pub fn select(
    py: Python<'_>,
    c: &Bound<'_, PyAny>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    if let Ok(c) = c.cast::<PyBool>() {
        return Ok(if c.is_true() { a.clone() } else { b.clone() }.unbind());
    }
    let Ok(c) = c.cast::<BoolVar>() else {
        return Err(error(
            Kind::Trace,
            "adjit.where takes a traced comparison (such as x[0] < 1.0) or a Python bool",
        ));
    };
    let c = c.get();
    let proxy = Var::new(&c.session, c.value);
    let read = |o: &Bound<'_, PyAny>| -> PyResult<Arg> {
        proxy.arg(o)?.ok_or_else(|| {
            error(
                Kind::DType,
                "adjit.where chooses between traced values or numbers",
            )
        })
    };
    let (x, y) = (read(a)?, read(b)?);
    let v = c.session.builder().select(c.value, operand(x), operand(y));
    Ok(Py::new(py, Var::new(&c.session, v))?.into_any())
}

/// `adjit.trace(fn, n, data=0, name="traced")`.
pub fn trace(
    py: Python<'_>,
    f: &Bound<'_, PyAny>,
    n: usize,
    data: usize,
    name: &str,
) -> PyResult<Function> {
    let session = Arc::new(Session {
        builder: Mutex::new(Builder::new(name)),
    });
    let (params, data_params) = {
        let mut b = session.builder();
        let params: Vec<Value> = (0..n)
            .map(|i| b.param(Type::F64, &format!("x{i}")))
            .collect();
        let data_params: Vec<Value> = (0..data)
            .map(|i| b.data_param(Type::F64, &format!("d{i}")))
            .collect();
        (params, data_params)
    };
    // A `TracedArray` (adjit/_numpy.py): NumPy's ufuncs and functions on it trace.
    let helper = PyModule::import(py, "adjit._numpy")?;
    let as_array = |values: &[Value]| -> PyResult<Bound<'_, PyAny>> {
        let list = PyList::empty(py);
        for &v in values {
            list.append(Py::new(py, Var::new(&session, v))?)?;
        }
        helper.call_method1("asarray", (list,))
    };
    // Python's cyclic garbage collector is paused while `f` runs: a vectorised trace makes
    // millions of traced values (which hold no Python references, so no cycles), and the
    // collections their allocations trigger walked every live one, over and over: a quarter
    // of a 10⁶-element trace. It is resumed whatever `f` does.
    let gc = PyModule::import(py, "gc")?;
    let was_enabled: bool = gc.call_method0("isenabled")?.extract()?;
    if was_enabled {
        gc.call_method0("disable")?;
    }
    let called = (|| -> PyResult<Bound<'_, PyAny>> {
        let x = as_array(&params)?;
        if data > 0 {
            f.call1((x, as_array(&data_params)?))
        } else {
            f.call1((x,))
        }
    })();
    if was_enabled {
        gc.call_method0("enable")?;
    }
    let result = called?;
    let mut outputs = Vec::new();
    collect_outputs(&session, &result, &mut outputs)?;
    if outputs.is_empty() {
        return Err(error(Kind::Trace, "the traced function returned no values"));
    }
    let func = session.builder().clone().finish(&outputs);
    adjit::ir::verify(&func).map_err(|e| error(Kind::Trace, e.to_string()))?;
    // The result's NumPy shape (`()` for one value); a ragged result (a tuple of a number
    // and an array) has none and gives the flat `(m,)`.
    let shape = helper
        .call_method1("output_shape", (&result,))?
        .extract::<Option<Vec<usize>>>()?
        .unwrap_or_else(|| vec![outputs.len()]);
    Ok(Function::with_shape(func, shape))
}

/// The function's results: one value, a number, or a (nested) tuple, list or array of them.
fn collect_outputs(
    session: &Arc<Session>,
    obj: &Bound<'_, PyAny>,
    out: &mut Vec<Value>,
) -> PyResult<()> {
    if let Ok(v) = obj.cast::<Var>() {
        same_session(session, &v.get().session)?;
        out.push(v.get().value);
        return Ok(());
    }
    if let Ok(v) = obj.cast::<BoolVar>() {
        same_session(session, &v.get().session)?;
        out.push(v.get().value);
        return Ok(());
    }
    if let Some(c) = number(obj) {
        out.push(session.builder().constant(Type::F64, c));
        return Ok(());
    }
    // A 0-d array (np.tensordot of two vectors, np.sum(..., keepdims) of a scalar): its one
    // element.
    if let Ok(a) = obj.cast::<numpy::PyUntypedArray>() {
        if a.ndim() == 0 {
            return collect_outputs(session, &obj.call_method0("item")?, out);
        }
    }
    if obj.hasattr("__iter__")? && !obj.is_instance_of::<pyo3::types::PyString>() {
        for item in obj.try_iter()? {
            collect_outputs(session, &item?, out)?;
        }
        return Ok(());
    }
    Err(error(
        Kind::Trace,
        format!(
            "the traced function returned a {}; return traced values, numbers, or a tuple, \
             list or array of them",
            obj.get_type().name()?
        ),
    ))
}
