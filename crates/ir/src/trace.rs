//! The tracing front end: ordinary Rust over a traced scalar records a [`Function`].
//!
//! A [`Tracer`] owns a [`Builder`]; a [`Var`] is a `Copy` handle (tracer reference + [`Value`])
//! whose operators and methods append one instruction each, in the order Rust evaluates them.
//! Nothing is evaluated, folded or reordered: `x * 2.0` records `mul %x0, 2.0` even when `x` is
//! a parameter, so the traced program performs exactly the operations the Rust expression
//! names. Float literals stay inline operands (rounded to `f32` in `f32` code by the builder).
//! Mixing an `f32` and an `f64` operand promotes the `f32` one with `fpromote`, like C's usual
//! arithmetic conversions. Comparisons give a traced [`Bool`] whose [`Bool::select`] is the
//! only way to branch: control flow in the closure is *not* recorded (an `if` on a Rust `bool`
//! is decided once, at tracing time).
//!
//! Generic Rust code (`fn f<T: Copy + Add<Output = T> + ...>(x: &[T]) -> T`) traces unchanged
//! when called from the closure: `trace(n, |x| f(x))`.
//!
//! Assumes every [`Var`] in one expression comes from the same tracer; mixing tracers is a
//! programming error and panics with a message saying so.
//!
//! ```
//! use adjit_ir::trace::trace;
//! let f = trace(2, |x| (x[0] * x[1]).sin() + x[0]);
//! adjit_ir::verify(&f).unwrap();
//! let y = adjit_ir::interpret(&f, &[0.5, 3.0]).unwrap();
//! assert_eq!(y, vec![(0.5f64 * 3.0).sin() + 0.5]);
//! ```

use std::cell::RefCell;
use std::fmt;
use std::iter::Sum;
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

use crate::builder::Builder;
use crate::function::{Function, Operand, Value};
use crate::opcode::{BinaryOp, CmpPred, UnaryOp};
use crate::types::Type;

/// Trace a function of `n_inputs` `f64` parameters (`%x0`, `%x1`, …) returning one value,
/// named `traced`.
///
/// ```
/// let f = adjit_ir::trace::trace(1, |x| 2.0 * x[0] + 1.0);
/// assert_eq!(adjit_ir::interpret(&f, &[3.0]).unwrap(), vec![7.0]);
/// ```
///
/// # Panics
/// If the closure combines values of another tracer (see [`Tracer`]).
pub fn trace<F>(n_inputs: usize, f: F) -> Function
where
    F: for<'t> FnOnce(&[Var<'t>]) -> Var<'t>,
{
    trace_multi("traced", &vec![Type::F64; n_inputs], |x| vec![f(x)])
}

/// [`trace`] with the function and its inputs named by the caller, so derived programs, dumps
/// and C headers read `rosen_grad` and `%x_b` instead of `traced_grad` and `%x0_b`.
///
/// ```
/// let f = adjit_ir::trace::trace_named("rosen", &["x", "y"], |v| {
///     let a = 1.0 - v[0];
///     let d = v[1] - v[0] * v[0];
///     a * a + 100.0 * d * d
/// });
/// assert!(f.to_string().starts_with("func @rosen(%x: f64, %y: f64) -> f64"));
/// ```
pub fn trace_named<F>(name: &str, inputs: &[&str], f: F) -> Function
where
    F: for<'t> FnOnce(&[Var<'t>]) -> Var<'t>,
{
    let mut func = trace_multi(name, &vec![Type::F64; inputs.len()], |x| vec![f(x)]);
    for (data, input) in func.values.iter_mut().zip(inputs) {
        data.name = Some((*input).into());
    }
    func
}

