//! Sparse derivatives: the structural patterns contain every entry that is nonzero at random
//! points (and equal the nonzero set where nothing cancels), every colouring the library
//! produces passes the independent validity checks, and the seed-baked sparse programs agree
//! with the dense Jacobians and Hessians of the same functions.
//!
//! The number of random programs per test is `ADJIT_SPARSE_PROGRAMS` (default 1500 per test,
//! four tests: 6000 programs in a run; campaigns set it higher).

mod support;

use adjit_diff::sparsity::{
    best_column_coloring, best_jacobian_coloring, best_row_coloring, best_star_coloring,
    color_columns, color_rows, color_star, hessian_pattern, is_column_coloring, is_star_coloring,
    jacobian_pattern, sparse_hessian, sparse_jacobian, star_recovery, Coloring, ColoringKind,
    Ordering, SparsityPattern,
};
use adjit_diff::{hessian, jvp, simplify, vjp};
use adjit_ir::random::{random_function, RandomOptions, Rng};
use adjit_ir::trace::{trace, trace_multi};
use adjit_ir::{interpret, Function, Type};
use support::{jacobian_forward, jacobian_reverse, verified};

fn programs() -> u64 {
    std::env::var("ADJIT_SPARSE_PROGRAMS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1500)
}

/// Random program `seed`: many inputs and a short operand window, so patterns are sparse.
fn sparse_program(seed: u64, n_outputs: usize) -> Function {
    let mut rng = Rng::new(seed ^ 0x5BA5);
    let opts = RandomOptions {
        n_params: 3 + rng.below(10),
        n_insts: 10 + rng.below(50),
        n_outputs,
        ty: Type::F64,
        window: 1 + rng.below(5),
        non_smooth: seed % 2 == 1,
    };
    verified(random_function(seed, &opts), "random_function")
}

/// `|a − b| ≤ 1e-14·max(|a|, |b|)`, or both NaN; equal infinities pass.
fn close(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-14 * a.abs().max(b.abs())
}

/// Row `i`'s nonzero columns at `x` of the dense `jac`.
fn nonzeros(jac: &[Vec<f64>]) -> Vec<Vec<u32>> {
    jac.iter()
        .map(|row| {
            (0..row.len() as u32)
                .filter(|&j| row[j as usize] != 0.0)
                .collect()
        })
        .collect()
}

fn contains_all(pattern: &SparsityPattern, jac: &[Vec<f64>]) -> Result<(), String> {
    for (i, row) in jac.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            if v != 0.0 && !pattern.contains(i, j) {
                return Err(format!("entry ({i}, {j}) = {v} is outside the pattern"));
            }
        }
    }
    Ok(())
}

/// Check the sparse Jacobian of `f` against its dense forward Jacobian at `x`.
fn check_jacobian(f: &Function, x: &[f64], what: &str) {
    let pattern = jacobian_pattern(f);
    let df = simplify(&jvp(f));
    let dense = jacobian_forward(f, &df, x);
    if let Err(e) = contains_all(&pattern, &dense) {
        panic!("{what}: {e}\n{f}");
    }
    // Reverse sweeps sum in another order than forward ones: compare like with like.
    let dense_reverse = jacobian_reverse(f, &simplify(&vjp(f)), x);
    for coloring in [best_column_coloring(&pattern), best_row_coloring(&pattern)] {
        let (valid, dense) = match coloring.kind {
            ColoringKind::Rows => (
                is_column_coloring(&pattern.transpose(), &coloring.colors),
                &dense_reverse,
            ),
            _ => (is_column_coloring(&pattern, &coloring.colors), &dense),
        };
        assert!(valid, "{what}: invalid {:?} colouring", coloring.kind);
        assert!(coloring.n_colors >= coloring.densest.min(1));
        let program = verified(sparse_jacobian(f, &pattern, &coloring), "sparse_jacobian");
        let values = interpret(&program, x).expect("the sparse program runs");
        assert_eq!(values.len(), pattern.nnz());
        for ((i, j), &v) in pattern.entries().zip(&values) {
            assert!(
                close(v, dense[i][j]),
                "{what} ({:?}): J[{i}][{j}] sparse {v:e}, dense {:e}\n{f}\n{program}",
                coloring.kind,
                dense[i][j]
            );
        }
    }
}

