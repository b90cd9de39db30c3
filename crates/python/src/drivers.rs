//! `adjit.map(kernel)` (a kernel over rows of data, summed in a fixed order) and
//! `adjit.steps(step, n)` (one step iterated N times, reverse mode under a memory strategy).

use adjit::map::{MapOptions, MappedKernel};
use adjit::steps::IteratedStep;
use adjit::{Options, Part, Strategy};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyTuple};

use crate::arrays::{self, Arg, Policy};
use crate::errors::{error, IntoPy, Kind};
use crate::function::Function;

/// A kernel `k(θ, row)` mapped over the rows of a `(R, n_data)` array. Sums are taken in
/// blocks of `block_rows` rows in row order, so results depend on `block_rows` but not on
/// `threads`.
#[pyclass(frozen, module = "adjit")]
pub struct Map {
    kernel: MappedKernel,
    policy: Policy,
    name: String,
}

impl Map {
    pub fn new(f: &Function, threads: usize, block_rows: usize, lanes: usize) -> PyResult<Map> {
        let map = MapOptions {
            threads,
            block_rows,
            lanes,
        };
        Ok(Map {
            kernel: MappedKernel::with_options(&f.func, map, &Options::default()).py_err()?,
            policy: Policy::default(),
            name: f.func.name.clone(),
        })
    }

    fn theta<'a>(&self, a: &'a Arg<'_>) -> PyResult<&'a [f64]> {
        a.vector("theta", self.kernel.n_theta(), self.policy)
    }

    /// The rows; `first_row` is the index of `rows[0]` in the caller's whole array (a Dask
    /// block's offset), so that messages name the caller's row.
    fn rows<'a>(&self, a: &'a Arg<'_>, first_row: usize) -> PyResult<(usize, &'a [f64])> {
        let r = self.kernel.row_len();
        a.rows("rows", r, first_row, self.policy)
    }

    fn m(&self) -> usize {
        self.kernel.n_outputs()
    }

    /// A memory-checked zeroed array of `rows × width` results.
    fn zeros(&self, what: &str, rows: usize, width: usize) -> PyResult<Vec<f64>> {
        let count = rows.saturating_mul(width);
        adjit::memory::zeros(
            &self.name,
            &format!("{what} ({rows} × {width})"),
            count,
            "pass fewer rows per call (or use eval_sum / value_and_grad, which sum)",
        )
        .py_err()
    }
}

fn scalar_or_array(py: Python<'_>, v: Vec<f64>) -> Py<PyAny> {
    if v.len() == 1 {
        PyFloat::new(py, v[0]).into_any().unbind()
    } else {
        arrays::vector(py, v).into_any().unbind()
    }
}

#[pymethods]
impl Map {
    /// Per row: `k(θ, rowᵢ)`, shape `(R,)` for one output, else `(R, m)`.
    #[pyo3(signature = (theta, rows, *, row_offset=0))]
    fn eval(
        &self,
        py: Python<'_>,
        theta: &Bound<'_, PyAny>,
        rows: &Bound<'_, PyAny>,
        row_offset: usize,
    ) -> PyResult<Py<PyAny>> {
        let (ta, ra) = (
            Arg::read(theta, "theta", self.policy)?,
            Arg::read(rows, "rows", self.policy)?,
        );
        let (t, (r, d)) = (self.theta(&ta)?, self.rows(&ra, row_offset)?);
        let m = self.m();
        let mut y = self.zeros("the per-row values", r, m)?;
        py.detach(|| self.kernel.eval(t, d, &mut y)).py_err()?;
        if m == 1 {
            return Ok(arrays::vector(py, y).into_any().unbind());
        }
        Ok(arrays::array(py, y, &[r, m])?.unbind())
    }

    /// `Σᵢ k(θ, rowᵢ)`: a float for one output, else an array.
    #[pyo3(signature = (theta, rows, *, row_offset=0))]
    fn eval_sum(
        &self,
        py: Python<'_>,
        theta: &Bound<'_, PyAny>,
        rows: &Bound<'_, PyAny>,
        row_offset: usize,
    ) -> PyResult<Py<PyAny>> {
        let (ta, ra) = (
            Arg::read(theta, "theta", self.policy)?,
            Arg::read(rows, "rows", self.policy)?,
        );
        let (t, (_, d)) = (self.theta(&ta)?, self.rows(&ra, row_offset)?);
        let mut y = vec![0.0; self.m()];
        py.detach(|| self.kernel.eval_sum(t, d, &mut y)).py_err()?;
        Ok(scalar_or_array(py, y))
    }

