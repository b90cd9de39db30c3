//! The derivative rule of every instruction, shared by forward and reverse mode.
//!
//! Every instruction `y = op(a, b, …)` is a scalar function, so its Jacobian is one row of
//! partial derivatives ∂y/∂a, ∂y/∂b, …. Forward mode computes ẏ = Σ ∂y/∂aᵢ · ȧᵢ and reverse
//! mode āᵢ += ∂y/∂aᵢ · ȳ, so one [`Partial`] per operand serves both. [`partials`] emits the
//! instructions that compute the coefficients (reading primal values, reusing the result `y`
//! where possible) and [`Partial::apply`] scales a tangent or adjoint by one.
//!
//! Conventions (x the operand, y the result):
//! - `neg`: −1. `add`: 1, 1. `sub`: 1, −1. `mul a, b`: b, a. `div a, b`: 1/b, −y/b.
//! - `abs`: sign(x), **0 at x = 0** (and at NaN).
//! - `sqrt`: 1/(2y); **+inf at x = 0** (the tangent is ±inf, or NaN for a zero tangent).
//! - `exp`: y. `expm1`: y + 1. `log`: 1/x. `log1p`: 1/(1 + x).
//! - `sin`: cos x. `cos`: −sin x. `tan`: 1 + y². `sinh`: cosh x. `cosh`: sinh x. `tanh`: 1 − y²
//!   (as `fma(−y, y, 1)`).
//! - `asin`: 1/√(1 − x²). `acos`: −1/√(1 − x²). `atan`: 1/(1 + x²). `erf`: 2/√π · e^(−x²).
//! - `atan2 a, b`: b/(a² + b²), −a/(a² + b²).
//! - `pow a, b`: ∂a = b·a^(b−1) (via `pow`); ∂b = y·log a for a > 0, **0 at a = 0** (the limit
//!   from the right for b > 0), NaN for a < 0 (a real power is not differentiable in its
//!   exponent there).
//! - `powi x, k`: k·x^(k−1) via `powi` (k = 0: zero, k = 1: one).
//! - `fma a, b, c`: b, a, 1.
//! - `min`/`max`: the derivative flows to the operand the primal returned: to `a` iff
//!   `fcmp.eq y, a`, which is exactly math.rs's rule (ties return the first operand, a NaN
//!   operand returns the other one); when both are NaN it flows to `b`.
//! - `select c, a, b`: through the chosen branch; none to the condition.
//! - `floor`, `ceil`: zero (no derivative code). `fcmp`, `const`: none.
//! - `fpromote`/`fdemote`: the tangent converts the same way; an adjoint converts back.
//!
//! This file also holds the `NameTable` that forward and reverse mode name derived values
//! with.

use adjit_ir::{BinaryOp, Builder, CmpPred, InstData, Operand, Type, UnaryOp, Value};

/// ∂y/∂x for one operand x of an instruction, as a linear map applied to a tangent or adjoint
/// `t` by [`Partial::apply`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Partial {
    /// t
    One,
    /// −t
    MinusOne,
    /// t·c
    Mul(Operand),
    /// t/c
    Div(Operand),
    /// −(t·c)
    NegMul(Operand),
    /// −(t/c)
    NegDiv(Operand),
    /// `select cond, t, 0` when `first`, else `select cond, 0, t`.
    Gate { cond: Value, first: bool },
    /// sign(x)·t with sign(0) = 0.
    Sign(Value),
    /// `fpromote t` or `fdemote t`, whichever converts t to the other float type.
    Convert,
}

impl Partial {
    /// Emit the instructions computing ∂y/∂x · t; returns `t` itself for [`Partial::One`].
    pub fn apply(self, b: &mut Builder, t: Value) -> Value {
        match self {
            Partial::One => t,
            Partial::MinusOne => b.neg(t),
            Partial::Mul(c) => b.mul(t, c),
            Partial::Div(c) => b.div(t, c),
            Partial::NegMul(c) => {
                let m = b.mul(t, c);
                b.neg(m)
            }
            Partial::NegDiv(c) => {
                let d = b.div(t, c);
                b.neg(d)
            }
            Partial::Gate { cond, first: true } => b.select(cond, t, 0.0),
            Partial::Gate { cond, first: false } => b.select(cond, 0.0, t),
            Partial::Sign(x) => {
                let pos = b.fcmp(CmpPred::Gt, x, 0.0);
                let kept = b.select(pos, t, 0.0);
                let negative = b.fcmp(CmpPred::Lt, x, 0.0);
                let flipped = b.neg(t);
                b.select(negative, flipped, kept)
            }
            Partial::Convert => match b.ty(t) {
                Type::F32 => b.fpromote(t),
                _ => b.fdemote(t),
            },
        }
    }

