//! The VJP with every cotangent the constant 1 (the gradient of a one-output program, or of
//! the sum of the outputs): the one place cotangents become 1, for `derive`'s gradient mode,
//! the Hessian and the sparse sweeps.

use adjit_ir::{Function, InstData, ParamKind, Value, ValueData, ValueDef};

use crate::layout::{Kind, Layout, Part};

/// `vjp(func)` with every cotangent ȳ the constant 1, so the simplifier can remove the
/// multiplications by the seed: `(x…) -> (y…, x̄…)` (not simplified). For several float
/// outputs this is the gradient of their sum.
pub fn vjp_seeded_with_one(func: &Function) -> Function {
    let n_seeds = Layout::of(func, Kind::Vjp).input(Part::Cotangent).len();
    seed_last_params_with_one(crate::reverse::vjp(func), n_seeds)
}

/// `g` with its last `n_seeds` parameters replaced by `const 1.0`.
///
/// Every value keeps its index (a seed parameter becomes a `const` in its place, the first
/// lines of the body), so `g` is rewritten in place rather than copied: no operand changes.
/// A seed loses its name and, were it one, its data kind.
pub(crate) fn seed_last_params_with_one(mut g: Function, n_seeds: usize) -> Function {
    let n_x = g.n_params - n_seeds;
    for p in n_x..g.n_params {
        let seed = Value::new(p);
        g.set_param_kind(seed, ParamKind::Differentiated);
        let ty = g.ty(seed);
        g.values[p] = ValueData {
            ty,
            def: ValueDef::Inst(InstData::constant(ty, 1.0)),
            name: None,
        };
    }
    g.n_params = n_x;
    g
}