#[test]
fn random_jacobian_patterns_hold_and_sparse_values_equal_dense() {
    for seed in 0..programs() {
        let mut rng = Rng::new(seed);
        let f = sparse_program(seed, 1 + rng.below(6));
        let x = rng.vector(f.n_params, -2.0, 2.0);
        check_jacobian(&f, &x, &format!("seed {seed}"));
    }
}

#[test]
fn random_hessian_patterns_hold_and_sparse_values_equal_dense() {
    for seed in 0..programs() {
        let f = sparse_program(seed + 1_000_000, 1);
        let mut rng = Rng::new(seed);
        let x = rng.vector(f.n_params, -2.0, 2.0);
        let pattern = hessian_pattern(&f);
        let dense = hessian(&f, &x).expect("dense Hessian");
        if let Err(e) = contains_all(&pattern, &dense) {
            panic!("seed {seed}: {e}\n{f}");
        }
        let coloring = best_star_coloring(&pattern);
        assert!(is_star_coloring(&pattern, &coloring.colors), "seed {seed}");
        let program = verified(
            sparse_hessian(&f, &pattern, &coloring).expect("a star colouring"),
            "sparse_hessian",
        );
        let values = interpret(&program, &x).expect("the sparse program runs");
        let lower = pattern.lower_triangle();
        assert_eq!(values.len(), lower.nnz());
        for ((i, j), &v) in lower.entries().zip(&values) {
            // The dense Hessian is not symmetrised: (i, j) and (j, i) come from different
            // sweeps; the sparse value is one of them.
            let ok = close(v, dense[i][j]) || close(v, dense[j][i]);
            assert!(
                ok,
                "seed {seed}: H[{i}][{j}] sparse {v:e}, dense {:e} / {:e}\n{f}",
                dense[i][j], dense[j][i]
            );
        }
    }
}

/// A random pattern: `rows × cols` with each entry present with probability `p`.
fn random_pattern(rng: &mut Rng, rows: usize, cols: usize, p: f64) -> SparsityPattern {
    let rows = (0..rows)
        .map(|_| (0..cols as u32).filter(|_| rng.chance(p)).collect())
        .collect();
    SparsityPattern::from_rows(cols, rows)
}

#[test]
fn every_ordering_gives_valid_colourings() {
    let mut rng = Rng::new(7);
    for case in 0..programs() {
        let (rows, cols) = (1 + rng.below(30), 1 + rng.below(30));
        let p = [0.02, 0.1, 0.3, 0.8][case as usize % 4];
        let pattern = random_pattern(&mut rng, rows, cols, p);
        let square = random_pattern(&mut rng, cols, cols, p / 2.0).symmetrized();
        for ordering in Ordering::ALL {
            let c = color_columns(&pattern, ordering);
            assert!(is_column_coloring(&pattern, &c.colors), "case {case}");
            assert!(
                c.n_colors >= c.densest,
                "case {case}: below the densest row"
            );
            let r = color_rows(&pattern, ordering);
            assert!(is_column_coloring(&pattern.transpose(), &r.colors));
            let s = color_star(&square, ordering);
            assert!(
                is_star_coloring(&square, &s.colors),
                "case {case} {ordering}\n{square}"
            );
            let recovery = star_recovery(&square, &s.colors).expect("star recovery");
            assert_eq!(recovery.len(), square.lower_triangle().nnz());
        }
    }
}

