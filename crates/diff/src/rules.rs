//! The one derivative rulebook: the local partials of every instruction, written once and read
//! by every mode (forward, reverse, both inverse modes).
//!
//! Every instruction `y = op(a, b, …)` is a scalar function, so its Jacobian is one row of
//! partial derivatives ∂y/∂a, ∂y/∂b, …. Forward mode computes ẏ = Σ ∂y/∂aᵢ · ȧᵢ, reverse
//! mode āᵢ += ∂y/∂aᵢ · ȳ and the inverse modes assemble lump Jacobians from the same
//! coefficients, so one [`Partial`] per operand serves all of them. [`partials`] emits the
//! instructions that compute the coefficients (reading primal values, reusing the result `y`
//! where possible) through an [`Emitter`], and [`Partial::apply`] / [`Partial::accumulate`]
//! scale a tangent or adjoint by one.
//!
//! Two emitters exist: [`TypedBuilder`] (jvp/vjp: the program's own float type, every line
//! emitted) and the inverse modes' `f64` arithmetic, which folds literals as it goes. Since
//! both read this table, the J that the inverse modes invert is the J that jvp/vjp
//! differentiate (`tests/rulebook.rs` checks it opcode by opcode at the special points).
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
//! - `powi x, k`: k·x^(k−1) via `powi` (k = 0: none, like `floor`: the operand carries no
//!   derivative, so no mode emits code for it; k = 1: one; k = i32::MIN, where k − 1
//!   overflows: k·y/x).
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

use adjit_ir::{math, BinaryOp, Builder, CmpPred, InstData, Name, Operand, Type, UnaryOp, Value};

/// Where the rulebook emits arithmetic. `Num` is a float quantity of the function being built:
/// a value or a literal. Implementations may fold literals (with [`adjit_ir::math`]'s
/// semantics) but must not apply float identities that are not exact.
pub trait Emitter {
    type Num: Copy + PartialEq + std::fmt::Debug;

    /// A literal.
    fn lit(&mut self, c: f64) -> Self::Num;
    /// The literal `n` holds, if it is one.
    fn as_lit(&self, n: Self::Num) -> Option<f64>;
    /// A primal operand of the instruction being differentiated (operands already mapped to
    /// the function being built).
    fn operand(&mut self, o: Operand) -> Self::Num;
    fn unary(&mut self, op: UnaryOp, x: Self::Num) -> Self::Num;
    fn binary(&mut self, op: BinaryOp, a: Self::Num, b: Self::Num) -> Self::Num;
    fn fma(&mut self, a: Self::Num, b: Self::Num, c: Self::Num) -> Self::Num;
    fn powi(&mut self, x: Self::Num, k: i32) -> Self::Num;
    fn fcmp(&mut self, pred: CmpPred, a: Self::Num, b: Self::Num) -> Value;
    fn select(&mut self, cond: Value, a: Self::Num, b: Self::Num) -> Self::Num;
    /// A tangent or adjoint converted between `f32` and `f64` (the `fpromote`/`fdemote` rule).
    fn convert(&mut self, t: Self::Num) -> Self::Num;

    fn add(&mut self, a: Self::Num, b: Self::Num) -> Self::Num {
        self.binary(BinaryOp::Add, a, b)
    }
    fn sub(&mut self, a: Self::Num, b: Self::Num) -> Self::Num {
        self.binary(BinaryOp::Sub, a, b)
    }
    fn mul(&mut self, a: Self::Num, b: Self::Num) -> Self::Num {
        self.binary(BinaryOp::Mul, a, b)
    }
    fn div(&mut self, a: Self::Num, b: Self::Num) -> Self::Num {
        self.binary(BinaryOp::Div, a, b)
    }
    fn neg(&mut self, a: Self::Num) -> Self::Num {
        self.unary(UnaryOp::Neg, a)
    }
}

/// The [`Builder`] as an [`Emitter`] for jvp/vjp: quantities are operands of the program's
/// float type `ty`; every line is emitted (the simplifier folds later), except that an
/// operation on literals only is evaluated with [`adjit_ir::math`] in `ty`.
pub struct TypedBuilder<'a> {
    pub b: &'a mut Builder,
    pub ty: Type,
}

impl TypedBuilder<'_> {
    /// `o` as a value (a literal becomes a `const` of `ty`).
    fn value(&mut self, o: Operand) -> Value {
        match o {
            Operand::Value(v) => v,
            Operand::Const(c) => self.b.constant(self.ty, c),
        }
    }
}

