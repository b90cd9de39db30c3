//! NumPy operations that have no IR opcode, recorded as their definitions in IR opcodes.
//!
//! Each takes float operands (traced values or literals) and appends a few instructions to the
//! builder; the derivative then follows from the instructions (a `select` passes it through
//! the chosen side, `floor` has none). The definitions, and where they differ from NumPy:
//!
//! | name | definition |
//! |---|---|
//! | `sign` | `select(x < 0, −1, select(x > 0, 1, 0·x))` (NaN stays NaN) |
//! | `remainder` | `a − floor(a / b)·b` (the sign of `b`, as Python's `%`) |
//! | `floor_divide` | `floor(a / b)` |
//! | `rint` | round half to even, exact for every float (from `floor`) |
//! | `hypot` | `sqrt(a² + b²)` (no rescaling: overflows beyond 1e154) |
//! | `logaddexp` | `m + log(exp(a − m) + exp(b − m))`, `m = max(a, b)` (exact weights at a tie) |
//! | `reciprocal`, `exp2`, `log2`, `log10`, `square` | `1/x`, `pow(2, x)`, `log(x)/ln 2`, `log(x)/ln 10`, `powi(x, 2)` |
//! | `clip` | `min(max(x, lo), hi)` |
//! | `heaviside` | `select(x < 0, 0, select(x > 0, 1, 0·x + h0))` |
//!
//! Logical operations on traced comparisons (`&`, `|`, `^`, `~`, `np.logical_*`) map each
//! operand to 0.0 or 1.0 with a `select` and compare the arithmetic of those.

use adjit::ir::{BinaryOp, Builder, CmpPred, Operand, Type, UnaryOp, Value};

/// The operand as a value, materialising a literal as a `const`.
fn value(b: &mut Builder, o: Operand) -> Value {
    match o {
        Operand::Value(v) => v,
        Operand::Const(c) => b.constant(Type::F64, c),
    }
}

fn unary(b: &mut Builder, op: UnaryOp, o: Operand) -> Value {
    let v = value(b, o);
    b.unary(op, v)
}

/// Round half to even: `floor(x)`, plus one when the fraction is above one half, or exactly
/// one half with an odd floor. `x − floor(x)` is exact for every float, so ties are exact.
pub fn rint(b: &mut Builder, x: Operand) -> Value {
    let f = unary(b, UnaryOp::Floor, x);
    let frac = b.sub(x, f);
    let up = b.add(f, 1.0);
    let half = b.mul(f, 0.5);
    let half_floor = b.unary(UnaryOp::Floor, half);
    let odd = b.fcmp(CmpPred::Ne, half, half_floor);
    let tie = b.select(odd, up, f);
    let below = b.fcmp(CmpPred::Lt, frac, 0.5);
    let not_above = b.select(below, f, tie);
    let above = b.fcmp(CmpPred::Gt, frac, 0.5);
    b.select(above, up, not_above)
}

/// A NumPy ufunc or Python operator on float operands by its definition, or `None` when the
/// name is not one of those above (or the arity is wrong).
pub fn float_op(b: &mut Builder, name: &str, args: &[Operand]) -> Option<Value> {
    Some(match (name, args) {
        ("sign", &[x]) => {
            let zero = b.mul(x, 0.0);
            let pos = b.fcmp(CmpPred::Gt, x, 0.0);
            let inner = b.select(pos, 1.0, zero);
            let neg = b.fcmp(CmpPred::Lt, x, 0.0);
            b.select(neg, -1.0, inner)
        }
        ("remainder" | "mod", &[x, y]) => {
            let q = b.div(x, y);
            let f = b.unary(UnaryOp::Floor, q);
            let m = b.mul(f, y);
            b.sub(x, m)
        }
        ("floor_divide", &[x, y]) => {
            let q = b.div(x, y);
            b.unary(UnaryOp::Floor, q)
        }
        ("rint" | "round", &[x]) => rint(b, x),
        ("hypot", &[x, y]) => {
            let x2 = b.mul(x, x);
            let y2 = b.mul(y, y);
            let s = b.add(x2, y2);
            b.unary(UnaryOp::Sqrt, s)
        }
        ("logaddexp", &[x, y]) => {
            let m = b.binary(BinaryOp::Max, x, y);
            let dx = b.sub(x, m);
            let dy = b.sub(y, m);
            let ex = b.unary(UnaryOp::Exp, dx);
            let ey = b.unary(UnaryOp::Exp, dy);
            let s = b.add(ex, ey);
            let l = b.unary(UnaryOp::Log, s);
            b.add(m, l)
        }
        ("reciprocal", &[x]) => b.div(1.0, x),
        ("square", &[x]) => {
            let v = value(b, x);
            b.powi(v, 2)
        }
        ("exp2", &[x]) => b.binary(BinaryOp::Pow, 2.0, x),
        ("log2", &[x]) => {
            let l = unary(b, UnaryOp::Log, x);
            b.div(l, std::f64::consts::LN_2)
        }
        ("log10", &[x]) => {
            let l = unary(b, UnaryOp::Log, x);
            b.div(l, std::f64::consts::LN_10)
        }
        ("heaviside", &[x, h0]) => {
            // 0·x + h0 at x = 0, NaN for a NaN x (as NumPy's).
            let zero = b.mul(x, 0.0);
            let mid = b.add(zero, h0);
            let pos = b.fcmp(CmpPred::Gt, x, 0.0);
            let inner = b.select(pos, 1.0, mid);
            let neg = b.fcmp(CmpPred::Lt, x, 0.0);
            b.select(neg, 0.0, inner)
        }
        ("clip", &[x, lo, hi]) => {
            let m = b.binary(BinaryOp::Max, x, lo);
            b.binary(BinaryOp::Min, m, hi)
        }
        _ => return None,
    })
}

/// An operand of a logical operation: a traced comparison or a Python bool.
#[derive(Clone, Copy, Debug)]
pub enum Logic {
    Traced(Value),
    Const(bool),
}

/// The operand as 1.0 (true) or 0.0 (false).
fn as_float(b: &mut Builder, l: Logic) -> Operand {
    match l {
        Logic::Traced(c) => Operand::Value(b.select(c, 1.0, 0.0)),
        Logic::Const(t) => Operand::Const(if t { 1.0 } else { 0.0 }),
    }
}

/// `logical_and`, `logical_or`, `logical_xor`, `logical_not` (and the `bitwise_*`/`invert`
/// spellings NumPy uses for `&`, `|`, `^`, `~` on booleans); `None` for another name or
/// arity. At least one operand must be traced.
pub fn logic_op(b: &mut Builder, name: &str, args: &[Logic]) -> Option<Value> {
    // Put a traced operand first, so that no comparison has only literal operands.
    let mut args = args.to_vec();
    if matches!(args.first(), Some(Logic::Const(_))) {
        args.reverse();
    }
    let floats: Vec<Operand> = args.iter().map(|&l| as_float(b, l)).collect();
    Some(match (name, floats.as_slice()) {
        ("logical_and" | "bitwise_and", &[x, y]) => {
            let p = b.mul(x, y);
            b.fcmp(CmpPred::Gt, p, 0.5)
        }
        ("logical_or" | "bitwise_or", &[x, y]) => {
            let s = b.add(x, y);
            b.fcmp(CmpPred::Gt, s, 0.5)
        }
        ("logical_xor" | "bitwise_xor", &[x, y]) => b.fcmp(CmpPred::Ne, x, y),
        ("logical_not" | "invert", &[x]) => b.fcmp(CmpPred::Lt, x, 0.5),
        _ => return None,
    })
}
