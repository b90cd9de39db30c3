//! The tracing front end: a traced closure, run by the interpreter, computes exactly what the
//! same Rust expression computes on plain floats.
//!
//! Each `check!` writes the expression once; it is traced (over `Var`) and evaluated directly
//! (over `R`, a plain `f64` wrapper whose methods call Rust's `f64` operations, with the IR's
//! documented semantics where Rust's differ: `powi` order, `min`/`max` ties, `erf`). Results
//! must agree bit for bit at every sample point: the op sequences are identical.

use std::iter::Sum;
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

use adjit_ir::trace::{trace, trace_multi, Tracer, Var};
use adjit_ir::{interpret, verify, BinaryOp, Function, InstData, Operand, Type, UnaryOp};

/// A plain `f64` with the method names of [`Var`].
#[derive(Clone, Copy, Debug)]
struct R(f64);

/// A plain `bool` with [`adjit_ir::trace::Bool`]'s `select`.
#[derive(Clone, Copy, Debug)]
struct RBool(bool);

fn math(op: UnaryOp, x: f64) -> f64 {
    adjit_ir::math::unary_f64(op, x)
}

impl From<f64> for R {
    fn from(x: f64) -> R {
        R(x)
    }
}

impl RBool {
    fn select(self, a: impl Into<R>, b: impl Into<R>) -> R {
        if self.0 {
            a.into()
        } else {
            b.into()
        }
    }
}

macro_rules! r_unary {
    ($($name:ident => $body:expr),* $(,)?) => {
        $(fn $name(self) -> R { let f: fn(f64) -> f64 = $body; R(f(self.0)) })*
    };
}

#[allow(clippy::should_implement_trait)]
impl R {
    // Transcendentals as adjit defines them (`adjit_ir::math`: per routine adjit's or the C
    // library's), so a traced method must record exactly its operation.
    r_unary! {
        abs => f64::abs, sqrt => f64::sqrt, floor => f64::floor, ceil => f64::ceil,
        exp => |x| math(UnaryOp::Exp, x), ln => |x| math(UnaryOp::Log, x),
        log1p => |x| math(UnaryOp::Log1p, x), exp_m1 => |x| math(UnaryOp::Expm1, x),
        sin => |x| math(UnaryOp::Sin, x), cos => |x| math(UnaryOp::Cos, x),
        tan => |x| math(UnaryOp::Tan, x), asin => |x| math(UnaryOp::Asin, x),
        acos => |x| math(UnaryOp::Acos, x), atan => |x| math(UnaryOp::Atan, x),
        sinh => |x| math(UnaryOp::Sinh, x), cosh => |x| math(UnaryOp::Cosh, x),
        tanh => |x| math(UnaryOp::Tanh, x), erf => |x| math(UnaryOp::Erf, x),
    }
    fn square(self) -> R {
        R(self.0 * self.0)
    }
    fn powi(self, k: i32) -> R {
        R(adjit_ir::math::powi_f64(self.0, k))
    }
    fn powf(self, e: impl Into<R>) -> R {
        R(adjit_ir::math::binary_f64(
            BinaryOp::Pow,
            self.0,
            e.into().0,
        ))
    }
    fn atan2(self, x: impl Into<R>) -> R {
        R(adjit_ir::math::binary_f64(
            BinaryOp::Atan2,
            self.0,
            x.into().0,
        ))
    }
    fn min(self, o: impl Into<R>) -> R {
        R(adjit_ir::math::binary_f64(
            BinaryOp::Min,
            self.0,
            o.into().0,
        ))
    }
    fn max(self, o: impl Into<R>) -> R {
        R(adjit_ir::math::binary_f64(
            BinaryOp::Max,
            self.0,
            o.into().0,
        ))
    }
    fn mul_add(self, a: impl Into<R>, b: impl Into<R>) -> R {
        R(self.0.mul_add(a.into().0, b.into().0))
    }
    fn lt(self, o: impl Into<R>) -> RBool {
        RBool(self.0 < o.into().0)
    }
    fn le(self, o: impl Into<R>) -> RBool {
        RBool(self.0 <= o.into().0)
    }
    fn gt(self, o: impl Into<R>) -> RBool {
        RBool(self.0 > o.into().0)
    }
    fn ge(self, o: impl Into<R>) -> RBool {
        RBool(self.0 >= o.into().0)
    }
    fn eq(self, o: impl Into<R>) -> RBool {
        RBool(self.0 == o.into().0)
    }
    fn ne(self, o: impl Into<R>) -> RBool {
        RBool(self.0 != o.into().0)
    }
}

