//! The benchmark programs of ir/bench/*.ir (written by scripts/gen_bench.py) parse, verify,
//! compile, and agree with the interpreter; their values are checked against closed forms.

mod common;

use std::path::Path;

use adjit_ir::{interpret, parse_function, verify, Function};
use adjit_jit::{compile, JitOptions};
use common::assert_same;

fn load(name: &str) -> Function {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../ir/bench")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let func = parse_function(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    verify(&func).unwrap();
    func
}

/// Compile `name` and return its JIT outputs at `x`, checked against the interpreter.
fn run(name: &str, x: &[f64]) -> Vec<f64> {
    let func = load(name);
    let code = compile(&func, &JitOptions::default()).unwrap();
    let mut out = vec![0.0; code.n_outputs()];
    code.call(x, &mut out).unwrap();
    assert_same(name, x, &out, &interpret(&func, x).unwrap());
    out
}

#[test]
fn seed001_file_computes_its_formula() {
    let (x, y) = (1.25f64, 0.5f64);
    let p = 7.0 * x;
    assert_eq!(
        run("seed001.ir", &[x, y]),
        vec![2.0 * p * (p * x * 5.0) + 3.0 * (1.0 / y)]
    );
}

#[test]
fn rosenbrock_files_vanish_at_one_and_match_a_closed_form() {
    for n in [100, 1000, 10000] {
        let name = format!("rosenbrock{n}.ir");
        assert_eq!(run(&name, &vec![1.0; n]), vec![0.0], "{name} at 1");
        // Each term at 0.5 is 0.25 + 100 * 0.0625 = 6.5, exactly.
        assert_eq!(
            run(&name, &vec![0.5; n]),
            vec![6.5 * (n - 1) as f64],
            "{name} at 0.5"
        );
    }
}

#[test]
fn blackscholes_file_prices_the_textbook_call() {
    // S = K = 100, r = 5%, sigma = 20%, T = 1: 10.4506 (Hull, Options, Futures and Other Derivatives).
    let price = run("blackscholes.ir", &[100.0, 100.0, 0.05, 0.2, 1.0])[0];
    assert!((price - 10.4506).abs() < 1e-4, "{price}");
}

#[test]
fn mlp_file_has_sixteen_inputs_and_bounded_output() {
    let func = load("mlp.ir");
    assert_eq!((func.n_params, func.n_outputs()), (16, 1));
    let y = run("mlp.ir", &[0.3; 16])[0];
    assert!(y.is_finite() && y.abs() < 40.0, "{y}");
}

#[test]
fn lorenz_file_equals_rust_rk4_with_the_same_operation_order() {
    let (sigma, rho, beta, dt) = (10.0f64, 28.0f64, 8.0f64 / 3.0, 0.01f64);
    let deriv = |[x, y, z]: [f64; 3]| [(y - x) * sigma, x * (rho - z) - y, x * y - z * beta];
    let mut s = [1.0, 1.0, 1.0];
    for _ in 0..1000 {
        let k1 = deriv(s);
        let k2 = deriv([0, 1, 2].map(|i| k1[i].mul_add(dt / 2.0, s[i])));
        let k3 = deriv([0, 1, 2].map(|i| k2[i].mul_add(dt / 2.0, s[i])));
        let k4 = deriv([0, 1, 2].map(|i| k3[i].mul_add(dt, s[i])));
        s = [0, 1, 2].map(|i| {
            (k2[i] + k3[i])
                .mul_add(2.0, k1[i] + k4[i])
                .mul_add(dt / 6.0, s[i])
        });
    }
    assert_eq!(run("lorenz.ir", &[1.0, 1.0, 1.0]), s.to_vec());
}
