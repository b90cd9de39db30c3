//! The compiled transforms: `adjit.value_and_grad(f)`, `grad`, `jvp`, `vjp`, `hvp`,
//! `jacobian`, `hessian`, `inverse`, `jit`. Each compiles once and returns a callable
//! [`Transform`]; a 1-D `x` is one point, a 2-D `x` of shape `(B, n)` a batch over the leading
//! axis, run natively over threads with the GIL released.

use adjit::checkpoint::CheckpointedGradient;
use adjit::inverse::CompiledInverse;
use adjit::{
    Compiled, Engine, Gradient, Hessian, InverseMode, Jacobian, Mode, Options, Part, Prepared,
    SparseHessian, SparseJacobian, Strategy,
};
use numpy::PyUntypedArrayMethods;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{IntoPyDict, PyFloat, PyTuple};

use crate::arrays::{self, Arg, NonFinite, Policy};
use crate::errors::{error, IntoPy, Kind};
use crate::function::{shaped, Function, ParamMap};

/// What a transform returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    Eval,
    ValueAndGrad,
    Grad,
    Jvp,
    Vjp,
    Hvp,
    Jacobian,
    Hessian,
    Inverse,
}

impl What {
    fn name(self) -> &'static str {
        match self {
            What::Eval => "jit",
            What::ValueAndGrad => "value_and_grad",
            What::Grad => "grad",
            What::Jvp => "jvp",
            What::Vjp => "vjp",
            What::Hvp => "hvp",
            What::Jacobian => "jacobian",
            What::Hessian => "hessian",
            What::Inverse => "inverse",
        }
    }

    /// The name of the second argument, for transforms that take one.
    fn vector_name(self) -> Option<&'static str> {
        match self {
            What::Jvp | What::Hvp | What::Inverse => Some("v"),
            What::Vjp => Some("w"),
            _ => None,
        }
    }
}

/// The compiled object behind a transform: any [`Prepared`] object, driven through the
/// trait; the sparse ones are kept as themselves, since a sparse result is a matrix built
/// from their pattern.
enum Object {
    Any(Box<dyn Prepared>),
    SparseJacobian(SparseJacobian),
    SparseHessian(SparseHessian),
}

impl Object {
    fn prepared(&self) -> &dyn Prepared {
        match self {
            Object::Any(object) => object.as_ref(),
            Object::SparseJacobian(j) => j,
            Object::SparseHessian(h) => h,
        }
    }
}

/// What the object reads after a point's inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Extra {
    None,
    /// The transform's second argument (`v` or `w`).
    Vector,
    /// A cotangent of this many ones (a checkpointed gradient's `ȳ = 1`).
    Ones(usize),
}

/// A compiled transform of one function: call it like the function.
#[pyclass(frozen, module = "adjit")]
pub struct Transform {
    what: What,
    object: Object,
    extra: Extra,
    /// The ranges of the object's flat outputs the transform returns, in order (adjacent
    /// ones merged, so a transform that returns everything has one range, the whole).
    picks: Vec<std::ops::Range<usize>>,
    params: ParamMap,
    /// Float outputs of the function (`m`), every output (`m_all`, bools included).
    m: usize,
    m_all: usize,
    /// The shape of the function's results (`Function::out_shape`), and of the float
    /// results alone (the same unless some outputs are bools): a Jacobian is
    /// `(*jac_shape, n)`, so `(n,)` for one output.
    out_shape: Vec<usize>,
    jac_shape: Vec<usize>,
    policy: Policy,
    threads: usize,
    /// For `sparse=True`: the pattern's `indices` and `indptr` as read-only NumPy arrays and
    /// `scipy.sparse.csr_matrix`, built on the first call and shared by every matrix returned
    /// (the pattern never changes), so a call converts only the values.
    csr: PyOnceLock<SparseIndex>,
    /// The attributes of the first sparse matrix returned, without its values: later
    /// matrices are that state with their own values (see [`Transform::sparse`]).
    csr_state: PyOnceLock<Py<PyAny>>,
    /// The function's name, for messages.
    name: String,
    repr: String,
}

/// What every sparse result of one transform shares.
struct SparseIndex {
    indices: Py<PyAny>,
    indptr: Py<PyAny>,
    csr_matrix: Py<PyAny>,
}

