//! Reverse mode (VJP) as an IR→IR transform.
//!
//! [`vjp`] turns `@f(x₁ … xₙ) -> (y₁ … yₘ)` into `@f_vjp` with parameters `(x₁ … xₙ, ȳ…)` and
//! returns `(y₁ … yₘ, x̄…)`, where the cotangent parameters `ȳ` exist for the **float** outputs
//! only (in order; a `bool` output gets none) and the adjoints `x̄` for the differentiated float
//! parameters only (in order; a `bool` or `data` parameter gets none:
//! [`Function::differentiated_params`]). The `x` part keeps every parameter in its place with
//! its kind. An adjoint has its primal's type. A parameter whose adjoint is zero returns a
//! `const 0.0`.
//!
//! The body is the forward sweep (a copy of every primal line) followed by the adjoint sweep.
//! **Accumulation order**, which checkpointing relies on to reproduce the taped gradient
//! bitwise:
//! 1. Seeds: for each float output slot j in order, ȳⱼ is added to the adjoint of the
//!    returned value (the first contribution *is* ȳⱼ; a value returned twice gets
//!    `add acc, ȳⱼ`).
//! 2. Then the active instructions in **reverse program order**; for each, its operands in
//!    **text order** (left to right, `select`'s condition excluded). The contribution
//!    ∂y/∂aᵢ·ȳ of operand aᵢ either initialises āᵢ (first contribution: the scaled value, or ȳ
//!    itself for a unit coefficient) or is accumulated by [`crate::rules::Partial::accumulate`]:
//!    `fma ȳ, c, acc` for a product coefficient c, `add acc, ȳ` / `sub acc, ȳ` for ±1,
//!    `sub acc, (ȳ·c)` for −c, and `add acc, contribution` otherwise. No operand's
//!    contribution depends on whether another operand is active (so `div a, b` gives b̄ the
//!    rulebook's −ȳ·(y/b) even when ā is computed too): checkpoint stages, which see some
//!    passive values as active inputs, reproduce the tape bit for bit.
//!
//! An instruction's adjoint is final when the sweep reaches it, since all its uses come later
//! in program order. Coefficients (`cos x`, `2·y`, …) are computed in the adjoint sweep from
//! primal values; those primal values are the tape ([`tape_stats`]). Only active values
//! ([`crate::activity()`]) get adjoint lines; zero adjoints are never materialised.
//!
//! Names: the adjoint of `%p` is `%p_b` (given to the value holding the final adjoint when
//! that value was created for it), the cotangent parameter of an output `%y` is `%y_b`.
//! The pass is O(size), leaves `f` alone, assumes a verified function and produces one.

use adjit_ir::{Builder, Function, Operand, Type, Value};
use rustc_hash::FxHashSet;

use crate::activity::activity;
use crate::forward::zero;
use crate::rules::{carries_derivative, partials, value_of, NameTable, TypedBuilder};

/// What the adjoint sweep of [`vjp`] reads from the forward sweep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TapeStats {
    /// Distinct primal values defined by instructions (parameters are not counted: they are
    /// inputs, not intermediates) that adjoint lines read.
    pub values: usize,
    /// Their total size in bytes ([`Type::bytes`]: 8 per f64, 4 per f32, 1 per bool).
    pub bytes: usize,
}

/// Reverse mode: `(x…, ȳ…) -> (y…, x̄…)`. See the module docs for the layout and the exact
/// accumulation order.
///
/// ```
/// use adjit_ir::{Builder, Type};
/// let mut b = Builder::new("prod");
/// let x = b.param(Type::F64, "x");
/// let y = b.param(Type::F64, "y");
/// let p = b.mul(x, y);
/// let f = b.finish(&[p]);
/// let g = adjit_diff::vjp(&f);
/// assert_eq!(g.name, "prod_vjp");
/// assert_eq!(adjit_ir::interpret(&g, &[3.0, 5.0, 1.0]).unwrap(), vec![15.0, 5.0, 3.0]);
/// ```
pub fn vjp(func: &Function) -> Function {
    build_vjp(func).0
}

/// The size of the tape of [`vjp`]: the primal intermediates its adjoint sweep reads.
pub fn tape_stats(func: &Function) -> TapeStats {
    vjp_with_tape(func).1.stats
}

/// The tape of one [`vjp`]: which primal intermediates its adjoint sweep reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tape {
    /// The values of the *primal* function (its numbering) that adjoint lines read, sorted.
    /// Parameters are inputs, not tape, and are never listed.
    pub values: Vec<Value>,
    /// Their count and bytes.
    pub stats: TapeStats,
}

/// [`vjp`] and its [`Tape`] in one pass. Checkpointing's memory model reads the tape set from
/// here rather than re-deriving which values the adjoint sweep reads.
pub fn vjp_with_tape(func: &Function) -> (Function, Tape) {
    let (out, forward) = build_vjp(func);
    let tape = tape_of(func, &out, &forward);
    (out, tape)
}