/// The search over orders stops at the first colouring that reaches the lower bound (the
/// densest row); it must still return what the full search returns: the first order with the
/// fewest colours. Random patterns reach the bound in some orders and not in others.
#[test]
fn the_best_colouring_is_the_full_searchs() {
    // The first order with the fewest colours.
    let full = |color: &dyn Fn(Ordering) -> Coloring| {
        let mut best: Option<Coloring> = None;
        for ordering in Ordering::ALL {
            let c = color(ordering);
            if best.as_ref().is_none_or(|b| c.n_colors < b.n_colors) {
                best = Some(c);
            }
        }
        best.expect("five orders")
    };
    type Search = (
        &'static str,
        fn(&SparsityPattern) -> Coloring,
        fn(&SparsityPattern, Ordering) -> Coloring,
    );
    let searches: [Search; 2] = [
        ("columns", best_column_coloring, color_columns),
        ("rows", best_row_coloring, color_rows),
    ];
    let mut rng = Rng::new(11);
    let (mut stopped, mut not_stopped) = (0, 0);
    for case in 0..programs() {
        let (rows, cols) = (1 + rng.below(40), 2 + rng.below(40));
        let p = [0.05, 0.1, 0.2, 0.4][case as usize % 4];
        let pattern = random_pattern(&mut rng, rows, cols, p);
        if pattern.max_row_len() == pattern.ncols() {
            continue; // a dense row: one colour per column in every order
        }
        for (what, best, color) in searches {
            let got = best(&pattern);
            let expected = full(&|o| color(&pattern, o));
            assert_eq!(
                (got.n_colors, &got.colors),
                (expected.n_colors, &expected.colors),
                "case {case}: {what}\n{pattern}"
            );
            if got.ordering == Ordering::ALL[Ordering::ALL.len() - 1] || got.n_colors > got.densest
            {
                not_stopped += 1;
            } else {
                stopped += 1;
            }
        }
    }
    // Both kinds of case occur: searches that stop early and searches that run to the end.
    assert!(stopped > 0 && not_stopped > 0, "{stopped} / {not_stopped}");
}

#[test]
fn the_validity_checks_reject_bad_colourings() {
    // Two columns sharing row 0 in one colour.
    let p = SparsityPattern::from_rows(3, vec![vec![0, 1], vec![2]]);
    assert!(!is_column_coloring(&p, &[0, 0, 1]));
    assert!(is_column_coloring(&p, &[0, 1, 0]));
    // The path 0–1–2–3 coloured a b a b is proper but two-coloured on four vertices.
    let path = SparsityPattern::from_rows(4, vec![vec![1], vec![0, 2], vec![1, 3], vec![2]]);
    assert!(!is_star_coloring(&path, &[0, 1, 0, 1]));
    assert!(!is_star_coloring(&path, &[0, 0, 1, 2]));
    assert!(is_star_coloring(&path, &[0, 1, 2, 0]));
    assert!(star_recovery(&path, &[0, 1, 0, 1]).is_none());
}

fn bratu(n: usize) -> Function {
    adjit_testkit::bratu(n, 6.0)
}

fn rosenbrock(n: usize) -> Function {
    adjit_testkit::chained_rosenbrock(n)
}

/// `y_i = Π_{|k−i|≤b} sin(x_k)` over a band of half-width `b`.
fn banded(n: usize, b: usize) -> Function {
    trace_multi("banded", &vec![Type::F64; n], |x| {
        (0..n)
            .map(|i| {
                let lo = i.saturating_sub(b);
                let hi = (i + b).min(n - 1);
                (lo..=hi)
                    .map(|k| x[k].sin())
                    .fold(x[i].cos(), |acc, s| acc * s)
            })
            .collect()
    })
}

/// Blocks of `s` inputs, each mixed by a dense nonlinear map into `s` outputs.
fn block_diagonal(blocks: usize, s: usize) -> Function {
    trace_multi("blocks", &vec![Type::F64; blocks * s], |x| {
        let mut out = Vec::new();
        for b in 0..blocks {
            let xs = &x[b * s..(b + 1) * s];
            let total = xs.iter().fold(xs[0] * 0.5, |acc, &v| acc + v * v);
            out.extend(xs.iter().map(|&v| (v * total).tanh()));
        }
        out
    })
}