    /// Emit `acc + ∂y/∂x · t`, fusing the scaling into the accumulation where one
    /// instruction does both (`fma t, c, acc` for [`Partial::Mul`], `sub` for −1).
    pub fn accumulate(self, b: &mut Builder, acc: Value, t: Value) -> Value {
        match self {
            Partial::One => b.add(acc, t),
            Partial::MinusOne => b.sub(acc, t),
            Partial::Mul(c) => b.fma(t, c, acc),
            Partial::NegMul(c) => {
                let m = b.mul(t, c);
                b.sub(acc, m)
            }
            Partial::NegDiv(c) => {
                let d = b.div(t, c);
                b.sub(acc, d)
            }
            other => {
                let scaled = other.apply(b, t);
                b.add(acc, scaled)
            }
        }
    }
}

/// Whether operand number `pos` (text order, as in [`InstData::operands`]) of `inst` carries
/// a derivative: false for `select`'s condition, `fcmp`, `floor`, `ceil` and `const`.
pub fn carries_derivative(inst: &InstData, pos: usize) -> bool {
    match inst {
        InstData::Const { .. } | InstData::Fcmp { .. } => false,
        InstData::Unary { op, .. } => !matches!(op, UnaryOp::Floor | UnaryOp::Ceil),
        InstData::Select { .. } => pos > 0,
        _ => true,
    }
}

/// A literal operand's value, rounded to `ty`.
fn literal(ty: Type, x: f64) -> Operand {
    Operand::Const(ty.round(x))
}

/// `a² + b²` (at most one of them a literal).
fn sum_of_squares(b: &mut Builder, ty: Type, x: Operand, y: Operand) -> Value {
    match (x, y) {
        (Operand::Value(x), Operand::Value(y)) => {
            let y2 = b.mul(y, y);
            b.fma(x, x, y2)
        }
        (Operand::Const(c), Operand::Value(v)) | (Operand::Value(v), Operand::Const(c)) => {
            b.fma(v, v, literal(ty, c * c))
        }
        (Operand::Const(c), Operand::Const(d)) => b.constant(ty, c * c + d * d),
    }
}

