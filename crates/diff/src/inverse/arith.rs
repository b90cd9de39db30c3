//! `f64` arithmetic emitted into a [`Builder`], folding literals as it goes.
//!
//! The inverse transforms do all derivative arithmetic in `f64`: a [`Num`] is either a known
//! literal or an `f64` value of the function being built. Operations on two literals fold with the
//! IR's own scalar semantics ([`adjit_ir::math`]); multiplications by ±1 and additions of 0 are
//! only folded when the other side is a literal too (IEEE: `x + 0.0` is not `x` for `x = −0.0`),
//! except where the caller asks for the exact identity (tangent accumulation starts from
//! "no term" rather than from zero).

use std::collections::HashMap;

use adjit_ir::{math, BinaryOp, Builder, CmpPred, Operand, Type, UnaryOp, Value};

use crate::rules::Emitter;

/// An `f64` quantity during emission: a literal or a value of the new function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Lit(f64),
    Val(Value),
}

impl From<Value> for Num {
    fn from(v: Value) -> Num {
        Num::Val(v)
    }
}

/// A builder plus the caches the inverse transforms share.
pub struct Arith {
    pub b: Builder,
    promoted: HashMap<Value, Value>,
}

impl Arith {
    pub fn new(b: Builder) -> Arith {
        Arith {
            b,
            promoted: HashMap::new(),
        }
    }

    /// `v` as an `f64` value (promoting `f32` once and reusing the promotion).
    pub fn f64_of(&mut self, v: Value) -> Value {
        if self.b.ty(v) == Type::F64 {
            return v;
        }
        if let Some(&p) = self.promoted.get(&v) {
            return p;
        }
        let p = self.b.fpromote(v);
        self.promoted.insert(v, p);
        p
    }

    /// `x` converted to type `ty` (`f64` values demoted for `f32`).
    pub fn in_type(&mut self, x: Num, ty: Type) -> Value {
        let v = self.value(x);
        if ty == Type::F32 {
            self.b.fdemote(v)
        } else {
            v
        }
    }

    /// A value holding `x` (materialising literals as `const`).
    pub fn value(&mut self, x: Num) -> Value {
        match x {
            Num::Val(v) => v,
            Num::Lit(c) => self.b.constant(Type::F64, c),
        }
    }

    pub fn unary(&mut self, op: UnaryOp, x: Num) -> Num {
        match x {
            Num::Lit(c) => Num::Lit(math::unary_f64(op, c)),
            Num::Val(v) => Num::Val(self.b.unary(op, v)),
        }
    }

    /// `op(a, b)`, folded when both are literals; `1·x` and `(−1)·x` fold exactly.
    pub fn binary(&mut self, op: BinaryOp, a: Num, b: Num) -> Num {
        match (op, a, b) {
            (BinaryOp::Mul, Num::Lit(one), x @ Num::Val(_))
            | (BinaryOp::Mul, x @ Num::Val(_), Num::Lit(one))
                if one == 1.0 =>
            {
                return x;
            }
            _ => {}
        }
        match (a, b) {
            (Num::Lit(x), Num::Lit(y)) => Num::Lit(math::binary_f64(op, x, y)),
            (Num::Lit(x), Num::Val(y)) => Num::Val(self.b.binary(op, x, y)),
            (Num::Val(x), Num::Lit(y)) => Num::Val(self.b.binary(op, x, y)),
            (Num::Val(x), Num::Val(y)) => Num::Val(self.b.binary(op, x, y)),
        }
    }

    pub fn sub(&mut self, a: Num, b: Num) -> Num {
        self.binary(BinaryOp::Sub, a, b)
    }

    pub fn mul(&mut self, a: Num, b: Num) -> Num {
        self.binary(BinaryOp::Mul, a, b)
    }

    pub fn div(&mut self, a: Num, b: Num) -> Num {
        self.binary(BinaryOp::Div, a, b)
    }

    pub fn neg(&mut self, a: Num) -> Num {
        self.unary(UnaryOp::Neg, a)
    }

    pub fn abs(&mut self, a: Num) -> Num {
        self.unary(UnaryOp::Abs, a)
    }

    pub fn max(&mut self, a: Num, b: Num) -> Num {
        self.binary(BinaryOp::Max, a, b)
    }

    /// `a·b + c` with one rounding (folded only when all three are literals).
    pub fn fma(&mut self, a: Num, b: Num, c: Num) -> Num {
        match (a, b, c) {
            (Num::Lit(x), Num::Lit(y), Num::Lit(z)) => Num::Lit(x.mul_add(y, z)),
            _ => {
                let op = |n: Num| match n {
                    Num::Lit(c) => adjit_ir::Operand::Const(c),
                    Num::Val(v) => adjit_ir::Operand::Value(v),
                };
                Num::Val(self.b.fma(op(a), op(b), op(c)))
            }
        }
    }

    /// `cond ? a : b` (folded when both sides are the same literal).
    pub fn select(&mut self, cond: Value, a: Num, b: Num) -> Num {
        match (a, b) {
            (Num::Lit(x), Num::Lit(y)) if x.to_bits() == y.to_bits() => Num::Lit(x),
            (Num::Lit(x), Num::Lit(y)) => Num::Val(self.b.select(cond, x, y)),
            (Num::Lit(x), Num::Val(y)) => Num::Val(self.b.select(cond, x, y)),
            (Num::Val(x), Num::Lit(y)) => Num::Val(self.b.select(cond, x, y)),
            (Num::Val(x), Num::Val(y)) => Num::Val(self.b.select(cond, x, y)),
        }
    }

    /// A `bool` value: `pred(a, b)`; `a` must be a value.
    pub fn fcmp(&mut self, pred: CmpPred, a: Value, b: Num) -> Value {
        match b {
            Num::Lit(c) => self.b.fcmp(pred, a, c),
            Num::Val(v) => self.b.fcmp(pred, a, v),
        }
    }
}

/// The rulebook's emitter for the inverse modes: all derivative arithmetic in `f64`, primal
/// operands promoted once, literals folded with [`adjit_ir::math`].
impl Emitter for Arith {
    type Num = Num;

    fn lit(&mut self, c: f64) -> Num {
        Num::Lit(c)
    }
    fn as_lit(&self, n: Num) -> Option<f64> {
        match n {
            Num::Lit(c) => Some(c),
            Num::Val(_) => None,
        }
    }
    fn operand(&mut self, o: Operand) -> Num {
        match o {
            Operand::Const(c) => Num::Lit(c),
            Operand::Value(v) => Num::Val(self.f64_of(v)),
        }
    }
    fn unary(&mut self, op: UnaryOp, x: Num) -> Num {
        Arith::unary(self, op, x)
    }
    fn binary(&mut self, op: BinaryOp, a: Num, b: Num) -> Num {
        Arith::binary(self, op, a, b)
    }
    fn fma(&mut self, a: Num, b: Num, c: Num) -> Num {
        Arith::fma(self, a, b, c)
    }
    fn powi(&mut self, x: Num, k: i32) -> Num {
        match x {
            Num::Lit(c) => Num::Lit(math::powi_f64(c, k)),
            Num::Val(v) => Num::Val(self.b.powi(v, k)),
        }
    }
    fn fcmp(&mut self, pred: CmpPred, a: Num, b: Num) -> Value {
        let a = self.value(a);
        Arith::fcmp(self, pred, a, b)
    }
    fn select(&mut self, cond: Value, a: Num, b: Num) -> Num {
        Arith::select(self, cond, a, b)
    }
    /// Everything is `f64` here: a conversion is the identity.
    fn convert(&mut self, t: Num) -> Num {
        t
    }
}