impl Emitter for TypedBuilder<'_> {
    type Num = Operand;

    fn lit(&mut self, c: f64) -> Operand {
        Operand::Const(self.ty.round(c))
    }
    fn as_lit(&self, n: Operand) -> Option<f64> {
        match n {
            Operand::Const(c) => Some(c),
            Operand::Value(_) => None,
        }
    }
    fn operand(&mut self, o: Operand) -> Operand {
        o
    }
    fn unary(&mut self, op: UnaryOp, x: Operand) -> Operand {
        match x {
            Operand::Const(c) => Operand::Const(math::unary(op, self.ty, c)),
            Operand::Value(v) => self.b.unary(op, v).into(),
        }
    }
    fn binary(&mut self, op: BinaryOp, a: Operand, b: Operand) -> Operand {
        match (a, b) {
            (Operand::Const(x), Operand::Const(y)) => {
                Operand::Const(math::binary(op, self.ty, x, y))
            }
            _ => self.b.binary(op, a, b).into(),
        }
    }
    fn fma(&mut self, a: Operand, b: Operand, c: Operand) -> Operand {
        match (a, b, c) {
            (Operand::Const(x), Operand::Const(y), Operand::Const(z)) => {
                Operand::Const(math::fma(self.ty, x, y, z))
            }
            _ => self.b.fma(a, b, c).into(),
        }
    }
    fn powi(&mut self, x: Operand, k: i32) -> Operand {
        match x {
            Operand::Const(c) => Operand::Const(math::powi(self.ty, c, k)),
            Operand::Value(v) => self.b.powi(v, k).into(),
        }
    }
    fn fcmp(&mut self, pred: CmpPred, a: Operand, b: Operand) -> Value {
        let a = match (a, b) {
            (Operand::Const(_), Operand::Const(_)) => self.value(a).into(),
            _ => a,
        };
        self.b.fcmp(pred, a, b)
    }
    fn select(&mut self, cond: Value, a: Operand, b: Operand) -> Operand {
        let a = match (a, b) {
            (Operand::Const(_), Operand::Const(_)) => self.value(a).into(),
            _ => a,
        };
        self.b.select(cond, a, b).into()
    }
    fn convert(&mut self, t: Operand) -> Operand {
        let v = self.value(t);
        match self.b.ty(v) {
            Type::F32 => self.b.fpromote(v).into(),
            _ => self.b.fdemote(v).into(),
        }
    }
}

/// ∂y/∂x for one operand x of an instruction, as a linear map applied to a tangent or adjoint
/// `t` by [`Partial::apply`]. `N` is the emitter's quantity ([`Emitter::Num`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Partial<N> {
    /// t
    One,
    /// −t
    MinusOne,
    /// t·c
    Mul(N),
    /// t/c
    Div(N),
    /// −(t·c)
    NegMul(N),
    /// −(t/c)
    NegDiv(N),
    /// `select cond, t, 0` when `first`, else `select cond, 0, t`.
    Gate { cond: Value, first: bool },
    /// sign(x)·t with sign(0) = 0.
    Sign(N),
    /// `fpromote t` or `fdemote t`, whichever converts t to the other float type.
    Convert,
}

impl<N: Copy + PartialEq + std::fmt::Debug> Partial<N> {
    /// Emit ∂y/∂x · t; returns `t` itself for [`Partial::One`].
    pub fn apply<E: Emitter<Num = N>>(self, e: &mut E, t: N) -> N {
        match self {
            Partial::One => t,
            Partial::MinusOne => e.neg(t),
            Partial::Mul(c) => e.mul(t, c),
            Partial::Div(c) => e.div(t, c),
            Partial::NegMul(c) => {
                let m = e.mul(t, c);
                e.neg(m)
            }
            Partial::NegDiv(c) => {
                let d = e.div(t, c);
                e.neg(d)
            }
            Partial::Gate { cond, first } => {
                let zero = e.lit(0.0);
                if first {
                    e.select(cond, t, zero)
                } else {
                    e.select(cond, zero, t)
                }
            }
            Partial::Sign(x) => {
                let zero = e.lit(0.0);
                let pos = e.fcmp(CmpPred::Gt, x, zero);
                let kept = e.select(pos, t, zero);
                let negative = e.fcmp(CmpPred::Lt, x, zero);
                let flipped = e.neg(t);
                e.select(negative, flipped, kept)
            }
            Partial::Convert => e.convert(t),
        }
    }