macro_rules! r_arith {
    ($trait:ident, $m:ident, $atrait:ident, $am:ident, $op:tt) => {
        impl $trait<R> for R {
            type Output = R;
            fn $m(self, o: R) -> R { R(self.0 $op o.0) }
        }
        impl $trait<f64> for R {
            type Output = R;
            fn $m(self, o: f64) -> R { R(self.0 $op o) }
        }
        impl $trait<R> for f64 {
            type Output = R;
            fn $m(self, o: R) -> R { R(self $op o.0) }
        }
        impl $atrait<R> for R {
            fn $am(&mut self, o: R) { self.0 = self.0 $op o.0 }
        }
        impl $atrait<f64> for R {
            fn $am(&mut self, o: f64) { self.0 = self.0 $op o }
        }
    };
}
r_arith!(Add, add, AddAssign, add_assign, +);
r_arith!(Sub, sub, SubAssign, sub_assign, -);
r_arith!(Mul, mul, MulAssign, mul_assign, *);
r_arith!(Div, div, DivAssign, div_assign, /);

impl Neg for R {
    type Output = R;
    fn neg(self) -> R {
        R(-self.0)
    }
}

impl Sum<R> for R {
    fn sum<I: Iterator<Item = R>>(iter: I) -> R {
        iter.reduce(|a, b| a + b).expect("non-empty sum")
    }
}

/// Sample points: a fixed grid of awkward values, then pseudo-random ones in [-4, 4].
fn points(n_inputs: usize) -> Vec<Vec<f64>> {
    let special = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.75,
        2.0,
        3.5,
        1e-3,
        -1e300,
        f64::INFINITY,
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 * 8.0 - 4.0
    };
    let mut out: Vec<Vec<f64>> = (0..special.len())
        .map(|i| {
            (0..n_inputs)
                .map(|j| special[(i + 3 * j) % special.len()])
                .collect()
        })
        .collect();
    out.extend((0..150).map(|_| (0..n_inputs).map(|_| next()).collect()));
    out
}

