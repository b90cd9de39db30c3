//! What the row drivers ([`crate::map::MappedKernel`], [`crate::compose::ComposedKernel`])
//! share: a derived program prepared on first use with the cost that decides threads, and the
//! checks of θ and the data rows with their typed errors, and writing a row into a pair batch. Each driver keeps its own worker
//! buffers (their shapes differ), but nothing here is written twice.

use std::sync::OnceLock;

use adjit_diff::layout::Layout;
use adjit_diff::Mode;
use adjit_ir::Function;
use adjit_jit::PairBatch;

use crate::compile::derive;
use crate::error::{Error, Expected, Result};
use crate::options::Options;
use crate::runner::Runner;

/// One derived program of a row driver, ready to run.
pub(crate) struct RowProgram {
    pub runner: Runner,
    pub layout: Layout,
    /// Instructions per row: with the row count, the work that decides whether threads pay
    /// ([`adjit_jit::threads_for`]).
    pub cost: usize,
}

impl RowProgram {
    /// `mode` of `func`, derived, simplified and prepared on the engine of `opts`.
    pub fn compile(func: &Function, mode: Mode, opts: &Options) -> Result<RowProgram> {
        Ok(RowProgram::compile_inspect(func, mode, opts, |_, _| ())?.0)
    }

    /// [`RowProgram::compile`], and what `inspect` reads off the derived program and its layout
    /// (before it is dropped).
    pub fn compile_inspect<T>(
        func: &Function,
        mode: Mode,
        opts: &Options,
        inspect: impl FnOnce(&Function, &Layout) -> T,
    ) -> Result<(RowProgram, T)> {
        let derived = derive(func, mode)?;
        let seen = inspect(&derived.func, &derived.layout);
        let program = RowProgram {
            runner: Runner::new(&derived.func, opts)?,
            cost: derived.func.n_insts() + derived.func.n_outputs(),
            layout: derived.layout,
        };
        Ok((program, seen))
    }
}

/// The program in `cell`, made by `make` on first use. Two threads may both make it on a first
/// concurrent call; one result is kept.
pub(crate) fn on_first_use<P>(cell: &OnceLock<P>, make: impl FnOnce() -> Result<P>) -> Result<&P> {
    if let Some(program) = cell.get() {
        return Ok(program);
    }
    let program = make()?;
    Ok(cell.get_or_init(|| program))
}

/// An argument of the driver `func` (`θ`, `the data`, `the output y`, …) of the wrong length.
#[cold]
pub(crate) fn length_error(func: &str, what: &str, expected: Expected, got: usize) -> Error {
    Error::ArgumentLength {
        func: func.to_string(),
        what: what.to_string(),
        expected,
        got,
    }
}

/// The number of rows of `row_len` numbers in `data`, checking it holds whole rows.
pub(crate) fn n_rows(func: &str, row_len: usize, data: &[f64]) -> Result<usize> {
    if row_len == 0 || !data.len().is_multiple_of(row_len) {
        return Err(length_error(
            func,
            "the data",
            Expected::MultipleOf(row_len),
            data.len(),
        ));
    }
    Ok(data.len() / row_len)
}

/// Check θ (`theta_len`, said as in `expected` when it is wrong) and the data, returning the
/// number of rows.
pub(crate) fn check_inputs(
    func: &str,
    theta: &[f64],
    expected: Expected,
    row_len: usize,
    data: &[f64],
) -> Result<usize> {
    if !expected.accepts(theta.len()) {
        return Err(length_error(func, "θ", expected, theta.len()));
    }
    n_rows(func, row_len, data)
}

/// `x[at[i]] = values[i]` into point `point` of a pair batch, for input slots `at` in
/// ascending order: one run when they are consecutive (the common layout).
pub(crate) fn put_pair(batch: &mut PairBatch, point: usize, at: &[usize], values: &[f64]) {
    match consecutive(at) {
        Some(first) => batch.set_run(point, first, &values[..at.len()]),
        None => {
            for (&slot, &value) in at.iter().zip(values) {
                batch.set(point, slot, value);
            }
        }
    }
}

/// The first of `at` (ascending slots, each once) when they are consecutive, so that values
/// for them can be written as one run.
pub(crate) fn consecutive(at: &[usize]) -> Option<usize> {
    match (at.first(), at.last()) {
        (Some(&first), Some(&last)) if last - first + 1 == at.len() => Some(first),
        _ => None,
    }
}