fn point(n: usize, seed: u64) -> Vec<f64> {
    Rng::new(seed).vector(n, 0.1, 0.9)
}

#[test]
fn stencils_reach_the_optimal_colour_counts() {
    let f = bratu(12);
    let p = jacobian_pattern(&f);
    assert_eq!(p.max_row_len(), 5);
    assert_eq!(best_jacobian_coloring(&p).n_colors, 5, "5-point stencil");
    let h = hessian_pattern(&rosenbrock(40));
    assert_eq!(h.max_row_len(), 3);
    assert_eq!(best_star_coloring(&h).n_colors, 3, "tridiagonal Hessian");
    for b in 1..4 {
        let p = jacobian_pattern(&banded(30, b));
        assert_eq!(
            best_column_coloring(&p).n_colors,
            2 * b + 1,
            "half-bandwidth {b}"
        );
    }
    let p = jacobian_pattern(&block_diagonal(6, 4));
    assert_eq!(best_jacobian_coloring(&p).n_colors, 4, "blocks of 4");
}

#[test]
fn patterns_equal_the_nonzeros_where_nothing_cancels() {
    for (f, what) in [
        (bratu(6), "bratu"),
        (banded(15, 2), "banded"),
        (block_diagonal(3, 3), "blocks"),
    ] {
        let x = point(f.n_params, 3);
        let dense = jacobian_forward(&f, &simplify(&jvp(&f)), &x);
        let p = jacobian_pattern(&f);
        let rows: Vec<Vec<u32>> = (0..p.nrows()).map(|i| p.row(i).to_vec()).collect();
        assert_eq!(rows, nonzeros(&dense), "{what}");
        check_jacobian(&f, &x, what);
    }
    let f = rosenbrock(20);
    let x = point(20, 4);
    let dense = hessian(&f, &x).unwrap();
    let p = hessian_pattern(&f);
    let rows: Vec<Vec<u32>> = (0..p.nrows()).map(|i| p.row(i).to_vec()).collect();
    assert_eq!(rows, nonzeros(&dense), "rosenbrock Hessian");
}

#[test]
fn structural_zeros_stay_exact_next_to_infinite_partials() {
    // y0 = 2·x0 + √x1, y1 = 3·x0: at x1 = 0, √'s partial is infinite. A dense JVP along e0
    // meets inf·0 = NaN in y0's tangent; the seed-baked program never forms that product.
    let f = trace_multi("f", &[Type::F64; 2], |x| {
        vec![x[0] * 2.0 + x[1].sqrt(), x[0] * 3.0]
    });
    let x = [1.0, 0.0];
    let dense = jacobian_forward(&f, &simplify(&jvp(&f)), &x);
    assert!(dense[0][0].is_nan(), "the dense JVP leaks NaN: {dense:?}");
    let pattern = jacobian_pattern(&f);
    let coloring = best_column_coloring(&pattern);
    let values = interpret(&sparse_jacobian(&f, &pattern, &coloring), &x).unwrap();
    assert_eq!(values[0], 2.0);
    assert_eq!(values[1], f64::INFINITY);
    assert_eq!(values[2], 3.0);
    // The Hessian of x0² + log(x1)·0 + x0·x2 at x1 = 0: log's partials are infinite, yet the
    // x0/x2 block is exact.
    let g = trace(3, |x| x[0] * x[0] + x[1].ln() * x[1] + x[0] * x[2]);
    let pattern = hessian_pattern(&g);
    let coloring = best_star_coloring(&pattern);
    let h = sparse_hessian(&g, &pattern, &coloring).unwrap();
    let values = interpret(&h, &[1.0, 0.0, 2.0]).unwrap();
    let lower = pattern.lower_triangle();
    for ((i, j), v) in lower.entries().zip(values) {
        match (i, j) {
            (0, 0) => assert_eq!(v, 2.0),
            (2, 0) => assert_eq!(v, 1.0),
            (1, 1) => assert!(!v.is_finite()),
            other => panic!("unexpected entry {other:?}"),
        }
    }
}

