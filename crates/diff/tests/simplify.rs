//! The simplification passes on small hand-written programs: `check(pass, input, expected)`
//! parses the input, runs the pass, verifies the output and compares its text.

mod support;

use adjit_diff::simplify;
use adjit_diff::simplify::{cse, dce, fold, identities};
use adjit_ir::{parse_function, Function, Interpreter};
use support::verified;

fn check(pass: fn(&Function) -> Function, input: &str, expected: &str) {
    let f = verified(
        parse_function(input).unwrap_or_else(|e| panic!("{e}")),
        "parse",
    );
    let g = verified(pass(&f), "pass");
    assert_eq!(g.to_string().trim(), expected.trim(), "got:\n{g}");
}

#[test]
fn fold_computes_constants_but_never_nan() {
    check(
        fold,
        "func @f(%x: f64) -> (f64, f64, f64) {
            %c = const f64 2.0
            %d = sqrt %c
            %m = const f64 -1.0
            %n = sqrt %m
            %y = mul %x, %d
            %z = add %n, %x
            ret %y, %z, %d
        }",
        "func @f(%x: f64) -> (f64, f64, f64) {
    %c = const f64 2.0
    %d = const f64 1.4142135623730951
    %m = const f64 -1.0
    %n = sqrt %m
    %y = mul %x, 1.4142135623730951
    %z = add %n, %x
    ret %y, %z, %d
}",
    );
}

#[test]
fn fold_resolves_constant_conditions() {
    check(
        |f| dce(&fold(f)),
        "func @f(%x: f64, %y: f64) -> f64 {
            %t = const bool true
            %s = select %t, %x, %y
            ret %s
        }",
        "func @f(%x: f64, %y: f64) -> f64 {
    ret %x
}",
    );
}

#[test]
fn identities_are_ieee_exact_only() {
    check(
        |f| dce(&identities(f)),
        "func @f(%x: f64) -> (f64, f64, f64, f64, f64, f64, f64, f64) {
            %a = mul %x, 1.0
            %b = div %a, 1.0
            %c = sub %b, 0.0
            %d = add -0.0, %c
            %e = neg %d
            %g = neg %e
            %keep1 = add %g, 0.0
            %keep2 = mul %g, 0.0
            %keep3 = sub %g, -0.0
            %n = mul -1.0, %g
            %h = fma %x, 1.0, %n
            %k = fma %x, %h, -0.0
            ret %g, %keep1, %keep2, %keep3, %n, %h, %k, %e
        }",
        "func @f(%x: f64) -> (f64, f64, f64, f64, f64, f64, f64, f64) {
    %e = neg %x
    %keep1 = add %x, 0.0
    %keep2 = mul %x, 0.0
    %keep3 = sub %x, -0.0
    %n = neg %x
    %h = add %x, %n
    %k = mul %x, %h
    ret %x, %keep1, %keep2, %keep3, %n, %h, %k, %e
}",
    );
}

const NEGATIONS: &str =
    "func @f(%x: f64, %y: f64) -> (f64, f64, f64, f64, f64, f64, f64, f64, f64) {
    %n = neg %y
    %a = add %x, %n
    %b = add %n, %x
    %c = sub %x, %n
    %d = mul %n, 3.0
    %e = mul -2.5, %n
    %g = fma %n, 0.5, %x
    %h = fma 4.0, %n, %x
    %m = neg %x
    %keep1 = mul %m, %y
    %keep2 = sin %m
    ret %a, %b, %c, %d, %e, %g, %h, %keep1, %keep2
}";