/// Options common to every transform, read from keyword arguments.
pub struct Settings<'a> {
    pub strategy: &'a str,
    pub engine: &'a str,
    pub sparse: bool,
    pub mode: &'a str,
    pub strict: bool,
    pub nonfinite: &'a str,
    pub threads: usize,
    /// Points per native call in batches: 2 compiles two-lane (F64X2) kernels too.
    pub lanes: usize,
    /// `libm` or `inline` ([`adjit::jit::MathImpl`]).
    pub math: &'a str,
    /// Keep a large program rolled from derivation to machine code ([`Options::rolled`]):
    /// `None` from the automatic size on.
    pub rolled: Option<bool>,
}

/// `bytes:1e6` as `bytes:1000000`: budgets written the way Python writes big numbers.
pub fn byte_budget(strategy: &str) -> String {
    if let Some(n) = strategy.strip_prefix("bytes:") {
        if let Ok(v) = n.parse::<f64>() {
            if v.fract() == 0.0 && (0.0..9.0e15).contains(&v) {
                return format!("bytes:{}", v as u64);
            }
        }
    }
    strategy.to_string()
}

fn parse_err(e: impl std::fmt::Display) -> PyErr {
    error(Kind::Option, e.to_string())
}

impl Transform {
    pub fn new(f: &Function, what: What, s: &Settings<'_>) -> PyResult<Transform> {
        let engine: Engine = s.engine.parse().map_err(parse_err)?;
        let mut opts = Options::on(engine);
        if !matches!(s.lanes, 1 | 2) {
            return Err(error(
                Kind::Option,
                format!("lanes must be 1 or 2, not {}", s.lanes),
            ));
        }
        opts.jit.batch_lanes = s.lanes;
        opts.rolled = match s.rolled {
            None => adjit::KeepRolled::Auto,
            Some(true) => adjit::KeepRolled::Always,
            Some(false) => adjit::KeepRolled::Never,
        };
        opts.jit.math = adjit::jit::MathImpl::from_name(s.math).ok_or_else(|| {
            error(
                Kind::Option,
                format!("math must be \"libm\" or \"inline\", not {:?}", s.math),
            )
        })?;
        let strategy: Strategy = byte_budget(s.strategy).parse().map_err(parse_err)?;
        let func = &f.func;
        if strategy != Strategy::Tape
            && !matches!(what, What::ValueAndGrad | What::Grad | What::Vjp)
        {
            return Err(error(
                Kind::Option,
                format!(
                    "strategy= applies to value_and_grad, grad and vjp, not {}",
                    what.name()
                ),
            ));
        }
        if s.sparse && !matches!(what, What::Jacobian | What::Hessian) {
            return Err(error(
                Kind::Option,
                "sparse=True applies to jacobian and hessian",
            ));
        }
        let m = func.ret_types.iter().filter(|t| t.is_float()).count();
        let program = |mode| -> PyResult<Object> {
            let compiled = Compiled::with_options(func, mode, &opts).py_err()?;
            Ok(Object::Any(Box::new(compiled)))
        };
        let any = |object: adjit::Result<Box<dyn Prepared>>| object.py_err().map(Object::Any);
        let checkpointed = strategy != Strategy::Tape;
        let object = match what {
            What::Eval => program(Mode::Primal)?,
            What::ValueAndGrad | What::Grad | What::Vjp if checkpointed => {
                any(CheckpointedGradient::with_options(func, strategy, &opts).map(boxed))?
            }
            // A Gradient checks for one float output and names the problem.
            What::ValueAndGrad | What::Grad => any(Gradient::with_options(func, &opts).map(boxed))?,
            What::Jvp => program(Mode::Jvp)?,
            What::Vjp => program(Mode::Vjp)?,
            What::Hvp => program(Mode::Hvp)?,
            What::Jacobian if s.sparse => {
                Object::SparseJacobian(SparseJacobian::with_options(func, &opts).py_err()?)
            }
            What::Jacobian => any(Jacobian::with_options(func, &opts).map(boxed))?,
            What::Hessian if s.sparse => {
                Object::SparseHessian(SparseHessian::with_options(func, &opts).py_err()?)
            }
            What::Hessian => any(Hessian::with_options(func, &opts).map(boxed))?,
            What::Inverse => {
                let mode = match s.mode {
                    "reverse" | "reverse-inverse" => InverseMode::Reverse,
                    "forward" | "forward-inverse" => InverseMode::Forward,
                    "dense" | "dense-inverse" => InverseMode::Dense,
                    other => {
                        return Err(error(
                            Kind::Option,
                            format!(
                                "mode must be \"reverse\" (J⁻¹·v), \"forward\" (J⁻ᵀ·v) or \
                                 \"dense\", not {other:?}"
                            ),
                        ))
                    }
                };
                any(CompiledInverse::with_options(func, mode, &opts).map(boxed))?
            }
        };
        let value_at = func
            .ret_types
            .iter()
            .position(|t| t.is_float())
            .unwrap_or(0);
        let extra = match what {
            What::ValueAndGrad | What::Grad if checkpointed => Extra::Ones(m),
            _ if what.vector_name().is_some() => Extra::Vector,
            _ => Extra::None,
        };
        let picks = picks(what, object.prepared().layout(), value_at);
        Ok(Transform {
            what,
            object,
            extra,
            picks,
            params: f.params.clone(),
            m,
            m_all: func.n_outputs(),
            out_shape: f.out_shape.clone(),
            jac_shape: if m == func.n_outputs() {
                f.out_shape.clone()
            } else if m == 1 {
                vec![]
            } else {
                vec![m]
            },
            policy: Policy {
                strict: s.strict,
                nonfinite: NonFinite::parse(s.nonfinite)?,
            },
            threads: s.threads,
            csr: PyOnceLock::new(),
            csr_state: PyOnceLock::new(),
            name: func.name.clone(),
            repr: format!(
                "<adjit.{} of @{} ({} inputs{}, strategy {}, engine {})>",
                what.name(),
                func.name,
                f.params.n_x,
                if f.params.n_data > 0 {
                    format!(", {} data", f.params.n_data)
                } else {
                    String::new()
                },
                strategy,
                engine
            ),
        })
    }

