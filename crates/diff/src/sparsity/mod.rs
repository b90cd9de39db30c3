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
pub use sparse_jacobian::sparse_jacobian;

/// The colouring a sparse Jacobian uses: the fewer colours of the best column colouring and
/// the best row colouring (columns on ties: a forward direction is cheaper than a reverse
/// sweep).
pub fn best_jacobian_coloring(pattern: &SparsityPattern) -> Coloring {
    let columns = best_column_coloring(pattern);
    let rows = best_row_coloring(pattern);
    if rows.n_colors < columns.n_colors {
        rows
    } else {
        columns
    }
}
