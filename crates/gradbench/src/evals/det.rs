//! `det`: the determinant of an ℓ×ℓ matrix A (row-major, ℓ² numbers) by expansion by minors,
//! and its gradient ∂det/∂A (the cofactor matrix, in A's row-major order).
//!
//! The reference expands every minor along its top remaining row, columns left to right with
//! alternating signs, recursively: ℓ! products. The minors it recurses into are always the
//! bottom k rows of A restricted to some set S of k columns, so the kernel traced per ℓ
//! computes each D(S) once, for every column set S by increasing size:
//! D(S) = Σⱼ (−1)^pos(j in S) · A[ℓ−k][j] · D(S∖{j}), in the reference's order of terms, and
//! D(all columns) = det A. That is about ℓ·2^(ℓ−1) products instead of ℓ!, and the same
//! arithmetic, term for term, as the recursion. Its adjit gradient gives the cofactors.

use std::rc::Rc;

use adjit::ir::trace::{trace, Var};
use adjit::{Compiled, Gradient, Mode};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{unknown_function, Cache, Eval};
use crate::error::Result;
use crate::input::Source;
use crate::measure::{evaluate, Evaluation, Runs};

/// The largest ℓ accepted: the kernel has about ℓ·2^ℓ operations (ℓ = 16: ~10⁶).
const MAX_ELL: usize = 16;

#[derive(Deserialize)]
struct Input {
    #[serde(rename = "A")]
    a: Vec<f64>,
    ell: usize,
}

/// det A for one ℓ: its value and its gradient.
struct DetKernel {
    primal: Compiled,
    gradient: Gradient,
}

/// The determinant of the ℓ×ℓ matrix `a` (row-major) with minors shared.
fn det<'t>(ell: usize, a: &[Var<'t>]) -> Var<'t> {
    // minors[S] = D(S) for the column set S (a bit mask) of size k, over the bottom k rows.
    let mut minors: Vec<Option<Var<'t>>> = vec![None; 1 << ell];
    for j in 0..ell {
        minors[1 << j] = Some(a[(ell - 1) * ell + j]);
    }
    let mut sets: Vec<usize> = (1..1usize << ell).collect();
    sets.sort_by_key(|s| s.count_ones());
    for set in sets {
        let k = set.count_ones() as usize;
        if k < 2 {
            continue;
        }
        let row = ell - k;
        let mut d: Option<Var<'t>> = None;
        let columns = (0..ell).filter(|j| set & (1 << j) != 0);
        for (pos, j) in columns.enumerate() {
            let Some(sub) = minors[set & !(1 << j)] else {
                continue; // Unreachable: smaller sets come first.
            };
            let term = a[row * ell + j] * sub;
            d = Some(match d {
                None if pos % 2 == 0 => term,
                None => -term,
                Some(d) if pos % 2 == 0 => d + term,
                Some(d) => d - term,
            });
        }
        minors[set] = d;
    }
    minors[(1 << ell) - 1].unwrap_or_else(|| a[0] * 0.0 + 1.0)
}

impl DetKernel {
    fn new(ell: usize) -> Result<DetKernel> {
        let f = trace(ell * ell, |a| det(ell, a));
        Ok(DetKernel {
            primal: Compiled::new(&f, Mode::Primal)?,
            gradient: Gradient::new(&f)?,
        })
    }
}

/// Kernels by ℓ.
#[derive(Default)]
pub struct Det {
    kernels: Cache<usize, DetKernel>,
}

impl Det {
    fn kernel(&mut self, ell: usize) -> Result<Rc<DetKernel>> {
        self.kernels.get(ell, DetKernel::new)
    }
}

impl Eval for Det {
    fn evaluate(&mut self, function: &str, input: &Value) -> Result<Evaluation> {
        let source = Source {
            module: "det",
            function,
        };
        let runs = Runs::of(input, source)?;
        let Input { a, ell } = source.decode(input)?;
        if ell == 0 || ell > MAX_ELL {
            return Err(source.error(format!(
                "ell is {ell}, expected 1 to {MAX_ELL} (the kernel has about ell·2^ell operations)"
            )));
        }
        if a.len() != ell * ell {
            return Err(source.error(format!(
                "A has {} numbers, expected ell² = {}",
                a.len(),
                ell * ell
            )));
        }
        match function {
            "primal" => evaluate(
                runs,
                || self.kernel(ell),
                |k| {
                    let mut y = [0.0];
                    k.primal.call(&a, &mut y)?;
                    Ok(y[0])
                },
                |y| json!(y),
            ),
            "gradient" => evaluate(
                runs,
                || self.kernel(ell),
                |k| {
                    let mut g = vec![0.0; a.len()];
                    k.gradient.call(&a, &mut g)?;
                    Ok(g)
                },
                |g| json!(g),
            ),
            _ => Err(unknown_function("det", function, "primal, gradient")),
        }
    }
}
