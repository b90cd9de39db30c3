//! Exact structural sparsity of a program's derivatives, read from the IR.
//!
//! [`jacobian_pattern`] propagates, forward through the program, the set of differentiated
//! inputs each value depends on (through operands that carry a derivative,
//! [`crate::rules::carries_derivative`]: not `select`'s condition, `fcmp`, `floor`, `ceil`);
//! the sets of the float outputs are the rows of the Jacobian pattern. `select` takes the union
//! of both branches, so the pattern holds at every point. [`hessian_pattern`] adds, for every
//! instruction whose adjoint is structurally nonzero, the products of its operands' sets over
//! the operand pairs the rulebook says are nonlinear ([`crate::rules::second_order_pairs`]).
//!
//! Both are structural: an entry outside the pattern is zero at every point (and computed as an
//! exact 0 by the sparse programs); an entry inside may still vanish at some points, or
//! everywhere when terms cancel (`x - x`). `data` and `bool` inputs are never columns.
//!
//! Sets are sorted `u32` vectors, each freed after its value's last use, so memory follows the
//! live values rather than the program; the cost is O(size × set size) for the Jacobian and
//! adds O(Σ |set(a)|·|set(b)|) over nonlinear instructions for the Hessian.

use adjit_ir::{Function, Operand, Value};

use crate::activity::activity;
use crate::rules::{carries_derivative, second_order_pairs};
use crate::sparsity::SparsityPattern;

/// The pattern of `∂yᵢ/∂xⱼ`: one row per float output, one column per differentiated float
/// parameter ([`Function::differentiated_params`]), both in order.
///
/// ```
/// use adjit_diff::sparsity::jacobian_pattern;
/// let f = adjit_ir::trace::trace_multi("f", &[adjit_ir::Type::F64; 3], |x| {
///     vec![x[0] * x[1], x[2].sin()]
/// });
/// let p = jacobian_pattern(&f);
/// assert_eq!((p.row(0), p.row(1)), (&[0, 1][..], &[2][..]));
/// ```
pub fn jacobian_pattern(func: &Function) -> SparsityPattern {
    let ncols = func.differentiated_params().count();
    if let Some(rows) = backward_rows(func, ncols) {
        return SparsityPattern::from_rows(ncols, rows);
    }
    let mut rows = Vec::new();
    sweep(
        func,
        None,
        |_, _, _| {},
        |sets| {
            for (&r, ty) in func.rets.iter().zip(&func.ret_types) {
                if ty.is_float() {
                    rows.push(sets[r.index()].clone().unwrap_or_default());
                }
            }
        },
    );
    SparsityPattern::from_rows(ncols, rows)
}

/// The rows of the Jacobian pattern by a backward walk from each float output over the
/// derivative-carrying operands, as long as the walks stay within a budget of a few times
/// the program's size (outputs with small cones, or few outputs: one gradient row is one
/// walk, where forward sets would grow along a long sum and cost O(size²)). `None` when over
/// budget (many outputs sharing large cones), where the forward sweep is the cheap way.
fn backward_rows(func: &Function, ncols: usize) -> Option<Vec<Vec<u32>>> {
    let n = func.n_values();
    let mut budget = 8usize.saturating_mul(n).saturating_add(1 << 20);
    let mut column = vec![u32::MAX; func.n_params];
    for (col, p) in func.differentiated_params().enumerate() {
        column[p.index()] = col as u32;
    }
    let mut stamp = vec![usize::MAX; n];
    let mut stack: Vec<Value> = Vec::new();
    let mut rows = Vec::new();
    for (k, (&r, ty)) in func.rets.iter().zip(&func.ret_types).enumerate() {
        if !ty.is_float() {
            continue;
        }
        let mut row = Vec::new();
        stamp[r.index()] = k;
        stack.push(r);
        while let Some(v) = stack.pop() {
            budget = budget.checked_sub(1)?;
            match func.inst(v) {
                None => {
                    let col = column[v.index()];
                    if col != u32::MAX {
                        row.push(col);
                    }
                }
                Some(inst) => {
                    for (pos, op) in inst.operands().into_iter().enumerate() {
                        if let Operand::Value(u) = op {
                            if carries_derivative(inst, pos) && stamp[u.index()] != k {
                                stamp[u.index()] = k;
                                stack.push(u);
                            }
                        }
                    }
                }
            }
        }
        debug_assert!(row.iter().all(|&c| (c as usize) < ncols));
        rows.push(row);
    }
    Some(rows)
}

/// The pattern of the Hessian `∂²y/∂xᵢ∂xⱼ` of the sum of the float outputs (of the one float
/// output, for a scalar function), full and symmetric: one row and column per differentiated
/// float parameter.
///
/// ```
/// use adjit_diff::sparsity::hessian_pattern;
/// // x0·x1 + exp(x2) + 3·x3: x0 and x1 interact, x2 with itself, x3 not at all.
/// let f = adjit_ir::trace::trace(4, |x| x[0] * x[1] + x[2].exp() + 3.0 * x[3]);
/// let h = hessian_pattern(&f);
/// assert_eq!(h.indices(), &[1, 0, 2]);
/// assert_eq!(h.indptr(), &[0, 1, 2, 3, 3]);
/// ```
pub fn hessian_pattern(func: &Function) -> SparsityPattern {
    let n = func.differentiated_params().count();
    let act = activity(func);
    // Entries (i, j) with j ≤ i, appended to row i; deduplicated when a row doubles.
    let mut lower: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut deduped: Vec<usize> = vec![0; n];
    let mut add = |i: u32, j: u32| {
        let (hi, lo) = if i >= j { (i, j) } else { (j, i) };
        let row = &mut lower[hi as usize];
        row.push(lo);
        if row.len() > 2 * deduped[hi as usize] + 64 {
            row.sort_unstable();
            row.dedup();
            deduped[hi as usize] = row.len();
        }
    };
    // Only values that reach an operand of a nonlinear pair through linear operations need
    // a set: a long running sum (linear) never carries one.
    let needed = needed_for_hessian(func, &act);
    sweep(
        func,
        Some(&needed),
        |v, operand_sets, inst| {
            if !act.is_active(v) {
                return;
            }
            for &(p, q) in second_order_pairs(inst) {
                if let (Some(a), Some(b)) = (operand_sets[p], operand_sets[q]) {
                    for &i in a {
                        for &j in b {
                            add(i, j);
                        }
                    }
                }
            }
        },
        |_| {},
    );
    SparsityPattern::from_rows(n, lower).symmetrized()
}

