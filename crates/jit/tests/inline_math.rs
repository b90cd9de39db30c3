//! adjit's math routines emitted inline ([`MathImpl::Inline`]) against their definition in
//! `adjit_ir::mathlib`: bitwise equal (NaN as NaN) for `f64` and `f32`, one point per call and
//! two vector lanes per call, on random bit patterns, dense samples and special values (binary
//! operations with a routine, such as `pow`: on all pairs of special values and on random
//! pairs); with
//! [`MathImpl::Auto`], the default, the same programs inline the default routines, call the
//! library for the rest and equal the interpreter bitwise; with [`MathImpl::Libm`] they call the
//! library for all, and library and inline agree within 3 ulps; object files with inline math
//! import no math routine.

use adjit_ir::random::Rng;
use adjit_ir::{math, mathlib, BinaryOp, Builder, Function, Type, UnaryOp};
use adjit_jit::{clif_text, compile, compile_object, JitOptions, MathImpl};

/// Every unary operation with an inline routine.
fn inline_ops() -> Vec<UnaryOp> {
    UnaryOp::ALL
        .iter()
        .copied()
        .filter(|&op| mathlib::has_unary(op))
        .collect()
}

/// `f(x) = (op₁(x), op₂(x), …)` over the inline operations, in type `ty`.
fn program(ty: Type) -> Function {
    let mut b = Builder::new(format!("inline_{ty}"));
    let x = b.param(ty, "x");
    let outs: Vec<_> = inline_ops().into_iter().map(|op| b.unary(op, x)).collect();
    b.finish(&outs)
}

/// Special values, then random bit patterns, log-uniform magnitudes and uniform samples of
/// [−750, 750] and [−25, 25] (the ranges where exp and tanh change), an odd count.
fn points(n: usize) -> Vec<f64> {
    let mut pts = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        5e-324,
        -5e-324,
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::MIN,
        709.78,
        709.8,
        -745.1,
        -746.0,
        20.0,
        19.5,
        88.7,
        -103.9,
        // Where the table-driven forms switch form or row.
        0.125,
        -0.125,
        0.5,
        -0.4999999999999999,
        709.782,
        0.998046875,
        0.9990234375,
        1.001953125,
        1.0000000000000002,
        5.9375,
    ];
    let mut rng = Rng::new(0x1234);
    for i in 0..n {
        pts.push(match i % 4 {
            0 => f64::from_bits(rng.next_u64()),
            1 => {
                let m = 2f64.powf(-60.0 + 70.0 * rng.uniform(0.0, 1.0));
                if rng.next_u64() & 1 == 1 {
                    -m
                } else {
                    m
                }
            }
            2 => rng.uniform(-750.0, 750.0),
            _ => rng.uniform(-25.0, 25.0),
        });
    }
    if pts.len() % 2 == 0 {
        pts.push(0.5);
    }
    pts
}

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Distance in units of the last place of `ty` (both finite or equal).
fn ulps(a: f64, b: f64, ty: Type) -> u64 {
    if same(a, b) {
        return 0;
    }
    if !a.is_finite() || !b.is_finite() {
        return u64::MAX;
    }
    let ordered = |x: f64| -> i64 {
        let bits = match ty {
            Type::F32 => i64::from((x as f32).to_bits() as i32),
            _ => x.to_bits() as i64,
        };
        if bits < 0 {
            i64::MIN - bits
        } else {
            bits
        }
    };
    ordered(a).abs_diff(ordered(b))
}

/// The interpreter's outputs at every point, point-major.
/// What the inline code must return: `mathlib`'s routine on `f64` (`f32`: on the argument
/// rounded to `f32`, the result rounded back).
fn expected(ty: Type, pts: &[f64]) -> Vec<f64> {
    let ops = inline_ops();
    let routine = move |op, x: f64| match ty {
        Type::F32 => {
            let y = mathlib::unary_f64(op, f64::from(x as f32)).expect("a routine");
            f64::from(y as f32)
        }
        _ => mathlib::unary_f64(op, x).expect("a routine"),
    };
    pts.iter()
        .flat_map(|&x| ops.iter().map(move |&op| routine(op, x)))
        .collect()
}

/// What the default code must return: the interpreter's semantics.
fn interpreted(ty: Type, pts: &[f64]) -> Vec<f64> {
    let ops = inline_ops();
    pts.iter()
        .flat_map(|&x| ops.iter().map(move |&op| math::unary(op, ty, x)))
        .collect()
}

