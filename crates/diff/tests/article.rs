//! The example of the source-to-source article (seed 001): the derivative dumps read like the
//! article's derivative lines, and compute the right numbers.

use adjit_diff::{jvp, simplify, vjp};
use adjit_ir::{interpret, verify, Builder, Function, Type};

/// p = 7x; r = 1/y; i1 = p·x; q = i1·5; i2 = 2·p; i3 = i2·q; i4 = 3·r; v = i3 + i4.
fn article() -> Function {
    let mut b = Builder::new("article");
    let x = b.param(Type::F64, "x");
    let y = b.param(Type::F64, "y");
    let named = |b: &mut Builder, v, n: &str| {
        b.set_name(v, n);
        v
    };
    let p = b.mul(7.0, x);
    let p = named(&mut b, p, "p");
    let r = b.div(1.0, y);
    let r = named(&mut b, r, "r");
    let i1 = b.mul(p, x);
    let i1 = named(&mut b, i1, "i1");
    let q = b.mul(i1, 5.0);
    let q = named(&mut b, q, "q");
    let i2 = b.mul(2.0, p);
    let i2 = named(&mut b, i2, "i2");
    let i3 = b.mul(i2, q);
    let i3 = named(&mut b, i3, "i3");
    let i4 = b.mul(3.0, r);
    let i4 = named(&mut b, i4, "i4");
    let v = b.add(i3, i4);
    let v = named(&mut b, v, "v");
    b.finish(&[v])
}

const JVP_DUMP: &str = "
func @article_jvp(%x: f64, %y: f64, %dx: f64, %dy: f64) -> (f64, f64) {
    %p = mul 7.0, %x
    %dp = mul %dx, 7.0
    %r = div 1.0, %y
    %v7 = div %r, %y
    %v8 = mul %dy, %v7
    %dr = neg %v8
    %i1 = mul %p, %x
    %v11 = mul %dp, %x
    %di1 = fma %dx, %p, %v11
    %q = mul %i1, 5.0
    %dq = mul %di1, 5.0
    %i2 = mul 2.0, %p
    %di2 = mul %dp, 2.0
    %i3 = mul %i2, %q
    %v18 = mul %di2, %q
    %di3 = fma %dq, %i2, %v18
    %i4 = mul 3.0, %r
    %di4 = mul %dr, 3.0
    %v = add %i3, %i4
    %dv = add %di3, %di4
    ret %v, %dv
}
";

/// The JVP after `simplify`: the `neg` of d(1/y) is absorbed by its one use (`dr·3` becomes
/// `v8·(−3)`, the same bits).
const JVP_SIMPLIFIED: &str = "
func @article_jvp(%x: f64, %y: f64, %dx: f64, %dy: f64) -> (f64, f64) {
    %p = mul 7.0, %x
    %dp = mul %dx, 7.0
    %r = div 1.0, %y
    %v7 = div %r, %y
    %v8 = mul %dy, %v7
    %i1 = mul %p, %x
    %v10 = mul %dp, %x
    %di1 = fma %dx, %p, %v10
    %q = mul %i1, 5.0
    %dq = mul %di1, 5.0
    %i2 = mul 2.0, %p
    %di2 = mul %dp, 2.0
    %i3 = mul %i2, %q
    %v17 = mul %di2, %q
    %di3 = fma %dq, %i2, %v17
    %i4 = mul 3.0, %r
    %di4 = mul %v8, -3.0
    %v = add %i3, %i4
    %dv = add %di3, %di4
    ret %v, %dv
}
";

const VJP_DUMP: &str = "
func @article_vjp(%x: f64, %y: f64, %v_b: f64) -> (f64, f64, f64) {
    %p = mul 7.0, %x
    %r = div 1.0, %y
    %i1 = mul %p, %x
    %q = mul %i1, 5.0
    %i2 = mul 2.0, %p
    %i3 = mul %i2, %q
    %i4 = mul 3.0, %r
    %v = add %i3, %i4
    %r_b = mul %v_b, 3.0
    %i2_b = mul %v_b, %q
    %q_b = mul %v_b, %i2
    %v14 = mul %i2_b, 2.0
    %i1_b = mul %q_b, 5.0
    %p_b = fma %i1_b, %x, %v14
    %v17 = mul %i1_b, %p
    %v18 = div %r, %y
    %v19 = mul %r_b, %v18
    %y_b = neg %v19
    %x_b = fma %p_b, 7.0, %v17
    ret %v, %x_b, %y_b
}
";

/// Compare a dump with its expected text (leading/trailing blank lines ignored).
fn check_dump(f: &Function, expected: &str) {
    let got = f.to_string();
    assert_eq!(got.trim(), expected.trim(), "dump differs; got:\n{got}");
}

#[test]
fn article_dumps() {
    let f = article();
    verify(&f).unwrap();
    let df = simplify(&jvp(&f));
    let gf = simplify(&vjp(&f));
    // One or two derivative lines per primal line, as in the article; simplify only absorbs
    // the JVP's one negation.
    check_dump(&df, JVP_SIMPLIFIED);
    check_dump(&gf, VJP_DUMP);
    check_dump(&jvp(&f), JVP_DUMP);
    check_dump(&vjp(&f), VJP_DUMP);
    verify(&df).unwrap();
    verify(&gf).unwrap();
    // v = 70·x³ + 3/y: dv/dx = 210·x², dv/dy = −3/y².
    let (x, y) = (1.5, 0.5);
    let out = interpret(&df, &[x, y, 1.0, 0.0]).unwrap();
    assert!((out[1] - 1470.0 * x * x).abs() < 1e-12 * 1470.0 * x * x);
    let out = interpret(&gf, &[x, y, 1.0]).unwrap();
    assert!((out[1] - 1470.0 * x * x).abs() < 1e-12 * 1470.0 * x * x);
    assert!((out[2] + 3.0 / (y * y)).abs() < 1e-12 * 12.0);
}
