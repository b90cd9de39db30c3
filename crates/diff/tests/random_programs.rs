//! Property tests over random programs (`adjit_ir::random`): the adjoint identity between
//! forward and reverse mode, vector forward mode against single directions, simplification
//! soundness and size, derived programs differentiated again, and finite differences.

mod support;

use adjit_diff::simplify::{cse, dce, fold, identities};
use adjit_diff::{jvp, jvp_vector, simplify, vjp};
use adjit_ir::random::{random_function, RandomOptions, Rng};
use adjit_ir::{interpret, Function, Type};
use support::{check_derivatives, float_outputs, float_params, verified};

/// Program number `seed` of the test population: 100–400 instructions, 2–5 inputs, 1–4
/// outputs, every other one with non-smooth operations.
fn program(seed: u64, ty: Type) -> Function {
    let mut rng = Rng::new(seed ^ 0xD1FF);
    let opts = RandomOptions {
        n_params: 2 + rng.below(4),
        n_insts: 100 + rng.below(300),
        n_outputs: 1 + rng.below(4),
        ty,
        window: 4 + rng.below(24),
        non_smooth: seed % 2 == 1,
    };
    verified(random_function(seed, &opts), "random_function")
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Σ|aᵢ·bᵢ|: the scale against which the rounding error of `dot` is measured.
fn abs_dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x * y).abs()).sum()
}

/// ⟨w, J v⟩ and ⟨Jᵀ w, v⟩ with their scales.
fn both_sides(
    f: &Function,
    df: &Function,
    gf: &Function,
    x: &[f64],
    v: &[f64],
    w: &[f64],
) -> (f64, f64, f64) {
    let n_out = f.n_outputs();
    let mut input = x.to_vec();
    input.extend_from_slice(v);
    let jv = interpret(df, &input).unwrap()[n_out..].to_vec();
    let mut input = x.to_vec();
    input.extend_from_slice(w);
    let jtw = interpret(gf, &input).unwrap()[n_out..].to_vec();
    (
        dot(w, &jv),
        dot(&jtw, v),
        abs_dot(w, &jv) + abs_dot(&jtw, v),
    )
}

#[test]
fn adjoint_identity_on_random_programs() {
    for seed in 0..240u64 {
        let f = program(seed, Type::F64);
        let df = verified(jvp(&f), "jvp");
        let gf = verified(vjp(&f), "vjp");
        let mut rng = Rng::new(seed);
        let x = rng.vector(f.n_params, -2.0, 2.0);
        let v = rng.vector(float_params(&f).len(), -1.0, 1.0);
        let w = rng.vector(float_outputs(&f).len(), -1.0, 1.0);
        let (lhs, rhs, scale) = both_sides(&f, &df, &gf, &x, &v, &w);
        assert!(
            (lhs - rhs).abs() <= 1e-10 * scale.max(1e-300),
            "seed {seed}: <w, Jv> = {lhs}, <J^T w, v> = {rhs}"
        );
        // Simplified derived programs give the same bits (every fourth program, for time).
        if seed % 4 != 0 {
            continue;
        }
        let (ls, rs, _) = both_sides(&f, &simplify(&df), &simplify(&gf), &x, &v, &w);
        assert_eq!(
            (lhs.to_bits(), rhs.to_bits()),
            (ls.to_bits(), rs.to_bits()),
            "seed {seed}"
        );
    }
}

#[test]
fn adjoint_identity_in_f32() {
    for seed in 0..40u64 {
        let f = program(seed, Type::F32);
        let (df, gf) = (verified(jvp(&f), "jvp"), verified(vjp(&f), "vjp"));
        let mut rng = Rng::new(seed);
        let x = rng.vector(f.n_params, -2.0, 2.0);
        let v = rng.vector(float_params(&f).len(), -1.0, 1.0);
        let w = rng.vector(float_outputs(&f).len(), -1.0, 1.0);
        let (lhs, rhs, scale) = both_sides(&f, &df, &gf, &x, &v, &w);
        assert!(
            (lhs - rhs).abs() <= 1e-4 * scale,
            "seed {seed}: {lhs} vs {rhs}"
        );
    }
}

