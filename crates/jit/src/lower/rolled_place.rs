//! Where a line of a rolled program runs, shared by the lowerings of [`super::rolled`] and
//! [`super::rolled_paired`]: where a value lies, which iteration a line's addresses are
//! those of, and a fused loop's values by the virtual iteration that made them.

use std::collections::HashMap;

use adjit_ir::Rolled;
use cranelift_codegen::ir;

use crate::rolled_plan::Place;

/// The two loops of a fused one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Sweep {
    Forward,
    Reverse,
}

/// A fused loop's values by (loop, position, virtual iteration that made them).
pub(super) type History = HashMap<(Sweep, usize, i64), ir::Value>;

/// Where a line runs, for its addresses: iteration `from + dir·counter` of its loop (`dir` 1
/// in a loop's own order, −1 for a fused reverse loop run by term; no counter: iteration
/// `from` of straight code); `last`: it is known to be the loop's last iteration.
#[derive(Clone, Copy)]
pub(super) struct Iteration {
    pub(super) counter: Option<ir::Value>,
    pub(super) from: i64,
    pub(super) dir: i64,
    pub(super) last: bool,
}

/// Where value `v` lies.
pub(super) fn place_of(rolled: &Rolled, v: usize) -> Place {
    if v < rolled.n_params() {
        return Place::Param(v);
    }
    let (k, t, j) = rolled
        .locate(v)
        .expect("a verified rolled program reads its own values");
    Place::Loop { k, t, j }
}
