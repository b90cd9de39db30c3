//! Forward mode (JVP) as an IR→IR transform.
//!
//! [`jvp`] turns `@f(x₁ … xₙ) -> (y₁ … yₘ)` into `@f_jvp` with parameters
//! `(x₁ … xₙ, ẋ…)` and returns `(y₁ … yₘ, ẏ…)`, where the tangent parameters `ẋ` exist for the
//! **differentiated float** parameters only (in order; a `bool` or `data` parameter gets none:
//! [`Function::differentiated_params`]) and the tangents `ẏ` for the float outputs only (in
//! order). The `x` part keeps every parameter in its place with its kind, so `data` inputs
//! stay data inputs of the derived program. A tangent has its primal's type (f32 stays f32).
//! [`jvp_vector`] carries `k` directions at once: parameters `(x…, ẋ⁽¹⁾…, …, ẋ⁽ᵏ⁾…)`, returns
//! `(y…, ẏ⁽¹⁾…, …, ẏ⁽ᵏ⁾…)`, named `@f_jvpK`; each direction is computed by exactly the
//! instructions [`jvp`] would emit for it, so results agree bitwise.
//!
//! Lines are interleaved as in the source-to-source article: each primal line is followed by
//! the coefficient lines of its derivative rule ([`crate::rules`]), computed once and shared
//! by all directions, then one or two tangent lines per direction. Only active values
//! ([`crate::activity()`]) get tangents; a missing tangent means zero and is never materialised
//! (literal operands have none), except that an output whose tangent is zero returns a
//! `const 0.0`. Several terms are combined as `fma t, c, acc` (products), `add`/`sub`
//! (unit coefficients) or one `select` (`min`, `max`, `select` with both branches active).
//! No term depends on whether another operand is active (`div a, b` is ȧ/b − (y/b)·ḃ), so
//! the JVP of a step agrees bit for bit with the JVP of a program that contains it.
//!
//! Names: the tangent of `%p` is `%dp` (with `k` directions, `%dp_1` … `%dp_k`); unnamed
//! primal values have unnamed tangents. The pass is O(k · size) and leaves `f` alone; it
//! assumes a verified function and produces a verified one.

use adjit_ir::{Builder, Function, Operand, Type, Value};

use crate::activity::activity;
use crate::rules::{partials, NameTable, Partial, TypedBuilder};

/// Forward mode with one direction: `(x…, ẋ…) -> (y…, ẏ…)`. See the module docs for the layout.
///
/// ```
/// use adjit_ir::{Builder, Type};
/// let mut b = Builder::new("sq");
/// let x = b.param(Type::F64, "x");
/// let y = b.mul(x, x);
/// let f = b.finish(&[y]);
/// let df = adjit_diff::jvp(&f);
/// assert_eq!(df.name, "sq_jvp");
/// assert_eq!(adjit_ir::interpret(&df, &[3.0, 1.0]).unwrap(), vec![9.0, 6.0]);
/// ```
pub fn jvp(func: &Function) -> Function {
    forward(func, Seeds::Params(1), format!("{}_jvp", func.name))
}

/// Forward mode with `k` directions: `(x…, ẋ⁽¹⁾…, …, ẋ⁽ᵏ⁾…) -> (y…, ẏ⁽¹⁾…, …, ẏ⁽ᵏ⁾…)`.
pub fn jvp_vector(func: &Function, k: usize) -> Function {
    forward(func, Seeds::Params(k), format!("{}_jvp{k}", func.name))
}

/// Forward mode with unit seeds baked in: `k` directions, where differentiated float parameter
/// number `i` (in [`Function::differentiated_params`] order) has the tangent 1 in direction
/// `colors[i]` and **no** tangent (a structural zero) in every other direction. The program
/// takes only `x` and returns `(y…, ẏ⁽¹⁾…, …, ẏ⁽ᵏ⁾…)` like [`jvp_vector`]; direction `d`
/// computes `J·s_d` with `s_d` the 0/1 sum of the unit vectors of colour `d`.
///
/// A tangent exists only where a direction's seeds reach, so after
/// [`crate::simplify()`] (which turns `mul c, 1.0` into `c`) the program holds exactly the
/// structurally nonzero partial products, and an entry that does not depend on a direction's
/// inputs is a literal 0 even where another partial of the same operation is infinite. This is
/// how sparse Jacobians and Hessians are compiled ([`crate::sparsity`]).
///
/// # Panics
/// When `colors` does not hold one colour below `k` per differentiated float parameter
/// (callers build it from a colouring of the same function).
pub fn jvp_unit_seeded(func: &Function, colors: &[u32], k: usize) -> Function {
    assert_eq!(colors.len(), func.differentiated_params().count());
    assert!(colors.iter().all(|&c| (c as usize) < k));
    forward(
        func,
        Seeds::Unit { colors, k },
        format!("{}_jvp{k}", func.name),
    )
}

