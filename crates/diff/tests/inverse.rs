//! Inverse accumulation modes, proven by numbers on the interpreter: J⁻¹(J·v) = v,
//! Jᵀ(J⁻ᵀ·w) = w, ⟨J⁻ᵀx̄, ẏ⟩ = ⟨x̄, J⁻¹ẏ⟩, agreement with the dense fallback, primal outputs
//! untouched, and every singular case reported (compile-time errors, run-time status).
//!
//! `J·v` comes from `jvp`: one rulebook serves every mode, and the rules themselves are checked
//! against finite differences in `tests/rules.rs`.

use adjit_diff::inverse::{
    analyze, dense_inverse, forward_inverse, lumps_text, reverse_inverse, InverseError,
    InverseOptions,
};
use adjit_ir::random::Rng;
use adjit_ir::{interpret, verify, BinaryOp, Builder, Function, Type, UnaryOp};
use adjit_testkit::{coupling_network, fig2, lorenz_rk4, random_triangular};

/// `J·v` at `x` from forward mode: the rulebook every inverse mode reads, itself checked against
/// finite differences (`tests/rules.rs`), so the inverse identities below test the inverse
/// transforms against the J that jvp/vjp differentiate.
fn jvp_product(func: &Function, x: &[f64], v: &[f64]) -> Vec<f64> {
    let out = interpret(&adjit_diff::jvp(func), &[x, v].concat()).expect("jvp runs");
    out[func.n_outputs()..].to_vec()
}

/// The dense Jacobian (rows = outputs) by `n` dual passes.
fn jacobian(func: &Function, x: &[f64]) -> Vec<Vec<f64>> {
    let n = x.len();
    let cols: Vec<Vec<f64>> = (0..n)
        .map(|j| {
            let mut e = vec![0.0; n];
            e[j] = 1.0;
            jvp_product(func, x, &e)
        })
        .collect();
    (0..func.n_outputs())
        .map(|i| cols.iter().map(|c| c[i]).collect())
        .collect()
}

fn jt_times(func: &Function, x: &[f64], w: &[f64]) -> Vec<f64> {
    let j = jacobian(func, x);
    (0..x.len())
        .map(|c| j.iter().zip(w).map(|(row, wi)| row[c] * wi).sum())
        .collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// ‖a − b‖ / max(‖b‖, tiny)
fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    norm(&d) / norm(b).max(1e-300)
}

/// Run an inverse transform: returns (primal outputs, product, status).
fn run(inv: &Function, x: &[f64], v: &[f64]) -> (Vec<f64>, Vec<f64>, f64) {
    let mut input = x.to_vec();
    input.extend_from_slice(v);
    let out = interpret(inv, &input).expect("inverse runs");
    let n = x.len();
    (out[..n].to_vec(), out[n..2 * n].to_vec(), out[2 * n])
}

struct Transforms {
    rev: Function,
    fwd: Function,
    dense: Function,
}

fn transforms(func: &Function) -> Transforms {
    let opts = InverseOptions::default();
    let rev = reverse_inverse(func, &opts).expect("reverse_inverse builds");
    let fwd = forward_inverse(func, &opts).expect("forward_inverse builds");
    let dense = dense_inverse(func, &opts).expect("dense_inverse builds");
    for (pass, f) in [
        ("reverse_inverse", &rev),
        ("forward_inverse", &fwd),
        ("dense_inverse", &dense),
    ] {
        if let Err(e) = verify(f) {
            panic!("after pass {pass}: {e}");
        }
    }
    Transforms { rev, fwd, dense }
}

