//! Programs and comparisons shared by the backend's test binaries.
#![allow(dead_code)]

use adjit_ir::{BinaryOp, Builder, CmpPred, Function, Type, UnaryOp};

/// Bitwise equality, except that any NaN equals any NaN.
pub fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Panic with context unless `jit` and `want` agree elementwise under [`same`].
pub fn assert_same(what: &str, inputs: &[f64], jit: &[f64], want: &[f64]) {
    assert_eq!(jit.len(), want.len());
    for (i, (&j, &w)) in jit.iter().zip(want).enumerate() {
        assert!(
            same(j, w),
            "{what}: output {i} at inputs {inputs:?}: jit {j:e} ({:#x}), interpreter {w:e} ({:#x})",
            j.to_bits(),
            w.to_bits()
        );
    }
}

/// One program using every opcode (all unary and binary ops, fma, powi with several
/// exponents, every fcmp predicate, select, conversions, constants, literals) in type `ty`,
/// with two float parameters and one bool parameter. Returns also a bool and a promoted value.
pub fn every_opcode(ty: Type) -> Function {
    let mut b = Builder::new(format!("every_{ty}"));
    let x = b.param(ty, "x");
    let y = b.param(ty, "y");
    let flag = b.param(Type::Bool, "flag");
    let mut outs = Vec::new();
    for &op in UnaryOp::ALL {
        outs.push(b.unary(op, x));
    }
    for &op in BinaryOp::ALL {
        outs.push(b.binary(op, x, y));
        outs.push(b.binary(op, y, 0.75));
        outs.push(b.binary(op, -1.25, x));
    }
    outs.push(b.fma(x, y, 0.5));
    outs.push(b.fma(x, 1.0 / 3.0, y));
    for k in [0, 1, 2, 3, 5, 7, 8, 13, -1, -2, -7, 31, -32] {
        outs.push(b.powi(x, k));
    }
    for &pred in CmpPred::ALL {
        let c = b.fcmp(pred, x, y);
        outs.push(b.select(c, x, y));
        let c = b.fcmp(pred, 0.5, y);
        outs.push(c);
    }
    outs.push(b.select(flag, x, 2.5));
    outs.push(flag);
    let k = b.constant(ty, 0.1);
    outs.push(b.mul(k, x));
    let t = b.constant(Type::Bool, 1.0);
    outs.push(b.select(t, y, x));
    match ty {
        Type::F64 => {
            let d = b.fdemote(x);
            let e = b.mul(d, 3.0);
            outs.push(b.fpromote(e));
        }
        _ => {
            let p = b.fpromote(x);
            let e = b.mul(p, 1e300);
            outs.push(b.fdemote(e));
            outs.push(p);
        }
    }
    outs.push(x);
    b.finish(&outs)
}

/// Inputs that stress special cases: signed zeros, infinities, NaN, ties, huge and tiny values.
pub fn special_values() -> Vec<f64> {
    vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        3.7,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        1e-310,
        1e300,
        f64::MIN_POSITIVE,
        2.5e9,
    ]
}

/// The `seed 001` example: p = 7x, r = 1/y, q = p·x·5, v = 2·p·q + 3·r.
pub fn seed001() -> Function {
    let mut b = Builder::new("seed001");
    let x = b.param(Type::F64, "x");
    let y = b.param(Type::F64, "y");
    let p = b.mul(7.0, x);
    let r = b.div(1.0, y);
    let px = b.mul(p, x);
    let q = b.mul(px, 5.0);
    let tp = b.mul(2.0, p);
    let tpq = b.mul(tp, q);
    let tr = b.mul(3.0, r);
    let v = b.add(tpq, tr);
    b.finish(&[v])
}
/// A chain of `n_insts` instructions in which each also uses a value from far back (long live
/// ranges: unbounded register allocation goes quadratic, the workspace grows). With `damp`,
/// each value is scaled by 0.999 so that long chains stay finite. Returns the builder (for the
/// caller's choice of returns) and every value, parameters `x`, `y` first.
#[allow(dead_code)] // Not every test binary uses it.
pub fn long_range_chain(n_insts: usize, damp: bool) -> (Builder, Vec<adjit_ir::Value>) {
    let mut b = Builder::new("long_ranges");
    let x = b.param(Type::F64, "x");
    let y = b.param(Type::F64, "y");
    let mut vals = vec![x, y];
    let mut rng = adjit_ir::random::Rng::new(3);
    while b.func().n_insts() < n_insts {
        let recent = vals[vals.len() - 1];
        let far = vals[rng.below(vals.len())];
        let v = match rng.below(3) {
            0 => b.add(recent, far),
            1 => b.mul(far, 0.5),
            _ => b.fma(recent, 0.25, far),
        };
        vals.push(if damp { b.mul(v, 0.999) } else { v });
    }
    (b, vals)
}

