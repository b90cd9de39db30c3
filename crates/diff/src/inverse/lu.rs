//! Dense linear solves emitted as straight-line IR: Gaussian elimination with partial pivoting.
//!
//! Pivoting without branches: for column `k`, every lower row is compared with the current pivot
//! row (`fcmp.gt` on magnitudes) and the two rows are exchanged with `select`s when it is larger,
//! so row `k` ends up holding the largest magnitude of the column (ties keep the upper row). The
//! right-hand side is carried along, then back substitution gives the solution. A pivot is
//! numerically singular when `|p| ≤ tol · scale` (also when it is not finite), where `scale` is
//! the size of the pivot's row of the whole lump's Jacobian (the caller computes the scales,
//! [`Scales`]; row scales travel with their rows through the exchanges): the test of the
//! row-equilibrated matrix, so it does not change when J is scaled (J = 1e-20·I is as regular
//! as I) yet still sees a row whose own entries are lopsided. `1 / min(|p| / scale)` is a lower
//! bound on the equilibrated lump's condition number, compared with 1/tol. The caller receives
//! a flag (`f64`, 0 or 1) instead of a panic.
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

/// What the pivot tests of one lump found: the singular flag (0 or 1), the ratio
/// `|pivot| / scale` of the first pivot that failed the test exactly as it was compared (NaN
/// for a row that is zero at the point, `0 / 0`; meaningless while the flag is 0), and the
/// tolerance it was judged against (so `1 / ratio` bounds the equilibrated lump's condition
/// number from below). Reported by the inverse programs when a lump is singular.
#[derive(Clone, Copy, Debug)]
pub struct PivotCheck {
    pub flag: Num,
    pub smallest: Num,
    pub threshold: Num,
}

impl PivotCheck {
    /// Pivots pass when `|p| / scale > tol`.
    pub fn new(tol: f64) -> PivotCheck {
        PivotCheck {
            flag: Num::Lit(0.0),
            smallest: Num::Lit(0.0),
            threshold: Num::Lit(tol),
        }
    }

    /// Set the flag unless `|pivot| / scale > tol` (a NaN ratio fails too); the first ratio that
    /// fails is the one reported. (Tracking a `min` instead would drop a NaN ratio — `min`
    /// returns the other operand — and report a passing pivot as the failing one.)
    fn test(&mut self, ar: &mut Arith, pivot: Num, scale: Num) {
        let mag = ar.abs(pivot);
        let relative = match scale {
            Num::Lit(1.0) => mag,
            scale => ar.div(mag, scale),
        };
        let ok = greater(ar, relative, self.threshold);
        let failed_before = greater(ar, self.flag, Num::Lit(0.5));
        let if_failing = choose(ar, failed_before, self.smallest, relative);
        self.smallest = choose(ar, ok, self.smallest, if_failing);
        self.flag = choose(ar, ok, self.flag, Num::Lit(1.0));
    }
}

/// The scale of each row: the largest magnitude among its entries (structural zeros skipped;
/// NaN entries do not count, `max` returns the other operand), or 0 for a row without entries.
pub fn row_scales<'a>(ar: &mut Arith, rows: impl Iterator<Item = &'a [(usize, Num)]>) -> Vec<Num> {
    rows.map(|row| {
        let mut scale: Option<Num> = None;
        for &(_, e) in row {
            if e == Num::Lit(0.0) {
                continue;
            }
            let a = ar.abs(e);
            scale = Some(match scale {
                None => a,
                Some(s) => ar.max(s, a),
            });
        }
        scale.unwrap_or(Num::Lit(0.0))
    })
    .collect()
}

/// The scale each pivot of [`solve`] is judged against: per row of `m` (they travel with their
/// rows through the exchanges) or per column (columns are never exchanged).
pub enum Scales {
    Rows(Vec<Num>),
    Cols(Vec<Num>),
}

/// Solve `m · x = r` for a square `m` (rows of entries) and return `x`; every pivot goes
/// through `check` (its flag becomes 1 when a pivot `p` whose row or column has scale `s` has
/// `|p| ≤ tol · s`, see [`row_scales`]).
// Row operations index two rows of `m` with the same column: a range loop says it best.
#[allow(clippy::needless_range_loop)]
pub fn solve(
    ar: &mut Arith,
    mut m: Vec<Vec<Num>>,
    mut r: Vec<Num>,
    mut scales: Scales,
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
            if let Scales::Rows(scales) = &mut scales {
                let (upper, lower) = (scales[k], scales[i]);
                scales[k] = choose(ar, c, lower, upper);
                scales[i] = choose(ar, c, upper, lower);
            }
        }
        let scale = match &scales {
            Scales::Rows(s) | Scales::Cols(s) => s[k],
        };
        check.test(ar, m[k][k], scale);
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