/// What `MathImpl::Libm` code must return: the C library's routines.
fn library(ty: Type, pts: &[f64]) -> Vec<f64> {
    let ops = inline_ops();
    let routine = move |op, x: f64| match ty {
        Type::F32 => f64::from(math::unary_f32_libm(op, x as f32)),
        _ => math::unary_f64_libm(op, x),
    };
    pts.iter()
        .flat_map(|&x| ops.iter().map(move |&op| routine(op, x)))
        .collect()
}

fn check_inline(ty: Type) {
    let func = program(ty);
    let pts = points(20_000);
    let want = expected(ty, &pts);
    let n_out = inline_ops().len();
    for lanes in [1, 2] {
        let code = inline_code(&func, lanes);
        let mut got = vec![0.0; want.len()];
        code.call_batch(&pts, &mut got).unwrap();
        let mut one = vec![0.0; n_out];
        for (p, &x) in pts.iter().enumerate() {
            if lanes == 1 {
                code.call(&[x], &mut one).unwrap();
                got[p * n_out..(p + 1) * n_out].copy_from_slice(&one);
            }
            for (j, op) in inline_ops().into_iter().enumerate() {
                let (g, w) = (got[p * n_out + j], want[p * n_out + j]);
                assert!(
                    same(g, w),
                    "{ty} {} at {x:e} ({lanes} lane(s)): jit {g:e} ({:#x}), mathlib {w:e} ({:#x})",
                    op.name(),
                    g.to_bits(),
                    w.to_bits()
                );
            }
        }
    }
}

/// `func` compiled with every routine inline, its batches `lanes` points per kernel call.
fn inline_code(func: &Function, lanes: usize) -> adjit_jit::CompiledFunction {
    let opts = JitOptions {
        batch_lanes: lanes,
        math: MathImpl::Inline,
        ..JitOptions::default()
    };
    let code = compile(func, &opts).expect("compiles");
    assert_eq!(code.batch_lanes(), lanes, "{}: kernels compiled", func.name);
    code
}

/// `MathImpl::Inline` leaves no library call behind: every transcendental of the IR, `pow`
/// and `atan2` have a routine.
#[test]
fn every_transcendental_has_a_routine() {
    for &op in UnaryOp::ALL {
        assert_eq!(
            mathlib::has_unary(op),
            op.is_transcendental(),
            "{}",
            op.name()
        );
    }
    for op in [BinaryOp::Pow, BinaryOp::Atan2] {
        assert!(mathlib::has_binary(op), "{}", op.name());
    }
}

#[test]
fn inline_f64_equals_mathlib_bitwise() {
    check_inline(Type::F64);
}

#[test]
fn inline_f32_equals_mathlib_bitwise() {
    check_inline(Type::F32);
}

#[test]
fn the_default_equals_the_interpreter_and_the_library_mode_calls_the_library() {
    assert_eq!(JitOptions::default().math, MathImpl::Auto, "the default");
    for ty in [Type::F64, Type::F32] {
        let func = program(ty);
        let pts = points(4_000);
        let (interp, libm, inline) = (interpreted(ty, &pts), library(ty, &pts), expected(ty, &pts));
        let ops = inline_ops();
        // The interpreter computes each routine as the default says: adjit's or the library's.
        for (i, &w) in interp.iter().enumerate() {
            let op = ops[i % ops.len()];
            let by = if mathlib::default_unary(op) {
                inline[i]
            } else {
                libm[i]
            };
            assert!(
                same(w, by),
                "{ty} {} at {:e}",
                op.name(),
                pts[i / ops.len()]
            );
        }
        for (math, want) in [(MathImpl::Auto, &interp), (MathImpl::Libm, &libm)] {
            for lanes in [1, 2] {
                let opts = JitOptions {
                    math,
                    batch_lanes: lanes,
                    ..JitOptions::default()
                };
                let code = compile(&func, &opts).expect("compiles");
                let mut got = vec![0.0; want.len()];
                code.call_batch(&pts, &mut got).unwrap();
                for (i, (&g, &w)) in got.iter().zip(want.iter()).enumerate() {
                    let x = pts[i / ops.len()];
                    assert!(
                        same(g, w),
                        "{ty} {} {math:?} ({lanes} lane(s)) at {x:e}: jit {g:e}, expected {w:e}",
                        ops[i % ops.len()].name()
                    );
                }
            }
        }
        for (i, (&a, &w)) in inline.iter().zip(&libm).enumerate() {
            let x = pts[i / ops.len()];
            assert!(
                ulps(a, w, ty) <= 3,
                "{ty} output {i} at {x:e}: inline {a:e}, library {w:e}"
            );
        }
    }
}