#[test]
fn jvp_vector_equals_single_directions_bitwise() {
    for seed in 0..40u64 {
        let f = program(seed, Type::F64);
        let k = 1 + (seed as usize % 4);
        let dfk = verified(jvp_vector(&f, k), "jvp_vector");
        let df = jvp(&f);
        let (n_in, n_out) = (float_params(&f).len(), float_outputs(&f).len());
        let mut rng = Rng::new(seed);
        let x = rng.vector(f.n_params, -2.0, 2.0);
        let dirs: Vec<Vec<f64>> = (0..k).map(|_| rng.vector(n_in, -1.0, 1.0)).collect();
        let mut input = x.clone();
        dirs.iter().for_each(|d| input.extend_from_slice(d));
        let all = interpret(&dfk, &input).unwrap();
        for (j, d) in dirs.iter().enumerate() {
            let mut input = x.clone();
            input.extend_from_slice(d);
            let one = interpret(&df, &input).unwrap();
            let start = f.n_outputs() + j * n_out;
            let bits = |s: &[f64]| s.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&all[start..start + n_out]),
                bits(&one[f.n_outputs()..]),
                "seed {seed} dir {j}"
            );
        }
    }
}

/// Run one pass, verify its output and check it kept every output bit and did not grow.
fn checked_pass(
    pass: fn(&Function) -> Function,
    name: &str,
    f: &Function,
    inputs: &[Vec<f64>],
) -> Function {
    let g = verified(pass(f), name);
    assert!(
        g.n_insts() <= f.n_insts(),
        "{name} grew {} -> {}",
        f.n_insts(),
        g.n_insts()
    );
    for x in inputs {
        let (a, b) = (interpret(f, x).unwrap(), interpret(&g, x).unwrap());
        let bits = |s: &[f64]| s.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&a),
            bits(&b),
            "{name} changed values of @{} at {x:?}",
            f.name
        );
    }
    g
}

#[test]
fn simplify_preserves_values_bitwise_and_never_grows() {
    for seed in 0..24u64 {
        let f = program(seed, if seed % 3 == 0 { Type::F32 } else { Type::F64 });
        for g in [f.clone(), jvp(&f), vjp(&f)] {
            let mut rng = Rng::new(seed);
            let inputs: Vec<Vec<f64>> = (0..3).map(|_| rng.vector(g.n_params, -2.0, 2.0)).collect();
            let mut h = g.clone();
            for _ in 0..2 {
                h = checked_pass(fold, "fold", &h, &inputs);
                h = checked_pass(identities, "identities", &h, &inputs);
                h = checked_pass(cse, "cse", &h, &inputs);
                h = checked_pass(dce, "dce", &h, &inputs);
            }
            checked_pass(simplify, "simplify", &g, &inputs);
        }
    }
}

#[test]
fn simplified_derivatives_stay_within_size_bounds() {
    for seed in 0..60u64 {
        let f = program(seed, Type::F64);
        let n = f.n_insts();
        let (dn, gn) = (simplify(&jvp(&f)).n_insts(), simplify(&vjp(&f)).n_insts());
        assert!(
            dn <= 3 * n,
            "seed {seed}: jvp has {dn} instructions for {n}"
        );
        assert!(
            gn <= 4 * n,
            "seed {seed}: vjp has {gn} instructions for {n}"
        );
    }
}

#[test]
fn random_programs_match_finite_differences() {
    for seed in 0..24u64 {
        let opts = RandomOptions {
            n_insts: 40,
            n_outputs: 2,
            ..RandomOptions::default()
        };
        let f = verified(random_function(1000 + seed, &opts), "random_function");
        let x = Rng::new(seed).vector(f.n_params, -2.0, 2.0);
        check_derivatives(&f, &x);
    }
}

#[test]
fn derived_programs_differentiate_again() {
    // jvp(jvp f), vjp(jvp f), jvp(vjp f), vjp(vjp f) against finite differences of the
    // derived programs themselves.
    for seed in 0..12u64 {
        let opts = RandomOptions {
            n_insts: 30,
            n_outputs: 2,
            ..RandomOptions::default()
        };
        let f = verified(random_function(2000 + seed, &opts), "random_function");
        let mut rng = Rng::new(seed);
        for g in [verified(jvp(&f), "jvp"), verified(vjp(&f), "vjp")] {
            let x = rng.vector(g.n_params, -1.5, 1.5);
            check_derivatives(&g, &x);
        }
    }
}