#[test]
fn negations_are_absorbed_by_their_users() {
    // `neg` feeding add/sub, a product or an fma with a literal factor disappears; one
    // feeding a product of two values (no literal to flip) or a call stays.
    check(
        |f| dce(&identities(f)),
        NEGATIONS,
        "func @f(%x: f64, %y: f64) -> (f64, f64, f64, f64, f64, f64, f64, f64, f64) {
    %a = sub %x, %y
    %b = sub %x, %y
    %c = add %x, %y
    %d = mul %y, -3.0
    %e = mul 2.5, %y
    %g = fma %y, -0.5, %x
    %h = fma -4.0, %y, %x
    %m = neg %x
    %keep1 = mul %m, %y
    %keep2 = sin %m
    ret %a, %b, %c, %d, %e, %g, %h, %keep1, %keep2
}",
    );
    // The same bits at signed zeros, infinities, ties and rounding cases (NaN excepted).
    let f = parse_function(NEGATIONS).unwrap();
    let g = dce(&identities(&f));
    let special = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.1,
        -3.7,
        1e308,
        -1e308,
        f64::INFINITY,
        5e-324,
    ];
    for &x in &special {
        for &y in &special {
            let run = |h: &Function| {
                let mut out = vec![0.0; 9];
                Interpreter::default().run(h, &[x, y], &mut out).unwrap();
                out
            };
            for (i, (a, b)) in run(&f).iter().zip(run(&g)).enumerate() {
                assert!(
                    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                    "output {i} at ({x}, {y}): {a} vs {b}"
                );
            }
        }
    }
}

#[test]
fn cse_commutes_only_commutative_operations() {
    check(
        cse,
        "func @f(%x: f64, %y: f64) -> (f64, f64, f64, f64, f64, f64) {
            %a = add %x, %y
            %b = add %y, %x
            %c = min %x, %y
            %d = min %y, %x
            %e = fma %x, %y, %a
            %g = fma %y, %x, %b
            ret %a, %b, %c, %d, %e, %g
        }",
        "func @f(%x: f64, %y: f64) -> (f64, f64, f64, f64, f64, f64) {
    %a = add %x, %y
    %c = min %x, %y
    %d = min %y, %x
    %e = fma %x, %y, %a
    ret %a, %a, %c, %d, %e, %e
}",
    );
}

#[test]
fn dce_keeps_order_names_and_parameters() {
    check(
        dce,
        "func @f(%x: f64, %unused: f64) -> f64 {
            %a = sin %x
            %dead = cos %x
            %b = exp %a
            %dead2 = mul %dead, %b
            ret %b
        }",
        "func @f(%x: f64, %unused: f64) -> f64 {
    %a = sin %x
    %b = exp %a
    ret %b
}",
    );
}

#[test]
fn simplify_reaches_a_fixpoint() {
    // fold exposes an identity (x·(3 − 2)), which exposes a common subexpression.
    check(
        simplify,
        "func @f(%x: f64) -> f64 {
            %three = const f64 3.0
            %one = sub %three, 2.0
            %a = mul %x, %one
            %b = sin %a
            %c = sin %x
            %d = add %b, %c
            ret %d
        }",
        "func @f(%x: f64) -> f64 {
    %b = sin %x
    %d = add %b, %b
    ret %d
}",
    );
}

// `fold` and `identities` copy nothing until the first instruction they change; these pin
// what follows it: the kept prefix, aliases, and rewrites that look back into the prefix
// (before and after the output is built).

#[test]
fn fold_rewrites_after_an_unchanged_prefix() {
    check(
        fold,
        "func @f(%x: f64) -> (f64, f64, f64) {
            %a = mul %x, %x
            %k = const f64 3.0
            %b = add %a, %k
            %t = const bool true
            %s = select %t, %b, %a
            %y = mul %s, %k
            ret %y, %a, %s
        }",
        "func @f(%x: f64) -> (f64, f64, f64) {
    %a = mul %x, %x
    %k = const f64 3.0
    %b = add %a, 3.0
    %t = const bool true
    %y = mul %b, 3.0
    ret %y, %a, %b
}",
    );
}