    /// The length of the second argument.
    fn vector_len(&self) -> usize {
        match self.what {
            What::Vjp => self.m,
            What::Inverse => self.params.n_x,
            _ => self.params.n_x,
        }
    }

    /// The numbers one point returns, flat.
    fn point_len(&self) -> usize {
        self.picks.iter().map(|r| r.len()).sum()
    }

    /// Whether the transform returns every output of its object, in order.
    fn returns_all(&self) -> bool {
        matches!(self.picks.as_slice(), [r] if r.start == 0 && r.end == self.object.prepared().n_outputs())
    }

    /// The object's flat inputs of one point, `inputs` (the parameters in signature order)
    /// then the extra part, written to `buf` (`flat_inputs_len()` numbers); `inputs` itself
    /// when there is none.
    fn flat_inputs<'a>(&self, inputs: &'a [f64], v: &[f64], buf: &'a mut [f64]) -> &'a [f64] {
        if self.extra == Extra::None {
            return inputs;
        }
        self.write_inputs(inputs, v, buf);
        buf
    }

    /// [`Self::flat_inputs`] always into `buf`.
    fn write_inputs(&self, inputs: &[f64], v: &[f64], buf: &mut [f64]) {
        let k = inputs.len();
        buf[..k].copy_from_slice(inputs);
        match self.extra {
            Extra::None => {}
            Extra::Vector => buf[k..k + v.len()].copy_from_slice(v),
            Extra::Ones(m) => buf[k..k + m].fill(1.0),
        }
    }

    /// The length of [`Self::flat_inputs`]' buffer: `inputs` then the extra part.
    fn flat_inputs_len(&self, inputs: &[f64], v: &[f64]) -> usize {
        inputs.len()
            + match self.extra {
                Extra::None => 0,
                Extra::Vector => v.len(),
                Extra::Ones(m) => m,
            }
    }

    /// The transform's numbers from one point's flat outputs.
    fn gather(&self, flat_out: &[f64], out: &mut [f64]) {
        let mut at = 0;
        for r in &self.picks {
            out[at..at + r.len()].copy_from_slice(&flat_out[r.clone()]);
            at += r.len();
        }
    }

    /// Evaluate one point: `inputs` are the parameters in signature order, `v` the vector
    /// (if any); writes `point_len()` numbers to `out`.
    fn point(&self, inputs: &[f64], v: &[f64], out: &mut [f64]) -> adjit::Result<()> {
        let object = self.object.prepared();
        let n_out = if self.returns_all() {
            0
        } else {
            object.n_outputs()
        };
        with_buffers(self.flat_inputs_len(inputs, v), n_out, |buf, flat_out| {
            let flat_in = self.flat_inputs(inputs, v, buf);
            if n_out == 0 {
                return object.call_flat(flat_in, out);
            }
            object.call_flat(flat_in, flat_out)?;
            self.gather(flat_out, out);
            Ok(())
        })
    }