    /// Emit `acc + ∂y/∂x · t`, fusing the scaling into the accumulation where one
    /// instruction does both (`fma t, c, acc` for [`Partial::Mul`], `sub` for −1).
    pub fn accumulate<E: Emitter<Num = N>>(self, e: &mut E, acc: N, t: N) -> N {
        match self {
            Partial::One => e.add(acc, t),
            Partial::MinusOne => e.sub(acc, t),
            Partial::Mul(c) => e.fma(t, c, acc),
            Partial::NegMul(c) => {
                let m = e.mul(t, c);
                e.sub(acc, m)
            }
            Partial::NegDiv(c) => {
                let d = e.div(t, c);
                e.sub(acc, d)
            }
            other => {
                let scaled = other.apply(e, t);
                e.add(acc, scaled)
            }
        }
    }

    /// `acc + ∂y/∂x · t` where a missing `acc` means "no term yet", so the first term is
    /// exact ([`Partial::apply`]).
    pub fn apply_to<E: Emitter<Num = N>>(self, e: &mut E, acc: Option<N>, t: N) -> N {
        match acc {
            None => self.apply(e, t),
            Some(acc) => self.accumulate(e, acc, t),
        }
    }
}

/// The value a tangent or adjoint line produced. Tangents and adjoints are values, and an
/// emitter only folds operations whose operands are all literals, so scaling one never gives
/// a literal.
pub(crate) fn value_of(o: Operand) -> Value {
    o.as_value()
        .expect("a scaled tangent or adjoint is a value, never a literal")
}

/// Whether operand number `pos` (text order, as in [`InstData::operands`]) of `inst` carries
/// a derivative: false for `select`'s condition, `fcmp`, `floor`, `ceil`, `const` and
/// `powi x, 0` (which is 1 for every `x`, NaN included). Activity reads this, so such an
/// operand gets no derivative code in any mode: a zero adjoint that crossed a checkpoint stage
/// boundary as a runtime value would otherwise meet `0·inf = NaN` upstream where the tape had
/// nothing at all.
pub fn carries_derivative(inst: &InstData, pos: usize) -> bool {
    derivative_positions(inst).contains(&pos)
}

/// The operand positions (text order) of `inst` that carry a derivative, the one statement
/// of the rule behind [`carries_derivative`] and [`for_each_derivative_value`]: none for
/// `const`, `fcmp`, `floor`, `ceil` and `powi x, 0`, all but `select`'s condition, else all
/// (an instruction has at most three operands).
fn derivative_positions(inst: &InstData) -> std::ops::Range<usize> {
    match inst {
        InstData::Const { .. } | InstData::Fcmp { .. } => 0..0,
        InstData::Powi { exp: 0, .. } => 0..0,
        InstData::Unary {
            op: UnaryOp::Floor | UnaryOp::Ceil,
            ..
        } => 0..0,
        InstData::Select { .. } => 1..3,
        _ => 0..3,
    }
}

/// Calls `f` on every value operand of `inst` that carries a derivative
/// ([`carries_derivative`]), in text order, repeats included: one visit of the operands
/// where testing every position was a match per position (activity runs it on every
/// instruction).
pub(crate) fn for_each_derivative_value(inst: &InstData, mut f: impl FnMut(Value)) {
    let carried = derivative_positions(inst);
    if carried.is_empty() {
        return;
    }
    let mut pos = 0;
    inst.for_each_operand(|o| {
        if let (true, Operand::Value(v)) = (carried.contains(&pos), o) {
            f(v);
        }
        pos += 1;
    });
}

