//! The scalar semantics of every operation: the single definition that the interpreter
//! implements and that backends must reproduce bit for bit.
//!
//! - Arithmetic (`add sub mul div neg abs sqrt fma floor ceil`, comparisons, `select`,
//!   conversions) is IEEE 754 with round-to-nearest-even, computed in the value's own type.
//! - Transcendentals are, per routine, adjit's own ([`mathlib`], where
//!   [`mathlib::default_unary`] says so: per routine the faster of the two among those within
//!   1 ulp, e.g. `tanh`, where glibc's is 2 ulp away) or the platform math
//!   library's through Rust `std` (`sin`, `exp`, `pow`, …; the `f32` forms call the `f32`
//!   routines). A backend computes the same routines (the JIT's default `MathImpl::Auto`
//!   inlines adjit's and calls the library's); results then agree exactly.
//! - `min`/`max` return the other operand when exactly one is NaN (IEEE minNum/maxNum, like
//!   Rust's `f64::min`), NaN when both are, and **the first operand on a tie**, so
//!   `min(-0.0, +0.0) = -0.0` and `min(+0.0, -0.0) = +0.0`. Formally
//!   `min(a, b) = if a is NaN { b } else if b < a { b } else { a }`, and `max` likewise with `>`.
//! - `powi x, k` is binary exponentiation: see [`powi_f64`] for the exact multiplication order;
//!   a negative `k` computes `1 / x^|k|`.
//! - `fcmp` predicates are ordered (false on NaN) except `ne`, which is true on NaN.

use crate::function::InstData;
use crate::mathlib;
use crate::opcode::{BinaryOp, CmpPred, UnaryOp};
use crate::types::Type;

// The C math library's error function, which `std` already links (it is how `f64::exp` and
// friends reach the platform routines). Measured: glibc's `erf` 20 ns against the `libm`
// crate's port 30 ns per call, and compiled C programs call the same routine.
extern "C" {
    #[link_name = "erf"]
    fn libc_erf(x: f64) -> f64;
    #[link_name = "erff"]
    fn libc_erff(x: f32) -> f32;
}

#[inline]
fn c_erf(x: f64) -> f64 {
    // SAFETY: C99 `erf` is a pure function of its argument, defined for every double
    // (NaN and infinities included), with no preconditions and no global state.
    unsafe { libc_erf(x) }
}

#[inline]
fn c_erff(x: f32) -> f32 {
    // SAFETY: as for `erf`: C99 `erff` is pure and defined for every float.
    unsafe { libc_erff(x) }
}

/// `op(x)` for a value of type `ty` (carried as `f64`).
pub fn unary(op: UnaryOp, ty: Type, x: f64) -> f64 {
    match ty {
        Type::F32 => unary_f32(op, x as f32) as f64,
        _ => unary_f64(op, x),
    }
}

#[inline]
pub fn unary_f64(op: UnaryOp, x: f64) -> f64 {
    if let Some(y) = mathlib::default_unary_f64(op, x) {
        return y;
    }
    unary_f64_libm(op, x)
}

