//! [`SparsityPattern`]: which entries of a derivative matrix can be nonzero, in compressed
//! sparse row (CSR) form with sorted column indices.

use std::fmt;

/// Why a pattern given by a caller is not a valid CSR structure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("indptr has {got} entries, expected {expected} (rows + 1)")]
    IndptrLength { expected: usize, got: usize },
    #[error("indptr must start at 0, not decrease, and end at the number of indices ({nnz})")]
    Indptr { nnz: usize },
    #[error("row {row}: column {col} is out of range (the matrix has {ncols} columns)")]
    Column { row: usize, col: u32, ncols: usize },
    #[error("row {row}: column indices must be strictly increasing")]
    Unsorted { row: usize },
}

/// The structurally nonzero entries of an `nrows × ncols` matrix: row `i` holds the strictly
/// increasing column indices `indices()[indptr()[i]..indptr()[i + 1]]`.
///
/// ```
/// use adjit_diff::sparsity::SparsityPattern;
/// let p = SparsityPattern::from_rows(3, vec![vec![0, 1], vec![2], vec![1, 0]]);
/// assert_eq!(p.indptr(), &[0, 2, 3, 5]);
/// assert_eq!(p.indices(), &[0, 1, 2, 0, 1]);
/// assert_eq!(p.transpose().row(1), &[0, 2]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SparsityPattern {
    nrows: usize,
    ncols: usize,
    indptr: Vec<usize>,
    indices: Vec<u32>,
}

impl SparsityPattern {
    /// A pattern from the column indices of each row (in any order, duplicates allowed).
    ///
    /// # Panics
    /// When an index is not below `ncols` (a caller's bug; use [`SparsityPattern::from_csr`]
    /// for data from outside).
    pub fn from_rows(ncols: usize, rows: Vec<Vec<u32>>) -> SparsityPattern {
        let nrows = rows.len();
        let mut indptr = Vec::with_capacity(nrows + 1);
        let mut indices = Vec::with_capacity(rows.iter().map(Vec::len).sum());
        indptr.push(0);
        for mut row in rows {
            row.sort_unstable();
            row.dedup();
            if let Some(&last) = row.last() {
                assert!((last as usize) < ncols, "column {last} out of range");
            }
            indices.extend_from_slice(&row);
            indptr.push(indices.len());
        }
        SparsityPattern {
            nrows,
            ncols,
            indptr,
            indices,
        }
    }

    /// A pattern from CSR arrays, checked.
    pub fn from_csr(
        nrows: usize,
        ncols: usize,
        indptr: Vec<usize>,
        indices: Vec<u32>,
    ) -> Result<SparsityPattern, PatternError> {
        if indptr.len() != nrows + 1 {
            return Err(PatternError::IndptrLength {
                expected: nrows + 1,
                got: indptr.len(),
            });
        }
        let nnz = indices.len();
        if indptr[0] != 0 || indptr[nrows] != nnz || indptr.windows(2).any(|w| w[0] > w[1]) {
            return Err(PatternError::Indptr { nnz });
        }
        for row in 0..nrows {
            let cols = &indices[indptr[row]..indptr[row + 1]];
            if cols.windows(2).any(|w| w[0] >= w[1]) {
                return Err(PatternError::Unsorted { row });
            }
            if let Some(&col) = cols.last() {
                if col as usize >= ncols {
                    return Err(PatternError::Column { row, col, ncols });
                }
            }
        }
        Ok(SparsityPattern {
            nrows,
            ncols,
            indptr,
            indices,
        })
    }

    /// The dense `nrows × ncols` pattern (every entry).
    pub fn dense(nrows: usize, ncols: usize) -> SparsityPattern {
        let all: Vec<u32> = (0..ncols as u32).collect();
        SparsityPattern::from_rows(ncols, vec![all; nrows])
    }