/// All identities at `x` with random directions; `tol` relative.
fn check_identities(func: &Function, x: &[f64], seed: u64, tol: f64) {
    let n = x.len();
    let t = transforms(func);
    let mut rng = Rng::new(seed);
    let v = rng.vector(n, -1.0, 1.0);
    let w = rng.vector(n, -1.0, 1.0);
    let y = interpret(func, x).expect("primal");

    // J⁻¹(J v) = v
    let jv = jvp_product(func, x, &v);
    let (y_rev, back, status) = run(&t.rev, x, &jv);
    assert_eq!(
        y_rev, y,
        "reverse-inverse changes the primal of @{}",
        func.name
    );
    assert_eq!(status, 0.0, "@{}: reverse-inverse status", func.name);
    let e = rel_err(&back, &v);
    assert!(e < tol, "@{}: J⁻¹(J v) differs from v by {e:e}", func.name);

    // Jᵀ(J⁻ᵀ w) = w
    let (y_fwd, ybar, status) = run(&t.fwd, x, &w);
    assert_eq!(
        y_fwd, y,
        "forward-inverse changes the primal of @{}",
        func.name
    );
    assert_eq!(status, 0.0, "@{}: forward-inverse status", func.name);
    let jt = jt_times(func, x, &ybar);
    let e = rel_err(&jt, &w);
    assert!(e < tol, "@{}: Jᵀ(J⁻ᵀ w) differs from w by {e:e}", func.name);

    // ⟨J⁻ᵀ x̄, ẏ⟩ = ⟨x̄, J⁻¹ ẏ⟩ with x̄ = w, ẏ = v.
    let (_, jinv_v, _) = run(&t.rev, x, &v);
    let lhs = dot(&ybar, &v);
    let rhs = dot(&w, &jinv_v);
    let scale = norm(&ybar) * norm(&v) + norm(&w) * norm(&jinv_v);
    assert!(
        (lhs - rhs).abs() <= tol * scale,
        "@{}: adjoint identity {lhs} vs {rhs}",
        func.name
    );

    // Agreement with the dense fallback.
    let (y_dense, dense_v, status) = run(&t.dense, x, &v);
    assert_eq!(y_dense, y);
    assert_eq!(status, 0.0);
    let e = rel_err(&jinv_v, &dense_v);
    assert!(e < tol, "@{}: lumps and dense differ by {e:e}", func.name);
}

#[test]
fn fig2_inverse_identities_and_lumps() {
    let f = fig2();
    let a = analyze(&f).unwrap();
    // z1 consumes x1 (x2 stays an output), z2 consumes x3: two lumps of size 1.
    assert_eq!(a.lumps.len(), 2);
    assert_eq!(a.largest_lump(), 1);
    check_identities(&f, &[0.3, -1.2, 0.7], 1, 1e-13);
    let text = lumps_text(&f, &InverseOptions::default()).unwrap();
    assert!(text.contains("lump 1: l = 1"), "{text}");
    assert!(text.contains("In  {%x1}"), "{text}");
    // P = {%x2, %x3}: z1 reads %x2, %x3 passes through untouched (counted, not listed).
    assert!(text.contains("P   {%x2} + 1 untouched"), "{text}");
}

#[test]
fn lorenz_rk4_300_steps_inverse_identities() {
    // t = 0.3: Lorenz contracts volume like exp(−13.7 t), so J⁻¹ is ill-conditioned for long
    // horizons (cond ≈ 1e10 at t = 1.5) and J⁻¹(J v) can only be as good as cond·ε.
    let f = lorenz_rk4(300, 0.001, Type::F64);
    let a = analyze(&f).unwrap();
    assert!(
        a.lumps.len() >= 300,
        "at least one lump per step, got {}",
        a.lumps.len()
    );
    assert!(a.largest_lump() <= 3);
    check_identities(&f, &[1.0, 1.5, 20.0], 2, 1e-9);
}

#[test]
fn lorenz_rk4_f32_inverse_against_dense() {
    let f = lorenz_rk4(20, 0.01, Type::F32);
    let t = transforms(&f);
    let x = [1.0, 1.5, 20.0];
    let v = [0.3, -0.2, 0.5];
    let (y, r, s) = run(&t.rev, &x, &v);
    let (_, d, sd) = run(&t.dense, &x, &v);
    assert_eq!(y, interpret(&f, &x).unwrap());
    assert_eq!((s, sd), (0.0, 0.0));
    assert!(rel_err(&r, &d) < 1e-4, "{r:?} vs {d:?}");
    // The f32 product undoes the dual-number J·v (computed from the same f32 primal).
    let jv = jvp_product(&f, &x, &v);
    let (_, back, _) = run(&t.rev, &x, &jv);
    assert!(rel_err(&back, &v) < 1e-4, "{back:?}");
}

#[test]
fn coupling_networks_inverse_identities() {
    for (n, seed) in [(8, 11), (16, 12), (32, 13)] {
        let f = coupling_network(n, 4, 6, seed);
        let a = analyze(&f).unwrap();
        assert_eq!(a.largest_lump(), n / 2, "one lump per layer");
        let x = Rng::new(seed).vector(n, -1.0, 1.0);
        check_identities(&f, &x, seed, 1e-11);
    }
}