/// Trace a function named `name` with one parameter per entry of `param_types` (`%x0`, …)
/// returning every value of the closure's vector, in order.
///
/// ```
/// use adjit_ir::{trace::trace_multi, Type};
/// let g = trace_multi("g", &[Type::F64; 3], |x| vec![x[0] + 1.0, x[1] * x[2]]);
/// assert_eq!(adjit_ir::interpret(&g, &[1.0, 2.0, 3.0]).unwrap(), vec![2.0, 6.0]);
/// ```
///
/// # Panics
/// If a parameter type is `bool` (parameters of a traced function are floats), or if the
/// closure combines values of another tracer.
pub fn trace_multi<F>(name: &str, param_types: &[Type], f: F) -> Function
where
    F: for<'t> FnOnce(&[Var<'t>]) -> Vec<Var<'t>>,
{
    let tracer = Tracer::new(name);
    let rets = {
        let inputs: Vec<Var<'_>> = param_types.iter().map(|&ty| tracer.input(ty)).collect();
        let outputs = f(&inputs);
        tracer.rets(&outputs)
    };
    tracer.into_function(&rets)
}

/// Trace a function of `n_params` differentiated `f64` parameters followed by `n_data` data
/// parameters ([`crate::function::ParamKind::Data`]: inputs that derivative programs take but do not
/// differentiate, like JAX's `argnums` or CasADi's parameter vector). The closure receives the
/// two groups separately; the function's parameters are `%x0 … %x{n_params-1}` then
/// `data %x{n_params} …`, in that order, and it returns the closure's one value.
///
/// A least-squares fit of `a·exp(b·t) + c` to 32 points: derivative programs of `fit` have
/// three tangent seeds or three adjoint outputs, one per fitted parameter.
///
/// ```
/// use adjit_ir::trace::trace_with_data;
/// let n = 32;
/// let fit = trace_with_data(3, 2 * n, |p, data| {
///     let (t, y) = data.split_at(n);
///     let residuals = t.iter().zip(y).map(|(&t, &y)| p[0] * (p[1] * t).exp() + p[2] - y);
///     residuals.map(|r| r.square()).reduce(|a, b| a + b).unwrap()
/// });
/// assert_eq!(fit.differentiated_params().count(), 3);
/// assert_eq!(fit.data_params().count(), 64);
/// assert!(fit.to_string().starts_with("func @traced(%x0: f64, %x1: f64, %x2: f64, data %x3: f64,"));
/// ```
///
/// # Panics
/// If the closure combines values of another tracer (see [`Tracer`]).
pub fn trace_with_data<F>(n_params: usize, n_data: usize, f: F) -> Function
where
    F: for<'t> FnOnce(&[Var<'t>], &[Var<'t>]) -> Var<'t>,
{
    let tracer = Tracer::new("traced");
    let rets = {
        let params: Vec<Var<'_>> = (0..n_params).map(|_| tracer.input(Type::F64)).collect();
        let data: Vec<Var<'_>> = (0..n_data).map(|_| tracer.data_input(Type::F64)).collect();
        let output = f(&params, &data);
        tracer.rets(&[output])
    };
    tracer.into_function(&rets)
}

/// Records the operations performed on its [`Var`]s into a function under construction.
///
/// Use [`trace`] or [`trace_multi`] for the common case; use a `Tracer` directly to add inputs
/// one by one or to build several results with shared helpers.
///
/// ```
/// use adjit_ir::{trace::Tracer, Type};
/// let t = Tracer::new("hypot");
/// let (x, y) = (t.input(Type::F64), t.input(Type::F64));
/// let r = (x.square() + y.square()).sqrt();
/// let f = t.finish(&[r]);
/// assert_eq!(adjit_ir::interpret(&f, &[3.0, 4.0]).unwrap(), vec![5.0]);
/// ```
///
/// Every operation checks that its operands belong to the same tracer and panics otherwise:
/// such a program has no meaning, and the mistake is in the calling code, not in its data.
pub struct Tracer {
    builder: RefCell<Builder>,
}

impl fmt::Debug for Tracer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracer")
            .field("func", self.builder.borrow().func())
            .finish()
    }
}

impl Tracer {
    /// A tracer for a function named `name`, with no parameters yet.
    pub fn new(name: &str) -> Tracer {
        Tracer {
            builder: RefCell::new(Builder::new(name)),
        }
    }