fn same_bits(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Trace `$body` over `n` f64 inputs named by `$x`, verify it, and compare the interpreter
/// with the body evaluated on [`R`] at every sample point. Returns the traced function.
macro_rules! check {
    ($n:expr, |$x:ident| $body:expr) => {{
        let func = trace($n, |$x| $body);
        if let Err(e) = verify(&func) {
            panic!(
                "{}: traced function does not verify:\n{e}\n{func}",
                stringify!($body)
            );
        }
        for point in points($n) {
            let values: Vec<R> = point.iter().map(|&v| R(v)).collect();
            let $x: &[R] = &values;
            let want: R = $body;
            let got = interpret(&func, &point).expect("interpret");
            assert!(
                same_bits(got[0], want.0),
                "{} at {point:?}: traced gives {:?}, Rust gives {:?}\n{func}",
                stringify!($body),
                got[0],
                want.0
            );
        }
        func
    }};
}

#[test]
fn arithmetic_between_vars_and_literals() {
    check!(2, |x| x[0] + x[1]);
    check!(2, |x| x[0] - x[1]);
    check!(2, |x| x[0] * x[1]);
    check!(2, |x| x[0] / x[1]);
    check!(1, |x| x[0] + 1.5);
    check!(1, |x| x[0] - 1.5);
    check!(1, |x| x[0] * 0.1);
    check!(1, |x| x[0] / 3.0);
    check!(1, |x| 1.5 + x[0]);
    check!(1, |x| 1.0 - x[0]);
    check!(1, |x| 2.0 * x[0]);
    check!(1, |x| 1.0 / x[0]);
    check!(1, |x| -x[0]);
    check!(2, |x| -(x[0] * x[1]) + 2.0 * x[0] / (1.0 - x[1]));
}

#[test]
fn assign_operators() {
    check!(2, |x| {
        let mut y = x[0];
        y += x[1];
        y -= 0.25;
        y *= x[0];
        y /= 3.0;
        y += 1.0;
        y -= x[1];
        y *= 2.0;
        y /= x[1];
        y
    });
}

#[test]
fn unary_methods() {
    check!(1, |x| x[0].abs());
    check!(1, |x| x[0].sqrt());
    check!(1, |x| x[0].exp());
    check!(1, |x| x[0].ln());
    check!(1, |x| x[0].log1p());
    check!(1, |x| x[0].exp_m1());
    check!(1, |x| x[0].sin());
    check!(1, |x| x[0].cos());
    check!(1, |x| x[0].tan());
    check!(1, |x| x[0].asin());
    check!(1, |x| x[0].acos());
    check!(1, |x| x[0].atan());
    check!(1, |x| x[0].sinh());
    check!(1, |x| x[0].cosh());
    check!(1, |x| x[0].tanh());
    check!(1, |x| x[0].erf());
    check!(1, |x| x[0].floor());
    check!(1, |x| x[0].ceil());
    check!(1, |x| x[0].square());
}

#[test]
fn binary_methods_with_vars_and_literals() {
    for k in [-3, -1, 0, 1, 2, 5, 13] {
        check!(1, |x| x[0].powi(k));
    }
    check!(2, |x| x[0].powf(x[1]));
    check!(1, |x| x[0].powf(1.5));
    check!(2, |x| x[0].atan2(x[1]));
    check!(1, |x| x[0].atan2(-2.0));
    check!(2, |x| x[0].min(x[1]));
    check!(2, |x| x[0].max(x[1]));
    check!(1, |x| x[0].min(0.5));
    check!(1, |x| x[0].max(-0.0));
    check!(3, |x| x[0].mul_add(x[1], x[2]));
    check!(2, |x| x[0].mul_add(3.0, x[1]));
    check!(1, |x| x[0].mul_add(x[0], 1.0));
}

#[test]
fn comparisons_and_select() {
    check!(2, |x| x[0].lt(x[1]).select(x[0], x[1]));
    check!(2, |x| x[0].le(x[1]).select(x[1], 0.5));
    check!(2, |x| x[0].gt(x[1]).select(1.0, x[0]));
    check!(1, |x| x[0].ge(0.0).select(x[0], 0.0));
    check!(2, |x| x[0].eq(x[1]).select(1.0, 2.0));
    check!(1, |x| x[0].ne(x[0]).select(1.0, 2.0)); // NaN test
    check!(1, |x| x[0].eq(1.0).select(x[0], -x[0]));
}

#[test]
fn sums_and_compound_expressions() {
    check!(4, |x| x.iter().copied().sum());
    check!(2, |x| (x[0] * x[1]).sin() + x[0]);
    // Rosenbrock.
    check!(2, |x| (1.0 - x[0]).square()
        + 100.0 * (x[1] - x[0].square()).square());
    // A softplus-ish piecewise expression reusing one subexpression.
    check!(1, |x| {
        let e = x[0].exp();
        x[0].gt(20.0).select(x[0], (1.0 + e).ln())
    });
}

#[test]
fn tracer_sum_handles_any_count() {
    let t = Tracer::new("sums");
    let x = t.input(Type::F64);
    let y = t.input(Type::F64);
    let empty = t.sum(Vec::<Var<'_>>::new());
    let one = t.sum([x]);
    let three = t.sum([x, y, x]);
    let f = t.finish(&[empty, one, three]);
    verify(&f).unwrap();
    assert_eq!(interpret(&f, &[1.5, 2.0]).unwrap(), vec![0.0, 1.5, 5.0]);
}

#[test]
fn names_and_printed_literals() {
    let f = trace(1, |x| 2.0 * x[0]);
    assert_eq!(f.name, "traced");
    let text = f.to_string();
    assert!(text.contains("func @traced(%x0: f64) -> f64"), "{text}");
    assert!(text.contains("mul 2.0, %x0"), "{text}");

    let g = trace_multi("named", &[Type::F64; 3], |x| {
        vec![1.0 - x[2], x[0] / 4.0, x[1].max(0.5)]
    });
    let text = g.to_string();
    assert!(
        text.contains("func @named(%x0: f64, %x1: f64, %x2: f64) -> (f64, f64, f64)"),
        "{text}"
    );
    assert!(text.contains("sub 1.0, %x2"), "{text}");
    assert!(text.contains("div %x0, 4.0"), "{text}");
    assert!(text.contains("max %x1, 0.5"), "{text}");
    // No `const` instructions: literals stay inline.
    assert!(!text.contains("const"), "{text}");
    assert_eq!(
        interpret(&g, &[1.0, 0.25, 3.0]).unwrap(),
        vec![-2.0, 0.25, 0.5]
    );
}

#[test]
fn records_exactly_the_operations_written() {
    // No folding, no reordering: x*1.0 and x+0.0 stay (they are not identities in IEEE).
    let f = trace(1, |x| (x[0] * 1.0 + 0.0).powi(3));
    let ops: Vec<String> = f.insts().map(|(_, i)| i.opcode_name()).collect();
    assert_eq!(ops, ["mul", "add", "powi"]);
    assert_eq!(
        interpret(&f, &[-0.0]).unwrap()[0].to_bits(),
        0.0f64.to_bits()
    );
}

#[test]
fn f32_parameters_round_literals_and_compute_in_f32() {
    let f = trace_multi("single", &[Type::F32, Type::F32], |x| {
        vec![(x[0] * 0.1 + x[1]).sin(), x[0].powi(3) / x[1]]
    });
    verify(&f).unwrap();
    assert_eq!(f.ret_types, vec![Type::F32, Type::F32]);
    // The literal is stored rounded to f32.
    let (_, mul) = f.insts().next().unwrap();
    match mul {
        InstData::Binary {
            op: BinaryOp::Mul,
            args,
        } => {
            assert_eq!(args[1], Operand::Const(f64::from(0.1f32)))
        }
        other => panic!("expected mul, got {other:?}"),
    }
    for point in points(2) {
        let (a, b) = (point[0] as f32, point[1] as f32);
        let want = [(a * 0.1f32 + b).sin(), adjit_ir::math::powi_f32(a, 3) / b];
        let got = interpret(&f, &point).unwrap();
        for (g, w) in got.iter().zip(want) {
            assert!(
                same_bits(*g, f64::from(w)),
                "at {point:?}: {got:?} vs {want:?}"
            );
        }
    }
}

#[test]
fn mixed_f32_and_f64_promote_the_f32_operand() {
    let f = trace_multi("mixed", &[Type::F32, Type::F64], |x| {
        vec![x[0] * x[1], x[1].to_f32() + x[0], x[0].to_f64()]
    });
    verify(&f).unwrap();
    assert_eq!(f.ret_types, vec![Type::F64, Type::F32, Type::F64]);
    let opcodes: Vec<String> = f.insts().map(|(_, i)| i.opcode_name()).collect();
    assert_eq!(opcodes, ["fpromote", "mul", "fdemote", "add", "fpromote"]);
    for point in points(2) {
        let a = point[0] as f32;
        let b = point[1];
        let got = interpret(&f, &point).unwrap();
        let want = [f64::from(a) * b, f64::from(b as f32 + a), f64::from(a)];
        for (g, w) in got.iter().zip(want) {
            assert!(same_bits(*g, w), "at {point:?}: {got:?} vs {want:?}");
        }
    }
}

#[test]
fn select_of_two_literals_materialises_a_constant() {
    let f = trace(1, |x| x[0].lt(0.0).select(-1.0, 1.0));
    verify(&f).unwrap();
    assert_eq!(interpret(&f, &[-3.0]).unwrap(), vec![-1.0]);
    assert_eq!(interpret(&f, &[3.0]).unwrap(), vec![1.0]);
}

#[test]
fn random_expression_trees_match_rust() {
    // Build random expression trees over 3 inputs, trace them and evaluate them on R, using
    // one generic recursive builder over both scalar kinds.
    fn build<T, L>(ops: &[u8], x: &[T], lit: L) -> T
    where
        T: Copy + Add<Output = T> + Sub<Output = T> + Mul<Output = T> + Div<Output = T>,
        T: Add<f64, Output = T> + Mul<f64, Output = T> + Neg<Output = T>,
        L: Fn(T) -> T + Copy,
    {
        let mut stack: Vec<T> = x.to_vec();
        for &op in ops {
            let a = stack[stack.len() - 1];
            let b = stack[(op as usize / 7) % stack.len()];
            let v = match op % 7 {
                0 => a + b,
                1 => a - b,
                2 => a * b,
                3 => a / b,
                4 => a + 0.5,
                5 => -a * 1.25,
                _ => lit(a),
            };
            stack.push(v);
        }
        stack[stack.len() - 1]
    }
    let mut seed = 12345u64;
    for _ in 0..40 {
        let ops: Vec<u8> = (0..25)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (seed >> 33) as u8
            })
            .collect();
        let f = trace(3, |x| build(&ops, x, Var::sin));
        verify(&f).unwrap();
        for point in points(3).into_iter().take(40) {
            let xs: Vec<R> = point.iter().map(|&v| R(v)).collect();
            let want = build(&ops, &xs, R::sin);
            let got = interpret(&f, &point).unwrap();
            assert!(same_bits(got[0], want.0), "{ops:?} at {point:?}\n{f}");
        }
    }
}

