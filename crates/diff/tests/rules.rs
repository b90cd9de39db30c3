//! Every instruction's forward and reverse derivative against central finite differences, in
//! f64 and f32, away from kinks; and the kink conventions of the non-smooth ones, exactly.

mod support;

use adjit_diff::{jvp, vjp};
use adjit_ir::{interpret, BinaryOp, Builder, CmpPred, Function, Operand, Type, UnaryOp};
use support::{check_derivatives, verified};

const TYPES: [Type; 2] = [Type::F64, Type::F32];

fn unary_fn(op: UnaryOp, ty: Type) -> Function {
    let mut b = Builder::new(op.name());
    let x = b.param(ty, "x");
    let y = b.unary(op, x);
    b.set_name(y, "y");
    b.finish(&[y])
}

/// `op a, b` with either operand optionally a literal (then not a parameter).
fn binary_fn(op: BinaryOp, ty: Type, lit_a: Option<f64>, lit_b: Option<f64>) -> Function {
    let mut b = Builder::new(op.name());
    let a: Operand = match lit_a {
        Some(c) => c.into(),
        None => b.param(ty, "a").into(),
    };
    let c: Operand = match lit_b {
        Some(c) => c.into(),
        None => b.param(ty, "b").into(),
    };
    let y = b.binary(op, a, c);
    b.finish(&[y])
}

/// Points inside each unary operation's smooth domain.
fn unary_points(op: UnaryOp) -> &'static [f64] {
    match op {
        UnaryOp::Sqrt | UnaryOp::Log => &[0.3, 1.7, 6.5],
        UnaryOp::Log1p => &[-0.6, 0.4, 3.0],
        UnaryOp::Asin | UnaryOp::Acos => &[-0.8, 0.15, 0.6],
        UnaryOp::Tan => &[-1.1, 0.4, 1.2],
        UnaryOp::Abs | UnaryOp::Floor | UnaryOp::Ceil => &[-2.3, -0.6, 0.7, 1.4],
        _ => &[-1.7, -0.3, 0.45, 1.9],
    }
}

#[test]
fn unary_ops_match_finite_differences() {
    for &op in UnaryOp::ALL {
        for ty in TYPES {
            let f = verified(unary_fn(op, ty), "builder");
            for &x in unary_points(op) {
                check_derivatives(&f, &[x]);
            }
        }
    }
}

#[test]
fn binary_ops_match_finite_differences() {
    // (a, b) pairs away from every kink (no ties for min/max, a > 0 for pow).
    let points = [(0.7, -1.3), (2.3, 0.4), (1.1, 2.6), (0.35, 1.5)];
    for &op in BinaryOp::ALL {
        for ty in TYPES {
            let f = verified(binary_fn(op, ty, None, None), "builder");
            for &(a, c) in &points {
                check_derivatives(&f, &[a, c]);
                // The same with one operand a literal.
                let fa = verified(binary_fn(op, ty, Some(a), None), "builder");
                check_derivatives(&fa, &[c]);
                let fb = verified(binary_fn(op, ty, None, Some(c)), "builder");
                check_derivatives(&fb, &[a]);
            }
        }
    }
}

#[test]
fn fma_powi_select_match_finite_differences() {
    for ty in TYPES {
        let mut b = Builder::new("fma");
        let (x, y, z) = (b.param(ty, "x"), b.param(ty, "y"), b.param(ty, "z"));
        let r = b.fma(x, y, z);
        let f = verified(b.finish(&[r]), "builder");
        check_derivatives(&f, &[0.7, -1.2, 0.4]);
        check_derivatives(&f, &[1.9, 0.3, -2.0]);

        for k in [-3, -1, 0, 1, 2, 3, 7] {
            let mut b = Builder::new("powi");
            let x = b.param(ty, "x");
            let r = b.powi(x, k);
            let f = verified(b.finish(&[r]), "builder");
            for x in [-1.3, 0.6, 1.7] {
                check_derivatives(&f, &[x]);
            }
        }

        // select (c < 0), sin a, b·b: derivative through the chosen branch only.
        let mut b = Builder::new("select");
        let (a, c, s) = (b.param(ty, "a"), b.param(ty, "b"), b.param(ty, "c"));
        let cond = b.fcmp(CmpPred::Lt, s, 0.0);
        let sa = b.unary(UnaryOp::Sin, a);
        let cc = b.mul(c, c);
        let r = b.select(cond, sa, cc);
        let f = verified(b.finish(&[r]), "builder");
        check_derivatives(&f, &[0.7, 1.3, -0.5]);
        check_derivatives(&f, &[0.7, 1.3, 0.5]);
    }
}

