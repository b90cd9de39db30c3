//! Second derivatives by forward-over-reverse: [`hvp`] is `jvp(vjp(f))` with the output
//! cotangent fixed to 1, and [`hessian`] evaluates it along every unit direction with the
//! reference interpreter.
//!
//! Layout of `@f_hvp`: parameters `(x₁ … xₙ, v…)` with one direction entry per
//! **differentiated float** parameter (not `bool`, not `data`); returns `(y…, ∇…, H·v…)`:
//! every output of `f`, then the gradient and the Hessian-vector product over those
//! parameters. `data` parameters stay `data` in the gradient program, so the outer jvp gives
//! them no tangent either. For a function with several float
//! outputs the cotangent of each is 1, so ∇ and H are those of their sum; [`hessian`]
//! insists on exactly one float output. The pass relies on the derivative conventions of
//! [`crate::rules`] (at kinks the "Hessian" is the derivative of the conventional gradient).

use adjit_ir::{interpret, Function, InterpError, Rolled, Value};

use crate::forward::{jvp, jvp_along};
use crate::forward_rolled::jvp_rolled;
use crate::layout::{Kind, Layout, Part};
use crate::seeded::{vjp_rolled_seeded_with_one, vjp_seeded_with_one};
use crate::simplify::{dce, simplify_owned};

/// Why [`hessian`] could not compute a Hessian.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DiffError {
    /// A function without exactly one float output (`bool` outputs may sit beside it) given to
    /// what needs one: a Hessian, a gradient, an HVP. The one error for that condition,
    /// built by [`scalar_output`] only; [`crate::derive()`] returns it inside
    /// [`crate::DeriveError::Diff`].
    #[error("{}", not_scalar_message(func, *float_outputs, outputs, mode.as_deref()))]
    NotScalar {
        func: String,
        float_outputs: usize,
        /// The output types as written in a signature, e.g. `f64, f64`.
        outputs: String,
        /// The derivative mode that needs one float output (`gradient`, `hvp`), or `None`
        /// for a Hessian.
        mode: Option<String>,
    },
    #[error("@{func} takes {expected} inputs, got {got}")]
    InputCount {
        func: String,
        expected: usize,
        got: usize,
    },
    #[error(transparent)]
    Interp(#[from] InterpError),
}

fn not_scalar_message(
    func: &str,
    float_outputs: usize,
    outputs: &str,
    mode: Option<&str>,
) -> String {
    match mode {
        None => format!("@{func} has {float_outputs} float outputs; a Hessian needs exactly one"),
        Some(mode) => {
            format!("{mode} needs a function with one float output; @{func} returns ({outputs})")
        }
    }
}

/// The index among `func`'s outputs of its one float output, or [`DiffError::NotScalar`]
/// naming `mode` (`None`: a Hessian) when it has none or several. Every object and pass that
/// needs a scalar function asks here.
///
/// ```
/// use adjit_diff::hessian::scalar_output;
/// let f = adjit_ir::trace::trace_multi("two", &[adjit_ir::Type::F64; 2], |x| vec![x[0], x[1]]);
/// let err = scalar_output(&f, None).unwrap_err();
/// assert_eq!(err.to_string(), "@two has 2 float outputs; a Hessian needs exactly one");
/// let err = scalar_output(&f, Some("gradient")).unwrap_err();
/// assert_eq!(err.to_string(), "gradient needs a function with one float output; @two returns (f64, f64)");
/// ```
pub fn scalar_output(func: &Function, mode: Option<&str>) -> Result<usize, DiffError> {
    let mut floats = func
        .ret_types
        .iter()
        .enumerate()
        .filter(|(_, t)| t.is_float());
    match (floats.next(), floats.next()) {
        (Some((at, _)), None) => Ok(at),
        _ => Err(DiffError::NotScalar {
            func: func.name.clone(),
            float_outputs: func.ret_types.iter().filter(|t| t.is_float()).count(),
            outputs: func
                .ret_types
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            mode: mode.map(str::to_string),
        }),
    }
}

/// `(x…, v…) -> (y…, ∇f…, H·v…)`, simplified. See the module docs.
///
/// ```
/// use adjit_ir::{Builder, Type};
/// let mut b = Builder::new("cube");
/// let x = b.param(Type::F64, "x");
/// let y = b.powi(x, 3);
/// let f = b.finish(&[y]);
/// let h = adjit_diff::hvp(&f);
/// // y = 8, y' = 12, y'' · v = 12 · 0.5
/// assert_eq!(adjit_ir::interpret(&h, &[2.0, 0.5]).unwrap(), vec![8.0, 12.0, 6.0]);
/// ```
pub fn hvp(func: &Function) -> Function {
    let gradient = simplify_owned(vjp_seeded_with_one(func));
    hvp_outputs(func, &gradient, jvp(&gradient))
}