#[test]
fn coupling_layer_blocks_are_diagonal() {
    // A = ∂c'/∂c of an affine coupling layer is diagonal: n/2 blocks of size 1, so even n = 64
    // stays far below max_lump.
    let f = coupling_network(64, 2, 4, 5);
    let text = lumps_text(&f, &InverseOptions::default()).unwrap();
    let ones = vec!["1"; 32].join(" ");
    assert!(text.contains(&format!("blocks [{ones}]")), "{text}");
    assert!(reverse_inverse(&f, &InverseOptions::default()).is_ok());
}

#[test]
fn random_triangular_programs_inverse_identities() {
    for seed in 0..40 {
        let n = 2 + (seed as usize % 4);
        let f = random_triangular(n, 6 + seed as usize % 10, seed);
        let x = Rng::new(seed + 100).vector(n, -1.0, 1.0);
        check_identities(&f, &x, seed, 1e-9);
    }
}

#[test]
fn random_ir_programs_match_dense_when_square() {
    // adjit_ir's random programs: those that pass the lump analysis must agree with the dense
    // fallback and undo J·v wherever the dense solve reports no singular pivot.
    let mut tested = 0;
    for seed in 0..300 {
        let opts = adjit_ir::random::RandomOptions {
            n_params: 2 + seed as usize % 2,
            n_outputs: 2 + seed as usize % 2,
            n_insts: 6 + seed as usize % 20,
            window: 6,
            ..Default::default()
        };
        let f = adjit_ir::random::random_function(seed, &opts);
        let Ok(rev) = reverse_inverse(&f, &InverseOptions::default()) else {
            continue;
        };
        verify(&rev).unwrap();
        let dense = dense_inverse(&f, &InverseOptions::default()).unwrap();
        let n = opts.n_params;
        let x = Rng::new(seed).vector(n, 0.2, 0.9);
        let v = Rng::new(seed + 1).vector(n, -1.0, 1.0);
        let jv = jvp_product(&f, &x, &v);
        let (_, back, status) = run(&rev, &x, &jv);
        let (_, _, dense_status) = run(&dense, &x, &jv);
        let j = jacobian(&f, &x);
        if status != 0.0 || dense_status != 0.0 || !back.iter().all(|b| b.is_finite()) {
            continue;
        }
        // Backward-error check: ‖J·ẋ − ẏ‖ small relative to ‖J‖·‖ẋ‖ + ‖ẏ‖.
        let jx: Vec<f64> = j.iter().map(|row| dot(row, &back)).collect();
        let jnorm = j.iter().map(|r| norm(r)).fold(0.0, f64::max);
        let res = rel_err(&jx, &jv) * norm(&jv);
        assert!(
            res <= 1e-9 * (jnorm * norm(&back) + norm(&jv)),
            "seed {seed}: residual {res:e}\n{f}"
        );
        tested += 1;
    }
    assert!(
        tested >= 20,
        "only {tested} random programs were square and invertible"
    );
}

fn two_by_two(
    body: impl FnOnce(&mut Builder, [adjit_ir::Value; 2]) -> Vec<adjit_ir::Value>,
) -> Function {
    let mut b = Builder::new("g");
    let x = [b.param(Type::F64, "a"), b.param(Type::F64, "b")];
    let rets = body(&mut b, x);
    b.finish(&rets)
}

fn err_text(f: &Function) -> String {
    reverse_inverse(f, &InverseOptions::default())
        .unwrap_err()
        .to_string()
}