/// Forward mode along one direction known when compiling: differentiated float parameter
/// number `i` has the literal tangent `direction[i]`, and **no** tangent where that is zero.
/// The program takes only `x` and returns `(y…, ẏ…)` like [`jvp`]; a zero entry contributes
/// nothing, so an output that depends on a zero-direction input only through an infinite
/// partial (`sqrt` at 0) gets no `0·∞ = NaN` from it.
///
/// # Panics
/// When `direction` does not hold one number per differentiated float parameter.
pub fn jvp_along(func: &Function, direction: &[f64]) -> Function {
    assert_eq!(direction.len(), func.differentiated_params().count());
    forward(
        func,
        Seeds::Literal(direction),
        format!("{}_jvp", func.name),
    )
}

/// Where the tangents of the differentiated parameters come from.
#[derive(Clone, Copy)]
enum Seeds<'a> {
    /// `k` directions of tangent parameters.
    Params(usize),
    /// Literal unit tangents: parameter `i` is seeded in direction `colors[i]` only.
    Unit { colors: &'a [u32], k: usize },
    /// One direction of literal tangents, absent where zero.
    Literal(&'a [f64]),
}

impl Seeds<'_> {
    fn directions(self) -> usize {
        match self {
            Seeds::Params(k) | Seeds::Unit { k, .. } => k,
            Seeds::Literal(_) => 1,
        }
    }
}

/// Whether a primal name could equal a tangent name: every tangent name (`dp`, `dp_2`, and the
/// `_k` variants of a clash) starts with `d`, so the name table holds only those names. A
/// traced program's 10⁶ parameter names (`x0` …) then stay out of it.
pub(crate) fn could_be_tangent_name(name: &str) -> bool {
    name.starts_with('d')
}

pub(crate) fn tangent_name(primal: &str, k: usize, dir: usize) -> String {
    if k == 1 {
        format!("d{primal}")
    } else {
        format!("d{primal}_{}", dir + 1)
    }
}

fn forward(func: &Function, seeds: Seeds<'_>, name: String) -> Function {
    forward_with_maps(func, seeds, name).func
}

/// A forward-mode program and where each primal value went in it.
pub(crate) struct Forwarded {
    pub func: Function,
    /// Per primal value, its copy.
    pub map: Vec<Value>,
    /// Per direction, per primal value, its tangent (`None`: zero).
    pub tangents: Vec<Vec<Option<Value>>>,
    /// Values before the output tangents' `const 0.0`s (every line of every instruction).
    pub n_body: usize,
}

/// [`jvp_vector`] with `k` directions of tangent parameters, and the maps from the primal's
/// values.
pub(crate) fn jvp_with_maps(func: &Function, k: usize) -> Forwarded {
    forward_with_maps(func, Seeds::Params(k), format!("{}_jvp{k}", func.name))
}