    /// Add the next parameter, named `%xN` with N its position.
    ///
    /// # Panics
    /// If `ty` is `bool`, or if an operation has already been recorded (parameters come
    /// first in a function).
    pub fn input(&self, ty: Type) -> Var<'_> {
        assert!(
            ty.is_float(),
            "adjit trace: parameters must be f32 or f64, not {ty}"
        );
        let mut builder = self.builder.borrow_mut();
        let name = format!("x{}", builder.func().n_params);
        let value = builder.param(ty, &name);
        Var {
            tracer: self,
            value,
        }
    }

    /// Add the next parameter as a data input ([`crate::function::ParamKind::Data`]: derivative programs
    /// take it but do not differentiate it), named `%xN` with N its position. Inputs of both
    /// kinds may be added in any order.
    ///
    /// ```
    /// use adjit_ir::{trace::Tracer, Type};
    /// let t = Tracer::new("scale");
    /// let (a, x) = (t.input(Type::F64), t.data_input(Type::F64));
    /// let f = t.finish(&[a * x]);
    /// assert_eq!(f.to_string().lines().next().unwrap(),
    ///            "func @scale(%x0: f64, data %x1: f64) -> f64 {");
    /// ```
    ///
    /// # Panics
    /// As [`Tracer::input`].
    pub fn data_input(&self, ty: Type) -> Var<'_> {
        let var = self.input(ty);
        self.builder
            .borrow_mut()
            .set_param_kind(var.value, crate::function::ParamKind::Data);
        var
    }

    /// A constant of type `ty` (rounded to it), recorded as a `const` instruction.
    pub fn constant(&self, ty: Type, value: f64) -> Var<'_> {
        assert!(
            ty.is_float(),
            "adjit trace: constants must be f32 or f64, not {ty}"
        );
        let value = self.builder.borrow_mut().constant(ty, value);
        Var {
            tracer: self,
            value,
        }
    }

    /// The sum `((a + b) + c) + …` of `terms`, left to right; the `f64` constant `0.0` when
    /// there are none.
    pub fn sum<'t>(&'t self, terms: impl IntoIterator<Item = Var<'t>>) -> Var<'t> {
        terms
            .into_iter()
            .reduce(|acc, t| acc + t)
            .unwrap_or_else(|| self.constant(Type::F64, 0.0))
    }

    /// The function recorded so far, returning `outputs` in order. The tracer keeps its
    /// recording, so this may be called again (e.g. with other outputs).
    ///
    /// # Panics
    /// If an output belongs to another tracer.
    pub fn finish(&self, outputs: &[Var<'_>]) -> Function {
        let rets = self.rets(outputs);
        self.builder.borrow().clone().finish(&rets)
    }

    /// The values of `outputs`, checked to be this tracer's.
    fn rets(&self, outputs: &[Var<'_>]) -> Vec<Value> {
        outputs.iter().map(|v| self.own(*v)).collect()
    }

    /// [`Tracer::finish`] for a tracer that is done: the recorded function is moved out, not
    /// copied (a copy of every instruction, on traces of 10⁶ of them).
    fn into_function(self, rets: &[Value]) -> Function {
        self.builder.into_inner().finish(rets)
    }

    /// The function recorded so far (without returns).
    pub fn func(&self) -> Function {
        self.builder.borrow().func().clone()
    }

    fn own(&self, v: Var<'_>) -> Value {
        assert!(
            std::ptr::eq(self, v.tracer),
            "adjit trace: a value from another tracer was used here; \
             every Var in one traced function must come from its own tracer"
        );
        v.value
    }

    fn ty(&self, v: Value) -> Type {
        self.builder.borrow().ty(v)
    }

    fn wrap(&self, value: Value) -> Var<'_> {
        Var {
            tracer: self,
            value,
        }
    }

    /// Resolve operands to builder operands, promoting `f32` values to `f64` when the operands
    /// mix both float types.
    fn operands<const N: usize>(&self, ops: [TracedOperand<'_>; N]) -> [Operand; N] {
        let values = ops.map(|o| match o {
            TracedOperand::Var(v) => Operand::Value(self.own(v)),
            TracedOperand::Literal(c) => Operand::Const(c),
        });
        let mixed = values.iter().any(|o| self.is_value_of(*o, Type::F64))
            && values.iter().any(|o| self.is_value_of(*o, Type::F32));
        if !mixed {
            return values;
        }
        values.map(|o| match o {
            Operand::Value(v) if self.ty(v) == Type::F32 => {
                Operand::Value(self.builder.borrow_mut().fpromote(v))
            }
            other => other,
        })
    }

    fn is_value_of(&self, o: Operand, ty: Type) -> bool {
        matches!(o, Operand::Value(v) if self.ty(v) == ty)
    }

    fn unary(&self, op: UnaryOp, x: Var<'_>) -> Var<'_> {
        let x = self.own(x);
        let v = self.builder.borrow_mut().unary(op, x);
        self.wrap(v)
    }

    fn binary<'t>(&'t self, op: BinaryOp, a: TracedOperand<'t>, b: TracedOperand<'t>) -> Var<'t> {
        let [a, b] = self.operands([a, b]);
        let v = self.builder.borrow_mut().binary(op, a, b);
        self.wrap(v)
    }

    fn compare<'t>(
        &'t self,
        pred: CmpPred,
        a: TracedOperand<'t>,
        b: TracedOperand<'t>,
    ) -> Bool<'t> {
        let [a, b] = self.operands([a, b]);
        let value = self.builder.borrow_mut().fcmp(pred, a, b);
        Bool {
            tracer: self,
            value,
        }
    }
}

