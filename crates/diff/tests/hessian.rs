//! Hessian-vector products and dense Hessians against finite differences of gradients.

mod support;

use adjit_diff::{hessian, hvp, DiffError};
use adjit_ir::random::{random_function, RandomOptions, Rng};
use adjit_ir::{interpret, parse_function, Function};
use support::verified;

fn example(name: &str) -> Function {
    let path = format!("{}/../../ir/examples/{name}.ir", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    verified(
        parse_function(&text).unwrap_or_else(|e| panic!("{path}: {e}")),
        "parse",
    )
}

/// (∇f(x), H·v) from the hvp program.
fn grad_and_hv(h: &Function, n_y: usize, x: &[f64], v: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut input = x.to_vec();
    input.extend_from_slice(v);
    let out = interpret(h, &input).unwrap();
    let n = v.len();
    (out[n_y..n_y + n].to_vec(), out[n_y + n..].to_vec())
}

/// Check H·v against central differences of the gradient along v, with the step-aware
/// tolerance of `support::check_against_fd`: 4·|D(h) − D(2h)| + 30·ε·(|∇| + 1)/h + 1e-9·|D(h)|.
fn check_hvp(f: &Function, x: &[f64], v: &[f64]) {
    let h = verified(hvp(f), "hvp");
    let n_y = f.n_outputs();
    let (g, hv) = grad_and_hv(&h, n_y, x, v);
    let zero = vec![0.0; v.len()];
    let grad_at = |t: f64| {
        let xt: Vec<f64> = x.iter().zip(v).map(|(a, b)| a + t * b).collect();
        grad_and_hv(&h, n_y, &xt, &zero).0
    };
    let step = 2f64.powi(-18);
    let diff = |s: f64| -> Vec<f64> {
        let (p, m) = (grad_at(s), grad_at(-s));
        p.iter().zip(&m).map(|(a, b)| (a - b) / (2.0 * s)).collect()
    };
    let (d1, d2) = (diff(step), diff(2.0 * step));
    for i in 0..v.len() {
        let tol = 4.0 * (d1[i] - d2[i]).abs()
            + 30.0 * f64::EPSILON * (g[i].abs() + 1.0) / step
            + 1e-9 * d1[i].abs();
        assert!(
            (hv[i] - d1[i]).abs() <= tol,
            "@{} at {x:?} along {v:?}: (Hv)[{i}] = {}, finite difference {} (tol {tol})",
            f.name,
            hv[i],
            d1[i]
        );
    }
}

#[test]
fn rosenbrock_hessian_is_exact_and_symmetric() {
    let f = example("rosenbrock");
    for &(x, y) in &[(-1.2, 1.0), (1.0, 1.0), (0.3, -0.7)] {
        let h = hessian(&f, &[x, y]).unwrap();
        let exact = [
            [2.0 - 400.0 * (y - x * x) + 800.0 * x * x, -400.0 * x],
            [-400.0 * x, 200.0],
        ];
        for i in 0..2 {
            for j in 0..2 {
                assert!(
                    (h[i][j] - exact[i][j]).abs() <= 1e-12 * exact[i][j].abs().max(1.0),
                    "H[{i}][{j}] at ({x}, {y}): {} vs {}",
                    h[i][j],
                    exact[i][j]
                );
            }
        }
        assert_eq!(h[0][1], h[1][0]);
        check_hvp(&f, &[x, y], &[1.0, 0.0]);
        check_hvp(&f, &[x, y], &[0.3, -0.8]);
    }
}

#[test]
fn hvp_matches_finite_differences_of_gradients() {
    for seed in 0..30u64 {
        let opts = RandomOptions {
            n_insts: 60,
            n_outputs: 1,
            n_params: 3,
            ..RandomOptions::default()
        };
        let f = verified(random_function(3000 + seed, &opts), "random_function");
        let mut rng = Rng::new(seed);
        let x = rng.vector(3, -1.5, 1.5);
        let v = rng.vector(3, -1.0, 1.0);
        check_hvp(&f, &x, &v);
        let h = hessian(&f, &x).unwrap();
        for i in 0..3 {
            for j in 0..i {
                let scale = h[i][j].abs().max(h[j][i].abs()).max(1.0);
                assert!(
                    (h[i][j] - h[j][i]).abs() <= 1e-10 * scale,
                    "seed {seed}: H not symmetric: {h:?}"
                );
            }
        }
    }
}

#[test]
fn hessian_reports_misuse() {
    let f = example("two");
    let scalar = example("rosenbrock");
    assert!(matches!(
        hessian(&scalar, &[1.0]),
        Err(DiffError::InputCount {
            expected: 2,
            got: 1,
            ..
        })
    ));
    assert!(matches!(
        hessian(&f, &[0.5]),
        Err(DiffError::NotScalar {
            float_outputs: 2,
            ..
        })
    ));
    assert_eq!(hvp(&scalar).name, "rosenbrock_hvp");
}

/// `hvp_along` (the direction baked in as literals) gives the bits of `hvp` with the direction
/// at run time wherever that is finite, on random programs and directions with zero entries;
/// and where a zero direction entry meets an infinite partial it gives the structural 0.
#[test]
fn hvp_along_a_literal_direction_is_hvp_without_zero_times_infinity() {
    for seed in 0..60u64 {
        let n = 2 + seed as usize % 4;
        let opts = RandomOptions {
            n_params: n,
            n_outputs: 1,
            n_insts: 40,
            ..RandomOptions::default()
        };
        let f = random_function(seed, &opts);
        let mut rng = Rng::new(seed);
        let x = rng.vector(n, -2.0, 2.0);
        let v: Vec<f64> = rng
            .vector(n, -2.0, 2.0)
            .into_iter()
            .map(|t| if t < -0.5 { 0.0 } else { t })
            .collect();
        let runtime = interpret(&verified(hvp(&f), "hvp"), &[x.clone(), v.clone()].concat());
        let baked = interpret(&verified(adjit_diff::hvp_along(&f, &v), "hvp_along"), &x);
        let (runtime, baked) = (runtime.unwrap(), baked.unwrap());
        assert_eq!(runtime.len(), baked.len(), "@{}", f.name);
        for (k, (a, b)) in runtime.iter().zip(&baked).enumerate() {
            assert!(
                !a.is_finite() || a == b,
                "@{} along {v:?}: output {k} is {b}, runtime v gives {a}",
                f.name
            );
        }
    }
    // x² + √y at (1, 0) along (1, 0): H·v = (2, 0); a runtime v gives 0·∞ = NaN in slot 1.
    let f = adjit_ir::trace::trace(2, |x| x[0] * x[0] + x[1].sqrt());
    let baked = interpret(&adjit_diff::hvp_along(&f, &[1.0, 0.0]), &[1.0, 0.0]).unwrap();
    assert_eq!(&baked[3..], &[2.0, 0.0]);
    let runtime = interpret(&hvp(&f), &[1.0, 0.0, 1.0, 0.0]).unwrap();
    assert!(runtime[4].is_nan(), "{runtime:?}");
}
