//! The simplification passes on small hand-written programs: `check(pass, input, expected)`
//! parses the input, runs the pass, verifies the output and compares its text.

mod support;

use adjit_diff::simplify;
use adjit_diff::simplify::{cse, dce, fold, identities};
use adjit_ir::{parse_function, Function};
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
