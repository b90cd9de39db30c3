//! The sparse Jacobian as one program: `(x…) -> (J's nonzeros…)`, in the CSR order of its
//! pattern, with the seed matrix of a colouring baked in.
//!
//! - A **column** colouring becomes a forward program with one direction per colour and
//!   literal unit seeds ([`crate::forward::jvp_unit_seeded`]); entry `(i, j)` is output `i` of
//!   direction `c(j)`.
//! - A **row** colouring becomes one reverse sweep per colour: the gradient of the sum of the
//!   outputs of that colour ([`crate::seeded::vjp_seeded_with_one`] of the function restricted
//!   to them). The sweeps are inlined into one function, whose duplicated forward sweeps
//!   common-subexpression elimination merges; entry `(i, j)` is `x̄ⱼ` of sweep `c(i)`.
//!
//! Either way only structurally nonzero derivative terms exist (a direction or sweep carries
//! a tangent or adjoint only where its seeds reach), so after [`crate::simplify()`] the program
//! holds the symbolic Jacobian's arithmetic and nothing is decompressed at run time. The
//! pass leaves `func` alone and assumes a verified function and a valid colouring of
//! `pattern` (which must be [`crate::sparsity::jacobian_pattern`] of `func`).

use std::ops::Range;

use adjit_ir::{Function, Value, ValueDef};

use crate::forward::jvp_unit_seeded;
use crate::layout::{Kind, Layout, Part};
use crate::seeded::vjp_seeded_with_one;
use crate::simplify::{dce, simplify_owned};
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
    simplify_owned(dce(&out))
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
    sweeps(func, pattern, &coloring.classes(), 0..pattern.nrows(), name)
}

/// `(x…) -> (nz…)`: the nonzeros of rows `rows` of the Jacobian of `func` (CSR order of
/// `pattern`, which must be [`crate::sparsity::jacobian_pattern`] of `func`), one reverse
/// sweep per row, each seeded with a literal 1 on its own output: a cotangent that is zero is
/// absent, so a row never picks up `0·∞` or `0·NaN` from another output's partial through a
/// shared intermediate. A dense reverse-mode Jacobian assembles its rows from such programs.
/// Each sweep is built from the slice of `func` its row depends on, so the cost is the sum of
/// the rows' cones, not rows × size.
///
/// ```
/// use adjit_diff::sparsity::{jacobian_pattern, sparse_jacobian_rows};
/// // y0 = acos(t), y1 = t, t = x0 + x1: row 1 is (1, 1) even where acos'(t) is NaN.
/// let f = adjit_ir::trace::trace_multi("f", &[adjit_ir::Type::F64; 2], |x| {
///     let t = x[0] + x[1];
///     vec![t.acos(), t]
/// });
/// let rows = sparse_jacobian_rows(&f, &jacobian_pattern(&f), 1..2);
/// assert_eq!(adjit_ir::interpret(&rows, &[2.0, 1.0]).unwrap(), vec![1.0, 1.0]);
/// ```
///
/// # Panics
/// When `rows` is not within the pattern's rows (a caller's bug).
pub fn sparse_jacobian_rows(
    func: &Function,
    pattern: &SparsityPattern,
    rows: Range<usize>,
) -> Function {
    let name = format!("{}_jacobian_rows_{}_{}", func.name, rows.start, rows.end);
    let func = &*names_within_limit(func);
    let classes: Vec<Vec<u32>> = rows.clone().map(|r| vec![r as u32]).collect();
    sweeps(func, pattern, &classes, rows, name)
}

/// `(x…) -> (nz…)`: the nonzeros of column `col` of the Jacobian of `func` (in row order;
/// `pattern` must be [`crate::sparsity::jacobian_pattern`] of `func`), one forward sweep seeded
/// with a literal 1 on its own input: a tangent that is zero is absent, so the column never
/// picks up `∞·0` or `NaN·0` from another input's partial. A dense forward-mode Jacobian
/// rebuilds a column that came out with a NaN from it.
///
/// ```
/// use adjit_diff::sparsity::{jacobian_pattern, sparse_jacobian_column};
/// // y = x0 + √x1 at x1 = 0: ∂y/∂x0 = 1 although ∂y/∂x1 = ∞.
/// let f = adjit_ir::trace::trace(2, |x| x[0] + x[1].sqrt());
/// let column = sparse_jacobian_column(&f, &jacobian_pattern(&f), 0);
/// assert_eq!(adjit_ir::interpret(&column, &[0.5, 0.0]).unwrap(), vec![1.0]);
/// ```
///
/// # Panics
/// When `col` is not a column of the pattern (a caller's bug).
pub fn sparse_jacobian_column(func: &Function, pattern: &SparsityPattern, col: usize) -> Function {
    assert!(col < pattern.ncols(), "column {col} of {}", pattern.ncols());
    let name = format!("{}_jacobian_column_{col}", func.name);
    let func = &*names_within_limit(func);
    // Direction 0 is the column's own unit seed; direction 1 takes the others, and nothing
    // reads it, so dead-code elimination removes it.
    let colors: Vec<u32> = (0..pattern.ncols()).map(|j| u32::from(j != col)).collect();
    let mut program = jvp_unit_seeded(func, &colors, 2);
    let layout = Layout::of(func, Kind::Jvp(2));
    let tangent = layout.output(Part::OutputTangent(0)).start;
    let rets: Vec<Value> = pattern
        .entries()
        .filter(|&(_, j)| j == col)
        .map(|(i, _)| program.rets[tangent + i])
        .collect();
    set_rets(&mut program, &rets, name);
    simplify_owned(dce(&program))
}