#[test]
fn data_inputs_are_not_columns_and_stacking_repeats_rows() {
    let f = adjit_ir::trace::trace_with_data(2, 2, |p, d| (p[0] * d[0] + p[1]).sin() - d[1]);
    let p = jacobian_pattern(&f);
    assert_eq!(p.shape(), (1, 2));
    let h = hessian_pattern(&f);
    assert_eq!(h.nnz(), 4);
    let stacked = p.stacked(3);
    assert_eq!((stacked.nrows(), stacked.nnz()), (3, 6));
    assert_eq!(stacked.row(2), &[0, 1]);
}

/// Every opcode applied straight to the inputs: the Jacobian and Hessian patterns equal the
/// nonzero sets of the dense derivatives at a generic point (a single operation cancels
/// nothing), so a wrong entry of the rulebook's second-order structure fails here.
#[test]
fn each_opcode_has_exactly_its_nonzeros() {
    use adjit_ir::{BinaryOp, Builder, CmpPred, UnaryOp};
    let mut programs: Vec<Function> = Vec::new();
    for &op in UnaryOp::ALL {
        let mut b = Builder::new(op.name());
        let x = b.param(Type::F64, "x");
        let y = b.param(Type::F64, "y");
        let u = b.unary(op, x);
        let r = b.add(u, y);
        programs.push(b.finish(&[r]));
    }
    for &op in BinaryOp::ALL {
        for swap in [false, true] {
            let mut b = Builder::new(op.name());
            let x = b.param(Type::F64, "x");
            let y = b.param(Type::F64, "y");
            let z = b.param(Type::F64, "z");
            let (l, r) = if swap { (y, x) } else { (x, y) };
            let v = b.binary(op, l, r);
            let s = b.mul(z, 3.0);
            let w = b.add(v, s);
            programs.push(b.finish(&[w]));
        }
    }
    for k in [-2, 0, 1, 2, 3] {
        let mut b = Builder::new(format!("powi{k}"));
        let x = b.param(Type::F64, "x");
        let y = b.param(Type::F64, "y");
        let p = b.powi(x, k);
        let r = b.add(p, y);
        programs.push(b.finish(&[r]));
    }
    let mut b = Builder::new("fma");
    let x = b.param(Type::F64, "x");
    let y = b.param(Type::F64, "y");
    let z = b.param(Type::F64, "z");
    let f = b.fma(x, y, z);
    programs.push(b.finish(&[f]));
    let mut b = Builder::new("select");
    let x = b.param(Type::F64, "x");
    let y = b.param(Type::F64, "y");
    let z = b.param(Type::F64, "z");
    let c = b.fcmp(CmpPred::Lt, x, y);
    let xy = b.mul(x, y);
    let s = b.select(c, xy, z);
    programs.push(b.finish(&[s]));
    // Piecewise operations depend structurally on both branches; at one point only one is
    // taken, so the pattern is the union over a point on each side (x < y and x > y).
    let union = |a: Vec<Vec<u32>>, b: Vec<Vec<u32>>| -> Vec<Vec<u32>> {
        a.into_iter()
            .zip(b)
            .map(|(mut r, s)| {
                r.extend(s);
                r.sort_unstable();
                r.dedup();
                r
            })
            .collect()
    };
    for f in &programs {
        // Generic points inside every domain (asin, acos, log, sqrt, pow).
        let points = [[0.3, 0.55, 0.7], [0.55, 0.3, 0.7]];
        let mut hessian_nonzeros = vec![Vec::new(); f.n_params];
        let mut jacobian_nonzeros = vec![Vec::new(); 1];
        for point in points {
            let x = &point[..f.n_params];
            let dense = hessian(f, x).expect("dense Hessian");
            hessian_nonzeros = union(hessian_nonzeros, nonzeros(&dense));
            let jac = jacobian_forward(f, &simplify(&jvp(f)), x);
            jacobian_nonzeros = union(jacobian_nonzeros, nonzeros(&jac));
        }
        let p = hessian_pattern(f);
        let rows: Vec<Vec<u32>> = (0..p.nrows()).map(|i| p.row(i).to_vec()).collect();
        assert_eq!(rows, hessian_nonzeros, "@{}: Hessian pattern\n{f}", f.name);
        // `floor`/`ceil` and `powi x, 0` carry no derivative: structurally absent, and zero.
        let p = jacobian_pattern(f);
        let rows: Vec<Vec<u32>> = (0..p.nrows()).map(|i| p.row(i).to_vec()).collect();
        assert_eq!(
            rows, jacobian_nonzeros,
            "@{}: Jacobian pattern\n{f}",
            f.name
        );
    }
}