#[test]
fn the_default_inlines_exactly_its_routines() {
    let func = program(Type::F64);
    let called = clif_text(&func, &JitOptions::default()).unwrap();
    for op in inline_ops() {
        assert_eq!(
            called.contains(&format!("= adjit_{}", op.name())),
            !mathlib::default_unary(op),
            "{}: {called}",
            op.name()
        );
    }
}

#[test]
fn inline_code_calls_nothing_and_library_code_calls_the_wrappers() {
    let func = program(Type::F64);
    let inline_opts = JitOptions {
        math: MathImpl::Inline,
        ..JitOptions::default()
    };
    let inline = clif_text(&func, &inline_opts).unwrap();
    assert!(!inline.contains("call "), "{inline}");
    let libm = JitOptions {
        math: MathImpl::Libm,
        ..JitOptions::default()
    };
    let called = clif_text(&func, &libm).unwrap();
    for op in inline_ops() {
        assert!(
            called.contains(&format!("= adjit_{}", op.name())),
            "{} not called: {called}",
            op.name()
        );
    }
}

#[test]
fn objects_with_inline_math_import_no_math_routine() {
    let func = program(Type::F64);
    for triple in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        let inline = JitOptions {
            math: MathImpl::Inline,
            ..JitOptions::default()
        };
        let obj = compile_object(&func, triple, &inline).unwrap();
        for op in inline_ops() {
            let name = format!("\0{}\0", op.name());
            assert!(
                !obj.bytes.windows(name.len()).any(|w| w == name.as_bytes()),
                "{triple}: object imports {}",
                op.name()
            );
        }
    }
}

/// Every binary operation with an inline routine.
fn inline_binary_ops() -> Vec<BinaryOp> {
    BinaryOp::ALL
        .iter()
        .copied()
        .filter(|&op| mathlib::has_binary(op))
        .collect()
}

/// `f(x, y) = (op₁(x, y), op₂(x, y), …)` over the binary operations with a routine.
fn binary_program(ty: Type) -> Function {
    let mut b = Builder::new(format!("inline_binary_{ty}"));
    let x = b.param(ty, "x");
    let y = b.param(ty, "y");
    let outs: Vec<_> = inline_binary_ops()
        .into_iter()
        .map(|op| b.binary(op, x, y))
        .collect();
    b.finish(&outs)
}

/// Pairs `(x, y)`: every pair of special values, then random bit patterns, log-uniform `x`
/// with `y` such that `|x|ʸ` spans the `f64` range, negative `x` with integer `y`, `y` near
/// ±1/2 and uniform samples of `[−10, 10]²`; an odd count. Point-major (`x, y, x, y, …`).
fn pairs(n: usize) -> Vec<f64> {
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        3.0,
        -3.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        5e-324,
        -5e-324,
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::MIN,
        1e300,
        -1e-300,
        709.78,
        1.0000000000000002,
        0.9999999999999999,
    ];
    let mut pts = Vec::new();
    for &x in &specials {
        for &y in &specials {
            pts.extend([x, y]);
        }
    }
    let mut rng = Rng::new(0x9a1);
    let log_uniform = |rng: &mut Rng| {
        let bits = (rng.next_u64() >> 12) | ((rng.below(2047) as u64) << 52);
        f64::from_bits(bits)
    };
    for i in 0..n {
        let (x, y) = match i % 5 {
            0 => (
                f64::from_bits(rng.next_u64()),
                f64::from_bits(rng.next_u64()),
            ),
            1 => {
                let x = log_uniform(&mut rng);
                (x, rng.uniform(-1080.0, 1030.0) / x.log2())
            }
            2 => {
                let x = -log_uniform(&mut rng);
                (x, (rng.uniform(-1080.0, 1030.0) / x.abs().log2()).round())
            }
            3 => {
                let half = if rng.next_u64() & 1 == 1 { 0.5 } else { -0.5 };
                (
                    log_uniform(&mut rng),
                    half * (1.0 + rng.uniform(-1e-3, 1e-3)),
                )
            }
            _ => (rng.uniform(-10.0, 10.0), rng.uniform(-10.0, 10.0)),
        };
        pts.extend([x, y]);
    }
    if (pts.len() / 2) % 2 == 0 {
        pts.extend([2.0, 0.5]);
    }
    pts
}