    pub fn nrows(&self) -> usize {
        self.nrows
    }

    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// `(rows, columns)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.nrows, self.ncols)
    }

    /// The number of structurally nonzero entries.
    pub fn nnz(&self) -> usize {
        self.indices.len()
    }

    /// Row starts into [`SparsityPattern::indices`]: `nrows + 1` offsets.
    pub fn indptr(&self) -> &[usize] {
        &self.indptr
    }

    /// The column index of every entry, row by row.
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }

    /// The sorted column indices of row `i`.
    pub fn row(&self, i: usize) -> &[u32] {
        &self.indices[self.indptr[i]..self.indptr[i + 1]]
    }

    /// Whether `(i, j)` is in the pattern.
    pub fn contains(&self, i: usize, j: usize) -> bool {
        i < self.nrows && u32::try_from(j).is_ok_and(|j| self.row(i).binary_search(&j).is_ok())
    }

    /// Every entry `(row, column)` in CSR order.
    pub fn entries(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.nrows).flat_map(move |i| self.row(i).iter().map(move |&j| (i, j as usize)))
    }

    /// The most entries in one row (a lower bound on the colours of a column colouring).
    pub fn max_row_len(&self) -> usize {
        self.indptr
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }

    /// The transposed pattern, which is this one in compressed sparse column (CSC) form.
    pub fn transpose(&self) -> SparsityPattern {
        let mut counts = vec![0usize; self.ncols + 1];
        for &j in &self.indices {
            counts[j as usize + 1] += 1;
        }
        for j in 0..self.ncols {
            counts[j + 1] += counts[j];
        }
        let indptr = counts.clone();
        let mut next = counts;
        let mut indices = vec![0u32; self.nnz()];
        for i in 0..self.nrows {
            for &j in self.row(i) {
                indices[next[j as usize]] = i as u32;
                next[j as usize] += 1;
            }
        }
        SparsityPattern {
            nrows: self.ncols,
            ncols: self.nrows,
            indptr,
            indices,
        }
    }

    /// The entries on or below the diagonal.
    pub fn lower_triangle(&self) -> SparsityPattern {
        let rows = (0..self.nrows)
            .map(|i| {
                self.row(i)
                    .iter()
                    .copied()
                    .filter(|&j| j as usize <= i)
                    .collect()
            })
            .collect();
        SparsityPattern::from_rows(self.ncols, rows)
    }

    /// The symmetric pattern whose lower triangle is this one's (a square pattern's entries
    /// above the diagonal are mirrored too).
    pub fn symmetrized(&self) -> SparsityPattern {
        let t = self.transpose();
        let rows = (0..self.nrows)
            .map(|i| {
                let mut row: Vec<u32> = self.row(i).to_vec();
                if i < t.nrows {
                    row.extend_from_slice(t.row(i));
                }
                row
            })
            .collect();
        SparsityPattern::from_rows(self.ncols.max(self.nrows), rows)
    }

    /// `copies` copies of this pattern stacked vertically: the Jacobian pattern of the stacked
    /// residuals of a kernel mapped over `copies` data rows (every row has the kernel's
    /// structure, since data inputs never add columns).
    pub fn stacked(&self, copies: usize) -> SparsityPattern {
        let mut indptr = Vec::with_capacity(self.nrows * copies + 1);
        indptr.push(0);
        let mut indices = Vec::with_capacity(self.nnz() * copies);
        for _ in 0..copies {
            for i in 0..self.nrows {
                indices.extend_from_slice(self.row(i));
                indptr.push(indices.len());
            }
        }
        SparsityPattern {
            nrows: self.nrows * copies,
            ncols: self.ncols,
            indptr,
            indices,
        }
    }

    /// The fraction of entries that are structurally nonzero.
    pub fn density(&self) -> f64 {
        let cells = self.nrows as f64 * self.ncols as f64;
        if cells == 0.0 {
            0.0
        } else {
            self.nnz() as f64 / cells
        }
    }
}

/// An ASCII spy plot: `*` for an entry, `.` for a structural zero, one line per row.
impl fmt::Display for SparsityPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in 0..self.nrows {
            let mut line = vec![b'.'; self.ncols];
            for &j in self.row(i) {
                line[j as usize] = b'*';
            }
            writeln!(f, "{}", String::from_utf8_lossy(&line))?;
        }
        Ok(())
    }
}
