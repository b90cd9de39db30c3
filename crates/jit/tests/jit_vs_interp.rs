//! The JIT against the reference interpreter: bit-identical results (NaN = NaN) on random
//! programs (f64, f32, non-smooth), on a program using every opcode at special inputs, and
//! under options that force spilling, chunking and the constant table.

mod common;

use adjit_ir::random::{random_function, RandomOptions, Rng};
use adjit_ir::{interpret, verify, Function, Type};
use adjit_jit::{compile, JitOptions, OptLevel, RegAlloc};
use common::{assert_same, every_opcode, special_values};

/// Compile `func` and compare with the interpreter at every input vector.
fn check(func: &Function, opts: &JitOptions, points: &[Vec<f64>]) {
    verify(func).expect("test program verifies");
    let code = compile(func, opts).unwrap_or_else(|e| panic!("@{}: {e}", func.name));
    let mut out = vec![0.0; code.n_outputs()];
    for x in points {
        code.call(x, &mut out).unwrap();
        let want = interpret(func, x).unwrap();
        assert_same(&func.name, x, &out, &want);
    }
}

fn random_points(seed: u64, n_params: usize, count: usize) -> Vec<Vec<f64>> {
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|_| rng.vector(n_params, -2.0, 2.0))
        .collect()
}

fn random_programs(ty: Type, non_smooth: bool, count: u64, opts: &JitOptions) {
    for seed in 0..count {
        let ropts = RandomOptions {
            n_params: 1 + (seed % 4) as usize,
            n_insts: 20 + (seed as usize * 37) % 200,
            n_outputs: 1 + (seed % 3) as usize,
            ty,
            non_smooth,
            ..RandomOptions::default()
        };
        let func = random_function(seed, &ropts);
        check(&func, opts, &random_points(seed, func.n_params, 4));
    }
}

#[test]
fn random_f64_programs_match_interpreter() {
    random_programs(Type::F64, false, 150, &JitOptions::default());
}

#[test]
fn random_f32_programs_match_interpreter() {
    random_programs(Type::F32, false, 100, &JitOptions::default());
}

#[test]
fn random_non_smooth_programs_match_interpreter() {
    random_programs(Type::F64, true, 100, &JitOptions::default());
    random_programs(Type::F32, true, 50, &JitOptions::default());
}

#[test]
fn random_programs_match_without_optimisation_and_with_single_pass() {
    let opts = JitOptions {
        opt_level: OptLevel::None,
        regalloc: RegAlloc::SinglePass,
        ..JitOptions::default()
    };
    random_programs(Type::F64, true, 40, &opts);
}

/// Tiny window, tiny chunks, every literal from the table: exercises every storage path.
#[test]
fn spilling_chunking_and_constant_table_preserve_results() {
    let opts = JitOptions {
        registers: 4,
        chunk_insts: 17,
        const_table_above: 0,
        ..JitOptions::default()
    };
    for seed in 0..40 {
        let ropts = RandomOptions {
            n_params: 3,
            n_insts: 150,
            n_outputs: 3,
            ty: if seed % 2 == 0 { Type::F64 } else { Type::F32 },
            window: 60,
            non_smooth: seed % 3 == 0,
        };
        let func = random_function(seed, &ropts);
        check(&func, &opts, &random_points(seed, 3, 3));
        let code = compile(&func, &opts).unwrap();
        assert!(code.n_chunks() >= 8 && code.workspace_bytes() > 0);
    }
    for ty in [Type::F64, Type::F32] {
        let func = every_opcode(ty);
        check(&func, &opts, &special_points());
    }
}

/// Every pair of special values for (x, y), with the bool flag alternating.
fn special_points() -> Vec<Vec<f64>> {
    let specials = special_values();
    let mut points = Vec::new();
    for (i, &x) in specials.iter().enumerate() {
        for (j, &y) in specials.iter().enumerate() {
            points.push(vec![x, y, ((i + j) % 3) as f64 - 1.0]);
        }
    }
    points
}

#[test]
fn every_opcode_matches_interpreter_at_special_inputs() {
    for ty in [Type::F64, Type::F32] {
        let func = every_opcode(ty);
        check(&func, &JitOptions::default(), &special_points());
    }
}

#[test]
fn min_max_follow_the_ir_rules_for_nan_and_signed_zero() {
    use adjit_ir::{BinaryOp, Builder};
    let mut b = Builder::new("minmax");
    let x = b.param(Type::F64, "x");
    let y = b.param(Type::F64, "y");
    let lo = b.binary(BinaryOp::Min, x, y);
    let hi = b.binary(BinaryOp::Max, x, y);
    let f = b.finish(&[lo, hi]);
    let code = compile(&f, &JitOptions::default()).unwrap();
    let mut out = [0.0; 2];
    let cases: [([f64; 2], [f64; 2]); 5] = [
        ([-0.0, 0.0], [-0.0, -0.0]),
        ([0.0, -0.0], [0.0, 0.0]),
        ([f64::NAN, 2.0], [2.0, 2.0]),
        ([2.0, f64::NAN], [2.0, 2.0]),
        ([1.0, 3.0], [1.0, 3.0]),
    ];
    for (x, want) in cases {
        code.call(&x, &mut out).unwrap();
        assert_eq!(
            out.map(f64::to_bits),
            want.map(f64::to_bits),
            "min/max at {x:?}"
        );
    }
    code.call(&[f64::NAN, f64::NAN], &mut out).unwrap();
    assert!(out[0].is_nan() && out[1].is_nan());
}

/// Derivative programs (forward and reverse mode, from adjit-diff) are ordinary IR: the JIT
/// must agree with the interpreter on them too, including with spilling and chunking.
#[test]
fn derivative_programs_match_interpreter() {
    let small_windows = JitOptions {
        registers: 4,
        chunk_insts: 97,
        ..JitOptions::default()
    };
    for seed in 0..30 {
        let ropts = RandomOptions {
            n_params: 2 + (seed % 3) as usize,
            n_insts: 40 + seed as usize * 5,
            ty: if seed % 4 == 3 { Type::F32 } else { Type::F64 },
            non_smooth: seed % 2 == 1,
            ..RandomOptions::default()
        };
        let func = random_function(seed, &ropts);
        for df in [adjit_diff::jvp(&func), adjit_diff::vjp(&func)] {
            let points = random_points(seed + 100, df.n_params, 3);
            check(&df, &JitOptions::default(), &points);
            check(&df, &small_windows, &points);
        }
    }
}