/// `op(x)` with every transcendental from the platform math library (what the JIT calls under
/// `MathImpl::Libm`).
#[inline]
pub fn unary_f64_libm(op: UnaryOp, x: f64) -> f64 {
    match op {
        UnaryOp::Neg => -x,
        UnaryOp::Abs => x.abs(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Log1p => x.ln_1p(),
        UnaryOp::Expm1 => x.exp_m1(),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Tan => x.tan(),
        UnaryOp::Asin => x.asin(),
        UnaryOp::Acos => x.acos(),
        UnaryOp::Atan => x.atan(),
        UnaryOp::Sinh => x.sinh(),
        UnaryOp::Cosh => x.cosh(),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Erf => c_erf(x),
        UnaryOp::Floor => x.floor(),
        UnaryOp::Ceil => x.ceil(),
    }
}

#[inline]
pub fn unary_f32(op: UnaryOp, x: f32) -> f32 {
    // adjit's routines round their `f64` result once (see `mathlib`).
    if let Some(y) = mathlib::default_unary_f64(op, f64::from(x)) {
        return y as f32;
    }
    unary_f32_libm(op, x)
}

/// `op(x)` with every transcendental from the platform math library (what the JIT calls under
/// `MathImpl::Libm`).
#[inline]
pub fn unary_f32_libm(op: UnaryOp, x: f32) -> f32 {
    match op {
        UnaryOp::Neg => -x,
        UnaryOp::Abs => x.abs(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Log1p => x.ln_1p(),
        UnaryOp::Expm1 => x.exp_m1(),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Tan => x.tan(),
        UnaryOp::Asin => x.asin(),
        UnaryOp::Acos => x.acos(),
        UnaryOp::Atan => x.atan(),
        UnaryOp::Sinh => x.sinh(),
        UnaryOp::Cosh => x.cosh(),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Erf => c_erff(x),
        UnaryOp::Floor => x.floor(),
        UnaryOp::Ceil => x.ceil(),
    }
}

/// `op(a, b)` for values of type `ty`.
pub fn binary(op: BinaryOp, ty: Type, a: f64, b: f64) -> f64 {
    match ty {
        Type::F32 => binary_f32(op, a as f32, b as f32) as f64,
        _ => binary_f64(op, a, b),
    }
}

#[inline]
pub fn binary_f64(op: BinaryOp, a: f64, b: f64) -> f64 {
    if let Some(y) = mathlib::default_binary_f64(op, a, b) {
        return y;
    }
    binary_f64_libm(op, a, b)
}

/// `op(a, b)` with `pow` and `atan2` from the platform math library (what the JIT calls under
/// `MathImpl::Libm`).
#[inline]
pub fn binary_f64_libm(op: BinaryOp, a: f64, b: f64) -> f64 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Pow => a.powf(b),
        BinaryOp::Atan2 => a.atan2(b),
        BinaryOp::Min => {
            if a.is_nan() || b < a {
                b
            } else {
                a
            }
        }
        BinaryOp::Max => {
            if a.is_nan() || b > a {
                b
            } else {
                a
            }
        }
    }
}

#[inline]
pub fn binary_f32(op: BinaryOp, a: f32, b: f32) -> f32 {
    if let Some(y) = mathlib::default_binary_f64(op, f64::from(a), f64::from(b)) {
        return y as f32;
    }
    binary_f32_libm(op, a, b)
}

/// `op(a, b)` with `pow` and `atan2` from the platform math library (what the JIT calls under
/// `MathImpl::Libm`).
#[inline]
pub fn binary_f32_libm(op: BinaryOp, a: f32, b: f32) -> f32 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Pow => a.powf(b),
        BinaryOp::Atan2 => a.atan2(b),
        BinaryOp::Min => {
            if a.is_nan() || b < a {
                b
            } else {
                a
            }
        }
        BinaryOp::Max => {
            if a.is_nan() || b > a {
                b
            } else {
                a
            }
        }
    }
}

/// `a·b + c` with one rounding.
pub fn fma(ty: Type, a: f64, b: f64, c: f64) -> f64 {
    match ty {
        Type::F32 => (a as f32).mul_add(b as f32, c as f32) as f64,
        _ => a.mul_add(b, c),
    }
}

/// `x^k` by binary exponentiation, in exactly this order:
/// `acc = 1; base = x; loop { if k&1 { acc *= base }; k >>= 1; if k == 0 break; base *= base }`,
/// then `1/acc` when the exponent is negative. `powi x, 0` is 1 (also for NaN).
pub fn powi_f64(x: f64, k: i32) -> f64 {
    let mut n = k.unsigned_abs();
    let mut base = x;
    let mut acc = 1.0f64;
    while n > 0 {
        if n & 1 == 1 {
            acc *= base;
        }
        n >>= 1;
        if n > 0 {
            base *= base;
        }
    }
    if k < 0 {
        1.0 / acc
    } else {
        acc
    }
}