#[test]
fn conversions_convert_tangents_and_adjoints() {
    // y = fpromote(x)·w (f64), z = fdemote(w)·x (f32).
    let mut b = Builder::new("convert");
    let x = b.param(Type::F32, "x");
    let w = b.param(Type::F64, "w");
    let xp = b.fpromote(x);
    let y = b.mul(xp, w);
    let wd = b.fdemote(w);
    let z = b.mul(wd, x);
    let f = verified(b.finish(&[y, z]), "builder");
    check_derivatives(&f, &[0.75, -1.25]);
    let df = verified(jvp(&f), "jvp");
    assert_eq!(
        df.param_types(),
        vec![Type::F32, Type::F64, Type::F32, Type::F64]
    );
    assert_eq!(
        df.ret_types,
        vec![Type::F64, Type::F32, Type::F64, Type::F32]
    );
    let gf = verified(vjp(&f), "vjp");
    assert_eq!(
        gf.param_types(),
        vec![Type::F32, Type::F64, Type::F64, Type::F32]
    );
    assert_eq!(
        gf.ret_types,
        vec![Type::F64, Type::F32, Type::F32, Type::F64]
    );
}

/// ẏ of a one-output function at `x` along `v` (raw jvp program).
fn tangent(f: &Function, x: &[f64], v: &[f64]) -> f64 {
    let df = verified(jvp(f), "jvp");
    let mut input = x.to_vec();
    input.extend_from_slice(v);
    interpret(&df, &input).unwrap()[1]
}

/// x̄ of a one-output function at `x` for ȳ = 1 (raw vjp program).
fn gradient(f: &Function, x: &[f64]) -> Vec<f64> {
    let gf = verified(vjp(f), "vjp");
    let mut input = x.to_vec();
    input.push(1.0);
    interpret(&gf, &input).unwrap()[1..].to_vec()
}

