//! The sparse Hessian as one program: `(x…) -> (H's lower-triangle nonzeros…)`, in the CSR
//! order of the lower triangle of its pattern, by forward-over-reverse with the seed matrix of
//! a star colouring baked in.
//!
//! The gradient program (`vjp` with ȳ = 1, simplified) is differentiated forward with one
//! direction per colour and literal unit seeds ([`crate::forward::jvp_unit_seeded`]), so
//! direction `c` computes `H·s_c` and carries tangents only where the seeds of `c` reach.
//! Each entry `(i, j)` is then one number of one product, as [`crate::sparsity::star_recovery`]
//! says: `(H·s_c(j))ᵢ` or `(H·s_c(i))ⱼ`. After [`crate::simplify()`] no multiplication by a
//! 0/1 seed is left. The pass leaves `func` alone and assumes a verified function with float
//! outputs (their sum is differentiated, as in [`crate::hvp`]) and a star colouring of
//! `pattern` (the full symmetric [`crate::sparsity::hessian_pattern`] of `func`).

use adjit_ir::{Function, Value};

use crate::forward::jvp_unit_seeded;
use crate::layout::{Kind, Layout, Part};
use crate::seeded::vjp_seeded_with_one;
use crate::simplify::{dce, simplify_owned};
use crate::sparsity::{names_within_limit, star_recovery, Coloring, SparsityPattern};

/// `(x…) -> (nz…)`: the lower triangle of the Hessian of `func` in CSR order. `None` when
/// `coloring` is not a star colouring of `pattern`.
///
/// ```
/// use adjit_diff::sparsity::{best_star_coloring, hessian_pattern, sparse_hessian};
/// // Σ (x_{i+1} − x_i²)²: tridiagonal, three colours.
/// let f = adjit_ir::trace::trace(5, |x| {
///     (0..4)
///         .map(|i| {
///             let d = x[i + 1] - x[i] * x[i];
///             d * d
///         })
///         .sum()
/// });
/// let pattern = hessian_pattern(&f);
/// let coloring = best_star_coloring(&pattern);
/// assert_eq!(coloring.n_colors, 3);
/// let h = sparse_hessian(&f, &pattern, &coloring).unwrap();
/// assert_eq!(h.rets.len(), pattern.lower_triangle().nnz());
/// ```
pub fn sparse_hessian(
    func: &Function,
    pattern: &SparsityPattern,
    coloring: &Coloring,
) -> Option<Function> {
    let recovery = star_recovery(pattern, &coloring.colors)?;
    let func = &*names_within_limit(func);
    let gradient = simplify_owned(vjp_seeded_with_one(func));
    let k = coloring.n_colors;
    let mut program = jvp_unit_seeded(&gradient, &coloring.colors, k);
    let n = pattern.nrows();
    let outer = Layout::of(&gradient, Kind::Jvp(k));
    let rets: Vec<Value> = recovery
        .iter()
        .map(|&(row, color)| {
            // The tangents of x̄ are the last `n` of each direction's output tangents.
            let tangents = outer.output(Part::OutputTangent(color as usize));
            program.rets[tangents.end - n + row as usize]
        })
        .collect();
    program.rets.clear();
    program.ret_types.clear();
    for r in rets {
        program.push_ret(r);
    }
    program.name = format!("{}_sparse_hessian", func.name);
    Some(simplify_owned(dce(&program)))
}