#[test]
fn singular_structure_is_a_compile_time_error() {
    // Not square.
    let f = two_by_two(|b, [a, _]| vec![b.mul(a, 2.0)]);
    assert!(matches!(
        reverse_inverse(&f, &InverseOptions::default()),
        Err(InverseError::NotSquare { .. })
    ));
    // Unused input.
    let f = two_by_two(|b, [a, _]| vec![b.mul(a, 2.0), b.unary(UnaryOp::Sin, a)]);
    assert!(
        err_text(&f).contains("input %b does not reach any output"),
        "{}",
        err_text(&f)
    );
    // Duplicated output.
    let f = two_by_two(|b, [a, c]| {
        let s = b.add(a, c);
        vec![s, s]
    });
    assert!(
        err_text(&f).contains("already returned as output 0"),
        "{}",
        err_text(&f)
    );
    // Passive output.
    let f = two_by_two(|b, [a, c]| {
        let s = b.add(a, c);
        let k = b.constant(Type::F64, 1.0);
        vec![s, k]
    });
    assert!(err_text(&f).contains("output 1"), "{}", err_text(&f));
    // A narrow cut: both outputs are functions of s alone.
    let f = two_by_two(|b, [a, c]| {
        let s = b.add(a, c);
        b.set_name(s, "s");
        let y0 = b.unary(UnaryOp::Sin, s);
        let y1 = b.unary(UnaryOp::Cos, s);
        vec![y0, y1]
    });
    assert_eq!(
        err_text(&f),
        "@g: J is singular: only 1 of 2 values are live after %s"
    );
    assert!(forward_inverse(&f, &InverseOptions::default()).is_err());
    // The dense baseline does not look for cuts; it reports the singular pivot at run time.
    let dense = dense_inverse(&f, &InverseOptions::default()).unwrap();
    let (_, _, status) = run(&dense, &[0.2, 0.3], &[1.0, 1.0]);
    assert_eq!(status, 1.0);
}

#[test]
fn structurally_singular_lump_is_reported() {
    // u, v depend on a only; w on a, b, c: no perfect matching of {u, v, w} to {a, b, c}.
    let mut b = Builder::new("h");
    let a = b.param(Type::F64, "a");
    let bb = b.param(Type::F64, "b");
    let c = b.param(Type::F64, "c");
    let u = b.unary(UnaryOp::Sin, a);
    let v = b.unary(UnaryOp::Cos, a);
    let w = b.fma(a, bb, c);
    let f = b.finish(&[u, v, w]);
    let e = dense_inverse(&f, &InverseOptions::default()).unwrap_err();
    assert!(
        matches!(
            e,
            InverseError::StructurallySingular {
                matched: 2,
                l: 3,
                ..
            }
        ),
        "{e}"
    );
    // The lump modes find a narrow cut first (any order proves it here).
    assert!(reverse_inverse(&f, &InverseOptions::default()).is_err());
}

#[test]
fn numerically_singular_pivot_sets_status_to_the_lump() {
    // Lump 1: y0 = a·b (A = [b]); lump 2: y1 = b + sin(y0)... b passes through lump 1.
    let f = two_by_two(|bd, [a, c]| {
        let y0 = bd.mul(a, c);
        let s = bd.unary(UnaryOp::Sin, y0);
        let y1 = bd.add(c, s);
        vec![y0, y1]
    });
    let t = transforms(&f);
    let (_, _, ok) = run(&t.rev, &[1.0, 2.0], &[1.0, 1.0]);
    assert_eq!(ok, 0.0);
    for inv in [&t.rev, &t.fwd] {
        let (_, _, status) = run(inv, &[1.0, 0.0], &[1.0, 1.0]);
        assert_eq!(status, 1.0, "pivot b = 0 in lump 1\n{inv}");
    }
    let (_, _, status) = run(&t.dense, &[1.0, 0.0], &[1.0, 1.0]);
    assert_eq!(status, 1.0);
}

#[test]
fn kink_with_zero_slope_is_reported_not_nan() {
    // y0 = max(a, 0) has slope 0 for a < 0.
    let f = two_by_two(|bd, [a, c]| {
        let m = bd.binary(BinaryOp::Max, a, 0.0);
        vec![m, bd.add(c, a)]
    });
    let t = transforms(&f);
    let (_, r, status) = run(&t.rev, &[0.5, 1.0], &[1.0, 1.0]);
    assert_eq!(status, 0.0);
    // J = [[1, 0], [1, 1]]: J⁻¹(1, 1) = (1, 0).
    assert_eq!(r, vec![1.0, 0.0]);
    let (_, _, status) = run(&t.rev, &[-0.5, 1.0], &[1.0, 1.0]);
    assert!(status >= 1.0);
}

#[test]
fn lump_too_large_suggests_dense() {
    // A dense 3×3 coupling inside one lump with max_lump = 2.
    let mut b = Builder::new("k");
    let x: Vec<_> = (0..3)
        .map(|i| b.param(Type::F64, &format!("x{i}")))
        .collect();
    let s01 = b.add(x[0], x[1]);
    let s = b.add(s01, x[2]);
    let t = b.unary(UnaryOp::Tanh, s);
    let ys: Vec<_> = x.iter().map(|&xi| b.fma(xi, 2.0, t)).collect();
    let f = b.finish(&ys);
    let opts = InverseOptions {
        max_lump: 2,
        ..Default::default()
    };
    let e = reverse_inverse(&f, &opts).unwrap_err().to_string();
    assert!(e.contains("3×3") && e.contains("--mode dense"), "{e}");
    check_identities(&f, &[0.1, 0.2, -0.3], 3, 1e-13);
}