/// One reverse sweep per class of rows (the gradient of the sum of its outputs, from the slice
/// of `func` they depend on), inlined into one function whose duplicated forward sweeps
/// common-subexpression elimination merges; returns the entries of `rows` (every row of which
/// is in exactly one class) in CSR order.
fn sweeps(
    func: &Function,
    pattern: &SparsityPattern,
    classes: &[Vec<u32>],
    rows: Range<usize>,
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
    // The Jacobian column of every differentiated parameter.
    let mut column = vec![u32::MAX; func.n_params];
    for (col, p) in func.differentiated_params().enumerate() {
        column[p.index()] = col as u32;
    }
    let first = pattern.indptr()[rows.start];
    let placeholder = Value::new(0);
    let mut entries = vec![placeholder; pattern.indptr()[rows.end] - first];
    let mut slicer = Slicer::new(func);
    // x̄ of the current sweep by column (only the sweep's own columns are read).
    let mut by_column = vec![placeholder; pattern.ncols()];
    for class in classes {
        let rets: Vec<Value> = class.iter().map(|&row| float_rets[row as usize]).collect();
        let (slice, params) = slicer.cone(func, &rets);
        let sweep = simplify_owned(vjp_seeded_with_one(&slice));
        let images = out.inline(&sweep, &params);
        let n_grad = Layout::of(&slice, Kind::Gradient)
            .output(Part::Gradient)
            .len();
        let gradient = &images[images.len() - n_grad..];
        for (p, &g) in slice.differentiated_params().zip(gradient) {
            by_column[column[params[p.index()].index()] as usize] = g;
        }
        for &row in class {
            let row = row as usize;
            let at = pattern.indptr()[row] - first;
            for (k, &j) in pattern.row(row).iter().enumerate() {
                entries[at + k] = by_column[j as usize];
            }
        }
    }
    let name = std::mem::take(&mut out.name);
    set_rets(&mut out, &entries, name);
    simplify_owned(dce(&out))
}

/// Cuts the part of a function that some of its values depend on, in time proportional to
/// that part: marks carry the number of the cut, so nothing is cleared between cuts.
struct Slicer {
    mark: Vec<u32>,
    epoch: u32,
    /// The image in the current slice of each marked value.
    map: Vec<Value>,
}

impl Slicer {
    fn new(func: &Function) -> Slicer {
        Slicer {
            mark: vec![0; func.n_values()],
            epoch: 0,
            map: vec![Value::new(0); func.n_values()],
        }
    }

    /// `(slice, params)`: the parameters and instructions `rets` depend on (through every
    /// operand, conditions included), in program order, returning `rets`; `params[k]` is the
    /// parameter of `func` that parameter `k` of the slice stands for.
    fn cone(&mut self, func: &Function, rets: &[Value]) -> (Function, Vec<Value>) {
        self.epoch += 1;
        let epoch = self.epoch;
        let mut stack: Vec<Value> = Vec::new();
        let mut reached: Vec<Value> = Vec::new();
        for &r in rets {
            if self.mark[r.index()] != epoch {
                self.mark[r.index()] = epoch;
                stack.push(r);
            }
        }
        while let Some(v) = stack.pop() {
            reached.push(v);
            if let Some(inst) = func.inst(v) {
                inst.for_each_value(|u| {
                    if self.mark[u.index()] != epoch {
                        self.mark[u.index()] = epoch;
                        stack.push(u);
                    }
                });
            }
        }
        reached.sort_unstable_by_key(|v| v.index());
        let mut slice = Function::new(func.name.clone());
        let mut params = Vec::new();
        for &v in &reached {
            let data = func.data(v);
            match &data.def {
                ValueDef::Param => {
                    let p = slice.add_param(data.ty, data.name.clone());
                    slice.set_param_kind(p, func.param_kind(v));
                    params.push(v);
                    self.map[v.index()] = p;
                }
                ValueDef::Inst(inst) => {
                    let inst = inst.map_values(|u| self.map[u.index()]);
                    self.map[v.index()] = slice.push_inst(data.ty, inst, data.name.clone());
                }
            }
        }
        for &r in rets {
            slice.push_ret(self.map[r.index()]);
        }
        (slice, params)
    }
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
