//! `adjit.Function`: a verified straight-line program (traced or parsed) that pickles as its IR
//! text, and how Python arguments fill its parameters.

use std::path::Path;
use std::sync::OnceLock;

use adjit::{Compiled, Mode};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::arrays::{Arg, Policy};
use crate::errors::{error, IntoPy, Kind};

/// A straight-line program. `str(f)` is its IR text; `f(x)` evaluates it (compiled on the
/// first call); `f.dump(stage)` renders a pipeline stage.
#[pyclass(frozen, module = "adjit")]
pub struct Function {
    pub func: adjit::Function,
    pub params: ParamMap,
    /// The shape results take (`()` for one number): what a traced function returned, else
    /// `()` for one output and `(m,)` for several. Its product is the number of outputs.
    pub out_shape: Vec<usize>,
    primal: OnceLock<Compiled>,
}

/// Where each parameter of a function comes from: the differentiated inputs `x` (float
/// parameters not marked `data`) or the data `d` (every other parameter), each in signature
/// order.
#[derive(Clone, Debug)]
pub struct ParamMap {
    sources: Vec<Source>,
    pub n_x: usize,
    pub n_data: usize,
    /// `x` then `d` is the signature order, so the inputs are the two concatenated.
    pub in_order: bool,
}

#[derive(Clone, Copy, Debug)]
enum Source {
    X(usize),
    D(usize),
}

impl ParamMap {
    fn of(func: &adjit::Function) -> ParamMap {
        let (mut n_x, mut n_data) = (0, 0);
        let sources: Vec<Source> = func
            .params()
            .map(|p| {
                if func.ty(p).is_float() && !func.is_data(p) {
                    n_x += 1;
                    Source::X(n_x - 1)
                } else {
                    n_data += 1;
                    Source::D(n_data - 1)
                }
            })
            .collect();
        let in_order = sources.iter().enumerate().all(|(i, s)| {
            matches!(*s, Source::X(j) if j == i) || matches!(*s, Source::D(j) if j + n_x == i)
        });
        ParamMap {
            sources,
            n_x,
            n_data,
            in_order,
        }
    }

    /// Write the parameters in signature order to `out` (which has one slot per parameter).
    pub fn fill(&self, x: &[f64], d: &[f64], out: &mut [f64]) {
        for (slot, s) in out.iter_mut().zip(&self.sources) {
            *slot = match *s {
                Source::X(i) => x[i],
                Source::D(j) => d[j],
            };
        }
    }

    pub fn n_params(&self) -> usize {
        self.sources.len()
    }

    /// Read the data argument: required (and of `n_data` numbers) exactly when the function
    /// has data parameters.
    pub fn data<'a>(&self, data: &'a Option<Arg<'_>>, policy: Policy) -> PyResult<&'a [f64]> {
        match (data, self.n_data) {
            (None, 0) => Ok(&[]),
            (None, n) => Err(error(
                Kind::Shape,
                format!("this function has {n} data inputs: pass data= with {n} numbers"),
            )),
            (Some(_), 0) => Err(error(
                Kind::Shape,
                "this function has no data inputs, but data= was given",
            )),
            (Some(d), n) => d.vector("data", n, policy),
        }
    }

    /// The flat input of one point: the parameters in signature order.
    pub fn inputs<'a>(&self, x: &'a [f64], d: &[f64], buf: &'a mut Vec<f64>) -> &'a [f64] {
        if d.is_empty() {
            return x;
        }
        buf.clear();
        buf.resize(self.n_params(), 0.0);
        if self.in_order {
            buf[..x.len()].copy_from_slice(x);
            buf[x.len()..].copy_from_slice(d);
        } else {
            self.fill(x, d, buf);
        }
        buf
    }
}

impl Function {
    pub fn new(func: adjit::Function) -> Function {
        let out_shape = match func.n_outputs() {
            1 => vec![],
            m => vec![m],
        };
        Function {
            params: ParamMap::of(&func),
            out_shape,
            func,
            primal: OnceLock::new(),
        }
    }

    /// A function whose results take `shape`, or the default shape (see [`Function::new`])
    /// when the product of `shape` is not the number of outputs.
    pub fn with_shape(func: adjit::Function, shape: Vec<usize>) -> Function {
        let mut f = Function::new(func);
        if shape.iter().product::<usize>() == f.func.n_outputs() {
            f.out_shape = shape;
        }
        f
    }

    /// The number of instructions (values that are not parameters).
    pub fn n_instructions(&self) -> usize {
        self.func.n_values() - self.func.n_params
    }
}

/// Programs above this many instructions warn once, when traced or parsed: compiling their
/// derivatives takes seconds to minutes.
pub const LARGE_PROGRAM: usize = 100_000;