/// A traced float scalar: a value of the function a [`Tracer`] is recording.
///
/// Arithmetic (`+ - * /`, unary `-`, `+=` …) works between two `Var`s and between a `Var` and
/// an `f64` on either side; literals become inline operands (`2.0 * x` records
/// `mul 2.0, %x`). Methods mirror `f64`'s (`sin`, `exp`, `powi`, `mul_add`, …).
#[derive(Clone, Copy)]
pub struct Var<'t> {
    tracer: &'t Tracer,
    value: Value,
}

impl fmt::Debug for Var<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Var({}: {})", self.value, self.ty())
    }
}

/// An operand of a traced operation: a [`Var`] or an `f64` literal (rounded to the other
/// operands' type). Built implicitly through `From`, so methods accept either.
#[derive(Clone, Copy, Debug)]
pub enum TracedOperand<'t> {
    Var(Var<'t>),
    Literal(f64),
}

impl<'t> From<Var<'t>> for TracedOperand<'t> {
    fn from(v: Var<'t>) -> Self {
        TracedOperand::Var(v)
    }
}

impl From<f64> for TracedOperand<'_> {
    fn from(c: f64) -> Self {
        TracedOperand::Literal(c)
    }
}

impl From<f32> for TracedOperand<'_> {
    fn from(c: f32) -> Self {
        TracedOperand::Literal(f64::from(c))
    }
}