/// The pairs of operand positions `(p, q)` (`p ≤ q`, text order) whose mixed second partial
/// ∂²y/∂aₚ∂a_q of `inst` is not identically zero: the structure of the rule's own second
/// derivative, which [`crate::sparsity`] reads to find which input pairs of a program
/// interact nonlinearly. Linear and piecewise-linear operations (`neg`, `abs`, `add`, `sub`,
/// `min`, `max`, `select`, conversions, `floor`, `ceil`) have none; `mul a, b` has (a, b) (so
/// `mul x, x` pairs x with itself), `div a, b` (a, b) and (b, b), `fma a, b, c` (a, b), every
/// other unary operation and `powi x, k` with k ∉ {0, 1} (x, x), `pow` and `atan2` every pair.
pub fn second_order_pairs(inst: &InstData) -> &'static [(usize, usize)] {
    const NONE: &[(usize, usize)] = &[];
    const DIAGONAL: &[(usize, usize)] = &[(0, 0)];
    const PRODUCT: &[(usize, usize)] = &[(0, 1)];
    const QUOTIENT: &[(usize, usize)] = &[(0, 1), (1, 1)];
    const ALL: &[(usize, usize)] = &[(0, 0), (0, 1), (1, 1)];
    match inst {
        InstData::Unary { op, .. } => match op {
            UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Floor | UnaryOp::Ceil => NONE,
            _ => DIAGONAL,
        },
        InstData::Binary { op, .. } => match op {
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Min | BinaryOp::Max => NONE,
            BinaryOp::Mul => PRODUCT,
            BinaryOp::Div => QUOTIENT,
            BinaryOp::Pow | BinaryOp::Atan2 => ALL,
        },
        InstData::Fma { .. } => PRODUCT,
        InstData::Powi { exp, .. } if *exp != 0 && *exp != 1 => DIAGONAL,
        _ => NONE,
    }
}