/// The same identities with the crate's own forward and reverse modes (`jvp`, `vjp`).
#[test]
fn identities_with_crate_jvp_and_vjp() {
    let programs = [
        (lorenz_rk4(200, 0.001, Type::F64), vec![1.0, 1.5, 20.0]),
        (
            coupling_network(16, 4, 6, 7),
            Rng::new(7).vector(16, -1.0, 1.0),
        ),
        (fig2(), vec![0.3, -1.2, 0.7]),
        (
            random_triangular(5, 30, 9),
            Rng::new(9).vector(5, -1.0, 1.0),
        ),
    ];
    for (f, x) in programs {
        let n = x.len();
        let jvp = adjit_diff::jvp(&f);
        let vjp = adjit_diff::vjp(&f);
        let t = transforms(&f);
        let v = Rng::new(1).vector(n, -1.0, 1.0);
        let mut input = x.clone();
        input.extend_from_slice(&v);
        let jv = interpret(&jvp, &input).unwrap()[n..].to_vec();
        let (_, back, _) = run(&t.rev, &x, &jv);
        assert!(rel_err(&back, &v) < 1e-10, "@{}: J⁻¹(J v)", f.name);
        let (_, ybar, _) = run(&t.fwd, &x, &v);
        let mut input = x.clone();
        input.extend_from_slice(&ybar);
        let jt = interpret(&vjp, &input).unwrap()[n..].to_vec();
        assert!(rel_err(&jt, &v) < 1e-10, "@{}: Jᵀ(J⁻ᵀ w)", f.name);
    }
}

#[test]
fn dot_draws_lumps_as_clusters_and_works_for_any_program() {
    let f = fig2();
    let text = adjit_diff::inverse::dot(&f, &InverseOptions::default());
    assert!(text.contains("subgraph cluster_lump1") && text.contains("subgraph cluster_lump2"));
    assert!(text.contains("label=\"lump 2 (l = 1)\""), "{text}");
    assert!(text.contains("n0 -> n3;"), "{text}");
    assert_eq!(text.matches('{').count(), text.matches('}').count());
    // Not square: no clusters, the reason as a comment.
    let g = two_by_two(|b, [a, _]| vec![b.mul(a, 2.0)]);
    let text = adjit_diff::inverse::dot(&g, &InverseOptions::default());
    assert!(
        !text.contains("cluster") && text.contains("// no lumps: @g is not square"),
        "{text}"
    );
}

/// At a kink the inverse modes use the same one-sided convention as `jvp`/`vjp`
/// (`abs'(0) = 0`), so `J⁻¹` inverts exactly the `J` that forward mode computes there.
#[test]
fn kink_conventions_agree_with_forward_mode() {
    let mut b = adjit_ir::Builder::new("kink");
    let x = b.param(adjit_ir::Type::F64, "x");
    let a = b.unary(adjit_ir::UnaryOp::Abs, x);
    let y = b.fma(x, 2.0, a); // y = 2x + |x|
    let f = b.finish(&[y]);
    let opts = adjit_diff::inverse::InverseOptions::default();
    for x0 in [0.0, -0.0, 1.5, -1.5] {
        let j = adjit_ir::interpret(&adjit_diff::jvp(&f), &[x0, 1.0]).unwrap()[1];
        let rev = adjit_diff::inverse::reverse_inverse(&f, &opts).unwrap();
        let out = adjit_ir::interpret(&rev, &[x0, 1.0]).unwrap();
        assert_eq!(out[2], 0.0, "status at x = {x0}");
        assert_eq!(out[1], 1.0 / j, "J⁻¹·1 at x = {x0} (jvp gives J = {j})");
        let fwd = adjit_diff::inverse::forward_inverse(&f, &opts).unwrap();
        let out = adjit_ir::interpret(&fwd, &[x0, 1.0]).unwrap();
        assert_eq!(out[1], 1.0 / j, "J⁻ᵀ·1 at x = {x0}");
    }
}