#[test]
#[should_panic(expected = "another tracer")]
fn mixing_tracers_panics_with_a_clear_message() {
    let a = Tracer::new("a");
    let b = Tracer::new("b");
    let x = a.input(Type::F64);
    let y = b.input(Type::F64);
    let _ = x + y;
}

#[test]
#[should_panic(expected = "parameters must be f32 or f64")]
fn bool_parameters_are_rejected() {
    let _ = trace_multi("bad", &[Type::Bool], |x| vec![x[0]]);
}

#[test]
fn traced_function_type_is_a_plain_function() {
    // A traced function is ordinary IR: cloning, comparing and printing work as for any other.
    let f: Function = trace(2, |x| x[0].atan2(x[1]));
    assert_eq!(f.clone(), f);
    assert_eq!(f.n_params, 2);
    assert_eq!(f.n_outputs(), 1);
}

#[test]
fn traced_functions_print_and_parse_back() {
    let funcs = [
        trace(2, |x| {
            (1.0 - x[0]).square() + 100.0 * (x[1] - x[0].square()).square()
        }),
        trace_multi("pieces", &[Type::F64; 2], |x| {
            let k = x[0].lt(x[1]);
            vec![k.select(x[0], -0.5), x[0].mul_add(0.1, x[1]).powi(-3)]
        }),
        trace_multi("single", &[Type::F32, Type::F64], |x| {
            vec![(x[0] * 0.1).to_f64() + x[1], x[1].to_f32().erf()]
        }),
    ];
    for f in funcs {
        let text = f.to_string();
        let parsed = adjit_ir::parse_function(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        verify(&parsed).unwrap();
        assert_eq!(parsed.to_string(), text);
        for point in points(f.n_params).into_iter().take(30) {
            let a = interpret(&f, &point).unwrap();
            let b = interpret(&parsed, &point).unwrap();
            assert!(
                a.iter().zip(&b).all(|(p, q)| same_bits(*p, *q)),
                "{point:?}\n{text}"
            );
        }
    }
}

/// The n-dimensional Rosenbrock function, written once for any scalar with the operators used.
fn rosenbrock_nd<T>(x: &[T]) -> T
where
    T: Copy + Add<Output = T> + Sub<Output = T> + Mul<Output = T> + Sum<T>,
    f64: Sub<T, Output = T> + Mul<T, Output = T>,
{
    x.windows(2)
        .map(|w| {
            let a = 1.0 - w[0];
            let b = w[1] - w[0] * w[0];
            a * a + 100.0 * (b * b)
        })
        .sum()
}

#[test]
fn generic_rust_functions_trace_directly() {
    // A closure is needed: naming `rosenbrock_nd::<Var<'_>>` would fix one lifetime, while
    // `trace` wants a function for every tracer lifetime.
    let f = trace(4, |x| rosenbrock_nd(x));
    verify(&f).unwrap();
    for point in points(4) {
        let xs: Vec<R> = point.iter().map(|&v| R(v)).collect();
        let want = rosenbrock_nd(&xs);
        assert!(
            same_bits(interpret(&f, &point).unwrap()[0], want.0),
            "{point:?}"
        );
    }
    assert_eq!(interpret(&f, &[1.0; 4]).unwrap(), vec![0.0]);
}

#[test]
fn data_inputs_are_parameters_of_kind_data_in_place() {
    use adjit_ir::trace::trace_with_data;
    use adjit_ir::ParamKind;
    let f = trace_with_data(2, 3, |p, d| p[0] * d[0] + p[1] * d[1] - d[2]);
    verify(&f).unwrap();
    let kinds: Vec<ParamKind> = f.params().map(|p| f.param_kind(p)).collect();
    assert_eq!(
        kinds,
        [
            ParamKind::Differentiated,
            ParamKind::Differentiated,
            ParamKind::Data,
            ParamKind::Data,
            ParamKind::Data
        ]
    );
    let y = interpret(&f, &[2.0, 3.0, 5.0, 7.0, 1.0]).unwrap();
    assert_eq!(y, vec![2.0 * 5.0 + 3.0 * 7.0 - 1.0]);

    // A tracer mixes both kinds in any order; names stay positional.
    let t = Tracer::new("mixed");
    let (d, a) = (t.data_input(Type::F32), t.input(Type::F64));
    let g = t.finish(&[a * d]);
    assert_eq!(
        g.to_string().lines().next().unwrap(),
        "func @mixed(data %x0: f32, %x1: f64) -> f64 {"
    );
}