/// The distinct value operands of `inst` through which a derivative flows
/// ([`carries_derivative`]), in text order.
pub fn derivative_operands(inst: &InstData) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(3);
    for (pos, op) in inst.operands().into_iter().enumerate() {
        if let Operand::Value(v) = op {
            if carries_derivative(inst, pos) && !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

/// `a² + b²`.
fn sum_of_squares<E: Emitter>(e: &mut E, a: E::Num, b: E::Num) -> E::Num {
    match (e.as_lit(a), e.as_lit(b)) {
        (None, None) => {
            let b2 = e.mul(b, b);
            e.fma(a, a, b2)
        }
        (Some(c), None) => {
            let c2 = e.lit(c * c);
            e.fma(b, b, c2)
        }
        (_, Some(d)) => {
            let d2 = e.lit(d * d);
            e.fma(a, a, d2)
        }
    }
}

/// The (operand position, partial) pairs of one instruction, at most three, in position order:
/// what [`partials`] returns, held inline (every mode asks for them once per instruction, and a
/// heap allocation each was a measurable share of differentiating 10⁶ instructions).
#[derive(Clone, Copy, Debug)]
pub struct Partials<N> {
    items: [(usize, Partial<N>); 3],
    len: usize,
}

impl<N: Copy> Partials<N> {
    fn new() -> Partials<N> {
        Partials {
            items: [(0, Partial::One); 3],
            len: 0,
        }
    }

    /// # Panics
    /// Past three pairs (an instruction has at most three operands).
    fn push(&mut self, item: (usize, Partial<N>)) {
        self.items[self.len] = item;
        self.len += 1;
    }

    fn extend<const K: usize>(&mut self, items: [(usize, Partial<N>); K]) {
        for item in items {
            self.push(item);
        }
    }

    fn retain(&mut self, mut keep: impl FnMut(&(usize, Partial<N>)) -> bool) {
        let mut kept = 0;
        for i in 0..self.len {
            if keep(&self.items[i]) {
                self.items[kept] = self.items[i];
                kept += 1;
            }
        }
        self.len = kept;
    }
}

impl<N> std::ops::Deref for Partials<N> {
    type Target = [(usize, Partial<N>)];
    fn deref(&self) -> &[(usize, Partial<N>)] {
        &self.items[..self.len]
    }
}

impl<N> IntoIterator for Partials<N> {
    type Item = (usize, Partial<N>);
    type IntoIter = std::iter::Take<std::array::IntoIter<(usize, Partial<N>), 3>>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter().take(self.len)
    }
}

impl<'a, N> IntoIterator for &'a Partials<N> {
    type Item = &'a (usize, Partial<N>);
    type IntoIter = std::slice::Iter<'a, (usize, Partial<N>)>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Emit the coefficients of the partial derivatives of `inst` with respect to the operand
/// positions marked in `wanted`, and return them in position order. `inst` and `y` live in the
/// function being built (operands already mapped). Positions with a zero derivative (or
/// none) are left out, so the result may be shorter than the wanted set.
pub fn partials<E: Emitter>(
    e: &mut E,
    inst: &InstData,
    y: E::Num,
    wanted: &[bool; 3],
) -> Partials<E::Num> {
    let mut out = Partials::new();
    match *inst {
        InstData::Const { .. } | InstData::Fcmp { .. } => {}
        InstData::Unary { op, arg } => {
            if !wanted[0] {
                return out;
            }
            let x = e.operand(arg.into());
            let one = e.lit(1.0);
            let p = match op {
                UnaryOp::Neg => Partial::MinusOne,
                UnaryOp::Abs => Partial::Sign(x),
                UnaryOp::Sqrt => {
                    let two = e.lit(2.0);
                    Partial::Div(e.mul(y, two))
                }
                UnaryOp::Exp => Partial::Mul(y),
                UnaryOp::Log => Partial::Div(x),
                UnaryOp::Log1p => Partial::Div(e.add(x, one)),
                UnaryOp::Expm1 => Partial::Mul(e.add(y, one)),
                UnaryOp::Sin => Partial::Mul(e.unary(UnaryOp::Cos, x)),
                UnaryOp::Cos => Partial::NegMul(e.unary(UnaryOp::Sin, x)),
                UnaryOp::Tan => Partial::Mul(e.fma(y, y, one)),
                UnaryOp::Asin | UnaryOp::Acos => {
                    let minus_x = e.neg(x);
                    let one_minus_x2 = e.fma(minus_x, x, one);
                    let root = e.unary(UnaryOp::Sqrt, one_minus_x2);
                    if op == UnaryOp::Asin {
                        Partial::Div(root)
                    } else {
                        Partial::NegDiv(root)
                    }
                }
                UnaryOp::Atan => Partial::Div(e.fma(x, x, one)),
                UnaryOp::Sinh => Partial::Mul(e.unary(UnaryOp::Cosh, x)),
                UnaryOp::Cosh => Partial::Mul(e.unary(UnaryOp::Sinh, x)),
                UnaryOp::Tanh => {
                    let minus_y = e.neg(y);
                    Partial::Mul(e.fma(minus_y, y, one))
                }
                UnaryOp::Erf => {
                    let minus_x = e.neg(x);
                    let minus_x2 = e.mul(minus_x, x);
                    let gauss = e.unary(UnaryOp::Exp, minus_x2);
                    let c = e.lit(std::f64::consts::FRAC_2_SQRT_PI);
                    Partial::Mul(e.mul(gauss, c))
                }
                UnaryOp::Floor | UnaryOp::Ceil => return out,
            };
            out.push((0, p));
        }
        InstData::Binary { op, args: [l, r] } => {
            let (l, r) = (e.operand(l), e.operand(r));
            match op {
                BinaryOp::Add => out.extend([(0, Partial::One), (1, Partial::One)]),
                BinaryOp::Sub => out.extend([(0, Partial::One), (1, Partial::MinusOne)]),
                BinaryOp::Mul => out.extend([(0, Partial::Mul(r)), (1, Partial::Mul(l))]),
                BinaryOp::Div => {
                    if wanted[0] {
                        out.push((0, Partial::Div(r)));
                    }
                    if wanted[1] {
                        out.push((1, Partial::NegMul(e.div(y, r))));
                    }
                }
                BinaryOp::Pow => {
                    if wanted[0] {
                        let e_minus_1 = match e.as_lit(r) {
                            Some(k) => e.lit(k - 1.0),
                            None => {
                                let one = e.lit(1.0);
                                e.sub(r, one)
                            }
                        };
                        let p = e.binary(BinaryOp::Pow, l, e_minus_1);
                        out.push((0, Partial::Mul(e.mul(p, r))));
                    }
                    if wanted[1] {
                        let coef = match e.as_lit(l) {
                            // ±0 alike.
                            Some(base) if base.abs() == 0.0 => e.lit(0.0),
                            Some(base) => {
                                let log = e.lit(base.ln());
                                e.mul(y, log)
                            }
                            None => {
                                let log = e.unary(UnaryOp::Log, l);
                                let y_log = e.mul(y, log);
                                let zero = e.lit(0.0);
                                let at_zero = e.fcmp(CmpPred::Eq, l, zero);
                                e.select(at_zero, zero, y_log)
                            }
                        };
                        out.push((1, Partial::Mul(coef)));
                    }
                }
                BinaryOp::Atan2 => {
                    let r2 = sum_of_squares(e, l, r);
                    if wanted[0] {
                        out.push((0, Partial::Mul(e.div(r, r2))));
                    }
                    if wanted[1] {
                        out.push((1, Partial::NegMul(e.div(l, r2))));
                    }
                }
                BinaryOp::Min | BinaryOp::Max => {
                    let cond = e.fcmp(CmpPred::Eq, y, l);
                    out.extend([
                        (0, Partial::Gate { cond, first: true }),
                        (1, Partial::Gate { cond, first: false }),
                    ]);
                }
            }
        }
        InstData::Fma { args: [x, z, _] } => {
            let (x, z) = (e.operand(x), e.operand(z));
            out.extend([
                (0, Partial::Mul(z)),
                (1, Partial::Mul(x)),
                (2, Partial::One),
            ]);
        }
        InstData::Powi { arg, exp } => {
            if wanted[0] && exp != 0 {
                let x = e.operand(arg.into());
                let k = e.lit(f64::from(exp));
                let p = match exp.checked_sub(1) {
                    Some(0) => Partial::One,
                    Some(km1) => {
                        let pw = e.powi(x, km1);
                        Partial::Mul(e.mul(pw, k))
                    }
                    // k = i32::MIN, where k − 1 overflows: k·y/x.
                    None => {
                        let ky = e.mul(y, k);
                        Partial::Mul(e.div(ky, x))
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
    /// Hashed with Fx: a derivative of 10⁷ instructions names 10⁶ values, and SipHash was a
    /// tenth of the whole reverse sweep.
    taken: rustc_hash::FxHashSet<Name>,
}

impl NameTable {
    /// A table holding only the names of `func` that `could_clash` accepts, for a caller
    /// whose derived names (every `base` it asks [`NameTable::fresh`] for, and the `base_k`
    /// variants) can equal no other primal name. Reverse mode's `p_b` can only equal a name
    /// ending in `_b` or `_b_k`: a traced program's 10⁶ parameter names then stay out of the
    /// table, whose filling was 5 % of a VJP at 10⁷ instructions (a cache miss or two for
    /// every name hashed, and reference counts touched twice).
    pub(crate) fn only(func: &adjit_ir::Function, could_clash: impl Fn(&str) -> bool) -> NameTable {
        let taken = func
            .values
            .iter()
            .filter_map(|d| d.name.as_ref().filter(|n| could_clash(n)).cloned())
            .collect();
        NameTable { taken }
    }

    /// A table holding `names`.
    pub(crate) fn from_names(names: impl IntoIterator<Item = Name>) -> NameTable {
        NameTable {
            taken: names.into_iter().collect(),
        }
    }

    /// Reserve `base` (or a suffixed variant) and return it.
    pub(crate) fn fresh(&mut self, base: String) -> Name {
        self.fresh_with(base, true)
    }

    /// [`NameTable::fresh`], remembering the name only when `remember` holds. A caller may
    /// forget a name when it never asks for its `base` again and the variants of its
    /// distinct bases never meet (reverse mode: `p_b`, `p_b_k` come from `p` alone); the
    /// name then cannot come up again. Remembering every adjoint name of a 10⁷-instruction
    /// program was a cache miss each into a table of 10⁶ names (5 % of its VJP).
    pub(crate) fn fresh_with(&mut self, base: String, remember: bool) -> Name {
        let name = if self.taken.contains(base.as_str()) {
            self.variant(&base)
        } else {
            Name::from(base)
        };
        if remember {
            self.taken.insert(name.clone());
        }
        name
    }

    /// The first `base_k` (k = 2, 3, …) not taken.
    fn variant(&self, base: &str) -> Name {
        let name = (2..)
            .map(|k| format!("{base}_{k}"))
            .find(|name| !self.taken.contains(name.as_str()))
            .unwrap_or_else(|| base.to_string());
        Name::from(name)
    }

    /// Give `v` a fresh name derived from `base` unless it already has one or was defined
    /// before `first_new` (it then belongs to some other value: an alias).
    /// `base` is only called when a name is given (most adjoints and tangents are aliases).
    pub(crate) fn name_new(
        &mut self,
        b: &mut Builder,
        v: Value,
        first_new: usize,
        base: impl FnOnce() -> String,
    ) {
        self.name_new_with(b, v, first_new, base, true);
    }

    /// [`NameTable::name_new`], remembering the name only when `remember` holds (see
    /// [`NameTable::fresh_with`]).
    pub(crate) fn name_new_with(
        &mut self,
        b: &mut Builder,
        v: Value,
        first_new: usize,
        base: impl FnOnce() -> String,
        remember: bool,
    ) {
        if v.index() >= first_new && b.func().name_of(v).is_none() {
            let name = self.fresh_with(base(), remember);
            b.set_name(v, name);
        }
    }
}