macro_rules! unary_methods {
    ($($(#[$doc:meta])* $method:ident => $op:ident,)*) => {
        $(
            $(#[$doc])*
            pub fn $method(self) -> Var<'t> {
                self.tracer.unary(UnaryOp::$op, self)
            }
        )*
    };
}

macro_rules! binary_methods {
    ($($(#[$doc:meta])* $method:ident => $op:ident,)*) => {
        $(
            $(#[$doc])*
            pub fn $method(self, other: impl Into<TracedOperand<'t>>) -> Var<'t> {
                self.tracer.binary(BinaryOp::$op, self.into(), other.into())
            }
        )*
    };
}

macro_rules! compare_methods {
    ($($(#[$doc:meta])* $method:ident => $pred:ident,)*) => {
        $(
            $(#[$doc])*
            pub fn $method(self, other: impl Into<TracedOperand<'t>>) -> Bool<'t> {
                self.tracer.compare(CmpPred::$pred, self.into(), other.into())
            }
        )*
    };
}

impl<'t> Var<'t> {
    /// A constant `f64` of `tracer` (rarely needed: literals work directly in operators).
    pub fn constant(tracer: &'t Tracer, value: f64) -> Var<'t> {
        tracer.constant(Type::F64, value)
    }

    /// The IR value this variable stands for.
    pub fn value(self) -> Value {
        self.value
    }

    /// Its type (`f32` or `f64`).
    pub fn ty(self) -> Type {
        self.tracer.ty(self.value)
    }

    /// The tracer recording it.
    pub fn tracer(self) -> &'t Tracer {
        self.tracer
    }

    unary_methods! {
        /// `abs`.
        abs => Abs,
        /// `sqrt`.
        sqrt => Sqrt,
        /// `exp`.
        exp => Exp,
        /// Natural logarithm (`log`).
        ln => Log,
        /// `log1p`: ln(1 + x).
        log1p => Log1p,
        /// `expm1`: eˣ − 1.
        exp_m1 => Expm1,
        /// `sin`.
        sin => Sin,
        /// `cos`.
        cos => Cos,
        /// `tan`.
        tan => Tan,
        /// `asin`.
        asin => Asin,
        /// `acos`.
        acos => Acos,
        /// `atan`.
        atan => Atan,
        /// `sinh`.
        sinh => Sinh,
        /// `cosh`.
        cosh => Cosh,
        /// `tanh`.
        tanh => Tanh,
        /// The error function `erf`.
        erf => Erf,
        /// `floor`.
        floor => Floor,
        /// `ceil`.
        ceil => Ceil,
    }

    binary_methods! {
        /// `pow`: selfᵒᵗʰᵉʳ.
        powf => Pow,
        /// `atan2 self, other` (self is y, other is x, as in `f64::atan2`).
        atan2 => Atan2,
        /// `min`: on a tie the result is `self`; a NaN operand yields the other one.
        min => Min,
        /// `max`: on a tie the result is `self`; a NaN operand yields the other one.
        max => Max,
    }

    compare_methods! {
        /// `fcmp.lt`: self < other (false on NaN).
        lt => Lt,
        /// `fcmp.le`: self ≤ other (false on NaN).
        le => Le,
        /// `fcmp.gt`: self > other (false on NaN).
        gt => Gt,
        /// `fcmp.ge`: self ≥ other (false on NaN).
        ge => Ge,
    }

    /// `fcmp.eq`: self = other (false on NaN). Not `PartialEq`: the answer is traced.
    #[allow(clippy::should_implement_trait)]
    pub fn eq(self, other: impl Into<TracedOperand<'t>>) -> Bool<'t> {
        self.tracer.compare(CmpPred::Eq, self.into(), other.into())
    }

    /// `fcmp.ne`: self ≠ other (true on NaN). Not `PartialEq`: the answer is traced.
    #[allow(clippy::should_implement_trait)]
    pub fn ne(self, other: impl Into<TracedOperand<'t>>) -> Bool<'t> {
        self.tracer.compare(CmpPred::Ne, self.into(), other.into())
    }

    /// `powi self, exp`: binary exponentiation (see [`crate::math::powi_f64`]).
    pub fn powi(self, exp: i32) -> Var<'t> {
        let x = self.tracer.own(self);
        let v = self.tracer.builder.borrow_mut().powi(x, exp);
        self.tracer.wrap(v)
    }

    /// `self * self`, recorded as one `mul`.
    pub fn square(self) -> Var<'t> {
        self * self
    }

    /// `fma self, a, b` = self·a + b with one rounding (like `f64::mul_add`).
    pub fn mul_add(
        self,
        a: impl Into<TracedOperand<'t>>,
        b: impl Into<TracedOperand<'t>>,
    ) -> Var<'t> {
        let tracer = self.tracer;
        let [x, a, b] = tracer.operands([self.into(), a.into(), b.into()]);
        let v = tracer.builder.borrow_mut().fma(x, a, b);
        tracer.wrap(v)
    }

    /// This value as `f64` (`fpromote` for `f32`; itself for `f64`).
    pub fn to_f64(self) -> Var<'t> {
        match self.ty() {
            Type::F32 => {
                let v = self.tracer.builder.borrow_mut().fpromote(self.value);
                self.tracer.wrap(v)
            }
            _ => self,
        }
    }

    /// This value as `f32` (`fdemote` for `f64`, rounding to nearest; itself for `f32`).
    pub fn to_f32(self) -> Var<'t> {
        match self.ty() {
            Type::F64 => {
                let v = self.tracer.builder.borrow_mut().fdemote(self.value);
                self.tracer.wrap(v)
            }
            _ => self,
        }
    }
}

/// A traced boolean: the result of a comparison such as [`Var::lt`].
#[derive(Clone, Copy)]
pub struct Bool<'t> {
    tracer: &'t Tracer,
    value: Value,
}

impl fmt::Debug for Bool<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bool({})", self.value)
    }
}

impl<'t> Bool<'t> {
    /// `select`: `if_true` where this is true, else `if_false`. Both branches are computed;
    /// only the choice is traced. When both are literals the result is an `f64`.
    ///
    /// ```
    /// let relu = adjit_ir::trace::trace(1, |x| x[0].gt(0.0).select(x[0], 0.0));
    /// assert_eq!(adjit_ir::interpret(&relu, &[-2.0]).unwrap(), vec![0.0]);
    /// assert_eq!(adjit_ir::interpret(&relu, &[3.0]).unwrap(), vec![3.0]);
    /// ```
    pub fn select(
        self,
        if_true: impl Into<TracedOperand<'t>>,
        if_false: impl Into<TracedOperand<'t>>,
    ) -> Var<'t> {
        let tracer = self.tracer;
        let [a, b] = tracer.operands([if_true.into(), if_false.into()]);
        let v = tracer.builder.borrow_mut().select(self.value, a, b);
        tracer.wrap(v)
    }

    /// The IR value this boolean stands for.
    pub fn value(self) -> Value {
        self.value
    }
}

macro_rules! arithmetic {
    ($trait:ident, $method:ident, $assign_trait:ident, $assign:ident, $op:ident) => {
        impl<'t> $trait<Var<'t>> for Var<'t> {
            type Output = Var<'t>;
            fn $method(self, rhs: Var<'t>) -> Var<'t> {
                self.tracer.binary(BinaryOp::$op, self.into(), rhs.into())
            }
        }

        impl<'t> $trait<f64> for Var<'t> {
            type Output = Var<'t>;
            fn $method(self, rhs: f64) -> Var<'t> {
                self.tracer.binary(BinaryOp::$op, self.into(), rhs.into())
            }
        }

        impl<'t> $trait<Var<'t>> for f64 {
            type Output = Var<'t>;
            fn $method(self, rhs: Var<'t>) -> Var<'t> {
                rhs.tracer.binary(BinaryOp::$op, self.into(), rhs.into())
            }
        }

        impl<'t> $assign_trait<Var<'t>> for Var<'t> {
            fn $assign(&mut self, rhs: Var<'t>) {
                *self = $trait::$method(*self, rhs);
            }
        }

        impl<'t> $assign_trait<f64> for Var<'t> {
            fn $assign(&mut self, rhs: f64) {
                *self = $trait::$method(*self, rhs);
            }
        }
    };
}

arithmetic!(Add, add, AddAssign, add_assign, Add);
arithmetic!(Sub, sub, SubAssign, sub_assign, Sub);
arithmetic!(Mul, mul, MulAssign, mul_assign, Mul);
arithmetic!(Div, div, DivAssign, div_assign, Div);

impl<'t> Neg for Var<'t> {
    type Output = Var<'t>;
    fn neg(self) -> Var<'t> {
        self.tracer.unary(UnaryOp::Neg, self)
    }
}

impl<'t> Sum<Var<'t>> for Var<'t> {
    /// `((a + b) + c) + …`, left to right.
    ///
    /// # Panics
    /// On an empty iterator: there is no tracer to record a zero in. Use [`Tracer::sum`]
    /// when the terms may be empty.
    fn sum<I: Iterator<Item = Var<'t>>>(iter: I) -> Var<'t> {
        iter.reduce(|acc, t| acc + t)
            .expect("adjit trace: summing no Vars; use Tracer::sum for possibly empty sums")
    }
}