    /// Shape one point's flat result as the transform returns it.
    fn shape_point(&self, py: Python<'_>, mut flat: Vec<f64>) -> PyResult<Py<PyAny>> {
        let n = self.params.n_x;
        Ok(match self.what {
            What::Eval => shaped(py, flat, &self.out_shape)?,
            What::ValueAndGrad => {
                let g = flat.split_off(1);
                PyTuple::new(
                    py,
                    [
                        PyFloat::new(py, flat[0]).into_any(),
                        arrays::vector(py, g).into_any(),
                    ],
                )?
                .into_any()
                .unbind()
            }
            What::Grad | What::Hvp | What::Inverse => arrays::vector(py, flat).into_any().unbind(),
            What::Jvp | What::Vjp => {
                let second = flat.split_off(self.m_all);
                PyTuple::new(
                    py,
                    [
                        shaped(py, flat, &self.out_shape)?.into_bound(py),
                        if self.what == What::Vjp {
                            arrays::vector(py, second).into_any()
                        } else {
                            shaped(py, second, &self.jac_shape)?.into_bound(py)
                        },
                    ],
                )?
                .into_any()
                .unbind()
            }
            What::Jacobian => arrays::array(py, flat, &self.jacobian_shape())?.unbind(),
            What::Hessian => arrays::array(py, flat, &[n, n])?.unbind(),
        })
    }