/// A program that returns constants many times, as a sparse Jacobian of a stencil does
/// (plan.rs fills such outputs by a loop): `c` on a dense span with a computed output every
/// `stride`-th place (stored over the fill), an `f32` constant (widened at the boundary), a
/// constant returned too rarely to fill, and two dense constants whose spans overlap with
/// each one's outputs inside the other's span (filling both would clobber the first's). Span
/// lengths vary with `seed`, so the fill loops end with one to three single stores.
pub fn constant_outputs(seed: u64) -> Function {
    let mut b = Builder::new(format!("consts{seed}"));
    let x = b.param(Type::F64, "x");
    let y = b.param(Type::F64, "y");
    let c = b.constant(Type::F64, -40804.0 - seed as f64);
    let d = b.constant(Type::F32, 0.1);
    let rare = b.constant(Type::F64, 7.0);
    let e = b.constant(Type::F64, 2.5);
    let g = b.constant(Type::F64, -0.5);
    let mut rets = Vec::new();
    let mut computed = b.mul(x, y);
    let stride = 4 + (seed % 3) as usize;
    for i in 0..(97 + seed as usize) {
        if i % stride == stride - 1 {
            computed = b.add(computed, x);
            rets.push(computed);
        } else {
            rets.push(c);
        }
    }
    rets.extend(std::iter::repeat_n(d, 66 + seed as usize));
    rets.extend(std::iter::repeat_n(rare, 3));
    // e: 90, g: 5, e: 5, g: 91 (+ seed).
    rets.extend(std::iter::repeat_n(e, 90));
    rets.extend(std::iter::repeat_n(g, 5));
    rets.extend(std::iter::repeat_n(e, 5));
    rets.extend(std::iter::repeat_n(g, 91 + seed as usize));
    rets.push(x);
    b.finish(&rets)
}

pub mod aot;

/// A 2-D grid program, row after row as a traced stencil is: per row a head (straight), the
/// row's interior cells (one template each, reading the grid at `inner` stride and the next row
/// at `outer` stride, from the inputs or from an earlier loop's values, a running sum carried
/// within the row, one output per cell), and a tail (straight) that reads the row's last sum
/// and adds to a total carried from row to row; maybe straight code after the grid reading one
/// cell per row. The rows' heads and tails are the straight code between the rows' loops;
/// with the total, a value of each row's head that the row's cells read, and the outputs,
/// every operand is affine in the row index, so the rows roll into one nest.
pub fn grid(seed: u64, rows: usize, cols: usize, ty: Type) -> Function {
    grid_with_odd_row(seed, rows, cols, ty, None)
}

/// [`grid`], with one cell of row `odd` computing one more operation (that row differs from
/// the others).
pub fn grid_with_odd_row(
    seed: u64,
    rows: usize,
    cols: usize,
    ty: Type,
    odd: Option<usize>,
) -> Function {
    grid_of(seed, rows, cols, ty, odd, false)
}

/// [`grid`] with data traced in as literals, as a source term sampled on the grid is: every
/// cell subtracts its own literal (a table per row of the nest's inner loop), and every row's
/// head and tail add theirs (tables of the straight code between rows).
#[allow(dead_code)] // Not every test binary uses it.
pub fn grid_with_data(seed: u64, rows: usize, cols: usize, ty: Type) -> Function {
    grid_of(seed, rows, cols, ty, None, true)
}