/// Warn (`adjit.PerformanceWarning`) when `f` is larger than [`LARGE_PROGRAM`], with its size,
/// an estimate of what compiling its gradient costs and what to do instead. The rates are
/// measured ones, rounded up (the traced NumPy Rosenbrock, 8·10⁵ instructions: trace 3.9 s,
/// value_and_grad compiled in 4.6 s, on 2 shared cores).
pub fn warn_if_large(py: Python<'_>, f: &Function, made_by: &str) -> PyResult<()> {
    let n = f.n_instructions();
    if n <= LARGE_PROGRAM {
        return Ok(());
    }
    let message = format!(
        "{made_by} gave a program of {n} instructions (more than {LARGE_PROGRAM}): compiling \
         its gradient takes up to roughly {:.0} s and {:.0} MB (about 10 µs and 1.2 kB per \
         instruction; less when the program repeats one computation, which adjit then \
         compiles as loops: docs/rolling.md). A loop over data rows unrolls into the \
         program: trace one row as a kernel with data inputs and use adjit.map(kernel) over \
         the rows",
        n as f64 * 1e-5,
        n as f64 * 1.2e-3
    );
    let category = PyModule::import(py, "adjit._errors")?.getattr("PerformanceWarning")?;
    let message = std::ffi::CString::new(message)
        .map_err(|_| error(Kind::Other, "warning message with a NUL byte"))?;
    PyErr::warn(py, &category, &message, 1)
}

/// `flat` as a float (shape `()`) or an array of `shape`.
pub fn shaped(py: Python<'_>, flat: Vec<f64>, shape: &[usize]) -> PyResult<Py<PyAny>> {
    match (shape, flat.as_slice()) {
        ([], [y]) => Ok(pyo3::types::PyFloat::new(py, *y).into_any().unbind()),
        _ => Ok(crate::arrays::array(py, flat, shape)?.unbind()),
    }
}

/// `adjit._adjit._restore(text, shape)`: a pickled function (its IR text and result shape).
#[pyfunction]
#[pyo3(name = "_restore")]
pub fn restore(text: &str, shape: Vec<usize>) -> PyResult<Function> {
    let f = parse(text, None, "<pickle>")?;
    Ok(Function::with_shape(f.func, shape))
}

/// Pick one function of a parsed file: the one named `name`, else the only one.
fn pick(mut funcs: Vec<adjit::Function>, name: Option<&str>, file: &str) -> PyResult<Function> {
    let func = match name {
        Some(name) => {
            let at = funcs.iter().position(|f| f.name == name).ok_or_else(|| {
                error(
                    Kind::Parse,
                    format!("{file}: no function @{name}; it defines {}", names(&funcs)),
                )
            })?;
            funcs.swap_remove(at)
        }
        None if funcs.len() == 1 => funcs.swap_remove(0),
        None => {
            return Err(error(
                Kind::Parse,
                format!(
                    "{file}: defines {} functions ({}); pass name= to choose one",
                    funcs.len(),
                    names(&funcs)
                ),
            ))
        }
    };
    Ok(Function::new(func))
}