fn forward_with_maps(func: &Function, seeds: Seeds<'_>, name: String) -> Forwarded {
    let k = seeds.directions();
    let act = activity(func);
    let mut names = NameTable::only(func, could_be_tangent_name);
    let mut b = Builder::new(name);
    let mut map: Vec<Value> = Vec::with_capacity(func.n_values());
    for p in func.params() {
        map.push(b.copy_param(func, p));
    }
    // tangent[dir][old value]
    let mut tangent: Vec<Vec<Option<Value>>> = vec![vec![None; func.n_values()]; k];
    match seeds {
        Seeds::Params(_) => {
            for (dir, tangents) in tangent.iter_mut().enumerate() {
                for p in func.differentiated_params() {
                    let data = func.data(p);
                    let dp = match &data.name {
                        Some(n) => {
                            let name = names.fresh(tangent_name(n, k, dir));
                            b.param(data.ty, &name)
                        }
                        None => b.param_unnamed(data.ty),
                    };
                    if act.is_active(p) {
                        tangents[p.index()] = Some(dp);
                    }
                }
            }
        }
        Seeds::Unit { colors, .. } => {
            let mut ones: Vec<(Type, Value)> = Vec::new();
            for (p, &color) in func.differentiated_params().zip(colors) {
                if act.is_active(p) {
                    let ty = func.ty(p);
                    let one = match ones.iter().find(|(t, _)| *t == ty) {
                        Some(&(_, one)) => one,
                        None => {
                            let one = b.constant(ty, 1.0);
                            ones.push((ty, one));
                            one
                        }
                    };
                    tangent[color as usize][p.index()] = Some(one);
                }
            }
        }
        Seeds::Literal(direction) => {
            for (p, &value) in func.differentiated_params().zip(direction) {
                if act.is_active(p) && value != 0.0 {
                    tangent[0][p.index()] = Some(b.constant(func.ty(p), value));
                }
            }
        }
    }

    for (v, inst) in func.insts() {
        let mapped = inst.map_values(|u| map[u.index()]);
        let y = b.inst(mapped.clone());
        if let Some(n) = func.name(v) {
            b.set_name(y, n.clone());
        }
        map.push(y);
        if !act.is_active(v) {
            continue;
        }
        // Operand positions with a (structurally nonzero) tangent in some direction: with
        // tangent parameters the same in every direction, with unit seeds per direction.
        let mut wanted = [false; 3];
        for (pos, w) in wanted.iter_mut().enumerate() {
            if let Some(Operand::Value(u)) = inst.operand(pos) {
                *w = crate::rules::carries_derivative(inst, pos)
                    && tangent.iter().any(|t| t[u.index()].is_some());
            }
        }
        if !wanted.iter().any(|&w| w) {
            continue;
        }
        let tangent_of = |tangent: &[Option<Value>], pos: usize| -> Option<Value> {
            let Some(Operand::Value(u)) = inst.operand(pos) else {
                unreachable!("wanted operands are values")
            };
            tangent[u.index()]
        };
        // Every tangent term comes from the rulebook's partials alone, never from which
        // other operands are active, so a function's JVP and the JVP of a piece of it (a step
        // whose inputs include values passive in the whole program) agree bit for bit.
        let ty = b.ty(y);
        let parts = partials(
            &mut TypedBuilder { b: &mut b, ty },
            &mapped,
            y.into(),
            &wanted,
        );
        if parts.is_empty() {
            continue;
        }
        for (dir, tangents) in tangent.iter_mut().enumerate() {
            let first_new = b.func().n_values();
            // At most three terms, kept on the stack (this runs once per instruction).
            let mut terms = [(Partial::One, Value::new(0)); 3];
            let mut n_terms = 0;
            for &(pos, p) in parts.iter() {
                if let Some(t) = tangent_of(tangents, pos) {
                    terms[n_terms] = (p, t);
                    n_terms += 1;
                }
            }
            let terms = &terms[..n_terms];
            if terms.is_empty() {
                // No seed of this direction reaches the instruction.
                continue;
            }
            let dy = combine(&mut TypedBuilder { b: &mut b, ty }, terms);
            if let Some(n) = func.name_of(v) {
                names.name_new(&mut b, dy, first_new, || tangent_name(n, k, dir));
            }
            tangents[v.index()] = Some(dy);
        }
    }

    let n_body = b.func().n_values();
    let mut zeros: Vec<(Type, Value)> = Vec::new();
    let mut rets: Vec<Value> = func.rets.iter().map(|r| map[r.index()]).collect();
    for tangents in &tangent {
        for &r in &func.rets {
            let ty = func.ty(r);
            if !ty.is_float() {
                continue;
            }
            let dr = match tangents[r.index()] {
                Some(t) => t,
                None => zero(&mut b, &mut zeros, ty),
            };
            rets.push(dr);
        }
    }
    Forwarded {
        func: b.finish(&rets),
        map,
        tangents: tangent,
        n_body,
    }
}

/// The `const 0.0` of type `ty`, emitted once.
pub(crate) fn zero(b: &mut Builder, zeros: &mut Vec<(Type, Value)>, ty: Type) -> Value {
    if let Some(&(_, z)) = zeros.iter().find(|(t, _)| *t == ty) {
        return z;
    }
    let z = b.constant(ty, 0.0);
    zeros.push((ty, z));
    z
}

/// Σ partial·tangent over `terms` (non-empty), in as few lines as the rules allow.
fn combine(e: &mut TypedBuilder<'_>, terms: &[(Partial<Operand>, Value)]) -> Value {
    if let [(Partial::Gate { cond, first: true }, ta), (
        Partial::Gate {
            cond: c2,
            first: false,
        },
        tb,
    )] = terms
    {
        if cond == c2 {
            return e.b.select(*cond, *ta, *tb);
        }
    }
    // Start from a unit term when there is one (no line needed), else scale the first term.
    let start = terms
        .iter()
        .position(|(p, _)| *p == Partial::One)
        .unwrap_or(0);
    let (p0, t0) = terms[start];
    let mut acc = p0.apply(e, t0.into());
    for (i, &(p, t)) in terms.iter().enumerate() {
        if i != start {
            acc = p.accumulate(e, acc, t.into());
        }
    }
    crate::rules::value_of(acc)
}
