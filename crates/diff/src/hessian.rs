//! Second derivatives by forward-over-reverse: [`hvp`] is `jvp(vjp(f))` with the output
//! cotangent fixed to 1, and [`hessian`] evaluates it along every unit direction with the
//! reference interpreter.
//!
//! Layout of `@f_hvp`: parameters `(x₁ … xₙ, v…)` with one direction entry per **float**
//! parameter; returns `(y…, ∇…, H·v…)`: every output of `f`, then the gradient and the
//! Hessian-vector product over the float parameters. For a function with several float
//! outputs the cotangent of each is 1, so ∇ and H are those of their sum; [`hessian`]
//! insists on exactly one float output. The pass relies on the derivative conventions of
//! [`crate::rules`] (at kinks the "Hessian" is the derivative of the conventional gradient).

use adjit_ir::{interpret, Function, InstData, InterpError, Value, ValueDef};

use crate::forward::jvp;
use crate::reverse::vjp;
use crate::simplify::{dce, simplify};

/// Why [`hessian`] could not compute a Hessian.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DiffError {
    #[error("@{func} has {float_outputs} float outputs; a Hessian needs exactly one")]
    NotScalar { func: String, float_outputs: usize },
    #[error("@{func} takes {expected} inputs, got {got}")]
    InputCount {
        func: String,
        expected: usize,
        got: usize,
    },
    #[error(transparent)]
    Interp(#[from] InterpError),
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
    let n_float_y = func.ret_types.iter().filter(|t| t.is_float()).count();
    let gradient = simplify(&seed_cotangents_with_one(&vjp(func), n_float_y));
    let mut h = jvp(&gradient);
    // jvp returns (y…, ∇…, ẏ…, H·v…): drop the tangents ẏ of the float outputs.
    let n_grad = gradient.n_outputs() - func.n_outputs();
    let keep = gradient.n_outputs();
    let hv_start = h.rets.len() - n_grad;
    debug_assert_eq!(hv_start, keep + n_float_y, "jvp layout");
    let rets: Vec<Value> = h.rets[..keep]
        .iter()
        .chain(&h.rets[hv_start..])
        .copied()
        .collect();
    h.rets.clear();
    h.ret_types.clear();
    for r in rets {
        h.push_ret(r);
    }
    h.name = format!("{}_hvp", func.name);
    simplify(&dce(&h))
}

/// `g(x…, ȳ…)`, a vjp whose last `n_seeds` parameters are the cotangents ȳ, with every
/// cotangent replaced by `const 1.0`.
fn seed_cotangents_with_one(g: &Function, n_seeds: usize) -> Function {
    let n_x = g.n_params - n_seeds;
    let mut out = Function::new(g.name.clone());
    out.values.extend(g.values[..n_x].iter().cloned());
    out.n_params = n_x;
    let mut map: Vec<Value> = g.params().take(n_x).collect();
    for p in g.params().skip(n_x) {
        let ty = g.ty(p);
        map.push(out.push_inst(ty, InstData::constant(ty, 1.0), None));
    }
    for data in &g.values[g.n_params..] {
        if let ValueDef::Inst(inst) = &data.def {
            let new = out.push_inst(
                data.ty,
                inst.map_values(|u| map[u.index()]),
                data.name.clone(),
            );
            map.push(new);
        }
    }
    for &r in &g.rets {
        out.push_ret(map[r.index()]);
    }
    out
}

/// The dense Hessian of a function with exactly one float output at `x` (one value per
/// parameter), over its float parameters: `H[i][j] = ∂²y/∂xᵢ∂xⱼ`, column j computed as
/// H·eⱼ by [`hvp`] on the reference interpreter. Not symmetrised.
pub fn hessian(func: &Function, x: &[f64]) -> Result<Vec<Vec<f64>>, DiffError> {
    let float_outputs = func.ret_types.iter().filter(|t| t.is_float()).count();
    if float_outputs != 1 {
        return Err(DiffError::NotScalar {
            func: func.name.clone(),
            float_outputs,
        });
    }
    if x.len() != func.n_params {
        return Err(DiffError::InputCount {
            func: func.name.clone(),
            expected: func.n_params,
            got: x.len(),
        });
    }
    let n = func.param_types().iter().filter(|t| t.is_float()).count();
    let h = hvp(func);
    let mut rows = vec![vec![0.0; n]; n];
    let mut input = x.to_vec();
    input.resize(x.len() + n, 0.0);
    for j in 0..n {
        input[x.len()..]
            .iter_mut()
            .enumerate()
            .for_each(|(k, v)| *v = f64::from(u8::from(k == j)));
        let out = interpret(&h, &input)?;
        let hv = &out[out.len() - n..];
        for (row, &value) in rows.iter_mut().zip(hv) {
            row[j] = value;
        }
    }
    Ok(rows)
}