fn names(funcs: &[adjit::Function]) -> String {
    if funcs.is_empty() {
        return "no functions".into();
    }
    funcs
        .iter()
        .map(|f| format!("@{}", f.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `adjit.parse(text, name=None, file="<string>")`.
pub fn parse(text: &str, name: Option<&str>, file: &str) -> PyResult<Function> {
    pick(adjit::load_str(text, file).py_err()?, name, file)
}

/// The largest IR file `adjit.load` reads (1 GiB): far beyond any program the JIT compiles in
/// reasonable time, and a bound on what a mistaken path can make it read.
const MAX_LOAD_BYTES: u64 = 1 << 30;

/// What kind of thing a non-regular file is, for messages.
#[cfg(unix)]
fn file_kind(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// What kind of thing a non-regular file is, for messages.
#[cfg(not(unix))]
fn file_kind(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// Read the IR text at `path`: a regular file of at most [`MAX_LOAD_BYTES`], checked before it
/// is opened (opening a FIFO would wait for a writer) and again once open.
fn read_ir(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file = path.display();
    let check = |meta: std::fs::Metadata| -> Result<(), String> {
        if !meta.is_file() {
            return Err(format!(
                "{file}: is {}, not a regular file; adjit.load reads .ir text files",
                file_kind(meta.file_type())
            ));
        }
        if meta.len() > MAX_LOAD_BYTES {
            return Err(format!(
                "{file}: {} is larger than the {} an IR file may have; is this the right file?",
                adjit::memory::human_bytes(u128::from(meta.len())),
                adjit::memory::human_bytes(u128::from(MAX_LOAD_BYTES))
            ));
        }
        Ok(())
    };
    check(std::fs::metadata(path).map_err(|e| format!("{file}: {e}"))?)?;
    let f = std::fs::File::open(path).map_err(|e| format!("{file}: {e}"))?;
    check(f.metadata().map_err(|e| format!("{file}: {e}"))?)?;
    let mut bytes = Vec::new();
    f.take(MAX_LOAD_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{file}: {e}"))?;
    if bytes.len() as u64 > MAX_LOAD_BYTES {
        return Err(format!(
            "{file}: grew beyond the 1 GiB an IR file may have while read"
        ));
    }
    Ok(bytes)
}

/// `adjit.load(path, name=None)`: read and parse with the GIL released.
pub fn load(py: Python<'_>, path: &Path, name: Option<&str>) -> PyResult<Function> {
    let file = path.display().to_string();
    let parsed = py.detach(|| -> Result<Vec<adjit::Function>, String> {
        let bytes = read_ir(path)?;
        let text = adjit::ir::text::decode_source(&bytes).map_err(|e| format!("{file}:{e}"))?;
        adjit::load_str(text, &file).map_err(|e| e.to_string())
    });
    pick(parsed.map_err(|m| error(Kind::Parse, m))?, name, &file)
}

#[pymethods]
impl Function {
    /// The IR text.
    fn __str__(&self) -> String {
        self.func.to_string()
    }

    fn __repr__(&self) -> String {
        format!(
            "<adjit.Function @{}: {} inputs, {} data, {} outputs, {} instructions>",
            self.func.name,
            self.params.n_x,
            self.params.n_data,
            self.func.n_outputs(),
            self.n_instructions()
        )
    }

    /// Pickles as its IR text and result shape (so it travels to other processes, e.g. Dask
    /// workers).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let module = PyModule::import(py, "adjit._adjit")?;
        let restore = module.getattr("_restore")?;
        let shape = PyTuple::new(py, &self.out_shape)?;
        PyTuple::new(
            py,
            [
                restore.into_any(),
                PyTuple::new(
                    py,
                    [
                        self.func.to_string().into_pyobject(py)?.into_any(),
                        shape.into_any(),
                    ],
                )?
                .into_any(),
            ],
        )
    }

    /// The shape `f(x)` returns: `()` for one number, else what the traced function returned
    /// (`(m,)` for a parsed function of `m` outputs).
    #[getter]
    fn output_shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.out_shape)
    }

    /// The number of instructions (`len(f)` too): what compile time and memory grow with.
    #[getter]
    #[pyo3(name = "n_instructions")]
    fn n_instructions_py(&self) -> usize {
        self.n_instructions()
    }

    fn __len__(&self) -> usize {
        self.n_instructions()
    }

    /// The function's name (without `@`).
    #[getter]
    fn name(&self) -> &str {
        &self.func.name
    }

    /// The number of differentiated inputs (`x`).
    #[getter]
    fn n_inputs(&self) -> usize {
        self.params.n_x
    }

    /// The number of data inputs (`d`: taken, not differentiated).
    #[getter]
    fn n_data(&self) -> usize {
        self.params.n_data
    }

    #[getter]
    fn n_outputs(&self) -> usize {
        self.func.n_outputs()
    }

    /// One pipeline stage as text: `ir`, `simplified`, `jvp`, `vjp`, `clif`, `asm`, `rolled`,
    /// `schedule`, `lumps`, `dot`, `reverse-inverse`, `forward-inverse`, `sparsity`,
    /// `sparse-jacobian`, `sparse-hessian`. `mode` chooses the program of `clif`/`asm`/`rolled`
    /// (`primal`, `jvp`, `vjp`, `gradient`, `hvp`), `strategy` the schedule; `lanes=2` prints
    /// the two-point (SIMD) kernels of `clif`/`asm` that batches run with `lanes=2`.
    #[pyo3(signature = (stage="ir", mode="primal", strategy="tape", lanes=1))]
    fn dump(&self, stage: &str, mode: &str, strategy: &str, lanes: usize) -> PyResult<String> {
        if !(1..=2).contains(&lanes) {
            return Err(error(
                Kind::Option,
                format!("lanes must be 1 or 2, not {lanes}"),
            ));
        }
        let stage: adjit::Stage = stage
            .parse()
            .map_err(|e: adjit::UnknownName| error(Kind::Option, e.to_string()))?;
        let mode: Mode = mode
            .parse()
            .map_err(|e: adjit::UnknownName| error(Kind::Option, e.to_string()))?;
        let strategy: adjit::Strategy =
            strategy
                .parse()
                .map_err(|e: adjit::diff::checkpoint::ParseStrategyError| {
                    error(Kind::Option, e.to_string())
                })?;
        adjit::dump(
            &self.func,
            stage,
            &adjit::DumpOptions {
                mode,
                strategy,
                lanes,
                math: Default::default(),
            },
        )
        .py_err()
    }

    /// `f(x, data=None)`: the outputs at `x` (shaped as `output_shape`: a float for `()`),
    /// compiled on the first call.
    #[pyo3(signature = (x, data=None))]
    fn __call__(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        data: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let policy = Policy::default();
        let compiled = match self.primal.get() {
            Some(c) => c,
            None => {
                let c = Compiled::new(&self.func, Mode::Primal).py_err()?;
                let _ = self.primal.set(c);
                self.primal
                    .get()
                    .ok_or_else(|| error(Kind::Other, "compile"))?
            }
        };
        let xa = Arg::read(x, "x", policy)?;
        let xs = xa.vector("x", self.params.n_x, policy)?;
        let da = data.map(|d| Arg::read(d, "data", policy)).transpose()?;
        let ds = self.params.data(&da, policy)?;
        let mut buf = Vec::new();
        let inputs = self.params.inputs(xs, ds, &mut buf);
        let mut y = vec![0.0; compiled.n_outputs()];
        compiled.call(inputs, &mut y).py_err()?;
        shaped(py, y, &self.out_shape)
    }
}