fn grid_of(
    seed: u64,
    rows: usize,
    cols: usize,
    ty: Type,
    odd: Option<usize>,
    data: bool,
) -> Function {
    use adjit_ir::random::Rng;
    // Exact in f32; a few repeat.
    let source = |r: usize, c: usize| ((r * 31 + c * 17) % 64) as f64 / 16.0 - 2.0;
    let mut rng = Rng::new(seed);
    let inner = [1, 2, 1, 3][rng.below(4)];
    let outer = cols * inner + rng.below(4);
    let n = (rows + 1) * outer + 1;
    let mut b = Builder::new(format!("grid{seed}_{ty}"));
    let x: Vec<_> = (0..n).map(|i| b.param(ty, &format!("x{i}"))).collect();
    let scale = b.param(ty, "scale");
    // The cell template: 2 to 5 operations, fixed per program.
    let n_ops = 2 + rng.below(4);
    let ops: Vec<usize> = (0..n_ops).map(|_| rng.below(7)).collect();
    let reads_head = rng.chance(0.5);
    let carries_within = rng.chance(0.7);
    // The next row's values from an earlier loop (an array in the workspace) or the inputs.
    let below: Vec<_> = if rng.chance(0.5) {
        (0..n).map(|i| b.fma(x[i], 0.5, 0.25)).collect()
    } else {
        x.clone()
    };
    let reads_cells_after = rng.chance(0.5);
    let mut total = b.mul(x[0], 0.5);
    let mut outs = Vec::new();
    let mut cells = Vec::new();
    for r in 0..rows {
        let at = |c: usize| r * outer + c * inner;
        let head = b.fma(x[at(0)], 1.5, total);
        let head = if data {
            b.fma(head, 0.5, source(r, 0))
        } else {
            head
        };
        outs.push(head);
        let mut acc = head;
        for c in 1..cols - 1 {
            let mut t = b.sub(x[at(c)], x[at(c - 1)]);
            for &op in &ops {
                t = match op {
                    0 => b.mul(t, below[at(c) + outer]),
                    1 => b.fma(t, 0.75, x[at(c + 1)]),
                    2 => b.binary(BinaryOp::Max, t, -0.5),
                    3 => b.unary(UnaryOp::Sin, t),
                    4 => b.div(t, 1.25),
                    5 => b.mul(t, scale),
                    _ => b.sub(t, x[at(c) + outer]),
                };
            }
            if reads_head {
                t = b.mul(t, head);
            }
            if data {
                t = b.sub(t, source(r, c));
            }
            if odd == Some(r) && c == cols / 2 {
                t = b.mul(t, 1.0625);
            }
            acc = if carries_within { b.add(acc, t) } else { t };
            outs.push(t);
            if c == cols / 2 {
                cells.push(t);
            }
        }
        let tail = b.mul(acc, x[at(cols - 1)]);
        let tail = if data {
            b.add(tail, source(r, cols - 1))
        } else {
            tail
        };
        outs.push(tail);
        total = b.add(total, tail);
    }
    if reads_cells_after {
        // Straight code after the grid reading one cell of every row (their homes).
        for (r, &t) in cells.iter().enumerate() {
            let y = if r % 2 == 0 {
                b.unary(UnaryOp::Sin, t)
            } else {
                b.mul(t, t)
            };
            total = b.add(total, y);
        }
    }
    outs.push(total);
    b.finish(&outs)
}

/// A gradient's reductions as a reverse sweep over data rows leaves them: a stage computing
/// one value per row, then sums over the rows one after another. Each sum starts with one to
/// three terms of another shape (peeled in front of its loop: the loops' trips differ), runs
/// forwards or backwards, reads a row constant or a literal per row (data), and is finished by
/// a term after its loop. A second stage between the sums is read by the later ones. With
/// `blocked`, one sum starts from the previous sum's total, which no loop may run beside.
pub fn reductions(seed: u64, blocked: bool) -> Function {
    let mut rng = adjit_ir::random::Rng::new(seed);
    let ty = if seed % 4 == 3 { Type::F32 } else { Type::F64 };
    let rows = 24 + rng.below(40);
    let mut b = Builder::new("reductions");
    let x: Vec<_> = (0..rows + 1)
        .map(|i| b.param(ty, &format!("x{i}")))
        .collect();
    let t: Vec<_> = (0..rows)
        .map(|j| {
            let th = b.unary(UnaryOp::Tanh, x[j]);
            b.mul(th, x[j + 1])
        })
        .collect();
    let sums = 2 + rng.below(5);
    let mut stage = t.clone();
    let mut rets = Vec::new();
    let mut last = None;
    for c in 0..sums {
        if c == sums / 2 {
            // A second stage, read by the sums after it.
            stage = (0..rows).map(|j| b.fma(t[j], x[j], 0.25)).collect();
        }
        let peeled = 1 + rng.below(3);
        let backwards = rng.chance(0.5);
        let data = rng.chance(0.5);
        let rows_in_order: Vec<usize> = if backwards {
            (0..rows).rev().collect()
        } else {
            (0..rows).collect()
        };
        let weight = 0.5 + c as f64 * 0.37;
        let mut s = b.mul(stage[rows_in_order[0]], weight);
        if blocked && c == sums - 1 {
            if let Some(total) = last {
                s = b.add(s, total);
            }
        }
        for (k, &j) in rows_in_order.iter().enumerate().skip(1) {
            let w = if data {
                weight + (j * 7 % 11) as f64 / 8.0
            } else {
                weight
            };
            s = if k < peeled {
                let term = b.mul(stage[j], w);
                b.add(s, term)
            } else {
                b.fma(stage[j], w, s)
            };
        }
        let total = b.mul(s, 0.5);
        last = Some(total);
        rets.push(total);
    }
    let func = b.finish(&rets);
    adjit_ir::verify(&func).expect("generated programs verify");
    func
}
