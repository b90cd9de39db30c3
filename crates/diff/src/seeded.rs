//! The VJP with every cotangent the constant 1 (the gradient of a one-output program, or of
//! the sum of the outputs): the one place cotangents become 1, for `derive`'s gradient mode,
//! the Hessian and the sparse sweeps.

use adjit_ir::{Function, InstData, Loop, ParamKind, Rolled, Value, ValueData, ValueDef};

use crate::layout::{Kind, Layout, Part};

/// `vjp(func)` with every cotangent ȳ the constant 1, so the simplifier can remove the
/// multiplications by the seed: `(x…) -> (y…, x̄…)` (not simplified). For several float
/// outputs this is the gradient of their sum.
pub fn vjp_seeded_with_one(func: &Function) -> Function {
    let n_seeds = Layout::of(func, Kind::Vjp).input(Part::Cotangent).len();
    seed_last_params_with_one(crate::reverse::vjp(func), n_seeds)
}

/// [`vjp_seeded_with_one`] on a rolled program, per template: its expansion is
/// `vjp_seeded_with_one` of the expansion, line for line (the seeds become the `const 1.0`s
/// of a first loop of one trip, every value keeping its index).
///
/// ```
/// use adjit_ir::{trace::trace, Rolled};
/// let f = trace(300, |x| {
///     let mut s = x[0] * 0.0;
///     for &xi in x {
///         s = s + xi.sin() * xi;
///     }
///     s
/// });
/// let g = adjit_diff::vjp_rolled_seeded_with_one(&Rolled::from_function(&f));
/// assert_eq!(g.expand(), adjit_diff::vjp_seeded_with_one(&f));
/// assert_eq!(g.n_params(), 300);
/// ```
pub fn vjp_rolled_seeded_with_one(r: &Rolled) -> Rolled {
    let n_seeds = Layout::of(r.header(), Kind::Vjp)
        .input(Part::Cotangent)
        .len();
    let g = crate::reverse_rolled::vjp_rolled(r);
    let seeded = seed_last_params_with_one(g.header().clone(), n_seeds);
    let n_x = seeded.n_params;
    let mut header = seeded.header();
    header.name = g.header().name.clone();
    let mut out = Rolled::new(header);
    if n_seeds > 0 {
        out.push(Loop::straight(n_x, &seeded.values[n_x..]));
    }
    for l in g.loops() {
        out.push(l.clone());
    }
    out
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