    /// `vjp`'s `w` given in the output shape `S` (or `(B, *S)` for a `batch` of points) as the
    /// flat `(m,)` (or `(B, m)`) the reader takes; any other argument unchanged (and checked
    /// by the reader).
    fn flat_w<'py>(&self, w: &Bound<'py, PyAny>, batch: bool) -> PyResult<Bound<'py, PyAny>> {
        if self.what != What::Vjp || self.jac_shape.len() == 1 {
            return Ok(w.clone());
        }
        let Ok(a) = w.cast::<numpy::PyUntypedArray>() else {
            return Ok(w.clone());
        };
        let shape = a.shape();
        let s = self.jac_shape.as_slice();
        if shape == s {
            return w.call_method1("reshape", ((self.m,),));
        }
        if batch && shape.len() == s.len() + 1 && &shape[1..] == s {
            return w.call_method1("reshape", ((shape[0], self.m),));
        }
        Ok(w.clone())
    }

    /// The shape of one point's Jacobian: `(*jac_shape, n)`.
    fn jacobian_shape(&self) -> Vec<usize> {
        let mut shape = self.jac_shape.clone();
        shape.push(self.params.n_x);
        shape
    }

    /// Columns `a..z` of a batch's `(B, len)` result, shaped `(B, *shape)`.
    fn batch_part<'py>(
        whole: &Bound<'py, PyAny>,
        b: usize,
        a: usize,
        z: usize,
        shape: &[usize],
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = whole.py();
        let part = whole.get_item((
            pyo3::types::PySlice::full(py),
            pyo3::types::PySlice::new(py, a as isize, z as isize, 1),
        ))?;
        let mut full = vec![b];
        full.extend_from_slice(shape);
        part.call_method1("reshape", (full,))
    }

    /// A sparse Jacobian or Hessian as a `scipy.sparse.csr_matrix` (the Hessian with both
    /// triangles).
    fn sparse(&self, py: Python<'_>, inputs: &[f64]) -> PyResult<Py<PyAny>> {
        let (values, pattern) = match &self.object {
            Object::SparseJacobian(j) => {
                let mut nz = vec![0.0; j.nnz()];
                j.eval(inputs, &mut nz).py_err()?;
                (nz, j.pattern())
            }
            Object::SparseHessian(h) => {
                let mut lower = vec![0.0; h.nnz()];
                h.eval(inputs, &mut lower).py_err()?;
                let mut full = vec![0.0; h.full_pattern().nnz()];
                h.expand(&lower, &mut full).py_err()?;
                (full, h.full_pattern())
            }
            _ => unreachable!("only sparse objects"),
        };
        let index = self.csr.get_or_try_init(py, || sparse_index(py, pattern))?;
        let data = arrays::vector(py, values);
        let class = index.csr_matrix.bind(py);
        if let Some(state) = self.csr_state.get(py) {
            // The first matrix's attributes, SciPy's own (its constructor checked the
            // pattern once), with this call's values: the constructor's checks cost 25 µs a
            // call, a quarter of a 10⁴-unknown Bratu Jacobian.
            let m = class.call_method1("__new__", (class,))?;
            m.getattr("__dict__")?
                .call_method1("update", (state.bind(py),))?;
            m.setattr("data", data)?;
            return Ok(m.unbind());
        }
        let (r, c) = pattern.shape();
        let m = class.call1((
            (data, index.indices.bind(py), index.indptr.bind(py)),
            (r, c),
        ))?;
        // Kept only where SciPy keeps a matrix's state in its `__dict__` (every version
        // since 1.0); otherwise each call goes through the constructor.
        if let Ok(dict) = m.getattr("__dict__").and_then(|d| d.call_method0("copy")) {
            if dict.del_item("data").is_ok() {
                let _ = self.csr_state.set(py, dict.unbind());
            }
        }
        Ok(m.unbind())
    }

    /// A batch of `b` points (`x` row-major, `b × n_x`), `v` one row per point or one for
    /// all; the flat results, `b × point_len()`.
    ///
    /// With `into`, the results go there (`b × point_len()` numbers) and the vector returned
    /// is empty: a batch with `out=` allocates no result.
    fn batch(
        &self,
        b: usize,
        x: &[f64],
        d: &[f64],
        v: (&[f64], bool),
        into: Option<&mut [f64]>,
    ) -> adjit::Result<Vec<f64>> {
        let n = self.params.n_x;
        let len = self.point_len();
        let vl = self.vector_len();
        let vector_of = |p: usize| -> &[f64] {
            match v {
                (v, true) => &v[p * vl..(p + 1) * vl],
                (v, false) => v,
            }
        };
        let object = self.object.prepared();
        let fi = object.n_inputs();
        let one = match self.extra {
            Extra::None => 0,
            Extra::Vector => vl,
            Extra::Ones(m) => m,
        };
        if self.params.n_params() + one != fi {
            // A point's parameters and vector must be exactly the object's inputs; a row
            // left partly unwritten would be computed silently with zeros.
            return Err(adjit::Error::ArgumentLength {
                func: self.name.clone(),
                what: format!("one point's inputs (x, data and {})", self.what.name()),
                expected: adjit::Expected::Count(fi),
                got: self.params.n_params() + one,
            });
        }
        // The object's flat inputs, one row per point (the caller's `x` when it is that).
        let owned_in;
        let flat_in: &[f64] = if d.is_empty() && self.extra == Extra::None {
            x
        } else {
            let mut rows = vec![0.0; b * fi];
            let mut tmp = Vec::new();
            for (p, row) in rows.chunks_exact_mut(fi.max(1)).enumerate() {
                let inputs = self.params.inputs(&x[p * n..(p + 1) * n], d, &mut tmp);
                self.write_inputs(inputs, vector_of(p), row);
            }
            owned_in = rows;
            &owned_in
        };
        if self.returns_all() && fi > 0 {
            // Results straight into the caller's array, or a new vector the code writes.
            return match into {
                Some(out) => {
                    object.call_batch(flat_in, out, self.threads)?;
                    Ok(Vec::new())
                }
                None => object.call_batch_vec(flat_in, self.threads),
            };
        }
        let mut owned = Vec::new();
        let out: &mut [f64] = match into {
            Some(dst) => dst,
            None => {
                owned = vec![0.0; b * len];
                &mut owned
            }
        };
        object.call_batch_picked(flat_in, &self.picks, out, self.threads)?;
        Ok(owned)
    }

    /// Shape a batch's flat results.
    fn shape_batch(
        &self,
        py: Python<'_>,
        b: usize,
        whole: Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let n = self.params.n_x;
        let len = self.point_len();
        let col = |i: usize| whole.get_item((pyo3::types::PySlice::full(py), i));
        let cols = |a: usize, z: usize| {
            whole.get_item((
                pyo3::types::PySlice::full(py),
                pyo3::types::PySlice::new(py, a as isize, z as isize, 1),
            ))
        };
        let part = |a: usize, z: usize, shape: &[usize]| Self::batch_part(&whole, b, a, z, shape);
        Ok(match self.what {
            What::Eval => part(0, len, &self.out_shape)?.unbind(),
            What::ValueAndGrad => PyTuple::new(py, [col(0)?, cols(1, 1 + n)?])?
                .into_any()
                .unbind(),
            What::Grad | What::Hvp | What::Inverse => whole.unbind(),
            What::Jvp => PyTuple::new(
                py,
                [
                    part(0, self.m_all, &self.out_shape)?,
                    part(self.m_all, len, &self.jac_shape)?,
                ],
            )?
            .into_any()
            .unbind(),
            What::Vjp => PyTuple::new(
                py,
                [
                    part(0, self.m_all, &self.out_shape)?,
                    cols(self.m_all, len)?,
                ],
            )?
            .into_any()
            .unbind(),
            What::Jacobian => part(0, len, &self.jacobian_shape())?.unbind(),
            What::Hessian => whole.call_method1("reshape", ((b, n, n),))?.unbind(),
        })
    }
}

