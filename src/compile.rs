//! Compile once, call many times: derived programs as native code.
//!
//! [`derive`] builds the (simplified) IR of a [`Mode`]; [`Compiled`] JIT-compiles it and checks
//! buffer lengths on every call; [`Gradient`] is the common special case of a scalar function's
//! value and gradient, with the cotangent 1 folded into the code.

use adjit_ir::{Builder, Function, Type, Value, ValueDef};
use adjit_jit::{CompiledFunction, JitOptions};

use crate::{Error, Result};

/// Which program to derive from a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// The function itself: `(x) -> (y)`.
    #[default]
    Primal,
    /// Forward mode: `(x, ẋ) -> (y, ẏ)`.
    Jvp,
    /// Forward mode with `k` directions: `(x, ẋ₁ … ẋₖ) -> (y, ẏ₁ … ẏₖ)`.
    JvpVector(usize),
    /// Reverse mode with a tape: `(x, ȳ) -> (y, x̄)`.
    Vjp,
    /// Value and gradient of a scalar function: `(x) -> (y, ∇y)`.
    Gradient,
    /// Hessian-vector product of a scalar function: `(x, v) -> (y, ∇y, H·v)`.
    Hvp,
}

impl std::str::FromStr for Mode {
    type Err = Error;

    fn from_str(s: &str) -> Result<Mode> {
        match s {
            "primal" => Ok(Mode::Primal),
            "jvp" => Ok(Mode::Jvp),
            "vjp" => Ok(Mode::Vjp),
            "gradient" => Ok(Mode::Gradient),
            "hvp" => Ok(Mode::Hvp),
            _ => Err(Error::Usage(format!(
                "unknown mode `{s}`: expected primal, jvp, vjp, gradient or hvp"
            ))),
        }
    }
}

/// The simplified IR of `mode` applied to `func` (which must verify).
pub fn derive(func: &Function, mode: Mode) -> Result<Function> {
    adjit_ir::verify(func)?;
    let derived = match mode {
        Mode::Primal => return Ok(adjit_diff::simplify(func)),
        Mode::Jvp => adjit_diff::jvp(func),
        Mode::JvpVector(k) => adjit_diff::jvp_vector(func, k),
        Mode::Vjp => adjit_diff::vjp(func),
        Mode::Gradient => gradient_function(func)?,
        Mode::Hvp => {
            scalar_output(func, "hvp")?;
            adjit_diff::hvp(func)
        }
    };
    Ok(adjit_diff::simplify(&derived))
}

fn scalar_output(func: &Function, what: &str) -> Result<()> {
    if func.ret_types.len() == 1 && func.ret_types[0].is_float() {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "{what} needs a function with one float output; @{} returns ({})",
            func.name,
            func.ret_types
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }
}

/// `vjp(f)` with its cotangent parameter replaced by the constant 1, so the simplifier can
/// remove the multiplications by the seed: `(x) -> (y, ∇y)`.
fn gradient_function(func: &Function) -> Result<Function> {
    scalar_output(func, "a gradient")?;
    let vjp = adjit_diff::vjp(func);
    let n = func.n_params;
    let mut b = Builder::new(format!("{}_grad", func.name));
    let mut map: Vec<Value> = Vec::with_capacity(vjp.n_values());
    for p in vjp.params() {
        let data = vjp.data(p);
        let v = if p.index() < n {
            match &data.name {
                Some(name) => b.param(data.ty, name),
                None => b.param_unnamed(data.ty),
            }
        } else {
            map.push(Value::new(0)); // placeholder, replaced below
            continue;
        };
        map.push(v);
    }
    for p in vjp.params().skip(n) {
        map[p.index()] = b.constant(vjp.ty(p), 1.0);
    }
    for (v, data) in vjp.values.iter().enumerate().skip(vjp.n_params) {
        let ValueDef::Inst(inst) = &data.def else {
            continue;
        };
        let new = b.inst(inst.map_values(|u| map[u.index()]));
        if let Some(name) = &data.name {
            b.set_name(new, name.clone());
        }
        debug_assert_eq!(map.len(), v);
        map.push(new);
    }
    let rets: Vec<Value> = vjp.rets.iter().map(|r| map[r.index()]).collect();
    Ok(b.finish(&rets))
}

