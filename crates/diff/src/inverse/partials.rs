//! Local partial derivatives of one instruction, emitted as `f64` IR.
//!
//! For an active instruction `y = op(a, b, …)` this emits `∂y/∂a`, `∂y/∂b`, … once, reading
//! the primal values already present in the function being built; the lump code then reuses them
//! for every forward direction and for the reverse sweep. Only operands through which a
//! derivative flows and that are active get a partial. Choices at kinks follow the scalar
//! semantics in [`adjit_ir::math`]: `min`/`max` differentiate the operand they return (the first
//! on ties), `abs` has slope sign(x) with 0 at zero (as in `crate::rules`), `select` passes the chosen side.

use adjit_ir::{BinaryOp, CmpPred, Function, InstData, Operand, UnaryOp, Value};

use super::arith::{Arith, Num};

/// `∂y/∂operand`: a number, or 1/0 chosen by a condition (`when` = the condition value that makes
/// the partial 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Partial {
    Scale(Num),
    Gate { cond: Value, when: bool },
}

impl Partial {
    /// `acc + self·t` (no `acc` = first term).
    pub fn apply(self, ar: &mut Arith, acc: Option<Num>, t: Num) -> Num {
        match self {
            Partial::Scale(p) => ar.accumulate(acc, p, t),
            Partial::Gate { cond, when } => {
                let gated = if when {
                    ar.select(cond, t, Num::Lit(0.0))
                } else {
                    ar.select(cond, Num::Lit(0.0), t)
                };
                match acc {
                    None => gated,
                    Some(acc) => ar.add(acc, gated),
                }
            }
        }
    }
}

const ONE: Partial = Partial::Scale(Num::Lit(1.0));
const MINUS_ONE: Partial = Partial::Scale(Num::Lit(-1.0));