#[pymethods]
impl Transform {
    /// Call the transform: `t(x)` or `t(x, v)` (`jvp`, `hvp`, `inverse`: `v`; `vjp`: `w`),
    /// with `data=` for a function with data inputs and `out=` (grad, value_and_grad: an
    /// array for the gradient) to reuse a buffer.
    #[pyo3(signature = (*args, data=None, out=None))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        data: Option<&Bound<'_, PyAny>>,
        out: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let policy = self.policy;
        let expected = 1 + usize::from(self.what.vector_name().is_some());
        if args.len() != expected {
            let names = match self.what.vector_name() {
                Some(v) => format!("(x, {v})"),
                None => "(x)".to_string(),
            };
            return Err(error(
                Kind::Shape,
                format!(
                    "{} takes {names}: {expected} argument{}, got {}",
                    self.what.name(),
                    if expected == 1 { "" } else { "s" },
                    args.len()
                ),
            ));
        }
        let n = self.params.n_x;
        let x_obj = args.get_item(0)?;
        if out.is_none() {
            // A batch's results are checked before anything is read or copied.
            if let Ok(a) = x_obj.cast::<numpy::PyUntypedArray>() {
                if let [b, _] = a.shape() {
                    self.check_result(*b, self.point_len())?;
                }
            }
        }
        let xa = Arg::read(&x_obj, "x", policy)?;
        let va = match self.what.vector_name() {
            Some(name) => {
                let batch = xa.ndim() == 2;
                Some(Arg::read(
                    &self.flat_w(&args.get_item(1)?, batch)?,
                    name,
                    policy,
                )?)
            }
            None => None,
        };
        let da = data.map(|d| Arg::read(d, "data", policy)).transpose()?;
        let d = self.params.data(&da, policy)?;
        let vl = self.vector_len();
        match xa.ndim() {
            0 | 1 => {
                let x = xa.vector("x", n, policy)?;
                let v: &[f64] = match (&va, self.what.vector_name()) {
                    (Some(a), Some(name)) => a.vector(name, vl, policy)?,
                    _ => &[],
                };
                let mut buf = Vec::new();
                let inputs = self.params.inputs(x, d, &mut buf);
                if matches!(
                    self.object,
                    Object::SparseJacobian(_) | Object::SparseHessian(_)
                ) {
                    return self.sparse(py, inputs);
                }
                let mut flat = vec![0.0; self.point_len()];
                self.point(inputs, v, &mut flat).py_err()?;
                if let Some(out) = out {
                    return self.write_out(py, out, flat);
                }
                self.shape_point(py, flat)
            }
            2 => {
                if matches!(
                    self.object,
                    Object::SparseJacobian(_) | Object::SparseHessian(_)
                ) {
                    return Err(error(
                        Kind::Shape,
                        "sparse matrices are computed one point at a time: x must be 1-D",
                    ));
                }
                let (b, x) = xa.rows("x", n, 0, policy)?;
                let v: (&[f64], bool) = match (&va, self.what.vector_name()) {
                    (Some(a), Some(name)) if a.ndim() == 2 => {
                        let (bv, v) = a.rows(name, vl, 0, policy)?;
                        if bv != b {
                            return Err(arrays::shape_error(
                                name,
                                &format!("({b}, {vl}) or ({vl},)"),
                                a.shape(),
                            ));
                        }
                        (v, true)
                    }
                    (Some(a), Some(name)) => (a.vector(name, vl, policy)?, false),
                    _ => (&[], false),
                };
                let len = self.point_len();
                if let Some(out) = out {
                    // The caller's (B, point) array: no result allocated (a scratch array
                    // only when the batch takes several blocks, see `run_batch`).
                    let mut w = arrays::out_array(out, &[b, len])?;
                    let dst = w.as_slice_mut().map_err(|_| {
                        error(Kind::DType, "out= is no longer aligned and C-contiguous")
                    })?;
                    self.run_batch(py, b, x, d, v, dst, true)?;
                    drop(w);
                    return self.shape_batch(py, b, out.clone());
                }
                let mut flat = self.result_vec(b, len)?;
                self.run_batch(py, b, x, d, v, &mut flat, false)?;
                self.shape_batch(py, b, arrays::array(py, flat, &[b, len])?)
            }
            _ => Err(arrays::shape_error(
                "x",
                &format!("({n},) or (B, {n})"),
                xa.shape(),
            )),
        }
    }

    fn __repr__(&self) -> &str {
        &self.repr
    }
}