/// Where the forward sweep of a built VJP lies: `out`'s values `first_inst..end` copy the
/// primal instructions, `map` sends each primal value to its copy.
struct ForwardSweep {
    first_inst: usize,
    end: usize,
    map: Vec<Value>,
}

/// The adjoint of every primal value so far, indexed by [`Value::index`]: the value holding
/// it, or none (a zero adjoint, never materialised). Four bytes a value where
/// `Vec<Option<Value>>` took eight (80 MB at 10⁷ values).
struct Adjoints(Vec<u32>);

impl Adjoints {
    /// No adjoint. Value `u32::MAX` cannot be an adjoint: it would be the last of 2³² values,
    /// and a function that large (over 250 GB of value records) is never built.
    const NONE: u32 = u32::MAX;

    fn new(n_values: usize) -> Adjoints {
        Adjoints(vec![Adjoints::NONE; n_values])
    }

    fn get(&self, v: Value) -> Option<Value> {
        let a = self.0[v.index()];
        (a != Adjoints::NONE).then(|| Value::new(a as usize))
    }

    fn set(&mut self, v: Value, adjoint: Value) {
        // Lossless: a `Value` holds a `u32`.
        self.0[v.index()] = adjoint.index() as u32;
    }
}

/// The name of the adjoint of `%n` (or the cotangent of an output `%n`): `n_b`. Built
/// directly: `format!` cost 540 instructions a name, 5 % of the VJP of a traced program
/// (every parameter named).
pub(crate) fn adjoint_name(n: &str) -> String {
    let mut name = String::with_capacity(n.len() + 2);
    name.push_str(n);
    name.push_str("_b");
    name
}

/// Whether a primal name could equal an adjoint name: `n_b`, or `n_b_k` after a clash
/// ([`NameTable::fresh`]). Other names cannot, so the name table leaves them out.
pub(crate) fn could_be_adjoint_name(name: &str) -> bool {
    let head = name.trim_end_matches(|c: char| c.is_ascii_digit());
    name.ends_with("_b") || (head.len() < name.len() && head.ends_with("_b_"))
}

/// A built VJP with what a rolled reverse sweep reads of it.
pub(crate) struct Reversed {
    pub func: Function,
    /// The forward sweep's values end here; the adjoint sweep follows (seeds' `add`s first).
    pub forward_end: usize,
    /// Per primal value, its copy in the forward sweep.
    pub map: Vec<Value>,
    /// Per primal value, its adjoint at the end of the sweep (`u32::MAX`: zero).
    pub adjoint: Vec<u32>,
    /// Values before the zero adjoints' `const 0.0`s.
    pub n_body: usize,
}

/// [`vjp`] with the maps a rolled reverse sweep needs.
pub(crate) fn vjp_with_maps(func: &Function) -> Reversed {
    let (func, forward, adjoint, n_body) = build_vjp_maps(func);
    Reversed {
        func,
        forward_end: forward.end,
        map: forward.map,
        adjoint: adjoint.0,
        n_body,
    }
}

/// The VJP and the layout of its forward sweep (which [`tape_of`] reads; [`vjp`] skips it).
fn build_vjp(func: &Function) -> (Function, ForwardSweep) {
    let (out, forward, _, _) = build_vjp_maps(func);
    (out, forward)
}