#[test]
fn identities_rewrite_after_an_unchanged_prefix() {
    check(
        identities,
        "func @f(%x: f64) -> (f64, f64, f64, f64, f64) {
            %n = neg %x
            %a = mul %x, 2.0
            %c = add %a, %n
            %b = mul %a, 1.0
            %d = add %b, %n
            %e = neg %n
            %m = neg %d
            %g = mul %e, %d
            %h = add %g, %m
            ret %c, %d, %g, %b, %h
        }",
        "func @f(%x: f64) -> (f64, f64, f64, f64, f64) {
    %n = neg %x
    %a = mul %x, 2.0
    %c = sub %a, %x
    %d = sub %a, %x
    %m = neg %d
    %g = mul %x, %d
    %h = sub %g, %d
    ret %c, %d, %g, %a, %h
}",
    );
}

#[test]
fn passes_that_change_nothing_return_their_input() {
    let f = verified(
        parse_function(
            "func @f(%x: f64, data %t: f64) -> (f64, f64) {
                %a = mul %x, %t
                %b = sin %a
                ret %b, %a
            }",
        )
        .unwrap_or_else(|e| panic!("{e}")),
        "parse",
    );
    for pass in [fold, identities, cse, dce, simplify] {
        assert_eq!(pass(&f), f);
    }
}

/// CSE searches the users of an instruction's latest operand, through a list while they are
/// few and a hash table past 16: duplicates are found on both sides of that switch (here 40
/// products and sums of `%x`, repeated with their operands swapped, and repeated constants;
/// products and sums follow no short period, so they are not a data block).
#[test]
fn cse_finds_duplicates_among_many_users_of_one_value() {
    use adjit_ir::{Builder, Type};
    let mut b = Builder::new("f");
    let x = b.param(Type::F64, "x");
    let n = 40;
    let op = |b: &mut Builder, i: u32, swapped: bool| {
        let k = f64::from(i) + 2.0;
        match ((i * i * 31 + i * 7) % 11 < 5, swapped) {
            (true, false) => b.mul(x, k),
            (true, true) => b.mul(k, x),
            (false, false) => b.add(x, k),
            (false, true) => b.add(k, x),
        }
    };
    let firsts: Vec<_> = (0..n).map(|i| op(&mut b, i, false)).collect();
    let seconds: Vec<_> = (0..n).map(|i| op(&mut b, i, true)).collect();
    let c1 = b.constant(Type::F64, 1.5);
    let c2 = b.constant(Type::F64, 1.5);
    let rets: Vec<_> = firsts
        .iter()
        .chain(&seconds)
        .chain([&c1, &c2])
        .copied()
        .collect();
    let f = verified(b.finish(&rets), "build");
    let g = verified(cse(&f), "cse");
    assert_eq!(g.n_insts(), n as usize + 1, "got:\n{g}");
    for i in 0..n as usize {
        assert_eq!(g.rets[i], g.rets[n as usize + i], "product {i}:\n{g}");
    }
    assert_eq!(g.rets[2 * n as usize], g.rets[2 * n as usize + 1]);
    for x in [-1.5, 0.0, 3.25] {
        let run = |h: &Function| adjit_ir::interpret(h, &[x]).expect("runs");
        assert_eq!(run(&f), run(&g), "at x = {x}");
    }
}