/// A square map of width `n` with bidiagonal coupling: `y_i = sin(x_i)·x_{i∓1} + x_i` (the
/// missing neighbour at the edge is 1). `lower` (x_{i−1}): one lump as wide as the map, with 1×1
/// blocks; upper (x_{i+1}): `n` lumps of size 1, each with `n − 1` pass-through values.
fn bidiagonal(n: usize, lower: bool) -> Function {
    let mut b = Builder::new(if lower { "lower" } else { "upper" });
    let xs: Vec<_> = (0..n)
        .map(|i| b.param(Type::F64, &format!("x{i}")))
        .collect();
    let ys: Vec<_> = (0..n)
        .map(|i| {
            let s = b.unary(UnaryOp::Sin, xs[i]);
            let neighbour = if lower {
                i.checked_sub(1)
            } else {
                Some(i + 1).filter(|&k| k < n)
            };
            let t = match neighbour {
                Some(k) => b.binary(BinaryOp::Mul, s, xs[k]),
                None => b.binary(BinaryOp::Mul, s, 1.0),
            };
            b.binary(BinaryOp::Add, t, xs[i])
        })
        .collect();
    b.finish(&ys)
}

/// J⁻¹(J·v) = v on a 20,000-wide bidiagonal map, both shapes. Before the analysis and emission
/// were made linear this took minutes and gigabytes (a dense `l × l` block, bitset dependences,
/// a quadratic greedy order, a copied live set per cut) and overflowed the stack from about
/// 100,000 wide (recursive matching): the test asserts completion and the identity, not a time.
#[test]
fn wide_bidiagonal_maps_invert_in_linear_time() {
    let n = 20_000;
    for lower in [true, false] {
        let f = bidiagonal(n, lower);
        let a = analyze(&f).expect("analysis");
        if lower {
            assert_eq!(a.lumps.len(), 1, "one wide lump");
        } else {
            assert_eq!(a.lumps.len(), n, "one lump per column");
            assert!(a.lumps.iter().all(|l| l.size() == 1 && l.n_pass == n - 1));
        }
        let text = lumps_text(&f, &InverseOptions::default()).expect("lumps dump");
        assert!(
            text.len() < 200 * n,
            "the dump stays linear: {} bytes",
            text.len()
        );
        let rev = reverse_inverse(&f, &InverseOptions::default()).expect("reverse_inverse");
        let x: Vec<f64> = (0..n).map(|i| 0.1 + 0.001 * (i % 97) as f64).collect();
        let v: Vec<f64> = (0..n)
            .map(|i| if i % 3 == 0 { 1.0 } else { -0.5 })
            .collect();
        let jv = jvp_product(&f, &x, &v);
        let (_, back, status) = run(&rev, &x, &jv);
        assert_eq!(status, 0.0);
        let e = rel_err(&back, &v);
        assert!(e < 1e-12, "lower = {lower}: J⁻¹(J·v) off by {e:e}");
    }
}

/// A near-singular 1×1 block next to a pass-through value. y = (a·b, b) at b = 1e-200:
/// J = [[b, a], [0, 1]] has condition ≈ 1/b, but the block A = [b] alone has condition 1, so
/// a pivot test relative to the block only fired when b was exactly 0, and the forward-inverse
/// printed `-inf, inf` (or huge finite garbage when it did not overflow). The pivot is now
/// judged against its row of the lump's Jacobian `[A B]` (here `[b, a]`), so the status names
/// the lump.
#[test]
fn tiny_pivot_of_a_one_by_one_block_with_pass_through_is_singular() {
    let f = two_by_two(|bd, [a, c]| vec![bd.mul(a, c), c]);
    let t = transforms(&f);
    for (b, expect) in [(1e-200, 1.0), (1e-13, 1.0), (1e-11, 0.0), (2.0, 0.0)] {
        for inv in [&t.rev, &t.fwd, &t.dense] {
            let (_, r, status) = run(inv, &[1.0, b], &[1.0, 1.0]);
            assert_eq!(status, expect, "b = {b:e}: {r:?}\n{inv}");
        }
    }
    // A lone 1×1 map is well conditioned however small its entry: J⁻¹ = 1/a exactly.
    let mut bd = Builder::new("scale");
    let a = bd.param(Type::F64, "a");
    let y = bd.mul(a, 1e-200);
    let f = bd.finish(&[y]);
    let t = transforms(&f);
    let (_, r, status) = run(&t.rev, &[1.0], &[1e-200]);
    assert_eq!((r, status), (vec![1.0], 0.0));
}