/// [`build_vjp`], with the adjoints at the end and where the zero adjoints start.
fn build_vjp_maps(func: &Function) -> (Function, ForwardSweep, Adjoints, usize) {
    let act = activity(func);
    let mut names = NameTable::only(func, could_be_adjoint_name);
    let n_seeds = func.rets.iter().filter(|&&r| func.ty(r).is_float()).count();
    // The forward sweep and the seeds are exactly `n_values + n_seeds` values; the adjoint
    // sweep emits some per active value (1.25 for a traced Rosenbrock, more for `abs` or
    // `atan2`): room for two each avoids growing the largest vector of the pass by doubling,
    // and what stays unused is never touched, so it costs address space, not memory.
    let capacity = func.n_values() + n_seeds + 2 * act.n_active();
    let mut b = Builder::with_capacity(format!("{}_vjp", func.name), capacity);
    let mut map: Vec<Value> = Vec::with_capacity(func.n_values());
    for p in func.params() {
        map.push(b.copy_param(func, p));
    }
    let mut seeds = Vec::with_capacity(n_seeds);
    for &r in &func.rets {
        let ty = func.ty(r);
        if ty.is_float() {
            let seed = match func.name_of(r) {
                Some(n) => {
                    let name = names.fresh(adjoint_name(n));
                    b.param(ty, &name)
                }
                None => b.param_unnamed(ty),
            };
            seeds.push((r, seed));
        }
    }
    for (v, inst) in func.insts() {
        // The primal is verified and `map` keeps types, so the copy has `v`'s type.
        let mapped = inst.map_values(|u| map[u.index()]);
        let y = b.copy_inst(func.ty(v), mapped, func.name(v).cloned());
        map.push(y);
    }
    // The name table need remember only the adjoint names of returned values: only their
    // base (`y_b`) is asked for again (by a seed, a repeated return, then the adjoint), and
    // the `p_b`, `p_b_k` of distinct names `p` never meet.
    let returned: FxHashSet<Value> = func.rets.iter().copied().collect();
    let forward_end = b.func().n_values();
    let first_inst = b.func().n_params;

    let mut adjoint = Adjoints::new(func.n_values());
    for &(r, seed) in &seeds {
        if act.is_active(r) {
            let a = match adjoint.get(r) {
                None => seed,
                Some(acc) => b.add(acc, seed),
            };
            adjoint.set(r, a);
        }
    }
    for i in (func.n_params..func.n_values()).rev() {
        let v = Value::new(i);
        if !act.is_active(v) {
            continue;
        }
        let Some(inst) = func.inst(v) else {
            continue;
        };
        let Some(dy) = adjoint.get(v) else {
            continue;
        };
        if let Some(n) = func.name_of(v) {
            let remember = returned.contains(&v);
            names.name_new_with(&mut b, dy, forward_end, || adjoint_name(n), remember);
        }
        let mut wanted = [false; 3];
        for (pos, w) in wanted.iter_mut().enumerate() {
            if let Some(Operand::Value(u)) = inst.operand(pos) {
                *w = carries_derivative(inst, pos) && act.is_active(u);
            }
        }
        if !wanted.iter().any(|&w| w) {
            continue;
        }
        let mapped = inst.map_values(|u| map[u.index()]);
        let y = map[v.index()];
        let ty = b.ty(y);
        // Every operand's contribution comes from the rulebook alone, never from whether the
        // other operands are active: a checkpoint stage sees a value that is passive in the
        // whole function (`ceil`'s result) as an active input, and its adjoints must still be
        // the tape's bit for bit.
        let contributions = partials(
            &mut TypedBuilder { b: &mut b, ty },
            &mapped,
            y.into(),
            &wanted,
        );
        for (pos, p) in contributions {
            let Some(Operand::Value(u)) = inst.operand(pos) else {
                unreachable!("wanted operands are values")
            };
            let acc = adjoint.get(u).map(Operand::from);
            let e = &mut TypedBuilder { b: &mut b, ty };
            adjoint.set(u, value_of(p.apply_to(e, acc, dy.into())));
        }
    }

    let mut zeros: Vec<(Type, Value)> = Vec::new();
    let mut rets: Vec<Value> = func.rets.iter().map(|r| map[r.index()]).collect();
    let n_body = b.func().n_values();
    for p in func.differentiated_params() {
        let ty = func.ty(p);
        let dp = match adjoint.get(p) {
            Some(a) => {
                if let Some(n) = func.name_of(p) {
                    let remember = returned.contains(&p);
                    names.name_new_with(&mut b, a, forward_end, || adjoint_name(n), remember);
                }
                a
            }
            None => zero(&mut b, &mut zeros, ty),
        };
        rets.push(dp);
    }
    let out = b.finish(&rets);
    (
        out,
        ForwardSweep {
            first_inst,
            end: forward_end,
            map,
        },
        adjoint,
        n_body,
    )
}

/// The primal values that the adjoint lines of `out` (built by [`build_vjp`]) read.
fn tape_of(func: &Function, out: &Function, forward: &ForwardSweep) -> Tape {
    let ForwardSweep {
        first_inst,
        end: forward_end,
        ref map,
    } = *forward;
    // Forward-sweep values of `out` back to the primal values they copy.
    let mut primal_of: Vec<Option<Value>> = vec![None; forward_end - first_inst];
    for (v, _) in func.insts() {
        primal_of[map[v.index()].index() - first_inst] = Some(v);
    }
    let mut on_tape = vec![false; func.n_values()];
    for data in &out.values[forward_end..] {
        if let adjit_ir::ValueDef::Inst(inst) = &data.def {
            inst.for_each_value(|u| {
                if (first_inst..forward_end).contains(&u.index()) {
                    if let Some(v) = primal_of[u.index() - first_inst] {
                        on_tape[v.index()] = true;
                    }
                }
            });
        }
    }
    let values: Vec<Value> = (0..func.n_values())
        .filter(|&i| on_tape[i])
        .map(Value::new)
        .collect();
    let stats = TapeStats {
        values: values.len(),
        bytes: values.iter().map(|&v| func.ty(v).bytes()).sum(),
    };
    Tape { values, stats }
}
