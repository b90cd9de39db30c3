//! Activity analysis and its consequences: only active values get derivative lines, zero
//! derivatives are never materialised, and passive parameters and outputs get zero slots.

mod support;

use adjit_diff::{activity, jvp, vjp};
use adjit_ir::{interpret, Builder, CmpPred, Type, UnaryOp};
use support::verified;

#[test]
fn activity_follows_derivative_carrying_edges() {
    let mut b = Builder::new("f");
    let x = b.param(Type::F64, "x");
    let u = b.param(Type::F64, "u"); // reaches the output only through a condition
    let k = b.constant(Type::F64, 0.5);
    let sk = b.unary(UnaryOp::Sin, k); // passive: no float input
    let fl = b.unary(UnaryOp::Floor, x); // derivative zero
    let cond = b.fcmp(CmpPred::Lt, u, 0.0);
    let dead = b.unary(UnaryOp::Exp, x); // varied but useless
    let y = b.mul(x, sk);
    let z = b.select(cond, y, fl);
    let f = verified(b.finish(&[z]), "builder");
    let act = activity(&f);
    assert!(act.is_active(x) && act.is_active(y) && act.is_active(z));
    assert!(!act.is_active(u) && !act.is_active(k) && !act.is_active(sk));
    assert!(!act.is_active(fl) && !act.is_active(cond));
    assert!(act.is_varied(dead) && !act.is_useful(dead) && !act.is_active(dead));
    assert_eq!(act.n_active(), 3);
    let _ = dead;

    // Derivative lines only for x, y, z: dy = mul dx, sk; dz = select cond, dy, 0.0.
    let df = verified(jvp(&f), "jvp");
    assert_eq!(df.n_insts(), f.n_insts() + 2, "{df}");
    // Reverse: the seed is z's adjoint; y_b = select cond, z_b, 0.0; x_b = mul y_b, sk; and
    // one `const 0.0` for u's adjoint.
    let gf = verified(vjp(&f), "vjp");
    assert_eq!(gf.n_insts(), f.n_insts() + 3, "{gf}");
    assert_eq!(
        interpret(&gf, &[2.0, -1.0, 1.0]).unwrap(),
        vec![2.0 * 0.5f64.sin(), 0.5f64.sin(), 0.0]
    );
    assert_eq!(
        interpret(&gf, &[2.0, 1.0, 1.0]).unwrap(),
        vec![2.0, 0.0, 0.0]
    );
}

#[test]
fn zero_derivatives_are_constant_outputs() {
    let mut b = Builder::new("flat");
    let x = b.param(Type::F64, "x");
    let fl = b.unary(UnaryOp::Floor, x);
    let f = verified(b.finish(&[fl, x]), "builder");
    let df = verified(jvp(&f), "jvp");
    // One `const 0.0` for the floor's tangent; the identity's tangent is dx itself.
    assert_eq!(df.n_insts(), 2, "{df}");
    assert_eq!(
        interpret(&df, &[1.5, 3.0]).unwrap(),
        vec![1.0, 1.5, 0.0, 3.0]
    );
    let gf = verified(vjp(&f), "vjp");
    assert_eq!(
        interpret(&gf, &[1.5, 7.0, 3.0]).unwrap(),
        vec![1.0, 1.5, 3.0]
    );
}

#[test]
fn value_returned_twice_accumulates_both_seeds() {
    let mut b = Builder::new("twice");
    let x = b.param(Type::F64, "x");
    let s = b.unary(UnaryOp::Sin, x);
    let f = verified(b.finish(&[s, s]), "builder");
    let gf = verified(vjp(&f), "vjp");
    let out = interpret(&gf, &[0.3, 2.0, 5.0]).unwrap();
    assert_eq!(out[2], (2.0 + 5.0) * 0.3f64.cos());
}

#[test]
fn tape_counts_the_intermediates_the_adjoint_reads() {
    use adjit_diff::{tape_stats, TapeStats};
    for (ty, bytes) in [(Type::F64, 8), (Type::F32, 4)] {
        // y = exp(sin x)·x: the adjoint reads e (d exp = e), s's operand x (a parameter, not
        // taped) and the factors e and x of the product; s itself is not read.
        let mut b = Builder::new("tape");
        let x = b.param(ty, "x");
        let s = b.unary(UnaryOp::Sin, x);
        let e = b.unary(UnaryOp::Exp, s);
        let y = b.mul(e, x);
        let f = b.finish(&[y]);
        assert_eq!(tape_stats(&f), TapeStats { values: 1, bytes });
    }
    // Linear code needs no tape; a `select` tapes its condition (one byte).
    let mut b = Builder::new("linear");
    let x = b.param(Type::F64, "x");
    let a = b.mul(x, 3.0);
    let c = b.fcmp(CmpPred::Gt, a, 1.0);
    let y = b.select(c, a, x);
    let f = b.finish(&[y]);
    assert_eq!(
        tape_stats(&f),
        TapeStats {
            values: 1,
            bytes: 1
        }
    );
}
