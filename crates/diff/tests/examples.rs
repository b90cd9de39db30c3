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

/// `vjp_seeded_with_one` is `vjp` with each cotangent parameter turned into an unnamed
/// `const 1.0` in its place (the parameters before them keep their kinds): rebuilt here
/// line by line from `vjp`'s output and compared whole.
#[test]
fn seeded_vjp_is_the_vjp_with_unit_constant_seeds() {
    use adjit_ir::{InstData, Value, ValueDef};
    for (path, f) in examples() {
        let g = vjp(&f);
        let n_x = f.n_params;
        let mut expected = Function::new(g.name.clone());
        for p in f.params() {
            let q = expected.add_param(g.ty(p), g.name(p).cloned());
            expected.set_param_kind(q, g.param_kind(p));
        }
        for p in g.params().skip(n_x) {
            let ty = g.ty(p);
            expected.push_inst(ty, InstData::constant(ty, 1.0), None);
        }
        for v in g.all_values().skip(g.n_params) {
            let data = g.data(v);
            let ValueDef::Inst(inst) = &data.def else {
                panic!("{path}: {v} is a parameter after the instructions began")
            };
            expected.push_inst(data.ty, inst.clone(), data.name.clone());
        }
        for &r in &g.rets {
            expected.push_ret(Value::new(r.index()));
        }
        let seeded = verified(adjit_diff::derive::vjp_seeded_with_one(&f), "seeded");
        assert_eq!(seeded, expected, "{path} @{}", f.name);
    }
}