    /// `(Σᵢ k(θ, rowᵢ), ∇θ Σᵢ k(θ, rowᵢ))` for a kernel with one float output.
    #[pyo3(signature = (theta, rows, *, row_offset=0))]
    fn value_and_grad<'py>(
        &self,
        py: Python<'py>,
        theta: &Bound<'py, PyAny>,
        rows: &Bound<'py, PyAny>,
        row_offset: usize,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let (ta, ra) = (
            Arg::read(theta, "theta", self.policy)?,
            Arg::read(rows, "rows", self.policy)?,
        );
        let (t, (_, d)) = (self.theta(&ta)?, self.rows(&ra, row_offset)?);
        let mut g = vec![0.0; self.kernel.n_theta()];
        let y = py.detach(|| self.kernel.gradient(t, d, &mut g)).py_err()?;
        PyTuple::new(
            py,
            [
                PyFloat::new(py, y).into_any(),
                arrays::vector(py, g).into_any(),
            ],
        )
    }

    /// Per row: `(k(θ, rowᵢ), (∂k/∂θ)ᵀ·w)`, shapes `(R,)` or `(R, m)` and `(R, n_theta)`;
    /// `w` defaults to ones (the per-row gradients of a one-output kernel).
    #[pyo3(signature = (theta, rows, w=None, *, row_offset=0))]
    fn vjp<'py>(
        &self,
        py: Python<'py>,
        theta: &Bound<'py, PyAny>,
        rows: &Bound<'py, PyAny>,
        w: Option<&Bound<'py, PyAny>>,
        row_offset: usize,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let (ta, ra) = (
            Arg::read(theta, "theta", self.policy)?,
            Arg::read(rows, "rows", self.policy)?,
        );
        let (t, (r, d)) = (self.theta(&ta)?, self.rows(&ra, row_offset)?);
        let mf = self.kernel.n_float_outputs();
        let wa = w.map(|w| Arg::read(w, "w", self.policy)).transpose()?;
        let ones = vec![1.0; mf];
        let w = match &wa {
            Some(a) => a.vector("w", mf, self.policy)?,
            None => &ones,
        };
        let (m, n) = (self.m(), self.kernel.n_theta());
        let mut y = self.zeros("the per-row values", r, m)?;
        let mut g = self.zeros("the per-row gradients", r, n)?;
        py.detach(|| self.kernel.vjp(t, d, w, &mut y, &mut g))
            .py_err()?;
        let y = if m == 1 {
            arrays::vector(py, y).into_any()
        } else {
            arrays::array(py, y, &[r, m])?
        };
        PyTuple::new(py, [y, arrays::array(py, g, &[r, n])?])
    }

    /// `Σᵢ ∇²θ k(θ, rowᵢ)·v` for a kernel with one float output.
    #[pyo3(signature = (theta, rows, v, *, row_offset=0))]
    fn hvp<'py>(
        &self,
        py: Python<'py>,
        theta: &Bound<'py, PyAny>,
        rows: &Bound<'py, PyAny>,
        v: &Bound<'py, PyAny>,
        row_offset: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (ta, ra) = (
            Arg::read(theta, "theta", self.policy)?,
            Arg::read(rows, "rows", self.policy)?,
        );
        let va = Arg::read(v, "v", self.policy)?;
        let (t, (_, d)) = (self.theta(&ta)?, self.rows(&ra, row_offset)?);
        let n = self.kernel.n_theta();
        let v = va.vector("v", n, self.policy)?;
        let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
        py.detach(|| self.kernel.hvp_sum(t, d, v, &mut g, &mut hv))
            .py_err()?;
        Ok(arrays::vector(py, hv).into_any())
    }

    /// The number of parameters θ.
    #[getter]
    fn n_theta(&self) -> usize {
        self.kernel.n_theta()
    }

    /// The numbers per row.
    #[getter]
    fn row_len(&self) -> usize {
        self.kernel.row_len()
    }

    fn __repr__(&self) -> String {
        format!(
            "<adjit.map of @{}: θ of {}, rows of {}>",
            self.name,
            self.kernel.n_theta(),
            self.kernel.row_len()
        )
    }
}