/// The partials of the instruction defining `v` in `src` with respect to its active derivative
/// operands, one entry per operand position (an operand used twice appears twice).
/// `map` sends values of `src` to the values of the function being built.
pub fn partials(
    ar: &mut Arith,
    src: &Function,
    active: &[bool],
    map: &[Value],
    v: Value,
) -> Vec<(Value, Partial)> {
    let inst = src.inst(v).expect("partials of an instruction");
    let is_active = |o: Operand| o.as_value().is_some_and(|o| active[o.index()]);
    let prim = |ar: &mut Arith, o: Operand| match o {
        Operand::Const(c) => Num::Lit(c),
        Operand::Value(x) => Num::Val(ar.f64_of(map[x.index()])),
    };
    let mut out = Vec::with_capacity(3);
    match *inst {
        InstData::Const { .. } | InstData::Fcmp { .. } => {}
        InstData::Unary { op, arg } => {
            if !active[arg.index()] {
                return out;
            }
            let x = prim(ar, arg.into());
            let y = Num::Val(ar.f64_of(map[v.index()]));
            let one = Num::Lit(1.0);
            let p = match op {
                UnaryOp::Neg => Some(MINUS_ONE),
                UnaryOp::Abs => {
                    // sign(x), 0 at 0: the convention of `crate::rules`, so J here is the J
                    // that jvp/vjp differentiate.
                    let x = map[arg.index()];
                    let neg = ar.fcmp(CmpPred::Lt, x, Num::Lit(0.0));
                    let pos = ar.fcmp(CmpPred::Gt, x, Num::Lit(0.0));
                    let negative_or_zero = ar.select(neg, Num::Lit(-1.0), Num::Lit(0.0));
                    Some(Partial::Scale(ar.select(pos, one, negative_or_zero)))
                }
                UnaryOp::Sqrt => Some(Partial::Scale(ar.div(Num::Lit(0.5), y))),
                UnaryOp::Exp => Some(Partial::Scale(y)),
                UnaryOp::Log => Some(Partial::Scale(ar.div(one, x))),
                UnaryOp::Log1p => {
                    let d = ar.add(one, x);
                    Some(Partial::Scale(ar.div(one, d)))
                }
                UnaryOp::Expm1 => Some(Partial::Scale(ar.add(y, one))),
                UnaryOp::Sin => Some(Partial::Scale(ar.unary(UnaryOp::Cos, x))),
                UnaryOp::Cos => {
                    let s = ar.unary(UnaryOp::Sin, x);
                    Some(Partial::Scale(ar.neg(s)))
                }
                UnaryOp::Tan => Some(Partial::Scale(ar.fma(y, y, one))),
                UnaryOp::Asin | UnaryOp::Acos => {
                    let x2 = ar.mul(x, x);
                    let d = ar.sub(one, x2);
                    let s = ar.unary(UnaryOp::Sqrt, d);
                    let sign = if op == UnaryOp::Asin {
                        one
                    } else {
                        Num::Lit(-1.0)
                    };
                    Some(Partial::Scale(ar.div(sign, s)))
                }
                UnaryOp::Atan => {
                    let d = ar.fma(x, x, one);
                    Some(Partial::Scale(ar.div(one, d)))
                }
                UnaryOp::Sinh => Some(Partial::Scale(ar.unary(UnaryOp::Cosh, x))),
                UnaryOp::Cosh => Some(Partial::Scale(ar.unary(UnaryOp::Sinh, x))),
                UnaryOp::Tanh => {
                    let y2 = ar.mul(y, y);
                    Some(Partial::Scale(ar.sub(one, y2)))
                }
                UnaryOp::Erf => {
                    let x2 = ar.mul(x, x);
                    let m = ar.neg(x2);
                    let e = ar.unary(UnaryOp::Exp, m);
                    let c = std::f64::consts::FRAC_2_SQRT_PI;
                    Some(Partial::Scale(ar.mul(Num::Lit(c), e)))
                }
                UnaryOp::Floor | UnaryOp::Ceil => None,
            };
            if let Some(p) = p {
                out.push((arg, p));
            }
        }
        InstData::Binary { op, args } => {
            let [a, b] = args;
            let (da, db) = (is_active(a), is_active(b));
            let pa = prim(ar, a);
            let pb = prim(ar, b);
            let y = Num::Val(ar.f64_of(map[v.index()]));
            let one = Num::Lit(1.0);
            let (qa, qb): (Option<Partial>, Option<Partial>) = match op {
                BinaryOp::Add => (Some(ONE), Some(ONE)),
                BinaryOp::Sub => (Some(ONE), Some(MINUS_ONE)),
                BinaryOp::Mul => (Some(Partial::Scale(pb)), Some(Partial::Scale(pa))),
                BinaryOp::Div => {
                    let inv = ar.div(one, pb);
                    let qb = if db {
                        let t = ar.mul(y, inv);
                        Some(Partial::Scale(ar.neg(t)))
                    } else {
                        None
                    };
                    (Some(Partial::Scale(inv)), qb)
                }
                BinaryOp::Pow => {
                    let qa = if da {
                        let e = ar.sub(pb, one);
                        let p = ar.binary(BinaryOp::Pow, pa, e);
                        Some(Partial::Scale(ar.mul(pb, p)))
                    } else {
                        None
                    };
                    let qb = if db {
                        let l = ar.unary(UnaryOp::Log, pa);
                        Some(Partial::Scale(ar.mul(y, l)))
                    } else {
                        None
                    };
                    (qa, qb)
                }
                BinaryOp::Atan2 => {
                    let b2 = ar.mul(pb, pb);
                    let r2 = ar.fma(pa, pa, b2);
                    let qa = ar.div(pb, r2);
                    let nb = ar.neg(pa);
                    let qb = ar.div(nb, r2);
                    (Some(Partial::Scale(qa)), Some(Partial::Scale(qb)))
                }
                BinaryOp::Min | BinaryOp::Max => {
                    // The result is the first operand exactly when it equals it (ties and NaN
                    // handling as in `math::binary_f64`).
                    let yv = map[v.index()];
                    let first = match a {
                        Operand::Const(c) => ar.fcmp(CmpPred::Eq, yv, Num::Lit(c)),
                        Operand::Value(x) => ar.fcmp(CmpPred::Eq, yv, Num::Val(map[x.index()])),
                    };
                    (
                        Some(Partial::Gate {
                            cond: first,
                            when: true,
                        }),
                        Some(Partial::Gate {
                            cond: first,
                            when: false,
                        }),
                    )
                }
            };
            if let (true, Some(q)) = (da, qa) {
                out.push((a.as_value().expect("active operand"), q));
            }
            if let (true, Some(q)) = (db, qb) {
                out.push((b.as_value().expect("active operand"), q));
            }
        }
        InstData::Fma { args } => {
            let [a, b, c] = args;
            if is_active(a) {
                out.push((a.as_value().expect("active"), Partial::Scale(prim(ar, b))));
            }
            if is_active(b) {
                out.push((b.as_value().expect("active"), Partial::Scale(prim(ar, a))));
            }
            if is_active(c) {
                out.push((c.as_value().expect("active"), ONE));
            }
        }
        InstData::Powi { arg, exp } => {
            if active[arg.index()] {
                let p = if exp == 0 {
                    Num::Lit(0.0)
                } else {
                    let x = Num::Val(ar.f64_of(map[arg.index()]));
                    let xk = match x {
                        Num::Val(xv) if exp != 1 => Num::Val(ar.b.powi(xv, exp - 1)),
                        _ => Num::Lit(1.0),
                    };
                    ar.mul(Num::Lit(f64::from(exp)), xk)
                };
                out.push((arg, Partial::Scale(p)));
            }
        }
        InstData::Select { cond, args } => {
            let c = map[cond.index()];
            for (arg, when) in args.into_iter().zip([true, false]) {
                if is_active(arg) {
                    out.push((
                        arg.as_value().expect("active"),
                        Partial::Gate { cond: c, when },
                    ));
                }
            }
        }
        InstData::Fpromote { arg } | InstData::Fdemote { arg } => {
            if active[arg.index()] {
                out.push((arg, ONE));
            }
        }
    }
    out
}
