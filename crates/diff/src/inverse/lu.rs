//! Dense linear solves emitted as straight-line IR: Gaussian elimination with partial pivoting.
//!
//! Pivoting without branches: for column `k`, every lower row is compared with the current pivot
//! row (`fcmp.gt` on magnitudes) and the two rows are exchanged with `select`s when it is larger,
//! so row `k` ends up holding the largest magnitude of the column (ties keep the upper row). The
//! right-hand side is carried along, then back substitution gives the solution. A pivot is
//! numerically singular when `|p| ≤ tol · scale` (also when it is not finite); the caller chooses
//! the scale with [`threshold`]: the largest magnitude of the whole lump's Jacobian, not just of
//! the block being solved (a 1×1 block is its own largest entry, so a block-relative test only
//! fires on an exact zero). That is a lower bound on the lump's condition number
//! max|entry| / min|pivot| compared with 1/tol. The caller receives a flag (`f64`, 0 or 1)
//! instead of a panic.
//! Literal entries fold at emission time. Assumes all entries are `f64`.

use adjit_ir::CmpPred;

use super::arith::{Arith, Num};

/// A condition known at emission time or computed at run time.
#[derive(Clone, Copy, Debug)]
enum Cond {
    Known(bool),
    Dyn(adjit_ir::Value),
}

/// `a > b`.
fn greater(ar: &mut Arith, a: Num, b: Num) -> Cond {
    match (a, b) {
        (Num::Lit(x), Num::Lit(y)) => Cond::Known(x > y),
        (Num::Val(x), b) => Cond::Dyn(ar.fcmp(CmpPred::Gt, x, b)),
        (Num::Lit(x), Num::Val(y)) => Cond::Dyn(ar.fcmp(CmpPred::Lt, y, Num::Lit(x))),
    }
}

fn choose(ar: &mut Arith, c: Cond, a: Num, b: Num) -> Num {
    match c {
        Cond::Known(true) => a,
        Cond::Known(false) => b,
        Cond::Dyn(v) => ar.select(v, a, b),
    }
}

/// What the pivot tests of one lump found: the singular flag (0 or 1), the smallest pivot
/// magnitude, and the threshold `tol · scale` the pivots were judged against (so
/// `threshold / tol` over `smallest` estimates the block's condition number). Reported by the
/// inverse programs when a lump is singular.
#[derive(Clone, Copy, Debug)]
pub struct PivotCheck {
    pub flag: Num,
    pub smallest: Num,
    pub threshold: Num,
}

impl PivotCheck {
    pub fn new(threshold: Num) -> PivotCheck {
        PivotCheck {
            flag: Num::Lit(0.0),
            smallest: Num::Lit(f64::INFINITY),
            threshold,
        }
    }

    /// Set the flag unless `|pivot| > threshold`; track the smallest `|pivot|` (a NaN pivot
    /// sets the flag and leaves the smallest alone: `min` returns the other operand).
    fn test(&mut self, ar: &mut Arith, pivot: Num) {
        let mag = ar.abs(pivot);
        self.flag = match greater(ar, mag, self.threshold) {
            Cond::Known(true) => self.flag,
            Cond::Known(false) => Num::Lit(1.0),
            Cond::Dyn(ok) => ar.select(ok, self.flag, Num::Lit(1.0)),
        };
        self.smallest = match self.smallest {
            Num::Lit(inf) if inf == f64::INFINITY => mag,
            smallest => ar.binary(adjit_ir::BinaryOp::Min, smallest, mag),
        };
    }
}

/// `tol · scale`, the threshold under which a pivot is numerically singular, where `scale` is
/// the largest magnitude among `entries` (structural zeros skipped), at least 1 when `identity`
/// (the lump's Jacobian `[[A, B], [0, I]]` has an identity block when values pass through it).
/// NaN entries do not count (`max` returns the other operand); a NaN pivot fails the test.
pub fn threshold(
    ar: &mut Arith,
    entries: impl Iterator<Item = Num>,
    identity: bool,
    tol: f64,
) -> Num {
    let mut scale: Option<Num> = identity.then_some(Num::Lit(1.0));
    for e in entries {
        if e == Num::Lit(0.0) {
            continue;
        }
        let a = ar.abs(e);
        scale = Some(match scale {
            None => a,
            Some(s) => ar.max(s, a),
        });
    }
    match scale {
        Some(s) => ar.mul(Num::Lit(tol), s),
        None => Num::Lit(0.0),
    }
}

/// Solve `m · x = r` for a square `m` (rows of entries) and return `x`; every pivot goes through
/// `check` (its flag becomes 1 when a pivot `p` has `|p| ≤ threshold`, see [`threshold`]).
// Row operations index two rows of `m` with the same column: a range loop says it best.
#[allow(clippy::needless_range_loop)]
pub fn solve(
    ar: &mut Arith,
    mut m: Vec<Vec<Num>>,
    mut r: Vec<Num>,
    check: &mut PivotCheck,
) -> Vec<Num> {
    let k_max = m.len();
    debug_assert!(m.iter().all(|row| row.len() == k_max) && r.len() == k_max);
    for k in 0..k_max {
        // Bring the largest magnitude of column k (rows k..) to row k.
        for i in k + 1..k_max {
            if m[i][k] == Num::Lit(0.0) {
                continue;
            }
            let below = ar.abs(m[i][k]);
            let here = ar.abs(m[k][k]);
            let c = greater(ar, below, here);
            if let Cond::Known(false) = c {
                continue;
            }
            for j in k..k_max {
                let (upper, lower) = (m[k][j], m[i][j]);
                m[k][j] = choose(ar, c, lower, upper);
                m[i][j] = choose(ar, c, upper, lower);
            }
            let (upper, lower) = (r[k], r[i]);
            r[k] = choose(ar, c, lower, upper);
            r[i] = choose(ar, c, upper, lower);
        }
        check.test(ar, m[k][k]);
        // Eliminate below the pivot.
        for i in k + 1..k_max {
            if m[i][k] == Num::Lit(0.0) {
                continue;
            }
            let q = ar.div(m[i][k], m[k][k]);
            let neg_q = ar.neg(q);
            for j in k + 1..k_max {
                if m[k][j] == Num::Lit(0.0) {
                    continue;
                }
                m[i][j] = ar.fma(neg_q, m[k][j], m[i][j]);
            }
            r[i] = ar.fma(neg_q, r[k], r[i]);
        }
    }
    // Back substitution.
    let mut x = vec![Num::Lit(0.0); k_max];
    let mut neg_x = vec![Num::Lit(0.0); k_max];
    for k in (0..k_max).rev() {
        let mut acc = r[k];
        for j in k + 1..k_max {
            if m[k][j] == Num::Lit(0.0) {
                continue;
            }
            acc = ar.fma(m[k][j], neg_x[j], acc);
        }
        x[k] = ar.div(acc, m[k][k]);
        neg_x[k] = ar.neg(x[k]);
    }
    x
}