/// The HVP's returns out of `rets`, the returns of the one-direction JVP of the `gradient`
/// program of `func`: that JVP returns (y…, x̄…, ẏ…, H·v…); keep the gradient program's
/// outputs and the tangents of its x̄ part (the last of its float outputs), dropping the
/// tangents ẏ.
fn hvp_rets(func: &Function, gradient: &Function, rets: &[Value]) -> Vec<Value> {
    let n_grad = Layout::of(func, Kind::Gradient)
        .output(Part::Gradient)
        .len();
    let outer = Layout::of(gradient, Kind::Jvp(1));
    let tangents = outer.output(Part::OutputTangent(0));
    let hv = tangents.end - n_grad..tangents.end;
    rets[outer.output(Part::Outputs)]
        .iter()
        .chain(&rets[hv])
        .copied()
        .collect()
}

/// [`hvp`] of a rolled program, per template: [`jvp_rolled`] of
/// [`vjp_rolled_seeded_with_one`], with the HVP's outputs
/// `(y…, ∇f…, H·v…)`. Not simplified (its dead lines stay; a compiled rolled program does
/// not lower them), so its expansion is `hvp`'s program before `simplify`, with the same
/// numbers.
///
/// ```
/// use adjit_ir::{trace::trace, Rolled};
/// let f = trace(200, |x| {
///     let mut s = x[0] * 0.0;
///     for &xi in x {
///         s = s + xi.sin() * xi;
///     }
///     s
/// });
/// let h = adjit_diff::hvp_rolled(&Rolled::from_function(&f));
/// let x: Vec<f64> = (0..400).map(|i| 0.01 * i as f64).collect();
/// let want = adjit_ir::interpret(&adjit_diff::hvp(&f), &x).unwrap();
/// assert_eq!(h.interpret(&x).unwrap(), want);
/// ```
pub fn hvp_rolled(r: &Rolled) -> Rolled {
    let gradient = vjp_rolled_seeded_with_one(r);
    let mut h = jvp_rolled(&gradient);
    let rets = hvp_rets(r.header(), gradient.header(), &h.header().rets);
    let types = rets.iter().map(|v| h.ty(v.index())).collect();
    h.set_rets(rets, types);
    h.set_function_name(format!("{}_hvp", r.header().name));
    h
}

/// The HVP's outputs out of `h`, the one-direction JVP of the `gradient` program of `func`.
fn hvp_outputs(func: &Function, gradient: &Function, mut h: Function) -> Function {
    let rets = hvp_rets(func, gradient, &h.rets);
    h.rets.clear();
    h.ret_types.clear();
    for r in rets {
        h.push_ret(r);
    }
    h.name = format!("{}_hvp", func.name);
    simplify_owned(dce(&h))
}

/// `(x…) -> (y…, ∇f…, H·v…)` for a direction `v` known when compiling (one number per
/// differentiated float parameter), simplified: [`hvp`] with `v` baked in as literals, so a
/// zero entry of `v` contributes nothing (no `0·∞ = NaN` where a partial is infinite, e.g.
/// `sqrt` at 0) and multiplications by 1 vanish. Same outputs as [`hvp`].
///
/// ```
/// // x² + sqrt(y) at (1, 0) along (1, 0): H·v = (2, 0), where runtime v gives (2, NaN).
/// let f = adjit_ir::trace::trace(2, |x| x[0] * x[0] + x[1].sqrt());
/// let h = adjit_diff::hvp_along(&f, &[1.0, 0.0]);
/// let out = adjit_ir::interpret(&h, &[1.0, 0.0]).unwrap();
/// assert_eq!(&out[3..], &[2.0, 0.0]);
/// ```
///
/// # Panics
/// When `v` does not hold one number per differentiated float parameter.
pub fn hvp_along(func: &Function, v: &[f64]) -> Function {
    let gradient = simplify_owned(vjp_seeded_with_one(func));
    let h = jvp_along(&gradient, v);
    hvp_outputs(func, &gradient, h)
}

/// The dense Hessian of a function with exactly one float output at `x` (one value per
/// parameter), over its differentiated float parameters (`data` ones excluded): `H[i][j] = ∂²y/∂xᵢ∂xⱼ`, column j computed as
/// H·eⱼ by [`hvp`] on the reference interpreter. Not symmetrised.
pub fn hessian(func: &Function, x: &[f64]) -> Result<Vec<Vec<f64>>, DiffError> {
    scalar_output(func, None)?;
    if x.len() != func.n_params {
        return Err(DiffError::InputCount {
            func: func.name.clone(),
            expected: func.n_params,
            got: x.len(),
        });
    }
    let n = func.differentiated_params().count();
    let h = hvp(func);
    let layout = Layout::of(func, Kind::Hvp);
    let mut rows = vec![vec![0.0; n]; n];
    let mut input = x.to_vec();
    input.resize(x.len() + n, 0.0);
    for j in 0..n {
        input[x.len()..]
            .iter_mut()
            .enumerate()
            .for_each(|(k, v)| *v = f64::from(u8::from(k == j)));
        let out = interpret(&h, &input)?;
        let hv = &out[layout.output(Part::HessianVector)];
        for (row, &value) in rows.iter_mut().zip(hv) {
            row[j] = value;
        }
    }
    Ok(rows)
}