/// [`powi_f64`] in `f32` arithmetic.
pub fn powi_f32(x: f32, k: i32) -> f32 {
    let mut n = k.unsigned_abs();
    let mut base = x;
    let mut acc = 1.0f32;
    while n > 0 {
        if n & 1 == 1 {
            acc *= base;
        }
        n >>= 1;
        if n > 0 {
            base *= base;
        }
    }
    if k < 0 {
        1.0 / acc
    } else {
        acc
    }
}

pub fn powi(ty: Type, x: f64, k: i32) -> f64 {
    match ty {
        Type::F32 => powi_f32(x as f32, k) as f64,
        _ => powi_f64(x, k),
    }
}

/// `fcmp.PRED a, b`.
pub fn fcmp(pred: CmpPred, a: f64, b: f64) -> bool {
    match pred {
        CmpPred::Eq => a == b,
        CmpPred::Ne => a != b,
        CmpPred::Lt => a < b,
        CmpPred::Le => a <= b,
        CmpPred::Gt => a > b,
        CmpPred::Ge => a >= b,
    }
}

fn bool_value(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// Evaluate one instruction whose result has type `ty`, given a lookup of operand values
/// (bools carried as 0.0/1.0, f32 values as exactly representable f64s).
pub fn eval_inst(
    inst: &InstData,
    ty: Type,
    operand: impl Fn(crate::function::Operand) -> f64,
) -> f64 {
    use crate::function::Operand as O;
    match inst {
        InstData::Const { bits, .. } => f64::from_bits(*bits),
        InstData::Unary { op, arg } => unary(*op, ty, operand(O::Value(*arg))),
        InstData::Binary { op, args } => binary(*op, ty, operand(args[0]), operand(args[1])),
        InstData::Fma { args } => fma(ty, operand(args[0]), operand(args[1]), operand(args[2])),
        InstData::Powi { arg, exp } => powi(ty, operand(O::Value(*arg)), *exp),
        InstData::Fcmp { pred, args } => {
            bool_value(fcmp(*pred, operand(args[0]), operand(args[1])))
        }
        InstData::Select { cond, args } => {
            if operand(O::Value(*cond)) != 0.0 {
                operand(args[0])
            } else {
                operand(args[1])
            }
        }
        InstData::Fpromote { arg } => operand(O::Value(*arg)),
        InstData::Fdemote { arg } => operand(O::Value(*arg)) as f32 as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_max_conventions() {
        let nan = f64::NAN;
        assert_eq!(binary_f64(BinaryOp::Min, nan, 2.0), 2.0);
        assert_eq!(binary_f64(BinaryOp::Min, 2.0, nan), 2.0);
        assert!(binary_f64(BinaryOp::Min, nan, nan).is_nan());
        assert!(binary_f64(BinaryOp::Min, -0.0, 0.0).is_sign_negative());
        assert!(binary_f64(BinaryOp::Min, 0.0, -0.0).is_sign_positive());
        assert_eq!(binary_f64(BinaryOp::Max, 1.0, 3.0), 3.0);
        assert_eq!(binary_f64(BinaryOp::Max, nan, 3.0), 3.0);
        assert_eq!(binary_f32(BinaryOp::Min, 1.0, -3.0), -3.0);
    }

    #[test]
    fn powi_matches_repeated_multiplication() {
        assert_eq!(powi_f64(3.0, 0), 1.0);
        assert_eq!(powi_f64(3.0, 5), 243.0);
        assert_eq!(powi_f64(2.0, -3), 0.125);
        assert_eq!(powi_f64(f64::NAN, 0), 1.0);
        assert_eq!(powi_f32(1.5, 3), 3.375);
        assert_eq!(powi_f64(-2.0, i32::MIN), 1.0 / f64::INFINITY);
    }
}