/// What the inline code must return at each pair, pair-major: `mathlib`'s routine on `f64`
/// (`f32`: on the arguments rounded to `f32`, the result rounded back).
fn expected_binary(ty: Type, pts: &[f64]) -> Vec<f64> {
    let ops = inline_binary_ops();
    let routine = move |op, x: f64, y: f64| match ty {
        Type::F32 => {
            let (x, y) = (f64::from(x as f32), f64::from(y as f32));
            f64::from(mathlib::binary_f64(op, x, y).expect("a routine") as f32)
        }
        _ => mathlib::binary_f64(op, x, y).expect("a routine"),
    };
    pts.chunks(2)
        .flat_map(|p| ops.iter().map(move |&op| routine(op, p[0], p[1])))
        .collect()
}

fn check_inline_binary(ty: Type) {
    let ops = inline_binary_ops();
    if ops.is_empty() {
        return;
    }
    let func = binary_program(ty);
    let pts = pairs(20_000);
    let want = expected_binary(ty, &pts);
    let n_out = ops.len();
    for lanes in [1, 2] {
        let code = inline_code(&func, lanes);
        let mut got = vec![0.0; want.len()];
        code.call_batch(&pts, &mut got).unwrap();
        let mut one = vec![0.0; n_out];
        for (p, xy) in pts.chunks(2).enumerate() {
            if lanes == 1 {
                code.call(xy, &mut one).unwrap();
                got[p * n_out..(p + 1) * n_out].copy_from_slice(&one);
            }
            for (j, op) in ops.iter().enumerate() {
                let (g, w) = (got[p * n_out + j], want[p * n_out + j]);
                assert!(
                    same(g, w),
                    "{ty} {}({:e}, {:e}) ({lanes} lane(s)): jit {g:e} ({:#x}), mathlib {w:e} ({:#x})",
                    op.name(),
                    xy[0],
                    xy[1],
                    g.to_bits(),
                    w.to_bits()
                );
            }
        }
    }
}

#[test]
fn inline_binary_f64_equals_mathlib_bitwise() {
    check_inline_binary(Type::F64);
}

#[test]
fn inline_binary_f32_equals_mathlib_bitwise() {
    check_inline_binary(Type::F32);
}

#[test]
fn inline_binary_code_calls_nothing() {
    if inline_binary_ops().is_empty() {
        return;
    }
    let inline_opts = JitOptions {
        math: MathImpl::Inline,
        batch_lanes: 2,
        ..JitOptions::default()
    };
    let inline = clif_text(&binary_program(Type::F64), &inline_opts).unwrap();
    assert!(!inline.contains("call "), "{inline}");
}

/// `sin`, `cos` and `tan` reduce arguments below 2³⁰ by Cody–Waite alone, behind a branch
/// taken when every lane is that small, and by both reductions selected per lane otherwise:
/// every pair of arguments on either side of the limit (and NaN, ±∞, ±0, subnormals) gives
/// `mathlib`'s bits in one lane and in two. A general path that let Payne–Hanek answer a small
/// lane, or a fast path taken for a pair with one large lane, fails here.
#[test]
fn trig_takes_either_reduction_with_the_same_bits() {
    let args = [
        3.0,
        -0.7,
        1073741823.9999999, // the largest below 2³⁰
        1073741824.0,       // 2³⁰: Payne–Hanek
        -1073741824.0,
        1e10,
        -3e300,
        f64::NAN,
        f64::INFINITY,
        -0.0,
        5e-324,
        7.450580596923828e-9,
    ];
    let pts: Vec<f64> = args
        .iter()
        .flat_map(|&a| args.iter().flat_map(move |&b| [a, b]))
        .collect();
    let ops = [UnaryOp::Sin, UnaryOp::Cos, UnaryOp::Tan];
    let mut b = Builder::new("trig");
    let x = b.param(Type::F64, "x");
    let outs: Vec<_> = ops.iter().map(|&op| b.unary(op, x)).collect();
    let func = b.finish(&outs);
    for lanes in [1, 2] {
        let code = inline_code(&func, lanes);
        let mut got = vec![0.0; pts.len() * ops.len()];
        code.call_batch(&pts, &mut got).unwrap();
        for (p, &x) in pts.iter().enumerate() {
            for (j, &op) in ops.iter().enumerate() {
                let (g, w) = (
                    got[p * 3 + j],
                    mathlib::unary_f64(op, x).expect("a routine"),
                );
                assert!(
                    same(g, w),
                    "{} at {x:e} ({lanes} lane(s), point {p}): jit {g:e}, mathlib {w:e}",
                    op.name()
                );
            }
        }
    }
}
