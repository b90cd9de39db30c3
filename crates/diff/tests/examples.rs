//! Every function of `ir/examples/*.ir`: derived programs verify, stay within the size bounds
//! after simplification (jvp ≤ 3×, vjp ≤ 4× the primal's instruction count), satisfy the
//! adjoint identity and match finite differences at points inside every example's domain.

mod support;

use adjit_diff::{jvp, simplify, vjp};
use adjit_ir::random::Rng;
use adjit_ir::{interpret, parse, Function};
use support::{check_derivatives, float_outputs, float_params, verified};

fn examples() -> Vec<(String, Function)> {
    let dir = format!("{}/../../ir/examples", env!("CARGO_MANIFEST_DIR"));
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "ir"))
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).expect("readable example");
        let funcs = parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for f in funcs {
            out.push((path.display().to_string(), verified(f, "parse")));
        }
    }
    assert!(out.len() >= 5, "the example corpus is missing: {out:?}");
    out
}

#[test]
fn derived_examples_stay_within_size_bounds() {
    for (path, f) in examples() {
        let n = f.n_insts();
        let dn = verified(simplify(&verified(jvp(&f), "jvp")), "simplify").n_insts();
        let gn = verified(simplify(&verified(vjp(&f), "vjp")), "simplify").n_insts();
        println!("{path} @{}: primal {n}, jvp {dn}, vjp {gn}", f.name);
        assert!(
            dn <= 3 * n,
            "{path} @{}: jvp has {dn} instructions for {n}",
            f.name
        );
        assert!(
            gn <= 4 * n,
            "{path} @{}: vjp has {gn} instructions for {n}",
            f.name
        );
    }
}

#[test]
fn examples_satisfy_the_adjoint_identity_and_finite_differences() {
    for (i, (path, f)) in examples().into_iter().enumerate() {
        if float_params(&f).is_empty() || float_outputs(&f).is_empty() {
            continue;
        }
        let mut rng = Rng::new(i as u64);
        // Inside every example's smooth domain (every_op wants 0 < x < 1, y > 0).
        let x = rng.vector(f.n_params, 0.2, 0.8);
        let v = rng.vector(float_params(&f).len(), -1.0, 1.0);
        let w = rng.vector(float_outputs(&f).len(), -1.0, 1.0);
        let (df, gf) = (jvp(&f), vjp(&f));
        let jv =
            interpret(&df, &[x.clone(), v.clone()].concat()).unwrap()[f.n_outputs()..].to_vec();
        let jtw =
            interpret(&gf, &[x.clone(), w.clone()].concat()).unwrap()[f.n_outputs()..].to_vec();
        let lhs: f64 = w.iter().zip(&jv).map(|(a, b)| a * b).sum();
        let rhs: f64 = jtw.iter().zip(&v).map(|(a, b)| a * b).sum();
        let scale: f64 = w
            .iter()
            .zip(&jv)
            .chain(jtw.iter().zip(&v))
            .map(|(a, b)| (a * b).abs())
            .sum();
        let tol = if f.values.iter().any(|d| d.ty == adjit_ir::Type::F32) {
            1e-5
        } else {
            1e-12
        };
        assert!(
            (lhs - rhs).abs() <= tol * scale.max(1e-300),
            "{path} @{}: {lhs} vs {rhs}",
            f.name
        );
        check_derivatives(&f, &x);
    }
}