impl Transform {
    /// `out=`: the gradient (or the transform's array result) written into the caller's
    /// array, which must have the result's exact shape ([`arrays::out_array`]).
    fn write_out(
        &self,
        py: Python<'_>,
        out: &Bound<'_, PyAny>,
        flat: Vec<f64>,
    ) -> PyResult<Py<PyAny>> {
        let (value, rest) = match self.what {
            What::ValueAndGrad => (Some(flat[0]), &flat[1..]),
            What::Grad | What::Hvp | What::Inverse | What::Jacobian | What::Hessian => {
                (None, &flat[..])
            }
            _ => {
                return Err(error(
                    Kind::Option,
                    format!("{} does not take out=", self.what.name()),
                ))
            }
        };
        let shape: Vec<usize> = match self.what {
            What::Jacobian => self.jacobian_shape(),
            What::Hessian => vec![self.params.n_x, self.params.n_x],
            _ => vec![rest.len()],
        };
        {
            let mut w = arrays::out_array(out, &shape)?;
            let s = w
                .as_slice_mut()
                .map_err(|_| error(Kind::DType, "out= is no longer aligned and C-contiguous"))?;
            s.copy_from_slice(rest);
        }
        Ok(match value {
            Some(y) => PyTuple::new(py, [PyFloat::new(py, y).into_any(), out.clone()])?
                .into_any()
                .unbind(),
            None => out.clone().unbind(),
        })
    }
}

/// Numbers computed per block of a batch between two looks for Ctrl-C: the work of a block is
/// bounded, so an interrupt is seen within one block's time.
const BLOCK_NUMBERS: usize = 1 << 18;

impl Transform {
    fn func_name(&self) -> &str {
        &self.name
    }

    /// Refuse a batch result this machine cannot hold, before anything is allocated.
    fn check_result(&self, b: usize, len: usize) -> PyResult<()> {
        adjit::memory::check_f64s(
            self.func_name(),
            &format!(
                "the batch result of {} ({b} × {len} numbers)",
                self.what.name()
            ),
            (b as u128).saturating_mul(len as u128),
            "pass fewer points per call",
        )
        .py_err()
    }

    /// A zeroed, memory-checked vector for a batch's `b × len` results.
    fn result_vec(&self, b: usize, len: usize) -> PyResult<Vec<f64>> {
        self.check_result(b, len)?;
        adjit::memory::zeros(
            self.func_name(),
            &format!("the batch result of {}", self.what.name()),
            b * len,
            "pass fewer points per call",
        )
        .py_err()
    }

    /// Points per block: enough to keep the threads busy, few enough that a block's work is
    /// bounded ([`BLOCK_NUMBERS`] inputs and results).
    fn block_points(&self) -> usize {
        let per_point = self.params.n_x + self.vector_len() + self.point_len();
        (BLOCK_NUMBERS / per_point.max(1)).max(64)
    }

    /// A batch into `dst` (`b × point_len()`), in blocks of [`Self::block_points`] points with
    /// a look for signals (Ctrl-C) between two blocks, the GIL released while a block runs.
    /// When `dst` is the caller's (`out=`) and the batch takes several blocks, it is computed
    /// into a scratch array and copied into `dst` at the end, so an interrupted call leaves
    /// `out=` untouched.
    #[allow(clippy::too_many_arguments)]
    fn run_batch(
        &self,
        py: Python<'_>,
        b: usize,
        x: &[f64],
        d: &[f64],
        v: (&[f64], bool),
        dst: &mut [f64],
        callers: bool,
    ) -> PyResult<()> {
        let block = self.block_points();
        if b <= block {
            if b >= 64 {
                py.detach(|| self.batch(b, x, d, v, Some(dst))).py_err()?;
            } else {
                self.batch(b, x, d, v, Some(dst)).py_err()?;
            }
            return Ok(());
        }
        let (n, len, vl) = (self.params.n_x, self.point_len(), self.vector_len());
        let mut scratch = if callers {
            self.result_vec(b, len)?
        } else {
            Vec::new()
        };
        let target: &mut [f64] = if callers { &mut scratch } else { &mut *dst };
        py.detach(|| -> PyResult<()> {
            let mut start = 0;
            while start < b {
                let end = (start + block).min(b);
                let vb = match v {
                    (all, true) => (&all[start * vl..end * vl], true),
                    one => one,
                };
                self.batch(
                    end - start,
                    &x[start * n..end * n],
                    d,
                    vb,
                    Some(&mut target[start * len..end * len]),
                )
                .py_err()?;
                start = end;
                if start < b {
                    Python::attach(|py| py.check_signals())?;
                }
            }
            Ok(())
        })?;
        if callers {
            dst.copy_from_slice(&scratch);
        }
        Ok(())
    }
}

