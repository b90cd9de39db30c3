//! The one place a sparse derivative matrix is planned. From a function and a [`SparseKind`]:
//! its exact structural pattern ([`adjit_diff::sparsity`]), the colouring chosen for it, the
//! seed-baked program of its nonzeros and, for a Hessian, the full symmetric pattern with the
//! mirror that fills it from the lower triangle. Every sparse object takes its plan from here
//! ([`crate::SparseJacobian`], [`crate::SparseHessian`], the sparse modes of
//! [`crate::Jacobian`] and [`crate::Hessian`], [`crate::sparse::compile_object`],
//! [`crate::sparse::summary`]), and every dense matrix written from nonzeros goes through the
//! one [`scatter`], so the objects cannot disagree on a pattern, a colour count or a bit.
//!
//! Planning is two steps because a dense object decides from the colour count whether the
//! sparse program pays: [`Analysis`] (pattern and colouring, cheap) and [`Analysis::plan`]
//! (the program, as large as the colour count times the function).

use adjit_diff::hessian::scalar_output;
use adjit_diff::sparsity::{
    best_jacobian_coloring, best_star_coloring, hessian_pattern, jacobian_pattern, sparse_hessian,
    sparse_jacobian, Coloring, SparsityPattern,
};
use adjit_ir::Function;

use crate::error::{Error, Result};

crate::options::named! {
    /// Which sparse derivative matrix: the name of its compile mode and bench row.
    SparseKind, "sparse matrix" {
        Jacobian => "sparse-jacobian", "The nonzeros of the Jacobian, CSR order: (x) -> (nz)",
        Hessian => "sparse-hessian", "The nonzeros of the Hessian's lower triangle, CSR order: (x) -> (nz)",
    }
}

/// The pattern, colouring and program of one sparse matrix, without compiling it.
pub struct SparsePlan {
    pub kind: SparseKind,
    /// The pattern of the program's outputs (for a Hessian: the lower triangle).
    pub pattern: SparsityPattern,
    /// For a Hessian: the full symmetric pattern the colouring is of.
    pub full: Option<SparsityPattern>,
    pub coloring: Coloring,
    /// `(x…) -> (nz…)`, simplified.
    pub program: Function,
    /// For a Hessian: for each entry of `full` (CSR order), the index of the lower-triangle
    /// value it mirrors ([`mirror`]); empty for a Jacobian.
    pub(crate) mirror: Vec<usize>,
}

impl std::fmt::Debug for SparsePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparsePlan")
            .field("kind", &self.kind)
            .field("nnz", &self.pattern.nnz())
            .field("program", &self.program.name)
            .finish_non_exhaustive()
    }
}

impl SparsePlan {
    /// Analyse and colour `func` and build the program of `kind` (verifies `func` first; a
    /// Hessian needs exactly one float output).
    pub fn new(func: &Function, kind: SparseKind) -> Result<SparsePlan> {
        adjit_ir::verify(func)?;
        Analysis::of_verified(func, kind)?.plan(func)
    }

    /// The pattern of the dense matrix: the Jacobian's, or the Hessian's full symmetric one.
    pub fn dense_pattern(&self) -> &SparsityPattern {
        self.full.as_ref().unwrap_or(&self.pattern)
    }

    /// For a Hessian, the lower-triangle value each entry of [`SparsePlan::dense_pattern`]
    /// mirrors; `None` for a Jacobian (its values are its entries).
    pub fn mirror(&self) -> Option<&[usize]> {
        self.full.as_ref().map(|_| self.mirror.as_slice())
    }
}

/// The pattern of one sparse matrix and the colouring chosen for it, before its program is
/// built.
pub(crate) struct Analysis {
    pub(crate) kind: SparseKind,
    /// Jacobian: its pattern; Hessian: the full symmetric pattern.
    pub(crate) pattern: SparsityPattern,
    /// Columns or rows, whichever needs fewer colours (Jacobian); a star colouring (Hessian).
    pub(crate) coloring: Coloring,
}

impl Analysis {
    /// The pattern and colouring of the matrix of `kind` of the verified `func`; a Hessian
    /// needs exactly one float output ([`adjit_diff::DiffError::NotScalar`]).
    pub(crate) fn of_verified(func: &Function, kind: SparseKind) -> Result<Analysis> {
        let (pattern, coloring) = match kind {
            SparseKind::Jacobian => {
                let pattern = jacobian_pattern(func);
                let coloring = best_jacobian_coloring(&pattern);
                (pattern, coloring)
            }
            SparseKind::Hessian => {
                scalar_output(func, None)?;
                let pattern = hessian_pattern(func);
                let coloring = best_star_coloring(&pattern);
                (pattern, coloring)
            }
        };
        Ok(Analysis {
            kind,
            pattern,
            coloring,
        })
    }

    /// Build the seed-baked program of the nonzeros (CSR order; a Hessian's lower triangle)
    /// and, for a Hessian, the mirror.
    pub(crate) fn plan(self, func: &Function) -> Result<SparsePlan> {
        let Analysis {
            kind,
            pattern,
            coloring,
        } = self;
        match kind {
            SparseKind::Jacobian => Ok(SparsePlan {
                kind,
                program: sparse_jacobian(func, &pattern, &coloring),
                pattern,
                full: None,
                coloring,
                mirror: Vec::new(),
            }),
            SparseKind::Hessian => {
                let program =
                    sparse_hessian(func, &pattern, &coloring).ok_or_else(|| Error::Internal {
                        func: func.name.clone(),
                        what: "the star colouring does not recover every entry",
                    })?;
                let lower = pattern.lower_triangle();
                Ok(SparsePlan {
                    kind,
                    mirror: mirror(&pattern, &lower),
                    pattern: lower,
                    full: Some(pattern),
                    coloring,
                    program,
                })
            }
        }
    }
}

/// For each entry `(i, j)` of the symmetric `full` pattern (CSR order), the index among the
/// nonzeros of `lower`, its lower triangle (CSR order), of the entry it mirrors:
/// `(max(i, j), min(i, j))`.
pub(crate) fn mirror(full: &SparsityPattern, lower: &SparsityPattern) -> Vec<usize> {
    full.entries()
        .map(|(i, j)| {
            let (r, c) = if j <= i { (i, j) } else { (j, i) };
            lower.indptr()[r] + lower.row(r).partition_point(|&k| (k as usize) < c)
        })
        .collect()
}

/// The values of the full symmetric pattern (`full`, CSR order) from the lower triangle's
/// (`lower`) through `mirror`. The lengths are the caller's to check.
pub(crate) fn expand(mirror: &[usize], lower: &[f64], full: &mut [f64]) {
    for (value, &k) in full.iter_mut().zip(mirror) {
        *value = lower[k];
    }
}

/// Write the row-major `dense` (`pattern.nrows() × pattern.ncols()`) from the nonzeros
/// `values` of `pattern` (through `mirror`, the value index of each entry, when the values are
/// a lower triangle), exact zeros elsewhere. The lengths are the caller's to check.
pub(crate) fn scatter(
    pattern: &SparsityPattern,
    values: &[f64],
    mirror: Option<&[usize]>,
    dense: &mut [f64],
) {
    dense.fill(0.0);
    let cols = pattern.ncols();
    for (k, (i, j)) in pattern.entries().enumerate() {
        dense[i * cols + j] = values[mirror.map_or(k, |m| m[k])];
    }
}