/// An arrowhead (y₀ = Σ x, yᵢ = xᵢ·x₀: one dense row, one dense column) compresses on neither
/// side; its sparse Jacobian takes one reverse sweep per row, each cut from its row's cone, so
/// the program stays linear in n (a forward transform with n directions holds n × size
/// tangent slots), and its values equal the dense Jacobian's. Rows of
/// `sparse_jacobian_rows` give the same numbers chunk by chunk.
#[test]
fn an_arrowhead_takes_row_sweeps_and_stays_linear() {
    let n = 2000;
    let f = trace_multi("arrow", &vec![Type::F64; n], |x| {
        let mut y = vec![x.iter().skip(1).fold(x[0], |s, &v| s + v)];
        y.extend(x[1..].iter().map(|&v| v * x[0]));
        y
    });
    let pattern = jacobian_pattern(&f);
    assert_eq!(pattern.nnz(), 3 * n - 2);
    let coloring = best_jacobian_coloring(&pattern);
    assert_eq!((coloring.kind, coloring.n_colors), (ColoringKind::Rows, n));
    let program = verified(sparse_jacobian(&f, &pattern, &coloring), "sparse_jacobian");
    assert!(program.n_values() < 10 * n, "{} values", program.n_values());
    let x = point(n, 7);
    let nz = interpret(&program, &x).unwrap();
    let expected: Vec<f64> = pattern
        .entries()
        .map(|(i, j)| match (i, j) {
            (0, _) => 1.0,
            (i, 0) => x[i],
            _ => x[0],
        })
        .collect();
    assert_eq!(nz, expected);
    let rows = adjit_diff::sparsity::sparse_jacobian_rows(&f, &pattern, 5..40);
    let first = pattern.indptr()[5];
    let chunk = interpret(&verified(rows, "sparse_jacobian_rows"), &x).unwrap();
    assert_eq!(chunk, nz[first..first + chunk.len()]);
}

/// The Hessian of x₀·(x₁ + … + xₙ₋₁) is an arrowhead (a star graph): every order of
/// `Ordering::ALL` colours the hub first, and the greedy star pass then scans the hub's n
/// neighbours once per leaf, n²; the hubs-last order costs n and still finds 2 colours,
/// whose recovery gives the exact entries.
#[test]
fn an_arrowhead_hessian_is_star_coloured_with_the_hub_last() {
    let n = 6000;
    let f = trace(n, |x| x[0] * x.iter().skip(2).fold(x[1], |s, &v| s + v));
    let pattern = hessian_pattern(&f);
    let coloring = best_star_coloring(&pattern);
    assert_eq!(
        (coloring.n_colors, coloring.ordering),
        (2, Ordering::SmallestFirst)
    );
    assert!(is_star_coloring(&pattern, &coloring.colors));
    let program = verified(
        sparse_hessian(&f, &pattern, &coloring).expect("a star colouring"),
        "sparse_hessian",
    );
    let lower = pattern.lower_triangle();
    let values = interpret(&program, &point(n, 3)).unwrap();
    let expected: Vec<f64> = lower
        .entries()
        .map(|(i, j)| if j == 0 && i > 0 { 1.0 } else { 0.0 })
        .collect();
    assert_eq!(values, expected);
}
