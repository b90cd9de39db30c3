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

#[test]
fn article_dumps() {
    let f = article();
    verify(&f).unwrap();
    let df = simplify(&jvp(&f));
    let gf = simplify(&vjp(&f));
    println!("{f}\n{df}\n{gf}");
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