/// Emit the coefficients of the partial derivatives of `inst` with respect to the operand
/// positions marked in `wanted`, and return them in position order. `inst` and `y` live in the
/// function being built (operands already mapped). Positions with a zero derivative (or
/// none) are left out, so the result may be shorter than the wanted set.
pub fn partials(
    b: &mut Builder,
    inst: &InstData,
    y: Value,
    wanted: &[bool; 3],
) -> Vec<(usize, Partial)> {
    let ty = b.ty(y);
    let mut out = Vec::with_capacity(3);
    match *inst {
        InstData::Const { .. } | InstData::Fcmp { .. } => {}
        InstData::Unary { op, arg: x } => {
            if !wanted[0] {
                return out;
            }
            let p = match op {
                UnaryOp::Neg => Partial::MinusOne,
                UnaryOp::Abs => Partial::Sign(x),
                UnaryOp::Sqrt => Partial::Div(b.mul(y, 2.0).into()),
                UnaryOp::Exp => Partial::Mul(y.into()),
                UnaryOp::Log => Partial::Div(x.into()),
                UnaryOp::Log1p => Partial::Div(b.add(x, 1.0).into()),
                UnaryOp::Expm1 => Partial::Mul(b.add(y, 1.0).into()),
                UnaryOp::Sin => Partial::Mul(b.unary(UnaryOp::Cos, x).into()),
                UnaryOp::Cos => Partial::NegMul(b.unary(UnaryOp::Sin, x).into()),
                UnaryOp::Tan => Partial::Mul(b.fma(y, y, 1.0).into()),
                UnaryOp::Asin | UnaryOp::Acos => {
                    let minus_x = b.neg(x);
                    let one_minus_x2 = b.fma(minus_x, x, 1.0);
                    let root = b.unary(UnaryOp::Sqrt, one_minus_x2);
                    if op == UnaryOp::Asin {
                        Partial::Div(root.into())
                    } else {
                        Partial::NegDiv(root.into())
                    }
                }
                UnaryOp::Atan => Partial::Div(b.fma(x, x, 1.0).into()),
                UnaryOp::Sinh => Partial::Mul(b.unary(UnaryOp::Cosh, x).into()),
                UnaryOp::Cosh => Partial::Mul(b.unary(UnaryOp::Sinh, x).into()),
                UnaryOp::Tanh => {
                    let minus_y = b.neg(y);
                    Partial::Mul(b.fma(minus_y, y, 1.0).into())
                }
                UnaryOp::Erf => {
                    let minus_x = b.neg(x);
                    let minus_x2 = b.mul(minus_x, x);
                    let gauss = b.unary(UnaryOp::Exp, minus_x2);
                    Partial::Mul(b.mul(gauss, std::f64::consts::FRAC_2_SQRT_PI).into())
                }
                UnaryOp::Floor | UnaryOp::Ceil => return out,
            };
            out.push((0, p));
        }
        InstData::Binary { op, args: [l, r] } => match op {
            BinaryOp::Add => out.extend([(0, Partial::One), (1, Partial::One)]),
            BinaryOp::Sub => out.extend([(0, Partial::One), (1, Partial::MinusOne)]),
            BinaryOp::Mul => out.extend([(0, Partial::Mul(r)), (1, Partial::Mul(l))]),
            BinaryOp::Div => {
                if wanted[0] {
                    out.push((0, Partial::Div(r)));
                }
                if wanted[1] {
                    out.push((1, Partial::NegMul(b.div(y, r).into())));
                }
            }
            BinaryOp::Pow => {
                if wanted[0] {
                    let coef = match r {
                        Operand::Const(e) => {
                            let base = l.as_value().expect("pow has a value operand");
                            let p = b.binary(BinaryOp::Pow, base, literal(ty, e - 1.0));
                            b.mul(p, literal(ty, e))
                        }
                        Operand::Value(e) => {
                            let e_minus_1 = b.sub(e, 1.0);
                            let p = b.binary(BinaryOp::Pow, l, e_minus_1);
                            b.mul(p, e)
                        }
                    };
                    out.push((0, Partial::Mul(coef.into())));
                }
                if wanted[1] {
                    let coef = match l {
                        // ±0 alike.
                        Operand::Const(base) if base.abs() == 0.0 => literal(ty, 0.0),
                        Operand::Const(base) => b.mul(y, literal(ty, base.ln())).into(),
                        Operand::Value(base) => {
                            let log = b.unary(UnaryOp::Log, base);
                            let y_log = b.mul(y, log);
                            let at_zero = b.fcmp(CmpPred::Eq, base, 0.0);
                            b.select(at_zero, 0.0, y_log).into()
                        }
                    };
                    out.push((1, Partial::Mul(coef)));
                }
            }
            BinaryOp::Atan2 => {
                let r2 = sum_of_squares(b, ty, l, r);
                if wanted[0] {
                    out.push((0, Partial::Mul(b.div(r, r2).into())));
                }
                if wanted[1] {
                    out.push((1, Partial::NegMul(b.div(l, r2).into())));
                }
            }
            BinaryOp::Min | BinaryOp::Max => {
                let cond = b.fcmp(CmpPred::Eq, y, l);
                out.extend([
                    (0, Partial::Gate { cond, first: true }),
                    (1, Partial::Gate { cond, first: false }),
                ]);
            }
        },
        InstData::Fma { args: [x, z, _] } => {
            out.extend([
                (0, Partial::Mul(z)),
                (1, Partial::Mul(x)),
                (2, Partial::One),
            ]);
        }
        InstData::Powi { arg, exp } => {
            if wanted[0] && exp != 0 {
                let p = match exp.checked_sub(1) {
                    Some(0) => Partial::One,
                    Some(k) => {
                        let pw = b.powi(arg, k);
                        Partial::Mul(b.mul(pw, literal(ty, f64::from(exp))).into())
                    }
                    // k = i32::MIN, where k − 1 overflows: k·y/x.
                    None => {
                        let ky = b.mul(y, literal(ty, f64::from(exp)));
                        Partial::Mul(b.div(ky, arg).into())
                    }
                };
                out.push((0, p));
            }
        }
        InstData::Select { cond, .. } => {
            out.extend([
                (1, Partial::Gate { cond, first: true }),
                (2, Partial::Gate { cond, first: false }),
            ]);
        }
        InstData::Fpromote { .. } | InstData::Fdemote { .. } => out.push((0, Partial::Convert)),
    }
    out.retain(|&(pos, _)| wanted[pos]);
    out
}

/// Names of a derived function: every name of the primal is reserved up front, so a derived
/// name (`dp`, `p_b`) never clashes with a primal value defined later; a clash with another
/// derived name gets a `_2`, `_3`, … suffix (the verifier rejects duplicate names).
#[derive(Clone, Debug, Default)]
pub(crate) struct NameTable {
    taken: std::collections::HashSet<String>,
}

impl NameTable {
    /// A table holding every name of `func`.
    pub(crate) fn new(func: &adjit_ir::Function) -> NameTable {
        NameTable {
            taken: func.values.iter().filter_map(|d| d.name.clone()).collect(),
        }
    }

    /// Reserve `base` (or a suffixed variant) and return it.
    pub(crate) fn fresh(&mut self, base: String) -> String {
        let mut name = base.clone();
        let mut k = 2;
        while self.taken.contains(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    /// Give `v` a fresh name derived from `base` unless it already has one or was defined
    /// before `first_new` (it then belongs to some other value: an alias).
    pub(crate) fn name_new(&mut self, b: &mut Builder, v: Value, first_new: usize, base: String) {
        if v.index() >= first_new && b.func().name_of(v).is_none() {
            let name = self.fresh(base);
            b.set_name(v, name);
        }
    }
}