/// Which values the Hessian analysis needs the index set of: the value operands of the
/// nonlinear pairs of active instructions (pairs whose both operands are values; a literal
/// makes the operation linear in the other), and, backwards, every derivative-carrying operand
/// of a needed value.
fn needed_for_hessian(func: &Function, act: &crate::activity::Activity) -> Vec<bool> {
    let mut needed = vec![false; func.n_values()];
    for (v, inst) in func.insts().collect::<Vec<_>>().into_iter().rev() {
        let operands = inst.operands();
        let is_value = |pos: usize| matches!(operands.get(pos), Some(Operand::Value(_)));
        if act.is_active(v) {
            for &(p, q) in second_order_pairs(inst) {
                if is_value(p) && is_value(q) {
                    for pos in [p, q] {
                        if let Some(Operand::Value(u)) = operands.get(pos) {
                            needed[u.index()] = true;
                        }
                    }
                }
            }
        }
        if needed[v.index()] {
            for (pos, op) in operands.iter().enumerate() {
                if let Operand::Value(u) = op {
                    if carries_derivative(inst, pos) {
                        needed[u.index()] = true;
                    }
                }
            }
        }
    }
    needed
}

/// The sorted union of the sets of `sources`, built in the largest one when it dies here
/// (`dies(u)`: this instruction is its last use), so that a set growing along a chain (a
/// running sum) is extended in place rather than copied at every link: linear, not quadratic,
/// in the chain's length.
fn union(
    sets: &mut [Option<Vec<u32>>],
    sources: [Option<usize>; 3],
    dies: impl Fn(usize) -> bool,
) -> Option<Vec<u32>> {
    let mut distinct: Vec<usize> = sources.iter().flatten().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    let len = |sets: &[Option<Vec<u32>>], u: usize| sets[u].as_ref().map_or(0, Vec::len);
    let &largest = distinct.iter().max_by_key(|&&u| len(sets, u))?;
    let mut base = if dies(largest) {
        sets[largest].take().unwrap_or_default()
    } else {
        sets[largest].clone().unwrap_or_default()
    };
    let others: Vec<usize> = distinct.into_iter().filter(|&u| u != largest).collect();
    let added: usize = others.iter().map(|&u| len(sets, u)).sum();
    if added * 16 <= base.len() {
        // A few entries into a long set: binary-search each (an append when it is the
        // largest, as along a running sum over increasing indices).
        for &u in &others {
            for &i in sets[u].as_deref().unwrap_or(&[]) {
                if let Err(at) = base.binary_search(&i) {
                    base.insert(at, i);
                }
            }
        }
    } else {
        for &u in &others {
            base.extend_from_slice(sets[u].as_deref().unwrap_or(&[]));
        }
        base.sort_unstable();
        base.dedup();
    }
    Some(base)
}

/// The forward sweep of index sets (of the `needed` values only, when given).
/// `visit(v, operand_sets, inst)` sees every instruction with the sets of its operands (by
/// position; `None` for a literal, an empty set, an operand that carries no derivative or
/// one whose set is not needed); `at_end` sees the sets that are still alive (the returned
/// values') after the last instruction.
fn sweep(
    func: &Function,
    needed: Option<&[bool]>,
    mut visit: impl FnMut(Value, [Option<&[u32]>; 3], &adjit_ir::InstData),
    at_end: impl FnOnce(&[Option<Vec<u32>>]),
) {
    let n = func.n_values();
    // The last instruction that reads each value; returned values live to the end.
    let mut last_use = vec![0usize; n];
    for (v, inst) in func.insts() {
        inst.for_each_value(|u| last_use[u.index()] = v.index());
    }
    for &r in &func.rets {
        last_use[r.index()] = usize::MAX;
    }
    let mut sets: Vec<Option<Vec<u32>>> = vec![None; n];
    for (col, p) in func.differentiated_params().enumerate() {
        sets[p.index()] = Some(vec![col as u32]);
    }
    for (v, inst) in func.insts() {
        let operands = inst.operands();
        // The values whose (non-empty) sets flow into `v`, by operand position.
        let mut sources: [Option<usize>; 3] = [None; 3];
        for (pos, op) in operands.iter().enumerate() {
            if let Operand::Value(u) = op {
                if carries_derivative(inst, pos)
                    && sets[u.index()].as_ref().is_some_and(|s| !s.is_empty())
                {
                    sources[pos] = Some(u.index());
                }
            }
        }
        let operand_sets = sources.map(|u| u.and_then(|u| sets[u].as_deref()));
        visit(v, operand_sets, inst);
        let is_needed = needed.is_none_or(|needed| needed[v.index()]);
        // A value nothing reads (dead code) keeps no set.
        if is_needed && last_use[v.index()] > v.index() {
            let set = union(&mut sets, sources, |u| last_use[u] == v.index());
            sets[v.index()] = set;
        }
        inst.for_each_value(|u| {
            if last_use[u.index()] == v.index() {
                sets[u.index()] = None;
            }
        });
    }
    at_end(&sets);
}