/// A derived program compiled to native code.
///
/// ```
/// let f = adjit::trace(2, |x| x[0] * x[1].sin());
/// let jvp = adjit::Compiled::new(&f, adjit::Mode::Jvp).unwrap();
/// let mut out = [0.0; 2];
/// jvp.call(&[2.0, 0.5, 1.0, 0.0], &mut out).unwrap(); // x = (2, 0.5), ẋ = (1, 0)
/// assert_eq!(out[1], 0.5f64.sin());
/// ```
pub struct Compiled {
    ir: Function,
    code: CompiledFunction,
}

impl Compiled {
    /// Derive `mode` from `func`, simplify and JIT-compile it.
    pub fn new(func: &Function, mode: Mode) -> Result<Compiled> {
        Compiled::with_options(func, mode, &JitOptions::default())
    }

    pub fn with_options(func: &Function, mode: Mode, opts: &JitOptions) -> Result<Compiled> {
        let ir = derive(func, mode)?;
        let code = adjit_jit::compile(&ir, opts)?;
        Ok(Compiled { ir, code })
    }

    /// Evaluate at `inputs`, writing `outputs`; both lengths are checked.
    pub fn call(&self, inputs: &[f64], outputs: &mut [f64]) -> Result<()> {
        Ok(self.code.call(inputs, outputs)?)
    }

    /// The compiled IR (after simplification).
    pub fn ir(&self) -> &Function {
        &self.ir
    }

    /// The native code handle (batched and multi-threaded calls live there).
    pub fn code(&self) -> &CompiledFunction {
        &self.code
    }

    pub fn n_inputs(&self) -> usize {
        self.code.n_inputs()
    }

    pub fn n_outputs(&self) -> usize {
        self.code.n_outputs()
    }
}

/// Value and gradient of a scalar function, compiled once and callable from many threads.
///
/// ```
/// let f = adjit::trace(2, |x| {
///     let a = 1.0 - x[0];
///     let d = x[1] - x[0] * x[0];
///     a * a + 100.0 * d * d
/// });
/// let grad = adjit::Gradient::new(&f).unwrap();
/// let mut g = [0.0; 2];
/// let y = grad.call(&[0.0, 0.0], &mut g).unwrap();
/// assert_eq!((y, g), (1.0, [-2.0, 0.0]));
/// ```
pub struct Gradient {
    compiled: Compiled,
    n: usize,
}

impl Gradient {
    /// Compile the gradient of `func`, which must have one float output and only float inputs.
    pub fn new(func: &Function) -> Result<Gradient> {
        if let Some(p) = func.params().find(|&p| func.ty(p) == Type::Bool) {
            return Err(Error::Usage(format!(
                "a gradient needs float inputs; parameter {} of @{} is bool",
                p.index(),
                func.name
            )));
        }
        let compiled = Compiled::new(func, Mode::Gradient)?;
        Ok(Gradient {
            compiled,
            n: func.n_params,
        })
    }

    /// Writes `∇f(x)` to `grad` and returns `f(x)`. Does not allocate after the first call on a
    /// thread.
    pub fn call(&self, x: &[f64], grad: &mut [f64]) -> Result<f64> {
        if grad.len() != self.n {
            return Err(Error::Usage(format!(
                "gradient buffer holds {} numbers, the function has {} inputs",
                grad.len(),
                self.n
            )));
        }
        crate::scratch::with_scratch(0, self.n + 1, |_, out| {
            self.compiled.call(x, out)?;
            grad.copy_from_slice(&out[1..]);
            Ok(out[0])
        })
    }

    /// The compiled program `(x) -> (y, ∇y)`.
    pub fn compiled(&self) -> &Compiled {
        &self.compiled
    }
}
