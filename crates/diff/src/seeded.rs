//! The VJP with every cotangent the constant 1 (the gradient of a one-output program, or of
//! the sum of the outputs): the one place cotangents become 1, for `derive`'s gradient mode,
//! the Hessian and the sparse sweeps.

use adjit_ir::{Function, InstData, Value, ValueDef};

use crate::layout::{Kind, Layout, Part};

/// `vjp(func)` with every cotangent ȳ the constant 1, so the simplifier can remove the
/// multiplications by the seed: `(x…) -> (y…, x̄…)` (not simplified). For several float
/// outputs this is the gradient of their sum.
pub fn vjp_seeded_with_one(func: &Function) -> Function {
    let n_seeds = Layout::of(func, Kind::Vjp).input(Part::Cotangent).len();
    seed_last_params_with_one(&crate::reverse::vjp(func), n_seeds)
}

/// `g` with its last `n_seeds` parameters replaced by `const 1.0`.
pub(crate) fn seed_last_params_with_one(g: &Function, n_seeds: usize) -> Function {
    let n_x = g.n_params - n_seeds;
    let mut out = Function::new(g.name.clone());
    out.values.extend(g.values[..n_x].iter().cloned());
    out.n_params = n_x;
    for p in g.params().take(n_x) {
        out.set_param_kind(p, g.param_kind(p));
    }
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