/// The index arrays of `pattern` for `scipy.sparse.csr_matrix`, read-only, in the index type
/// SciPy would pick (int32 when every index fits, so it keeps them without a copy).
fn sparse_index(py: Python<'_>, pattern: &adjit::SparsityPattern) -> PyResult<SparseIndex> {
    let scipy = PyModule::import(py, "scipy.sparse").map_err(|e| {
        error(
            Kind::Other,
            format!("sparse=True returns scipy.sparse matrices; install scipy ({e})"),
        )
    })?;
    let (r, c) = pattern.shape();
    let fits_i32 = [pattern.nnz(), r, c]
        .iter()
        .all(|&n| i32::try_from(n).is_ok());
    let (indices, indptr) = if fits_i32 {
        // Every value fits (checked above): nnz bounds indptr, the columns bound indices.
        let indptr: Vec<i32> = pattern.indptr().iter().map(|&i| i as i32).collect();
        let indices: Vec<i32> = pattern.indices().iter().map(|&i| i as i32).collect();
        (
            numpy::PyArray1::from_vec(py, indices).into_any(),
            numpy::PyArray1::from_vec(py, indptr).into_any(),
        )
    } else {
        let indptr: Vec<i64> = pattern.indptr().iter().map(|&i| i as i64).collect();
        let indices: Vec<i64> = pattern.indices().iter().map(|&i| i64::from(i)).collect();
        (
            numpy::PyArray1::from_vec(py, indices).into_any(),
            numpy::PyArray1::from_vec(py, indptr).into_any(),
        )
    };
    for a in [&indices, &indptr] {
        a.call_method("setflags", (), Some(&[("write", false)].into_py_dict(py)?))?;
    }
    Ok(SparseIndex {
        indices: indices.unbind(),
        indptr: indptr.unbind(),
        csr_matrix: scipy.getattr("csr_matrix")?.unbind(),
    })
}

fn boxed<P: Prepared + 'static>(object: P) -> Box<dyn Prepared> {
    Box::new(object)
}

/// The ranges of the object's flat outputs that `what` returns (adjacent ones merged).
fn picks(what: What, layout: &adjit::Layout, value_at: usize) -> Vec<std::ops::Range<usize>> {
    let all = 0..layout.n_outputs();
    let ranges = match what {
        What::Eval | What::Jvp | What::Vjp => vec![all],
        What::ValueAndGrad => {
            let y = layout.output(Part::Outputs).start + value_at;
            vec![y..y + 1, layout.output(Part::Gradient)]
        }
        What::Grad => vec![layout.output(Part::Gradient)],
        What::Hvp => vec![layout.output(Part::HessianVector)],
        What::Jacobian => vec![layout.output(Part::Jacobian)],
        What::Hessian => vec![layout.output(Part::Hessian)],
        What::Inverse => vec![layout.output(Part::Product)],
    };
    let mut merged: Vec<std::ops::Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if last.end == r.start => last.end = r.end,
            _ => merged.push(r),
        }
    }
    merged
}

/// Two buffers of `a` and `b` numbers for one point's flat inputs and outputs: on the stack
/// when they are small, else the thread's own, kept between calls, so a call on a small
/// program allocates nothing.
fn with_buffers<R>(a: usize, b: usize, f: impl FnOnce(&mut [f64], &mut [f64]) -> R) -> R {
    const STACK: usize = 32;
    if a <= STACK && b <= STACK {
        let (mut x, mut y) = ([0.0; STACK], [0.0; STACK]);
        return f(&mut x[..a], &mut y[..b]);
    }
    thread_local! {
        static BUFFERS: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    // A reentrant call (none today) would find the buffer taken and use a new one.
    let mut owned = BUFFERS.with(|cell| {
        cell.try_borrow_mut()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    });
    owned.resize(a + b, 0.0);
    let (x, y) = owned.split_at_mut(a);
    let result = f(x, y);
    BUFFERS.with(|cell| {
        if let Ok(mut v) = cell.try_borrow_mut() {
            *v = owned;
        }
    });
    result
}