/// A long square chain whose primal overflows to NaN: the product is not finite, and the status
/// says so (−1, `NOT_FINITE`) instead of returning `nan, nan, nan` as a result.
#[test]
fn overflowing_chain_reports_not_finite() {
    // Lorenz with a huge step diverges to inf − inf = NaN within a few hundred instructions.
    let f = lorenz_rk4(100, 0.5, Type::F64);
    assert!(f.n_insts() >= 3_000, "{} instructions", f.n_insts());
    let t = transforms(&f);
    let x = [1.0, 1.5, 20.0];
    let y = interpret(&f, &x).expect("primal");
    assert!(
        y.iter().any(|v| !v.is_finite()),
        "the primal diverges: {y:?}"
    );
    for inv in [&t.rev, &t.fwd, &t.dense] {
        let (_, r, status) = run(inv, &x, &[1.0, 1.0, 1.0]);
        assert!(
            status == adjit_diff::inverse::NOT_FINITE || status >= 1.0,
            "status {status} with product {r:?}"
        );
    }
}

/// Singularity does not depend on the scale of J: the identity, a rotation and a map whose
/// lumps pass a value through, each times s = 10^±20 and 10^±300, invert with status 0 in
/// every mode and give back v from J·v; `(s·a·b, s·b)` at b = 1e-200 stays singular at every
/// scale (cond J ≈ 1/b whatever s is).
#[test]
fn singularity_is_judged_independently_of_the_scale_of_j() {
    let (c, sn) = (0.6f64, 0.8f64);
    for s in [1e-300, 1e-20, 1.0, 1e20, 1e300] {
        let maps: [(&str, Function); 3] = [
            (
                "identity",
                two_by_two(|bd, [a, b]| vec![bd.mul(a, s), bd.mul(b, s)]),
            ),
            (
                "rotation",
                two_by_two(|bd, [a, b]| {
                    let ca = bd.mul(a, c * s);
                    let sb = bd.mul(b, sn * s);
                    let sa = bd.mul(a, sn * s);
                    let cb = bd.mul(b, c * s);
                    vec![bd.sub(ca, sb), bd.add(sa, cb)]
                }),
            ),
            (
                // y0 = s·(a + b²/2) reads b, which the first lump passes through.
                "pass-through",
                two_by_two(|bd, [a, b]| {
                    let b2 = bd.mul(b, b);
                    let h = bd.fma(b2, 0.5, a);
                    vec![bd.mul(h, s), bd.mul(b, s)]
                }),
            ),
        ];
        for (what, f) in &maps {
            let t = transforms(f);
            let x = [0.5, 0.75];
            let v = [1.0, -2.0];
            let jv = jvp_product(f, &x, &v);
            for (mode, inv) in [("reverse", &t.rev), ("dense", &t.dense)] {
                let (_, back, status) = run(inv, &x, &jv);
                assert_eq!(status, 0.0, "{what} × {s:e}, {mode}: {back:?}\n{inv}");
                assert!(
                    rel_err(&back, &v) < 1e-14,
                    "{what} × {s:e}, {mode}: {back:?}"
                );
            }
            // Forward-inverse: Jᵀ·(J⁻ᵀ·w) = w.
            let w = [0.25, 1.5];
            let (_, z, status) = run(&t.fwd, &x, &w);
            assert_eq!(status, 0.0, "{what} × {s:e}, forward: {z:?}\n{}", t.fwd);
            let jac = jacobian(f, &x);
            let jtz: Vec<f64> = (0..2)
                .map(|j| jac[0][j] * z[0] + jac[1][j] * z[1])
                .collect();
            assert!(
                rel_err(&jtz, &w) < 1e-14,
                "{what} × {s:e}, forward: {jtz:?}"
            );
        }
        let singular = two_by_two(|bd, [a, b]| {
            let ab = bd.mul(a, b);
            vec![bd.mul(ab, s), bd.mul(b, s)]
        });
        let t = transforms(&singular);
        for inv in [&t.rev, &t.fwd, &t.dense] {
            let (_, r, status) = run(inv, &[1.0, 1e-200], &[1.0, 1.0]);
            assert_eq!(status, 1.0, "(s·a·b, s·b) × {s:e}: {r:?}\n{inv}");
        }
    }
}