/// A step `s' = F(s, θ)` iterated N times; `x = (s₀, θ)`.
#[pyclass(frozen, module = "adjit")]
pub struct Steps {
    it: IteratedStep,
    policy: Policy,
    name: String,
}

impl Steps {
    pub fn new(f: &Function, n: usize, strategy: &str) -> PyResult<Steps> {
        let strategy: Strategy = crate::transforms::byte_budget(strategy).parse().map_err(
            |e: adjit::diff::checkpoint::ParseStrategyError| error(Kind::Option, e.to_string()),
        )?;
        Ok(Steps {
            it: IteratedStep::new(&f.func, n, strategy).py_err()?,
            policy: Policy::default(),
            name: f.func.name.clone(),
        })
    }

    fn len(&self, part: Part, input: bool) -> usize {
        let l = self.it.layout();
        if input {
            l.input(part).len()
        } else {
            l.output(part).len()
        }
    }
}

#[pymethods]
impl Steps {
    /// `F(x)`: the state after N steps (or the objective).
    fn eval(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let xa = Arg::read(x, "x", self.policy)?;
        let x = xa.vector("x", self.len(Part::Inputs, true), self.policy)?;
        let mut y = vec![0.0; self.len(Part::Outputs, false)];
        py.detach(|| self.it.eval(x, &mut y)).py_err()?;
        Ok(arrays::vector(py, y).into_any().unbind())
    }

    /// `(F(x), J·v)`.
    fn jvp<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        v: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let (xa, va) = (
            Arg::read(x, "x", self.policy)?,
            Arg::read(v, "v", self.policy)?,
        );
        let x = xa.vector("x", self.len(Part::Inputs, true), self.policy)?;
        let v = va.vector("v", self.len(Part::Gradient, false), self.policy)?;
        let mut y = vec![0.0; self.len(Part::Outputs, false)];
        let mut ydot = vec![0.0; self.len(Part::Cotangent, true)];
        py.detach(|| self.it.jvp(x, v, &mut y, &mut ydot))
            .py_err()?;
        PyTuple::new(py, [arrays::vector(py, y), arrays::vector(py, ydot)])
    }

    /// `(F(x), Jᵀ·w)` under the strategy.
    fn vjp<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        w: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let (xa, wa) = (
            Arg::read(x, "x", self.policy)?,
            Arg::read(w, "w", self.policy)?,
        );
        let x = xa.vector("x", self.len(Part::Inputs, true), self.policy)?;
        let w = wa.vector("w", self.len(Part::Cotangent, true), self.policy)?;
        let mut y = vec![0.0; self.len(Part::Outputs, false)];
        let mut g = vec![0.0; self.len(Part::Gradient, false)];
        py.detach(|| self.it.vjp(x, w, &mut y, &mut g)).py_err()?;
        PyTuple::new(py, [arrays::vector(py, y), arrays::vector(py, g)])
    }

    /// Every state `s₁ … s_N`, shape `(N, n_state)`.
    fn trajectory<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let xa = Arg::read(x, "x", self.policy)?;
        let x = xa.vector("x", self.len(Part::Inputs, true), self.policy)?;
        let (n, s) = (self.it.n_steps(), self.it.n_state());
        let mut states = adjit::memory::zeros(
            &self.name,
            &format!("the trajectory ({n} × {s})"),
            n.saturating_mul(s),
            "use eval (the last state) or fewer steps",
        )
        .py_err()?;
        py.detach(|| self.it.trajectory(x, &mut states)).py_err()?;
        arrays::array(py, states, &[n, s])
    }

    /// The reverse sweep's plan as `adjit.StepStats(steps, snapshots, forward_steps,
    /// peak_bytes)`, a NamedTuple with documented fields.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let s = self.it.stats();
        let class = PyModule::import(py, "adjit._stats")?.getattr("StepStats")?;
        class.call1((s.steps, s.snapshots, s.forward_steps, s.peak_bytes))
    }
}
