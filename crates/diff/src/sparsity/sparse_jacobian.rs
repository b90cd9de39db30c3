//! The sparse Jacobian as one program: `(x…) -> (J's nonzeros…)`, in the CSR order of its
//! pattern, with the seed matrix of a colouring baked in.
//!
//! - A **column** colouring becomes a forward program with one direction per colour and
//!   literal unit seeds ([`crate::forward::jvp_unit_seeded`]); entry `(i, j)` is output `i` of
//!   direction `c(j)`.
//! - A **row** colouring becomes one reverse sweep per colour: the gradient of the sum of the
//!   outputs of that colour ([`crate::derive::vjp_seeded_with_one`] of the function restricted
//!   to them). The sweeps are inlined into one function, whose duplicated forward sweeps
//!   common-subexpression elimination merges; entry `(i, j)` is `x̄ⱼ` of sweep `c(i)`.
//!
//! Either way only structurally nonzero derivative terms exist (a direction or sweep carries
//! a tangent or adjoint only where its seeds reach), so after [`crate::simplify()`] the program
//! holds the symbolic Jacobian's arithmetic and nothing is decompressed at run time. The
//! pass leaves `func` alone and assumes a verified function and a valid colouring of
//! `pattern` (which must be [`crate::sparsity::jacobian_pattern`] of `func`).

use adjit_ir::{Function, InstData, Value, ValueDef};

use crate::derive::vjp_seeded_with_one;
use crate::forward::jvp_unit_seeded;
use crate::layout::{Kind, Layout, Part};
use crate::simplify::{dce, simplify};
use crate::sparsity::{names_within_limit, Coloring, ColoringKind, SparsityPattern};

/// `(x…) -> (nz…)`: the nonzeros of the Jacobian of `func` in CSR order of `pattern`. See the
/// module docs.
///
/// ```
/// use adjit_diff::sparsity::{best_column_coloring, jacobian_pattern, sparse_jacobian};
/// // y = (x0·x1, sin x2): nonzeros x1, x0, cos x2.
/// let f = adjit_ir::trace::trace_multi("f", &[adjit_ir::Type::F64; 3], |x| {
///     vec![x[0] * x[1], x[2].sin()]
/// });
/// let pattern = jacobian_pattern(&f);
/// let coloring = best_column_coloring(&pattern);
/// assert_eq!(coloring.n_colors, 2);
/// let j = sparse_jacobian(&f, &pattern, &coloring);
/// let nz = adjit_ir::interpret(&j, &[2.0, 3.0, 0.0]).unwrap();
/// assert_eq!(nz, vec![3.0, 2.0, 1.0]);
/// ```
///
/// # Panics
/// When `coloring` does not fit `pattern` (a caller's bug).
pub fn sparse_jacobian(
    func: &Function,
    pattern: &SparsityPattern,
    coloring: &Coloring,
) -> Function {
    let name = format!("{}_sparse_jacobian", func.name);
    let func = &*names_within_limit(func);
    let rets = match coloring.kind {
        ColoringKind::Rows => return by_rows(func, pattern, coloring, name),
        ColoringKind::Columns | ColoringKind::Star => by_columns(func, pattern, coloring),
    };
    let mut out = rets.0;
    set_rets(&mut out, &rets.1, name);
    simplify(&dce(&out))
}

/// The forward program and, per entry, the return value that holds it.
fn by_columns(
    func: &Function,
    pattern: &SparsityPattern,
    coloring: &Coloring,
) -> (Function, Vec<Value>) {
    let k = coloring.n_colors;
    let program = jvp_unit_seeded(func, &coloring.colors, k);
    let layout = Layout::of(func, Kind::Jvp(k));
    let rets = pattern
        .entries()
        .map(|(i, j)| {
            let d = coloring.colors[j] as usize;
            program.rets[layout.output(Part::OutputTangent(d)).start + i]
        })
        .collect();
    (program, rets)
}

fn by_rows(
    func: &Function,
    pattern: &SparsityPattern,
    coloring: &Coloring,
    name: String,
) -> Function {
    let float_rets: Vec<Value> = func
        .rets
        .iter()
        .zip(&func.ret_types)
        .filter(|(_, t)| t.is_float())
        .map(|(&r, _)| r)
        .collect();
    let mut out = Function::new(name);
    out.values
        .extend(func.values[..func.n_params].iter().cloned());
    out.n_params = func.n_params;
    for p in func.params() {
        out.set_param_kind(p, func.param_kind(p));
    }
    // x̄ of every sweep, by colour.
    let mut gradients: Vec<Vec<Value>> = Vec::with_capacity(coloring.n_colors);
    for class in coloring.classes() {
        let mut restricted = func.clone();
        restricted.rets.clear();
        restricted.ret_types.clear();
        for &row in &class {
            restricted.push_ret(float_rets[row as usize]);
        }
        let sweep = simplify(&vjp_seeded_with_one(&restricted));
        let rets = inline(&mut out, &sweep);
        let n_grad = Layout::of(&restricted, Kind::Gradient)
            .output(Part::Gradient)
            .len();
        gradients.push(rets[rets.len() - n_grad..].to_vec());
    }
    let rets: Vec<Value> = pattern
        .entries()
        .map(|(i, j)| gradients[coloring.colors[i] as usize][j])
        .collect();
    let name = std::mem::take(&mut out.name);
    set_rets(&mut out, &rets, name);
    simplify(&dce(&out))
}

/// Append the body of `g` (whose parameters are those of `out`) to `out`, unnamed (the sweeps
/// would define the same names); returns the images of `g`'s returns.
fn inline(out: &mut Function, g: &Function) -> Vec<Value> {
    let mut map: Vec<Value> = out.params().collect();
    for data in &g.values[g.n_params..] {
        if let ValueDef::Inst(inst) = &data.def {
            let inst: InstData = inst.map_values(|u| map[u.index()]);
            map.push(out.push_inst(data.ty, inst, None));
        }
    }
    g.rets.iter().map(|r| map[r.index()]).collect()
}

/// Make `rets` the returns of `out`, named `name`.
fn set_rets(out: &mut Function, rets: &[Value], name: String) {
    out.rets.clear();
    out.ret_types.clear();
    for &r in rets {
        out.push_ret(r);
    }
    out.name = name;
}