impl<'a, 't> Sum<&'a Var<'t>> for Var<'t> {
    /// `((a + b) + c) + …`, left to right.
    ///
    /// # Panics
    /// On an empty iterator (see the by-value impl).
    fn sum<I: Iterator<Item = &'a Var<'t>>>(iter: I) -> Var<'t> {
        iter.copied().sum()
    }
}

/// One generic Rust function for plain `f64` and for traced values: write the math once over
/// `T: Scalar`, call it with numbers to evaluate, and inside [`trace`] to record a program.
/// Operators come from the `std::ops` bounds (with `f64` right-hand sides, `x * 2.0`); the
/// elementary functions are methods. On `f64` every method is [`crate::math`]'s routine, so
/// the plain result and the traced program's (interpreted or compiled) agree bit for bit.
///
/// ```
/// use adjit_ir::trace::{trace, Scalar};
/// fn rosen<T: Scalar>(x: &[T]) -> T {
///     let a = x[0].lit(1.0) - x[0];
///     let d = x[1] - x[0] * x[0];
///     a * a + d * d * 100.0
/// }
/// let f = trace(2, |x| rosen(x));
/// let plain = rosen(&[0.5f64, 2.0]);
/// assert_eq!(adjit_ir::interpret(&f, &[0.5, 2.0]).unwrap(), vec![plain]);
/// ```
pub trait Scalar:
    Copy
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + Add<f64, Output = Self>
    + Sub<f64, Output = Self>
    + Mul<f64, Output = Self>
    + Div<f64, Output = Self>
{
    /// The number `c` as a value of this kind (a traced constant of the same tracer).
    fn lit(self, c: f64) -> Self;
    fn abs(self) -> Self;
    fn sqrt(self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn tanh(self) -> Self;
    fn erf(self) -> Self;
    fn powi(self, k: i32) -> Self;
    fn powf(self, e: Self) -> Self;
    fn min(self, other: Self) -> Self;
    fn max(self, other: Self) -> Self;
}

impl Scalar for f64 {
    fn lit(self, c: f64) -> f64 {
        c
    }
    fn abs(self) -> f64 {
        crate::math::unary(UnaryOp::Abs, Type::F64, self)
    }
    fn sqrt(self) -> f64 {
        crate::math::unary(UnaryOp::Sqrt, Type::F64, self)
    }
    fn exp(self) -> f64 {
        crate::math::unary(UnaryOp::Exp, Type::F64, self)
    }
    fn ln(self) -> f64 {
        crate::math::unary(UnaryOp::Log, Type::F64, self)
    }
    fn sin(self) -> f64 {
        crate::math::unary(UnaryOp::Sin, Type::F64, self)
    }
    fn cos(self) -> f64 {
        crate::math::unary(UnaryOp::Cos, Type::F64, self)
    }
    fn tan(self) -> f64 {
        crate::math::unary(UnaryOp::Tan, Type::F64, self)
    }
    fn tanh(self) -> f64 {
        crate::math::unary(UnaryOp::Tanh, Type::F64, self)
    }
    fn erf(self) -> f64 {
        crate::math::unary(UnaryOp::Erf, Type::F64, self)
    }
    fn powi(self, k: i32) -> f64 {
        crate::math::powi(Type::F64, self, k)
    }
    fn powf(self, e: f64) -> f64 {
        crate::math::binary(BinaryOp::Pow, Type::F64, self, e)
    }
    fn min(self, other: f64) -> f64 {
        crate::math::binary(BinaryOp::Min, Type::F64, self, other)
    }
    fn max(self, other: f64) -> f64 {
        crate::math::binary(BinaryOp::Max, Type::F64, self, other)
    }
}

impl<'t> Scalar for Var<'t> {
    fn lit(self, c: f64) -> Var<'t> {
        self.tracer.constant(Type::F64, c)
    }
    fn abs(self) -> Var<'t> {
        Var::abs(self)
    }
    fn sqrt(self) -> Var<'t> {
        Var::sqrt(self)
    }
    fn exp(self) -> Var<'t> {
        Var::exp(self)
    }
    fn ln(self) -> Var<'t> {
        Var::ln(self)
    }
    fn sin(self) -> Var<'t> {
        Var::sin(self)
    }
    fn cos(self) -> Var<'t> {
        Var::cos(self)
    }
    fn tan(self) -> Var<'t> {
        Var::tan(self)
    }
    fn tanh(self) -> Var<'t> {
        Var::tanh(self)
    }
    fn erf(self) -> Var<'t> {
        Var::erf(self)
    }
    fn powi(self, k: i32) -> Var<'t> {
        Var::powi(self, k)
    }
    fn powf(self, e: Var<'t>) -> Var<'t> {
        Var::powf(self, e)
    }
    fn min(self, other: Var<'t>) -> Var<'t> {
        Var::min(self, other)
    }
    fn max(self, other: Var<'t>) -> Var<'t> {
        Var::max(self, other)
    }
}