#[test]
fn kink_conventions_are_exact() {
    for ty in TYPES {
        // abs: sign(x), 0 at 0.
        let f = unary_fn(UnaryOp::Abs, ty);
        assert_eq!(tangent(&f, &[0.0], &[1.0]), 0.0);
        assert_eq!(tangent(&f, &[-0.0], &[1.0]), 0.0);
        assert_eq!(tangent(&f, &[-3.0], &[1.0]), -1.0);
        assert_eq!(gradient(&f, &[2.0]), vec![1.0]);
        assert_eq!(gradient(&f, &[0.0]), vec![0.0]);
        // sqrt at 0: +inf.
        let f = unary_fn(UnaryOp::Sqrt, ty);
        assert_eq!(tangent(&f, &[0.0], &[1.0]), f64::INFINITY);
        assert_eq!(gradient(&f, &[0.0]), vec![f64::INFINITY]);
        // floor, ceil: zero.
        for op in [UnaryOp::Floor, UnaryOp::Ceil] {
            let f = unary_fn(op, ty);
            assert_eq!(tangent(&f, &[1.5], &[1.0]), 0.0);
            assert_eq!(gradient(&f, &[1.5]), vec![0.0]);
        }
        // min/max: ties go to the first operand, a NaN operand passes the derivative on to
        // the other one.
        for op in [BinaryOp::Min, BinaryOp::Max] {
            let f = binary_fn(op, ty, None, None);
            assert_eq!(gradient(&f, &[1.0, 1.0]), vec![1.0, 0.0]);
            assert_eq!(gradient(&f, &[-0.0, 0.0]), vec![1.0, 0.0]);
            assert_eq!(gradient(&f, &[0.0, -0.0]), vec![1.0, 0.0]);
            assert_eq!(gradient(&f, &[f64::NAN, 2.0]), vec![0.0, 1.0]);
            assert_eq!(gradient(&f, &[2.0, f64::NAN]), vec![1.0, 0.0]);
            assert_eq!(tangent(&f, &[1.0, 1.0], &[3.0, 5.0]), 3.0);
            assert_eq!(tangent(&f, &[f64::NAN, 1.0], &[3.0, 5.0]), 5.0);
        }
        assert_eq!(
            gradient(&binary_fn(BinaryOp::Min, ty, None, None), &[1.0, 2.0]),
            vec![1.0, 0.0]
        );
        assert_eq!(
            gradient(&binary_fn(BinaryOp::Max, ty, None, None), &[1.0, 2.0]),
            vec![0.0, 1.0]
        );
        // pow at base 0: ∂/∂exponent defined 0; ∂/∂base = b·0^(b−1).
        let f = binary_fn(BinaryOp::Pow, ty, None, None);
        assert_eq!(gradient(&f, &[0.0, 2.0]), vec![0.0, 0.0]);
        assert_eq!(gradient(&f, &[0.0, 1.0]), vec![1.0, 0.0]);
        assert_eq!(
            gradient(&binary_fn(BinaryOp::Pow, ty, Some(0.0), None), &[2.0]),
            vec![0.0]
        );
        // pow of a negative base: the exponent derivative is NaN (log of a negative number).
        assert!(gradient(&f, &[-2.0, 2.0])[1].is_nan());
        // select: nothing flows to the condition's operands.
        let mut b = Builder::new("select");
        let (a, c) = (b.param(ty, "a"), b.param(ty, "b"));
        let cond = b.fcmp(CmpPred::Lt, a, c);
        let r = b.select(cond, a, c);
        let f = b.finish(&[r]);
        assert_eq!(gradient(&f, &[1.0, 2.0]), vec![1.0, 0.0]);
        assert_eq!(gradient(&f, &[2.0, 1.0]), vec![0.0, 1.0]);
        assert_eq!(gradient(&f, &[1.0, 1.0]), vec![0.0, 1.0]);
    }
}

#[test]
fn bool_parameters_and_outputs_get_no_slots() {
    let mut b = Builder::new("mixed");
    let flag = b.param(Type::Bool, "flag");
    let x = b.param(Type::F64, "x");
    let sq = b.mul(x, x);
    let y = b.select(flag, sq, x);
    let pos = b.fcmp(CmpPred::Gt, y, 1.0);
    let f = verified(b.finish(&[pos, y]), "builder");
    let df = verified(jvp(&f), "jvp");
    assert_eq!(df.param_types(), vec![Type::Bool, Type::F64, Type::F64]);
    assert_eq!(df.ret_types, vec![Type::Bool, Type::F64, Type::F64]);
    assert_eq!(
        interpret(&df, &[1.0, 3.0, 1.0]).unwrap(),
        vec![1.0, 9.0, 6.0]
    );
    assert_eq!(
        interpret(&df, &[0.0, 3.0, 1.0]).unwrap(),
        vec![1.0, 3.0, 1.0]
    );
    let gf = verified(vjp(&f), "vjp");
    assert_eq!(gf.param_types(), vec![Type::Bool, Type::F64, Type::F64]);
    assert_eq!(gf.ret_types, vec![Type::Bool, Type::F64, Type::F64]);
    assert_eq!(
        interpret(&gf, &[1.0, 3.0, 1.0]).unwrap(),
        vec![1.0, 9.0, 6.0]
    );
    check_derivatives(&f, &[1.0, 0.8]);
}
