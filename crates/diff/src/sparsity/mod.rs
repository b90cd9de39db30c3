//! Sparse derivative matrices: exact structural patterns read from the IR ([`analysis`]),
//! colourings that group columns or rows into few seed directions ([`coloring`]), and the
//! transforms that compile every nonzero into one program with the seeds and the recovery
//! baked in ([`sparse_jacobian()`], [`sparse_hessian()`]).
//!
//! Analysis → colouring → emission: the colouring reads only patterns, and the transforms read
//! patterns and colourings; nothing here depends on how a program is run.

pub mod analysis;
pub mod coloring;
mod pattern;
mod sparse_hessian;
mod sparse_jacobian;

pub use analysis::{hessian_pattern, jacobian_pattern};
pub use coloring::{
    best_column_coloring, best_row_coloring, best_star_coloring, color_columns, color_rows,
    color_star, is_column_coloring, is_star_coloring, star_recovery, Coloring, ColoringKind,
    Ordering,
};
pub use pattern::{PatternError, SparsityPattern};
pub use sparse_hessian::sparse_hessian;
pub use sparse_jacobian::{sparse_jacobian, sparse_jacobian_column, sparse_jacobian_rows};

use std::borrow::Cow;

use adjit_ir::Function;

/// Beyond this many values, the sparse transforms drop the names of intermediate values
/// before differentiating: naming every derived line (`dx_2`, `x_b`) costs three quarters of
/// the transform time of a 10⁶-value program, and nobody reads such a dump line by line.
const NAMED_LIMIT: usize = 50_000;

/// `func`, or a copy without names when it is larger than [`NAMED_LIMIT`].
fn names_within_limit(func: &Function) -> Cow<'_, Function> {
    if func.n_values() <= NAMED_LIMIT {
        return Cow::Borrowed(func);
    }
    let mut f = func.clone();
    for data in &mut f.values {
        data.name = None;
    }
    Cow::Owned(f)
}

/// Beyond this many sweeps [`best_jacobian_coloring`] prefers rows when neither side compresses.
const MANY_SWEEPS: usize = 8;

/// The colouring a sparse Jacobian uses: the fewer colours of the best column colouring and
/// the best row colouring (columns on ties: a forward direction is cheaper than a reverse
/// sweep), except when neither side compresses (a dense row and a dense column) and there
/// are more than `MANY_SWEEPS` rows: rows then, one sweep per row, whose emission costs the
/// rows' cones rather than one tangent slot per direction and value. A side whose lower bound (the densest row for columns, the densest column for rows)
/// cannot beat the other side's result is not coloured at all, so a gradient-shaped pattern
/// (one dense row) costs one row colouring, not a colouring of a complete column graph.
pub fn best_jacobian_coloring(pattern: &SparsityPattern) -> Coloring {
    let column_bound = pattern.max_row_len();
    let row_bound = pattern.transpose().max_row_len();
    if column_bound == pattern.ncols()
        && row_bound == pattern.nrows()
        && pattern.nrows() > MANY_SWEEPS
    {
        // A dense row and a dense column (an arrowhead): neither side compresses. Rows then,
        // because each row's sweep is cut from that row's cone, where the forward transform
        // would hold a tangent slot per direction for every value (rows × size).
        return best_row_coloring(pattern);
    }
    if row_bound < column_bound {
        let rows = best_row_coloring(pattern);
        if rows.n_colors <= column_bound {
            return rows;
        }
        let columns = best_column_coloring(pattern);
        return if rows.n_colors < columns.n_colors {
            rows
        } else {
            columns
        };
    }
    let columns = best_column_coloring(pattern);
    if columns.n_colors <= row_bound {
        return columns;
    }
    let rows = best_row_coloring(pattern);
    if rows.n_colors < columns.n_colors {
        rows
    } else {
        columns
    }
}