/// A vectorised stage over data (`mul y_i, %t` for labels `y_i ∈ {0, 1}`, and `mul 1 − y_i,
/// %t` with the same `%t`) keeps one instruction per element: `identities` does not fold its
/// 1s and `cse` does not merge its equal elements, which would leave holes where the labels
/// fall and stop the JIT from rolling the stage. Shorter stages simplify as before.
#[test]
fn data_blocks_keep_one_instruction_per_element() {
    use adjit_ir::{Builder, Type};
    let labels = |n: usize| -> Vec<f64> {
        (0..n)
            .map(|i| f64::from(u8::from((i * 7) % 3 == 0)))
            .collect()
    };
    let stage = |n: usize| -> Function {
        let mut b = Builder::new("stage");
        let x = b.param(Type::F64, "x");
        let t = b.mul(x, x);
        let y = labels(n);
        let mut outs: Vec<_> = y.iter().map(|&y| b.mul(y, t)).collect();
        outs.extend(y.iter().map(|&y| b.mul(1.0 - y, t)));
        verified(b.finish(&outs), "build")
    };
    let long = stage(40);
    let s = verified(simplify(&long), "simplify");
    // `mul x, x`, then both stages whole.
    assert_eq!(s.n_insts(), 1 + 2 * 40, "got:\n{s}");
    let short = stage(6);
    let s10 = verified(simplify(&short), "simplify");
    // 12 elements, below `DATA_BLOCK`: the 1s fold away, the 0s merge into one `mul 0.0, %t`.
    assert_eq!(s10.n_insts(), 2, "got:\n{s10}");
    assert_eq!(adjit_diff::simplify::DATA_BLOCK, 16);
    for x in [-1.5, 0.0, 3.25, f64::INFINITY] {
        for (f, g) in [(&long, &s), (&short, &s10)] {
            let want = adjit_ir::interpret(f, &[x]).expect("runs");
            let got = adjit_ir::interpret(g, &[x]).expect("runs");
            let bits = |v: &[f64]| v.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&want), bits(&got), "at x = {x}");
        }
    }
}

/// A template longer than 8 instructions traced sample by sample (a per-sample loss with
/// labels `y_i ∈ {0, 1}`), and its reverse sweep's form, where every shape occurs twice in
/// the template: both keep every sample's instructions, so each sample has one shape, and the
/// values are the same bits. With its labels fractional the same program has nothing to fold:
/// the simplified sizes must match.
#[test]
fn long_templates_over_data_keep_one_shape_per_sample() {
    use adjit_ir::{BinaryOp, Builder, Type, UnaryOp};
    let per_sample = |n: usize, labels: &dyn Fn(usize) -> f64, twice: bool| -> Function {
        let mut b = Builder::new("samples");
        let w = b.param(Type::F64, "w");
        let t = b.param(Type::F64, "t");
        let mut acc = b.mul(w, 0.5);
        for i in 0..n {
            let (a, y) = ((i * 37 % 101) as f64 / 50.0 - 1.0, labels(i));
            let z = b.fma(w, a, t);
            let e = b.unary(UnaryOp::Neg, z);
            let e = b.unary(UnaryOp::Exp, e);
            let d = b.add(e, 1.0);
            let p = b.div(1.0, d);
            let lp = b.unary(UnaryOp::Log, p);
            let q = b.binary(BinaryOp::Sub, 1.0, p);
            let lq = b.unary(UnaryOp::Log, q);
            let u = b.mul(y, lp);
            let v = b.mul(1.0 - y, lq);
            let s = if twice {
                // Every shape twice: two `mul`s by data, two `add`s (the reverse sweep's form).
                let s = b.add(u, v);
                b.add(s, z)
            } else {
                b.add(u, v)
            };
            acc = b.add(acc, s);
        }
        verified(b.finish(&[acc]), "build")
    };
    let zero_one = |i: usize| f64::from(u8::from(i % 3 != 1));
    let fractional = |i: usize| if i % 3 != 1 { 0.75 } else { 0.25 };
    for twice in [false, true] {
        let f = per_sample(60, &zero_one, twice);
        let s = verified(simplify(&f), "simplify");
        let g = verified(simplify(&per_sample(60, &fractional, twice)), "simplify");
        assert_eq!(s.n_insts(), g.n_insts(), "twice = {twice}; got:\n{s}");
        for x in [[0.3, -0.2], [-1.5, 2.0], [0.0, f64::INFINITY]] {
            let want = adjit_ir::interpret(&f, &x).expect("runs");
            let got = adjit_ir::interpret(&s, &x).expect("runs");
            assert_eq!(want[0].to_bits(), got[0].to_bits(), "at {x:?}");
        }
    }
}
